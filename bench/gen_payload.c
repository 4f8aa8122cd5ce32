/* SPDX-License-Identifier: BSD-3-Clause
 *
 * The payloads of georeduce-bench's generator: each contribution a pattern of small
 * integers, and the exact sums the gateway must send back (docs/BENCH.md, "Roles").
 *
 * In fp32, fp16 and bf16 the integers and their sums are exact, so the sum is the same
 * whatever order the gateway adds in. An MX contribution is its integers encoded by the
 * scalar kernels of lib/kernels (the specification's conversion, docs/PROTOCOL.md section
 * 4); its decoded values are dyadic numbers of a few bits, so their fp32 sum is exact in
 * any order too, and the expected payload is that sum encoded once, as every aggregator
 * encodes it when the chunk completes there. With a parent, the parent decodes the
 * gateway's encoded partial sum, adds its own contribution and encodes the RESULT once
 * more. The scalar kernels are the reference; the gateway may use its SIMD variants,
 * which must give the same bits.
 *
 * Main lcore, while the generator is set up (gen_lcore_create()), except gen_wrong(): the
 * generator's lcore, when a received payload differs from its exact sum.
 */
#include <math.h>
#include <string.h>

#include "gen.h"
#include "gen_priv.h"
#include "halffloat.h"
#include "sum.h"

/* The most elements a chunk holds: a 9000-byte packet's payload of MXFP4 blocks. */
#define GEN_ELEMS_MAX (TABLE_CHUNK_BYTES_MAX / 17 * SUM_MX_BLOCK + SUM_MX_BLOCK)

int
gen_value(unsigned int c, unsigned int w, unsigned int i, int a)
{
	return (int)((i + 3 * c + 5 * w) % (unsigned int)(2 * a + 1)) - a;
}

/* Element i of a payload of dtype: small integers, so the conversions are exact. */
static void
put_int(uint8_t *payload, enum wire_dtype dt, unsigned int i, int v)
{
	float f = (float)v;
	uint32_t b;
	uint16_t h;

	memcpy(&b, &f, sizeof(b));
	if (dt == WIRE_DTYPE_FP32) {
		memcpy(payload + 4 * (size_t)i, &f, sizeof(f));
		return;
	}
	if (dt == WIRE_DTYPE_BF16) {
		h = (uint16_t)(b >> 16);
	} else if (v == 0) {
		h = 0;
	} else {
		/* binary16: rebias the exponent; |v| <= 2048 leaves the low 13 bits zero. */
		h = (uint16_t)((b >> 16 & 0x8000u) | ((((b >> 23) & 0xffu) - 112u) << 10) |
			       ((b >> 13) & 0x3ffu));
	}
	memcpy(payload + 2 * (size_t)i, &h, sizeof(h));
}

/* The MX format of a dtype, or -1 for an element-wise one. */
static int
mx_of(enum wire_dtype dt)
{
	switch (dt) {
	case WIRE_DTYPE_MXINT8:
		return SUM_MX_INT8;
	case WIRE_DTYPE_MXFP8:
		return SUM_MX_FP8;
	case WIRE_DTYPE_MXFP4:
		return SUM_MX_FP4;
	default:
		return -1;
	}
}

void
gen_contrib_payload(const struct gen_job *gj, unsigned int c, unsigned int w, uint8_t *out)
{
	int f = mx_of(gj->dtype);
	float v[GEN_ELEMS_MAX];

	if (f < 0) {
		for (unsigned int i = 0; i < gj->elems; i++)
			put_int(out, gj->dtype, i, gen_value(c, w, i, gj->amplitude));
		return;
	}
	for (unsigned int i = 0; i < gj->elems && i < GEN_ELEMS_MAX; i++)
		v[i] = (float)gen_value(c, w, i, gj->amplitude);
	sum_kernels_get(SUM_ISA_SCALAR)->mx_narrow[f](out, v, gj->elems / SUM_MX_BLOCK);
}

