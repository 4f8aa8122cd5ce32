/* SPDX-License-Identifier: BSD-3-Clause
 *
 * Fast path: sealing and opening the frames of protected links (docs/PROTOCOL.md section
 * 14) with a cryptodev AEAD (AES-GCM). Each worker lcore owns queue pair lc->idx of the
 * device and its own sequence numbers and replay windows in every key; sessions are the
 * control thread's. Two paths, chosen at start (slowpath/crypto.c):
 *   CPU crypto  where the device offers RTE_CRYPTODEV_FF_SYM_CPU_CRYPTO (the software
 *               AES-GCM PMDs): rte_cryptodev_sym_cpu_crypto_process() on the lcore, each
 *               flush, no operations;
 *   operations  otherwise (a crypto NIC, QAT, a scheduler): a flush enqueues what was
 *               prepared and dequeues whatever the device has finished; the rest comes
 *               back in later loop iterations. Nothing waits for the device.
 * Per way (sealing, opening) a ring of DP_CRYPTO_RING frames (dp.h): prepared, in the
 * device, done. Frames retire from its head in the order they were queued and only once
 * done, so an operation, its frame and its buffers are freed only after the device gave
 * them back, and sealed frames leave in sequence. A full ring drops the frame (counted).
 *
 * Sealed frame: Ethernet | IPv4 | UDP | seal header (32) | georeduce packet, encrypted |
 * tag (16). The seal header is the AAD; the IV is its bytes 12-23 (sender, lane, sequence).
 *
 * Calls go one way: receiving (rx.c) queues frames to open and takes back the plain ones;
 * sending (seal.h's dp_wire_out(), the pacers) queues frames to seal; a sealed frame goes
 * on to TX staging (tx.h). Nothing here calls back into receiving or aggregation.
 */
#include <errno.h>
#include <string.h>

#include <rte_branch_prediction.h>
#include <rte_byteorder.h>
#include <rte_crypto.h>
#include <rte_cryptodev.h>
#include <rte_ip.h>
#include <rte_mbuf.h>
#include <rte_udp.h>

#include "bytes.h"
#include "dp.h"
#include "fastpath/seal.h"

#define IV_OFFSET (sizeof(struct rte_crypto_op) + sizeof(struct rte_crypto_sym_op))
#define SEAL_OFF WIRE_FRAME_HDR_OFF                      /* seal header in the frame */
#define INNER_OFF (WIRE_FRAME_HDR_OFF + DP_SEAL_HDR_LEN) /* the georeduce packet */
#define MASK (DP_CRYPTO_RING - 1)
#define TAG_SEAL 0x80000000u /* an operation's tag: the sealing ring's */
#define CPU_RUN 32           /* frames of one key in one CPU crypto call */

_Static_assert((DP_CRYPTO_RING & MASK) == 0, "DP_CRYPTO_RING a power of two");

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

/* The ring of one way, and the operation part of its entry at free-running position i. */
static inline struct dp_cring *
ring_of(struct dp_lcore *lc, bool seal)
{
	return seal ? &lc->seal_r : &lc->open_r;
}

static inline struct dp_cop *
cop_at(struct dp_lcore *lc, bool seal, uint32_t i)
{
	return seal ? &lc->seal_q[i & MASK].c : &lc->open_q[i & MASK].c;
}

bool
dp_crypto_ring_full(const struct dp_lcore *lc, bool seal)
{
	const struct dp_cring *r = seal ? &lc->seal_r : &lc->open_r;

	return r->tail - r->head == DP_CRYPTO_RING;
}

/* A new entry at the tail of a ring (not full): its operation part filled in. */
static inline struct dp_cop *
ring_push(struct dp_lcore *lc, bool seal, struct rte_mbuf *f, void *sess, uint32_t len)
{
	struct dp_cop *c = cop_at(lc, seal, ring_of(lc, seal)->tail++);

	*c = (struct dp_cop){.f = f, .sess = sess, .tok = lc->tok_now, .len = len};
	return c;
}

/* The tag of an operation: its ring and its position there (IV_OFFSET + DP_SEAL_IV_LEN of
 * the operation's private area; the pool leaves 4 bytes for it). */
static inline void
op_tag(struct rte_crypto_op *op, uint32_t tag)
{
	*rte_crypto_op_ctod_offset(op, uint32_t *, IV_OFFSET + DP_SEAL_IV_LEN) = tag;
}

