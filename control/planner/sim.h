/* SPDX-License-Identifier: BSD-3-Clause
 *
 * AllReduce simulator: an alpha-beta cost model with pipelined chunks over a topology with
 * heterogeneous link latencies and capacities, where every transmission on a directed
 * link is a flow and concurrent flows share the link max-min fairly (fluid model).
 *
 * A schedule (tree plan, ring, parameter server) is compiled into chunk transfers over
 * single directed links, each released when the transfers it depends on have arrived.
 * The result is the time from start until every worker site holds the whole reduced
 * tensor. Worker <-> gateway LAN hops inside a site are not modelled (they are two orders
 * of magnitude faster than the WAN in every topology we plan for).
 */
#ifndef GEOREDUCE_SIM_H
#define GEOREDUCE_SIM_H

#include <stdbool.h>
#include <stdint.h>

#include "plan.h"
#include "topo.h"

struct sim_params {
	/* Fixed cost per chunk per hop (header processing, aggregation start-up), seconds;
	 * it delays the chunk's arrival but does not occupy the link. */
	double alpha_s;
	/* Chunks a flow may have in flight on one hop (transmitting or propagating):
	 * 0 = unlimited (a windowed transport that covers the bandwidth-delay product),
	 * 1 = one chunk per link at a time (the pipelining model of the mTree paper). */
	int window;
	/* Cap each tree's flows at the tree's planned rate (pacing) instead of letting them
	 * take any spare capacity max-min fairly. Applies to sim_plan only. */
	bool pace;
};

/** Defaults: alpha 20 us, unlimited window, no pacing. */
#define SIM_PARAMS_DEFAULT                                   \
	{                                                    \
		.alpha_s = 20e-6, .window = 0, .pace = false \
	}
/** The model plans are predicted with: one chunk per hop at a time, as stage 3 assumes. */
#define SIM_PARAMS_PREDICT                                   \
	{                                                    \
		.alpha_s = 20e-6, .window = 1, .pace = false \
	}

struct sim_result {
	double seconds;     /* AllReduce completion time: the latest chunk arrival */
	uint64_t transfers; /* chunk transfers simulated (one chunk over one link) */
	uint64_t events;    /* events processed: arrivals and link completions */
};

/**
 * Simulate a tree plan: every tree carries share * bytes in chunks of its chunk_bytes,
 * reduces towards its root (a node forwards chunk j up once chunk j arrived from all of its
 * children) and broadcasts back down the same edges (a node forwards chunk j down as soon
 * as it arrives). Returns 0 or a negative errno (-EINVAL for an invalid plan, -E2BIG if the
 * schedule would exceed SIM_MAX_TRANSFERS).
 */
int sim_plan(const struct topo *t, const struct plan *p, uint64_t bytes,
	     const struct sim_params *sp, struct sim_result *res);

/**
 * Simulate ring AllReduce (reduce-scatter then all-gather, 2(m-1) steps over the m nodes in
 * order[], each step moving bytes/m per node). Consecutive ring members that are not
 * adjacent are connected over graph_route() paths; intermediate nodes forward. If
 * fwd_fraction < 1, the remaining 1 - fwd_fraction of the tensor runs concurrently on the
 * reversed ring (a bidirectional ring). Returns 0 or a negative errno.
 */
int sim_ring(const struct topo *t, const int *order, int m, double fwd_fraction, uint64_t bytes,
	     uint64_t chunk_bytes, const struct sim_params *sp, struct sim_result *res);

/**
 * Simulate a parameter server at node `server`: every other worker site sends the whole
 * tensor over its graph_route() path to the server, which sums chunk j once it arrived from
 * all of them and sends the result back along the reversed paths. No aggregation on the
 * way. Returns 0 or a negative errno.
 */
int sim_ps(const struct topo *t, int server, uint64_t bytes, uint64_t chunk_bytes,
	   const struct sim_params *sp, struct sim_result *res);

/** Upper bound on transfers in one simulation (memory stays bounded). */
#define SIM_MAX_TRANSFERS (8u << 20)

#endif
