/* SPDX-License-Identifier: BSD-3-Clause
 *
 * EAL tests of the dataplane's loss recovery (dataplane/fastpath, docs/PROTOCOL.md
 * section 10): retransmitted contributions answered, partial sums resent to the parent on
 * timeout, NACK and ACK, fast retransmit, tail loss and tail probes, selective repeat, and
 * repairs sent ahead of the pacer's queue.
 *
 * The main thread plays the worker lcore (dp_worker_poll, dp_fixture.c); the timers run
 * on the real clock.
 */
#include <inttypes.h>

#include <CUnit/CUnit.h>
#include <rte_cycles.h>
#include <rte_lcore.h>
#include <rte_mbuf.h>
#include <rte_udp.h>

#include "dp.h"
#include "dp_fixture.h"
#include "table.h"
#include "testutil.h"
#include "wire.h"

/* Retransmitted contributions are answered: ACK while the chunk is open (and for a copy
 * it already holds), the retained RESULT once it is done, also to a late straggler. */
static void
test_retx_answers(void)
{
	const uint64_t el = 64;
	const uint32_t ce = 64;
	struct tdesc td = {0, 0, 0, {0}, 0, 1, 16, {0}};
	static struct out o[16];
	struct rte_mbuf *m;

	CU_ASSERT_FATAL(dp_up(rte_get_main_lcore()) == 0);
	CU_ASSERT_FATAL(install(mk_table(13, 1, 1, TABLE_DTYPE_FP32, el, ce, 3, W3, 1, &td),
				"install") == 0);
	/* Worker 11 sends with RETX (tsval 777): held, ACK echoing 777. */
	m = contrib_f32(13, 1, 0, 11, 4, 0, el, ce);
	{
		struct wire_hdr *h =
			rte_pktmbuf_mtod_offset(m, struct wire_hdr *, WIRE_FRAME_HDR_OFF);

		h->flags = WIRE_F_RETX;
		h->tsval = rte_cpu_to_be_32(777);
		struct rte_udp_hdr *u = rte_pktmbuf_mtod_offset(m, struct rte_udp_hdr *, 34);

		u->dgram_cksum = 0;
	}
	inject(m);
	poll_all();
	CU_ASSERT_FATAL(collect(o, 16) == 1);
	CU_ASSERT(o[0].p.type == WIRE_TYPE_ACK && o[0].p.tsecr == 777 && o[0].p.origin == 11 &&
		  o[0].p.chunk == 0 && o[0].p.round == 4 && o[0].fl.dst_ip == PEER_IP(11) &&
		  o[0].fl.dst_port == WORKER_PORT && (o[0].p.flags & WIRE_F_ECHO));
	/* The same again: a duplicate, still answered with an ACK. */
	m = contrib_f32(13, 1, 0, 11, 4, 0, el, ce);
	rte_pktmbuf_mtod_offset(m, struct wire_hdr *, WIRE_FRAME_HDR_OFF)->flags = WIRE_F_RETX;
	rte_pktmbuf_mtod_offset(m, struct rte_udp_hdr *, 34)->dgram_cksum = 0;
	inject(m);
	poll_all();
	CU_ASSERT(collect(o, 16) == 1 && o[0].p.type == WIRE_TYPE_ACK);
	CU_ASSERT(drops(WIRE_REASON_DUPLICATE) == 1);
	CU_ASSERT(ctr(DP_CTR_ACKS_SENT) == 2);
	/* Workers 12 and 13 complete the chunk, 13 with a RETX: the RESULT's ordinary copies
	 * answer it (to every worker), no ACK, no copy of its own; the copy to 13 echoes its
	 * RETX (ECHO, tsecr its tsval: that RESULT answers it), the others flags 0, no echo. */
	inject(contrib_f32(13, 1, 0, 12, 4, 0, el, ce));
	m = contrib_f32(13, 1, 0, 13, 4, 0, el, ce);
	rte_pktmbuf_mtod_offset(m, struct wire_hdr *, WIRE_FRAME_HDR_OFF)->flags = WIRE_F_RETX;
	rte_pktmbuf_mtod_offset(m, struct wire_hdr *, WIRE_FRAME_HDR_OFF)->tsval =
		rte_cpu_to_be_32(777);
	rte_pktmbuf_mtod_offset(m, struct rte_udp_hdr *, 34)->dgram_cksum = 0;
	inject(m);
	poll_all();
	CU_ASSERT_FATAL(collect(o, 16) == 3);
	for (int k = 0; k < 3; k++) {
		bool echo = W3[k] == 13;

		CU_ASSERT(o[k].p.type == WIRE_TYPE_RESULT && o[k].fl.dst_ip == PEER_IP(W3[k]));
		CU_ASSERT(o[k].p.flags == (echo ? WIRE_F_ECHO : 0) &&
			  o[k].p.tsecr == (echo ? 777u : 0u));
	}
	CU_ASSERT(ctr(DP_CTR_ACKS_SENT) == 2);
	/* Done: a RETX from 12 gets the retained RESULT (RETX|ECHO) to 12 alone. */
	m = contrib_f32(13, 1, 0, 12, 4, 0, el, ce);
	rte_pktmbuf_mtod_offset(m, struct wire_hdr *, WIRE_FRAME_HDR_OFF)->flags = WIRE_F_RETX;
	rte_pktmbuf_mtod_offset(m, struct rte_udp_hdr *, 34)->dgram_cksum = 0;
	inject(m);
	poll_all();
	int n = collect(o, 16);

	CU_ASSERT_FATAL(n == 1);
	CU_ASSERT(o[0].p.type == WIRE_TYPE_RESULT && o[0].fl.dst_ip == PEER_IP(12) &&
		  o[0].p.flags == (WIRE_F_RETX | WIRE_F_ECHO) && o[0].p.contrib == 3);
	for (uint32_t e = 0; e < 64; e++)
		CU_ASSERT(out_f32(&o[0], e) == val(11, e) + val(12, e) + val(13, e));
	dp_down();
}

