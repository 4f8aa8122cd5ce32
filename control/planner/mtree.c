/* SPDX-License-Identifier: BSD-3-Clause
 * mTree planner: candidate trees (GBST, column generation), ITH height search, the
 * K-tree selection MILP and per-tree chunk sizes. See mtree.h for the stages.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <glpk.h>

#include "clock.h"
#include "graph.h"
#include "jsonutil.h"
#include "mtree.h"
#include "packing.h"

/* Pools larger than this are trimmed before the MILP (best LP values and bottlenecks kept):
 * GLPK's branch and bound handles a few hundred binaries within its time limit. */
#define MTREE_MILP_MAX_CANDIDATES 80
/* Default time limit of the MILP. */
#define MTREE_DEFAULT_SECONDS 0.5
/* Trees below this fraction of the total rate are dropped (drop_negligible()). */
#define MTREE_NEGLIGIBLE_SHARE 1e-3
#define MTREE_DROP_MAX_LOSS 0.01
/* Heights closer than this count as equal (path latencies carry a per-hop tie-break). */
#define MTREE_HEIGHT_TOL_MS 1e-3
/* GBST stops after this many trees per run (it also stops when the residual graph no
 * longer spans the worker sites). */
#define MTREE_GBST_MAX 256

uint64_t
planner_chunk_bytes(uint64_t v, double rate_gbps, double max_lat_ms, int hops)
{
	double beta = 8.0 / (rate_gbps * 1e9); /* seconds per byte */
	double mu;
	uint64_t c;

	if (v == 0)
		return PLANNER_MIN_CHUNK;
	if (hops < 2 || !(rate_gbps > 0) || !(max_lat_ms >= 0))
		mu = (double)v;
	else
		mu = sqrt((max_lat_ms * 1e-3 + PLANNER_ALPHA_S) * (double)v /
			  ((double)(hops - 1) * beta));
	if (mu > (double)v)
		mu = (double)v;
	if (mu < PLANNER_MIN_CHUNK)
		mu = PLANNER_MIN_CHUNK;
	c = ((uint64_t)mu + 4095) & ~(uint64_t)4095;
	return c;
}

double
planner_tree_max_latency_ms(const struct topo *t, const struct plan_tree *tr)
{
	double max_lat = 0;

	for (int v = 0; v < t->n_nodes; v++)
		if (tr->parent[v] >= 0) {
			double l = t->links[topo_link_between(t, v, tr->parent[v])].latency_ms;

			max_lat = l > max_lat ? l : max_lat;
		}
	return max_lat;
}

/* ---- Stage 1: GBST with GRTH eccentricity updates ---- */

struct gbst_ws {
	double *dist; /* n x n tree distances between tree vertices */
	double *ecc;  /* eccentricity of every tree vertex */
	int *parent;
	int *members;     /* tree vertices in insertion order */
	double *residual; /* per link */
};

/* Radius of the tree after attaching x to u over latency lat (GRTH update, O(size)). */
static double
radius_after(const struct topo *t, const struct gbst_ws *ws, int size, int u, double lat)
{
	size_t n = (size_t)t->n_nodes;
	double r = ws->ecc[u] + lat; /* eccentricity of the new leaf */

	for (int i = 0; i < size; i++) {
		int v = ws->members[i];
		double e = ws->ecc[v], d = ws->dist[(size_t)v * n + (size_t)u] + lat;

		if (d > e)
			e = d;
		if (e < r)
			r = e;
	}
	return r;
}

static void
attach(const struct topo *t, struct gbst_ws *ws, int *size, int u, int x, double lat)
{
	size_t n = (size_t)t->n_nodes;

	ws->ecc[x] = ws->ecc[u] + lat;
	ws->dist[(size_t)x * n + (size_t)x] = 0;
	for (int i = 0; i < *size; i++) {
		int v = ws->members[i];
		double d = ws->dist[(size_t)v * n + (size_t)u] + lat;

		ws->dist[(size_t)v * n + (size_t)x] = d;
		ws->dist[(size_t)x * n + (size_t)v] = d;
		if (d > ws->ecc[v])
			ws->ecc[v] = d;
	}
	ws->members[(*size)++] = x;
	ws->parent[x] = u;
}

