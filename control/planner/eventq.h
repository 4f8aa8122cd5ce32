/* SPDX-License-Identifier: BSD-3-Clause
 *
 * The event queue of the planner's discrete-event simulators: the AllReduce simulator
 * (sim_engine.c) and CREW's training-progress simulator (crew_sim.c). A binary min-heap
 * of timed events, earliest first; events due at the same time come out in the order of
 * a key the simulator chooses, so that every run is reproducible:
 *   - sim_engine.c: the transfer id of an arrival, or a flag bit and the directed link of
 *     a link completion (arrivals first, then links, each in id order);
 *   - crew_sim.c: a sequence number (first in, first out).
 * An event carries a type, two arguments and a version: simulators bump a version to
 * drop events computed before a change when they pop them (lazy deletion).
 *
 * Plain C, no locks: each simulation owns its queue and runs on the caller's thread
 * (georeduce-plan, or the control process while it plans a job).
 */
#ifndef GEOREDUCE_EVENTQ_H
#define GEOREDUCE_EVENTQ_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct eventq_ev {
	double t;               /* when it happens, seconds */
	uint64_t key;           /* among events at the same t, the smaller key first */
	uint32_t type;          /* the simulator's kind of event */
	uint32_t a, b;          /* its arguments */
	uint32_t ver;           /* the version it was computed for */
};

/** A queue; all zero (`{ 0 }`) is an empty one. */
struct eventq {
	struct eventq_ev *heap; /* heap[0] is the earliest */
	size_t n, cap;
};

/** Free the queue's memory; it is empty (and usable) afterwards. */
void eventq_fini(struct eventq *q);

/** Add an event. Returns 0 or -ENOMEM (the queue is unchanged). */
int eventq_push(struct eventq *q, const struct eventq_ev *ev);

/** Take the earliest event off a queue that is not empty. */
struct eventq_ev eventq_pop(struct eventq *q);

static inline bool
eventq_empty(const struct eventq *q)
{
	return q->n == 0;
}

/** Time of the earliest event of a queue that is not empty. */
static inline double
eventq_next_t(const struct eventq *q)
{
	return q->heap[0].t;
}

#endif