/* Give entry c the operation of AES-GCM over its c->len bytes at offset off of src, written
 * in place or (dst not NULL) at the same offset of dst; the seal header at aad_off of the
 * output the AAD (its bytes 12-23 the IV), the tag right after the output packet. False if
 * the pool is empty (counted). */
static bool
aead_op(struct dp_lcore *lc, struct dp_cop *c, uint32_t tag, struct rte_mbuf *src,
	struct rte_mbuf *dst, uint32_t off, uint32_t aad_off)
{
	struct rte_mbuf *m = dst != NULL ? dst : src;
	struct rte_crypto_op *op = rte_crypto_op_alloc(lc->op_pool, RTE_CRYPTO_OP_TYPE_SYMMETRIC);

	if (unlikely(op == NULL)) {
		lc->ctr[DP_CTR_NO_MBUF]++;
		return false;
	}
	struct rte_crypto_sym_op *sym = op->sym;

	memcpy(rte_crypto_op_ctod_offset(op, uint8_t *, IV_OFFSET),
	       rte_pktmbuf_mtod_offset(m, uint8_t *, aad_off + 12), DP_SEAL_IV_LEN);
	op_tag(op, tag);
	sym->m_src = src;
	sym->m_dst = dst;
	sym->aead.data.offset = off;
	sym->aead.data.length = c->len;
	sym->aead.digest.data = rte_pktmbuf_mtod_offset(m, uint8_t *, off + c->len);
	sym->aead.digest.phys_addr = rte_pktmbuf_iova_offset(m, off + c->len);
	sym->aead.aad.data = rte_pktmbuf_mtod_offset(m, uint8_t *, aad_off);
	sym->aead.aad.phys_addr = rte_pktmbuf_iova_offset(m, aad_off);
	rte_crypto_op_attach_sym_session(op, c->sess);
	c->op = op;
	return true;
}

/* What the device made of an operation it gave back. */
static inline uint8_t
op_result(const struct rte_crypto_op *op)
{
	if (likely(op->status == RTE_CRYPTO_OP_STATUS_SUCCESS))
		return DP_COP_OK;
	return op->status == RTE_CRYPTO_OP_STATUS_AUTH_FAILED ? DP_COP_BAD_TAG : DP_COP_FAILED;
}

/* Take back whatever operations the device finished and mark their entries done; those
 * handed over in an earlier loop iteration are counted late. Never waits. */
static void
cop_poll(struct dp_lcore *lc)
{
	uint8_t dev = lc->dp->crypto.dev_id;
	struct rte_crypto_op *done[DP_BURST_MAX];

	while (lc->crypto_held != 0) {
		uint16_t n = rte_cryptodev_dequeue_burst(
			dev, (uint16_t)lc->idx, done,
			(uint16_t)RTE_MIN(lc->crypto_held, DP_BURST_MAX));

		if (n == 0)
			return;
		lc->crypto_held -= n;
		for (uint16_t i = 0; i < n; i++) {
			uint32_t tag = *rte_crypto_op_ctod_offset(done[i], uint32_t *,
								  IV_OFFSET + DP_SEAL_IV_LEN);
			struct dp_cop *c = cop_at(lc, tag & TAG_SEAL, tag & MASK);

			if (unlikely(c->op != done[i] || c->done != DP_COP_PENDING)) {
				lc->ctr[DP_CTR_CRYPTO_FAILED]++; /* not ours: left alone */
				continue;
			}
			c->done = op_result(done[i]);
			if (c->tick != lc->tick)
				lc->ctr[DP_CTR_CRYPTO_LATE]++;
		}
	}
}

/* Hand the ring's prepared operations to the device, as many as it takes (the others stay
 * prepared for the next flush). */
static void
cop_submit(struct dp_lcore *lc, bool seal)
{
	struct dp_cring *r = ring_of(lc, seal);
	struct rte_crypto_op *ops[DP_CRYPTO_RING];
	uint16_t n = 0;

	for (uint32_t i = r->sent; i != r->tail; i++) {
		struct dp_cop *c = cop_at(lc, seal, i);

		c->tick = lc->tick;
		ops[n++] = c->op;
	}
	if (n == 0)
		return;
	uint16_t k = rte_cryptodev_enqueue_burst(lc->dp->crypto.dev_id, (uint16_t)lc->idx, ops, n);

	lc->crypto_held += k;
	r->sent += k;
}

