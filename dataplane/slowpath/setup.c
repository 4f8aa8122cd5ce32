/* SPDX-License-Identifier: BSD-3-Clause
 *
 * Slow path (control thread): ports, mempools, per-lcore contexts, rings and the RCU
 * variable, set up once at start and torn down at exit.
 *
 * Queues: worker lcore i owns TX queue i of every port (any lcore may send on any port)
 * and polls RX queue i of every port that has more than i RX queues. A port with several
 * RX queues gets one rte_flow rule per UDP port of the dataplane's range steering it to
 * queue (port - base) % queues, so that every packet of a chunk reaches the same lcore
 * (docs/PROTOCOL.md, section 9); ARP, ICMP and the rest arrive on queue 0.
 *
 * Memory: one set of mempools per NUMA socket of the worker lcores (packets; header and
 * indirect mbufs for result copies), each lcore's context and rings on its socket. The
 * packet pool is split between what the queues and bursts can hold and a budget for the
 * mbufs that slots keep (accumulators, retained results): installing a table whose slots
 * could exceed it fails with E2BIG, so traffic can never exhaust the pool.
 */
#include <errno.h>
#include <net/if.h>
#include <stdio.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <rte_ethdev.h>
#include <rte_flow.h>
#include <rte_lcore.h>
#include <rte_malloc.h>
#include <rte_mbuf.h>
#include <rte_mempool.h>
#include <rte_rcu_qsbr.h>
#include <rte_ring_elem.h>

#include "dp.h"
#include "jsonutil.h"
#include "slowpath/kernel_select.h"
#include "slowpath/slowpath.h"

RTE_LOG_REGISTER(dp_logtype, georeduce.dataplane, INFO)

#define POOL_CACHE 256

static unsigned int instance; /* names of DPDK objects are per process */

void
dp_config_defaults(struct dp_config *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	cfg->prm.udp_base = WIRE_PORT_BASE_DEFAULT;
	cfg->prm.udp_count = WIRE_PORT_COUNT_DEFAULT;
	cfg->prm.burst = 32;
	cfg->prm.idle_mode = DP_IDLE_INTR;
	cfg->prm.idle_spin = 1000;
	cfg->prm.idle_sleep_us = 700;
	cfg->prm.drain_ms = 2000;
	cfg->prm.linger_ms = 10000;
	cfg->prm.mbufs = 32768;
	cfg->prm.mtu = 1500;
	cfg->rx_desc = 1024;
	cfg->tx_desc = 1024;
	cfg->hdr_mbufs = 8192;
	cfg->seal_mbufs = 8192;
	cfg->seal_links = 256;
	cfg->prm.fault_queue = 8192;
	cfg->prm.pace = true;
	cfg->prm.probe_ms = 100;
	cfg->rto_init_ms = 200;
	cfg->rto_min_ms = 5;
	cfg->rto_max_ms = 2000;
	cfg->retries_max = 12;
}

static const char *const idle_modes[] = {
	[DP_IDLE_POLL] = "poll",
	[DP_IDLE_SLEEP] = "sleep",
	[DP_IDLE_INTR] = "intr",
};

const char *
dp_idle_mode_name(unsigned int mode)
{
	return mode < RTE_DIM(idle_modes) ? idle_modes[mode] : "?";
}

int
dp_idle_mode_parse(const char *s, uint8_t *mode)
{
	for (unsigned int m = 0; m < RTE_DIM(idle_modes); m++)
		if (strcmp(s, idle_modes[m]) == 0) {
			*mode = (uint8_t)m;
			return 0;
		}
	return -1;
}

uint32_t
dp_mbuf_room(unsigned int mtu)
{
	uint32_t room =
		RTE_ALIGN_CEIL((uint32_t)mtu + RTE_ETHER_HDR_LEN + RTE_ETHER_CRC_LEN + 64, 1024u);

	return RTE_MAX(room, (uint32_t)RTE_MBUF_DEFAULT_DATAROOM);
}

/* The pools of a socket, created on first use. */
static int
socket_pools(struct dp *dp, const struct dp_config *cfg, int socket, struct rte_mempool **pkt,
	     struct rte_mempool **hdr, struct rte_mempool **clone, char *err, size_t errlen)
{
	char name[RTE_MEMPOOL_NAMESIZE];
	uint32_t room = dp_mbuf_room(cfg->prm.mtu);

