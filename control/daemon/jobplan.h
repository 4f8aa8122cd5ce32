/* SPDX-License-Identifier: BSD-3-Clause
 *
 * Planning one job of a deployment for one epoch: the planning topology (the deployment's
 * topology without the sites whose gateways are all down, each site's worker count being
 * the job's workers there and its gateways those that are up), the plan of the job's
 * algorithm (mTree, the ring run as chain trees, the single tree, CREW's stars, selective
 * multicast streams or BlueConnect's WAN stage), its predicted AllReduce time, and the
 * compiled georeduce-table/1 of every gateway that is up: where a site has several, each
 * holds a shard of the tensor (docs/TABLES.md, "Several gateways per site").
 *
 * Control side, single-threaded: the planner library keeps no global state, so jobs are
 * planned one after another. No DPDK.
 */
#ifndef GEOREDUCE_JOBPLAN_H
#define GEOREDUCE_JOBPLAN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "deploy.h"
#include "jobplan_trees.h" /* jobplan_ring_chains() */
#include "plan.h"
#include "table.h"
#include "topo.h"

/** Longest message jobplan_build() writes into its error buffer. */
#define JOBPLAN_ERR_MAX 768

/** A selmcast job's multicast stream: one per sending worker site (planning nodes). */
struct jobplan_stream {
	int source;       /* the sending site */
	int *parent;      /* distribution tree: PLAN_ROOT at the source, the
					 * upstream node, or PLAN_ABSENT off the tree */
	bool *receiver;   /* receiver[v]: v's workers get the stream */
	double rate_gbps; /* paced on every tree edge */
};

/** One job planned for one epoch. */
struct jobplan {
	const struct deploy_job *job; /* borrowed from the deployment */
	uint32_t epoch;
	struct topo *topo;              /* the planning topology */
	int *node_of;                   /* planning node -> deployment node (topo->n_nodes) */
	struct plan *plan;              /* over topo; plan->allreduce_seconds predicted */
	int n_nodes;                    /* the deployment's node count */
	int n_gateways;                 /* the deployment's gateway count */
	struct table **tables;          /* by deployment gateway (with one gateway per site,
					 * by node); NULL where the gateway is down */
	int *site_table;                /* by deployment node: the gateway whose table the
					 * site's workers read (the first that is up and carries
					 * chunks, or else the first that is up); -1: none */
	int n_tables;                   /* gateways in the epoch */
	bool *gw_up;                    /* by deployment gateway: in the epoch */
	int n_workers;                  /* the job's workers at gateways that are up */
	int n_streams;                  /* selmcast: one per worker site; 0 otherwise */
	struct jobplan_stream *streams; /* the plan has no trees then, and a "multicast"
					 * section (docs/SELMCAST.md) */
	double bound_gbps;              /* the packing bound of the planning topology (the
					 * most any tree plan can reach there); < 0: none (one
					 * worker site, multicast) */
	char note[256];                 /* blueconnect: what the planner would choose beyond
					 * what the gateways run, for the summary; "" */
	unsigned int revision;          /* the lowest protocol revision of the gateways in the
					 * epoch, 0 taken as REVISION_OLDEST (lib/revision.h) */
	int revision_gw;                /* a gateway of that revision; -1: none up */
	uint32_t chunk_bytes;           /* payload bytes per chunk in its tables: the job's,
					 * at most what that revision takes (jobplan_chunk_bytes()) */
	uint32_t membership;            /* the workers in its tables, as `prepare` names them
					 * (jobplan_membership()) */
};

/**
 * The `membership` of an epoch whose tables hold workers ws[0..n) (docs/CONTROL.md,
 * `prepare`): FNV-1a (32 bits) over each worker's id, IPv4 address and port, big-endian,
 * by id ascending; 1 where that comes to 0. The same workers give the same number
 * whatever the plan; 0 only when out of memory.
 */
uint32_t jobplan_membership(const struct table_worker *ws, int n);

/** What the control process knows of a topology link beyond the topology file. */
struct jobplan_link {
	bool up;                 /* usable by plans */
	double gbps_ab, gbps_ba; /* measured capacity, used where below the topology's;
					 * 0: the topology's */
};

/**
 * Plan job d->jobs[ji] at epoch `epoch` over the gateways whose up[g] is true (deployment
 * gateway index; NULL: all) and the links whose links[l].up is true (topology link index;
 * NULL: all, at the topology's capacities), then compile the table of every gateway that
 * is up (gateways in no tree get an empty table). A site is in the plan while one of its
 * gateways is up; its shards are cut among those that are. Workers at sites whose
 * gateways are all down leave the job.
 *
 * @param out  Receives the plan (free with jobplan_free()).
 * @param err  Receives one line on failure.
 * @return     0, -ENOENT (no worker of the job is at a node that is up, or the algorithm
 *             found no plan; err says why), -EINVAL (the planning topology or the plan is
 *             rejected, e.g. worker sites not connected), -E2BIG (a table limit), -ENOMEM,
 *             -EIO (solver failure).
 */
int jobplan_build(const struct deploy *d, int ji, const bool *up, const struct jobplan_link *links,
		  uint32_t epoch, struct jobplan **out, char *err, size_t errlen);

/**
 * jobplan_build() without compiling the tables (every table NULL, epoch 0): the planning
 * topology and the plan only, to see which links the job would use and at what rates.
 */
int
jobplan_plan_only(const struct deploy *d, int ji, const bool *up, const struct jobplan_link *links,
		  struct jobplan **out, char *err, size_t errlen);

/**
 * The payload bytes per chunk of job j's tables when the oldest of its gateways implements
 * protocol revision `revision` (effective: 0 taken as REVISION_OLDEST): the job's
 * chunk_bytes, or below 1.14 at most 8192 bytes (in whole elements or MX blocks, and of
 * its lan_dtype too), as such a gateway and its workers take (docs/PROTOCOL.md 12.1).
 */
uint32_t jobplan_chunk_bytes(const struct deploy_job *j, unsigned int revision);

/** Free a job plan and its tables. NULL is a no-op. */
void jobplan_free(struct jobplan *jp);

/**
 * One line describing the plan: algorithm, trees, aggregate rate, predicted time, and
 * per tree its root, rate and share ("mtree: 3 trees, 14.2 Gbit/s, predicted 0.61 s for
 * 64.00 MiB; tree 0 root a 6.0 Gbit/s share 0.42, ..."). Returns buf.
 */
char *jobplan_summary(const struct jobplan *jp, char *buf, size_t len);

/**
 * Write every table of the plan as DIR/job-J-GATEWAY.json (GATEWAY the gateway's name: the
 * topology node id for a site with one gateway) and the plan as DIR/job-J-plan.json; for a
 * site with several gateways also DIR/job-J-NODE.json, the table its workers read
 * (site_table). Returns 0 or a negative errno with err filled.
 */
int jobplan_write(const struct jobplan *jp, const struct deploy *d, const char *dir, char *err,
		  size_t errlen);

#endif
