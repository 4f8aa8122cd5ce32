/* SPDX-License-Identifier: BSD-3-Clause
 *
 * Unit tests for several gateways per site (control/compile/table_compile.c, lib/table*.c): the
 * shard of a chunk, tables compiled for one gateway per site through the list of gateways
 * (exactly those of the single-gateway compile), two gateways at one site and one at the
 * other, uneven counts (2 and 3), random topologies, plans and deployments with 1 to 3
 * gateways per site checked strictly and independently of the compiler (every chunk at
 * exactly one gateway of every worker site, the trees' copies joined across gateways, the
 * copies' rates within every link, the workers' view of the shards), the `shards` section
 * of the codec and its rejections, and the limit on the trees of a site.
 *
 * Environment: GEOREDUCE_FUZZ_SEED sets the seed; GEOREDUCE_TEST_QUICK=1 shortens the
 * random test.
 */
#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <CUnit/Basic.h>
#include <CUnit/CUnit.h>
#include <jansson.h>

#include "fuzzutil.h"
#include "plan.h"
#include "table.h"
#include "table_compile.h"
#include "testutil.h"
#include "topo.h"
#include "topo_gen.h"

#define IP(a, b, c, d) ((uint32_t)(a) << 24 | (uint32_t)(b) << 16 | (uint32_t)(c) << 8 | (d))
#define GW_MAX 4 /* gateways per site in these tests */

static uint64_t seed = 0x7368617264733031ull; /* "shards01" */
static bool quick;

/* A deployment under construction: per node its gateways and workers. */
struct dep {
	int n;
	struct table_deploy_node *dn;
	struct table_gw (*gws)[GW_MAX];
	struct table_worker (*wk)[4];
	struct table_deploy d;
	struct table *(*tb)[GW_MAX];  /* compiled: tb[v][j] */
};

static void
dep_init(struct dep *x, int n)
{
	x->n = n;
	x->dn = calloc((size_t)n, sizeof(*x->dn));
	x->gws = calloc((size_t)n, sizeof(*x->gws));
	x->wk = calloc((size_t)n, sizeof(*x->wk));
	x->tb = calloc((size_t)n, sizeof(*x->tb));
	CU_ASSERT_FATAL(x->dn != NULL && x->gws != NULL && x->wk != NULL && x->tb != NULL);
	x->d = (struct table_deploy){ .n_nodes = n, .nodes = x->dn, .elements = 10000,
				      .dtype = TABLE_DTYPE_FP32, .chunk_bytes = 1024 };
}

/* Node v gets g gateways (ids 10 v + j + 1, addresses 10.0.v.j+1) and w workers. */
static void
dep_node(struct dep *x, int v, int g, int w)
{
	for (int j = 0; j < g; j++)
		x->gws[v][j] = (struct table_gw){ (uint16_t)(10 * v + j + 1),
						  IP(10, 0, v, j + 1), (uint16_t)(17400 + 100 * j),
						  (uint16_t)(1 + j) };
	for (int k = 0; k < w; k++)
		x->wk[v][k] = (struct table_worker){ (uint16_t)(100 + 10 * v + k),
						     IP(10, 1, v, k + 1), 5000 };
	x->dn[v] = (struct table_deploy_node){ .n_workers = w, .workers = x->wk[v],
					       .n_gateways = g, .gateways = x->gws[v] };
}

static void
dep_free(struct dep *x)
{
	for (int v = 0; v < x->n; v++)
		for (int j = 0; j < GW_MAX; j++)
			table_free(x->tb[v][j]);
	free(x->dn);
	free(x->gws);
	free(x->wk);
	free(x->tb);
}

/* Compile every gateway; false (reported) if one fails. */
static bool
dep_compile(struct dep *x, const struct topo *t, const struct plan *p)
{
	for (int v = 0; v < x->n; v++)
		for (int j = 0; j < x->dn[v].n_gateways; j++) {
			char err[TABLE_ERR_MAX] = "";

			table_free(x->tb[v][j]);
			x->tb[v][j] = table_compile_gateway(t, p, &x->d, v, j, 7, 3, err,
							    sizeof(err));
			if (!CHECK(x->tb[v][j] != NULL, "node %d gateway %d: %s", v, j, err))
				return false;
		}
	return true;
}

static const struct table_tree *
entry(const struct table *tb, int id)
{
	for (int i = 0; i < tb->n_trees; i++)
		if (tb->trees[i].id == id)
			return &tb->trees[i];
	return NULL;
}

static bool
gw_eq(const struct table_gw *a, const struct table_gw *b)
{
	return a->id == b->id && a->ipv4 == b->ipv4 && a->base_port == b->base_port &&
	       a->ports == b->ports;
}

/* The gateway of node v holding chunk c, by its definition: gateway j of g holds
 * [floor(j C / g), floor((j + 1) C / g)). */
static int
holder(int g, uint64_t n, uint64_t c)
{
	for (int j = 0; j < g; j++)
		if (c >= (uint64_t)j * n / (uint64_t)g && c < (uint64_t)(j + 1) * n / (uint64_t)g)
			return j;
	return -1;
}

