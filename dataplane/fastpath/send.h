/* SPDX-License-Identifier: BSD-3-Clause
 *
 * Fast path: what aggregation, loss recovery, result recovery and multicast send
 * (fastpath/send.c): copies of a retained packet, each a fresh header chained to its
 * payload (the fan-out of a RESULT or an MCAST, a partial sum again, answers),
 * header-only control packets, and the RESULT a slot takes down its tree. The helpers
 * of a fan-out are static inline here: they run per packet. Worker lcores only.
 */
#ifndef GEOREDUCE_DP_SEND_H
#define GEOREDUCE_DP_SEND_H

#include <stdbool.h>
#include <stdint.h>

#include <rte_branch_prediction.h>
#include <rte_mbuf.h>

#include "dp.h"
#include "fastpath/mstash.h"
#include "fastpath/pace.h"
#include "fastpath/seal.h"
#include "wire.h"

/* Send the frame m to d through pacer `pacer` (DP_PACE_NONE: none); a frame that
 * repairs a loss goes ahead of the pacer's queue (dp_pace_send(), first). On a protected
 * link it is sealed as it leaves: at once, or when its pacer releases it. Consumes m. */
static inline void
to_wire(struct dp_lcore *lc, const struct dp_job *j, const struct dp_dest *d, uint32_t pacer,
	struct rte_mbuf *m, bool retx, bool first)
{
	if (pacer == DP_PACE_NONE)
		dp_wire_out(lc, j, d->seal, d->port, m);
	else
		dp_pace_send(lc, j, pacer, d->port, m, retx, first);
}

/* An indirect mbuf of r's payload: the second segment of a copy (rte_pktmbuf_clone() of a
 * single-segment r, inline: no call into librte_mbuf), or NULL when the pool is empty. */
static inline struct rte_mbuf *
payload_seg(struct dp_lcore *lc, struct rte_mbuf *r)
{
	struct rte_mbuf *c = dp_mstash_alloc(&lc->clone_stash);

	if (unlikely(c == NULL))
		return NULL;
	rte_pktmbuf_attach(c, r);
	rte_pktmbuf_adj(c, WIRE_FRAME_PAYLOAD_OFF);
	return c;
}

/**
 * Send a copy of the packet r (a whole frame, retained by the caller: a RESULT, or a
 * partial sum sent again) to d: a header mbuf with fresh Ethernet/IP/UDP/georeduce headers
 * chained to an indirect mbuf of r's payload. seg: that indirect mbuf, shared by every
 * copy of a fan-out (fanout_begin(); this copy takes a reference), or NULL for one of its
 * own. now_us is the tsval (dp_now_us(), read once per fan-out: rdtsc costs ~40 cycles on
 * AMD). Counted in ctr; false if not sent (no neighbour, no mbuf). tree >= 0 relabels the
 * copy as j's epoch and that tree id: a RESULT an older epoch retained, sent in answer
 * under j (result recovery, docs/PROTOCOL.md section 10.1); -1 keeps r's header. A copy
 * with RETX, or one with `repair` set (a RESULT that a retransmission completed), goes
 * ahead of its pacer's queue.
 */
bool dp_send_copy_as(struct dp_lcore *lc, const struct dp_job *j, const struct dp_dest *d,
		     uint32_t pacer, struct rte_mbuf *r, struct rte_mbuf *seg, uint8_t flags,
		     uint32_t tsecr, uint32_t now_us, enum dp_ctr ctr, int tree, bool repair);

/* A copy of r with r's own header fields (dp_send_copy_as(), tree -1). */
static inline bool
send_copy(struct dp_lcore *lc, const struct dp_job *j, const struct dp_dest *d, uint32_t pacer,
	  struct rte_mbuf *r, struct rte_mbuf *seg, uint8_t flags, uint32_t tsecr, uint32_t now_us,
	  enum dp_ctr ctr)
{
	return dp_send_copy_as(lc, j, d, pacer, r, seg, flags, tsecr, now_us, ctr, -1, false);
}

