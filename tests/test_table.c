/* SPDX-License-Identifier: BSD-3-Clause
 *
 * Unit tests for the forwarding tables, lib/table*.c and control/compile/table_compile.c: the compiler (every gateway of a
 * hand-made topology under a two-tree plan, then random topologies, plans and
 * deployments, checked against an independent reading of the plan and for consistency
 * across gateways), the chunk split and slot formula, the strict `georeduce-table/1`
 * codec (round trip; every malformed class rejected with a message naming the field),
 * the example in docs/TABLES.md, and mutation fuzzers (run under ASan in build-san).
 *
 * Environment: GEOREDUCE_FUZZ_SEED sets the seed of the random tests;
 * GEOREDUCE_TEST_QUICK=1 shortens them (sanitizer builds).
 * `test_table --example` prints the example table of docs/TABLES.md and exits.
 */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <CUnit/Basic.h>
#include <CUnit/CUnit.h>
#include <jansson.h>

#include "fuzzutil.h"
#include "testutil.h"
#include "jsonutil.h"
#include "plan.h"
#include "table.h"
#include "table_compile.h"
#include "topo.h"
#include "topo_gen.h"

#define SRC "table.json"
#define IP(a, b, c, d) ((uint32_t)(a) << 24 | (uint32_t)(b) << 16 | (uint32_t)(c) << 8 | (d))

static uint64_t fuzz_seed = 0x7461626c6566757aull; /* "tablefuz" */
static bool quick;

/* ------------------------------------------------------------------------------------ */
/* Helpers                                                                              */
/* ------------------------------------------------------------------------------------ */

/* table_write() into a malloc'd string, NULL on failure. */
static char *
table_text(const struct table *tb)
{
	struct testutil_mem m;
	FILE *f = testutil_mem_open(&m);

	return f == NULL ? NULL : testutil_mem_close(&m, table_write(tb, f));
}

static bool
gw_same(const struct table_gw *a, const struct table_gw *b)
{
	return a->id == b->id && a->ipv4 == b->ipv4 && a->base_port == b->base_port &&
	       a->ports == b->ports;
}

/* Field by field: structs may differ in their padding. */
static bool
worker_same(const struct table_worker *a, const struct table_worker *b)
{
	return a->id == b->id && a->ipv4 == b->ipv4 && a->port == b->port;
}

/* Field-by-field equality; why says where they differ. */
static bool
table_same(const struct table *x, const struct table *y, char *why, size_t n)
{
	if (x->job != y->job || x->epoch != y->epoch || !gw_same(&x->gw, &y->gw) ||
	    x->dtype != y->dtype || x->elements != y->elements ||
	    x->chunk_elements != y->chunk_elements || x->n_trees != y->n_trees ||
	    x->n_streams != y->n_streams || x->cset_blocks != y->cset_blocks ||
	    memcmp(&x->limits, &y->limits, sizeof(x->limits)) != 0) {
		snprintf(why, n, "header differs");
		return false;
	}
	for (int i = 0; i < x->n_trees; i++) {
		const struct table_tree *a = &x->trees[i], *b = &y->trees[i];

		if (a->id != b->id || a->role != b->role || a->has_parent != b->has_parent ||
		    (a->has_parent && !gw_same(&a->parent, &b->parent)) ||
		    a->n_children != b->n_children || a->n_workers != b->n_workers ||
		    a->expected != b->expected || a->subtree_workers != b->subtree_workers ||
		    a->chunk_first != b->chunk_first || a->chunk_count != b->chunk_count ||
		    a->rate_gbps != b->rate_gbps || a->slots != b->slots) {
			snprintf(why, n, "trees[%d] differs", i);
			return false;
		}
		for (int j = 0; j < a->n_children; j++)
			if (!gw_same(&a->children[j], &b->children[j]) ||
			    a->child_workers[j] != b->child_workers[j]) {
				snprintf(why, n, "trees[%d].children[%d] differs", i, j);
				return false;
			}
		if (a->n_below != b->n_below) {
			snprintf(why, n, "trees[%d].n_below differs", i);
			return false;
		}
		for (int k = 0; k < a->n_below; k++)
			if (a->below[k] != b->below[k] || a->below_child[k] != b->below_child[k]) {
				snprintf(why, n, "trees[%d].below[%d] differs", i, k);
				return false;
			}
		for (int j = 0; j < a->n_workers; j++)
			if (!worker_same(&a->workers[j], &b->workers[j])) {
				snprintf(why, n, "trees[%d].workers[%d] differs", i, j);
				return false;
			}
	}
	for (int i = 0; i < x->n_streams; i++) {
		const struct table_stream *a = &x->streams[i], *b = &y->streams[i];
		bool same = a->id == b->id && a->source == b->source &&
			    a->has_from == b->has_from && (!a->has_from || gw_same(&a->from, &b->from)) &&
			    a->n_to == b->n_to && a->n_deliver == b->n_deliver &&
			    a->n_origins == b->n_origins && a->rate_gbps == b->rate_gbps;

		for (int j = 0; same && j < a->n_to; j++)
			same = gw_same(&a->to[j], &b->to[j]);
		for (int j = 0; same && j < a->n_deliver; j++)
			same = worker_same(&a->deliver[j], &b->deliver[j]);
		for (int j = 0; same && j < a->n_origins; j++)
			same = a->origins[j] == b->origins[j];
		if (!same) {
			snprintf(why, n, "streams[%d] differs", i);
			return false;
		}
	}
	if (x->n_seals != y->n_seals ||
	    (x->n_seals > 0 && memcmp(x->seals, y->seals, sizeof(x->seals[0]) *
				      (size_t)x->n_seals) != 0)) {
		snprintf(why, n, "sealed differs");
		return false;
	}
	return true;
}

/* write -> parse -> equal, and the second write gives the same text. */
static void
round_trip_at(int line, const struct table *tb)
{
	char err[TABLE_ERR_MAX] = "", why[128] = "", *text = table_text(tb), *text2 = NULL;
	struct table *back;

	if (!check_at(text != NULL, __FILE__, line, "table_write", "failed"))
		return;
	back = table_parse(text, "rt", err, sizeof(err));
	if (check_at(back != NULL, __FILE__, line, "written table reads back", "%s\n%s", err, text)) {
		check_at(table_same(tb, back, why, sizeof(why)), __FILE__, line, "same table", "%s", why);
		text2 = table_text(back);
		check_at(text2 != NULL && strcmp(text, text2) == 0, __FILE__, line, "same text", "%s\n---\n%s",
			 text, text2 ? text2 : "(null)");
	}
	free(text2);
	table_free(back);
	free(text);
}
#define ROUND_TRIP(tb) round_trip_at(__LINE__, (tb))

/* ------------------------------------------------------------------------------------ */
/* The hand-made scenario                                                               */
/* ------------------------------------------------------------------------------------ */

/*
 *   a[0] --10 ms-- b[1] --5 ms-- c[2] --2 ms-- s[4] (relay)
 *     \                          /
 *      \--1 ms-- r[3] (relay) --1 ms
 *
 * a has 2 workers, b and c one each; every link 10 Gbit/s.
 * Tree 0 (rate 3, share 0.6): root a; b -> a, c -> b, s -> c (s is a relay leaf: pruned).
 * Tree 1 (rate 2, share 0.4): root r; a -> r, c -> r, b -> c; s absent.
 * Tensor: 10000 fp32 elements in 1 KiB chunks: 256 elements, 40 chunks: 24 + 16.
 */
enum { A, B, C, R, S, N5 };

static const struct table_worker wk_a[] = { { 101, IP(10, 1, 1, 1), 5000 },
					    { 102, IP(10, 1, 1, 2), 5000 } };
static const struct table_worker wk_b[] = { { 201, IP(10, 1, 2, 1), 5000 } };
static const struct table_worker wk_c[] = { { 301, IP(10, 1, 3, 1), 5000 } };

struct scen {
	struct topo *t;
	struct plan *p;
	struct table_deploy_node nodes[N5];
	struct table_deploy d;
};

static bool
scen_init(struct scen *sc)
{
	struct topo_node nodes[N5];
	struct topo_link links[] = {
		{ A, B, 10, 10, 10 }, { B, C, 10, 10, 5 }, { C, S, 10, 10, 2 },
		{ A, R, 10, 10, 1 },  { R, C, 10, 10, 1 },
	};
	const int tree0[N5] = { PLAN_ROOT, A, B, PLAN_ABSENT, C };
	const int tree1[N5] = { R, C, R, PLAN_ROOT, PLAN_ABSENT };
	const int workers[N5] = { 2, 1, 1, 0, 0 };
	char err[TOPO_ERR_MAX] = "";

	memset(sc, 0, sizeof(*sc));
	gen_names(nodes, N5);
	for (int v = 0; v < N5; v++) {
		snprintf(nodes[v].id, sizeof(nodes[v].id), "%c", "abcrs"[v]);
		nodes[v].workers = workers[v];
	}
	sc->t = topo_create("t5", N5, nodes, 5, links, err, sizeof(err));
	if (!CHECK(sc->t != NULL, "%s", err))
		return false;
	sc->p = plan_create("mtree", sc->t, 2);
	CU_ASSERT_PTR_NOT_NULL_FATAL(sc->p);
	CU_ASSERT_EQUAL(plan_add_tree(sc->p, A, 3, tree0), 0);
	CU_ASSERT_EQUAL(plan_add_tree(sc->p, R, 2, tree1), 1);
	CU_ASSERT_EQUAL(plan_shares_from_rates(sc->p), 0);
	for (int v = 0; v < N5; v++)
		sc->nodes[v] = (struct table_deploy_node){ .gateway_id = (uint16_t)(v + 1),
							   .ipv4 = IP(10, 0, 0, v + 1),
							   .base_port = 40000, .ports = 4 };
	sc->nodes[A].workers = wk_a;
	sc->nodes[A].n_workers = 2;
	sc->nodes[B].workers = wk_b;
	sc->nodes[B].n_workers = 1;
	sc->nodes[C].workers = wk_c;
	sc->nodes[C].n_workers = 1;
	sc->d = (struct table_deploy){ .n_nodes = N5, .nodes = sc->nodes, .elements = 10000,
				       .dtype = TABLE_DTYPE_FP32, .chunk_bytes = 1024 };
	return true;
}

static void
scen_fini(struct scen *sc)
{
	plan_free(sc->p);
	topo_free(sc->t);
}

static struct table *
compile_at(int line, const struct scen *sc, int node)
{
	char err[TABLE_ERR_MAX] = "";
	struct table *tb = table_compile(sc->t, sc->p, &sc->d, node, 7, 3, err, sizeof(err));

	check_at(tb != NULL, __FILE__, line, "table_compile", "node %d: %s", node, err);
	return tb;
}
#define COMPILE(sc, node) compile_at(__LINE__, (sc), (node))

static void
compile_rejects_at(int line, const struct scen *sc, int node, int code, const char *needle)
{
	char err[TABLE_ERR_MAX] = "";
	struct table *tb;

	errno = 0;
	tb = table_compile(sc->t, sc->p, &sc->d, node, 7, 3, err, sizeof(err));
	if (!check_at(tb == NULL, __FILE__, line, "table_compile rejects", "accepted node %d", node)) {
		table_free(tb);
		return;
	}
	check_at(errno == code, __FILE__, line, "errno", "errno %d, expected %d (%s)", errno, code, err);
	check_at(err[0] != '\0' && strchr(err, '\n') == NULL, __FILE__, line, "one-line message", "'%s'",
		 err);
	check_at(strstr(err, needle) != NULL, __FILE__, line, "message names it", "expected '%s' in '%s'",
		 needle, err);
}
#define COMPILE_REJECTS(sc, node, code, needle) \
	compile_rejects_at(__LINE__, (sc), (node), (code), (needle))

/* An independent statement of the slot formula. */
static uint32_t
ref_slots(double rate_gbps, double hold_ms, double chunk_bytes, uint32_t lo, uint32_t hi)
{
	double bdp_bytes = rate_gbps * 1e9 / 8 * hold_ms / 1e3, chunks = ceil(bdp_bytes / chunk_bytes);
	uint32_t s = 1;

	while (s < chunks && s < hi)
		s *= 2;
	return s < lo ? lo : s > hi ? hi : s;
}

/* ------------------------------------------------------------------------------------ */
/* Cross-gateway consistency against an independent reading of the plan                 */
/* ------------------------------------------------------------------------------------ */

static const struct table_tree *
find_tree(const struct table *tb, int id)
{
	for (int i = 0; i < tb->n_trees; i++)
		if (tb->trees[i].id == id)
			return &tb->trees[i];
	return NULL;
}

static int
node_of_gw(const struct table_deploy *d, uint16_t id)
{
	for (int v = 0; v < d->n_nodes; v++)
		if (d->nodes[v].gateway_id == id)
			return v;
	return -1;
}

static bool
gw_is_node(const struct table_gw *g, const struct table_deploy_node *dn)
{
	return g->id == dn->gateway_id && g->ipv4 == dn->ipv4 && g->base_port == dn->base_port &&
	       g->ports == dn->ports;
}

/* With sets, the workers entry e lists below its child k are those of the child's own
 * entry ce: its local workers and the workers below its children, each once; without,
 * none. */
static bool
below_is_subtree(const struct table_tree *e, int k, const struct table_tree *ce, bool sets)
{
	uint64_t want[65536 / 64] = { 0 };
	int n = 0, got = 0;

	if (!sets)
		return e->n_below == 0 && ce->n_below == 0;
	for (int w = 0; w < ce->n_workers; w++, n++)
		want[ce->workers[w].id / 64] |= 1ull << (ce->workers[w].id % 64);
	for (int b = 0; b < ce->n_below; b++, n++)
		want[ce->below[b] / 64] |= 1ull << (ce->below[b] % 64);
	for (int b = 0; b < e->n_below; b++) {
		if (e->below_child[b] != k)
			continue;
		if (!(want[e->below[b] / 64] >> (e->below[b] % 64) & 1))
			return false;
		got++;
	}
	return got == n;
}

/*
 * tables[v] is the compiled table of node v. Checks, for every tree of the plan that got
 * chunks (counts from table_split_chunks, checked on its own elsewhere):
 *  - node v has an entry iff it is in the tree and its subtree holds a worker (computed
 *    here by fixed-point iteration over the plan, not by walking up like the compiler);
 *  - the entry's role, parent, children (in node order) with the workers below each,
 *    workers, expected, subtree workers, range and rate are what the plan and the
 *    deployment say;
 *  - across gateways: each child's parent lists it as a child and each listed child
 *    names this gateway as its parent and counts the workers below it as the child
 *    does (its subtree_workers); one root per tree, holding every worker; with
 *    contributor sets, the workers listed below a child are the child's own and those
 *    below its children;
 *  - the ranges of the trees partition [0, n_chunks); every table validates.
 * Returns the number of problems (each printed once).
 */
static int
check_union(const struct topo *t, const struct plan *p, const struct table_deploy *d,
	    struct table *const *tables)
{
	uint32_t *first = calloc((size_t)p->n_trees, sizeof(*first));
	uint32_t *count = calloc((size_t)p->n_trees, sizeof(*count));
	uint32_t *below = calloc((size_t)t->n_nodes, sizeof(*below)), total = 0;
	uint64_t n_chunks, covered = 0;
	char err[TABLE_ERR_MAX];
	int bad = 0, esize = (int)table_dtype_unit_bytes(d->dtype);

#define BAD(...)                                           \
	do {                                               \
		if (bad++ < 5) {                           \
			fprintf(stderr, "\n  union: ");    \
			fprintf(stderr, __VA_ARGS__);      \
			fputc('\n', stderr);               \
		}                                          \
	} while (0)

	CU_ASSERT_FATAL(first != NULL && count != NULL && below != NULL);
	n_chunks = (d->elements + d->chunk_bytes / esize - 1) / (d->chunk_bytes / esize);
	CU_ASSERT_EQUAL_FATAL(table_split_chunks(p, (uint32_t)n_chunks, first, count), 0);
	for (int v = 0; v < t->n_nodes; v++)
		total += (uint32_t)d->nodes[v].n_workers;
	for (int v = 0; v < t->n_nodes; v++) {
		if (table_validate(tables[v], err, sizeof(err)) != 0)
			BAD("node %d: %s", v, err);
		if (tables[v]->job != 7 || tables[v]->epoch != 3 ||
		    tables[v]->cset_blocks != d->cset_blocks ||
		    !gw_is_node(&tables[v]->gw, &d->nodes[v]) || tables[v]->dtype != d->dtype ||
		    tables[v]->elements != d->elements ||
		    tables[v]->chunk_elements / table_dtype_granule(d->dtype) * (uint32_t)esize !=
			    d->chunk_bytes ||
		    table_n_chunks(tables[v]) != n_chunks)
			BAD("node %d: header", v);
	}
	for (int i = 0; i < p->n_trees; i++) {
		const int *par = p->trees[i].parent;
		int roots = 0;

		/* below[v]: deployed workers in v's subtree, by fixed-point iteration. */
		for (int v = 0; v < t->n_nodes; v++)
			below[v] = 0;
		for (int it = 0; it <= t->n_nodes; it++)
			for (int v = 0; v < t->n_nodes; v++) {
				uint32_t s = par[v] == PLAN_ABSENT ? 0 : (uint32_t)d->nodes[v].n_workers;

				for (int u = 0; u < t->n_nodes; u++)
					if (par[u] == v)
						s += below[u];
				below[v] = s;
			}
		if (count[i] > 0)
			covered += count[i];
		for (int v = 0; v < t->n_nodes; v++) {
			const struct table_tree *e = find_tree(tables[v], i);
			bool in = count[i] > 0 && par[v] != PLAN_ABSENT && below[v] > 0;
			int kids = 0, j = 0;

			if (e == NULL) {
				if (in)
					BAD("tree %d node %d: missing", i, v);
				continue;
			}
			if (!in) {
				BAD("tree %d node %d: should have no entry", i, v);
				continue;
			}
			if (e->chunk_first != first[i] || e->chunk_count != count[i] ||
			    e->rate_gbps != p->trees[i].rate_gbps)
				BAD("tree %d node %d: range %u+%u rate %g", i, v, e->chunk_first,
				    e->chunk_count, e->rate_gbps);
			if (e->subtree_workers != below[v])
				BAD("tree %d node %d: subtree_workers %u, expected %u", i, v,
				    e->subtree_workers, below[v]);
			if (e->n_workers != d->nodes[v].n_workers)
				BAD("tree %d node %d: %d workers", i, v, e->n_workers);
			for (int k = 0; k < e->n_workers && k < d->nodes[v].n_workers; k++)
				if (!worker_same(&e->workers[k], &d->nodes[v].workers[k]))
					BAD("tree %d node %d: workers[%d]", i, v, k);
			for (int u = 0; u < t->n_nodes; u++) {
				if (par[u] != v || below[u] == 0)
					continue;
				kids++;
				if (j >= e->n_children || !gw_is_node(&e->children[j], &d->nodes[u]))
					BAD("tree %d node %d: children[%d] is not node %d", i, v, j, u);
				else if (e->child_workers[j] != below[u])
					BAD("tree %d node %d: %u workers below children[%d], expected "
					    "%u", i, v, e->child_workers[j], j, below[u]);
				j++;
			}
			if (kids != e->n_children)
				BAD("tree %d node %d: %d children, expected %d", i, v, e->n_children,
				    kids);
			if (e->expected != (uint32_t)(kids + d->nodes[v].n_workers))
				BAD("tree %d node %d: expected %u", i, v, e->expected);
			if (par[v] == PLAN_ROOT) {
				roots++;
				if (e->role != TABLE_ROLE_ROOT || e->has_parent)
					BAD("tree %d node %d: not a root", i, v);
				if (e->subtree_workers != total)
					BAD("tree %d: root holds %u of %u workers", i, e->subtree_workers,
					    total);
			} else {
				enum table_role want = kids > 0 ? TABLE_ROLE_INTERIOR : TABLE_ROLE_LEAF;
				const struct table_tree *pe;
				bool listed = false;
				int pv;

				if (e->role != want || !e->has_parent ||
				    !gw_is_node(&e->parent, &d->nodes[par[v]]))
					BAD("tree %d node %d: role %d or parent", i, v, e->role);
				/* My parent lists me. */
				pv = node_of_gw(d, e->parent.id);
				pe = pv >= 0 ? find_tree(tables[pv], i) : NULL;
				for (int k = 0; pe != NULL && k < pe->n_children; k++)
					listed = listed || gw_same(&pe->children[k], &tables[v]->gw);
				if (!listed)
					BAD("tree %d node %d: its parent does not list it", i, v);
			}
			/* My children name me as their parent. */
			for (int k = 0; k < e->n_children; k++) {
				int cv = node_of_gw(d, e->children[k].id);
				const struct table_tree *ce = cv >= 0 ? find_tree(tables[cv], i) : NULL;

				if (ce == NULL || !ce->has_parent ||
				    !gw_same(&ce->parent, &tables[v]->gw))
					BAD("tree %d node %d: child %d does not name it", i, v, cv);
				else if (e->child_workers[k] != ce->subtree_workers)
					BAD("tree %d node %d: counts %u workers below child %d, which "
					    "has %u", i, v, e->child_workers[k], cv,
					    ce->subtree_workers);
				else if (!below_is_subtree(e, k, ce, d->cset_blocks != 0))
					BAD("tree %d node %d: the workers below child %d are not "
					    "its own and those below it", i, v, cv);
			}
		}
		if (count[i] > 0 && roots != 1)
			BAD("tree %d: %d roots", i, roots);
	}
	/* The trees' ranges partition [0, n_chunks): contiguous in tree order. */
	{
		uint64_t at = 0;

		for (int i = 0; i < p->n_trees; i++) {
			if (first[i] != at)
				BAD("tree %d starts at %u, expected %llu", i, first[i],
				    (unsigned long long)at);
			at += count[i];
		}
		if (at != n_chunks || covered != n_chunks)
			BAD("trees carry %llu of %llu chunks", (unsigned long long)at,
			    (unsigned long long)n_chunks);
	}
#undef BAD
	free(first);
	free(count);
	free(below);
	return bad;
}