/* The length of the segment (cut at every node's shard boundaries) that holds chunk c. */
static uint64_t
segment_len(const struct dep *x, uint64_t n, uint64_t c)
{
	uint64_t lo = 0, hi = n;

	for (int v = 0; v < x->n; v++) {
		int g = x->dn[v].n_gateways;

		for (int j = 1; j < g; j++) {
			uint64_t b = (uint64_t)j * n / (uint64_t)g;

			if (b <= c && b > lo)
				lo = b;
			if (b > c && b < hi)
				hi = b;
		}
	}
	return hi - lo;
}

/* Which node and gateway has id `id`; false if none. */
static bool
find_gw(const struct dep *x, uint16_t id, int *v, int *j)
{
	for (*v = 0; *v < x->n; (*v)++)
		for (*j = 0; *j < x->dn[*v].n_gateways; (*j)++)
			if (x->gws[*v][*j].id == id)
				return true;
	return false;
}

/*
 * The tables of every gateway against the plan and the deployment, independently of the
 * compiler's own walk. Returns the number of problems (the first few printed).
 *  - every table validates and lists its node's workers;
 *  - at a worker site every chunk is in exactly one gateway's trees, the gateway that holds
 *    it; at a relay in at most one, that one;
 *  - every entry with a parent is listed as a child by the parent's entry of the same id,
 *    with its worker count, range and rate, and the parent is the holder of the range at
 *    the plan's parent node; every child of an entry names it as parent and is the holder
 *    at a child node of the plan;
 *  - the copy of plan tree i in a segment runs at rate_i x the segment's part of the
 *    chunks; every chunk has one root, holding every worker;
 *  - on every link direction the copies' rates add up to at most the link's capacity (the
 *    plan's rates fit), and to exactly what the plan's trees put there when every tree
 *    carries chunks in every segment;
 *  - the workers' view (own trees and shards) of every gateway with local workers
 *    partitions the tensor, and each shard's trees are that gateway's own entries.
 */
