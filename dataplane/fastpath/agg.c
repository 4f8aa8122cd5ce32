/* SPDX-License-Identifier: BSD-3-Clause
 *
 * Fast path: aggregation of georeduce packets (docs/PROTOCOL.md, sections 7 and 10).
 * Worker lcores only: no allocation except mbufs from pools sized at start, no locks, no
 * syscalls, no logging above DEBUG.
 *
 * A CONTRIB finds its slot (per lcore, per tree: chunk & (slots - 1)); the first packet of
 * a chunk becomes the accumulator and every further one is summed into it with the SIMD
 * kernels and freed (fp16/bf16: summed into the slot's fp32 accumulator, rounded once at
 * the end; MX: each contribution decoded into that accumulator, the sum encoded once). A
 * complete slot sends its partial sum to the parent (the accumulator packet itself, headers
 * rewritten) or, at the root, becomes the RESULT. A RESULT is retained in
 * its slot and sent to every child gateway and local worker as a fresh 96-byte header
 * chained to one indirect mbuf of the payload that all the copies share: no payload is
 * copied, one mbuf is taken per copy.
 *
 * Cost (one core, net_ring, root with F local workers, fp32, bench/bench_dataplane.c;
 * BENCHMARKS.md): about 82 ns per packet in at 256 B, 94 ns at 1 KiB, 140 ns at 4 KiB,
 * each packet in also being one RESULT copy out. At 1 KiB the SIMD sum and the frame and
 * header checks are about a fifth of it each, the copy (a header mbuf, fresh headers,
 * staging) and the lookup and slot logic about a quarter each. A nonzero UDP checksum is
 * verified with the SIMD csum16 unless the NIC did: +19 ns at 1 KiB.
 */
#include <string.h>

#include <rte_branch_prediction.h>
#include <rte_mbuf.h>

#include "dp.h"
#include "fastpath/agg.h"
#include "fastpath/mstash.h"
#include "fastpath/pace.h"
#include "fastpath/seal.h"
#include "fastpath/tx.h"
#include "fastpath/validate.h"

static inline void
drop(struct dp_lcore *lc, struct rte_mbuf *m, enum wire_reason why)
{
	lc->drops[why]++;
	rte_pktmbuf_free(m);
}

static inline struct wire_hdr *
gr_hdr(struct rte_mbuf *m)
{
	return rte_pktmbuf_mtod_offset(m, struct wire_hdr *, WIRE_FRAME_HDR_OFF);
}

/* The contributor set of a CONTRIB or RESULT frame (j->cset_len bytes). */
static inline uint8_t *
gr_cset(struct rte_mbuf *m)
{
	return rte_pktmbuf_mtod_offset(m, uint8_t *, WIRE_FRAME_PAYLOAD_OFF);
}

static inline void *
gr_payload(const struct dp_job *j, struct rte_mbuf *m)
{
	return rte_pktmbuf_mtod_offset(m, void *, WIRE_FRAME_PAYLOAD_OFF + j->cset_len);
}

/* The OR over the words of two contributor sets of len bytes of (a & b), or with `outside`
 * of (~a & b): nonzero if b meets a, or names a worker a does not. Frames may sit at any
 * even address: 8-byte words by memcpy. */
static inline uint64_t
cset_words(const uint8_t *a, const uint8_t *b, uint32_t len, bool outside)
{
	uint64_t x = 0;

	for (uint32_t i = 0; i < len; i += sizeof(uint64_t)) {
		uint64_t u, v;

		memcpy(&u, a + i, sizeof(u));
		memcpy(&v, b + i, sizeof(v));
		x |= (outside ? ~u : u) & v;
	}
	return x;
}

/* Merge the contributor set of m into the accumulator acc's (docs/PROTOCOL.md section
 * 4); false, and nothing merged, if they intersect: summing m would count a worker twice. */
static inline bool
cset_merge(const struct dp_job *j, struct rte_mbuf *acc, struct rte_mbuf *m)
{
	uint8_t *a = gr_cset(acc);
	const uint8_t *b = gr_cset(m);

	if (cset_words(a, b, j->cset_len, false) != 0)
		return false;
	for (uint32_t i = 0; i < j->cset_len; i += sizeof(uint64_t)) {
		uint64_t u, v;

		memcpy(&u, a + i, sizeof(u));
		memcpy(&v, b + i, sizeof(v));
		u |= v;
		memcpy(a + i, &u, sizeof(u));
	}
	return true;
}

/* Whether the contributor set of m, from child gateway c of tree t, names only workers
 * below that child (docs/TABLES.md, workers_below): on the CONTRIBs of child gateways
 * only. */
static inline bool
cset_below(const struct dp_job *j, const struct dp_tree *t, unsigned int c, struct rte_mbuf *m)
{
	return cset_words(t->child_sets + (size_t)c * j->cset_len, gr_cset(m), j->cset_len,
			  true) == 0;
}

/* The job entry of (job, epoch), or NULL with *why set. *live tells whether it is the
 * current epoch (chunks may start) or a draining one (only open slots go on). */
static inline const struct dp_job *
find_job(const struct dp_state *st, uint32_t job, uint32_t epoch, bool *live,
	 enum wire_reason *why)
{
	if (st == NULL) {
		*why = WIRE_REASON_UNKNOWN_JOB;
		return NULL;
	}
	for (int i = 0; i < st->n_jobs; i++) {
		if (st->jobs[i].job != job)
			continue;
		const struct dp_job *cur = st->jobs[i].epochs[0];

		if (epoch == cur->epoch) {
			*live = !st->jobs[i].removed;
			return cur;
		}
		if ((int32_t)(epoch - cur->epoch) > 0) {
			*why = WIRE_REASON_EPOCH_AHEAD;
			return NULL;
		}
		for (int e = 1; e < st->jobs[i].n_epochs; e++)
			if (st->jobs[i].epochs[e]->epoch == epoch) {
				*live = false;
				return st->jobs[i].epochs[e];
			}
		*why = WIRE_REASON_EPOCH_STALE;
		return NULL;
	}
	*why = WIRE_REASON_UNKNOWN_JOB;
	return NULL;
}

/* Index of id in the sorted ids[0 .. n - 1], or -1. A branch-free lower bound
 * (conditional moves: the ids of consecutive packets alternate, so a branching search
 * mispredicts about every other step), at most 8 steps for 256 ids. */
static inline int
ids_find(const uint16_t *ids, unsigned int n, uint16_t id)
{
	const uint16_t *base = ids;

	if (unlikely(n == 0))
		return -1;
	while (n > 1) {
		unsigned int half = n / 2;

		/* Arithmetic, not ?: which the compiler may turn back into a branch. */
		base += (size_t)(base[half - 1] < id) * half;
		n -= half;
	}
	return *base == id ? (int)(base - ids) : -1;
}

/* Index of contributor id in the tree's sorted list, or -1. */
static inline int
find_src(const struct dp_tree *t, uint16_t id)
{
	return ids_find(t->src_ids, t->n_src, id);
}

/* Elements of chunk c of the job's tensor (every chunk is full but the last). */
static inline uint32_t
chunk_len(const struct dp_job *j, uint32_t c)
{
	return c + 1 == j->n_chunks ? (uint32_t)(j->elements - (uint64_t)c * j->chunk_elements)
				    : j->chunk_elements;
}

static inline struct dp_slot *
slot_of(const struct dp_job *j, const struct dp_lcore *lc, const struct dp_tree *t,
	uint32_t chunk)
{
	return &j->slots[lc->idx][t->slot_off + (chunk & t->slot_mask)];
}

static inline void
busy_add(const struct dp_job *j, const struct dp_lcore *lc, int d)
{
	uint32_t v = atomic_load_explicit(&j->busy[lc->idx], memory_order_relaxed);

	atomic_store_explicit(&j->busy[lc->idx], v + (uint32_t)d, memory_order_relaxed);
}

/* Release what a slot holds and make it FREE. */
static inline void
slot_clear(const struct dp_job *j, const struct dp_lcore *lc, struct dp_slot *s)
{
	if (s->state == DP_SLOT_OPEN || s->state == DP_SLOT_COMPLETE)
		busy_add(j, lc, -1);
	if (s->acc != NULL)
		rte_pktmbuf_free(s->acc);
	if (s->result != NULL)
		rte_pktmbuf_free(s->result);
	if (s->prev != NULL)
		rte_pktmbuf_free(s->prev);
	s->acc = NULL;
	s->result = NULL;
	s->prev = NULL;
	s->state = DP_SLOT_FREE;
}

/* Reopen slot s (DONE or FREE) for a later round of its chunk or for the chunk a slot pool
 * further: the RESULT it holds stays as the previous one, everything else is released. */
static void
slot_reopen(const struct dp_job *j, const struct dp_lcore *lc, struct dp_slot *s)
{
	struct rte_mbuf *keep = NULL;
	uint32_t keep_round = 0, keep_chunk = 0;

	if (s->state == DP_SLOT_DONE) {
		keep = s->result;
		keep_round = s->round;
		keep_chunk = s->chunk;
		s->result = NULL;
	}
	slot_clear(j, lc, s);
	s->prev = keep;
	s->prev_round = keep_round;
	s->prev_chunk = keep_chunk;
}

/* The RESULT of (chunk, round), if the slot retains it (as its own or the previous one),
 * else NULL. */
static inline struct rte_mbuf *
retained(const struct dp_slot *s, uint32_t chunk, uint32_t round)
{
	if (s->state == DP_SLOT_DONE && s->chunk == chunk && s->round == round)
		return s->result;
	return s->prev != NULL && s->prev_chunk == chunk && s->prev_round == round ? s->prev
										  : NULL;
}

/* Send the frame m to d through pacer `pacer` (DP_PACE_NONE: none); a frame that
 * repairs a loss goes ahead of the pacer's queue (dp_pace_send(), first). On a protected
 * link it is sealed as it leaves: at once, or when its pacer releases it. Consumes m. */
static inline void
to_wire(struct dp_lcore *lc, const struct dp_job *j, const struct dp_dest *d, uint32_t pacer,
	struct rte_mbuf *m, bool retx, bool first)
{
	if (pacer == DP_PACE_NONE)
		dp_wire_out(lc, j, d->seal, d->port, m);
	else
		dp_pace_send(lc, j, pacer, d->port, m, retx, first);
}

/* An indirect mbuf of r's payload: the second segment of a copy (rte_pktmbuf_clone() of a
 * single-segment r, inline: no call into librte_mbuf), or NULL when the pool is empty. */
static inline struct rte_mbuf *
payload_seg(struct dp_lcore *lc, struct rte_mbuf *r)
{
	struct rte_mbuf *c = dp_mstash_alloc(&lc->clone_stash);

	if (unlikely(c == NULL))
		return NULL;
	rte_pktmbuf_attach(c, r);
	rte_pktmbuf_adj(c, WIRE_FRAME_PAYLOAD_OFF);
	return c;
}

