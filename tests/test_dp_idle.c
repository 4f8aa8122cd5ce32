/* SPDX-License-Identifier: BSD-3-Clause
 *
 * EAL tests of the worker lcore loop (dataplane/lcore/loop.c) and its idle modes: an lcore
 * that went to sleep answers the first CONTRIB of a round and completes the round, and
 * again after a second pause; with partial sums awaiting their RESULT a sleeping lcore still
 * retransmits them; --idle poll never sleeps; --idle intr on a port without Rx interrupts
 * (net_ring) sleeps instead; the mode names parse and bad ones are refused.
 *
 * The real worker loop runs on lcore 1 while the main thread injects frames and reads the
 * counters. Every check counts events (sleeps, frames, sums); none measures a duration.
 */
#include <stdio.h>

#include <CUnit/CUnit.h>
#include <rte_cycles.h>
#include <rte_launch.h>
#include <rte_lcore.h>

#include "dp.h"
#include "dp_fixture.h"
#include "slowpath/slowpath.h"
#include "table.h"
#include "wire.h"

#define CE 64     /* elements per chunk */
#define NCH 8     /* chunks per round */
#define WAIT_S 20 /* generous: the machine may be busy */

static uint64_t
rd(const uint64_t *p)
{
	return __atomic_load_n(p, __ATOMIC_RELAXED);
}

static unsigned int
worker_lcore(void)
{
	unsigned int w = rte_get_next_lcore(rte_get_main_lcore(), 1, 0);

	if (w >= RTE_MAX_LCORE)
		fprintf(stderr, "idle: needs a second lcore, skipped\n");
	return w;
}

/* Wait until the lcore has slept at least n more times than `from` and its sleeps reached
 * their longest (it is asleep for good, not between two polls of a round). */
static bool
wait_asleep(const struct dp_lcore *lc, uint64_t from, uint64_t n)
{
	uint64_t t = rte_get_timer_cycles() + WAIT_S * rte_get_timer_hz();

	while (rte_get_timer_cycles() < t) {
		if (rd(&lc->sleeps) >= from + n &&
		    __atomic_load_n(&lc->sleep_us, __ATOMIC_RELAXED) == dp.prm.idle_sleep_us)
			return true;
		rte_delay_us_sleep(1000);
	}
	return false;
}

/* Collect the frames the dataplane sent until there are n (or the time is up). */
static int
collect_n(struct out *o, int max, int n)
{
	uint64_t t = rte_get_timer_cycles() + WAIT_S * rte_get_timer_hz();
	int got = 0;

	while (got < n && rte_get_timer_cycles() < t) {
		got += collect(o + got, max - got);
		if (got < n)
			rte_delay_us_sleep(1000);
	}
	return got;
}

/* Round `round` from the three workers, every chunk; then its RESULTs, checked. */
static void
round_through(uint32_t round)
{
	static struct out o[4 * NCH];
	const uint64_t el = (uint64_t)CE * NCH;
	int n, bad = 0;

	for (int w = 0; w < 3; w++)
		for (uint32_t c = 0; c < NCH; c++)
			inject(contrib_f32(21, 1, 0, W3[w], round, c, el, CE));
	n = collect_n(o, 4 * NCH, 3 * NCH);
	CU_ASSERT(n == 3 * NCH);
	for (int i = 0; i < n; i++) {
		uint32_t c = o[i].p.chunk;

		bad += o[i].p.type != WIRE_TYPE_RESULT || o[i].p.round != round;
		for (uint32_t e = 0; e < o[i].p.count; e++) {
			uint64_t x = (uint64_t)c * CE + e;

			bad += out_f32(&o[i], e) != val(11, x) + val(12, x) + val(13, x);
		}
	}
	CU_ASSERT(bad == 0);
}

static void
stop_worker(unsigned int w)
{
	atomic_store(&dp.stop, true);
	rte_eal_wait_lcore(w);
}

/* Sleep, then the first CONTRIB of a round: answered, and the round completes; a second
 * pause and a second round the same. */
static void
test_sleep_then_round(void)
{
	struct tdesc td = {0, 0, 0, {0}, 0, NCH, 16, {0}};
	unsigned int w = worker_lcore();

	if (w >= RTE_MAX_LCORE)
		return;
	CU_ASSERT_FATAL(dp_up(w) == 0);
	struct dp_lcore *lc = dp.lcores[0];

	/* The default mode, intr, on a port without Rx interrupts: the adaptive sleep. */
	CU_ASSERT(dp.prm.idle_mode == DP_IDLE_INTR);
	CU_ASSERT(!dp.ports[0].rx_intr);
	CU_ASSERT(lc->idle_mode == DP_IDLE_SLEEP);
	CU_ASSERT_FATAL(
		install(mk_table(21, 1, 1, TABLE_DTYPE_FP32, (uint64_t)CE * NCH, CE, 3, W3, 1, &td),
			"install") == 0);
	CU_ASSERT_FATAL(rte_eal_remote_launch(dp_worker_main, lc, w) == 0);
	CU_ASSERT(wait_asleep(lc, 0, 20));
	uint64_t before = rd(&lc->sleeps);

	round_through(0);
	CU_ASSERT(rd(&lc->ctr[DP_CTR_CHUNKS_COMPLETED]) == NCH);
	/* Asleep again between the rounds, then round 1. */
	CU_ASSERT(wait_asleep(lc, before, 20));
	round_through(1);
	CU_ASSERT(rd(&lc->ctr[DP_CTR_CHUNKS_COMPLETED]) == 2 * NCH);
	stop_worker(w);
	CU_ASSERT(lc->slept_cycles > 0);
	/* Its stats say so. */
	json_t *s = call("{\"version\":1,\"id\":1,\"op\":\"stats\"}");
	json_t *l0 = json_array_get(json_object_get(s, "lcores"), 0);

	CU_ASSERT_STRING_EQUAL(json_string_value(json_object_get(l0, "idle_mode")), "sleep");
	CU_ASSERT(json_integer_value(json_object_get(l0, "sleeps")) == (json_int_t)lc->sleeps);
	CU_ASSERT(json_integer_value(json_object_get(l0, "sleep_us")) > 0);
	CU_ASSERT(json_integer_value(json_object_get(l0, "intr_wakeups")) == 0);
	json_decref(s);
	dp_down();
}

