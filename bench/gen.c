/* SPDX-License-Identifier: BSD-3-Clause
 *
 * The traffic generator of georeduce-bench (gen.h). Runs on one lcore; no allocation,
 * lock or system call in the loop except the progress line (one fprintf a second).
 *
 * Cost on the development machine (one core, burst 32, net_ring): about 35 ns to send a
 * frame by reference and 60 ns to take a RESULT copy (parse, checks, bookkeeping), plus
 * the payload compare (memcmp, about 20 GB/s from L2) for the sampled copies.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include <rte_byteorder.h>
#include <rte_cycles.h>
#include <rte_ethdev.h>
#include <rte_malloc.h>
#include <rte_mbuf.h>

#include "bytes.h"
#include "gen.h"
#include "gen_priv.h"

/* --- Latency histogram -------------------------------------------------------------------- */

void
gen_hist_add(struct gen_hist *h, uint64_t ns)
{
	unsigned int idx;

	if (ns < GEN_HIST_SUB) {
		idx = (unsigned int)ns;
	} else {
		unsigned int e = 63u - (unsigned int)__builtin_clzll(ns); /* >= 4 */
		unsigned int sub = (unsigned int)(ns >> (e - 4)) & (GEN_HIST_SUB - 1);

		idx = (e - 3) * GEN_HIST_SUB + sub;
	}
	if (idx >= GEN_HIST_BUCKETS)
		idx = GEN_HIST_BUCKETS - 1;
	h->b[idx]++;
	h->n++;
	if (ns > h->max_ns)
		h->max_ns = ns;
}

double
gen_hist_quantile(const struct gen_hist *h, double q)
{
	uint64_t want, sum = 0;

	if (h->n == 0)
		return 0;
	want = (uint64_t)(q * (double)h->n + 0.999999);
	if (want == 0)
		want = 1;
	for (unsigned int i = 0; i < GEN_HIST_BUCKETS; i++) {
		sum += h->b[i];
		if (sum < want)
			continue;
		if (i < GEN_HIST_SUB)
			return i + 1;
		unsigned int e = i / GEN_HIST_SUB + 3, sub = i % GEN_HIST_SUB;
		double top = (double)(1ull << e) + (double)(sub + 1) * (double)(1ull << (e - 4));

		return RTE_MIN(top, (double)h->max_ns);
	}
	return (double)h->max_ns;
}

/* --- Setup -------------------------------------------------------------------------------- */

void
gen_flow_to_gw(const struct gen_lcore *g, const struct gen_worker *wk, uint32_t chunk,
	       struct wire_flow *fl)
{
	const struct gen_job *gj = g->gj;

	*fl = (struct wire_flow){
		.src_ip = wk->ipv4,
		.dst_ip = gj->gw_ipv4,
		.src_port = (uint16_t)(wk->port + chunk % wk->n_ports),
		.dst_port = wire_udp_port(gj->base_port, gj->n_ports, chunk),
		.ttl = 64,
	};
	memcpy(fl->src_mac, g->prm.src_mac, 6);
	memcpy(fl->dst_mac, g->prm.dst_mac, 6);
}

/* Frame w of chunk index c: contributor w's CONTRIB, or the parent's RESULT (GEN_PARENT)
 * with the exact sum of every contribution and the parent's own. */
static int
build_frame(const struct gen_lcore *g, uint8_t *frame, unsigned int c, unsigned int w)
{
	const struct gen_job *gj = g->gj;
	bool parent = w == GEN_PARENT(gj);
	const struct gen_worker *wk = parent ? &gj->parent : &gj->workers[w];
	struct wire_pkt p = {
		.type = parent ? WIRE_TYPE_RESULT : WIRE_TYPE_CONTRIB,
		.dtype = gj->dtype,
		.job = gj->job,
		.epoch = gj->epoch,
		.tree = gj->tree[c],
		.sender = wk->id,
		.origin = wk->id,
		.contrib = parent ? gj->result_contrib : wk->contrib,
		.cset_blocks = (uint8_t)(gj->cset_len / WIRE_CSET_BLOCK),
		.chunk = gj->chunk[c],
		.count = (uint16_t)gj->elems,
	};
	struct wire_flow fl;
	uint8_t *payload = frame + gj->pl_off, *set = frame + WIRE_FRAME_PAYLOAD_OFF;

	gen_flow_to_gw(g, wk, gj->chunk[c], &fl);
	if (wire_hdr_encode(frame + WIRE_FRAME_HDR_OFF, gj->frame_len - WIRE_FRAME_HDR_OFF, &p,
			    NULL) != 0)
		return -EINVAL;
	if (parent)
		memcpy(payload, g->ch[c].expect, gj->payload);
	else
		gen_contrib_payload(gj, c, w, payload);
	/* Its own set; the parent's names every party and its share (a partial reduce's
	 * RESULT gets the set of the round's partial sum: gen_crew.c). */
	memset(set, 0, gj->cset_len);
	for (unsigned int k = parent ? 0 : w; gj->cset_len != 0 && k <= w; k++)
		for (uint32_t b = 0; b < gj->cset_len; b++)
			set[b] |= gj->sets[(size_t)k * gj->cset_len + b];
	/* No UDP checksum (zero: none): the round is rewritten in frames sent again. */
	return wire_frame_build(frame, gj->frame_len, &fl, gj->frame_len - WIRE_FRAME_HDR_OFF,
				false);
}

