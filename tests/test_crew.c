/* SPDX-License-Identifier: BSD-3-Clause
 * CREW partial reduce: hand-computed optima, the breakpoint solver and the rebalancing
 * against GLPK's LP on random instances, failover and share invariants, the plan section
 * codec, CSV matrices and the training-progress simulator.
 * GEOREDUCE_TEST_QUICK=1 shrinks the random loops and the simulated time.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <CUnit/Basic.h>
#include <glpk.h>

#include "crew.h"
#include "fuzzutil.h"
#include "testutil.h"

static bool quick;

/* 8 Gbit/s = 1e9 bytes per second: matrices below are written in those units. */
#define U 8.0

static double
urand(uint64_t *s, double lo, double hi)
{
	return lo + (hi - lo) * (double)(rng_next(s) >> 11) * 0x1.0p-53;
}

/* The 3-site example of docs/CREW.md: a = (1, 2, 6), b = (2, 1, 1) (x 1e9 B/s) for the
 * group {0, 1}; the optimum is at rho = 2: X = 0.2 s, Y = 0.4 s for 1e9 bytes, shares
 * 0.2, 0.4, 0.4. */
static const double three[9] = {
	0, 2 * U, 6 * U,
	1 * U, 0, 6 * U,
	1 * U, 1 * U, 0,
};

static void
test_hand_three_sites(void)
{
	int group[2] = { 0, 1 };
	struct crew_problem pb = { .n = 3, .gbps = three, .group = group, .p = 2,
				   .model_bytes = 1000000000 };
	uint64_t b[3];
	struct crew_times tm;
	char err[256];

	CU_ASSERT_EQUAL_FATAL(crew_solve(&pb, CREW_SCHEME_CREW, b, &tm, err, sizeof(err)), 0);
	CHECK(b[0] == 200000000 && b[1] == 400000000 && b[2] == 400000000,
	      "shares %llu %llu %llu", (unsigned long long)b[0], (unsigned long long)b[1],
	      (unsigned long long)b[2]);
	CU_ASSERT_DOUBLE_EQUAL(tm.scatter_s, 0.2, 1e-9);
	CU_ASSERT_DOUBLE_EQUAL(tm.broadcast_s, 0.4, 1e-9);
	/* Only the members: a = (1, 2), b = (2, 1): X + Y = 1 s. */
	CU_ASSERT_EQUAL_FATAL(crew_solve(&pb, CREW_SCHEME_PARTIAL, b, &tm, err, sizeof(err)), 0);
	CU_ASSERT_EQUAL(b[2], 0);
	CU_ASSERT_EQUAL(b[0] + b[1], 1000000000);
	CU_ASSERT_DOUBLE_EQUAL(tm.scatter_s + tm.broadcast_s, 1.0, 1e-9);
	/* All three as members: a = (1, 1, 6), b = (2, 1, 1): optimum rho = 1, 2/3 s. */
	CU_ASSERT_EQUAL_FATAL(crew_solve(&pb, CREW_SCHEME_ALL_TO_ALL, b, &tm, err, sizeof(err)),
			      0);
	CU_ASSERT_DOUBLE_EQUAL(tm.scatter_s + tm.broadcast_s, 2.0 / 3, 1e-9);
	/* One member keeps everything. */
	group[0] = 2;
	pb.p = 1;
	CU_ASSERT_EQUAL_FATAL(crew_solve(&pb, CREW_SCHEME_CREW, b, &tm, err, sizeof(err)), 0);
	CU_ASSERT(b[2] == 1000000000 && b[0] == 0 && b[1] == 0);
	CU_ASSERT(tm.scatter_s == 0 && tm.broadcast_s == 0);
}

/* A member aggregating its own chunk needs no link to itself; a site missing one link to
 * a member cannot aggregate; with no usable site the solver says so. */
