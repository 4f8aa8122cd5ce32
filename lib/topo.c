/* SPDX-License-Identifier: BSD-3-Clause
 * Topology model and its `georeduce-topology/1` JSON codec (jansson).
 */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "jsonutil.h"
#include "topo.h"

void
topo_free(struct topo *t)
{
	if (t == NULL)
		return;
	free(t->nodes);
	free(t->links);
	free(t->adj_off);
	free(t->adj);
	free(t);
}

int
topo_node_index(const struct topo *t, const char *id)
{
	for (int i = 0; i < t->n_nodes; i++)
		if (strcmp(t->nodes[i].id, id) == 0)
			return i;
	return -1;
}

int
topo_link_between(const struct topo *t, int u, int v)
{
	if (u < 0 || u >= t->n_nodes || v < 0 || v >= t->n_nodes)
		return -1;
	for (int k = t->adj_off[u]; k < t->adj_off[u + 1]; k++)
		if (t->adj[k].node == v)
			return t->adj[k].link;
	return -1;
}

double
topo_link_gbps_from(const struct topo *t, int l, int from)
{
	const struct topo_link *lk = &t->links[l];

	return from == lk->a ? lk->gbps_ab : lk->gbps_ba;
}

double
topo_link_duplex_gbps(const struct topo *t, int l)
{
	const struct topo_link *lk = &t->links[l];

	return lk->gbps_ab < lk->gbps_ba ? lk->gbps_ab : lk->gbps_ba;
}

int
topo_worker_sites(const struct topo *t)
{
	int n = 0;

	for (int i = 0; i < t->n_nodes; i++)
		n += t->nodes[i].workers > 0;
	return n;
}

static int
cmp_int(const void *a, const void *b)
{
	int x = *(const int *)a, y = *(const int *)b;

	return (x > y) - (x < y);
}

/* Build the CSR adjacency and check the graph-level rules: ids unique, no self-loops,
 * no duplicate links, worker sites connected. */
static int
topo_finalize(struct topo *t, const char *src, char *err, size_t errlen)
{
	int *deg, *seen, *queue, head = 0, tail = 0, first = -1;

	if (t->n_nodes == 0)
		return json_util_fail(err, errlen, "%s: field 'nodes': the topology has no nodes",
				      src);
	/* Unique ids. Quadratic, but n is bounded by TOPO_NODES_MAX. */
	for (int i = 0; i < t->n_nodes; i++)
		for (int j = i + 1; j < t->n_nodes; j++)
			if (strcmp(t->nodes[i].id, t->nodes[j].id) == 0)
				return json_util_fail(
					err, errlen,
					"%s: field 'nodes[%d].id': duplicate node id '%s' "
					"(first at nodes[%d])",
					src, j, t->nodes[j].id, i);

	t->adj_off = calloc((size_t)t->n_nodes + 1, sizeof(*t->adj_off));
	t->adj = calloc((size_t)t->n_links * 2 + 1, sizeof(*t->adj));
	if (t->adj_off == NULL || t->adj == NULL)
		return -ENOMEM;
	deg = t->adj_off + 1;
	for (int l = 0; l < t->n_links; l++) {
		const struct topo_link *lk = &t->links[l];

		if (lk->a == lk->b)
			return json_util_fail(err, errlen,
					      "%s: field 'links[%d]': self-loop on node '%s'", src,
					      l, t->nodes[lk->a].id);
		deg[lk->a]++;
		deg[lk->b]++;
	}
	for (int v = 0; v < t->n_nodes; v++)
		t->adj_off[v + 1] += t->adj_off[v];
	{
		int *fill = calloc((size_t)t->n_nodes, sizeof(*fill));

		if (fill == NULL)
			return -ENOMEM;
		for (int l = 0; l < t->n_links; l++) {
			const struct topo_link *lk = &t->links[l];

			t->adj[t->adj_off[lk->a] + fill[lk->a]++] =
				(struct topo_adj){.node = lk->b, .link = l};
			t->adj[t->adj_off[lk->b] + fill[lk->b]++] =
				(struct topo_adj){.node = lk->a, .link = l};
		}
		free(fill);
	}
	/* Duplicate links: a neighbour listed twice in one adjacency list. */
	for (int v = 0; v < t->n_nodes; v++) {
		int d = t->adj_off[v + 1] - t->adj_off[v];
		int *nb = malloc(sizeof(*nb) * (size_t)(d + 1));

		if (nb == NULL)
			return -ENOMEM;
		for (int k = 0; k < d; k++)
			nb[k] = t->adj[t->adj_off[v] + k].node;
		qsort(nb, (size_t)d, sizeof(*nb), cmp_int);
		for (int k = 1; k < d; k++) {
			if (nb[k] == nb[k - 1]) {
				int u = nb[k], l2 = -1;

				for (int l = 0; l < t->n_links; l++) {
					const struct topo_link *lk = &t->links[l];

					if ((lk->a == u && lk->b == v) ||
					    (lk->a == v && lk->b == u))
						l2 = l;
				}
				free(nb);
				return json_util_fail(err, errlen,
						      "%s: field 'links[%d]': duplicate link "
						      "between '%s' and '%s'",
						      src, l2, t->nodes[v].id, t->nodes[u].id);
			}
		}
		free(nb);
	}

	/* Worker sites connected: BFS from the first worker site. */
	for (int v = 0; v < t->n_nodes && first < 0; v++)
		if (t->nodes[v].workers > 0)
			first = v;
	if (first < 0)
		return json_util_fail(err, errlen, "%s: field 'nodes': no node has workers", src);
	seen = calloc((size_t)t->n_nodes, sizeof(*seen));
	queue = malloc(sizeof(*queue) * (size_t)t->n_nodes);
	if (seen == NULL || queue == NULL) {
		free(seen);
		free(queue);
		return -ENOMEM;
	}
	seen[first] = 1;
	queue[tail++] = first;
	while (head < tail) {
		int u = queue[head++];

		for (int k = t->adj_off[u]; k < t->adj_off[u + 1]; k++) {
			int w = t->adj[k].node;

			if (!seen[w]) {
				seen[w] = 1;
				queue[tail++] = w;
			}
		}
	}
	for (int v = 0; v < t->n_nodes; v++) {
		if (t->nodes[v].workers > 0 && !seen[v]) {
			json_util_fail(
				err, errlen,
				"%s: field 'links': worker sites '%s' and '%s' are not connected",
				src, t->nodes[first].id, t->nodes[v].id);
			free(seen);
			free(queue);
			return -EINVAL;
		}
	}
	free(seen);
	free(queue);
	return 0;
}

