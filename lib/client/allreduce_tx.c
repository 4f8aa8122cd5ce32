/* SPDX-License-Identifier: BSD-3-Clause
 *
 * libgeoreduce, what a gr_allreduce() call sends (docs/PROTOCOL.md section 10): the
 * CONTRIB of each chunk, the NACK_RESULTs that ask for results (coalesced into ranges for
 * a gateway with one port), and the timers of the chunks in flight (client_run_timers():
 * T1 and T2, and the fast retransmit of a chunk that a later one overtook). Runs in the
 * caller's thread, per packet: nothing is allocated; packets are queued in the transmit
 * batch (sock.c).
 */
#include <stdbool.h>
#include <stdint.h>

#include "client_internal.h"
#include "wire.h"

#define NACK_RUN_MAX WIRE_NACK_RANGE_MAX /* chunks per coalesced NACK_RESULT */

/* The header fields every packet of this worker about chunk carries. */
static struct wire_pkt
pkt_base(const struct call *k, enum wire_type type, uint32_t chunk, uint64_t now)
{
	const struct gr_client *c = k->c;

	return (struct wire_pkt){
		.type = type,
		.job = c->cfg.job,
		.epoch = c->cfg.epoch,
		.tree = c->cfg.trees[tree_of(c, chunk)].id,
		.sender = c->cfg.worker_id,
		.origin = c->cfg.worker_id,
		.round = k->round,
		.chunk = chunk,
		.tsval = (uint32_t)now,
	};
}

void
client_send_contrib(struct call *k, uint32_t chunk, bool retx, uint64_t now)
{
	const struct gr_config *cfg = &k->c->cfg;
	struct wire_pkt p = pkt_base(k, WIRE_TYPE_CONTRIB, chunk, now);
	uint32_t n = wire_chunk_len(cfg->elements, cfg->chunk_elements, chunk);
	uint32_t have = chunk == k->last ? k->tail : n;
	const struct gr_gateway *g = &k->c->tgw[tree_of(k->c, chunk)];

	p.flags = retx ? WIRE_F_RETX : 0;
	p.dtype = k->c->lan;
	p.cset_blocks = cfg->cset_blocks;
	p.contrib = 1;
	p.count = (uint16_t)n;
	if (k->c->chunk_wire != 0) /* MX: the chunk as gr_allreduce() encoded it */
		client_tx_add(k, &p, k->c->mxbuf + (size_t)chunk * k->c->chunk_wire,
			      wire_payload_bytes(p.dtype, n), 0, g->ipv4,
			      wire_udp_port(g->base_port, g->ports, chunk));
	else
		client_tx_add(k, &p, chunk_data(k, chunk), have * k->esize, (n - have) * k->esize,
			      g->ipv4, wire_udp_port(g->base_port, g->ports, chunk));
}

static void
send_nack(struct call *k, uint32_t first, uint32_t count, uint64_t now)
{
	const struct gr_gateway *g = &k->c->tgw[tree_of(k->c, first)];
	struct wire_pkt p = pkt_base(k, WIRE_TYPE_NACK_RESULT, first, now);

	p.count = (uint16_t)count;
	client_tx_add(k, &p, NULL, 0, 0, g->ipv4, wire_udp_port(g->base_port, g->ports, first));
	k->c->st.nacks_sent++;
}

static void
nack_flush(struct call *k, uint64_t now)
{
	if (k->run_len != 0)
		send_nack(k, k->run_first, k->run_len, now);
	k->run_len = 0;
}

/* Ask for chunk's result. A gateway with one port gets coalesced ranges within a tree; with
 * several, each chunk goes alone to the port (and lcore) that owns it. */