/*
 * Send a copy of the packet r (a whole frame, retained by the caller: a RESULT, or a
 * partial sum sent again) to d: a header mbuf with fresh Ethernet/IP/UDP/georeduce headers
 * chained to an indirect mbuf of r's payload. seg: that indirect mbuf, shared by every
 * copy of a fan-out (fanout_begin(); this copy takes a reference), or NULL for one of its
 * own. now_us is the tsval (dp_now_us(), read once per fan-out: rdtsc costs ~40 cycles on
 * AMD). Counted in ctr; false if not sent (no neighbour, no mbuf). tree >= 0 relabels the
 * copy as j's epoch and that tree id: a RESULT an older epoch retained, sent in answer
 * under j (result recovery, docs/PROTOCOL.md section 10.1); -1 keeps r's header. A copy
 * with RETX, or one with `repair` set (a RESULT that a retransmission completed), goes
 * ahead of its pacer's queue.
 */
static bool
send_copy_as(struct dp_lcore *lc, const struct dp_job *j, const struct dp_dest *d,
	     uint32_t pacer, struct rte_mbuf *r, struct rte_mbuf *seg, uint8_t flags,
	     uint32_t tsecr, uint32_t now_us, enum dp_ctr ctr, int tree, bool repair)
{
	uint64_t nb;
	struct rte_mbuf *h;
	uint32_t plen = rte_pktmbuf_data_len(r) - WIRE_FRAME_PAYLOAD_OFF;
	const struct wire_hdr *rh = gr_hdr(r);
	struct wire_hdr *wh;

	nb = dp_dest_neigh(lc->dp, d);
	if (unlikely(!(nb & DP_NEIGH_VALID))) {
		lc->ctr[DP_CTR_NO_NEIGHBOUR]++;
		return false;
	}
	h = dp_mstash_alloc(&lc->hdr_stash);
	if (unlikely(h == NULL)) {
		lc->ctr[DP_CTR_NO_MBUF]++;
		return false;
	}
	if (seg == NULL) {
		seg = payload_seg(lc, r);
		if (unlikely(seg == NULL)) {
			rte_pktmbuf_free(h);
			lc->ctr[DP_CTR_NO_MBUF]++;
			return false;
		}
	}
	uint8_t *frame = (uint8_t *)rte_pktmbuf_append(h, WIRE_FRAME_PAYLOAD_OFF);

	dp_write_l2l4(lc->dp, j, d, nb, rte_be_to_cpu_32(rh->chunk), frame,
		      WIRE_HDR_LEN + plen);
	wh = (struct wire_hdr *)(frame + WIRE_FRAME_HDR_OFF);
	memcpy(wh, rh, WIRE_HDR_LEN);
	if (tree >= 0) {
		wh->epoch = rte_cpu_to_be_32(j->epoch);
		wh->tree = rte_cpu_to_be_16((uint16_t)tree);
	}
	wh->flags = flags;
	wh->sender = rte_cpu_to_be_16(j->self_id);
	wh->tsval = rte_cpu_to_be_32(now_us);
	wh->tsecr = rte_cpu_to_be_32(tsecr);
	/* Chained by hand: rte_pktmbuf_chain() would write into a shared seg. */
	h->next = seg;
	h->nb_segs = 2;
	h->pkt_len += plen;
	lc->ctr[ctr]++;
	/* Sealed or not, h's reference to seg is gone: the copy counts as sent. */
	to_wire(lc, j, d, pacer, h, flags & WIRE_F_RETX, repair || (flags & WIRE_F_RETX));
	return true;
}

/* A copy of r with r's own header fields (send_copy_as(), tree -1). */
static inline bool
send_copy(struct dp_lcore *lc, const struct dp_job *j, const struct dp_dest *d, uint32_t pacer,
	  struct rte_mbuf *r, struct rte_mbuf *seg, uint8_t flags, uint32_t tsecr,
	  uint32_t now_us, enum dp_ctr ctr)
{
	return send_copy_as(lc, j, d, pacer, r, seg, flags, tsecr, now_us, ctr, -1, false);
}

/*
 * A fan-out of up to n copies of r: one payload segment for all of them. Its reference
 * count is set once, to n plus the caller's own, while nothing else can see it (updates
 * are atomic once a copy is staged: a TX on another core may free one meanwhile);
 * fanout_end() drops what was not used. NULL when the pool is empty: the copies then
 * take one segment each (send_copy()), which fails the same way.
 */
static inline struct rte_mbuf *
fanout_begin(struct dp_lcore *lc, struct rte_mbuf *r, uint16_t n)
{
	struct rte_mbuf *seg = payload_seg(lc, r);

	if (likely(seg != NULL))
		rte_mbuf_refcnt_set(seg, (uint16_t)(n + 1));
	return seg;
}

/* The end of a fan-out of n copies of which `sent` went out. */
static inline void
fanout_end(struct rte_mbuf *seg, uint16_t n, uint16_t sent)
{
	if (unlikely(seg == NULL))
		return;
	if (unlikely(sent < n))
		rte_mbuf_refcnt_update(seg, (int16_t)(sent - n));
	rte_pktmbuf_free(seg); /* the caller's reference; the last one detaches from r */
}

/* The pacer of down[i] of tree t: child gateways are paced, local workers are not. */
static inline uint32_t
down_pacer(const struct dp_tree *t, unsigned int i)
{
	return i < t->n_children ? t->pace_first + 1 + i : DP_PACE_NONE;
}

/* A RESULT copy to down[i] of tree t. */
static inline bool
send_result_copy(struct dp_lcore *lc, const struct dp_job *j, const struct dp_tree *t,
		 unsigned int i, struct rte_mbuf *r, struct rte_mbuf *seg, uint8_t flags,
		 uint32_t tsecr, uint32_t now_us)
{
	return send_copy(lc, j, &t->down[i], down_pacer(t, i), r, seg, flags, tsecr, now_us,
			 DP_CTR_RESULTS_SENT);
}

/*
 * A header-only control packet (ACK, NACK_RESULT) to d: fresh, from the header pool.
 * Sent only in answer to retransmissions or on timeouts, so not per packet.
 */
static void
send_ctl(struct dp_lcore *lc, const struct dp_job *j, const struct dp_dest *d,
	 const struct wire_pkt *a, enum dp_ctr ctr)
{
	uint64_t nb;
	struct rte_mbuf *h;
	uint8_t *frame;

	nb = dp_dest_neigh(lc->dp, d);
	if (unlikely(!(nb & DP_NEIGH_VALID))) {
		lc->ctr[DP_CTR_NO_NEIGHBOUR]++;
		return;
	}
	h = dp_mstash_alloc(&lc->hdr_stash);
	if (unlikely(h == NULL)) {
		lc->ctr[DP_CTR_NO_MBUF]++;
		return;
	}
	frame = (uint8_t *)rte_pktmbuf_append(h, WIRE_FRAME_HDR_OFF + WIRE_HDR_LEN);
	if (unlikely(frame == NULL ||
		     wire_hdr_encode(frame + WIRE_FRAME_HDR_OFF, WIRE_HDR_LEN, a, NULL) != 0)) {
		rte_pktmbuf_free(h);
		return;
	}
	dp_write_l2l4(lc->dp, j, d, nb, a->chunk, frame, WIRE_HDR_LEN);
	lc->ctr[ctr]++;
	to_wire(lc, j, d, DP_PACE_NONE, h, false, false);
}

/* ACK of the CONTRIB p ("held", docs/PROTOCOL.md section 5) to its contributor d. */
static void
send_ack(struct dp_lcore *lc, const struct dp_job *j, const struct dp_dest *d,
	 const struct wire_pkt *p)
{
	struct wire_pkt a = {
		.type = WIRE_TYPE_ACK, .flags = WIRE_F_ECHO, .dtype = WIRE_DTYPE_NONE,
		.job = p->job, .epoch = p->epoch, .tree = p->tree, .sender = j->self_id,
		.origin = p->origin, .round = p->round, .chunk = p->chunk, .count = 1,
		.tsval = dp_now_us(), .tsecr = p->tsval,
	};

	send_ctl(lc, j, d, &a, DP_CTR_ACKS_SENT);
}

/* --- Loss recovery towards the parent (docs/PROTOCOL.md section 10) ---------------------- */

/* The retransmission timeout of tree index ti after `retries` tries (RFC 6298 style). */
static inline uint64_t
rto(const struct dp_lcore *lc, const struct dp_job *j, uint16_t ti, unsigned int retries)
{
	const struct dp_params *prm = &lc->dp->prm;
	const struct dp_job_lcore *lj = &j->lj[lc->idx];
	uint64_t r = lj->srtt[ti] == 0 ? prm->rto_init_tsc : lj->srtt[ti] + 4 * lj->rttvar[ti];

	r = r < prm->rto_min_tsc ? prm->rto_min_tsc : r;
	r <<= retries < 16 ? retries : 16;
	return r > prm->rto_max_tsc ? prm->rto_max_tsc : r;
}

static inline void
timer_push_at(struct dp_lcore *lc, const struct dp_job *j, uint16_t ti, struct dp_slot *s,
	      uint64_t due)
{
	struct dp_job_lcore *lj = &j->lj[lc->idx];

	if (unlikely(lj->tail - lj->head > lj->mask))
		return; /* cannot happen: two entries per slot at most */
	lj->q[lj->tail & lj->mask] = (struct dp_timer){
		.due = due, .s = s, .chunk = s->chunk, .round = s->round, .tree = ti,
	};
	lj->tail++;
}

static inline void
timer_push(struct dp_lcore *lc, const struct dp_job *j, uint16_t ti, struct dp_slot *s,
	   uint64_t now)
{
	timer_push_at(lc, j, ti, s, now + rto(lc, j, ti, s->retries));
}

/* A RESULT came for a partial sum sent once: a round-trip sample (Karn: not after a
 * retransmission). */
static inline void
rtt_sample(struct dp_lcore *lc, const struct dp_job *j, uint16_t ti, uint64_t sample)
{
	struct dp_job_lcore *lj = &j->lj[lc->idx];

	if (lj->srtt[ti] == 0) {
		lj->srtt[ti] = sample;
		lj->rttvar[ti] = sample / 2;
		return;
	}
	uint64_t d = sample > lj->srtt[ti] ? sample - lj->srtt[ti] : lj->srtt[ti] - sample;

	lj->rttvar[ti] = (3 * lj->rttvar[ti] + d) / 4;
	lj->srtt[ti] = (7 * lj->srtt[ti] + sample) / 8;
}

/* Ask the parent again: the partial sum with RETX, or NACK_RESULT once it holds it. */
static void
resend_up(struct dp_lcore *lc, const struct dp_job *j, const struct dp_tree *t,
	  struct dp_slot *s, uint32_t now_us)
{
	if (!s->held) {
		send_copy(lc, j, &t->parent, t->pace_first, s->acc, NULL, WIRE_F_RETX, 0, now_us,
			  DP_CTR_RETRANSMITS);
		return;
	}
	struct wire_pkt a = {
		.type = WIRE_TYPE_NACK_RESULT, .dtype = WIRE_DTYPE_NONE, .job = j->job,
		.epoch = j->epoch, .tree = t->id, .sender = j->self_id, .origin = j->self_id,
		.round = s->round, .chunk = s->chunk, .count = 1, .tsval = now_us,
	};

	send_ctl(lc, j, &t->parent, &a, DP_CTR_NACKS_SENT);
}

