/* SPDX-License-Identifier: BSD-3-Clause
 *
 * Topology model: sites (nodes) and full-duplex WAN links between them, read from and
 * written to the `georeduce-topology/1` JSON format (docs/FORMATS.md).
 *
 * A topology is immutable once loaded. Nodes and links are addressed by dense indices
 * (0 .. n_nodes-1, 0 .. n_links-1) everywhere in the planner; ids appear only at the
 * file boundary. No DPDK here: the planner, the control process and the dataplane share it.
 */
#ifndef GEOREDUCE_TOPO_H
#define GEOREDUCE_TOPO_H

#include <stddef.h>
#include <stdio.h>

#define TOPO_FORMAT "georeduce-topology/1"
#define TOPO_ID_MAX 63      /* bytes of a node id, without the NUL */
#define TOPO_NAME_MAX 127   /* bytes of a topology name, without the NUL */
#define TOPO_NODES_MAX 4096 /* larger inputs are rejected, not truncated */
#define TOPO_LINKS_MAX 65536

#define TOPO_DEFAULT_WORKERS 1
#define TOPO_DEFAULT_GATEWAYS 1
#define TOPO_DEFAULT_LAN_GBPS 100.0
#define TOPO_DEFAULT_LAN_LATENCY_MS 0.05

/** Longest message topo_load() and friends write into their error buffer. */
#define TOPO_ERR_MAX 512

struct topo_node {
	char id[TOPO_ID_MAX + 1];
	int workers;     /* >= 0; 0 means a pure relay site */
	int gateways;    /* >= 1 */
	double lan_gbps; /* worker <-> gateway, per worker */
	double lan_latency_ms;
};

struct topo_link {
	int a, b;          /* node indices, a != b */
	double gbps_ab;    /* capacity a -> b, > 0 */
	double gbps_ba;    /* capacity b -> a, > 0 */
	double latency_ms; /* one-way propagation delay, >= 0 */
};

/* One entry of a node's adjacency list. */
struct topo_adj {
	int node; /* the neighbour */
	int link; /* index into topo.links */
};

struct topo {
	char name[TOPO_NAME_MAX + 1];
	int n_nodes;
	int n_links;
	struct topo_node *nodes;
	struct topo_link *links;
	/* Adjacency in CSR form, built by topo_finalize(): the neighbours of node v are
	 * adj[adj_off[v]] .. adj[adj_off[v + 1] - 1]. */
	int *adj_off;
	struct topo_adj *adj;
};

/**
 * Parse and validate a topology document.
 *
 * @param text  NUL-terminated JSON text.
 * @param src   Name used in error messages (a file path, or "<string>").
 * @param err   Receives one line naming src, line:column or field, and the problem.
 * @return      The topology, or NULL with err filled (errno EINVAL, or ENOMEM).
 */
struct topo *topo_parse(const char *text, const char *src, char *err, size_t errlen);

/** Read a file and topo_parse() it; "-" reads standard input. NULL with err on failure. */
struct topo *topo_load(const char *path, char *err, size_t errlen);

/**
 * Build a topology from arrays (importers, tests, generators). Copies everything and
 * validates exactly as the parser does. NULL with err on failure.
 */
struct topo *topo_create(const char *name, int n_nodes, const struct topo_node *nodes, int n_links,
			 const struct topo_link *links, char *err, size_t errlen);

/** Write the topology as `georeduce-topology/1` JSON. Returns 0 or a negative errno. */
int topo_write(const struct topo *t, FILE *out);

void topo_free(struct topo *t);

/** Index of the node with this id, or -1. */
int topo_node_index(const struct topo *t, const char *id);

/** Index of the link between nodes u and v (either orientation), or -1. */
int topo_link_between(const struct topo *t, int u, int v);

/** Capacity of link l in the direction leaving node `from` (Gbit/s). */
double topo_link_gbps_from(const struct topo *t, int l, int from);

/** Smaller of the two directional capacities: what a tree edge may carry (it uses both). */
double topo_link_duplex_gbps(const struct topo *t, int l);

/** Number of nodes with workers > 0. */
int topo_worker_sites(const struct topo *t);

#endif
