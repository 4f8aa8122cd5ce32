/* SPDX-License-Identifier: BSD-3-Clause
 * BlueConnect decomposition: alpha-beta costs computed by hand for small hierarchies, the
 * choice against every candidate and the baselines on random uneven hierarchies, the plan
 * and its hierarchy section, and the rejection of bad options and bad sections.
 *
 * GEOREDUCE_TEST_QUICK=1 in the environment runs fewer random hierarchies.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <CUnit/Basic.h>

#include "blueconnect.h"
#include "testutil.h"
#include "topo_gen.h"

#define HOP 20e-6

/* K_n (capacity c, latency lat) whose sites have the given workers and gateways and one LAN. */
static struct topo *
hier_topo(int n, double c, double lat, const int *workers, const int *gateways, double lan_gbps,
	  double lan_ms)
{
	struct topo *k = gen_complete(n, c, lat), *t;
	struct topo_node *nodes = calloc((size_t)n, sizeof(*nodes));
	char err[TOPO_ERR_MAX];

	if (k == NULL || nodes == NULL) {
		free(nodes);
		topo_free(k);
		return NULL;
	}
	memcpy(nodes, k->nodes, sizeof(*nodes) * (size_t)n);
	for (int i = 0; i < n; i++) {
		nodes[i].workers = workers[i];
		nodes[i].gateways = gateways[i];
		nodes[i].lan_gbps = lan_gbps;
		nodes[i].lan_latency_ms = lan_ms;
	}
	t = topo_create("hier", n, nodes, k->n_links, k->links, err, sizeof(err));
	free(nodes);
	topo_free(k);
	return t;
}

static const struct bc_candidate *
find(const struct bc_result *r, const char *name)
{
	for (int i = 0; i < r->n_candidates; i++)
		if (strcmp(r->cand[i].name, name) == 0)
			return &r->cand[i];
	return NULL;
}

static bool
close_to(double got, double want)
{
	return fabs(got - want) <= 1e-9 * fmax(1e-6, fabs(want));
}

#define CHECK_COST(r, name, want)                                                         \
	do {                                                                              \
		const struct bc_candidate *c_ = find((r), (name));                        \
		CHECK(c_ != NULL && close_to(c_->seconds, (want)), "%s: %.12g, want %.12g", \
		      (name), c_ != NULL ? c_->seconds : -1.0, (want));                   \
	} while (0)

/* 2 sites x 1 gateway x 2 workers over one 1 Gbit/s link of 10 ms. */
static void
test_two_by_one_by_two(void)
{
	int w[] = { 2, 2 }, g[] = { 1, 1 };
	struct topo *t = hier_topo(2, 1.0, 10.0, w, g, 100.0, 0.05);
	struct bc_opts o = BC_OPTS_DEFAULT;
	struct bc_result r;
	char err[256];
	double n = 1e8, a = 0.05e-3 + HOP, b = 8 / 100e9, wan, wb, ring_hop;

	CU_ASSERT_PTR_NOT_NULL_FATAL(t);
	o.bytes = (uint64_t)n;
	CU_ASSERT_EQUAL_FATAL(blueconnect_plan(t, &o, &r, err, sizeof(err)), 0);
	CU_ASSERT_DOUBLE_EQUAL(r.wan_rate_gbps, 1.0, 1e-9);
	CU_ASSERT_DOUBLE_EQUAL(r.wan_height_ms, 10.0, 1e-9);
	CU_ASSERT_EQUAL(r.wan_depth, 1);
	CU_ASSERT_EQUAL(r.ranks, 4);
	CU_ASSERT_EQUAL(r.n_candidates, 2);
	/* Both ways: a LAN hop, the 10 ms tree, one tree hop. */
	wan = 2 * (a + 10e-3 + HOP);
	wb = n * 8 / 1e9;
	/* All summed at the gateway: its port takes 2 workers' tensors, under the WAN. */
	CHECK_COST(&r, "[WS]", wan + fmax(wb, 2 * n * b));
	/* A two-worker ring first: one step of n / 2 each way. */
	CHECK_COST(&r, "[W][S]", 2 * (a + n / 2 * b) + wan + fmax(wb, n * b));
	CU_ASSERT(close_to(r.h.site_mtree_seconds, wan + fmax(wb, 2 * n * b)));
	/* Flat ring of 4: 6 steps of n / 4, the WAN hop (10 ms, two LAN hops) the slowest;
	 * the best 2-site ring runs 1 Gbit/s, so a step's WAN bandwidth is 1.25e8 B/s. */
	ring_hop = 10e-3 + HOP + 2 * a + n / 4 / 1.25e8;
	/* (Routes break latency ties by 1e-6 ms per hop.) */
	CHECK(fabs(r.h.flat_ring_seconds - 6 * ring_hop) < 1e-7, "flat ring %.12g, want %.12g",
	      r.h.flat_ring_seconds, 6 * ring_hop);
	CU_ASSERT_STRING_EQUAL(r.cand[r.chosen].name, "[WS]");
	CU_ASSERT_STRING_EQUAL(r.plan->algorithm, "blueconnect");
	CU_ASSERT(close_to(r.plan->allreduce_seconds, r.cand[r.chosen].seconds));
	CU_ASSERT_EQUAL(plan_validate(t, r.plan, 0, err, sizeof(err)), 0);
	bc_result_fini(&r);
	topo_free(t);
}

