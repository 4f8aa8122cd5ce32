/* SPDX-License-Identifier: BSD-3-Clause
 *
 * georeduce-plan: the offline planner.
 *
 *   georeduce-plan mtree    --topology FILE [...]   plan a multi-tree AllReduce
 *   georeduce-plan compare  --topology FILE [...]   every algorithm side by side
 *   georeduce-plan simulate --topology FILE --plan FILE [...]
 *   georeduce-plan validate --topology FILE [--plan FILE] [--max-height-ms H]
 *   georeduce-plan draw     --topology FILE --plan FILE --output FILE.svg|.png|.dot
 *
 * Exit status: 0 success, 2 bad options or bad input files, 1 when planning fails on
 * valid input (for example no tree fits the height limit).
 */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "baselines.h"
#include "blueconnect.h"
#include "cli.h"
#include "crew.h"
#include "jsonutil.h"
#include "mtree.h"
#include "packing.h"
#include "plan.h"
#include "plan_common.h"
#include "selmcast.h"
#include "sim.h"
#include "topo.h"

#define DEFAULT_BYTES (1ull << 30)

static void
usage_main(FILE *f)
{
	fprintf(f,
		"Usage: " PROG " COMMAND [OPTIONS]\n"
		"\n"
		"Plan gradient AllReduce over a WAN topology (georeduce-topology/1).\n"
		"\n"
		"Commands:\n"
		"  mtree     plan a multi-tree AllReduce (mTree) and write a georeduce-plan/1 "
		"plan\n"
		"  compare   mTree against ring, single tree, parameter server and the packing "
		"bound\n"
		"  simulate  predict the AllReduce time of a plan, optionally over chunk sizes\n"
		"  validate  check a topology, and a plan against it\n"
		"  crew      plan a CREW partial reduce, or simulate training progress with it\n"
		"  blueconnect  decompose a hierarchical AllReduce (workers, gateways, sites)\n"
		"  selmcast  choose multicast receivers per round (SELMCAST) and write them\n"
		"  draw      draw a plan on its topology (SVG, PNG or DOT, with Graphviz)\n"
		"\n"
		"'" PROG " COMMAND --help' describes each command's options.\n"
		"Exit status: 0 ok, 1 planning failed on valid input, 2 bad options or input.\n");
}

/* ---- mtree ---- */

static void
usage_mtree(FILE *f)
{
	fprintf(f,
		"Usage: " PROG " mtree --topology FILE [OPTIONS]\n"
		"\n"
		"Plan a multi-tree AllReduce: candidate trees (GBST and column generation) under\n"
		"the height limit, ITH height search, at most K trees chosen by a MILP (GLPK),\n"
		"shares proportional to rates, chunk sizes from the pipelining model.\n"
		"\n"
		"  -t, --topology FILE     georeduce-topology/1 file ('-' for stdin)   [required]\n"
		"  -k, --max-trees K       at most K trees; 0 = unlimited              [10]\n"
		"  -H, --max-height-ms H   latency-weighted tree height limit; 0 = none [0]\n"
		"  -r, --min-rate-gbps R   smallest non-zero tree rate                  [0]\n"
		"      --rho X             ITH: lower the height limit while at least X\n"
		"                          of the rate remains (e.g. 0.95); 0 = off     [0]\n"
		"      --paper             candidates from GBST only (the paper's mTree)\n"
		"  -b, --bytes N           tensor size for chunk sizes and prediction\n"
		"                          (suffixes K M G, KiB MiB GiB)               [1GiB]\n"
		"  -o, --output FILE       write the plan there (default: stdout, and the\n"
		"                          summary goes to stderr)\n"
		"      --milp-seconds S    time limit of the MILP                       [0.5]\n"
		"  -w, --window W          transport the chunks are sized and predicted for:\n"
		"                          0 = windowed (latency hidden), 1 = one chunk\n"
		"                          per hop at a time (the paper's model)       [0]\n"
		"  -q, --quiet             no summary\n"
		"  -h, --help              this text\n");
}

/* mtree's own options, into its struct mtree_opts. */
static const struct option mtree_longopts[] = {
	{"min-rate-gbps", required_argument, NULL, 'r'},
	{"rho", required_argument, NULL, 'R'},
	{"paper", no_argument, NULL, 'P'},
	{NULL, 0, NULL, 0},
};

