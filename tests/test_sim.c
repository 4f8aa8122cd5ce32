/* SPDX-License-Identifier: BSD-3-Clause
 * Unit tests of the AllReduce simulator (control/planner/sim.c): closed forms on small
 * hand-built topologies for every part of the model (latency, alpha, windows, fair
 * sharing, pacing, rings, parameter server), the mTree chunk-size optimum, input
 * validation, the size bound, and the speed on a large schedule.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <CUnit/Basic.h>
#include <CUnit/CUnit.h>

#include "plan.h"
#include "sim.h"
#include "testutil.h"
#include "topo.h"

#define GBPS 1.0                /* link capacity used throughout */
#define C_BPS (GBPS * 1e9 / 8)  /* the same in bytes/s */
#define ALPHA 20e-6

/* |got - want| within a relative 1e-9 (and 1e-12 s absolute). */
#define ASSERT_TIME(got, want) CU_ASSERT_DOUBLE_EQUAL((got), (want), 1e-9 * fabs(want) + 1e-12)

/* A topology of n nodes (all worker sites unless workers[] says otherwise). */
static struct topo *
mk_topo(int n, const int *workers, int n_links, const struct topo_link *links)
{
	struct topo_node nodes[16];
	char err[TOPO_ERR_MAX];
	struct topo *t;

	memset(nodes, 0, sizeof(nodes));
	for (int i = 0; i < n; i++) {
		snprintf(nodes[i].id, sizeof(nodes[i].id), "n%d", i);
		nodes[i].workers = workers != NULL ? workers[i] : 1;
		nodes[i].gateways = 1;
		nodes[i].lan_gbps = TOPO_DEFAULT_LAN_GBPS;
		nodes[i].lan_latency_ms = TOPO_DEFAULT_LAN_LATENCY_MS;
	}
	t = topo_create("sim-test", n, nodes, n_links, links, err, sizeof(err));
	if (t == NULL)
		fprintf(stderr, "topo_create: %s\n", err);
	return t;
}

/* Add a tree with the given parent[] and fields; returns its index. */
static int
add_tree(struct plan *p, int root, const int *parent, double rate_gbps, double share,
	 uint64_t chunk_bytes)
{
	int i = plan_add_tree(p, root, rate_gbps, parent);

	if (i >= 0) {
		p->trees[i].share = share;
		p->trees[i].chunk_bytes = chunk_bytes;
	}
	return i;
}

/* One tree over topology t: run sim_plan and return the completion time (-1 on error). */
static double
run_tree(const struct topo *t, int root, const int *parent, uint64_t bytes,
	 uint64_t chunk_bytes, const struct sim_params *sp, struct sim_result *res)
{
	struct plan *p = plan_create("test", t, 1);
	struct sim_result r;
	int rc;

	if (p == NULL)
		return -1;
	add_tree(p, root, parent, GBPS, 1.0, chunk_bytes);
	rc = sim_plan(t, p, bytes, sp, &r);
	plan_free(p);
	CU_ASSERT_EQUAL(rc, 0);
	if (res != NULL)
		*res = r;
	return rc == 0 ? r.seconds : -1;
}

/*
 * One link, one chunk of B bytes: reduce 1 -> 0 takes B / c_ba + L + alpha, broadcast
 * 0 -> 1 then B / c_ab + L + alpha. The two directions have different capacities, which
 * also checks that each direction uses its own.
 */