/* A dataplane that is a leaf under gateway 4 (job 40) with workers 21 and 22, whose
 * round 3 of chunk 0 has gone up: the partial sum is in o[0]. */
static void
leaf_partial_up(struct out *o)
{
	const uint64_t el = 64;
	const uint32_t ce = 64;
	static const uint16_t w2[] = {21, 22};
	struct tdesc td = {0, 4, 0, {0}, 0, 1, 16, {0}}; /* leaf under gateway 4 */

	CU_ASSERT_FATAL(dp_up(rte_get_main_lcore()) == 0);
	CU_ASSERT_FATAL(install(mk_table(40, 1, 2, TABLE_DTYPE_FP32, el, ce, 2, w2, 1, &td),
				"install") == 0);
	inject(contrib_f32(40, 1, 0, 21, 3, 0, el, ce));
	inject(contrib_f32(40, 1, 0, 22, 3, 0, el, ce));
	poll_all();
	CU_ASSERT_FATAL(collect(o, 16) == 1);
}

/* Loss recovery towards the parent: a partial sum without RESULT is sent again (RETX)
 * after the timeout; once the parent ACKs it, NACK_RESULT instead; NACK_CONTRIB makes it
 * go again at once; the RESULT ends it all. */
static void
test_retransmit_up(void)
{
	static struct out o[16];
	struct pkt ctl = {WIRE_TYPE_ACK,   WIRE_F_ECHO, 40,        1, 0, 4, 2, 0, 3, 0,
			  WIRE_DTYPE_NONE, 1,           PEER_IP(4)};
	int n;

	leaf_partial_up(o);
	CU_ASSERT(o[0].p.type == WIRE_TYPE_CONTRIB && o[0].p.flags == 0 && o[0].p.contrib == 2);
	/* Nothing before the timeout (20 ms, twice that before the tree's first RESULT of
	 * the round), then a NACK_RESULT that asks whether the parent holds it; unanswered
	 * a timeout later (20 ms), the same partial sum with RETX. */
	dp_worker_poll(dp.lcores[0]);
	CU_ASSERT(collect(o, 16) == 0);
	rte_delay_us_sleep(45000);
	dp_worker_poll(dp.lcores[0]);
	n = collect(o, 16);
	CU_ASSERT_FATAL(n == 1);
	CU_ASSERT(o[0].p.type == WIRE_TYPE_NACK_RESULT && o[0].p.chunk == 0 && o[0].p.round == 3 &&
		  o[0].p.count == 1 && o[0].fl.dst_ip == PEER_IP(4));
	CU_ASSERT(ctr(DP_CTR_HELD_ASKED) == 1 && ctr(DP_CTR_RETRANSMITS) == 0);
	rte_delay_us_sleep(25000);
	dp_worker_poll(dp.lcores[0]);
	n = collect(o, 16);
	CU_ASSERT_FATAL(n == 1);
	CU_ASSERT(o[0].p.type == WIRE_TYPE_CONTRIB && o[0].p.flags == WIRE_F_RETX &&
		  o[0].fl.dst_ip == PEER_IP(4) && o[0].p.contrib == 2 &&
		  out_f32(&o[0], 7) == val(21, 7) + val(22, 7));
	CU_ASSERT(ctr(DP_CTR_RETRANSMITS) == 1);
	/* NACK_CONTRIB from the parent: again at once. */
	ctl.type = WIRE_TYPE_NACK_CONTRIB;
	ctl.flags = 0;
	inject(mk_pkt(&ctl, NULL));
	poll_all();
	CU_ASSERT(collect(o, 16) == 1 && o[0].p.flags == WIRE_F_RETX);
	/* The parent ACKs: the next timeout (doubled, 40 ms) sends NACK_RESULT instead. */
	ctl.type = WIRE_TYPE_ACK;
	ctl.flags = WIRE_F_ECHO;
	inject(mk_pkt(&ctl, NULL));
	poll_all();
	CU_ASSERT(collect(o, 16) == 0);
	rte_delay_us_sleep(45000);
	dp_worker_poll(dp.lcores[0]);
	n = collect(o, 16);
	CU_ASSERT_FATAL(n == 1);
	CU_ASSERT(o[0].p.type == WIRE_TYPE_NACK_RESULT && o[0].p.chunk == 0 && o[0].p.round == 3);
	CU_ASSERT(ctr(DP_CTR_NACKS_SENT) == 1);
	/* An ACK from another gateway is refused. */
	ctl.sender = 9;
	inject(mk_pkt(&ctl, NULL));
	poll_all();
	CU_ASSERT(drops(WIRE_REASON_BAD_SENDER) == 1);
	/* The RESULT: to both workers; the partial sum is released, no timer fires again. */
	float res[64];
	struct pkt r = {WIRE_TYPE_RESULT, 0,  40,        1, 0, 4, 4, 5, 3, 0,
			WIRE_DTYPE_FP32,  64, PEER_IP(4)};

	for (int i = 0; i < 64; i++)
		res[i] = (float)i;
	inject(mk_pkt(&r, res));
	poll_all();
	CU_ASSERT(collect(o, 16) == 2);
	rte_delay_us_sleep(90000);
	dp_worker_poll(dp.lcores[0]);
	CU_ASSERT(collect(o, 16) == 0);
	/* The parent link carried the partial sum three times, two of them resent. */
	CU_ASSERT(link_ctr(0, "up", 4, "frames") == 3);
	CU_ASSERT(link_ctr(0, "up", 4, "retx_bytes") * 3 == link_ctr(0, "up", 4, "bytes") * 2);
	dp_down();
}

