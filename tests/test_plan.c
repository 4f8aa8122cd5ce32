/* SPDX-License-Identifier: BSD-3-Clause
 *
 * Unit tests for lib/plan.{h,c}: the plan model, plan_validate() (the rules of the
 * `georeduce-plan/1` format, spec formats.md) and the JSON codec, plus a mutation fuzzer
 * for plan_parse and a random-plan fuzzer that checks plan_validate against an
 * independent implementation of the rules.
 *
 * Environment: GEOREDUCE_FUZZ_SEED sets the seed of the random tests.
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
#include "plan.h"
#include "topo.h"

#define SRC "plan.json"

/* ------------------------------------------------------------------------------------ */
/* Helpers                                                                              */
/* ------------------------------------------------------------------------------------ */

static struct topo *
topo_sq(const char *sqdoc)
{
	char err[TOPO_ERR_MAX] = "", *doc = sq(sqdoc);
	struct topo *t = topo_parse(doc, "topo.json", err, sizeof(err));

	CHECK(t != NULL, "%s", err);
	free(doc);
	return t;
}

/*
 * The test topology (node indices in brackets, latency_ms after the capacity):
 *
 *        a[0] --10 Gb/s, 10 ms-- b[1] --10, 5 ms-- c[2] --10, 2 ms-- s[4] (relay)
 *          \____ 4, 20 ms ____________________/ /
 *           \__ 10, 1 ms -- r[3] (relay) -- 10, 1 ms
 *
 * a has 2 workers, b and c the default 1, r and s are relays.
 */
enum { A, B, C, R, S, N5 };
#define NONE PLAN_ABSENT
#define ROOT PLAN_ROOT

static const char topo5_sq[] =
	"{'format':'georeduce-topology/1','name':'t5','nodes':[{'id':'a','workers':2},"
	"{'id':'b'},{'id':'c'},{'id':'r','workers':0},{'id':'s','workers':0}],'links':["
	"{'a':'a','b':'b','gbps':10,'latency_ms':10},{'a':'b','b':'c','gbps':10,'latency_ms':5},"
	"{'a':'a','b':'c','gbps':4,'latency_ms':20},{'a':'a','b':'r','gbps':10,'latency_ms':1},"
	"{'a':'r','b':'c','gbps':10,'latency_ms':1},{'a':'c','b':'s','gbps':10,'latency_ms':2}]}";

/* x -> y 1 Gb/s, y -> x 0.5 Gb/s. */
static const char topo_asym_sq[] =
	"{'format':'georeduce-topology/1','name':'asym','nodes':[{'id':'x'},{'id':'y'}],"
	"'links':[{'a':'x','b':'y','gbps':1,'gbps_ba':0.5}]}";

/* Tree 0: root a, b -> a, c -> b (relays absent). Tree 1: root c, a -> r -> c, b -> c. */
static const int tree0[N5] = { ROOT, A, B, NONE, NONE };
static const int tree1[N5] = { R, C, ROOT, C, NONE };

/* The valid two-tree plan over topo5, rates 3 and 2, shares 0.6 and 0.4. */
static struct plan *
plan_valid(const struct topo *t)
{
	struct plan *p = plan_create("mtree", t, 2);

	CU_ASSERT_PTR_NOT_NULL_FATAL(p);
	CU_ASSERT_EQUAL(plan_add_tree(p, A, 3, tree0), 0);
	CU_ASSERT_EQUAL(plan_add_tree(p, C, 2, tree1), 1);
	CU_ASSERT_EQUAL(plan_shares_from_rates(p), 0);
	return p;
}

/* A one-tree plan: root, rate, parent; share 1. */
static struct plan *
plan_one(const struct topo *t, int root, double rate, const int *parent)
{
	struct plan *p = plan_create("test", t, 1);

	CU_ASSERT_PTR_NOT_NULL_FATAL(p);
	CU_ASSERT_EQUAL(plan_add_tree(p, root, rate, parent), 0);
	p->trees[0].share = 1;
	return p;
}

static void
validate_ok_at(int line, const struct topo *t, const struct plan *p, double maxh)
{
	char err[512] = "";
	int rc = plan_validate(t, p, maxh, err, sizeof(err));

	check_at(rc == 0, __FILE__, line, "plan_validate accepts", "rc %d: %s", rc, err);
}
#define VALIDATE_OK(t, p, h) validate_ok_at(__LINE__, (t), (p), (h))

/* plan_validate must return -EINVAL with a one-line message holding needle (and
 * needle2 if not NULL). */
static void
validate_rejects_at(int line, const struct topo *t, const struct plan *p, double maxh,
		    const char *needle, const char *needle2)
{
	char err[512] = "";
	int rc = plan_validate(t, p, maxh, err, sizeof(err));

	check_at(rc == -EINVAL, __FILE__, line, "plan_validate rejects", "rc %d", rc);
	check_at(err[0] != '\0' && strchr(err, '\n') == NULL, __FILE__, line, "one-line message", "'%s'",
		 err);
	check_at(strstr(err, needle) != NULL, __FILE__, line, "message names it", "expected '%s' in '%s'",
		 needle, err);
	if (needle2 != NULL)
		check_at(strstr(err, needle2) != NULL, __FILE__, line, "message detail",
			 "expected '%s' in '%s'", needle2, err);
}
#define VALIDATE_REJECTS(t, p, h, n1, n2) validate_rejects_at(__LINE__, (t), (p), (h), (n1), (n2))

/* plan_write() into a malloc'd string, NULL on failure. */
static char *
plan_text(const struct topo *t, const struct plan *p)
{
	struct testutil_mem m;
	FILE *f = testutil_mem_open(&m);

	return f == NULL ? NULL : testutil_mem_close(&m, plan_write(t, p, f));
}

static bool
plan_same(const struct plan *x, const struct plan *y, int n_nodes, char *why, size_t n)
{
	if (strcmp(x->algorithm, y->algorithm) != 0 || strcmp(x->topology, y->topology) != 0) {
		snprintf(why, n, "algorithm/topology '%s'/'%s' vs '%s'/'%s'", x->algorithm,
			 x->topology, y->algorithm, y->topology);
		return false;
	}
	if (x->n_trees != y->n_trees || x->n_nodes != y->n_nodes) {
		snprintf(why, n, "%d trees vs %d", x->n_trees, y->n_trees);
		return false;
	}
	if (x->bytes != y->bytes || x->allreduce_seconds != y->allreduce_seconds) {
		snprintf(why, n, "predicted %llu %.17g vs %llu %.17g", (unsigned long long)x->bytes,
			 x->allreduce_seconds, (unsigned long long)y->bytes, y->allreduce_seconds);
		return false;
	}
	for (int i = 0; i < x->n_trees; i++) {
		const struct plan_tree *a = &x->trees[i], *b = &y->trees[i];

		if (a->root != b->root || a->rate_gbps != b->rate_gbps || a->share != b->share ||
		    a->chunk_bytes != b->chunk_bytes) {
			snprintf(why, n,
				 "trees[%d]: root %d rate %.17g share %.17g chunk %llu vs root %d "
				 "rate %.17g share %.17g chunk %llu",
				 i, a->root, a->rate_gbps, a->share, (unsigned long long)a->chunk_bytes,
				 b->root, b->rate_gbps, b->share, (unsigned long long)b->chunk_bytes);
			return false;
		}
		for (int v = 0; v < n_nodes; v++)
			if (a->parent[v] != b->parent[v]) {
				snprintf(why, n, "trees[%d].parent[%d]: %d vs %d", i, v, a->parent[v],
					 b->parent[v]);
				return false;
			}
	}
	return true;
}

static struct plan *
parse_sq_at(int line, const struct topo *t, const char *sqdoc)
{
	char err[512] = "", *doc = sq(sqdoc);
	struct plan *p = plan_parse(t, doc, SRC, err, sizeof(err));

	check_at(p != NULL, __FILE__, line, "plan_parse accepts", "%s\n  doc: %s", err, doc);
	free(doc);
	return p;
}
#define PARSE_OK(t, doc) parse_sq_at(__LINE__, (t), (doc))

