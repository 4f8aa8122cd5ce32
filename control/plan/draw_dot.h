/* SPDX-License-Identifier: BSD-3-Clause
 *
 * georeduce-plan draw: a plan's picture as Graphviz DOT text, one function per kind of plan
 * (draw_dot.c). Each writes one whole graph to f; draw.c checks the plan first and renders
 * the text with Graphviz.
 */
#ifndef GEOREDUCE_DRAW_DOT_H
#define GEOREDUCE_DRAW_DOT_H

#include <stdbool.h>
#include <stdio.h>

#include "blueconnect.h"
#include "crew.h"
#include "plan.h"
#include "selmcast.h"
#include "topo.h"

struct draw_opts {
	const char *layout; /* Graphviz layout engine */
	int round;          /* selmcast: the round drawn */
	bool failover;      /* crew: also the relays of the results */
};

/** A tree plan, checked by trees_check() in draw.c; bh: its hierarchy section, or NULL. */
void draw_trees(FILE *f, const struct topo *t, const struct plan *p, const struct bc_hierarchy *bh,
		const struct draw_opts *o);

/** A CREW plan: the scatter of its partial_reduce section s. */
void draw_crew(FILE *f, const struct topo *t, const struct plan *p, const struct crew_section *s,
	       const struct draw_opts *o);

/** A SELMCAST plan: round o->round of its multicast section sp (o->round < rounds). */
void draw_selmcast(FILE *f, const struct topo *t, const struct selmcast_plan *sp,
		   const struct draw_opts *o);

#endif
