/* SPDX-License-Identifier: BSD-3-Clause
 * Forwarding tables: the consistency rules of docs/TABLES.md (table_validate()), which
 * every table passes before a dataplane installs it: gateways, workers, trees, chunk
 * ranges, shards and seals here, the multicast streams in table_check_mcast.c.
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "jsonutil.h"
#include "revision.h"
#include "table.h"
#include "table_check.h"

static bool
is_pow2(uint64_t x)
{
	return x != 0 && (x & (x - 1)) == 0;
}

/* A peer gateway (or this one) at field path `path`. */
int
table_check_gw(const struct table_gw *g, const char *path, char *err, size_t errlen)
{
	char ip[16];

	if (g->id == 0 || g->id > TABLE_ID_MAX)
		return json_util_fail(err, errlen,
				      "field '%s.id': must be in [1, %d] (0 and "
				      "65535 mean none)",
				      path, TABLE_ID_MAX);
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
		return json_util_fail(err, errlen,
				      "field '%s.ports': base_port %u + %u ports "
				      "run past port 65535",
				      path, g->base_port, g->ports);
	return 0;
}

int
table_check_worker(const struct table_worker *w, const char *path, char *err, size_t errlen)
{
	char ip[16];

	if (w->id == 0 || w->id > TABLE_ID_MAX)
		return json_util_fail(err, errlen,
				      "field '%s.id': must be in [1, %d] (0 and "
				      "65535 mean none)",
				      path, TABLE_ID_MAX);
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
tree_sender(const struct table *tb, const struct table_tree *e, int i, int k, char *path, size_t n)
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
check_tree_ids(const struct table *tb, const struct table_tree *e, int i, char *err, size_t errlen)
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
			return json_util_fail(err, errlen,
					      "field '%s': duplicate id %u (also '%s')", path, id,
					      first);
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
			return json_util_fail(err, errlen,
					      "field 'trees[%d].children[%d].ipv4': "
					      "%s is also the address of the %s",
					      i, j, table_ipv4_format(a, ip),
					      a == tb->gw.ipv4 ? "gateway" : "parent");
		for (int k = 0; k < j; k++)
			if (e->children[k].ipv4 == a)
				return json_util_fail(err, errlen,
						      "field 'trees[%d].children[%d].ipv4': %s is "
						      "also the address of children[%d]",
						      i, j, table_ipv4_format(a, ip), k);
	}
	if (e->has_parent && e->parent.ipv4 == tb->gw.ipv4)
		return json_util_fail(err, errlen,
				      "field 'trees[%d].parent.ipv4': %s is also the "
				      "address of the gateway",
				      i, table_ipv4_format(e->parent.ipv4, ip));
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
		return json_util_fail(err, errlen,
				      "field 'trees[%d].children': %d workers below "
				      "the child gateways, more than %d",
				      i, e->n_below, TABLE_BELOW_MAX);
	for (k = 0; k < e->n_below; k++) {
		if (e->below_child[k] >= e->n_children)
			return json_util_fail(err, errlen,
					      "field 'trees[%d].children': worker %u "
					      "is below child %u of %d",
					      i, e->below[k], e->below_child[k], e->n_children);
		if (k > 0 && e->below_child[k] < e->below_child[k - 1])
			return json_util_fail(err, errlen,
					      "field 'trees[%d].children': the "
					      "workers below them are not in child order",
					      i);
	}
	if (tb->cset_blocks == 0 && e->n_below > 0)
		return json_util_fail(err, errlen,
				      "field 'trees[%d].children[%u].workers_below': "
				      "only with contributor sets (cset_blocks >= 1)",
				      i, e->below_child[0]);
	if (tb->cset_blocks == 0)
		return 0;
	k = 0;
	for (int j = 0; j < e->n_children; j++) {
		int first = k;

		for (; k < e->n_below && e->below_child[k] == j; k++) {
			if (e->below[k] == 0 || e->below[k] >= lim)
				return json_util_fail(err, errlen,
						      "field 'trees[%d].children[%d]."
						      "workers_below[%d]': %u is outside the "
						      "contributor set of %u blocks (ids 1 to %u)",
						      i, j, k - first, e->below[k], tb->cset_blocks,
						      lim - 1);
			if (k > first && e->below[k] <= e->below[k - 1])
				return json_util_fail(err, errlen,
						      "field 'trees[%d].children[%d]."
						      "workers_below[%d]': ids must be ascending "
						      "(%u after %u)",
						      i, j, k - first, e->below[k],
						      e->below[k - 1]);
		}
		if (k == first)
			return json_util_fail(
				err, errlen,
				"field 'trees[%d].children[%d]."
				"workers_below': missing: with contributor sets every "
				"child gateway lists the workers of its subtree",
				i, j);
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
			return json_util_fail(err, errlen,
					      "field 'trees[%d].children[%d]."
					      "subtree_workers': %" PRIu32 " is not in [1, %d]",
					      i, j, n, TABLE_ID_MAX);
		while (k < e->n_below && e->below_child[k] == j)
			k++;
		if (tb->cset_blocks != 0 && n != (uint32_t)(k - first))
			return json_util_fail(err, errlen,
					      "field 'trees[%d].children[%d]."
					      "subtree_workers': %" PRIu32
					      ", but its workers_below "
					      "lists %d workers",
					      i, j, n, k - first);
		sum += n;
	}
	if ((uint64_t)e->subtree_workers != (uint64_t)e->n_workers + sum)
		return json_util_fail(err, errlen,
				      "field 'trees[%d].subtree_workers': %" PRIu32
				      ", but %d local workers and %" PRIu64 " below the child "
				      "gateways (their subtree_workers) make %" PRIu64,
				      i, e->subtree_workers, e->n_workers, sum,
				      (uint64_t)e->n_workers + sum);
	return 0;
}