static void
nack_add(struct call *k, uint32_t chunk, uint64_t now)
{
	const struct gr_client *c = k->c;

	if (k->run_len != 0 && c->tgw[tree_of(c, chunk)].ports == 1 && k->run_len < NACK_RUN_MAX &&
	    k->run_first + k->run_len == chunk && tree_of(c, chunk) == tree_of(c, k->run_first)) {
		k->run_len++;
		return;
	}
	nack_flush(k, now);
	k->run_first = chunk;
	k->run_len = 1;
}

/* Expire the timers of the chunks in flight (section 10): SENT or RETX resends the CONTRIB
 * with RETX and asks for the result (a gateway that does not answer RETX still answers a
 * NACK_RESULT from the result it retains); HELD asks for the result. */
void
client_run_timers(struct call *k, uint64_t now)
{
	struct gr_client *c = k->c;

	k->next_due = UINT64_MAX;
	for (unsigned int t = 0; t < c->cfg.n_trees; t++) {
		/* While results of the tree keep coming, an overdue chunk is most likely
		 * queued behind them (a full window drains at the tree's paced rate), not
		 * lost: its timer restarts from the latest result, as TCP restarts its
		 * retransmission timer on every ACK (RFC 6298, 5.3). */
		uint64_t base = timer_us(k, 0), quiet = k->tprogress[t] + base;

		for (uint32_t i = k->told[t]; i < k->tnext[t]; i++) {
			struct chunk *h = &c->ch[i];

			if (h->state == CH_DONE || h->state == CH_IDLE)
				continue;
			/* ... unless a chunk first sent after it (as last sent) already has
			 * its result, and the time that one took (plus an eighth of the
			 * timeout, for the spread) has passed since this one went: then it,
			 * or its result, was lost, and goes again now (fast retransmit, as
			 * RACK, RFC 8985; also after a resend, and among a round's last
			 * chunks, where none goes long after them); not once the gateway
			 * holds it (HELD: its result may wait for others). */
			const struct rack *rk = rack_of(c, t, i);
			int32_t d = (int32_t)(rk->sent - h->sent_us);
			bool after = d > 0 || (d == 0 && i < rk->chunk);
			int32_t age = (int32_t)((uint32_t)now - h->sent_us);
			int32_t lost_at = (int32_t)(rk->rtt + base / 8);
			bool overtaken = h->state != CH_HELD && after && age >= lost_at;

			if (overtaken)
				h->due_us = now;
			else if (h->due_us <= now && quiet > now && h->backoff == 0)
				h->due_us = quiet;
			if (h->state != CH_HELD && after && !overtaken &&
			    now + (uint64_t)(lost_at - age) < k->next_due)
				k->next_due = now + (uint64_t)(lost_at - age);
			if (h->due_us <= now && h->state == CH_SENT && !overtaken) {
				/* T1 with no sign of loss: the gateway most likely holds the
				 * CONTRIB while its result waits for other contributors (a
				 * site that started the round later). Ask (a NACK_RESULT: an
				 * ACK or the RESULT answers) instead of resending the payload;
				 * unanswered within a round trip of the first hop, it was
				 * lost, and goes again (as it does to an older gateway, which
				 * leaves such a request unanswered). */
				h->state = CH_ASKED;
				nack_add(k, i, now);
				c->st.held_asked++;
				h->due_us = now + ask_us(k);
			} else if (h->due_us <= now) {
				/* A timeout doubles the next one; a fast retransmit does not. */
				if (h->backoff < 32 && !overtaken)
					h->backoff++;
				if (h->state != CH_HELD) {
					client_send_contrib(k, i, true, now);
					c->st.contribs_retx++;
					c->st.retx_fast += overtaken;
					c->st.asks_unanswered += !overtaken && h->state == CH_ASKED;
					h->state = CH_RETX;
					h->sent_us = (uint32_t)now;
				}
				nack_add(k, i, now);
				h->due_us = now + timer_us(k, h->backoff);
			}
			if (h->due_us < k->next_due)
				k->next_due = h->due_us;
		}
		nack_flush(k, now); /* a NACK range never spans two trees */
	}
}
