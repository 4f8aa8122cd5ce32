/* SPDX-License-Identifier: BSD-3-Clause
 *
 * georeduce-dataplane: the state shared by the control thread (slowpath/) and the worker
 * lcores (fastpath/), and the contract between them.
 *
 * Threads:
 *  - The control thread (the EAL main lcore) owns struct dp: it parses tables, builds one
 *    struct dp_job per installed (job, epoch), publishes the set of jobs (struct dp_state)
 *    with a release store, waits for an RCU grace period (rte_rcu_qsbr) before it frees
 *    anything a worker may still read, resolves neighbours (ARP) and answers the control
 *    socket. It allocates, locks nothing and may block.
 *  - Each worker lcore owns one struct dp_lcore: its RX queues, its TX buffers, its
 *    counters and, in every job, its own slots (chunks are steered to lcores by UDP port,
 *    so no slot is ever touched by two lcores). Workers never allocate (mbufs come from
 *    pools sized at start), lock, make syscalls or log above DEBUG. They read the published
 *    state between two quiescent-state reports of one loop iteration.
 *
 * Every field below says who writes it and who reads it ("ctl: rw, workers: ro").
 */
#ifndef GEOREDUCE_DP_H
#define GEOREDUCE_DP_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include <rte_common.h>
#include <rte_epoll.h>
#include <rte_ether.h>
#include <rte_mbuf.h>
#include <rte_ring.h>

#include "sum.h"
#include "table.h"
#include "wire.h"

#define DP_PORTS_MAX 8    /* ethdev ports one dataplane drives */
#define DP_LCORES_MAX 64  /* worker lcores */
#define DP_JOBS_MAX 16    /* jobs installed at once */
#define DP_EPOCHS_MAX 4   /* epochs of one job held at once: live + draining */
#define DP_NEIGH_MAX 1024 /* neighbour entries (gateways and workers of every job) */
#define DP_SEEN_MAX 256   /* ARP sightings kept for neighbours no table names yet */
#define DP_BURST_MAX 64
#define DP_LEARN_RING 256        /* per-lcore ring of ARP sightings for the control thread */
#define DP_CTL_TX_RING 64        /* per-port ring of control-thread frames (ARP requests) */
#define DP_TREE_SHARD UINT16_MAX /* tree_map: a tree of another gateway of this site */
#define DP_HDR_ROOM 128          /* data room of the header mbufs of multicast copies */

/* Counters of one worker lcore that are not drop reasons (drops use enum wire_reason). */
enum dp_ctr {
	DP_CTR_RX_PACKETS = 0,
	DP_CTR_RX_BYTES,
	DP_CTR_TX_PACKETS, /* handed to the TX queue */
	DP_CTR_TX_BYTES,
	DP_CTR_TX_DROPPED,            /* the TX queue did not take them */
	DP_CTR_CHUNKS_COMPLETED,      /* slots that had all their contributions */
	DP_CTR_PARTIALS_SENT,         /* partial sums sent to a parent */
	DP_CTR_RESULTS_SENT,          /* result copies sent to children and workers */
	DP_CTR_CONTRIBS,              /* contributions summed */
	DP_CTR_ACKS_SENT,             /* answers to retransmitted contributions held here */
	DP_CTR_RETRANSMITS,           /* partial sums sent again to the parent */
	DP_CTR_RETX_FAST,             /* ... of them, because a later one was answered */
	DP_CTR_RETX_TAIL,             /* ... of them, overdue once the tree's RESULTs stopped */
	DP_CTR_RETX_COPY,             /* ... of them, second copies of a repair (idle link) */
	DP_CTR_NACKS_SENT,            /* NACK_RESULTs to the parent (partial sum held there) */
	DP_CTR_RETX_STUCK,            /* chunks still without RESULT after --retries tries */
	DP_CTR_HELD_ASKED,            /* NACK_RESULTs sent instead of a partial sum at its first
				     * timeout, asking whether the parent holds it */
	DP_CTR_NACK_OPEN_WITHOUT,     /* chunks of NACK_RESULTs from a contributor whose slot is
				      * open for the round without its contribution */
	DP_CTR_NACK_NOT_OPEN,         /* ... whose slot holds neither the round nor its RESULT */
	DP_CTR_MCAST_RX,              /* MCAST packets accepted (docs/PROTOCOL.md section 7.5) */
	DP_CTR_MCAST_COPIES,          /* MCAST copies sent to next-hop gateways and workers */
	DP_CTR_MCAST_NACKS,           /* NACK_MCASTs accepted (docs/PROTOCOL.md section 7.5) */
	DP_CTR_MCAST_REPAIRS,         /* MCAST copies sent again (RETX) to a requester: from
				     * the retained copies, or a repair relayed to who asked */
	DP_CTR_MCAST_ASKED,           /* NACK_MCASTs sent to a stream's `from` gateway for a
				     * chunk not retained here */
	DP_CTR_MCAST_NOT_HELD,        /* chunks asked for that are neither retained nor can be
				     * asked for upstream (the stream's source gateway) */
	DP_CTR_MCAST_ASK_FULL,        /* ... pending ones evicted for them (the same slot) */
	DP_CTR_MCAST_BUDGET,          /* NACK_MCAST answers withheld: the requester's budget
				     * was spent (docs/PROTOCOL.md section 7.6) */
	DP_CTR_PACED,                 /* frames that waited for their pacer */
	DP_CTR_PACE_FULL,             /* frames dropped: a pacer's queue was full */
	DP_CTR_ANSWER_BUDGET,         /* NACK_RESULT answers withheld: the sender's budget was
				     * spent (docs/PROTOCOL.md section 7.6) */
	DP_CTR_RECOVER_ASKED,         /* result recovery (docs/PROTOCOL.md 10.1): NACK_RESULTs
				     * sent to neighbour gateways for a RESULT held nowhere here */
	DP_CTR_RECOVER_ANSWERED,      /* ... RESULTs sent from an older epoch or relayed */
	DP_CTR_RECOVERED,             /* ... RESULTs that came back and completed a slot or
				     * went on to whoever asked */
	DP_CTR_RECOVER_FULL,          /* ... requests not recorded: the lcore's table was full
				     * and their requester held its share of it */
	DP_CTR_RECOVER_EVICTED,       /* ... requests dropped from a full table for another
				     * requester's: theirs held the most (recover.c) */
	DP_CTR_RECOVER_OTHER_MEMBERS, /* ... RESULTs another epoch retains but of another
					 * membership (`prepare`'s `membership`): not used */
	DP_CTR_ROUNDS_GIVEN_UP,       /* slots that gave up their round: every contributor had
				   * sent a later one (a restarted job, docs/CLIENT.md) */
	DP_CTR_SEALED,                /* frames sealed for a protected link (section 14) */
	DP_CTR_OPENED,                /* sealed frames opened and authenticated */
	DP_CTR_SEAL_BYTES,            /* bytes of the georeduce packets sealed */
	DP_CTR_OPEN_BYTES,            /* ... opened */
	DP_CTR_CRYPTO_LATE,           /* operations the device returned in a later loop iteration
				   * than the one that handed them over */
	DP_CTR_CRYPTO_FAILED,         /* operations the device failed (not a tag mismatch) */
	DP_CTR_CRYPTO_FULL,           /* frames dropped: the lcore's ring of operations was full */
	DP_CTR_ARP_REPLIES,
	DP_CTR_ICMP_REPLIES,
	DP_CTR_NOT_FOR_US,       /* dropped: another host, protocol or port (drops[]) */
	DP_CTR_NO_NEIGHBOUR,     /* a destination's MAC is not resolved yet: dropped */
	DP_CTR_NO_MBUF,          /* a pool was empty: dropped */
	DP_CTR_BAD_FRAME,        /* Ethernet/IP/UDP rejected (details in drops[]) */
	DP_CTR_BAD_HEADER,       /* georeduce header rejected (details in drops[]) */
	DP_CTR_CTL_TX,           /* control-thread frames sent for it */
	DP_CTR_FAULT_DROPPED,    /* fault injection: frames dropped on purpose */
	DP_CTR_FAULT_DUPLICATED, /* ... duplicated */
	DP_CTR_FAULT_REORDERED,  /* ... held back behind the next frame */
	DP_CTR_FAULT_DELAY_FULL, /* ... dropped because the delay line was full */
	DP_CTR_FAULT_CORRUPTED,  /* ... a bit of the payload flipped */
	DP_CTR_COUNT,
};

