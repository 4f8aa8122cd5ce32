/* SPDX-License-Identifier: BSD-3-Clause
 *
 * Small helpers shared by the CREW files of the planner (crew.c, crew_failover.c,
 * crew_matrix.c, crew_sim.c, crew_simlink.c): the unit of the bandwidth matrices, the
 * rate of a link, the group of every site and the seeded generator. Not part of the
 * planner's interface (crew.h). Functions of their arguments only: any thread.
 */
#ifndef GEOREDUCE_CREW_UTIL_H
#define GEOREDUCE_CREW_UTIL_H

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "crew.h"

/* Gbit/s -> bytes per second. */
#define GBPS_TO_BPS 125e6

/* Capacity i -> j of the problem's matrix, bytes per second. */
static inline double
rate_of(const struct crew_problem *pb, int i, int j)
{
	return pb->gbps[(size_t)i * (size_t)pb->n + (size_t)j] * GBPS_TO_BPS;
}

/* A copy of the problem whose group is every site. */
static inline int *
all_sites(const struct crew_problem *pb, struct crew_problem *all)
{
	int *g = malloc(sizeof(int) * (size_t)pb->n);

	if (g == NULL)
		return NULL;
	for (int i = 0; i < pb->n; i++)
		g[i] = i;
	*all = *pb;
	all->group = g;
	all->p = pb->n;
	return g;
}

/* splitmix64: the planner's seeded generator. */
static inline uint64_t
mix64(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

#endif
