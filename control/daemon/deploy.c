/* SPDX-License-Identifier: BSD-3-Clause
 *
 * The `georeduce-deployment/1` parser (docs/DEPLOYMENT.md): strict, one-line errors that
 * name the field.
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "ctltls.h"
#include "deploy.h"
#include "jsonutil.h"
#include "wire.h"

#define N_OF(a) (sizeof(a) / sizeof((a)[0]))

/* Field paths in messages: "jobs[12].workers[4095].ipv4" and the like. */
#define FIELD_MAX 96

struct dctx {
	struct json_util_src js;        /* the file's name and the error buffer */
	char base[DEPLOY_PATH_MAX + 1]; /* directory relative paths start from, "" for cwd */
	uint32_t seal_room;             /* bytes of a frame sealing takes (protected links) */
};

/* obj is an object whose keys are all in known[]; its first n_required are present. */
static int
check_keys(struct dctx *c, const json_t *obj, const char *path, const char *const *known,
	   size_t n_known, size_t n_required)
{
	const char *bad;

	if (!json_is_object(obj))
		return json_util_field_fail(&c->js, path, "", "expected an object");
	bad = json_util_unknown_key(obj, known, n_known);
	if (bad != NULL)
		return json_util_field_fail(&c->js, path, bad, "unknown field");
	for (size_t k = 0; k < n_required; k++)
		if (json_object_get(obj, known[k]) == NULL)
			return json_util_field_fail(&c->js, path, known[k], "missing");
	return 0;
}

/*
 * The items of array root[key] (at most max, at least one if nonempty), each parsed by
 * fn with its path "key[i]".
 */
static int
each_item(struct dctx *c, const json_t *root, const char *key, size_t max, bool nonempty,
	  struct deploy *d, int (*fn)(struct dctx *, const json_t *, const char *,
				      struct deploy *, int))
{
	json_t *arr = json_object_get(root, key);
	char path[FIELD_MAX];
	int rc;

	if (!json_is_array(arr))
		return json_util_field_fail(&c->js, "", key, "expected an array");
	if (json_array_size(arr) > max)
		return json_util_field_fail(&c->js, "", key,
					    "%zu items, at most %zu", json_array_size(arr), max);
	if (nonempty && json_array_size(arr) == 0)
		return json_util_field_fail(&c->js, "", key, "empty");
	for (size_t i = 0; i < json_array_size(arr); i++) {
		snprintf(path, sizeof(path), "%s[%zu]", key, i);
		rc = fn(c, json_array_get(arr, i), path, d, (int)i);
		if (rc != 0)
			return rc;
	}
	return 0;
}

/* An integer in [min, max]; an absent key gives dflt. */
static int
get_uint(struct dctx *c, const json_t *obj, const char *path, const char *key, uint64_t min,
	 uint64_t max, uint64_t dflt, uint64_t *out)
{
	json_t *v = json_object_get(obj, key);
	json_int_t x;

	*out = dflt; /* defined on every path: callers read it only on success */
	if (v == NULL)
		return 0;
	if (!json_is_integer(v))
		return json_util_field_fail(&c->js, path, key,
					    "expected an integer in [%" PRIu64 ", %" PRIu64 "]", min,
			     max);
	x = json_integer_value(v);
	if (x < 0 || (uint64_t)x < min || (uint64_t)x > max)
		return json_util_field_fail(&c->js, path, key,
					    "%lld is not in [%" PRIu64 ", %" PRIu64 "]",
			     (long long)x, min, max);
	*out = (uint64_t)x;
	return 0;
}

/* A finite number (integer or real) in [min, max]; an absent key leaves *out. */
static int
get_real(struct dctx *c, const json_t *obj, const char *path, const char *key, double min,
	 double max, double *out)
{
	json_t *v = json_object_get(obj, key);
	double x;

	if (v == NULL)
		return 0;
	if (!json_is_number(v))
		return json_util_field_fail(&c->js, path, key,
					    "expected a number in [%g, %g]", min, max);
	x = json_number_value(v);
	if (!isfinite(x) || x < min || x > max)
		return json_util_field_fail(&c->js, path, key,
					    "%g is not in [%g, %g]", x, min, max);
	*out = x;
	return 0;
}

/* A non-empty string without control characters. */
static int
get_str(struct dctx *c, const json_t *obj, const char *path, const char *key, const char **out)
{
	json_t *v = json_object_get(obj, key);
	const char *s;

	*out = NULL;
	if (!json_is_string(v))
		return json_util_field_fail(&c->js, path, key, "expected a string");
	s = json_string_value(v);
	if (s[0] == '\0' || strlen(s) != json_string_length(v))
		return json_util_field_fail(&c->js, path, key,
					    "expected a non-empty string without NUL bytes");
	for (const char *p = s; *p != '\0'; p++)
		if ((unsigned char)*p < 0x20)
			return json_util_field_fail(&c->js, path, key,
						    "control character in the string");
	*out = s;
	return 0;
}