static int
mtree_opt(void *ctx, int c, const char *arg)
{
	struct mtree_opts *mo = ctx;

	switch (c) {
	case 'r':
		return cli_double(PROG, "min-rate-gbps", arg, 0, 1e9, &mo->min_rate_gbps);
	case 'R':
		return cli_double(PROG, "rho", arg, 0, 1, &mo->rho);
	case 'P':
		mo->paper_only = true;
		return 0;
	default:
		return -1;
	}
}

static const struct plan_cmd mtree_cmd = {
	.name = "mtree",
	.shortopts = "t:k:H:r:b:o:w:qh",
	.common = PLAN_OPT_TOPOLOGY | PLAN_OPT_MAX_TREES | PLAN_OPT_MAX_HEIGHT | PLAN_OPT_BYTES |
		  PLAN_OPT_OUTPUT | PLAN_OPT_MILP_SECONDS | PLAN_OPT_WINDOW | PLAN_OPT_QUIET,
	.opts = mtree_longopts,
	.opt = mtree_opt,
	.usage = usage_mtree,
};

/* mtree's summary of plan p: on stderr when the plan went to stdout. */
static void
mtree_summary(FILE *sum, const struct topo *t, const struct plan *p, const struct mtree_stats *st)
{
	double bound;

	plan_note("computing the packing bound");
	bound = plan_packing_bound(t, NULL);
	fprintf(sum, "%s plan for '%s': %d trees, %.4f Gbit/s aggregate", p->algorithm, t->name,
		p->n_trees, plan_total_rate(p));
	if (bound > 0)
		fprintf(sum, " (%.3f of the packing bound %.4f)", plan_total_rate(p) / bound,
			bound);
	fprintf(sum, "\n");
	plan_print_trees(sum, t, p);
	fprintf(sum, "predicted AllReduce of %llu bytes: %.4f s\n", (unsigned long long)p->bytes,
		p->allreduce_seconds);
	fprintf(sum,
		"planned in %.3f s: %d candidates (%d from GBST), %d LP solves, "
		"%d ITH probes, height limit %s, MILP %s\n",
		st->seconds, st->candidates, st->gbst_trees, st->lp_iterations, st->ith_probes,
		st->height_limit_ms > 0 ? "set" : "none",
		st->milp_optimal ? "optimal" : "stopped at its time limit");
	if (st->height_limit_ms > 0)
		fprintf(sum, "height limit used: %.0f ms\n", st->height_limit_ms);
}

int
cmd_mtree(int argc, char **argv)
{
	struct mtree_opts mo = MTREE_OPTS_DEFAULT;
	struct plan_cli pc = {.bytes = &mo.bytes,
			      .max_trees = &mo.max_trees,
			      .max_height_ms = &mo.max_height_ms,
			      .window = &mo.window,
			      .milp_seconds = &mo.milp_seconds};
	struct mtree_stats st;
	char err[TOPO_ERR_MAX];
	struct topo *t = NULL;
	struct plan *p = NULL;
	FILE *out, *sum = stdout;
	int rc = CLI_EXIT_USAGE;

	if (!plan_cli_parse(&mtree_cmd, &pc, &mo, argc, argv, &rc))
		return rc;
	t = plan_load_topology(pc.topo_path);
	if (t == NULL)
		goto out;
	plan_note("planning mTree");
	p = mtree_plan(t, &mo, &st, err, sizeof(err));
	if (p == NULL) {
		cli_error(PROG, "mtree: %s", err);
		rc = CLI_EXIT_FAIL;
		goto out;
	}
	plan_note("simulating");
	if (plan_predict(t, p, mo.bytes, mo.window) != 0) {
		cli_error(PROG, "mtree: the simulator rejected the plan");
		rc = CLI_EXIT_FAIL;
		goto out;
	}
	if (plan_validate(t, p, mo.max_height_ms, err, sizeof(err)) != 0) {
		cli_error(PROG, "mtree: internal error, the plan is invalid: %s", err);
		rc = CLI_EXIT_FAIL;
		goto out;
	}
	out = plan_output_open(pc.out_path);
	if (out == NULL)
		goto out;
	if (out == stdout)
		sum = stderr;
	if (plan_output_close(out, plan_write(t, p, out)) != 0) {
		rc = CLI_EXIT_FAIL;
		goto out;
	}
	if (!pc.quiet)
		mtree_summary(sum, t, p, &st);
	rc = 0;
out:
	plan_free(p);
	topo_free(t);
	return rc;
}

