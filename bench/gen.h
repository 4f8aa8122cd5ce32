/* SPDX-License-Identifier: BSD-3-Clause
 *
 * The traffic generator of georeduce-bench: emulated workers, child gateways and parent
 * gateway of one gateway's job on one ethdev port, driven by one lcore (the parent:
 * gen_parent.c; payloads and exact sums: gen_payload.c; sealed links: gen_seal.c;
 * multicast streams: gen_mcast.c).
 *
 * A generator lcore owns one RX and one TX queue of its port and a set of chunks (the
 * window). Each chunk cycles through rounds independently: its workers' CONTRIB frames go
 * out, the gateway sums them, and the round ends when every worker has its RESULT copy
 * (peer GEN_PEER_DATAPLANE) or every frame came back unchanged (GEN_PEER_IO, an
 * io-forwarder); then the chunk's next round starts at once, or when the pacer allows. A
 * chunk whose round does not end within the retransmission timeout sends again, with the
 * RETX flag, the frames of the workers still waiting (doubling the timeout each time).
 *
 * Frames are built once per (chunk, worker) with wire_hdr_encode() and wire_frame_build(),
 * with integer-valued payloads so that every sum is exact in fp32, fp16 and bf16, and sent
 * by reference (a refcount bump, only the round is rewritten) whenever the port gave the
 * previous send back. The first frame of a chunk's round always goes as a fresh copy: an
 * aggregator in the same process keeps it as its accumulator and sums into it.
 *
 * Threads: gen_job_*(), gen_arp_resolve() and gen_lcore_create()/gen_lcore_free() on the
 * main lcore before and after the run; gen_lcore_main() on the generator's lcore (which may
 * be the main lcore), which runs the whole schedule and returns.
 */
#ifndef GEOREDUCE_BENCH_GEN_H
#define GEOREDUCE_BENCH_GEN_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include <rte_mbuf.h>

#include "table.h"
#include "wire.h"

#define GEN_BURST_MAX 64
#define GEN_HIST_SUB 16 /* latency buckets per power of two */
#define GEN_HIST_BUCKETS (48 * GEN_HIST_SUB)
#define GEN_WRONG_MAX 4 /* wrong RESULTs described in struct gen_result */
/* Ethernet bytes on the wire besides the frame: preamble 8, FCS 4, inter-frame gap 12. */
#define GEN_WIRE_OVERHEAD 24u

/** What answers the generator's frames. */
enum gen_peer {
	GEN_PEER_DATAPLANE = 0, /* a georeduce gateway: RESULT copies, verified */
	GEN_PEER_IO,            /* an io-forwarder: the frames themselves come back */
};

/**
 * One emulated contributor of the gateway: a local worker, or a child gateway (which sends
 * its subtree's partial sum and receives the RESULT at its port of the chunk, port +
 * chunk mod n_ports). The emulated parent gateway is one too, outside the list.
 */
struct gen_worker {
	uint16_t id;
	uint32_t ipv4;    /* host order */
	uint16_t port;    /* a worker's port, a gateway's base port */
	uint16_t n_ports; /* 1 for a worker */
	uint16_t contrib; /* the `contrib` of its CONTRIBs: 1, or a child's subtree_workers */
	int16_t seal;     /* a protected link's key in gen_job.seals, -1: plain */
	int16_t child;    /* a child gateway: its index in the table's children; -1: a worker */
};

/**
 * The part of a job the generator drives, taken from the gateway's table: the gateway, the
 * parties it exchanges chunks with (its local workers, its child gateways and its parent
 * gateway, all played by the generator), and per tree the first chunks that fit its slot
 * pool.
 */
