/* SPDX-License-Identifier: BSD-3-Clause
 *
 * AVX2 + F16C MX kernels (fast path), one block (32 elements, four vectors) per iteration.
 * Built with -mavx2 -mf16c -mfma -ffp-contract=off (FMA only where written out); reached
 * only through sum_kernels_get() and sum_kernels_select(), which check the CPU first. Every
 * load and store is unaligned.
 *
 * Decode computes the same fp32 products as the scalar reference, X x P_i, in forms that
 * vectorise: MXINT8 as n x 2^(s - 133) (the same exact real as (n / 64) x 2^(s - 127));
 * E4M3 through its fp16 image (the element shifted into a binary16 with the same exponent
 * field: P x 2^-8, converted exactly by vcvtph2ps, times 2^8, times X); E2M1 through an
 * eight-entry table (vpermps) and the sign bit. Encode runs mx_round_mag() on eight lanes.
 */
#include <immintrin.h>
#include <stdbool.h>
#include <stdint.h>

#include "mx_impl.h"

/* 2^(s - 133) (MXINT8's X / 64): subnormal below s = 7; NaN for s = 0xff. */
static inline uint32_t
int8_factor_bits(uint32_t s)
{
	return s == MX_SCALE_NAN ? MX_NAN_BITS : s >= 7 ? (s - 6) << 23 : 1u << (s + 16);
}

static inline __m256
splat_bits(uint32_t b)
{
	return _mm256_castsi256_ps(_mm256_set1_epi32((int32_t)b));
}

static inline __attribute__((always_inline)) void
put(float *acc, __m256 v, bool add)
{
	if (add)
		v = _mm256_add_ps(_mm256_loadu_ps(acc), v);
	_mm256_storeu_ps(acc, v);
}

static inline __attribute__((always_inline)) void
decode_int8(float *acc, const uint8_t *src, size_t n_blocks, bool add)
{
	const uint8_t *scales = src + n_blocks * 32;

	for (size_t b = 0; b < n_blocks; b++, acc += 32, src += 32) {
		__m256 f = splat_bits(int8_factor_bits(scales[b]));
		/* n x f is exact below the scale 254 (|n x f| < 2^128): the add may take it
		 * fused, one FP operation fewer, with the same bits. */
		bool fuse = add && scales[b] < 254;

		for (int j = 0; j < 4; j++) {
			__m128i c = _mm_loadl_epi64((const __m128i *)(src + 8 * j));
			__m256 v = _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(c));

			float *a = acc + 8 * j;

			if (fuse)
				_mm256_storeu_ps(a, _mm256_fmadd_ps(v, f, _mm256_loadu_ps(a)));
			else
				put(a, _mm256_mul_ps(v, f), add);
		}
	}
}

static inline __attribute__((always_inline)) void
decode_fp8(float *acc, const uint8_t *src, size_t n_blocks, bool add)
{
	const uint8_t *scales = src + n_blocks * 32;
	const __m256i m7f = _mm256_set1_epi16(0x7f), m80 = _mm256_set1_epi16(0x80);
	const __m256i qnan = _mm256_set1_epi16(0x7e00);
	const __m256 two8 = _mm256_set1_ps(256.0f);

	for (size_t b = 0; b < n_blocks; b++, acc += 32, src += 32) {
		__m256 x = splat_bits(mx_scale_bits(scales[b]));

		for (int j = 0; j < 2; j++) {
			__m256i c = _mm256_cvtepu8_epi16(
				_mm_loadu_si128((const __m128i *)(src + 16 * j)));
			__m256i mag = _mm256_and_si256(c, m7f);
			__m256i h = _mm256_or_si256(_mm256_slli_epi16(_mm256_and_si256(c, m80), 8),
						    _mm256_slli_epi16(mag, 7));
			__m256 lo, hi;

			h = _mm256_blendv_epi8(h, qnan, _mm256_cmpeq_epi16(mag, m7f));
			lo = _mm256_cvtph_ps(_mm256_castsi256_si128(h));
			hi = _mm256_cvtph_ps(_mm256_extracti128_si256(h, 1));
			put(acc + 16 * j, _mm256_mul_ps(_mm256_mul_ps(lo, two8), x), add);
			put(acc + 16 * j + 8, _mm256_mul_ps(_mm256_mul_ps(hi, two8), x), add);
		}
	}
}

