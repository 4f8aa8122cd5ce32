/* SPDX-License-Identifier: BSD-3-Clause
 *
 * Fast path: aggregation of georeduce packets (docs/PROTOCOL.md, sections 7 and 10).
 * Worker lcores only: no allocation except mbufs from pools sized at start, no locks, no
 * syscalls, no logging above DEBUG.
 *
 * A CONTRIB finds its slot (per lcore, per tree: chunk & (slots - 1)); the first packet of
 * a chunk becomes the accumulator and every further one is summed into it with the SIMD
 * kernels and freed (fp16/bf16: summed into the slot's fp32 accumulator, rounded once at
 * the end; MX: each contribution decoded into that accumulator, the sum encoded once). A
 * complete slot sends its partial sum to the parent (the accumulator packet itself, headers
 * rewritten) or, at the root, becomes the RESULT. A RESULT is retained in
 * its slot and sent to every child gateway and local worker as a fresh 96-byte header
 * chained to one indirect mbuf of the payload that all the copies share: no payload is
 * copied, one mbuf is taken per copy.
 *
 * Cost (one core, net_ring, root with F local workers, fp32, bench/bench_dataplane.c;
 * BENCHMARKS.md): about 82 ns per packet in at 256 B, 94 ns at 1 KiB, 140 ns at 4 KiB,
 * each packet in also being one RESULT copy out. At 1 KiB the SIMD sum and the frame and
 * header checks are about a fifth of it each, the copy (a header mbuf, fresh headers,
 * staging) and the lookup and slot logic about a quarter each. A nonzero UDP checksum is
 * verified with the SIMD csum16 unless the NIC did: +19 ns at 1 KiB.
 *
 * This file holds the slot state machine and the summation: a CONTRIB from a contributor,
 * a RESULT from the parent. The rest of a tree's traffic is beside it, each called from
 * here in one direction: loss recovery (retx.c: timers, ACK, NACK_CONTRIB, NACK_RESULT),
 * result recovery across epochs (recover.c), and what is sent (send.c: copies, control
 * packets, a RESULT down its tree). Multicast (mcast.c) is reached from rx.c. Called by
 * rx.c only.
 */
#include <string.h>

#include <rte_branch_prediction.h>
#include <rte_cycles.h>
#include <rte_mbuf.h>

#include "dp.h"
#include "fastpath/agg.h"
#include "fastpath/agg_internal.h"
#include "fastpath/quorum.h"
#include "fastpath/recover.h"
#include "fastpath/retx.h"
#include "fastpath/send.h"
#include "fastpath/tx.h"
#include "fastpath/validate.h"

/* The contributor set of a CONTRIB or RESULT frame (j->cset_len bytes). */
static inline uint8_t *
gr_cset(struct rte_mbuf *m)
{
	return rte_pktmbuf_mtod_offset(m, uint8_t *, WIRE_FRAME_PAYLOAD_OFF);
}

static inline void *
gr_payload(const struct dp_job *j, struct rte_mbuf *m)
{
	return rte_pktmbuf_mtod_offset(m, void *, WIRE_FRAME_PAYLOAD_OFF + j->cset_len);
}

/* The OR over the words of two contributor sets of len bytes of (a & b), or with `outside`
 * of (~a & b): nonzero if b meets a, or names a worker a does not. Frames may sit at any
 * even address: 8-byte words by memcpy. */
static inline uint64_t
cset_words(const uint8_t *a, const uint8_t *b, uint32_t len, bool outside)
{
	uint64_t x = 0;

	for (uint32_t i = 0; i < len; i += sizeof(uint64_t)) {
		uint64_t u, v;

		memcpy(&u, a + i, sizeof(u));
		memcpy(&v, b + i, sizeof(v));
		x |= (outside ? ~u : u) & v;
	}
	return x;
}

/* Merge the contributor set of m into the accumulator acc's (docs/PROTOCOL.md section
 * 4); false, and nothing merged, if they intersect: summing m would count a worker twice. */