struct gen_lcore *
gen_lcore_create(const struct gen_job *gj, const struct gen_params *prm, struct rte_mempool *pool,
		 char *err, size_t errlen)
{
	struct gen_lcore *g = rte_zmalloc("gen_lcore", sizeof(*g), RTE_CACHE_LINE_SIZE);
	unsigned int C = gj->n_chunks, W = gj->n_workers, F = gen_n_frames(gj);
	uint32_t qcap = rte_align32pow2(C * F * 2);

	if (g == NULL) {
		snprintf(err, errlen, "out of memory for the generator");
		return NULL;
	}
	g->gj = gj;
	g->prm = *prm;
	g->pool = pool;
	g->mask_words = (W + 63) / 64;
	g->ch = calloc(C, sizeof(*g->ch));
	g->words = calloc((size_t)C * g->mask_words, sizeof(uint64_t));
	/* A multicast copy is checked against the origin's own frame: no sums. */
	g->expect =
		prm->peer == GEN_PEER_DATAPLANE && gj->mc == NULL ? calloc(C, gj->payload) : NULL;
	g->partial = gj->has_parent && gj->mc == NULL ? calloc(C, gj->payload) : NULL;
	g->seal = gj->n_seals > 0 ? gen_seal_create(gj) : NULL;
	g->sets = gj->cset_len != 0 ? calloc(C, gj->cset_len) : NULL;
	g->q = calloc(qcap, sizeof(*g->q));
	g->q_mask = qcap - 1;
	if (g->ch == NULL || g->words == NULL || g->q == NULL ||
	    (prm->peer == GEN_PEER_DATAPLANE && gj->mc == NULL && g->expect == NULL) ||
	    (gj->has_parent && gj->mc == NULL && (g->partial == NULL || g->expect == NULL)) ||
	    (gj->n_seals > 0 && g->seal == NULL) || (gj->cset_len != 0 && g->sets == NULL)) {
		snprintf(err, errlen, "out of memory for %u chunks", C);
		goto fail;
	}
	for (unsigned int c = 0; c < C; c++) {
		struct gen_chunk *ch = &g->ch[c];

		ch->chunk = gj->chunk[c];
		ch->tree = gj->tree[c];
		ch->dst_port = wire_udp_port(gj->base_port, gj->n_ports, ch->chunk);
		ch->mask = g->words + (size_t)c * g->mask_words;
		ch->deadline = UINT64_MAX;
		ch->frames = calloc(F, sizeof(*ch->frames));
		if (g->sets != NULL)
			ch->set = g->sets + (size_t)c * gj->cset_len;
		if (ch->frames == NULL) {
			snprintf(err, errlen, "out of memory for %u chunks", C);
			goto fail;
		}
		if (g->expect != NULL) {
			ch->expect = g->expect + (size_t)c * gj->payload;
			gen_exact_sum(gj, c, F, g->expect + (size_t)c * gj->payload);
		}
		if (g->partial != NULL) {
			ch->partial = g->partial + (size_t)c * gj->payload;
			gen_exact_sum(gj, c, W, g->partial + (size_t)c * gj->payload);
		}
		for (unsigned int w = 0; w < F; w++) {
			struct rte_mbuf *m = rte_pktmbuf_alloc(pool);
			uint32_t flen = gj->mc != NULL ? gen_mcast_frame_len(gj, w) : gj->frame_len;
			uint8_t *d =
				m == NULL ? NULL : (uint8_t *)rte_pktmbuf_append(m, (uint16_t)flen);

			if (d == NULL) {
				rte_pktmbuf_free(m);
				snprintf(err, errlen,
					 "out of frame buffers (%u x %u frames of %u "
					 "bytes; give EAL more memory, -m)",
					 C, W, gj->frame_len);
				goto fail;
			}
			ch->frames[w] = m;
			if ((gj->mc != NULL ? gen_mcast_build(g, d, c, w) :
					      build_frame(g, d, c, w)) != 0) {
				snprintf(err, errlen, "cannot build the frame of chunk %u",
					 ch->chunk);
				goto fail;
			}
		}
	}
	for (unsigned int c = 0; c < gj->n_chunks; c++)
		g->ch[c].round = prm->first_round > 0 ? prm->first_round - 1 : 0; /* ++ to start */
	g->round_last = (prm->first_round > 0 ? prm->first_round : 1) + prm->rounds - 1;
	g->pace_burst = prm->pace_burst > 0 ? prm->pace_burst : PACE_BURST_BYTES;
	if (prm->rate_gbps > 0)
		g->tsc_per_byte = (double)rte_get_tsc_hz() * 8 / (prm->rate_gbps * 1e9);
	g->ns_per_tsc = 1e9 / (double)rte_get_tsc_hz();
	return g;
fail:
	gen_lcore_free(g);
	return NULL;
}