/* Slot states (docs/PROTOCOL.md, section 7.3). */
enum dp_slot_state {
	DP_SLOT_FREE = 0,
	DP_SLOT_OPEN,     /* collecting contributions */
	DP_SLOT_COMPLETE, /* the partial sum went to the parent; awaiting the RESULT */
	DP_SLOT_DONE,     /* the RESULT is known (retained until the slot is reused) */
};

/**
 * One chunk in flight at one gateway: (job, epoch, tree, round, chunk) on one lcore. Owned
 * by that lcore alone (workers: rw, ctl: only after the job is unpublished and the grace
 * period is over).
 */
struct dp_slot {
	uint32_t round;
	uint32_t chunk;
	uint8_t state;           /* enum dp_slot_state */
	uint8_t retries;         /* COMPLETE: retransmissions towards the parent */
	uint16_t n_in;           /* contributions in (bits set in `in`) */
	uint32_t contrib;        /* worker contributions summed */
	bool held;               /* COMPLETE: the parent acknowledged the partial sum */
	bool resent_clear;       /* COMPLETE: resent with nothing of its tree waiting in
				     * the pacer to the parent (so it left after every
				     * partial sum sent before it) */
	bool dup;                /* COMPLETE: a second copy of the resend is due */
	bool asked;              /* COMPLETE: its first timeout asked the parent whether it
				     * holds the partial sum (a NACK_RESULT), not resent it */
	uint32_t sent_us;        /* COMPLETE: the tsval of its latest transmission */
	uint64_t sent_tsc;       /* COMPLETE: when the partial sum last went up (first
				     * while retries is 0) */
	struct rte_mbuf *acc;    /* OPEN: the first packet, the fp32 accumulator or the
				     * header template of fp16/bf16; COMPLETE: the partial
				     * sum sent, one reference kept for retransmission */
	struct rte_mbuf *result; /* DONE: the RESULT, one reference held */
	struct rte_mbuf *prev;   /* the RESULT the slot held before it was reopened (a later
				     * round of its chunk, or the chunk a pool further): a worker
				     * a round behind, or a child gateway a pool behind, may
				     * still ask for it; they are never further behind */
	uint32_t prev_round;
	uint32_t prev_chunk;
	float *acc32;        /* fp16/bf16: this slot's fp32 accumulator (job arena) */
	uint64_t quorum_tsc; /* OPEN, a tree with a grace window: when the threshold was
			      * reached (0: not yet); the window runs from here. Kept once
			      * the chunk completed, until the slot opens again: the
			      * lateness of its stragglers counts from here */
	uint64_t grace_due;  /* ... and when it ends (TSC) */
	uint16_t quorum_n;   /* ... the contributions in at that moment */
	bool grace_q;        /* an entry of the lcore's grace FIFO points here */
	uint64_t in[TABLE_CONTRIB_MAX / 64]; /* contributor bitmap (table.h: bit k) */
} __rte_cache_aligned;

/** A destination of this gateway's packets: parent, child gateway or local worker. */
struct dp_dest {
	uint16_t id;                /* node id */
	uint16_t port;              /* ethdev port it is reached through */
	uint16_t nh;                /* neighbour entry of the next hop (itself or a router) */
	uint16_t udp_base;          /* gateway: base + chunk % count; worker: its port */
	uint16_t udp_count;         /* gateway: its port count; worker: 1 */
	uint32_t ipv4;              /* host order */
	uint32_t ip_sum;            /* one's-complement sum of this gateway's IPv4 header to
				     * it without the total length (docs: tx.h) */
	uint64_t src_key;           /* ipv4 << 16 | udp_base, or on a protected link
				     * dp_src_key_sealed(id): what its packets must come from
				     * (validate.h) */
	const struct dp_seal *seal; /* protected link: its key; NULL: plain */
};

/** The source key of a sender at ipv4 (host order) whose UDP ports start at port. */
static inline uint64_t
dp_src_key_of(uint32_t ipv4, uint16_t port)
{
	return (uint64_t)ipv4 << 16 | port;
}

/* In a source key: the packet was sealed (received) or must be (a protected link). */
#define DP_SRC_SEALED (1ull << 48)

/** The source key of a sealed frame opened with the key of the link to gateway `peer`, and
 * what a protected link to it requires: its key, not its address, says who sent it
 * (validate.h), so that a peer behind NAT or re-addressed is still known. */
static inline uint64_t
dp_src_key_sealed(uint16_t peer)
{
	return DP_SRC_SEALED | (uint64_t)peer << 16;
}

/* --- Protected links (docs/PROTOCOL.md section 14; fastpath/seal.c) ---------------------- */

