/* SPDX-License-Identifier: BSD-3-Clause
 *
 * EAL tests of what the dataplane sends and how (dataplane/fastpath): pacing at a tree's
 * planned rate, a draining epoch that waits for its pacers, RESULT copies sharing one
 * payload segment, and the fault injection of --fault.
 *
 * The main thread plays the worker lcore (dp_worker_poll, dp_fixture.c).
 */
#include <stdio.h>
#include <string.h>

#include <CUnit/CUnit.h>
#include <rte_cycles.h>
#include <rte_ether.h>
#include <rte_lcore.h>
#include <rte_mbuf.h>
#include <rte_mempool.h>
#include <rte_ring.h>

#include "dp.h"
#include "dp_fixture.h"
#include "slowpath/slowpath.h"
#include "table.h"
#include "wire.h"

/* Fault injection: TX delay holds frames back (and the `delay` op changes it while the
 * port runs), TX duplication doubles them, RX loss drops them, RX reordering swaps them;
 * each counted. */
static void
test_faults(void)
{
	const uint64_t el = 64 * 8;
	const uint32_t ce = 64;
	struct tdesc td = {0, 0, 0, {0}, 0, 8, 16, {0}};
	static struct out o[64];

	faults[DP_TX] = (struct dp_fault){
		.on = true, .dup = UINT32_MAX, .delay_tsc = rte_get_tsc_hz() / 50};
	CU_ASSERT_FATAL(dp_up(rte_get_main_lcore()) == 0);
	faults[DP_TX] = (struct dp_fault){0};
	CU_ASSERT_FATAL(install(mk_table(30, 1, 1, TABLE_DTYPE_FP32, el, ce, 3, W3, 1, &td),
				"install") == 0);
	for (int w = 0; w < 3; w++)
		inject(contrib_f32(30, 1, 0, W3[w], 0, 0, el, ce));
	poll_all();
	CU_ASSERT(collect(o, 64) == 0); /* 20 ms in the delay line */
	CU_ASSERT(ctr(DP_CTR_FAULT_DUPLICATED) == 3);
	rte_delay_us_sleep(25000);
	dp_worker_poll(dp.lcores[0]);
	int n = collect(o, 64);

	CU_ASSERT(n == 6); /* three results, each twice */
	for (int i = 0; i < n && i < 64; i++)
		CU_ASSERT(o[i].p.type == WIRE_TYPE_RESULT &&
			  out_f32(&o[i], 5) == val(11, 5) + val(12, 5) + val(13, 5));
	/* The `delay` op: the port's delay changed while it runs; at 0 the next round's
	 * results leave at the first flush. Bad arguments change nothing. */
	CU_ASSERT(call_errno("{\"version\":1,\"id\":1,\"op\":\"delay\",\"port\":0,"
			     "\"delay_ms\":-1}") == EINVAL);
	CU_ASSERT(call_errno("{\"version\":1,\"id\":1,\"op\":\"delay\",\"port\":0,"
			     "\"delay_ms\":10001}") == EINVAL);
	CU_ASSERT(call_errno("{\"version\":1,\"id\":1,\"op\":\"delay\",\"port\":0}") == EINVAL);
	CU_ASSERT(call_errno("{\"version\":1,\"id\":1,\"op\":\"delay\",\"port\":9,"
			     "\"delay_ms\":1}") == ENOENT);
	CU_ASSERT(dp.ports[0].fault[DP_TX].delay_tsc == rte_get_tsc_hz() / 50);
	CU_ASSERT(call_errno("{\"version\":1,\"id\":1,\"op\":\"delay\",\"port\":0,"
			     "\"delay_ms\":0}") == 0);
	CU_ASSERT(dp.ports[0].fault[DP_TX].delay_tsc == 0);
	for (int w = 0; w < 3; w++)
		inject(contrib_f32(30, 1, 0, W3[w], 1, 0, el, ce));
	poll_all();
	CU_ASSERT(collect(o, 64) == 6);
	dp_down();

	faults[DP_RX] =
		(struct dp_fault){.on = true, .loss = UINT32_MAX / 2, .reorder = UINT32_MAX / 4};
	CU_ASSERT_FATAL(dp_up(rte_get_main_lcore()) == 0);
	faults[DP_RX] = (struct dp_fault){0};
	CU_ASSERT_FATAL(install(mk_table(31, 1, 1, TABLE_DTYPE_FP32, el, ce, 3, W3, 1, &td),
				"install") == 0);
	for (uint32_t c = 0; c < 8; c++)
		for (int w = 0; w < 3; w++)
			inject(contrib_f32(31, 1, 0, W3[w], 0, c, el, ce));
	poll_all();
	uint64_t lost = ctr(DP_CTR_FAULT_DROPPED);

	CU_ASSERT(lost > 0 && lost < 24);
	CU_ASSERT(ctr(DP_CTR_CONTRIBS) == 24 - lost);
	CU_ASSERT(ctr(DP_CTR_FAULT_REORDERED) > 0);
	collect(o, 64);
	dp_down();
}

