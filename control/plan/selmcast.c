/* SPDX-License-Identifier: BSD-3-Clause
 *
 * georeduce-plan selmcast: multicast receiver selection (SELMCAST) over the sites of a
 * topology or a generated big-switch instance; writes the plan's "multicast" section,
 * compares with random selection and the exact MILP, or checks a plan's section.
 */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "clock.h"
#include "cli.h"
#include "jsonutil.h"
#include "plan.h"
#include "plan_common.h"
#include "selmcast.h"
#include "topo.h"

#define SEL_DEFAULT_BYTES (1ull << 30)
#define SEL_BYTES_MAX (1ull << 40)

static void
usage_selmcast(FILE *f)
{
	fprintf(f,
		"Usage: " PROG " selmcast (--topology FILE | --random N) [OPTIONS]\n"
		"\n"
		"Choose multicast receivers for peer-to-peer synchronisation (SELMCAST): each\n"
		"sender reaches at least P receivers per round, a pair left out for K rounds in a\n"
		"row is forced, the round's completion time is minimised, then every receiver "
		"that\n"
		"fits within it is added. Sites are limited by their ingress and egress bandwidth\n"
		"only (one big switch). Writes a georeduce-plan/1 plan with a \"multicast\" "
		"section.\n"
		"\n"
		"  -t, --topology FILE     georeduce-topology/1; every site with workers takes "
		"part.\n"
		"                          Node fields ingress_gbps, egress_gbps, update_bytes "
		"are\n"
		"                          used if present; otherwise a site's ingress (egress) "
		"is\n"
		"                          the sum of its links' capacities towards (away from) "
		"it\n"
		"      --random N          instead, N sites on one switch: egress G (1 + L x),\n"
		"                          ingress G M (1 + L x'), x and x' uniform in [-1, 1]\n"
		"      --seed S            seed of --random and of the random selection  [1]\n"
		"      --mean-gbps G       --random: mean bandwidth                      [10]\n"
		"      --lambda L          --random: spread, 0 <= L < 1                  [0.5]\n"
		"      --mu M              --random: ingress over egress                 [1]\n"
		"      --write-topology F  --random: also write the instance as a topology\n"
		"  -p, --p P               receivers per sender at least, 1 .. n-1  [30%% of n]\n"
		"  -k, --stale-rounds K    force a pair after K rounds without delivery;\n"
		"                          0 = never                                     [4]\n"
		"  -R, --rounds R          rounds, staleness carried between them (<= 1000) [1]\n"
		"  -m, --model M           network: one copy leaves the sender;\n"
		"                          application: one copy per receiver       [network]\n"
		"  -b, --bytes N           update size of every sender (suffixes K M G,\n"
		"                          KiB MiB GiB)                                  [1GiB]\n"
		"      --random-select     the baseline instead: P random receivers (Orpheus)\n"
		"      --exact             the exact lexicographic MILP instead (GLPK, n <= %d)\n"
		"      --milp-seconds S    time limit of each MILP solve                 [10]\n"
		"      --compare           no plan: SELMCAST, random selection and (n <= %d)\n"
		"                          the MILP on the same rounds, one row each\n"
		"      --json              --compare: machine-readable output\n"
		"      --check FILE        check the multicast section of a plan against the\n"
		"                          instance; prints one line\n"
		"  -o, --output FILE       write the plan there (default: stdout, and the\n"
		"                          summary goes to stderr)\n"
		"  -q, --quiet             no summary\n"
		"  -h, --help              this text\n",
		SELMCAST_EXACT_MAX_N, SELMCAST_EXACT_MAX_N);
}

/* The instance: its topology, the sites taking part and their bandwidths. */
struct sel_input {
	struct topo *t;
	int n;
	int *site;
	double *ingress, *egress;
	uint64_t *bytes;
	int *p;
};

static void
sel_input_fini(struct sel_input *si)
{
	topo_free(si->t);
	free(si->site);
	free(si->ingress);
	free(si->egress);
	free(si->bytes);
	free(si->p);
}