void
gen_exact_sum_of(const struct gen_job *gj, unsigned int c, const bool *inc, bool share, uint8_t *e)
{
	const struct sum_kernels *k = sum_kernels_get(SUM_ISA_SCALAR);
	unsigned int W = gj->n_workers, nb = gj->elems / SUM_MX_BLOCK, n = 0;
	int f = mx_of(gj->dtype);
	float acc[GEN_ELEMS_MAX];
	uint8_t buf[TABLE_CHUNK_BYTES_MAX];

	if (f < 0) {
		for (unsigned int i = 0; i < gj->elems; i++) {
			int s = share ? gen_value(c, W, i, gj->amplitude) : 0;

			for (unsigned int w = 0; w < W; w++)
				s += inc[w] ? gen_value(c, w, i, gj->amplitude) : 0;
			put_int(e, gj->dtype, i, s);
		}
		return;
	}
	memset(acc, 0, sizeof(float) * gj->elems);
	for (unsigned int w = 0; w < W; w++) {
		if (!inc[w])
			continue;
		gen_contrib_payload(gj, c, w, buf);
		(n++ == 0 ? k->mx_widen[f] : k->mx_widen_add[f])(acc, buf, nb);
	}
	k->mx_narrow[f](e, acc, nb);
	if (share) {
		/* The parent: the gateway's partial sum as it arrives, plus its own share. */
		k->mx_widen[f](acc, e, nb);
		gen_contrib_payload(gj, c, W, buf);
		k->mx_widen_add[f](acc, buf, nb);
		k->mx_narrow[f](e, acc, nb);
	}
}

void
gen_exact_sum(const struct gen_job *gj, unsigned int c, unsigned int n, uint8_t *e)
{
	bool all[TABLE_CHILDREN_MAX + TABLE_WORKERS_MAX];

	for (unsigned int w = 0; w < gj->n_workers; w++)
		all[w] = true;
	gen_exact_sum_of(gj, c, all, n > gj->n_workers, e);
}

/* Element i of a payload of dtype as a number, and its bits; an MX dtype's byte i. */
static double
elem_value(const uint8_t *pl, enum wire_dtype dt, unsigned int i, uint32_t *bits)
{
	uint16_t h;
	float f;

	if (wire_dtype_is_mx(dt)) {
		*bits = pl[i];
		return pl[i];
	}
	if (dt == WIRE_DTYPE_FP32) {
		memcpy(bits, pl + 4 * (size_t)i, 4);
		memcpy(&f, bits, 4);
		return f;
	}
	memcpy(&h, pl + 2 * (size_t)i, 2);
	*bits = h;
	return dt == WIRE_DTYPE_BF16 ? gr_bf16_to_f32(h) : gr_f16_to_f32(h);
}

void
gen_wrong(struct gen_lcore *g, const uint8_t *pl, const uint8_t *expect, const struct wire_pkt *p,
	  const char *what, uint16_t party)
{
	const struct gen_job *gj = g->gj;
	bool mx = wire_dtype_is_mx(gj->dtype);
	unsigned int es = mx ? 1 : wire_dtype_size(gj->dtype), n = 0, first = 0;
	unsigned int units = mx ? gj->payload : gj->elems;
	struct gen_wrong *x = &g->res.wrong[g->res.n_wrong];

	g->st.wrong++;
	for (unsigned int i = 0; i < units; i++)
		if (memcmp(pl + i * es, expect + i * es, es) != 0 && n++ == 0)
			first = i;
	gen_fail(g,
		 "chunk %u round %u: %s %u differs from the exact sum at %u of %u %s, the "
		 "first %u",
		 p->chunk, p->round, what, party, n, units, mx ? "payload bytes" : "elements",
		 first);
	if (g->res.n_wrong == GEN_WRONG_MAX)
		return;
	g->res.n_wrong++;
	*x = (struct gen_wrong){.chunk = p->chunk,
				.round = p->round,
				.worker = party,
				.element = first,
				.n_elems = n};
	x->expect = elem_value(expect, gj->dtype, first, &x->expect_bits);
	x->got = elem_value(pl, gj->dtype, first, &x->got_bits);
}
