/* SPDX-License-Identifier: BSD-3-Clause
 *
 * The georeduce-deployment/1 parser (control/daemon/deploy.c, deploy_job.c and
 * deploy_field.c): the example file and its defaults, a topology file relative to the
 * deployment, and one mutation of the example per rule, each of which must fail with one
 * line naming the field.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <CUnit/Basic.h>
#include <jansson.h>

#include "deploy.h"
#include "testutil.h"

#define EXAMPLE "examples/deployments/3site.json"

static json_t *
example(void)
{
	json_error_t je;
	json_t *r = json_load_file(EXAMPLE, 0, &je);

	CU_ASSERT_PTR_NOT_NULL_FATAL(r);
	return r;
}

/*
 * The value at a path like "jobs[0].workers[1]" under root; with create, the last
 * object key may be absent. NULL if the path does not exist.
 */
static json_t *
at(json_t *root, const char *path, char *last, size_t lastlen)
{
	char buf[256], *save = NULL, *tok;
	json_t *cur = root;

	snprintf(buf, sizeof(buf), "%s", path);
	last[0] = '\0';
	for (tok = strtok_r(buf, ".", &save); tok != NULL; tok = strtok_r(NULL, ".", &save)) {
		char *br = strchr(tok, '[');
		bool final = save == NULL || *save == '\0';

		if (br != NULL)
			*br = '\0';
		if (final && br == NULL) {
			snprintf(last, lastlen, "%s", tok);
			return cur;
		}
		cur = json_object_get(cur, tok);
		while (br != NULL && cur != NULL) {
			cur = json_array_get(cur, strtoul(br + 1, NULL, 10));
			br = strchr(br + 1, '[');
		}
		if (cur == NULL)
			return NULL;
	}
	return cur;
}

/* Set (or with v NULL delete) the value at path: an object key or an array item. */
static void
mutate(json_t *root, const char *path, json_t *v)
{
	char last[64];
	json_t *parent = at(root, path, last, sizeof(last));

	CU_ASSERT_PTR_NOT_NULL_FATAL(parent);
	if (last[0] != '\0') {
		if (v == NULL)
			json_object_del(parent, last);
		else
			json_object_set_new(parent, last, v);
		return;
	}
	/* path ends with [i]: parent is that item; replace it in its array. */
	char arr[256];
	const char *br = strrchr(path, '[');

	snprintf(arr, sizeof(arr), "%.*s", (int)(br - path), path);
	json_t *a = at(root, arr, last, sizeof(last));

	a = last[0] != '\0' ? json_object_get(a, last) : a;
	CU_ASSERT_FATAL(json_is_array(a));
	if (v == NULL)
		json_array_remove(a, strtoul(br + 1, NULL, 10));
	else
		json_array_set_new(a, strtoul(br + 1, NULL, 10), v);
}

/* Parse a document; the deployment (freed by the caller) or NULL with err. */
static struct deploy *
parse_json(const json_t *doc, char *err, size_t errlen)
{
	char *text = json_dumps(doc, JSON_INDENT(2));
	struct deploy *d = deploy_parse(text, "examples/deployments/t.json", err, errlen);

	free(text);
	return d;
}

static void
test_example(void)
{
	char err[DEPLOY_ERR_MAX];
	struct deploy *d = deploy_load(EXAMPLE, err, sizeof(err));

	CU_ASSERT_PTR_NOT_NULL_FATAL(d);
	CHECK(d->topo->n_nodes == 3, "%d nodes", d->topo->n_nodes);
	CHECK(d->gateways[0].id == 1 && d->gateways[2].id == 3, "gateway ids");
	CHECK(d->gateways[1].ipv4 == (10u << 24 | 99u << 16 | 2), "ipv4 %08x",
	      d->gateways[1].ipv4);
	CHECK(d->gateways[0].base_port == 17400 && d->gateways[0].ports == 16,
	      "default ports %u %u", d->gateways[0].base_port, d->gateways[0].ports);
	CHECK(strcmp(d->gateways[0].socket, "/run/georeduce/a.sock") == 0, "socket %s",
	      d->gateways[0].socket);
	CU_ASSERT_FATAL(d->n_jobs == 3);
	CHECK(d->jobs[0].algo == DEPLOY_ALGO_MTREE && d->jobs[0].max_trees == 4 &&
	      d->jobs[0].max_height_ms == 60, "job 1 options");
	CHECK(d->jobs[0].mtu == 1500 && d->jobs[0].chunk_bytes == 352 * 4,
	      "job 1 chunk %u (default from the MTU: 352 fp32)", d->jobs[0].chunk_bytes);
	CHECK(d->jobs[0].slots_max == 1024 && d->jobs[0].slots_min == 0, "job 1 slots");
	CHECK(d->jobs[0].weight == 1 && d->jobs[1].weight == 1, "default weights %g %g",
	      d->jobs[0].weight, d->jobs[1].weight);
	CHECK(d->jobs[0].n_workers == 6 && deploy_job_workers_at(&d->jobs[0], 1) == 2,
	      "job 1 workers");
	CHECK(d->jobs[1].algo == DEPLOY_ALGO_RING && d->jobs[1].dtype == TABLE_DTYPE_BF16 &&
	      d->jobs[1].chunk_bytes == 704 * 2, "job 2: %u", d->jobs[1].chunk_bytes);
	CHECK(d->jobs[1].ring_seconds == DEPLOY_DEFAULT_RING_SECONDS, "ring default");
	CHECK(d->jobs[1].cset_blocks == 0, "ring: no contributor sets");
	/* crew: ids up to 321 need two blocks of set, and the chunk leaves room for them. */
	CHECK(d->jobs[2].algo == DEPLOY_ALGO_CREW && d->jobs[2].min_workers == 2 &&
	      d->jobs[2].cset_blocks == 2, "job 3: %d %u %u", d->jobs[2].algo,
	      d->jobs[2].min_workers, d->jobs[2].cset_blocks);
	CHECK(d->jobs[2].chunk_bytes == 336 * 4, "job 3 chunk %u (338 fp32 fit with 64 bytes "
	      "of set, rounded to 64 bytes)", d->jobs[2].chunk_bytes);
	deploy_free(d);
}

