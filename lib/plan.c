/* SPDX-License-Identifier: BSD-3-Clause
 * Plan model, its validity rules and its `georeduce-plan/1` JSON codec.
 */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "jsonutil.h"
#include "plan.h"

struct plan *
plan_create(const char *algorithm, const struct topo *t, int cap)
{
	struct plan *p = calloc(1, sizeof(*p));

	if (p == NULL)
		return NULL;
	snprintf(p->algorithm, sizeof(p->algorithm), "%s", algorithm);
	snprintf(p->topology, sizeof(p->topology), "%s", t->name);
	p->n_nodes = t->n_nodes;
	p->cap = cap > 0 ? cap : 1;
	p->trees = calloc((size_t)p->cap, sizeof(*p->trees));
	if (p->trees == NULL) {
		free(p);
		errno = ENOMEM;
		return NULL;
	}
	return p;
}

void
plan_free(struct plan *p)
{
	if (p == NULL)
		return;
	for (int i = 0; i < p->n_trees; i++)
		free(p->trees[i].parent);
	free(p->trees);
	json_decref(p->extra);
	free(p);
}

int
plan_add_tree(struct plan *p, int root, double rate_gbps, const int *parent)
{
	struct plan_tree *tr;

	if (p->n_trees >= PLAN_TREES_MAX)
		return -E2BIG;
	if (p->n_trees == p->cap) {
		struct plan_tree *nt = realloc(p->trees, sizeof(*nt) * (size_t)p->cap * 2);

		if (nt == NULL)
			return -ENOMEM;
		p->trees = nt;
		p->cap *= 2;
	}
	tr = &p->trees[p->n_trees];
	memset(tr, 0, sizeof(*tr));
	tr->parent = malloc(sizeof(int) * (size_t)p->n_nodes);
	if (tr->parent == NULL)
		return -ENOMEM;
	memcpy(tr->parent, parent, sizeof(int) * (size_t)p->n_nodes);
	tr->root = root;
	tr->rate_gbps = rate_gbps;
	tr->chunk_bytes = 1 << 20;
	return p->n_trees++;
}

double
plan_total_rate(const struct plan *p)
{
	double s = 0;

	for (int i = 0; i < p->n_trees; i++)
		s += p->trees[i].rate_gbps;
	return s;
}

int
plan_shares_from_rates(struct plan *p)
{
	double total = plan_total_rate(p);

	if (!(total > 0))
		return -EINVAL;
	for (int i = 0; i < p->n_trees; i++)
		p->trees[i].share = p->trees[i].rate_gbps / total;
	return 0;
}

/* Latency from node v up to the root, or -1 if the parent chain is broken or cyclic. */
static double
up_latency(const struct topo *t, const struct plan_tree *tr, int v, int *hops)
{
	double lat = 0;
	int h = 0;

	while (tr->parent[v] != PLAN_ROOT) {
		int u = tr->parent[v], l;

		if (u < 0 || h > t->n_nodes)
			return -1;
		l = topo_link_between(t, v, u);
		if (l < 0)
			return -1;
		lat += t->links[l].latency_ms;
		v = u;
		h++;
	}
	if (hops != NULL)
		*hops = h;
	return lat;
}

double
plan_tree_height_ms(const struct topo *t, const struct plan_tree *tr)
{
	double h = 0;

	for (int v = 0; v < t->n_nodes; v++) {
		double x;

		if (tr->parent[v] == PLAN_ABSENT)
			continue;
		x = up_latency(t, tr, v, NULL);
		if (x > h)
			h = x;
	}
	return h;
}

int
plan_tree_depth(const struct topo *t, const struct plan_tree *tr)
{
	int d = 0;

	for (int v = 0; v < t->n_nodes; v++) {
		int h = 0;

		if (tr->parent[v] == PLAN_ABSENT)
			continue;
		if (up_latency(t, tr, v, &h) >= 0 && h > d)
			d = h;
	}
	return d;
}

