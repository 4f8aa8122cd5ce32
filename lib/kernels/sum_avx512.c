/* SPDX-License-Identifier: BSD-3-Clause
 *
 * AVX-512 (F, BW) kernels (fast path), 16 fp32 lanes. Built with -mavx512f -mavx512bw
 * -ffp-contract=off; call only through sum_kernels_get()/sum_kernels_select(), which check the
 * CPU first. EAL allows 512-bit paths only with --force-max-simd-bitwidth=512.
 *
 * Main loops do 4 vectors (64 elements) per iteration, then single vectors, then one masked
 * vector for the tail (masked-out lanes neither fault nor write). All accesses are unaligned.
 * The bf16 paths use integer arithmetic, not AVX512_BF16's vcvtneps2bf16, which flushes
 * subnormals and would differ from the reference.
 */
#include <immintrin.h>
#include <stdbool.h>
#include <stdint.h>

#include "mx_impl.h"
#include "sum.h"

#define LANES 16

static inline __mmask16
tail_mask(size_t k)
{
	return (__mmask16)((1u << k) - 1);
}

/* Load k <= 16 16-bit elements (the rest zero) without touching memory past them. */
static inline __m256i
load_u16_mask(const uint16_t *p, __mmask16 m)
{
	return _mm512_castsi512_si256(_mm512_maskz_loadu_epi16((__mmask32)m, p));
}

static inline __m512
cvt_f16(__m256i h)
{
	return _mm512_cvtph_ps(h);
}

static inline __m512
cvt_bf16(__m256i h)
{
	return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
}

static inline __m256i
load_u16(const uint16_t *p)
{
	return _mm256_loadu_si256((const __m256i *)p);
}

