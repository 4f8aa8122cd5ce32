/* SPDX-License-Identifier: BSD-3-Clause
 * Forwarding tables: the model (one allocation per table), its names and addresses, and
 * the lookups the dataplane and the worker library make. docs/TABLES.md has the format;
 * table_check.c the rules, table_json.c and table_json_write.c the codec.
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

/* ------------------------------------------------------------------------------------ */
/* Small helpers                                                                        */
/* ------------------------------------------------------------------------------------ */

static const char *const dtype_names[] = {
	[TABLE_DTYPE_FP32] = "fp32",   [TABLE_DTYPE_FP16] = "fp16",
	[TABLE_DTYPE_BF16] = "bf16",   [TABLE_DTYPE_MXINT8] = "mxint8",
	[TABLE_DTYPE_MXFP8] = "mxfp8", [TABLE_DTYPE_MXFP4] = "mxfp4",
};

static const char *const role_names[] = {
	[TABLE_ROLE_ROOT] = "root",
	[TABLE_ROLE_INTERIOR] = "interior",
	[TABLE_ROLE_LEAF] = "leaf",
};

/* names[i] of a table of n names indexed from 1, or NULL. */
static const char *
name_at(const char *const *names, size_t n, unsigned int i)
{
	return i < n ? names[i] : NULL;
}

/* The index (from 1) of s in a table of n names, 0 if it is none of them. */
static unsigned int
index_of(const char *const *names, size_t n, const char *s)
{
	for (size_t i = 1; s != NULL && i < n; i++)
		if (names[i] != NULL && strcmp(s, names[i]) == 0)
			return (unsigned int)i;
	return 0;
}

const char *
table_dtype_name(enum table_dtype dt)
{
	return name_at(dtype_names, ARRAY_SIZE(dtype_names), (unsigned int)dt);
}

enum table_dtype
table_dtype_from_name(const char *s)
{
	return (enum table_dtype)index_of(dtype_names, ARRAY_SIZE(dtype_names), s);
}

size_t
table_dtype_size(enum table_dtype dt)
{
	switch (dt) {
	case TABLE_DTYPE_FP32:
		return 4;
	case TABLE_DTYPE_FP16:
	case TABLE_DTYPE_BF16:
		return 2;
	case TABLE_DTYPE_MXINT8:
	case TABLE_DTYPE_MXFP8:
	case TABLE_DTYPE_MXFP4:
		break;
	}
	return 0;
}

unsigned int
table_dtype_granule(enum table_dtype dt)
{
	if (dt >= TABLE_DTYPE_MXINT8 && dt <= TABLE_DTYPE_MXFP4)
		return 32;
	return table_dtype_size(dt) != 0 ? 1 : 0;
}

size_t
table_dtype_unit_bytes(enum table_dtype dt)
{
	if (dt == TABLE_DTYPE_MXINT8 || dt == TABLE_DTYPE_MXFP8)
		return 33;
	return dt == TABLE_DTYPE_MXFP4 ? 17 : table_dtype_size(dt);
}

uint64_t
table_dtype_bytes(enum table_dtype dt, uint64_t elements)
{
	unsigned int g = table_dtype_granule(dt);

	return g == 0 ? 0 : (elements + g - 1) / g * table_dtype_unit_bytes(dt);
}

const char *
table_role_name(enum table_role r)
{
	return name_at(role_names, ARRAY_SIZE(role_names), (unsigned int)r);
}

enum table_role
table_role_from_name(const char *s)
{
	return (enum table_role)index_of(role_names, ARRAY_SIZE(role_names), s);
}

int
table_ipv4_parse(const char *s, uint32_t *out)
{
	uint32_t addr = 0;

	if (s == NULL)
		return -EINVAL;
	for (int part = 0; part < 4; part++) {
		unsigned v = 0;
		int digits = 0;

		if (part > 0 && *s++ != '.')
			return -EINVAL;
		if (s[0] == '0' && s[1] >= '0' && s[1] <= '9')
			return -EINVAL; /* leading zero: octal in inet_aton, refuse the ambiguity */
		while (*s >= '0' && *s <= '9' && digits < 3) {
			v = v * 10 + (unsigned)(*s++ - '0');
			digits++;
		}
		if (digits == 0 || v > 255)
			return -EINVAL;
		addr = addr << 8 | v;
	}
	if (*s != '\0')
		return -EINVAL;
	*out = addr;
	return 0;
}

char *
table_ipv4_format(uint32_t ipv4, char *buf)
{
	snprintf(buf, 16, "%u.%u.%u.%u", ipv4 >> 24, (ipv4 >> 16) & 0xff, (ipv4 >> 8) & 0xff,
		 ipv4 & 0xff);
	return buf;
}

