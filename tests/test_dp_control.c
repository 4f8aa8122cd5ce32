/* SPDX-License-Identifier: BSD-3-Clause
 *
 * EAL tests of the dataplane's control thread (dataplane/slowpath): control requests,
 * malformed ones refused, tables prepared, activated and removed within the mbuf budget,
 * routes, and epochs swapped under traffic.
 *
 * The main thread plays the worker lcore (dp_worker_poll, dp_fixture.c), but in the
 * epoch-swap test: there the real worker loop runs on lcore 1 while the main thread
 * injects traffic and swaps tables.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <CUnit/CUnit.h>
#include <jansson.h>
#include <rte_cycles.h>
#include <rte_ip.h>
#include <rte_launch.h>
#include <rte_lcore.h>
#include <rte_mbuf.h>
#include <rte_udp.h>

#include "dp.h"
#include "dp_fixture.h"
#include "slowpath/slowpath.h"
#include "table.h"
#include "wire.h"

/* Routes: a worker beyond a router (--route via), one on a directly attached prefix
 * (--route port, resolved by ARP), the longest prefix winning, no route at all. */
static void
test_routes(void)
{
	const uint64_t el = 64;
	const uint32_t ce = 64;
	struct tdesc td = {0, 0, 0, {0}, 0, 1, 16, {0}};
	static const uint16_t wk[] = {11, 12};
	static struct out o[16];
	struct table *tb;

	routes[0] = (struct dp_route){.dst = 0x0a050000, .prefix_len = 16, .via = PEER_IP(9)};
	routes[1] = (struct dp_route){.dst = 0x0a050700, .prefix_len = 24, .via = PEER_IP(8)};
	routes[2] = (struct dp_route){.dst = 0x0a060000, .prefix_len = 16, .port = 0};
	n_routes = 3;
	CU_ASSERT_FATAL(dp_up(rte_get_main_lcore()) == 0);
	n_routes = 0;
	CU_ASSERT(dp.n_routes == 3 && dp.routes[0].port == 0);
	/* Worker 11 at 10.5.1.1 (via .9), worker 12 at 10.5.7.1 (the /24 wins: via .8). */
	tb = mk_table(20, 1, 1, TABLE_DTYPE_FP32, el, ce, 2, wk, 1, &td);
	tb->trees[0].workers[0].ipv4 = 0x0a050101;
	tb->trees[0].workers[1].ipv4 = 0x0a050701;
	CU_ASSERT_FATAL(install(tb, "install") == 0);
	for (int w = 0; w < 2; w++) {
		struct rte_mbuf *m = contrib_f32(20, 1, 0, wk[w], 0, 0, el, ce);
		struct rte_ipv4_hdr *ip = rte_pktmbuf_mtod_offset(m, struct rte_ipv4_hdr *, 14);

		ip->src_addr = rte_cpu_to_be_32(w == 0 ? 0x0a050101 : 0x0a050701);
		ip->hdr_checksum = 0;
		ip->hdr_checksum = rte_ipv4_cksum(ip);
		rte_pktmbuf_mtod_offset(m, struct rte_udp_hdr *, 34)->dgram_cksum = 0;
		inject(m);
	}
	poll_all();
	int n = collect(o, 16);

	CU_ASSERT_FATAL(n == 2);
	for (int i = 0; i < n; i++) {
		bool first = o[i].fl.dst_ip == 0x0a050101;

		CU_ASSERT(o[i].fl.dst_mac[5] == (first ? 9 : 8));
		CU_ASSERT(o[i].fl.dst_ip == (first ? 0x0a050101u : 0x0a050701u));
	}
	/* 10.6.0.5 is on port 0 directly: its own neighbour entry, resolved by ARP. */
	tb = mk_table(21, 1, 1, TABLE_DTYPE_FP32, el, ce, 2, wk, 1, &td);
	tb->trees[0].workers[0].ipv4 = 0x0a060005;
	CU_ASSERT(install(tb, "install") == 0);
	dp_housekeeping(&dp);
	poll_all();
	dp_worker_poll(dp.lcores[0]);
	n = collect(o, 16);
	CU_ASSERT(n == 1 && o[0].frame[12] == 0x08 && o[0].frame[13] == 0x06);
	/* 10.7.0.1: no route. */
	tb = mk_table(22, 1, 1, TABLE_DTYPE_FP32, el, ce, 2, wk, 1, &td);
	tb->trees[0].workers[0].ipv4 = 0x0a070001;
	CU_ASSERT(install(tb, "install") == EINVAL);
	dp_down();
}

