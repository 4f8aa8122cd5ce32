/* SPDX-License-Identifier: BSD-3-Clause
 *
 * Worker lcores, around the fast path: the lcore's main loop and what it does when idle.
 * Each iteration calls the fast path once (dp_worker_poll(), fastpath/worker.c) and
 * reports an RCU quiescent state. After --idle-spin empty polls in a row the lcore waits
 * as --idle says (docs/DATAPLANE.md, "Idle lcores"):
 *
 *   poll   it keeps polling (rte_pause() between polls): no syscall, ever;
 *   sleep  it sleeps, 1 us first, each sleep twice the one before, up to --idle-sleep-us;
 *          the first packet after a pause is therefore handled at most one sleep late;
 *   intr   where every RX queue of the lcore raises Rx interrupts (setup.c tells), it arms
 *          them and waits in epoll until a packet, the control thread (wake_fd: frames it
 *          queued for the lcore to send, such as PROBEs and ARP requests) or a timeout;
 *          elsewhere it sleeps as in `sleep`.
 *
 * Work that is due while no packet comes keeps its time: with frames waiting in a pacer or
 * a fault delay line the lcore never sleeps; with partial sums awaiting their RESULT
 * (retransmission timers) an interrupt wait lasts at most 1 ms and a sleep at most
 * --idle-sleep-us, both well under the smallest retransmission timeout (5 ms). A packet
 * returns the lcore to busy polling at once; the first wait after work or after a wakeup
 * lasts at most 1 ms too (a wakeup whose frame the next polls did not see is not lost).
 *
 * The sleeps and waits are syscalls, which is why this loop is not in fastpath/: the
 * lcore goes offline for RCU before each (the control thread never waits on a sleeping
 * lcore) and online after it, before it reads the published state again.
 *
 * Worker lcores only; no allocation, no locks, no logging.
 */
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/epoll.h>
#include <unistd.h>

#include <rte_cycles.h>
#include <rte_epoll.h>
#include <rte_ethdev.h>
#include <rte_interrupts.h>
#include <rte_pause.h>
#include <rte_rcu_qsbr.h>

#include "dp.h"
#include "fastpath/seal.h"

/* The longest interrupt wait with nothing due: only bounds how late a stop is seen if no
 * wake reached the lcore. */
#define INTR_WAIT_MS 100
/* ... and with retransmission timers running (under the smallest RTO), or after work or a
 * wakeup. */
#define INTR_WAIT_SHORT_MS 1

/* Work the lcore must do on time while no packet comes: frames waiting in a pacer, a delay
 * line or the cryptodev (returns 2: keep polling), or partial sums awaiting their RESULT
 * (1). */
static int
due_work(const struct dp_lcore *lc)
{
	const struct dp *dp = lc->dp;
	const struct dp_state *st = atomic_load_explicit(&dp->state, memory_order_acquire);
	int due = 0;

	if (dp_crypto_pending(lc) != 0)
		return 2;
	for (unsigned int p = 0; p < dp->n_ports; p++)
		if (lc->delay[p].mask != 0 && lc->delay[p].head != lc->delay[p].tail)
			return 2;
	for (int e = 0; st != NULL && e < st->n_jobs; e++)
		for (int k = 0; k < st->jobs[e].n_epochs; k++) {
			const struct dp_job_lcore *lj = &st->jobs[e].epochs[k]->lj[lc->idx];

			if (atomic_load_explicit(&lj->n_active, memory_order_relaxed) != 0)
				return 2;
			if (lj->head != lj->tail)
				due = 1;
		}
	return due;
}

/* The eventfd the control thread writes: read to zero when its event fires (EAL calls
 * this from rte_epoll_wait()). */
static void
wake_drain(int fd, void *arg)
{
	uint64_t v;

	(void)arg;
	if (read(fd, &v, sizeof(v)) < 0)
		return; /* EAGAIN: already read */
}

/* Register the lcore's RX queues and its wake eventfd in its own epoll set (EAL's per
 * thread one). Any failure leaves the lcore sleeping instead. */
