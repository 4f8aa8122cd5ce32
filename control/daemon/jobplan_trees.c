/* SPDX-License-Identifier: BSD-3-Clause
 *
 * The tree plans that job planning makes itself (jobplan_trees.h): the ring baseline run
 * as chain trees, CREW's shares as one star per aggregating site (after a link loss, relayed
 * and routed trees whose rates the packing LP solves together), and the factor by which
 * loads fit the links, which multicast streams are scaled by.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "baselines.h"
#include "crew.h"
#include "graph.h"
#include "jobplan_trees.h"
#include "jsonutil.h"
#include "mtree.h"
#include "packing.h"

/* ---- the ring as chain trees --------------------------------------------------------- */

/* Fill parent[] with the chain seq[first], seq[first + step], ... (len nodes, indices
 * modulo n_seq), each node's parent the one before it; relay leaves pruned. */
static void
chain(const struct topo *t, const int *seq, int n_seq, int first, int step, int len, int *parent)
{
	for (int v = 0; v < t->n_nodes; v++)
		parent[v] = PLAN_ABSENT;
	parent[seq[first]] = PLAN_ROOT;
	for (int k = 1; k < len; k++) {
		int cur = seq[((first + k * step) % n_seq + n_seq) % n_seq];
		int prev = seq[((first + (k - 1) * step) % n_seq + n_seq) % n_seq];

		parent[cur] = prev;
	}
	graph_prune_relay_leaves(t, parent);
}

struct plan *
jobplan_ring_chains(const struct topo *t, double search_seconds, uint64_t bytes, char *err,
		    size_t errlen)
{
	struct ring_plan rp = {0};
	int n = t->n_nodes, n_seq = 0, rc;
	int *seq = malloc(sizeof(int) * (size_t)n), *path = malloc(sizeof(int) * (size_t)n);
	int *parents = NULL, *uses = calloc((size_t)(t->n_links > 0 ? t->n_links : 1), sizeof(int));
	bool *seen = calloc((size_t)n, sizeof(bool));
	struct plan *p = NULL;

	errno = ENOMEM;
	if (seq == NULL || path == NULL || uses == NULL || seen == NULL)
		goto nomem;
	rc = baseline_ring(t, search_seconds, &rp);
	if (rc != 0) {
		json_util_failrc(rc, err, errlen, "ring: no ring found: %s", strerror(-rc));
		errno = -rc;
		goto out;
	}
	if (rp.m < 2) {
		json_util_failrc(-EINVAL, err, errlen, "ring: needs at least 2 worker sites");
		errno = EINVAL;
		goto out;
	}
	/* The ring as a walk of distinct nodes: for two members the route between them (the
	 * way back is the same path), else the closed walk through every route. */
	for (int i = 0; i < (rp.m == 2 ? 1 : rp.m); i++) {
		int a = rp.order[i], b = rp.order[(i + 1) % rp.m];
		int len = graph_route(t, a, b, path);

		if (len < 2) {
			json_util_failrc(-ENOENT, err, errlen, "ring: no route from '%s' to '%s'",
					 t->nodes[a].id, t->nodes[b].id);
			errno = ENOENT;
			goto out;
		}
		for (int k = 0; k < (rp.m == 2 ? len : len - 1); k++) {
			if (seen[path[k]]) {
				json_util_failrc(-ENOENT, err, errlen,
						 "ring: the route from '%s' "
						 "to '%s' passes node '%s' twice, so the ring has "
						 "no chain form; use mtree or single-tree",
						 t->nodes[a].id, t->nodes[b].id,
						 t->nodes[path[k]].id);
				errno = ENOENT;
				goto out;
			}
			seen[path[k]] = true;
			seq[n_seq++] = path[k];
		}
	}
	/* One chain per member: forward from it round the ring, or (two members) along the
	 * path in the direction away from it. */
	parents = malloc(sizeof(int) * (size_t)n * (size_t)rp.m);
	p = plan_create("ring", t, rp.m);
	if (parents == NULL || p == NULL)
		goto nomem;
	for (int i = 0, tr = 0; i < n_seq; i++) {
		int *par = parents + (size_t)tr * (size_t)n;

		if (t->nodes[seq[i]].workers == 0)
			continue;
		if (rp.m == 2)
			chain(t, seq, n_seq, i, i == 0 ? 1 : -1, n_seq, par);
		else
			chain(t, seq, n_seq, i, 1, n_seq, par);
		for (int v = 0; v < n; v++)
			if (par[v] >= 0)
				uses[topo_link_between(t, v, par[v])]++;
		tr++;
	}
	for (int tr = 0; tr < rp.m; tr++) {
		const int *par = parents + (size_t)tr * (size_t)n;
		double rate = INFINITY;
		int root = -1;

		for (int v = 0; v < n; v++) {
			if (par[v] == PLAN_ROOT)
				root = v;
			if (par[v] >= 0) {
				int l = topo_link_between(t, v, par[v]);
				double r = topo_link_duplex_gbps(t, l) / uses[l];

				rate = r < rate ? r : rate;
			}
		}
		rc = plan_add_tree(p, root, rate, par);
		if (rc < 0) {
			json_util_failrc(rc, err, errlen, "ring: %s", strerror(-rc));
			errno = -rc;
			goto fail;
		}
	}
	if (plan_shares_from_rates(p) != 0) {
		json_util_failrc(-EINVAL, err, errlen, "ring: every chain has rate 0");
		errno = EINVAL;
		goto fail;
	}
	for (int i = 0; i < p->n_trees; i++) {
		struct plan_tree *tr = &p->trees[i];

		tr->chunk_bytes = planner_chunk_bytes((uint64_t)(tr->share * (double)bytes),
						      tr->rate_gbps, 0, 2 * plan_tree_depth(t, tr));
	}
	goto out;
nomem:
	json_util_failrc(-ENOMEM, err, errlen, "ring: out of memory");
	errno = ENOMEM;
fail:
	plan_free(p);
	p = NULL;
out:
	ring_plan_fini(&rp);
	free(parents);
	free(seen);
	free(uses);
	free(path);
	free(seq);
	return p;
}