static int
check_sharded(const struct topo *t, const struct plan *p, struct dep *x)
{
	uint64_t n = (x->d.elements + x->d.chunk_bytes / 4 - 1) / (x->d.chunk_bytes / 4);
	double *load = calloc(2 * (size_t)t->n_links + 1, sizeof(double));
	double *want = calloc(2 * (size_t)t->n_links + 1, sizeof(double));
	uint32_t total = 0;
	int bad = 0;
	char err[TABLE_ERR_MAX];

#define BAD(...)                                             \
	do {                                                 \
		if (bad++ < 6) {                             \
			fprintf(stderr, "\n  sharded: ");    \
			fprintf(stderr, __VA_ARGS__);        \
			fputc('\n', stderr);                 \
		}                                            \
	} while (0)

	CU_ASSERT_FATAL(load != NULL && want != NULL);
	CU_ASSERT_FATAL(x->d.dtype == TABLE_DTYPE_FP32);
	for (int v = 0; v < x->n; v++)
		total += (uint32_t)x->dn[v].n_workers;
	for (int v = 0; v < x->n; v++)
		for (int j = 0; j < x->dn[v].n_gateways; j++) {
			const struct table *tb = x->tb[v][j];

			if (table_validate(tb, err, sizeof(err)) != 0)
				BAD("node %d gateway %d: %s", v, j, err);
			if (!gw_eq(&tb->gw, &x->gws[v][j]))
				BAD("node %d gateway %d: names another gateway", v, j);
			for (int e = 0; e < tb->n_trees; e++)
				if (tb->trees[e].n_workers != x->dn[v].n_workers)
					BAD("node %d gateway %d: trees[%d] has %d workers", v, j, e,
					    tb->trees[e].n_workers);
		}
	/* Every chunk at the gateway holding it. */
	for (int v = 0; v < x->n; v++)
		for (uint64_t c = 0; c < n; c++) {
			int at = 0, who = -1;

			for (int j = 0; j < x->dn[v].n_gateways; j++)
				if (table_tree_of_chunk(x->tb[v][j], (uint32_t)c) != NULL) {
					at++;
					who = j;
				}
			if (x->dn[v].n_workers > 0 && at != 1)
				BAD("node %d chunk %llu: at %d gateways", v, (unsigned long long)c, at);
			if (at > 1 || (at == 1 && who != holder(x->dn[v].n_gateways, n, c)))
				BAD("node %d chunk %llu: at gateway %d, held by %d", v,
				    (unsigned long long)c, who, holder(x->dn[v].n_gateways, n, c));
		}
	/* Entries joined across gateways; rates; roots. */
	for (int v = 0; v < x->n; v++)
		for (int j = 0; j < x->dn[v].n_gateways; j++) {
			const struct table *tb = x->tb[v][j];

			for (int q = 0; q < tb->n_trees; q++) {
				const struct table_tree *e = &tb->trees[q];
				int i = e->id % p->n_trees, pv, pj;
				const struct plan_tree *tr = &p->trees[i];
				double rate = tr->rate_gbps *
					      ((double)segment_len(x, n, e->chunk_first) / (double)n);

				if (fabs(e->rate_gbps - rate) > 1e-12 * rate)
					BAD("node %d gw %d tree %u: rate %.17g, want %.17g", v, j, e->id,
					    e->rate_gbps, rate);
				if (tr->parent[v] == PLAN_ABSENT)
					BAD("node %d tree %u: not in plan tree %d", v, e->id, i);
				if (!e->has_parent) {
					if (tr->parent[v] != PLAN_ROOT || e->subtree_workers != total)
						BAD("tree %u: root at node %d holds %u of %u", e->id, v,
						    e->subtree_workers, total);
					continue;
				}
				if (!find_gw(x, e->parent.id, &pv, &pj) || pv != tr->parent[v] ||
				    pj != holder(x->dn[pv].n_gateways, n, e->chunk_first)) {
					BAD("node %d tree %u: parent %u is not the holder at node %d",
					    v, e->id, e->parent.id, tr->parent[v]);
					continue;
				}
				const struct table_tree *pe = entry(x->tb[pv][pj], e->id);
				bool listed = false;

				for (int k = 0; pe != NULL && k < pe->n_children; k++)
					listed |= gw_eq(&pe->children[k], &tb->gw) &&
						  pe->child_workers[k] == e->subtree_workers;
				if (!listed || pe->chunk_first != e->chunk_first ||
				    pe->chunk_count != e->chunk_count || pe->rate_gbps != e->rate_gbps)
					BAD("node %d tree %u: the parent's entry does not match", v,
					    e->id);
				int l = topo_link_between(t, v, pv);

				if (l < 0) {
					BAD("node %d tree %u: no link to its parent", v, e->id);
					continue;
				}
				load[2 * l] += e->rate_gbps;
				load[2 * l + 1] += e->rate_gbps;
			}
			for (int q = 0; q < tb->n_trees; q++) {
				const struct table_tree *e = &tb->trees[q];

				for (int k = 0; k < e->n_children; k++) {
					int cv, cj;
					const struct table_tree *ce;

					if (!find_gw(x, e->children[k].id, &cv, &cj) ||
					    p->trees[e->id % p->n_trees].parent[cv] != v ||
					    cj != holder(x->dn[cv].n_gateways, n, e->chunk_first) ||
					    (ce = entry(x->tb[cv][cj], e->id)) == NULL ||
					    !ce->has_parent || !gw_eq(&ce->parent, &tb->gw))
						BAD("node %d tree %u: child %u does not name it", v, e->id,
						    e->children[k].id);
				}
			}
		}
	/* What the plan's trees put on each link, for the trees and segments that carry. */
	for (int i = 0; i < p->n_trees; i++) {
		bool carries = false;

		for (int v = 0; v < x->n && !carries; v++)
			for (int j = 0; j < x->dn[v].n_gateways; j++)
				for (int q = 0; q < x->tb[v][j]->n_trees; q++)
					carries |= x->tb[v][j]->trees[q].id % p->n_trees == i;
		if (!carries)
			continue;
		for (int v = 0; v < x->n; v++) {
			int u = p->trees[i].parent[v], l;
			bool used = false;

			if (u < 0)
				continue;
			for (int j = 0; j < x->dn[v].n_gateways && !used; j++)
				for (int q = 0; q < x->tb[v][j]->n_trees; q++)
					used |= x->tb[v][j]->trees[q].id % p->n_trees == i;
			if (!used)
				continue; /* pruned: no worker below */
			l = topo_link_between(t, v, u);
			want[2 * l] += p->trees[i].rate_gbps;
			want[2 * l + 1] += p->trees[i].rate_gbps;
		}
	}
	for (int l = 0; l < t->n_links; l++) {
		const struct topo_link *lk = &t->links[l];
		double cap = fmin(lk->gbps_ab, lk->gbps_ba);

		if (load[2 * l] > cap * (1 + 1e-9) || load[2 * l + 1] > cap * (1 + 1e-9))
			BAD("link %d: the copies carry %.17g Gbit/s, capacity %g", l, load[2 * l],
			    cap);
		if (load[2 * l] > want[2 * l] * (1 + 1e-9))
			BAD("link %d: the copies carry %.17g Gbit/s, the plan %.17g", l,
			    load[2 * l], want[2 * l]);
	}
	/* The workers' view. */
	for (int v = 0; v < x->n; v++)
		for (int j = 0; j < x->dn[v].n_gateways; j++) {
			const struct table *tb = x->tb[v][j];
			uint8_t *hit;

			if (x->dn[v].n_workers == 0 || tb->n_trees == 0) {
				if (tb->n_shards != 0)
					BAD("node %d gateway %d: shards without workers or trees", v, j);
				continue;
			}
			hit = calloc(n, 1);
			CU_ASSERT_FATAL(hit != NULL);
			for (int q = 0; q < tb->n_trees; q++)
				for (uint32_t c = 0; c < tb->trees[q].chunk_count; c++)
					hit[tb->trees[q].chunk_first + c]++;
			for (int s = 0; s < tb->n_shards; s++) {
				const struct table_shard *sh = &tb->shards[s];
				int sv, sj;

				if (!find_gw(x, sh->gw.id, &sv, &sj) || sv != v || sj == j ||
				    !gw_eq(&sh->gw, &x->gws[v][sj])) {
					BAD("node %d gateway %d: shards[%d] is no other gateway of the "
					    "site", v, j, s);
					continue;
				}
				for (int q = 0; q < sh->n_trees; q++) {
					const struct table_shard_tree *st = &sh->trees[q];
					const struct table_tree *oe = entry(x->tb[v][sj], st->id);

					if (oe == NULL || oe->chunk_first != st->chunk_first ||
					    oe->chunk_count != st->chunk_count || oe->slots != st->slots ||
					    oe->window != st->window)
						BAD("node %d gateway %d: shards[%d].trees[%d] is not "
						    "gateway %d's entry", v, j, s, q, sj);
					for (uint32_t c = 0; c < st->chunk_count; c++)
						hit[st->chunk_first + c]++;
				}
			}
			for (uint64_t c = 0; c < n; c++)
				if (hit[c] != 1) {
					BAD("node %d gateway %d: chunk %llu %d times in the workers' "
					    "view", v, j, (unsigned long long)c, hit[c]);
					break;
				}
			free(hit);
		}
	free(load);
	free(want);
#undef BAD
	return bad;
}

