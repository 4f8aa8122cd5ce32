/* SPDX-License-Identifier: BSD-3-Clause
 *
 * EAL tests of the dataplane's selective multicast (dataplane/fastpath, docs/PROTOCOL.md
 * sections 7.5 and 7.6): MCAST copies to the next gateways and the local workers, drops
 * by reason, a stream that starts here, NACK_MCAST answered from retained copies or asked
 * upstream within budgets, and pace queues sized to the packet budget.
 *
 * The main thread plays the worker lcore (dp_worker_poll, dp_fixture.c).
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <CUnit/CUnit.h>
#include <jansson.h>
#include <rte_cycles.h>
#include <rte_lcore.h>
#include <rte_mbuf.h>

#include "dp.h"
#include "dp_fixture.h"
#include "slowpath/slowpath.h"
#include "table.h"
#include "testutil.h"
#include "wire.h"

/*
 * Selective multicast at gateway 1 (docs/PROTOCOL.md section 7.5). Stream 5 comes from
 * gateway 2 (the source site's workers 31 and 32) and goes on to gateways 3 and 4 and to
 * the local workers 21 and 22; stream 6 starts here, from the local workers 21 and 22,
 * towards gateway 3 (and the other local worker).
 */
static struct table *
mcast_table(void)
{
	struct table *tb = mk_stream_table(8, 1000, 2);
	struct table_stream *a = &tb->streams[0], *b = &tb->streams[1];
	const struct table_worker w21 = {21, PEER_IP(21), WORKER_PORT};
	const struct table_worker w22 = {22, PEER_IP(22), WORKER_PORT};

	a->id = 5;
	a->source = 2;
	a->has_from = true;
	a->from = (struct table_gw){2, PEER_IP(2), WIRE_PORT_BASE_DEFAULT, WIRE_PORT_COUNT_DEFAULT};
	a->n_to = 2;
	a->to[0] =
		(struct table_gw){3, PEER_IP(3), WIRE_PORT_BASE_DEFAULT, WIRE_PORT_COUNT_DEFAULT};
	a->to[1] =
		(struct table_gw){4, PEER_IP(4), WIRE_PORT_BASE_DEFAULT, WIRE_PORT_COUNT_DEFAULT};
	a->n_deliver = 2;
	a->deliver[0] = w21;
	a->deliver[1] = w22;
	a->n_origins = 2;
	a->origins[0] = 32;
	a->origins[1] = 31;
	a->rate_gbps = 10;
	b->id = 6;
	b->source = 1;
	b->n_to = 1;
	b->to[0] = a->to[0];
	b->n_deliver = 2;
	b->deliver[0] = w21;
	b->deliver[1] = w22;
	b->n_origins = 2;
	b->origins[0] = 21;
	b->origins[1] = 22;
	b->rate_gbps = 10;
	return tb;
}

/* An MCAST of stream `stream` from sender (at 10.0.0.sender), origin's data. */
static struct rte_mbuf *
mcast_f32(uint16_t stream, uint16_t sender, uint16_t origin, uint32_t round, uint32_t chunk,
	  uint16_t count)
{
	float pl[4096];
	struct pkt p = {WIRE_TYPE_MCAST, 0, 8,     1,     stream,          sender,
			origin,          1, round, chunk, WIRE_DTYPE_FP32, count,
			PEER_IP(sender)};

	for (uint16_t i = 0; i < count; i++)
		pl[i] = val(origin, (uint64_t)chunk * 64 + i);
	return mk_pkt(&p, pl);
}

/* Stream n's entry in `links` towards gateway id: frames, bytes and no retransmission;
 * its address, the stream's rate. */
static bool
stream_link_is(json_t *st, int n, int id, json_int_t frames, json_int_t bytes)
{
	json_t *lk = link_entry(st, "stream", n, "down", id);
	char ip[16];

	return lk != NULL && json_integer_value(json_object_get(lk, "frames")) == frames &&
	       json_integer_value(json_object_get(lk, "bytes")) == bytes &&
	       json_integer_value(json_object_get(lk, "retx_bytes")) == 0 &&
	       json_real_value(json_object_get(lk, "rate_gbps")) == 10.0 &&
	       json_object_get(lk, "tree") == NULL &&
	       strcmp(json_string_value(json_object_get(lk, "ipv4")),
		      table_ipv4_format(PEER_IP((uint32_t)id), ip)) == 0;
}