static int
check_node(const struct topo_node *nd, int i, const char *src, char *err, size_t errlen)
{
	size_t len = strlen(nd->id);

	if (len == 0)
		return json_util_fail(err, errlen, "%s: field 'nodes[%d].id': empty id", src, i);
	if (len > TOPO_ID_MAX)
		return json_util_fail(err, errlen, "%s: field 'nodes[%d].id': longer than %d bytes",
				      src, i, TOPO_ID_MAX);
	if (nd->workers < 0)
		return json_util_fail(err, errlen, "%s: field 'nodes[%d].workers': must be >= 0",
				      src, i);
	if (nd->gateways < 1)
		return json_util_fail(err, errlen, "%s: field 'nodes[%d].gateways': must be >= 1",
				      src, i);
	if (!(isfinite(nd->lan_gbps) && nd->lan_gbps > 0))
		return json_util_fail(
			err, errlen,
			"%s: field 'nodes[%d].lan_gbps': must be a positive finite number", src, i);
	if (!(isfinite(nd->lan_latency_ms) && nd->lan_latency_ms >= 0))
		return json_util_fail(
			err, errlen,
			"%s: field 'nodes[%d].lan_latency_ms': must be a finite number >= 0", src,
			i);
	return 0;
}

static int
check_link(const struct topo_link *lk, int l, const char *src, char *err, size_t errlen)
{
	if (!(isfinite(lk->gbps_ab) && lk->gbps_ab > 0))
		return json_util_fail(
			err, errlen, "%s: field 'links[%d].gbps': must be a positive finite number",
			src, l);
	if (!(isfinite(lk->gbps_ba) && lk->gbps_ba > 0))
		return json_util_fail(
			err, errlen,
			"%s: field 'links[%d].gbps_ba': must be a positive finite number", src, l);
	if (!(isfinite(lk->latency_ms) && lk->latency_ms >= 0))
		return json_util_fail(
			err, errlen,
			"%s: field 'links[%d].latency_ms': must be a finite number >= 0", src, l);
	return 0;
}

