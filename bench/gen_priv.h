/* SPDX-License-Identifier: BSD-3-Clause
 *
 * The generator's state, shared by gen.c (the loop, the emulated workers and child
 * gateways) and gen_parent.c (the emulated parent gateway). Everything here runs on the
 * generator's lcore, except creation and freeing on the main lcore.
 */
#ifndef GEOREDUCE_BENCH_GEN_PRIV_H
#define GEOREDUCE_BENCH_GEN_PRIV_H

#include <stdbool.h>
#include <stdint.h>

#include <rte_mbuf.h>

#include "gen.h"
#include "wire.h"

#define GEN_PROG "georeduce-bench"
#define E_FIRST 0x1u /* send-queue entry: first frame of the round */
#define E_RETX 0x2u  /* ... a retransmission */
#define E_ODD 0x4u   /* ... queued in an odd round of its chunk (gen_enqueue) */
#define OFF_FLAGS (WIRE_FRAME_HDR_OFF + 4)
#define OFF_ROUND (WIRE_FRAME_HDR_OFF + 24)
#define PACE_BURST_BYTES 16384.0
#define TIMER_US 1000 /* timers are scanned every millisecond */
#define RTO_SHIFT_MAX 8
#define RX_DRAIN_MAX 64 /* full RX bursts in a row the timers wait for (gen.c) */
/* Room for any frame the generator takes or builds: a 9000-byte IP packet and Ethernet. */
#define GEN_FRAME_MAX 9216u

/* One driven chunk. */
struct gen_chunk {
	uint32_t chunk;
	uint16_t tree;
	uint16_t dst_port;
	uint32_t round;
	bool open;                /* a round in flight */
	uint8_t tries;            /* timer expiries of this round */
	uint16_t pending;         /* entries in the send queue */
	uint32_t got;             /* workers done this round */
	uint64_t t_first;         /* TSC of the round's first frame; 0: not sent yet */
	uint64_t deadline;        /* TSC; UINT64_MAX while frames are queued */
	uint64_t *mask;           /* workers done, a bit each */
	bool answered;            /* the parent's RESULT of this round is out */
	uint8_t *expect;          /* the exact sum's payload (dataplane peer) */
	uint8_t *set;             /* partial reduce: the round's RESULT set, once known */
	bool known;               /* ... known: the first copy (root) or the parent fixed it */
	uint16_t contrib;         /* ... and its population */
	const uint8_t *partial;   /* the exact partial sum the parent expects */
	struct rte_mbuf **frames; /* per contributor, and the parent's RESULT last */
};

struct gen_lcore {
	const struct gen_job *gj;
	struct gen_params prm;
	struct rte_mempool *pool;
	unsigned int mask_words;
	struct gen_chunk *ch;
	uint64_t *words;  /* all chunks' masks */
	uint8_t *expect;  /* all chunks' expected payloads */
	uint8_t *partial; /* all chunks' expected partial sums (a parent to play) */
	uint8_t *sets;    /* all chunks' RESULT sets (partial reduce) */
	/* The send queue: (chunk index << 24 | worker << 8 | E_*), a power of two. */
	uint64_t *q;
	uint32_t q_mask, q_head, q_tail;
	/* Pacing on the TSC. */
	double tsc_per_byte, next_tx;
	double pace_burst; /* bytes the pacer may send at once after a pause */
	double ns_per_tsc;
	uint64_t verify_tick;
	uint32_t round_last; /* prm.rounds: every chunk's last round */
	unsigned int n_open;
	bool draining;                 /* start no new round */
	struct gen_seal *seal;         /* protected links; NULL: none */
	uint8_t lin[GEN_FRAME_MAX];    /* a received frame made contiguous */
	uint8_t opened[GEN_FRAME_MAX]; /* a sealed frame opened */
	struct gen_stats st;
	struct gen_hist hist;
	struct gen_result res;
};

