/* SPDX-License-Identifier: BSD-3-Clause
 *
 * The tree plans that job planning (jobplan.h) makes itself rather than take from the
 * planner library as they are: the ring baseline run as chain trees, CREW's shares as one
 * star per aggregating site, and the factor by which loads fit the links, which scales
 * them and a selmcast job's streams (jobplan_mcast.h).
 *
 * Control side, single-threaded like jobplan.h. No DPDK.
 */
#ifndef GEOREDUCE_JOBPLAN_TREES_H
#define GEOREDUCE_JOBPLAN_TREES_H

#include <stddef.h>
#include <stdint.h>

#include "plan.h"
#include "topo.h"

/**
 * A tree plan for the ring baseline: the best ring over the worker sites (baseline_ring())
 * as one chain tree per member, rooted at that member and running once round the ring
 * (routes between consecutive members through relays as latency-shortest paths; relay
 * leaves pruned). Each tree gets the largest rate such that every link stays within its
 * duplex capacity when all chains run at once; shares follow rates. This is the ring's
 * reduce-scatter and all-gather, done by tree aggregation. The plan's algorithm is "ring".
 *
 * @return  The plan, or NULL with err filled and errno ENOENT (a route would visit a node
 *          twice, so the ring has no chain form), EINVAL or ENOMEM.
 */
struct plan *jobplan_ring_chains(const struct topo *t, double search_seconds, uint64_t bytes,
				 char *err, size_t errlen);

/**
 * CREW as trees: the shares of crew_solve() with every worker site a member (the group of
 * a round is whoever is ready first, so every site may be in it), and for each site that
 * aggregates a share one star rooted there, whose children are the other member sites.
 * Star i carries S_i bytes at S_i / (X + Y): on the link between member m and aggregator
 * i, star i's scatter and star m's broadcast (or the reverse) need at most
 * bw (X + Y), which is what CREW's shares guarantee, so the plan keeps every link within
 * its capacity.
 *
 * Where an aggregator and a member have no link (a failed one), the aggregator's tree
 * reaches that member over two hops through CREW's relay (crew_pick_relay(): a member if
 * one has both links), or, where no site joins the two, along the latency-shortest route.
 * Relayed chunks load links a star would not, so then the rates of all the trees (one per
 * site that reaches every member) are solved together by the packing LP restricted to
 * them (packing_fixed_rates()): the largest sum with every link within its capacity;
 * trees with the same links share their rate evenly, and trees the LP leaves at 0 are
 * dropped (fewer aggregators). Shares follow rates. NULL with err and errno (ENOENT: no
 * site reaches every member).
 */
struct plan *jobplan_crew_stars(const struct topo *t, uint64_t bytes, char *err, size_t errlen);

/** The largest factor (at most 1) by which loads fit every link direction: load[2 l] a to
 * b of link l, load[2 l + 1] b to a, in Gbit/s. */
double jobplan_link_fit(const struct topo *t, const double *load);

#endif
