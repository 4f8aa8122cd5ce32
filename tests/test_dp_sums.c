/* SPDX-License-Identifier: BSD-3-Clause
 *
 * EAL tests of the dataplane's arithmetic (dataplane/fastpath with the kernels of
 * lib/kernels, docs/PROTOCOL.md section 4): fp16 and bf16 accumulated in fp32 and rounded
 * once, MX formats decoded in arrival order and encoded once, also with a lan_dtype, and
 * IEEE binary32 sums with no FTZ/DAZ on the main lcore or on an EAL worker lcore.
 *
 * The main thread plays the worker lcore (dp_worker_poll, dp_fixture.c); lcore 1 only
 * reports its MXCSR.
 */
#include <string.h>

#include <CUnit/CUnit.h>
#include <rte_launch.h>
#include <rte_lcore.h>
#include <xmmintrin.h>

#include "dp_fixture.h"
#include "sum.h"
#include "table.h"
#include "wire.h"

/* In job 10 of another dtype than fp32, a contribution in fp32 (worker 11, round 3, chunk
 * 0): job_mismatch. */
static void
fp32_refused(uint64_t el, uint32_t ce)
{
	static struct out o[16];

	inject(contrib_f32(10, 1, 0, 11, 3, 0, el, ce));
	poll_all();
	CU_ASSERT(drops(WIRE_REASON_JOB_MISMATCH) == 1);
	collect(o, 16);
}

/* fp16 and bf16: accumulated in fp32, rounded once; integer values are exact. */
static void
half_case(enum table_dtype tdt, enum wire_dtype wdt)
{
	const uint64_t el = 300;
	const uint32_t ce = 128;
	struct tdesc td = {0, 0, 0, {0}, 0, 3, 16, {0}};
	static struct out o[16];
	const struct sum_kernels *k = sum_kernels_get(SUM_ISA_SCALAR);

	CU_ASSERT_FATAL(dp_up(rte_get_main_lcore()) == 0);
	CU_ASSERT_FATAL(install(mk_table(10, 1, 1, tdt, el, ce, 3, W3, 1, &td), "install") == 0);
	for (int w = 0; w < 3; w++)
		for (uint32_t c = 0; c < 3; c++) {
			uint16_t n = chunk_len(el, ce, c), pl[128];
			float f[128];
			struct pkt p = {
				WIRE_TYPE_CONTRIB, 0, 10, 1, 0, W3[w], W3[w], 1, 2, c, wdt, n,
				PEER_IP(W3[w])};

			for (uint16_t i = 0; i < n; i++)
				f[i] = val(W3[w], (uint64_t)c * ce + i);
			if (wdt == WIRE_DTYPE_FP16)
				k->narrow_f16(pl, f, n);
			else
				k->narrow_bf16(pl, f, n);
			inject(mk_pkt(&p, pl));
		}
	poll_all();
	int n = collect(o, 16), bad = 0;

	CU_ASSERT(n == 9);
	for (int i = 0; i < n && i < 16; i++) {
		uint16_t h[128];
		float f[128];
		uint32_t c = o[i].p.chunk;

		bad += o[i].p.dtype != wdt;
		memcpy(h, o[i].frame + WIRE_FRAME_PAYLOAD_OFF, 2u * o[i].p.count);
		if (wdt == WIRE_DTYPE_FP16)
			k->widen_f16(f, h, o[i].p.count);
		else
			k->widen_bf16(f, h, o[i].p.count);
		for (uint32_t e = 0; e < o[i].p.count; e++) {
			uint64_t x = (uint64_t)c * ce + e;

			bad += f[e] != val(11, x) + val(12, x) + val(13, x);
		}
	}
	CU_ASSERT(bad == 0);
	fp32_refused(el, ce);
	dp_down();
}

static void
test_fp16(void)
{
	half_case(TABLE_DTYPE_FP16, WIRE_DTYPE_FP16);
}

static void
test_bf16(void)
{
	half_case(TABLE_DTYPE_BF16, WIRE_DTYPE_BF16);
}

/* MXCSR of the lcore that runs it, into *arg: what the EAL left for worker lcores. */
static int
read_mxcsr(void *arg)
{
	*(unsigned int *)arg = _mm_getcsr();
	return 0;
}

/* FTZ (bit 15) and DAZ (bit 6) clear, rounding to nearest (bits 13-14 zero). */
static bool
mxcsr_ieee(unsigned int csr)
{
	return (csr & (0x8000u | 0x0040u | 0x6000u)) == 0;
}

#define ANY_NAN 0xffffffffu /* an expected value: any NaN */

/*
 * The arithmetic docs/PROTOCOL.md section 4 promises, through a root with three workers:
 * IEEE binary32 adds in arrival order, subnormals kept (no FTZ/DAZ on the main thread or
 * on an EAL worker lcore), signed zeros and infinities as IEEE, NaN stays NaN.
 */
