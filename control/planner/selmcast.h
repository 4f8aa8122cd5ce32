/* SPDX-License-Identifier: BSD-3-Clause
 *
 * SELMCAST receiver selection for peer-to-peer synchronisation (docs/SELMCAST.md): in
 * every round each sender multicasts its update to at least p_i receivers; a pair that
 * has gone k rounds without a delivery is forced; the selection first minimises the
 * round's completion time, then takes as many receivers as fit without raising it.
 *
 * The network is the paper's one big non-blocking switch: only a site's egress (what it
 * can send) and ingress (what it can receive) are scarce. Under network-layer multicast a
 * sender's update leaves it once whatever the number of receivers; under
 * application-layer multicast it leaves once per receiver. Every transfer is paced to
 * finish together, so a round takes the largest port load over its bandwidth:
 *
 *   T = max( max_i out_i / egress_i, max_j (sum_{i -> j} bytes_i) / ingress_j )
 *
 * with out_i = bytes_i (network layer) or receivers_i * bytes_i (application layer).
 *
 * Selections are n x n byte matrices, x[i * n + j] != 0 when i sends to j. Staleness
 * state is an n x n int matrix: stale[i * n + j] = rounds in a row without a delivery
 * from i to j (NULL: all zero).
 */
#ifndef GEOREDUCE_SELMCAST_H
#define GEOREDUCE_SELMCAST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "topo.h"

/** The top-level plan section a selection is written to. */
#define SELMCAST_SECTION "multicast"
/** Largest n the exact MILP accepts (n (n - 1) binaries). */
#define SELMCAST_EXACT_MAX_N 40
/** Most rounds in one run and in one plan section. */
#define SELMCAST_ROUNDS_MAX 1000
/** Largest update: keeps every sum of update sizes an exact double (n <= 4096). */
#define SELMCAST_BYTES_MAX (1ull << 40)

enum selmcast_model {
	SELMCAST_NETWORK,     /* one copy leaves the sender (IP multicast) */
	SELMCAST_APPLICATION, /* one copy per receiver (unicast fan-out) */
};

enum selmcast_algo {
	SELMCAST_HEURISTIC, /* forced pairs, basic selection, Pareto pass */
	SELMCAST_RANDOM,    /* forced pairs, then random receivers up to p (Orpheus) */
	SELMCAST_EXACT,     /* the lexicographic MILP (GLPK), n <= SELMCAST_EXACT_MAX_N */
};

/** One round's input. Arrays have n entries and are not copied. */
struct selmcast_inst {
	int n; /* sites, >= 2 */
	enum selmcast_model model;
	const double *ingress_gbps; /* what each site can receive, finite, > 0 */
	const double *egress_gbps;  /* what each site can send, finite, > 0 */
	const uint64_t *bytes;      /* each sender's update, > 0 */
	const int *p;               /* each sender's minimum receivers, in [1, n - 1] */
	int stale_rounds;           /* k: pairs k rounds without delivery are forced; 0 off */
};

struct selmcast_result {
	double seconds;       /* completion time of the selection */
	double basic_seconds; /* heuristic: after the basic selection, before the Pareto pass */
	int receivers;        /* selected pairs */
	int forced;           /* pairs forced by staleness */
	int added;            /* heuristic: pairs the Pareto pass added */
	/* Exact MILP only: */
	double lower_seconds; /* proven lower bound on the optimal completion time */
	bool time_optimal;    /* stage 1 proved its completion time optimal */
	bool count_optimal;   /* stage 2 proved its receiver count maximal */
	double solve_seconds; /* wall time of both solves */
};

struct selmcast_exact_opts {
	double time_limit_s; /* per solve; 0: 10 s */
	double tolerance;    /* stage 2 keeps T <= T1 (1 + tolerance); 0: 1e-6 */
};

/** Check an instance: n, bandwidths, bytes and p. 0, or -EINVAL with one line in err. */
int selmcast_check(const struct selmcast_inst *in, char *err, size_t errlen);

/** Completion time (seconds) of a selection. */
double selmcast_seconds(const struct selmcast_inst *in, const unsigned char *x);

/** Number of selected pairs. */
int selmcast_receivers(int n, const unsigned char *x);

/** Clear x and select the pairs staleness forces. Returns their number. */
int selmcast_forced(const struct selmcast_inst *in, const int *stale, unsigned char *x);

/**
 * Basic selection: every sender below its quota gets the remaining receivers with the
 * least ingress load (bytes already bound for the receiver plus this update, over its
 * ingress bandwidth). Senders with more preselected receivers go first. Receivers that
 * finish within the time the round already takes are taken first, most stale first
 * (stale may be NULL). Returns 0 or -ENOMEM.
 */
int selmcast_basic(const struct selmcast_inst *in, const int *stale, unsigned char *x);

/**
 * Pareto pass: add every unselected pair, most stale first, whose sender egress and
 * receiver ingress still finish within the selection's completion time. Never raises the
 * completion time. Returns the number of pairs added, or -ENOMEM.
 */
int selmcast_pareto(const struct selmcast_inst *in, const int *stale, unsigned char *x);

