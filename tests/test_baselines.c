/* SPDX-License-Identifier: BSD-3-Clause
 * Baselines: ring, single tree, parameter server on graphs with known answers.
 */
#include <math.h>
#include <stdlib.h>

#include <CUnit/Basic.h>

#include "baselines.h"
#include "plan.h"
#include "testutil.h"
#include "topo_gen.h"

/* A cycle s0 - s1 - ... - s(n-1) - s0, capacity c, plus chords of capacity chord. */
static struct topo *
cycle(int n, double c, double chord)
{
	struct topo_node *nodes = calloc((size_t)n, sizeof(*nodes));
	struct topo_link *links = calloc((size_t)(n * n), sizeof(*links));
	char err[TOPO_ERR_MAX];
	struct topo *t;
	int m = 0;

	gen_names(nodes, n);
	for (int i = 0; i < n; i++)
		links[m++] = (struct topo_link){ i, (i + 1) % n, c, c, 1 };
	if (chord > 0)
		for (int i = 0; i < n; i++)
			for (int j = i + 2; j < n; j++)
				if (!(i == 0 && j == n - 1))
					links[m++] = (struct topo_link){ i, j, chord, chord, 1 };
	t = topo_create("cycle", n, nodes, m, links, err, sizeof(err));
	free(nodes);
	free(links);
	return t;
}

static void
test_ring_complete_graph(void)
{
	for (int n = 3; n <= 8; n++) {
		struct topo *t = gen_complete(n, 1.0, 1.0);
		struct ring_plan rp;

		CU_ASSERT_EQUAL_FATAL(baseline_ring(t, 1.0, &rp), 0);
		CU_ASSERT_EQUAL(rp.m, n);
		CU_ASSERT_DOUBLE_EQUAL(rp.fwd_gbps, 1.0, 1e-12);
		CU_ASSERT_DOUBLE_EQUAL(rp.rev_gbps, 1.0, 1e-12);
		/* The split is found by ternary search: 1e-6 relative. */
		CU_ASSERT_DOUBLE_EQUAL(rp.rate_gbps, 2.0 * n / (2.0 * (n - 1)), 1e-6);
		CU_ASSERT_DOUBLE_EQUAL(rp.fwd_fraction, 0.5, 1e-6);
		ring_plan_fini(&rp);
		topo_free(t);
	}
}

/* The ring must find the fast cycle among slow chords. */
static void
test_ring_finds_cycle(void)
{
	struct topo *t = cycle(7, 10.0, 0.5);
	struct ring_plan rp;

	CU_ASSERT_EQUAL_FATAL(baseline_ring(t, 1.0, &rp), 0);
	CU_ASSERT_DOUBLE_EQUAL(rp.fwd_gbps, 10.0, 1e-9);
	CU_ASSERT_DOUBLE_EQUAL(rp.fwd_fraction, 0.5, 1e-6);
	ring_plan_fini(&rp);
	topo_free(t);
}

/* On a path the ring is routed: the middle links carry two ring hops per direction. */
static void
test_ring_routed_on_path(void)
{
	double caps[] = { 1, 1, 1 };
	struct topo *t = gen_path(4, caps, 1);
	struct ring_plan rp;

	CU_ASSERT_EQUAL_FATAL(baseline_ring(t, 1.0, &rp), 0);
	/* Order 0 1 2 3: hop 3 -> 0 is routed back over every link in the other direction,
	 * so the forward ring alone already loads both directions of each link once, and
	 * the reversed ring would load them again: no gain from the second direction. */
	CU_ASSERT_DOUBLE_EQUAL(rp.fwd_gbps, 1.0, 1e-12);
	CU_ASSERT_DOUBLE_EQUAL(rp.rev_gbps, 1.0, 1e-12);
	CU_ASSERT_DOUBLE_EQUAL(rp.rate_gbps, 1.0 * 4 / 6, 1e-9);
	CU_ASSERT(rp.step_latency_ms > 2.9);
	ring_plan_fini(&rp);
	topo_free(t);
}

/* Two sites: both ring directions use both link directions, so the ring runs at the
 * slower direction, like a tree: 0.5 Gbit/s, not 1 + 0.5. */
static void
test_ring_two_sites(void)
{
	struct topo_node nodes[2];
	struct topo_link link = { 0, 1, 1.0, 0.5, 10 };
	char err[TOPO_ERR_MAX];
	struct ring_plan rp;
	struct topo *t;

	gen_names(nodes, 2);
	t = topo_create("two", 2, nodes, 1, &link, err, sizeof(err));
	CU_ASSERT_EQUAL_FATAL(baseline_ring(t, 1.0, &rp), 0);
	CU_ASSERT_DOUBLE_EQUAL(rp.rate_gbps, 0.5, 1e-9);
	ring_plan_fini(&rp);
	topo_free(t);
}

static void
test_single_tree(void)
{
	double caps[] = { 4, 2, 9 };
	struct topo *t = gen_path(4, caps, 3);
	struct plan *p = baseline_single_tree(t, 1 << 20, 0);
	char err[256];

	CU_ASSERT_PTR_NOT_NULL_FATAL(p);
	CU_ASSERT_DOUBLE_EQUAL(p->trees[0].rate_gbps, 2, 1e-12);
	CU_ASSERT_EQUAL(plan_validate(t, p, 0, err, sizeof(err)), 0);
	plan_free(p);
	topo_free(t);
	/* On a cycle with weak chords it avoids every chord. */
	t = cycle(6, 3, 0.1);
	p = baseline_single_tree(t, 1 << 20, 0);
	CU_ASSERT_DOUBLE_EQUAL(p->trees[0].rate_gbps, 3, 1e-12);
	plan_free(p);
	topo_free(t);
}

static void
test_parameter_server(void)
{
	/* A star: centre s0 with 4 leaves, capacity 2: the centre is the best server. */
	struct topo_node nodes[5];
	struct topo_link links[4];
	char err[TOPO_ERR_MAX];
	struct ps_plan ps;
	struct topo *t;

	gen_names(nodes, 5);
	for (int i = 0; i < 4; i++)
		links[i] = (struct topo_link){ 0, i + 1, 2, 2, 5 };
	t = topo_create("star", 5, nodes, 4, links, err, sizeof(err));
	CU_ASSERT_EQUAL_FATAL(baseline_ps(t, &ps), 0);
	CU_ASSERT_EQUAL(ps.server, 0);
	CU_ASSERT_DOUBLE_EQUAL(ps.rate_gbps, 2, 1e-12);
	CU_ASSERT_DOUBLE_EQUAL(ps.max_latency_ms, 5, 1e-3);
	/* At a leaf, the leaf's own link carries the other four sites' flows. */
	CU_ASSERT_EQUAL(baseline_ps_at(t, 1, &ps), 0);
	CU_ASSERT_DOUBLE_EQUAL(ps.rate_gbps, 2.0 / 4, 1e-12);
	topo_free(t);
}

int
main(void)
{
	static const struct testutil_case tests[] = {
		{ "ring on a complete graph", test_ring_complete_graph },
		{ "ring finds the fast cycle", test_ring_finds_cycle },
		{ "ring routed over a path", test_ring_routed_on_path },
		{ "ring of two asymmetric sites", test_ring_two_sites },
		{ "max-bottleneck tree", test_single_tree },
		{ "parameter server", test_parameter_server },
	};

	return testutil_run("test_baselines", "baselines", tests, TESTUTIL_N(tests));
}
