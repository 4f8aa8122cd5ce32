/* SPDX-License-Identifier: BSD-3-Clause
 *
 * Fast path: result recovery across epochs (docs/PROTOCOL.md section 10.1).
 *
 * A re-plan can cut a round after some workers got its RESULT under the old epoch and
 * others did not: the latter run it again under the new epoch while the former have moved
 * on, and the round could never complete. Every worker that got the RESULT got it from its
 * own gateway, which retains it in the old epoch (replaced epochs linger, --linger-ms). So
 * a gateway asked for a RESULT of a round it did not complete under its current epoch
 * answers from the epoch that holds it, or asks its neighbour gateways in the tree, which
 * answer or ask theirs; the RESULT comes back and goes to whoever asked. Nothing here runs
 * per packet of a working round: only late requests, and partial sums of a round after
 * the one a slot is open for, lead here.
 *
 * Called by agg.c (late and moved-on contributors, answers) and retx.c (NACK_RESULTs);
 * calls only send.c, which also takes a recovered RESULT down the tree.
 *
 * Worker lcores only: no allocation except mbufs from pools sized at start, no locks, no
 * syscalls, no logging above DEBUG.
 */
#include <rte_branch_prediction.h>
#include <rte_cycles.h>
#include <rte_mbuf.h>

#include "dp.h"
#include "fastpath/agg_internal.h"
#include "fastpath/recover.h"
#include "fastpath/retx.h"
#include "fastpath/send.h"
#include "fastpath/tx.h"

struct rte_mbuf *
dp_retained_elsewhere(struct dp_lcore *lc, const struct dp_job *j, uint32_t chunk, uint32_t round)
{
	const struct dp_state *st = lc->rx_st;

	for (int e = 0; st != NULL && e < st->n_jobs; e++) {
		if (st->jobs[e].job != j->job)
			continue;
		for (int k = 0; k < st->jobs[e].n_epochs; k++) {
			const struct dp_job *o = st->jobs[e].epochs[k];

			if (o == j || o->dtype != j->dtype || o->elements != j->elements ||
			    o->chunk_elements != j->chunk_elements || o->cset_len != j->cset_len)
				continue;
			/* Summed over other workers: the round runs again under j instead, so
			 * that all its chunks count one membership (10.1, rule 1). */
			bool other = o->membership != 0 && j->membership != 0 &&
				     o->membership != j->membership;

			for (int i = 0; i < o->n_trees; i++) {
				const struct dp_tree *t = &o->trees[i];

				if (chunk - t->chunk_first >= t->chunk_count)
					continue;
				struct rte_mbuf *r =
					retained(slot_of(o, lc, t, chunk), chunk, round);

				if (r != NULL && other)
					lc->ctr[DP_CTR_RECOVER_OTHER_MEMBERS]++;
				else if (r != NULL)
					return r;
				break;
			}
		}
		break;
	}
	return NULL;
}

enum recover_add {
	RECOVER_ASK,  /* recorded, and nobody asked for it yet: ask */
	RECOVER_WAIT, /* recorded; asked already */
	RECOVER_NONE, /* not recorded: the table is full */
};

/* Whether anyone waits for the RESULT of (tree ti, chunk, round), in an entry other than
 * `but` (NULL: any). */
static bool
recover_pending_but(const struct dp_recover *rq, const struct dp_recover *but, uint16_t ti,
		    uint32_t chunk, uint32_t round, uint64_t now)
{
	for (unsigned int i = 0; i < DP_RECOVER_MAX; i++)
		if (&rq[i] != but && rq[i].until > now && rq[i].tree == ti &&
		    rq[i].chunk == chunk && rq[i].round == round)
			return true;
	return false;
}

/* The table is full (every entry pending) and `to` asks: the entry of the requester that
 * holds the most, its soonest to expire, if that requester holds at least two more than
 * `to` (so that two requesters never take an entry from each other in turn); else NULL.
 * Each requester (a down[] index, the parent, this gateway's own slots) so keeps at least
 * an even share of the table however fast another one asks. Rare path: only while full. */
static struct dp_recover *
recover_victim(struct dp_recover *rq, uint16_t to)
{
	struct dp_recover *victim = NULL;
	unsigned int mine = 0, most = 0;

	for (unsigned int i = 0; i < DP_RECOVER_MAX; i++)
		mine += rq[i].to == to;
	for (unsigned int i = 0; i < DP_RECOVER_MAX; i++) {
		unsigned int n = 0;

		if (rq[i].to == to)
			continue;
		for (unsigned int k = 0; k < DP_RECOVER_MAX; k++)
			n += rq[k].to == rq[i].to;
		if (n > most || (n == most && rq[i].until < victim->until)) {
			most = n;
			victim = &rq[i];
		}
	}
	return most >= mine + 2 ? victim : NULL;
}

