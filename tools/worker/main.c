/* SPDX-License-Identifier: BSD-3-Clause
 *
 * georeduce-worker: AllReduce a tensor through a gateway with libgeoreduce, round after
 * round, verify every result bit-exactly and print the time and throughput of each round.
 *
 *   georeduce-worker --table FILE --worker-id ID [--worker-id ID ...] [--rounds N]
 *                    [--first-round R] [--all-workers ID,ID,...] [--input FILE]
 *                    [--output FILE] [--window N] [--timeout SECONDS] [--json]
 *   georeduce-worker --multicast --table FILE --worker-id ID [...] [--require-all]
 *                    [--start-at UNIXTIME] [--round-interval SECONDS]
 *   georeduce-worker --control tls://HOST:PORT --job J --cert F --key F --ca F
 *                    --worker-id ID [...]  (instead of --table: join through the control
 *                    process, fetch the table and follow every new epoch from it)
 *
 * Each --worker-id is one worker with its own client, socket and thread. The generated
 * tensor is integer-valued so that every sum is exact: element e of worker w is
 * (7 w + e) mod M, M = 61 (fp32), 31 (fp16), 9 (bf16), with w = 0 for every worker unless
 * --all-workers names the job's workers (then w is the worker's id, as in
 * tests/e2e_worker.py). The expected result is contrib x (e mod M), or the sum over the
 * named workers, rounded once to the dtype. In a job with contributor sets (a partial
 * reduce) each chunk's result is checked against the workers its set names.
 *
 * With --multicast (a selmcast job's table: streams, no trees) each worker multicasts its
 * generated tensor (w = its id) and checks every chunk it receives against the origin's
 * generated data (w = the origin's id). Loss is not an error unless an expected origin
 * delivered nothing (or with --require-all, any chunk is missing); wrong data always is.
 *
 * Exit status: 0 every round verified, 1 a round failed (wrong result, timeout, socket
 * error), 2 bad options or input files.
 */
#include <errno.h>
#include <stdarg.h>
#include <getopt.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "cli.h"
#include "clock.h"
#include "georeduce.h"
#include "halffloat.h"
#include "tls_opts.h"

#define PROG "georeduce-worker"
#define WORKERS_MAX 192         /* the most local workers a table lists */
#define ALL_WORKERS_MAX 4096
#define ROUNDS_MAX 1000000
#define FOLLOW_RUNS_MAX 16      /* --follow: new runs of one round across re-plans */
#define FOLLOW_STALL_S 2.0      /* --follow: a round stops for a new epoch only after
				 * this long without a result */

struct opts {
	const char *table;
	const char *control;            /* --control: join through the control process */
	struct tls_opts tls_opts;       /* with --control: --cert, --key, --ca, --server-name */
	uint32_t job;
	bool has_job;
	uint16_t ids[WORKERS_MAX];
	int n_ids;
	uint32_t rounds;
	uint32_t first_round;
	uint16_t *all;                  /* --all-workers, or NULL */
	int n_all;
	const char *input;
	const char *output;
	uint32_t window;
	double timeout_s;
	bool json;
	bool follow;                    /* --follow: reload the table when it changes */
	bool multicast;                 /* --multicast: gr_mcast_send and gr_mcast_recv */
	bool require_all;               /* --require-all: a missing chunk fails the round */
	double start_at;                /* --start-at: CLOCK_REALTIME seconds; < 0: now */
	double interval_s;              /* --round-interval; 0: rounds back to back */
	const char *dtype;              /* --dtype: the table's must be this one, or NULL */
	bool forget_results;            /* --forget-results: gr_config.forget_results */
};

struct round_res {
	uint32_t round;
	double ms;
	int contrib;                    /* or a negative errno */
	bool verified;
	/* --multicast */
	int sent;                       /* chunks sent, 0 (no stream) or a negative errno */
	unsigned int complete;          /* origins with every chunk */
	uint64_t chunks_ok;             /* chunks received and equal to the origin's data */
	uint64_t chunks_wrong;
	uint64_t chunks_missing;
	unsigned int origins_empty;     /* expected origins that delivered no chunk */
};

struct worker {
	const struct opts *o;
	uint16_t id;
	struct gr_client *client;
	void *buf;
	const void *input;              /* --input contents, or NULL */
	uint8_t *csets;                 /* each chunk's contributor set, with sets */
	size_t csets_len;
	struct round_res *res;          /* o->rounds */
	uint32_t rounds_run;
	bool ok;
	char msg[GR_ERR_MAX + 128];     /* the failure, one line */
	bool show_progress;
	struct gr_join *join;           /* --control: this worker's connection to it */
	bool control_away;              /* --control: the last call to it failed */
	bool pending;                   /* --control: pending_cfg holds a newer epoch */
	struct gr_config pending_cfg;
	struct timespec table_mtime;    /* --follow: the table file as last loaded */
	ino_t table_ino;
	uint64_t prog_done;             /* --follow: chunks done at the latest progress */
	double prog_at;                 /* ... and when that count last grew (clock_now_s()) */
	/* --multicast */
	pthread_barrier_t *barrier;     /* between rounds of the process's workers, or NULL */
	double start;                   /* CLOCK_REALTIME of the first round */
	uint32_t *ogot;                 /* chunks received this round, per origin */
	struct round_res *cur;          /* the round being received */
	uint32_t cur_round;
	char wrong[GR_ERR_MAX];         /* the round's first wrong chunk */
};