struct gen_job {
	uint32_t job, epoch;
	enum wire_dtype dtype;
	uint32_t elems;     /* elements per chunk (only full chunks are driven) */
	uint32_t payload;   /* bytes per chunk */
	uint32_t frame_len; /* Ethernet frame without FCS */
	uint32_t max_frame; /* the largest frame: frame_len, sealed + WIRE_SEAL_OVERHEAD */
	uint16_t gw_id;
	uint32_t gw_ipv4;
	uint16_t base_port, n_ports;
	unsigned int n_workers;     /* contributors: local workers and child gateways */
	struct gen_worker *workers; /* sorted by (ipv4, port) */
	unsigned int n_children;    /* child gateways among them */
	bool has_parent;            /* a leaf or interior gateway: the generator is its parent */
	struct gen_worker parent;   /* the parent gateway (port: its base port) */
	uint16_t sub_contrib;       /* the gateway's subtree_workers: its partial sum's contrib */
	uint16_t result_contrib;    /* the RESULT's contrib (the parent adds one of its own) */
	uint16_t root_id;           /* the RESULT's origin: the gateway, or its parent */
	uint32_t cset_len;          /* contributor set bytes in every CONTRIB and RESULT; 0: none */
	uint32_t pl_off;            /* the payload's offset in a frame, after the set */
	uint32_t threshold;         /* partial reduce: the fewest worker contributions the
				     * gateway's sum holds (the tree's threshold); 0: all */
	uint8_t *sets;              /* with sets: each contributor's set (cset_len bytes), then
				     * that of the parent's own share */
	unsigned int n_seals;       /* protected links to the gateway (docs/PROTOCOL.md 14) */
	struct table_seal *seals;   /* their keys, as in the table */
	unsigned int n_chunks;
	uint32_t *chunk; /* driven chunk indices, ascending */
	uint16_t *tree;  /* tree id of each */
	int amplitude;   /* inputs are integers in [-amplitude, amplitude] */
	/* A multicast table (gen_mcast.c): its streams; NULL for a table of trees. The
	 * driven "chunks" are then (stream, origin, chunk) units, `workers` the outputs the
	 * bench plays, and the parent the `from` gateway that is not one of them. */
	struct gen_mcast *mc;
	unsigned int n_streams; /* its streams; 0: a table of trees */
};

/** The index of the parent's RESULT frame among a chunk's frames (after the contributors'). */
#define GEN_PARENT(gj) ((gj)->n_workers)

/**
 * Build the driven part of a job from a parsed table. The gateway may be a root, an
 * interior node or a leaf; every tree must list the same parent and children as the
 * first (the generator plays every contributor, and the parent with one contribution of
 * its own). At most `window` chunks in total, taken from the trees in turn, never two
 * sharing a slot of their tree.
 *
 * @return  0, or -EINVAL with a one-line message in err.
 */
int gen_job_from_table(struct gen_job *gj, const struct table *tb, unsigned int window, char *err,
		       size_t errlen);

/** Free what gen_job_from_table() allocated. */
void gen_job_fini(struct gen_job *gj);

/** Integer input of worker w (index), chunk index c, element i, in [-a, a]. */
int gen_value(unsigned int c, unsigned int w, unsigned int i, int a);

/** Latency histogram: GEN_HIST_SUB buckets per power of two of nanoseconds. */
struct gen_hist {
	uint64_t n;
	uint64_t max_ns;
	uint64_t b[GEN_HIST_BUCKETS];
};

/** Add a sample. */
void gen_hist_add(struct gen_hist *h, uint64_t ns);

/** The q-quantile (0 < q <= 1) in ns: the upper edge of its bucket (within 1/16). */
double gen_hist_quantile(const struct gen_hist *h, double q);

/** Counters of one generator lcore (the lcore: wo, plain stores; readers: relaxed). */
struct gen_stats {
	uint64_t tx_pkts, tx_bytes, tx_payload; /* frames handed to the port */
	uint64_t tx_refused;                    /* frames the TX queue did not take (sent later) */
	uint64_t tx_copies;                     /* frames sent as fresh copies, not by reference */
	uint64_t rx_pkts, rx_bytes;
	uint64_t rx_ok, rx_payload; /* RESULT copies (or echoes) accepted */
	uint64_t rx_ok_bytes;       /* ... their frames' bytes (without FCS) */
	uint64_t chunks;            /* rounds completed */
	uint64_t verified;          /* payloads compared with the exact sum */
	uint64_t verify_fail;       /* wrong payload, contributor count or header */
	uint64_t wrong;             /* ... of which payloads unlike the exact sum */
	uint64_t duplicates;        /* copies for a worker that already had its own */
	uint64_t stale;             /* copies of another round */
	uint64_t unexpected;        /* frames that are none of the above */
	uint64_t partials;          /* partial sums the parent took and verified */
	uint64_t partial_repeats;   /* RESULTs the parent sent again: partial sums sent again
				     * and NACK_RESULTs */
	uint64_t nacks;             /* NACK_RESULTs the parent got */
	uint64_t nacks_down;        /* NACK_RESULTs to the workers and children (unanswered) */
	uint64_t sealed, opened;    /* frames sealed and opened on protected links */
	uint64_t mc_copies;         /* multicast: copies taken at an output, verified */
	uint64_t mc_repairs;        /* ... of which repairs (RETX) */
	uint64_t mc_nacks;          /* NACK_MCASTs the outputs sent for missing copies */
	uint64_t mc_asked;          /* chunks the gateway asked of a `from` gateway */
	uint64_t mc_repaired;       /* ... answered with a repair */
	uint64_t mc_obsolete;       /* NACK_MCASTs and repairs withdrawn unsent: out of date */
	uint64_t acks;
	uint64_t timeouts; /* chunk rounds whose timer fired */
	uint64_t retx;     /* frames sent again with RETX */
	uint64_t arp_replies;
	uint64_t no_mbuf;
	uint64_t busy_cycles; /* TSC cycles of loop iterations that did work */
};