/* Grow one tree from start on the residual capacities. Returns true if it spans every
 * worker site. */
static bool
gbst_grow(const struct topo *t, struct gbst_ws *ws, int start, double max_h, double floor)
{
	int size = 0, need = topo_worker_sites(t), have = 0;

	for (int v = 0; v < t->n_nodes; v++)
		ws->parent[v] = PLAN_ABSENT;
	ws->parent[start] = PLAN_ROOT;
	ws->ecc[start] = 0;
	ws->dist[(size_t)start * (size_t)t->n_nodes + (size_t)start] = 0;
	ws->members[size++] = start;
	have += t->nodes[start].workers > 0;
	while (have < need) {
		int bu = -1, bx = -1, bl = -1;
		double bcap = 0, brad = INFINITY;

		for (int i = 0; i < size; i++) {
			int u = ws->members[i];

			for (int k = t->adj_off[u]; k < t->adj_off[u + 1]; k++) {
				int x = t->adj[k].node, l = t->adj[k].link;
				double cap = ws->residual[l], rad;
				bool wider;

				if (ws->parent[x] != PLAN_ABSENT || cap < floor)
					continue;
				if (bu >= 0 && cap < bcap * (1 - 1e-12))
					continue;
				wider = bu < 0 || cap > bcap * (1 + 1e-12);
				/* The radius (O(size)) is needed for the height limit, or to break
				 * a tie in capacity; otherwise the wider link wins outright. */
				rad = INFINITY;
				if (max_h > 0 || !wider) {
					rad = radius_after(t, ws, size, u, t->links[l].latency_ms);
					if (max_h > 0 && rad > max_h * (1 + 1e-12))
						continue;
				}
				if (!wider && !isfinite(brad))
					brad = radius_after(t, ws, size, bu,
							    t->links[bl].latency_ms);
				if (wider || rad < brad) {
					bu = u;
					bx = x;
					bl = l;
					bcap = cap;
					brad = rad;
				}
			}
		}
		if (bu < 0)
			return false;
		attach(t, ws, &size, bu, bx, t->links[bl].latency_ms);
		have += t->nodes[bx].workers > 0;
	}
	return true;
}

int
mtree_gbst(const struct topo *t, double max_height_ms, double min_rate_gbps, int max_trees,
	   struct plan *pool)
{
	size_t n = (size_t)t->n_nodes;
	struct gbst_ws ws = {0};
	double maxcap = 0, floor;
	int added = 0, rc = 0, start = 0, misses = 0;

