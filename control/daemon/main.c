/* SPDX-License-Identifier: BSD-3-Clause
 *
 * georeduce-control: plans the jobs of a deployment and installs them in every gateway
 * (docs/DEPLOYMENT.md).
 *
 *   georeduce-control tables DEPLOYMENT --out DIR [--epoch N] [--job J] [--install]
 *   georeduce-control run DEPLOYMENT [--socket PATH] [--listen HOST:PORT]
 *                                    [--heartbeat-ms N] [--fail-after N] [--timeout-ms N]
 *   georeduce-control status [--socket PATH|tls://HOST:PORT] [--json] [--timeout-ms N]
 *                            [--watch [--interval S] [--count N]]
 *   georeduce-control replan [--socket PATH|tls://HOST:PORT] [--timeout-ms N] [JOB]
 *   georeduce-control reload-tls [--socket PATH|tls://HOST:PORT] [--timeout-ms N]
 *   georeduce-control job create|update|delete|list ... (jobcli.h)
 * (with a tls:// endpoint: --cert FILE --key FILE --ca FILE [--server-name NAME]; the
 * client commands take a comma-separated list of the replicas' endpoints, lib/ctlpeers.h)
 *
 * Exit status: 0 success; 1 valid input on which the work failed (no plan fits, the daemon
 * could not start, the daemon answered with an error); 2 bad options or files, or no
 * answer from the daemon.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "cli.h"
#include "ctlmsg.h"
#include "ctlpeers.h"
#include "ctltls.h"
#include "daemon.h"
#include "deploy.h"
#include "install.h"
#include "jobcli.h"
#include "jobplan.h"
#include "jsonutil.h"
#include "promsrv.h"
#include "shares.h"
#include "status_print.h"
#include "tls_opts.h"

#define PROG "georeduce-control"

static void
usage(FILE *f)
{
	fprintf(f,
		"Usage: " PROG " COMMAND [OPTIONS]\n"
		"\n"
		"  tables DEPLOYMENT --out DIR [--epoch N] [--job J] [--install]\n"
		"      plan every job (or job J) and write DIR/job-J-plan.json and one\n"
		"      georeduce-table/1 file per gateway, DIR/job-J-NODE.json, for epoch N [1];\n"
		"      the jobs written share the links by weight as if they ran at once (job J\n"
		"      alone: the whole capacities); the files hold no link key. With\n"
		"      --install, also install the epoch (keys and all) on every gateway over\n"
		"      its local control socket, in two phases; calls time out after\n"
		"      --timeout-ms\n"
		"  run DEPLOYMENT [--socket PATH] [--listen HOST:PORT] [--heartbeat-ms N]\n"
		"      [--fail-after N] [--timeout-ms N] [--out DIR] [--metrics ADDR:PORT]\n"
		"      the daemon: plan, install epochs in two phases, heartbeat the gateways\n"
		"      every N ms [%d], fail one after N missed heartbeats [%d], re-plan without\n"
		"      it; calls to a dataplane time out after N ms [%d]; with --out, every live\n"
		"      epoch's plan and tables are written to DIR (as 'tables' does) for workers\n"
		"      that follow their gateway's table. --listen serves the API over TLS\n"
		"      (default: the deployment's tls.listen). --metrics serves Prometheus\n"
		"      metrics at http://ADDR:PORT/metrics (docs/METRICS.md) [off].\n"
		"      --state-dir DIR keeps the jobs created through the API [none: memory].\n"
		"      --etcd URL[,URL...] replicas on etcd (docs/DEPLOYMENT.md): one leads,\n"
		"      the others follow; the API's jobs are kept in etcd. --etcd-prefix P\n"
		"      [" ELECT_PREFIX_DEFAULT "], --lease-ms N the leader's lease [%d],\n"
		"      --name NAME this replica's [host name], --etcd-ca/-cert/-key FILE\n"
		"      https to etcd with a client certificate; --timeout-ms defaults to half\n"
		"      the lease\n"
		"      SIGINT/SIGTERM stop it. Re-planning without churn (docs/DEPLOYMENT.md):\n"
		"      --min-epoch-ms N  an epoch lives N ms before a measurement or a return\n"
		"                        replaces it [%d]\n"
		"      --short-ms N, --short-samples N  a link is short once two thirds of a\n"
		"                        window of N ms [%d] and N heartbeats [%d] found it so\n"
		"      --replans-per-min N  re-plans of a job a minute, then measurements and\n"
		"                        returns wait [%d]\n"
		"      --failure-replans-per-min N  the same for failures [%d]\n"
		"      Elastic jobs (docs/CONTROL.md, \"Elastic membership\"):\n"
		"      --batch-ms N      joins and leaves within N ms make one epoch [%d]\n"
		"      --member-timeout-ms N  a joined worker not heard from for N ms is\n"
		"                        removed [%d]\n"
		"      --idle-ms N       a job without traffic for N ms leaves the links to the\n"
		"                        jobs that run; one back soon after that, after up to\n"
		"                        8 N (docs/CONTROL.md) [%d]\n"
		"  status [--socket PATH] [--json] [--timeout-ms N]\n"
		"         [--watch [--interval S] [--count N]]\n"
		"      jobs, epochs, gateways and rates, from the running daemon; --watch\n"
		"      refreshes every S seconds [1] (N times, 0 = until SIGINT [0]): jobs,\n"
		"      rounds in flight, per-link planned against measured rate, drops; redrawn\n"
		"      in place on a terminal, successive snapshots otherwise (with --json, one\n"
		"      JSON document a line)\n"
		"  replan [--socket PATH] [--timeout-ms N] [JOB]\n"
		"      ask the running daemon to plan and install a new epoch of JOB (or all)\n"
		"  reload-tls [--socket PATH] [--timeout-ms N]\n"
		"      have the running daemon read its TLS files again, as SIGHUP does\n"
		"%s"
		"\n"
		"  --socket PATH   the daemon's control socket        [" DAEMON_SOCKET_DEFAULT "]\n"
		"                  or, for status, replan and job, tls://HOST:PORT (its "
		"--listen);\n"
		"                  for those, a comma-separated list of the replicas' endpoints\n"
		"                  (up to 8; each call fails over: docs/CONTROL.md)\n"
		"  --cert FILE, --key FILE, --ca FILE  with tls://: a certificate of role\n"
		"                  control (monitor: status only), its key, the CA\n"
		"  --crl FILE      with tls://: the CA's CRL; a revoked daemon certificate\n"
		"                  is refused\n"
		"  --server-name NAME  the name the daemon's certificate carries  [control]\n"
		"\n"
		"docs/DEPLOYMENT.md describes the deployment file.\n",
		DAEMON_HEARTBEAT_MS_DEFAULT, DAEMON_FAIL_AFTER_DEFAULT, DAEMON_TIMEOUT_MS_DEFAULT,
		ELECT_LEASE_MS_DEFAULT, HYST_MIN_EPOCH_MS_DEFAULT, HYST_SHORT_MS_DEFAULT,
		HYST_SHORT_SAMPLES_DEFAULT, HYST_REPLANS_PER_MIN_DEFAULT,
		HYST_FAILURE_REPLANS_PER_MIN_DEFAULT, HYST_BATCH_MS_DEFAULT,
		HYST_MEMBER_TIMEOUT_MS_DEFAULT, HYST_IDLE_MS_DEFAULT, JOBCLI_USAGE);
}

struct opts {
	const char *socket;
	const char *listen;
	const char *metrics;
	struct tls_opts tls_opts; /* status, replan, reload-tls: --cert, --key, --ca, --crl,
				   * --server-name */
	const char *out;
	const char *state_dir; /* run: --state-dir */
	const char *etcd[6];   /* run: --etcd, --etcd-prefix, --name, --etcd-ca, -cert, -key */
	int lease_ms;          /* run: --lease-ms */
	bool timeout_set;      /* --timeout-ms given */
	uint32_t epoch;
	int heartbeat_ms, fail_after, timeout_ms;
	int hyst[8]; /* run: the HYST_OPTS, in their order */
	bool json;
	bool watch;        /* status: refresh until count or SIGINT */
	double interval_s; /* status --watch: seconds between refreshes */
	int count;         /* status --watch: refreshes; 0 = no limit */
	bool install;      /* tables: install each epoch as well */
	bool has_job;
	uint32_t job; /* tables: this job only */
	int n_args;
	char **args;
};