/* A topology and sockets named relative to the deployment's directory. */
static void
test_relative_paths(void)
{
	char dir[] = "/tmp/test_deploy.XXXXXX", path[512], err[DEPLOY_ERR_MAX];
	json_t *doc = example();
	struct deploy *d;
	FILE *f;

	CU_ASSERT_PTR_NOT_NULL_FATAL(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/topo.json", dir);
	CU_ASSERT_FATAL(json_dump_file(json_object_get(doc, "topology"), path, 0) == 0);
	mutate(doc, "topology", json_string("topo.json"));
	mutate(doc, "gateways[0].socket", json_string("a.sock"));
	json_object_set_new(doc, "tls",
			    json_pack("{s:s,s:s,s:s,s:s}", "ca", "ca.pem", "cert", "c.pem", "key",
				      "c.key", "crl", "pki/crl.pem"));
	snprintf(path, sizeof(path), "%s/d.json", dir);
	f = fopen(path, "w");
	CU_ASSERT_PTR_NOT_NULL_FATAL(f);
	json_dumpf(doc, f, 0);
	fclose(f);
	d = deploy_load(path, err, sizeof(err));
	CHECK(d != NULL, "%s", err);
	if (d != NULL) {
		snprintf(path, sizeof(path), "%s/a.sock", dir);
		CHECK(strcmp(d->gateways[0].socket, path) == 0, "socket %s",
		      d->gateways[0].socket);
		snprintf(path, sizeof(path), "%s/topo.json", dir);
		CHECK(strcmp(d->topology_src, path) == 0, "topology %s", d->topology_src);
		snprintf(path, sizeof(path), "%s/pki/crl.pem", dir);
		CHECK(strcmp(d->tls.crl, path) == 0 && DEPLOY_TLS_CRL(&d->tls) == d->tls.crl,
		      "crl %s", d->tls.crl);
	}
	deploy_free(d);
	snprintf(path, sizeof(path), "%s/topo.json", dir);
	unlink(path);
	snprintf(path, sizeof(path), "%s/d.json", dir);
	unlink(path);
	rmdir(dir);
	json_decref(doc);
}

struct bad_case {
	const char *path;        /* where to change the example */
	const char *value;       /* the new value as JSON; NULL deletes */
	const char *want;        /* a substring of the error */
};

static const struct bad_case bad_cases[] = {
	{ "format", "\"georeduce-deployment/2\"", "field 'format'" },
	{ "format", NULL, "field 'format'" },
	{ "extra", "1", "field 'extra': unknown field" },
	{ "topology", NULL, "field 'topology': missing" },
	{ "topology", "\"no-such-topology.json\"", "field 'topology'" },
	{ "topology", "7", "field 'topology'" },
	{ "topology.links", "[]", "field 'topology'" },
	{ "gateways", "{}", "field 'gateways'" },
	{ "gateways[2]", NULL, "node 'c' has no gateway" },
	{ "gateways[0].id", "0", "field 'gateways[0].id'" },
	{ "gateways[0].id", "65535", "field 'gateways[0].id'" },
	{ "gateways[0].id", "1.5", "field 'gateways[0].id'" },
	{ "gateways[1].id", "1", "field 'gateways[1].id'" },
	{ "gateways[1].ipv4", "\"10.99.0.1\"", "field 'gateways[1].ipv4'" },
	{ "gateways[0].ipv4", "\"224.0.0.1\"", "field 'gateways[0].ipv4'" },
	{ "gateways[0].ipv4", "\"10.99.0.01\"", "field 'gateways[0].ipv4'" },
	{ "gateways[0].node", "\"zz\"", "field 'gateways[0].node'" },
	{ "gateways[1].node", "\"a\"", "field 'gateways': topology node 'b' has no gateway" },
	{ "gateways[0].socket", "\"\"", "field 'gateways[0].socket'" },
	{ "gateways[1].socket", "\"/run/georeduce/a.sock\"", "field 'gateways[1].socket'" },
	{ "gateways[0].socket",
	  "\"/tmp/aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
	  "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa.sock\"", "field 'gateways[0].socket'" },
	{ "gateways[0].socket", "\"tls://10.0.0.1\"", "field 'gateways[0].socket': "
	  "tls://10.0.0.1: expected HOST:PORT" },
	{ "gateways[0].socket", "\"tls://10.0.0.1:0\"", "the port must be 1..65535" },
	{ "gateways[0].socket", "\"tls://10.0.0.1:7300\"", "field 'tls': missing: gateway 'a'" },
	{ "gateways[0].endpoint", "\"tls://10.0.0.1:7300\"", "field 'gateways[0].endpoint': "
	  "give either an endpoint or a socket" },
	{ "tls", "{\"ca\": \"ca.pem\", \"cert\": \"c.pem\"}", "field 'tls.key': missing" },
	{ "tls", "{\"ca\": \"ca.pem\", \"cert\": \"c.pem\", \"key\": \"c.key\", \"listen\": "
	  "\"0.0.0.0\"}", "field 'tls.listen'" },
	{ "tls", "{\"ca\": \"ca.pem\", \"cert\": \"c.pem\", \"key\": \"k\", \"crl\": 7}",
	  "field 'tls.crl'" },
	{ "tls", "{\"ca\": \"ca.pem\", \"cert\": \"c.pem\", \"key\": \"k\", \"crls\": \"x\"}",
	  "field 'tls.crls': unknown field" },
	{ "gateways[2].base_port", "65530", "field 'gateways[2].ports'" },
	{ "gateways[2].ports", "0", "field 'gateways[2].ports'" },
	{ "gateways[0].mac", "\"x\"", "field 'gateways[0].mac': unknown field" },
	{ "jobs", "{}", "field 'jobs': expected an array" },
	{ "jobs[0].id", "\"x\"", "field 'jobs[0].id'" },
	{ "jobs[0].id", "4294967296", "field 'jobs[0].id'" },
	{ "jobs[1].id", "1", "field 'jobs[1].id'" },
	{ "jobs[0].algorithm", "\"tree\"", "field 'jobs[0].algorithm'" },
	{ "jobs[0].algorithm", NULL, "field 'jobs[0].algorithm': missing" },
	{ "jobs[0].options.max_trees", "-1", "field 'jobs[0].options.max_trees'" },
	{ "jobs[0].options.rho", "2", "field 'jobs[0].options.rho'" },
	{ "jobs[0].options.paper", "1", "field 'jobs[0].options.paper'" },
	{ "jobs[0].options.bogus", "1", "field 'jobs[0].options.bogus': unknown field" },
	{ "jobs[1].options", "{\"max_trees\": 2}", "field 'jobs[1].options.max_trees'" },
	{ "jobs[0].weight", "0", "field 'jobs[0].weight': 0 is not in [0.001, 1e+06]" },
	{ "jobs[0].weight", "-3", "field 'jobs[0].weight': -3 is not in" },
	{ "jobs[1].weight", "\"3\"", "field 'jobs[1].weight': expected a number" },
	{ "jobs[1].weight", "true", "field 'jobs[1].weight': expected a number" },
	{ "jobs[1].weight", "null", "field 'jobs[1].weight': expected a number" },
	{ "jobs[0].weight", "1e300", "field 'jobs[0].weight': 1e+300 is not in" },
	{ "jobs[0].weight", "2000000", "field 'jobs[0].weight': 2e+06 is not in" },
	{ "jobs[0].weight", "0.0001", "field 'jobs[0].weight': 0.0001 is not in" },
	{ "jobs[0].dtype", "\"fp64\"", "field 'jobs[0].dtype'" },
	{ "jobs[0].elements", "0", "field 'jobs[0].elements'" },
	{ "jobs[0].mtu", "100", "field 'jobs[0].mtu'" },
	{ "jobs[0].chunk_bytes", "1407", "field 'jobs[0].chunk_bytes'" },
	{ "jobs[0].chunk_bytes", "8192", "field 'jobs[0].chunk_bytes'" },
	{ "jobs[0].slots.min", "2048", "field 'jobs[0].slots.min'" },
	{ "jobs[0].slots.max", "0", "field 'jobs[0].slots.max'" },
	{ "jobs[0].slots.avg", "3", "field 'jobs[0].slots.avg'" },
	{ "jobs[0].workers", "[]", "field 'jobs[0].workers'" },
	{ "jobs[0].workers[1].id", "101", "field 'jobs[0].workers[1].id'" },
	{ "jobs[0].workers[0].id", "3", "field 'jobs[0].workers[0].id'" },
	{ "jobs[0].workers[0].port", "0", "field 'jobs[0].workers[0].port'" },
	{ "jobs[0].workers[0].port", NULL, "field 'jobs[0].workers[0].port': missing" },
	{ "jobs[0].workers[0].node", "\"q\"", "field 'jobs[0].workers[0].node'" },
	{ "jobs[0].workers[0].ipv4", "\"1.2.3\"", "field 'jobs[0].workers[0].ipv4'" },
	{ "jobs[0].workers[2]", "\"w\"", "field 'jobs[0].workers[2]'" },
	{ "jobs[2].options.min_workers", "4", "field 'jobs[2].options.min_workers': 4 is more" },
	{ "jobs[2].options.min_workers", "0", "field 'jobs[2].options.min_workers'" },
	{ "jobs[2].options.max_trees", "2", "field 'jobs[2].options.max_trees': unknown" },
	{ "jobs[2].workers[1].id", "4096", "field 'jobs[2].workers[1].id': 4096: a crew job" },
	{ "jobs[2].chunk_bytes", "1408", "(with the contributor set)" },
	{ "jobs[0].options.min_workers", "2", "field 'jobs[0].options.min_workers': unknown" },
};

/* A selmcast job: options parsed, defaults, and bad options named. */
static void
test_selmcast(void)
{
	static const struct { const char *opts; const char *want; } bad[] = {
		{ "{\"p\": 0}", "field 'jobs[1].options.p'" },
		{ "{\"p\": 1.5}", "field 'jobs[1].options.p'" },
		{ "{\"model\": \"ip\"}", "field 'jobs[1].options.model': expected \"network\"" },
		{ "{\"model\": 1}", "field 'jobs[1].options.model'" },
		{ "{\"min_workers\": 1}", "field 'jobs[1].options.min_workers': unknown" },
	};
	char err[DEPLOY_ERR_MAX] = "";
	json_error_t je;
	json_t *doc = example();
	struct deploy *d;

	mutate(doc, "jobs[1].algorithm", json_string("selmcast"));
	d = parse_json(doc, err, sizeof(err));
	CHECK(d != NULL && d->jobs[1].algo == DEPLOY_ALGO_SELMCAST && d->jobs[1].mcast_p == 0 &&
	      !d->jobs[1].mcast_application, "defaults: %s", err);
	CHECK(d != NULL && strcmp(deploy_algo_name(d->jobs[1].algo), "selmcast") == 0, "name");
	deploy_free(d);
	mutate(doc, "jobs[1].options", json_loads("{\"p\": 2, \"model\": \"application\"}", 0, &je));
	d = parse_json(doc, err, sizeof(err));
	CHECK(d != NULL && d->jobs[1].mcast_p == 2 && d->jobs[1].mcast_application, "options: %s",
	      err);
	deploy_free(d);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		mutate(doc, "jobs[1].options", json_loads(bad[i].opts, 0, &je));
		d = parse_json(doc, err, sizeof(err));
		CHECK(d == NULL && strstr(err, bad[i].want) != NULL && strchr(err, '\n') == NULL,
		      "%s: '%s' lacks '%s'", bad[i].opts, err, bad[i].want);
		deploy_free(d);
	}
	json_decref(doc);
}

