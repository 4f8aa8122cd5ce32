/* SPDX-License-Identifier: BSD-3-Clause
 *
 * Unit tests for georeduce-bench's certification arithmetic, which needs no DPDK: the
 * rates of bench/cert_rates.c against hand computations for 64, 1518 and 9018-byte frames
 * (the sizes counted with the FCS, as RFC 2544 counts them), and bad inputs; the zero-loss
 * search of bench/ndr.c against modelled devices with a known limit (one that drops above
 * it, one that pushes back), one that never loses, one that always does, and its bounds.
 * main returns the number of failures.
 */
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include <CUnit/Basic.h>
#include <CUnit/CUnit.h>

#include "ndr.h"
#include "cert_rates.h"
#include "testutil.h"

/* a and b agree to within rel of b (or 1e-12 when b is 0). */
static bool
near(double a, double b, double rel)
{
	return fabs(a - b) <= (b == 0 ? 1e-12 : fabs(b) * rel);
}

#define NEAR(a, b) CHECK(near((a), (b), 1e-9), "%s = %.9f, expected %.9f", #a, (a), (double)(b))

/* 64-byte frames (60 counted by the port, 10 bytes of payload each): one million in half a
 * second on 10 GbE. L1: 64 + 8 + 12 = 84 bytes a frame; line rate 10e9 / (84 x 8) =
 * 14.880952 Mpps. */
static void
test_rates_64(void)
{
	struct rates_in in = {1000000, 60 * 1000000ull, 10 * 1000000ull, 0.5, 10};
	struct rates r;

	CU_ASSERT_EQUAL(rates_compute(&in, &r), 0);
	NEAR(r.mpps, 2.0);                             /* 1e6 / 0.5 s */
	NEAR(r.l2_gbps, 1.024);                        /* 1e6 x 64 x 8 / 0.5 */
	NEAR(r.l1_gbps, 1.344);                        /* 1e6 x 84 x 8 / 0.5 */
	NEAR(r.payload_gbps, 0.16);                    /* 1e6 x 10 x 8 / 0.5 */
	NEAR(r.l1_pct, 13.44);                         /* 1.344 / 10 */
	NEAR(r.l2_pct, 10.24);                         /* 1.024 / 10 */
	NEAR(r.payload_pct, 1.6);                      /* 0.16 / 10 */
	NEAR(r.line_mpps, 10e9 / 672 / 1e6);           /* 14.880952 */
	NEAR(r.mpps_pct, 2.0 / (10e9 / 672 / 1e6) * 100); /* = l1_pct: 13.44 */
	NEAR(rates_line_mpps(10, 64), 14.880952380952381);
}

/* Frames at line rate, by hand:
 * - 1518 bytes (1514 counted, 1418 of payload): 812744 in one second on 10 GbE, the line
 *   rate to the frame (10e9 / (1538 x 8) = 812743.8 frames/s): L1 812744 x 1538 x 8, L2
 *   812744 x 1518 x 8, payload 812744 x 1418 x 8 bits;
 * - 9018-byte jumbo frames (9014 counted, 8918 of payload): 1383000 in one second on
 *   100 GbE, whose line rate is 100e9 / (9038 x 8) = 1383049.3 frames/s: L1 1383000 x
 *   9038 x 8, L2 1383000 x 9018 x 8, payload 1383000 x 8918 x 8 bits. */
static void
test_rates_large(void)
{
	static const struct {
		struct rates_in in;
		double mpps, l1, l2, pay, l1_pct, l2_pct, pay_pct, line_mpps;
	} v[] = {
		{{812744, 1514 * 812744ull, 1418 * 812744ull, 1, 10}, 0.812744, 10.000002176,
		 9.869963136, 9.219767936, 100.00002176, 98.69963136, 92.19767936,
		 0.812743823146944},
		{{1383000, 9014 * 1383000ull, 8918 * 1383000ull, 1, 100}, 1.383, 99.996432,
		 99.775152, 98.668752, 99.996432, 99.775152, 98.668752, 1.3830493472007082},
	};

	for (size_t i = 0; i < TESTUTIL_N(v); i++) {
		struct rates r;

		CU_ASSERT_EQUAL(rates_compute(&v[i].in, &r), 0);
		NEAR(r.mpps, v[i].mpps);
		NEAR(r.l1_gbps, v[i].l1);
		NEAR(r.l2_gbps, v[i].l2);
		NEAR(r.payload_gbps, v[i].pay);
		NEAR(r.l1_pct, v[i].l1_pct);
		NEAR(r.l2_pct, v[i].l2_pct);
		NEAR(r.payload_pct, v[i].pay_pct);
		NEAR(r.line_mpps, v[i].line_mpps);
		NEAR(r.mpps_pct, r.l1_pct);
	}
	NEAR(rates_line_mpps(10, 1518), 0.812743823146944);
}

