/* SPDX-License-Identifier: BSD-3-Clause
 *
 * Fast path: transmission. The frames an lcore staged for each port (tx.h, dp_tx_stage())
 * go to the port's TX queue of this lcore in one burst, or through the port's TX faults
 * (fault.c) when fault injection is on. The last step of the packet path: it calls only
 * ethdev and fault.c.
 *
 * Worker lcores only: no allocation, no locks, no syscalls, no logging.
 */
#include <rte_branch_prediction.h>
#include <rte_ethdev.h>
#include <rte_mbuf.h>

#include "dp.h"
#include "fastpath/fault.h"
#include "fastpath/tx.h"

void
dp_tx_flush(struct dp_lcore *lc)
{
	for (unsigned int p = 0; p < lc->dp->n_ports; p++) {
		uint16_t n = lc->tx_n[p], sent;

		if (unlikely(lc->dp->ports[p].fault[DP_TX].on)) {
			dp_fault_tx_flush(lc, (uint16_t)p);
			continue;
		}
		if (n == 0)
			continue;
		sent = rte_eth_tx_burst(lc->dp->ports[p].port_id, (uint16_t)lc->idx, lc->tx[p], n);
		for (uint16_t i = 0; i < sent; i++) {
			lc->ctr[DP_CTR_TX_BYTES] += rte_pktmbuf_pkt_len(lc->tx[p][i]);
		}
		lc->ctr[DP_CTR_TX_PACKETS] += sent;
		if (unlikely(sent < n)) {
			lc->ctr[DP_CTR_TX_DROPPED] += n - sent;
			rte_pktmbuf_free_bulk(&lc->tx[p][sent], n - sent);
		}
		lc->tx_n[p] = 0;
	}
}
