/* SPDX-License-Identifier: BSD-3-Clause
 *
 * Fast path: fault injection. Decisions come from a per-lcore xorshift generator seeded
 * from --fault-seed, so a run is reproducible for a given traffic order. Bursty loss is a
 * Gilbert-Elliott channel (E. N. Gilbert, "Capacity of a burst-noise channel", 1960;
 * E. O. Elliott, "Estimates of error rates for codes on burst-noise channels", 1963): a
 * good and a bad state with a loss probability each, stepped once per frame. Duplicates
 * are indirect mbufs of the original (no payload copy); delayed frames wait in the lcore's
 * delay line for the port, a FIFO sized at start (--fault-queue): every frame of a port
 * gets the same delay, so the FIFO stays sorted by departure time. A full delay line
 * drops (counted). A corrupted frame is a private copy (from the lcore's packet pool) of
 * a georeduce data frame with one bit of its payload flipped and its UDP checksum, if it
 * has one, updated to match (RFC 1624), so that the receiver takes the wrong data; the
 * original, whose payload a RESULT's other copies and the retained RESULT may share, is
 * left as it was.
 */
#include <rte_branch_prediction.h>
#include <rte_byteorder.h>
#include <rte_cycles.h>
#include <rte_ethdev.h>
#include <rte_mbuf.h>

#include "dp.h"
#include "fastpath/fault.h"

static inline uint64_t
next_rand(struct dp_lcore *lc)
{
	uint64_t x = lc->rng;

	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	lc->rng = x;
	return x * 0x2545f4914f6cdd1dull;
}

/* True with probability p / 2^32. */
static inline bool
chance(struct dp_lcore *lc, uint32_t p)
{
	return p != 0 && (uint32_t)(next_rand(lc) >> 32) < p;
}

/* Whether this frame is lost: plain random loss, or one step of the port and direction's
 * Gilbert-Elliott chain (the frame's fate is drawn in the state the step leads to). */
static inline bool
lost(struct dp_lcore *lc, const struct dp_fault *f, uint16_t port, int dir)
{
	bool *bad;

	if (likely(!f->ge))
		return chance(lc, f->loss);
	bad = &lc->ge_bad[port][dir];
	if (*bad) {
		if (chance(lc, f->ge_r))
			*bad = false;
	} else if (chance(lc, f->ge_p)) {
		*bad = true;
	}
	return chance(lc, *bad ? f->ge_h : f->ge_k);
}

/* Offsets in an Ethernet/IPv4/UDP frame without IP options. */
#define OFF_UDP (WIRE_ETH_LEN + WIRE_IPV4_LEN)
#define OFF_UDP_CSUM (OFF_UDP + 6)

/* Where the payload of a georeduce data frame starts (after the header and the contributor
 * set), or 0 if m is not one or has no payload: unsealed CONTRIB, RESULT and MCAST frames
 * over IPv4 without options. */
static uint32_t
payload_off(const struct rte_mbuf *m)
{
	uint8_t buf[WIRE_FRAME_HDR_OFF + 8];
	const uint8_t *d = rte_pktmbuf_read(m, 0, sizeof(buf), buf);
	uint32_t off;

	if (d == NULL || d[12] != 0x08 || d[13] != 0x00 || d[14] != 0x45 || d[23] != 17 ||
	    d[WIRE_FRAME_HDR_OFF] != WIRE_MAGIC >> 8 ||
	    d[WIRE_FRAME_HDR_OFF + 1] != (WIRE_MAGIC & 0xff))
		return 0;
	if (d[WIRE_FRAME_HDR_OFF + 3] != WIRE_TYPE_CONTRIB &&
	    d[WIRE_FRAME_HDR_OFF + 3] != WIRE_TYPE_RESULT &&
	    d[WIRE_FRAME_HDR_OFF + 3] != WIRE_TYPE_MCAST)
		return 0;
	off = WIRE_FRAME_PAYLOAD_OFF + WIRE_CSET_BLOCK * d[WIRE_FRAME_HDR_OFF + 6];
	return off < rte_pktmbuf_pkt_len(m) ? off : 0;
}

/* Frame m with one bit of its georeduce payload flipped (drawn from the lcore's generator):
 * a linear copy, m freed; m itself when it carries no payload or no mbuf was free. */
static struct rte_mbuf *
corrupt(struct dp_lcore *lc, struct rte_mbuf *m)
{
	uint32_t off = payload_off(m), pos, w;
	uint64_t r = next_rand(lc);
	struct rte_mbuf *c;
	uint8_t *d;
	uint16_t old, csum;

	if (off == 0)
		return m;
	c = rte_pktmbuf_copy(m, lc->pool, 0, UINT32_MAX);
	if (c == NULL || c->nb_segs != 1) {
		rte_pktmbuf_free(c);
		return m;
	}
	rte_pktmbuf_free(m);
	d = rte_pktmbuf_mtod(c, uint8_t *);
	pos = off + (uint32_t)(r % (rte_pktmbuf_pkt_len(c) - off));
	w = OFF_UDP + ((pos - OFF_UDP) & ~1u); /* the 16-bit word of the UDP checksum */
	old = (uint16_t)(d[w] << 8 | d[w + 1]);
	d[pos] ^= (uint8_t)(1u << ((r >> 32) & 7));
	csum = (uint16_t)(d[OFF_UDP_CSUM] << 8 | d[OFF_UDP_CSUM + 1]);
	if (csum != 0 && (c->ol_flags & RTE_MBUF_F_TX_L4_MASK) != RTE_MBUF_F_TX_UDP_CKSUM) {
		/* HC' = ~(~HC + ~m + m') in ones' complement (RFC 1624, eqn. 3). */
		uint32_t sum = (uint32_t)(uint16_t)~csum + (uint16_t)~old + (d[w] << 8 | d[w + 1]);

		sum = (sum & 0xffff) + (sum >> 16);
		sum = (sum & 0xffff) + (sum >> 16);
		csum = (uint16_t)~sum;
		csum = csum == 0 ? 0xffff : csum;
		d[OFF_UDP_CSUM] = (uint8_t)(csum >> 8);
		d[OFF_UDP_CSUM + 1] = (uint8_t)csum;
	}
	lc->ctr[DP_CTR_FAULT_CORRUPTED]++;
	return c;
}

