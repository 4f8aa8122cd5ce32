/* SPDX-License-Identifier: BSD-3-Clause
 *
 * georeduce-worker's options: the help text and parse_opts(), with the checks of which
 * options go together. Runs in the main thread before any client exists; an error is one
 * line on stderr (exit status 2).
 */
#include <getopt.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "ctlpeers.h"
#include "georeduce.h"
#include "georeduce_worker.h"
#include "revision.h"
#include "tls_opts.h"

void
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
		"  --control ENDPOINT[,ENDPOINT...]  instead of --table: join the job through\n"
		"                        the control process (tls://HOST:PORT of its API, or\n"
		"                        its socket; a list: its replicas, up to %d, failed\n"
		"                        over): each worker fetches its table and follows\n"
		"                        every new epoch from it (--follow is implied)\n"
		"  --job J               with --control: the job\n"
		"  --cert FILE, --key FILE, --ca FILE  with tls://: the worker certificate\n"
		"                        (it names worker-ID for each --worker-id), its key,\n"
		"                        the deployment's CA\n"
		"  --crl FILE            with tls://: the CA's CRL (a revoked control\n"
		"                        certificate is refused); SIGHUP reloads the four files\n"
		"                        for the next connection\n"
		"  --server-name NAME    the control process's certificate name   [control]\n"
		"  --worker-id ID        a local worker of that gateway (repeatable, up to %d)\n"
		"  --join-elastic NODE:IPV4:PORT  with --control: join an elastic job as one\n"
		"                        worker not declared in it, at site NODE, reached at\n"
		"                        IPV4:PORT; its id from the control process (or the one\n"
		"                        --worker-id); renewed while it runs, left at the end\n"
		"                        (the certificate names site-NODE)\n"
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
		"  --dtype NAME          refuse a table whose job sends another dtype (fp32, "
		"fp16,\n"
		"                        bf16, mxint8, mxfp8, mxfp4)\n"
		"  --output FILE         write the last round's result there (one worker only)\n"
		"  --window N|follow     chunks in flight per tree (default: the tree's window\n"
		"                        in the table, else its slot pool, else %d; follow:\n"
		"                        that, grown with the round trip measured up to half\n"
		"                        the slot pool)\n",
		CTL_PEERS_MAX, WORKERS_MAX, GR_WINDOW_DEFAULT);
	fprintf(f,
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
		"  --json                a JSON summary on stdout instead of lines\n",
		GR_TIMEOUT_DEFAULT_MS / 1000);
	fprintf(f,
		"  --revision N          act as a worker library of protocol revision 1.N, %d ..\n"
		"                        %d (a test and upgrade aid: below 14 a table whose\n"
		"                        chunks exceed 8192 bytes of payload is refused)\n"
		"  -h, --help            this help\n",
		REVISION_OLDEST, GEOREDUCE_REVISION);
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
		"                        date +%%s.%%N prints; default now), also without\n"
		"                        --multicast: processes that share it start their\n"
		"                        first AllReduce round together once they have their\n"
		"                        tables (a worker ready later starts at once)\n"
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
		"with --multicast wrong data or an origin without a chunk), 2 bad options or "
		"files.\n");
}

/* --control's list of endpoints (lib/ctlpeers.h): 0, or -1 after a line naming the bad
 * element. */
static int
control_list_check(const char *list)
{
	struct ctl_peers peers;
	char err[CTL_ERR_MAX];

	if (ctl_peers_parse(&peers, list, err, sizeof(err)) == 0)
		return 0;
	cli_error(PROG, "--control: %s", err);
	return -1;
}

static int
parse_u32(const char *name, const char *s, uint64_t min, uint64_t max, uint32_t *out)
{
	uint64_t v;

	if (cli_uint(PROG, name, s, min, max, &v) < 0)
		return -1;
	*out = (uint32_t)v;
	return 0;
}