	snprintf(name, sizeof(name), "gr%u_pkt_%d", instance, socket);
	*pkt = rte_mempool_lookup(name);
	if (*pkt != NULL) {
		snprintf(name, sizeof(name), "gr%u_hdr_%d", instance, socket);
		*hdr = rte_mempool_lookup(name);
		snprintf(name, sizeof(name), "gr%u_cln_%d", instance, socket);
		*clone = rte_mempool_lookup(name);
		return 0;
	}
	*pkt = rte_pktmbuf_pool_create(name, (unsigned int)cfg->prm.mbufs, POOL_CACHE, 0,
				       (uint16_t)(room + RTE_PKTMBUF_HEADROOM), socket);
	snprintf(name, sizeof(name), "gr%u_hdr_%d", instance, socket);
	*hdr = rte_pktmbuf_pool_create(name, cfg->hdr_mbufs, POOL_CACHE, 0,
				       DP_HDR_ROOM + RTE_PKTMBUF_HEADROOM, socket);
	snprintf(name, sizeof(name), "gr%u_cln_%d", instance, socket);
	*clone = rte_pktmbuf_pool_create(name, cfg->hdr_mbufs, POOL_CACHE, 0, 0, socket);
	if (*pkt == NULL || *hdr == NULL || *clone == NULL)
		return json_util_failrc(-ENOMEM, err, errlen,
					"cannot create mempools on socket %d (%s): "
					"%" PRIu64
					" mbufs of %u bytes; lower --mbufs or give EAL more "
					"memory (-m)",
					socket, rte_strerror(rte_errno), cfg->prm.mbufs,
					room + RTE_PKTMBUF_HEADROOM);
	dp->pool_bytes += (uint64_t)(*pkt)->size *
			  ((*pkt)->elt_size + (*pkt)->header_size + (*pkt)->trailer_size);
	dp->pool_bytes += (uint64_t)(*hdr)->size *
			  ((*hdr)->elt_size + (*hdr)->header_size + (*hdr)->trailer_size);
	dp->pool_bytes += (uint64_t)(*clone)->size *
			  ((*clone)->elt_size + (*clone)->header_size + (*clone)->trailer_size);
	return 0;
}

static int
setup_lcores(struct dp *dp, const struct dp_config *cfg, char *err, size_t errlen)
{
	char name[RTE_RING_NAMESIZE];

	dp->n_lcores = cfg->n_lcores;
	for (unsigned int i = 0; i < cfg->n_lcores; i++) {
		unsigned int id = cfg->lcore_ids[i];
		int socket = (int)rte_lcore_to_socket_id(id);
		struct dp_lcore *lc = rte_zmalloc_socket("georeduce-lcore", sizeof(*lc),
							 RTE_CACHE_LINE_SIZE, socket);
		int rc;

		if (lc == NULL)
			return json_util_failrc(-ENOMEM, err, errlen, "out of memory for lcore %u",
						id);
		dp->lcores[i] = lc;
		lc->idx = i;
		lc->lcore_id = id;
		lc->dp = dp;
		lc->wake_fd = -1;
		lc->k = sum_kernels_select_eal();
		rc = socket_pools(dp, cfg, socket, &lc->pool, &lc->hdr_pool, &lc->clone_pool, err,
				  errlen);
		if (rc != 0)
			return rc;
		lc->hdr_stash.pool = lc->hdr_pool;
		lc->hdr_stash.data_off = (uint32_t)sizeof(struct rte_mbuf) +
					 rte_pktmbuf_priv_size(lc->hdr_pool) + RTE_PKTMBUF_HEADROOM;
		lc->clone_stash.pool = lc->clone_pool;
		snprintf(name, sizeof(name), "gr%u_learn_%u", instance, i);
		lc->learn = rte_ring_create_elem(name, sizeof(struct dp_learn), DP_LEARN_RING,
						 socket, RING_F_SP_ENQ | RING_F_SC_DEQ);
		if (lc->learn == NULL)
			return json_util_failrc(-ENOMEM, err, errlen, "cannot create ring %s",
						name);
	}
	return 0;
}

