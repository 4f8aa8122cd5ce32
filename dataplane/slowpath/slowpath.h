/* SPDX-License-Identifier: BSD-3-Clause
 *
 * Slow path of the dataplane: everything the control thread (the EAL main lcore) does.
 * Nothing here may be called from a worker lcore: these functions allocate, block (RCU
 * grace periods) and log.
 */
#ifndef GEOREDUCE_DP_SLOWPATH_H
#define GEOREDUCE_DP_SLOWPATH_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>
#include <rte_log.h>

#include "dp.h"

#define DP_PROGRAM "georeduce-dataplane"
#define DP_VERSION GEOREDUCE_VERSION /* meson.build's project version */

/** The dataplane's log type ("georeduce.dataplane": --log-level=georeduce.dataplane:debug). */
extern int dp_logtype;
/** Log from the control thread: DP_LOG(INFO, "job %u live\n", job). */
#define DP_LOG(level, ...) rte_log(RTE_LOG_##level, dp_logtype, DP_PROGRAM ": " __VA_ARGS__)

/** Address of one port (--addr PORT:IP/LEN[,GW], --nat-addr PORT:IP). */
struct dp_port_addr {
	uint32_t ipv4; /* host order; 0: not given */
	uint8_t prefix_len;
	uint32_t gw_ipv4;  /* 0: none */
	uint32_t nat_ipv4; /* the address a NAT gives the port towards the peers; 0: none */
};

/** A static neighbour (--neigh IP=MAC). */
struct dp_static_neigh {
	uint32_t ipv4;
	struct rte_ether_addr mac;
};

/**
 * The value of --fault, "PORT,rx|tx,KEY=VALUE,..." (docs/DATAPLANE.md, "Fault injection"),
 * into *f with its port and direction; tsc_hz converts delay_ms (0 before EAL starts:
 * the value is then only checked). 0, or -1 with the reason in err (without the option's
 * name, which the caller puts first).
 */
int dp_fault_parse(const char *s, double tsc_hz, unsigned int *port, int *dir, struct dp_fault *f,
		   char *err, size_t errlen);

/** Everything dp_setup() needs. */
struct dp_config {
	struct dp_params prm;
	unsigned int n_lcores; /* worker lcores, 1 .. DP_LCORES_MAX */
	unsigned int lcore_ids[DP_LCORES_MAX];
	unsigned int n_ports; /* ethdev ports used: 0 .. n_ports - 1 */
	uint16_t port_ids[DP_PORTS_MAX];
	struct dp_port_addr addr[DP_PORTS_MAX];
	unsigned int n_neigh;
	struct dp_static_neigh neigh[64];
	unsigned int n_routes;
	struct dp_route routes[DP_ROUTES_MAX];  /* --route; via 0 with port set, or via set */
	struct dp_fault fault[DP_PORTS_MAX][2]; /* --fault, by port index and enum dp_dir */
	uint16_t rx_desc, tx_desc;
	uint32_t rto_init_ms, rto_min_ms, rto_max_ms; /* loss recovery towards the parent */
	uint8_t retries_max;
	uint32_t hdr_mbufs;  /* header and clone mbufs per socket */
	char crypto_dev[64]; /* --crypto: a cryptodev vdev; "": none */
	bool crypto_ops;     /* --crypto-ops: operations even where the device offers CPU
			      * crypto */
	uint32_t seal_mbufs; /* sealed frames in flight at most */
	uint32_t seal_links; /* protected links of all tables at most */
};

/** Defaults of every option (the --help text shows them). */
void dp_config_defaults(struct dp_config *cfg);

/**
 * Data room of a packet mbuf at an IP MTU: one frame of the MTU (Ethernet header and CRC:
 * mtu + 18) and 64 bytes more, rounded up to 1 KiB, at least DPDK's default of 2048:
 * 2048 at MTU 1500, 9216 at 9000. The 64 bytes let a kernel-socket port (net_af_packet,
 * whose ring frames hold 66 bytes of their own header before the Ethernet frame) run with
 * ring frames of the data room's size (docs/DATAPLANE.md, "Jumbo frames").
 */
uint32_t dp_mbuf_room(unsigned int mtu);

/** The name of an enum dp_idle_mode (--idle, stats): "poll", "sleep", "intr". */
const char *dp_idle_mode_name(unsigned int mode);