/* Whether the partial sum of s, as last sent, was lost (or its RESULT was): a partial sum
 * of its tree sent after it already has its RESULT, and the time that one took has passed
 * since s went, plus an eighth of the smoothed round trip for the spread between chunks
 * (as RACK does, RFC 8985). The tree's chunks travel in order through the pacers and delay
 * lines, and a resent one goes ahead of the pacer's queue, so s cannot be behind one sent
 * after it. This tells of a loss among a round's last chunks too, where no chunk is sent
 * long after them: only the very last one waits for its timer. Also after a
 * retransmission: a resent partial sum lost again is resent as soon as a later one is
 * answered, not a timeout later. Not once the parent holds it (ACK): its RESULT may wait
 * for others. */
static inline bool
overtaken(const struct dp_lcore *lc, const struct dp_job_lcore *lj, uint16_t ti,
	  const struct dp_slot *s, uint64_t now)
{
	uint64_t reo = lj->srtt[ti] / 8, floor = lc->dp->prm.rto_min_tsc / 4;

	/* At least a quarter of the minimum timeout: on a short path the RESULTs of the
	 * parent's lcores may pass each other by more than an eighth of the round trip. */
	reo = reo < floor ? floor : reo;
	return !s->held && lj->progress_sent[ti] > s->sent_tsc &&
	       now >= s->sent_tsc + lj->progress_rtt[ti] + reo;
}

/* Whether the partial sum of s is lost at a round's end, where no partial sum sent after
 * it can be answered (it was the last, or those after it were lost too, or it is a resend
 * and every first transmission went before it): the tree already had a RESULT of this
 * round, the time the latest answered one took has passed since s went, nothing of the
 * tree waits in the pacer towards the parent (s left), the tree's RESULTs have stopped
 * (none for an eighth of the smoothed round trip, at least --rto-min: s is not queued
 * behind them on the way), and no partial sum of the tree was resent so in that time
 * either. That last rule makes it a probe, one frame per such interval per tree at
 * most, whatever stopped the RESULTs (a contributor elsewhere that paused, whose
 * partial sum the parent then ACKs, as TCP's tail-loss probe is answered). Without it, a
 * loss among the last chunks waited for its timer restarted from the tree's latest
 * RESULT: on a long link, two round trips and more. */
static inline bool
tail_lost(const struct dp_lcore *lc, const struct dp_job *j, uint16_t ti,
	  const struct dp_slot *s, uint64_t now)
{
	const struct dp_job_lcore *lj = &j->lj[lc->idx];
	const struct dp_pacer *pc = &lj->pacers[j->trees[ti].pace_first];
	uint64_t reo = lj->srtt[ti] / 8;

	reo = reo < lc->dp->prm.rto_min_tsc ? lc->dp->prm.rto_min_tsc : reo;
	return !s->held && lj->progress[ti] != 0 && lj->progress_round[ti] == s->round &&
	       pc->head == pc->tail && now >= s->sent_tsc + lj->progress_rtt[ti] + reo &&
	       now >= lj->progress[ti] + reo && now >= lj->tail_probe[ti] + reo;
}

/* The head of the timer FIFO can go: due, answered meanwhile (a stale entry must not
 * hold back the ones behind it), or its partial sum was overtaken or is a lost tail. */
static inline bool
head_ready(const struct dp_lcore *lc, const struct dp_job *j, uint64_t now)
{
	const struct dp_job_lcore *lj = &j->lj[lc->idx];
	const struct dp_timer *tm = &lj->q[lj->head & lj->mask];

	if (tm->due <= now)
		return true;
	if (tm->s->state != DP_SLOT_COMPLETE || tm->s->chunk != tm->chunk ||
	    tm->s->round != tm->round)
		return true;
	return overtaken(lc, lj, tm->tree, tm->s, now) || tail_lost(lc, j, tm->tree, tm->s, now);
}

void
dp_agg_timers(struct dp_lcore *lc, const struct dp_state *st)
{
	uint64_t now = rte_rdtsc();

	for (int e = 0; st != NULL && e < st->n_jobs; e++)
		for (int k = 0; k < st->jobs[e].n_epochs; k++) {
			const struct dp_job *j = st->jobs[e].epochs[k];
			struct dp_job_lcore *lj = &j->lj[lc->idx];

			while (lj->head != lj->tail && head_ready(lc, j, now)) {
				struct dp_timer *hd = &lj->q[lj->head & lj->mask];
				struct dp_timer tm = *hd;
				struct dp_slot *s = tm.s;

				if (s->state != DP_SLOT_COMPLETE || s->chunk != tm.chunk ||
				    s->round != tm.round) {
					lj->head++;
					continue; /* answered meanwhile */
				}
				/* RESULTs of the tree still coming, and none yet for a partial sum
				 * sent after this one: this one is most likely queued behind
				 * them, not lost. Wait an RTO past the latest (as TCP restarts
				 * its timer on every ACK), at the head of the FIFO still: the
				 * entries behind it are of partial sums sent after it, which
				 * cannot be found lost before it is (were it pushed behind
				 * them, its own loss would be found only once they are
				 * answered). A later partial sum answered first means this one
				 * was lost: resend now (fast retransmit). */
				const struct dp_pacer *pc = &lj->pacers[j->trees[tm.tree].pace_first];
				uint64_t quiet = lj->progress[tm.tree] + rto(lc, j, tm.tree, 0);
				uint64_t again = lj->progress_rtt[tm.tree] + lj->srtt[tm.tree] / 4;
				bool tail = false, fast = overtaken(lc, lj, tm.tree, s, now);

				if (s->dup) {
					/* The second copy of a repair that went into an idle link:
					 * a repair lost again costs its chunk two more round
					 * trips, and so, at a round's end, the round. */
					lj->head++;
					s->dup = false;
					if (!s->held) {
						s->sent_us = dp_now_us();
						resend_up(lc, j, &j->trees[tm.tree], s, s->sent_us);
						s->sent_tsc = now;
						lc->ctr[DP_CTR_RETX_COPY]++;
					}
					again = again < rto(lc, j, tm.tree, 0) ? again
									     : rto(lc, j, tm.tree, 0);
					timer_push_at(lc, j, tm.tree, s, now + again);
					continue;
				}

				if (!fast && tail_lost(lc, j, tm.tree, s, now)) {
					fast = tail = true;
					lj->tail_probe[tm.tree] = now;
				}

				if (s->retries == 0 && lj->progress[tm.tree] != 0 && quiet > now &&
				    !fast) {
					hd->due = quiet;
					break;
				}
				lj->head++;
				/* Past --retries the chunk is reported stuck, once, and still
				 * asked for every rto_max: a live round is never abandoned (the
				 * control process re-plans around a dead parent). */
				if (s->retries == lc->dp->prm.retries_max)
					lc->ctr[DP_CTR_RETX_STUCK]++;
				if (s->retries < UINT8_MAX)
					s->retries++;
				lc->ctr[DP_CTR_RETX_FAST] += fast && !tail;
				lc->ctr[DP_CTR_RETX_TAIL] += tail;
				s->resent_clear = pc->head == pc->tail;
				s->sent_us = dp_now_us();
				resend_up(lc, j, &j->trees[tm.tree], s, s->sent_us);
				s->sent_tsc = now;
				/* A timeout doubles the next one (the path may be slower than
				 * measured). A fast retransmit does not: the path was answering.
				 * Its resend goes ahead of the queues here and at the parent, so
				 * its answer is due within the round trip the latest answered
				 * partial sum took (queues included) and a quarter of the
				 * smoothed one, often well before the timeout: a resend lost
				 * again goes once more then (no later partial sum tells of that
				 * loss: only first transmissions are compared), and only a
				 * timeout after that doubles. */
				uint64_t next = rto(lc, j, tm.tree, fast ? 0 : s->retries);

				if (fast && again < next)
					next = again;
				/* Into an idle link (nothing of the tree waiting in the pacer),
				 * a fast repair goes twice, the copy an eighth of a round trip
				 * later (apart from a burst of losses): it costs a frame of a
				 * link that has room, and a repair lost again is what ends a
				 * round late on a long link. */
				if (fast && s->resent_clear && !s->held) {
					s->dup = true;
					next = lj->srtt[tm.tree] / 8;
				}
				timer_push_at(lc, j, tm.tree, s, now + next);
			}
		}
}

/* The slot has its RESULT r: retain it and send it down the tree; a RESULT that repairs
 * a loss (a retransmission completed it, or it answers one) goes ahead of the pacers'
 * queues. At the root, the copy to down[echo_to] (-1: none), whose retransmission
 * completed the slot, echoes it (tsecr): the RESULT answers that transmission, and the
 * child knows it (section 10, fast retransmit). */
static void
result_down(struct dp_lcore *lc, const struct dp_job *j, const struct dp_tree *t,
	    struct dp_slot *s, struct rte_mbuf *r, uint32_t now_us, bool repair, int echo_to,
	    uint32_t tsecr)
{
	if (s->state == DP_SLOT_OPEN || s->state == DP_SLOT_COMPLETE) {
		uint64_t d = atomic_load_explicit(&j->done[lc->idx], memory_order_relaxed);

		busy_add(j, lc, -1);
		atomic_store_explicit(&j->done[lc->idx], d + 1, memory_order_relaxed);
	}
	if (s->state == DP_SLOT_COMPLETE) { /* the partial sum kept for retransmission */
		uint16_t ti = (uint16_t)(t - j->trees);
		uint64_t now = rte_rdtsc();

		const struct wire_hdr *rh = gr_hdr(r);
		/* The partial sum as last sent is what this RESULT answers: sent once, or
		 * resent when nothing waited in the pacer before it (so it left in the
		 * order of sending) and echoed. A resend that jumped a queue is no measure
		 * of the partial sums behind it in the queue. */
		bool answers = s->retries == 0 ||
			       (s->resent_clear && (rh->flags & WIRE_F_ECHO) &&
				rte_be_to_cpu_32(rh->tsecr) == s->sent_us);

		if (s->retries == 0)
			rtt_sample(lc, j, ti, now - s->sent_tsc);
		j->lj[lc->idx].progress[ti] = now;
		j->lj[lc->idx].progress_round[ti] = s->round;
		if (answers && s->sent_tsc > j->lj[lc->idx].progress_sent[ti]) {
			j->lj[lc->idx].progress_sent[ti] = s->sent_tsc;
			j->lj[lc->idx].progress_rtt[ti] = now - s->sent_tsc;
		}
		rte_pktmbuf_free(s->acc);
		s->acc = NULL;
	}
	s->state = DP_SLOT_DONE;
	s->result = r;
	struct rte_mbuf *seg = fanout_begin(lc, r, t->n_down);
	uint16_t sent = 0;

	for (uint16_t i = 0; i < t->n_down; i++)
		sent += send_copy_as(lc, j, &t->down[i], down_pacer(t, i), r, seg,
				     i == echo_to ? WIRE_F_ECHO : 0, i == echo_to ? tsecr : 0,
				     now_us, DP_CTR_RESULTS_SENT, -1, repair);
	fanout_end(seg, t->n_down, sent);
}

/* The kernels' MX format of an MX job's dtype (the same order). */
static inline enum sum_mx
mx_of(const struct dp_job *j)
{
	return (enum sum_mx)(j->dtype - WIRE_DTYPE_MXINT8);
}

