/* SPDX-License-Identifier: BSD-3-Clause
 *
 * The selective multicast streams georeduce-bench drives in port mode (docs/BENCH.md,
 * "Roles"; docs/PROTOCOL.md section 7.5): for a gateway table with `streams` and no trees,
 * the generator plays each stream's origins (the local workers at the stream's source
 * gateway, or the `from` gateway the stream arrives from) and every output the gateway
 * must copy it to (its `deliver` workers and `to` gateways).
 *
 * A driven unit is one chunk of one origin's update in one stream, and it cycles through
 * rounds as a chunk of a tree does (gen.c): the origin sends its MCAST, and the round ends
 * when every output of the stream (at the source, but the origin itself) holds its copy,
 * each checked bit-exactly against the frame the origin sent (headers, from the gateway's
 * port of the chunk to the output's, and payload). An output still waiting after the
 * retransmission timeout asks the gateway for the chunk (NACK_MCAST, as a receiving worker
 * or a next-hop gateway does); the origin never sends it again. As the `from` gateway the
 * generator answers the gateway's NACK_MCAST with the repair (the MCAST with RETX) of any
 * chunk of the round it sent. On a protected link (the table's `sealed`) the frames between
 * the gateway and a `from` or `to` gateway travel sealed under that link's key (gen.c
 * seals and opens them; gen_mcast_seal() names the key, gen_link_ok() checks it).
 *
 * gen_mcast_job() and gen_mcast_fini(): main lcore, before and after the run; the rest on
 * the generator's lcore, inside its loop (no allocation, lock or system call).
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rte_common.h>
#include <rte_mbuf.h>

#include "gen.h"
#include "gen_priv.h"

/* One stream as the generator drives it. */
struct gen_mstream {
	uint16_t id;
	bool at_source;     /* the gateway is the source: the origins are its workers */
	unsigned int first; /* its first unit: origin o's chunk k is first + o x chunks + k */
	unsigned int n_origins;
	uint16_t origins[TABLE_WORKERS_MAX];
	int origin_w[TABLE_WORKERS_MAX]; /* at the source: each origin's index in gj->workers */
	struct gen_worker from;          /* elsewhere: the gateway it arrives from */
	uint64_t *out;                   /* its outputs among gj->workers, a bit each */
};

struct gen_mcast {
	unsigned int n_streams;
	unsigned int chunks; /* chunks driven of every origin: [0, chunks) */
	struct gen_mstream s[TABLE_STREAMS_MAX];
	uint64_t *words;  /* the streams' output masks */
	uint8_t *unit_s;  /* each unit's stream index */
	uint16_t *unit_o; /* ... and origin index */
};

/* A job that cannot be driven: the message into err, the job freed, rc returned. */
static int __attribute__((format(printf, 5, 6)))
drop_job(struct gen_job *gj, int rc, char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
	gen_job_fini(gj);
	return rc;
}

/* Add a party the bench plays (a deliver worker, or a `to` gateway when ports > 0) unless
 * it is there. */
static void
add_party(struct gen_job *gj, uint16_t id, uint32_t ipv4, uint16_t port, uint16_t ports)
{
	for (unsigned int w = 0; w < gj->n_workers; w++)
		if (gj->workers[w].id == id)
			return;
	gj->workers[gj->n_workers++] = (struct gen_worker){
		.id = id,
		.ipv4 = ipv4,
		.port = port,
		.n_ports = ports > 0 ? ports : 1,
		.contrib = 1,
		.seal = ports > 0 ? gen_seal_of(gj, id) : -1, /* links to workers are plain */
		.child = (int16_t)(ports > 0 ? (int)gj->n_children++ : -1),
	};
}

static int
party_of(const struct gen_job *gj, uint16_t id)
{
	for (unsigned int w = 0; w < gj->n_workers; w++)
		if (gj->workers[w].id == id)
			return (int)w;
	return -1;
}