static inline bool
cset_merge(const struct dp_job *j, struct rte_mbuf *acc, struct rte_mbuf *m)
{
	uint8_t *a = gr_cset(acc);
	const uint8_t *b = gr_cset(m);

	if (cset_words(a, b, j->cset_len, false) != 0)
		return false;
	for (uint32_t i = 0; i < j->cset_len; i += sizeof(uint64_t)) {
		uint64_t u, v;

		memcpy(&u, a + i, sizeof(u));
		memcpy(&v, b + i, sizeof(v));
		u |= v;
		memcpy(a + i, &u, sizeof(u));
	}
	return true;
}

/* Whether the contributor set of m, from child gateway c of tree t, names only workers
 * below that child (docs/TABLES.md, workers_below): on the CONTRIBs of child gateways
 * only. */
static inline bool
cset_below(const struct dp_job *j, const struct dp_tree *t, unsigned int c, struct rte_mbuf *m)
{
	return cset_words(t->child_sets + (size_t)c * j->cset_len, gr_cset(m), j->cset_len, true) ==
	       0;
}

/* Release what a slot holds and make it FREE. */
static inline void
slot_clear(const struct dp_job *j, const struct dp_lcore *lc, struct dp_slot *s)
{
	if (s->state == DP_SLOT_OPEN || s->state == DP_SLOT_COMPLETE)
		busy_add(j, lc, -1);
	if (s->acc != NULL)
		rte_pktmbuf_free(s->acc);
	if (s->result != NULL)
		rte_pktmbuf_free(s->result);
	if (s->prev != NULL)
		rte_pktmbuf_free(s->prev);
	s->acc = NULL;
	s->result = NULL;
	s->prev = NULL;
	s->state = DP_SLOT_FREE;
}

/* Reopen slot s (DONE or FREE) for a later round of its chunk or for the chunk a slot pool
 * further: the RESULT it holds stays as the previous one, everything else is released. */
static void
slot_reopen(const struct dp_job *j, const struct dp_lcore *lc, struct dp_slot *s)
{
	struct rte_mbuf *keep = NULL;
	uint32_t keep_round = 0, keep_chunk = 0;

	if (s->state == DP_SLOT_DONE) {
		keep = s->result;
		keep_round = s->round;
		keep_chunk = s->chunk;
		s->result = NULL;
	}
	slot_clear(j, lc, s);
	s->prev = keep;
	s->prev_round = keep_round;
	s->prev_chunk = keep_chunk;
}

/* A RESULT copy to down[i] of tree t. */
static inline bool
send_result_copy(struct dp_lcore *lc, const struct dp_job *j, const struct dp_tree *t,
		 unsigned int i, struct rte_mbuf *r, struct rte_mbuf *seg, uint8_t flags,
		 uint32_t tsecr, uint32_t now_us)
{
	return send_copy(lc, j, &t->down[i], down_pacer(t, i), r, seg, flags, tsecr, now_us,
			 DP_CTR_RESULTS_SENT);
}

/* ACK of the CONTRIB p ("held", docs/PROTOCOL.md section 5) to its contributor d. */
static void
send_ack(struct dp_lcore *lc, const struct dp_job *j, const struct dp_dest *d,
	 const struct wire_pkt *p)
{
	struct wire_pkt a = dp_ack(j, p, p->chunk, 1, dp_now_us());

	dp_send_ctl(lc, j, d, &a, DP_CTR_ACKS_SENT);
}

/* The kernels' MX format of an MX job's dtype (the same order). */
static inline enum sum_mx
mx_of(const struct dp_job *j)
{
	return (enum sum_mx)(j->dtype - WIRE_DTYPE_MXINT8);
}

/* All contributions are in: the partial sum goes up, or at the root the RESULT down;
 * ahead of the pacer's queue if the last contribution was a retransmission (repair),
 * and then, to down[echo_to], echoing that retransmission's tsval (tsecr). */
