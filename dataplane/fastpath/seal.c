/* SPDX-License-Identifier: BSD-3-Clause
 *
 * Fast path: sealing and opening the frames of protected links (docs/PROTOCOL.md section
 * 14) with a cryptodev AEAD (AES-GCM; crypto_aesni_gcm or crypto_aesni_mb on machines
 * without a crypto NIC). Each worker lcore owns queue pair lc->idx of the device and its
 * own sequence numbers and replay windows in every key; sessions are the control
 * thread's. Operations are enqueued and dequeued one frame at a time: the software PMDs
 * complete an operation within the enqueue call.
 *
 * Sealed frame: Ethernet | IPv4 | UDP | seal header (32) | georeduce packet, encrypted |
 * tag (16). The seal header is the AAD; the IV is its bytes 12-23 (sender, lane, sequence).
 *
 * Calls go one way: receiving (rx.c) queues frames to open and takes back the plain ones;
 * sending (seal.h's dp_wire_out(), the pacers) queues frames to seal; a sealed frame goes
 * on to TX staging (tx.h). Nothing here calls back into receiving or aggregation.
 */
#include <string.h>

#include <rte_branch_prediction.h>
#include <rte_byteorder.h>
#include <rte_crypto.h>
#include <rte_cryptodev.h>
#include <rte_ip.h>
#include <rte_mbuf.h>
#include <rte_pause.h>
#include <rte_udp.h>

#include "bytes.h"
#include "dp.h"
#include "fastpath/seal.h"

#define IV_OFFSET (sizeof(struct rte_crypto_op) + sizeof(struct rte_crypto_sym_op))
#define SEAL_OFF WIRE_FRAME_HDR_OFF                      /* seal header in the frame */
#define INNER_OFF (WIRE_FRAME_HDR_OFF + DP_SEAL_HDR_LEN) /* the georeduce packet */
#define SPIN_MAX (1u << 20)                              /* dequeue polls for one operation */

/* Whether seq may be accepted by window w (RFC 4303 style, DP_REPLAY_WINDOW wide). */
static inline bool
replay_fresh(const struct dp_replay *w, uint64_t seq)
{
	if (seq > w->top)
		return true;
	uint64_t d = w->top - seq;

	return d < DP_REPLAY_WINDOW && !(w->bits >> d & 1);
}

/* seq authenticated: remember it. */
static inline void
replay_mark(struct dp_replay *w, uint64_t seq)
{
	if (seq > w->top) {
		uint64_t d = seq - w->top;

		w->bits = d >= DP_REPLAY_WINDOW ? 1 : w->bits << d | 1;
		w->top = seq;
		return;
	}
	w->bits |= 1ull << (w->top - seq);
}

/* A crypto operation: AES-GCM over the len bytes of the georeduce packet at offset off of
 * src, written in place or (dst not NULL) at the same offset of dst; the seal header at
 * aad_off of the output the AAD (its bytes 12-23 the IV), the tag right after the output
 * packet; sess seals or opens. NULL if the pool is empty (counted). */
static struct rte_crypto_op *
aead_op(struct dp_lcore *lc, void *sess, struct rte_mbuf *src, struct rte_mbuf *dst, uint32_t off,
	uint32_t aad_off, uint32_t len)
{
	struct rte_mbuf *m = dst != NULL ? dst : src;
	struct rte_crypto_op *op = rte_crypto_op_alloc(lc->op_pool, RTE_CRYPTO_OP_TYPE_SYMMETRIC);

	if (unlikely(op == NULL)) {
		lc->ctr[DP_CTR_NO_MBUF]++;
		return NULL;
	}
	struct rte_crypto_sym_op *sym = op->sym;

	memcpy(rte_crypto_op_ctod_offset(op, uint8_t *, IV_OFFSET),
	       rte_pktmbuf_mtod_offset(m, uint8_t *, aad_off + 12), DP_SEAL_IV_LEN);
	sym->m_src = src;
	sym->m_dst = dst;
	sym->aead.data.offset = off;
	sym->aead.data.length = len;
	sym->aead.digest.data = rte_pktmbuf_mtod_offset(m, uint8_t *, off + len);
	sym->aead.digest.phys_addr = rte_pktmbuf_iova_offset(m, off + len);
	sym->aead.aad.data = rte_pktmbuf_mtod_offset(m, uint8_t *, aad_off);
	sym->aead.aad.phys_addr = rte_pktmbuf_iova_offset(m, aad_off);
	rte_crypto_op_attach_sym_session(op, sess);
	return op;
}