static void
test_mcast(void)
{
	static struct out o[16];
	bool seen[41] = {false};
	int n, bad = 0;

	CU_ASSERT_FATAL(dp_up(rte_get_main_lcore()) == 0);
	CU_ASSERT_FATAL(install(mcast_table(), "install") == 0);
	/* One MCAST of the last chunk (40 elements) from upstream: exactly four copies. */
	inject(mcast_f32(5, 2, 31, 9, 15, 40));
	poll_all();
	n = collect(o, 16);
	CU_ASSERT_FATAL(n == 4);
	for (int k = 0; k < n; k++) {
		const struct out *x = &o[k];
		uint32_t d = x->fl.dst_ip & 0xff;
		bool gw = d == 3 || d == 4;

		bad += x->p.type != WIRE_TYPE_MCAST || x->p.tree != 5 || x->p.sender != 1 ||
		       x->p.origin != 31 || x->p.contrib != 1 || x->p.round != 9 ||
		       x->p.chunk != 15 || x->p.count != 40 || x->p.flags != 0 || x->p.job != 8 ||
		       x->p.epoch != 1;
		bad += x->fl.src_ip != GW_IP || x->fl.dst_mac[5] != d;
		bad += gw ? x->fl.dst_port != wire_udp_port(WIRE_PORT_BASE_DEFAULT,
							    WIRE_PORT_COUNT_DEFAULT, 15) :
			    !(d == 21 || d == 22) || x->fl.dst_port != WORKER_PORT;
		bad += x->len != WIRE_FRAME_PAYLOAD_OFF + 40 * 4;
		for (uint32_t i = 0; i < 40; i++)
			bad += out_f32(x, i) != val(31, 15 * 64 + i);
		if (d <= 40)
			seen[d] = true;
	}
	CU_ASSERT(bad == 0);
	CU_ASSERT(seen[3] && seen[4] && seen[21] && seen[22]);
	CU_ASSERT(ctr(DP_CTR_MCAST_RX) == 1);
	CU_ASSERT(ctr(DP_CTR_MCAST_COPIES) == 4);
	/* Per stream and link to a next-hop gateway, what went out: one frame of stream 5 to
	 * each of 3 and 4, nothing of stream 6 yet; copies to local workers are no link's. */
	const json_int_t fb40 = WIRE_FRAME_PAYLOAD_OFF + 40 * 4;
	const json_int_t fb64 = WIRE_FRAME_PAYLOAD_OFF + 64 * 4;
	json_t *st = dp_stats_json(&dp);

	CU_ASSERT(stream_link_is(st, 5, 3, 1, fb40) && stream_link_is(st, 5, 4, 1, fb40));
	CU_ASSERT(stream_link_is(st, 6, 3, 0, 0));
	CU_ASSERT(json_array_size(json_object_get(json_array_get(json_object_get(st, "jobs"), 0),
						  "links")) == 3);
	CU_ASSERT(link_entry(st, "tree", 0, "down", 3) == NULL);
	json_decref(st);

	/* Drops, by reason, none answered. */
	inject(mcast_f32(5, 3, 31, 9, 0, 64));  /* not the upstream gateway */
	inject(mcast_f32(5, 2, 33, 9, 0, 64));  /* not an origin of the stream */
	inject(mcast_f32(5, 31, 31, 9, 0, 64)); /* the origin itself, off the source */
	poll_all();
	CU_ASSERT(drops(WIRE_REASON_BAD_SENDER) == 3);
	inject(mcast_f32(7, 2, 31, 9, 0, 64)); /* unknown stream */
	inject(mcast_f32(0, 2, 31, 9, 0, 64)); /* unknown stream (below the ids) */
	poll_all();
	CU_ASSERT(drops(WIRE_REASON_UNKNOWN_TREE) == 2);
	inject(mcast_f32(5, 2, 31, 9, 16, 64)); /* past the last chunk */
	poll_all();
	CU_ASSERT(drops(WIRE_REASON_BAD_CHUNK) == 1);
	inject(mcast_f32(5, 2, 31, 9, 15, 64)); /* the last chunk has 40 elements */
	inject(mcast_f32(5, 2, 31, 9, 3, 40));  /* the others 64 */
	poll_all();
	CU_ASSERT(drops(WIRE_REASON_JOB_MISMATCH) == 2);
	{
		struct pkt p = {WIRE_TYPE_MCAST, 0,  8,         1, 5, 2, 31, 1, 9, 0,
				WIRE_DTYPE_FP16, 64, PEER_IP(2)};

		inject(mk_pkt(&p, NULL)); /* wrong dtype */
		p.epoch = 2;
		inject(mk_pkt(&p, NULL)); /* epoch ahead */
		p.job = 99;
		inject(mk_pkt(&p, NULL)); /* unknown job */
	}
	poll_all();
	CU_ASSERT(drops(WIRE_REASON_JOB_MISMATCH) == 3);
	CU_ASSERT(drops(WIRE_REASON_EPOCH_AHEAD) == 1);
	CU_ASSERT(drops(WIRE_REASON_UNKNOWN_JOB) == 1);
	CU_ASSERT(collect(o, 16) == 0);
	CU_ASSERT(ctr(DP_CTR_MCAST_RX) == 1 && ctr(DP_CTR_MCAST_COPIES) == 4);

	/* At the source: worker 21's own update goes to gateway 3 and to worker 22 only. */
	inject(mcast_f32(6, 21, 21, 4, 2, 64));
	poll_all();
	n = collect(o, 16);
	CU_ASSERT_FATAL(n == 2);
	bad = 0;
	for (int k = 0; k < n; k++) {
		uint32_t d = o[k].fl.dst_ip & 0xff;

		bad += o[k].p.sender != 1 || o[k].p.origin != 21 || o[k].p.tree != 6 ||
		       !(d == 3 || d == 22) || out_f32(&o[k], 5) != val(21, 2 * 64 + 5);
	}
	CU_ASSERT(bad == 0 && (o[0].fl.dst_ip & 0xff) != (o[1].fl.dst_ip & 0xff));
	CU_ASSERT(ctr(DP_CTR_MCAST_COPIES) == 6);
	st = dp_stats_json(&dp);
	CU_ASSERT(stream_link_is(st, 6, 3, 1, fb64) && stream_link_is(st, 5, 3, 1, fb40));
	json_decref(st);
	/* ... but not from a worker that is no origin, nor on behalf of another worker, nor
	 * from the upstream of a stream that starts here. */
	inject(mcast_f32(6, 23, 23, 4, 2, 64));
	inject(mcast_f32(6, 21, 22, 4, 2, 64));
	inject(mcast_f32(6, 2, 21, 4, 2, 64));
	poll_all();
	CU_ASSERT(collect(o, 16) == 0);
	CU_ASSERT(drops(WIRE_REASON_BAD_SENDER) == 6);
	/* The stats name the counters. */
	{
		json_t *rep = call("{\"version\": 1, \"id\": 1, \"op\": \"stats\"}");
		char *txt = json_dumps(rep, JSON_COMPACT);

		CU_ASSERT(txt != NULL && strstr(txt, "\"mcast_copies\":6") != NULL &&
			  strstr(txt, "\"mcast_rx\":2") != NULL);
		if (txt != NULL && strstr(txt, "\"mcast_copies\":6") == NULL)
			fprintf(stderr, "%s\n", txt);
		free(txt);
		json_decref(rep);
	}
	dp_down();
}