/* ------------------------------------------------------------------------------------ */

static void
test_shard_of(void)
{
	for (uint64_t n = 1; n < 70; n++)
		for (int g = 1; g <= 16; g++)
			for (uint64_t c = 0; c < n; c++) {
				int h = holder(g, n, c);

				/* With fewer chunks than gateways some hold none. */
				if (!CHECK(table_shard_of(c, n, g) == h, "n %llu g %d c %llu: %d, want %d",
					   (unsigned long long)n, g, (unsigned long long)c,
					   table_shard_of(c, n, g), h))
					return;
			}
	CU_ASSERT_EQUAL(table_shard_of(0, 1, 1), 0);
	CU_ASSERT_EQUAL(table_shard_of(UINT32_MAX - 1, UINT32_MAX, 3), 2);
}

/* Two sites a and b over one link, one tree rooted at a. */
static struct topo *
two_sites(double gbps)
{
	struct topo_node nodes[2] = {
		{ .id = "a", .workers = 2, .gateways = 1, .lan_gbps = 10, .lan_latency_ms = 0.05 },
		{ .id = "b", .workers = 2, .gateways = 1, .lan_gbps = 10, .lan_latency_ms = 0.05 },
	};
	struct topo_link links[1] = { { 0, 1, gbps, gbps, 10 } };
	char err[TOPO_ERR_MAX];
	struct topo *t = topo_create("two", 2, nodes, 1, links, err, sizeof(err));

	CU_ASSERT_PTR_NOT_NULL_FATAL(t);
	return t;
}

static struct plan *
one_tree(const struct topo *t, double rate)
{
	struct plan *p = plan_create("mtree", t, 1);
	int parent[2] = { PLAN_ROOT, 0 };

	CU_ASSERT_PTR_NOT_NULL_FATAL(p);
	CU_ASSERT_EQUAL_FATAL(plan_add_tree(p, 0, rate, parent), 0);
	CU_ASSERT_EQUAL_FATAL(plan_shares_from_rates(p), 0);
	p->trees[0].chunk_bytes = 1 << 20;
	return p;
}

/* Site a with two gateways, b with one: a's gateways take half the tensor each, b's
 * gateway is a leaf of both halves' trees, each half at half the rate. */
static void
test_two_and_one(void)
{
	struct topo *t = two_sites(10);
	struct plan *p = one_tree(t, 8);
	struct dep x;
	const struct table *a0, *a1, *b0;
	uint32_t n;

	dep_init(&x, 2);
	dep_node(&x, 0, 2, 2);
	dep_node(&x, 1, 1, 2);
	if (!dep_compile(&x, t, p))
		goto out;
	a0 = x.tb[0][0];
	a1 = x.tb[0][1];
	b0 = x.tb[1][0];
	n = (uint32_t)table_n_chunks(a0); /* 10000 / 256: 40 chunks */
	CU_ASSERT_EQUAL(n, 40);
	CU_ASSERT(a0->n_trees == 1 && a1->n_trees == 1 && b0->n_trees == 2);
	CU_ASSERT(a0->trees[0].id == 0 && a1->trees[0].id == 1);
	CU_ASSERT(a0->trees[0].chunk_first == 0 && a0->trees[0].chunk_count == 20);
	CU_ASSERT(a1->trees[0].chunk_first == 20 && a1->trees[0].chunk_count == 20);
	CU_ASSERT(a0->trees[0].rate_gbps == 4 && a1->trees[0].rate_gbps == 4);
	CU_ASSERT(a0->trees[0].role == TABLE_ROLE_ROOT && a0->trees[0].subtree_workers == 4);
	CU_ASSERT(b0->trees[0].has_parent && gw_eq(&b0->trees[0].parent, &x.gws[0][0]));
	CU_ASSERT(b0->trees[1].has_parent && gw_eq(&b0->trees[1].parent, &x.gws[0][1]));
	CU_ASSERT(a0->trees[0].n_children == 1 && gw_eq(&a0->trees[0].children[0], &x.gws[1][0]));
	/* The workers of a find the other half at the other gateway; b's one gateway has
	 * no shards. */
	CU_ASSERT(a0->n_shards == 1 && gw_eq(&a0->shards[0].gw, &x.gws[0][1]) &&
		  a0->shards[0].n_trees == 1 && a0->shards[0].trees[0].id == 1 &&
		  a0->shards[0].trees[0].chunk_first == 20);
	CU_ASSERT(a1->n_shards == 1 && gw_eq(&a1->shards[0].gw, &x.gws[0][0]));
	CU_ASSERT_EQUAL(b0->n_shards, 0);
	CU_ASSERT_EQUAL(check_sharded(t, p, &x), 0);
	/* The section survives the codec, and is absent from b's table. */
	json_t *j = table_to_json(a0);
	char *text = json_dumps(j, 0), err[TABLE_ERR_MAX] = "";
	struct table *back = table_parse(text, "a0", err, sizeof(err));

	CHECK(back != NULL, "%s", err);
	if (back != NULL) {
		json_t *j2 = table_to_json(back);

		CU_ASSERT(json_equal(j, j2));
		json_decref(j2);
		table_free(back);
	}
	free(text);
	json_decref(j);
	j = table_to_json(b0);
	CU_ASSERT_PTR_NULL(json_object_get(j, "shards"));
	json_decref(j);
out:
	dep_free(&x);
	plan_free(p);
	topo_free(t);
}

