/* SPDX-License-Identifier: BSD-3-Clause
 *
 * The deployment parser's jobs (deploy_job.h): each job's algorithm and options, workers,
 * slots and tensor, checked against the gateways and the protected links read before them.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "deploy_field.h"
#include "deploy_job.h"
#include "jsonutil.h"
#include "wire.h"

/* A crew job's grace window: `grace_ms` a number of ms or "auto" (the gateways set it from
 * the recent arrivals, up to `grace_max_ms`), only with `min_workers`. */
static int
parse_grace(struct dctx *c, const json_t *o, const char *path, struct deploy_job *j)
{
	const json_t *g = json_object_get(o, "grace_ms");
	int rc;

	if (json_is_string(g)) {
		if (strcmp(json_string_value(g), "auto") != 0)
			return json_util_field_fail(&c->js, path, "grace_ms",
						    "expected an integer in [0, %d] or \"auto\"",
						    TABLE_GRACE_MS_MAX);
		j->grace_auto = true;
		rc = dctx_get_u32(c, o, path, "grace_max_ms", 1, TABLE_GRACE_MS_MAX,
				  DEPLOY_DEFAULT_GRACE_MAX_MS, &j->grace_ms);
	} else if (g != NULL && !json_is_integer(g)) {
		return json_util_field_fail(&c->js, path, "grace_ms",
					    "expected an integer in [0, %d] or \"auto\"",
					    TABLE_GRACE_MS_MAX);
	} else {
		rc = dctx_get_u32(c, o, path, "grace_ms", 0, TABLE_GRACE_MS_MAX, 0, &j->grace_ms);
		if (rc == 0 && json_object_get(o, "grace_max_ms") != NULL)
			return json_util_field_fail(&c->js, path, "grace_max_ms",
						    "only with \"grace_ms\": \"auto\"");
	}
	if (rc == 0 && (j->grace_ms != 0 || j->grace_auto) && j->min_workers == 0)
		return json_util_field_fail(&c->js, path, "grace_ms",
					    "a grace window needs min_workers");
	return rc;
}