static void
test_own_copy_and_missing_links(void)
{
	double g[9];
	int group[2] = { 0, 1 };
	struct crew_problem pb = { .n = 3, .gbps = g, .group = group, .p = 2,
				   .model_bytes = 3000 };
	uint64_t b[3];
	struct crew_times tm;
	char err[256];
	double a, bb;

	memcpy(g, three, sizeof(g));
	g[0] = g[4] = g[8] = NAN; /* the diagonal is never read */
	crew_rates(&pb, 0, &a, &bb);
	CU_ASSERT_DOUBLE_EQUAL(a, 1e9, 1);
	CU_ASSERT_DOUBLE_EQUAL(bb, 2e9, 1);
	g[1 * 3 + 2] = 0; /* 1 -> 2 missing: site 2 cannot aggregate */
	CU_ASSERT_EQUAL_FATAL(crew_solve(&pb, CREW_SCHEME_CREW, b, &tm, err, sizeof(err)), 0);
	CU_ASSERT_EQUAL(b[2], 0);
	CU_ASSERT_EQUAL(b[0] + b[1], 3000);
	g[0 * 3 + 1] = 0; /* 0 -> 1 missing too: no site serves both members */
	CU_ASSERT_EQUAL(crew_solve(&pb, CREW_SCHEME_CREW, b, &tm, err, sizeof(err)), -ENOENT);
	g[1] = -1;
	CU_ASSERT_EQUAL(crew_solve(&pb, CREW_SCHEME_CREW, b, &tm, err, sizeof(err)), -EINVAL);
	g[1] = 1;
	group[1] = 0;
	CU_ASSERT_EQUAL(crew_solve(&pb, CREW_SCHEME_CREW, b, &tm, err, sizeof(err)), -EINVAL);
	CU_ASSERT(strstr(err, "duplicate") != NULL);
	pb.p = 4;
	CU_ASSERT_EQUAL(crew_solve(&pb, CREW_SCHEME_CREW, b, &tm, err, sizeof(err)), -EINVAL);
	pb.p = 0;
	CU_ASSERT_EQUAL(crew_solve(&pb, CREW_SCHEME_CREW, b, &tm, err, sizeof(err)), -EINVAL);
}

/* A random matrix: intercloud-like rates, some pairs missing. */
static double *
random_matrix(uint64_t *s, int n, double missing)
{
	double *g = malloc(sizeof(double) * (size_t)n * (size_t)n);

	CU_ASSERT_PTR_NOT_NULL_FATAL(g);
	for (int i = 0; i < n * n; i++)
		g[i] = i / n == i % n || urand(s, 0, 1) < missing ? 0 : urand(s, 0.02, 0.4);
	return g;
}

/*
 * The LP with GLPK, in model fractions: minimise X + Y over S_i >= 0 with sum S_i = 1,
 * S_i - rate(m -> i) X <= credit(m, i) for members m != i and S_i - rate(i -> m) Y <= 0.
 * credit NULL means none. Sites a scheme excludes get S_i <= 0. Returns X + Y or -1.
 */
static double
glpk_lp(const struct crew_problem *pb, enum crew_scheme sch, const double *credit)
{
	int n = pb->n, rows = 0, nz = 0;
	int cap = 2 * n * pb->p * 2 + 4 * n + 8;
	int *ia = malloc(sizeof(int) * (size_t)(cap + 1)), *ja = malloc(sizeof(int) * (size_t)(cap + 1));
	double *ar = malloc(sizeof(double) * (size_t)(cap + 1)), z = -1, m = (double)pb->model_bytes;
	glp_prob *lp = glp_create_prob();
	glp_smcp parm;

	glp_term_out(GLP_OFF);
	glp_set_obj_dir(lp, GLP_MIN);
	glp_add_cols(lp, n + 2); /* S_1..S_n, X, Y */
	for (int i = 1; i <= n + 2; i++) {
		glp_set_col_bnds(lp, i, GLP_LO, 0, 0);
		glp_set_obj_coef(lp, i, i > n ? 1 : 0);
	}
	rows = glp_add_rows(lp, 1);
	glp_set_row_bnds(lp, rows, GLP_FX, 1, 1);
	for (int i = 0; i < n; i++) {
		ia[++nz] = rows;
		ja[nz] = i + 1;
		ar[nz] = 1;
	}
	for (int i = 0; i < n; i++) {
		bool member = false;

		for (int k = 0; k < pb->p; k++)
			member |= pb->group[k] == i;
		if (sch == CREW_SCHEME_PARTIAL && !member) {
			glp_set_col_bnds(lp, i + 1, GLP_FX, 0, 0);
			continue;
		}
		for (int k = 0; k < pb->p; k++) {
			int mm = pb->group[k];

			if (mm == i)
				continue;
			rows = glp_add_rows(lp, 1);
			glp_set_row_bnds(lp, rows, GLP_UP, 0,
					 credit ? credit[(size_t)k * (size_t)n + (size_t)i] / m : 0);
			ia[++nz] = rows, ja[nz] = i + 1, ar[nz] = 1;
			ia[++nz] = rows, ja[nz] = n + 1, ar[nz] = -pb->gbps[mm * n + i] * 125e6 / m;
			rows = glp_add_rows(lp, 1);
			glp_set_row_bnds(lp, rows, GLP_UP, 0, 0);
			ia[++nz] = rows, ja[nz] = i + 1, ar[nz] = 1;
			ia[++nz] = rows, ja[nz] = n + 2, ar[nz] = -pb->gbps[i * n + mm] * 125e6 / m;
		}
	}
	CU_ASSERT_FATAL(nz <= cap);
	glp_load_matrix(lp, nz, ia, ja, ar);
	glp_init_smcp(&parm);
	parm.msg_lev = GLP_MSG_OFF;
	if (glp_simplex(lp, &parm) == 0 && glp_get_status(lp) == GLP_OPT)
		z = glp_get_obj_val(lp);
	glp_delete_prob(lp);
	free(ia);
	free(ja);
	free(ar);
	return z;
}