/* Two gateways at a, three at b: segments at 1/3, 1/2 and 2/3 of the chunks; each copy
 * at its segment's part of the rate. */
static void
test_uneven(void)
{
	struct topo *t = two_sites(10);
	struct plan *p = plan_create("mtree", t, 2);
	int par0[2] = { PLAN_ROOT, 0 }, par1[2] = { 1, PLAN_ROOT };
	struct dep x;

	CU_ASSERT_PTR_NOT_NULL_FATAL(p);
	CU_ASSERT_EQUAL(plan_add_tree(p, 0, 6, par0), 0);
	CU_ASSERT_EQUAL(plan_add_tree(p, 1, 4, par1), 1);
	CU_ASSERT_EQUAL(plan_shares_from_rates(p), 0);
	dep_init(&x, 2);
	x.d.elements = 256 * 60; /* 60 chunks: boundaries 20, 30, 40 */
	dep_node(&x, 0, 2, 3);
	dep_node(&x, 1, 3, 1);
	if (!dep_compile(&x, t, p))
		goto out;
	CU_ASSERT_EQUAL(check_sharded(t, p, &x), 0);
	/* a's gateway 0 holds segments [0, 20) and [20, 30): trees 0, 1, 2, 3. */
	CU_ASSERT_EQUAL(x.tb[0][0]->n_trees, 4);
	CU_ASSERT_EQUAL(x.tb[0][1]->n_trees, 4);
	CU_ASSERT(x.tb[1][0]->n_trees == 2 && x.tb[1][1]->n_trees == 4 &&
		  x.tb[1][2]->n_trees == 2);
	/* Segment [20, 30) is held by a's gateway 0 and b's gateway 1: tree 2 (plan tree 0)
	 * rooted at a0 with b1 below it, at 6 x 10/60. */
	const struct table_tree *e = entry(x.tb[0][0], 2);

	CU_ASSERT(e != NULL && e->role == TABLE_ROLE_ROOT && e->n_children == 1 &&
		  gw_eq(&e->children[0], &x.gws[1][1]) && e->chunk_first == 20 &&
		  fabs(e->rate_gbps - 1.0) < 1e-12);
	CU_ASSERT(x.tb[1][1]->n_shards == 2 && x.tb[0][0]->n_shards == 1);
out:
	dep_free(&x);
	plan_free(p);
	topo_free(t);
}

/* One gateway per node through the list compiles exactly what the node's own fields
 * compile: same JSON, no shards, the plan's tree ids. */
static void
test_one_gateway_unchanged(void)
{
	uint64_t s = seed ^ 0x51;

	for (int it = 0; it < 40; it++) {
		int n = 2 + (int)rnd(&s, 6);
		struct topo *t = gen_random(rng_next(&s), n, (int)rnd(&s, n), 5, 50, 30, 0, 3);
		struct plan *p = plan_create("random", t, 1);
		int *parent = malloc(sizeof(int) * (size_t)n);
		struct dep x, y;

		CU_ASSERT_FATAL(t != NULL && p != NULL && parent != NULL);
		/* A shortest-hop tree from node 0 over the links. */
		for (int v = 0; v < n; v++)
			parent[v] = v == 0 ? PLAN_ROOT : PLAN_ABSENT;
		for (bool grew = true; grew;) {
			grew = false;
			for (int l = 0; l < t->n_links; l++) {
				int a = t->links[l].a, b = t->links[l].b;

				if (parent[a] != PLAN_ABSENT && parent[b] == PLAN_ABSENT) {
					parent[b] = a;
					grew = true;
				} else if (parent[b] != PLAN_ABSENT && parent[a] == PLAN_ABSENT) {
					parent[a] = b;
					grew = true;
				}
			}
		}
		CU_ASSERT_EQUAL_FATAL(plan_add_tree(p, 0, 0.5 + (double)rnd(&s, 9) / 2, parent), 0);
		CU_ASSERT_EQUAL_FATAL(plan_shares_from_rates(p), 0);
		dep_init(&x, n);
		dep_init(&y, n);
		for (int v = 0; v < n; v++) {
			int w = t->nodes[v].workers > 0 ? 1 + (int)rnd(&s, 3) : 0;

			dep_node(&x, v, 1, w);
			dep_node(&y, v, 1, w);
			/* y: the node's own fields, the single-gateway form. */
			y.dn[v] = (struct table_deploy_node){ y.gws[v][0].id, y.gws[v][0].ipv4,
							      y.gws[v][0].base_port,
							      y.gws[v][0].ports, w, y.wk[v], 0,
							      NULL };
		}
		if (dep_compile(&x, t, p))
			for (int v = 0; v < n; v++) {
				char err[TABLE_ERR_MAX] = "";
				struct table *old = table_compile(t, p, &y.d, v, 7, 3, err,
								  sizeof(err));
				json_t *a = table_to_json(x.tb[v][0]), *b = old ? table_to_json(old)
										 : NULL;

				CHECK(old != NULL && json_equal(a, b), "iteration %d node %d: %s", it,
				      v, err);
				CU_ASSERT_EQUAL(x.tb[v][0]->n_shards, 0);
				for (int q = 0; q < x.tb[v][0]->n_trees; q++)
					CU_ASSERT_EQUAL(x.tb[v][0]->trees[q].id, 0);
				json_decref(a);
				json_decref(b);
				table_free(old);
			}
		dep_free(&x);
		dep_free(&y);
		free(parent);
		plan_free(p);
		topo_free(t);
	}
}

