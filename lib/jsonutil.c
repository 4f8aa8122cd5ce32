/* SPDX-License-Identifier: BSD-3-Clause
 *
 * Small JSON helpers (jsonutil.h) shared by lib/'s codecs, the control protocol and the
 * planner's and control process's readers: reading a whole file, one-line error messages
 * (json_util_fail(), the strict parsers' field errors, the names of JSON types), the
 * unknown-key check, and dumping with reals that read back identical. Any thread; slow
 * path only (they allocate or do stdio).
 */
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "jsonutil.h"

char *
json_util_read_file(const char *path, char *err, size_t errlen)
{
	FILE *f = strcmp(path, "-") == 0 ? stdin : fopen(path, "rb");
	size_t cap = 1 << 16, len = 0, n;
	char *buf = NULL, *nb;
	int saved;

	if (f == NULL) {
		saved = errno;
		json_util_fail(err, errlen, "%s: cannot open: %s", path, strerror(saved));
		errno = saved;
		return NULL;
	}
	buf = malloc(cap);
	if (buf == NULL)
		goto nomem;
	while ((n = fread(buf + len, 1, cap - len - 1, f)) > 0) {
		len += n;
		if (len > JSON_UTIL_MAX_BYTES) {
			snprintf(err, errlen, "%s: larger than %u bytes", path,
				 JSON_UTIL_MAX_BYTES);
			errno = EFBIG;
			goto fail;
		}
		if (cap - len - 1 == 0) {
			nb = realloc(buf, cap * 2);
			if (nb == NULL)
				goto nomem;
			buf = nb;
			cap *= 2;
		}
	}
	if (ferror(f)) {
		saved = errno;
		snprintf(err, errlen, "%s: read error: %s", path, strerror(saved));
		errno = saved;
		goto fail;
	}
	buf[len] = '\0';
	if (memchr(buf, '\0', len) != NULL) {
		snprintf(err, errlen, "%s: contains a NUL byte: not a JSON text file", path);
		errno = EINVAL;
		goto fail;
	}
	if (f != stdin)
		fclose(f);
	return buf;
nomem:
	snprintf(err, errlen, "%s: out of memory", path);
	errno = ENOMEM;
fail:
	free(buf);
	if (f != stdin)
		fclose(f);
	return NULL;
}

int
json_util_fail(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	json_util_vfail(err, errlen, fmt, ap);
	va_end(ap);
	return -EINVAL;
}

int
json_util_vfail(char *err, size_t errlen, const char *fmt, va_list ap)
{
	if (err == NULL || errlen == 0)
		return -EINVAL;
	vsnprintf(err, errlen, fmt, ap);
	for (char *c = err; *c != '\0'; c++)
		if ((unsigned char)*c < 0x20 || (unsigned char)*c == 0x7f)
			*c = '?';
	return -EINVAL;
}

int
json_util_field_fail(const struct json_util_src *c, const char *path, const char *key,
		     const char *fmt, ...)
{
	char msg[JSON_UTIL_ERR_MAX];
	va_list ap;

	va_start(ap, fmt);
	json_util_vfail(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	return json_util_fail(c->err, c->errlen, "%s: field '%s%s%.*s': %s", c->src, path,
			      path[0] != '\0' && key[0] != '\0' ? "." : "", JSON_UTIL_KEY_MAX, key,
			      msg);
}

const char *
json_util_unknown_key(const json_t *obj, const char *const *known, size_t n)
{
	const char *key;
	json_t *val;

	json_object_foreach ((json_t *)obj, key, val) {
		size_t k = 0;

		while (k < n && strcmp(key, known[k]) != 0)
			k++;
		if (k == n)
			return key;
	}
	return NULL;
}

const char *
json_util_type_desc(const json_t *v)
{
	switch (json_typeof(v)) {
	case JSON_OBJECT:
		return "an object";
	case JSON_ARRAY:
		return "an array";
	case JSON_STRING:
		return "a string";
	case JSON_INTEGER:
		return "an integer";
	case JSON_REAL:
		return "a real";
	case JSON_TRUE:
		return "true";
	case JSON_FALSE:
		return "false";
	default:
		return "null";
	}
}

int
json_util_dump(const json_t *v, FILE *out)
{
	if (json_dumpf(v, out, JSON_INDENT(2) | JSON_REAL_PRECISION(17)) != 0)
		return -EIO;
	if (fputc('\n', out) == EOF)
		return -EIO;
	return 0;
}

int
json_util_dump_new(json_t *v, FILE *out)
{
	int rc;

	if (v == NULL)
		return -ENOMEM;
	rc = json_util_dump(v, out);
	json_decref(v);
	return rc;
}

int
json_util_failrc(int rc, char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	json_util_vfail(err, errlen, fmt, ap);
	va_end(ap);
	return rc;
}
