/* SPDX-License-Identifier: BSD-3-Clause
 *
 * georeduce-worker's generated tensors and the check of their results. The tensor is
 * integer-valued so that every sum is exact: element e of worker w is (7 w + e) mod M,
 * M = 61 (fp32), 31 (fp16), 9 (bf16), or ((7 w + e) mod 3) - 1 for the MX dtypes; the
 * expected result is the sum over the contributors, rounded once to the dtype. Runs in
 * each worker's thread, between its calls.
 */
#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "georeduce.h"
#include "georeduce_worker.h"
#include "halffloat.h"

static bool
is_mx(enum gr_dtype dt)
{
	return dt >= GR_DTYPE_MXINT8 && dt <= GR_DTYPE_MXFP4;
}

uint64_t
modulus(enum gr_dtype dt)
{
	if (is_mx(dt))
		return 3;
	return dt == GR_DTYPE_FP32 ? 61 : (dt == GR_DTYPE_FP16 ? 31 : 9);
}

/* The value of pattern x in [0, M): x, or x - 1 (-1, 0, 1) for the MX dtypes, whose sums
 * of up to 127 (mxint8), 14 (mxfp8) or 4 (mxfp4) contributions every encode keeps exact. */
static double
value(enum gr_dtype dt, uint64_t x)
{
	return is_mx(dt) ? (double)x - 1 : (double)x;
}

/* Element e of worker w as its dtype's bits (a small integer is exact in every dtype; the
 * MX dtypes take and give fp32). */
uint32_t
encode(enum gr_dtype dt, double v)
{
	float f = (float)v;
	uint32_t u;

	if (dt == GR_DTYPE_FP16)
		return gr_f32_to_f16(f);
	if (dt == GR_DTYPE_BF16)
		return gr_f32_to_bf16(f);
	memcpy(&u, &f, sizeof(u));
	return u;
}

uint32_t
load(const void *buf, enum gr_dtype dt, uint64_t e)
{
	const uint8_t *p = buf;
	uint32_t u = 0;
	uint16_t h;

	if (dt == GR_DTYPE_FP32 || is_mx(dt)) {
		memcpy(&u, p + 4 * e, 4);
		return u;
	}
	memcpy(&h, p + 2 * e, 2);
	return h;
}

static void
store(void *buf, enum gr_dtype dt, uint64_t e, uint32_t bits)
{
	uint8_t *p = buf;
	uint16_t h = (uint16_t)bits;

	if (dt == GR_DTYPE_FP32 || is_mx(dt))
		memcpy(p + 4 * e, &bits, 4);
	else
		memcpy(p + 2 * e, &h, 2);
}

void
fill(const struct worker *w, const struct gr_config *cfg)
{
	uint64_t m = modulus(cfg->dtype);
	uint64_t wid = w->o->all != NULL || w->o->multicast ? w->id : 0;

	if (w->input != NULL) {
		memcpy(w->buf, w->input, cfg->elements * gr_dtype_size(cfg->dtype));
		return;
	}
	for (uint64_t e = 0; e < cfg->elements; e++)
		store(w->buf, cfg->dtype, e,
		      encode(cfg->dtype, value(cfg->dtype, (7 * wid + e) % m)));
}

/* The workers of chunk c's contributor set into ids[] (at most ALL_WORKERS_MAX); their
 * number, or -1 with w->msg filled if --all-workers does not name one of them. */
static int
set_ids(struct worker *w, const struct gr_config *cfg, uint64_t c, uint32_t round, uint16_t *ids)
{
	const uint8_t *set = w->csets + c * cfg->cset_blocks * GR_CSET_BLOCK;
	int n = 0;

	for (uint32_t id = 1; id < 256u * cfg->cset_blocks; id++) {
		bool known = w->o->all == NULL;

		if (!(set[id / 8] >> (id % 8) & 1))
			continue;
		for (int i = 0; !known && i < w->o->n_all; i++)
			known = w->o->all[i] == id;
		if (!known) {
			snprintf(w->msg, sizeof(w->msg),
				 "worker %u round %" PRIu32 ": chunk %" PRIu64
				 " holds worker %u, which --all-workers does not name",
				 w->id, round, c, id);
			return -1;
		}
		ids[n++] = (uint16_t)id;
	}
	return n;
}

/* Check the result of a generated tensor; false with w->msg filled. With contributor
 * sets (a partial reduce may leave workers out) each chunk is checked against its own. */
bool
verify(struct worker *w, const struct gr_config *cfg, uint32_t round, int contrib)
{
	const struct opts *o = w->o;
	uint64_t m = modulus(cfg->dtype), chunk = UINT64_MAX;
	size_t slen = (size_t)cfg->cset_blocks * GR_CSET_BLOCK;
	static _Thread_local uint16_t ids[ALL_WORKERS_MAX];
	int n_ids = 0;

	if (o->all != NULL && slen == 0 && contrib != o->n_all) {
		snprintf(w->msg, sizeof(w->msg),
			 "worker %u round %" PRIu32 ": %d contributors, "
			 "--all-workers names %d",
			 w->id, round, contrib, o->n_all);
		return false;
	}
	for (uint64_t e = 0; e < cfg->elements; e++) {
		double sum = 0;
		uint32_t want, got;

		if (slen != 0 && e / cfg->chunk_elements != chunk) {
			chunk = e / cfg->chunk_elements;
			n_ids = set_ids(w, cfg, chunk, round, ids);
			if (n_ids < 0)
				return false;
		}
		if (slen != 0 && o->all == NULL) {
			sum = n_ids * value(cfg->dtype, e % m);
		} else if (slen != 0) {
			for (int i = 0; i < n_ids; i++)
				sum += value(cfg->dtype, (7 * (uint64_t)ids[i] + e) % m);
		} else if (o->all == NULL) {
			sum = contrib * value(cfg->dtype, e % m);
		} else {
			for (int i = 0; i < o->n_all; i++)
				sum += value(cfg->dtype, (7 * (uint64_t)o->all[i] + e) % m);
		}
		want = encode(cfg->dtype, sum);
		got = load(w->buf, cfg->dtype, e);
		if (got != want) {
			snprintf(w->msg, sizeof(w->msg),
				 "worker %u round %" PRIu32 ": element %" PRIu64 " is 0x%" PRIx32
				 ", want 0x%" PRIx32 " (%.0f)",
				 w->id, round, e, got, want, sum);
			return false;
		}
	}
	return true;
}
