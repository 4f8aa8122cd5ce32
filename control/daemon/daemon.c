/* SPDX-License-Identifier: BSD-3-Clause
 *
 * The georeduce-control daemon (daemon.h): heartbeats, failure detection, re-planning,
 * two-phase epoch installs and the daemon's own control socket, in one thread around
 * poll().
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "clock.h"
#include "ctlmsg.h"
#include "ctlsrv.h"
#include "ctltls.h"
#include "daemon.h"
#include "install.h"
#include "jobplan.h"
#include "jsonutil.h"
#include "prom.h"
#include "promsrv.h"

#define PROG "georeduce-control"
#define REASON_MAX 160

enum gw_state {
	GW_UNKNOWN = 0,          /* not heard from since start, socket present */
	GW_UP,
	GW_DOWN,
};

static const char *const gw_state_names[] = { "unknown", "up", "down" };

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
	CAUSE_COUNT,
};

static const char *const cause_names[CAUSE_COUNT] = {
	[CAUSE_START] = "start",
	[CAUSE_GATEWAY_DOWN] = "gateway_down",
	[CAUSE_GATEWAY_UP] = "gateway_up",
	[CAUSE_GATEWAY_NO_ANSWER] = "gateway_no_answer",
	[CAUSE_LINK_DOWN] = "link_down",
	[CAUSE_LINK_UP] = "link_up",
	[CAUSE_LINK_SHORT] = "link_short",
	[CAUSE_LINK_RESTORED] = "link_capacity_restored",
	[CAUSE_REJECTED] = "retry_after_rejection",
	[CAUSE_ACTIVATION] = "activation_failed",
	[CAUSE_REQUESTED] = "requested",
};

/* One gateway as the daemon sees it. */
struct gw {
	struct install_gw conn;
	enum gw_state state;
	int missed;              /* heartbeats missed in a row */
	int64_t last_ok;         /* monotonic ms of the last answered heartbeat; -1: never */
	double rtt_ms;           /* of the last ping */
	int64_t sample_at;       /* monotonic ms of the last stats sample; -1: none */
	uint64_t rx_bytes, tx_bytes, chunks;
	double rx_gbps, tx_gbps; /* between the last two samples; < 0: not known yet */
	char error[CTL_ERR_MAX]; /* the last failure */
	bool peers_sent;         /* its dataplane probes its topology neighbours */
	json_t *peers;           /* the "peers" of its last stats (owned), or NULL */
	json_t *jobs;            /* the "jobs" of its last stats (owned), or NULL */
	json_t **live;           /* per job: the live table it reported when it came up
				  * (owned), or NULL */
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
	uint32_t id;             /* the request's id */
	int job;                 /* index in the deployment */
	int worker;              /* index in the job's workers */
	uint32_t after;
	int64_t deadline;        /* monotonic ms */
};

/* One job as the daemon sees it. */
struct job {
	uint32_t live_epoch;     /* 0: none installed by this daemon */
	uint32_t next_epoch;     /* the next epoch to try (never reused) */
	struct jobplan *live;    /* the plan of live_epoch */
	int64_t live_since;      /* monotonic ms */
	bool dirty;              /* plan and install a new epoch */
	bool adopt_tried;        /* looked for a live epoch to take over (at start) */
	char reason[REASON_MAX]; /* why, for the log */
	enum cause cause;        /* why, for the metrics */
	uint64_t replans[CAUSE_COUNT]; /* epochs planned, by cause (metrics) */
	uint64_t plan_failures;  /* plans that gave no epoch (metrics) */
	uint64_t epochs;         /* epochs that went live or were taken over (metrics) */
	int retry_in;            /* heartbeats until a retry after a rejection; 0: none */
	int retry_after;         /* the next backoff: doubles after each rejection */
	char error[JOBPLAN_ERR_MAX]; /* the last failure, "" if the last attempt worked */
	/* Measured tree rates (tree_rates_update()), for the live epoch. */
	uint32_t rates_epoch;    /* the epoch they are for; 0: none */
	int n_rates;             /* trees */
	struct trate *rates;     /* n_rates */
	int64_t rates_at;        /* monotonic ms of the last sample; -1: none */
};

/*
 * One direction of a topology link as measured (rates_update()): what the sender's trees
 * and multicast streams handed to it, the plan's rate, the probe round trip, and whether
 * it carries less than planned behind a standing queue (then plans use what it delivers,
 * for a while).
 */
struct lrate {
	uint64_t bytes;          /* first transmissions since the epochs in `key` went live */
	uint64_t key;            /* the sender's live (job, epoch) pairs those bytes count */
	int64_t at;              /* monotonic ms of that sample; -1: none */
	double gbps;             /* between the last two samples; < 0: not known */
	double planned_gbps;     /* the sum of the rates of the trees and streams on it */
	double rtt_ms;           /* the sender's last probe round trip to the other end; < 0 */
	double base_rtt_ms;      /* the smallest seen since the link came up; 0: none */
	int strikes;             /* samples in a row short of the plan behind a queue */
	double measured_gbps;    /* the capacity plans use now; 0: the topology's */
	int64_t measured_until;  /* monotonic ms when plans go back to the topology's */
	int heard;               /* (a->b entry) heartbeats in a row that the ends of a link
				  * that is down heard each other */
};

struct dmn {
	const struct deploy *d;
	const struct daemon_opts *o;
	struct gw *gws;          /* by deployment gateway (with one per site, by node) */
	struct jobplan_link *link; /* by topology link: usable, measured capacity */
	struct lrate *lr;        /* by topology link, a->b then b->a */
	struct job *jobs;
	int sfd;
	struct ctlsrv *srv;      /* its own API: the unix socket and TLS */
	struct ctltls_ctx *tls_client, *tls_server; /* from the deployment's "tls" */
	struct waiter *waiters;  /* workers' long polls, DAEMON_WAITERS_MAX */
	int n_waiters;
	int64_t started;
	bool stop;
	struct promsrv *msrv;    /* --metrics, or NULL */
	int wfd;                 /* with --metrics: epoll of sfd and the metrics server */
	uint64_t heartbeats;     /* rounds of heartbeats (metrics) */
};

void
control_log(const char *fmt, ...)
{
	char stamp[32], msg[2048];
	struct timespec ts;
	struct tm tm;
	va_list ap;

	clock_gettime(CLOCK_REALTIME, &ts);
	gmtime_r(&ts.tv_sec, &tm);
	strftime(stamp, sizeof(stamp), "%Y-%m-%dT%H:%M:%S", &tm);
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	for (char *c = msg; *c != '\0'; c++)
		if ((unsigned char)*c < 0x20)
			*c = '?';
	fprintf(stderr, "%s.%03ldZ " PROG ": %s\n", stamp, ts.tv_nsec / 1000000, msg);
	fflush(stderr);
}

static const char *
node_id(const struct dmn *m, int v)
{
	return m->d->topo->nodes[v].id;
}

/* Gateway g's name: its node's id where the node has one gateway. */
static const char *
gw_name(const struct dmn *m, int g)
{
	return m->d->gateways[g].name;
}

/* The first and the end of the gateways of node v. */
#define NODE_GWS(m, v, g) \
	for (int g = (m)->d->node_gw[v]; g < (m)->d->node_gw[v] + (m)->d->node_ngw[v]; g++)

