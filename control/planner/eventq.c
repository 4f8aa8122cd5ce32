/* SPDX-License-Identifier: BSD-3-Clause
 *
 * The simulators' event queue (eventq.h): growing and freeing its heap; push and pop are
 * inline in the header. Runs on the thread of the simulation that owns the queue.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>

#include "eventq.h"

void
eventq_fini(struct eventq *q)
{
	free(q->heap);
	q->heap = NULL;
	q->n = q->cap = 0;
}

int
eventq_grow(struct eventq *q)
{
	size_t cap = q->cap > 0 ? q->cap * 2 : 256;
	struct eventq_ev *h;

	if (cap > SIZE_MAX / sizeof(*h))
		return -ENOMEM;
	h = realloc(q->heap, sizeof(*h) * cap);
	if (h == NULL)
		return -ENOMEM;
	q->heap = h;
	q->cap = cap;
	return 0;
}