/* Random topologies and plans (rates scaled so that the tightest link is full), 1 to 3
 * gateways per node, every gateway compiled and checked together. */
static void
test_random(void)
{
	uint64_t s = seed ^ 0xabcdef;
	int iters = quick ? 40 : 250, sharded = 0, tables = 0;

	for (int it = 0; it < iters; it++) {
		int n = 2 + (int)rnd(&s, 7), n_trees = 1 + (int)rnd(&s, 4), bad;
		struct topo *t = gen_random(rng_next(&s), n, (int)rnd(&s, 2 * n), 5, 50, 40, 0,
					    3 + (int)rnd(&s, 3));
		struct plan *p = plan_create("random", t, n_trees);
		int *parent = malloc(sizeof(int) * (size_t)n);
		bool *in = malloc(sizeof(bool) * (size_t)n);
		double *load = calloc(2 * (size_t)t->n_links, sizeof(double)), f = INFINITY;
		struct dep x;

		CU_ASSERT_FATAL(p != NULL && parent != NULL && in != NULL && load != NULL);
		for (int i = 0; i < n_trees; i++) {
			int root = (int)rnd(&s, (size_t)n), n_in = 1;

			for (int v = 0; v < n; v++) {
				parent[v] = v == root ? PLAN_ROOT : PLAN_ABSENT;
				in[v] = v == root;
			}
			while (n_in < n) {
				const struct topo_link *lk = &t->links[rnd(&s, (size_t)t->n_links)];

				if (in[lk->a] == in[lk->b])
					continue;
				if (in[lk->a])
					parent[lk->b] = lk->a;
				else
					parent[lk->a] = lk->b;
				in[lk->a] = in[lk->b] = true;
				n_in++;
			}
			CU_ASSERT_EQUAL(plan_add_tree(p, root, 0.5 + (double)rnd(&s, 40) / 4, parent),
					i);
		}
		/* Scale every rate so that the plan fills its tightest link direction. */
		for (int i = 0; i < n_trees; i++)
			for (int v = 0; v < n; v++)
				if (p->trees[i].parent[v] >= 0) {
					int l = topo_link_between(t, v, p->trees[i].parent[v]);

					load[2 * l] += p->trees[i].rate_gbps;
				}
		for (int l = 0; l < t->n_links; l++)
			if (load[2 * l] > 0)
				f = fmin(f, fmin(t->links[l].gbps_ab, t->links[l].gbps_ba) / load[2 * l]);
		for (int i = 0; i < n_trees; i++)
			p->trees[i].rate_gbps *= f;
		CU_ASSERT_EQUAL(plan_shares_from_rates(p), 0);
		dep_init(&x, n);
		x.d.elements = 1 + rnd(&s, it % 4 ? 40000 : 600);
		x.d.chunk_bytes = 4 * (uint32_t)(16 + rnd(&s, 240));
		x.d.cset_blocks = it % 3 == 0 ? 1 : 0;
		x.d.min_workers = it % 6 == 0 ? 1 : 0;
		for (int v = 0; v < n; v++) {
			int g = 1 + (int)rnd(&s, 3);

			dep_node(&x, v, g, t->nodes[v].workers > 0 ? 1 + (int)rnd(&s, 4) : 0);
			sharded += g > 1;
		}
		if (dep_compile(&x, t, p)) {
			bad = check_sharded(t, p, &x);
			if (!CHECK(bad == 0, "iteration %d: %d problems", it, bad))
				it = iters;
			for (int v = 0; v < n; v++)
				tables += x.dn[v].n_gateways;
		}
		dep_free(&x);
		free(load);
		free(in);
		free(parent);
		plan_free(p);
		topo_free(t);
	}
	printf("\n    %d tables, %d sites with several gateways ", tables, sharded);
	CU_ASSERT(sharded > 0);
}

