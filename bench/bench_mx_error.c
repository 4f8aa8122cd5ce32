/* SPDX-License-Identifier: BSD-3-Clause
 *
 * georeduce-bench-mx-error: the error of an AllReduce whose wire dtype is an OCP MX format,
 * summed as the gateways sum it (decode into fp32, add, encode once per hop, docs/PROTOCOL.md
 * section 4) over the trees of a georeduce-plan/1 plan, against the same quantisation at the
 * endpoints summed in a ring (every hop decodes, adds its own fp32 value and encodes again).
 * Both are measured against the exact (double) sum of the unquantised fp32 inputs, with the
 * dataplane's own kernels (the scalar variant: every variant gives the same bits).
 *
 *   georeduce-bench-mx-error --plan FILE [--workers N] [--elements N] [--lan DTYPE]
 *                            [--seed S] [--json]
 *
 * Each site of the plan has N workers (the emulated WAN runs 1). A chunk of a tree is summed
 * up that tree: each site's gateway decodes its local workers' chunks (encoded in the MX
 * format, or with --lan fp32 or bf16 sent as the table's lan_dtype says: fp32 as they are,
 * or rounded to bf16), then its children's partial sums (in site order), and encodes the
 * sum once; the root's encoding is the result every worker decodes. The ring has every
 * worker of every site in site order and starts chunk c at worker c mod (workers): it is
 * the endpoint-quantised ring AllReduce of the systems that reduce quantised gradients
 * between sites today.
 *
 * Inputs: gradient-like fp32, per worker a component shared by every worker plus one of its
 * own (equal size), in groups of 256 elements whose magnitudes span 2^-12 .. 1, with one
 * element in 1000 an outlier 30 times larger.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "cli.h"
#include "sum.h"

#define PROG "georeduce-bench-mx-error"
#define SITES_MAX 64
#define TREES_MAX 64
#define CHUNK_ELEMS 1344 /* an mxint8 chunk at MTU 1500; every format uses it */
#define WORKERS_MAX 64

struct tree {
	int root;
	int parent[SITES_MAX]; /* site index, -1 at the root */
	double share;
};

struct plan {
	int n_sites;
	char sites[SITES_MAX][64];
	int n_trees;
	struct tree trees[TREES_MAX];
};

struct opts {
	const char *plan;
	int workers;
	uint64_t elements;
	uint64_t seed;
	int lan; /* 0: the MX format; 1 fp32; 3 bf16 (the dtype codes) */
	bool json;
};

/* A chunk's inputs as the local workers send them to their gateway. */
struct lan_in {
	int lan;            /* as in struct opts */
	const float *in;    /* fp32, CHUNK_ELEMS apart per worker */
	const uint16_t *bf; /* bf16, likewise */
	size_t n;           /* elements */
};

/* Error of one method over the whole tensor. */
struct err {
	double sq;  /* sum of squared errors */
	double max; /* largest |error| */
};

static uint64_t rng_state;

static uint64_t
rng(void)
{
	rng_state ^= rng_state >> 12;
	rng_state ^= rng_state << 25;
	rng_state ^= rng_state >> 27;
	return rng_state * 0x2545f4914f6cdd1dull;
}

static double
uniform(void)
{
	return (double)(rng() >> 11) * 0x1p-53;
}

/* A standard normal (Box-Muller). */
static double
gauss(void)
{
	double u = uniform(), v = uniform();

	return sqrt(-2.0 * log(u > 0 ? u : 0x1p-53)) * cos(2.0 * M_PI * v);
}

static int
site_index(const struct plan *p, const char *name)
{
	for (int i = 0; i < p->n_sites; i++)
		if (strcmp(p->sites[i], name) == 0)
			return i;
	return -1;
}