/* Room for the sites of si->t. 0, or -1 after a one-line error. */
static int
alloc_sites(struct sel_input *si)
{
	size_t n = (size_t)si->t->n_nodes;

	si->site = malloc(sizeof(int) * n);
	si->ingress = malloc(sizeof(double) * n);
	si->egress = malloc(sizeof(double) * n);
	si->bytes = malloc(sizeof(uint64_t) * n);
	if (si->site == NULL || si->ingress == NULL || si->egress == NULL || si->bytes == NULL) {
		cli_error(PROG, "selmcast: out of memory");
		return -1;
	}
	return 0;
}

/* Load --topology (text read once: the topology and its optional node fields). */
static int
load_instance(struct sel_input *si, const char *path, uint64_t bytes)
{
	char err[TOPO_ERR_MAX];
	char *text = json_util_read_file(path, err, sizeof(err));
	json_t *doc = NULL;
	int rc = -1, n;

	if (text == NULL) {
		fprintf(stderr, "%s: %s\n", PROG, err);
		return -1;
	}
	si->t = topo_parse(text, path, err, sizeof(err));
	if (si->t == NULL) {
		fprintf(stderr, "%s: %s\n", PROG, err);
		goto out;
	}
	if (alloc_sites(si) != 0)
		goto out;
	doc = json_loads(text, 0, NULL); /* parsed once already: cannot fail but on ENOMEM */
	if (doc == NULL) {
		cli_error(PROG, "selmcast: out of memory");
		goto out;
	}
	n = selmcast_sites(si->t, doc, path, bytes, si->site, si->ingress, si->egress, si->bytes,
			   err, sizeof(err));
	if (n < 0) {
		fprintf(stderr, "%s: %s\n", PROG, err);
		goto out;
	}
	si->n = n;
	rc = 0;
out:
	json_decref(doc);
	free(text);
	return rc;
}

static const char *
model_name(enum selmcast_model m)
{
	return m == SELMCAST_NETWORK ? "network" : "application";
}

/* Mean, over the rounds, of completion time and receivers per sender. */
static void
means(const struct selmcast_result *res, int rounds, int n, double *secs, double *per)
{
	*secs = 0;
	*per = 0;
	for (int r = 0; r < rounds; r++) {
		*secs += res[r].seconds / rounds;
		*per += (double)res[r].receivers / n / rounds;
	}
}

/* --compare: SELMCAST and random selection each over their own rounds; the MILP on the
 * rounds SELMCAST meets (same staleness), for the gap. */
