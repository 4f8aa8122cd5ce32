/* SPDX-License-Identifier: BSD-3-Clause
 *
 * AllReduce simulator (sim.h): tree plans, rings and parameter servers compiled into chunk
 * transfers over single directed links, with the dependencies that release them, and run
 * by the engine in sim_engine.c (the model is described there). Every builder counts the
 * link transfers of its schedule before creating any and refuses more than
 * SIM_MAX_TRANSFERS.
 */
#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "graph.h"
#include "sim.h"
#include "sim_engine.h"

/* ------------------------------------------------------------------------------------ */
/* Chunks and chains of transfers                                                       */

/**
 * Add `len` link transfers of `bytes` along flows[0..len-1], each depending on the
 * previous one, the first on `pred` (SIM_NONE: none). The last id goes to *last.
 */
static int
sim_chain_add(struct sim *s, const int *flows, int len, double bytes, uint32_t pred, uint32_t *last)
{
	for (int h = 0; h < len; h++) {
		uint32_t x;
		int rc = sim_xfer_add(s, (uint32_t)flows[h], bytes, &x);

		if (rc == 0 && pred != SIM_NONE)
			rc = sim_dep_add(s, pred, x);
		if (rc != 0)
			return rc;
		pred = x;
	}
	*last = pred;
	return 0;
}

/**
 * Number of chunks of at most chunk_bytes carrying `bytes` (a double: shares and ring
 * segments are fractional). A last chunk smaller than a billionth of a chunk is
 * rounding noise and is merged into the previous one.
 */
static double
sim_n_chunks(double bytes, uint64_t chunk_bytes)
{
	double n;

	if (!(bytes > 0))
		return 0;
	n = ceil(bytes / (double)chunk_bytes - 1e-9);
	return n < 1 ? 1 : n;
}

/* Size of chunk j of n carrying `bytes`. */
static double
sim_chunk_size(double bytes, uint64_t chunk_bytes, uint64_t j, uint64_t n)
{
	return j + 1 < n ? (double)chunk_bytes : bytes - (double)(n - 1) * (double)chunk_bytes;
}

/* ------------------------------------------------------------------------------------ */
/* Tree plans                                                                            */

/*
 * Structural checks sim_plan() needs: root and parent[] consistent, child-parent pairs
 * adjacent, no cycles, share in [0, 1], chunk_bytes > 0, a positive rate if paced.
 * Capacities, the share sum and worker coverage are plan_validate()'s business: the
 * simulator runs over-committed or partial plans as they are. state[] has n_nodes entries.
 */
static int
sim_check_tree(const struct topo *t, const struct plan_tree *tr, bool pace, uint8_t *state,
	       int *path)
{
	int n = t->n_nodes;

	if (tr->parent == NULL || tr->root < 0 || tr->root >= n ||
	    tr->parent[tr->root] != PLAN_ROOT || tr->chunk_bytes == 0 ||
	    !(tr->share >= 0 && tr->share <= 1))
		return -EINVAL;
	if (pace && tr->share > 0 && !(isfinite(tr->rate_gbps) && tr->rate_gbps > 0))
		return -EINVAL;
	/* state: 0 unseen, 1 on the current walk, 2 known to reach the root. */
	memset(state, 0, (size_t)n);
	state[tr->root] = 2;
	for (int v = 0; v < n; v++) {
		int len = 0, u = v;

		if (tr->parent[v] == PLAN_ABSENT)
			continue;
		while (state[u] == 0) {
			int p = tr->parent[u];

			if (p < 0 || p >= n || topo_link_between(t, u, p) < 0)
				return -EINVAL; /* a second root, or a bad parent */
			state[u] = 1;
			path[len++] = u;
			u = p;
		}
		if (state[u] == 1)
			return -EINVAL; /* cycle */
		while (len > 0)
			state[path[--len]] = 2;
	}
	return 0;
}

/* Transfers of tree tr for a tensor of `bytes`: two per edge per chunk. */
static double
sim_tree_transfers(const struct topo *t, const struct plan_tree *tr, double bytes)
{
	int edges = 0;

	for (int v = 0; v < t->n_nodes; v++)
		if (tr->parent[v] >= 0)
			edges++;
	return 2.0 * edges * sim_n_chunks(tr->share * bytes, tr->chunk_bytes);
}