/* ---- compare ---- */

struct row {
	const char *name;
	double rate; /* algorithm bandwidth, Gbit/s */
	int trees;
	double height_ms;
	double seconds; /* predicted AllReduce time */
	double plan_s;  /* planning time */
};

static void
usage_compare(FILE *f)
{
	fprintf(f,
		"Usage: " PROG " compare --topology FILE [OPTIONS]\n"
		"\n"
		"One row per algorithm on the same topology: aggregate rate (algorithm "
		"bandwidth),\n"
		"its fraction of the optimal tree-packing bound, trees, largest tree height,\n"
		"predicted AllReduce time (simulator) and speedup over the best ring. Also, where\n"
		"they apply: CREW's load-balanced all-to-all (every pair of worker sites linked;\n"
		"bandwidth-only LP) and BlueConnect's hierarchical decomposition (its alpha-beta\n"
		"model with the LAN stages). SELMCAST solves another problem (multicast to at\n"
		"least p receivers) and has no row.\n"
		"\n"
		"  -t, --topology FILE     georeduce-topology/1 file                   [required]\n"
		"  -b, --bytes N           tensor size (suffixes K M G, KiB MiB GiB)  [1GiB]\n"
		"  -k, --max-trees K       mTree's tree limit                          [10]\n"
		"  -H, --max-height-ms H   mTree's height limit; 0 = none              [0]\n"
		"  -w, --window W          transport the chunks are sized and predicted for:\n"
		"                          0 = windowed (latency hidden), 1 = one chunk\n"
		"                          per hop at a time (the paper's model)       [0]\n"
		"      --json              machine-readable output\n"
		"  -h, --help              this text\n");
}

static double
elapsed_since(const struct timespec *t0)
{
	struct timespec t1;

	clock_gettime(CLOCK_MONOTONIC, &t1);
	return (double)(t1.tv_sec - t0->tv_sec) + (double)(t1.tv_nsec - t0->tv_nsec) * 1e-9;
}

static int
row_from_plan(const struct topo *t, struct plan *p, const char *name, uint64_t bytes, int window,
	      double plan_s, struct row *r)
{
	if (p == NULL)
		return -1;
	r->plan_s = plan_s;
	if (plan_predict(t, p, bytes, window) != 0)
		return -1;
	r->name = name;
	r->rate = plan_total_rate(p);
	r->trees = p->n_trees;
	r->height_ms = plan_max_height(t, p);
	r->seconds = p->allreduce_seconds;
	return 0;
}

/*
 * CREW's load-balanced all-to-all over every worker site (the partial reduce with every
 * site ready): each site aggregates the share the exact LP gives it. Needs a direct link
 * between every pair of worker sites; bandwidth only (the LP has no latency term).
 */
static int
crew_row(const struct topo *t, uint64_t bytes, struct row *r)
{
	int n = t->n_nodes, p = 0, rc = -1;
	double *gbps = crew_matrix_from_topo(t);
	int *group = malloc(sizeof(*group) * (size_t)n);
	uint64_t *share = malloc(sizeof(*share) * (size_t)n);
	struct crew_times tm;
	char err[256];

	for (int v = 0; gbps != NULL && group != NULL && v < n; v++)
		if (t->nodes[v].workers > 0)
			group[p++] = v;
	if (gbps != NULL && group != NULL && share != NULL && p >= 2) {
		struct crew_problem pb = {n, gbps, group, p, bytes};

		if (crew_solve(&pb, CREW_SCHEME_CREW, share, &tm, err, sizeof(err)) == 0 &&
		    tm.scatter_s + tm.broadcast_s > 0 && isfinite(tm.scatter_s + tm.broadcast_s)) {
			r->name = "crew-all-to-all";
			r->seconds = tm.scatter_s + tm.broadcast_s;
			r->rate = (double)bytes * 8 / r->seconds / 1e9;
			r->trees = 0;
			r->height_ms = 0;
			rc = 0;
		}
	}
	free(gbps);
	free(group);
	free(share);
	return rc;
}

/* BlueConnect's cheapest decomposition over workers, gateways and sites (its own
 * alpha-beta model, which also counts the LAN stages). */
