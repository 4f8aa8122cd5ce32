/* SPDX-License-Identifier: BSD-3-Clause
 *
 * EAL tests of the dataplane's slots (dataplane/fastpath, docs/PROTOCOL.md section 7.3):
 * chunks summed at a root and at an interior gateway of one or two trees, many in flight
 * at once, shuffled and duplicated, a slot that moved on to a later chunk, and partial
 * reduce with contributor sets and a child gateway's contrib.
 *
 * The main thread plays the worker lcore (dp_worker_poll, dp_fixture.c).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <CUnit/CUnit.h>
#include <rte_cycles.h>
#include <rte_lcore.h>
#include <rte_mbuf.h>
#include <rte_udp.h>

#include "dp.h"
#include "dp_fixture.h"
#include "fuzzutil.h"
#include "slowpath/slowpath.h"
#include "table.h"
#include "testutil.h"
#include "wire.h"

/* Root with three local workers: every chunk summed exactly, results to each worker. */
static void
test_root_three_workers(void)
{
	const uint64_t el = 1000;
	const uint32_t ce = 64, nch = 16;
	struct tdesc td = {0, 0, 0, {0}, 0, nch, 16, {0}};
	static struct out o[64];

	CU_ASSERT_FATAL(dp_up(rte_get_main_lcore()) == 0);
	CU_ASSERT_FATAL(install(mk_table(7, 1, 1, TABLE_DTYPE_FP32, el, ce, 3, W3, 1, &td),
				"install") == 0);
	for (int w = 0; w < 3; w++)
		for (uint32_t c = 0; c < nch; c++)
			inject(contrib_f32(7, 1, 0, W3[w], 5, c, el, ce));
	poll_all();
	int n = collect(o, 64);

	CU_ASSERT(n == 3 * (int)nch);
	int bad = 0;

	for (int k = 0; k < n && k < 64; k++) {
		const struct out *x = &o[k];
		uint32_t c = x->p.chunk;

		bad += x->p.type != WIRE_TYPE_RESULT || x->p.contrib != 3 || x->p.origin != 1 ||
		       x->p.sender != 1 || x->p.round != 5 || x->fl.dst_port != WORKER_PORT ||
		       x->p.count != chunk_len(el, ce, c);
		bad += x->fl.dst_ip != PEER_IP(11) && x->fl.dst_ip != PEER_IP(12) &&
		       x->fl.dst_ip != PEER_IP(13);
		bad += x->fl.dst_mac[5] != (uint8_t)x->fl.dst_ip;
		for (uint32_t i = 0; i < x->p.count; i++) {
			uint64_t e = (uint64_t)c * ce + i;

			bad += out_f32(x, i) != val(11, e) + val(12, e) + val(13, e);
		}
	}
	CU_ASSERT(bad == 0);
	CU_ASSERT(ctr(DP_CTR_CHUNKS_COMPLETED) == nch);
	CU_ASSERT(ctr(DP_CTR_RESULTS_SENT) == 3 * nch);
	/* A retransmitted NACK_RESULT from worker 12 for chunks 3..4 gets the results again. */
	struct pkt nk = {WIRE_TYPE_NACK_RESULT, 0, 7,          1, 0, 12, 12, 0, 5, 3,
			 WIRE_DTYPE_NONE,       2, PEER_IP(12)};

	inject(mk_pkt(&nk, NULL));
	poll_all();
	n = collect(o, 64);
	CU_ASSERT(n == 2);
	CU_ASSERT(o[0].p.type == WIRE_TYPE_RESULT && (o[0].p.flags & WIRE_F_RETX) &&
		  o[0].fl.dst_ip == PEER_IP(12) && o[0].p.chunk == 3);
	/* A range that runs past the tree's chunks is dropped whole, as bad_chunk. */
	nk.chunk = nch - 1;
	inject(mk_pkt(&nk, NULL));
	poll_all();
	CU_ASSERT(collect(o, 64) == 0);
	CU_ASSERT(drops(WIRE_REASON_BAD_CHUNK) == 1);
	nk.chunk = 3;
	/* The same round again: duplicates, no new results. */
	inject(contrib_f32(7, 1, 0, 11, 5, 0, el, ce));
	poll_all();
	CU_ASSERT(collect(o, 64) == 0);
	CU_ASSERT(drops(WIRE_REASON_DUPLICATE) == 1);
	/* Worker 11 moves on to round 6 and reopens chunk 3's slot; worker 12, a round
	 * behind, still gets round 5's RESULT for it (NACK_RESULT, and a RETX CONTRIB). */
	inject(contrib_f32(7, 1, 0, 11, 6, 3, el, ce));
	nk.chunk = 3;
	nk.count = 1;
	inject(mk_pkt(&nk, NULL));
	struct rte_mbuf *rx = contrib_f32(7, 1, 0, 13, 5, 3, el, ce);

	rte_pktmbuf_mtod_offset(rx, struct wire_hdr *, WIRE_FRAME_HDR_OFF)->flags = WIRE_F_RETX;
	rte_pktmbuf_mtod_offset(rx, struct rte_udp_hdr *, 34)->dgram_cksum = 0;
	inject(rx);
	poll_all();
	n = collect(o, 64);
	if (n != 2)
		for (int r = 1; r < WIRE_REASON_COUNT_MAX; r++)
			if (drops((enum wire_reason)r))
				fprintf(stderr, "drop %s %lu\n",
					wire_reason_str((enum wire_reason)r),
					(unsigned long)drops((enum wire_reason)r));
	if (n != 2)
		for (int k = 0; k < n; k++)
			fprintf(stderr, "out %d: type %d round %u chunk %u to %x\n", k, o[k].p.type,
				o[k].p.round, o[k].p.chunk, o[k].fl.dst_ip);
	CU_ASSERT_FATAL(n == 2);
	for (int k = 0; k < n; k++) {
		CU_ASSERT(o[k].p.type == WIRE_TYPE_RESULT && o[k].p.round == 5 &&
			  o[k].p.chunk == 3 && (o[k].p.flags & WIRE_F_RETX));
		CU_ASSERT(out_f32(&o[k], 1) ==
			  val(11, 3 * ce + 1) + val(12, 3 * ce + 1) + val(13, 3 * ce + 1));
	}
	CU_ASSERT(o[0].fl.dst_ip != o[1].fl.dst_ip);
	/* A late CONTRIB without RETX (docs/PROTOCOL.md 7.3): round 5's RESULT is retained
	 * under the packet's epoch, so worker 13 is in it and was sent it: a duplicate that
	 * nothing answers. Round 4's is not retained (anywhere): the gateway asks a local
	 * worker that moved on past it (10.1, rules 2 and 6), RETX or not. */
	uint64_t late = drops(WIRE_REASON_LATE), asked = ctr(DP_CTR_RECOVER_ASKED);

	inject(contrib_f32(7, 1, 0, 13, 5, 3, el, ce));
	poll_all();
	CU_ASSERT(collect(o, 64) == 0 && drops(WIRE_REASON_LATE) == late + 1);
	inject(contrib_f32(7, 1, 0, 13, 4, 3, el, ce));
	poll_all();
	n = collect(o, 64);
	CU_ASSERT(drops(WIRE_REASON_LATE) == late + 2 && ctr(DP_CTR_RECOVER_ASKED) == asked + 1);
	CHECK(n == 1 && o[0].p.type == WIRE_TYPE_NACK_RESULT && o[0].p.round == 4 &&
		      o[0].p.chunk == 3 && o[0].p.count == 1 && o[0].fl.dst_ip != PEER_IP(13),
	      "%d frames, the first type %d round %u to %x", n, n > 0 ? (int)o[0].p.type : -1,
	      n > 0 ? o[0].p.round : 0, n > 0 ? o[0].fl.dst_ip : 0);
	dp_down();
}