/* --window: a count of chunks, or "table". */
static int
parse_window(const char *s, struct opts *o)
{
	if (strcmp(s, "follow") == 0) {
		o->follow_rtt = true;
		return 0;
	}
	if (s[0] < '0' || s[0] > '9') {
		fprintf(stderr,
			PROG
			": --window: '%s' is neither a count of chunks (1 .. %d) nor 'follow'\n",
			s, GR_WINDOW_MAX);
		return -1;
	}
	return parse_u32("--window", s, 1, GR_WINDOW_MAX, &o->window);
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

/* --join-elastic NODE:IPV4:PORT into o; 0, or -1 after printing why. */
static int
parse_elastic(const char *arg, struct opts *o)
{
	const char *c1 = strchr(arg, ':'), *c2 = c1 != NULL ? strchr(c1 + 1, ':') : NULL;
	uint32_t port;

	if (c1 == NULL || c2 == NULL || c1 == arg || (size_t)(c1 - arg) >= sizeof(o->el_node) ||
	    (size_t)(c2 - c1 - 1) >= sizeof(o->el_ipv4) || c2 == c1 + 1) {
		cli_error(PROG, "--join-elastic '%s': expected NODE:IPV4:PORT", arg);
		return -1;
	}
	if (parse_u32("--join-elastic's PORT", c2 + 1, 1, UINT16_MAX, &port) < 0)
		return -1;
	snprintf(o->el_node, sizeof(o->el_node), "%.*s", (int)(c1 - arg), arg);
	snprintf(o->el_ipv4, sizeof(o->el_ipv4), "%.*s", (int)(c2 - c1 - 1), c1 + 1);
	o->el_port = (uint16_t)port;
	o->elastic = true;
	return 0;
}

/* One more --worker-id: 0, or -1 after a message. */
static int
add_worker_id(struct opts *o, const char *arg)
{
	if (o->n_ids == WORKERS_MAX) {
		cli_error(PROG, "--worker-id: at most %d workers", WORKERS_MAX);
		return -1;
	}
	if (parse_id("--worker-id", arg, &o->ids[o->n_ids]) < 0)
		return -1;
	for (int i = 0; i < o->n_ids; i++)
		if (o->ids[i] == o->ids[o->n_ids]) {
			cli_error(PROG, "--worker-id: %u given twice", o->ids[i]);
			return -1;
		}
	o->n_ids++;
	return 0;
}

/* 0, 1 for --help, or -1 after printing why. */
int
parse_opts(int argc, char **argv, struct opts *o)
{
	static const struct option longopts[] = {
		{"table", required_argument, NULL, 't'},
		{"control", required_argument, NULL, 'c'},
		{"job", required_argument, NULL, 'J'},
		TLS_OPTS_LONGOPTS,
		{"worker-id", required_argument, NULL, 'w'},
		{"join-elastic", required_argument, NULL, 'E'},
		{"rounds", required_argument, NULL, 'n'},
		{"first-round", required_argument, NULL, 'f'},
		{"all-workers", required_argument, NULL, 'a'},
		{"input", required_argument, NULL, 'i'},
		{"output", required_argument, NULL, 'o'},
		{"window", required_argument, NULL, 'W'},
		{"timeout", required_argument, NULL, 'T'},
		{"json", no_argument, NULL, 'j'},
		{"follow", no_argument, NULL, 'F'},
		{"multicast", no_argument, NULL, 'M'},
		{"require-all", no_argument, NULL, 'R'},
		{"start-at", required_argument, NULL, 'S'},
		{"round-interval", required_argument, NULL, 'I'},
		{"dtype", required_argument, NULL, 'D'},
		{"forget-results", no_argument, NULL, 'G'},
		{"revision", required_argument, NULL, 'V'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
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
			if (add_worker_id(o, optarg) < 0)
				return -1;
			break;
		case 'E':
			if (parse_elastic(optarg, o) < 0)
				return -1;
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
				cli_error(PROG,
					  "--dtype: '%s' is not fp32, fp16, bf16, mxint8, "
					  "mxfp8 or mxfp4",
					  optarg);
				return -1;
			}
			o->dtype = optarg;
			break;
		case 'o':
			o->output = optarg;
			break;
		case 'W':
			if (parse_window(optarg, o) < 0)
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
		case 'V':
			if (parse_u32("--revision", optarg, REVISION_OLDEST, GEOREDUCE_REVISION,
				      &o->revision) < 0)
				return -1;
			if (o->revision == GEOREDUCE_REVISION) /* the library's own */
				o->revision = 0;
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
				cli_error(PROG, "%s: unknown option (see --help)",
					  argv[optind - 1]);
			return -1;
		}
	}
	if (optind < argc) {
		cli_error(PROG, "'%s': unexpected argument (see --help)", argv[optind]);
		return -1;
	}
	if (o->elastic && (o->control == NULL || o->n_ids > 1)) {
		cli_error(PROG, "--join-elastic needs --control and takes one --worker-id at most");
		return -1;
	}
	if (o->elastic && o->n_ids == 0)
		o->ids[o->n_ids++] = 0; /* the control process gives it */
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
		cli_error(PROG,
			  "--job, --cert, --key, --ca, --crl and --server-name need --control");
		return -1;
	}
	if (o->control != NULL) {
		if (control_list_check(o->control) != 0)
			return -1;
		o->follow = true;
	}
	if (o->output != NULL && o->n_ids != 1) {
		cli_error(PROG, "--output: needs exactly one --worker-id, not %d", o->n_ids);
		return -1;
	}
	if (o->input != NULL && o->all != NULL) {
		cli_error(PROG, "--input and --all-workers exclude each other");
		return -1;
	}
	if (o->multicast) {
		const char *x = o->input != NULL                ? "--input" :
				o->output != NULL               ? "--output" :
				o->all != NULL                  ? "--all-workers" :
				o->window != 0 || o->follow_rtt ? "--window" :
				o->follow                       ? "--follow" :
								  NULL;

		if (x != NULL) {
			cli_error(PROG, "--multicast and %s exclude each other", x);
			return -1;
		}
	} else if (o->require_all || o->interval_s > 0) {
		cli_error(PROG, "%s: needs --multicast",
			  o->require_all ? "--require-all" : "--round-interval");
		return -1;
	}
	return 0;
}
