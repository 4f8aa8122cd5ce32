/* SPDX-License-Identifier: BSD-3-Clause
 *
 * Fast path: the aggregation of georeduce packets (fastpath/agg.c). Worker lcores only.
 */
#ifndef GEOREDUCE_DP_AGG_H
#define GEOREDUCE_DP_AGG_H

#include <rte_mbuf.h>

#include "dp.h"
#include "wire.h"

/**
 * Handle a georeduce packet whose frame and header passed validation (p is its decoded
 * header; m a single-segment frame addressed to this gateway, received on port index
 * port), of any type but PROBE, PROBE_REPLY (rx.c), MCAST and NACK_MCAST (mcast.h): table
 * checks, then the slot state machine, or loss recovery for ACK, NACK_CONTRIB and
 * NACK_RESULT (retx.h). Consumes m (kept in a slot, sent on, or freed and counted).
 */
void dp_agg_rx(struct dp_lcore *lc, const struct dp_state *st, struct rte_mbuf *m,
	       const struct wire_pkt *p, uint16_t port);

/**
 * Complete the chunks whose grace window ran out (a partial reduce that reached its
 * threshold, docs/DATAPLANE.md "Quorum") with the contributions they have. Once per
 * iteration, in every job and epoch the lcore sees.
 */
void dp_agg_grace(struct dp_lcore *lc, const struct dp_state *st);

#endif