	ws.dist = malloc(sizeof(double) * n * n);
	ws.ecc = malloc(sizeof(double) * n);
	ws.parent = malloc(sizeof(int) * n);
	ws.members = malloc(sizeof(int) * n);
	ws.residual = malloc(sizeof(double) * ((size_t)t->n_links + 1));
	if (ws.dist == NULL || ws.ecc == NULL || ws.parent == NULL || ws.members == NULL ||
	    ws.residual == NULL) {
		rc = -ENOMEM;
		goto out;
	}
	for (int l = 0; l < t->n_links; l++) {
		ws.residual[l] = topo_link_duplex_gbps(t, l);
		if (ws.residual[l] > maxcap)
			maxcap = ws.residual[l];
	}
	floor = min_rate_gbps > 0 ? min_rate_gbps : maxcap * 1e-6;
	/* Start vertices rotate over the worker sites, as the paper's random starts do, but
	 * deterministically. Stop when no start vertex yields a spanning tree. */
	while (added < max_trees && misses < t->n_nodes) {
		double b;

		start = (start + 1) % t->n_nodes;
		if (t->nodes[start].workers == 0) {
			misses++;
			continue;
		}
		if (!gbst_grow(t, &ws, start, max_height_ms, floor)) {
			misses++;
			continue;
		}
		graph_prune_relay_leaves(t, ws.parent);
		b = INFINITY;
		for (int v = 0; v < t->n_nodes; v++)
			if (ws.parent[v] >= 0) {
				double r = ws.residual[topo_link_between(t, v, ws.parent[v])];

				b = r < b ? r : b;
			}
		for (int v = 0; v < t->n_nodes; v++)
			if (ws.parent[v] >= 0)
				ws.residual[topo_link_between(t, v, ws.parent[v])] -= b;
		rc = packing_pool_add(t, pool, ws.parent);
		if (rc == -EEXIST) {
			misses++;
			continue;
		}
		if (rc < 0)
			goto out;
		misses = 0;
		added++;
	}
	rc = added;
out:
	free(ws.dist);
	free(ws.ecc);
	free(ws.parent);
	free(ws.members);
	free(ws.residual);
	return rc;
}

/* ---- Stage 2: K-tree selection ---- */

static int
cmp_desc(const void *a, const void *b)
{
	const double *x = a, *y = b;

	return (x[0] < y[0]) - (x[0] > y[0]);
}

