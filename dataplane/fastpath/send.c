/* SPDX-License-Identifier: BSD-3-Clause
 *
 * Fast path: sending what aggregation, recovery and multicast decided to send. A copy of
 * a retained packet (dp_send_copy_as()) is a header mbuf with fresh Ethernet/IPv4/UDP/
 * georeduce headers chained to an indirect mbuf of the payload, which every copy of a
 * fan-out shares (send.h); a control packet (dp_send_ctl()) is a header alone. Both go
 * through the pacer of their link, or straight to TX staging, sealed first on a protected
 * link. dp_result_down() is the one step of the slot state machine here: a slot that has
 * its RESULT (its own sum, the parent's, or one recovered) retains it and sends it down
 * the tree, and the partial sum it kept is answered (round-trip sample, retx.h).
 *
 * Called by agg.c, retx.c, recover.c and mcast.c; calls only down the packet path: the
 * pacers (pace.h), sealing (seal.h) and TX staging (tx.h).
 *
 * Worker lcores only: no allocation except mbufs from pools sized at start, no locks, no
 * syscalls, no logging.
 */
#include <string.h>

#include <rte_branch_prediction.h>
#include <rte_cycles.h>
#include <rte_mbuf.h>

#include "dp.h"
#include "fastpath/agg_internal.h"
#include "fastpath/mstash.h"
#include "fastpath/retx.h"
#include "fastpath/send.h"
#include "fastpath/tx.h"

bool
dp_send_copy_as(struct dp_lcore *lc, const struct dp_job *j, const struct dp_dest *d,
		uint32_t pacer, struct rte_mbuf *r, struct rte_mbuf *seg, uint8_t flags,
		uint32_t tsecr, uint32_t now_us, enum dp_ctr ctr, int tree, bool repair)
{
	uint64_t nb;
	struct rte_mbuf *h;
	uint32_t plen = rte_pktmbuf_data_len(r) - WIRE_FRAME_PAYLOAD_OFF;
	const struct wire_hdr *rh = gr_hdr(r);
	struct wire_hdr *wh;

	nb = dp_dest_neigh(lc->dp, d);
	if (unlikely(!(nb & DP_NEIGH_VALID))) {
		lc->ctr[DP_CTR_NO_NEIGHBOUR]++;
		return false;
	}
	h = dp_mstash_alloc(&lc->hdr_stash);
	if (unlikely(h == NULL)) {
		lc->ctr[DP_CTR_NO_MBUF]++;
		return false;
	}
	if (seg == NULL) {
		seg = payload_seg(lc, r);
		if (unlikely(seg == NULL)) {
			rte_pktmbuf_free(h);
			lc->ctr[DP_CTR_NO_MBUF]++;
			return false;
		}
	}
	uint8_t *frame = (uint8_t *)rte_pktmbuf_append(h, WIRE_FRAME_PAYLOAD_OFF);

	dp_write_l2l4(lc->dp, j, d, nb, rte_be_to_cpu_32(rh->chunk), frame, WIRE_HDR_LEN + plen);
	wh = (struct wire_hdr *)(frame + WIRE_FRAME_HDR_OFF);
	memcpy(wh, rh, WIRE_HDR_LEN);
	if (tree >= 0) {
		wh->epoch = rte_cpu_to_be_32(j->epoch);
		wh->tree = rte_cpu_to_be_16((uint16_t)tree);
	}
	wh->flags = flags;
	wh->sender = rte_cpu_to_be_16(j->self_id);
	wh->tsval = rte_cpu_to_be_32(now_us);
	wh->tsecr = rte_cpu_to_be_32(tsecr);
	/* Chained by hand: rte_pktmbuf_chain() would write into a shared seg. */
	h->next = seg;
	h->nb_segs = 2;
	h->pkt_len += plen;
	lc->ctr[ctr]++;
	/* Sealed or not, h's reference to seg is gone: the copy counts as sent. */
	to_wire(lc, j, d, pacer, h, flags & WIRE_F_RETX, repair || (flags & WIRE_F_RETX));
	return true;
}