/* CPU crypto: the frames of one key, in place (the packet at INNER_OFF, the seal header at
 * SEAL_OFF, the tag after the packet). */
struct cpu_run {
	uint32_t n;
	uint32_t pos[CPU_RUN]; /* the entries' ring positions */
	struct rte_crypto_vec seg[CPU_RUN][DP_CRYPTO_SEGS];
	struct rte_crypto_sgl sgl[CPU_RUN];
	struct rte_crypto_va_iova_ptr iv[CPU_RUN], aad[CPU_RUN], digest[CPU_RUN];
	int32_t status[CPU_RUN];
};

/* Seal or open every prepared entry of the ring now, a call per run of one key. */
static void
cpu_crypto(struct dp_lcore *lc, bool seal)
{
	struct dp_cring *r = ring_of(lc, seal);
	struct cpu_run b;

	while (r->sent != r->tail) {
		void *sess = cop_at(lc, seal, r->sent)->sess;

		b.n = 0;
		for (; r->sent != r->tail && b.n < CPU_RUN; r->sent++) {
			struct dp_cop *c = cop_at(lc, seal, r->sent);
			struct rte_mbuf *m = c->f;
			uint32_t i = b.n;
			int k;

			if (c->sess != sess)
				break;
			c->tick = lc->tick;
			k = rte_crypto_mbuf_to_vec(m, INNER_OFF, c->len, b.seg[i], DP_CRYPTO_SEGS);
			if (unlikely(k < 0)) {
				c->done = DP_COP_FAILED;
				continue;
			}
			b.sgl[i] = (struct rte_crypto_sgl){.vec = b.seg[i], .num = (uint32_t)k};
			b.iv[i].va = rte_pktmbuf_mtod_offset(m, uint8_t *, SEAL_OFF + 12);
			b.iv[i].iova = rte_pktmbuf_iova_offset(m, SEAL_OFF + 12);
			b.aad[i].va = rte_pktmbuf_mtod_offset(m, uint8_t *, SEAL_OFF);
			b.aad[i].iova = rte_pktmbuf_iova_offset(m, SEAL_OFF);
			b.digest[i].va = rte_pktmbuf_mtod_offset(m, uint8_t *, INNER_OFF + c->len);
			b.digest[i].iova = rte_pktmbuf_iova_offset(m, INNER_OFF + c->len);
			b.status[i] = 0;
			b.pos[b.n++] = r->sent;
		}
		if (b.n == 0)
			continue;
		struct rte_crypto_sym_vec v = {
			.num = b.n,
			.src_sgl = b.sgl,
			.iv = b.iv,
			.digest = b.digest,
			.aad = b.aad,
			.status = b.status,
		};

		rte_cryptodev_sym_cpu_crypto_process(lc->dp->crypto.dev_id, sess,
						     (union rte_crypto_sym_ofs){.raw = 0}, &v);
		for (uint32_t i = 0; i < b.n; i++) {
			int32_t st = b.status[i];

			cop_at(lc, seal, b.pos[i])->done = st == 0 ? DP_COP_OK :
							   st == EBADMSG || st == -EBADMSG ?
								     DP_COP_BAD_TAG :
								     DP_COP_FAILED;
		}
	}
}

/* Run a ring's prepared entries: at once (CPU crypto), or handed to the device and whatever
 * it finished taken back. */
static void
ring_run(struct dp_lcore *lc, bool seal)
{
	if (lc->dp->crypto.cpu) {
		cpu_crypto(lc, seal);
		return;
	}
	cop_submit(lc, seal);
	cop_poll(lc);
}

/* An entry's operation is done with: freed (never while the device holds it: it is done). */
static inline void
cop_release(struct dp_cop *c)
{
	if (c->op != NULL)
		rte_crypto_op_free(c->op);
	c->op = NULL;
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
 * private copy of it, *mp) queued; *full: dropped for a full ring (no reason). */
