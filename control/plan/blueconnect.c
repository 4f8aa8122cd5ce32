/* SPDX-License-Identifier: BSD-3-Clause
 *
 * georeduce-plan blueconnect: a hierarchical AllReduce (workers, gateways, sites over the
 * WAN) decomposed BlueConnect-style, every decomposition's alpha-beta cost beside a flat
 * ring over all workers and mTree over the sites alone; writes the WAN trees with the
 * `hierarchy` section as a georeduce-plan/1 plan.
 */
#include <errno.h>
#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "blueconnect.h"
#include "cli.h"
#include "jsonutil.h"
#include "plan_common.h"

static void
usage_blueconnect(FILE *f)
{
	fprintf(f,
		"Usage: " PROG " blueconnect --topology FILE [OPTIONS]\n"
		"\n"
		"Decompose an AllReduce over workers (W per gateway), gateways (G per site) and\n"
		"sites into reduce-scatter stages on the LAN, one AllReduce over the WAN (mTree\n"
		"trees, every gateway carrying its byte range) and all-gather stages; print every\n"
		"decomposition's alpha-beta time beside a flat ring over all workers and mTree\n"
		"over the sites alone, and write the cheapest as a georeduce-plan/1 plan.\n"
		"\n"
		"  -t, --topology FILE           georeduce-topology/1 file ('-' for stdin) "
		"[required]\n"
		"  -g, --gateways G              gateways at every worker site  [the topology's]\n"
		"  -W, --workers-per-gateway W   every worker site gets G x W workers\n"
		"                                                               [the topology's]\n"
		"  -b, --bytes N                 tensor size (suffixes K M G, KiB MiB GiB) [1GiB]\n"
		"  -k, --max-trees K             trees of the WAN stage; 0 = unlimited     [10]\n"
		"  -o, --output FILE             write the plan there (default: stdout, and the\n"
		"                                summary goes to stderr)\n"
		"  -q, --quiet                   no summary\n"
		"  -h, --help                    this text\n");
}

static void
print_stages(FILE *f, const struct bc_stage *st, int n)
{
	for (int i = 0; i < n; i++) {
		static const char *ops[] = {"rs", "ar", "ag"};
		char lv[4];

		bc_levels_str(st[i].levels, lv);
		fprintf(f, "%s%s %s %s(%d)", i > 0 ? " > " : "", ops[st[i].op],
			bc_fabric_name(st[i].fabric), lv, st[i].group_size);
	}
}

static void
print_summary(FILE *f, const struct topo *t, const struct bc_result *r, uint64_t bytes)
{
	const struct bc_hierarchy *h = &r->h;
	char nb[32];

	plan_fmt_bytes(nb, sizeof(nb), (double)bytes);
	fprintf(f, "blueconnect plan for '%s': %d worker sites, %d workers; AllReduce of %s\n",
		t->name, r->wan_sites, r->ranks, nb);
	fprintf(f, "  %-20s %8s %8s %9s\n", "site", "workers", "gateways", "per gw");
	for (int i = 0; i < h->n_sites; i++)
		fprintf(f, "  %-20s %8d %8d %9d\n", t->nodes[h->sites[i].node].id,
			h->sites[i].workers, h->sites[i].gateways, h->sites[i].per_gateway);
	fprintf(f, "WAN stage: %d trees, %.4f Gbit/s aggregate, height %.1f ms, depth %d\n",
		r->plan->n_trees, r->wan_rate_gbps, r->wan_height_ms, r->wan_depth);
	fprintf(f, "  %-12s %12s  %s\n", "candidate", "seconds",
		"stages (op fabric levels(group))");
	for (int i = 0; i < r->n_candidates; i++) {
		fprintf(f, "%s %-12s %12.4f  ", i == r->chosen ? "*" : " ", r->cand[i].name,
			r->cand[i].seconds);
		print_stages(f, r->cand[i].stages, r->cand[i].n_stages);
		fputc('\n', f);
	}
	fprintf(f, "  %-12s %12.4f\n", "flat ring", h->flat_ring_seconds);
	fprintf(f, "  %-12s %12.4f\n", "site mTree", h->site_mtree_seconds);
	fprintf(f, "chosen %s: %.4f s, %.2fx faster than the flat ring, %.2fx site-level mTree\n",
		h->factorisation, h->seconds,
		h->seconds > 0 ? h->flat_ring_seconds / h->seconds : 1.0,
		h->seconds > 0 ? h->site_mtree_seconds / h->seconds : 1.0);
}

