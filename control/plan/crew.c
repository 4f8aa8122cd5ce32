/* SPDX-License-Identifier: BSD-3-Clause
 *
 * georeduce-plan crew: plan one CREW partial reduce (shares over every site, failover),
 * compare it with the original partial reduce and all-to-all, check a plan's
 * "partial_reduce" section, or simulate training progress (docs/CREW.md).
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
#include "crew.h"
#include "jsonutil.h"
#include "plan.h"
#include "plan_common.h"
#include "topo.h"

#define DEFAULT_MODEL_BYTES 180000000ull
#define DEFAULT_INTERCLOUD "../shared/data/crew-intercloud/bandwidth_mbps.csv"
/* Random groups the per-operation ratios of the simulation mode average over. */
#define LP_GROUPS 200
/* Largest network the simulator takes (its state is n * n per link). */
#define SIM_MAX_SITES 512
#define INTERCLOUD_MAX_SITES 1024

static void
usage_crew(FILE *f)
{
	fprintf(f,
		"Usage: " PROG " crew INPUT (--group IDS | --p P) [OPTIONS]\n"
		"       " PROG " crew INPUT --p P --progress-seconds T [OPTIONS]\n"
		"       " PROG " crew INPUT --check PLAN\n"
		"\n"
		"CREW partial reduce: the p ready members scatter chunk i of the model to site i,\n"
		"for every site, and site i broadcasts the reduced chunk back. Chunk sizes "
		"minimise\n"
		"scatter plus broadcast time (exact LP). Prints CREW against the original partial\n"
		"reduce (only members aggregate) and all-to-all (every site, full AllReduce) and\n"
		"writes a georeduce-plan/1 plan with a partial_reduce section (docs/CREW.md).\n"
		"\n"
		"Input, one of:\n"
		"  -t, --topology FILE       georeduce-topology/1: a -> b carries gbps, b -> a\n"
		"                            gbps_ba; pairs without a link have none\n"
		"  -m, --matrix FILE         CSV of Gbit/s: 'name,ID1,...,IDn', then one row\n"
		"                            'IDi,v1,...,vn' per site, diagonal empty or 0\n"
		"  -n, --intercloud N        N sites, every directed pair drawn from the\n"
		"                            inter-cloud measurements (seeded by --seed)\n"
		"      --intercloud-data F   those measurements, Mbit/s one per line\n"
		"                            [$GEOREDUCE_INTERCLOUD, else\n"
		"                            " DEFAULT_INTERCLOUD "]\n"
		"Plan:\n"
		"  -g, --group A,B,...       the ready members (site ids)\n"
		"  -p, --p P                 or P members drawn at random (seeded)\n"
		"  -s, --seed S              seed of the draws and the simulation  [1]\n"
		"  -b, --bytes N             model size (suffixes K M G, KiB MiB GiB) [180M]\n"
		"      --scheme S            plan to write: crew, partial-reduce, all-to-all "
		"[crew]\n"
		"  -o, --output FILE         write the plan there (default: stdout, and the\n"
		"                            summary goes to stderr)\n"
		"      --write-topology FILE write the input network as georeduce-topology/1\n"
		"      --check PLAN          check a plan's partial_reduce section and exit\n"
		"Training progress (instead of a plan):\n"
		"      --progress-seconds T  simulate T seconds with CREW, the original partial\n"
		"                            reduce and all-to-all; needs --p\n"
		"      --failed-links K      directed links that fail during the run      [0]\n"
		"      --compute-s C         median compute time of an iteration (s)      [0.5]\n"
		"      --straggler-prob Q    probability of a straggling iteration        [0.05]\n"
		"      --blocking            CREW without the non-blocking scatter\n"
		"      --timeline            also print rounds completed every second\n"
		"Output:\n"
		"      --json                the summary as JSON on stdout (a plan is then\n"
		"                            written only with --output)\n"
		"  -q, --quiet               no summary\n"
		"  -h, --help                this text\n");
}

