/* SPDX-License-Identifier: BSD-3-Clause
 *
 * georeduce-plan draw: a picture of a plan on its topology. The command reads and checks
 * the plan and its section (partial_reduce, multicast or hierarchy), has draw_dot.c write
 * the graph in Graphviz's DOT language, and lets Graphviz's `dot` program (Debian package
 * graphviz) lay it out and render it as SVG or PNG; `--format dot` writes the DOT text
 * itself. docs/PLANNER.md, "Pictures of plans", has the details.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <spawn.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <jansson.h>

#include "blueconnect.h"
#include "cli.h"
#include "crew.h"
#include "draw_dot.h"
#include "jsonutil.h"
#include "plan.h"
#include "plan_common.h"
#include "selmcast.h"
#include "topo.h"

extern char **environ;

/* Bytes of dot's error output shown. */
#define DRAW_STDERR_MAX 4096

enum draw_fmt {
	FMT_NONE,
	FMT_SVG,
	FMT_PNG,
	FMT_DOT
};

static const char *const fmt_names[] = {"", "svg", "png", "dot"};

/*
 * The structure of a tree plan drawn on t: every mapped node's parent pair a link, every
 * node reaching its root, every worker site in every tree. Capacities are not checked:
 * the picture shows a link over capacity. 0, or -EINVAL with the problem in err.
 */
static int
trees_check(const struct topo *t, const struct plan *p, const char *path, char *err, size_t errlen)
{
	for (int i = 0; i < p->n_trees; i++) {
		const struct plan_tree *tr = &p->trees[i];

		for (int v = 0; v < t->n_nodes; v++) {
			int u = v, hops = 0;

			if (tr->parent[v] == PLAN_ABSENT) {
				if (t->nodes[v].workers > 0)
					return json_util_fail(err, errlen,
							      "%s: trees[%d]: worker "
							      "site '%s' is not in the tree",
							      path, i, t->nodes[v].id);
				continue;
			}
			if (tr->parent[v] >= 0 && topo_link_between(t, v, tr->parent[v]) < 0)
				return json_util_fail(err, errlen,
						      "%s: trees[%d].parent.%s: '%s' "
						      "and '%s' are not linked in the topology",
						      path, i, t->nodes[v].id, t->nodes[v].id,
						      t->nodes[tr->parent[v]].id);
			while (u >= 0 && tr->parent[u] >= 0 && hops++ <= t->n_nodes)
				u = tr->parent[u];
			if (u != tr->root || hops > t->n_nodes)
				return json_util_fail(err, errlen,
						      "%s: trees[%d].parent.%s: does "
						      "not reach the root",
						      path, i, t->nodes[v].id);
		}
	}
	return 0;
}

/* ---- rendering ---- */

/* Run `dot -TFMT -o out in`; 0, or -1 after a one-line error with dot's stderr. */
static int
render(const char *in, const char *out, enum draw_fmt fmt)
{
	char errpath[] = "/tmp/georeduce-draw-err-XXXXXX", tflag[8], buf[DRAW_STDERR_MAX + 1];
	char *argv[] = {"dot", tflag, "-o", (char *)out, (char *)in, NULL};
	posix_spawn_file_actions_t fa;
	int efd = mkstemp(errpath), rc, status = 0;
	ssize_t n = 0;
	pid_t pid;

	if (efd < 0) {
		cli_error(PROG, "draw: cannot create a temporary file: %s", strerror(errno));
		return -1;
	}
	unlink(errpath);
	snprintf(tflag, sizeof(tflag), "-T%s", fmt_names[fmt]);
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_adddup2(&fa, efd, STDERR_FILENO);
	posix_spawn_file_actions_addclose(&fa, efd);
	rc = posix_spawnp(&pid, "dot", &fa, NULL, argv, environ);
	posix_spawn_file_actions_destroy(&fa);
	if (rc != 0) {
		close(efd);
		cli_error(PROG, "draw: cannot run Graphviz's 'dot' (Debian package graphviz): %s",
			  strerror(rc));
		return -1;
	}
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	if (lseek(efd, 0, SEEK_SET) == 0)
		n = read(efd, buf, DRAW_STDERR_MAX);
	close(efd);
	buf[n > 0 ? n : 0] = '\0';
	/* With posix_spawnp, a missing program shows as exit status 127 on some libcs. */
	if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
		return 0;
	for (char *p = buf; *p != '\0'; p++)
		if (*p == '\n' && p[1] != '\0')
			*p = ' ';
	buf[strcspn(buf, "\n")] = '\0';
	if (WIFEXITED(status) && WEXITSTATUS(status) == 127 && buf[0] == '\0')
		cli_error(PROG, "draw: cannot run Graphviz's 'dot' (Debian package graphviz)");
	else if (WIFEXITED(status))
		cli_error(PROG, "draw: dot failed (exit status %d): %s", WEXITSTATUS(status),
			  buf[0] != '\0' ? buf : "no message");
	else
		cli_error(PROG, "draw: dot was killed by signal %d", WTERMSIG(status));
	return -1;
}