/* An fp32 CONTRIB of one chunk with a one-block contributor set: the sum of the values of
 * workers ids[0 .. n - 1], from sender (a worker, or a gateway's partial sum). */
static struct rte_mbuf *
contrib_set(uint32_t job, uint32_t epoch, uint16_t sender, const uint16_t *ids, int n,
	    uint32_t round, uint32_t chunk, uint64_t elements, uint32_t ce, uint8_t flags)
{
	float pl[4096];
	uint8_t set[WIRE_CSET_BLOCK] = {0};
	uint16_t len = chunk_len(elements, ce, chunk);
	struct pkt p = {
		WIRE_TYPE_CONTRIB, flags, job,   epoch,           0,   sender,         sender,
		(uint16_t)n,       round, chunk, WIRE_DTYPE_FP32, len, PEER_IP(sender)};
	struct rte_mbuf *m;

	for (uint16_t i = 0; i < len; i++) {
		pl[i] = 0;
		for (int k = 0; k < n; k++)
			pl[i] += val(ids[k], (uint64_t)chunk * ce + i);
	}
	for (int k = 0; k < n; k++)
		CU_ASSERT_FATAL(wire_cset_add(set, 1, ids[k]) == 0);
	m = mk_pkt_set(&p, 1, set, pl);
	if (flags & WIRE_F_RETX) /* no UDP checksum: the header changed after it */
		rte_pktmbuf_mtod_offset(m, struct rte_udp_hdr *, 34)->dgram_cksum = 0;
	return m;
}

/* The RESULT o holds exactly workers ids[0 .. n - 1]: count, set and every element. */
static bool
result_is(const struct out *o, const uint16_t *ids, int n, uint32_t ce)
{
	const uint8_t *set = o->frame + WIRE_FRAME_PAYLOAD_OFF;
	bool ok = o->p.type == WIRE_TYPE_RESULT && o->p.cset_blocks == 1 && o->p.contrib == n &&
		  wire_cset_count(set, 1) == (unsigned int)n;

	for (int k = 0; k < n; k++)
		ok = ok && wire_cset_test(set, 1, ids[k]);
	for (uint32_t i = 0; ok && i < o->p.count; i++) {
		float want = 0, got;
		uint64_t e = (uint64_t)o->p.chunk * ce + i;

		for (int k = 0; k < n; k++)
			want += val(ids[k], e);
		memcpy(&got, set + WIRE_CSET_BLOCK + 4 * i, 4);
		ok = got == want;
	}
	return ok;
}

/* Partial reduce at a root: local workers 11, 12, 13 and child gateway 3 (workers 31 and
 * 32 behind it), complete at 4 of the 5 workers. The RESULT carries who is in it; the
 * straggler is late and gets that RESULT; a child's set naming a worker that is not below
 * it and a worker claiming another's bit are refused; the next round is unaffected. Then
 * a leaf that completes at 1 of 2. */
static void
test_partial_reduce(void)
{
	const uint64_t el = 128;
	const uint32_t ce = 64;
	struct tdesc td = {0, 0, 1, {3}, 0, 2, 16, {0}};
	struct tbelow bl = {2, {31, 32}, {0, 0}}; /* both below child 3 */
	static const uint16_t in4[] = {11, 12, 31, 32}, w31[] = {31, 32},
			      all[] = {11, 12, 13, 31, 32};
	static struct out o[16];
	struct table *tb;
	uint64_t late;
	int n;

	CU_ASSERT_FATAL(dp_up(rte_get_main_lcore()) == 0);
	tb = mk_table_sets(14, 1, 1, TABLE_DTYPE_FP32, el, ce, 3, W3, 1, &td, &bl);
	tb->trees[0].subtree_workers = 5;
	tb->trees[0].threshold = 4;
	CU_ASSERT_FATAL(install(tb, "install") == 0);
	/* Round 5, chunk 0: 11, 12 and the child's {31, 32} make 4: complete. */
	inject(contrib_set(14, 1, 11, &in4[0], 1, 5, 0, el, ce, 0));
	inject(contrib_set(14, 1, 12, &in4[1], 1, 5, 0, el, ce, 0));
	poll_all();
	CU_ASSERT(collect(o, 16) == 0);
	inject(contrib_set(14, 1, 3, w31, 2, 5, 0, el, ce, 0));
	poll_all();
	n = collect(o, 16);
	CU_ASSERT(n == 4); /* the child and the three workers, the straggler too */
	for (int k = 0; k < n && k < 16; k++)
		CU_ASSERT(result_is(&o[k], in4, 4, ce));
	/* The straggler 13: late, answered with that RESULT, which it is not in. */
	late = drops(WIRE_REASON_LATE);
	inject(contrib_set(14, 1, 13, &all[2], 1, 5, 0, el, ce, 0));
	poll_all();
	n = collect(o, 16);
	CU_ASSERT(drops(WIRE_REASON_LATE) == late + 1);
	CU_ASSERT(n == 1 && o[0].fl.dst_ip == PEER_IP(13) && result_is(&o[0], in4, 4, ce) &&
		  (o[0].p.flags & WIRE_F_RETX));
	/* Chunk 1: the child's set names worker 11, already in and not below the child:
	 * refused, slot unchanged. */
	inject(contrib_set(14, 1, 11, &in4[0], 1, 5, 1, el, ce, 0));
	{
		static const uint16_t bad[] = {11, 31};

		inject(contrib_set(14, 1, 3, bad, 2, 5, 1, el, ce, 0));
	}
	/* Worker 12 with 13's bit: a worker contributes itself only. */
	{
		struct rte_mbuf *m = contrib_set(14, 1, 12, &all[2], 1, 5, 1, el, ce, 0);

		inject(m);
	}
	/* No set (cset_blocks 0) where the job carries them. */
	inject(contrib_f32(14, 1, 0, 12, 5, 1, el, ce));
	poll_all();
	CU_ASSERT(collect(o, 16) == 0);
	CU_ASSERT(drops(WIRE_REASON_CSET_OVERLAP) == 0);
	CU_ASSERT(drops(WIRE_REASON_BAD_SENDER) == 2);
	CU_ASSERT(drops(WIRE_REASON_JOB_MISMATCH) == 1);
	/* The rest of chunk 1 as it should be: 12, then all of the child: 11, 12, 31, 32. */
	inject(contrib_set(14, 1, 12, &in4[1], 1, 5, 1, el, ce, 0));
	inject(contrib_set(14, 1, 3, w31, 2, 5, 1, el, ce, 0));
	poll_all();
	n = collect(o, 16);
	CU_ASSERT(n == 4);
	for (int k = 0; k < n && k < 16; k++)
		CU_ASSERT(result_is(&o[k], in4, 4, ce));
	/* Round 6: 13 first this time, then 11 and 12: 3 of 4; the child's two make all five. */
	inject(contrib_set(14, 1, 13, &all[2], 1, 6, 0, el, ce, 0));
	inject(contrib_set(14, 1, 11, &all[0], 1, 6, 0, el, ce, 0));
	inject(contrib_set(14, 1, 12, &all[1], 1, 6, 0, el, ce, 0));
	poll_all();
	CU_ASSERT(collect(o, 16) == 0);
	inject(contrib_set(14, 1, 3, w31, 2, 6, 0, el, ce, 0));
	poll_all();
	n = collect(o, 16);
	CU_ASSERT(n == 4);
	for (int k = 0; k < n && k < 16; k++)
		CU_ASSERT(result_is(&o[k], all, 5, ce) && o[k].p.round == 6);
	/* Round 5's straggler again, a round behind now: late, nothing summed. */
	late = drops(WIRE_REASON_LATE);
	inject(contrib_set(14, 1, 13, &all[2], 1, 5, 0, el, ce, 0));
	poll_all();
	collect(o, 16);
	CU_ASSERT(drops(WIRE_REASON_LATE) == late + 1);
	CU_ASSERT(ctr(DP_CTR_CHUNKS_COMPLETED) == 3);

	/* A leaf (gateway 2, parent 4) of workers 21, 22 that sends up at 1 of 2. */
	{
		static const uint16_t w2[] = {21, 22};
		struct tdesc tl = {0, 4, 0, {0}, 0, 2, 16, {0}};
		uint8_t set[WIRE_CSET_BLOCK] = {0};
		float pl[64];

		tb = mk_table(14, 2, 1, TABLE_DTYPE_FP32, el, ce, 2, w2, 1, &tl);
		tb->cset_blocks = 1;
		tb->trees[0].subtree_workers = 2;
		tb->trees[0].threshold = 1;
		CU_ASSERT_FATAL(install(tb, "install") == 0);
		struct rte_mbuf *m = contrib_set(14, 2, 21, &w2[0], 1, 7, 0, el, ce, 0);

		inject(m);
		poll_all();
		n = collect(o, 16);
		CU_ASSERT_FATAL(n == 1);
		CU_ASSERT(o[0].p.type == WIRE_TYPE_CONTRIB && o[0].p.contrib == 1 &&
			  o[0].fl.dst_ip == PEER_IP(4) && o[0].p.origin == 1);
		/* 22 is late at the complete slot; the parent's RESULT ({21, 40}) reaches both. */
		m = contrib_set(14, 2, 22, &w2[1], 1, 7, 0, el, ce, 0);
		late = drops(WIRE_REASON_LATE);
		inject(m);
		poll_all();
		CU_ASSERT(collect(o, 16) == 0 && drops(WIRE_REASON_LATE) == late + 1);
		static const uint16_t r2[] = {21, 40};
		struct pkt rp = {
			WIRE_TYPE_RESULT, 0,         14, 2, 0, 4, 4, 2, 7, 0, WIRE_DTYPE_FP32,
			(uint16_t)ce,     PEER_IP(4)};

		for (uint32_t i = 0; i < ce; i++)
			pl[i] = val(21, i) + val(40, i);
		wire_cset_add(set, 1, 21);
		wire_cset_add(set, 1, 40);
		inject(mk_pkt_set(&rp, 1, set, pl));
		poll_all();
		n = collect(o, 16);
		CU_ASSERT(n == 2);
		for (int k = 0; k < n && k < 16; k++)
			CU_ASSERT(result_is(&o[k], r2, 2, ce));
		/* 22 from round 5, two rounds behind: this leaf (no threshold of its own)
		 * answers with round 7's RESULT, where its group is. */
		m = contrib_set(14, 2, 22, &w2[1], 1, 5, 0, el, ce, 0);
		inject(m);
		poll_all();
		n = collect(o, 16);
		CU_ASSERT(n == 1 && o[0].p.round == 7 && o[0].fl.dst_ip == PEER_IP(22) &&
			  result_is(&o[0], r2, 2, ce));
	}
	dp_down();
}