/*
 * Run the n operations ops[] on the lcore's queue pair: one enqueue burst, then dequeue
 * until every one has come back (the software PMDs complete them within the enqueue
 * call). ok[i] tells whether ops[i] succeeded. Operations the device did not take fail.
 * A device that does not return an operation within SPIN_MAX polls is taken to have failed
 * it (never with the software PMDs).
 */
static void
aead_burst(struct dp_lcore *lc, struct rte_crypto_op **ops, uint16_t n, bool *ok)
{
	uint8_t dev = lc->dp->crypto.dev_id;
	uint16_t qp = (uint16_t)lc->idx;
	uint16_t in = rte_cryptodev_enqueue_burst(dev, qp, ops, n), out = 0;
	struct rte_crypto_op *done[2 * DP_BURST_MAX];

	for (uint16_t i = 0; i < n; i++)
		ok[i] = false;
	for (uint32_t spin = 0; out < in && spin < SPIN_MAX; spin++) {
		uint16_t k = rte_cryptodev_dequeue_burst(dev, qp, done, (uint16_t)(in - out));

		for (uint16_t d = 0; d < k; d++) {
			uint32_t idx = *rte_crypto_op_ctod_offset(done[d], uint32_t *,
								  IV_OFFSET + DP_SEAL_IV_LEN);

			if (idx < n && ops[idx] == done[d])
				ok[idx] = done[d]->status == RTE_CRYPTO_OP_STATUS_SUCCESS;
		}
		out = (uint16_t)(out + k);
		if (k == 0)
			rte_pause();
	}
	for (uint16_t i = 0; i < n; i++)
		rte_crypto_op_free(ops[i]);
}

/* Number op i of a burst (aead_burst() matches what comes back by it). */
static inline void
op_index(struct rte_crypto_op *op, uint32_t i)
{
	*rte_crypto_op_ctod_offset(op, uint32_t *, IV_OFFSET + DP_SEAL_IV_LEN) = i;
}

/* The key of (job, key id, sender) among the job's installed epochs, and its epoch. */
static const struct dp_seal *
find_key(const struct dp_state *st, uint32_t job, uint32_t key_id, uint16_t sender, uint8_t aead,
	 const struct dp_job **jo)
{
	for (int i = 0; st != NULL && i < st->n_jobs; i++) {
		if (st->jobs[i].job != job)
			continue;
		for (int e = 0; e < st->jobs[i].n_epochs; e++) {
			const struct dp_job *j = st->jobs[i].epochs[e];

			for (int k = 0; k < j->n_seals; k++)
				if (j->seals[k].peer == sender && j->seals[k].key_id == key_id &&
				    j->seals[k].aead == aead) {
					*jo = j;
					return &j->seals[k];
				}
		}
	}
	return NULL;
}

static inline void
drop(struct dp_lcore *lc, struct rte_mbuf *m, enum wire_reason why)
{
	lc->ctr[DP_CTR_BAD_HEADER]++;
	lc->drops[why]++;
	rte_pktmbuf_free(m);
}

/* dp_open_queue() up to the reason to drop m, or WIRE_REASON_NONE with m (perhaps a
 * private copy of it, *mp) queued. */