static void
parse_rejects_at(int line, const struct topo *t, const char *sqdoc, bool quote, const char *needle,
		 const char *needle2)
{
	char err[512] = "", *doc = quote ? sq(sqdoc) : strdup(sqdoc);
	struct plan *p;

	errno = 0;
	p = plan_parse(t, doc, SRC, err, sizeof(err));
	if (!check_at(p == NULL, __FILE__, line, "plan_parse rejects", "accepted: %s", doc)) {
		plan_free(p);
		free(doc);
		return; /* the message checks below would only repeat the failure */
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
	free(doc);
}
#define PARSE_REJECTS(t, doc, n1) parse_rejects_at(__LINE__, (t), (doc), true, (n1), NULL)
#define PARSE_REJECTS2(t, doc, n1, n2) parse_rejects_at(__LINE__, (t), (doc), true, (n1), (n2))
#define PARSE_REJECTS_RAW(t, doc, n1) parse_rejects_at(__LINE__, (t), (doc), false, (n1), NULL)

/* ------------------------------------------------------------------------------------ */
/* Model                                                                                */
/* ------------------------------------------------------------------------------------ */

static void
test_create(void)
{
	struct topo *t = topo_sq(topo5_sq);
	struct plan *p;

	if (t == NULL)
		return;
	p = plan_create("mtree", t, 0);
	CU_ASSERT_PTR_NOT_NULL_FATAL(p);
	CU_ASSERT_STRING_EQUAL(p->algorithm, "mtree");
	CU_ASSERT_STRING_EQUAL(p->topology, "t5");
	CU_ASSERT_EQUAL(p->n_nodes, N5);
	CU_ASSERT_EQUAL(p->n_trees, 0);
	CU_ASSERT(p->cap >= 1);
	CU_ASSERT_EQUAL(p->bytes, 0);
	CU_ASSERT_PTR_NULL(p->extra);
	CU_ASSERT_DOUBLE_EQUAL(plan_total_rate(p), 0, 0);
	plan_free(p);
	plan_free(NULL);
	topo_free(t);
}

static void
test_add_tree(void)
{
	struct topo *t = topo_sq(topo5_sq);
	int parent[N5];
	struct plan *p;
	int rc = 0;

	if (t == NULL)
		return;
	p = plan_create("x", t, 1);
	CU_ASSERT_PTR_NOT_NULL_FATAL(p);
	memcpy(parent, tree0, sizeof(parent));
	/* Grows past the initial capacity; indices are returned in order. */
	for (int i = 0; i < 10; i++)
		CU_ASSERT_EQUAL(plan_add_tree(p, A, i + 1, parent), i);
	CU_ASSERT_EQUAL(p->n_trees, 10);
	CU_ASSERT(p->cap >= 10);
	/* parent[] is copied. */
	parent[B] = C;
	CU_ASSERT_EQUAL(p->trees[0].parent[B], A);
	CU_ASSERT_EQUAL(p->trees[9].parent[C], B);
	CU_ASSERT_EQUAL(p->trees[3].root, A);
	CU_ASSERT_DOUBLE_EQUAL(p->trees[3].rate_gbps, 4, 0);
	/* Defaults: chunk 1 MiB, share 0 until set. */
	CU_ASSERT_EQUAL(p->trees[5].chunk_bytes, 1u << 20);
	CU_ASSERT_DOUBLE_EQUAL(p->trees[5].share, 0, 0);
	CU_ASSERT_DOUBLE_EQUAL(plan_total_rate(p), 55, 0);
	plan_free(p);

	/* The tree limit. */
	p = plan_create("x", t, 1);
	CU_ASSERT_PTR_NOT_NULL_FATAL(p);
	for (int i = 0; i < PLAN_TREES_MAX && rc >= 0; i++)
		rc = plan_add_tree(p, A, 1, tree0);
	CU_ASSERT_EQUAL(rc, PLAN_TREES_MAX - 1);
	CU_ASSERT_EQUAL(plan_add_tree(p, A, 1, tree0), -E2BIG);
	CU_ASSERT_EQUAL(p->n_trees, PLAN_TREES_MAX);
	plan_free(p);
	topo_free(t);
}

static void
test_shares_from_rates(void)
{
	struct topo *t = topo_sq(topo5_sq);
	struct plan *p;

	if (t == NULL)
		return;
	p = plan_create("x", t, 2);
	CU_ASSERT_PTR_NOT_NULL_FATAL(p);
	CU_ASSERT_EQUAL(plan_shares_from_rates(p), -EINVAL); /* no trees */
	plan_add_tree(p, A, 3, tree0);
	plan_add_tree(p, C, 1, tree1);
	CU_ASSERT_EQUAL(plan_shares_from_rates(p), 0);
	CU_ASSERT_DOUBLE_EQUAL(p->trees[0].share, 0.75, 1e-15);
	CU_ASSERT_DOUBLE_EQUAL(p->trees[1].share, 0.25, 1e-15);
	CU_ASSERT_DOUBLE_EQUAL(plan_total_rate(p), 4, 0);
	p->trees[0].rate_gbps = 0;
	CU_ASSERT_EQUAL(plan_shares_from_rates(p), 0);
	CU_ASSERT_DOUBLE_EQUAL(p->trees[0].share, 0, 0);
	CU_ASSERT_DOUBLE_EQUAL(p->trees[1].share, 1, 0);
	p->trees[1].rate_gbps = 0;
	CU_ASSERT_EQUAL(plan_shares_from_rates(p), -EINVAL); /* rates sum to zero */
	p->trees[1].rate_gbps = NAN;
	CU_ASSERT_EQUAL(plan_shares_from_rates(p), -EINVAL);
	plan_free(p);
	topo_free(t);
}

/* plan_tree_height_ms and plan_tree_depth on hand-made trees. */
static void
test_height_and_depth(void)
{
	struct topo *t = topo_sq(topo5_sq);
	/* Root b: a -> b (10 ms), c -> b (5), r -> a (1), s -> c (2): heights 10, 5, 11, 7. */
	const int star[N5] = { B, ROOT, B, A, C };
	/* A chain s -> c -> r -> a -> b: 2 + 1 + 1 + 10 = 14 ms, 4 hops. */
	const int chain[N5] = { B, ROOT, R, A, C };
	const int single[N5] = { NONE, NONE, ROOT, NONE, NONE };
	struct plan_tree tr = { 0 };

	if (t == NULL)
		return;
	tr.parent = (int *)star;
	tr.root = B;
	CU_ASSERT_DOUBLE_EQUAL(plan_tree_height_ms(t, &tr), 11, 1e-12);
	CU_ASSERT_EQUAL(plan_tree_depth(t, &tr), 2);
	tr.parent = (int *)chain;
	CU_ASSERT_DOUBLE_EQUAL(plan_tree_height_ms(t, &tr), 14, 1e-12);
	CU_ASSERT_EQUAL(plan_tree_depth(t, &tr), 4);
	tr.parent = (int *)tree0;
	tr.root = A;
	CU_ASSERT_DOUBLE_EQUAL(plan_tree_height_ms(t, &tr), 15, 1e-12);
	CU_ASSERT_EQUAL(plan_tree_depth(t, &tr), 2);
	tr.parent = (int *)tree1;
	tr.root = C;
	CU_ASSERT_DOUBLE_EQUAL(plan_tree_height_ms(t, &tr), 5, 1e-12);
	CU_ASSERT_EQUAL(plan_tree_depth(t, &tr), 2);
	tr.parent = (int *)single;
	CU_ASSERT_DOUBLE_EQUAL(plan_tree_height_ms(t, &tr), 0, 0);
	CU_ASSERT_EQUAL(plan_tree_depth(t, &tr), 0);
	/* Broken trees must not hang or crash (a cycle b <-> c, a pair that is no link). */
	{
		const int cyc[N5] = { ROOT, C, B, NONE, NONE };
		const int nolink[N5] = { ROOT, A, A, NONE, S };

		tr.parent = (int *)cyc;
		tr.root = A;
		CU_ASSERT(plan_tree_height_ms(t, &tr) >= 0);
		CU_ASSERT(plan_tree_depth(t, &tr) >= 0);
		tr.parent = (int *)nolink;
		CU_ASSERT_DOUBLE_EQUAL(plan_tree_height_ms(t, &tr), 20, 1e-12); /* c -> a */
		CU_ASSERT_EQUAL(plan_tree_depth(t, &tr), 1);
	}
	topo_free(t);
}

/* ------------------------------------------------------------------------------------ */
/* plan_validate                                                                        */
/* ------------------------------------------------------------------------------------ */

static void
test_validate_valid_multi_tree(void)
{
	struct topo *t = topo_sq(topo5_sq);
	struct plan *p;

	if (t == NULL)
		return;
	p = plan_valid(t);
	CU_ASSERT_DOUBLE_EQUAL(p->trees[0].share, 0.6, 1e-15);
	CU_ASSERT_DOUBLE_EQUAL(p->trees[1].share, 0.4, 1e-15);
	VALIDATE_OK(t, p, 0);
	VALIDATE_OK(t, p, 15);   /* the height limit is inclusive */
	VALIDATE_OK(t, p, 1000);
	/* Loads exactly at capacity: link b-c carries both trees, 10 = 10. */
	p->trees[0].rate_gbps = 6;
	p->trees[1].rate_gbps = 4;
	plan_shares_from_rates(p);
	VALIDATE_OK(t, p, 0);
	/* A zero-rate tree with zero share is allowed. */
	p->trees[1].rate_gbps = 0;
	plan_shares_from_rates(p);
	VALIDATE_OK(t, p, 0);
	plan_free(p);
	/* Three trees, one of which routes through relay s (a leaf relay is allowed). */
	p = plan_valid(t);
	{
		const int t2[N5] = { B, ROOT, B, NONE, C };

		CU_ASSERT_EQUAL(plan_add_tree(p, B, 1, t2), 2);
		plan_shares_from_rates(p);
		VALIDATE_OK(t, p, 0);
	}
	plan_free(p);
	topo_free(t);
}

static void
test_validate_relays_optional(void)
{
	struct topo *t = topo_sq(topo5_sq);
	const int all[N5] = { R, A, B, ROOT, C };
	struct plan *p;

	if (t == NULL)
		return;
	/* Both relays absent (tree0), one present (tree1), both present here. */
	p = plan_one(t, A, 1, tree0);
	VALIDATE_OK(t, p, 0);
	plan_free(p);
	p = plan_one(t, C, 1, tree1);
	VALIDATE_OK(t, p, 0);
	plan_free(p);
	/* Rooted at a relay. */
	p = plan_one(t, R, 1, all);
	VALIDATE_OK(t, p, 0);
	plan_free(p);
	topo_free(t);
}

static void
test_validate_missing_worker(void)
{
	struct topo *t = topo_sq(topo5_sq);
	const int no_c[N5] = { ROOT, A, NONE, NONE, NONE };
	struct plan *p;

	if (t == NULL)
		return;
	p = plan_valid(t);
	p->trees[1].parent[B] = NONE;
	VALIDATE_REJECTS(t, p, 0, "trees[1].parent", "'b'");
	plan_free(p);
	p = plan_one(t, A, 1, no_c);
	VALIDATE_REJECTS(t, p, 0, "trees[0].parent", "worker site 'c' is missing");
	plan_free(p);
	topo_free(t);
}

static void
test_validate_not_a_link(void)
{
	struct topo *t = topo_sq(topo5_sq);
	/* b -> r: there is no b-r link. */
	const int bad[N5] = { ROOT, R, A, A, NONE };
	/* A node that is its own parent. */
	const int self[N5] = { ROOT, B, A, NONE, NONE };
	struct plan *p;

	if (t == NULL)
		return;
	p = plan_one(t, A, 1, bad);
	VALIDATE_REJECTS(t, p, 0, "trees[0].parent.b", "'b' -> 'r' is not a link");
	plan_free(p);
	p = plan_one(t, A, 1, self);
	VALIDATE_REJECTS(t, p, 0, "trees[0].parent.b", NULL);
	plan_free(p);
	/* A parent that is absent from the tree. */
	{
		const int via_absent[N5] = { ROOT, A, R, NONE, NONE };

		p = plan_one(t, A, 1, via_absent); /* c -> r, r absent */
		VALIDATE_REJECTS(t, p, 0, "trees[0].parent.c", "not in the tree");
		plan_free(p);
	}
	/* Hand-built plans with out-of-range parent values. */
	{
		const int oob[N5] = { ROOT, A, N5, NONE, NONE };
		const int neg[N5] = { ROOT, A, -7, NONE, NONE };

		p = plan_one(t, A, 1, oob);
		VALIDATE_REJECTS(t, p, 0, "trees[0].parent.c", NULL);
		plan_free(p);
		p = plan_one(t, A, 1, neg);
		VALIDATE_REJECTS(t, p, 0, "trees[0].parent.c", NULL);
		plan_free(p);
	}
	topo_free(t);
}

static void
test_validate_cycle(void)
{
	struct topo *t = topo_sq(topo5_sq);
	/* Root a; b -> c and c -> b: each has a linked, present parent, neither reaches a. */
	const int cyc[N5] = { ROOT, C, B, NONE, NONE };
	/* b -> c -> r -> a: a chain through the relay, not a cycle. */
	const int cyc3[N5] = { ROOT, C, R, A, NONE };
	const int cyc_r[N5] = { ROOT, A, R, C, NONE };
	struct plan *p;

	if (t == NULL)
		return;
	p = plan_one(t, A, 1, cyc);
	VALIDATE_REJECTS(t, p, 0, "trees[0].parent.b", "cycle");
	plan_free(p);
	/* b -> c -> r -> a reaches the root: valid (not a cycle). */
	p = plan_one(t, A, 1, cyc3);
	VALIDATE_OK(t, p, 0);
	plan_free(p);
	/* c -> r and r -> c. */
	p = plan_one(t, A, 1, cyc_r);
	VALIDATE_REJECTS(t, p, 0, "trees[0].parent.c", "cycle");
	plan_free(p);
	topo_free(t);
}

static void
test_validate_roots(void)
{
	struct topo *t = topo_sq(topo5_sq);
	const int two[N5] = { ROOT, A, ROOT, NONE, NONE };
	const int none[N5] = { B, A, B, NONE, NONE };
	struct plan *p;

	if (t == NULL)
		return;
	/* Two roots, in the second tree. */
	p = plan_valid(t);
	memcpy(p->trees[1].parent, two, sizeof(two));
	p->trees[1].root = C;
	VALIDATE_REJECTS(t, p, 0, "trees[1]", "2 nodes map to null");
	/* The declared root is not mapped to null. */
	p->trees[1].root = B;
	VALIDATE_REJECTS(t, p, 0, "trees[1]", "root");
	plan_free(p);
	p = plan_one(t, A, 1, none);
	VALIDATE_REJECTS(t, p, 0, "trees[0]", "root");
	p->trees[0].root = -1;
	VALIDATE_REJECTS(t, p, 0, "trees[0]", "root");
	p->trees[0].root = N5;
	VALIDATE_REJECTS(t, p, 0, "trees[0]", "root");
	plan_free(p);
	topo_free(t);
}

static void
test_validate_asymmetric_capacity(void)
{
	struct topo *t = topo_sq(topo_asym_sq);
	const int y_to_x[2] = { ROOT, 0 };
	const int x_to_y[2] = { 1, ROOT };
	struct plan *p;

	if (t == NULL)
		return;
	/* 0.7 fits 1 Gb/s x -> y but not 0.5 Gb/s y -> x: the tree uses both directions. */
	p = plan_one(t, 0, 0.7, y_to_x);
	VALIDATE_REJECTS(t, p, 0, "link y -> x", "0.5");
	plan_free(p);
	p = plan_one(t, 1, 0.7, x_to_y); /* the orientation of the tree does not matter */
	VALIDATE_REJECTS(t, p, 0, "link y -> x", "0.7");
	plan_free(p);
	p = plan_one(t, 0, 0.5, y_to_x); /* exactly at capacity */
	VALIDATE_OK(t, p, 0);
	plan_free(p);
	p = plan_one(t, 0, 0.5 * (1 + 1e-3), y_to_x);
	VALIDATE_REJECTS(t, p, 0, "link y -> x", NULL);
	plan_free(p);
	/* Two trees of 0.3 each on the same link: 0.6 > 0.5 in one direction only. */
	p = plan_one(t, 0, 0.3, y_to_x);
	CU_ASSERT_EQUAL(plan_add_tree(p, 1, 0.3, x_to_y), 1);
	plan_shares_from_rates(p);
	VALIDATE_REJECTS(t, p, 0, "link y -> x", "0.6");
	p->trees[1].rate_gbps = 0.2;
	plan_shares_from_rates(p);
	VALIDATE_OK(t, p, 0);
	plan_free(p);
	topo_free(t);

	/* The mirror image: the weak direction is a -> b. */
	t = topo_sq("{'format':'georeduce-topology/1','nodes':[{'id':'x'},{'id':'y'}],"
		    "'links':[{'a':'x','b':'y','gbps':0.5,'gbps_ba':1}]}");
	if (t == NULL)
		return;
	p = plan_one(t, 0, 0.7, y_to_x);
	VALIDATE_REJECTS(t, p, 0, "link x -> y", "0.5");
	plan_free(p);
	topo_free(t);

	/* Over capacity on a symmetric link of topo5 by two trees: a-c is 4 Gb/s. */
	t = topo_sq(topo5_sq);
	if (t == NULL)
		return;
	{
		const int ta[N5] = { ROOT, A, A, NONE, NONE }; /* c -> a over a-c */
		const int tc[N5] = { C, C, ROOT, NONE, NONE }; /* a -> c over a-c */

		p = plan_one(t, A, 2.5, ta);
		plan_add_tree(p, C, 2, tc);
		plan_shares_from_rates(p);
		VALIDATE_REJECTS(t, p, 0, "link a -> c", "4.5");
		plan_free(p);
	}
	topo_free(t);
}

static void
test_validate_shares(void)
{
	struct topo *t = topo_sq(topo5_sq);
	struct plan *p;

	if (t == NULL)
		return;
	p = plan_valid(t);
	p->trees[0].share = 0.5; /* 0.5 + 0.4 */
	VALIDATE_REJECTS(t, p, 0, "share", "0.9");
	p->trees[0].share = 0.7; /* 1.1 */
	VALIDATE_REJECTS(t, p, 0, "share", "1.1");
	p->trees[0].share = 0.6 + 1e-4;
	VALIDATE_REJECTS(t, p, 0, "share", NULL);
	p->trees[0].share = 0.6 + 1e-9; /* rounding noise is tolerated */
	VALIDATE_OK(t, p, 0);
	p->trees[0].share = 1.4;
	p->trees[1].share = -0.4;
	VALIDATE_REJECTS(t, p, 0, "trees[0].share", NULL);
	p->trees[0].share = 0.6;
	p->trees[1].share = NAN;
	VALIDATE_REJECTS(t, p, 0, "trees[1].share", NULL);
	p->trees[1].share = 0;
	p->trees[0].share = 0;
	VALIDATE_REJECTS(t, p, 0, "share", "0.0");
	plan_free(p);
	topo_free(t);
}

static void
test_validate_rate(void)
{
	struct topo *t = topo_sq(topo5_sq);
	struct plan *p;

	if (t == NULL)
		return;
	p = plan_valid(t);
	p->trees[1].rate_gbps = -1;
	VALIDATE_REJECTS(t, p, 0, "trees[1].rate_gbps", NULL);
	p->trees[1].rate_gbps = -1e-12;
	VALIDATE_REJECTS(t, p, 0, "trees[1].rate_gbps", NULL);
	p->trees[1].rate_gbps = NAN;
	VALIDATE_REJECTS(t, p, 0, "trees[1].rate_gbps", NULL);
	p->trees[1].rate_gbps = INFINITY;
	VALIDATE_REJECTS(t, p, 0, "trees[1].rate_gbps", NULL);
	p->trees[1].rate_gbps = 2;
	VALIDATE_OK(t, p, 0);
	plan_free(p);
	topo_free(t);
}

static void
test_validate_chunk(void)
{
	struct topo *t = topo_sq(topo5_sq);
	struct plan *p;

	if (t == NULL)
		return;
	p = plan_valid(t);
	p->trees[0].chunk_bytes = 0;
	VALIDATE_REJECTS(t, p, 0, "trees[0].chunk_bytes", NULL);
	p->trees[0].chunk_bytes = 1;
	VALIDATE_OK(t, p, 0);
	plan_free(p);
	topo_free(t);
}

static void
test_validate_height(void)
{
	struct topo *t = topo_sq(topo5_sq);
	struct plan *p;

	if (t == NULL)
		return;
	p = plan_valid(t); /* heights 15 and 5 ms */
	VALIDATE_REJECTS(t, p, 10, "trees[0]", "height");
	VALIDATE_REJECTS(t, p, 14.99, "trees[0]", "15.000");
	VALIDATE_OK(t, p, 15);
	VALIDATE_OK(t, p, 0);  /* no limit */
	VALIDATE_OK(t, p, -1); /* no limit */
	/* Only the second tree over a 4 ms limit once the first one is short. */
	{
		const int flat[N5] = { ROOT, A, R, A, NONE }; /* c -> r -> a: 2 ms, b -> a: 10 */
		const int flat2[N5] = { R, C, ROOT, C, NONE };

		memcpy(p->trees[0].parent, flat, sizeof(flat));
		VALIDATE_OK(t, p, 10);
		VALIDATE_REJECTS(t, p, 4.5, "trees[0]", "height");
		memcpy(p->trees[0].parent, flat2, sizeof(flat2));
		p->trees[0].root = C;
		VALIDATE_REJECTS(t, p, 4.5, "trees[", "height");
	}
	plan_free(p);
	topo_free(t);
}

static void
test_validate_plan_shape(void)
{
	struct topo *t = topo_sq(topo5_sq), *t2 = topo_sq(topo_asym_sq);
	struct plan *p;

	if (t == NULL || t2 == NULL) {
		topo_free(t);
		topo_free(t2);
		return;
	}
	p = plan_create("x", t, 1);
	CU_ASSERT_PTR_NOT_NULL_FATAL(p);
	VALIDATE_REJECTS(t, p, 0, "no trees", NULL);
	plan_free(p);
	/* A plan made for another topology (different node count). */
	p = plan_valid(t);
	VALIDATE_REJECTS(t2, p, 0, "nodes", NULL);
	plan_free(p);
	topo_free(t);
	topo_free(t2);
}

/* ------------------------------------------------------------------------------------ */
/* JSON codec                                                                           */
/* ------------------------------------------------------------------------------------ */

#define PFMT "'format':'georeduce-plan/1'"
#define TREE_A "{'root':'a','rate_gbps':3,'share':0.6,'chunk_bytes':1048576,"   \
	"'parent':{'a':null,'b':'a','c':'b'}}"
#define TREE_C "{'root':'c','rate_gbps':2,'share':0.4,'chunk_bytes':65536,"     \
	"'parent':{'a':'r','b':'c','c':null,'r':'c'}}"

static const char plan_doc_sq[] =
	"{" PFMT ",'algorithm':'mtree','topology':'t5','trees':[" TREE_A "," TREE_C "],"
	"'predicted':{'bytes':1000000000,'allreduce_seconds':23.4}}";

static void
test_parse_valid(void)
{
	struct topo *t = topo_sq(topo5_sq);
	char err[512] = "";
	struct plan *p;

	if (t == NULL)
		return;
	p = PARSE_OK(t, plan_doc_sq);
	if (p != NULL) {
		CU_ASSERT_STRING_EQUAL(p->algorithm, "mtree");
		CU_ASSERT_STRING_EQUAL(p->topology, "t5");
		CU_ASSERT_EQUAL(p->n_nodes, N5);
		CU_ASSERT_EQUAL(p->n_trees, 2);
		CU_ASSERT_EQUAL(p->trees[0].root, A);
		CU_ASSERT_DOUBLE_EQUAL(p->trees[0].rate_gbps, 3, 0);
		CU_ASSERT_DOUBLE_EQUAL(p->trees[0].share, 0.6, 0);
		CU_ASSERT_EQUAL(p->trees[0].chunk_bytes, 1048576);
		CU_ASSERT_EQUAL(memcmp(p->trees[0].parent, tree0, sizeof(tree0)), 0);
		CU_ASSERT_EQUAL(p->trees[1].root, C);
		CU_ASSERT_EQUAL(p->trees[1].chunk_bytes, 65536);
		CU_ASSERT_EQUAL(memcmp(p->trees[1].parent, tree1, sizeof(tree1)), 0);
		CU_ASSERT_EQUAL(p->bytes, 1000000000);
		CU_ASSERT_DOUBLE_EQUAL(p->allreduce_seconds, 23.4, 0);
		CHECK(plan_validate(t, p, 0, err, sizeof(err)) == 0, "%s", err);
		plan_free(p);
	}
	/* plan_parse checks structure only: a cycle parses, plan_validate rejects it. */
	p = PARSE_OK(t, "{" PFMT ",'trees':[{'root':'a','rate_gbps':1,'share':1,'chunk_bytes':1,"
		     "'parent':{'a':null,'b':'c','c':'b'}}]}");
	if (p != NULL) {
		VALIDATE_REJECTS(t, p, 0, "trees[0].parent.b", "cycle");
		plan_free(p);
	}
	/* Negative rates parse too (the rules are plan_validate's). */
	p = PARSE_OK(t, "{" PFMT ",'trees':[{'root':'a','rate_gbps':-1,'share':1,'chunk_bytes':1,"
		     "'parent':{'a':null,'b':'a','c':'a'}}]}");
	if (p != NULL) {
		VALIDATE_REJECTS(t, p, 0, "trees[0].rate_gbps", NULL);
		plan_free(p);
	}
	topo_free(t);
}

static void
test_parse_accepts_other_sections(void)
{
	struct topo *t = topo_sq(topo5_sq);
	char err[512];
	struct plan *p;

	if (t == NULL)
		return;
	/* Unknown top-level sections of other algorithms are accepted with trees present. */
	p = PARSE_OK(t, "{" PFMT ",'algorithm':'hier','groups':[['a','b'],['c']],"
		     "'multicast':{'receivers':{'a':['b','c']}},'trees':[" TREE_A "],'x':null}");
	if (p != NULL) {
		CU_ASSERT_EQUAL(p->n_trees, 1);
		CU_ASSERT_STRING_EQUAL(p->algorithm, "hier");
		plan_free(p);
	}
	/* ... and a plan without trees, predicted or algorithm parses (validation is for
	 * tree plans: it says "no trees"). */
	p = PARSE_OK(t, "{" PFMT ",'groups':[]}");
	if (p != NULL) {
		CU_ASSERT_EQUAL(p->n_trees, 0);
		CU_ASSERT_EQUAL(p->bytes, 0);
		CU_ASSERT_STRING_EQUAL(p->algorithm, "");
		CU_ASSERT_EQUAL(plan_validate(t, p, 0, err, sizeof(err)), -EINVAL);
		plan_free(p);
	}
	/* Extra members inside "predicted" are tolerated. */
	p = PARSE_OK(t, "{" PFMT ",'trees':[],'predicted':{'bytes':5,'allreduce_seconds':1,"
		     "'stddev':0.1}}");
	if (p != NULL) {
		CU_ASSERT_EQUAL(p->bytes, 5);
		plan_free(p);
	}
	/* Integers where reals are expected. */
	p = PARSE_OK(t, "{" PFMT ",'trees':[{'root':'a','rate_gbps':3,'share':1,"
		     "'chunk_bytes':4096,'parent':{'a':null,'b':'a','c':'a'}}],"
		     "'predicted':{'bytes':0,'allreduce_seconds':2}}");
	plan_free(p);
	topo_free(t);
}

static void
test_parse_rejects(void)
{
	struct topo *t = topo_sq(topo5_sq);

	if (t == NULL)
		return;
	/* Document level. */
	PARSE_REJECTS(t, "[]", "not a JSON object");
	PARSE_REJECTS(t, "{'trees':[]}", "'format'");
	PARSE_REJECTS(t, "{'format':'georeduce-topology/1','trees':[]}", "'format'");
	PARSE_REJECTS(t, "{'format':7,'trees':[]}", "'format'");
	PARSE_REJECTS(t, "{" PFMT ",'algorithm':5,'trees':[]}", "'algorithm'");
	PARSE_REJECTS(t, "{" PFMT ",'trees':{}}", "'trees'");
	PARSE_REJECTS(t, "{" PFMT ",'trees':'a'}", "'trees'");
	PARSE_REJECTS(t, "{" PFMT ",'trees':[" TREE_A ",7]}", "trees[1]");
	PARSE_REJECTS(t, "{" PFMT ",'trees':[null]}", "trees[0]");
	/* Unknown node ids. */
	PARSE_REJECTS2(t, "{" PFMT ",'trees':[{'root':'a','rate_gbps':1,'share':1,'chunk_bytes':1,"
		       "'parent':{'a':null,'b':'a','c':'a','zz':'a'}}]}", "trees[0].parent", "'zz'");
	PARSE_REJECTS(t, "{" PFMT ",'trees':[" TREE_A ",{'root':'a','rate_gbps':1,'share':1,"
		      "'chunk_bytes':1,'parent':{'a':null,'b':'zz','c':'a'}}]}", "trees[1].parent.b");
	PARSE_REJECTS(t, "{" PFMT ",'trees':[{'root':'a','rate_gbps':1,'share':1,'chunk_bytes':1,"
		      "'parent':{'a':null,'b':'A','c':'a'}}]}", "trees[0].parent.b");
	PARSE_REJECTS2(t, "{" PFMT ",'trees':[{'root':'zz','rate_gbps':1,'share':1,'chunk_bytes':1,"
		       "'parent':{'a':null,'b':'a','c':'a'}}]}", "trees[0].root", "'zz'");
	/* The root must map to null. */
	PARSE_REJECTS2(t, "{" PFMT ",'trees':[{'root':'a','rate_gbps':1,'share':1,'chunk_bytes':1,"
		       "'parent':{'a':'b','b':null,'c':'b'}}]}", "trees[0].parent.a", "null");
	PARSE_REJECTS(t, "{" PFMT ",'trees':[{'root':'a','rate_gbps':1,'share':1,'chunk_bytes':1,"
		      "'parent':{'b':null,'c':'b'}}]}", "trees[0].parent.a");
	/* Mistyped parent entries. */
	PARSE_REJECTS(t, "{" PFMT ",'trees':[{'root':'a','rate_gbps':1,'share':1,'chunk_bytes':1,"
		      "'parent':{'a':null,'b':0,'c':'a'}}]}", "trees[0].parent.b");
	PARSE_REJECTS(t, "{" PFMT ",'trees':[{'root':'a','rate_gbps':1,'share':1,'chunk_bytes':1,"
		      "'parent':{'a':null,'b':['a'],'c':'a'}}]}", "trees[0].parent.b");
	PARSE_REJECTS(t, "{" PFMT ",'trees':[{'root':'a','rate_gbps':1,'share':1,'chunk_bytes':1,"
		      "'parent':{'a':null,'b':false,'c':'a'}}]}", "trees[0].parent.b");
	PARSE_REJECTS(t, "{" PFMT ",'trees':[{'root':'a','rate_gbps':1,'share':1,'chunk_bytes':1,"
		      "'parent':[['a',null]]}]}", "trees[0].parent");
	PARSE_REJECTS(t, "{" PFMT ",'trees':[{'root':'a','rate_gbps':1,'share':1,'chunk_bytes':1,"
		      "'parent':null}]}", "trees[0]");
	/* Mistyped and missing per-tree fields: the message names the tree. */
	PARSE_REJECTS(t, "{" PFMT ",'trees':[{'root':'a','rate_gbps':'1','share':1,'chunk_bytes':1,"
		      "'parent':{'a':null,'b':'a','c':'a'}}]}", "trees[0]");
	PARSE_REJECTS(t, "{" PFMT ",'trees':[{'root':'a','rate_gbps':1,'share':null,'chunk_bytes':1,"
		      "'parent':{'a':null,'b':'a','c':'a'}}]}", "trees[0]");
	PARSE_REJECTS(t, "{" PFMT ",'trees':[{'root':'a','rate_gbps':1,'share':1,'chunk_bytes':1.5,"
		      "'parent':{'a':null,'b':'a','c':'a'}}]}", "trees[0]");
	PARSE_REJECTS(t, "{" PFMT ",'trees':[{'root':'a','rate_gbps':1,'share':1,"
		      "'chunk_bytes':'1MiB','parent':{'a':null,'b':'a','c':'a'}}]}", "trees[0]");
	PARSE_REJECTS(t, "{" PFMT ",'trees':[{'root':0,'rate_gbps':1,'share':1,'chunk_bytes':1,"
		      "'parent':{'a':null,'b':'a','c':'a'}}]}", "trees[0]");
	PARSE_REJECTS(t, "{" PFMT ",'trees':[{'root':'a','rate_gbps':1,'share':1,"
		      "'parent':{'a':null,'b':'a','c':'a'}}]}", "trees[0]");
	PARSE_REJECTS(t, "{" PFMT ",'trees':[{'rate_gbps':1,'share':1,'chunk_bytes':1,"
		      "'parent':{'a':null,'b':'a','c':'a'}}]}", "trees[0]");
	PARSE_REJECTS(t, "{" PFMT ",'trees':[{'root':'a','rate_gbps':1,'share':1,'chunk_bytes':1}]}",
		      "trees[0]");
	PARSE_REJECTS(t, "{" PFMT ",'trees':[{'root':'a','rate_gbps':1,'share':1,'chunk_bytes':0,"
		      "'parent':{'a':null,'b':'a','c':'a'}}]}", "trees[0].chunk_bytes");
	PARSE_REJECTS(t, "{" PFMT ",'trees':[{'root':'a','rate_gbps':1,'share':1,'chunk_bytes':-4096,"
		      "'parent':{'a':null,'b':'a','c':'a'}}]}", "trees[0].chunk_bytes");
	/* Unknown per-tree field: the tree object is closed. */
	PARSE_REJECTS2(t, "{" PFMT ",'trees':[" TREE_A ",{'root':'a','rate_gbps':1,'share':1,"
		       "'chunk_bytes':1,'color':'red','parent':{'a':null,'b':'a','c':'a'}}]}",
		       "trees[1]", "color");
	/* predicted. */
	PARSE_REJECTS(t, "{" PFMT ",'trees':[],'predicted':{'bytes':-1,'allreduce_seconds':1}}",
		      "'predicted'");
	PARSE_REJECTS(t, "{" PFMT ",'trees':[],'predicted':{'bytes':'1G','allreduce_seconds':1}}",
		      "'predicted'");
	PARSE_REJECTS(t, "{" PFMT ",'trees':[],'predicted':{'bytes':1}}", "'predicted'");
	PARSE_REJECTS(t, "{" PFMT ",'trees':[],'predicted':[1,2]}", "'predicted'");
	/* Duplicate keys, here inside parent: invalid JSON. */
	PARSE_REJECTS_RAW(t, "{\"format\":\"georeduce-plan/1\",\"trees\":[{\"root\":\"a\","
			  "\"rate_gbps\":1,\"share\":1,\"chunk_bytes\":1,\"parent\":{\"a\":null,"
			  "\"b\":\"a\",\"b\":\"c\",\"c\":\"a\"}}]}", SRC ":1:");
	topo_free(t);
}

static void
test_parse_invalid_json(void)
{
	struct topo *t = topo_sq(topo5_sq);
	char err[512];
	struct plan *p;
	int l = -1, c = -1;
	static const struct {
		const char *doc;
		int line;
	} bad[] = {
		{ "", 1 },
		{ "{\n\"format\": \"georeduce-plan/1\",\n\"trees\": [\n}", 4 },
		{ "{\"format\":\"georeduce-plan/1\",\"trees\":[]} trailing", 1 },
		{ "{\"format\":\"georeduce-plan/1\",\n\n\"trees\":[{\"share\":NaN}]}", 3 },
		{ "{\"format\":\"georeduce-plan/1\",\"predicted\":{\"bytes\":1e999,"
		  "\"allreduce_seconds\":1}}", 1 },
		{ "{\"format\":\"georeduce-plan/1\",\"format\":\"georeduce-plan/1\"}", 1 },
		{ "7", 1 },
	};

	if (t == NULL)
		return;
	for (size_t i = 0; i < sizeof(bad) / sizeof(*bad); i++) {
		errno = 0;
		err[0] = '\0';
		p = plan_parse(t, bad[i].doc, SRC, err, sizeof(err));
		CHECK(p == NULL, "accepted: %s", bad[i].doc);
		plan_free(p);
		CU_ASSERT_EQUAL(errno, EINVAL);
		CHECK(sscanf(err, SRC ":%d:%d: invalid JSON", &l, &c) == 2 && l == bad[i].line &&
		      strchr(err, '\n') == NULL, "'%s' (expected line %d)", err, bad[i].line);
	}
	/* src NULL names "<string>". */
	p = plan_parse(t, "{", NULL, err, sizeof(err));
	CU_ASSERT_PTR_NULL(p);
	CHECK(strncmp(err, "<string>:1:", 11) == 0, "'%s'", err);
	topo_free(t);
}

/* Regression (fixed; lib/plan.c parse_tree: json_unpack_ex(..., "{s:s, s:F, s:F, s:I, s:o}")):
 * when a per-tree field has the wrong type, jansson's unpack error text does not say
 * which key ("Expected real or integer, got string"), so the message is
 * "plan.json: field 'trees[0]': Expected real or integer, got string" and does not name
 * the field, which the spec asks for. Fix: read root/rate_gbps/share/chunk_bytes/parent
 * with json_object_get and check each type, naming 'trees[i].<key>' (keep the
 * strict "unknown field" check, e.g. by counting the known keys). */
static void
test_parse_mistyped_field_named(void)
{
	struct topo *t = topo_sq(topo5_sq);

	if (t == NULL)
		return;
	PARSE_REJECTS(t, "{" PFMT ",'trees':[{'root':'a','rate_gbps':'1','share':1,'chunk_bytes':1,"
		      "'parent':{'a':null,'b':'a','c':'a'}}]}", "trees[0].rate_gbps");
	PARSE_REJECTS(t, "{" PFMT ",'trees':[{'root':'a','rate_gbps':1,'share':1,'chunk_bytes':1.5,"
		      "'parent':{'a':null,'b':'a','c':'a'}}]}", "trees[0].chunk_bytes");
	PARSE_REJECTS(t, "{" PFMT ",'trees':[{'root':'a','rate_gbps':1,'share':true,'chunk_bytes':1,"
		      "'parent':{'a':null,'b':'a','c':'a'}}]}", "trees[0].share");
	topo_free(t);
}

/* Regression (fixed; lib/plan.c plan_parse): the top-level "topology" field is never read: a
 * mistyped value ("topology": 5) is accepted, and the parsed plan reports the name of
 * the topology it was parsed against, whatever the file says. Fix: if present, require a
 * string of <= TOPO_NAME_MAX bytes and copy it into p->topology (and let the caller, or
 * plan_validate, compare it with t->name). */
static void
test_parse_topology_field(void)
{
	struct topo *t = topo_sq(topo5_sq);
	struct plan *p;

	if (t == NULL)
		return;
	PARSE_REJECTS(t, "{" PFMT ",'topology':5,'trees':[" TREE_A "]}", "'topology'");
	PARSE_REJECTS(t, "{" PFMT ",'topology':['t5'],'trees':[" TREE_A "]}", "'topology'");
	p = PARSE_OK(t, "{" PFMT ",'topology':'other-name','trees':[" TREE_A "]}");
	if (p != NULL) {
		CHECK(strcmp(p->topology, "other-name") == 0, "p->topology is '%s'", p->topology);
		plan_free(p);
	}
	topo_free(t);
}

/* Regression (fixed; lib/plan.c parse_tree and plan_parse fail() calls: "unknown node id '%.*s'"
 * with a parent key, "trees[%d].parent.%s"): the keys and ids of the file are copied raw
 * into the message, so a key holding a newline (valid JSON, "b\nx") breaks the one-line
 * message. Same fix as for topo.c: sanitize control characters in fail(). */
static void
test_parse_messages_one_line(void)
{
	struct topo *t = topo_sq(topo5_sq);

	if (t == NULL)
		return;
	PARSE_REJECTS(t, "{" PFMT ",'trees':[{'root':'a','rate_gbps':1,'share':1,'chunk_bytes':1,"
		      "'parent':{'a':null,'b':'a','c':'a','z\\nz':'a'}}]}", "trees[0].parent");
	PARSE_REJECTS(t, "{" PFMT ",'trees':[{'root':'a\\nb','rate_gbps':1,'share':1,"
		      "'chunk_bytes':1,'parent':{'a':null}}]}", "trees[0].root");
	topo_free(t);
}

static void
test_too_many_trees(void)
{
	struct topo *t = topo_sq(topo5_sq);
	char *doc = NULL, err[512] = "";
	size_t len = 0;
	struct plan *pl;
	FILE *f;

	if (t == NULL)
		return;
	f = open_memstream(&doc, &len);
	CU_ASSERT_PTR_NOT_NULL_FATAL(f);
	if (f == NULL)
		return;
	fprintf(f, "{\"format\":\"georeduce-plan/1\",\"trees\":[");
	for (int i = 0; i <= PLAN_TREES_MAX; i++)
		fprintf(f, "%s{\"root\":\"a\",\"rate_gbps\":0,\"share\":0,\"chunk_bytes\":1,"
			"\"parent\":{\"a\":null,\"b\":\"a\",\"c\":\"a\"}}", i ? "," : "");
	fprintf(f, "]}");
	fclose(f);
	errno = 0;
	pl = plan_parse(t, doc, SRC, err, sizeof(err));
	CHECK(pl == NULL, "%d trees accepted", PLAN_TREES_MAX + 1);
	plan_free(pl);
	CU_ASSERT_EQUAL(errno, EINVAL);
	CHECK(strstr(err, "'trees'") != NULL, "'%s'", err);
	free(doc);
	topo_free(t);
}

static void
test_write_parse_round_trip(void)
{
	struct topo *t = topo_sq(topo5_sq);
	char err[512] = "", why[512] = "", *text, *text2;
	struct plan *p, *q;

	if (t == NULL)
		return;
	p = plan_valid(t);
	p->trees[1].chunk_bytes = 65536;
	p->trees[0].chunk_bytes = (uint64_t)1 << 40;
	p->bytes = 1000000000;
	p->allreduce_seconds = 23.5;
	text = plan_text(t, p);
	if (text == NULL) {
		CU_FAIL("plan_write failed");
		plan_free(p);
		topo_free(t);
		return;
	}
	q = plan_parse(t, text, "written", err, sizeof(err));
	CHECK(q != NULL, "%s\n%s", err, text);
	if (q != NULL) {
		CHECK(plan_same(p, q, t->n_nodes, why, sizeof(why)), "%s\n%s", why, text);
		CHECK(plan_validate(t, q, 0, err, sizeof(err)) == 0, "%s", err);
		text2 = plan_text(t, q);
		CHECK(text2 != NULL && strcmp(text, text2) == 0, "unstable text:\n%s\nvs\n%s", text,
		      text2 ? text2 : "(null)");
		free(text2);
		plan_free(q);
	}
	/* The document itself: format, absent relays not listed, root mapped to null. */
	{
		json_error_t jerr;
		json_t *root = json_loads(text, 0, &jerr), *tr0, *par;

		CHECK(root != NULL, "%s", jerr.text);
		if (root != NULL) {
			CU_ASSERT_STRING_EQUAL(json_string_value(json_object_get(root, "format")),
					       PLAN_FORMAT);
			CU_ASSERT_STRING_EQUAL(json_string_value(json_object_get(root, "topology")),
					       "t5");
			tr0 = json_array_get(json_object_get(root, "trees"), 0);
			par = json_object_get(tr0, "parent");
			CU_ASSERT_EQUAL(json_object_size(par), 3);
			CU_ASSERT_PTR_NULL(json_object_get(par, "r"));
			CU_ASSERT(json_is_null(json_object_get(par, "a")));
			CU_ASSERT_STRING_EQUAL(json_string_value(json_object_get(par, "c")), "b");
			CU_ASSERT_STRING_EQUAL(json_string_value(json_object_get(tr0, "root")), "a");
			CU_ASSERT(json_is_object(json_object_get(root, "predicted")));
			json_decref(root);
		}
	}
	free(text);
	/* No prediction: no "predicted" section, and none is invented when read back. */
	p->bytes = 0;
	p->allreduce_seconds = 0;
	/* Extra top-level sections are merged on write. */
	p->extra = json_pack("{s:[[s,s],[s]]}", "groups", "a", "b", "c");
	CU_ASSERT_PTR_NOT_NULL(p->extra);
	text = plan_text(t, p);
	if (text == NULL) {
		CU_FAIL("plan_write failed");
		plan_free(p);
		topo_free(t);
		return;
	}
	CHECK(strstr(text, "predicted") == NULL, "%s", text);
	CHECK(strstr(text, "\"groups\"") != NULL, "%s", text);
	q = plan_parse(t, text, "written", err, sizeof(err));
	CHECK(q != NULL, "%s", err);
	if (q != NULL) {
		CU_ASSERT_EQUAL(q->bytes, 0);
		CU_ASSERT_EQUAL(q->n_trees, 2);
		plan_free(q);
	}
	free(text);
	plan_free(p);
	topo_free(t);
}

/* Regression (fixed; lib/jsonutil.c json_util_dump: JSON_REAL_PRECISION(12)): rates and shares
 * are written with 12 significant digits, so a plan computed by the planner (rates like
 * 1/3) does not read back as the same plan. Fix: JSON_REAL_PRECISION(17) (or leave the
 * precision flag out: jansson's default prints the shortest representation that round
 * trips). */
static void
test_round_trip_full_precision(void)
{
	struct topo *t = topo_sq(topo5_sq);
	char err[512] = "", why[512] = "", *text;
	struct plan *p, *q;

	if (t == NULL)
		return;
	p = plan_valid(t);
	p->trees[0].rate_gbps = 1.0 / 3;
	p->trees[1].rate_gbps = 2.0 / 3;
	plan_shares_from_rates(p);
	p->bytes = 123456789;
	p->allreduce_seconds = 0.1 + 0.2;
	text = plan_text(t, p);
	if (text == NULL) {
		CU_FAIL("plan_write failed");
		plan_free(p);
		topo_free(t);
		return;
	}
	q = plan_parse(t, text, "written", err, sizeof(err));
	CHECK(q != NULL, "%s", err);
	if (q != NULL) {
		CHECK(plan_same(p, q, t->n_nodes, why, sizeof(why)), "%s", why);
		/* Whatever the precision, the plan read back stays valid. */
		CHECK(plan_validate(t, q, 0, err, sizeof(err)) == 0, "%s", err);
		plan_free(q);
	}
	free(text);
	plan_free(p);
	topo_free(t);
}

static void
test_load(void)
{
	struct topo *t = topo_sq(topo5_sq);
	char path[512], err[512] = "", *doc = sq(plan_doc_sq);
	const char *dir = getenv("TMPDIR");
	struct plan *p;
	int fd;

	if (t == NULL) {
		free(doc);
		return;
	}
	snprintf(path, sizeof(path), "%s/test_plan_XXXXXX", dir != NULL && *dir ? dir : "/tmp");
	fd = mkstemp(path);
	CU_ASSERT_FATAL(fd >= 0);
	CU_ASSERT_EQUAL(write(fd, doc, strlen(doc)), (ssize_t)strlen(doc));
	close(fd);
	p = plan_load(t, path, err, sizeof(err));
	CHECK(p != NULL, "%s", err);
	if (p != NULL)
		CU_ASSERT_EQUAL(p->n_trees, 2);
	plan_free(p);
	unlink(path);
	errno = 0;
	p = plan_load(t, path, err, sizeof(err)); /* gone now */
	CU_ASSERT_PTR_NULL(p);
	CU_ASSERT_EQUAL(errno, ENOENT);
	CHECK(strncmp(err, path, strlen(path)) == 0, "'%s'", err);
	free(doc);
	topo_free(t);
}

/* ------------------------------------------------------------------------------------ */
/* Fuzzing                                                                              */
/* ------------------------------------------------------------------------------------ */

static uint64_t fuzz_seed = 0x706c616e66757a7aull; /* "planfuzz" */

static const char *const fragments[] = {
	"{", "}", "[", "]", "\"", ",", ":", "-1", "0", "1e999", "null", "true", "\"a\"", "\"b\"",
	"\"c\"", "\"r\"", "\"zz\"", "\\u0000", "\\n", "\n", "\"root\"", "\"parent\"", "\"share\"",
	"\"rate_gbps\"", "\"chunk_bytes\"", "\"trees\"", "\"a\":null", "\"b\":\"a\"", "1.5",
	"18446744073709551616", "9223372036854775807", "-9223372036854775808", "\xff", "{}",
	"[]", ",\"x\":1", "\"predicted\":{\"bytes\":1,\"allreduce_seconds\":1},",
};

static void
test_fuzz_parse(void)
{
	struct topo *t = topo_sq(topo5_sq);
	char *seeds[3];
	unsigned iters = 10000, accepted = 0, valid = 0, bad_msg = 0, bad_plan = 0, bad_rw = 0;
	uint64_t s = fuzz_seed;

	if (t == NULL)
		return;
	seeds[0] = sq(plan_doc_sq);
	seeds[1] = sq("{" PFMT ",'trees':[{'root':'r','rate_gbps':1.5,'share':1,'chunk_bytes':512,"
		      "'parent':{'a':'r','b':'a','c':'r','r':null,'s':'c'}}],'groups':[1]}");
	seeds[2] = sq("{" PFMT ",'algorithm':'ring','trees':[" TREE_C "," TREE_A "," TREE_A "]}");
	for (unsigned it = 0; it < iters; it++) {
		char err[512], *doc;
		struct sbuf b = { 0 };
		unsigned k = 1 + (unsigned)rnd(&s, 2);
		struct plan *p;

		sb_set(&b, seeds[rnd(&s, 3)]);
		for (unsigned m = 0; m < k; m++)
			fuzz_mutate(&b, &s, fragments, sizeof(fragments) / sizeof(*fragments));
		doc = b.p;
		memset(err, 0, sizeof(err));
		errno = 0;
		p = plan_parse(t, doc, "fuzz.json", err, sizeof(err));
		if (p == NULL) {
			if ((err[0] == '\0' || strchr(err, '\n') || errno != EINVAL ||
			     strncmp(err, "fuzz.json", 9) != 0) && bad_msg++ < 3)
				fprintf(stderr, "\n  plan fuzz: bad message '%s' errno %d\n  input: %s\n",
					err, errno, doc);
			free(doc);
			continue;
		}
		accepted++;
		/* Structure promised by plan_parse. */
		for (int i = 0; i < p->n_trees; i++) {
			const struct plan_tree *tr = &p->trees[i];
			bool ok = tr->root >= 0 && tr->root < t->n_nodes &&
				  tr->parent[tr->root] == PLAN_ROOT && tr->chunk_bytes > 0;

			for (int v = 0; v < t->n_nodes; v++)
				ok = ok && (tr->parent[v] == PLAN_ROOT || tr->parent[v] == PLAN_ABSENT ||
					    (tr->parent[v] >= 0 && tr->parent[v] < t->n_nodes));
			if (!ok && bad_plan++ < 3)
				fprintf(stderr, "\n  plan fuzz: trees[%d] malformed\n  input: %s\n", i, doc);
			/* Must not crash or hang, whatever the tree. */
			(void)plan_tree_height_ms(t, tr);
			(void)plan_tree_depth(t, tr);
		}
		for (int h = 0; h < 2; h++) {
			int rc = plan_validate(t, p, h ? 12.0 : 0, err, sizeof(err));

			if (rc == 0)
				valid += h == 0;
			else if ((rc != -EINVAL || err[0] == '\0' || strchr(err, '\n')) &&
				 bad_msg++ < 3)
				fprintf(stderr, "\n  plan fuzz: validate rc %d '%s'\n", rc, err);
		}
		/* Whatever was parsed can be written and read back. */
		{
			char *text = plan_text(t, p);
			struct plan *q = text ? plan_parse(t, text, "rw", err, sizeof(err)) : NULL;

			if ((q == NULL || q->n_trees != p->n_trees) && bad_rw++ < 3)
				fprintf(stderr, "\n  plan fuzz: no round trip: %s\n  input: %s\n",
					q ? "tree count" : err, doc);
			plan_free(q);
			free(text);
		}
		plan_free(p);
		free(doc);
	}
	printf("\n    plan_parse: %u inputs, %u accepted, %u valid (seed 0x%llx) ", iters, accepted,
	       valid, (unsigned long long)fuzz_seed);
	CHECK(bad_msg == 0, "%u bad messages", bad_msg);
	CHECK(bad_plan == 0, "%u malformed plans accepted", bad_plan);
	CHECK(bad_rw == 0, "%u plans did not read back", bad_rw);
	CU_ASSERT(accepted > iters / 100);
	for (int i = 0; i < 3; i++)
		free(seeds[i]);
	topo_free(t);
}

/* An independent statement of the rules of formats.md, for random plans. */
static bool
ref_validate(const struct topo *t, const struct plan *p, double maxh)
{
	double share = 0, *ab, *ba;
	bool ok = p->n_trees > 0 && p->n_nodes == t->n_nodes;

	ab = calloc((size_t)t->n_links + 1, sizeof(*ab));
	ba = calloc((size_t)t->n_links + 1, sizeof(*ba));
	CU_ASSERT_FATAL(ab != NULL && ba != NULL);
	for (int i = 0; ok && i < p->n_trees; i++) {
		const struct plan_tree *tr = &p->trees[i];
		const int *par = tr->parent;
		int roots = 0;
		double height = 0;

		ok = tr->root >= 0 && tr->root < t->n_nodes && par[tr->root] == PLAN_ROOT &&
		     isfinite(tr->rate_gbps) && tr->rate_gbps >= 0 && isfinite(tr->share) &&
		     tr->share >= 0 && tr->share <= 1 + PLAN_EPS && tr->chunk_bytes > 0;
		share += tr->share;
		for (int v = 0; ok && v < t->n_nodes; v++) {
			double lat = 0;
			int u = v, steps = 0;

			if (par[v] == PLAN_ABSENT) {
				ok = t->nodes[v].workers == 0;
				continue;
			}
			if (par[v] == PLAN_ROOT) {
				roots++;
				continue;
			}
			/* Every mapped node reaches the root over links of mapped nodes. */
			while (ok && par[u] != PLAN_ROOT) {
				int w = par[u], l = -1;

				if (w < 0 || w >= t->n_nodes || par[w] == PLAN_ABSENT ||
				    ++steps > t->n_nodes) {
					ok = false;
					break;
				}
				for (int k = 0; k < t->n_links; k++)
					if ((t->links[k].a == u && t->links[k].b == w) ||
					    (t->links[k].a == w && t->links[k].b == u))
						l = k;
				if (l < 0) {
					ok = false;
					break;
				}
				if (u == v) {
					ab[l] += tr->rate_gbps;
					ba[l] += tr->rate_gbps;
				}
				lat += t->links[l].latency_ms;
				u = w;
			}
			height = fmax(height, lat);
		}
		ok = ok && roots == 1;
		if (ok && maxh > 0)
			ok = height <= maxh * (1 + PLAN_EPS) + 1e-9;
	}
	if (ok)
		ok = fabs(share - 1) <= 1e-6 * p->n_trees + 1e-9;
	for (int l = 0; ok && l < t->n_links; l++)
		ok = ab[l] <= t->links[l].gbps_ab * (1 + PLAN_EPS) + 1e-9 &&
		     ba[l] <= t->links[l].gbps_ba * (1 + PLAN_EPS) + 1e-9;
	free(ab);
	free(ba);
	return ok;
}

/* A random spanning tree of t rooted at root (relays included with some probability). */
static void
gen_tree(uint64_t *s, const struct topo *t, int root, int *par)
{
	bool grew = true;

	for (int v = 0; v < t->n_nodes; v++)
		par[v] = PLAN_ABSENT;
	par[root] = PLAN_ROOT;
	while (grew) {
		int cand[64], nc = 0;

		grew = false;
		for (int l = 0; l < t->n_links && nc < 64; l++) {
			const struct topo_link *lk = &t->links[l];
			bool ia = par[lk->a] != PLAN_ABSENT, ib = par[lk->b] != PLAN_ABSENT;

			if (ia != ib)
				cand[nc++] = l;
		}
		if (nc > 0) {
			const struct topo_link *lk = &t->links[cand[rnd(s, (size_t)nc)]];
			bool ia = par[lk->a] != PLAN_ABSENT;

			par[ia ? lk->b : lk->a] = ia ? lk->a : lk->b;
			grew = true;
		}
	}
	/* Drop relay leaves now and then (relays are optional). */
	for (int v = 0; v < t->n_nodes; v++) {
		bool leaf = true;

		for (int u = 0; u < t->n_nodes; u++)
			leaf = leaf && par[u] != v;
		if (t->nodes[v].workers == 0 && leaf && v != root && rnd(s, 2))
			par[v] = PLAN_ABSENT;
	}
}

/* Random plans, mostly valid, some broken on purpose: plan_validate must agree with
 * ref_validate on every one. */
static void
test_fuzz_validate(void)
{
	static const double heights[] = { 0, 5, 12, 15, 30 };
	struct topo *t = topo_sq(topo5_sq);
	unsigned iters = 6000, n_valid = 0, wrong = 0;
	uint64_t s = fuzz_seed ^ 0x0123456789abcdefull;

	if (t == NULL)
		return;
	for (unsigned it = 0; it < iters; it++) {
		int n_trees = 1 + (int)rnd(&s, 3), par[N5];
		bool inject = rnd(&s, 2) == 0;
		double maxh = heights[rnd(&s, 5)];
		struct plan *p = plan_create("rand", t, 1);
		char err[512] = "";
		bool want;
		int rc;

		CU_ASSERT_PTR_NOT_NULL_FATAL(p);
		for (int i = 0; i < n_trees; i++) {
			int root = (int)rnd(&s, N5);

			gen_tree(&s, t, root, par);
			plan_add_tree(p, root, 0.5 * (double)rnd(&s, 10), par);
		}
		if (plan_shares_from_rates(p) != 0)
			for (int i = 0; i < n_trees; i++)
				p->trees[i].share = 1.0 / n_trees;
		while (inject && rnd(&s, 3) != 0) {
			struct plan_tree *tr = &p->trees[rnd(&s, (size_t)n_trees)];
			int v = (int)rnd(&s, N5);

			switch (rnd(&s, 8)) {
			case 0: {
				static const int vals[] = { PLAN_ABSENT, PLAN_ROOT, -3, N5 };

				tr->parent[v] = vals[rnd(&s, 4)];
				break;
			}
			case 1:
			case 2:
				tr->parent[v] = (int)rnd(&s, N5);
				break;
			case 3:
				tr->root = (int)rnd(&s, N5 + 2) - 1;
				break;
			case 4:
				tr->rate_gbps = rnd(&s, 2) ? -0.5 : NAN;
				break;
			case 5:
				tr->share += rnd(&s, 2) ? 0.125 : -0.125;
				break;
			case 6:
				tr->chunk_bytes = 0;
				break;
			default:
				tr->rate_gbps += 4;
				break;
			}
		}
		want = ref_validate(t, p, maxh);
		n_valid += want;
		rc = plan_validate(t, p, maxh, err, sizeof(err));
		if ((rc == 0) != want || (rc != 0 && (rc != -EINVAL || err[0] == '\0' ||
						       strchr(err, '\n') != NULL))) {
			if (wrong++ < 3) {
				fprintf(stderr, "\n  validate: oracle %s, library rc %d '%s' (max height %g)\n",
					want ? "valid" : "invalid", rc, err, maxh);
				for (int i = 0; i < p->n_trees; i++) {
					const struct plan_tree *tr = &p->trees[i];

					fprintf(stderr, "    tree %d root %d rate %g share %g chunk %llu parent",
						i, tr->root, tr->rate_gbps, tr->share,
						(unsigned long long)tr->chunk_bytes);
					for (int v = 0; v < N5; v++)
						fprintf(stderr, " %d", tr->parent[v]);
					fputc('\n', stderr);
				}
			}
		}
		plan_free(p);
	}
	printf("\n    plan_validate: %u plans, %u valid ", iters, n_valid);
	CHECK(wrong == 0, "%u disagreements with the reference rules", wrong);
	CU_ASSERT(n_valid > iters / 5);
	CU_ASSERT(n_valid < iters - iters / 5);
	topo_free(t);
}

/* ------------------------------------------------------------------------------------ */

int
main(void)
{
	static const struct testutil_case tests[] = {
		{ "plan_create", test_create },
		{ "plan_add_tree", test_add_tree },
		{ "plan_shares_from_rates", test_shares_from_rates },
		{ "plan_tree_height_ms and plan_tree_depth", test_height_and_depth },
		{ "validate: valid multi-tree plan", test_validate_valid_multi_tree },
		{ "validate: relay nodes optional", test_validate_relays_optional },
		{ "validate: worker site missing", test_validate_missing_worker },
		{ "validate: parent pair not a link", test_validate_not_a_link },
		{ "validate: cycle", test_validate_cycle },
		{ "validate: two roots, root not null", test_validate_roots },
		{ "validate: capacity per direction (asymmetric)", test_validate_asymmetric_capacity },
		{ "validate: shares", test_validate_shares },
		{ "validate: rates", test_validate_rate },
		{ "validate: chunk_bytes", test_validate_chunk },
		{ "validate: height limit", test_validate_height },
		{ "validate: empty plan, other topology", test_validate_plan_shape },
		{ "parse: valid plan", test_parse_valid },
		{ "parse: other sections accepted", test_parse_accepts_other_sections },
		{ "parse: malformed plans rejected", test_parse_rejects },
		{ "parse: invalid JSON with line:column", test_parse_invalid_json },
		{ "parse: mistyped field is named", test_parse_mistyped_field_named },
		{ "parse: topology field", test_parse_topology_field },
		{ "parse: messages stay one line", test_parse_messages_one_line },
		{ "parse: too many trees", test_too_many_trees },
		{ "write/parse round trip", test_write_parse_round_trip },
		{ "round trip keeps full precision", test_round_trip_full_precision },
		{ "plan_load", test_load },
		{ "fuzz: plan_parse mutations", test_fuzz_parse },
		{ "fuzz: plan_validate against reference rules", test_fuzz_validate },
	};
	const char *seed = getenv("GEOREDUCE_FUZZ_SEED");

	if (seed != NULL && *seed != '\0')
		fuzz_seed = strtoull(seed, NULL, 0);
	return testutil_run("test_plan", "plan", tests, TESTUTIL_N(tests));
}
