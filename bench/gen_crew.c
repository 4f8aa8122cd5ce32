/* SPDX-License-Identifier: BSD-3-Clause
 *
 * Partial reduce for georeduce-bench's generator (docs/BENCH.md, "Roles"): a job whose
 * CONTRIBs and RESULTs carry contributor sets and whose tree has a threshold (a CREW
 * group's, docs/TABLES.md), so that the gateway sums the first contributions to arrive,
 * at least the threshold's worth of workers, and names them in the set. Which ones is up
 * to the arrival order, so the exact sum is known only from the set: each round's first
 * RESULT copy (at a root), or the gateway's partial sum (at the parent the bench plays),
 * must name whole parties of the bench (a worker, or every worker below a child gateway;
 * at the parent also its own share), at least the threshold, with `contrib` its
 * population; the exact sum of the parties it names is computed then, and the payload and
 * every later copy of the round must match it and that set bit for bit.
 *
 * Generator's lcore, in its receive loop. The sum is computed per round (the set is not
 * known before): elements x parties additions, or for an MX dtype a decode and encode.
 */
#include <string.h>

#include "gen.h"
#include "gen_priv.h"

/* Split set into the parties it names: inc[w] for each contributor, *share for the
 * parent's own share, *pop its population without the share. False if it names any other
 * id, or part of a child's workers only. */
static bool
split(const struct gen_job *gj, const uint8_t *set, bool *inc, bool *share, unsigned int *pop)
{
	uint8_t rest[WIRE_CSET_BLOCK * 16];
	uint32_t L = gj->cset_len;

	memcpy(rest, set, L);
	*pop = 0;
	*share = false;
	for (unsigned int w = 0; w < gj->n_workers + gj->has_parent; w++) {
		const uint8_t *ps = gj->sets + (size_t)w * L;
		bool all = true, any = false;

		for (uint32_t b = 0; b < L; b++) {
			all = all && (set[b] & ps[b]) == ps[b];
			any = any || (set[b] & ps[b]) != 0;
			rest[b] &= (uint8_t)~ps[b];
		}
		if (any && !all)
			return false;
		if (w < gj->n_workers)
			inc[w] = all;
		else
			*share = all;
		for (uint32_t b = 0; all && w < gj->n_workers && b < L; b++)
			*pop += (unsigned int)__builtin_popcount(ps[b]);
	}
	for (uint32_t b = 0; b < L; b++)
		if (rest[b] != 0)
			return false;
	return true;
}

/* The parties the set of the gateway's sum p names (the parent's share none of them),
 * at least the threshold's workers, its population p's contrib. False, with a failure
 * counted, otherwise. */
static bool
named(struct gen_lcore *g, const struct wire_pkt *p, const uint8_t *set, bool *inc,
      unsigned int *pop, const char *what)
{
	const struct gen_job *gj = g->gj;
	bool share;

	if (split(gj, set, inc, &share, pop) && !share && *pop == p->contrib &&
	    *pop >= gj->threshold)
		return true;
	gen_fail(g,
		 "chunk %u round %u: %s whose set names others than the gateway's subtree, or "
		 "fewer than %u workers, or not its contrib %u",
		 p->chunk, p->round, what, gj->threshold, p->contrib);
	return false;
}

bool
gen_crew_partial(struct gen_lcore *g, unsigned int c, const uint8_t *d, const struct wire_pkt *p)
{
	const struct gen_job *gj = g->gj;
	struct gen_chunk *ch = &g->ch[c];
	const uint8_t *set = d + WIRE_FRAME_PAYLOAD_OFF;
	bool inc[TABLE_CHILDREN_MAX + TABLE_WORKERS_MAX];
	unsigned int pop;

	if (!named(g, p, set, inc, &pop, "a partial sum to the parent"))
		return false;
	gen_exact_sum_of(gj, c, inc, false, ch->expect);
	if (memcmp(d + gj->pl_off, ch->expect, gj->payload) != 0) {
		/* Against the exact sum of the workers its set names. */
		gen_wrong(g, d + gj->pl_off, ch->expect, p, "the partial sum to", gj->parent.id);
		return false;
	}
	/* The RESULT: those and the parent's share. */
	gen_exact_sum_of(gj, c, inc, true, ch->expect);
	memcpy(ch->set, set, gj->cset_len);
	for (uint32_t b = 0; b < gj->cset_len; b++)
		ch->set[b] |= gj->sets[(size_t)gj->n_workers * gj->cset_len + b];
	ch->contrib = (uint16_t)(pop + 1);
	ch->known = true;
	return true;
}

bool
gen_crew_result(struct gen_lcore *g, unsigned int c, const uint8_t *h, const struct wire_pkt *p)
{
	const struct gen_job *gj = g->gj;
	struct gen_chunk *ch = &g->ch[c];
	const uint8_t *set = h + WIRE_FRAME_PAYLOAD_OFF;
	bool inc[TABLE_CHILDREN_MAX + TABLE_WORKERS_MAX];
	unsigned int pop;

	if (!ch->known) {
		/* A root's first copy of the round (a parent's RESULT is known already). */
		if (gj->has_parent) {
			gen_fail(g, "chunk %u round %u: a RESULT before the parent sent one",
				 p->chunk, p->round);
			return false;
		}
		if (!named(g, p, set, inc, &pop, "a RESULT"))
			return false;
		gen_exact_sum_of(gj, c, inc, false, ch->expect);
		memcpy(ch->set, set, gj->cset_len);
		ch->contrib = (uint16_t)pop;
		ch->known = true;
	}
	if (p->contrib != ch->contrib || memcmp(set, ch->set, gj->cset_len) != 0) {
		gen_fail(g,
			 "chunk %u round %u: a RESULT copy with contrib %u and a set other than "
			 "the round's (contrib %u)",
			 p->chunk, p->round, p->contrib, ch->contrib);
		return false;
	}
	return true;
}
