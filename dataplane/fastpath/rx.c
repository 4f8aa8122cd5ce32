/* SPDX-License-Identifier: BSD-3-Clause
 *
 * Fast path: receive and classify. Each frame of a burst is counted and checked
 * (Ethernet, IPv4 to this port's address, UDP to the dataplane's ports, checksums), then
 * ARP and ICMP echo are answered in place, a sealed frame is queued to be opened
 * (seal.c) and comes back through dp_rx_open_flush(), and a georeduce packet is decoded:
 * PROBEs are answered here, MCAST and NACK_MCAST go to multicast (mcast.c), every other
 * type to aggregation (agg.c).
 *
 * The first step of the packet path. Calls go one way, from here on: rx.c -> seal.c
 * (opening), agg.c, mcast.c -> what they send (tx.h); nothing calls back into this file
 * but the worker loop (worker.c).
 *
 * Worker lcores only: no allocation, no locks, no syscalls, no logging.
 */
#include <string.h>

#include <rte_arp.h>
#include <rte_branch_prediction.h>
#include <rte_icmp.h>
#include <rte_ip.h>
#include <rte_mbuf.h>
#include <rte_ring_elem.h>
#include <rte_udp.h>

#include "dp.h"
#include "fastpath/agg.h"
#include "fastpath/csum.h"
#include "fastpath/mcast.h"
#include "fastpath/rx.h"
#include "fastpath/seal.h"
#include "fastpath/tx.h"

/* ip is at mac on port: resolve its neighbour entry now, before the ARP is answered (so
 * that the results of the CONTRIBs that follow find it), and tell the control thread,
 * which keeps addresses no entry has yet for the tables to come. ARP is rare: a scan of
 * the entries costs nothing per packet. */
static void
learn(struct dp_lcore *lc, uint16_t port, rte_be32_t ip, const struct rte_ether_addr *mac)
{
	struct dp *dp = lc->dp;
	struct dp_learn l = {.ipv4 = rte_be_to_cpu_32(ip), .port = port, .kind = DP_LEARN_ARP};
	uint32_t n = atomic_load_explicit(&dp->n_neigh, memory_order_acquire);

	for (uint32_t i = 0; i < n; i++)
		if (dp->neigh[i].ipv4 == l.ipv4 && dp->neigh[i].port == port &&
		    !dp->neigh[i].is_static)
			atomic_store_explicit(&dp->neigh[i].mac, dp_neigh_word(mac->addr_bytes),
					      memory_order_relaxed);
	memcpy(l.mac, mac->addr_bytes, RTE_ETHER_ADDR_LEN);
	rte_ring_sp_enqueue_elem(lc->learn, &l, sizeof(l)); /* full: the next one will do */
}

/* Drop a received frame: counted once under its reason, and under its class counter
 * (DP_CTR_NOT_FOR_US, DP_CTR_BAD_FRAME, DP_CTR_BAD_HEADER) unless cls is DP_CTR_COUNT. */
static inline void
reject(struct dp_lcore *lc, struct rte_mbuf *m, enum dp_ctr cls, enum wire_reason why)
{
	if (cls != DP_CTR_COUNT)
		lc->ctr[cls]++;
	lc->drops[why]++;
	rte_pktmbuf_free(m);
}