static int
parse_options(struct dctx *c, const json_t *job, const char *jpath, struct deploy_job *j)
{
	static const char *const mtree_keys[] = {"max_trees", "max_height_ms", "min_rate_gbps",
						 "rho", "paper"};
	static const char *const ring_keys[] = {"search_seconds"};
	static const char *const crew_keys[] = {"min_workers", "grace_ms", "grace_max_ms"};
	static const char *const selmcast_keys[] = {"p", "model"};
	static const char *const bc_keys[] = {"max_trees"};
	json_t *o = json_object_get(job, "options");
	char path[FIELD_MAX + 32];
	uint64_t k = 0;
	int rc;

	if (o == NULL)
		return 0;
	snprintf(path, sizeof(path), "%s.options", jpath);
	switch (j->algo) {
	case DEPLOY_ALGO_MTREE:
		rc = dctx_check_keys(c, o, path, mtree_keys, N_OF(mtree_keys), 0);
		if (rc == 0)
			rc = dctx_get_uint(c, o, path, "max_trees", 0, PLAN_TREES_MAX,
					   DEPLOY_DEFAULT_MAX_TREES, &k);
		if (rc == 0)
			rc = dctx_get_real(c, o, path, "max_height_ms", 0, 1e6, &j->max_height_ms);
		if (rc == 0)
			rc = dctx_get_real(c, o, path, "min_rate_gbps", 0, 1e6, &j->min_rate_gbps);
		if (rc == 0)
			rc = dctx_get_real(c, o, path, "rho", 0, 1, &j->rho);
		if (rc != 0)
			return rc;
		j->max_trees = (int)k;
		if (json_object_get(o, "paper") != NULL) {
			if (!json_is_boolean(json_object_get(o, "paper")))
				return json_util_field_fail(&c->js, path, "paper",
							    "expected true or false");
			j->paper = json_is_true(json_object_get(o, "paper"));
		}
		return 0;
	case DEPLOY_ALGO_BLUECONNECT: /* the WAN stage's K */
		rc = dctx_check_keys(c, o, path, bc_keys, N_OF(bc_keys), 0);
		if (rc == 0)
			rc = dctx_get_uint(c, o, path, "max_trees", 0, PLAN_TREES_MAX,
					   DEPLOY_DEFAULT_MAX_TREES, &k);
		j->max_trees = (int)k;
		return rc;
	case DEPLOY_ALGO_RING:
		rc = dctx_check_keys(c, o, path, ring_keys, N_OF(ring_keys), 0);
		if (rc == 0)
			rc = dctx_get_real(c, o, path, "search_seconds", 0.001, 60,
					   &j->ring_seconds);
		return rc;
	case DEPLOY_ALGO_CREW: /* checked against the workers once they are read */
		rc = dctx_check_keys(c, o, path, crew_keys, N_OF(crew_keys), 0);
		if (rc == 0)
			rc = dctx_get_u32(c, o, path, "min_workers", 1, TABLE_ID_MAX, 0,
					  &j->min_workers);
		return rc != 0 ? rc : parse_grace(c, o, path, j);
	case DEPLOY_ALGO_SELMCAST: /* p is checked against the worker sites when planned */
		rc = dctx_check_keys(c, o, path, selmcast_keys, N_OF(selmcast_keys), 0);
		if (rc == 0)
			rc = dctx_get_uint(c, o, path, "p", 1, TOPO_NODES_MAX, 0, &k);
		if (rc != 0)
			return rc;
		j->mcast_p = (int)k;
		if (json_object_get(o, "model") != NULL) {
			const char *m = json_string_value(json_object_get(o, "model"));

			if (m == NULL ||
			    (strcmp(m, "network") != 0 && strcmp(m, "application") != 0))
				return json_util_field_fail(&c->js, path, "model",
							    "expected \"network\" or "
							    "\"application\"");
			j->mcast_application = strcmp(m, "application") == 0;
		}
		return 0;
	default:
		if (json_object_size(o) != 0)
			return json_util_field_fail(
				&c->js, path, json_object_iter_key(json_object_iter(o)),

				"algorithm '%s' takes no options", deploy_algo_name(j->algo));
		return dctx_check_keys(c, o, path, NULL, 0, 0);
	}
}

static int
parse_worker(struct dctx *c, const json_t *w, const char *path, const struct deploy *d,
	     struct deploy_job *j, int k)
{
	static const char *const known[] = {"node", "id", "ipv4", "port"};
	struct deploy_worker *dw = &j->workers[k];
	uint64_t id, port;
	int rc;

	rc = dctx_check_keys(c, w, path, known, N_OF(known), N_OF(known));
	if (rc == 0)
		rc = dctx_get_node(c, d->topo, w, path, "node", &dw->node);
	if (rc == 0)
		rc = dctx_get_uint(c, w, path, "id", 1, TABLE_ID_MAX, 0, &id);
	if (rc == 0)
		rc = dctx_get_ipv4(c, w, path, &dw->w.ipv4);
	if (rc == 0)
		rc = dctx_get_uint(c, w, path, "port", 1, UINT16_MAX, 0, &port);
	if (rc != 0)
		return rc;
	dw->w.id = (uint16_t)id;
	dw->w.port = (uint16_t)port;
	for (int g = 0; g < d->n_gateways; g++)
		if (d->gateways[g].id == id)
			return json_util_field_fail(&c->js, path, "id",
						    "%" PRIu64 " is the gateway id of node '%s' "
						    "(workers and gateways share one id space)",
						    id, d->topo->nodes[d->gateways[g].node].id);
	for (int i = 0; i < k; i++)
		if (j->workers[i].w.id == id)
			return json_util_field_fail(&c->js, path, "id",
						    "%" PRIu64 " is also the id of workers[%d]", id,
						    i);
	if (deploy_job_workers_at(j, dw->node) > TABLE_WORKERS_MAX)
		return json_util_field_fail(&c->js, path, "node",
					    "more than %d workers at node '%s'", TABLE_WORKERS_MAX,
					    d->topo->nodes[dw->node].id);
	return 0;
}