static void
usage(FILE *f)
{
	fprintf(f,
		"Usage: " PROG " --table FILE --worker-id ID [--worker-id ID ...] [options]\n"
		"\n"
		"AllReduce a tensor through this worker's gateway (the georeduce-table/1 file of\n"
		"the gateway) and verify every result bit-exactly. Several --worker-id run one\n"
		"worker each, in threads.\n"
		"\n"
		"Options:\n"
		"  --table FILE          the gateway's forwarding table (docs/TABLES.md)\n"
		"  --control ENDPOINT    instead of --table: join the job through the control\n"
		"                        process (tls://HOST:PORT of its API, or its socket):\n"
		"                        each worker fetches its table and follows every new\n"
		"                        epoch from it (--follow is implied)\n"
		"  --job J               with --control: the job\n"
		"  --cert FILE, --key FILE, --ca FILE  with tls://: the worker certificate\n"
		"                        (it names worker-ID for each --worker-id), its key,\n"
		"                        the deployment's CA\n"
		"  --server-name NAME    the control process's certificate name   [control]\n"
		"  --worker-id ID        a local worker of that gateway (repeatable, up to %d)\n"
		"  --rounds N            AllReduce rounds (default 1)\n"
		"  --first-round R       number of the first round (default 0)\n"
		"  --all-workers LIST    every worker of the job, ID,ID,...: worker-specific data\n"
		"                        (element e of worker w is (7w + e) mod M) and an exact\n"
		"                        check of the contributor count; without it every worker\n"
		"                        sends e mod M and the result must be contrib x (e mod M)\n"
		"                        (with contributor sets, a partial reduce: each chunk is\n"
		"                        checked against the workers its result names, and a\n"
		"                        straggler answered by a later round goes on after it)\n"
		"  --input FILE          send this tensor instead (raw little-endian elements of\n"
		"                        the table's dtype, fp32 for the MX dtypes); the results\n"
		"                        are then not verified\n"
		"  --dtype NAME          refuse a table whose job sends another dtype (fp32, fp16,\n"
		"                        bf16, mxint8, mxfp8, mxfp4)\n"
		"  --output FILE         write the last round's result there (one worker only)\n"
		"  --window N            chunks in flight per tree (default: the tree's slot\n"
		"                        pool at the gateway, or %d if the table has none)\n"
		"  --timeout SECONDS     limit of each round (default %d)\n"
		"  --follow              the table file is rewritten when the control process\n"
		"                        installs a new epoch (georeduce-control run --out):\n"
		"                        reload it before each round; when it changes during a\n"
		"                        round that has had no result for 2 s, stop the round\n"
		"                        and run it again under the new epoch (a round still\n"
		"                        completing finishes under its epoch); when a round\n"
		"                        times out, run it again under a\n"
		"                        new epoch, or once go on with it under the same one (a\n"
		"                        peer may have begun it under the previous epoch)\n"
		"  --forget-results      keep no copy of the latest results (saves the tensor's\n"
		"                        bytes per worker; a peer that lost results this worker\n"
		"                        got in a gateway failure then cannot get them back\n"
		"                        from it: docs/CLIENT.md, Results kept)\n"
		"  --json                a JSON summary on stdout instead of lines\n"
		"  -h, --help            this help\n",
		WORKERS_MAX, GR_WINDOW_DEFAULT, GR_TIMEOUT_DEFAULT_MS / 1000);
	fprintf(f,
		"\n"
		"Selective multicast (a selmcast job's table: streams, no trees):\n"
		"  --multicast           each round, every worker that its site's stream carries\n"
		"                        sends its tensor (element e is (7w + e) mod M, w its id)\n"
		"                        and every worker receives the updates its streams\n"
		"                        deliver until all came or the timeout passed, checking\n"
		"                        each chunk against the origin's data (w = the origin's\n"
		"                        id). A wrong chunk fails the round, and so does an\n"
		"                        expected origin that delivered nothing; chunks still\n"
		"                        missing after their repairs (NACK_MCAST) are reported\n"
		"  --require-all         a missing chunk fails the round too\n"
		"  --start-at UNIXTIME   start the first round then (CLOCK_REALTIME seconds, as\n"
		"                        date +%%s.%%N prints; default now)\n"
		"  --round-interval SECONDS\n"
		"                        start round i at the start + i x SECONDS and stop\n"
		"                        receiving it when the next one starts; several\n"
		"                        processes that share --start-at then keep in step.\n"
		"                        Default: the workers of this process start a round\n"
		"                        together when all are done with the previous one\n"
		"\n"
		"M is 61 for fp32, 31 for fp16 and 9 for bf16, so that sums stay exact. The MX\n"
		"dtypes (OCP Microscaling blocks on the wire, fp32 in memory) send\n"
		"((7w + e) mod 3) - 1, whose sums every gateway's encode keeps exact up to 127\n"
		"workers (mxint8), 14 (mxfp8) or 4 (mxfp4).\n"
		"Exit status: 0 every round verified, 1 a round failed (wrong result, timeout,\n"
		"with --multicast wrong data or an origin without a chunk), 2 bad options or files.\n");
}

/* The wall clock, which processes on one host (or NTP-synchronised hosts) share. */
static double
real_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void
sleep_until_real(double t)
{
	struct timespec ts = { .tv_sec = (time_t)t };
	long ns = (long)((t - (double)ts.tv_sec) * 1e9);

	ts.tv_nsec = ns < 0 ? 0 : (ns > 999999999 ? 999999999 : ns);
	while (clock_nanosleep(CLOCK_REALTIME, TIMER_ABSTIME, &ts, NULL) == EINTR)
		;
}

/* --- Patterns ------------------------------------------------------------------------------ */

static bool
is_mx(enum gr_dtype dt)
{
	return dt >= GR_DTYPE_MXINT8 && dt <= GR_DTYPE_MXFP4;
}

static uint64_t
modulus(enum gr_dtype dt)
{
	if (is_mx(dt))
		return 3;
	return dt == GR_DTYPE_FP32 ? 61 : (dt == GR_DTYPE_FP16 ? 31 : 9);
}

/* The value of pattern x in [0, M): x, or x - 1 (-1, 0, 1) for the MX dtypes, whose sums
 * of up to 127 (mxint8), 14 (mxfp8) or 4 (mxfp4) contributions every encode keeps exact. */
static double
value(enum gr_dtype dt, uint64_t x)
{
	return is_mx(dt) ? (double)x - 1 : (double)x;
}

/* Element e of worker w as its dtype's bits (a small integer is exact in every dtype; the
 * MX dtypes take and give fp32). */
static uint32_t
encode(enum gr_dtype dt, double v)
{
	float f = (float)v;
	uint32_t u;

	if (dt == GR_DTYPE_FP16)
		return gr_f32_to_f16(f);
	if (dt == GR_DTYPE_BF16)
		return gr_f32_to_bf16(f);
	memcpy(&u, &f, sizeof(u));
	return u;
}

static uint32_t
load(const void *buf, enum gr_dtype dt, uint64_t e)
{
	const uint8_t *p = buf;
	uint32_t u = 0;
	uint16_t h;

	if (dt == GR_DTYPE_FP32 || is_mx(dt)) {
		memcpy(&u, p + 4 * e, 4);
		return u;
	}
	memcpy(&h, p + 2 * e, 2);
	return h;
}

static void
store(void *buf, enum gr_dtype dt, uint64_t e, uint32_t bits)
{
	uint8_t *p = buf;
	uint16_t h = (uint16_t)bits;

	if (dt == GR_DTYPE_FP32 || is_mx(dt))
		memcpy(p + 4 * e, &bits, 4);
	else
		memcpy(p + 2 * e, &h, 2);
}

static void
fill(const struct worker *w, const struct gr_config *cfg)
{
	uint64_t m = modulus(cfg->dtype);
	uint64_t wid = w->o->all != NULL || w->o->multicast ? w->id : 0;

	if (w->input != NULL) {
		memcpy(w->buf, w->input, cfg->elements * gr_dtype_size(cfg->dtype));
		return;
	}
	for (uint64_t e = 0; e < cfg->elements; e++)
		store(w->buf, cfg->dtype, e,
		      encode(cfg->dtype, value(cfg->dtype, (7 * wid + e) % m)));
}

/* The workers of chunk c's contributor set into ids[] (at most ALL_WORKERS_MAX); their
 * number, or -1 with w->msg filled if --all-workers does not name one of them. */