/* Compile tree tr into s. up[] and dn[] are n_nodes-entry scratch arrays. */
static int
sim_build_tree(struct sim *s, const struct plan_tree *tr, bool pace, double bytes, uint32_t *up,
	       uint32_t *dn)
{
	const struct topo *t = s->t;
	double tree_bytes = tr->share * bytes, cap = pace ? tr->rate_gbps * 1e9 / 8 : INFINITY;
	uint64_t n_chunks = (uint64_t)sim_n_chunks(tree_bytes, tr->chunk_bytes);
	int *f_up, *f_dn, rc = 0;

	if (n_chunks == 0)
		return 0;
	f_up = malloc(sizeof(*f_up) * (size_t)t->n_nodes);
	f_dn = malloc(sizeof(*f_dn) * (size_t)t->n_nodes);
	if (f_up == NULL || f_dn == NULL) {
		rc = -ENOMEM;
		goto out;
	}
	/* Two flows per tree edge: reduce (v -> parent) and broadcast (parent -> v). */
	for (int v = 0; v < t->n_nodes; v++) {
		if (tr->parent[v] < 0)
			continue;
		f_up[v] = sim_flow_add(s, v, tr->parent[v], cap);
		if (f_up[v] < 0) {
			rc = f_up[v];
			goto out;
		}
		f_dn[v] = sim_flow_add(s, tr->parent[v], v, cap);
		if (f_dn[v] < 0) {
			rc = f_dn[v];
			goto out;
		}
	}
	/* Chunk-major numbering keeps each flow's transfers in chunk order. */
	for (uint64_t j = 0; j < n_chunks; j++) {
		double b = sim_chunk_size(tree_bytes, tr->chunk_bytes, j, n_chunks);
		uint32_t join;

		for (int v = 0; v < t->n_nodes; v++) {
			if (tr->parent[v] < 0)
				continue;
			rc = sim_xfer_add(s, (uint32_t)f_up[v], b, &up[v]);
			if (rc != 0)
				goto out;
		}
		/* The root holds chunk j reduced once it arrived from all of its children. */
		rc = sim_xfer_add(s, SIM_NONE, 0, &join);
		if (rc != 0)
			goto out;
		for (int v = 0; v < t->n_nodes; v++) {
			int p = tr->parent[v];

			if (p < 0)
				continue;
			rc = sim_dep_add(s, up[v], p == tr->root ? join : up[p]);
			if (rc != 0)
				goto out;
		}
		for (int v = 0; v < t->n_nodes; v++) {
			if (tr->parent[v] < 0)
				continue;
			rc = sim_xfer_add(s, (uint32_t)f_dn[v], b, &dn[v]);
			if (rc != 0)
				goto out;
		}
		for (int v = 0; v < t->n_nodes; v++) {
			int p = tr->parent[v];

			if (p < 0)
				continue;
			rc = sim_dep_add(s, p == tr->root ? join : dn[p], dn[v]);
			if (rc != 0)
				goto out;
		}
	}
out:
	free(f_up);
	free(f_dn);
	return rc;
}

int
sim_plan(const struct topo *t, const struct plan *p, uint64_t bytes, const struct sim_params *sp,
	 struct sim_result *res)
{
	uint32_t *up = NULL, *dn = NULL;
	uint8_t *state = NULL;
	int *path = NULL;
	double total = 0;
	struct sim s;
	int rc;

	if (t == NULL || p == NULL || res == NULL || sim_check_params(sp) != 0 ||
	    p->n_nodes != t->n_nodes || p->n_trees < 0 || (p->n_trees > 0 && p->trees == NULL))
		return -EINVAL;
	rc = sim_init(&s, t, sp);
	if (rc != 0)
		goto out;
	up = malloc(sizeof(*up) * ((size_t)t->n_nodes + 1));
	dn = malloc(sizeof(*dn) * ((size_t)t->n_nodes + 1));
	state = malloc((size_t)t->n_nodes + 1);
	path = malloc(sizeof(*path) * ((size_t)t->n_nodes + 1));
	if (up == NULL || dn == NULL || state == NULL || path == NULL) {
		rc = -ENOMEM;
		goto out;
	}
	for (int i = 0; i < p->n_trees; i++) {
		rc = sim_check_tree(t, &p->trees[i], sp->pace, state, path);
		if (rc != 0)
			goto out;
		total += sim_tree_transfers(t, &p->trees[i], (double)bytes);
	}
	if (total > SIM_MAX_TRANSFERS) {
		rc = -E2BIG;
		goto out;
	}
	for (int i = 0; i < p->n_trees; i++) {
		rc = sim_build_tree(&s, &p->trees[i], sp->pace, (double)bytes, up, dn);
		if (rc != 0)
			goto out;
	}
	rc = sim_run(&s, res);
out:
	free(up);
	free(dn);
	free(state);
	free(path);
	sim_fini(&s);
	return rc;
}