#define DP_SEAL_MAGIC 0x4753u /* "GS" */
#define DP_SEAL_VERSION 1
#define DP_SEAL_HDR_LEN 32 /* between UDP and the encrypted georeduce packet */
#define DP_SEAL_TAG_LEN 16
#define DP_SEAL_OVERHEAD (DP_SEAL_HDR_LEN + DP_SEAL_TAG_LEN)
_Static_assert(DP_SEAL_OVERHEAD == WIRE_SEAL_OVERHEAD, "one sealed frame format");
#define DP_SEAL_IV_LEN 12
#define DP_SEAL_LANES DP_LCORES_MAX /* sender lcores a receiver keeps a window for */
#define DP_REPLAY_WINDOW 64         /* sequence numbers a receiver accepts out of order */

/** A receiver's replay window for one (key, sender lane) on one lcore (that lcore: rw). */
struct dp_replay {
	uint64_t top;  /* highest sequence number accepted; 0: none */
	uint64_t bits; /* bit k: top - k accepted */
};

/**
 * One protected link of one (job, epoch): its key as two cryptodev sessions (created and
 * freed by ctl), per lcore the sequence numbers it sent and the windows of what it
 * received. The key bytes stay in the table (ctl only).
 */
struct dp_seal {
	uint16_t peer; /* gateway id */
	uint32_t key_id;
	uint8_t aead; /* enum table_aead */
	void *enc;    /* sessions (ctl: creates; workers: use) */
	void *dec;
	uint64_t *tx_seq;     /* per lcore index: the last sequence number sent */
	struct dp_replay *rx; /* per lcore index x DP_SEAL_LANES */
};

/**
 * The cryptodev of protected links (--crypto): set up by ctl at start, one queue pair per
 * worker lcore (queue pair = lcore index), sessions from one pool, crypto operations and
 * sealed frames from pools on the worker lcores' socket.
 */
struct dp_crypto {
	bool on;
	bool created; /* dp_setup() created the vdev (and removes it) */
	uint8_t dev_id;
	char name[64];        /* the vdev, e.g. crypto_aesni_gcm0 */
	const char *driver;   /* its PMD */
	bool oop_lb, oop_sgl; /* it seals out of place from one segment, from several:
				     * a frame is sealed from where it is, without a copy */
	bool cpu;             /* synchronous CPU crypto (RTE_CRYPTODEV_FF_SYM_CPU_CRYPTO),
			       * not operations enqueued and dequeued */
	struct rte_mempool *sess_pool;
	struct rte_mempool *op_pool;
	struct rte_mempool *seal_pool; /* sealed frames on their way out */
	uint32_t sessions_max;         /* two per protected link of every installed table */
	uint32_t sessions_used;        /* ctl only */
	uint64_t bytes;                /* memory of the three pools */
};

/** A grace window that may run out: the OPEN slot s of tree index `tree`, which reached its
 * threshold, is complete at `due` (TSC) at the latest (docs/DATAPLANE.md, "Quorum"). */
struct dp_grace {
	uint64_t due;
	struct dp_slot *s;
	uint16_t tree;
};

/* Counts of how the chunks of trees with a threshold (a partial reduce) completed, per job
 * and lcore (that lcore: relaxed load and store, never an atomic RMW; ctl: ro relaxed). */
enum dp_quorum {
	DP_QUORUM_ALL = 0,      /* chunks complete with every contribution in ... */
	DP_QUORUM_ALL_IN_GRACE, /* ... of them, the last within a grace window */
	DP_QUORUM_THRESHOLD,    /* chunks complete at the threshold (no grace window) */
	DP_QUORUM_EXPIRED,      /* chunks complete when their grace window ran out */
	DP_QUORUM_IN_GRACE,     /* contributions summed within a grace window */
	DP_QUORUM_LATE,         /* contributions that came after their chunk completed */
	DP_QUORUM_COUNT,
};

/* The adaptive grace window (docs/DATAPLANE.md, "Quorum"): samples kept per job and lcore,
 * how many before the first estimate, and how often it is made again (powers of two). */
#define DP_GRACE_SAMPLES 64
#define DP_GRACE_SAMPLES_MIN 8
#define DP_GRACE_EVERY 8
#define DP_GRACE_FLOOR_US 1000 /* the adaptive window is never below this */

/** A pending retransmission check of a COMPLETE slot (a partial sum awaiting its RESULT). */
struct dp_timer {
	uint64_t due; /* TSC */
	struct dp_slot *s;
	uint32_t chunk;
	uint32_t round;
	uint16_t tree; /* index in the job's trees[] */
};

/**
 * What NACK_RESULT answers to one sender may still send from one lcore, in bytes
 * (docs/PROTOCOL.md section 7.6): every CONTRIB frame received from the sender adds its
 * length, time adds DP_BUDGET_REFILL_BPS, both up to DP_BUDGET_CAP full frames of the job;
 * every RESULT frame answered takes its length. That lcore: rw.
 */
struct dp_budget {
	uint32_t bytes;
	uint64_t tsc; /* the last time refill */
};

#define DP_BUDGET_CAP WIRE_NACK_RANGE_MAX /* full frames of the job */

/**
 * A RESULT this gateway asked its neighbour gateways for (result recovery,
 * docs/PROTOCOL.md section 10.1): (tree, chunk, round) and who is waiting for it. That
 * lcore: rw. An entry is free once `until` (TSC) has passed.
 */
struct dp_recover {
	uint64_t until;
	uint32_t chunk;
	uint32_t round;
	uint16_t tree; /* index in the job's trees[] */
	uint16_t to;   /* DP_RECOVER_SLOT: this gateway's own open slot;
				     * DP_RECOVER_PARENT: the parent asked; else the down[]
				     * entry that asked (a child gateway, or a local worker:
				     * then every local worker of the tree gets it) */
};

#define DP_RECOVER_MAX 32 /* requests pending per job and lcore */
#define DP_RECOVER_SLOT 0xffff
#define DP_RECOVER_PARENT 0xfffe
#define DP_BUDGET_REFILL_BPS 1000000 /* bytes per second and sender, per lcore */

/**
 * One lcore's loss-recovery state in one job (that lcore: rw; ctl: frees it with the job).
 * Timers wait in a FIFO, scanned from the head until an entry is not due: timeouts differ
 * between trees and change slowly, so an entry may be checked a little late, which only
 * delays a retransmission. At most two entries per slot (a stale one is dropped when it
 * comes up), so twice the slots never overflow.
 */