static void
test_ieee_sums(void)
{
	enum {
		N = 8
	};
	static const uint32_t in[3][N] = {
		/* workers 11, 12, 13 */
		{0x00000001, 0x80000000, 0x00000000, 0x7f800000, 0x7f800000, 0x4cbebc20, 0x7f7fffff,
		 0x80000001},
		{0x00000001, 0x80000000, 0x80000000, 0x3f800000, 0xff800000, 0x3f800000, 0x7f7fffff,
		 0x00000000},
		{0x00000001, 0x80000000, 0x80000000, 0x3f800000, 0x3f800000, 0xccbebc20, 0xff7fffff,
		 0x00000000},
	};
	/* Arrival 11, 12, 13: (1e8 + 1) - 1e8 = 0 and (max + max) - max = inf; arrival 11,
	 * 13, 12: (1e8 - 1e8) + 1 = 1 and (max - max) + max = max. */
	static const uint32_t want[2][N] = {
		{0x00000003, 0x80000000, 0x00000000, 0x7f800000, ANY_NAN, 0x00000000, 0x7f800000,
		 0x80000001},
		{0x00000003, 0x80000000, 0x00000000, 0x7f800000, ANY_NAN, 0x3f800000, 0x7f7fffff,
		 0x80000001},
	};
	static const int order[2][3] = {{0, 1, 2}, {0, 2, 1}};
	struct tdesc td = {0, 0, 0, {0}, 0, 1, 16, {0}};
	static struct out o[8];
	unsigned int csr = _mm_getcsr(), lcore = rte_get_next_lcore(-1, 1, 0);

	CU_ASSERT(mxcsr_ieee(csr));
	if (lcore < RTE_MAX_LCORE) {
		csr = 0xffffffffu;
		CU_ASSERT_FATAL(rte_eal_remote_launch(read_mxcsr, &csr, lcore) == 0);
		rte_eal_wait_lcore(lcore);
		CU_ASSERT(mxcsr_ieee(csr));
	}
	CU_ASSERT_FATAL(dp_up(rte_get_main_lcore()) == 0);
	CU_ASSERT_FATAL(
		install(mk_table(8, 1, 1, TABLE_DTYPE_FP32, N, N, 3, W3, 1, &td), "install") == 0);
	for (int r = 0; r < 2; r++) {
		for (int k = 0; k < 3; k++) {
			int w = order[r][k];
			struct pkt p = {WIRE_TYPE_CONTRIB,
					0,
					8,
					1,
					0,
					W3[w],
					W3[w],
					1,
					(uint32_t)(5 + r),
					0,
					WIRE_DTYPE_FP32,
					N,
					PEER_IP(W3[w])};

			inject(mk_pkt(&p, in[w]));
			poll_all(); /* one at a time: the arrival order is the injection order */
		}
		int n = collect(o, 8), bad = 0;

		CU_ASSERT_FATAL(n == 3);
		for (int k = 0; k < n; k++)
			for (int i = 0; i < N; i++) {
				uint32_t got;

				memcpy(&got, o[k].frame + WIRE_FRAME_PAYLOAD_OFF + 4 * i, 4);
				bad += want[r][i] != ANY_NAN ? got != want[r][i] :
							       (got & 0x7fffffffu) <= 0x7f800000u;
			}
		CU_ASSERT(bad == 0);
	}
	dp_down();
}

/*
 * MX: each contribution decoded into the slot's fp32 accumulator in arrival order, the sum
 * encoded once as it leaves; the RESULT is bit for bit the reference computation of
 * docs/PROTOCOL.md section 4 (scalar kernels, the same order): acc = decode(c_1), acc +=
 * decode(c_i), encode(acc). Random data, the arrival order varying by chunk.
 */
