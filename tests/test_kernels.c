/* SPDX-License-Identifier: BSD-3-Clause
 *
 * Unit tests of the summation kernels (lib/kernels/sum.h). No EAL: variants are taken
 * with sum_kernels_get(), which only reads CPUID.
 *
 * One suite per variant the CPU supports (scalar, avx2, avx512) runs the same tests:
 *  - every kernel on random data of many lengths at misaligned byte offsets, bit-identical to
 *    the scalar reference (memcmp), nothing written outside the n elements, src untouched;
 *  - all 65536 fp16 and bf16 values: widen is exact, widen then narrow round-trips, NaN stays
 *    NaN with the documented quieting;
 *  - fp32 -> fp16/bf16 narrow over every fp32 bit pattern against the scalar reference (SIMD
 *    suites), and against an independent round-to-nearest-even oracle in double precision
 *    (scalar suite, on a sample of every exponent and the tie patterns);
 *  - hand-picked rounding cases, NaN propagation of adds, subnormals, signed zeros and
 *    infinities through the adds (exact IEEE bits: no flush-to-zero), exact sums of integer
 *    data;
 *  - MX: every code under every scale decoded, and encoding, against a reference written
 *    from the OCP MX text (element values from their definitions, nearest code by search);
 *    round trips of every code; odd block counts at odd offsets; zero, NaN and infinity
 *    blocks, the largest and smallest scales, ties and saturation.
 * Plus a suite for variant selection. main returns the number of failures.
 */
#include <inttypes.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <CUnit/Basic.h>

#include "slowpath/kernel_select.h"
#include "sum.h"
#include "wire.h"

#define GUARD 64                /* canary bytes on each side of every buffer */
#define CANARY 0xa5
#define MAX_REPORT 5            /* mismatches printed per check */
#define ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))

static const struct sum_kernels *ref;   /* the scalar reference */
static const struct sum_kernels *cur;   /* the variant of the running suite */
static unsigned int reported;           /* mismatches printed by the running test */

static const size_t lengths[] = {0, 1, 7, 15, 16, 17, 31, 33, 63, 64, 65, 1000, 4099};
/* Byte offsets from a 64-byte boundary: packet payloads are not aligned. */
static const size_t dst_offsets[] = {0, 1, 2, 4, 6, 30, 62};
static const size_t src_offsets[] = {0, 2, 3, 10};

/* --- helpers -------------------------------------------------------------------------- */

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;

static uint64_t rng(void)
{
	/* xorshift64* */
	rng_state ^= rng_state >> 12;
	rng_state ^= rng_state << 25;
	rng_state ^= rng_state >> 27;
	return rng_state * 0x2545f4914f6cdd1dull;
}

static uint32_t f2u(float f)
{
	uint32_t u;

	memcpy(&u, &f, sizeof(u));
	return u;
}

static float u2f(uint32_t u)
{
	float f;

	memcpy(&f, &u, sizeof(f));
	return f;
}

/* 2^e for e in the normal double range, exactly (no libm: tests/meson.build links none). */
static double pow2(int e)
{
	uint64_t u = (uint64_t)(1023 + e) << 52;
	double d;

	memcpy(&d, &u, sizeof(d));
	return d;
}

/* floor(log2(x)) for a finite normal double x > 0. */
static int ilog2(double x)
{
	uint64_t u;

	memcpy(&u, &x, sizeof(u));
	return (int)((u >> 52) & 0x7ff) - 1023;
}

static bool f32_is_nan(uint32_t u)
{
	return (u & 0x7fffffff) > 0x7f800000;
}

static bool f16_is_nan(uint16_t h)
{
	return (h & 0x7c00) == 0x7c00 && (h & 0x3ff) != 0;
}

static bool bf16_is_nan(uint16_t h)
{
	return (h & 0x7f80) == 0x7f80 && (h & 0x7f) != 0;
}

/* A buffer of `bytes` bytes at `off` bytes past a 64-byte boundary, canaries around it. */
struct gbuf {
	uint8_t *base;
	size_t total;
	uint8_t *p;
	size_t bytes;
};

static void gbuf_init(struct gbuf *g, size_t bytes, size_t off)
{
	g->bytes = bytes;
	g->total = (GUARD + off + bytes + GUARD + 63) & ~(size_t)63;
	g->base = aligned_alloc(64, g->total);
	CU_ASSERT_PTR_NOT_NULL_FATAL(g->base);
	memset(g->base, CANARY, g->total);
	g->p = g->base + GUARD + off;
}

static void gbuf_fini(struct gbuf *g)
{
	free(g->base);
	g->base = NULL;
}

static bool gbuf_canaries_ok(const struct gbuf *g)
{
	for (uint8_t *q = g->base; q < g->p; q++)
		if (*q != CANARY)
			return false;
	for (uint8_t *q = g->p + g->bytes; q < g->base + g->total; q++)
		if (*q != CANARY)
			return false;
	return true;
}

/* Random fp32 of magnitude 2^-30 .. 2^30 and random sign. */
static float rand_f32_normal(void)
{
	uint64_t r = rng();
	uint32_t exp = 127 - 30 + (uint32_t)(r % 61);
	uint32_t mant = (uint32_t)(r >> 8) & 0x7fffff;

	return u2f((uint32_t)((r >> 40) & 1) << 31 | exp << 23 | mant);
}

/* Random fp32 bit pattern biased towards the interesting classes. */
static uint32_t rand_f32_bits(void)
{
	uint64_t r = rng();
	uint32_t bits = (uint32_t)(r >> 32);

	switch (r % 8) {
	case 0:                                 /* any pattern, NaNs included */
		return bits;
	case 1:                                 /* around the fp16 range, incl. subnormal */
		return (bits & 0x807fffff) | (uint32_t)(100 + (r >> 8) % 45) << 23;
	case 2:                                 /* fp32 subnormals and zeros */
		return bits & 0x807fffff & (((r >> 16) & 1) ? 0xffffffff : 0x80000000);
	case 3:                                 /* ties and near-ties for bf16 and fp16 */
		return (bits & 0xffff0000) | (uint32_t[]){0x8000, 0x7fff, 0x8001, 0x1000,
							  0x3000, 0x0fff}[(r >> 8) % 6];
	case 4:                                 /* infinities, NaN with payloads */
		return (bits & 0x807fffff) | 0x7f800000;
	default:
		return f2u(rand_f32_normal());
	}
}

static void fill_u16(uint16_t *p, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		uint16_t v = (uint16_t)rng();

		memcpy(&p[i], &v, sizeof(v));
	}
}

static void fill_f32(float *p, size_t n, bool specials)
{
	for (size_t i = 0; i < n; i++) {
		float v = specials ? u2f(rand_f32_bits()) : rand_f32_normal();

		memcpy(&p[i], &v, sizeof(v));
	}
}

/*
 * The result of an add of two NaNs has an unspecified payload (sum.h), so random data never
 * has a NaN in both operands at the same index: the acc side is replaced by 1.0.
 */
static void unpair_nans(float *acc, const void *src, size_t n, int src_kind)
{
	for (size_t i = 0; i < n; i++) {
		uint32_t a, s32;
		uint16_t s16;
		bool src_nan;

		memcpy(&a, &acc[i], sizeof(a));
		if (src_kind == 0) {
			memcpy(&s32, (const uint8_t *)src + 4 * i, sizeof(s32));
			src_nan = f32_is_nan(s32);
		} else {
			memcpy(&s16, (const uint8_t *)src + 2 * i, sizeof(s16));
			src_nan = src_kind == 1 ? f16_is_nan(s16) : bf16_is_nan(s16);
		}
		if (src_nan && f32_is_nan(a)) {
			float one = 1.0f;

			memcpy(&acc[i], &one, sizeof(one));
		}
	}
}

/* --- random data against the reference ------------------------------------------------ */

enum kern {
	K_SUM_F32,
	K_WIDEN_F16,
	K_WIDEN_ADD_F16,
	K_NARROW_F16,
	K_WIDEN_BF16,
	K_WIDEN_ADD_BF16,
	K_NARROW_BF16,
	K_COUNT,
};

static const char *const kern_names[K_COUNT] = {
	"sum_f32", "widen_f16", "widen_add_f16", "narrow_f16",
	"widen_bf16", "widen_add_bf16", "narrow_bf16",
};

/* dst: the written operand (fp32 acc, or the 16-bit output of narrow); src: the read one. */
static size_t kern_dst_size(enum kern k)
{
	return (k == K_NARROW_F16 || k == K_NARROW_BF16) ? 2 : 4;
}

static size_t kern_src_size(enum kern k)
{
	return (k == K_SUM_F32 || k == K_NARROW_F16 || k == K_NARROW_BF16) ? 4 : 2;
}