/* ---- capacities ---------------------------------------------------------------------- */

double
jobplan_link_fit(const struct topo *t, const double *load)
{
	double f = 1;

	for (int l = 0; l < t->n_links; l++) {
		if (load[2 * l] * f > t->links[l].gbps_ab)
			f = t->links[l].gbps_ab / load[2 * l];
		if (load[2 * l + 1] * f > t->links[l].gbps_ba)
			f = t->links[l].gbps_ba / load[2 * l + 1];
	}
	return f;
}

/* ---- CREW as stars ------------------------------------------------------------------- */

/* The tree of aggregator i over the members: those it has a link with are its children;
 * another is reached over two hops through CREW's relay (crew_pick_relay(): a member if
 * one has both links), or, where no site joins the two, along the latency-shortest route
 * (graph_route()), its nodes kept where already in the tree. *relayed is set if a member
 * is not a child. Returns 0 or -ENOENT (a member unreachable). */
static int
crew_tree(const struct topo *t, const struct crew_problem *pb, int i, int *path, int *parent,
	  bool *relayed)
{
	int n = t->n_nodes;

	for (int v = 0; v < n; v++)
		parent[v] = PLAN_ABSENT;
	parent[i] = PLAN_ROOT;
	for (int k = 0; k < pb->p; k++)
		if (pb->group[k] != i && topo_link_between(t, i, pb->group[k]) >= 0)
			parent[pb->group[k]] = i;
	for (int k = 0; k < pb->p; k++) {
		int m = pb->group[k], r, len;

		if (parent[m] != PLAN_ABSENT)
			continue;
		*relayed = true;
		r = crew_pick_relay(pb, i, m, pb->model_bytes, NULL, NULL);
		if (r >= 0 && topo_link_between(t, m, r) >= 0 && topo_link_between(t, r, i) >= 0) {
			parent[m] = r;
			if (parent[r] == PLAN_ABSENT)
				parent[r] = i;
			continue;
		}
		len = graph_route(t, i, m, path);
		if (len < 2)
			return -ENOENT;
		for (int h = len - 1; h > 0 && parent[path[h]] == PLAN_ABSENT; h--)
			parent[path[h]] = path[h - 1];
	}
	graph_prune_relay_leaves(t, parent);
	return 0;
}

/* CREW's shares over the stars of the pool (one per site, every member its child): star i
 * at S_i / (X + Y), which keeps every link within its capacity. */
static int
crew_star_rates(const struct crew_problem *pb, struct plan *pool, const int *site, char *err,
		size_t errlen)
{
	uint64_t *share = calloc((size_t)pb->n, sizeof(*share));
	struct crew_times tm;
	int rc =
		share == NULL ? -ENOMEM : crew_solve(pb, CREW_SCHEME_CREW, share, &tm, err, errlen);

	for (int k = 0; rc == 0 && k < pool->n_trees; k++)
		pool->trees[k].rate_gbps =
			(double)share[site[k]] * 8 / 1e9 / (tm.scatter_s + tm.broadcast_s);
	free(share);
	return rc;
}