/* A crew job's grace window: fixed, "auto" with its bound (default or given), and every bad
 * value refused naming its field. */
static void
test_crew_grace(void)
{
	static const struct { const char *opts; const char *want; } bad[] = {
		{ "{\"min_workers\": 2, \"grace_ms\": -1}", "field 'jobs[2].options.grace_ms'" },
		{ "{\"min_workers\": 2, \"grace_ms\": 60001}", "field 'jobs[2].options.grace_ms'" },
		{ "{\"min_workers\": 2, \"grace_ms\": 1.5}", "field 'jobs[2].options.grace_ms'" },
		{ "{\"min_workers\": 2, \"grace_ms\": \"soon\"}",
		  "field 'jobs[2].options.grace_ms': expected an integer" },
		{ "{\"min_workers\": 2, \"grace_ms\": true}", "field 'jobs[2].options.grace_ms'" },
		{ "{\"grace_ms\": 100}", "field 'jobs[2].options.grace_ms': a grace window needs" },
		{ "{\"grace_ms\": \"auto\"}", "field 'jobs[2].options.grace_ms': a grace window" },
		{ "{\"min_workers\": 3, \"grace_ms\": 100}",
		  "field 'jobs[2].options.grace_ms': a grace window needs min_workers below" },
		{ "{\"min_workers\": 2, \"grace_ms\": 100, \"grace_max_ms\": 200}",
		  "field 'jobs[2].options.grace_max_ms': only with" },
		{ "{\"min_workers\": 2, \"grace_ms\": \"auto\", \"grace_max_ms\": 0}",
		  "field 'jobs[2].options.grace_max_ms'" },
		{ "{\"min_workers\": 2, \"grace_ms\": \"auto\", \"grace_max_ms\": \"1\"}",
		  "field 'jobs[2].options.grace_max_ms'" },
	};
	static const struct { const char *opts; uint32_t ms; bool automatic; } good[] = {
		{ "{\"min_workers\": 2}", 0, false },
		{ "{\"min_workers\": 2, \"grace_ms\": 0}", 0, false },
		{ "{\"min_workers\": 2, \"grace_ms\": 300}", 300, false },
		{ "{\"min_workers\": 2, \"grace_ms\": \"auto\"}", DEPLOY_DEFAULT_GRACE_MAX_MS, true },
		{ "{\"min_workers\": 2, \"grace_ms\": \"auto\", \"grace_max_ms\": 250}", 250, true },
	};
	char err[DEPLOY_ERR_MAX] = "";
	json_error_t je;
	json_t *doc = example();
	struct deploy *d;

	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		mutate(doc, "jobs[2].options", json_loads(good[i].opts, 0, &je));
		d = parse_json(doc, err, sizeof(err));
		CHECK(d != NULL && d->jobs[2].grace_ms == good[i].ms &&
			      d->jobs[2].grace_auto == good[i].automatic,
		      "%s: %s", good[i].opts, err);
		deploy_free(d);
	}
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		mutate(doc, "jobs[2].options", json_loads(bad[i].opts, 0, &je));
		d = parse_json(doc, err, sizeof(err));
		CHECK(d == NULL && strstr(err, bad[i].want) != NULL && strchr(err, '\n') == NULL,
		      "%s: '%s' lacks '%s'", bad[i].opts, err, bad[i].want);
		deploy_free(d);
	}
	json_decref(doc);
}