static int
get_ipv4(struct dctx *c, const json_t *obj, const char *path, uint32_t *out)
{
	const char *s;
	int rc = get_str(c, obj, path, "ipv4", &s);

	*out = 0;
	if (rc != 0)
		return rc;
	if (table_ipv4_parse(s, out) != 0)
		return json_util_field_fail(&c->js, path, "ipv4",
					    "expected a dotted-quad IPv4 address, got '%.32s'", s);
	if (!table_ipv4_unicast(*out))
		return json_util_field_fail(&c->js, path, "ipv4", "%s is not a unicast address", s);
	return 0;
}

/* The topology node named by obj[key]. */
static int
get_node(struct dctx *c, const struct topo *t, const json_t *obj, const char *path,
	 const char *key, int *out)
{
	const char *s;
	int rc = get_str(c, obj, path, key, &s);

	if (rc != 0)
		return rc;
	*out = topo_node_index(t, s);
	if (*out < 0)
		return json_util_field_fail(&c->js, path, key,
					    "no topology node '%.*s'", TOPO_ID_MAX, s);
	return 0;
}

/* A path relative to the deployment's directory (absolute paths stay), at most max bytes. */
static int
resolve(struct dctx *c, const char *path, char *out, size_t max)
{
	int n;

	if (path[0] == '/' || c->base[0] == '\0')
		n = snprintf(out, max + 1, "%s", path);
	else
		n = snprintf(out, max + 1, "%s/%s", c->base, path);
	return n < 0 || (size_t)n > max ? -ENAMETOOLONG : 0;
}

/* ---- topology ------------------------------------------------------------------------ */

static int
parse_topology(struct dctx *c, const json_t *root, struct deploy *d)
{
	json_t *v = json_object_get(root, "topology");
	char terr[TOPO_ERR_MAX], *text;

	if (json_is_string(v)) {
		const char *p;
		int rc = get_str(c, root, "", "topology", &p);

		if (rc != 0)
			return rc;
		if (resolve(c, p, d->topology_src, DEPLOY_PATH_MAX) != 0)
			return json_util_field_fail(&c->js, "", "topology",
						    "path longer than %d bytes", DEPLOY_PATH_MAX);
		d->topo = topo_load(d->topology_src, terr, sizeof(terr));
	} else if (json_is_object(v)) {
		snprintf(d->topology_src, sizeof(d->topology_src), "inline");
		text = json_dumps(v, JSON_COMPACT);
		if (text == NULL)
			return json_util_field_fail(&c->js, "", "topology", "out of memory");
		d->topo = topo_parse(text, "inline topology", terr, sizeof(terr));
		free(text);
	} else {
		return json_util_field_fail(&c->js, "", "topology",
					    "expected a file name or a georeduce-topology/1 "
			     "object");
	}
	if (d->topo == NULL)
		return json_util_field_fail(&c->js, "", "topology", "%s", terr);
	return 0;
}

/* ---- gateways ------------------------------------------------------------------------ */

/* A name for a gateway: letters, digits, '-' and '.', not starting with either of the
 * last two (a DNS name, which a tls:// gateway's certificate carries). */
