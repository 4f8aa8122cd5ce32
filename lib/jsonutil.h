/* SPDX-License-Identifier: BSD-3-Clause
 * Small helpers shared by the JSON codecs in lib/.
 */
#ifndef GEOREDUCE_JSONUTIL_H
#define GEOREDUCE_JSONUTIL_H

#include <stdarg.h>
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

/** json_util_fail() with a va_list. Returns -EINVAL. */
int json_util_vfail(char *err, size_t errlen, const char *fmt, va_list ap)
	__attribute__((format(printf, 3, 0)));

/** Longest message json_util_field_vfail() formats, and most bytes of a key it quotes. */
#define JSON_UTIL_ERR_MAX 512
#define JSON_UTIL_KEY_MAX 63

/** Where a strict parser reports its errors: the document's name and the error buffer. */
struct json_util_src {
	const char *src; /* a path, "<string>", ... */
	char *err;
	size_t errlen;
};

/**
 * The strict parsers' message for a field, into c->err: "SRC: field 'PATH.KEY': MESSAGE"
 * (PATH or KEY may be empty, and then no dot; a key from the input is cut at
 * JSON_UTIL_KEY_MAX bytes), MESSAGE printf-formatted, one line as json_util_fail() makes
 * it. Returns -EINVAL.
 */
int json_util_field_fail(const struct json_util_src *c, const char *path, const char *key,
			 const char *fmt, ...) __attribute__((format(printf, 4, 5)));

/**
 * The first key of object obj (in its iteration order) that is none of known[0 .. n), or
 * NULL if every key is known: the check of strict parsers that refuse unknown fields.
 */
const char *json_util_unknown_key(const json_t *obj, const char *const *known, size_t n);

/** What v is, for messages: "an object", "an array", "a string", "an integer", "a real",
 * "true", "false" or "null". */
const char *json_util_type_desc(const json_t *v);

/**
 * Dump a JSON value to out with two-space indent and a final newline; reals with 17
 * significant digits so that they read back identical. 0 or -errno.
 */
int json_util_dump(const json_t *v, FILE *out);

/**
 * json_util_dump() of a new value that this call owns and releases; v == NULL (a failed
 * build) returns -ENOMEM.
 */
int json_util_dump_new(json_t *v, FILE *out);

/**
 * json_util_fail() for callers whose failure is not -EINVAL: the same one-line message into
 * err, and returns rc (a negative errno) so callers can `return json_util_failrc(...)`.
 */
int json_util_failrc(int rc, char *err, size_t errlen, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

#endif
