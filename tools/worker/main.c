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
 *
 * This file holds main(): the options read (options.c), every worker's client created,
 * the --input file read, the workers' threads run (allreduce.c, or mcast.c with
 * --multicast; the patterns and checks in verify.c, epochs followed in follow.c), then the
 * --json summary (report.c) and the --output file written. SIGHUP (with --control) has
 * each worker reload its TLS files before it next asks the control process (follow.c).
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "georeduce.h"
#include "georeduce_worker.h"

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
		cli_error(PROG, "--input %s: %ld bytes, the table's tensor has %zu", path, len,
			  want);
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

/* SIGHUP: counted; the workers' threads reload (follow.c). */
static void
on_hup(int sig)
{
	(void)sig;
	worker_hups++;
}

/* --control: join as worker w and wait up to the round timeout for its configuration. */
static int
join_config(const struct opts *o, struct worker *w, struct gr_config *c, char *err, size_t errlen)
{
	struct gr_join_opts jo = {
		.control = o->control,
		.cert = o->tls_opts.cert,
		.key = o->tls_opts.key,
		.ca = o->tls_opts.ca,
		.crl = o->tls_opts.crl,
		.server_name = o->tls_opts.server_name,
		.job = o->job,
		.worker_id = w->id,
	};

	if (o->elastic) {
		w->join = gr_join_elastic(&jo, o->el_node, o->el_ipv4, o->el_port, &w->id, err,
					  errlen);
		if (w->join != NULL)
			printf("worker %u joined job %u at %s\n", w->id, o->job, o->el_node);
	} else {
		w->join = gr_join_open(&jo, err, errlen);
	}
	if (w->join == NULL)
		return -errno;
	return gr_join_config(w->join, c, (int)(o->timeout_s * 1000), err, errlen);
}

int
main(int argc, char **argv)
{
	struct opts o = {.rounds = 1, .timeout_s = GR_TIMEOUT_DEFAULT_MS / 1000.0, .start_at = -1};
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

	/* One line per round as the round ends, also into a pipe or a file (a tester or a
	 * test watching the output): stdout is line buffered, not only on a terminal. */
	setvbuf(stdout, NULL, _IOLBF, 0);
	sigaction(SIGHUP, &(struct sigaction){.sa_handler = on_hup, .sa_flags = SA_RESTART}, NULL);
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
		rc = o.control != NULL ? join_config(&o, w, &c, err, sizeof(err)) :
					 gr_config_from_table(&c, o.table, w->id, err, sizeof(err));
		if (rc < 0) {
			cli_error(PROG, "%s", err);
			status = rc == -ETIMEDOUT || rc == -ECONNREFUSED ? CLI_EXIT_FAIL :
									   CLI_EXIT_USAGE;
			goto out;
		}
		if (o.multicast && !c.mcast_send && c.n_origins == 0) {
			cli_error(PROG,
				  "worker %u neither sends nor receives on a multicast stream "
				  "of job %u in %s",
				  w->id, c.job, src);
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
		c.revision = (uint8_t)o.revision;
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
		if (o.elastic && ws[i].join != NULL &&
		    gr_join_leave(ws[i].join, err, sizeof(err)) != 0)
			cli_error(PROG, "worker %u: leaving: %s", ws[i].id, err);
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