struct crew_cli {
	struct plan_cli pc; /* the shared options: --topology, --output, ... */
	const char *matrix_path, *data_path, *group_arg, *p_arg;
	int intercloud; /* sites, 0 = not used */
	uint64_t seed, bytes;
	enum crew_scheme scheme;
	struct crew_sim_opts so;
	bool simulate, timeline;
};

/* The input network as a topology (ids and the plan's reference), or NULL after a
 * one-line error. */
static struct topo *
load_input(const struct crew_cli *c)
{
	char err[TOPO_ERR_MAX];
	struct topo *t = NULL;
	int given = (c->pc.topo_path != NULL) + (c->matrix_path != NULL) + (c->intercloud > 0);

	if (given != 1) {
		cli_error(PROG,
			  given == 0 ? "crew: one of --topology, --matrix or --intercloud is "
				       "required" :
				       "crew: give only one of --topology, --matrix, --intercloud");
		return NULL;
	}
	if (c->pc.topo_path != NULL)
		return plan_load_topology(c->pc.topo_path);
	if (c->matrix_path != NULL) {
		char *text = json_util_read_file(c->matrix_path, err, sizeof(err));
		const char *base = strrchr(c->matrix_path, '/');

		if (text != NULL) {
			t = crew_matrix_parse(text, c->matrix_path,
					      base != NULL ? base + 1 : c->matrix_path, err,
					      sizeof(err));
			free(text);
		}
		if (t == NULL)
			cli_error(PROG, "--matrix: %s", err);
		return t;
	}
	{
		const char *path = c->data_path;
		double *v = NULL;
		int nv;

		if (path == NULL)
			path = getenv("GEOREDUCE_INTERCLOUD");
		if (path == NULL || *path == '\0')
			path = DEFAULT_INTERCLOUD;
		nv = crew_values_load(path, &v, err, sizeof(err));
		if (nv < 0) {
			cli_error(PROG, "--intercloud-data: %s", err);
			return NULL;
		}
		t = crew_draw_mesh(c->intercloud, v, nv, c->seed, err, sizeof(err));
		free(v);
		if (t == NULL)
			cli_error(PROG, "--intercloud: %s", err);
		return t;
	}
}

/* --group: comma-separated, known, distinct site ids. Returns p or -1 after an error. */
static int
parse_group(const struct topo *t, const char *arg, int *group)
{
	char *buf = strdup(arg), *save = NULL;
	int p = 0;

	if (buf == NULL)
		return -1;
	if (*arg == '\0' || arg[strlen(arg) - 1] == ',' || arg[0] == ',' || strstr(arg, ",,")) {
		cli_error(PROG, "--group: empty member in '%s'", arg);
		goto bad;
	}
	for (char *id = strtok_r(buf, ",", &save); id != NULL; id = strtok_r(NULL, ",", &save)) {
		int v = topo_node_index(t, id);

		if (v < 0) {
			cli_error(PROG, "--group: unknown site id '%s'", id);
			goto bad;
		}
		for (int k = 0; k < p; k++)
			if (group[k] == v) {
				cli_error(PROG, "--group: duplicate member '%s'", id);
				goto bad;
			}
		if (p == t->n_nodes) {
			cli_error(PROG, "--group: more members than sites");
			goto bad;
		}
		group[p++] = v;
	}
	free(buf);
	return p;
bad:
	free(buf);
	return -1;
}

struct scheme_row {
	uint64_t *bytes;
	struct crew_times tm;
	int aggregators;
	int rc;
};

static double
op_seconds(const struct crew_times *tm)
{
	return tm->scatter_s + CREW_AGGREGATE_S + tm->broadcast_s;
}