/* ------------------------------------------------------------------------------------ */
/* Routes (ring, parameter server)                                                       */

/* A set of node paths, each with the flows of its hops. */
struct sim_routes {
	int n;       /* paths */
	size_t *off; /* path r: node[off[r] .. off[r+1]), n + 1 entries */
	int *node;
	int *flow; /* flow[off[r] + h]: hop h of path r (last entry unused) */
	size_t len, cap;
};

static void
sim_routes_fini(struct sim_routes *r)
{
	free(r->off);
	free(r->node);
	free(r->flow);
}

static int
sim_routes_init(struct sim_routes *r, int n_paths)
{
	memset(r, 0, sizeof(*r));
	r->off = calloc((size_t)n_paths + 1, sizeof(*r->off));
	return r->off == NULL ? -ENOMEM : 0;
}

/* Append path[0..len) as the next path. */
static int
sim_routes_add(struct sim_routes *r, const int *path, int len)
{
	if (r->len + (size_t)len > r->cap) {
		size_t n = sim_grow_to(r->cap, r->len + (size_t)len);

		if (sim_regrow(&r->node, n, sizeof(*r->node)) != 0 ||
		    sim_regrow(&r->flow, n, sizeof(*r->flow)) != 0)
			return -ENOMEM;
		r->cap = n;
	}
	memcpy(&r->node[r->len], path, sizeof(*path) * (size_t)len);
	r->len += (size_t)len;
	r->off[++r->n] = r->len;
	return 0;
}

static int
sim_route_hops(const struct sim_routes *r, int i)
{
	return (int)(r->off[i + 1] - r->off[i]) - 1;
}

/* ------------------------------------------------------------------------------------ */
/* Ring                                                                                  */

/*
 * One ring direction over ord[0..m) carrying `bytes` (the share of the tensor on this
 * ring): 2(m-1) steps; at step s member i sends its segment, in chunks, to member i+1 over
 * route i. Chunk j of step s > 0 leaves member i once chunk j of step s-1 arrived from
 * member i-1. All transfers of the direction on one directed link share one flow.
 */
static int
sim_build_ring(struct sim *s, const struct sim_routes *rt, int m, double bytes,
	       uint64_t chunk_bytes, int *dl_flow)
{
	double seg = bytes / m;
	uint64_t n_chunks = (uint64_t)sim_n_chunks(seg, chunk_bytes);
	uint32_t *prev = NULL, *cur = NULL;
	int rc = 0;

	if (n_chunks == 0)
		return 0;
	for (uint32_t d = 0; d < s->n_dl; d++)
		dl_flow[d] = -1;
	for (int i = 0; i < m; i++)
		for (size_t k = rt->off[i]; k + 1 < rt->off[i + 1]; k++) {
			int u = rt->node[k], v = rt->node[k + 1], l = topo_link_between(s->t, u, v);
			uint32_t d = 2 * (uint32_t)l + (u == s->t->links[l].a ? 0 : 1);

			if (dl_flow[d] < 0) {
				dl_flow[d] = sim_flow_add(s, u, v, INFINITY);
				if (dl_flow[d] < 0)
					return dl_flow[d];
			}
			rt->flow[k] = dl_flow[d];
		}
	prev = malloc(sizeof(*prev) * (size_t)m * n_chunks);
	cur = malloc(sizeof(*cur) * (size_t)m * n_chunks);
	if (prev == NULL || cur == NULL) {
		rc = -ENOMEM;
		goto out;
	}
	for (int step = 0; step < 2 * (m - 1); step++) {
		uint32_t *tmp;

		for (int i = 0; i < m; i++) {
			int from = (i + m - 1) % m;

			for (uint64_t j = 0; j < n_chunks; j++) {
				uint32_t pred =
					step > 0 ? prev[(size_t)from * n_chunks + j] : SIM_NONE;

				rc = sim_chain_add(s, &rt->flow[rt->off[i]], sim_route_hops(rt, i),
						   sim_chunk_size(seg, chunk_bytes, j, n_chunks),
						   pred, &cur[(size_t)i * n_chunks + j]);
				if (rc != 0)
					goto out;
			}
		}
		tmp = prev;
		prev = cur;
		cur = tmp;
	}
out:
	free(prev);
	free(cur);
	return rc;
}