static enum draw_fmt
fmt_parse(const char *s)
{
	for (int i = FMT_SVG; i <= FMT_DOT; i++)
		if (strcmp(s, fmt_names[i]) == 0)
			return (enum draw_fmt)i;
	if (strcmp(s, "gv") == 0)
		return FMT_DOT;
	return FMT_NONE;
}

static void
usage_draw(FILE *f)
{
	fprintf(f,
		"Usage: " PROG " draw --topology FILE --plan FILE --output FILE [OPTIONS]\n"
		"\n"
		"Draw a plan on its topology with Graphviz (its 'dot' program, Debian package\n"
		"graphviz). Tree plans: every tree in its own colour, line width by rate, arrows\n"
		"towards the root, roots filled with their trees' colours, every link labelled\n"
		"load/capacity in Gbit/s ('near' from 90%%, 'full', red 'OVER' capacity). CREW\n"
		"plans: the members' scatter to each aggregator in its colour, width by share,\n"
		"backups dotted. SELMCAST plans: one round, each sender's multicast in its "
		"colour.\n"
		"BlueConnect plans: the WAN trees, the sites' gateways and the stages.\n"
		"\n"
		"  -t, --topology FILE     georeduce-topology/1 file                   [required]\n"
		"  -p, --plan FILE         georeduce-plan/1 file                       [required]\n"
		"  -o, --output FILE       the picture; its extension gives the format:\n"
		"                          .svg, .png, or .dot/.gv for the DOT text    [required\n"
		"                          unless --dot, which writes to stdout without it]\n"
		"  -f, --format FMT        svg, png or dot, whatever the extension\n"
		"      --dot               the DOT text instead of a picture (--format dot)\n"
		"      --layout ENGINE     Graphviz layout: neato, fdp, sfdp, circo, dot  [neato]\n"
		"      --round N           selmcast plans: the round drawn             [0]\n"
		"      --failover          CREW plans: also the relays that carry a result\n"
		"                          where an aggregator's link to a member fails\n"
		"  -h, --help              this text\n");
}

/* draw's own options. */
struct draw_cli {
	struct draw_opts o;
	enum draw_fmt fmt;
};

static const struct option draw_longopts[] = {
	{"format", required_argument, NULL, 'f'}, {"dot", no_argument, NULL, 'D'},
	{"layout", required_argument, NULL, 'L'}, {"round", required_argument, NULL, 'R'},
	{"failover", no_argument, NULL, 'F'},     {NULL, 0, NULL, 0},
};

static int
draw_opt(void *ctx, int c, const char *arg)
{
	static const char *const layouts[] = {"neato", "fdp", "sfdp", "circo", "dot"};
	struct draw_cli *dc = ctx;

	switch (c) {
	case 'f':
		dc->fmt = fmt_parse(arg);
		if (dc->fmt == FMT_NONE) {
			cli_error(PROG, "--format: '%s' is not svg, png or dot", arg);
			return -1;
		}
		return 0;
	case 'D':
		dc->fmt = FMT_DOT;
		return 0;
	case 'F':
		dc->o.failover = true;
		return 0;
	case 'L':
		dc->o.layout = NULL;
		for (size_t i = 0; i < sizeof(layouts) / sizeof(layouts[0]); i++)
			if (strcmp(arg, layouts[i]) == 0)
				dc->o.layout = layouts[i];
		if (dc->o.layout == NULL) {
			cli_error(PROG, "--layout: '%s' is not neato, fdp, sfdp, circo or dot",
				  arg);
			return -1;
		}
		return 0;
	case 'R':
		return cli_int(PROG, "round", arg, 0, 1 << 20, &dc->o.round);
	default:
		return -1;
	}
}

