/* SPDX-License-Identifier: BSD-3-Clause
 *
 * Jobs of the control API and tenants (control/daemon/deploy_job.c's deploy_job_parse(),
 * deploy_tenant.c): a job object as job_create takes it, parsed against the example
 * deployment; each malformed field refused with one line naming it under "job."; ids
 * against the other jobs; the deployment's "tenants" and their quotas, and every bad one
 * named.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <CUnit/Basic.h>
#include <jansson.h>

#include "deploy.h"
#include "testutil.h"

#define EXAMPLE "examples/deployments/3site.json"

static struct deploy *
example(void)
{
	char err[DEPLOY_ERR_MAX];
	struct deploy *d = deploy_load(EXAMPLE, err, sizeof(err));

	CHECK(d != NULL, "%s", err);
	CU_ASSERT_PTR_NOT_NULL_FATAL(d);
	return d;
}

/* A job object as a launcher would send it: the example's first job under another id. */
static json_t *
job_object(void)
{
	json_error_t je;
	char *text = sq("{'id': 9, 'algorithm': 'mtree', 'options': {'max_trees': 2},"
			" 'dtype': 'fp32', 'elements': 65536, 'slots': {'max': 512},"
			" 'workers': [{'node': 'a', 'id': 101, 'ipv4': '10.99.0.11', 'port': 6000},"
			"             {'node': 'b', 'id': 201, 'ipv4': '10.99.0.21', 'port': 6000}]}");
	json_t *j = json_loads(text, 0, &je);

	free(text);
	CU_ASSERT_PTR_NOT_NULL_FATAL(j);
	return j;
}

static void
test_good(void)
{
	char err[DEPLOY_ERR_MAX] = "";
	struct deploy *d = example();
	json_t *j = job_object();
	struct deploy_job nj;

	CHECK(deploy_job_parse(d, j, -1, "job_create", "job", &nj, err, sizeof(err)) == 0, "%s",
	      err);
	CHECK(nj.id == 9 && nj.algo == DEPLOY_ALGO_MTREE && nj.max_trees == 2 &&
		      nj.elements == 65536 && nj.slots_max == 512 && nj.n_workers == 2 &&
		      nj.workers[1].node == 1 && nj.chunk_bytes == 352 * 4,
	      "the job as parsed");
	free(nj.workers);
	/* An elastic job may start without workers, and holds at most max_workers. */
	json_object_set_new(j, "elastic", json_true());
	json_object_set_new(j, "max_workers", json_integer(1));
	CHECK(deploy_job_parse(d, j, -1, "job_create", "job", &nj, err, sizeof(err)) != 0 &&
		      strstr(err, "field 'job.workers': 2 workers, more than max_workers 1") !=
			      NULL,
	      "max_workers: %s", err);
	json_object_set_new(j, "max_workers", json_integer(0));
	CHECK(deploy_job_parse(d, j, -1, "job_create", "job", &nj, err, sizeof(err)) != 0 &&
		      strstr(err, "field 'job.max_workers'") != NULL,
	      "max_workers 0: %s", err);
	json_object_del(j, "max_workers");
	json_object_set_new(j, "workers", json_array());
	CHECK(deploy_job_parse(d, j, -1, "job_create", "job", &nj, err, sizeof(err)) == 0 &&
		      nj.elastic && nj.n_workers == 0,
	      "an elastic job without workers: %s", err);
	free(nj.workers);
	json_object_set_new(j, "algorithm", json_string("crew"));
	json_object_del(j, "options");
	CHECK(deploy_job_parse(d, j, -1, "job_create", "job", &nj, err, sizeof(err)) != 0 &&
		      strstr(err, "field 'job.elastic': a crew job") != NULL,
	      "an elastic crew job: %s", err);
	json_decref(j);
	j = job_object();
	/* The id of a job of the deployment is refused, unless that job is the one replaced
	 * (job_update). */
	json_object_set_new(j, "id", json_integer(d->jobs[1].id));
	CHECK(deploy_job_parse(d, j, -1, "job_create", "job", &nj, err, sizeof(err)) != 0 &&
		      strstr(err, "job_create: field 'job.id': 2 is also the id of jobs[1]") !=
			      NULL,
	      "id clash: %s", err);
	CHECK(deploy_job_parse(d, j, 1, "job_update", "changes", &nj, err, sizeof(err)) == 0,
	      "the job it replaces: %s", err);
	free(nj.workers);
	/* The deployment keeps room for the jobs of the API. */
	d->jobs[d->n_jobs] = d->jobs[0];
	d->jobs[d->n_jobs].workers = NULL;
	d->jobs[d->n_jobs].n_workers = 0;
	d->jobs[d->n_jobs++].id = 77;
	json_object_set_new(j, "id", json_integer(77));
	CHECK(deploy_job_parse(d, j, -1, "job_create", "job", &nj, err, sizeof(err)) != 0 &&
		      strstr(err, "field 'job.id': 77 is also") != NULL,
	      "an added job's id: %s", err);
	json_decref(j);
	deploy_free(d);
}