/* Stream k of the table into mc->s[k]: its origins, the sender of its MCASTs, its outputs. */
static int
take_stream(struct gen_job *gj, const struct table_stream *ts, unsigned int k, char *err,
	    size_t errlen)
{
	struct gen_mcast *mc = gj->mc;
	struct gen_mstream *ms = &mc->s[k];
	unsigned int words = (gj->n_workers + 63) / 64;

	ms->id = ts->id;
	ms->at_source = !ts->has_from;
	ms->n_origins = (unsigned int)ts->n_origins;
	ms->out = mc->words + (size_t)k * words;
	memcpy(ms->origins, ts->origins, ms->n_origins * sizeof(ms->origins[0]));
	for (int i = 0; i < ts->n_deliver; i++) {
		int w = party_of(gj, ts->deliver[i].id);

		ms->out[w / 64] |= 1ull << (w % 64);
	}
	for (int i = 0; i < ts->n_to; i++) {
		int w = party_of(gj, ts->to[i].id);

		ms->out[w / 64] |= 1ull << (w % 64);
	}
	for (unsigned int o = 0; ms->at_source && o < ms->n_origins; o++) {
		ms->origin_w[o] = party_of(gj, ms->origins[o]);
		if (ms->origin_w[o] < 0)
			return drop_job(gj, -EINVAL, err, errlen,
					"--table: stream %u: origin %u is a local worker without "
					"an address (a deliver entry) in the table",
					ms->id, ms->origins[o]);
		/* Its copies go to the others only: it must have some. */
		bool any = false;

		for (unsigned int w = 0; w < gj->n_workers; w++)
			any |= (ms->out[w / 64] >> (w % 64) & 1) && (int)w != ms->origin_w[o];
		if (!any)
			return drop_job(gj, -EINVAL, err, errlen,
					"--table: stream %u: origin %u's update goes to no output",
					ms->id, ms->origins[o]);
	}
	if (ms->at_source)
		return 0;
	ms->from = (struct gen_worker){.id = ts->from.id,
				       .ipv4 = ts->from.ipv4,
				       .port = ts->from.base_port,
				       .n_ports = ts->from.ports,
				       .contrib = 1,
				       .seal = gen_seal_of(gj, ts->from.id),
				       .child = -1};
	if (party_of(gj, ts->from.id) >= 0)
		return 0; /* a child gateway the bench plays as an output of other streams */
	if (gj->has_parent && gj->parent.id != ts->from.id)
		return drop_job(gj, -EINVAL, err, errlen,
				"--table: stream %u arrives from gateway %u, another than the "
				"other streams' (the bench plays one parent)",
				ms->id, ts->from.id);
	gj->has_parent = true;
	gj->parent = ms->from;
	return 0;
}

