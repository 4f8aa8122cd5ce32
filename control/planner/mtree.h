/* SPDX-License-Identifier: BSD-3-Clause
 *
 * mTree: multiple height-bounded trees for AllReduce over a WAN.
 *
 *   Stage 1  candidate trees: GBST (greedy bandwidth spanning trees grown Prim-style under
 *            the height limit, eccentricities kept by GRTH), plus trees found by column
 *            generation under the same limit (beyond the paper: it closes most of the gap to
 *            the packing bound). ITH then searches the smallest height limit that keeps at
 *            least rho of the rate.
 *   Stage 2  rates: a MILP over the candidates (GLPK) with at most K trees, each selected
 *            tree at >= r_min, every link within its duplex capacity. Shares follow rates.
 *   Stage 3  chunk size per tree from the pipelining model (planner_chunk_bytes()).
 */
#ifndef GEOREDUCE_MTREE_H
#define GEOREDUCE_MTREE_H

#include <stdbool.h>
#include <stdint.h>

#include "plan.h"
#include "topo.h"

struct mtree_opts {
	int max_trees;        /* K; 0: unlimited */
	double max_height_ms; /* H; 0: unlimited */
	double min_rate_gbps; /* r_min; 0: none */
	double rho;           /* ITH: lower the height limit while at least rho of the rate
				 * remains; 0: no ITH search */
	bool paper_only;      /* candidates from GBST alone (no column generation) */
	double milp_seconds;  /* MILP time limit; 0: default 0.5 s */
	uint64_t bytes;       /* tensor size the chunk sizes are planned for */
	int window;           /* transport the chunks are sized for: 0 = windowed (the
				 * latency is hidden, a chunk costs PLANNER_ALPHA_S per hop),
				 * 1 = one chunk per hop at a time (the paper's model: a chunk
				 * costs latency + alpha per hop) */
};

#define MTREE_OPTS_DEFAULT                                   \
	{                                                    \
		.max_trees = 10, .rho = 0, .bytes = 1u << 30 \
	}

struct mtree_stats {
	int candidates;         /* trees considered by the MILP */
	int gbst_trees;         /* of which from GBST */
	int lp_iterations;      /* column generation LP solves (all ITH probes) */
	int ith_probes;         /* height limits tried by ITH */
	double height_limit_ms; /* the limit the final trees were built under (0: none) */
	double lp_rate_gbps;    /* LP rate over the candidates (no K limit) */
	bool milp_optimal;      /* the MILP proved optimality within its time limit */
	double seconds;         /* planning time */
};

/**
 * Plan an mTree AllReduce. Returns a plan (algorithm "mtree", or "mtree-paper" with
 * paper_only) with rates, shares and chunk sizes set and no prediction, or NULL with a
 * one-line reason in err (errno ENOENT: no tree fits the height/rate limits; EINVAL: bad
 * options; ENOMEM; EIO: solver failure).
 */
struct plan *mtree_plan(const struct topo *t, const struct mtree_opts *o, struct mtree_stats *st,
			char *err, size_t errlen);

/**
 * GBST: grow up to max_trees candidate trees on residual capacities (each tree takes its
 * bottleneck from its edges), every tree with latency-weighted radius <= max_height_ms
 * (0: none) and only links with residual >= min_rate_gbps. Appends to pool (rates left 0).
 * Returns the number of trees added or a negative errno.
 */
int mtree_gbst(const struct topo *t, double max_height_ms, double min_rate_gbps, int max_trees,
	       struct plan *pool);

/**
 * Stage 2: choose at most k trees of pool (0: any number) and their rates, each >= r_min,
 * maximising the sum within link capacities. Writes rates into pool (0 = not chosen).
 * Returns 0 (sets *optimal), -ENOENT if nothing feasible, -EIO on solver failure.
 */
int mtree_select(const struct topo *t, struct plan *pool, int k, double r_min, double seconds,
		 bool *optimal);

/**
 * Stage 3: chunk size for v bytes over a round trip of `hops` links whose slowest has
 * latency max_lat_ms, at rate_gbps: mu* = sqrt(a_max * v / ((l - 1) * beta)), clamped to
 * [PLANNER_MIN_CHUNK, v] and rounded up to 4 KiB. The per-hop cost a_max is the latency
 * plus PLANNER_ALPHA_S, the fixed cost of a chunk at a hop, so that zero-latency links
 * still get a finite optimum.
 */
uint64_t planner_chunk_bytes(uint64_t v, double rate_gbps, double max_lat_ms, int hops);

/** Largest link latency (ms) of a tree: what paces its pipeline in the paper's model. */
double planner_tree_max_latency_ms(const struct topo *t, const struct plan_tree *tr);

#define PLANNER_MIN_CHUNK 4096u
/** Fixed per-chunk, per-hop cost of the cost model (seconds): the simulator's default. */
#define PLANNER_ALPHA_S 20e-6

#endif