/* Steer each UDP port of the range to its queue. */
static int
steer(struct dp *dp, struct dp_port *pt, char *err, size_t errlen)
{
	for (unsigned int i = 0; i < dp->prm.udp_count; i++) {
		struct rte_flow_attr attr = {.ingress = 1};
		struct rte_flow_item_udp spec = {
			.hdr.dst_port = rte_cpu_to_be_16((uint16_t)(dp->prm.udp_base + i)),
		};
		struct rte_flow_item_udp mask = {.hdr.dst_port = RTE_BE16(0xffff)};
		struct rte_flow_item pattern[] = {
			{.type = RTE_FLOW_ITEM_TYPE_ETH},
			{.type = RTE_FLOW_ITEM_TYPE_IPV4},
			{.type = RTE_FLOW_ITEM_TYPE_UDP, .spec = &spec, .mask = &mask},
			{.type = RTE_FLOW_ITEM_TYPE_END},
		};
		struct rte_flow_action_queue q = {.index = (uint16_t)(i % pt->n_rxq)};
		struct rte_flow_action actions[] = {
			{.type = RTE_FLOW_ACTION_TYPE_QUEUE, .conf = &q},
			{.type = RTE_FLOW_ACTION_TYPE_END},
		};
		struct rte_flow_error fe;

		if (rte_flow_create(pt->port_id, &attr, pattern, actions, &fe) == NULL)
			return json_util_failrc(
				-ENOTSUP, err, errlen,
				"port %u: cannot steer UDP port %u to "
				"queue %u with rte_flow (%s); run one worker lcore per port "
				"or use a NIC with flow rules",
				pt->port_id, dp->prm.udp_base + i, q.index,
				fe.message != NULL ? fe.message : "no reason given");
	}
	return 0;
}

/* Whether every RX queue of a started port has an interrupt event fd the lcore can wait on.
 * Many virtual devices (net_ring, net_af_packet) have none, and ethdev logs an error for
 * each: not for this question. A driver without an enable operation (net_tap, whose queue
 * fds are readable while frames wait) is always armed. */
static bool
rx_intr_works(uint16_t id, uint16_t n_rxq)
{
	int lt = rte_log_register("lib.ethdev");
	int level = lt >= 0 ? rte_log_get_level((uint32_t)lt) : -1;
	bool ok = true;

	if (level >= 0)
		rte_log_set_level((uint32_t)lt, RTE_LOG_CRIT);
	for (uint16_t q = 0; q < n_rxq && ok; q++) {
		int rc = rte_eth_dev_rx_intr_enable(id, q);

		if (rc == 0)
			rte_eth_dev_rx_intr_disable(id, q);
		ok = (rc == 0 || rc == -ENOTSUP) && rte_eth_dev_rx_intr_ctl_q_get_fd(id, q) >= 0;
	}
	if (level >= 0)
		rte_log_set_level((uint32_t)lt, (uint32_t)level);
	return ok;
}

/* Each lcore's idle mode: intr where every one of its RX queues has interrupts (with an
 * eventfd the control thread wakes it through), else sleep; poll as asked. */
static int
setup_idle(struct dp *dp, char *err, size_t errlen)
{
	for (unsigned int i = 0; i < dp->n_lcores; i++) {
		struct dp_lcore *lc = dp->lcores[i];
		bool intr = dp->prm.idle_mode == DP_IDLE_INTR && lc->n_rxq != 0;

		for (uint16_t q = 0; q < lc->n_rxq; q++)
			intr &= dp->ports[lc->rxq[q].port].rx_intr;
		if (dp->prm.idle_mode == DP_IDLE_POLL || dp->prm.idle_spin == 0)
			lc->idle_mode = DP_IDLE_POLL;
		else
			lc->idle_mode = intr ? DP_IDLE_INTR : DP_IDLE_SLEEP;
		if (lc->idle_mode != DP_IDLE_INTR)
			continue;
		lc->wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
		if (lc->wake_fd < 0)
			return json_util_failrc(-errno, err, errlen, "eventfd: %s",
						strerror(errno));
	}
	return 0;
}