static void
complete(struct dp_lcore *lc, const struct dp_job *j, const struct dp_tree *t, struct dp_slot *s,
	 bool repair, int echo_to, uint32_t tsecr)
{
	struct rte_mbuf *m = s->acc;
	struct wire_hdr *wh = gr_hdr(m);
	uint32_t n = rte_be_to_cpu_16(wh->count);
	uint32_t now_us = dp_now_us();

	if (j->dtype == WIRE_DTYPE_FP16)
		lc->k->narrow_f16(gr_payload(j, m), s->acc32, n);
	else if (j->dtype == WIRE_DTYPE_BF16)
		lc->k->narrow_bf16(gr_payload(j, m), s->acc32, n);
	else if (wire_dtype_is_mx(j->dtype)) /* encoded once, as it leaves */
		lc->k->mx_narrow[mx_of(j)](gr_payload(j, m), s->acc32, n / WIRE_MX_BLOCK);
	if (unlikely(wh->dtype != j->dtype)) {
		/* The frame that came first was a local worker's, in the wider LAN dtype: the
		 * sum leaves in the job's, shorter. */
		uint32_t len = WIRE_FRAME_PAYLOAD_OFF + j->cset_len +
			       (uint32_t)wire_payload_bytes(j->dtype, n);

		wh->dtype = j->dtype;
		if (rte_pktmbuf_data_len(m) > len)
			rte_pktmbuf_trim(m, (uint16_t)(rte_pktmbuf_data_len(m) - len));
	}
	s->acc = NULL;
	/* The grace window, if one was open, is over: the slot is no longer OPEN, which
	 * dp_agg_grace() sees. quorum_tsc stays until the slot opens again: a straggler's
	 * lateness is measured from it (quorum_late()). */
	lc->ctr[DP_CTR_CHUNKS_COMPLETED]++;
	wh->sender = rte_cpu_to_be_16(j->self_id);
	wh->origin = rte_cpu_to_be_16(j->self_id);
	wh->contrib = rte_cpu_to_be_16((uint16_t)s->contrib);
	wh->flags = 0;
	wh->tsval = rte_cpu_to_be_32(now_us);
	wh->tsecr = 0;
	if (!t->has_parent) {
		wh->type = WIRE_TYPE_RESULT;
		dp_result_down(lc, j, t, s, m, now_us, repair, echo_to, tsecr);
		return;
	}
	uint64_t nb;

	/* COMPLETE: the partial sum goes up and stays here, one reference, until the RESULT
	 * comes (or a timer sends it again). */
	s->state = DP_SLOT_COMPLETE;
	s->acc = m;
	s->held = false;
	s->retries = 0;
	s->sent_tsc = rte_rdtsc();
	s->sent_us = now_us;
	s->resent_clear = false;
	s->dup = false;
	s->asked = false;
	wh->type = WIRE_TYPE_CONTRIB;
	/* Until the tree's first RESULT of this round, twice the timeout: the round's first
	 * chunks also wait at the root for the contributors that started the round later
	 * (they got their last RESULT of the round before up to a round trip after this
	 * gateway's workers). */
	uint16_t ti = (uint16_t)(t - j->trees);
	const struct dp_job_lcore *lj = &j->lj[lc->idx];

	if (lj->progress[ti] == 0 || lj->progress_round[ti] != s->round)
		timer_push_at(lc, j, ti, s, s->sent_tsc + 2 * rto(lc, j, ti, 0));
	else
		timer_push(lc, j, ti, s, s->sent_tsc);
	nb = dp_dest_neigh(lc->dp, &t->parent);
	if (unlikely(!(nb & DP_NEIGH_VALID))) {
		lc->ctr[DP_CTR_NO_NEIGHBOUR]++; /* the timer retries */
		return;
	}
	dp_write_l2l4(lc->dp, j, &t->parent, nb, s->chunk, rte_pktmbuf_mtod(m, uint8_t *),
		      rte_pktmbuf_data_len(m) - WIRE_FRAME_HDR_OFF);
	lc->ctr[DP_CTR_PARTIALS_SENT]++;
	rte_mbuf_refcnt_update(m, 1);
	/* Sealed: into a frame of its own, the slot keeps the plain one. */
	to_wire(lc, j, &t->parent, t->pace_first, m, false, repair);
}

/* Add contribution m (origin at contributor index k) to slot s, which is OPEN for it;
 * false if m was dropped instead (its contributor set overlaps the slot's). */
static bool
add(struct dp_lcore *lc, const struct dp_job *j, const struct dp_tree *t, struct dp_slot *s,
    struct rte_mbuf *m, const struct wire_pkt *p, int k)
{
	unsigned int bit = t->src_bits[k];