int
mtree_select(const struct topo *t, struct plan *pool, int k, double r_min, double seconds,
	     bool *optimal)
{
	int m = pool->n_trees, *ind = NULL, rc = -ENOMEM;
	double *val = NULL, *order = NULL, greedy, best_z = -1, *best = NULL;
	bool *chosen = NULL;
	glp_prob *mip = NULL;
	glp_iocp iocp;

	*optimal = false;
	if (m == 0)
		return -ENOENT;
	ind = malloc(sizeof(int) * ((size_t)t->n_links + (size_t)m + 4));
	val = malloc(sizeof(double) * ((size_t)t->n_links + (size_t)m + 4));
	order = malloc(sizeof(double) * 2 * (size_t)m);
	chosen = calloc((size_t)m, sizeof(bool));
	best = calloc((size_t)m, sizeof(double));
	if (ind == NULL || val == NULL || order == NULL || chosen == NULL || best == NULL)
		goto out;

	/* Greedy incumbent: the k trees with the largest LP rates (ties: bottleneck). */
	for (int i = 0; i < m; i++) {
		order[2 * i] = pool->trees[i].rate_gbps +
			       1e-9 * packing_tree_bottleneck(t, pool->trees[i].parent);
		order[2 * i + 1] = i;
	}
	qsort(order, (size_t)m, 2 * sizeof(double), cmp_desc);
	for (int j = 0; j < m && (k <= 0 || j < k); j++)
		chosen[(int)order[2 * j + 1]] = true;
	/* Drop chosen trees one by one while r_min makes the set infeasible. */
	for (int j = (k <= 0 || k > m ? m : k) - 1; j >= 0; j--) {
		greedy = packing_fixed_rates(t, pool, chosen, r_min);
		if (greedy >= 0)
			break;
		chosen[(int)order[2 * j + 1]] = false;
	}
	greedy = packing_fixed_rates(t, pool, chosen, r_min);
	if (greedy >= 0) {
		best_z = greedy;
		for (int i = 0; i < m; i++)
			best[i] = pool->trees[i].rate_gbps;
	}
	if (k <= 0 && r_min <= 0) {
		*optimal = true; /* the LP over all candidates is the optimum */
		rc = 0;
		goto apply;
	}

	/* MILP: columns 1..m rates r_i, m+1..2m binaries y_i. */
	mip = glp_create_prob();
	glp_set_obj_dir(mip, GLP_MAX);
	glp_add_rows(mip, t->n_links + 2 * m + 1);
	for (int l = 0; l < t->n_links; l++)
		glp_set_row_bnds(mip, l + 1, GLP_UP, 0, topo_link_duplex_gbps(t, l));
	glp_add_cols(mip, 2 * m);
	for (int i = 0; i < m; i++) {
		double big = packing_tree_bottleneck(t, pool->trees[i].parent);
		int r_col = i + 1, y_col = m + i + 1, row = t->n_links + 2 * i + 1, c = 0;

		glp_set_col_bnds(mip, r_col, GLP_LO, 0, 0);
		glp_set_obj_coef(mip, r_col, 1);
		glp_set_col_kind(mip, y_col, GLP_BV);
		for (int v = 0; v < t->n_nodes; v++)
			if (pool->trees[i].parent[v] >= 0) {
				ind[++c] = topo_link_between(t, v, pool->trees[i].parent[v]) + 1;
				val[c] = 1;
			}
		glp_set_mat_col(mip, r_col, c, ind, val);
		/* r_i - big * y_i <= 0 ;  r_i - r_min * y_i >= 0 */
		ind[1] = r_col;
		val[1] = 1;
		ind[2] = y_col;
		val[2] = -big;
		glp_set_mat_row(mip, row, 2, ind, val);
		glp_set_row_bnds(mip, row, GLP_UP, 0, 0);
		val[2] = -r_min;
		glp_set_mat_row(mip, row + 1, 2, ind, val);
		glp_set_row_bnds(mip, row + 1, GLP_LO, 0, 0);
	}
	for (int i = 0; i < m; i++) {
		ind[i + 1] = m + i + 1;
		val[i + 1] = 1;
	}
	glp_set_mat_row(mip, t->n_links + 2 * m + 1, m, ind, val);
	if (k > 0)
		glp_set_row_bnds(mip, t->n_links + 2 * m + 1, GLP_UP, 0, k);
	else
		glp_set_row_bnds(mip, t->n_links + 2 * m + 1, GLP_FR, 0, 0);

	glp_init_iocp(&iocp);
	iocp.msg_lev = GLP_MSG_OFF;
	iocp.presolve = GLP_ON;
	iocp.fp_heur = GLP_ON;
	iocp.mip_gap = 1e-6;
	iocp.tm_lim = (int)((seconds > 0 ? seconds : MTREE_DEFAULT_SECONDS) * 1000);
	{
		int ret = glp_intopt(mip, &iocp), st = glp_mip_status(mip);

		if ((ret == 0 || ret == GLP_ETMLIM || ret == GLP_EMIPGAP) &&
		    (st == GLP_OPT || st == GLP_FEAS)) {
			double z = glp_mip_obj_val(mip);

			*optimal = st == GLP_OPT && ret == 0;
			if (z > best_z) {
				/* Re-solve the LP on the chosen set: exact rates, no big-M noise. */
				for (int i = 0; i < m; i++)
					chosen[i] = glp_mip_col_val(mip, m + i + 1) > 0.5;
				z = packing_fixed_rates(t, pool, chosen, r_min);
				if (z > best_z) {
					best_z = z;
					for (int i = 0; i < m; i++)
						best[i] = pool->trees[i].rate_gbps;
				}
			}
		}
	}
	rc = best_z >= 0 ? 0 : -ENOENT;
apply:
	if (rc == 0)
		for (int i = 0; i < m; i++)
			pool->trees[i].rate_gbps = best[i] > 1e-12 ? best[i] : 0;
out:
	if (mip != NULL)
		glp_delete_prob(mip);
	free(ind);
	free(val);
	free(order);
	free(chosen);
	free(best);
	return rc;
}

/*
 * Drop trees below MTREE_NEGLIGIBLE_SHARE of the total rate and re-solve the rates of the
 * rest (they take over most of the freed capacity). A tree that small costs table space,
 * slots and a pipeline fill of its own for almost nothing: at 1/1000 of the rate, each
 * chunk of it crosses a hop 1000 times slower than the plan's average.
 */
