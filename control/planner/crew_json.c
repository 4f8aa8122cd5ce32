/* SPDX-License-Identifier: BSD-3-Clause
 *
 * The plan's "partial_reduce" section (crew.h, docs/CREW.md): its arrays in memory, the
 * writer, and the strict parser that checks a section against its topology. Functions
 * of their arguments: any thread.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "crew.h"
#include "jsonutil.h"
#include "plan.h"

int
crew_section_init(struct crew_section *s, int n, int p)
{
	memset(s, 0, sizeof(*s));
	s->n = n;
	s->p = p;
	s->group = malloc(sizeof(int) * (size_t)(p > 0 ? p : 1));
	s->bytes = calloc((size_t)n, sizeof(uint64_t));
	s->backup = malloc(sizeof(int) * (size_t)n);
	s->relay = malloc(sizeof(int) * (size_t)n * (size_t)(p > 0 ? p : 1));
	if (s->group == NULL || s->bytes == NULL || s->backup == NULL || s->relay == NULL) {
		crew_section_fini(s);
		return -ENOMEM;
	}
	for (int i = 0; i < n; i++)
		s->backup[i] = -1;
	for (size_t i = 0; i < (size_t)n * (size_t)p; i++)
		s->relay[i] = -1;
	return 0;
}

void
crew_section_fini(struct crew_section *s)
{
	free(s->group);
	free(s->bytes);
	free(s->backup);
	free(s->relay);
	s->group = NULL;
	s->bytes = NULL;
	s->backup = NULL;
	s->relay = NULL;
}

json_t *
crew_section_to_json(const struct topo *t, const struct crew_section *s)
{
	json_t *sec, *group = json_array(), *aggs = json_array(), *relays = json_array();
	uint64_t off = 0;

	if (group == NULL || aggs == NULL || relays == NULL)
		goto nomem;
	for (int k = 0; k < s->p; k++)
		json_array_append_new(group, json_string(t->nodes[s->group[k]].id));
	for (int i = 0; i < s->n; i++) {
		json_t *a;

		if (s->bytes[i] == 0)
			continue;
		a = json_pack("{s:s, s:I, s:I}", "site", t->nodes[i].id, "offset", (json_int_t)off,
			      "bytes", (json_int_t)s->bytes[i]);
		if (a == NULL)
			goto nomem;
		if (s->backup[i] >= 0)
			json_object_set_new(a, "backup", json_string(t->nodes[s->backup[i]].id));
		json_array_append_new(aggs, a);
		off += s->bytes[i];
		for (int k = 0; k < s->p; k++) {
			int r = s->relay[(size_t)i * (size_t)s->p + (size_t)k];

			if (r >= 0)
				json_array_append_new(relays, json_pack("{s:s, s:s, s:s}", "from",
									t->nodes[i].id, "to",
									t->nodes[s->group[k]].id,
									"via", t->nodes[r].id));
		}
	}
	sec = json_pack("{s:s, s:I, s:o, s:o, s:o, s:{s:f, s:f, s:f, s:f}}", "scheme",
			crew_scheme_name(s->scheme), "model_bytes", (json_int_t)s->model_bytes,
			"group", group, "aggregators", aggs, "relays", relays, "predicted",
			"scatter_seconds", s->scatter_s, "aggregate_seconds", s->aggregate_s,
			"broadcast_seconds", s->broadcast_s, "operation_seconds",
			s->scatter_s + s->aggregate_s + s->broadcast_s);
	return sec;
nomem:
	json_decref(group);
	json_decref(aggs);
	json_decref(relays);
	return NULL;
}

/* Fail on the first key of obj that is not in known[]. */
static int
known_keys(const json_t *obj, const char *const *known, size_t n_known, const char *src,
	   const char *path, char *err, size_t errlen)
{
	const char *key = json_util_unknown_key(obj, known, n_known);

	if (key != NULL)
		return json_util_fail(err, errlen, "%s: field '%s.%.*s': unknown field", src, path,
				      TOPO_ID_MAX, key);
	return 0;
}

/* A site id field: its index, or a negative value after err is set. */
static int
site_field(const struct topo *t, const json_t *v, const char *src, const char *path, char *err,
	   size_t errlen)
{
	int i;

	if (!json_is_string(v))
		return json_util_fail(err, errlen, "%s: field '%s': expected a site id", src, path);
	i = topo_node_index(t, json_string_value(v));
	if (i < 0)
		return json_util_fail(err, errlen, "%s: field '%s': unknown site id '%.*s'", src,
				      path, TOPO_ID_MAX, json_string_value(v));
	return i;
}