/* Control requests: malformed ones get an error and change nothing. */
static void
test_control(void)
{
	struct tdesc td = {0, 0, 0, {0}, 0, 4, 16, {0}};

	CU_ASSERT_FATAL(dp_up(rte_get_main_lcore()) == 0);
	CU_ASSERT(call_errno("{\"version\":1,\"id\":1,\"op\":\"ping\"}") == 0);
	CU_ASSERT(call_errno("{\"version\":2,\"id\":1,\"op\":\"ping\"}") == EPROTONOSUPPORT);
	CU_ASSERT(call_errno("{\"version\":1,\"id\":1,\"op\":\"fly\"}") == EOPNOTSUPP);
	/* No port of this dataplane has a delay line to change. */
	CU_ASSERT(call_errno("{\"version\":1,\"id\":1,\"op\":\"delay\",\"port\":0,"
			     "\"delay_ms\":5}") == ENOENT);
	CU_ASSERT(call_errno("{\"version\":1,\"op\":\"ping\"}") == EINVAL);
	CU_ASSERT(call_errno("{\"version\":1,\"id\":1,\"op\":\"ping\",\"x\":1}") == EINVAL);
	CU_ASSERT(call_errno("{\"version\":1,\"id\":1,\"op\":\"install\"}") == EINVAL);
	CU_ASSERT(call_errno("{\"version\":1,\"id\":1,\"op\":\"install\",\"table\":{}}") == EINVAL);
	CU_ASSERT(
		call_errno("{\"version\":1,\"id\":1,\"op\":\"activate\",\"job\":5,\"epoch\":1}") ==
		ENOENT);
	CU_ASSERT(call_errno("{\"version\":1,\"id\":1,\"op\":\"activate\",\"job\":5}") == EINVAL);
	CU_ASSERT(call_errno("{\"version\":1,\"id\":1,\"op\":\"activate\",\"table\":{}}") ==
		  EINVAL);
	CU_ASSERT(call_errno("{\"version\":1,\"id\":1,\"op\":\"prepare\",\"job\":5,"
			     "\"epoch\":1}") == EINVAL);
	CU_ASSERT(call_errno("{\"version\":1,\"id\":1,\"op\":\"remove\",\"job\":5}") == ENOENT);
	CU_ASSERT(call_errno("{\"version\":1,\"id\":1,\"op\":\"dump\",\"job\":-1}") == EINVAL);
	/* A table for another gateway address, and chunks too big for the MTU. */
	struct table *tb = mk_table(5, 1, 1, TABLE_DTYPE_FP32, 256, 64, 3, W3, 1, &td);

	tb->gw.ipv4 = PEER_IP(9);
	CU_ASSERT(install(tb, "install") == EINVAL);
	tb = mk_table(5, 1, 1, TABLE_DTYPE_FP32, 8192, 2048, 3, W3, 1, &td);
	CU_ASSERT(install(tb, "install") == E2BIG);
	/* Slot pools beyond the mbuf budget. */
	td.slots = 4096;
	tb = mk_table(5, 1, 1, TABLE_DTYPE_FP32, 256, 64, 3, W3, 1, &td);
	tb->trees[0].slots = 4096;
	tb->limits.max_slots = 4096;
	td.slots = 16;
	/* 4096 slots fit the budget of 16384 mbufs less what queues and caches hold. */
	CU_ASSERT(install(tb, "prepare") == 0);
	CU_ASSERT(dp.mbufs_committed == 2 * 4096); /* two packets per slot at most */
	/* Nothing live yet: prepared only. */
	CU_ASSERT(atomic_load(&dp.state) == NULL);
	CU_ASSERT(
		call_errno("{\"version\":1,\"id\":1,\"op\":\"activate\",\"job\":5,\"epoch\":1}") ==
		0);
	CU_ASSERT(install(mk_table(5, 1, 1, TABLE_DTYPE_FP32, 256, 64, 3, W3, 1, &td), "install") ==
		  EEXIST);
	CU_ASSERT(install(mk_table(5, 0, 1, TABLE_DTYPE_FP32, 256, 64, 3, W3, 1, &td), "install") ==
		  ESTALE);
	json_t *d = call("{\"version\":1,\"id\":1,\"op\":\"dump\"}");

	CU_ASSERT(json_array_size(json_object_get(d, "tables")) == 1);
	json_decref(d);
	/* Epoch 2 goes live, epoch 1 drains (no open slots) and is freed by housekeeping. */
	CU_ASSERT(install(mk_table(5, 2, 1, TABLE_DTYPE_FP32, 256, 64, 3, W3, 1, &td), "install") ==
		  0);
	const struct dp_state *st = atomic_load(&dp.state);

	CU_ASSERT(st->n_jobs == 1 && st->jobs[0].n_epochs == 2);
	dp_housekeeping(&dp);
	st = atomic_load(&dp.state);
	CU_ASSERT(st->n_jobs == 1 && st->jobs[0].n_epochs == 1 &&
		  st->jobs[0].epochs[0]->epoch == 2);
	CU_ASSERT(dp.mbufs_committed == 2 * 16);
	json_t *s = call("{\"version\":1,\"id\":1,\"op\":\"stats\"}");

	CU_ASSERT(json_is_array(json_object_get(s, "lcores")));
	CU_ASSERT(json_integer_value(json_object_get(json_object_get(s, "memory"),
						     "mbufs_committed")) == 2 * 16);
	json_decref(s);
	CU_ASSERT(call_errno("{\"version\":1,\"id\":1,\"op\":\"remove\",\"job\":5}") == 0);
	dp_housekeeping(&dp);
	st = atomic_load(&dp.state);
	CU_ASSERT(st != NULL && st->n_jobs == 0);
	CU_ASSERT(dp.mbufs_committed == 0);
	dp_down();
}