static int
parse_slots(struct dctx *c, const json_t *job, const char *jpath, struct deploy_job *j)
{
	static const char *const known[] = {"min", "max"};
	json_t *o = json_object_get(job, "slots");
	char path[FIELD_MAX + 32];
	uint64_t lo, hi;
	int rc;

	if (o == NULL)
		return 0;
	snprintf(path, sizeof(path), "%s.slots", jpath);
	rc = dctx_check_keys(c, o, path, known, N_OF(known), 0);
	if (rc == 0)
		rc = dctx_get_uint(c, o, path, "min", 1, TABLE_SLOTS_MAX, 0, &lo);
	if (rc == 0)
		rc = dctx_get_uint(c, o, path, "max", 1, TABLE_SLOTS_MAX, 0, &hi);
	if (rc != 0)
		return rc;
	if (lo != 0 && hi != 0 && lo > hi)
		return json_util_field_fail(&c->js, path, "min",
					    "%" PRIu64 " is above max %" PRIu64, lo, hi);
	j->slots_min = (uint32_t)lo;
	j->slots_max = (uint32_t)hi;
	return 0;
}

/* "lan_dtype" (fp32 or bf16, an MX job only; absent: the dtype) and "lan_mtu" (absent:
 * mtu): the hop from the workers to their gateway. */
static int
parse_lan(struct dctx *c, const json_t *job, const char *path, struct deploy_job *j)
{
	const char *lan;
	int rc;

	j->lan_dtype = 0;
	j->lan_mtu = j->mtu;
	if (json_object_get(job, "lan_dtype") == NULL) {
		if (json_object_get(job, "lan_mtu") != NULL)
			return json_util_field_fail(&c->js, path, "lan_mtu",
						    "only with a lan_dtype");
		return 0;
	}
	rc = dctx_get_str(c, job, path, "lan_dtype", &lan);
	if (rc != 0)
		return rc;
	j->lan_dtype = table_dtype_from_name(lan);
	if (j->lan_dtype != TABLE_DTYPE_FP32 && j->lan_dtype != TABLE_DTYPE_BF16 &&
	    j->lan_dtype != j->dtype)
		return json_util_field_fail(&c->js, path, "lan_dtype",
					    "expected \"fp32\" or \"bf16\", got '%.16s'", lan);
	if (j->lan_dtype == j->dtype) {
		j->lan_dtype = 0;
	} else if (table_dtype_granule(j->dtype) == 1) {
		return json_util_field_fail(&c->js, path, "lan_dtype",
					    "%s differs from the dtype %s: only an MX job sends "
					    "its workers' hop wider",
					    lan, table_dtype_name(j->dtype));
	}
	return dctx_get_u32(c, job, path, "lan_mtu", WIRE_MTU_MIN, WIRE_MTU_MAX, j->mtu,
			    &j->lan_mtu);
}

