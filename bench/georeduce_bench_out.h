/* SPDX-License-Identifier: BSD-3-Clause
 *
 * georeduce-bench's outputs (georeduce_bench_out.c): the report on stdout, in a --json file
 * and in the --out directory, with its plots. The main lcore, after the run.
 */
#ifndef GEOREDUCE_BENCH_GEOREDUCE_BENCH_OUT_H
#define GEOREDUCE_BENCH_GEOREDUCE_BENCH_OUT_H

#include "gen.h"
#include "georeduce_bench.h"
#include "georeduce_bench_search.h"

/**
 * Check before the run that --out's directory exists or can be made, and is writable.
 * Returns 0, or -1 with a line naming --out on stderr.
 */
int out_prepare(const struct opts *o);

/**
 * Write the report of the phases (n of them) or of the search (sr->n trials; NULL or none:
 * the phases): on stdout as --json or --csv say (text otherwise), as JSON into --json's
 * file, and into --out: report.txt, report.json, report.csv and, when gnuplot is on the
 * PATH, the plots. Returns 0, or CLI_EXIT_USAGE with a line naming the option whose file
 * could not be written.
 */
int out_write(const struct opts *o, const struct gen_job *gj, unsigned int mtu,
	      const struct phase *ph, unsigned int n, const struct search_result *sr);

#endif
