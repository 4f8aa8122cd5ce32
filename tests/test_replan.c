/* SPDX-License-Identifier: BSD-3-Clause
 *
 * Re-plans after a link loss (control/daemon/jobplan.c, jobplan_trees.c, jobplan_mcast.c):
 * on the 4-site AWS WAN and three larger WANs of examples/topologies/ (the 10-site AWS
 * mesh, B4, CREW's 11-site mesh), each link removed in turn under each algorithm the
 * daemon runs on a WAN (mtree, crew, selmcast, blueconnect) must give a valid plan
 * (plan_validate() for trees, jobplan_streams_validate() for streams) whenever the worker
 * sites stay connected, and none where they do not. Prints, per topology and algorithm,
 * the predicted round time of the intact plan and the range over the re-plans.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <CUnit/Basic.h>
#include <jansson.h>

#include "deploy.h"
#include "jobplan.h"
#include "jobplan_mcast.h"
#include "testutil.h"

static const char *const algos[] = {"mtree", "crew", "selmcast", "blueconnect"};
#define N_ALGOS 4

/* A deployment of the topology file: one gateway per site, one worker per worker site and
 * job, one job per algorithm (job ids 1..N_ALGOS). NULL with err on failure. */
static struct deploy *
deployment(const char *topo_path, char *err, size_t errlen)
{
	json_error_t je;
	json_t *topo = json_load_file(topo_path, 0, &je), *gws = json_array(), *jobs = json_array();
	json_t *nodes = json_object_get(topo, "nodes"), *node, *doc;
	struct deploy *d = NULL;
	char ip[32], sock[64], *text;
	size_t i;

	if (topo == NULL) {
		snprintf(err, errlen, "%s: %s", topo_path, je.text);
		json_decref(gws);
		json_decref(jobs);
		return NULL;
	}
	json_array_foreach (nodes, i, node) {
		snprintf(ip, sizeof(ip), "10.99.%zu.%zu", i / 200, i % 200 + 1);
		snprintf(sock, sizeof(sock), "/run/georeduce/g%zu.sock", i);
		json_array_append_new(gws, json_pack("{s:O, s:i, s:s, s:s}", "node",
						     json_object_get(node, "id"), "id", (int)i + 1,
						     "ipv4", ip, "socket", sock));
	}
	for (int a = 0; a < N_ALGOS; a++) {
		json_t *ws = json_array();

		json_array_foreach (nodes, i, node) {
			if (json_integer_value(json_object_get(node, "workers")) <= 0)
				continue;
			snprintf(ip, sizeof(ip), "10.98.%zu.%zu", i / 200, i % 200 + 1);
			json_array_append_new(ws, json_pack("{s:O, s:i, s:s, s:i}", "node",
							    json_object_get(node, "id"), "id",
							    1000 * (a + 1) + (int)i, "ipv4", ip,
							    "port", 5000 + a));
		}
		json_array_append_new(jobs,
				      json_pack("{s:i, s:s, s:s, s:i, s:{s:i}, s:o}", "id", a + 1,
						"algorithm", algos[a], "dtype", "fp32", "elements",
						1048576, "slots", "max", 1024, "workers", ws));
	}
	doc = json_pack("{s:s, s:s, s:o, s:o, s:o}", "format", "georeduce-deployment/1", "name",
			"replan", "topology", topo, "gateways", gws, "jobs", jobs);
	text = doc != NULL ? json_dumps(doc, 0) : NULL;
	if (text != NULL)
		d = deploy_parse(text, topo_path, err, errlen);
	else
		snprintf(err, errlen, "out of memory");
	free(text);
	json_decref(doc);
	return d;
}

/* Whether the worker sites stay connected without link `skip`. */
static bool
connected_without(const struct topo *t, int skip)
{
	int n = t->n_nodes, *stack = malloc(sizeof(int) * (size_t)n), top = 0, first = -1;
	bool *seen = calloc((size_t)n, sizeof(bool)), ok = true;

	CU_ASSERT_FATAL(stack != NULL && seen != NULL);
	for (int v = 0; v < n && first < 0; v++)
		if (t->nodes[v].workers > 0)
			first = v;
	seen[first] = true;
	stack[top++] = first;
	while (top > 0) {
		int v = stack[--top];

		for (int l = 0; l < t->n_links; l++) {
			int u = t->links[l].a == v ? t->links[l].b :
				t->links[l].b == v ? t->links[l].a :
						     -1;

			if (l != skip && u >= 0 && !seen[u]) {
				seen[u] = true;
				stack[top++] = u;
			}
		}
	}
	for (int v = 0; v < n; v++)
		ok &= seen[v] || t->nodes[v].workers == 0;
	free(stack);
	free(seen);
	return ok;
}

static int
cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