/* Write the plan and read its hierarchy section back with the strict parser. */
static int
write_plan(const struct topo *t, const struct bc_result *r, const char *out_path, FILE **sum)
{
	struct bc_hierarchy back;
	char err[TOPO_ERR_MAX];
	json_t *doc;
	FILE *out;
	int rc;

	doc = plan_to_json(t, r->plan);
	if (doc == NULL) {
		cli_error(PROG, "blueconnect: out of memory");
		return CLI_EXIT_FAIL;
	}
	rc = blueconnect_parse(t, doc, "plan", &back, err, sizeof(err));
	bc_hierarchy_fini(&back);
	if (rc != 0) {
		json_decref(doc);
		cli_error(PROG, "blueconnect: internal error, the hierarchy section is invalid: %s",
			  err);
		return CLI_EXIT_FAIL;
	}
	out = plan_output_open(out_path);
	if (out == NULL) {
		json_decref(doc);
		return CLI_EXIT_USAGE;
	}
	if (out == stdout)
		*sum = stderr;
	if (plan_output_close(out, json_util_dump_new(doc, out)) != 0)
		return CLI_EXIT_FAIL;
	return 0;
}

/* blueconnect's own options, into its struct bc_opts. */
static const struct option blueconnect_longopts[] = {
	{"gateways", required_argument, NULL, 'g'},
	{"workers-per-gateway", required_argument, NULL, 'W'},
	{NULL, 0, NULL, 0},
};

static int
blueconnect_opt(void *ctx, int c, const char *arg)
{
	struct bc_opts *bo = ctx;

	switch (c) {
	case 'g':
		return cli_int(PROG, "gateways", arg, 1, BC_RANKS_MAX, &bo->gateways);
	case 'W':
		return cli_int(PROG, "workers-per-gateway", arg, 1, BC_RANKS_MAX,
			       &bo->workers_per_gateway);
	default:
		return -1;
	}
}

static const struct plan_cmd blueconnect_cmd = {
	.name = "blueconnect",
	.shortopts = "t:g:W:b:k:o:qh",
	.common = PLAN_OPT_TOPOLOGY | PLAN_OPT_BYTES | PLAN_OPT_MAX_TREES | PLAN_OPT_OUTPUT |
		  PLAN_OPT_QUIET,
	.opts = blueconnect_longopts,
	.opt = blueconnect_opt,
	.usage = usage_blueconnect,
};

int
cmd_blueconnect(int argc, char **argv)
{
	struct bc_opts bo = BC_OPTS_DEFAULT;
	struct plan_cli pc = {.bytes = &bo.bytes, .max_trees = &bo.max_trees};
	struct bc_result r = {0};
	char err[TOPO_ERR_MAX];
	struct topo *t = NULL;
	FILE *sum = stdout;
	int c, rc = CLI_EXIT_USAGE;

	if (!plan_cli_parse(&blueconnect_cmd, &pc, &bo, argc, argv, &rc))
		return rc;
	t = plan_load_topology(pc.topo_path);
	if (t == NULL)
		goto out;
	plan_note("planning the WAN stage and costing the decompositions");
	c = blueconnect_plan(t, &bo, &r, err, sizeof(err));
	if (c != 0) {
		cli_error(PROG, "blueconnect: %s", err);
		rc = c == -EINVAL ? CLI_EXIT_USAGE : CLI_EXIT_FAIL;
		goto out;
	}
	if (plan_validate(t, r.plan, 0, err, sizeof(err)) != 0) {
		cli_error(PROG, "blueconnect: internal error, the plan is invalid: %s", err);
		rc = CLI_EXIT_FAIL;
		goto out;
	}
	rc = write_plan(t, &r, pc.out_path, &sum);
	if (rc == 0 && !pc.quiet)
		print_summary(sum, t, &r, bo.bytes);
out:
	bc_result_fini(&r);
	topo_free(t);
	return rc;
}