static void
drop_negligible(const struct topo *t, struct plan *pool, double r_min)
{
	bool *chosen = malloc(sizeof(bool) * ((size_t)pool->n_trees + 1));
	double *saved = malloc(sizeof(double) * ((size_t)pool->n_trees + 1));
	double before = plan_total_rate(pool);

	if (chosen == NULL || saved == NULL)
		goto out;
	for (int i = 0; i < pool->n_trees; i++)
		saved[i] = pool->trees[i].rate_gbps;
	for (int round = 0; round < 8; round++) {
		double total = plan_total_rate(pool);
		bool drop = false;

		for (int i = 0; i < pool->n_trees; i++) {
			double r = pool->trees[i].rate_gbps;

			chosen[i] = r > MTREE_NEGLIGIBLE_SHARE * total;
			drop |= r > 0 && !chosen[i];
		}
		if (!drop || packing_fixed_rates(t, pool, chosen, r_min) < 0)
			break;
	}
	/* Keep the small trees after all if dropping them costs more than 1% of the rate. */
	if (plan_total_rate(pool) < before * (1 - MTREE_DROP_MAX_LOSS))
		for (int i = 0; i < pool->n_trees; i++)
			pool->trees[i].rate_gbps = saved[i];
out:
	free(chosen);
	free(saved);
}

/* Keep the best max_keep candidates (by LP rate, then bottleneck) and GBST seeds first. */
static void
trim_pool(const struct topo *t, struct plan *pool, int max_keep)
{
	double *order;
	bool *keep;
	int w = 0;

	if (pool->n_trees <= max_keep)
		return;
	order = malloc(sizeof(double) * 2 * (size_t)pool->n_trees);
	keep = calloc((size_t)pool->n_trees, sizeof(bool));
	if (order == NULL || keep == NULL)
		goto out;
	for (int i = 0; i < pool->n_trees; i++) {
		order[2 * i] = pool->trees[i].rate_gbps * 1e3 +
			       packing_tree_bottleneck(t, pool->trees[i].parent) * 1e-3;
		order[2 * i + 1] = i;
	}
	qsort(order, (size_t)pool->n_trees, 2 * sizeof(double), cmp_desc);
	for (int j = 0; j < max_keep; j++)
		keep[(int)order[2 * j + 1]] = true;
	for (int i = 0; i < pool->n_trees; i++) {
		if (keep[i])
			pool->trees[w++] = pool->trees[i];
		else
			free(pool->trees[i].parent);
	}
	pool->n_trees = w;
out:
	free(order);
	free(keep);
}

/* Stages 1 and 2 under one height limit. Returns the pool (rates set) or NULL. */
static struct plan *
plan_at_height(const struct topo *t, const struct mtree_opts *o, double h, bool select,
	       struct mtree_stats *st, int *rc)
{
	struct plan *pool = plan_create("mtree", t, 64);
	struct packing_result pr;
	struct packing_opts po = {.max_height_ms = h};
	bool optimal = false;
	int gb;

	if (pool == NULL) {
		*rc = -ENOMEM;
		return NULL;
	}
	gb = mtree_gbst(t, h, o->min_rate_gbps, MTREE_GBST_MAX, pool);
	if (gb < 0) {
		*rc = gb;
		goto fail;
	}
	st->gbst_trees = gb;
	if (!o->paper_only) {
		*rc = packing_solve(t, pool, &po, &pr);
		if (*rc != 0)
			goto fail;
		st->lp_iterations += pr.iterations;
		st->lp_rate_gbps = pr.rate_gbps;
		trim_pool(t, pool, MTREE_MILP_MAX_CANDIDATES);
	} else if (pool->n_trees == 0) {
		*rc = -ENOENT;
		goto fail;
	} else {
		bool *all = malloc(sizeof(bool) * (size_t)pool->n_trees);

		if (all == NULL) {
			*rc = -ENOMEM;
			goto fail;
		}
		for (int i = 0; i < pool->n_trees; i++)
			all[i] = true;
		st->lp_rate_gbps = packing_fixed_rates(t, pool, all, 0);
		free(all);
	}
	st->candidates = pool->n_trees;
	if (!select)
		return pool; /* an ITH probe: the LP rate over the candidates decides */
	*rc = mtree_select(t, pool, o->max_trees, o->min_rate_gbps, o->milp_seconds, &optimal);
	if (*rc != 0)
		goto fail;
	st->milp_optimal = optimal;
	drop_negligible(t, pool, o->min_rate_gbps);
	return pool;
fail:
	plan_free(pool);
	return NULL;
}

