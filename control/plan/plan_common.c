/* SPDX-License-Identifier: BSD-3-Clause
 *
 * What the georeduce-plan subcommands share: loading inputs with one-line errors, progress
 * notes, table printing. The figures every front end reports of a plan (prediction, packing
 * bound) are the planner's: control/planner/report.c.
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