/* A NACK_MCAST of stream `stream` from sender (at 10.0.0.sender) for origin's chunks
 * [chunk, chunk + count) of round. */
static struct rte_mbuf *
nack_mcast(uint16_t stream, uint16_t sender, uint16_t origin, uint32_t round, uint32_t chunk,
	   uint16_t count)
{
	struct pkt p = {WIRE_TYPE_NACK_MCAST,
			0,
			8,
			1,
			stream,
			sender,
			origin,
			0,
			round,
			chunk,
			WIRE_DTYPE_NONE,
			count,
			PEER_IP(sender)};

	return mk_pkt(&p, NULL);
}

/* mcast_f32() sent again in answer (RETX). */
static struct rte_mbuf *
mcast_repair(uint16_t stream, uint16_t sender, uint16_t origin, uint32_t round, uint32_t chunk)
{
	float pl[64];
	struct pkt p = {WIRE_TYPE_MCAST, WIRE_F_RETX, 8,     1,     stream,          sender,
			origin,          1,           round, chunk, WIRE_DTYPE_FP32, 64,
			PEER_IP(sender)};

	for (uint16_t i = 0; i < 64; i++)
		pl[i] = val(origin, (uint64_t)chunk * 64 + i);
	return mk_pkt(&p, pl);
}