static bool
dns_name(const char *s)
{
	return s[0] != '\0' && s[0] != '-' && s[0] != '.' &&
	       strspn(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.-") ==
		       strlen(s);
}

/* gateways[i] of the file into d->gateways[i]: checked on its own and against the
 * gateways before it; names and shards are given once all are read. */
static int
parse_gateway(struct dctx *c, const json_t *g, const char *path, struct deploy *d, int i)
{
	static const char *const known[] = { "node", "id", "ipv4", "socket", "endpoint",
					     "base_port", "ports", "name" };
	const char *ekey;
	struct deploy_gateway *gw = &d->gateways[i];
	uint64_t id, base, ports;
	const char *sock, *name = NULL;
	int node, rc;

	rc = check_keys(c, g, path, known, N_OF(known), 3);
	ekey = json_object_get(g, "endpoint") != NULL ? "endpoint" : "socket";
	if (rc == 0 && json_object_get(g, "endpoint") != NULL &&
	    json_object_get(g, "socket") != NULL)
		rc = json_util_field_fail(&c->js, path, "endpoint", "give either an endpoint or "
					  "a socket");
	if (rc == 0 && json_object_get(g, ekey) == NULL)
		rc = json_util_field_fail(&c->js, path, "endpoint", "missing (tls://HOST:PORT or "
					  "a socket path)");
	if (rc == 0)
		rc = get_node(c, d->topo, g, path, "node", &node);
	if (rc != 0)
		return rc;
	gw->node = node;
	rc = get_uint(c, g, path, "id", 1, TABLE_ID_MAX, 0, &id);
	if (rc == 0)
		rc = get_ipv4(c, g, path, &gw->ipv4);
	if (rc == 0)
		rc = get_str(c, g, path, ekey, &sock);
	if (rc == 0)
		rc = get_uint(c, g, path, "base_port", 1, UINT16_MAX, WIRE_PORT_BASE_DEFAULT, &base);
	if (rc == 0)
		rc = get_uint(c, g, path, "ports", 1, TABLE_PORTS_MAX, WIRE_PORT_COUNT_DEFAULT,
			      &ports);
	if (rc == 0 && json_object_get(g, "name") != NULL) {
		rc = get_str(c, g, path, "name", &name);
		if (rc == 0 && (strlen(name) > DEPLOY_NAME_MAX || !dns_name(name)))
			rc = json_util_field_fail(&c->js, path, "name", "'%.*s' is not a name of at "
						  "most %d letters, digits, '-' and '.'",
						  DEPLOY_NAME_MAX, name, DEPLOY_NAME_MAX);
		if (rc == 0)
			snprintf(gw->name, sizeof(gw->name), "%s", name);
	}
	if (rc != 0)
		return rc;
	if (base + ports - 1 > UINT16_MAX)
		return json_util_field_fail(&c->js, path, "ports",
					    "base_port %" PRIu64 " + %" PRIu64 " ports passes "
			     "65535", base, ports);
	if (ctltls_is_endpoint(sock)) {
		char host[CTLTLS_HOST_MAX + 1], why[256];
		unsigned int port;

		if (ctltls_split(sock, host, &port, why, sizeof(why)) != 0)
			return json_util_field_fail(&c->js, path, ekey, "%s", why);
		snprintf(gw->socket, sizeof(gw->socket), "%s", sock);
	} else if (resolve(c, sock, gw->socket, DEPLOY_SOCKET_MAX) != 0) {
		return json_util_field_fail(&c->js, path, ekey,
					    "longer than %d bytes (a unix socket path)",
			     DEPLOY_SOCKET_MAX);
	}
	for (int k = 0; k < i; k++) {
		const struct deploy_gateway *o = &d->gateways[k];
		char ip[16];

		if (o->id == id)
			return json_util_field_fail(&c->js, path, "id",
						    "%" PRIu64 " is also the gateway of node '%s'",
				     id, d->topo->nodes[o->node].id);
		if (o->ipv4 == gw->ipv4)
			return json_util_field_fail(&c->js, path, "ipv4",
						    "%s is also the gateway of node '%s'",
				     table_ipv4_format(gw->ipv4, ip), d->topo->nodes[o->node].id);
		if (strcmp(o->socket, gw->socket) == 0)
			return json_util_field_fail(&c->js, path, ekey,
						    "also the endpoint of node '%s'",
				     d->topo->nodes[o->node].id);
		if (name != NULL && strcmp(o->name, name) == 0)
			return json_util_field_fail(&c->js, path, "name",
						    "'%s' is also the name of gateways[%d]", name, k);
	}
	gw->id = (uint16_t)id;
	gw->base_port = (uint16_t)base;
	gw->ports = (uint16_t)ports;
	return 0;
}

static int
cmp_gw_node(const void *a, const void *b)
{
	const struct deploy_gateway *x = a, *y = b;

	/* shard holds the file position until the gateways are ordered. */
	if (x->node != y->node)
		return (x->node > y->node) - (x->node < y->node);
	return (x->shard > y->shard) - (x->shard < y->shard);
}

static int
parse_gateways(struct dctx *c, const json_t *root, struct deploy *d)
{
	const json_t *arr = json_object_get(root, "gateways");
	size_t n = json_is_array(arr) ? json_array_size(arr) : 0;
	int rc, nn = d->topo->n_nodes;

	d->gateways = calloc(n > 0 ? n : 1, sizeof(*d->gateways));
	d->node_gw = calloc((size_t)nn, sizeof(*d->node_gw));
	d->node_ngw = calloc((size_t)nn, sizeof(*d->node_ngw));
	if (d->gateways == NULL || d->node_gw == NULL || d->node_ngw == NULL)
		return json_util_field_fail(&c->js, "", "gateways", "out of memory");
	rc = each_item(c, root, "gateways", DEPLOY_GATEWAYS_MAX, false, d, parse_gateway);
	if (rc != 0)
		return rc;
	d->n_gateways = (int)n;
	for (int i = 0; i < d->n_gateways; i++) {
		struct deploy_gateway *gw = &d->gateways[i];

		if (++d->node_ngw[gw->node] > DEPLOY_SITE_GATEWAYS_MAX)
			return json_util_field_fail(&c->js, "", "gateways", "node '%s' has more "
						    "than %d gateways", d->topo->nodes[gw->node].id,
						    DEPLOY_SITE_GATEWAYS_MAX);
		gw->shard = i;
	}
	for (int v = 0; v < nn; v++)
		if (d->node_ngw[v] == 0)
			return json_util_field_fail(&c->js, "", "gateways",
						    "topology node '%s' has no gateway",
						    d->topo->nodes[v].id);
	/* By node, in file order within a node (a stable order: shard is the position). */
	qsort(d->gateways, n, sizeof(*d->gateways), cmp_gw_node);
	for (int i = 0, v = -1, k = 0; i < d->n_gateways; i++) {
		struct deploy_gateway *gw = &d->gateways[i];
		const char *id = d->topo->nodes[gw->node].id;

		if (gw->node != v) {
			v = gw->node;
			k = 0;
			d->node_gw[v] = i;
		}
		gw->shard = k++;
		if (gw->name[0] == '\0' && d->node_ngw[v] == 1)
			snprintf(gw->name, sizeof(gw->name), "%s", id);
		else if (gw->name[0] == '\0' &&
			 snprintf(gw->name, sizeof(gw->name), "%s-%d", id, gw->shard + 1) >=
				 (int)sizeof(gw->name))
			return json_util_field_fail(&c->js, "", "gateways",
						    "site '%s' has a name too long to number its "
						    "gateways: give each a \"name\"", id);
	}
	/* Names are unique, and a gateway is named after no node but its own. */
	for (int i = 0; i < d->n_gateways; i++) {
		const struct deploy_gateway *gw = &d->gateways[i];
		int v = topo_node_index(d->topo, gw->name);

		for (int k = 0; k < i; k++)
			if (strcmp(d->gateways[k].name, gw->name) == 0)
				return json_util_field_fail(&c->js, "", "gateways", "two gateways "
							    "are named '%s'", gw->name);
		/* The site's own name is its workers' table (jobplan_write()) when it has
		 * several gateways. */
		if (v >= 0 && (v != gw->node || d->node_ngw[v] > 1))
			return json_util_field_fail(&c->js, "", "gateways", "a gateway of node "
						    "'%s' is named '%s', %s",
						    d->topo->nodes[gw->node].id, gw->name,
						    v != gw->node ? "another node"
								  : "its site of several gateways");
	}
	return 0;
}

/* ---- jobs ---------------------------------------------------------------------------- */

static int
parse_options(struct dctx *c, const json_t *job, const char *jpath, struct deploy_job *j)
{
	static const char *const mtree_keys[] = { "max_trees", "max_height_ms",
						  "min_rate_gbps", "rho", "paper" };
	static const char *const ring_keys[] = { "search_seconds" };
	static const char *const crew_keys[] = { "min_workers" };
	static const char *const selmcast_keys[] = { "p", "model" };
	static const char *const bc_keys[] = { "max_trees" };
	json_t *o = json_object_get(job, "options");
	char path[FIELD_MAX + 32];
	uint64_t k = 0;
	int rc;

	if (o == NULL)
		return 0;
	snprintf(path, sizeof(path), "%s.options", jpath);
	switch (j->algo) {
	case DEPLOY_ALGO_MTREE:
		rc = check_keys(c, o, path, mtree_keys, N_OF(mtree_keys), 0);
		if (rc == 0)
			rc = get_uint(c, o, path, "max_trees", 0, PLAN_TREES_MAX,
				      DEPLOY_DEFAULT_MAX_TREES, &k);
		if (rc == 0)
			rc = get_real(c, o, path, "max_height_ms", 0, 1e6, &j->max_height_ms);
		if (rc == 0)
			rc = get_real(c, o, path, "min_rate_gbps", 0, 1e6, &j->min_rate_gbps);
		if (rc == 0)
			rc = get_real(c, o, path, "rho", 0, 1, &j->rho);
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
		rc = check_keys(c, o, path, bc_keys, N_OF(bc_keys), 0);
		if (rc == 0)
			rc = get_uint(c, o, path, "max_trees", 0, PLAN_TREES_MAX,
				      DEPLOY_DEFAULT_MAX_TREES, &k);
		j->max_trees = (int)k;
		return rc;
	case DEPLOY_ALGO_RING:
		rc = check_keys(c, o, path, ring_keys, N_OF(ring_keys), 0);
		if (rc == 0)
			rc = get_real(c, o, path, "search_seconds", 0.001, 60, &j->ring_seconds);
		return rc;
	case DEPLOY_ALGO_CREW: /* checked against the workers once they are read */
		rc = check_keys(c, o, path, crew_keys, N_OF(crew_keys), 0);
		if (rc == 0)
			rc = get_uint(c, o, path, "min_workers", 1, TABLE_ID_MAX, 0, &k);
		j->min_workers = (uint32_t)k;
		return rc;
	case DEPLOY_ALGO_SELMCAST: /* p is checked against the worker sites when planned */
		rc = check_keys(c, o, path, selmcast_keys, N_OF(selmcast_keys), 0);
		if (rc == 0)
			rc = get_uint(c, o, path, "p", 1, TOPO_NODES_MAX, 0, &k);
		if (rc != 0)
			return rc;
		j->mcast_p = (int)k;
		if (json_object_get(o, "model") != NULL) {
			const char *m = json_string_value(json_object_get(o, "model"));

			if (m == NULL || (strcmp(m, "network") != 0 && strcmp(m, "application") != 0))
				return json_util_field_fail(&c->js, path, "model",
							    "expected \"network\" or "
							    "\"application\"");
			j->mcast_application = strcmp(m, "application") == 0;
		}
		return 0;
	default:
		if (json_object_size(o) != 0)
			return json_util_field_fail(&c->js, path, json_object_iter_key(json_object_iter(o)),
						    
				     "algorithm '%s' takes no options", deploy_algo_name(j->algo));
		return check_keys(c, o, path, NULL, 0, 0);
	}
}

static int
parse_worker(struct dctx *c, const json_t *w, const char *path, const struct deploy *d,
	     struct deploy_job *j, int k)
{
	static const char *const known[] = { "node", "id", "ipv4", "port" };
	struct deploy_worker *dw = &j->workers[k];
	uint64_t id, port;
	int rc;

	rc = check_keys(c, w, path, known, N_OF(known), N_OF(known));
	if (rc == 0)
		rc = get_node(c, d->topo, w, path, "node", &dw->node);
	if (rc == 0)
		rc = get_uint(c, w, path, "id", 1, TABLE_ID_MAX, 0, &id);
	if (rc == 0)
		rc = get_ipv4(c, w, path, &dw->w.ipv4);
	if (rc == 0)
		rc = get_uint(c, w, path, "port", 1, UINT16_MAX, 0, &port);
	if (rc != 0)
		return rc;
	dw->w.id = (uint16_t)id;
	dw->w.port = (uint16_t)port;
	for (int g = 0; g < d->n_gateways; g++)
		if (d->gateways[g].id == id)
			return json_util_field_fail(&c->js, path, "id",
						    "%" PRIu64 " is the gateway id of node '%s' "
				     "(workers and gateways share one id space)", id,
				     d->topo->nodes[d->gateways[g].node].id);
	for (int i = 0; i < k; i++)
		if (j->workers[i].w.id == id)
			return json_util_field_fail(&c->js, path, "id",
						    "%" PRIu64 " is also the id of workers[%d]", id,
				     i);
	if (deploy_job_workers_at(j, dw->node) > TABLE_WORKERS_MAX)
		return json_util_field_fail(&c->js, path, "node",
					    "more than %d workers at node '%s'",
			     TABLE_WORKERS_MAX, d->topo->nodes[dw->node].id);
	return 0;
}

static int
parse_slots(struct dctx *c, const json_t *job, const char *jpath, struct deploy_job *j)
{
	static const char *const known[] = { "min", "max" };
	json_t *o = json_object_get(job, "slots");
	char path[FIELD_MAX + 32];
	uint64_t lo, hi;
	int rc;

	if (o == NULL)
		return 0;
	snprintf(path, sizeof(path), "%s.slots", jpath);
	rc = check_keys(c, o, path, known, N_OF(known), 0);
	if (rc == 0)
		rc = get_uint(c, o, path, "min", 1, TABLE_SLOTS_MAX, 0, &lo);
	if (rc == 0)
		rc = get_uint(c, o, path, "max", 1, TABLE_SLOTS_MAX, 0, &hi);
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
	uint64_t v;
	int rc;

	j->lan_dtype = 0;
	j->lan_mtu = j->mtu;
	if (json_object_get(job, "lan_dtype") == NULL) {
		if (json_object_get(job, "lan_mtu") != NULL)
			return json_util_field_fail(&c->js, path, "lan_mtu",
						    "only with a lan_dtype");
		return 0;
	}
	rc = get_str(c, job, path, "lan_dtype", &lan);
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
					    "its workers' hop wider", lan,
					    table_dtype_name(j->dtype));
	}
	rc = get_uint(c, job, path, "lan_mtu", WIRE_MTU_MIN, WIRE_MTU_MAX, j->mtu, &v);
	if (rc != 0)
		return rc;
	j->lan_mtu = (uint32_t)v;
	return 0;
}