uint16_t
dp_fault_rx(struct dp_lcore *lc, uint16_t port, struct rte_mbuf **pkts, uint16_t n)
{
	const struct dp_fault *f = &lc->dp->ports[port].fault[DP_RX];
	uint16_t k = 0, extra = n;

	for (uint16_t i = 0; i < n; i++) {
		struct rte_mbuf *m = pkts[i];

		if (lost(lc, f, port, DP_RX)) {
			lc->ctr[DP_CTR_FAULT_DROPPED]++;
			rte_pktmbuf_free(m);
			continue;
		}
		if (chance(lc, f->corrupt))
			m = corrupt(lc, m);
		pkts[k++] = m;
		if (chance(lc, f->dup)) {
			struct rte_mbuf *c = rte_pktmbuf_clone(m, lc->clone_pool);

			if (c != NULL) {
				lc->ctr[DP_CTR_FAULT_DUPLICATED]++;
				pkts[extra++] = c; /* after the burst: room for n more */
			}
		}
	}
	/* The duplicates follow the survivors. */
	for (uint16_t i = n; i < extra; i++)
		pkts[k++] = pkts[i];
	for (uint16_t i = 0; i + 1 < k; i++)
		if (chance(lc, f->reorder)) {
			struct rte_mbuf *t = pkts[i];

			pkts[i] = pkts[i + 1];
			pkts[i + 1] = t;
			lc->ctr[DP_CTR_FAULT_REORDERED]++;
			i++;
		}
	return k;
}

/* Frames ready to go, transmitted in bursts. */
struct out {
	uint16_t n;
	struct rte_mbuf *m[DP_BURST_MAX];
};

static void
out_flush(struct dp_lcore *lc, uint16_t port, struct out *o)
{
	uint16_t sent =
		rte_eth_tx_burst(lc->dp->ports[port].port_id, (uint16_t)lc->idx, o->m, o->n);

	for (uint16_t i = 0; i < sent; i++)
		lc->ctr[DP_CTR_TX_BYTES] += rte_pktmbuf_pkt_len(o->m[i]);
	lc->ctr[DP_CTR_TX_PACKETS] += sent;
	if (sent < o->n) {
		lc->ctr[DP_CTR_TX_DROPPED] += o->n - sent;
		rte_pktmbuf_free_bulk(&o->m[sent], o->n - sent);
	}
	o->n = 0;
}

static inline void
out_add(struct dp_lcore *lc, uint16_t port, struct out *o, struct rte_mbuf *m)
{
	o->m[o->n++] = m;
	if (o->n == DP_BURST_MAX)
		out_flush(lc, port, o);
}

/* Into the delay line (or straight out without delay). */
static inline void
push(struct dp_lcore *lc, uint16_t port, struct out *o, struct rte_mbuf *m, uint64_t due)
{
	struct dp_delay_line *d = &lc->delay[port];

	if (d->mask == 0) {
		out_add(lc, port, o, m);
		return;
	}
	if (d->tail - d->head > d->mask) {
		lc->ctr[DP_CTR_FAULT_DELAY_FULL]++;
		rte_pktmbuf_free(m);
		return;
	}
	d->m[d->tail & d->mask] = m;
	d->t[d->tail & d->mask] = due;
	d->tail++;
}

void
dp_fault_tx_flush(struct dp_lcore *lc, uint16_t port)
{
	const struct dp_fault *f = &lc->dp->ports[port].fault[DP_TX];
	struct dp_delay_line *d = &lc->delay[port];
	/* The `delay` op may change it while this runs (dataplane/slowpath/ctl.c). */
	uint64_t now = rte_rdtsc(), due = now + __atomic_load_n(&f->delay_tsc, __ATOMIC_RELAXED);
	struct rte_mbuf *held = NULL;
	struct out o = {.n = 0};

	for (uint16_t i = 0; i < lc->tx_n[port]; i++) {
		struct rte_mbuf *m = lc->tx[port][i], *c = NULL;

		if (lost(lc, f, port, DP_TX)) {
			lc->ctr[DP_CTR_FAULT_DROPPED]++;
			rte_pktmbuf_free(m);
			continue;
		}
		if (chance(lc, f->corrupt))
			m = corrupt(lc, m);
		if (chance(lc, f->dup)) {
			c = rte_pktmbuf_clone(m, lc->clone_pool);
			lc->ctr[DP_CTR_FAULT_DUPLICATED] += c != NULL;
		}
		if (held == NULL && chance(lc, f->reorder)) {
			held = m; /* goes out behind the next frame */
			lc->ctr[DP_CTR_FAULT_REORDERED]++;
		} else {
			push(lc, port, &o, m, due);
			if (held != NULL) {
				push(lc, port, &o, held, due);
				held = NULL;
			}
		}
		if (c != NULL)
			push(lc, port, &o, c, due);
	}
	if (held != NULL)
		push(lc, port, &o, held, due);
	lc->tx_n[port] = 0;
	while (d->head != d->tail && d->t[d->head & d->mask] <= now) {
		out_add(lc, port, &o, d->m[d->head & d->mask]);
		d->head++;
	}
	if (o.n != 0)
		out_flush(lc, port, &o);
}