static const struct plan_cmd draw_cmd = {
	.name = "draw",
	.shortopts = "t:p:o:f:h",
	.common = PLAN_OPT_TOPOLOGY | PLAN_OPT_PLAN | PLAN_OPT_OUTPUT,
	.opts = draw_longopts,
	.opt = draw_opt,
	.usage = usage_draw,
};

/* The picture's format: --format or --dot, else out_path's extension. 0, or -1 after a
 * one-line error. */
static int
draw_format(const char *out_path, enum draw_fmt *fmt)
{
	if (out_path == NULL && *fmt != FMT_DOT) {
		cli_error(PROG, "--output FILE is required (or --dot for the DOT text on stdout)");
		return -1;
	}
	if (out_path != NULL && *fmt == FMT_NONE) {
		const char *ext = strrchr(out_path, '.');

		if (ext == NULL || strchr(ext, '/') != NULL ||
		    (*fmt = fmt_parse(ext + 1)) == FMT_NONE) {
			cli_error(PROG,
				  "--output: '%s': unknown extension (.svg, .png, .dot or .gv;"
				  " or say --format)",
				  out_path);
			return -1;
		}
	}
	return 0;
}

/* A plan to draw, on its topology, with the section it carries. */
struct draw_input {
	struct topo *t;
	struct plan *p;
	char *text;               /* the plan file */
	json_t *doc;              /* the plan file, read again for its sections */
	struct crew_section cs;   /* "partial_reduce", if have_cs */
	struct bc_hierarchy bh;   /* "hierarchy", if have_bh */
	struct selmcast_plan *sp; /* "multicast", or NULL */
	bool have_cs, have_bh;
};

/* The plan at plan_path on di->t, and its sections, checked as far as drawing needs
 * (round: the selmcast round drawn). 0, or -1 after a one-line error. */
static int
draw_load_plan(struct draw_input *di, const char *plan_path, int round)
{
	const struct topo *t = di->t;
	char err[TOPO_ERR_MAX];
	struct plan *p;
	json_t *doc;

	if (plan_path == NULL) {
		cli_error(PROG, "--plan FILE is required");
		return -1;
	}
	di->text = json_util_read_file(plan_path, err, sizeof(err));
	if (di->text == NULL) {
		fprintf(stderr, "%s: %s\n", PROG, err);
		return -1;
	}
	p = di->p = plan_parse(t, di->text, plan_path, err, sizeof(err));
	if (p == NULL) {
		fprintf(stderr, "%s: %s\n", PROG, err);
		return -1;
	}
	if (p->topology[0] != '\0' && strcmp(p->topology, t->name) != 0) {
		cli_error(PROG, "%s: the plan is for topology '%s', not '%s'", plan_path,
			  p->topology, t->name);
		return -1;
	}
	doc = di->doc = json_loads(di->text, JSON_REJECT_DUPLICATES, NULL);
	if (doc == NULL) {
		cli_error(PROG, "%s: cannot read the plan again", plan_path);
		return -1;
	}
	if (json_object_get(doc, "partial_reduce") != NULL) {
		di->have_cs = true; /* crew_section_fini() takes what a failed parse left */
		if (crew_section_parse(t, json_object_get(doc, "partial_reduce"), plan_path,
				       &di->cs, err, sizeof(err)) != 0) {
			fprintf(stderr, "%s: %s\n", PROG, err);
			return -1;
		}
	} else if (json_object_get(doc, "multicast") != NULL) {
		di->sp = selmcast_section_parse(t, json_object_get(doc, "multicast"), plan_path,
						err, sizeof(err));
		if (di->sp == NULL) {
			fprintf(stderr, "%s: %s\n", PROG, err);
			return -1;
		}
		if (round >= di->sp->n_rounds) {
			cli_error(PROG, "--round: %d, but the plan has %d round%s", round,
				  di->sp->n_rounds, di->sp->n_rounds == 1 ? "" : "s");
			return -1;
		}
	} else {
		if (p->n_trees == 0) {
			cli_error(PROG,
				  "%s: plan has no trees and no partial_reduce or multicast "
				  "section: nothing to draw",
				  plan_path);
			return -1;
		}
		if (trees_check(t, p, plan_path, err, sizeof(err)) != 0) {
			fprintf(stderr, "%s: %s\n", PROG, err);
			return -1;
		}
		if (plan_validate(t, p, 0, err, sizeof(err)) != 0)
			fprintf(stderr, "%s: warning: %s: %s (drawn as it is)\n", PROG, plan_path,
				err);
		if (json_object_get(doc, "hierarchy") != NULL) {
			di->have_bh = true; /* bc_hierarchy_fini() takes what a failed parse left */
			if (blueconnect_parse(t, doc, plan_path, &di->bh, err, sizeof(err)) != 0) {
				fprintf(stderr, "%s: %s\n", PROG, err);
				return -1;
			}
		}
	}
	return 0;
}