static int
set_ids(struct worker *w, const struct gr_config *cfg, uint64_t c, uint32_t round,
	uint16_t *ids)
{
	const uint8_t *set = w->csets + c * cfg->cset_blocks * GR_CSET_BLOCK;
	int n = 0;

	for (uint32_t id = 1; id < 256u * cfg->cset_blocks; id++) {
		bool known = w->o->all == NULL;

		if (!(set[id / 8] >> (id % 8) & 1))
			continue;
		for (int i = 0; !known && i < w->o->n_all; i++)
			known = w->o->all[i] == id;
		if (!known) {
			snprintf(w->msg, sizeof(w->msg), "worker %u round %" PRIu32 ": chunk %" PRIu64
				 " holds worker %u, which --all-workers does not name", w->id,
				 round, c, id);
			return -1;
		}
		ids[n++] = (uint16_t)id;
	}
	return n;
}

/* Check the result of a generated tensor; false with w->msg filled. With contributor
 * sets (a partial reduce may leave workers out) each chunk is checked against its own. */
static bool
verify(struct worker *w, const struct gr_config *cfg, uint32_t round, int contrib)
{
	const struct opts *o = w->o;
	uint64_t m = modulus(cfg->dtype), chunk = UINT64_MAX;
	size_t slen = (size_t)cfg->cset_blocks * GR_CSET_BLOCK;
	static _Thread_local uint16_t ids[ALL_WORKERS_MAX];
	int n_ids = 0;

	if (o->all != NULL && slen == 0 && contrib != o->n_all) {
		snprintf(w->msg, sizeof(w->msg), "worker %u round %" PRIu32 ": %d contributors, "
			 "--all-workers names %d", w->id, round, contrib, o->n_all);
		return false;
	}
	for (uint64_t e = 0; e < cfg->elements; e++) {
		double sum = 0;
		uint32_t want, got;

		if (slen != 0 && e / cfg->chunk_elements != chunk) {
			chunk = e / cfg->chunk_elements;
			n_ids = set_ids(w, cfg, chunk, round, ids);
			if (n_ids < 0)
				return false;
		}
		if (slen != 0 && o->all == NULL) {
			sum = n_ids * value(cfg->dtype, e % m);
		} else if (slen != 0) {
			for (int i = 0; i < n_ids; i++)
				sum += value(cfg->dtype, (7 * (uint64_t)ids[i] + e) % m);
		} else if (o->all == NULL) {
			sum = contrib * value(cfg->dtype, e % m);
		} else {
			for (int i = 0; i < o->n_all; i++)
				sum += value(cfg->dtype, (7 * (uint64_t)o->all[i] + e) % m);
		}
		want = encode(cfg->dtype, sum);
		got = load(w->buf, cfg->dtype, e);
		if (got != want) {
			snprintf(w->msg, sizeof(w->msg), "worker %u round %" PRIu32 ": element %"
				 PRIu64 " is 0x%" PRIx32 ", want 0x%" PRIx32 " (%.0f)",
				 w->id, round, e, got, want, sum);
			return false;
		}
	}
	return true;
}

/* --- Workers ------------------------------------------------------------------------------- */

static void
progress(void *arg, uint64_t done, uint64_t total)
{
	const struct worker *w = arg;

	fprintf(stderr, "\r" PROG ": worker %u: %3u%% of %" PRIu64 " chunks", w->id,
		(unsigned int)(total != 0 ? done * 100 / total : 100), total);
	fflush(stderr);
}

static int follow_epoch(struct worker *w, int wait_ms);

/* --follow: the epoch of the table file or the control process, now. */
static int
follow_table(struct worker *w)
{
	return follow_epoch(w, 0);
}

/* --control: an epoch other than the client's, waiting up to wait_ms for it (a long poll
 * at the control process); the client moved to it. 1 if it did, 0 if none came, -1 after
 * a message in w->msg. */
static int
follow_control(struct worker *w, int wait_ms)
{
	char err[GR_ERR_MAX];
	struct gr_config c;
	int rc;

	if (w->pending) { /* control_changed() saw it during a round */
		c = w->pending_cfg;
		w->pending = false;
		rc = 1;
	} else {
		rc = gr_join_wait(w->join, gr_client_config(w->client)->epoch, wait_ms, &c, err,
				  sizeof(err));
	}

	c.forget_results = w->o->forget_results;
	if (rc == 1 && gr_client_reconfigure(w->client, &c, err, sizeof(err)) != 0)
		rc = -EINVAL;
	if (rc == -EPERM || rc == -ENOENT || rc == -EINVAL) {
		snprintf(w->msg, sizeof(w->msg), "worker %u: %s", w->id, err);
		return -1;
	}
	if (rc < 0) {
		/* The control process is away (restarting): the gateways keep the live epoch,
		 * so go on with it and ask again later. */
		if (!w->control_away)
			fprintf(stderr, PROG ": worker %u: %s; going on under epoch %u\n", w->id, err,
				gr_client_config(w->client)->epoch);
		w->control_away = true;
		if (wait_ms > 0)
			usleep((useconds_t)(wait_ms < 200 ? wait_ms : 200) * 1000);
		return 0;
	}
	w->control_away = false;
	return rc;
}

/* --follow: if the table file changed since it was loaded, load it and move the client
 * to its epoch; with --control, ask the control process (waiting up to wait_ms). 1 if it
 * did, 0 if unchanged, -1 after a message in w->msg. */
static int
follow_epoch(struct worker *w, int wait_ms)
{
	struct stat st;
	struct gr_config c;
	char err[GR_ERR_MAX];

	if (w->o->control != NULL)
		return follow_control(w, wait_ms);
	if (stat(w->o->table, &st) != 0 ||
	    (st.st_ino == w->table_ino && st.st_mtim.tv_sec == w->table_mtime.tv_sec &&
	     st.st_mtim.tv_nsec == w->table_mtime.tv_nsec))
		return 0;
	if (gr_config_from_table(&c, w->o->table, w->id, err, sizeof(err)) != 0)
		goto fail;
	c.forget_results = w->o->forget_results;
	if (c.epoch != gr_client_config(w->client)->epoch &&
	    gr_client_reconfigure(w->client, &c, err, sizeof(err)) != 0)
		goto fail;
	w->table_ino = st.st_ino;
	w->table_mtime = st.st_mtim;
	return 1;
fail:
	snprintf(w->msg, sizeof(w->msg), "worker %u: %s", w->id, err);
	return -1;
}

/* gr_options.progress: the progress line on a terminal, and under --follow when the
 * round's results last came (stalled()). */
static void
round_progress(void *arg, uint64_t done, uint64_t total)
{
	struct worker *w = arg;

	if (done != w->prog_done) {
		w->prog_done = done;
		w->prog_at = clock_now_s();
	}
	if (w->show_progress)
		progress(arg, done, total);
}

/* Whether the round has had no result for FOLLOW_STALL_S. A new epoch stops only such a
 * round: one still completing under its epoch finishes there (a re-plan for a link's
 * measured rate leaves the old trees working), since a round some workers complete
 * under the old epoch and others run again under the new one could never complete for
 * the latter. */
