/* SPDX-License-Identifier: BSD-3-Clause
 *
 * Jobs share the WAN by weight (docs/CONTROL.md, "Jobs share the WAN by weight"): every
 * link direction's capacity split among the jobs by their weights and by what each would
 * use of it, each job planned over its shares; the shares in `status` and the metrics. The
 * split itself (shares_split()) is plain arithmetic; the rest runs on the daemon's thread
 * (daemon_internal.h). No DPDK.
 */
#ifndef GEOREDUCE_SHARES_H
#define GEOREDUCE_SHARES_H

#include <jansson.h>

#include "daemon_internal.h"
#include "jobplan.h"
#include "topo.h"

/** A share that moved by more than this fraction of the link direction's capacity
 * re-plans the job (smaller moves keep its epoch). */
#define SHARES_SAME 0.01

/**
 * Split one link direction's capacity among n jobs: weighted max-min fairness
 * (water-filling) among the jobs whose demand[i] > 0, each getting
 * min(demand[i], weight[i] * L) with L the level at which the shares add up to cap (or
 * every demand met); what is left of cap then goes to all n jobs, users or not, in
 * proportion to their weights, on top of what they have. The shares add up to cap (to
 * rounding) whenever some job has weight. A demand above cap counts as cap.
 *
 * @param n       jobs, at most DEPLOY_JOBS_MAX (those beyond get nothing)
 * @param weight  n weights > 0
 * @param demand  n demands in Gbit/s; <= 0: the job does not use the link direction
 * @param share   receives the n shares in Gbit/s
 */
void shares_split(double cap, int n, const double *weight, const double *demand, double *share);

/**
 * What the plan jp loads each direction of the deployment topology t's links with, in
 * Gbit/s: load[2 l] from links[l].a to .b, load[2 l + 1] back. A tree loads both
 * directions of each of its edges with its rate (docs/PLANNER.md, "The capacity rule"), a
 * multicast stream the direction from the parent to the child.
 */
void shares_plan_loads(const struct jobplan *jp, const struct topo *t, double *load);

/**
 * Every job's shares of every link direction of deployment d, over the gateways whose
 * up[g] is true (NULL: all) and the links as given (NULL: all up at the topology's
 * capacities; else the capacity plans use where measured below): each job planned alone
 * gives its demands, shares_split() the shares. The jobs whose running[i] is true (NULL:
 * all) share among themselves; every other job gets the share it would have among them if
 * it ran too (so a job that runs alone, or that would, has the whole capacities, and no
 * demand is planned). share receives d->n_jobs rows of 2 * n_links (job i's a->b share of
 * link l at [i * 2 n_links + 2 l]). 0 or -ENOMEM.
 */
int shares_compute(const struct deploy *d, const bool *up, const struct jobplan_link *links,
		   const bool *running, double *share);

/**
 * A gateway's stats "jobs" before and after a heartbeat (before NULL: its first): the jobs
 * with chunks done since, or chunks in flight, in some epoch, have traffic at now
 * (monotonic ms); in a gateway's first stats, those with chunks in flight. On the daemon's
 * thread, from the heartbeat.
 */
void shares_traffic(struct dmn *m, const json_t *before, const json_t *after, int64_t now);

/** Job ji has traffic at now (workers joining it, for instance). */
void shares_touch(struct dmn *m, int ji, int64_t now);

/**
 * Which jobs run (docs/CONTROL.md, "Jobs share the WAN by weight"): a job runs from its
 * first traffic until none has been seen for --idle-ms (longer, hyst_idle_step(), for a
 * job back soon after going idle); a change marks the shares for
 * computing again (and is logged). Once a heartbeat, after the stats.
 */
void shares_activity(struct dmn *m, int64_t now);

/**
 * The links a job with the shares `share` (a row of shares_compute(); NULL: the whole
 * capacities) is planned over: each link that is up (links, NULL: all) where the job has
 * a share, its capacity in each direction the job's share. lk has n_links entries.
 */
void shares_job_links(const struct deploy *d, const struct jobplan_link *links, const double *share,
		      struct jobplan_link *lk);

/**
 * Compute every job's shares again if anything they depend on changed since
 * (m->shares_stale: the links, the gateways, the jobs or their weights): each job planned
 * alone over the links' capacities gives its demand on each link direction, and
 * shares_split() the shares. A job whose shares moved (SHARES_SAME) from those its last
 * plan was made with is marked for a new epoch (cause CAUSE_SHARES). With one job, its
 * shares are the capacities and nothing extra is planned.
 */
void shares_update(struct dmn *m);

/**
 * The links job ji is planned over: each link that is up and where the job has a share,
 * its capacity in each direction the job's share. lk has the topology's n_links entries.
 * Records the shares as those of the job's latest plan.
 */
void shares_links(struct dmn *m, int ji, struct jobplan_link *lk);

/** Free job ji's shares (the daemon's teardown). */
void shares_free(struct job *j);

/**
 * Job ji's shares for `status`: per link where the job has a share or its live plan a
 * load, {"link", "a", "b", "share_gbps": [a->b, b->a], "planned_gbps": [a->b, b->a],
 * "sent_bytes": [a->b, b->a], "retx_bytes": [a->b, b->a]}, the last two the first
 * transmissions and the retransmissions of the live epoch that the gateways of each end
 * handed to the link, from their last stats.
 */
json_t *shares_json(const struct dmn *m, int ji);

#endif