int
plan_validate(const struct topo *t, const struct plan *p, double max_height_ms, char *err,
	      size_t errlen)
{
	double *load_ab = NULL, *load_ba = NULL, share_sum = 0;
	int rc = -EINVAL;

	if (p->n_nodes != t->n_nodes)
		return json_util_fail(err, errlen, "plan is for %d nodes, topology has %d",
				      p->n_nodes, t->n_nodes);
	if (p->n_trees == 0)
		return json_util_fail(err, errlen, "plan has no trees");
	load_ab = calloc((size_t)t->n_links + 1, sizeof(double));
	load_ba = calloc((size_t)t->n_links + 1, sizeof(double));
	if (load_ab == NULL || load_ba == NULL) {
		rc = -ENOMEM;
		json_util_fail(err, errlen, "out of memory");
		goto out;
	}
	for (int i = 0; i < p->n_trees; i++) {
		const struct plan_tree *tr = &p->trees[i];
		int roots = 0;

		if (tr->root < 0 || tr->root >= t->n_nodes || tr->parent[tr->root] != PLAN_ROOT) {
			json_util_fail(err, errlen, "trees[%d]: root is not mapped to null", i);
			goto out;
		}
		if (!(isfinite(tr->rate_gbps) && tr->rate_gbps >= 0)) {
			json_util_fail(err, errlen,
				       "trees[%d].rate_gbps: must be a finite number >= 0", i);
			goto out;
		}
		if (!(isfinite(tr->share) && tr->share >= 0 && tr->share <= 1 + PLAN_EPS)) {
			json_util_fail(err, errlen, "trees[%d].share: must be in [0, 1]", i);
			goto out;
		}
		if (tr->chunk_bytes == 0) {
			json_util_fail(err, errlen, "trees[%d].chunk_bytes: must be > 0", i);
			goto out;
		}
		share_sum += tr->share;
		for (int v = 0; v < t->n_nodes; v++) {
			int u = tr->parent[v], l;

			if (u == PLAN_ABSENT) {
				if (t->nodes[v].workers > 0) {
					json_util_fail(
						err, errlen,
						"trees[%d].parent: worker site '%s' is missing", i,
						t->nodes[v].id);
					goto out;
				}
				continue;
			}
			if (u == PLAN_ROOT) {
				roots++;
				continue;
			}
			if (u < 0 || u >= t->n_nodes || tr->parent[u] == PLAN_ABSENT) {
				json_util_fail(err, errlen,
					       "trees[%d].parent.%s: parent is not in the tree", i,
					       t->nodes[v].id);
				goto out;
			}
			l = topo_link_between(t, v, u);
			if (l < 0) {
				json_util_fail(err, errlen,
					       "trees[%d].parent.%s: '%s' -> '%s' is not a link", i,
					       t->nodes[v].id, t->nodes[v].id, t->nodes[u].id);
				goto out;
			}
			load_ab[l] += tr->rate_gbps;
			load_ba[l] += tr->rate_gbps;
			if (up_latency(t, tr, v, NULL) < 0) {
				json_util_fail(err, errlen,
					       "trees[%d].parent.%s: does not reach the root "
					       "(cycle)",
					       i, t->nodes[v].id);
				goto out;
			}
		}
		if (roots != 1) {
			json_util_fail(err, errlen,
				       "trees[%d].parent: %d nodes map to null, expected 1", i,
				       roots);
			goto out;
		}
		if (max_height_ms > 0) {
			double h = plan_tree_height_ms(t, tr);

			if (h > max_height_ms * (1 + PLAN_EPS) + 1e-9) {
				json_util_fail(err, errlen,
					       "trees[%d]: height %.3f ms exceeds %.3f ms", i, h,
					       max_height_ms);
				goto out;
			}
		}
	}
	if (fabs(share_sum - 1) > 1e-6 * p->n_trees + 1e-9) {
		json_util_fail(err, errlen, "trees[].share: shares sum to %.9f, not 1", share_sum);
		goto out;
	}
	for (int l = 0; l < t->n_links; l++) {
		const struct topo_link *lk = &t->links[l];

		if (load_ab[l] > lk->gbps_ab * (1 + PLAN_EPS) + 1e-9 ||
		    load_ba[l] > lk->gbps_ba * (1 + PLAN_EPS) + 1e-9) {
			bool ab = load_ab[l] > lk->gbps_ab * (1 + PLAN_EPS) + 1e-9;

			json_util_fail(
				err, errlen,
				"link %s -> %s: trees load %.6g Gbit/s over its capacity "
				"%.6g",
				t->nodes[ab ? lk->a : lk->b].id, t->nodes[ab ? lk->b : lk->a].id,
				ab ? load_ab[l] : load_ba[l], ab ? lk->gbps_ab : lk->gbps_ba);
			goto out;
		}
	}
	rc = 0;
out:
	free(load_ab);
	free(load_ba);
	return rc;
}