/* One MCAST repair in o: RETX, from this gateway, origin's chunk of round of stream 5,
 * to d at the table's address and port (a gateway's port of the chunk, a worker's). */
static bool
is_mcast_repair(const struct out *o, uint32_t d, uint16_t origin, uint32_t round, uint32_t chunk)
{
	bool ok = o->p.type == WIRE_TYPE_MCAST && o->p.flags == WIRE_F_RETX && o->p.tree == 5 &&
		  o->p.sender == 1 && o->p.origin == origin && o->p.round == round &&
		  o->p.chunk == chunk && o->p.count == 64 && o->fl.dst_ip == PEER_IP(d) &&
		  o->fl.dst_port == (d < 10 ? wire_udp_port(WIRE_PORT_BASE_DEFAULT,
							    WIRE_PORT_COUNT_DEFAULT, chunk) :
					      WORKER_PORT);

	for (uint32_t i = 0; ok && i < 64; i++)
		ok = out_f32(o, i) == val(origin, chunk * 64 + i);
	return ok;
}

/*
 * MCAST loss recovery at gateway 1 (docs/PROTOCOL.md sections 7.5 and 7.6), with the
 * table of test_mcast(): a NACK_MCAST is answered from the copies retained, to the table's
 * address of the requester; a chunk not retained is asked of the stream's `from` gateway
 * and its repair goes to who asked only; bad requests are dropped by reason; answers are
 * bounded by the requester's budget.
 */