static void
test_single_link(void)
{
	const double lat_ms = 10, b = 1e6;
	struct topo_link l = { 0, 1, GBPS, 2 * GBPS, lat_ms };
	struct topo *t = mk_topo(2, NULL, 1, &l);
	struct sim_params sp = SIM_PARAMS_DEFAULT;
	int parent[2] = { PLAN_ROOT, 0 };
	struct sim_result r;
	double want = b / (2 * C_BPS) + b / C_BPS + 2 * (lat_ms / 1000 + ALPHA);

	CU_ASSERT_PTR_NOT_NULL_FATAL(t);
	ASSERT_TIME(run_tree(t, 0, parent, (uint64_t)b, 1 << 20, &sp, &r), want);
	CU_ASSERT_EQUAL(r.transfers, 2);
	/* The window does not matter for a single chunk. */
	sp.window = 1;
	ASSERT_TIME(run_tree(t, 0, parent, (uint64_t)b, 1 << 20, &sp, NULL), want);
	/* alpha is paid once per hop, on top of the latency. */
	sp.alpha_s = 0.5;
	ASSERT_TIME(run_tree(t, 0, parent, (uint64_t)b, 1 << 20, &sp, NULL), want + 2 * (0.5 - ALPHA));
	topo_free(t);
}

/* A tree of one node and a zero-byte tensor complete at time 0 without transfers. */
static void
test_trivial(void)
{
	struct topo_link l = { 0, 1, GBPS, GBPS, 10 };
	struct topo *t1 = mk_topo(1, NULL, 0, NULL), *t2 = mk_topo(2, NULL, 1, &l);
	struct sim_params sp = SIM_PARAMS_DEFAULT;
	int p1[1] = { PLAN_ROOT }, p2[2] = { PLAN_ROOT, 0 };
	struct sim_result r;

	CU_ASSERT_PTR_NOT_NULL_FATAL(t1);
	CU_ASSERT_PTR_NOT_NULL_FATAL(t2);
	CU_ASSERT_EQUAL(run_tree(t1, 0, p1, 1000000, 1000, &sp, &r), 0.0);
	CU_ASSERT_EQUAL(r.transfers, 0);
	CU_ASSERT_EQUAL(run_tree(t2, 0, p2, 0, 1000, &sp, &r), 0.0);
	CU_ASSERT_EQUAL(r.transfers, 0);
	topo_free(t1);
	topo_free(t2);
}

/*
 * Path 2 - 1 - 0 rooted at 0 with latencies L1 (0-1) and L2 (1-2): the AllReduce is a
 * 4-hop pipeline 2 -> 1 -> 0 -> 1 -> 2. With an unlimited window, n equal chunks of mu
 * bytes flow back to back: the last arrives at (n + 3) mu / c + 2 (L1 + L2) + 4 alpha,
 * close to bytes / c plus the path latency.
 */
static void
test_pipeline_unlimited_window(void)
{
	const double l1 = 10, l2 = 30, mu = 1e6;
	const int n = 100;
	struct topo_link links[2] = { { 0, 1, GBPS, GBPS, l1 }, { 1, 2, GBPS, GBPS, l2 } };
	struct topo *t = mk_topo(3, NULL, 2, links);
	struct sim_params sp = SIM_PARAMS_DEFAULT;
	int parent[3] = { PLAN_ROOT, 0, 1 };
	struct sim_result r;
	double got, lat = 2 * (l1 + l2) / 1000;

	CU_ASSERT_PTR_NOT_NULL_FATAL(t);
	got = run_tree(t, 0, parent, (uint64_t)(n * mu), (uint64_t)mu, &sp, &r);
	ASSERT_TIME(got, (n + 3) * mu / C_BPS + lat + 4 * ALPHA);
	CU_ASSERT_EQUAL(r.transfers, 4 * n);
	CU_ASSERT(got < 1.04 * (n * mu / C_BPS + lat));
	/* A last chunk of half a chunk is half as long on every hop. */
	got = run_tree(t, 0, parent, (uint64_t)(n * mu - mu / 2), (uint64_t)mu, &sp, &r);
	ASSERT_TIME(got, (n + 2.5) * mu / C_BPS + lat + 4 * ALPHA);
	CU_ASSERT_EQUAL(r.transfers, 4 * n);
	topo_free(t);
}