/** The SELMCAST heuristic: forced pairs, basic selection, Pareto pass. 0 or -ENOMEM. */
int selmcast_select(const struct selmcast_inst *in, const int *stale, unsigned char *x,
		    struct selmcast_result *res);

/**
 * Random baseline (Orpheus with forced pairs): forced pairs, then receivers drawn
 * uniformly until each sender has p_i; *rng is the generator's state. 0 or -ENOMEM.
 */
int selmcast_random(const struct selmcast_inst *in, const int *stale, uint64_t *rng,
		    unsigned char *x, struct selmcast_result *res);

/**
 * Exact lexicographic MILP (GLPK): minimise the completion time T1, then maximise the
 * receivers subject to T <= T1 (1 + tolerance). Both solves start from the heuristic's
 * selection. Returns 0 (the best selection found, optimal or not: see res), -E2BIG if
 * n > SELMCAST_EXACT_MAX_N, -ENOMEM, or -EIO if the solver failed.
 */
int selmcast_exact(const struct selmcast_inst *in, const int *stale,
		   const struct selmcast_exact_opts *opts, unsigned char *x,
		   struct selmcast_result *res);

/** Staleness carried across rounds. */
struct selmcast_state {
	int n;
	int rounds; /* rounds advanced so far */
	int *stale; /* n x n */
};

/** All pairs fresh. 0 or -ENOMEM. */
int selmcast_state_init(struct selmcast_state *s, int n);

/** After a round: selected pairs become fresh, every other pair one round staler. */
void selmcast_state_advance(struct selmcast_state *s, const unsigned char *x);

void selmcast_state_fini(struct selmcast_state *s);

/**
 * Run `rounds` rounds of one algorithm from fresh staleness, each round's selection
 * feeding the next round's staleness. x receives rounds * n * n bytes, res (may be NULL)
 * rounds results. seed drives the random baseline; opts (may be NULL) the MILP.
 * Returns 0 or the first failing round's negative errno.
 */
int
selmcast_run(const struct selmcast_inst *in, enum selmcast_algo algo, int rounds, uint64_t seed,
	     const struct selmcast_exact_opts *opts, unsigned char *x, struct selmcast_result *res);

/* ---- sites of a topology ---- */

/**
 * The sites of a topology that take part: every node with workers. site[] (n_nodes
 * entries) receives their node indices, ingress/egress their bandwidths and bytes their
 * update sizes (default_bytes unless overridden). A node's optional fields
 * `ingress_gbps`, `egress_gbps` (finite, > 0) and `update_bytes` (integer > 0) in the
 * topology document doc (NULL: none) override; otherwise ingress is the sum of the
 * capacities of the node's links towards it and egress the sum away from it.
 * Returns the number of sites, or -EINVAL with one line naming src and the field.
 */
int selmcast_sites(const struct topo *t, const json_t *doc, const char *src, uint64_t default_bytes,
		   int *site, double *ingress, double *egress, uint64_t *bytes, char *err,
		   size_t errlen);

/**
 * A random instance as a topology: n sites "w1".."wn" around one relay "switch" (the
 * paper's big switch), site egress mean_gbps (1 + lambda x), ingress
 * mean_gbps mu (1 + lambda x') with x, x' uniform in [-1, 1], as the links' two
 * capacities. NULL with err on bad parameters.
 */
struct topo *selmcast_gen_topology(int n, uint64_t seed, double mean_gbps, double lambda, double mu,
				   char *err, size_t errlen);

/* ---- the plan section (selmcast_json.c) ---- */

/**
 * The "multicast" section for `rounds` selections x (rounds * n * n) of instance in,
 * whose site k is topology node site[k], with each round's completion time in seconds[].
 * NULL on ENOMEM.
 */
json_t *selmcast_section(const struct topo *t, const int *site, const struct selmcast_inst *in,
			 int rounds, const unsigned char *x, const double *seconds);

struct selmcast_sender {
	int site; /* topology node index */
	int p;    /* minimum receivers */
	uint64_t bytes;
	int n_receivers;
	int *receivers; /* topology node indices */
};

struct selmcast_round {
	double seconds;
	int n_senders; /* every worker site of the topology */
	struct selmcast_sender *senders;
};

/** A parsed and checked "multicast" section. */
struct selmcast_plan {
	enum selmcast_model model;
	int p;
	int stale_rounds;
	int n_rounds;
	struct selmcast_round *rounds;
};

/**
 * Parse and check a "multicast" section against a topology: known site ids that have
 * workers, every worker site a sender exactly once per round, no sender receiving from
 * itself, no duplicate receivers, at least p receivers, and (stale_rounds k > 0) no pair
 * left undelivered for more than k rounds in a row. NULL with one line naming src and
 * the field on failure.
 */
struct selmcast_plan *selmcast_section_parse(const struct topo *t, const json_t *section,
					     const char *src, char *err, size_t errlen);

/** Parse a whole `georeduce-plan/1` document and its "multicast" section (required). */
struct selmcast_plan *selmcast_plan_parse(const struct topo *t, const char *text, const char *src,
					  char *err, size_t errlen);

void selmcast_plan_free(struct selmcast_plan *p);

#endif
