/* SPDX-License-Identifier: BSD-3-Clause
 *
 * The figures every front end of the planner reports of a plan: the simulator's
 * prediction, the packing bound, the tallest tree (control/planner/report.c).
 */
#ifndef GEOREDUCE_PLANNER_REPORT_H
#define GEOREDUCE_PLANNER_REPORT_H

#include <stddef.h>
#include <stdint.h>

#include "plan.h"
#include "topo.h"

/** Largest latency-weighted tree height of a plan (ms). */
double plan_max_height(const struct topo *t, const struct plan *p);

/** Fill p's prediction for `bytes` with the simulator (paced trees, given window). */
int plan_predict(const struct topo *t, struct plan *p, uint64_t bytes, int window);

/** "1.50 GiB", "3.00 MiB", "64 KiB". */
void plan_fmt_bytes(char *buf, size_t len, double b);

/** The packing bound (Gbit/s), and its trees in *solution if not NULL; negative on failure. */
double plan_packing_bound(const struct topo *t, struct plan **solution);

#endif
