/* SPDX-License-Identifier: BSD-3-Clause
 *
 * Forwarding tables: the strict `georeduce-table/1` JSON parser (docs/TABLES.md), run by
 * the dataplane on every table it is sent and by the worker library. Parsing ends in
 * table_validate(), so a parsed table is a valid one. Slow path only: it allocates. The
 * writer is table_json_write.c.
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "jsonutil.h"
#include "table.h"

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

/* Every key of obj is one of the n known[] and the first `required` of them are present. */
static int
check_keys(struct json_util_src *c, json_t *obj, const char *path, const char *const *known,
	   size_t n, size_t required)
{
	const char *key = json_util_unknown_key(obj, known, n);

	if (key != NULL)
		return json_util_field_fail(c, path, key, "unknown field");
	for (size_t k = 0; k < required; k++)
		if (json_object_get(obj, known[k]) == NULL)
			return json_util_field_fail(c, path, known[k], "missing");
	return 0;
}

static int
get_uint(struct json_util_src *c, json_t *obj, const char *path, const char *key, uint64_t min,
	 uint64_t max, uint64_t *out)
{
	json_t *v = json_object_get(obj, key);
	json_int_t x;

	*out = 0; /* defined on every path: callers read it only on success */
	if (!json_is_integer(v))
		return json_util_field_fail(c, path, key,
					    "expected an integer in [%" PRIu64 ", %" PRIu64 "]",
					    min, max);
	x = json_integer_value(v);
	if (x < 0 || (uint64_t)x < min || (uint64_t)x > max)
		return json_util_field_fail(c, path, key,
					    "%lld is not in [%" PRIu64 ", %" PRIu64 "]",
					    (long long)x, min, max);
	*out = (uint64_t)x;
	return 0;
}

static int
get_ipv4(struct json_util_src *c, json_t *obj, const char *path, uint32_t *out)
{
	json_t *v = json_object_get(obj, "ipv4");

	*out = 0;
	if (!json_is_string(v))
		return json_util_field_fail(c, path, "ipv4",
					    "expected a dotted-quad IPv4 address string");
	if (table_ipv4_parse(json_string_value(v), out) != 0)
		return json_util_field_fail(c, path, "ipv4",
					    "expected a dotted-quad IPv4 address, got '%.32s'",
					    json_string_value(v));
	if (!table_ipv4_unicast(*out))
		return json_util_field_fail(c, path, "ipv4", "%s is not a unicast address",
					    json_string_value(v));
	return 0;
}

/* A gateway object; a child gateway's counts the workers below it and may list them as
 * well (both read by parse_tree()). */
static int
parse_gw_as(struct json_util_src *c, json_t *obj, const char *path, struct table_gw *g, bool child)
{
	static const char *const known[] = {
		"id",           "ipv4", "base_port", "ports", "subtree_workers" /* children only */,
		"workers_below" /* optional: children only */};
	uint64_t id, base, ports;
	int rc;

	if (!json_is_object(obj))
		return json_util_field_fail(c, path, "", "expected an object");
	/* Every gateway has the first four keys; a child has the count too and may have the
	 * list. */
	rc = check_keys(c, obj, path, known, child ? ARRAY_SIZE(known) : 4,
			child ? ARRAY_SIZE(known) - 1 : 4);
	if (rc == 0)
		rc = get_uint(c, obj, path, "id", 1, TABLE_ID_MAX, &id);
	if (rc == 0)
		rc = get_ipv4(c, obj, path, &g->ipv4);
	if (rc == 0)
		rc = get_uint(c, obj, path, "base_port", 1, UINT16_MAX, &base);
	if (rc == 0)
		rc = get_uint(c, obj, path, "ports", 1, TABLE_PORTS_MAX, &ports);
	if (rc != 0)
		return rc;
	g->id = (uint16_t)id;
	g->base_port = (uint16_t)base;
	g->ports = (uint16_t)ports;
	return 0;
}