/* Copy, validate and finalize; messages name src. */
static struct topo *
topo_build(const char *name, const char *src, int n_nodes, const struct topo_node *nodes,
	   int n_links, const struct topo_link *links, char *err, size_t errlen)
{
	struct topo *t;
	int rc;

	if (n_nodes < 0 || n_nodes > TOPO_NODES_MAX || n_links < 0 || n_links > TOPO_LINKS_MAX) {
		json_util_fail(err, errlen, "%s: %d nodes and %d links exceed the limits (%d, %d)",
			       src, n_nodes, n_links, TOPO_NODES_MAX, TOPO_LINKS_MAX);
		errno = EINVAL;
		return NULL;
	}
	t = calloc(1, sizeof(*t));
	if (t == NULL)
		goto nomem;
	snprintf(t->name, sizeof(t->name), "%s", name != NULL ? name : "");
	t->nodes = calloc((size_t)n_nodes + 1, sizeof(*t->nodes));
	t->links = calloc((size_t)n_links + 1, sizeof(*t->links));
	if (t->nodes == NULL || t->links == NULL)
		goto nomem;
	t->n_nodes = n_nodes;
	t->n_links = n_links;
	for (int i = 0; i < n_nodes; i++) {
		if (strnlen(nodes[i].id, sizeof(nodes[i].id)) == sizeof(nodes[i].id)) {
			json_util_fail(err, errlen, "%s: field 'nodes[%d].id': not terminated", src,
				       i);
			goto inval;
		}
		t->nodes[i] = nodes[i];
		if (check_node(&t->nodes[i], i, src, err, errlen) != 0)
			goto inval;
	}
	for (int l = 0; l < n_links; l++) {
		t->links[l] = links[l];
		if (links[l].a < 0 || links[l].a >= n_nodes || links[l].b < 0 ||
		    links[l].b >= n_nodes) {
			json_util_fail(err, errlen,
				       "%s: field 'links[%d]': node index out of range", src, l);
			goto inval;
		}
		if (check_link(&t->links[l], l, src, err, errlen) != 0)
			goto inval;
	}
	rc = topo_finalize(t, src, err, errlen);
	if (rc == -ENOMEM)
		goto nomem;
	if (rc != 0)
		goto inval;
	return t;
inval:
	topo_free(t);
	errno = EINVAL;
	return NULL;
nomem:
	json_util_fail(err, errlen, "%s: out of memory", src);
	topo_free(t);
	errno = ENOMEM;
	return NULL;
}

struct topo *
topo_create(const char *name, int n_nodes, const struct topo_node *nodes, int n_links,
	    const struct topo_link *links, char *err, size_t errlen)
{
	return topo_build(name, name != NULL && name[0] != '\0' ? name : "<topology>", n_nodes,
			  nodes, n_links, links, err, errlen);
}

/* Read an optional number field; integers are accepted where reals are expected. */
static int
get_number(json_t *obj, const char *key, double dflt, double *out, const char *what, int idx,
	   const char *src, char *err, size_t errlen)
{
	json_t *v = json_object_get(obj, key);

	if (v == NULL) {
		*out = dflt;
		return 0;
	}
	if (!json_is_number(v))
		return json_util_fail(err, errlen, "%s: field '%s[%d].%s': expected a number", src,
				      what, idx, key);
	*out = json_number_value(v);
	return 0;
}

static int
get_int(json_t *obj, const char *key, int dflt, int *out, const char *what, int idx,
	const char *src, char *err, size_t errlen)
{
	json_t *v = json_object_get(obj, key);
	json_int_t x;

	if (v == NULL) {
		*out = dflt;
		return 0;
	}
	if (!json_is_integer(v))
		return json_util_fail(err, errlen, "%s: field '%s[%d].%s': expected an integer",
				      src, what, idx, key);
	x = json_integer_value(v);
	if (x < -1000000 || x > 1000000)
		return json_util_fail(err, errlen, "%s: field '%s[%d].%s': %lld is out of range",
				      src, what, idx, key, (long long)x);
	*out = (int)x;
	return 0;
}

static int
get_node_ref(json_t *lk, const char *key, struct topo *t, int l, int *out, const char *src,
	     char *err, size_t errlen)
{
	json_t *v = json_object_get(lk, key);

	if (v == NULL)
		return json_util_fail(err, errlen, "%s: field 'links[%d].%s': missing", src, l,
				      key);
	if (!json_is_string(v))
		return json_util_fail(err, errlen,
				      "%s: field 'links[%d].%s': expected a node id string", src, l,
				      key);
	*out = topo_node_index(t, json_string_value(v));
	if (*out < 0)
		return json_util_fail(err, errlen,
				      "%s: field 'links[%d].%s': unknown node id '%.*s'", src, l,
				      key, TOPO_ID_MAX, json_string_value(v));
	return 0;
}