static enum wire_reason
open_queue(struct dp_lcore *lc, const struct dp_state *st, struct rte_mbuf **mp, uint16_t port,
	   size_t plen)
{
	struct rte_mbuf *m = *mp;
	const uint8_t *sh = rte_pktmbuf_mtod_offset(m, const uint8_t *, SEAL_OFF);
	const struct dp_job *j = NULL;

	if (unlikely(!lc->dp->crypto.on || plen < DP_SEAL_OVERHEAD + WIRE_HDR_LEN ||
		     sh[2] != DP_SEAL_VERSION || be64_get(sh + 24) != 0))
		return WIRE_REASON_BAD_SEAL;
	uint32_t job = be32_get(sh + 4), key_id = be32_get(sh + 8);
	uint16_t sender = be16_get(sh + 12), lane = be16_get(sh + 14);
	uint64_t seq = be64_get(sh + 16);

	if (unlikely(lane >= DP_SEAL_LANES || seq == 0))
		return WIRE_REASON_BAD_SEAL;
	const struct dp_seal *k = find_key(st, job, key_id, sender, sh[3], &j);

	if (unlikely(k == NULL))
		return WIRE_REASON_UNKNOWN_KEY;
	if (unlikely(!replay_fresh(&k->rx[lc->idx * DP_SEAL_LANES + lane], seq)))
		return WIRE_REASON_REPLAY;
	/* Opened in place: a frame whose buffer another mbuf shares (a duplicate of fault
	 * injection) is copied first, or the two decryptions would write over each other. */
	if (unlikely(!RTE_MBUF_DIRECT(m) || rte_mbuf_refcnt_read(m) != 1)) {
		struct rte_mbuf *c = rte_pktmbuf_copy(m, lc->pool, 0, UINT32_MAX);

		if (c == NULL) {
			lc->ctr[DP_CTR_NO_MBUF]++;
			return WIRE_REASON_BAD_SEAL;
		}
		rte_pktmbuf_free(m);
		*mp = m = c;
	}
	uint32_t len = (uint32_t)(plen - DP_SEAL_OVERHEAD);
	struct rte_crypto_op *op = aead_op(lc, k->dec, m, NULL, INNER_OFF, SEAL_OFF, len);

	if (unlikely(op == NULL))
		return WIRE_REASON_BAD_SEAL; /* counted as no_mbuf too */
	op_index(op, lc->n_open);
	lc->open_q[lc->n_open++] = (struct dp_open_op){
		.m = m,
		.op = op,
		.j = j,
		.k = k,
		.seq = seq,
		.len = len,
		.lane = lane,
		.port = port,
	};
	return WIRE_REASON_NONE;
}

void
dp_open_queue(struct dp_lcore *lc, const struct dp_state *st, struct rte_mbuf *m, uint16_t port,
	      size_t plen)
{
	enum wire_reason why = open_queue(lc, st, &m, port, plen);

	if (unlikely(why != WIRE_REASON_NONE))
		drop(lc, m, why);
}

