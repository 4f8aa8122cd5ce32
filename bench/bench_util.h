/* SPDX-License-Identifier: BSD-3-Clause
 *
 * Statistics shared by the benchmarks in bench/: the samples of repeated measurements
 * sorted, and their median. Run by the benchmark's main thread between measurements,
 * never inside a measured interval. No DPDK, so that every benchmark can link it.
 */
#ifndef GEOREDUCE_BENCH_UTIL_H
#define GEOREDUCE_BENCH_UTIL_H

#include <stddef.h>

/** Sort n samples in ascending order. */
void bench_sort(double *v, size_t n);

/** The median of n >= 1 samples, the mean of the middle two when n is even; sorts v. */
double bench_median(double *v, size_t n);

#endif
