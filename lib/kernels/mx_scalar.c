/* SPDX-License-Identifier: BSD-3-Clause
 *
 * Scalar MX kernels (fast path): the reference the SIMD variants are tested against, bit for
 * bit, and the fallback. Built like sum_scalar.c (-ffp-contract=off, -fno-tree-vectorize).
 * Decoding multiplies each element's value P_i by the block's scale X in fp32; encoding is
 * integer arithmetic on the fp32 bits (mx_impl.h).
 */
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "mx_impl.h"
#include "scalar.h"

/* Element values P. E4M3: S.EEEE.MMM, bias 7, subnormals M x 2^-9, S.1111.111 NaN. */
static inline float
p_int8(uint8_t c)
{
	return (float)(int8_t)c * 0.015625f;
}

static inline float
p_fp8(uint8_t c)
{
	uint32_t sign = (uint32_t)(c & 0x80) << 24, e = (c >> 3) & 0xf, m = c & 7;

	if ((c & 0x7f) == 0x7f)
		return f32_from_bits(MX_NAN_BITS);
	if (e == 0)
		return f32_from_bits(sign | f32_to_bits((float)m * 0x1p-9f));
	return f32_from_bits(sign | ((e + 120) << 23) | (m << 20));
}

static const float fp4_values[16] = {
	0.0f,  0.5f,  1.0f,  1.5f,  2.0f,  3.0f,  4.0f,  6.0f,
	-0.0f, -0.5f, -1.0f, -1.5f, -2.0f, -3.0f, -4.0f, -6.0f,
};

static inline float
p_fp4(const uint8_t *e, unsigned int i)
{
	return fp4_values[(e[i >> 1] >> ((i & 1) * 4)) & 0xf];
}

/* acc = X x P, or acc += X x P if add, over the blocks of a chunk of format f. */
static inline __attribute__((always_inline)) void
decode_loop(float *acc, const uint8_t *src, size_t n_blocks, enum sum_mx f, bool add)
{
	const size_t eb = sum_mx_elem_bytes(f);
	const uint8_t *scales = src + n_blocks * eb;

	for (size_t b = 0; b < n_blocks; b++, acc += SUM_MX_BLOCK) {
		const uint8_t *e = src + b * eb;
		float x = f32_from_bits(mx_scale_bits(scales[b]));

		for (unsigned int i = 0; i < SUM_MX_BLOCK; i++) {
			float p = f == SUM_MX_INT8 ? p_int8(e[i]) :
				  f == SUM_MX_FP8  ? p_fp8(e[i]) :
						     p_fp4(e, i);
			float v = p * x;

			store_f32(&acc[i], add ? load_f32(&acc[i]) + v : v);
		}
	}
}

static inline __attribute__((always_inline)) void
encode_loop(uint8_t *dst, const float *acc, size_t n_blocks, enum sum_mx f)
{
	const struct mx_fmt *ft = &mx_fmts[f];
	const size_t eb = sum_mx_elem_bytes(f);
	uint8_t *scales = dst + n_blocks * eb;

	for (size_t b = 0; b < n_blocks; b++, acc += SUM_MX_BLOCK) {
		uint8_t *e = dst + b * eb;
		uint32_t amax = 0, s;
		float inv;

		for (unsigned int i = 0; i < SUM_MX_BLOCK; i++) {
			uint32_t a = f32_to_bits(load_f32(&acc[i])) & 0x7fffffffu;

			amax = a > amax ? a : amax;
		}
		s = mx_scale_of(amax, ft->emax);
		scales[b] = (uint8_t)s;
		if (s == MX_SCALE_NAN) {
			memset(e, 0, eb);
			continue;
		}
		inv = f32_from_bits(mx_inv_scale_bits(s));
		for (unsigned int i = 0; i < SUM_MX_BLOCK; i++) {
			uint32_t y = f32_to_bits(load_f32(&acc[i]) * inv);
			uint32_t mag =
				mx_round_mag(y & 0x7fffffffu, ft->mbits, ft->bias, ft->max_mag);
			uint32_t c;

			if (f == SUM_MX_INT8)
				c = (y >> 31) ? (0u - mag) & 0xff : mag;
			else if (f == SUM_MX_FP8)
				c = ((y >> 24) & 0x80) | mag;
			else
				c = ((y >> 28) & 0x8) | mag;
			if (f != SUM_MX_FP4)
				e[i] = (uint8_t)c;
			else if ((i & 1) == 0)
				e[i >> 1] = (uint8_t)c;
			else
				e[i >> 1] = (uint8_t)(e[i >> 1] | (c << 4));
		}
	}
}

#define MX_SCALAR_FORMAT(name, fmt)                                                        \
	void mx_widen_##name##_scalar(float *acc, const uint8_t *src, size_t n_blocks)     \
	{                                                                                  \
		decode_loop(acc, src, n_blocks, fmt, false);                               \
	}                                                                                  \
	void mx_widen_add_##name##_scalar(float *acc, const uint8_t *src, size_t n_blocks) \
	{                                                                                  \
		decode_loop(acc, src, n_blocks, fmt, true);                                \
	}                                                                                  \
	void mx_narrow_##name##_scalar(uint8_t *dst, const float *acc, size_t n_blocks)    \
	{                                                                                  \
		encode_loop(dst, acc, n_blocks, fmt);                                      \
	}

MX_SCALAR_FORMAT(int8, SUM_MX_INT8)
MX_SCALAR_FORMAT(fp8, SUM_MX_FP8)
MX_SCALAR_FORMAT(fp4, SUM_MX_FP4)