uint16_t
dp_open_flush(struct dp_lcore *lc)
{
	struct rte_crypto_op *ops[RTE_DIM(lc->open_q)];
	bool ok[RTE_DIM(lc->open_q)];
	uint16_t n = lc->n_open, opened = 0;

	if (n == 0)
		return 0;
	for (uint16_t i = 0; i < n; i++)
		ops[i] = lc->open_q[i].op;
	aead_burst(lc, ops, n, ok);
	lc->n_open = 0;
	for (uint16_t i = 0; i < n; i++) {
		const struct dp_open_op *q = &lc->open_q[i];
		struct rte_mbuf *m = q->m;
		uint8_t *f = rte_pktmbuf_mtod(m, uint8_t *);
		const uint8_t *sh = f + SEAL_OFF, *g = f + INNER_OFF;
		struct dp_replay *w = &q->k->rx[lc->idx * DP_SEAL_LANES + q->lane];

		if (unlikely(!ok[i])) {
			drop(lc, m, WIRE_REASON_BAD_TAG);
			continue;
		}
		/* Authentic: the packet inside must be the key's job, epoch and sender; a frame
		 * of the same sequence number earlier in the burst took it first. */
		if (unlikely(be32_get(g + 8) != be32_get(sh + 4) ||
			     be32_get(g + 12) != q->j->epoch ||
			     be16_get(g + 18) != be16_get(sh + 12))) {
			drop(lc, m, WIRE_REASON_UNKNOWN_KEY);
			continue;
		}
		if (unlikely(!replay_fresh(w, q->seq))) {
			drop(lc, m, WIRE_REASON_REPLAY);
			continue;
		}
		replay_mark(w, q->seq);
		lc->ctr[DP_CTR_OPENED]++;
		lc->ctr[DP_CTR_OPEN_BYTES] += q->len;
		/* The plain frame: its Ethernet, IPv4 and UDP headers move up to the packet. */
		memmove(f + DP_SEAL_HDR_LEN, f, WIRE_FRAME_HDR_OFF);
		rte_pktmbuf_adj(m, DP_SEAL_HDR_LEN);
		rte_pktmbuf_trim(m, DP_SEAL_TAG_LEN);
		f = rte_pktmbuf_mtod(m, uint8_t *);
		struct rte_ipv4_hdr *ip = (struct rte_ipv4_hdr *)(f + WIRE_ETH_LEN);
		struct rte_udp_hdr *udp = (struct rte_udp_hdr *)(f + WIRE_ETH_LEN + WIRE_IPV4_LEN);

		ip->total_length =
			rte_cpu_to_be_16((uint16_t)(WIRE_IPV4_LEN + WIRE_UDP_LEN + q->len));
		udp->dgram_len = rte_cpu_to_be_16((uint16_t)(WIRE_UDP_LEN + q->len));
		udp->dgram_cksum = 0;
		/* Its sender is the key's gateway, not its address (validate.h). */
		m->ol_flags |= RTE_MBUF_F_RX_SEC_OFFLOAD;
		m->hash.usr = q->k->peer;
		lc->open_q[opened++] = *q; /* in order, over the entries done with */
	}
	return opened;
}

void
dp_seal_queue(struct dp_lcore *lc, const struct dp_job *j, const struct dp_seal *k,
	      struct rte_mbuf *m, uint16_t port)
{
	uint32_t len = rte_pktmbuf_pkt_len(m) - WIRE_FRAME_HDR_OFF;
	/* Out of place where the device can: the packet is encrypted from where it is (a
	 * RESULT copy's two segments, a partial sum the slot keeps) into the sealed frame.
	 * The operation's offsets are the same in both mbufs, so the sealed frame's data
	 * starts DP_SEAL_HDR_LEN bytes on until the burst is done (its packet then lands at
	 * INNER_OFF of the frame). Otherwise the packet is gathered and sealed in place. */
	bool oop = m->nb_segs == 1 ? lc->dp->crypto.oop_lb : lc->dp->crypto.oop_sgl;
	uint32_t shift = oop ? DP_SEAL_HDR_LEN : 0;
	struct rte_mbuf *s = rte_pktmbuf_alloc(lc->seal_pool);
	uint8_t *f = NULL;

	if (likely(s != NULL)) {
		s->data_off = (uint16_t)(s->data_off + shift);
		f = (uint8_t *)rte_pktmbuf_append(
			s, (uint16_t)(INNER_OFF - shift + len + DP_SEAL_TAG_LEN));
	}
	if (unlikely(f == NULL)) {
		rte_pktmbuf_free(s);
		rte_pktmbuf_free(m);
		lc->ctr[DP_CTR_NO_MBUF]++;
		return;
	}
	f -= shift; /* the frame's first byte */
	memcpy(f, rte_pktmbuf_mtod(m, const uint8_t *), WIRE_FRAME_HDR_OFF);
	if (!oop) {
		const uint8_t *g = rte_pktmbuf_read(m, WIRE_FRAME_HDR_OFF, len, f + INNER_OFF);

		if (g != f + INNER_OFF)
			memcpy(f + INNER_OFF, g, len);
		rte_pktmbuf_free(m);
	}
	struct rte_ipv4_hdr *ip = (struct rte_ipv4_hdr *)(f + WIRE_ETH_LEN);
	struct rte_udp_hdr *udp = (struct rte_udp_hdr *)(f + WIRE_ETH_LEN + WIRE_IPV4_LEN);
	uint16_t udp_len = (uint16_t)(WIRE_UDP_LEN + DP_SEAL_OVERHEAD + len);