static void
test_mcast_recovery(void)
{
	static struct out o[64];
	int n;

	CU_ASSERT_FATAL(dp_up(rte_get_main_lcore()) == 0);
	CU_ASSERT_FATAL(install(mcast_table(), "install") == 0);
	/* Retained copies: two rounds of 16 chunks of each of the 2 origins of each of the 2
	 * streams, one packet each, counted in what the job may hold. */
	{
		json_t *st = dp_stats_json(&dp);
		json_t *jb = json_array_get(json_object_get(st, "jobs"), 0);

		CU_ASSERT(json_integer_value(json_object_get(jb, "mcast_keep_per_lcore")) == 128);
		CU_ASSERT(json_integer_value(json_object_get(jb, "mcast_pace_queue")) ==
			  DP_MCAST_PACE_Q);
		CU_ASSERT(json_integer_value(json_object_get(jb, "mbufs_held_max")) >= 128);
		json_decref(st);
	}
	/* Chunks 0-3 of origin 31 arrive from upstream: four copies each. */
	for (uint32_t c = 0; c < 4; c++)
		inject(mcast_f32(5, 2, 31, 9, c, 64));
	poll_all();
	CU_ASSERT(collect(o, 64) == 16);

	/* Worker 21 lost chunk 2: the retained copy, to its table address alone. */
	inject(nack_mcast(5, 21, 31, 9, 2, 1));
	poll_all();
	n = collect(o, 64);
	CU_ASSERT_FATAL(n == 1);
	CU_ASSERT(is_mcast_repair(&o[0], 21, 31, 9, 2));
	CU_ASSERT(ctr(DP_CTR_MCAST_NACKS) == 1 && ctr(DP_CTR_MCAST_REPAIRS) == 1);
	/* Gateway 3 (a `to` of the stream) lost chunk 1: to its port of chunk 1, paced. */
	inject(nack_mcast(5, 3, 31, 9, 1, 1));
	poll_all();
	n = collect(o, 64);
	CU_ASSERT_FATAL(n == 1);
	CU_ASSERT(is_mcast_repair(&o[0], 3, 31, 9, 1));
	CU_ASSERT(ctr(DP_CTR_MCAST_REPAIRS) == 2);

	/* Bad requests: dropped by reason, none answered, nothing asked upstream. */
	inject(nack_mcast(5, 23, 31, 9, 2, 1)); /* no receiver of the stream */
	inject(nack_mcast(5, 2, 31, 9, 2, 1));  /* the upstream gateway */
	inject(nack_mcast(5, 21, 33, 9, 2, 1)); /* not an origin of the stream */
	inject(nack_mcast(6, 21, 21, 4, 2, 1)); /* its own update */
	spoof.on = true;                        /* 21's id from 22's address */
	spoof.ip = PEER_IP(22);
	spoof.sport = WORKER_PORT;
	inject(nack_mcast(5, 21, 31, 9, 2, 1));
	spoof.on = false;
	poll_all();
	CU_ASSERT(drops(WIRE_REASON_BAD_SENDER) == 5);
	inject(nack_mcast(7, 21, 31, 9, 2, 1)); /* unknown stream */
	poll_all();
	CU_ASSERT(drops(WIRE_REASON_UNKNOWN_TREE) == 1);
	inject(nack_mcast(5, 21, 31, 9, 15, 2)); /* runs past the last chunk */
	inject(nack_mcast(5, 21, 31, 9, 16, 1)); /* past the last chunk */
	poll_all();
	CU_ASSERT(drops(WIRE_REASON_BAD_CHUNK) == 2);
	CU_ASSERT(collect(o, 64) == 0);
	CU_ASSERT(ctr(DP_CTR_MCAST_NACKS) == 2 && ctr(DP_CTR_MCAST_ASKED) == 0);

	/* Chunk 5 was lost upstream of this gateway: asked of gateway 2 (count 1) ... */
	inject(nack_mcast(5, 21, 31, 9, 5, 1));
	poll_all();
	n = collect(o, 64);
	CU_ASSERT_FATAL(n == 1);
	CU_ASSERT(o[0].p.type == WIRE_TYPE_NACK_MCAST && o[0].p.tree == 5 && o[0].p.sender == 1 &&
		  o[0].p.origin == 31 && o[0].p.round == 9 && o[0].p.chunk == 5 &&
		  o[0].p.count == 1 && o[0].p.flags == 0 && o[0].fl.dst_ip == PEER_IP(2) &&
		  o[0].fl.dst_port ==
			  wire_udp_port(WIRE_PORT_BASE_DEFAULT, WIRE_PORT_COUNT_DEFAULT, 5));
	CU_ASSERT(ctr(DP_CTR_MCAST_ASKED) == 1);
	/* ... the repair from a gateway other than `from` is no answer ... */
	inject(mcast_repair(5, 3, 31, 9, 5));
	poll_all();
	CU_ASSERT(drops(WIRE_REASON_BAD_SENDER) == 6 && collect(o, 64) == 0);
	/* ... the one from gateway 2 goes to worker 21 only, which asked. */
	inject(mcast_repair(5, 2, 31, 9, 5));
	poll_all();
	n = collect(o, 64);
	CU_ASSERT_FATAL(n == 1);
	CU_ASSERT(is_mcast_repair(&o[0], 21, 31, 9, 5));
	CU_ASSERT(ctr(DP_CTR_MCAST_REPAIRS) == 3);
	/* Retained: worker 22's request for it is answered here, not asked again. */
	inject(nack_mcast(5, 22, 31, 9, 5, 1));
	poll_all();
	n = collect(o, 64);
	CU_ASSERT_FATAL(n == 1);
	CU_ASSERT(is_mcast_repair(&o[0], 22, 31, 9, 5));
	CU_ASSERT(ctr(DP_CTR_MCAST_ASKED) == 1);
	/* A repair nobody waits for is late (and retained). */
	inject(mcast_repair(5, 2, 32, 9, 6));
	poll_all();
	CU_ASSERT(collect(o, 64) == 0 && drops(WIRE_REASON_LATE) == 1);
	inject(nack_mcast(5, 4, 32, 9, 6, 1));
	poll_all();
	n = collect(o, 64);
	CU_ASSERT(n == 1 && is_mcast_repair(&o[0], 4, 32, 9, 6));
	/* Asked for, then the original arrives after all: it goes to every receiver, and
	 * the repair after it is late. */
	inject(nack_mcast(5, 21, 31, 9, 7, 1));
	poll_all();
	CU_ASSERT(collect(o, 64) == 1 && ctr(DP_CTR_MCAST_ASKED) == 2);
	inject(mcast_f32(5, 2, 31, 9, 7, 64));
	poll_all();
	CU_ASSERT(collect(o, 64) == 4);
	inject(mcast_repair(5, 2, 31, 9, 7));
	poll_all();
	CU_ASSERT(collect(o, 64) == 0 && drops(WIRE_REASON_LATE) == 2);
	/* A copy already retained is a duplicate: not forwarded again. */
	inject(mcast_f32(5, 2, 31, 9, 0, 64));
	poll_all();
	CU_ASSERT(collect(o, 64) == 0 && drops(WIRE_REASON_DUPLICATE) == 1);
	/* The next round's chunk 0 is retained beside this one's: a receiver still in round 9
	 * gets its chunk 0 while the origin sends round 10. */
	inject(mcast_f32(5, 2, 31, 10, 0, 64));
	poll_all();
	CU_ASSERT(collect(o, 64) == 4);
	inject(nack_mcast(5, 22, 31, 9, 0, 1));
	poll_all();
	n = collect(o, 64);
	CU_ASSERT(n == 1 && is_mcast_repair(&o[0], 22, 31, 9, 0));

	/* At the source nothing is upstream: a chunk the gateway never had is not held, and
	 * a worker sends no repairs. */
	inject(nack_mcast(6, 22, 21, 4, 3, 1));
	inject(mcast_repair(6, 21, 21, 4, 3));
	poll_all();
	CU_ASSERT(collect(o, 64) == 0 && ctr(DP_CTR_MCAST_NOT_HELD) == 1 &&
		  drops(WIRE_REASON_BAD_SENDER) == 7);

	/* The budget: 2000 requests of worker 22 for a retained chunk get at most a full
	 * budget (a frame per copy stream 5 retains: 2 rounds of 16 chunks of 2 origins) and
	 * what time added while they were handled (1,000,000 bytes a second, measured here);
	 * the rest are counted. */
	{
		const uint32_t frame = WIRE_FRAME_PAYLOAD_OFF + 64 * 4, asks = 2000, cap = 64;
		uint64_t before = ctr(DP_CTR_MCAST_REPAIRS), t0 = rte_rdtsc();
		uint64_t sent = 0, withheld;

		for (uint32_t i = 0; i < asks; i++) {
			inject(nack_mcast(5, 22, 31, 9, 0, 1));
			if (i % 256 == 255) {
				poll_all();
				sent += (uint64_t)collect(o, 64);
			}
		}
		poll_all();
		sent += (uint64_t)collect(o, 64);
		double us = (double)(rte_rdtsc() - t0) * 1e6 / (double)rte_get_tsc_hz();
		withheld = ctr(DP_CTR_MCAST_BUDGET);

		CU_ASSERT(sent == ctr(DP_CTR_MCAST_REPAIRS) - before);
		CU_ASSERT(sent + withheld == asks);
		CU_ASSERT((double)sent <= cap + us / frame + 2);
		if (us < 500.0 * frame) /* under 0.17 s: most were refused */
			CU_ASSERT(withheld >= asks / 2);
	}
	dp_down();
}