static bool
stalled(const struct worker *w)
{
	return clock_now_s() - w->prog_at >= FOLLOW_STALL_S;
}

/* gr_options.cancel under --follow: stop a stalled round as soon as the table file
 * changes (the control process installed a new epoch, for instance around a failed
 * gateway) instead of waiting for the round's timeout. A stat() every progress interval,
 * never per packet. */
static int
table_changed(void *arg)
{
	const struct worker *w = arg;
	struct stat st;

	return stalled(w) && stat(w->o->table, &st) == 0 &&
	       (st.st_ino != w->table_ino || st.st_mtim.tv_sec != w->table_mtime.tv_sec ||
		st.st_mtim.tv_nsec != w->table_mtime.tv_nsec);
}

/* gr_options.cancel with --control: stop a stalled round as soon as the control process
 * has another epoch (asked every progress interval, without waiting), keeping it for
 * follow_control(). */
static int
control_changed(void *arg)
{
	struct worker *w = arg;
	char err[GR_ERR_MAX];
	int rc;

	/* While the control process cannot be reached, a connect attempt could stall the
	 * round: only the calls between rounds (follow_control()) try again. */
	if (!stalled(w))
		return 0;
	if (w->pending || w->control_away)
		return w->pending;
	rc = gr_join_wait(w->join, gr_client_config(w->client)->epoch, 0, &w->pending_cfg, err,
			  sizeof(err));
	w->pending = rc == 1;
	w->control_away = rc < 0;
	return w->pending;
}

/*
 * --follow after a round timed out under epoch `ran` (`same`: how often the round already
 * went on without a new epoch): whether to go on with it, under the table file's epoch.
 * A newer epoch (the control process re-planned around a failure) is taken at once.
 * Without one, the round goes on under the same epoch once, also at once: the table may
 * have changed between the round's start at another worker and at this one, so that the
 * other began it under the previous epoch. That worker times out about when this one
 * does and runs the round again under this epoch; waiting for yet another epoch instead
 * would leave it there alone for its whole timeout, and then the roles swap (no result at
 * all, round after round). After that, wait up to the round timeout for a new epoch.
 */
static bool
await_epoch(struct worker *w, uint32_t ran, int same)
{
	double until = clock_now_s() + w->o->timeout_s;

	do {
		if (follow_table(w) < 0)
			return false;
		if (gr_client_config(w->client)->epoch != ran || same == 0)
			return true;
		if (w->o->control == NULL)
			usleep(50000);
		else if (follow_epoch(w, (int)((until - clock_now_s()) * 1000) + 1) < 0)
			return false;
	} while (clock_now_s() < until);
	return false;
}

/* Room for the contributor sets of cfg's chunks (none without sets); 0, or -1 with
 * w->msg filled. */
static int
csets_room(struct worker *w, const struct gr_config *cfg)
{
	size_t len = (size_t)((cfg->elements + cfg->chunk_elements - 1) / cfg->chunk_elements) *
		     cfg->cset_blocks * GR_CSET_BLOCK;
	uint8_t *p;

	if (len <= w->csets_len)
		return 0;
	p = realloc(w->csets, len);
	if (p == NULL) {
		snprintf(w->msg, sizeof(w->msg), "worker %u: out of memory for %zu bytes of "
			 "contributor sets", w->id, len);
		return -1;
	}
	w->csets = p;
	w->csets_len = len;
	return 0;
}

static void *
worker_main(void *arg)
{
	struct worker *w = arg;
	const struct opts *o = w->o;
	const struct gr_config *cfg = gr_client_config(w->client);
	double bytes = (double)cfg->elements * (double)gr_dtype_size(cfg->dtype);
	struct gr_options go = {
		.window = o->window,
		.timeout_ms = (uint32_t)(o->timeout_s * 1000 + 0.5),
		.progress = w->show_progress || o->follow ? round_progress : NULL,
		.progress_arg = w,
		.progress_ms = 200,
		.cancel = !o->follow ? NULL : o->control != NULL ? control_changed : table_changed,
		.cancel_arg = w,
	};

	uint64_t superseded = 0, kept = 0;
	uint32_t skipped = 0;           /* rounds a partial reduce went on without us */
	struct gr_stats st;

	w->ok = true;
	for (uint32_t i = 0; i < o->rounds; i++) {
		struct round_res *r = &w->res[i];
		double t0;

		r->round = o->first_round + i + skipped;
		if (o->follow && follow_table(w) < 0) {
			w->ok = false;
			break;
		}
		cfg = gr_client_config(w->client);
		if (csets_room(w, cfg) < 0) {
			w->ok = false;
			break;
		}
		go.csets = w->csets;
		fill(w, cfg);
		t0 = clock_now_s();
		w->prog_done = 0;
		w->prog_at = t0;
		r->contrib = gr_allreduce(w->client, w->buf, cfg->elements, cfg->dtype, r->round,
					  &go);
		/* A gateway failed mid-round: the control process installs a new epoch
		 * without it, the table file changes and the call stops (table_changed());
		 * run the round again under that epoch. Or the round timed out: the
		 * workers began it under two epochs, and all go on with it under the newer
		 * one (await_epoch()). A re-plan may follow a re-plan (a link found short
		 * of its rate while a gateway fails): follow up to FOLLOW_RUNS_MAX. */
		for (int again = 0, same = 0;
		     o->follow && (r->contrib == -ETIMEDOUT || r->contrib == -ECANCELED) &&
		     again < FOLLOW_RUNS_MAX;
		     again++) {
			uint32_t ran = cfg->epoch;

			if (r->contrib == -ECANCELED ? follow_table(w) < 0
						     : !await_epoch(w, ran, same))
				break;
			cfg = gr_client_config(w->client);
			if (csets_room(w, cfg) < 0)
				break;
			go.csets = w->csets;
			/* Under the same epoch the call goes on where it stopped (resume): the
			 * gateways' slots hold what it sent, and had it started again from the
			 * first chunk, their pools may have moved on past it meanwhile. */
			go.resume = cfg->epoch == ran;
			same += go.resume;
			if (!o->json)
				printf("worker %u round %" PRIu32 ": epoch %u %s\n", w->id, r->round,
				       cfg->epoch, go.resume ? "as before, round taken up again"
							     : "installed, round run again");
			if (!go.resume)
				fill(w, cfg);
			w->prog_done = 0;
			w->prog_at = clock_now_s();
			r->contrib = gr_allreduce(w->client, w->buf, cfg->elements, cfg->dtype,
						  r->round, &go);
			go.resume = false;
		}
		r->ms = (clock_now_s() - t0) * 1e3;
		if (w->show_progress)
			fputs("\r\033[K", stderr);
		w->rounds_run++;
		if (r->contrib < 0) {
			snprintf(w->msg, sizeof(w->msg), "worker %u round %" PRIu32 ": %s", w->id,
				 r->round, gr_client_error(w->client));
			w->ok = false;
			break;
		}
		r->verified = w->input == NULL && verify(w, cfg, r->round, r->contrib);
		if (w->input == NULL && !r->verified) {
			w->ok = false;
			break;
		}
		if (!o->json)
			printf("worker %u round %" PRIu32 ": %.3f ms, %.3f Gbit/s, %d contributors, "
			       "%s\n", w->id, r->round, r->ms, bytes * 8 / (r->ms * 1e6), r->contrib,
			       r->verified ? "verified" : "not verified (--input)");
		/* A straggler in a partial reduce got a later round's results: go on after it. */
		gr_client_stats(w->client, &st);
		if (st.superseded != superseded) {
			superseded = st.superseded;
			if ((int32_t)(st.latest_round - r->round) > 0) {
				if (!o->json)
					printf("worker %u round %" PRIu32 ": a straggler, answered by "
					       "round %" PRIu32 "; continuing after it\n", w->id,
					       r->round, st.latest_round);
				skipped += st.latest_round - r->round;
			}
		}
		/* Peers that lost results in a failover got them back from this worker. */
		if (st.kept_answers != kept && !o->json)
			printf("worker %u round %" PRIu32 ": %" PRIu64 " results of an earlier "
			       "round given back to its gateway\n", w->id, r->round,
			       st.kept_answers - kept);
		kept = st.kept_answers;
	}
	return NULL;
}