/* Elements of o's fp32 payload whose bits differ from the sum of workers 11, 12 and 13. */
static int
wrong_elems(const struct out *o, uint32_t ce)
{
	int n = 0;

	for (uint32_t e = 0; e < ce; e++) {
		float s = val(11, e) + val(12, e) + val(13, e);

		n += memcmp(&s, o->frame + WIRE_FRAME_PAYLOAD_OFF + 4 * e, 4) != 0;
	}
	return n;
}

/* Corruption: on RX every CONTRIB gets one bit of its payload flipped and is summed all the
 * same (the UDP checksum of worker 12's, which has one, updated to match); on TX each RESULT
 * copy becomes a private copy with one bit flipped, the shared payload left intact. */
static void
test_fault_corrupt(void)
{
	const uint64_t el = 64 * 8;
	const uint32_t ce = 64;
	struct tdesc td = {0, 0, 0, {0}, 0, 8, 16, {0}};
	static struct out o[64];
	int n;

	for (int dir = DP_RX; dir <= DP_TX; dir++) {
		faults[dir] = (struct dp_fault){.on = true, .corrupt = UINT32_MAX};
		CU_ASSERT_FATAL(dp_up(rte_get_main_lcore()) == 0);
		faults[dir] = (struct dp_fault){0};
		CU_ASSERT_FATAL(install(mk_table(33, 1, 1, TABLE_DTYPE_FP32, el, ce, 3, W3, 1, &td),
					"install") == 0);
		for (int w = 0; w < 3; w++)
			inject(contrib_f32(33, 1, 0, W3[w], 0, 0, el, ce));
		poll_all();
		n = collect(o, 64);
		CU_ASSERT(n == 3);
		CU_ASSERT(ctr(DP_CTR_CONTRIBS) == 3 && ctr(DP_CTR_BAD_FRAME) == 0);
		CU_ASSERT(ctr(DP_CTR_FAULT_CORRUPTED) == 3);
		for (int i = 0; i < n && i < 64; i++) {
			int k = wrong_elems(&o[i], ce);

			CU_ASSERT(o[i].p.type == WIRE_TYPE_RESULT);
			/* RX: the three flips are in the sum (two may share an element); TX: one
			 * per copy. */
			CU_ASSERT(dir == DP_RX ? k >= 1 && k <= 3 : k == 1);
			if (dir == DP_RX && i > 0)
				CU_ASSERT(memcmp(o[i].frame + WIRE_FRAME_PAYLOAD_OFF,
						 o[0].frame + WIRE_FRAME_PAYLOAD_OFF, 4 * ce) == 0);
		}
		dp_down();
	}
}

/* One run of 512 single-worker chunks through RX faults f with fault seed `seed`: which
 * chunks were lost (their RESULT never came), and the number of runs of losses. */
static unsigned int
ge_run(const struct dp_fault *f, uint64_t seed, bool lost[512], unsigned int *runs)
{
	const uint64_t el = 64 * 512;
	const uint32_t ce = 64;
	static const uint16_t w1[] = {11};
	struct tdesc td = {0, 0, 0, {0}, 0, 512, 512, {0}};
	static struct out o[64];
	unsigned int n_lost = 0;

	faults[DP_RX] = *f;
	fault_seed = seed;
	CU_ASSERT_FATAL(dp_up(rte_get_main_lcore()) == 0);
	faults[DP_RX] = (struct dp_fault){0};
	fault_seed = 0;
	CU_ASSERT_FATAL(install(mk_table(32, 1, 1, TABLE_DTYPE_FP32, el, ce, 1, w1, 1, &td),
				"install") == 0);
	for (uint32_t c = 0; c < 512; c++)
		lost[c] = true;
	for (uint32_t c = 0; c < 512; c += 32) {
		for (uint32_t i = c; i < c + 32; i++)
			inject(contrib_f32(32, 1, 0, 11, 0, i, el, ce));
		poll_all();
		int n = collect(o, 64);

		for (int i = 0; i < n && i < 64; i++) {
			CU_ASSERT(o[i].p.type == WIRE_TYPE_RESULT &&
				  out_f32(&o[i], 3) == val(11, (uint64_t)o[i].p.chunk * ce + 3));
			if (o[i].p.chunk < 512)
				lost[o[i].p.chunk] = false;
		}
	}
	*runs = 0;
	for (uint32_t c = 0; c < 512; c++) {
		n_lost += lost[c];
		*runs += lost[c] && (c == 0 || !lost[c - 1]);
	}
	CU_ASSERT(ctr(DP_CTR_FAULT_DROPPED) == n_lost);
	dp_down();
	return n_lost;
}