static void
on_arp(struct dp_lcore *lc, struct rte_mbuf *m, uint16_t port)
{
	const struct dp_port *pt = &lc->dp->ports[port];
	struct rte_ether_hdr *eth = rte_pktmbuf_mtod(m, struct rte_ether_hdr *);
	struct rte_arp_hdr *arp = (struct rte_arp_hdr *)(eth + 1);

	if (rte_pktmbuf_data_len(m) < sizeof(*eth) + sizeof(*arp) ||
	    arp->arp_hardware != rte_cpu_to_be_16(RTE_ARP_HRD_ETHER) ||
	    arp->arp_protocol != rte_cpu_to_be_16(RTE_ETHER_TYPE_IPV4) ||
	    arp->arp_hlen != RTE_ETHER_ADDR_LEN || arp->arp_plen != 4) {
		reject(lc, m, DP_CTR_NOT_FOR_US, WIRE_REASON_ARP_UNANSWERED);
		return;
	}
	struct rte_arp_ipv4 *a = &arp->arp_data;
	bool for_us = a->arp_tip == rte_cpu_to_be_32(pt->ipv4);

	if (a->arp_sip != 0 && (for_us || arp->arp_opcode == rte_cpu_to_be_16(RTE_ARP_OP_REPLY)))
		learn(lc, port, a->arp_sip, &a->arp_sha);
	if (!for_us || arp->arp_opcode != rte_cpu_to_be_16(RTE_ARP_OP_REQUEST)) {
		reject(lc, m, DP_CTR_NOT_FOR_US, WIRE_REASON_ARP_UNANSWERED);
		return;
	}
	/* Turn the request into the reply in place. */
	arp->arp_opcode = rte_cpu_to_be_16(RTE_ARP_OP_REPLY);
	a->arp_tha = a->arp_sha;
	a->arp_tip = a->arp_sip;
	rte_ether_addr_copy(&pt->mac, &a->arp_sha);
	a->arp_sip = rte_cpu_to_be_32(pt->ipv4);
	rte_ether_addr_copy(&eth->src_addr, &eth->dst_addr);
	rte_ether_addr_copy(&pt->mac, &eth->src_addr);
	lc->ctr[DP_CTR_ARP_REPLIES]++;
	dp_tx_stage(lc, port, m);
}

/* Turn a received IPv4 frame around in place: swap the addresses, source them from `port`. */
static void
reflect_ipv4(const struct dp_lcore *lc, uint16_t port, struct rte_ether_hdr *eth,
	     struct rte_ipv4_hdr *ip)
{
	rte_be32_t a = ip->src_addr;

	ip->src_addr = ip->dst_addr;
	ip->dst_addr = a;
	ip->time_to_live = 64;
	ip->hdr_checksum = 0;
	ip->hdr_checksum = rte_ipv4_cksum(ip);
	rte_ether_addr_copy(&eth->src_addr, &eth->dst_addr);
	rte_ether_addr_copy(&lc->dp->ports[port].mac, &eth->src_addr);
}

/* ICMP echo request to this port's address: answered in place. ip is validated. */
static void
on_icmp(struct dp_lcore *lc, struct rte_mbuf *m, uint16_t port, struct rte_ipv4_hdr *ip)
{
	uint32_t ip_len = rte_be_to_cpu_16(ip->total_length);
	struct rte_icmp_hdr *icmp = (struct rte_icmp_hdr *)(ip + 1);
	struct rte_ether_hdr *eth = rte_pktmbuf_mtod(m, struct rte_ether_hdr *);

	if (ip_len < WIRE_IPV4_LEN + sizeof(*icmp) || icmp->icmp_type != RTE_IP_ICMP_ECHO_REQUEST ||
	    icmp->icmp_code != 0 || rte_raw_cksum(icmp, ip_len - WIRE_IPV4_LEN) != 0xffff) {
		reject(lc, m, DP_CTR_NOT_FOR_US, WIRE_REASON_ICMP_NOT_ECHO);
		return;
	}
	reflect_ipv4(lc, port, eth, ip);
	icmp->icmp_type = RTE_IP_ICMP_ECHO_REPLY;
	icmp->icmp_cksum = 0;
	icmp->icmp_cksum = (uint16_t)~rte_raw_cksum(icmp, ip_len - WIRE_IPV4_LEN);
	lc->ctr[DP_CTR_ICMP_REPLIES]++;
	dp_tx_stage(lc, port, m);
}

/* PROBE: answered in place to its source (docs/PROTOCOL.md, section 5). */
static void
on_probe(struct dp_lcore *lc, const struct dp_state *st, struct rte_mbuf *m, uint16_t port,
	 const struct wire_pkt *p)
{
	struct rte_ether_hdr *eth = rte_pktmbuf_mtod(m, struct rte_ether_hdr *);
	struct rte_ipv4_hdr *ip = (struct rte_ipv4_hdr *)(eth + 1);
	struct rte_udp_hdr *udp = (struct rte_udp_hdr *)(ip + 1);
	struct wire_hdr *wh = (struct wire_hdr *)(udp + 1);
	uint16_t self = WIRE_NODE_NONE;

	for (int i = 0; st != NULL && p->job != 0 && i < st->n_jobs; i++)
		if (st->jobs[i].job == p->job)
			self = st->jobs[i].epochs[0]->self_id;
	reflect_ipv4(lc, port, eth, ip);
	rte_be16_t pt = udp->src_port;

	udp->src_port = udp->dst_port;
	udp->dst_port = pt;
	udp->dgram_cksum = 0;
	wh->type = WIRE_TYPE_PROBE_REPLY;
	wh->flags = WIRE_F_ECHO;
	wh->sender = rte_cpu_to_be_16(self);
	wh->tsecr = wh->tsval;
	wh->tsval = rte_cpu_to_be_32(dp_now_us());
	dp_tx_stage(lc, port, m);
}