/* ------------------------------------------------------------------------------------ */
/* Helpers: names, addresses, formulas                                                  */
/* ------------------------------------------------------------------------------------ */

static void
test_names(void)
{
	char buf[16];
	uint32_t a = 0;

	CU_ASSERT_STRING_EQUAL(table_dtype_name(TABLE_DTYPE_FP32), "fp32");
	CU_ASSERT_STRING_EQUAL(table_dtype_name(TABLE_DTYPE_FP16), "fp16");
	CU_ASSERT_STRING_EQUAL(table_dtype_name(TABLE_DTYPE_BF16), "bf16");
	CU_ASSERT_PTR_NULL(table_dtype_name(0));
	CU_ASSERT_PTR_NULL(table_dtype_name((enum table_dtype)99));
	CU_ASSERT_EQUAL(table_dtype_from_name("bf16"), TABLE_DTYPE_BF16);
	CU_ASSERT_EQUAL(table_dtype_from_name("fp64"), 0);
	CU_ASSERT_EQUAL(table_dtype_from_name(NULL), 0);
	CU_ASSERT_EQUAL(table_dtype_size(TABLE_DTYPE_FP32), 4);
	CU_ASSERT_EQUAL(table_dtype_size(TABLE_DTYPE_FP16), 2);
	CU_ASSERT_EQUAL(table_dtype_size(TABLE_DTYPE_BF16), 2);
	CU_ASSERT_EQUAL(table_dtype_size(0), 0);
	CU_ASSERT_EQUAL(table_dtype_from_name("mxfp4"), TABLE_DTYPE_MXFP4);
	CU_ASSERT_STRING_EQUAL(table_dtype_name(TABLE_DTYPE_MXINT8), "mxint8");
	CU_ASSERT_EQUAL(table_dtype_size(TABLE_DTYPE_MXFP8), 0);
	CU_ASSERT_EQUAL(table_dtype_granule(TABLE_DTYPE_MXFP8), 32);
	CU_ASSERT_EQUAL(table_dtype_granule(TABLE_DTYPE_FP32), 1);
	CU_ASSERT_EQUAL(table_dtype_granule(0), 0);
	CU_ASSERT_EQUAL(table_dtype_unit_bytes(TABLE_DTYPE_MXINT8), 33);
	CU_ASSERT_EQUAL(table_dtype_unit_bytes(TABLE_DTYPE_MXFP4), 17);
	CU_ASSERT_EQUAL(table_dtype_bytes(TABLE_DTYPE_MXFP4, 64), 34);
	CU_ASSERT_EQUAL(table_dtype_bytes(TABLE_DTYPE_MXINT8, 33), 66);
	CU_ASSERT_EQUAL(table_dtype_bytes(TABLE_DTYPE_BF16, 33), 66);
	CU_ASSERT_STRING_EQUAL(table_role_name(TABLE_ROLE_ROOT), "root");
	CU_ASSERT_STRING_EQUAL(table_role_name(TABLE_ROLE_INTERIOR), "interior");
	CU_ASSERT_STRING_EQUAL(table_role_name(TABLE_ROLE_LEAF), "leaf");
	CU_ASSERT_PTR_NULL(table_role_name(0));
	CU_ASSERT_EQUAL(table_role_from_name("leaf"), TABLE_ROLE_LEAF);
	CU_ASSERT_EQUAL(table_role_from_name("Leaf"), 0);

	CU_ASSERT_EQUAL(table_ipv4_parse("10.0.0.1", &a), 0);
	CU_ASSERT_EQUAL(a, IP(10, 0, 0, 1));
	CU_ASSERT_EQUAL(table_ipv4_parse("255.255.255.255", &a), 0);
	CU_ASSERT_EQUAL(a, 0xffffffffu);
	CU_ASSERT_EQUAL(table_ipv4_parse("0.0.0.0", &a), 0);
	CU_ASSERT_EQUAL(a, 0);
	CU_ASSERT_EQUAL(table_ipv4_parse("192.168.100.200", &a), 0);
	CU_ASSERT_STRING_EQUAL(table_ipv4_format(a, buf), "192.168.100.200");
	{
		static const char *const bad[] = {
			"", "1", "1.2.3", "1.2.3.4.5", "1.2.3.256", "01.2.3.4", "1.2.3.00",
			" 1.2.3.4", "1.2.3.4 ", "1..3.4", "1.2.3.", ".1.2.3", "1.2.3.-4", "+1.2.3.4",
			"1.2.3.4x", "0x1.2.3.4", "1234.1.1.1", "1.2.3.1000", "a.b.c.d", "1,2,3,4",
			"1.2.3.4\n",
		};

		for (size_t i = 0; i < sizeof(bad) / sizeof(*bad); i++)
			CHECK(table_ipv4_parse(bad[i], &a) == -EINVAL, "accepted '%s'", bad[i]);
		CU_ASSERT_EQUAL(table_ipv4_parse(NULL, &a), -EINVAL);
	}
	CU_ASSERT(table_ipv4_unicast(IP(10, 0, 0, 1)));
	CU_ASSERT(table_ipv4_unicast(IP(127, 0, 0, 1)));
	CU_ASSERT(table_ipv4_unicast(IP(223, 255, 255, 255)));
	CU_ASSERT(!table_ipv4_unicast(0));
	CU_ASSERT(!table_ipv4_unicast(IP(0, 1, 2, 3)));
	CU_ASSERT(!table_ipv4_unicast(IP(224, 0, 0, 1)));
	CU_ASSERT(!table_ipv4_unicast(IP(240, 0, 0, 1)));
	CU_ASSERT(!table_ipv4_unicast(0xffffffffu));
}

/* The pool of window w under the cap: TABLE_POOL_WINDOWS windows, or as many as fit. */
static uint32_t
ref_pool(uint32_t w, uint32_t cap)
{
	uint32_t s = w;

	while (s < TABLE_POOL_WINDOWS * w && 2 * s <= cap)
		s *= 2;
	return s;
}

static void
test_slots_formula(void)
{
	/* 1 Gbit/s over 8 ms is 1 000 000 bytes: 1000 chunks of 1000 bytes -> 1024. */
	CU_ASSERT_EQUAL(table_slots(1, 8, 1000, 1, 0), 1024);
	/* Exactly a power of two stays: 2 Gbit/s * 64 ms = 16 000 000 bytes = 1024 chunks of
	 * 15625 bytes; a hair more doubles. */
	CU_ASSERT_EQUAL(table_slots(2, 64, 15625, 1, 0), 1024);
	CU_ASSERT_EQUAL(table_slots(2, 64.01, 15625, 1, 0), 2048);
	/* The long fat link of bench-loss: 200 Mbit/s, 100 ms each way plus a LAN: 5 MB in
	 * flight, 3553 chunks of 1408 bytes -> a window of 4096, a pool of four windows. */
	CU_ASSERT_EQUAL(table_slots(0.2, 2 * (100 + 0.05), 1408, 16, 0), 4096);
	CU_ASSERT_EQUAL(ref_pool(4096, TABLE_SLOTS_MAX), 16384);
	CU_ASSERT_EQUAL(ref_pool(4096, 8192), 8192);
	/* The floor: rate 0, no latency. */
	CU_ASSERT_EQUAL(table_slots(0, 10, 1024, 16, 0), 16);
	CU_ASSERT_EQUAL(table_slots(5, 0, 1024, 16, 0), 16);
	CU_ASSERT_EQUAL(table_slots(0, 0, 1024, 0, 0), 1);
	/* The floor rounds up, the cap down, to powers of two. */
	CU_ASSERT_EQUAL(table_slots(0, 0, 1024, 20, 0), 32);
	CU_ASSERT_EQUAL(table_slots(100, 400, 1024, 16, 1000), 512);
	CU_ASSERT_EQUAL(table_slots(100, 400, 1024, 16, 1024), 1024);
	/* The cap: 100 Gbit/s over 400 ms in 1 KiB chunks is about 4.9 M. */
	CU_ASSERT_EQUAL(table_slots(100, 400, 1024, 16, 0), TABLE_SLOTS_MAX);
	CU_ASSERT_EQUAL(table_slots(100, 400, 1024, 16, 1u << 30), TABLE_SLOTS_MAX);
	CU_ASSERT_EQUAL(table_slots(1e300, 1e300, 1024, 16, 4096), 4096);
	/* Floor above the cap: the cap wins. */
	CU_ASSERT_EQUAL(table_slots(1, 1, 1024, 8192, 4096), 4096);
	/* Not numbers: the cap. */
	CU_ASSERT_EQUAL(table_slots(NAN, 10, 1024, 16, 4096), 4096);
	CU_ASSERT_EQUAL(table_slots(1, INFINITY, 1024, 16, 4096), 4096);
	CU_ASSERT_EQUAL(table_slots(-1, 10, 1024, 16, 4096), 4096);
	CU_ASSERT_EQUAL(table_slots(1, 10, 0, 16, 4096), 4096);
	/* Against the reference on a sweep. */
	for (double r = 0.01; r < 200; r *= 1.7)
		for (double h = 0.05; h < 900; h *= 2.3)
			for (uint32_t cb = 2; cb <= 8192; cb *= 4) {
				uint32_t got = table_slots(r, h, cb, 16, 65536),
					 want = ref_slots(r, h, cb, 16, 65536);

				CHECK(got == want, "rate %g hold %g chunk %u: %u, expected %u", r, h, cb,
				      got, want);
			}
}

/* A plan with the given shares (rates equal to the shares) over the scenario topology. */
static struct plan *
plan_shares(const struct topo *t, int n, const double *shares)
{
	const int tree0[N5] = { PLAN_ROOT, A, B, PLAN_ABSENT, C };
	struct plan *p = plan_create("x", t, n);

	CU_ASSERT_PTR_NOT_NULL_FATAL(p);
	for (int i = 0; i < n; i++) {
		CU_ASSERT_EQUAL(plan_add_tree(p, A, 0.1, tree0), i);
		p->trees[i].share = shares[i];
	}
	return p;
}

static void
split_case_at(int line, const struct topo *t, int n, const double *shares, uint32_t chunks,
	      const uint32_t *want)
{
	struct plan *p = plan_shares(t, n, shares);
	uint32_t first[16], count[16], at = 0;

	check_at(table_split_chunks(p, chunks, first, count) == 0, __FILE__, line, "split", "rc");
	for (int i = 0; i < n; i++) {
		check_at(count[i] == want[i], __FILE__, line, "count", "tree %d: %u, expected %u", i, count[i],
			 want[i]);
		check_at(first[i] == at, __FILE__, line, "first", "tree %d: %u, expected %u", i, first[i], at);
		at += count[i];
	}
	plan_free(p);
}
#define SPLIT_CASE(t, n, shares, chunks, ...)                                 \
	do {                                                                  \
		const double sh_[] = shares;                                  \
		const uint32_t want_[] = __VA_ARGS__;                         \
		split_case_at(__LINE__, (t), (n), sh_, (chunks), want_);      \
	} while (0)
#define L(...) { __VA_ARGS__ }

static void
test_split(void)
{
	struct scen sc;
	uint64_t s = fuzz_seed ^ 0x5917;
	unsigned iters = quick ? 2000 : 20000;

	if (!scen_init(&sc))
		return;
	SPLIT_CASE(sc.t, 2, L(0.6, 0.4), 40, { 24, 16 });
	SPLIT_CASE(sc.t, 2, L(0.6, 0.4), 1, { 1, 0 });
	SPLIT_CASE(sc.t, 2, L(0.6, 0.4), 0, { 0, 0 });
	/* Largest remainder, ties to the lower index. */
	SPLIT_CASE(sc.t, 3, L(1.0 / 3, 1.0 / 3, 1.0 / 3), 10, { 4, 3, 3 });
	SPLIT_CASE(sc.t, 3, L(1.0 / 3, 1.0 / 3, 1.0 / 3), 11, { 4, 4, 3 });
	SPLIT_CASE(sc.t, 3, L(0.5, 0.3, 0.2), 7, { 4, 2, 1 }); /* 3.5 2.1 1.4 */
	SPLIT_CASE(sc.t, 3, L(0.45, 0.35, 0.2), 7, { 3, 3, 1 }); /* 3.15 2.45 1.4 */
	/* A tiny share still gets one chunk, taken from the largest. */
	SPLIT_CASE(sc.t, 2, L(0.999, 0.001), 10, { 9, 1 });
	SPLIT_CASE(sc.t, 3, L(0.998, 0.001, 0.001), 3, { 1, 1, 1 });
	/* Not enough chunks for every tree: no minimum. */
	SPLIT_CASE(sc.t, 3, L(0.998, 0.001, 0.001), 2, { 2, 0, 0 });
	/* Share 0: no chunk, ever. */
	SPLIT_CASE(sc.t, 3, L(0.5, 0, 0.5), 3, { 2, 0, 1 });
	SPLIT_CASE(sc.t, 3, L(0, 0, 1), 5, { 0, 0, 5 });
	/* Shares need not sum to exactly 1: normalised. */
	SPLIT_CASE(sc.t, 2, L(3, 1), 8, { 6, 2 });
	/* Large counts. */
	SPLIT_CASE(sc.t, 2, L(0.5, 0.5), UINT32_MAX, { 2147483648u, 2147483647u });
	{
		struct plan *p = plan_shares(sc.t, 2, (const double[]){ 0, 0 });
		uint32_t f[2], c[2];

		CU_ASSERT_EQUAL(table_split_chunks(p, 10, f, c), -EINVAL);
		p->trees[0].share = -0.5;
		p->trees[1].share = 1.5;
		CU_ASSERT_EQUAL(table_split_chunks(p, 10, f, c), -EINVAL);
		p->trees[0].share = NAN;
		CU_ASSERT_EQUAL(table_split_chunks(p, 10, f, c), -EINVAL);
		plan_free(p);
	}
	/* Random: a partition, each count within one of its quota except for the chunks
	 * moved to give every positive share one. */
	for (unsigned it = 0; it < iters; it++) {
		int n = 1 + (int)rnd(&s, 12), positive = 0;
		double sh[12], sum = 0;
		uint32_t chunks = (uint32_t)rnd(&s, it % 2 ? 30 : 100000), f[12], c[12], at = 0;
		struct plan *p;
		bool ok = true;

		for (int i = 0; i < n; i++) {
			sh[i] = rnd(&s, 4) == 0 ? 0 : (double)(1 + rnd(&s, 1000)) / (1 + rnd(&s, 30));
			sum += sh[i];
		}
		if (sum == 0) {
			sh[0] = 1;
			sum = 1;
		}
		for (int i = 0; i < n; i++)
			positive += sh[i] > 0;
		p = plan_shares(sc.t, n, sh);
		CU_ASSERT_EQUAL_FATAL(table_split_chunks(p, chunks, f, c), 0);
		for (int i = 0; i < n; i++) {
			double q = sh[i] / sum * chunks;
			bool lifted = (uint32_t)positive <= chunks && c[i] == 1 && q < 1;

			ok = ok && f[i] == at;
			at += c[i];
			if (sh[i] == 0)
				ok = ok && c[i] == 0;
			else if ((uint32_t)positive <= chunks)
				ok = ok && c[i] >= 1;
			/* Within one of the quota, or lifted to one, or donated (<= n chunks). */
			ok = ok && (fabs(c[i] - q) < 1 + 1e-6 || lifted ||
				    (c[i] < q && q - c[i] < 1 + n));
		}
		ok = ok && at == chunks;
		plan_free(p);
		if (!CHECK(ok, "n %d chunks %u", n, chunks))
			break;
	}
	scen_fini(&sc);
}

/* ------------------------------------------------------------------------------------ */
/* Compiling                                                                            */
/* ------------------------------------------------------------------------------------ */

static void
check_gw_at(int line, const struct table_gw *g, uint16_t id, uint32_t ip)
{
	check_at(g->id == id && g->ipv4 == ip && g->base_port == 40000 && g->ports == 4, __FILE__, line,
		 "gateway", "id %u ip %08x port %u+%u, expected %u %08x", g->id, g->ipv4,
		 g->base_port, g->ports, id, ip);
}


/* The window the slot formula gives (ref), and the pool of four times that within the
 * cap. */
#define CHECK_POOL(e, ref)                                                                 \
	do {                                                                               \
		CU_ASSERT_EQUAL((e)->window, (ref));                                       \
		CU_ASSERT_EQUAL((e)->slots, ref_pool((ref), TABLE_SLOTS_MAX));             \
	} while (0)

#define CHECK_GW(g, id, ip) check_gw_at(__LINE__, (g), (id), (ip))

