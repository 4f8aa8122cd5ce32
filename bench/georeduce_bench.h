/* SPDX-License-Identifier: BSD-3-Clause
 *
 * georeduce-bench (georeduce_bench.c describes the program): the types its files share,
 * the options and the phases measured. The main lcore, before and after the generator runs.
 */
#ifndef GEOREDUCE_BENCH_GEOREDUCE_BENCH_H
#define GEOREDUCE_BENCH_GEOREDUCE_BENCH_H

#include <stdbool.h>
#include <stdint.h>

#include "gen.h"
#include "cert_rates.h"
#include "wire.h"

#define PROG "georeduce-bench"
/* The exit status when a RESULT's sum was wrong (1: lost, 2: usage, CLI_EXIT_*). */
#define EXIT_WRONG_SUM 3

/* The most --dp-fault options (one per direction of ring mode's port). */
#define DP_FAULTS_MAX 2

/* The most --latency-at shares of the NDR. */
#define SEARCH_LAT_MAX 8

enum mode {
	MODE_RING,
	MODE_PORT
};

struct opts {
	enum mode mode;
	enum gen_peer peer; /* port mode */
	const char *table;  /* port mode */
	uint16_t port;      /* port mode */
	bool gw_mac_set;
	uint8_t gw_mac[6];
	unsigned int payload, fanin; /* ring mode */
	enum wire_dtype dtype;       /* ring mode */
	unsigned int mtu;            /* ring mode: the dataplane's; 0: by payload */
	unsigned int window, burst, verify_every, rto_ms;
	unsigned int rounds;                 /* rounds per chunk; 0: --duration */
	const char *dp_fault[DP_FAULTS_MAX]; /* ring: the dataplane's --fault values */
	unsigned int n_dp_fault;
	uint32_t dp_fault_seed; /* ring: the dataplane's --fault-seed */
	double rate_gbps, duration, warmup;
	double line_gbps;  /* the port's line rate; 0: read it from the port */
	double pace_burst; /* the pacer's burst in bytes */
	bool baseline, json, csv, quiet;
	bool search;                    /* NDR/PDR search */
	unsigned int retries;           /* a trial short of its rate without a loss runs again */
	double lat_pct[SEARCH_LAT_MAX]; /* after the search, trials at these % of the NDR */
	unsigned int n_lat;
	const char *gw_socket;                         /* port mode: the gateway's control socket */
	const char *json_file;                         /* --json=FILE */
	const char *out_dir;                           /* --out DIR */
	double pdr_pct, resolution_pct, tolerance_pct; /* ... its loss, step, rate tolerance */
};

/* The gateway's drop counters the report gives by name (gw_drop_name()): four of its
 * counters, then its drops by reason (wire_reason_str(), index 0 unused). */
#define GW_DROP_CTRS 4
#define GW_DROPS (GW_DROP_CTRS + WIRE_REASON_COUNT_MAX)

/* Counters of the lcore that answers the generator (ring mode). */
struct peer_snap {
	uint64_t rx, tx, busy, drops;
	uint64_t why[GW_DROPS]; /* the dataplane's drops by counter and reason */
};

/* The bench's port's counters that tell where frames went missing (rte_eth_stats). */
struct port_snap {
	uint64_t ipackets, opackets, imissed, rx_nombuf, ierrors, oerrors;
};

/* One measured phase: the dataplane, or the io-forward baseline. */
struct phase {
	const char *name;
	bool ran;
	struct gen_result res;
	unsigned int gen_lcore;
	bool has_peer;
	unsigned int peer_lcore;
	struct peer_snap peer[2]; /* at the start and the end of the measurement */
	uint16_t port;            /* the generator's port */
	struct port_snap xs[2];   /* its counters at the start and the end of the measurement */
	bool gw_read;             /* port mode: peer[].why read over --gw-socket around it */
	double line_gbps;         /* the line rate the percentages use; 0: unknown */
	const char *line_from;    /* "port", "--line-gbps" or "unknown" */
	struct rates off, rcv;    /* offered and received, L1/L2/payload (cert_rates.h) */
	/* Frames not answered: sent again with RETX from the measurement's start to the end
	 * of the drain, less those whose first copy was answered after all (a second answer
	 * came), plus one per worker of every round still open then; over the frames sent
	 * first in that time. */
	uint64_t lost_frames, first_sends;
	double loss_ratio;
	/* Derived. */
	double secs, offered_gbps, offered_wire_gbps, offered_mpps, achieved_gbps, achieved_mpps;
	double chunks_s, p50_us, p99_us, p999_us, max_us, gen_busy, peer_busy;
	double peer_mpps_in;
	double c2c_ns; /* cache-line round trip generator <-> peer lcore */
	uint64_t lost, retx, timeouts, refused, duplicates, stale, unexpected, verified, bad;
	uint64_t wrong;      /* RESULTs unlike the exact sum, over the whole run */
	bool corrupted_read; /* ring mode's dataplane phase: corrupted was read */
	uint64_t corrupted;  /* ... frames its fault injection corrupted, over the run */
};

struct gen_lcore;

/**
 * Port mode with --gw-socket: read the gateway's drops by counter and reason into
 * p->peer[after].why (before the run, then after it); p->gw_read says whether both
 * reads succeeded (georeduce_bench_gw.c).
 */
void gw_mark(const struct opts *o, struct phase *p, bool after);

/** The gateway's drops over its control socket at path into why[GW_DROPS]; 0 or -1. */
int gw_snap(const char *path, uint64_t *why);

struct rte_mempool;

/**
 * One measured run into p: a generator for gj with prm on frames of pool, run on
 * p->gen_lcore, the gateway's drops read around it (gw_mark()). Returns 0, -ENOMEM if the
 * generator could not be made (said on stderr), or the generator lcore's status.
 */
int bench_phase_run(const struct opts *o, const struct gen_job *gj, const struct gen_params *prm,
		    struct rte_mempool *pool, struct phase *p);

/** Run one generator to the end of its schedule on lcore `lcore` (georeduce_bench.c). */
int bench_run_gen(struct gen_lcore *g, unsigned int lcore);

#endif