static void kern_run(const struct sum_kernels *ks, enum kern k, void *dst, const void *src,
		     size_t n)
{
	switch (k) {
	case K_SUM_F32:
		ks->sum_f32(dst, src, n);
		break;
	case K_WIDEN_F16:
		ks->widen_f16(dst, src, n);
		break;
	case K_WIDEN_ADD_F16:
		ks->widen_add_f16(dst, src, n);
		break;
	case K_NARROW_F16:
		ks->narrow_f16(dst, src, n);
		break;
	case K_WIDEN_BF16:
		ks->widen_bf16(dst, src, n);
		break;
	case K_WIDEN_ADD_BF16:
		ks->widen_add_bf16(dst, src, n);
		break;
	case K_NARROW_BF16:
		ks->narrow_bf16(dst, src, n);
		break;
	case K_COUNT:
		break;
	}
}

static void fill_operands(enum kern k, void *dst, void *src, size_t n, bool specials)
{
	switch (k) {
	case K_SUM_F32:
		fill_f32(dst, n, specials);
		fill_f32(src, n, specials);
		unpair_nans(dst, src, n, 0);
		break;
	case K_WIDEN_F16:
	case K_WIDEN_BF16:
		fill_f32(dst, n, true);         /* overwritten */
		fill_u16(src, n);
		break;
	case K_WIDEN_ADD_F16:
	case K_WIDEN_ADD_BF16:
		fill_f32(dst, n, specials);
		fill_u16(src, n);
		unpair_nans(dst, src, n, k == K_WIDEN_ADD_F16 ? 1 : 2);
		break;
	case K_NARROW_F16:
	case K_NARROW_BF16:
		fill_u16(dst, n);               /* overwritten */
		fill_f32(src, n, specials);
		break;
	case K_COUNT:
		break;
	}
}

/* One kernel, one length, one pair of offsets: cur against ref. Returns true if equal. */
static bool compare_one(enum kern k, size_t n, size_t doff, size_t soff, bool specials)
{
	struct gbuf d_ref, d_cur, s, s_orig;
	bool ok = true;

	gbuf_init(&d_ref, n * kern_dst_size(k), doff);
	gbuf_init(&d_cur, n * kern_dst_size(k), doff);
	gbuf_init(&s, n * kern_src_size(k), soff);
	gbuf_init(&s_orig, n * kern_src_size(k), soff);
	fill_operands(k, d_ref.p, s.p, n, specials);
	memcpy(d_cur.base, d_ref.base, d_ref.total);
	memcpy(s_orig.base, s.base, s.total);

	kern_run(ref, k, d_ref.p, s.p, n);
	kern_run(cur, k, d_cur.p, s.p, n);

	if (memcmp(d_ref.base, d_cur.base, d_ref.total) != 0) {
		for (size_t i = 0; i < d_ref.bytes && reported < MAX_REPORT; i++) {
			if (d_ref.p[i] != d_cur.p[i]) {
				reported++;
				printf("\n  %s %s n=%zu dst+%zu src+%zu: first difference at byte %zu",
				       cur->name, kern_names[k], n, doff, soff, i);
				break;
			}
		}
		ok = false;
	}
	if (!gbuf_canaries_ok(&d_cur) || !gbuf_canaries_ok(&d_ref)) {
		if (reported++ < MAX_REPORT)
			printf("\n  %s %s n=%zu dst+%zu: wrote outside [0, n)", cur->name,
			       kern_names[k], n, doff);
		ok = false;
	}
	if (memcmp(s.base, s_orig.base, s.total) != 0) {
		if (reported++ < MAX_REPORT)
			printf("\n  %s %s n=%zu: modified src", cur->name, kern_names[k], n);
		ok = false;
	}
	gbuf_fini(&d_ref);
	gbuf_fini(&d_cur);
	gbuf_fini(&s);
	gbuf_fini(&s_orig);
	return ok;
}

static void compare_kernel(enum kern k)
{
	unsigned int bad = 0;

	reported = 0;
	for (size_t li = 0; li < ARRAY_LEN(lengths); li++)
		for (size_t di = 0; di < ARRAY_LEN(dst_offsets); di++)
			for (size_t si = 0; si < ARRAY_LEN(src_offsets); si++)
				for (int sp = 0; sp < 2; sp++)
					if (!compare_one(k, lengths[li], dst_offsets[di],
							 src_offsets[si], sp))
						bad++;
	CU_ASSERT_EQUAL(bad, 0);
}

static void test_random_sum_f32(void) { compare_kernel(K_SUM_F32); }
static void test_random_widen_f16(void) { compare_kernel(K_WIDEN_F16); }
static void test_random_widen_add_f16(void) { compare_kernel(K_WIDEN_ADD_F16); }
static void test_random_narrow_f16(void) { compare_kernel(K_NARROW_F16); }
static void test_random_widen_bf16(void) { compare_kernel(K_WIDEN_BF16); }
static void test_random_widen_add_bf16(void) { compare_kernel(K_WIDEN_ADD_BF16); }
static void test_random_narrow_bf16(void) { compare_kernel(K_NARROW_BF16); }

/* sum_f32 and widen_add against the C expression acc + (float)src, element by element. */
static void test_add_matches_c(void)
{
	enum { N = 1000 };
	float acc[N], src[N], out[N], w[N];
	uint16_t h[N];
	unsigned int bad = 0;

	fill_f32(acc, N, true);
	fill_f32(src, N, true);
	unpair_nans(acc, src, N, 0);
	memcpy(out, acc, sizeof(out));
	cur->sum_f32(out, src, N);
	for (size_t i = 0; i < N; i++)
		bad += f2u(out[i]) != f2u(acc[i] + src[i]);

	fill_f32(acc, N, false);
	fill_u16(h, N);
	for (int bf = 0; bf < 2; bf++) {
		memcpy(out, acc, sizeof(out));
		(bf ? cur->widen_add_bf16 : cur->widen_add_f16)(out, h, N);
		(bf ? ref->widen_bf16 : ref->widen_f16)(w, h, N);
		for (size_t i = 0; i < N; i++)
			bad += f2u(out[i]) != f2u(acc[i] + w[i]) &&
			       !(f32_is_nan(f2u(out[i])) && f32_is_nan(f2u(w[i])));
	}
	CU_ASSERT_EQUAL(bad, 0);
}

/* --- all 65536 half values ------------------------------------------------------------- */

enum { N16 = 65536 };

/* The exact fp32 bits of an IEEE half, computed independently of the kernels. */
static uint32_t f16_expected_bits(uint16_t h)
{
	uint32_t sign = (uint32_t)(h >> 15) << 31;
	int exp = (h >> 10) & 0x1f;
	int mant = h & 0x3ff;
	double v;

	if (exp == 0x1f)
		return sign | 0x7f800000 | (mant ? 0x400000 | (uint32_t)mant << 13 : 0);
	v = exp ? (1024 + mant) * pow2(exp - 25) : mant * pow2(-24);
	return sign | f2u((float)v);
}

static void test_f16_all_values(void)
{
	static uint16_t h[N16], back[N16];
	static float w[N16];
	unsigned int bad_widen = 0, bad_back = 0;

	for (size_t i = 0; i < N16; i++)
		h[i] = (uint16_t)i;
	cur->widen_f16(w, h, N16);
	cur->narrow_f16(back, w, N16);
	for (size_t i = 0; i < N16; i++) {
		uint16_t want = f16_is_nan(h[i]) ? h[i] | 0x200 : h[i];

		if (f2u(w[i]) != f16_expected_bits(h[i]) && bad_widen++ < MAX_REPORT)
			printf("\n  %s widen_f16(0x%04zx) = 0x%08" PRIx32 ", want 0x%08" PRIx32,
			       cur->name, i, f2u(w[i]), f16_expected_bits(h[i]));
		if (back[i] != want && bad_back++ < MAX_REPORT)
			printf("\n  %s narrow_f16(widen_f16(0x%04zx)) = 0x%04x, want 0x%04x",
			       cur->name, i, back[i], want);
	}
	CU_ASSERT_EQUAL(bad_widen, 0);
	CU_ASSERT_EQUAL(bad_back, 0);
}

static void test_bf16_all_values(void)
{
	static uint16_t h[N16], back[N16];
	static float w[N16];
	unsigned int bad_widen = 0, bad_back = 0;

	for (size_t i = 0; i < N16; i++)
		h[i] = (uint16_t)i;
	cur->widen_bf16(w, h, N16);
	cur->narrow_bf16(back, w, N16);
	for (size_t i = 0; i < N16; i++) {
		uint16_t want = bf16_is_nan(h[i]) ? h[i] | 0x40 : h[i];

		if (f2u(w[i]) != (uint32_t)i << 16 && bad_widen++ < MAX_REPORT)
			printf("\n  %s widen_bf16(0x%04zx) = 0x%08" PRIx32, cur->name, i, f2u(w[i]));
		if (back[i] != want && bad_back++ < MAX_REPORT)
			printf("\n  %s narrow_bf16(widen_bf16(0x%04zx)) = 0x%04x, want 0x%04x",
			       cur->name, i, back[i], want);
	}
	CU_ASSERT_EQUAL(bad_widen, 0);
	CU_ASSERT_EQUAL(bad_back, 0);
}