struct bad {
	const char *in;    /* "" (the job), "options", "slots" or "workers" (its first) */
	const char *key;   /* the field */
	const char *value; /* JSON; NULL deletes it */
	const char *want;  /* in the message */
};

static const struct bad bad_fields[] = {
	{"", "id", "-1", "field 'job.id'"},
	{"", "id", "\"9\"", "field 'job.id'"},
	{"", "algorithm", NULL, "field 'job.algorithm': missing"},
	{"", "algorithm", "\"star\"", "field 'job.algorithm': expected"},
	{"", "dtype", NULL, "field 'job.dtype': missing"},
	{"", "dtype", "\"fp64\"", "field 'job.dtype': expected"},
	{"", "elements", "0", "field 'job.elements'"},
	{"", "elements", "1.5", "field 'job.elements'"},
	{"", "elements", NULL, "field 'job.elements': missing"},
	{"", "workers", "[]", "field 'job.workers': expected a non-empty array"},
	{"", "workers", NULL, "field 'job.workers'"},
	{"", "mtu", "100", "field 'job.mtu'"},
	{"", "chunk_bytes", "3", "field 'job.chunk_bytes'"},
	{"", "chunk_bytes", "1402", "field 'job.chunk_bytes': 1402 is not a multiple"},
	{"", "lan_mtu", "9000", "field 'job.lan_mtu': only with a lan_dtype"},
	{"", "lan_dtype", "\"bf16\"", "field 'job.lan_dtype'"},
	{"", "colour", "1", "field 'job.colour': unknown field"},
	{"", "weight", "-1", "field 'job.weight'"},
	{"", "elastic", "1", "field 'job.elastic': expected true or false"},
	{"", "max_workers", "4", "field 'job.max_workers': only with \"elastic\": true"},
	{"options", "max_trees", "-2", "field 'job.options.max_trees'"},
	{"options", "rho", "2", "field 'job.options.rho'"},
	{"options", "min_workers", "1", "field 'job.options.min_workers': unknown"},
	{"options", "paper", "1", "field 'job.options.paper': expected true or false"},
	{"slots", "min", "1024", "field 'job.slots.min': 1024 is above max 512"},
	{"slots", "max", "0", "field 'job.slots.max'"},
	{"slots", "most", "1", "field 'job.slots.most': unknown field"},
	{"workers", "node", "\"z\"", "field 'job.workers[0].node'"},
	{"workers", "id", "2", "field 'job.workers[0].id': 2 is the gateway id"},
	{"workers", "id", "201", "field 'job.workers[1].id': 201 is also the id of workers[0]"},
	{"workers", "ipv4", "\"10.0.0\"", "field 'job.workers[0].ipv4'"},
	{"workers", "port", "0", "field 'job.workers[0].port'"},
	{"workers", "port", NULL, "field 'job.workers[0].port': missing"},
};

/* Every malformed field of a job object: refused, one line, the field named. */
static void
test_bad_fields(void)
{
	struct deploy *d = example();

	for (size_t i = 0; i < sizeof(bad_fields) / sizeof(bad_fields[0]); i++) {
		const struct bad *b = &bad_fields[i];
		char err[DEPLOY_ERR_MAX] = "";
		json_t *j = job_object(), *o = j;
		struct deploy_job nj;
		json_error_t je;

		if (strcmp(b->in, "workers") == 0)
			o = json_array_get(json_object_get(j, "workers"), 0);
		else if (b->in[0] != '\0')
			o = json_object_get(j, b->in);
		if (b->value == NULL)
			json_object_del(o, b->key);
		else
			json_object_set_new(o, b->key, json_loads(b->value, JSON_DECODE_ANY, &je));
		CHECK(deploy_job_parse(d, j, -1, "job_create", "job", &nj, err, sizeof(err)) != 0 &&
			      strstr(err, b->want) != NULL && strchr(err, '\n') == NULL,
		      "%s.%s = %s: '%s' lacks '%s'", b->in, b->key, b->value ? b->value : "(none)",
		      err, b->want);
		json_decref(j);
	}
	deploy_free(d);
}