/* Write the plan of the chosen scheme. */
static int
write_plan(const struct crew_cli *c, const struct topo *t, const double *g,
	   const struct crew_problem *pb, const struct scheme_row *row, FILE *out)
{
	struct crew_problem q = *pb;
	struct crew_section s;
	struct plan *p = NULL;
	json_t *root = NULL, *sec;
	int *all = NULL, rc = -ENOMEM;

	q.gbps = g;
	if (c->scheme == CREW_SCHEME_ALL_TO_ALL) {
		all = malloc(sizeof(int) * (size_t)t->n_nodes);
		if (all == NULL)
			return -ENOMEM;
		for (int i = 0; i < t->n_nodes; i++)
			all[i] = i;
		q.group = all;
		q.p = t->n_nodes;
	}
	if (crew_section_init(&s, t->n_nodes, q.p) != 0)
		goto out;
	s.scheme = c->scheme;
	s.model_bytes = c->bytes;
	memcpy(s.group, q.group, sizeof(int) * (size_t)q.p);
	memcpy(s.bytes, row->bytes, sizeof(uint64_t) * (size_t)t->n_nodes);
	s.scatter_s = row->tm.scatter_s;
	s.broadcast_s = row->tm.broadcast_s;
	s.aggregate_s = CREW_AGGREGATE_S;
	if (crew_failover(&q, c->scheme, s.bytes, NULL, s.backup, s.relay) != 0)
		goto out;
	p = plan_create(crew_scheme_name(c->scheme), t, 0);
	sec = crew_section_to_json(t, &s);
	if (p == NULL || sec == NULL) {
		json_decref(sec);
		goto out;
	}
	p->bytes = c->bytes;
	p->allreduce_seconds = op_seconds(&row->tm);
	p->extra = json_object();
	json_object_set_new(p->extra, CREW_SECTION, sec);
	root = plan_to_json(t, p); /* a partial reduce has no trees: "trees" is empty */
	if (root == NULL)
		goto out;
	rc = json_util_dump(root, out);
out:
	json_decref(root);
	plan_free(p);
	crew_section_fini(&s);
	free(all);
	return rc;
}

static void
print_group(FILE *f, const struct topo *t, const int *group, int p)
{
	for (int k = 0; k < p && k < 16; k++)
		fprintf(f, "%s%s", k ? " " : "", t->nodes[group[k]].id);
	if (p > 16)
		fprintf(f, " ... (%d more)", p - 16);
}