static int
compare(const struct sel_input *si, const struct selmcast_inst *in, int rounds, uint64_t seed,
	const struct selmcast_exact_opts *eo, bool exact, bool json)
{
	size_t nn = (size_t)si->n * (size_t)si->n;
	struct selmcast_result *hr = calloc((size_t)rounds, sizeof(*hr));
	struct selmcast_result *rr = calloc((size_t)rounds, sizeof(*rr));
	struct selmcast_result *er = calloc((size_t)rounds, sizeof(*er));
	unsigned char *x = malloc(nn), *xr = malloc(nn * (size_t)rounds), *xe = malloc(nn);
	double h_plan = 0, h_plan_max = 0, e_plan = 0, gap_max = 0, gap_lb_max = 0;
	double h_s, h_per, r_s, r_per, e_s = 0, e_per = 0;
	int rc = CLI_EXIT_FAIL, t_opt = 0, c_opt = 0;
	struct selmcast_state st = {0};

	if (hr == NULL || rr == NULL || er == NULL || x == NULL || xr == NULL || xe == NULL ||
	    selmcast_state_init(&st, si->n) != 0) {
		cli_error(PROG, "selmcast: out of memory");
		goto out;
	}
	for (int r = 0; r < rounds; r++) {
		double t0 = clock_now_s(), dt;

		if (selmcast_select(in, st.stale, x, &hr[r]) != 0) {
			cli_error(PROG, "selmcast: out of memory");
			goto out;
		}
		dt = clock_now_s() - t0;
		h_plan += dt / rounds;
		h_plan_max = fmax(h_plan_max, dt);
		if (exact) {
			plan_note("exact MILP");
			if (selmcast_exact(in, st.stale, eo, xe, &er[r]) != 0) {
				cli_error(PROG, "selmcast: the MILP solver failed");
				goto out;
			}
			e_plan += er[r].solve_seconds / rounds;
			t_opt += er[r].time_optimal;
			c_opt += er[r].count_optimal;
			gap_max = fmax(gap_max, hr[r].seconds / er[r].seconds);
			gap_lb_max = fmax(gap_lb_max, hr[r].seconds / er[r].lower_seconds);
		}
		selmcast_state_advance(&st, x);
	}
	if (selmcast_run(in, SELMCAST_RANDOM, rounds, seed, NULL, xr, rr) != 0) {
		cli_error(PROG, "selmcast: out of memory");
		goto out;
	}
	means(hr, rounds, si->n, &h_s, &h_per);
	means(rr, rounds, si->n, &r_s, &r_per);
	if (exact)
		means(er, rounds, si->n, &e_s, &e_per);
	if (json) {
		json_t *root =
			json_pack("{s:s, s:i, s:s, s:i, s:i, s:i, s:[]}", "topology", si->t->name,
				  "sites", si->n, "model", model_name(in->model), "p", in->p[0],
				  "stale_rounds", in->stale_rounds, "rounds", rounds, "rows");
		json_t *arr = json_object_get(root, "rows");

		json_array_append_new(arr,
				      json_pack("{s:s, s:f, s:f, s:f, s:f}", "algorithm",
						"selmcast", "mean_seconds", h_s,
						"receivers_per_sender", h_per, "planning_seconds",
						h_plan, "max_planning_seconds", h_plan_max));
		json_array_append_new(arr, json_pack("{s:s, s:f, s:f}", "algorithm", "random",
						     "mean_seconds", r_s, "receivers_per_sender",
						     r_per));
		if (exact)
			json_array_append_new(
				arr,
				json_pack("{s:s, s:f, s:f, s:f, s:i, s:i, s:f, s:f}", "algorithm",
					  "exact", "mean_seconds", e_s, "receivers_per_sender",
					  e_per, "planning_seconds", e_plan, "time_optimal_rounds",
					  t_opt, "count_optimal_rounds", c_opt,
					  "max_selmcast_over_exact", gap_max,
					  "max_selmcast_over_bound", gap_lb_max));
		json_util_dump_new(root, stdout);
	} else {
		printf("'%s': %d sites, %s-layer multicast, p = %d, stale rounds %d, %d round%s\n",
		       si->t->name, si->n, model_name(in->model), in->p[0], in->stale_rounds,
		       rounds, rounds == 1 ? "" : "s");
		printf("%-10s %14s %14s %10s %12s\n", "algorithm", "completion s", "recv/sender",
		       "vs random", "plan s");
		printf("%-10s %14.6g %14.3f %9.3fx %12.6f\n", "selmcast", h_s, h_per, h_per / r_per,
		       h_plan);
		printf("%-10s %14.6g %14.3f %9.3fx %12s\n", "random", r_s, r_per, 1.0, "-");
		if (exact) {
			printf("%-10s %14.6g %14.3f %9.3fx %12.6f\n", "exact", e_s, e_per,
			       e_per / r_per, e_plan);
			printf("selmcast over exact: at most %.4f (over the proven bound %.4f); "
			       "MILP "
			       "optimal in %d/%d rounds for time, %d/%d for receivers\n",
			       gap_max, gap_lb_max, t_opt, rounds, c_opt, rounds);
		} else {
			printf("exact MILP skipped: n > %d\n", SELMCAST_EXACT_MAX_N);
		}
	}
	rc = 0;
out:
	selmcast_state_fini(&st);
	free(hr);
	free(rr);
	free(er);
	free(x);
	free(xr);
	free(xe);
	return rc;
}

