/* SPDX-License-Identifier: BSD-3-Clause
 *
 * AllReduce simulator: a fluid, event-driven, max-min fair model of chunked transfers.
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
#include "graph.h"
#include "sim.h"

#define SIM_NONE UINT32_MAX             /* no transfer / no flow */
#define SIM_EV_LINK 0x80000000u         /* event id flag: link completion, not arrival */

/* Two transmissions whose completions differ by less than this fraction of the current
 * time are treated as simultaneous (rounding of the fluid arithmetic). */
#define SIM_REL_EPS 1e-12

struct sim_flow {
	uint32_t dl;            /* directed link */
	uint32_t head, tail;    /* FIFO of ready transfers, linked through sim.x_next */
	uint32_t cur;           /* transfer being transmitted, or SIM_NONE */
	uint32_t inflight;      /* transfers transmitting or propagating */
	bool dirty;             /* on sim.dirty_f: may be able to start a transfer */
	double cap;             /* bytes/s, INFINITY if not paced */
	double rate;            /* current allocation while transmitting, bytes/s */
	double rem;             /* bytes of cur left to transmit */
};

struct sim_dlink {
	double cap;             /* bytes/s */
	double delay;           /* latency + alpha, s */
	double last;            /* time the remaining bytes of its flows were computed at */
	uint32_t *active;       /* transmitting flows, by cap ascending (slice of act_pool) */
	uint32_t n_active;
	uint32_t n_flows;       /* flows on this link: size of the active slice */
	uint32_t ver;           /* bumped on every allocation change (wraps harmlessly) */
	uint32_t next;          /* flow finishing first under the current allocation */
	bool dirty;             /* on sim.dirty_l: allocation must be recomputed */
};

struct sim {
	const struct topo *t;
	double alpha_s;
	uint32_t window;

	uint32_t n_dl;          /* 2 * n_links: d = 2 * link + (from == links[link].a ? 0 : 1) */
	struct sim_dlink *dl;

	uint32_t n_flows, cap_flows;
	struct sim_flow *flows;

	/* Transfers, structure of arrays. Joins have x_flow == SIM_NONE. */
	uint32_t n_x, cap_x;
	uint64_t n_link_x;      /* transfers that are not joins */
	double *x_bytes;
	uint32_t *x_flow;
	uint32_t *x_deps;       /* unmet dependencies */
	uint32_t *x_next;       /* next in its flow's FIFO */
	uint32_t *x_succ_off;   /* successors of x: x_succ[x_succ_off[x] .. x_succ_off[x+1]) */
	uint32_t *x_succ;

	/* Dependency edges while building (turned into x_succ_off / x_succ by sim_run). */
	size_t n_e, cap_e;
	uint32_t *e_from, *e_to;

	/* Event loop state. Events: a = transfer id, or SIM_EV_LINK | directed link, also
	 * the key (ties in time: arrivals by transfer id, then links by id); ver = the
	 * link version a completion was computed for. */
	struct eventq events;
	uint32_t *ready;        /* transfers that became ready at `now` */
	size_t n_ready, cap_ready;
	uint32_t *dirty_f, n_dirty_f;
	uint32_t *dirty_l, n_dirty_l;
	uint32_t *act_pool;
	double now, last_arrival;
	uint64_t n_events, n_arrived;
};

/* ------------------------------------------------------------------------------------ */
/* Building                                                                              */

static int
sim_check_params(const struct sim_params *sp)
{
	if (sp == NULL || !(isfinite(sp->alpha_s) && sp->alpha_s >= 0) || sp->window < 0)
		return -EINVAL;
	return 0;
}

static int
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

static void
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

/* Next capacity for a growing array of `cap` entries that must hold `need`. */
static size_t
sim_grow_to(size_t cap, size_t need)
{
	size_t n = cap > 0 ? cap : 256;

	while (n < need)
		n *= 2;
	return n;
}

/*
 * Grow the array that the pointer at pp points to (elements of `size` bytes) to n
 * elements: 0, or -ENOMEM with the array as it was. pp is the address of any object
 * pointer (its value is copied in and out as bytes, so its type does not matter).
 */
static int
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

/**
 * Add a flow on the link u -> v with a rate cap in bytes/s (INFINITY: none).
 * Returns the flow id, or -EINVAL if u and v are not adjacent, or -ENOMEM.
 */