/* --- Multicast ----------------------------------------------------------------------------- */

/* gr_mcast_recv() callback: check the chunk against the origin's generated data. */
static void
mcast_chunk(void *arg, uint16_t origin, uint32_t round, uint32_t chunk, const void *data,
	    uint32_t count)
{
	struct worker *w = arg;
	const struct gr_config *cfg = gr_client_config(w->client);
	uint64_t m = modulus(cfg->dtype), e0 = (uint64_t)chunk * cfg->chunk_elements;
	unsigned int k = 0;

	(void)round; /* gr_mcast_recv() delivers the round it was asked for only */
	while (k < cfg->n_origins && cfg->origins[k] != origin)
		k++;
	if (k < cfg->n_origins)
		w->ogot[k]++;
	for (uint32_t i = 0; i < count; i++) {
		uint32_t want = encode(cfg->dtype, (double)((7 * (uint64_t)origin + e0 + i) % m));
		uint32_t got = load(data, cfg->dtype, i);

		if (got != want) {
			if (w->cur->chunks_wrong++ == 0)
				snprintf(w->wrong, sizeof(w->wrong), "origin %u chunk %" PRIu32
					 " element %" PRIu64 " is 0x%" PRIx32 ", want 0x%" PRIx32,
					 origin, chunk, e0 + i, got, want);
			return;
		}
	}
	w->cur->chunks_ok++;
}

