/* SPDX-License-Identifier: BSD-3-Clause
 *
 * CREW partial reduce (docs/CREW.md): a group of p ready sites reduces the model through
 * every site of the network, not only through its members. Site i aggregates chunk i of
 * the model: every member sends its copy of chunk i to site i (scatter), site i sums the
 * copies and sends the result back to every member (broadcast). The chunk sizes S_i solve
 *
 *     minimise X + Y  subject to  sum_i S_i = M,  S_i <= a_i X,  S_i <= b_i Y,  S_i >= 0
 *
 * with a_i the slowest member -> i link and b_i the slowest i -> member link (a member that
 * aggregates its own chunk keeps its own copy local, so its own links do not count). The
 * optimum lies at a breakpoint rho = Y / X = a_k / b_k, which crew_solve() finds exactly.
 *
 * Also here: the two baselines (only the members aggregate; all n sites in a full
 * all-to-all AllReduce) and the rebalancing of a non-blocking scatter that started before
 * the group was known (crew.c); failover, backup aggregators and relay members
 * (crew_failover.c); the plan's "partial_reduce" section (crew_json.c); bandwidth
 * matrices from topologies, CSV files and the inter-cloud measurements (crew_matrix.c);
 * and a discrete-event simulator of training progress (crew_sim.c).
 *
 * Bandwidth matrices are n * n row-major, gbps[i * n + j] the capacity i -> j in Gbit/s;
 * 0 means no link (or a failed one); the diagonal is ignored.
 */
#ifndef GEOREDUCE_CREW_H
#define GEOREDUCE_CREW_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "topo.h"

/** Name of the plan's top-level section. */
#define CREW_SECTION "partial_reduce"
/** Time to aggregate one chunk at its aggregator (seconds), CREW's setting. */
#define CREW_AGGREGATE_S 0.003
/** Largest model size accepted (bytes): shares stay exact in doubles. */
#define CREW_MAX_BYTES (1ull << 50)

/** Who aggregates. */
enum crew_scheme {
	CREW_SCHEME_CREW,       /* every site aggregates a chunk (CREW) */
	CREW_SCHEME_PARTIAL,    /* only the group's members aggregate (original partial reduce) */
	CREW_SCHEME_ALL_TO_ALL, /* the group is every site: full AllReduce, all sites aggregate */
};

/** "crew", "partial-reduce" or "all-to-all". */
const char *crew_scheme_name(enum crew_scheme s);

/** One partial reduce to plan. */
struct crew_problem {
	int n;              /* sites */
	const double *gbps; /* n * n matrix, Gbit/s, 0 = no link */
	const int *group;   /* p distinct site indices: the ready members */
	int p;
	uint64_t model_bytes; /* M */
};

/** Predicted phases of one operation, seconds (bandwidth only, no latency). */
struct crew_times {
	double scatter_s;   /* X: the slowest chunk's scatter */
	double broadcast_s; /* Y: the slowest chunk's broadcast */
};

/**
 * Check a problem: n >= 1, 1 <= p <= n, members distinct and in range, 0 < M <=
 * CREW_MAX_BYTES, every matrix entry finite and >= 0. Returns 0 or -EINVAL with a
 * one-line reason in err.
 */
int crew_check(const struct crew_problem *pb, char *err, size_t errlen);

/** p distinct sites of n drawn uniformly (seeded), in drawing order, into group[]. */
void crew_random_group(int n, int p, uint64_t seed, int *group);

/**
 * Rates of site i as an aggregator for the group, in bytes per second: *a the slowest
 * member -> i link, *b the slowest i -> member link, members other than i only
 * (INFINITY when i is the only member). 0 when a link is missing.
 */
void crew_rates(const struct crew_problem *pb, int i, double *a, double *b);

/**
 * Solve the share LP exactly for a scheme (for CREW_SCHEME_ALL_TO_ALL the group is
 * ignored: every site is a member). bytes[] receives n shares in bytes summing to
 * model_bytes (0 for sites that do not aggregate); tm the phase times of those integer
 * shares. With p = 1 the member keeps the whole model (no transfer, zero times).
 * Returns 0, -ENOENT if no site can aggregate (missing links), -EINVAL (bad problem, err
 * set), or -ENOMEM.
 */
