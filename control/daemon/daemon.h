/* SPDX-License-Identifier: BSD-3-Clause
 *
 * The georeduce-control daemon (docs/DEPLOYMENT.md, docs/CONTROL.md): one thread that
 *  - heartbeats every gateway (`ping`, then `stats`) every heartbeat interval; a gateway
 *    whose socket is gone, or that misses fail_after heartbeats in a row, is down; one that
 *    answers again is up;
 *  - plans every job over the gateways that are up, compiles their tables and installs a
 *    new epoch in two phases (install.h) at start and whenever the set of gateways that are
 *    up changes;
 *  - answers `status`, `replan`, `ping`, `version` and the workers' `worker` (their
 *    table, and a long poll for the next epoch) on its own control socket and, with the
 *    deployment's "tls", over TLS (lib/ctlsrv.h; roles from the client certificates);
 *  - reaches gateways at tls:// endpoints with the deployment's certificate, and at
 *    start takes over the epochs the gateways run when they are what it would plan;
 *  - logs one line per event on stderr, with a timestamp;
 *  - stops on SIGINT or SIGTERM, leaving every dataplane on its live epoch.
 * No DPDK.
 */
#ifndef GEOREDUCE_DAEMON_H
#define GEOREDUCE_DAEMON_H

#include <stdbool.h>
#include <stdint.h>

#include <jansson.h>

#include "deploy.h"
#include "hyst.h"

#define DAEMON_SOCKET_DEFAULT "/run/georeduce/control.sock"
#define DAEMON_HEARTBEAT_MS_DEFAULT 1000
#define DAEMON_FAIL_AFTER_DEFAULT 3
#define DAEMON_TIMEOUT_MS_DEFAULT 2000
/** After a gateway rejected a table, the job is tried again after this many heartbeats,
 * twice as many after each further rejection, up to DAEMON_RETRY_MAX_HEARTBEATS. */
#define DAEMON_RETRY_HEARTBEATS 10
#define DAEMON_RETRY_MAX_HEARTBEATS 640
/** A link direction carrying less than this share of its planned rate behind a standing
 * queue (the probes' round trip above its smallest by more than DAEMON_RATE_QUEUE_MS and
 * by half) in two thirds of a window of the hysteresis' short_ms and short_samples
 * heartbeats (hyst.h) is planned at what it delivered, for DAEMON_RATE_HOLD_MS
 * (docs/DEPLOYMENT.md). */
#define DAEMON_RATE_SHORT 0.8
#define DAEMON_RATE_QUEUE_MS 20.0
#define DAEMON_RATE_HOLD_MS 60000
/** A link direction carrying less than this share of what it should is idle (its jobs are
 * not sending), not short: with nothing to carry the probes' round trip can still rise,
 * with the gateways' CPU load alone, and planning at such a rate would compound. */
#define DAEMON_RATE_IDLE 0.05
/** Plans use no less than this share of a link direction's topology capacity however
 * little it was found to carry: a link that is up and carries less is either down (the
 * probes tell) or has gateways starved of CPU for a while, and a plan at what such a
 * moment carried would be found short again, and lower, heartbeat after heartbeat. */
#define DAEMON_RATE_FLOOR 0.1
/** A measured capacity within this share of the one plans use changes no plan. */
#define DAEMON_RATE_SAME 0.2
/** Workers connected at once (their long polls among them). */
#define DAEMON_WAITERS_MAX 1024
/** The longest a worker's long poll may wait (its "wait_ms"). */
#define DAEMON_WAIT_MS_MAX 60000
/** Deleted jobs whose workers are told so (the last ones), and removals from gateways
 * that did not answer, kept until they do. */
#define DAEMON_DELETED_MAX 64
#define DAEMON_REMOVALS_MAX 1024
/** The file in the state directory that holds the jobs created through the API. */
#define DAEMON_STATE_FILE "jobs.json"
#define DAEMON_STATE_FORMAT "georeduce-control-jobs/1"
/** Replicas on etcd (elect.h): the keys' prefix and the leader's lease. */
#define ELECT_PREFIX_DEFAULT "/georeduce"
#define ELECT_LEASE_MS_DEFAULT 2000

struct daemon_opts {
	const char *socket;    /* the daemon's own control socket */
	const char *listen;    /* its API over TLS, "HOST:PORT"; NULL: the deployment's */
	const char *metrics;   /* Prometheus metrics at http://ADDR:PORT/metrics; NULL: off */
	int heartbeat_ms;      /* heartbeat interval, >= 10 */
	int fail_after;        /* missed heartbeats in a row that fail a gateway, >= 1 */
	int timeout_ms;        /* how long one call to a dataplane may take */
	const char *out;       /* if not NULL: write every live epoch's plan and tables
				  * there (jobplan_write()), for workers that follow them */
	struct hyst_cfg hyst;  /* re-planning hysteresis and budget */
	const char *state_dir; /* where the API's jobs are kept (DAEMON_STATE_FILE); NULL:
				* in memory only */
	int batch_ms;          /* an elastic job's joins and leaves within this make one epoch */
	int member_timeout_ms; /* a joined worker not heard from for this long is removed */
	int idle_ms;           /* a job without traffic for this long no longer shares links */
	/* Replicas on etcd (elect.h); etcd NULL: one control process, as without. */
	const char *etcd;        /* "http[s]://HOST:PORT[,...]" */
	const char *etcd_prefix; /* the keys' prefix; NULL: ELECT_PREFIX_DEFAULT */
	int lease_ms;            /* the leader's lease; 0: ELECT_LEASE_MS_DEFAULT */
	const char *name;        /* this replica's name; NULL: the host name */
	const char *etcd_ca, *etcd_cert, *etcd_key; /* https to etcd, mutual TLS */
};

/**
 * Run the daemon on deployment d (to which it adds, and from which it deletes, the jobs of
 * its API and of its state directory) until SIGINT or SIGTERM (blocked in the calling thread and
 * received through a signalfd). Caller: main, once.
 *
 * @return  0 after a clean stop, -ESTALE when it stopped because it lost its leadership
 *          (elect.h: its caller starts it again, as a follower), or a negative errno if it
 *          could not start (its socket is in use, ...), after logging why.
 */
int daemon_run(struct deploy *d, const struct daemon_opts *o);

/**
 * What a dataplane's live epochs handed to its link towards gateway `peer`, from the
 * `jobs` array of its `stats` (docs/CONTROL.md): the bytes of first transmissions of the
 * trees and streams on that link into *bytes, the sum of their planned rates into
 * *planned, and into *key a key of the live (job, epoch) pairs (the counters start again
 * with each epoch: a changed key means the bytes are not comparable). Caller: the daemon's
 * thread (and tests).
 *
 * @return  false if no live tree or stream uses that link.
 */
bool daemon_link_sent(const json_t *jobs, uint16_t peer, uint64_t *bytes, double *planned,
		      uint64_t *key);

/**
 * The tree of one entry of a job's `links` in a dataplane's `stats`.
 *
 * @return  The tree id; -1 for an entry of a stream (which has "stream" instead of
 *          "tree") or one without a valid tree id.
 */
int daemon_link_tree(const json_t *lk);

/** Log one line on stderr: "YYYY-MM-DDTHH:MM:SS.mmmZ georeduce-control: MESSAGE". */
void control_log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif
