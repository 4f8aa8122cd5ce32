/* SPDX-License-Identifier: BSD-3-Clause
 * Topology generators for the planner tests: complete graphs, paths, random connected
 * graphs. Header-only; every function returns a topology the caller frees, or NULL.
 */
#ifndef GEOREDUCE_TEST_TOPO_GEN_H
#define GEOREDUCE_TEST_TOPO_GEN_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "topo.h"

static inline uint64_t
gen_rand(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

/* Uniform in [lo, hi). */
static inline double
gen_uniform(uint64_t *s, double lo, double hi)
{
	return lo + (hi - lo) * (double)(gen_rand(s) >> 11) / (double)(1ull << 53);
}

static inline void
gen_names(struct topo_node *nodes, int n)
{
	for (int i = 0; i < n; i++) {
		snprintf(nodes[i].id, sizeof(nodes[i].id), "s%d", i);
		nodes[i].workers = 1;
		nodes[i].gateways = 1;
		nodes[i].lan_gbps = TOPO_DEFAULT_LAN_GBPS;
		nodes[i].lan_latency_ms = TOPO_DEFAULT_LAN_LATENCY_MS;
	}
}

/* K_n with every capacity c and latency lat. */
static inline struct topo *
gen_complete(int n, double c, double lat)
{
	struct topo_node *nodes = calloc((size_t)n, sizeof(*nodes));
	struct topo_link *links = calloc((size_t)(n * (n - 1) / 2 + 1), sizeof(*links));
	struct topo *t = NULL;
	char err[TOPO_ERR_MAX];
	int m = 0;

	if (nodes == NULL || links == NULL)
		goto out;
	gen_names(nodes, n);
	for (int i = 0; i < n; i++)
		for (int j = i + 1; j < n; j++)
			links[m++] = (struct topo_link){ i, j, c, c, lat };
	t = topo_create("complete", n, nodes, m, links, err, sizeof(err));
out:
	free(nodes);
	free(links);
	return t;
}

/* A path s0 - s1 - ... with capacities caps[i] on link i and latency lat each. */
static inline struct topo *
gen_path(int n, const double *caps, double lat)
{
	struct topo_node *nodes = calloc((size_t)n, sizeof(*nodes));
	struct topo_link *links = calloc((size_t)n, sizeof(*links));
	struct topo *t = NULL;
	char err[TOPO_ERR_MAX];

	if (nodes == NULL || links == NULL)
		goto out;
	gen_names(nodes, n);
	for (int i = 0; i + 1 < n; i++)
		links[i] = (struct topo_link){ i, i + 1, caps[i], caps[i], lat };
	t = topo_create("path", n, nodes, n - 1, links, err, sizeof(err));
out:
	free(nodes);
	free(links);
	return t;
}

/*
 * A random connected graph: a random spanning tree plus `extra` random links; capacities
 * uniform in [cmin, cmax) (asymmetric when asym), latencies uniform in [0, lmax). Every
 * relay_every-th node (0: none) has no workers.
 */
static inline struct topo *
gen_random(uint64_t seed, int n, int extra, double cmin, double cmax, double lmax, int asym,
	   int relay_every)
{
	int cap = n - 1 + extra, m = 0;
	struct topo_node *nodes = calloc((size_t)n, sizeof(*nodes));
	struct topo_link *links = calloc((size_t)cap + 1, sizeof(*links));
	char *adj = calloc((size_t)n * (size_t)n, 1);
	uint64_t s = seed * 2654435761u + 1;
	struct topo *t = NULL;
	char err[TOPO_ERR_MAX];

	if (nodes == NULL || links == NULL || adj == NULL)
		goto out;
	gen_names(nodes, n);
	if (relay_every > 0)
		for (int i = 1; i < n; i += relay_every)
			nodes[i].workers = 0;
	for (int i = 1; i < n; i++) {
		int j = (int)(gen_rand(&s) % (uint64_t)i);
		double c = gen_uniform(&s, cmin, cmax);

		links[m++] = (struct topo_link){ j, i, c, asym ? gen_uniform(&s, cmin, cmax) : c,
						 gen_uniform(&s, 0, lmax) };
		adj[(size_t)i * (size_t)n + (size_t)j] = adj[(size_t)j * (size_t)n + (size_t)i] = 1;
	}
	for (int tries = 0; m < cap && tries < 100 * cap; tries++) {
		int a = (int)(gen_rand(&s) % (uint64_t)n), b = (int)(gen_rand(&s) % (uint64_t)n);
		double c = gen_uniform(&s, cmin, cmax);

		if (a == b || adj[(size_t)a * (size_t)n + (size_t)b])
			continue;
		adj[(size_t)a * (size_t)n + (size_t)b] = adj[(size_t)b * (size_t)n + (size_t)a] = 1;
		links[m++] = (struct topo_link){ a, b, c, asym ? gen_uniform(&s, cmin, cmax) : c,
						 gen_uniform(&s, 0, lmax) };
	}
	t = topo_create("random", n, nodes, m, links, err, sizeof(err));
out:
	free(nodes);
	free(links);
	free(adj);
	return t;
}

#endif