json_t *
plan_to_json(const struct topo *t, const struct plan *p)
{
	json_t *root = json_object(), *trees = json_array();

	if (root == NULL || trees == NULL)
		goto nomem;
	json_object_set_new(root, "format", json_string(PLAN_FORMAT));
	json_object_set_new(root, "algorithm", json_string(p->algorithm));
	json_object_set_new(root, "topology", json_string(p->topology));
	for (int i = 0; i < p->n_trees; i++) {
		const struct plan_tree *tr = &p->trees[i];
		json_t *parent = json_object(), *jt;

		if (parent == NULL)
			goto nomem;
		for (int v = 0; v < t->n_nodes; v++) {
			if (tr->parent[v] == PLAN_ABSENT)
				continue;
			json_object_set_new(parent, t->nodes[v].id,
					    tr->parent[v] == PLAN_ROOT ?
						    json_null() :
						    json_string(t->nodes[tr->parent[v]].id));
		}
		jt = json_pack("{s:s, s:f, s:f, s:I, s:o}", "root", t->nodes[tr->root].id,
			       "rate_gbps", tr->rate_gbps, "share", tr->share, "chunk_bytes",
			       (json_int_t)tr->chunk_bytes, "parent", parent);
		if (jt == NULL)
			goto nomem;
		json_array_append_new(trees, jt);
	}
	json_object_set_new(root, "trees", trees);
	trees = NULL;
	if (p->bytes > 0)
		json_object_set_new(root, "predicted",
				    json_pack("{s:I, s:f}", "bytes", (json_int_t)p->bytes,
					      "allreduce_seconds", p->allreduce_seconds));
	if (p->extra != NULL)
		json_object_update(root, p->extra);
	return root;
nomem:
	json_decref(trees);
	json_decref(root);
	return NULL;
}

int
plan_write(const struct topo *t, const struct plan *p, FILE *out)
{
	return json_util_dump_new(plan_to_json(t, p), out);
}

/* The fields of a tree, each type-checked on its own so that errors name the field. */
static int
parse_tree(const struct topo *t, struct plan *p, json_t *jt, int i, const char *src, char *err,
	   size_t errlen)
{
	static const char *const known[] = {"root", "rate_gbps", "share", "chunk_bytes", "parent"};
	json_t *jroot, *jrate, *jshare, *jchunk, *parent, *val;
	const char *root_id, *key;
	double rate, share;
	json_int_t chunk;
	int *par, rc, root, idx;

	if (!json_is_object(jt))
		return json_util_fail(err, errlen, "%s: field 'trees[%d]': expected an object", src,
				      i);
	json_object_foreach (jt, key, val) {
		size_t k = 0;

		while (k < sizeof(known) / sizeof(known[0]) && strcmp(key, known[k]) != 0)
			k++;
		if (k == sizeof(known) / sizeof(known[0]))
			return json_util_fail(err, errlen,
					      "%s: field 'trees[%d].%.*s': unknown field", src, i,
					      TOPO_ID_MAX, key);
	}
	jroot = json_object_get(jt, "root");
	jrate = json_object_get(jt, "rate_gbps");
	jshare = json_object_get(jt, "share");
	jchunk = json_object_get(jt, "chunk_bytes");
	parent = json_object_get(jt, "parent");
	if (jroot == NULL || jrate == NULL || jshare == NULL || jchunk == NULL || parent == NULL)
		return json_util_fail(err, errlen, "%s: field 'trees[%d].%s': missing", src, i,
				      jroot == NULL  ? "root" :
				      jrate == NULL  ? "rate_gbps" :
				      jshare == NULL ? "share" :
				      jchunk == NULL ? "chunk_bytes" :
						       "parent");
	if (!json_is_string(jroot))
		return json_util_fail(err, errlen, "%s: field 'trees[%d].root': expected a node id",
				      src, i);
	if (!json_is_number(jrate))
		return json_util_fail(err, errlen,
				      "%s: field 'trees[%d].rate_gbps': expected a "
				      "number",
				      src, i);
	if (!json_is_number(jshare))
		return json_util_fail(err, errlen, "%s: field 'trees[%d].share': expected a number",
				      src, i);
	if (!json_is_integer(jchunk))
		return json_util_fail(err, errlen,
				      "%s: field 'trees[%d].chunk_bytes': expected an "
				      "integer",
				      src, i);
	root_id = json_string_value(jroot);
	rate = json_number_value(jrate);
	share = json_number_value(jshare);
	chunk = json_integer_value(jchunk);
	if (!json_is_object(parent))
		return json_util_fail(err, errlen,
				      "%s: field 'trees[%d].parent': expected an object", src, i);
	root = topo_node_index(t, root_id);
	if (root < 0)
		return json_util_fail(err, errlen,
				      "%s: field 'trees[%d].root': unknown node id '%.*s'", src, i,
				      TOPO_ID_MAX, root_id);
	if (chunk <= 0)
		return json_util_fail(err, errlen, "%s: field 'trees[%d].chunk_bytes': must be > 0",
				      src, i);
	par = malloc(sizeof(int) * (size_t)t->n_nodes);
	if (par == NULL)
		return -ENOMEM;
	for (int v = 0; v < t->n_nodes; v++)
		par[v] = PLAN_ABSENT;
	json_object_foreach (parent, key, val) {
		int v = topo_node_index(t, key);

		if (v < 0) {
			free(par);
			return json_util_fail(err, errlen,
					      "%s: field 'trees[%d].parent': unknown node id "
					      "'%.*s'",
					      src, i, TOPO_ID_MAX, key);
		}
		if (json_is_null(val)) {
			par[v] = PLAN_ROOT;
		} else if (json_is_string(val) &&
			   (idx = topo_node_index(t, json_string_value(val))) >= 0) {
			par[v] = idx;
		} else {
			free(par);
			return json_util_fail(err, errlen,
					      "%s: field 'trees[%d].parent.%s': expected a node "
					      "id or null",
					      src, i, key);
		}
	}
	if (par[root] != PLAN_ROOT) {
		free(par);
		return json_util_fail(err, errlen,
				      "%s: field 'trees[%d].parent.%s': the root must map to "
				      "null",
				      src, i, root_id);
	}
	rc = plan_add_tree(p, root, rate, par);
	free(par);
	if (rc < 0)
		return rc;
	p->trees[rc].share = share;
	p->trees[rc].chunk_bytes = (uint64_t)chunk;
	return 0;
}