/* The trees of a georeduce-plan/1 file: each one's root, parent map and share. */
static int
load_plan(const char *path, struct plan *p)
{
	json_error_t je;
	json_t *root = json_load_file(path, 0, &je), *trees, *t;
	size_t ti;
	int rc = -EINVAL;

	memset(p, 0, sizeof(*p));
	if (root == NULL) {
		cli_error(PROG, "%s: %s (line %d)", path, je.text, je.line);
		return -EINVAL;
	}
	trees = json_object_get(root, "trees");
	if (!json_is_array(trees) || json_array_size(trees) == 0 ||
	    json_array_size(trees) > TREES_MAX) {
		cli_error(PROG, "%s: no trees, or more than %d", path, TREES_MAX);
		goto out;
	}
	json_array_foreach (trees, ti, t) {
		json_t *par = json_object_get(t, "parent"), *v;
		const char *r = json_string_value(json_object_get(t, "root")), *k;
		struct tree *tr = &p->trees[p->n_trees++];

		if (!json_is_object(par) || r == NULL) {
			cli_error(PROG, "%s: trees[%zu]: no root or parent map", path, ti);
			goto out;
		}
		json_object_foreach (par, k, v) {
			if (site_index(p, k) < 0) {
				if (p->n_sites == SITES_MAX || strlen(k) >= sizeof(p->sites[0])) {
					cli_error(PROG, "%s: too many sites or a long name", path);
					goto out;
				}
				snprintf(p->sites[p->n_sites++], sizeof(p->sites[0]), "%s", k);
			}
		}
		for (int i = 0; i < SITES_MAX; i++)
			tr->parent[i] = -1;
		json_object_foreach (par, k, v) {
			int s = site_index(p, k),
			    q = json_is_string(v) ? site_index(p, json_string_value(v)) : -1;

			if (json_is_string(v) && q < 0) {
				cli_error(PROG, "%s: trees[%zu]: parent of %s is no site", path, ti,
					  k);
				goto out;
			}
			tr->parent[s] = q;
		}
		tr->root = site_index(p, r);
		tr->share = json_real_value(json_object_get(t, "share"));
		if (tr->root < 0 || tr->parent[tr->root] != -1 || !(tr->share >= 0)) {
			cli_error(PROG, "%s: trees[%zu]: bad root or share", path, ti);
			goto out;
		}
	}
	rc = 0;
out:
	json_decref(root);
	return rc;
}

/* The sum of site s's subtree in tree tr, encoded into out (bytes of one chunk). */
static void
tree_sum(const struct sum_kernels *k, enum sum_mx f, const struct plan *p, const struct tree *tr,
	 int s, uint8_t *const *enc, const struct lan_in *li, int workers, size_t nb, float *acc,
	 uint8_t *out, uint8_t *tmp)
{
	bool first = true;

	for (int w = 0; w < workers; w++, first = false) {
		size_t at = (size_t)(s * workers + w) * CHUNK_ELEMS;
		const uint8_t *e = enc[s * workers + w];

		if (li->lan == 1 && first)
			memcpy(acc, li->in + at, sizeof(float) * li->n);
		else if (li->lan == 1)
			k->sum_f32(acc, li->in + at, li->n);
		else if (li->lan == 3 && first)
			k->widen_bf16(acc, li->bf + at, li->n);
		else if (li->lan == 3)
			k->widen_add_bf16(acc, li->bf + at, li->n);
		else if (first)
			k->mx_widen[f](acc, e, nb);
		else
			k->mx_widen_add[f](acc, e, nb);
	}
	for (int c = 0; c < p->n_sites; c++) {
		if (tr->parent[c] != s || c == s)
			continue;
		float *sub = acc + nb * SUM_MX_BLOCK; /* the child's own accumulator */

		tree_sum(k, f, p, tr, c, enc, li, workers, nb, sub, tmp, tmp + nb * 33);
		k->mx_widen_add[f](acc, tmp, nb);
	}
	k->mx_narrow[f](out, acc, nb);
}

static void
add_err(struct err *e, const float *got, const double *exact, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		double d = fabs((double)got[i] - exact[i]);

		e->sq += d * d;
		e->max = d > e->max ? d : e->max;
	}
}

static void
usage(FILE *f)
{
	fprintf(f,
		"usage: " PROG " --plan FILE [--workers N] [--elements N] [--lan DTYPE] "
		"[--seed S]\n"
		"       [--json]\n"
		"\n"
		"Error of an AllReduce in mxint8, mxfp8 and mxfp4 summed as georeduce\n"
		"gateways sum it (fp32 at every gateway, one encode per hop) over the plan's\n"
		"trees, against the same quantisation summed in an endpoint ring (encode, add,\n"
		"encode at every hop), both against the exact sum of the unquantised fp32\n"
		"inputs.\n"
		"\n"
		"  --plan FILE     a georeduce-plan/1 plan (georeduce-plan mtree --out)\n"
		"  --workers N     workers per site, 1 .. %d (default 1)\n"
		"  --elements N    tensor elements, a multiple of 32 (default 1048576)\n"
		"  --lan DTYPE     what the workers send their gateway: mx (the MX format, the\n"
		"                  default), fp32 or bf16 (a table's lan_dtype)\n"
		"  --seed S        input seed (default 1)\n"
		"  --json          one JSON document instead of the table\n",
		WORKERS_MAX);
}

