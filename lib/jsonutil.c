/* SPDX-License-Identifier: BSD-3-Clause */
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
			snprintf(err, errlen, "%s: larger than %u bytes", path, JSON_UTIL_MAX_BYTES);
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

	if (err == NULL || errlen == 0)
		return -EINVAL;
	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
	for (char *c = err; *c != '\0'; c++)
		if ((unsigned char)*c < 0x20 || (unsigned char)*c == 0x7f)
			*c = '?';
	return -EINVAL;
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