/* The hysteresis options' letters, in the order of struct opts' hyst[] (times in ms
 * and counts), their names and ranges. */
#define HYST_OPTS "mSnRFBTW"
static const char *const hyst_names[] = {"min-epoch-ms",
					 "short-ms",
					 "short-samples",
					 "replans-per-min",
					 "failure-replans-per-min",
					 "batch-ms",
					 "member-timeout-ms",
					 "idle-ms"};
static const int hyst_min[] = {0, 0, 1, 1, 1, 0, 100, 0};
static const int hyst_max[] = {3600000,         3600000, HYST_WINDOW_MAX, HYST_WINDOW_MAX,
			       HYST_WINDOW_MAX, 60000,   3600000,         86400000};

/* Options of subcommand cmd; 0, 1 after --help, or -1 after a one-line error. */
static int
parse_opts(const char *cmd, int argc, char **argv, struct opts *o)
{
	static const struct option longopts[] = {
		{"socket", required_argument, NULL, 's'},
		{"out", required_argument, NULL, 'o'},
		{"epoch", required_argument, NULL, 'e'},
		{"heartbeat-ms", required_argument, NULL, 'H'},
		{"fail-after", required_argument, NULL, 'f'},
		{"timeout-ms", required_argument, NULL, 't'},
		{"json", no_argument, NULL, 'j'},
		{"listen", required_argument, NULL, 'l'},
		TLS_OPTS_LONGOPTS,
		{"install", no_argument, NULL, 'i'},
		{"job", required_argument, NULL, 'J'},
		{"watch", no_argument, NULL, 'w'},
		{"interval", required_argument, NULL, 'I'},
		{"count", required_argument, NULL, 'c'},
		{"metrics", required_argument, NULL, 'M'},
		{"state-dir", required_argument, NULL, 'D'},
		{"etcd", required_argument, NULL, 'E'},
		{"etcd-prefix", required_argument, NULL, 'P'},
		{"name", required_argument, NULL, 'Q'},
		{"etcd-ca", required_argument, NULL, 'X'},
		{"etcd-cert", required_argument, NULL, 'Y'},
		{"etcd-key", required_argument, NULL, 'Z'},
		{"lease-ms", required_argument, NULL, 'U'},
		{"min-epoch-ms", required_argument, NULL, 'm'},
		{"short-ms", required_argument, NULL, 'S'},
		{"short-samples", required_argument, NULL, 'n'},
		{"replans-per-min", required_argument, NULL, 'R'},
		{"failure-replans-per-min", required_argument, NULL, 'F'},
		{"batch-ms", required_argument, NULL, 'B'},
		{"member-timeout-ms", required_argument, NULL, 'T'},
		{"idle-ms", required_argument, NULL, 'W'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	/* Which options each command takes. */
	const char *allowed = strcmp(cmd, "tables") == 0 ? "oeiJt" :
			      strcmp(cmd, "run") == 0    ? "sHftolMmSnRFBTWDEPQXYZU" :
			      strcmp(cmd, "status") == 0 ? "sjtCKALNwIc" :
			      strcmp(cmd, "job") == 0    ? "sjtCKALN" :
							   "stCKALN";
	bool watch_opts = false;
	uint64_t v;
	int c;

	opterr = 0;
	optind = 1;
	while ((c = getopt_long(argc, argv, ":s:o:e:H:f:t:l:jhiJ:", longopts, NULL)) != -1) {
		if (c == 'h') {
			usage(stdout);
			return 1;
		}
		if (c == ':') {
			cli_error(PROG, "%s: %s: missing argument", cmd, argv[optind - 1]);
			return -1;
		}
		if (c == '?' || strchr(allowed, c) == NULL) {
			cli_error(PROG, "%s: unknown option '%s' (see --help)", cmd,
				  argv[optind - 1]);
			return -1;
		}
		if (tls_opts_take(&o->tls_opts, c, optarg))
			continue;
		if (strchr(HYST_OPTS, c) != NULL) {
			int k = (int)(strchr(HYST_OPTS, c) - HYST_OPTS);

			if (cli_int(PROG, hyst_names[k], optarg, hyst_min[k], hyst_max[k],
				    &o->hyst[k]) < 0)
				return -1;
			continue;
		}
		switch (c) {
		case 's':
		case 'o':
		case 'D':
			if (optarg[0] == '\0') {
				cli_error(PROG, "--%s: empty path",
					  c == 's' ? "socket" :
					  c == 'o' ? "out" :
						     "state-dir");
				return -1;
			}
			*(c == 's' ? &o->socket : c == 'o' ? &o->out : &o->state_dir) = optarg;
			break;
		case 'E':
		case 'P':
		case 'Q':
		case 'X':
		case 'Y':
		case 'Z':
			if (optarg[0] == '\0') {
				cli_error(PROG, "%s: empty", argv[optind - 1]);
				return -1;
			}
			o->etcd[strchr("EPQXYZ", c) - "EPQXYZ"] = optarg;
			break;
		case 'U':
			if (cli_int(PROG, "lease-ms", optarg, 1000, 3600000, &o->lease_ms) < 0)
				return -1;
			break;
		case 'e':
			if (cli_uint(PROG, "--epoch", optarg, 0, UINT32_MAX, &v) < 0)
				return -1;
			o->epoch = (uint32_t)v;
			break;
		case 'H':
			if (cli_int(PROG, "heartbeat-ms", optarg, 10, 3600000, &o->heartbeat_ms) <
			    0)
				return -1;
			break;
		case 'f':
			if (cli_int(PROG, "fail-after", optarg, 1, 1000000, &o->fail_after) < 0)
				return -1;
			break;
		case 't':
			if (cli_int(PROG, "timeout-ms", optarg, 1, 3600000, &o->timeout_ms) < 0)
				return -1;
			o->timeout_set = true;
			break;
		case 'j':
			o->json = true;
			break;
		case 'l':
			o->listen = optarg;
			break;
		case 'i':
			o->install = true;
			break;
		case 'w':
			o->watch = true;
			break;
		case 'I':
			if (cli_double(PROG, "interval", optarg, 0.05, 3600, &o->interval_s) < 0)
				return -1;
			watch_opts = true;
			break;
		case 'c':
			if (cli_int(PROG, "count", optarg, 0, 1000000000, &o->count) < 0)
				return -1;
			watch_opts = true;
			break;
		case 'M': {
			struct sockaddr_storage sa;
			socklen_t salen;
			char why[200];

			if (promsrv_parse_addr(optarg, &sa, &salen, why, sizeof(why)) != 0) {
				cli_error(PROG, "--metrics: %s", why);
				return -1;
			}
			o->metrics = optarg;
			break;
		}
		case 'J':
			if (cli_uint(PROG, "--job", optarg, 0, UINT32_MAX, &v) < 0)
				return -1;
			o->job = (uint32_t)v;
			o->has_job = true;
			break;
		}
	}
	o->args = argv + optind;
	o->n_args = argc - optind;
	if (!o->watch && watch_opts) {
		cli_error(PROG, "%s: --interval and --count go with --watch", cmd);
		return -1;
	}
	return 0;
}

/* The single DEPLOYMENT argument, loaded; NULL after a one-line error. */
static struct deploy *
load_deployment(const char *cmd, const struct opts *o)
{
	char err[DEPLOY_ERR_MAX];
	struct deploy *d;

	if (o->n_args != 1) {
		cli_error(PROG, "%s: expects one argument, DEPLOYMENT (see --help)", cmd);
		return NULL;
	}
	d = deploy_load(o->args[0], err, sizeof(err));
	if (d == NULL)
		cli_error(PROG, "%s", err);
	return d;
}

/* Install jp's epoch on the gateways that have a table, over their control sockets. */
static int
install_tables(const struct deploy *d, const struct jobplan *jp, int timeout_ms, char *err,
	       size_t errlen)
{
	struct install_gw *gws = calloc((size_t)jp->n_gateways, sizeof(*gws));
	struct table **tables = calloc((size_t)jp->n_gateways, sizeof(*tables));
	struct install_report rep = {0};
	int n = 0, rc;

	if (gws == NULL || tables == NULL) {
		free(gws);
		free(tables);
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	for (int v = 0; v < jp->n_gateways; v++) {
		if (jp->tables[v] == NULL)
			continue;
		if (strncmp(d->gateways[v].socket, "tls://", 6) == 0) {
			snprintf(err, errlen,
				 "--install: gateway %s has a tls:// endpoint; the "
				 "daemon (run) installs over TLS",
				 d->gateways[v].name);
			free(gws);
			free(tables);
			return -EINVAL;
		}
		install_gw_init(&gws[n], d->gateways[v].name, d->gateways[v].socket);
		tables[n++] = jp->tables[v];
	}
	rc = install_epoch(gws, tables, NULL, n, jp->job->id, jp->epoch, timeout_ms, &rep);
	for (int k = 0; k < n; k++)
		install_gw_close(&gws[k]);
	if (rc != 0)
		snprintf(err, errlen, "job %u epoch %u: install failed (phase %d): %s", jp->job->id,
			 jp->epoch, rep.phase, rep.error);
	free(gws);
	free(tables);
	return rc == 0 ? 0 : -EIO;
}

static int
cmd_tables(const struct opts *o)
{
	char err[JOBPLAN_ERR_MAX], summary[2048];
	struct jobplan_link *lk;
	bool *run;
	struct deploy *d;
	double *share;
	int status = 0, nd;

	if (o->out == NULL) {
		cli_error(PROG, "tables: --out DIR is required");
		return CLI_EXIT_USAGE;
	}
	d = load_deployment("tables", o);
	if (d == NULL)
		return CLI_EXIT_USAGE;
	/* The jobs share the links by weight, as the daemon plans them. */
	nd = 2 * d->topo->n_links;
	share = calloc((size_t)d->n_jobs * (size_t)nd + 1, sizeof(*share));
	lk = calloc((size_t)d->topo->n_links + 1, sizeof(*lk));
	run = calloc((size_t)d->n_jobs + 1, sizeof(*run));
	for (int i = 0; run != NULL && i < d->n_jobs; i++)
		run[i] = !o->has_job || d->jobs[i].id == o->job;
	if (share == NULL || lk == NULL || run == NULL ||
	    shares_compute(d, NULL, NULL, run, share) != 0) {
		cli_error(PROG, "tables: out of memory");
		free(share);
		free(lk);
		free(run);
		deploy_free(d);
		return CLI_EXIT_FAIL;
	}
	for (int i = 0; i < d->n_jobs; i++) {
		struct jobplan *jp = NULL;
		int rc;

		if (o->has_job && d->jobs[i].id != o->job)
			continue;
		shares_job_links(d, NULL, share + (size_t)i * (size_t)nd, lk);
		rc = jobplan_build(d, i, NULL, lk, o->epoch, &jp, err, sizeof(err));
		if (rc == 0)
			rc = jobplan_write(jp, d, o->out, err, sizeof(err));
		if (rc == 0 && o->install)
			rc = install_tables(d, jp, o->timeout_ms, err, sizeof(err));
		if (rc != 0) {
			/* No plan fits (1) and the next job is tried; anything else is the
			 * input's or the output directory's fault (2). */
			cli_error(PROG, "%s", err);
			jobplan_free(jp);
			status = rc == -ENOENT || rc == -EIO ? CLI_EXIT_FAIL : CLI_EXIT_USAGE;
			if (status == CLI_EXIT_USAGE)
				break;
			continue;
		}
		printf("job %u epoch %u: %s\n", d->jobs[i].id, o->epoch,
		       jobplan_summary(jp, summary, sizeof(summary)));
		printf("  wrote %s/job-%u-plan.json and %d tables\n", o->out, d->jobs[i].id,
		       jp->n_tables);
		jobplan_free(jp);
	}
	free(lk);
	free(run);
	free(share);
	deploy_free(d);
	return status;
}

/* run; argv: the whole command line, to start again as a follower after losing the
 * leadership (elect.h). */
static int
cmd_run(const struct opts *o, char **argv)
{
	struct daemon_opts dopt = {
		.socket = o->socket,
		.listen = o->listen,
		.metrics = o->metrics,
		.heartbeat_ms = o->heartbeat_ms,
		.fail_after = o->fail_after,
		.timeout_ms = o->timeout_ms,
		.out = o->out,
		.state_dir = o->state_dir,
		.etcd = o->etcd[0],
		.etcd_prefix = o->etcd[1],
		.name = o->etcd[2],
		.etcd_ca = o->etcd[3],
		.etcd_cert = o->etcd[4],
		.etcd_key = o->etcd[5],
		.lease_ms = o->lease_ms,
		.hyst = {.min_epoch_ms = o->hyst[0],
			 .short_ms = o->hyst[1],
			 .short_samples = o->hyst[2],
			 .replans_per_min = o->hyst[3],
			 .failure_replans_per_min = o->hyst[4]},
		.batch_ms = o->hyst[5],
		.member_timeout_ms = o->hyst[6],
		.idle_ms = o->hyst[7],
	};
	struct deploy *d = load_deployment("run", o);
	int rc;

	if (d == NULL)
		return CLI_EXIT_USAGE;
	if (hyst_cfg_check(&dopt.hyst) != NULL) {
		cli_error(PROG, "run: %s", hyst_cfg_check(&dopt.hyst));
		deploy_free(d);
		return CLI_EXIT_USAGE;
	}
	if (dopt.etcd == NULL && (o->etcd[1] != NULL || o->etcd[2] != NULL || o->etcd[3] != NULL ||
				  o->etcd[4] != NULL || o->etcd[5] != NULL || o->lease_ms != 0)) {
		cli_error(PROG,
			  "run: --etcd-prefix, --name, --lease-ms and --etcd-ca/-cert/-key go "
			  "with --etcd");
		deploy_free(d);
		return CLI_EXIT_USAGE;
	}
	/* A replica's gateway that does not answer holds its loop (its API, a heartbeat round,
	 * noticing that it was deposed) for at most half a lease; its keepalives have a
	 * thread of their own (elect.h) and are not delayed. */
	if (dopt.etcd != NULL && !o->timeout_set)
		dopt.timeout_ms = (o->lease_ms > 0 ? o->lease_ms : ELECT_LEASE_MS_DEFAULT) / 2;
	rc = daemon_run(d, &dopt);
	deploy_free(d);
	if (rc == -ESTALE) { /* deposed: the same command again, which follows */
		execv("/proc/self/exe", argv);
		control_log("cannot start again: %s", strerror(errno));
	}
	return rc == 0 ? 0 : CLI_EXIT_FAIL;
}

/* A connection to the daemon: its endpoints (the replicas of a replicated control
 * process, lib/ctlpeers.h) and, for tls://, the client context. */
struct dconn {
	struct ctltls_ctx *tls;
	struct ctl_peers peers;
};

/* Set up c for o's endpoints (nothing connects yet); 0, or CLI_EXIT_USAGE after a line. */
static int
dconn_open(const struct opts *o, struct dconn *c)
{
	char err[CTL_ERR_MAX];

	c->tls = NULL;
	if (ctl_peers_parse(&c->peers, o->socket, err, sizeof(err)) != 0) {
		cli_error(PROG, "--socket: %s", err);
		return CLI_EXIT_USAGE;
	}
	if (tls_opts_client_ctx(&o->tls_opts, PROG, o->socket, &c->tls) != 0)
		return CLI_EXIT_USAGE;
	ctl_peers_setup(&c->peers, c->tls,
			o->tls_opts.server_name != NULL ? o->tls_opts.server_name : "control",
			CTLTLS_ROLE_CONTROL, o->timeout_ms, true);
	return 0;
}

static void
dconn_close(struct dconn *c)
{
	ctl_peers_close(&c->peers);
	ctltls_ctx_free(c->tls);
	c->tls = NULL;
}

/* One call on c (connecting if needed, failing over between its endpoints); the ok
 * response, or NULL with err filled and *status set: CLI_EXIT_USAGE when no endpoint
 * answered, CLI_EXIT_FAIL when one answered with an error (a follower's refusal
 * included). */
static json_t *
dconn_call(struct dconn *c, const char *op, json_t *args, int *status, char *err, size_t errlen)
{
	json_t *r;
	int errnum;

	r = ctl_peers_call(&c->peers, op, args, 0, err, errlen);
	if (r == NULL) {
		*status = errno == EAGAIN ? CLI_EXIT_FAIL : CLI_EXIT_USAGE;
		return NULL;
	}
	if (!install_resp_ok(r, op, &errnum, err, errlen)) {
		json_decref(r);
		*status = CLI_EXIT_FAIL;
		return NULL;
	}
	*status = 0;
	return r;
}

/* One call to the daemon; the ok response, or NULL after printing why (*status set). */
static json_t *
call_daemon(const struct opts *o, const char *op, json_t *args, int *status)
{
	char err[CTL_ERR_MAX + 64];
	struct dconn c;
	json_t *r;

	*status = dconn_open(o, &c);
	if (*status != 0) {
		json_decref(args);
		return NULL;
	}
	r = dconn_call(&c, op, args, status, err, sizeof(err));
	dconn_close(&c);
	if (r == NULL)
		cli_error(PROG, "%s", err);
	return r;
}

/* ---- status --watch ---- */

static volatile sig_atomic_t watch_stop;

static void
watch_signal(int sig)
{
	(void)sig;
	watch_stop = 1;
}

/*
 * status --watch: a status call every interval until count refreshes or SIGINT/SIGTERM.
 * On a terminal each refresh redraws the screen in place (cursor home, every line
 * cleared to its end, the rest of the screen cleared); otherwise refreshes follow each
 * other, each a complete snapshot, so the output can be read by a program.
 */
static int
cmd_watch(const struct opts *o)
{
	struct sigaction sa = {.sa_handler = watch_signal}, old_int, old_term;
	char err[CTL_ERR_MAX + 64];
	bool tty = !o->json && isatty(STDOUT_FILENO);
	struct dconn c;
	int status, refresh = 0, rc = 0;

	status = dconn_open(o, &c);
	if (status != 0)
		return status;
	sigemptyset(&sa.sa_mask); /* no SA_RESTART: a signal ends the wait at once */
	sigaction(SIGINT, &sa, &old_int);
	sigaction(SIGTERM, &sa, &old_term);
	if (tty)
		printf("\033[?25l\033[H\033[2J"); /* hide the cursor, clear the screen */
	while (!watch_stop && (o->count == 0 || refresh < o->count)) {
		struct timespec ts;
		json_t *r = dconn_call(&c, "status", NULL, &status, err, sizeof(err));

		if (r == NULL) {
			if (watch_stop)
				break;
			if (tty)
				printf("\033[?25h\n");
			fflush(stdout);
			if (refresh == 0)
				cli_error(PROG, "%s", err);
			else
				cli_error(PROG,
					  "status --watch: the control process stopped answering "
					  "after %d refreshes: %s",
					  refresh, err);
			rc = status;
			goto out;
		}
		refresh++;
		if (o->json) {
			char *text;

			json_object_del(r, "version");
			json_object_del(r, "id");
			json_object_del(r, "ok");
			json_object_set_new(r, "refresh", json_integer(refresh));
			text = json_dumps(r, JSON_COMPACT);
			if (text != NULL)
				printf("%s\n", text);
			free(text);
		} else {
			/* Each refresh is written whole: a reader never sees half of one. */
			char *text = NULL;
			size_t len = 0;
			FILE *f = open_memstream(&text, &len);

			if (f != NULL) {
				if (tty)
					fprintf(f, "\033[H");
				else if (refresh > 1)
					fprintf(f, "\n");
				status_print_watch(f, r, ctl_peers_current(&c.peers), o->interval_s,
						   refresh, tty ? "\033[K" : "");
				if (tty)
					fprintf(f, "\033[J");
				if (fclose(f) == 0)
					fwrite(text, 1, len, stdout);
			}
			free(text);
		}
		json_decref(r);
		if (fflush(stdout) != 0 || ferror(stdout)) {
			rc = CLI_EXIT_FAIL;
			goto out;
		}
		if (o->count != 0 && refresh >= o->count)
			break;
		ts.tv_sec = (time_t)o->interval_s;
		ts.tv_nsec = (long)((o->interval_s - (double)ts.tv_sec) * 1e9);
		while (!watch_stop && nanosleep(&ts, &ts) != 0 && errno == EINTR)
			;
	}
	if (tty)
		printf("\033[?25h\n"); /* the cursor back */
	fflush(stdout);
out:
	sigaction(SIGINT, &old_int, NULL);
	sigaction(SIGTERM, &old_term, NULL);
	dconn_close(&c);
	return rc;
}

static int
cmd_status(const struct opts *o)
{
	int status;
	json_t *r;

	if (o->n_args != 0) {
		cli_error(PROG, "status: takes no arguments, got '%s'", o->args[0]);
		return CLI_EXIT_USAGE;
	}
	if (o->watch)
		return cmd_watch(o);
	r = call_daemon(o, "status", NULL, &status);
	if (r == NULL)
		return status;
	if (o->json) {
		json_object_del(r, "version");
		json_object_del(r, "id");
		json_object_del(r, "ok");
		json_util_dump(r, stdout);
	} else {
		status_print(r);
	}
	json_decref(r);
	return 0;
}

static int
cmd_replan(const struct opts *o)
{
	json_t *args = NULL, *r, *v;
	uint64_t job;
	int status;
	size_t i;

	if (o->n_args > 1) {
		cli_error(PROG, "replan: takes at most one argument, JOB");
		return CLI_EXIT_USAGE;
	}
	if (o->n_args == 1) {
		if (cli_uint(PROG, "JOB", o->args[0], 0, UINT32_MAX, &job) < 0)
			return CLI_EXIT_USAGE;
		args = json_pack("{s:I}", "job", (json_int_t)job);
	}
	r = call_daemon(o, "replan", args, &status);
	if (r == NULL)
		return status;
	json_array_foreach (json_object_get(r, "jobs"), i, v)
		printf("job %" JSON_INTEGER_FORMAT ": a new epoch is being planned\n",
		       json_integer_value(v));
	json_decref(r);
	return 0;
}

static int
cmd_reload_tls(const struct opts *o)
{
	json_t *r;
	int status;

	if (o->n_args > 0) {
		cli_error(PROG, "reload-tls: takes no arguments");
		return CLI_EXIT_USAGE;
	}
	r = call_daemon(o, "reload_tls", NULL, &status);
	if (r == NULL)
		return status;
	printf("reloaded: %s\n", json_string_value(json_object_get(r, "tls")));
	json_decref(r);
	return 0;
}

/* jobcli_run()'s call: one call to the daemon. */
static json_t *
job_call(const void *ctx, const char *op, json_t *args, int *status)
{
	return call_daemon(ctx, op, args, status);
}

int
main(int argc, char **argv)
{
	struct opts o = {
		.socket = DAEMON_SOCKET_DEFAULT,
		.epoch = 1,
		.heartbeat_ms = DAEMON_HEARTBEAT_MS_DEFAULT,
		.fail_after = DAEMON_FAIL_AFTER_DEFAULT,
		.hyst = {HYST_MIN_EPOCH_MS_DEFAULT, HYST_SHORT_MS_DEFAULT,
			 HYST_SHORT_SAMPLES_DEFAULT, HYST_REPLANS_PER_MIN_DEFAULT,
			 HYST_FAILURE_REPLANS_PER_MIN_DEFAULT, HYST_BATCH_MS_DEFAULT,
			 HYST_MEMBER_TIMEOUT_MS_DEFAULT, HYST_IDLE_MS_DEFAULT},
		.timeout_ms = DAEMON_TIMEOUT_MS_DEFAULT,
		.interval_s = 1,
	};
	const char *cmd;
	int rc;

	if (argc < 2) {
		cli_error(PROG, "no command (see --help)");
		return CLI_EXIT_USAGE;
	}
	cmd = argv[1];
	if (strcmp(cmd, "--help") == 0 || strcmp(cmd, "-h") == 0) {
		usage(stdout);
		return 0;
	}
	if (strcmp(cmd, "tables") != 0 && strcmp(cmd, "run") != 0 && strcmp(cmd, "status") != 0 &&
	    strcmp(cmd, "replan") != 0 && strcmp(cmd, "reload-tls") != 0 &&
	    strcmp(cmd, "job") != 0) {
		cli_error(PROG, "unknown command '%s' (see --help)", cmd);
		return CLI_EXIT_USAGE;
	}
	rc = parse_opts(cmd, argc - 1, argv + 1, &o);
	if (rc != 0)
		return rc > 0 ? 0 : CLI_EXIT_USAGE;
	if (strcmp(cmd, "tables") == 0)
		return cmd_tables(&o);
	if (strcmp(cmd, "run") == 0)
		return cmd_run(&o, argv);
	if (strcmp(cmd, "status") == 0)
		return cmd_status(&o);
	if (strcmp(cmd, "reload-tls") == 0)
		return cmd_reload_tls(&o);
	if (strcmp(cmd, "job") == 0)
		return jobcli_run(o.n_args, o.args, o.json, job_call, &o);
	return cmd_replan(&o);
}