/* Path from u to v: the direct link if there is one, else graph_route(). */
static int
sim_ring_path(const struct topo *t, int u, int v, int *path)
{
	if (topo_link_between(t, u, v) >= 0) {
		path[0] = u;
		path[1] = v;
		return 2;
	}
	return graph_route(t, u, v, path);
}

int
sim_ring(const struct topo *t, const int *order, int m, double fwd_fraction, uint64_t bytes,
	 uint64_t chunk_bytes, const struct sim_params *sp, struct sim_result *res)
{
	struct sim_routes rt[2];
	double frac[2] = {fwd_fraction, 1 - fwd_fraction}, total = 0;
	int *path = NULL, *dl_flow = NULL, *ord = NULL;
	uint8_t *seen = NULL;
	struct sim s;
	int rc;

	if (t == NULL || order == NULL || res == NULL || sim_check_params(sp) != 0 || m < 1 ||
	    m > t->n_nodes || chunk_bytes == 0 || !(fwd_fraction >= 0 && fwd_fraction <= 1))
		return -EINVAL;
	memset(rt, 0, sizeof(rt));
	rc = sim_init(&s, t, sp);
	if (rc != 0)
		goto out;
	seen = calloc((size_t)t->n_nodes, 1);
	path = malloc(sizeof(*path) * (size_t)t->n_nodes);
	ord = malloc(sizeof(*ord) * (size_t)m);
	dl_flow = malloc(sizeof(*dl_flow) * ((size_t)s.n_dl + 1));
	if (seen == NULL || path == NULL || ord == NULL || dl_flow == NULL) {
		rc = -ENOMEM;
		goto out;
	}
	for (int i = 0; i < m; i++) {
		if (order[i] < 0 || order[i] >= t->n_nodes || seen[order[i]]) {
			rc = -EINVAL;
			goto out;
		}
		seen[order[i]] = 1;
	}
	if (m == 1)
		goto run; /* nothing to exchange */
	/* Direction 0 follows order[], direction 1 the reversed ring. */
	for (int dir = 0; dir < 2; dir++) {
		rc = sim_routes_init(&rt[dir], m);
		if (rc != 0)
			goto out;
		if (!(frac[dir] > 0))
			continue;
		for (int i = 0; i < m; i++)
			ord[i] = dir == 0 ? order[i] : order[m - 1 - i];
		for (int i = 0; i < m; i++) {
			int len = sim_ring_path(t, ord[i], ord[(i + 1) % m], path);

			if (len < 0) {
				rc = len;
				goto out;
			}
			rc = sim_routes_add(&rt[dir], path, len);
			if (rc != 0)
				goto out;
		}
		total += 2.0 * (m - 1) * (double)(rt[dir].len - (size_t)m) *
			 sim_n_chunks(frac[dir] * (double)bytes / m, chunk_bytes);
	}
	if (total > SIM_MAX_TRANSFERS) {
		rc = -E2BIG;
		goto out;
	}
	for (int dir = 0; dir < 2; dir++) {
		if (!(frac[dir] > 0))
			continue;
		rc = sim_build_ring(&s, &rt[dir], m, frac[dir] * (double)bytes, chunk_bytes,
				    dl_flow);
		if (rc != 0)
			goto out;
	}
run:
	rc = sim_run(&s, res);
out:
	sim_routes_fini(&rt[0]);
	sim_routes_fini(&rt[1]);
	free(seen);
	free(path);
	free(ord);
	free(dl_flow);
	sim_fini(&s);
	return rc;
}

