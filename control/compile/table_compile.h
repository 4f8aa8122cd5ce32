/* SPDX-License-Identifier: BSD-3-Clause
 *
 * The table compiler of the control side: from a topology, a plan and a deployment, the
 * forwarding table (lib/table.h) of each gateway for one job at one epoch, with the chunk
 * split among the plan's trees and the slot pools sized from each tree's rate and hold
 * time. Only the control process and the offline tools link it; the dataplane parses the
 * tables it produces and knows nothing of plans. table_compile.c compiles the tables,
 * table_seal.c gives their protected links keys (table_seal_links()).
 */
#ifndef GEOREDUCE_TABLE_COMPILE_H
#define GEOREDUCE_TABLE_COMPILE_H

#include <stdbool.h>
#include <stdint.h>

#include "plan.h"
#include "table.h"
#include "topo.h"

/** Most gateways of one site (table_deploy_node.n_gateways). */
#define TABLE_SITE_GATEWAYS_MAX (TABLE_SHARDS_MAX + 1)

/**
 * One topology node of a deployment (table_compile()): its gateway or gateways and the
 * job's workers. With several gateways, gateway j of g holds the j-th of g equal parts of
 * the tensor's chunks (its shard: chunks floor(j C / g) .. floor((j + 1) C / g) - 1), and
 * the site's workers send each chunk to the gateway that holds it.
 */
struct table_deploy_node {
	uint16_t gateway_id; /* the site's gateway: unique, 1 .. TABLE_ID_MAX */
	uint32_t ipv4;       /* host order */
	uint16_t base_port;
	uint16_t ports;
	int n_workers; /* the job's workers at this site, 0 .. TABLE_WORKERS_MAX */
	const struct table_worker *workers;
	/* Several gateways: 0 means the one above; 1 .. TABLE_SITE_GATEWAYS_MAX, the site's
	 * gateways in shard order (the fields above are then unused). */
	int n_gateways;
	const struct table_gw *gateways;
};

/**
 * What table_compile() needs besides the topology and the plan: per topology node (same
 * indices) the gateway and the job's local workers, and the tensor. Worker ids are unique
 * across the deployment and distinct from every gateway id. A node's worker count need
 * not equal the topology's `workers` (a job may use part of a site), but a node with
 * workers must be present in every tree of the plan.
 */
struct table_deploy {
	int n_nodes; /* == topology n_nodes */
	const struct table_deploy_node *nodes;
	uint64_t elements; /* tensor elements, >= 1 */
	enum table_dtype dtype;
	enum table_dtype lan_dtype; /* the local workers' CONTRIBs (table.lan_dtype); 0: dtype */
	uint32_t chunk_bytes;       /* payload bytes per chunk: a multiple of the dtype size,
				   * <= TABLE_CHUNK_BYTES_MAX */
	uint32_t slots_min;         /* floor of the slot formula; 0: TABLE_SLOTS_MIN */
	uint32_t slots_max;         /* cap of the slot formula, rounded down to a power of
				   * two: limits.max_slots; 0: TABLE_SLOTS_MAX */
	uint8_t cset_blocks;        /* contributor sets in the job's packets; 0: none */
	uint32_t min_workers;       /* partial reduce: every root completes a chunk at this
				   * many worker contributions (its threshold); 0: all.
				   * Needs cset_blocks >= 1 */
	uint32_t grace_ms;          /* with min_workers: the roots' grace window (its bound
				   * if grace_adaptive); 0: none */
	bool grace_adaptive;
};

/**
 * Compile the table of the gateway at topology node `node` for job `job` at plan epoch
 * `epoch`.
 *
 * The plan is checked with plan_validate(). Chunks are split among the plan's trees with
 * table_split_chunks(); trees that get no chunk appear in no table. In each tree, nodes
 * whose subtree holds no worker of the deployment are pruned (a relay leaf would never
 * contribute), so a node with no workers appears only as a root or interior with gateway
 * children. A node absent from (or pruned out of) every tree gets a valid table with no
 * trees. Slot pools follow table_slots() with hold time table_hold_ms(). Each child
 * gateway's entry counts the workers of its subtree; with contributor sets
 * (d->cset_blocks >= 1) it lists them as well.
 *
 * @return  The table, or NULL with a one-line message in err naming the input field and
 *          errno EINVAL (bad input), E2BIG (a table limit exceeded) or ENOMEM.
 */
struct table *
table_compile(const struct topo *t, const struct plan *p, const struct table_deploy *d, int node,
	      uint32_t job, uint32_t epoch, char *err, size_t errlen);