static int
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

/**
 * Add a transfer of `bytes` on flow `flow`, or a join if flow is SIM_NONE.
 * Its id goes to *id. Returns 0, -E2BIG or -ENOMEM.
 */
static int
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

/* Transfer `succ` cannot start before transfer `pred` has arrived. Returns 0 or -ENOMEM. */
static int
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

/**
 * Add `len` link transfers of `bytes` along flows[0..len-1], each depending on the
 * previous one, the first on `pred` (SIM_NONE: none). The last id goes to *last.
 */
static int
sim_chain_add(struct sim *s, const int *flows, int len, double bytes, uint32_t pred,
	      uint32_t *last)
{
	for (int h = 0; h < len; h++) {
		uint32_t x;
		int rc = sim_xfer_add(s, (uint32_t)flows[h], bytes, &x);

		if (rc == 0 && pred != SIM_NONE)
			rc = sim_dep_add(s, pred, x);
		if (rc != 0)
			return rc;
		pred = x;
	}
	*last = pred;
	return 0;
}

/**
 * Number of chunks of at most chunk_bytes carrying `bytes` (a double: shares and ring
 * segments are fractional). A last chunk smaller than a billionth of a chunk is
 * rounding noise and is merged into the previous one.
 */
static double
sim_n_chunks(double bytes, uint64_t chunk_bytes)
{
	double n;

	if (!(bytes > 0))
		return 0;
	n = ceil(bytes / (double)chunk_bytes - 1e-9);
	return n < 1 ? 1 : n;
}

/* Size of chunk j of n carrying `bytes`. */
static double
sim_chunk_size(double bytes, uint64_t chunk_bytes, uint64_t j, uint64_t n)
{
	return j + 1 < n ? (double)chunk_bytes : bytes - (double)(n - 1) * (double)chunk_bytes;
}

/* ------------------------------------------------------------------------------------ */
/* Event loop                                                                            */