static int
parse_tensor(struct dctx *c, const json_t *job, const char *path, struct deploy_job *j)
{
	const char *dt;
	uint64_t v;
	size_t esz;
	unsigned int gran;
	int rc, e;

	rc = get_str(c, job, path, "dtype", &dt);
	if (rc != 0)
		return rc;
	j->dtype = table_dtype_from_name(dt);
	if (j->dtype == 0)
		return json_util_field_fail(&c->js, path, "dtype",
					    "expected \"fp32\", \"fp16\", \"bf16\", \"mxint8\", "
					    "\"mxfp8\" or \"mxfp4\", got '%.16s'", dt);
	/* The unit of a chunk: an element, or an MX block of 32 with its scale. */
	esz = table_dtype_unit_bytes(j->dtype);
	gran = table_dtype_granule(j->dtype);
	rc = get_uint(c, job, path, "elements", 1, UINT64_MAX >> 12, 0, &j->elements);
	if (rc == 0)
		rc = get_uint(c, job, path, "mtu", WIRE_MTU_MIN, WIRE_MTU_MAX, DEPLOY_DEFAULT_MTU,
			      &v);
	if (rc != 0)
		return rc;
	j->mtu = (uint32_t)v;
	rc = parse_lan(c, job, path, j);
	if (rc != 0)
		return rc;
	/* With protected links a chunk leaves room for sealing (docs/PROTOCOL.md 14.2). */
	e = wire_chunk_elems_default(j->mtu - c->seal_room, (enum wire_dtype)j->dtype,
				     j->cset_blocks);
	if (e <= 0)
		return json_util_field_fail(&c->js, path, "mtu",
					    "no chunk fits an MTU of %u", j->mtu);
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
	rc = get_uint(c, job, path, "chunk_bytes", esz, TABLE_CHUNK_BYTES_MAX,
		      (uint64_t)e / gran * esz, &v);
	if (rc != 0)
		return rc;
	if (v % esz != 0)
		return json_util_field_fail(&c->js, path, "chunk_bytes",
					    "%" PRIu64 " is not a multiple of the %s "
			     "%s size %zu", v, dt, gran > 1 ? "block" : "element", esz);
	v += (uint64_t)j->cset_blocks * WIRE_CSET_BLOCK; /* the set travels with the chunk */
	if (v + WIRE_MTU_OVERHEAD + c->seal_room > j->mtu)
		return json_util_field_fail(&c->js, path, "chunk_bytes",
					    "%" PRIu64 " bytes%s need an MTU of %" PRIu64
			     ", the job's mtu is %u", v,
			     j->cset_blocks != 0 ? " (with the contributor set)" : "",
			     v + WIRE_MTU_OVERHEAD + c->seal_room, j->mtu);
	if (j->lan_dtype != 0) {
		uint64_t lan = (v - (uint64_t)j->cset_blocks * WIRE_CSET_BLOCK) / esz * gran *
			       table_dtype_size(j->lan_dtype);

		if (lan > TABLE_CHUNK_BYTES_MAX ||
		    lan + (uint64_t)j->cset_blocks * WIRE_CSET_BLOCK + WIRE_MTU_OVERHEAD > j->lan_mtu)
			return json_util_field_fail(&c->js, path, "chunk_bytes",
						    "%" PRIu64 " bytes of %s make %" PRIu64 " bytes "
						    "of the lan_dtype %s: more than %d, or than the "
						    "lan_mtu %u holds", v - (uint64_t)j->cset_blocks *
						    WIRE_CSET_BLOCK, dt, lan,
						    table_dtype_name(j->lan_dtype),
						    TABLE_CHUNK_BYTES_MAX, j->lan_mtu);
	}
	v -= (uint64_t)j->cset_blocks * WIRE_CSET_BLOCK;
	j->chunk_bytes = (uint32_t)v;
	if (j->elements % gran != 0)
		return json_util_field_fail(&c->js, path, "elements",
					    "%" PRIu64 " is not a whole number of %s blocks of %u "
					    "elements", j->elements, dt, gran);
	if ((j->elements + v / esz * gran - 1) / (v / esz * gran) > UINT32_MAX)
		return json_util_field_fail(&c->js, path, "elements",
					    "more than 2^32-1 chunks of %" PRIu64 " bytes",
			     v);
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
					    "whose ids are below %u", top,
					    WIRE_CSET_BLOCKS_MAX * WIRE_CSET_BLOCK_IDS);
	}
	j->cset_blocks = (uint8_t)(top / WIRE_CSET_BLOCK_IDS + 1);
	if (j->min_workers > (uint32_t)j->n_workers) {
		snprintf(wpath, sizeof(wpath), "%s.options", path);
		return json_util_field_fail(&c->js, wpath, "min_workers",
					    "%u is more than the job's %d workers",
					    j->min_workers, j->n_workers);
	}
	return 0;
}

static int
parse_job(struct dctx *c, const json_t *job, const char *path, struct deploy *d, int ji)
{
	static const char *const known[] = { "id", "algorithm", "dtype", "elements", "workers",
					     "options", "mtu", "chunk_bytes", "slots", "lan_dtype",
					     "lan_mtu" };
	struct deploy_job *j = &d->jobs[ji];
	char wpath[FIELD_MAX + 32];
	const char *algo;
	json_t *ws;
	uint64_t id;
	int rc;

	d->n_jobs = ji + 1;
	rc = check_keys(c, job, path, known, N_OF(known), 5);
	if (rc == 0)
		rc = get_uint(c, job, path, "id", 0, UINT32_MAX, 0, &id);
	if (rc != 0)
		return rc;
	j->id = (uint32_t)id;
	for (int i = 0; i < ji; i++)
		if (d->jobs[i].id == j->id)
			return json_util_field_fail(&c->js, path, "id",
						    "%u is also the id of jobs[%d]", j->id, i);
	rc = get_str(c, job, path, "algorithm", &algo);
	if (rc != 0)
		return rc;
	for (int a = DEPLOY_ALGO_MTREE; a <= DEPLOY_ALGO_BLUECONNECT; a++)
		if (strcmp(algo, deploy_algo_name((enum deploy_algo)a)) == 0)
			j->algo = (enum deploy_algo)a;
	if (j->algo == 0)
		return json_util_field_fail(&c->js, path, "algorithm",
					    "expected \"mtree\", \"ring\", "
			     "\"single-tree\", \"crew\", \"selmcast\" or \"blueconnect\", got "
			     "'%.32s'", algo);
	j->max_trees = DEPLOY_DEFAULT_MAX_TREES;
	j->ring_seconds = DEPLOY_DEFAULT_RING_SECONDS;
	rc = parse_options(c, job, path, j);
	if (rc == 0)
		rc = parse_slots(c, job, path, j);
	if (rc != 0)
		return rc;
	ws = json_object_get(job, "workers");
	if (!json_is_array(ws) || json_array_size(ws) == 0)
		return json_util_field_fail(&c->js, path, "workers", "expected a non-empty array");
	if (json_array_size(ws) > TABLE_ID_MAX)
		return json_util_field_fail(&c->js, path, "workers",
					    "more than %d workers", TABLE_ID_MAX);
	j->workers = calloc(json_array_size(ws), sizeof(*j->workers));
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
					    "or bf16, not %s", table_dtype_name(j->dtype));
	return rc;
}

