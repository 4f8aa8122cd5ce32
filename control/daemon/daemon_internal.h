/* SPDX-License-Identifier: BSD-3-Clause
 *
 * The state of the georeduce-control daemon (daemon.h), shared by the files of its one
 * thread: what it knows of every gateway, job and link direction (struct dmn), and what
 * every part of it does with that state (daemon.c): mark the jobs for a new epoch. The
 * parts are health.c (heartbeats, gateways and links up or down), rates.c (measured
 * rates and capacities), epochs.c (planning and installing epochs), api.c (its own
 * control socket) and metrics.c (Prometheus); daemon.c sets up, runs the poll loop and
 * tears down. No DPDK.
 */
#ifndef GEOREDUCE_DAEMON_INTERNAL_H
#define GEOREDUCE_DAEMON_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>

#include <jansson.h>

#include "ctlmsg.h"
#include "ctlsrv.h"
#include "ctltls.h"
#include "daemon.h"
#include "hyst.h"
#include "install.h"
#include "jobplan.h"
#include "linkwatch.h"

#define PROG "georeduce-control"
#define REASON_MAX 160

enum gw_state {
	GW_UNKNOWN = 0, /* not heard from since start, socket present */
	GW_UP,
	GW_DOWN,
};

/* Why a job is planned again (the label "cause" of georeduce_control_replans_total). */
enum cause {
	CAUSE_START,
	CAUSE_GATEWAY_DOWN,
	CAUSE_GATEWAY_UP,
	CAUSE_GATEWAY_NO_ANSWER,
	CAUSE_LINK_DOWN,
	CAUSE_LINK_UP,
	CAUSE_LINK_SHORT,
	CAUSE_LINK_RESTORED,
	CAUSE_REJECTED,
	CAUSE_ACTIVATION,
	CAUSE_REQUESTED,
	CAUSE_SHARES,     /* its shares of the links moved (shares.h) */
	CAUSE_MEMBERSHIP, /* workers joined or left an elastic job (elastic.h) */
	CAUSE_COUNT,
};

/** Is a re-plan for this cause a failure's, planned at once within the failure budget
 * (hyst_gate()), rather than a measurement's or a return's, which waits? */
bool cause_prompt(enum cause c);

/** May a re-plan for this cause that compiles to the live epoch's tables keep that epoch
 * (no new one)? Not at start, on request, after a failed activation or a rejection (the
 * gateways need the install), nor for a gateway back (it may have lost its tables). */
bool cause_may_keep(enum cause c);

/** The cause's name in the metrics, `status` and the log. */
extern const char *const cause_names[CAUSE_COUNT];

/* One gateway as the daemon sees it. */
struct gw {
	struct install_gw conn;
	enum gw_state state;
	int missed;        /* heartbeats missed in a row */
	bool fresh;        /* answered this heartbeat's ping and stats */
	int64_t last_ok;   /* monotonic ms of the last answered heartbeat; -1: never */
	double rtt_ms;     /* of the last ping */
	int64_t sample_at; /* monotonic ms of the last stats sample; -1: none */
	uint64_t rx_bytes, tx_bytes, chunks;
	double rx_gbps, tx_gbps; /* between the last two samples; < 0: not known yet */
	char error[CTL_ERR_MAX]; /* the last failure */
	bool peers_sent;         /* its dataplane probes its topology neighbours */
	json_t *peers;           /* the "peers" of its last stats (owned), or NULL */
	json_t *jobs;            /* the "jobs" of its last stats (owned), or NULL */
	json_t **live;           /* per job: the live table it reported when it came up,
				  * its `dump` item ("table", "sealed": its protected links
				  * without keys) (owned), or NULL */
	int64_t peers_age_ms;    /* how long it has probed them */
	uint64_t dropped;        /* frames its lcores dropped, all reasons */
	double drops_per_s;      /* between the last two samples; < 0: not known yet */
	json_t *drops;           /* its drops by reason, summed over lcores (owned), or NULL */
};

