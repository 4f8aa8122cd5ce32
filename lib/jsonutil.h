/* SPDX-License-Identifier: BSD-3-Clause
 * Small helpers shared by the JSON codecs in lib/.
 */
#ifndef GEOREDUCE_JSONUTIL_H
#define GEOREDUCE_JSONUTIL_H

#include <stddef.h>
#include <stdio.h>

#include <jansson.h>

/** Largest document the codecs read: bigger files are rejected, not truncated. */
#define JSON_UTIL_MAX_BYTES (64u << 20)

/**
 * Read a whole file ("-" is standard input) into a NUL-terminated buffer the caller frees.
 * NULL with a one-line message in err (naming the path) on failure, errno set.
 * A file that contains a NUL byte is rejected.
 */
char *json_util_read_file(const char *path, char *err, size_t errlen);

/**
 * Format a one-line error message into err: control bytes (ids and keys from the input may
 * hold newlines or escapes) are replaced by '?'. Returns -EINVAL so callers can
 * `return json_util_fail(...)`.
 */
int json_util_fail(char *err, size_t errlen, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/**
 * Dump a JSON value to out with two-space indent and a final newline; reals with 17
 * significant digits so that they read back identical. 0 or -errno.
 */
int json_util_dump(const json_t *v, FILE *out);

#endif
