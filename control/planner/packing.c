/* SPDX-License-Identifier: BSD-3-Clause
 *
 * Tree packing by column generation (Dantzig-Wolfe on the spanning-tree polytope).
 *
 * Master LP over the trees T of the pool:
 *     maximise  sum_T x_T
 *     s.t.      sum_{T uses e} x_T <= c_e   for every link e  (dual y_e >= 0)
 * A tree improves the LP iff its weight under the duals, sum_{e in T} y_e, is below 1,
 * so the pricing step is a minimum spanning tree under y (Prim). When the cheapest tree
 * weighs w* < 1, y / w* is dual feasible, hence z / w* is an upper bound on the optimum:
 * we report the smallest such bound seen, and stop when the LP value is within 1e-6 of it.
 */
#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include <glpk.h>

#include "clock.h"
#include "graph.h"
#include "packing.h"

#define PACKING_DEFAULT_COLUMNS 4000
#define PACKING_DEFAULT_SECONDS 30.0
#define PACKING_REL_GAP 1e-6
/* Improving trees added per LP solve when pricing tries several roots. */
#define PACKING_COLUMNS_PER_ROUND 8

double
packing_tree_weight(const struct topo *t, const int *parent, const double *w)
{
	double s = 0;

	for (int v = 0; v < t->n_nodes; v++)
		if (parent[v] >= 0)
			s += w[topo_link_between(t, v, parent[v])];
	return s;
}

double
packing_tree_bottleneck(const struct topo *t, const int *parent)
{
	double b = INFINITY;

	for (int v = 0; v < t->n_nodes; v++) {
		if (parent[v] >= 0) {
			double c = topo_link_duplex_gbps(t, topo_link_between(t, v, parent[v]));

			if (c < b)
				b = c;
		}
	}
	return b;
}

/* Is candidate edge (weight w1, depth d1, capacity c1) better than (w2, d2, c2)? */
static bool
edge_better(double w1, double d1, double c1, double w2, double d2, double c2)
{
	double tol = 1e-12 * (fabs(w1) + fabs(w2) + 1);

	if (w1 < w2 - tol)
		return true;
	if (w1 > w2 + tol)
		return false;
	if (d1 < d2 - 1e-9)
		return true;
	if (d1 > d2 + 1e-9)
		return false;
	return c1 > c2;
}

/*
 * Prim from root under w[], admitting a node only while its latency depth stays within
 * max_h (0: unlimited). O(n^2 + m) with per-node best-candidate keys.
 */
static bool
grow_tree(const struct topo *t, const double *w, int root, double max_h, int *parent, double *depth,
	  double *key_w, double *key_c, bool *in)
{
	for (int v = 0; v < t->n_nodes; v++) {
		parent[v] = PLAN_ABSENT;
		in[v] = false;
		key_w[v] = INFINITY;
		depth[v] = INFINITY;
		key_c[v] = 0;
	}
	parent[root] = PLAN_ROOT;
	key_w[root] = 0;
	depth[root] = 0;
	for (;;) {
		int u = -1;

		for (int v = 0; v < t->n_nodes; v++)
			if (!in[v] && parent[v] != PLAN_ABSENT &&
			    (u < 0 || edge_better(key_w[v], depth[v], key_c[v], key_w[u], depth[u],
						  key_c[u])))
				u = v;
		if (u < 0)
			break;
		in[u] = true;
		for (int k = t->adj_off[u]; k < t->adj_off[u + 1]; k++) {
			int x = t->adj[k].node, l = t->adj[k].link;
			double d = depth[u] + t->links[l].latency_ms,
			       c = topo_link_duplex_gbps(t, l);

			if (in[x] || !isfinite(w[l]))
				continue;
			if (max_h > 0 && d > max_h * (1 + 1e-12))
				continue;
			if (parent[x] == PLAN_ABSENT ||
			    edge_better(w[l], d, c, key_w[x], depth[x], key_c[x])) {
				parent[x] = u;
				key_w[x] = w[l];
				depth[x] = d;
				key_c[x] = c;
			}
		}
	}
	for (int v = 0; v < t->n_nodes; v++)
		if (t->nodes[v].workers > 0 && !in[v])
			return false;
	/* Nodes seen but never admitted cannot be left half-attached. */
	for (int v = 0; v < t->n_nodes; v++)
		if (!in[v])
			parent[v] = PLAN_ABSENT;
	return true;
}

