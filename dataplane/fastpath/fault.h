/* SPDX-License-Identifier: BSD-3-Clause
 *
 * Fast path: fault injection (--fault), to test loss recovery and to emulate WAN latency
 * on one machine. Off unless configured: a port without faults costs one branch per
 * burst. Worker lcores only.
 */
#ifndef GEOREDUCE_DP_FAULT_H
#define GEOREDUCE_DP_FAULT_H

#include <rte_mbuf.h>

#include "dp.h"

/**
 * Apply the port's RX faults to a received burst in place: drop, duplicate (an indirect
 * copy appended), swap with the next frame. pkts has room for 2 x n frames.
 * @return  The new number of frames.
 */
uint16_t dp_fault_rx(struct dp_lcore *lc, uint16_t port, struct rte_mbuf **pkts, uint16_t n);

/**
 * Send the port's staged frames through its TX faults: drop, duplicate, reorder, then
 * the delay line; transmit what is due. Called from dp_tx_flush() for ports with faults,
 * every iteration (frames leave the delay line even when nothing new is staged).
 */
void dp_fault_tx_flush(struct dp_lcore *lc, uint16_t port);

#endif