static double
ms_since(uint64_t t0)
{
	return (double)(rte_rdtsc() - t0) * 1e3 / (double)rte_get_tsc_hz();
}

/*
 * Requests pending upstream, with the table of test_mcast(): a slot per copy the rings
 * hold (two rounds of 16 chunks of 2 origins), so the chunks of two rounds are pending at
 * once, and a chunk two rounds on takes the slot of its namesake. That does not stop the
 * new loss from being asked: the older request is evicted, its repair is late (retained)
 * and answers the next request for it. And a chunk asked of `from` is not asked again
 * while its repair may be on its way: for the measured repair time and four deviations.
 */
static void
test_mcast_ask_full(void)
{
	static struct out o[64];
	uint32_t asked = 0;
	int n;

	CU_ASSERT_FATAL(dp_up(rte_get_main_lcore()) == 0);
	CU_ASSERT_FATAL(install(mcast_table(), "install") == 0);
	/* Copies forwarded to worker 21 earn what its repairs may cost. */
	for (uint32_t c = 0; c < 4; c++)
		inject(mcast_f32(5, 2, 31, 9, c, 64));
	poll_all();
	CU_ASSERT(collect(o, 64) == 16);
	/* Every chunk of origin 31's rounds 100 and 101, and chunk 3 of 32's round 100. */
	for (uint32_t i = 0; i < 32; i++) {
		inject(nack_mcast(5, 21, 31, 100 + i / 16, i % 16, 1));
		if (i % 16 == 15) {
			poll_all();
			asked += (uint32_t)collect(o, 64);
		}
	}
	inject(nack_mcast(5, 21, 32, 100, 3, 1));
	poll_all();
	asked += (uint32_t)collect(o, 64);
	CHECK(asked == 33 && ctr(DP_CTR_MCAST_ASK_FULL) == 0,
	      "%u NACK_MCASTs upstream, %" PRIu64 " evicted", asked, ctr(DP_CTR_MCAST_ASK_FULL));
	/* Chunk 3 of 31's round 102 takes round 100's slot: asked, the other evicted. */
	inject(nack_mcast(5, 21, 31, 102, 3, 1));
	poll_all();
	n = collect(o, 64);
	CHECK(n == 1 && o[0].p.type == WIRE_TYPE_NACK_MCAST && o[0].p.round == 102 &&
		      ctr(DP_CTR_MCAST_ASKED) == 34 && ctr(DP_CTR_MCAST_ASK_FULL) == 1,
	      "%d sent, %" PRIu64 " asked, %" PRIu64 " evicted", n, ctr(DP_CTR_MCAST_ASKED),
	      ctr(DP_CTR_MCAST_ASK_FULL));
	/* The evicted one's repair is late and retained ... */
	inject(mcast_repair(5, 2, 31, 100, 3));
	poll_all();
	CU_ASSERT(collect(o, 64) == 0 && drops(WIRE_REASON_LATE) == 1);
	/* ... and answers worker 21's next request for it at once. */
	inject(nack_mcast(5, 21, 31, 100, 3, 1));
	poll_all();
	n = collect(o, 64);
	CU_ASSERT(n == 1 && is_mcast_repair(&o[0], 21, 31, 100, 3));
	/* The others are pending: their repairs go to worker 21. */
	inject(mcast_repair(5, 2, 31, 102, 3));
	inject(mcast_repair(5, 2, 31, 101, 14));
	poll_all();
	n = collect(o, 64);
	CHECK(n == 2 && is_mcast_repair(&o[0], 21, 31, 102, 3) &&
		      is_mcast_repair(&o[1], 21, 31, 101, 14),
	      "%d sent (round %u chunk %u), %" PRIu64 " withheld", n, n > 0 ? o[0].p.round : 0,
	      n > 0 ? o[0].p.chunk : 0, ctr(DP_CTR_MCAST_BUDGET));
	CU_ASSERT(drops(WIRE_REASON_LATE) == 1);
	dp_down();

	/* A repair 30 ms after the request: the first sample of the repair time (rt); a
	 * chunk asked for then is asked again at a later request only once 3 rt (rt and
	 * four deviations of rt / 2) have passed, not after the 20 ms floor. */
	CU_ASSERT_FATAL(dp_up(rte_get_main_lcore()) == 0);
	CU_ASSERT_FATAL(install(mcast_table(), "install") == 0);
	uint64_t t0 = rte_rdtsc();

	inject(nack_mcast(5, 21, 31, 300, 4, 1));
	poll_all();
	double rt_lo, rt_hi;
	uint64_t t1 = rte_rdtsc();

	CU_ASSERT_FATAL(collect(o, 64) == 1);
	rte_delay_us_sleep(30000);
	rt_lo = ms_since(t1);
	inject(mcast_repair(5, 2, 31, 300, 4));
	poll_all();
	rt_hi = ms_since(t0);
	CU_ASSERT(collect(o, 64) == 1);
	t0 = rte_rdtsc();
	inject(nack_mcast(5, 21, 31, 301, 4, 1));
	poll_all();
	CU_ASSERT(collect(o, 64) == 1 && ctr(DP_CTR_MCAST_ASKED) == 2);
	rte_delay_us_sleep(35000);
	inject(nack_mcast(5, 21, 31, 301, 4, 1));
	poll_all();
	t1 = rte_rdtsc();
	n = collect(o, 64);
	/* Between the two requests, at most what passed from t0 to now; the floor passed. */
	if (ms_since(t0) < 3 * rt_lo)
		CHECK(n == 0, "asked again %.1f ms later, repairs took %.1f ms", ms_since(t0),
		      rt_lo);
	/* Once 3 rt have passed for sure, the next request asks again. */
	while (ms_since(t1) < 3 * rt_hi + 1)
		rte_delay_us_sleep(5000);
	inject(nack_mcast(5, 21, 31, 301, 4, 1));
	poll_all();
	CU_ASSERT(collect(o, 64) == 1 && ctr(DP_CTR_MCAST_ASKED) == 3 + (uint64_t)n);
	dp_down();
}