/*
 * "protected": {"links": "all" | [["A", "B"], ...], "aead": "aes-128-gcm"}: the gateway
 * links whose frames are sealed (docs/DEPLOYMENT.md). Optional; absent: none.
 */
static int
parse_protected(struct dctx *c, const json_t *root, struct deploy *d)
{
	static const char *const known[] = { "links", "aead" };
	const json_t *pr = json_object_get(root, "protected"), *links, *aead;
	const struct topo *t = d->topo;
	int rc;

	if (pr == NULL)
		return 0;
	rc = check_keys(c, pr, "protected", known, N_OF(known), 1);
	if (rc != 0)
		return rc;
	d->seal_aead = TABLE_AEAD_AES128_GCM;
	aead = json_object_get(pr, "aead");
	if (aead != NULL) {
		d->seal_aead = json_is_string(aead) ? table_aead_from_name(json_string_value(aead))
						    : 0;
		if (d->seal_aead == 0)
			return json_util_field_fail(&c->js, "protected", "aead", "expected "
						    "\"aes-128-gcm\" or \"aes-256-gcm\"");
	}
	c->seal_room = WIRE_SEAL_OVERHEAD;
	d->sealed_links = calloc(t->n_links > 0 ? (size_t)t->n_links : 1, sizeof(bool));
	if (d->sealed_links == NULL)
		return json_util_field_fail(&c->js, "", "protected", "out of memory");
	links = json_object_get(pr, "links");
	if (json_is_string(links) && strcmp(json_string_value(links), "all") == 0) {
		for (int l = 0; l < t->n_links; l++)
			d->sealed_links[l] = true;
		return 0;
	}
	if (!json_is_array(links) || json_array_size(links) == 0)
		return json_util_field_fail(&c->js, "protected", "links", "expected \"all\" or "
					    "a nonempty array of [node, node] pairs");
	for (size_t i = 0; i < json_array_size(links); i++) {
		const json_t *pair = json_array_get(links, i);
		char path[FIELD_MAX];
		int u, v, l;

		snprintf(path, sizeof(path), "protected.links[%zu]", i);
		if (!json_is_array(pair) || json_array_size(pair) != 2 ||
		    !json_is_string(json_array_get(pair, 0)) ||
		    !json_is_string(json_array_get(pair, 1)))
			return json_util_field_fail(&c->js, path, "", "expected two node ids");
		u = topo_node_index(t, json_string_value(json_array_get(pair, 0)));
		v = topo_node_index(t, json_string_value(json_array_get(pair, 1)));
		l = u < 0 || v < 0 ? -1 : topo_link_between(t, u, v);
		if (l < 0)
			return json_util_field_fail(&c->js, path, "", "no topology link between "
						    "'%.*s' and '%.*s'", TOPO_ID_MAX,
						    json_string_value(json_array_get(pair, 0)),
						    TOPO_ID_MAX,
						    json_string_value(json_array_get(pair, 1)));
		d->sealed_links[l] = true;
	}
	return 0;
}

