/* SPDX-License-Identifier: BSD-3-Clause
 *
 * The daemon's view of the gateways and links (docs/DEPLOYMENT.md, "Failures"): every
 * heartbeat pings each gateway and reads its stats; a gateway that does not answer is
 * down, one that answers again is up, and a link whose ends stop hearing each other's
 * probes is down until they hear each other again. Each change marks the jobs for a new
 * epoch. On the daemon's thread (daemon_internal.h). No DPDK.
 */
#ifndef GEOREDUCE_HEALTH_H
#define GEOREDUCE_HEALTH_H

#include "daemon_internal.h"

/** Mark gateway v down (logged with why) and every job for a new epoch without it. */
void gateway_down(struct dmn *m, int v, const char *why);

/** Raise job i's next epoch above what gateway v holds of it (live, draining or staged)
 * and keep its live table there for adopt(), from the gateway's `dump`. */
void gateway_sync_job(struct dmn *m, int v, int i);

/** The probe round trip from node v to node u: of the first pair of their gateways (v's
 * up) that has one; -1 if none has. The pairs share the link and its queue. */
double probe_rtt_ms(const struct dmn *m, int v, int u);

/** Is some gateway of node v up? */
bool node_up(const struct dmn *m, int v);

/**
 * Links (linkwatch.h): down after LW_CONFIRM_BEATS heartbeats in a row in which an end
 * that had heard from the other (both gateways answering that heartbeat) has not for
 * --fail-after heartbeats plus twice the last probe round trip between them plus the
 * daemon's lateness and twice the gateways' ping, and has sent it at least --fail-after
 * PROBEs meanwhile; up again after --fail-after heartbeats in a row of both hearing each
 * other. A heartbeat that a gateway missed neither counts nor breaks a streak, nor does one
 * that finds every link quiet at once (lw_host_starved(): the host, not the WAN). Plans change
 * with them. A link whose ends never heard each other keeps its state: silence from the
 * start is no evidence of a failure (the path may not carry probes, as between test ports).
 */
void links_update(struct dmn *m);

/** One round of heartbeats: ping every gateway and read its stats; mark it up (reading its
 * epochs and sending its probe peers) or down. */
void heartbeat_all(struct dmn *m);

#endif