static inline __attribute__((always_inline)) void
decode_fp4(float *acc, const uint8_t *src, size_t n_blocks, bool add)
{
	const uint8_t *scales = src + n_blocks * 16;
	const __m256 tbl = _mm256_setr_ps(0.0f, 0.5f, 1.0f, 1.5f, 2.0f, 3.0f, 4.0f, 6.0f);
	const __m256i shifts = _mm256_setr_epi32(0, 4, 8, 12, 16, 20, 24, 28);
	const __m256i m8 = _mm256_set1_epi32(8);

	for (size_t b = 0; b < n_blocks; b++, acc += 32, src += 16) {
		__m256 x = splat_bits(mx_scale_bits(scales[b]));

		for (int j = 0; j < 4; j++) {
			int32_t w;
			__m256i nib, sign;
			__m256 v;

			__builtin_memcpy(&w, src + 4 * j, 4);
			nib = _mm256_srlv_epi32(_mm256_set1_epi32(w), shifts);
			sign = _mm256_slli_epi32(_mm256_and_si256(nib, m8), 28);
			v = _mm256_permutevar8x32_ps(tbl, nib);
			v = _mm256_castsi256_ps(_mm256_or_si256(_mm256_castps_si256(v), sign));
			put(acc + 8 * j, _mm256_mul_ps(v, x), add);
		}
	}
}

/* mx_round_mag() on eight lanes of magnitudes a. */
static inline __attribute__((always_inline)) __m256i
round_mag(__m256i a, const struct mx_fmt *ft)
{
	const __m256i one = _mm256_set1_epi32(1), zero = _mm256_setzero_si256();
	__m256i et = _mm256_add_epi32(_mm256_srli_epi32(a, 23),
				      _mm256_set1_epi32((int32_t)ft->bias - 127));
	__m256i hi = _mm256_slli_epi32(_mm256_max_epi32(_mm256_sub_epi32(et, one), zero),
				       (int)ft->mbits);
	__m256i r = _mm256_add_epi32(_mm256_set1_epi32(23 - (int32_t)ft->mbits),
				     _mm256_max_epi32(_mm256_sub_epi32(one, et), zero));
	__m256i sig = _mm256_or_si256(_mm256_and_si256(a, _mm256_set1_epi32(0x7fffff)),
				      _mm256_set1_epi32(0x800000));
	__m256i q;

	r = _mm256_min_epi32(r, _mm256_set1_epi32(25));
	q = _mm256_add_epi32(
		sig, _mm256_sub_epi32(_mm256_sllv_epi32(one, _mm256_sub_epi32(r, one)), one));
	q = _mm256_add_epi32(q, _mm256_and_si256(_mm256_srlv_epi32(sig, r), one));
	q = _mm256_srlv_epi32(q, r);
	return _mm256_min_epu32(_mm256_add_epi32(hi, q), _mm256_set1_epi32((int32_t)ft->max_mag));
}

