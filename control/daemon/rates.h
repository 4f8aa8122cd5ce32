/* SPDX-License-Identifier: BSD-3-Clause
 *
 * Measured rates (docs/DEPLOYMENT.md, "Failures"; docs/CONTROL.md): from the gateways'
 * counters every heartbeat, what each live tree and each link direction carries, and the
 * capacities plans use when a link direction delivers less than the topology says.
 * daemon_link_sent() and daemon_link_tree() (daemon.h) are defined here too. On the
 * daemon's thread (daemon_internal.h). No DPDK.
 */
#ifndef GEOREDUCE_RATES_H
#define GEOREDUCE_RATES_H

#include "daemon_internal.h"

/**
 * Each job's trees: the mean rate over the link directions of the tree (each carries the
 * tree's rate when the tree runs as planned), from every gateway's counters of the live
 * epoch. For `status`.
 */
void tree_rates_update(struct dmn *m);

/** The bytes of first transmissions of one 'links' entry of a dataplane's stats. */
uint64_t daemon_first_tx_bytes(const json_t *lk);

/** Link l with nothing measured yet. */
void lrate_forget(struct dmn *m, int l);

/**
 * Each direction of each link: its rate over the last heartbeat. A direction that
 * carries less than DAEMON_RATE_SHORT of its planned rate while the sender's probes see a
 * standing queue (round trip above the smallest seen by more than DAEMON_RATE_QUEUE_MS
 * and half of it) in two thirds of the heartbeats of a window of the hysteresis'
 * short_ms and short_samples (hyst_short_step()) delivers less than the topology says:
 * plans use the mean rate it carried in the window's short heartbeats, for
 * DAEMON_RATE_HOLD_MS, then the topology's capacity
 * again (if it is still short, it is found again). Found short again at about the
 * capacity plans use already, it only holds longer.
 */
void rates_update(struct dmn *m);

#endif
