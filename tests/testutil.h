/* SPDX-License-Identifier: BSD-3-Clause
 * Helpers shared by the CUnit suites: an assertion that prints why it failed.
 */
#ifndef GEOREDUCE_TESTUTIL_H
#define GEOREDUCE_TESTUTIL_H

#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>

#include <CUnit/CUnit.h>

static bool check_at(bool ok, const char *file, int line, const char *what, const char *fmt,
		     ...) __attribute__((format(printf, 5, 6), unused));

/* A CUnit assertion that, when it fails, also prints a formatted explanation. */
static bool
check_at(bool ok, const char *file, int line, const char *what, const char *fmt, ...)
{
	CU_assertImplementation(ok ? CU_TRUE : CU_FALSE, (unsigned)line, what, file, "",
				CU_FALSE);
	if (!ok) {
		va_list ap;

		fprintf(stderr, "\n  %s:%d: %s: ", file, line, what);
		va_start(ap, fmt);
		vfprintf(stderr, fmt, ap);
		va_end(ap);
		fputc('\n', stderr);
	}
	return ok;
}

#define CHECK(cond, ...) check_at((cond), __FILE__, __LINE__, #cond, __VA_ARGS__)

#endif