/* --- narrow over every fp32 bit pattern ------------------------------------------------ */

/*
 * The SIMD suites compare narrow with the reference on all 2^32 inputs, in blocks of 65536
 * (high 16 bits fixed). GEOREDUCE_TEST_QUICK=1 in the environment checks every 17th block.
 */
static void test_narrow_all_f32(void)
{
	static float in[N16];
	static uint16_t out_ref[N16], out_cur[N16];
	unsigned int bad_f16 = 0, bad_bf16 = 0;
	const char *quick = getenv("GEOREDUCE_TEST_QUICK");
	uint32_t step = quick != NULL && strcmp(quick, "1") == 0 ? 17 : 1;

	if (cur == ref)
		return;                 /* the scalar suite checks the oracle instead */
	for (uint32_t hi = 0; hi < N16; hi += step) {
		for (uint32_t lo = 0; lo < N16; lo++)
			in[lo] = u2f(hi << 16 | lo);
		ref->narrow_f16(out_ref, in, N16);
		cur->narrow_f16(out_cur, in, N16);
		if (memcmp(out_ref, out_cur, sizeof(out_ref)) != 0 && bad_f16++ < MAX_REPORT)
			printf("\n  %s narrow_f16 differs in block 0x%04" PRIx32 "xxxx", cur->name, hi);
		ref->narrow_bf16(out_ref, in, N16);
		cur->narrow_bf16(out_cur, in, N16);
		if (memcmp(out_ref, out_cur, sizeof(out_ref)) != 0 && bad_bf16++ < MAX_REPORT)
			printf("\n  %s narrow_bf16 differs in block 0x%04" PRIx32 "xxxx", cur->name,
			       hi);
	}
	CU_ASSERT_EQUAL(bad_f16, 0);
	CU_ASSERT_EQUAL(bad_bf16, 0);
}

/*
 * Round-to-nearest-even of finite x to a binary format with p significand bits (implicit one
 * included), minimum normal exponent emin and maximum exponent emax, in double precision
 * (exact for fp32 inputs, which are all normal doubles). Overflow gives infinity.
 */
static double oracle_round(double x, int p, int emin, int emax)
{
	double ax = fabs(x), q, frac, ulp, r;
	uint64_t lo;
	int e;

	if (ax == 0 || isinf(ax))
		return x;
	e = ilog2(ax);
	ulp = pow2((e < emin ? emin : e) - (p - 1));
	q = ax / ulp;                           /* exact: a power-of-two scaling */
	lo = (uint64_t)q;                       /* floor: 0 <= q < 2^p */
	frac = q - (double)lo;
	if (frac > 0.5 || (frac == 0.5 && (lo & 1)))
		lo++;
	r = (double)lo * ulp;
	if (r >= pow2(emax + 1))
		r = INFINITY;
	return copysign(r, x);
}

/* The scalar reference against the oracle on every exponent and the tie patterns. */
static void test_narrow_oracle(void)
{
	static const uint32_t lows[] = {
		0x0000, 0x0001, 0x0fff, 0x1000, 0x1001, 0x2000, 0x3000, 0x7fff, 0x8000, 0x8001,
		0xc000, 0xffff,
	};
	enum { N = N16 * (ARRAY_LEN(lows) + 2) };
	float *in = malloc(N * sizeof(*in)), *w = malloc(N * sizeof(*w));
	uint16_t *h = malloc(N * sizeof(*h));
	unsigned int bad_f16 = 0, bad_bf16 = 0;
	size_t n = 0;

	CU_ASSERT_FATAL(in != NULL && w != NULL && h != NULL);
	for (uint32_t hi = 0; hi < N16; hi++) {
		for (size_t j = 0; j < ARRAY_LEN(lows); j++)
			in[n++] = u2f(hi << 16 | lows[j]);
		in[n++] = u2f(hi << 16 | (uint16_t)rng());
		in[n++] = u2f(hi << 16 | (uint16_t)rng());
	}
	for (int bf = 0; bf < 2; bf++) {
		(bf ? cur->narrow_bf16 : cur->narrow_f16)(h, in, n);
		(bf ? ref->widen_bf16 : ref->widen_f16)(w, h, n);
		for (size_t i = 0; i < n; i++) {
			uint32_t x = f2u(in[i]);
			bool ok;

			if (f32_is_nan(x)) {
				ok = bf ? h[i] == ((x >> 16) | 0x40) :
				     h[i] == (((x >> 16) & 0x8000) | 0x7e00 | ((x >> 13) & 0x3ff));
			} else {
				double want = bf ? oracle_round(in[i], 8, -126, 127) :
						   oracle_round(in[i], 11, -14, 15);

				ok = (double)w[i] == want && !signbit(w[i]) == !signbit(want);
			}
			if (!ok && (bf ? bad_bf16++ : bad_f16++) < MAX_REPORT)
				printf("\n  %s narrow_%s(0x%08" PRIx32 ") = 0x%04x", cur->name,
				       bf ? "bf16" : "f16", x, h[i]);
		}
	}
	free(in);
	free(w);
	free(h);
	CU_ASSERT_EQUAL(bad_f16, 0);
	CU_ASSERT_EQUAL(bad_bf16, 0);
}

/* --- hand-picked cases ---------------------------------------------------------------- */

struct narrow_case {
	uint32_t in;
	uint16_t want;
};

static const struct narrow_case f16_cases[] = {
	{0x3f800000, 0x3c00},   /* 1.0 */
	{0x3f801000, 0x3c00},   /* 1 + 2^-11: tie, to even (down) */
	{0x3f803000, 0x3c02},   /* 1 + 3 * 2^-11: tie, to even (up) */
	{0x3f801001, 0x3c01},   /* just above the tie */
	{0x3f800fff, 0x3c00},   /* just below the tie */
	{0x477fe000, 0x7bff},   /* 65504, largest half */
	{0x477fefff, 0x7bff},   /* just below 65520 */
	{0x477ff000, 0x7c00},   /* 65520: tie between 65504 and 2^16, to even: infinity */
	{0xc77ff000, 0xfc00},
	{0x501502f9, 0x7c00},   /* 1e10 */
	{0x7f800000, 0x7c00},   /* +inf */
	{0xff800000, 0xfc00},   /* -inf */
	{0x38800000, 0x0400},   /* 2^-14, smallest normal */
	{0x387fc000, 0x03ff},   /* 1023 * 2^-24, largest subnormal */
	{0x387fe000, 0x0400},   /* 1023.5 * 2^-24: tie, to even: smallest normal */
	{0x33800000, 0x0001},   /* 2^-24, smallest subnormal */
	{0x33000000, 0x0000},   /* 2^-25: tie, to even: zero */
	{0x33000001, 0x0001},   /* just above */
	{0x33c00000, 0x0002},   /* 3 * 2^-25: tie, to even: 2 * 2^-24 */
	{0xb3000000, 0x8000},   /* -2^-25: -0 */
	{0x00000001, 0x0000},   /* fp32 subnormal */
	{0x80000001, 0x8000},
	{0x80000000, 0x8000},   /* -0 */
	{0x7fc00000, 0x7e00},   /* quiet NaN */
	{0xffc00000, 0xfe00},
	{0x7f800001, 0x7e00},   /* signalling NaN, payload below fp16's: quiet, not inf */
	{0x7fa00000, 0x7f00},   /* signalling NaN: quieted, top payload bits kept */
	{0x7fffe000, 0x7fff},
};

static const struct narrow_case bf16_cases[] = {
	{0x3f800000, 0x3f80},   /* 1.0 */
	{0x3f808000, 0x3f80},   /* tie, to even (down) */
	{0x3f818000, 0x3f82},   /* tie, to even (up) */
	{0x3f808001, 0x3f81},
	{0x3f807fff, 0x3f80},
	{0xbf818000, 0xbf82},
	{0x7f7f7fff, 0x7f7f},   /* rounds to the largest bf16 */
	{0x7f7f8000, 0x7f80},   /* tie above the largest bf16, to even: infinity */
	{0x7f7fffff, 0x7f80},   /* FLT_MAX: infinity */
	{0xff7fffff, 0xff80},
	{0x7f800000, 0x7f80},   /* +inf */
	{0xff800000, 0xff80},   /* -inf */
	{0x00008000, 0x0000},   /* subnormal tie, to even */
	{0x00018000, 0x0002},
	{0x80008001, 0x8001},
	{0x007fffff, 0x0080},   /* largest subnormal rounds to the smallest normal */
	{0x80000000, 0x8000},   /* -0 */
	{0x7fc00000, 0x7fc0},   /* quiet NaN */
	{0x7f800001, 0x7fc0},   /* signalling NaN, payload below bf16's: quiet, not inf */
	{0x7f810000, 0x7fc1},   /* signalling NaN: quieted, payload kept */
	{0xffff0000, 0xffff},
	{0x7fffffff, 0x7fff},   /* NaN whose rounding would carry */
};