void
dp_lcore_wake(struct dp *dp, unsigned int idx)
{
	uint64_t one = 1;

	if (idx < dp->n_lcores && dp->lcores[idx]->wake_fd >= 0 &&
	    write(dp->lcores[idx]->wake_fd, &one, sizeof(one)) < 0)
		return; /* EAGAIN: the counter is full, a wake is pending anyway */
}

/*
 * Whether port id carries frames of an IP MTU above 1500: 1 if its ethdev MTU is to be
 * set to it; 0 for a kernel-socket port (net_af_packet), whose ethdev in DPDK 22.11 says
 * 1518-byte frames whatever its ring frames (`framesz`) hold and refuses a larger MTU,
 * but receives and sends every frame its ring frames and its kernel interface carry: the
 * interface's MTU is checked instead; or a negative errno, the message in err.
 */
static int
port_mtu(uint16_t id, const struct rte_eth_dev_info *info, unsigned int mtu, char *err,
	 size_t errlen)
{
	char ifname[IF_NAMESIZE];
	struct ifreq ifr = {0};
	int fd, rc;

	if (info->max_mtu < mtu)
		return json_util_failrc(-EINVAL, err, errlen,
					"port %u (%s) supports an MTU up to %u, not --mtu %u", id,
					info->driver_name, info->max_mtu, mtu);
	if (strcmp(info->driver_name, "net_af_packet") != 0 || info->if_index == 0)
		return 1;
	if (if_indextoname(info->if_index, ifname) == NULL)
		return json_util_failrc(-errno, err, errlen, "port %u (%s): interface %u: %s", id,
					info->driver_name, info->if_index, strerror(errno));
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", ifname);
	fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	rc = fd < 0 ? -errno : ioctl(fd, SIOCGIFMTU, &ifr) < 0 ? -errno : 0;
	if (fd >= 0)
		close(fd);
	if (rc < 0)
		return json_util_failrc(rc, err, errlen, "port %u (%s): the MTU of %s: %s", id,
					info->driver_name, ifname, strerror(-rc));
	if ((unsigned int)ifr.ifr_mtu < mtu)
		return json_util_failrc(-EINVAL, err, errlen,
					"port %u (%s): interface %s has an MTU of %d, not --mtu %u "
					"(ip link set %s mtu %u)",
					id, info->driver_name, ifname, ifr.ifr_mtu, mtu, ifname,
					mtu);
	return 0;
}