int
gen_mcast_job(struct gen_job *gj, const struct table *tb, unsigned int window, char *err,
	      size_t errlen)
{
	unsigned int cap = 0, origins = 0, units = 0, full;
	struct gen_mcast *mc;

	gen_job_common(gj, tb);
	if (tb->n_trees > 0)
		return drop_job(gj, -EINVAL, err, errlen,
				"--table: multicast streams are driven in a table without trees "
				"only");
	full = (unsigned int)RTE_MIN(tb->elements / tb->chunk_elements, (uint64_t)UINT32_MAX);
	for (int k = 0; k < tb->n_streams; k++) {
		cap += (unsigned int)(tb->streams[k].n_deliver + tb->streams[k].n_to);
		origins += (unsigned int)tb->streams[k].n_origins;
	}
	gj->mc = mc = calloc(1, sizeof(*mc));
	gj->workers = calloc(cap, sizeof(*gj->workers));
	if (mc == NULL || gj->workers == NULL || gj->seals == NULL)
		return drop_job(gj, -ENOMEM, err, errlen, "out of memory");
	if (full == 0)
		return drop_job(gj, -EINVAL, err, errlen,
				"--table: job %u has no full chunk to drive", tb->job);
	gj->n_streams = mc->n_streams = (unsigned int)tb->n_streams;
	mc->chunks = RTE_MIN(full, RTE_MAX(1u, window / origins));
	for (int k = 0; k < tb->n_streams; k++) {
		const struct table_stream *ts = &tb->streams[k];

		for (int i = 0; i < ts->n_deliver; i++)
			add_party(gj, ts->deliver[i].id, ts->deliver[i].ipv4, ts->deliver[i].port,
				  0);
		for (int i = 0; i < ts->n_to; i++)
			add_party(gj, ts->to[i].id, ts->to[i].ipv4, ts->to[i].base_port,
				  ts->to[i].ports);
	}
	qsort(gj->workers, gj->n_workers, sizeof(*gj->workers), gen_cmp_worker);
	mc->words = calloc((size_t)mc->n_streams * ((gj->n_workers + 63) / 64), sizeof(uint64_t));
	if (mc->words == NULL)
		return drop_job(gj, -ENOMEM, err, errlen, "out of memory");
	for (unsigned int k = 0; k < mc->n_streams; k++) {
		mc->s[k].first = units;
		units += tb->streams[k].n_origins * mc->chunks;
		if (take_stream(gj, &tb->streams[k], k, err, errlen) != 0)
			return -EINVAL;
	}
	gj->n_chunks = units;
	gj->chunk = calloc(units, sizeof(*gj->chunk));
	gj->tree = calloc(units, sizeof(*gj->tree));
	mc->unit_s = calloc(units, sizeof(*mc->unit_s));
	mc->unit_o = calloc(units, sizeof(*mc->unit_o));
	if (gj->chunk == NULL || gj->tree == NULL || mc->unit_s == NULL || mc->unit_o == NULL)
		return drop_job(gj, -ENOMEM, err, errlen, "out of memory");
	for (unsigned int k = 0, u = 0; k < mc->n_streams; k++)
		for (unsigned int o = 0; o < mc->s[k].n_origins; o++)
			for (unsigned int c = 0; c < mc->chunks; c++, u++) {
				gj->chunk[u] = c;
				gj->tree[u] = mc->s[k].id;
				mc->unit_s[u] = (uint8_t)k;
				mc->unit_o[u] = (uint16_t)o;
			}
	if (!gj->has_parent)
		gj->parent.seal = -1;
	gj->amplitude = 8;
	gj->sub_contrib = gj->result_contrib = 1;
	gj->root_id = gj->gw_id;
	return 0;
}

void
gen_mcast_fini(struct gen_job *gj)
{
	if (gj->mc == NULL)
		return;
	free(gj->mc->words);
	free(gj->mc->unit_s);
	free(gj->mc->unit_o);
	free(gj->mc);
	gj->mc = NULL;
}

uint32_t
gen_mcast_frame_len(const struct gen_job *gj, unsigned int w)
{
	return w == gj->n_workers ? gj->frame_len : WIRE_FRAME_PAYLOAD_OFF;
}

int
gen_mcast_build(const struct gen_lcore *g, uint8_t *frame, unsigned int c, unsigned int w)
{
	const struct gen_job *gj = g->gj;
	const struct gen_mstream *ms = &gj->mc->s[gj->mc->unit_s[c]];
	unsigned int o = gj->mc->unit_o[c];
	bool mcast = w == gj->n_workers;
	const struct gen_worker *from = !mcast        ? &gj->workers[w] :
					ms->at_source ? &gj->workers[ms->origin_w[o]] :
							&ms->from;
	uint32_t len = gen_mcast_frame_len(gj, w);
	struct wire_pkt p = {
		.type = mcast ? WIRE_TYPE_MCAST : WIRE_TYPE_NACK_MCAST,
		.dtype = mcast ? gj->dtype : 0,
		.job = gj->job,
		.epoch = gj->epoch,
		.tree = ms->id,
		.sender = from->id,
		.origin = ms->origins[o],
		.contrib = mcast ? 1 : 0,
		.chunk = gj->chunk[c],
		.count = mcast ? (uint16_t)gj->elems : 1,
	};
	struct wire_flow fl;

	gen_flow_to_gw(g, from, gj->chunk[c], &fl);
	if (wire_hdr_encode(frame + WIRE_FRAME_HDR_OFF, len - WIRE_FRAME_HDR_OFF, &p, NULL) != 0)
		return -EINVAL;
	if (mcast)
		gen_contrib_payload(gj, c, 0, frame + WIRE_FRAME_PAYLOAD_OFF);
	return wire_frame_build(frame, len, &fl, len - WIRE_FRAME_HDR_OFF, false);
}

