/* SPDX-License-Identifier: BSD-3-Clause
 * mTree planner: hand-checkable cases and property tests on random graphs.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>

#include <CUnit/Basic.h>

#include "baselines.h"
#include "mtree.h"
#include "packing.h"
#include "plan.h"
#include "testutil.h"
#include "topo_gen.h"

static double
bound(const struct topo *t)
{
	struct packing_opts po = { 0 };
	struct packing_result pr;
	struct plan *pool = plan_create("pool", t, 16);
	double z = -1;

	if (packing_solve(t, pool, &po, &pr) == 0)
		z = pr.rate_gbps;
	plan_free(pool);
	return z;
}

static struct plan *
plan_with(const struct topo *t, int k, double h, double rmin, int paper)
{
	struct mtree_opts o = MTREE_OPTS_DEFAULT;
	char err[256];

	o.max_trees = k;
	o.max_height_ms = h;
	o.min_rate_gbps = rmin;
	o.paper_only = paper;
	o.bytes = 64u << 20;
	return mtree_plan(t, &o, NULL, err, sizeof(err));
}

static void
test_complete_graph_reaches_bound(void)
{
	for (int n = 3; n <= 10; n++) {
		struct topo *t = gen_complete(n, 2.0, 5.0);
		struct plan *p = plan_with(t, 0, 0, 0, 0);
		char err[256];

		CU_ASSERT_PTR_NOT_NULL_FATAL(p);
		/* Trees under 0.1% of the rate may be dropped at a cost of at most 1%. */
		CU_ASSERT(plan_total_rate(p) >= n * 2.0 / 2 * 0.99);
		CU_ASSERT(plan_total_rate(p) <= n * 2.0 / 2 * (1 + 1e-9));
		CU_ASSERT_EQUAL(plan_validate(t, p, 0, err, sizeof(err)), 0);
		plan_free(p);
		topo_free(t);
	}
}

static void
test_path_rate_is_smallest_capacity(void)
{
	double caps[] = { 5, 0.75, 3 };
	struct topo *t = gen_path(4, caps, 10);
	struct plan *p = plan_with(t, 10, 0, 0, 0);

	CU_ASSERT_PTR_NOT_NULL_FATAL(p);
	CU_ASSERT_EQUAL(p->n_trees, 1);
	CU_ASSERT_DOUBLE_EQUAL(plan_total_rate(p), 0.75, 1e-9);
	CU_ASSERT_DOUBLE_EQUAL(p->trees[0].share, 1.0, 1e-12);
	/* Rooted at the centre: height 20 ms, not 30. */
	CU_ASSERT_DOUBLE_EQUAL(plan_tree_height_ms(t, &p->trees[0]), 20.0, 1e-9);
	plan_free(p);
	topo_free(t);
}

static void
test_height_limit_infeasible(void)
{
	double caps[] = { 1, 1, 1, 1 };
	struct topo *t = gen_path(5, caps, 10); /* radius 20 ms */
	struct mtree_opts o = MTREE_OPTS_DEFAULT;
	char err[256] = "";
	struct plan *p;

	o.max_height_ms = 19;
	errno = 0;
	p = mtree_plan(t, &o, NULL, err, sizeof(err));
	CU_ASSERT_PTR_NULL(p);
	CU_ASSERT_EQUAL(errno, ENOENT);
	CU_ASSERT(err[0] != '\0');
	o.max_height_ms = 20;
	p = mtree_plan(t, &o, NULL, err, sizeof(err));
	CU_ASSERT_PTR_NOT_NULL(p);
	plan_free(p);
	topo_free(t);
}

static void
test_bad_options(void)
{
	struct topo *t = gen_complete(3, 1, 1);
	struct mtree_opts o = MTREE_OPTS_DEFAULT;
	char err[256];

	o.rho = 1.5;
	CU_ASSERT_PTR_NULL(mtree_plan(t, &o, NULL, err, sizeof(err)));
	CU_ASSERT_EQUAL(errno, EINVAL);
	o.rho = 1;
	o.max_trees = -1;
	CU_ASSERT_PTR_NULL(mtree_plan(t, &o, NULL, err, sizeof(err)));
	topo_free(t);
}

