/* SPDX-License-Identifier: BSD-3-Clause
 *
 * Conversions between fp32 and the two 16-bit element types, for the worker library (the
 * average option), georeduce-worker (patterns and their expected sums) and the tests.
 * Not installed. fp16 uses the compiler's _Float16 (GCC >= 12 on x86-64: F16C or software),
 * which rounds to nearest even; bf16 is the upper half of a binary32, rounded to nearest
 * even here. Header-only, no state: any thread.
 */
#ifndef GEOREDUCE_HALFFLOAT_H
#define GEOREDUCE_HALFFLOAT_H

#include <stdint.h>
#include <string.h>

/** fp16 bits -> fp32, exact. */
static inline float
gr_f16_to_f32(uint16_t h)
{
	__extension__ _Float16 v;

	memcpy(&v, &h, sizeof(h));
	return (float)v;
}

/** fp32 -> fp16 bits, round to nearest even (overflow gives infinity). */
static inline uint16_t
gr_f32_to_f16(float f)
{
	__extension__ _Float16 v = (_Float16)f;
	uint16_t h;

	memcpy(&h, &v, sizeof(h));
	return h;
}

/** bf16 bits -> fp32, exact. */
static inline float
gr_bf16_to_f32(uint16_t h)
{
	uint32_t u = (uint32_t)h << 16;
	float f;

	memcpy(&f, &u, sizeof(f));
	return f;
}

/** fp32 -> bf16 bits, round to nearest even; a NaN stays a (quiet) NaN. */
static inline uint16_t
gr_f32_to_bf16(float f)
{
	uint32_t u;

	memcpy(&u, &f, sizeof(u));
	if ((u & 0x7fffffffu) > 0x7f800000u)
		return (uint16_t)((u >> 16) | 0x0040u);
	return (uint16_t)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}

#endif