static int
parse_tensor(struct dctx *c, const json_t *job, const char *path, struct deploy_job *j)
{
	const char *dt;
	uint64_t v;
	size_t esz;
	unsigned int gran;
	int rc, e;

	rc = dctx_get_str(c, job, path, "dtype", &dt);
	if (rc != 0)
		return rc;
	j->dtype = table_dtype_from_name(dt);
	if (j->dtype == 0)
		return json_util_field_fail(&c->js, path, "dtype",
					    "expected \"fp32\", \"fp16\", \"bf16\", \"mxint8\", "
					    "\"mxfp8\" or \"mxfp4\", got '%.16s'",
					    dt);
	/* The unit of a chunk: an element, or an MX block of 32 with its scale. */
	esz = table_dtype_unit_bytes(j->dtype);
	gran = table_dtype_granule(j->dtype);
	rc = dctx_get_uint(c, job, path, "elements", 1, UINT64_MAX >> 12, 0, &j->elements);
	if (rc == 0)
		rc = dctx_get_u32(c, job, path, "mtu", WIRE_MTU_MIN, WIRE_MTU_MAX,
				  DEPLOY_DEFAULT_MTU, &j->mtu);
	if (rc != 0)
		return rc;
	rc = parse_lan(c, job, path, j);
	if (rc != 0)
		return rc;
	/* With protected links a chunk leaves room for sealing (docs/PROTOCOL.md 14.2). */
	e = wire_chunk_elems_default(j->mtu - c->seal_room, (enum wire_dtype)j->dtype,
				     j->cset_blocks);
	if (e <= 0)
		return json_util_field_fail(&c->js, path, "mtu", "no chunk fits an MTU of %u",
					    j->mtu);
	if (j->lan_dtype != 0) {
		/* The workers' wider CONTRIBs fit the LAN's MTU (never sealed), in whole
		 * blocks of the WAN dtype. */
		int l = wire_chunk_elems_default(j->lan_mtu, (enum wire_dtype)j->lan_dtype,
						 j->cset_blocks);

		l -= l % (int)gran;
		if ((uint64_t)l * table_dtype_size(j->lan_dtype) > TABLE_CHUNK_BYTES_MAX)
			l = (int)(TABLE_CHUNK_BYTES_MAX / table_dtype_size(j->lan_dtype) / gran *
				  gran);
		if (l <= 0)
			return json_util_field_fail(&c->js, path, "lan_mtu",
						    "no chunk of %s fits an MTU of %u",
						    table_dtype_name(j->lan_dtype), j->lan_mtu);
		if (l < e)
			e = l;
	}
	if ((size_t)e / gran * esz > TABLE_CHUNK_BYTES_MAX)
		e = (int)(TABLE_CHUNK_BYTES_MAX / esz * gran);
	rc = dctx_get_uint(c, job, path, "chunk_bytes", esz, TABLE_CHUNK_BYTES_MAX,
			   (uint64_t)e / gran * esz, &v);
	if (rc != 0)
		return rc;
	if (v % esz != 0)
		return json_util_field_fail(&c->js, path, "chunk_bytes",
					    "%" PRIu64 " is not a multiple of the %s "
					    "%s size %zu",
					    v, dt, gran > 1 ? "block" : "element", esz);
	v += (uint64_t)j->cset_blocks * WIRE_CSET_BLOCK; /* the set travels with the chunk */
	if (v + WIRE_MTU_OVERHEAD + c->seal_room > j->mtu)
		return json_util_field_fail(
			&c->js, path, "chunk_bytes",
			"%" PRIu64 " bytes%s need an MTU of %" PRIu64 ", the job's mtu is %u", v,
			j->cset_blocks != 0 ? " (with the contributor set)" : "",
			v + WIRE_MTU_OVERHEAD + c->seal_room, j->mtu);
	if (j->lan_dtype != 0) {
		uint64_t lan = (v - (uint64_t)j->cset_blocks * WIRE_CSET_BLOCK) / esz * gran *
			       table_dtype_size(j->lan_dtype);

		if (lan > TABLE_CHUNK_BYTES_MAX ||
		    lan + (uint64_t)j->cset_blocks * WIRE_CSET_BLOCK + WIRE_MTU_OVERHEAD >
			    j->lan_mtu)
			return json_util_field_fail(
				&c->js, path, "chunk_bytes",
				"%" PRIu64 " bytes of %s make %" PRIu64 " bytes "
				"of the lan_dtype %s: more than %u, or than the "
				"lan_mtu %u holds",
				v - (uint64_t)j->cset_blocks * WIRE_CSET_BLOCK, dt, lan,
				table_dtype_name(j->lan_dtype), TABLE_CHUNK_BYTES_MAX, j->lan_mtu);
	}
	v -= (uint64_t)j->cset_blocks * WIRE_CSET_BLOCK;
	j->chunk_bytes = (uint32_t)v;
	if (j->elements % gran != 0)
		return json_util_field_fail(&c->js, path, "elements",
					    "%" PRIu64 " is not a whole number of %s blocks of %u "
					    "elements",
					    j->elements, dt, gran);
	if ((j->elements + v / esz * gran - 1) / (v / esz * gran) > UINT32_MAX)
		return json_util_field_fail(&c->js, path, "elements",
					    "more than 2^32-1 chunks of %" PRIu64 " bytes", v);
	return 0;
}

/* A crew job's packets name their workers in contributor sets: the fewest blocks that
 * hold every worker id, and at most as many workers needed as there are. */