/*
 * Grow the cheapest tree from every root (only root 0 without a height limit: then every
 * root gives the same minimum tree). trees[] holds n_nodes * n_nodes entries, costs[]
 * n_nodes; a root without a tree gets cost INFINITY. Returns the number of roots tried,
 * or -ENOMEM.
 */
static int
price_roots(const struct topo *t, const double *w, double max_height_ms, int *trees, double *costs)
{
	size_t n = (size_t)t->n_nodes;
	double *depth = malloc(sizeof(double) * n), *kw = malloc(sizeof(double) * n);
	double *kc = malloc(sizeof(double) * n);
	bool *in = malloc(sizeof(bool) * n);
	int roots = max_height_ms > 0 ? t->n_nodes : 1, rc = roots;

	if (depth == NULL || kw == NULL || kc == NULL || in == NULL) {
		rc = -ENOMEM;
		goto out;
	}
	for (int r = 0; r < roots; r++) {
		int *cand = trees + (size_t)r * n;

		costs[r] = INFINITY;
		if (!grow_tree(t, w, r, max_height_ms, cand, depth, kw, kc, in))
			continue;
		graph_prune_relay_leaves(t, cand);
		costs[r] = packing_tree_weight(t, cand, w);
	}
out:
	free(depth);
	free(kw);
	free(kc);
	free(in);
	return rc;
}

double
packing_price(const struct topo *t, const double *w, double max_height_ms, int *parent)
{
	size_t n = (size_t)t->n_nodes;
	int *trees = malloc(sizeof(int) * n * n), roots, best = -1;
	double *costs = malloc(sizeof(double) * n), cost = INFINITY;

	if (trees == NULL || costs == NULL)
		goto out;
	roots = price_roots(t, w, max_height_ms, trees, costs);
	for (int r = 0; r < roots; r++)
		if (isfinite(costs[r]) &&
		    (best < 0 || costs[r] < costs[best] - 1e-12 * (fabs(costs[best]) + 1)))
			best = r;
	if (best >= 0) {
		memcpy(parent, trees + (size_t)best * n, sizeof(int) * n);
		cost = costs[best];
	}
out:
	free(trees);
	free(costs);
	return cost;
}

int
packing_pool_find(const struct topo *t, const struct plan *pool, const int *parent)
{
	/* Two trees on the same node set are equal iff every edge {v, parent[v]} of one is an
	 * edge of the other, whichever way round the other is rooted. */
	for (int i = 0; i < pool->n_trees; i++) {
		const int *q = pool->trees[i].parent;
		bool same = true;

		for (int v = 0; v < t->n_nodes && same; v++) {
			if ((q[v] == PLAN_ABSENT) != (parent[v] == PLAN_ABSENT))
				same = false;
			else if (parent[v] >= 0 && q[v] != parent[v] && q[parent[v]] != v)
				same = false;
		}
		if (same)
			return i;
	}
	return -1;
}

int
packing_pool_add(const struct topo *t, struct plan *pool, int *parent)
{
	if (packing_pool_find(t, pool, parent) >= 0)
		return -EEXIST;
	return plan_add_tree(pool, graph_center_root(t, parent), 0, parent);
}