struct dp_job_lcore {
	struct dp_timer *q; /* capacity mask + 1 (power of two) */
	uint32_t mask, head, tail;
	uint64_t *srtt;           /* per tree: smoothed CONTRIB-to-RESULT time, TSC; 0: none */
	uint64_t *rttvar;         /* per tree */
	uint64_t *progress;       /* per tree: TSC of the latest RESULT from the parent */
	uint64_t *progress_sent;  /* per tree: the latest send time of a partial sum that
				     * has its RESULT (sent once) */
	uint64_t *progress_rtt;   /* per tree: that partial sum's round trip */
	uint64_t *tail_probe;     /* per tree: TSC of the latest resend of a silent tail */
	uint32_t *progress_round; /* per tree: the round of that RESULT */
	struct dp_pacer *pacers;  /* n_pacers, see struct dp_tree */
	uint32_t *active;         /* pacers with frames waiting: n_active of n_pacers */
	struct dp_budget *budget; /* per tree down[] entry (dp_tree.budget_off + i), then
				     * one per tree for its parent (dp_job.parent_budget_off +
				     * tree index): what NACK_RESULT answers to that sender may
				     * still cost */
	struct dp_recover recover[DP_RECOVER_MAX];
	struct dp_mstream *mstreams; /* per stream index: retained MCAST copies */
	/* Grace windows (trees with one): a FIFO of at most one entry per slot (grace_q),
	 * capacity gmask + 1; NULL without such trees. */
	struct dp_grace *gq;
	uint32_t gmask, ghead, gtail;
	uint64_t gsamp[DP_GRACE_SAMPLES]; /* adaptive: the latest arrivals after a threshold,
					   * TSC after it (0: a window nobody came in) */
	uint32_t gsamp_n;                 /* samples taken */
	_Atomic uint64_t grace_auto_tsc;  /* adaptive: the window they give (0: none yet; the
					   * tree's grace_tsc bounds it); ctl: ro relaxed */
	_Atomic uint64_t quorum[DP_QUORUM_COUNT];
	_Atomic uint32_t n_active; /* that lcore: rw (relaxed loads and stores, never an
				     * atomic RMW); ctl: ro relaxed, so that a draining epoch
				     * is retired only once its pacers sent what they hold */
};

/** This gateway's part in one tree, runtime form (built from a struct table_tree). */
struct dp_tree {
	const struct table_tree *tt; /* slow path only (the table is not NUMA-placed) */
	uint16_t id;
	uint16_t expected;  /* contributions per chunk */
	uint32_t threshold; /* worker contributions that complete a chunk before
				     * every contributor is in (partial reduce); UINT32_MAX:
				     * none, all contributors */
	uint64_t grace_tsc; /* the grace window after the threshold (its bound if adaptive);
			      * 0: complete at the threshold */
	bool grace_adaptive;
	uint32_t chunk_first;
	uint32_t chunk_count;
	uint32_t slot_mask; /* slots - 1 */
	uint32_t slot_off;  /* first slot of this tree in each lcore's slot array */
	uint16_t n_src;     /* contributors: workers then children */
	bool has_parent;
	struct dp_dest parent;
	struct dp_dest *down; /* children then workers: where results go */
	uint16_t n_down;
	/* Contributors sorted by id for lookup: ids[k] has bit bits[k]; is_worker[k]. */
	uint16_t *src_ids;
	uint8_t *src_bits;
	uint8_t *src_worker;
	uint16_t *src_down; /* the contributor's entry in down[] (answers go there) */
	/* The contrib of the contributor's CONTRIBs: 1 for a worker, the workers below it
	 * (table: child_workers) for a child gateway. Checked for child gateways in jobs
	 * without contributor sets, where every partial sum holds all of them. */
	uint16_t *src_contrib;
	/* Contributor sets (the job's cset_len != 0): the workers below child gateway c, as a
	 * set of cset_len bytes at child_sets + c * cset_len; NULL without sets or children.
	 * A child's CONTRIB may name no other worker. */
	uint8_t *child_sets;
	/* Pacing: this tree's traffic on each WAN link at the planned rate. The pacer of
	 * the parent link is pace_first, of child gateway c pace_first + 1 + c (index into
	 * each lcore's pacers); workers are on the LAN and not paced. */
	uint32_t pace_first;
	uint16_t n_children; /* the first n_children entries of down[] */
	uint32_t budget_off; /* first answer budget of down[] in dp_job_lcore.budget */
};

/**
 * This gateway's part in one multicast stream, runtime form (built from a struct
 * table_stream). Immutable after dp_job_create(): workers ro.
 */
struct dp_stream {
	uint16_t id;
	bool at_source;   /* sent by local workers, not received from `from` */
	uint16_t from_id; /* upstream gateway id (not at the source) */
	uint16_t n_to;    /* the first n_to entries of out[] are gateways */
	uint16_t n_out;   /* to gateways, then deliver workers */
	uint16_t n_origins;
	struct dp_dest *out; /* where copies go */
	uint16_t *origins;   /* sorted: the source site's workers */
	/* Where its packets must come from (fastpath/validate.h): src_key and udp_count of
	 * the `from` gateway, or at the source of origins[k] (origin_count[k] 0: the table
	 * gives that worker no address, its id alone is checked). */
	uint64_t from_key;
	uint16_t from_count;
	uint64_t *origin_key;
	uint16_t *origin_count;
	uint32_t pace_first; /* pacer of out[k] (k < n_to): pace_first + k */
	struct dp_dest from; /* the `from` gateway (not at the source): where
				     * NACK_MCASTs for chunks not retained go */
};

/** Frames a stream's pacer holds per (stream, link) and lcore (no slot pool to size by):
 * halved to fit the packet budget, not below DP_MCAST_PACE_Q_MIN. */
#define DP_MCAST_PACE_Q 2048
#define DP_MCAST_PACE_Q_MIN 256

/*
 * Loss recovery of MCAST (docs/PROTOCOL.md section 7.5): each gateway of a stream retains
 * the copies it forwarded, per (stream, lcore), origin by origin in a ring of the latest
 * chunks in the order the origin sends them (round x chunks + chunk):
 * DP_MCAST_KEEP_CHUNKS per origin (fewer when two rounds of the tensor have fewer chunks;
 * the ring of a stream at most DP_MCAST_KEEP_MAX copies), so that a copy stays retained
 * for the time many stream windows (DP_MCAST_PACE_Q) take to pass, and a small tensor's
 * round while its origin sends the next one. A job whose rings would
 * not fit what is left of the packet budget for slots gets them halved until it fits (to
 * DP_MCAST_KEEP_MIN per origin).
 */
#define DP_MCAST_KEEP_CHUNKS 16384u
#define DP_MCAST_KEEP_MAX 32768u
#define DP_MCAST_KEEP_MIN 16u /* rings are halved to fit the slot budget, not below */
#define DP_MCAST_ASK_MAX \
	1024u /* chunks asked of `from`, pending per stream and lcore:
				     * slots by (round x chunks + chunk) x origins + origin
				     * index, as many as the rings hold copies (a power of two
				     * at least), at most this many */
