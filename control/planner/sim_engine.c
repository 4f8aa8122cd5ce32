/* SPDX-License-Identifier: BSD-3-Clause
 *
 * The AllReduce simulator's engine (sim_engine.h): a fluid, event-driven, max-min fair model
 * of chunked transfers. sim.c compiles the schedules; this file runs them. It runs on the
 * caller's thread (georeduce-plan, or the control process while it plans a job), and a
 * simulation keeps all of its state in its struct sim.
 *
 * Model
 * -----
 * A schedule (tree plan, ring, parameter server) is compiled into *transfers*: one chunk
 * over one directed link u -> v, with a size in bytes and the transfers it depends on. A
 * transfer is *ready* once every transfer it depends on has *arrived*. A few zero-cost
 * *joins* (a transfer with no link) stand for "chunk j arrived from all of them" at a tree
 * root or at the parameter server, so that a k-way barrier costs k + fan-out dependency
 * edges instead of k * fan-out.
 *
 * Every transfer belongs to a *flow*: one schedule entity (a tree, a ring direction, one
 * parameter-server route) on one directed link. A flow serves its ready transfers FIFO, in
 * the order they became ready (ties, i.e. transfers ready at the same instant, by transfer
 * id; builders number the transfers of a flow in chunk order), and transmits one transfer
 * at a time:
 *
 *   - window == 0: the next transfer starts as soon as the previous one finished
 *     transmitting (a transport whose window covers the bandwidth-delay product);
 *   - window == w > 0: at most w of the flow's transfers are transmitting or propagating,
 *     so with w == 1 the next transfer starts only when the previous one has arrived
 *     (stop-and-wait per hop: the pipelining model of mTree stage 3).
 *
 * The flows transmitting on a directed link share its capacity
 * (topo_link_gbps_from() * 1e9 / 8 bytes/s) max-min fairly. With pacing, the flows of a
 * tree are capped at the tree's rate_gbps, and the allocation on one link is the
 * water-filling one: flows whose cap is below the equal share get their cap, the rest of
 * the capacity is split equally among the others. Rates are constant between events
 * (fluid model), so a transmission of B bytes at rate r takes B / r.
 *
 * When a transfer finishes transmitting it arrives latency_ms / 1000 + alpha_s later:
 * alpha delays the chunk but does not occupy the link. On arrival, the dependency counts
 * of its successors drop, and those that reach zero become ready in their flows. The
 * result is the latest arrival (0 if the schedule has no transfer).
 *
 * Event loop
 * ----------
 * One binary min-heap (eventq.h) holds two kinds of events, ordered by (time, id):
 *   - arrival of transfer x;
 *   - first transmission completion on directed link d, tagged with d's version number.
 *     Every time d's allocation changes its version is bumped and a new event is pushed;
 *     events carrying an older version are stale and dropped when popped (lazy deletion).
 * Each iteration takes the earliest time `now` and
 *   1. handles every event due at `now` (arrivals release successors into a ready list;
 *      link completions bring the link's remaining bytes up to date, retire the flows that
 *      have finished and schedule their arrivals),
 *   2. enqueues the newly ready transfers in their flows, in id order,
 *   3. starts the next transfer of every flow that was touched and may transmit,
 *   4. recomputes the allocation of every link whose set of transmitting flows changed
 *      (bringing its remaining bytes up to date first) and schedules its next completion.
 * A link's work per change is linear in the number of flows transmitting on it (a handful
 * for trees and rings), so the cost is O(log heap) per transfer: about 1e6 to 5e6
 * transfers per second, see tests/test_sim.c.
 *
 * Memory is about 24 bytes per transfer and 4 per dependency (8 more per dependency while
 * building). The builders count the link transfers of a schedule before creating any and
 * refuse more than SIM_MAX_TRANSFERS; the joins (at most one per chunk) come on top.
 */
#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "eventq.h"
#include "sim_engine.h"

#define SIM_EV_LINK 0x80000000u /* event id flag: link completion, not arrival */

/* Two transmissions whose completions differ by less than this fraction of the current
 * time are treated as simultaneous (rounding of the fluid arithmetic). */
#define SIM_REL_EPS 1e-12

/* ------------------------------------------------------------------------------------ */
/* Building                                                                              */

