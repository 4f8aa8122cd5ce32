/* SPDX-License-Identifier: BSD-3-Clause
 * Option parsing shared by the command-line programs: strict numbers with range checks
 * and one-line errors naming the option.
 */
#ifndef GEOREDUCE_CLI_H
#define GEOREDUCE_CLI_H

#include <stdint.h>

/** Exit status for bad options or bad input files. */
#define CLI_EXIT_USAGE 2
/** Exit status when the input is valid but the work failed (e.g. no plan fits). */
#define CLI_EXIT_FAIL 1

/**
 * Parse a finite real in [min, max] for option `opt`. On error prints
 * "<prog>: --opt: ..." to stderr and returns -1.
 */
int
cli_double(const char *prog, const char *opt, const char *s, double min, double max, double *out);

/** Parse an integer in [min, max]. */
int cli_int(const char *prog, const char *opt, const char *s, long min, long max, int *out);

/**
 * Parse a decimal unsigned integer in [min, max] (no sign, no spaces) for `name`, which is
 * printed as given: an option with its dashes ("--job") or an argument's name ("JOB").
 * On error prints "<prog>: <name>: ..." to stderr and returns -1.
 */
int cli_uint(const char *prog, const char *name, const char *s, uint64_t min, uint64_t max,
	     uint64_t *out);

/**
 * Parse a byte count: a non-negative integer with an optional suffix K, M, G, T (powers
 * of 1000) or KiB, MiB, GiB, TiB (powers of 1024); at least min.
 */
int cli_bytes(const char *prog, const char *opt, const char *s, uint64_t min, uint64_t *out);

/** Print "<prog>: <message>\n" to stderr (printf-style). */
void cli_error(const char *prog, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif
