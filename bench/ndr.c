/* SPDX-License-Identifier: BSD-3-Clause
 *
 * The zero-loss search (ndr.h): RFC 2544 section 26.1's binary search for NDR and PDR in
 * one pass. Pure arithmetic, no DPDK. georeduce-bench's main lcore, between trials.
 */
#include <math.h>
#include <stddef.h>

#include "ndr.h"

int
ndr_init(struct ndr_search *s, double top, double resolution, double pdr_loss)
{
	if (s == NULL || !(top > 0) || !isfinite(top) || !(resolution > 0) || resolution > top ||
	    !(pdr_loss >= 0) || !(pdr_loss < 1))
		return -1;
	*s = (struct ndr_search){top, resolution, pdr_loss, 0, top, 0, top, 0};
	return 0;
}

/* One search's interval is narrow enough, or its top passed. */
static bool
done(const struct ndr_search *s, double lo, double hi)
{
	return lo >= s->top || hi - lo <= s->resolution * (1 + 1e-9);
}

bool
ndr_found(const struct ndr_search *s, bool pdr)
{
	return pdr ? done(s, s->pdr_lo, s->pdr_hi) : done(s, s->ndr_lo, s->ndr_hi);
}

double
ndr_next(const struct ndr_search *s)
{
	if (s->trials >= NDR_TRIALS_MAX)
		return 0;
	if (s->trials == 0)
		return s->top;
	if (!ndr_found(s, false))
		return (s->ndr_lo + s->ndr_hi) / 2;
	if (!ndr_found(s, true))
		return (s->pdr_lo + s->pdr_hi) / 2;
	return 0;
}

/* Move one search's bounds: a pass raises lo, a failure lowers hi, each only inside the
 * interval (what falls outside repeats or contradicts what is known). */
static void
move(double *lo, double *hi, double rate, bool pass)
{
	if (pass && rate > *lo && rate <= *hi)
		*lo = rate;
	else if (!pass && rate < *hi && rate > *lo)
		*hi = rate;
}

void
ndr_record(struct ndr_search *s, double rate, double loss, bool reached)
{
	s->trials++;
	move(&s->ndr_lo, &s->ndr_hi, rate, reached && loss <= 0);
	move(&s->pdr_lo, &s->pdr_hi, rate, reached && loss <= s->pdr_loss);
}