	if (j->cset_len != 0 && s->acc != NULL && unlikely(!cset_merge(j, s->acc, m))) {
		drop(lc, m, WIRE_REASON_CSET_OVERLAP);
		return false;
	}
	s->in[bit >> 6] |= 1ull << (bit & 63);
	s->n_in++;
	s->contrib += p->contrib;
	lc->ctr[DP_CTR_CONTRIBS]++;
	switch (p->dtype) { /* the job's, or a local worker's LAN dtype (on_contrib()) */
	case WIRE_DTYPE_FP32:
		if (j->dtype != WIRE_DTYPE_FP32) {
			/* An MX job's local worker in fp32: into the fp32 accumulator. */
			if (s->acc == NULL) {
				memcpy(s->acc32, gr_payload(j, m), sizeof(float) * p->count);
				s->acc = m;
			} else {
				lc->k->sum_f32(s->acc32, gr_payload(j, m), p->count);
				rte_pktmbuf_free(m);
			}
		} else if (s->acc == NULL) {
			s->acc = m;
		} else {
			lc->k->sum_f32(gr_payload(j, s->acc), gr_payload(j, m), p->count);
			rte_pktmbuf_free(m);
		}
		break;
	case WIRE_DTYPE_FP16:
		if (s->acc == NULL) {
			lc->k->widen_f16(s->acc32, gr_payload(j, m), p->count);
			s->acc = m;
		} else {
			lc->k->widen_add_f16(s->acc32, gr_payload(j, m), p->count);
			rte_pktmbuf_free(m);
		}
		break;
	case WIRE_DTYPE_BF16:
		if (s->acc == NULL) {
			lc->k->widen_bf16(s->acc32, gr_payload(j, m), p->count);
			s->acc = m;
		} else {
			lc->k->widen_add_bf16(s->acc32, gr_payload(j, m), p->count);
			rte_pktmbuf_free(m);
		}
		break;
	default: /* MX: the job's dtype (a LAN dtype is fp32 or bf16) */
		if (s->acc == NULL) {
			lc->k->mx_widen[mx_of(j)](s->acc32, gr_payload(j, m),
						  p->count / WIRE_MX_BLOCK);
			s->acc = m;
		} else {
			lc->k->mx_widen_add[mx_of(j)](s->acc32, gr_payload(j, m),
						      p->count / WIRE_MX_BLOCK);
			rte_pktmbuf_free(m);
		}
		break;
	}
	/* Every contributor in, or (partial reduce) enough workers summed and no grace
	 * window to wait (quorum.h). */
	if (s->n_in == t->expected) {
		if (t->threshold != UINT32_MAX)
			quorum_all(lc, j, t, s);
	} else if (s->contrib < t->threshold || quorum_wait(lc, j, t, s)) {
		return true;
	}
	complete(lc, j, t, s, p->flags & WIRE_F_RETX,
		 (p->flags & WIRE_F_RETX) ? t->src_down[k] : -1, p->tsval);
	return true;
}

/* A contribution that came after its chunk completed: dropped as late, and counted for the
 * quorum of a tree with a threshold. */
static inline void
late(struct dp_lcore *lc, const struct dp_job *j, const struct dp_tree *t, struct rte_mbuf *m)
{
	drop(lc, m, WIRE_REASON_LATE);
	if (t->threshold != UINT32_MAX)
		quorum_count(lc, j, DP_QUORUM_LATE);
}

/* Open slot s (FREE or DONE) for the chunk and round of CONTRIB p, the first contribution,
 * from contributor index k. */
static void
slot_open(struct dp_lcore *lc, const struct dp_job *j, const struct dp_tree *t, struct dp_slot *s,
	  struct rte_mbuf *m, const struct wire_pkt *p, int k)
{
	slot_reopen(j, lc, s);
	s->state = DP_SLOT_OPEN;
	s->round = p->round;
	s->chunk = p->chunk;
	s->n_in = 0;
	s->contrib = 0;
	s->quorum_tsc = 0;
	memset(s->in, 0, sizeof(s->in));
	busy_add(j, lc, 1);
	add(lc, j, t, s, m, p, k); /* the first: no overlap */
	if ((p->flags & WIRE_F_RETX) && s->state != DP_SLOT_DONE)
		send_ack(lc, j, &t->down[t->src_down[k]], p);
	if (!t->src_worker[k] && s->state == DP_SLOT_OPEN)
		dp_recover_stalled(lc, j, t, s);
}