/* A job's weight: any number in [0.001, 1e6], integer or not (bad ones in bad_cases). */
static void
test_weight(void)
{
	static const double good[] = {0.001, 0.25, 3, 1000000};
	char err[DEPLOY_ERR_MAX] = "";
	json_t *doc = example();
	struct deploy *d;

	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		mutate(doc, "jobs[1].weight", good[i] == 3 ? json_integer(3) : json_real(good[i]));
		d = parse_json(doc, err, sizeof(err));
		CHECK(d != NULL && d->jobs[1].weight == good[i] && d->jobs[0].weight == 1,
		      "weight %g: %s", good[i], err);
		deploy_free(d);
	}
	json_decref(doc);
}

/* MX jobs: chunk_bytes in whole blocks (default from the MTU), elements whole blocks. */
static void
test_mx(void)
{
	char err[DEPLOY_ERR_MAX] = "";
	json_t *doc = example();
	struct deploy *d;

	mutate(doc, "jobs[0].dtype", json_string("mxfp4"));
	d = parse_json(doc, err, sizeof(err));
	CHECK(d != NULL && d->jobs[0].dtype == TABLE_DTYPE_MXFP4 &&
	      d->jobs[0].chunk_bytes == 83 * 17, "mxfp4 default chunk: %s %u", err,
	      d != NULL ? d->jobs[0].chunk_bytes : 0);
	deploy_free(d);
	mutate(doc, "jobs[0].dtype", json_string("mxint8"));
	mutate(doc, "jobs[0].chunk_bytes", json_integer(33 * 10));
	d = parse_json(doc, err, sizeof(err));
	CHECK(d != NULL && d->jobs[0].chunk_bytes == 330, "mxint8 10 blocks: %s", err);
	deploy_free(d);
	mutate(doc, "jobs[0].chunk_bytes", json_integer(1024));
	d = parse_json(doc, err, sizeof(err));
	CHECK(d == NULL && strstr(err, "block size 33") != NULL, "1024 bytes: '%s'", err);
	deploy_free(d);
	mutate(doc, "jobs[0].chunk_bytes", json_integer(330));
	mutate(doc, "jobs[1].algorithm", json_string("selmcast"));
	mutate(doc, "jobs[1].dtype", json_string("mxfp8"));
	d = parse_json(doc, err, sizeof(err));
	CHECK(d == NULL && strstr(err, "jobs[1].dtype") != NULL, "selmcast mxfp8: '%s'", err);
	deploy_free(d);
	mutate(doc, "jobs[1].dtype", json_string("bf16"));
	mutate(doc, "jobs[0].chunk_bytes", json_integer(330));
	mutate(doc, "jobs[0].elements", json_integer(1048577));
	d = parse_json(doc, err, sizeof(err));
	CHECK(d == NULL && strstr(err, "whole number of mxint8 blocks") != NULL &&
	      strstr(err, "jobs[0].elements") != NULL, "elements: '%s'", err);
	deploy_free(d);
	json_decref(doc);
}