static int
parse_gw(struct json_util_src *c, json_t *obj, const char *path, struct table_gw *g)
{
	return parse_gw_as(c, obj, path, g, false);
}

static int
parse_worker(struct json_util_src *c, json_t *obj, const char *path, struct table_worker *w)
{
	static const char *const known[] = {"id", "ipv4", "port"};
	uint64_t id, port;
	int rc;

	if (!json_is_object(obj))
		return json_util_field_fail(c, path, "", "expected an object");
	rc = check_keys(c, obj, path, known, ARRAY_SIZE(known), ARRAY_SIZE(known));
	if (rc == 0)
		rc = get_uint(c, obj, path, "id", 1, TABLE_ID_MAX, &id);
	if (rc == 0)
		rc = get_ipv4(c, obj, path, &w->ipv4);
	if (rc == 0)
		rc = get_uint(c, obj, path, "port", 1, UINT16_MAX, &port);
	if (rc != 0)
		return rc;
	w->id = (uint16_t)id;
	w->port = (uint16_t)port;
	return 0;
}

static const char *const tree_keys[] = {
	"id",          "role",      "parent",          "children",
	"workers",     "expected",  "subtree_workers", "chunk_first",
	"chunk_count", "rate_gbps", "slots",           "window",
	"threshold",   "grace_ms",  "grace_adaptive" /* optional: the last four */};

/* First pass over trees[i]: an object with known keys and bounded arrays, so that the
 * table can be allocated before anything is copied. */
static int
size_tree(struct json_util_src *c, json_t *jt, int i, int *n_children, int *n_workers, int *n_below)
{
	char path[64];
	json_t *ch, *wk;
	size_t nb = 0;
	int rc;

	snprintf(path, sizeof(path), "trees[%d]", i);
	if (!json_is_object(jt))
		return json_util_field_fail(c, path, "", "expected an object");
	rc = check_keys(c, jt, path, tree_keys, ARRAY_SIZE(tree_keys), ARRAY_SIZE(tree_keys) - 4);
	if (rc != 0)
		return rc;
	ch = json_object_get(jt, "children");
	wk = json_object_get(jt, "workers");
	if (!json_is_array(ch))
		return json_util_field_fail(c, path, "children", "expected an array");
	if (json_array_size(ch) > TABLE_CHILDREN_MAX)
		return json_util_field_fail(c, path, "children",
					    "%zu entries exceed the limit of %d",
					    json_array_size(ch), TABLE_CHILDREN_MAX);
	if (!json_is_array(wk))
		return json_util_field_fail(c, path, "workers", "expected an array");
	if (json_array_size(wk) > TABLE_WORKERS_MAX)
		return json_util_field_fail(c, path, "workers",
					    "%zu entries exceed the limit of %d",
					    json_array_size(wk), TABLE_WORKERS_MAX);
	for (size_t j = 0; j < json_array_size(ch); j++) {
		json_t *b = json_object_get(json_array_get(ch, j), "workers_below");

		if (b == NULL)
			continue;
		snprintf(path, sizeof(path), "trees[%d].children[%zu]", i, j);
		if (!json_is_array(b) || json_array_size(b) == 0)
			return json_util_field_fail(c, path, "workers_below",
						    "expected an array of 1 to %d worker ids",
						    TABLE_BELOW_MAX);
		nb += json_array_size(b);
		if (nb > TABLE_BELOW_MAX)
			return json_util_field_fail(c, path, "workers_below",
						    "more than %d workers below the child "
						    "gateways of the tree entry",
						    TABLE_BELOW_MAX);
	}
	*n_children = (int)json_array_size(ch);
	*n_workers = (int)json_array_size(wk);
	*n_below = (int)nb;
	return 0;
}