static int
setup_port(struct dp *dp, const struct dp_config *cfg, unsigned int p, char *err, size_t errlen)
{
	struct dp_port *pt = &dp->ports[p];
	uint16_t id = cfg->port_ids[p];
	struct rte_eth_dev_info info;
	struct rte_eth_conf conf = {0};
	uint16_t nrxd = cfg->rx_desc, ntxd = cfg->tx_desc;
	char name[RTE_RING_NAMESIZE];
	int rc;

	pt->port_id = id;
	pt->ipv4 = cfg->addr[p].ipv4;
	pt->prefix_len = cfg->addr[p].prefix_len;
	pt->gw_ipv4 = cfg->addr[p].gw_ipv4;
	pt->nat_ipv4 = cfg->addr[p].nat_ipv4;
	if (pt->ipv4 == 0)
		return json_util_failrc(-EINVAL, err, errlen,
					"port %u has no address (--addr %u:IP/LEN)", id, p);
	rc = rte_eth_dev_info_get(id, &info);
	if (rc != 0)
		return json_util_failrc(rc, err, errlen, "port %u: %s", id, rte_strerror(-rc));
	if (info.max_tx_queues < dp->n_lcores)
		return json_util_failrc(-EINVAL, err, errlen,
					"port %u (%s) has %u TX queues, every worker "
					"lcore needs one: run at most %u worker lcores",
					id, info.driver_name, info.max_tx_queues,
					info.max_tx_queues);
	pt->n_txq = (uint16_t)dp->n_lcores;
	pt->n_rxq = (uint16_t)RTE_MIN(dp->n_lcores, info.max_rx_queues);
	if (cfg->prm.mtu > 1500) {
		rc = port_mtu(id, &info, cfg->prm.mtu, err, errlen);
		if (rc < 0)
			return rc;
		conf.rxmode.mtu = rc > 0 ? cfg->prm.mtu : 0;
	}
	if (info.tx_offload_capa & RTE_ETH_TX_OFFLOAD_MULTI_SEGS)
		conf.txmode.offloads |= RTE_ETH_TX_OFFLOAD_MULTI_SEGS;
	/* Checksums verified by the NIC where it can: the fast path reads its verdict. */
	conf.rxmode.offloads |= info.rx_offload_capa &
				(RTE_ETH_RX_OFFLOAD_IPV4_CKSUM | RTE_ETH_RX_OFFLOAD_UDP_CKSUM);
	/* --idle intr: Rx interrupts, where the driver takes them (l3fwd-power does the same). */
	conf.intr_conf.rxq = cfg->prm.idle_mode == DP_IDLE_INTR;
	rc = rte_eth_dev_configure(id, pt->n_rxq, pt->n_txq, &conf);
	if (rc != 0 && conf.intr_conf.rxq) {
		conf.intr_conf.rxq = 0;
		rc = rte_eth_dev_configure(id, pt->n_rxq, pt->n_txq, &conf);
	}
	if (rc == 0)
		rc = rte_eth_dev_adjust_nb_rx_tx_desc(id, &nrxd, &ntxd);
	if (rc != 0)
		return json_util_failrc(rc, err, errlen, "port %u: configure: %s", id,
					rte_strerror(-rc));
	for (uint16_t q = 0; q < pt->n_rxq; q++) {
		struct dp_lcore *lc = dp->lcores[q];

		rc = rte_eth_rx_queue_setup(id, q, nrxd, rte_lcore_to_socket_id(lc->lcore_id), NULL,
					    lc->pool);
		if (rc != 0)
			return json_util_failrc(rc, err, errlen, "port %u: RX queue %u: %s", id, q,
						rte_strerror(-rc));
		lc->rxq[lc->n_rxq].port = (uint16_t)p;
		lc->rxq[lc->n_rxq].queue = q;
		lc->n_rxq++;
	}
	for (uint16_t q = 0; q < pt->n_txq; q++) {
		rc = rte_eth_tx_queue_setup(id, q, ntxd,
					    rte_lcore_to_socket_id(dp->lcores[q]->lcore_id), NULL);
		if (rc != 0)
			return json_util_failrc(rc, err, errlen, "port %u: TX queue %u: %s", id, q,
						rte_strerror(-rc));
	}
	rc = rte_eth_dev_start(id);
	if (rc != 0)
		return json_util_failrc(rc, err, errlen, "port %u: start: %s", id,
					rte_strerror(-rc));
	rte_eth_macaddr_get(id, &pt->mac);
	pt->rx_intr = conf.intr_conf.rxq && rx_intr_works(id, pt->n_rxq);
	if (pt->n_rxq > 1 && (rc = steer(dp, pt, err, errlen)) != 0)
		return rc;
	snprintf(name, sizeof(name), "gr%u_ctltx_%u", instance, p);
	pt->ctl_tx = rte_ring_create(name, DP_CTL_TX_RING, rte_eth_dev_socket_id(id),
				     RING_F_SP_ENQ | RING_F_SC_DEQ);
	if (pt->ctl_tx == NULL)
		return json_util_failrc(-ENOMEM, err, errlen, "cannot create ring %s", name);
	/* Mbufs the queues can hold: not available to slots. */
	uint64_t queued = (uint64_t)pt->n_rxq * nrxd + (uint64_t)pt->n_txq * ntxd;

	dp->mbufs_budget = dp->mbufs_budget > queued ? dp->mbufs_budget - queued : 0;
	return 0;
}

/* Fault injection: the settings per port, and a delay line per lcore for each port that
 * delays its TX. Frames in delay lines come out of the slot budget. */
