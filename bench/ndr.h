/* SPDX-License-Identifier: BSD-3-Clause
 *
 * The zero-loss search of georeduce-bench (docs/BENCH.md, "Zero-loss search"): RFC 2544's
 * throughput test (section 26.1) as a binary search over the offered rate, finding in one
 * pass the highest rate with no loss (NDR) and the highest with at most a given loss ratio
 * (PDR). It only decides the rates; the caller runs the trials. Pure arithmetic without
 * DPDK, so that the tests drive it against a modelled device. georeduce-bench's main lcore,
 * between trials.
 */
#ifndef GEOREDUCE_BENCH_NDR_H
#define GEOREDUCE_BENCH_NDR_H

#include <stdbool.h>

#define NDR_TRIALS_MAX 64

/**
 * A search over (0, top]. Each of NDR and PDR keeps the highest rate that passed (lo, 0 if
 * none) and the lowest that failed (hi, top until one fails); it is found once
 * hi - lo <= resolution, or lo == top.
 */
struct ndr_search {
	double top;        /* the highest rate tried: the line rate */
	double resolution; /* the width at which a search stops, in the rate's unit */
	double pdr_loss;   /* the loss ratio the PDR allows (0.001: 0.1%) */
	double ndr_lo, ndr_hi, pdr_lo, pdr_hi;
	unsigned int trials;
};

/**
 * Start a search up to top with the given resolution (both > 0, resolution <= top) and
 * allowed PDR loss ratio (0 <= pdr_loss < 1). Returns 0, or -1 on bad arguments.
 */
int ndr_init(struct ndr_search *s, double top, double resolution, double pdr_loss);

/**
 * The rate of the next trial: top first, then the middle of the NDR's interval until it
 * is found, then the middle of the PDR's; 0 once both are found or NDR_TRIALS_MAX trials
 * ran.
 */
double ndr_next(const struct ndr_search *s);

/**
 * Record a trial at `rate` (as ndr_next() gave it) that lost `loss` of its frames (a
 * ratio) and reached the rate or not (reached false: it offered less than asked, so the
 * rate fails both searches whatever its loss). A result that contradicts an earlier one
 * (a pass above a failure) moves only the search it does not contradict.
 */
void ndr_record(struct ndr_search *s, double rate, double loss, bool reached);

/** Whether the NDR (pdr false) or the PDR is found. */
bool ndr_found(const struct ndr_search *s, bool pdr);

#endif