/* Whether every contributor of tree t has sent a CONTRIB of a round after `round` (this
 * epoch): a loop over the contributors, on the rare path of a slot left behind. */
static bool
all_moved_past(const struct dp_job *j, const struct dp_tree *t, uint32_t round)
{
	for (uint16_t k = 0; k < t->n_src; k++) {
		uint64_t v = atomic_load_explicit(&j->src_round[t->budget_off + t->src_down[k]],
						  memory_order_relaxed);

		if (v == 0 || !wire_round_before(round, (uint32_t)v))
			return false;
	}
	return true;
}

/* Slot s is OPEN or COMPLETE for a round before CONTRIB p's (of the slot's chunk or
 * another): if every contributor of tree t has sent a CONTRIB of a later round, none will
 * complete the slot's round any more; it is given up (rounds_given_up) and the slot opens
 * for p, which is taken. Whether it was. */
static bool
give_up(struct dp_lcore *lc, const struct dp_job *j, bool live, const struct dp_tree *t,
	struct dp_slot *s, struct rte_mbuf *m, const struct wire_pkt *p, int k)
{
	if (!live || !all_moved_past(j, t, s->round))
		return false;
	lc->ctr[DP_CTR_ROUNDS_GIVEN_UP]++;
	slot_clear(j, lc, s);
	slot_open(lc, j, t, s, m, p, k);
	return true;
}

/* A CONTRIB from contributor index k for slot s, other than the next contribution to the
 * open chunk (on_contrib()): the first of a chunk, a duplicate, a straggler, a chunk ahead
 * of the slot pool. */
static __rte_noinline void
on_contrib_other(struct dp_lcore *lc, const struct dp_job *j, bool live, const struct dp_tree *t,
		 struct dp_slot *s, struct rte_mbuf *m, const struct wire_pkt *p, int k)
{
	unsigned int bit = t->src_bits[k];
	bool have = s->state != DP_SLOT_FREE && s->chunk == p->chunk && slot_has(s, bit);
	/* A chunk the slot has moved on from: an earlier round, or an earlier chunk of the
	 * slot's round (chunk c when it holds c + slots). It never takes the slot back. */
	bool older = s->state != DP_SLOT_FREE && (wire_round_before(p->round, s->round) ||
						  (p->round == s->round && p->chunk < s->chunk));