static void
test_compile_scenario(void)
{
	struct table *tb[N5];
	struct scen sc;
	const struct table_tree *e;

	if (!scen_init(&sc))
		return;
	for (int v = 0; v < N5; v++) {
		tb[v] = COMPILE(&sc, v);
		if (tb[v] == NULL)
			goto out;
	}
	/* Common header. */
	for (int v = 0; v < N5; v++) {
		CU_ASSERT_EQUAL(tb[v]->job, 7);
		CU_ASSERT_EQUAL(tb[v]->epoch, 3);
		CHECK_GW(&tb[v]->gw, (uint16_t)(v + 1), IP(10, 0, 0, v + 1));
		CU_ASSERT_EQUAL(tb[v]->dtype, TABLE_DTYPE_FP32);
		CU_ASSERT_EQUAL(tb[v]->elements, 10000);
		CU_ASSERT_EQUAL(tb[v]->chunk_elements, 256);
		CU_ASSERT_EQUAL(table_n_chunks(tb[v]), 40);
		CU_ASSERT_EQUAL(tb[v]->limits.max_trees, TABLE_TREES_MAX);
		CU_ASSERT_EQUAL(tb[v]->limits.max_children, TABLE_CHILDREN_MAX);
		CU_ASSERT_EQUAL(tb[v]->limits.max_workers, TABLE_WORKERS_MAX);
		CU_ASSERT_EQUAL(tb[v]->limits.max_slots, TABLE_SLOTS_MAX);
	}
	/* a: root of tree 0 (child b, 2 workers), leaf of tree 1 under r. */
	CU_ASSERT_EQUAL_FATAL(tb[A]->n_trees, 2);
	e = &tb[A]->trees[0];
	CU_ASSERT_EQUAL(e->id, 0);
	CU_ASSERT_EQUAL(e->role, TABLE_ROLE_ROOT);
	CU_ASSERT(!e->has_parent);
	CU_ASSERT_EQUAL_FATAL(e->n_children, 1);
	CHECK_GW(&e->children[0], 2, IP(10, 0, 0, 2));
	CU_ASSERT_EQUAL(e->child_workers[0], 2); /* b's 201 and c's 301 */
	CU_ASSERT_EQUAL_FATAL(e->n_workers, 2);
	CU_ASSERT_EQUAL(e->workers[0].id, 101);
	CU_ASSERT_EQUAL(e->workers[1].ipv4, IP(10, 1, 1, 2));
	CU_ASSERT_EQUAL(e->workers[1].port, 5000);
	CU_ASSERT_EQUAL(e->expected, 3);
	CU_ASSERT_EQUAL(e->subtree_workers, 4);
	CU_ASSERT_EQUAL(e->chunk_first, 0);
	CU_ASSERT_EQUAL(e->chunk_count, 24);
	CU_ASSERT_DOUBLE_EQUAL(e->rate_gbps, 3, 0);
	/* hold = 2 * (up 0 + down: c is 15 ms below, plus its LAN 0.05 ms). */
	CHECK_POOL(e, ref_slots(3, 2 * 15.05, 1024, 16, 65536));
	CU_ASSERT_EQUAL(e->window, 16384);
	CU_ASSERT_EQUAL(e->slots, 65536);
	e = &tb[A]->trees[1];
	CU_ASSERT_EQUAL(e->id, 1);
	CU_ASSERT_EQUAL(e->role, TABLE_ROLE_LEAF);
	CU_ASSERT(e->has_parent);
	CHECK_GW(&e->parent, 4, IP(10, 0, 0, 4));
	CU_ASSERT_EQUAL(e->n_children, 0);
	CU_ASSERT_EQUAL(e->n_workers, 2);
	CU_ASSERT_EQUAL(e->expected, 2);
	CU_ASSERT_EQUAL(e->subtree_workers, 2);
	CU_ASSERT_EQUAL(e->chunk_first, 24);
	CU_ASSERT_EQUAL(e->chunk_count, 16);
	CU_ASSERT_DOUBLE_EQUAL(e->rate_gbps, 2, 0);
	/* up: a -> r 1 ms; down: own LAN; but the tree's height (b's LAN, b -> c -> r: 6.05
	 * ms) plus the way back down to a's workers (1.05 ms) is longer than 2 * (up +
	 * down): the slot waits for b's contribution to reach r. */
	CHECK_POOL(e, ref_slots(2, 6.05 + 1 + 0.05, 1024, 16, 65536));
	CU_ASSERT(ref_slots(2, 6.05 + 1 + 0.05, 1024, 16, 65536) >
		  ref_slots(2, 2 * (1 + 0.05), 1024, 16, 65536));

	/* b: interior of tree 0 (parent a, child c), leaf of tree 1 under c. */
	CU_ASSERT_EQUAL_FATAL(tb[B]->n_trees, 2);
	e = &tb[B]->trees[0];
	CU_ASSERT_EQUAL(e->role, TABLE_ROLE_INTERIOR);
	CHECK_GW(&e->parent, 1, IP(10, 0, 0, 1));
	CU_ASSERT_EQUAL_FATAL(e->n_children, 1);
	CHECK_GW(&e->children[0], 3, IP(10, 0, 0, 3));
	CU_ASSERT_EQUAL(e->child_workers[0], 1); /* 301; s below c is pruned */
	CU_ASSERT_EQUAL(e->expected, 2);
	CU_ASSERT_EQUAL(e->subtree_workers, 2);
	CHECK_POOL(e, ref_slots(3, 2 * (10 + 5.05), 1024, 16, 65536));
	e = &tb[B]->trees[1];
	CU_ASSERT_EQUAL(e->role, TABLE_ROLE_LEAF);
	CHECK_GW(&e->parent, 3, IP(10, 0, 0, 3));
	CU_ASSERT_EQUAL(e->expected, 1);
	CU_ASSERT_EQUAL(e->subtree_workers, 1);
	CHECK_POOL(e, ref_slots(2, 2 * (5 + 1 + 0.05), 1024, 16, 65536));

	/* c: leaf of tree 0 (the relay s below it is pruned), interior of tree 1. */
	CU_ASSERT_EQUAL_FATAL(tb[C]->n_trees, 2);
	e = &tb[C]->trees[0];
	CU_ASSERT_EQUAL(e->role, TABLE_ROLE_LEAF);
	CHECK_GW(&e->parent, 2, IP(10, 0, 0, 2));
	CU_ASSERT_EQUAL(e->n_children, 0);
	CU_ASSERT_EQUAL(e->expected, 1);
	CHECK_POOL(e, ref_slots(3, 2 * (15 + 0.05), 1024, 16, 65536));
	e = &tb[C]->trees[1];
	CU_ASSERT_EQUAL(e->role, TABLE_ROLE_INTERIOR);
	CHECK_GW(&e->parent, 4, IP(10, 0, 0, 4));
	CU_ASSERT_EQUAL_FATAL(e->n_children, 1);
	CHECK_GW(&e->children[0], 2, IP(10, 0, 0, 2));
	CU_ASSERT_EQUAL(e->child_workers[0], 1); /* 201 */
	CU_ASSERT_EQUAL(e->expected, 2);
	CU_ASSERT_EQUAL(e->subtree_workers, 2);

	/* r: no workers; root of tree 1 with gateway children a and c only; not in tree 0. */
	CU_ASSERT_EQUAL_FATAL(tb[R]->n_trees, 1);
	e = &tb[R]->trees[0];
	CU_ASSERT_EQUAL(e->id, 1);
	CU_ASSERT_EQUAL(e->role, TABLE_ROLE_ROOT);
	CU_ASSERT(!e->has_parent);
	CU_ASSERT_EQUAL(e->n_workers, 0);
	CU_ASSERT_EQUAL_FATAL(e->n_children, 2);
	CHECK_GW(&e->children[0], 1, IP(10, 0, 0, 1));
	CHECK_GW(&e->children[1], 3, IP(10, 0, 0, 3));
	CU_ASSERT_EQUAL(e->child_workers[0], 2); /* 101 102 */
	CU_ASSERT_EQUAL(e->child_workers[1], 2); /* 301, and 201 through b */
	CU_ASSERT_EQUAL(e->expected, 2);
	CU_ASSERT_EQUAL(e->subtree_workers, 4);
	/* down: b is 1 + 5 ms below r, plus its LAN. */
	CHECK_POOL(e, ref_slots(2, 2 * 6.05, 1024, 16, 65536));
	CU_ASSERT_PTR_EQUAL(table_tree_of_chunk(tb[R], 24), e);
	CU_ASSERT_PTR_EQUAL(table_tree_of_chunk(tb[R], 39), e);
	CU_ASSERT_PTR_NULL(table_tree_of_chunk(tb[R], 23));
	CU_ASSERT_PTR_NULL(table_tree_of_chunk(tb[R], 40));
	CU_ASSERT_EQUAL(table_slot_bytes(tb[R]), (uint64_t)e->slots * 1024);

	/* s: a relay leaf of tree 0 (pruned), absent from tree 1: a valid empty table. */
	CU_ASSERT_EQUAL(tb[S]->n_trees, 0);
	CU_ASSERT_EQUAL(table_slot_bytes(tb[S]), 0);
	CU_ASSERT_PTR_NULL(table_tree_of_chunk(tb[S], 0));

	CU_ASSERT_EQUAL(check_union(sc.t, sc.p, &sc.d, tb), 0);
	for (int v = 0; v < N5; v++)
		ROUND_TRIP(tb[v]);
	for (int v = 0; v < N5; v++)
		table_free(tb[v]);
out:
	scen_fini(&sc);
}

/* The workers below a child gateway, listed only with contributor sets, in the child's
 * entry, ascending. */
#define CHECK_BELOW(e, n, ...)                                                           \
	do {                                                                             \
		static const uint16_t want_[][2] = { __VA_ARGS__ };                      \
		bool ok_ = (e)->n_below == (n);                                          \
                                                                                         \
		for (int k_ = 0; ok_ && k_ < (n); k_++)                                  \
			ok_ = (e)->below_child[k_] == want_[k_][0] &&                    \
			      (e)->below[k_] == want_[k_][1];                            \
		CHECK(ok_, "tree %u: %d workers below the children", (e)->id,           \
		      (e)->n_below);                                                     \
	} while (0)

/* With contributor sets each child gateway lists the workers of its subtree: in tree 0,
 * b (201, and 301 through c) under a and c (301) under b; in tree 1, a (101, 102) and c
 * (301, and 201 through b) under r and b (201) under c. Leaves list none. */
static void
test_compile_below(void)
{
	struct table *tb[N5] = { NULL };
	struct scen sc;

	if (!scen_init(&sc))
		return;
	for (int v = 0; v < N5; v++) {
		tb[v] = COMPILE(&sc, v);
		for (int i = 0; tb[v] != NULL && i < tb[v]->n_trees; i++)
			CU_ASSERT_EQUAL(tb[v]->trees[i].n_below, 0); /* no sets */
		table_free(tb[v]);
		tb[v] = NULL;
	}
	sc.d.cset_blocks = 2; /* ids below 512 */
	for (int v = 0; v < N5; v++) {
		tb[v] = COMPILE(&sc, v);
		if (tb[v] == NULL)
			goto out;
	}
	CHECK_BELOW(&tb[A]->trees[0], 2, { 0, 201 }, { 0, 301 });
	CU_ASSERT_EQUAL(tb[A]->trees[1].n_below, 0);
	CHECK_BELOW(&tb[B]->trees[0], 1, { 0, 301 });
	CU_ASSERT_EQUAL(tb[B]->trees[1].n_below, 0);
	CU_ASSERT_EQUAL(tb[C]->trees[0].n_below, 0);
	CHECK_BELOW(&tb[C]->trees[1], 1, { 0, 201 });
	CHECK_BELOW(&tb[R]->trees[0], 4, { 0, 101 }, { 0, 102 }, { 1, 201 }, { 1, 301 });
	CU_ASSERT_EQUAL(check_union(sc.t, sc.p, &sc.d, tb), 0);
	for (int v = 0; v < N5; v++)
		ROUND_TRIP(tb[v]);
	{
		char *text = table_text(tb[R]);

		CHECK(text != NULL && strstr(text, "\"workers_below\": [\n") != NULL, "%s", text);
		free(text);
	}
out:
	for (int v = 0; v < N5; v++)
		table_free(tb[v]);
	scen_fini(&sc);
}

/* Deployment variants: fp16, slot bounds, a worker site used by no worker of the job,
 * workers at a relay that all trees reach. */
static void
test_compile_variants(void)
{
	struct table *tb[N5];
	struct scen sc;

	if (!scen_init(&sc))
		return;
	/* fp16: twice the elements per chunk, half the chunks. */
	sc.d.dtype = TABLE_DTYPE_FP16;
	tb[A] = COMPILE(&sc, A);
	if (tb[A] != NULL) {
		CU_ASSERT_EQUAL(tb[A]->chunk_elements, 512);
		CU_ASSERT_EQUAL(table_n_chunks(tb[A]), 20);
		CU_ASSERT_EQUAL(tb[A]->trees[0].chunk_count, 12);
		CU_ASSERT_EQUAL(tb[A]->trees[1].chunk_first, 12);
		ROUND_TRIP(tb[A]);
		table_free(tb[A]);
	}
	/* mxint8: chunk_bytes in whole blocks of 33 bytes, 32 elements each. */
	sc.d.dtype = TABLE_DTYPE_MXINT8;
	sc.d.chunk_bytes = 33 * 31;
	sc.d.elements -= sc.d.elements % 32;
	tb[A] = COMPILE(&sc, A);
	if (tb[A] != NULL) {
		CU_ASSERT_EQUAL(tb[A]->chunk_elements, 31 * 32);
		ROUND_TRIP(tb[A]);
		table_free(tb[A]);
	}
	sc.d.elements += 16;    /* half a block more: refused */
	COMPILE_REJECTS(&sc, A, EINVAL, "whole number of mxint8 blocks");
	sc.d.elements -= 16;
	sc.d.chunk_bytes = 1024;
	/* Slot floor and cap from the deployment; the cap is limits.max_slots. */
	sc.d.dtype = TABLE_DTYPE_BF16;
	sc.d.slots_min = 100;
	sc.d.slots_max = 3000;
	tb[R] = COMPILE(&sc, R);
	if (tb[R] != NULL) {
		CU_ASSERT_EQUAL(tb[R]->limits.max_slots, 2048); /* 3000 rounded down */
		CU_ASSERT_EQUAL(tb[R]->trees[0].window, 2048); /* 2955 capped */
		CU_ASSERT_EQUAL(tb[R]->trees[0].slots, 2048);  /* no room for more */
		ROUND_TRIP(tb[R]);
		table_free(tb[R]);
	}
	sc.d.slots_min = 4096;
	sc.d.slots_max = 0;
	sc.t->links[3].latency_ms = 0; /* a - r */
	tb[A] = COMPILE(&sc, A);
	if (tb[A] != NULL) {
		/* hold 6.1 ms (the height 6.05 and a's LAN): 1490 bf16 chunks, below the
		 * floor. */
		CU_ASSERT_EQUAL(tb[A]->trees[1].window, 4096); /* the floor */
		CU_ASSERT_EQUAL(tb[A]->trees[1].slots, 16384); /* four windows */
		table_free(tb[A]);
	}
	sc.t->links[3].latency_ms = 1;
	sc.d.slots_min = 0;
	/* b's site without workers in this job: b becomes a relay. In tree 1 (b -> c) it is
	 * pruned; in tree 0 it is an interior with only the gateway child c. */
	sc.nodes[B].n_workers = 0;
	for (int v = 0; v < N5; v++) {
		tb[v] = COMPILE(&sc, v);
		CU_ASSERT_FATAL(tb[v] != NULL);
	}
	CU_ASSERT_EQUAL(tb[B]->n_trees, 1);
	CU_ASSERT_EQUAL(tb[B]->trees[0].role, TABLE_ROLE_INTERIOR);
	CU_ASSERT_EQUAL(tb[B]->trees[0].expected, 1);
	CU_ASSERT_EQUAL(tb[C]->trees[1].role, TABLE_ROLE_LEAF);
	CU_ASSERT_EQUAL(tb[C]->trees[1].n_children, 0);
	CU_ASSERT_EQUAL(tb[R]->trees[0].subtree_workers, 3);
	CU_ASSERT_EQUAL(check_union(sc.t, sc.p, &sc.d, tb), 0);
	for (int v = 0; v < N5; v++)
		table_free(tb[v]);
	scen_fini(&sc);
}

static void
test_compile_rejects(void)
{
	struct table_worker many[TABLE_WORKERS_MAX + 1], dup[2];
	struct scen sc;

	if (!scen_init(&sc))
		return;
	COMPILE_REJECTS(&sc, -1, EINVAL, "node -1");
	COMPILE_REJECTS(&sc, N5, EINVAL, "node 5");
	CU_ASSERT_PTR_NULL(table_compile(NULL, sc.p, &sc.d, 0, 1, 1, NULL, 0));
	sc.d.n_nodes = 4;
	COMPILE_REJECTS(&sc, A, EINVAL, "deploy.nodes");
	sc.d.n_nodes = N5;
	/* An invalid plan. */
	sc.p->trees[1].share = 0.9;
	COMPILE_REJECTS(&sc, A, EINVAL, "plan: trees[].share");
	sc.p->trees[1].share = 0.4;
	/* A tree that carries chunks at rate 0 (plan_validate allows rate 0). */
	sc.p->trees[1].rate_gbps = 0;
	COMPILE_REJECTS(&sc, A, EINVAL, "trees[1].rate_gbps");
	sc.p->trees[1].rate_gbps = 2;
	/* The tensor. */
	sc.d.dtype = 0;
	COMPILE_REJECTS(&sc, A, EINVAL, "deploy.dtype");
	sc.d.dtype = TABLE_DTYPE_FP32;
	sc.d.chunk_bytes = 1022;
	COMPILE_REJECTS(&sc, A, EINVAL, "deploy.chunk_bytes");
	sc.d.chunk_bytes = TABLE_CHUNK_BYTES_MAX + 4;
	COMPILE_REJECTS(&sc, A, EINVAL, "deploy.chunk_bytes");
	sc.d.chunk_bytes = 0;
	COMPILE_REJECTS(&sc, A, EINVAL, "deploy.chunk_bytes");
	sc.d.chunk_bytes = 4;
	sc.d.elements = 0;
	COMPILE_REJECTS(&sc, A, EINVAL, "deploy.elements");
	sc.d.elements = (uint64_t)UINT32_MAX + 1;
	COMPILE_REJECTS(&sc, A, EINVAL, "deploy.elements");
	sc.d.elements = 10000;
	sc.d.chunk_bytes = 1024;
	sc.d.slots_max = TABLE_SLOTS_MAX * 2;
	COMPILE_REJECTS(&sc, A, EINVAL, "deploy.slots_max");
	sc.d.slots_max = 64;
	sc.d.slots_min = 128;
	COMPILE_REJECTS(&sc, A, EINVAL, "deploy.slots_max");
	sc.d.slots_max = sc.d.slots_min = 0;
	/* Gateways: every node gets the same verdict, whichever node is compiled. */
	sc.nodes[C].gateway_id = 2;
	COMPILE_REJECTS(&sc, S, EINVAL, "deploy.nodes[2] ('c').gateway_id");
	sc.nodes[C].gateway_id = 0;
	COMPILE_REJECTS(&sc, A, EINVAL, "deploy.nodes[2] ('c').gateway_id");
	sc.nodes[C].gateway_id = 0xffff;
	COMPILE_REJECTS(&sc, A, EINVAL, "deploy.nodes[2] ('c').gateway_id");
	sc.nodes[C].gateway_id = 3;
	sc.nodes[R].ipv4 = IP(10, 0, 0, 1);
	COMPILE_REJECTS(&sc, A, EINVAL, "deploy.nodes[3] ('r').ipv4");
	sc.nodes[R].ipv4 = IP(224, 0, 0, 1);
	COMPILE_REJECTS(&sc, A, EINVAL, "deploy.nodes[3] ('r').ipv4");
	sc.nodes[R].ipv4 = IP(10, 0, 0, 4);
	sc.nodes[R].base_port = 65534;
	COMPILE_REJECTS(&sc, A, EINVAL, "deploy.nodes[3] ('r').ports");
	sc.nodes[R].base_port = 40000;
	sc.nodes[R].ports = 0;
	COMPILE_REJECTS(&sc, A, EINVAL, "deploy.nodes[3] ('r').ports");
	sc.nodes[R].ports = 4;
	/* Workers. */
	dup[0] = wk_c[0];
	dup[1] = wk_c[0];
	dup[1].id = 302;
	sc.nodes[C].workers = dup;
	sc.nodes[C].n_workers = 2;
	COMPILE_REJECTS(&sc, A, EINVAL, "deploy.nodes[2] ('c').workers[1]");
	dup[1].port = 5001;
	dup[1].id = 101; /* a's worker */
	COMPILE_REJECTS(&sc, A, EINVAL, "deploy.nodes[2] ('c').workers[1].id");
	dup[1].id = 4; /* r's gateway */
	COMPILE_REJECTS(&sc, A, EINVAL, "deploy.nodes[2] ('c').workers[1].id");
	dup[1].id = 0;
	COMPILE_REJECTS(&sc, A, EINVAL, "deploy.nodes[2] ('c').workers[1].id");
	dup[1].id = 0xffff;
	COMPILE_REJECTS(&sc, A, EINVAL, "deploy.nodes[2] ('c').workers[1].id");
	dup[1].id = 302;
	dup[1].ipv4 = 0;
	COMPILE_REJECTS(&sc, A, EINVAL, "deploy.nodes[2] ('c').workers[1].ipv4");
	dup[1].ipv4 = IP(10, 1, 3, 2);
	dup[1].port = 0;
	COMPILE_REJECTS(&sc, A, EINVAL, "deploy.nodes[2] ('c').workers[1].port");
	dup[1].port = 5000;
	sc.nodes[C].workers = wk_c;
	sc.nodes[C].n_workers = 1;
	/* Workers at a relay that tree 1 does not reach. */
	sc.nodes[S].workers = dup + 1;
	sc.nodes[S].n_workers = 1;
	COMPILE_REJECTS(&sc, A, EINVAL, "deploy.nodes[4] ('s'): has 1 workers but plan trees[1]");
	sc.nodes[S].n_workers = 0;
	/* Over the table limits. */
	for (int k = 0; k <= TABLE_WORKERS_MAX; k++)
		many[k] = (struct table_worker){ (uint16_t)(1000 + k), IP(10, 2, 0, 1),
						 (uint16_t)(2000 + k) };
	sc.nodes[B].workers = many;
	sc.nodes[B].n_workers = TABLE_WORKERS_MAX + 1;
	COMPILE_REJECTS(&sc, A, E2BIG, "deploy.nodes[1] ('b').workers");
	sc.nodes[B].n_workers = TABLE_WORKERS_MAX;
	/* 192 workers + 1 child gateway fit the 256-bit bitmap. */
	{
		struct table *tb = COMPILE(&sc, B);

		if (tb != NULL) {
			CU_ASSERT_EQUAL(tb->trees[0].expected, TABLE_WORKERS_MAX + 1);
			ROUND_TRIP(tb);
			table_free(tb);
		}
	}
	sc.nodes[B].workers = wk_b;
	sc.nodes[B].n_workers = 1;
	/* No workers at all. */
	sc.nodes[A].n_workers = sc.nodes[B].n_workers = sc.nodes[C].n_workers = 0;
	COMPILE_REJECTS(&sc, A, EINVAL, "no workers");
	scen_fini(&sc);
}