/* All contributions are in: the partial sum goes up, or at the root the RESULT down;
 * ahead of the pacer's queue if the last contribution was a retransmission (repair),
 * and then, to down[echo_to], echoing that retransmission's tsval (tsecr). */
static void
complete(struct dp_lcore *lc, const struct dp_job *j, const struct dp_tree *t,
	 struct dp_slot *s, bool repair, int echo_to, uint32_t tsecr)
{
	struct rte_mbuf *m = s->acc;
	struct wire_hdr *wh = gr_hdr(m);
	uint32_t n = rte_be_to_cpu_16(wh->count);
	uint32_t now_us = dp_now_us();

	if (j->dtype == WIRE_DTYPE_FP16)
		lc->k->narrow_f16(gr_payload(j, m), s->acc32, n);
	else if (j->dtype == WIRE_DTYPE_BF16)
		lc->k->narrow_bf16(gr_payload(j, m), s->acc32, n);
	else if (wire_dtype_is_mx(j->dtype)) /* encoded once, as it leaves */
		lc->k->mx_narrow[mx_of(j)](gr_payload(j, m), s->acc32, n / WIRE_MX_BLOCK);
	if (unlikely(wh->dtype != j->dtype)) {
		/* The frame that came first was a local worker's, in the wider LAN dtype: the
		 * sum leaves in the job's, shorter. */
		uint32_t len = WIRE_FRAME_PAYLOAD_OFF + j->cset_len +
			       (uint32_t)wire_payload_bytes(j->dtype, n);

		wh->dtype = j->dtype;
		if (rte_pktmbuf_data_len(m) > len)
			rte_pktmbuf_trim(m, (uint16_t)(rte_pktmbuf_data_len(m) - len));
	}
	s->acc = NULL;
	lc->ctr[DP_CTR_CHUNKS_COMPLETED]++;
	wh->sender = rte_cpu_to_be_16(j->self_id);
	wh->origin = rte_cpu_to_be_16(j->self_id);
	wh->contrib = rte_cpu_to_be_16((uint16_t)s->contrib);
	wh->flags = 0;
	wh->tsval = rte_cpu_to_be_32(now_us);
	wh->tsecr = 0;
	if (!t->has_parent) {
		wh->type = WIRE_TYPE_RESULT;
		result_down(lc, j, t, s, m, now_us, repair, echo_to, tsecr);
		return;
	}
	uint64_t nb;

	/* COMPLETE: the partial sum goes up and stays here, one reference, until the RESULT
	 * comes (or a timer sends it again). */
	s->state = DP_SLOT_COMPLETE;
	s->acc = m;
	s->held = false;
	s->retries = 0;
	s->sent_tsc = rte_rdtsc();
	s->sent_us = now_us;
	s->resent_clear = false;
	s->dup = false;
	wh->type = WIRE_TYPE_CONTRIB;
	/* Until the tree's first RESULT of this round, twice the timeout: the round's first
	 * chunks also wait at the root for the contributors that started the round later
	 * (they got their last RESULT of the round before up to a round trip after this
	 * gateway's workers). */
	uint16_t ti = (uint16_t)(t - j->trees);
	const struct dp_job_lcore *lj = &j->lj[lc->idx];

	if (lj->progress[ti] == 0 || lj->progress_round[ti] != s->round)
		timer_push_at(lc, j, ti, s, s->sent_tsc + 2 * rto(lc, j, ti, 0));
	else
		timer_push(lc, j, ti, s, s->sent_tsc);
	nb = dp_dest_neigh(lc->dp, &t->parent);
	if (unlikely(!(nb & DP_NEIGH_VALID))) {
		lc->ctr[DP_CTR_NO_NEIGHBOUR]++; /* the timer retries */
		return;
	}
	dp_write_l2l4(lc->dp, j, &t->parent, nb, s->chunk, rte_pktmbuf_mtod(m, uint8_t *),
		      rte_pktmbuf_data_len(m) - WIRE_FRAME_HDR_OFF);
	lc->ctr[DP_CTR_PARTIALS_SENT]++;
	rte_mbuf_refcnt_update(m, 1);
	/* Sealed: into a frame of its own, the slot keeps the plain one. */
	to_wire(lc, j, &t->parent, t->pace_first, m, false, repair);
}

/* Add contribution m (origin at contributor index k) to slot s, which is OPEN for it;
 * false if m was dropped instead (its contributor set overlaps the slot's). */
static bool
add(struct dp_lcore *lc, const struct dp_job *j, const struct dp_tree *t, struct dp_slot *s,
    struct rte_mbuf *m, const struct wire_pkt *p, int k)
{
	unsigned int bit = t->src_bits[k];

	if (j->cset_len != 0 && s->acc != NULL && unlikely(!cset_merge(j, s->acc, m))) {
		drop(lc, m, WIRE_REASON_CSET_OVERLAP);
		return false;
	}
	s->in[bit >> 6] |= 1ull << (bit & 63);
	s->n_in++;
	s->contrib += p->contrib;
	lc->ctr[DP_CTR_CONTRIBS]++;
	switch (p->dtype) { /* the job's, or a local worker's LAN dtype (on_contrib()) */
	case WIRE_DTYPE_FP32:
		if (j->dtype != WIRE_DTYPE_FP32) {
			/* An MX job's local worker in fp32: into the fp32 accumulator. */
			if (s->acc == NULL) {
				memcpy(s->acc32, gr_payload(j, m), sizeof(float) * p->count);
				s->acc = m;
			} else {
				lc->k->sum_f32(s->acc32, gr_payload(j, m), p->count);
				rte_pktmbuf_free(m);
			}
		} else if (s->acc == NULL) {
			s->acc = m;
		} else {
			lc->k->sum_f32(gr_payload(j, s->acc), gr_payload(j, m), p->count);
			rte_pktmbuf_free(m);
		}
		break;
	case WIRE_DTYPE_FP16:
		if (s->acc == NULL) {
			lc->k->widen_f16(s->acc32, gr_payload(j, m), p->count);
			s->acc = m;
		} else {
			lc->k->widen_add_f16(s->acc32, gr_payload(j, m), p->count);
			rte_pktmbuf_free(m);
		}
		break;
	case WIRE_DTYPE_BF16:
		if (s->acc == NULL) {
			lc->k->widen_bf16(s->acc32, gr_payload(j, m), p->count);
			s->acc = m;
		} else {
			lc->k->widen_add_bf16(s->acc32, gr_payload(j, m), p->count);
			rte_pktmbuf_free(m);
		}
		break;
	default: /* MX: the job's dtype (a LAN dtype is fp32 or bf16) */
		if (s->acc == NULL) {
			lc->k->mx_widen[mx_of(j)](s->acc32, gr_payload(j, m),
						  p->count / WIRE_MX_BLOCK);
			s->acc = m;
		} else {
			lc->k->mx_widen_add[mx_of(j)](s->acc32, gr_payload(j, m),
						      p->count / WIRE_MX_BLOCK);
			rte_pktmbuf_free(m);
		}
		break;
	}
	/* Every contributor in, or (partial reduce) enough workers summed. */
	if (s->n_in == t->expected || s->contrib >= t->threshold)
		complete(lc, j, t, s, p->flags & WIRE_F_RETX,
			 (p->flags & WIRE_F_RETX) ? t->src_down[k] : -1, p->tsval);
	return true;
}

/* --- Result recovery across epochs (docs/PROTOCOL.md section 10.1) ----------------------
 *
 * A re-plan can cut a round after some workers got its RESULT under the old epoch and
 * others did not: the latter run it again under the new epoch while the former have moved
 * on, and the round could never complete. Every worker that got the RESULT got it from its
 * own gateway, which retains it in the old epoch (replaced epochs linger, --linger-ms). So
 * a gateway asked for a RESULT of a round it did not complete under its current epoch
 * answers from the epoch that holds it, or asks its neighbour gateways in the tree, which
 * answer or ask theirs; the RESULT comes back and goes to whoever asked. Nothing here runs
 * per packet of a working round: only late requests, and partial sums of a round after
 * the one a slot is open for, lead here.
 */

/* The RESULT of (chunk, round) that another installed epoch of j's job retains on this
 * lcore, or NULL. Only epochs whose packets are j's shape (dtype, chunking, contributor
 * sets) qualify. A walk over the job's epochs and their trees: rare path. */
static struct rte_mbuf *
retained_elsewhere(const struct dp_lcore *lc, const struct dp_job *j, uint32_t chunk,
		   uint32_t round)
{
	const struct dp_state *st = lc->rx_st;

	for (int e = 0; st != NULL && e < st->n_jobs; e++) {
		if (st->jobs[e].job != j->job)
			continue;
		for (int k = 0; k < st->jobs[e].n_epochs; k++) {
			const struct dp_job *o = st->jobs[e].epochs[k];

			if (o == j || o->dtype != j->dtype || o->elements != j->elements ||
			    o->chunk_elements != j->chunk_elements || o->cset_len != j->cset_len)
				continue;
			for (int i = 0; i < o->n_trees; i++) {
				const struct dp_tree *t = &o->trees[i];

				if (chunk - t->chunk_first >= t->chunk_count)
					continue;
				struct rte_mbuf *r = retained(slot_of(o, lc, t, chunk), chunk, round);

				if (r != NULL)
					return r;
				break;
			}
		}
		break;
	}
	return NULL;
}

enum recover_add {
	RECOVER_ASK,            /* recorded, and nobody asked for it yet: ask */
	RECOVER_WAIT,           /* recorded; asked already */
	RECOVER_NONE,           /* not recorded: the table is full */
};

/* Whether anyone waits for the RESULT of (tree ti, chunk, round). */
static bool
recover_pending(const struct dp_recover *rq, uint16_t ti, uint32_t chunk, uint32_t round,
		uint64_t now)
{
	for (unsigned int i = 0; i < DP_RECOVER_MAX; i++)
		if (rq[i].until > now && rq[i].tree == ti && rq[i].chunk == chunk &&
		    rq[i].round == round)
			return true;
	return false;
}

/* Record that `to` waits for the RESULT of (tree ti, chunk, round). */
static enum recover_add
recover_add(struct dp_lcore *lc, const struct dp_job *j, uint16_t ti, uint32_t chunk,
	    uint32_t round, uint16_t to, uint64_t now)
{
	struct dp_recover *rq = j->lj[lc->idx].recover, *free_rq = NULL;
	bool asked = false;

	for (unsigned int i = 0; i < DP_RECOVER_MAX; i++) {
		if (rq[i].until <= now) {
			free_rq = free_rq != NULL ? free_rq : &rq[i];
			continue;
		}
		if (rq[i].tree != ti || rq[i].chunk != chunk || rq[i].round != round)
			continue;
		if (rq[i].to == to)
			return RECOVER_WAIT;
		asked = true;
	}
	if (free_rq == NULL) {
		lc->ctr[DP_CTR_RECOVER_FULL]++;
		return RECOVER_NONE;
	}
	/* Long enough for a few round trips to the neighbours; the asker asks again after. */
	*free_rq = (struct dp_recover){ .until = now + 4 * rto(lc, j, ti, 0), .chunk = chunk,
					.round = round, .tree = ti, .to = to };
	return asked ? RECOVER_WAIT : RECOVER_ASK;
}

