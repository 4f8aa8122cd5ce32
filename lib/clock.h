/* SPDX-License-Identifier: BSD-3-Clause
 *
 * Monotonic time (CLOCK_MONOTONIC) in the units its callers count in: the planners' time
 * limits and reports, the control protocol's deadlines, the worker library's timers, the
 * benchmarks. Any thread; one clock_gettime() each, which the vDSO answers without a
 * system call. Not for the dataplane's fast path, which counts TSC cycles.
 */
#ifndef GEOREDUCE_CLOCK_H
#define GEOREDUCE_CLOCK_H

#include <stdint.h>
#include <time.h>

/** Seconds. */
static inline double
clock_now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/** Milliseconds, truncated. */
static inline int64_t
clock_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/** Microseconds, truncated. */
static inline uint64_t
clock_now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

/** Nanoseconds, as a double (exact below 2^53 ns, about 104 days of uptime). */
static inline double
clock_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

#endif