	ip->total_length = rte_cpu_to_be_16((uint16_t)(WIRE_IPV4_LEN + udp_len));
	ip->hdr_checksum = 0;
	ip->hdr_checksum = rte_ipv4_cksum(ip);
	udp->dgram_len = rte_cpu_to_be_16(udp_len);
	udp->dgram_cksum = 0; /* the tag covers more than a checksum would */
	/* The seal header (the AAD; bytes 12-23 the IV). */
	uint8_t *sh = f + SEAL_OFF;
	uint64_t seq = ++k->tx_seq[lc->idx];

	sh[0] = DP_SEAL_MAGIC >> 8;
	sh[1] = DP_SEAL_MAGIC & 0xff;
	sh[2] = DP_SEAL_VERSION;
	sh[3] = k->aead;
	be32_put(sh + 4, j->job);
	be32_put(sh + 8, k->key_id);
	sh[12] = (uint8_t)(j->self_id >> 8);
	sh[13] = (uint8_t)j->self_id;
	sh[14] = (uint8_t)(lc->idx >> 8);
	sh[15] = (uint8_t)lc->idx;
	be32_put(sh + 16, (uint32_t)(seq >> 32));
	be32_put(sh + 20, (uint32_t)seq);
	memset(sh + 24, 0, 8);
	if (lc->n_seal == DP_SEAL_BATCH)
		dp_seal_flush(lc);
	struct rte_crypto_op *op =
		oop ? aead_op(lc, k->enc, m, s, WIRE_FRAME_HDR_OFF, SEAL_OFF - shift, len) :
		      aead_op(lc, k->enc, s, NULL, INNER_OFF, SEAL_OFF, len);

	if (unlikely(op == NULL)) {
		rte_pktmbuf_free(s);
		if (oop)
			rte_pktmbuf_free(m);
		return;
	}
	op_index(op, lc->n_seal);
	lc->seal_q[lc->n_seal++] = (struct dp_seal_op){
		.s = s,
		.m = oop ? m : NULL,
		.op = op,
		.len = len,
		.port = port,
	};
}

void
dp_seal_flush(struct dp_lcore *lc)
{
	struct rte_crypto_op *ops[DP_SEAL_BATCH];
	bool ok[DP_SEAL_BATCH];
	uint16_t n = lc->n_seal;

	if (n == 0)
		return;
	for (uint16_t i = 0; i < n; i++)
		ops[i] = lc->seal_q[i].op;
	aead_burst(lc, ops, n, ok);
	lc->n_seal = 0;
	for (uint16_t i = 0; i < n; i++) {
		const struct dp_seal_op *q = &lc->seal_q[i];

		if (q->m != NULL) { /* out of place: the plain frame is done with */
			rte_pktmbuf_free(q->m);
			rte_pktmbuf_prepend(q->s, DP_SEAL_HDR_LEN);
		}
		if (unlikely(!ok[i])) {
			rte_pktmbuf_free(q->s);
			lc->ctr[DP_CTR_NO_MBUF]++;
			continue;
		}
		lc->ctr[DP_CTR_SEALED]++;
		lc->ctr[DP_CTR_SEAL_BYTES] += q->len;
		dp_tx_stage(lc, q->port, q->s);
	}
}