/* 4 sites x 2 gateways x 8 workers (overrides) on K_4: all six decompositions by hand. */
static void
test_four_by_two_by_eight(void)
{
	struct topo *t = gen_complete(4, 1.0, 20.0);
	struct bc_opts o = BC_OPTS_DEFAULT;
	struct bc_result r;
	char err[256];
	double n = (double)(1u << 30), a = 0.05e-3 + HOP, b = 8 / 100e9, wan, wb;

	CU_ASSERT_PTR_NOT_NULL_FATAL(t);
	o.gateways = 2;
	o.workers_per_gateway = 8;
	CU_ASSERT_EQUAL_FATAL(blueconnect_plan(t, &o, &r, err, sizeof(err)), 0);
	CU_ASSERT_EQUAL(r.ranks, 64);
	CU_ASSERT_EQUAL(r.n_candidates, 6);
	/* K_4 at 1 Gbit/s packs 2 Gbit/s of trees. */
	CU_ASSERT(r.wan_rate_gbps > 1.98 && r.wan_rate_gbps <= 2.0 + 1e-9);
	wan = 2 * (a + r.wan_height_ms * 1e-3 + r.wan_depth * HOP);
	wb = n * 8 / (r.wan_rate_gbps * 1e9);
	/* A gateway's port takes 8 ranks' bytes in the WAN stage. */
	CHECK_COST(&r, "[WGS]", wan + fmax(wb, 8 * n * b));
	CHECK_COST(&r, "[W][GS]", 2 * 7 * (a + n / 8 * b) + wan + fmax(wb, 8 * (n / 8) * b));
	CHECK_COST(&r, "[G][WS]", 2 * 1 * (a + n / 2 * b) + wan + fmax(wb, 8 * (n / 2) * b));
	CHECK_COST(&r, "[WG][S]", 2 * 15 * (a + n / 16 * b) + wan + fmax(wb, 8 * (n / 16) * b));
	CHECK_COST(&r, "[W][G][S]", 2 * (7 * (a + n / 8 * b) + 1 * (a + n / 16 * b)) + wan +
				    fmax(wb, 8 * (n / 16) * b));
	CHECK_COST(&r, "[G][W][S]", 2 * (1 * (a + n / 2 * b) + 7 * (a + n / 16 * b)) + wan +
				    fmax(wb, 8 * (n / 16) * b));
	/* One gateway takes all 16 workers' tensors. */
	CU_ASSERT(close_to(r.h.site_mtree_seconds, wan + fmax(wb, 16 * n * b)));
	/* The WAN dominates: summing everything at the gateways wins, and the flat ring pays
	 * 126 steps of WAN latency. */
	CU_ASSERT_STRING_EQUAL(r.h.factorisation, "[WGS]");
	CU_ASSERT(r.h.flat_ring_seconds > 126 * 20e-3);
	CU_ASSERT(r.h.flat_ring_seconds > 2 * r.h.seconds);
	/* The stages of a five-stage candidate mirror and shrink. */
	{
		const struct bc_candidate *c = find(&r, "[W][G][S]");

		CU_ASSERT_PTR_NOT_NULL_FATAL(c);
		CU_ASSERT_EQUAL(c->n_stages, 5);
		CU_ASSERT_EQUAL(c->stages[0].group_size, 8);
		CU_ASSERT_EQUAL(c->stages[1].group_size, 2);
		CU_ASSERT_EQUAL(c->stages[2].group_size, 4);
		CU_ASSERT_EQUAL(c->stages[2].op, BC_OP_ALLREDUCE);
		CU_ASSERT_EQUAL(c->stages[1].bytes_per_rank, (1u << 30) / 8);
		CU_ASSERT_EQUAL(c->stages[2].bytes_per_rank, (1u << 30) / 16);
		CU_ASSERT_EQUAL(c->stages[3].levels, BC_LEVEL_G);
		CU_ASSERT_EQUAL(c->stages[4].op, BC_OP_ALL_GATHER);
	}
	CU_ASSERT_EQUAL(plan_validate(t, r.plan, 0, err, sizeof(err)), 0);
	bc_result_fini(&r);
	topo_free(t);
}

