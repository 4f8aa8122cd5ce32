/* SPDX-License-Identifier: BSD-3-Clause
 *
 * The Prometheus text exposition format (prom.h). The rules are those of Prometheus's
 * "Exposition formats" and "Metric and label naming" documents: HELP escapes backslash
 * and newline, label values also the double quote; values are Go floats ("NaN", "+Inf",
 * "-Inf").
 */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "prom.h"

void
prom_init(struct prom *p)
{
	memset(p, 0, sizeof(*p));
}

void
prom_free(struct prom *p)
{
	free(p->buf);
	for (int i = 0; i < p->n_families; i++)
		free(p->families[i]);
	prom_init(p);
}

static bool
name_char(char c, bool first, bool colon)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' ||
	       (colon && c == ':') || (!first && c >= '0' && c <= '9');
}

static bool
name_ok(const char *s, bool colon)
{
	size_t n = s != NULL ? strlen(s) : 0;

	if (n == 0 || n > PROM_NAME_MAX)
		return false;
	for (size_t i = 0; i < n; i++)
		if (!name_char(s[i], i == 0, colon))
			return false;
	return true;
}

bool
prom_metric_name_ok(const char *s)
{
	return name_ok(s, true);
}

bool
prom_label_name_ok(const char *s)
{
	return name_ok(s, false) && strncmp(s, "__", 2) != 0;
}