/* --check FILE: one line, 0 if the plan's multicast section is valid, else 2. */
static int
check_plan(const struct topo *t, const char *path)
{
	char err[TOPO_ERR_MAX];
	char *text = json_util_read_file(path, err, sizeof(err));
	struct selmcast_plan *p;

	if (text == NULL) {
		fprintf(stderr, "%s: %s\n", PROG, err);
		return CLI_EXIT_USAGE;
	}
	p = selmcast_plan_parse(t, text, path, err, sizeof(err));
	free(text);
	if (p == NULL) {
		fprintf(stderr, "%s: %s\n", PROG, err);
		return CLI_EXIT_USAGE;
	}
	printf("%s: valid multicast plan: %d round%s, %s-layer, p = %d\n", path, p->n_rounds,
	       p->n_rounds == 1 ? "" : "s", model_name(p->model), p->p);
	selmcast_plan_free(p);
	return 0;
}

static void
summary(FILE *f, const struct sel_input *si, const struct selmcast_inst *in, const char *algo,
	const struct selmcast_result *res, int rounds, double secs)
{
	double s, per;

	means(res, rounds, si->n, &s, &per);
	fprintf(f, "%s plan for '%s': %d sites, %s-layer multicast, p = %d, stale rounds %d\n",
		algo, si->t->name, si->n, model_name(in->model), in->p[0], in->stale_rounds);
	if (rounds <= 20) {
		fprintf(f, "  %5s %14s %10s %12s %7s %7s\n", "round", "completion s", "receivers",
			"recv/sender", "forced", "added");
		for (int r = 0; r < rounds; r++)
			fprintf(f, "  %5d %14.6g %10d %12.3f %7d %7d\n", r, res[r].seconds,
				res[r].receivers, (double)res[r].receivers / si->n, res[r].forced,
				res[r].added);
	}
	fprintf(f, "mean over %d round%s: %.6g s, %.3f receivers per sender; planned in %.3f s\n",
		rounds, rounds == 1 ? "" : "s", s, per, secs);
}

/* selmcast's own options. */
struct sel_cli {
	int random_n, seed, p, rounds;
	double mean_gbps, lambda, mu;
	uint64_t bytes;
	enum selmcast_algo algo;
	struct selmcast_exact_opts eo; /* its time limit is --milp-seconds */
	struct selmcast_inst in;       /* model and stale_rounds; the rest from the instance */
	bool do_compare;
};

static const struct option selmcast_longopts[] = {
	{"random", required_argument, NULL, 'N'},
	{"seed", required_argument, NULL, 'S'},
	{"mean-gbps", required_argument, NULL, 'G'},
	{"lambda", required_argument, NULL, 'L'},
	{"mu", required_argument, NULL, 'U'},
	{"p", required_argument, NULL, 'p'},
	{"stale-rounds", required_argument, NULL, 'k'},
	{"rounds", required_argument, NULL, 'R'},
	{"model", required_argument, NULL, 'm'},
	{"bytes", required_argument, NULL, 'b'},
	{"random-select", no_argument, NULL, 'r'},
	{"exact", no_argument, NULL, 'E'},
	{"compare", no_argument, NULL, 'C'},
	{NULL, 0, NULL, 0},
};

static int
selmcast_opt(void *ctx, int c, const char *arg)
{
	struct sel_cli *o = ctx;

	switch (c) {
	case 'N':
		return cli_int(PROG, "random", arg, 2, TOPO_NODES_MAX - 1, &o->random_n);
	case 'S':
		return cli_int(PROG, "seed", arg, 0, 2147483647, &o->seed);
	case 'G':
		return cli_double(PROG, "mean-gbps", arg, 1e-9, 1e9, &o->mean_gbps);
	case 'L':
		return cli_double(PROG, "lambda", arg, 0, 0.999999, &o->lambda);
	case 'U':
		return cli_double(PROG, "mu", arg, 1e-9, 1e9, &o->mu);
	case 'p':
		return cli_int(PROG, "p", arg, 1, TOPO_NODES_MAX, &o->p);
	case 'k':
		return cli_int(PROG, "stale-rounds", arg, 0, 1000000, &o->in.stale_rounds);
	case 'R':
		return cli_int(PROG, "rounds", arg, 1, SELMCAST_ROUNDS_MAX, &o->rounds);
	case 'm':
		if (strcmp(arg, "network") == 0) {
			o->in.model = SELMCAST_NETWORK;
		} else if (strcmp(arg, "application") == 0) {
			o->in.model = SELMCAST_APPLICATION;
		} else {
			cli_error(PROG, "--model: '%s' is not 'network' or 'application'", arg);
			return -1;
		}
		return 0;
	case 'b':
		if (cli_bytes(PROG, "bytes", arg, 1, &o->bytes))
			return -1;
		if (o->bytes > SEL_BYTES_MAX) {
			cli_error(PROG, "--bytes: %s is more than 1 TiB", arg);
			return -1;
		}
		return 0;
	case 'r':
		o->algo = SELMCAST_RANDOM;
		return 0;
	case 'E':
		o->algo = SELMCAST_EXACT;
		return 0;
	case 'C':
		o->do_compare = true;
		return 0;
	default:
		return -1;
	}
}