/* When a gateway's port, not the WAN, is the bottleneck, ring stages on the LAN pay. */
static void
test_slow_lan_chooses_rings(void)
{
	int w[] = { 64, 64 }, g[] = { 4, 4 };
	struct topo *t = hier_topo(2, 10.0, 5.0, w, g, 10.0, 0.05);
	struct bc_opts o = BC_OPTS_DEFAULT;
	struct bc_result r;
	char err[256];

	CU_ASSERT_PTR_NOT_NULL_FATAL(t);
	CU_ASSERT_EQUAL_FATAL(blueconnect_plan(t, &o, &r, err, sizeof(err)), 0);
	CHECK(r.cand[r.chosen].n_stages > 1, "chose %s", r.cand[r.chosen].name);
	CHECK(r.h.seconds < 0.5 * r.h.site_mtree_seconds, "%g against site-level %g",
	      r.h.seconds, r.h.site_mtree_seconds);
	CHECK(r.h.seconds < find(&r, "[WGS]")->seconds, "rings do not beat [WGS]");
	bc_result_fini(&r);
	topo_free(t);
}

/* Uneven sites: gateways beyond the workers serve none, groups are padded to the largest. */
static void
test_uneven_sites(void)
{
	int w[] = { 3, 8, 1 }, g[] = { 2, 1, 4 };
	struct topo *t = hier_topo(3, 1.0, 10.0, w, g, 100.0, 0.05);
	struct bc_opts o = BC_OPTS_DEFAULT;
	const struct bc_candidate *c;
	struct bc_result r;
	char err[256];
	double n = 1e9, a = 0.05e-3 + HOP, b = 8 / 100e9, wan, wb;

	CU_ASSERT_PTR_NOT_NULL_FATAL(t);
	o.bytes = (uint64_t)n;
	CU_ASSERT_EQUAL_FATAL(blueconnect_plan(t, &o, &r, err, sizeof(err)), 0);
	CU_ASSERT_EQUAL(r.ranks, 12);
	CU_ASSERT_EQUAL(r.h.sites[0].gateways, 2);
	CU_ASSERT_EQUAL(r.h.sites[0].per_gateway, 2);
	CU_ASSERT_EQUAL(r.h.sites[1].per_gateway, 8);
	CU_ASSERT_EQUAL(r.h.sites[2].gateways, 1);
	CU_ASSERT_EQUAL(r.h.sites[2].per_gateway, 1);
	CU_ASSERT_EQUAL(r.n_candidates, 6);
	wan = 2 * (a + r.wan_height_ms * 1e-3 + r.wan_depth * HOP);
	wb = n * 8 / (r.wan_rate_gbps * 1e9);
	/* [W][GS]: site 1's 8-ring is the slowest reduce-scatter; in the WAN stage site 0's
	 * gateways take 2 padded ranks of n / 2, site 1's one gateway 8 of n / 8. */
	c = find(&r, "[W][GS]");
	CU_ASSERT_PTR_NOT_NULL_FATAL(c);
	CU_ASSERT_EQUAL(c->stages[0].group_size, 8);
	CU_ASSERT_EQUAL(c->stages[0].bytes_per_rank, (uint64_t)n);
	CU_ASSERT_EQUAL(c->stages[1].group_size, 2 * 3);
	CU_ASSERT_EQUAL(c->stages[1].bytes_per_rank, (uint64_t)n);
	CHECK_COST(&r, "[W][GS]", 2 * 7 * (a + n / 8 * b) + wan + fmax(wb, n * b));
	/* Site-level: site 1's gateway takes 8 tensors. */
	CU_ASSERT(close_to(r.h.site_mtree_seconds, wan + fmax(wb, 8 * n * b)));
	bc_result_fini(&r);
	topo_free(t);
}