/* The latest round local worker contributor k of tree t sent a CONTRIB of (this epoch). */
static inline void
worker_round_note(const struct dp_job *j, const struct dp_tree *t, int k, uint32_t round)
{
	_Atomic uint64_t *w = &j->worker_round[t->budget_off + t->src_down[k]];
	uint64_t v = atomic_load_explicit(w, memory_order_relaxed);

	if (unlikely(v == 0 || wire_round_before((uint32_t)v, round)))
		atomic_store_explicit(w, 1ull << 32 | round, memory_order_relaxed);
}

/* A local worker of tree t that has the RESULT of `round` though this gateway does not: it
 * sent a CONTRIB of a later round, which it could only do with every RESULT of that one
 * (a re-plan moved the chunk here from the gateway that gave it). Its down[] index, or -1
 * (none, or only `except`). */
static int
moved_on_worker(const struct dp_job *j, const struct dp_tree *t, uint32_t round, int except)
{
	for (uint16_t k = 0; k < t->n_src; k++) {
		uint64_t v;

		if (!t->src_worker[k] || t->src_down[k] == except)
			continue;
		v = atomic_load_explicit(&j->worker_round[t->budget_off + t->src_down[k]],
					 memory_order_relaxed);
		if (v != 0 && wire_round_before(round, (uint32_t)v))
			return t->src_down[k];
	}
	return -1;
}

/* Ask for the RESULT of (chunk, round): tree t's neighbour gateways (its parent and child
 * gateways) and one local worker that moved on past that round (moved_on_worker()), or
 * (only >= 0) down[only] alone, a child gateway or a local worker; never `except` (a
 * down[] index, or DP_RECOVER_PARENT). False if there was none to ask. */
static bool
recover_ask(struct dp_lcore *lc, const struct dp_job *j, const struct dp_tree *t,
	    uint32_t chunk, uint32_t round, int only, int except)
{
	struct wire_pkt a = {
		.type = WIRE_TYPE_NACK_RESULT, .dtype = WIRE_DTYPE_NONE, .job = j->job,
		.epoch = j->epoch, .tree = t->id, .sender = j->self_id, .origin = j->self_id,
		.round = round, .chunk = chunk, .count = 1, .tsval = dp_now_us(),
	};
	bool any = false;

	if (only >= 0) {
		if (only == except)
			return false;
		send_ctl(lc, j, &t->down[only], &a, DP_CTR_RECOVER_ASKED);
		return true;
	}
	if (t->has_parent && except != DP_RECOVER_PARENT) {
		send_ctl(lc, j, &t->parent, &a, DP_CTR_RECOVER_ASKED);
		any = true;
	}
	for (int i = 0; i < t->n_children; i++)
		if (i != except) {
			send_ctl(lc, j, &t->down[i], &a, DP_CTR_RECOVER_ASKED);
			any = true;
		}
	int w = moved_on_worker(j, t, round, except);

	if (w >= 0) {
		send_ctl(lc, j, &t->down[w], &a, DP_CTR_RECOVER_ASKED);
		any = true;
	}
	return any;
}

/* Record `to`'s wait for the RESULT of (chunk, round) and ask for it if nobody did yet
 * (recover_ask(): the neighbours and a worker that moved on, but not `except`; or only
 * down[only]). */
static void
recover_request(struct dp_lcore *lc, const struct dp_job *j, const struct dp_tree *t,
		uint32_t chunk, uint32_t round, uint16_t to, int only, int except)
{
	uint16_t ti = (uint16_t)(t - j->trees);
	uint64_t now = rte_rdtsc();
	struct dp_recover *rq = j->lj[lc->idx].recover;

	if (recover_add(lc, j, ti, chunk, round, to, now) != RECOVER_ASK ||
	    recover_ask(lc, j, t, chunk, round, only, except))
		return;
	for (unsigned int i = 0; i < DP_RECOVER_MAX; i++) /* none to ask: forget it */
		if (rq[i].until > now && rq[i].tree == ti && rq[i].chunk == chunk &&
		    rq[i].round == round && rq[i].to == to)
			rq[i].until = 0;
}

/* A frame of our own for slot s from the RESULT r an older epoch retains, relabelled as
 * j's epoch and tree t; NULL when the pool is empty. */
static struct rte_mbuf *
result_adopt(struct dp_lcore *lc, const struct dp_job *j, const struct dp_tree *t,
	     struct rte_mbuf *r)
{
	struct rte_mbuf *c = rte_pktmbuf_copy(r, lc->pool, 0, UINT32_MAX);

	if (unlikely(c == NULL)) {
		lc->ctr[DP_CTR_NO_MBUF]++;
		return NULL;
	}
	gr_hdr(c)->epoch = rte_cpu_to_be_32(j->epoch);
	gr_hdr(c)->tree = rte_cpu_to_be_16(t->id);
	return c;
}

/* The slot, open or complete for the round of RESULT r (j's epoch and tree t: ours),
 * is done with it: what it held goes, the RESULT goes down the tree (result_down()). */
static void
recover_complete(struct dp_lcore *lc, const struct dp_job *j, const struct dp_tree *t,
		 struct dp_slot *s, struct rte_mbuf *r)
{
	if (s->state == DP_SLOT_OPEN && s->acc != NULL) {
		rte_pktmbuf_free(s->acc);
		s->acc = NULL;
	}
	lc->ctr[DP_CTR_RECOVERED]++;
	result_down(lc, j, t, s, r, dp_now_us(), true, -1, 0);
}

/* Contributor down[di] asks, late, for the RESULT of (chunk, round), which this epoch
 * does not retain (its slot is elsewhere): answer from an older epoch, or ask the
 * neighbours. tsval: the request's, echoed. */
static void
recover_late(struct dp_lcore *lc, const struct dp_job *j, const struct dp_tree *t,
	     uint16_t di, uint32_t chunk, uint32_t round, uint32_t tsval)
{
	struct rte_mbuf *r = retained_elsewhere(lc, j, chunk, round);

	if (r != NULL) {
		send_copy_as(lc, j, &t->down[di], down_pacer(t, di), r, NULL,
			     WIRE_F_RETX | WIRE_F_ECHO, tsval, dp_now_us(),
			     DP_CTR_RECOVER_ANSWERED, t->id, false);
		return;
	}
	recover_request(lc, j, t, chunk, round, di, -1, di);
}

/* Contributor k sends chunk c of a round after the one slot s is open (or complete) for:
 * it has moved on, so it has that round's RESULT, as may have this gateway in an older
 * epoch if the contributor is a local worker. Complete the slot with that, or ask the
 * contributor for it: a child gateway, or a local worker that got it from the gateway
 * the chunk was at before a re-plan (it answers from the results it keeps). */
static void
recover_moved_on(struct dp_lcore *lc, const struct dp_job *j, const struct dp_tree *t,
		 struct dp_slot *s, int k)
{
	struct rte_mbuf *r = retained_elsewhere(lc, j, s->chunk, s->round);

	if (r != NULL) {
		r = result_adopt(lc, j, t, r);
		if (r != NULL)
			recover_complete(lc, j, t, s, r);
		return;
	}
	recover_request(lc, j, t, s->chunk, s->round, DP_RECOVER_SLOT, t->src_down[k], -1);
}

/* Slot s is open, for a child gateway's CONTRIB or a NACK_RESULT: a local worker that it
 * waits for may have moved past its round (a re-plan moved the chunk here after the gateway
 * before gave that worker the RESULT). Ask that worker for it: it completes the slot. */
static void
recover_stalled(struct dp_lcore *lc, const struct dp_job *j, const struct dp_tree *t,
		struct dp_slot *s)
{
	int w = moved_on_worker(j, t, s->round, -1);

	if (w >= 0)
		recover_request(lc, j, t, s->chunk, s->round, DP_RECOVER_SLOT, w, -1);
}

/* A RESULT (j's epoch, tree t) in answer to what this gateway asked, from a neighbour
 * gateway or a local worker (`from`: a down[] index, or DP_RECOVER_PARENT). It completes
 * the slot if that is still open for its round, and goes on to every other asker.
 * Consumes m. */
static void
recover_answer(struct dp_lcore *lc, const struct dp_job *j, const struct dp_tree *t,
	       struct rte_mbuf *m, const struct wire_pkt *p, uint16_t from)
{
	uint16_t ti = (uint16_t)(t - j->trees);
	struct dp_slot *s = slot_of(j, lc, t, p->chunk);
	struct dp_recover *rq = j->lj[lc->idx].recover;
	uint64_t now = rte_rdtsc();
	uint32_t now_us = dp_now_us();
	bool kept = false, workers = false, used = false;

	/* From a child or a worker, only an answer to a request still pending counts. */
	if (from != DP_RECOVER_PARENT && !recover_pending(rq, ti, p->chunk, p->round, now)) {
		drop(lc, m, WIRE_REASON_LATE);
		return;
	}
	if (s->chunk == p->chunk && s->round == p->round &&
	    (s->state == DP_SLOT_OPEN || s->state == DP_SLOT_COMPLETE)) {
		recover_complete(lc, j, t, s, m); /* the slot keeps m; workers have it */
		kept = workers = used = true;
	}
	for (unsigned int i = 0; i < DP_RECOVER_MAX; i++) {
		struct dp_recover *q = &rq[i];

		if (q->until <= now || q->tree != ti || q->chunk != p->chunk ||
		    q->round != p->round)
			continue;
		q->until = 0;
		used = true;
		/* The slot's RESULT went to every child and worker already. */
		if (q->to == DP_RECOVER_SLOT || q->to == from || (kept && q->to != DP_RECOVER_PARENT))
			continue;
		if (q->to == DP_RECOVER_PARENT)
			send_copy(lc, j, &t->parent, t->pace_first, m, NULL, WIRE_F_RETX, 0,
				  now_us, DP_CTR_RECOVER_ANSWERED);
		else if (q->to < t->n_children)
			send_copy(lc, j, &t->down[q->to], down_pacer(t, q->to), m, NULL,
				  WIRE_F_RETX, 0, now_us, DP_CTR_RECOVER_ANSWERED);
		else if (!workers) { /* a local worker asked: every one that may lack it */
			for (uint16_t w = t->n_children; w < t->n_down; w++)
				send_copy(lc, j, &t->down[w], DP_PACE_NONE, m, NULL, WIRE_F_RETX,
					  0, now_us, DP_CTR_RECOVER_ANSWERED);
			workers = true;
		}
	}
	if (!used) {
		drop(lc, m, WIRE_REASON_LATE);
		return;
	}
	if (!kept) {
		lc->ctr[DP_CTR_RECOVERED]++;
		rte_pktmbuf_free(m);
	}
}

/* A CONTRIB from contributor index k for slot s, other than the next contribution to the
 * open chunk (on_contrib()): the first of a chunk, a duplicate, a straggler, a chunk ahead
 * of the slot pool. */