/* A parent that holds the partial sum (its RESULT waits for other contributors) answers
 * the first timeout's NACK_RESULT with an ACK: the partial sum is never sent again, only
 * asked for. */
static void
test_held_probe_up(void)
{
	static struct out o[16];
	struct pkt ack = {WIRE_TYPE_ACK,   WIRE_F_ECHO, 40,        1, 0, 4, 2, 0, 3, 0,
			  WIRE_DTYPE_NONE, 1,           PEER_IP(4)};
	int n;

	leaf_partial_up(o);
	rte_delay_us_sleep(45000);
	dp_worker_poll(dp.lcores[0]);
	n = collect(o, 16);
	CU_ASSERT_FATAL(n == 1);
	CU_ASSERT(o[0].p.type == WIRE_TYPE_NACK_RESULT && ctr(DP_CTR_HELD_ASKED) == 1);
	inject(mk_pkt(&ack, NULL));
	poll_all();
	CU_ASSERT(collect(o, 16) == 0);
	/* Held: later timeouts ask for the RESULT, twice, and never resend the payload. */
	for (int k = 0; k < 2; k++) {
		rte_delay_us_sleep(k == 0 ? 45000 : 85000);
		dp_worker_poll(dp.lcores[0]);
		n = collect(o, 16);
		CHECK(n == 1 && o[0].p.type == WIRE_TYPE_NACK_RESULT, "timeout %d: %d frames", k,
		      n);
	}
	CU_ASSERT(ctr(DP_CTR_RETRANSMITS) == 0 && ctr(DP_CTR_NACKS_SENT) == 2 &&
		  ctr(DP_CTR_HELD_ASKED) == 1);
	CU_ASSERT(link_ctr(0, "up", 4, "frames") == 1);
	dp_down();
}

/* An aggregator answers a NACK_RESULT for chunks whose slots hold the requester's
 * contribution with one ACK of the run (ECHO, its tsval), and nothing for a requester
 * whose contribution it lacks. */
