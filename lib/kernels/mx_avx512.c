/* SPDX-License-Identifier: BSD-3-Clause
 *
 * AVX-512 (F, BW) MX kernels (fast path), one block (32 elements, two vectors) per
 * iteration. Built with -mavx512f -mavx512bw -ffp-contract=off; reached only through
 * sum_kernels_get() and sum_kernels_select(). Every load and store is unaligned.
 *
 * The same products as the scalar reference, in the forms of mx_avx2.c: MXINT8 as
 * n x 2^(s - 133), E4M3 through its fp16 image, E2M1 through a sixteen-entry table
 * (vpermps, sign included). Encode runs mx_round_mag() on sixteen lanes and narrows with
 * vpmovdb.
 */
#include <immintrin.h>
#include <stdbool.h>
#include <stdint.h>

#include "mx_impl.h"

static inline uint32_t
int8_factor_bits(uint32_t s)
{
	return s == MX_SCALE_NAN ? MX_NAN_BITS : s >= 7 ? (s - 6) << 23 : 1u << (s + 16);
}

static inline __m512
splat_bits(uint32_t b)
{
	return _mm512_castsi512_ps(_mm512_set1_epi32((int32_t)b));
}

static inline __attribute__((always_inline)) void
put(float *acc, __m512 v, bool add)
{
	if (add)
		v = _mm512_add_ps(_mm512_loadu_ps(acc), v);
	_mm512_storeu_ps(acc, v);
}

static inline __attribute__((always_inline)) void
decode_int8(float *acc, const uint8_t *src, size_t n_blocks, bool add)
{
	const uint8_t *scales = src + n_blocks * 32;

	for (size_t b = 0; b < n_blocks; b++, acc += 32, src += 32) {
		__m512 f = splat_bits(int8_factor_bits(scales[b]));
		bool fuse = add && scales[b] < 254; /* exact product: as mx_avx2.c */

		for (int j = 0; j < 2; j++) {
			__m128i c = _mm_loadu_si128((const __m128i *)(src + 16 * j));
			__m512 v = _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(c));

			float *a = acc + 16 * j;

			if (fuse)
				_mm512_storeu_ps(a, _mm512_fmadd_ps(v, f, _mm512_loadu_ps(a)));
			else
				put(a, _mm512_mul_ps(v, f), add);
		}
	}
}

static inline __attribute__((always_inline)) void
decode_fp8(float *acc, const uint8_t *src, size_t n_blocks, bool add)
{
	const uint8_t *scales = src + n_blocks * 32;
	const __m512i m7f = _mm512_set1_epi16(0x7f), m80 = _mm512_set1_epi16(0x80);
	const __m512i qnan = _mm512_set1_epi16(0x7e00);
	const __m512 two8 = _mm512_set1_ps(256.0f);

	for (size_t b = 0; b < n_blocks; b++, acc += 32, src += 32) {
		__m512 x = splat_bits(mx_scale_bits(scales[b]));
		__m512i c = _mm512_cvtepu8_epi16(_mm256_loadu_si256((const __m256i *)src));
		__m512i mag = _mm512_and_si512(c, m7f);
		__m512i h = _mm512_or_si512(_mm512_slli_epi16(_mm512_and_si512(c, m80), 8),
					    _mm512_slli_epi16(mag, 7));

		h = _mm512_mask_mov_epi16(h, _mm512_cmpeq_epi16_mask(mag, m7f), qnan);
		for (int j = 0; j < 2; j++) {
			__m512 v = _mm512_cvtph_ps(j == 0 ? _mm512_castsi512_si256(h) :
							    _mm512_extracti64x4_epi64(h, 1));

			put(acc + 16 * j, _mm512_mul_ps(_mm512_mul_ps(v, two8), x), add);
		}
	}
}

static inline __attribute__((always_inline)) void
decode_fp4(float *acc, const uint8_t *src, size_t n_blocks, bool add)
{
	const uint8_t *scales = src + n_blocks * 16;
	const __m512 tbl = _mm512_setr_ps(0.0f, 0.5f, 1.0f, 1.5f, 2.0f, 3.0f, 4.0f, 6.0f, -0.0f,
					  -0.5f, -1.0f, -1.5f, -2.0f, -3.0f, -4.0f, -6.0f);
	const __m512i shifts = _mm512_setr_epi32(0, 4, 0, 4, 0, 4, 0, 4, 0, 4, 0, 4, 0, 4, 0, 4);

	for (size_t b = 0; b < n_blocks; b++, acc += 32, src += 16) {
		__m512 x = splat_bits(mx_scale_bits(scales[b]));

		for (int j = 0; j < 2; j++) {
			__m128i c = _mm_loadl_epi64((const __m128i *)(src + 8 * j));
			/* Each byte twice, then its low nibble in the even lane, high in the odd. */
			__m512i twice = _mm512_cvtepu8_epi32(_mm_unpacklo_epi8(c, c));
			__m512i nib = _mm512_srlv_epi32(twice, shifts);

			put(acc + 16 * j, _mm512_mul_ps(_mm512_permutexvar_ps(nib, tbl), x), add);
		}
	}
}