static __rte_noinline void
on_contrib_other(struct dp_lcore *lc, const struct dp_job *j, bool live,
		 const struct dp_tree *t, struct dp_slot *s, struct rte_mbuf *m,
		 const struct wire_pkt *p, int k)
{
	unsigned int bit = t->src_bits[k];
	bool have = s->state != DP_SLOT_FREE && s->chunk == p->chunk &&
		    (s->in[bit >> 6] >> (bit & 63) & 1);
	/* A chunk the slot has moved on from: an earlier round, or an earlier chunk of the
	 * slot's round (chunk c when it holds c + slots). It never takes the slot back. */
	bool older = s->state != DP_SLOT_FREE &&
		     (wire_round_before(p->round, s->round) ||
		      (p->round == s->round && p->chunk < s->chunk));

	if (s->state == DP_SLOT_FREE ||
	    (s->state == DP_SLOT_DONE && !older &&
	     (s->chunk != p->chunk || wire_round_before(s->round, p->round)))) {
		if (!live) { /* a draining epoch finishes its slots, opens none */
			drop(lc, m, WIRE_REASON_EPOCH_STALE);
			return;
		}
		slot_reopen(j, lc, s);
		s->state = DP_SLOT_OPEN;
		s->round = p->round;
		s->chunk = p->chunk;
		s->n_in = 0;
		s->contrib = 0;
		memset(s->in, 0, sizeof(s->in));
		busy_add(j, lc, 1);
		add(lc, j, t, s, m, p, k); /* the first: no overlap */
		if ((p->flags & WIRE_F_RETX) && s->state != DP_SLOT_DONE)
			send_ack(lc, j, &t->down[t->src_down[k]], p);
		if (!t->src_worker[k] && s->state == DP_SLOT_OPEN)
			recover_stalled(lc, j, t, s);
		return;
	}
	if (s->chunk != p->chunk) {
		/* Another chunk holds the slot. If it took over from this one, whose RESULT it
		 * keeps, a contributor that lost that RESULT gets it (a child gateway may lag a
		 * slot pool behind the workers that moved the slot on). A later chunk waits
		 * for the slot (no_slot: the sender's window is ahead of the pool). */
		struct rte_mbuf *r = retained(s, p->chunk, p->round);

		drop(lc, m, r != NULL || older ? WIRE_REASON_LATE : WIRE_REASON_NO_SLOT);
		if (r != NULL && ((p->flags & WIRE_F_RETX) || j->cset_len != 0))
			send_result_copy(lc, j, t, t->src_down[k], r, NULL, WIRE_F_RETX | WIRE_F_ECHO,
					 p->tsval, dp_now_us());
		else if (r == NULL && older)
			recover_late(lc, j, t, t->src_down[k], p->chunk, p->round, p->tsval);
		return;
	}
	if (s->round == p->round) {
		bool retx = p->flags & WIRE_F_RETX;
		unsigned int ti = t->src_down[k];
		const struct dp_dest *to = &t->down[ti];

		/* Not new to an open slot (on_contrib() adds those): known already
		 * (duplicate), or complete without it (a straggler: late). The RESULT, when
		 * retained, answers both; otherwise a RETX gets an ACK. */
		drop(lc, m, have ? WIRE_REASON_DUPLICATE : WIRE_REASON_LATE);
		if (s->state == DP_SLOT_DONE && (retx || !have))
			send_result_copy(lc, j, t, ti, s->result, NULL, WIRE_F_RETX | WIRE_F_ECHO,
					 p->tsval, dp_now_us());
		else if (retx && have)
			send_ack(lc, j, to, p);
		return;
	}
	if (wire_round_before(p->round, s->round)) {
		/* A worker one round behind: the previous RESULT, if kept, answers it. In a
		 * partial reduce (a job with contributor sets) a straggler may be further
		 * behind: the latest RESULT of the chunk tells it where its group is
		 * (docs/PROTOCOL.md section 7.3), at every gateway on its way. */
		struct rte_mbuf *r = retained(s, p->chunk, p->round);
		bool partial = j->cset_len != 0;

		if (r == NULL && partial && s->state == DP_SLOT_DONE)
			r = s->result;
		drop(lc, m, WIRE_REASON_LATE);
		if (r != NULL && ((p->flags & WIRE_F_RETX) || partial))
			send_result_copy(lc, j, t, t->src_down[k], r, NULL, WIRE_F_RETX | WIRE_F_ECHO,
					 p->tsval, dp_now_us());
		else if (r == NULL)
			recover_late(lc, j, t, t->src_down[k], p->chunk, p->round, p->tsval);
		return;
	}
	/* Open or complete with an earlier round, which this contributor has left behind
	 * (it can only have done so with that round's RESULT: a re-plan came between). */
	drop(lc, m, WIRE_REASON_NO_SLOT);
	recover_moved_on(lc, j, t, s, k);
}

/* A contributor whose MAC is not known yet sends (its kernel knew the gateway's already,
 * so it did not ARP): if the frame came straight from it, on the port that reaches it,
 * the frame says where it is, before its RESULT has to go there. */
static __rte_noinline void
learn_contributor(struct dp_lcore *lc, const struct dp_dest *d, const struct rte_mbuf *m,
		  uint16_t port)
{
	struct dp_neigh *nb = &lc->dp->neigh[d->nh];
	const struct rte_ether_hdr *eth = rte_pktmbuf_mtod(m, const struct rte_ether_hdr *);
	const struct rte_ipv4_hdr *ip = (const struct rte_ipv4_hdr *)(eth + 1);

	if (nb->is_static || port != d->port || rte_be_to_cpu_32(ip->src_addr) != nb->ipv4)
		return;
	atomic_store_explicit(&nb->mac, dp_neigh_word(eth->src_addr.addr_bytes),
			      memory_order_relaxed);
}

static void
on_contrib(struct dp_lcore *lc, const struct dp_job *j, bool live, const struct dp_tree *t,
	   struct rte_mbuf *m, const struct wire_pkt *p, uint16_t port)
{
	int k = find_src(t, p->origin);

	/* From the table's address and port of the contributor (validate.h). A worker sums itself alone, in its set. A child gateway sums only workers below it:
	 * with sets, those its set names (and contrib is the set's population:
	 * wire_hdr_decode()); without, every one of them, so its contrib is their number
	 * (one compare, on the CONTRIBs of child gateways only). */
	if (unlikely(k < 0 || p->sender != p->origin ||
		     !dp_src_ok(m, &t->down[t->src_down[k]]) ||
		     (t->src_worker[k] &&
		      (p->contrib != 1 ||
		       (j->cset_len != 0 && !(gr_cset(m)[p->origin >> 3] >> (p->origin & 7) & 1)))) ||
		     (!t->src_worker[k] && (j->cset_len != 0 ? !cset_below(j, t, t->src_down[k], m)
							     : p->contrib != t->src_contrib[k])))) {
		drop(lc, m, WIRE_REASON_BAD_SENDER);
		return;
	}
	/* A local worker sends in the LAN dtype, a child gateway in the job's. */
	if (unlikely(p->dtype != (t->src_worker[k] ? j->lan_dtype : j->dtype))) {
		drop(lc, m, WIRE_REASON_JOB_MISMATCH);
		return;
	}
	const struct dp_dest *from = &t->down[t->src_down[k]];

	if (unlikely(!(dp_dest_neigh(lc->dp, from) & DP_NEIGH_VALID)))
		learn_contributor(lc, from, m, port);
	struct dp_slot *s = slot_of(j, lc, t, p->chunk);
	uint32_t bit = t->src_bits[k];

	/* What it sent is what a NACK_RESULT of it may have answered (section 7.6). */
	dp_budget_earn(&j->lj[lc->idx].budget[t->budget_off + t->src_down[k]], j->budget_cap,
		       rte_pktmbuf_data_len(m));
	if (t->src_worker[k])
		worker_round_note(j, t, k, p->round);

	/* Most packets: the next contribution to the chunk the slot has open. Held: an ACK
	 * stops the payload resends, unless the RESULT answered. */
	if (likely(s->state == DP_SLOT_OPEN && s->chunk == p->chunk && s->round == p->round &&
		   !(s->in[bit >> 6] & (1ull << (bit & 63))))) {
		if (add(lc, j, t, s, m, p, k) && (p->flags & WIRE_F_RETX) &&
		    s->state != DP_SLOT_DONE)
			send_ack(lc, j, &t->down[t->src_down[k]], p);
		return;
	}
	on_contrib_other(lc, j, live, t, s, m, p, k);
}

/* A RESULT from a child gateway or a local worker: only in answer to a recovery request
 * (RETX), from the contributor's table address. */
static __rte_noinline void
on_result_from_child(struct dp_lcore *lc, const struct dp_job *j, const struct dp_tree *t,
		     struct rte_mbuf *m, const struct wire_pkt *p)
{
	int k = find_src(t, p->sender);

	if (k < 0 || !(p->flags & WIRE_F_RETX) || !dp_src_ok(m, &t->down[t->src_down[k]])) {
		drop(lc, m, WIRE_REASON_BAD_SENDER);
		return;
	}
	recover_answer(lc, j, t, m, p, t->src_down[k]);
}

static void
on_result(struct dp_lcore *lc, const struct dp_job *j, const struct dp_tree *t,
	  struct rte_mbuf *m, const struct wire_pkt *p)
{
	if (unlikely(!t->has_parent || p->sender != t->parent.id)) {
		on_result_from_child(lc, j, t, m, p);
		return;
	}
	if (unlikely(!dp_src_ok(m, &t->parent))) {
		drop(lc, m, WIRE_REASON_BAD_SENDER);
		return;
	}
	struct dp_slot *s = slot_of(j, lc, t, p->chunk);

	if (s->chunk == p->chunk && s->round == p->round) {
		if (s->state == DP_SLOT_COMPLETE) {
			result_down(lc, j, t, s, m, dp_now_us(),
				    s->retries != 0 || (p->flags & WIRE_F_RETX), -1, 0);
			return;
		}
		if (s->state == DP_SLOT_OPEN && (p->flags & WIRE_F_RETX)) {
			recover_answer(lc, j, t, m, p, DP_RECOVER_PARENT);
			return;
		}
		drop(lc, m, WIRE_REASON_DUPLICATE);
		return;
	}
	if (p->flags & WIRE_F_RETX) { /* perhaps what this gateway asked for */
		recover_answer(lc, j, t, m, p, DP_RECOVER_PARENT);
		return;
	}
	drop(lc, m, s->state == DP_SLOT_FREE || wire_round_before(p->round, s->round) ||
				s->chunk != p->chunk
			    ? WIRE_REASON_LATE
			    : WIRE_REASON_NO_SLOT);
}

/*
 * NACK_RESULT: answer every chunk of the range (dp_agg_rx() checked that it lies in the
 * tree, wire_hdr_decode() that it is at most WIRE_NACK_RANGE_MAX long) whose RESULT this
 * node retains, in this epoch or an older one, to the table's address of the requester,
 * while its budget lasts. The requester is a contributor, or a neighbour gateway asking
 * for a RESULT it lacks (result recovery, section 10.1; the parent too). A chunk whose
 * RESULT is held nowhere here, and which this gateway is not working on for that round,
 * is asked for from the other neighbours.
 */
static void
on_nack_result(struct dp_lcore *lc, const struct dp_job *j, const struct dp_tree *t,
	       struct rte_mbuf *m, const struct wire_pkt *p)
{
	unsigned int to = t->n_down;
	const struct dp_dest *d = NULL;
	struct dp_budget *b = NULL;
	uint32_t pacer = DP_PACE_NONE;