static void
test_lp_against_glpk(void)
{
	uint64_t s = 42;
	int cases = quick ? 40 : 300, compared = 0;

	for (int c = 0; c < cases; c++) {
		int n = 2 + (int)rnd(&s, 30), p = 2 + (int)rnd(&s, (size_t)n - 1);
		double *g = random_matrix(&s, n, c % 3 == 0 ? 0.05 : 0);
		int *group = malloc(sizeof(int) * (size_t)n);
		uint64_t *b = malloc(sizeof(uint64_t) * (size_t)n);
		struct crew_problem pb = { .n = n, .gbps = g, .group = group, .p = p,
					   .model_bytes = 1000000000ull + rng_next(&s) % 1000 };
		char err[256];

		crew_random_group(n, p, rng_next(&s), group);
		for (int sch = CREW_SCHEME_CREW; sch <= CREW_SCHEME_PARTIAL; sch++) {
			struct crew_times tm;
			int rc = crew_solve(&pb, (enum crew_scheme)sch, b, &tm, err, sizeof(err));
			double z = glpk_lp(&pb, (enum crew_scheme)sch, NULL);

			if (rc == -ENOENT) {
				CHECK(z < 0, "case %d: solver found no site, GLPK %g", c, z);
				continue;
			}
			CU_ASSERT_EQUAL_FATAL(rc, 0);
			compared++;
			/* Integer shares cost at most a byte per site more than the real optimum. */
			CHECK(fabs(tm.scatter_s + tm.broadcast_s - z) <= 1e-7 * z + 1e-9,
			      "case %d (n %d, p %d, %s): breakpoints %.12g, GLPK %.12g", c, n, p,
			      crew_scheme_name((enum crew_scheme)sch), tm.scatter_s + tm.broadcast_s,
			      z);
		}
		free(g);
		free(group);
		free(b);
	}
	CU_ASSERT(compared > cases);
}

