/* SPDX-License-Identifier: BSD-3-Clause
 *
 * Fast path: receiving and classifying frames (fastpath/rx.c): ARP, ICMP echo, georeduce
 * over UDP (plain, or sealed on a protected link), anything else. Worker lcores only.
 */
#ifndef GEOREDUCE_DP_RX_H
#define GEOREDUCE_DP_RX_H

#include <stddef.h>
#include <stdint.h>

#include <rte_mbuf.h>

#include "dp.h"

/** Process one received frame m from port index port: classify it, answer ARP and ICMP
 * echo, take georeduce packets on (sealed ones are queued to be opened). Consumes m. */
void dp_rx_one(struct dp_lcore *lc, const struct dp_state *st, struct rte_mbuf *m, uint16_t port);

/** The rest of dp_rx_one() for a plain georeduce packet of plen bytes at frame offset 42:
 * decode, PROBEs, then aggregation or multicast. Consumes m. */
void dp_rx_packet(struct dp_lcore *lc, const struct dp_state *st, struct rte_mbuf *m, uint16_t port,
		  size_t plen);

/** Open the sealed frames queued since the last call (dp_open_flush(), one cryptodev
 * burst) and take each that verified on as a plain packet (dp_rx_packet()). After every
 * burst received. */
void dp_rx_open_flush(struct dp_lcore *lc, const struct dp_state *st);

#endif
