/* SPDX-License-Identifier: BSD-3-Clause
 *
 * georeduce-bench's zero-loss search (georeduce_bench_search.c): the trials of an NDR/PDR
 * search (ndr.h) run against the gateway, and their report. The main lcore; each trial's
 * generator on the generator's lcore.
 */
#ifndef GEOREDUCE_BENCH_GEOREDUCE_BENCH_SEARCH_H
#define GEOREDUCE_BENCH_GEOREDUCE_BENCH_SEARCH_H

#include <stdbool.h>
#include <stdio.h>

#include <rte_mempool.h>

#include "gen.h"
#include "georeduce_bench.h"
#include "ndr.h"

/** What one search needs besides the options: a started port and its generator's setup. */
struct search_env {
	const struct gen_job *gj;
	struct gen_params prm;    /* every trial's, but for the rate and the first round */
	struct rte_mempool *pool; /* the frames */
	struct phase tmpl;        /* name, lcores, port and line rate of every trial */
	struct phase **cur;       /* set to the running trial (ring mode's mark callback);
				     NULL: the trial is prm.mark_arg itself */
};

/* The most trials a search runs, repetitions included. */
#define SEARCH_TRIALS_MAX (2 * NDR_TRIALS_MAX)

/** A search's trials and its outcome. */
struct search_result {
	struct ndr_search s;
	unsigned int n;    /* trials run */
	struct phase *ph;  /* NDR_TRIALS_MAX trials (allocated by search_run()) */
	double *target;    /* the L1 Gbit/s each trial was asked for */
	bool *reached;     /* ... and whether it offered that rate (within the tolerance) */
	bool *again;       /* ... or fell short without a loss and was run again */
	int ndr, pdr;      /* the trials at the NDR and the PDR; -1: none passed */
	struct phase *lat; /* the trials at --latency-at shares of the NDR */
	unsigned int n_lat;
	bool failed; /* a RESULT was wrong or nothing completed: the run fails */
	bool wrong;  /* ... a RESULT's sum was wrong (EXIT_WRONG_SUM) */
};

/**
 * Run a search with the options' resolution, PDR loss and tolerance, up to the line rate
 * of env->tmpl. Prints each trial as it ends (stdout with the text report, else stderr
 * unless --quiet). Returns 0, or an exit status (CLI_EXIT_USAGE: no line rate;
 * CLI_EXIT_FAIL: a trial could not run or failed verification).
 */
int search_run(const struct opts *o, struct search_env *env, unsigned int workers,
	       struct search_result *sr);

/** The search's report: the final table (text), or with its trials (JSON, CSV), on f. */
void search_report(FILE *f, const struct opts *o, const struct gen_job *gj, unsigned int mtu,
		   const struct search_result *sr, int format);

/** Free what search_run() allocated and clear sr. */
void search_fini(struct search_result *sr);

#endif