	if (s->state == DP_SLOT_FREE ||
	    (s->state == DP_SLOT_DONE && !older &&
	     (s->chunk != p->chunk || wire_round_before(s->round, p->round)))) {
		if (!live) { /* a draining epoch finishes its slots, opens none */
			drop(lc, m, WIRE_REASON_EPOCH_STALE);
			return;
		}
		slot_open(lc, j, t, s, m, p, k);
		return;
	}
	if (s->chunk != p->chunk) {
		/* Another chunk holds the slot. If it took over from this one, whose RESULT it
		 * keeps, a contributor that lost that RESULT gets it (a child gateway may lag a
		 * slot pool behind the workers that moved the slot on). A later chunk waits
		 * for the slot (no_slot: the sender's window is ahead of the pool). An earlier
		 * round of another chunk that every contributor has left (a job restarted in
		 * the middle of a round that had gone a slot pool or more into the tensor) is
		 * given up as for the slot's own chunk below. */
		struct rte_mbuf *r = retained(s, p->chunk, p->round);
		bool past = r == NULL && !older && wire_round_before(s->round, p->round);

		if (past && give_up(lc, j, live, t, s, m, p, k))
			return;
		if (r != NULL || older)
			late(lc, j, t, m);
		else
			drop(lc, m, WIRE_REASON_NO_SLOT);
		if (r != NULL && ((p->flags & WIRE_F_RETX) || j->cset_len != 0))
			send_result_copy(lc, j, t, t->src_down[k], r, NULL,
					 WIRE_F_RETX | WIRE_F_ECHO, p->tsval, dp_now_us());
		else if (r == NULL && older)
			dp_recover_late(lc, j, t, t->src_down[k], p->chunk, p->round, p->tsval);
		else if (past)
			dp_recover_moved_on(lc, j, t, s, k);
		return;
	}
	if (s->round == p->round) {
		bool retx = p->flags & WIRE_F_RETX;
		unsigned int ti = t->src_down[k];
		const struct dp_dest *to = &t->down[ti];

		/* Not new to an open slot (on_contrib() adds those): known already
		 * (duplicate), or complete without it (a straggler: late). The RESULT, when
		 * retained, answers both; otherwise a RETX gets an ACK. */
		if (have) {
			drop(lc, m, WIRE_REASON_DUPLICATE);
		} else {
			late(lc, j, t, m);
			quorum_late(lc, j, t, s);
		}
		if (s->state == DP_SLOT_DONE && (retx || !have))
			send_result_copy(lc, j, t, ti, s->result, NULL, WIRE_F_RETX | WIRE_F_ECHO,
					 p->tsval, dp_now_us());
		else if (retx && have)
			send_ack(lc, j, to, p);
		return;
	}
	if (wire_round_before(p->round, s->round)) {
		/* A worker one round behind: the previous RESULT, if kept, answers it. In a
		 * partial reduce (a job with contributor sets) a straggler may be further
		 * behind: the latest RESULT of the chunk tells it where its group is
		 * (docs/PROTOCOL.md section 7.3), at every gateway on its way. */
		struct rte_mbuf *r = retained(s, p->chunk, p->round);
		bool partial = j->cset_len != 0;

		if (r == NULL && partial && s->state == DP_SLOT_DONE)
			r = s->result;
		late(lc, j, t, m);
		if (r != NULL && ((p->flags & WIRE_F_RETX) || partial))
			send_result_copy(lc, j, t, t->src_down[k], r, NULL,
					 WIRE_F_RETX | WIRE_F_ECHO, p->tsval, dp_now_us());
		else if (r == NULL)
			dp_recover_late(lc, j, t, t->src_down[k], p->chunk, p->round, p->tsval);
		return;
	}
	/* Open or complete with an earlier round, which this contributor has left behind:
	 * with that round's RESULT (a re-plan came between), or without it (its training job
	 * restarted and gave the round up, docs/CLIENT.md). Once every contributor has sent a
	 * later round, none will complete this one: the slot gives it up and opens for the
	 * later round (rounds_given_up). Until then, the round's RESULT is looked for. */
	if (give_up(lc, j, live, t, s, m, p, k))
		return;
	drop(lc, m, WIRE_REASON_NO_SLOT);
	dp_recover_moved_on(lc, j, t, s, k);
}

/* A contributor whose MAC is not known yet sends (its kernel knew the gateway's already,
 * so it did not ARP): if the frame came straight from it, on the port that reaches it,
 * the frame says where it is, before its RESULT has to go there. */
static __rte_noinline void
learn_contributor(struct dp_lcore *lc, const struct dp_dest *d, const struct rte_mbuf *m,
		  uint16_t port)
{
	struct dp_neigh *nb = &lc->dp->neigh[d->nh];
	const struct rte_ether_hdr *eth = rte_pktmbuf_mtod(m, const struct rte_ether_hdr *);
	const struct rte_ipv4_hdr *ip = (const struct rte_ipv4_hdr *)(eth + 1);

	if (nb->is_static || port != d->port || rte_be_to_cpu_32(ip->src_addr) != nb->ipv4)
		return;
	atomic_store_explicit(&nb->mac, dp_neigh_word(eth->src_addr.addr_bytes),
			      memory_order_relaxed);
}

static void
on_contrib(struct dp_lcore *lc, const struct dp_job *j, bool live, const struct dp_tree *t,
	   struct rte_mbuf *m, const struct wire_pkt *p, uint16_t port)
{
	int k = find_src(t, p->origin);