void
dp_rx_one(struct dp_lcore *lc, const struct dp_state *st, struct rte_mbuf *m, uint16_t port)
{
	const struct dp *dp = lc->dp;
	const struct dp_port *pt = &dp->ports[port];
	struct rte_ether_hdr *eth = rte_pktmbuf_mtod(m, struct rte_ether_hdr *);
	uint32_t len = rte_pktmbuf_data_len(m);
	enum wire_reason why;

	lc->ctr[DP_CTR_RX_PACKETS]++;
	lc->ctr[DP_CTR_RX_BYTES] += rte_pktmbuf_pkt_len(m);
	if (unlikely(m->nb_segs != 1)) { /* the mempool holds an MTU-sized frame in one */
		reject(lc, m, DP_CTR_BAD_FRAME, WIRE_REASON_OVERSIZE);
		return;
	}
	if (unlikely(len < sizeof(*eth))) {
		reject(lc, m, DP_CTR_BAD_FRAME, WIRE_REASON_L2);
		return;
	}
	/* A frame at an odd address (no NIC does that; a broken vdev or test could): the
	 * Ethernet header's 16-bit fields would be misaligned. Payloads at any even offset
	 * are fine: the kernels take any alignment. */
	if (unlikely((uintptr_t)eth & 1)) {
		reject(lc, m, DP_CTR_BAD_FRAME, WIRE_REASON_MISALIGNED);
		return;
	}
	if (eth->ether_type == rte_cpu_to_be_16(RTE_ETHER_TYPE_ARP)) {
		on_arp(lc, m, port);
		return;
	}
	if (eth->ether_type != rte_cpu_to_be_16(RTE_ETHER_TYPE_IPV4)) {
		reject(lc, m, DP_CTR_NOT_FOR_US, WIRE_REASON_L2);
		return;
	}
	if (len < WIRE_ETH_LEN + WIRE_IPV4_LEN) {
		reject(lc, m, DP_CTR_BAD_FRAME, WIRE_REASON_IP_HDR);
		return;
	}
	struct rte_ipv4_hdr *ip = (struct rte_ipv4_hdr *)(eth + 1);

	if (ip->dst_addr != rte_cpu_to_be_32(pt->ipv4)) {
		reject(lc, m, DP_CTR_NOT_FOR_US, WIRE_REASON_OTHER_DST);
		return;
	}
	if (ip->next_proto_id != IPPROTO_UDP && ip->next_proto_id != IPPROTO_ICMP) {
		reject(lc, m, DP_CTR_NOT_FOR_US, WIRE_REASON_NOT_UDP);
		return;
	}
	size_t off, plen;

	/* Checksums: the NIC's verdict when it gives one, else ours (csum.h), faster than
	 * the reference's byte-wise loop; every other rule by wire_frame_parse_flags(). */
	uint64_t ipck = m->ol_flags & RTE_MBUF_F_RX_IP_CKSUM_MASK;
	uint64_t l4ck = m->ol_flags & RTE_MBUF_F_RX_L4_CKSUM_MASK;

	if (wire_frame_parse_flags(eth, len, WIRE_PARSE_NO_IP_CSUM | WIRE_PARSE_NO_UDP_CSUM, NULL,
				   &off, &plen, &why) != 0 &&
	    !(why == WIRE_REASON_NOT_UDP && ip->next_proto_id == IPPROTO_ICMP))
		goto bad_frame;
	why = WIRE_REASON_IP_CSUM;
	if (ipck == RTE_MBUF_F_RX_IP_CKSUM_BAD ||
	    (ipck != RTE_MBUF_F_RX_IP_CKSUM_GOOD && !dp_ipv4_csum_ok((const uint8_t *)ip)))
		goto bad_frame;
	if (ip->next_proto_id == IPPROTO_ICMP) {
		on_icmp(lc, m, port, ip);
		return;
	}
	const struct rte_udp_hdr *udp = (const struct rte_udp_hdr *)(ip + 1);
	uint16_t dport = rte_be_to_cpu_16(udp->dst_port);

	if ((uint16_t)(dport - dp->prm.udp_base) >= dp->prm.udp_count) {
		reject(lc, m, DP_CTR_NOT_FOR_US, WIRE_REASON_OTHER_PORT);
		return;
	}
	why = WIRE_REASON_UDP_CSUM;
	if (l4ck == RTE_MBUF_F_RX_L4_CKSUM_BAD ||
	    (l4ck != RTE_MBUF_F_RX_L4_CKSUM_GOOD &&
	     !dp_udp_csum_ok(lc->k, (const uint8_t *)ip, (const uint8_t *)udp,
			     rte_be_to_cpu_16(udp->dgram_len))))
		goto bad_frame;
	/* Trim Ethernet padding so that the frame is exactly headers + packet. */
	if (len > off + plen)
		rte_pktmbuf_trim(m, (uint16_t)(len - off - plen));
	/* A sealed frame (a protected link, docs/PROTOCOL.md section 14) is opened in place
	 * with the others of its burst (dp_open_flush()), then goes on as a plain one. */
	if (unlikely(plen >= 2 && dp_is_sealed((const uint8_t *)eth + off))) {
		if (unlikely(dp_crypto_ring_full(lc, false)))
			dp_rx_open_flush(lc, st);
		dp_open_queue(lc, st, m, port, plen);
		return;
	}
	dp_rx_packet(lc, st, m, port, plen);
	return;
bad_frame:
	reject(lc, m, DP_CTR_BAD_FRAME, why);
}