static void
intr_register(struct dp_lcore *lc)
{
	struct dp *dp = lc->dp;
	uint16_t q;

	for (q = 0; q < lc->n_rxq; q++) {
		const struct dp_port *pt = &dp->ports[lc->rxq[q].port];
		uintptr_t data = (uintptr_t)lc->rxq[q].port << 16 | lc->rxq[q].queue;

		if (rte_eth_dev_rx_intr_ctl_q(pt->port_id, lc->rxq[q].queue, RTE_EPOLL_PER_THREAD,
					      RTE_INTR_EVENT_ADD, (void *)data) != 0)
			break;
	}
	lc->wake_ev = (struct rte_epoll_event){
		.epdata = {.event = EPOLLIN, .cb_fun = wake_drain},
	};
	if (q == lc->n_rxq &&
	    rte_epoll_ctl(RTE_EPOLL_PER_THREAD, EPOLL_CTL_ADD, lc->wake_fd, &lc->wake_ev) == 0)
		return;
	while (q-- > 0)
		rte_eth_dev_rx_intr_ctl_q(dp->ports[lc->rxq[q].port].port_id, lc->rxq[q].queue,
					  RTE_EPOLL_PER_THREAD, RTE_INTR_EVENT_DEL, NULL);
	lc->idle_mode = DP_IDLE_SLEEP;
}

static void
intr_unregister(struct dp_lcore *lc)
{
	for (uint16_t q = 0; q < lc->n_rxq; q++)
		rte_eth_dev_rx_intr_ctl_q(lc->dp->ports[lc->rxq[q].port].port_id, lc->rxq[q].queue,
					  RTE_EPOLL_PER_THREAD, RTE_INTR_EVENT_DEL, NULL);
	rte_epoll_ctl(RTE_EPOLL_PER_THREAD, EPOLL_CTL_DEL, lc->wake_fd, &lc->wake_ev);
}

static void
intr_arm(struct dp_lcore *lc, bool on)
{
	for (uint16_t q = 0; q < lc->n_rxq; q++) {
		uint16_t port = lc->dp->ports[lc->rxq[q].port].port_id;

		if (on)
			rte_eth_dev_rx_intr_enable(port, lc->rxq[q].queue);
		else
			rte_eth_dev_rx_intr_disable(port, lc->rxq[q].queue);
	}
}

/* Offline for RCU around a sleep or wait, its time counted. */
static inline uint64_t
idle_begin(struct dp_lcore *lc)
{
	rte_rcu_qsbr_thread_offline(lc->dp->rcu, lc->idx);
	return rte_rdtsc();
}

static inline void
idle_end(struct dp_lcore *lc, uint64_t t0)
{
	lc->slept_cycles += rte_rdtsc() - t0;
	lc->sleeps++;
	rte_rcu_qsbr_thread_online(lc->dp->rcu, lc->idx);
}

/* Arm the interrupts, poll once more (a frame that came after the last empty poll raised
 * none on every NIC), then wait. Returns the packets that last poll received. */
static unsigned int
intr_wait(struct dp_lcore *lc, int timeout_ms)
{
	struct rte_epoll_event ev[DP_PORTS_MAX + 1];
	unsigned int n;
	uint64_t t0;
	int k;

	intr_arm(lc, true);
	n = dp_worker_poll(lc);
	if (n != 0) {
		intr_arm(lc, false);
		return n;
	}
	t0 = idle_begin(lc);
	k = rte_epoll_wait(RTE_EPOLL_PER_THREAD, ev, (int)RTE_DIM(ev), timeout_ms);
	idle_end(lc, t0);
	intr_arm(lc, false);
	/* Woken: poll --idle-spin times before the next wait, and let that wait be short. The
	 * frame may not be readable at once (net_tap's RX returns nothing until its SIGIO
	 * handler ran) and an edge-triggered event does not fire again for a frame already
	 * queued. */
	lc->intr_short = k > 0;
	if (k > 0)
		lc->idle_polls = 0;
	for (int i = 0; i < k; i++)
		if (ev[i].fd != lc->wake_fd) {
			lc->intr_wakeups++; /* by a frame, not by the control thread */
			break;
		}
	return 0;
}