/* The quorum counts of job `job` from the stats the control socket gives (docs/METRICS.md):
 * chunks_all, chunks_all_in_grace, chunks_threshold, chunks_expired, contribs_in_grace,
 * contribs_late, in that order, of its epoch `epoch`; the grace window in ms into
 * *grace_ms. */
static void
quorum_of(uint32_t job, uint32_t epoch, uint64_t q[6], double *grace_ms)
{
	static const char *const keys[] = {"chunks_all",        "chunks_all_in_grace",
					   "chunks_threshold",  "chunks_expired",
					   "contribs_in_grace", "contribs_late"};
	json_t *req = json_pack("{s:i,s:i,s:s}", "version", 1, "id", 9, "op", "stats");
	json_t *rep = dp_ctl_handle(&dp, req), *jb;
	size_t i;

	memset(q, 0xff, sizeof(uint64_t) * 6);
	*grace_ms = -1;
	json_array_foreach (json_object_get(rep, "jobs"), i, jb) {
		json_t *qo = json_object_get(jb, "quorum");

		if (json_integer_value(json_object_get(jb, "job")) != job ||
		    json_integer_value(json_object_get(jb, "epoch")) != epoch || qo == NULL)
			continue;
		for (int k = 0; k < 6; k++)
			q[k] = (uint64_t)json_integer_value(json_object_get(qo, keys[k]));
		*grace_ms = json_number_value(json_object_get(qo, "grace_ms"));
	}
	json_decref(req);
	json_decref(rep);
}

/* Poll until the dataplane sends something, up to 20 s on a busy machine (a grace window
 * running out); the frames collected, 0 if none came. */
static int
await_frames(struct out *o, int max)
{
	int n = 0;

	for (int waits = 0; n == 0 && waits < 20000; waits++) {
		poll_all();
		n = collect(o, max);
		if (n == 0)
			rte_delay_us_sleep(1000);
	}
	return n;
}

/* Install epoch `epoch` of job `job`: a root of W3 with contributor sets, complete at 2 of
 * the 3, with a grace window of grace_ms (adaptive: its bound); returns install()'s errno. */
static int
install_grace(uint32_t job, uint32_t epoch, uint64_t el, uint32_t ce, const struct tdesc *td,
	      uint32_t grace_ms, bool adaptive)
{
	struct table *tb = mk_table(job, epoch, 1, TABLE_DTYPE_FP32, el, ce, 3, W3, 1, td);

	tb->cset_blocks = 1;
	tb->trees[0].threshold = 2;
	tb->trees[0].grace_ms = grace_ms;
	tb->trees[0].grace_adaptive = adaptive;
	return install(tb, "install");
}

/* Chunks first .. first + n - 1 of round `round` of job `job` (epoch 1, installed by
 * install_grace()), each with the three contributions one after the other: the third comes
 * right after the threshold, a sample of an adaptive window. How many chunks did not send
 * their RESULT to the three at once. */
static int
grace_samples(uint32_t job, uint32_t round, uint32_t first, uint32_t n, uint64_t el, uint32_t ce)
{
	static struct out o[64];
	int bad = 0;

	for (uint32_t c = first; c < first + n; c++) {
		for (int w = 0; w < 3; w++)
			inject(contrib_set(job, 1, W3[w], &W3[w], 1, round, c, el, ce, 0));
		poll_all();
		bad += collect(o, 64) != 3;
	}
	return bad;
}

/* A root of workers 11, 12 and 13 that completes at 2 of 3 with a grace window (job 19).
 * A window of 60 s: all three in complete the chunk at once; two wait, and the third within
 * the window makes the chunk with all three. A window of 1 ms (epoch 2): two complete
 * the chunk with the two of them once it ran out, and the third is late, answered with
 * that RESULT. Events are counted; the only wait is for the short window to run out, as
 * long as it takes. */
