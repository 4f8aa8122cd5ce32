/* SPDX-License-Identifier: BSD-3-Clause
 *
 * Fast path: selective multicast (docs/PROTOCOL.md section 7.5; fastpath/mcast.c).
 * Worker lcores only.
 */
#ifndef GEOREDUCE_DP_MCAST_H
#define GEOREDUCE_DP_MCAST_H

#include <rte_mbuf.h>

#include "dp.h"
#include "wire.h"

/**
 * Handle an MCAST or NACK_MCAST whose frame and header passed validation (p is its
 * decoded header; m a single-segment frame addressed to this gateway): the job, then the
 * stream and the sender; the copies, or the answers to a NACK_MCAST. Consumes m.
 */
void dp_mcast_rx(struct dp_lcore *lc, const struct dp_state *st, struct rte_mbuf *m,
		 const struct wire_pkt *p);

#endif