/* Record that `to` waits for the RESULT of (tree ti, chunk, round). */
static enum recover_add
recover_add(struct dp_lcore *lc, const struct dp_job *j, uint16_t ti, uint32_t chunk,
	    uint32_t round, uint16_t to, uint64_t now)
{
	struct dp_recover *rq = j->lj[lc->idx].recover, *free_rq = NULL;
	bool asked = false;

	for (unsigned int i = 0; i < DP_RECOVER_MAX; i++) {
		if (rq[i].until <= now) {
			free_rq = free_rq != NULL ? free_rq : &rq[i];
			continue;
		}
		if (rq[i].tree != ti || rq[i].chunk != chunk || rq[i].round != round)
			continue;
		if (rq[i].to == to)
			return RECOVER_WAIT;
		asked = true;
	}
	if (free_rq == NULL) {
		free_rq = recover_victim(rq, to);
		if (free_rq == NULL) {
			lc->ctr[DP_CTR_RECOVER_FULL]++;
			return RECOVER_NONE;
		}
		lc->ctr[DP_CTR_RECOVER_EVICTED]++;
		/* The evicted request may have been the one that asked for this RESULT. */
		asked = asked && recover_pending_but(rq, free_rq, ti, chunk, round, now);
	}
	/* Long enough for a few round trips to the neighbours; the asker asks again after. */
	*free_rq = (struct dp_recover){.until = now + 4 * rto(lc, j, ti, 0),
				       .chunk = chunk,
				       .round = round,
				       .tree = ti,
				       .to = to};
	return asked ? RECOVER_WAIT : RECOVER_ASK;
}

/* A local worker of tree t that has the RESULT of `round` though this gateway does not: it
 * sent a CONTRIB of a later round, which it could only do with every RESULT of that one
 * (a re-plan moved the chunk here from the gateway that gave it). Its down[] index, or -1
 * (none, or only `except`). */
static int
moved_on_worker(const struct dp_job *j, const struct dp_tree *t, uint32_t round, int except)
{
	for (uint16_t k = 0; k < t->n_src; k++) {
		uint64_t v;

		if (!t->src_worker[k] || t->src_down[k] == except)
			continue;
		v = atomic_load_explicit(&j->src_round[t->budget_off + t->src_down[k]],
					 memory_order_relaxed);
		if (v != 0 && wire_round_before(round, (uint32_t)v))
			return t->src_down[k];
	}
	return -1;
}

/* Ask for the RESULT of (chunk, round): tree t's neighbour gateways (its parent and child
 * gateways) and one local worker that moved on past that round (moved_on_worker()), or
 * (only >= 0) down[only] alone, a child gateway or a local worker; never `except` (a
 * down[] index, or DP_RECOVER_PARENT). False if there was none to ask. */
static bool
recover_ask(struct dp_lcore *lc, const struct dp_job *j, const struct dp_tree *t, uint32_t chunk,
	    uint32_t round, int only, int except)
{
	struct wire_pkt a = dp_nack_result(j, t, chunk, round, dp_now_us());
	bool any = false;

	if (only >= 0) {
		if (only == except)
			return false;
		dp_send_ctl(lc, j, &t->down[only], &a, DP_CTR_RECOVER_ASKED);
		return true;
	}
	if (t->has_parent && except != DP_RECOVER_PARENT) {
		dp_send_ctl(lc, j, &t->parent, &a, DP_CTR_RECOVER_ASKED);
		any = true;
	}
	for (int i = 0; i < t->n_children; i++)
		if (i != except) {
			dp_send_ctl(lc, j, &t->down[i], &a, DP_CTR_RECOVER_ASKED);
			any = true;
		}
	int w = moved_on_worker(j, t, round, except);

	if (w >= 0) {
		dp_send_ctl(lc, j, &t->down[w], &a, DP_CTR_RECOVER_ASKED);
		any = true;
	}
	return any;
}

void
dp_recover_request(struct dp_lcore *lc, const struct dp_job *j, const struct dp_tree *t,
		   uint32_t chunk, uint32_t round, uint16_t to, int only, int except)
{
	uint16_t ti = (uint16_t)(t - j->trees);
	uint64_t now = rte_rdtsc();
	struct dp_recover *rq = j->lj[lc->idx].recover;

	if (recover_add(lc, j, ti, chunk, round, to, now) != RECOVER_ASK ||
	    recover_ask(lc, j, t, chunk, round, only, except))
		return;
	for (unsigned int i = 0; i < DP_RECOVER_MAX; i++) /* none to ask: forget it */
		if (rq[i].until > now && rq[i].tree == ti && rq[i].chunk == chunk &&
		    rq[i].round == round && rq[i].to == to)
			rq[i].until = 0;
}

/* A frame of our own for slot s from the RESULT r an older epoch retains, relabelled as
 * j's epoch and tree t; NULL when the pool is empty. */
static struct rte_mbuf *
result_adopt(struct dp_lcore *lc, const struct dp_job *j, const struct dp_tree *t,
	     struct rte_mbuf *r)
{
	struct rte_mbuf *c = rte_pktmbuf_copy(r, lc->pool, 0, UINT32_MAX);

	if (unlikely(c == NULL)) {
		lc->ctr[DP_CTR_NO_MBUF]++;
		return NULL;
	}
	gr_hdr(c)->epoch = rte_cpu_to_be_32(j->epoch);
	gr_hdr(c)->tree = rte_cpu_to_be_16(t->id);
	return c;
}

