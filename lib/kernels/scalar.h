/* SPDX-License-Identifier: BSD-3-Clause
 *
 * What the scalar kernels (sum_scalar.c, mx_scalar.c) share: loads and stores at any byte
 * offset through memcpy (packet payloads may sit anywhere; each is one unaligned move),
 * and the bits of an fp32. Header-only, fast path.
 */
#ifndef GEOREDUCE_KERNELS_SCALAR_H
#define GEOREDUCE_KERNELS_SCALAR_H

#include <stdint.h>
#include <string.h>

static inline float
load_f32(const float *p)
{
	float v;

	memcpy(&v, p, sizeof(v));
	return v;
}

static inline void
store_f32(float *p, float v)
{
	memcpy(p, &v, sizeof(v));
}

static inline uint16_t
load_u16(const uint16_t *p)
{
	uint16_t v;

	memcpy(&v, p, sizeof(v));
	return v;
}

static inline void
store_u16(uint16_t *p, uint16_t v)
{
	memcpy(p, &v, sizeof(v));
}

static inline float
f32_from_bits(uint32_t u)
{
	float f;

	memcpy(&f, &u, sizeof(f));
	return f;
}

static inline uint32_t
f32_to_bits(float f)
{
	uint32_t u;

	memcpy(&u, &f, sizeof(u));
	return u;
}

#endif