static void check_narrow_cases(const struct narrow_case *cases, size_t n, bool bf)
{
	float in[64];
	uint16_t out[64];
	unsigned int bad = 0;

	CU_ASSERT_FATAL(n <= ARRAY_LEN(in));
	/* All at once (vector body and tail), then each alone (tail only). */
	for (size_t i = 0; i < n; i++)
		in[i] = u2f(cases[i].in);
	(bf ? cur->narrow_bf16 : cur->narrow_f16)(out, in, n);
	for (size_t i = 0; i < n; i++) {
		uint16_t one;

		(bf ? cur->narrow_bf16 : cur->narrow_f16)(&one, &in[i], 1);
		if ((out[i] != cases[i].want || one != cases[i].want) && bad++ < MAX_REPORT)
			printf("\n  %s narrow_%s(0x%08" PRIx32 ") = 0x%04x / 0x%04x, want 0x%04x",
			       cur->name, bf ? "bf16" : "f16", cases[i].in, out[i], one,
			       cases[i].want);
	}
	CU_ASSERT_EQUAL(bad, 0);
}

static void test_f16_cases(void)
{
	check_narrow_cases(f16_cases, ARRAY_LEN(f16_cases), false);
}

static void test_bf16_cases(void)
{
	check_narrow_cases(bf16_cases, ARRAY_LEN(bf16_cases), true);
}

/* NaN through adds: one NaN operand is returned quieted; two give some NaN. */
static void test_nan_adds(void)
{
	enum { REP = 5, K = 7 };
	static const uint32_t acc0[K] = {
		0x7fc12345, 0x3f800000, 0x7f812345, 0x40000000, 0x7fc00002, 0x7f800000, 0x7f800000,
	};
	static const uint32_t src32[K] = {
		0x3f800000, 0xffc54321, 0x40400000, 0x7f800001, 0x7fc00001, 0xff800000, 0x7f800000,
	};
	/* Expected bits; 0 means "any NaN". */
	static const uint32_t want32[K] = {
		0x7fc12345, 0xffc54321, 0x7fc12345, 0x7fc00001, 0, 0, 0x7f800000,
	};
	static const uint16_t src16[K] = {0x3c00, 0xfe01, 0x4200, 0x7d01, 0x7e00, 0xfc00, 0x7c00};
	static const uint32_t want16[K] = {
		0x7fc12345, 0xffc02000, 0x7fc12345, 0x7fe02000, 0, 0, 0x7f800000,
	};
	static const uint16_t srcbf[K] = {0x3f80, 0xffc5, 0x4040, 0x7f81, 0x7fc0, 0xff80, 0x7f80};
	static const uint32_t wantbf[K] = {
		0x7fc12345, 0xffc50000, 0x7fc12345, 0x7fc10000, 0, 0, 0x7f800000,
	};
	float acc[REP * K], s32[REP * K];
	uint16_t s16[REP * K];
	unsigned int bad = 0;

	for (int kind = 0; kind < 3; kind++) {
		const uint32_t *want = kind == 0 ? want32 : kind == 1 ? want16 : wantbf;

		for (size_t i = 0; i < REP * K; i++) {
			acc[i] = u2f(acc0[i % K]);
			s32[i] = u2f(src32[i % K]);
			s16[i] = kind == 1 ? src16[i % K] : srcbf[i % K];
		}
		if (kind == 0)
			cur->sum_f32(acc, s32, REP * K);
		else
			(kind == 1 ? cur->widen_add_f16 : cur->widen_add_bf16)(acc, s16, REP * K);
		for (size_t i = 0; i < REP * K; i++) {
			uint32_t got = f2u(acc[i]);
			bool ok = want[i % K] ? got == want[i % K] : f32_is_nan(got);

			if (!ok && bad++ < MAX_REPORT)
				printf("\n  %s kind %d element %zu = 0x%08" PRIx32, cur->name, kind, i,
				       got);
		}
	}
	CU_ASSERT_EQUAL(bad, 0);
}

/* --- IEEE 754 without flush-to-zero ---------------------------------------------------- */

/*
 * Subnormals, signed zeros, infinities and overflow through the adds, with the exact bits
 * IEEE 754 (round to nearest even, no FTZ, no DAZ) gives, written out by hand. Under FTZ
 * or DAZ the subnormal cases come out as zeros; the kernels and the C expression would
 * still agree with each other, which is why the expected bits are not computed here.
 */
static void test_ieee_adds(void)
{
	enum { K = 16, REP = 5 };
	static const struct {
		uint32_t acc, src, want;
	} f32[] = {
		{0x00000001, 0x00000001, 0x00000002}, /* 2^-149 + 2^-149 */
		{0x00800000, 0x80000001, 0x007fffff}, /* a normal minus a subnormal: subnormal */
		{0x007fffff, 0x00000001, 0x00800000}, /* subnormals up to the smallest normal */
		{0x80000003, 0x00000001, 0x80000002},
		{0x80000001, 0x00000000, 0x80000001}, /* a subnormal input is not taken as 0 */
		{0x00000001, 0x80000001, 0x00000000}, /* x + (-x) = +0 */
		{0x3f800000, 0xbf800000, 0x00000000},
		{0x80000000, 0x80000000, 0x80000000}, /* -0 + -0 = -0 */
		{0x00000000, 0x80000000, 0x00000000}, /* +0 + -0 = +0 */
		{0x80000000, 0x00000000, 0x00000000},
		{0x80000000, 0x3f800000, 0x3f800000},
		{0x7f800000, 0x3f800000, 0x7f800000}, /* inf + 1 */
		{0xff800000, 0x7f7fffff, 0xff800000}, /* -inf + max */
		{0x7f7fffff, 0x7f7fffff, 0x7f800000}, /* overflow to inf */
		{0xff7fffff, 0xff7fffff, 0xff800000},
		{0x7f800000, 0x7f800000, 0x7f800000},
	};
	static const struct {
		uint32_t acc;
		uint16_t h;
		uint32_t want;
	} f16[] = {
		{0x00000000, 0x0001, 0x33800000}, /* 2^-24, the smallest fp16 subnormal */
		{0x00000000, 0x83ff, 0xb87fc000}, /* the largest negative subnormal */
		{0x33800000, 0x0001, 0x34000000},
		{0x00000001, 0x0000, 0x00000001}, /* fp32 subnormal acc kept */
		{0x80000000, 0x8000, 0x80000000}, /* -0 + -0 */
		{0x00000000, 0x8000, 0x00000000},
		{0x3f800000, 0x7c00, 0x7f800000},
		{0x3f800000, 0xfc00, 0xff800000},
		{0x7f7fffff, 0x7bff, 0x7f7fffff}, /* max + 65504: rounds back to max */
	}, bf16[] = {
		{0x00010000, 0x0001, 0x00020000}, /* bf16 subnormals are fp32 subnormals */
		{0x00800000, 0x8001, 0x007f0000},
		{0x00000000, 0x807f, 0x807f0000},
		{0x80000000, 0x8000, 0x80000000},
		{0x00000000, 0x8000, 0x00000000},
		{0x3f800000, 0x7f80, 0x7f800000},
		{0x7f7fffff, 0x7f7f, 0x7f800000}, /* overflow to inf */
		{0xbf800000, 0xff80, 0xff800000},
	};
	float acc[REP * K], s32[REP * K];
	uint16_t s16[REP * K];
	unsigned int bad = 0;

	for (size_t i = 0; i < REP * K; i++) {
		acc[i] = u2f(f32[i % ARRAY_LEN(f32)].acc);
		s32[i] = u2f(f32[i % ARRAY_LEN(f32)].src);
	}
	cur->sum_f32(acc, s32, REP * K);
	for (size_t i = 0; i < REP * K; i++)
		if (f2u(acc[i]) != f32[i % ARRAY_LEN(f32)].want && bad++ < MAX_REPORT)
			printf("\n  %s sum_f32 element %zu = 0x%08" PRIx32, cur->name, i,
			       f2u(acc[i]));
	for (int bf = 0; bf < 2; bf++) {
		size_t n = bf ? ARRAY_LEN(bf16) : ARRAY_LEN(f16);

		for (size_t i = 0; i < REP * K; i++) {
			acc[i] = u2f(bf ? bf16[i % n].acc : f16[i % n].acc);
			s16[i] = bf ? bf16[i % n].h : f16[i % n].h;
		}
		(bf ? cur->widen_add_bf16 : cur->widen_add_f16)(acc, s16, REP * K);
		for (size_t i = 0; i < REP * K; i++)
			if (f2u(acc[i]) != (bf ? bf16[i % n].want : f16[i % n].want) &&
			    bad++ < MAX_REPORT)
				printf("\n  %s widen_add_%s element %zu = 0x%08" PRIx32, cur->name,
				       bf ? "bf16" : "f16", i, f2u(acc[i]));
	}
	CU_ASSERT_EQUAL(bad, 0);
}

