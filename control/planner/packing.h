/* SPDX-License-Identifier: BSD-3-Clause
 *
 * Fractional tree packing by column generation: maximise the sum of tree rates subject to
 * every link carrying at most its duplex capacity (a tree at rate r loads both directions
 * of each of its edges with r). Without a height limit and without relay sites this is the
 * optimal fractional spanning-tree packing, the bound every tree-based AllReduce is
 * reported against. With a height limit, the pricing step is a heuristic and the result is
 * the best packing of height-bounded trees it finds.
 *
 * The tree pool is a struct plan used as a container: callers may seed it with trees, and
 * on return every pool tree's rate_gbps holds its LP value.
 */
#ifndef GEOREDUCE_PACKING_H
#define GEOREDUCE_PACKING_H

#include <stdbool.h>

#include "plan.h"
#include "topo.h"

struct packing_opts {
	double max_height_ms; /* 0: no limit */
	int max_columns;      /* stop adding trees past this pool size; 0: default 4000 */
	double time_limit_s;  /* stop column generation after this long; 0: default 30 */
};

struct packing_result {
	double rate_gbps;  /* LP optimum over the pool: sum of tree rates */
	double upper_gbps; /* a proven upper bound (equals rate_gbps when exact) */
	int iterations;    /* LP solves */
	int columns;       /* trees in the pool */
	bool exact;        /* pricing was exact and converged: rate_gbps is optimal */
};

/**
 * Run column generation on the pool. Returns 0, -ENOENT if no tree satisfies the height
 * limit (or the worker sites cannot be spanned), -EDOM if there are fewer than two worker
 * sites (nothing crosses a link: no finite bound), -ENOMEM, or -EIO if the LP solver
 * failed.
 */
int packing_solve(const struct topo *t, struct plan *pool, const struct packing_opts *opts,
		  struct packing_result *res);

/**
 * Pricing step: the tree of smallest total weight w[] over its links, spanning every worker
 * site, with latency-weighted height within max_height_ms (0: none), relay leaves pruned.
 * Among equal weights, shallower trees and higher-capacity links are preferred.
 * Writes parent[] and returns the weight, or INFINITY if no such tree was found.
 * Exact when max_height_ms == 0 and the topology has no relay sites.
 */
double packing_price(const struct topo *t, const double *w, double max_height_ms, int *parent);

/** Index of the pool tree with the same edge set as parent[] (any root), or -1. */
int packing_pool_find(const struct topo *t, const struct plan *pool, const int *parent);

/**
 * Add a tree to the pool unless its edge set is already there, re-rooted at its centre
 * (parent[] is re-rooted in place). Returns the new index, -EEXIST, or -ENOMEM.
 */
int packing_pool_add(const struct topo *t, struct plan *pool, int *parent);

/**
 * Rates for a fixed set of pool trees (chosen[i]; NULL: all): the packing LP restricted to
 * them, every chosen tree at rate >= r_min, the sum of rates maximised with every link
 * within its duplex capacity. Every pool tree's rate_gbps gets its LP value (0 if not
 * chosen). Returns the sum, or -1 if the LP is infeasible, no tree is chosen, or on
 * failure.
 */
double
packing_fixed_rates(const struct topo *t, struct plan *pool, const bool *chosen, double r_min);

/** Sum of w[] over the links of a tree. */
double packing_tree_weight(const struct topo *t, const int *parent, const double *w);

/** Smallest duplex capacity over the links of a tree: the most it can carry alone. */
double packing_tree_bottleneck(const struct topo *t, const int *parent);

#endif