/* The plan's picture as DOT text into *dot (the caller frees it), *dot_len bytes. 0, or
 * -1 after a one-line error. */
static int
draw_dot(const struct draw_input *di, const struct draw_opts *o, char **dot, size_t *dot_len)
{
	FILE *f = open_memstream(dot, dot_len);
	bool ok;

	if (f == NULL) {
		cli_error(PROG, "draw: out of memory");
		return -1;
	}
	if (di->have_cs)
		draw_crew(f, di->t, di->p, &di->cs, o);
	else if (di->sp != NULL)
		draw_selmcast(f, di->t, di->sp, o);
	else
		draw_trees(f, di->t, di->p, di->have_bh ? &di->bh : NULL, o);
	ok = fclose(f) == 0;
	if (!ok || *dot == NULL || *dot_len == 0 || (*dot)[*dot_len - 1] != '\n') {
		cli_error(PROG, "draw: out of memory");
		return -1;
	}
	return 0;
}

/* The DOT text to out_path (or stdout) as it is, or rendered there by Graphviz in format
 * fmt. The exit status. */
static int
draw_write(const char *dot, size_t dot_len, const char *out_path, enum draw_fmt fmt)
{
	char tmp[] = "/tmp/georeduce-draw-XXXXXX";
	int rc = CLI_EXIT_FAIL, tfd;
	bool ok;

	if (fmt == FMT_DOT) {
		FILE *out = plan_output_open(out_path);

		if (out == NULL)
			return CLI_EXIT_USAGE;
		ok = fwrite(dot, 1, dot_len, out) == dot_len;
		ok = (out == stdout ? fflush(out) == 0 : fclose(out) == 0) && ok;
		if (!ok) {
			cli_error(PROG, "--output: write failed: %s", strerror(errno));
			return CLI_EXIT_FAIL;
		}
		return 0;
	}
	tfd = mkstemp(tmp);
	if (tfd < 0 || write(tfd, dot, dot_len) != (ssize_t)dot_len) {
		cli_error(PROG, "draw: cannot write a temporary file: %s", strerror(errno));
		goto out;
	}
	if (render(tmp, out_path, fmt) != 0)
		goto out;
	rc = 0;
out:
	if (tfd >= 0) {
		close(tfd);
		unlink(tmp);
	}
	return rc;
}

int
cmd_draw(int argc, char **argv)
{
	struct draw_cli dc = {.o = {.layout = "neato", .round = 0}, .fmt = FMT_NONE};
	struct plan_cli pc = {0};
	struct draw_input di;
	char *dot = NULL;
	size_t dot_len = 0;
	int rc = CLI_EXIT_USAGE;

	memset(&di, 0, sizeof(di));
	if (!plan_cli_parse(&draw_cmd, &pc, &dc, argc, argv, &rc))
		return rc;
	if (draw_format(pc.out_path, &dc.fmt) != 0)
		goto out;
	di.t = plan_load_topology(pc.topo_path);
	if (di.t == NULL || draw_load_plan(&di, pc.plan_path, dc.o.round) != 0)
		goto out;
	rc = CLI_EXIT_FAIL;
	if (draw_dot(&di, &dc.o, &dot, &dot_len) != 0)
		goto out;
	rc = draw_write(dot, dot_len, pc.out_path, dc.fmt);
out:
	free(dot);
	if (di.have_cs)
		crew_section_fini(&di.cs);
	if (di.have_bh)
		bc_hierarchy_fini(&di.bh);
	selmcast_plan_free(di.sp);
	json_decref(di.doc);
	plan_free(di.p);
	free(di.text);
	topo_free(di.t);
	return rc;
}
