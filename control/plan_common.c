/* SPDX-License-Identifier: BSD-3-Clause
 *
 * What the georeduce-plan subcommands share: loading inputs with one-line errors,
 * prediction with the simulator, the packing bound, progress notes, table printing.
 */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "packing.h"
#include "plan_common.h"
#include "sim.h"

/* Predictions simulate at most about this many chunk transfers (about 0.3 s). */
#define PREDICT_MAX_TRANSFERS 1e6

bool plan_progress;

void
plan_note(const char *msg)
{
	if (plan_progress)
		fprintf(stderr, "  .. %s\n", msg);
}

/* getopt's '?': one line naming the offending option. */
void
plan_bad_option(const char *cmd, char **argv)
{
	cli_error(PROG, "%s: unknown option or missing value in '%s' (try '" PROG " %s --help')",
		  cmd, argv[optind - 1], cmd);
}

struct topo *
plan_load_topology(const char *path)
{
	char err[TOPO_ERR_MAX];
	struct topo *t;

	if (path == NULL) {
		cli_error(PROG, "--topology FILE is required");
		return NULL;
	}
	t = topo_load(path, err, sizeof(err));
	if (t == NULL)
		fprintf(stderr, "%s: %s\n", PROG, err);
	return t;
}

/* Load a plan and check it by the spec's rules (heights within h if h > 0); NULL after a
 * one-line error. */
struct plan *
plan_load_valid(const struct topo *t, const char *path, double h)
{
	char err[TOPO_ERR_MAX];
	struct plan *p = plan_load(t, path, err, sizeof(err));

	if (p == NULL) {
		fprintf(stderr, "%s: %s\n", PROG, err);
		return NULL;
	}
	if (plan_validate(t, p, h, err, sizeof(err)) != 0) {
		fprintf(stderr, "%s: %s: %s\n", PROG, path, err);
		plan_free(p);
		return NULL;
	}
	return p;
}

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

void
plan_print_trees(FILE *f, const struct topo *t, const struct plan *p)
{
	fprintf(f, "  %4s  %-20s %12s %7s %10s %6s %11s\n", "tree", "root", "rate Gbit/s", "share",
		"height ms", "depth", "chunk");
	for (int i = 0; i < p->n_trees; i++) {
		const struct plan_tree *tr = &p->trees[i];
		char chunk[32];

		plan_fmt_bytes(chunk, sizeof(chunk), (double)tr->chunk_bytes);
		fprintf(f, "  %4d  %-20s %12.4f %7.4f %10.2f %6d %11s\n", i, t->nodes[tr->root].id,
			tr->rate_gbps, tr->share, plan_tree_height_ms(t, tr), plan_tree_depth(t, tr),
			chunk);
	}
}

/* The packing bound (exact fractional spanning-tree packing). Negative on failure. */
double
plan_packing_bound(const struct topo *t, struct plan **solution)
{
	struct packing_opts po = { 0 };
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