/* One tree: at least the max-bottleneck tree's rate (GBST's first tree is that tree). */
static void
test_one_tree_matches_best_tree(void)
{
	for (uint64_t seed = 1; seed <= 20; seed++) {
		struct topo *t = gen_random(seed, 10, 12, 0.1, 10, 30, 1, 0);
		struct plan *p = plan_with(t, 1, 0, 0, 0), *b = baseline_single_tree(t, 1 << 20, 0);

		CU_ASSERT_PTR_NOT_NULL_FATAL(p);
		CU_ASSERT_PTR_NOT_NULL_FATAL(b);
		CU_ASSERT_EQUAL(p->n_trees, 1);
		CU_ASSERT(plan_total_rate(p) >= plan_total_rate(b) * (1 - 1e-9));
		plan_free(p);
		plan_free(b);
		topo_free(t);
	}
}

/* Validity, tree count, height and rate limits, and the bound, on random graphs. */
static void
test_random_properties(void)
{
	static const int ks[] = { 1, 3, 10, 0 };

	for (uint64_t seed = 1; seed <= 24; seed++) {
		int n = 5 + (int)(seed % 13);
		struct topo *t = gen_random(seed, n, n + (int)(seed % 7), 0.2, 8, 60,
					    (int)(seed % 2), seed % 5 == 0 ? 4 : 0);
		double z = bound(t);

		CU_ASSERT_PTR_NOT_NULL_FATAL(t);
		for (size_t ki = 0; ki < sizeof(ks) / sizeof(ks[0]); ki++) {
			for (int hv = 0; hv < 2; hv++) {
				double h = hv ? 150 : 0, rmin = ki == 1 ? 0.05 : 0;
				struct plan *p = plan_with(t, ks[ki], h, rmin, 0);
				char err[256];

				if (p == NULL) {
					/* Only a height limit may make it infeasible. */
					CU_ASSERT(hv == 1);
					continue;
				}
				CU_ASSERT_EQUAL(plan_validate(t, p, h, err, sizeof(err)), 0);
				if (ks[ki] > 0)
					CU_ASSERT(p->n_trees <= ks[ki]);
				for (int i = 0; i < p->n_trees; i++) {
					CU_ASSERT(p->trees[i].rate_gbps >= rmin * (1 - 1e-9));
					CU_ASSERT(p->trees[i].chunk_bytes >= PLANNER_MIN_CHUNK);
				}
				if (topo_worker_sites(t) == t->n_nodes)
					CU_ASSERT(plan_total_rate(p) <= z * (1 + 1e-6));
				/* Unlimited K and H: the column generation reaches the bound, less
				 * at most 1% for dropping negligible trees. */
				if (ks[ki] == 0 && h == 0 && topo_worker_sites(t) == t->n_nodes)
					CU_ASSERT(plan_total_rate(p) >= z * 0.99 * (1 - 1e-9));
				plan_free(p);
			}
		}
		topo_free(t);
	}
}

/* The paper's variant is valid too and never beats ours by more than noise. */
static void
test_paper_variant(void)
{
	for (uint64_t seed = 1; seed <= 10; seed++) {
		struct topo *t = gen_random(seed, 12, 20, 0.2, 8, 60, 0, 0);
		struct plan *ours = plan_with(t, 10, 0, 0, 0), *paper = plan_with(t, 10, 0, 0, 1);
		char err[256];

		CU_ASSERT_PTR_NOT_NULL_FATAL(ours);
		CU_ASSERT_PTR_NOT_NULL_FATAL(paper);
		CU_ASSERT_STRING_EQUAL(paper->algorithm, "mtree-paper");
		CU_ASSERT_EQUAL(plan_validate(t, paper, 0, err, sizeof(err)), 0);
		CU_ASSERT(plan_total_rate(ours) >= plan_total_rate(paper) * (1 - 1e-6));
		plan_free(ours);
		plan_free(paper);
		topo_free(t);
	}
}