/* An MX job's LAN hop: lan_dtype fp32 or bf16, its chunks fitting lan_mtu too. */
static void
test_mx_lan(void)
{
	char err[DEPLOY_ERR_MAX] = "";
	json_t *doc = example();
	struct deploy *d;

	mutate(doc, "jobs[0].dtype", json_string("mxint8"));
	mutate(doc, "jobs[0].lan_dtype", json_string("fp32"));
	d = parse_json(doc, err, sizeof(err));
	CHECK(d != NULL && d->jobs[0].lan_dtype == TABLE_DTYPE_FP32 &&
	      d->jobs[0].lan_mtu == 1500 && d->jobs[0].chunk_bytes == 11 * 33,
	      "fp32 on a 1500 LAN, 352 elements: %s %u", err,
	      d != NULL ? d->jobs[0].chunk_bytes : 0);
	deploy_free(d);
	mutate(doc, "jobs[0].lan_mtu", json_integer(9000));
	d = parse_json(doc, err, sizeof(err));
	CHECK(d != NULL && d->jobs[0].lan_mtu == 9000 && d->jobs[0].chunk_bytes == 42 * 33,
	      "fp32 on a jumbo LAN, the WAN's 1344: %s %u", err,
	      d != NULL ? d->jobs[0].chunk_bytes : 0);
	deploy_free(d);
	mutate(doc, "jobs[0].dtype", json_string("mxfp4"));
	d = parse_json(doc, err, sizeof(err));
	CHECK(d != NULL && d->jobs[0].chunk_bytes == 69 * 17,
	      "mxfp4 with fp32: 2208 elements, 8832 bytes: %s %u", err,
	      d != NULL ? d->jobs[0].chunk_bytes : 0);
	deploy_free(d);
	mutate(doc, "jobs[0].lan_dtype", json_string("bf16"));
	mutate(doc, "jobs[0].lan_mtu", json_integer(1500));
	d = parse_json(doc, err, sizeof(err));
	CHECK(d != NULL && d->jobs[0].lan_dtype == TABLE_DTYPE_BF16 &&
	      d->jobs[0].chunk_bytes == 22 * 17, "mxfp4 with bf16, 704 elements: %s %u", err,
	      d != NULL ? d->jobs[0].chunk_bytes : 0);
	deploy_free(d);
	mutate(doc, "jobs[0].dtype", json_string("mxint8"));
	mutate(doc, "jobs[0].lan_dtype", json_string("fp32"));
	mutate(doc, "jobs[0].chunk_bytes", json_integer(42 * 33));
	d = parse_json(doc, err, sizeof(err));
	CHECK(d == NULL && strstr(err, "jobs[0].chunk_bytes") != NULL &&
	      strstr(err, "lan_mtu 1500") != NULL, "1344 fp32 on a 1500 LAN: '%s'", err);
	deploy_free(d);
	mutate(doc, "jobs[0].chunk_bytes", NULL);
	mutate(doc, "jobs[0].lan_dtype", json_string("fp16"));
	d = parse_json(doc, err, sizeof(err));
	CHECK(d == NULL && strstr(err, "jobs[0].lan_dtype") != NULL, "fp16: '%s'", err);
	deploy_free(d);
	mutate(doc, "jobs[0].dtype", json_string("fp32"));
	mutate(doc, "jobs[0].lan_dtype", json_string("bf16"));
	d = parse_json(doc, err, sizeof(err));
	CHECK(d == NULL && strstr(err, "only an MX job") != NULL, "fp32 job: '%s'", err);
	deploy_free(d);
	mutate(doc, "jobs[0].lan_dtype", NULL);
	d = parse_json(doc, err, sizeof(err));
	CHECK(d == NULL && strstr(err, "jobs[0].lan_mtu") != NULL &&
	      strstr(err, "only with a lan_dtype") != NULL, "lan_mtu alone: '%s'", err);
	deploy_free(d);
	json_decref(doc);
}