void
gen_lcore_free(struct gen_lcore *g)
{
	if (g == NULL)
		return;
	for (unsigned int c = 0; g->ch != NULL && c < g->gj->n_chunks; c++) {
		for (unsigned int w = 0; g->ch[c].frames != NULL && w < gen_n_frames(g->gj); w++)
			rte_pktmbuf_free(g->ch[c].frames[w]);
		free(g->ch[c].frames);
	}
	free(g->ch);
	free(g->words);
	free(g->expect);
	free(g->partial);
	free(g->sets);
	gen_seal_free(g->seal);
	free(g->q);
	rte_free(g);
}

const struct gen_result *
gen_lcore_result(const struct gen_lcore *g)
{
	return &g->res;
}

/* --- The loop ----------------------------------------------------------------------------- */

void
gen_fail(struct gen_lcore *g, const char *fmt, ...)
{
	va_list ap;

	g->st.verify_fail++;
	if (g->res.error[0] != '\0')
		return;
	va_start(ap, fmt);
	vsnprintf(g->res.error, sizeof(g->res.error), fmt, ap);
	va_end(ap);
}

void
gen_enqueue(struct gen_lcore *g, unsigned int c, unsigned int w, unsigned int flags)
{
	if (g->ch[c].round & 1)
		flags |= E_ODD;
	g->q[g->q_tail++ & g->q_mask] = (uint64_t)c << 24 | (uint64_t)w << 8 | flags;
	g->ch[c].pending++;
}

/* Whether queue entry e is out of date: a retransmission, request or answer queued for a
 * round of its chunk that has ended since (the chunk closed, or a new round begun: E_ODD
 * is the parity of the round it was queued in), or a multicast request already met. Sent,
 * it would carry the next round's number ahead of that round's first frame. */
static bool
entry_stale(const struct gen_lcore *g, uint64_t e)
{
	const struct gen_chunk *ch = &g->ch[e >> 24];

	if (e & E_FIRST)
		return false; /* the first frame of the current round */
	if (!ch->open || (ch->round & 1) != ((e & E_ODD) != 0))
		return true;
	return g->gj->mc != NULL && gen_mcast_obsolete(g, e);
}

static void
start_round(struct gen_lcore *g, unsigned int c)
{
	struct gen_chunk *ch = &g->ch[c];

	ch->round++;
	ch->open = true;
	ch->got = 0;
	ch->tries = 0;
	ch->t_first = 0;
	ch->deadline = UINT64_MAX;
	ch->answered = false;
	ch->known = false;
	memset(ch->mask, 0, g->mask_words * sizeof(uint64_t));
	g->n_open++;
	if (g->gj->mc != NULL) {
		gen_mcast_start(g, c);
		return;
	}
	for (unsigned int w = 0; w < g->gj->n_workers; w++)
		gen_enqueue(g, c, w, w == 0 ? E_FIRST : 0);
}

static void
set_round(uint8_t *frame, uint32_t round)
{
	uint32_t be = rte_cpu_to_be_32(round);

	memcpy(frame + OFF_ROUND, &be, sizeof(be));
}

/* A frame of a gateway the bench plays over a protected link: the template (which never
 * leaves itself) with the round and flags of this send, sealed into a fresh frame. */
static struct rte_mbuf *
sealed_frame(struct gen_lcore *g, struct rte_mbuf *f, uint32_t round, bool retx, int key)
{
	uint8_t *pf = rte_pktmbuf_mtod(f, uint8_t *), *d;
	uint32_t len = rte_pktmbuf_pkt_len(f); /* frame_len; a NACK_MCAST's header alone */
	struct rte_mbuf *m = rte_pktmbuf_alloc(g->pool);

	set_round(pf, round);
	pf[OFF_FLAGS] = retx ? WIRE_F_RETX : 0;
	if (m == NULL ||
	    (d = (uint8_t *)rte_pktmbuf_append(m, (uint16_t)(len + WIRE_SEAL_OVERHEAD))) == NULL) {
		rte_pktmbuf_free(m);
		g->st.no_mbuf++;
		return NULL;
	}
	if (gen_seal_frame(g->seal, key, pf, len, d) != 0) {
		rte_pktmbuf_free(m);
		gen_fail(g, "cannot seal a frame (OpenSSL)");
		return NULL;
	}
	g->st.sealed++;
	return m;
}

/* The mbuf to send for a queue entry: the worker's frame by reference when nobody else
 * holds it, else a fresh copy. NULL when the pool is empty. */