/*
 * The same path with window 1 (stop-and-wait per hop): hop i is busy for
 * T_i = mu / c + L_i + alpha per chunk, a tandem line whose last chunk arrives at
 * sum_i T_i + (n - 1) max_i T_i, i.e. the mTree stage 3 model.
 */
static void
test_pipeline_window_one(void)
{
	const double l1 = 10, l2 = 30, mu = 1e6;
	const int n = 50;
	struct topo_link links[2] = { { 0, 1, GBPS, GBPS, l1 }, { 1, 2, GBPS, GBPS, l2 } };
	struct topo *t = mk_topo(3, NULL, 2, links);
	struct sim_params sp = SIM_PARAMS_DEFAULT;
	int parent[3] = { PLAN_ROOT, 0, 1 };
	double tx = mu / C_BPS, t1 = tx + l1 / 1000 + ALPHA, t2 = tx + l2 / 1000 + ALPHA;

	CU_ASSERT_PTR_NOT_NULL_FATAL(t);
	sp.window = 1;
	ASSERT_TIME(run_tree(t, 0, parent, (uint64_t)(n * mu), (uint64_t)mu, &sp, NULL),
		    2 * (t1 + t2) + (n - 1) * t2);
	topo_free(t);
}

/*
 * Window 2 on one link with a long latency: chunks leave in pairs, one pair per
 * T = mu / c + L + alpha. With n (even) chunks the reduce ends at (n / 2) T + mu / c and
 * the broadcast, which follows the same pattern one T later, at (n / 2 + 1) T + mu / c.
 */
static void
test_window_two(void)
{
	const double lat_ms = 50, mu = 1e6;
	const int n = 10;
	struct topo_link l = { 0, 1, GBPS, GBPS, lat_ms };
	struct topo *t = mk_topo(2, NULL, 1, &l);
	struct sim_params sp = SIM_PARAMS_DEFAULT;
	int parent[2] = { PLAN_ROOT, 0 };
	double tt = mu / C_BPS + lat_ms / 1000 + ALPHA;

	CU_ASSERT_PTR_NOT_NULL_FATAL(t);
	sp.window = 2;
	ASSERT_TIME(run_tree(t, 0, parent, (uint64_t)(n * mu), (uint64_t)mu, &sp, NULL),
		    (n / 2 + 1) * tt + mu / C_BPS);
	/* Unlimited: back to back, then one latency each way. */
	sp.window = 0;
	ASSERT_TIME(run_tree(t, 0, parent, (uint64_t)(n * mu), (uint64_t)mu, &sp, NULL),
		    (n + 1) * mu / C_BPS + 2 * (lat_ms / 1000 + ALPHA));
	topo_free(t);
}

/* Two trees over one link; returns sim_plan's completion time (-1 on error). */
static double
run_two_trees(const struct topo *t, double rate0, double share0, double rate1,
	      double share1, uint64_t bytes, bool pace)
{
	struct plan *p = plan_create("test", t, 2);
	struct sim_params sp = SIM_PARAMS_DEFAULT;
	int parent[2] = { PLAN_ROOT, 0 };
	struct sim_result r;
	int rc;

	if (p == NULL)
		return -1;
	sp.pace = pace;
	add_tree(p, 0, parent, rate0, share0, bytes);
	add_tree(p, 0, parent, rate1, share1, bytes);
	rc = sim_plan(t, p, bytes, &sp, &r);
	plan_free(p);
	CU_ASSERT_EQUAL(rc, 0);
	return rc == 0 ? r.seconds : -1;
}

/*
 * Two trees on one link, one chunk each.
 * - Equal shares, no pacing: both transmit at c / 2, so each direction takes B / c:
 *   2 (B / c + L + alpha). (Serving them one after the other would give
 *   1.5 B / c + 2 (L + alpha).)
 * - Pacing at 0.25 c each: each half takes (B / 2) / (c / 4) = 2 B / c per direction.
 * - Pacing at 0.25 c and 10 c with shares 1/4 and 3/4: water-filling gives the second
 *   tree the 0.75 c the first cannot use, both finish each direction in B / c (an equal
 *   split capped at c / 2 would need 1.5 B / c for the second tree).
 */