static inline __m256i
to_f16(__m512 a)
{
	return _mm512_cvtps_ph(a, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
}

static inline __m256i
to_bf16(__m512 a)
{
	__m512i x = _mm512_castps_si512(a);
	__m512i hi = _mm512_srli_epi32(x, 16);
	__m512i lsb = _mm512_and_si512(hi, _mm512_set1_epi32(1));
	__m512i r = _mm512_add_epi32(_mm512_add_epi32(x, _mm512_set1_epi32(0x7fff)), lsb);
	__m512i qnan = _mm512_or_si512(hi, _mm512_set1_epi32(0x40));
	__mmask16 nan = _mm512_cmp_ps_mask(a, a, _CMP_UNORD_Q);

	r = _mm512_mask_blend_epi32(nan, _mm512_srli_epi32(r, 16), qnan);
	/* Every lane is <= 0xffff, so the truncating vpmovdw is exact. */
	return _mm512_cvtepi32_epi16(r);
}

/* Store the first k <= 16 16-bit elements of h, where m = tail_mask(k). */
static inline void
store_u16_mask(uint16_t *p, __mmask16 m, __m256i h)
{
	_mm512_mask_storeu_epi16(p, (__mmask32)m, _mm512_zextsi256_si512(h));
}

static void
sum_f32_avx512(float *acc, const float *src, size_t n)
{
	size_t i = 0;

	for (; i + 4 * LANES <= n; i += 4 * LANES) {
		__m512 a0 = _mm512_add_ps(_mm512_loadu_ps(acc + i), _mm512_loadu_ps(src + i));
		__m512 a1 =
			_mm512_add_ps(_mm512_loadu_ps(acc + i + 16), _mm512_loadu_ps(src + i + 16));
		__m512 a2 =
			_mm512_add_ps(_mm512_loadu_ps(acc + i + 32), _mm512_loadu_ps(src + i + 32));
		__m512 a3 =
			_mm512_add_ps(_mm512_loadu_ps(acc + i + 48), _mm512_loadu_ps(src + i + 48));

		_mm512_storeu_ps(acc + i, a0);
		_mm512_storeu_ps(acc + i + 16, a1);
		_mm512_storeu_ps(acc + i + 32, a2);
		_mm512_storeu_ps(acc + i + 48, a3);
	}
	for (; i + LANES <= n; i += LANES)
		_mm512_storeu_ps(acc + i,
				 _mm512_add_ps(_mm512_loadu_ps(acc + i), _mm512_loadu_ps(src + i)));
	if (i < n) {
		__mmask16 m = tail_mask(n - i);
		__m512 a = _mm512_add_ps(_mm512_maskz_loadu_ps(m, acc + i),
					 _mm512_maskz_loadu_ps(m, src + i));

		_mm512_mask_storeu_ps(acc + i, m, a);
	}
}

/*
 * The fp16 and bf16 kernels differ only in the conversion of a vector, so each operation has
 * one loop, below, taking the conversion as a function pointer (and, for widen, add as a flag).
 * The loops are always inlined into the one-line kernels after them, with constant arguments:
 * GCC inlines the converter and drops the dead branch, leaving one specialised loop per kernel,
 * the same code as a hand-written copy.
 */
typedef __m512 (*widen_cvt_t)(__m256i h);
typedef __m256i (*narrow_cvt_t)(__m512 a);

/* acc[i] = cvt(src[i]), or acc[i] += cvt(src[i]) if add. */
static inline __attribute__((always_inline)) void
widen_loop(float *acc, const uint16_t *src, size_t n, widen_cvt_t cvt, bool add)
{
	size_t i = 0;

	for (; i + 4 * LANES <= n; i += 4 * LANES) {
		__m512 s0 = cvt(load_u16(src + i));
		__m512 s1 = cvt(load_u16(src + i + 16));
		__m512 s2 = cvt(load_u16(src + i + 32));
		__m512 s3 = cvt(load_u16(src + i + 48));

		if (add) {
			s0 = _mm512_add_ps(_mm512_loadu_ps(acc + i), s0);
			s1 = _mm512_add_ps(_mm512_loadu_ps(acc + i + 16), s1);
			s2 = _mm512_add_ps(_mm512_loadu_ps(acc + i + 32), s2);
			s3 = _mm512_add_ps(_mm512_loadu_ps(acc + i + 48), s3);
		}
		_mm512_storeu_ps(acc + i, s0);
		_mm512_storeu_ps(acc + i + 16, s1);
		_mm512_storeu_ps(acc + i + 32, s2);
		_mm512_storeu_ps(acc + i + 48, s3);
	}
	for (; i + LANES <= n; i += LANES) {
		__m512 s = cvt(load_u16(src + i));

		if (add)
			s = _mm512_add_ps(_mm512_loadu_ps(acc + i), s);
		_mm512_storeu_ps(acc + i, s);
	}
	if (i < n) {
		__mmask16 m = tail_mask(n - i);
		__m512 s = cvt(load_u16_mask(src + i, m));

		if (add)
			s = _mm512_add_ps(_mm512_maskz_loadu_ps(m, acc + i), s);
		_mm512_mask_storeu_ps(acc + i, m, s);
	}
}

/* dst[i] = cvt(acc[i]). */
static inline __attribute__((always_inline)) void
narrow_loop(uint16_t *dst, const float *acc, size_t n, narrow_cvt_t cvt)
{
	size_t i = 0;

	for (; i + 4 * LANES <= n; i += 4 * LANES) {
		__m256i h0 = cvt(_mm512_loadu_ps(acc + i));
		__m256i h1 = cvt(_mm512_loadu_ps(acc + i + 16));
		__m256i h2 = cvt(_mm512_loadu_ps(acc + i + 32));
		__m256i h3 = cvt(_mm512_loadu_ps(acc + i + 48));

		_mm256_storeu_si256((__m256i *)(dst + i), h0);
		_mm256_storeu_si256((__m256i *)(dst + i + 16), h1);
		_mm256_storeu_si256((__m256i *)(dst + i + 32), h2);
		_mm256_storeu_si256((__m256i *)(dst + i + 48), h3);
	}
	for (; i + LANES <= n; i += LANES)
		_mm256_storeu_si256((__m256i *)(dst + i), cvt(_mm512_loadu_ps(acc + i)));
	if (i < n) {
		__mmask16 m = tail_mask(n - i);

		store_u16_mask(dst + i, m, cvt(_mm512_maskz_loadu_ps(m, acc + i)));
	}
}

static void
widen_f16_avx512(float *acc, const uint16_t *src, size_t n)
{
	widen_loop(acc, src, n, cvt_f16, false);
}

static void
widen_add_f16_avx512(float *acc, const uint16_t *src, size_t n)
{
	widen_loop(acc, src, n, cvt_f16, true);
}

static void
narrow_f16_avx512(uint16_t *dst, const float *acc, size_t n)
{
	narrow_loop(dst, acc, n, to_f16);
}

static void
widen_bf16_avx512(float *acc, const uint16_t *src, size_t n)
{
	widen_loop(acc, src, n, cvt_bf16, false);
}

static void
widen_add_bf16_avx512(float *acc, const uint16_t *src, size_t n)
{
	widen_loop(acc, src, n, cvt_bf16, true);
}

static void
narrow_bf16_avx512(uint16_t *dst, const float *acc, size_t n)
{
	narrow_loop(dst, acc, n, to_bf16);
}

/* Checksum: 128 bytes per iteration into two vectors of eight 64-bit lanes. */
static uint16_t
csum16_avx512(const void *buf, size_t n, uint64_t init)
{
	const uint8_t *p = buf;
	const __m512i lo = _mm512_set1_epi64(0xffffffff);
	__m512i a0 = _mm512_setzero_si512(), a1 = _mm512_setzero_si512();
	uint64_t acc, l[8];

	for (; n >= 128; n -= 128, p += 128) {
		__m512i v0 = _mm512_loadu_si512((const void *)p);
		__m512i v1 = _mm512_loadu_si512((const void *)(p + 64));

		a0 = _mm512_add_epi64(a0, _mm512_and_si512(v0, lo));
		a0 = _mm512_add_epi64(a0, _mm512_srli_epi64(v0, 32));
		a1 = _mm512_add_epi64(a1, _mm512_and_si512(v1, lo));
		a1 = _mm512_add_epi64(a1, _mm512_srli_epi64(v1, 32));
	}
	_mm512_storeu_si512((void *)l, _mm512_add_epi64(a0, a1));
	acc = (init & 0xffffffffu) + (init >> 32);
	for (int i = 0; i < 8; i++)
		acc += (l[i] & 0xffffffffu) + (l[i] >> 32);
	return sum_csum_fold(sum_csum_tail(acc, p, n));
}

const struct sum_kernels sum_kernels_avx512 = {
	.name = "avx512",
	.isa = SUM_ISA_AVX512,
	.bitwidth = 512,
	.sum_f32 = sum_f32_avx512,
	.widen_f16 = widen_f16_avx512,
	.widen_add_f16 = widen_add_f16_avx512,
	.narrow_f16 = narrow_f16_avx512,
	.widen_bf16 = widen_bf16_avx512,
	.widen_add_bf16 = widen_add_bf16_avx512,
	.narrow_bf16 = narrow_bf16_avx512,
	.csum16 = csum16_avx512,
	MX_TABLE(avx512),
};