static int
blueconnect_row(const struct topo *t, uint64_t bytes, int max_trees, struct row *r)
{
	struct bc_opts o = BC_OPTS_DEFAULT;
	struct bc_result res;
	char err[256];
	int rc = -1;

	o.bytes = bytes;
	o.max_trees = max_trees;
	if (blueconnect_plan(t, &o, &res, err, sizeof(err)) == 0 && res.h.seconds > 0) {
		r->name = "blueconnect";
		r->seconds = res.h.seconds;
		r->rate = res.wan_rate_gbps; /* the WAN stage's trees, as the tree rows */
		r->trees = res.plan != NULL ? res.plan->n_trees : 0;
		r->height_ms = res.wan_height_ms;
		rc = 0;
	}
	bc_result_fini(&res);
	return rc;
}

static const struct plan_cmd compare_cmd = {
	.name = "compare",
	.shortopts = "t:b:k:H:w:h",
	.common = PLAN_OPT_TOPOLOGY | PLAN_OPT_BYTES | PLAN_OPT_MAX_TREES | PLAN_OPT_MAX_HEIGHT |
		  PLAN_OPT_JSON | PLAN_OPT_WINDOW,
	.usage = usage_compare,
};

/* One compare: its inputs and the rows so far. */
struct compare_run {
	const struct topo *t;
	uint64_t bytes;       /* the tensor size */
	struct mtree_opts mo; /* mTree's options */
	struct sim_params sp; /* the simulation of the ring and the parameter server */
	struct row rows[12];
	int n_rows;
	int ring_row; /* the ring's row, or -1 */
	double bound; /* the packing bound, Gbit/s */
};

/* The packing bound, and its solution as a plan (unlimited trees and height). 0, or -1
 * after a one-line error. */
static int
compare_packing(struct compare_run *cr)
{
	const struct topo *t = cr->t;
	uint64_t bytes = cr->bytes;
	struct plan *p = NULL;
	struct timespec t0;

	plan_note("packing bound");
	clock_gettime(CLOCK_MONOTONIC, &t0);
	cr->bound = plan_packing_bound(t, &p);
	if (cr->bound < 0 || p == NULL) {
		cli_error(PROG, "compare: the packing LP failed");
		plan_free(p);
		return -1;
	}
	for (int i = 0; i < p->n_trees; i++)
		p->trees[i].chunk_bytes = planner_chunk_bytes(
			(uint64_t)(p->trees[i].share * (double)bytes), p->trees[i].rate_gbps,
			cr->mo.window == 1 ? planner_tree_max_latency_ms(t, &p->trees[i]) : 0,
			2 * plan_tree_depth(t, &p->trees[i]));
	if (row_from_plan(t, p, "packing-bound", bytes, cr->mo.window, elapsed_since(&t0),
			  &cr->rows[cr->n_rows]) == 0)
		cr->rows[cr->n_rows++].rate = cr->bound;
	plan_free(p);
	return 0;
}

/* mTree with the given K, with K unlimited, and the paper's candidates only. 0, or -1
 * after a one-line error. */
static int
compare_mtree(struct compare_run *cr)
{
	static const char *names[] = {"mtree", "mtree-unlimited", "mtree-paper"};
	char err[TOPO_ERR_MAX];

	for (int variant = 0; variant < 3; variant++) {
		struct mtree_opts v = cr->mo;
		struct timespec t0;
		struct plan *p;

		if (variant == 1 && cr->mo.max_trees == 0)
			continue;
		if (variant == 1)
			v.max_trees = 0;
		if (variant == 2)
			v.paper_only = true;
		plan_note(names[variant]);
		clock_gettime(CLOCK_MONOTONIC, &t0);
		p = mtree_plan(cr->t, &v, NULL, err, sizeof(err));
		if (p == NULL) {
			cli_error(PROG, "compare: %s: %s", names[variant], err);
			return -1;
		}
		if (row_from_plan(cr->t, p, names[variant], cr->bytes, cr->mo.window,
				  elapsed_since(&t0), &cr->rows[cr->n_rows]) == 0)
			cr->n_rows++;
		plan_free(p);
	}
	return 0;
}