/* Bad deployments and plans with several gateways: refused with the field named. */
static void
test_compile_rejects(void)
{
	struct topo *t = two_sites(10);
	struct plan *p = plan_create("mtree", t, 20);
	int parent[2] = { PLAN_ROOT, 0 };
	char err[TABLE_ERR_MAX];
	struct dep x;
	struct table *tb;

	CU_ASSERT_PTR_NOT_NULL_FATAL(p);
	for (int i = 0; i < 20; i++)
		CU_ASSERT_EQUAL(plan_add_tree(p, 0, 0.5, parent), i);
	CU_ASSERT_EQUAL(plan_shares_from_rates(p), 0);
	dep_init(&x, 2);
	x.d.elements = 1 << 20;
	dep_node(&x, 0, 4, 1);
	dep_node(&x, 1, 3, 1);
	/* 4 and 3 gateways: 6 segments; 20 trees make 120 copies, fine. Gateway 1 of a holds
	 * chunks 1024 .. 2047, cut at 1365: two segments. */
	tb = table_compile_gateway(t, p, &x.d, 0, 1, 7, 3, err, sizeof(err));
	CHECK(tb != NULL && tb->n_trees == 2 * 20, "%s", err);
	table_free(tb);
	/* A plan of 60 trees makes 360 copies: more than a site's 256. */
	struct plan *big = plan_create("mtree", t, 60);

	CU_ASSERT_PTR_NOT_NULL_FATAL(big);
	for (int i = 0; i < 60; i++)
		CU_ASSERT_EQUAL(plan_add_tree(big, 0, 0.1, parent), i);
	CU_ASSERT_EQUAL(plan_shares_from_rates(big), 0);
	errno = 0;
	tb = table_compile_gateway(t, big, &x.d, 0, 0, 7, 3, err, sizeof(err));
	CHECK(tb == NULL && errno == E2BIG && strstr(err, "segments") != NULL, "%s", err);
	table_free(tb);
	plan_free(big);
	/* No such gateway; a duplicate id or address among a site's gateways. */
	errno = 0;
	tb = table_compile_gateway(t, p, &x.d, 1, 3, 7, 3, err, sizeof(err));
	CHECK(tb == NULL && errno == EINVAL && strstr(err, "no gateway 3") != NULL, "%s", err);
	x.gws[1][2].id = x.gws[1][0].id;
	tb = table_compile_gateway(t, p, &x.d, 0, 0, 7, 3, err, sizeof(err));
	CHECK(tb == NULL && strstr(err, "deploy.nodes[1] ('b').gateways[2].id") != NULL, "%s",
	      err);
	x.gws[1][2].id = 77;
	x.gws[1][2].ipv4 = x.gws[0][1].ipv4;
	tb = table_compile_gateway(t, p, &x.d, 0, 0, 7, 3, err, sizeof(err));
	CHECK(tb == NULL && strstr(err, "gateways[2].ipv4") != NULL &&
	      strstr(err, "gateways[1] of nodes[0]") != NULL, "%s", err);
	x.gws[1][2].ipv4 = IP(10, 0, 1, 77);
	x.dn[1].n_gateways = TABLE_SITE_GATEWAYS_MAX + 1;
	tb = table_compile_gateway(t, p, &x.d, 0, 0, 7, 3, err, sizeof(err));
	CHECK(tb == NULL && strstr(err, "('b').gateways: 17 gateways") != NULL, "%s", err);
	x.dn[1].n_gateways = 3;
	/* A worker with a gateway's id. */
	x.wk[0][0].id = x.gws[1][1].id;
	tb = table_compile_gateway(t, p, &x.d, 0, 0, 7, 3, err, sizeof(err));
	CHECK(tb == NULL && strstr(err, "already a gateway or worker id") != NULL, "%s", err);
	dep_free(&x);
	plan_free(p);
	topo_free(t);
}

