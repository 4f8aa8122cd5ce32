/* SPDX-License-Identifier: BSD-3-Clause
 *
 * Statistics shared by the benchmarks (bench_util.h): sorting samples and their median.
 * Main thread, between measurements.
 */
#include <stdlib.h>

#include "bench_util.h"

static int
cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

void
bench_sort(double *v, size_t n)
{
	qsort(v, n, sizeof(*v), cmp_double);
}

double
bench_median(double *v, size_t n)
{
	bench_sort(v, n);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}