static const struct plan_cmd selmcast_cmd = {
	.name = "selmcast",
	.shortopts = "t:p:k:R:m:b:o:qh",
	.common = PLAN_OPT_TOPOLOGY | PLAN_OPT_WRITE_TOPOLOGY | PLAN_OPT_MILP_SECONDS |
		  PLAN_OPT_JSON | PLAN_OPT_CHECK | PLAN_OPT_OUTPUT | PLAN_OPT_QUIET,
	.opts = selmcast_longopts,
	.opt = selmcast_opt,
	.usage = usage_selmcast,
};

/* The instance: --topology, or --random (written out with --write-topology). 0, or -1
 * after a one-line error. */
static int
sel_instance(const struct sel_cli *o, const struct plan_cli *pc, struct sel_input *si)
{
	char err[TOPO_ERR_MAX];

	if ((pc->topo_path != NULL) == (o->random_n > 0)) {
		cli_error(PROG, "selmcast: give exactly one of --topology FILE and --random N");
		return -1;
	}
	if (pc->topo_out != NULL && o->random_n == 0) {
		cli_error(PROG, "--write-topology: only with --random");
		return -1;
	}
	if (pc->topo_path != NULL)
		return load_instance(si, pc->topo_path, o->bytes);
	si->t = selmcast_gen_topology(o->random_n, (uint64_t)o->seed, o->mean_gbps, o->lambda,
				      o->mu, err, sizeof(err));
	if (si->t == NULL) {
		cli_error(PROG, "--random: %s", err);
		return -1;
	}
	if (alloc_sites(si) != 0)
		return -1;
	si->n = selmcast_sites(si->t, NULL, NULL, o->bytes, si->site, si->ingress, si->egress,
			       si->bytes, err, sizeof(err));
	if (pc->topo_out != NULL && plan_write_topology(si->t, pc->topo_out) != 0)
		return -1;
	return 0;
}

/* The problem of the instance: p receivers per sender (30% of the sites unless given) into
 * o->in, checked. 0, or -1 after a one-line error. */
static int
sel_problem(struct sel_cli *o, struct sel_input *si)
{
	char err[TOPO_ERR_MAX];

	if (si->n < 2) {
		cli_error(PROG,
			  "--topology: '%s' has %d site%s with workers: multicast needs at "
			  "least 2",
			  si->t->name, si->n, si->n == 1 ? "" : "s");
		return -1;
	}
	if (o->p == 0)
		o->p = (int)fmax(1, fmin(si->n - 1, floor(0.3 * si->n + 0.5)));
	if (o->p > si->n - 1) {
		cli_error(PROG, "--p: %d is more than n - 1 = %d (the other sites)", o->p,
			  si->n - 1);
		return -1;
	}
	if (o->algo == SELMCAST_EXACT && si->n > SELMCAST_EXACT_MAX_N) {
		cli_error(PROG, "--exact: %d sites, the MILP takes at most %d", si->n,
			  SELMCAST_EXACT_MAX_N);
		return -1;
	}
	si->p = malloc(sizeof(int) * (size_t)si->n);
	if (si->p == NULL) {
		cli_error(PROG, "selmcast: out of memory");
		return -1;
	}
	for (int i = 0; i < si->n; i++)
		si->p[i] = o->p;
	o->in.n = si->n;
	o->in.ingress_gbps = si->ingress;
	o->in.egress_gbps = si->egress;
	o->in.bytes = si->bytes;
	o->in.p = si->p;
	if (selmcast_check(&o->in, err, sizeof(err)) != 0) {
		cli_error(PROG, "selmcast: %s", err);
		return -1;
	}
	return 0;
}