/* Every member other than `site` has links to and from it. */
static bool
serves_group(const struct topo *t, const struct crew_section *s, int site)
{
	for (int k = 0; k < s->p; k++)
		if (s->group[k] != site && topo_link_between(t, s->group[k], site) < 0)
			return false;
	return true;
}

static int
parse_predicted(const json_t *pr, const char *src, struct crew_section *s, char *err, size_t errlen)
{
	static const char *const known[] = {"scatter_seconds", "aggregate_seconds",
					    "broadcast_seconds", "operation_seconds"};
	double *dst[] = {&s->scatter_s, &s->aggregate_s, &s->broadcast_s, NULL};

	if (!json_is_object(pr))
		return json_util_fail(err, errlen,
				      "%s: field '" CREW_SECTION ".predicted': "
				      "expected an object",
				      src);
	if (known_keys(pr, known, 4, src, CREW_SECTION ".predicted", err, errlen) != 0)
		return -EINVAL;
	for (int f = 0; f < 4; f++) {
		json_t *v = json_object_get(pr, known[f]);
		double x;

		if (v == NULL)
			return json_util_fail(err, errlen,
					      "%s: field '" CREW_SECTION ".predicted.%s': "
					      "missing",
					      src, known[f]);
		x = json_is_number(v) ? json_number_value(v) : -1;
		if (!(isfinite(x) && x >= 0))
			return json_util_fail(err, errlen,
					      "%s: field '" CREW_SECTION ".predicted.%s': "
					      "expected a finite number >= 0",
					      src, known[f]);
		if (dst[f] != NULL)
			*dst[f] = x;
	}
	return 0;
}

static int
parse_aggregators(const struct topo *t, const json_t *aggs, const char *src, struct crew_section *s,
		  char *err, size_t errlen)
{
	static const char *const known[] = {"site", "offset", "bytes", "backup"};
	uint64_t off = 0;
	char path[96];

	if (!json_is_array(aggs) || json_array_size(aggs) == 0)
		return json_util_fail(err, errlen,
				      "%s: field '" CREW_SECTION ".aggregators': "
				      "expected a non-empty array",
				      src);
	for (size_t a = 0; a < json_array_size(aggs); a++) {
		json_t *o = json_array_get(aggs, a), *jo, *jb, *bk;
		int i;

		snprintf(path, sizeof(path), CREW_SECTION ".aggregators[%zu]", a);
		if (!json_is_object(o))
			return json_util_fail(err, errlen, "%s: field '%s': expected an object",
					      src, path);
		if (known_keys(o, known, 4, src, path, err, errlen) != 0)
			return -EINVAL;
		snprintf(path, sizeof(path), CREW_SECTION ".aggregators[%zu].site", a);
		if ((i = site_field(t, json_object_get(o, "site"), src, path, err, errlen)) < 0)
			return -EINVAL;
		if (s->bytes[i] != 0)
			return json_util_fail(err, errlen, "%s: field '%s': site '%s' listed twice",
					      src, path, t->nodes[i].id);
		if (!serves_group(t, s, i))
			return json_util_fail(err, errlen,
					      "%s: field '%s': site '%s' lacks a link to "
					      "a member",
					      src, path, t->nodes[i].id);
		jo = json_object_get(o, "offset");
		jb = json_object_get(o, "bytes");
		if (!json_is_integer(jo) || json_integer_value(jo) != (json_int_t)off)
			return json_util_fail(err, errlen,
					      "%s: field '" CREW_SECTION ".aggregators[%zu]"
					      ".offset': expected the integer %llu (ranges are "
					      "contiguous)",
					      src, a, (unsigned long long)off);
		if (!json_is_integer(jb) || json_integer_value(jb) <= 0 ||
		    (uint64_t)json_integer_value(jb) > s->model_bytes - off)
			return json_util_fail(err, errlen,
					      "%s: field '" CREW_SECTION ".aggregators[%zu]"
					      ".bytes': expected an integer in [1, %llu]",
					      src, a, (unsigned long long)(s->model_bytes - off));
		s->bytes[i] = (uint64_t)json_integer_value(jb);
		off += s->bytes[i];
		bk = json_object_get(o, "backup");
		if (bk != NULL) {
			int j;

			snprintf(path, sizeof(path), CREW_SECTION ".aggregators[%zu].backup", a);
			if ((j = site_field(t, bk, src, path, err, errlen)) < 0)
				return -EINVAL;
			if (j == i || !serves_group(t, s, j))
				return json_util_fail(err, errlen, "%s: field '%s': '%s' %s", src,
						      path, t->nodes[j].id,
						      j == i ? "is the aggregator "
							       "itself" :
							       "lacks a link to a member");
			s->backup[i] = j;
		}
	}
	if (off != s->model_bytes)
		return json_util_fail(err, errlen,
				      "%s: field '" CREW_SECTION ".aggregators': shares "
				      "sum to %llu bytes, model_bytes is %llu",
				      src, (unsigned long long)off,
				      (unsigned long long)s->model_bytes);
	return 0;
}