static void
test_nack_result_held(void)
{
	const uint64_t el = 192;
	const uint32_t ce = 64;
	struct tdesc td = {0, 0, 0, {0}, 0, 3, 16, {0}};
	static struct out o[16];
	struct pkt nk = {WIRE_TYPE_NACK_RESULT, 0, 13,         1, 0, 11, 11, 0, 4, 0,
			 WIRE_DTYPE_NONE,       2, PEER_IP(11)};
	int n;

	CU_ASSERT_FATAL(dp_up(rte_get_main_lcore()) == 0);
	CU_ASSERT_FATAL(install(mk_table(13, 1, 1, TABLE_DTYPE_FP32, el, ce, 3, W3, 1, &td),
				"install") == 0);
	inject(contrib_f32(13, 1, 0, 11, 4, 0, el, ce));
	inject(contrib_f32(13, 1, 0, 11, 4, 1, el, ce));
	poll_all();
	CU_ASSERT(collect(o, 16) == 0);
	inject(mk_pkt(&nk, NULL));
	poll_all();
	n = collect(o, 16);
	CU_ASSERT_FATAL(n == 1);
	CU_ASSERT(o[0].p.type == WIRE_TYPE_ACK && o[0].p.chunk == 0 && o[0].p.count == 2 &&
		  o[0].p.round == 4 && o[0].p.origin == 11 && (o[0].p.flags & WIRE_F_ECHO) &&
		  o[0].fl.dst_ip == PEER_IP(11) && o[0].fl.dst_port == WORKER_PORT);
	CU_ASSERT(ctr(DP_CTR_ACKS_SENT) == 1);
	/* Worker 12 has sent nothing: its NACK_RESULT gets no ACK. */
	nk.sender = nk.origin = 12;
	nk.src_ip = PEER_IP(12);
	inject(mk_pkt(&nk, NULL));
	poll_all();
	n = collect(o, 16);
	CHECK(n == 0 && ctr(DP_CTR_ACKS_SENT) == 1, "%d frames to worker 12", n);
	dp_down();
}

/* A child gateway one round behind gets the previous round's RESULT: its NACK_RESULT
 * and its retransmitted partial sum are answered after the root's workers moved on. */
static void
test_prev_round_child(void)
{
	const uint64_t el = 64;
	const uint32_t ce = 64;
	static const uint16_t w2[] = {11, 12};
	struct tdesc td = {0, 0, 1, {3}, 0, 1, 16, {2}}; /* root, child gateway 3 */
	static struct out o[16];
	float pl[64];
	struct pkt cp = {WIRE_TYPE_CONTRIB, 0,  60,        1, 0, 3, 3, 2, 101, 0,
			 WIRE_DTYPE_FP32,   64, PEER_IP(3)};

	for (int i = 0; i < 64; i++)
		pl[i] = 1;
	CU_ASSERT_FATAL(dp_up(rte_get_main_lcore()) == 0);
	CU_ASSERT_FATAL(install(mk_table(60, 1, 1, TABLE_DTYPE_FP32, el, ce, 2, w2, 1, &td),
				"install") == 0);
	inject(contrib_f32(60, 1, 0, 11, 101, 0, el, ce));
	inject(contrib_f32(60, 1, 0, 12, 101, 0, el, ce));
	inject(mk_pkt(&cp, pl));
	poll_all();
	CU_ASSERT(collect(o, 16) == 3); /* to the child and both workers */
	inject(contrib_f32(60, 1, 0, 11, 102, 0, el, ce));
	inject(contrib_f32(60, 1, 0, 12, 102, 0, el, ce));
	poll_all();
	CU_ASSERT(collect(o, 16) == 0);
	struct pkt nk = {WIRE_TYPE_NACK_RESULT, 0, 60,        1, 0, 3, 3, 0, 101, 0,
			 WIRE_DTYPE_NONE,       1, PEER_IP(3)};

	inject(mk_pkt(&nk, NULL));
	cp.flags = WIRE_F_RETX;
	inject(mk_pkt(&cp, pl));
	poll_all();
	int n = collect(o, 16);

	CU_ASSERT(n == 2);
	for (int k = 0; k < n && k < 16; k++)
		CU_ASSERT(o[k].p.type == WIRE_TYPE_RESULT && o[k].p.round == 101 &&
			  o[k].fl.dst_ip == PEER_IP(3) && o[k].p.contrib == 4);
	dp_down();
}

/* The resends before the timer, at leaf gateway 1 of worker 21 under gateway 4: a fresh
 * dataplane with the table of job `job`, two chunks of 64 elements. */