int
sim_check_params(const struct sim_params *sp)
{
	if (sp == NULL || !(isfinite(sp->alpha_s) && sp->alpha_s >= 0) || sp->window < 0)
		return -EINVAL;
	return 0;
}

int
sim_init(struct sim *s, const struct topo *t, const struct sim_params *sp)
{
	memset(s, 0, sizeof(*s));
	s->t = t;
	s->alpha_s = sp->alpha_s;
	s->window = (uint32_t)sp->window;
	s->n_dl = 2 * (uint32_t)t->n_links;
	s->dl = calloc(s->n_dl + 1, sizeof(*s->dl));
	if (s->dl == NULL)
		return -ENOMEM;
	for (int l = 0; l < t->n_links; l++) {
		const struct topo_link *lk = &t->links[l];

		s->dl[2 * l].cap = lk->gbps_ab * 1e9 / 8;
		s->dl[2 * l + 1].cap = lk->gbps_ba * 1e9 / 8;
		s->dl[2 * l].delay = lk->latency_ms / 1000 + sp->alpha_s;
		s->dl[2 * l + 1].delay = s->dl[2 * l].delay;
	}
	return 0;
}

void
sim_fini(struct sim *s)
{
	free(s->dl);
	free(s->flows);
	free(s->x_bytes);
	free(s->x_flow);
	free(s->x_deps);
	free(s->x_next);
	free(s->x_succ_off);
	free(s->x_succ);
	free(s->e_from);
	free(s->e_to);
	eventq_fini(&s->events);
	free(s->ready);
	free(s->dirty_f);
	free(s->dirty_l);
	free(s->act_pool);
}

size_t
sim_grow_to(size_t cap, size_t need)
{
	size_t n = cap > 0 ? cap : 256;

	while (n < need)
		n *= 2;
	return n;
}

int
sim_regrow(void *pp, size_t n, size_t size)
{
	void *p;

	memcpy(&p, pp, sizeof(p));
	if (size != 0 && n > SIZE_MAX / size)
		return -ENOMEM;
	p = realloc(p, n * size);
	if (p == NULL)
		return -ENOMEM;
	memcpy(pp, &p, sizeof(p));
	return 0;
}

int
sim_flow_add(struct sim *s, int u, int v, double cap)
{
	int l = topo_link_between(s->t, u, v);
	struct sim_flow *f;

	if (l < 0)
		return -EINVAL;
	if (s->n_flows == s->cap_flows) {
		size_t n = sim_grow_to(s->cap_flows, (size_t)s->n_flows + 1);

		if (n > INT32_MAX)
			return -E2BIG;
		if (sim_regrow(&s->flows, n, sizeof(*s->flows)) != 0)
			return -ENOMEM;
		s->cap_flows = (uint32_t)n;
	}
	f = &s->flows[s->n_flows];
	memset(f, 0, sizeof(*f));
	f->dl = 2 * (uint32_t)l + (u == s->t->links[l].a ? 0 : 1);
	f->head = f->tail = f->cur = SIM_NONE;
	f->cap = cap;
	s->dl[f->dl].n_flows++;
	return (int)s->n_flows++;
}

int
sim_xfer_add(struct sim *s, uint32_t flow, double bytes, uint32_t *id)
{
	if (s->n_x == s->cap_x) {
		size_t n = sim_grow_to(s->cap_x, (size_t)s->n_x + 1);

		/* Joins are at most one per link transfer: 2 * SIM_MAX_TRANSFERS bounds all. */
		if (n > 2 * (size_t)SIM_MAX_TRANSFERS + 2)
			n = 2 * (size_t)SIM_MAX_TRANSFERS + 2;
		if (n <= s->n_x)
			return -E2BIG;
		/* A failure leaves the arrays grown so far bigger: harmless, cap_x is not. */
		if (sim_regrow(&s->x_bytes, n, sizeof(*s->x_bytes)) != 0 ||
		    sim_regrow(&s->x_flow, n, sizeof(*s->x_flow)) != 0 ||
		    sim_regrow(&s->x_deps, n, sizeof(*s->x_deps)) != 0)
			return -ENOMEM;
		s->cap_x = (uint32_t)n;
	}
	if (flow != SIM_NONE && ++s->n_link_x > SIM_MAX_TRANSFERS)
		return -E2BIG;
	s->x_bytes[s->n_x] = bytes;
	s->x_flow[s->n_x] = flow;
	s->x_deps[s->n_x] = 0;
	*id = s->n_x++;
	return 0;
}

