/* SPDX-License-Identifier: BSD-3-Clause
 * Baselines: best ring (local search), max-bottleneck tree, parameter server.
 */
#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "baselines.h"
#include "clock.h"
#include "graph.h"
#include "mtree.h"
#include "packing.h"

/* Directed link id: 2 * link + (0 for a -> b, 1 for b -> a). */
static int
dlink(const struct topo *t, int from, int to)
{
	int l = topo_link_between(t, from, to);

	return 2 * l + (t->links[l].a == from ? 0 : 1);
}

static double
dlink_gbps(const struct topo *t, int d)
{
	const struct topo_link *lk = &t->links[d / 2];

	return d % 2 == 0 ? lk->gbps_ab : lk->gbps_ba;
}

/* All-pairs routes: for every (u, v) the directed links of the shortest path u -> v. */
struct routes {
	int n;
	int *off;    /* (n * n + 1) offsets into hops */
	int *hops;   /* directed link ids */
	double *lat; /* n * n route latencies */
};

static void
routes_fini(struct routes *r)
{
	free(r->off);
	free(r->hops);
	free(r->lat);
}

static int
routes_init(const struct topo *t, struct routes *r)
{
	size_t n = (size_t)t->n_nodes, cap = n * n * 4 + 16, len = 0;
	double *dist = malloc(sizeof(double) * n);
	int *pred = malloc(sizeof(int) * n), *tmp = malloc(sizeof(int) * n);
	int rc = -ENOMEM;

	memset(r, 0, sizeof(*r));
	r->n = (int)n;
	r->off = malloc(sizeof(int) * (n * n + 1));
	r->hops = malloc(sizeof(int) * cap);
	r->lat = malloc(sizeof(double) * n * n);
	if (dist == NULL || pred == NULL || tmp == NULL || r->off == NULL || r->hops == NULL ||
	    r->lat == NULL)
		goto out;
	for (size_t u = 0; u < n; u++) {
		rc = graph_shortest_paths(t, (int)u, dist, pred);
		if (rc != 0)
			goto out;
		for (size_t v = 0; v < n; v++) {
			int k = 0;

			r->off[u * n + v] = (int)len;
			r->lat[u * n + v] = dist[v];
			if (!isfinite(dist[v]))
				continue;
			for (int x = (int)v; pred[x] >= 0; x = pred[x])
				tmp[k++] = x;
			if (len + (size_t)k > cap) {
				int *nh = realloc(r->hops, sizeof(int) * (cap * 2 + (size_t)k));

				rc = -ENOMEM;
				if (nh == NULL)
					goto out;
				r->hops = nh;
				cap = cap * 2 + (size_t)k;
			}
			/* tmp holds v, ..., first hop after u (reversed) */
			for (int i = k - 1; i >= 0; i--) {
				int from = i == k - 1 ? (int)u : tmp[i + 1];

				r->hops[len++] = dlink(t, from, tmp[i]);
			}
		}
	}
	r->off[n * n] = (int)len;
	rc = 0;
out:
	free(dist);
	free(pred);
	free(tmp);
	if (rc != 0)
		routes_fini(r);
	return rc;
}

struct ring_eval {
	double fwd, rev; /* bottleneck rate of each ring direction alone */
	double rate;     /* algorithm bandwidth with the best split */
	double frac;     /* share of the tensor on the forward ring */
	double lat_sum, lat_max;
};

/* Busiest directed link's time per byte when a fraction f of the tensor takes the forward
 * ring and 1 - f the reversed one (which loads d ^ 1 wherever the forward ring loads d). */
static double
ring_busy(const struct topo *t, const int *load, double f)
{
	double worst = 0;

	for (int d = 0; d < 2 * t->n_links; d++) {
		double x = (f * load[d] + (1 - f) * load[d ^ 1]) / dlink_gbps(t, d);

		worst = x > worst ? x : worst;
	}
	return worst;
}

/*
 * Evaluate a ring order against precomputed routes. load[] has 2 * n_links entries.
 * The forward and reversed rings share a directed link wherever a route runs back over
 * a link the forward ring also uses the other way (always for m = 2, and on paths), so
 * the split between them is optimised on the combined load: the busiest link's load is
 * convex and piecewise linear in the split, so a ternary search finds its minimum.
 */
static void
ring_eval(const struct topo *t, const struct routes *r, const int *order, int m, int *load,
	  struct ring_eval *e)
{
	size_t n = (size_t)r->n;
	double lo = 0, hi = 1;

	memset(load, 0, sizeof(int) * 2 * (size_t)t->n_links);
	e->lat_sum = 0;
	e->lat_max = 0;
	for (int i = 0; i < m; i++) {
		size_t u = (size_t)order[i], v = (size_t)order[(i + 1) % m];
		double l = r->lat[u * n + v];

		for (int k = r->off[u * n + v]; k < r->off[u * n + v + 1]; k++)
			load[r->hops[k]]++;
		e->lat_sum += l;
		e->lat_max = l > e->lat_max ? l : e->lat_max;
	}
	if (m < 2) {
		e->fwd = e->rev = e->rate = INFINITY;
		e->frac = 1;
		return;
	}
	e->fwd = 1 / ring_busy(t, load, 1);
	e->rev = 1 / ring_busy(t, load, 0);
	for (int it = 0; it < 40; it++) {
		double a = lo + (hi - lo) / 3, b = hi - (hi - lo) / 3;

		if (ring_busy(t, load, a) <= ring_busy(t, load, b))
			hi = b;
		else
			lo = a;
	}
	e->frac = (lo + hi) / 2;
	e->rate = m / (2.0 * (m - 1)) / ring_busy(t, load, e->frac);
}