static int
run_plan(const struct crew_cli *c, const struct topo *t, const double *g, int *group, int p)
{
	struct crew_problem pb = {
		.n = t->n_nodes, .gbps = g, .group = group, .p = p, .model_bytes = c->bytes};
	struct scheme_row rows[3] = {{0}};
	char err[TOPO_ERR_MAX];
	FILE *out, *sum = stdout;
	int rc = CLI_EXIT_FAIL;

	for (int s = 0; s < 3; s++) {
		rows[s].bytes = calloc((size_t)t->n_nodes, sizeof(uint64_t));
		if (rows[s].bytes == NULL)
			goto out;
		rows[s].rc = crew_solve(&pb, (enum crew_scheme)s, rows[s].bytes, &rows[s].tm, err,
					sizeof(err));
		if (rows[s].rc == -EINVAL) {
			cli_error(PROG, "crew: %s", err);
			rc = CLI_EXIT_USAGE;
			goto out;
		}
		for (int i = 0; i < t->n_nodes; i++)
			rows[s].aggregators += rows[s].bytes[i] > 0;
	}
	if (rows[c->scheme].rc != 0) {
		cli_error(PROG, "crew: no site has links from and to every member (scheme %s)",
			  crew_scheme_name(c->scheme));
		goto out;
	}
	out = plan_output_open(c->pc.out_path);
	if (out == NULL) {
		rc = CLI_EXIT_USAGE;
		goto out;
	}
	if (out == stdout && !c->pc.json)
		sum = stderr;
	if ((c->pc.out_path != NULL || !c->pc.json) &&
	    plan_output_close(out, write_plan(c, t, g, &pb, &rows[c->scheme], out)) != 0)
		goto out;
	if (c->pc.json) {
		json_t *root = json_pack("{s:s, s:i, s:i, s:I, s:[]}", "network", t->name, "sites",
					 t->n_nodes, "members", p, "model_bytes",
					 (json_int_t)c->bytes, "schemes");

		for (int s = 0; s < 3; s++) {
			if (rows[s].rc != 0)
				continue;
			json_array_append_new(
				json_object_get(root, "schemes"),
				json_pack("{s:s, s:i, s:f, s:f, s:f, s:f}", "scheme",
					  crew_scheme_name((enum crew_scheme)s), "aggregators",
					  rows[s].aggregators, "scatter_seconds",
					  rows[s].tm.scatter_s, "broadcast_seconds",
					  rows[s].tm.broadcast_s, "operation_seconds",
					  op_seconds(&rows[s].tm), "ratio_to_crew",
					  rows[0].rc == 0 ? op_seconds(&rows[s].tm) /
								    op_seconds(&rows[0].tm) :
							    0));
		}
		json_util_dump_new(root, stdout);
	} else if (!c->pc.quiet) {
		fprintf(sum, "partial reduce on '%s': %d sites, group of %d (", t->name, t->n_nodes,
			p);
		print_group(sum, t, group, p);
		fprintf(sum, "), model %llu bytes\n", (unsigned long long)c->bytes);
		fprintf(sum, "  %-15s %11s %11s %12s %12s %9s\n", "scheme", "aggregators",
			"scatter s", "broadcast s", "operation s", "vs crew");
		for (int s = 0; s < 3; s++) {
			if (rows[s].rc != 0) {
				fprintf(sum,
					"  %-15s  no site has links from and to every member\n",
					crew_scheme_name((enum crew_scheme)s));
				continue;
			}
			fprintf(sum, "  %-15s %11d %11.4f %12.4f %12.4f %8.2fx\n",
				crew_scheme_name((enum crew_scheme)s), rows[s].aggregators,
				rows[s].tm.scatter_s, rows[s].tm.broadcast_s,
				op_seconds(&rows[s].tm),
				rows[0].rc == 0 ?
					op_seconds(&rows[s].tm) / op_seconds(&rows[0].tm) :
					0);
		}
		fprintf(sum,
			"  (operation = scatter + %.0f ms aggregation + broadcast; all-to-all "
			"waits for all %d sites)\n",
			CREW_AGGREGATE_S * 1e3, t->n_nodes);
	}
	rc = 0;
out:
	for (int s = 0; s < 3; s++)
		free(rows[s].bytes);
	return rc;
}

/* Mean LP operation time of each scheme over random groups of p. */
static int
lp_means(const struct crew_cli *c, const struct topo *t, const double *g, double *mean)
{
	int n = t->n_nodes, p = c->so.p, groups = p == n ? 1 : LP_GROUPS, cnt[3] = {0};
	int *group = malloc(sizeof(int) * (size_t)n);
	uint64_t *bytes = malloc(sizeof(uint64_t) * (size_t)n);
	char err[TOPO_ERR_MAX];

	if (group == NULL || bytes == NULL) {
		free(group);
		free(bytes);
		return -ENOMEM;
	}
	mean[0] = mean[1] = mean[2] = 0;
	for (int r = 0; r < groups; r++) {
		struct crew_problem pb = {
			.n = n, .gbps = g, .group = group, .p = p, .model_bytes = c->bytes};

		crew_random_group(n, p, c->seed + (uint64_t)r, group);
		for (int s = 0; s < 3; s++) {
			struct crew_times tm;

			if (s == CREW_SCHEME_ALL_TO_ALL && r > 0)
				continue; /* the same for every group */
			if (crew_solve(&pb, (enum crew_scheme)s, bytes, &tm, err, sizeof(err)) ==
			    0) {
				mean[s] += op_seconds(&tm);
				cnt[s]++;
			}
		}
	}
	for (int s = 0; s < 3; s++)
		mean[s] = cnt[s] > 0 ? mean[s] / cnt[s] : NAN;
	free(group);
	free(bytes);
	return 0;
}