/* The workers below child gateway j of tree entry e (optional), from *k on in below[]. */
static int
parse_below(struct json_util_src *c, json_t *obj, const char *path, struct table_tree *e, int j,
	    int *k)
{
	json_t *b = json_object_get(obj, "workers_below"), *v;
	char key[48]; /* "workers_below[" + a size_t + "]" */
	size_t m;

	json_array_foreach (b, m, v) {
		json_int_t x = json_integer_value(v);

		if (!json_is_integer(v) || x < 1 || x > TABLE_ID_MAX) {
			snprintf(key, sizeof(key), "workers_below[%zu]", m);
			return json_util_field_fail(c, path, key, "expected a worker id in [1, %d]",
						    TABLE_ID_MAX);
		}
		e->below[*k] = (uint16_t)x;
		e->below_child[*k] = (uint8_t)j;
		(*k)++;
	}
	return 0;
}

static int
parse_tree(struct json_util_src *c, json_t *jt, int i, struct table_tree *e)
{
	json_t *role = json_object_get(jt, "role"), *parent = json_object_get(jt, "parent");
	json_t *rate = json_object_get(jt, "rate_gbps");
	json_t *adaptive = json_object_get(jt, "grace_adaptive");
	uint64_t id, expected, subtree, first, count, slots, window = 0, threshold = 0, grace = 0;
	char path[48];
	int rc;

	snprintf(path, sizeof(path), "trees[%d]", i);
	rc = get_uint(c, jt, path, "id", 0, UINT16_MAX, &id);
	if (rc != 0)
		return rc;
	if (!json_is_string(role) || table_role_from_name(json_string_value(role)) == 0)
		return json_util_field_fail(c, path, "role",
					    "expected \"root\", \"interior\" or \"leaf\"");
	e->role = table_role_from_name(json_string_value(role));
	if (json_is_null(parent)) {
		e->has_parent = false;
	} else {
		snprintf(path, sizeof(path), "trees[%d].parent", i);
		if (!json_is_object(parent))
			return json_util_field_fail(c, path, "",
						    "expected an object, or null at the root");
		rc = parse_gw(c, parent, path, &e->parent);
		if (rc != 0)
			return rc;
		e->has_parent = true;
	}
	for (int j = 0, k = 0; j < e->n_children; j++) {
		json_t *cj = json_array_get(json_object_get(jt, "children"), (size_t)j);
		uint64_t below;

		snprintf(path, sizeof(path), "trees[%d].children[%d]", i, j);
		rc = parse_gw_as(c, cj, path, &e->children[j], true);
		if (rc == 0)
			rc = get_uint(c, cj, path, "subtree_workers", 1, TABLE_ID_MAX, &below);
		if (rc == 0)
			rc = parse_below(c, cj, path, e, j, &k);
		if (rc != 0)
			return rc;
		e->child_workers[j] = (uint32_t)below;
	}
	for (int j = 0; j < e->n_workers; j++) {
		snprintf(path, sizeof(path), "trees[%d].workers[%d]", i, j);
		rc = parse_worker(c, json_array_get(json_object_get(jt, "workers"), (size_t)j),
				  path, &e->workers[j]);
		if (rc != 0)
			return rc;
	}
	snprintf(path, sizeof(path), "trees[%d]", i);
	rc = get_uint(c, jt, path, "expected", 0, UINT32_MAX, &expected);
	if (rc == 0)
		rc = get_uint(c, jt, path, "subtree_workers", 0, UINT32_MAX, &subtree);
	if (rc == 0)
		rc = get_uint(c, jt, path, "chunk_first", 0, UINT32_MAX, &first);
	if (rc == 0)
		rc = get_uint(c, jt, path, "chunk_count", 0, UINT32_MAX, &count);
	if (rc == 0 && !json_is_number(rate))
		rc = json_util_field_fail(c, path, "rate_gbps", "expected a number");
	if (rc == 0)
		rc = get_uint(c, jt, path, "slots", 1, TABLE_SLOTS_MAX, &slots);
	if (rc == 0 && json_object_get(jt, "window") != NULL)
		rc = get_uint(c, jt, path, "window", 1, TABLE_SLOTS_MAX, &window);
	if (rc == 0 && json_object_get(jt, "threshold") != NULL)
		rc = get_uint(c, jt, path, "threshold", 1, UINT32_MAX, &threshold);
	if (rc == 0 && json_object_get(jt, "grace_ms") != NULL)
		rc = get_uint(c, jt, path, "grace_ms", 1, TABLE_GRACE_MS_MAX, &grace);
	if (rc == 0 && adaptive != NULL && !json_is_boolean(adaptive))
		rc = json_util_field_fail(c, path, "grace_adaptive", "expected true or false");
	if (rc != 0)
		return rc;
	e->id = (uint16_t)id;
	e->expected = (uint32_t)expected;
	e->subtree_workers = (uint32_t)subtree;
	e->chunk_first = (uint32_t)first;
	e->chunk_count = (uint32_t)count;
	e->rate_gbps = json_number_value(rate);
	e->slots = (uint32_t)slots;
	e->window = (uint32_t)window;
	e->threshold = (uint32_t)threshold;
	e->grace_ms = (uint32_t)grace;
	e->grace_adaptive = json_is_true(adaptive);
	return 0;
}