	/* From the table's address and port of the contributor (validate.h). A worker sums itself alone, in its set. A child gateway sums only workers below it:
	 * with sets, those its set names (and contrib is the set's population:
	 * wire_hdr_decode()); without, every one of them, so its contrib is their number
	 * (one compare, on the CONTRIBs of child gateways only). */
	if (unlikely(
		    k < 0 || p->sender != p->origin || !dp_src_ok(m, &t->down[t->src_down[k]]) ||
		    (t->src_worker[k] &&
		     (p->contrib != 1 || (j->cset_len != 0 &&
					  !(gr_cset(m)[p->origin >> 3] >> (p->origin & 7) & 1)))) ||
		    (!t->src_worker[k] && (j->cset_len != 0 ? !cset_below(j, t, t->src_down[k], m) :
							      p->contrib != t->src_contrib[k])))) {
		drop(lc, m, WIRE_REASON_BAD_SENDER);
		return;
	}
	/* A local worker sends in the LAN dtype, a child gateway in the job's. */
	if (unlikely(p->dtype != (t->src_worker[k] ? j->lan_dtype : j->dtype))) {
		drop(lc, m, WIRE_REASON_JOB_MISMATCH);
		return;
	}
	const struct dp_dest *from = &t->down[t->src_down[k]];

	if (unlikely(!(dp_dest_neigh(lc->dp, from) & DP_NEIGH_VALID)))
		learn_contributor(lc, from, m, port);
	struct dp_slot *s = slot_of(j, lc, t, p->chunk);
	uint32_t bit = t->src_bits[k];

	/* What it sent is what a NACK_RESULT of it may have answered (section 7.6). */
	dp_budget_earn(&j->lj[lc->idx].budget[t->budget_off + t->src_down[k]], j->budget_cap,
		       rte_pktmbuf_data_len(m));
	src_round_note(j, t, k, p->round);

	/* Most packets: the next contribution to the chunk the slot has open. Held: an ACK
	 * stops the payload resends, unless the RESULT answered. */
	if (likely(s->state == DP_SLOT_OPEN && s->chunk == p->chunk && s->round == p->round &&
		   !slot_has(s, bit))) {
		if (add(lc, j, t, s, m, p, k) && (p->flags & WIRE_F_RETX) &&
		    s->state != DP_SLOT_DONE)
			send_ack(lc, j, &t->down[t->src_down[k]], p);
		return;
	}
	on_contrib_other(lc, j, live, t, s, m, p, k);
}

/* A RESULT from a child gateway or a local worker: only in answer to a recovery request
 * (RETX), from the contributor's table address. */
static __rte_noinline void
on_result_from_child(struct dp_lcore *lc, const struct dp_job *j, const struct dp_tree *t,
		     struct rte_mbuf *m, const struct wire_pkt *p)
{
	int k = find_src(t, p->sender);

	if (k < 0 || !(p->flags & WIRE_F_RETX) || !dp_src_ok(m, &t->down[t->src_down[k]])) {
		drop(lc, m, WIRE_REASON_BAD_SENDER);
		return;
	}
	dp_recover_answer(lc, j, t, m, p, t->src_down[k]);
}

static void
on_result(struct dp_lcore *lc, const struct dp_job *j, const struct dp_tree *t, struct rte_mbuf *m,
	  const struct wire_pkt *p)
{
	if (unlikely(!t->has_parent || p->sender != t->parent.id)) {
		on_result_from_child(lc, j, t, m, p);
		return;
	}
	if (unlikely(!dp_src_ok(m, &t->parent))) {
		drop(lc, m, WIRE_REASON_BAD_SENDER);
		return;
	}
	struct dp_slot *s = slot_of(j, lc, t, p->chunk);

	if (s->chunk == p->chunk && s->round == p->round) {
		if (s->state == DP_SLOT_COMPLETE) {
			dp_result_down(lc, j, t, s, m, dp_now_us(),
				       s->retries != 0 || (p->flags & WIRE_F_RETX), -1, 0);
			return;
		}
		if (s->state == DP_SLOT_OPEN && (p->flags & WIRE_F_RETX)) {
			dp_recover_answer(lc, j, t, m, p, DP_RECOVER_PARENT);
			return;
		}
		drop(lc, m, WIRE_REASON_DUPLICATE);
		return;
	}
	if (p->flags & WIRE_F_RETX) { /* perhaps what this gateway asked for */
		dp_recover_answer(lc, j, t, m, p, DP_RECOVER_PARENT);
		return;
	}
	drop(lc, m,
	     s->state == DP_SLOT_FREE || wire_round_before(p->round, s->round) ||
			     s->chunk != p->chunk ?
		     WIRE_REASON_LATE :
		     WIRE_REASON_NO_SLOT);
}