#define DP_MCAST_ASK_WORDS ((TABLE_CHILDREN_MAX + TABLE_WORKERS_MAX + 63) / 64)
#define DP_MCAST_REASK_US \
	20000u                        /* a chunk asked of `from` is asked again, at the next
				     * request for it, after this long at least (and the
				     * measured repair time and four deviations) */
#define DP_MCAST_ASK_LIFE_US 2000000u /* ... and forgotten after this long */

/** One copy retained: the received frame (one reference), its round and chunk. */
struct dp_mcopy {
	struct rte_mbuf *m; /* NULL: empty */
	uint32_t round;
	uint32_t chunk;
};

/** A chunk of one origin's round asked of the stream's `from` gateway, and who waits. */
struct dp_mask {
	uint64_t until; /* TSC: free once passed (0: free) */
	uint64_t asked; /* TSC of the last NACK_MCAST sent upstream for it */
	uint32_t round;
	uint32_t chunk;
	uint16_t origin;
	uint8_t asks;                        /* NACK_MCASTs sent upstream for it (saturating) */
	uint64_t askers[DP_MCAST_ASK_WORDS]; /* bit k: out[k] asked for it */
};

/** One lcore's loss-recovery state of one stream (that lcore: rw; ctl: frees it). */
struct dp_mstream {
	struct dp_mcopy *keep;    /* n_origins x (keep_mask + 1), origin index major */
	uint32_t keep_mask;       /* copies kept per origin - 1 (a power of two) */
	struct dp_budget *budget; /* per out[] entry: what NACK_MCAST answers may cost */
	uint32_t budget_cap;      /* bytes: a full frame of the job per copy the ring holds
				     * (an output may have lost them all), at least the job's
				     * budget_cap */
	uint64_t rep_srtt;        /* TSC: smoothed time from asking `from` to its repair
				     * (of chunks asked once; 0: no sample yet) ... */
	uint64_t rep_var;         /* ... and its mean deviation */
	uint32_t n_ask;           /* entries of ask[] in use (until != 0) */
	uint32_t ask_mask;        /* slots of ask[] - 1 (a power of two) */
	struct dp_mask *ask;
};

/**
 * A token bucket on the TSC for one (tree, link) of one lcore, with the frames waiting
 * for their turn (that lcore: rw). A frame may leave when next <= now; it then moves
 * next on by its length in TSC cycles at the paced rate. Idle credit is capped at
 * DP_PACE_BURST bytes.
 */
struct dp_pacer {
	uint64_t next;       /* TSC at which the next frame may leave */
	double tsc_per_byte; /* 0: not paced */
	struct rte_mbuf **q; /* waiting frames: capacity mask + 1 */
	uint32_t mask, head, tail;
	uint16_t port;              /* the link's port */
	bool active;                /* in the lcore's active list */
	const struct dp_seal *seal; /* a protected link: frames are sealed as they leave, so
				     * that sequence numbers follow the order on the wire */
	uint64_t bytes, frames;     /* handed to this pacer (sent or queued), paced or not:
				     * the tree's traffic on the link, for the control process */
	uint64_t retx_bytes;        /* of which retransmissions */
};

#define DP_PACE_BURST 16384 /* bytes a paced link may send at once after idling */

/**
 * One installed (job, epoch): immutable after dp_job_create() except the slots (each lcore
 * its own) and the per-lcore open-slot counts. ctl: creates, frees after unpublish + grace
 * period + drain; workers: ro (slots rw, their own).
 */
struct dp_job {
	uint32_t job;
	uint32_t epoch;
	struct table *tb; /* the parsed table (ctl keeps it for dump) */
	char *table_json; /* as installed, for dump */
	enum wire_dtype dtype;
	enum wire_dtype lan_dtype; /* the local workers' CONTRIBs: dtype, or fp32 or bf16 for
				     * an MX dtype (summed into the same fp32 accumulator) */
	uint8_t cset_blocks;       /* contributor sets on the wire, in 32-byte blocks */
	uint32_t cset_len;         /* their bytes: where payloads start after the header */
	uint32_t membership;       /* the job's workers as `prepare` named them (a digest),
				     * 0: not named. Result recovery takes no RESULT from an
				     * epoch of another membership (docs/PROTOCOL.md 10.1) */
	uint32_t chunk_elements;
	uint64_t n_chunks;
	uint64_t elements;
	uint16_t self_id;
	uint16_t self_port; /* ethdev port of this gateway's address */
	uint32_t self_ipv4;
	uint16_t udp_base, udp_count;
	uint16_t tree_map_n; /* tree_map covers ids [0, tree_map_n) */
	uint16_t *tree_map;  /* tree id -> index in trees[] + 1, 0: none, DP_TREE_SHARD:
				     * a tree of another gateway of this site */
	int n_trees;
	struct dp_tree *trees;
	uint16_t stream_map_n; /* stream_map covers ids [0, stream_map_n) */
	uint16_t *stream_map;  /* stream id -> index in streams[] + 1, 0: none */
	int n_streams;
	struct dp_stream *streams;
	uint32_t slots_per_lcore;      /* sum of the trees' slots */
	uint32_t mcast_keep_per_lcore; /* MCAST copies the streams retain per lcore, at most */
	unsigned int mcast_keep_shift; /* their rings halved this often to fit the budget */
	uint32_t mcast_pace_q;         /* frames a stream pacer holds (a power of two) */
	uint64_t mcast_reask_tsc;      /* DP_MCAST_REASK_US and DP_MCAST_ASK_LIFE_US in TSC */
	uint64_t mcast_ask_life_tsc;
	uint32_t n_pacers;          /* per lcore: one per tree link to a gateway, then one per
				     * stream link to a `to` gateway */
	uint32_t n_budgets;         /* per lcore: one per down[] entry of every tree, then
				     * one per tree for its parent */
	uint32_t parent_budget_off; /* the first of those per-tree parent budgets */
	int n_seals;                /* protected links, sorted by peer */
	struct dp_seal *seals;
	uint32_t budget_cap;          /* bytes: DP_BUDGET_CAP frames of a full chunk */
	uint64_t budget_tsc_per_byte; /* TSC cycles per byte of refill */
	unsigned int n_lcores;
	struct dp_slot **slots; /* per lcore index: slots_per_lcore slots (its socket) */
	float **arena;          /* per lcore index: fp32 accumulators (fp16/bf16 only) */
	/* Per lcore index: slots OPEN or COMPLETE (workers: wo own, ctl: ro relaxed). */
	_Atomic uint32_t *busy;
	/* Per lcore index: chunks of this epoch whose RESULT the gateway has had, made at the
	 * root or received from the parent, each counted once (workers: wo own, ctl: ro
	 * relaxed). Rounds done = this over the chunks a round has here. */
	_Atomic uint64_t *done;
	/* Per down[] entry of every tree (dp_tree.budget_off + i), a contributor (local worker
	 * or child gateway): the latest round of a CONTRIB it sent this epoch, as
	 * 1 << 32 | round (0: none yet). A worker past a round has every RESULT of it, which
	 * it keeps (docs/PROTOCOL.md 10.1, rule 6), unless its job restarted; once every
	 * contributor of a tree is past a slot's round, the slot gives that round up. Every
	 * lcore: relaxed loads, and a relaxed store when a CONTRIB is of a later round than
	 * the one loaded (two lcores that race may leave the older one, which only puts off a
	 * recovery or a give-up to the next CONTRIB). */
	_Atomic uint64_t *src_round;
	struct dp_job_lcore *lj;  /* per lcore index: timers and round-trip estimates */
	uint64_t bytes;           /* memory held by this job (slots, arenas, maps) */
	uint64_t mbufs_held_max;  /* mbufs its slots can hold at most */
	uint64_t retire_tsc;      /* ctl only: when it stopped being live (0: live) */
	uint64_t grace_floor_tsc; /* DP_GRACE_FLOOR_US in TSC */
};