/* Queue the arrival of transfer id, or (SIM_EV_LINK | d) the completion on link d. */
static int
sim_push(struct sim *s, double t, uint32_t id, uint32_t ver)
{
	struct eventq_ev ev = { .t = t, .key = id, .a = id, .ver = ver };

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
	if (s->x_succ_off == NULL || s->x_succ == NULL || s->x_next == NULL ||
	    s->dirty_f == NULL || s->dirty_l == NULL || s->act_pool == NULL)
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

/* Run the compiled schedule to completion and fill *res. */
static int
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

/* ------------------------------------------------------------------------------------ */
/* Tree plans                                                                            */

/*
 * Structural checks sim_plan() needs: root and parent[] consistent, child-parent pairs
 * adjacent, no cycles, share in [0, 1], chunk_bytes > 0, a positive rate if paced.
 * Capacities, the share sum and worker coverage are plan_validate()'s business: the
 * simulator runs over-committed or partial plans as they are. state[] has n_nodes entries.
 */
static int
sim_check_tree(const struct topo *t, const struct plan_tree *tr, bool pace, uint8_t *state,
	       int *path)
{
	int n = t->n_nodes;

	if (tr->parent == NULL || tr->root < 0 || tr->root >= n ||
	    tr->parent[tr->root] != PLAN_ROOT || tr->chunk_bytes == 0 ||
	    !(tr->share >= 0 && tr->share <= 1))
		return -EINVAL;
	if (pace && tr->share > 0 && !(isfinite(tr->rate_gbps) && tr->rate_gbps > 0))
		return -EINVAL;
	/* state: 0 unseen, 1 on the current walk, 2 known to reach the root. */
	memset(state, 0, (size_t)n);
	state[tr->root] = 2;
	for (int v = 0; v < n; v++) {
		int len = 0, u = v;

		if (tr->parent[v] == PLAN_ABSENT)
			continue;
		while (state[u] == 0) {
			int p = tr->parent[u];

			if (p < 0 || p >= n || topo_link_between(t, u, p) < 0)
				return -EINVAL; /* a second root, or a bad parent */
			state[u] = 1;
			path[len++] = u;
			u = p;
		}
		if (state[u] == 1)
			return -EINVAL; /* cycle */
		while (len > 0)
			state[path[--len]] = 2;
	}
	return 0;
}

/* Transfers of tree tr for a tensor of `bytes`: two per edge per chunk. */
static double
sim_tree_transfers(const struct topo *t, const struct plan_tree *tr, double bytes)
{
	int edges = 0;

	for (int v = 0; v < t->n_nodes; v++)
		if (tr->parent[v] >= 0)
			edges++;
	return 2.0 * edges * sim_n_chunks(tr->share * bytes, tr->chunk_bytes);
}

/* Compile tree tr into s. up[] and dn[] are n_nodes-entry scratch arrays. */
static int
sim_build_tree(struct sim *s, const struct plan_tree *tr, bool pace, double bytes,
	       uint32_t *up, uint32_t *dn)
{
	const struct topo *t = s->t;
	double tree_bytes = tr->share * bytes, cap = pace ? tr->rate_gbps * 1e9 / 8 : INFINITY;
	uint64_t n_chunks = (uint64_t)sim_n_chunks(tree_bytes, tr->chunk_bytes);
	int *f_up, *f_dn, rc = 0;

	if (n_chunks == 0)
		return 0;
	f_up = malloc(sizeof(*f_up) * (size_t)t->n_nodes);
	f_dn = malloc(sizeof(*f_dn) * (size_t)t->n_nodes);
	if (f_up == NULL || f_dn == NULL) {
		rc = -ENOMEM;
		goto out;
	}
	/* Two flows per tree edge: reduce (v -> parent) and broadcast (parent -> v). */
	for (int v = 0; v < t->n_nodes; v++) {
		if (tr->parent[v] < 0)
			continue;
		f_up[v] = sim_flow_add(s, v, tr->parent[v], cap);
		if (f_up[v] < 0) {
			rc = f_up[v];
			goto out;
		}
		f_dn[v] = sim_flow_add(s, tr->parent[v], v, cap);
		if (f_dn[v] < 0) {
			rc = f_dn[v];
			goto out;
		}
	}
	/* Chunk-major numbering keeps each flow's transfers in chunk order. */
	for (uint64_t j = 0; j < n_chunks; j++) {
		double b = sim_chunk_size(tree_bytes, tr->chunk_bytes, j, n_chunks);
		uint32_t join;

		for (int v = 0; v < t->n_nodes; v++) {
			if (tr->parent[v] < 0)
				continue;
			rc = sim_xfer_add(s, (uint32_t)f_up[v], b, &up[v]);
			if (rc != 0)
				goto out;
		}
		/* The root holds chunk j reduced once it arrived from all of its children. */
		rc = sim_xfer_add(s, SIM_NONE, 0, &join);
		if (rc != 0)
			goto out;
		for (int v = 0; v < t->n_nodes; v++) {
			int p = tr->parent[v];

			if (p < 0)
				continue;
			rc = sim_dep_add(s, up[v], p == tr->root ? join : up[p]);
			if (rc != 0)
				goto out;
		}
		for (int v = 0; v < t->n_nodes; v++) {
			if (tr->parent[v] < 0)
				continue;
			rc = sim_xfer_add(s, (uint32_t)f_dn[v], b, &dn[v]);
			if (rc != 0)
				goto out;
		}
		for (int v = 0; v < t->n_nodes; v++) {
			int p = tr->parent[v];

			if (p < 0)
				continue;
			rc = sim_dep_add(s, p == tr->root ? join : dn[p], dn[v]);
			if (rc != 0)
				goto out;
		}
	}
out:
	free(f_up);
	free(f_dn);
	return rc;
}

int
sim_plan(const struct topo *t, const struct plan *p, uint64_t bytes,
	 const struct sim_params *sp, struct sim_result *res)
{
	uint32_t *up = NULL, *dn = NULL;
	uint8_t *state = NULL;
	int *path = NULL;
	double total = 0;
	struct sim s;
	int rc;

	if (t == NULL || p == NULL || res == NULL || sim_check_params(sp) != 0 ||
	    p->n_nodes != t->n_nodes || p->n_trees < 0 || (p->n_trees > 0 && p->trees == NULL))
		return -EINVAL;
	rc = sim_init(&s, t, sp);
	if (rc != 0)
		goto out;
	up = malloc(sizeof(*up) * ((size_t)t->n_nodes + 1));
	dn = malloc(sizeof(*dn) * ((size_t)t->n_nodes + 1));
	state = malloc((size_t)t->n_nodes + 1);
	path = malloc(sizeof(*path) * ((size_t)t->n_nodes + 1));
	if (up == NULL || dn == NULL || state == NULL || path == NULL) {
		rc = -ENOMEM;
		goto out;
	}
	for (int i = 0; i < p->n_trees; i++) {
		rc = sim_check_tree(t, &p->trees[i], sp->pace, state, path);
		if (rc != 0)
			goto out;
		total += sim_tree_transfers(t, &p->trees[i], (double)bytes);
	}
	if (total > SIM_MAX_TRANSFERS) {
		rc = -E2BIG;
		goto out;
	}
	for (int i = 0; i < p->n_trees; i++) {
		rc = sim_build_tree(&s, &p->trees[i], sp->pace, (double)bytes, up, dn);
		if (rc != 0)
			goto out;
	}
	rc = sim_run(&s, res);
out:
	free(up);
	free(dn);
	free(state);
	free(path);
	sim_fini(&s);
	return rc;
}

/* ------------------------------------------------------------------------------------ */
/* Routes (ring, parameter server)                                                       */

/* A set of node paths, each with the flows of its hops. */
struct sim_routes {
	int n;                  /* paths */
	size_t *off;            /* path r: node[off[r] .. off[r+1]), n + 1 entries */
	int *node;
	int *flow;              /* flow[off[r] + h]: hop h of path r (last entry unused) */
	size_t len, cap;
};

static void
sim_routes_fini(struct sim_routes *r)
{
	free(r->off);
	free(r->node);
	free(r->flow);
}

static int
sim_routes_init(struct sim_routes *r, int n_paths)
{
	memset(r, 0, sizeof(*r));
	r->off = calloc((size_t)n_paths + 1, sizeof(*r->off));
	return r->off == NULL ? -ENOMEM : 0;
}

/* Append path[0..len) as the next path. */
static int
sim_routes_add(struct sim_routes *r, const int *path, int len)
{
	if (r->len + (size_t)len > r->cap) {
		size_t n = sim_grow_to(r->cap, r->len + (size_t)len);

		if (sim_regrow(&r->node, n, sizeof(*r->node)) != 0 ||
		    sim_regrow(&r->flow, n, sizeof(*r->flow)) != 0)
			return -ENOMEM;
		r->cap = n;
	}
	memcpy(&r->node[r->len], path, sizeof(*path) * (size_t)len);
	r->len += (size_t)len;
	r->off[++r->n] = r->len;
	return 0;
}

static int
sim_route_hops(const struct sim_routes *r, int i)
{
	return (int)(r->off[i + 1] - r->off[i]) - 1;
}

/* ------------------------------------------------------------------------------------ */
/* Ring                                                                                  */

/*
 * One ring direction over ord[0..m) carrying `bytes` (the share of the tensor on this
 * ring): 2(m-1) steps; at step s member i sends its segment, in chunks, to member i+1 over
 * route i. Chunk j of step s > 0 leaves member i once chunk j of step s-1 arrived from
 * member i-1. All transfers of the direction on one directed link share one flow.
 */
static int
sim_build_ring(struct sim *s, const struct sim_routes *rt, int m, double bytes,
	       uint64_t chunk_bytes, int *dl_flow)
{
	double seg = bytes / m;
	uint64_t n_chunks = (uint64_t)sim_n_chunks(seg, chunk_bytes);
	uint32_t *prev = NULL, *cur = NULL;
	int rc = 0;

	if (n_chunks == 0)
		return 0;
	for (uint32_t d = 0; d < s->n_dl; d++)
		dl_flow[d] = -1;
	for (int i = 0; i < m; i++)
		for (size_t k = rt->off[i]; k + 1 < rt->off[i + 1]; k++) {
			int u = rt->node[k], v = rt->node[k + 1], l = topo_link_between(s->t, u, v);
			uint32_t d = 2 * (uint32_t)l + (u == s->t->links[l].a ? 0 : 1);

			if (dl_flow[d] < 0) {
				dl_flow[d] = sim_flow_add(s, u, v, INFINITY);
				if (dl_flow[d] < 0)
					return dl_flow[d];
			}
			rt->flow[k] = dl_flow[d];
		}
	prev = malloc(sizeof(*prev) * (size_t)m * n_chunks);
	cur = malloc(sizeof(*cur) * (size_t)m * n_chunks);
	if (prev == NULL || cur == NULL) {
		rc = -ENOMEM;
		goto out;
	}
	for (int step = 0; step < 2 * (m - 1); step++) {
		uint32_t *tmp;

		for (int i = 0; i < m; i++) {
			int from = (i + m - 1) % m;

			for (uint64_t j = 0; j < n_chunks; j++) {
				uint32_t pred = step > 0 ? prev[(size_t)from * n_chunks + j] : SIM_NONE;

				rc = sim_chain_add(s, &rt->flow[rt->off[i]], sim_route_hops(rt, i),
						   sim_chunk_size(seg, chunk_bytes, j, n_chunks), pred,
						   &cur[(size_t)i * n_chunks + j]);
				if (rc != 0)
					goto out;
			}
		}
		tmp = prev;
		prev = cur;
		cur = tmp;
	}
out:
	free(prev);
	free(cur);
	return rc;
}

/* Path from u to v: the direct link if there is one, else graph_route(). */
static int
sim_ring_path(const struct topo *t, int u, int v, int *path)
{
	if (topo_link_between(t, u, v) >= 0) {
		path[0] = u;
		path[1] = v;
		return 2;
	}
	return graph_route(t, u, v, path);
}

int
sim_ring(const struct topo *t, const int *order, int m, double fwd_fraction,
	 uint64_t bytes, uint64_t chunk_bytes, const struct sim_params *sp,
	 struct sim_result *res)
{
	struct sim_routes rt[2];
	double frac[2] = { fwd_fraction, 1 - fwd_fraction }, total = 0;
	int *path = NULL, *dl_flow = NULL, *ord = NULL;
	uint8_t *seen = NULL;
	struct sim s;
	int rc;

	if (t == NULL || order == NULL || res == NULL || sim_check_params(sp) != 0 || m < 1 ||
	    m > t->n_nodes || chunk_bytes == 0 || !(fwd_fraction >= 0 && fwd_fraction <= 1))
		return -EINVAL;
	memset(rt, 0, sizeof(rt));
	rc = sim_init(&s, t, sp);
	if (rc != 0)
		goto out;
	seen = calloc((size_t)t->n_nodes, 1);
	path = malloc(sizeof(*path) * (size_t)t->n_nodes);
	ord = malloc(sizeof(*ord) * (size_t)m);
	dl_flow = malloc(sizeof(*dl_flow) * ((size_t)s.n_dl + 1));
	if (seen == NULL || path == NULL || ord == NULL || dl_flow == NULL) {
		rc = -ENOMEM;
		goto out;
	}
	for (int i = 0; i < m; i++) {
		if (order[i] < 0 || order[i] >= t->n_nodes || seen[order[i]]) {
			rc = -EINVAL;
			goto out;
		}
		seen[order[i]] = 1;
	}
	if (m == 1)
		goto run; /* nothing to exchange */
	/* Direction 0 follows order[], direction 1 the reversed ring. */
	for (int dir = 0; dir < 2; dir++) {
		rc = sim_routes_init(&rt[dir], m);
		if (rc != 0)
			goto out;
		if (!(frac[dir] > 0))
			continue;
		for (int i = 0; i < m; i++)
			ord[i] = dir == 0 ? order[i] : order[m - 1 - i];
		for (int i = 0; i < m; i++) {
			int len = sim_ring_path(t, ord[i], ord[(i + 1) % m], path);

			if (len < 0) {
				rc = len;
				goto out;
			}
			rc = sim_routes_add(&rt[dir], path, len);
			if (rc != 0)
				goto out;
		}
		total += 2.0 * (m - 1) * (double)(rt[dir].len - (size_t)m) *
			 sim_n_chunks(frac[dir] * (double)bytes / m, chunk_bytes);
	}
	if (total > SIM_MAX_TRANSFERS) {
		rc = -E2BIG;
		goto out;
	}
	for (int dir = 0; dir < 2; dir++) {
		if (!(frac[dir] > 0))
			continue;
		rc = sim_build_ring(&s, &rt[dir], m, frac[dir] * (double)bytes, chunk_bytes,
				    dl_flow);
		if (rc != 0)
			goto out;
	}
run:
	rc = sim_run(&s, res);
out:
	sim_routes_fini(&rt[0]);
	sim_routes_fini(&rt[1]);
	free(seen);
	free(path);
	free(ord);
	free(dl_flow);
	sim_fini(&s);
	return rc;
}

/* ------------------------------------------------------------------------------------ */
/* Parameter server                                                                      */

int
sim_ps(const struct topo *t, int server, uint64_t bytes, uint64_t chunk_bytes,
       const struct sim_params *sp, struct sim_result *res)
{
	struct sim_routes up, down;
	uint32_t *join = NULL;
	int *path = NULL, n_workers = 0;
	uint64_t n_chunks;
	struct sim s;
	int rc;

	if (t == NULL || res == NULL || sim_check_params(sp) != 0 || server < 0 ||
	    server >= t->n_nodes || chunk_bytes == 0)
		return -EINVAL;
	memset(&up, 0, sizeof(up));
	memset(&down, 0, sizeof(down));
	rc = sim_init(&s, t, sp);
	if (rc != 0)
		goto out;
	path = malloc(sizeof(*path) * (size_t)t->n_nodes);
	if (path == NULL) {
		rc = -ENOMEM;
		goto out;
	}
	rc = sim_routes_init(&up, t->n_nodes);
	if (rc == 0)
		rc = sim_routes_init(&down, t->n_nodes);
	if (rc != 0)
		goto out;
	/* Routes of the worker sites: to the server, and the same path reversed. */
	for (int w = 0; w < t->n_nodes; w++) {
		int len;

		if (w == server || t->nodes[w].workers == 0)
			continue;
		len = graph_route(t, w, server, path);
		if (len < 0) {
			rc = len;
			goto out;
		}
		rc = sim_routes_add(&up, path, len);
		for (int i = 0; i < len / 2; i++) {
			int x = path[i];

			path[i] = path[len - 1 - i];
			path[len - 1 - i] = x;
		}
		if (rc == 0)
			rc = sim_routes_add(&down, path, len);
		if (rc != 0)
			goto out;
		n_workers++;
	}
	n_chunks = (uint64_t)sim_n_chunks(n_workers > 0 ? (double)bytes : 0, chunk_bytes);
	if (2.0 * (double)(up.len - (size_t)n_workers) * (double)n_chunks > SIM_MAX_TRANSFERS) {
		rc = -E2BIG;
		goto out;
	}
	/* One flow per hop of every route: routes share links max-min fairly. */
	for (int r = 0; r < n_workers; r++)
		for (size_t k = up.off[r]; k + 1 < up.off[r + 1]; k++) {
			up.flow[k] = sim_flow_add(&s, up.node[k], up.node[k + 1], INFINITY);
			down.flow[k] = sim_flow_add(&s, down.node[k], down.node[k + 1], INFINITY);
			if (up.flow[k] < 0 || down.flow[k] < 0) {
				rc = up.flow[k] < 0 ? up.flow[k] : down.flow[k];
				goto out;
			}
		}
	join = malloc(sizeof(*join) * (n_chunks + 1));
	if (join == NULL) {
		rc = -ENOMEM;
		goto out;
	}
	/* The server sums chunk j once it arrived from every worker site. */
	for (uint64_t j = 0; j < n_chunks; j++) {
		rc = sim_xfer_add(&s, SIM_NONE, 0, &join[j]);
		if (rc != 0)
			goto out;
	}
	for (int r = 0; r < n_workers; r++)
		for (uint64_t j = 0; j < n_chunks; j++) {
			double b = sim_chunk_size((double)bytes, chunk_bytes, j, n_chunks);
			uint32_t last;

			rc = sim_chain_add(&s, &up.flow[up.off[r]], sim_route_hops(&up, r), b,
					   SIM_NONE, &last);
			if (rc == 0)
				rc = sim_dep_add(&s, last, join[j]);
			if (rc != 0)
				goto out;
		}
	for (int r = 0; r < n_workers; r++)
		for (uint64_t j = 0; j < n_chunks; j++) {
			double b = sim_chunk_size((double)bytes, chunk_bytes, j, n_chunks);
			uint32_t last;

			rc = sim_chain_add(&s, &down.flow[down.off[r]], sim_route_hops(&down, r), b,
					   join[j], &last);
			if (rc != 0)
				goto out;
		}
	rc = sim_run(&s, res);
out:
	sim_routes_fini(&up);
	sim_routes_fini(&down);
	free(join);
	free(path);
	sim_fini(&s);
	return rc;
}
