/* SPDX-License-Identifier: BSD-3-Clause
 * Graph algorithms shared by the planners. n is at most a few thousand sites, so the
 * O(n^2) Prim and the binary-heap-free Dijkstra below are simpler and fast enough.
 */
#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>

#include "graph.h"
#include "plan.h"

int
graph_shortest_paths(const struct topo *t, int src, double *dist, int *pred)
{
	bool *done = calloc((size_t)t->n_nodes, sizeof(*done));

	if (done == NULL)
		return -ENOMEM;
	for (int v = 0; v < t->n_nodes; v++) {
		dist[v] = INFINITY;
		pred[v] = -1;
	}
	dist[src] = 0;
	for (;;) {
		int u = -1;

		for (int v = 0; v < t->n_nodes; v++)
			if (!done[v] && isfinite(dist[v]) && (u < 0 || dist[v] < dist[u]))
				u = v;
		if (u < 0)
			break;
		done[u] = true;
		for (int k = t->adj_off[u]; k < t->adj_off[u + 1]; k++) {
			int w = t->adj[k].node;
			double d = dist[u] + t->links[t->adj[k].link].latency_ms + GRAPH_HOP_EPS_MS;

			if (!done[w] && d < dist[w]) {
				dist[w] = d;
				pred[w] = u;
			}
		}
	}
	free(done);
	return 0;
}

int
graph_route(const struct topo *t, int src, int dst, int *path)
{
	double *dist = malloc(sizeof(*dist) * (size_t)t->n_nodes);
	int *pred = malloc(sizeof(*pred) * (size_t)t->n_nodes);
	int n = 0, rc;

	if (dist == NULL || pred == NULL) {
		rc = -ENOMEM;
		goto out;
	}
	rc = graph_shortest_paths(t, src, dist, pred);
	if (rc != 0)
		goto out;
	if (!isfinite(dist[dst])) {
		rc = -ENOENT;
		goto out;
	}
	for (int v = dst; v >= 0; v = pred[v])
		path[n++] = v;
	for (int i = 0; i < n / 2; i++) {
		int x = path[i];

		path[i] = path[n - 1 - i];
		path[n - 1 - i] = x;
	}
	rc = n;
out:
	free(dist);
	free(pred);
	return rc;
}

int
graph_min_spanning_tree(const struct topo *t, const double *w, int root, int *parent)
{
	double *key = malloc(sizeof(*key) * (size_t)t->n_nodes);
	bool *in = calloc((size_t)t->n_nodes, sizeof(*in));
	int rc = 0;

	if (key == NULL || in == NULL) {
		rc = -ENOMEM;
		goto out;
	}
	for (int v = 0; v < t->n_nodes; v++) {
		key[v] = INFINITY;
		parent[v] = PLAN_ABSENT;
	}
	key[root] = 0;
	parent[root] = PLAN_ROOT;
	for (int it = 0; it < t->n_nodes; it++) {
		int u = -1;

		for (int v = 0; v < t->n_nodes; v++)
			if (!in[v] && parent[v] != PLAN_ABSENT && (u < 0 || key[v] < key[u]))
				u = v;
		if (u < 0) {
			rc = -ENOENT;
			goto out;
		}
		in[u] = true;
		for (int k = t->adj_off[u]; k < t->adj_off[u + 1]; k++) {
			int x = t->adj[k].node;
			double c = w[t->adj[k].link];

			if (!in[x] && isfinite(c) && (parent[x] == PLAN_ABSENT || c < key[x])) {
				key[x] = c;
				parent[x] = u;
			}
		}
	}
out:
	free(key);
	free(in);
	return rc;
}

void
graph_reroot(const struct topo *t, int *parent, int new_root)
{
	int prev = PLAN_ROOT, v = new_root;

	(void)t;
	/* Reverse the parent pointers along the path from new_root to the old root. */
	while (v >= 0) {
		int up = parent[v];

		parent[v] = prev;
		prev = v;
		v = up;
	}
}

/* Latency from v up to the root of parent[]. */
static double
depth_ms(const struct topo *t, const int *parent, int v)
{
	double d = 0;

	while (parent[v] >= 0) {
		d += t->links[topo_link_between(t, v, parent[v])].latency_ms;
		v = parent[v];
	}
	return d;
}

int
graph_center_root(const struct topo *t, int *parent)
{
	int *tmp = malloc(sizeof(*tmp) * (size_t)t->n_nodes);
	int best = -1, cur = -1;
	double best_h = INFINITY;

	for (int v = 0; v < t->n_nodes; v++)
		if (parent[v] == PLAN_ROOT)
			cur = v;
	if (tmp == NULL)
		return cur;
	/* n re-rootings of O(n * depth): fine for the tree sizes we plan. */
	for (int r = 0; r < t->n_nodes; r++) {
		double h = 0;

		if (parent[r] == PLAN_ABSENT)
			continue;
		for (int v = 0; v < t->n_nodes; v++)
			tmp[v] = parent[v];
		graph_reroot(t, tmp, r);
		for (int v = 0; v < t->n_nodes; v++) {
			double d;

			if (tmp[v] == PLAN_ABSENT)
				continue;
			d = depth_ms(t, tmp, v);
			if (d > h)
				h = d;
		}
		if (h < best_h - 1e-12) {
			best_h = h;
			best = r;
		}
	}
	free(tmp);
	if (best >= 0 && best != cur)
		graph_reroot(t, parent, best);
	return best >= 0 ? best : cur;
}

void
graph_prune_relay_leaves(const struct topo *t, int *parent)
{
	bool changed = true;
	int *children = calloc((size_t)t->n_nodes, sizeof(*children));

	if (children == NULL)
		return;
	while (changed) {
		changed = false;
		for (int v = 0; v < t->n_nodes; v++)
			children[v] = 0;
		for (int v = 0; v < t->n_nodes; v++)
			if (parent[v] >= 0)
				children[parent[v]]++;
		for (int v = 0; v < t->n_nodes; v++) {
			if (parent[v] == PLAN_ABSENT || t->nodes[v].workers > 0 || children[v] > 0)
				continue;
			if (parent[v] == PLAN_ROOT)
				continue;
			parent[v] = PLAN_ABSENT;
			changed = true;
		}
	}
	/* A relay root with a single child hands the root to that child. */
	for (;;) {
		int root = -1, only = -1, nchild = 0;

		for (int v = 0; v < t->n_nodes; v++) {
			if (parent[v] == PLAN_ROOT)
				root = v;
		}
		if (root < 0 || t->nodes[root].workers > 0)
			break;
		for (int v = 0; v < t->n_nodes; v++)
			if (parent[v] == root) {
				nchild++;
				only = v;
			}
		if (nchild != 1)
			break;
		parent[only] = PLAN_ROOT;
		parent[root] = PLAN_ABSENT;
	}
	free(children);
}