static void
test_fair_sharing_and_pacing(void)
{
	const double lat_ms = 10, b = 4e6, hop = lat_ms / 1000 + ALPHA;
	struct topo_link l = { 0, 1, GBPS, GBPS, lat_ms };
	struct topo *t = mk_topo(2, NULL, 1, &l);

	CU_ASSERT_PTR_NOT_NULL_FATAL(t);
	ASSERT_TIME(run_two_trees(t, 0.5, 0.5, 0.5, 0.5, (uint64_t)b, false),
		    2 * (b / C_BPS + hop));
	ASSERT_TIME(run_two_trees(t, 0.25, 0.5, 0.25, 0.5, (uint64_t)b, true),
		    2 * (2 * b / C_BPS + hop));
	ASSERT_TIME(run_two_trees(t, 0.25, 0.25, 10, 0.75, (uint64_t)b, true),
		    2 * (b / C_BPS + hop));
	/* Unpaced, unequal shares: the first tree's reduce ends at 0.5 B / c (c / 2 each),
	 * the second's at B / c (alone at c for its last 0.5 B); its broadcast then runs
	 * alone at c (the first tree's ended at 0.75 B / c + hop): 1.75 B / c + 2 hop. */
	ASSERT_TIME(run_two_trees(t, 0.25, 0.25, 10, 0.75, (uint64_t)b, false),
		    1.75 * b / C_BPS + 2 * hop);
	topo_free(t);
}

/* The 4-node cycle 0-1-2-3-0 with capacity c and latency lat_ms. */
static struct topo *
mk_cycle4(double lat_ms)
{
	struct topo_link links[4];

	for (int i = 0; i < 4; i++)
		links[i] = (struct topo_link){ i, (i + 1) % 4, GBPS, GBPS, lat_ms };
	return mk_topo(4, NULL, 4, links);
}

/*
 * Ring over the 4-cycle, one chunk per step: 2 (m - 1) steps of B / (m c) + L + alpha,
 * i.e. 2 (m - 1) / m * B / c + 2 (m - 1) (L + alpha). A bidirectional ring halves the
 * bandwidth term (the two directions use opposite link directions).
 */
static void
test_ring_cycle(void)
{
	const double lat_ms = 5, b = 4e6, hop = lat_ms / 1000 + ALPHA;
	const int m = 4, order[4] = { 0, 1, 2, 3 }, order2[4] = { 0, 2, 1, 3 };
	struct topo *t = mk_cycle4(lat_ms);
	struct sim_params sp = SIM_PARAMS_DEFAULT;
	double want = 2.0 * (m - 1) / m * b / C_BPS + 2 * (m - 1) * hop;
	struct sim_result r;

	CU_ASSERT_PTR_NOT_NULL_FATAL(t);
	CU_ASSERT_EQUAL(sim_ring(t, order, m, 1.0, (uint64_t)b, 1 << 20, &sp, &r), 0);
	ASSERT_TIME(r.seconds, want);
	CU_ASSERT_EQUAL(r.transfers, 2 * (m - 1) * m);
	sp.window = 1;
	CU_ASSERT_EQUAL(sim_ring(t, order, m, 1.0, (uint64_t)b, 1 << 20, &sp, &r), 0);
	ASSERT_TIME(r.seconds, want);
	/* The reversed ring alone is the same by symmetry. */
	CU_ASSERT_EQUAL(sim_ring(t, order, m, 0.0, (uint64_t)b, 1 << 20, &sp, &r), 0);
	ASSERT_TIME(r.seconds, want);
	/* Bidirectional. */
	CU_ASSERT_EQUAL(sim_ring(t, order, m, 0.5, (uint64_t)b, 1 << 20, &sp, &r), 0);
	ASSERT_TIME(r.seconds, 2.0 * (m - 1) / m * (b / 2) / C_BPS + 2 * (m - 1) * hop);
	CU_ASSERT_EQUAL(r.transfers, 2 * 2 * (m - 1) * m);
	/* Order 0 2 1 3: the pairs 0-2 and 1-3 are routed over two hops each. */
	CU_ASSERT_EQUAL(sim_ring(t, order2, m, 1.0, (uint64_t)b, 1 << 20, &sp, &r), 0);
	CU_ASSERT_EQUAL(r.transfers, 2 * (m - 1) * (2 + 1 + 2 + 1));
	CU_ASSERT(r.seconds > want * 1.2);
	/* A ring of one member has nothing to do. */
	CU_ASSERT_EQUAL(sim_ring(t, order, 1, 1.0, (uint64_t)b, 1 << 20, &sp, &r), 0);
	CU_ASSERT_EQUAL(r.seconds, 0.0);
	topo_free(t);
}

