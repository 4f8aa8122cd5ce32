/* SPDX-License-Identifier: BSD-3-Clause
 * Graph algorithms shared by the planners: shortest paths, routes, spanning trees,
 * re-rooting, centres and relay pruning.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>

#include <CUnit/Basic.h>

#include "graph.h"
#include "plan.h"
#include "testutil.h"
#include "topo_gen.h"

/* A square 0-1-2-3-0 with latencies 1, 1, 1, 5 and a pendant relay 4 on node 2. */
static struct topo *
square(void)
{
	struct topo_node nodes[5];
	struct topo_link links[] = {
		{ 0, 1, 1, 1, 1 }, { 1, 2, 2, 2, 1 }, { 2, 3, 3, 3, 1 }, { 3, 0, 4, 4, 5 },
		{ 2, 4, 9, 9, 1 },
	};
	char err[TOPO_ERR_MAX];

	gen_names(nodes, 5);
	nodes[4].workers = 0;
	return topo_create("square", 5, nodes, 5, links, err, sizeof(err));
}

static void
test_shortest_paths(void)
{
	struct topo *t = square();
	double dist[5];
	int pred[5], path[5];

	CU_ASSERT_EQUAL_FATAL(graph_shortest_paths(t, 0, dist, pred), 0);
	CU_ASSERT_DOUBLE_EQUAL(dist[3], 3, 1e-5); /* 0-1-2-3 beats the 5 ms link */
	CU_ASSERT_EQUAL(pred[3], 2);
	CU_ASSERT_EQUAL(pred[0], -1);
	CU_ASSERT_EQUAL(graph_route(t, 0, 3, path), 4);
	CU_ASSERT(path[0] == 0 && path[1] == 1 && path[2] == 2 && path[3] == 3);
	CU_ASSERT_EQUAL(graph_route(t, 2, 2, path), 1);
	topo_free(t);
}

static void
test_hop_tie_break(void)
{
	/* Equal latency over one hop or two: the direct link wins. */
	struct topo_node nodes[3];
	struct topo_link links[] = { { 0, 1, 1, 1, 0 }, { 1, 2, 1, 1, 0 }, { 0, 2, 1, 1, 0 } };
	char err[TOPO_ERR_MAX];
	struct topo *t;
	int path[3];

	gen_names(nodes, 3);
	t = topo_create("tri", 3, nodes, 3, links, err, sizeof(err));
	CU_ASSERT_EQUAL(graph_route(t, 0, 2, path), 2);
	topo_free(t);
}

static void
test_unreachable(void)
{
	/* Node 2 is a disconnected relay: allowed by the format, unreachable here. */
	struct topo_node nodes[3];
	struct topo_link link = { 0, 1, 1, 1, 1 };
	char err[TOPO_ERR_MAX];
	struct topo *t;
	double w[1] = { 1 };
	int path[3], parent[3];

	gen_names(nodes, 3);
	nodes[2].workers = 0;
	t = topo_create("island", 3, nodes, 1, &link, err, sizeof(err));
	CU_ASSERT_PTR_NOT_NULL_FATAL(t);
	CU_ASSERT_EQUAL(graph_route(t, 0, 2, path), -ENOENT);
	CU_ASSERT_EQUAL(graph_min_spanning_tree(t, w, 0, parent), -ENOENT);
	topo_free(t);
}

static void
test_spanning_tree_and_root(void)
{
	struct topo *t = square();
	double w[5] = { 1, 2, 3, 4, 9 };
	int parent[5];

	CU_ASSERT_EQUAL_FATAL(graph_min_spanning_tree(t, w, 0, parent), 0);
	/* Minimum weight: every link but 3-0 (4) and with the pendant. */
	CU_ASSERT_EQUAL(parent[0], PLAN_ROOT);
	CU_ASSERT_EQUAL(parent[1], 0);
	CU_ASSERT_EQUAL(parent[2], 1);
	CU_ASSERT_EQUAL(parent[3], 2);
	CU_ASSERT_EQUAL(parent[4], 2);
	/* The centre of the chain 0-1-2-3 (+4 at 2) by latency is 1 or 2; height 2 ms. */
	{
		int r = graph_center_root(t, parent);
		struct plan_tree tr = { .root = r, .parent = parent };

		CU_ASSERT(r == 1 || r == 2);
		CU_ASSERT_EQUAL(parent[r], PLAN_ROOT);
		CU_ASSERT_DOUBLE_EQUAL(plan_tree_height_ms(t, &tr), 2, 1e-12);
	}
	/* Re-rooting keeps the edge set. */
	graph_reroot(t, parent, 3);
	CU_ASSERT_EQUAL(parent[3], PLAN_ROOT);
	CU_ASSERT_EQUAL(parent[2], 3);
	CU_ASSERT_EQUAL(parent[1], 2);
	CU_ASSERT_EQUAL(parent[0], 1);
	CU_ASSERT_EQUAL(parent[4], 2);
	/* Unusable links are skipped. */
	w[1] = INFINITY;
	CU_ASSERT_EQUAL(graph_min_spanning_tree(t, w, 0, parent), 0);
	CU_ASSERT_EQUAL(parent[1], 0);
	CU_ASSERT_EQUAL(parent[3], 0);
	CU_ASSERT_EQUAL(parent[2], 3);
	topo_free(t);
}

static void
test_prune_relays(void)
{
	struct topo *t = square();
	int parent[5] = { PLAN_ROOT, 0, 1, 2, 2 };

	graph_prune_relay_leaves(t, parent);
	CU_ASSERT_EQUAL(parent[4], PLAN_ABSENT);
	CU_ASSERT_EQUAL(parent[3], 2); /* a worker leaf stays */
	topo_free(t);
	/* A relay root with one child hands the root down. */
	{
		struct topo_node nodes[3];
		struct topo_link links[] = { { 0, 1, 1, 1, 1 }, { 1, 2, 1, 1, 1 } };
		char err[TOPO_ERR_MAX];
		int par[3] = { 1, PLAN_ROOT, 1 };

		gen_names(nodes, 3);
		nodes[0].workers = 0;
		t = topo_create("p", 3, nodes, 2, links, err, sizeof(err));
		graph_prune_relay_leaves(t, par);
		CU_ASSERT_EQUAL(par[0], PLAN_ABSENT);
		CU_ASSERT_EQUAL(par[1], PLAN_ROOT);
		CU_ASSERT_EQUAL(par[2], 1);
		topo_free(t);
	}
}

int
main(void)
{
	static const struct testutil_case tests[] = {
		{ "shortest paths and routes", test_shortest_paths },
		{ "fewer hops break latency ties", test_hop_tie_break },
		{ "unreachable nodes", test_unreachable },
		{ "spanning tree, centre, re-root", test_spanning_tree_and_root },
		{ "relay leaves pruned", test_prune_relays },
	};

	return testutil_run("test_graph", "graph", tests, TESTUTIL_N(tests));
}