static struct topo *
topo_from_json(json_t *root, const char *src, char *err, size_t errlen)
{
	json_t *fmt, *name, *jnodes, *jlinks;
	struct topo_node *nodes = NULL;
	struct topo_link *links = NULL;
	struct topo tmp = {0};
	struct topo *t = NULL;
	size_t n_nodes, n_links;

	if (!json_is_object(root)) {
		json_util_fail(err, errlen, "%s: the document is not a JSON object", src);
		goto out;
	}
	fmt = json_object_get(root, "format");
	if (fmt == NULL) {
		json_util_fail(err, errlen, "%s: field 'format': missing (expected \"%s\")", src,
			       TOPO_FORMAT);
		goto out;
	}
	if (!json_is_string(fmt) || strcmp(json_string_value(fmt), TOPO_FORMAT) != 0) {
		json_util_fail(err, errlen, "%s: field 'format': expected \"%s\"", src,
			       TOPO_FORMAT);
		goto out;
	}
	name = json_object_get(root, "name");
	if (name != NULL && !json_is_string(name)) {
		json_util_fail(err, errlen, "%s: field 'name': expected a string", src);
		goto out;
	}
	if (name != NULL && strlen(json_string_value(name)) > TOPO_NAME_MAX) {
		json_util_fail(err, errlen, "%s: field 'name': longer than %d bytes", src,
			       TOPO_NAME_MAX);
		goto out;
	}
	jnodes = json_object_get(root, "nodes");
	jlinks = json_object_get(root, "links");
	if (jnodes == NULL || !json_is_array(jnodes)) {
		json_util_fail(err, errlen, "%s: field 'nodes': %s", src,
			       jnodes == NULL ? "missing" : "expected an array");
		goto out;
	}
	if (jlinks == NULL || !json_is_array(jlinks)) {
		json_util_fail(err, errlen, "%s: field 'links': %s", src,
			       jlinks == NULL ? "missing" : "expected an array");
		goto out;
	}
	n_nodes = json_array_size(jnodes);
	n_links = json_array_size(jlinks);
	if (n_nodes == 0) {
		json_util_fail(err, errlen, "%s: field 'nodes': the topology has no nodes", src);
		goto out;
	}
	if (n_nodes > TOPO_NODES_MAX || n_links > TOPO_LINKS_MAX) {
		json_util_fail(err, errlen,
			       "%s: %zu nodes and %zu links exceed the limits (%d, %d)", src,
			       n_nodes, n_links, TOPO_NODES_MAX, TOPO_LINKS_MAX);
		goto out;
	}
	nodes = calloc(n_nodes, sizeof(*nodes));
	links = calloc(n_links + 1, sizeof(*links));
	if (nodes == NULL || links == NULL) {
		json_util_fail(err, errlen, "%s: out of memory", src);
		goto out;
	}
	for (size_t i = 0; i < n_nodes; i++) {
		json_t *jn = json_array_get(jnodes, i), *id;
		struct topo_node *nd = &nodes[i];

		if (!json_is_object(jn)) {
			json_util_fail(err, errlen, "%s: field 'nodes[%zu]': expected an object",
				       src, i);
			goto out;
		}
		id = json_object_get(jn, "id");
		if (id == NULL || !json_is_string(id)) {
			json_util_fail(err, errlen, "%s: field 'nodes[%zu].id': %s", src, i,
				       id == NULL ? "missing" : "expected a string");
			goto out;
		}
		if (strlen(json_string_value(id)) > TOPO_ID_MAX) {
			json_util_fail(err, errlen,
				       "%s: field 'nodes[%zu].id': longer than %d bytes", src, i,
				       TOPO_ID_MAX);
			goto out;
		}
		if (json_string_length(id) != strlen(json_string_value(id))) {
			json_util_fail(err, errlen,
				       "%s: field 'nodes[%zu].id': contains a NUL byte", src, i);
			goto out;
		}
		snprintf(nd->id, sizeof(nd->id), "%s", json_string_value(id));
		if (get_int(jn, "workers", TOPO_DEFAULT_WORKERS, &nd->workers, "nodes", (int)i, src,
			    err, errlen) ||
		    get_int(jn, "gateways", TOPO_DEFAULT_GATEWAYS, &nd->gateways, "nodes", (int)i,
			    src, err, errlen) ||
		    get_number(jn, "lan_gbps", TOPO_DEFAULT_LAN_GBPS, &nd->lan_gbps, "nodes",
			       (int)i, src, err, errlen) ||
		    get_number(jn, "lan_latency_ms", TOPO_DEFAULT_LAN_LATENCY_MS,
			       &nd->lan_latency_ms, "nodes", (int)i, src, err, errlen) ||
		    check_node(nd, (int)i, src, err, errlen))
			goto out;
	}
	/* Node ids must resolve before links can: a temporary view over the nodes
	 * (duplicate ids are reported by topo_build before any link is looked at). */
	tmp.nodes = nodes;
	tmp.n_nodes = (int)n_nodes;
	for (size_t l = 0; l < n_links; l++) {
		json_t *jl = json_array_get(jlinks, l);
		struct topo_link *lk = &links[l];

		if (!json_is_object(jl)) {
			json_util_fail(err, errlen, "%s: field 'links[%zu]': expected an object",
				       src, l);
			goto out;
		}
		if (get_node_ref(jl, "a", &tmp, (int)l, &lk->a, src, err, errlen) ||
		    get_node_ref(jl, "b", &tmp, (int)l, &lk->b, src, err, errlen))
			goto out;
		if (json_object_get(jl, "gbps") == NULL) {
			json_util_fail(err, errlen, "%s: field 'links[%zu].gbps': missing", src, l);
			goto out;
		}
		if (get_number(jl, "gbps", 0, &lk->gbps_ab, "links", (int)l, src, err, errlen))
			goto out;
		if (get_number(jl, "gbps_ba", lk->gbps_ab, &lk->gbps_ba, "links", (int)l, src, err,
			       errlen) ||
		    get_number(jl, "latency_ms", 0.0, &lk->latency_ms, "links", (int)l, src, err,
			       errlen))
			goto out;
		if (check_link(lk, (int)l, src, err, errlen))
			goto out;
	}
	t = topo_build(name != NULL ? json_string_value(name) : "", src, (int)n_nodes, nodes,
		       (int)n_links, links, err, errlen);
out:
	free(nodes);
	free(links);
	return t;
}