static int
crew_sets(struct dctx *c, const char *path, struct deploy_job *j)
{
	char wpath[FIELD_MAX + 32];
	uint16_t top = 0;
	int at = 0;

	for (int i = 0; i < j->n_workers; i++)
		if (j->workers[i].w.id > top) {
			top = j->workers[i].w.id;
			at = i;
		}
	if (top >= WIRE_CSET_BLOCKS_MAX * WIRE_CSET_BLOCK_IDS) {
		snprintf(wpath, sizeof(wpath), "%s.workers[%d]", path, at);
		return json_util_field_fail(&c->js, wpath, "id",
					    "%u: a crew job names its workers in contributor sets, "
					    "whose ids are below %u",
					    top, WIRE_CSET_BLOCKS_MAX * WIRE_CSET_BLOCK_IDS);
	}
	j->cset_blocks = (uint8_t)(top / WIRE_CSET_BLOCK_IDS + 1);
	if (j->min_workers > (uint32_t)j->n_workers) {
		snprintf(wpath, sizeof(wpath), "%s.options", path);
		return json_util_field_fail(&c->js, wpath, "min_workers",
					    "%u is more than the job's %d workers", j->min_workers,
					    j->n_workers);
	}
	if (j->grace_ms != 0 && j->min_workers == (uint32_t)j->n_workers) {
		snprintf(wpath, sizeof(wpath), "%s.options", path);
		return json_util_field_fail(&c->js, wpath, "grace_ms",
					    "a grace window needs min_workers below the job's %d "
					    "workers",
					    j->n_workers);
	}
	return 0;
}

/* "elastic" (a boolean, false without) and "max_workers" (only with it): workers join and
 * leave through the control API. Not for a crew job, whose quorum counts a fixed list. */
static int
parse_elastic(struct dctx *c, const json_t *job, const char *path, struct deploy_job *j)
{
	const json_t *e = json_object_get(job, "elastic");

	if (e != NULL && !json_is_boolean(e))
		return json_util_field_fail(&c->js, path, "elastic", "expected true or false");
	j->elastic = json_is_true(e);
	if (!j->elastic && json_object_get(job, "max_workers") != NULL)
		return json_util_field_fail(&c->js, path, "max_workers",
					    "only with \"elastic\": true");
	if (j->elastic && j->algo == DEPLOY_ALGO_CREW)
		return json_util_field_fail(&c->js, path, "elastic",
					    "a crew job's quorum counts a fixed list of workers");
	return dctx_get_u32(c, job, path, "max_workers", 1, TABLE_ID_MAX, 0, &j->max_workers);
}