static void
leaf_of_two_up(uint32_t job)
{
	static const uint16_t w1[] = {21};
	struct tdesc td = {0, 4, 0, {0}, 0, 2, 16, {0}}; /* leaf under gateway 4 */

	CU_ASSERT_FATAL(dp_up(rte_get_main_lcore()) == 0);
	CU_ASSERT_FATAL(install(mk_table(job, 1, 2, TABLE_DTYPE_FP32, 128, 64, 1, w1, 1, &td),
				"install") == 0);
}

/* Gateway 4's RESULT of chunk c of round 9 of job `job` (every element 0). */
static struct rte_mbuf *
parent_result(uint32_t job, uint32_t c)
{
	float res[64] = {0};
	struct pkt r = {WIRE_TYPE_RESULT, 0,  job,       1, 0, 4, 4, 1, 9, c,
			WIRE_DTYPE_FP32,  64, PEER_IP(4)};

	return mk_pkt(&r, res);
}

/* leaf_of_two_up(job), whose partial sums of round 9 go up back to back; 20 ms later
 * gateway 4's RESULT of chunk c comes, the other chunk's never. *t0: the time before they
 * went, *t1: after the RESULT came. */
static void
two_up_one_back(uint32_t job, uint32_t c, uint64_t *t0, uint64_t *t1)
{
	static struct out o[16];

	leaf_of_two_up(job);
	*t0 = rte_get_timer_cycles();
	inject(contrib_f32(job, 1, 0, 21, 9, 0, 128, 64));
	inject(contrib_f32(job, 1, 0, 21, 9, 1, 128, 64));
	poll_all();
	CU_ASSERT(collect(o, 16) == 2); /* both partial sums up; one is lost */
	rte_delay_us_sleep(20000);
	inject(parent_result(job, c));
	poll_all();
	*t1 = rte_get_timer_cycles();
}

/* One poll of the worker lcore: how many of the frames it sends resend chunk c's partial
 * sum (RETX). */
static int
poll_resends(uint32_t c)
{
	static struct out o[16];

	dp_worker_poll(dp.lcores[0]);
	int n = collect(o, 16), retx = 0;

	for (int i = 0; i < n && i < 16; i++)
		retx += o[i].p.type == WIRE_TYPE_CONTRIB && o[i].p.chunk == c &&
			(o[i].p.flags & WIRE_F_RETX);
	return retx;
}

/* Fast retransmit: a partial sum sent later got its RESULT first, so the earlier one was
 * lost: it goes again at once, long before its timeout (here 20 ms before any sample). */
static void
test_fast_retransmit(void)
{
	static struct out o[16];

	leaf_of_two_up(70);
	inject(contrib_f32(70, 1, 0, 21, 9, 0, 128, 64));
	poll_all();
	rte_delay_us_sleep(3000);
	inject(contrib_f32(70, 1, 0, 21, 9, 1, 128, 64));
	poll_all();
	CU_ASSERT(collect(o, 16) == 2); /* both partial sums up */
	inject(parent_result(70, 1));   /* chunk 1's RESULT, chunk 0's never */
	poll_all();
	int retx = poll_resends(0);

	/* At once, no 20 ms wait; into an idle link its second copy follows an eighth of a
	 * round trip later, which a slow poll (a busy or instrumented build) may reach. */
	CU_ASSERT(ctr(DP_CTR_RETX_FAST) == 1);
	CHECK(retx == 1 + (int)ctr(DP_CTR_RETX_COPY) && ctr(DP_CTR_RETX_COPY) <= 1,
	      "%d resends, %" PRIu64 " copies", retx, ctr(DP_CTR_RETX_COPY));
	CU_ASSERT(ctr(DP_CTR_RETRANSMITS) == (uint64_t)retx);
	dp_down();
}

/*
 * A loss among a round's last chunks: the partial sums of chunks 0 and 1 go up back to
 * back, chunk 1's RESULT comes after a round trip and chunk 0's never. No chunk was sent
 * long after chunk 0, so only the time tells: once the round trip chunk 1 took (plus an
 * eighth) has passed since chunk 0 went, chunk 0 is resent, long before its timer (which
 * would restart from chunk 1's RESULT and wait a whole timeout more).
 */
static void
test_tail_loss(void)
{
	uint64_t t0, t1;

	two_up_one_back(71, 1, &t0, &t1);
	/* The round trip chunk 1 took is at most t1 - t0; wait until a quarter more has
	 * passed since chunk 0 went (at most t0), then one poll must resend it. */
	while (rte_get_timer_cycles() - t0 < (t1 - t0) * 5 / 4)
		rte_delay_us_sleep(500);
	CU_ASSERT(poll_resends(0) == 1);
	CU_ASSERT(ctr(DP_CTR_RETRANSMITS) == 1);
	dp_down();
}

