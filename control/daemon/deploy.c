/* SPDX-License-Identifier: BSD-3-Clause
 *
 * The `georeduce-deployment/1` parser (docs/DEPLOYMENT.md): strict, one-line errors that
 * name the field. This file reads the document, its topology, gateways, TLS and protected
 * links; the jobs are read in deploy_job.c, every field through deploy_field.c.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "ctltls.h"
#include "deploy.h"
#include "deploy_field.h"
#include "deploy_job.h"
#include "deploy_tenant.h"
#include "jsonutil.h"
#include "revision.h"
#include "wire.h"

/* ---- topology ------------------------------------------------------------------------ */

static int
parse_topology(struct dctx *c, const json_t *root, struct deploy *d)
{
	json_t *v = json_object_get(root, "topology");
	char terr[TOPO_ERR_MAX], *text;

	if (json_is_string(v)) {
		const char *p;
		int rc = dctx_get_str(c, root, "", "topology", &p);

		if (rc != 0)
			return rc;
		if (dctx_resolve(c, p, d->topology_src, DEPLOY_PATH_MAX) != 0)
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

/* gateways[i] of the file into d->gateways[i]: checked on its own and against the
 * gateways before it; names and shards are given once all are read. */
static int
parse_gateway(struct dctx *c, const json_t *g, const char *path, struct deploy *d, int i)
{
	static const char *const known[] = {"node",     "id",        "ipv4",  "socket",
					    "endpoint", "base_port", "ports", "name"};
	const char *ekey;
	struct deploy_gateway *gw = &d->gateways[i];
	uint64_t id, base, ports;
	const char *sock, *name = NULL;
	int node, rc;

	rc = dctx_check_keys(c, g, path, known, N_OF(known), 3);
	ekey = json_object_get(g, "endpoint") != NULL ? "endpoint" : "socket";
	if (rc == 0 && json_object_get(g, "endpoint") != NULL &&
	    json_object_get(g, "socket") != NULL)
		rc = json_util_field_fail(&c->js, path, "endpoint",
					  "give either an endpoint or "
					  "a socket");
	if (rc == 0 && json_object_get(g, ekey) == NULL)
		rc = json_util_field_fail(&c->js, path, "endpoint",
					  "missing (tls://HOST:PORT or "
					  "a socket path)");
	if (rc == 0)
		rc = dctx_get_node(c, d->topo, g, path, "node", &node);
	if (rc != 0)
		return rc;
	gw->node = node;
	rc = dctx_get_uint(c, g, path, "id", 1, TABLE_ID_MAX, 0, &id);
	if (rc == 0)
		rc = dctx_get_ipv4(c, g, path, &gw->ipv4);
	if (rc == 0)
		rc = dctx_get_str(c, g, path, ekey, &sock);
	if (rc == 0)
		rc = dctx_get_uint(c, g, path, "base_port", 1, UINT16_MAX, WIRE_PORT_BASE_DEFAULT,
				   &base);
	if (rc == 0)
		rc = dctx_get_uint(c, g, path, "ports", 1, TABLE_PORTS_MAX, WIRE_PORT_COUNT_DEFAULT,
				   &ports);
	if (rc == 0 && json_object_get(g, "name") != NULL) {
		rc = dctx_get_str(c, g, path, "name", &name);
		if (rc == 0 && (strlen(name) > DEPLOY_NAME_MAX || !deploy_dns_name(name)))
			rc = json_util_field_fail(&c->js, path, "name",
						  "'%.*s' is not a name of at "
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
					    "65535",
					    base, ports);
	if (ctltls_is_endpoint(sock)) {
		char host[CTLTLS_HOST_MAX + 1], why[256];
		unsigned int port;

		if (ctltls_split(sock, host, &port, why, sizeof(why)) != 0)
			return json_util_field_fail(&c->js, path, ekey, "%s", why);
		snprintf(gw->socket, sizeof(gw->socket), "%s", sock);
	} else if (dctx_resolve(c, sock, gw->socket, DEPLOY_SOCKET_MAX) != 0) {
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
			return json_util_field_fail(
				&c->js, path, "ipv4", "%s is also the gateway of node '%s'",
				table_ipv4_format(gw->ipv4, ip), d->topo->nodes[o->node].id);
		if (strcmp(o->socket, gw->socket) == 0)
			return json_util_field_fail(&c->js, path, ekey,
						    "also the endpoint of node '%s'",
						    d->topo->nodes[o->node].id);
		if (name != NULL && strcmp(o->name, name) == 0)
			return json_util_field_fail(&c->js, path, "name",
						    "'%s' is also the name of gateways[%d]", name,
						    k);
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
	rc = dctx_each_item(c, root, "gateways", DEPLOY_GATEWAYS_MAX, false, d, parse_gateway);
	if (rc != 0)
		return rc;
	d->n_gateways = (int)n;
	for (int i = 0; i < d->n_gateways; i++) {
		struct deploy_gateway *gw = &d->gateways[i];

		if (++d->node_ngw[gw->node] > DEPLOY_SITE_GATEWAYS_MAX)
			return json_util_field_fail(&c->js, "", "gateways",
						    "node '%s' has more "
						    "than %d gateways",
						    d->topo->nodes[gw->node].id,
						    DEPLOY_SITE_GATEWAYS_MAX);
		gw->shard = i;
		gw->revision = GEOREDUCE_REVISION;
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
		else if (gw->name[0] == '\0' && snprintf(gw->name, sizeof(gw->name), "%s-%d", id,
							 gw->shard + 1) >= (int)sizeof(gw->name))
			return json_util_field_fail(&c->js, "", "gateways",
						    "site '%s' has a name too long to number its "
						    "gateways: give each a \"name\"",
						    id);
	}
	/* Names are unique, and a gateway is named after no node but its own. */
	for (int i = 0; i < d->n_gateways; i++) {
		const struct deploy_gateway *gw = &d->gateways[i];
		int v = topo_node_index(d->topo, gw->name);

		for (int k = 0; k < i; k++)
			if (strcmp(d->gateways[k].name, gw->name) == 0)
				return json_util_field_fail(&c->js, "", "gateways",
							    "two gateways "
							    "are named '%s'",
							    gw->name);
		/* The site's own name is its workers' table (jobplan_write()) when it has
		 * several gateways. */
		if (v >= 0 && (v != gw->node || d->node_ngw[v] > 1))
			return json_util_field_fail(&c->js, "", "gateways",
						    "a gateway of node "
						    "'%s' is named '%s', %s",
						    d->topo->nodes[gw->node].id, gw->name,
						    v != gw->node ? "another node" :
								    "its site of several gateways");
	}
	return 0;
}

/* ---- protected links ----------------------------------------------------------------- */

/*
 * "protected": {"links": "all" | [["A", "B"], ...], "aead": "aes-128-gcm"}: the gateway
 * links whose frames are sealed (docs/DEPLOYMENT.md). Optional; absent: none.
 */
static int
parse_protected(struct dctx *c, const json_t *root, struct deploy *d)
{
	static const char *const known[] = {"links", "aead"};
	const json_t *pr = json_object_get(root, "protected"), *links, *aead;
	const struct topo *t = d->topo;
	int rc;

	if (pr == NULL)
		return 0;
	rc = dctx_check_keys(c, pr, "protected", known, N_OF(known), 1);
	if (rc != 0)
		return rc;
	d->seal_aead = TABLE_AEAD_AES128_GCM;
	aead = json_object_get(pr, "aead");
	if (aead != NULL) {
		d->seal_aead =
			json_is_string(aead) ? table_aead_from_name(json_string_value(aead)) : 0;
		if (d->seal_aead == 0)
			return json_util_field_fail(&c->js, "protected", "aead",
						    "expected "
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
		return json_util_field_fail(&c->js, "protected", "links",
					    "expected \"all\" or "
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
			return json_util_field_fail(
				&c->js, path, "",
				"no topology link between "
				"'%.*s' and '%.*s'",
				TOPO_ID_MAX, json_string_value(json_array_get(pair, 0)),
				TOPO_ID_MAX, json_string_value(json_array_get(pair, 1)));
		d->sealed_links[l] = true;
	}
	return 0;
}

/* ---- the control process's TLS ------------------------------------------------------ */

/* "tls": {"ca", "cert", "key", "crl"?, "listen"?}: files resolved like the topology's. */
static int
parse_tls(struct dctx *c, const json_t *root, struct deploy *d)
{
	static const char *const known[] = {"ca", "cert", "key", "listen", "crl"};
	char *const outs[] = {d->tls.ca, d->tls.cert, d->tls.key};
	const json_t *t = json_object_get(root, "tls");
	const char *v;
	int rc;

	for (int g = 0; g < d->n_gateways; g++) {
		const char *id = d->gateways[g].name;

		if (!ctltls_is_endpoint(d->gateways[g].socket))
			continue;
		if (t == NULL)
			return json_util_field_fail(&c->js, "", "tls",
						    "missing: gateway '%s' has a "
						    "tls:// endpoint",
						    id);
		/* Its certificate names it: the name (by default the node id) must be a DNS
		 * name. */
		if (!deploy_dns_name(id))
			return json_util_field_fail(&c->js, "", "tls",
						    "gateway '%s' has a tls:// "
						    "endpoint, so its node id must be a DNS name "
						    "(letters, digits, '-', '.')",
						    id);
	}
	if (t == NULL)
		return 0;
	rc = dctx_check_keys(c, t, "tls", known, N_OF(known), 3);
	for (size_t k = 0; rc == 0 && k < 3; k++) {
		rc = dctx_get_str(c, t, "tls", known[k], &v);
		if (rc == 0 && dctx_resolve(c, v, outs[k], DEPLOY_PATH_MAX) != 0)
			rc = json_util_field_fail(&c->js, "tls", known[k],
						  "path longer than %d "
						  "bytes",
						  DEPLOY_PATH_MAX);
	}
	if (rc == 0 && json_object_get(t, "crl") != NULL) {
		rc = dctx_get_str(c, t, "tls", "crl", &v);
		if (rc == 0 && dctx_resolve(c, v, d->tls.crl, DEPLOY_PATH_MAX) != 0)
			rc = json_util_field_fail(&c->js, "tls", "crl", "path longer than %d bytes",
						  DEPLOY_PATH_MAX);
	}
	if (rc == 0 && json_object_get(t, "listen") != NULL) {
		char host[CTLTLS_HOST_MAX + 1], why[256];
		unsigned int port;

		rc = dctx_get_str(c, t, "tls", "listen", &v);
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
	static const char *const known[] = {"format", "topology", "gateways",  "jobs",
					    "name",   "tls",      "protected", "tenants"};
	struct dctx c = {
		.js = {.src = src != NULL ? src : "<string>", .err = err, .errlen = errlen}};
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
	rc = dctx_get_str(&c, root, "", "format", &fmt);
	if (rc == 0 && strcmp(fmt, DEPLOY_FORMAT) != 0)
		rc = json_util_field_fail(&c.js, "", "format", "expected \"%s\", got '%.40s'",
					  DEPLOY_FORMAT, fmt);
	if (rc == 0)
		rc = dctx_check_keys(&c, root, "", known, N_OF(known), 4);
	if (rc == 0 && json_object_get(root, "name") != NULL)
		rc = dctx_get_str(&c, root, "", "name", &fmt);
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
		rc = deploy_parse_jobs(&c, root, d);
	if (rc == 0)
		rc = deploy_parse_tenants(&c, root, d);
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
	free(d->tenants);
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
	case DEPLOY_ALGO_MTREE:
		return "mtree";
	case DEPLOY_ALGO_RING:
		return "ring";
	case DEPLOY_ALGO_SINGLE_TREE:
		return "single-tree";
	case DEPLOY_ALGO_CREW:
		return "crew";
	case DEPLOY_ALGO_SELMCAST:
		return "selmcast";
	case DEPLOY_ALGO_BLUECONNECT:
		return "blueconnect";
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
