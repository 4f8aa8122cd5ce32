/* SPDX-License-Identifier: BSD-3-Clause
 *
 * georeduce-bench: the report (georeduce_bench_report.c). The main lcore, after the
 * generator runs.
 */
#ifndef GEOREDUCE_BENCH_GEOREDUCE_BENCH_REPORT_H
#define GEOREDUCE_BENCH_GEOREDUCE_BENCH_REPORT_H

#include <stdio.h>

#include <jansson.h>

#include "gen.h"
#include "georeduce_bench.h"

/** The derived figures of a phase (rates, latency quantiles, losses) from its counters;
 * workers: the frames of a round. */
void derive(struct phase *ph, unsigned int workers);

/** The name of the gateway's drop counter i of struct peer_snap's why[] ("?" if none). */
const char *gw_drop_name(unsigned int i);

/** The report on f: a table, one JSON document, or CSV with a header line. */
void print_text(FILE *f, const struct opts *o, const struct gen_job *gj, unsigned int mtu,
		const struct phase *ph, unsigned int n);
void print_json(FILE *f, const struct opts *o, const struct gen_job *gj, unsigned int mtu,
		const struct phase *ph, unsigned int n);
void print_csv(FILE *f, const struct opts *o, const struct gen_job *gj, const struct phase *ph,
	       unsigned int n);

/** A phase's figures below the table: rates against the line rate, loss, counters. */
void print_certifier(FILE *f, const struct phase *p);

/** The first wrong RESULTs of a phase, one line each, and how many more there were. */
void print_wrong(FILE *f, const struct phase *p);

/** A phase as a JSON object (the "phases" entries of --json). */
json_t *phase_json(const struct phase *p);

#endif
