/* SPDX-License-Identifier: BSD-3-Clause
 *
 * libFuzzer harness of the MX kernels (lib/kernels/mx_*.c): byte 0 picks the format
 * (mxint8, mxfp8, mxfp4); the rest is cut into two chunks A and B of the same number of
 * whole blocks in the wire layout (elements, then the scale bytes), and what is left over
 * is read as fp32 bits. Every variant this CPU runs (scalar, AVX2, AVX-512) decodes A
 * (mx_widen), decodes and adds B (mx_widen_add) and encodes the sum (mx_narrow), and
 * encodes the leftover floats, whatever their bits (NaN, infinity, subnormal). The
 * oracle: every SIMD variant's accumulator and encoded chunk are bit for bit the scalar
 * reference's.
 */
#include <cpuid.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "sum.h"

/* Blocks per chunk at most: a 9000-byte MTU carries fewer than 272 MXINT8 blocks. */
#define MAX_BLOCKS 300u

static float acc_ref[MAX_BLOCKS * SUM_MX_BLOCK], acc_var[MAX_BLOCKS * SUM_MX_BLOCK];
static uint8_t enc_ref[MAX_BLOCKS * 33], enc_var[MAX_BLOCKS * 33];

/* The variants this CPU runs, as sum_select.c decides (CPUID read here: clang 14's CPU
 * builtins know no "f16c"). The OS's saving of the vector state is assumed, as there. */
static const struct sum_kernels *
variant(enum sum_isa isa)
{
	unsigned int a, b, c, d;
	bool avx2, f16c_fma, avx512;

	if (!__get_cpuid(1, &a, &b, &c, &d))
		return NULL;
	f16c_fma = (c & bit_F16C) && (c & bit_FMA);
	if (!__get_cpuid_count(7, 0, &a, &b, &c, &d))
		return NULL;
	avx2 = (b & bit_AVX2) && f16c_fma;
	avx512 = (b & bit_AVX512F) && (b & bit_AVX512BW);
	if (isa == SUM_ISA_AVX2 && avx2)
		return &sum_kernels_avx2;
	if (isa == SUM_ISA_AVX512 && avx512)
		return &sum_kernels_avx512;
	return NULL;
}

static void
run(const struct sum_kernels *k, enum sum_mx f, const uint8_t *a, const uint8_t *b, size_t n_blocks,
    const float *in, size_t in_blocks, float *acc, uint8_t *enc, uint8_t *enc2)
{
	k->mx_widen[f](acc, a, n_blocks);
	k->mx_widen_add[f](acc, b, n_blocks);
	k->mx_narrow[f](enc, acc, n_blocks);
	k->mx_narrow[f](enc2, in, in_blocks);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static uint8_t enc2_ref[MAX_BLOCKS * 33], enc2_var[MAX_BLOCKS * 33];
	static float in[MAX_BLOCKS * SUM_MX_BLOCK];
	const struct sum_kernels *ref = &sum_kernels_scalar;
	enum sum_mx f;
	size_t unit, n_blocks, in_blocks, rest, chunk;

	if (size < 1)
		return 0;
	f = (enum sum_mx)(data[0] % SUM_MX_COUNT);
	data++;
	size--;
	unit = sum_mx_elem_bytes(f) + 1;
	n_blocks = size / (2 * unit);
	if (n_blocks > MAX_BLOCKS)
		n_blocks = MAX_BLOCKS;
	chunk = n_blocks * unit;
	rest = size - 2 * chunk;
	in_blocks = rest / (SUM_MX_BLOCK * sizeof(float));
	if (in_blocks > MAX_BLOCKS)
		in_blocks = MAX_BLOCKS;
	memcpy(in, data + 2 * chunk, in_blocks * SUM_MX_BLOCK * sizeof(float));

	memset(enc_ref, 0, sizeof(enc_ref));
	memset(enc2_ref, 0, sizeof(enc2_ref));
	run(ref, f, data, data + chunk, n_blocks, in, in_blocks, acc_ref, enc_ref, enc2_ref);
	for (int isa = SUM_ISA_SCALAR + 1; isa < SUM_ISA_COUNT; isa++) {
		const struct sum_kernels *k = variant((enum sum_isa)isa);

		if (k == NULL)
			continue;
		memset(enc_var, 0, sizeof(enc_var));
		memset(enc2_var, 0, sizeof(enc2_var));
		run(k, f, data, data + chunk, n_blocks, in, in_blocks, acc_var, enc_var, enc2_var);
		if (memcmp(acc_ref, acc_var, n_blocks * SUM_MX_BLOCK * sizeof(float)) != 0 ||
		    memcmp(enc_ref, enc_var, chunk) != 0 ||
		    memcmp(enc2_ref, enc2_var, sizeof(enc2_ref)) != 0)
			abort();
	}
	return 0;
}