/* The example with a second gateway at node a (listed last) and the third at c named. */
static json_t *
two_at_a(void)
{
	json_error_t je;
	json_t *doc = example();

	json_array_append_new(json_object_get(doc, "gateways"),
			      json_loads("{\"node\": \"a\", \"id\": 4, \"ipv4\": \"10.99.0.4\","
					 " \"socket\": \"/run/georeduce/a2.sock\"}", 0, &je));
	return doc;
}

/* Several gateways at a site: ordered by node and, within one, by the file; their names and
 * shards; every rule about them, named. */
static void
test_gateways_per_site(void)
{
	static const struct {
		const char *path, *value, *want;
	} bad[] = {
		{ "gateways[3].id", "1", "field 'gateways[3].id': 1 is also the gateway of node 'a'" },
		{ "gateways[3].ipv4", "\"10.99.0.2\"", "field 'gateways[3].ipv4'" },
		{ "gateways[3].socket", "\"/run/georeduce/a.sock\"", "field 'gateways[3].socket'" },
		{ "gateways[3].name", "\"b\"", "named 'b', another node" },
		{ "gateways[3].name", "\"a\"", "named 'a', its site of several gateways" },
		{ "gateways[3].name", "\"a_2\"", "field 'gateways[3].name'" },
		{ "gateways[3].name", "\"-a\"", "field 'gateways[3].name'" },
		{ "gateways[3].name", "7", "field 'gateways[3].name'" },
		{ "gateways[0].name", "\"a-2\"", "two gateways are named 'a-2'" },
		{ "jobs[0].workers[0].id", "4", "4 is the gateway id of node 'a'" },
	};
	char err[DEPLOY_ERR_MAX] = "";
	json_error_t je;
	json_t *doc = two_at_a();
	struct deploy *d = parse_json(doc, err, sizeof(err));

	CHECK(d != NULL, "%s", err);
	if (d != NULL) {
		CU_ASSERT_EQUAL(d->n_gateways, 4);
		CU_ASSERT(d->node_gw[0] == 0 && d->node_ngw[0] == 2 && d->node_gw[1] == 2 &&
			  d->node_ngw[1] == 1 && d->node_gw[2] == 3 && d->node_ngw[2] == 1);
		CU_ASSERT(d->gateways[0].id == 1 && d->gateways[1].id == 4 &&
			  d->gateways[2].id == 2 && d->gateways[3].id == 3);
		CU_ASSERT(d->gateways[0].shard == 0 && d->gateways[1].shard == 1 &&
			  d->gateways[1].node == 0 && d->gateways[3].node == 2);
		CHECK(strcmp(d->gateways[0].name, "a-1") == 0 &&
		      strcmp(d->gateways[1].name, "a-2") == 0 &&
		      strcmp(d->gateways[2].name, "b") == 0, "names %s %s %s", d->gateways[0].name,
		      d->gateways[1].name, d->gateways[2].name);
	}
	deploy_free(d);
	/* One gateway per site: every gateway named after its node, in node order. */
	json_decref(doc);
	doc = example();
	d = parse_json(doc, err, sizeof(err));
	CU_ASSERT_FATAL(d != NULL);
	for (int v = 0; v < 3; v++)
		CU_ASSERT(d->node_gw[v] == v && d->node_ngw[v] == 1 && d->gateways[v].node == v &&
			  strcmp(d->gateways[v].name, d->topo->nodes[v].id) == 0);
	deploy_free(d);
	json_decref(doc);
	/* Names given; a tls:// gateway's name is the one its certificate carries. */
	doc = two_at_a();
	mutate(doc, "gateways[3].name", json_string("a-east"));
	d = parse_json(doc, err, sizeof(err));
	CHECK(d != NULL && strcmp(d->gateways[1].name, "a-east") == 0 &&
	      strcmp(d->gateways[0].name, "a-1") == 0, "%s", err);
	deploy_free(d);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		json_t *v = json_loads(bad[i].value, JSON_DECODE_ANY, &je);

		json_decref(doc);
		doc = two_at_a();
		CU_ASSERT_PTR_NOT_NULL_FATAL(v);
		mutate(doc, bad[i].path, v);
		d = parse_json(doc, err, sizeof(err));
		CHECK(d == NULL && strstr(err, bad[i].want) != NULL && strchr(err, '\n') == NULL,
		      "%s = %s: '%s' lacks '%s'", bad[i].path, bad[i].value, err, bad[i].want);
		deploy_free(d);
	}
	/* At most 16 gateways at a site. */
	json_decref(doc);
	doc = example();
	for (int k = 0; k < 16; k++) {
		char g[160];

		snprintf(g, sizeof(g), "{\"node\": \"b\", \"id\": %d, \"ipv4\": \"10.99.1.%d\", "
			 "\"socket\": \"/run/georeduce/b%d.sock\"}", 40 + k, 10 + k, k);
		json_array_append_new(json_object_get(doc, "gateways"), json_loads(g, 0, &je));
	}
	d = parse_json(doc, err, sizeof(err));
	CHECK(d == NULL && strstr(err, "node 'b' has more than 16 gateways") != NULL, "%s", err);
	deploy_free(d);
	json_decref(doc);
}