struct topo *
topo_parse(const char *text, const char *src, char *err, size_t errlen)
{
	json_error_t jerr;
	json_t *root;
	struct topo *t;

	if (src == NULL)
		src = "<string>";
	root = json_loads(text, JSON_REJECT_DUPLICATES, &jerr);
	if (root == NULL) {
		json_util_fail(err, errlen, "%s:%d:%d: invalid JSON: %s", src, jerr.line,
			       jerr.column, jerr.text);
		errno = EINVAL;
		return NULL;
	}
	t = topo_from_json(root, src, err, errlen);
	json_decref(root);
	if (t == NULL && errno != ENOMEM)
		errno = EINVAL;
	return t;
}

struct topo *
topo_load(const char *path, char *err, size_t errlen)
{
	char *text = json_util_read_file(path, err, errlen);
	struct topo *t;

	if (text == NULL)
		return NULL;
	t = topo_parse(text, path, err, errlen);
	free(text);
	return t;
}

int
topo_write(const struct topo *t, FILE *out)
{
	json_t *root = json_object(), *nodes = json_array(), *links = json_array();
	int rc = -ENOMEM;

	if (root == NULL || nodes == NULL || links == NULL)
		goto out;
	json_object_set_new(root, "format", json_string(TOPO_FORMAT));
	json_object_set_new(root, "name", json_string(t->name));
	for (int i = 0; i < t->n_nodes; i++) {
		const struct topo_node *nd = &t->nodes[i];
		json_t *jn = json_pack("{s:s, s:i}", "id", nd->id, "workers", nd->workers);

		if (jn == NULL)
			goto out;
		if (nd->gateways != TOPO_DEFAULT_GATEWAYS)
			json_object_set_new(jn, "gateways", json_integer(nd->gateways));
		if (nd->lan_gbps != TOPO_DEFAULT_LAN_GBPS)
			json_object_set_new(jn, "lan_gbps", json_real(nd->lan_gbps));
		if (nd->lan_latency_ms != TOPO_DEFAULT_LAN_LATENCY_MS)
			json_object_set_new(jn, "lan_latency_ms", json_real(nd->lan_latency_ms));
		json_array_append_new(nodes, jn);
	}
	for (int l = 0; l < t->n_links; l++) {
		const struct topo_link *lk = &t->links[l];
		json_t *jl = json_pack("{s:s, s:s, s:f}", "a", t->nodes[lk->a].id, "b",
				       t->nodes[lk->b].id, "gbps", lk->gbps_ab);

		if (jl == NULL)
			goto out;
		if (lk->gbps_ba != lk->gbps_ab)
			json_object_set_new(jl, "gbps_ba", json_real(lk->gbps_ba));
		json_object_set_new(jl, "latency_ms", json_real(lk->latency_ms));
		json_array_append_new(links, jl);
	}
	json_object_set(root, "nodes", nodes);
	json_object_set(root, "links", links);
	rc = json_util_dump(root, out);
out:
	json_decref(nodes);
	json_decref(links);
	json_decref(root);
	return rc;
}