/* Leadership terms (docs/CONTROL.md, "Terms of replicated control processes"): a term
 * below the newest seen refused and counted, bad ones refused, none carried out. */
static void
test_terms(void)
{
	CU_ASSERT_FATAL(dp_up(rte_get_main_lcore()) == 0);
	/* Checked before the op: term 5 is seen although there is no job 5 to remove. */
	CU_ASSERT(call_errno("{\"version\":1,\"id\":1,\"op\":\"remove\",\"job\":5,"
			     "\"term\":5}") == ENOENT);
	CU_ASSERT(dp.ctl_term == 5);
	CU_ASSERT(call_errno("{\"version\":1,\"id\":1,\"op\":\"activate\",\"job\":5,"
			     "\"epoch\":1,\"term\":3}") == ESTALE);
	CU_ASSERT(call_errno("{\"version\":1,\"id\":1,\"op\":\"prepare\",\"table\":{},"
			     "\"term\":4}") == ESTALE);
	CU_ASSERT(dp.ctl_stale_terms == 2);
	CU_ASSERT(call_errno("{\"version\":1,\"id\":1,\"op\":\"remove\",\"job\":5,"
			     "\"term\":\"6\"}") == EINVAL);
	CU_ASSERT(call_errno("{\"version\":1,\"id\":1,\"op\":\"remove\",\"job\":5,"
			     "\"term\":0}") == EINVAL);
	/* The same term again, a newer one, and none at all: carried out. */
	CU_ASSERT(call_errno("{\"version\":1,\"id\":1,\"op\":\"activate\",\"job\":5,"
			     "\"epoch\":1,\"term\":5}") == ENOENT);
	CU_ASSERT(call_errno("{\"version\":1,\"id\":1,\"op\":\"activate\",\"job\":5,"
			     "\"epoch\":1,\"term\":7}") == ENOENT);
	CU_ASSERT(call_errno("{\"version\":1,\"id\":1,\"op\":\"remove\",\"job\":5}") == ENOENT);
	/* A term on an op that changes no table is an unknown field. */
	CU_ASSERT(call_errno("{\"version\":1,\"id\":1,\"op\":\"ping\",\"term\":9}") == EINVAL);
	json_t *s = call("{\"version\":1,\"id\":1,\"op\":\"stats\"}");

	CU_ASSERT(json_integer_value(json_object_get(s, "control_term")) == 7);
	CU_ASSERT(json_integer_value(json_object_get(s, "stale_terms_refused")) == 2);
	json_decref(s);
	dp_down();
}