/* A star wider than TABLE_CHILDREN_MAX: E2BIG naming the node. */
static void
test_compile_too_many_children(void)
{
	int n = TABLE_CHILDREN_MAX + 2;
	struct topo *t = gen_complete(n, 100, 1);
	struct table_deploy_node *dn = calloc((size_t)n, sizeof(*dn));
	struct table_worker *wk = calloc((size_t)n, sizeof(*wk));
	int *parent = calloc((size_t)n, sizeof(*parent));
	struct table_deploy d;
	char err[TABLE_ERR_MAX] = "";
	struct table *tb;
	struct plan *p;

	CU_ASSERT_FATAL(t != NULL && dn != NULL && wk != NULL && parent != NULL);
	for (int v = 0; v < n; v++) {
		parent[v] = v == 0 ? PLAN_ROOT : 0;
		wk[v] = (struct table_worker){ (uint16_t)(1000 + v), IP(10, 1, v / 256, v % 256), 5000 };
		dn[v] = (struct table_deploy_node){ (uint16_t)(v + 1), IP(10, 0, v / 256, v % 256 + 1),
						    40000, 1, 1, &wk[v], 0, NULL };
	}
	p = plan_create("star", t, 1);
	CU_ASSERT_FATAL(p != NULL);
	CU_ASSERT_EQUAL(plan_add_tree(p, 0, 1, parent), 0);
	p->trees[0].share = 1;
	d = (struct table_deploy){ .n_nodes = n, .nodes = dn, .elements = 1000,
				   .dtype = TABLE_DTYPE_FP32, .chunk_bytes = 64 };
	errno = 0;
	tb = table_compile(t, p, &d, 1, 1, 1, err, sizeof(err));
	CU_ASSERT_PTR_NULL(tb);
	CU_ASSERT_EQUAL(errno, E2BIG);
	CHECK(strstr(err, "node 's0' has 65 child gateways") != NULL, "'%s'", err);
	/* One worker fewer at the edge: exactly at the limit. */
	dn[n - 1].n_workers = 0;
	tb = table_compile(t, p, &d, 0, 1, 1, err, sizeof(err));
	if (CHECK(tb != NULL, "%s", err)) {
		CU_ASSERT_EQUAL(tb->trees[0].n_children, TABLE_CHILDREN_MAX);
		ROUND_TRIP(tb);
	}
	table_free(tb);
	plan_free(p);
	topo_free(t);
	free(dn);
	free(wk);
	free(parent);
}

/* Random topologies, plans and deployments: every gateway's table, checked together. */
static void
test_compile_random(void)
{
	uint64_t s = fuzz_seed ^ 0xc0ffee;
	unsigned iters = quick ? 60 : 400, compiled = 0, empty = 0, relay_entries = 0;

	for (unsigned it = 0; it < iters; it++) {
		int n = 2 + (int)rnd(&s, 11), n_trees = 1 + (int)rnd(&s, 4), wid = 1000;
		struct topo *t = gen_random(rng_next(&s), n, (int)rnd(&s, 2 * n), 50, 100, 60,
					    (int)rnd(&s, 2), 2 + (int)rnd(&s, 3));
		struct table_deploy_node *dn;
		struct table_worker *wk;
		struct table **tables;
		struct table_deploy d;
		struct plan *p;
		int *parent, total = 0, bad;
		bool *in;

		CU_ASSERT_FATAL(t != NULL);
		dn = calloc((size_t)n, sizeof(*dn));
		wk = calloc((size_t)n * 3, sizeof(*wk));
		tables = calloc((size_t)n, sizeof(*tables));
		parent = malloc(sizeof(*parent) * (size_t)n);
		in = malloc(sizeof(*in) * (size_t)n);
		p = plan_create("random", t, n_trees);
		CU_ASSERT_FATAL(dn && wk && tables && parent && in && p);
		for (int i = 0; i < n_trees; i++) {
			int root = (int)rnd(&s, (size_t)n), n_in = 1;

			/* Random spanning tree (Prim with random edges), then drop some relay
			 * leaves (the compiler prunes the others). */
			for (int v = 0; v < n; v++) {
				parent[v] = PLAN_ABSENT;
				in[v] = v == root;
			}
			parent[root] = PLAN_ROOT;
			while (n_in < n) {
				int l = (int)rnd(&s, (size_t)t->n_links);
				const struct topo_link *lk = &t->links[l];

				if (in[lk->a] == in[lk->b])
					continue;
				if (in[lk->a]) {
					parent[lk->b] = lk->a;
					in[lk->b] = true;
				} else {
					parent[lk->a] = lk->b;
					in[lk->a] = true;
				}
				n_in++;
			}
			for (int pass = 0; pass < 3; pass++)
				for (int v = 0; v < n; v++) {
					bool leaf = parent[v] >= 0;

					for (int u = 0; u < n && leaf; u++)
						leaf = parent[u] != v;
					if (leaf && t->nodes[v].workers == 0 && rnd(&s, 2))
						parent[v] = PLAN_ABSENT;
				}
			CU_ASSERT_EQUAL(plan_add_tree(p, root, 0.1 + (double)rnd(&s, 50) / 10, parent),
					i);
		}
		CU_ASSERT_EQUAL(plan_shares_from_rates(p), 0);
		if (n_trees > 1 && rnd(&s, 4) == 0) { /* a tree with no share */
			double rest = 1 - p->trees[0].share;

			for (int i = 1; i < n_trees; i++)
				p->trees[i].share /= rest;
			p->trees[0].share = 0;
		}
		for (int v = 0; v < n; v++) {
			int k = t->nodes[v].workers > 0 && rnd(&s, 5) != 0 ? 1 + (int)rnd(&s, 3) : 0;

			if (v == n - 1 && total == 0 && t->nodes[v].workers > 0)
				k = 1;
			for (int j = 0; j < k; j++)
				wk[v * 3 + j] = (struct table_worker){ (uint16_t)wid++,
								       IP(10, 1, v, j + 1),
								       (uint16_t)(5000 + j) };
			dn[v] = (struct table_deploy_node){ (uint16_t)(7 * v + 3), IP(10, 0, v, 1),
							    (uint16_t)(1024 + rnd(&s, 60000)),
							    (uint16_t)(1 + rnd(&s, 8)), k, &wk[v * 3], 0, NULL };
			total += k;
		}
		if (total == 0) { /* the first worker site gets one */
			for (int v = 0; v < n && total == 0; v++)
				if (t->nodes[v].workers > 0) {
					wk[v * 3] = (struct table_worker){ (uint16_t)wid++, IP(10, 1, v, 1),
									   5000 };
					dn[v].n_workers = total = 1;
				}
		}
		d = (struct table_deploy){ .n_nodes = n, .nodes = dn,
					   .elements = 1 + rnd(&s, it % 3 ? 5000 : 8),
					   .dtype = (enum table_dtype)(1 + rnd(&s, 3)),
					   .cset_blocks = it % 2 == 0 ? 5 : 0 }; /* ids < 1280 */
		d.chunk_bytes = (uint32_t)(table_dtype_size(d.dtype) * (1 + rnd(&s, 64)));
		for (int v = 0; v < n; v++) {
			char err[TABLE_ERR_MAX] = "";

			tables[v] = table_compile(t, p, &d, v, 7, 3, err, sizeof(err));
			if (!CHECK(tables[v] != NULL, "iteration %u node %d: %s", it, v, err))
				goto next;
			compiled++;
			empty += tables[v]->n_trees == 0;
			for (int i = 0; i < tables[v]->n_trees; i++)
				relay_entries += dn[v].n_workers == 0;
		}
		bad = check_union(t, p, &d, tables);
		if (!CHECK(bad == 0, "iteration %u: %d problems", it, bad))
			it = iters;
		for (int v = 0; v < n && it % 8 == 0; v++)
			ROUND_TRIP(tables[v]);
next:
		for (int v = 0; v < n; v++)
			table_free(tables[v]);
		plan_free(p);
		topo_free(t);
		free(dn);
		free(wk);
		free(tables);
		free(parent);
		free(in);
	}
	printf("\n    %u tables (%u empty, %u relay entries) ", compiled, empty, relay_entries);
	CU_ASSERT(empty > 0);
	CU_ASSERT(relay_entries > 0);
}

/* ------------------------------------------------------------------------------------ */
/* The codec                                                                            */
/* ------------------------------------------------------------------------------------ */

static json_t *
tj(const struct table *tb)
{
	json_t *j = table_to_json(tb);

	CU_ASSERT_PTR_NOT_NULL_FATAL(j);
	return j;
}

/* Set (val != NULL) or delete the value at a dotted path ("trees.1.workers.0.port";
 * numbers index arrays). val is stolen. */
static void
jset(json_t *root, const char *path, json_t *val)
{
	char buf[128], *tok, *next, *save = NULL;
	json_t *cur = root;

	snprintf(buf, sizeof(buf), "%s", path);
	tok = strtok_r(buf, ".", &save);
	while ((next = strtok_r(NULL, ".", &save)) != NULL) {
		cur = json_is_array(cur) ? json_array_get(cur, strtoul(tok, NULL, 10)) :
					   json_object_get(cur, tok);
		CU_ASSERT_PTR_NOT_NULL_FATAL(cur);
		tok = next;
	}
	if (json_is_array(cur)) {
		size_t k = strtoul(tok, NULL, 10);

		if (val == NULL)
			json_array_remove(cur, k);
		else if (k == json_array_size(cur))
			json_array_append_new(cur, val);
		else
			json_array_set_new(cur, k, val);
	} else if (val == NULL) {
		json_object_del(cur, tok);
	} else {
		json_object_set_new(cur, tok, val);
	}
}

static json_t *
jat(json_t *root, const char *path)
{
	char buf[128], *tok, *save = NULL;
	json_t *cur = root;

	snprintf(buf, sizeof(buf), "%s", path);
	for (tok = strtok_r(buf, ".", &save); tok != NULL; tok = strtok_r(NULL, ".", &save))
		cur = json_is_array(cur) ? json_array_get(cur, strtoul(tok, NULL, 10)) :
					   json_object_get(cur, tok);
	CU_ASSERT_PTR_NOT_NULL_FATAL(cur);
	return cur;
}

static void
rejects_text_at(int line, const char *text, const char *needle, const char *needle2)
{
	char err[TABLE_ERR_MAX] = "";
	struct table *tb;

	errno = 0;
	tb = table_parse(text, SRC, err, sizeof(err));
	if (!check_at(tb == NULL, __FILE__, line, "table_parse rejects", "accepted:\n%s", text)) {
		table_free(tb);
		return;
	}
	check_at(errno == EINVAL, __FILE__, line, "errno EINVAL", "errno %d", errno);
	check_at(err[0] != '\0' && strchr(err, '\n') == NULL, __FILE__, line, "one-line message", "'%s'",
		 err);
	check_at(strncmp(err, SRC, strlen(SRC)) == 0, __FILE__, line, "message names the source", "'%s'",
		 err);
	check_at(strstr(err, needle) != NULL, __FILE__, line, "message names the field",
		 "expected '%s' in '%s'", needle, err);
	if (needle2 != NULL)
		check_at(strstr(err, needle2) != NULL, __FILE__, line, "message detail",
			 "expected '%s' in '%s'", needle2, err);
}

/* Dump j (decref'd) and expect table_parse to reject it naming needle. */
static void
rejects_json_at(int line, json_t *j, const char *needle, const char *needle2)
{
	char *text = json_dumps(j, JSON_INDENT(2));

	json_decref(j);
	CU_ASSERT_PTR_NOT_NULL_FATAL(text);
	rejects_text_at(line, text, needle, needle2);
	free(text);
}
#define REJECTS(j, n1) rejects_json_at(__LINE__, (j), (n1), NULL)
#define REJECTS2(j, n1, n2) rejects_json_at(__LINE__, (j), (n1), (n2))

/* One edit of the base table's JSON, expected to be rejected naming needle. */
static void
rejects_edit_at(int line, const struct table *tb, const char *path, json_t *val,
		const char *needle, const char *needle2)
{
	json_t *j = tj(tb);

	jset(j, path, val);
	rejects_json_at(line, j, needle, needle2);
}
#define EDIT_REJECTS(tb, path, val, n1) rejects_edit_at(__LINE__, (tb), (path), (val), (n1), NULL)
#define EDIT_REJECTS2(tb, path, val, n1, n2) \
	rejects_edit_at(__LINE__, (tb), (path), (val), (n1), (n2))

static void
accepts_json_at(int line, json_t *j)
{
	char err[TABLE_ERR_MAX] = "", *text = json_dumps(j, JSON_INDENT(2));
	struct table *tb;

	json_decref(j);
	CU_ASSERT_PTR_NOT_NULL_FATAL(text);
	tb = table_parse(text, SRC, err, sizeof(err));
	check_at(tb != NULL, __FILE__, line, "table_parse accepts", "%s\n%s", err, text);
	table_free(tb);
	free(text);
}
#define ACCEPTS(j) accepts_json_at(__LINE__, (j))

/* A table's JSON as text (free it). */
static char *
jdump(const struct table *tb)
{
	json_t *j = table_to_json(tb);
	char *s = j != NULL ? json_dumps(j, 0) : NULL;

	json_decref(j);
	return s;
}