int
sim_dep_add(struct sim *s, uint32_t pred, uint32_t succ)
{
	if (s->n_e == s->cap_e) {
		size_t n = sim_grow_to(s->cap_e, s->n_e + 1);

		if (n > UINT32_MAX)
			return -E2BIG;
		if (sim_regrow(&s->e_from, n, sizeof(*s->e_from)) != 0 ||
		    sim_regrow(&s->e_to, n, sizeof(*s->e_to)) != 0)
			return -ENOMEM;
		s->cap_e = n;
	}
	s->e_from[s->n_e] = pred;
	s->e_to[s->n_e] = succ;
	s->n_e++;
	s->x_deps[succ]++;
	return 0;
}

/* ------------------------------------------------------------------------------------ */
/* Event loop                                                                            */

/* Queue the arrival of transfer id, or (SIM_EV_LINK | d) the completion on link d. */
static int
sim_push(struct sim *s, double t, uint32_t id, uint32_t ver)
{
	struct eventq_ev ev = {.t = t, .key = id, .a = id, .ver = ver};

	return eventq_push(&s->events, &ev);
}

static void
sim_flow_dirty(struct sim *s, uint32_t f)
{
	if (!s->flows[f].dirty) {
		s->flows[f].dirty = true;
		s->dirty_f[s->n_dirty_f++] = f;
	}
}

static void
sim_link_dirty(struct sim *s, uint32_t d)
{
	if (!s->dl[d].dirty) {
		s->dl[d].dirty = true;
		s->dirty_l[s->n_dirty_l++] = d;
	}
}

/* Bring the remaining bytes of the flows transmitting on link d up to `now`. */
static void
sim_link_advance(struct sim *s, struct sim_dlink *d)
{
	double dt = s->now - d->last;

	if (dt > 0)
		for (uint32_t i = 0; i < d->n_active; i++) {
			struct sim_flow *f = &s->flows[d->active[i]];

			f->rem -= f->rate * dt;
		}
	d->last = s->now;
}

/* Link transfer x became ready at `now`: note it, to be queued in its flow in id order. */
static int
sim_ready_add(struct sim *s, uint32_t x)
{
	if (s->n_ready == s->cap_ready) {
		size_t n = sim_grow_to(s->cap_ready, s->n_ready + 1);

		if (sim_regrow(&s->ready, n, sizeof(*s->ready)) != 0)
			return -ENOMEM;
		s->cap_ready = n;
	}
	s->ready[s->n_ready++] = x;
	return 0;
}

/*
 * Transfer x arrived at `now`: release its successors. Joins are passed through at once
 * (recursively; a join never depends on a join in the schedules built here). Link
 * transfers that become ready go to s->ready, to be queued in id order.
 */
static int
sim_arrive(struct sim *s, uint32_t x)
{
	uint32_t f = s->x_flow[x];

	s->n_arrived++;
	s->x_deps[x] = UINT32_MAX; /* arrived: never released again */
	if (s->now > s->last_arrival)
		s->last_arrival = s->now;
	if (f != SIM_NONE) {
		s->flows[f].inflight--;
		if (s->window > 0)
			sim_flow_dirty(s, f);
	}
	for (uint32_t k = s->x_succ_off[x]; k < s->x_succ_off[x + 1]; k++) {
		uint32_t y = s->x_succ[k];
		int rc;

		if (--s->x_deps[y] != 0)
			continue;
		if (s->x_flow[y] == SIM_NONE) {
			rc = sim_arrive(s, y);
			if (rc != 0)
				return rc;
			continue;
		}
		rc = sim_ready_add(s, y);
		if (rc != 0)
			return rc;
	}
	return 0;
}