static int
run_simulation(const struct crew_cli *c, const struct topo *t, const double *g)
{
	struct crew_sim_result res[3];
	double secs[3], lp[3];
	int nb = (int)ceil(c->so.seconds), *prog[3] = {NULL};
	int rc = CLI_EXIT_FAIL;

	if (t->n_nodes > SIM_MAX_SITES) {
		cli_error(PROG, "--progress-seconds: the simulator takes at most %d sites",
			  SIM_MAX_SITES);
		return CLI_EXIT_USAGE;
	}
	for (int s = 0; s < 3; s++) {
		struct crew_sim_opts o = c->so;
		double t0 = clock_now_s();
		int src;

		prog[s] = calloc((size_t)nb, sizeof(int));
		if (prog[s] == NULL)
			goto out;
		res[s].progress = prog[s];
		src = crew_simulate(t->n_nodes, g, (enum crew_scheme)s, &o, &res[s]);
		secs[s] = clock_now_s() - t0;
		if (src != 0) {
			cli_error(PROG, "crew: %s simulation failed: %s",
				  crew_scheme_name((enum crew_scheme)s), strerror(-src));
			goto out;
		}
	}
	if (lp_means(c, t, g, lp) != 0)
		goto out;
	if (c->pc.json) {
		json_t *root =
			json_pack("{s:s, s:i, s:i, s:I, s:f, s:i, s:I, s:[]}", "network", t->name,
				  "sites", t->n_nodes, "p", c->so.p, "model_bytes",
				  (json_int_t)c->bytes, "seconds", c->so.seconds, "failed_links",
				  c->so.failed_links, "seed", (json_int_t)c->seed, "schemes");

		for (int s = 0; s < 3; s++) {
			json_t *o = json_pack(
				"{s:s, s:i, s:f, s:f, s:f, s:f, s:i, s:i, s:i, s:i, s:f}", "scheme",
				crew_scheme_name((enum crew_scheme)s), "rounds", res[s].rounds,
				"crew_rounds_ratio",
				res[s].rounds > 0 ? (double)res[0].rounds / res[s].rounds : 0.0,
				"op_mean_seconds", res[s].op_mean_s, "wait_mean_seconds",
				res[s].wait_mean_s, "lp_op_seconds", isnan(lp[s]) ? -1.0 : lp[s],
				"backups", res[s].backups, "relays", res[s].relays, "rerouted",
				res[s].rerouted, "links_failed", res[s].links_failed,
				"simulation_seconds", secs[s]);
			json_t *tl = json_array();

			for (int b = 0; c->timeline && b < nb; b++)
				json_array_append_new(tl, json_integer(prog[s][b]));
			json_object_set_new(o, "timeline", tl);
			json_array_append_new(json_object_get(root, "schemes"), o);
		}
		json_util_dump_new(root, stdout);
		rc = 0;
		goto out;
	}
	printf("training progress on '%s': %d sites, p = %d, model %llu bytes, %.0f s, "
	       "%d failed links, seed %llu%s\n",
	       t->name, t->n_nodes, c->so.p, (unsigned long long)c->bytes, c->so.seconds,
	       c->so.failed_links, (unsigned long long)c->seed,
	       c->so.nonblocking ? "" : ", blocking scatter");
	printf("  %-15s %7s %10s %11s %12s %8s %7s %9s %7s\n", "scheme", "rounds", "crew x",
	       "op mean s", "wait mean s", "backups", "relays", "rerouted", "sim s");
	for (int s = 0; s < 3; s++) {
		char ratio[16] = "-";

		if (res[s].rounds > 0)
			snprintf(ratio, sizeof(ratio), "%.2fx",
				 (double)res[0].rounds / res[s].rounds);
		printf("  %-15s %7d %10s %11.3f %12.3f %8d %7d %9d %7.3f\n",
		       crew_scheme_name((enum crew_scheme)s), res[s].rounds, ratio,
		       res[s].op_mean_s, res[s].wait_mean_s, res[s].backups, res[s].relays,
		       res[s].rerouted, secs[s]);
	}
	printf("per operation, LP over %d random groups: crew %.3f s, partial-reduce %.3f s "
	       "(%.2fx), all-to-all %.3f s (%.2fx)\n",
	       c->so.p == t->n_nodes ? 1 : LP_GROUPS, lp[0], lp[1], lp[1] / lp[0], lp[2],
	       lp[2] / lp[0]);
	printf("per operation, simulated (with contention): partial-reduce / crew %.2fx, "
	       "all-to-all / crew %.2fx\n",
	       res[1].op_mean_s / res[0].op_mean_s, res[2].op_mean_s / res[0].op_mean_s);
	if (c->timeline) {
		printf("  %6s %8s %15s %11s\n", "second", "crew", "partial-reduce", "all-to-all");
		for (int b = 0; b < nb; b++)
			printf("  %6d %8d %15d %11d\n", b + 1, prog[0][b], prog[1][b], prog[2][b]);
	}
	rc = 0;
out:
	for (int s = 0; s < 3; s++)
		free(prog[s]);
	return rc;
}