/* ------------------------------------------------------------------------------------ */
/* Parameter server                                                                      */

int
sim_ps(const struct topo *t, int server, uint64_t bytes, uint64_t chunk_bytes,
       const struct sim_params *sp, struct sim_result *res)
{
	struct sim_routes up, down;
	uint32_t *join = NULL;
	int *path = NULL, n_workers = 0;
	uint64_t n_chunks;
	struct sim s;
	int rc;

	if (t == NULL || res == NULL || sim_check_params(sp) != 0 || server < 0 ||
	    server >= t->n_nodes || chunk_bytes == 0)
		return -EINVAL;
	memset(&up, 0, sizeof(up));
	memset(&down, 0, sizeof(down));
	rc = sim_init(&s, t, sp);
	if (rc != 0)
		goto out;
	path = malloc(sizeof(*path) * (size_t)t->n_nodes);
	if (path == NULL) {
		rc = -ENOMEM;
		goto out;
	}
	rc = sim_routes_init(&up, t->n_nodes);
	if (rc == 0)
		rc = sim_routes_init(&down, t->n_nodes);
	if (rc != 0)
		goto out;
	/* Routes of the worker sites: to the server, and the same path reversed. */
	for (int w = 0; w < t->n_nodes; w++) {
		int len;

		if (w == server || t->nodes[w].workers == 0)
			continue;
		len = graph_route(t, w, server, path);
		if (len < 0) {
			rc = len;
			goto out;
		}
		rc = sim_routes_add(&up, path, len);
		for (int i = 0; i < len / 2; i++) {
			int x = path[i];

			path[i] = path[len - 1 - i];
			path[len - 1 - i] = x;
		}
		if (rc == 0)
			rc = sim_routes_add(&down, path, len);
		if (rc != 0)
			goto out;
		n_workers++;
	}
	n_chunks = (uint64_t)sim_n_chunks(n_workers > 0 ? (double)bytes : 0, chunk_bytes);
	if (2.0 * (double)(up.len - (size_t)n_workers) * (double)n_chunks > SIM_MAX_TRANSFERS) {
		rc = -E2BIG;
		goto out;
	}
	/* One flow per hop of every route: routes share links max-min fairly. */
	for (int r = 0; r < n_workers; r++)
		for (size_t k = up.off[r]; k + 1 < up.off[r + 1]; k++) {
			up.flow[k] = sim_flow_add(&s, up.node[k], up.node[k + 1], INFINITY);
			down.flow[k] = sim_flow_add(&s, down.node[k], down.node[k + 1], INFINITY);
			if (up.flow[k] < 0 || down.flow[k] < 0) {
				rc = up.flow[k] < 0 ? up.flow[k] : down.flow[k];
				goto out;
			}
		}
	join = malloc(sizeof(*join) * (n_chunks + 1));
	if (join == NULL) {
		rc = -ENOMEM;
		goto out;
	}
	/* The server sums chunk j once it arrived from every worker site. */
	for (uint64_t j = 0; j < n_chunks; j++) {
		rc = sim_xfer_add(&s, SIM_NONE, 0, &join[j]);
		if (rc != 0)
			goto out;
	}
	for (int r = 0; r < n_workers; r++)
		for (uint64_t j = 0; j < n_chunks; j++) {
			double b = sim_chunk_size((double)bytes, chunk_bytes, j, n_chunks);
			uint32_t last;

			rc = sim_chain_add(&s, &up.flow[up.off[r]], sim_route_hops(&up, r), b,
					   SIM_NONE, &last);
			if (rc == 0)
				rc = sim_dep_add(&s, last, join[j]);
			if (rc != 0)
				goto out;
		}
	for (int r = 0; r < n_workers; r++)
		for (uint64_t j = 0; j < n_chunks; j++) {
			double b = sim_chunk_size((double)bytes, chunk_bytes, j, n_chunks);
			uint32_t last;

			rc = sim_chain_add(&s, &down.flow[down.off[r]], sim_route_hops(&down, r), b,
					   join[j], &last);
			if (rc != 0)
				goto out;
		}
	rc = sim_run(&s, res);
out:
	sim_routes_fini(&up);
	sim_routes_fini(&down);
	free(join);
	free(path);
	sim_fini(&s);
	return rc;
}