static int
setup_faults(struct dp *dp, const struct dp_config *cfg, char *err, size_t errlen)
{
	for (unsigned int i = 0; i < dp->n_lcores; i++)
		dp->lcores[i]->rng = (0x9e3779b97f4a7c15ull * (i + 1) ^
				      cfg->prm.fault_seed * 0xbf58476d1ce4e5b9ull) |
				     1;
	for (unsigned int p = 0; p < dp->n_ports; p++) {
		dp->ports[p].fault[DP_RX] = cfg->fault[p][DP_RX];
		dp->ports[p].fault[DP_TX] = cfg->fault[p][DP_TX];
		if (cfg->fault[p][DP_TX].delay_tsc == 0)
			continue;
		uint32_t cap = cfg->prm.fault_queue;

		for (unsigned int i = 0; i < dp->n_lcores; i++) {
			struct dp_lcore *lc = dp->lcores[i];
			int socket = (int)rte_lcore_to_socket_id(lc->lcore_id);
			struct dp_delay_line *d = &lc->delay[p];

			d->m = rte_zmalloc_socket("georeduce-delay", sizeof(*d->m) * cap,
						  RTE_CACHE_LINE_SIZE, socket);
			d->t = rte_zmalloc_socket("georeduce-delay", sizeof(*d->t) * cap,
						  RTE_CACHE_LINE_SIZE, socket);
			if (d->m == NULL || d->t == NULL)
				return json_util_failrc(-ENOMEM, err, errlen,
							"out of memory for delay lines");
			d->mask = cap - 1;
			dp->job_bytes += (sizeof(*d->m) + sizeof(*d->t)) * cap;
			dp->mbufs_budget = dp->mbufs_budget > cap ? dp->mbufs_budget - cap : 0;
		}
	}
	return 0;
}

int
dp_setup(struct dp *dp, const struct dp_config *cfg, char *err, size_t errlen)
{
	int rc;

	memset(dp, 0, sizeof(*dp));
	dp->prm = cfg->prm;
	dp->prm.rto_init_tsc = rte_get_tsc_hz() / 1000 * cfg->rto_init_ms;
	dp->prm.rto_min_tsc = rte_get_tsc_hz() / 1000 * cfg->rto_min_ms;
	dp->prm.rto_max_tsc = rte_get_tsc_hz() / 1000 * cfg->rto_max_ms;
	dp->prm.retries_max = cfg->retries_max;
	instance++;
	if (cfg->n_lcores == 0 || cfg->n_lcores > DP_LCORES_MAX)
		return json_util_failrc(
			-EINVAL, err, errlen,
			"need 1 to %d worker lcores, not %u (the main "
			"lcore runs the control thread: give EAL at least two, e.g. -l 0-1)",
			DP_LCORES_MAX, cfg->n_lcores);
	if (cfg->n_ports == 0 || cfg->n_ports > DP_PORTS_MAX)
		return json_util_failrc(-EINVAL, err, errlen,
					"need 1 to %d ports, found %u (a NIC bound to "
					"DPDK or a --vdev)",
					DP_PORTS_MAX, cfg->n_ports);
	rc = setup_lcores(dp, cfg, err, errlen);
	if (rc != 0)
		return rc;
	/* Per socket, what the bursts and caches can hold is not available to slots either. */
	dp->mbufs_budget = cfg->prm.mbufs;
	uint64_t transient =
		(uint64_t)dp->n_lcores * (POOL_CACHE + DP_BURST_MAX * (1 + cfg->n_ports));

	dp->mbufs_budget = dp->mbufs_budget > transient ? dp->mbufs_budget - transient : 0;
	dp->n_ports = cfg->n_ports;
	for (unsigned int p = 0; p < cfg->n_ports; p++) {
		rc = setup_port(dp, cfg, p, err, errlen);
		if (rc != 0)
			return rc;
	}
	rc = setup_idle(dp, err, errlen);
	if (rc != 0)
		return rc;
	for (unsigned int i = 0; i < cfg->n_neigh; i++) {
		unsigned int p;

		for (p = 0; p < dp->n_ports; p++) {
			uint32_t mask = dp->ports[p].prefix_len == 0 ?
						0 :
						~0u << (32 - dp->ports[p].prefix_len);

			if ((cfg->neigh[i].ipv4 & mask) == (dp->ports[p].ipv4 & mask))
				break;
		}
		if (p == dp->n_ports)
			return json_util_failrc(-EINVAL, err, errlen,
						"--neigh %u: the address is in no "
						"port's subnet",
						i + 1);
		rc = dp_neigh_get(dp, cfg->neigh[i].ipv4, (uint16_t)p);
		if (rc < 0)
			return json_util_failrc(rc, err, errlen, "too many neighbours");
		dp_neigh_set(dp, rc, &cfg->neigh[i].mac, true);
	}
	for (unsigned int i = 0; i < cfg->n_routes; i++) {
		struct dp_route rt = cfg->routes[i];

		if (rt.via != 0) { /* the port whose subnet holds the router */
			unsigned int p;

			for (p = 0; p < dp->n_ports; p++) {
				uint32_t mask = dp->ports[p].prefix_len == 0 ?
							0 :
							~0u << (32 - dp->ports[p].prefix_len);

				if ((rt.via & mask) == (dp->ports[p].ipv4 & mask))
					break;
			}
			if (p == dp->n_ports)
				return json_util_failrc(-EINVAL, err, errlen,
							"--route %u: the router is in no "
							"port's subnet",
							i + 1);
			rt.port = (uint16_t)p;
		} else if (rt.port >= dp->n_ports) {
			return json_util_failrc(-EINVAL, err, errlen,
						"--route %u: no port %u (%u ports)", i + 1, rt.port,
						dp->n_ports);
		}
		dp->routes[dp->n_routes++] = rt;
	}
	rc = setup_faults(dp, cfg, err, errlen);
	if (rc != 0)
		return rc;
	size_t sz = rte_rcu_qsbr_get_memsize(dp->n_lcores);

	dp->rcu = rte_zmalloc("georeduce-rcu", sz, RTE_CACHE_LINE_SIZE);
	if (dp->rcu == NULL || rte_rcu_qsbr_init(dp->rcu, dp->n_lcores) != 0)
		return json_util_failrc(-ENOMEM, err, errlen, "cannot create the RCU variable");
	return dp_crypto_setup(dp, cfg, err, errlen);
}