/* The newest term is kept in a file (--term-file): a dataplane restarted on it still
 * refuses an older term; a file that holds no term stops the start; a term that cannot be
 * written is refused, not acted on. */
static void
test_terms_kept(void)
{
	char dir[] = "/tmp/test_dp_termXXXXXX", path[256], err[256];
	FILE *f;

	CU_ASSERT_FATAL(mkdtemp(dir) != NULL);
	snprintf(path, sizeof(path), "%s/gw.sock", dir);
	CU_ASSERT_FATAL(dp_up(rte_get_main_lcore()) == 0);
	CU_ASSERT(dp_term_load(&dp, NULL, path, err, sizeof(err)) == 0 && dp.ctl_term == 0);
	CU_ASSERT(call_errno("{\"version\":1,\"id\":1,\"op\":\"remove\",\"job\":5,"
			     "\"term\":12}") == ENOENT);
	dp_down();
	snprintf(path, sizeof(path), "%s/gw.sock.term", dir);
	f = fopen(path, "r");
	CU_ASSERT(f != NULL && fgetc(f) == '1' && fgetc(f) == '2' && fgetc(f) == '\n');
	if (f != NULL)
		fclose(f);
	/* Restarted: term 12 from the file, 11 refused. */
	CU_ASSERT_FATAL(dp_up(rte_get_main_lcore()) == 0);
	CU_ASSERT(dp.ctl_term == 0);
	CU_ASSERT(dp_term_load(&dp, path, NULL, err, sizeof(err)) == 0 && dp.ctl_term == 12);
	CU_ASSERT(call_errno("{\"version\":1,\"id\":1,\"op\":\"activate\",\"job\":5,"
			     "\"epoch\":1,\"term\":11}") == ESTALE);
	/* A file of another kind, an empty one, a term 0: the start stops, saying why. */
	static const char *const bad[] = {"twelve\n", "", "0\n", "12", "99999999999999999999\n"};

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		f = fopen(path, "w");
		CU_ASSERT_FATAL(f != NULL);
		fputs(bad[i], f);
		fclose(f);
		CU_ASSERT(dp_term_load(&dp, path, NULL, err, sizeof(err)) == -EINVAL &&
			  strstr(err, "not a leadership term") != NULL);
	}
	/* "none": memory only. A file that cannot be written: the newer term is refused. */
	CU_ASSERT(dp_term_load(&dp, "none", NULL, err, sizeof(err)) == 0);
	dp.ctl_term = 12;
	snprintf(path, sizeof(path), "%s/no/such/dir/term", dir);
	CU_ASSERT(dp_term_load(&dp, path, NULL, err, sizeof(err)) == 0);
	CU_ASSERT(call_errno("{\"version\":1,\"id\":1,\"op\":\"remove\",\"job\":5,"
			     "\"term\":13}") == EIO);
	CU_ASSERT(dp.ctl_term == 12);
	dp.ctl_term_file[0] = '\0';
	dp_down();
	snprintf(path, sizeof(path), "rm -rf %s", dir);
	CU_ASSERT(system(path) == 0);
}

/* The real worker loop on lcore 1; the main thread swaps epochs mid-round. */
static void
wait_rx(uint64_t n)
{
	uint64_t t = rte_get_timer_cycles() + 5 * rte_get_timer_hz();

	while (__atomic_load_n(&dp.lcores[0]->ctr[DP_CTR_RX_PACKETS], __ATOMIC_RELAXED) < n &&
	       rte_get_timer_cycles() < t)
		rte_delay_us_sleep(100);
}