/* --- exact sums of integer data -------------------------------------------------------- */

static int rand_int(int lim)
{
	return (int)(rng() % (uint64_t)(2 * lim + 1)) - lim;
}

/*
 * 50 contributions of integers, as a chunk aggregation does: every partial sum is an integer
 * well inside the format's exact range (fp32: 2^24; fp16 result: 2048; bf16 result: 256), so
 * every add is exact in any order and the result must equal the integer sum.
 */
static void test_integer_sums_exact(void)
{
	enum { N = 4099, CONTRIB = 50 };
	struct gbuf acc_b, src_b, out_b;
	int64_t *want = calloc(N, sizeof(*want));
	unsigned int bad = 0;

	CU_ASSERT_FATAL(want != NULL);
	gbuf_init(&acc_b, N * sizeof(float), 6);
	gbuf_init(&src_b, N * sizeof(float), 2);
	gbuf_init(&out_b, N * sizeof(uint16_t), 1);

	/* fp32, in place. */
	for (int c = 0; c < CONTRIB; c++) {
		float *dst = c == 0 ? (float *)(void *)acc_b.p : (float *)(void *)src_b.p;

		for (size_t i = 0; i < N; i++) {
			int v = rand_int(100000);
			float f = (float)v;

			memcpy(&dst[i], &f, sizeof(f));
			want[i] = c == 0 ? v : want[i] + v;
		}
		if (c > 0)
			cur->sum_f32((float *)(void *)acc_b.p, (float *)(void *)src_b.p, N);
	}
	for (size_t i = 0; i < N; i++) {
		float got;

		memcpy(&got, acc_b.p + 4 * i, sizeof(got));
		bad += got != (float)want[i];
	}

	/* fp16 and bf16: widen, widen_add, narrow, then widen the result to compare. */
	for (int bf = 0; bf < 2; bf++) {
		int lim = bf ? 5 : 40;
		uint16_t *src = (uint16_t *)(void *)src_b.p;
		float *acc = (float *)(void *)acc_b.p;

		for (int c = 0; c < CONTRIB; c++) {
			for (size_t i = 0; i < N; i++) {
				int v = rand_int(lim);
				float f = (float)v;

				/* Small integers: the top 16 bits of the fp32 are exact bf16. */
				uint16_t h = bf ? (uint16_t)(f2u(f) >> 16) : 0;

				if (!bf)
					ref->narrow_f16(&h, &f, 1);
				memcpy(&src[i], &h, sizeof(h));
				want[i] = c == 0 ? v : want[i] + v;
			}
			if (c == 0)
				(bf ? cur->widen_bf16 : cur->widen_f16)(acc, src, N);
			else
				(bf ? cur->widen_add_bf16 : cur->widen_add_f16)(acc, src, N);
		}
		(bf ? cur->narrow_bf16 : cur->narrow_f16)((uint16_t *)(void *)out_b.p, acc, N);
		(bf ? ref->widen_bf16 : ref->widen_f16)(acc, (uint16_t *)(void *)out_b.p, N);
		for (size_t i = 0; i < N; i++) {
			float got;

			memcpy(&got, acc_b.p + 4 * i, sizeof(got));
			bad += got != (float)want[i];
		}
	}
	CU_ASSERT_EQUAL(bad, 0);
	CU_ASSERT(gbuf_canaries_ok(&acc_b) && gbuf_canaries_ok(&out_b));
	gbuf_fini(&acc_b);
	gbuf_fini(&src_b);
	gbuf_fini(&out_b);
	free(want);
}

/* --- selection ------------------------------------------------------------------------ */

static void test_get(void)
{
	CU_ASSERT_PTR_EQUAL(sum_kernels_get(SUM_ISA_SCALAR), &sum_kernels_scalar);
	CU_ASSERT_PTR_NULL(sum_kernels_get(SUM_ISA_COUNT));
	CU_ASSERT_PTR_NULL(sum_kernels_get((enum sum_isa)42));
	for (int isa = 0; isa < SUM_ISA_COUNT; isa++) {
		const struct sum_kernels *k = sum_kernels_get((enum sum_isa)isa);

		if (k == NULL)
			continue;
		CU_ASSERT_EQUAL(k->isa, (enum sum_isa)isa);
		CU_ASSERT_PTR_NOT_NULL(k->name);
		CU_ASSERT(k->sum_f32 && k->widen_f16 && k->widen_add_f16 && k->narrow_f16 &&
			  k->widen_bf16 && k->widen_add_bf16 && k->narrow_bf16);
	}
}

static void test_select(void)
{
	const struct sum_kernels *avx2 = sum_kernels_get(SUM_ISA_AVX2);
	const struct sum_kernels *avx512 = sum_kernels_get(SUM_ISA_AVX512);
	const struct sum_kernels *at256 = avx2 != NULL ? avx2 : &sum_kernels_scalar;
	const struct sum_kernels *at512 = avx512 != NULL ? avx512 : at256;

	CU_ASSERT_PTR_EQUAL(sum_kernels_select(0), &sum_kernels_scalar);
	CU_ASSERT_PTR_EQUAL(sum_kernels_select(64), &sum_kernels_scalar);
	CU_ASSERT_PTR_EQUAL(sum_kernels_select(128), &sum_kernels_scalar);
	CU_ASSERT_PTR_EQUAL(sum_kernels_select(256), at256);
	CU_ASSERT_PTR_EQUAL(sum_kernels_select(511), at256);
	CU_ASSERT_PTR_EQUAL(sum_kernels_select(512), at512);
	CU_ASSERT_PTR_EQUAL(sum_kernels_select(32768), at512);
	/* No EAL here: the limit reads 0 and EAL's default, 256, applies. */
	CU_ASSERT_PTR_EQUAL(sum_kernels_select_eal(), at256);
}

/* --- main ----------------------------------------------------------------------------- */

static const struct sum_kernels *suite_variant[SUM_ISA_COUNT];

static int init_scalar(void)
{
	cur = suite_variant[SUM_ISA_SCALAR];
	return 0;
}

static int init_avx2(void)
{
	cur = suite_variant[SUM_ISA_AVX2];
	return 0;
}

static int init_avx512(void)
{
	cur = suite_variant[SUM_ISA_AVX512];
	return 0;
}

/* The scalar variant's answer (every variant must give it). */
static uint16_t ref_csum(const uint8_t *b, size_t n)
{
	return ref->csum16(b, n, 0);
}

/* csum16 against the byte-wise big-endian reference of lib/wire.c, on random buffers of
 * every length up to 300 and some long ones, at every byte offset mod 64, with an init. */
static void test_csum16(void)
{
	static uint8_t buf[9000 + 64];
	int bad = 0;

	for (size_t i = 0; i < sizeof(buf); i++)
		buf[i] = (uint8_t)rng();
	for (size_t n = 0; n < 9000; n = n < 300 ? n + 1 : n * 3 + 7) {
		for (size_t off = 0; off < 64; off += 1 + (n > 300) * 20) {
			const uint8_t *b = buf + off;
			uint32_t be = wire_csum_add(0, b, n);
			uint16_t ref = (uint16_t)~wire_csum_fold(be);
			uint16_t want = n == 0 ? 0 : (uint16_t)((ref >> 8) | (ref << 8));
			/* A valid datagram: its own checksum appended folds to 0xffff. */
			bad += cur->csum16(b, n, 0) != want;
			bad += cur->csum16(b, n, 0) != ref_csum(b, n);
		}
	}
	/* init is added: the pseudo-header split off gives the same sum. */
	bad += cur->csum16(buf + 8, 1000, ref->csum16(buf, 8, 0)) != cur->csum16(buf, 1008, 0);
	/* All ones and all zeros. */
	memset(buf, 0xff, 4096);
	bad += cur->csum16(buf, 4096, 0) != 0xffff;
	memset(buf, 0, 4096);
	bad += cur->csum16(buf, 4096, 0) != 0;
	CU_ASSERT(bad == 0);
}

/* --- MX formats ------------------------------------------------------------------------ */

/*
 * A reference written from the OCP MX v1.0 text, independent of the kernels' bit tricks:
 * element values from their definitions, X x P in double (exact) rounded once to fp32, and
 * encoding by a search over every code of the element type for the one nearest to V / X
 * (ties to the even code, which is the even mantissa, or the even integer for INT8),
 * saturating at the largest magnitude.
 */
