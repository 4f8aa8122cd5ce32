/* SPDX-License-Identifier: BSD-3-Clause
 * Helpers shared by the CUnit suites: an assertion that prints why it failed, and a runner
 * for main().
 */
#ifndef GEOREDUCE_TESTUTIL_H
#define GEOREDUCE_TESTUTIL_H

#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <CUnit/Basic.h>
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

static char *sq(const char *s) __attribute__((unused));

/* A copy of s with every ' replaced by ", for JSON written in C strings with single
 * quotes. Caller frees. */
static char *
sq(const char *s)
{
	char *d = strdup(s);

	CU_ASSERT_PTR_NOT_NULL_FATAL(d);
	for (char *p = d; *p; p++)
		if (*p == '\'')
			*p = '"';
	return d;
}

/** A memory stream whose text a writer fills (testutil_mem_open/close). */
struct testutil_mem {
	char *buf;
	size_t len;
	FILE *f;
};

static FILE *testutil_mem_open(struct testutil_mem *m) __attribute__((unused));
static char *testutil_mem_close(struct testutil_mem *m, int rc) __attribute__((unused));

/* Open m for writing; the stream, or NULL. */
static FILE *
testutil_mem_open(struct testutil_mem *m)
{
	m->buf = NULL;
	m->len = 0;
	m->f = open_memstream(&m->buf, &m->len);
	return m->f;
}

/* Close m after a writer returned rc: its text (caller frees), or NULL if rc != 0. */
static char *
testutil_mem_close(struct testutil_mem *m, int rc)
{
	fclose(m->f);
	if (rc != 0) {
		free(m->buf);
		return NULL;
	}
	return m->buf;
}

/** The number of elements of an array. */
#define TESTUTIL_N(a) (sizeof(a) / sizeof((a)[0]))

/** One test of a suite run by testutil_run(). */
struct testutil_case {
	const char *name;
	CU_TestFunc fn;
};

static int testutil_run(const char *prog, const char *suite, const struct testutil_case *tests,
			size_t n) __attribute__((unused));

/* Run n tests as one verbose CUnit suite, for main(): returns the number of failures (at
 * most 255, an exit status), or 1 if CUnit cannot register them. */
static int
testutil_run(const char *prog, const char *suite, const struct testutil_case *tests, size_t n)
{
	unsigned int failures;
	CU_pSuite s;

	if (CU_initialize_registry() != CUE_SUCCESS)
		return 1;
	s = CU_add_suite(suite, NULL, NULL);
	for (size_t i = 0; s != NULL && i < n; i++)
		if (CU_add_test(s, tests[i].name, tests[i].fn) == NULL)
			s = NULL;
	if (s == NULL) {
		fprintf(stderr, "%s: CUnit registry: %s\n", prog, CU_get_error_msg());
		CU_cleanup_registry();
		return 1;
	}
	CU_basic_set_mode(CU_BRM_VERBOSE);
	CU_basic_run_tests();
	failures = CU_get_number_of_failures();
	CU_cleanup_registry();
	return (int)(failures > 255 ? 255 : failures);
}

#endif
