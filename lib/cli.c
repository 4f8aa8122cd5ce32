/* SPDX-License-Identifier: BSD-3-Clause
 *
 * Option values of the command-line programs (cli.h): strict reals, integers, unsigned
 * integers and byte counts with range checks, and the one-line "<prog>: ..." error on
 * stderr that names the option. Called by each program's main thread while it reads its
 * command line; no state.
 */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

void
cli_error(const char *prog, const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "%s: ", prog);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

int
cli_double(const char *prog, const char *opt, const char *s, double min, double max, double *out)
{
	char *end;
	double v;

	errno = 0;
	v = strtod(s, &end);
	if (end == s || *end != '\0' || errno != 0 || !isfinite(v)) {
		cli_error(prog, "--%s: '%s' is not a number", opt, s);
		return -1;
	}
	if (v < min || v > max) {
		cli_error(prog, "--%s: %s is out of range [%g, %g]", opt, s, min, max);
		return -1;
	}
	*out = v;
	return 0;
}

int
cli_int(const char *prog, const char *opt, const char *s, long min, long max, int *out)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 10);
	if (end == s || *end != '\0' || errno != 0) {
		cli_error(prog, "--%s: '%s' is not an integer", opt, s);
		return -1;
	}
	if (v < min || v > max) {
		cli_error(prog, "--%s: %s is out of range [%ld, %ld]", opt, s, min, max);
		return -1;
	}
	*out = (int)v;
	return 0;
}

int
cli_uint(const char *prog, const char *name, const char *s, uint64_t min, uint64_t max,
	 uint64_t *out)
{
	unsigned long long v;
	char *end;

	errno = 0;
	if (s[0] < '0' || s[0] > '9') {
		cli_error(prog, "%s: '%s' is not an unsigned integer", name, s);
		return -1;
	}
	v = strtoull(s, &end, 10);
	if (*end != '\0' || errno != 0 || v < min || v > max) {
		if (*end != '\0')
			cli_error(prog, "%s: '%s' is not an unsigned integer", name, s);
		else
			cli_error(prog, "%s: %s is out of range [%llu, %llu]", name, s,
				  (unsigned long long)min, (unsigned long long)max);
		return -1;
	}
	*out = v;
	return 0;
}

int
cli_bytes(const char *prog, const char *opt, const char *s, uint64_t min, uint64_t *out)
{
	static const struct {
		const char *suffix;
		uint64_t mult;
	} units[] = {
		{"", 1},
		{"K", 1000ull},
		{"M", 1000000ull},
		{"G", 1000000000ull},
		{"T", 1000000000000ull},
		{"KiB", 1ull << 10},
		{"MiB", 1ull << 20},
		{"GiB", 1ull << 30},
		{"TiB", 1ull << 40},
	};
	unsigned long long v;
	char *end;

	errno = 0;
	if (s[0] == '-' || s[0] == '\0')
		goto bad;
	v = strtoull(s, &end, 10);
	if (end == s || errno != 0)
		goto bad;
	for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
		if (strcmp(end, units[i].suffix) == 0) {
			if (v > UINT64_MAX / units[i].mult) {
				cli_error(prog, "--%s: '%s' is too large", opt, s);
				return -1;
			}
			*out = v * units[i].mult;
			if (*out < min) {
				cli_error(prog, "--%s: must be at least %llu bytes", opt,
					  (unsigned long long)min);
				return -1;
			}
			return 0;
		}
	}
bad:
	cli_error(prog, "--%s: '%s' is not a byte count (e.g. 1000000, 64MiB, 1G)", opt, s);
	return -1;
}