static void
test_rebalance_against_glpk(void)
{
	uint64_t s = 7;
	int cases = quick ? 20 : 120;

	for (int c = 0; c < cases; c++) {
		int n = 3 + (int)rnd(&s, 25), p = 2 + (int)rnd(&s, (size_t)n - 2);
		double *g = random_matrix(&s, n, 0);
		int *group = malloc(sizeof(int) * (size_t)n);
		uint64_t *b = malloc(sizeof(uint64_t) * (size_t)n), *b0 = malloc(sizeof(uint64_t) *
										     (size_t)n);
		double *credit = calloc((size_t)n * (size_t)p, sizeof(double));
		struct crew_problem pb = { .n = n, .gbps = g, .group = group, .p = p,
					   .model_bytes = 500000000 };
		struct crew_times tm, tm0;
		char err[256];
		double z;

		crew_random_group(n, p, rng_next(&s), group);
		CU_ASSERT_EQUAL_FATAL(crew_solve(&pb, CREW_SCHEME_CREW, b0, &tm0, err, sizeof(err)), 0);
		/* No credit: the plain optimum. */
		CU_ASSERT_EQUAL_FATAL(crew_rebalance(&pb, credit, b, &tm), 0);
		CHECK(fabs(tm.scatter_s + tm.broadcast_s - tm0.scatter_s - tm0.broadcast_s) <=
		      1e-6 * (tm0.scatter_s + tm0.broadcast_s), "case %d: %g vs %g", c,
		      tm.scatter_s + tm.broadcast_s, tm0.scatter_s + tm0.broadcast_s);
		/* Random credits up to an all-to-all chunk: never worse, equal to GLPK. */
		for (int i = 0; i < n * p; i++)
			credit[i] = urand(&s, 0, 2.0 * (double)pb.model_bytes / n);
		CU_ASSERT_EQUAL_FATAL(crew_rebalance(&pb, credit, b, &tm), 0);
		z = glpk_lp(&pb, CREW_SCHEME_CREW, credit);
		CHECK(fabs(tm.scatter_s + tm.broadcast_s - z) <= 1e-6 * z + 1e-9,
		      "case %d: rebalanced %.12g, GLPK %.12g", c, tm.scatter_s + tm.broadcast_s, z);
		CU_ASSERT(tm.scatter_s + tm.broadcast_s <= tm0.scatter_s + tm0.broadcast_s + 1e-9);
		{
			uint64_t sum = 0;

			for (int i = 0; i < n; i++)
				sum += b[i];
			CU_ASSERT_EQUAL(sum, pb.model_bytes);
		}
		free(g);
		free(group);
		free(b);
		free(b0);
		free(credit);
	}
}

/* Shares sum to the model; only usable sites (only members for the baseline) hold a share;
 * failover never uses a down site or a missing/failed link. */
static void
test_invariants_and_failover(void)
{
	uint64_t s = 99;
	int cases = quick ? 30 : 200;

	for (int c = 0; c < cases; c++) {
		int n = 2 + (int)rnd(&s, 40), p = 1 + (int)rnd(&s, (size_t)n);
		double *g = random_matrix(&s, n, urand(&s, 0, 0.15));
		int *group = malloc(sizeof(int) * (size_t)n);
		uint64_t *b = malloc(sizeof(uint64_t) * (size_t)n);
		int *backup = malloc(sizeof(int) * (size_t)n);
		int *relay = malloc(sizeof(int) * (size_t)n * (size_t)p);
		bool *down = calloc((size_t)n, sizeof(bool));
		struct crew_problem pb = { .n = n, .gbps = g, .group = group, .p = p,
					   .model_bytes = 1 + rng_next(&s) % 100000000000ull };
		char err[256];

		crew_random_group(n, p, rng_next(&s), group);
		for (int i = 0; i < n; i++)
			down[i] = rnd(&s, 10) == 0;
		for (int sch = CREW_SCHEME_CREW; sch <= CREW_SCHEME_ALL_TO_ALL; sch++) {
			struct crew_times tm;
			uint64_t sum = 0;
			int rc = crew_solve(&pb, (enum crew_scheme)sch, b, &tm, err, sizeof(err));

			if (rc == -ENOENT)
				continue;
			CU_ASSERT_EQUAL_FATAL(rc, 0);
			for (int i = 0; i < n; i++) {
				bool member = false;

				for (int k = 0; k < p; k++)
					member |= group[k] == i;
				sum += b[i];
				if (b[i] > 0 && sch == CREW_SCHEME_PARTIAL)
					CHECK(member, "case %d: non-member %d aggregates", c, i);
			}
			CHECK(sum == pb.model_bytes, "case %d: shares sum to %llu", c,
			      (unsigned long long)sum);
			CU_ASSERT(isfinite(tm.scatter_s) && isfinite(tm.broadcast_s));
			if (sch == CREW_SCHEME_ALL_TO_ALL)
				continue;
			CU_ASSERT_EQUAL_FATAL(crew_failover(&pb, (enum crew_scheme)sch, b, down, backup,
							    relay), 0);
			for (int i = 0; i < n; i++) {
				int j = backup[i];

				if (b[i] == 0) {
					CU_ASSERT_EQUAL(j, -1);
					continue;
				}
				if (j >= 0) {
					CHECK(j != i && !down[j], "case %d: backup %d of %d", c, j, i);
					for (int k = 0; k < p; k++)
						if (group[k] != j)
							CHECK(g[group[k] * n + j] > 0 && g[j * n + group[k]] > 0,
							      "case %d: backup %d lacks a link to %d", c, j,
							      group[k]);
				}
				for (int k = 0; k < p; k++) {
					int r = relay[i * p + k], m = group[k];

					if (m == i) {
						CU_ASSERT_EQUAL(r, -1);
						continue;
					}
					if (r >= 0)
						CHECK(r != i && r != m && !down[r] && g[i * n + r] > 0 &&
						      g[r * n + m] > 0, "case %d: relay %d for %d -> %d", c,
						      r, i, m);
				}
			}
		}
		free(g);
		free(group);
		free(b);
		free(backup);
		free(relay);
		free(down);
	}
}