static int
parse_limits(struct json_util_src *c, json_t *obj, struct table_limits *lim)
{
	static const char *const known[] = {"max_trees", "max_children", "max_workers",
					    "max_slots"};
	uint64_t t, ch, w, s;
	int rc;

	if (!json_is_object(obj))
		return json_util_field_fail(c, "limits", "", "expected an object");
	rc = check_keys(c, obj, "limits", known, ARRAY_SIZE(known), ARRAY_SIZE(known));
	if (rc == 0)
		rc = get_uint(c, obj, "limits", "max_trees", 1, TABLE_TREES_MAX, &t);
	if (rc == 0)
		rc = get_uint(c, obj, "limits", "max_children", 0, TABLE_CHILDREN_MAX, &ch);
	if (rc == 0)
		rc = get_uint(c, obj, "limits", "max_workers", 0, TABLE_WORKERS_MAX, &w);
	if (rc == 0)
		rc = get_uint(c, obj, "limits", "max_slots", 1, TABLE_SLOTS_MAX, &s);
	if (rc != 0)
		return rc;
	lim->max_trees = (uint32_t)t;
	lim->max_children = (uint32_t)ch;
	lim->max_workers = (uint32_t)w;
	lim->max_slots = (uint32_t)s;
	return 0;
}

static const char *const stream_keys[] = {"id",      "source",    "from",   "to",
					  "deliver", "rate_gbps", "origins"};

