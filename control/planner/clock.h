/* SPDX-License-Identifier: BSD-3-Clause
 * Monotonic time for the planners' time limits and reports.
 */
#ifndef GEOREDUCE_CLOCK_H
#define GEOREDUCE_CLOCK_H

#include <time.h>

/** Seconds on CLOCK_MONOTONIC. */
static inline double
clock_now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

#endif