static void
test_grace_window(void)
{
	const uint64_t el = 256;
	const uint32_t ce = 64;
	struct tdesc td = {0, 0, 0, {0}, 0, 4, 16, {0}};
	static const uint16_t two[] = {11, 12};
	static struct out o[16];
	uint64_t q[6], late;
	double grace_ms;
	int n, bad = 0;

	CU_ASSERT_FATAL(dp_up(rte_get_main_lcore()) == 0);
	CU_ASSERT_FATAL(install_grace(19, 1, el, ce, &td, TABLE_GRACE_MS_MAX, false) == 0);
	quorum_of(19, 1, q, &grace_ms);
	CU_ASSERT(q[0] == 0 && q[3] == 0 && grace_ms == TABLE_GRACE_MS_MAX);
	/* Chunk 0: all three, in one burst: complete at once, with all three. */
	for (int w = 0; w < 3; w++)
		inject(contrib_set(19, 1, W3[w], &W3[w], 1, 1, 0, el, ce, 0));
	poll_all();
	n = collect(o, 16);
	CU_ASSERT(n == 3);
	for (int k = 0; k < n && k < 16; k++)
		bad += !result_is(&o[k], W3, 3, ce);
	CU_ASSERT(bad == 0);
	/* Chunk 1: 11 and 12 reach the threshold; the window holds the chunk. */
	inject(contrib_set(19, 1, 11, &two[0], 1, 1, 1, el, ce, 0));
	inject(contrib_set(19, 1, 12, &two[1], 1, 1, 1, el, ce, 0));
	poll_all();
	CU_ASSERT(collect(o, 16) == 0);
	/* 13 within the window: the chunk completes with all three. */
	inject(contrib_set(19, 1, 13, &W3[2], 1, 1, 1, el, ce, 0));
	poll_all();
	n = collect(o, 16);
	CU_ASSERT(n == 3);
	for (int k = 0; k < n && k < 16; k++)
		bad += !result_is(&o[k], W3, 3, ce) || o[k].p.chunk != 1;
	CU_ASSERT(bad == 0);
	quorum_of(19, 1, q, &grace_ms);
	CU_ASSERT(q[0] == 2 && q[1] == 2 && q[2] == 0 && q[3] == 0 && q[4] == 2 && q[5] == 0);
	CU_ASSERT(ctr(DP_CTR_CHUNKS_COMPLETED) == 2);

	/* Epoch 2, a window of 1 ms: 11 and 12 complete chunk 2 once it ran out. */
	CU_ASSERT_FATAL(install_grace(19, 2, el, ce, &td, 1, false) == 0);
	inject(contrib_set(19, 2, 11, &two[0], 1, 1, 2, el, ce, 0));
	inject(contrib_set(19, 2, 12, &two[1], 1, 1, 2, el, ce, 0));
	n = await_frames(o, 16);
	CU_ASSERT(n == 3);
	for (int k = 0; k < n && k < 16; k++)
		bad += !result_is(&o[k], two, 2, ce) || o[k].p.chunk != 2;
	CU_ASSERT(bad == 0);
	/* 13 after it: late, answered with the RESULT it is not in. */
	late = drops(WIRE_REASON_LATE);
	inject(contrib_set(19, 2, 13, &W3[2], 1, 1, 2, el, ce, 0));
	poll_all();
	n = collect(o, 16);
	CU_ASSERT(drops(WIRE_REASON_LATE) == late + 1);
	CU_ASSERT(n == 1 && o[0].fl.dst_ip == PEER_IP(13) && result_is(&o[0], two, 2, ce));
	quorum_of(19, 2, q, &grace_ms);
	CU_ASSERT(q[0] == 0 && q[3] == 1 && q[4] == 0 && q[5] == 1 && grace_ms == 1);
	dp_down();
}

/* An adaptive window (epoch 1 of job 20, at most 60 s): until it has samples it is the
 * bound; chunks whose third worker comes at once, after the threshold, bring it down to
 * its floor of DP_GRACE_FLOOR_US at least, well below the bound, and a chunk still
 * completes with all three or, with two, once the window ran out. */
static void
test_grace_adaptive(void)
{
	const uint64_t el = 64 * 32;
	const uint32_t ce = 64;
	struct tdesc td = {0, 0, 0, {0}, 0, 32, 64, {0}};
	static const uint16_t two[] = {11, 12};
	static struct out o[64];
	uint64_t q[6];
	double grace_ms;
	int n;

	CU_ASSERT_FATAL(dp_up(rte_get_main_lcore()) == 0);
	CU_ASSERT_FATAL(install_grace(20, 1, el, ce, &td, TABLE_GRACE_MS_MAX, true) == 0);
	/* 16 chunks whose third contribution comes right after the threshold: samples. */
	CU_ASSERT(grace_samples(20, 1, 0, 16, el, ce) == 0);
	quorum_of(20, 1, q, &grace_ms);
	CU_ASSERT(q[0] == 16 && q[1] == 16 && q[4] == 16);
	CHECK(grace_ms >= DP_GRACE_FLOOR_US / 1000.0 && grace_ms < TABLE_GRACE_MS_MAX,
	      "adaptive window %.3f ms", grace_ms);
	/* Two: complete once the (now short) window ran out, not after the bound. */
	inject(contrib_set(20, 1, 11, &two[0], 1, 1, 16, el, ce, 0));
	inject(contrib_set(20, 1, 12, &two[1], 1, 1, 16, el, ce, 0));
	n = await_frames(o, 64);
	CU_ASSERT(n == 3 && result_is(&o[0], two, 2, ce));
	quorum_of(20, 1, q, &grace_ms);
	CU_ASSERT(q[3] == 1);
	dp_down();
}

/* Poll for ms milliseconds (a worker that is that late), collecting what the dataplane
 * sends into o (room for max); how many frames. */
static int
poll_for_ms(int ms, struct out *o, int max)
{
	uint64_t end = rte_get_timer_cycles() + rte_get_timer_hz() * (uint64_t)ms / 1000;
	int n = 0;

	while (rte_get_timer_cycles() < end) {
		poll_all();
		n += collect(o + n, max - n);
		rte_delay_us_sleep(500);
	}
	return n;
}

/* An adaptive window that cut a worker grows back to it (job 23, at most 60 s): 16 chunks
 * whose third worker comes at once bring the window down to about its floor; then in 16
 * chunks the third comes LATE_MS after the threshold. While the window is shorter, the
 * two complete the chunk when it runs out and the third is late, answered with that
 * RESULT, and its lateness is a sample all the same: the window grows past LATE_MS, and
 * the later chunks' thirds are in it. Epoch 2, at most 5 ms: a third LATE_MS late is
 * beyond the bound and no sample, so the window stays short. Counted, not timed: the
 * dataplane is polled all the while, so a window runs out when it ends. */