/* One tree's traffic, summed over the gateways' link counters (tree_rates_update()). */
struct trate {
	uint64_t bytes, now_bytes; /* first transmissions at the last sample, at this one */
	int links, now_links;      /* link directions that reported them */
	int copies;                /* its copies in the tables (one per segment of the sites'
				    * shards that it carries; 1 with one gateway per site) */
	double gbps;               /* mean rate per link direction between the two; < 0 */
};

/* A worker's long poll: answered when its job's epoch passes `after`, or at `deadline`. */
struct waiter {
	struct ctlsrv_ref ref;
	uint32_t id;   /* the request's id */
	int job;       /* index in the deployment; -1: deleted (jobs.c), to be answered so */
	uint32_t gone; /* with job -1: the deleted job's id */
	uint32_t left; /* with job -1 and not 0: the worker that left the job (elastic.c) */
	int worker;    /* index in the job's workers */
	uint32_t after;
	int64_t deadline; /* monotonic ms */
};

/* A worker that joined an elastic job through the API (elastic.c). */
struct member {
	uint16_t id;  /* its worker id, in the job's "workers" */
	bool in;      /* an epoch with it went live (its `worker` answers carry a table) */
	int64_t seen; /* monotonic ms of its last request */
};

/* One job as the daemon sees it. */
struct job {
	uint32_t live_epoch;             /* 0: none installed by this daemon */
	uint32_t next_epoch;             /* the next epoch to try (never reused) */
	struct jobplan *live;            /* the plan of live_epoch */
	int64_t live_since;              /* monotonic ms */
	bool dirty;                      /* plan and install a new epoch */
	bool adopt_tried;                /* looked for a live epoch to take over (at start) */
	char reason[REASON_MAX];         /* why, for the log */
	enum cause cause;                /* why, for the metrics */
	uint64_t replans[CAUSE_COUNT];   /* epochs planned, by cause (metrics) */
	uint64_t held[CAUSE_COUNT];      /* re-plans held back by the hysteresis or budget */
	uint64_t unchanged[CAUSE_COUNT]; /* plans that came out as the live epoch's tables:
					  * no new epoch */
	struct hyst_job hy;              /* its recent re-plans, for the budget */
	bool holding;                    /* dirty, and held back (logged once) */
	int64_t due;                     /* when holding: when it may be planned */
	uint64_t plan_failures;          /* plans that gave no epoch (metrics) */
	uint64_t epochs;                 /* epochs that went live or were taken over (metrics) */
	int retry_in;                    /* heartbeats until a retry after a rejection; 0: none */
	int retry_after;                 /* the next backoff: doubles after each rejection */
	char error[JOBPLAN_ERR_MAX];     /* the last failure, "" if the last attempt worked */
	/* Measured tree rates (tree_rates_update()), for the live epoch. */
	uint32_t rates_epoch; /* the epoch they are for; 0: none */
	int n_rates;          /* trees */
	struct trate *rates;  /* n_rates */
	int64_t rates_at;     /* monotonic ms of the last sample; -1: none */
	/* Its shares of the link directions (shares.h), 2 per topology link (a->b, b->a), in
	 * Gbit/s; NULL until first computed. */
	double *share;         /* now */
	double *planned_share; /* those its latest plan was made with */
	/* Its traffic (shares_activity()): a job runs from the first sign of it in the
	 * gateways' stats until it has been idle for --idle-ms, or longer after it came back
	 * soon (idle); only the jobs that run share the links. */
	bool running;
	int64_t active_at; /* monotonic ms of the last sign (shares_traffic()); 0: none yet */
	struct hyst_idle idle;
	/* A job created through the API (jobs.c): its job object as created or last updated,
	 * id included (owned); NULL for a job of the deployment file. */
	json_t *spec;
	char tenant[DEPLOY_TENANT_NAME_MAX + 1]; /* its tenant; "" for none */
	/* An elastic job (elastic.c): the workers that joined it and are still in it, and
	 * the changes to its membership not planned yet. */
	struct member *members;
	int n_members, members_cap;
	struct hyst_batch batch;
};

/* A deleted job's `remove` that a gateway has not acknowledged yet (jobs.c). */
struct removal {
	int gw; /* deployment gateway index */
	uint32_t job;
};

