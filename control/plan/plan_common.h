/* SPDX-License-Identifier: BSD-3-Clause
 *
 * Helpers shared by the georeduce-plan subcommands (the .c files of control/plan/). Each subcommand is
 * one function `int cmd_NAME(int argc, char **argv)` (argv[0] is the command name) that
 * returns the exit status: 0, CLI_EXIT_USAGE (2) for bad options or input, CLI_EXIT_FAIL
 * (1) when the work fails on valid input.
 */
#ifndef GEOREDUCE_PLAN_COMMON_H
#define GEOREDUCE_PLAN_COMMON_H

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

/** getopt's '?': one line naming the offending option of command cmd. */
void plan_bad_option(const char *cmd, char **argv);

/** Load a topology (path NULL: "--topology FILE is required"); NULL after a one-line error. */
struct topo *plan_load_topology(const char *path);

/** Load a plan and check it by the spec's rules (heights within h if h > 0); NULL after a
 * one-line error. */
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
