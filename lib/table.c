/* SPDX-License-Identifier: BSD-3-Clause
 * Forwarding tables: model, consistency rules, the strict `georeduce-table/1` codec and
 * the compiler from a topology, a plan and a deployment. docs/TABLES.md has the format.
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
	[TABLE_DTYPE_FP32] = "fp32",
	[TABLE_DTYPE_FP16] = "fp16",
	[TABLE_DTYPE_BF16] = "bf16",
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
	}
	return 0;
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

static bool
is_pow2(uint64_t x)
{
	return x != 0 && (x & (x - 1)) == 0;
}

/* The largest power of two <= x (x >= 1). */
static uint32_t
pow2_floor(uint32_t x)
{
	uint32_t p = 1;

	while (p <= x / 2)
		p <<= 1;
	return p;
}

static uint32_t
pow2_ceil(uint32_t x)
{
	uint32_t p = 1;

	while (p < x && p < (1u << 31))
		p <<= 1;
	return p;
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

uint64_t
table_slot_bytes(const struct table *tb)
{
	uint64_t chunk = (uint64_t)tb->chunk_elements * table_dtype_size(tb->dtype), sum = 0;

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
	size_t n_gw = 0, n_wk = 0, n_bl = 0, size;
	struct table_gw *gw;
	struct table_worker *wk;
	uint32_t *cw;
	uint16_t *bl;
	uint8_t *blc;
	struct table *tb;

	if (n_trees < 0 || n_trees > TABLE_TREES_MAX || n_streams < 0 ||
	    n_streams > TABLE_STREAMS_MAX ||
	    (n_trees > 0 && (n_children == NULL || n_workers == NULL))) {
		errno = EINVAL;
		return NULL;
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
	 * entries. */
	size = sizeof(*tb) + sizeof(*tb->trees) * (size_t)n_trees +
	       sizeof(*tb->streams) * (size_t)n_streams + (sizeof(*gw) + sizeof(*cw)) * n_gw +
	       sizeof(*wk) * n_wk + (sizeof(*bl) + sizeof(*blc)) * n_bl;
	tb = calloc(1, size);
	if (tb == NULL) {
		errno = ENOMEM;
		return NULL;
	}
	tb->n_trees = n_trees;
	tb->trees = (struct table_tree *)(tb + 1);
	tb->n_streams = n_streams;
	tb->streams = (struct table_stream *)(tb->trees + n_trees);
	gw = (struct table_gw *)(tb->streams + n_streams);
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
	free(tb);
}

/* ------------------------------------------------------------------------------------ */
/* Validation                                                                           */
/* ------------------------------------------------------------------------------------ */

/* A peer gateway (or this one) at field path `path`. */
static int
check_gw(const struct table_gw *g, const char *path, char *err, size_t errlen)
{
	char ip[16];

	if (g->id == 0 || g->id > TABLE_ID_MAX)
		return json_util_fail(err, errlen, "field '%s.id': must be in [1, %d] (0 and "
				      "65535 mean none)", path, TABLE_ID_MAX);
	if (!table_ipv4_unicast(g->ipv4))
		return json_util_fail(err, errlen, "field '%s.ipv4': %s is not a unicast address",
				      path, table_ipv4_format(g->ipv4, ip));
	if (g->base_port == 0)
		return json_util_fail(err, errlen, "field '%s.base_port': must be in [1, 65535]",
				      path);
	if (g->ports == 0 || g->ports > TABLE_PORTS_MAX)
		return json_util_fail(err, errlen, "field '%s.ports': must be in [1, %d]", path,
				      TABLE_PORTS_MAX);
	if ((uint32_t)g->base_port + g->ports - 1 > 65535)
		return json_util_fail(err, errlen, "field '%s.ports': base_port %u + %u ports "
				      "run past port 65535", path, g->base_port, g->ports);
	return 0;
}

static int
check_worker(const struct table_worker *w, const char *path, char *err, size_t errlen)
{
	char ip[16];

	if (w->id == 0 || w->id > TABLE_ID_MAX)
		return json_util_fail(err, errlen, "field '%s.id': must be in [1, %d] (0 and "
				      "65535 mean none)", path, TABLE_ID_MAX);
	if (!table_ipv4_unicast(w->ipv4))
		return json_util_fail(err, errlen, "field '%s.ipv4': %s is not a unicast address",
				      path, table_ipv4_format(w->ipv4, ip));
	if (w->port == 0)
		return json_util_fail(err, errlen, "field '%s.port': must be in [1, 65535]", path);
	return 0;
}

/* The position of below[k] in the workers_below list of its child (entries are sorted
 * by child). */
static int
below_pos(const struct table_tree *e, int k)
{
	int m = k;

	while (m > 0 && e->below_child[m - 1] == e->below_child[k])
		m--;
	return k - m;
}

/* The id at position k of tree entry e: 0 this gateway, 1 the parent, then the children,
 * the workers and the workers below the children. Writes the field path of that id into
 * path. */
static uint16_t
tree_sender(const struct table *tb, const struct table_tree *e, int i, int k, char *path,
	    size_t n)
{
	if (k == 0) {
		snprintf(path, n, "gateway.id");
		return tb->gw.id;
	}
	if (k == 1) {
		snprintf(path, n, "trees[%d].parent.id", i);
		return e->parent.id;
	}
	k -= 2;
	if (k < e->n_children) {
		snprintf(path, n, "trees[%d].children[%d].id", i, k);
		return e->children[k].id;
	}
	k -= e->n_children;
	if (k < e->n_workers) {
		snprintf(path, n, "trees[%d].workers[%d].id", i, k);
		return e->workers[k].id;
	}
	k -= e->n_workers;
	snprintf(path, n, "trees[%d].children[%u].workers_below[%d]", i, e->below_child[k],
		 below_pos(e, k));
	return e->below[k];
}

/* Ids unique in a tree entry: this gateway, its parent, children, workers and the workers
 * below the children (a worker is below one child only). */
static int
check_tree_ids(const struct table *tb, const struct table_tree *e, int i, char *err,
	       size_t errlen)
{
	uint64_t seen[65536 / 64];
	int n = 2 + e->n_children + e->n_workers + e->n_below;
	char path[64], first[64];

	memset(seen, 0, sizeof(seen));
	for (int k = 0; k < n; k++) {
		uint16_t id;

		if (k == 1 && !e->has_parent)
			continue;
		id = tree_sender(tb, e, i, k, path, sizeof(path));
		if (seen[id / 64] & (1ull << (id % 64))) {
			for (int j = 0; j < k; j++) {
				if (j == 1 && !e->has_parent)
					continue;
				if (tree_sender(tb, e, i, j, first, sizeof(first)) == id)
					break;
			}
			return json_util_fail(err, errlen, "field '%s': duplicate id %u (also '%s')",
					      path, id, first);
		}
		seen[id / 64] |= 1ull << (id % 64);
	}
	return 0;
}

/* Gateway addresses unique in a tree entry (this gateway, parent, children). */
static int
check_tree_gw_addrs(const struct table *tb, const struct table_tree *e, int i, char *err,
		    size_t errlen)
{
	char ip[16];

	for (int j = 0; j < e->n_children; j++) {
		uint32_t a = e->children[j].ipv4;

		if (a == tb->gw.ipv4 || (e->has_parent && a == e->parent.ipv4))
			return json_util_fail(err, errlen, "field 'trees[%d].children[%d].ipv4': "
					      "%s is also the address of the %s", i, j,
					      table_ipv4_format(a, ip),
					      a == tb->gw.ipv4 ? "gateway" : "parent");
		for (int k = 0; k < j; k++)
			if (e->children[k].ipv4 == a)
				return json_util_fail(err, errlen,
						      "field 'trees[%d].children[%d].ipv4': %s is "
						      "also the address of children[%d]", i, j,
						      table_ipv4_format(a, ip), k);
	}
	if (e->has_parent && e->parent.ipv4 == tb->gw.ipv4)
		return json_util_fail(err, errlen, "field 'trees[%d].parent.ipv4': %s is also the "
				      "address of the gateway", i,
				      table_ipv4_format(e->parent.ipv4, ip));
	return 0;
}

/*
 * The workers below the child gateways: only with contributor sets, and then for every
 * child, sorted by (child, id), inside the set. check_tree_counts() checks their number
 * against each child's count, check_tree_ids() their ids against the entry's other ids.
 */
static int
check_tree_below(const struct table *tb, const struct table_tree *e, int i, char *err,
		 size_t errlen)
{
	uint32_t lim = 256u * tb->cset_blocks;
	int k = 0;

	if (e->n_below < 0 || e->n_below > TABLE_BELOW_MAX)
		return json_util_fail(err, errlen, "field 'trees[%d].children': %d workers below "
				      "the child gateways, more than %d", i, e->n_below,
				      TABLE_BELOW_MAX);
	for (k = 0; k < e->n_below; k++) {
		if (e->below_child[k] >= e->n_children)
			return json_util_fail(err, errlen, "field 'trees[%d].children': worker %u "
					      "is below child %u of %d", i, e->below[k],
					      e->below_child[k], e->n_children);
		if (k > 0 && e->below_child[k] < e->below_child[k - 1])
			return json_util_fail(err, errlen, "field 'trees[%d].children': the "
					      "workers below them are not in child order", i);
	}
	if (tb->cset_blocks == 0 && e->n_below > 0)
		return json_util_fail(err, errlen, "field 'trees[%d].children[%u].workers_below': "
				      "only with contributor sets (cset_blocks >= 1)", i,
				      e->below_child[0]);
	if (tb->cset_blocks == 0)
		return 0;
	k = 0;
	for (int j = 0; j < e->n_children; j++) {
		int first = k;

		for (; k < e->n_below && e->below_child[k] == j; k++) {
			if (e->below[k] == 0 || e->below[k] >= lim)
				return json_util_fail(err, errlen, "field 'trees[%d].children[%d]."
						      "workers_below[%d]': %u is outside the "
						      "contributor set of %u blocks (ids 1 to %u)",
						      i, j, k - first, e->below[k], tb->cset_blocks,
						      lim - 1);
			if (k > first && e->below[k] <= e->below[k - 1])
				return json_util_fail(err, errlen, "field 'trees[%d].children[%d]."
						      "workers_below[%d]': ids must be ascending "
						      "(%u after %u)", i, j, k - first, e->below[k],
						      e->below[k - 1]);
		}
		if (k == first)
			return json_util_fail(err, errlen, "field 'trees[%d].children[%d]."
					      "workers_below': missing: with contributor sets every "
					      "child gateway lists the workers of its subtree", i, j);
	}
	return 0;
}

/*
 * The workers below each child gateway, counted (child_workers): at least one each (a
 * child whose subtree holds no worker is pruned), at most every worker id, and with the
 * local workers they make subtree_workers. With contributor sets, a child's count is the
 * length of its workers_below (check_tree_below() checked those lists first).
 */
static int
check_tree_counts(const struct table *tb, const struct table_tree *e, int i, char *err,
		  size_t errlen)
{
	uint64_t sum = 0;
	int k = 0;

	for (int j = 0; j < e->n_children; j++) {
		uint32_t n = e->child_workers[j];
		int first = k;

		if (n == 0 || n > TABLE_ID_MAX)
			return json_util_fail(err, errlen, "field 'trees[%d].children[%d]."
					      "subtree_workers': %" PRIu32 " is not in [1, %d]", i,
					      j, n, TABLE_ID_MAX);
		while (k < e->n_below && e->below_child[k] == j)
			k++;
		if (tb->cset_blocks != 0 && n != (uint32_t)(k - first))
			return json_util_fail(err, errlen, "field 'trees[%d].children[%d]."
					      "subtree_workers': %" PRIu32 ", but its workers_below "
					      "lists %d workers", i, j, n, k - first);
		sum += n;
	}
	if ((uint64_t)e->subtree_workers != (uint64_t)e->n_workers + sum)
		return json_util_fail(err, errlen, "field 'trees[%d].subtree_workers': %" PRIu32
				      ", but %d local workers and %" PRIu64 " below the child "
				      "gateways (their subtree_workers) make %" PRIu64, i,
				      e->subtree_workers, e->n_workers, sum,
				      (uint64_t)e->n_workers + sum);
	return 0;
}

static int
check_tree(const struct table *tb, const struct table_tree *e, int i, uint64_t n_chunks,
	   char *err, size_t errlen)
{
	const struct table_limits *lim = &tb->limits;
	char path[64];
	int rc;

	if (table_role_name(e->role) == NULL)
		return json_util_fail(err, errlen, "field 'trees[%d].role': not a role", i);
	if (e->role == TABLE_ROLE_ROOT && e->has_parent)
		return json_util_fail(err, errlen, "field 'trees[%d].parent': a root has no parent "
				      "(null)", i);
	if (e->role != TABLE_ROLE_ROOT && !e->has_parent)
		return json_util_fail(err, errlen, "field 'trees[%d].parent': a %s needs a parent",
				      i, table_role_name(e->role));
	if (e->role == TABLE_ROLE_LEAF && e->n_children > 0)
		return json_util_fail(err, errlen, "field 'trees[%d].role': a leaf has no child "
				      "gateways, this one has %d (interior)", i, e->n_children);
	if (e->role == TABLE_ROLE_INTERIOR && e->n_children == 0)
		return json_util_fail(err, errlen, "field 'trees[%d].role': an interior has child "
				      "gateways, this one has none (leaf)", i);
	if (e->n_children < 0 || (uint32_t)e->n_children > lim->max_children)
		return json_util_fail(err, errlen, "field 'trees[%d].children': %d entries exceed "
				      "limits.max_children %" PRIu32, i, e->n_children,
				      lim->max_children);
	if (e->n_workers < 0 || (uint32_t)e->n_workers > lim->max_workers)
		return json_util_fail(err, errlen, "field 'trees[%d].workers': %d entries exceed "
				      "limits.max_workers %" PRIu32, i, e->n_workers,
				      lim->max_workers);
	if (e->expected != (uint32_t)(e->n_workers + e->n_children))
		return json_util_fail(err, errlen, "field 'trees[%d].expected': %" PRIu32 ", but "
				      "%d workers + %d children make %d contributions", i,
				      e->expected, e->n_workers, e->n_children,
				      e->n_workers + e->n_children);
	if (e->expected == 0)
		return json_util_fail(err, errlen, "field 'trees[%d].expected': a tree entry needs "
				      "at least one contribution", i);
	if (e->expected > TABLE_CONTRIB_MAX)
		return json_util_fail(err, errlen, "field 'trees[%d].expected': %" PRIu32
				      " exceeds the contributor bitmap (%d)", i, e->expected,
				      TABLE_CONTRIB_MAX);
	/* Distinct worker ids, and the wire's contrib is 16 bits (PROTOCOL.md section 4). */
	if (e->subtree_workers > TABLE_ID_MAX)
		return json_util_fail(err, errlen, "field 'trees[%d].subtree_workers': %" PRIu32
				      " is more workers than there are ids (%d)", i,
				      e->subtree_workers, TABLE_ID_MAX);
	if (e->subtree_workers < e->expected)
		return json_util_fail(err, errlen, "field 'trees[%d].subtree_workers': %" PRIu32
				      " is less than the %" PRIu32 " contributions (each carries at "
				      "least one worker)", i, e->subtree_workers, e->expected);
	if (e->has_parent) {
		snprintf(path, sizeof(path), "trees[%d].parent", i);
		rc = check_gw(&e->parent, path, err, errlen);
		if (rc != 0)
			return rc;
	}
	for (int j = 0; j < e->n_children; j++) {
		snprintf(path, sizeof(path), "trees[%d].children[%d]", i, j);
		rc = check_gw(&e->children[j], path, err, errlen);
		if (rc != 0)
			return rc;
	}
	for (int j = 0; j < e->n_workers; j++) {
		snprintf(path, sizeof(path), "trees[%d].workers[%d]", i, j);
		rc = check_worker(&e->workers[j], path, err, errlen);
		if (rc != 0)
			return rc;
	}
	rc = check_tree_below(tb, e, i, err, errlen);
	if (rc == 0)
		rc = check_tree_counts(tb, e, i, err, errlen);
	if (rc == 0)
		rc = check_tree_ids(tb, e, i, err, errlen);
	if (rc == 0)
		rc = check_tree_gw_addrs(tb, e, i, err, errlen);
	if (rc != 0)
		return rc;
	if (e->chunk_count == 0)
		return json_util_fail(err, errlen, "field 'trees[%d].chunk_count': must be >= 1 (a "
				      "tree without chunks has no entry)", i);
	if ((uint64_t)e->chunk_first + e->chunk_count > n_chunks)
		return json_util_fail(err, errlen, "field 'trees[%d].chunk_count': chunks %" PRIu32
				      "..%" PRIu64 " run past the %" PRIu64 " chunks of the tensor",
				      i, e->chunk_first, (uint64_t)e->chunk_first + e->chunk_count - 1,
				      n_chunks);
	if (!(isfinite(e->rate_gbps) && e->rate_gbps > 0))
		return json_util_fail(err, errlen, "field 'trees[%d].rate_gbps': must be a finite "
				      "number > 0", i);
	if (!is_pow2(e->slots) || e->slots > lim->max_slots)
		return json_util_fail(err, errlen, "field 'trees[%d].slots': %" PRIu32 " is not a "
				      "power of two in [1, limits.max_slots %" PRIu32 "]", i, e->slots,
				      lim->max_slots);
	if (e->window > e->slots)
		return json_util_fail(err, errlen, "field 'trees[%d].window': %" PRIu32 " is more "
				      "than the %" PRIu32 " slots", i, e->window, e->slots);
	if (e->threshold > e->subtree_workers)
		return json_util_fail(err, errlen, "field 'trees[%d].threshold': %" PRIu32 " is more "
				      "than the %" PRIu32 " subtree_workers", i, e->threshold,
				      e->subtree_workers);
	if (e->threshold != 0 && e->threshold < e->subtree_workers && tb->cset_blocks == 0)
		return json_util_fail(err, errlen, "field 'trees[%d].threshold': a partial reduce "
				      "(%" PRIu32 " of %" PRIu32 ") needs contributor sets "
				      "(cset_blocks >= 1)", i, e->threshold, e->subtree_workers);
	for (int j = 0; tb->cset_blocks != 0 && j < e->n_workers; j++)
		if (e->workers[j].id >= 256u * tb->cset_blocks)
			return json_util_fail(err, errlen, "field 'trees[%d].workers[%d].id': %u "
					      "is outside the contributor set of %u blocks (ids "
					      "below %u)", i, j, e->workers[j].id, tb->cset_blocks,
					      256u * tb->cset_blocks);
	return 0;
}

/* Workers must be the same list, in the same order, in every tree entry: every local
 * worker contributes to every chunk, and bit k of the bitmap means the same worker in
 * every tree. Within the list, ids (checked per tree) and (ipv4, port) are unique. */
static int
check_workers_same(const struct table *tb, char *err, size_t errlen)
{
	const struct table_tree *e0;
	char ip[16];

	if (tb->n_trees == 0)
		return 0;
	e0 = &tb->trees[0];
	for (int i = 1; i < tb->n_trees; i++) {
		const struct table_tree *e = &tb->trees[i];

		if (e->n_workers != e0->n_workers)
			return json_util_fail(err, errlen, "field 'trees[%d].workers': %d workers, "
					      "trees[0] has %d (every tree lists the same local "
					      "workers)", i, e->n_workers, e0->n_workers);
		for (int k = 0; k < e->n_workers; k++) {
			const struct table_worker *a = &e->workers[k], *b = &e0->workers[k];

			if (a->id != b->id || a->ipv4 != b->ipv4 || a->port != b->port)
				return json_util_fail(err, errlen, "field 'trees[%d].workers[%d]': "
						      "differs from trees[0].workers[%d] (every tree "
						      "lists the same local workers)", i, k, k);
		}
	}
	for (int k = 0; k < e0->n_workers; k++)
		for (int j = 0; j < k; j++)
			if (e0->workers[j].ipv4 == e0->workers[k].ipv4 &&
			    e0->workers[j].port == e0->workers[k].port)
				return json_util_fail(err, errlen, "field 'trees[0].workers[%d].port': "
						      "%s:%u is also workers[%d]", k,
						      table_ipv4_format(e0->workers[k].ipv4, ip),
						      e0->workers[k].port, j);
	return 0;
}

/* A local worker of the table's trees with the same id, address and port as w? */
static bool
tree_worker_known(const struct table *tb, const struct table_worker *w)
{
	const struct table_tree *e0 = &tb->trees[0];

	for (int k = 0; k < e0->n_workers; k++)
		if (e0->workers[k].id == w->id && e0->workers[k].ipv4 == w->ipv4 &&
		    e0->workers[k].port == w->port)
			return true;
	return false;
}

/* Stream entry s = streams[i] (docs/TABLES.md, "Multicast streams"). */
static int
check_stream(const struct table *tb, const struct table_stream *s, int i, char *err,
	     size_t errlen)
{
	bool at_source = s->source == tb->gw.id;
	char path[64];
	int rc;

	if (s->source == 0 || s->source > TABLE_ID_MAX)
		return json_util_fail(err, errlen, "field 'streams[%d].source': must be in [1, %d]",
				      i, TABLE_ID_MAX);
	if (at_source && s->has_from)
		return json_util_fail(err, errlen, "field 'streams[%d].from': null at the source "
				      "gateway (it takes the stream from its local workers)", i);
	if (!at_source && !s->has_from)
		return json_util_fail(err, errlen, "field 'streams[%d].from': a gateway other than "
				      "the source (%u) receives the stream from another gateway",
				      i, s->source);
	if (s->has_from) {
		snprintf(path, sizeof(path), "streams[%d].from", i);
		rc = check_gw(&s->from, path, err, errlen);
		if (rc != 0)
			return rc;
		if (s->from.id == tb->gw.id)
			return json_util_fail(err, errlen, "field 'streams[%d].from.id': %u is this "
					      "gateway", i, s->from.id);
	}
	if (s->n_to < 0 || s->n_to > TABLE_CHILDREN_MAX || s->n_to > (int)tb->limits.max_children)
		return json_util_fail(err, errlen, "field 'streams[%d].to': %d entries, limit %"
				      PRIu32, i, s->n_to, tb->limits.max_children);
	if (s->n_deliver < 0 || s->n_deliver > TABLE_WORKERS_MAX ||
	    s->n_deliver > (int)tb->limits.max_workers)
		return json_util_fail(err, errlen, "field 'streams[%d].deliver': %d entries, limit %"
				      PRIu32, i, s->n_deliver, tb->limits.max_workers);
	if (s->n_to + s->n_deliver == 0)
		return json_util_fail(err, errlen, "field 'streams[%d].to': the stream goes "
				      "nowhere (no 'to' gateway and no 'deliver' worker)", i);
	if (s->n_origins < 1 || s->n_origins > TABLE_WORKERS_MAX)
		return json_util_fail(err, errlen, "field 'streams[%d].origins': must hold 1 to %d "
				      "worker ids", i, TABLE_WORKERS_MAX);
	if (!(isfinite(s->rate_gbps) && s->rate_gbps > 0))
		return json_util_fail(err, errlen, "field 'streams[%d].rate_gbps': must be a finite "
				      "number > 0", i);
	for (int j = 0; j < s->n_to; j++) {
		const struct table_gw *g = &s->to[j];

		snprintf(path, sizeof(path), "streams[%d].to[%d]", i, j);
		rc = check_gw(g, path, err, errlen);
		if (rc != 0)
			return rc;
		if (g->id == tb->gw.id || g->id == s->source || (s->has_from && g->id == s->from.id))
			return json_util_fail(err, errlen, "field 'streams[%d].to[%d].id': %u is "
					      "this gateway, the source or 'from' (a loop)", i, j,
					      g->id);
		for (int k = 0; k < j; k++)
			if (s->to[k].id == g->id)
				return json_util_fail(err, errlen, "field 'streams[%d].to[%d].id': "
						      "duplicate gateway %u (also to[%d]): one copy "
						      "per next hop", i, j, g->id, k);
	}
	for (int j = 0; j < s->n_deliver; j++) {
		const struct table_worker *w = &s->deliver[j];

		snprintf(path, sizeof(path), "streams[%d].deliver[%d]", i, j);
		rc = check_worker(w, path, err, errlen);
		if (rc != 0)
			return rc;
		for (int k = 0; k < j; k++)
			if (s->deliver[k].id == w->id)
				return json_util_fail(err, errlen, "field 'streams[%d].deliver[%d].id'"
						      ": duplicate worker %u (also deliver[%d])", i,
						      j, w->id, k);
		if (w->id == tb->gw.id || w->id == s->source ||
		    (s->has_from && w->id == s->from.id))
			return json_util_fail(err, errlen, "field 'streams[%d].deliver[%d].id': %u "
					      "is a gateway id", i, j, w->id);
		for (int k = 0; k < s->n_to; k++)
			if (s->to[k].id == w->id)
				return json_util_fail(err, errlen, "field 'streams[%d].deliver[%d].id'"
						      ": %u is also to[%d], a gateway", i, j, w->id, k);
		if (tb->n_trees > 0 && !tree_worker_known(tb, w))
			return json_util_fail(err, errlen, "field 'streams[%d].deliver[%d]': worker "
					      "%u is not a local worker of this gateway's trees", i,
					      j, w->id);
	}
	for (int j = 0; j < s->n_origins; j++) {
		uint16_t o = s->origins[j];

		if (o == 0 || o > TABLE_ID_MAX)
			return json_util_fail(err, errlen, "field 'streams[%d].origins[%d]': must be "
					      "in [1, %d]", i, j, TABLE_ID_MAX);
		for (int k = 0; k < j; k++)
			if (s->origins[k] == o)
				return json_util_fail(err, errlen, "field 'streams[%d].origins[%d]': "
						      "duplicate worker %u (also origins[%d])", i, j,
						      o, k);
		if (o == tb->gw.id || o == s->source || (s->has_from && o == s->from.id))
			return json_util_fail(err, errlen, "field 'streams[%d].origins[%d]': %u is a "
					      "gateway id", i, j, o);
		for (int k = 0; k < s->n_to; k++)
			if (s->to[k].id == o)
				return json_util_fail(err, errlen, "field 'streams[%d].origins[%d]': %u"
						      " is also to[%d], a gateway", i, j, o, k);
		/* Away from the source the origins are remote: never delivered back here. */
		if (!at_source)
			for (int k = 0; k < s->n_deliver; k++)
				if (s->deliver[k].id == o)
					return json_util_fail(err, errlen, "field 'streams[%d]."
							      "origins[%d]': %u is a local worker "
							      "(deliver[%d]) but the stream comes "
							      "from gateway %u", i, j, o, k,
							      s->source);
	}
	return 0;
}

static int
check_streams(const struct table *tb, char *err, size_t errlen)
{
	if (tb->n_streams < 0 || tb->n_streams > TABLE_STREAMS_MAX)
		return json_util_fail(err, errlen, "field 'streams': %d entries exceed the limit of "
				      "%d", tb->n_streams, TABLE_STREAMS_MAX);
	for (int i = 0; i < tb->n_streams; i++) {
		int rc;

		if (i > 0 && tb->streams[i].id <= tb->streams[i - 1].id)
			return json_util_fail(err, errlen, "field 'streams[%d].id': stream ids must "
					      "be unique and ascending (%u after %u)", i,
					      tb->streams[i].id, tb->streams[i - 1].id);
		for (int j = 0; j < i; j++)
			if (tb->streams[j].source == tb->streams[i].source)
				return json_util_fail(err, errlen, "field 'streams[%d].source': "
						      "gateway %u already has streams[%d] (one "
						      "stream per sending site)", i,
						      tb->streams[i].source, j);
		rc = check_stream(tb, &tb->streams[i], i, err, errlen);
		if (rc != 0)
			return rc;
	}
	return 0;
}

/* Tree ranges disjoint; covering [0, n_chunks) when the gateway has local workers. */
static int
check_ranges(const struct table *tb, uint64_t n_chunks, char *err, size_t errlen)
{
	int order[TABLE_TREES_MAX], n = tb->n_trees;
	uint64_t next = 0;
	bool cover = n > 0 && tb->trees[0].n_workers > 0;

	/* Insertion sort by chunk_first: n <= TABLE_TREES_MAX. */
	for (int i = 0; i < n; i++) {
		int j = i;

		while (j > 0 && tb->trees[order[j - 1]].chunk_first > tb->trees[i].chunk_first) {
			order[j] = order[j - 1];
			j--;
		}
		order[j] = i;
	}
	for (int k = 0; k < n; k++) {
		const struct table_tree *e = &tb->trees[order[k]];

		if (k > 0 && e->chunk_first < next) {
			const struct table_tree *p = &tb->trees[order[k - 1]];

			return json_util_fail(err, errlen, "field 'trees[%d].chunk_first': chunks %"
					      PRIu32 "..%" PRIu64 " overlap trees[%d] (chunks %" PRIu32
					      "..%" PRIu64 ")", order[k], e->chunk_first,
					      (uint64_t)e->chunk_first + e->chunk_count - 1,
					      order[k - 1], p->chunk_first,
					      (uint64_t)p->chunk_first + p->chunk_count - 1);
		}
		if (cover && e->chunk_first > next)
			return json_util_fail(err, errlen, "field 'trees': chunks %" PRIu64 "..%" PRIu32
					      " are in no tree, but the gateway's local workers "
					      "contribute every chunk", next, e->chunk_first - 1);
		next = (uint64_t)e->chunk_first + e->chunk_count;
	}
	if (cover && next < n_chunks)
		return json_util_fail(err, errlen, "field 'trees': chunks %" PRIu64 "..%" PRIu64
				      " are in no tree, but the gateway's local workers contribute "
				      "every chunk", next, n_chunks - 1);
	return 0;
}

int
table_validate(const struct table *tb, char *err, size_t errlen)
{
	const struct table_limits *lim = &tb->limits;
	size_t esize = table_dtype_size(tb->dtype);
	uint64_t n_chunks;
	int rc;

	rc = check_gw(&tb->gw, "gateway", err, errlen);
	if (rc != 0)
		return rc;
	if (esize == 0)
		return json_util_fail(err, errlen, "field 'dtype': not a dtype (fp32, fp16, bf16)");
	if (tb->elements == 0 || tb->elements > INT64_MAX)
		return json_util_fail(err, errlen, "field 'elements': must be in [1, %" PRId64 "]",
				      INT64_MAX);
	if (tb->chunk_elements == 0 || tb->chunk_elements * esize > TABLE_CHUNK_BYTES_MAX)
		return json_util_fail(err, errlen, "field 'chunk_elements': must be in [1, %zu] "
				      "for %s (%d bytes per chunk at most)",
				      TABLE_CHUNK_BYTES_MAX / esize, table_dtype_name(tb->dtype),
				      TABLE_CHUNK_BYTES_MAX);
	if (tb->cset_blocks > TABLE_CSET_BLOCKS_MAX)
		return json_util_fail(err, errlen, "field 'cset_blocks': %u is not in [0, %d]",
				      tb->cset_blocks, TABLE_CSET_BLOCKS_MAX);
	n_chunks = table_n_chunks(tb);
	if (n_chunks > UINT32_MAX)
		return json_util_fail(err, errlen, "field 'elements': %" PRIu64 " chunks, more than "
				      "the %" PRIu32 " a 32-bit chunk index addresses", n_chunks,
				      UINT32_MAX);
	if (lim->max_trees < 1 || lim->max_trees > TABLE_TREES_MAX)
		return json_util_fail(err, errlen, "field 'limits.max_trees': %" PRIu32 " is not in "
				      "[1, %d]", lim->max_trees, TABLE_TREES_MAX);
	if (lim->max_children < 1 || lim->max_children > TABLE_CHILDREN_MAX)
		return json_util_fail(err, errlen, "field 'limits.max_children': %" PRIu32 " is not "
				      "in [1, %d]", lim->max_children, TABLE_CHILDREN_MAX);
	if (lim->max_workers < 1 || lim->max_workers > TABLE_WORKERS_MAX)
		return json_util_fail(err, errlen, "field 'limits.max_workers': %" PRIu32 " is not "
				      "in [1, %d]", lim->max_workers, TABLE_WORKERS_MAX);
	if (!is_pow2(lim->max_slots) || lim->max_slots > TABLE_SLOTS_MAX)
		return json_util_fail(err, errlen, "field 'limits.max_slots': %" PRIu32 " is not a "
				      "power of two in [1, %d]", lim->max_slots, TABLE_SLOTS_MAX);
	if (tb->n_trees < 0 || (uint32_t)tb->n_trees > lim->max_trees)
		return json_util_fail(err, errlen, "field 'trees': %d entries exceed "
				      "limits.max_trees %" PRIu32, tb->n_trees, lim->max_trees);
	for (int i = 0; i < tb->n_trees; i++) {
		for (int j = 0; j < i; j++)
			if (tb->trees[j].id == tb->trees[i].id)
				return json_util_fail(err, errlen, "field 'trees[%d].id': duplicate "
						      "tree id %u (also trees[%d])", i,
						      tb->trees[i].id, j);
		if (i > 0 && tb->trees[i].id < tb->trees[i - 1].id)
			return json_util_fail(err, errlen, "field 'trees[%d].id': tree ids must be "
					      "ascending (%u after %u)", i, tb->trees[i].id,
					      tb->trees[i - 1].id);
		rc = check_tree(tb, &tb->trees[i], i, n_chunks, err, errlen);
		if (rc != 0)
			return rc;
	}
	rc = check_workers_same(tb, err, errlen);
	if (rc == 0)
		rc = check_ranges(tb, n_chunks, err, errlen);
	if (rc == 0)
		rc = check_streams(tb, err, errlen);
	return rc;
}

/* ------------------------------------------------------------------------------------ */
/* Writing                                                                              */
/* ------------------------------------------------------------------------------------ */

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

json_t *
table_to_json(const struct table *tb)
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
	if (tb->cset_blocks != 0)
		rc |= set_new(root, "cset_blocks", json_integer(tb->cset_blocks));
	rc |= set_new(root, "limits",
		      json_pack("{s:I, s:I, s:I, s:I}", "max_trees", (json_int_t)tb->limits.max_trees,
				"max_children", (json_int_t)tb->limits.max_children, "max_workers",
				(json_int_t)tb->limits.max_workers, "max_slots",
				(json_int_t)tb->limits.max_slots));
	rc |= set_new(root, "trees", trees);
	trees = NULL;
	if (rc == 0 && tb->n_streams > 0) {
		json_t *streams = json_array();

		for (int i = 0; streams != NULL && i < tb->n_streams; i++)
			if (json_array_append_new(streams, stream_json(&tb->streams[i])) != 0) {
				json_decref(streams);
				streams = NULL;
			}
		rc |= set_new(root, "streams", streams);
	}
	if (rc != 0)
		goto nomem;
	return root;
nomem:
	json_decref(trees);
	json_decref(root);
	return NULL;
}

int
table_write(const struct table *tb, FILE *out)
{
	return json_util_dump_new(table_to_json(tb), out);
}

/* ------------------------------------------------------------------------------------ */
/* Parsing                                                                              */
/* ------------------------------------------------------------------------------------ */

/* Every key of obj is one of the n known[] and the first `required` of them are present. */
static int
check_keys(struct json_util_src *c, json_t *obj, const char *path, const char *const *known, size_t n,
	   size_t required)
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

	if (!json_is_integer(v))
		return json_util_field_fail(c, path, key,
					    "expected an integer in [%" PRIu64 ", %" PRIu64 "]", min,
			     max);
	x = json_integer_value(v);
	if (x < 0 || (uint64_t)x < min || (uint64_t)x > max)
		return json_util_field_fail(c, path, key,
					    "%lld is not in [%" PRIu64 ", %" PRIu64 "]", (long long)x,
			     min, max);
	*out = (uint64_t)x;
	return 0;
}