static inline __attribute__((always_inline)) __m512i
round_mag(__m512i a, const struct mx_fmt *ft)
{
	const __m512i one = _mm512_set1_epi32(1), zero = _mm512_setzero_si512();
	__m512i et = _mm512_add_epi32(_mm512_srli_epi32(a, 23),
				      _mm512_set1_epi32((int32_t)ft->bias - 127));
	__m512i hi =
		_mm512_slli_epi32(_mm512_max_epi32(_mm512_sub_epi32(et, one), zero), ft->mbits);
	__m512i r = _mm512_add_epi32(_mm512_set1_epi32(23 - (int32_t)ft->mbits),
				     _mm512_max_epi32(_mm512_sub_epi32(one, et), zero));
	__m512i sig = _mm512_or_si512(_mm512_and_si512(a, _mm512_set1_epi32(0x7fffff)),
				      _mm512_set1_epi32(0x800000));
	__m512i q;

	r = _mm512_min_epi32(r, _mm512_set1_epi32(25));
	q = _mm512_add_epi32(
		sig, _mm512_sub_epi32(_mm512_sllv_epi32(one, _mm512_sub_epi32(r, one)), one));
	q = _mm512_add_epi32(q, _mm512_and_si512(_mm512_srlv_epi32(sig, r), one));
	q = _mm512_srlv_epi32(q, r);
	return _mm512_min_epu32(_mm512_add_epi32(hi, q), _mm512_set1_epi32((int32_t)ft->max_mag));
}

static inline __attribute__((always_inline)) void
encode(uint8_t *dst, const float *acc, size_t n_blocks, enum sum_mx f)
{
	const struct mx_fmt *ft = &mx_fmts[f];
	const size_t eb = sum_mx_elem_bytes(f);
	uint8_t *scales = dst + n_blocks * eb;
	const __m512i absm = _mm512_set1_epi32(0x7fffffff);

	for (size_t b = 0; b < n_blocks; b++, acc += 32, dst += eb) {
		__m512i v0 = _mm512_castps_si512(_mm512_loadu_ps(acc));
		__m512i v1 = _mm512_castps_si512(_mm512_loadu_ps(acc + 16));
		uint32_t s = mx_scale_of(
			_mm512_reduce_max_epu32(_mm512_max_epu32(_mm512_and_si512(v0, absm),
								 _mm512_and_si512(v1, absm))),
			ft->emax);
		__m128i c[2];
		__m512 inv;

		scales[b] = (uint8_t)s;
		if (s == MX_SCALE_NAN) {
			if (eb == 32)
				_mm256_storeu_si256((__m256i *)dst, _mm256_setzero_si256());
			else
				_mm_storeu_si128((__m128i *)dst, _mm_setzero_si128());
			continue;
		}
		inv = splat_bits(mx_inv_scale_bits(s));
		for (int j = 0; j < 2; j++) {
			__m512i y = _mm512_castps_si512(
				_mm512_mul_ps(_mm512_castsi512_ps(j == 0 ? v0 : v1), inv));
			__m512i mag = round_mag(_mm512_and_si512(y, absm), ft);
			__m512i code;

			const __m512i zero = _mm512_setzero_si512();

			if (f == SUM_MX_INT8) /* negated where y < 0: two's complement */
				code = _mm512_mask_sub_epi32(mag, _mm512_cmplt_epi32_mask(y, zero),
							     zero, mag);
			else if (f == SUM_MX_FP8)
				code = _mm512_or_si512(mag,
						       _mm512_and_si512(_mm512_srli_epi32(y, 24),
									_mm512_set1_epi32(0x80)));
			else
				code = _mm512_or_si512(mag,
						       _mm512_and_si512(_mm512_srli_epi32(y, 28),
									_mm512_set1_epi32(0x8)));
			c[j] = _mm512_cvtepi32_epi8(code); /* INT8: truncated, two's complement */
		}
		if (f != SUM_MX_FP4) {
			_mm_storeu_si128((__m128i *)dst, c[0]);
			_mm_storeu_si128((__m128i *)(dst + 16), c[1]);
			continue;
		}
		/* Two codes a byte, the first in the low nibble (AVX2 instructions: no VL). */
		__m256i bytes = _mm256_setr_m128i(c[0], c[1]);

		bytes = _mm256_or_si256(
			_mm256_and_si256(bytes, _mm256_set1_epi16(0x0f)),
			_mm256_and_si256(_mm256_srli_epi16(bytes, 4), _mm256_set1_epi16(0xf0)));
		bytes = _mm256_permute4x64_epi64(_mm256_packus_epi16(bytes, bytes), 0x08);
		_mm_storeu_si128((__m128i *)dst, _mm256_castsi256_si128(bytes));
	}
}

#define MX_AVX512_FORMAT(name, fmt)                                                        \
	void mx_widen_##name##_avx512(float *acc, const uint8_t *src, size_t n_blocks)     \
	{                                                                                  \
		decode_##name(acc, src, n_blocks, false);                                  \
	}                                                                                  \
	void mx_widen_add_##name##_avx512(float *acc, const uint8_t *src, size_t n_blocks) \
	{                                                                                  \
		decode_##name(acc, src, n_blocks, true);                                   \
	}                                                                                  \
	void mx_narrow_##name##_avx512(uint8_t *dst, const float *acc, size_t n_blocks)    \
	{                                                                                  \
		encode(dst, acc, n_blocks, fmt);                                           \
	}

MX_AVX512_FORMAT(int8, SUM_MX_INT8)
MX_AVX512_FORMAT(fp8, SUM_MX_FP8)
MX_AVX512_FORMAT(fp4, SUM_MX_FP4)