static void
test_parse_rejects(void)
{
	struct table *a, *c, *ps, *rs;
	struct scen sc;
	json_t *j;

	if (!scen_init(&sc))
		return;
	a = COMPILE(&sc, A); /* root of tree 0 (child b, workers 101 102), leaf of tree 1 */
	c = COMPILE(&sc, C); /* leaf of tree 0, interior of tree 1 (child b) */
	sc.d.cset_blocks = 2; /* the same with sets (ids below 512): the children list the
			       * workers below them */
	ps = COMPILE(&sc, A);
	rs = COMPILE(&sc, R); /* root of tree 1: children a (101 102), c (201 301) */
	sc.d.cset_blocks = 0;
	if (a == NULL || c == NULL || ps == NULL || rs == NULL)
		goto out;
	ACCEPTS(tj(a));
	ACCEPTS(tj(c));

	/* Wrong version, missing version. */
	EDIT_REJECTS2(a, "format", json_string("georeduce-table/2"), "field 'format'",
		      "georeduce-table/1");
	EDIT_REJECTS(a, "format", json_string("georeduce-plan/1"), "field 'format'");
	EDIT_REJECTS(a, "format", json_integer(1), "field 'format'");
	EDIT_REJECTS(a, "format", NULL, "field 'format'");

	/* Unknown fields, at every level. */
	EDIT_REJECTS2(a, "comment", json_string("x"), "field 'comment'", "unknown field");
	EDIT_REJECTS2(a, "gateway.mtu", json_integer(1500), "field 'gateway.mtu'", "unknown");
	EDIT_REJECTS2(a, "limits.max_bytes", json_integer(1), "field 'limits.max_bytes'",
		      "unknown");
	EDIT_REJECTS2(a, "trees.1.weight", json_integer(1), "field 'trees[1].weight'", "unknown");
	EDIT_REJECTS2(a, "trees.1.parent.name", json_string("r"), "field 'trees[1].parent.name'",
		      "unknown");
	EDIT_REJECTS2(a, "trees.0.children.0.mac", json_string("x"),
		      "field 'trees[0].children[0].mac'", "unknown");
	EDIT_REJECTS2(a, "trees.0.workers.1.rank", json_integer(1),
		      "field 'trees[0].workers[1].rank'", "unknown");

	/* Missing fields. */
	EDIT_REJECTS2(a, "job", NULL, "field 'job'", "missing");
	EDIT_REJECTS2(a, "limits.max_slots", NULL, "field 'limits.max_slots'", "missing");
	EDIT_REJECTS2(a, "trees.1.slots", NULL, "field 'trees[1].slots'", "missing");
	EDIT_REJECTS2(a, "trees.0.parent", NULL, "field 'trees[0].parent'", "missing");
	EDIT_REJECTS2(a, "trees.0.workers.0.port", NULL, "field 'trees[0].workers[0].port'",
		      "missing");
	EDIT_REJECTS2(a, "gateway.ports", NULL, "field 'gateway.ports'", "missing");

	/* Types and ranges of scalars. */
	EDIT_REJECTS(a, "job", json_integer(-1), "field 'job'");
	EDIT_REJECTS(a, "job", json_integer((json_int_t)UINT32_MAX + 1), "field 'job'");
	EDIT_REJECTS(a, "job", json_string("7"), "field 'job'");
	EDIT_REJECTS(a, "epoch", json_real(3.0), "field 'epoch'");
	EDIT_REJECTS(a, "epoch", json_null(), "field 'epoch'");
	EDIT_REJECTS(a, "dtype", json_string("fp64"), "field 'dtype'");
	EDIT_REJECTS(a, "dtype", json_integer(1), "field 'dtype'");
	EDIT_REJECTS(a, "elements", json_integer(0), "field 'elements'");
	EDIT_REJECTS(a, "chunk_elements", json_integer(0), "field 'chunk_elements'");
	EDIT_REJECTS(a, "chunk_elements", json_integer(2230), "field 'chunk_elements'");
	/* MX: a chunk is a whole number of blocks of 32, the last chunk too. */
	if (a->chunk_elements % 32 == 0) {
		json_int_t whole = (json_int_t)a->chunk_elements * (json_int_t)table_n_chunks(a);
		json_t *j = tj(a);

		jset(j, "dtype", json_string("mxint8"));
		jset(j, "elements", json_integer(whole));
		ACCEPTS(j);
		j = tj(a);
		jset(j, "dtype", json_string("mxfp4"));
		jset(j, "elements", json_integer(whole - 16));
		REJECTS2(j, "field 'elements'", "whole number of mxfp4 blocks");
		j = tj(a);
		jset(j, "dtype", json_string("mxfp8"));
		jset(j, "elements", json_integer(whole));
		jset(j, "chunk_elements", json_integer(a->chunk_elements + 1));
		REJECTS2(j, "field 'chunk_elements'", "whole number of mxfp8 blocks");
		j = tj(a);
		jset(j, "dtype", json_string("mxfp4"));
		jset(j, "chunk_elements", json_integer(16800));  /* 525 blocks: 8925 bytes */
		REJECTS2(j, "field 'chunk_elements'", "8918 bytes per chunk");
		/* lan_dtype: fp32 or bf16 for an MX dtype only, within the chunk bytes too. */
		j = tj(a);
		jset(j, "dtype", json_string("mxint8"));
		jset(j, "elements", json_integer(whole));
		jset(j, "lan_dtype", json_string("fp32"));
		{
			char *text = json_dumps(j, 0), msg[TABLE_ERR_MAX];
			struct table *l = table_parse(text, "lan", msg, sizeof(msg));
			char *back = l != NULL ? jdump(l) : NULL;

			CU_ASSERT_FATAL(l != NULL);
			CU_ASSERT(l->lan_dtype == TABLE_DTYPE_FP32 &&
				  table_lan_dtype(l) == TABLE_DTYPE_FP32);
			CU_ASSERT(back != NULL && strstr(back, "\"lan_dtype\": \"fp32\"") != NULL);
			/* The dtype itself as lan_dtype is no lan_dtype: written without it. */
			l->lan_dtype = TABLE_DTYPE_MXINT8;
			free(back);
			back = jdump(l);
			CU_ASSERT(back != NULL && strstr(back, "lan_dtype") == NULL);
			CU_ASSERT(table_lan_dtype(l) == TABLE_DTYPE_MXINT8);
			free(back);
			free(text);
			table_free(l);
		}
		jset(j, "lan_dtype", json_string("bf16"));
		ACCEPTS(j);
		j = tj(a);
		jset(j, "lan_dtype", json_string("bf16"));
		REJECTS2(j, "field 'lan_dtype'", "no MX dtype");
		j = tj(a);
		jset(j, "dtype", json_string("mxint8"));
		jset(j, "elements", json_integer(whole));
		jset(j, "lan_dtype", json_string("fp16"));
		REJECTS2(j, "field 'lan_dtype'", "fp32 or bf16");
		EDIT_REJECTS(a, "lan_dtype", json_string("fp64"), "field 'lan_dtype'");
		EDIT_REJECTS(a, "lan_dtype", json_integer(1), "field 'lan_dtype'");
		j = tj(a);
		jset(j, "dtype", json_string("mxfp4"));
		jset(j, "elements", json_integer(4480));
		jset(j, "chunk_elements", json_integer(2240));   /* 8960 bytes of fp32 */
		jset(j, "lan_dtype", json_string("fp32"));
		REJECTS2(j, "field 'chunk_elements'", "lan_dtype fp32");
	} else {
		CU_FAIL("the base table's chunks are not whole MX blocks: the MX cases need them");
	}
	EDIT_REJECTS(a, "trees.0.id", json_integer(65536), "field 'trees[0].id'");
	EDIT_REJECTS(a, "trees.0.role", json_string("branch"), "field 'trees[0].role'");
	EDIT_REJECTS(a, "trees.0.rate_gbps", json_string("fast"), "field 'trees[0].rate_gbps'");
	EDIT_REJECTS(a, "trees.0.rate_gbps", json_integer(0), "field 'trees[0].rate_gbps'");
	EDIT_REJECTS(a, "trees.0.rate_gbps", json_real(-1), "field 'trees[0].rate_gbps'");
	EDIT_REJECTS(a, "trees.0.subtree_workers", json_integer(2),
		     "field 'trees[0].subtree_workers'");
	EDIT_REJECTS(a, "trees.0.subtree_workers", json_integer(65535),
		     "field 'trees[0].subtree_workers'");
	EDIT_REJECTS(a, "trees", json_object(), "field 'trees'");
	EDIT_REJECTS(a, "trees.0", json_array(), "field 'trees[0]'");
	EDIT_REJECTS(a, "trees.0.children", json_object(), "field 'trees[0].children'");
	EDIT_REJECTS(a, "trees.0.workers", json_null(), "field 'trees[0].workers'");
	EDIT_REJECTS(a, "trees.1.parent", json_string("r"), "field 'trees[1].parent'");
	EDIT_REJECTS(a, "trees.0.workers.0", json_integer(101), "field 'trees[0].workers[0]'");
	EDIT_REJECTS(a, "gateway", json_null(), "field 'gateway'");
	EDIT_REJECTS(a, "limits", json_array(), "field 'limits'");
	/* Integer fields given as reals, even integral ones. */
	EDIT_REJECTS(a, "trees.0.slots", json_real(16384), "field 'trees[0].slots'");

	/* Bad IPv4 addresses, at every place one appears. */
	EDIT_REJECTS2(a, "gateway.ipv4", json_string("10.0.0"), "field 'gateway.ipv4'", "10.0.0");
	EDIT_REJECTS(a, "gateway.ipv4", json_string("10.0.0.256"), "field 'gateway.ipv4'");
	EDIT_REJECTS(a, "gateway.ipv4", json_string("010.0.0.1"), "field 'gateway.ipv4'");
	EDIT_REJECTS(a, "gateway.ipv4", json_string(" 10.0.0.1"), "field 'gateway.ipv4'");
	EDIT_REJECTS(a, "gateway.ipv4", json_string("10.0.0.1.5"), "field 'gateway.ipv4'");
	EDIT_REJECTS(a, "gateway.ipv4", json_string("::1"), "field 'gateway.ipv4'");
	EDIT_REJECTS(a, "gateway.ipv4", json_string(""), "field 'gateway.ipv4'");
	EDIT_REJECTS(a, "gateway.ipv4", json_integer(167772161), "field 'gateway.ipv4'");
	EDIT_REJECTS2(a, "gateway.ipv4", json_string("0.0.0.0"), "field 'gateway.ipv4'",
		      "unicast");
	EDIT_REJECTS2(a, "trees.1.parent.ipv4", json_string("255.255.255.255"),
		      "field 'trees[1].parent.ipv4'", "unicast");
	EDIT_REJECTS2(a, "trees.0.children.0.ipv4", json_string("239.1.2.3"),
		      "field 'trees[0].children[0].ipv4'", "unicast");
	EDIT_REJECTS(a, "trees.0.workers.1.ipv4", json_string("10.1.1.x"),
		     "field 'trees[0].workers[1].ipv4'");
	EDIT_REJECTS(a, "trees.0.workers.1.ipv4", json_string("10.1.1.2\n"),
		     "field 'trees[0].workers[1].ipv4'");

	/* Ports: 0, past 65535, a steering range past 65535. */
	EDIT_REJECTS(a, "gateway.base_port", json_integer(0), "field 'gateway.base_port'");
	EDIT_REJECTS(a, "gateway.base_port", json_integer(65536), "field 'gateway.base_port'");
	EDIT_REJECTS(a, "gateway.ports", json_integer(0), "field 'gateway.ports'");
	EDIT_REJECTS(a, "gateway.ports", json_integer(TABLE_PORTS_MAX + 1), "field 'gateway.ports'");
	EDIT_REJECTS2(a, "gateway.base_port", json_integer(65534), "field 'gateway.ports'",
		      "past port 65535");
	EDIT_REJECTS(a, "trees.1.parent.base_port", json_integer(0),
		     "field 'trees[1].parent.base_port'");
	EDIT_REJECTS(a, "trees.0.children.0.ports", json_integer(0),
		     "field 'trees[0].children[0].ports'");
	EDIT_REJECTS(a, "trees.0.workers.1.port", json_integer(0),
		     "field 'trees[0].workers[1].port'");
	EDIT_REJECTS(a, "trees.0.workers.1.port", json_integer(-5000),
		     "field 'trees[0].workers[1].port'");

	/* Duplicate ids. */
	EDIT_REJECTS2(a, "trees.1.id", json_integer(0), "field 'trees[1].id'", "duplicate");
	EDIT_REJECTS2(a, "trees.0.workers.1.id", json_integer(101), "field 'trees[0].workers[1].id'",
		      "duplicate id 101");
	EDIT_REJECTS2(a, "trees.0.children.0.id", json_integer(1),
		      "field 'trees[0].children[0].id'", "also 'gateway.id'");
	EDIT_REJECTS2(a, "trees.0.workers.0.id", json_integer(2), "field 'trees[0].workers[0].id'",
		      "also 'trees[0].children[0].id'");
	EDIT_REJECTS2(a, "trees.1.parent.id", json_integer(1), "field 'trees[1].parent.id'",
		      "duplicate id 1");
	EDIT_REJECTS(c, "trees.1.children.0.id", json_integer(4), "field 'trees[1].children[0].id'");
	EDIT_REJECTS(a, "gateway.id", json_integer(0), "field 'gateway.id'");
	EDIT_REJECTS(a, "gateway.id", json_integer(65535), "field 'gateway.id'");
	EDIT_REJECTS(a, "trees.0.workers.0.id", json_integer(65535),
		     "field 'trees[0].workers[0].id'");
	EDIT_REJECTS(a, "trees.1.parent.id", json_integer(0), "field 'trees[1].parent.id'");
	/* Tree ids ascending. */
	j = tj(a);
	jset(j, "trees.0.id", json_integer(5));
	REJECTS2(j, "field 'trees[1].id'", "ascending");
	/* Duplicate addresses. */
	EDIT_REJECTS2(a, "trees.0.children.0.ipv4", json_string("10.0.0.1"),
		      "field 'trees[0].children[0].ipv4'", "gateway");
	EDIT_REJECTS2(a, "trees.1.parent.ipv4", json_string("10.0.0.1"),
		      "field 'trees[1].parent.ipv4'", "gateway");
	j = tj(a);
	for (int i = 0; i < 2; i++) {
		char path[64];

		snprintf(path, sizeof(path), "trees.%d.workers.1.ipv4", i);
		jset(j, path, json_string("10.1.1.1"));
	}
	REJECTS2(j, "field 'trees[0].workers[1].port'", "also workers[0]");
	/* ... but two workers on one host with different ports are fine. */
	j = tj(a);
	for (int i = 0; i < 2; i++) {
		char path[64];

		snprintf(path, sizeof(path), "trees.%d.workers.1.ipv4", i);
		jset(j, path, json_string("10.1.1.1"));
		snprintf(path, sizeof(path), "trees.%d.workers.1.port", i);
		jset(j, path, json_integer(5001));
	}
	ACCEPTS(j);

	/* Chunk ranges: overlap, gap, past the end, empty. */
	EDIT_REJECTS2(a, "trees.1.chunk_first", json_integer(20), "field 'trees[1].chunk_first'",
		      "overlap trees[0]");
	j = tj(a);
	jset(j, "trees.0.chunk_first", json_integer(10)); /* 10..33 */
	jset(j, "trees.1.chunk_first", json_integer(0)); /* 0..15 */
	REJECTS2(j, "field 'trees[0].chunk_first'", "overlap trees[1]");
	j = tj(a);
	jset(j, "trees.1.chunk_first", json_integer(25));
	jset(j, "trees.1.chunk_count", json_integer(15));
	REJECTS2(j, "field 'trees'", "chunks 24..24 are in no tree");
	EDIT_REJECTS2(a, "trees.1.chunk_count", json_integer(15), "field 'trees'",
		      "chunks 39..39 are in no tree");
	EDIT_REJECTS2(a, "trees.1.chunk_count", json_integer(17), "field 'trees[1].chunk_count'",
		      "run past");
	EDIT_REJECTS(a, "trees.1.chunk_count", json_integer(0), "field 'trees[1].chunk_count'");
	EDIT_REJECTS(a, "trees.1.chunk_first", json_integer((json_int_t)UINT32_MAX + 1),
		     "field 'trees[1].chunk_first'");
	/* A relay's ranges need not cover the tensor. */
	{
		struct table *r = COMPILE(&sc, R);

		if (r != NULL) {
			CU_ASSERT_EQUAL(r->trees[0].chunk_first, 24);
			ROUND_TRIP(r);
			EDIT_REJECTS(r, "trees.0.chunk_count", json_integer(17),
				     "field 'trees[0].chunk_count'");
			table_free(r);
		}
	}
	/* Elements that make more chunks than a 32-bit index. */
	j = tj(a);
	jset(j, "elements", json_integer((json_int_t)1 << 40));
	jset(j, "chunk_elements", json_integer(1));
	REJECTS(j, "field 'elements'");

	/* Expected contributions. */
	EDIT_REJECTS2(a, "trees.0.expected", json_integer(2), "field 'trees[0].expected'",
		      "2 workers + 1 children make 3");
	EDIT_REJECTS(a, "trees.1.expected", json_integer(3), "field 'trees[1].expected'");
	j = tj(a);
	jset(j, "trees.0.children.0", NULL);
	REJECTS(j, "field 'trees[0].expected'");

	/* Roles against parent and children. */
	EDIT_REJECTS2(a, "trees.0.role", json_string("leaf"), "field 'trees[0].parent'",
		      "needs a parent");
	EDIT_REJECTS2(a, "trees.1.role", json_string("root"), "field 'trees[1].parent'",
		      "no parent");
	EDIT_REJECTS2(a, "trees.1.role", json_string("interior"), "field 'trees[1].role'",
		      "this one has none");
	EDIT_REJECTS2(c, "trees.1.role", json_string("leaf"), "field 'trees[1].role'",
		      "has 1 (interior)");
	j = tj(a);
	jset(j, "trees.1.parent", json_null());
	REJECTS(j, "field 'trees[1].parent'");
	/* A leaf without workers contributes nothing. */
	j = tj(c);
	jset(j, "trees.0.workers.0", NULL);
	jset(j, "trees.1.workers.0", NULL);
	jset(j, "trees.0.expected", json_integer(0));
	jset(j, "trees.1.expected", json_integer(1));
	REJECTS2(j, "field 'trees[0].expected'", "at least one contribution");

	/* Workers differ between trees. */
	EDIT_REJECTS2(a, "trees.1.workers.0.port", json_integer(6000),
		      "field 'trees[1].workers[0]'", "differs");
	j = tj(a);
	jset(j, "trees.1.workers.1", NULL);
	jset(j, "trees.1.expected", json_integer(1));
	jset(j, "trees.1.subtree_workers", json_integer(1));
	REJECTS2(j, "field 'trees[1].workers'", "trees[0] has 2");

	/* Over the limits: declared limits above the caps, counts above the limits, slots. */
	EDIT_REJECTS(a, "limits.max_trees", json_integer(TABLE_TREES_MAX + 1),
		     "field 'limits.max_trees'");
	EDIT_REJECTS(a, "limits.max_children", json_integer(TABLE_CHILDREN_MAX + 1),
		     "field 'limits.max_children'");
	EDIT_REJECTS2(a, "limits.max_children", json_integer(0), "field 'trees[0].children'",
		      "exceed limits.max_children 0");
	EDIT_REJECTS2(a, "limits.max_workers", json_integer(0), "field 'trees[0].workers'",
		      "exceed limits.max_workers 0");
	EDIT_REJECTS(a, "limits.max_workers", json_integer(TABLE_WORKERS_MAX + 1),
		     "field 'limits.max_workers'");
	EDIT_REJECTS2(a, "limits.max_slots", json_integer(1000), "field 'limits.max_slots'",
		      "power of two");
	EDIT_REJECTS2(a, "limits.max_trees", json_integer(1), "field 'trees'",
		      "exceed limits.max_trees 1");
	EDIT_REJECTS2(a, "limits.max_workers", json_integer(1), "field 'trees[0].workers'",
		      "exceed limits.max_workers 1");
	{
		struct table *r = COMPILE(&sc, R); /* root of tree 1 with children a and c */

		if (r != NULL) {
			EDIT_REJECTS2(r, "limits.max_children", json_integer(1),
				      "field 'trees[0].children'", "exceed limits.max_children 1");
			table_free(r);
		}
	}
	EDIT_REJECTS2(a, "limits.max_slots", json_integer(1024), "field 'trees[0].slots'",
		      "limits.max_slots 1024");
	EDIT_REJECTS2(a, "trees.0.slots", json_integer(3), "field 'trees[0].slots'", "power of two");
	EDIT_REJECTS(a, "trees.0.slots", json_integer(0), "field 'trees[0].slots'");
	EDIT_REJECTS(a, "trees.0.slots", json_integer(TABLE_SLOTS_MAX * 2), "field 'trees[0].slots'");
	/* window: optional, 1 .. slots, an integer. */
	j = tj(a);
	jset(j, "trees.0.window", NULL);
	ACCEPTS(j);
	CU_ASSERT_FATAL(a->n_trees > 1 && a->trees[1].slots < TABLE_SLOTS_MAX);
	EDIT_REJECTS2(a, "trees.1.window", json_integer(a->trees[1].slots + 1),
		      "field 'trees[1].window'", "more than");
	EDIT_REJECTS(a, "trees.0.window", json_integer(0), "field 'trees[0].window'");
	EDIT_REJECTS(a, "trees.0.window", json_real(4.5), "field 'trees[0].window'");
	EDIT_REJECTS(a, "trees.0.window", json_string("16"), "field 'trees[0].window'");
	/* Partial reduce: threshold optional, 1 .. subtree_workers, and below it the job
	 * carries contributor sets (cset_blocks 1 .. 16) covering the local worker ids. */
	{
		uint32_t sub = a->trees[0].subtree_workers;
		char err[TABLE_ERR_MAX] = "", *text;
		struct table *p = NULL, *q = NULL;

		CU_ASSERT_FATAL(sub >= 2);
		j = tj(ps);
		jset(j, "trees.0.threshold", json_integer(sub - 1));
		text = json_dumps(j, 0);
		json_decref(j);
		p = table_parse(text, SRC, err, sizeof(err));
		free(text);
		CHECK(p != NULL, "%s", err);
		if (p != NULL) {
			CU_ASSERT_EQUAL(p->cset_blocks, 2);
			CU_ASSERT_EQUAL(p->trees[0].threshold, sub - 1);
			CU_ASSERT_EQUAL(p->trees[1].threshold, 0);
			j = tj(p);
			text = json_dumps(j, 0);
			json_decref(j);
			q = text != NULL ? table_parse(text, SRC, err, sizeof(err)) : NULL;
			free(text);
			CHECK(q != NULL && q->cset_blocks == 2 && q->trees[0].threshold == sub - 1 &&
				      q->trees[1].threshold == 0,
			      "round trip: %s", err);
			table_free(q);
			table_free(p);
		}
		j = tj(a);
		jset(j, "trees.0.threshold", json_integer(sub));
		ACCEPTS(j); /* every worker: no sets needed */
		EDIT_REJECTS2(a, "trees.0.threshold", json_integer(sub - 1),
			      "field 'trees[0].threshold'", "cset_blocks >= 1");
		j = tj(ps);
		jset(j, "trees.0.threshold", json_integer(sub + 1));
		REJECTS2(j, "field 'trees[0].threshold'", "subtree_workers");
		EDIT_REJECTS(a, "trees.0.threshold", json_integer(0), "field 'trees[0].threshold'");
		/* The grace window (revision 1.7): 1 .. TABLE_GRACE_MS_MAX ms, only with a
		 * partial threshold; grace_adaptive a boolean, only with grace_ms; both
		 * round-trip and are absent from the written table when unset. */
		j = tj(ps);
		jset(j, "trees.0.threshold", json_integer(sub - 1));
		jset(j, "trees.0.grace_ms", json_integer(300));
		jset(j, "trees.0.grace_adaptive", json_true());
		text = json_dumps(j, 0);
		p = table_parse(text, SRC, err, sizeof(err));
		free(text);
		CHECK(p != NULL && p->trees[0].grace_ms == 300 && p->trees[0].grace_adaptive &&
			      p->trees[1].grace_ms == 0 && !p->trees[1].grace_adaptive,
		      "%s", err);
		if (p != NULL) {
			json_t *w = tj(p);

			CU_ASSERT(json_integer_value(jat(w, "trees.0.grace_ms")) == 300);
			CU_ASSERT(json_is_true(jat(w, "trees.0.grace_adaptive")));
			CU_ASSERT(json_object_get(json_array_get(json_object_get(w, "trees"), 1),
						  "grace_ms") == NULL);
			json_decref(w);
			table_free(p);
		}
		jset(j, "trees.0.grace_ms", json_integer(0));
		REJECTS(json_deep_copy(j), "field 'trees[0].grace_ms'");
		jset(j, "trees.0.grace_ms", json_integer(TABLE_GRACE_MS_MAX + 1));
		REJECTS(json_deep_copy(j), "field 'trees[0].grace_ms'");
		jset(j, "trees.0.grace_ms", json_string("auto"));
		REJECTS(json_deep_copy(j), "field 'trees[0].grace_ms'");
		jset(j, "trees.0.grace_ms", json_integer(TABLE_GRACE_MS_MAX));
		jset(j, "trees.0.grace_adaptive", json_integer(1));
		REJECTS(json_deep_copy(j), "field 'trees[0].grace_adaptive'");
		jset(j, "trees.0.grace_adaptive", NULL);
		jset(j, "trees.1.grace_adaptive", json_true());
		REJECTS2(json_deep_copy(j), "field 'trees[1].grace_adaptive'", "grace_ms");
		jset(j, "trees.1.grace_adaptive", NULL);
		jset(j, "trees.1.grace_ms", json_integer(10));
		REJECTS2(json_deep_copy(j), "field 'trees[1].grace_ms'", "partial reduce");
		json_decref(j);
		EDIT_REJECTS2(a, "trees.0.grace_ms", json_integer(10), "field 'trees[0].grace_ms'",
			      "partial reduce");
		EDIT_REJECTS(a, "cset_blocks", json_integer(TABLE_CSET_BLOCKS_MAX + 1),
			     "field 'cset_blocks'");
		EDIT_REJECTS(a, "cset_blocks", json_string("1"), "field 'cset_blocks'");
		j = tj(ps);
		jset(j, "trees.0.workers.0.id", json_integer(512));
		jset(j, "trees.1.workers.0.id", json_integer(512));
		REJECTS2(j, "field 'trees[0].workers[0].id'", "below 512");
	}
	/* The count of the workers below a child gateway (its subtree_workers): on every
	 * child, 1 .. 65534, with the local workers making the entry's subtree_workers;
	 * with sets, as many as the child's workers_below lists; only children have it. */
	j = tj(a);
	CU_ASSERT_EQUAL(json_integer_value(jat(j, "trees.0.children.0.subtree_workers")), 2);
	json_decref(j);
	EDIT_REJECTS2(a, "trees.0.children.0.subtree_workers", NULL,
		      "field 'trees[0].children[0].subtree_workers'", "missing");
	EDIT_REJECTS2(rs, "trees.0.children.1.subtree_workers", NULL,
		      "field 'trees[0].children[1].subtree_workers'", "missing");
	EDIT_REJECTS2(a, "trees.0.children.0.subtree_workers", json_integer(0),
		      "field 'trees[0].children[0].subtree_workers'", "0 is not in [1, 65534]");
	EDIT_REJECTS2(a, "trees.0.children.0.subtree_workers", json_integer(65535),
		      "field 'trees[0].children[0].subtree_workers'", "65535 is not in [1, 65534]");
	EDIT_REJECTS2(a, "trees.0.children.0.subtree_workers", json_integer(-2),
		      "field 'trees[0].children[0].subtree_workers'", "not in [1, 65534]");
	EDIT_REJECTS2(a, "trees.0.children.0.subtree_workers", json_string("2"),
		      "field 'trees[0].children[0].subtree_workers'", "expected an integer");
	EDIT_REJECTS2(a, "trees.0.children.0.subtree_workers", json_real(2),
		      "field 'trees[0].children[0].subtree_workers'", "expected an integer");
	EDIT_REJECTS2(a, "trees.0.children.0.subtree_workers", json_integer(3),
		      "field 'trees[0].subtree_workers'",
		      "4, but 2 local workers and 3 below the child gateways (their "
		      "subtree_workers) make 5");
	EDIT_REJECTS2(a, "trees.0.children.0.subtree_workers", json_integer(1),
		      "field 'trees[0].subtree_workers'",
		      "4, but 2 local workers and 1 below the child gateways");
	EDIT_REJECTS2(c, "trees.1.children.0.subtree_workers", json_integer(1000),
		      "field 'trees[1].subtree_workers'",
		      "2, but 1 local workers and 1000 below the child gateways");
	EDIT_REJECTS2(c, "trees.1.subtree_workers", json_integer(3),
		      "field 'trees[1].subtree_workers'",
		      "3, but 1 local workers and 1 below the child gateways");
	EDIT_REJECTS2(ps, "trees.0.children.0.subtree_workers", json_integer(3),
		      "field 'trees[0].children[0].subtree_workers'",
		      "3, but its workers_below lists 2 workers");
	j = tj(rs); /* the right sum, split wrongly between the children */
	jset(j, "trees.0.children.0.subtree_workers", json_integer(1));
	jset(j, "trees.0.children.1.subtree_workers", json_integer(3));
	REJECTS2(j, "field 'trees[0].children[0].subtree_workers'",
		 "1, but its workers_below lists 2 workers");
	EDIT_REJECTS2(a, "trees.1.parent.subtree_workers", json_integer(4),
		      "field 'trees[1].parent.subtree_workers'", "unknown field");
	EDIT_REJECTS2(a, "gateway.subtree_workers", json_integer(2),
		      "field 'gateway.subtree_workers'", "unknown field");

	/* The workers below a child gateway: with sets, every child lists them (ids of the
	 * set, ascending, each id once in the entry, making subtree_workers with the local
	 * workers); without sets, none does; only children have them. */
	ACCEPTS(tj(ps));
	ACCEPTS(tj(rs));
	EDIT_REJECTS2(a, "trees.0.children.0.workers_below", json_pack("[i, i]", 201, 301),
		      "field 'trees[0].children[0].workers_below'", "only with contributor sets");
	EDIT_REJECTS2(ps, "trees.0.children.0.workers_below", NULL,
		      "field 'trees[0].children[0].workers_below'", "missing");
	EDIT_REJECTS2(rs, "trees.0.children.1.workers_below", NULL,
		      "field 'trees[0].children[1].workers_below'", "missing");
	EDIT_REJECTS2(ps, "trees.0.children.0.workers_below", json_array(),
		      "field 'trees[0].children[0].workers_below'", "expected an array");
	EDIT_REJECTS2(ps, "trees.0.children.0.workers_below", json_integer(201),
		      "field 'trees[0].children[0].workers_below'", "expected an array");
	EDIT_REJECTS2(ps, "trees.0.children.0.workers_below.0", json_integer(0),
		      "field 'trees[0].children[0].workers_below[0]'", "expected a worker id");
	EDIT_REJECTS2(ps, "trees.0.children.0.workers_below.1", json_integer(65535),
		      "field 'trees[0].children[0].workers_below[1]'", "expected a worker id");
	EDIT_REJECTS2(ps, "trees.0.children.0.workers_below.1", json_string("301"),
		      "field 'trees[0].children[0].workers_below[1]'", "expected a worker id");
	EDIT_REJECTS2(ps, "trees.0.children.0.workers_below.1", json_real(301),
		      "field 'trees[0].children[0].workers_below[1]'", "expected a worker id");
	EDIT_REJECTS2(ps, "trees.0.children.0.workers_below.1", json_integer(512),
		      "field 'trees[0].children[0].workers_below[1]'",
		      "outside the contributor set");
	EDIT_REJECTS2(ps, "trees.0.children.0.workers_below.1", json_integer(200),
		      "field 'trees[0].children[0].workers_below[1]'", "ascending (200 after 201)");
	EDIT_REJECTS2(ps, "trees.0.children.0.workers_below.1", json_integer(201),
		      "field 'trees[0].children[0].workers_below[1]'", "ascending (201 after 201)");
	EDIT_REJECTS2(ps, "trees.0.children.0.workers_below.0", json_integer(102),
		      "field 'trees[0].children[0].workers_below[0]'",
		      "duplicate id 102 (also 'trees[0].workers[1].id')");
	EDIT_REJECTS2(ps, "trees.0.children.0.workers_below.0", json_integer(1),
		      "field 'trees[0].children[0].workers_below[0]'", "(also 'gateway.id')");
	EDIT_REJECTS2(ps, "trees.0.children.0.workers_below.0", json_integer(2),
		      "field 'trees[0].children[0].workers_below[0]'",
		      "(also 'trees[0].children[0].id')");
	EDIT_REJECTS2(rs, "trees.0.children.1.workers_below.0", json_integer(102),
		      "field 'trees[0].children[1].workers_below[0]'",
		      "duplicate id 102 (also 'trees[0].children[0].workers_below[1]')");
	EDIT_REJECTS2(ps, "trees.0.children.0.workers_below.2", json_integer(302),
		      "field 'trees[0].children[0].subtree_workers'",
		      "2, but its workers_below lists 3 workers");
	EDIT_REJECTS2(ps, "trees.0.children.0.workers_below.1", NULL,
		      "field 'trees[0].children[0].subtree_workers'",
		      "2, but its workers_below lists 1 workers");
	EDIT_REJECTS2(ps, "trees.1.parent.workers_below", json_pack("[i]", 201),
		      "field 'trees[1].parent.workers_below'", "unknown field");
	EDIT_REJECTS2(ps, "gateway.workers_below", json_pack("[i]", 201),
		      "field 'gateway.workers_below'", "unknown field");
	/* At most 4095 below the children of one entry, refused before allocating. */
	j = tj(rs);
	for (int k = 0; k < 2048; k++) {
		json_array_append_new(jat(j, "trees.0.children.0.workers_below"), json_integer(1));
		json_array_append_new(jat(j, "trees.0.children.1.workers_below"), json_integer(1));
	}
	REJECTS2(j, "field 'trees[0].children[1].workers_below'",
		 "more than 4095 workers below the child gateways");
	/* Arrays longer than the caps are refused before anything is allocated. */
	j = tj(a);
	for (int k = 1; k <= TABLE_CHILDREN_MAX; k++) {
		char ip[16];

		json_array_append_new(jat(j, "trees.0.children"),
				      json_pack("{s:i, s:s, s:i, s:i}", "id", 500 + k, "ipv4",
						table_ipv4_format(IP(10, 9, 0, k), ip), "base_port",
						40000, "ports", 4));
	}
	REJECTS2(j, "field 'trees[0].children'", "65 entries exceed the limit of 64");
	j = tj(a);
	for (int k = 2; k <= TABLE_WORKERS_MAX; k++)
		json_array_append(jat(j, "trees.0.workers"), jat(j, "trees.0.workers.0"));
	REJECTS2(j, "field 'trees[0].workers'", "193 entries exceed the limit of 192");
	j = tj(a);
	for (int k = 2; k <= TABLE_TREES_MAX; k++)
		json_array_append(jat(j, "trees"), jat(j, "trees.1"));
	REJECTS2(j, "field 'trees'", "257 entries exceed the limit of 256");

	/* Not an object; not JSON. */
	rejects_text_at(__LINE__, "[]", "not a JSON object", NULL);
	rejects_text_at(__LINE__, "\"georeduce-table/1\"", SRC ":1:", "invalid JSON");
	rejects_text_at(__LINE__, "", SRC ":", "invalid JSON");
	{
		char err[TABLE_ERR_MAX] = "";

		errno = 0;
		CU_ASSERT_PTR_NULL(table_parse(NULL, NULL, err, sizeof(err)));
		CU_ASSERT_EQUAL(errno, EINVAL);
		CHECK(strstr(err, "<string>") != NULL, "'%s'", err);
	}
out:
	table_free(a);
	table_free(c);
	table_free(ps);
	table_free(rs);
	scen_fini(&sc);
}