static void
mx_case(enum table_dtype tdt, enum wire_dtype wdt)
{
	const uint64_t el = 320;
	const uint32_t ce = 128; /* 4 blocks; the last chunk has 2 */
	struct tdesc td = {0, 0, 0, {0}, 0, 3, 16, {0}};
	static struct out o[16];
	static uint8_t enc[3][3][4 * 33], want[3][4 * 33];
	const struct sum_kernels *k = sum_kernels_get(SUM_ISA_SCALAR);
	enum sum_mx f = (enum sum_mx)(wdt - WIRE_DTYPE_MXINT8);
	static const int order[3][3] = {{0, 1, 2}, {2, 0, 1}, {1, 2, 0}};
	uint64_t seed = 0x6d78u + (uint64_t)wdt;

	CU_ASSERT_FATAL(dp_up(rte_get_main_lcore()) == 0);
	CU_ASSERT_FATAL(install(mk_table(10, 1, 1, tdt, el, ce, 3, W3, 1, &td), "install") == 0);
	for (uint32_t c = 0; c < 3; c++) {
		uint16_t n = chunk_len(el, ce, c);
		float acc[128], v[128];

		for (int w = 0; w < 3; w++) {
			for (uint16_t i = 0; i < n; i++) {
				seed = seed * 6364136223846793005ull + 1442695040888963407ull;
				/* magnitudes over 2^-20 .. 2^12, either sign */
				v[i] = (float)((double)(int32_t)(seed >> 32) * 0x1p-31 *
					       (double)(1u << ((seed >> 8) % 32)) * 0x1p-20);
			}
			k->mx_narrow[f](enc[c][w], v, n / 32u);
		}
		for (int j = 0; j < 3; j++) {
			int w = order[c][j];
			struct pkt p = {
				WIRE_TYPE_CONTRIB, 0, 10, 1, 0, W3[w], W3[w], 1, 2, c, wdt, n,
				PEER_IP(W3[w])};

			if (j == 0)
				k->mx_widen[f](acc, enc[c][w], n / 32u);
			else
				k->mx_widen_add[f](acc, enc[c][w], n / 32u);
			inject(mk_pkt(&p, enc[c][w]));
			poll_all(); /* this arrival order at the gateway */
		}
		k->mx_narrow[f](want[c], acc, n / 32u);
	}
	int n = collect(o, 16), bad = 0;

	CU_ASSERT(n == 9);
	for (int i = 0; i < n && i < 16; i++) {
		uint32_t c = o[i].p.chunk;
		size_t len = wire_payload_bytes(wdt, o[i].p.count);

		bad += o[i].p.dtype != wdt || o[i].p.type != WIRE_TYPE_RESULT || c >= 3 ||
		       len != wire_payload_bytes(wdt, chunk_len(el, ce, c));
		if (c < 3 && len != 0)
			bad += memcmp(o[i].frame + WIRE_FRAME_PAYLOAD_OFF, want[c], len) != 0;
	}
	CU_ASSERT(bad == 0);
	fp32_refused(el, ce);
	dp_down();
	/* Chunks that are not whole blocks: the table is refused. */
	CU_ASSERT_FATAL(dp_up(rte_get_main_lcore()) == 0);
	CU_ASSERT(install(mk_table(10, 1, 1, tdt, el, 100, 3, W3, 1, &td), "install") != 0);
	dp_down();
}

static void
test_mxint8(void)
{
	mx_case(TABLE_DTYPE_MXINT8, WIRE_DTYPE_MXINT8);
}

static void
test_mxfp8(void)
{
	mx_case(TABLE_DTYPE_MXFP8, WIRE_DTYPE_MXFP8);
}

static void
test_mxfp4(void)
{
	mx_case(TABLE_DTYPE_MXFP4, WIRE_DTYPE_MXFP4);
}

/*
 * An MX job whose table has a lan_dtype: the local workers' CONTRIBs come in fp32 or bf16
 * and go into the fp32 accumulator as they are (bf16 widened), the child gateway's in the
 * MX format, decoded; the sum is encoded once, and the RESULT leaves in the MX format,
 * also when the frame that holds it came from a worker (trimmed to the MX length). Bit for
 * bit the reference computation in the arrival order; a worker in the WAN dtype and a child
 * in the LAN dtype are job_mismatch.
 */
