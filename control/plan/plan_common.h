/* SPDX-License-Identifier: BSD-3-Clause
 *
 * Helpers shared by the georeduce-plan subcommands (the .c files of control/plan/): their
 * command line, inputs and outputs. Each subcommand is one function
 * `int cmd_NAME(int argc, char **argv)` (argv[0] is the command name) that reads its
 * command line with plan_cli_parse() and returns the exit status: 0, CLI_EXIT_USAGE (2) for
 * bad options or input, CLI_EXIT_FAIL (1) when the work fails on valid input.
 */
#ifndef GEOREDUCE_PLAN_COMMON_H
#define GEOREDUCE_PLAN_COMMON_H

#include <getopt.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "plan.h"
#include "report.h"
#include "topo.h"

#define PROG "georeduce-plan"

/** Progress lines on stderr: set when stderr is a terminal. */
extern bool plan_progress;

/** A progress line "  .. msg" on stderr if plan_progress. */
void plan_note(const char *msg);

/*
 * The options several subcommands share, each with one name, letter, range and meaning
 * wherever it is taken: a subcommand names those it takes (struct plan_cmd's `common`),
 * plan_cli_parse() parses them into struct plan_cli and hands the subcommand the others.
 * --help is taken by every subcommand.
 */
#define PLAN_OPT_TOPOLOGY (1u << 0)       /* -t, --topology FILE */
#define PLAN_OPT_PLAN (1u << 1)           /* -p, --plan FILE */
#define PLAN_OPT_OUTPUT (1u << 2)         /* -o, --output FILE */
#define PLAN_OPT_WRITE_TOPOLOGY (1u << 3) /* --write-topology FILE */
#define PLAN_OPT_CHECK (1u << 4)          /* --check FILE */
#define PLAN_OPT_BYTES (1u << 5)          /* -b, --bytes N: at least 1 */
#define PLAN_OPT_MAX_TREES (1u << 6)      /* -k, --max-trees K: 0 .. PLAN_TREES_MAX */
#define PLAN_OPT_MAX_HEIGHT (1u << 7)     /* -H, --max-height-ms H: 0 .. 1e9 */
#define PLAN_OPT_WINDOW (1u << 8)         /* -w, --window W: 0 or 1 */
#define PLAN_OPT_MILP_SECONDS (1u << 9)   /* --milp-seconds S: 0.01 .. 3600 */
#define PLAN_OPT_JSON (1u << 10)          /* --json */
#define PLAN_OPT_QUIET (1u << 11)         /* -q, --quiet */

/** The values of the shared options. */
struct plan_cli {
	const char *topo_path;  /* --topology, or NULL */
	const char *plan_path;  /* --plan, or NULL */
	const char *out_path;   /* --output, or NULL */
	const char *topo_out;   /* --write-topology, or NULL */
	const char *check_path; /* --check, or NULL */
	bool json, quiet;
	/* Where the numeric ones go, set before plan_cli_parse() for those taken; each keeps
	 * the value it has there (the subcommand's default) unless given. */
	uint64_t *bytes;
	int *max_trees;
	double *max_height_ms;
	int *window;
	double *milp_seconds;
};

/** A subcommand's command line. */
struct plan_cmd {
	const char *name;          /* "mtree", as messages name it */
	const char *shortopts;     /* getopt_long()'s, the shared letters included */
	unsigned int common;       /* the PLAN_OPT_* it takes */
	const struct option *opts; /* its own long options ({ NULL } last), or NULL */
	/* Its own option c (a letter of shortopts, or the val of one of opts) with argument
	 * arg (NULL if it takes none): 0, or -1 after a one-line error. */
	int (*opt)(void *ctx, int c, const char *arg);
	void (*usage)(FILE *f); /* --help's text */
};

/** Most long options of one subcommand, its own and the shared ones together. */
#define PLAN_CLI_OPTS_MAX 48

/**
 * Read a subcommand's command line (argv[0] the subcommand's name): the shared options
 * into pc, its own through cmd->opt with ctx; no arguments besides options. Stops at the
 * first error or at --help.
 *
 * @return  true: go on. false: the subcommand is done with exit status *rc, 0 after --help
 *          (its text on stdout) or CLI_EXIT_USAGE after a one-line error (a bad or unknown
 *          option, or an argument).
 */
bool plan_cli_parse(const struct plan_cmd *cmd, struct plan_cli *pc, void *ctx, int argc,
		    char **argv, int *rc);

/** Where --output goes: stdout for NULL or "-", else path opened for writing; NULL after
 * the one-line "--output: cannot open" error. */
FILE *plan_output_open(const char *path);

/** The end of writing to out, w the writer's result (0 ok): out closed unless it is
 * stdout. 0, or -1 after the one-line "--output: write failed" error. */
int plan_output_close(FILE *out, int w);

/** --write-topology: t written to path as georeduce-topology/1; 0, or -1 after a one-line
 * error. */
int plan_write_topology(const struct topo *t, const char *path);

/** Load a topology (path NULL: "--topology FILE is required"); NULL after a one-line error. */
struct topo *plan_load_topology(const char *path);

/** Load a plan (path NULL: "--plan FILE is required") and check it by the spec's rules
 * (heights within h if h > 0); NULL after a one-line error. */
struct plan *plan_load_valid(const struct topo *t, const char *path, double h);

/** The plan's trees as a table. */
void plan_print_trees(FILE *f, const struct topo *t, const struct plan *p);

/* Subcommands. */
int cmd_mtree(int argc, char **argv);
int cmd_compare(int argc, char **argv);
int cmd_simulate(int argc, char **argv);
int cmd_validate(int argc, char **argv);
int cmd_crew(int argc, char **argv);
int cmd_blueconnect(int argc, char **argv);
int cmd_selmcast(int argc, char **argv);
int cmd_draw(int argc, char **argv);

#endif