static void
lp_add_column(glp_prob *lp, const struct topo *t, const int *parent)
{
	int *ind = malloc(sizeof(int) * ((size_t)t->n_nodes + 1));
	double *val = malloc(sizeof(double) * ((size_t)t->n_nodes + 1));
	int col = glp_add_cols(lp, 1), k = 0;

	glp_set_col_bnds(lp, col, GLP_LO, 0, 0);
	glp_set_obj_coef(lp, col, 1);
	if (ind == NULL || val == NULL)
		goto out;
	for (int v = 0; v < t->n_nodes; v++) {
		if (parent[v] >= 0) {
			k++;
			ind[k] = topo_link_between(t, v, parent[v]) + 1;
			val[k] = 1;
		}
	}
	glp_set_mat_col(lp, col, k, ind, val);
out:
	free(ind);
	free(val);
}

int
packing_solve(const struct topo *t, struct plan *pool, const struct packing_opts *opts,
	      struct packing_result *res)
{
	int max_cols = opts->max_columns > 0 ? opts->max_columns : PACKING_DEFAULT_COLUMNS;
	double tlim = opts->time_limit_s > 0 ? opts->time_limit_s : PACKING_DEFAULT_SECONDS;
	double *y = calloc((size_t)t->n_links + 1, sizeof(double));
	int *parent = malloc(sizeof(int) * (size_t)t->n_nodes);
	int *trees = malloc(sizeof(int) * (size_t)t->n_nodes * (size_t)t->n_nodes);
	double *costs = malloc(sizeof(double) * (size_t)t->n_nodes);
	bool relays = topo_worker_sites(t) < t->n_nodes;
	bool exact_pricing = opts->max_height_ms <= 0 && !relays;
	double t0 = clock_now_s(), z = 0, upper = INFINITY, last_w = 0;
	glp_prob *lp = NULL;
	glp_smcp smcp;
	int rc = 0;

	memset(res, 0, sizeof(*res));
	if (topo_worker_sites(t) < 2) {
		rc = -EDOM; /* nothing to carry: the bound is unbounded */
		goto out;
	}
	if (y == NULL || parent == NULL || trees == NULL || costs == NULL) {
		rc = -ENOMEM;
		goto out;
	}
	/* Seed: the max-bottleneck tree (cheapest under w = -capacity) if the pool is empty. */
	if (pool->n_trees == 0) {
		for (int l = 0; l < t->n_links; l++)
			y[l] = -topo_link_duplex_gbps(t, l);
		if (!isfinite(packing_price(t, y, opts->max_height_ms, parent))) {
			rc = -ENOENT;
			goto out;
		}
		rc = packing_pool_add(t, pool, parent);
		if (rc < 0)
			goto out;
		rc = 0;
	}
	glp_term_out(GLP_OFF);
	lp = glp_create_prob();
	glp_set_obj_dir(lp, GLP_MAX);
	glp_add_rows(lp, t->n_links);
	for (int l = 0; l < t->n_links; l++)
		glp_set_row_bnds(lp, l + 1, GLP_UP, 0, topo_link_duplex_gbps(t, l));
	for (int i = 0; i < pool->n_trees; i++)
		lp_add_column(lp, t, pool->trees[i].parent);
	glp_init_smcp(&smcp);
	smcp.msg_lev = GLP_MSG_OFF;
	smcp.presolve = GLP_OFF;