/* Every link of the topology removed in turn under every algorithm. */
static void
replan_every_link(const char *topo_path)
{
	char err[JOBPLAN_ERR_MAX];
	struct deploy *d = deployment(topo_path, err, sizeof(err));
	int nl;
	struct jobplan_link *lk;
	double *secs;

	CHECK(d != NULL, "%s", err);
	CU_ASSERT_PTR_NOT_NULL_FATAL(d);
	nl = d->topo->n_links;
	lk = calloc((size_t)nl, sizeof(*lk));
	secs = calloc((size_t)nl, sizeof(double));
	CU_ASSERT_FATAL(lk != NULL && secs != NULL);
	for (int a = 0; a < N_ALGOS; a++) {
		struct jobplan *jp = NULL;
		double intact = 0;
		int valid = 0, cuts = 0, rc;

		CHECK(jobplan_build(d, a, NULL, NULL, 1, &jp, err, sizeof(err)) == 0,
		      "%s %s intact: %s", topo_path, algos[a], err);
		if (jp != NULL)
			intact = jp->plan->allreduce_seconds;
		jobplan_free(jp);
		for (int l = 0; l < nl; l++) {
			const struct topo_link *k = &d->topo->links[l];
			bool valid_plan;

			for (int m = 0; m < nl; m++)
				lk[m] = (struct jobplan_link){.up = m != l};
			jp = NULL;
			rc = jobplan_build(d, a, NULL, lk, 2 + (uint32_t)l, &jp, err, sizeof(err));
			if (!connected_without(d->topo, l)) {
				CHECK(rc != 0, "%s %s without %s-%s: a plan over a cut WAN",
				      topo_path, algos[a], d->topo->nodes[k->a].id,
				      d->topo->nodes[k->b].id);
				jobplan_free(jp);
				continue;
			}
			CHECK(rc == 0 && jp != NULL, "%s %s without %s-%s: %s", topo_path, algos[a],
			      d->topo->nodes[k->a].id, d->topo->nodes[k->b].id, err);
			if (rc != 0 || jp == NULL) {
				cuts++;
				continue;
			}
			if (jp->streams != NULL)
				valid_plan = jobplan_streams_validate(jp->topo, jp, err,
								      sizeof(err)) == 0;
			else
				valid_plan =
					jp->plan->n_trees > 0 &&
					plan_validate(jp->topo, jp->plan, 0, err, sizeof(err)) == 0;
			CHECK(valid_plan, "%s %s without %s-%s: %s", topo_path, algos[a],
			      d->topo->nodes[k->a].id, d->topo->nodes[k->b].id, err);
			CHECK(jp->topo->n_links == nl - 1, "%d links", jp->topo->n_links);
			CHECK(jp->plan->allreduce_seconds > 0 &&
				      isfinite(jp->plan->allreduce_seconds),
			      "predicted %g s", jp->plan->allreduce_seconds);
			if (valid_plan)
				secs[valid++] = jp->plan->allreduce_seconds;
			else
				cuts++;
			jobplan_free(jp);
		}
		qsort(secs, (size_t)valid, sizeof(double), cmp_double);
		printf("\n  %s %s: %d of %d link losses re-planned validly; predicted %.3f s "
		       "intact, %.3f / %.3f / %.3f s (min / median / max) re-planned",
		       topo_path, algos[a], valid, valid + cuts, intact, valid > 0 ? secs[0] : NAN,
		       valid > 0 ? secs[valid / 2] : NAN, valid > 0 ? secs[valid - 1] : NAN);
	}
	free(secs);
	free(lk);
	deploy_free(d);
}

static void
test_aws4(void)
{
	replan_every_link("examples/topologies/aws-4region.json");
}

static void
test_aws10(void)
{
	replan_every_link("examples/topologies/aws-10region.json");
}

static void
test_crew11(void)
{
	replan_every_link("examples/topologies/crew-11.json");
}

static void
test_b4(void)
{
	replan_every_link("examples/topologies/b4.json");
}

int
main(void)
{
	CU_pSuite s;
	unsigned int fails;

	if (CU_initialize_registry() != CUE_SUCCESS)
		return 1;
	s = CU_add_suite("replan", NULL, NULL);
	CU_add_test(s, "every link loss of the 4-site AWS WAN, every algorithm", test_aws4);
	CU_add_test(s, "every link loss of the 10-site AWS WAN, every algorithm", test_aws10);
	CU_add_test(s, "every link loss of B4, every algorithm", test_b4);
	CU_add_test(s, "every link loss of CREW's 11-site mesh, every algorithm", test_crew11);
	CU_basic_set_mode(CU_BRM_VERBOSE);
	CU_basic_run_tests();
	fails = CU_get_number_of_failures();
	CU_cleanup_registry();
	return (int)fails;
}
