/* SPDX-License-Identifier: BSD-3-Clause
 *
 * The simulators' event queue (eventq.h): a binary min-heap ordered by (time, key).
 * Runs on the thread of the simulation that owns the queue; no locks.
 */
#include <errno.h>
#include <stdlib.h>

#include "eventq.h"

static bool
eventq_before(const struct eventq_ev *a, const struct eventq_ev *b)
{
	return a->t < b->t || (a->t == b->t && a->key < b->key);
}

void
eventq_fini(struct eventq *q)
{
	free(q->heap);
	q->heap = NULL;
	q->n = q->cap = 0;
}

int
eventq_push(struct eventq *q, const struct eventq_ev *ev)
{
	size_t i;

	if (q->n == q->cap) {
		size_t cap = q->cap > 0 ? q->cap * 2 : 256;
		struct eventq_ev *h;

		if (cap > SIZE_MAX / sizeof(*h))
			return -ENOMEM;
		h = realloc(q->heap, sizeof(*h) * cap);
		if (h == NULL)
			return -ENOMEM;
		q->heap = h;
		q->cap = cap;
	}
	for (i = q->n++; i > 0; i = (i - 1) / 2) {
		struct eventq_ev *up = &q->heap[(i - 1) / 2];

		if (!eventq_before(ev, up))
			break;
		q->heap[i] = *up;
	}
	q->heap[i] = *ev;
	return 0;
}

struct eventq_ev
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