/* On a full mesh with nothing down, every aggregator has a backup and every link a relay
 * (p >= 3), and a member relay is preferred. */
static void
test_failover_full_mesh(void)
{
	uint64_t s = 5;
	int n = 12, p = 4, group[4];
	double *g = random_matrix(&s, n, 0);
	uint64_t b[12];
	int backup[12], relay[48];
	struct crew_problem pb = { .n = n, .gbps = g, .group = group, .p = p,
				   .model_bytes = 100000000 };
	struct crew_times tm;
	char err[256];

	crew_random_group(n, p, 3, group);
	CU_ASSERT_EQUAL_FATAL(crew_solve(&pb, CREW_SCHEME_CREW, b, &tm, err, sizeof(err)), 0);
	CU_ASSERT_EQUAL_FATAL(crew_failover(&pb, CREW_SCHEME_CREW, b, NULL, backup, relay), 0);
	for (int i = 0; i < n; i++) {
		CU_ASSERT(b[i] > 0);
		CU_ASSERT(backup[i] >= 0 && backup[i] != i);
		for (int k = 0; k < p; k++) {
			int r = relay[i * p + k];
			bool member = false;

			if (group[k] == i)
				continue;
			for (int j = 0; j < p; j++)
				member |= group[j] == r;
			CHECK(member, "relay %d for %d -> %d is not a member", r, i, group[k]);
		}
	}
	/* A backup minimises the largest pending time: a heavily loaded candidate loses. */
	{
		double *pending = calloc((size_t)n * (size_t)n, sizeof(double));
		int j = crew_pick_backup(&pb, 0, 1000000, NULL, NULL, false), j2;

		CU_ASSERT_FATAL(j >= 0);
		for (int k = 0; k < p; k++)
			pending[group[k] * n + j] = 1e12;
		j2 = crew_pick_backup(&pb, 0, 1000000, pending, NULL, false);
		CU_ASSERT(j2 >= 0 && j2 != j);
		free(pending);
	}
	free(g);
}

static struct topo *
mesh_topo(int n, uint64_t seed)
{
	static const double vals[] = { 20, 42, 55, 60, 80, 117, 134, 182, 398 };
	char err[256];
	struct topo *t = crew_draw_mesh(n, vals, 9, seed, err, sizeof(err));

	CU_ASSERT_PTR_NOT_NULL_FATAL(t);
	return t;
}

static struct crew_section
section_for(const struct topo *t, int p, enum crew_scheme sch)
{
	double *g = crew_matrix_from_topo(t);
	struct crew_section s;
	struct crew_problem pb = { .n = t->n_nodes, .gbps = g, .p = p, .model_bytes = 180000000 };
	struct crew_times tm;
	char err[256];

	CU_ASSERT_EQUAL_FATAL(crew_section_init(&s, t->n_nodes, p), 0);
	crew_random_group(t->n_nodes, p, 11, s.group);
	pb.group = s.group;
	s.scheme = sch;
	s.model_bytes = pb.model_bytes;
	CU_ASSERT_EQUAL_FATAL(crew_solve(&pb, sch, s.bytes, &tm, err, sizeof(err)), 0);
	CU_ASSERT_EQUAL_FATAL(crew_failover(&pb, sch, s.bytes, NULL, s.backup, s.relay), 0);
	s.scatter_s = tm.scatter_s;
	s.broadcast_s = tm.broadcast_s;
	s.aggregate_s = CREW_AGGREGATE_S;
	free(g);
	return s;
}