void
ring_plan_fini(struct ring_plan *rp)
{
	free(rp->order);
	rp->order = NULL;
}

static void
ring_fill(struct ring_plan *rp, const int *order, int m, const struct ring_eval *e)
{
	memcpy(rp->order, order, sizeof(int) * (size_t)m);
	rp->m = m;
	rp->fwd_gbps = isfinite(e->fwd) ? e->fwd : 0;
	rp->rev_gbps = isfinite(e->rev) ? e->rev : 0;
	rp->fwd_fraction = e->frac;
	rp->rate_gbps = e->rate;
	rp->step_latency_ms = e->lat_max;
}

int
baseline_ring_eval(const struct topo *t, const int *order, int m, struct ring_plan *rp)
{
	struct routes r;
	int *load = malloc(sizeof(int) * 2 * ((size_t)t->n_links + 1)), rc;
	struct ring_eval e;

	memset(rp, 0, sizeof(*rp));
	rp->order = malloc(sizeof(int) * ((size_t)m + 1));
	if (load == NULL || rp->order == NULL) {
		free(load);
		ring_plan_fini(rp);
		return -ENOMEM;
	}
	rc = routes_init(t, &r);
	if (rc == 0) {
		ring_eval(t, &r, order, m, load, &e);
		ring_fill(rp, order, m, &e);
		routes_fini(&r);
	}
	free(load);
	if (rc != 0)
		ring_plan_fini(rp);
	return rc;
}

/* Lexicographic: higher bandwidth (relative tolerance), then lower total latency. */
static bool
ring_better(double bw1, double lat1, double bw2, double lat2)
{
	if (bw1 > bw2 * (1 + 1e-9))
		return true;
	if (bw1 < bw2 * (1 - 1e-9))
		return false;
	return lat1 < lat2 - 1e-9;
}

static void
reverse_seg(int *a, int i, int j)
{
	while (i < j) {
		int x = a[i];

		a[i++] = a[j];
		a[j--] = x;
	}
}

int
baseline_ring(const struct topo *t, double time_limit_s, struct ring_plan *rp)
{
	int m = topo_worker_sites(t), *cur = NULL, *load = NULL, *sites = NULL, rc = -ENOMEM;
	double t0 = clock_now_s();
	struct ring_eval best = {.rate = -1, .lat_sum = INFINITY};
	unsigned long long rng = 0x9e3779b97f4a7c15ull;
	struct routes r = {0};
	int starts;

	memset(rp, 0, sizeof(*rp));
	if (time_limit_s <= 0)
		time_limit_s = 1.0;
	cur = malloc(sizeof(int) * ((size_t)m + 1));
	sites = malloc(sizeof(int) * ((size_t)m + 1));
	load = malloc(sizeof(int) * 2 * ((size_t)t->n_links + 1));
	rp->order = malloc(sizeof(int) * ((size_t)m + 1));
	if (cur == NULL || sites == NULL || load == NULL || rp->order == NULL)
		goto out;
	rc = routes_init(t, &r);
	if (rc != 0)
		goto out;
	for (int v = 0, k = 0; v < t->n_nodes; v++)
		if (t->nodes[v].workers > 0)
			sites[k++] = v;
	starts = m < 8 ? m : 8;
	for (int s = 0; s < starts + 4; s++) {
		struct ring_eval cur_e;
		bool improved = true;

		/* Start: greedy widest next hop from a different site, then random orders. */
		if (s < starts) {
			bool *used = calloc((size_t)t->n_nodes, sizeof(bool));

			if (used == NULL) {
				rc = -ENOMEM;
				goto out;
			}
			cur[0] = sites[s * m / starts];
			used[cur[0]] = true;
			for (int i = 1; i < m; i++) {
				int best = -1;
				double bcap = -1;

				for (int k = 0; k < m; k++) {
					int v = sites[k], l = topo_link_between(t, cur[i - 1], v);
					double c = l >= 0 ? topo_link_duplex_gbps(t, l) : 0;

					if (!used[v] && c > bcap) {
						bcap = c;
						best = v;
					}
				}
				cur[i] = best;
				used[best] = true;
			}
			free(used);
		} else {
			memcpy(cur, sites, sizeof(int) * (size_t)m);
			for (int i = m - 1; i > 0; i--) {
				int j, x;

				rng = rng * 6364136223846793005ull + 1442695040888963407ull;
				j = (int)((rng >> 33) % (unsigned long long)(i + 1));
				x = cur[i];
				cur[i] = cur[j];
				cur[j] = x;
			}
		}
		ring_eval(t, &r, cur, m, load, &cur_e);
		/* 2-opt: reverse cur[i..j] while it improves. */
		while (improved && clock_now_s() - t0 < time_limit_s) {
			improved = false;
			for (int i = 1; i < m - 1 && !improved; i++) {
				for (int j = i + 1; j < m && !improved; j++) {
					struct ring_eval e2;

					reverse_seg(cur, i, j);
					ring_eval(t, &r, cur, m, load, &e2);
					if (ring_better(e2.rate, e2.lat_sum, cur_e.rate,
							cur_e.lat_sum)) {
						cur_e = e2;
						improved = true;
					} else {
						reverse_seg(cur, i, j);
					}
				}
			}
		}
		if (ring_better(cur_e.rate, cur_e.lat_sum, best.rate, best.lat_sum)) {
			best = cur_e;
			memcpy(rp->order, cur, sizeof(int) * (size_t)m);
		}
		if (clock_now_s() - t0 >= time_limit_s)
			break;
	}
	memcpy(cur, rp->order, sizeof(int) * (size_t)m);
	ring_fill(rp, cur, m, &best);
	rc = 0;
out:
	routes_fini(&r);
	free(cur);
	free(sites);
	free(load);
	if (rc != 0)
		ring_plan_fini(rp);
	return rc;
}