/*
 * Parameter server on a star with centre 0 and leaves 1..k.
 * - Server at the centre, one chunk: every leaf uses its own link both ways:
 *   2 (B / c + L + alpha). With n chunks of mu: (n + 1) mu / c + 2 (L + alpha).
 * - Server at leaf 1, centre a relay (no workers): the k - 1 other leaves share
 *   0 -> 1 and then 1 -> 0 fairly: 2 (k B / c + 2 (L + alpha)).
 */
static void
test_ps_star(void)
{
	const double lat_ms = 7, b = 2e6, hop = lat_ms / 1000 + ALPHA;
	const int k = 4, relay[5] = { 0, 1, 1, 1, 1 };
	struct topo_link links[4];
	struct sim_params sp = SIM_PARAMS_DEFAULT;
	struct topo *t, *tr;
	struct sim_result r;

	for (int i = 0; i < k; i++)
		links[i] = (struct topo_link){ 0, i + 1, GBPS, GBPS, lat_ms };
	t = mk_topo(k + 1, NULL, k, links);
	tr = mk_topo(k + 1, relay, k, links);
	CU_ASSERT_PTR_NOT_NULL_FATAL(t);
	CU_ASSERT_PTR_NOT_NULL_FATAL(tr);
	CU_ASSERT_EQUAL(sim_ps(t, 0, (uint64_t)b, 1 << 22, &sp, &r), 0);
	ASSERT_TIME(r.seconds, 2 * (b / C_BPS + hop));
	CU_ASSERT_EQUAL(r.transfers, 2 * k);
	CU_ASSERT_EQUAL(sim_ps(t, 0, (uint64_t)b, (uint64_t)b / 20, &sp, &r), 0);
	ASSERT_TIME(r.seconds, 21 * (b / 20) / C_BPS + 2 * hop);
	CU_ASSERT_EQUAL(r.transfers, 2 * k * 20);
	CU_ASSERT_EQUAL(sim_ps(tr, 1, (uint64_t)b, 1 << 22, &sp, &r), 0);
	ASSERT_TIME(r.seconds, 2 * (k * b / C_BPS + 2 * hop));
	CU_ASSERT_EQUAL(r.transfers, 2 * 2 * (k - 1));
	topo_free(t);
	topo_free(tr);
}

/*
 * Completion time versus chunk count with window 1 on the path 2 - 1 - 0 (latencies
 * 5 ms and 35 ms, alpha 0): t(n) = sum a + (n - 1) max a + 3 beta mu + beta v with
 * mu = v / n, convex in n, minimal near v / mu* with mu* = sqrt(max a v / ((l - 1) beta)),
 * l = 4 (here v / mu* = 7.03). v = 72072000 is divisible by every n <= 16.
 */