/* Rates of the trees of the pool solved together within every link (the packing LP over
 * them, packing_fixed_rates()). Trees with the same links load them alike, so the LP's
 * split among them is arbitrary: each such group's rate is shared evenly, so that every
 * site of the group aggregates. */
static int
crew_joint_rates(const struct topo *t, struct plan *pool)
{
	double *sum = calloc((size_t)pool->n_trees, sizeof(double));
	int *rep = malloc(sizeof(int) * (size_t)pool->n_trees);
	int *cnt = calloc((size_t)pool->n_trees, sizeof(int)), rc = -ENOMEM;

	if (sum == NULL || rep == NULL || cnt == NULL)
		goto out;
	rc = -EIO;
	if (!(packing_fixed_rates(t, pool, NULL, 0) > 0))
		goto out;
	for (int k = 0; k < pool->n_trees; k++) {
		rep[k] = packing_pool_find(t, pool, pool->trees[k].parent);
		sum[rep[k]] += pool->trees[k].rate_gbps;
		cnt[rep[k]]++;
	}
	for (int k = 0; k < pool->n_trees; k++)
		pool->trees[k].rate_gbps = sum[rep[k]] / cnt[rep[k]];
	rc = 0;
out:
	free(sum);
	free(rep);
	free(cnt);
	return rc;
}

/* The pool's trees with a rate (above a billionth of the total) as the job's plan, each
 * with its share and chunk size. */
static struct plan *
crew_plan_of(const struct topo *t, const struct plan *pool, uint64_t bytes)
{
	double total = plan_total_rate(pool);
	int aggs = 0, k;
	struct plan *pl;

	for (k = 0; k < pool->n_trees; k++)
		aggs += pool->trees[k].rate_gbps > 1e-9 * total;
	pl = plan_create("crew", t, aggs);
	for (k = 0; pl != NULL && k < pool->n_trees; k++) {
		const struct plan_tree *tr = &pool->trees[k];
		int j;

		if (!(tr->rate_gbps > 1e-9 * total))
			continue;
		j = plan_add_tree(pl, tr->root, tr->rate_gbps, tr->parent);
		if (j < 0)
			break;
		pl->trees[j].share = tr->rate_gbps / total;
		pl->trees[j].chunk_bytes = planner_chunk_bytes(
			(uint64_t)(pl->trees[j].share * (double)bytes), tr->rate_gbps,
			planner_tree_max_latency_ms(t, &pl->trees[j]),
			2 * plan_tree_depth(t, &pl->trees[j]));
	}
	if (pl != NULL && (k < pool->n_trees || plan_shares_from_rates(pl) != 0)) {
		plan_free(pl);
		pl = NULL;
	}
	return pl;
}

struct plan *
jobplan_crew_stars(const struct topo *t, uint64_t bytes, char *err, size_t errlen)
{
	int n = t->n_nodes, p = 0, rc = -ENOMEM;
	double *bw = crew_matrix_from_topo(t);
	int *group = malloc(sizeof(int) * (size_t)n), *parent = malloc(sizeof(int) * (size_t)n);
	int *path = malloc(sizeof(int) * (size_t)n), *site = malloc(sizeof(int) * (size_t)n);
	struct plan *pool = plan_create("crew", t, n), *pl = NULL;
	bool relayed = false;

	if (bw == NULL || group == NULL || parent == NULL || path == NULL || site == NULL ||
	    pool == NULL)
		goto out;
	for (int v = 0; v < n; v++)
		if (t->nodes[v].workers > 0)
			group[p++] = v;
	struct crew_problem pb = {
		.n = n, .gbps = bw, .group = group, .p = p, .model_bytes = bytes > 0 ? bytes : 1};

	/* One tree per site that reaches every member. */
	for (int i = 0; i < n; i++) {
		rc = crew_tree(t, &pb, i, path, parent, &relayed);
		if (rc == -ENOENT)
			continue;
		rc = plan_add_tree(pool, i, 0, parent);
		if (rc < 0)
			goto out;
		site[pool->n_trees - 1] = i;
	}
	rc = pool->n_trees == 0 ? -ENOENT :
	     relayed            ? crew_joint_rates(t, pool) :
				  crew_star_rates(&pb, pool, site, err, errlen);
	if (rc == -ENOENT)
		snprintf(err, errlen, "crew: no site reaches every worker site");
	if (rc != 0)
		goto out;
	pl = crew_plan_of(t, pool, bytes);
	rc = pl == NULL ? -ENOMEM : 0;
out:
	if (rc != 0 && rc != -ENOENT)
		snprintf(err, errlen, "crew: %s", strerror(-rc));
	free(bw);
	free(group);
	free(parent);
	free(path);
	free(site);
	plan_free(pool);
	errno = -rc;
	return pl;
}