/* The baselines: the single best tree, the ring and the parameter server. */
static void
compare_baselines(struct compare_run *cr)
{
	const struct topo *t = cr->t;
	uint64_t bytes = cr->bytes;
	struct ring_plan rp = {0};
	struct timespec t0;
	struct ps_plan ps;
	struct plan *p;

	/* Single best tree. */
	clock_gettime(CLOCK_MONOTONIC, &t0);
	p = baseline_single_tree(t, bytes, cr->mo.window);
	if (row_from_plan(t, p, "single-tree", bytes, cr->mo.window, elapsed_since(&t0),
			  &cr->rows[cr->n_rows]) == 0)
		cr->n_rows++;
	plan_free(p);
	/* Ring. */
	plan_note("ring");
	clock_gettime(CLOCK_MONOTONIC, &t0);
	if (baseline_ring(t, 2.0, &rp) == 0) {
		struct sim_result res;
		uint64_t seg = bytes / (uint64_t)(rp.m > 0 ? rp.m : 1);
		uint64_t chunk = planner_chunk_bytes(seg, rp.fwd_gbps,
						     cr->mo.window == 1 ? rp.step_latency_ms : 0,
						     2 * (rp.m - 1));
		struct row *r = &cr->rows[cr->n_rows];

		r->name = "ring";
		r->rate = rp.rate_gbps;
		r->trees = 0;
		r->height_ms = 0;
		r->plan_s = elapsed_since(&t0);
		int src;

		while ((src = sim_ring(t, rp.order, rp.m, rp.fwd_fraction, bytes, chunk, &cr->sp,
				       &res)) == -E2BIG &&
		       chunk < bytes)
			chunk *= 2; /* too large to simulate: coarser chunks, pessimistic */
		if (src == 0) {
			r->seconds = res.seconds;
			cr->ring_row = cr->n_rows++;
		}
	}
	ring_plan_fini(&rp);
	/* Parameter server. */
	plan_note("parameter server");
	clock_gettime(CLOCK_MONOTONIC, &t0);
	if (baseline_ps(t, &ps) == 0) {
		struct sim_result res;
		uint64_t chunk = planner_chunk_bytes(bytes, ps.rate_gbps,
						     cr->mo.window == 1 ? ps.max_latency_ms : 0, 4);
		struct row *r = &cr->rows[cr->n_rows];

		r->name = "ps";
		r->rate = ps.rate_gbps;
		r->trees = 0;
		r->height_ms = ps.max_latency_ms;
		r->plan_s = elapsed_since(&t0);
		int src;

		while ((src = sim_ps(t, ps.server, bytes, chunk, &cr->sp, &res)) == -E2BIG &&
		       chunk < bytes)
			chunk *= 2;
		if (src == 0) {
			r->seconds = res.seconds;
			cr->n_rows++;
		}
	}
}

/* The other AllReduce decompositions, where the topology allows them. */
static void
compare_decompositions(struct compare_run *cr)
{
	struct timespec t0;

	plan_note("crew all-to-all");
	clock_gettime(CLOCK_MONOTONIC, &t0);
	if (crew_row(cr->t, cr->bytes, &cr->rows[cr->n_rows]) == 0) {
		cr->rows[cr->n_rows].plan_s = elapsed_since(&t0);
		cr->n_rows++;
	}
	plan_note("blueconnect");
	clock_gettime(CLOCK_MONOTONIC, &t0);
	if (blueconnect_row(cr->t, cr->bytes, cr->mo.max_trees, &cr->rows[cr->n_rows]) == 0) {
		cr->rows[cr->n_rows].plan_s = elapsed_since(&t0);
		cr->n_rows++;
	}
}

static void
compare_print_json(const struct compare_run *cr)
{
	json_t *root = json_pack("{s:s, s:I, s:f, s:[]}", "topology", cr->t->name, "bytes",
				 (json_int_t)cr->bytes, "bound_gbps", cr->bound, "rows");
	json_t *arr = json_object_get(root, "rows");

	for (int i = 0; i < cr->n_rows; i++) {
		const struct row *r = &cr->rows[i];
		json_t *o =
			json_pack("{s:s, s:f, s:f, s:i, s:f, s:f, s:f}", "algorithm", r->name,
				  "rate_gbps", r->rate, "fraction_of_bound", r->rate / cr->bound,
				  "trees", r->trees, "max_height_ms", r->height_ms,
				  "allreduce_seconds", r->seconds, "planning_seconds", r->plan_s);

		if (cr->ring_row >= 0)
			json_object_set_new(o, "speedup_over_ring",
					    json_real(cr->rows[cr->ring_row].seconds / r->seconds));
		json_array_append_new(arr, o);
	}
	json_util_dump_new(root, stdout);
}