/*
 * A fan-out of up to n copies of r: one payload segment for all of them. Its reference
 * count is set once, to n plus the caller's own, while nothing else can see it (updates
 * are atomic once a copy is staged: a TX on another core may free one meanwhile);
 * fanout_end() drops what was not used. NULL when the pool is empty: the copies then
 * take one segment each (send_copy()), which fails the same way.
 */
static inline struct rte_mbuf *
fanout_begin(struct dp_lcore *lc, struct rte_mbuf *r, uint16_t n)
{
	struct rte_mbuf *seg = payload_seg(lc, r);

	if (likely(seg != NULL))
		rte_mbuf_refcnt_set(seg, (uint16_t)(n + 1));
	return seg;
}

/* The end of a fan-out of n copies of which `sent` went out. */
static inline void
fanout_end(struct rte_mbuf *seg, uint16_t n, uint16_t sent)
{
	if (unlikely(seg == NULL))
		return;
	if (unlikely(sent < n))
		rte_mbuf_refcnt_update(seg, (int16_t)(sent - n));
	rte_pktmbuf_free(seg); /* the caller's reference; the last one detaches from r */
}

/* The pacer of down[i] of tree t: child gateways are paced, local workers are not. */
static inline uint32_t
down_pacer(const struct dp_tree *t, unsigned int i)
{
	return i < t->n_children ? t->pace_first + 1 + i : DP_PACE_NONE;
}

/* A NACK_RESULT for (chunk, round) of tree t from this gateway: asking a neighbour for
 * a RESULT (a parent for loss recovery, anyone for recovery across epochs). */
static inline struct wire_pkt
dp_nack_result(const struct dp_job *j, const struct dp_tree *t, uint32_t chunk, uint32_t round,
	       uint32_t tsval)
{
	return (struct wire_pkt){
		.type = WIRE_TYPE_NACK_RESULT,
		.dtype = WIRE_DTYPE_NONE,
		.job = j->job,
		.epoch = j->epoch,
		.tree = t->id,
		.sender = j->self_id,
		.origin = j->self_id,
		.round = round,
		.chunk = chunk,
		.count = 1,
		.tsval = tsval,
	};
}

/* An ACK ("I hold your contribution", docs/PROTOCOL.md section 5) of chunks
 * [chunk, chunk + count) of the request or CONTRIB p, from this gateway to p's origin,
 * echoing p's tsval. */
static inline struct wire_pkt
dp_ack(const struct dp_job *j, const struct wire_pkt *p, uint32_t chunk, uint16_t count,
       uint32_t tsval)
{
	return (struct wire_pkt){
		.type = WIRE_TYPE_ACK,
		.flags = WIRE_F_ECHO,
		.dtype = WIRE_DTYPE_NONE,
		.job = p->job,
		.epoch = p->epoch,
		.tree = p->tree,
		.sender = j->self_id,
		.origin = p->origin,
		.round = p->round,
		.chunk = chunk,
		.count = count,
		.tsval = tsval,
		.tsecr = p->tsval,
	};
}

/**
 * A header-only control packet (ACK, NACK_RESULT) to d: fresh, from the header pool.
 * Sent only in answer to retransmissions or on timeouts, so not per packet.
 */
void dp_send_ctl(struct dp_lcore *lc, const struct dp_job *j, const struct dp_dest *d,
		 const struct wire_pkt *a, enum dp_ctr ctr);

/** The slot has its RESULT r: retain it and send it down the tree; a RESULT that repairs
 * a loss (a retransmission completed it, or it answers one) goes ahead of the pacers'
 * queues. At the root, the copy to down[echo_to] (-1: none), whose retransmission
 * completed the slot, echoes it (tsecr): the RESULT answers that transmission, and the
 * child knows it (section 10, fast retransmit). */
void dp_result_down(struct dp_lcore *lc, const struct dp_job *j, const struct dp_tree *t,
		    struct dp_slot *s, struct rte_mbuf *r, uint32_t now_us, bool repair,
		    int echo_to, uint32_t tsecr);

#endif