/* Bad JSON: the message gives file:line:column. */
/*
 * Multicast streams: gateway c (id 3, worker 301) relays stream 10 of gateway a (id 1,
 * workers 101 102) from r (4) to b (2) and delivers it to 301; it is the source of
 * stream 11 (origin 301) towards r. Also a multicast-only table (no trees).
 */
static json_t *
streams_json(void)
{
	return json_pack("[{s:i, s:i, s:{s:i, s:s, s:i, s:i}, s:[{s:i, s:s, s:i, s:i}],"
			 " s:[{s:i, s:s, s:i}], s:f, s:[i, i]},"
			 " {s:i, s:i, s:n, s:[{s:i, s:s, s:i, s:i}], s:[], s:f, s:[i]}]",
			 "id", 10, "source", 1,
			 "from", "id", 4, "ipv4", "10.0.0.4", "base_port", 40000, "ports", 4,
			 "to", "id", 2, "ipv4", "10.0.0.2", "base_port", 40000, "ports", 4,
			 "deliver", "id", 301, "ipv4", "10.1.3.1", "port", 5000,
			 "rate_gbps", 2.5, "origins", 101, 102,
			 "id", 11, "source", 3, "from",
			 "to", "id", 4, "ipv4", "10.0.0.4", "base_port", 40000, "ports", 4,
			 "deliver", "rate_gbps", 1.5, "origins", 301);
}

/* c's table with the streams above. */
static json_t *
with_streams(const struct table *c)
{
	json_t *j = tj(c);

	jset(j, "streams", streams_json());
	return j;
}

static void
stream_rejects_at(int line, const struct table *c, const char *path, json_t *val,
		  const char *needle, const char *needle2)
{
	json_t *j = with_streams(c);

	jset(j, path, val);
	rejects_json_at(line, j, needle, needle2);
}
#define STREAM_REJECTS(c, path, val, n1, n2) \
	stream_rejects_at(__LINE__, (c), (path), (val), (n1), (n2))

static void
test_streams(void)
{
	char err[TABLE_ERR_MAX] = "", *text = NULL, *plain = NULL;
	struct table *c = NULL, *tb = NULL, *mc = NULL;
	struct scen sc;
	json_t *j;

	if (!scen_init(&sc))
		return;
	c = COMPILE(&sc, C);
	if (c == NULL)
		goto out;
	/* Without streams nothing is written: existing tables are unchanged. */
	plain = table_text(c);
	CU_ASSERT_PTR_NOT_NULL_FATAL(plain);
	CU_ASSERT_PTR_NULL(strstr(plain, "streams"));
	CU_ASSERT_EQUAL(c->n_streams, 0);

	j = with_streams(c);
	text = json_dumps(j, JSON_INDENT(2));
	json_decref(j);
	tb = table_parse(text, SRC, err, sizeof(err));
	if (!CHECK(tb != NULL, "%s", err))
		goto out;
	CU_ASSERT_EQUAL(tb->n_streams, 2);
	CU_ASSERT_EQUAL(tb->streams[0].id, 10);
	CU_ASSERT(tb->streams[0].has_from && tb->streams[0].from.id == 4);
	CU_ASSERT_EQUAL(tb->streams[0].n_to, 1);
	CU_ASSERT_EQUAL(tb->streams[0].to[0].id, 2);
	CU_ASSERT_EQUAL(tb->streams[0].n_deliver, 1);
	CU_ASSERT_EQUAL(tb->streams[0].deliver[0].id, 301);
	CU_ASSERT_EQUAL(tb->streams[0].n_origins, 2);
	CU_ASSERT_EQUAL(tb->streams[0].origins[1], 102);
	CU_ASSERT_DOUBLE_EQUAL(tb->streams[0].rate_gbps, 2.5, 0);
	CU_ASSERT(!tb->streams[1].has_from && tb->streams[1].source == 3);
	CU_ASSERT(table_stream_find(tb, 11) == &tb->streams[1]);
	CU_ASSERT_PTR_NULL(table_stream_find(tb, 12));
	ROUND_TRIP(tb);

	/* A multicast-only table: no trees, no local worker list to check deliver against;
	 * no range needs covering. */
	j = with_streams(c);
	jset(j, "trees", json_array());
	ACCEPTS(j);
	mc = table_create_streams(0, NULL, NULL, 1);
	CU_ASSERT_PTR_NOT_NULL_FATAL(mc);
	mc->job = 9;
	mc->gw = tb->gw;
	mc->dtype = TABLE_DTYPE_FP16;
	mc->elements = 1000;
	mc->chunk_elements = 100;
	mc->limits = tb->limits;
	mc->streams[0] = tb->streams[0];
	CHECK(table_validate(mc, err, sizeof(err)) == 0, "%s", err);
	ROUND_TRIP(mc);
	mc->n_streams = TABLE_STREAMS_MAX + 1;
	CU_ASSERT_EQUAL(table_validate(mc, err, sizeof(err)), -EINVAL);
	CU_ASSERT_PTR_NOT_NULL(strstr(err, "field 'streams'"));
	mc->n_streams = 1;
	errno = 0;
	CU_ASSERT_PTR_NULL(table_create_streams(0, NULL, NULL, TABLE_STREAMS_MAX + 1));
	CU_ASSERT_EQUAL(errno, EINVAL);

	/* Shape. */
	STREAM_REJECTS(c, "streams", json_array(), "field 'streams'", "1 to 64");
	STREAM_REJECTS(c, "streams", json_object(), "field 'streams'", "array");
	STREAM_REJECTS(c, "streams.0.comment", json_string("x"), "field 'streams[0].comment'",
		       "unknown");
	STREAM_REJECTS(c, "streams.0.origins", NULL, "field 'streams[0].origins'", "missing");
	STREAM_REJECTS(c, "streams.1.from", NULL, "field 'streams[1].from'", "missing");
	STREAM_REJECTS(c, "streams.0.id", json_integer(70000), "field 'streams[0].id'", "65535");
	STREAM_REJECTS(c, "streams.0.source", json_integer(0), "field 'streams[0].source'", "[1");
	STREAM_REJECTS(c, "streams.0.rate_gbps", json_string("fast"),
		       "field 'streams[0].rate_gbps'", "number");
	STREAM_REJECTS(c, "streams.0.rate_gbps", json_real(0), "field 'streams[0].rate_gbps'",
		       "> 0");
	STREAM_REJECTS(c, "streams.0.origins", json_pack("[s]", "w"),
		       "field 'streams[0].origins[0]'", "worker id");
	STREAM_REJECTS(c, "streams.0.origins", json_pack("[i]", 0),
		       "field 'streams[0].origins[0]'", "worker id");
	STREAM_REJECTS(c, "streams.0.to.0.ipv4", json_string("224.0.0.1"),
		       "field 'streams[0].to[0].ipv4'", "unicast");
	STREAM_REJECTS(c, "streams.0.deliver.0.port", json_integer(0),
		       "field 'streams[0].deliver[0].port'", "[1");
	/* Consistency. */
	STREAM_REJECTS(c, "streams.1.id", json_integer(10), "field 'streams[1].id'", "ascending");
	STREAM_REJECTS(c, "streams.1.source", json_integer(1), "field 'streams[1].source'",
		       "one stream per sending site");
	STREAM_REJECTS(c, "streams.0.from", json_null(), "field 'streams[0].from'",
		       "another gateway");
	STREAM_REJECTS(c, "streams.1.from", json_pack("{s:i, s:s, s:i, s:i}", "id", 4, "ipv4",
						      "10.0.0.4", "base_port", 40000, "ports", 4),
		       "field 'streams[1].from'", "null at the source");
	STREAM_REJECTS(c, "streams.0.from.id", json_integer(3), "field 'streams[0].from.id'",
		       "this gateway");
	STREAM_REJECTS(c, "streams.0.to.0.id", json_integer(4), "field 'streams[0].to[0].id'",
		       "loop");
	STREAM_REJECTS(c, "streams.0.to.0.id", json_integer(1), "field 'streams[0].to[0].id'",
		       "loop");
	j = with_streams(c);
	json_array_append_new(json_object_get(json_array_get(json_object_get(j, "streams"), 0),
					      "to"),
			      json_pack("{s:i, s:s, s:i, s:i}", "id", 2, "ipv4", "10.0.0.2",
					"base_port", 40000, "ports", 4));
	REJECTS2(j, "field 'streams[0].to[1].id'", "one copy per next hop");
	STREAM_REJECTS(c, "streams.1.to", json_array(), "field 'streams[1].to'", "goes nowhere");
	STREAM_REJECTS(c, "streams.0.deliver.0.id", json_integer(302),
		       "field 'streams[0].deliver[0]'", "not a local worker");
	STREAM_REJECTS(c, "streams.0.deliver.0.id", json_integer(2),
		       "field 'streams[0].deliver[0].id'", "gateway");
	STREAM_REJECTS(c, "streams.0.origins", json_pack("[i, i]", 101, 101),
		       "field 'streams[0].origins[1]'", "duplicate");
	STREAM_REJECTS(c, "streams.0.origins", json_pack("[i]", 4),
		       "field 'streams[0].origins[0]'", "gateway");
	STREAM_REJECTS(c, "streams.0.origins", json_pack("[i]", 301),
		       "field 'streams[0].origins[0]'", "local worker");
	j = with_streams(c);
	jset(j, "limits.max_children", json_integer(1));
	json_array_append_new(json_object_get(json_array_get(json_object_get(j, "streams"), 0),
					      "to"),
			      json_pack("{s:i, s:s, s:i, s:i}", "id", 5, "ipv4", "10.0.0.5",
					"base_port", 40000, "ports", 4));
	REJECTS2(j, "field 'streams[0].to'", "limit");
out:
	free(plain);
	free(text);
	table_free(mc);
	table_free(tb);
	table_free(c);
	scen_fini(&sc);
}

