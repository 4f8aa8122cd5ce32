/* SPDX-License-Identifier: BSD-3-Clause
 *
 * The links of CREW's training-progress simulator (crew_simlink.h): a first-come
 * first-served queue per directed link at its full bandwidth, whose head restarts when it
 * changes or is resized, and the choice of a two-hop path around a failed link. Runs on
 * the thread of the simulation it serves.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>

#include "crew_simlink.h"
#include "crew_util.h"

static double
bps(const struct crew_sim *s, int l)
{
	return s->g[l] * GBPS_TO_BPS;
}

static int
link_of(const struct crew_sim *s, int id)
{
	return s->x[id].src * s->n + s->x[id].dst;
}

void
crew_link_start(struct crew_sim *s, int l)
{
	int h = s->head[l];

	s->ver[l]++;
	if (h < 0)
		return;
	s->start[l] = s->now;
	ev_push(s, s->now + s->x[h].left / bps(s, l), EV_LINK, l, 0, s->ver[l]);
}

static void
link_push(struct crew_sim *s, int id)
{
	int l = link_of(s, id);

	s->x[id].next = -1;
	s->queued[l] += s->x[id].left;
	if (s->tail[l] < 0) {
		s->head[l] = s->tail[l] = id;
		crew_link_start(s, l);
	} else {
		s->x[s->tail[l]].next = id;
		s->tail[l] = id;
	}
}

double
crew_link_left(const struct crew_sim *s, int id)
{
	int l = link_of(s, id);

	if (s->head[l] != id)
		return s->x[id].left;
	return fmax(0, s->x[id].left - (s->now - s->start[l]) * bps(s, l));
}

void
crew_link_remove(struct crew_sim *s, int id)
{
	int l = link_of(s, id);

	s->queued[l] = fmax(0, s->queued[l] - s->x[id].left);
	s->x[id].state = X_GONE;
	if (s->head[l] == id) {
		s->head[l] = s->x[id].next;
		if (s->head[l] < 0)
			s->tail[l] = -1;
		crew_link_start(s, l);
		return;
	}
	for (int p = s->head[l]; p >= 0; p = s->x[p].next)
		if (s->x[p].next == id) {
			s->x[p].next = s->x[id].next;
			if (s->tail[l] == id)
				s->tail[l] = p;
			return;
		}
}

void
crew_link_resize(struct crew_sim *s, int id, double left)
{
	int l = link_of(s, id);

	s->queued[l] += left - s->x[id].left;
	s->x[id].left = left;
	s->x[id].total = left;
	if (s->head[l] == id)
		crew_link_start(s, l);
}

int
crew_link_send(struct crew_sim *s, int kind, int src, int fin, double bytes, int op, int chunk,
	       int k)
{
	int n = s->n, hop = fin, id;

	if (s->g[src * n + fin] <= 0) {
		double best = INFINITY;

		hop = -1;
		for (int r = 0; r < n; r++) {
			int l1 = src * n + r, l2 = r * n + fin;
			double c;

			if (r == src || r == fin || s->g[l1] <= 0 || s->g[l2] <= 0)
				continue;
			c = (s->queued[l1] + bytes) / bps(s, l1) +
			    (s->queued[l2] + bytes) / bps(s, l2);
			if (c < best) {
				best = c;
				hop = r;
			}
		}
		if (hop < 0)
			return -1;
		s->r->rerouted++;
	}
	if (s->nx == s->capx) {
		size_t cap = s->capx ? s->capx * 2 : 4096;
		struct xfer *x = cap > SIM_MAX_XFERS ? NULL : realloc(s->x, sizeof(*x) * cap);

		if (x == NULL) {
			s->err = cap > SIM_MAX_XFERS ? -E2BIG : -ENOMEM;
			return -1;
		}
		s->x = x;
		s->capx = cap;
	}
	id = (int)s->nx++;
	s->x[id] = (struct xfer){.left = bytes,
				 .total = bytes,
				 .src = src,
				 .dst = hop,
				 .fin = fin,
				 .op = op,
				 .chunk = chunk,
				 .k = k,
				 .next = -1,
				 .kind = (unsigned char)kind,
				 .state = X_QUEUED};
	s->r->transfers++;
	link_push(s, id);
	return id;
}