static inline __attribute__((always_inline)) void
encode(uint8_t *dst, const float *acc, size_t n_blocks, enum sum_mx f)
{
	const struct mx_fmt *ft = &mx_fmts[f];
	const size_t eb = sum_mx_elem_bytes(f);
	uint8_t *scales = dst + n_blocks * eb;
	const __m256i absm = _mm256_set1_epi32(0x7fffffff), ff = _mm256_set1_epi32(0xff);
	const __m256i order = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);

	for (size_t b = 0; b < n_blocks; b++, acc += 32, dst += eb) {
		__m256i v[4], m, c[4], bytes;
		uint32_t s;
		__m256 inv;

		for (int j = 0; j < 4; j++)
			v[j] = _mm256_castps_si256(_mm256_loadu_ps(acc + 8 * j));
		m = _mm256_max_epu32(_mm256_max_epu32(_mm256_and_si256(v[0], absm),
						      _mm256_and_si256(v[1], absm)),
				     _mm256_max_epu32(_mm256_and_si256(v[2], absm),
						      _mm256_and_si256(v[3], absm)));
		m = _mm256_max_epu32(m, _mm256_permute2x128_si256(m, m, 1));
		m = _mm256_max_epu32(m, _mm256_shuffle_epi32(m, 0x4e));
		m = _mm256_max_epu32(m, _mm256_shuffle_epi32(m, 0xb1));
		s = mx_scale_of((uint32_t)_mm256_cvtsi256_si32(m), ft->emax);
		scales[b] = (uint8_t)s;
		if (s == MX_SCALE_NAN) {
			if (eb == 32)
				_mm256_storeu_si256((__m256i *)dst, _mm256_setzero_si256());
			else
				_mm_storeu_si128((__m128i *)dst, _mm_setzero_si128());
			continue;
		}
		inv = splat_bits(mx_inv_scale_bits(s));
		for (int j = 0; j < 4; j++) {
			__m256i y =
				_mm256_castps_si256(_mm256_mul_ps(_mm256_castsi256_ps(v[j]), inv));
			__m256i mag = round_mag(_mm256_and_si256(y, absm), ft);

			/* The sign: two's complement (INT8) or the top bit of the code. */
			if (f == SUM_MX_INT8)
				c[j] = _mm256_and_si256(_mm256_sign_epi32(mag, y), ff);
			else if (f == SUM_MX_FP8)
				c[j] = _mm256_or_si256(mag,
						       _mm256_and_si256(_mm256_srli_epi32(y, 24),
									_mm256_set1_epi32(0x80)));
			else
				c[j] = _mm256_or_si256(mag,
						       _mm256_and_si256(_mm256_srli_epi32(y, 28),
									_mm256_set1_epi32(0x8)));
		}
		bytes = _mm256_packus_epi16(_mm256_packus_epi32(c[0], c[1]),
					    _mm256_packus_epi32(c[2], c[3]));
		bytes = _mm256_permutevar8x32_epi32(bytes, order);
		if (f != SUM_MX_FP4) {
			_mm256_storeu_si256((__m256i *)dst, bytes);
			continue;
		}
		/* Two codes a byte, the first in the low nibble. */
		bytes = _mm256_or_si256(
			_mm256_and_si256(bytes, _mm256_set1_epi16(0x0f)),
			_mm256_and_si256(_mm256_srli_epi16(bytes, 4), _mm256_set1_epi16(0xf0)));
		bytes = _mm256_permute4x64_epi64(_mm256_packus_epi16(bytes, bytes), 0x08);
		_mm_storeu_si128((__m128i *)dst, _mm256_castsi256_si128(bytes));
	}
}

#define MX_AVX2_FORMAT(name, fmt)                                                        \
	void mx_widen_##name##_avx2(float *acc, const uint8_t *src, size_t n_blocks)     \
	{                                                                                \
		decode_##name(acc, src, n_blocks, false);                                \
	}                                                                                \
	void mx_widen_add_##name##_avx2(float *acc, const uint8_t *src, size_t n_blocks) \
	{                                                                                \
		decode_##name(acc, src, n_blocks, true);                                 \
	}                                                                                \
	void mx_narrow_##name##_avx2(uint8_t *dst, const float *acc, size_t n_blocks)    \
	{                                                                                \
		encode(dst, acc, n_blocks, fmt);                                         \
	}

MX_AVX2_FORMAT(int8, SUM_MX_INT8)
MX_AVX2_FORMAT(fp8, SUM_MX_FP8)
MX_AVX2_FORMAT(fp4, SUM_MX_FP4)
