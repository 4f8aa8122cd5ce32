/* SPDX-License-Identifier: BSD-3-Clause
 *
 * Fast path: the pacers' drain (docs/DATAPLANE.md, "Pacing"). Each iteration, the frames
 * waiting in the active pacers of every job whose time has come leave, sealed first on a
 * protected link; a pacer left empty leaves the active list. Frames enter a pacer in
 * pace.h (dp_pace_send()).
 *
 * Called by worker.c, once per iteration; calls sealing and TX staging (seal.h).
 *
 * Worker lcores only: no allocation, no locks, no syscalls, no logging.
 */
#include <rte_cycles.h>
#include <rte_mbuf.h>

#include "dp.h"
#include "fastpath/pace.h"
#include "fastpath/seal.h"

void
dp_pace_run(struct dp_lcore *lc, const struct dp_state *st)
{
	uint64_t now = 0;

	for (int e = 0; st != NULL && e < st->n_jobs; e++)
		for (int k = 0; k < st->jobs[e].n_epochs; k++) {
			struct dp_job_lcore *lj = &st->jobs[e].epochs[k]->lj[lc->idx];
			uint32_t na = atomic_load_explicit(&lj->n_active, memory_order_relaxed);

			for (uint32_t a = 0; a < na;) {
				struct dp_pacer *pc = &lj->pacers[lj->active[a]];

				if (now == 0)
					now = rte_rdtsc();
				while (pc->head != pc->tail && pc->next <= now) {
					struct rte_mbuf *m = pc->q[pc->head++ & pc->mask];

					pc->next += (uint64_t)(rte_pktmbuf_pkt_len(m) *
							       pc->tsc_per_byte);
					dp_wire_out(lc, st->jobs[e].epochs[k], pc->seal, pc->port,
						    m);
				}
				if (pc->head == pc->tail) { /* drained: out of the active list */
					pc->active = false;
					lj->active[a] = lj->active[--na];
				} else {
					a++;
				}
			}
			atomic_store_explicit(&lj->n_active, na, memory_order_relaxed);
		}
}