static void
test_section_roundtrip(void)
{
	struct topo *t = mesh_topo(9, 2);

	for (int sch = CREW_SCHEME_CREW; sch <= CREW_SCHEME_PARTIAL; sch++) {
		struct crew_section s = section_for(t, 3, (enum crew_scheme)sch), r;
		json_t *j = crew_section_to_json(t, &s);
		char err[512];

		CU_ASSERT_PTR_NOT_NULL_FATAL(j);
		CHECK(crew_section_parse(t, j, "x", &r, err, sizeof(err)) == 0, "%s", err);
		CU_ASSERT_EQUAL(r.scheme, s.scheme);
		CU_ASSERT_EQUAL(r.model_bytes, s.model_bytes);
		CU_ASSERT(memcmp(r.group, s.group, sizeof(int) * 3) == 0);
		CU_ASSERT(memcmp(r.bytes, s.bytes, sizeof(uint64_t) * 9) == 0);
		CU_ASSERT(memcmp(r.backup, s.backup, sizeof(int) * 9) == 0);
		CU_ASSERT(memcmp(r.relay, s.relay, sizeof(int) * 27) == 0);
		CU_ASSERT_DOUBLE_EQUAL(r.scatter_s, s.scatter_s, 1e-12);
		crew_section_fini(&r);
		crew_section_fini(&s);
		json_decref(j);
	}
	topo_free(t);
}

/* Each damaged section is rejected, and the message names the field. */
static void
test_section_rejects(void)
{
	static const struct {
		const char *path;       /* JSON pointer-ish: what to change */
		const char *json;       /* the new value, as JSON */
		const char *want;       /* substring of the message */
	} cases[] = {
		{ "group/0", "\"nowhere\"", "partial_reduce.group[0]': unknown site id" },
		{ "group/1", "null", "partial_reduce.group[1]" },
		{ "group", "[]", "partial_reduce.group" },
		{ "aggregators/0/bytes", "1", "partial_reduce.aggregators[1].offset" },
		{ "aggregators/0/bytes", "0", "partial_reduce.aggregators[0].bytes" },
		{ "aggregators/0/site", "\"nowhere\"", "aggregators[0].site': unknown site id" },
		{ "aggregators/0/offset", "5", "aggregators[0].offset" },
		{ "aggregators/0/backup", "\"c00\"", "aggregators[0].backup" },
		{ "aggregators/0/colour", "1", "aggregators[0].colour': unknown field" },
		{ "model_bytes", "180000001", "shares sum to 180000000" },
		{ "model_bytes", "0", "partial_reduce.model_bytes" },
		{ "scheme", "\"ring\"", "partial_reduce.scheme" },
		{ "relays/0/via", "\"nowhere\"", "relays[0].via': unknown site id" },
		{ "relays/0/to", "\"c00\"", "relays[0].to" },
		{ "extra", "1", "partial_reduce.extra': unknown field" },
		{ "predicted/scatter_seconds", "-1", "predicted.scatter_seconds" },
		{ "relays", "{}", "partial_reduce.relays" },
	};
	struct topo *t = mesh_topo(9, 2);
	struct crew_section s = section_for(t, 3, CREW_SCHEME_CREW);
	json_t *good = crew_section_to_json(t, &s);

	CU_ASSERT_PTR_NOT_NULL_FATAL(good);
	/* c00 is the first aggregator; make sure the cases above hit what they mean. */
	CU_ASSERT_STRING_EQUAL(json_string_value(json_object_get(
		json_array_get(json_object_get(good, "aggregators"), 0), "site")), "c00");
	for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
		json_t *j = json_deep_copy(good), *parent = j, *val = json_loads(cases[c].json,
									       JSON_DECODE_ANY, NULL);
		char path[64], *save = NULL, *tok, *last = NULL, err[512];
		struct crew_section r;
		int rc;

		snprintf(path, sizeof(path), "%s", cases[c].path);
		for (tok = strtok_r(path, "/", &save); tok != NULL; tok = strtok_r(NULL, "/", &save)) {
			if (last != NULL)
				parent = json_is_array(parent) ? json_array_get(parent, strtoul(last, NULL, 10))
							       : json_object_get(parent, last);
			last = tok;
		}
		if (json_is_array(parent))
			json_array_set_new(parent, strtoul(last, NULL, 10), val);
		else
			json_object_set_new(parent, last, val);
		rc = crew_section_parse(t, j, "plan.json", &r, err, sizeof(err));
		CHECK(rc == -EINVAL, "case %zu (%s): accepted", c, cases[c].path);
		CHECK(rc != -EINVAL || (strstr(err, cases[c].want) != NULL &&
					strncmp(err, "plan.json: ", 11) == 0 && !strchr(err, '\n')),
		      "case %zu: message '%s' lacks '%s'", c, err, cases[c].want);
		if (rc == 0)
			crew_section_fini(&r);
		json_decref(j);
	}
	/* A partial-reduce section whose aggregator is not a member. */
	{
		json_t *j = json_deep_copy(good);
		struct crew_section r;
		char err[512];

		json_object_set_new(j, "scheme", json_string("partial-reduce"));
		CU_ASSERT_EQUAL(crew_section_parse(t, j, "p", &r, err, sizeof(err)), -EINVAL);
		CU_ASSERT(strstr(err, "not a member") != NULL);
		json_decref(j);
	}
	json_decref(good);
	crew_section_fini(&s);
	topo_free(t);
}