/* The smallest height any tree spanning the worker sites can have (ms). */
static double
min_possible_height(const struct topo *t)
{
	double *dist = malloc(sizeof(double) * (size_t)t->n_nodes), best = 0;
	int *pred = malloc(sizeof(int) * (size_t)t->n_nodes);

	if (dist == NULL || pred == NULL)
		goto out;
	best = INFINITY;
	for (int r = 0; r < t->n_nodes; r++) {
		double h = 0;

		if (graph_shortest_paths(t, r, dist, pred) != 0)
			break;
		for (int v = 0; v < t->n_nodes; v++)
			if (t->nodes[v].workers > 0 && dist[v] > h)
				h = dist[v];
		if (h < best)
			best = h;
	}
out:
	free(dist);
	free(pred);
	return isfinite(best) ? best : 0;
}

/* One worker site: nothing crosses the WAN. The plan is that site alone, rate 0. */
static struct plan *
single_site_plan(const struct topo *t, const struct mtree_opts *o, struct mtree_stats *st)
{
	struct plan *p = plan_create(o->paper_only ? "mtree-paper" : "mtree", t, 1);
	int *parent = malloc(sizeof(int) * (size_t)t->n_nodes);

	if (p == NULL || parent == NULL)
		goto nomem;
	for (int v = 0; v < t->n_nodes; v++)
		parent[v] = t->nodes[v].workers > 0 ? PLAN_ROOT : PLAN_ABSENT;
	for (int v = 0; v < t->n_nodes; v++)
		if (parent[v] == PLAN_ROOT && plan_add_tree(p, v, 0, parent) < 0)
			goto nomem;
	p->trees[0].share = 1;
	p->trees[0].chunk_bytes = o->bytes > 0 ? o->bytes : PLANNER_MIN_CHUNK;
	free(parent);
	if (st != NULL) {
		memset(st, 0, sizeof(*st));
		st->milp_optimal = true;
	}
	return p;
nomem:
	free(parent);
	plan_free(p);
	errno = ENOMEM;
	return NULL;
}