/* A completion event of link d at `now`: retire the flows that finished transmitting. */
static int
sim_link_event(struct sim *s, uint32_t d_id)
{
	struct sim_dlink *d = &s->dl[d_id];
	uint32_t k = 0;

	sim_link_advance(s, d);
	for (uint32_t i = 0; i < d->n_active; i++) {
		uint32_t fi = d->active[i];
		struct sim_flow *f = &s->flows[fi];
		double tol = 1e-9 + f->rate * SIM_REL_EPS * (1.0 + s->now);
		int rc;

		if (fi != d->next && f->rem > tol) {
			d->active[k++] = fi;
			continue;
		}
		rc = sim_push(s, s->now + d->delay, f->cur, 0);
		if (rc != 0)
			return rc;
		f->cur = SIM_NONE;
		f->rem = 0;
		f->rate = 0;
		sim_flow_dirty(s, fi);
	}
	d->n_active = k;
	sim_link_dirty(s, d_id);
	return 0;
}

/* Order of the ready list: transfer id. */
static int
sim_cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return x < y ? -1 : x > y;
}

/* Append the transfers that became ready at `now` to their flows' FIFOs, in id order. */
static void
sim_enqueue_ready(struct sim *s)
{
	bool sorted = true;

	for (size_t i = 1; i < s->n_ready && sorted; i++)
		sorted = s->ready[i - 1] < s->ready[i];
	if (!sorted)
		qsort(s->ready, s->n_ready, sizeof(*s->ready), sim_cmp_u32);
	for (size_t i = 0; i < s->n_ready; i++) {
		uint32_t x = s->ready[i], fi = s->x_flow[x];
		struct sim_flow *f = &s->flows[fi];

		s->x_next[x] = SIM_NONE;
		if (f->tail == SIM_NONE)
			f->head = x;
		else
			s->x_next[f->tail] = x;
		f->tail = x;
		sim_flow_dirty(s, fi);
	}
	s->n_ready = 0;
}

/* Start the head transfer of every touched flow that is idle and within its window. */
static void
sim_start_flows(struct sim *s)
{
	for (uint32_t i = 0; i < s->n_dirty_f; i++) {
		uint32_t fi = s->dirty_f[i], x, j;
		struct sim_flow *f = &s->flows[fi];
		struct sim_dlink *d;

		f->dirty = false;
		if (f->cur != SIM_NONE || f->head == SIM_NONE ||
		    (s->window > 0 && f->inflight >= s->window))
			continue;
		x = f->head;
		f->head = s->x_next[x];
		if (f->head == SIM_NONE)
			f->tail = SIM_NONE;
		f->cur = x;
		f->rem = s->x_bytes[x];
		f->inflight++;
		/* Insert into the link's active set, kept sorted by cap (uncapped last). */
		d = &s->dl[f->dl];
		sim_link_advance(s, d);
		for (j = d->n_active; j > 0 && s->flows[d->active[j - 1]].cap > f->cap; j--)
			d->active[j] = d->active[j - 1];
		d->active[j] = fi;
		d->n_active++;
		sim_link_dirty(s, f->dl);
	}
	s->n_dirty_f = 0;
}

/*
 * Water-filling on one link: with the active flows sorted by cap, a flow whose cap is
 * below the equal share of what is left gets its cap; from the first flow that does not,
 * all the others share the rest equally (their caps are all larger).
 */
static void
sim_link_allocate(struct sim *s, struct sim_dlink *d)
{
	double left = d->cap;
	uint32_t i;

	for (i = 0; i < d->n_active; i++) {
		struct sim_flow *f = &s->flows[d->active[i]];

		if (!(f->cap < left / (d->n_active - i)))
			break;
		f->rate = f->cap;
		left -= f->cap;
	}
	for (uint32_t k = i; k < d->n_active; k++)
		s->flows[d->active[k]].rate = left / (d->n_active - i);
}

/* Recompute the allocation of every touched link and schedule its next completion. */
static int
sim_update_links(struct sim *s)
{
	for (uint32_t i = 0; i < s->n_dirty_l; i++) {
		uint32_t di = s->dirty_l[i];
		struct sim_dlink *d = &s->dl[di];
		double first = INFINITY;
		int rc;

		d->dirty = false;
		sim_link_advance(s, d);
		d->ver++;
		if (d->n_active == 0)
			continue;
		sim_link_allocate(s, d);
		for (uint32_t k = 0; k < d->n_active; k++) {
			struct sim_flow *f = &s->flows[d->active[k]];
			double t = f->rem > 0 ? f->rem / f->rate : 0;

			if (t < first) {
				first = t;
				d->next = d->active[k];
			}
		}
		rc = sim_push(s, s->now + first, SIM_EV_LINK | di, d->ver);
		if (rc != 0)
			return rc;
	}
	s->n_dirty_l = 0;
	return 0;
}

