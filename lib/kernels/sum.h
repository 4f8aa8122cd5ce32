/* SPDX-License-Identifier: BSD-3-Clause
 *
 * Summation kernels: the fast-path arithmetic of gradient aggregation, run by worker lcores
 * directly on packet payloads.
 *
 * A chunk of fp32 gradients is summed in place into the payload of the first packet
 * (sum_f32). Chunks of fp16 or bf16 gradients are summed into an fp32 accumulator that the
 * aggregation slot owns: the first contribution is widened into it (widen_*), each further one
 * is widened and added (widen_add_*), and the result is rounded once, to nearest even, when
 * the chunk is complete (narrow_*). MX chunks (OCP Microscaling blocks) are decoded into that
 * accumulator and the sum encoded once (mx_widen*, mx_narrow, below).
 *
 * Every kernel exists as a scalar reference (always) and as AVX2 (+F16C, FMA) and AVX-512 (F, BW)
 * variants, compiled in separate files with their own -m flags. A variant is chosen once at
 * start (sum_kernels_select*) and used through the function pointers of struct sum_kernels.
 *
 * Contract common to every kernel of every variant:
 *  - Results are bit-identical across variants. Each element gets exactly one fp32 add,
 *    acc[i] + src[i], one rounding, never fused (FMA) or reassociated (the kernel files are
 *    built with -ffp-contract=off; the one written-out FMA, of MXINT8's decode-add, fuses
 *    an exact product and so rounds as the add alone); element-wise adds do not depend on
 *    the vector width. The
 *    rounding of fp32 adds follows MXCSR, which DPDK and this project leave at its default
 *    (round to nearest even, no FTZ/DAZ).
 *  - NaN: an add with exactly one NaN operand returns that NaN, quieted, in every variant (the
 *    x86 rule). When both operands are NaN, the result is a quiet NaN whose payload is one of
 *    the two; which one is not specified (the compiler may swap the operands of the scalar add).
 *  - fp16 widen is exact, including subnormals and infinities; a NaN keeps its sign and its
 *    10-bit payload (shifted to the top of the fp32 mantissa) and is quieted (bit 22 set), as
 *    F16C's vcvtph2ps does. bf16 widen is exact on every bit pattern (a plain 16-bit shift:
 *    a signalling NaN stays signalling until the next add or the narrow).
 *  - narrow rounds to nearest, ties to even, with overflow to infinity, fp16 subnormal
 *    results, and fp32 subnormal inputs (rounded like any other value, never flushed). A NaN
 *    narrows to a quiet NaN (fp16: bit 9 set, bf16: bit 6 set) with the same sign and the top
 *    10 (fp16) or 7 (bf16) bits of its payload: NaN stays NaN, never becomes infinity.
 *    Hence widen then narrow returns every non-NaN fp16 and bf16 value unchanged, and every
 *    quiet NaN unchanged.
 *  - Pointers need no alignment at all (any byte offset: packet payloads are not aligned);
 *    memory is accessed only through unaligned loads and stores. acc/dst and src must not
 *    overlap. n may be any value including 0; nothing outside [0, n) elements is read or
 *    written.
 *  - Fast path: no allocation, no locks, no syscalls, no logging; safe to call concurrently
 *    on disjoint buffers from any thread.
 *
 * Measured cost (bench/bench_kernels.c, one core of the 2-vCPU AMD EPYC (Zen 4) CI machine,
 * GCC 12 -O2, buffers 64-byte aligned). GB/s of input, i.e. of the src operand (fp32 4 bytes,
 * fp16/bf16 2 bytes per element; for narrow, the fp32 acc read); best of 15 samples, medians
 * within ~5% on a quiet machine. Input buffers of 16 KiB ("L1"), 512 KiB (L2), 256 MiB (DRAM);
 * the output comes on top (a 16 KiB fp16 input has a 32 KiB fp32 acc, so those "L1" rows
 * partly run from L2):
 *
 *                        avx2 L1 / L2 / DRAM    avx512 L1 / L2 / DRAM    scalar L1 / DRAM
 *   sum_f32                 70 / 49 / 16           74 / 49 / 16            7.4 / 6.5
 *   widen_add_f16           33 / 29 / 10.5         39 / 32 / 10            1.4 / 1.3
 *   widen_add_bf16          32 / 29 / 10.5         39 / 32 / 10            4.1 / 4.5
 *   widen_f16, widen_bf16   41 / 32 / 9.5          42 / 32 / 9             1.6 / 1.7, 3.7 / 3.5
 *   narrow_f16             110 / 70 / 20          160 / 70 / 17            3.4 / 3.5
 *   narrow_bf16             38 / 39 / 20           50 / 50 / 21            5.0 / 5.1
 *   memcpy of the same bytes: 82 / 48 / 12.
 * So summing a 1 KiB fp32 payload into another costs about 15 ns from L1, 21 ns from L2; a
 * 1 KiB fp16 payload into its fp32 acc about 31 ns from L1, 35 ns from L2.
 * Payloads not 64-byte aligned (vectors split cache lines; bench --offset 42 or 4) lose about
 * a third in L1 (sum_f32 avx2 48, widen_add_f16 avx2 23), 5-15% in L2, ~5% from DRAM, and
 * AVX-512 then no longer beats AVX2: place payloads at 64-byte offsets in the mbuf if the
 * wire format allows. Aligned, AVX-512 gains 5-20% over AVX2 in L1 only, so EAL's default
 * 256-bit limit costs little.
 * The scalar variant is a reference and a fallback, not a fast path.
 */