struct plan *
mtree_plan(const struct topo *t, const struct mtree_opts *o, struct mtree_stats *st_out, char *err,
	   size_t errlen)
{
	struct mtree_stats st = {0};
	double t0 = clock_now_s(), h = o->max_height_ms;
	struct plan *pool, *out = NULL;
	int rc = 0;

	if (o->max_trees < 0 || o->max_height_ms < 0 || o->min_rate_gbps < 0 || o->rho < 0 ||
	    o->window < 0 || o->window > 1 || o->rho > 1 || !isfinite(o->max_height_ms) ||
	    !isfinite(o->min_rate_gbps)) {
		json_util_fail(err, errlen, "invalid mTree options");
		errno = EINVAL;
		return NULL;
	}
	if (topo_worker_sites(t) == 1)
		return single_site_plan(t, o, st_out);
	if (h > 0 && h < min_possible_height(t) - MTREE_HEIGHT_TOL_MS) {
		json_util_fail(err, errlen,
			       "no tree fits: the smallest possible height is %.3f "
			       "ms, above --max-height-ms %.3f",
			       min_possible_height(t), h);
		errno = ENOENT;
		return NULL;
	}
	/* Stages 1 and 2 under the user's limit. */
	pool = plan_at_height(t, o, h, true, &st, &rc);
	if (pool == NULL)
		goto fail;
	st.height_limit_ms = h;

	/* ITH: the smallest integer height limit whose plan keeps rho of that rate. Every
	 * probe runs both stages (with a shorter MILP limit); the best probe replaces the
	 * plan. */
	if (o->rho > 0) {
		double rate = plan_total_rate(pool), maxh = 0;
		struct mtree_opts po = *o;
		long lo, hi;

		po.milp_seconds =
			(o->milp_seconds > 0 ? o->milp_seconds : MTREE_DEFAULT_SECONDS) / 4;
		for (int i = 0; i < pool->n_trees; i++)
			if (pool->trees[i].rate_gbps > 0) {
				double x = plan_tree_height_ms(t, &pool->trees[i]);

				maxh = x > maxh ? x : maxh;
			}
		lo = (long)ceil(min_possible_height(t) - MTREE_HEIGHT_TOL_MS);
		hi = (long)ceil(maxh - MTREE_HEIGHT_TOL_MS);
		while (lo < hi) {
			long mid = lo + (hi - lo) / 2;
			struct mtree_stats pst = {0};
			struct plan *probe;
			int prc = 0;

			st.ith_probes++;
			probe = plan_at_height(t, &po, (double)mid, true, &pst, &prc);
			st.lp_iterations += pst.lp_iterations;
			if (probe == NULL && prc != -ENOENT) {
				rc = prc;
				goto fail;
			}
			if (probe != NULL && plan_total_rate(probe) >= o->rho * rate * (1 - 1e-9)) {
				int iters = st.lp_iterations, probes = st.ith_probes;

				plan_free(pool);
				pool = probe;
				st = pst;
				st.lp_iterations = iters;
				st.ith_probes = probes;
				st.height_limit_ms = (double)mid;
				hi = mid;
			} else {
				plan_free(probe);
				lo = mid + 1;
			}
		}
	}
	out = plan_create(o->paper_only ? "mtree-paper" : "mtree", t, pool->n_trees);
	if (out == NULL) {
		rc = -ENOMEM;
		goto fail;
	}
	for (int i = 0; i < pool->n_trees; i++) {
		struct plan_tree *tr = &pool->trees[i];

		if (tr->rate_gbps <= 0)
			continue;
		graph_center_root(t, tr->parent);
		for (int v = 0; v < t->n_nodes; v++)
			if (tr->parent[v] == PLAN_ROOT)
				tr->root = v;
		rc = plan_add_tree(out, tr->root, tr->rate_gbps, tr->parent);
		if (rc < 0)
			goto fail;
	}
	rc = 0;
	if (out->n_trees == 0 || plan_shares_from_rates(out) != 0) {
		rc = -ENOENT;
		goto fail;
	}
	for (int i = 0; i < out->n_trees; i++) {
		struct plan_tree *tr = &out->trees[i];

		tr->chunk_bytes =
			planner_chunk_bytes((uint64_t)(tr->share * (double)o->bytes), tr->rate_gbps,
					    o->window == 1 ? planner_tree_max_latency_ms(t, tr) : 0,
					    2 * plan_tree_depth(t, tr));
	}
	plan_free(pool);
	st.seconds = clock_now_s() - t0;
	if (st_out != NULL)
		*st_out = st;
	return out;
fail:
	plan_free(pool);
	plan_free(out);
	if (rc == -ENOENT)
		json_util_fail(err, errlen,
			       "no set of trees satisfies the limits (height %.3f ms, "
			       "min rate %.6g Gbit/s)",
			       h, o->min_rate_gbps);
	else if (rc == -EIO)
		json_util_fail(err, errlen, "the LP/MILP solver failed");
	else
		json_util_fail(err, errlen, "%s", strerror(-rc));
	errno = -rc;
	return NULL;
}