/* Plan the rounds and write the plan (--output), with the summary. The exit status. */
static int
sel_plan(const struct sel_cli *o, const struct plan_cli *pc, const struct sel_input *si)
{
	int rounds = o->rounds, rc = CLI_EXIT_USAGE;
	unsigned char *x = malloc((size_t)si->n * (size_t)si->n * (size_t)rounds);
	struct selmcast_result *res = calloc((size_t)rounds, sizeof(*res));
	double *secs = calloc((size_t)rounds, sizeof(double));
	enum selmcast_algo algo = o->algo;
	struct plan *plan = NULL;
	FILE *out, *sum = stdout;
	double t_plan;

	if (x == NULL || res == NULL || secs == NULL) {
		cli_error(PROG, "selmcast: out of memory");
		goto out;
	}
	rc = CLI_EXIT_FAIL;
	t_plan = clock_now_s();
	if (selmcast_run(&o->in, algo, rounds, (uint64_t)o->seed, &o->eo, x, res) != 0) {
		cli_error(PROG, "selmcast: %s",
			  algo == SELMCAST_EXACT ? "the MILP solver failed" : "out of memory");
		goto out;
	}
	t_plan = clock_now_s() - t_plan;
	for (int r = 0; r < rounds; r++)
		secs[r] = res[r].seconds;
	plan = plan_create(algo == SELMCAST_HEURISTIC ? "selmcast" :
			   algo == SELMCAST_RANDOM    ? "selmcast-random" :
							"selmcast-exact",
			   si->t, 1);
	if (plan == NULL)
		goto out;
	plan->extra = json_object();
	if (plan->extra == NULL ||
	    json_object_set_new(plan->extra, SELMCAST_SECTION,
				selmcast_section(si->t, si->site, &o->in, rounds, x, secs)) != 0) {
		cli_error(PROG, "selmcast: out of memory");
		goto out;
	}
	out = plan_output_open(pc->out_path);
	if (out == NULL) {
		rc = CLI_EXIT_USAGE;
		goto out;
	}
	if (out == stdout)
		sum = stderr;
	if (plan_output_close(out, plan_write(si->t, plan, out)) != 0)
		goto out;
	if (!pc->quiet)
		summary(sum, si, &o->in, plan->algorithm, res, rounds, t_plan);
	rc = 0;
out:
	plan_free(plan);
	free(x);
	free(res);
	free(secs);
	return rc;
}

int
cmd_selmcast(int argc, char **argv)
{
	struct sel_cli o = {.seed = 1,
			    .rounds = 1,
			    .mean_gbps = 10,
			    .lambda = 0.5,
			    .mu = 1,
			    .bytes = SEL_DEFAULT_BYTES,
			    .algo = SELMCAST_HEURISTIC,
			    .eo = {.time_limit_s = 10},
			    .in = {.model = SELMCAST_NETWORK, .stale_rounds = 4}};
	struct plan_cli pc = {.milp_seconds = &o.eo.time_limit_s};
	struct sel_input si = {0};
	int rc = CLI_EXIT_USAGE;

	if (!plan_cli_parse(&selmcast_cmd, &pc, &o, argc, argv, &rc))
		return rc;
	if (sel_instance(&o, &pc, &si) != 0)
		goto out;
	if (pc.check_path != NULL) {
		rc = check_plan(si.t, pc.check_path);
		goto out;
	}
	if (sel_problem(&o, &si) != 0)
		goto out;
	if (o.do_compare)
		rc = compare(&si, &o.in, o.rounds, (uint64_t)o.seed, &o.eo,
			     si.n <= SELMCAST_EXACT_MAX_N, pc.json);
	else
		rc = sel_plan(&o, &pc, &si);
out:
	sel_input_fini(&si);
	return rc;
}