static enum wire_reason
open_queue(struct dp_lcore *lc, const struct dp_state *st, struct rte_mbuf **mp, uint16_t port,
	   size_t plen, bool *full)
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
	if (unlikely(dp_crypto_ring_full(lc, false))) {
		*full = true;
		return WIRE_REASON_NONE;
	}
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
	uint32_t pos = lc->open_r.tail;
	struct dp_cop *c = ring_push(lc, false, m, k->dec, (uint32_t)(plen - DP_SEAL_OVERHEAD));

	if (!lc->dp->crypto.cpu &&
	    unlikely(!aead_op(lc, c, pos & MASK, m, NULL, INNER_OFF, SEAL_OFF))) {
		lc->open_r.tail--;
		return WIRE_REASON_BAD_SEAL; /* counted as no_mbuf too */
	}
	struct dp_open_op *q = &lc->open_q[pos & MASK];

	q->j = j;
	q->k = k;
	q->seq = seq;
	q->lane = lane;
	q->port = port;
	return WIRE_REASON_NONE;
}

void
dp_open_queue(struct dp_lcore *lc, const struct dp_state *st, struct rte_mbuf *m, uint16_t port,
	      size_t plen)
{
	bool full = false;
	enum wire_reason why = open_queue(lc, st, &m, port, plen, &full);

	if (unlikely(full)) {
		lc->ctr[DP_CTR_CRYPTO_FULL]++;
		rte_pktmbuf_free(m);
	} else if (unlikely(why != WIRE_REASON_NONE)) {
		drop(lc, m, why);
	}
}

/* The opened frame of entry q, done and authentic: checked against its key, the replay
 * window marked, turned into the plain frame. False if dropped. */
static bool
open_done(struct dp_lcore *lc, const struct dp_open_op *q)
{
	struct rte_mbuf *m = q->c.f;
	uint8_t *f = rte_pktmbuf_mtod(m, uint8_t *);
	const uint8_t *sh = f + SEAL_OFF, *g = f + INNER_OFF;
	struct dp_replay *w = &q->k->rx[lc->idx * DP_SEAL_LANES + q->lane];

	if (unlikely(q->c.done != DP_COP_OK)) {
		if (q->c.done == DP_COP_FAILED)
			lc->ctr[DP_CTR_CRYPTO_FAILED]++;
		drop(lc, m, WIRE_REASON_BAD_TAG);
		return false;
	}
	/* Authentic: the packet inside must be the key's job, epoch and sender; a frame of
	 * the same sequence number earlier in the ring took it first. */
	if (unlikely(be32_get(g + 8) != be32_get(sh + 4) || be32_get(g + 12) != q->j->epoch ||
		     be16_get(g + 18) != be16_get(sh + 12))) {
		drop(lc, m, WIRE_REASON_UNKNOWN_KEY);
		return false;
	}
	if (unlikely(!replay_fresh(w, q->seq))) {
		drop(lc, m, WIRE_REASON_REPLAY);
		return false;
	}
	replay_mark(w, q->seq);
	lc->ctr[DP_CTR_OPENED]++;
	lc->ctr[DP_CTR_OPEN_BYTES] += q->c.len;
	/* The plain frame: its Ethernet, IPv4 and UDP headers move up to the packet. */
	memmove(f + DP_SEAL_HDR_LEN, f, WIRE_FRAME_HDR_OFF);
	rte_pktmbuf_adj(m, DP_SEAL_HDR_LEN);
	rte_pktmbuf_trim(m, DP_SEAL_TAG_LEN);
	f = rte_pktmbuf_mtod(m, uint8_t *);
	struct rte_ipv4_hdr *ip = (struct rte_ipv4_hdr *)(f + WIRE_ETH_LEN);
	struct rte_udp_hdr *udp = (struct rte_udp_hdr *)(f + WIRE_ETH_LEN + WIRE_IPV4_LEN);

	ip->total_length = rte_cpu_to_be_16((uint16_t)(WIRE_IPV4_LEN + WIRE_UDP_LEN + q->c.len));
	udp->dgram_len = rte_cpu_to_be_16((uint16_t)(WIRE_UDP_LEN + q->c.len));
	udp->dgram_cksum = 0;
	/* Its sender is the key's gateway, not its address (validate.h). */
	m->ol_flags |= RTE_MBUF_F_RX_SEC_OFFLOAD;
	m->hash.usr = q->k->peer;
	return true;
}

uint16_t
dp_open_flush(struct dp_lcore *lc)
{
	struct dp_cring *r = &lc->open_r;
	uint16_t opened = 0;

	if (r->head == r->tail)
		return 0;
	ring_run(lc, false);
	for (; r->head != r->sent; r->head++) {
		struct dp_open_op *q = &lc->open_q[r->head & MASK];

		if (q->c.done == DP_COP_PENDING)
			break; /* the device still holds it: it and those after it wait */
		cop_release(&q->c);
		if (open_done(lc, q))
			lc->opened[opened++] = (struct dp_opened){
				.m = q->c.f,
				.len = q->c.len,
				.port = q->port,
			};
	}
	return opened;
}

