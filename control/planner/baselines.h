/* SPDX-License-Identifier: BSD-3-Clause
 *
 * Baselines every plan is compared with on the same topology:
 *  - ring: the best bidirectional ring over the worker sites that local search finds,
 *    consecutive members that are not adjacent connected over latency-shortest paths;
 *  - single tree: the maximum-bottleneck spanning tree, rooted at its centre;
 *  - parameter server: every worker site sends to and receives from one site over
 *    shortest paths, at the site where that is fastest.
 * Rates are algorithm bandwidths: tensor bytes over AllReduce time for large tensors, so
 * they compare directly with a tree plan's total rate.
 */
#ifndef GEOREDUCE_BASELINES_H
#define GEOREDUCE_BASELINES_H

#include "plan.h"
#include "topo.h"

struct ring_plan {
	int m;                  /* ring members (the worker sites) */
	int *order;             /* m node indices in ring order */
	double fwd_gbps;        /* bottleneck rate of the forward ring alone */
	double rev_gbps;        /* bottleneck rate of the reversed ring alone */
	double fwd_fraction;    /* share of the tensor on the forward ring */
	double rate_gbps;       /* algorithm bandwidth, m / (2 (m - 1)) over the busiest
				 * link's load per byte with both rings at this split; equal to
				 * (fwd + rev) * m / (2 (m - 1)) when the rings share no link
				 * direction */
	double step_latency_ms; /* largest route latency between consecutive members */
};

/**
 * Search the best ring: maximise the algorithm bandwidth, then minimise total route latency.
 * Deterministic (seeded starts, then 2-opt and node moves until no move improves or
 * time_limit_s passes). Returns 0 or a negative errno; free with ring_plan_fini().
 */
int baseline_ring(const struct topo *t, double time_limit_s, struct ring_plan *rp);

/** Algorithm bandwidth of a given ring order (Gbit/s); fills rp's rates. */
int baseline_ring_eval(const struct topo *t, const int *order, int m, struct ring_plan *rp);

void ring_plan_fini(struct ring_plan *rp);

/**
 * Maximum-bottleneck spanning tree as a one-tree plan (algorithm "single-tree"), its chunk
 * size planned for bytes over the transport `window` (see mtree_opts.window).
 */
struct plan *baseline_single_tree(const struct topo *t, uint64_t bytes, int window);

struct ps_plan {
	int server;            /* node index */
	double rate_gbps;      /* per-worker-site rate: the most loaded link's capacity / load */
	double max_latency_ms; /* longest route to the server */
};

/** Best parameter-server site. Returns 0 or a negative errno. */
int baseline_ps(const struct topo *t, struct ps_plan *ps);

/** Parameter server at a given site. */
int baseline_ps_at(const struct topo *t, int server, struct ps_plan *ps);

#endif