/* Random uneven hierarchies: the chosen decomposition is the cheapest candidate, never
 * slower than mTree over the sites alone, and its plan and section are valid. */
static void
test_random_hierarchies(void)
{
	const char *q = getenv("GEOREDUCE_TEST_QUICK");
	int rounds = q != NULL && strcmp(q, "1") == 0 ? 3 : 12;

	for (int seed = 1; seed <= rounds; seed++) {
		uint64_t s = (uint64_t)seed * 7919u;
		int n = 2 + (int)(gen_rand(&s) % 5);
		struct topo *base = gen_random((uint64_t)seed, n, n, 0.2, 3.0, 80.0, 1, 0), *t;
		struct topo_node *nodes = calloc((size_t)n, sizeof(*nodes));
		struct bc_opts o = BC_OPTS_DEFAULT;
		struct bc_hierarchy back;
		struct bc_result r;
		char err[256];
		json_t *doc;

		CU_ASSERT_PTR_NOT_NULL_FATAL(base);
		CU_ASSERT_PTR_NOT_NULL_FATAL(nodes);
		memcpy(nodes, base->nodes, sizeof(*nodes) * (size_t)n);
		for (int i = 0; i < n; i++) {
			nodes[i].workers = 1 + (int)(gen_rand(&s) % 20);
			nodes[i].gateways = 1 + (int)(gen_rand(&s) % 4);
			nodes[i].lan_gbps = gen_uniform(&s, 1, 100);
			nodes[i].lan_latency_ms = gen_uniform(&s, 0, 0.2);
		}
		t = topo_create("rand", n, nodes, base->n_links, base->links, err, sizeof(err));
		CU_ASSERT_PTR_NOT_NULL_FATAL(t);
		o.bytes = 1u << (20 + gen_rand(&s) % 10);
		o.ring_seconds = 0.05;
		CU_ASSERT_EQUAL_FATAL(blueconnect_plan(t, &o, &r, err, sizeof(err)), 0);
		for (int i = 0; i < r.n_candidates; i++)
			CHECK(r.h.seconds <= r.cand[i].seconds, "seed %d: chose %s (%g) over %s (%g)",
			      seed, r.h.factorisation, r.h.seconds, r.cand[i].name,
			      r.cand[i].seconds);
		CHECK(r.h.seconds <= r.h.site_mtree_seconds * (1 + 1e-12),
		      "seed %d: %g slower than site-level mTree %g", seed, r.h.seconds,
		      r.h.site_mtree_seconds);
		CHECK(plan_validate(t, r.plan, 0, err, sizeof(err)) == 0, "seed %d: %s", seed, err);
		doc = plan_to_json(t, r.plan);
		CHECK(blueconnect_parse(t, doc, "plan", &back, err, sizeof(err)) == 0, "seed %d: %s",
		      seed, err);
		CU_ASSERT_STRING_EQUAL(back.factorisation, r.h.factorisation);
		CU_ASSERT_EQUAL(back.n_stages, r.h.n_stages);
		CU_ASSERT_EQUAL(back.n_sites, n);
		CU_ASSERT(close_to(back.seconds, r.h.seconds));
		bc_hierarchy_fini(&back);
		json_decref(doc);
		bc_result_fini(&r);
		topo_free(t);
		topo_free(base);
		free(nodes);
	}
}