/** The jobs workers see: published whole with RCU (ctl: creates, workers: ro). */
struct dp_state {
	int n_jobs;
	struct {
		uint32_t job;
		bool removed; /* epochs[0] drains too: no new chunks */
		int n_epochs; /* live first, then draining ones */
		struct dp_job *epochs[DP_EPOCHS_MAX];
	} jobs[DP_JOBS_MAX];
};

/** ARP sighting passed from a worker to the control thread. */
struct dp_learn {
	uint32_t ipv4; /* host order: the ARP sender, or the PROBE_REPLY's source */
	uint16_t port;
	uint8_t mac[RTE_ETHER_ADDR_LEN]; /* ARP only */
	uint8_t kind;                    /* DP_LEARN_ARP or DP_LEARN_PROBE */
	uint8_t rsvd[3];
	uint32_t rtt_us; /* PROBE only: the round trip */
};

#define DP_LEARN_ARP 0
#define DP_LEARN_PROBE 1

#define DP_PEERS_MAX 64

/**
 * A gateway this dataplane probes (ctl "peers"; ctl only): PROBE every --probe-ms, and
 * when a PROBE_REPLY last came from it, so that the control process can tell a failed
 * link from a failed gateway.
 */
struct dp_peer {
	uint32_t ipv4;           /* host order */
	struct dp_dest d;        /* routed like a table's gateway */
	uint64_t last_reply_tsc; /* 0: never */
	uint32_t rtt_us;
	uint32_t unanswered; /* PROBEs sent since the last PROBE_REPLY */
	uint64_t probes, replies;
};

/** A neighbour: ipv4, port and is_static are written by ctl before the entry is published
 * (n_neigh); mac is a 48-bit MAC in the low bits with DP_NEIGH_VALID set once resolved,
 * written with relaxed stores of the whole word by ctl and, for entries that are not
 * static, by the worker that sees the neighbour's ARP or CONTRIB; read with relaxed loads
 * (one word, never torn). */
#define DP_NEIGH_VALID (1ull << 63)
struct dp_neigh {
	uint32_t ipv4;
	uint16_t port;
	bool is_static;
	_Atomic uint64_t mac;
	uint64_t last_request_tsc; /* ctl only */
};

/** The mac word of a resolved neighbour (struct dp_neigh) from the 6 bytes of its MAC. */
static inline uint64_t
dp_neigh_word(const uint8_t *mac)
{
	uint64_t v = DP_NEIGH_VALID;

	for (int i = 0; i < 6; i++)
		v |= (uint64_t)mac[i] << (8 * (5 - i));
	return v;
}

/** An address seen in ARP that no neighbour entry had yet (ctl only): a table installed
 * later finds its MAC here. */
struct dp_seen {
	uint32_t ipv4;
	uint16_t port;
	uint64_t mac; /* as struct dp_neigh's, DP_NEIGH_VALID set */
};

/** The longest TX delay, --fault delay_ms= and the `delay` op, in ms. */
#define DP_DELAY_MS_MAX 10000

/** Directions of fault injection. */
enum dp_dir {
	DP_RX = 0,
	DP_TX = 1,
};

/**
 * Fault injection on one direction of one port (--fault; off unless configured): each
 * frame is dropped, duplicated, held back behind the next one or corrupted (one bit of
 * its georeduce payload flipped) with these probabilities (x 2^32), and outgoing frames are delayed by delay_tsc. Set at start,
 * read-only afterwards, except delay_tsc of a port with a delay line, which the control
 * thread may change (the `delay` op) and the lcores read with relaxed atomics.
 *
 * With ge set, loss follows a Gilbert-Elliott channel instead of loss: a two-state Markov
 * chain per lcore, port and direction, stepped once per frame. In the good state a frame
 * is lost with probability ge_k, in the bad state with ge_h; the chain goes from good to
 * bad with probability ge_p and back with ge_r (all x 2^32). The mean loss is
 * (ge_p x ge_h + ge_r x ge_k) / (ge_p + ge_r), the mean stay in the bad state 1 / ge_r
 * frames.
 */
struct dp_fault {
	bool on;
	bool ge;
	uint32_t loss;
	uint32_t dup;
	uint32_t reorder;
	uint32_t corrupt; /* one bit of a data frame's payload flipped (fault.c) */
	uint32_t ge_p, ge_r, ge_h, ge_k;
	uint64_t delay_tsc; /* DP_TX only */
};

/** An lcore's delay line for one port: a FIFO of frames and their departure times. */
struct dp_delay_line {
	struct rte_mbuf **m;
	uint64_t *t;
	uint32_t mask;       /* capacity - 1 (a power of two); 0: no delay */
	uint32_t head, tail; /* head: next out; tail: next free */
};

/** A port's address (ctl: set at start, everyone: ro). */
struct dp_port {
	uint16_t port_id;
	uint32_t ipv4; /* host order */
	uint8_t prefix_len;
	uint32_t gw_ipv4;  /* 0: no router on this port */
	uint32_t nat_ipv4; /* --nat-addr: tables may name it as this gateway's; 0: none */
	struct rte_ether_addr mac;
	uint16_t n_rxq;           /* queues 0 .. n_rxq - 1 polled by lcore indices 0 .. */
	uint16_t n_txq;           /* one per worker lcore */
	bool rx_intr;             /* every RX queue can raise an Rx interrupt (--idle intr) */
	struct rte_ring *ctl_tx;  /* ctl: SP enqueue; the lcore polling RX queue 0: SC */
	struct dp_fault fault[2]; /* by enum dp_dir */
};