static void
test_parse_invalid_json(void)
{
	char *good, *bad;
	struct table *a;
	struct scen sc;
	size_t len;

	if (!scen_init(&sc))
		return;
	a = COMPILE(&sc, A);
	if (a == NULL)
		goto out;
	good = table_text(a);
	CU_ASSERT_PTR_NOT_NULL_FATAL(good);
	len = strlen(good);
	bad = malloc(len + 64);
	CU_ASSERT_PTR_NOT_NULL_FATAL(bad);
	/* A trailing comma after "job" on line 3. */
	{
		char *at = strstr(good, "\"job\": 7,");

		CU_ASSERT_PTR_NOT_NULL_FATAL(at);
		memcpy(bad, good, (size_t)(at - good) + 9);
		strcpy(bad + (at - good) + 9, ",");
		strcat(bad, at + 9);
		rejects_text_at(__LINE__, bad, SRC ":3:", "invalid JSON");
	}
	/* A duplicate key (the first wins in plain jansson: refused here). */
	{
		char *at = strstr(good, "\"epoch\": 3,");

		memcpy(bad, good, (size_t)(at - good));
		strcpy(bad + (at - good), "\"epoch\": 4, ");
		strcat(bad, at);
		rejects_text_at(__LINE__, bad, SRC ":4:", "duplicate");
	}
	/* Truncated. */
	memcpy(bad, good, len / 2);
	bad[len / 2] = '\0';
	rejects_text_at(__LINE__, bad, SRC ":", "invalid JSON");
	/* Trailing garbage, a NaN, a number out of range, an unterminated string. */
	snprintf(bad, len + 64, "%s}", good);
	rejects_text_at(__LINE__, bad, SRC ":", "invalid JSON");
	rejects_text_at(__LINE__, "{\n  \"format\": NaN\n}", SRC ":2:", "invalid JSON");
	rejects_text_at(__LINE__, "{\"job\": 99999999999999999999}", SRC ":1:", "invalid JSON");
	rejects_text_at(__LINE__, "{\"format\": \"georeduce-", SRC ":1:", "invalid JSON");
	free(bad);
	free(good);
	table_free(a);
out:
	scen_fini(&sc);
}

/* table_create, table_validate on tables built in memory, table_load. */
static void
test_model(void)
{
	const int kids[] = { 1, 0 }, wk[] = { 2, 2 }, too_many[] = { TABLE_CHILDREN_MAX + 1 };
	char err[TABLE_ERR_MAX] = "", path[] = "/tmp/test_table_XXXXXX";
	struct table *tb, *a, *back;
	struct scen sc;
	FILE *f;
	int fd;

	tb = table_create(2, kids, wk);
	CU_ASSERT_PTR_NOT_NULL_FATAL(tb);
	CU_ASSERT_EQUAL(tb->n_trees, 2);
	CU_ASSERT_EQUAL(tb->trees[0].n_children, 1);
	CU_ASSERT_PTR_NOT_NULL(tb->trees[0].children);
	CU_ASSERT_PTR_NULL(tb->trees[1].children);
	CU_ASSERT_PTR_NOT_NULL(tb->trees[0].child_workers);
	CU_ASSERT_EQUAL(tb->trees[0].child_workers[0], 0);
	CU_ASSERT_PTR_NULL(tb->trees[1].child_workers);
	CU_ASSERT_PTR_NOT_NULL(tb->trees[1].workers);
	CU_ASSERT_PTR_NOT_EQUAL(tb->trees[0].workers, tb->trees[1].workers);
	CU_ASSERT_EQUAL(tb->trees[1].workers[1].id, 0);
	/* Zeroed: not valid. */
	CU_ASSERT_EQUAL(table_validate(tb, err, sizeof(err)), -EINVAL);
	CHECK(strstr(err, "field 'gateway.id'") != NULL, "'%s'", err);
	table_free(tb);
	table_free(NULL);
	tb = table_create(0, NULL, NULL);
	CU_ASSERT_PTR_NOT_NULL_FATAL(tb);
	table_free(tb);
	errno = 0;
	CU_ASSERT_PTR_NULL(table_create(1, too_many, wk));
	CU_ASSERT_EQUAL(errno, EINVAL);
	CU_ASSERT_PTR_NULL(table_create(TABLE_TREES_MAX + 1, NULL, NULL));
	CU_ASSERT_PTR_NULL(table_create(-1, NULL, NULL));
	CU_ASSERT_PTR_NULL(table_create(1, NULL, NULL));
	/* Room for the workers below the children, per tree entry. */
	{
		const int nb[] = { 3, 0 }, nb_big[] = { TABLE_BELOW_MAX + 1, 0 };

		tb = table_create_full(2, kids, wk, nb, 1);
		CU_ASSERT_PTR_NOT_NULL_FATAL(tb);
		CU_ASSERT_EQUAL(tb->trees[0].n_below, 3);
		CU_ASSERT_PTR_NOT_NULL(tb->trees[0].below);
		CU_ASSERT_PTR_NOT_NULL(tb->trees[0].below_child);
		CU_ASSERT(tb->trees[0].below[2] == 0 && tb->trees[0].below_child[2] == 0);
		CU_ASSERT(tb->trees[1].n_below == 0 && tb->trees[1].below == NULL &&
			  tb->trees[1].below_child == NULL);
		CU_ASSERT_EQUAL(tb->n_streams, 1);
		table_free(tb);
		errno = 0;
		CU_ASSERT_PTR_NULL(table_create_full(2, kids, wk, nb_big, 0));
		CU_ASSERT_EQUAL(errno, EINVAL);
	}

	if (!scen_init(&sc))
		return;
	a = COMPILE(&sc, A);
	if (a == NULL)
		goto out;
	/* In-memory edits that JSON cannot express. */
	a->trees[0].role = 0;
	CU_ASSERT_EQUAL(table_validate(a, err, sizeof(err)), -EINVAL);
	CHECK(strstr(err, "field 'trees[0].role'") != NULL, "'%s'", err);
	a->trees[0].role = TABLE_ROLE_ROOT;
	a->dtype = 9;
	CU_ASSERT_EQUAL(table_validate(a, err, sizeof(err)), -EINVAL);
	CHECK(strstr(err, "field 'dtype'") != NULL, "'%s'", err);
	a->dtype = TABLE_DTYPE_FP32;
	a->trees[1].rate_gbps = NAN;
	CU_ASSERT_EQUAL(table_validate(a, err, sizeof(err)), -EINVAL);
	CHECK(strstr(err, "field 'trees[1].rate_gbps'") != NULL, "'%s'", err);
	a->trees[1].rate_gbps = 2;
	CU_ASSERT_EQUAL(table_validate(a, err, sizeof(err)), 0);
	/* A child's count, or the entry's, beyond what the wire's contrib could carry. */
	a->trees[0].child_workers[0] = 65536 + 2;
	CU_ASSERT_EQUAL(table_validate(a, err, sizeof(err)), -EINVAL);
	CHECK(strstr(err, "field 'trees[0].children[0].subtree_workers': 65538 is not in") != NULL,
	      "'%s'", err);
	a->trees[0].child_workers[0] = 65534;
	a->trees[0].subtree_workers = 65534 + 2;
	CU_ASSERT_EQUAL(table_validate(a, err, sizeof(err)), -EINVAL);
	CHECK(strstr(err, "field 'trees[0].subtree_workers': 65536 is more workers") != NULL,
	      "'%s'", err);
	a->trees[0].child_workers[0] = 2;
	a->trees[0].subtree_workers = 4;
	CU_ASSERT_EQUAL(table_validate(a, err, sizeof(err)), 0);
	/* The workers below the children: each below a child, in child order. */
	sc.d.cset_blocks = 2;
	tb = COMPILE(&sc, R); /* children a (101 102) and c (201 301) */
	sc.d.cset_blocks = 0;
	if (tb != NULL) {
		struct table_tree *e = &tb->trees[0];

		CU_ASSERT_EQUAL(table_validate(tb, err, sizeof(err)), 0);
		e->below_child[3] = 2;
		CU_ASSERT_EQUAL(table_validate(tb, err, sizeof(err)), -EINVAL);
		CHECK(strstr(err, "field 'trees[0].children': worker 301 is below child 2 of 2") !=
			      NULL, "'%s'", err);
		e->below_child[3] = 1;
		e->below_child[1] = 1;
		e->below_child[2] = 0;
		CU_ASSERT_EQUAL(table_validate(tb, err, sizeof(err)), -EINVAL);
		CHECK(strstr(err, "not in child order") != NULL, "'%s'", err);
		e->below_child[1] = 0;
		e->below_child[2] = 1;
		tb->cset_blocks = 0;
		CU_ASSERT_EQUAL(table_validate(tb, err, sizeof(err)), -EINVAL);
		CHECK(strstr(err, "field 'trees[0].children[0].workers_below': only with") != NULL,
		      "'%s'", err);
		table_free(tb);
	}
	/* table_load. */
	fd = mkstemp(path);
	CU_ASSERT_FATAL(fd >= 0);
	f = fdopen(fd, "w");
	CU_ASSERT_FATAL(f != NULL);
	CU_ASSERT_EQUAL(table_write(a, f), 0);
	fclose(f);
	back = table_load(path, err, sizeof(err));
	CHECK(back != NULL, "%s", err);
	table_free(back);
	f = fopen(path, "w");
	CU_ASSERT_FATAL(f != NULL);
	fputs("{\"format\": \"georeduce-table/1\"}\n", f);
	fclose(f);
	CU_ASSERT_PTR_NULL(table_load(path, err, sizeof(err)));
	CHECK(strncmp(err, path, strlen(path)) == 0 && strstr(err, "field 'job'") != NULL, "'%s'",
	      err);
	unlink(path);
	CU_ASSERT_PTR_NULL(table_load(path, err, sizeof(err)));
	CHECK(strstr(err, "cannot open") != NULL, "'%s'", err);
	table_free(a);
out:
	scen_fini(&sc);
}

/* The example in docs/TABLES.md is what the compiler writes for node c. */
#define EXAMPLE_NODE C

static void
test_docs_example(void)
{
	char err[TABLE_ERR_MAX] = "", *doc, *start, *end, *text;
	struct table *c, *parsed;
	struct scen sc;

	doc = json_util_read_file("docs/TABLES.md", err, sizeof(err));
	if (!CHECK(doc != NULL, "%s (run from the source root)", err))
		return;
	start = strstr(doc, "```json\n");
	end = start != NULL ? strstr(start + 8, "```") : NULL;
	if (!CHECK(start != NULL && end != NULL, "no ```json block in docs/TABLES.md"))
		goto out_doc;
	start += 8;
	*end = '\0';
	parsed = table_parse(start, "docs/TABLES.md", err, sizeof(err));
	CHECK(parsed != NULL, "%s", err);
	if (!scen_init(&sc))
		goto out_parsed;
	c = COMPILE(&sc, EXAMPLE_NODE);
	text = c != NULL ? table_text(c) : NULL;
	CHECK(text != NULL && strcmp(text, start) == 0,
	      "docs/TABLES.md example differs from the compiler's output; regenerate it with "
	      "`test_table --example`:\n%s", text ? text : "");
	free(text);
	table_free(c);
	scen_fini(&sc);
out_parsed:
	table_free(parsed);
out_doc:
	free(doc);
}

/* ------------------------------------------------------------------------------------ */
/* Fuzzing                                                                              */
/* ------------------------------------------------------------------------------------ */

static const char *const fragments[] = {
	"{", "}", "[", "]", "\"", ",", ":", "-1", "0", "1", "65535", "65536", "4294967295",
	"4294967296", "1e999", "1.5", "null", "true", "\"\"", "\"10.0.0.1\"", "\"0.0.0.0\"",
	"\"fp16\"", "\"leaf\"", "\"root\"", "\"interior\"", "\\u0000", "\\n", "\n", "\xff",
	"{}", "[]", ",\"x\":1", "\"id\"", "\"parent\"", "\"children\"", "\"workers\"",
	"\"expected\"", "\"slots\"", "\"chunk_first\"", "\"chunk_count\"",
	"9223372036854775807", "-9223372036854775808", "18446744073709551616",
};

/* A random value for a structural mutation. */
static json_t *
random_value(uint64_t *s)
{
	static const json_int_t ints[] = { 0, 1, 2, 3, 4, 16, 24, 40, 101, 255, 256, 1024, 4096,
					   65535, 65536, 4294967295ll, 4294967296ll, -1,
					   INT64_MAX };
	static const char *const strs[] = { "", "10.0.0.1", "10.0.0.2", "10.0.0.9", "1.2.3",
					     "fp16", "bf16", "leaf", "root", "interior",
					     "georeduce-table/1" };

	switch (rnd(s, 7)) {
	case 0:
	case 1:
	case 2:
		return json_integer(ints[rnd(s, sizeof(ints) / sizeof(*ints))]);
	case 3:
		return json_string(strs[rnd(s, sizeof(strs) / sizeof(*strs))]);
	case 4:
		return json_real(rnd(s, 2) ? 0.5 : 1e300);
	case 5:
		return rnd(s, 2) ? json_null() : json_true();
	default:
		return rnd(s, 2) ? json_object() : json_array();
	}
}

/* Pick a random container in j and set, delete or add one of its members. */
static void
mutate_json(json_t *j, uint64_t *s)
{
	json_t *cur = j;

	for (int depth = 0; depth < 6 && rnd(s, 3) != 0; depth++) {
		json_t *next = NULL;

		if (json_is_object(cur) && json_object_size(cur) > 0) {
			size_t k = rnd(s, json_object_size(cur));
			void *it = json_object_iter(cur);

			while (k-- > 0)
				it = json_object_iter_next(cur, it);
			next = json_object_iter_value(it);
		} else if (json_is_array(cur) && json_array_size(cur) > 0) {
			next = json_array_get(cur, rnd(s, json_array_size(cur)));
		}
		if (next == NULL || !(json_is_object(next) || json_is_array(next)))
			break;
		cur = next;
	}
	if (json_is_object(cur)) {
		size_t n = json_object_size(cur), k = rnd(s, n + 1);
		void *it = json_object_iter(cur);
		const char *key;

		if (k == n || n == 0) {
			json_object_set_new(cur, rnd(s, 2) ? "x" : "id", random_value(s));
			return;
		}
		while (k-- > 0)
			it = json_object_iter_next(cur, it);
		key = json_object_iter_key(it);
		if (rnd(s, 5) == 0)
			json_object_del(cur, key);
		else
			json_object_set_new(cur, key, random_value(s));
	} else if (json_is_array(cur)) {
		size_t n = json_array_size(cur);

		switch (rnd(s, 3)) {
		case 0:
			if (n > 0)
				json_array_remove(cur, rnd(s, n));
			return;
		case 1:
			if (n > 0) /* duplicate an entry */
				json_array_append_new(cur, json_deep_copy(json_array_get(cur,
											 rnd(s, n))));
			return;
		default:
			if (n > 0)
				json_array_set_new(cur, rnd(s, n), random_value(s));
			return;
		}
	}
}

struct fuzz_stats {
	unsigned inputs, accepted, bad_msg, bad_table, bad_rw;
};

/* Parse one fuzzed input and check the promises: a one-line EINVAL message naming the
 * source, or a table that validates and reads back identical. */
static void
fuzz_one(const char *doc, struct fuzz_stats *st)
{
	char err[TABLE_ERR_MAX], why[128];
	struct table *tb;

	st->inputs++;
	memset(err, 0, sizeof(err));
	errno = 0;
	tb = table_parse(doc, "fuzz.json", err, sizeof(err));
	if (tb == NULL) {
		if ((err[0] == '\0' || strchr(err, '\n') != NULL || errno != EINVAL ||
		     strncmp(err, "fuzz.json", 9) != 0) && st->bad_msg++ < 3)
			fprintf(stderr, "\n  table fuzz: bad message '%s' errno %d\n  input: %s\n",
				err, errno, doc);
		return;
	}
	st->accepted++;
	if (table_validate(tb, err, sizeof(err)) != 0 && st->bad_table++ < 3)
		fprintf(stderr, "\n  table fuzz: accepted an invalid table: %s\n  input: %s\n", err,
			doc);
	/* Whatever was accepted is within the caps and can be walked. */
	for (int i = 0; i < tb->n_trees; i++) {
		const struct table_tree *e = &tb->trees[i];

		if ((e->n_children > TABLE_CHILDREN_MAX || e->n_workers > TABLE_WORKERS_MAX ||
		     e->expected > TABLE_CONTRIB_MAX || e->slots > TABLE_SLOTS_MAX) &&
		    st->bad_table++ < 3)
			fprintf(stderr, "\n  table fuzz: over a cap\n  input: %s\n", doc);
		(void)table_tree_of_chunk(tb, e->chunk_first);
	}
	{
		char *text = table_text(tb);
		struct table *back = text ? table_parse(text, "rw", err, sizeof(err)) : NULL;

		if ((back == NULL || !table_same(tb, back, why, sizeof(why))) && st->bad_rw++ < 3)
			fprintf(stderr, "\n  table fuzz: no round trip: %s\n  input: %s\n",
				back ? why : err, doc);
		table_free(back);
		free(text);
	}
	table_free(tb);
}

