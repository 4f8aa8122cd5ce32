/* SPDX-License-Identifier: BSD-3-Clause
 *
 * Scalar reference kernels (fast path). Portable C: the fallback on CPUs without AVX2 and
 * the reference every SIMD variant is tested against, bit for bit.
 *
 * Built with -ffp-contract=off and -fno-tree-vectorize, so this file is plain scalar code
 * whatever the compiler's vectoriser does. Memory is accessed through memcpy (one unaligned
 * movss/movzwl each), because packet payloads may sit at any byte offset.
 */
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "mx_impl.h"
#include "scalar.h"
#include "sum.h"

/* IEEE half -> fp32, exact. NaN: sign and payload kept, quiet bit set (as vcvtph2ps). */
static inline float
f16_to_f32(uint16_t h)
{
	uint32_t sign = (uint32_t)(h & 0x8000) << 16;
	uint32_t exp = (h >> 10) & 0x1f;
	uint32_t mant = h & 0x3ff;
	int shift;

	if (exp == 0x1f) {
		if (mant == 0)
			return f32_from_bits(sign | 0x7f800000);
		return f32_from_bits(sign | 0x7fc00000 | (mant << 13));
	}
	if (exp != 0)
		return f32_from_bits(sign | ((exp + 112) << 23) | (mant << 13));
	if (mant == 0)
		return f32_from_bits(sign);
	/* Subnormal mant * 2^-24: normalise so that bit 10 is the implicit one. */
	shift = __builtin_clz(mant) - 21; /* 1 .. 10 */
	mant = (mant << shift) & 0x3ff;
	return f32_from_bits(sign | ((uint32_t)(113 - shift) << 23) | (mant << 13));
}

/* fp32 -> IEEE half, round to nearest even. NaN: quiet, sign and top 10 payload bits kept. */
static inline uint16_t
f32_to_f16(float f)
{
	uint32_t x = f32_to_bits(f);
	uint32_t sign = (x >> 16) & 0x8000;
	uint32_t ax = x & 0x7fffffff;
	uint32_t mant, q, rem, half;
	int shift;

	if (ax > 0x7f800000) /* NaN */
		return (uint16_t)(sign | 0x7e00 | ((ax >> 13) & 0x3ff));
	if (ax >= 0x477ff000) /* >= 65520 (halfway above 65504), or inf */
		return (uint16_t)(sign | 0x7c00);
	if (ax >= 0x38800000) { /* >= 2^-14: normal half */
		ax -= (uint32_t)(127 - 15) << 23;
		ax += 0xfff + ((ax >> 13) & 1);
		return (uint16_t)(sign | (ax >> 13));
	}
	if (ax <= 0x33000000) /* <= 2^-25: rounds (ties to even) to zero */
		return (uint16_t)sign;
	/* Subnormal half q * 2^-24 with q = mant * 2^(exp - 150 + 24), exp in 102 .. 112. */
	shift = 126 - (int)(ax >> 23); /* 14 .. 24 */
	mant = (ax & 0x7fffff) | 0x800000;
	q = mant >> shift;
	rem = mant & ((1u << shift) - 1);
	half = 1u << (shift - 1);
	if (rem > half || (rem == half && (q & 1)))
		q++; /* may carry into the smallest normal, 0x400 */
	return (uint16_t)(sign | q);
}

/* bf16 -> fp32: exact on every bit pattern. */
static inline float
bf16_to_f32(uint16_t h)
{
	return f32_from_bits((uint32_t)h << 16);
}

/* fp32 -> bf16, round to nearest even. NaN: quiet, sign and top 7 payload bits kept. */
static inline uint16_t
f32_to_bf16(float f)
{
	uint32_t x = f32_to_bits(f);

	if ((x & 0x7fffffff) > 0x7f800000)
		return (uint16_t)((x >> 16) | 0x40);
	x += 0x7fff + ((x >> 16) & 1);
	return (uint16_t)(x >> 16);
}

static void
sum_f32_scalar(float *acc, const float *src, size_t n)
{
	for (size_t i = 0; i < n; i++)
		store_f32(&acc[i], load_f32(&acc[i]) + load_f32(&src[i]));
}

/*
 * The fp16 and bf16 kernels differ only in the conversion, so each operation has one loop,
 * taking the conversion as a function pointer (and, for widen, add as a flag). The loops are
 * always inlined into the one-line kernels after them, with constant arguments: GCC inlines
 * the converter and drops the dead branch, leaving one specialised loop per kernel.
 */
static inline __attribute__((always_inline)) void
widen_loop(float *acc, const uint16_t *src, size_t n, float (*cvt)(uint16_t h), bool add)
{
	for (size_t i = 0; i < n; i++) {
		if (add)
			store_f32(&acc[i], load_f32(&acc[i]) + cvt(load_u16(&src[i])));
		else
			store_f32(&acc[i], cvt(load_u16(&src[i])));
	}
}

static inline __attribute__((always_inline)) void
narrow_loop(uint16_t *dst, const float *acc, size_t n, uint16_t (*cvt)(float f))
{
	for (size_t i = 0; i < n; i++)
		store_u16(&dst[i], cvt(load_f32(&acc[i])));
}

static void
widen_f16_scalar(float *acc, const uint16_t *src, size_t n)
{
	widen_loop(acc, src, n, f16_to_f32, false);
}

static void
widen_add_f16_scalar(float *acc, const uint16_t *src, size_t n)
{
	widen_loop(acc, src, n, f16_to_f32, true);
}

static void
narrow_f16_scalar(uint16_t *dst, const float *acc, size_t n)
{
	narrow_loop(dst, acc, n, f32_to_f16);
}

static void
widen_bf16_scalar(float *acc, const uint16_t *src, size_t n)
{
	widen_loop(acc, src, n, bf16_to_f32, false);
}

static void
widen_add_bf16_scalar(float *acc, const uint16_t *src, size_t n)
{
	widen_loop(acc, src, n, bf16_to_f32, true);
}

static void
narrow_bf16_scalar(uint16_t *dst, const float *acc, size_t n)
{
	narrow_loop(dst, acc, n, f32_to_bf16);
}

static uint16_t
csum16_scalar(const void *buf, size_t n, uint64_t init)
{
	/* The accumulator takes < 2^33 per 8 bytes: no overflow below 2^31 x 8 bytes. */
	return sum_csum_fold(sum_csum_tail(init & 0xffffffffu, buf, n) + (init >> 32));
}

const struct sum_kernels sum_kernels_scalar = {
	.name = "scalar",
	.isa = SUM_ISA_SCALAR,
	.bitwidth = 64,
	.sum_f32 = sum_f32_scalar,
	.widen_f16 = widen_f16_scalar,
	.widen_add_f16 = widen_add_f16_scalar,
	.narrow_f16 = narrow_f16_scalar,
	.widen_bf16 = widen_bf16_scalar,
	.widen_add_bf16 = widen_add_bf16_scalar,
	.narrow_bf16 = narrow_bf16_scalar,
	.csum16 = csum16_scalar,
	MX_TABLE(scalar),
};
