/* SPDX-License-Identifier: BSD-3-Clause
 * Graph algorithms over a topology that the planners share: shortest paths by latency,
 * spanning trees under edge weights, tree heights.
 */
#ifndef GEOREDUCE_GRAPH_H
#define GEOREDUCE_GRAPH_H

#include "topo.h"

/** Tie-break added per hop so that among equal-latency paths the one with fewer hops wins. */
#define GRAPH_HOP_EPS_MS 1e-6

/**
 * Dijkstra from src over link latencies (plus GRAPH_HOP_EPS_MS per hop).
 * @param dist  n_nodes entries: latency in ms from src (INFINITY if unreachable).
 * @param pred  n_nodes entries: previous node on the path from src (-1 for src or unreachable).
 * Returns 0 or -ENOMEM.
 */
int graph_shortest_paths(const struct topo *t, int src, double *dist, int *pred);

/**
 * The nodes of the shortest path from src to dst (both included) into path[], which must
 * hold n_nodes entries. Returns the number of nodes on the path, or a negative errno
 * (-ENOENT if dst is unreachable).
 */
int graph_route(const struct topo *t, int src, int dst, int *path);

/**
 * Minimum spanning tree by Prim under per-link weights w[] (links with w = INFINITY are
 * unusable), rooted at root. parent[] receives PLAN_ROOT for root and the parent index for
 * every other node. Returns 0, -ENOENT if the usable links do not span all nodes, or
 * -ENOMEM.
 */
int graph_min_spanning_tree(const struct topo *t, const double *w, int root, int *parent);

/**
 * Re-root a tree given by parent[] (PLAN_ROOT / PLAN_ABSENT / index) at new_root, in place.
 * new_root must be in the tree.
 */
void graph_reroot(const struct topo *t, int *parent, int new_root);

/**
 * Choose the root that minimises the tree's latency-weighted height and re-root there.
 * Returns the new root.
 */
int graph_center_root(const struct topo *t, int *parent);

/**
 * Remove relay nodes (workers == 0) that are leaves of the tree, repeatedly: they carry no
 * gradient and only consume capacity. The root is never removed if it is the only node.
 */
void graph_prune_relay_leaves(const struct topo *t, int *parent);

#endif