static void
mark_all_dirty(struct dmn *m, enum cause cause, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void
mark_all_dirty(struct dmn *m, enum cause cause, const char *fmt, ...)
{
	char why[REASON_MAX];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(why, sizeof(why), fmt, ap);
	va_end(ap);
	for (int i = 0; i < m->d->n_jobs; i++) {
		m->jobs[i].dirty = true;
		m->jobs[i].retry_in = 0;
		m->jobs[i].cause = cause;
		snprintf(m->jobs[i].reason, sizeof(m->jobs[i].reason), "%s", why);
	}
}

/* ---- heartbeats ---------------------------------------------------------------------- */

/* Sum of an integer field over the objects of array arr. */
static uint64_t
sum_field(const json_t *arr, const char *key)
{
	uint64_t s = 0;
	size_t i;
	json_t *o;

	json_array_foreach(arr, i, o) {
		json_t *v = json_object_get(o, key);

		if (json_is_integer(v) && json_integer_value(v) > 0)
			s += (uint64_t)json_integer_value(v);
	}
	return s;
}

/* The drops of g's lcores: in all, per second since the previous sample, by reason. */
static void
drops_sample(struct gw *g, const json_t *lc, int64_t t)
{
	uint64_t n = sum_field(lc, "dropped");
	json_t *by = json_object(), *o, *v;
	const char *reason;
	size_t i;

	g->drops_per_s = g->sample_at >= 0 && t > g->sample_at && n >= g->dropped
				 ? (double)(n - g->dropped) * 1e3 / (double)(t - g->sample_at)
				 : -1;
	g->dropped = n;
	json_array_foreach(lc, i, o)
		json_object_foreach(json_object_get(o, "drops"), reason, v) {
			json_int_t had = json_integer_value(json_object_get(by, reason));

			if (json_is_integer(v) && json_integer_value(v) > 0)
				json_object_set_new(by, reason,
						    json_integer(had + json_integer_value(v)));
		}
	json_decref(g->drops);
	g->drops = by;
}

/* Read the counters of a stats response into g (rates from the previous sample). */
static void
take_sample(struct gw *g, const json_t *st, int64_t t)
{
	const json_t *lc = json_object_get(st, "lcores");
	uint64_t rx = sum_field(lc, "rx_bytes"), tx = sum_field(lc, "tx_bytes");

	if (g->sample_at >= 0 && t > g->sample_at && rx >= g->rx_bytes && tx >= g->tx_bytes) {
		double s = (double)(t - g->sample_at) / 1e3;

		g->rx_gbps = (double)(rx - g->rx_bytes) * 8 / s / 1e9;
		g->tx_gbps = (double)(tx - g->tx_bytes) * 8 / s / 1e9;
	} else {
		g->rx_gbps = g->tx_gbps = -1;
	}
	g->rx_bytes = rx;
	g->tx_bytes = tx;
	g->chunks = sum_field(lc, "chunks_completed");
	drops_sample(g, lc, t);
	g->sample_at = t;
	json_decref(g->peers);
	g->peers = json_incref(json_object_get(st, "peers"));
	json_decref(g->jobs);
	g->jobs = json_incref(json_object_get(st, "jobs"));
	g->peers_age_ms = json_integer_value(json_object_get(st, "peers_age_ms"));
}

/* Ping and read the stats of gateway g. True if it answered; *gone if its socket is gone. */
static bool
heartbeat(struct dmn *m, struct gw *g, bool *gone)
{
	struct timespec t0, t1;
	json_t *r;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	r = install_call(&g->conn, "ping", NULL, m->o->timeout_ms, g->error, sizeof(g->error));
	/* A connection that broke (the peer closed or reset it) is tried again at once on a
	 * new one: a dataplane that is gone then refuses, and is seen down now rather than
	 * at the next heartbeat. */
	if (r == NULL && (errno == EPIPE || errno == ECONNRESET || errno == EPROTO)) {
		clock_gettime(CLOCK_MONOTONIC, &t0);
		r = install_call(&g->conn, "ping", NULL, m->o->timeout_ms, g->error,
				 sizeof(g->error));
	}
	clock_gettime(CLOCK_MONOTONIC, &t1);
	*gone = false;
	if (r == NULL) {
		*gone = errno == ENOENT || errno == ECONNREFUSED;
		g->missed++;
		return false;
	}
	json_decref(r);
	g->rtt_ms = (double)(t1.tv_sec - t0.tv_sec) * 1e3 +
		    (double)(t1.tv_nsec - t0.tv_nsec) / 1e6;
	g->missed = 0;
	g->last_ok = clock_now_ms();
	r = install_call(&g->conn, "stats", NULL, m->o->timeout_ms, g->error, sizeof(g->error));
	if (r != NULL && json_is_true(json_object_get(r, "ok")))
		take_sample(g, r, clock_now_ms());
	json_decref(r);
	return true;
}

/* Raise every job's next epoch above what gateway v holds (live, draining or staged), so
 * that a restarted daemon never offers an epoch the dataplane has seen; keep the live
 * tables, which a restarted daemon may take over (adopt()). */
static void
sync_epochs(struct dmn *m, int v)
{
	char err[CTL_ERR_MAX];

	for (int i = 0; i < m->d->n_jobs; i++) {
		struct job *j = &m->jobs[i];
		json_t *r = install_call(&m->gws[v].conn, "dump",
					 json_pack("{s:I}", "job", (json_int_t)m->d->jobs[i].id),
					 m->o->timeout_ms, err, sizeof(err));
		json_t *item;
		size_t k;

		json_decref(m->gws[v].live[i]);
		m->gws[v].live[i] = NULL;
		json_array_foreach(json_object_get(r, "tables"), k, item) {
			json_t *tb = json_object_get(item, "table");
			json_t *e = json_object_get(json_is_object(tb) ? tb : item, "epoch");
			const char *st = json_string_value(json_object_get(item, "state"));

			if (st != NULL && strcmp(st, "live") == 0 && json_is_object(tb)) {
				json_decref(m->gws[v].live[i]);
				m->gws[v].live[i] = json_incref(tb);
			}

			if (json_is_integer(e) && json_integer_value(e) >= j->next_epoch &&
			    json_integer_value(e) < UINT32_MAX)
				j->next_epoch = (uint32_t)json_integer_value(e) + 1;
		}
		json_decref(r);
	}
}

/* Mark gateway v down (logged with why) and every job for a new epoch without it. */
static void
gateway_down(struct dmn *m, int v, const char *why)
{
	struct gw *g = &m->gws[v];
	bool was_up = g->state == GW_UP;

	g->state = GW_DOWN;
	install_gw_close(&g->conn);
	control_log("gateway %s (id %u, %s) is down: %s", gw_name(m, v),
		    m->d->gateways[v].id, g->conn.socket, why);
	if (was_up)
		mark_all_dirty(m, CAUSE_GATEWAY_DOWN, "gateway %s failed", gw_name(m, v));
}

/* Tell gateway v's dataplane to probe the gateways of its topology neighbours (every
 * gateway of each neighbouring site). */
static void
send_peers(struct dmn *m, int v)
{
	const struct topo *t = m->d->topo;
	json_t *arr = json_array(), *r;
	int nv = m->d->gateways[v].node;
	char ip[16];

	for (int l = 0; l < t->n_links; l++) {
		int u = t->links[l].a == nv ? t->links[l].b
			: t->links[l].b == nv ? t->links[l].a : -1;

		if (u < 0)
			continue;
		NODE_GWS(m, u, h)
			json_array_append_new(arr, json_pack("{s:s,s:i,s:i}", "ipv4",
				table_ipv4_format(m->d->gateways[h].ipv4, ip), "base_port",
				m->d->gateways[h].base_port, "ports", m->d->gateways[h].ports));
	}
	r = install_call(&m->gws[v].conn, "peers", json_pack("{s:o}", "peers", arr),
			 m->o->timeout_ms, m->gws[v].error, sizeof(m->gws[v].error));
	m->gws[v].peers_sent = r != NULL && json_is_true(json_object_get(r, "ok"));
	if (!m->gws[v].peers_sent)
		control_log("gateway %s: cannot set its probe peers: %s", gw_name(m, v),
			    r != NULL ? json_string_value(json_object_get(r, "error"))
				      : m->gws[v].error);
	json_decref(r);
}

/* How long gateway v has not heard from gateway u: ms since u's last PROBE_REPLY; -1 if
 * unknown (u never answered v, or is not a probe peer of v). *unanswered: the PROBEs v
 * sent u since then (-1 from a dataplane that does not say). */
static int64_t
silence_ms(const struct dmn *m, int v, int u, json_int_t *unanswered)
{
	const struct gw *g = &m->gws[v];
	char ip[16];
	size_t i;
	json_t *p;

	*unanswered = -1;
	table_ipv4_format(m->d->gateways[u].ipv4, ip);
	json_array_foreach(g->peers, i, p) {
		const char *pip = json_string_value(json_object_get(p, "ipv4"));
		json_t *un = json_object_get(p, "unanswered");

		if (pip == NULL || strcmp(pip, ip) != 0)
			continue;
		if (json_is_integer(un))
			*unanswered = json_integer_value(un);
		/* -1 when u never answered since v started probing it: no evidence either way
		 * (the path may not carry probes at all, as on test ports without a wire). */
		return json_integer_value(json_object_get(p, "since_ms"));
	}
	return -1;
}

/* ---- measured rates (docs/DEPLOYMENT.md, "Failures") -------------------------------- */

/* The bytes of first transmissions of one 'links' entry of a dataplane's stats. */
static uint64_t
first_tx_bytes(const json_t *lk)
{
	json_int_t b = json_integer_value(json_object_get(lk, "bytes"));
	json_int_t r = json_integer_value(json_object_get(lk, "retx_bytes"));

	return b > r ? (uint64_t)(b - r) : 0;
}

int
daemon_link_tree(const json_t *lk)
{
	const json_t *t = json_object_get(lk, "tree");

	/* A stream's entry has no "tree": json_integer_value() of the missing key would be 0,
	 * a valid tree id. */
	if (!json_is_integer(t) || json_integer_value(t) < 0 ||
	    json_integer_value(t) > UINT16_MAX)
		return -1;
	return (int)json_integer_value(t);
}

bool
daemon_link_sent(const json_t *jobs, uint16_t peer, uint64_t *bytes, double *planned,
		 uint64_t *key)
{
	bool any = false;
	json_t *jo, *lk;
	size_t i, k;

	*bytes = 0;
	*planned = 0;
	*key = 0;
	json_array_foreach(jobs, i, jo) {
		const char *state = json_string_value(json_object_get(jo, "state"));

		if (state == NULL || strcmp(state, "live") != 0)
			continue;
		*key = *key * 1000003u + (uint64_t)json_integer_value(json_object_get(jo, "job")) *
					 65537u +
		       (uint64_t)json_integer_value(json_object_get(jo, "epoch"));
		/* Trees and streams alike: a stream's copies load the link as a tree does. */
		json_array_foreach(json_object_get(jo, "links"), k, lk) {
			if (json_integer_value(json_object_get(lk, "id")) != peer)
				continue;
			*bytes += first_tx_bytes(lk);
			*planned += json_number_value(json_object_get(lk, "rate_gbps"));
			any = true;
		}
	}
	return any;
}

/* What the gateways of node v that are up handed to the link towards node u in their live
 * epochs (daemon_link_sent(), summed over the pairs of gateways). False if none did. */
static bool
link_sent(const struct dmn *m, int v, int u, uint64_t *bytes, double *planned, uint64_t *key)
{
	bool any = false;

	*bytes = 0;
	*planned = 0;
	*key = 0;
	NODE_GWS(m, v, g) {
		if (m->gws[g].state != GW_UP)
			continue;
		NODE_GWS(m, u, h) {
			uint64_t b, k;
			double pl;

			if (!daemon_link_sent(m->gws[g].jobs, m->d->gateways[h].id, &b, &pl, &k))
				continue;
			*bytes += b;
			*planned += pl;
			*key = *key * 31u + k;
			any = true;
		}
	}
	return any;
}

/* Gateway v's last probe round trip to gateway u in ms; -1 if it has none. */
static double
gw_probe_rtt_ms(const struct dmn *m, int v, int u)
{
	char ip[16];
	size_t i;
	json_t *p;

	table_ipv4_format(m->d->gateways[u].ipv4, ip);
	json_array_foreach(m->gws[v].peers, i, p) {
		const char *pip = json_string_value(json_object_get(p, "ipv4"));

		if (pip != NULL && strcmp(pip, ip) == 0 &&
		    json_integer_value(json_object_get(p, "replies")) > 0)
			return json_number_value(json_object_get(p, "rtt_ms"));
	}
	return -1;
}

/* The probe round trip from node v to node u: of the first pair of their gateways (v's
 * up) that has one; -1 if none has. The pairs share the link and its queue. */
static double
probe_rtt_ms(const struct dmn *m, int v, int u)
{
	NODE_GWS(m, v, g) {
		if (m->gws[g].state != GW_UP)
			continue;
		NODE_GWS(m, u, h) {
			double r = gw_probe_rtt_ms(m, g, h);

			if (r >= 0)
				return r;
		}
	}
	return -1;
}

/* Is some gateway of node v up? */
static bool
node_up(const struct dmn *m, int v)
{
	NODE_GWS(m, v, g)
		if (m->gws[g].state == GW_UP)
			return true;
	return false;
}

/* How many copies of each plan tree the live epoch's tables hold (distinct tree ids
 * congruent to it). */
static void
copies_count(const struct jobplan *jp, struct trate *r, int n)
{
	uint64_t *seen = n > 0 ? calloc(65536 / 64, sizeof(*seen)) : NULL;

	for (int g = 0; jp != NULL && seen != NULL && g < jp->n_gateways; g++)
		for (int e = 0; jp->tables[g] != NULL && e < jp->tables[g]->n_trees; e++) {
			uint16_t id = jp->tables[g]->trees[e].id;

			if (seen[id / 64] >> (id % 64) & 1)
				continue;
			seen[id / 64] |= 1ull << (id % 64);
			r[id % n].copies++;
		}
	free(seen);
}

/*
 * Each job's trees: the mean rate over the link directions of the tree (each carries the
 * tree's rate when the tree runs as planned), from every gateway's counters of the live
 * epoch. For `status`.
 */
static void
tree_rates_update(struct dmn *m)
{
	int64_t now = clock_now_ms();

	for (int i = 0; i < m->d->n_jobs; i++) {
		struct job *j = &m->jobs[i];
		int n = j->live != NULL ? j->live->plan->n_trees : 0;
		json_t *jo, *lk;
		size_t a, b;

		if (j->rates_epoch != j->live_epoch || j->n_rates != n) {
			free(j->rates);
			j->rates = calloc((size_t)n + 1, sizeof(*j->rates));
			j->n_rates = j->rates != NULL ? n : 0;
			j->rates_epoch = j->live_epoch;
			j->rates_at = -1;
			copies_count(j->live, j->rates, j->n_rates);
		}
		for (int k = 0; k < j->n_rates; k++) {
			j->rates[k].now_bytes = 0;
			j->rates[k].now_links = 0;
		}
		for (int v = 0; v < m->d->n_gateways; v++)
			json_array_foreach(m->gws[v].jobs, a, jo) {
				if (json_integer_value(json_object_get(jo, "job")) != m->d->jobs[i].id ||
				    json_integer_value(json_object_get(jo, "epoch")) != j->live_epoch)
					continue;
				json_array_foreach(json_object_get(jo, "links"), b, lk) {
					int k = daemon_link_tree(lk); /* -1: a stream's */

					/* A tree's copy in a segment of the shards has an id
					 * congruent to the plan tree's (docs/TABLES.md). */
					if (k < 0 || j->n_rates == 0)
						continue;
					k %= j->n_rates;
					j->rates[k].now_bytes += first_tx_bytes(lk);
					j->rates[k].now_links++;
				}
			}
		for (int k = 0; k < j->n_rates; k++) {
			struct trate *r = &j->rates[k];

			r->gbps = j->rates_at >= 0 && now > j->rates_at && r->now_links > 0 &&
					  r->now_links == r->links && r->now_bytes >= r->bytes
					  ? (double)(r->now_bytes - r->bytes) * 8 /
						    ((double)(now - j->rates_at) * 1e6) / r->links *
						    (r->copies > 0 ? r->copies : 1)
					  : -1;
			r->bytes = r->now_bytes;
			r->links = r->now_links;
		}
		j->rates_at = now;
	}
}

/* Link l with nothing measured yet. */
static void
lrate_forget(struct dmn *m, int l)
{
	for (int d = 0; d < 2; d++)
		m->lr[2 * l + d] = (struct lrate){ .at = -1, .rtt_ms = -1, .gbps = -1 };
	m->link[l].gbps_ab = m->link[l].gbps_ba = 0;
}

/*
 * Each direction of each link: its rate over the last heartbeat. A direction that
 * carries less than DAEMON_RATE_SHORT of its planned rate while the sender's probes see a
 * standing queue (round trip above the smallest seen by more than DAEMON_RATE_QUEUE_MS
 * and half of it), for DAEMON_RATE_STRIKES heartbeats in a row, delivers less than the
 * topology says: plans use the rate it carried in the last of them, for
 * DAEMON_RATE_HOLD_MS, then the topology's capacity again (if it is still short, it is
 * found again). Found short again at about the capacity plans use already, it only holds
 * longer.
 */
static void
rates_update(struct dmn *m)
{
	const struct topo *t = m->d->topo;
	int64_t now = clock_now_ms();

	for (int l = 0; l < t->n_links; l++)
		for (int d = 0; d < 2; d++) {
			int v = d == 0 ? t->links[l].a : t->links[l].b;
			int u = d == 0 ? t->links[l].b : t->links[l].a;
			struct lrate *r = &m->lr[2 * l + d];
			double *cap = d == 0 ? &m->link[l].gbps_ab : &m->link[l].gbps_ba;
			double nominal = d == 0 ? t->links[l].gbps_ab : t->links[l].gbps_ba;
			uint64_t bytes, key;
			double planned;

			if (r->measured_gbps > 0 && now >= r->measured_until) {
				control_log("link %s-%s: plans use %s->%s's topology capacity of %g "
					    "Gbit/s again", node_id(m, t->links[l].a),
					    node_id(m, t->links[l].b), node_id(m, v), node_id(m, u),
					    nominal);
				r->measured_gbps = 0;
				*cap = 0;
				mark_all_dirty(m, CAUSE_LINK_RESTORED, "link %s-%s: measured capacity expired",
					       node_id(m, t->links[l].a), node_id(m, t->links[l].b));
			}
			if (!m->link[l].up || !node_up(m, v) ||
			    !link_sent(m, v, u, &bytes, &planned, &key)) {
				r->at = -1;
				r->gbps = -1;
				r->strikes = 0;
				continue;
			}
			r->gbps = r->at >= 0 && r->key == key && bytes >= r->bytes && now > r->at
					  ? (double)(bytes - r->bytes) * 8 / ((double)(now - r->at) * 1e6)
					  : -1;
			r->bytes = bytes;
			r->key = key;
			r->at = now;
			r->planned_gbps = planned;
			r->rtt_ms = probe_rtt_ms(m, v, u);
			if (r->rtt_ms > 0 && (r->base_rtt_ms <= 0 || r->rtt_ms < r->base_rtt_ms))
				r->base_rtt_ms = r->rtt_ms;
			double queue = r->rtt_ms > 0 ? r->rtt_ms - r->base_rtt_ms : 0;
			/* What it should carry: the plan's rate, but no more than the capacity
			 * plans use (jobs are planned one by one, each with the whole link: with
			 * several, the rates they plan on a link can add up to more). */
			double in_plans = *cap > 0 ? *cap : nominal;
			double expect = planned < in_plans ? planned : in_plans;

			if (r->gbps < 0 || planned <= 0 || r->gbps >= DAEMON_RATE_SHORT * expect ||
			    r->gbps < DAEMON_RATE_IDLE * expect || queue <= DAEMON_RATE_QUEUE_MS ||
			    queue <= r->base_rtt_ms / 2) {
				r->strikes = 0;
				continue;
			}
			if (++r->strikes < DAEMON_RATE_STRIKES)
				continue;
			/* What it carried in the last of those heartbeats, its queue standing all
			 * along: the earlier ones can include the queue filling up, faster than
			 * the link. At least DAEMON_RATE_IDLE of the plan (below that it counted
			 * as idle): a link that delivers next to nothing is left to the probes,
			 * which decide whether it is down. */
			double best = r->gbps > DAEMON_RATE_FLOOR * nominal ? r->gbps
									    : DAEMON_RATE_FLOOR * nominal;

			r->strikes = 0;
			r->measured_until = now + DAEMON_RATE_HOLD_MS;
			if (r->measured_gbps > 0 && best > r->measured_gbps * (1 - DAEMON_RATE_SAME) &&
			    best < r->measured_gbps * (1 + DAEMON_RATE_SAME))
				continue; /* what plans use already: it holds longer, no new epoch */
			r->measured_gbps = best;
			*cap = best;
			control_log("link %s-%s: %s->%s carries %.4g Gbit/s of the %.4g planned behind "
				    "%.0f ms of queue (round trip %.0f ms, %.0f ms at best); planning "
				    "with %.4g Gbit/s for %d s", node_id(m, t->links[l].a),
				    node_id(m, t->links[l].b), node_id(m, v), node_id(m, u), r->gbps,
				    expect, queue, r->rtt_ms, r->base_rtt_ms, r->measured_gbps,
				    DAEMON_RATE_HOLD_MS / 1000);
			mark_all_dirty(m, CAUSE_LINK_SHORT, "link %s-%s measured at %.4g Gbit/s",
				       node_id(m, t->links[l].a), node_id(m, t->links[l].b),
				       r->measured_gbps);
		}
}

/* Links: down when an end that had heard from the other (both gateways being up) has not
 * for --fail-after heartbeats plus twice the last probe round trip between them, and has
 * sent it at least --fail-after PROBEs meanwhile (a
 * dataplane whose control thread was busy, or starved of CPU, sent none: its silence says
 * nothing of the link); up again once both hear each other. Plans change with them.
 * A link whose ends never heard each other keeps its state: silence from the start is no
 * evidence of a failure (the path may not carry probes, as between test ports). */
static void
links_update(struct dmn *m)
{
	const struct topo *t = m->d->topo;
	int64_t limit = (int64_t)m->o->fail_after * m->o->heartbeat_ms;

	for (int l = 0; l < t->n_links; l++) {
		int a = t->links[l].a, b = t->links[l].b, pairs = 0;
		int64_t sab = -1, sba = -1;
		bool quiet = false, heard = true;

		/* Every pair of their gateways that are up: one that had heard the other and
		 * no longer does is a link that fails; back once every pair hears. */
		NODE_GWS(m, a, x) {
			if (m->gws[x].state != GW_UP)
				continue;
			NODE_GWS(m, b, y) {
				json_int_t uxy, uyx;
				int64_t xy, yx, lxy, lyx;

				if (m->gws[y].state != GW_UP)
					continue;
				xy = silence_ms(m, x, y, &uxy);
				yx = silence_ms(m, y, x, &uyx);
				/* A queue on the link delays the replies as it does the data: the
				 * silence allowed grows by twice the last round trip seen. */
				lxy = limit + 2 * (int64_t)fmax(gw_probe_rtt_ms(m, x, y), 0);
				lyx = limit + 2 * (int64_t)fmax(gw_probe_rtt_ms(m, y, x), 0);
				quiet |= (xy > lxy && (uxy < 0 || uxy >= m->o->fail_after)) ||
					 (yx > lyx && (uyx < 0 || uyx >= m->o->fail_after));
				heard &= xy >= 0 && xy <= lxy && yx >= 0 && yx <= lyx;
				sab = xy > sab ? xy : sab;
				sba = yx > sba ? yx : sba;
				pairs++;
			}
		}
		if (pairs == 0)
			continue;

		/* Back after --fail-after heartbeats in a row of both ends hearing each other,
		 * not at the first answer: a link that flaps is planned without until it holds. */
		m->lr[2 * l].heard = !m->link[l].up && heard ? m->lr[2 * l].heard + 1 : 0;
		if (m->link[l].up && quiet) {
			m->link[l].up = false;
			control_log("link %s-%s is down: no probe answered for %lld ms",
				    node_id(m, a), node_id(m, b),
				    (long long)(sab > sba ? sab : sba));
			mark_all_dirty(m, CAUSE_LINK_DOWN, "link %s-%s failed", node_id(m, a),
				       node_id(m, b));
		} else if (!m->link[l].up && m->lr[2 * l].heard >= m->o->fail_after) {
			m->link[l].up = true;
			control_log("link %s-%s is up again", node_id(m, a), node_id(m, b));
			mark_all_dirty(m, CAUSE_LINK_UP, "link %s-%s is back", node_id(m, a), node_id(m, b));
		}
	}
}

static void
heartbeat_all(struct dmn *m)
{
	for (int v = 0; v < m->d->n_gateways; v++) {
		struct gw *g = &m->gws[v];
		char why[CTL_ERR_MAX + 64];
		bool gone;

		if (heartbeat(m, g, &gone)) {
			if (g->state != GW_UP) {
				control_log("gateway %s (id %u, %s) is up%s, ping %.1f ms",
					    gw_name(m, v), m->d->gateways[v].id, g->conn.socket,
					    g->state == GW_DOWN ? " again" : "", g->rtt_ms);
				/* From unknown (at start) the jobs are due anyway: installs
				 * wait until no gateway is unknown. */
				if (g->state == GW_DOWN)
					mark_all_dirty(m, CAUSE_GATEWAY_UP, "gateway %s is back", gw_name(m, v));
				g->state = GW_UP;
				g->peers_sent = false;
				sync_epochs(m, v);
			}
			if (!g->peers_sent)
				send_peers(m, v);
			continue;
		}
		if (g->state == GW_DOWN)
			continue;
		if (gone || g->missed >= m->o->fail_after) {
			if (gone)
				snprintf(why, sizeof(why), "%s", g->error);
			else
				snprintf(why, sizeof(why), "missed %d heartbeats: %s", g->missed,
					 g->error);
			gateway_down(m, v, why);
		} else if (g->state == GW_UP) {
			control_log("gateway %s: heartbeat missed (%d of %d): %s", gw_name(m, v),
				    g->missed, m->o->fail_after, g->error);
		}
	}
}

/* ---- installing ---------------------------------------------------------------------- */

/* "a b c": the names of the gateways with a table in jp. */
static void
member_list(const struct dmn *m, const struct jobplan *jp, char *buf, size_t len)
{
	size_t off = 0;

	buf[0] = '\0';
	for (int v = 0; v < jp->n_gateways && off < len; v++)
		if (jp->tables[v] != NULL)
			off += (size_t)snprintf(buf + off, len - off, "%s%s", off > 0 ? " " : "",
						gw_name(m, v));
}

/*
 * At start: if the gateways already run an epoch of job ji (a restarted control process),
 * plan that epoch again over the gateways that are up; when every gateway's live table is
 * exactly what the plan compiles to (the planner is deterministic), take it over as the
 * live epoch, installing nothing. True if it did.
 */
static bool
adopt(struct dmn *m, int ji, const bool *up)
{
	const struct deploy_job *dj = &m->d->jobs[ji];
	struct job *j = &m->jobs[ji];
	int n = m->d->n_gateways, k = 0;
	char err[JOBPLAN_ERR_MAX], members[1024];
	struct jobplan *jp = NULL;
	json_int_t e = -1;
	bool same = true;

	for (int v = 0; v < n; v++) {
		json_t *lt = m->gws[v].live[ji];

		if (up[v] && lt != NULL && json_integer_value(json_object_get(lt, "epoch")) > e)
			e = json_integer_value(json_object_get(lt, "epoch"));
	}
	if (e <= 0)
		return false;
	if (jobplan_build(m->d, ji, up, m->link, (uint32_t)e, &jp, err, sizeof(err)) != 0) {
		control_log("job %u: epoch %lld runs on the gateways but cannot be planned again "
			    "(%s): a new epoch replaces it", dj->id, (long long)e, err);
		return false;
	}
	for (int v = 0; v < n && same; v++) {
		json_t *lt = up[v] ? m->gws[v].live[ji] : NULL;
		bool has_e = lt != NULL && json_integer_value(json_object_get(lt, "epoch")) == e;

		if (jp->tables[v] == NULL) {
			same = !has_e;
			continue;
		}
		/* A gateway's dump holds no link key: an epoch with protected links is never
		 * taken over, a new one brings fresh keys. */
		json_t *mine = table_to_json_public(jp->tables[v]);

		same = has_e && jp->tables[v]->n_seals == 0 && mine != NULL && json_equal(mine, lt);
		json_decref(mine);
		k++;
	}
	if (!same) {
		control_log("job %u: epoch %lld on the gateways is not what this deployment plans "
			    "now: a new epoch replaces it", dj->id, (long long)e);
		jobplan_free(jp);
		return false;
	}
	member_list(m, jp, members, sizeof(members));
	jobplan_free(j->live);
	j->live = jp;
	j->epochs++;
	j->live_epoch = (uint32_t)e;
	j->live_since = clock_now_ms();
	j->error[0] = '\0';
	if (m->o->out != NULL && jobplan_write(j->live, m->d, m->o->out, err, sizeof(err)) != 0)
		control_log("job %u: epoch %u: %s", dj->id, j->live_epoch, err);
	control_log("job %u: epoch %u found live on %d gateways (%s): carried on, nothing "
		    "installed", dj->id, j->live_epoch, k, members);
	return true;
}

static void
install_job(struct dmn *m, int ji)
{
	const struct deploy_job *dj = &m->d->jobs[ji];
	struct job *j = &m->jobs[ji];
	int n = m->d->n_gateways, k = 0, rc;
	struct install_gw *gws = calloc((size_t)n, sizeof(*gws));
	struct table **tables = calloc((size_t)n, sizeof(*tables));
	bool *up = calloc((size_t)n, sizeof(*up)), *af = calloc((size_t)n, sizeof(*af));
	int *idx = calloc((size_t)n, sizeof(*idx));
	struct install_report rep = { .activate_failed = af };
	char summary[2048], members[1024];
	struct jobplan *jp = NULL;
	uint32_t epoch;

	j->dirty = false;
	if (gws == NULL || tables == NULL || up == NULL || af == NULL || idx == NULL) {
		control_log("job %u: out of memory", dj->id);
		j->dirty = true;
		goto out;
	}
	for (int v = 0; v < n; v++)
		up[v] = m->gws[v].state == GW_UP;
	if (!j->adopt_tried) {
		j->adopt_tried = true;
		if (j->live == NULL && adopt(m, ji, up))
			goto out;
	}
	epoch = j->next_epoch++;
	if (j->next_epoch == 0)
		j->next_epoch = 1;
	j->replans[j->cause < CAUSE_COUNT ? j->cause : CAUSE_START]++;
	rc = jobplan_build(m->d, ji, up, m->link, epoch, &jp, j->error, sizeof(j->error));
	if (rc != 0) {
		j->plan_failures++;
		control_log("job %u: no epoch %u (%s): %s; it stays on epoch %u", dj->id, epoch,
			    j->reason, j->error, j->live_epoch);
		goto out;
	}
	member_list(m, jp, members, sizeof(members));
	control_log("job %u: epoch %u planned (%s): %s", dj->id, epoch, j->reason,
		    jobplan_summary(jp, summary, sizeof(summary)));
	for (int v = 0; v < n; v++) {
		if (jp->tables[v] == NULL)
			continue;
		gws[k] = m->gws[v].conn;
		tables[k] = jp->tables[v];
		idx[k++] = v;
	}
	rc = install_epoch(gws, tables, k, dj->id, epoch, m->o->timeout_ms, &rep);
	for (int i = 0; i < k; i++) /* connections opened or closed during the install */
		m->gws[idx[i]].conn = gws[i];
	if (rc == -ECANCELED) {
		snprintf(j->error, sizeof(j->error), "%s", rep.error);
		control_log("job %u: epoch %u not installed: %s; prepared on %d of %d gateways, "
			    "activated on none; the job stays on epoch %u", dj->id, epoch,
			    rep.error, rep.n_prepared, k, j->live_epoch);
		if (rep.no_answer) {
			gateway_down(m, idx[rep.failed], rep.error);
			j->dirty = true;
			j->cause = CAUSE_GATEWAY_NO_ANSWER;
			snprintf(j->reason, sizeof(j->reason), "gateway %s did not answer",
				 gw_name(m, idx[rep.failed]));
		} else {
			if (j->retry_after < DAEMON_RETRY_HEARTBEATS)
				j->retry_after = DAEMON_RETRY_HEARTBEATS;
			j->retry_in = j->retry_after;
			if (j->retry_after < DAEMON_RETRY_MAX_HEARTBEATS / 2)
				j->retry_after *= 2;
			j->cause = CAUSE_REJECTED;
			snprintf(j->reason, sizeof(j->reason), "retry after a rejected prepare");
		}
		goto out;
	}
	if (rc != 0 && rc != -EIO) {
		snprintf(j->error, sizeof(j->error), "install: %s", strerror(-rc));
		control_log("job %u: epoch %u not installed: %s", dj->id, epoch, j->error);
		goto out;
	}
	jobplan_free(j->live);
	j->live = jp;
	jp = NULL;
	j->epochs++;
	j->live_epoch = epoch;
	j->live_since = clock_now_ms();
	if (m->o->out != NULL) {
		char err[256];

		if (jobplan_write(j->live, m->d, m->o->out, err, sizeof(err)) != 0)
			control_log("job %u: epoch %u: %s", dj->id, epoch, err);
	}
	if (rc == 0) {
		j->error[0] = '\0';
		j->retry_after = 0;
		control_log("job %u: epoch %u live on %d gateways (%s)", dj->id, epoch, k, members);
		goto out;
	}
	/* Some activates failed: those gateways still run the previous epoch. */
	snprintf(j->error, sizeof(j->error), "%s", rep.error);
	control_log("job %u: epoch %u live on %d of %d gateways (%s); %d failed to activate, "
		    "first %s", dj->id, epoch, rep.n_activated, k, members, rep.n_failed,
		    rep.error);
	for (int i = 0; i < k; i++)
		if (af[i] && !m->gws[idx[i]].conn.open && m->gws[idx[i]].state == GW_UP)
			gateway_down(m, idx[i], "no answer to activate");
	j->dirty = true;
	j->cause = CAUSE_ACTIVATION;
	snprintf(j->reason, sizeof(j->reason), "activation failed on %d gateways", rep.n_failed);
out:
	jobplan_free(jp);
	free(idx);
	free(af);
	free(up);
	free(tables);
	free(gws);
}

/* Install the jobs that need it, once every gateway's state is known. */
static void
install_due(struct dmn *m)
{
	for (int v = 0; v < m->d->n_gateways; v++)
		if (m->gws[v].state == GW_UNKNOWN)
			return;
	for (int i = 0; i < m->d->n_jobs && !m->stop; i++)
		if (m->jobs[i].dirty)
			install_job(m, i);
}

/* ---- the daemon's own socket --------------------------------------------------------- */

/* The links for `status`: per direction the planned and measured rates, the probes'
 * round trip and the capacity plans use. */
static json_t *
links_json(const struct dmn *m, int64_t t)
{
	const struct topo *tp = m->d->topo;
	json_t *arr = json_array();

	for (int l = 0; l < tp->n_links; l++) {
		json_t *dirs = json_array();

		for (int d = 0; d < 2; d++) {
			const struct lrate *r = &m->lr[2 * l + d];
			int v = d == 0 ? tp->links[l].a : tp->links[l].b;
			int u = d == 0 ? tp->links[l].b : tp->links[l].a;
			double nominal = d == 0 ? tp->links[l].gbps_ab : tp->links[l].gbps_ba;

			json_array_append_new(dirs, json_pack(
				"{s:s,s:s,s:f,s:o,s:o,s:o,s:f,s:o}", "from", node_id(m, v), "to",
				node_id(m, u), "planned_gbps", r->at >= 0 ? r->planned_gbps : 0.0,
				"gbps", r->gbps >= 0 ? json_real(r->gbps) : json_null(),
				"rtt_ms", r->rtt_ms > 0 ? json_real(r->rtt_ms) : json_null(),
				"base_rtt_ms", r->base_rtt_ms > 0 ? json_real(r->base_rtt_ms)
								 : json_null(),
				"capacity_gbps", r->measured_gbps > 0 ? r->measured_gbps : nominal,
				"measured_for_s", r->measured_gbps > 0
					? json_real((double)(r->measured_until - t) / 1e3)
					: json_null()));
		}
		json_array_append_new(arr, json_pack("{s:s,s:s,s:b,s:o}", "a",
						     node_id(m, tp->links[l].a), "b",
						     node_id(m, tp->links[l].b), "up",
						     m->link[l].up, "directions", dirs));
	}
	return arr;
}

/*
 * How far job i's live epoch is: at each of its gateways that reported the epoch, the
 * chunks whose RESULT it has had over the chunks a round has there (its trees' chunk
 * ranges); "completed" is the least of these, so its integer part is the rounds every
 * gateway has finished since the epoch went live and its fraction how far the slowest is
 * into the next. null without trees or before a gateway reported.
 */
static json_t *
rounds_json(const struct dmn *m, int i)
{
	const struct job *j = &m->jobs[i];
	const struct jobplan *jp = j->live;
	uint64_t per_max = 0, in_flight = 0;
	double least = -1;
	bool any = false;
	json_t *jo;
	size_t a;

	for (int v = 0; jp != NULL && v < jp->n_gateways; v++) {
		const struct table *tb = jp->tables[v];
		uint64_t per = 0;

		if (tb == NULL || m->gws[v].state != GW_UP)
			continue;
		for (int k = 0; k < tb->n_trees; k++)
			per += tb->trees[k].chunk_count;
		json_array_foreach(m->gws[v].jobs, a, jo) {
			double r;

			if (json_integer_value(json_object_get(jo, "job")) != m->d->jobs[i].id ||
			    json_integer_value(json_object_get(jo, "epoch")) != j->live_epoch ||
			    !json_is_integer(json_object_get(jo, "chunks_done")))
				continue;
			in_flight += (uint64_t)json_integer_value(json_object_get(jo,
								      "chunks_in_flight"));
			if (per == 0)
				continue;
			r = (double)json_integer_value(json_object_get(jo, "chunks_done")) /
			    (double)per;
			least = any && least < r ? least : r;
			per_max = per > per_max ? per : per_max;
			any = true;
		}
	}
	if (!any)
		return json_null();
	return json_pack("{s:f,s:I,s:I}", "completed", least, "chunks_per_round",
			 (json_int_t)per_max, "chunks_in_flight", (json_int_t)in_flight);
}

static json_t *
status_json(const struct dmn *m)
{
	json_t *o = json_object(), *gws = json_array(), *jobs = json_array();
	int64_t t = clock_now_ms();
	char ip[16];

	json_object_set_new(o, "program", json_string(PROG));
	json_object_set_new(o, "deployment", json_string(m->d->path));
	json_object_set_new(o, "topology", json_string(m->d->topo->name));
	json_object_set_new(o, "heartbeat_ms", json_integer(m->o->heartbeat_ms));
	json_object_set_new(o, "fail_after", json_integer(m->o->fail_after));
	json_object_set_new(o, "uptime_s", json_real((double)(t - m->started) / 1e3));
	for (int v = 0; v < m->d->n_gateways; v++) {
		const struct gw *g = &m->gws[v];
		const struct deploy_gateway *dg = &m->d->gateways[v];
		json_t *go = json_pack("{s:s,s:s,s:i,s:i,s:s,s:s,s:s,s:i}", "node",
				       node_id(m, dg->node), "name", dg->name, "shard", dg->shard,
				       "id", dg->id, "ipv4", table_ipv4_format(dg->ipv4, ip),
				       "socket", dg->socket, "state", gw_state_names[g->state],
				       "missed", g->missed);

		json_object_set_new(go, "last_heartbeat_ms_ago",
				    g->last_ok >= 0 ? json_integer(t - g->last_ok) : json_null());
		json_object_set_new(go, "rtt_ms", g->last_ok >= 0 ? json_real(g->rtt_ms)
								 : json_null());
		json_object_set_new(go, "rx_gbps", g->rx_gbps >= 0 ? json_real(g->rx_gbps)
								   : json_null());
		json_object_set_new(go, "tx_gbps", g->tx_gbps >= 0 ? json_real(g->tx_gbps)
								   : json_null());
		json_object_set_new(go, "chunks_completed", json_integer((json_int_t)g->chunks));
		json_object_set_new(go, "dropped", json_integer((json_int_t)g->dropped));
		json_object_set_new(go, "drops_per_s", g->drops_per_s >= 0
				    ? json_real(g->drops_per_s) : json_null());
		json_object_set_new(go, "drops", g->drops != NULL ? json_copy(g->drops)
								  : json_object());
		if (g->state != GW_UP && g->error[0] != '\0')
			json_object_set_new(go, "error", json_string(g->error));
		json_array_append_new(gws, go);
	}
	for (int i = 0; i < m->d->n_jobs; i++) {
		const struct deploy_job *dj = &m->d->jobs[i];
		const struct job *j = &m->jobs[i];
		const struct jobplan *jp = j->live;
		json_t *jo = json_pack("{s:I,s:s,s:s,s:I}", "job", (json_int_t)dj->id, "algorithm",
				       deploy_algo_name(dj->algo), "dtype",
				       table_dtype_name(dj->dtype), "elements",
				       (json_int_t)dj->elements);
		json_t *trees = json_array(), *members = json_array();

		if (dj->algo == DEPLOY_ALGO_CREW) /* a round completes at this many workers */
			json_object_set_new(jo, "min_workers",
					    json_integer(dj->min_workers != 0 ? dj->min_workers
									     : (uint32_t)dj->n_workers));
		json_object_set_new(jo, "epoch", jp != NULL ? json_integer(j->live_epoch)
							    : json_null());
		json_object_set_new(jo, "state", json_string(jp == NULL ? "not installed" :
							     j->dirty || j->retry_in > 0 ?
							     "live, re-planning" : "live"));
		if (jp != NULL) {
			for (int v = 0; v < jp->n_gateways; v++)
				if (jp->tables[v] != NULL)
					json_array_append_new(members, json_string(gw_name(m, v)));
			json_object_set_new(jo, "live_for_s", json_real((double)(t - j->live_since) /
									 1e3));
			json_object_set_new(jo, "workers", json_integer(jp->n_workers));
			json_object_set_new(jo, "rate_gbps", json_real(plan_total_rate(jp->plan)));
			json_object_set_new(jo, "predicted_seconds",
					    json_real(jp->plan->allreduce_seconds));
			for (int k = 0; k < jp->plan->n_trees; k++) {
				const struct plan_tree *tr = &jp->plan->trees[k];
				/* measured_gbps: the mean over the tree's link directions
				 * (tree_rates_update()); root_rx_gbps: all the root site's
				 * gateways receive. */
				double rx = -1;

				NODE_GWS(m, jp->node_of[tr->root], g)
					if (m->gws[g].state == GW_UP && m->gws[g].rx_gbps >= 0)
						rx = (rx > 0 ? rx : 0) + m->gws[g].rx_gbps;

				json_array_append_new(trees, json_pack(
					"{s:i,s:s,s:f,s:f,s:f,s:o,s:o}", "tree", k, "root",
					jp->topo->nodes[tr->root].id, "rate_gbps", tr->rate_gbps,
					"share", tr->share, "height_ms",
					plan_tree_height_ms(jp->topo, tr), "measured_gbps",
					k < j->n_rates && j->rates[k].gbps >= 0
						? json_real(j->rates[k].gbps) : json_null(),
					"root_rx_gbps", rx >= 0 ? json_real(rx) : json_null()));
			}
		}
		json_object_set_new(jo, "gateways", members);
		json_object_set_new(jo, "trees", trees);
		json_object_set_new(jo, "rounds", rounds_json(m, i));
		if (j->error[0] != '\0')
			json_object_set_new(jo, "error", json_string(j->error));
		json_array_append_new(jobs, jo);
	}
	json_object_set_new(o, "gateways", gws);
	json_object_set_new(o, "api", ctlsrv_json(m->srv));
	json_object_set_new(o, "links", links_json(m, t));
	json_object_set_new(o, "jobs", jobs);
	return o;
}

/* ---- Prometheus metrics (--metrics; docs/METRICS.md) ------------------------------- */

#define M(name) "georeduce_control_" name
#define GBPS_BYTES(g) ((g) * 1e9 / 8) /* Gbit/s in bytes per second, the metrics' unit */

static void
fmt_u(char *b, size_t n, uint64_t v)
{
	snprintf(b, n, "%llu", (unsigned long long)v);
}

/* A link's label: "a-b" by the topology's node ids (truncated names are still unique
 * enough for a label, and the deployment limits ids to DEPLOY_NAME_MAX). */
static void
link_label(const struct dmn *m, int l, char *b, size_t n)
{
	const struct topo *t = m->d->topo;
	int k = snprintf(b, n, "%s-%s", node_id(m, t->links[l].a), node_id(m, t->links[l].b));

	if (k < 0 || (size_t)k >= n)
		b[n - 1] = '\0';
}

static void
metrics_jobs(const struct dmn *m, struct prom *p)
{
	char job[12], epoch[12], tree[12];
	struct prom_label l[4] = { { "job", job }, { "epoch", epoch } };
	int nj = m->d->n_jobs;

	prom_family(p, M("jobs"), PROM_GAUGE, "Jobs of the deployment");
	prom_sample_u64(p, NULL, 0, (uint64_t)nj);
	prom_family(p, M("job_info"), PROM_GAUGE, "A job's algorithm and element type (always 1)");
	for (int i = 0; i < nj; i++) {
		struct prom_label il[] = { { "job", job },
			{ "algorithm", deploy_algo_name(m->d->jobs[i].algo) },
			{ "dtype", table_dtype_name(m->d->jobs[i].dtype) } };

		fmt_u(job, sizeof(job), m->d->jobs[i].id);
		prom_sample(p, il, 3, 1);
	}
	prom_family(p, M("job_live"), PROM_GAUGE, "1 if the job has a live epoch");
	for (int i = 0; i < nj; i++) {
		fmt_u(job, sizeof(job), m->d->jobs[i].id);
		prom_sample(p, l, 1, m->jobs[i].live != NULL);
	}
	prom_family(p, M("job_epoch"), PROM_GAUGE, "The job's live epoch (0: none)");
	for (int i = 0; i < nj; i++) {
		fmt_u(job, sizeof(job), m->d->jobs[i].id);
		prom_sample_u64(p, l, 1, m->jobs[i].live != NULL ? m->jobs[i].live_epoch : 0);
	}
	prom_family(p, M("job_replanning"), PROM_GAUGE,
		    "1 while a new epoch of the job is due (or waits for a retry)");
	for (int i = 0; i < nj; i++) {
		fmt_u(job, sizeof(job), m->d->jobs[i].id);
		prom_sample(p, l, 1, m->jobs[i].dirty || m->jobs[i].retry_in > 0);
	}
	prom_family(p, M("epochs_total"), PROM_COUNTER,
		    "Epochs of the job that went live (or were taken over at start)");
	for (int i = 0; i < nj; i++) {
		fmt_u(job, sizeof(job), m->d->jobs[i].id);
		prom_sample_u64(p, l, 1, m->jobs[i].epochs);
	}
	prom_family(p, M("replans_total"), PROM_COUNTER,
		    "Epochs planned for the job, by cause (the first plan's cause is start)");
	for (int i = 0; i < nj; i++) {
		struct prom_label cl[] = { { "job", job }, { "cause", NULL } };

		fmt_u(job, sizeof(job), m->d->jobs[i].id);
		for (int c = 0; c < CAUSE_COUNT; c++) {
			cl[1].value = cause_names[c];
			prom_sample_u64(p, cl, 2, m->jobs[i].replans[c]);
		}
	}
	prom_family(p, M("plan_failures_total"), PROM_COUNTER,
		    "Plans of the job that gave no epoch (nothing to plan over, solver failure)");
	for (int i = 0; i < nj; i++) {
		fmt_u(job, sizeof(job), m->d->jobs[i].id);
		prom_sample_u64(p, l, 1, m->jobs[i].plan_failures);
	}

	/* The live plans: rate, bound, prediction, and per tree planned against measured. */
	static const char *const plan_m[][2] = {
		{ M("plan_rate_bytes_per_second"), "The live plan's aggregate rate" },
		{ M("plan_bound_bytes_per_second"),
		  "The packing bound over the topology the live plan was made on" },
		{ M("plan_bound_ratio"), "The live plan's rate as a fraction of the packing bound" },
		{ M("plan_predicted_seconds"), "The live plan's predicted AllReduce time" },
	};
	for (size_t k = 0; k < sizeof(plan_m) / sizeof(plan_m[0]); k++) {
		prom_family(p, plan_m[k][0], PROM_GAUGE, plan_m[k][1]);
		for (int i = 0; i < nj; i++) {
			const struct jobplan *jp = m->jobs[i].live;
			double rate, b;

			if (jp == NULL)
				continue;
			fmt_u(job, sizeof(job), m->d->jobs[i].id);
			fmt_u(epoch, sizeof(epoch), m->jobs[i].live_epoch);
			rate = plan_total_rate(jp->plan);
			b = jp->bound_gbps;
			if (k == 0)
				prom_sample(p, l, 2, GBPS_BYTES(rate));
			else if (k == 1 && b > 0)
				prom_sample(p, l, 2, GBPS_BYTES(b));
			else if (k == 2 && b > 0)
				prom_sample(p, l, 2, rate / b);
			else if (k == 3)
				prom_sample(p, l, 2, jp->plan->allreduce_seconds);
		}
	}
	for (int k = 0; k < 2; k++) {
		prom_family(p, k == 0 ? M("tree_planned_bytes_per_second")
				      : M("tree_measured_bytes_per_second"), PROM_GAUGE,
			    k == 0 ? "A live tree's planned rate"
				   : "A live tree's rate over the last heartbeat, the mean over "
				     "its link directions");
		for (int i = 0; i < nj; i++) {
			const struct job *j = &m->jobs[i];
			const struct jobplan *jp = j->live;

			for (int t = 0; jp != NULL && t < jp->plan->n_trees; t++) {
				struct prom_label tl[] = { { "job", job }, { "epoch", epoch },
					{ "tree", tree },
					{ "root", jp->topo->nodes[jp->plan->trees[t].root].id } };

				fmt_u(job, sizeof(job), m->d->jobs[i].id);
				fmt_u(epoch, sizeof(epoch), j->live_epoch);
				fmt_u(tree, sizeof(tree), (uint64_t)t);
				if (k == 0)
					prom_sample(p, tl, 4, GBPS_BYTES(jp->plan->trees[t].rate_gbps));
				else if (t < j->n_rates && j->rates[t].gbps >= 0)
					prom_sample(p, tl, 4, GBPS_BYTES(j->rates[t].gbps));
			}
		}
	}
}

static void
metrics_gateways(const struct dmn *m, struct prom *p)
{
	int64_t t = clock_now_ms();
	static const char *const gw_m[][3] = {
		{ M("gateway_up"), "g", "1 if the gateway answers its heartbeats" },
		{ M("gateway_heartbeats_missed"), "g", "Heartbeats the gateway missed in a row" },
		{ M("gateway_heartbeat_round_trip_seconds"), "g", "Round trip of the last ping" },
		{ M("gateway_since_heartbeat_seconds"), "g", "Time since the last heartbeat answered" },
		{ M("gateway_rx_bytes_per_second"), "g", "What the gateway received over the last heartbeat" },
		{ M("gateway_tx_bytes_per_second"), "g", "What the gateway sent over the last heartbeat" },
	};
	int up = 0;

	for (int v = 0; v < m->d->n_gateways; v++)
		up += m->gws[v].state == GW_UP;
	prom_family(p, M("gateways"), PROM_GAUGE, "Gateways of the deployment");
	prom_sample_u64(p, NULL, 0, (uint64_t)m->d->n_gateways);
	prom_family(p, M("gateways_up"), PROM_GAUGE, "Gateways that answer their heartbeats");
	prom_sample_u64(p, NULL, 0, (uint64_t)up);
	for (size_t k = 0; k < sizeof(gw_m) / sizeof(gw_m[0]); k++) {
		prom_family(p, gw_m[k][0], PROM_GAUGE, gw_m[k][2]);
		for (int v = 0; v < m->d->n_gateways; v++) {
			const struct gw *g = &m->gws[v];
			struct prom_label gl[] = { { "gateway", gw_name(m, v) },
				{ "site", node_id(m, m->d->gateways[v].node) } };

			if (k == 0)
				prom_sample(p, gl, 2, g->state == GW_UP);
			else if (k == 1)
				prom_sample_u64(p, gl, 2, (uint64_t)g->missed);
			else if (k == 2 && g->last_ok >= 0)
				prom_sample(p, gl, 2, g->rtt_ms / 1e3);
			else if (k == 3 && g->last_ok >= 0)
				prom_sample(p, gl, 2, (double)(t - g->last_ok) / 1e3);
			else if (k == 4 && g->rx_gbps >= 0)
				prom_sample(p, gl, 2, GBPS_BYTES(g->rx_gbps));
			else if (k == 5 && g->tx_gbps >= 0)
				prom_sample(p, gl, 2, GBPS_BYTES(g->tx_gbps));
		}
	}
}

static void
metrics_links(const struct dmn *m, struct prom *p)
{
	const struct topo *tp = m->d->topo;
	char link[2 * DEPLOY_NAME_MAX + 2];
	struct prom_label ll = { "link", link };
	int up = 0;
	static const char *const dir_m[][2] = {
		{ M("link_planned_bytes_per_second"),
		  "What the live trees and streams on the link direction are planned to carry" },
		{ M("link_measured_bytes_per_second"),
		  "What the sender handed to the link direction over the last heartbeat" },
		{ M("link_capacity_bytes_per_second"),
		  "The capacity plans use for the link direction (topology's or measured)" },
		{ M("link_round_trip_seconds"), "The sender's last probe round trip to the other end" },
		{ M("link_capacity_measured"),
		  "1 while plans use a measured capacity below the topology's" },
	};

	for (int l = 0; l < tp->n_links; l++)
		up += m->link[l].up;
	prom_family(p, M("links"), PROM_GAUGE, "Links of the topology");
	prom_sample_u64(p, NULL, 0, (uint64_t)tp->n_links);
	prom_family(p, M("links_up"), PROM_GAUGE, "Links that plans may use");
	prom_sample_u64(p, NULL, 0, (uint64_t)up);
	prom_family(p, M("link_up"), PROM_GAUGE, "1 if plans may use the link");
	for (int l = 0; l < tp->n_links; l++) {
		link_label(m, l, link, sizeof(link));
		prom_sample(p, &ll, 1, m->link[l].up);
	}
	for (size_t k = 0; k < sizeof(dir_m) / sizeof(dir_m[0]); k++) {
		prom_family(p, dir_m[k][0], PROM_GAUGE, dir_m[k][1]);
		for (int l = 0; l < tp->n_links; l++)
			for (int d = 0; d < 2; d++) {
				const struct lrate *r = &m->lr[2 * l + d];
				int v = d == 0 ? tp->links[l].a : tp->links[l].b;
				int u = d == 0 ? tp->links[l].b : tp->links[l].a;
				double nominal = d == 0 ? tp->links[l].gbps_ab : tp->links[l].gbps_ba;
				struct prom_label dl[] = { { "link", link },
							   { "from", node_id(m, v) },
							   { "to", node_id(m, u) } };

				link_label(m, l, link, sizeof(link));
				if (k == 0)
					prom_sample(p, dl, 3,
						    GBPS_BYTES(r->at >= 0 ? r->planned_gbps : 0.0));
				else if (k == 1 && r->gbps >= 0)
					prom_sample(p, dl, 3, GBPS_BYTES(r->gbps));
				else if (k == 2)
					prom_sample(p, dl, 3, GBPS_BYTES(r->measured_gbps > 0
									 ? r->measured_gbps
									 : nominal));
				else if (k == 3 && r->rtt_ms > 0)
					prom_sample(p, dl, 3, r->rtt_ms / 1e3);
				else if (k == 4)
					prom_sample(p, dl, 3, r->measured_gbps > 0);
			}
	}
}

/* The exposition, rendered on the daemon's thread when a scrape comes (promsrv_run()). */
static char *
metrics_render(void *arg, size_t *len)
{
	const struct dmn *m = arg;
	struct prom p;
	char *text;
	int err = 0;

	prom_init(&p);
	prom_family(&p, M("uptime_seconds"), PROM_GAUGE, "Time since the daemon started");
	prom_sample(&p, NULL, 0, (double)(clock_now_ms() - m->started) / 1e3);
	prom_family(&p, M("heartbeats_total"), PROM_COUNTER, "Rounds of heartbeats to the gateways");
	prom_sample_u64(&p, NULL, 0, m->heartbeats);
	metrics_jobs(m, &p);
	metrics_gateways(m, &p);
	metrics_links(m, &p);
	prom_family(&p, M("metrics_scrapes_total"), PROM_COUNTER,
		    "Scrapes of this endpoint answered before this one");
	prom_sample_u64(&p, NULL, 0, m->msrv != NULL ? promsrv_scrapes(m->msrv) : 0);
	text = prom_finish(&p, len, &err);
	if (text == NULL)
		control_log("metrics: %s", p.why);
	prom_free(&p);
	return text;
}

static void
metrics_log(void *arg, const char *line)
{
	(void)arg;
	control_log("metrics: %s", line);
}

/* --metrics: the endpoint, and one descriptor for poll() that is readable on a signal or
 * when the endpoint has work. */
static int
metrics_setup(struct dmn *m)
{
	struct promsrv_opts mo = {
		.listen = m->o->metrics,
		.render = metrics_render,
		.arg = m,
		.log = metrics_log,
	};
	struct epoll_event ev = { .events = EPOLLIN };
	char err[256];
	int rc;

	if (m->o->metrics == NULL)
		return 0;
	m->msrv = promsrv_create(&mo, err, sizeof(err));
	if (m->msrv == NULL) {
		control_log("cannot start: %s", err);
		return -EADDRINUSE;
	}
	m->wfd = epoll_create1(EPOLL_CLOEXEC);
	if (m->wfd < 0 || epoll_ctl(m->wfd, EPOLL_CTL_ADD, m->sfd, &ev) != 0 ||
	    epoll_ctl(m->wfd, EPOLL_CTL_ADD, promsrv_fd(m->msrv), &ev) != 0) {
		rc = -errno;
		control_log("cannot start: metrics: epoll: %s", strerror(-rc));
		return rc;
	}
	control_log("metrics on http://%s/metrics", m->o->metrics);
	return 0;
}

/* ---- workers joining through the control process ---------------------------------- */

/* The index of worker id w in job i, or -1. */
static int
worker_index(const struct dmn *m, int i, uint32_t w)
{
	const struct deploy_job *dj = &m->d->jobs[i];

	for (int k = 0; k < dj->n_workers; k++)
		if (dj->workers[k].w.id == w)
			return k;
	return -1;
}

/* Job i's live table for its worker k: its site's gateway's (with several, the one of
 * them whose table the site's workers read: jobplan.site_table), or NULL (no live epoch,
 * or one without that worker's site). */
static const struct table *
worker_table(const struct dmn *m, int i, int k)
{
	const struct jobplan *jp = m->jobs[i].live;
	int v = m->d->jobs[i].workers[k].node;

	return jp != NULL && v >= 0 && v < jp->n_nodes && jp->site_table[v] >= 0
		       ? jp->tables[jp->site_table[v]] : NULL;
}

/* The answer to a worker's request: its table if the live epoch is not `after` (or
 * has_after is false); else {"changed": false}. NULL with *errnum when nothing fits. */
static json_t *
worker_answer(const struct dmn *m, uint32_t id, int i, int k, bool has_after, uint32_t after)
{
	const struct table *tb = worker_table(m, i, k);
	const struct job *j = &m->jobs[i];
	json_t *r;

	if (tb != NULL && (!has_after || j->live_epoch != after)) {
		r = ctl_reply_ok(id);
		json_object_set_new(r, "job", json_integer(m->d->jobs[i].id));
		json_object_set_new(r, "epoch", json_integer(j->live_epoch));
		json_object_set_new(r, "gateway",
				    json_string(gw_name(m, j->live->site_table[m->d->jobs[i]
										  .workers[k].node])));
		/* A worker gets its gateway's table without the link keys. */
		json_object_set_new(r, "table", table_to_json_public(tb));
		return r;
	}
	if (has_after) {
		r = ctl_reply_ok(id);
		json_object_set_new(r, "job", json_integer(m->d->jobs[i].id));
		json_object_set_new(r, "epoch", tb != NULL ? json_integer(j->live_epoch)
							   : json_null());
		json_object_set_new(r, "changed", json_false());
		return r;
	}
	return ctl_reply_error(true, id, EAGAIN, "job %u has no live epoch through the gateway "
			       "of worker %u (%s) yet", m->d->jobs[i].id,
			       m->d->jobs[i].workers[k].w.id,
			       node_id(m, m->d->jobs[i].workers[k].node));
}

/* Answer the long polls whose epoch came or whose time is up. */
static void
waiters_service(struct dmn *m)
{
	int64_t t = clock_now_ms();

	for (int n = m->n_waiters - 1; n >= 0; n--) {
		struct waiter *w = &m->waiters[n];
		const struct table *tb = worker_table(m, w->job, w->worker);
		bool due = tb != NULL && m->jobs[w->job].live_epoch != w->after;

		if (!due && t < w->deadline)
			continue;
		ctlsrv_reply(m->srv, &w->ref, worker_answer(m, w->id, w->job, w->worker, true,
							    w->after));
		m->waiters[n] = m->waiters[--m->n_waiters];
	}
}

/* The ms until the first long poll's deadline, or -1. */
static int64_t
waiters_next_ms(const struct dmn *m)
{
	int64_t next = -1, t = clock_now_ms();

	for (int n = 0; n < m->n_waiters; n++) {
		int64_t left = m->waiters[n].deadline - t;

		if (next < 0 || left < next)
			next = left < 0 ? 0 : left;
	}
	return next;
}

/*
 * "worker": {job, worker, after?, wait_ms?}. A worker's certificate must name it
 * ("worker-ID") and the deployment must list it in that job. Without `after`: the table
 * of its gateway in the live epoch. With `after`: that table once the live epoch is
 * another, waiting up to wait_ms (a long poll), else {"changed": false}.
 */
static json_t *
op_worker(struct dmn *m, struct ctlsrv_client *cl, const json_t *req, uint32_t id)
{
	char err[CTL_ERR_MAX], name[32];
	uint32_t job = 0, wid = 0, after = 0, wait_ms = 0;
	int i, k;

	if (ctl_args_unpack(req, err, sizeof(err), "{s:u,s:u,s?u,s?u}", "job", &job, "worker",
			    &wid, "after", &after, "wait_ms", &wait_ms) != 0)
		return ctl_reply_error(true, id, EINVAL, "%s", err);
	if (wait_ms > DAEMON_WAIT_MS_MAX)
		return ctl_reply_error(true, id, EINVAL, "field 'wait_ms': at most %d",
				       DAEMON_WAIT_MS_MAX);
	snprintf(name, sizeof(name), "worker-%u", wid);
	if (ctlsrv_client_role(cl) == CTLTLS_ROLE_WORKER && !ctlsrv_client_named(cl, name)) {
		ctlsrv_refuse(m->srv, cl, CTLSRV_REF_FORBIDDEN, "the certificate does not name "
			      "%s", name);
		return ctl_reply_error(true, id, EPERM, "field 'worker': this certificate does "
				       "not name %s", name);
	}
	for (i = 0; i < m->d->n_jobs && m->d->jobs[i].id != job; i++)
		;
	k = i < m->d->n_jobs ? worker_index(m, i, wid) : -1;
	if (k < 0) {
		ctlsrv_refuse(m->srv, cl, CTLSRV_REF_FORBIDDEN, "the deployment has no worker %u "
			      "in job %u", wid, job);
		return ctl_reply_error(true, id, ENOENT, i < m->d->n_jobs
				       ? "field 'worker': job %u has no worker %u"
				       : "field 'job': no job %u (worker %u)", job, wid);
	}
	bool has_after = json_object_get(req, "after") != NULL;
	const struct table *tb = worker_table(m, i, k);

	if (has_after && wait_ms > 0 && (tb == NULL || m->jobs[i].live_epoch == after) &&
	    m->n_waiters < DAEMON_WAITERS_MAX) {
		struct waiter *w = &m->waiters[m->n_waiters++];

		ctlsrv_defer(cl, &w->ref);
		w->id = id;
		w->job = i;
		w->worker = k;
		w->after = after;
		w->deadline = clock_now_ms() + wait_ms;
		return NULL;
	}
	return worker_answer(m, id, i, k, has_after, after);
}

/* ---- the daemon's own API ------------------------------------------------------------ */

/* Whether role may call op: a worker joins, a monitor reads, control and the unix
 * socket may do everything. */
static bool
role_may(enum ctltls_role role, const char *op)
{
	bool reads = strcmp(op, "ping") == 0 || strcmp(op, "version") == 0 ||
		     strcmp(op, "status") == 0;

	switch (role) {
	case CTLTLS_ROLE_WORKER:
		return strcmp(op, "ping") == 0 || strcmp(op, "version") == 0 ||
		       strcmp(op, "worker") == 0;
	case CTLTLS_ROLE_MONITOR:
		return reads;
	default:
		return true;
	}
}

static json_t *
handle(void *arg, struct ctlsrv_client *cl, const json_t *req)
{
	struct dmn *m = arg;
	char err[CTL_ERR_MAX];
	const char *op = NULL;
	uint32_t id = 0, job = 0;
	json_t *r;
	int rc = ctl_request_check(req, &id, &op, err, sizeof(err));

	if (rc != 0) {
		bool has_id = ctl_request_id(req, &id);

		return ctl_reply_error(has_id, id, -rc, "%s", err);
	}
	if (!role_may(ctlsrv_client_role(cl), op)) {
		ctlsrv_refuse(m->srv, cl, CTLSRV_REF_FORBIDDEN, "op '%s' is not for the role '%s'",
			      op, ctltls_role_name(ctlsrv_client_role(cl)));
		return ctl_reply_error(true, id, EPERM, "field 'op': '%s' is not for a "
				       "certificate of role '%s'", op,
				       ctltls_role_name(ctlsrv_client_role(cl)));
	}
	if (strcmp(op, "ping") == 0 || strcmp(op, "version") == 0 || strcmp(op, "status") == 0) {
		json_t *res = strcmp(op, "status") == 0 ? status_json(m) :
			      strcmp(op, "version") == 0 ?
			      json_pack("{s:s,s:i}", "program", PROG, "protocol",
					CTL_PROTOCOL_VERSION) : json_object();

		rc = ctl_args_unpack(req, err, sizeof(err), "{}");
		r = rc == 0 ? ctl_reply_ok(id) : ctl_reply_error(true, id, EINVAL, "%s", err);
		if (rc == 0 && r != NULL)
			json_object_update(r, res);
		json_decref(res);
		return r;
	}
	if (strcmp(op, "worker") == 0)
		return op_worker(m, cl, req, id);
	if (strcmp(op, "replan") == 0) {
		bool one = json_object_get(req, "job") != NULL;

		if (ctl_args_unpack(req, err, sizeof(err), "{s?u}", "job", &job) != 0)
			return ctl_reply_error(true, id, EINVAL, "%s", err);
		r = json_array();
		for (int i = 0; i < m->d->n_jobs; i++) {
			if (one && m->d->jobs[i].id != job)
				continue;
			m->jobs[i].dirty = true;
			m->jobs[i].cause = CAUSE_REQUESTED;
			snprintf(m->jobs[i].reason, sizeof(m->jobs[i].reason), "replan requested");
			json_array_append_new(r, json_integer(m->d->jobs[i].id));
		}
		if (json_array_size(r) == 0) {
			json_decref(r);
			return ctl_reply_error(true, id, ENOENT, "field 'job': no job %u", job);
		}
		json_t *ok = ctl_reply_ok(id);

		json_object_set_new(ok, "jobs", r);
		return ok;
	}
	return ctl_reply_error(true, id, EOPNOTSUPP, "field 'op': unknown op '%s'", op);
}

static void
api_log(void *arg, const char *line)
{
	(void)arg;
	control_log("%s", line);
}

/* Wait for clients or a signal until deadline (monotonic ms), serving what comes. */
static void
wait_until(struct dmn *m, int64_t deadline)
{
	int64_t left;

	waiters_service(m); /* epochs installed since the last round */
	while (!m->stop && (left = deadline - clock_now_ms()) > 0) {
		int64_t w = waiters_next_ms(m);
		int ready;

		if (w >= 0 && w < left)
			left = w;
		if (m->msrv != NULL && (w = promsrv_timeout_ms(m->msrv)) >= 0 && w < left)
			left = w;
		/* With --metrics, m->wfd: the signalfd or the endpoint is readable. */
		ready = ctlsrv_poll(m->srv, (int)left, m->msrv != NULL ? m->wfd : m->sfd);
		if (m->msrv != NULL)
			promsrv_run(m->msrv);
		if (ready == 1) {
			struct signalfd_siginfo si;

			if (read(m->sfd, &si, sizeof(si)) == (ssize_t)sizeof(si)) {
				control_log("stopping on %s", strsignal((int)si.ssi_signo));
				m->stop = true;
				return;
			}
			if (m->msrv == NULL) { /* readable and nothing to read: stop all the same */
				m->stop = true;
				return;
			}
		}
		install_due(m); /* a replan request */
		waiters_service(m);
	}
}

/* ---- start and stop ------------------------------------------------------------------ */

/* The TLS contexts of the deployment, the gateways' certificates expected, and the API. */
static int
api_setup(struct dmn *m)
{
	const struct deploy_tls *t = &m->d->tls;
	const char *listen = m->o->listen != NULL ? m->o->listen
				: t->listen[0] != '\0' ? t->listen : NULL;
	char err[CTL_ERR_MAX];
	struct ctlsrv_opts so = {
		.unix_path = m->o->socket,
		.roles = 1u << CTLTLS_ROLE_CONTROL | 1u << CTLTLS_ROLE_MONITOR |
			 1u << CTLTLS_ROLE_WORKER,
		.max_per_role = CTLSRV_PER_ROLE_DEFAULT,
		.role_max = { [CTLTLS_ROLE_WORKER] = DAEMON_WAITERS_MAX },
		.max_handshakes = CTLSRV_HANDSHAKES_DEFAULT,
		.handshake_ms = CTLSRV_HANDSHAKE_MS_DEFAULT,
		.idle_ms = CTLSRV_IDLE_MS_DEFAULT,
		.handle = handle,
		.log = api_log,
		.arg = m,
	};

	m->waiters = calloc(DAEMON_WAITERS_MAX, sizeof(*m->waiters));
	if (m->waiters == NULL) {
		control_log("cannot start: out of memory");
		return -ENOMEM;
	}
	if (t->on) {
		m->tls_client = ctltls_ctx_new(false, t->cert, t->key, t->ca, err, sizeof(err));
		if (m->tls_client == NULL) {
			control_log("cannot start: tls: %s", err);
			return -EINVAL;
		}
		for (int v = 0; v < m->d->n_gateways; v++)
			install_gw_tls(&m->gws[v].conn, m->tls_client, gw_name(m, v),
				       CTLTLS_ROLE_GATEWAY);
	}
	if (listen != NULL) {
		if (!t->on) {
			control_log("cannot start: --listen %s needs the deployment's \"tls\"",
				    listen);
			return -EINVAL;
		}
		m->tls_server = ctltls_ctx_new(true, t->cert, t->key, t->ca, err, sizeof(err));
		if (m->tls_server == NULL) {
			control_log("cannot start: tls: %s", err);
			return -EINVAL;
		}
		so.tls_listen = listen;
		so.tls = m->tls_server;
	}
	m->srv = ctlsrv_create(&so, err, sizeof(err));
	if (m->srv == NULL) {
		control_log("cannot listen: %s", err);
		return -EADDRINUSE;
	}
	if (listen != NULL)
		control_log("API over TLS on %s", listen);
	return 0;
}

static int
setup(struct dmn *m, sigset_t *old)
{
	sigset_t set;
	int n = m->d->n_gateways, rc;

	m->gws = calloc((size_t)n, sizeof(*m->gws));
	m->jobs = calloc((size_t)m->d->n_jobs, sizeof(*m->jobs));
	m->link = calloc((size_t)m->d->topo->n_links + 1, sizeof(*m->link));
	m->lr = calloc(2 * (size_t)m->d->topo->n_links + 1, sizeof(*m->lr));
	if (m->gws == NULL || m->jobs == NULL || m->link == NULL || m->lr == NULL) {
		control_log("cannot start: out of memory");
		return -ENOMEM;
	}
	for (int v = 0; v < n; v++) {
		m->gws[v].live = calloc((size_t)m->d->n_jobs, sizeof(*m->gws[v].live));
		if (m->gws[v].live == NULL) {
			control_log("cannot start: out of memory");
			return -ENOMEM;
		}
		install_gw_init(&m->gws[v].conn, gw_name(m, v), m->d->gateways[v].socket);
		m->gws[v].last_ok = -1;
		m->gws[v].sample_at = -1;
		m->gws[v].rx_gbps = m->gws[v].tx_gbps = -1;
		m->gws[v].drops_per_s = -1;
	}
	for (int l = 0; l < m->d->topo->n_links; l++) {
		m->link[l].up = true;
		lrate_forget(m, l); /* nothing measured yet */
	}
	for (int i = 0; i < m->d->n_jobs; i++)
		m->jobs[i].next_epoch = 1;
	mark_all_dirty(m, CAUSE_START, "start");
	sigemptyset(&set);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGTERM);
	if (sigprocmask(SIG_BLOCK, &set, old) != 0 ||
	    (m->sfd = signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC)) < 0) {
		rc = -errno;
		control_log("cannot start: signals: %s", strerror(-rc));
		return rc;
	}
	rc = api_setup(m);
	return rc == 0 ? metrics_setup(m) : rc;
}