void
dp_agg_rx(struct dp_lcore *lc, const struct dp_state *st, struct rte_mbuf *m,
	  const struct wire_pkt *p, uint16_t port)
{
	bool live = false;
	const struct dp_job *j = rx_job(lc, st, m, p, &live);

	if (unlikely(j == NULL))
		return;
	if (unlikely(p->tree >= j->tree_map_n || j->tree_map[p->tree] == 0 ||
		     j->tree_map[p->tree] == DP_TREE_SHARD)) {
		/* A tree the table gives another gateway of this site: a sender that takes
		 * this gateway for that shard's. */
		drop(lc, m,
		     p->tree < j->tree_map_n && j->tree_map[p->tree] == DP_TREE_SHARD ?
			     WIRE_REASON_WRONG_SHARD :
			     WIRE_REASON_UNKNOWN_TREE);
		return;
	}
	const struct dp_tree *t = &j->trees[j->tree_map[p->tree] - 1];

	/* The chunk, and for ACK and NACKs every chunk of the range (count chunks). */
	if (unlikely(p->chunk - t->chunk_first >= t->chunk_count ||
		     (p->type != WIRE_TYPE_CONTRIB && p->type != WIRE_TYPE_RESULT &&
		      p->count > t->chunk_count - (p->chunk - t->chunk_first)))) {
		drop(lc, m, WIRE_REASON_BAD_CHUNK);
		return;
	}
	switch (p->type) {
	case WIRE_TYPE_CONTRIB:
	case WIRE_TYPE_RESULT:
		/* A CONTRIB may come in the LAN dtype: only from a local worker (on_contrib()). */
		if (unlikely((p->dtype != j->dtype &&
			      (p->type != WIRE_TYPE_CONTRIB || p->dtype != j->lan_dtype)) ||
			     p->cset_blocks != j->cset_blocks ||
			     p->count != chunk_len(j, p->chunk))) {
			drop(lc, m, WIRE_REASON_JOB_MISMATCH);
			return;
		}
		if (p->type == WIRE_TYPE_CONTRIB)
			on_contrib(lc, j, live, t, m, p, port);
		else
			on_result(lc, j, t, m, p);
		return;
	case WIRE_TYPE_NACK_RESULT:
		dp_retx_nack_result(lc, j, t, m, p);
		return;
	default: /* ACK, NACK_CONTRIB: from the parent, about partial sums sent up */
		dp_retx_from_parent(lc, j, t, m, p);
		return;
	}
}

void
dp_agg_grace(struct dp_lcore *lc, const struct dp_state *st)
{
	uint64_t now = 0;

	for (int e = 0; st != NULL && e < st->n_jobs; e++)
		for (int k = 0; k < st->jobs[e].n_epochs; k++) {
			const struct dp_job *j = st->jobs[e].epochs[k];
			struct dp_job_lcore *lj = &j->lj[lc->idx];

			while (lj->ghead != lj->gtail) {
				struct dp_grace g = lj->gq[lj->ghead & lj->gmask];
				struct dp_slot *s = g.s;

				if (s->state != DP_SLOT_OPEN || s->quorum_tsc == 0) {
					lj->ghead++; /* complete meanwhile */
					s->grace_q = false;
					continue;
				}
				/* Due at its own end, or at the end of the slot's window if
				 * that is earlier: an entry of an earlier window of the slot
				 * (one that closed, or whose round was given up) may be due
				 * later than this window, which the adaptive window shortened. */
				now = now != 0 ? now : rte_rdtsc();
				if (g.due > now && s->grace_due > now)
					break;
				lj->ghead++;
				if (s->grace_due > now) {
					/* The entry of an earlier window of the slot: wait for
					 * this one's end. */
					grace_push(lc, j, g.tree, s, s->grace_due);
					continue;
				}
				s->grace_q = false;
				const struct dp_tree *t = &j->trees[g.tree];

				quorum_count(lc, j, DP_QUORUM_EXPIRED);
				if (t->grace_adaptive && s->n_in == s->quorum_n)
					grace_sample(lc, j, 0);
				complete(lc, j, t, s, false, -1, 0);
			}
		}
}