/* No duration: refused and zeroed; no line rate: no percentages; no frames: zeros. */
static void
test_rates_bad(void)
{
	struct rates_in in = {1000, 60000, 0, 0, 10};
	struct rates r;

	CU_ASSERT_EQUAL(rates_compute(&in, &r), -1);
	CU_ASSERT_EQUAL(r.mpps, 0);
	in.seconds = -1;
	CU_ASSERT_EQUAL(rates_compute(&in, &r), -1);
	in.seconds = NAN;
	CU_ASSERT_EQUAL(rates_compute(&in, &r), -1);
	in.seconds = 1;
	in.line_gbps = 0;
	CU_ASSERT_EQUAL(rates_compute(&in, &r), 0);
	NEAR(r.l1_gbps, 0.000672);
	CU_ASSERT_EQUAL(r.l1_pct, 0);
	CU_ASSERT_EQUAL(r.mpps_pct, 0);
	CU_ASSERT_EQUAL(r.line_mpps, 0);
	in = (struct rates_in){0, 0, 0, 1, 10};
	CU_ASSERT_EQUAL(rates_compute(&in, &r), 0);
	CU_ASSERT_EQUAL(r.mpps, 0);
	CU_ASSERT_EQUAL(r.l1_pct, 0);
	CU_ASSERT_EQUAL(r.mpps_pct, 0);
	CU_ASSERT_EQUAL(rates_line_mpps(10, -20), 0);
}

/* A device that forwards up to `limit` and drops the excess (drops true) or pushes back,
 * so that the rate offered falls short (drops false). */
struct dut {
	double limit;
	bool drops;
};

/* Run a search against d to its end; the trials it took. */
static unsigned int
search(struct ndr_search *s, const struct dut *d)
{
	double r;

	while ((r = ndr_next(s)) > 0) {
		if (d->drops)
			ndr_record(s, r, r <= d->limit ? 0 : (r - d->limit) / r, true);
		else
			ndr_record(s, r, 0, r <= d->limit);
	}
	return s->trials;
}

/* Top 10, resolution 0.05 (0.5%): each search takes at most log2(10 / 0.05) < 8 halvings
 * after the top. NDR within the resolution below the limit; the PDR (0.1%) below
 * limit / 0.999, where the loss reaches 0.1%, and above the NDR. */
static void
test_ndr_drops(void)
{
	static const double limits[] = {0.3, 2.5, 6.37, 9.99};

	for (size_t i = 0; i < TESTUTIL_N(limits); i++) {
		struct dut d = {limits[i], true};
		struct ndr_search s;
		unsigned int n;

		CU_ASSERT_EQUAL_FATAL(ndr_init(&s, 10, 0.05, 0.001), 0);
		n = search(&s, &d);
		CHECK(n >= 2 && n <= 1 + 8 + 8, "limit %g: %u trials", d.limit, n);
		CHECK(s.ndr_lo <= d.limit && s.ndr_lo >= d.limit - 0.05,
		      "limit %g: NDR %g (hi %g)", d.limit, s.ndr_lo, s.ndr_hi);
		CHECK(s.pdr_lo <= d.limit / 0.999 && s.pdr_lo >= d.limit / 0.999 - 0.05 &&
			      s.pdr_lo >= s.ndr_lo,
		      "limit %g: PDR %g (hi %g)", d.limit, s.pdr_lo, s.pdr_hi);
		CU_ASSERT(ndr_found(&s, false) && ndr_found(&s, true));
		CU_ASSERT_EQUAL(ndr_next(&s), 0);
	}
}

/* A device that pushes back (the offered rate falls short above its limit): NDR and PDR
 * both just below the limit. */