static int
parse_relays(const struct topo *t, const json_t *rel, const char *src, struct crew_section *s,
	     char *err, size_t errlen)
{
	static const char *const known[] = {"from", "to", "via"};
	char path[96];

	if (!json_is_array(rel))
		return json_util_fail(err, errlen,
				      "%s: field '" CREW_SECTION ".relays': expected "
				      "an array",
				      src);
	for (size_t r = 0; r < json_array_size(rel); r++) {
		json_t *o = json_array_get(rel, r);
		int v[3], k;

		snprintf(path, sizeof(path), CREW_SECTION ".relays[%zu]", r);
		if (!json_is_object(o))
			return json_util_fail(err, errlen, "%s: field '%s': expected an object",
					      src, path);
		if (known_keys(o, known, 3, src, path, err, errlen) != 0)
			return -EINVAL;
		for (int f = 0; f < 3; f++) {
			snprintf(path, sizeof(path), CREW_SECTION ".relays[%zu].%s", r, known[f]);
			if ((v[f] = site_field(t, json_object_get(o, known[f]), src, path, err,
					       errlen)) < 0)
				return -EINVAL;
		}
		for (k = 0; k < s->p && s->group[k] != v[1]; k++)
			;
		if (s->bytes[v[0]] == 0)
			return json_util_fail(err, errlen,
					      "%s: field '" CREW_SECTION ".relays[%zu]."
					      "from': '%s' is not an aggregator",
					      src, r, t->nodes[v[0]].id);
		if (k == s->p || v[1] == v[0])
			return json_util_fail(err, errlen,
					      "%s: field '" CREW_SECTION ".relays[%zu].to':"
					      " '%s' is not another member",
					      src, r, t->nodes[v[1]].id);
		if (v[2] == v[0] || v[2] == v[1] || topo_link_between(t, v[0], v[2]) < 0 ||
		    topo_link_between(t, v[2], v[1]) < 0)
			return json_util_fail(err, errlen,
					      "%s: field '" CREW_SECTION ".relays[%zu].via':"
					      " '%s' is no two-hop path",
					      src, r, t->nodes[v[2]].id);
		if (s->relay[(size_t)v[0] * (size_t)s->p + (size_t)k] >= 0)
			return json_util_fail(err, errlen,
					      "%s: field '" CREW_SECTION ".relays[%zu]': "
					      "a second relay for '%s' -> '%s'",
					      src, r, t->nodes[v[0]].id, t->nodes[v[1]].id);
		s->relay[(size_t)v[0] * (size_t)s->p + (size_t)k] = v[2];
	}
	return 0;
}