static void
mx_lan_case(enum table_dtype tdt, enum wire_dtype wdt, enum table_dtype lan)
{
	const uint64_t el = 320;
	const uint32_t ce = 128; /* 4 blocks; the last chunk has 2 */
	struct tdesc td = {0, 0, 1, {2}, 0, 3, 16, {1}};
	static struct out o[16];
	static float v[3][3][128];
	static uint16_t bf[3][3][128];
	static uint8_t enc[3][4 * 33], want[3][4 * 33];
	const struct sum_kernels *k = sum_kernels_get(SUM_ISA_SCALAR);
	enum sum_mx f = (enum sum_mx)(wdt - WIRE_DTYPE_MXINT8);
	/* 0, 1: the workers W3[0], W3[1]; 2: the child gateway 2 */
	static const int order[3][3] = {{0, 2, 1}, {2, 1, 0}, {1, 0, 2}};
	uint64_t seed = 0x6c616eu + (uint64_t)wdt + (uint64_t)lan;
	struct table *tb = mk_table(10, 1, 1, tdt, el, ce, 2, W3, 1, &td);

	tb->lan_dtype = lan;
	CU_ASSERT_FATAL(dp_up(rte_get_main_lcore()) == 0);
	CU_ASSERT_FATAL(install(tb, "install") == 0);
	for (uint32_t c = 0; c < 3; c++) {
		uint16_t n = chunk_len(el, ce, c);
		float acc[128], x[128];

		for (int w = 0; w < 3; w++) {
			for (uint16_t i = 0; i < n; i++) {
				seed = seed * 6364136223846793005ull + 1442695040888963407ull;
				v[c][w][i] = (float)((double)(int32_t)(seed >> 32) * 0x1p-31 *
						     (double)(1u << ((seed >> 8) % 24)) * 0x1p-12);
			}
			k->narrow_bf16(bf[c][w], v[c][w], n);
		}
		k->mx_narrow[f](enc[c], v[c][2], n / 32u);
		for (int j = 0; j < 3; j++) {
			int w = order[c][j];
			bool child = w == 2;
			uint16_t id = child ? 2 : W3[w];
			struct pkt p = {WIRE_TYPE_CONTRIB,
					0,
					10,
					1,
					0,
					id,
					id,
					1,
					2,
					c,
					child ? wdt : (enum wire_dtype)lan,
					n,
					PEER_IP(id)};
			const void *pl = child                   ? (const void *)enc[c] :
					 lan == TABLE_DTYPE_BF16 ? (const void *)bf[c][w] :
								   (const void *)v[c][w];

			if (child)
				k->mx_widen[f](x, enc[c], n / 32u);
			else if (lan == TABLE_DTYPE_BF16)
				k->widen_bf16(x, bf[c][w], n);
			else
				memcpy(x, v[c][w], sizeof(float) * n);
			if (j == 0)
				memcpy(acc, x, sizeof(float) * n);
			else
				k->sum_f32(acc, x, n);
			inject(mk_pkt(&p, pl));
			poll_all(); /* this arrival order at the gateway */
		}
		k->mx_narrow[f](want[c], acc, n / 32u);
	}
	int n = collect(o, 16), bad = 0;

	CU_ASSERT(n == 9); /* 3 chunks to the 2 workers and the child */
	for (int i = 0; i < n && i < 16; i++) {
		uint32_t c = o[i].p.chunk;
		size_t len = wire_payload_bytes(wdt, o[i].p.count);

		bad += o[i].p.dtype != wdt || o[i].p.type != WIRE_TYPE_RESULT || c >= 3 ||
		       o[i].p.contrib != 3 ||
		       len != wire_payload_bytes(wdt, chunk_len(el, ce, c)) ||
		       o[i].len != WIRE_FRAME_PAYLOAD_OFF + len;
		if (c < 3 && len != 0)
			bad += memcmp(o[i].frame + WIRE_FRAME_PAYLOAD_OFF, want[c], len) != 0;
	}
	CU_ASSERT(bad == 0);
	/* The next round: a worker in the WAN dtype, the child in the LAN dtype. */
	struct pkt pw = {WIRE_TYPE_CONTRIB, 0, 10, 1, 0, W3[0], W3[0], 1, 3, 0, wdt, ce,
			 PEER_IP(W3[0])};
	struct pkt pc = {WIRE_TYPE_CONTRIB,    0,  10,        1, 0, 2, 2, 1, 3, 0,
			 (enum wire_dtype)lan, ce, PEER_IP(2)};

	inject(mk_pkt(&pw, enc[0]));
	inject(mk_pkt(&pc,
		      lan == TABLE_DTYPE_BF16 ? (const void *)bf[0][0] : (const void *)v[0][0]));
	poll_all();
	CU_ASSERT(drops(WIRE_REASON_JOB_MISMATCH) == 2);
	CU_ASSERT(collect(o, 16) == 0);
	dp_down();
}

static void
test_mx_lan(void)
{
	mx_lan_case(TABLE_DTYPE_MXINT8, WIRE_DTYPE_MXINT8, TABLE_DTYPE_FP32);
	mx_lan_case(TABLE_DTYPE_MXFP4, WIRE_DTYPE_MXFP4, TABLE_DTYPE_BF16);
	mx_lan_case(TABLE_DTYPE_MXFP8, WIRE_DTYPE_MXFP8, TABLE_DTYPE_FP32);
}

int
main(int argc, char **argv)
{
	CU_pSuite s = dp_fixture_init(argc, argv, "test_dp_sums");

	if (s == NULL)
		return 1;
	CU_add_test(s, "fp16", test_fp16);
	CU_add_test(s, "mxint8: decoded in arrival order, encoded once", test_mxint8);
	CU_add_test(s, "mxfp8: decoded in arrival order, encoded once", test_mxfp8);
	CU_add_test(s, "mxfp4: decoded in arrival order, encoded once", test_mxfp4);
	CU_add_test(s, "MX with a lan_dtype: workers in fp32 or bf16, the sum encoded once",
		    test_mx_lan);
	CU_add_test(s, "bf16", test_bf16);
	CU_add_test(s, "IEEE sums in arrival order, no FTZ/DAZ", test_ieee_sums);
	return dp_fixture_run();
}
