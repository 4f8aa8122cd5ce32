/* SPDX-License-Identifier: BSD-3-Clause
 *
 * Fast path: selective multicast (docs/PROTOCOL.md section 7.5). An MCAST goes on to each
 * next-hop gateway and local worker of its stream, as copies that share its payload, and
 * is retained in the stream's ring; a NACK_MCAST is answered from that ring within the
 * requester's budget, or asked of the upstream gateway, whose repair goes on to those who
 * asked. No slot and no timer.
 *
 * Called by rx.c; calls only send.c.
 *
 * Worker lcores only: no allocation except mbufs from pools sized at start, no locks, no
 * syscalls, no logging above DEBUG.
 */
#include <string.h>

#include <rte_branch_prediction.h>
#include <rte_cycles.h>
#include <rte_mbuf.h>

#include "dp.h"
#include "fastpath/agg_internal.h"
#include "fastpath/mcast.h"
#include "fastpath/send.h"
#include "fastpath/tx.h"
#include "fastpath/validate.h"

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
mcopy_at(const struct dp_job *j, const struct dp_mstream *ms, int o, uint32_t round, uint32_t chunk)
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
mask_slot(const struct dp_job *j, const struct dp_stream *s, const struct dp_mstream *ms, int o,
	  uint32_t round, uint32_t chunk)
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
		.type = WIRE_TYPE_NACK_MCAST,
		.dtype = WIRE_DTYPE_NONE,
		.job = j->job,
		.epoch = j->epoch,
		.tree = s->id,
		.sender = j->self_id,
		.origin = origin,
		.round = round,
		.chunk = chunk,
		.count = 1,
		.tsval = dp_now_us(),
	};

	dp_send_ctl(lc, j, &s->from, &q, DP_CTR_MCAST_ASKED);
}

/*
 * A repair (MCAST with RETX) from the `from` gateway: the answer to what this gateway
 * asked for. Retained, and sent on with RETX to the outputs that asked for it only, each
 * within its budget; one nobody waits for is `late` (retained all the same).
 */
static __rte_noinline void
on_mcast_repair(struct dp_lcore *lc, const struct dp_job *j, const struct dp_stream *s, int o,
		struct rte_mbuf *m, const struct wire_pkt *p)
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
on_mcast(struct dp_lcore *lc, const struct dp_job *j, struct rte_mbuf *m, const struct wire_pkt *p)
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
					     s->origin_count[o] != 0 :
				     dp_rx_src_key(m) - s->from_key >= s->from_count) ||
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
dp_mcast_rx(struct dp_lcore *lc, const struct dp_state *st, struct rte_mbuf *m,
	    const struct wire_pkt *p)
{
	bool live = false;
	const struct dp_job *j = rx_job(lc, st, m, p, &live);

	if (unlikely(j == NULL))
		return;
	if (p->type == WIRE_TYPE_MCAST) { /* no slot: any installed epoch will do */
		on_mcast(lc, j, m, p);
		return;
	}
	on_nack_mcast(lc, j, m, p);
}
