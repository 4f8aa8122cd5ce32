/* SPDX-License-Identifier: BSD-3-Clause
 *
 * Fast path: staging packets for transmission and writing the Ethernet / IPv4 / UDP /
 * georeduce headers of what a gateway sends. Worker lcores only.
 */
#ifndef GEOREDUCE_DP_TX_H
#define GEOREDUCE_DP_TX_H

#include <rte_byteorder.h>
#include <rte_cycles.h>
#include <rte_ether.h>
#include <rte_ip.h>
#include <rte_mbuf.h>
#include <rte_udp.h>

#include "dp.h"

/** Queue m for transmission on port; flushes that port's staging when it is full. */
static inline void
dp_tx_stage(struct dp_lcore *lc, uint16_t port, struct rte_mbuf *m)
{
	lc->tx[port][lc->tx_n[port]++] = m;
	if (lc->tx_n[port] == DP_BURST_MAX)
		dp_tx_flush(lc);
}

/** This lcore's clock in microseconds mod 2^32 (the header's tsval). */
static inline uint32_t
dp_now_us(void)
{
	return (uint32_t)(rte_rdtsc() / (rte_get_tsc_hz() / 1000000u));
}

/**
 * The resolved MAC of a destination's next hop into *mac; false if not resolved yet
 * (counted by the caller as no_neighbour).
 */
static inline bool
dp_dest_mac(const struct dp *dp, const struct dp_dest *d, struct rte_ether_addr *mac)
{
	uint64_t v = atomic_load_explicit(&dp->neigh[d->nh].mac, memory_order_relaxed);

	if (!(v & DP_NEIGH_VALID))
		return false;
	for (int i = 0; i < RTE_ETHER_ADDR_LEN; i++)
		mac->addr_bytes[i] = (uint8_t)(v >> (8 * (RTE_ETHER_ADDR_LEN - 1 - i)));
	return true;
}

/**
 * Write Ethernet, IPv4 and UDP headers at frame for a georeduce packet of udp_payload
 * bytes from this gateway (job j, chunk selects the UDP ports) to d. The georeduce header
 * behind them is the caller's. The IPv4 checksum is d->ip_sum, computed at install from
 * every field that does not change, plus the total length: two adds and a fold.
 */
static inline void
dp_write_l2l4(const struct dp *dp, const struct dp_job *j, const struct dp_dest *d,
	      const struct rte_ether_addr *dmac, uint32_t chunk, uint8_t *frame,
	      uint32_t udp_payload)
{
	struct rte_ether_hdr *eth = (struct rte_ether_hdr *)frame;
	struct rte_ipv4_hdr *ip = (struct rte_ipv4_hdr *)(frame + WIRE_ETH_LEN);
	struct rte_udp_hdr *udp = (struct rte_udp_hdr *)(frame + WIRE_ETH_LEN + WIRE_IPV4_LEN);

	rte_ether_addr_copy(dmac, &eth->dst_addr);
	rte_ether_addr_copy(&dp->ports[d->port].mac, &eth->src_addr);
	eth->ether_type = rte_cpu_to_be_16(RTE_ETHER_TYPE_IPV4);
	ip->version_ihl = RTE_IPV4_VHL_DEF;
	ip->type_of_service = 0;
	ip->total_length = rte_cpu_to_be_16((uint16_t)(WIRE_IPV4_LEN + WIRE_UDP_LEN + udp_payload));
	ip->packet_id = 0;
	ip->fragment_offset = rte_cpu_to_be_16(RTE_IPV4_HDR_DF_FLAG);
	ip->time_to_live = 64;
	ip->next_proto_id = IPPROTO_UDP;
	ip->src_addr = rte_cpu_to_be_32(j->self_ipv4);
	ip->dst_addr = rte_cpu_to_be_32(d->ipv4);
	uint32_t sum = d->ip_sum + WIRE_IPV4_LEN + WIRE_UDP_LEN + udp_payload;

	sum = (sum & 0xffffu) + (sum >> 16);
	sum = (sum & 0xffffu) + (sum >> 16);
	ip->hdr_checksum = rte_cpu_to_be_16((uint16_t)~sum);
	udp->src_port = rte_cpu_to_be_16(wire_udp_port(j->udp_base, j->udp_count, chunk));
	udp->dst_port = rte_cpu_to_be_16(wire_udp_port(d->udp_base, d->udp_count, chunk));
	udp->dgram_len = rte_cpu_to_be_16((uint16_t)(WIRE_UDP_LEN + udp_payload));
	udp->dgram_cksum = 0; /* optional in IPv4; the payload is never checksummed twice */
}

#endif
