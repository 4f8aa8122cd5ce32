/* SPDX-License-Identifier: BSD-3-Clause
 *
 * MX kernels, internal to the kernels library: the arithmetic every variant shares (always
 * inline, so that each file compiles it with its own flags) and the functions each variant
 * defines for its table in sum_<isa>.c. sum.h documents the contract.
 *
 * The encoder rounds a magnitude as a small float with `mbits` mantissa bits and exponent
 * bias `bias`, saturating at `max_mag`, on the integer bits of an fp32: E4M3 (3, 7, 0x7e),
 * E2M1 (1, 1, 7), and INT8 as E1M6 with bias 1, whose codes 0 .. 127 are exactly n / 64.
 */
#ifndef GEOREDUCE_MX_IMPL_H
#define GEOREDUCE_MX_IMPL_H

#include <stddef.h>
#include <stdint.h>

#include "sum.h"

#define MX_NAN_BITS 0x7fc00000u /* every NaN the decoder produces */
#define MX_SCALE_NAN 0xffu

struct mx_fmt {
	uint32_t emax;    /* exponent of the element's largest normal */
	uint32_t mbits;   /* mantissa bits of the rounding (INT8: 6) */
	uint32_t bias;    /* exponent bias of the rounding (INT8: 1) */
	uint32_t max_mag; /* largest magnitude code: saturation */
};

static const struct mx_fmt mx_fmts[SUM_MX_COUNT] = {
	[SUM_MX_INT8] = {0, 6, 1, 0x7f},
	[SUM_MX_FP8] = {8, 3, 7, 0x7e},
	[SUM_MX_FP4] = {2, 1, 1, 0x7},
};

/* The scale byte of a block from the largest |V_i| as fp32 bits: 0xff for NaN or infinity,
 * else the exponent field of the maximum less emax, at least 0 (2^-127). */
static inline __attribute__((always_inline)) uint32_t
mx_scale_of(uint32_t amax_bits, uint32_t emax)
{
	uint32_t e = amax_bits >> 23;

	if (amax_bits >= 0x7f800000u)
		return MX_SCALE_NAN;
	return e > emax ? e - emax : 0;
}

/* fp32 bits of 2^(127 - s), the factor that takes a block of scale s (< 255) to its element
 * range: 2^-127 (subnormal) for s = 254. */
static inline __attribute__((always_inline)) uint32_t
mx_inv_scale_bits(uint32_t s)
{
	return s < 254 ? (254 - s) << 23 : 0x00400000u;
}

/* fp32 bits of the scale X = 2^(s - 127); NaN for 0xff; 2^-127 (subnormal) for 0. */
static inline __attribute__((always_inline)) uint32_t
mx_scale_bits(uint32_t s)
{
	return s == MX_SCALE_NAN ? MX_NAN_BITS : s != 0 ? s << 23 : 0x00400000u;
}

/*
 * The magnitude code of the fp32 |y| (bits a, finite) rounded to nearest, ties to even, in a
 * format of mbits mantissa bits and bias `bias`, saturated at max_mag. With et the target
 * exponent field, a normal target keeps (et - 1) << mbits plus the significand rounded to
 * mbits + 1 bits (a carry moves into the exponent, as it should); a subnormal one shifts
 * the significand 1 - et places further. fp32 subnormals round to 0 (r reaches 25).
 */
static inline __attribute__((always_inline)) uint32_t
mx_round_mag(uint32_t a, uint32_t mbits, uint32_t bias, uint32_t max_mag)
{
	int32_t et = (int32_t)(a >> 23) - 127 + (int32_t)bias;
	uint32_t hi = et > 1 ? (uint32_t)(et - 1) << mbits : 0;
	int32_t r = 23 - (int32_t)mbits + (et < 1 ? 1 - et : 0);
	uint32_t sig = (a & 0x7fffffu) | 0x800000u;
	uint32_t q, m;

	r = r > 25 ? 25 : r;
	q = (sig + (1u << (r - 1)) - 1 + ((sig >> r) & 1)) >> r;
	m = hi + q;
	return m < max_mag ? m : max_mag;
}

/* Per-variant kernels (mx_scalar.c, mx_avx2.c, mx_avx512.c), in enum sum_mx order. */
#define MX_DECLARE(isa)                                                                \
	void mx_widen_int8_##isa(float *acc, const uint8_t *src, size_t n_blocks);     \
	void mx_widen_fp8_##isa(float *acc, const uint8_t *src, size_t n_blocks);      \
	void mx_widen_fp4_##isa(float *acc, const uint8_t *src, size_t n_blocks);      \
	void mx_widen_add_int8_##isa(float *acc, const uint8_t *src, size_t n_blocks); \
	void mx_widen_add_fp8_##isa(float *acc, const uint8_t *src, size_t n_blocks);  \
	void mx_widen_add_fp4_##isa(float *acc, const uint8_t *src, size_t n_blocks);  \
	void mx_narrow_int8_##isa(uint8_t *dst, const float *acc, size_t n_blocks);    \
	void mx_narrow_fp8_##isa(uint8_t *dst, const float *acc, size_t n_blocks);     \
	void mx_narrow_fp4_##isa(uint8_t *dst, const float *acc, size_t n_blocks)

MX_DECLARE(scalar);
MX_DECLARE(avx2);
MX_DECLARE(avx512);

/* The MX members of a struct sum_kernels initialiser. */
#define MX_TABLE(isa)                                                                              \
	.mx_widen = {mx_widen_int8_##isa, mx_widen_fp8_##isa, mx_widen_fp4_##isa},                 \
	.mx_widen_add = {mx_widen_add_int8_##isa, mx_widen_add_fp8_##isa, mx_widen_add_fp4_##isa}, \
	.mx_narrow = {mx_narrow_int8_##isa, mx_narrow_fp8_##isa, mx_narrow_fp4_##isa}

#endif