int crew_solve(const struct crew_problem *pb, enum crew_scheme s, uint64_t *bytes,
	       struct crew_times *tm, char *err, size_t errlen);

/**
 * Phase times of given shares: X = max S_i / a_i, Y = max S_i / b_i over sites with
 * S_i > 0 (INFINITY if such a site lacks a link it needs).
 */
void crew_eval(const struct crew_problem *pb, const uint64_t *bytes, struct crew_times *tm);

/**
 * Rebalance a non-blocking scatter when the group forms. credit[k * n + i] bytes of chunk
 * i have already reached site i from member group[k] (the prefix of its all-to-all chunk,
 * so useful up to the new share). Chooses shares minimising the remaining scatter time
 * (the largest (S_i - credit) / rate over member links) plus the broadcast time
 * (convex in X: golden-section search over X, the best Y for each X by a breakpoint
 * sweep). Scheme CREW (every site may aggregate). Returns 0, -ENOENT or -ENOMEM; tm gets
 * the remaining scatter time and the broadcast time.
 */
int crew_rebalance(const struct crew_problem *pb, const double *credit, uint64_t *bytes,
		   struct crew_times *tm);

/* ---- failover (crew_failover.c) ---- */

/**
 * Backup aggregator for chunk `site` of `bytes` bytes: a site j != site, not down, with a
 * link from and to every member (members other than j). Minimises the largest pending
 * transfer time: max over members of (pending[m * n + j] + bytes) / rate(m -> j) plus
 * max over members of (pending[j * n + m] + bytes) / rate(j -> m); pending (bytes queued
 * per directed link) may be NULL (nothing pending). members_only restricts j to the group.
 * Ties go to the lower index. Returns j or -1 if none qualifies.
 */
int crew_pick_backup(const struct crew_problem *pb, int site, uint64_t bytes, const double *pending,
		     const bool *down, bool members_only);

/**
 * Relay for the reduced chunk of `from` to member `to` when the link from -> to fails:
 * a site r not in {from, to}, not down, with links from -> r and r -> to. Members are
 * preferred (they receive the chunk anyway, so only the r -> to hop is extra); among
 * them, and then among the other sites, the smallest (pending + bytes) time over the two
 * hops wins. Returns r or -1.
 */
int crew_pick_relay(const struct crew_problem *pb, int from, int to, uint64_t bytes,
		    const double *pending, const bool *down);

/**
 * Failover for a plan: backup[i] for every site with bytes[i] > 0 (else -1), with the
 * planned loads as pending bytes; relay[i * p + k] for every aggregator i and member
 * group[k] != i (else -1). Sites marked down are never used; neither are missing links.
 * Returns 0 or -ENOMEM.
 */
int crew_failover(const struct crew_problem *pb, enum crew_scheme s, const uint64_t *bytes,
		  const bool *down, int *backup, int *relay);

/* ---- the plan's "partial_reduce" section (crew_json.c) ---- */

/** The section in memory; site indices refer to the plan's topology. */
struct crew_section {
	enum crew_scheme scheme;
	int n; /* sites of the topology */
	int p;
	int *group; /* p */
	uint64_t model_bytes;
	uint64_t *bytes; /* n shares, 0 = not an aggregator */
	int *backup;     /* n: backup aggregator or -1 */
	int *relay;      /* n * p: relay for aggregator i -> group[k], or -1 */
	double scatter_s, aggregate_s, broadcast_s;
};

/** Allocate the arrays of a section for n sites and p members (filled with 0 / -1). */
int crew_section_init(struct crew_section *s, int n, int p);
void crew_section_fini(struct crew_section *s);

/** The section as JSON (new reference) with the topology's ids; NULL on ENOMEM. */
json_t *crew_section_to_json(const struct topo *t, const struct crew_section *s);

/**
 * Parse and check a "partial_reduce" section against a topology: known fields only,
 * known and distinct site ids, shares as contiguous byte ranges summing to model_bytes,
 * every aggregator, backup and relay hop joined by links of the topology to the members
 * it serves. Returns 0 or -EINVAL with a one-line message naming the field (prefixed by
 * src), or -ENOMEM.
 */
int crew_section_parse(const struct topo *t, const json_t *sec, const char *src,
		       struct crew_section *s, char *err, size_t errlen);