static struct rte_mbuf *
frame_for(struct gen_lcore *g, uint64_t e)
{
	struct gen_chunk *ch = &g->ch[e >> 24];
	unsigned int w = (e >> 8) & 0xffff;
	struct rte_mbuf *f = ch->frames[w], *m;
	int key = g->gj->mc != NULL    ? gen_mcast_seal(g->gj, e >> 24, w) :
		  w < g->gj->n_workers ? g->gj->workers[w].seal :
					 g->gj->parent.seal;
	uint8_t *d;

	if (key >= 0)
		return sealed_frame(g, f, ch->round, e & E_RETX, key);
	if (!((e & E_FIRST) && g->prm.first_copy) && !(e & E_RETX) &&
	    rte_mbuf_refcnt_read(f) == 1) {
		set_round(rte_pktmbuf_mtod(f, uint8_t *), ch->round);
		rte_mbuf_refcnt_update(f, 1);
		return f;
	}
	m = rte_pktmbuf_alloc(g->pool);
	if (m == NULL ||
	    (d = (uint8_t *)rte_pktmbuf_append(m, (uint16_t)rte_pktmbuf_pkt_len(f))) == NULL) {
		rte_pktmbuf_free(m);
		g->st.no_mbuf++;
		return NULL;
	}
	rte_memcpy(d, rte_pktmbuf_mtod(f, const uint8_t *), rte_pktmbuf_pkt_len(f));
	set_round(d, ch->round);
	if (e & E_RETX)
		d[OFF_FLAGS] = WIRE_F_RETX;
	g->st.tx_copies++;
	return m;
}

/* A queue entry of chunk ch has left the queue, sent or dropped: the round's timer starts
 * once nothing of it is queued. */
static void
entry_done(struct gen_lcore *g, struct gen_chunk *ch, uint64_t now)
{
	if (--ch->pending == 0)
		ch->deadline = now + (g->prm.rto_tsc << RTE_MIN(ch->tries, RTO_SHIFT_MAX));
}

static unsigned int
do_tx(struct gen_lcore *g, uint64_t now)
{
	struct rte_mbuf *pkts[GEN_BURST_MAX];
	uint64_t ents[GEN_BURST_MAX];
	uint32_t lens[GEN_BURST_MAX];
	unsigned int n = 0, want = g->q_tail - g->q_head;
	uint32_t wire = g->gj->frame_len + GEN_WIRE_OVERHEAD;
	uint16_t sent;

	/* Out-of-date entries at the head of the queue leave it unsent. */
	while (g->q_head != g->q_tail && entry_stale(g, g->q[g->q_head & g->q_mask])) {
		uint64_t e = g->q[g->q_head++ & g->q_mask];

		entry_done(g, &g->ch[e >> 24], now);
		want--;
		if (g->gj->mc == NULL)
			continue;
		if (((e >> 8) & 0xffff) < g->gj->n_workers)
			g->st.mc_nacks--; /* counted as sent when queued */
		else
			g->st.mc_repaired--;
		g->st.mc_obsolete++;
	}
	if (want > g->prm.burst)
		want = g->prm.burst;
	if (g->tsc_per_byte > 0 && want > 0) {
		double floor = (double)now - g->pace_burst * g->tsc_per_byte;

		if (g->next_tx < floor)
			g->next_tx = floor;
		double room = ((double)now - g->next_tx) / (g->tsc_per_byte * wire);

		if (room < 1)
			return 0;
		if (room < want)
			want = (unsigned int)room;
	}
	while (n < want) {
		uint64_t e = g->q[(g->q_head + n) & g->q_mask];

		if (entry_stale(g, e))
			break; /* dropped once it is at the head */
		pkts[n] = frame_for(g, e);
		if (pkts[n] == NULL)
			break;
		lens[n] = rte_pktmbuf_pkt_len(pkts[n]);
		ents[n++] = e;
	}
	if (n == 0)
		return 0;
	sent = rte_eth_tx_burst(g->prm.port_id, g->prm.queue, pkts, (uint16_t)n);
	if (sent < n) {
		g->st.tx_refused += n - sent;
		for (unsigned int i = sent; i < n; i++)
			rte_pktmbuf_free(pkts[i]); /* a copy, or our extra reference */
	}
	g->q_head += sent;
	for (unsigned int i = 0; i < sent; i++) {
		struct gen_chunk *ch = &g->ch[ents[i] >> 24];

		if (ch->t_first == 0)
			ch->t_first = now;
		entry_done(g, ch, now);
		if (ents[i] & E_RETX)
			g->st.retx++;
		g->st.tx_bytes += lens[i];
		/* A NACK_MCAST (a header alone) carries no payload. */
		g->st.tx_payload += lens[i] > WIRE_FRAME_PAYLOAD_OFF ? g->gj->payload : 0;
	}
	g->st.tx_pkts += sent;
	if (g->tsc_per_byte > 0)
		g->next_tx += (double)sent * wire * g->tsc_per_byte;
	return sent;
}