/* A stream pacer's queue is halved while the job would not fit the packet budget (a
 * dataplane with few mbufs for many streams and links), to DP_MCAST_PACE_Q_MIN at least,
 * rather than the table being refused. */
static void
test_mcast_pace_queue_fits(void)
{
	CU_ASSERT_FATAL(dp_up(rte_get_main_lcore()) == 0);
	dp.mbufs_budget = dp.mbufs_committed + 1000;
	CU_ASSERT_FATAL(install(mcast_table(), "install") == 0);
	{
		json_t *st = dp_stats_json(&dp);
		json_t *jb = json_array_get(json_object_get(st, "jobs"), 0);
		json_int_t q = json_integer_value(json_object_get(jb, "mcast_pace_queue"));

		CHECK(q >= DP_MCAST_PACE_Q_MIN && q < DP_MCAST_PACE_Q && (q & (q - 1)) == 0,
		      "a pace queue of %lld", (long long)q);
		CU_ASSERT(json_integer_value(json_object_get(jb, "mbufs_held_max")) <= 1000);
		json_decref(st);
	}
	dp_down();
}

int
main(int argc, char **argv)
{
	CU_pSuite s = dp_fixture_init(argc, argv, "test_dp_mcast");

	if (s == NULL)
		return 1;
	CU_add_test(s, "selective multicast: copies, drops, source", test_mcast);
	CU_add_test(s, "selective multicast: loss recovery, answers and their budget",
		    test_mcast_recovery);
	CU_add_test(s, "selective multicast: a full table of requests upstream, re-asking",
		    test_mcast_ask_full);
	CU_add_test(s, "selective multicast: pace queues halved to fit the packet budget",
		    test_mcast_pace_queue_fits);
	return dp_fixture_run();
}
