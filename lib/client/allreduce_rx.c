/* SPDX-License-Identifier: BSD-3-Clause
 *
 * libgeoreduce, what comes back to a gr_allreduce() call: each datagram checked against the
 * job, the epoch, the round and the gateway and port of its chunk (rx_one()); a RESULT
 * copied (MX: decoded) into the caller's buffer, averaged if asked, and kept for a gateway
 * that lost it in a failover (docs/CLIENT.md, "Results kept": its NACK_RESULT is answered
 * from the copy); ACKs and NACK_CONTRIBs applied to the chunk records; PROBEs answered.
 * Runs in the caller's thread, per datagram: nothing is allocated.
 */
#include <arpa/inet.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "client_internal.h"
#include "halffloat.h"
#include "wire.h"

#define RTT_SAMPLE_MAX_US 60000000 /* longer samples are clock noise */

static void
divide(uint8_t *p, uint32_t n, enum gr_dtype dt, uint16_t contrib)
{
	for (uint32_t i = 0; i < n; i++) {
		if (dt == GR_DTYPE_FP32 || wire_dtype_is_mx((enum wire_dtype)dt)) {
			float v;

			memcpy(&v, p + 4 * (size_t)i, 4);
			v /= contrib;
			memcpy(p + 4 * (size_t)i, &v, 4);
		} else {
			uint16_t h;

			memcpy(&h, p + 2 * (size_t)i, 2);
			h = dt == GR_DTYPE_FP16 ? gr_f32_to_f16(gr_f16_to_f32(h) / contrib) :
						  gr_f32_to_bf16(gr_bf16_to_f32(h) / contrib);
			memcpy(p + 2 * (size_t)i, &h, 2);
		}
	}
}

/* Keep a copy of the RESULT p (frame pkt) as it came, its contributor set and payload. */
static void
keep_result(struct gr_client *c, const struct wire_pkt *p, const uint8_t *pkt)
{
	uint8_t *to = c->kbuf + (size_t)p->chunk * c->kstride;

	memcpy(to, pkt + WIRE_HDR_LEN, c->cset_len);
	memcpy(to + c->cset_len, pkt + p->payload_off, p->payload_len);
	c->kept[p->chunk] = (struct kept){
		.round = p->round, .contrib = p->contrib, .origin = p->origin, .valid = true};
}

/* NACK_RESULT from the gateway of the range's tree: after a failover it lacks the RESULTs
 * of a round this worker has moved on from, which its peers still wait for (docs/PROTOCOL.md
 * section 10.1, rule 6). Each chunk of the range whose kept RESULT is of that round goes
 * back as it came, relabelled with the request's epoch and tree and this worker as
 * sender, RETX|ECHO. */
static void
on_nack_result(struct call *k, const struct wire_pkt *p, uint64_t now)
{
	struct gr_client *c = k->c;
	const struct gr_gateway *g = &c->tgw[tree_of(c, p->chunk)];

	for (uint32_t i = p->chunk; i - p->chunk < p->count; i++) {
		const struct kept *e = c->kept != NULL ? &c->kept[i] : NULL;

		if (e == NULL || !e->valid || e->round != p->round) {
			c->st.kept_misses++;
			continue;
		}
		uint32_t n = wire_chunk_len(c->cfg.elements, c->cfg.chunk_elements, i);
		const uint8_t *from = c->kbuf + (size_t)i * c->kstride;
		struct wire_pkt r = {
			.type = WIRE_TYPE_RESULT,
			.flags = WIRE_F_RETX | WIRE_F_ECHO,
			.dtype = (enum wire_dtype)c->cfg.dtype,
			.cset_blocks = c->cfg.cset_blocks,
			.job = c->cfg.job,
			.epoch = c->cfg.epoch,
			.tree = p->tree,
			.sender = c->cfg.worker_id,
			.origin = e->origin,
			.contrib = e->contrib,
			.round = p->round,
			.chunk = i,
			.count = (uint16_t)n,
			.tsval = (uint32_t)now,
			.tsecr = p->tsval,
		};

		client_tx_add_set(k, &r, from, from + c->cset_len, wire_payload_bytes(r.dtype, n),
				  0, g->ipv4, wire_udp_port(g->base_port, g->ports, i));
		c->st.kept_answers++;
	}
}