/* Record a failed round: the worker's first failure is the one it reports. */
static void
mcast_fail(struct worker *w, struct round_res *r, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void
mcast_fail(struct worker *w, struct round_res *r, const char *fmt, ...)
{
	va_list ap;
	int n;

	r->verified = false;
	if (!w->ok)
		return;
	w->ok = false;
	n = snprintf(w->msg, sizeof(w->msg), "worker %u round %" PRIu32 ": ", w->id, r->round);
	va_start(ap, fmt);
	vsnprintf(w->msg + n, sizeof(w->msg) - (size_t)n, fmt, ap);
	va_end(ap);
}

/* --multicast: every round, send this worker's update (if its site's stream carries it)
 * and receive the others' (gr_mcast_recv() asks for what is lost). Rounds are
 * independent: a failed one is recorded and the next one runs, so that the workers of
 * the process stay in step. */
static void *
worker_mcast(void *arg)
{
	struct worker *w = arg;
	const struct opts *o = w->o;
	const struct gr_config *cfg = gr_client_config(w->client);
	uint64_t n_chunks = (cfg->elements + cfg->chunk_elements - 1) / cfg->chunk_elements;
	struct gr_mcast_opts mo = { 0 };

	w->ok = true;
	for (uint32_t i = 0; i < o->rounds; i++) {
		struct round_res *r = &w->res[i];
		double t0, until = 0, limit = o->timeout_s;
		uint64_t expect = (uint64_t)cfg->n_origins * n_chunks;
		int rc;

		r->round = o->first_round + i;
		r->verified = true;
		if (o->interval_s > 0) {
			sleep_until_real(w->start + i * o->interval_s);
			until = w->start + (i + 1) * o->interval_s;
		} else if (i == 0) {
			sleep_until_real(w->start);
		} else if (w->barrier != NULL) {
			pthread_barrier_wait(w->barrier);
		}
		t0 = clock_now_s();
		if (cfg->mcast_send) {
			fill(w, cfg);
			r->sent = gr_mcast_send(w->client, w->buf, cfg->elements, cfg->dtype,
						r->round, NULL);
			if (r->sent < 0)
				mcast_fail(w, r, "send: %s", gr_client_error(w->client));
		}
		if (cfg->n_origins > 0) {
			if (until > 0 && until - real_s() < limit)
				limit = until - real_s();
			mo.timeout_ms = limit > 0.001 ? (uint32_t)(limit * 1000) : 1;
			memset(w->ogot, 0, cfg->n_origins * sizeof(w->ogot[0]));
			w->cur = r;
			w->wrong[0] = '\0';
			rc = gr_mcast_recv(w->client, r->round, mcast_chunk, w, &mo);
			if (rc < 0) {
				mcast_fail(w, r, "receive: %s", gr_client_error(w->client));
			} else {
				r->complete = (unsigned int)rc;
				r->chunks_missing = expect - r->chunks_ok - r->chunks_wrong;
			}
			for (unsigned int k = 0; rc >= 0 && k < cfg->n_origins; k++)
				r->origins_empty += w->ogot[k] == 0;
			if (r->chunks_wrong != 0) {
				mcast_fail(w, r, "%s (%" PRIu64 " wrong chunks)", w->wrong,
					   r->chunks_wrong);
			} else if (r->origins_empty != 0) {
				unsigned int k = 0;

				while (w->ogot[k] != 0)
					k++;
				mcast_fail(w, r, "nothing from origin %u in %.0f ms (%u of %u origins "
					   "complete, %" PRIu64 " chunks missing)", cfg->origins[k],
					   (clock_now_s() - t0) * 1e3, r->complete, cfg->n_origins,
					   r->chunks_missing);
			} else if (o->require_all && r->chunks_missing != 0) {
				mcast_fail(w, r, "%u of %u origins complete, %" PRIu64 " chunks "
					   "missing after %.0f ms (--require-all)", r->complete,
					   cfg->n_origins, r->chunks_missing, (clock_now_s() - t0) * 1e3);
			}
		}
		r->ms = (clock_now_s() - t0) * 1e3;
		w->rounds_run++;
		if (o->json)
			continue;
		char miss[48] = "", wrong[48] = "";

		if (r->chunks_missing != 0)
			snprintf(miss, sizeof(miss), ", %" PRIu64 " missing", r->chunks_missing);
		if (r->chunks_wrong != 0)
			snprintf(wrong, sizeof(wrong), ", %" PRIu64 " WRONG", r->chunks_wrong);
		/* One printf per line: the workers' threads share stdout. */
		printf("worker %u round %" PRIu32 ": %.3f ms, %d chunks sent, %u of %u origins "
		       "complete, %" PRIu64 " chunks verified%s%s%s\n", w->id, r->round, r->ms,
		       r->sent < 0 ? 0 : r->sent, r->complete, cfg->n_origins, r->chunks_ok, miss,
		       wrong, r->verified ? "" : " (failed)");
	}
	return NULL;
}

/* --- Options ------------------------------------------------------------------------------- */

static int
parse_u32(const char *name, const char *s, uint64_t min, uint64_t max, uint32_t *out)
{
	uint64_t v;

	if (cli_uint(PROG, name, s, min, max, &v) < 0)
		return -1;
	*out = (uint32_t)v;
	return 0;
}

static int
parse_id(const char *name, const char *s, uint16_t *out)
{
	uint32_t v;

	if (parse_u32(name, s, 1, 0xfffe, &v) < 0)
		return -1;
	*out = (uint16_t)v;
	return 0;
}

static int
parse_all(struct opts *o, const char *s)
{
	char *copy = strdup(s), *save = NULL;
	int rc = 0;

	free(o->all);
	o->all = calloc(ALL_WORKERS_MAX, sizeof(o->all[0]));
	o->n_all = 0;
	if (copy == NULL || o->all == NULL) {
		cli_error(PROG, "out of memory");
		free(copy);
		return -1;
	}
	if (s[0] == '\0' || s[0] == ',' || s[strlen(s) - 1] == ',' || strstr(s, ",,")) {
		cli_error(PROG, "--all-workers: '%s' is not a list ID,ID,...", s);
		free(copy);
		return -1;
	}
	for (char *t = strtok_r(copy, ",", &save); t != NULL; t = strtok_r(NULL, ",", &save)) {
		uint16_t id;

		if (o->n_all == ALL_WORKERS_MAX) {
			cli_error(PROG, "--all-workers: more than %d workers", ALL_WORKERS_MAX);
			rc = -1;
			break;
		}
		if (parse_id("--all-workers", t, &id) < 0) {
			rc = -1;
			break;
		}
		for (int i = 0; i < o->n_all; i++)
			if (o->all[i] == id) {
				cli_error(PROG, "--all-workers: worker %u listed twice", id);
				rc = -1;
			}
		if (rc < 0)
			break;
		o->all[o->n_all++] = id;
	}
	free(copy);
	return rc;
}

static bool
is_dtype_name(const char *s)
{
	for (int d = GR_DTYPE_FP32; d <= GR_DTYPE_MXFP4; d++)
		if (strcmp(s, gr_dtype_name((enum gr_dtype)d)) == 0)
			return true;
	return false;
}

/* 0, 1 for --help, or -1 after printing why. */
static int
parse_opts(int argc, char **argv, struct opts *o)
{
	static const struct option longopts[] = {
		{ "table", required_argument, NULL, 't' },
		{ "control", required_argument, NULL, 'c' },
		{ "job", required_argument, NULL, 'J' },
		TLS_OPTS_LONGOPTS,
		{ "worker-id", required_argument, NULL, 'w' },
		{ "rounds", required_argument, NULL, 'n' },
		{ "first-round", required_argument, NULL, 'f' },
		{ "all-workers", required_argument, NULL, 'a' },
		{ "input", required_argument, NULL, 'i' },
		{ "output", required_argument, NULL, 'o' },
		{ "window", required_argument, NULL, 'W' },
		{ "timeout", required_argument, NULL, 'T' },
		{ "json", no_argument, NULL, 'j' },
		{ "follow", no_argument, NULL, 'F' },
		{ "multicast", no_argument, NULL, 'M' },
		{ "require-all", no_argument, NULL, 'R' },
		{ "start-at", required_argument, NULL, 'S' },
		{ "round-interval", required_argument, NULL, 'I' },
		{ "dtype", required_argument, NULL, 'D' },
		{ "forget-results", no_argument, NULL, 'G' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	int c;

	opterr = 0;
	while ((c = getopt_long(argc, argv, ":h", longopts, NULL)) != -1) {
		if (tls_opts_take(&o->tls_opts, c, optarg))
			continue;
		switch (c) {
		case 't':
			o->table = optarg;
			break;
		case 'c':
			o->control = optarg;
			break;
		case 'J':
			if (parse_u32("--job", optarg, 0, UINT32_MAX, &o->job) < 0)
				return -1;
			o->has_job = true;
			break;
		case 'w':
			if (o->n_ids == WORKERS_MAX) {
				cli_error(PROG, "--worker-id: at most %d workers", WORKERS_MAX);
				return -1;
			}
			if (parse_id("--worker-id", optarg, &o->ids[o->n_ids]) < 0)
				return -1;
			for (int i = 0; i < o->n_ids; i++)
				if (o->ids[i] == o->ids[o->n_ids]) {
					cli_error(PROG, "--worker-id: %u given twice", o->ids[i]);
					return -1;
				}
			o->n_ids++;
			break;
		case 'n':
			if (parse_u32("--rounds", optarg, 1, ROUNDS_MAX, &o->rounds) < 0)
				return -1;
			break;
		case 'f':
			if (parse_u32("--first-round", optarg, 0, UINT32_MAX, &o->first_round) < 0)
				return -1;
			break;
		case 'a':
			if (parse_all(o, optarg) < 0)
				return -1;
			break;
		case 'i':
			o->input = optarg;
			break;
		case 'D':
			if (!is_dtype_name(optarg)) {
				cli_error(PROG, "--dtype: '%s' is not fp32, fp16, bf16, mxint8, "
					  "mxfp8 or mxfp4", optarg);
				return -1;
			}
			o->dtype = optarg;
			break;
		case 'o':
			o->output = optarg;
			break;
		case 'W':
			if (parse_u32("--window", optarg, 1, GR_WINDOW_MAX, &o->window) < 0)
				return -1;
			break;
		case 'T':
			if (cli_double(PROG, "--timeout", optarg, 0.001, 86400, &o->timeout_s) < 0)
				return -1;
			break;
		case 'j':
			o->json = true;
			break;
		case 'F':
			o->follow = true;
			break;
		case 'G':
			o->forget_results = true;
			break;
		case 'M':
			o->multicast = true;
			break;
		case 'R':
			o->require_all = true;
			break;
		case 'S':
			if (cli_double(PROG, "--start-at", optarg, 0, 1e11, &o->start_at) < 0)
				return -1;
			break;
		case 'I':
			if (cli_double(PROG, "--round-interval", optarg, 0.001, 86400,
				       &o->interval_s) < 0)
				return -1;
			break;
		case 'h':
			return 1;
		case ':':
			cli_error(PROG, "%s: missing argument (see --help)", argv[optind - 1]);
			return -1;
		default:
			if (optopt != 0)
				cli_error(PROG, "-%c: unknown option (see --help)", optopt);
			else
				cli_error(PROG, "%s: unknown option (see --help)", argv[optind - 1]);
			return -1;
		}
	}
	if (optind < argc) {
		cli_error(PROG, "'%s': unexpected argument (see --help)", argv[optind]);
		return -1;
	}
	if ((o->table == NULL && o->control == NULL) || o->n_ids == 0) {
		cli_error(PROG, "%s is required (see --help)",
			  o->n_ids == 0 ? "--worker-id" : "--table or --control");
		return -1;
	}
	if (o->table != NULL && o->control != NULL) {
		cli_error(PROG, "--table and --control exclude each other");
		return -1;
	}
	if (o->control != NULL && !o->has_job) {
		cli_error(PROG, "--control needs --job");
		return -1;
	}
	if (o->control == NULL && (o->has_job || tls_opts_given(&o->tls_opts))) {
		cli_error(PROG, "--job, --cert, --key, --ca and --server-name need --control");
		return -1;
	}
	if (o->control != NULL)
		o->follow = true;
	if (o->output != NULL && o->n_ids != 1) {
		cli_error(PROG, "--output: needs exactly one --worker-id, not %d", o->n_ids);
		return -1;
	}
	if (o->input != NULL && o->all != NULL) {
		cli_error(PROG, "--input and --all-workers exclude each other");
		return -1;
	}
	if (o->multicast) {
		const char *x = o->input != NULL ? "--input" : o->output != NULL ? "--output" :
				o->all != NULL ? "--all-workers" : o->window != 0 ? "--window" :
				o->follow ? "--follow" : NULL;

		if (x != NULL) {
			cli_error(PROG, "--multicast and %s exclude each other", x);
			return -1;
		}
	} else if (o->require_all || o->start_at >= 0 || o->interval_s > 0) {
		cli_error(PROG, "%s: needs --multicast", o->require_all ? "--require-all" :
			  o->start_at >= 0 ? "--start-at" : "--round-interval");
		return -1;
	}
	return 0;
}

/* The whole file, which must hold exactly `want` bytes; NULL after printing why. */
static void *
read_input(const char *path, size_t want)
{
	FILE *f = fopen(path, "rb");
	void *p = NULL;
	long len;

	if (f == NULL) {
		cli_error(PROG, "--input %s: %s", path, strerror(errno));
		return NULL;
	}
	if (fseek(f, 0, SEEK_END) != 0 || (len = ftell(f)) < 0 || fseek(f, 0, SEEK_SET) != 0) {
		cli_error(PROG, "--input %s: not a regular file", path);
		goto out;
	}
	if ((size_t)len != want) {
		cli_error(PROG, "--input %s: %ld bytes, the table's tensor has %zu", path, len, want);
		goto out;
	}
	p = malloc(want);
	if (p == NULL || fread(p, 1, want, f) != want) {
		cli_error(PROG, "--input %s: %s", path, p == NULL ? "out of memory" : "short read");
		free(p);
		p = NULL;
	}
out:
	fclose(f);
	return p;
}

static int
write_output(const char *path, const void *buf, size_t len)
{
	FILE *f = fopen(path, "wb");

	if (f == NULL || fwrite(buf, 1, len, f) != len || fclose(f) != 0) {
		cli_error(PROG, "--output %s: %s", path, strerror(errno));
		if (f != NULL)
			fclose(f);
		return -1;
	}
	return 0;
}

/* --- Output -------------------------------------------------------------------------------- */

static json_t *
stats_json(const struct gr_client *c)
{
	struct gr_stats s;

	gr_client_stats(c, &s);
	return json_pack("{s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, "
			 "s:I, s:I, s:I, s:I, s:I, s:I, s:I}",
			 "timeouts", (json_int_t)s.timeouts,
			 "cancels", (json_int_t)s.cancels,
			 "contribs_sent", (json_int_t)s.contribs_sent,
			 "contribs_retx", (json_int_t)s.contribs_retx,
			 "nacks_sent", (json_int_t)s.nacks_sent,
			 "results", (json_int_t)s.results,
			 "acks", (json_int_t)s.acks,
			 "duplicates", (json_int_t)s.duplicates,
			 "stale", (json_int_t)s.stale,
			 "invalid", (json_int_t)s.invalid,
			 "srtt_us", (json_int_t)s.srtt_us,
			 "t1_us", (json_int_t)s.t1_us,
			 "mcast_sent", (json_int_t)s.mcast_sent,
			 "mcast_received", (json_int_t)s.mcast_received,
			 "mcast_late", (json_int_t)s.mcast_late,
			 "mcast_too_far", (json_int_t)s.mcast_too_far,
			 "mcast_skipped", (json_int_t)s.mcast_skipped,
			 "mcast_nacks_sent", (json_int_t)s.mcast_nacks_sent,
			 "mcast_repaired", (json_int_t)s.mcast_repaired,
			 "kept_answers", (json_int_t)s.kept_answers,
			 "kept_misses", (json_int_t)s.kept_misses);
}

static int
print_json(const struct opts *o, const struct gr_config *cfg, struct worker *ws, bool ok)
{
	double bytes = (double)cfg->elements * (double)gr_dtype_size(cfg->dtype);
	json_t *workers = json_array();
	json_t *doc;
	int rc;

	for (int i = 0; i < o->n_ids; i++) {
		struct worker *w = &ws[i];
		json_t *rounds = json_array();

		for (uint32_t r = 0; r < w->rounds_run; r++) {
			const struct round_res *x = &w->res[r];

			if (o->multicast) {
				json_array_append_new(rounds,
					json_pack("{s:I, s:f, s:i, s:i, s:i, s:I, s:I, s:I, s:b}",
						  "round", (json_int_t)x->round, "ms", x->ms,
						  "sent", x->sent,
						  "origins", (int)gr_client_config(w->client)->n_origins,
						  "origins_complete", (int)x->complete,
						  "chunks_verified", (json_int_t)x->chunks_ok,
						  "chunks_missing", (json_int_t)x->chunks_missing,
						  "chunks_wrong", (json_int_t)x->chunks_wrong,
						  "verified", x->verified));
				continue;
			}
			json_array_append_new(rounds,
				json_pack("{s:I, s:f, s:f, s:i, s:b}", "round", (json_int_t)x->round,
					  "ms", x->ms, "gbps", bytes * 8 / (x->ms * 1e6),
					  "contrib", x->contrib, "verified", x->verified));
		}
		json_array_append_new(workers,
			json_pack("{s:i, s:b, s:s?, s:o, s:o}", "id", w->id, "ok", w->ok, "error",
				  w->ok ? NULL : w->msg, "rounds", rounds, "stats",
				  stats_json(w->client)));
	}
	doc = json_pack("{s:b, s:b, s:I, s:I, s:s, s:I, s:f, s:o}", "ok", ok, "multicast",
			o->multicast, "job", (json_int_t)cfg->job, "epoch", (json_int_t)cfg->epoch,
			"dtype", gr_dtype_name(cfg->dtype), "elements", (json_int_t)cfg->elements,
			"bytes", bytes, "workers", workers);
	if (doc == NULL)
		return -1;
	rc = json_dumpf(doc, stdout, JSON_INDENT(2));
	fputc('\n', stdout);
	json_decref(doc);
	return rc;
}

/* --control: join as worker w and wait up to the round timeout for its configuration. */
static int
join_config(const struct opts *o, struct worker *w, struct gr_config *c, char *err,
	    size_t errlen)
{
	struct gr_join_opts jo = {
		.control = o->control,
		.cert = o->tls_opts.cert,
		.key = o->tls_opts.key,
		.ca = o->tls_opts.ca,
		.server_name = o->tls_opts.server_name,
		.job = o->job,
		.worker_id = w->id,
	};

	w->join = gr_join_open(&jo, err, errlen);
	if (w->join == NULL)
		return -errno;
	return gr_join_config(w->join, c, (int)(o->timeout_s * 1000), err, errlen);
}

int
main(int argc, char **argv)
{
	struct opts o = { .rounds = 1, .timeout_s = GR_TIMEOUT_DEFAULT_MS / 1000.0,
			  .start_at = -1 };
	pthread_barrier_t barrier;
	bool have_barrier = false;
	double start;
	struct worker *ws = NULL;
	pthread_t *th = NULL;
	void *input = NULL;
	const struct gr_config *cfg;
	char err[GR_ERR_MAX];
	int rc, status = 0;
	bool ok = true;

	rc = parse_opts(argc, argv, &o);
	if (rc != 0) {
		if (rc > 0)
			usage(stdout);
		free(o.all);
		return rc > 0 ? 0 : CLI_EXIT_USAGE;
	}
	ws = calloc((size_t)o.n_ids, sizeof(*ws));
	th = calloc((size_t)o.n_ids, sizeof(*th));
	if (ws == NULL || th == NULL) {
		cli_error(PROG, "out of memory");
		status = CLI_EXIT_FAIL;
		goto out;
	}
	/* Every client exists before any traffic: a bad table or id fails with nothing sent. */
	const char *src = o.table != NULL ? o.table : o.control;

	for (int i = 0; i < o.n_ids; i++) {
		struct gr_config c;
		struct worker *w = &ws[i];

		w->o = &o;
		w->id = o.ids[i];
		rc = o.control != NULL ? join_config(&o, w, &c, err, sizeof(err))
				       : gr_config_from_table(&c, o.table, w->id, err, sizeof(err));
		if (rc < 0) {
			cli_error(PROG, "%s", err);
			status = rc == -ETIMEDOUT || rc == -ECONNREFUSED ? CLI_EXIT_FAIL
									  : CLI_EXIT_USAGE;
			goto out;
		}
		if (o.multicast && !c.mcast_send && c.n_origins == 0) {
			cli_error(PROG, "worker %u neither sends nor receives on a multicast stream "
				  "of job %u in %s", w->id, c.job, src);
			status = CLI_EXIT_USAGE;
			goto out;
		}
		if (o.dtype != NULL && strcmp(o.dtype, gr_dtype_name(c.dtype)) != 0) {
			cli_error(PROG, "--dtype %s: the job of %s sends %s", o.dtype, o.table,
				  gr_dtype_name(c.dtype));
			status = CLI_EXIT_USAGE;
			goto out;
		}
		if (!o.multicast && c.n_trees == 0) {
			cli_error(PROG, "%s: no trees, only multicast streams (use --multicast)",
				  src);
			status = CLI_EXIT_USAGE;
			goto out;
		}
		c.forget_results = o.forget_results;
		w->client = gr_client_create(&c, err, sizeof(err));
		if (w->client == NULL) {
			cli_error(PROG, "worker %u: %s", w->id, err);
			status = errno == EINVAL ? CLI_EXIT_USAGE : CLI_EXIT_FAIL;
			goto out;
		}
		w->buf = malloc(c.elements * gr_dtype_size(c.dtype));
		w->res = calloc(o.rounds, sizeof(*w->res));
		w->ogot = calloc(c.n_origins + 1, sizeof(*w->ogot));
		if (w->buf == NULL || w->res == NULL || w->ogot == NULL) {
			cli_error(PROG, "out of memory for a tensor of %" PRIu64 " elements",
				  c.elements);
			status = CLI_EXIT_FAIL;
			goto out;
		}
	}
	cfg = gr_client_config(ws[0].client);
	if (o.input != NULL) {
		input = read_input(o.input, cfg->elements * gr_dtype_size(cfg->dtype));
		if (input == NULL) {
			status = CLI_EXIT_USAGE;
			goto out;
		}
	}
	if (o.multicast && o.interval_s == 0 && o.n_ids > 1) {
		if (pthread_barrier_init(&barrier, NULL, (unsigned int)o.n_ids) != 0) {
			cli_error(PROG, "cannot create a barrier for %d workers", o.n_ids);
			status = CLI_EXIT_FAIL;
			goto out;
		}
		have_barrier = true;
	}
	start = o.start_at >= 0 ? o.start_at : real_s();
	for (int i = 0; i < o.n_ids; i++) {
		ws[i].input = input;
		ws[i].show_progress = i == 0 && !o.json && isatty(STDERR_FILENO);
		ws[i].barrier = have_barrier ? &barrier : NULL;
		ws[i].start = start;
		if (pthread_create(&th[i], NULL, o.multicast ? worker_mcast : worker_main,
				   &ws[i]) != 0) {
			cli_error(PROG, "cannot start a thread for worker %u", ws[i].id);
			if (have_barrier) /* the started ones would wait for it forever */
				exit(CLI_EXIT_FAIL);
			for (int j = 0; j < i; j++)
				pthread_join(th[j], NULL);
			status = CLI_EXIT_FAIL;
			goto out;
		}
	}
	for (int i = 0; i < o.n_ids; i++)
		pthread_join(th[i], NULL);
	for (int i = 0; i < o.n_ids; i++) {
		if (!ws[i].ok) {
			cli_error(PROG, "%s", ws[i].msg);
			ok = false;
		}
	}
	if (o.json && print_json(&o, cfg, ws, ok) < 0) {
		cli_error(PROG, "cannot write the JSON summary");
		ok = false;
	}
	if (ok && o.output != NULL &&
	    write_output(o.output, ws[0].buf, cfg->elements * gr_dtype_size(cfg->dtype)) < 0)
		ok = false;
	status = ok ? 0 : CLI_EXIT_FAIL;
out:
	for (int i = 0; ws != NULL && i < o.n_ids; i++) {
		gr_client_free(ws[i].client);
		gr_join_close(ws[i].join);
		free(ws[i].buf);
		free(ws[i].csets);
		free(ws[i].res);
		free(ws[i].ogot);
	}
	if (have_barrier)
		pthread_barrier_destroy(&barrier);
	free(ws);
	free(th);
	free(input);
	free(o.all);
	return status;
}
