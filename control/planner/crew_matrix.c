/* SPDX-License-Identifier: BSD-3-Clause
 *
 * CREW's bandwidth matrices (crew.h): from a topology's links, from a CSV file, and the
 * full meshes drawn from the inter-cloud measurements (docs/CREW.md). Functions of their
 * arguments: any thread.
 */
#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "crew.h"
#include "crew_util.h"
#include "jsonutil.h"

double *
crew_matrix_from_topo(const struct topo *t)
{
	size_t n = (size_t)t->n_nodes;
	double *g = calloc(n * n, sizeof(*g));

	if (g == NULL)
		return NULL;
	for (int l = 0; l < t->n_links; l++) {
		const struct topo_link *k = &t->links[l];

		g[(size_t)k->a * n + (size_t)k->b] = k->gbps_ab;
		g[(size_t)k->b * n + (size_t)k->a] = k->gbps_ba;
	}
	return g;
}

/* Split one CSV line in place at commas; returns the number of fields (at most max, one
 * more means too many). Surrounding blanks are trimmed. */
static int
csv_split(char *line, char **f, int max)
{
	int k = 0;

	for (char *p = line;;) {
		char *c = strchr(p, ','), *e;

		if (k == max)
			return max + 1;
		if (c != NULL)
			*c = '\0';
		while (*p == ' ' || *p == '\t')
			p++;
		e = p + strlen(p);
		while (e > p && (e[-1] == ' ' || e[-1] == '\t' || e[-1] == '\r'))
			*--e = '\0';
		f[k++] = p;
		if (c == NULL)
			return k;
		p = c + 1;
	}
}

/* A strict number: the whole cell, finite. */
static bool
cell_number(const char *s, double *v)
{
	char *end;

	if (*s == '\0')
		return false;
	errno = 0;
	*v = strtod(s, &end);
	return *end == '\0' && errno == 0 && isfinite(*v);
}

/* Next line of text (in place); NULL at the end. */
static char *
next_line(char **cur)
{
	char *s = *cur, *nl;

	if (s == NULL || *s == '\0')
		return NULL;
	nl = strchr(s, '\n');
	if (nl != NULL) {
		*nl = '\0';
		*cur = nl + 1;
	} else {
		*cur = s + strlen(s);
	}
	return s;
}

static bool
blank(const char *s)
{
	return s[strspn(s, " \t\r")] == '\0';
}

struct topo *
crew_matrix_parse(const char *text, const char *src, const char *name, char *err, size_t errlen)
{
	char *buf = strdup(text), *cur = buf, *line, **f = NULL;
	struct topo_node *nodes = NULL;
	struct topo_link *links = NULL;
	struct topo *t = NULL;
	double *m = NULL;
	int n = 0, row = 0, lineno = 0, nl = 0;

	if (buf == NULL)
		goto nomem;
	while ((line = next_line(&cur)) != NULL) {
		int k;

		lineno++;
		if (blank(line))
			continue;
		if (f == NULL) { /* the header fixes n */
			n = 1;
			for (const char *p = line; *p; p++)
				n += *p == ',';
			n -= 1;
			if (n < 1 || n > TOPO_NODES_MAX) {
				json_util_fail(err, errlen,
					       "%s:%d: header: expected 'name,ID1,...,IDn' "
					       "with 1 to %d sites",
					       src, lineno, TOPO_NODES_MAX);
				goto bad;
			}
			f = malloc(sizeof(*f) * ((size_t)n + 2));
			nodes = calloc((size_t)n, sizeof(*nodes));
			m = calloc((size_t)n * (size_t)n, sizeof(*m));
			links = calloc((size_t)n * (size_t)(n - 1) / 2 + 1, sizeof(*links));
			if (f == NULL || nodes == NULL || m == NULL || links == NULL)
				goto nomem;
			csv_split(line, f, n + 1);
			for (int i = 0; i < n; i++) {
				size_t len = strlen(f[i + 1]);

				if (len == 0 || len > TOPO_ID_MAX) {
					json_util_fail(err, errlen,
						       "%s:%d:%d: site id must be 1 to %d "
						       "bytes",
						       src, lineno, i + 2, TOPO_ID_MAX);
					goto bad;
				}
				for (int j = 0; j < i; j++)
					if (strcmp(nodes[j].id, f[i + 1]) == 0) {
						json_util_fail(err, errlen,
							       "%s:%d:%d: duplicate site id "
							       "'%s'",
							       src, lineno, i + 2, f[i + 1]);
						goto bad;
					}
				memcpy(nodes[i].id, f[i + 1], len + 1);
				nodes[i].workers = TOPO_DEFAULT_WORKERS;
				nodes[i].gateways = TOPO_DEFAULT_GATEWAYS;
				nodes[i].lan_gbps = TOPO_DEFAULT_LAN_GBPS;
				nodes[i].lan_latency_ms = TOPO_DEFAULT_LAN_LATENCY_MS;
			}
			continue;
		}
		k = csv_split(line, f, n + 1);
		if (row == n || k != n + 1) {
			json_util_fail(err, errlen, "%s:%d: the matrix is not square: %s", src,
				       lineno,
				       row == n ? "more rows than sites" :
						  "the row's cell count "
						  "differs from the header's");
			goto bad;
		}
		if (strcmp(f[0], nodes[row].id) != 0) {
			json_util_fail(err, errlen,
				       "%s:%d:1: expected the row of '%s' (rows in the "
				       "header's order)",
				       src, lineno, nodes[row].id);
			goto bad;
		}
		for (int j = 0; j < n; j++) {
			double v;
			const char *c = f[j + 1];

			if (j == row) {
				if (*c != '\0' && !(cell_number(c, &v) && v == 0)) {
					json_util_fail(err, errlen,
						       "%s:%d:%d: the diagonal must be "
						       "empty or 0",
						       src, lineno, j + 2);
					goto bad;
				}
				continue;
			}
			if (*c == '\0') {
				json_util_fail(err, errlen,
					       "%s:%d:%d: missing bandwidth '%s' -> '%s'", src,
					       lineno, j + 2, nodes[row].id, nodes[j].id);
				goto bad;
			}
			if (!cell_number(c, &v) || v <= 0) {
				json_util_fail(err, errlen,
					       "%s:%d:%d: bandwidth '%s' -> '%s' must be a "
					       "number > 0, got '%.32s'",
					       src, lineno, j + 2, nodes[row].id, nodes[j].id, c);
				goto bad;
			}
			m[(size_t)row * (size_t)n + (size_t)j] = v;
		}
		row++;
	}
	if (f == NULL || row != n) {
		json_util_fail(err, errlen,
			       "%s: the matrix is not square: %d sites in the header, "
			       "%d rows",
			       src, n, row);
		goto bad;
	}
	for (int i = 0; i < n; i++)
		for (int j = i + 1; j < n; j++) {
			links[nl].a = i;
			links[nl].b = j;
			links[nl].gbps_ab = m[(size_t)i * (size_t)n + (size_t)j];
			links[nl].gbps_ba = m[(size_t)j * (size_t)n + (size_t)i];
			nl++;
		}
	t = topo_create(name, n, nodes, nl, links, err, errlen);
	goto out;
nomem:
	json_util_fail(err, errlen, "%s: out of memory", src);
bad:
	t = NULL;
out:
	free(buf);
	free(f);
	free(nodes);
	free(links);
	free(m);
	return t;
}