/* The adaptive sleep: twice the previous one, from 1 us up to --idle-sleep-us. */
static void
idle_sleep(struct dp_lcore *lc, uint32_t max_us)
{
	uint32_t us = lc->sleep_us == 0 ? 1 : lc->sleep_us * 2;
	uint64_t t0;

	lc->sleep_us = us = RTE_MIN(us, max_us);
	t0 = idle_begin(lc);
	rte_delay_us_sleep(us);
	idle_end(lc, t0);
}

/* Idle past --idle-spin polls: wait as the lcore's mode says. Returns the packets a last
 * poll received (interrupt mode), 0 otherwise. */
static unsigned int
idle(struct dp_lcore *lc)
{
	int due = due_work(lc);

	if (due == 2) {
		rte_pause();
		return 0;
	}
	if (lc->idle_mode == DP_IDLE_INTR)
		return intr_wait(lc, due || lc->intr_short ? INTR_WAIT_SHORT_MS : INTR_WAIT_MS);
	idle_sleep(lc, lc->dp->prm.idle_sleep_us);
	return 0;
}

/*
 * The end of an iteration: the lcore holds nothing of the state it read. Except frames in
 * its cryptodev rings, which refer to the keys (sessions) and epochs they were queued
 * under: then it reports only the RCU token the oldest of them was queued under, and the
 * control thread frees nothing they refer to until the device gave them back. Reporting a
 * token below the current one is what rte_rcu_qsbr_quiescent() does with the current one
 * (a store-release of the thread's counter); it never goes back.
 */
static inline void
quiescent(struct dp_lcore *lc)
{
	struct rte_rcu_qsbr *v = lc->dp->rcu;
	uint64_t t = dp_crypto_oldest_token(lc);

	if (likely(t == 0)) {
		rte_rcu_qsbr_quiescent(v, lc->idx);
		return;
	}
	if (t > __atomic_load_n(&v->qsbr_cnt[lc->idx].cnt, __ATOMIC_RELAXED))
		__atomic_store_n(&v->qsbr_cnt[lc->idx].cnt, t, __ATOMIC_RELEASE);
}

/* At stop: take back what the cryptodev still holds, for up to a second (frames opened
 * then are dropped, frames sealed sent). Operations a device has not returned by
 * then are left to it, not freed; the pools go with the device (slowpath/crypto.c). */
static void
crypto_drain(struct dp_lcore *lc)
{
	uint64_t end = rte_rdtsc() + rte_get_tsc_hz();

	while (dp_crypto_pending(lc) != 0 && rte_rdtsc() < end) {
		uint16_t n = dp_open_flush(lc);

		for (uint16_t i = 0; i < n; i++)
			rte_pktmbuf_free(lc->opened[i].m);
		dp_seal_flush(lc);
		dp_tx_flush(lc);
		rte_pause();
	}
}

int
dp_worker_main(void *arg)
{
	struct dp_lcore *lc = arg;
	struct dp *dp = lc->dp;
	uint32_t spin = dp->prm.idle_spin;
	uint64_t t0;

	rte_rcu_qsbr_thread_register(dp->rcu, lc->idx);
	rte_rcu_qsbr_thread_online(dp->rcu, lc->idx);
	if (lc->idle_mode == DP_IDLE_INTR)
		intr_register(lc);
	lc->idle_polls = 0;
	lc->sleep_us = 0;
	while (!atomic_load_explicit(&dp->stop, memory_order_relaxed)) {
		t0 = rte_rdtsc();
		unsigned int n = dp_worker_poll(lc);

		if (n == 0 && lc->idle_mode != DP_IDLE_POLL &&
		    (lc->idle_polls >= spin || ++lc->idle_polls >= spin))
			n = idle(lc);
		else if (n == 0)
			rte_pause();
		quiescent(lc);
		lc->iterations++;
		if (n != 0) {
			lc->cycles_busy += rte_rdtsc() - t0;
			lc->idle_polls = 0;
			lc->sleep_us = 0;
			lc->intr_short = true;
		}
	}
	crypto_drain(lc);
	if (lc->idle_mode == DP_IDLE_INTR)
		intr_unregister(lc);
	rte_rcu_qsbr_thread_offline(dp->rcu, lc->idx);
	rte_rcu_qsbr_thread_unregister(dp->rcu, lc->idx);
	return 0;
}