static int
fail(struct prom *p, int err, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

static int
fail(struct prom *p, int err, const char *fmt, ...)
{
	va_list ap;

	if (p->err != 0)
		return p->err;
	p->err = err;
	va_start(ap, fmt);
	vsnprintf(p->why, sizeof(p->why), fmt, ap);
	va_end(ap);
	return err;
}

static int
grow(struct prom *p, size_t more)
{
	size_t cap = p->cap > 0 ? p->cap : 4096;
	char *b;

	if (p->len + more + 1 <= p->cap)
		return 0;
	while (cap < p->len + more + 1)
		cap *= 2;
	b = realloc(p->buf, cap);
	if (b == NULL)
		return fail(p, -ENOMEM, "out of memory");
	p->buf = b;
	p->cap = cap;
	return 0;
}

static int
put(struct prom *p, const char *s, size_t n)
{
	if (grow(p, n) != 0)
		return p->err;
	memcpy(p->buf + p->len, s, n);
	p->len += n;
	p->buf[p->len] = '\0';
	return 0;
}

static int
puts_(struct prom *p, const char *s)
{
	return put(p, s, strlen(s));
}

/* s with backslash and newline escaped, and the double quote too if quote. */
static int
put_escaped(struct prom *p, const char *s, bool quote)
{
	for (; *s != '\0' && p->err == 0; s++) {
		if (*s == '\\')
			put(p, "\\\\", 2);
		else if (*s == '\n')
			put(p, "\\n", 2);
		else if (quote && *s == '"')
			put(p, "\\\"", 2);
		else
			put(p, s, 1);
	}
	return p->err;
}

int
prom_family(struct prom *p, const char *name, enum prom_type type, const char *help)
{
	size_t n;

	if (p->err != 0)
		return p->err;
	if (!prom_metric_name_ok(name))
		return fail(p, -EINVAL,
			    "metric name '%s' is not [a-zA-Z_:][a-zA-Z0-9_:]* (at most "
			    "%d characters)",
			    name != NULL ? name : "", PROM_NAME_MAX);
	n = strlen(name);
	if (type == PROM_COUNTER && (n < 7 || strcmp(name + n - 6, "_total") != 0))
		return fail(p, -EINVAL, "counter '%s' does not end in _total", name);
	if (type != PROM_COUNTER && type != PROM_GAUGE)
		return fail(p, -EINVAL, "metric '%s': unknown type", name);
	if (help == NULL || help[0] == '\0')
		return fail(p, -EINVAL, "metric '%s' has no help text", name);
	for (int i = 0; i < p->n_families; i++)
		if (strcmp(p->families[i], name) == 0)
			return fail(p, -EEXIST, "metric '%s' written twice", name);
	if (p->n_families == PROM_FAMILIES_MAX)
		return fail(p, -E2BIG, "more than %d metrics", PROM_FAMILIES_MAX);
	p->families[p->n_families] = strdup(name);
	if (p->families[p->n_families] == NULL)
		return fail(p, -ENOMEM, "out of memory");
	p->n_families++;
	strcpy(p->family, name);
	puts_(p, "# HELP ");
	puts_(p, name);
	puts_(p, " ");
	put_escaped(p, help, false);
	puts_(p, "\n# TYPE ");
	puts_(p, name);
	puts_(p, type == PROM_COUNTER ? " counter\n" : " gauge\n");
	return p->err;
}

/* The sample's name and labels, up to the space before the value. */
static int
sample_head(struct prom *p, const struct prom_label *labels, int n)
{
	if (p->err != 0)
		return p->err;
	if (p->family[0] == '\0')
		return fail(p, -EINVAL, "a sample before any metric");
	if (n < 0 || n > PROM_LABELS_MAX || (n > 0 && labels == NULL))
		return fail(p, -EINVAL, "metric '%s': %d labels (at most %d)", p->family, n,
			    PROM_LABELS_MAX);
	for (int i = 0; i < n; i++) {
		if (!prom_label_name_ok(labels[i].name))
			return fail(p, -EINVAL,
				    "metric '%s': label name '%s' is not "
				    "[a-zA-Z_][a-zA-Z0-9_]* or is reserved (__)",
				    p->family, labels[i].name != NULL ? labels[i].name : "");
		for (int k = 0; k < i; k++)
			if (strcmp(labels[k].name, labels[i].name) == 0)
				return fail(p, -EINVAL, "metric '%s': label '%s' twice", p->family,
					    labels[i].name);
	}
	puts_(p, p->family);
	for (int i = 0; i < n; i++) {
		puts_(p, i == 0 ? "{" : ",");
		puts_(p, labels[i].name);
		puts_(p, "=\"");
		put_escaped(p, labels[i].value != NULL ? labels[i].value : "", true);
		puts_(p, "\"");
	}
	if (n > 0)
		puts_(p, "}");
	return puts_(p, " ");
}

int
prom_sample(struct prom *p, const struct prom_label *labels, int n, double v)
{
	char num[40];
	int k;

	if (sample_head(p, labels, n) != 0)
		return p->err;
	if (isnan(v))
		snprintf(num, sizeof(num), "NaN\n");
	else if (isinf(v))
		snprintf(num, sizeof(num), v > 0 ? "+Inf\n" : "-Inf\n");
	else {
		/* The shortest of 15 or 17 digits that reads back as v. */
		k = snprintf(num, sizeof(num), "%.15g", v);
		if (k > 0 && (size_t)k < sizeof(num) && strtod(num, NULL) != v)
			k = snprintf(num, sizeof(num), "%.17g", v);
		if (k < 0 || (size_t)k + 1 >= sizeof(num))
			return fail(p, -EINVAL, "metric '%s': value not printable", p->family);
		num[k] = '\n';
		num[k + 1] = '\0';
	}
	return puts_(p, num);
}

int
prom_sample_u64(struct prom *p, const struct prom_label *labels, int n, uint64_t v)
{
	char num[32];
	int k;

	if (sample_head(p, labels, n) != 0)
		return p->err;
	k = snprintf(num, sizeof(num), "%llu\n", (unsigned long long)v);
	if (k < 0 || (size_t)k >= sizeof(num))
		return fail(p, -EINVAL, "metric '%s': value not printable", p->family);
	return puts_(p, num);
}

char *
prom_finish(struct prom *p, size_t *len, int *err)
{
	char *b;

	if (p->err == 0)
		grow(p, 0); /* an empty exposition is "" */
	if (p->err != 0) {
		if (err != NULL)
			*err = -p->err;
		free(p->buf);
		p->buf = NULL;
		p->len = p->cap = 0;
		return NULL;
	}
	b = p->buf;
	b[p->len] = '\0';
	if (len != NULL)
		*len = p->len;
	p->buf = NULL;
	p->len = p->cap = 0;
	return b;
}