int
gen_find_chunk(const struct gen_job *gj, uint32_t chunk)
{
	unsigned int lo = 0, hi = gj->n_chunks;

	while (lo < hi) {
		unsigned int mid = (lo + hi) / 2;

		if (gj->chunk[mid] < chunk)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < gj->n_chunks && gj->chunk[lo] == chunk ? (int)lo : -1;
}

/* The contributor at (ipv4, port): a worker's port, or a port of a child gateway's range.
 * The last entry at or below (ipv4, port) in (ipv4, port) order. */
int
gen_find_worker(const struct gen_job *gj, uint32_t ipv4, uint16_t port)
{
	uint64_t key = (uint64_t)ipv4 << 16 | port;
	unsigned int lo = 0, hi = gj->n_workers;

	while (lo < hi) {
		unsigned int mid = (lo + hi) / 2;

		if (((uint64_t)gj->workers[mid].ipv4 << 16 | gj->workers[mid].port) <= key)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == 0)
		return -1;
	const struct gen_worker *w = &gj->workers[lo - 1];

	return w->ipv4 == ipv4 && (uint16_t)(port - w->port) < w->n_ports ? (int)(lo - 1) : -1;
}

/* Whether ipv4 is an address the generator plays: a contributor's or the parent's. */
static bool
plays_ip(const struct gen_job *gj, uint32_t ipv4)
{
	for (unsigned int w = 0; w < gj->n_workers; w++)
		if (gj->workers[w].ipv4 == ipv4)
			return true;
	return gj->has_parent && gj->parent.ipv4 == ipv4;
}

/* Build an ARP frame in the empty mbuf m: op 1 (request) or 2 (reply). False if m has no
 * room for it. */
static bool
arp_frame(struct rte_mbuf *m, uint16_t op, const uint8_t *src_mac, uint32_t sip,
	  const uint8_t *dst_mac, uint32_t tip)
{
	static const uint8_t bcast[6] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff};
	uint8_t *d = (uint8_t *)rte_pktmbuf_append(m, 60);
	uint32_t be;

	if (d == NULL)
		return false;
	memset(d, 0, 60);
	memcpy(d, op == 1 ? bcast : dst_mac, 6);
	memcpy(d + 6, src_mac, 6);
	d[12] = 0x08, d[13] = 0x06; /* ARP */
	d[14] = 0, d[15] = 1;       /* Ethernet */
	d[16] = 0x08, d[17] = 0;    /* IPv4 */
	d[18] = 6, d[19] = 4;
	d[20] = 0, d[21] = (uint8_t)op;
	memcpy(d + 22, src_mac, 6);
	be = rte_cpu_to_be_32(sip);
	memcpy(d + 28, &be, 4);
	if (op == 2)
		memcpy(d + 32, dst_mac, 6);
	be = rte_cpu_to_be_32(tip);
	memcpy(d + 38, &be, 4);
	return true;
}

/* An ARP frame: answer requests for a worker's address. */
static void
rx_arp(struct gen_lcore *g, const uint8_t *d, uint32_t len)
{
	struct rte_mbuf *m;
	uint32_t tip, sip;

	if (len < 42 || d[20] != 0 || d[21] != 1 || !g->prm.answer_arp)
		return;
	sip = be32_get(d + 28);
	tip = be32_get(d + 38);
	if (!plays_ip(g->gj, tip) || (m = rte_pktmbuf_alloc(g->pool)) == NULL)
		return;
	if (arp_frame(m, 2, g->prm.src_mac, tip, d + 22, sip) &&
	    rte_eth_tx_burst(g->prm.port_id, g->prm.queue, &m, 1) == 1)
		g->st.arp_replies++;
	else
		rte_pktmbuf_free(m);
}

void
gen_chunk_done(struct gen_lcore *g, unsigned int c, uint64_t now)
{
	struct gen_chunk *ch = &g->ch[c];

	gen_hist_add(&g->hist, (uint64_t)((double)(now - ch->t_first) * g->ns_per_tsc));
	g->st.chunks++;
	ch->open = false;
	ch->deadline = UINT64_MAX;
	g->n_open--;
	if (!g->draining && (g->prm.rounds == 0 || (int32_t)(ch->round - g->round_last) < 0))
		start_round(g, c);
}

bool
gen_link_ok(struct gen_lcore *g, uint16_t id, int want, int key)
{
	if (want == key)
		return true;
	gen_fail(g, "a frame for gateway %u came %s, its link is %s", id,
		 key < 0 ? "plain" : "sealed under another link's key",
		 want < 0 ? "plain" : "sealed");
	return false;
}

/* gen_link_ok() for party w (GEN_PARENT: the parent). */
static bool
link_ok(struct gen_lcore *g, unsigned int w, int key)
{
	const struct gen_job *gj = g->gj;

	return w < gj->n_workers ? gen_link_ok(g, gj->workers[w].id, gj->workers[w].seal, key) :
				   gen_link_ok(g, gj->parent.id, gj->parent.seal, key);
}

