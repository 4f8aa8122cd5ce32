/* SPDX-License-Identifier: BSD-3-Clause
 *
 * Forwarding tables: the `georeduce-table/1` JSON writer (docs/TABLES.md), the whole table
 * with its link keys (table_to_json()) or without them (table_to_json_public(),
 * table_seals_json()). The control process writes tables with it to send them, the
 * dataplane to dump them; table_json.c reads them back. Slow path only: it allocates.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include <jansson.h>

#include "jsonutil.h"
#include "table.h"

static json_t *
gw_json(const struct table_gw *g)
{
	char ip[16];

	return json_pack("{s:i, s:s, s:i, s:i}", "id", (int)g->id, "ipv4",
			 table_ipv4_format(g->ipv4, ip), "base_port", (int)g->base_port, "ports",
			 (int)g->ports);
}

static json_t *
worker_json(const struct table_worker *w)
{
	char ip[16];

	return json_pack("{s:i, s:s, s:i}", "id", (int)w->id, "ipv4",
			 table_ipv4_format(w->ipv4, ip), "port", (int)w->port);
}

/* json_object_set_new that reports a NULL value (allocation failure) or a failed set. */
static int
set_new(json_t *obj, const char *key, json_t *v)
{
	if (v == NULL)
		return -ENOMEM;
	return json_object_set_new(obj, key, v) == 0 ? 0 : -ENOMEM;
}

/* Child gateway j of tree entry e: with the count of the workers below it, and the
 * workers themselves if the entry lists them. */
static json_t *
child_json(const struct table_tree *e, int j)
{
	json_t *o = gw_json(&e->children[j]), *below;
	int n = 0;

	for (int k = 0; k < e->n_below; k++)
		n += e->below_child[k] == j;
	if (o != NULL && set_new(o, "subtree_workers", json_integer(e->child_workers[j])) != 0) {
		json_decref(o);
		return NULL;
	}
	if (o == NULL || n == 0)
		return o;
	below = json_array();
	for (int k = 0; below != NULL && k < e->n_below; k++)
		if (e->below_child[k] == j &&
		    json_array_append_new(below, json_integer(e->below[k])) != 0) {
			json_decref(below);
			below = NULL;
		}
	if (set_new(o, "workers_below", below) != 0) {
		json_decref(o);
		return NULL;
	}
	return o;
}

static json_t *
tree_json(const struct table_tree *e)
{
	json_t *o = json_object(), *children = json_array(), *workers = json_array();
	const char *role = table_role_name(e->role);
	int rc = 0;

	if (o == NULL || children == NULL || workers == NULL)
		goto nomem;
	for (int j = 0; j < e->n_children; j++)
		if (json_array_append_new(children, child_json(e, j)) != 0)
			goto nomem;
	for (int j = 0; j < e->n_workers; j++)
		if (json_array_append_new(workers, worker_json(&e->workers[j])) != 0)
			goto nomem;
	rc |= set_new(o, "id", json_integer(e->id));
	rc |= set_new(o, "role", json_string(role != NULL ? role : "?"));
	rc |= set_new(o, "parent", e->has_parent ? gw_json(&e->parent) : json_null());
	rc |= set_new(o, "children", children);
	children = NULL;
	rc |= set_new(o, "workers", workers);
	workers = NULL;
	rc |= set_new(o, "expected", json_integer(e->expected));
	rc |= set_new(o, "subtree_workers", json_integer(e->subtree_workers));
	rc |= set_new(o, "chunk_first", json_integer(e->chunk_first));
	rc |= set_new(o, "chunk_count", json_integer(e->chunk_count));
	rc |= set_new(o, "rate_gbps", json_real(e->rate_gbps));
	rc |= set_new(o, "slots", json_integer(e->slots));
	if (e->window != 0)
		rc |= set_new(o, "window", json_integer(e->window));
	if (e->threshold != 0)
		rc |= set_new(o, "threshold", json_integer(e->threshold));
	if (e->grace_ms != 0)
		rc |= set_new(o, "grace_ms", json_integer(e->grace_ms));
	if (e->grace_adaptive)
		rc |= set_new(o, "grace_adaptive", json_true());
	if (rc != 0)
		goto nomem;
	return o;
nomem:
	json_decref(children);
	json_decref(workers);
	json_decref(o);
	return NULL;
}