/* streams[i] into s (inline arrays: bounded here before anything is copied). */
static int
parse_stream(struct json_util_src *c, json_t *js, int i, struct table_stream *s)
{
	json_t *from, *to, *del, *org, *rate;
	uint64_t id, source, o;
	char path[48];
	int rc;

	snprintf(path, sizeof(path), "streams[%d]", i);
	if (!json_is_object(js))
		return json_util_field_fail(c, path, "", "expected an object");
	rc = check_keys(c, js, path, stream_keys, ARRAY_SIZE(stream_keys), ARRAY_SIZE(stream_keys));
	if (rc == 0)
		rc = get_uint(c, js, path, "id", 0, UINT16_MAX, &id);
	if (rc == 0)
		rc = get_uint(c, js, path, "source", 1, TABLE_ID_MAX, &source);
	if (rc != 0)
		return rc;
	from = json_object_get(js, "from");
	to = json_object_get(js, "to");
	del = json_object_get(js, "deliver");
	org = json_object_get(js, "origins");
	rate = json_object_get(js, "rate_gbps");
	if (!json_is_array(to) || json_array_size(to) > TABLE_CHILDREN_MAX)
		return json_util_field_fail(c, path, "to",
					    "expected an array of at most %d "
					    "gateways",
					    TABLE_CHILDREN_MAX);
	if (!json_is_array(del) || json_array_size(del) > TABLE_WORKERS_MAX)
		return json_util_field_fail(c, path, "deliver",
					    "expected an array of at most %d "
					    "workers",
					    TABLE_WORKERS_MAX);
	if (!json_is_array(org) || json_array_size(org) > TABLE_WORKERS_MAX)
		return json_util_field_fail(c, path, "origins",
					    "expected an array of at most %d "
					    "worker ids",
					    TABLE_WORKERS_MAX);
	if (!json_is_number(rate))
		return json_util_field_fail(c, path, "rate_gbps", "expected a number");
	s->id = (uint16_t)id;
	s->source = (uint16_t)source;
	s->rate_gbps = json_number_value(rate);
	if (json_is_null(from)) {
		s->has_from = false;
	} else {
		snprintf(path, sizeof(path), "streams[%d].from", i);
		if (!json_is_object(from))
			return json_util_field_fail(c, path, "",
						    "expected an object, or null at the "
						    "source");
		rc = parse_gw(c, from, path, &s->from);
		if (rc != 0)
			return rc;
		s->has_from = true;
	}
	s->n_to = (int)json_array_size(to);
	for (int j = 0; j < s->n_to; j++) {
		snprintf(path, sizeof(path), "streams[%d].to[%d]", i, j);
		rc = parse_gw(c, json_array_get(to, (size_t)j), path, &s->to[j]);
		if (rc != 0)
			return rc;
	}
	s->n_deliver = (int)json_array_size(del);
	for (int j = 0; j < s->n_deliver; j++) {
		snprintf(path, sizeof(path), "streams[%d].deliver[%d]", i, j);
		rc = parse_worker(c, json_array_get(del, (size_t)j), path, &s->deliver[j]);
		if (rc != 0)
			return rc;
	}
	s->n_origins = (int)json_array_size(org);
	snprintf(path, sizeof(path), "streams[%d]", i);
	for (int j = 0; j < s->n_origins; j++) {
		json_t *v = json_array_get(org, (size_t)j);
		char key[24];

		snprintf(key, sizeof(key), "origins[%d]", j);
		if (!json_is_integer(v) || json_integer_value(v) < 1 ||
		    json_integer_value(v) > TABLE_ID_MAX)
			return json_util_field_fail(c, path, key, "expected a worker id in [1, %d]",
						    TABLE_ID_MAX);
		o = (uint64_t)json_integer_value(v);
		s->origins[j] = (uint16_t)o;
	}
	return 0;
}

static const char *const seal_keys[] = {"peer", "key_id", "aead", "key"};

static int
hex_nibble(char ch)
{
	return ch >= '0' && ch <= '9' ? ch - '0' : ch >= 'a' && ch <= 'f' ? ch - 'a' + 10 : -1;
}

/* sealed[i] into sl. The key is checked for its form only; no message quotes it. */
static int
parse_seal(struct json_util_src *c, json_t *js, int i, struct table_seal *sl)
{
	json_t *aead, *key;
	uint64_t peer, key_id;
	char path[32];
	size_t n;
	int rc;

	snprintf(path, sizeof(path), "sealed[%d]", i);
	if (!json_is_object(js))
		return json_util_field_fail(c, path, "", "expected an object");
	rc = check_keys(c, js, path, seal_keys, ARRAY_SIZE(seal_keys), ARRAY_SIZE(seal_keys));
	if (rc == 0)
		rc = get_uint(c, js, path, "peer", 1, TABLE_ID_MAX, &peer);
	if (rc == 0)
		rc = get_uint(c, js, path, "key_id", 1, UINT32_MAX, &key_id);
	if (rc != 0)
		return rc;
	aead = json_object_get(js, "aead");
	sl->aead = json_is_string(aead) ? table_aead_from_name(json_string_value(aead)) : 0;
	if (sl->aead == 0)
		return json_util_field_fail(c, path, "aead",
					    "expected \"aes-128-gcm\" or "
					    "\"aes-256-gcm\"");
	n = table_aead_key_len(sl->aead);
	key = json_object_get(js, "key");
	if (!json_is_string(key) || json_string_length(key) != 2 * n)
		return json_util_field_fail(c, path, "key", "expected %zu lowercase hex digits",
					    2 * n);
	for (size_t k = 0; k < n; k++) {
		int hi = hex_nibble(json_string_value(key)[2 * k]);
		int lo = hex_nibble(json_string_value(key)[2 * k + 1]);

		if (hi < 0 || lo < 0) {
			explicit_bzero(sl->key, sizeof(sl->key));
			return json_util_field_fail(c, path, "key",
						    "expected %zu lowercase hex "
						    "digits",
						    2 * n);
		}
		sl->key[k] = (uint8_t)(hi << 4 | lo);
	}
	sl->peer = (uint16_t)peer;
	sl->key_id = (uint32_t)key_id;
	return 0;
}