static const char *const mx_names[SUM_MX_COUNT] = {"mxint8", "mxfp8", "mxfp4"};
static const int mx_emax[SUM_MX_COUNT] = {0, 8, 2};

/* Element value of a code; NaN for E4M3 S.1111.111. */
static double ref_p(enum sum_mx f, unsigned int c)
{
	if (f == SUM_MX_INT8)
		return (double)(int8_t)c / 64.0;
	if (f == SUM_MX_FP8) {
		unsigned int e = (c >> 3) & 15, m = c & 7;
		double v = e == 0 ? m / 8.0 * pow2(-6) : (1.0 + m / 8.0) * pow2((int)e - 7);

		if ((c & 0x7f) == 0x7f)
			return NAN;
		return (c & 0x80) ? -v : v;
	}
	unsigned int e = (c >> 1) & 3, m = c & 1;
	double v = e == 0 ? m * 0.5 : (1.0 + m / 2.0) * pow2((int)e - 1);

	return (c & 8) ? -v : v;
}

static unsigned int ref_code(enum sum_mx f, const uint8_t *elems, unsigned int i)
{
	return f == SUM_MX_FP4 ? (elems[i / 2] >> (4 * (i & 1))) & 0xf : elems[i];
}

/* Decode n_blocks of a chunk in the wire layout. */
static void ref_decode(enum sum_mx f, const uint8_t *src, size_t n_blocks, uint32_t *out)
{
	const size_t eb = sum_mx_elem_bytes(f);

	for (size_t b = 0; b < n_blocks; b++) {
		unsigned int sc = src[n_blocks * eb + b];

		for (unsigned int i = 0; i < SUM_MX_BLOCK; i++) {
			double p = ref_p(f, ref_code(f, src + b * eb, i));
			uint32_t *o = &out[b * SUM_MX_BLOCK + i];

			if (sc == 255 || p != p)
				*o = 0x7fc00000u;
			else
				*o = f2u((float)(p * pow2((int)sc - 127)));
		}
	}
}

static unsigned int ref_round(enum sum_mx f, double t)
{
	unsigned int best = 0, top = f == SUM_MX_INT8 ? 128 : f == SUM_MX_FP8 ? 0x7f : 8;
	double bd = t;

	for (unsigned int c = 1; c < top; c++) {
		double d = fabs(ref_p(f, c) - t);

		if (d < bd || (d == bd && (c & 1) == 0)) {
			bd = d;
			best = c;
		}
	}
	return best;
}

static void ref_encode(enum sum_mx f, const float *v, size_t n_blocks, uint8_t *dst)
{
	const size_t eb = sum_mx_elem_bytes(f);

	memset(dst, 0, n_blocks * (eb + 1));
	for (size_t b = 0; b < n_blocks; b++) {
		const float *blk = v + b * SUM_MX_BLOCK;
		double amax = 0;
		bool special = false;
		int sc = 0;

		for (unsigned int i = 0; i < SUM_MX_BLOCK; i++) {
			double a = fabs((double)blk[i]);

			special |= a != a || a == INFINITY;
			amax = a > amax ? a : amax;
		}
		if (special)
			sc = 255;
		else if (amax > 0)
			sc = ilog2(amax) - mx_emax[f] + 127;
		sc = sc < 0 ? 0 : sc;
		dst[n_blocks * eb + b] = (uint8_t)sc;
		if (sc == 255)
			continue;
		for (unsigned int i = 0; i < SUM_MX_BLOCK; i++) {
			bool neg = (f2u(blk[i]) >> 31) != 0;
			unsigned int mag = ref_round(f, fabs((double)blk[i]) / pow2(sc - 127)), c;

			if (f == SUM_MX_INT8)
				c = neg ? (256 - mag) & 0xff : mag;
			else
				c = mag | (neg ? (f == SUM_MX_FP8 ? 0x80 : 0x8) : 0);
			if (f == SUM_MX_FP4)
				dst[b * eb + i / 2] |= (uint8_t)(c << (4 * (i & 1)));
			else
				dst[b * eb + i] = (uint8_t)c;
		}
	}
}

/* Compare decoded fp32 words, both NaN counting as equal only if both are 0x7fc00000. */
static int cmp_words(const char *what, enum sum_mx f, const uint32_t *got, const uint32_t *want,
		     size_t n)
{
	int bad = 0;

	for (size_t i = 0; i < n; i++) {
		if (got[i] == want[i])
			continue;
		if (bad++ < MAX_REPORT && reported++ < MAX_REPORT)
			printf("\n  %s %s %s [%zu]: got 0x%08x want 0x%08x", cur->name, mx_names[f],
			       what, i, got[i], want[i]);
	}
	return bad;
}

static int cmp_bytes(const char *what, enum sum_mx f, const uint8_t *got, const uint8_t *want,
		     size_t n)
{
	int bad = 0;

	for (size_t i = 0; i < n; i++) {
		if (got[i] == want[i])
			continue;
		if (bad++ < MAX_REPORT && reported++ < MAX_REPORT)
			printf("\n  %s %s %s byte %zu: got 0x%02x want 0x%02x", cur->name,
			       mx_names[f], what, i, got[i], want[i]);
	}
	return bad;
}

/* Every code point under every scale: decode and decode-add against the reference. */
static void test_mx_decode_all(void)
{
	enum { NB = 16 };               /* 256 bytes: 8 blocks of 8-bit codes, 16 of fp4 */
	static uint8_t src[NB * 33];
	static uint32_t want[NB * 32], got[NB * 32], acc0[NB * 32];
	int bad = 0;

	reported = 0;
	for (int f = 0; f < SUM_MX_COUNT; f++) {
		const size_t eb = sum_mx_elem_bytes((enum sum_mx)f);
		size_t nb = f == SUM_MX_FP4 ? 16 : 8;

		for (size_t i = 0; i < nb * eb; i++)       /* every byte value */
			src[i] = (uint8_t)i;
		for (unsigned int sc = 0; sc < 256; sc++) {
			for (size_t b = 0; b < nb; b++)
				src[nb * eb + b] = (uint8_t)((sc + b * 37) % 256);
			ref_decode((enum sum_mx)f, src, nb, want);
			memset(got, 0x55, sizeof(got));
			cur->mx_widen[f]((float *)got, src, nb);
			bad += cmp_words("widen", (enum sum_mx)f, got, want, nb * 32);
			/* decode-add onto finite values: acc + (the reference's value), in fp32 */
			for (size_t i = 0; i < nb * 32; i++) {
				acc0[i] = f2u(rand_f32_normal());
				got[i] = acc0[i];
				if (!f32_is_nan(want[i]))
					want[i] = f2u(u2f(acc0[i]) + u2f(want[i]));
			}
			cur->mx_widen_add[f]((float *)got, src, nb);
			bad += cmp_words("widen_add", (enum sum_mx)f, got, want, nb * 32);
		}
	}
	CU_ASSERT(bad == 0);
}

/* Values that test the rounding: code values, midpoints (ties), midpoints +- one ulp, and
 * values past the largest magnitude, each times a scale, in blocks whose largest element
 * pins the scale. */
static float mx_hard_value(enum sum_mx f, int sc)
{
	uint64_t r = rng();
	unsigned int top = f == SUM_MX_INT8 ? 127 : f == SUM_MX_FP8 ? 0x7e : 7;
	unsigned int c = (unsigned int)(r % top);
	double lo = ref_p(f, c), hi = ref_p(f, c + 1), t;
	float v;

	switch ((r >> 16) % 5) {
	case 0:
		t = lo;
		break;
	case 1:
		t = (lo + hi) / 2;
		break;
	case 2:
		t = hi * (1 + pow2(-20)) + ref_p(f, top) * ((r >> 24) % 3); /* past the top */
		break;
	default:
		t = (lo + hi) / 2;
		break;
	}
	v = (float)(t * pow2(sc - 127));
	if ((r >> 16) % 5 == 3)
		v = u2f(f2u(v) + 1);
	else if ((r >> 16) % 5 == 4 && f2u(v) != 0)
		v = u2f(f2u(v) - 1);
	return (r >> 40) & 1 ? -v : v;
}