static int
parse_job(struct dctx *c, const json_t *job, const char *path, struct deploy *d, int ji)
{
	static const char *const known[] = {"id",      "algorithm",  "dtype",   "elements",
					    "workers", "options",    "mtu",     "chunk_bytes",
					    "slots",   "lan_dtype",  "lan_mtu", "weight",
					    "elastic", "max_workers"};
	struct deploy_job *j = &d->jobs[ji];
	char wpath[FIELD_MAX + 32];
	const char *algo;
	json_t *ws;
	int rc;

	d->n_jobs = ji + 1;
	rc = dctx_check_keys(c, job, path, known, N_OF(known), 5);
	if (rc == 0)
		rc = dctx_get_u32(c, job, path, "id", 0, UINT32_MAX, 0, &j->id);
	if (rc != 0)
		return rc;
	for (int i = 0; i < ji; i++)
		if (d->jobs[i].id == j->id)
			return json_util_field_fail(&c->js, path, "id",
						    "%u is also the id of jobs[%d]", j->id, i);
	rc = dctx_get_str(c, job, path, "algorithm", &algo);
	if (rc != 0)
		return rc;
	for (int a = DEPLOY_ALGO_MTREE; a <= DEPLOY_ALGO_BLUECONNECT; a++)
		if (strcmp(algo, deploy_algo_name((enum deploy_algo)a)) == 0)
			j->algo = (enum deploy_algo)a;
	if (j->algo == 0)
		return json_util_field_fail(
			&c->js, path, "algorithm",
			"expected \"mtree\", \"ring\", "
			"\"single-tree\", \"crew\", \"selmcast\" or \"blueconnect\", got "
			"'%.32s'",
			algo);
	j->max_trees = DEPLOY_DEFAULT_MAX_TREES;
	j->ring_seconds = DEPLOY_DEFAULT_RING_SECONDS;
	j->weight = 1;
	rc = dctx_get_real(c, job, path, "weight", DEPLOY_WEIGHT_MIN, DEPLOY_WEIGHT_MAX,
			   &j->weight);
	if (rc == 0)
		rc = parse_options(c, job, path, j);
	if (rc == 0)
		rc = parse_slots(c, job, path, j);
	if (rc == 0)
		rc = parse_elastic(c, job, path, j);
	if (rc != 0)
		return rc;
	ws = json_object_get(job, "workers");
	if (!json_is_array(ws) || (json_array_size(ws) == 0 && !j->elastic))
		return json_util_field_fail(&c->js, path, "workers",
					    j->elastic ? "expected an array" :
							 "expected a non-empty array");
	if (j->max_workers != 0 && json_array_size(ws) > j->max_workers)
		return json_util_field_fail(&c->js, path, "workers",
					    "%zu workers, more than max_workers %u",
					    json_array_size(ws), j->max_workers);
	if (json_array_size(ws) > TABLE_ID_MAX)
		return json_util_field_fail(&c->js, path, "workers", "more than %d workers",
					    TABLE_ID_MAX);
	j->workers = calloc(json_array_size(ws) + 1, sizeof(*j->workers));
	if (j->workers == NULL)
		return json_util_field_fail(&c->js, path, "workers", "out of memory");
	for (size_t i = 0; i < json_array_size(ws); i++) {
		snprintf(wpath, sizeof(wpath), "%s.workers[%zu]", path, i);
		j->n_workers = (int)i + 1;
		rc = parse_worker(c, json_array_get(ws, i), wpath, d, j, (int)i);
		if (rc != 0)
			return rc;
	}
	if (j->algo == DEPLOY_ALGO_CREW) {
		rc = crew_sets(c, path, j);
		if (rc != 0)
			return rc;
	}
	rc = parse_tensor(c, job, path, j); /* its chunk size depends on the sets */
	if (rc == 0 && j->algo == DEPLOY_ALGO_SELMCAST && j->lan_dtype != 0)
		return json_util_field_fail(&c->js, path, "lan_dtype",
					    "a selmcast job has one dtype on every hop");
	if (rc == 0 && j->algo == DEPLOY_ALGO_SELMCAST && table_dtype_granule(j->dtype) > 1)
		return json_util_field_fail(&c->js, path, "dtype",
					    "a selmcast job's updates are not summed: fp32, fp16 "
					    "or bf16, not %s",
					    table_dtype_name(j->dtype));
	return rc;
}

int
deploy_parse_jobs(struct dctx *c, const json_t *root, struct deploy *d)
{
	/* Room for the jobs the control process's API adds beside the file's. */
	d->jobs = calloc(DEPLOY_JOBS_MAX, sizeof(*d->jobs));
	if (d->jobs == NULL)
		return json_util_field_fail(&c->js, "", "jobs", "out of memory");
	return dctx_each_item(c, root, "jobs", DEPLOY_JOBS_MAX, false, d, parse_job);
}

int
deploy_job_parse(const struct deploy *d, const json_t *job, int skip, const char *src,
		 const char *path, struct deploy_job *out, char *err, size_t errlen)
{
	struct dctx c = {.js = {.src = src, .err = err, .errlen = errlen},
			 .seal_room = d->seal_aead != 0 ? WIRE_SEAL_OVERHEAD : 0};
	struct deploy tmp = *d; /* the others, read for their ids; the new one last */
	int n = 0, rc;

	tmp.jobs = calloc(DEPLOY_JOBS_MAX + 1, sizeof(*tmp.jobs));
	if (tmp.jobs == NULL)
		return json_util_failrc(-ENOMEM, err, errlen, "%s: out of memory", src);
	for (int i = 0; i < d->n_jobs; i++)
		if (i != skip)
			tmp.jobs[n++] = d->jobs[i];
	rc = parse_job(&c, job, path, &tmp, n);
	if (rc == 0)
		*out = tmp.jobs[n];
	else
		free(tmp.jobs[n].workers);
	free(tmp.jobs);
	return rc;
}