/** Parse an --idle mode name: 0, or -1 for a name that is none. */
int dp_idle_mode_parse(const char *s, uint8_t *mode);

/**
 * Configure and start the ports, create the mempools (one set per NUMA socket of the
 * worker lcores), the per-lcore contexts, rings and the RCU variable. After rte_eal_init().
 * Returns 0, or a negative errno with a one-line message in err.
 */
int dp_setup(struct dp *dp, const struct dp_config *cfg, char *err, size_t errlen);

/** Stop and close the ports, free everything dp_setup() and the jobs allocated. Workers
 * must have stopped. */
void dp_teardown(struct dp *dp);

/** Wake worker lcore idx if it waits for an Rx interrupt (lcore/loop.c): after frames were
 * queued for it to send, and at stop. Nothing for lcores that poll or sleep. */
void dp_lcore_wake(struct dp *dp, unsigned int idx);

/* --- Protected links (slowpath/crypto.c) ------------------------------------------------- */

/**
 * The cryptodev of --crypto: create the vdev unless EAL has it already, one queue pair per
 * worker lcore, the session, operation and sealed-frame pools on the lcores' socket.
 * Nothing without --crypto. 0, or a negative errno with err.
 */
int dp_crypto_setup(struct dp *dp, const struct dp_config *cfg, char *err, size_t errlen);

/** Stop the cryptodev and free its pools (after every job is freed). */
void dp_crypto_teardown(struct dp *dp);

/**
 * The protected links of job j's table: two sessions per key, the per-lcore sequence
 * numbers and replay windows. 0, or -1 with errno (EINVAL: no --crypto; E2BIG: sessions
 * exhausted; ENOMEM) and err naming the field.
 */
int dp_job_seals_create(struct dp *dp, struct dp_job *j, int socket, char *err, size_t errlen);

/** Free what dp_job_seals_create() made (the sessions back to the pool). */
void dp_job_seals_free(struct dp *dp, struct dp_job *j);

/** The protected link of job j to gateway peer, or NULL. */
const struct dp_seal *dp_job_seal(const struct dp_job *j, uint16_t peer);

/* --- Tables (slowpath/state.c) ------------------------------------------------------------ */

/**
 * Validate a georeduce-table/1 object strictly and build its runtime form, staged for its
 * (job, epoch) but not live, with the job's `membership` (0: not named; docs/CONTROL.md,
 * `prepare`). 0 with *job and *epoch set, or a negative errno (-EINVAL bad table, -E2BIG
 * over limits, -EEXIST that epoch live or staged, -ESTALE older than the live epoch,
 * -ENOMEM) with a one-line message naming the field.
 */
int dp_prepare(struct dp *dp, const json_t *table, uint32_t membership, uint32_t *job,
	       uint32_t *epoch, char *err, size_t errlen);

/**
 * Make the staged (job, epoch) live: publish it (the previous live epoch drains), wait for
 * an RCU grace period so that every worker uses it, then return. 0, or -ENOENT.
 */
int dp_activate(struct dp *dp, uint32_t job, uint32_t epoch, char *err, size_t errlen);

/** Retire every epoch of a job (open slots drain first). 0, or -ENOENT. */
int dp_remove(struct dp *dp, uint32_t job, char *err, size_t errlen);

/**
 * Periodic work: neighbour learning from the workers' rings, ARP requests for unresolved
 * neighbours (every second), retirement of drained epochs (free after a grace period).
 * Call often (every few ms) from the control thread.
 */
void dp_housekeeping(struct dp *dp);

/**
 * Take in what the workers learnt (PROBE_REPLYs among it), so that a `stats` reply
 * answered after the control thread was busy does not report replies that came meanwhile
 * as silence. Control thread only.
 */
void dp_peers_update(struct dp *dp);

/** Retire and free every job at once (shutdown; workers stopped). */
void dp_jobs_free_all(struct dp *dp);

/**
 * Replace the gateways this dataplane probes (the control socket's "peers"): a JSON array
 * of {"ipv4", "base_port", "ports"}. 0, or -EINVAL / -E2BIG with err naming the field.
 */
int dp_peers_set(struct dp *dp, const json_t *peers, char *err, size_t errlen);