int
gen_mcast_seal(const struct gen_job *gj, unsigned int c, unsigned int w)
{
	const struct gen_mstream *ms = &gj->mc->s[gj->mc->unit_s[c]];

	if (w < gj->n_workers)
		return gj->workers[w].seal;
	return ms->at_source ? -1 : ms->from.seal;
}

/* Whether party w is an output of unit c: of its stream, and not its origin. */
static bool
is_output(const struct gen_job *gj, unsigned int c, unsigned int w)
{
	const struct gen_mstream *ms = &gj->mc->s[gj->mc->unit_s[c]];

	return (ms->out[w / 64] >> (w % 64) & 1) &&
	       !(ms->at_source && ms->origin_w[gj->mc->unit_o[c]] == (int)w);
}

void
gen_mcast_start(struct gen_lcore *g, unsigned int c)
{
	struct gen_chunk *ch = &g->ch[c];

	/* The parties that get no copy of this unit count as done from the start. */
	for (unsigned int w = 0; w < g->gj->n_workers; w++)
		if (!is_output(g->gj, c, w)) {
			ch->mask[w / 64] |= 1ull << (w % 64);
			ch->got++;
		}
	gen_enqueue(g, c, g->gj->n_workers, E_FIRST);
}

void
gen_mcast_timeout(struct gen_lcore *g, unsigned int c)
{
	struct gen_chunk *ch = &g->ch[c];

	for (unsigned int w = 0; w < g->gj->n_workers; w++)
		if (!(ch->mask[w / 64] & 1ull << (w % 64))) {
			gen_enqueue(g, c, w, 0);
			g->st.mc_nacks++;
		}
}

bool
gen_mcast_obsolete(const struct gen_lcore *g, uint64_t e)
{
	const struct gen_chunk *ch = &g->ch[e >> 24];
	unsigned int w = (e >> 8) & 0xffff;

	return w < g->gj->n_workers && (ch->mask[w / 64] >> (w % 64) & 1);
}

/* The unit of (stream, origin) of a packet, its chunk aside: the stream's index in *s and
 * the origin's index, or -1. */
static int
origin_of(const struct gen_mcast *mc, const struct wire_pkt *p, unsigned int *s)
{
	for (unsigned int k = 0; k < mc->n_streams; k++) {
		if (mc->s[k].id != p->tree)
			continue;
		*s = k;
		for (unsigned int o = 0; o < mc->s[k].n_origins; o++)
			if (mc->s[k].origins[o] == p->origin)
				return (int)o;
	}
	return -1;
}

/* A NACK_MCAST at the `from` gateway the bench plays: each chunk of the range whose MCAST
 * of that round went out is sent again as a repair. */