static const char *const shard_keys[] = {"gateway", "trees"};
static const char *const shard_tree_keys[] = {"id", "chunk_first", "chunk_count", "slots",
					      "window" /* optional */};

/* First pass over shards[j]: known keys and a bounded array of trees. */
static int
size_shard(struct json_util_src *c, json_t *js, int j, int *n_trees)
{
	char path[32];
	json_t *tr;
	int rc;

	snprintf(path, sizeof(path), "shards[%d]", j);
	if (!json_is_object(js))
		return json_util_field_fail(c, path, "", "expected an object");
	rc = check_keys(c, js, path, shard_keys, ARRAY_SIZE(shard_keys), ARRAY_SIZE(shard_keys));
	if (rc != 0)
		return rc;
	tr = json_object_get(js, "trees");
	if (!json_is_array(tr) || json_array_size(tr) == 0 || json_array_size(tr) > TABLE_TREES_MAX)
		return json_util_field_fail(c, path, "trees", "expected an array of 1 to %d trees",
					    TABLE_TREES_MAX);
	*n_trees = (int)json_array_size(tr);
	return 0;
}

static int
parse_shard(struct json_util_src *c, json_t *js, int j, struct table_shard *sh)
{
	char path[48];
	int rc;

	snprintf(path, sizeof(path), "shards[%d].gateway", j);
	rc = parse_gw(c, json_object_get(js, "gateway"), path, &sh->gw);
	for (int k = 0; rc == 0 && k < sh->n_trees; k++) {
		json_t *jt = json_array_get(json_object_get(js, "trees"), (size_t)k);
		struct table_shard_tree *t = &sh->trees[k];
		uint64_t id, first, count, slots, window = 0;

		snprintf(path, sizeof(path), "shards[%d].trees[%d]", j, k);
		if (!json_is_object(jt))
			return json_util_field_fail(c, path, "", "expected an object");
		rc = check_keys(c, jt, path, shard_tree_keys, ARRAY_SIZE(shard_tree_keys),
				ARRAY_SIZE(shard_tree_keys) - 1);
		if (rc == 0)
			rc = get_uint(c, jt, path, "id", 0, UINT16_MAX, &id);
		if (rc == 0)
			rc = get_uint(c, jt, path, "chunk_first", 0, UINT32_MAX, &first);
		if (rc == 0)
			rc = get_uint(c, jt, path, "chunk_count", 0, UINT32_MAX, &count);
		if (rc == 0)
			rc = get_uint(c, jt, path, "slots", 1, TABLE_SLOTS_MAX, &slots);
		if (rc == 0 && json_object_get(jt, "window") != NULL)
			rc = get_uint(c, jt, path, "window", 1, TABLE_SLOTS_MAX, &window);
		if (rc != 0)
			return rc;
		*t = (struct table_shard_tree){(uint16_t)id, (uint32_t)first, (uint32_t)count,
					       (uint32_t)slots, (uint32_t)window};
	}
	return rc;
}

static const char *const table_keys[] = {"format", "job",         "epoch",          "gateway",
					 "dtype",  "elements",    "chunk_elements", "limits",
					 "trees",  "cset_blocks", "streams",        "sealed",
					 "shards", "lan_dtype" /* optional: the last five */};