/* A table with shards, parsed; then every broken variant refused, the field named. */
static void
test_parse_rejects(void)
{
	static const char *base =
		"{'format': 'georeduce-table/1', 'job': 1, 'epoch': 2,"
		" 'gateway': {'id': 1, 'ipv4': '10.0.0.1', 'base_port': 17400, 'ports': 2},"
		" 'dtype': 'fp32', 'elements': 1000, 'chunk_elements': 100,"
		" 'limits': {'max_trees': 256, 'max_children': 64, 'max_workers': 192,"
		"            'max_slots': 64},"
		" 'trees': [{'id': 0, 'role': 'root', 'parent': null, 'children': [],"
		"   'workers': [{'id': 11, 'ipv4': '10.0.1.11', 'port': 5000}],"
		"   'expected': 1, 'subtree_workers': 1, 'chunk_first': 0, 'chunk_count': 5,"
		"   'rate_gbps': 1.0, 'slots': 16, 'window': 8}],"
		" 'shards': [{'gateway': {'id': 2, 'ipv4': '10.0.0.2', 'base_port': 17400,"
		"             'ports': 2},"
		"   'trees': [{'id': 1, 'chunk_first': 5, 'chunk_count': 5, 'slots': 16,"
		"              'window': 8}]}]}";
	static const struct {
		const char *path, *value, *want;
	} bad[] = {
		{ "shards", "[]", "field 'shards'" },
		{ "shards.0.trees", "[]", "field 'shards[0].trees'" },
		{ "shards.0.gateway.id", "1", "field 'shards[0].gateway'" },
		{ "shards.0.gateway.ipv4", "'10.0.0.1'", "field 'shards[0].gateway'" },
		{ "shards.0.gateway.id", "11", "field 'shards[0].gateway.id': 11 is a local worker" },
		{ "shards.0.trees.0.id", "0", "field 'shards[0].trees[0].id'" },
		{ "shards.0.trees.0.chunk_first", "4", "overlap" },
		{ "shards.0.trees.0.chunk_first", "6", "end inside the 10 chunks" },
		{ "shards.0.trees.0.chunk_count", "4", "field 'trees': chunks 9..9 are in no tree" },
		{ "shards.0.trees.0.chunk_count", "6", "field 'shards[0].trees[0].chunk_count'" },
		{ "shards.0.trees.0.slots", "24", "field 'shards[0].trees[0].slots'" },
		{ "shards.0.trees.0.slots", "128", "field 'shards[0].trees[0].slots'" },
		{ "shards.0.trees.0.window", "17", "field 'shards[0].trees[0].window'" },
		{ "shards.0.trees.0.extra", "1", "unknown field" },
		{ "shards.0.extra", "1", "unknown field" },
		{ "shards.0.trees.0.id", "'x'", "field 'shards[0].trees[0].id'" },
		{ "trees.0.chunk_count", "4", "field 'trees': chunks 4..4 are in no tree" },
	};
	char *text = sq(base), err[TABLE_ERR_MAX] = "";
	struct table *tb = table_parse(text, "t.json", err, sizeof(err));

	CHECK(tb != NULL, "%s", err);
	if (tb != NULL) {
		CU_ASSERT(tb->n_shards == 1 && tb->shards[0].gw.id == 2 &&
			  tb->shards[0].n_trees == 1 && tb->shards[0].trees[0].window == 8);
		table_free(tb);
	}
	for (size_t k = 0; k < sizeof(bad) / sizeof(bad[0]); k++) {
		json_t *root = json_loads(text, 0, NULL), *o = root, *v;
		char path[64], *tok, *save = NULL, *last = NULL, *value = sq(bad[k].value), *out;

		CU_ASSERT_PTR_NOT_NULL_FATAL(root);
		snprintf(path, sizeof(path), "%s", bad[k].path);
		for (tok = strtok_r(path, ".", &save); tok != NULL; tok = strtok_r(NULL, ".", &save)) {
			if (last != NULL)
				o = json_is_array(o) ? json_array_get(o, (size_t)atoi(last))
						     : json_object_get(o, last);
			last = tok;
		}
		v = json_loads(value, JSON_DECODE_ANY, NULL);
		CU_ASSERT_PTR_NOT_NULL_FATAL(v);
		if (json_is_array(o))
			json_array_set_new(o, (size_t)atoi(last), v);
		else
			json_object_set_new(o, last, v);
		out = json_dumps(root, 0);
		err[0] = '\0';
		tb = table_parse(out, "t.json", err, sizeof(err));
		CHECK(tb == NULL && strstr(err, bad[k].want) != NULL, "%s = %s: got '%s', want '%s'",
		      bad[k].path, bad[k].value, err, bad[k].want);
		table_free(tb);
		free(out);
		free(value);
		json_decref(root);
	}
	/* A relay (no local workers) names no shards. */
	{
		json_t *root = json_loads(text, 0, NULL);
		json_t *t0 = json_array_get(json_object_get(root, "trees"), 0);
		char *out;

		json_object_set_new(t0, "workers", json_array());
		json_object_set_new(t0, "children",
				    json_pack("[{s:i,s:s,s:i,s:i,s:i}]", "id", 3, "ipv4", "10.0.0.3",
					      "base_port", 17400, "ports", 2, "subtree_workers", 1));
		out = json_dumps(root, 0);
		tb = table_parse(out, "t.json", err, sizeof(err));
		CHECK(tb == NULL && strstr(err, "only a gateway with local workers") != NULL, "%s",
		      err);
		table_free(tb);
		free(out);
		json_decref(root);
	}
	free(text);
}

int
main(void)
{
	static const struct testutil_case tests[] = {
		{ "shard of a chunk", test_shard_of },
		{ "two gateways at one site, one at the other", test_two_and_one },
		{ "uneven: two gateways and three", test_uneven },
		{ "one gateway per site: the tables of today", test_one_gateway_unchanged },
		{ "random: 1 to 3 gateways per site, checked strictly", test_random },
		{ "compile: bad inputs rejected", test_compile_rejects },
		{ "parse: shards read, every broken variant refused", test_parse_rejects },
	};
	const char *s = getenv("GEOREDUCE_FUZZ_SEED"), *q = getenv("GEOREDUCE_TEST_QUICK");

	if (s != NULL && *s != '\0')
		seed = strtoull(s, NULL, 0);
	quick = q != NULL && *q != '\0' && strcmp(q, "0") != 0;
	return testutil_run("test_shards", "shards", tests, TESTUTIL_N(tests));
}