/* The slot, open or complete for the round of RESULT r (j's epoch and tree t: ours),
 * is done with it: what it held goes, the RESULT goes down the tree (dp_result_down()). */
static void
recover_complete(struct dp_lcore *lc, const struct dp_job *j, const struct dp_tree *t,
		 struct dp_slot *s, struct rte_mbuf *r)
{
	if (s->state == DP_SLOT_OPEN && s->acc != NULL) {
		rte_pktmbuf_free(s->acc);
		s->acc = NULL;
	}
	lc->ctr[DP_CTR_RECOVERED]++;
	dp_result_down(lc, j, t, s, r, dp_now_us(), true, -1, 0);
}

void
dp_recover_late(struct dp_lcore *lc, const struct dp_job *j, const struct dp_tree *t, uint16_t di,
		uint32_t chunk, uint32_t round, uint32_t tsval)
{
	struct rte_mbuf *r = dp_retained_elsewhere(lc, j, chunk, round);

	if (r != NULL) {
		dp_send_copy_as(lc, j, &t->down[di], down_pacer(t, di), r, NULL,
				WIRE_F_RETX | WIRE_F_ECHO, tsval, dp_now_us(),
				DP_CTR_RECOVER_ANSWERED, t->id, false);
		return;
	}
	dp_recover_request(lc, j, t, chunk, round, di, -1, di);
}

void
dp_recover_moved_on(struct dp_lcore *lc, const struct dp_job *j, const struct dp_tree *t,
		    struct dp_slot *s, int k)
{
	struct rte_mbuf *r = dp_retained_elsewhere(lc, j, s->chunk, s->round);

	if (r != NULL) {
		r = result_adopt(lc, j, t, r);
		if (r != NULL)
			recover_complete(lc, j, t, s, r);
		return;
	}
	dp_recover_request(lc, j, t, s->chunk, s->round, DP_RECOVER_SLOT, t->src_down[k], -1);
}

void
dp_recover_stalled(struct dp_lcore *lc, const struct dp_job *j, const struct dp_tree *t,
		   struct dp_slot *s)
{
	int w = moved_on_worker(j, t, s->round, -1);

	if (w >= 0)
		dp_recover_request(lc, j, t, s->chunk, s->round, DP_RECOVER_SLOT, w, -1);
}

void
dp_recover_answer(struct dp_lcore *lc, const struct dp_job *j, const struct dp_tree *t,
		  struct rte_mbuf *m, const struct wire_pkt *p, uint16_t from)
{
	uint16_t ti = (uint16_t)(t - j->trees);
	struct dp_slot *s = slot_of(j, lc, t, p->chunk);
	struct dp_recover *rq = j->lj[lc->idx].recover;
	uint64_t now = rte_rdtsc();
	uint32_t now_us = dp_now_us();
	bool kept = false, workers = false, used = false;

	/* From a child or a worker, only an answer to a request still pending counts. */
	if (from != DP_RECOVER_PARENT &&
	    !recover_pending_but(rq, NULL, ti, p->chunk, p->round, now)) {
		drop(lc, m, WIRE_REASON_LATE);
		return;
	}
	if (s->chunk == p->chunk && s->round == p->round &&
	    (s->state == DP_SLOT_OPEN || s->state == DP_SLOT_COMPLETE)) {
		recover_complete(lc, j, t, s, m); /* the slot keeps m; workers have it */
		kept = workers = used = true;
	}
	for (unsigned int i = 0; i < DP_RECOVER_MAX; i++) {
		struct dp_recover *q = &rq[i];

		if (q->until <= now || q->tree != ti || q->chunk != p->chunk ||
		    q->round != p->round)
			continue;
		q->until = 0;
		used = true;
		/* The slot's RESULT went to every child and worker already. */
		if (q->to == DP_RECOVER_SLOT || q->to == from ||
		    (kept && q->to != DP_RECOVER_PARENT))
			continue;
		if (q->to == DP_RECOVER_PARENT)
			send_copy(lc, j, &t->parent, t->pace_first, m, NULL, WIRE_F_RETX, 0, now_us,
				  DP_CTR_RECOVER_ANSWERED);
		else if (q->to < t->n_children)
			send_copy(lc, j, &t->down[q->to], down_pacer(t, q->to), m, NULL,
				  WIRE_F_RETX, 0, now_us, DP_CTR_RECOVER_ANSWERED);
		else if (!workers) { /* a local worker asked: every one that may lack it */
			for (uint16_t w = t->n_children; w < t->n_down; w++)
				send_copy(lc, j, &t->down[w], DP_PACE_NONE, m, NULL, WIRE_F_RETX, 0,
					  now_us, DP_CTR_RECOVER_ANSWERED);
			workers = true;
		}
	}
	if (!used) {
		drop(lc, m, WIRE_REASON_LATE);
		return;
	}
	if (!kept) {
		lc->ctr[DP_CTR_RECOVERED]++;
		rte_pktmbuf_free(m);
	}
}