	for (uint16_t i = 0; i < t->n_down; i++)
		if (t->down[i].id == p->sender)
			to = i;
	if (to < t->n_down) {
		d = &t->down[to];
		pacer = down_pacer(t, to);
		b = &j->lj[lc->idx].budget[t->budget_off + to];
	} else if (t->has_parent && p->sender == t->parent.id) {
		to = DP_RECOVER_PARENT;
		d = &t->parent;
		pacer = t->pace_first;
		b = &j->lj[lc->idx].budget[j->parent_budget_off + (uint32_t)(t - j->trees)];
	}
	if (d == NULL || !dp_src_ok(m, d)) {
		drop(lc, m, WIRE_REASON_BAD_SENDER);
		return;
	}
	uint32_t now_us = dp_now_us();

	dp_budget_refill(b, j, rte_rdtsc());
	for (uint32_t c = p->chunk; c - p->chunk < p->count; c++) {
		struct dp_slot *s = slot_of(j, lc, t, c);
		struct rte_mbuf *r = retained(s, c, p->round);
		int tree = -1;

		if (r == NULL) {
			r = retained_elsewhere(lc, j, c, p->round);
			tree = t->id;
		}
		if (r == NULL) {
			if (!(s->chunk == c && s->round == p->round &&
			      (s->state == DP_SLOT_OPEN || s->state == DP_SLOT_COMPLETE)))
				recover_request(lc, j, t, c, p->round, (uint16_t)to, -1, (int)to);
			else if (s->state == DP_SLOT_OPEN)
				recover_stalled(lc, j, t, s);
			continue;
		}
		if (!dp_budget_spend(b, rte_pktmbuf_data_len(r))) {
			lc->ctr[DP_CTR_ANSWER_BUDGET]++;
			continue;
		}
		send_copy_as(lc, j, d, pacer, r, NULL, WIRE_F_RETX | WIRE_F_ECHO, p->tsval, now_us,
			     tree < 0 ? DP_CTR_RESULTS_SENT : DP_CTR_RECOVER_ANSWERED, tree, false);
	}
	rte_pktmbuf_free(m);
}

/* ACK: the parent holds these partial sums (stop resending them, ask for the RESULT when
 * it is overdue). NACK_CONTRIB: send them again now. */
static void
on_from_parent(struct dp_lcore *lc, const struct dp_job *j, const struct dp_tree *t,
	       struct rte_mbuf *m, const struct wire_pkt *p)
{
	if (unlikely(!t->has_parent || p->sender != t->parent.id || p->origin != j->self_id ||
		     !dp_src_ok(m, &t->parent))) {
		drop(lc, m, WIRE_REASON_BAD_SENDER);
		return;
	}
	uint32_t now_us = dp_now_us();

	/* At most the first DP_BURST_MAX chunks of the range: a bound on the work of one
	 * packet (PROTOCOL.md section 9, Ranges). */
	uint32_t n = p->count < DP_BURST_MAX ? p->count : DP_BURST_MAX;

	for (uint32_t c = p->chunk; c - p->chunk < n; c++) {
		struct dp_slot *s = slot_of(j, lc, t, c);

		if (s->state != DP_SLOT_COMPLETE || s->chunk != c || s->round != p->round)
			continue;
		if (p->type == WIRE_TYPE_ACK)
			s->held = true;
		else
			send_copy(lc, j, &t->parent, t->pace_first, s->acc, NULL, WIRE_F_RETX, 0, now_us,
				  DP_CTR_RETRANSMITS);
	}
	rte_pktmbuf_free(m);
}

/* --- Selective multicast (docs/PROTOCOL.md section 7.5) -------------------------------- */

/* Stream id of job j, or NULL. */
static inline const struct dp_stream *
stream_of(const struct dp_job *j, uint16_t id)
{
	if (unlikely(id >= j->stream_map_n || j->stream_map[id] == 0))
		return NULL;
	return &j->streams[j->stream_map[id] - 1];
}

/* The lcore's recovery state of stream s. */
static inline struct dp_mstream *
mstream_of(const struct dp_lcore *lc, const struct dp_job *j, const struct dp_stream *s)
{
	return &j->lj[lc->idx].mstreams[s - j->streams];
}

/* Where the copy of (round, chunk) of origin index o is retained, or its ring entry: the
 * origin's chunks in the order it sends them, round after round (round x chunks + chunk,
 * modulo 2^32, then the ring's length), so that the ring holds its latest copies. */
static inline struct dp_mcopy *
mcopy_at(const struct dp_job *j, const struct dp_mstream *ms, int o, uint32_t round,
	 uint32_t chunk)
{
	uint32_t seq = round * (uint32_t)j->n_chunks + chunk;

	return &ms->keep[(size_t)o * (ms->keep_mask + 1) + (seq & ms->keep_mask)];
}

static inline bool
mcopy_is(const struct dp_mcopy *c, uint32_t round, uint32_t chunk)
{
	return c->m != NULL && c->chunk == chunk && c->round == round;
}

/* Retain m (its reference moves to the ring) in entry c, unless c holds a later round of
 * the same chunk (m is then freed). */
static inline void
mcopy_keep(struct dp_mcopy *c, struct rte_mbuf *m, uint32_t round, uint32_t chunk)
{
	if (c->m != NULL && c->chunk == chunk && wire_round_before(round, c->round)) {
		rte_pktmbuf_free(m);
		return;
	}
	if (c->m != NULL)
		rte_pktmbuf_free(c->m);
	c->m = m;
	c->round = round;
	c->chunk = chunk;
}

/* The slot of the request upstream for (round, chunk) of origin index o: consecutive
 * chunks of an origin, and the origins of a chunk, take consecutive slots. */
static inline struct dp_mask *
mask_slot(const struct dp_job *j, const struct dp_stream *s, const struct dp_mstream *ms,
	  int o, uint32_t round, uint32_t chunk)
{
	uint32_t seq = round * (uint32_t)j->n_chunks + chunk;

	return &ms->ask[(seq * s->n_origins + (uint32_t)o) & ms->ask_mask];
}

/* The pending upstream request of (origin index o, round, chunk), or NULL; an expired one
 * in its slot is freed. */
static struct dp_mask *
mask_find(const struct dp_job *j, const struct dp_stream *s, struct dp_mstream *ms, int o,
	  uint32_t round, uint32_t chunk, uint64_t now)
{
	struct dp_mask *a = mask_slot(j, s, ms, o, round, chunk);

	if (a->until == 0)
		return NULL;
	if (a->until <= now) {
		a->until = 0;
		ms->n_ask--;
		return NULL;
	}
	return a->origin == s->origins[o] && a->round == round && a->chunk == chunk ? a : NULL;
}

static inline void
mask_free(struct dp_mstream *ms, struct dp_mask *a)
{
	a->until = 0;
	ms->n_ask--;
}

/* The pacer of out[k] of stream s: next-hop gateways are paced, local workers are not. */
static inline uint32_t
mcast_pacer(const struct dp_stream *s, unsigned int k)
{
	return k < s->n_to ? s->pace_first + k : DP_PACE_NONE;
}

/* One retained copy r again, with RETX, to out[k] of stream s, within out[k]'s budget. */
static bool
mcast_answer(struct dp_lcore *lc, const struct dp_job *j, const struct dp_stream *s,
	     struct dp_mstream *ms, unsigned int k, struct rte_mbuf *r, uint32_t now_us)
{
	if (!dp_budget_spend(&ms->budget[k], rte_pktmbuf_data_len(r))) {
		lc->ctr[DP_CTR_MCAST_BUDGET]++;
		return false;
	}
	return send_copy(lc, j, &s->out[k], mcast_pacer(s, k), r, NULL, WIRE_F_RETX, 0, now_us,
			 DP_CTR_MCAST_REPAIRS);
}

/* How long a chunk asked of `from` waits before it is asked again: the repairs' smoothed
 * time and four deviations (a repair is not sent for again while it may be on its way),
 * at least DP_MCAST_REASK_US. */
static inline uint64_t
mcast_reask(const struct dp_job *j, const struct dp_mstream *ms)
{
	uint64_t w = ms->rep_srtt + 4 * ms->rep_var;

	return w > j->mcast_reask_tsc ? w : j->mcast_reask_tsc;
}

/*
 * A chunk out[k] asked for and this gateway does not retain (lost upstream of it): ask
 * the stream's `from` gateway (count 1), unless that is pending and was asked less than
 * mcast_reask() ago; remember that out[k] waits for it.
 */
static void
mcast_ask(struct dp_lcore *lc, const struct dp_job *j, const struct dp_stream *s,
	  struct dp_mstream *ms, unsigned int k, int o, uint32_t round, uint32_t chunk,
	  uint64_t now)
{
	struct dp_mask *a = mask_find(j, s, ms, o, round, chunk, now);
	uint16_t origin = s->origins[o];

	if (a == NULL) {
		/* Its slot, free or another chunk's: that one is evicted (its repair, when
		 * it comes, is retained all the same, late, and answers its askers' next
		 * request). A busy table must not stop a new loss from being asked. */
		a = mask_slot(j, s, ms, o, round, chunk);
		if (a->until != 0)
			lc->ctr[DP_CTR_MCAST_ASK_FULL]++;
		else
			ms->n_ask++;
		memset(a->askers, 0, sizeof(a->askers));
		a->origin = origin;
		a->round = round;
		a->chunk = chunk;
		a->asks = 0;
	}
	a->askers[k >> 6] |= 1ull << (k & 63);
	a->until = now + j->mcast_ask_life_tsc;
	if (a->asks != 0 && now - a->asked < mcast_reask(j, ms))
		return;
	a->asked = now;
	a->asks += a->asks < UINT8_MAX;

	struct wire_pkt q = {
		.type = WIRE_TYPE_NACK_MCAST, .dtype = WIRE_DTYPE_NONE, .job = j->job,
		.epoch = j->epoch, .tree = s->id, .sender = j->self_id, .origin = origin,
		.round = round, .chunk = chunk, .count = 1, .tsval = dp_now_us(),
	};

	send_ctl(lc, j, &s->from, &q, DP_CTR_MCAST_ASKED);
}

/*
 * A repair (MCAST with RETX) from the `from` gateway: the answer to what this gateway
 * asked for. Retained, and sent on with RETX to the outputs that asked for it only, each
 * within its budget; one nobody waits for is `late` (retained all the same).
 */
static __rte_noinline void
on_mcast_repair(struct dp_lcore *lc, const struct dp_job *j, const struct dp_stream *s,
		int o, struct rte_mbuf *m, const struct wire_pkt *p)
{
	struct dp_mstream *ms = mstream_of(lc, j, s);
	struct dp_mcopy *c = mcopy_at(j, ms, o, p->round, p->chunk);
	uint64_t now = rte_rdtsc();
	struct dp_mask *a = mask_find(j, s, ms, o, p->round, p->chunk, now);

	struct rte_mbuf *r = m;

	/* Retained unless it is already, or the ring holds a later round of the chunk. */
	if (!mcopy_is(c, p->round, p->chunk) &&
	    !(c->m != NULL && c->chunk == p->chunk && wire_round_before(p->round, c->round))) {
		mcopy_keep(c, m, p->round, p->chunk);
		m = NULL;
	}
	if (a == NULL) {
		lc->drops[WIRE_REASON_LATE]++;
		rte_pktmbuf_free(m);
		return;
	}
	if (a->asks == 1) { /* a sample of the repair time (RFC 6298's smoothing) */
		uint64_t rt = now - a->asked;
		uint64_t d = rt > ms->rep_srtt ? rt - ms->rep_srtt : ms->rep_srtt - rt;

		if (ms->rep_srtt == 0) {
			ms->rep_srtt = rt;
			ms->rep_var = rt / 2;
		} else {
			ms->rep_var = (3 * ms->rep_var + d) / 4;
			ms->rep_srtt = (7 * ms->rep_srtt + rt) / 8;
		}
	}
	uint32_t now_us = dp_now_us();

	for (uint16_t k = 0; k < s->n_out; k++)
		if (a->askers[k >> 6] >> (k & 63) & 1) {
			dp_budget_refill_cap(&ms->budget[k], j, ms->budget_cap, now);
			mcast_answer(lc, j, s, ms, k, r, now_us);
		}
	mask_free(ms, a);
	rte_pktmbuf_free(m);
}

