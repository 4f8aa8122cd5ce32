/* SPDX-License-Identifier: BSD-3-Clause
 *
 * What the georeduce-plan subcommands share (plan_common.h): their command line (the shared
 * options, one table of them, parsed here; each subcommand's own handed back to it),
 * loading inputs and writing outputs with one-line errors, progress notes, table printing.
 * The figures every front end reports of a plan (prediction, packing bound) are the
 * planner's: control/planner/report.c.
 */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "plan_common.h"
#include "report.h"

bool plan_progress;

void
plan_note(const char *msg)
{
	if (plan_progress)
		fprintf(stderr, "  .. %s\n", msg);
}

/* getopt's '?': one line naming the offending option of command cmd. */
static void
plan_bad_option(const char *cmd, char **argv)
{
	cli_error(PROG, "%s: unknown option or missing value in '%s' (try '" PROG " %s --help')",
		  cmd, argv[optind - 1], cmd);
}

/* The long-only shared options' vals: above every letter, so that they never collide with
 * a subcommand's own. */
enum {
	OPT_WRITE_TOPOLOGY = 256,
	OPT_CHECK,
	OPT_MILP_SECONDS,
	OPT_JSON,
};

/* The shared options; --help (bit 0) belongs to every subcommand. */
static const struct {
	unsigned int bit;
	struct option opt;
} common_opts[] = {
	{PLAN_OPT_TOPOLOGY, {"topology", required_argument, NULL, 't'}},
	{PLAN_OPT_PLAN, {"plan", required_argument, NULL, 'p'}},
	{PLAN_OPT_OUTPUT, {"output", required_argument, NULL, 'o'}},
	{PLAN_OPT_WRITE_TOPOLOGY, {"write-topology", required_argument, NULL, OPT_WRITE_TOPOLOGY}},
	{PLAN_OPT_CHECK, {"check", required_argument, NULL, OPT_CHECK}},
	{PLAN_OPT_BYTES, {"bytes", required_argument, NULL, 'b'}},
	{PLAN_OPT_MAX_TREES, {"max-trees", required_argument, NULL, 'k'}},
	{PLAN_OPT_MAX_HEIGHT, {"max-height-ms", required_argument, NULL, 'H'}},
	{PLAN_OPT_WINDOW, {"window", required_argument, NULL, 'w'}},
	{PLAN_OPT_MILP_SECONDS, {"milp-seconds", required_argument, NULL, OPT_MILP_SECONDS}},
	{PLAN_OPT_JSON, {"json", no_argument, NULL, OPT_JSON}},
	{PLAN_OPT_QUIET, {"quiet", no_argument, NULL, 'q'}},
	{0, {"help", no_argument, NULL, 'h'}},
};

#define COMMON_N (sizeof(common_opts) / sizeof(common_opts[0]))

/* Whether cmd takes the shared option k. */
static bool
takes(const struct plan_cmd *cmd, size_t k)
{
	return common_opts[k].bit == 0 || (cmd->common & common_opts[k].bit) != 0;
}

/* The long options of cmd, the shared ones it takes first, into opts. */
static void
long_opts(const struct plan_cmd *cmd, struct option opts[PLAN_CLI_OPTS_MAX])
{
	int n = 0;

	for (size_t k = 0; k < COMMON_N; k++)
		if (takes(cmd, k))
			opts[n++] = common_opts[k].opt;
	for (int i = 0; cmd->opts != NULL && cmd->opts[i].name != NULL && n < PLAN_CLI_OPTS_MAX - 1;
	     i++)
		opts[n++] = cmd->opts[i];
	opts[n] = (struct option){NULL, 0, NULL, 0};
}

/* Option c (argument arg) as one of the shared options cmd takes: 0 taken, with its value
 * in pc; -1 after a one-line error; 1 if it is not one of them. */