void
dp_seal_queue(struct dp_lcore *lc, const struct dp_job *j, const struct dp_seal *k,
	      struct rte_mbuf *m, uint16_t port)
{
	uint32_t len = rte_pktmbuf_pkt_len(m) - WIRE_FRAME_HDR_OFF;
	const struct dp_crypto *cr = &lc->dp->crypto;
	/* Out of place where the device can (operations only): the packet is encrypted from
	 * where it is (a RESULT copy's two segments, a partial sum the slot keeps) into the
	 * sealed frame. The operation's offsets are the same in both mbufs, so the sealed
	 * frame's data starts DP_SEAL_HDR_LEN bytes on until the operation is done (its packet
	 * then lands at INNER_OFF of the frame). Otherwise the packet is gathered and sealed
	 * in place. */
	bool oop = !cr->cpu && (m->nb_segs == 1 ? cr->oop_lb : cr->oop_sgl);
	uint32_t shift = oop ? DP_SEAL_HDR_LEN : 0;
	struct rte_mbuf *s = NULL;
	uint8_t *f = NULL;

	if (unlikely(lc->seal_r.tail - lc->seal_r.sent >= DP_BURST_MAX ||
		     dp_crypto_ring_full(lc, true)))
		dp_seal_flush(lc);
	if (unlikely(dp_crypto_ring_full(lc, true))) {
		lc->ctr[DP_CTR_CRYPTO_FULL]++;
		rte_pktmbuf_free(m);
		return;
	}
	s = rte_pktmbuf_alloc(lc->seal_pool);
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
	uint32_t pos = lc->seal_r.tail;
	struct dp_cop *c = ring_push(lc, true, s, k->enc, len);
	bool ok = cr->cpu ||
		  (oop ? aead_op(lc, c, TAG_SEAL | (pos & MASK), m, s, WIRE_FRAME_HDR_OFF,
				 SEAL_OFF - shift) :
			 aead_op(lc, c, TAG_SEAL | (pos & MASK), s, NULL, INNER_OFF, SEAL_OFF));

	if (unlikely(!ok)) {
		lc->seal_r.tail--;
		rte_pktmbuf_free(s);
		if (oop)
			rte_pktmbuf_free(m);
		return;
	}
	lc->seal_q[pos & MASK].m = oop ? m : NULL;
	lc->seal_q[pos & MASK].port = port;
}

void
dp_seal_flush(struct dp_lcore *lc)
{
	struct dp_cring *r = &lc->seal_r;

	if (r->head == r->tail)
		return;
	ring_run(lc, true);
	for (; r->head != r->sent; r->head++) {
		struct dp_seal_op *q = &lc->seal_q[r->head & MASK];

		if (q->c.done == DP_COP_PENDING)
			break; /* held: it and the frames sealed after it wait, in sequence */
		cop_release(&q->c);
		if (q->m != NULL) { /* out of place: the plain frame is done with */
			rte_pktmbuf_free(q->m);
			rte_pktmbuf_prepend(q->c.f, DP_SEAL_HDR_LEN);
		}
		if (unlikely(q->c.done != DP_COP_OK)) {
			rte_pktmbuf_free(q->c.f);
			lc->ctr[DP_CTR_CRYPTO_FAILED]++;
			continue;
		}
		lc->ctr[DP_CTR_SEALED]++;
		lc->ctr[DP_CTR_SEAL_BYTES] += q->c.len;
		dp_tx_stage(lc, q->port, q->c.f);
	}
}

uint64_t
dp_crypto_oldest_token(const struct dp_lcore *lc)
{
	uint64_t t = 0;

	if (lc->open_r.head != lc->open_r.tail)
		t = lc->open_q[lc->open_r.head & MASK].c.tok;
	if (lc->seal_r.head != lc->seal_r.tail) {
		uint64_t s = lc->seal_q[lc->seal_r.head & MASK].c.tok;

		t = t == 0 || s < t ? s : t;
	}
	return t;
}

uint32_t
dp_crypto_pending(const struct dp_lcore *lc)
{
	return (lc->open_r.tail - lc->open_r.head) + (lc->seal_r.tail - lc->seal_r.head);
}
