/* SPDX-License-Identifier: BSD-3-Clause
 *
 * The tree plans that job planning makes itself (jobplan_trees.h): the ring baseline run
 * as chain trees, CREW's shares as one star per aggregating site, and the factor by which
 * loads fit the links, which both they and multicast streams are scaled by.
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
		if (load[2 * l] > t->links[l].gbps_ab * f)
			f = t->links[l].gbps_ab / load[2 * l];
		if (load[2 * l + 1] > t->links[l].gbps_ba * f)
			f = t->links[l].gbps_ba / load[2 * l + 1];
	}
	return f;
}

/* jobplan_link_fit() of a tree plan: a tree uses its rate in both directions of each of
 * its edges. -1 on ENOMEM. */
static double
fit_rates(const struct topo *t, const struct plan *pl)
{
	double *load = calloc(2 * (size_t)t->n_links, sizeof(double)), f;

	if (load == NULL)
		return -1;
	for (int k = 0; k < pl->n_trees; k++)
		for (int v = 0; v < t->n_nodes; v++) {
			int u = pl->trees[k].parent[v], l;

			if (u < 0)
				continue;
			l = topo_link_between(t, v, u);
			if (l < 0)
				continue; /* plan_validate() reports it */
			load[2 * l] += pl->trees[k].rate_gbps;
			load[2 * l + 1] += pl->trees[k].rate_gbps;
		}
	f = jobplan_link_fit(t, load);
	free(load);
	return f;
}

/* ---- CREW as stars ------------------------------------------------------------------- */

struct plan *
jobplan_crew_stars(const struct topo *t, uint64_t bytes, char *err, size_t errlen)
{
	int n = t->n_nodes, p = 0;
	double *bw = crew_matrix_from_topo(t), *eff = malloc(sizeof(double) * (size_t)n * n);
	int *group = malloc(sizeof(int) * (size_t)n), *parent = malloc(sizeof(int) * (size_t)n);
	int *via = malloc(sizeof(int) * (size_t)n * n);
	uint64_t *share = calloc((size_t)n, sizeof(*share));
	struct plan *pl = NULL;
	struct crew_times tm;
	int rc = -ENOMEM, aggs = 0;
	double f;

	if (bw == NULL || eff == NULL || group == NULL || parent == NULL || via == NULL ||
	    share == NULL)
		goto out;
	for (int v = 0; v < n; v++)
		if (t->nodes[v].workers > 0)
			group[p++] = v;
	struct crew_problem pb = {
		.n = n, .gbps = bw, .group = group, .p = p, .model_bytes = bytes > 0 ? bytes : 1};

	/* Relays for the pairs without a link, and the rates the shares are solved with. */
	memcpy(eff, bw, sizeof(double) * (size_t)n * n);
	for (int i = 0; i < n; i++)
		for (int k = 0; k < p; k++) {
			int m = group[k], r;

			via[i * n + m] = -1;
			if (m == i || (bw[m * n + i] > 0 && bw[i * n + m] > 0))
				continue;
			r = crew_pick_relay(&pb, i, m, bytes, NULL, NULL);
			if (r < 0 || bw[m * n + r] <= 0 || bw[r * n + i] <= 0)
				continue;
			via[i * n + m] = r;
			eff[i * n + m] = fmin(bw[i * n + r], bw[r * n + m]);
			eff[m * n + i] = fmin(bw[m * n + r], bw[r * n + i]);
		}
	pb.gbps = eff;
	rc = crew_solve(&pb, CREW_SCHEME_CREW, share, &tm, err, errlen);
	if (rc == -ENOENT)
		snprintf(err, errlen, "crew: no site reaches every worker site in two hops");
	if (rc != 0)
		goto out;
	for (int i = 0; i < n; i++)
		aggs += share[i] > 0;
	pl = plan_create("crew", t, aggs);
	rc = pl == NULL ? -ENOMEM : 0;
	for (int i = 0; i < n && rc == 0; i++) {
		double T = tm.scatter_s + tm.broadcast_s, lat;
		int k;

		if (share[i] == 0)
			continue;
		for (int v = 0; v < n; v++)
			parent[v] = PLAN_ABSENT;
		for (int m = 0; m < p; m++) {
			int r = via[i * n + group[m]];

			parent[group[m]] = r >= 0 ? r : i;
			if (r >= 0 && parent[r] == PLAN_ABSENT)
				parent[r] = i;
		}
		parent[i] = PLAN_ROOT;
		k = plan_add_tree(pl, i, (double)share[i] * 8 / 1e9 / T, parent);
		if (k < 0) {
			rc = k;
			break;
		}
		lat = planner_tree_max_latency_ms(t, &pl->trees[k]);
		pl->trees[k].chunk_bytes =
			planner_chunk_bytes(share[i], pl->trees[k].rate_gbps, lat,
					    2 * plan_tree_depth(t, &pl->trees[k]));
	}
	f = rc == 0 ? fit_rates(t, pl) : 1;
	if (f < 0)
		rc = -ENOMEM;
	for (int k = 0; rc == 0 && f < 1 && k < pl->n_trees; k++)
		pl->trees[k].rate_gbps *= f;
	if (rc == 0)
		rc = plan_shares_from_rates(pl);
	if (rc != 0)
		snprintf(err, errlen, "crew: %s", strerror(-rc));
out:
	free(bw);
	free(eff);
	free(group);
	free(parent);
	free(via);
	free(share);
	if (rc != 0) {
		plan_free(pl);
		errno = -rc;
		return NULL;
	}
	return pl;
}