/** Count a verification failure; the first one's message is kept. */
void gen_fail(struct gen_lcore *g, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/**
 * A payload pl of chunk p->chunk, round p->round, that differs from the exact sum expect
 * (what: "the RESULT to", "the partial sum to"; party: the id of the worker, child or
 * parent it was sent to): counted as a wrong sum and a failure, and the first
 * GEN_WRONG_MAX described in the result. For an MX dtype the element is the payload byte.
 */
void gen_wrong(struct gen_lcore *g, const uint8_t *pl, const uint8_t *expect,
	       const struct wire_pkt *p, const char *what, uint16_t party);

/** Queue frame w (a worker, a child gateway, or GEN_PARENT(gj): the parent's RESULT) of
 * chunk index c. */
void gen_enqueue(struct gen_lcore *g, unsigned int c, unsigned int w, unsigned int flags);

/** Contributor w's payload of chunk index c (w = GEN_PARENT(gj): the parent's own share). */
void gen_contrib_payload(const struct gen_job *gj, unsigned int c, unsigned int w, uint8_t *out);

/**
 * The exact sum of chunk index c as the gateway must send it: n = n_workers, its partial
 * sum; n = n_workers + 1, with the parent's share added (the RESULT of a non-root), the
 * partial sum encoded first for an MX dtype, as the parent receives it.
 */
void gen_exact_sum(const struct gen_job *gj, unsigned int c, unsigned int n, uint8_t *e);

/** The same of the contributors w with inc[w] only, and the parent's share if share. */
void
gen_exact_sum_of(const struct gen_job *gj, unsigned int c, const bool *inc, bool share, uint8_t *e);

struct gen_seal;

/** The sealing state of job gj's protected links (gen_seal.c); NULL: out of memory. */
struct gen_seal *gen_seal_create(const struct gen_job *gj);

/** Free it; NULL is fine. */
void gen_seal_free(struct gen_seal *s);

/**
 * Seal the plain frame f (len bytes, its packet sent by a gateway the bench plays) under
 * key `key` of gj->seals into out, len + WIRE_SEAL_OVERHEAD bytes. 0 or a negative errno.
 */
int gen_seal_frame(struct gen_seal *s, int key, const uint8_t *f, uint32_t len, uint8_t *out);

/** Whether frame d (len bytes, IPv4 and UDP) carries a seal header. */
bool gen_seal_is_sealed(const uint8_t *d, uint32_t len);

/**
 * Open the sealed frame d (len bytes) from the gateway into out as a plain frame; *key:
 * the key that opened it. The plain frame's length, or a negative errno (-ENOKEY: no key
 * of the job with its key id and AEAD; -EBADMSG: malformed, not from the gateway, or a
 * tag that does not verify).
 */
int gen_seal_open(struct gen_seal *s, const uint8_t *d, uint32_t len, uint8_t *out, int *key);

/**
 * Partial reduce (gen_crew.c): the gateway's partial sum d of chunk index c at the parent
 * (its set, contrib and payload), and then the RESULT the parent answers with (set, contrib
 * and sum, into the chunk). False, with a failure counted, if it is wrong.
 */
bool
gen_crew_partial(struct gen_lcore *g, unsigned int c, const uint8_t *d, const struct wire_pkt *p);

/**
 * Partial reduce: a RESULT copy h of chunk index c at a worker or child. Its set and
 * contrib must be those of the round's RESULT (the first copy fixes them at a root); the
 * chunk's expected payload is then the exact sum of the parties named. False, with a
 * failure counted, if they are wrong.
 */
bool
gen_crew_result(struct gen_lcore *g, unsigned int c, const uint8_t *h, const struct wire_pkt *p);

/** The flow of a frame party wk sends the gateway for chunk number `chunk`: from its
 * address and port of the chunk (a worker's port, a gateway's base + chunk mod ports) to
 * the gateway's port of the chunk. */
void gen_flow_to_gw(const struct gen_lcore *g, const struct gen_worker *wk, uint32_t chunk,
		    struct wire_flow *fl);

/** Frames built per driven chunk: one per contributor (multicast: per output), and the
 * parent's RESULT (multicast: the origin's MCAST). */
static inline unsigned int
gen_n_frames(const struct gen_job *gj)
{
	return gj->n_workers + (gj->has_parent || gj->mc != NULL);
}

/** Chunk index c's round ended for every party: latency, counts, and the next round. */
void gen_chunk_done(struct gen_lcore *g, unsigned int c, uint64_t now);

/** The party the bench plays at (ipv4, port): a worker's port, or one of a gateway's. */
int gen_find_worker(const struct gen_job *gj, uint32_t ipv4, uint16_t port);

/** qsort() order of the parties: by (ipv4, port). */
int gen_cmp_worker(const void *a, const void *b);

/** The fields of gj that every table gives alike: job, dtype, chunk size, the gateway,
 * and a copy of its protected links' keys (gj->seals NULL: out of memory). */
void gen_job_common(struct gen_job *gj, const struct table *tb);

/** The protected link to gateway id in gj->seals, or -1 (plain; id 0: a worker). */
int16_t gen_seal_of(const struct gen_job *gj, uint16_t id);

/** Whether a frame for party `id` came as its link requires: sealed under that link's key
 * (key), or plain (key -1) where the link is plain (want -1); a failure counted if not. */
bool gen_link_ok(struct gen_lcore *g, uint16_t id, int want, int key);

/* Multicast tables (gen_mcast.c). */

/** Take the streams of a table without trees into gj (after its common fields). */
int gen_mcast_job(struct gen_job *gj, const struct table *tb, unsigned int window, char *err,
		  size_t errlen);

/** Free what gen_mcast_job() allocated. */
void gen_mcast_fini(struct gen_job *gj);

/** The length of frame w of a unit: an output's NACK_MCAST, or the MCAST itself. */
uint32_t gen_mcast_frame_len(const struct gen_job *gj, unsigned int w);

/** Build frame w of unit c (gen_mcast_frame_len() bytes). 0 or -EINVAL. */
int gen_mcast_build(const struct gen_lcore *g, uint8_t *frame, unsigned int c, unsigned int w);

/** A unit's round starts: its outputs wait, the origin's MCAST is queued. */
void gen_mcast_start(struct gen_lcore *g, unsigned int c);

/** A unit's round is overdue: each output still waiting asks the gateway (NACK_MCAST). */
void gen_mcast_timeout(struct gen_lcore *g, unsigned int c);

/**
 * Whether send-queue entry e of a multicast job's current round is no longer needed: a
 * NACK_MCAST of an output that has had its copy since. (Entries of an ended round are
 * withdrawn for every job, gen.c.)
 */
bool gen_mcast_obsolete(const struct gen_lcore *g, uint64_t e);

/**
 * A frame from the gateway in a multicast job: a copy at an output (checked bit-exactly
 * against what the origin sent), or a NACK_MCAST at the `from` gateway (answered with the
 * repair); key: the protected link's key that opened it, -1 if it came plain, which must
 * be the link's (gen_link_ok()). 0, or -1 if it is neither (counted as unexpected by the
 * caller).
 */
int
gen_mcast_rx(struct gen_lcore *g, const uint8_t *h, const struct wire_pkt *p,
	     const struct wire_flow *fl, uint32_t len, int key, uint32_t wire_len, uint64_t now);

/** The protected link's key that frame w of unit c travels under (gj->seals), or -1: the
 * origin's MCAST from the `from` gateway's link, an output's NACK_MCAST a `to` gateway's. */
int gen_mcast_seal(const struct gen_job *gj, unsigned int c, unsigned int w);

/** The chunk index of chunk number `chunk`, or -1 if it is not driven. */
int gen_find_chunk(const struct gen_job *gj, uint32_t chunk);

/**
 * A frame the gateway sent to its parent (gen_parent.c): a partial sum, checked against the
 * exact partial sum of its subtree and answered with the RESULT, or a NACK_RESULT. 0, or -1
 * if the frame is none of these (counted as unexpected by the caller).
 */
int gen_parent_rx(struct gen_lcore *g, const uint8_t *d, const struct wire_pkt *p,
		  const struct wire_flow *fl, uint32_t len);

#endif