static void
test_chunk_size_optimum(void)
{
	const double l1 = 35, l2 = 5, v = 72072000, beta = 1 / C_BPS, maxa = l1 / 1000;
	struct topo_link links[2] = { { 0, 1, GBPS, GBPS, l1 }, { 1, 2, GBPS, GBPS, l2 } };
	struct topo *t = mk_topo(3, NULL, 2, links);
	struct sim_params sp = SIM_PARAMS_DEFAULT;
	int parent[3] = { PLAN_ROOT, 0, 1 }, best = 1;
	double tn[17], mu_star, n_star;

	CU_ASSERT_PTR_NOT_NULL_FATAL(t);
	sp.alpha_s = 0;
	sp.window = 1;
	for (int n = 1; n <= 16; n++) {
		double mu = v / n;

		tn[n] = run_tree(t, 0, parent, (uint64_t)v, (uint64_t)mu, &sp, NULL);
		ASSERT_TIME(tn[n], 2 * (l1 + l2) / 1000 + (n - 1) * maxa + 3 * beta * mu + beta * v);
		if (tn[n] < tn[best])
			best = n;
	}
	for (int n = 2; n <= 15; n++)
		CU_ASSERT(tn[n - 1] + tn[n + 1] - 2 * tn[n] >= -1e-9);
	mu_star = sqrt(maxa * v / (3 * beta));
	n_star = v / mu_star;
	CU_ASSERT(best > 1 && best < 16);
	CU_ASSERT(best >= n_star / 2 && best <= n_star * 2);
	topo_free(t);
}