static int
parse_jobs(struct dctx *c, const json_t *root, struct deploy *d)
{
	size_t n = json_array_size(json_object_get(root, "jobs"));

	d->jobs = calloc(n > 0 ? n : 1, sizeof(*d->jobs));
	if (d->jobs == NULL)
		return json_util_field_fail(&c->js, "", "jobs", "out of memory");
	return each_item(c, root, "jobs", DEPLOY_JOBS_MAX, true, d, parse_job);
}

/* ---- the control process's TLS ------------------------------------------------------ */

/* "tls": {"ca", "cert", "key", "listen"?}: files resolved like the topology's. */
static int
parse_tls(struct dctx *c, const json_t *root, struct deploy *d)
{
	static const char *const known[] = { "ca", "cert", "key", "listen" };
	char *const outs[] = { d->tls.ca, d->tls.cert, d->tls.key };
	const json_t *t = json_object_get(root, "tls");
	const char *v;
	int rc;

	for (int g = 0; g < d->n_gateways; g++) {
		const char *id = d->gateways[g].name;

		if (!ctltls_is_endpoint(d->gateways[g].socket))
			continue;
		if (t == NULL)
			return json_util_field_fail(&c->js, "", "tls", "missing: gateway '%s' has a "
						    "tls:// endpoint", id);
		/* Its certificate names it: the name (by default the node id) must be a DNS
		 * name. */
		if (!dns_name(id))
			return json_util_field_fail(&c->js, "", "tls", "gateway '%s' has a tls:// "
						    "endpoint, so its node id must be a DNS name "
						    "(letters, digits, '-', '.')", id);
	}
	if (t == NULL)
		return 0;
	rc = check_keys(c, t, "tls", known, N_OF(known), 3);
	for (size_t k = 0; rc == 0 && k < 3; k++) {
		rc = get_str(c, t, "tls", known[k], &v);
		if (rc == 0 && resolve(c, v, outs[k], DEPLOY_PATH_MAX) != 0)
			rc = json_util_field_fail(&c->js, "tls", known[k], "path longer than %d "
						  "bytes", DEPLOY_PATH_MAX);
	}
	if (rc == 0 && json_object_get(t, "listen") != NULL) {
		char host[CTLTLS_HOST_MAX + 1], why[256];
		unsigned int port;

		rc = get_str(c, t, "tls", "listen", &v);
		if (rc == 0 && ctltls_split(v, host, &port, why, sizeof(why)) != 0)
			rc = json_util_field_fail(&c->js, "tls", "listen", "%s", why);
		if (rc == 0)
			snprintf(d->tls.listen, sizeof(d->tls.listen), "%s",
				 ctltls_is_endpoint(v) ? v + strlen(CTLTLS_SCHEME) : v);
	}
	d->tls.on = rc == 0;
	return rc;
}