/* A child gateway's partial sum awaiting its RESULT from the parent: the sleeping lcore
 * still retransmits it when its timer runs out (the parent never answers). */
static void
test_sleep_keeps_timers(void)
{
	struct tdesc td = {0, 30, 0, {0}, 0, 1, 4, {0}};
	static struct out o[64];
	unsigned int w = worker_lcore();
	int n, up = 0;

	if (w >= RTE_MAX_LCORE)
		return;
	CU_ASSERT_FATAL(dp_up(w) == 0);
	struct dp_lcore *lc = dp.lcores[0];

	CU_ASSERT_FATAL(install(mk_table(22, 1, 1, TABLE_DTYPE_FP32, CE, CE, 3, W3, 1, &td),
				"install") == 0);
	CU_ASSERT_FATAL(rte_eal_remote_launch(dp_worker_main, lc, w) == 0);
	CU_ASSERT(wait_asleep(lc, 0, 20));
	for (int k = 0; k < 3; k++)
		inject(contrib_f32(22, 1, 0, W3[k], 0, 0, CE, CE));
	/* The partial sum, then at least two resends (the RTO is 20 ms at first). */
	uint64_t t = rte_get_timer_cycles() + WAIT_S * rte_get_timer_hz();

	while (up < 3 && rte_get_timer_cycles() < t) {
		n = collect(o, 64);
		for (int i = 0; i < n; i++)
			up += o[i].p.type == WIRE_TYPE_CONTRIB && o[i].fl.dst_ip == PEER_IP(30);
		rte_delay_us_sleep(1000);
	}
	stop_worker(w);
	CU_ASSERT(up >= 3);
	CU_ASSERT(lc->ctr[DP_CTR_RETRANSMITS] >= 2);
	CU_ASSERT(lc->sleeps > 20);
	dp_down();
}

/* --idle poll: the loop never sleeps, however long it is idle. */
static void
test_poll_never_sleeps(void)
{
	unsigned int w = worker_lcore();

	if (w >= RTE_MAX_LCORE)
		return;
	idle_mode = DP_IDLE_POLL;
	CU_ASSERT_FATAL(dp_up(w) == 0);
	idle_mode = DP_IDLE_INTR;
	struct dp_lcore *lc = dp.lcores[0];

	CU_ASSERT(lc->idle_mode == DP_IDLE_POLL);
	CU_ASSERT_FATAL(rte_eal_remote_launch(dp_worker_main, lc, w) == 0);
	uint64_t t = rte_get_timer_cycles() + WAIT_S * rte_get_timer_hz();

	/* Far past --idle-spin empty polls. */
	while (rd(&lc->iterations) < 100 * (uint64_t)dp.prm.idle_spin && rte_get_timer_cycles() < t)
		rte_delay_us_sleep(1000);
	stop_worker(w);
	CU_ASSERT(lc->iterations >= 100 * (uint64_t)dp.prm.idle_spin);
	CU_ASSERT(lc->sleeps == 0 && lc->slept_cycles == 0);
	dp_down();
}

/* The names of the modes, and bad ones. */
static void
test_mode_names(void)
{
	uint8_t m = 99;

	CU_ASSERT(dp_idle_mode_parse("poll", &m) == 0 && m == DP_IDLE_POLL);
	CU_ASSERT(dp_idle_mode_parse("sleep", &m) == 0 && m == DP_IDLE_SLEEP);
	CU_ASSERT(dp_idle_mode_parse("intr", &m) == 0 && m == DP_IDLE_INTR);
	m = 99;
	CU_ASSERT(dp_idle_mode_parse("", &m) == -1 && m == 99);
	CU_ASSERT(dp_idle_mode_parse("Poll", &m) == -1 && m == 99);
	CU_ASSERT(dp_idle_mode_parse("interrupt", &m) == -1 && m == 99);
	CU_ASSERT_STRING_EQUAL(dp_idle_mode_name(DP_IDLE_SLEEP), "sleep");
	CU_ASSERT_STRING_EQUAL(dp_idle_mode_name(7), "?");
}

int
main(int argc, char **argv)
{
	CU_pSuite s = dp_fixture_init(argc, argv, "test_dp_idle");

	if (s == NULL)
		return 1;
	CU_add_test(s, "a sleeping gateway answers the first CONTRIB of a round",
		    test_sleep_then_round);
	CU_add_test(s, "retransmission timers run while the lcore sleeps", test_sleep_keeps_timers);
	CU_add_test(s, "--idle poll never sleeps", test_poll_never_sleeps);
	CU_add_test(s, "idle mode names", test_mode_names);
	return dp_fixture_run();
}
