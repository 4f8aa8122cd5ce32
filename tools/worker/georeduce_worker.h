/* SPDX-License-Identifier: BSD-3-Clause
 *
 * What the files of georeduce-worker (main.c) share: its options (struct opts, read by
 * options.c in the main thread), one worker (struct worker: a client, its buffer and its
 * rounds' results, run in a thread of its own by allreduce.c or mcast.c), and the
 * functions one file calls in another.
 */
#ifndef GEOREDUCE_WORKER_H
#define GEOREDUCE_WORKER_H

#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/stat.h>
#include <time.h>

#include "georeduce.h"
#include "tls_opts.h"

#define PROG "georeduce-worker"
#define WORKERS_MAX 192 /* the most local workers a table lists */
#define ALL_WORKERS_MAX 4096
#define ROUNDS_MAX 1000000
#define FOLLOW_RUNS_MAX 16 /* --follow: new runs of one round across re-plans */
#define FOLLOW_STALL_S \
	2.0 /* --follow: a round stops for a new epoch only after
				 * this long without a result */

struct opts {
	const char *table;
	const char *control;      /* --control: join through the control process */
	struct tls_opts tls_opts; /* with --control: --cert, --key, --ca, --server-name */
	uint32_t job;
	bool has_job;
	uint16_t ids[WORKERS_MAX];
	int n_ids;
	/* --join-elastic NODE:IPV4:PORT: one worker joins an elastic job (its id from the
	 * control process, or its one --worker-id), renews and at the end leaves it */
	bool elastic;
	char el_node[64], el_ipv4[16];
	uint16_t el_port;
	uint32_t rounds;
	uint32_t first_round;
	uint16_t *all; /* --all-workers, or NULL */
	int n_all;
	const char *input;
	const char *output;
	uint32_t window;
	bool follow_rtt; /* --window follow */
	double timeout_s;
	bool json;
	bool follow;         /* --follow: reload the table when it changes */
	bool multicast;      /* --multicast: gr_mcast_send and gr_mcast_recv */
	bool require_all;    /* --require-all: a missing chunk fails the round */
	double start_at;     /* --start-at: CLOCK_REALTIME seconds; < 0: now */
	double interval_s;   /* --round-interval; 0: rounds back to back */
	const char *dtype;   /* --dtype: the table's must be this one, or NULL */
	bool forget_results; /* --forget-results: gr_config.forget_results */
	uint32_t revision;   /* --revision: gr_config.revision (0: the library's own) */
};

struct round_res {
	uint32_t round;
	double ms;
	int contrib; /* or a negative errno */
	bool verified;
	/* --multicast */
	int sent;              /* chunks sent, 0 (no stream) or a negative errno */
	unsigned int complete; /* origins with every chunk */
	uint64_t chunks_ok;    /* chunks received and equal to the origin's data */
	uint64_t chunks_wrong;
	uint64_t chunks_missing;
	unsigned int origins_empty; /* expected origins that delivered no chunk */
};

struct worker {
	const struct opts *o;
	uint16_t id;
	struct gr_client *client;
	void *buf;
	const void *input; /* --input contents, or NULL */
	uint8_t *csets;    /* each chunk's contributor set, with sets */
	size_t csets_len;
	struct round_res *res; /* o->rounds */
	uint32_t rounds_run;
	bool ok;
	char msg[GR_ERR_MAX + 128]; /* the failure, one line */
	bool show_progress;
	struct gr_join *join; /* --control: this worker's connection to it */
	bool control_away;    /* --control: the last call to it failed */
	double away_until;    /* ... ask it again during a stalled round after this
			       * (clock_now_s()): twice a second, not per progress call */
	bool pending;         /* --control: pending_cfg holds a newer epoch */
	sig_atomic_t hups;    /* --control: the SIGHUPs whose reload this worker made */
	struct gr_config pending_cfg;
	struct timespec table_mtime; /* --follow: the table file as last loaded */
	ino_t table_ino;
	uint64_t prog_done; /* --follow: chunks done at the latest progress */
	double prog_at;     /* ... and when that count last grew (clock_now_s()) */
	/* --multicast */
	pthread_barrier_t *barrier; /* between rounds of the process's workers, or NULL */
	double start;               /* CLOCK_REALTIME of the first round */
	uint32_t *ogot;             /* chunks received this round, per origin */
	struct round_res *cur;      /* the round being received */
	uint32_t cur_round;
	char wrong[GR_ERR_MAX]; /* the round's first wrong chunk */
};

/* options.c: the help text; the options into o (0, 1 for --help, or -1 after printing
 * why). */
void usage(FILE *f);
int parse_opts(int argc, char **argv, struct opts *o);

/* verify.c: the generated tensors (element e of worker w is (7 w + e) mod M) and the
 * check of a result. */
uint64_t modulus(enum gr_dtype dt);
uint32_t encode(enum gr_dtype dt, double v);
uint32_t load(const void *buf, enum gr_dtype dt, uint64_t e);
void fill(const struct worker *w, const struct gr_config *cfg);
bool verify(struct worker *w, const struct gr_config *cfg, uint32_t round, int contrib);

/* follow.c: --follow and --control, a worker moved to each new epoch. SIGHUPs received
 * (main.c's handler counts them; each worker's thread reloads its TLS files when it
 * next talks to the control process). */
extern volatile sig_atomic_t worker_hups;
int follow_table(struct worker *w);
int table_changed(void *arg);
int control_changed(void *arg);
bool await_epoch(struct worker *w, uint32_t ran, int same);

/* allreduce.c: a worker's thread, round after round of gr_allreduce(). */
void *worker_main(void *arg);

/* mcast.c: the wall clock; a worker's thread under --multicast. */
double real_s(void);
/* Sleep until CLOCK_REALTIME t (seconds); at once if it has passed. */
void sleep_until_real(double t);
void *worker_mcast(void *arg);

/* report.c: the --json summary on stdout; < 0 if it could not be written. */
int print_json(const struct opts *o, const struct gr_config *cfg, struct worker *ws, bool ok);

#endif