static void
on_result(struct call *k, const struct wire_pkt *p, const uint8_t *pkt, uint64_t now)
{
	struct gr_client *c = k->c;
	struct chunk *h = &c->ch[p->chunk];
	uint32_t n = wire_chunk_len(c->cfg.elements, c->cfg.chunk_elements, p->chunk), have;
	uint8_t *dst;

	if (p->dtype != (enum wire_dtype)c->cfg.dtype || p->cset_blocks != c->cfg.cset_blocks ||
	    p->count != n) {
		c->st.invalid++;
		return;
	}
	if (h->state == CH_DONE) {
		c->st.duplicates++;
		return;
	}
	if (h->state == CH_IDLE) { /* not sent in this call: an earlier call's answer */
		c->st.stale++;
		return;
	}
	unsigned int tr = tree_of(c, p->chunk);

	if (sent_once(h) && !(p->flags & WIRE_F_RETX)) {
		uint32_t us = (uint32_t)now - h->sent_us;

		rtt_sample(&c->res, (int32_t)us);
		if (us == 0)
			us = 1;
		if (k->trtt[tr] == 0 || us < k->trtt[tr])
			k->trtt[tr] = us;
	}
	if (p->round != k->round) { /* a later round's: this worker is a straggler */
		c->st.superseded++;
		if (c->st.latest_round == 0 || wire_round_before(c->st.latest_round, p->round))
			c->st.latest_round = p->round;
	}
	if (k->csets != NULL && c->cset_len != 0)
		memcpy(k->csets + (size_t)p->chunk * c->cset_len, pkt + WIRE_HDR_LEN, c->cset_len);
	if (c->kept != NULL)
		keep_result(c, p, pkt);
	dst = chunk_data(k, p->chunk);
	have = p->chunk == k->last ? k->tail : n; /* the rest pads a shorter tensor */
	if (c->mxbuf != NULL) {                   /* MX: decoded into the caller's fp32 */
		float *to = have < n ? mx_tail(c) : (float *)(void *)dst;

		c->k->mx_widen[p->dtype - WIRE_DTYPE_MXINT8](to, pkt + p->payload_off,
							     n / WIRE_MX_BLOCK);
		if (have < n)
			memcpy(dst, to, (size_t)have * sizeof(float));
	} else {
		memcpy(dst, pkt + p->payload_off, (size_t)have * k->esize);
	}
	if (k->average)
		divide(dst, have, c->cfg.dtype, p->contrib);

	struct rack *rk = rack_of(c, tr, p->chunk);

	if (sent_once(h) && ((int32_t)(h->sent_us - rk->sent) > 0 ||
			     (h->sent_us == rk->sent && p->chunk > rk->chunk))) {
		rk->sent = h->sent_us;
		rk->rtt = (uint32_t)now - h->sent_us;
		rk->chunk = p->chunk;
	}
	h->state = CH_DONE;
	k->tflight[tr]--;
	k->tprogress[tr] = now;
	h->contrib = p->contrib;
	if (k->done == 0 || p->contrib < k->contrib_min)
		k->contrib_min = p->contrib;
	if (k->done == 0 || p->contrib > k->contrib_max)
		k->contrib_max = p->contrib;
	k->done++;
	c->st.results++;
}