void
dp_rx_packet(struct dp_lcore *lc, const struct dp_state *st, struct rte_mbuf *m, uint16_t port,
	     size_t plen)
{
	uint8_t *f = rte_pktmbuf_mtod(m, uint8_t *);
	const struct rte_ipv4_hdr *ip = (const struct rte_ipv4_hdr *)(f + WIRE_ETH_LEN);
	enum wire_reason why;
	struct wire_pkt p;

	if (unlikely(wire_hdr_decode(f + WIRE_FRAME_HDR_OFF, plen, &p, &why) != 0)) {
		reject(lc, m, DP_CTR_BAD_HEADER, why);
		return;
	}
	if (p.type == WIRE_TYPE_PROBE) {
		on_probe(lc, st, m, port, &p);
		return;
	}
	if (p.type == WIRE_TYPE_PROBE_REPLY) { /* to one of the control thread's probes */
		struct dp_learn l = {
			.ipv4 = rte_be_to_cpu_32(ip->src_addr),
			.port = port,
			.kind = DP_LEARN_PROBE,
			.rtt_us = dp_now_us() - p.tsecr,
		};

		/* Those probes have no job and no origin; the control thread matches the
		 * source against its peers (and counts the others). */
		if (p.job != 0 || p.origin != WIRE_NODE_NONE) {
			reject(lc, m, DP_CTR_NOT_FOR_US, WIRE_REASON_PROBE_REPLY);
			return;
		}
		if (rte_ring_sp_enqueue_elem(lc->learn, &l, sizeof(l)) != 0) {
			reject(lc, m, DP_CTR_COUNT, WIRE_REASON_CTL_RING_FULL);
			return;
		}
		rte_pktmbuf_free(m);
		return;
	}
	if (p.type == WIRE_TYPE_MCAST || p.type == WIRE_TYPE_NACK_MCAST) {
		dp_mcast_rx(lc, st, m, &p);
		return;
	}
	dp_agg_rx(lc, st, m, &p, port);
}

void
dp_rx_open_flush(struct dp_lcore *lc, const struct dp_state *st)
{
	uint16_t n = dp_open_flush(lc);

	/* Nothing on the way of these packets opens frames: lc->opened[] stays. */
	for (uint16_t i = 0; i < n; i++)
		dp_rx_packet(lc, st, lc->opened[i].m, lc->opened[i].port, lc->opened[i].len);
}