/* Bursty loss (a Gilbert-Elliott channel): losses come in runs, at about the mean the
 * parameters give, and the same seed loses the same frames. */
static void
test_faults_bursty(void)
{
	/* Good -> bad 2%, bad -> good 25%: mean loss 0.02 / 0.27 = 7.4%, runs of 4. */
	struct dp_fault ge = {.on = true,
			      .ge = true,
			      .ge_p = UINT32_MAX / 50,
			      .ge_r = UINT32_MAX / 4,
			      .ge_h = UINT32_MAX,
			      .ge_k = 0};
	static bool a[512], b[512], c[512];
	unsigned int ra, rb, rc;
	unsigned int na = ge_run(&ge, 7, a, &ra);
	unsigned int nb = ge_run(&ge, 7, b, &rb);
	unsigned int nc = ge_run(&ge, 8, c, &rc);

	/* 38 expected of 512: far from 0 and from a third. */
	CU_ASSERT(na > 8 && na < 170);
	CU_ASSERT(nc > 8 && nc < 170);
	/* In runs: independent losses at 7.4% would give about 0.93 runs per loss. */
	CU_ASSERT(ra * 3 < na * 2);
	CU_ASSERT(rc * 3 < nc * 2);
	CU_ASSERT(na == nb && ra == rb && memcmp(a, b, sizeof(a)) == 0);
	CU_ASSERT(memcmp(a, c, sizeof(a)) != 0);
	(void)nb;
}

/* Pacing: a leaf whose tree runs at 8 Mbit/s sends its partial sums no faster: after
 * the burst allowance the rest wait in the pacer and leave as their time comes. */
static void
test_pacing(void)
{
	const uint32_t ce = 256, nch = 64; /* 1 KiB payloads, 1.1 KB frames */
	const uint64_t el = (uint64_t)ce * nch;
	static const uint16_t w1[] = {21};
	struct tdesc td = {0, 4, 0, {0}, 0, nch, 64, {0}};
	static struct out o[128];
	struct table *tb = mk_table(50, 1, 2, TABLE_DTYPE_FP32, el, ce, 1, w1, 1, &td);
	int first, total;

	tb->trees[0].rate_gbps = 0.008; /* 1 MB/s: a 1.1 KB frame per 1.1 ms */
	CU_ASSERT_FATAL(dp_up(rte_get_main_lcore()) == 0);
	CU_ASSERT_FATAL(install(tb, "install") == 0);
	uint64_t t0 = rte_get_timer_cycles();

	for (uint32_t c = 0; c < nch; c++)
		inject(contrib_f32(50, 1, 0, 21, 0, c, el, ce));
	poll_all();
	first = collect(o, 128);
	/* The burst allowance (16 KiB) lets about 14 frames go at once, not 64; the rest
	 * wait in the pacer. A machine slow enough to take milliseconds over these polls
	 * (a sanitizer build beside other work) gives the bucket that much more credit: one
	 * frame more per 1.1 ms, which either left unpaced or left the pacer already. */
	double took = (double)(rte_get_timer_cycles() - t0) / (double)rte_get_timer_hz();
	int extra = (int)(took * 1e6 / 1100.0) + 1;

	CU_ASSERT(first >= 10 && first <= 20 + extra);
	CU_ASSERT(ctr(DP_CTR_PACED) >= nch - (uint64_t)first);
	CU_ASSERT(ctr(DP_CTR_PACED) + 20 + (uint64_t)extra >= nch);
	if (first > 20 || ctr(DP_CTR_PACED) != nch - (uint64_t)first)
		fprintf(stderr, "pacing: %d frames at once, %" PRIu64 " paced, %.4f s\n", first,
			ctr(DP_CTR_PACED), took);
	total = first;
	/* Count first transmissions only: past the RTO (20 ms here) the timers ask the
	 * parent for the partial sums still without a RESULT (NACK_RESULT), then resend them
	 * through the same pacer, and on a loaded machine one poll may release two frames at
	 * once. */
	while (total < (int)nch && rte_get_timer_cycles() - t0 < 20 * rte_get_timer_hz()) {
		dp_worker_poll(dp.lcores[0]);
		int n = collect(o, 128);

		for (int k = 0; k < n && k < 128; k++)
			total += o[k].p.type == WIRE_TYPE_CONTRIB && !(o[k].p.flags & WIRE_F_RETX);
	}
	double s = (double)(rte_get_timer_cycles() - t0) / (double)rte_get_timer_hz();

	CU_ASSERT(total == (int)nch);
	/* (64 - 14) frames of ~1.1 KB at 1 MB/s: about 55 ms, surely more than 40. */
	CU_ASSERT(s > 0.040);
	if (s <= 0.040 || total != (int)nch)
		fprintf(stderr, "pacing: %d frames in %.3f s\n", total, s);
	dp_down();
}