bool
table_ipv4_unicast(uint32_t ipv4)
{
	uint32_t top = ipv4 >> 24;

	return top != 0 && top < 224;
}

uint64_t
table_n_chunks(const struct table *tb)
{
	if (tb->chunk_elements == 0)
		return 0;
	return tb->elements / tb->chunk_elements + (tb->elements % tb->chunk_elements != 0);
}

const struct table_tree *
table_tree_of_chunk(const struct table *tb, uint32_t c)
{
	for (int i = 0; i < tb->n_trees; i++) {
		const struct table_tree *e = &tb->trees[i];

		if (c >= e->chunk_first && c - e->chunk_first < e->chunk_count)
			return e;
	}
	return NULL;
}

enum table_dtype
table_lan_dtype(const struct table *tb)
{
	return tb->lan_dtype != 0 ? tb->lan_dtype : tb->dtype;
}

uint64_t
table_mtu_needed(const struct table *tb)
{
	uint64_t set = (uint64_t)tb->cset_blocks * WIRE_CSET_BLOCK;
	uint64_t wan = table_dtype_bytes(tb->dtype, tb->chunk_elements) + set +
		       (tb->n_seals > 0 ? WIRE_SEAL_OVERHEAD : 0);
	uint64_t lan = table_dtype_bytes(table_lan_dtype(tb), tb->chunk_elements) + set;

	return WIRE_MTU_OVERHEAD + (lan > wan ? lan : wan);
}

uint64_t
table_slot_bytes(const struct table *tb)
{
	uint64_t chunk = table_dtype_bytes(tb->dtype, tb->chunk_elements), sum = 0;

	/* A slot's buffer is the frame that came first: a local worker's, in the LAN dtype,
	 * may be the larger. */
	if (table_dtype_bytes(table_lan_dtype(tb), tb->chunk_elements) > chunk)
		chunk = table_dtype_bytes(table_lan_dtype(tb), tb->chunk_elements);

	for (int i = 0; i < tb->n_trees; i++)
		sum += (uint64_t)tb->trees[i].slots * chunk;
	return sum;
}

/* ------------------------------------------------------------------------------------ */
/* Model                                                                                */
/* ------------------------------------------------------------------------------------ */

struct table *
table_create(int n_trees, const int *n_children, const int *n_workers)
{
	return table_create_streams(n_trees, n_children, n_workers, 0);
}

const struct table_stream *
table_stream_find(const struct table *tb, uint16_t id)
{
	for (int i = 0; i < tb->n_streams; i++)
		if (tb->streams[i].id == id)
			return &tb->streams[i];
	return NULL;
}

struct table *
table_create_streams(int n_trees, const int *n_children, const int *n_workers, int n_streams)
{
	return table_create_full(n_trees, n_children, n_workers, NULL, n_streams);
}

struct table *
table_create_full(int n_trees, const int *n_children, const int *n_workers, const int *n_below,
		  int n_streams)
{
	return table_create_sharded(n_trees, n_children, n_workers, n_below, n_streams, 0, NULL);
}