void
dp_teardown(struct dp *dp)
{
	struct rte_mempool *pools[3 * DP_LCORES_MAX];
	int n_pools = 0;

	dp_jobs_free_all(dp);
	dp_crypto_teardown(dp);
	for (unsigned int p = 0; p < dp->n_ports; p++) {
		struct rte_mbuf *m;
		struct rte_flow_error fe;

		rte_flow_flush(dp->ports[p].port_id, &fe);
		rte_eth_dev_stop(dp->ports[p].port_id);
		rte_eth_dev_close(dp->ports[p].port_id);
		while (dp->ports[p].ctl_tx != NULL &&
		       rte_ring_dequeue(dp->ports[p].ctl_tx, (void **)&m) == 0)
			rte_pktmbuf_free(m);
		rte_ring_free(dp->ports[p].ctl_tx);
	}
	for (unsigned int i = 0; i < dp->n_lcores; i++) {
		struct dp_lcore *lc = dp->lcores[i];

		if (lc == NULL)
			continue;
		rte_ring_free(lc->learn);
		if (lc->wake_fd >= 0)
			close(lc->wake_fd);
		for (unsigned int p = 0; p < DP_PORTS_MAX; p++) {
			struct dp_delay_line *d = &lc->delay[p];

			while (d->m != NULL && d->head != d->tail)
				rte_pktmbuf_free(d->m[d->head++ & d->mask]);
			rte_free(d->m);
			rte_free(d->t);
		}
		struct dp_mstash *stash[2] = {&lc->hdr_stash, &lc->clone_stash};

		for (int k = 0; k < 2; k++)
			for (; stash[k]->head != stash[k]->tail; stash[k]->head++)
				rte_mempool_put(stash[k]->pool,
						stash[k]->m[stash[k]->head & (DP_STASH_SIZE - 1)]);
		struct rte_mempool *mine[3] = {lc->pool, lc->hdr_pool, lc->clone_pool};

		for (int k = 0; k < 3; k++) {
			bool seen = mine[k] == NULL;

			for (int q = 0; q < n_pools && !seen; q++)
				seen = pools[q] == mine[k];
			if (!seen)
				pools[n_pools++] = mine[k];
		}
		rte_free(lc);
		dp->lcores[i] = NULL;
	}
	for (int q = 0; q < n_pools; q++)
		rte_mempool_free(pools[q]);
	rte_free(dp->rcu);
	dp->rcu = NULL;
}
