/* SPDX-License-Identifier: BSD-3-Clause
 *
 * Fast path: loss recovery (docs/PROTOCOL.md section 10; fastpath/retx.c). The
 * retransmission timeout, the timer queue and the round-trip samples are static inline
 * here: aggregation arms a timer for every partial sum it sends up, and every RESULT
 * that answers one is a sample. Worker lcores only.
 */
#ifndef GEOREDUCE_DP_RETX_H
#define GEOREDUCE_DP_RETX_H

#include <stdint.h>

#include <rte_branch_prediction.h>
#include <rte_mbuf.h>

#include "dp.h"
#include "wire.h"

/* The retransmission timeout of tree index ti after `retries` tries (RFC 6298 style). */
static inline uint64_t
rto(const struct dp_lcore *lc, const struct dp_job *j, uint16_t ti, unsigned int retries)
{
	const struct dp_params *prm = &lc->dp->prm;
	const struct dp_job_lcore *lj = &j->lj[lc->idx];
	uint64_t r = lj->srtt[ti] == 0 ? prm->rto_init_tsc : lj->srtt[ti] + 4 * lj->rttvar[ti];

	r = r < prm->rto_min_tsc ? prm->rto_min_tsc : r;
	r <<= retries < 16 ? retries : 16;
	return r > prm->rto_max_tsc ? prm->rto_max_tsc : r;
}

static inline void
timer_push_at(struct dp_lcore *lc, const struct dp_job *j, uint16_t ti, struct dp_slot *s,
	      uint64_t due)
{
	struct dp_job_lcore *lj = &j->lj[lc->idx];

	if (unlikely(lj->tail - lj->head > lj->mask))
		return; /* cannot happen: two entries per slot at most */
	lj->q[lj->tail & lj->mask] = (struct dp_timer){
		.due = due,
		.s = s,
		.chunk = s->chunk,
		.round = s->round,
		.tree = ti,
	};
	lj->tail++;
}

static inline void
timer_push(struct dp_lcore *lc, const struct dp_job *j, uint16_t ti, struct dp_slot *s,
	   uint64_t now)
{
	timer_push_at(lc, j, ti, s, now + rto(lc, j, ti, s->retries));
}

/* A RESULT came for a partial sum sent once: a round-trip sample (Karn: not after a
 * retransmission). */
static inline void
rtt_sample(struct dp_lcore *lc, const struct dp_job *j, uint16_t ti, uint64_t sample)
{
	struct dp_job_lcore *lj = &j->lj[lc->idx];

	if (lj->srtt[ti] == 0) {
		lj->srtt[ti] = sample;
		lj->rttvar[ti] = sample / 2;
		return;
	}
	uint64_t d = sample > lj->srtt[ti] ? sample - lj->srtt[ti] : lj->srtt[ti] - sample;

	lj->rttvar[ti] = (3 * lj->rttvar[ti] + d) / 4;
	lj->srtt[ti] = (7 * lj->srtt[ti] + sample) / 8;
}

/**
 * Loss recovery towards the parents: send again the partial sums whose RESULT is
 * overdue (or a NACK_RESULT once the parent has acknowledged them). Once per iteration.
 */
void dp_retx_timers(struct dp_lcore *lc, const struct dp_state *st);

/**
 * NACK_RESULT: answer every chunk of the range (dp_agg_rx() checked that it lies in the
 * tree, wire_hdr_decode() that it is at most WIRE_NACK_RANGE_MAX long) whose RESULT this
 * node retains, in this epoch or an older one, to the table's address of the requester,
 * while its budget lasts. The requester is a contributor, or a neighbour gateway asking
 * for a RESULT it lacks (result recovery, section 10.1; the parent too). A chunk whose
 * RESULT is held nowhere here, and which this gateway is not working on for that round,
 * is asked for from the other neighbours.
 */
void dp_retx_nack_result(struct dp_lcore *lc, const struct dp_job *j, const struct dp_tree *t,
			 struct rte_mbuf *m, const struct wire_pkt *p);

/** ACK: the parent holds these partial sums (stop resending them, ask for the RESULT when
 * it is overdue). NACK_CONTRIB: send them again now. */
void dp_retx_from_parent(struct dp_lcore *lc, const struct dp_job *j, const struct dp_tree *t,
			 struct rte_mbuf *m, const struct wire_pkt *p);

#endif