int
crew_section_parse(const struct topo *t, const json_t *sec, const char *src, struct crew_section *s,
		   char *err, size_t errlen)
{
	static const char *const known[] = {"scheme",      "model_bytes", "group",
					    "aggregators", "relays",      "predicted"};
	json_t *sch, *mb, *grp, *pr;
	size_t p;
	int rc;

	memset(s, 0, sizeof(*s));
	if (src == NULL)
		src = "<plan>";
	if (!json_is_object(sec))
		return json_util_fail(err, errlen,
				      "%s: field '" CREW_SECTION "': expected an object", src);
	if (known_keys(sec, known, 6, src, CREW_SECTION, err, errlen) != 0)
		return -EINVAL;
	grp = json_object_get(sec, "group");
	p = json_array_size(grp);
	if (!json_is_array(grp) || p == 0 || p > (size_t)t->n_nodes)
		return json_util_fail(err, errlen,
				      "%s: field '" CREW_SECTION ".group': expected 1 "
				      "to %d site ids",
				      src, t->n_nodes);
	if (crew_section_init(s, t->n_nodes, (int)p) != 0) {
		json_util_fail(err, errlen, "%s: out of memory", src);
		return -ENOMEM;
	}
	rc = -EINVAL;
	sch = json_object_get(sec, "scheme");
	s->scheme = CREW_SCHEME_CREW;
	while (json_is_string(sch) &&
	       strcmp(json_string_value(sch), crew_scheme_name(s->scheme)) != 0 &&
	       s->scheme != CREW_SCHEME_ALL_TO_ALL)
		s->scheme++;
	if (!json_is_string(sch) ||
	    strcmp(json_string_value(sch), crew_scheme_name(s->scheme)) != 0) {
		json_util_fail(err, errlen,
			       "%s: field '" CREW_SECTION ".scheme': expected \"crew\", "
			       "\"partial-reduce\" or \"all-to-all\"",
			       src);
		goto bad;
	}
	mb = json_object_get(sec, "model_bytes");
	if (!json_is_integer(mb) || json_integer_value(mb) <= 0 ||
	    (uint64_t)json_integer_value(mb) > CREW_MAX_BYTES) {
		json_util_fail(err, errlen,
			       "%s: field '" CREW_SECTION ".model_bytes': expected an "
			       "integer in [1, 2^50]",
			       src);
		goto bad;
	}
	s->model_bytes = (uint64_t)json_integer_value(mb);
	for (size_t k = 0; k < p; k++) {
		char path[64];
		int v;

		snprintf(path, sizeof(path), CREW_SECTION ".group[%zu]", k);
		if ((v = site_field(t, json_array_get(grp, k), src, path, err, errlen)) < 0)
			goto bad;
		for (size_t j = 0; j < k; j++)
			if (s->group[j] == v) {
				json_util_fail(err, errlen, "%s: field '%s': duplicate member '%s'",
					       src, path, t->nodes[v].id);
				goto bad;
			}
		s->group[k] = v;
	}
	if (s->scheme == CREW_SCHEME_ALL_TO_ALL && s->p != t->n_nodes) {
		json_util_fail(err, errlen,
			       "%s: field '" CREW_SECTION ".group': all-to-all needs "
			       "every site",
			       src);
		goto bad;
	}
	if (parse_aggregators(t, json_object_get(sec, "aggregators"), src, s, err, errlen) != 0)
		goto bad;
	if (s->scheme == CREW_SCHEME_PARTIAL)
		for (int i = 0; i < s->n; i++) {
			bool member = false;

			for (int k = 0; k < s->p; k++)
				member |= s->group[k] == i;
			if (s->bytes[i] > 0 && !member) {
				json_util_fail(err, errlen,
					       "%s: field '" CREW_SECTION ".aggregators': "
					       "'%s' is not a member (scheme partial-reduce)",
					       src, t->nodes[i].id);
				goto bad;
			}
		}
	if (json_object_get(sec, "relays") == NULL) {
		json_util_fail(err, errlen, "%s: field '" CREW_SECTION ".relays': missing", src);
		goto bad;
	}
	if (parse_relays(t, json_object_get(sec, "relays"), src, s, err, errlen) != 0)
		goto bad;
	pr = json_object_get(sec, "predicted");
	if (pr != NULL && parse_predicted(pr, src, s, err, errlen) != 0)
		goto bad;
	return 0;
bad:
	crew_section_fini(s);
	return rc;
}

int
crew_section_load(const struct topo *t, const char *path, struct crew_section *s, char *err,
		  size_t errlen)
{
	char *text = json_util_read_file(path, err, errlen);
	struct plan *p;
	json_t *root;
	int rc;

	memset(s, 0, sizeof(*s));
	if (text == NULL)
		return -errno;
	p = plan_parse(t, text, path, err, errlen);
	if (p == NULL) {
		free(text);
		return -EINVAL;
	}
	plan_free(p);
	root = json_loads(text, JSON_REJECT_DUPLICATES, NULL);
	free(text);
	if (root == NULL)
		return json_util_fail(err, errlen, "%s: out of memory", path);
	if (json_object_get(root, CREW_SECTION) == NULL)
		rc = json_util_fail(err, errlen, "%s: field '" CREW_SECTION "': missing", path);
	else
		rc = crew_section_parse(t, json_object_get(root, CREW_SECTION), path, s, err,
					errlen);
	json_decref(root);
	return rc;
}