/** A static route (--route): ctl only, used when tables are built. */
struct dp_route {
	uint32_t dst; /* host order */
	uint8_t prefix_len;
	uint16_t port; /* port index */
	uint32_t via;  /* next hop in the port's subnet; 0: the destination */
};

#define DP_ROUTES_MAX 64

/*
 * Crypto operations of protected links (fastpath/seal.c): per lcore and way (sealing,
 * opening) a ring of DP_CRYPTO_RING entries, each a frame whose operation is prepared, in
 * the device or done. Entries retire from the head in the order they were queued, only
 * once done: a frame goes on (TX staging, up to receiving) and its operation and buffers
 * are freed only after the device returned it. The queue pair holds both rings' entries.
 */
#define DP_CRYPTO_RING (2 * DP_BURST_MAX) /* a power of two */
#define DP_CRYPTO_SEGS 8                  /* segments of a frame sealed or opened by CPU crypto */

/* What became of an entry's operation. */
enum dp_cop_state {
	DP_COP_PENDING = 0, /* prepared, or in the device */
	DP_COP_OK,
	DP_COP_BAD_TAG, /* opening: the tag did not verify */
	DP_COP_FAILED,  /* the device failed it otherwise */
};

/* Free-running positions in a ring: [head, sent) handed to the device (done or not),
 * [sent, tail) prepared, not yet taken by it. */
struct dp_cring {
	uint32_t head, sent, tail;
};

struct rte_crypto_op;

/** The part of a ring entry its operation needs (fastpath/seal.c). */
struct dp_cop {
	struct rte_crypto_op *op; /* the operations path; NULL with CPU crypto */
	struct rte_mbuf *f;       /* the frame opened or sealed in place; out of place
				   * (operations only) the sealed frame, data 32 bytes on */
	void *sess;               /* the key's session that opens or seals it */
	uint64_t tok;             /* the RCU token its loop iteration began under (loop.c) */
	uint32_t len;             /* of the georeduce packet */
	uint32_t tick;            /* the loop iteration that handed it to the device */
	uint8_t done;             /* enum dp_cop_state */
};

/** A sealed frame received, being opened in place (that lcore). */
struct dp_open_op {
	struct dp_cop c;
	const struct dp_job *j; /* the key's epoch */
	const struct dp_seal *k;
	uint64_t seq;
	uint16_t lane, port;
};

/** A frame being sealed for a protected link, then staged for TX (that lcore). */
struct dp_seal_op {
	struct dp_cop c;
	struct rte_mbuf *m; /* out of place: the plain frame, freed after the operation */
	uint16_t port;
};

/** A plain frame an opening retired, for receiving to take on (rx.c). */
struct dp_opened {
	struct rte_mbuf *m;
	uint32_t len;
	uint16_t port;
};

/** Per worker lcore context, cache aligned, owned by its lcore. */
/* A stash of mbufs taken ahead from a pool and prefetched (fastpath/mstash.h). */
#define DP_STASH_REFILL 32                  /* taken from the pool at a time */
#define DP_STASH_SIZE (2 * DP_STASH_REFILL) /* held at most, per stash */

struct dp_mstash {
	struct rte_mempool *pool;
	uint32_t data_off;   /* from the mbuf to its first data byte; 0: no data room */
	uint32_t head, tail; /* free-running; tail - head mbufs held */
	struct rte_mbuf *m[DP_STASH_SIZE];
};

struct dp_lcore {
	unsigned int idx; /* 0 .. n_lcores - 1: index into per-lcore arrays */
	unsigned int lcore_id;
	struct dp *dp;
	const struct sum_kernels *k;
	struct rte_mempool *pool;       /* packets (its socket) */
	struct rte_mempool *hdr_pool;   /* headers of result copies */
	struct rte_mempool *clone_pool; /* indirect mbufs of result copies */
	struct rte_ring *learn;         /* ARP sightings to ctl (SP: this lcore, SC: ctl) */
	struct dp_mstash hdr_stash;     /* from hdr_pool and clone_pool, for result copies */
	struct rte_mempool *op_pool;    /* crypto operations (NULL: no --crypto) */
	struct rte_mempool *seal_pool;  /* sealed frames */
	/* Protected links (fastpath/seal.c): the two rings, the frames opened for rx.c, the
	 * RCU token this iteration began under, the iteration count and the operations the
	 * device holds. */
	struct dp_cring open_r, seal_r;
	struct dp_open_op open_q[DP_CRYPTO_RING];
	struct dp_seal_op seal_q[DP_CRYPTO_RING];
	struct dp_opened opened[DP_CRYPTO_RING];
	uint64_t tok_now;
	uint32_t tick;
	uint32_t crypto_held;
	struct dp_mstash clone_stash;
	uint16_t n_rxq;
	struct {
		uint16_t port;
		uint16_t queue;
	} rxq[DP_PORTS_MAX];
	/* TX staging per port: flushed at the end of each iteration. */
	uint16_t tx_n[DP_PORTS_MAX];
	struct rte_mbuf *tx[DP_PORTS_MAX][DP_BURST_MAX];
	/* Idle (lcore/loop.c): the loop's state and the counters of its sleeps. */
	uint32_t idle_polls;            /* empty polls in a row */
	uint32_t sleep_us;              /* the latest adaptive sleep; 0: none since work */
	bool intr_short;                /* intr: the next wait is short (work or a wakeup) */
	uint8_t idle_mode;              /* enum dp_idle_mode in effect on this lcore: intr only
					* where every one of its RX queues has interrupts */
	int wake_fd;                    /* intr: eventfd the control thread writes to wake the
					* lcore (ctl: creates, closes, writes); -1: none */
	struct rte_epoll_event wake_ev; /* its registration in the lcore's epoll set */
	uint64_t sleeps;                /* adaptive sleeps and interrupt waits */
	uint64_t slept_cycles;          /* TSC cycles spent in them */
	uint64_t intr_wakeups;          /* interrupt waits an Rx interrupt ended */
	/* Fault injection: the generator, per port and direction the Gilbert-Elliott
	 * state (true: bad), and per port the delay line. */
	uint64_t rng;
	bool ge_bad[DP_PORTS_MAX][2];
	struct dp_delay_line delay[DP_PORTS_MAX];
	/* Counters (this lcore: wo, plain; readers: relaxed loads, may be a little stale). */
	uint64_t ctr[DP_CTR_COUNT];
	uint64_t drops[WIRE_REASON_COUNT_MAX];
	const struct dp_state *rx_st; /* the state dp_agg_rx() and dp_mcast_rx() work under
				       * (its other epochs: result recovery) */
	uint64_t cycles_busy;         /* TSC cycles of iterations that did work */
	uint64_t iterations;
} __rte_cache_aligned;