/* ---- entry points -------------------------------------------------------------------- */

struct deploy *
deploy_parse(const char *text, const char *src, char *err, size_t errlen)
{
	static const char *const known[] = { "format", "topology", "gateways", "jobs", "name",
					     "tls", "protected" };
	struct dctx c = { .js = { .src = src != NULL ? src : "<string>", .err = err,
				  .errlen = errlen } };
	struct deploy *d = NULL;
	json_error_t jerr;
	const char *fmt;
	json_t *root;
	int rc;

	root = json_loads(text, JSON_REJECT_DUPLICATES, &jerr);
	if (root == NULL) {
		json_util_fail(err, errlen, "%s:%d:%d: invalid JSON: %s", c.js.src, jerr.line,
			       jerr.column, jerr.text);
		errno = EINVAL;
		return NULL;
	}
	if (src != NULL && strrchr(src, '/') != NULL) {
		size_t n = (size_t)(strrchr(src, '/') - src);

		if (n >= sizeof(c.base)) {
			rc = json_util_fail(err, errlen, "%s: path too long", c.js.src);
			goto out;
		}
		memcpy(c.base, src, n);
		c.base[n == 0 ? 1 : n] = '\0';
		if (n == 0)
			c.base[0] = '/';
	}
	if (!json_is_object(root)) {
		rc = json_util_fail(err, errlen, "%s: the document is not a JSON object", c.js.src);
		goto out;
	}
	/* The version first: a document of another version fails on its version. */
	rc = get_str(&c, root, "", "format", &fmt);
	if (rc == 0 && strcmp(fmt, DEPLOY_FORMAT) != 0)
		rc = json_util_field_fail(&c.js, "", "format",
					  "expected \"%s\", got '%.40s'", DEPLOY_FORMAT, fmt);
	if (rc == 0)
		rc = check_keys(&c, root, "", known, N_OF(known), 4);
	if (rc == 0 && json_object_get(root, "name") != NULL)
		rc = get_str(&c, root, "", "name", &fmt);
	if (rc != 0)
		goto out;
	d = calloc(1, sizeof(*d));
	if (d == NULL) {
		rc = json_util_fail(err, errlen, "%s: out of memory", c.js.src);
		errno = ENOMEM;
		goto out;
	}
	snprintf(d->path, sizeof(d->path), "%s", c.js.src);
	rc = parse_topology(&c, root, d);
	if (rc == 0)
		rc = parse_gateways(&c, root, d);
	if (rc == 0)
		rc = parse_tls(&c, root, d);
	if (rc == 0)
		rc = parse_protected(&c, root, d);
	if (rc == 0)
		rc = parse_jobs(&c, root, d);
out:
	json_decref(root);
	if (rc != 0) {
		deploy_free(d);
		if (errno != ENOMEM)
			errno = EINVAL;
		return NULL;
	}
	return d;
}

struct deploy *
deploy_load(const char *path, char *err, size_t errlen)
{
	char *text = json_util_read_file(path, err, errlen);
	struct deploy *d;

	if (text == NULL)
		return NULL;
	d = deploy_parse(text, path, err, errlen);
	free(text);
	return d;
}

void
deploy_free(struct deploy *d)
{
	if (d == NULL)
		return;
	for (int i = 0; i < d->n_jobs; i++)
		free(d->jobs[i].workers);
	free(d->jobs);
	free(d->gateways);
	free(d->sealed_links);
	free(d->node_gw);
	free(d->node_ngw);
	topo_free(d->topo);
	free(d);
}

const char *
deploy_algo_name(enum deploy_algo a)
{
	switch (a) {
	case DEPLOY_ALGO_MTREE: return "mtree";
	case DEPLOY_ALGO_RING: return "ring";
	case DEPLOY_ALGO_SINGLE_TREE: return "single-tree";
	case DEPLOY_ALGO_CREW: return "crew";
	case DEPLOY_ALGO_SELMCAST: return "selmcast";
	case DEPLOY_ALGO_BLUECONNECT: return "blueconnect";
	}
	return NULL;
}

int
deploy_job_workers_at(const struct deploy_job *j, int v)
{
	int n = 0;

	for (int i = 0; i < j->n_workers; i++)
		n += j->workers[i].node == v;
	return n;
}
