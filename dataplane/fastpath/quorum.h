/* SPDX-License-Identifier: BSD-3-Clause
 *
 * Fast path: the quorum of a partial reduce (docs/DATAPLANE.md, "Quorum"). A tree with a
 * threshold completes a chunk once that many worker contributions are summed; with a grace
 * window it then waits up to the window for the other contributors (all in: complete at
 * once), and the window's end completes it with what is in (agg.c, dp_agg_grace()). The
 * window is fixed, or adaptive: twice the 90th percentile of the latest arrivals after a
 * threshold, at least DP_GRACE_FLOOR_US, at most the table's grace_ms. How each chunk
 * completed is counted per job (enum dp_quorum). Static inline: agg.c calls them per
 * contribution. Worker lcores only: no allocation, locks or system calls.
 */
#ifndef GEOREDUCE_DP_QUORUM_H
#define GEOREDUCE_DP_QUORUM_H

#include <stdatomic.h>
#include <stdint.h>

#include <rte_cycles.h>

#include "dp.h"

/* Count one event k of job j on this lcore (the lcore's own counter: load and store). */
static inline void
quorum_count(const struct dp_lcore *lc, const struct dp_job *j, enum dp_quorum k)
{
	_Atomic uint64_t *c = &j->lj[lc->idx].quorum[k];

	atomic_store_explicit(c, atomic_load_explicit(c, memory_order_relaxed) + 1,
			      memory_order_relaxed);
}

/* The grace window of tree t on this lcore, TSC: the table's, or the adaptive estimate
 * within it. */
static inline uint64_t
grace_window(const struct dp_lcore *lc, const struct dp_job *j, const struct dp_tree *t)
{
	uint64_t w;

	if (!t->grace_adaptive)
		return t->grace_tsc;
	w = atomic_load_explicit(&j->lj[lc->idx].grace_auto_tsc, memory_order_relaxed);
	return w == 0 || w > t->grace_tsc ? t->grace_tsc : w;
}

/* The adaptive estimate from the samples kept: twice their 90th percentile (the smallest
 * of the n / 10 + 1 largest, kept sorted in top[] by insertion), at least the floor. At
 * most DP_GRACE_SAMPLES x (DP_GRACE_SAMPLES / 10 + 1) compares, once every DP_GRACE_EVERY
 * samples. */
static inline void
grace_estimate(struct dp_job_lcore *lj, uint64_t floor)
{
	uint64_t top[DP_GRACE_SAMPLES / 10 + 1];
	uint32_t n = lj->gsamp_n < DP_GRACE_SAMPLES ? lj->gsamp_n : DP_GRACE_SAMPLES;
	uint32_t k = n / 10 + 1, have = 0;

	for (uint32_t i = 0; i < n; i++) {
		uint64_t v = lj->gsamp[i];
		uint32_t at = have < k ? have++ : k;

		/* top[] descending: v goes in at its place, the smallest falls off. */
		while (at > 0 && top[at - 1] < v) {
			if (at < k)
				top[at] = top[at - 1];
			at--;
		}
		if (at < k)
			top[at] = v;
	}
	uint64_t w = 2 * top[k - 1];

	atomic_store_explicit(&lj->grace_auto_tsc, w < floor ? floor : w, memory_order_relaxed);
}

/* One sample of an adaptive window: v TSC after the threshold a contribution came (0: the
 * window ran out with nobody in). */
static inline void
grace_sample(const struct dp_lcore *lc, const struct dp_job *j, uint64_t v)
{
	struct dp_job_lcore *lj = &j->lj[lc->idx];

	lj->gsamp[lj->gsamp_n % DP_GRACE_SAMPLES] = v;
	lj->gsamp_n++;
	if (lj->gsamp_n >= DP_GRACE_SAMPLES_MIN && lj->gsamp_n % DP_GRACE_EVERY == 0)
		grace_estimate(lj, j->grace_floor_tsc);
}

/*
 * A contribution that came after its chunk completed, to slot s of tree t (its chunk and
 * round): with an adaptive window, its lateness after the threshold is a sample too, up to
 * the table's bound. So a worker that the window cut (the window shrank below its
 * lateness) still counts, and the window grows back to it; one later than the bound, a
 * straggler the window is not for, does not.
 */
static inline void
quorum_late(const struct dp_lcore *lc, const struct dp_job *j, const struct dp_tree *t,
	    const struct dp_slot *s)
{
	uint64_t v;

	if (!t->grace_adaptive || s->quorum_tsc == 0)
		return;
	v = rte_rdtsc() - s->quorum_tsc;
	if (v <= t->grace_tsc)
		grace_sample(lc, j, v);
}

/* Append a grace entry for slot s of tree index ti, due at `due`: the FIFO holds at most
 * one per slot (grace_q), so its capacity, the slots of the trees with a window, is
 * never exceeded. */
static inline void
grace_push(const struct dp_lcore *lc, const struct dp_job *j, uint16_t ti, struct dp_slot *s,
	   uint64_t due)
{
	struct dp_job_lcore *lj = &j->lj[lc->idx];

	lj->gq[lj->gtail & lj->gmask] = (struct dp_grace){.due = due, .s = s, .tree = ti};
	lj->gtail++;
	s->grace_q = true;
}

/*
 * Slot s of tree t has at least its threshold of worker contributions, not all of them:
 * whether it waits (a grace window: opened now, or a contribution within it) rather than
 * completes now.
 */
static inline bool
quorum_wait(const struct dp_lcore *lc, const struct dp_job *j, const struct dp_tree *t,
	    struct dp_slot *s)
{
	uint64_t now;

	if (t->grace_tsc == 0) {
		quorum_count(lc, j, DP_QUORUM_THRESHOLD);
		return false;
	}
	now = rte_rdtsc();
	if (s->quorum_tsc != 0) {
		quorum_count(lc, j, DP_QUORUM_IN_GRACE);
		if (t->grace_adaptive)
			grace_sample(lc, j, now - s->quorum_tsc);
		return true;
	}
	s->quorum_tsc = now;
	s->quorum_n = s->n_in;
	s->grace_due = now + grace_window(lc, j, t);
	/* An entry still queued for this slot (of an earlier window of it that closed with
	 * every contribution in, or whose round was given up) stands for this window: it
	 * comes up at the earlier of its own due time and this window's end (dp_agg_grace()),
	 * and is pushed again for this window's end if that is later. */
	if (!s->grace_q)
		grace_push(lc, j, (uint16_t)(t - j->trees), s, s->grace_due);
	return true;
}

/* Slot s of tree t (with a threshold) has every contribution in, and completes. */
static inline void
quorum_all(const struct dp_lcore *lc, const struct dp_job *j, const struct dp_tree *t,
	   const struct dp_slot *s)
{
	quorum_count(lc, j, DP_QUORUM_ALL);
	if (s->quorum_tsc == 0)
		return;
	quorum_count(lc, j, DP_QUORUM_ALL_IN_GRACE);
	quorum_count(lc, j, DP_QUORUM_IN_GRACE);
	if (t->grace_adaptive)
		grace_sample(lc, j, rte_rdtsc() - s->quorum_tsc);
}

#endif