static int
get_ipv4(struct json_util_src *c, json_t *obj, const char *path, uint32_t *out)
{
	json_t *v = json_object_get(obj, "ipv4");

	if (!json_is_string(v))
		return json_util_field_fail(c, path, "ipv4",
					    "expected a dotted-quad IPv4 address string");
	if (table_ipv4_parse(json_string_value(v), out) != 0)
		return json_util_field_fail(c, path, "ipv4",
					    "expected a dotted-quad IPv4 address, got '%.32s'",
			     json_string_value(v));
	if (!table_ipv4_unicast(*out))
		return json_util_field_fail(c, path, "ipv4",
					    "%s is not a unicast address", json_string_value(v));
	return 0;
}

/* A gateway object; a child gateway's counts the workers below it and may list them as
 * well (both read by parse_tree()). */
static int
parse_gw_as(struct json_util_src *c, json_t *obj, const char *path, struct table_gw *g,
	    bool child)
{
	static const char *const known[] = { "id", "ipv4", "base_port", "ports",
					     "subtree_workers" /* children only */,
					     "workers_below" /* optional: children only */ };
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
	static const char *const known[] = { "id", "ipv4", "port" };
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

static const char *const tree_keys[] = { "id", "role", "parent", "children", "workers",
					 "expected", "subtree_workers", "chunk_first",
					 "chunk_count", "rate_gbps", "slots",
					 "window", "threshold" /* optional: the last two */ };

/* First pass over trees[i]: an object with known keys and bounded arrays, so that the
 * table can be allocated before anything is copied. */
static int
size_tree(struct json_util_src *c, json_t *jt, int i, int *n_children, int *n_workers,
	  int *n_below)
{
	char path[64];
	json_t *ch, *wk;
	size_t nb = 0;
	int rc;

	snprintf(path, sizeof(path), "trees[%d]", i);
	if (!json_is_object(jt))
		return json_util_field_fail(c, path, "", "expected an object");
	rc = check_keys(c, jt, path, tree_keys, ARRAY_SIZE(tree_keys), ARRAY_SIZE(tree_keys) - 2);
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
						    "gateways of the tree entry", TABLE_BELOW_MAX);
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

	json_array_foreach(b, m, v) {
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
	uint64_t id, expected, subtree, first, count, slots, window = 0, threshold = 0;
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
		rc = parse_worker(c, json_array_get(json_object_get(jt, "workers"), (size_t)j), path,
				  &e->workers[j]);
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
	return 0;
}

static int
parse_limits(struct json_util_src *c, json_t *obj, struct table_limits *lim)
{
	static const char *const known[] = { "max_trees", "max_children", "max_workers",
					     "max_slots" };
	uint64_t t, ch, w, s;
	int rc;

	if (!json_is_object(obj))
		return json_util_field_fail(c, "limits", "", "expected an object");
	rc = check_keys(c, obj, "limits", known, ARRAY_SIZE(known), ARRAY_SIZE(known));
	if (rc == 0)
		rc = get_uint(c, obj, "limits", "max_trees", 1, TABLE_TREES_MAX, &t);
	if (rc == 0)
		rc = get_uint(c, obj, "limits", "max_children", 1, TABLE_CHILDREN_MAX, &ch);
	if (rc == 0)
		rc = get_uint(c, obj, "limits", "max_workers", 1, TABLE_WORKERS_MAX, &w);
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

static const char *const stream_keys[] = { "id", "source", "from", "to", "deliver",
					   "rate_gbps", "origins" };

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
	rc = check_keys(c, js, path, stream_keys, ARRAY_SIZE(stream_keys),
			ARRAY_SIZE(stream_keys));
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
		return json_util_field_fail(c, path, "to", "expected an array of at most %d "
					    "gateways", TABLE_CHILDREN_MAX);
	if (!json_is_array(del) || json_array_size(del) > TABLE_WORKERS_MAX)
		return json_util_field_fail(c, path, "deliver", "expected an array of at most %d "
					    "workers", TABLE_WORKERS_MAX);
	if (!json_is_array(org) || json_array_size(org) > TABLE_WORKERS_MAX)
		return json_util_field_fail(c, path, "origins", "expected an array of at most %d "
					    "worker ids", TABLE_WORKERS_MAX);
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
			return json_util_field_fail(c, path, "", "expected an object, or null at the "
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

static const char *const table_keys[] = { "format", "job", "epoch", "gateway", "dtype",
					  "elements", "chunk_elements", "limits", "trees",
					  "cset_blocks", "streams" /* optional: the last two */ };

struct table *
table_parse(const char *text, const char *src, char *err, size_t errlen)
{
	int n_children[TABLE_TREES_MAX], n_workers[TABLE_TREES_MAX], n_below[TABLE_TREES_MAX];
	int n = 0, n_streams, rc;
	struct json_util_src c = { .src = src != NULL ? src : "<string>", .err = err, .errlen = errlen };
	json_t *root, *fmt, *trees, *dtype, *streams;
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
		       ARRAY_SIZE(table_keys) - 2) != 0 ||
	    get_uint(&c, root, "", "job", 0, UINT32_MAX, &job) != 0 ||
	    get_uint(&c, root, "", "epoch", 0, UINT32_MAX, &epoch) != 0 ||
	    parse_gw(&c, json_object_get(root, "gateway"), "gateway", &gw) != 0)
		goto out;
	dtype = json_object_get(root, "dtype");
	if (!json_is_string(dtype) || table_dtype_from_name(json_string_value(dtype)) == 0) {
		json_util_field_fail(&c, "dtype", "", "expected \"fp32\", \"fp16\" or \"bf16\"");
		goto out;
	}
	if (get_uint(&c, root, "", "elements", 1, INT64_MAX, &elements) != 0 ||
	    get_uint(&c, root, "", "chunk_elements", 1, TABLE_CHUNK_BYTES_MAX,
		     &chunk_elements) != 0 ||
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
		json_util_field_fail(&c, "trees", "",
				     "%zu entries exceed the limit of %d", json_array_size(trees),
		      TABLE_TREES_MAX);
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
		json_util_field_fail(&c, "streams", "", "expected an array of 1 to %d streams "
				     "(absent: none)", TABLE_STREAMS_MAX);
		goto out;
	}
	n_streams = streams != NULL ? (int)json_array_size(streams) : 0;
	tb = table_create_full(n, n_children, n_workers, n_below, n_streams);
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
	tb->limits = lim;
	tb->cset_blocks = (uint8_t)cset_blocks;
	for (int i = 0; i < n; i++)
		if (parse_tree(&c, json_array_get(trees, (size_t)i), i, &tb->trees[i]) != 0)
			goto out;
	for (int i = 0; i < n_streams; i++)
		if (parse_stream(&c, json_array_get(streams, (size_t)i), i, &tb->streams[i]) != 0)
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

/* ------------------------------------------------------------------------------------ */
/* Compiling                                                                            */
/* ------------------------------------------------------------------------------------ */

struct split_item {
	int tree;
	double frac;
};

static int
cmp_split(const void *a, const void *b)
{
	const struct split_item *x = a, *y = b;

	if (x->frac != y->frac)
		return x->frac > y->frac ? -1 : 1;
	return (x->tree > y->tree) - (x->tree < y->tree);
}

int
table_split_chunks(const struct plan *p, uint32_t n_chunks, uint32_t *first, uint32_t *count)
{
	struct split_item *items;
	double sum = 0;
	uint64_t given = 0, left;
	int n = p->n_trees, positive = 0, n_items = 0;

	if (n <= 0)
		return -EINVAL;
	for (int i = 0; i < n; i++) {
		double s = p->trees[i].share;

		if (!(isfinite(s) && s >= 0))
			return -EINVAL;
		sum += s;
		positive += s > 0;
	}
	if (!(sum > 0 && isfinite(sum)))
		return -EINVAL;
	items = malloc(sizeof(*items) * (size_t)n);
	if (items == NULL)
		return -ENOMEM;
	/* Quotas, floors, and the remainders of the trees with a share. */
	for (int i = 0; i < n; i++) {
		double q = p->trees[i].share / sum * n_chunks, f = floor(q);

		if (f > n_chunks)
			f = n_chunks;
		count[i] = (uint32_t)f;
		given += count[i];
		if (p->trees[i].share > 0)
			items[n_items++] = (struct split_item){ .tree = i, .frac = q - f };
	}
	/* Rounding can only push the floors over n_chunks by a hair: take it back from the
	 * largest counts. */
	while (given > n_chunks) {
		int big = 0;

		for (int i = 1; i < n; i++)
			if (count[i] > count[big])
				big = i;
		count[big]--;
		given--;
	}
	qsort(items, (size_t)n_items, sizeof(*items), cmp_split);
	left = n_chunks - given;
	for (int k = 0; left > 0; k = (k + 1) % n_items, left--)
		count[items[k].tree]++;
	free(items);
	/* Every tree with a share gets a chunk if there are enough of them. */
	if ((uint32_t)positive <= n_chunks) {
		for (int i = 0; i < n; i++) {
			int big = -1;

			if (!(p->trees[i].share > 0) || count[i] > 0)
				continue;
			for (int j = 0; j < n; j++)
				if (count[j] >= 2 && (big < 0 || count[j] > count[big]))
					big = j;
			if (big < 0)
				break; /* cannot happen: n_chunks >= positive */
			count[big]--;
			count[i]++;
		}
	}
	for (uint64_t i = 0, at = 0; i < (uint64_t)n; i++) {
		first[i] = (uint32_t)at;
		at += count[i];
	}
	return 0;
}

uint32_t
table_slots(double rate_gbps, double hold_ms, uint32_t chunk_bytes, uint32_t slots_min,
	    uint32_t slots_max)
{
	uint32_t lo, hi;
	double need;

	hi = slots_max == 0 || slots_max > TABLE_SLOTS_MAX ? TABLE_SLOTS_MAX : pow2_floor(slots_max);
	lo = slots_min == 0 ? 1 : pow2_ceil(slots_min);
	if (lo > hi)
		lo = hi;
	if (!(isfinite(rate_gbps) && rate_gbps >= 0 && isfinite(hold_ms) && hold_ms >= 0) ||
	    chunk_bytes == 0)
		return hi;
	/* Gbit/s * ms = 1e9 / 8 bytes/s * 1e-3 s = 125000 bytes. */
	need = ceil(rate_gbps * hold_ms * 125000.0 / chunk_bytes);
	if (need >= hi)
		return hi;
	if (need <= lo)
		return lo;
	return pow2_ceil((uint32_t)need);
}

/* Latency from v up to the root of tr along parent links, or -1 if the chain breaks. */
static double
up_ms(const struct topo *t, const struct plan_tree *tr, int v)
{
	double lat = 0;

	for (int steps = 0; tr->parent[v] != PLAN_ROOT; steps++) {
		int u = tr->parent[v], l;

		if (u < 0 || u >= t->n_nodes || steps > t->n_nodes)
			return -1;
		l = topo_link_between(t, v, u);
		if (l < 0)
			return -1;
		lat += t->links[l].latency_ms;
		v = u;
	}
	return lat;
}

double
table_hold_ms(const struct topo *t, const struct plan_tree *tr, int v, const bool *in_tree,
	      const bool *has_workers)
{
	double up, down = 0;

	if (v < 0 || v >= t->n_nodes || tr->parent[v] == PLAN_ABSENT ||
	    (in_tree != NULL && !in_tree[v]))
		return -1;
	up = up_ms(t, tr, v);
	if (up < 0)
		return -1;
	for (int u = 0; u < t->n_nodes; u++) {
		double lat = 0;
		int w = u, steps = 0;
		bool workers;

		if (tr->parent[u] == PLAN_ABSENT || (in_tree != NULL && !in_tree[u]))
			continue;
		/* Walk up from u: is v on the way, and how far? */
		while (w != v && tr->parent[w] >= 0 && steps++ <= t->n_nodes) {
			int l = topo_link_between(t, w, tr->parent[w]);

			if (l < 0)
				break;
			lat += t->links[l].latency_ms;
			w = tr->parent[w];
		}
		if (w != v)
			continue;
		workers = has_workers != NULL ? has_workers[u] : t->nodes[u].workers > 0;
		if (workers)
			lat += t->nodes[u].lan_latency_ms;
		if (lat > down)
			down = lat;
	}
	return 2 * (up + down);
}

struct compile {
	const struct topo *t;
	const struct plan *p;
	const struct table_deploy *d;
	char *err;
	size_t errlen;
};

/* Write a one-line message into the compile's err buffer; returns -code. */
static int cfail(struct compile *c, int code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int
cfail(struct compile *c, int code, const char *fmt, ...)
{
	char msg[TABLE_ERR_MAX];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	json_util_fail(c->err, c->errlen, "%s", msg);
	return -code;
}

/* The deployment's own rules, checked for every node so that every gateway's compile
 * gives the same verdict. */
static int
check_deploy(struct compile *c)
{
	const struct topo *t = c->t;
	const struct table_deploy *d = c->d;
	uint64_t *seen;
	int total = 0, rc = 0;
	char ip[16];

	seen = calloc(65536 / 64, sizeof(*seen));
	if (seen == NULL)
		return cfail(c, ENOMEM, "out of memory");
	for (int v = 0; v < t->n_nodes && rc == 0; v++) {
		const struct table_deploy_node *dn = &d->nodes[v];
		const char *id = t->nodes[v].id;

		if (dn->gateway_id == 0 || dn->gateway_id > TABLE_ID_MAX)
			rc = cfail(c, EINVAL, "deploy.nodes[%d] ('%s').gateway_id: must be in [1, %d]",
				   v, id, TABLE_ID_MAX);
		else if (seen[dn->gateway_id / 64] & (1ull << (dn->gateway_id % 64)))
			rc = cfail(c, EINVAL, "deploy.nodes[%d] ('%s').gateway_id: id %u is used twice",
				   v, id, dn->gateway_id);
		else if (!table_ipv4_unicast(dn->ipv4))
			rc = cfail(c, EINVAL, "deploy.nodes[%d] ('%s').ipv4: %s is not a unicast "
				   "address", v, id, table_ipv4_format(dn->ipv4, ip));
		else if (dn->base_port == 0 || dn->ports == 0 || dn->ports > TABLE_PORTS_MAX ||
			 (uint32_t)dn->base_port + dn->ports - 1 > 65535)
			rc = cfail(c, EINVAL, "deploy.nodes[%d] ('%s').ports: base_port %u and %u "
				   "ports must make a range inside [1, 65535] of at most %d ports", v,
				   id, dn->base_port, dn->ports, TABLE_PORTS_MAX);
		else if (dn->n_workers < 0 || (dn->n_workers > 0 && dn->workers == NULL))
			rc = cfail(c, EINVAL, "deploy.nodes[%d] ('%s').workers: bad worker array", v,
				   id);
		else if (dn->n_workers > TABLE_WORKERS_MAX)
			rc = cfail(c, E2BIG, "deploy.nodes[%d] ('%s').workers: %d workers, more than "
				   "the table limit %d", v, id, dn->n_workers, TABLE_WORKERS_MAX);
		if (rc != 0)
			break;
		seen[dn->gateway_id / 64] |= 1ull << (dn->gateway_id % 64);
		for (int u = 0; u < v; u++)
			if (d->nodes[u].ipv4 == dn->ipv4) {
				rc = cfail(c, EINVAL, "deploy.nodes[%d] ('%s').ipv4: %s is also the "
					   "gateway of nodes[%d] ('%s')", v, id,
					   table_ipv4_format(dn->ipv4, ip), u, t->nodes[u].id);
				break;
			}
		total += dn->n_workers;
	}
	/* Worker ids: unique in the deployment and distinct from every gateway id. */
	for (int v = 0; v < t->n_nodes && rc == 0; v++) {
		const struct table_deploy_node *dn = &d->nodes[v];

		for (int k = 0; k < dn->n_workers && rc == 0; k++) {
			const struct table_worker *w = &dn->workers[k];

			if (w->id == 0 || w->id > TABLE_ID_MAX ||
			    (seen[w->id / 64] & (1ull << (w->id % 64))))
				rc = cfail(c, EINVAL, "deploy.nodes[%d] ('%s').workers[%d].id: %u is %s",
					   v, t->nodes[v].id, k, w->id,
					   w->id == 0 || w->id > TABLE_ID_MAX ?
					   "reserved (ids are 1 .. 65534)" :
					   "already a gateway or worker id");
			else if (!table_ipv4_unicast(w->ipv4))
				rc = cfail(c, EINVAL, "deploy.nodes[%d] ('%s').workers[%d].ipv4: %s is "
					   "not a unicast address", v, t->nodes[v].id, k,
					   table_ipv4_format(w->ipv4, ip));
			else if (w->port == 0)
				rc = cfail(c, EINVAL, "deploy.nodes[%d] ('%s').workers[%d].port: must be "
					   "in [1, 65535]", v, t->nodes[v].id, k);
			for (int j = 0; j < k && rc == 0; j++)
				if (dn->workers[j].ipv4 == w->ipv4 && dn->workers[j].port == w->port)
					rc = cfail(c, EINVAL, "deploy.nodes[%d] ('%s').workers[%d]: "
						   "%s:%u is also workers[%d]", v, t->nodes[v].id, k,
						   table_ipv4_format(w->ipv4, ip), w->port, j);
			seen[w->id / 64] |= 1ull << (w->id % 64);
		}
	}
	free(seen);
	if (rc == 0 && total == 0)
		rc = cfail(c, EINVAL, "deploy.nodes: the job has no workers");
	if (rc == 0 && d->cset_blocks > TABLE_CSET_BLOCKS_MAX)
		rc = cfail(c, EINVAL, "deploy.cset_blocks: %u, at most %d", d->cset_blocks,
			   TABLE_CSET_BLOCKS_MAX);
	if (rc == 0 && d->min_workers != 0 && d->cset_blocks == 0)
		rc = cfail(c, EINVAL, "deploy.min_workers: a partial reduce needs contributor sets "
			   "(cset_blocks >= 1)");
	for (int v = 0; v < t->n_nodes && rc == 0 && d->cset_blocks != 0; v++)
		for (int k = 0; k < d->nodes[v].n_workers && rc == 0; k++)
			if (d->nodes[v].workers[k].id >= 256u * d->cset_blocks)
				rc = cfail(c, EINVAL, "deploy.nodes[%d] ('%s').workers[%d].id: %u is "
					   "outside contributor sets of %u blocks", v, t->nodes[v].id,
					   k, d->nodes[v].workers[k].id, d->cset_blocks);
	return rc;
}

/* Mark the nodes of tree tr that stay in it: those whose subtree holds a worker of the
 * deployment (walking up from every worker site). Also counts the workers below each
 * node. Fails if a node with workers is absent from the tree. */
static int
prune_tree(struct compile *c, int i, bool *active, uint32_t *below)
{
	const struct plan_tree *tr = &c->p->trees[i];
	const struct topo *t = c->t;

	memset(active, 0, sizeof(*active) * (size_t)t->n_nodes);
	memset(below, 0, sizeof(*below) * (size_t)t->n_nodes);
	for (int v = 0; v < t->n_nodes; v++) {
		int n = c->d->nodes[v].n_workers, u = v;

		if (n == 0)
			continue;
		if (tr->parent[v] == PLAN_ABSENT)
			return cfail(c, EINVAL, "deploy.nodes[%d] ('%s'): has %d workers but plan "
				     "trees[%d] does not reach the site", v, t->nodes[v].id, n, i);
		/* plan_validate() checked that the chain reaches the root without cycles. */
		while (u >= 0) {
			active[u] = true;
			below[u] += (uint32_t)n;
			u = tr->parent[u];
		}
	}
	return 0;
}

/* With contributor sets: the workers below child gateway u of tree tr (the workers of
 * u's subtree), ascending, into e's entries from *k on as those of children[j]. Worker
 * ids are below 256 * cset_blocks (check_deploy()). */
static void
fill_below(const struct compile *c, const struct plan_tree *tr, int u, struct table_tree *e,
	   int j, int *k)
{
	uint64_t ids[(TABLE_BELOW_MAX + 1) / 64] = { 0 };

	for (int w = 0; w < c->t->n_nodes; w++) {
		const struct table_deploy_node *dn = &c->d->nodes[w];
		int v = w;

		if (dn->n_workers == 0)
			continue;
		while (v >= 0 && v != u)
			v = tr->parent[v];
		for (int m = 0; v == u && m < dn->n_workers; m++)
			ids[dn->workers[m].id / 64] |= 1ull << (dn->workers[m].id % 64);
	}
	for (int id = 1; id <= TABLE_BELOW_MAX; id++)
		if (ids[id / 64] >> (id % 64) & 1) {
			e->below[*k] = (uint16_t)id;
			e->below_child[*k] = (uint8_t)j;
			(*k)++;
		}
}

struct table *
table_compile(const struct topo *t, const struct plan *p, const struct table_deploy *d,
	      int node, uint32_t job, uint32_t epoch, char *err, size_t errlen)
{
	struct compile c = { .t = t, .p = p, .d = d, .err = err, .errlen = errlen };
	int n_children[TABLE_TREES_MAX], n_workers[TABLE_TREES_MAX], tree_of[TABLE_TREES_MAX];
	int n_below[TABLE_TREES_MAX];
	uint32_t *first = NULL, *count = NULL, *below = NULL, chunk_elements, smin, smax;
	bool *active = NULL, *has_workers = NULL;
	int *kids_of = NULL;
	char msg[TABLE_ERR_MAX];
	struct table *tb = NULL;
	uint64_t n_chunks;
	size_t esize;
	int rc, n_trees = 0, carrying = 0;

	if (t == NULL || p == NULL || d == NULL) {
		rc = cfail(&c, EINVAL, "table_compile: no topology, plan or deployment");
		goto out;
	}
	if (node < 0 || node >= t->n_nodes) {
		rc = cfail(&c, EINVAL, "node %d: not a node of topology '%s' (%d nodes)", node,
			   t->name, t->n_nodes);
		goto out;
	}
	if (d->n_nodes != t->n_nodes || d->nodes == NULL) {
		rc = cfail(&c, EINVAL, "deploy.nodes: %d entries, the topology has %d nodes",
			   d->n_nodes, t->n_nodes);
		goto out;
	}
	if (plan_validate(t, p, 0, msg, sizeof(msg)) != 0) {
		rc = cfail(&c, EINVAL, "plan: %s", msg);
		goto out;
	}
	esize = table_dtype_size(d->dtype);
	if (esize == 0) {
		rc = cfail(&c, EINVAL, "deploy.dtype: %d is not a dtype", (int)d->dtype);
		goto out;
	}
	if (d->chunk_bytes == 0 || d->chunk_bytes % esize != 0 ||
	    d->chunk_bytes > TABLE_CHUNK_BYTES_MAX) {
		rc = cfail(&c, EINVAL, "deploy.chunk_bytes: %" PRIu32 " is not a multiple of %zu "
			   "(%s) in [%zu, %d]", d->chunk_bytes, esize, table_dtype_name(d->dtype),
			   esize, TABLE_CHUNK_BYTES_MAX);
		goto out;
	}
	chunk_elements = d->chunk_bytes / (uint32_t)esize;
	n_chunks = d->elements / chunk_elements + (d->elements % chunk_elements != 0);
	if (d->elements == 0 || d->elements > INT64_MAX || n_chunks > UINT32_MAX) {
		rc = cfail(&c, EINVAL, "deploy.elements: %" PRIu64 " elements must be >= 1 and make "
			   "at most %" PRIu32 " chunks", d->elements, UINT32_MAX);
		goto out;
	}
	smax = d->slots_max == 0 ? TABLE_SLOTS_MAX : d->slots_max;
	smin = d->slots_min == 0 ? TABLE_SLOTS_MIN : d->slots_min;
	if (smax > TABLE_SLOTS_MAX || smin > smax) {
		rc = cfail(&c, EINVAL, "deploy.slots_max: slots_min %" PRIu32 " and slots_max %"
			   PRIu32 " must satisfy slots_min <= slots_max <= %d", smin, smax,
			   TABLE_SLOTS_MAX);
		goto out;
	}
	smax = pow2_floor(smax);
	rc = check_deploy(&c);
	if (rc != 0)
		goto out;
	first = calloc((size_t)p->n_trees, sizeof(*first));
	count = calloc((size_t)p->n_trees, sizeof(*count));
	below = calloc((size_t)t->n_nodes, sizeof(*below));
	active = calloc((size_t)t->n_nodes, sizeof(*active));
	has_workers = calloc((size_t)t->n_nodes, sizeof(*has_workers));
	kids_of = calloc((size_t)t->n_nodes, sizeof(*kids_of));
	if (first == NULL || count == NULL || below == NULL || active == NULL ||
	    has_workers == NULL || kids_of == NULL) {
		rc = cfail(&c, ENOMEM, "out of memory");
		goto out;
	}
	for (int v = 0; v < t->n_nodes; v++)
		has_workers[v] = d->nodes[v].n_workers > 0;
	rc = table_split_chunks(p, (uint32_t)n_chunks, first, count);
	if (rc != 0) {
		rc = cfail(&c, -rc, "plan: trees[].share: cannot split %" PRIu64 " chunks by these "
			   "shares", n_chunks);
		goto out;
	}
	/* Which trees carry chunks and hold this node; the shape of its entry in each. */
	for (int i = 0; i < p->n_trees; i++) {
		const struct plan_tree *tr = &p->trees[i];
		int ch = 0;

		if (count[i] == 0)
			continue;
		if (++carrying > TABLE_TREES_MAX) {
			rc = cfail(&c, E2BIG, "plan: more than %d trees carry chunks (the table "
				   "limit)", TABLE_TREES_MAX);
			goto out;
		}
		if (!(isfinite(tr->rate_gbps) && tr->rate_gbps > 0)) {
			rc = cfail(&c, EINVAL, "plan: trees[%d].rate_gbps: a tree that carries "
				   "chunks needs a rate > 0", i);
			goto out;
		}
		rc = prune_tree(&c, i, active, below);
		if (rc != 0)
			goto out;
		memset(kids_of, 0, sizeof(*kids_of) * (size_t)t->n_nodes);
		for (int w = 0; w < t->n_nodes; w++)
			if (active[w] && tr->parent[w] >= 0)
				kids_of[tr->parent[w]]++;
		for (int u = 0; u < t->n_nodes; u++) {
			int kids = kids_of[u];

			if (!active[u])
				continue;
			if (kids > TABLE_CHILDREN_MAX) {
				rc = cfail(&c, E2BIG, "plan: trees[%d]: node '%s' has %d child "
					   "gateways, more than the table limit %d", i,
					   t->nodes[u].id, kids, TABLE_CHILDREN_MAX);
				goto out;
			}
			if (kids + d->nodes[u].n_workers > TABLE_CONTRIB_MAX) {
				rc = cfail(&c, E2BIG, "plan: trees[%d]: node '%s' expects %d "
					   "contributions, more than the table limit %d", i,
					   t->nodes[u].id, kids + d->nodes[u].n_workers,
					   TABLE_CONTRIB_MAX);
				goto out;
			}
			if (u == node)
				ch = kids;
		}
		if (!active[node])
			continue;
		tree_of[n_trees] = i;
		n_children[n_trees] = ch;
		n_workers[n_trees] = d->nodes[node].n_workers;
		/* With sets, every worker of the subtree is local or below a child. */
		n_below[n_trees] = d->cset_blocks != 0 ? (int)below[node] - n_workers[n_trees] : 0;
		n_trees++;
	}
	tb = table_create_full(n_trees, n_children, n_workers, n_below, 0);
	if (tb == NULL) {
		rc = cfail(&c, errno, "out of memory");
		goto out;
	}
	tb->job = job;
	tb->epoch = epoch;
	tb->gw = (struct table_gw){ .id = d->nodes[node].gateway_id, .ipv4 = d->nodes[node].ipv4,
				    .base_port = d->nodes[node].base_port,
				    .ports = d->nodes[node].ports };
	tb->dtype = d->dtype;
	tb->elements = d->elements;
	tb->chunk_elements = chunk_elements;
	tb->limits = (struct table_limits){ .max_trees = TABLE_TREES_MAX,
					    .max_children = TABLE_CHILDREN_MAX,
					    .max_workers = TABLE_WORKERS_MAX, .max_slots = smax };
	tb->cset_blocks = d->cset_blocks;
	for (int k = 0; k < n_trees; k++) {
		const struct plan_tree *tr = &p->trees[tree_of[k]];
		struct table_tree *e = &tb->trees[k];
		int par = tr->parent[node], j = 0, nb = 0;
		double hold;

		(void)prune_tree(&c, tree_of[k], active, below); /* succeeded above */
		e->id = (uint16_t)tree_of[k];
		e->has_parent = par != PLAN_ROOT;
		if (e->has_parent) {
			const struct table_deploy_node *pn = &d->nodes[par];

			e->parent = (struct table_gw){ .id = pn->gateway_id, .ipv4 = pn->ipv4,
						       .base_port = pn->base_port,
						       .ports = pn->ports };
		}
		for (int u = 0; u < t->n_nodes; u++) {
			const struct table_deploy_node *cn = &d->nodes[u];

			if (!active[u] || tr->parent[u] != node)
				continue;
			if (e->n_below > 0)
				fill_below(&c, tr, u, e, j, &nb);
			e->child_workers[j] = below[u];
			e->children[j++] = (struct table_gw){ .id = cn->gateway_id, .ipv4 = cn->ipv4,
							      .base_port = cn->base_port,
							      .ports = cn->ports };
		}
		for (int w = 0; w < e->n_workers; w++) {
			const struct table_worker *src = &d->nodes[node].workers[w];

			/* Field by field: the padding stays zero, the block is deterministic. */
			e->workers[w].id = src->id;
			e->workers[w].ipv4 = src->ipv4;
			e->workers[w].port = src->port;
		}
		e->role = !e->has_parent ? TABLE_ROLE_ROOT :
			  e->n_children > 0 ? TABLE_ROLE_INTERIOR : TABLE_ROLE_LEAF;
		e->expected = (uint32_t)(e->n_workers + e->n_children);
		e->subtree_workers = below[node];
		e->chunk_first = first[tree_of[k]];
		e->chunk_count = count[tree_of[k]];
		e->rate_gbps = tr->rate_gbps;
		hold = table_hold_ms(t, tr, node, active, has_workers);
		/* The window is the formula's pool; the pool is twice that (within the cap),
		 * so that a lost chunk does not stop the window until it is resent. */
		e->window = table_slots(tr->rate_gbps, hold, d->chunk_bytes, smin, smax);
		e->slots = e->window <= smax / 2 ? 2 * e->window : e->window;
		if (!e->has_parent && d->min_workers != 0 && d->min_workers < e->subtree_workers)
			e->threshold = d->min_workers;
		/* A partial reduce holds every chunk of its tree (within the cap), so that the
		 * RESULTs of a round stay until the next round: a straggler up to a round
		 * behind gets each of them. */
		if (d->min_workers != 0 && e->chunk_count > e->slots)
			e->slots = pow2_ceil(e->chunk_count) < smax ? pow2_ceil(e->chunk_count) : smax;
	}
	if (table_validate(tb, msg, sizeof(msg)) != 0) {
		/* The deployment checks above should make this unreachable. */
		rc = cfail(&c, EINVAL, "node '%s': compiled table is invalid: %s", t->nodes[node].id,
			   msg);
		goto out;
	}
	rc = 0;
out:
	free(first);
	free(count);
	free(below);
	free(active);
	free(has_workers);
	free(kids_of);
	if (rc != 0) {
		table_free(tb);
		errno = -rc;
		return NULL;
	}
	return tb;
}