/* A CONTRIB or RESULT carries the job's contributor set, other types none. */
static bool
cset_ok(const struct gen_job *gj, const uint8_t *h)
{
	uint8_t type = h[WIRE_FRAME_HDR_OFF + 3], blocks = h[WIRE_FRAME_HDR_OFF + 6];

	return blocks == ((type == WIRE_TYPE_CONTRIB || type == WIRE_TYPE_RESULT) ?
				  gj->cset_len / WIRE_CSET_BLOCK :
				  0);
}

/* One received frame h (len bytes, contiguous); key: the protected link's key that opened
 * it, -1 if it came plain; wire_len: its length on the wire. */
static void
rx_frame(struct gen_lcore *g, const uint8_t *h, uint32_t len, int key, uint32_t wire_len,
	 uint64_t now)
{
	const struct gen_job *gj = g->gj;
	struct wire_flow fl;
	struct wire_pkt p;
	size_t ulen;
	int c, w;

	if (len < WIRE_FRAME_PAYLOAD_OFF ||
	    wire_frame_parse_flags(h, len, WIRE_PARSE_NO_UDP_CSUM, &fl, NULL, &ulen, NULL) != 0 ||
	    !cset_ok(gj, h) || wire_hdr_decode(h + WIRE_FRAME_HDR_OFF, ulen, &p, NULL) != 0 ||
	    p.job != gj->job || p.epoch != gj->epoch)
		goto unexpected;
	if (p.type == WIRE_TYPE_ACK) {
		g->st.acks++;
		return;
	}
	if (gj->mc != NULL) {
		if (g->prm.peer != GEN_PEER_DATAPLANE ||
		    gen_mcast_rx(g, h, &p, &fl, len, key, wire_len, now) != 0)
			goto unexpected;
		return;
	}
	if (gj->has_parent && fl.dst_ip == gj->parent.ipv4 && g->prm.peer == GEN_PEER_DATAPLANE) {
		if (link_ok(g, GEN_PARENT(gj), key) && gen_parent_rx(g, h, &p, &fl, len) != 0)
			goto unexpected;
		return;
	}
	if (p.type == WIRE_TYPE_NACK_RESULT && g->prm.peer == GEN_PEER_DATAPLANE &&
	    gen_find_worker(gj, fl.dst_ip, fl.dst_port) >= 0) {
		/* Result recovery asking a worker or child (docs/PROTOCOL.md 10.1): the bench
		 * keeps no RESULT of an ended round to answer with, as a worker may not. */
		g->st.nacks_down++;
		return;
	}
	if (g->prm.peer == GEN_PEER_IO) {
		if (p.type != WIRE_TYPE_CONTRIB)
			goto unexpected;
		w = gen_find_worker(gj, fl.src_ip, fl.src_port);
	} else {
		if (p.type != WIRE_TYPE_RESULT)
			goto unexpected;
		w = gen_find_worker(gj, fl.dst_ip, fl.dst_port);
	}
	c = gen_find_chunk(gj, p.chunk);
	if (w < 0 || c < 0 || p.tree != gj->tree[c])
		goto unexpected;
	struct gen_chunk *ch = &g->ch[c];
	uint64_t bit = 1ull << (w % 64);

	if (g->prm.peer == GEN_PEER_DATAPLANE && !link_ok(g, (unsigned int)w, key))
		return;

	if (!ch->open || p.round != ch->round) {
		g->st.stale++;
		return;
	}
	if (ch->mask[w / 64] & bit) {
		g->st.duplicates++;
		return;
	}
	if (g->prm.peer == GEN_PEER_DATAPLANE) {
		const struct gen_worker *wk = &gj->workers[w];

		if ((gj->cset_len == 0 && p.contrib != gj->result_contrib) ||
		    p.count != gj->elems || p.origin != gj->root_id || p.sender != gj->gw_id ||
		    fl.src_ip != gj->gw_ipv4 || fl.src_port != ch->dst_port ||
		    len != gj->frame_len || fl.dst_port != wk->port + p.chunk % wk->n_ports) {
			gen_fail(g,
				 "chunk %u round %u: a RESULT to %u with contrib %u of %u, count "
				 "%u, origin %u, sender %u, %u bytes",
				 p.chunk, p.round, wk->id, p.contrib, gj->result_contrib, p.count,
				 p.origin, p.sender, len);
			return;
		}
		if (gj->cset_len != 0 && !gen_crew_result(g, (unsigned int)c, h, &p))
			return;
		if (g->verify_tick++ % g->prm.verify_every == 0) {
			const uint8_t *pl = h + gj->pl_off;

			g->st.verified++;
			if (memcmp(pl, ch->expect, gj->payload) != 0) {
				gen_wrong(g, pl, ch->expect, &p, "the RESULT to",
					  gj->workers[w].id);
				return;
			}
		}
	}
	ch->mask[w / 64] |= bit;
	g->st.rx_ok++;
	g->st.rx_ok_bytes += wire_len;
	g->st.rx_payload += gj->payload;
	if (++ch->got == gj->n_workers)
		gen_chunk_done(g, (unsigned int)c, now);
	return;
unexpected:
	g->st.unexpected++;
}