static void
test_ndr_backpressure(void)
{
	struct dut d = {4.2, false};
	struct ndr_search s;

	CU_ASSERT_EQUAL_FATAL(ndr_init(&s, 10, 0.1, 0.001), 0);
	search(&s, &d);
	CHECK(s.ndr_lo <= 4.2 && s.ndr_lo >= 4.1, "NDR %g", s.ndr_lo);
	CHECK(s.pdr_lo <= 4.2 && s.pdr_lo >= 4.1, "PDR %g", s.pdr_lo);
}

/* Line rate without loss: one trial, both at the top. Loss at every rate: both 0 after the
 * halvings. A PDR loss of 0 makes the PDR the NDR. */
static void
test_ndr_edges(void)
{
	struct dut all = {100, true}, none = {0, true}, d = {3.3, true};
	struct ndr_search s;

	CU_ASSERT_EQUAL_FATAL(ndr_init(&s, 10, 0.05, 0.001), 0);
	CU_ASSERT_EQUAL(ndr_next(&s), 10);
	CU_ASSERT_EQUAL(search(&s, &all), 1);
	CU_ASSERT_EQUAL(s.ndr_lo, 10);
	CU_ASSERT_EQUAL(s.pdr_lo, 10);
	CU_ASSERT_EQUAL_FATAL(ndr_init(&s, 10, 0.05, 0.001), 0);
	CHECK(search(&s, &none) <= 1 + 8, "%u trials", s.trials);
	CU_ASSERT_EQUAL(s.ndr_lo, 0);
	CU_ASSERT_EQUAL(s.pdr_lo, 0);
	CU_ASSERT(s.ndr_hi <= 0.05 && s.pdr_hi <= 0.05);
	CU_ASSERT_EQUAL_FATAL(ndr_init(&s, 10, 0.05, 0), 0);
	search(&s, &d);
	CU_ASSERT_EQUAL(s.pdr_lo, s.ndr_lo);
}

/* A device whose answers contradict each other (loss at random, whatever the rate) still
 * ends within NDR_TRIALS_MAX trials, with lo <= hi throughout; bad arguments are refused. */
static void
test_ndr_bounds(void)
{
	struct ndr_search s;
	unsigned int x = 12345;
	double r;

	CU_ASSERT_EQUAL_FATAL(ndr_init(&s, 10, 1e-9, 0.001), 0);
	while ((r = ndr_next(&s)) > 0) {
		x = x * 1103515245u + 12345u;
		ndr_record(&s, r, (x >> 16) % 3 == 0 ? 0.01 : 0, (x >> 20) % 5 != 0);
		CU_ASSERT(s.ndr_lo <= s.ndr_hi && s.pdr_lo <= s.pdr_hi);
	}
	CU_ASSERT(s.trials <= NDR_TRIALS_MAX);
	CU_ASSERT_EQUAL(ndr_init(&s, 0, 0.05, 0.001), -1);
	CU_ASSERT_EQUAL(ndr_init(&s, 10, 0, 0.001), -1);
	CU_ASSERT_EQUAL(ndr_init(&s, 10, 11, 0.001), -1);
	CU_ASSERT_EQUAL(ndr_init(&s, 10, 0.05, 1), -1);
	CU_ASSERT_EQUAL(ndr_init(&s, 10, 0.05, -0.1), -1);
	CU_ASSERT_EQUAL(ndr_init(&s, NAN, 0.05, 0.001), -1);
	CU_ASSERT_EQUAL(ndr_init(NULL, 10, 0.05, 0.001), -1);
}

int
main(void)
{
	static const struct testutil_case tests[] = {
		{"rates: 64-byte frames", test_rates_64},
		{"rates: 1518 and 9018-byte frames", test_rates_large},
		{"rates: no duration, no line rate, no frames", test_rates_bad},
		{"search: a device that drops above its limit", test_ndr_drops},
		{"search: a device that pushes back", test_ndr_backpressure},
		{"search: no loss at line rate, loss at every rate", test_ndr_edges},
		{"search: contradicting trials, bad arguments", test_ndr_bounds},
	};

	return testutil_run("test_bench_cert", "bench_cert", tests, TESTUTIL_N(tests));
}
