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
 * Push and pop run once or twice per simulated transfer, so they are inline here; growing
 * and freeing the heap are in eventq.c. Plain C, no locks: each simulation owns its queue
 * and runs on the caller's thread (georeduce-plan, or the control process while it plans
 * a job).
 */
#ifndef GEOREDUCE_EVENTQ_H
#define GEOREDUCE_EVENTQ_H

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct eventq_ev {
	double t;      /* when it happens, seconds */
	uint64_t key;  /* among events at the same t, the smaller key first */
	uint32_t type; /* the simulator's kind of event */
	uint32_t a, b; /* its arguments */
	uint32_t ver;  /* the version it was computed for */
};

/** A queue; all zero (`{ 0 }`) is an empty one. */
struct eventq {
	struct eventq_ev *heap; /* heap[0] is the earliest */
	size_t n, cap;
};

/** Free the queue's memory; it is empty (and usable) afterwards. */
void eventq_fini(struct eventq *q);

/** Room for at least one more event: 0, or -ENOMEM with the queue as it was. */
int eventq_grow(struct eventq *q);

static inline bool
eventq_before(const struct eventq_ev *a, const struct eventq_ev *b)
{
	return a->t < b->t || (a->t == b->t && a->key < b->key);
}

/** Add an event. Returns 0 or -ENOMEM (the queue is unchanged). */
static inline int
eventq_push(struct eventq *q, const struct eventq_ev *ev)
{
	size_t i;

	if (q->n == q->cap && eventq_grow(q) != 0)
		return -ENOMEM;
	for (i = q->n++; i > 0; i = (i - 1) / 2) {
		struct eventq_ev *up = &q->heap[(i - 1) / 2];

		if (!eventq_before(ev, up))
			break;
		q->heap[i] = *up;
	}
	q->heap[i] = *ev;
	return 0;
}

/** Take the earliest event off a queue that is not empty. */
static inline struct eventq_ev
eventq_pop(struct eventq *q)
{
	struct eventq_ev top = q->heap[0], last = q->heap[--q->n];
	size_t i = 0, n = q->n;

	for (;;) {
		size_t c = 2 * i + 1;

		if (c >= n)
			break;
		if (c + 1 < n && eventq_before(&q->heap[c + 1], &q->heap[c]))
			c++;
		if (!eventq_before(&q->heap[c], &last))
			break;
		q->heap[i] = q->heap[c];
		i = c;
	}
	if (n > 0)
		q->heap[i] = last;
	return top;
}

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