static void
rx_one(struct gen_lcore *g, struct rte_mbuf *m, uint64_t now)
{
	uint32_t len = rte_pktmbuf_pkt_len(m);
	const uint8_t *h = len <= sizeof(g->lin) ? rte_pktmbuf_read(m, 0, len, g->lin) : NULL;
	int n, key = -1;

	g->st.rx_pkts++;
	g->st.rx_bytes += len;
	if (h == NULL || len < 14) {
		g->st.unexpected++;
		return;
	}
	if (h[12] == 0x08 && h[13] == 0x06) {
		rx_arp(g, h, len);
		return;
	}
	if (g->seal == NULL || !gen_seal_is_sealed(h, len)) {
		rx_frame(g, h, len, -1, len, now);
		return;
	}
	n = gen_seal_open(g->seal, h, len, g->opened, &key);
	if (n < 0) {
		gen_fail(g, "a sealed frame from the gateway that does not open (%s)",
			 n == -ENOKEY ? "no such key" : "malformed, or a wrong tag");
		return;
	}
	g->st.opened++;
	rx_frame(g, g->opened, (uint32_t)n, key, len, now);
}

/* Rounds overdue: send again, with RETX, the frames of the workers still waiting. */
static void
timers(struct gen_lcore *g, uint64_t now)
{
	for (unsigned int c = 0; c < g->gj->n_chunks; c++) {
		struct gen_chunk *ch = &g->ch[c];

		if (!ch->open || ch->pending != 0 || now < ch->deadline)
			continue;
		g->st.timeouts++;
		if (ch->tries < UINT8_MAX)
			ch->tries++;
		ch->deadline = UINT64_MAX;
		if (g->gj->mc != NULL) {
			gen_mcast_timeout(g, c);
			continue;
		}
		for (unsigned int w = 0; w < g->gj->n_workers; w++)
			if (!(ch->mask[w / 64] & 1ull << (w % 64)))
				gen_enqueue(g, c, w, E_RETX);
	}
}

static void
progress(struct gen_lcore *g, uint64_t now, uint64_t t0, const char *label, struct gen_stats *last,
	 uint64_t *last_tsc)
{
	double s = (double)(now - *last_tsc) / (double)rte_get_tsc_hz();
	const struct gen_stats *st = &g->st;

	fprintf(stderr,
		GEN_PROG ": %5.1f s%s: offered %.2f Gbit/s (%.2f Mpps), achieved "
			 "%.2f Gbit/s (%.2f Mpps), %.0f chunks/s, %u open, %" PRIu64
			 " retransmitted\n",
		(double)(now - t0) / (double)rte_get_tsc_hz(), label,
		(double)(st->tx_payload - last->tx_payload) * 8 / s / 1e9,
		(double)(st->tx_pkts - last->tx_pkts) / s / 1e6,
		(double)(st->rx_payload - last->rx_payload) * 8 / s / 1e9,
		(double)(st->rx_ok - last->rx_ok) / s / 1e6,
		(double)(st->chunks - last->chunks) / s, g->n_open, st->retx);
	*last = *st;
	*last_tsc = now;
}