#define LATE_MS 30
static void
test_grace_grows_back(void)
{
	const uint64_t el = 64 * 64;
	const uint32_t ce = 64;
	struct tdesc td = {0, 0, 0, {0}, 0, 64, 64, {0}};
	static const uint16_t two[] = {11, 12};
	static struct out o[64];
	uint64_t q[6], late;
	double floor_ms, grace_ms;
	int n, bad = 0, three = 0;

	CU_ASSERT_FATAL(dp_up(rte_get_main_lcore()) == 0);
	CU_ASSERT_FATAL(install_grace(23, 1, el, ce, &td, TABLE_GRACE_MS_MAX, true) == 0);
	CU_ASSERT(grace_samples(23, 1, 0, 16, el, ce) == 0);
	quorum_of(23, 1, q, &floor_ms);
	CHECK(floor_ms < LATE_MS, "adaptive window %.3f ms after 16 chunks of all three", floor_ms);
	late = drops(WIRE_REASON_LATE);
	for (uint32_t c = 16; c < 32; c++) {
		inject(contrib_set(23, 1, 11, &two[0], 1, 1, c, el, ce, 0));
		inject(contrib_set(23, 1, 12, &two[1], 1, 1, c, el, ce, 0));
		n = poll_for_ms(LATE_MS, o, 64);
		inject(contrib_set(23, 1, 13, &W3[2], 1, 1, c, el, ce, 0));
		poll_all();
		n += collect(o + n, 64 - n);
		bad += n < 3;
		three += n == 3 && result_is(&o[0], W3, 3, ce);
	}
	CU_ASSERT(bad == 0);
	quorum_of(23, 1, q, &grace_ms);
	CHECK(drops(WIRE_REASON_LATE) > late && grace_ms > LATE_MS && three > 0,
	      "late %" PRIu64 ", window %.3f ms after late thirds (%.3f before), %d chunks of "
	      "three",
	      drops(WIRE_REASON_LATE) - late, grace_ms, floor_ms, three);

	/* Epoch 2, a bound of 5 ms: thirds LATE_MS late are no samples. */
	CU_ASSERT_FATAL(install_grace(23, 2, el, ce, &td, 5, true) == 0);
	for (uint32_t c = 0; c < 16; c++) {
		for (int w = 0; w < 3; w++)
			inject(contrib_set(23, 2, W3[w], &W3[w], 1, 1, c, el, ce, 0));
		poll_all();
		bad += collect(o, 64) != 3;
	}
	late = drops(WIRE_REASON_LATE);
	for (uint32_t c = 16; c < 32; c++) {
		inject(contrib_set(23, 2, 11, &two[0], 1, 1, c, el, ce, 0));
		inject(contrib_set(23, 2, 12, &two[1], 1, 1, c, el, ce, 0));
		n = poll_for_ms(LATE_MS, o, 64);
		inject(contrib_set(23, 2, 13, &W3[2], 1, 1, c, el, ce, 0));
		poll_all();
		n += collect(o + n, 64 - n);
		bad += n != 4;
	}
	CU_ASSERT(bad == 0);
	quorum_of(23, 2, q, &grace_ms);
	CHECK(grace_ms < 5 && drops(WIRE_REASON_LATE) == late + 16,
	      "window %.3f ms with thirds beyond the 5 ms bound, %" PRIu64 " late", grace_ms,
	      drops(WIRE_REASON_LATE) - late);
	dp_down();
}

/* A slot whose round is given up while its grace window runs (job 22, adaptive, bounded by
 * 60 s): round 1 of chunk 0 reaches its threshold before any estimate, so its window, and
 * the entry queued for it, end 60 s later. Round 5's chunks 1 to 15, all three in right
 * after the threshold, bring the estimate down to the floor; round 5's chunk 0 then gives
 * round 1 up (every contributor is past it) and reaches its threshold: its window ends at
 * its own (short) end, not at the entry the given-up round left queued. */
static void
test_grace_after_give_up(void)
{
	/* 32 chunks of 64 elements over a pool of 16 slots. */
	struct tdesc td = {0, 0, 0, {0}, 0, 32, 16, {0}};
	static struct out o[64];
	double grace_ms;
	uint64_t q[6];
	int n;

	CU_ASSERT_FATAL(dp_up(rte_get_main_lcore()) == 0);
	CU_ASSERT_FATAL(install_grace(22, 1, 2048, 64, &td, TABLE_GRACE_MS_MAX, true) == 0);
	for (int w = 0; w < 2; w++) /* 11 and 12: round 1 at its threshold */
		inject(contrib_set(22, 1, W3[w], &W3[w], 1, 1, 0, 2048, 64, 0));
	poll_all();
	CU_ASSERT(collect(o, 64) == 0);
	CU_ASSERT(grace_samples(22, 5, 1, 15, 2048, 64) == 0);
	quorum_of(22, 1, q, &grace_ms);
	CHECK(grace_ms < 1000, "adaptive window %.3f ms", grace_ms);
	for (int w = 0; w < 2; w++)
		inject(contrib_set(22, 1, W3[w], &W3[w], 1, 5, 0, 2048, 64, 0));
	n = await_frames(o, 64);
	CHECK(n == 3 && result_is(&o[0], W3, 2, 64) && o[0].p.round == 5,
	      "%d frames after the window, given up %" PRIu64, n, ctr(DP_CTR_ROUNDS_GIVEN_UP));
	quorum_of(22, 1, q, &grace_ms);
	CU_ASSERT(q[3] == 1 && ctr(DP_CTR_ROUNDS_GIVEN_UP) == 1);
	dp_down();
}

/* contrib_set() with the header's contrib changed to `contrib`, the set left as it is (the
 * UDP checksum is dropped: the header changed after it). */
static struct rte_mbuf *
contrib_set_count(uint32_t job, uint32_t epoch, uint16_t sender, const uint16_t *ids, int n,
		  uint32_t round, uint32_t chunk, uint64_t elements, uint32_t ce, uint16_t contrib)
{
	struct rte_mbuf *m = contrib_set(job, epoch, sender, ids, n, round, chunk, elements, ce, 0);

	rte_pktmbuf_mtod_offset(m, struct wire_hdr *, WIRE_FRAME_HDR_OFF)->contrib =
		rte_cpu_to_be_16(contrib);
	rte_pktmbuf_mtod_offset(m, struct rte_udp_hdr *, 34)->dgram_cksum = 0;
	return m;
}

/* Contributor sets of child gateways, at a root of workers 11 and 12 and children 3
 * (workers 31, 32 below it) and 4 (worker 41), every contributor needed. A child's set may
 * name only workers below it: child 3 claiming 41, who has not contributed yet, is
 * refused (bad_sender) without touching the slot, and 41's own sum through child 4 still
 * counts. A set whose population is not its contrib is malformed (bad_cset). */