static int
parse_opts(int argc, char **argv, struct opts *o)
{
	static const struct option longopts[] = {
		{"plan", required_argument, NULL, 'p'},
		{"workers", required_argument, NULL, 'w'},
		{"elements", required_argument, NULL, 'e'},
		{"seed", required_argument, NULL, 's'},
		{"lan", required_argument, NULL, 'l'},
		{"json", no_argument, NULL, 'j'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	int c;

	*o = (struct opts){.workers = 1, .elements = 1 << 20, .seed = 1};
	opterr = 0;
	while ((c = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
		switch (c) {
		case 'p':
			o->plan = optarg;
			break;
		case 'w':
			if (cli_int(PROG, "--workers", optarg, 1, WORKERS_MAX, &o->workers) < 0)
				return -1;
			break;
		case 'e':
			if (cli_uint(PROG, "--elements", optarg, 32, 1ull << 28, &o->elements) < 0)
				return -1;
			if (o->elements % 32 != 0) {
				cli_error(PROG, "--elements: %" PRIu64 " is not a multiple of 32",
					  o->elements);
				return -1;
			}
			break;
		case 's':
			if (cli_uint(PROG, "--seed", optarg, 0, UINT64_MAX, &o->seed) < 0)
				return -1;
			break;
		case 'l':
			if (strcmp(optarg, "mx") == 0) {
				o->lan = 0;
			} else if (strcmp(optarg, "fp32") == 0) {
				o->lan = 1;
			} else if (strcmp(optarg, "bf16") == 0) {
				o->lan = 3;
			} else {
				cli_error(PROG, "--lan: '%s' is not mx, fp32 or bf16", optarg);
				return -1;
			}
			break;
		case 'j':
			o->json = true;
			break;
		case 'h':
			usage(stdout);
			return 1;
		default:
			cli_error(PROG, "unknown or incomplete option '%s' (try --help)",
				  argv[optind - 1]);
			return -1;
		}
	}
	if (o->plan == NULL) {
		cli_error(PROG, "--plan is required (try --help)");
		return -1;
	}
	return 0;
}

int
main(int argc, char **argv)
{
	static const char *const names[SUM_MX_COUNT] = {"mxint8", "mxfp8", "mxfp4"};
	static const char *const lan_names[4] = {"mx", "fp32", "", "bf16"};
	const struct sum_kernels *k = sum_kernels_get(SUM_ISA_SCALAR);
	struct opts o;
	struct plan p;
	int rc = parse_opts(argc, argv, &o), nw;
	struct err tree_e[SUM_MX_COUNT] = {{0}}, ring_e[SUM_MX_COUNT] = {{0}}, f32_e = {0};
	double norm = 0;
	float *in, *acc, *res;
	double *exact;
	uint8_t *enc_mem, *enc[SITES_MAX * WORKERS_MAX], *out, *tmp;
	uint16_t *bf;
	uint64_t n_chunks, chunk = 0;

	if (rc != 0)
		return rc > 0 ? 0 : CLI_EXIT_USAGE;
	if (load_plan(o.plan, &p) != 0)
		return CLI_EXIT_USAGE;
	nw = p.n_sites * o.workers;
	if (nw > SITES_MAX * WORKERS_MAX / 4) {
		cli_error(PROG, "%d workers: too many", nw);
		return CLI_EXIT_USAGE;
	}
	rng_state = o.seed * 0x9e3779b97f4a7c15ull + 1;
	in = malloc(sizeof(float) * CHUNK_ELEMS * (size_t)nw);
	acc = malloc(sizeof(float) * CHUNK_ELEMS * (size_t)(p.n_sites + 1));
	res = malloc(sizeof(float) * CHUNK_ELEMS);
	exact = malloc(sizeof(double) * CHUNK_ELEMS);
	enc_mem = malloc((size_t)CHUNK_ELEMS / 32 * 33 * (size_t)nw);
	out = malloc((size_t)CHUNK_ELEMS / 32 * 33);
	bf = malloc(sizeof(uint16_t) * CHUNK_ELEMS * (size_t)nw);
	tmp = malloc((size_t)CHUNK_ELEMS / 32 * 33 * (size_t)(p.n_sites + 1) * 2);
	if (in == NULL || acc == NULL || res == NULL || exact == NULL || enc_mem == NULL ||
	    out == NULL || tmp == NULL || bf == NULL) {
		cli_error(PROG, "out of memory");
		return CLI_EXIT_FAIL;
	}
	for (int w = 0; w < nw; w++)
		enc[w] = enc_mem + (size_t)w * CHUNK_ELEMS / 32 * 33;
	n_chunks = (o.elements + CHUNK_ELEMS - 1) / CHUNK_ELEMS;
	/* Chunks to trees by share, in order (the tables' contiguous ranges). */
	for (int t = 0; t < p.n_trees; t++) {
		double sum = 0;
		uint64_t end;

		for (int u = 0; u <= t; u++)
			sum += p.trees[u].share;
		end = t == p.n_trees - 1 ? n_chunks : (uint64_t)(sum * (double)n_chunks);
		for (; chunk < end; chunk++) {
			size_t n = (size_t)(chunk + 1 < n_chunks ?
						    CHUNK_ELEMS :
						    o.elements - chunk * CHUNK_ELEMS),
			       nb = n / 32;
			const struct tree *tr = &p.trees[t];

			for (size_t i = 0; i < n; i++) {
				/* groups of 256 share a magnitude, 2^-12 .. 1 */
				double scale = ldexp(1.0, -(int)((chunk * 7 + i / 256) % 13));
				double common = gauss();

				exact[i] = 0;
				for (int w = 0; w < nw; w++) {
					double v = (common + gauss()) * scale;

					if (rng() % 1000 == 0)
						v *= 30;
					in[(size_t)w * CHUNK_ELEMS + i] = (float)v;
					exact[i] += (double)(float)v;
				}
				norm += exact[i] * exact[i];
			}
			/* fp32 in the same tree order, for reference: no quantisation. */
			for (size_t i = 0; i < n; i++) {
				float s = 0;

				for (int w = 0; w < nw; w++)
					s += in[(size_t)w * CHUNK_ELEMS + i];
				res[i] = s;
			}
			add_err(&f32_e, res, exact, n);
			struct lan_in li = {.lan = o.lan, .in = in, .bf = bf, .n = n};

			if (o.lan == 3)
				for (int w = 0; w < nw; w++)
					k->narrow_bf16(bf + (size_t)w * CHUNK_ELEMS,
						       in + (size_t)w * CHUNK_ELEMS, n);
			for (int f = 0; f < SUM_MX_COUNT; f++) {
				/* georeduce: endpoints encode, every gateway sums in fp32 and
				 * encodes once. */
				for (int w = 0; w < nw; w++)
					k->mx_narrow[f](enc[w], in + (size_t)w * CHUNK_ELEMS, nb);
				tree_sum(k, (enum sum_mx)f, &p, tr, tr->root, enc, &li, o.workers,
					 nb, acc, out, tmp);
				k->mx_widen[f](res, out, nb);
				add_err(&tree_e[f], res, exact, n);
				/* Ring from worker chunk mod nw: decode, add own fp32, encode. */
				int w0 = (int)(chunk % (uint64_t)nw);

				k->mx_narrow[f](out, in + (size_t)w0 * CHUNK_ELEMS, nb);
				for (int h = 1; h < nw; h++) {
					int w = (w0 + h) % nw;

					k->mx_widen[f](acc, out, nb);
					k->sum_f32(acc, in + (size_t)w * CHUNK_ELEMS, n);
					k->mx_narrow[f](out, acc, nb);
				}
				k->mx_widen[f](res, out, nb);
				add_err(&ring_e[f], res, exact, n);
			}
		}
	}
	norm = sqrt(norm);
	if (o.json) {
		printf("{\"plan\": \"%s\", \"sites\": %d, \"workers\": %d, \"elements\": %" PRIu64
		       ", \"trees\": %d, \"lan\": \"%s\", \"fp32_rel_l2\": %.6g, \"formats\": [",
		       o.plan, p.n_sites, nw, o.elements, p.n_trees, lan_names[o.lan],
		       sqrt(f32_e.sq) / norm);
		for (int f = 0; f < SUM_MX_COUNT; f++)
			printf("%s{\"dtype\": \"%s\", \"georeduce_rel_l2\": %.6g, "
			       "\"ring_rel_l2\": %.6g, \"ring_over_georeduce\": %.4f, "
			       "\"georeduce_max_abs\": %.6g, \"ring_max_abs\": %.6g}",
			       f ? ", " : "", names[f], sqrt(tree_e[f].sq) / norm,
			       sqrt(ring_e[f].sq) / norm, sqrt(ring_e[f].sq / tree_e[f].sq),
			       tree_e[f].max, ring_e[f].max);
		printf("]}\n");
	} else {
		printf("%s: %d sites, %d workers, %" PRIu64 " elements, %d trees, workers to "
		       "gateways in %s\n",
		       o.plan, p.n_sites, nw, o.elements, p.n_trees, lan_names[o.lan]);
		printf("relative L2 error against the exact sum of the fp32 inputs "
		       "(fp32 summed in a tree: %.3g)\n",
		       sqrt(f32_e.sq) / norm);
		printf("%-8s %14s %14s %12s\n", "dtype", "georeduce", "ring", "ring / geo");
		for (int f = 0; f < SUM_MX_COUNT; f++)
			printf("%-8s %14.4g %14.4g %11.2fx\n", names[f], sqrt(tree_e[f].sq) / norm,
			       sqrt(ring_e[f].sq) / norm, sqrt(ring_e[f].sq / tree_e[f].sq));
	}
	free(in);
	free(acc);
	free(res);
	free(exact);
	free(enc_mem);
	free(out);
	free(tmp);
	free(bf);
	return 0;
}