int
gen_lcore_main(void *arg)
{
	struct gen_lcore *g = arg;
	struct rte_mbuf *pkts[GEN_BURST_MAX];
	double hz = (double)rte_get_tsc_hz();
	uint64_t timer_tsc = (uint64_t)(hz * TIMER_US / 1e6), t0 = rte_rdtsc();
	uint64_t next_timer = t0 + timer_tsc, last_tsc = t0;
	uint64_t prog_tsc = (uint64_t)(g->prm.progress_s * hz);
	uint64_t t_mark = t0 + (uint64_t)(g->prm.warmup_s * hz);
	uint64_t t_end = t_mark + (uint64_t)(g->prm.duration_s * hz), t_stop = 0;
	bool marked = false;
	struct gen_stats last = g->st;
	unsigned int deferred = 0;

	for (unsigned int c = 0; c < g->gj->n_chunks; c++)
		start_round(g, c);
	for (;;) {
		uint64_t start = rte_rdtsc(), now;
		uint16_t n;
		unsigned int work;

		n = rte_eth_rx_burst(g->prm.port_id, g->prm.queue, pkts, (uint16_t)g->prm.burst);
		now = rte_rdtsc();
		for (uint16_t i = 0; i < n; i++) {
			if (i + 1 < n)
				rte_prefetch0(rte_pktmbuf_mtod(pkts[i + 1], void *));
			rx_one(g, pkts[i], now);
		}
		if (n != 0)
			rte_pktmbuf_free_bulk(pkts, n);
		work = n + do_tx(g, now);
		if (work != 0)
			g->st.busy_cycles += rte_rdtsc() - start;
		if (now < next_timer)
			continue;
		/* A full burst: more may wait in the RX ring (the generator was held off its core
		 * while the gateway went on sending). The timers wait until the ring is drained,
		 * so that no round is found overdue, and asked for again, while what it waits
		 * for has already come; at most RX_DRAIN_MAX bursts, should it never drain. */
		if (n == g->prm.burst && ++deferred < RX_DRAIN_MAX)
			continue;
		deferred = 0;
		/* Once a millisecond: timers, schedule, progress. */
		next_timer = now + timer_tsc;
		timers(g, now);
		if (!marked && now >= t_mark) {
			marked = true;
			memset(&g->hist, 0, sizeof(g->hist));
			g->res.start = g->st;
			if (g->prm.on_mark != NULL)
				g->prm.on_mark(g->prm.mark_arg, false);
			t_end = now + (uint64_t)(g->prm.duration_s * hz);
			g->res.measured_tsc = now;
		} else if (marked && !g->draining &&
			   (now >= t_end || (g->prm.rounds != 0 && g->n_open == 0))) {
			g->res.end = g->st;
			g->res.hist = g->hist;
			if (g->prm.on_mark != NULL)
				g->prm.on_mark(g->prm.mark_arg, true);
			g->res.measured_tsc = now - g->res.measured_tsc;
			g->draining = true;
			t_stop = now + (uint64_t)(g->prm.drain_s * hz);
		}
		if (g->prm.progress && now - last_tsc >= prog_tsc)
			progress(g, now, t0,
				 g->draining ? " (draining)" :
				 marked      ? "" :
					       " (warm-up)",
				 &last, &last_tsc);
		if (g->draining && (g->n_open == 0 || now >= t_stop))
			break;
	}
	g->res.open_after_drain = g->n_open;
	g->res.final = g->st;
	for (unsigned int c = 0; c < g->gj->n_chunks; c++)
		if (c == 0 || (int32_t)(g->ch[c].round - g->res.last_round) > 0)
			g->res.last_round = g->ch[c].round;
	/* Give back what is still queued: nothing was built for it. */
	for (; g->q_head != g->q_tail; g->q_head++)
		g->ch[g->q[g->q_head & g->q_mask] >> 24].pending--;
	return 0;
}

/* --- Neighbour resolution (port mode) ----------------------------------------------------- */

int
gen_arp_resolve(uint16_t port_id, uint16_t queue, struct rte_mempool *pool,
		const struct gen_job *gj, const uint8_t *src_mac, double timeout_s, uint8_t *gw_mac)
{
	uint64_t hz = rte_get_tsc_hz(), end = rte_rdtsc() + (uint64_t)(timeout_s * (double)hz);
	uint64_t next_req = 0;
	bool found = false;
	struct gen_lcore g = {.gj = gj, .pool = pool};

	g.prm.port_id = port_id;
	g.prm.queue = queue;
	g.prm.answer_arp = true;
	memcpy(g.prm.src_mac, src_mac, 6);
	/* Once the gateway answered, keep answering a little longer: its control thread
	 * learns the workers' MACs from the requests within a few housekeeping periods. */
	while (rte_rdtsc() < end) {
		struct rte_mbuf *pkts[GEN_BURST_MAX];
		uint16_t n;

		if (rte_rdtsc() >= next_req) {
			/* Who has the gateway, from every worker: the gateway learns each
			 * worker's MAC from its request and answers the first. */
			for (unsigned int w = 0; w < gj->n_workers + gj->has_parent; w++) {
				struct rte_mbuf *m = rte_pktmbuf_alloc(pool);
				uint32_t sip =
					w < gj->n_workers ? gj->workers[w].ipv4 : gj->parent.ipv4;

				if (m == NULL)
					break;
				if (!arp_frame(m, 1, src_mac, sip, NULL, gj->gw_ipv4) ||
				    rte_eth_tx_burst(port_id, queue, &m, 1) != 1)
					rte_pktmbuf_free(m);
			}
			next_req = rte_rdtsc() + hz / 4;
		}
		n = rte_eth_rx_burst(port_id, queue, pkts, GEN_BURST_MAX);
		for (uint16_t i = 0; i < n; i++) {
			uint8_t buf[64];
			uint32_t len = rte_pktmbuf_pkt_len(pkts[i]);
			const uint8_t *d = rte_pktmbuf_read(pkts[i], 0, RTE_MIN(len, 64u), buf);

			if (d == NULL || len < 42 || d[12] != 0x08 || d[13] != 0x06)
				continue;
			if (d[21] == 2 && be32_get(d + 28) == gj->gw_ipv4) {
				memcpy(gw_mac, d + 22, 6);
				if (!found)
					end = RTE_MIN(end, rte_rdtsc() + hz / 5);
				found = true;
			} else {
				rx_arp(&g, d, len);
			}
		}
		if (n != 0)
			rte_pktmbuf_free_bulk(pkts, n);
	}
	return found ? 0 : -ETIMEDOUT;
}
