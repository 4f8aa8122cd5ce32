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
#include "wire.h"

#define PROG "georeduce-bench"

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
	double rate_gbps, duration, warmup;
	bool baseline, json, csv, quiet;
};

/* Counters of the lcore that answers the generator (ring mode). */
struct peer_snap {
	uint64_t rx, tx, busy, drops;
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
	/* Derived. */
	double secs, offered_gbps, offered_wire_gbps, offered_mpps, achieved_gbps, achieved_mpps;
	double chunks_s, p50_us, p99_us, p999_us, max_us, gen_busy, peer_busy;
	double peer_mpps_in;
	double c2c_ns; /* cache-line round trip generator <-> peer lcore */
	uint64_t lost, retx, timeouts, refused, duplicates, stale, unexpected, verified, bad;
};

#endif