static void
test_matrix_csv(void)
{
	static const struct {
		const char *text, *want;
	} bad[] = {
		{ "r,a,b\na,,1\n", "not square" },
		{ "r,a,b\na,,1\nb,1,\nc,1,1\n", "not square" },
		{ "r,a,b\na,,1,2\nb,1,\n", "not square" },
		{ "r,a,b\na,,x\nb,1,\n", "m.csv:2:3: bandwidth 'a' -> 'b' must be a number" },
		{ "r,a,b\na,,-1\nb,1,\n", "must be a number > 0" },
		{ "r,a,b\na,,0\nb,1,\n", "must be a number > 0" },
		{ "r,a,b\na,,\nb,1,\n", "missing bandwidth 'a' -> 'b'" },
		{ "r,a,b\nb,,1\na,1,\n", "expected the row of 'a'" },
		{ "r,a,b\na,5,1\nb,1,\n", "diagonal" },
		{ "r,a,a\na,,1\na,1,\n", "duplicate site id" },
		{ "", "not square" },
		{ "r,a,b\na,,1e999\nb,1,\n", "must be a number" },
	};
	char err[512];
	struct topo *t;

	t = crew_matrix_parse("region,a,b,c\na,,1,2\nb,0.5,,1\nc,2,3,0\n\n", "m.csv", "m", err,
			      sizeof(err));
	CHECK(t != NULL, "%s", err);
	if (t != NULL) {
		double *g = crew_matrix_from_topo(t);

		CU_ASSERT_EQUAL(t->n_nodes, 3);
		CU_ASSERT_DOUBLE_EQUAL(g[0 * 3 + 1], 1, 0);
		CU_ASSERT_DOUBLE_EQUAL(g[1 * 3 + 0], 0.5, 0);
		CU_ASSERT_DOUBLE_EQUAL(g[2 * 3 + 1], 3, 0);
		free(g);
		topo_free(t);
	}
	for (size_t c = 0; c < sizeof(bad) / sizeof(bad[0]); c++) {
		t = crew_matrix_parse(bad[c].text, "m.csv", "m", err, sizeof(err));
		CHECK(t == NULL, "case %zu accepted", c);
		CHECK(t != NULL || strstr(err, bad[c].want) != NULL, "case %zu: '%s' lacks '%s'", c,
		      err, bad[c].want);
		topo_free(t);
	}
}