static void
compare_print_text(const struct compare_run *cr)
{
	const struct topo *t = cr->t;

	printf("topology '%s': %d sites (%d with workers), %d links; AllReduce of %llu "
	       "bytes\n",
	       t->name, t->n_nodes, topo_worker_sites(t), t->n_links,
	       (unsigned long long)cr->bytes);
	printf("%-16s %12s %9s %6s %11s %12s %9s %9s\n", "algorithm", "rate Gbit/s", "of bound",
	       "trees", "height ms", "allreduce s", "vs ring", "plan s");
	for (int i = 0; i < cr->n_rows; i++) {
		const struct row *r = &cr->rows[i];
		char sp_s[16] = "-", trees[16] = "-";

		if (cr->ring_row >= 0)
			snprintf(sp_s, sizeof(sp_s), "%.2fx",
				 cr->rows[cr->ring_row].seconds / r->seconds);
		if (r->trees > 0)
			snprintf(trees, sizeof(trees), "%d", r->trees);
		printf("%-16s %12.4f %9.3f %6s %11.1f %12.3f %9s %9.3f\n", r->name, r->rate,
		       r->rate / cr->bound, trees, r->height_ms, r->seconds, sp_s, r->plan_s);
	}
}

int
cmd_compare(int argc, char **argv)
{
	struct compare_run cr = {.bytes = DEFAULT_BYTES,
				 .mo = MTREE_OPTS_DEFAULT,
				 .sp = SIM_PARAMS_DEFAULT,
				 .ring_row = -1};
	struct plan_cli pc = {.bytes = &cr.bytes,
			      .max_trees = &cr.mo.max_trees,
			      .max_height_ms = &cr.mo.max_height_ms,
			      .window = &cr.mo.window};
	struct topo *t = NULL;
	int rc = CLI_EXIT_USAGE;

	if (!plan_cli_parse(&compare_cmd, &pc, NULL, argc, argv, &rc))
		return rc;
	t = plan_load_topology(pc.topo_path);
	if (t == NULL)
		goto out;
	if (topo_worker_sites(t) < 2) {
		printf("topology '%s' has one worker site: nothing to synchronise over the WAN\n",
		       t->name);
		rc = 0;
		goto out;
	}
	cr.t = t;
	cr.mo.bytes = cr.bytes;
	cr.sp.window = cr.mo.window;
	rc = CLI_EXIT_FAIL;
	if (compare_packing(&cr) != 0 || compare_mtree(&cr) != 0)
		goto out;
	compare_baselines(&cr);
	compare_decompositions(&cr);
	if (pc.json)
		compare_print_json(&cr);
	else
		compare_print_text(&cr);
	rc = 0;
out:
	topo_free(t);
	return rc;
}

/* ---- simulate ---- */

static void
usage_simulate(FILE *f)
{
	fprintf(f,
		"Usage: " PROG " simulate --topology FILE --plan FILE [OPTIONS]\n"
		"\n"
		"Predict the AllReduce time of a tree plan with the simulator (alpha-beta,\n"
		"pipelined chunks, links shared max-min fairly).\n"
		"\n"
		"  -t, --topology FILE     georeduce-topology/1 file                   [required]\n"
		"  -p, --plan FILE         georeduce-plan/1 file                       [required]\n"
		"  -b, --bytes N           tensor size                    [the plan's, or 1GiB]\n"
		"  -w, --window W          chunks in flight per hop; 0 = unlimited,\n"
		"                          1 = one chunk per link (the paper's model)  [0]\n"
		"  -a, --alpha-us A        per-chunk, per-hop overhead in microseconds [20]\n"
		"      --pace              cap each tree at its planned rate\n"
		"      --sweep-chunks      also simulate every tree with 1, 2, 4, ... chunks\n"
		"                          (up to 4096) and print time against chunk count\n"
		"  -h, --help              this text\n");
}

/* simulate's own options. */
struct simulate_cli {
	struct sim_params sp;
	double alpha_us;
	bool sweep;
};

static const struct option simulate_longopts[] = {
	{"window", required_argument, NULL, 'w'},
	{"alpha-us", required_argument, NULL, 'a'},
	{"pace", no_argument, NULL, 'P'},
	{"sweep-chunks", no_argument, NULL, 'S'},
	{NULL, 0, NULL, 0},
};

