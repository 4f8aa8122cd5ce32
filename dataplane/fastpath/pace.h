/* SPDX-License-Identifier: BSD-3-Clause
 *
 * Fast path: pacing each tree's traffic on each WAN link at the tree's planned rate
 * (docs/DATAPLANE.md, "Pacing"), so that concurrent trees share links as the plan
 * intends instead of filling the WAN's queues. A token bucket on the TSC per (tree,
 * link) and lcore; frames that may not leave yet wait in the pacer's queue and go in a
 * later iteration (the drain: pace.c). Worker lcores only.
 */
#ifndef GEOREDUCE_DP_PACE_H
#define GEOREDUCE_DP_PACE_H

#include <rte_branch_prediction.h>
#include <rte_cycles.h>
#include <rte_mbuf.h>

#include "dp.h"
#include "fastpath/seal.h"
#include "fastpath/tx.h"

/** No pacer: the frame leaves at once (a local worker, or pacing off). */
#define DP_PACE_NONE UINT32_MAX

/**
 * Send m on port through pacer `pacer` of job j (DP_PACE_NONE: straight to TX staging);
 * retx: m is a retransmission (counted apart); first: m repairs a loss (a retransmission,
 * an answer to one, or what a repaired chunk completed), so it waits ahead of the frames
 * queued, at the pacer's rate still: a chunk that holds its tree's window back does not
 * wait for the window's queue too. Consumes m: staged, queued, or dropped when the
 * pacer's queue is full (counted).
 */
static inline void
dp_pace_send(struct dp_lcore *lc, const struct dp_job *j, uint32_t pacer, uint16_t port,
	     struct rte_mbuf *m, bool retx, bool first)
{
	if (pacer == DP_PACE_NONE) {
		dp_tx_stage(lc, port, m);
		return;
	}
	struct dp_job_lcore *lj = &j->lj[lc->idx];
	struct dp_pacer *pc = &lj->pacers[pacer];
	uint64_t now = rte_rdtsc();
	uint32_t len = rte_pktmbuf_pkt_len(m);

	if (unlikely(pc->tail - pc->head > pc->mask)) {
		lc->ctr[DP_CTR_PACE_FULL]++;
		rte_pktmbuf_free(m);
		return;
	}
	pc->bytes += len;
	pc->frames++;
	if (retx)
		pc->retx_bytes += len;
	if (pc->head == pc->tail && pc->next <= now) {
		uint64_t floor = now - (uint64_t)(DP_PACE_BURST * pc->tsc_per_byte);

		pc->next =
			(pc->next > floor ? pc->next : floor) + (uint64_t)(len * pc->tsc_per_byte);
		dp_wire_out(lc, j, pc->seal, port, m);
		return;
	}
	if (first) /* head and tail are free-running: head - 1 wraps like tail + 1 */
		pc->q[--pc->head & pc->mask] = m;
	else
		pc->q[pc->tail++ & pc->mask] = m;
	lc->ctr[DP_CTR_PACED]++;
	if (!pc->active) {
		pc->active = true;
		uint32_t na = atomic_load_explicit(&lj->n_active, memory_order_relaxed);

		lj->active[na] = pacer;
		atomic_store_explicit(&lj->n_active, na + 1, memory_order_relaxed);
	}
}

/** Release the waiting frames whose time has come, in every job. Once per iteration. */
void dp_pace_run(struct dp_lcore *lc, const struct dp_state *st);

#endif
