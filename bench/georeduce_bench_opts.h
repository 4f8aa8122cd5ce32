/* SPDX-License-Identifier: BSD-3-Clause
 *
 * georeduce-bench: its options (georeduce_bench_opts.c). The main thread, before EAL
 * starts.
 */
#ifndef GEOREDUCE_BENCH_GEOREDUCE_BENCH_OPTS_H
#define GEOREDUCE_BENCH_GEOREDUCE_BENCH_OPTS_H

#include "georeduce_bench.h"

/**
 * Parse the bench's options (those after EAL's; argv[0] is the "--" between them) into
 * o, with the defaults of those not given. -1 after a message on stderr; --help prints the
 * usage and exits.
 */
int parse_opts(int argc, char **argv, struct opts *o);

#endif