static void
test_partial_reduce_child_sets(void)
{
	const uint64_t el = 128;
	const uint32_t ce = 64;
	struct tdesc td = {0, 0, 2, {3, 4}, 0, 2, 16, {0}};
	struct tbelow bl = {3, {31, 32, 41}, {0, 0, 1}};
	static const uint16_t w[] = {11, 12}, w3[] = {31, 32}, w4[] = {41}, forged[] = {31, 32, 41},
			      all[] = {11, 12, 31, 32, 41};
	static struct out o[16];
	struct table *tb;
	uint64_t contribs;
	int n;

	CU_ASSERT_FATAL(dp_up(rte_get_main_lcore()) == 0);
	tb = mk_table_sets(16, 1, 1, TABLE_DTYPE_FP32, el, ce, 2, w, 1, &td, &bl);
	tb->trees[0].subtree_workers = 5;
	CU_ASSERT_FATAL(install(tb, "install") == 0);
	inject(contrib_set(16, 1, 11, &w[0], 1, 1, 0, el, ce, 0));
	poll_all();
	contribs = ctr(DP_CTR_CONTRIBS);
	CU_ASSERT(contribs == 1);
	/* Child 3 names 41, below child 4: dropped, nothing summed or marked. */
	inject(contrib_set(16, 1, 3, forged, 3, 1, 0, el, ce, 0));
	poll_all();
	CU_ASSERT(collect(o, 16) == 0);
	CU_ASSERT(drops(WIRE_REASON_BAD_SENDER) == 1);
	CU_ASSERT(ctr(DP_CTR_CONTRIBS) == contribs);
	/* Child 4 names 12, a local worker of this gateway: dropped as well. */
	{
		static const uint16_t bad4[] = {12, 41};

		inject(contrib_set(16, 1, 4, bad4, 2, 1, 0, el, ce, 0));
	}
	poll_all();
	CU_ASSERT(collect(o, 16) == 0);
	CU_ASSERT(drops(WIRE_REASON_BAD_SENDER) == 2);
	/* Child 3's own workers with contrib 3 (or 1): the count is not the set's. Dropped
	 * as malformed before the tables are looked at. */
	inject(contrib_set_count(16, 1, 3, w3, 2, 1, 0, el, ce, 3));
	inject(contrib_set_count(16, 1, 3, w3, 2, 1, 0, el, ce, 1));
	poll_all();
	CU_ASSERT(collect(o, 16) == 0);
	CU_ASSERT(drops(WIRE_REASON_CSET) == 2);
	CU_ASSERT(ctr(DP_CTR_BAD_HEADER) == 2);
	CU_ASSERT(ctr(DP_CTR_CONTRIBS) == contribs);
	/* The real contributions: 12, child 3's {31, 32}, then child 4's {41} completes the
	 * chunk with every worker exactly once. */
	inject(contrib_set(16, 1, 12, &w[1], 1, 1, 0, el, ce, 0));
	inject(contrib_set(16, 1, 3, w3, 2, 1, 0, el, ce, 0));
	poll_all();
	CU_ASSERT(collect(o, 16) == 0);
	inject(contrib_set(16, 1, 4, w4, 1, 1, 0, el, ce, 0));
	poll_all();
	n = collect(o, 16);
	CU_ASSERT(n == 4); /* children 3 and 4, workers 11 and 12 */
	for (int k = 0; k < n && k < 16; k++)
		CU_ASSERT(result_is(&o[k], all, 5, ce));
	CU_ASSERT(ctr(DP_CTR_CONTRIBS) == 4);
	CU_ASSERT(ctr(DP_CTR_CHUNKS_COMPLETED) == 1);
	CU_ASSERT(drops(WIRE_REASON_CSET_OVERLAP) == 0);
	CU_ASSERT(drops(WIRE_REASON_DUPLICATE) == 0);
	dp_down();
}

/* An fp32 CONTRIB of one chunk without a contributor set, from sender: the sum of the
 * values of workers ids[0 .. n - 1], claiming `contrib` worker contributions. */
static struct rte_mbuf *
contrib_sum(uint32_t job, uint32_t epoch, uint16_t sender, uint16_t contrib, const uint16_t *ids,
	    int n, uint32_t round, uint32_t chunk, uint64_t elements, uint32_t ce)
{
	float pl[4096];
	uint16_t len = chunk_len(elements, ce, chunk);
	struct pkt p = {
		WIRE_TYPE_CONTRIB, 0,     job,   epoch,           0,   sender,         sender,
		contrib,           round, chunk, WIRE_DTYPE_FP32, len, PEER_IP(sender)};

	for (uint16_t i = 0; i < len; i++) {
		pl[i] = 0;
		for (int k = 0; k < n; k++)
			pl[i] += val(ids[k], (uint64_t)chunk * ce + i);
	}
	return mk_pkt(&p, pl);
}

/* The RESULT o (no contributor set) of chunk `chunk` sums exactly workers ids[0 .. n - 1]
 * and says so in its contrib. */
static bool
sum_is(const struct out *o, uint32_t chunk, const uint16_t *ids, int n, uint32_t ce)
{
	bool ok = o->p.type == WIRE_TYPE_RESULT && o->p.cset_blocks == 0 && o->p.contrib == n &&
		  o->p.chunk == chunk && o->p.count == ce;

	for (uint32_t i = 0; ok && i < o->p.count; i++) {
		float want = 0;

		for (int k = 0; k < n; k++)
			want += val(ids[k], (uint64_t)chunk * ce + i);
		ok = out_f32(o, i) == want;
	}
	return ok;
}

/*
 * Without contributor sets a child gateway's partial sum holds every worker below it, so
 * its contrib is their number (the table's subtree_workers of the child). Root 1 with
 * workers 11, 12 and child gateways 3 (workers 31, 32, 33 below it) and 4 (41). A child
 * claiming another count, more, fewer, or the other child's, is refused (bad_sender)
 * before the slot is touched, open or not; the right counts complete the chunk with all
 * six workers in the RESULT's contrib. With sets, a child's count is its set's population
 * and may be below the workers under it (a partial sum sent at a threshold).
 */