/*
 * An MCAST: one copy to each next-hop gateway of the stream (paced per stream and link)
 * and each local worker it is delivered to, each a fresh 96-byte header chained to the
 * indirect mbuf of m's payload that they share (fanout_begin()); m itself is retained
 * (its reference moves into the stream's ring, no payload copied) to answer NACK_MCASTs,
 * and each copy adds its length to its receiver's answer budget. A copy already
 * retained is a `duplicate`.
 */
static void
on_mcast(struct dp_lcore *lc, const struct dp_job *j, struct rte_mbuf *m,
	 const struct wire_pkt *p)
{
	const struct dp_stream *s = stream_of(j, p->tree);

	if (unlikely(s == NULL)) {
		drop(lc, m, WIRE_REASON_UNKNOWN_TREE);
		return;
	}
	if (unlikely(p->chunk >= j->n_chunks)) {
		drop(lc, m, WIRE_REASON_BAD_CHUNK);
		return;
	}
	if (unlikely(p->dtype != j->dtype || p->count != chunk_len(j, p->chunk))) {
		drop(lc, m, WIRE_REASON_JOB_MISMATCH);
		return;
	}
	/* From the upstream gateway, or at the source from the origin worker itself, each
	 * from its address and ports in the table. A repair (RETX) comes from upstream. */
	int o = ids_find(s->origins, s->n_origins, p->origin);

	if (unlikely(o < 0 || (s->at_source ? p->sender != p->origin : p->sender != s->from_id) ||
		     (s->at_source ? dp_rx_src_key(m) - s->origin_key[o] >= s->origin_count[o] &&
					     s->origin_count[o] != 0
				   : dp_rx_src_key(m) - s->from_key >= s->from_count) ||
		     (s->at_source && (p->flags & WIRE_F_RETX)))) {
		drop(lc, m, WIRE_REASON_BAD_SENDER);
		return;
	}
	if (unlikely(p->flags & WIRE_F_RETX)) {
		on_mcast_repair(lc, j, s, o, m, p);
		return;
	}
	struct dp_mstream *ms = mstream_of(lc, j, s);
	struct dp_mcopy *c = mcopy_at(j, ms, o, p->round, p->chunk);

	if (unlikely(mcopy_is(c, p->round, p->chunk))) {
		drop(lc, m, WIRE_REASON_DUPLICATE);
		return;
	}
	lc->ctr[DP_CTR_MCAST_RX]++;
	uint32_t now_us = dp_now_us();
	uint32_t len = rte_pktmbuf_data_len(m);

	struct rte_mbuf *seg = fanout_begin(lc, m, s->n_out);
	uint16_t sent = 0;

	for (uint16_t k = 0; k < s->n_out; k++) {
		if (k >= s->n_to && s->out[k].id == p->origin)
			continue; /* a worker never gets its own update back */
		dp_budget_earn(&ms->budget[k], ms->budget_cap, len);
		sent += send_copy(lc, j, &s->out[k], mcast_pacer(s, k), m, seg, 0, 0, now_us,
				  DP_CTR_MCAST_COPIES);
	}
	fanout_end(seg, s->n_out, sent);
	/* It went to everyone, those who asked for it upstream included (it was late). */
	if (unlikely(ms->n_ask != 0)) {
		struct dp_mask *a = mask_find(j, s, ms, o, p->round, p->chunk, rte_rdtsc());

		if (a != NULL)
			mask_free(ms, a);
	}
	mcopy_keep(c, m, p->round, p->chunk);
}

/*
 * NACK_MCAST: a receiving worker of the stream (a `deliver` entry), or a next-hop gateway
 * (a `to` entry), asks for the chunks [chunk, chunk + count) of origin's round. Each
 * chunk retained here is sent again (RETX) to the table's address of the requester,
 * within its budget; one not retained is asked of the `from` gateway (once for every
 * requester waiting: the repair goes to those only). Of a range, the chunks that map to
 * the port the request came to (section 9: the others are another lcore's).
 */
static __rte_noinline void
on_nack_mcast(struct dp_lcore *lc, const struct dp_job *j, struct rte_mbuf *m,
	      const struct wire_pkt *p)
{
	const struct dp_stream *s = stream_of(j, p->tree);

	if (s == NULL) {
		drop(lc, m, WIRE_REASON_UNKNOWN_TREE);
		return;
	}
	if (p->chunk >= j->n_chunks || p->count > j->n_chunks - p->chunk) {
		drop(lc, m, WIRE_REASON_BAD_CHUNK);
		return;
	}
	unsigned int k = s->n_out;

	for (uint16_t i = 0; i < s->n_out; i++)
		if (s->out[i].id == p->sender)
			k = i;
	int o = ids_find(s->origins, s->n_origins, p->origin);

	/* A worker never asks for its own update: it was never sent it. */
	if (k == s->n_out || o < 0 || !dp_src_ok(m, &s->out[k]) ||
	    (k >= s->n_to && p->sender == p->origin)) {
		drop(lc, m, WIRE_REASON_BAD_SENDER);
		return;
	}
	struct dp_mstream *ms = mstream_of(lc, j, s);
	uint64_t now = rte_rdtsc();
	uint32_t now_us = dp_now_us();

	lc->ctr[DP_CTR_MCAST_NACKS]++;
	dp_budget_refill_cap(&ms->budget[k], j, ms->budget_cap, now);
	for (uint32_t c = p->chunk; c - p->chunk < p->count; c++) {
		if (!dp_dport_ok(lc->dp, m, c))
			continue;
		struct dp_mcopy *r = mcopy_at(j, ms, o, p->round, c);

		if (mcopy_is(r, p->round, c))
			mcast_answer(lc, j, s, ms, k, r->m, now_us);
		else if (s->at_source)
			lc->ctr[DP_CTR_MCAST_NOT_HELD]++;
		else
			mcast_ask(lc, j, s, ms, k, o, p->round, c, now);
	}
	rte_pktmbuf_free(m);
}

void
dp_agg_rx(struct dp_lcore *lc, const struct dp_state *st, struct rte_mbuf *m,
	  const struct wire_pkt *p, uint16_t port)
{
	enum wire_reason why = WIRE_REASON_NONE;
	bool live = false;

	/* Every packet about a chunk goes to the chunk's port (section 9): the port picks the
	 * lcore that owns the chunk's slots. */
	if (unlikely(!dp_dport_ok(lc->dp, m, p->chunk))) {
		drop(lc, m, WIRE_REASON_BAD_PORT);
		return;
	}
	const struct dp_job *j = find_job(st, p->job, p->epoch, &live, &why);

	lc->rx_st = st;
	if (unlikely(j == NULL)) {
		drop(lc, m, why);
		return;
	}
	if (p->type == WIRE_TYPE_MCAST) { /* no slot: any installed epoch will do */
		on_mcast(lc, j, m, p);
		return;
	}
	if (p->type == WIRE_TYPE_NACK_MCAST) {
		on_nack_mcast(lc, j, m, p);
		return;
	}
	if (unlikely(p->tree >= j->tree_map_n || j->tree_map[p->tree] == 0 ||
		     j->tree_map[p->tree] == DP_TREE_SHARD)) {
		/* A tree the table gives another gateway of this site: a sender that takes
		 * this gateway for that shard's. */
		drop(lc, m, p->tree < j->tree_map_n && j->tree_map[p->tree] == DP_TREE_SHARD
				    ? WIRE_REASON_WRONG_SHARD : WIRE_REASON_UNKNOWN_TREE);
		return;
	}
	const struct dp_tree *t = &j->trees[j->tree_map[p->tree] - 1];

	/* The chunk, and for ACK and NACKs every chunk of the range (count chunks). */
	if (unlikely(p->chunk - t->chunk_first >= t->chunk_count ||
		     (p->type != WIRE_TYPE_CONTRIB && p->type != WIRE_TYPE_RESULT &&
		      p->count > t->chunk_count - (p->chunk - t->chunk_first)))) {
		drop(lc, m, WIRE_REASON_BAD_CHUNK);
		return;
	}
	switch (p->type) {
	case WIRE_TYPE_CONTRIB:
	case WIRE_TYPE_RESULT:
		/* A CONTRIB may come in the LAN dtype: only from a local worker (on_contrib()). */
		if (unlikely((p->dtype != j->dtype &&
			      (p->type != WIRE_TYPE_CONTRIB || p->dtype != j->lan_dtype)) ||
			     p->cset_blocks != j->cset_blocks ||
			     p->count != chunk_len(j, p->chunk))) {
			drop(lc, m, WIRE_REASON_JOB_MISMATCH);
			return;
		}
		if (p->type == WIRE_TYPE_CONTRIB)
			on_contrib(lc, j, live, t, m, p, port);
		else
			on_result(lc, j, t, m, p);
		return;
	case WIRE_TYPE_NACK_RESULT:
		on_nack_result(lc, j, t, m, p);
		return;
	default: /* ACK, NACK_CONTRIB: from the parent, about partial sums sent up */
		on_from_parent(lc, j, t, m, p);
		return;
	}
}

void
dp_pace_run(struct dp_lcore *lc, const struct dp_state *st)
{
	uint64_t now = 0;

	for (int e = 0; st != NULL && e < st->n_jobs; e++)
		for (int k = 0; k < st->jobs[e].n_epochs; k++) {
			struct dp_job_lcore *lj = &st->jobs[e].epochs[k]->lj[lc->idx];
			uint32_t na = atomic_load_explicit(&lj->n_active, memory_order_relaxed);

			for (uint32_t a = 0; a < na;) {
				struct dp_pacer *pc = &lj->pacers[lj->active[a]];

				if (now == 0)
					now = rte_rdtsc();
				while (pc->head != pc->tail && pc->next <= now) {
					struct rte_mbuf *m = pc->q[pc->head++ & pc->mask];

					pc->next += (uint64_t)(rte_pktmbuf_pkt_len(m) * pc->tsc_per_byte);
					dp_wire_out(lc, st->jobs[e].epochs[k], pc->seal, pc->port, m);
				}
				if (pc->head == pc->tail) { /* drained: out of the active list */
					pc->active = false;
					lj->active[a] = lj->active[--na];
				} else {
					a++;
				}
			}
			atomic_store_explicit(&lj->n_active, na, memory_order_relaxed);
		}
}
