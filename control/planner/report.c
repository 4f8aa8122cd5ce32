/* SPDX-License-Identifier: BSD-3-Clause
 *
 * The figures every front end of the planner reports of a plan (georeduce-plan and the
 * control process alike): its simulated AllReduce time, the packing bound it is measured
 * against, its tallest tree.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "packing.h"
#include "report.h"
#include "sim.h"

/* Predictions simulate at most about this many chunk transfers (about 0.3 s). */
#define PREDICT_MAX_TRANSFERS 1e6

double
plan_max_height(const struct topo *t, const struct plan *p)
{
	double h = 0;

	for (int i = 0; i < p->n_trees; i++) {
		double x = plan_tree_height_ms(t, &p->trees[i]);

		h = x > h ? x : h;
	}
	return h;
}

/* Predict with the simulator over the transport the chunks were sized for, every tree
 * paced at its planned rate as the dataplane does. */
int
plan_predict(const struct topo *t, struct plan *p, uint64_t bytes, int window)
{
	struct sim_params sp = SIM_PARAMS_DEFAULT;
	struct sim_result res;
	int rc;

	sp.window = window;
	sp.pace = true;
	if (topo_worker_sites(t) < 2) { /* nothing crosses the WAN */
		p->bytes = bytes;
		p->allreduce_seconds = 0;
		return 0;
	}
	/* A schedule of more than PREDICT_MAX_TRANSFERS chunk transfers is simulated with
	 * chunks coarser by a power of two (a slightly pessimistic prediction, since only the
	 * pipeline fill grows); the plan keeps its chunk sizes. */
	uint64_t *orig;
	double est = 0;
	int coarse = 1;

	for (int i = 0; i < p->n_trees; i++) {
		int nodes = 0;

		for (int v = 0; v < t->n_nodes; v++)
			nodes += p->trees[i].parent[v] != PLAN_ABSENT;
		est += ceil(p->trees[i].share * (double)bytes / (double)p->trees[i].chunk_bytes) *
		       2.0 * (nodes - 1);
	}
	while (est / coarse > PREDICT_MAX_TRANSFERS)
		coarse *= 2;
	orig = malloc(sizeof(*orig) * (size_t)(p->n_trees > 0 ? p->n_trees : 1));
	if (orig == NULL)
		return -ENOMEM;
	for (int i = 0; i < p->n_trees; i++)
		orig[i] = p->trees[i].chunk_bytes;
	for (;; coarse *= 2) {
		for (int i = 0; i < p->n_trees; i++)
			p->trees[i].chunk_bytes = orig[i] * (uint64_t)coarse;
		rc = sim_plan(t, p, bytes, &sp, &res);
		if (rc != -E2BIG || coarse > (1 << 20))
			break;
	}
	for (int i = 0; i < p->n_trees; i++)
		p->trees[i].chunk_bytes = orig[i];
	free(orig);

	if (rc != 0)
		return rc;
	p->bytes = bytes;
	p->allreduce_seconds = res.seconds;
	return 0;
}

void
plan_fmt_bytes(char *buf, size_t len, double b)
{
	if (b >= (1 << 30))
		snprintf(buf, len, "%.2f GiB", b / (1 << 30));
	else if (b >= (1 << 20))
		snprintf(buf, len, "%.2f MiB", b / (1 << 20));
	else
		snprintf(buf, len, "%.0f KiB", b / (1 << 10));
}

/* The packing bound (exact fractional spanning-tree packing). Negative on failure. */
double
plan_packing_bound(const struct topo *t, struct plan **solution)
{
	struct packing_opts po = {0};
	struct packing_result pr;
	struct plan *pool = plan_create("packing-bound", t, 64);
	double bound = -1;

	if (pool == NULL)
		return -1;
	/* Exact pricing proves the LP value optimal; otherwise (relay sites, or a stop at the
	 * column or time limit) report the proven upper bound if there is one, else the best
	 * packing found. */
	if (packing_solve(t, pool, &po, &pr) == 0)
		bound = pr.exact || !isfinite(pr.upper_gbps) ? pr.rate_gbps : pr.upper_gbps;
	if (solution != NULL && bound >= 0) {
		/* Keep only the trees in the LP solution. */
		struct plan *p = plan_create("packing-bound", t, pool->n_trees);

		for (int i = 0; p != NULL && i < pool->n_trees; i++)
			if (pool->trees[i].rate_gbps > 1e-4 * pr.rate_gbps)
				plan_add_tree(p, pool->trees[i].root, pool->trees[i].rate_gbps,
					      pool->trees[i].parent);
		if (p != NULL && plan_shares_from_rates(p) != 0) {
			plan_free(p);
			p = NULL;
		}
		*solution = p;
	}
	plan_free(pool);
	return bound;
}