/* A draining epoch whose slots are done but whose pacers still hold RESULT copies for a
 * child gateway is retired only once they have left: they are the only copies. */
static void
test_retire_after_pacers(void)
{
	const uint32_t ce = 256, nch = 48; /* 1 KiB payloads */
	const uint64_t el = (uint64_t)ce * nch;
	static const uint16_t w1[] = {21};
	struct tdesc td = {0, 0, 1, {3}, 0, nch, 64, {1}};
	static struct out o[128];
	struct table *tb = mk_table(51, 1, 1, TABLE_DTYPE_FP32, el, ce, 1, w1, 1, &td);
	const struct dp_state *st;
	int to_child = 0, n;

	tb->trees[0].rate_gbps = 0.008; /* a 1.1 KB frame per 1.1 ms */
	CU_ASSERT_FATAL(dp_up(rte_get_main_lcore()) == 0);
	CU_ASSERT_FATAL(install(tb, "install") == 0);
	for (uint32_t c = 0; c < nch; c++) {
		inject(contrib_f32(51, 1, 0, 21, 0, c, el, ce));
		inject(contrib_f32(51, 1, 0, 3, 0, c, el, ce));
	}
	poll_all();
	n = collect(o, 128);
	for (int k = 0; k < n && k < 128; k++)
		to_child += o[k].p.type == WIRE_TYPE_RESULT && o[k].fl.dst_ip == PEER_IP(3);
	CU_ASSERT(to_child < (int)nch); /* the rest wait in the child's pacer */
	tb = mk_table(51, 2, 1, TABLE_DTYPE_FP32, el, ce, 1, w1, 1, &td);
	tb->trees[0].rate_gbps = 0.008;
	CU_ASSERT_FATAL(install(tb, "install") == 0);
	dp_housekeeping(&dp);
	st = atomic_load(&dp.state);
	CU_ASSERT(st->jobs[0].n_epochs == 2); /* done slots, but frames waiting */
	uint64_t t0 = rte_get_timer_cycles();

	while (to_child < (int)nch && rte_get_timer_cycles() - t0 < 10 * rte_get_timer_hz()) {
		dp_worker_poll(dp.lcores[0]);
		n = collect(o, 128);
		for (int k = 0; k < n && k < 128; k++)
			to_child += o[k].p.type == WIRE_TYPE_RESULT && o[k].fl.dst_ip == PEER_IP(3);
	}
	CU_ASSERT(to_child == (int)nch);
	dp_worker_poll(dp.lcores[0]); /* the drained pacer leaves its list */
	dp_housekeeping(&dp);
	st = atomic_load(&dp.state);
	CU_ASSERT(st->jobs[0].n_epochs == 1 && st->jobs[0].epochs[0]->epoch == 2);
	dp_down();
}

/* A RESULT's copies share one indirect segment of its payload: each copy is a header mbuf
 * chained to it, holding one reference. A copy that cannot go (a worker whose neighbour is
 * unresolved) gives its reference back; once the copies are freed and the job is gone,
 * every header and indirect mbuf is back in its pool. */