static int
simulate_opt(void *ctx, int c, const char *arg)
{
	struct simulate_cli *sc = ctx;

	switch (c) {
	case 'w':
		return cli_int(PROG, "window", arg, 0, 1 << 20, &sc->sp.window);
	case 'a':
		return cli_double(PROG, "alpha-us", arg, 0, 1e9, &sc->alpha_us);
	case 'P':
		sc->sp.pace = true;
		return 0;
	case 'S':
		sc->sweep = true;
		return 0;
	default:
		return -1;
	}
}

static const struct plan_cmd simulate_cmd = {
	.name = "simulate",
	.shortopts = "t:p:b:w:a:h",
	.common = PLAN_OPT_TOPOLOGY | PLAN_OPT_PLAN | PLAN_OPT_BYTES,
	.opts = simulate_longopts,
	.opt = simulate_opt,
	.usage = usage_simulate,
};

int
cmd_simulate(int argc, char **argv)
{
	struct simulate_cli sc = {.sp = SIM_PARAMS_DEFAULT};
	uint64_t bytes = 0;
	struct plan_cli pc = {.bytes = &bytes};
	struct sim_params *sp = &sc.sp;
	struct sim_result res;
	struct topo *t = NULL;
	struct plan *p = NULL;
	int rc = CLI_EXIT_USAGE;

	sc.alpha_us = sp->alpha_s * 1e6;
	if (!plan_cli_parse(&simulate_cmd, &pc, &sc, argc, argv, &rc))
		return rc;
	sp->alpha_s = sc.alpha_us * 1e-6;
	t = plan_load_topology(pc.topo_path);
	if (t == NULL)
		goto out;
	p = plan_load_valid(t, pc.plan_path, 0);
	if (p == NULL)
		goto out;
	if (bytes == 0)
		bytes = p->bytes > 0 ? p->bytes : DEFAULT_BYTES;
	rc = CLI_EXIT_FAIL;
	if (sim_plan(t, p, bytes, sp, &res) != 0) {
		cli_error(PROG, "simulate: the simulator failed");
		goto out;
	}
	printf("AllReduce of %llu bytes: %.6f s (%llu transfers, window %d, alpha %.1f us%s)\n",
	       (unsigned long long)bytes, res.seconds, (unsigned long long)res.transfers,
	       sp->window, sc.alpha_us, sp->pace ? ", paced" : "");
	if (sc.sweep) {
		printf("%8s %14s %12s\n", "chunks", "chunk bytes", "seconds");
		for (uint64_t k = 1; k <= 4096; k *= 2) {
			for (int i = 0; i < p->n_trees; i++) {
				uint64_t v = (uint64_t)(p->trees[i].share * (double)bytes);

				p->trees[i].chunk_bytes = (v + k - 1) / k > 0 ? (v + k - 1) / k : 1;
			}
			if (sim_plan(t, p, bytes, sp, &res) != 0)
				break;
			printf("%8llu %14llu %12.6f\n", (unsigned long long)k,
			       (unsigned long long)p->trees[0].chunk_bytes, res.seconds);
		}
	}
	rc = 0;
out:
	plan_free(p);
	topo_free(t);
	return rc;
}

/* ---- validate ---- */

static void
usage_validate(FILE *f)
{
	fprintf(f,
		"Usage: " PROG " validate --topology FILE [--plan FILE] [--max-height-ms H]\n"
		"\n"
		"Check a topology file and, if given, a plan against it (trees cover every worker\n"
		"site, parent pairs are links, link loads within capacity, shares sum to 1,\n"
		"heights within H). Prints one line; exit status 0 if valid, 2 if not.\n");
}

/*
 * A plan's trees by the spec's rules (if it has any), and each section of the other
 * algorithms it carries by that section's parser: "partial_reduce" (CREW), "multicast"
 * (SELMCAST), "hierarchy" (BlueConnect). A plan needs trees or one of the first two.
 */
