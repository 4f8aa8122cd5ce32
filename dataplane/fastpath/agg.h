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
 * port): table checks, then the slot state machine. Consumes m (kept in a slot, sent on,
 * or freed and counted).
 */
void dp_agg_rx(struct dp_lcore *lc, const struct dp_state *st, struct rte_mbuf *m,
	       const struct wire_pkt *p, uint16_t port);

/**
 * Loss recovery towards the parents: send again the partial sums whose RESULT is
 * overdue (or a NACK_RESULT once the parent has acknowledged them). Once per iteration.
 */
void dp_agg_timers(struct dp_lcore *lc, const struct dp_state *st);

#endif