static void
test_bad_options(void)
{
	struct topo *t = gen_complete(3, 1.0, 5.0);
	struct bc_opts o = BC_OPTS_DEFAULT;
	struct bc_result r;
	char err[256];

	CU_ASSERT_PTR_NOT_NULL_FATAL(t);
	o.bytes = 0;
	CU_ASSERT_EQUAL(blueconnect_plan(t, &o, &r, err, sizeof(err)), -EINVAL);
	bc_result_fini(&r);
	o = (struct bc_opts)BC_OPTS_DEFAULT;
	o.gateways = -1;
	CU_ASSERT_EQUAL(blueconnect_plan(t, &o, &r, err, sizeof(err)), -EINVAL);
	bc_result_fini(&r);
	o = (struct bc_opts)BC_OPTS_DEFAULT;
	o.gateways = 4096;
	o.workers_per_gateway = 4096;
	CU_ASSERT_EQUAL(blueconnect_plan(t, &o, &r, err, sizeof(err)), -EINVAL);
	CU_ASSERT_PTR_NOT_NULL(strstr(err, "more than"));
	bc_result_fini(&r);
	topo_free(t);
}

/* One-site hierarchy: no WAN, the stages run on the LAN alone. */
static void
test_one_site(void)
{
	int w[] = { 8, 0 }, g[] = { 2, 1 };
	struct topo *t = hier_topo(2, 1.0, 10.0, w, g, 100.0, 0.05);
	struct bc_opts o = BC_OPTS_DEFAULT;
	struct bc_result r;
	char err[256];

	CU_ASSERT_PTR_NOT_NULL_FATAL(t);
	CU_ASSERT_EQUAL_FATAL(blueconnect_plan(t, &o, &r, err, sizeof(err)), 0);
	CU_ASSERT_EQUAL(r.wan_sites, 1);
	CU_ASSERT_EQUAL(r.wan_rate_gbps, 0);
	CU_ASSERT(r.h.seconds > 0 && r.h.seconds < 0.5);
	CU_ASSERT(r.h.flat_ring_seconds > 0);
	/* A ring over the site's workers is the flat ring, and the AllReduce after it is
	 * empty; two rings take fewer steps. */
	CU_ASSERT(close_to(find(&r, "[WG][S]")->seconds, r.h.flat_ring_seconds));
	CU_ASSERT_EQUAL(find(&r, "[WG][S]")->stages[1].seconds, 0);
	CU_ASSERT(r.h.seconds < r.h.flat_ring_seconds);
	CU_ASSERT_EQUAL(plan_validate(t, r.plan, 0, err, sizeof(err)), 0);
	bc_result_fini(&r);
	topo_free(t);
}

/* ---- the hierarchy section's parser ---- */

typedef void (*mutate_fn)(json_t *h);

static json_t *stage(json_t *h, int i) { return json_array_get(json_object_get(h, "stages"), (size_t)i); }
static json_t *site(json_t *h, int i) { return json_array_get(json_object_get(h, "sites"), (size_t)i); }