struct table *
table_parse(const char *text, const char *src, char *err, size_t errlen)
{
	int n_children[TABLE_TREES_MAX], n_workers[TABLE_TREES_MAX], n_below[TABLE_TREES_MAX];
	int n_shard_trees[TABLE_SHARDS_MAX], n = 0, n_streams, n_shards, rc;
	struct json_util_src c = {
		.src = src != NULL ? src : "<string>", .err = err, .errlen = errlen};
	json_t *root, *fmt, *trees, *dtype, *lan, *streams, *seals, *shards;
	uint64_t job, epoch, elements, chunk_elements, cset_blocks = 0;
	struct table_limits lim;
	struct table_gw gw;
	char vmsg[TABLE_ERR_MAX];
	struct table *tb = NULL;
	json_error_t jerr;

	if (text == NULL) {
		json_util_fail(err, errlen, "%s: no text", c.src);
		errno = EINVAL;
		return NULL;
	}
	root = json_loads(text, JSON_REJECT_DUPLICATES, &jerr);
	if (root == NULL) {
		json_util_fail(err, errlen, "%s:%d:%d: invalid JSON: %s", c.src, jerr.line,
			       jerr.column, jerr.text);
		errno = EINVAL;
		return NULL;
	}
	rc = -EINVAL;
	if (!json_is_object(root)) {
		json_util_fail(err, errlen, "%s: the document is not a JSON object", c.src);
		goto out;
	}
	/* The version first: a document of another version fails on it, not on a field
	 * that version added. */
	fmt = json_object_get(root, "format");
	if (!json_is_string(fmt) || strcmp(json_string_value(fmt), TABLE_FORMAT) != 0) {
		json_util_field_fail(&c, "format", "", "expected \"%s\"", TABLE_FORMAT);
		goto out;
	}
	if (check_keys(&c, root, "", table_keys, ARRAY_SIZE(table_keys),
		       ARRAY_SIZE(table_keys) - 5) != 0 ||
	    get_uint(&c, root, "", "job", 0, UINT32_MAX, &job) != 0 ||
	    get_uint(&c, root, "", "epoch", 0, UINT32_MAX, &epoch) != 0 ||
	    parse_gw(&c, json_object_get(root, "gateway"), "gateway", &gw) != 0)
		goto out;
	dtype = json_object_get(root, "dtype");
	if (!json_is_string(dtype) || table_dtype_from_name(json_string_value(dtype)) == 0) {
		json_util_field_fail(&c, "dtype", "",
				     "expected \"fp32\", \"fp16\", \"bf16\", "
				     "\"mxint8\", \"mxfp8\" or \"mxfp4\"");
		goto out;
	}
	lan = json_object_get(root, "lan_dtype");
	if (lan != NULL &&
	    (!json_is_string(lan) || table_dtype_from_name(json_string_value(lan)) == 0)) {
		json_util_field_fail(&c, "lan_dtype", "",
				     "expected \"fp32\" or \"bf16\" "
				     "(absent: the dtype)");
		goto out;
	}
	if (get_uint(&c, root, "", "elements", 1, INT64_MAX, &elements) != 0 ||
	    get_uint(&c, root, "", "chunk_elements", 1, UINT16_MAX, &chunk_elements) != 0 ||
	    parse_limits(&c, json_object_get(root, "limits"), &lim) != 0 ||
	    (json_object_get(root, "cset_blocks") != NULL &&
	     get_uint(&c, root, "", "cset_blocks", 0, TABLE_CSET_BLOCKS_MAX, &cset_blocks) != 0))
		goto out;
	trees = json_object_get(root, "trees");
	if (!json_is_array(trees)) {
		json_util_field_fail(&c, "trees", "", "expected an array");
		goto out;
	}
	if (json_array_size(trees) > TABLE_TREES_MAX) {
		json_util_field_fail(&c, "trees", "", "%zu entries exceed the limit of %d",
				     json_array_size(trees), TABLE_TREES_MAX);
		goto out;
	}
	n = (int)json_array_size(trees);
	for (int i = 0; i < n; i++)
		if (size_tree(&c, json_array_get(trees, (size_t)i), i, &n_children[i],
			      &n_workers[i], &n_below[i]) != 0)
			goto out;
	streams = json_object_get(root, "streams");
	if (streams != NULL && (!json_is_array(streams) || json_array_size(streams) == 0 ||
				json_array_size(streams) > TABLE_STREAMS_MAX)) {
		json_util_field_fail(&c, "streams", "",
				     "expected an array of 1 to %d streams "
				     "(absent: none)",
				     TABLE_STREAMS_MAX);
		goto out;
	}
	n_streams = streams != NULL ? (int)json_array_size(streams) : 0;
	seals = json_object_get(root, "sealed");
	if (seals != NULL && (!json_is_array(seals) || json_array_size(seals) == 0 ||
			      json_array_size(seals) > TABLE_SEALS_MAX)) {
		json_util_field_fail(&c, "sealed", "",
				     "expected an array of 1 to %d protected "
				     "links (absent: none)",
				     TABLE_SEALS_MAX);
		goto out;
	}
	shards = json_object_get(root, "shards");
	if (shards != NULL && (!json_is_array(shards) || json_array_size(shards) == 0 ||
			       json_array_size(shards) > TABLE_SHARDS_MAX)) {
		json_util_field_fail(&c, "shards", "",
				     "expected an array of 1 to %d gateways "
				     "(absent: none)",
				     TABLE_SHARDS_MAX);
		goto out;
	}
	n_shards = shards != NULL ? (int)json_array_size(shards) : 0;
	for (int j = 0; j < n_shards; j++)
		if (size_shard(&c, json_array_get(shards, (size_t)j), j, &n_shard_trees[j]) != 0)
			goto out;
	tb = table_create_sharded(n, n_children, n_workers, n_below, n_streams, n_shards,
				  n_shard_trees);
	if (tb == NULL) {
		rc = -errno;
		json_util_fail(err, errlen, "%s: %s", c.src, strerror(errno));
		goto out;
	}
	tb->job = (uint32_t)job;
	tb->epoch = (uint32_t)epoch;
	tb->gw = gw;
	tb->dtype = table_dtype_from_name(json_string_value(dtype));
	tb->elements = elements;
	tb->chunk_elements = (uint32_t)chunk_elements;
	if (lan != NULL && table_dtype_from_name(json_string_value(lan)) != tb->dtype)
		tb->lan_dtype = table_dtype_from_name(json_string_value(lan));
	tb->limits = lim;
	tb->cset_blocks = (uint8_t)cset_blocks;
	for (int i = 0; i < n; i++)
		if (parse_tree(&c, json_array_get(trees, (size_t)i), i, &tb->trees[i]) != 0)
			goto out;
	for (int i = 0; i < n_streams; i++)
		if (parse_stream(&c, json_array_get(streams, (size_t)i), i, &tb->streams[i]) != 0)
			goto out;
	tb->n_seals = seals != NULL ? (int)json_array_size(seals) : 0;
	for (int i = 0; i < tb->n_seals; i++)
		if (parse_seal(&c, json_array_get(seals, (size_t)i), i, &tb->seals[i]) != 0)
			goto out;
	for (int j = 0; j < n_shards; j++)
		if (parse_shard(&c, json_array_get(shards, (size_t)j), j, &tb->shards[j]) != 0)
			goto out;
	if (table_validate(tb, vmsg, sizeof(vmsg)) != 0) {
		json_util_fail(err, errlen, "%s: %s", c.src, vmsg);
		goto out;
	}
	json_decref(root);
	return tb;
out:
	table_free(tb);
	json_decref(root);
	errno = -rc;
	return NULL;
}

struct table *
table_load(const char *path, char *err, size_t errlen)
{
	char *text = json_util_read_file(path, err, errlen);
	struct table *tb;

	if (text == NULL)
		return NULL;
	tb = table_parse(text, path, err, errlen);
	free(text);
	return tb;
}