struct table *
table_create_sharded(int n_trees, const int *n_children, const int *n_workers, const int *n_below,
		     int n_streams, int n_shards, const int *n_shard_trees)
{
	size_t n_gw = 0, n_wk = 0, n_bl = 0, n_st = 0, size;
	struct table_gw *gw;
	struct table_worker *wk;
	uint32_t *cw;
	uint16_t *bl;
	uint8_t *blc;
	struct table_shard_tree *st;
	struct table *tb;

	if (n_trees < 0 || n_trees > TABLE_TREES_MAX || n_streams < 0 ||
	    n_streams > TABLE_STREAMS_MAX || n_shards < 0 || n_shards > TABLE_SHARDS_MAX ||
	    (n_trees > 0 && (n_children == NULL || n_workers == NULL)) ||
	    (n_shards > 0 && n_shard_trees == NULL)) {
		errno = EINVAL;
		return NULL;
	}
	for (int j = 0; j < n_shards; j++) {
		if (n_shard_trees[j] < 1 || n_shard_trees[j] > TABLE_TREES_MAX) {
			errno = EINVAL;
			return NULL;
		}
		n_st += (size_t)n_shard_trees[j];
	}
	for (int i = 0; i < n_trees; i++) {
		if (n_children[i] < 0 || n_children[i] > TABLE_CHILDREN_MAX || n_workers[i] < 0 ||
		    n_workers[i] > TABLE_WORKERS_MAX) {
			errno = EINVAL;
			return NULL;
		}
		if (n_below != NULL && (n_below[i] < 0 || n_below[i] > TABLE_BELOW_MAX)) {
			errno = EINVAL;
			return NULL;
		}
		n_gw += (size_t)n_children[i];
		n_wk += (size_t)n_workers[i];
		n_bl += n_below != NULL ? (size_t)n_below[i] : 0;
	}
	/* One block: the table, its tree entries (8-byte aligned: they hold a double), then
	 * the children, workers and children's worker counts (4-byte aligned), then the
	 * workers below the children (ids, then child indices). Bounded by the caps: at most
	 * 256 * (64 + 192) peers, about 850 KiB, and 256 * 4095 workers below, 3 MiB, which
	 * only a job with sets of 16 blocks in 256 trees could reach. Streams (8-byte
	 * aligned, about 2.7 KiB each with their inline arrays) come right after the tree
	 * entries, then the shards and their trees (4-byte aligned, 20 bytes a tree). */
	size = sizeof(*tb) + sizeof(*tb->trees) * (size_t)n_trees +
	       sizeof(*tb->streams) * (size_t)n_streams + sizeof(*tb->shards) * (size_t)n_shards +
	       sizeof(*st) * n_st + (sizeof(*gw) + sizeof(*cw)) * n_gw + sizeof(*wk) * n_wk +
	       (sizeof(*bl) + sizeof(*blc)) * n_bl;
	tb = calloc(1, size);
	if (tb == NULL) {
		errno = ENOMEM;
		return NULL;
	}
	tb->n_trees = n_trees;
	tb->trees = (struct table_tree *)(tb + 1);
	tb->n_streams = n_streams;
	tb->streams = (struct table_stream *)(tb->trees + n_trees);
	tb->n_shards = n_shards;
	tb->shards = (struct table_shard *)(tb->streams + n_streams);
	st = (struct table_shard_tree *)(tb->shards + n_shards);
	for (int j = 0; j < n_shards; j++) {
		tb->shards[j].n_trees = n_shard_trees[j];
		tb->shards[j].trees = st;
		st += n_shard_trees[j];
	}
	gw = (struct table_gw *)st;
	wk = (struct table_worker *)(gw + n_gw);
	cw = (uint32_t *)(wk + n_wk);
	bl = (uint16_t *)(cw + n_gw);
	blc = (uint8_t *)(bl + n_bl);
	for (int i = 0; i < n_trees; i++) {
		struct table_tree *e = &tb->trees[i];

		e->n_children = n_children[i];
		e->n_workers = n_workers[i];
		e->children = n_children[i] > 0 ? gw : NULL;
		e->child_workers = n_children[i] > 0 ? cw : NULL;
		e->workers = n_workers[i] > 0 ? wk : NULL;
		e->n_below = n_below != NULL ? n_below[i] : 0;
		e->below = e->n_below > 0 ? bl : NULL;
		e->below_child = e->n_below > 0 ? blc : NULL;
		gw += n_children[i];
		cw += n_children[i];
		wk += n_workers[i];
		bl += e->n_below;
		blc += e->n_below;
	}
	return tb;
}

void
table_free(struct table *tb)
{
	if (tb == NULL)
		return;
	explicit_bzero(tb->seals, sizeof(tb->seals));
	free(tb);
}

const struct table_seal *
table_seal_find(const struct table *tb, uint16_t peer)
{
	for (int i = 0; i < tb->n_seals; i++)
		if (tb->seals[i].peer == peer)
			return &tb->seals[i];
	return NULL;
}

bool
table_is_neighbour(const struct table *tb, uint16_t id)
{
	for (int i = 0; i < tb->n_trees; i++) {
		const struct table_tree *t = &tb->trees[i];

		if (t->has_parent && t->parent.id == id)
			return true;
		for (int c = 0; c < t->n_children; c++)
			if (t->children[c].id == id)
				return true;
	}
	for (int i = 0; i < tb->n_streams; i++) {
		const struct table_stream *s = &tb->streams[i];

		if (s->has_from && s->from.id == id)
			return true;
		for (int k = 0; k < s->n_to; k++)
			if (s->to[k].id == id)
				return true;
	}
	return false;
}

static const char *const aead_names[] = {NULL, "aes-128-gcm", "aes-256-gcm"};

size_t
table_aead_key_len(enum table_aead a)
{
	return a == TABLE_AEAD_AES128_GCM ? 16 : a == TABLE_AEAD_AES256_GCM ? 32 : 0;
}

const char *
table_aead_name(enum table_aead a)
{
	return name_at(aead_names, ARRAY_SIZE(aead_names), (unsigned int)a);
}

enum table_aead
table_aead_from_name(const char *s)
{
	return (enum table_aead)index_of(aead_names, ARRAY_SIZE(aead_names), s);
}