static void
test_fanout_shared_segment(void)
{
	const uint32_t ce = 64, nch = 8;
	const uint64_t el = (uint64_t)ce * nch;
	static const uint16_t w3[] = {11, 12, 45};
	struct tdesc td = {0, 0, 0, {0}, 0, nch, 16, {0}};
	struct rte_mbuf *m[32];
	int bad = 0;

	/* 45 at 10.0.5.45, behind router 10.0.0.50 (no static neighbour, never answers):
	 * its frames come from its own address but its RESULTs go through the router, which
	 * stays unresolved. */
	n_routes = 1;
	routes[0] = (struct dp_route){.dst = 0x0a000500u, .prefix_len = 24, .via = PEER_IP(50)};
	CU_ASSERT_FATAL(dp_up(rte_get_main_lcore()) == 0);
	n_routes = 0;
	struct table *tb = mk_table(52, 1, 1, TABLE_DTYPE_FP32, el, ce, 3, w3, 1, &td);

	tb->trees[0].workers[2].ipv4 = 0x0a00052du;
	CU_ASSERT_FATAL(install(tb, "install") == 0);
	for (uint32_t c = 0; c < nch; c++)
		for (int w = 0; w < 3; w++) {
			spoof = (typeof(spoof)){w3[w] == 45, 0x0a00052du, WORKER_PORT, 0};
			inject(contrib_f32(52, 1, 0, w3[w], 0, c, el, ce));
		}
	spoof.on = false;
	poll_all();
	unsigned int n = rte_ring_dequeue_burst(tx_ring, (void **)m, 32, NULL);

	CU_ASSERT(n == 2 * nch);
	CU_ASSERT(ctr(DP_CTR_RESULTS_SENT) == 2 * nch);
	CU_ASSERT(ctr(DP_CTR_NO_NEIGHBOUR) == nch);
	for (unsigned int i = 0; i + 1 < n; i += 2) {
		struct rte_mbuf *seg = m[i]->next;
		uint8_t f[2048];

		/* Workers 11 and 12 of one chunk: one segment, two references. */
		bad += m[i]->nb_segs != 2 || seg == NULL || m[i + 1]->next != seg ||
		       rte_mbuf_refcnt_read(seg) != 2 || !RTE_MBUF_CLONED(seg) ||
		       rte_pktmbuf_pkt_len(m[i]) != WIRE_FRAME_PAYLOAD_OFF + 4 * ce;
		const uint8_t *d = rte_pktmbuf_read(m[i], 0, rte_pktmbuf_pkt_len(m[i]), f);
		struct wire_pkt p;
		size_t off, plen;

		if (d == NULL ||
		    wire_frame_parse(d, rte_pktmbuf_pkt_len(m[i]), NULL, &off, &plen, NULL) != 0 ||
		    wire_hdr_decode(d + off, plen, &p, NULL) != 0) {
			bad++;
			continue;
		}
		for (uint32_t e = 0; e < ce; e++) {
			float v;
			uint64_t x = (uint64_t)p.chunk * ce + e;

			memcpy(&v, d + off + p.payload_off + 4 * e, sizeof(v));
			bad += v != val(11, x) + val(12, x) + val(45, x);
		}
	}
	CU_ASSERT(bad == 0);
	rte_pktmbuf_free_bulk(m, n);
	CU_ASSERT(call_errno("{\"version\":1,\"id\":1,\"op\":\"remove\",\"job\":52}") == 0);
	rte_delay_us_sleep(1000 * (dp.prm.drain_ms + 10));
	dp_housekeeping(&dp);
	CU_ASSERT(atomic_load(&dp.state)->n_jobs == 0);
	CU_ASSERT(rte_mempool_in_use_count(tpool) == 0);
	poll_all(); /* the ARP requests for the router go out: free them */
	while (rte_ring_dequeue(tx_ring, (void **)&m[0]) == 0) {
		CU_ASSERT(rte_pktmbuf_mtod(m[0], struct rte_ether_hdr *)->ether_type ==
			  rte_cpu_to_be_16(RTE_ETHER_TYPE_ARP));
		rte_pktmbuf_free(m[0]);
	}
	const struct dp_lcore *lc = dp.lcores[0];

	CU_ASSERT(rte_mempool_in_use_count(lc->hdr_pool) ==
		  lc->hdr_stash.tail - lc->hdr_stash.head);
	CU_ASSERT(rte_mempool_in_use_count(lc->clone_pool) ==
		  lc->clone_stash.tail - lc->clone_stash.head);
	dp_down();
}

int
main(int argc, char **argv)
{
	CU_pSuite s = dp_fixture_init(argc, argv, "test_dp_tx");

	if (s == NULL)
		return 1;
	CU_add_test(s, "fault injection", test_faults);
	CU_add_test(s, "fault injection: bursty loss from a seed", test_faults_bursty);
	CU_add_test(s, "fault injection: corrupted payloads", test_fault_corrupt);
	CU_add_test(s, "pacing at the planned rate", test_pacing);
	CU_add_test(s, "a draining epoch waits for its pacers", test_retire_after_pacers);
	CU_add_test(s, "a RESULT's copies share one payload segment", test_fanout_shared_segment);
	return dp_fixture_run();
}