/* Parse the example with "tenants" = text; the deployment or NULL with err. */
static struct deploy *
with_tenants(const char *text, char *err, size_t errlen)
{
	json_error_t je;
	json_t *doc = json_load_file(EXAMPLE, 0, &je);
	char *q = sq(text), *all;
	struct deploy *d;

	CU_ASSERT_PTR_NOT_NULL_FATAL(doc);
	json_object_set_new(doc, "tenants", json_loads(q, JSON_DECODE_ANY, &je));
	free(q);
	all = json_dumps(doc, 0);
	d = deploy_parse(all, "examples/deployments/t.json", err, errlen);
	free(all);
	json_decref(doc);
	return d;
}

static void
test_tenants(void)
{
	static const struct {
		const char *tenants, *want;
	} bad[] = {
		{"[]", "field 'tenants': expected an object"},
		{"{'a b': {}}", "field 'tenants.a b': a tenant's name"},
		{"{'acme': []}", "field 'tenants.acme': expected an object"},
		{"{'acme': {'jobs': 0}}", "field 'tenants.acme.jobs'"},
		{"{'acme': {'jobs': 17}}", "field 'tenants.acme.jobs'"},
		{"{'acme': {'slots': -1}}", "field 'tenants.acme.slots'"},
		{"{'acme': {'weight': 0}}", "field 'tenants.acme.weight'"},
		{"{'acme': {'memory': 1}}", "field 'tenants.acme.memory': unknown field"},
	};
	char err[DEPLOY_ERR_MAX] = "";
	struct deploy *d = with_tenants("{'zeta': {'jobs': 2}, 'acme': {'jobs': 4, 'slots': "
					"8192, 'weight': 2.5}, 'beta': {}}",
					err, sizeof(err));
	const struct deploy_tenant *t;

	CHECK(d != NULL, "%s", err);
	CU_ASSERT_PTR_NOT_NULL_FATAL(d);
	CHECK(d->n_tenants == 3, "%d tenants", d->n_tenants);
	t = deploy_tenant_find(d, "acme");
	CHECK(t != NULL && t->jobs == 4 && t->slots == 8192 && t->weight == 2.5, "acme");
	t = deploy_tenant_find(d, "beta");
	CHECK(t != NULL && t->jobs == 0 && t->slots == 0 && t->weight == 0, "beta: no limits");
	t = deploy_tenant_find(d, "zeta");
	CHECK(t != NULL && t->jobs == 2, "zeta");
	CHECK(deploy_tenant_find(d, "gamma") == NULL && deploy_tenant_find(d, "") == NULL,
	      "no such tenant");
	deploy_free(d);
	d = example();
	CHECK(d->n_tenants == 0 && deploy_tenant_find(d, "acme") == NULL, "none by default");
	deploy_free(d);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		d = with_tenants(bad[i].tenants, err, sizeof(err));
		CHECK(d == NULL && strstr(err, bad[i].want) != NULL, "%s: '%s' lacks '%s'",
		      bad[i].tenants, err, bad[i].want);
		deploy_free(d);
	}
}

int
main(void)
{
	CU_pSuite s;
	unsigned int fails;

	if (CU_initialize_registry() != CUE_SUCCESS)
		return 1;
	s = CU_add_suite("jobs", NULL, NULL);
	CU_add_test(s, "a job object as job_create takes it", test_good);
	CU_add_test(s, "every malformed field of a job object is named", test_bad_fields);
	CU_add_test(s, "tenants and their quotas", test_tenants);
	CU_basic_set_mode(CU_BRM_VERBOSE);
	CU_basic_run_tests();
	fails = CU_get_number_of_failures();
	CU_cleanup_registry();
	return (int)fails;
}