struct plan *
baseline_single_tree(const struct topo *t, uint64_t bytes, int window)
{
	double *w = malloc(sizeof(double) * ((size_t)t->n_links + 1)), max_lat = 0;
	int *parent = malloc(sizeof(int) * (size_t)t->n_nodes), root = 0;
	struct plan *p = NULL;

	if (w == NULL || parent == NULL)
		goto out;
	for (int l = 0; l < t->n_links; l++)
		w[l] = -topo_link_duplex_gbps(t, l);
	while (t->nodes[root].workers == 0)
		root++;
	if (graph_min_spanning_tree(t, w, root, parent) != 0)
		goto out;
	graph_prune_relay_leaves(t, parent);
	root = graph_center_root(t, parent);
	p = plan_create("single-tree", t, 1);
	if (p == NULL || plan_add_tree(p, root, packing_tree_bottleneck(t, parent), parent) < 0) {
		plan_free(p);
		p = NULL;
		goto out;
	}
	p->trees[0].share = 1;
	if (window == 1)
		max_lat = planner_tree_max_latency_ms(t, &p->trees[0]);
	if (!isfinite(p->trees[0].rate_gbps)) /* a single site: nothing to carry */
		p->trees[0].rate_gbps = 0;
	p->trees[0].chunk_bytes = planner_chunk_bytes(bytes, p->trees[0].rate_gbps, max_lat,
						      2 * plan_tree_depth(t, &p->trees[0]));
out:
	free(w);
	free(parent);
	return p;
}

int
baseline_ps_at(const struct topo *t, int server, struct ps_plan *ps)
{
	size_t n = (size_t)t->n_nodes;
	double *dist = malloc(sizeof(double) * n);
	int *pred = malloc(sizeof(int) * n),
	    *load = calloc(2 * (size_t)t->n_links + 2, sizeof(int));
	int rc = -ENOMEM;

	memset(ps, 0, sizeof(*ps));
	if (dist == NULL || pred == NULL || load == NULL)
		goto out;
	rc = graph_shortest_paths(t, server, dist, pred);
	if (rc != 0)
		goto out;
	ps->server = server;
	ps->rate_gbps = INFINITY;
	for (int v = 0; v < t->n_nodes; v++) {
		if (v == server || t->nodes[v].workers == 0)
			continue;
		if (!isfinite(dist[v])) {
			rc = -ENOENT;
			goto out;
		}
		if (dist[v] > ps->max_latency_ms)
			ps->max_latency_ms = dist[v];
		/* Route v -> server follows pred from v; each hop loads both directions. */
		for (int x = v; pred[x] >= 0; x = pred[x]) {
			int d = dlink(t, x, pred[x]);

			load[d]++;
			load[d ^ 1]++;
		}
	}
	for (int d = 0; d < 2 * t->n_links; d++)
		if (load[d] > 0 && dlink_gbps(t, d) / load[d] < ps->rate_gbps)
			ps->rate_gbps = dlink_gbps(t, d) / load[d];
	rc = 0;
out:
	free(dist);
	free(pred);
	free(load);
	return rc;
}

int
baseline_ps(const struct topo *t, struct ps_plan *ps)
{
	struct ps_plan cand;
	int rc = -ENOENT;

	memset(ps, 0, sizeof(*ps));
	ps->rate_gbps = -1;
	for (int s = 0; s < t->n_nodes; s++) {
		int r = baseline_ps_at(t, s, &cand);

		if (r == -ENOMEM)
			return r;
		if (r != 0)
			continue;
		if (cand.rate_gbps > ps->rate_gbps * (1 + 1e-9) ||
		    (cand.rate_gbps >= ps->rate_gbps * (1 - 1e-9) &&
		     cand.max_latency_ms < ps->max_latency_ms)) {
			*ps = cand;
			rc = 0;
		}
	}
	return rc;
}