static void m_unknown(json_t *h) { json_object_set_new(h, "extra", json_true()); }
static void m_no_stages(json_t *h) { json_object_del(h, "stages"); }
static void m_even_stages(json_t *h) { json_array_remove(json_object_get(h, "stages"), 0); }
static void m_bad_op(json_t *h) { json_object_set_new(stage(h, 0), "operation", json_string("reduce")); }
static void m_op_order(json_t *h) { json_object_set_new(stage(h, 0), "operation", json_string("all_gather")); }
static void m_bad_fabric(json_t *h) { json_object_set_new(stage(h, 2), "fabric", json_string("lan")); }
static void m_bad_levels(json_t *h) { json_object_set_new(stage(h, 0), "levels", json_string("GW")); }
static void m_s_in_rs(json_t *h) { json_object_set_new(stage(h, 0), "levels", json_string("WS")); }
static void m_group(json_t *h) { json_object_set_new(stage(h, 0), "group_size", json_integer(7)); }
static void m_mirror(json_t *h) { json_object_set_new(stage(h, 4), "bytes_per_rank", json_integer(5)); }
static void m_grow(json_t *h) { json_object_set_new(stage(h, 1), "bytes_per_rank", json_integer(1ll << 40)); }
static void m_neg_seconds(json_t *h) { json_object_set_new(stage(h, 1), "seconds", json_real(-1)); }
static void m_sum(json_t *h) { json_object_set_new(h, "seconds", json_real(1e6)); }
static void m_fact(json_t *h) { json_object_set_new(h, "factorisation", json_string("[WG][S]")); }
static void m_site_id(json_t *h) { json_object_set_new(site(h, 0), "id", json_string("nowhere")); }
static void m_site_twice(json_t *h) { json_object_set_new(site(h, 1), "id", json_string("s0")); }
static void m_site_missing(json_t *h) { json_array_remove(json_object_get(h, "sites"), 3); }
static void m_per_gw(json_t *h) { json_object_set_new(site(h, 0), "workers_per_gateway", json_integer(3)); }
static void m_gw_over(json_t *h) { json_object_set_new(site(h, 0), "gateways", json_integer(99)); }
static void m_str_int(json_t *h) { json_object_set_new(stage(h, 0), "group_size", json_string("8")); }
static void m_base(json_t *h) { json_object_set_new(json_object_get(h, "baselines"), "ring", json_real(1)); }
static void m_stage_field(json_t *h) { json_object_set_new(stage(h, 3), "chunk", json_integer(1)); }
static void m_level_twice(json_t *h)
{
	json_object_set_new(stage(h, 1), "levels", json_string("W"));
	json_object_set_new(stage(h, 3), "levels", json_string("W"));
	json_object_set_new(stage(h, 1), "group_size", json_integer(8));
	json_object_set_new(stage(h, 3), "group_size", json_integer(8));
}

static void
test_section_rejects(void)
{
	static const struct {
		mutate_fn fn;
		const char *field;
	} cases[] = {
		{ m_unknown, "'hierarchy.extra'" },
		{ m_no_stages, "'hierarchy.stages'" },
		{ m_even_stages, "'hierarchy.stages'" },
		{ m_bad_op, "'hierarchy.stages[0].operation'" },
		{ m_op_order, "'hierarchy.stages[0].operation'" },
		{ m_bad_fabric, "'hierarchy.stages[2].fabric'" },
		{ m_bad_levels, "'hierarchy.stages[0].levels'" },
		{ m_s_in_rs, "'hierarchy.stages[0].levels'" },
		{ m_group, "'hierarchy.stages[0].group_size'" },
		{ m_mirror, "'hierarchy.stages[4]'" },
		{ m_grow, "'hierarchy.stages[1].bytes_per_rank'" },
		{ m_neg_seconds, "'hierarchy.stages[1].seconds'" },
		{ m_sum, "'hierarchy.seconds'" },
		{ m_fact, "'hierarchy.factorisation'" },
		{ m_site_id, "'hierarchy.sites[0].id'" },
		{ m_site_twice, "'hierarchy.sites[1].id'" },
		{ m_site_missing, "'hierarchy.sites'" },
		{ m_per_gw, "'hierarchy.sites[0].workers_per_gateway'" },
		{ m_gw_over, "'hierarchy.sites[0].gateways'" },
		{ m_str_int, "'hierarchy.stages[0].group_size'" },
		{ m_base, "'hierarchy.baselines.ring'" },
		{ m_stage_field, "'hierarchy.stages[3].chunk'" },
		{ m_level_twice, "'hierarchy.stages[1].levels'" },
	};
	struct topo *t = gen_complete(4, 1.0, 20.0);
	struct bc_opts o = BC_OPTS_DEFAULT;
	struct bc_hierarchy h;
	struct bc_result r;
	char err[256];
	json_t *good;

	CU_ASSERT_PTR_NOT_NULL_FATAL(t);
	o.gateways = 2;
	o.workers_per_gateway = 8;
	CU_ASSERT_EQUAL_FATAL(blueconnect_plan(t, &o, &r, err, sizeof(err)), 0);
	/* A five-stage section to mutate: the [W][G][S] candidate. */
	for (int i = 0; i < r.n_candidates; i++)
		if (strcmp(r.cand[i].name, "[W][G][S]") == 0) {
			memcpy(r.h.stages, r.cand[i].stages, sizeof(r.h.stages));
			r.h.n_stages = r.cand[i].n_stages;
			r.h.seconds = r.cand[i].seconds;
			strcpy(r.h.factorisation, r.cand[i].name);
		}
	good = json_pack("{s:s, s:o}", "format", PLAN_FORMAT, "hierarchy",
			 bc_hierarchy_to_json(t, &r.h));
	CU_ASSERT_PTR_NOT_NULL_FATAL(good);
	CHECK(blueconnect_parse(t, good, "p", &h, err, sizeof(err)) == 0, "%s", err);
	CU_ASSERT_EQUAL(h.n_stages, 5);
	CU_ASSERT_EQUAL(h.n_sites, 4);
	CU_ASSERT_EQUAL(h.sites[0].per_gateway, 8);
	CU_ASSERT(close_to(h.flat_ring_seconds, r.h.flat_ring_seconds));
	bc_hierarchy_fini(&h);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		json_t *doc = json_deep_copy(good);

		cases[i].fn(json_object_get(doc, "hierarchy"));
		err[0] = '\0';
		CHECK(blueconnect_parse(t, doc, "p", &h, err, sizeof(err)) == -EINVAL,
		      "case %zu accepted", i);
		CHECK(strstr(err, cases[i].field) != NULL && strchr(err, '\n') == NULL,
		      "case %zu: want %s in one line, got: %s", i, cases[i].field, err);
		CU_ASSERT_PTR_NULL(h.sites);
		json_decref(doc);
	}
	/* No section at all. */
	json_object_del(good, "hierarchy");
	CU_ASSERT_EQUAL(blueconnect_parse(t, good, "p", &h, err, sizeof(err)), -EINVAL);
	CU_ASSERT_PTR_NOT_NULL(strstr(err, "'hierarchy'"));
	json_decref(good);
	bc_result_fini(&r);
	topo_free(t);
}