/** Set a neighbour's MAC (ARP learning or static configuration). */
void dp_neigh_set(struct dp *dp, int idx, const struct rte_ether_addr *mac, bool is_static);

/* --- Destinations of a table: routes and neighbour entries (slowpath/job.c) --------------- */

/** The mac word ARP showed for (ipv4, port index) before any neighbour entry had it
 * (struct dp_seen), or 0. */
uint64_t dp_seen_mac(const struct dp *dp, uint32_t ipv4, uint16_t port);

/** The neighbour entry of (ipv4, port index), added if new (resolved if ARP showed the
 * address before, dp_seen_mac(), else unresolved); index or -E2BIG. */
int dp_neigh_get(struct dp *dp, uint32_t ipv4, uint16_t port);

/** Route d (ipv4 set) to a port and a neighbour entry; -1 with errno and err on failure. */
int dp_dest_route(struct dp *dp, struct dp_dest *d, const char *field, char *err, size_t errlen);

/* --- Reports (slowpath/stats.c) ----------------------------------------------------------- */

/** Counters, memory, ports, neighbours and jobs as a JSON object (the "stats" reply). */
json_t *dp_stats_json(struct dp *dp);

/** Installed tables with their state ("live", "draining", "prepared"); job 0: all. */
json_t *dp_dump_json(struct dp *dp, uint32_t job, bool all);

/** The counters, memory, jobs and peers in the Prometheus text format (docs/METRICS.md),
 * malloc'd, *len bytes; NULL (logged) on failure. Control thread only: --metrics. */
char *dp_metrics_text(struct dp *dp, size_t *len);

/** Register the /georeduce/... telemetry commands (dpdk-telemetry.py). */
int dp_telemetry_register(struct dp *dp);

/* --- Leadership terms (slowpath/term.c) ----------------------------------------------------- */

/**
 * Where the newest term seen is kept (path; NULL: socket + ".term"; "none": nowhere), and
 * that term read into dp->ctl_term if the file exists. A file that holds no term is an
 * error (err says which), as a deposed leader could otherwise change this gateway.
 *
 * @return  0 or a negative errno.
 */
int dp_term_load(struct dp *dp, const char *path, const char *socket, char *err, size_t errlen);

/**
 * Record a newer term in the file (replaced whole, synced) before it is acted on. 0 when
 * kept (or no file is kept), else a negative errno with err.
 */
int dp_term_keep(struct dp *dp, int64_t term, char *err, size_t errlen);

/* --- Control socket (slowpath/ctl.c) ------------------------------------------------------ */

struct dp_ctl;

/** Where and how the control protocol is served (docs/CONTROL.md, "Transport"). */
struct dp_ctl_opts {
	const char *socket;          /* the unix socket */
	const char *listen;          /* the management address "HOST:PORT" for TLS, or NULL */
	const char *cert, *key, *ca; /* PEM files, required with listen */
	const char *crl;             /* the CA's CRL (PEM), or NULL */
	int handshake_ms;            /* a TLS handshake's limit */
	int idle_ms;                 /* a connection without requests is closed after it */
	int conns;                   /* connections per role (and on the unix socket) */
	const char *term_file;       /* where the newest term is kept: "none" (memory only),
				      * or NULL for the socket's path + ".term" */
};

/** Listen as o says (see lib/ctlsrv.h). NULL with err on failure. */
struct dp_ctl *dp_ctl_create(struct dp *dp, const struct dp_ctl_opts *o, char *err, size_t errlen);

/**
 * Read the TLS files again (on SIGHUP or the `reload_tls` op): new connections use them,
 * open ones keep their session. Logged either way; a file that does not load leaves the
 * old ones in use. msg (if not NULL) receives the log line's text.
 *
 * @return  0, -ENOENT (no --ctl-listen) or -EINVAL (a file did not load).
 */
int dp_ctl_reload_tls(struct dp_ctl *c, char *msg, size_t msglen);

/** Serve the control socket for up to timeout_ms: accept, read, answer requests. */
void dp_ctl_poll(struct dp_ctl *c, int timeout_ms);

/** Handle one request object and return the reply (new reference). For the socket and
 * for tests. */
json_t *dp_ctl_handle(struct dp *dp, const json_t *req);

/** Close every connection and the socket, unlink its path. */
void dp_ctl_free(struct dp_ctl *c);

#endif
