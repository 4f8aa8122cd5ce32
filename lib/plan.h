/* SPDX-License-Identifier: BSD-3-Clause
 *
 * Plan model: the trees of a tree-based AllReduce over a topology, with the rate, share
 * and chunk size of each, as written to and read from `georeduce-plan/1` JSON
 * (docs/FORMATS.md), and the validity rules every plan obeys (plan_validate()).
 */
#ifndef GEOREDUCE_PLAN_H
#define GEOREDUCE_PLAN_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <jansson.h>

#include "topo.h"

#define PLAN_FORMAT "georeduce-plan/1"
#define PLAN_ALGO_MAX 31
#define PLAN_TREES_MAX 4096

/* Values of plan_tree.parent[] besides a node index. */
#define PLAN_ROOT (-1)   /* the tree's root */
#define PLAN_ABSENT (-2) /* node not in this tree (only relays may be absent) */

/** Relative slack allowed when checking capacities and share sums. */
#define PLAN_EPS 1e-6

struct plan_tree {
	int root;
	double rate_gbps;
	double share;
	uint64_t chunk_bytes;
	int *parent; /* n_nodes entries: node index, PLAN_ROOT or PLAN_ABSENT */
};

struct plan {
	char algorithm[PLAN_ALGO_MAX + 1];
	char topology[TOPO_NAME_MAX + 1];
	int n_nodes; /* size of every parent[] */
	int n_trees;
	int cap; /* allocated entries of trees[] */
	struct plan_tree *trees;
	uint64_t bytes; /* predicted.bytes, 0 if no prediction */
	double allreduce_seconds;
	json_t *extra; /* further top-level sections, merged on write; owned */
};

/** An empty plan for a topology of n_nodes nodes with room for cap trees. NULL on ENOMEM. */
struct plan *plan_create(const char *algorithm, const struct topo *t, int cap);

/**
 * Append a tree (parent[] is copied). Returns the tree index or a negative errno.
 */
int plan_add_tree(struct plan *p, int root, double rate_gbps, const int *parent);

/** Set every share to rate / sum(rates). Returns -EINVAL if the rates sum to zero. */
int plan_shares_from_rates(struct plan *p);

/** Sum of tree rates: the plan's aggregate AllReduce rate in Gbit/s. */
double plan_total_rate(const struct plan *p);

/** Latency-weighted height of tree i: the largest root-to-node path latency (ms). */
double plan_tree_height_ms(const struct topo *t, const struct plan_tree *tr);

/** Depth of tree i in hops: the largest number of edges on a root-to-node path. */
int plan_tree_depth(const struct topo *t, const struct plan_tree *tr);

/**
 * Check the spec's rules: every worker site in every tree, child-parent pairs are links,
 * every mapped node reaches the root without cycles, per-direction link load within
 * capacity, shares in [0, 1] summing to 1, chunk_bytes > 0, and (if max_height_ms > 0)
 * every tree's height within it. Returns 0, or -EINVAL with the first violation in err.
 */
int plan_validate(const struct topo *t, const struct plan *p, double max_height_ms, char *err,
		  size_t errlen);

/** The plan as a `georeduce-plan/1` JSON object (new reference), NULL on ENOMEM. */
json_t *plan_to_json(const struct topo *t, const struct plan *p);

/** Write `georeduce-plan/1` JSON. Returns 0 or a negative errno. */
int plan_write(const struct topo *t, const struct plan *p, FILE *out);

/**
 * Parse a plan against a topology (node ids resolved to indices). Structural errors
 * only; call plan_validate() for the rules. NULL with err on failure.
 */
struct plan *
plan_parse(const struct topo *t, const char *text, const char *src, char *err, size_t errlen);

/** Read a file and plan_parse() it. */
struct plan *plan_load(const struct topo *t, const char *path, char *err, size_t errlen);

void plan_free(struct plan *p);

#endif