	for (;;) {
		int roots, added = 0;
		double w = INFINITY;

		if (glp_simplex(lp, &smcp) != 0 || glp_get_status(lp) != GLP_OPT) {
			rc = -EIO;
			goto out;
		}
		res->iterations++;
		z = glp_get_obj_val(lp);
		for (int l = 0; l < t->n_links; l++) {
			double d = glp_get_row_dual(lp, l + 1);

			y[l] = d > 0 ? d : 0;
		}
		roots = price_roots(t, y, opts->max_height_ms, trees, costs);
		if (roots < 0) {
			rc = roots;
			goto out;
		}
		for (int r = 0; r < roots; r++)
			w = costs[r] < w ? costs[r] : w;
		last_w = w;
		if (!isfinite(w))
			break;
		if (exact_pricing && w > 0 && z / w < upper)
			upper = z / w;
		if (w >= 1 - PACKING_REL_GAP)
			break;
		if (exact_pricing && z >= upper * (1 - PACKING_REL_GAP))
			break;
		if (pool->n_trees >= max_cols || clock_now_s() - t0 > tlim)
			break;
		/* Add every improving tree the roots found, cheapest first, up to a few per
		 * round: fewer LP solves than one column at a time. */
		for (int pass = 0; pass < PACKING_COLUMNS_PER_ROUND; pass++) {
			int best = -1;

			for (int r = 0; r < roots; r++)
				if (costs[r] < 1 - PACKING_REL_GAP &&
				    (best < 0 || costs[r] < costs[best]))
					best = r;
			if (best < 0)
				break;
			costs[best] = INFINITY;
			rc = packing_pool_add(t, pool, trees + (size_t)best * (size_t)t->n_nodes);
			if (rc == -EEXIST)
				continue;
			if (rc < 0)
				goto out;
			lp_add_column(lp, t, pool->trees[pool->n_trees - 1].parent);
			added++;
		}
		rc = 0;
		if (added == 0)
			break; /* heuristic pricing found only known trees: no progress possible */
	}
	for (int i = 0; i < pool->n_trees; i++) {
		double x = glp_get_col_prim(lp, i + 1);

		pool->trees[i].rate_gbps = x > 0 ? x : 0;
	}
	res->rate_gbps = z;
	res->columns = pool->n_trees;
	/* Optimal when the last pricing found no improving tree, or the LP value met the
	 * bound from the duals. */
	res->exact = exact_pricing && isfinite(last_w) &&
		     (last_w >= 1 - PACKING_REL_GAP || z >= upper * (1 - PACKING_REL_GAP));
	res->upper_gbps = res->exact ? z : upper;
out:
	if (lp != NULL)
		glp_delete_prob(lp);
	free(y);
	free(parent);
	free(trees);
	free(costs);
	return rc;
}

/* The packing LP restricted to a fixed set of pool trees (packing.h). */
double
packing_fixed_rates(const struct topo *t, struct plan *pool, const bool *chosen, double r_min)
{
	int *ind = malloc(sizeof(int) * ((size_t)t->n_nodes + 1));
	double *val = malloc(sizeof(double) * ((size_t)t->n_nodes + 1)), z = -1;
	int *col_of = calloc((size_t)pool->n_trees, sizeof(int));
	glp_prob *lp = glp_create_prob();
	glp_smcp smcp;
	int ncol = 0;

	if (ind == NULL || val == NULL || col_of == NULL)
		goto out;
	glp_set_obj_dir(lp, GLP_MAX);
	glp_add_rows(lp, t->n_links);
	for (int l = 0; l < t->n_links; l++)
		glp_set_row_bnds(lp, l + 1, GLP_UP, 0, topo_link_duplex_gbps(t, l));
	for (int i = 0; i < pool->n_trees; i++) {
		int k = 0;

		if (chosen != NULL && !chosen[i])
			continue;
		col_of[i] = ++ncol;
		glp_add_cols(lp, 1);
		glp_set_col_bnds(lp, ncol, GLP_LO, r_min, 0);
		glp_set_obj_coef(lp, ncol, 1);
		for (int v = 0; v < t->n_nodes; v++)
			if (pool->trees[i].parent[v] >= 0) {
				ind[++k] = topo_link_between(t, v, pool->trees[i].parent[v]) + 1;
				val[k] = 1;
			}
		glp_set_mat_col(lp, ncol, k, ind, val);
	}
	if (ncol == 0)
		goto out;
	glp_init_smcp(&smcp);
	smcp.msg_lev = GLP_MSG_OFF;
	if (glp_simplex(lp, &smcp) != 0 || glp_get_status(lp) != GLP_OPT)
		goto out;
	z = glp_get_obj_val(lp);
	for (int i = 0; i < pool->n_trees; i++)
		pool->trees[i].rate_gbps =
			chosen == NULL || chosen[i] ? glp_get_col_prim(lp, col_of[i]) : 0;

out:
	glp_delete_prob(lp);
	free(ind);
	free(val);
	free(col_of);
	return z;
}
