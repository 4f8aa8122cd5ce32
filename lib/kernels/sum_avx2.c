/* SPDX-License-Identifier: BSD-3-Clause
 *
 * AVX2 + F16C kernels (fast path), 8 fp32 lanes. Built with -mavx2 -mf16c -mfma
 * -ffp-contract=off (no FMA in this file); call only through sum_kernels_get() and
 * sum_kernels_select(), which check the CPU first.
 *
 * Main loops do 4 vectors (32 elements) per iteration, then single vectors, then a masked tail
 * (vmaskmovps for fp32; a zero-padded stack copy for the 16-bit side), so the tail goes
 * through the same instructions as the body. All loads and stores are unaligned.
 */
#include <immintrin.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "mx_impl.h"
#include "sum.h"

#define LANES 8

/* tail_mask(k): lanes 0 .. k-1 all-ones, k in 0 .. 8. */
static const int32_t mask_tbl[2 * LANES] = {
	-1, -1, -1, -1, -1, -1, -1, -1, 0, 0, 0, 0, 0, 0, 0, 0,
};

static inline __m256i
tail_mask(size_t k)
{
	return _mm256_loadu_si256((const __m256i *)(mask_tbl + LANES - k));
}

static inline __m256
cvt_f16(__m128i h)
{
	return _mm256_cvtph_ps(h);
}

static inline __m256
cvt_bf16(__m128i h)
{
	return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
}