static int
run_check(const struct topo *t, const char *path)
{
	struct crew_section s;
	char err[TOPO_ERR_MAX];
	int aggs = 0;

	if (crew_section_load(t, path, &s, err, sizeof(err)) != 0) {
		fprintf(stderr, "%s: %s\n", PROG, err);
		return CLI_EXIT_USAGE;
	}
	for (int i = 0; i < s.n; i++)
		aggs += s.bytes[i] > 0;
	printf("%s: valid " CREW_SECTION " section: scheme %s, %d members, %d aggregators, "
	       "%llu bytes\n",
	       path, crew_scheme_name(s.scheme), s.p, aggs, (unsigned long long)s.model_bytes);
	crew_section_fini(&s);
	return 0;
}

/* crew's own options, into its struct crew_cli. */
static const struct option crew_longopts[] = {
	{"matrix", required_argument, NULL, 'm'},
	{"intercloud", required_argument, NULL, 'n'},
	{"intercloud-data", required_argument, NULL, 'D'},
	{"group", required_argument, NULL, 'g'},
	{"p", required_argument, NULL, 'p'},
	{"seed", required_argument, NULL, 's'},
	{"bytes", required_argument, NULL, 'b'},
	{"scheme", required_argument, NULL, 'S'},
	{"progress-seconds", required_argument, NULL, 'T'},
	{"failed-links", required_argument, NULL, 'F'},
	{"compute-s", required_argument, NULL, 'c'},
	{"straggler-prob", required_argument, NULL, 'Q'},
	{"blocking", no_argument, NULL, 'B'},
	{"timeline", no_argument, NULL, 'L'},
	{NULL, 0, NULL, 0},
};