/* One worker site (plus relays): a valid plan of that site alone; no GBST loop. */
static void
test_single_worker_site(void)
{
	struct topo_node nodes[3];
	struct topo_link links[] = { { 0, 1, 1, 1, 1 }, { 1, 2, 1, 1, 1 } };
	char err[TOPO_ERR_MAX];
	struct topo *t;
	struct plan *p;

	gen_names(nodes, 3);
	nodes[1].workers = 0;
	nodes[2].workers = 0;
	t = topo_create("one", 3, nodes, 2, links, err, sizeof(err));
	CU_ASSERT_PTR_NOT_NULL_FATAL(t);
	p = plan_with(t, 10, 0, 0, 0);
	CU_ASSERT_PTR_NOT_NULL_FATAL(p);
	CU_ASSERT_EQUAL(p->n_trees, 1);
	CU_ASSERT_EQUAL(p->trees[0].parent[0], PLAN_ROOT);
	CU_ASSERT_EQUAL(p->trees[0].parent[1], PLAN_ABSENT);
	CU_ASSERT_EQUAL(plan_validate(t, p, 0, err, sizeof(err)), 0);
	plan_free(p);
	topo_free(t);
	/* No links at all. */
	t = topo_create("alone", 1, nodes, 0, links, err, sizeof(err));
	CU_ASSERT_PTR_NOT_NULL_FATAL(t);
	p = plan_with(t, 0, 0, 0, 1);
	CU_ASSERT_PTR_NOT_NULL(p);
	plan_free(p);
	topo_free(t);
}

/* Relays on the only paths between worker sites: the trees pass through them. */
static void
test_relays_carry_trees(void)
{
	struct topo_node nodes[5];
	struct topo_link links[] = { { 0, 1, 2, 2, 1 }, { 1, 2, 2, 2, 1 }, { 1, 3, 2, 2, 1 },
				     { 2, 3, 1, 1, 1 } };
	char err[TOPO_ERR_MAX];
	struct topo *t;
	struct plan *p;

	gen_names(nodes, 5);
	nodes[1].workers = 0;
	nodes[4].workers = 0; /* isolated relay */
	t = topo_create("relay", 5, nodes, 4, links, err, sizeof(err));
	CU_ASSERT_PTR_NOT_NULL_FATAL(t);
	p = plan_with(t, 10, 0, 0, 0);
	CU_ASSERT_PTR_NOT_NULL_FATAL(p);
	CU_ASSERT_EQUAL(plan_validate(t, p, 0, err, sizeof(err)), 0);
	CU_ASSERT_DOUBLE_EQUAL(plan_total_rate(p), 2.0, 1e-9); /* the a-r cut */
	for (int i = 0; i < p->n_trees; i++)
		CU_ASSERT_EQUAL(p->trees[i].parent[4], PLAN_ABSENT);
	plan_free(p);
	topo_free(t);
}

static void
test_chunk_formula(void)
{
	/* a = 50 ms + alpha, v = 100 MB, l = 4, 1 Gbit/s:
	 * mu* = sqrt((0.05 + alpha) * 1e8 * 1.25e8 / 3), rounded up to 4 KiB. */
	uint64_t mu = planner_chunk_bytes(100000000, 1.0, 50, 4);
	double want = sqrt((0.05 + PLANNER_ALPHA_S) * 1e8 * 1.25e8 / 3);

	CU_ASSERT((double)mu >= want && (double)mu < want + 4096);
	/* Zero latency: only the per-chunk cost alpha remains. */
	want = sqrt(PLANNER_ALPHA_S * 1e8 * 1.25e8 / 3);
	mu = planner_chunk_bytes(100000000, 1.0, 0, 4);
	CU_ASSERT((double)mu >= want && (double)mu < want + 4096);
	CU_ASSERT_EQUAL(mu % 4096, 0);
	CU_ASSERT_EQUAL(planner_chunk_bytes(1000, 1.0, 50, 4), PLANNER_MIN_CHUNK);
	CU_ASSERT(planner_chunk_bytes(1 << 30, 1.0, 0, 1) == (1u << 30)); /* no pipeline */
}

int
main(void)
{
	static const struct testutil_case tests[] = {
		{ "complete graph reaches n c / 2", test_complete_graph_reaches_bound },
		{ "path: smallest capacity, centred root", test_path_rate_is_smallest_capacity },
		{ "height limit below the radius is infeasible", test_height_limit_infeasible },
		{ "bad options", test_bad_options },
		{ "K = 1 matches the best single tree", test_one_tree_matches_best_tree },
		{ "random graphs: validity and limits", test_random_properties },
		{ "paper variant", test_paper_variant },
		{ "stage 3 chunk size", test_chunk_formula },
		{ "a single worker site", test_single_worker_site },
		{ "relays carry trees", test_relays_carry_trees },
	};

	return testutil_run("test_mtree", "mtree", tests, TESTUTIL_N(tests));
}
