/* SPDX-License-Identifier: BSD-3-Clause
 *
 * Fast path: a per-lcore stash of mbufs taken from a mempool ahead of use and prefetched
 * for writing, for the header mbuf of every RESULT copy (one copy per packet in at a root)
 * and the indirect mbuf of the payload each fan-out shares. Worker lcores only.
 *
 * Why: an mbuf that comes back to the pool was last written by whichever core freed it
 * (a NIC's TX completion on this lcore, but another lcore or process over net_ring and
 * memif) and resetting it in rte_pktmbuf_alloc() waits for those cache lines: a third of
 * a 1 KiB packet's cost in georeduce-bench's ring mode. Taken from the pool
 * DP_STASH_REFILL at a time, each is prefetched DP_STASH_AHEAD allocations before it is
 * handed out (about one chunk's fan-out: long enough for a line to come from another
 * core, short enough for it to stay in L1): the ring-mode rate at 1 KiB x 4 rose by a
 * fifth.
 */
#ifndef GEOREDUCE_DP_MSTASH_H
#define GEOREDUCE_DP_MSTASH_H

#include <rte_branch_prediction.h>
#include <rte_mbuf.h>
#include <rte_mempool.h>

#include "dp.h"

/* How many allocations before its turn an mbuf is prefetched. */
#define DP_STASH_AHEAD 12

/** Take one mbuf from s (refilled from its pool when low); NULL when the pool is empty. */
static inline struct rte_mbuf *
dp_mstash_alloc(struct dp_mstash *s)
{
	if (unlikely(s->tail - s->head <= DP_STASH_REFILL)) {
		void *got[DP_STASH_REFILL];

		/* All or nothing (rte_mempool_get_bulk); the stash keeps what it has. */
		if (rte_mempool_get_bulk(s->pool, got, DP_STASH_REFILL) == 0) {
			for (unsigned int i = 0; i < DP_STASH_REFILL; i++) {
				s->m[s->tail++ & (DP_STASH_SIZE - 1)] = got[i];
			}
		} else if (s->tail == s->head) {
			return NULL;
		}
	}
	struct rte_mbuf *m = s->m[s->head++ & (DP_STASH_SIZE - 1)];

	/* Both lines rte_pktmbuf_reset() writes, and the first of the data room, where the
	 * headers go, of the mbuf handed out DP_STASH_AHEAD allocations later (only one the
	 * stash holds: a prefetch for writing would pull a line from its user). */
	if (likely(s->tail - s->head > DP_STASH_AHEAD)) {
		struct rte_mbuf *a = s->m[(s->head + DP_STASH_AHEAD) & (DP_STASH_SIZE - 1)];

		__builtin_prefetch(a, 1, 3);
		__builtin_prefetch((uint8_t *)a + RTE_CACHE_LINE_SIZE, 1, 3);
		if (s->data_off != 0)
			__builtin_prefetch((uint8_t *)a + s->data_off, 1, 3);
	}

	rte_pktmbuf_reset(m);
	return m;
}

#endif