/*
 * The last partial sum of a round lost: chunks 0 and 1 go up, chunk 0's RESULT comes and
 * chunk 1's never. No partial sum after chunk 1 can tell of its loss; once the round trip
 * chunk 0 took has passed since chunk 1 went, and the tree's RESULTs have stopped for an
 * eighth of it, chunk 1 is resent (a tail probe), where its timer would have restarted
 * from chunk 0's RESULT and waited a whole timeout more.
 */
static void
test_tail_probe(void)
{
	uint64_t t0, t1;

	two_up_one_back(72, 0, &t0, &t1);
	/* That round trip is at most t1 - t0: a quarter of it past t1, chunk 1 is overdue
	 * and the RESULTs have stopped long enough. */
	while (rte_get_timer_cycles() - t1 < (t1 - t0) / 4)
		rte_delay_us_sleep(500);
	CU_ASSERT(poll_resends(1) == 1);
	CU_ASSERT(ctr(DP_CTR_RETRANSMITS) == 1 && ctr(DP_CTR_RETX_TAIL) == 1);
	CU_ASSERT(ctr(DP_CTR_RETX_FAST) == 0);
	dp_down();
}

/* Poll until pred(o[0 .. n - 1]) over everything sent so far holds, or 60 s: the frames
 * are appended to o (at most max); returns how many there are. */
static int
poll_until(struct out *o, int have, int max, bool (*pred)(const struct out *, int))
{
	uint64_t t0 = rte_get_timer_cycles();

	while (!pred(o, have) && rte_get_timer_cycles() - t0 < 60 * rte_get_timer_hz()) {
		dp_worker_poll(dp.lcores[0]);
		have += collect(o + have, max - have);
		if (have >= max)
			break;
	}
	return have;
}

/* The index in o[0 .. n - 1] of the first CONTRIB of chunk c with RETX (to the parent),
 * or -1. */
static int
find_retx(const struct out *o, int n, uint32_t c)
{
	for (int i = 0; i < n; i++)
		if (o[i].p.type == WIRE_TYPE_CONTRIB && o[i].p.chunk == c &&
		    (o[i].p.flags & WIRE_F_RETX))
			return i;
	return -1;
}

static bool
has_retx0(const struct out *o, int n)
{
	return find_retx(o, n, 0) >= 0;
}

/* First transmissions of partial sums of chunks 1 .. 63 in o[0 .. n - 1] (each once). */
static int
first_sums(const struct out *o, int n)
{
	int k = 0;

	for (int i = 0; i < n; i++)
		k += o[i].p.type == WIRE_TYPE_CONTRIB && !(o[i].p.flags & WIRE_F_RETX) &&
		     o[i].p.chunk >= 1 && o[i].p.chunk < 64;
	return k;
}

static bool
all_sums(const struct out *o, int n)
{
	return first_sums(o, n) == 63;
}

/*
 * Selective repeat at a leaf: the partial sum of chunk 0, the first of a round, is lost
 * on its way up. The chunks behind it keep going up (all 63 of the pool while chunk 0 is
 * missing), and once a later chunk's RESULT shows the loss chunk 0 is resent ahead of the
 * partial sums still waiting in the pacer. Its RESULT then reaches the worker bit-exact.
 */
