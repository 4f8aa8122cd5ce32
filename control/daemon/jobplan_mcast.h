/* SPDX-License-Identifier: BSD-3-Clause
 *
 * A selmcast job's epoch (docs/SELMCAST.md, docs/DEPLOYMENT.md): instead of trees, one
 * multicast stream per sending worker site, planned by the SELMCAST heuristic, and each
 * gateway's table of the streams through it. Called by jobplan_build() (jobplan.h).
 *
 * Control side, single-threaded like jobplan.h. No DPDK.
 */
#ifndef GEOREDUCE_JOBPLAN_MCAST_H
#define GEOREDUCE_JOBPLAN_MCAST_H

#include <stddef.h>

#include "deploy.h"
#include "jobplan.h"
#include "table.h"

/**
 * A selmcast job (docs/DEPLOYMENT.md): the receivers of one round by the SELMCAST heuristic
 * from fresh staleness, over the worker sites of the planning topology (ingress and egress
 * from their links, each site's update = the tensor bytes with headers, times its workers);
 * for each sender site the union of the latency-shortest paths to its receivers as a
 * distribution tree (one copy per tree edge); each stream paced at update / T, T the
 * selection's completion time, scaled down by the largest factor that keeps the sum of
 * the streams on every link direction within its capacity. The plan has no trees; its
 * "multicast" section holds the selection.
 */
int jobplan_selmcast_streams(struct jobplan *jp, const struct deploy_job *j, double wire, char *err,
			     size_t errlen);

/**
 * Check a selmcast job's streams against the planning topology: every stream's tree joins
 * each of its nodes to its source over links and holds every receiver, and on every link
 * direction the streams' rates add up to at most its capacity. 0, or -EINVAL with a
 * one-line reason ("link a -> b: streams load ... over its capacity ..."), or -ENOMEM.
 */
int
jobplan_streams_validate(const struct topo *t, const struct jobplan *jp, char *err, size_t errlen);

/** The table of gateway g at planning node i of a selmcast job: its part in every stream
 * through it. A site's streams go through its first gateway that is up; the others get
 * none. */
struct table *
jobplan_stream_table(const struct jobplan *jp, const struct deploy *d, const struct deploy_job *j,
		     int i, const struct deploy_gateway *g, char *err, size_t errlen);

#endif