static json_t *
stream_json(const struct table_stream *st)
{
	json_t *o = json_object(), *to = json_array(), *del = json_array(), *org = json_array();
	int rc = 0;

	if (o == NULL || to == NULL || del == NULL || org == NULL)
		goto nomem;
	for (int j = 0; j < st->n_to; j++)
		if (json_array_append_new(to, gw_json(&st->to[j])) != 0)
			goto nomem;
	for (int j = 0; j < st->n_deliver; j++)
		if (json_array_append_new(del, worker_json(&st->deliver[j])) != 0)
			goto nomem;
	for (int j = 0; j < st->n_origins; j++)
		if (json_array_append_new(org, json_integer(st->origins[j])) != 0)
			goto nomem;
	rc |= set_new(o, "id", json_integer(st->id));
	rc |= set_new(o, "source", json_integer(st->source));
	rc |= set_new(o, "from", st->has_from ? gw_json(&st->from) : json_null());
	rc |= set_new(o, "to", to);
	to = NULL;
	rc |= set_new(o, "deliver", del);
	del = NULL;
	rc |= set_new(o, "rate_gbps", json_real(st->rate_gbps));
	rc |= set_new(o, "origins", org);
	org = NULL;
	if (rc != 0)
		goto nomem;
	return o;
nomem:
	json_decref(to);
	json_decref(del);
	json_decref(org);
	json_decref(o);
	return NULL;
}

/* A protected link; with_key: its key as lowercase hex too. */
static json_t *
seal_json(const struct table_seal *sl, bool with_key)
{
	static const char hex[] = "0123456789abcdef";
	char key[2 * TABLE_KEY_MAX + 1];
	size_t n = table_aead_key_len(sl->aead);
	const char *an = table_aead_name(sl->aead);
	json_t *o = json_pack("{s:i, s:I, s:s}", "peer", sl->peer, "key_id", (json_int_t)sl->key_id,
			      "aead", an != NULL ? an : "?");

	if (o == NULL || !with_key)
		return o;
	for (size_t i = 0; i < n; i++) {
		key[2 * i] = hex[sl->key[i] >> 4];
		key[2 * i + 1] = hex[sl->key[i] & 15];
	}
	key[2 * n] = '\0';
	if (set_new(o, "key", json_string(key)) != 0) {
		json_decref(o);
		o = NULL;
	}
	explicit_bzero(key, sizeof(key));
	return o;
}

static json_t *
seals_json(const struct table *tb, bool with_keys)
{
	json_t *seals = json_array();

	for (int i = 0; seals != NULL && i < tb->n_seals; i++)
		if (json_array_append_new(seals, seal_json(&tb->seals[i], with_keys)) != 0) {
			json_decref(seals);
			seals = NULL;
		}
	return seals;
}

/* The n items (of `size` bytes each) of an array as JSON, each made by fn; NULL if one
 * fails. */
static json_t *
array_of(int n, json_t *(*fn)(const void *), const void *items, size_t size)
{
	json_t *arr = json_array();

	for (int i = 0; arr != NULL && i < n; i++)
		if (json_array_append_new(arr, fn((const char *)items + (size_t)i * size)) != 0) {
			json_decref(arr);
			arr = NULL;
		}
	return arr;
}

static json_t *
stream_item(const void *st)
{
	return stream_json(st);
}