/* A blueconnect job: its one option, the WAN stage's K. */
static void
test_blueconnect(void)
{
	char err[DEPLOY_ERR_MAX] = "";
	json_t *doc = example();
	struct deploy *d;

	mutate(doc, "jobs[1].algorithm", json_string("blueconnect"));
	d = parse_json(doc, err, sizeof(err));
	CHECK(d != NULL && d->jobs[1].algo == DEPLOY_ALGO_BLUECONNECT &&
	      d->jobs[1].max_trees == DEPLOY_DEFAULT_MAX_TREES &&
	      strcmp(deploy_algo_name(d->jobs[1].algo), "blueconnect") == 0, "%s", err);
	deploy_free(d);
	mutate(doc, "jobs[1].options", json_pack("{s:i}", "max_trees", 3));
	d = parse_json(doc, err, sizeof(err));
	CHECK(d != NULL && d->jobs[1].max_trees == 3, "%s", err);
	deploy_free(d);
	mutate(doc, "jobs[1].options", json_pack("{s:i}", "rho", 1));
	d = parse_json(doc, err, sizeof(err));
	CHECK(d == NULL && strstr(err, "field 'jobs[1].options.rho': unknown field") != NULL, "%s",
	      err);
	deploy_free(d);
	mutate(doc, "jobs[1].options", json_pack("{s:i}", "max_trees", -2));
	d = parse_json(doc, err, sizeof(err));
	CHECK(d == NULL && strstr(err, "field 'jobs[1].options.max_trees'") != NULL, "%s", err);
	deploy_free(d);
	mutate(doc, "jobs[1].algorithm", json_string("blue-connect"));
	d = parse_json(doc, err, sizeof(err));
	CHECK(d == NULL && strstr(err, "\"blueconnect\"") != NULL, "%s", err);
	deploy_free(d);
	json_decref(doc);
}