static void
test_epoch_swap_under_traffic(void)
{
	const uint64_t el = 64 * 64;
	const uint32_t ce = 64, nch = 64;
	struct tdesc td = {0, 0, 0, {0}, 0, nch, 64, {0}};
	static struct out o[1024];
	unsigned int worker = rte_get_next_lcore(rte_get_main_lcore(), 1, 0);
	uint64_t sent = 0;

	if (worker >= RTE_MAX_LCORE) {
		fprintf(stderr, "epoch swap: needs a second lcore, skipped\n");
		return;
	}
	CU_ASSERT_FATAL(dp_up(worker) == 0);
	CU_ASSERT_FATAL(install(mk_table(12, 1, 1, TABLE_DTYPE_FP32, el, ce, 3, W3, 1, &td),
				"install") == 0);
	CU_ASSERT_FATAL(rte_eal_remote_launch(dp_worker_main, dp.lcores[0], worker) == 0);
	/* Round 0 under epoch 1: two of three workers. */
	for (uint32_t c = 0; c < nch; c++) {
		inject(contrib_f32(12, 1, 0, 11, 0, c, el, ce));
		inject(contrib_f32(12, 1, 0, 12, 0, c, el, ce));
		sent += 2;
	}
	wait_rx(sent);
	/* Epoch 2 goes live while round 0 is open under epoch 1. */
	CU_ASSERT(install(mk_table(12, 2, 1, TABLE_DTYPE_FP32, el, ce, 3, W3, 1, &td), "install") ==
		  0);
	/* The third worker finishes round 0 under epoch 1 (draining); a round-1 chunk under
	 * epoch 1 opens nothing (stale); round 1 runs under epoch 2. */
	for (uint32_t c = 0; c < nch; c++) {
		inject(contrib_f32(12, 1, 0, 13, 0, c, el, ce));
		sent++;
	}
	inject(contrib_f32(12, 1, 0, 11, 1, 0, el, ce));
	sent++;
	for (int w = 0; w < 3; w++)
		for (uint32_t c = 0; c < nch; c++) {
			inject(contrib_f32(12, 2, 0, W3[w], 1, c, el, ce));
			sent++;
		}
	wait_rx(sent);
	rte_delay_us_sleep(20000);
	atomic_store(&dp.stop, true);
	rte_eal_wait_lcore(worker);
	int n = collect(o, 1024), bad = 0, per_epoch[3] = {0};

	CU_ASSERT(n == 2 * 3 * (int)nch);
	for (int i = 0; i < n && i < 1024; i++) {
		uint32_t c = o[i].p.chunk;

		if (o[i].p.epoch <= 2)
			per_epoch[o[i].p.epoch]++;
		bad += (o[i].p.round == 0) != (o[i].p.epoch == 1);
		for (uint32_t e = 0; e < o[i].p.count; e++) {
			uint64_t x = (uint64_t)c * ce + e;

			bad += out_f32(&o[i], e) != val(11, x) + val(12, x) + val(13, x);
		}
	}
	CU_ASSERT(bad == 0);
	CU_ASSERT(per_epoch[1] == 3 * (int)nch && per_epoch[2] == 3 * (int)nch);
	CU_ASSERT(drops(WIRE_REASON_EPOCH_STALE) == 1);
	/* Epoch 1 has drained: housekeeping retires it. */
	dp_housekeeping(&dp);
	const struct dp_state *st = atomic_load(&dp.state);

	CU_ASSERT(st->jobs[0].n_epochs == 1 && st->jobs[0].epochs[0]->epoch == 2);
	dp_down();
}

int
main(int argc, char **argv)
{
	CU_pSuite s = dp_fixture_init(argc, argv, "test_dp_control");

	if (s == NULL)
		return 1;
	CU_add_test(s, "routes", test_routes);
	CU_add_test(s, "control requests", test_control);
	CU_add_test(s, "leadership terms", test_terms);
	CU_add_test(s, "leadership terms kept across a restart", test_terms_kept);
	CU_add_test(s, "epoch swap under traffic", test_epoch_swap_under_traffic);
	return dp_fixture_run();
}