/**
 * table_compile() of gateway `gw` (0 .. n_gateways - 1) of topology node `node`; gateway 0
 * of a node is what table_compile() compiles.
 *
 * Where a node has several gateways, the chunks are cut into segments at every boundary of
 * every node's shards (docs/TABLES.md, "Several gateways per site"), and every plan tree
 * runs in every segment: segment k's copy of plan tree i has tree id k * p->n_trees + i,
 * carries the segment's chunks that table_split_chunks() gives tree i within it, at rate
 * rate_gbps * (the segment's chunks / all chunks), and at every node runs through the
 * gateway holding the segment there. With one gateway per node there is one segment and
 * the tables are exactly those of a single gateway per site. A gateway with local workers
 * at a node with several gateways lists the others with their trees (`shards`).
 *
 * @return  As table_compile(); E2BIG also when a site's gateways together carry more than
 *          TABLE_TREES_MAX trees.
 */
struct table *
table_compile_gateway(const struct topo *t, const struct plan *p, const struct table_deploy *d,
		      int node, int gw, uint32_t job, uint32_t epoch, char *err, size_t errlen);

/**
 * The gateway (index in the node's gateways) of node `node` that holds chunk c of n_chunks
 * when the node has g gateways: the j with floor(j n / g) <= c < floor((j + 1) n / g).
 */
int table_shard_of(uint64_t c, uint64_t n_chunks, int g);

/**
 * Split n_chunks chunks among the plan's trees in proportion to their shares: largest
 * remainder rounding (ties to the lower tree index), then every tree with share > 0 that
 * got none takes one chunk from the tree holding most (ties: lower index) while there are
 * at least as many chunks as such trees. Tree i carries chunks first[i] .. first[i] +
 * count[i] - 1, in tree order, so the ranges partition [0, n_chunks).
 *
 * @param first, count  p->n_trees entries each.
 * @return  0, or -EINVAL if a share is negative or not finite or all shares are zero.
 */
int table_split_chunks(const struct plan *p, uint32_t n_chunks, uint32_t *first, uint32_t *count);

/**
 * How long a slot of tree tr at node v stays busy (ms), from the first contribution of
 * a chunk to the result forwarded down: 2 * (up + down), where up is the one-way latency
 * from v to the root along the tree (the partial sum goes up, the result comes back) and
 * down the largest one-way latency from v to a contributing node of its subtree plus
 * that site's LAN latency (the spread of the contributions' arrivals, doubled for a
 * retransmission), or, if longer, the tree's height (the largest one-way latency of a
 * worker's LAN and its site to the root) plus up plus v's own LAN latency if v has
 * workers: the way of the last contribution to the root and of the RESULT back to v's
 * workers, which near the root of a tall tree is well above the first.
 * in_tree[u] says which nodes count (NULL: every mapped node);
 * has_workers[u] whether u's LAN latency applies (NULL: topology workers > 0).
 *
 * @return  The hold time, or -1 if v is not in the tree or its parent chain is broken.
 */
double table_hold_ms(const struct topo *t, const struct plan_tree *tr, int v, const bool *in_tree,
		     const bool *has_workers);

/**
 * The slot pool formula: the bandwidth-delay product of the tree's rate over the hold
 * time in chunks, ceil(rate_gbps * 1e9 / 8 * hold_ms / 1e3 / chunk_bytes), rounded up to a
 * power of two and clamped to [slots_min, slots_max]. slots_min is rounded up and
 * slots_max down to a power of two (0 means 1 and TABLE_SLOTS_MAX; slots_max is at most
 * TABLE_SLOTS_MAX); if the floor exceeds the cap the cap wins. A rate or hold time that
 * is not a finite number >= 0, or chunk_bytes 0, gives the cap.
 */
uint32_t table_slots(double rate_gbps, double hold_ms, uint32_t chunk_bytes, uint32_t slots_min,
		     uint32_t slots_max);

/**
 * Protect links between the gateways of one job's epoch: tables[] holds the tables of
 * that epoch by node (NULL: no table), gw_ids[] the gateway id of each node. For every
 * pair of nodes u, v whose tables name each other as parent, child, `from` or `to` and for
 * which is_protected(arg, u, v) holds, a fresh key of `aead` and a fresh key id (nonzero),
 * both from getrandom(2), go into the `sealed` entries of both tables (docs/TABLES.md,
 * "Protected links"): a new key per link and epoch. Nothing is logged.
 *
 * @return  0, or -E2BIG (more than TABLE_SEALS_MAX links at one gateway), or -EIO (no
 *          randomness) with err.
 */
int table_seal_links(struct table **tables, int n, const uint16_t *gw_ids,
		     bool (*is_protected)(void *arg, int u, int v), void *arg, enum table_aead aead,
		     char *err, size_t errlen);

#endif