static int
check_tree(const struct table *tb, const struct table_tree *e, int i, uint64_t n_chunks, char *err,
	   size_t errlen)
{
	const struct table_limits *lim = &tb->limits;
	char path[64];
	int rc;

	if (table_role_name(e->role) == NULL)
		return json_util_fail(err, errlen, "field 'trees[%d].role': not a role", i);
	if (e->role == TABLE_ROLE_ROOT && e->has_parent)
		return json_util_fail(err, errlen,
				      "field 'trees[%d].parent': a root has no parent "
				      "(null)",
				      i);
	if (e->role != TABLE_ROLE_ROOT && !e->has_parent)
		return json_util_fail(err, errlen, "field 'trees[%d].parent': a %s needs a parent",
				      i, table_role_name(e->role));
	if (e->role == TABLE_ROLE_LEAF && e->n_children > 0)
		return json_util_fail(err, errlen,
				      "field 'trees[%d].role': a leaf has no child "
				      "gateways, this one has %d (interior)",
				      i, e->n_children);
	if (e->role == TABLE_ROLE_INTERIOR && e->n_children == 0)
		return json_util_fail(err, errlen,
				      "field 'trees[%d].role': an interior has child "
				      "gateways, this one has none (leaf)",
				      i);
	if (e->n_children < 0 || (uint32_t)e->n_children > lim->max_children)
		return json_util_fail(err, errlen,
				      "field 'trees[%d].children': %d entries exceed "
				      "limits.max_children %" PRIu32,
				      i, e->n_children, lim->max_children);
	if (e->n_workers < 0 || (uint32_t)e->n_workers > lim->max_workers)
		return json_util_fail(err, errlen,
				      "field 'trees[%d].workers': %d entries exceed "
				      "limits.max_workers %" PRIu32,
				      i, e->n_workers, lim->max_workers);
	if (e->expected != (uint32_t)(e->n_workers + e->n_children))
		return json_util_fail(err, errlen,
				      "field 'trees[%d].expected': %" PRIu32 ", but "
				      "%d workers + %d children make %d contributions",
				      i, e->expected, e->n_workers, e->n_children,
				      e->n_workers + e->n_children);
	if (e->expected == 0)
		return json_util_fail(err, errlen,
				      "field 'trees[%d].expected': a tree entry needs "
				      "at least one contribution",
				      i);
	if (e->expected > TABLE_CONTRIB_MAX)
		return json_util_fail(err, errlen,
				      "field 'trees[%d].expected': %" PRIu32
				      " exceeds the contributor bitmap (%d)",
				      i, e->expected, TABLE_CONTRIB_MAX);
	/* Distinct worker ids, and the wire's contrib is 16 bits (PROTOCOL.md section 4). */
	if (e->subtree_workers > TABLE_ID_MAX)
		return json_util_fail(err, errlen,
				      "field 'trees[%d].subtree_workers': %" PRIu32
				      " is more workers than there are ids (%d)",
				      i, e->subtree_workers, TABLE_ID_MAX);
	if (e->subtree_workers < e->expected)
		return json_util_fail(err, errlen,
				      "field 'trees[%d].subtree_workers': %" PRIu32
				      " is less than the %" PRIu32
				      " contributions (each carries at "
				      "least one worker)",
				      i, e->subtree_workers, e->expected);
	if (e->has_parent) {
		snprintf(path, sizeof(path), "trees[%d].parent", i);
		rc = table_check_gw(&e->parent, path, err, errlen);
		if (rc != 0)
			return rc;
	}
	for (int j = 0; j < e->n_children; j++) {
		snprintf(path, sizeof(path), "trees[%d].children[%d]", i, j);
		rc = table_check_gw(&e->children[j], path, err, errlen);
		if (rc != 0)
			return rc;
	}
	for (int j = 0; j < e->n_workers; j++) {
		snprintf(path, sizeof(path), "trees[%d].workers[%d]", i, j);
		rc = table_check_worker(&e->workers[j], path, err, errlen);
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
		return json_util_fail(err, errlen,
				      "field 'trees[%d].chunk_count': must be >= 1 (a "
				      "tree without chunks has no entry)",
				      i);
	if ((uint64_t)e->chunk_first + e->chunk_count > n_chunks)
		return json_util_fail(err, errlen,
				      "field 'trees[%d].chunk_count': chunks %" PRIu32 "..%" PRIu64
				      " run past the %" PRIu64 " chunks of the tensor",
				      i, e->chunk_first,
				      (uint64_t)e->chunk_first + e->chunk_count - 1, n_chunks);
	if (!(isfinite(e->rate_gbps) && e->rate_gbps > 0))
		return json_util_fail(err, errlen,
				      "field 'trees[%d].rate_gbps': must be a finite "
				      "number > 0",
				      i);
	if (!is_pow2(e->slots) || e->slots > lim->max_slots)
		return json_util_fail(err, errlen,
				      "field 'trees[%d].slots': %" PRIu32 " is not a "
				      "power of two in [1, limits.max_slots %" PRIu32 "]",
				      i, e->slots, lim->max_slots);
	if (e->window > e->slots)
		return json_util_fail(err, errlen,
				      "field 'trees[%d].window': %" PRIu32 " is more "
				      "than the %" PRIu32 " slots",
				      i, e->window, e->slots);
	if (e->threshold > e->subtree_workers)
		return json_util_fail(err, errlen,
				      "field 'trees[%d].threshold': %" PRIu32 " is more "
				      "than the %" PRIu32 " subtree_workers",
				      i, e->threshold, e->subtree_workers);
	if (e->threshold != 0 && e->threshold < e->subtree_workers && tb->cset_blocks == 0)
		return json_util_fail(err, errlen,
				      "field 'trees[%d].threshold': a partial reduce "
				      "(%" PRIu32 " of %" PRIu32 ") needs contributor sets "
				      "(cset_blocks >= 1)",
				      i, e->threshold, e->subtree_workers);
	if (e->grace_ms != 0 && (e->threshold == 0 || e->threshold >= e->subtree_workers))
		return json_util_fail(err, errlen,
				      "field 'trees[%d].grace_ms': a grace window needs a "
				      "partial reduce (a threshold below the %" PRIu32
				      " subtree_workers)",
				      i, e->subtree_workers);
	if (e->grace_adaptive && e->grace_ms == 0)
		return json_util_fail(err, errlen,
				      "field 'trees[%d].grace_adaptive': an adaptive window "
				      "needs its bound, grace_ms",
				      i);
	for (int j = 0; tb->cset_blocks != 0 && j < e->n_workers; j++)
		if (e->workers[j].id >= 256u * tb->cset_blocks)
			return json_util_fail(err, errlen,
					      "field 'trees[%d].workers[%d].id': %u "
					      "is outside the contributor set of %u blocks (ids "
					      "below %u)",
					      i, j, e->workers[j].id, tb->cset_blocks,
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
			return json_util_fail(err, errlen,
					      "field 'trees[%d].workers': %d workers, "
					      "trees[0] has %d (every tree lists the same local "
					      "workers)",
					      i, e->n_workers, e0->n_workers);
		for (int k = 0; k < e->n_workers; k++) {
			const struct table_worker *a = &e->workers[k], *b = &e0->workers[k];

			if (a->id != b->id || a->ipv4 != b->ipv4 || a->port != b->port)
				return json_util_fail(
					err, errlen,
					"field 'trees[%d].workers[%d]': "
					"differs from trees[0].workers[%d] (every tree "
					"lists the same local workers)",
					i, k, k);
		}
	}
	for (int k = 0; k < e0->n_workers; k++)
		for (int j = 0; j < k; j++)
			if (e0->workers[j].ipv4 == e0->workers[k].ipv4 &&
			    e0->workers[j].port == e0->workers[k].port)
				return json_util_fail(err, errlen,
						      "field 'trees[0].workers[%d].port': "
						      "%s:%u is also workers[%d]",
						      k, table_ipv4_format(e0->workers[k].ipv4, ip),
						      e0->workers[k].port, j);
	return 0;
}

/* A chunk range of the table, its own tree's or a shard's, for check_ranges(). */
struct range {
	uint32_t first, count;
	int tree;     /* index in trees[], or -1 for a shard's */
	int shard, k; /* shards[shard].trees[k] */
};

/* The field path of range r ("trees[2]", "shards[0].trees[1]"). */
static const char *
range_path(const struct range *r, char *buf, size_t len)
{
	if (r->tree >= 0)
		snprintf(buf, len, "trees[%d]", r->tree);
	else
		snprintf(buf, len, "shards[%d].trees[%d]", r->shard, r->k);
	return buf;
}

/* The ranges of the trees and of the shards' trees disjoint; covering [0, n_chunks) when
 * the gateway has local workers (they contribute every chunk: here, or to the gateway of
 * its shard). */
static int
check_ranges(const struct table *tb, uint64_t n_chunks, char *err, size_t errlen)
{
	struct range *r;
	int n = 0, rc = 0;
	uint64_t next = 0;
	bool cover = tb->n_trees > 0 && tb->trees[0].n_workers > 0;
	char pa[48], pb[48];

	r = malloc(sizeof(*r) * TABLE_TREES_MAX * (TABLE_SHARDS_MAX + 1));
	if (r == NULL)
		return json_util_fail(err, errlen, "out of memory");
	for (int i = 0; i < tb->n_trees; i++)
		r[n++] =
			(struct range){tb->trees[i].chunk_first, tb->trees[i].chunk_count, i, 0, 0};
	for (int j = 0; j < tb->n_shards; j++)
		for (int k = 0; k < tb->shards[j].n_trees; k++)
			r[n++] = (struct range){tb->shards[j].trees[k].chunk_first,
						tb->shards[j].trees[k].chunk_count, -1, j, k};
	/* Insertion sort by first chunk: at most 16 x 256 ranges, already ascending within
	 * each gateway. */
	for (int i = 1; i < n; i++) {
		struct range x = r[i];
		int j = i;

		while (j > 0 && r[j - 1].first > x.first) {
			r[j] = r[j - 1];
			j--;
		}
		r[j] = x;
	}
	for (int k = 0; k < n && rc == 0; k++) {
		const struct range *e = &r[k];

		if (k > 0 && e->first < next)
			rc = json_util_fail(err, errlen,
					    "field '%s.chunk_first': chunks %" PRIu32 "..%" PRIu64
					    " overlap %s (chunks %" PRIu32 "..%" PRIu64 ")",
					    range_path(e, pa, sizeof(pa)), e->first,
					    (uint64_t)e->first + e->count - 1,
					    range_path(&r[k - 1], pb, sizeof(pb)), r[k - 1].first,
					    (uint64_t)r[k - 1].first + r[k - 1].count - 1);
		else if (cover && e->first > next)
			rc = json_util_fail(err, errlen,
					    "field 'trees': chunks %" PRIu64 "..%" PRIu32
					    " are in no tree, but the gateway's local workers "
					    "contribute every chunk",
					    next, e->first - 1);
		next = (uint64_t)e->first + e->count;
	}
	if (rc == 0 && cover && next < n_chunks)
		rc = json_util_fail(err, errlen,
				    "field 'trees': chunks %" PRIu64 "..%" PRIu64
				    " are in no tree, but the gateway's local workers contribute "
				    "every chunk",
				    next, n_chunks - 1);
	free(r);
	return rc;
}

/* Is tree id `id` one of this table's own trees or of shards[0 .. before_shard - 1], or
 * of shards[before_shard].trees[0 .. before_k - 1]? */
static bool
tree_id_used(const struct table *tb, uint16_t id, int before_shard, int before_k)
{
	for (int i = 0; i < tb->n_trees; i++)
		if (tb->trees[i].id == id)
			return true;
	for (int j = 0; j <= before_shard && j < tb->n_shards; j++)
		for (int k = 0; k < (j < before_shard ? tb->shards[j].n_trees : before_k); k++)
			if (tb->shards[j].trees[k].id == id)
				return true;
	return false;
}

/* shards (docs/TABLES.md): the site's other gateways, each with its trees as the workers
 * see them. */
static int
check_shards(const struct table *tb, uint64_t n_chunks, char *err, size_t errlen)
{
	int total = tb->n_trees;
	char path[48];

	if (tb->n_shards < 0 || tb->n_shards > TABLE_SHARDS_MAX)
		return json_util_fail(err, errlen, "field 'shards': %d entries, at most %d",
				      tb->n_shards, TABLE_SHARDS_MAX);
	if (tb->n_shards > 0 && (tb->n_trees == 0 || tb->trees[0].n_workers == 0))
		return json_util_fail(err, errlen,
				      "field 'shards': only a gateway with local "
				      "workers names the other gateways of its site");
	for (int j = 0; j < tb->n_shards; j++) {
		const struct table_shard *sh = &tb->shards[j];
		int rc;

		snprintf(path, sizeof(path), "shards[%d].gateway", j);
		rc = table_check_gw(&sh->gw, path, err, errlen);
		if (rc != 0)
			return rc;
		if (sh->gw.id == tb->gw.id || sh->gw.ipv4 == tb->gw.ipv4)
			return json_util_fail(err, errlen,
					      "field 'shards[%d].gateway': the id or "
					      "address of this gateway",
					      j);
		for (int k = 0; k < j; k++)
			if (tb->shards[k].gw.id == sh->gw.id ||
			    tb->shards[k].gw.ipv4 == sh->gw.ipv4)
				return json_util_fail(err, errlen,
						      "field 'shards[%d].gateway': the "
						      "id or address of shards[%d]",
						      j, k);
		for (int k = 0; k < tb->trees[0].n_workers; k++)
			if (tb->trees[0].workers[k].id == sh->gw.id)
				return json_util_fail(err, errlen,
						      "field 'shards[%d].gateway.id': %u "
						      "is a local worker",
						      j, sh->gw.id);
		if (sh->n_trees < 1 || sh->n_trees > TABLE_TREES_MAX)
			return json_util_fail(err, errlen,
					      "field 'shards[%d].trees': must hold 1 to "
					      "%d trees",
					      j, TABLE_TREES_MAX);
		total += sh->n_trees;
		if (total > TABLE_TREES_MAX)
			return json_util_fail(err, errlen,
					      "field 'shards[%d].trees': this gateway "
					      "and its shards carry more than %d trees",
					      j, TABLE_TREES_MAX);
		for (int k = 0; k < sh->n_trees; k++) {
			const struct table_shard_tree *t = &sh->trees[k];

			if (k > 0 && t->id <= sh->trees[k - 1].id)
				return json_util_fail(err, errlen,
						      "field 'shards[%d].trees[%d].id': "
						      "ids must be unique and ascending (%u after "
						      "%u)",
						      j, k, t->id, sh->trees[k - 1].id);
			if (tree_id_used(tb, t->id, j, k))
				return json_util_fail(err, errlen,
						      "field 'shards[%d].trees[%d].id': "
						      "tree %u is also a tree of this table",
						      j, k, t->id);
			if (t->chunk_count == 0 ||
			    (uint64_t)t->chunk_first + t->chunk_count > n_chunks)
				return json_util_fail(
					err, errlen,
					"field 'shards[%d].trees[%d]."
					"chunk_count': chunks %" PRIu32 " + %" PRIu32
					" must be at least one and end inside the %" PRIu64
					" chunks",
					j, k, t->chunk_first, t->chunk_count, n_chunks);
			if (!is_pow2(t->slots) || t->slots > tb->limits.max_slots)
				return json_util_fail(err, errlen,
						      "field 'shards[%d].trees[%d].slots': "
						      "%" PRIu32
						      " is not a power of two in [1, %" PRIu32 "]",
						      j, k, t->slots, tb->limits.max_slots);
			if (t->window > t->slots)
				return json_util_fail(err, errlen,
						      "field 'shards[%d].trees[%d]."
						      "window': %" PRIu32
						      " is more than its %" PRIu32 " slots",
						      j, k, t->window, t->slots);
		}
	}
	return 0;
}

/* Protected links (docs/TABLES.md): one per neighbour gateway, ascending, known AEADs. */
static int
check_seals(const struct table *tb, char *err, size_t errlen)
{
	if (tb->n_seals < 0 || tb->n_seals > TABLE_SEALS_MAX)
		return json_util_fail(err, errlen, "field 'sealed': %d entries, limit %d",
				      tb->n_seals, TABLE_SEALS_MAX);
	for (int i = 0; i < tb->n_seals; i++) {
		const struct table_seal *sl = &tb->seals[i];

		if (i > 0 && sl->peer <= tb->seals[i - 1].peer)
			return json_util_fail(err, errlen,
					      "field 'sealed[%d].peer': peers must be "
					      "ascending and unique (%u after %u)",
					      i, sl->peer, tb->seals[i - 1].peer);
		if (!table_is_neighbour(tb, sl->peer))
			return json_util_fail(err, errlen,
					      "field 'sealed[%d].peer': gateway %u is "
					      "no parent, child, `from` or `to` of this table",
					      i, sl->peer);
		if (sl->key_id == 0)
			return json_util_fail(err, errlen,
					      "field 'sealed[%d].key_id': must be in "
					      "[1, %" PRIu32 "]",
					      i, UINT32_MAX);
		if (table_aead_key_len(sl->aead) == 0)
			return json_util_fail(err, errlen, "field 'sealed[%d].aead': not an AEAD",
					      i);
	}
	return 0;
}

int
table_check_revision(const struct table *tb, unsigned int revision, char *err, size_t errlen)
{
	uint32_t cap = revision_chunk_bytes_max(revision, TABLE_CHUNK_BYTES_MAX);
	unsigned int gran = table_dtype_granule(tb->dtype);
	uint64_t max_elems;

	if (gran == 0 || cap == TABLE_CHUNK_BYTES_MAX)
		return 0;
	/* The text a gateway of that revision gives: its own cap, from before 1.14. */
	max_elems = cap / table_dtype_unit_bytes(tb->dtype) * gran;
	if (tb->chunk_elements > max_elems)
		return json_util_fail(err, errlen,
				      "field 'chunk_elements': must be in [1, %" PRIu64
				      "] for %s (%u bytes per chunk at most)",
				      max_elems, table_dtype_name(tb->dtype), cap);
	if (tb->lan_dtype != 0 && table_dtype_bytes(tb->lan_dtype, tb->chunk_elements) > cap)
		return json_util_fail(err, errlen,
				      "field 'chunk_elements': %" PRIu32 " "
				      "elements of the lan_dtype %s exceed %u bytes per chunk",
				      tb->chunk_elements, table_dtype_name(tb->lan_dtype), cap);
	return 0;
}

int
table_validate(const struct table *tb, char *err, size_t errlen)
{
	const struct table_limits *lim = &tb->limits;
	unsigned int gran = table_dtype_granule(tb->dtype);
	uint64_t max_elems;
	uint64_t n_chunks;
	int rc;

	rc = table_check_gw(&tb->gw, "gateway", err, errlen);
	if (rc != 0)
		return rc;
	if (gran == 0)
		return json_util_fail(err, errlen,
				      "field 'dtype': not a dtype (fp32, fp16, bf16, "
				      "mxint8, mxfp8, mxfp4)");
	if (tb->elements == 0 || tb->elements > INT64_MAX)
		return json_util_fail(err, errlen, "field 'elements': must be in [1, %" PRId64 "]",
				      INT64_MAX);
	max_elems = TABLE_CHUNK_BYTES_MAX / table_dtype_unit_bytes(tb->dtype) * gran;
	if (tb->chunk_elements == 0 || tb->chunk_elements > max_elems)
		return json_util_fail(err, errlen,
				      "field 'chunk_elements': must be in [1, %" PRIu64
				      "] for %s (%u bytes per chunk at most: an IP MTU of %u "
				      "less %u bytes of headers)",
				      max_elems, table_dtype_name(tb->dtype), TABLE_CHUNK_BYTES_MAX,
				      WIRE_MTU_MAX, WIRE_MTU_OVERHEAD);
	/* MX: every chunk, the last one too, is a whole number of blocks. */
	if (tb->chunk_elements % gran != 0)
		return json_util_fail(err, errlen,
				      "field 'chunk_elements': %" PRIu32 " is not a "
				      "whole number of %s blocks of %u elements",
				      tb->chunk_elements, table_dtype_name(tb->dtype), gran);
	if (tb->elements % gran != 0)
		return json_util_fail(err, errlen,
				      "field 'elements': %" PRIu64 " is not a whole "
				      "number of %s blocks of %u elements (the last chunk would "
				      "not be)",
				      tb->elements, table_dtype_name(tb->dtype), gran);
	if (tb->lan_dtype != 0) {
		/* A wider LAN hop for a narrow WAN dtype: the gateway's fp32 accumulator takes
		 * either (docs/TABLES.md, "lan_dtype"). */
		if (tb->lan_dtype != TABLE_DTYPE_FP32 && tb->lan_dtype != TABLE_DTYPE_BF16 &&
		    tb->lan_dtype != tb->dtype)
			return json_util_fail(err, errlen,
					      "field 'lan_dtype': must be fp32 or bf16 "
					      "(or the dtype)");
		if (tb->lan_dtype != tb->dtype && table_dtype_granule(tb->dtype) == 1)
			return json_util_fail(
				err, errlen,
				"field 'lan_dtype': %s differs from the "
				"dtype %s, which is no MX dtype (only an MX job sends "
				"its LAN hop wider)",
				table_dtype_name(tb->lan_dtype), table_dtype_name(tb->dtype));
		if (tb->lan_dtype != tb->dtype && tb->n_streams > 0)
			return json_util_fail(err, errlen,
					      "field 'lan_dtype': a job with multicast "
					      "streams has one dtype on every hop");
		if (table_dtype_bytes(tb->lan_dtype, tb->chunk_elements) > TABLE_CHUNK_BYTES_MAX)
			return json_util_fail(
				err, errlen,
				"field 'chunk_elements': %" PRIu32 " "
				"elements of the lan_dtype %s exceed %u bytes per chunk",
				tb->chunk_elements, table_dtype_name(tb->lan_dtype),
				TABLE_CHUNK_BYTES_MAX);
	}
	if (tb->cset_blocks > TABLE_CSET_BLOCKS_MAX)
		return json_util_fail(err, errlen, "field 'cset_blocks': %u is not in [0, %d]",
				      tb->cset_blocks, TABLE_CSET_BLOCKS_MAX);
	/* With its contributor set (and sealed) a full chunk still fits the largest MTU. */
	if (table_mtu_needed(tb) > WIRE_MTU_MAX)
		return json_util_fail(err, errlen,
				      "field 'chunk_elements': %" PRIu32 " elements of %s with "
				      "a contributor set of %u blocks%s need an IP MTU of %" PRIu64
				      ", more than %u",
				      tb->chunk_elements, table_dtype_name(tb->dtype),
				      tb->cset_blocks, tb->n_seals > 0 ? ", sealed," : "",
				      table_mtu_needed(tb), WIRE_MTU_MAX);
	n_chunks = table_n_chunks(tb);
	if (n_chunks > UINT32_MAX)
		return json_util_fail(err, errlen,
				      "field 'elements': %" PRIu64 " chunks, more than "
				      "the %" PRIu32 " a 32-bit chunk index addresses",
				      n_chunks, UINT32_MAX);
	if (lim->max_trees < 1 || lim->max_trees > TABLE_TREES_MAX)
		return json_util_fail(err, errlen,
				      "field 'limits.max_trees': %" PRIu32 " is not in "
				      "[1, %d]",
				      lim->max_trees, TABLE_TREES_MAX);
	if (lim->max_children > TABLE_CHILDREN_MAX)
		return json_util_fail(err, errlen,
				      "field 'limits.max_children': %" PRIu32 " is not "
				      "in [0, %d]",
				      lim->max_children, TABLE_CHILDREN_MAX);
	if (lim->max_workers > TABLE_WORKERS_MAX)
		return json_util_fail(err, errlen,
				      "field 'limits.max_workers': %" PRIu32 " is not "
				      "in [0, %d]",
				      lim->max_workers, TABLE_WORKERS_MAX);
	if (!is_pow2(lim->max_slots) || lim->max_slots > TABLE_SLOTS_MAX)
		return json_util_fail(err, errlen,
				      "field 'limits.max_slots': %" PRIu32 " is not a "
				      "power of two in [1, %d]",
				      lim->max_slots, TABLE_SLOTS_MAX);
	if (tb->n_trees < 0 || (uint32_t)tb->n_trees > lim->max_trees)
		return json_util_fail(err, errlen,
				      "field 'trees': %d entries exceed "
				      "limits.max_trees %" PRIu32,
				      tb->n_trees, lim->max_trees);
	for (int i = 0; i < tb->n_trees; i++) {
		for (int j = 0; j < i; j++)
			if (tb->trees[j].id == tb->trees[i].id)
				return json_util_fail(err, errlen,
						      "field 'trees[%d].id': duplicate "
						      "tree id %u (also trees[%d])",
						      i, tb->trees[i].id, j);
		if (i > 0 && tb->trees[i].id < tb->trees[i - 1].id)
			return json_util_fail(err, errlen,
					      "field 'trees[%d].id': tree ids must be "
					      "ascending (%u after %u)",
					      i, tb->trees[i].id, tb->trees[i - 1].id);
		rc = check_tree(tb, &tb->trees[i], i, n_chunks, err, errlen);
		if (rc != 0)
			return rc;
	}
	rc = check_workers_same(tb, err, errlen);
	if (rc == 0)
		rc = check_shards(tb, n_chunks, err, errlen);
	if (rc == 0)
		rc = check_ranges(tb, n_chunks, err, errlen);
	if (rc == 0)
		rc = table_check_streams(tb, err, errlen);
	if (rc == 0)
		rc = check_seals(tb, err, errlen);
	return rc;
}