int
daemon_run(const struct deploy *d, const struct daemon_opts *o)
{
	struct dmn m = { .d = d, .o = o, .sfd = -1, .wfd = -1, .started = clock_now_ms() };
	sigset_t old;
	int rc;

	sigprocmask(SIG_BLOCK, NULL, &old);
	rc = setup(&m, &old);

	if (rc == 0) {
		control_log("started: deployment %s, topology %s (%d sites), %d job%s, heartbeat "
			    "%d ms, failed after %d missed, socket %s", d->path, d->topo->name,
			    d->topo->n_nodes, d->n_jobs, d->n_jobs == 1 ? "" : "s",
			    o->heartbeat_ms, o->fail_after, o->socket);
		while (!m.stop) {
			int64_t next = clock_now_ms() + o->heartbeat_ms;

			heartbeat_all(&m);
			m.heartbeats++;
			links_update(&m);
			rates_update(&m);
			tree_rates_update(&m);
			for (int i = 0; i < d->n_jobs; i++)
				if (m.jobs[i].retry_in > 0 && --m.jobs[i].retry_in == 0)
					m.jobs[i].dirty = true;
			install_due(&m);
			wait_until(&m, next);
		}
		control_log("stopped; the dataplanes keep their live epochs");
	}
	ctlsrv_free(m.srv);
	promsrv_free(m.msrv);
	if (m.wfd >= 0)
		close(m.wfd);
	free(m.waiters);
	if (m.sfd >= 0)
		close(m.sfd);
	for (int v = 0; m.gws != NULL && v < d->n_gateways; v++) {
		install_gw_close(&m.gws[v].conn);
		for (int i = 0; m.gws[v].live != NULL && i < d->n_jobs; i++)
			json_decref(m.gws[v].live[i]);
		free(m.gws[v].live);
		json_decref(m.gws[v].peers);
		json_decref(m.gws[v].jobs);
		json_decref(m.gws[v].drops);
	}
	free(m.link);
	free(m.lr);
	for (int i = 0; m.jobs != NULL && i < d->n_jobs; i++) {
		jobplan_free(m.jobs[i].live);
		free(m.jobs[i].rates);
	}
	free(m.jobs);
	free(m.gws);
	ctltls_ctx_free(m.tls_client);
	ctltls_ctx_free(m.tls_server);
	sigprocmask(SIG_SETMASK, &old, NULL);
	return rc;
}
