/* SPDX-License-Identifier: BSD-3-Clause
 *
 * georeduce-bench-dataplane: its options (bench_dataplane_opts.c). The main thread, before
 * any measurement.
 */
#ifndef GEOREDUCE_BENCH_DATAPLANE_OPTS_H
#define GEOREDUCE_BENCH_DATAPLANE_OPTS_H

#include "bench_dataplane.h"

/**
 * Parse the bench's options (argv[0] stands for the program, EAL's are gone) into o:
 * defaults first, --quick where it applies. -1 after a message on stderr; --help prints the
 * usage and exits.
 */
int parse_opts(int argc, char **argv, struct opts *o);

#endif