static void
test_compute_times(void)
{
	struct crew_sim_opts o = CREW_SIM_OPTS_DEFAULT;
	int n = quick ? 2000 : 20000, slow = 0, below = 0;

	for (int i = 0; i < n; i++) {
		double t = crew_compute_time(&o, i % 60, i / 60);

		CU_ASSERT(t > 0 && t <= o.compute_s * exp(0.2 * 9) * 20);
		CU_ASSERT_EQUAL(t, crew_compute_time(&o, i % 60, i / 60));
		slow += t > 2 * o.compute_s * 1.5;
		below += t < o.compute_s;
	}
	/* About straggler_prob of the iterations straggle; the body's median is compute_s. */
	CHECK(slow > n * 0.02 && slow < n * 0.08, "%d of %d straggle", slow, n);
	CHECK(fabs((double)below / n - 0.5 * (1 - o.straggler_prob)) < 0.03, "%d below", below);
}

static void
test_simulator(void)
{
	struct topo *t = mesh_topo(60, 1);
	double *g = crew_matrix_from_topo(t);
	struct crew_sim_opts o = CREW_SIM_OPTS_DEFAULT;
	struct crew_sim_result r[3], again;
	int nb;

	o.seconds = quick ? 15 : 50;
	nb = (int)ceil(o.seconds);
	for (int fl = 0; fl <= 20; fl += 20) {
		o.failed_links = fl;
		for (int sch = 0; sch < 3; sch++) {
			int *prog = calloc((size_t)nb, sizeof(int));

			r[sch].progress = prog;
			CU_ASSERT_EQUAL_FATAL(crew_simulate(60, g, (enum crew_scheme)sch, &o, &r[sch]), 0);
			CHECK(r[sch].rounds > 0, "%s with %d failed links: no round",
			      crew_scheme_name((enum crew_scheme)sch), fl);
			CU_ASSERT_EQUAL(prog[nb - 1], r[sch].rounds);
			for (int b = 1; b < nb; b++)
				CU_ASSERT(prog[b] >= prog[b - 1]);
			/* Never stalls: rounds still complete in the second half. */
			CHECK(prog[nb - 1] > prog[nb / 2 - 1], "%s, %d failed links: stalled at %d",
			      crew_scheme_name((enum crew_scheme)sch), fl, prog[nb / 2 - 1]);
			if (sch == CREW_SCHEME_CREW) {
				CU_ASSERT_EQUAL(r[sch].links_failed <= fl, true);
				again.progress = NULL;
				CU_ASSERT_EQUAL(crew_simulate(60, g, CREW_SCHEME_CREW, &o, &again), 0);
				CU_ASSERT_EQUAL(again.rounds, r[sch].rounds); /* deterministic */
			}
			free(prog);
		}
		CHECK(r[0].rounds > 3 * r[1].rounds && r[0].rounds > 3 * r[2].rounds,
		      "crew %d, partial %d, all-to-all %d rounds", r[0].rounds, r[1].rounds,
		      r[2].rounds);
		if (fl > 0 && !quick)
			CHECK(r[0].backups + r[0].relays + r[0].rerouted > 0,
			      "failures never hit a transfer");
	}
	/* One member: every ready worker reduces alone, with no transfer. */
	o.failed_links = 0;
	o.p = 1;
	CU_ASSERT_EQUAL(crew_simulate(60, g, CREW_SCHEME_CREW, &o, &again), 0);
	CHECK(again.rounds > 60 * (int)(o.seconds / (4 * o.compute_s)), "p = 1: %d rounds",
	      again.rounds);
	free(g);
	topo_free(t);
}

int
main(void)
{
	static const struct testutil_case tests[] = {
		{ "three sites by hand", test_hand_three_sites },
		{ "own copy, missing links, bad problems", test_own_copy_and_missing_links },
		{ "breakpoint solver = GLPK LP", test_lp_against_glpk },
		{ "rebalancing = GLPK LP", test_rebalance_against_glpk },
		{ "invariants and failover on random inputs", test_invariants_and_failover },
		{ "failover on a full mesh", test_failover_full_mesh },
		{ "section round trip", test_section_roundtrip },
		{ "section rejects", test_section_rejects },
		{ "CSV matrices", test_matrix_csv },
		{ "compute times", test_compute_times },
		{ "simulator progress", test_simulator },
	};

	quick = getenv("GEOREDUCE_TEST_QUICK") != NULL &&
		strcmp(getenv("GEOREDUCE_TEST_QUICK"), "0") != 0;
	return testutil_run("test_crew", "crew", tests, TESTUTIL_N(tests));
}