static void fill_mx_block(enum sum_mx f, float *blk, uint64_t kind)
{
	int sc = (int)(rng() % 255);

	for (unsigned int i = 0; i < SUM_MX_BLOCK; i++) {
		switch (kind % 6) {
		case 0:
			blk[i] = rand_f32_normal();
			break;
		case 1:
			blk[i] = u2f(rand_f32_bits());
			break;
		case 2:
			blk[i] = mx_hard_value(f, sc);
			break;
		case 3:                 /* every element rounds to zero but one */
			blk[i] = (float)(pow2(sc - 127) * ref_p(f, 1) * 0.49);
			break;
		case 4:                 /* fp32 subnormals and zeros: the smallest scale */
			blk[i] = u2f((uint32_t)(rng() & 0x807fffff) >> ((rng() % 4) * 8));
			break;
		default:                /* the largest scales */
			blk[i] = u2f((uint32_t)(0x7e000000 + (rng() % 0x1800000)) |
				     (uint32_t)(rng() & 1) << 31);
			break;
		}
	}
	if (kind % 6 == 3)
		blk[rng() % SUM_MX_BLOCK] = (float)(pow2(sc - 127) * ref_p(f, 5));
	if (kind % 6 == 2)              /* the top magnitude pins the scale to sc */
		blk[rng() % SUM_MX_BLOCK] = (float)(pow2(sc - 127) * (f == SUM_MX_INT8 ? 1.5 :
								      f == SUM_MX_FP8 ? 300 : 5));
}

/* Encode against the reference: random, hard, zero-rounding, subnormal, huge blocks. */
static void test_mx_encode_ref(void)
{
	enum { NB = 64 };
	static float v[NB * 32];
	static uint8_t want[NB * 33], got[NB * 33];
	int bad = 0;

	reported = 0;
	for (int f = 0; f < SUM_MX_COUNT; f++) {
		const size_t bytes = NB * (sum_mx_elem_bytes((enum sum_mx)f) + 1);

		for (int rep = 0; rep < 60; rep++) {
			for (size_t b = 0; b < NB; b++)
				fill_mx_block((enum sum_mx)f, v + b * 32, rng());
			ref_encode((enum sum_mx)f, v, NB, want);
			memset(got, 0x55, sizeof(got));
			cur->mx_narrow[f](got, v, NB);
			bad += cmp_bytes("narrow", (enum sum_mx)f, got, want, bytes);
		}
	}
	CU_ASSERT(bad == 0);
}

/* Every code under every scale that keeps the block finite encodes back to itself, in a
 * block that holds the largest magnitude (which fixes the scale). */
static void test_mx_round_trip(void)
{
	static uint8_t src[8 * 33], got[8 * 33];
	static float v[8 * 32];
	int bad = 0;

	reported = 0;
	for (int f = 0; f < SUM_MX_COUNT; f++) {
		const size_t eb = sum_mx_elem_bytes((enum sum_mx)f);
		unsigned int top = f == SUM_MX_INT8 ? 0x7f : f == SUM_MX_FP8 ? 0x7e : 0x7;
		size_t nb = f == SUM_MX_FP4 ? 1 : 8;    /* every code (fp4: all 16 twice) */
		unsigned int smax = f == SUM_MX_INT8 ? 254 : f == SUM_MX_FP8 ? 246 : 252;

		for (unsigned int sc = 0; sc <= smax; sc++) {
			for (size_t i = 0; i < nb * eb; i++) {
				unsigned int c = (unsigned int)i, c2;

				if (f == SUM_MX_FP4) {
					c = (unsigned int)(2 * i) % 16;
					c2 = (c + 1) % 16;
					src[i] = (uint8_t)(c | c2 << 4);
					continue;
				}
				/* neither NaN, nor INT8's -2, nor INT8's -0 (none) */
				if ((f == SUM_MX_FP8 && (c & 0x7f) == 0x7f) ||
				    (f == SUM_MX_INT8 && c == 0x80))
					c = top;
				src[i] = (uint8_t)c;
			}
			if (f == SUM_MX_FP4)
				src[0] = (uint8_t)(top | (src[0] & 0xf0));
			for (size_t b = 0; b < nb; b++) {
				if (f != SUM_MX_FP4)
					src[b * eb] = (uint8_t)top;     /* pins the scale */
				src[nb * eb + b] = (uint8_t)sc;
			}
			ref->mx_widen[f](v, src, nb);
			cur->mx_narrow[f](got, v, nb);
			bad += cmp_bytes("round trip", (enum sum_mx)f, got, src, nb * (eb + 1));
		}
	}
	CU_ASSERT(bad == 0);
}

/* One block count at one pair of offsets: narrow, widen_add and widen against the reference,
 * canaries intact; returns the mismatches. */
static int mx_length_case(enum sum_mx f, size_t nb, size_t off, size_t soff)
{
	const size_t eb = sum_mx_elem_bytes(f) + 1;
	struct gbuf acc, acc_ref, enc, enc_ref;
	int bad = 0;

	gbuf_init(&acc, nb * 128, off);
	gbuf_init(&acc_ref, nb * 128, 0);
	gbuf_init(&enc, nb * eb, soff);
	gbuf_init(&enc_ref, nb * eb, 0);
	for (size_t b = 0; b < nb; b++)
		fill_mx_block(f, (float *)acc_ref.p + b * 32, rng());
	memcpy(acc.p, acc_ref.p, nb * 128);
	cur->mx_narrow[f](enc.p, (const float *)acc.p, nb);
	ref->mx_narrow[f](enc_ref.p, (const float *)acc_ref.p, nb);
	bad += cmp_bytes("narrow", f, enc.p, enc_ref.p, nb * eb);
	bad += !gbuf_canaries_ok(&enc);
	cur->mx_widen_add[f]((float *)acc.p, enc.p, nb);
	ref->mx_widen_add[f]((float *)acc_ref.p, enc_ref.p, nb);
	/* NaN + NaN may keep either payload (sum.h): compare classes there */
	for (size_t i = 0; i < nb * 32; i++) {
		uint32_t a, r;

		memcpy(&a, acc.p + 4 * i, 4);
		memcpy(&r, acc_ref.p + 4 * i, 4);
		bad += a != r && !(f32_is_nan(a) && f32_is_nan(r));
	}
	cur->mx_widen[f]((float *)acc.p, enc.p, nb);
	ref->mx_widen[f]((float *)acc_ref.p, enc_ref.p, nb);
	bad += memcmp(acc.p, acc_ref.p, nb * 128) != 0;
	bad += !gbuf_canaries_ok(&acc);
	gbuf_fini(&acc);
	gbuf_fini(&acc_ref);
	gbuf_fini(&enc);
	gbuf_fini(&enc_ref);
	return bad;
}

/* Odd block counts at odd offsets: the same bytes as the reference, nothing outside. */
static void test_mx_lengths(void)
{
	static const size_t counts[] = {0, 1, 2, 3, 5, 7, 13, 43, 139};
	int bad = 0;

	reported = 0;
	for (int f = 0; f < SUM_MX_COUNT; f++)
		for (size_t ci = 0; ci < ARRAY_LEN(counts); ci++)
			for (size_t oi = 0; oi < ARRAY_LEN(dst_offsets); oi++)
				bad += mx_length_case((enum sum_mx)f, counts[ci], dst_offsets[oi],
						      src_offsets[oi % 4]);
	CU_ASSERT(bad == 0);
}