struct plan *
plan_parse(const struct topo *t, const char *text, const char *src, char *err, size_t errlen)
{
	json_t *root, *trees = NULL, *pred = NULL, *fmt, *algo, *name;
	json_error_t jerr;
	struct plan *p = NULL;
	size_t n;

	if (src == NULL)
		src = "<string>";
	root = json_loads(text, JSON_REJECT_DUPLICATES, &jerr);
	if (root == NULL) {
		json_util_fail(err, errlen, "%s:%d:%d: invalid JSON: %s", src, jerr.line,
			       jerr.column, jerr.text);
		errno = EINVAL;
		return NULL;
	}
	if (!json_is_object(root)) {
		json_util_fail(err, errlen, "%s: the document is not a JSON object", src);
		goto bad;
	}
	fmt = json_object_get(root, "format");
	if (!json_is_string(fmt) || strcmp(json_string_value(fmt), PLAN_FORMAT) != 0) {
		json_util_fail(err, errlen, "%s: field 'format': expected \"%s\"", src,
			       PLAN_FORMAT);
		goto bad;
	}
	algo = json_object_get(root, "algorithm");
	if (algo != NULL && (!json_is_string(algo) || json_string_length(algo) > PLAN_ALGO_MAX)) {
		json_util_fail(err, errlen,
			       "%s: field 'algorithm': expected a string of at most "
			       "%d bytes",
			       src, PLAN_ALGO_MAX);
		goto bad;
	}
	name = json_object_get(root, "topology");
	if (name != NULL && (!json_is_string(name) || json_string_length(name) > TOPO_NAME_MAX)) {
		json_util_fail(err, errlen,
			       "%s: field 'topology': expected a string of at most "
			       "%d bytes",
			       src, TOPO_NAME_MAX);
		goto bad;
	}
	trees = json_object_get(root, "trees");
	if (trees != NULL && !json_is_array(trees)) {
		json_util_fail(err, errlen, "%s: field 'trees': expected an array", src);
		goto bad;
	}
	n = json_array_size(trees);
	if (n > PLAN_TREES_MAX) {
		json_util_fail(err, errlen, "%s: field 'trees': more than %d trees", src,
			       PLAN_TREES_MAX);
		goto bad;
	}
	p = plan_create(algo != NULL ? json_string_value(algo) : "", t, (int)n);
	if (p == NULL) {
		json_util_fail(err, errlen, "%s: out of memory", src);
		goto bad;
	}
	if (name != NULL)
		snprintf(p->topology, sizeof(p->topology), "%s", json_string_value(name));
	for (size_t i = 0; i < n; i++) {
		int rc = parse_tree(t, p, json_array_get(trees, i), (int)i, src, err, errlen);

		if (rc == -ENOMEM)
			json_util_fail(err, errlen, "%s: out of memory", src);
		if (rc != 0)
			goto bad;
	}
	pred = json_object_get(root, "predicted");
	if (pred != NULL) {
		json_int_t bytes = 0;
		double secs = 0;

		if (json_unpack_ex(pred, &jerr, 0, "{s:I, s:F}", "bytes", &bytes,
				   "allreduce_seconds", &secs) != 0 ||
		    bytes < 0) {
			json_util_fail(err, errlen, "%s: field 'predicted': %s", src,
				       bytes < 0 ? "bytes must be >= 0" : jerr.text);
			goto bad;
		}
		p->bytes = (uint64_t)bytes;
		p->allreduce_seconds = secs;
	}
	json_decref(root);
	return p;
bad:
	plan_free(p);
	json_decref(root);
	errno = EINVAL;
	return NULL;
}

struct plan *
plan_load(const struct topo *t, const char *path, char *err, size_t errlen)
{
	char *text = json_util_read_file(path, err, errlen);
	struct plan *p;

	if (text == NULL)
		return NULL;
	p = plan_parse(t, text, path, err, errlen);
	free(text);
	return p;
}