static void
test_bad_fields(void)
{
	for (size_t i = 0; i < sizeof(bad_cases) / sizeof(bad_cases[0]); i++) {
		const struct bad_case *bc = &bad_cases[i];
		char err[DEPLOY_ERR_MAX] = "";
		json_t *doc = example(), *v = NULL;
		struct deploy *d;

		if (bc->value != NULL) {
			json_error_t je;

			v = json_loads(bc->value, JSON_DECODE_ANY, &je);
			CU_ASSERT_PTR_NOT_NULL_FATAL(v);
		}
		mutate(doc, bc->path, v);
		d = parse_json(doc, err, sizeof(err));
		CHECK(d == NULL && errno == EINVAL, "%s = %s: accepted", bc->path,
		      bc->value != NULL ? bc->value : "(deleted)");
		CHECK(strstr(err, bc->want) != NULL, "%s: error '%s' lacks '%s'", bc->path, err,
		      bc->want);
		CHECK(strchr(err, '\n') == NULL && strncmp(err, "examples/deployments/t.json: ",
							   29) == 0,
		      "not one line naming the file: '%s'", err);
		deploy_free(d);
		json_decref(doc);
	}
}

static void
test_syntax(void)
{
	static const struct {
		const char *text, *want;
	} cases[] = {
		{ "{\"format\": \"georeduce-deployment/1\",\n  \"jobs\": [,]}", "d.json:2:" },
		{ "{\"format\": \"a\", \"format\": \"b\"}", "d.json:1:" },
		{ "[]", "not a JSON object" },
		{ "", "d.json:" },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char err[DEPLOY_ERR_MAX] = "";
		struct deploy *d = deploy_parse(cases[i].text, "d.json", err, sizeof(err));

		CHECK(d == NULL && strstr(err, cases[i].want) != NULL && strchr(err, '\n') == NULL,
		      "case %zu: '%s'", i, err);
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
	s = CU_add_suite("deploy", NULL, NULL);
	CU_add_test(s, "the example and its defaults", test_example);
	CU_add_test(s, "paths relative to the deployment", test_relative_paths);
	CU_add_test(s, "every bad field is named", test_bad_fields);
	CU_add_test(s, "a job's weight", test_weight);
	CU_add_test(s, "MX jobs: whole blocks", test_mx);
	CU_add_test(s, "MX jobs: a LAN dtype and its MTU", test_mx_lan);
	CU_add_test(s, "selmcast jobs and their options", test_selmcast);
	CU_add_test(s, "crew jobs: the grace window", test_crew_grace);
	CU_add_test(s, "several gateways at a site", test_gateways_per_site);
	CU_add_test(s, "blueconnect jobs", test_blueconnect);
	CU_add_test(s, "JSON syntax errors", test_syntax);
	CU_basic_set_mode(CU_BRM_VERBOSE);
	CU_basic_run_tests();
	fails = CU_get_number_of_failures();
	CU_cleanup_registry();
	return (int)fails;
}