/* shards[j]: the gateway and its trees as a worker sees them. */
static json_t *
shard_json(const struct table_shard *sh)
{
	json_t *o = json_object(), *trees = json_array();
	int rc = 0;

	if (o == NULL || trees == NULL)
		goto nomem;
	for (int k = 0; k < sh->n_trees; k++) {
		const struct table_shard_tree *t = &sh->trees[k];
		json_t *e = json_pack("{s:i, s:I, s:I, s:I}", "id", (int)t->id, "chunk_first",
				      (json_int_t)t->chunk_first, "chunk_count",
				      (json_int_t)t->chunk_count, "slots", (json_int_t)t->slots);

		if (e != NULL && t->window != 0 &&
		    set_new(e, "window", json_integer(t->window)) != 0) {
			json_decref(e);
			e = NULL;
		}
		if (json_array_append_new(trees, e) != 0)
			goto nomem;
	}
	rc |= set_new(o, "gateway", gw_json(&sh->gw));
	rc |= set_new(o, "trees", trees);
	trees = NULL;
	if (rc != 0)
		goto nomem;
	return o;
nomem:
	json_decref(trees);
	json_decref(o);
	return NULL;
}

static json_t *
shard_item(const void *sh)
{
	return shard_json(sh);
}

json_t *
table_seals_json(const struct table *tb)
{
	return seals_json(tb, false);
}

static json_t *
to_json(const struct table *tb, bool with_keys)
{
	json_t *root = json_object(), *trees = json_array();
	const char *dt = table_dtype_name(tb->dtype);
	int rc = 0;

	if (root == NULL || trees == NULL)
		goto nomem;
	for (int i = 0; i < tb->n_trees; i++)
		if (json_array_append_new(trees, tree_json(&tb->trees[i])) != 0)
			goto nomem;
	rc |= set_new(root, "format", json_string(TABLE_FORMAT));
	rc |= set_new(root, "job", json_integer(tb->job));
	rc |= set_new(root, "epoch", json_integer(tb->epoch));
	rc |= set_new(root, "gateway", gw_json(&tb->gw));
	rc |= set_new(root, "dtype", json_string(dt != NULL ? dt : "?"));
	rc |= set_new(root, "elements", json_integer((json_int_t)tb->elements));
	rc |= set_new(root, "chunk_elements", json_integer(tb->chunk_elements));
	if (tb->lan_dtype != 0 && tb->lan_dtype != tb->dtype)
		rc |= set_new(root, "lan_dtype", json_string(table_dtype_name(tb->lan_dtype)));
	if (tb->cset_blocks != 0)
		rc |= set_new(root, "cset_blocks", json_integer(tb->cset_blocks));
	rc |= set_new(root, "limits",
		      json_pack("{s:I, s:I, s:I, s:I}", "max_trees",
				(json_int_t)tb->limits.max_trees, "max_children",
				(json_int_t)tb->limits.max_children, "max_workers",
				(json_int_t)tb->limits.max_workers, "max_slots",
				(json_int_t)tb->limits.max_slots));
	rc |= set_new(root, "trees", trees);
	trees = NULL;
	if (rc == 0 && tb->n_streams > 0)
		rc |= set_new(
			root, "streams",
			array_of(tb->n_streams, stream_item, tb->streams, sizeof(*tb->streams)));
	if (rc == 0 && tb->n_seals > 0 && with_keys)
		rc |= set_new(root, "sealed", seals_json(tb, true));
	if (rc == 0 && tb->n_shards > 0)
		rc |= set_new(root, "shards",
			      array_of(tb->n_shards, shard_item, tb->shards, sizeof(*tb->shards)));
	if (rc != 0)
		goto nomem;
	return root;
nomem:
	json_decref(trees);
	json_decref(root);
	return NULL;
}

json_t *
table_to_json(const struct table *tb)
{
	return to_json(tb, true);
}

json_t *
table_to_json_public(const struct table *tb)
{
	return to_json(tb, false);
}

int
table_write(const struct table *tb, FILE *out)
{
	return json_util_dump_new(table_to_json(tb), out);
}