/* The cases the specification names, spelled out. */
static void test_mx_cases(void)
{
	static float v[64];
	static uint8_t e[66];
	static float d[64];

	for (int f = 0; f < SUM_MX_COUNT; f++) {
		const size_t eb = sum_mx_elem_bytes((enum sum_mx)f);

		/* All zeros: the smallest scale, zero elements, zeros back. */
		memset(v, 0, sizeof(v));
		cur->mx_narrow[f](e, v, 2);
		CU_ASSERT(e[2 * eb] == 0 && e[2 * eb + 1] == 0);
		for (size_t i = 0; i < 2 * eb; i++)
			CU_ASSERT(e[i] == 0);
		cur->mx_widen[f](d, e, 2);
		for (int i = 0; i < 64; i++)
			CU_ASSERT(f2u(d[i]) == 0);
		/* A NaN or an infinity in a block: scale NaN, the whole block NaN, not the
		 * other block. */
		for (int i = 0; i < 64; i++)
			v[i] = (float)(i + 1);
		v[3] = u2f(0x7f800000);
		v[40] = u2f(0xffc00001);
		cur->mx_narrow[f](e, v, 2);
		CU_ASSERT(e[2 * eb] == 0xff && e[2 * eb + 1] == 0xff);
		v[40] = 33.0f;
		cur->mx_narrow[f](e, v, 2);
		CU_ASSERT(e[2 * eb] == 0xff && e[2 * eb + 1] != 0xff);
		cur->mx_widen[f](d, e, 2);
		for (int i = 0; i < 32; i++)
			CU_ASSERT(f2u(d[i]) == 0x7fc00000u);
		for (int i = 32; i < 64; i++)
			CU_ASSERT(!f32_is_nan(f2u(d[i])));
		/* The largest fp32 values: scale 254 (INT8), finite back, saturated. */
		for (int i = 0; i < 32; i++)
			v[i] = u2f(0x7f7fffff);
		cur->mx_narrow[f](e, v, 1);
		CU_ASSERT(e[eb] == (f == SUM_MX_INT8 ? 254 : f == SUM_MX_FP8 ? 246 : 252));
		cur->mx_widen[f](d, e, 1);
		for (int i = 0; i < 32; i++)
			CU_ASSERT(d[i] > 1e38f && d[i] < u2f(0x7f800000));
	}
	/* MXINT8 0x80 is -2 x X; E4M3 0x7f and 0xff are NaN; E2M1 has every code finite. */
	memset(e, 0, sizeof(e));
	e[0] = 0x80;
	e[32] = 127;
	cur->mx_widen[SUM_MX_INT8](d, e, 1);
	CU_ASSERT(d[0] == -2.0f);
	/* -2 x 2^127 overflows to -infinity before the add, as the product is rounded
	 * first (a fused add would give -2^128 + 3e38, finite). */
	e[32] = 254;
	for (int i = 0; i < 32; i++)
		d[i] = 3e38f;
	cur->mx_widen_add[SUM_MX_INT8](d, e, 1);
	CU_ASSERT(f2u(d[0]) == 0xff800000u && d[1] == 3e38f);
	e[0] = 0x7f;
	e[1] = 0xff;
	e[2] = 0x7e;
	e[32] = 127;
	cur->mx_widen[SUM_MX_FP8](d, e, 1);
	CU_ASSERT(f2u(d[0]) == 0x7fc00000u && f2u(d[1]) == 0x7fc00000u && d[2] == 448.0f);
	e[0] = 0xf7;            /* -6 then 6 */
	e[16] = 127;
	cur->mx_widen[SUM_MX_FP4](d, e, 1);
	CU_ASSERT(d[0] == 6.0f && d[1] == -6.0f);
	/* Saturation and ties: 1.99 -> 127/64 in INT8; 2.5 -> 2 and 3.5 -> 4 in E2M1 (X = 1). */
	memset(v, 0, sizeof(v));
	v[0] = 1.99f;
	cur->mx_narrow[SUM_MX_INT8](e, v, 1);
	CU_ASSERT(e[0] == 127 && e[32] == 127);
	v[0] = 6.0f;
	v[1] = 2.5f;
	v[2] = 3.5f;
	v[3] = -0.25f;          /* a tie between 0 and 0.5: -0 */
	cur->mx_narrow[SUM_MX_FP4](e, v, 1);
	CU_ASSERT(e[0] == (0x7 | 0x4 << 4) && e[1] == (0x6 | 0x8 << 4) && e[16] == 127);
}

/* The worked example of docs/PROTOCOL.md section 4, byte for byte. */
static void test_mx_protocol_example(void)
{
	static const uint8_t want[SUM_MX_COUNT][33] = {
		{ 0xd0, 0xd4, 0xd8, 0xdc, 0xe0, 0xe4, 0xe8, 0xec, 0xf0, 0xf4, 0xf8, 0xfc, 0x00,
		  0x04, 0x08, 0x0c, 0x10, 0x14, 0x18, 0x1c, 0x20, 0x24, 0x28, 0x2c, 0x30, 0x34,
		  0x38, 0x3c, 0x40, 0x44, 0x48, 0x4c, 0x80 },
		{ 0xf4, 0xf3, 0xf2, 0xf1, 0xf0, 0xee, 0xec, 0xea, 0xe8, 0xe4, 0xe0, 0xd8, 0x00,
		  0x58, 0x60, 0x64, 0x68, 0x6a, 0x6c, 0x6e, 0x70, 0x71, 0x72, 0x73, 0x74, 0x75,
		  0x76, 0x77, 0x78, 0x78, 0x79, 0x7a, 0x78 },
		{ 0xdd, 0xcc, 0xcc, 0xab, 0xaa, 0x89, 0x00, 0x21, 0x22, 0x43, 0x44, 0x54, 0x55,
		  0x66, 0x66, 0x66, 0x7e },
	};
	float v[32], d[32];
	uint8_t got[33], r[33];

	for (int i = 0; i < 32; i++)
		v[i] = (float)(i - 12) / 8.0f;
	for (int f = 0; f < SUM_MX_COUNT; f++) {
		size_t len = sum_mx_elem_bytes((enum sum_mx)f) + 1;

		cur->mx_narrow[f](got, v, 1);
		ref_encode((enum sum_mx)f, v, 1, r);
		CU_ASSERT(memcmp(got, want[f], len) == 0);
		CU_ASSERT(memcmp(r, want[f], len) == 0);
		cur->mx_widen[f](d, want[f], 1);
		if (f == SUM_MX_INT8)
			for (int i = 0; i < 32; i++)
				CU_ASSERT(d[i] == v[i]);
	}
	cur->mx_widen[SUM_MX_FP8](d, want[SUM_MX_FP8], 1);
	CU_ASSERT(d[29] == 2.0f && d[31] == 2.5f);
	cur->mx_widen[SUM_MX_FP4](d, want[SUM_MX_FP4], 1);
	CU_ASSERT(d[0] == -1.5f && d[1] == -1.5f && f2u(d[11]) == 0x80000000u && d[31] == 2.0f);
}

static const struct {
	const char *name;
	CU_TestFunc fn;
} variant_tests[] = {
	{"random sum_f32 matches scalar", test_random_sum_f32},
	{"random widen_f16 matches scalar", test_random_widen_f16},
	{"random widen_add_f16 matches scalar", test_random_widen_add_f16},
	{"random narrow_f16 matches scalar", test_random_narrow_f16},
	{"random widen_bf16 matches scalar", test_random_widen_bf16},
	{"random widen_add_bf16 matches scalar", test_random_widen_add_bf16},
	{"random narrow_bf16 matches scalar", test_random_narrow_bf16},
	{"adds match the C expression", test_add_matches_c},
	{"fp16: all 65536 values widen exactly and round-trip", test_f16_all_values},
	{"bf16: all 65536 values widen exactly and round-trip", test_bf16_all_values},
	{"narrow: every fp32 matches scalar", test_narrow_all_f32},
	{"narrow: rounding oracle", test_narrow_oracle},
	{"fp16 narrow cases", test_f16_cases},
	{"bf16 narrow cases", test_bf16_cases},
	{"NaN through adds", test_nan_adds},
	{"subnormals, signed zeros, infinities: IEEE, no FTZ/DAZ", test_ieee_adds},
	{"integer sums are exact", test_integer_sums_exact},
	{"csum16 matches the byte-wise reference", test_csum16},
	{"mx: every code under every scale decodes as specified", test_mx_decode_all},
	{"mx: encode matches the specification's conversion", test_mx_encode_ref},
	{"mx: every code round-trips", test_mx_round_trip},
	{"mx: odd block counts and offsets match scalar", test_mx_lengths},
	{"mx: zeros, NaN, infinity, extreme scales, ties", test_mx_cases},
	{"PROTOCOL.md MX worked example", test_mx_protocol_example},
};

int main(void)
{
	static const CU_InitializeFunc inits[SUM_ISA_COUNT] = {
		init_scalar, init_avx2, init_avx512,
	};
	unsigned int failures;
	CU_pSuite s;

	ref = sum_kernels_get(SUM_ISA_SCALAR);
	if (CU_initialize_registry() != CUE_SUCCESS)
		return 1;

	s = CU_add_suite("selection", NULL, NULL);
	if (s == NULL || !CU_add_test(s, "sum_kernels_get", test_get) ||
	    !CU_add_test(s, "sum_kernels_select", test_select))
		goto fail;

	for (int isa = 0; isa < SUM_ISA_COUNT; isa++) {
		static const char *const names[SUM_ISA_COUNT] = {"scalar", "avx2", "avx512"};

		suite_variant[isa] = sum_kernels_get((enum sum_isa)isa);
		if (suite_variant[isa] == NULL) {
			printf("kernels %s: not supported by this CPU or build, not tested\n",
			       names[isa]);
			continue;
		}
		s = CU_add_suite(names[isa], inits[isa], NULL);
		if (s == NULL)
			goto fail;
		for (size_t t = 0; t < ARRAY_LEN(variant_tests); t++) {
			/* The oracle runs on the reference; SIMD variants are compared with it. */
			if (isa != SUM_ISA_SCALAR && variant_tests[t].fn == test_narrow_oracle)
				continue;
			if (!CU_add_test(s, variant_tests[t].name, variant_tests[t].fn))
				goto fail;
		}
	}

	CU_basic_set_mode(CU_BRM_VERBOSE);
	CU_basic_run_tests();
	failures = CU_get_number_of_failures();
	CU_cleanup_registry();
	return (int)(failures > 255 ? 255 : failures);
fail:
	fprintf(stderr, "test_kernels: CUnit registry: %s\n", CU_get_error_msg());
	CU_cleanup_registry();
	return 1;
}