void
dp_send_ctl(struct dp_lcore *lc, const struct dp_job *j, const struct dp_dest *d,
	    const struct wire_pkt *a, enum dp_ctr ctr)
{
	uint64_t nb;
	struct rte_mbuf *h;
	uint8_t *frame;

	nb = dp_dest_neigh(lc->dp, d);
	if (unlikely(!(nb & DP_NEIGH_VALID))) {
		lc->ctr[DP_CTR_NO_NEIGHBOUR]++;
		return;
	}
	h = dp_mstash_alloc(&lc->hdr_stash);
	if (unlikely(h == NULL)) {
		lc->ctr[DP_CTR_NO_MBUF]++;
		return;
	}
	frame = (uint8_t *)rte_pktmbuf_append(h, WIRE_FRAME_HDR_OFF + WIRE_HDR_LEN);
	if (unlikely(frame == NULL ||
		     wire_hdr_encode(frame + WIRE_FRAME_HDR_OFF, WIRE_HDR_LEN, a, NULL) != 0)) {
		rte_pktmbuf_free(h);
		return;
	}
	dp_write_l2l4(lc->dp, j, d, nb, a->chunk, frame, WIRE_HDR_LEN);
	lc->ctr[ctr]++;
	to_wire(lc, j, d, DP_PACE_NONE, h, false, false);
}

void
dp_result_down(struct dp_lcore *lc, const struct dp_job *j, const struct dp_tree *t,
	       struct dp_slot *s, struct rte_mbuf *r, uint32_t now_us, bool repair, int echo_to,
	       uint32_t tsecr)
{
	if (s->state == DP_SLOT_OPEN || s->state == DP_SLOT_COMPLETE) {
		uint64_t d = atomic_load_explicit(&j->done[lc->idx], memory_order_relaxed);

		busy_add(j, lc, -1);
		atomic_store_explicit(&j->done[lc->idx], d + 1, memory_order_relaxed);
	}
	if (s->state == DP_SLOT_COMPLETE) { /* the partial sum kept for retransmission */
		uint16_t ti = (uint16_t)(t - j->trees);
		uint64_t now = rte_rdtsc();

		const struct wire_hdr *rh = gr_hdr(r);
		/* The partial sum as last sent is what this RESULT answers: sent once, or
		 * resent when nothing waited in the pacer before it (so it left in the
		 * order of sending) and echoed. A resend that jumped a queue is no measure
		 * of the partial sums behind it in the queue. */
		bool answers = s->retries == 0 || (s->resent_clear && (rh->flags & WIRE_F_ECHO) &&
						   rte_be_to_cpu_32(rh->tsecr) == s->sent_us);

		if (s->retries == 0)
			rtt_sample(lc, j, ti, now - s->sent_tsc);
		j->lj[lc->idx].progress[ti] = now;
		j->lj[lc->idx].progress_round[ti] = s->round;
		if (answers && s->sent_tsc > j->lj[lc->idx].progress_sent[ti]) {
			j->lj[lc->idx].progress_sent[ti] = s->sent_tsc;
			j->lj[lc->idx].progress_rtt[ti] = now - s->sent_tsc;
		}
		rte_pktmbuf_free(s->acc);
		s->acc = NULL;
	}
	s->state = DP_SLOT_DONE;
	s->result = r;
	struct rte_mbuf *seg = fanout_begin(lc, r, t->n_down);
	uint16_t sent = 0;

	for (uint16_t i = 0; i < t->n_down; i++)
		sent += dp_send_copy_as(lc, j, &t->down[i], down_pacer(t, i), r, seg,
					i == echo_to ? WIRE_F_ECHO : 0, i == echo_to ? tsecr : 0,
					now_us, DP_CTR_RESULTS_SENT, -1, repair);
	fanout_end(seg, t->n_down, sent);
}