static void
test_selective_leaf(void)
{
	const uint32_t ce = 256, nch = 64; /* 1 KiB payloads, 1.1 KB frames */
	const uint64_t el = (uint64_t)ce * nch;
	static const uint16_t w1[] = {21};
	struct tdesc td = {0, 4, 0, {0}, 0, nch, 64, {0}}; /* leaf under gateway 4 */
	static struct out o[512];
	struct table *tb = mk_table(80, 1, 2, TABLE_DTYPE_FP32, el, ce, 1, w1, 1, &td);
	float res[256];
	struct pkt r = {WIRE_TYPE_RESULT, 0,   80,        1, 0, 4, 4, 1, 2, 1,
			WIRE_DTYPE_FP32,  256, PEER_IP(4)};
	int n, at, later = 0, bad = 0;

	tb->trees[0].rate_gbps = 0.0008; /* 100 KB/s: a frame per 11 ms */
	CU_ASSERT_FATAL(dp_up(rte_get_main_lcore()) == 0);
	CU_ASSERT_FATAL(install(tb, "install") == 0);
	inject(contrib_f32(80, 1, 0, 21, 2, 0, el, ce));
	poll_all();
	CU_ASSERT_FATAL(collect(o, 512) == 1); /* chunk 0 up: lost */
	rte_delay_us_sleep(3000);
	for (uint32_t c = 1; c < nch; c++)
		inject(contrib_f32(80, 1, 0, 21, 2, c, el, ce));
	poll_all();
	n = collect(o, 512); /* the burst allowance's worth */
	CU_ASSERT(n >= 10 && n <= 20);
	/* Chunk 1's RESULT: chunk 0 was lost. */
	for (int i = 0; i < 256; i++)
		res[i] = (float)(3 * i + 1);
	inject(mk_pkt(&r, res));
	int n0 = n;

	n = poll_until(o, n0, 512, has_retx0);
	at = find_retx(o, n, 0);
	CU_ASSERT_FATAL(at >= n0);
	/* Ahead of the queue: at most the frame the pacer was releasing went before it. */
	for (int i = n0; i < at; i++)
		later += o[i].p.type == WIRE_TYPE_CONTRIB && !(o[i].p.flags & WIRE_F_RETX);
	CU_ASSERT(later <= 1);
	CU_ASSERT(o[at].fl.dst_ip == PEER_IP(4) && o[at].p.contrib == 1 &&
		  out_f32(&o[at], 9) == val(21, 9));
	/* The RESULT of chunk 1 went to the worker as the parent sent it. */
	for (int i = 0; i < n; i++)
		if (o[i].p.type == WIRE_TYPE_RESULT && o[i].p.chunk == 1)
			for (uint32_t e = 0; e < 256; e++)
				bad += o[i].fl.dst_ip != PEER_IP(21) || out_f32(&o[i], e) != res[e];
	CU_ASSERT(bad == 0);
	/* Every other chunk of the pool went up while chunk 0 was missing. */
	n = poll_until(o, n, 512, all_sums);
	CU_ASSERT(first_sums(o, n) == 63);
	/* Chunk 0's RESULT ends it: to the worker, bit-exact; nothing more is resent for
	 * it, whatever else the timers still do. */
	r.chunk = 0;
	for (int i = 0; i < 256; i++)
		res[i] = -(float)i / 8;
	inject(mk_pkt(&r, res));
	poll_all();
	n = collect(o, 512);
	int got = 0;

	for (int i = 0; i < n; i++)
		if (o[i].p.type == WIRE_TYPE_RESULT && o[i].p.chunk == 0) {
			got++;
			for (uint32_t e = 0; e < 256; e++)
				bad += out_f32(&o[i], e) != res[e];
		}
	CU_ASSERT(got == 1 && bad == 0);
	rte_delay_us_sleep(100000);
	dp_worker_poll(dp.lcores[0]);
	n = collect(o, 512);
	CU_ASSERT(find_retx(o, n, 0) < 0);
	dp_down();
}

/* The root of a tree with local worker 11 and child gateway 2 (one worker below it). */
static struct table *
root_with_child(uint32_t job, uint64_t el, uint32_t ce, uint32_t nch)
{
	static const uint16_t w1[] = {11};
	struct tdesc td = {0, 0, 1, {2}, 0, nch, 64, {1}};
	struct table *tb = mk_table(job, 1, 1, TABLE_DTYPE_FP32, el, ce, 1, w1, 1, &td);

	tb->trees[0].rate_gbps = 0.0008; /* copies to the child: a frame per 11 ms */
	return tb;
}

/* A RESULT of chunk c to gateway 2 in o[0 .. n - 1], with the sum of 11 and 2 bit-exact:
 * its index, or -1. */
static int
find_result_to_child(const struct out *o, int n, uint32_t c, uint32_t ce, uint8_t flags)
{
	for (int i = 0; i < n; i++) {
		if (o[i].p.type != WIRE_TYPE_RESULT || o[i].p.chunk != c ||
		    o[i].fl.dst_ip != PEER_IP(2) || o[i].p.flags != flags)
			continue;
		for (uint32_t e = 0; e < ce; e++) {
			uint64_t x = (uint64_t)c * ce + e;

			if (out_f32(&o[i], e) != val(11, x) + val(2, x))
				return -2;
		}
		return i;
	}
	return -1;
}

static uint32_t want_chunk;
static uint8_t want_flags;

static bool
has_child_result(const struct out *o, int n)
{
	return find_result_to_child(o, n, want_chunk, 256, want_flags) != -1;
}

/* RESULT copies to the child in o[0 .. n - 1] other than of chunk c. */
static int
other_copies(const struct out *o, int n, uint32_t c)
{
	int k = 0;

	for (int i = 0; i < n; i++)
		k += o[i].p.type == WIRE_TYPE_RESULT && o[i].fl.dst_ip == PEER_IP(2) &&
		     o[i].p.chunk != c;
	return k;
}