/* A relay site is not a rank; duplicate keys are rejected by the loader. */
static void
test_section_files(void)
{
	int w[] = { 2, 0, 2 }, g[] = { 1, 1, 1 };
	struct topo *t = hier_topo(3, 1.0, 10.0, w, g, 100.0, 0.05);
	struct bc_opts o = BC_OPTS_DEFAULT;
	char path[] = "/tmp/bc-test-XXXXXX", err[256];
	struct bc_hierarchy h;
	struct bc_result r;
	json_t *sec, *doc;
	FILE *f;
	int fd;

	CU_ASSERT_PTR_NOT_NULL_FATAL(t);
	CU_ASSERT_EQUAL_FATAL(blueconnect_plan(t, &o, &r, err, sizeof(err)), 0);
	CU_ASSERT_EQUAL(r.h.n_sites, 2);
	fd = mkstemp(path);
	CU_ASSERT_FATAL(fd >= 0);
	f = fdopen(fd, "w");
	CU_ASSERT_PTR_NOT_NULL_FATAL(f);
	CU_ASSERT_EQUAL(plan_write(t, r.plan, f), 0);
	fclose(f);
	CHECK(blueconnect_load(t, path, &h, err, sizeof(err)) == 0, "%s", err);
	CU_ASSERT_STRING_EQUAL(h.factorisation, r.h.factorisation);
	bc_hierarchy_fini(&h);
	/* The relay named as a site. */
	doc = plan_to_json(t, r.plan);
	sec = json_object_get(doc, "hierarchy");
	json_object_set_new(json_array_get(json_object_get(sec, "sites"), 1), "id",
			    json_string("s1"));
	CU_ASSERT_EQUAL(blueconnect_parse(t, doc, "p", &h, err, sizeof(err)), -EINVAL);
	CU_ASSERT_PTR_NOT_NULL(strstr(err, "relay"));
	json_decref(doc);
	/* Duplicate keys. */
	f = fopen(path, "w");
	CU_ASSERT_PTR_NOT_NULL_FATAL(f);
	fputs("{\"format\": \"georeduce-plan/1\", \"hierarchy\": {}, \"hierarchy\": {}}\n", f);
	fclose(f);
	CU_ASSERT_EQUAL(blueconnect_load(t, path, &h, err, sizeof(err)), -EINVAL);
	CU_ASSERT_PTR_NOT_NULL(strstr(err, path));
	remove(path);
	bc_result_fini(&r);
	topo_free(t);
}