static int
nack_mcast(struct gen_lcore *g, const struct gen_mstream *ms, unsigned int o,
	   const struct wire_pkt *p, const struct wire_flow *fl, int key)
{
	const struct gen_job *gj = g->gj;
	unsigned int W = gj->n_workers;

	if (ms->at_source || fl->dst_ip != ms->from.ipv4 ||
	    (uint16_t)(fl->dst_port - ms->from.port) >= ms->from.n_ports)
		return -1;
	if (p->sender != gj->gw_id || fl->src_ip != gj->gw_ipv4 ||
	    (uint16_t)(fl->src_port - gj->base_port) >= gj->n_ports) {
		gen_fail(g, "stream %u: a NACK_MCAST to gateway %u from sender %u", ms->id,
			 ms->from.id, p->sender);
		return 0;
	}
	if (!gen_link_ok(g, ms->from.id, ms->from.seal, key))
		return 0;
	for (uint32_t k = p->chunk; k - p->chunk < p->count; k++) {
		unsigned int c = ms->first + o * gj->mc->chunks + k;

		g->st.mc_asked++;
		if (k >= gj->mc->chunks || !g->ch[c].open || g->ch[c].round != p->round ||
		    g->ch[c].t_first == 0 || g->ch[c].pending != 0)
			continue;
		gen_enqueue(g, c, W, E_RETX);
		g->st.mc_repaired++;
	}
	return 0;
}

int
gen_mcast_rx(struct gen_lcore *g, const uint8_t *h, const struct wire_pkt *p,
	     const struct wire_flow *fl, uint32_t len, int key, uint32_t wire_len, uint64_t now)
{
	const struct gen_job *gj = g->gj;
	const struct gen_mcast *mc = gj->mc;
	unsigned int s = 0, c;
	int o = origin_of(mc, p, &s), w;

	if (o < 0)
		return -1;
	if (p->type == WIRE_TYPE_NACK_MCAST)
		return nack_mcast(g, &mc->s[s], (unsigned int)o, p, fl, key);
	w = gen_find_worker(gj, fl->dst_ip, fl->dst_port);
	if (p->type != WIRE_TYPE_MCAST || p->chunk >= mc->chunks || w < 0)
		return -1;
	c = mc->s[s].first + (unsigned int)o * mc->chunks + p->chunk;

	struct gen_chunk *ch = &g->ch[c];
	const struct gen_worker *wk = &gj->workers[w];
	uint64_t bit = 1ull << (w % 64);
	const uint8_t *sent = rte_pktmbuf_mtod(ch->frames[gj->n_workers], const uint8_t *) +
			      WIRE_FRAME_PAYLOAD_OFF;

	if (!gen_link_ok(g, wk->id, wk->seal, key))
		return 0;
	if (!is_output(gj, c, (unsigned int)w)) {
		gen_fail(g, "stream %u: a copy of origin %u's chunk %u to %u, not an output of it",
			 p->tree, p->origin, p->chunk, wk->id);
		return 0;
	}
	if (!ch->open || p->round != ch->round) {
		g->st.stale++;
		return 0;
	}
	if (ch->mask[w / 64] & bit) {
		g->st.duplicates++;
		return 0;
	}
	if (p->sender != gj->gw_id || p->contrib != 1 || p->count != gj->elems ||
	    p->dtype != gj->dtype || (p->flags & ~WIRE_F_RETX) != 0 || fl->src_ip != gj->gw_ipv4 ||
	    fl->src_port != ch->dst_port || fl->dst_port != wk->port + p->chunk % wk->n_ports ||
	    len != gj->frame_len) {
		gen_fail(g,
			 "stream %u chunk %u round %u: a copy of origin %u to %u with sender %u, "
			 "contrib %u, count %u, flags 0x%x, %u bytes",
			 p->tree, p->chunk, p->round, p->origin, wk->id, p->sender, p->contrib,
			 p->count, p->flags, len);
		return 0;
	}
	g->st.verified++;
	if (memcmp(h + WIRE_FRAME_PAYLOAD_OFF, sent, gj->payload) != 0) {
		gen_wrong(g, h + WIRE_FRAME_PAYLOAD_OFF, sent, p, "the MCAST copy to", wk->id);
		return 0;
	}
	ch->mask[w / 64] |= bit;
	g->st.mc_copies++;
	g->st.mc_repairs += (p->flags & WIRE_F_RETX) != 0;
	g->st.rx_ok++;
	g->st.rx_ok_bytes += wire_len;
	g->st.rx_payload += gj->payload;
	if (++ch->got == gj->n_workers)
		gen_chunk_done(g, c, now);
	return 0;
}