#ifndef GEOREDUCE_SUM_H
#define GEOREDUCE_SUM_H

#include <stddef.h>
#include <stdint.h>

/** Instruction-set variants of the kernels, in increasing order of preference. */
enum sum_isa {
	SUM_ISA_SCALAR = 0, /* portable C, the reference in tests; always available */
	SUM_ISA_AVX2,       /* AVX2 + F16C + FMA, 256-bit vectors */
	SUM_ISA_AVX512,     /* AVX-512 F + BW, 512-bit vectors */
	SUM_ISA_COUNT,
};

/**
 * OCP Microscaling (MX v1.0) element formats of the wire's MX dtypes: blocks of SUM_MX_BLOCK
 * elements sharing one E8M0 scale. The kernels take a chunk of n_blocks whole blocks in the
 * wire's payload layout (docs/PROTOCOL.md section 4): the elements of every block in order
 * (32 bytes a block for MXINT8 and MXFP8, 16 for MXFP4, two elements a byte, the first in the
 * low nibble), then the n_blocks scale bytes.
 */
enum sum_mx {
	SUM_MX_INT8 = 0, /* MXINT8: two's complement, value n / 64 */
	SUM_MX_FP8,      /* MXFP8 with E4M3 elements (bias 7, no infinity) */
	SUM_MX_FP4,      /* MXFP4 with E2M1 elements (bias 1, no infinity, no NaN) */
	SUM_MX_COUNT,
};

#define SUM_MX_BLOCK 32u /* elements per block */

/** Element bytes of one block of a format (the scale byte comes on top); 0 if unknown. */
static inline unsigned int
sum_mx_elem_bytes(enum sum_mx f)
{
	return f == SUM_MX_FP4 ? 16u : f < SUM_MX_FP4 ? 32u : 0u;
}

/**
 * One variant of every kernel. Tables are immutable and live for the whole process; select
 * one at start and keep the pointer (e.g. in the per-lcore context).
 */
struct sum_kernels {
	const char *name; /* "scalar", "avx2", "avx512" */
	enum sum_isa isa;
	unsigned int bitwidth; /* vector width used, in bits (64 for scalar) */

	/** acc[i] += src[i] for i in [0, n), fp32, in place (acc is the first packet's payload). */
	void (*sum_f32)(float *acc, const float *src, size_t n);

	/** acc[i] = (float)src[i]: first fp16 contribution into the slot's fp32 accumulator. */
	void (*widen_f16)(float *acc, const uint16_t *src, size_t n);
	/** acc[i] += (float)src[i]: each further fp16 contribution. */
	void (*widen_add_f16)(float *acc, const uint16_t *src, size_t n);
	/** dst[i] = fp16(acc[i]), round to nearest even: once, when the chunk is complete. */
	void (*narrow_f16)(uint16_t *dst, const float *acc, size_t n);

	/** The same three for bf16 (the top 16 bits of an fp32). */
	void (*widen_bf16)(float *acc, const uint16_t *src, size_t n);
	void (*widen_add_bf16)(float *acc, const uint16_t *src, size_t n);
	void (*narrow_bf16)(uint16_t *dst, const float *acc, size_t n);

