/* SPDX-License-Identifier: BSD-3-Clause
 *
 * Fast path: who may send a packet and what an answer may cost (docs/PROTOCOL.md sections
 * 7.2 and 7.6). Worker lcores only; header-only, no allocation, no locks, no syscalls.
 *
 * A sender id counts only from the IPv4 address and UDP port the table gives it: a worker
 * from its one port, a gateway from its range (base .. base + count - 1). Both are one key,
 * ipv4 << 16 | port, so that one subtraction and one unsigned compare check the address
 * and the port at once: key - (ipv4 << 16 | base) < count holds exactly when the address
 * is the table's and the port is in the range (a different address differs by at least
 * 65536 - base >= count, since base + count - 1 <= 65535).
 *
 * On a protected link the key authenticates the sender instead, wherever its frames come
 * from (a gateway behind NAT, or re-addressed): a sealed frame's source key is
 * DP_SRC_SEALED | peer << 16, peer the gateway whose link key opened it (seal.c records it
 * in the mbuf), and the protected link's is the same of its gateway id, udp_count kept: the
 * compare holds exactly for that peer (another differs by a multiple of 65536 > count). A
 * plain frame never carries DP_SRC_SEALED, and a sealed one always does, so a plain packet
 * from a protected peer, or a sealed one from a plain peer, fails the same compare.
 *
 * NACK_RESULT answers draw on a per-sender byte budget (struct dp_budget): the sender's
 * CONTRIB frames add their length, time adds DP_BUDGET_REFILL_BPS, both up to the cap;
 * every RESULT answered takes its frame length.
 */
#ifndef GEOREDUCE_FASTPATH_VALIDATE_H
#define GEOREDUCE_FASTPATH_VALIDATE_H

#include <string.h>

#include <rte_byteorder.h>
#include <rte_cycles.h>
#include <rte_mbuf.h>

#include "dp.h"

/* Frame offsets of the IPv4 source address and the UDP ports (no IP options: checked). */
#define DP_OFF_IP_SRC (WIRE_ETH_LEN + 12)
#define DP_OFF_UDP_SPORT (WIRE_ETH_LEN + WIRE_IPV4_LEN)
#define DP_OFF_UDP_DPORT (WIRE_ETH_LEN + WIRE_IPV4_LEN + 2)

/* The source key of a received frame: for a sealed one (dp_open_flush() marks it with
 * RTE_MBUF_F_RX_SEC_OFFLOAD and leaves the key's gateway in hash.usr) that gateway's,
 * else its IPv4 source address and UDP source port. */
static inline uint64_t
dp_rx_src_key(const struct rte_mbuf *m)
{
	const uint8_t *f = rte_pktmbuf_mtod(m, const uint8_t *);
	uint32_t ip;
	uint16_t port;

	if (m->ol_flags & RTE_MBUF_F_RX_SEC_OFFLOAD)
		return dp_src_key_sealed((uint16_t)m->hash.usr);
	memcpy(&ip, f + DP_OFF_IP_SRC, sizeof(ip));
	memcpy(&port, f + DP_OFF_UDP_SPORT, sizeof(port));
	return dp_src_key_of(rte_be_to_cpu_32(ip), rte_be_to_cpu_16(port));
}

/* Whether m comes from sender d: from the address and a port the table gives it, or on a
 * protected link sealed with its key. */
static inline bool
dp_src_ok(const struct rte_mbuf *m, const struct dp_dest *d)
{
	return dp_rx_src_key(m) - d->src_key < d->udp_count;
}

/* Whether m's UDP destination port is the one chunk maps to at this gateway (section 9). */
static inline bool
dp_dport_ok(const struct dp *dp, const struct rte_mbuf *m, uint32_t chunk)
{
	uint16_t port;

	memcpy(&port, rte_pktmbuf_mtod(m, const uint8_t *) + DP_OFF_UDP_DPORT, sizeof(port));
	return rte_be_to_cpu_16(port) == wire_udp_port(dp->prm.udp_base, dp->prm.udp_count, chunk);
}

/* A CONTRIB frame of len bytes came from the sender of budget b: it may be answered. */
static inline void
dp_budget_earn(struct dp_budget *b, uint32_t cap, uint32_t len)
{
	uint32_t v = b->bytes + len;

	b->bytes = v < cap ? v : cap;
}

/* Refill b, of at most cap bytes, for the time since its last refill (at a NACK: rare,
 * the TSC read is paid there only). */
static inline void
dp_budget_refill_cap(struct dp_budget *b, const struct dp_job *j, uint32_t cap, uint64_t now)
{
	uint64_t add = (now - b->tsc) / j->budget_tsc_per_byte;

	if (add == 0)
		return;
	b->tsc += add * j->budget_tsc_per_byte;
	b->bytes = b->bytes + add < cap ? (uint32_t)(b->bytes + add) : cap;
}

/* The same for a NACK_RESULT budget (cap: the job's). */
static inline void
dp_budget_refill(struct dp_budget *b, const struct dp_job *j, uint64_t now)
{
	dp_budget_refill_cap(b, j, j->budget_cap, now);
}

/* Take len bytes from b for one answer; false (nothing taken) if b has less. */
static inline bool
dp_budget_spend(struct dp_budget *b, uint32_t len)
{
	if (b->bytes < len)
		return false;
	b->bytes -= len;
	return true;
}

#endif