/** Options of a generator lcore. */
struct gen_params {
	enum gen_peer peer;
	uint16_t port_id;
	uint16_t queue;
	unsigned int burst;
	double rate_gbps;          /* wire bit rate (frame + GEN_WIRE_OVERHEAD); 0: full */
	double pace_burst;         /* bytes the pacer sends at once after a pause; 0: 16 KiB */
	uint64_t rto_tsc;          /* first retransmission timeout */
	unsigned int verify_every; /* compare every N-th copy's payload; 1: all */
	uint32_t first_round;      /* every chunk's first round (0: 1); after another run
				      against the same gateway, past that run's last round */
	uint32_t rounds;           /* rounds per chunk, then the measurement ends; 0: by time */
	bool first_copy;           /* send the first frame of a round as a copy */
	bool answer_arp;           /* answer ARP for the workers' addresses */
	bool progress;             /* print progress on stderr every second */
	double progress_s;
	uint8_t src_mac[6]; /* every worker's MAC */
	uint8_t dst_mac[6]; /* the gateway's (or the forwarder's) */
	/* Schedule: warm up, measure, then drain (no new rounds) until every open round
	 * ended or drain_s passed. */
	double warmup_s, duration_s, drain_s;
	/* Called on the generator's lcore when the measurement starts (end false) and ends
	 * (end true), e.g. to read another lcore's counters at the same moments. */
	void (*on_mark)(void *arg, bool end);
	void *mark_arg;
};

/** A RESULT whose payload differed from the exact sum. */
struct gen_wrong {
	uint32_t chunk, round;
	uint16_t worker;      /* the id of the worker it was for */
	uint32_t element;     /* the first element that differs */
	uint32_t n_elems;     /* elements that differ */
	uint32_t expect_bits; /* that element's bits, expected (fp16, bf16: the low 16) */
	uint32_t got_bits;    /* ... received */
	double expect, got;   /* ... as numbers */
};

/** What a run measured (valid once gen_lcore_main() returned). */
struct gen_result {
	struct gen_stats start, end;           /* counters when the measurement started and ended */
	struct gen_hist hist;                  /* chunk latencies of rounds ended while measuring */
	uint64_t measured_tsc;                 /* length of the measurement */
	struct gen_stats final;                /* counters at the end of the drain */
	unsigned int open_after_drain;         /* rounds that never ended: lost chunks */
	uint32_t last_round;                   /* the latest round any chunk reached */
	char error[256];                       /* first verification failure, or "" */
	struct gen_wrong wrong[GEN_WRONG_MAX]; /* the first wrong RESULTs */
	unsigned int n_wrong;
};

struct gen_lcore;

/**
 * Create a generator for job gj on a started port. Frames come from pool (room for a
 * frame). NULL with a message in err on failure.
 */
struct gen_lcore *gen_lcore_create(const struct gen_job *gj, const struct gen_params *prm,
				   struct rte_mempool *pool, char *err, size_t errlen);

/** Free it (after gen_lcore_main() returned). The frames' pool must outlive any holder. */
void gen_lcore_free(struct gen_lcore *g);

/** The loop (rte_eal_remote_launch, or called on the main lcore): arg is the generator. */
int gen_lcore_main(void *arg);

/** The result of the run (after gen_lcore_main() returned). */
const struct gen_result *gen_lcore_result(const struct gen_lcore *g);

/**
 * Resolve the gateway's MAC before a run (port mode): ARP requests for the gateway's
 * address from every worker's (which also teach the gateway the workers' MAC), answers to
 * its requests for a worker, until it replies or timeout_s passes. Main lcore, before the
 * generator runs on the port. Returns 0 with gw_mac set, or -ETIMEDOUT.
 */
int gen_arp_resolve(uint16_t port_id, uint16_t queue, struct rte_mempool *pool,
		    const struct gen_job *gj, const uint8_t *src_mac, double timeout_s,
		    uint8_t *gw_mac);

#endif