/**
 * Read a georeduce-plan/1 file, check its base structure with plan_parse() and parse its
 * "partial_reduce" section. 0 or a negative errno with err set.
 */
int crew_section_load(const struct topo *t, const char *path, struct crew_section *s, char *err,
		      size_t errlen);

/* ---- bandwidth matrices (crew_matrix.c) ---- */

/** The topology's links as a matrix (gbps a -> b, gbps_ba b -> a). Caller frees; NULL on ENOMEM. */
double *crew_matrix_from_topo(const struct topo *t);

/**
 * Parse a CSV bandwidth matrix: a header row "name,ID1,...,IDn", then n rows "IDi,v1,...,vn"
 * in the same order, Gbit/s, the diagonal empty or 0, every other cell a number > 0.
 * Returns a full-mesh topology named `name` whose links carry the matrix (NULL with a
 * one-line error naming src, line and column).
 */
struct topo *
crew_matrix_parse(const char *text, const char *src, const char *name, char *err, size_t errlen);

/**
 * Read the inter-cloud bandwidth list: one value in Mbit/s per line, or a CSV whose last
 * column is the value; a non-numeric first line is a header. Returns the count (>= 1) and
 * *values (caller frees), or a negative errno with err set.
 */
int crew_values_load(const char *path, double **values, char *err, size_t errlen);

/**
 * A full mesh of n sites "c00", "c01", ... whose directed bandwidths are drawn i.i.d.
 * (seeded, row by row) from values (Mbit/s), as CREW's experiments do. NULL on error.
 */
struct topo *
crew_draw_mesh(int n, const double *values, int n_values, uint64_t seed, char *err, size_t errlen);

/* ---- training-progress simulator (crew_sim.c) ---- */

struct crew_sim_opts {
	int p; /* group size (ignored for all-to-all: every site) */
	uint64_t model_bytes;
	double seconds;        /* simulated time T */
	double aggregate_s;    /* per chunk at its aggregator; CREW_AGGREGATE_S */
	double compute_s;      /* median per-iteration compute time of a worker */
	double straggler_prob; /* probability that an iteration straggles (heavy tail) */
	int failed_links;      /* directed links that fail during the run */
	bool nonblocking; /* CREW only: scatter with all-to-all shares before the group forms */
	uint64_t seed;
};

#define CREW_SIM_OPTS_DEFAULT                                                                     \
	{                                                                                         \
		.p = 4, .model_bytes = 180000000, .seconds = 50, .aggregate_s = CREW_AGGREGATE_S, \
		.compute_s = 0.5, .straggler_prob = 0.05, .failed_links = 0, .nonblocking = true, \
		.seed = 1                                                                         \
	}

struct crew_sim_result {
	int rounds;         /* partial reduces completed within T */
	double op_mean_s;   /* mean time from a group's forming to its last member done */
	double wait_mean_s; /* mean time a ready worker waited for its group to form */
	int backups;        /* chunks moved to a backup aggregator after a link failure */
	int relays;         /* broadcasts sent through a relay member */
	int rerouted;       /* transfers sent over two hops around a failed link */
	int links_failed;   /* failures that happened within T */
	uint64_t transfers;
	uint64_t events;
	int *progress; /* if set by the caller: ceil(T) entries, rounds completed by
				 * second k + 1 */
};

/**
 * Simulate training for opts->seconds: every site is a worker whose iterations take
 * compute times from the straggler model (docs/CREW.md); the first p ready workers form
 * a group and run a partial reduce planned by the scheme; several groups run at once,
 * every directed link serves its transfers first-come first-served, every site
 * aggregates its chunks one at a time (aggregate_s each). failed_links random directed
 * links fail at random times; transfers hit by a failure switch to backup aggregators
 * and relays, later groups are planned without the failed links. The same seed gives the
 * same compute times and failures for every scheme. Returns 0, -EINVAL or -ENOMEM.
 */
int crew_simulate(int n, const double *gbps, enum crew_scheme s, const struct crew_sim_opts *o,
		  struct crew_sim_result *r);

/** Per-iteration compute time of worker w in iteration it (deterministic in seed). */
double crew_compute_time(const struct crew_sim_opts *o, int w, int it);

#endif