int
crew_values_load(const char *path, double **values, char *err, size_t errlen)
{
	char *text = json_util_read_file(path, err, errlen), *cur, *line;
	double *v = NULL;
	int n = 0, cap = 0, lineno = 0;

	*values = NULL;
	if (text == NULL)
		return -EINVAL;
	cur = text;
	while ((line = next_line(&cur)) != NULL) {
		char *c = strrchr(line, ',');
		double x;

		lineno++;
		if (blank(line))
			continue;
		c = c != NULL ? c + 1 : line;
		while (*c == ' ' || *c == '\t')
			c++;
		c[strcspn(c, " \t\r")] = '\0';
		if (!cell_number(c, &x)) {
			if (n == 0 && lineno == 1)
				continue; /* a header */
			json_util_fail(err, errlen,
				       "%s:%d: expected a bandwidth in Mbit/s, got "
				       "'%.32s'",
				       path, lineno, c);
			goto bad;
		}
		if (x <= 0) {
			json_util_fail(err, errlen, "%s:%d: bandwidth must be > 0", path, lineno);
			goto bad;
		}
		if (n == cap) {
			double *nv = realloc(v, sizeof(*v) * (size_t)(cap = cap ? cap * 2 : 128));

			if (nv == NULL) {
				json_util_fail(err, errlen, "%s: out of memory", path);
				goto bad;
			}
			v = nv;
		}
		v[n++] = x;
	}
	if (n == 0) {
		json_util_fail(err, errlen, "%s: no bandwidth values", path);
		goto bad;
	}
	free(text);
	*values = v;
	return n;
bad:
	free(text);
	free(v);
	return -EINVAL;
}

struct topo *
crew_draw_mesh(int n, const double *values, int n_values, uint64_t seed, char *err, size_t errlen)
{
	struct topo_node *nodes = calloc((size_t)(n > 0 ? n : 1), sizeof(*nodes));
	struct topo_link *links = calloc((size_t)(n > 1 ? n * (n - 1) / 2 : 1), sizeof(*links));
	struct topo *t = NULL;
	uint64_t s = seed;
	int nl = 0, width = n > 100 ? 4 : 2;
	char name[64];

	if (nodes == NULL || links == NULL || n_values < 1 || n < 1 || n > TOPO_NODES_MAX) {
		json_util_fail(err, errlen,
			       nodes == NULL || links == NULL ?
				       "out of memory" :
				       "intercloud: need 1 to %d sites and at least one value",
			       TOPO_NODES_MAX);
		goto out;
	}
	for (int i = 0; i < n; i++) {
		snprintf(nodes[i].id, sizeof(nodes[i].id), "c%0*d", width, i);
		nodes[i].workers = TOPO_DEFAULT_WORKERS;
		nodes[i].gateways = TOPO_DEFAULT_GATEWAYS;
		nodes[i].lan_gbps = TOPO_DEFAULT_LAN_GBPS;
		nodes[i].lan_latency_ms = TOPO_DEFAULT_LAN_LATENCY_MS;
	}
	for (int i = 0; i < n; i++)
		for (int j = i + 1; j < n; j++) {
			links[nl].a = i;
			links[nl].b = j;
			links[nl].gbps_ab = values[mix64(&s) % (uint64_t)n_values] / 1000;
			links[nl].gbps_ba = values[mix64(&s) % (uint64_t)n_values] / 1000;
			nl++;
		}
	snprintf(name, sizeof(name), "crew-intercloud-%d-seed%llu", n, (unsigned long long)seed);
	t = topo_create(name, n, nodes, nl, links, err, errlen);
out:
	free(nodes);
	free(links);
	return t;
}