static int
common_opt(const struct plan_cmd *cmd, struct plan_cli *pc, int c, const char *arg)
{
	unsigned int bit = 0;

	for (size_t k = 0; k < COMMON_N && bit == 0; k++)
		if (common_opts[k].opt.val == c && takes(cmd, k))
			bit = common_opts[k].bit;
	switch (bit) {
	case PLAN_OPT_TOPOLOGY:
		pc->topo_path = arg;
		break;
	case PLAN_OPT_PLAN:
		pc->plan_path = arg;
		break;
	case PLAN_OPT_OUTPUT:
		pc->out_path = arg;
		break;
	case PLAN_OPT_WRITE_TOPOLOGY:
		pc->topo_out = arg;
		break;
	case PLAN_OPT_CHECK:
		pc->check_path = arg;
		break;
	case PLAN_OPT_BYTES:
		return cli_bytes(PROG, "bytes", arg, 1, pc->bytes);
	case PLAN_OPT_MAX_TREES:
		return cli_int(PROG, "max-trees", arg, 0, PLAN_TREES_MAX, pc->max_trees);
	case PLAN_OPT_MAX_HEIGHT:
		return cli_double(PROG, "max-height-ms", arg, 0, 1e9, pc->max_height_ms);
	case PLAN_OPT_WINDOW:
		return cli_int(PROG, "window", arg, 0, 1, pc->window);
	case PLAN_OPT_MILP_SECONDS:
		return cli_double(PROG, "milp-seconds", arg, 0.01, 3600, pc->milp_seconds);
	case PLAN_OPT_JSON:
		pc->json = true;
		break;
	case PLAN_OPT_QUIET:
		pc->quiet = true;
		break;
	default:
		return 1;
	}
	return 0;
}

bool
plan_cli_parse(const struct plan_cmd *cmd, struct plan_cli *pc, void *ctx, int argc, char **argv,
	       int *rc)
{
	struct option opts[PLAN_CLI_OPTS_MAX];
	int c, r;

	long_opts(cmd, opts);
	optind = 1;
	while ((c = getopt_long(argc, argv, cmd->shortopts, opts, NULL)) != -1) {
		if (c == 'h') {
			cmd->usage(stdout);
			*rc = 0;
			return false;
		}
		if (c == '?') {
			plan_bad_option(cmd->name, argv);
			goto bad;
		}
		r = common_opt(cmd, pc, c, optarg);
		if (r == 1) /* one of its own (a subcommand without any never gets here) */
			r = cmd->opt != NULL ? cmd->opt(ctx, c, optarg) : -1;
		if (r != 0)
			goto bad;
	}
	if (optind < argc) {
		cli_error(PROG, "%s: unexpected argument '%s'", cmd->name, argv[optind]);
		goto bad;
	}
	return true;
bad:
	*rc = CLI_EXIT_USAGE;
	return false;
}

FILE *
plan_output_open(const char *path)
{
	FILE *out;

	if (path == NULL || strcmp(path, "-") == 0)
		return stdout;
	out = fopen(path, "w");
	if (out == NULL)
		cli_error(PROG, "--output: cannot open '%s': %s", path, strerror(errno));
	return out;
}

int
plan_output_close(FILE *out, int w)
{
	if (w != 0 || (out != stdout && fclose(out) != 0)) {
		cli_error(PROG, "--output: write failed: %s", strerror(errno));
		return -1;
	}
	return 0;
}

int
plan_write_topology(const struct topo *t, const char *path)
{
	FILE *f = fopen(path, "w");

	if (f == NULL || topo_write(t, f) != 0 || fclose(f) != 0) {
		cli_error(PROG, "--write-topology: cannot write '%s': %s", path, strerror(errno));
		return -1;
	}
	return 0;
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

struct plan *
plan_load_valid(const struct topo *t, const char *path, double h)
{
	char err[TOPO_ERR_MAX];
	struct plan *p;

	if (path == NULL) {
		cli_error(PROG, "--plan FILE is required");
		return NULL;
	}
	p = plan_load(t, path, err, sizeof(err));
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
			tr->rate_gbps, tr->share, plan_tree_height_ms(t, tr),
			plan_tree_depth(t, tr), chunk);
	}
}
