/* SPDX-License-Identifier: BSD-3-Clause
 *
 * The parent gateway the generator plays for a leaf or interior gateway under test
 * (docs/BENCH.md, "Roles"). It takes the gateway's partial sum of a chunk, checks it
 * bit-exactly against the exact sum of the gateway's subtree (every contribution of the
 * workers and child gateways the generator plays), and answers with the RESULT: that sum
 * plus one contribution of the parent's own, with `contrib` one more than the partial
 * sum's, the parent as sender and origin (the root of the tree), as a root would
 * (docs/PROTOCOL.md section 7.3). Since the partial sum was checked equal to the exact one,
 * the RESULT is the exact sum, built once per chunk (gen.c) and sent by reference. A
 * partial sum the gateway sends again (a retransmission, or a copy after the RESULT was
 * lost), and a NACK_RESULT of the gateway's result recovery (section 10), get the RESULT
 * again, as a root answers with its retained RESULT.
 *
 * Runs on the generator's lcore, inside its receive loop; no allocation, lock or system
 * call.
 */
#include <string.h>

#include "bytes.h"
#include "gen.h"
#include "gen_priv.h"

/* Partial reduce: write the round's RESULT (set, contrib, sum: gen_crew_partial()) into
 * chunk index c's RESULT frame, a fresh one if the last is still held. */
static bool
crew_answer(struct gen_lcore *g, unsigned int c)
{
	const struct gen_job *gj = g->gj;
	struct gen_chunk *ch = &g->ch[c];
	struct rte_mbuf *f = ch->frames[GEN_PARENT(gj)];
	uint8_t *d;

	if (rte_mbuf_refcnt_read(f) > 1) {
		struct rte_mbuf *m = rte_pktmbuf_copy(f, g->pool, 0, UINT32_MAX);

		if (m == NULL) {
			g->st.no_mbuf++;
			return false;
		}
		rte_pktmbuf_free(f); /* our reference; the holder keeps its own */
		ch->frames[GEN_PARENT(gj)] = f = m;
	}
	d = rte_pktmbuf_mtod(f, uint8_t *);
	be16_put(d + WIRE_FRAME_HDR_OFF + 22, ch->contrib);
	memcpy(d + WIRE_FRAME_PAYLOAD_OFF, ch->set, gj->cset_len);
	memcpy(d + gj->pl_off, ch->expect, gj->payload);
	return true;
}

/* Send chunk index c's RESULT again, unless it is still queued. */
static void
answer_again(struct gen_lcore *g, unsigned int c)
{
	g->st.partial_repeats++;
	if (g->ch[c].pending == 0)
		gen_enqueue(g, c, GEN_PARENT(g->gj), 0);
}

/* A NACK_RESULT: the gateway asks for the RESULTs of a range of chunks of a round. Those
 * answered already go again; the others wait for the gateway's partial sum. */
static int
nack_result(struct gen_lcore *g, const struct wire_pkt *p, const struct wire_flow *fl)
{
	const struct gen_job *gj = g->gj;

	if (p->sender != gj->gw_id || fl->src_ip != gj->gw_ipv4)
		return -1;
	g->st.nacks++;
	for (uint32_t k = 0; k < p->count; k++) {
		int c = gen_find_chunk(gj, p->chunk + k);

		if (c >= 0 && g->ch[c].open && g->ch[c].round == p->round && g->ch[c].answered)
			answer_again(g, (unsigned int)c);
	}
	return 0;
}

int
gen_parent_rx(struct gen_lcore *g, const uint8_t *d, const struct wire_pkt *p,
	      const struct wire_flow *fl, uint32_t len)
{
	const struct gen_job *gj = g->gj;
	const struct gen_worker *pa = &gj->parent;
	int c = gen_find_chunk(gj, p->chunk);
	struct gen_chunk *ch;
	const uint8_t *pl;

	if (p->type == WIRE_TYPE_NACK_RESULT)
		return nack_result(g, p, fl);
	if (p->type != WIRE_TYPE_CONTRIB || c < 0 || p->tree != gj->tree[c] ||
	    fl->dst_port != (uint16_t)(pa->port + p->chunk % pa->n_ports))
		return -1;
	ch = &g->ch[c];
	if (p->sender != gj->gw_id || p->origin != gj->gw_id || fl->src_ip != gj->gw_ipv4 ||
	    (uint16_t)(fl->src_port - gj->base_port) >= gj->n_ports ||
	    (gj->cset_len == 0 && p->contrib != gj->sub_contrib) || p->count != gj->elems ||
	    len != gj->frame_len) {
		gen_fail(g,
			 "chunk %u round %u: a partial sum to the parent with contrib %u of %u, "
			 "count %u, origin %u, sender %u, %u bytes",
			 p->chunk, p->round, p->contrib, gj->sub_contrib, p->count, p->origin,
			 p->sender, len);
		return 0;
	}
	if (!ch->open || p->round != ch->round) {
		g->st.stale++;
		return 0;
	}
	if (ch->answered) {
		answer_again(g, (unsigned int)c); /* the RESULT was lost or late */
		return 0;
	}
	g->st.partials++;
	if (gj->cset_len != 0) {
		if (!gen_crew_partial(g, (unsigned int)c, d, p) || !crew_answer(g, (unsigned int)c))
			return 0;
		ch->answered = true;
		gen_enqueue(g, (unsigned int)c, GEN_PARENT(gj), 0);
		return 0;
	}
	pl = d + gj->pl_off;
	if (memcmp(pl, ch->partial, gj->payload) != 0) {
		gen_wrong(g, pl, ch->partial, p, "the partial sum to", pa->id);
		return 0;
	}
	ch->answered = true;
	gen_enqueue(g, (unsigned int)c, GEN_PARENT(gj), 0);
	return 0;
}