static int
validate_plan(const struct topo *t, const char *path, double h)
{
	char err[TOPO_ERR_MAX];
	char *text = json_util_read_file(path, err, sizeof(err));
	json_t *doc = NULL;
	json_error_t je;
	int rc = CLI_EXIT_USAGE, n_trees;
	struct plan *p = NULL;
	const char *what = "trees";

	if (text == NULL) {
		fprintf(stderr, "%s: %s\n", PROG, err);
		return CLI_EXIT_USAGE;
	}
	p = plan_parse(t, text, path, err, sizeof(err));
	doc = json_loads(text, 0, &je);
	if (p == NULL || doc == NULL) {
		fprintf(stderr, "%s: %s\n", PROG, p == NULL ? err : je.text);
		goto out;
	}
	n_trees = p->n_trees;
	if (n_trees > 0 && plan_validate(t, p, h, err, sizeof(err)) != 0) {
		fprintf(stderr, "%s: %s: %s\n", PROG, path, err);
		goto out;
	}
	if (json_object_get(doc, "partial_reduce") != NULL) {
		struct crew_section cs = {0};
		int r = crew_section_load(t, path, &cs, err, sizeof(err));

		crew_section_fini(&cs);
		if (r != 0) {
			fprintf(stderr, "%s: %s\n", PROG, err);
			goto out;
		}
		what = "partial_reduce";
	} else if (json_object_get(doc, "multicast") != NULL) {
		struct selmcast_plan *sp = selmcast_plan_parse(t, text, path, err, sizeof(err));

		if (sp == NULL) {
			fprintf(stderr, "%s: %s\n", PROG, err);
			goto out;
		}
		selmcast_plan_free(sp);
		what = "multicast";
	} else if (n_trees == 0) {
		fprintf(stderr,
			"%s: %s: plan has no trees and no partial_reduce or multicast "
			"section\n",
			PROG, path);
		goto out;
	}
	if (json_object_get(doc, "hierarchy") != NULL) {
		struct bc_hierarchy bh;

		memset(&bh, 0, sizeof(bh));
		if (blueconnect_load(t, path, &bh, err, sizeof(err)) != 0) {
			bc_hierarchy_fini(&bh);
			fprintf(stderr, "%s: %s\n", PROG, err);
			goto out;
		}
		bc_hierarchy_fini(&bh);
		what = "trees and hierarchy";
	}
	printf("%s: valid plan (%s): %d trees, %.4f Gbit/s\n", path, what, n_trees,
	       plan_total_rate(p));
	rc = 0;
out:
	json_decref(doc);
	plan_free(p);
	free(text);
	return rc;
}

static const struct plan_cmd validate_cmd = {
	.name = "validate",
	.shortopts = "t:p:H:h",
	.common = PLAN_OPT_TOPOLOGY | PLAN_OPT_PLAN | PLAN_OPT_MAX_HEIGHT,
	.usage = usage_validate,
};

int
cmd_validate(int argc, char **argv)
{
	double h = 0;
	struct plan_cli pc = {.max_height_ms = &h};
	struct topo *t = NULL;
	int rc = CLI_EXIT_USAGE;

	if (!plan_cli_parse(&validate_cmd, &pc, NULL, argc, argv, &rc))
		return rc;
	t = plan_load_topology(pc.topo_path);
	if (t == NULL)
		goto out;
	if (pc.plan_path == NULL) {
		printf("%s: valid topology '%s': %d nodes (%d with workers), %d links\n",
		       pc.topo_path, t->name, t->n_nodes, topo_worker_sites(t), t->n_links);
		rc = 0;
		goto out;
	}
	rc = validate_plan(t, pc.plan_path, h);
out:
	topo_free(t);
	return rc;
}

int
main(int argc, char **argv)
{
	static const struct {
		const char *name;
		int (*fn)(int, char **);
	} cmds[] = {
		{"mtree", cmd_mtree},       {"compare", cmd_compare},
		{"simulate", cmd_simulate}, {"validate", cmd_validate},
		{"crew", cmd_crew},         {"blueconnect", cmd_blueconnect},
		{"selmcast", cmd_selmcast}, {"draw", cmd_draw},
	};

	plan_progress = isatty(STDERR_FILENO);
	opterr = 0; /* plan_cli_parse() reports */
	if (argc < 2) {
		cli_error(PROG, "missing command (try '" PROG " --help')");
		return CLI_EXIT_USAGE;
	}
	if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0 ||
	    strcmp(argv[1], "help") == 0) {
		usage_main(stdout);
		return 0;
	}
	for (size_t i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++)
		if (strcmp(argv[1], cmds[i].name) == 0)
			return cmds[i].fn(argc - 1, argv + 1);
	cli_error(PROG, "unknown command '%s' (try --help)", argv[1]);
	return CLI_EXIT_USAGE;
}