static int
crew_opt(void *ctx, int opt, const char *arg)
{
	struct crew_cli *c = ctx;
	double d;

	switch (opt) {
	case 'm':
		c->matrix_path = arg;
		return 0;
	case 'n':
		return cli_int(PROG, "intercloud", arg, 1, INTERCLOUD_MAX_SITES, &c->intercloud);
	case 'D':
		c->data_path = arg;
		return 0;
	case 'g':
		c->group_arg = arg;
		return 0;
	case 'p':
		c->p_arg = arg;
		return 0;
	case 's':
		return cli_uint(PROG, "--seed", arg, 0, UINT64_MAX, &c->seed);
	case 'b':
		if (cli_bytes(PROG, "bytes", arg, 1, &c->bytes))
			return -1;
		if (c->bytes > CREW_MAX_BYTES) {
			cli_error(PROG, "--bytes: at most 2^50 bytes");
			return -1;
		}
		return 0;
	case 'S':
		for (c->scheme = CREW_SCHEME_CREW; c->scheme <= CREW_SCHEME_ALL_TO_ALL; c->scheme++)
			if (strcmp(arg, crew_scheme_name(c->scheme)) == 0)
				break;
		if (c->scheme > CREW_SCHEME_ALL_TO_ALL) {
			cli_error(PROG, "--scheme: '%s' is not crew, partial-reduce or all-to-all",
				  arg);
			return -1;
		}
		return 0;
	case 'T':
		if (cli_double(PROG, "progress-seconds", arg, 0.001, 1e5, &c->so.seconds))
			return -1;
		c->simulate = true;
		return 0;
	case 'F':
		return cli_int(PROG, "failed-links", arg, 0, 1 << 20, &c->so.failed_links);
	case 'c':
		return cli_double(PROG, "compute-s", arg, 0, 1e4, &c->so.compute_s);
	case 'Q':
		if (cli_double(PROG, "straggler-prob", arg, 0, 1, &d))
			return -1;
		c->so.straggler_prob = d;
		return 0;
	case 'B':
		c->so.nonblocking = false;
		return 0;
	case 'L':
		c->timeline = true;
		return 0;
	default:
		return -1;
	}
}

static const struct plan_cmd crew_cmd = {
	.name = "crew",
	.shortopts = "t:m:n:g:p:s:b:o:qh",
	.common = PLAN_OPT_TOPOLOGY | PLAN_OPT_OUTPUT | PLAN_OPT_WRITE_TOPOLOGY | PLAN_OPT_CHECK |
		  PLAN_OPT_JSON | PLAN_OPT_QUIET,
	.opts = crew_longopts,
	.opt = crew_opt,
	.usage = usage_crew,
};

int
cmd_crew(int argc, char **argv)
{
	struct crew_cli c = {.seed = 1, .bytes = DEFAULT_MODEL_BYTES, .so = CREW_SIM_OPTS_DEFAULT};
	struct topo *t = NULL;
	double *g = NULL;
	int *group = NULL, p = 0, rc = CLI_EXIT_USAGE;

	if (!plan_cli_parse(&crew_cmd, &c.pc, &c, argc, argv, &rc))
		return rc;
	t = load_input(&c);
	if (t == NULL)
		goto out;
	if (c.pc.check_path != NULL) {
		rc = run_check(t, c.pc.check_path);
		goto out;
	}
	g = crew_matrix_from_topo(t);
	group = malloc(sizeof(int) * (size_t)t->n_nodes);
	if (g == NULL || group == NULL) {
		cli_error(PROG, "crew: out of memory");
		rc = CLI_EXIT_FAIL;
		goto out;
	}
	if (c.group_arg != NULL && c.p_arg != NULL) {
		cli_error(PROG, "crew: give --group or --p, not both");
		goto out;
	}
	if (c.group_arg != NULL) {
		if (c.simulate) {
			cli_error(PROG, "--group: the simulation forms its own groups (use --p)");
			goto out;
		}
		if ((p = parse_group(t, c.group_arg, group)) < 0)
			goto out;
	} else if (c.p_arg != NULL) {
		if (cli_int(PROG, "p", c.p_arg, 1, t->n_nodes, &p))
			goto out;
		crew_random_group(t->n_nodes, p, c.seed, group);
	} else {
		cli_error(PROG, "crew: --group IDS or --p P is required");
		goto out;
	}
	if (c.pc.topo_out != NULL && plan_write_topology(t, c.pc.topo_out) != 0)
		goto out;
	if (c.simulate) {
		c.so.p = p;
		c.so.model_bytes = c.bytes;
		c.so.seed = c.seed;
		rc = run_simulation(&c, t, g);
	} else {
		rc = run_plan(&c, t, g, group, p);
	}
out:
	free(group);
	free(g);
	topo_free(t);
	return rc;
}
