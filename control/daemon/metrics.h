/* SPDX-License-Identifier: BSD-3-Clause
 *
 * The daemon's Prometheus metrics (docs/METRICS.md) at --metrics: jobs, plans, gateways
 * and links, rendered on the daemon's thread when a scrape comes (promsrv.h). No DPDK.
 */
#ifndef GEOREDUCE_METRICS_H
#define GEOREDUCE_METRICS_H

#include "daemon_internal.h"

/** --metrics: the endpoint, and one descriptor for poll() that is readable on a signal or
 * when the endpoint has work. */
int metrics_setup(struct dmn *m);

#endif
