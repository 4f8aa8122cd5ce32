/* SPDX-License-Identifier: BSD-3-Clause
 *
 * Fast path: one iteration of the worker lcore loop. Receive a burst per queue and hand
 * each frame to receive and classify (rx.c), open the burst's sealed frames, then once per
 * iteration the loss-recovery timers (retx.c), the frames sealed meanwhile (seal.c), the
 * pacers (pace.c) and the TX flush (tx.c). The loop around it, with the RCU quiescent
 * state and the idle policy, is dataplane/lcore/loop.c.
 *
 * The packet path, one file per step, calls going one way (down this list):
 *   worker.c   one iteration of the loop
 *   rx.c       receive and classify; PROBE, ARP and ICMP answers
 *   agg.c      aggregation: the slot state machine and the summation
 *   mcast.c    selective multicast
 *   retx.c     loss recovery: timers, resends, ACK/NACK answers
 *   recover.c  result recovery across epochs
 *   send.c     copies of retained packets, control packets, a RESULT down its tree
 *   pace.c     the pacers (pace.h: a frame into its pacer)
 *   seal.c     sealing and opening on protected links
 *   tx.c       TX staging flushed to the ports (tx.h: staging, headers), faults (fault.c)
 * Each file calls only files below it in this list (worker.c several of them, once per
 * iteration); rx.c takes the frames seal.c opened back as a return value, not a call.
 *
 * Worker lcores only: no allocation, no locks, no syscalls, no logging.
 */
#include <rte_branch_prediction.h>
#include <rte_ethdev.h>
#include <rte_mbuf.h>
#include <rte_prefetch.h>
#include <rte_rcu_qsbr.h>
#include <rte_ring.h>

#include "dp.h"
#include "fastpath/agg.h"
#include "fastpath/fault.h"
#include "fastpath/pace.h"
#include "fastpath/retx.h"
#include "fastpath/rx.h"
#include "fastpath/seal.h"
#include "fastpath/tx.h"

/* How many packets ahead of the one handled the header line of a frame is prefetched. */
#define DP_RX_AHEAD 3

/* The two lines of a frame's headers: Ethernet, IPv4 and UDP end at byte 42, the
 * georeduce header at 96. */
static inline void
prefetch_headers(const struct rte_mbuf *m)
{
	const uint8_t *f = rte_pktmbuf_mtod(m, const uint8_t *);

	rte_prefetch0(f);
	rte_prefetch0(f + RTE_CACHE_LINE_SIZE);
}

/* Frames the control thread queued for this port (ARP requests): polled by the lcore that
 * owns RX queue 0 of the port. */
static void
drain_ctl_tx(struct dp_lcore *lc, uint16_t port)
{
	struct rte_mbuf *m[8];
	unsigned int n = rte_ring_sc_dequeue_burst(lc->dp->ports[port].ctl_tx, (void **)m, 8, NULL);

	for (unsigned int i = 0; i < n; i++) {
		lc->ctr[DP_CTR_CTL_TX]++;
		dp_tx_stage(lc, port, m[i]);
	}
}

unsigned int
dp_worker_poll(struct dp_lcore *lc)
{
	struct dp *dp = lc->dp;
	/* The RCU token before the state: frames queued to the cryptodev in this iteration
	 * refer to no state older than the token says (lcore/loop.c). */
	uint64_t tok = __atomic_load_n(&dp->rcu->token, __ATOMIC_ACQUIRE);
	const struct dp_state *st = atomic_load_explicit(&dp->state, memory_order_acquire);
	struct rte_mbuf *pkts[2 * DP_BURST_MAX]; /* room for injected duplicates */
	unsigned int total = 0;

	lc->tok_now = tok;
	lc->tick++;
	for (uint16_t q = 0; q < lc->n_rxq; q++) {
		uint16_t port = lc->rxq[q].port;
		uint16_t n = rte_eth_rx_burst(dp->ports[port].port_id, lc->rxq[q].queue, pkts,
					      dp->prm.burst);

		if (unlikely(dp->ports[port].fault[DP_RX].on) && n != 0)
			n = dp_fault_rx(lc, port, pkts, n);

		/* The mbufs of the burst first (their frames come from another core or the
		 * NIC: the address of the frame is in the mbuf), then the header line of the
		 * frame DP_RX_AHEAD packets on. */
		for (uint16_t i = 0; i < n; i++)
			rte_prefetch0(pkts[i]);
		for (uint16_t i = 0; i < n && i < DP_RX_AHEAD; i++)
			prefetch_headers(pkts[i]);
		for (uint16_t i = 0; i < n; i++) {
			if (i + DP_RX_AHEAD < n)
				prefetch_headers(pkts[i + DP_RX_AHEAD]);
			dp_rx_one(lc, st, pkts[i], port);
		}
		dp_rx_open_flush(lc, st); /* the burst's sealed frames */
		total += n;
		if (lc->rxq[q].queue == 0)
			drain_ctl_tx(lc, port);
	}
	dp_retx_timers(lc, st);
	dp_agg_grace(lc, st);
	dp_seal_flush(lc); /* what this iteration sealed, before the pacers and TX, and what
			    * the cryptodev finished since */
	dp_pace_run(lc, st);
	dp_tx_flush(lc);
	return total;
}