	/**
	 * MX chunks, indexed by enum sum_mx; src and dst are whole chunks in the wire layout
	 * (above), n_blocks blocks. The first contribution is decoded into the fp32 accumulator
	 * (mx_widen), each further one decoded and added (mx_widen_add), and the sum encoded
	 * once, when it leaves (mx_narrow).
	 *
	 * Decode: element i of a block is X x P_i, the exact product rounded to fp32 (it is
	 * exact unless |X x P_i| >= 2^128, which gives infinity; the encoder never produces
	 * such a block). Decode-add is acc + X x P_i rounded once: since the product is
	 * exact, a variant may fuse it into the add (the SIMD MXINT8 kernels do, below the
	 * scale 254, where the product could overflow); the bits are the same. A scale 0xff
	 * (NaN) decodes every element of its block to NaN, and so does an E4M3 element
	 * S.1111.111; every NaN decoded is 0x7fc00000. MXINT8 0x80 decodes to -2 x X (the
	 * encoder never produces it).
	 *
	 * Encode (the specification's conversion, with the choices it leaves made): a block
	 * holding a NaN or an infinity gets the scale 0xff and all-zero elements. Otherwise
	 * its scale is 2^(floor(log2(max |V_i|)) - emax) with emax the exponent of the
	 * element's largest normal (INT8 0, E4M3 8, E2M1 2), clamped to the smallest scale
	 * 2^-127 (also the scale of an all-zero block); each P_i = V_i / X is rounded to the
	 * element type, to nearest with ties to even, saturating at its largest magnitude
	 * (INT8 +-127/64: never 0x80; E4M3 448; E2M1 6); a negative value that rounds to
	 * zero keeps its sign in E4M3 and E2M1 (-0), not in INT8. Integer arithmetic on the
	 * fp32 bits: independent of MXCSR.
	 */
	void (*mx_widen[SUM_MX_COUNT])(float *acc, const uint8_t *src, size_t n_blocks);
	void (*mx_widen_add[SUM_MX_COUNT])(float *acc, const uint8_t *src, size_t n_blocks);
	void (*mx_narrow[SUM_MX_COUNT])(uint8_t *dst, const float *acc, size_t n_blocks);

	/**
	 * Internet checksum (RFC 1071) support: the one's-complement sum of init and of the
	 * 16-bit words of buf[0, n) in native byte order (an odd last byte padded with a zero
	 * byte after it), folded to 16 bits, not complemented. A datagram with a valid
	 * checksum folds to 0xffff in either byte order. Integer arithmetic: every variant
	 * returns the same value. init is a native-order partial sum (e.g. a pseudo-header).
	 */
	uint16_t (*csum16)(const void *buf, size_t n, uint64_t init);
};

/*
 * The scalar checksum loop and fold, shared by every variant for what its vectors leave
 * (always-inline, so each file compiles it with its own flags). 64-bit loads split into
 * 32-bit halves summed into 64 bits: the sum of 16-bit words modulo 0xffff is the same.
 */
static inline __attribute__((always_inline)) uint64_t
sum_csum_tail(uint64_t acc, const uint8_t *p, size_t n)
{
	for (; n >= 8; n -= 8, p += 8) {
		uint64_t w;

		__builtin_memcpy(&w, p, 8);
		acc += (w & 0xffffffffu) + (w >> 32);
	}
	for (; n >= 2; n -= 2, p += 2) {
		uint16_t w;

		__builtin_memcpy(&w, p, 2);
		acc += w;
	}
	if (n != 0) {
		uint8_t t[2] = {p[0], 0};
		uint16_t w;

		__builtin_memcpy(&w, t, 2);
		acc += w;
	}
	return acc;
}

static inline __attribute__((always_inline)) uint16_t
sum_csum_fold(uint64_t acc)
{
	acc = (acc & 0xffffffffu) + (acc >> 32);
	acc = (acc & 0xffffffffu) + (acc >> 32);
	acc = (acc & 0xffffu) + (acc >> 16);
	acc = (acc & 0xffffu) + (acc >> 16);
	acc = (acc & 0xffffu) + (acc >> 16);
	return (uint16_t)acc;
}

/**
 * One variant by ISA, for tests and benchmarks.
 *
 * @param isa  SUM_ISA_SCALAR, SUM_ISA_AVX2 or SUM_ISA_AVX512.
 * @return     The table; NULL if the CPU lacks a required feature (AVX2, F16C and FMA; AVX512F
 *             and AVX512BW), if the variant was not compiled in (non-x86 builds), or if isa
 *             is out of range. Ignores the EAL SIMD bitwidth limit. Any thread, no EAL needed.
 */
const struct sum_kernels *sum_kernels_get(enum sum_isa isa);

/**
 * The preferred variant whose vector width does not exceed max_bitwidth and that the CPU
 * supports: AVX-512 if max_bitwidth >= 512, else AVX2 if max_bitwidth >= 256, else scalar.
 *
 * @param max_bitwidth  Largest vector width allowed, in bits; the dataplane passes
 *                      rte_vect_get_max_simd_bitwidth() (dataplane/slowpath/kernel_select.h),
 *                      tests pass 64, 256 or 512 to force a variant.
 * @return              Never NULL (the scalar table at worst). Any thread, no EAL needed.
 */
const struct sum_kernels *sum_kernels_select(unsigned int max_bitwidth);

/*
 * Per-ISA tables, defined in sum_scalar.c, sum_avx2.c and sum_avx512.c. Internal to the
 * kernels library: everyone else goes through sum_kernels_get() / sum_kernels_select(),
 * which check the CPU first (calling an AVX-512 kernel on a CPU without it is SIGILL).
 */
extern const struct sum_kernels sum_kernels_scalar;
extern const struct sum_kernels sum_kernels_avx2;
extern const struct sum_kernels sum_kernels_avx512;

#endif
