/* SPDX-License-Identifier: BSD-3-Clause
 *
 * Fast path: loss recovery towards the parent and for the children (docs/PROTOCOL.md
 * section 10). Every partial sum sent up waits in the lcore's timer FIFO for its RESULT
 * (retx.h); dp_retx_timers() sends it again when it is overdue, overtaken by a later one
 * or a lost tail, or asks with a NACK_RESULT once the parent holds it (ACK). From the
 * parent, an ACK stops the resends and a NACK_CONTRIB asks for them
 * (dp_retx_from_parent()); from a child or a neighbour, a NACK_RESULT is answered from
 * the RESULTs retained here, in this epoch or an older one, within the requester's budget
 * (dp_retx_nack_result()).
 *
 * Called by agg.c (the packets) and worker.c (the timers, once per iteration); calls
 * recover.c (a RESULT held nowhere here) and send.c.
 *
 * Worker lcores only: no allocation except mbufs from pools sized at start, no locks, no
 * syscalls, no logging above DEBUG.
 */
#include <rte_branch_prediction.h>
#include <rte_cycles.h>
#include <rte_mbuf.h>

#include "dp.h"
#include "fastpath/agg_internal.h"
#include "fastpath/recover.h"
#include "fastpath/retx.h"
#include "fastpath/send.h"
#include "fastpath/tx.h"
#include "fastpath/validate.h"

/* Ask the parent again: the partial sum with RETX, or NACK_RESULT once it holds it. */
static void
resend_up(struct dp_lcore *lc, const struct dp_job *j, const struct dp_tree *t, struct dp_slot *s,
	  uint32_t now_us)
{
	if (!s->held) {
		send_copy(lc, j, &t->parent, t->pace_first, s->acc, NULL, WIRE_F_RETX, 0, now_us,
			  DP_CTR_RETRANSMITS);
		return;
	}
	struct wire_pkt a = dp_nack_result(j, t, s->chunk, s->round, now_us);

	dp_send_ctl(lc, j, &t->parent, &a, DP_CTR_NACKS_SENT);
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
tail_lost(const struct dp_lcore *lc, const struct dp_job *j, uint16_t ti, const struct dp_slot *s,
	  uint64_t now)
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
dp_retx_timers(struct dp_lcore *lc, const struct dp_state *st)
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
				const struct dp_pacer *pc =
					&lj->pacers[j->trees[tm.tree].pace_first];
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
					again = again < rto(lc, j, tm.tree, 0) ?
							again :
							rto(lc, j, tm.tree, 0);
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
				/* A first timeout with nothing telling of a loss: the parent
				 * most likely holds the partial sum and waits for other
				 * contributors (a site that started the round later). Ask it
				 * (a NACK_RESULT: an ACK, or the RESULT, answers) rather than
				 * resend the payload over the WAN; unanswered within a
				 * timeout, the partial sum goes again (an older parent does
				 * not answer such a request). Not while frames of the tree
				 * wait in the pacer to the parent: the partial sum may be
				 * among them, the unpaced question would overtake it and find
				 * nothing there; the resend below goes ahead of the queue as
				 * it always did. */
				if (!fast && !s->held && !s->asked && pc->head == pc->tail) {
					struct wire_pkt a =
						dp_nack_result(j, &j->trees[tm.tree], s->chunk,
							       s->round, dp_now_us());

					s->asked = true;
					dp_send_ctl(lc, j, &j->trees[tm.tree].parent, &a,
						    DP_CTR_HELD_ASKED);
					timer_push_at(lc, j, tm.tree, s,
						      now + rto(lc, j, tm.tree, 0));
					continue;
				}
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

/* Send the ACK of the run of held chunks [*first, *first + *n) to d, if any, and start a
 * new run. */
static inline void
ack_run(struct dp_lcore *lc, const struct dp_job *j, const struct dp_dest *d,
	const struct wire_pkt *p, uint32_t *first, uint16_t *n, uint32_t now_us)
{
	if (*n == 0)
		return;
	struct wire_pkt a = dp_ack(j, p, *first, *n, now_us);

	dp_send_ctl(lc, j, d, &a, DP_CTR_ACKS_SENT);
	*n = 0;
}

void
dp_retx_nack_result(struct dp_lcore *lc, const struct dp_job *j, const struct dp_tree *t,
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
	/* The requester's contributor index: its chunks that a slot here holds are ACKed. */
	int k = to < t->n_down ? find_src(t, p->sender) : -1;
	uint32_t held_first = 0;
	uint16_t held = 0;

	dp_budget_refill(b, j, rte_rdtsc());
	for (uint32_t c = p->chunk; c - p->chunk < p->count; c++) {
		struct dp_slot *s = slot_of(j, lc, t, c);
		struct rte_mbuf *r = retained(s, c, p->round);
		int tree = -1;

		if (r == NULL) {
			r = dp_retained_elsewhere(lc, j, c, p->round);
			tree = t->id;
		}
		if (r == NULL) {
			bool open = s->chunk == c && s->round == p->round &&
				    (s->state == DP_SLOT_OPEN || s->state == DP_SLOT_COMPLETE);
			bool mine = open && k >= 0 && slot_has(s, t->src_bits[k]);
			bool worker = k >= 0 && t->src_worker[k];

			lc->ctr[DP_CTR_NACK_NOT_OPEN] += worker && !open;
			lc->ctr[DP_CTR_NACK_OPEN_WITHOUT] += worker && open && !mine;
			if (!open)
				dp_recover_request(lc, j, t, c, p->round, (uint16_t)to, -1,
						   (int)to);
			else if (s->state == DP_SLOT_OPEN)
				dp_recover_stalled(lc, j, t, s);
			if (mine) {
				/* Held here, its RESULT waits for others: say so (an ACK of
				 * the run), so that the requester does not resend it. */
				if (held == 0)
					held_first = c;
				held++;
				continue;
			}
		}
		ack_run(lc, j, d, p, &held_first, &held, now_us);
		if (r == NULL)
			continue;
		if (!dp_budget_spend(b, rte_pktmbuf_data_len(r))) {
			lc->ctr[DP_CTR_ANSWER_BUDGET]++;
			continue;
		}
		dp_send_copy_as(lc, j, d, pacer, r, NULL, WIRE_F_RETX | WIRE_F_ECHO, p->tsval,
				now_us, tree < 0 ? DP_CTR_RESULTS_SENT : DP_CTR_RECOVER_ANSWERED,
				tree, false);
	}
	ack_run(lc, j, d, p, &held_first, &held, now_us);
	rte_pktmbuf_free(m);
}

void
dp_retx_from_parent(struct dp_lcore *lc, const struct dp_job *j, const struct dp_tree *t,
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
			send_copy(lc, j, &t->parent, t->pace_first, s->acc, NULL, WIRE_F_RETX, 0,
				  now_us, DP_CTR_RETRANSMITS);
	}
	rte_pktmbuf_free(m);
}