static void
test_fuzz(void)
{
	unsigned iters = quick ? 4000 : 40000;
	struct fuzz_stats st = { 0 };
	uint64_t s = fuzz_seed;
	char *seeds[N5];
	struct scen sc;

	if (!scen_init(&sc))
		return;
	for (int v = 0; v < N5; v++) {
		struct table *tb;

		sc.d.cset_blocks = v % 2 ? 2 : 0; /* b and r with sets: workers below children */
		tb = COMPILE(&sc, v);
		CU_ASSERT_PTR_NOT_NULL_FATAL(tb);
		seeds[v] = table_text(tb);
		CU_ASSERT_PTR_NOT_NULL_FATAL(seeds[v]);
		table_free(tb);
	}
	/* Byte-level mutations: mostly syntax errors, some changed values. */
	for (unsigned it = 0; it < iters; it++) {
		char *doc;
		struct sbuf b = { 0 };
		unsigned k = 1 + (unsigned)rnd(&s, 3);

		sb_set(&b, seeds[rnd(&s, N5)]);
		for (unsigned m = 0; m < k; m++)
			fuzz_mutate(&b, &s, fragments, sizeof(fragments) / sizeof(*fragments));
		doc = b.p;
		fuzz_one(doc, &st);
		free(doc);
	}
	printf("\n    bytes: %u inputs, %u accepted ", st.inputs, st.accepted);
	CU_ASSERT(st.accepted > 0);
	/* Structural mutations: valid JSON, wrong content. */
	{
		unsigned before = st.accepted;

		for (unsigned it = 0; it < iters; it++) {
			char err[TABLE_ERR_MAX], *doc;
			json_t *j = json_loads(seeds[rnd(&s, N5)], 0, NULL);
			unsigned k = 1 + (unsigned)rnd(&s, 3);

			CU_ASSERT_PTR_NOT_NULL_FATAL(j);
			for (unsigned m = 0; m < k; m++)
				mutate_json(j, &s);
			doc = json_dumps(j, JSON_COMPACT);
			json_decref(j);
			CU_ASSERT_PTR_NOT_NULL_FATAL(doc);
			fuzz_one(doc, &st);
			(void)err;
			free(doc);
		}
		printf("structure: %u inputs, %u accepted (seed 0x%llx) ", iters,
		       st.accepted - before, (unsigned long long)fuzz_seed);
		CU_ASSERT(st.accepted > before);
	}
	CHECK(st.bad_msg == 0, "%u bad messages", st.bad_msg);
	CHECK(st.bad_table == 0, "%u bad tables accepted", st.bad_table);
	CHECK(st.bad_rw == 0, "%u tables did not read back", st.bad_rw);
	for (int v = 0; v < N5; v++)
		free(seeds[v]);
	scen_fini(&sc);
}

/* ------------------------------------------------------------------------------------ */

/* Protected links: parse, write, the public form without keys, and every malformed entry
 * rejected without the key in the message. */
static void
test_seals(void)
{
	static const char hex[] = "00112233445566778899aabbccddeeff";
	char err[TABLE_ERR_MAX] = "", *text = NULL, *pub = NULL;
	struct table *c = NULL;
	struct scen sc;
	uint16_t peer = 0;

	if (!scen_init(&sc))
		return;
	c = COMPILE(&sc, C);
	if (c == NULL)
		goto out;
	text = table_text(c);
	CU_ASSERT_PTR_NULL(strstr(text, "sealed")); /* none: nothing written */
	free(text);
	text = NULL;
	for (int i = 0; i < c->n_trees && peer == 0; i++)
		peer = c->trees[i].has_parent ? c->trees[i].parent.id
		       : c->trees[i].n_children > 0 ? c->trees[i].children[0].id : 0;
	CU_ASSERT_FATAL(peer != 0);
	c->n_seals = 1;
	c->seals[0] = (struct table_seal){ .peer = peer, .key_id = 7,
					   .aead = TABLE_AEAD_AES128_GCM };
	for (int i = 0; i < 16; i++)
		c->seals[0].key[i] = (uint8_t)(i * 0x11);
	CU_ASSERT(table_validate(c, err, sizeof(err)) == 0);
	CU_ASSERT(table_seal_find(c, peer) == &c->seals[0]);
	CU_ASSERT_PTR_NULL(table_seal_find(c, (uint16_t)(peer + 1000)));
	ROUND_TRIP(c);
	text = table_text(c);
	CU_ASSERT_PTR_NOT_NULL(strstr(text, hex));
	free(text);
	text = NULL;
	{
		json_t *pj = table_to_json_public(c);

		pub = json_dumps(pj, 0);
		json_decref(pj);
	}
	CU_ASSERT(pub != NULL && strstr(pub, "sealed") == NULL && strstr(pub, "00112233") == NULL);
	free(pub);
	{
		json_t *sj = table_seals_json(c);

		pub = json_dumps(sj, 0);
		json_decref(sj);
	}
	CU_ASSERT(pub != NULL && strstr(pub, "\"key_id\": 7") != NULL &&
		  strstr(pub, "\"key\"") == NULL && strstr(pub, "00112233") == NULL);
	CU_ASSERT(table_aead_key_len(TABLE_AEAD_AES256_GCM) == 32 &&
		  table_aead_key_len((enum table_aead)0) == 0 &&
		  table_aead_from_name("aes-256-gcm") == TABLE_AEAD_AES256_GCM &&
		  table_aead_from_name("aes-gcm") == 0);

	EDIT_REJECTS(c, "sealed", json_array(), "field 'sealed'");
	EDIT_REJECTS(c, "sealed.0.comment", json_string("x"), "field 'sealed[0].comment'");
	EDIT_REJECTS(c, "sealed.0.peer", json_integer(4000), "field 'sealed[0].peer'");
	EDIT_REJECTS(c, "sealed.0.key_id", json_integer(0), "field 'sealed[0].key_id'");
	EDIT_REJECTS(c, "sealed.0.aead", json_string("chacha20"), "field 'sealed[0].aead'");
	EDIT_REJECTS(c, "sealed.0.aead", json_string("aes-256-gcm"), "field 'sealed[0].key'");
	EDIT_REJECTS(c, "sealed.0.key", json_string("0011"), "field 'sealed[0].key'");
	EDIT_REJECTS(c, "sealed.0.key", json_string("00112233445566778899AABBCCDDEEFF"),
		     "field 'sealed[0].key'");
	/* The message names the field, never the key. */
	{
		json_t *j = tj(c);

		jset(j, "sealed.0.key", json_string("00112233445566778899aabbccddeefg"));
		text = json_dumps(j, 0);
		json_decref(j);
		struct table *bad = table_parse(text, SRC, err, sizeof(err));

		CU_ASSERT_PTR_NULL(bad);
		CU_ASSERT(strstr(err, "sealed[0].key") != NULL && strstr(err, "0011") == NULL);
		free(text);
		text = NULL;
	}
	c->n_seals = 2;
	c->seals[1] = c->seals[0];
	CU_ASSERT(table_validate(c, err, sizeof(err)) == -EINVAL && strstr(err, "ascending"));
	c->n_seals = 1;
	c->seals[0].peer = c->gw.id;
	CU_ASSERT(table_validate(c, err, sizeof(err)) == -EINVAL &&
		  strstr(err, "sealed[0].peer"));
out:
	free(text);
	free(pub);
	table_free(c);
	scen_fini(&sc);
}

static int example_rc = 1;

static void
print_example(void)
{
	struct table *tb;
	struct scen sc;

	if (!scen_init(&sc))
		return;
	tb = COMPILE(&sc, EXAMPLE_NODE);
	if (tb != NULL)
		example_rc = table_write(tb, stdout) != 0;
	table_free(tb);
	scen_fini(&sc);
}

/* The chunk cap (docs/TABLES.md, docs/PROTOCOL.md section 8): a full chunk with its
 * headers, contributor set and seal fits an IP MTU of 9000. The largest chunk of every
 * dtype that wire_max_elems() gives for 9000 is accepted, one element (MX: one block)
 * more refused, naming the field; so are section 8's 9000-MTU sizes. */
static void
test_chunk_cap(void)
{
	static const struct {
		const char *name;
		enum wire_dtype wire;
		uint32_t gran, max; /* PROTOCOL.md section 8's table */
	} dt[] = {
		{ "fp32", WIRE_DTYPE_FP32, 1, 2229 },	 { "fp16", WIRE_DTYPE_FP16, 1, 4459 },
		{ "bf16", WIRE_DTYPE_BF16, 1, 4459 },	 { "mxint8", WIRE_DTYPE_MXINT8, 32, 8640 },
		{ "mxfp8", WIRE_DTYPE_MXFP8, 32, 8640 }, { "mxfp4", WIRE_DTYPE_MXFP4, 32, 16768 },
	};
	char err[TABLE_ERR_MAX] = "";
	struct table *a = NULL;
	struct scen sc;
	json_int_t nc;
	json_t *j;

	CU_ASSERT_EQUAL(TABLE_CHUNK_BYTES_MAX, 8918);
	if (!scen_init(&sc))
		return;
	a = COMPILE(&sc, A);
	if (a == NULL)
		goto out;
	nc = (json_int_t)table_n_chunks(a); /* the trees' ranges: keep the chunk count */
	for (size_t i = 0; i < sizeof(dt) / sizeof(dt[0]); i++) {
		CU_ASSERT_EQUAL(wire_max_elems(WIRE_MTU_MAX, dt[i].wire, 0), (int)dt[i].max);
		j = tj(a);
		jset(j, "dtype", json_string(dt[i].name));
		jset(j, "elements", json_integer(nc * (json_int_t)dt[i].max));
		jset(j, "chunk_elements", json_integer(dt[i].max));
		ACCEPTS(j);
		j = tj(a);
		jset(j, "dtype", json_string(dt[i].name));
		jset(j, "elements", json_integer(nc * (json_int_t)dt[i].max));
		jset(j, "chunk_elements", json_integer(dt[i].max + dt[i].gran));
		REJECTS2(j, "field 'chunk_elements'", "8918 bytes per chunk");
	}
	/* The IP MTU a table needs: 82 bytes of headers, the set, the seal. */
	a->dtype = TABLE_DTYPE_FP32;
	a->chunk_elements = 2229;
	a->elements = (uint64_t)nc * 2229;
	CU_ASSERT_EQUAL(table_mtu_needed(a), 8998);
	CU_ASSERT(table_validate(a, err, sizeof(err)) == 0);
	a->cset_blocks = 1; /* 32 bytes more: 2221 elements fit, 2222 do not */
	CU_ASSERT_EQUAL(table_mtu_needed(a), 9030);
	CU_ASSERT(table_validate(a, err, sizeof(err)) != 0);
	CU_ASSERT_PTR_NOT_NULL(strstr(err, "field 'chunk_elements'"));
	CU_ASSERT_PTR_NOT_NULL(strstr(err, "IP MTU of 9030"));
	a->chunk_elements = 2221;
	CU_ASSERT_EQUAL(table_mtu_needed(a), 8998);
	a->chunk_elements = 2222;
	CU_ASSERT_EQUAL(table_mtu_needed(a), 9002);
	a->cset_blocks = 0;
	a->n_seals = 1; /* a sealed frame: 48 bytes more, 2217 elements */
	a->chunk_elements = 2217;
	CU_ASSERT_EQUAL(table_mtu_needed(a), 8998);
	a->chunk_elements = 2218;
	CU_ASSERT_EQUAL(table_mtu_needed(a), 9002);
	CU_ASSERT(table_validate(a, err, sizeof(err)) != 0);
	CU_ASSERT_PTR_NOT_NULL(strstr(err, "field 'chunk_elements'"));
	CU_ASSERT_PTR_NOT_NULL(strstr(err, "sealed"));
	a->n_seals = 0;
	/* A wider LAN hop counts too: 2229 fp32 elements of an mxint8 job's workers. */
	a->dtype = TABLE_DTYPE_MXINT8;
	a->lan_dtype = TABLE_DTYPE_FP32;
	a->chunk_elements = 2208; /* 69 blocks: 8832 bytes of fp32 */
	CU_ASSERT_EQUAL(table_mtu_needed(a), 82 + 8832);
	a->lan_dtype = 0;
	CU_ASSERT_EQUAL(table_mtu_needed(a), 82 + 69 * 33);
	/* A peer of revision 1.13 (--revision 13, docs/PROTOCOL.md 12) takes 8192 bytes a
	 * chunk at most, with that revision's text; 1.14 and later the full size. */
	a->dtype = TABLE_DTYPE_FP32;
	a->chunk_elements = 2229;
	CU_ASSERT(table_check_revision(a, 15, err, sizeof(err)) == 0);
	CU_ASSERT(table_check_revision(a, 14, err, sizeof(err)) == 0);
	CU_ASSERT(table_check_revision(a, 13, err, sizeof(err)) == -EINVAL);
	CU_ASSERT_PTR_NOT_NULL(strstr(err, "field 'chunk_elements': must be in [1, 2048] for fp32 "
					   "(8192 bytes per chunk at most)"));
	a->chunk_elements = 2048;
	CU_ASSERT(table_check_revision(a, 13, err, sizeof(err)) == 0);
	a->dtype = TABLE_DTYPE_MXINT8; /* 248 blocks of 33 bytes; 2048 fp32 on the LAN */
	a->chunk_elements = 249 * 32;
	CU_ASSERT(table_check_revision(a, 13, err, sizeof(err)) == -EINVAL);
	a->chunk_elements = 248 * 32;
	CU_ASSERT(table_check_revision(a, 13, err, sizeof(err)) == 0);
	a->lan_dtype = TABLE_DTYPE_FP32;
	CU_ASSERT(table_check_revision(a, 13, err, sizeof(err)) == -EINVAL);
	CU_ASSERT_PTR_NOT_NULL(strstr(err, "lan_dtype fp32 exceed 8192 bytes"));
	a->chunk_elements = 64 * 32;
	CU_ASSERT(table_check_revision(a, 13, err, sizeof(err)) == 0);
	a->lan_dtype = 0;
out:
	table_free(a);
	scen_fini(&sc);
}

/*
 * A lone root (one site, two workers, no child gateway) written by hand: its limits may
 * say 0 children per tree entry (as a gateway without local workers may say 0 workers);
 * a table over its limits is still refused.
 */
static void
test_lone_root_limits(void)
{
	static const char text[] =
		"{\"format\": \"georeduce-table/1\", \"job\": 1, \"epoch\": 1,"
		" \"gateway\": {\"id\": 1, \"ipv4\": \"10.0.0.1\", \"base_port\": 17400,"
		" \"ports\": 16}, \"dtype\": \"fp32\", \"elements\": 1000,"
		" \"chunk_elements\": 352,"
		" \"limits\": {\"max_trees\": 1, \"max_children\": 0, \"max_workers\": 2,"
		" \"max_slots\": 16},"
		" \"trees\": [{\"id\": 0, \"role\": \"root\", \"parent\": null,"
		" \"children\": [], \"workers\": [{\"id\": 11, \"ipv4\": \"10.0.0.11\","
		" \"port\": 5000}, {\"id\": 12, \"ipv4\": \"10.0.0.12\", \"port\": 5000}],"
		" \"expected\": 2, \"subtree_workers\": 2, \"chunk_first\": 0,"
		" \"chunk_count\": 3, \"rate_gbps\": 1.0, \"slots\": 16}]}";
	char err[TABLE_ERR_MAX] = "";
	struct table *tb = table_parse(text, SRC, err, sizeof(err));

	check_at(tb != NULL, __FILE__, __LINE__, "a lone root with max_children 0", "%s", err);
	if (tb == NULL)
		return;
	CU_ASSERT(tb->limits.max_children == 0);
	CU_ASSERT(table_validate(tb, err, sizeof(err)) == 0);
	table_free(tb);
	/* Over the limits: one worker too many, a child gateway too many. */
	json_t *j = json_loads(text, 0, NULL);

	CU_ASSERT_PTR_NOT_NULL_FATAL(j);
	jset(j, "limits.max_workers", json_integer(1));
	REJECTS2(j, "field 'trees[0].workers'", "exceed limits.max_workers 1");
	j = json_loads(text, 0, NULL);
	CU_ASSERT_PTR_NOT_NULL_FATAL(j);
	json_array_append_new(json_object_get(json_array_get(json_object_get(j, "trees"), 0),
					      "children"),
			      json_pack("{s:i,s:s,s:i,s:i,s:i}", "id", 2, "ipv4", "10.0.0.2",
					"base_port", 17400, "ports", 16, "subtree_workers", 1));
	jset(j, "trees.0.expected", json_integer(3));
	jset(j, "trees.0.subtree_workers", json_integer(3));
	REJECTS2(j, "field 'trees[0].children'", "exceed limits.max_children 0");
}

int
main(int argc, char **argv)
{
	static const struct testutil_case tests[] = {
		{ "names and addresses", test_names },
		{ "slot formula", test_slots_formula },
		{ "chunk split", test_split },
		{ "compile: every gateway of the scenario", test_compile_scenario },
		{ "compile: deployment variants", test_compile_variants },
		{ "compile: workers below the children with sets", test_compile_below },
		{ "compile: bad inputs rejected", test_compile_rejects },
		{ "compile: children over the limit", test_compile_too_many_children },
		{ "compile: random topologies, union consistent", test_compile_random },
		{ "parse: every malformed class rejected, field named", test_parse_rejects },
		{ "parse: a lone root's limits may be 0 children", test_lone_root_limits },
		{ "parse: chunks up to a 9000-byte IP MTU, no larger", test_chunk_cap },
		{ "parse: invalid JSON with line:column", test_parse_invalid_json },
		{ "multicast streams: parse, write, reject", test_streams },
		{ "protected links: parse, write, public form, reject", test_seals },
		{ "model: create, validate, load", test_model },
		{ "docs/TABLES.md example", test_docs_example },
		{ "fuzz: table_parse mutations", test_fuzz },
	};
	const char *seed = getenv("GEOREDUCE_FUZZ_SEED"), *q = getenv("GEOREDUCE_TEST_QUICK");

	if (seed != NULL && *seed != '\0')
		fuzz_seed = strtoull(seed, NULL, 0);
	quick = q != NULL && *q != '\0' && strcmp(q, "0") != 0;
	if (argc > 1 && strcmp(argv[1], "--example") == 0) {
		/* The table of docs/TABLES.md on stdout, nothing else (no CUnit report). */
		unsigned int failures;

		if (CU_initialize_registry() != CUE_SUCCESS)
			return 1;
		if (CU_add_test(CU_add_suite("table", NULL, NULL), "example", print_example) == NULL) {
			CU_cleanup_registry();
			return 1;
		}
		CU_run_all_tests();
		failures = CU_get_number_of_failures();
		CU_cleanup_registry();
		return failures > 0 || example_rc != 0;
	}
	return testutil_run("test_table", "table", tests, TESTUTIL_N(tests));
}
