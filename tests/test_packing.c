/* SPDX-License-Identifier: BSD-3-Clause
 * Tree-packing bound: hand-checkable graphs and properties on random graphs.
 */
#include <math.h>
#include <stdlib.h>

#include <CUnit/Basic.h>

#include "packing.h"
#include "plan.h"
#include "testutil.h"
#include "topo_gen.h"

static double
bound_of(const struct topo *t, double max_h, struct plan **pool_out, struct packing_result *pr)
{
	struct packing_opts po = { .max_height_ms = max_h };
	struct plan *pool = plan_create("pool", t, 16);
	double z = -1;

	CU_ASSERT_PTR_NOT_NULL_FATAL(pool);
	if (packing_solve(t, pool, &po, pr) == 0)
		z = pr->rate_gbps;
	if (pool_out != NULL)
		*pool_out = pool;
	else
		plan_free(pool);
	return z;
}

/* Every pool tree spans the worker sites and the LP solution respects capacities. */
static void
check_solution(const struct topo *t, const struct plan *pool, double max_h)
{
	double *load = calloc((size_t)t->n_links + 1, sizeof(double));

	for (int i = 0; i < pool->n_trees; i++) {
		const struct plan_tree *tr = &pool->trees[i];

		CU_ASSERT(tr->rate_gbps >= 0);
		for (int v = 0; v < t->n_nodes; v++) {
			if (t->nodes[v].workers > 0)
				CU_ASSERT(tr->parent[v] != PLAN_ABSENT);
			if (tr->parent[v] >= 0)
				load[topo_link_between(t, v, tr->parent[v])] += tr->rate_gbps;
		}
		if (max_h > 0)
			CU_ASSERT(plan_tree_height_ms(t, tr) <= max_h * (1 + 1e-9));
	}
	for (int l = 0; l < t->n_links; l++)
		CU_ASSERT(load[l] <= topo_link_duplex_gbps(t, l) * (1 + 1e-6) + 1e-9);
	free(load);
}

static void
test_complete_graph(void)
{
	for (int n = 2; n <= 9; n++) {
		struct topo *t = gen_complete(n, 1.0, 1.0);
		struct packing_result pr;
		struct plan *pool;
		double z;

		CU_ASSERT_PTR_NOT_NULL_FATAL(t);
		z = bound_of(t, 0, &pool, &pr);
		CU_ASSERT_DOUBLE_EQUAL(z, n / 2.0, 1e-6);
		CU_ASSERT(pr.exact);
		CU_ASSERT_DOUBLE_EQUAL(pr.upper_gbps, n / 2.0, 1e-6);
		check_solution(t, pool, 0);
		plan_free(pool);
		topo_free(t);
	}
}

static void
test_path(void)
{
	double caps[] = { 3.0, 1.25, 2.0, 7.0 };
	struct topo *t = gen_path(5, caps, 2.0);
	struct packing_result pr;

	CU_ASSERT_PTR_NOT_NULL_FATAL(t);
	CU_ASSERT_DOUBLE_EQUAL(bound_of(t, 0, NULL, &pr), 1.25, 1e-9);
	topo_free(t);
}

/* Two K4 of capacity 1 joined by a bridge of capacity b: bound min(b, 2). */
static struct topo *
two_k4(double b)
{
	struct topo_node nodes[8];
	struct topo_link links[13];
	char err[TOPO_ERR_MAX];
	int m = 0;

	gen_names(nodes, 8);
	for (int side = 0; side < 2; side++)
		for (int i = 0; i < 4; i++)
			for (int j = i + 1; j < 4; j++)
				links[m++] = (struct topo_link){ 4 * side + i, 4 * side + j, 1, 1, 1 };
	links[m++] = (struct topo_link){ 0, 4, b, b, 10 };
	return topo_create("bridge", 8, nodes, m, links, err, sizeof(err));
}

