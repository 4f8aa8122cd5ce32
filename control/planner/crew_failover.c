/* SPDX-License-Identifier: BSD-3-Clause
 *
 * CREW failover (crew.h, docs/CREW.md): the backup aggregator of a chunk whose aggregator
 * a member cannot reach, the relay of a broadcast whose direct link failed, and both for
 * every aggregator and member of a plan. Functions of their arguments: any thread.
 */
#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>

#include "crew.h"
#include "crew_util.h"

static double
pend(const double *pending, int n, int i, int j)
{
	return pending != NULL ? pending[(size_t)i * (size_t)n + (size_t)j] : 0;
}

static bool
is_member(const struct crew_problem *pb, int v)
{
	for (int k = 0; k < pb->p; k++)
		if (pb->group[k] == v)
			return true;
	return false;
}

int
crew_pick_backup(const struct crew_problem *pb, int site, uint64_t bytes, const double *pending,
		 const bool *down, bool members_only)
{
	double best = INFINITY, s = (double)bytes;
	int pick = -1;

	for (int j = 0; j < pb->n; j++) {
		double xs = 0, ys = 0;
		bool ok = true;

		if (j == site || (down != NULL && down[j]) || (members_only && !is_member(pb, j)))
			continue;
		for (int k = 0; k < pb->p && ok; k++) {
			int m = pb->group[k];
			double r1, r2;

			if (m == j)
				continue;
			r1 = rate_of(pb, m, j);
			r2 = rate_of(pb, j, m);
			if (!(r1 > 0 && r2 > 0) || (down != NULL && down[m])) {
				ok = false;
				break;
			}
			xs = fmax(xs, (pend(pending, pb->n, m, j) + s) / r1);
			ys = fmax(ys, (pend(pending, pb->n, j, m) + s) / r2);
		}
		if (ok && xs + ys < best) {
			best = xs + ys;
			pick = j;
		}
	}
	return pick;
}

int
crew_pick_relay(const struct crew_problem *pb, int from, int to, uint64_t bytes,
		const double *pending, const bool *down)
{
	bool *mask = calloc((size_t)pb->n, sizeof(bool));
	double s = (double)bytes;

	if (mask == NULL)
		return -1;
	for (int k = 0; k < pb->p; k++)
		mask[pb->group[k]] = true;
	for (int pass = 0; pass < 2; pass++) {
		double best = INFINITY;
		int pick = -1;

		for (int r = 0; r < pb->n; r++) {
			double r1 = rate_of(pb, from, r), r2 = rate_of(pb, r, to), cost;
			bool member = mask[r];

			if (r == from || r == to || (down != NULL && down[r]) ||
			    (pass == 0) != member || !(r1 > 0 && r2 > 0))
				continue;
			/* A member receives the chunk anyway: only the second hop is extra. */
			cost = (pend(pending, pb->n, from, r) + (member ? 0 : s)) / r1 +
			       (pend(pending, pb->n, r, to) + s) / r2;
			if (cost < best) {
				best = cost;
				pick = r;
			}
		}
		if (pick >= 0) {
			free(mask);
			return pick;
		}
	}
	free(mask);
	return -1;
}

int
crew_failover(const struct crew_problem *pb, enum crew_scheme s, const uint64_t *bytes,
	      const bool *down, int *backup, int *relay)
{
	struct crew_problem all;
	const struct crew_problem *q = pb;
	double *load;
	int *g = NULL, n = pb->n;

	if (s == CREW_SCHEME_ALL_TO_ALL) {
		g = all_sites(pb, &all);
		if (g == NULL)
			return -ENOMEM;
		q = &all;
	}
	load = calloc((size_t)n * (size_t)n, sizeof(*load));
	if (load == NULL) {
		free(g);
		return -ENOMEM;
	}
	/* The planned transfers: every member sends S_i to i and receives S_i back. */
	for (int i = 0; i < n; i++)
		for (int k = 0; k < q->p && bytes[i] > 0; k++) {
			int m = q->group[k];

			if (m == i)
				continue;
			load[(size_t)m * (size_t)n + (size_t)i] += (double)bytes[i];
			load[(size_t)i * (size_t)n + (size_t)m] += (double)bytes[i];
		}
	for (int i = 0; i < n; i++) {
		backup[i] = bytes[i] > 0 ? crew_pick_backup(q, i, bytes[i], load, down,
							    s == CREW_SCHEME_PARTIAL) :
					   -1;
		for (int k = 0; k < pb->p; k++) {
			int m = pb->group[k];

			relay[(size_t)i * (size_t)pb->p + (size_t)k] =
				bytes[i] > 0 && m != i ?
					crew_pick_relay(q, i, m, bytes[i], load, down) :
					-1;
		}
	}
	free(load);
	free(g);
	return 0;
}