/*
 * One direction of a topology link as measured (rates_update()): what the sender's trees
 * and multicast streams handed to it, the plan's rate, the probe round trip, and whether
 * it carries less than planned behind a standing queue (then plans use what it delivers,
 * for a while).
 */
struct lrate {
	uint64_t bytes;         /* first transmissions since the epochs in `key` went live */
	uint64_t key;           /* the sender's live (job, epoch) pairs those bytes count */
	int64_t at;             /* monotonic ms of that sample; -1: none */
	double gbps;            /* between the last two samples; < 0: not known */
	double planned_gbps;    /* the sum of the rates of the trees and streams on it */
	double rtt_ms;          /* the sender's last probe round trip to the other end; < 0 */
	double base_rtt_ms;     /* the smallest seen since the link came up; 0: none */
	struct hyst_short sh;   /* the window of samples judged short or not (hyst.h) */
	double sh_gbit, sh_ms;  /* what the window's short samples carried, over how long */
	double sh_queue_ms;     /* the sum of their queues */
	double measured_gbps;   /* the capacity plans use now; 0: the topology's */
	int64_t measured_until; /* monotonic ms when plans go back to the topology's */
	double lower_said;      /* the measured capacity it was last said to carry less than */
	struct lw_link watch;   /* (a->b entry) the link's quiet or heard streak (linkwatch.h) */
	struct lw_beat beat;    /* (a->b entry) what this heartbeat found of the link */
};

struct dmn {
	struct deploy *d; /* jobs.c adds and deletes the jobs of the API */
	const struct daemon_opts *o;
	struct gw *gws;            /* by deployment gateway (with one per site, by node) */
	struct jobplan_link *link; /* by topology link: usable, measured capacity */
	struct lrate *lr;          /* by topology link, a->b then b->a */
	struct job *jobs;
	int sfd;
	struct ctlsrv *srv;                         /* its own API: the unix socket and TLS */
	struct ctltls_ctx *tls_client, *tls_server; /* from the deployment's "tls" */
	struct waiter *waiters;                     /* workers' long polls, DAEMON_WAITERS_MAX */
	int n_waiters;
	int64_t started;
	bool stop;
	struct promsrv *msrv; /* --metrics, or NULL */
	int wfd;              /* with --metrics: epoll of sfd and the metrics server */
	uint64_t heartbeats;  /* rounds of heartbeats (metrics) */
	int64_t due;          /* monotonic ms when this round of heartbeats was due; 0: first */
	int64_t late_ms;      /* the daemon's lateness that link checks allow for (lw_late()) */
	bool starved_logged;  /* the last heartbeat found every link quiet (lw_host_starved()) */
	bool shares_stale;    /* the jobs' shares of the links must be computed again: set
			       * with every job marked by mark_all_dirty(), and wherever a job
			       * comes, goes or changes its weight (shares_update()) */
	/* jobs.c: the ids of the jobs deleted last (a ring), for their workers' errors, and
	 * the removals not acknowledged yet, retried every heartbeat */
	uint32_t deleted[DAEMON_DELETED_MAX];
	int n_deleted;
	struct removal removals[DAEMON_REMOVALS_MAX];
	int n_removals;
	struct elect *el; /* with --etcd: the replicas' election (elect.h); else NULL */
};

/* Topology node v's id. */
static inline const char *
node_id(const struct dmn *m, int v)
{
	return m->d->topo->nodes[v].id;
}

/* Gateway g's name: its node's id where the node has one gateway. */
static inline const char *
gw_name(const struct dmn *m, int g)
{
	return m->d->gateways[g].name;
}

/* The first and the end of the gateways of node v. */
#define NODE_GWS(m, v, g) \
	for (int g = (m)->d->node_gw[v]; g < (m)->d->node_gw[v] + (m)->d->node_ngw[v]; g++)

/** Mark every job for a new epoch, with why (for the log) and its cause (for the
 * metrics); the jobs' shares of the links are computed again before they are planned. */
void mark_all_dirty(struct dmn *m, enum cause cause, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

#endif
