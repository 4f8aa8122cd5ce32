/* SPDX-License-Identifier: BSD-3-Clause
 *
 * Fast path: result recovery across epochs (docs/PROTOCOL.md section 10.1;
 * fastpath/recover.c). Worker lcores only.
 */
#ifndef GEOREDUCE_DP_RECOVER_H
#define GEOREDUCE_DP_RECOVER_H

#include <stdint.h>

#include <rte_branch_prediction.h>
#include <rte_mbuf.h>

#include "dp.h"
#include "wire.h"

/* The latest round contributor k of tree t (a local worker or a child gateway) sent a
 * CONTRIB of (this epoch). */
static inline void
src_round_note(const struct dp_job *j, const struct dp_tree *t, int k, uint32_t round)
{
	_Atomic uint64_t *w = &j->src_round[t->budget_off + t->src_down[k]];
	uint64_t v = atomic_load_explicit(w, memory_order_relaxed);

	if (unlikely(v == 0 || wire_round_before((uint32_t)v, round)))
		atomic_store_explicit(w, 1ull << 32 | round, memory_order_relaxed);
}

/** The RESULT of (chunk, round) that another installed epoch of j's job retains on this
 * lcore, or NULL. Only epochs whose packets are j's shape (dtype, chunking, contributor
 * sets) and whose membership is j's (or either unnamed) qualify; one of another
 * membership counts in recover_other_members. A walk over the job's epochs and their
 * trees: rare path. */
struct rte_mbuf *
dp_retained_elsewhere(struct dp_lcore *lc, const struct dp_job *j, uint32_t chunk, uint32_t round);

/** Record `to`'s wait for the RESULT of (chunk, round) and ask for it if nobody did yet
 * (recover_ask(): the neighbours and a worker that moved on, but not `except`; or only
 * down[only]). */
void dp_recover_request(struct dp_lcore *lc, const struct dp_job *j, const struct dp_tree *t,
			uint32_t chunk, uint32_t round, uint16_t to, int only, int except);

/** Contributor down[di] asks, late, for the RESULT of (chunk, round), which this epoch
 * does not retain (its slot is elsewhere): answer from an older epoch, or ask the
 * neighbours. tsval: the request's, echoed. */
void dp_recover_late(struct dp_lcore *lc, const struct dp_job *j, const struct dp_tree *t,
		     uint16_t di, uint32_t chunk, uint32_t round, uint32_t tsval);

/** Contributor k sends chunk c of a round after the one slot s is open (or complete) for:
 * it has moved on, so it has that round's RESULT, as may have this gateway in an older
 * epoch if the contributor is a local worker. Complete the slot with that, or ask the
 * contributor for it: a child gateway, or a local worker that got it from the gateway
 * the chunk was at before a re-plan (it answers from the results it keeps). */
void dp_recover_moved_on(struct dp_lcore *lc, const struct dp_job *j, const struct dp_tree *t,
			 struct dp_slot *s, int k);

/** Slot s is open, for a child gateway's CONTRIB or a NACK_RESULT: a local worker that it
 * waits for may have moved past its round (a re-plan moved the chunk here after the gateway
 * before gave that worker the RESULT). Ask that worker for it: it completes the slot. */
void dp_recover_stalled(struct dp_lcore *lc, const struct dp_job *j, const struct dp_tree *t,
			struct dp_slot *s);

/** A RESULT (j's epoch, tree t) in answer to what this gateway asked, from a neighbour
 * gateway or a local worker (`from`: a down[] index, or DP_RECOVER_PARENT). It completes
 * the slot if that is still open for its round, and goes on to every other asker.
 * Consumes m. */
void dp_recover_answer(struct dp_lcore *lc, const struct dp_job *j, const struct dp_tree *t,
		       struct rte_mbuf *m, const struct wire_pkt *p, uint16_t from);

#endif