static void
test_child_contrib_count(void)
{
	const uint64_t el = 128;
	const uint32_t ce = 64;
	struct tdesc td = {0, 0, 2, {3, 4}, 0, 2, 16, {3, 1}};
	static const uint16_t w[] = {11, 12}, w3[] = {31, 32, 33}, w4[] = {41},
			      all[] = {11, 12, 31, 32, 33, 41};
	static struct out o[16];
	struct table *tb;
	int n, bad = 0;

	CU_ASSERT_FATAL(dp_up(rte_get_main_lcore()) == 0);
	tb = mk_table(17, 1, 1, TABLE_DTYPE_FP32, el, ce, 2, w, 1, &td);
	CU_ASSERT_FATAL(tb->trees[0].subtree_workers == 6);
	CU_ASSERT_FATAL(install(tb, "install") == 0);
	/* Chunk 1, no slot open for it: child 3 claiming 1000 workers opens none. */
	inject(contrib_sum(17, 1, 3, 1000, w3, 3, 1, 1, el, ce));
	poll_all();
	CU_ASSERT(collect(o, 16) == 0);
	CU_ASSERT(drops(WIRE_REASON_BAD_SENDER) == 1);
	CU_ASSERT(ctr(DP_CTR_CONTRIBS) == 0);
	/* Chunk 0, open with both workers: too many, too few, and child 3's count from 4. */
	inject(contrib_f32(17, 1, 0, 11, 1, 0, el, ce));
	inject(contrib_f32(17, 1, 0, 12, 1, 0, el, ce));
	inject(contrib_sum(17, 1, 3, 1000, w3, 3, 1, 0, el, ce));
	inject(contrib_sum(17, 1, 3, 2, w3, 3, 1, 0, el, ce));
	inject(contrib_sum(17, 1, 4, 3, w4, 1, 1, 0, el, ce));
	poll_all();
	CU_ASSERT(collect(o, 16) == 0);
	CU_ASSERT(drops(WIRE_REASON_BAD_SENDER) == 4);
	CU_ASSERT(ctr(DP_CTR_CONTRIBS) == 2);
	/* The right counts complete it: nothing of the refused ones was summed or marked (a
	 * mark would make child 3's real sum a duplicate). */
	inject(contrib_sum(17, 1, 4, 1, w4, 1, 1, 0, el, ce));
	poll_all();
	CU_ASSERT(collect(o, 16) == 0);
	inject(contrib_sum(17, 1, 3, 3, w3, 3, 1, 0, el, ce));
	poll_all();
	n = collect(o, 16);
	CU_ASSERT(n == 4); /* children 3 and 4, workers 11 and 12 */
	for (int k = 0; k < n && k < 16; k++)
		bad += !sum_is(&o[k], 0, all, 6, ce);
	CU_ASSERT(bad == 0);
	CU_ASSERT(drops(WIRE_REASON_DUPLICATE) == 0);
	/* Chunk 1 as well: the refused claim left no slot behind. */
	inject(contrib_sum(17, 1, 3, 3, w3, 3, 1, 1, el, ce));
	inject(contrib_f32(17, 1, 0, 11, 1, 1, el, ce));
	inject(contrib_f32(17, 1, 0, 12, 1, 1, el, ce));
	inject(contrib_sum(17, 1, 4, 1, w4, 1, 1, 1, el, ce));
	poll_all();
	n = collect(o, 16);
	CU_ASSERT(n == 4);
	bad = 0;
	for (int k = 0; k < n && k < 16; k++)
		bad += !sum_is(&o[k], 1, all, 6, ce);
	CU_ASSERT(bad == 0);
	CU_ASSERT(ctr(DP_CTR_CONTRIBS) == 8);
	CU_ASSERT(ctr(DP_CTR_CHUNKS_COMPLETED) == 2);
	CU_ASSERT(drops(WIRE_REASON_BAD_SENDER) == 4);
	CU_ASSERT(drops(WIRE_REASON_DUPLICATE) == 0 && drops(WIRE_REASON_LATE) == 0);
	dp_down();

	/* With sets (job 18), child 3 (31, 32 below it) sends 31 alone: taken, and the
	 * threshold of 3 completes the chunk. */
	{
		struct tdesc ts = {0, 0, 1, {3}, 0, 2, 16, {0}};
		struct tbelow bl = {2, {31, 32}, {0, 0}};
		static const uint16_t in3[] = {11, 12, 31};

		CU_ASSERT_FATAL(dp_up(rte_get_main_lcore()) == 0);
		tb = mk_table_sets(18, 1, 1, TABLE_DTYPE_FP32, el, ce, 2, w, 1, &ts, &bl);
		CU_ASSERT_FATAL(tb->trees[0].child_workers[0] == 2 &&
				tb->trees[0].subtree_workers == 4);
		tb->trees[0].threshold = 3;
		CU_ASSERT_FATAL(install(tb, "install") == 0);
		inject(contrib_set(18, 1, 11, &in3[0], 1, 1, 0, el, ce, 0));
		inject(contrib_set(18, 1, 12, &in3[1], 1, 1, 0, el, ce, 0));
		inject(contrib_set(18, 1, 3, &in3[2], 1, 1, 0, el, ce, 0));
		poll_all();
		n = collect(o, 16);
		CU_ASSERT(n == 3);
		for (int k = 0; k < n && k < 16; k++)
			CU_ASSERT(result_is(&o[k], in3, 3, ce));
		CU_ASSERT(drops(WIRE_REASON_BAD_SENDER) == 0);
		dp_down();
	}
}

/* Interior gateway 2: workers 21, 22 and child gateway 3 (contrib 4) up to parent 4; the
 * parent's RESULT down to the child and both workers. Also a leaf tree and a bad chunk. */
static void
test_interior_and_two_trees(void)
{
	const uint64_t el = 256;
	const uint32_t ce = 32;
	static const uint16_t w2[] = {21, 22};
	struct tdesc td[2] = {
		{0, 4, 1, {3}, 0, 4, 16, {4}}, /* interior: parent 4, child 3 (4 workers
						      * below), chunks 0-3 */
		{1, 4, 0, {0}, 4, 4, 16, {0}}, /* leaf: parent 4, chunks 4-7 */
	};
	static struct out o[64];

	CU_ASSERT_FATAL(dp_up(rte_get_main_lcore()) == 0);
	CU_ASSERT_FATAL(
		install(mk_table(8, 1, 2, TABLE_DTYPE_FP32, el, ce, 2, w2, 2, td), "install") == 0);
	for (uint32_t c = 0; c < 8; c++) {
		inject(contrib_f32(8, 1, c < 4 ? 0 : 1, 21, 0, c, el, ce));
		inject(contrib_f32(8, 1, c < 4 ? 0 : 1, 22, 0, c, el, ce));
	}
	for (uint32_t c = 0; c < 4; c++) {
		float pl[32];
		struct pkt p = {WIRE_TYPE_CONTRIB, 0,  8,         1, 0, 3, 3, 4, 0, c,
				WIRE_DTYPE_FP32,   32, PEER_IP(3)};

		for (int i = 0; i < 32; i++)
			pl[i] = 100;
		inject(mk_pkt(&p, pl));
	}
	poll_all();
	int n = collect(o, 64), bad = 0;

	CU_ASSERT(n == 8);
	for (int k = 0; k < n && k < 64; k++) {
		const struct out *x = &o[k];
		uint32_t c = x->p.chunk;

		bad += x->p.type != WIRE_TYPE_CONTRIB || x->fl.dst_ip != PEER_IP(4) ||
		       x->p.sender != 2 || x->p.origin != 2 || x->p.contrib != (c < 4 ? 6 : 2) ||
		       x->p.tree != (c < 4 ? 0 : 1) ||
		       x->fl.dst_port != WIRE_PORT_BASE_DEFAULT + c % WIRE_PORT_COUNT_DEFAULT;
		for (uint32_t i = 0; i < 32; i++) {
			uint64_t e = (uint64_t)c * ce + i;

			bad += out_f32(x, i) != val(21, e) + val(22, e) + (c < 4 ? 100 : 0);
		}
	}
	CU_ASSERT(bad == 0);
	/* The parent's RESULT for chunk 2: to child 3 (gateway port) and workers 21, 22. */
	float res[32];
	struct pkt r = {WIRE_TYPE_RESULT, 0,  8,         1, 0, 4, 4, 9, 0, 2,
			WIRE_DTYPE_FP32,  32, PEER_IP(4)};

	for (int i = 0; i < 32; i++)
		res[i] = (float)(1000 + i);
	inject(mk_pkt(&r, res));
	poll_all();
	n = collect(o, 64);
	CU_ASSERT(n == 3);
	bad = 0;
	for (int k = 0; k < n && k < 64; k++) {
		bad += o[k].p.type != WIRE_TYPE_RESULT || o[k].p.contrib != 9 ||
		       o[k].p.origin != 4 || o[k].p.sender != 2 || o[k].p.chunk != 2;
		bad += o[k].fl.dst_ip == PEER_IP(3) ?
			       o[k].fl.dst_port != WIRE_PORT_BASE_DEFAULT + 2 :
			       o[k].fl.dst_port != WORKER_PORT;
		for (int i = 0; i < 32; i++)
			bad += out_f32(&o[k], (uint32_t)i) != (float)(1000 + i);
	}
	CU_ASSERT(bad == 0);
	/* The same RESULT again: duplicate. From a non-parent: bad_sender. */
	inject(mk_pkt(&r, res));
	r.sender = 3;
	r.src_ip = PEER_IP(3);
	inject(mk_pkt(&r, res));
	/* A chunk of tree 1 sent as tree 0: bad_chunk. */
	inject(contrib_f32(8, 1, 0, 21, 1, 5, el, ce));
	poll_all();
	CU_ASSERT(collect(o, 64) == 0);
	CU_ASSERT(drops(WIRE_REASON_DUPLICATE) == 1);
	CU_ASSERT(drops(WIRE_REASON_BAD_SENDER) == 1);
	CU_ASSERT(drops(WIRE_REASON_BAD_CHUNK) == 1);
	/* Per tree and gateway link, what went out: 4 partial sums up in each tree to 4, one
	 * RESULT down to child 3 in tree 0; the local workers' copies are not a link's. */
	const json_int_t fb = WIRE_FRAME_PAYLOAD_OFF + 32 * 4;

	CU_ASSERT(link_ctr(0, "up", 4, "frames") == 4 && link_ctr(0, "up", 4, "bytes") == 4 * fb);
	CU_ASSERT(link_ctr(1, "up", 4, "frames") == 4 && link_ctr(1, "up", 4, "bytes") == 4 * fb);
	CU_ASSERT(link_ctr(0, "down", 3, "frames") == 1 && link_ctr(0, "down", 3, "bytes") == fb);
	CU_ASSERT(link_ctr(1, "down", 3, "frames") == -1);
	CU_ASSERT(link_ctr(0, "up", 4, "retx_bytes") == 0);
	dp_down();
}