/* Successor lists from the edge list (counting sort), scratch arrays, active slices. */
static int
sim_prepare(struct sim *s)
{
	size_t off = 0;

	s->x_succ_off = calloc((size_t)s->n_x + 1, sizeof(*s->x_succ_off));
	s->x_succ = malloc(sizeof(*s->x_succ) * (s->n_e + 1));
	s->x_next = malloc(sizeof(*s->x_next) * ((size_t)s->n_x + 1));
	s->dirty_f = malloc(sizeof(*s->dirty_f) * ((size_t)s->n_flows + 1));
	s->dirty_l = malloc(sizeof(*s->dirty_l) * ((size_t)s->n_dl + 1));
	s->act_pool = malloc(sizeof(*s->act_pool) * ((size_t)s->n_flows + 1));
	if (s->x_succ_off == NULL || s->x_succ == NULL || s->x_next == NULL || s->dirty_f == NULL ||
	    s->dirty_l == NULL || s->act_pool == NULL)
		return -ENOMEM;
	for (size_t e = 0; e < s->n_e; e++)
		s->x_succ_off[s->e_from[e] + 1]++;
	for (uint32_t x = 0; x < s->n_x; x++)
		s->x_succ_off[x + 1] += s->x_succ_off[x];
	/* Fill in edge order, using x_next as the per-transfer cursor. */
	for (uint32_t x = 0; x < s->n_x; x++)
		s->x_next[x] = s->x_succ_off[x];
	for (size_t e = 0; e < s->n_e; e++)
		s->x_succ[s->x_next[s->e_from[e]]++] = s->e_to[e];
	free(s->e_from);
	free(s->e_to);
	s->e_from = s->e_to = NULL;
	for (uint32_t d = 0; d < s->n_dl; d++) {
		s->dl[d].active = &s->act_pool[off];
		off += s->dl[d].n_flows;
	}
	return 0;
}

int
sim_run(struct sim *s, struct sim_result *res)
{
	int rc = sim_prepare(s);

	if (rc != 0)
		return rc;
	/* Time 0: link transfers without dependencies queue, then joins without
	 * dependencies pass through (which may release more link transfers). */
	for (uint32_t x = 0; x < s->n_x; x++) {
		if (s->x_deps[x] != 0 || s->x_flow[x] == SIM_NONE)
			continue;
		rc = sim_ready_add(s, x);
		if (rc != 0)
			return rc;
	}
	for (uint32_t x = 0; x < s->n_x; x++) {
		if (s->x_deps[x] != 0 || s->x_flow[x] != SIM_NONE)
			continue;
		rc = sim_arrive(s, x);
		if (rc != 0)
			return rc;
	}
	for (;;) {
		sim_enqueue_ready(s);
		sim_start_flows(s);
		rc = sim_update_links(s);
		if (rc != 0)
			return rc;
		if (eventq_empty(&s->events))
			break;
		s->now = eventq_next_t(&s->events);
		while (!eventq_empty(&s->events) && eventq_next_t(&s->events) <= s->now) {
			struct eventq_ev ev = eventq_pop(&s->events);

			if (ev.a & SIM_EV_LINK) {
				uint32_t d = ev.a & ~SIM_EV_LINK;

				if (ev.ver != s->dl[d].ver)
					continue; /* stale: the allocation changed since */
				rc = sim_link_event(s, d);
			} else {
				rc = sim_arrive(s, ev.a);
			}
			if (rc != 0)
				return rc;
			s->n_events++;
		}
	}
	/* Only a dependency cycle leaves transfers behind; the builders make none. */
	if (s->n_arrived != s->n_x)
		return -EDEADLK;
	res->seconds = s->last_arrival;
	res->transfers = s->n_link_x;
	res->events = s->n_events;
	return 0;
}