/** How a worker lcore waits when it has nothing to do (--idle). */
enum dp_idle_mode {
	DP_IDLE_POLL = 0, /* busy polling, never a syscall (line-rate certification) */
	DP_IDLE_SLEEP,    /* short sleeps growing up to idle_sleep_us */
	DP_IDLE_INTR,     /* Rx interrupts where every RX queue of the lcore supports them,
			   * DP_IDLE_SLEEP on the other lcores */
};

/** Options that shape the fast path. */
struct dp_params {
	uint16_t udp_base; /* this dataplane's UDP port range */
	uint16_t udp_count;
	uint16_t burst;         /* 1 .. DP_BURST_MAX */
	uint8_t idle_mode;      /* enum dp_idle_mode (--idle) */
	uint32_t idle_spin;     /* empty polls before backing off; 0: never back off */
	uint32_t idle_sleep_us; /* longest adaptive sleep when idle */
	uint32_t drain_ms;      /* how long a retired epoch may keep open slots */
	uint32_t linger_ms;     /* how long a replaced epoch keeps its RESULTs after it
				     * drained, for result recovery (PROTOCOL.md 10.1) */
	uint64_t mbufs;         /* packet mbufs per pool */
	uint16_t mtu;           /* IP MTU */
	uint32_t fault_queue;   /* delay line capacity per lcore and port (power of two) */
	uint64_t fault_seed;    /* seeds the lcores' fault generators (--fault-seed) */
	uint64_t rto_init_tsc;  /* retransmission timeout before any round-trip sample */
	uint64_t rto_min_tsc;
	uint64_t rto_max_tsc;
	uint8_t retries_max;  /* then the chunk is given up (counted) */
	bool pace;            /* pace trees at their planned rates on WAN links */
	uint32_t probe_ms;    /* PROBE interval to the peers */
	uint8_t act_revision; /* --revision: 0 for this build's (GEOREDUCE_REVISION), else
			       * the older revision it answers and refuses as */
};

/** The whole dataplane (ctl: rw; workers: ro except their dp_lcore and job slots). */
struct promsrv;

struct dp {
	struct dp_params prm;
	unsigned int n_lcores;
	struct dp_lcore *lcores[DP_LCORES_MAX];
	unsigned int n_ports;
	struct dp_port ports[DP_PORTS_MAX];
	struct rte_rcu_qsbr *rcu;
	_Atomic(struct dp_state *) state; /* ctl: release store; workers: acquire load */
	atomic_bool stop;                 /* ctl: sets; workers: leave their loop */
	unsigned int n_routes;
	struct dp_route routes[DP_ROUTES_MAX];
	unsigned int n_peers; /* ctl only */
	struct dp_peer peers[DP_PEERS_MAX];
	uint64_t probe_tsc;                 /* ctl: the last round of probes */
	uint64_t peers_since_tsc;           /* ctl: when the peer list was set */
	uint64_t probe_replies_unsolicited; /* ctl: PROBE_REPLYs from no peer, dropped */
	struct dp_neigh neigh[DP_NEIGH_MAX];
	_Atomic uint32_t n_neigh;         /* ctl: release after filling an entry */
	struct dp_seen seen[DP_SEEN_MAX]; /* ctl only: the latest, oldest replaced first */
	unsigned int n_seen, seen_next;
	struct dp_crypto crypto;
	/* Control-thread bookkeeping. */
	struct dp_job *staged[DP_JOBS_MAX]; /* prepared, not yet live */
	uint64_t mbufs_committed;           /* mbufs the installed jobs may hold */
	uint64_t mbufs_budget;              /* of the packet pools, for slots */
	uint64_t job_bytes;                 /* memory held by jobs */
	uint64_t pool_bytes;                /* memory of the mempools */
	struct promsrv *msrv;               /* --metrics, or NULL (its counters: stats) */
	/* Leadership terms of replicated control processes (docs/CONTROL.md, "Terms"): the
	 * newest seen on a request that changes tables (0: none; kept across restarts in
	 * ctl_term_file, slowpath/term.c), and the requests refused for carrying an older
	 * one. */
	int64_t ctl_term;
	uint64_t ctl_stale_terms;
	char ctl_term_file[512]; /* where ctl_term is kept (--term-file), or "" */
};

/* --- Fast path: the worker loop (fastpath/worker.c) --------------------------------------- */

/**
 * One iteration of a worker lcore: receive a burst on each of its queues, process it,
 * flush TX. Returns the number of packets received. Worker lcore (or a test thread that
 * plays it); reads dp->state under the caller's RCU read-side section.
 */
unsigned int dp_worker_poll(struct dp_lcore *lc);

/* --- The worker lcore loop (lcore/loop.c) ------------------------------------------------- */

/** The worker lcore main loop (rte_eal_remote_launch): poll, report quiescence and, when
 * idle, wait as --idle says (busy polling, adaptive sleep or Rx interrupts), until
 * dp->stop. arg is the struct dp_lcore. */
int dp_worker_main(void *arg);

/* --- Slow path (slowpath/) ---------------------------------------------------------------- */

/**
 * Build the runtime form of a table for this dataplane: destinations routed to ports and
 * neighbour entries (added as needed), per-lcore slots and accumulators on each lcore's
 * socket. Control thread.
 *
 * @return  The job, or NULL with a one-line message naming the table field and errno
 *          EINVAL (the table does not fit this gateway: address, ports, routes), E2BIG
 *          (over the dataplane's limits or mbuf budget) or ENOMEM.
 */
struct dp_job *dp_job_create(struct dp *dp, struct table *tb, char *err, size_t errlen);

/** Free a job no worker can see any more (after unpublish and a grace period). */
void dp_job_free(struct dp *dp, struct dp_job *j);

/** Slots of j that are open or complete (awaiting a result), summed over lcores. */
uint64_t dp_job_busy(const struct dp_job *j);

/** Chunks of j whose RESULT this gateway has had (each once), summed over lcores. */
uint64_t dp_job_done(const struct dp_job *j);

/** The quorum counts of j (enum dp_quorum), summed over lcores, into q[DP_QUORUM_COUNT]; the
 * largest adaptive grace window of its lcores in us (0: none). */
uint64_t dp_job_quorum(const struct dp_job *j, uint64_t *q);

/** Pacers of j with frames waiting, over its lcores (ctl; a relaxed snapshot). */
uint64_t dp_job_pacing(const struct dp_job *j);

#endif