static void
test_bridge(void)
{
	struct packing_result pr;
	struct topo *t = two_k4(0.5);

	CU_ASSERT_DOUBLE_EQUAL(bound_of(t, 0, NULL, &pr), 0.5, 1e-9);
	topo_free(t);
	t = two_k4(5.0);
	CU_ASSERT_DOUBLE_EQUAL(bound_of(t, 0, NULL, &pr), 2.0, 1e-6);
	topo_free(t);
}

static void
test_asymmetric_links_use_smaller_direction(void)
{
	struct topo_node nodes[2];
	struct topo_link link = { 0, 1, 4.0, 1.5, 3.0 };
	char err[TOPO_ERR_MAX];
	struct packing_result pr;
	struct topo *t;

	gen_names(nodes, 2);
	t = topo_create("asym", 2, nodes, 1, &link, err, sizeof(err));
	CU_ASSERT_PTR_NOT_NULL_FATAL(t);
	CU_ASSERT_DOUBLE_EQUAL(bound_of(t, 0, NULL, &pr), 1.5, 1e-9);
	topo_free(t);
}

static void
test_random_properties(void)
{
	for (uint64_t seed = 1; seed <= 40; seed++) {
		int n = 4 + (int)(seed % 17);
		struct topo *t = gen_random(seed, n, n, 0.1, 10, 50, (int)(seed & 1), 0);
		struct packing_result pr;
		struct plan *pool;
		double z, deg_cut = INFINITY;

		CU_ASSERT_PTR_NOT_NULL_FATAL(t);
		z = bound_of(t, 0, &pool, &pr);
		CU_ASSERT(pr.exact);
		check_solution(t, pool, 0);
		/* Nash-Williams: the cut around any single node bounds the packing. */
		for (int v = 0; v < t->n_nodes; v++) {
			double s = 0;

			for (int k = t->adj_off[v]; k < t->adj_off[v + 1]; k++)
				s += topo_link_duplex_gbps(t, t->adj[k].link);
			deg_cut = s < deg_cut ? s : deg_cut;
		}
		CU_ASSERT(z <= deg_cut * (1 + 1e-9));
		/* Sum of pool rates is the objective. */
		{
			double s = 0;

			for (int i = 0; i < pool->n_trees; i++)
				s += pool->trees[i].rate_gbps;
			CU_ASSERT_DOUBLE_EQUAL(s, z, 1e-6 * (z + 1));
		}
		plan_free(pool);
		topo_free(t);
	}
}

static void
test_height_limit(void)
{
	for (uint64_t seed = 1; seed <= 15; seed++) {
		struct topo *t = gen_random(seed, 12, 18, 0.5, 5, 40, 0, 0);
		struct packing_result pr, pr0;
		struct plan *pool;
		double z0 = bound_of(t, 0, NULL, &pr0), z;

		/* A generous limit for the smallest trees: 120 ms. */
		z = bound_of(t, 120, &pool, &pr);
		if (z >= 0) {
			check_solution(t, pool, 120);
			CU_ASSERT(z <= z0 * (1 + 1e-6));
		}
		plan_free(pool);
		topo_free(t);
	}
}

static void
test_relays(void)
{
	for (uint64_t seed = 1; seed <= 10; seed++) {
		struct topo *t = gen_random(seed, 15, 10, 1, 4, 10, 0, 3);
		struct packing_result pr;
		struct plan *pool;
		double z = bound_of(t, 0, &pool, &pr);

		CU_ASSERT(z > 0);
		CU_ASSERT(!pr.exact); /* pricing with relays is a heuristic */
		check_solution(t, pool, 0);
		plan_free(pool);
		topo_free(t);
	}
}

int
main(void)
{
	static const struct testutil_case tests[] = {
		{ "complete graph: n c / 2", test_complete_graph },
		{ "path: smallest capacity", test_path },
		{ "bridge", test_bridge },
		{ "asymmetric link", test_asymmetric_links_use_smaller_direction },
		{ "random graphs: feasibility and cut bound", test_random_properties },
		{ "height limit", test_height_limit },
		{ "relay sites", test_relays },
	};

	return testutil_run("test_packing", "packing", tests, TESTUTIL_N(tests));
}