static inline __m128i
to_f16(__m256 a)
{
	return _mm256_cvtps_ph(a, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
}

static inline __m128i
to_bf16(__m256 a)
{
	__m256i x = _mm256_castps_si256(a);
	__m256i hi = _mm256_srli_epi32(x, 16);
	__m256i lsb = _mm256_and_si256(hi, _mm256_set1_epi32(1));
	__m256i r = _mm256_add_epi32(_mm256_add_epi32(x, _mm256_set1_epi32(0x7fff)), lsb);
	__m256i qnan = _mm256_or_si256(hi, _mm256_set1_epi32(0x40));
	__m256i nan = _mm256_castps_si256(_mm256_cmp_ps(a, a, _CMP_UNORD_Q));

	r = _mm256_blendv_epi8(_mm256_srli_epi32(r, 16), qnan, nan);
	/* Every lane is <= 0xffff, so the unsigned-saturating pack is exact. */
	return _mm_packus_epi32(_mm256_castsi256_si128(r), _mm256_extracti128_si256(r, 1));
}

static inline __m128i
load_u16(const uint16_t *p)
{
	return _mm_loadu_si128((const __m128i *)p);
}

/* Copy k < 8 16-bit elements into a zero-padded vector. */
static inline __m128i
load_u16_tail(const uint16_t *p, size_t k)
{
	uint16_t buf[LANES] = {0};

	memcpy(buf, p, k * sizeof(*p));
	return _mm_loadu_si128((const __m128i *)buf);
}

static inline void
store_u16_tail(uint16_t *p, __m128i v, size_t k)
{
	uint16_t buf[LANES];

	_mm_storeu_si128((__m128i *)buf, v);
	memcpy(p, buf, k * sizeof(*p));
}

static void
sum_f32_avx2(float *acc, const float *src, size_t n)
{
	size_t i = 0;

	for (; i + 4 * LANES <= n; i += 4 * LANES) {
		__m256 a0 = _mm256_add_ps(_mm256_loadu_ps(acc + i), _mm256_loadu_ps(src + i));
		__m256 a1 =
			_mm256_add_ps(_mm256_loadu_ps(acc + i + 8), _mm256_loadu_ps(src + i + 8));
		__m256 a2 =
			_mm256_add_ps(_mm256_loadu_ps(acc + i + 16), _mm256_loadu_ps(src + i + 16));
		__m256 a3 =
			_mm256_add_ps(_mm256_loadu_ps(acc + i + 24), _mm256_loadu_ps(src + i + 24));

		_mm256_storeu_ps(acc + i, a0);
		_mm256_storeu_ps(acc + i + 8, a1);
		_mm256_storeu_ps(acc + i + 16, a2);
		_mm256_storeu_ps(acc + i + 24, a3);
	}
	for (; i + LANES <= n; i += LANES)
		_mm256_storeu_ps(acc + i,
				 _mm256_add_ps(_mm256_loadu_ps(acc + i), _mm256_loadu_ps(src + i)));
	if (i < n) {
		__m256i m = tail_mask(n - i);
		__m256 a = _mm256_add_ps(_mm256_maskload_ps(acc + i, m),
					 _mm256_maskload_ps(src + i, m));

		_mm256_maskstore_ps(acc + i, m, a);
	}
}

/*
 * The fp16 and bf16 kernels differ only in the conversion of a vector, so each operation has
 * one loop, below, taking the conversion as a function pointer (and, for widen, add as a flag).
 * The loops are always inlined into the one-line kernels after them, with constant arguments:
 * GCC inlines the converter and drops the dead branch, leaving one specialised loop per kernel,
 * the same code as a hand-written copy.
 */
typedef __m256 (*widen_cvt_t)(__m128i h);
typedef __m128i (*narrow_cvt_t)(__m256 a);

/* acc[i] = cvt(src[i]), or acc[i] += cvt(src[i]) if add. */
static inline __attribute__((always_inline)) void
widen_loop(float *acc, const uint16_t *src, size_t n, widen_cvt_t cvt, bool add)
{
	size_t i = 0;

	for (; i + 4 * LANES <= n; i += 4 * LANES) {
		__m256 s0 = cvt(load_u16(src + i));
		__m256 s1 = cvt(load_u16(src + i + 8));
		__m256 s2 = cvt(load_u16(src + i + 16));
		__m256 s3 = cvt(load_u16(src + i + 24));

		if (add) {
			s0 = _mm256_add_ps(_mm256_loadu_ps(acc + i), s0);
			s1 = _mm256_add_ps(_mm256_loadu_ps(acc + i + 8), s1);
			s2 = _mm256_add_ps(_mm256_loadu_ps(acc + i + 16), s2);
			s3 = _mm256_add_ps(_mm256_loadu_ps(acc + i + 24), s3);
		}
		_mm256_storeu_ps(acc + i, s0);
		_mm256_storeu_ps(acc + i + 8, s1);
		_mm256_storeu_ps(acc + i + 16, s2);
		_mm256_storeu_ps(acc + i + 24, s3);
	}
	for (; i + LANES <= n; i += LANES) {
		__m256 s = cvt(load_u16(src + i));

		if (add)
			s = _mm256_add_ps(_mm256_loadu_ps(acc + i), s);
		_mm256_storeu_ps(acc + i, s);
	}
	if (i < n) {
		__m256i m = tail_mask(n - i);
		__m256 s = cvt(load_u16_tail(src + i, n - i));

		if (add)
			s = _mm256_add_ps(_mm256_maskload_ps(acc + i, m), s);
		_mm256_maskstore_ps(acc + i, m, s);
	}
}

/* dst[i] = cvt(acc[i]). */
static inline __attribute__((always_inline)) void
narrow_loop(uint16_t *dst, const float *acc, size_t n, narrow_cvt_t cvt)
{
	size_t i = 0;

	for (; i + 4 * LANES <= n; i += 4 * LANES) {
		__m128i h0 = cvt(_mm256_loadu_ps(acc + i));
		__m128i h1 = cvt(_mm256_loadu_ps(acc + i + 8));
		__m128i h2 = cvt(_mm256_loadu_ps(acc + i + 16));
		__m128i h3 = cvt(_mm256_loadu_ps(acc + i + 24));

		_mm_storeu_si128((__m128i *)(dst + i), h0);
		_mm_storeu_si128((__m128i *)(dst + i + 8), h1);
		_mm_storeu_si128((__m128i *)(dst + i + 16), h2);
		_mm_storeu_si128((__m128i *)(dst + i + 24), h3);
	}
	for (; i + LANES <= n; i += LANES)
		_mm_storeu_si128((__m128i *)(dst + i), cvt(_mm256_loadu_ps(acc + i)));
	if (i < n)
		store_u16_tail(dst + i, cvt(_mm256_maskload_ps(acc + i, tail_mask(n - i))), n - i);
}

static void
widen_f16_avx2(float *acc, const uint16_t *src, size_t n)
{
	widen_loop(acc, src, n, cvt_f16, false);
}

static void
widen_add_f16_avx2(float *acc, const uint16_t *src, size_t n)
{
	widen_loop(acc, src, n, cvt_f16, true);
}

static void
narrow_f16_avx2(uint16_t *dst, const float *acc, size_t n)
{
	narrow_loop(dst, acc, n, to_f16);
}

static void
widen_bf16_avx2(float *acc, const uint16_t *src, size_t n)
{
	widen_loop(acc, src, n, cvt_bf16, false);
}

static void
widen_add_bf16_avx2(float *acc, const uint16_t *src, size_t n)
{
	widen_loop(acc, src, n, cvt_bf16, true);
}

static void
narrow_bf16_avx2(uint16_t *dst, const float *acc, size_t n)
{
	narrow_loop(dst, acc, n, to_bf16);
}

/* Checksum: 64 bytes per iteration into two vectors of four 64-bit lanes, each 32-bit half
 * of every 64-bit word added separately (about 1 KiB in 15 ns from L1). */
static uint16_t
csum16_avx2(const void *buf, size_t n, uint64_t init)
{
	const uint8_t *p = buf;
	const __m256i lo = _mm256_set1_epi64x(0xffffffff);
	__m256i a0 = _mm256_setzero_si256(), a1 = _mm256_setzero_si256();
	uint64_t acc, l[4];

	for (; n >= 64; n -= 64, p += 64) {
		__m256i v0 = _mm256_loadu_si256((const __m256i *)p);
		__m256i v1 = _mm256_loadu_si256((const __m256i *)(p + 32));

		a0 = _mm256_add_epi64(a0, _mm256_and_si256(v0, lo));
		a0 = _mm256_add_epi64(a0, _mm256_srli_epi64(v0, 32));
		a1 = _mm256_add_epi64(a1, _mm256_and_si256(v1, lo));
		a1 = _mm256_add_epi64(a1, _mm256_srli_epi64(v1, 32));
	}
	_mm256_storeu_si256((__m256i *)l, _mm256_add_epi64(a0, a1));
	/* Fold each lane to 32 bits before adding them up: no overflow. */
	acc = (init & 0xffffffffu) + (init >> 32);
	for (int i = 0; i < 4; i++)
		acc += (l[i] & 0xffffffffu) + (l[i] >> 32);
	return sum_csum_fold(sum_csum_tail(acc, p, n));
}

const struct sum_kernels sum_kernels_avx2 = {
	.name = "avx2",
	.isa = SUM_ISA_AVX2,
	.bitwidth = 256,
	.sum_f32 = sum_f32_avx2,
	.widen_f16 = widen_f16_avx2,
	.widen_add_f16 = widen_add_f16_avx2,
	.narrow_f16 = narrow_f16_avx2,
	.widen_bf16 = widen_bf16_avx2,
	.widen_add_bf16 = widen_add_bf16_avx2,
	.narrow_bf16 = narrow_bf16_avx2,
	.csum16 = csum16_avx2,
	MX_TABLE(avx2),
};