/*
 * At the root: a child gateway's partial sum of chunk 0 is lost on its way up. The
 * later chunks complete meanwhile (their RESULTs reach the local worker at once and
 * queue in the pacer towards the child); when the child resends chunk 0 (RETX), its
 * RESULT goes to the child ahead of the queued copies, echoing the RETX. Then a RESULT lost on its way down:
 * the child's RETX partial sum gets the retained RESULT (RETX, ECHO), ahead of the queue
 * too. Every sum bit-exact.
 */
static void
test_lost_partial_and_result(void)
{
	const uint32_t ce = 256, nch = 48;
	const uint64_t el = (uint64_t)ce * nch;
	static struct out o[512];
	int n, at;

	CU_ASSERT_FATAL(dp_up(rte_get_main_lcore()) == 0);
	CU_ASSERT_FATAL(install(root_with_child(81, el, ce, nch), "install") == 0);
	for (uint32_t c = 0; c < nch; c++) {
		inject(contrib_f32(81, 1, 0, 11, 0, c, el, ce));
		if (c != 0) /* the child's chunk 0 is lost */
			inject(contrib_f32(81, 1, 0, 2, 0, c, el, ce));
	}
	poll_all();
	n = collect(o, 512);
	/* Chunks 1 .. 47 complete: all their RESULTs to the worker, some to the child. */
	int to_worker = 0, bad = 0;

	for (int i = 0; i < n; i++)
		if (o[i].p.type == WIRE_TYPE_RESULT && o[i].fl.dst_ip == PEER_IP(11)) {
			to_worker += o[i].p.chunk != 0;
			bad += o[i].p.chunk == 0 ||
			       out_f32(&o[i], 7) != val(11, (uint64_t)o[i].p.chunk * ce + 7) +
							    val(2, (uint64_t)o[i].p.chunk * ce + 7);
		}
	CU_ASSERT(to_worker == (int)nch - 1 && bad == 0);
	CU_ASSERT(other_copies(o, n, 0) < (int)nch - 10); /* the rest wait in the pacer */
	/* The child's repair: chunk 0 with RETX. Its RESULT leaves ahead of the queue. */
	inject(contrib_f32_retx(81, 2, 0, 0, el, ce));
	int before = n;

	want_chunk = 0;
	want_flags = WIRE_F_ECHO; /* it answers the child's RETX, and says so */
	n = poll_until(o, n, 512, has_child_result);
	at = find_result_to_child(o, n, 0, ce, WIRE_F_ECHO);
	CU_ASSERT_FATAL(at >= before);
	CU_ASSERT(other_copies(o + before, at - before, 0) <= 1);
	/* A RESULT lost on its way down: the copy of chunk 20 never reached the child, which
	 * resends its partial sum (RETX) and gets the retained RESULT, ahead of the queue. */
	inject(contrib_f32_retx(81, 2, 0, 20, el, ce));
	before = n;
	want_chunk = 20;
	want_flags = WIRE_F_RETX | WIRE_F_ECHO;
	n = poll_until(o, n, 512, has_child_result);
	at = find_result_to_child(o, n, 20, ce, WIRE_F_RETX | WIRE_F_ECHO);
	CU_ASSERT_FATAL(at >= before);
	CU_ASSERT(other_copies(o + before, at - before, 20) <= 1);
	CU_ASSERT(ctr(DP_CTR_PACED) > 0);
	dp_down();
}

int
main(int argc, char **argv)
{
	CU_pSuite s = dp_fixture_init(argc, argv, "test_dp_recovery");

	if (s == NULL)
		return 1;
	CU_add_test(s, "retransmissions answered", test_retx_answers);
	CU_add_test(s, "retransmission to the parent", test_retransmit_up);
	CU_add_test(s, "a partial sum the parent holds is asked for, not resent",
		    test_held_probe_up);
	CU_add_test(s, "a NACK_RESULT of held chunks is ACKed", test_nack_result_held);
	CU_add_test(s, "fast retransmit", test_fast_retransmit);
	CU_add_test(s, "a loss among a round's last chunks", test_tail_loss);
	CU_add_test(s, "the last partial sum of a round lost: a tail probe", test_tail_probe);
	CU_add_test(s, "selective repeat: a lost partial sum does not stop the pool",
		    test_selective_leaf);
	CU_add_test(s, "a lost partial sum up and a lost RESULT down, repaired ahead of the queue",
		    test_lost_partial_and_result);
	CU_add_test(s, "previous round's RESULT for a child", test_prev_round_child);
	return dp_fixture_run();
}