/* Hundreds of chunks in flight, arriving shuffled with duplicates: exact sums. */
static void
test_many_in_flight_shuffled(void)
{
	const uint32_t ce = 16, nch = 512;
	const uint64_t el = (uint64_t)ce * nch - 5;
	struct tdesc td = {0, 0, 0, {0}, 0, nch, 512, {0}};
	const int n_in = 3 * (int)nch, n_dup = 100;
	struct rte_mbuf **in = calloc((size_t)(n_in + n_dup), sizeof(*in));
	static struct out o[2048];
	uint64_t rng = fuzz_env_ulong("GEOREDUCE_FUZZ_SEED", 42);
	int k = 0;

	CU_ASSERT_FATAL(dp_up(rte_get_main_lcore()) == 0);
	CU_ASSERT_FATAL(install(mk_table(9, 4, 1, TABLE_DTYPE_FP32, el, ce, 3, W3, 1, &td),
				"install") == 0);
	for (int w = 0; w < 3; w++)
		for (uint32_t c = 0; c < nch; c++)
			in[k++] = contrib_f32(9, 4, 0, W3[w], 77, c, el, ce);
	/* Fisher-Yates, then duplicates of random packets placed after their original. */
	for (int i = n_in - 1; i > 0; i--) {
		int j = (int)(rng_next(&rng) % (uint64_t)(i + 1));
		struct rte_mbuf *t = in[i];

		in[i] = in[j];
		in[j] = t;
	}
	for (int d = 0; d < n_dup; d++) {
		int j = (int)(rng_next(&rng) % (uint64_t)k);

		in[k] = rte_pktmbuf_copy(in[j], tpool, 0, UINT32_MAX);
		struct rte_mbuf *t = in[k];

		memmove(&in[j + 2], &in[j + 1], sizeof(*in) * (size_t)(k - j - 1));
		in[j + 1] = t;
		k++;
	}
	/* The first third alone: nothing completes yet, the slots hold it all. */
	for (int i = 0; i < k; i++) {
		inject(in[i]);
		if ((i & 255) == 255)
			poll_all();
	}
	poll_all();
	int n = collect(o, 2048), bad = 0;

	CU_ASSERT(n == 3 * (int)nch);
	for (int i = 0; i < n && i < 2048; i++) {
		uint32_t c = o[i].p.chunk;

		bad += o[i].p.contrib != 3;
		for (uint32_t e = 0; e < o[i].p.count; e++) {
			uint64_t x = (uint64_t)c * ce + e;

			bad += out_f32(&o[i], e) != val(11, x) + val(12, x) + val(13, x);
		}
	}
	CU_ASSERT(bad == 0);
	CU_ASSERT(drops(WIRE_REASON_DUPLICATE) == (uint64_t)n_dup);
	CU_ASSERT(ctr(DP_CTR_CHUNKS_COMPLETED) == nch);
	free(in);
	dp_down();
}

/* A slot that moved on to chunk c + slots keeps answering for chunk c from the RESULT it
 * retains, and chunk c never takes the slot back (docs/PROTOCOL.md section 7.3). */
static void
test_slot_moved_on(void)
{
	const uint64_t el = 32 * 16;
	const uint32_t ce = 16;
	struct tdesc td = {0, 0, 0, {0}, 0, 32, 16, {0}};
	static struct out o[16];
	uint64_t late;
	int n;

	CU_ASSERT_FATAL(dp_up(rte_get_main_lcore()) == 0);
	CU_ASSERT_FATAL(install(mk_table(15, 1, 1, TABLE_DTYPE_FP32, el, ce, 3, W3, 1, &td),
				"install") == 0);
	for (uint32_t c = 3; c <= 19; c += 16)
		for (int w = 0; w < 3; w++)
			inject(contrib_f32(15, 1, 0, W3[w], 4, c, el, ce));
	poll_all();
	CU_ASSERT(collect(o, 16) == 6);
	/* Worker 12 lost chunk 3's RESULT: its RETX gets it, the slot still holds 19. */
	late = drops(WIRE_REASON_LATE);
	inject(contrib_f32_retx(15, 12, 4, 3, el, ce));
	poll_all();
	n = collect(o, 16);
	CU_ASSERT_FATAL(n == 1);
	CU_ASSERT(o[0].p.type == WIRE_TYPE_RESULT && o[0].p.chunk == 3 && o[0].p.round == 4 &&
		  o[0].fl.dst_ip == PEER_IP(12) &&
		  out_f32(&o[0], 1) ==
			  val(11, 3 * ce + 1) + val(12, 3 * ce + 1) + val(13, 3 * ce + 1));
	CU_ASSERT(drops(WIRE_REASON_LATE) == late + 1);
	inject(contrib_f32_retx(15, 11, 4, 19, el, ce));
	poll_all();
	n = collect(o, 16);
	CU_ASSERT(n == 1 && o[0].p.type == WIRE_TYPE_RESULT && o[0].p.chunk == 19);
	dp_down();
}

int
main(int argc, char **argv)
{
	CU_pSuite s = dp_fixture_init(argc, argv, "test_dp_slots");

	if (s == NULL)
		return 1;
	CU_add_test(s, "root with three workers", test_root_three_workers);
	CU_add_test(s, "interior gateway and two trees", test_interior_and_two_trees);
	CU_add_test(s, "512 chunks in flight, shuffled, duplicated", test_many_in_flight_shuffled);
	CU_add_test(s, "partial reduce", test_partial_reduce);
	CU_add_test(s, "partial reduce: sets of child gateways", test_partial_reduce_child_sets);
	CU_add_test(s, "partial reduce: a grace window", test_grace_window);
	CU_add_test(s, "partial reduce: an adaptive grace window", test_grace_adaptive);
	CU_add_test(s, "partial reduce: an adaptive window grows back to a worker it cut",
		    test_grace_grows_back);
	CU_add_test(s, "partial reduce: a window after a round given up ends at its own end",
		    test_grace_after_give_up);
	CU_add_test(s, "a child gateway's contrib counts the workers below it",
		    test_child_contrib_count);
	CU_add_test(s, "a slot moved on answers for its previous chunk", test_slot_moved_on);
	return dp_fixture_run();
}