/* The WAN stage each shard may use (docs/BLUECONNECT.md): mTree over the topology with every
 * capacity times f gives the same trees at f times the rates, so the copies of the trees a
 * site's g gateways run at 1/g of the rates are that stage planned for each shard. */
static void
test_shard_capacity(void)
{
	static const char *const files[] = { "examples/topologies/aws-4region.json",
					     "examples/topologies/b4.json",
					     "examples/topologies/abilene-sndlib.json" };
	static const double f[] = { 0.5, 1.0 / 3 };

	for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
		char err[TOPO_ERR_MAX];
		struct topo *t = topo_load(files[i], err, sizeof(err));
		struct mtree_opts mo = MTREE_OPTS_DEFAULT;
		struct plan *p;

		CHECK(t != NULL, "%s", err);
		if (t == NULL)
			continue;
		mo.max_trees = 4;
		p = mtree_plan(t, &mo, NULL, err, sizeof(err));
		CU_ASSERT_PTR_NOT_NULL_FATAL(p);
		for (size_t k = 0; k < sizeof(f) / sizeof(f[0]); k++) {
			struct topo_link *links = malloc(sizeof(*links) * (size_t)t->n_links);
			struct topo *ts;
			struct plan *q;
			bool same;

			CU_ASSERT_PTR_NOT_NULL_FATAL(links);
			memcpy(links, t->links, sizeof(*links) * (size_t)t->n_links);
			for (int l = 0; l < t->n_links; l++) {
				links[l].gbps_ab *= f[k];
				links[l].gbps_ba *= f[k];
			}
			ts = topo_create(t->name, t->n_nodes, t->nodes, t->n_links, links, err,
					 sizeof(err));
			CU_ASSERT_PTR_NOT_NULL_FATAL(ts);
			q = mtree_plan(ts, &mo, NULL, err, sizeof(err));
			CU_ASSERT_PTR_NOT_NULL_FATAL(q);
			same = q->n_trees == p->n_trees;
			for (int j = 0; same && j < p->n_trees; j++) {
				same = q->trees[j].root == p->trees[j].root &&
				       close_to(q->trees[j].rate_gbps, f[k] * p->trees[j].rate_gbps) &&
				       close_to(q->trees[j].share, p->trees[j].share);
				for (int v = 0; same && v < t->n_nodes; v++)
					same = q->trees[j].parent[v] == p->trees[j].parent[v];
			}
			CHECK(same, "%s x %g: %d trees (%d unscaled), not the same trees at the "
			      "scaled rates", files[i], f[k], q->n_trees, p->n_trees);
			plan_free(q);
			topo_free(ts);
			free(links);
		}
		plan_free(p);
		topo_free(t);
	}
}

int
main(void)
{
	static const struct testutil_case tests[] = {
		{ "2 sites x 1 gateway x 2 workers by hand", test_two_by_one_by_two },
		{ "4 sites x 2 gateways x 8 workers by hand", test_four_by_two_by_eight },
		{ "a slow LAN chooses ring stages", test_slow_lan_chooses_rings },
		{ "uneven sites", test_uneven_sites },
		{ "random hierarchies: cheapest, valid", test_random_hierarchies },
		{ "bad options", test_bad_options },
		{ "one worker site", test_one_site },
		{ "section: every bad field rejected", test_section_rejects },
		{ "section: files, relays, duplicate keys", test_section_files },
		{ "a shard's WAN stage: the trees at its part of the capacity", test_shard_capacity },
	};

	return testutil_run("test_blueconnect", "blueconnect", tests, TESTUTIL_N(tests));
}
