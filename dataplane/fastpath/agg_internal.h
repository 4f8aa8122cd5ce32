/* SPDX-License-Identifier: BSD-3-Clause
 *
 * Fast path: what the files of aggregation share (agg.c, mcast.c, retx.c, recover.c,
 * send.c): a drop, the georeduce header of a frame, the job of a packet and the slot of
 * its chunk, the RESULT a slot retains. Static inline: most run on every packet. Worker
 * lcores only.
 */
#ifndef GEOREDUCE_DP_AGG_INTERNAL_H
#define GEOREDUCE_DP_AGG_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <rte_branch_prediction.h>
#include <rte_mbuf.h>

#include "dp.h"
#include "fastpath/validate.h"
#include "wire.h"

static inline void
drop(struct dp_lcore *lc, struct rte_mbuf *m, enum wire_reason why)
{
	lc->drops[why]++;
	rte_pktmbuf_free(m);
}

static inline struct wire_hdr *
gr_hdr(struct rte_mbuf *m)
{
	return rte_pktmbuf_mtod_offset(m, struct wire_hdr *, WIRE_FRAME_HDR_OFF);
}

/* The job entry of (job, epoch), or NULL with *why set. *live tells whether it is the
 * current epoch (chunks may start) or a draining one (only open slots go on). */
static inline const struct dp_job *
find_job(const struct dp_state *st, uint32_t job, uint32_t epoch, bool *live, enum wire_reason *why)
{
	if (st == NULL) {
		*why = WIRE_REASON_UNKNOWN_JOB;
		return NULL;
	}
	for (int i = 0; i < st->n_jobs; i++) {
		if (st->jobs[i].job != job)
			continue;
		const struct dp_job *cur = st->jobs[i].epochs[0];

		if (epoch == cur->epoch) {
			*live = !st->jobs[i].removed;
			return cur;
		}
		if ((int32_t)(epoch - cur->epoch) > 0) {
			*why = WIRE_REASON_EPOCH_AHEAD;
			return NULL;
		}
		for (int e = 1; e < st->jobs[i].n_epochs; e++)
			if (st->jobs[i].epochs[e]->epoch == epoch) {
				*live = false;
				return st->jobs[i].epochs[e];
			}
		*why = WIRE_REASON_EPOCH_STALE;
		return NULL;
	}
	*why = WIRE_REASON_UNKNOWN_JOB;
	return NULL;
}

/* Index of id in the sorted ids[0 .. n - 1], or -1. A branch-free lower bound
 * (conditional moves: the ids of consecutive packets alternate, so a branching search
 * mispredicts about every other step), at most 8 steps for 256 ids. */
static inline int
ids_find(const uint16_t *ids, unsigned int n, uint16_t id)
{
	const uint16_t *base = ids;

	if (unlikely(n == 0))
		return -1;
	while (n > 1) {
		unsigned int half = n / 2;

		/* Arithmetic, not ?: which the compiler may turn back into a branch. */
		base += (size_t)(base[half - 1] < id) * half;
		n -= half;
	}
	return *base == id ? (int)(base - ids) : -1;
}

/* Whether slot s has the contribution of the contributor with bit `bit` (table.h). */
static inline bool
slot_has(const struct dp_slot *s, unsigned int bit)
{
	return s->in[bit >> 6] >> (bit & 63) & 1;
}

/* Index of contributor id in the tree's sorted list, or -1. */
static inline int
find_src(const struct dp_tree *t, uint16_t id)
{
	return ids_find(t->src_ids, t->n_src, id);
}

/* Elements of chunk c of the job's tensor (every chunk is full but the last). */
static inline uint32_t
chunk_len(const struct dp_job *j, uint32_t c)
{
	return c + 1 == j->n_chunks ? (uint32_t)(j->elements - (uint64_t)c * j->chunk_elements) :
				      j->chunk_elements;
}

static inline struct dp_slot *
slot_of(const struct dp_job *j, const struct dp_lcore *lc, const struct dp_tree *t, uint32_t chunk)
{
	return &j->slots[lc->idx][t->slot_off + (chunk & t->slot_mask)];
}

static inline void
busy_add(const struct dp_job *j, const struct dp_lcore *lc, int d)
{
	uint32_t v = atomic_load_explicit(&j->busy[lc->idx], memory_order_relaxed);

	atomic_store_explicit(&j->busy[lc->idx], v + (uint32_t)d, memory_order_relaxed);
}

/* The RESULT of (chunk, round), if the slot retains it (as its own or the previous one),
 * else NULL. */
static inline struct rte_mbuf *
retained(const struct dp_slot *s, uint32_t chunk, uint32_t round)
{
	if (s->state == DP_SLOT_DONE && s->chunk == chunk && s->round == round)
		return s->result;
	return s->prev != NULL && s->prev_chunk == chunk && s->prev_round == round ? s->prev : NULL;
}

/* The job entry of the packet p (frame m) under st, or NULL with m dropped and counted; *live
 * as find_job() sets it. The first checks of dp_agg_rx() and dp_mcast_rx(). */
static inline const struct dp_job *
rx_job(struct dp_lcore *lc, const struct dp_state *st, struct rte_mbuf *m, const struct wire_pkt *p,
       bool *live)
{
	enum wire_reason why = WIRE_REASON_NONE;

	/* Every packet about a chunk goes to the chunk's port (section 9): the port picks the
	 * lcore that owns the chunk's slots. */
	if (unlikely(!dp_dport_ok(lc->dp, m, p->chunk))) {
		drop(lc, m, WIRE_REASON_BAD_PORT);
		return NULL;
	}
	const struct dp_job *j = find_job(st, p->job, p->epoch, live, &why);

	lc->rx_st = st;
	if (unlikely(j == NULL)) {
		drop(lc, m, why);
		return NULL;
	}
	return j;
}

#endif