/* ACK or NACK_CONTRIB for chunks [p->chunk, p->chunk + p->count) of this worker. */
static void
on_range(struct call *k, const struct wire_pkt *p, uint64_t now)
{
	struct gr_client *c = k->c;
	bool held = false;

	if (p->origin != c->cfg.worker_id) {
		c->st.invalid++;
		return;
	}
	if (p->type == WIRE_TYPE_NACK_CONTRIB)
		c->st.nack_contribs++;
	for (uint32_t i = p->chunk; i - p->chunk < p->count; i++) {
		struct chunk *h = &c->ch[i];

		if (p->type == WIRE_TYPE_NACK_CONTRIB) {
			if (h->state != CH_IDLE && h->state != CH_DONE) {
				client_send_contrib(k, i, true, now);
				c->st.contribs_retx++;
			}
			continue;
		}
		if (sent_once(h) || h->state == CH_RETX) {
			h->state = CH_HELD;
			h->backoff = 0;
			h->due_us = now + timer_us(k, 0);
			if (h->due_us < k->next_due)
				k->next_due = h->due_us;
			held = true;
		}
	}
	if (p->type == WIRE_TYPE_ACK) {
		if (held)
			c->st.acks++;
		else
			c->st.duplicates++;
	}
}

/* Is ipv4 with sender id `id` one of the client's gateways? */
static bool
from_gateway(const struct gr_client *c, uint32_t ipv4, uint16_t id)
{
	for (unsigned int i = 0; i < c->n_gws; i++)
		if (c->gws[i].ipv4 == ipv4 && c->gws[i].id == id)
			return true;
	return false;
}

static void
rx_one(void *ctx, uint8_t *pkt, size_t len, const struct sockaddr_in *from, uint64_t now)
{
	struct call *k = ctx;
	struct gr_client *c = k->c;
	const struct gr_config *cfg = &c->cfg;
	struct wire_pkt p;
	const struct gr_tree *t;
	const struct gr_gateway *g;
	uint32_t n;

	if (wire_hdr_decode(pkt, len, &p, NULL) < 0) {
		c->st.invalid++;
		return;
	}
	if (p.type == WIRE_TYPE_PROBE) {
		client_on_probe(k, &p, pkt, from, now);
		return;
	}
	if (!from_gateway(c, ntohl(from->sin_addr.s_addr), p.sender) || p.job != cfg->job ||
	    (p.type != WIRE_TYPE_RESULT && p.type != WIRE_TYPE_ACK &&
	     p.type != WIRE_TYPE_NACK_CONTRIB && p.type != WIRE_TYPE_NACK_RESULT)) {
		c->st.invalid++;
		return;
	}
	/* Another round's packets are stale, except in a partial reduce the RESULT of a
	 * later round: the group moved on without this worker, and that result answers it;
	 * and a NACK_RESULT, which asks for results kept of another round. */
	if (p.epoch != cfg->epoch || (p.round != k->round && p.type != WIRE_TYPE_NACK_RESULT &&
				      !(cfg->cset_blocks != 0 && p.type == WIRE_TYPE_RESULT &&
					wire_round_before(k->round, p.round)))) {
		c->st.stale++;
		return;
	}
	n = p.type == WIRE_TYPE_RESULT ? 1 : p.count;
	if (p.chunk >= c->n_chunks || n > c->n_chunks - p.chunk) {
		c->st.invalid++;
		return;
	}
	t = &cfg->trees[tree_of(c, p.chunk)];
	g = &c->tgw[tree_of(c, p.chunk)];
	/* From the gateway of the chunk's tree, from the port of the chunk. */
	if (t->id != p.tree || p.chunk + n > t->chunk_first + t->chunk_count ||
	    ntohl(from->sin_addr.s_addr) != g->ipv4 || p.sender != g->id ||
	    ntohs(from->sin_port) != wire_udp_port(g->base_port, g->ports, p.chunk)) {
		c->st.invalid++;
		return;
	}
	if (p.flags & WIRE_F_ECHO) {
		int32_t s = (int32_t)((uint32_t)now - p.tsecr);

		if (s >= 0 && s < RTT_SAMPLE_MAX_US)
			rtt_sample(&c->path, s);
	}
	if (p.type == WIRE_TYPE_RESULT)
		on_result(k, &p, pkt, now);
	else if (p.type == WIRE_TYPE_NACK_RESULT)
		on_nack_result(k, &p, now);
	else
		on_range(k, &p, now);
}

/* Read and apply what arrived. Returns datagrams read, or a negative errno. */
int
client_rx_batch(struct call *k)
{
	return client_rx_read(k->c, rx_one, k);
}