static void
test_invalid(void)
{
	struct topo_link l = { 0, 1, GBPS, GBPS, 10 };
	struct topo *t = mk_topo(2, NULL, 1, &l), *t3 = mk_cycle4(5);
	struct sim_params sp = SIM_PARAMS_DEFAULT, bad = SIM_PARAMS_DEFAULT;
	int parent[2] = { PLAN_ROOT, 0 }, p4[4] = { PLAN_ROOT, 0, 0, 2 };
	int cyc[4] = { PLAN_ROOT, 2, 1, 0 }, two_roots[4] = { PLAN_ROOT, 0, PLAN_ROOT, 0 };
	const int dup[3] = { 0, 1, 1 }, oor[2] = { 0, 2 }, ok[2] = { 0, 1 };
	struct plan *p = NULL, *p3 = NULL;
	struct sim_result r;

	CU_ASSERT_PTR_NOT_NULL_FATAL(t);
	CU_ASSERT_PTR_NOT_NULL_FATAL(t3);
	p = plan_create("test", t, 1);
	p3 = plan_create("test", t3, 1);
	CU_ASSERT_PTR_NOT_NULL_FATAL(p);
	CU_ASSERT_PTR_NOT_NULL_FATAL(p3);
	add_tree(p, 0, parent, GBPS, 1, 1 << 20);
	CU_ASSERT_EQUAL(sim_plan(t, p, 1000, &sp, &r), 0);
	/* A plan for a different node count. */
	CU_ASSERT_EQUAL(sim_plan(t3, p, 1000, &sp, &r), -EINVAL);
	CU_ASSERT_EQUAL(sim_plan(t, p, 1000, NULL, &r), -EINVAL);
	bad.window = -1;
	CU_ASSERT_EQUAL(sim_plan(t, p, 1000, &bad, &r), -EINVAL);
	bad = (struct sim_params)SIM_PARAMS_DEFAULT;
	bad.alpha_s = -1;
	CU_ASSERT_EQUAL(sim_plan(t, p, 1000, &bad, &r), -EINVAL);
	p->trees[0].chunk_bytes = 0;
	CU_ASSERT_EQUAL(sim_plan(t, p, 1000, &sp, &r), -EINVAL);
	p->trees[0].chunk_bytes = 1000;
	p->trees[0].share = 1.5;
	CU_ASSERT_EQUAL(sim_plan(t, p, 1000, &sp, &r), -EINVAL);
	p->trees[0].share = 1;
	/* Pacing a tree at rate 0 would never finish. */
	p->trees[0].rate_gbps = 0;
	sp.pace = true;
	CU_ASSERT_EQUAL(sim_plan(t, p, 1000, &sp, &r), -EINVAL);
	sp.pace = false;
	/* On the cycle 0-1-2-3-0: a child-parent pair that is not a link (2 -> 0), a cycle
	 * (1 -> 2 -> 1), two roots. */
	add_tree(p3, 0, p4, GBPS, 1, 1000);
	CU_ASSERT_EQUAL(sim_plan(t3, p3, 1000, &sp, &r), -EINVAL);
	memcpy(p3->trees[0].parent, cyc, sizeof(cyc));
	CU_ASSERT_EQUAL(sim_plan(t3, p3, 1000, &sp, &r), -EINVAL);
	memcpy(p3->trees[0].parent, two_roots, sizeof(two_roots));
	CU_ASSERT_EQUAL(sim_plan(t3, p3, 1000, &sp, &r), -EINVAL);

	CU_ASSERT_EQUAL(sim_ring(t, ok, 2, 1.0, 1000, 100, &sp, &r), 0);
	CU_ASSERT_EQUAL(sim_ring(t3, dup, 3, 1.0, 1000, 100, &sp, &r), -EINVAL);
	CU_ASSERT_EQUAL(sim_ring(t, oor, 2, 1.0, 1000, 100, &sp, &r), -EINVAL);
	CU_ASSERT_EQUAL(sim_ring(t, ok, 0, 1.0, 1000, 100, &sp, &r), -EINVAL);
	CU_ASSERT_EQUAL(sim_ring(t, ok, 2, -0.1, 1000, 100, &sp, &r), -EINVAL);
	CU_ASSERT_EQUAL(sim_ring(t, ok, 2, 1.1, 1000, 100, &sp, &r), -EINVAL);
	CU_ASSERT_EQUAL(sim_ring(t, ok, 2, NAN, 1000, 100, &sp, &r), -EINVAL);
	CU_ASSERT_EQUAL(sim_ring(t, ok, 2, 1.0, 1000, 0, &sp, &r), -EINVAL);
	CU_ASSERT_EQUAL(sim_ring(t, ok, 2, 1.0, 1000, 100, NULL, &r), -EINVAL);

	CU_ASSERT_EQUAL(sim_ps(t, 0, 1000, 100, &sp, &r), 0);
	CU_ASSERT_EQUAL(sim_ps(t, 2, 1000, 100, &sp, &r), -EINVAL);
	CU_ASSERT_EQUAL(sim_ps(t, -1, 1000, 100, &sp, &r), -EINVAL);
	CU_ASSERT_EQUAL(sim_ps(t, 0, 1000, 0, &sp, &r), -EINVAL);
	CU_ASSERT_EQUAL(sim_ps(t, 0, 1000, 100, NULL, &r), -EINVAL);
	plan_free(p);
	plan_free(p3);
	topo_free(t);
	topo_free(t3);
}

/* Schedules above SIM_MAX_TRANSFERS are refused up front (and quickly). */
static void
test_too_big(void)
{
	struct topo *t = mk_cycle4(5);
	struct sim_params sp = SIM_PARAMS_DEFAULT;
	int parent[4] = { PLAN_ROOT, 0, 1, 2 };
	const int order[4] = { 0, 1, 2, 3 };
	const uint64_t huge = 1ull << 40;
	struct plan *p;
	struct sim_result r;

	CU_ASSERT_PTR_NOT_NULL_FATAL(t);
	p = plan_create("test", t, 1);
	CU_ASSERT_PTR_NOT_NULL_FATAL(p);
	add_tree(p, 0, parent, GBPS, 1, 1);
	CU_ASSERT_EQUAL(sim_plan(t, p, huge, &sp, &r), -E2BIG);
	/* Just above the bound: 6 transfers per chunk. */
	p->trees[0].chunk_bytes = 1000;
	CU_ASSERT_EQUAL(sim_plan(t, p, (SIM_MAX_TRANSFERS / 6 + 1) * 1000ull, &sp, &r), -E2BIG);
	CU_ASSERT_EQUAL(sim_ring(t, order, 4, 0.5, huge, 1, &sp, &r), -E2BIG);
	CU_ASSERT_EQUAL(sim_ps(t, 0, huge, 1, &sp, &r), -E2BIG);
	plan_free(p);
	topo_free(t);
}

