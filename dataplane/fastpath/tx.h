/* SPDX-License-Identifier: BSD-3-Clause
 *
 * Fast path: staging packets for transmission (the flush: tx.c) and writing the Ethernet /
 * IPv4 / UDP / georeduce headers of what a gateway sends. Worker lcores only.
 */
#ifndef GEOREDUCE_DP_TX_H
#define GEOREDUCE_DP_TX_H

#include <string.h>

#include <rte_byteorder.h>
#include <rte_cycles.h>
#include <rte_ether.h>
#include <rte_ip.h>
#include <rte_mbuf.h>
#include <rte_udp.h>

#include "dp.h"

/** Hand the staged TX packets of every port to the TX queues. */
void dp_tx_flush(struct dp_lcore *lc);

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
 * The neighbour word of a destination's next hop (struct dp_neigh: the MAC in the low 48
 * bits, first byte highest), DP_NEIGH_VALID set once resolved; without it the caller
 * counts no_neighbour. One word: dp_write_l2l4() stores it as bytes with one store (a
 * MAC built byte by byte on the stack and read back as words stalls the store forward).
 */
static inline uint64_t
dp_dest_neigh(const struct dp *dp, const struct dp_dest *d)
{
	return atomic_load_explicit(&dp->neigh[d->nh].mac, memory_order_relaxed);
}

/**
 * Write Ethernet, IPv4 and UDP headers at frame for a georeduce packet of udp_payload
 * bytes from this gateway (job j, chunk selects the UDP ports) to d, whose next hop has
 * the neighbour word neigh (dp_dest_neigh(), resolved). The georeduce header
 * behind them is the caller's. The IPv4 checksum is d->ip_sum, computed at install from
 * every field that does not change, plus the total length: two adds and a fold.
 */
static inline void
dp_write_l2l4(const struct dp *dp, const struct dp_job *j, const struct dp_dest *d, uint64_t neigh,
	      uint32_t chunk, uint8_t *frame, uint32_t udp_payload)
{
	struct rte_ether_hdr *eth = (struct rte_ether_hdr *)frame;
	struct rte_ipv4_hdr *ip = (struct rte_ipv4_hdr *)(frame + WIRE_ETH_LEN);
	struct rte_udp_hdr *udp = (struct rte_udp_hdr *)(frame + WIRE_ETH_LEN + WIRE_IPV4_LEN);
	uint64_t dmac = rte_cpu_to_be_64(neigh << 16); /* the MAC's 6 bytes, then 2 zeros */

	memcpy(eth, &dmac, sizeof(dmac)); /* its last 2 bytes: the source MAC's, next */
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