static double
now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/*
 * About 1e6 transfers: four star trees over K8 rooted at 0..3 with equal shares, so the
 * links between the roots carry two trees per direction. Every tree edge carries a quarter
 * of the tensor each way at no less than c / 2, so the result lies between
 * 2 * (v / 4) / c and 2 * (v / 4) / (c / 2) plus a few latencies. Prints the speed.
 */
static void
test_large(void)
{
	const int n = 8, k = 4;
	const uint64_t chunk = 64 << 10, v = (uint64_t)chunk * 17900 * k;
	struct topo_link links[28];
	struct sim_params sp = SIM_PARAMS_DEFAULT;
	struct topo *t;
	struct plan *p;
	struct sim_result r;
	double t0, el, lo = 2 * (v / 4.0) / C_BPS;
	int m = 0, rc;

	for (int i = 0; i < n; i++)
		for (int j = i + 1; j < n; j++)
			links[m++] = (struct topo_link){ i, j, GBPS, GBPS, 10 + i + j };
	t = mk_topo(n, NULL, m, links);
	CU_ASSERT_PTR_NOT_NULL_FATAL(t);
	p = plan_create("test", t, k);
	CU_ASSERT_PTR_NOT_NULL_FATAL(p);
	for (int root = 0; root < k; root++) {
		int parent[8];

		for (int v2 = 0; v2 < n; v2++)
			parent[v2] = v2 == root ? PLAN_ROOT : root;
		add_tree(p, root, parent, GBPS / 2, 1.0 / k, chunk);
	}
	t0 = now_s();
	rc = sim_plan(t, p, v, &sp, &r);
	el = now_s() - t0;
	CU_ASSERT_EQUAL(rc, 0);
	CU_ASSERT(r.transfers >= 1000000);
	CU_ASSERT(r.seconds > lo && r.seconds < 2 * lo + 1);
	printf("\n    %llu transfers, %llu events in %.3f s: %.2e transfers/s (simulated %.3f s) ",
	       (unsigned long long)r.transfers, (unsigned long long)r.events, el,
	       (double)r.transfers / el, r.seconds);
	/* Generous: an order of magnitude above the measured time on a laptop. */
	CU_ASSERT(el < 20);
	/* The same with window 1 and pacing (every link direction then runs at c / 2). */
	sp.window = 1;
	sp.pace = true;
	t0 = now_s();
	rc = sim_plan(t, p, v, &sp, &r);
	el = now_s() - t0;
	CU_ASSERT_EQUAL(rc, 0);
	printf("\n    window 1, paced: %.2e transfers/s (simulated %.3f s) ",
	       (double)r.transfers / el, r.seconds);
	plan_free(p);
	topo_free(t);
}

int
main(void)
{
	static const struct testutil_case tests[] = {
		{ "single link, both directions", test_single_link },
		{ "single-node tree, empty tensor", test_trivial },
		{ "pipeline, unlimited window", test_pipeline_unlimited_window },
		{ "pipeline, window 1", test_pipeline_window_one },
		{ "window 2", test_window_two },
		{ "fair sharing and pacing", test_fair_sharing_and_pacing },
		{ "ring on a 4-cycle", test_ring_cycle },
		{ "parameter server on a star", test_ps_star },
		{ "chunk size optimum (mTree)", test_chunk_size_optimum },
		{ "invalid inputs", test_invalid },
		{ "too big", test_too_big },
		{ "1e6 transfers", test_large },
	};

	return testutil_run("test_sim", "sim", tests, TESTUTIL_N(tests));
}
