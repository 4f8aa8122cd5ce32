/* SPDX-License-Identifier: BSD-3-Clause
 *
 * BlueConnect hierarchical decomposition: the alpha-beta model, the enumeration of
 * decompositions, the baselines, and the plan's `hierarchy` section (writer and strict
 * parser). docs/BLUECONNECT.md describes the model.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "baselines.h"
#include "blueconnect.h"
#include "jsonutil.h"

#define BC_LEVELS_INSITE (BC_LEVEL_W | BC_LEVEL_G)
#define BC_HOP_S PLANNER_ALPHA_S

/* What the model needs of a worker site besides its sizes. */
struct bc_ctx {
	const struct topo *t;
	int n; /* worker sites */
	const struct bc_site *sites;
	double *alpha;    /* one LAN hop: lan_latency + BC_HOP_S (s) */
	double *beta;     /* LAN seconds per byte: 8 / lan_gbps */
	double *d;        /* scratch: bytes per rank at each site */
	double bytes;     /* N */
	double wan_alpha; /* one way through the WAN stage: a LAN hop, the tallest
				 * tree, a fixed cost per tree hop (s) */
	double wan_beta;  /* N / R, the trees at their aggregate rate (s) */
};

const char *
bc_op_name(enum bc_op op)
{
	switch (op) {
	case BC_OP_REDUCE_SCATTER:
		return "reduce_scatter";
	case BC_OP_ALLREDUCE:
		return "allreduce";
	default:
		return "all_gather";
	}
}

const char *
bc_fabric_name(enum bc_fabric f)
{
	return f == BC_FABRIC_LAN ? "lan" : "wan";
}

void
bc_levels_str(unsigned levels, char *buf)
{
	int k = 0;

	if (levels & BC_LEVEL_W)
		buf[k++] = 'W';
	if (levels & BC_LEVEL_G)
		buf[k++] = 'G';
	if (levels & BC_LEVEL_S)
		buf[k++] = 'S';
	buf[k] = '\0';
}

/* Ranks of one group of a stage spanning `levels` at a site (S excluded). */
static int
group_at(const struct bc_site *s, unsigned levels)
{
	return ((levels & BC_LEVEL_W) ? s->per_gateway : 1) *
	       ((levels & BC_LEVEL_G) ? s->gateways : 1);
}

/* "[W][G][S]" from the stages before and at the AllReduce. */
static void
name_of(const struct bc_stage *st, int n_stages, char *buf, size_t len)
{
	size_t k = 0;

	buf[0] = '\0';
	for (int i = 0; i < n_stages && k + 6 < len; i++) {
		char lv[4];

		if (st[i].op == BC_OP_ALL_GATHER)
			break;
		bc_levels_str(st[i].levels, lv);
		k += (size_t)snprintf(buf + k, len - k, "[%s]", lv);
	}
}

/*
 * Cost one decomposition: ring reduce-scatters over blocks[0..nb-1] in order, the
 * AllReduce over the WAN with the in-site levels `merged` summed at the gateways, then
 * the all-gathers in reverse. Every stage takes its slowest site's time.
 */
static void
cost_candidate(const struct bc_ctx *c, const unsigned *blocks, int nb, unsigned merged,
	       struct bc_candidate *out)
{
	double *d = c->d;
	struct bc_stage *st = out->stages;
	double lan_load = 0, lan_alpha = 0;
	int mg = 1;

	memset(out, 0, sizeof(*out));
	for (int s = 0; s < c->n; s++)
		d[s] = c->bytes;
	for (int i = 0; i < nb; i++) {
		st[i].op = BC_OP_REDUCE_SCATTER;
		st[i].fabric = BC_FABRIC_LAN;
		st[i].levels = blocks[i];
		st[i].group_size = 1;
		for (int s = 0; s < c->n; s++) {
			int k = group_at(&c->sites[s], blocks[i]);
			double x = (k - 1) * (c->alpha[s] + d[s] / k * c->beta[s]);

			st[i].group_size = k > st[i].group_size ? k : st[i].group_size;
			if ((uint64_t)ceil(d[s]) > st[i].bytes_per_rank)
				st[i].bytes_per_rank = (uint64_t)ceil(d[s]);
			st[i].seconds = x > st[i].seconds ? x : st[i].seconds;
			d[s] /= k;
		}
	}
	/* The AllReduce: every gateway takes an equal byte range of what its site's ranks
	 * hold, so its port receives per_gateway * d bytes, streamed into the trees. */
	st[nb].op = BC_OP_ALLREDUCE;
	st[nb].fabric = BC_FABRIC_WAN;
	st[nb].levels = BC_LEVEL_S | merged;
	for (int s = 0; s < c->n; s++) {
		double load = c->sites[s].per_gateway * d[s] * c->beta[s];
		int k = group_at(&c->sites[s], merged);

		lan_load = load > lan_load ? load : lan_load;
		lan_alpha = c->alpha[s] > lan_alpha ? c->alpha[s] : lan_alpha;
		mg = k > mg ? k : mg;
		if ((uint64_t)ceil(d[s]) > st[nb].bytes_per_rank)
			st[nb].bytes_per_rank = (uint64_t)ceil(d[s]);
	}
	st[nb].group_size = mg * c->n;
	/* One site whose rings reduced everything: nothing is left to sum. */
	if (c->n > 1 || mg > 1)
		st[nb].seconds = 2 * (lan_alpha + c->wan_alpha) + fmax(c->wan_beta, lan_load);
	for (int i = 0; i < nb; i++) {
		st[nb + 1 + i] = st[nb - 1 - i];
		st[nb + 1 + i].op = BC_OP_ALL_GATHER;
	}
	out->n_stages = 2 * nb + 1;
	for (int i = 0; i < out->n_stages; i++)
		out->seconds += st[i].seconds;
	name_of(st, out->n_stages, out->name, sizeof(out->name));
}

/* Ring stages of one decomposition at most: each takes at least one in-site level. */
#define BC_RING_STAGES_MAX 2

/* Every ordered partition of `rest` into ring stages after blocks[0..nb-1]
 * (BC_RING_STAGES_MAX entries). */
static void
enumerate(const struct bc_ctx *c, unsigned present, unsigned rings, unsigned rest, unsigned *blocks,
	  int nb, struct bc_result *r)
{
	if (nb == BC_RING_STAGES_MAX && rest != 0)
		return; /* not reached: rest is a subset of the in-site levels left */
	if (rest == 0) {
		if (r->n_candidates < BC_CANDIDATES_MAX)
			cost_candidate(c, blocks, nb, present & ~rings,
				       &r->cand[r->n_candidates++]);
		return;
	}
	for (unsigned sub = rest; sub != 0; sub = (sub - 1) & rest) {
		blocks[nb] = sub;
		enumerate(c, present, rings, rest & ~sub, blocks, nb + 1, r);
	}
}

/* Every worker gathered at one site gateway, which streams the whole tensor into the
 * trees (mTree over the sites alone). */
static double
site_mtree_seconds(const struct bc_ctx *c)
{
	double load = 0, alpha = 0;

	for (int s = 0; s < c->n; s++) {
		load = fmax(load, c->sites[s].workers * c->bytes * c->beta[s]);
		alpha = fmax(alpha, c->alpha[s]);
	}
	return 2 * (alpha + c->wan_alpha) + fmax(c->wan_beta, load);
}

/*
 * A ring over every worker, site after site in the order of the best site ring, 2 (p - 1)
 * synchronous steps of N / p bytes. A step takes its slowest hop: a LAN hop, or a WAN hop
 * (gateway to gateway over the best ring's routes, at its algorithm bandwidth).
 */
static int
flat_ring_seconds(const struct bc_ctx *c, double ring_seconds, double *out)
{
	double p = 0, step = 0, lan_alpha = 0;

	for (int s = 0; s < c->n; s++) {
		p += c->sites[s].workers;
		lan_alpha = fmax(lan_alpha, c->alpha[s]);
	}
	*out = 0;
	if (p < 2)
		return 0;
	for (int s = 0; s < c->n; s++)
		if (c->sites[s].workers > 1)
			step = fmax(step, c->alpha[s] + c->bytes / p * c->beta[s]);
	if (c->n > 1) {
		struct ring_plan rp;
		int rc = baseline_ring(c->t, ring_seconds, &rp);

		if (rc != 0)
			return rc;
		if (!(rp.rate_gbps > 0)) {
			ring_plan_fini(&rp);
			return -EIO;
		}
		double b_step = rp.rate_gbps * 1e9 / 8 * 2.0 * (rp.m - 1) / rp.m;

		step = fmax(step, rp.step_latency_ms * 1e-3 + BC_HOP_S + 2 * lan_alpha +
					  c->bytes / p / b_step);
		ring_plan_fini(&rp);
	}
	*out = 2 * (p - 1) * step;
	return 0;
}

static int
sites_init(const struct topo *t, const struct bc_opts *o, struct bc_result *r, char *err,
	   size_t errlen)
{
	struct bc_site *s;
	int n = topo_worker_sites(t);

	r->h.sites = calloc((size_t)(n > 0 ? n : 1), sizeof(*r->h.sites));
	if (r->h.sites == NULL)
		return -ENOMEM;
	for (int v = 0; v < t->n_nodes; v++) {
		long g, w;

		if (t->nodes[v].workers <= 0)
			continue;
		g = o->gateways > 0 ? o->gateways : t->nodes[v].gateways;
		w = o->workers_per_gateway > 0 ? g * (long)o->workers_per_gateway :
						 t->nodes[v].workers;
		if (w > BC_RANKS_MAX || g > BC_RANKS_MAX)
			return json_util_fail(err, errlen,
					      "site '%s': %ld workers, %ld gateways: "
					      "more than %d",
					      t->nodes[v].id, w, g, BC_RANKS_MAX);
		s = &r->h.sites[r->h.n_sites++];
		s->node = v;
		s->workers = (int)w;
		s->gateways = (int)(g < w ? g : w);
		s->per_gateway = (s->workers + s->gateways - 1) / s->gateways;
		r->ranks += s->workers;
	}
	r->wan_sites = r->h.n_sites;
	return 0;
}

int
blueconnect_plan(const struct topo *t, const struct bc_opts *o, struct bc_result *r, char *err,
		 size_t errlen)
{
	struct mtree_opts mo = MTREE_OPTS_DEFAULT;
	struct bc_ctx c = {.t = t};
	unsigned present = 0, blocks[BC_RING_STAGES_MAX];
	double rate;
	int rc;

	memset(r, 0, sizeof(*r));
	r->h.flat_ring_seconds = r->h.site_mtree_seconds = -1;
	if (o->bytes == 0 || o->gateways < 0 || o->workers_per_gateway < 0 || o->max_trees < 0 ||
	    o->gateways > BC_RANKS_MAX || o->workers_per_gateway > BC_RANKS_MAX ||
	    !(o->ring_seconds >= 0)) {
		json_util_fail(err, errlen, "invalid BlueConnect options");
		return -EINVAL;
	}
	rc = sites_init(t, o, r, err, errlen);
	if (rc != 0)
		return rc;
	c.n = r->h.n_sites;
	c.sites = r->h.sites;
	c.bytes = (double)o->bytes;
	c.alpha = malloc(sizeof(double) * (size_t)(c.n + 1));
	c.beta = malloc(sizeof(double) * (size_t)(c.n + 1));
	c.d = malloc(sizeof(double) * (size_t)(c.n + 1));
	if (c.alpha == NULL || c.beta == NULL || c.d == NULL) {
		rc = -ENOMEM;
		goto out;
	}
	for (int s = 0; s < c.n; s++) {
		const struct topo_node *nd = &t->nodes[c.sites[s].node];

		c.alpha[s] = nd->lan_latency_ms * 1e-3 + BC_HOP_S;
		c.beta[s] = 8.0 / (nd->lan_gbps * 1e9);
		if (c.sites[s].per_gateway > 1)
			present |= BC_LEVEL_W;
		if (c.sites[s].gateways > 1)
			present |= BC_LEVEL_G;
	}

	/* The WAN stage's trees. */
	mo.max_trees = o->max_trees;
	mo.bytes = o->bytes;
	r->plan = mtree_plan(t, &mo, NULL, err, errlen);
	if (r->plan == NULL) {
		rc = errno == ENOMEM ? -ENOMEM : errno == ENOENT ? -ENOENT : -EIO;
		goto out;
	}
	snprintf(r->plan->algorithm, sizeof(r->plan->algorithm), "blueconnect");
	rate = plan_total_rate(r->plan);
	for (int i = 0; i < r->plan->n_trees; i++) {
		double h = plan_tree_height_ms(t, &r->plan->trees[i]);
		int d = plan_tree_depth(t, &r->plan->trees[i]);

		r->wan_height_ms = h > r->wan_height_ms ? h : r->wan_height_ms;
		r->wan_depth = d > r->wan_depth ? d : r->wan_depth;
	}
	r->wan_rate_gbps = c.n > 1 ? rate : 0;
	c.wan_alpha = r->wan_height_ms * 1e-3 + r->wan_depth * BC_HOP_S;
	c.wan_beta = c.n > 1 ? c.bytes * 8 / (rate * 1e9) : 0;
	if (c.n > 1 && !(rate > 0)) {
		json_util_fail(err, errlen, "mTree found no rate over the WAN");
		rc = -EIO;
		goto out;
	}

	/* Every subset of the in-site levels may run as ring stages, in every order and
	 * grouping; the rest is summed at the gateways inside the WAN stage. */
	for (unsigned rings = 0; rings <= BC_LEVELS_INSITE; rings++)
		if ((rings & ~present) == 0)
			enumerate(&c, present, rings, rings, blocks, 0, r);
	for (int i = 1; i < r->n_candidates; i++)
		if (r->cand[i].seconds < r->cand[r->chosen].seconds * (1 - 1e-12))
			r->chosen = i;

	r->h.site_mtree_seconds = site_mtree_seconds(&c);
	rc = flat_ring_seconds(&c, o->ring_seconds > 0 ? o->ring_seconds : 1.0,
			       &r->h.flat_ring_seconds);
	if (rc != 0) {
		json_util_fail(err, errlen, "the flat ring baseline failed: %s", strerror(-rc));
		goto out;
	}
	r->plan->bytes = o->bytes;
	rc = blueconnect_choose(t, r, r->chosen, err, errlen);
out:
	if (rc == -ENOMEM)
		json_util_fail(err, errlen, "out of memory");
	free(c.alpha);
	free(c.beta);
	free(c.d);
	return rc;
}

int
blueconnect_choose(const struct topo *t, struct bc_result *r, int i, char *err, size_t errlen)
{
	const struct bc_candidate *b;
	json_t *sec;

	if (i < 0 || i >= r->n_candidates || r->plan == NULL)
		return json_util_fail(err, errlen, "no decomposition %d of %d", i, r->n_candidates);
	b = &r->cand[i];
	r->chosen = i;
	memcpy(r->h.factorisation, b->name, sizeof(r->h.factorisation));
	r->h.n_stages = b->n_stages;
	memcpy(r->h.stages, b->stages, sizeof(b->stages));
	r->h.seconds = b->seconds;
	r->plan->allreduce_seconds = b->seconds;
	sec = bc_hierarchy_to_json(t, &r->h);
	json_decref(r->plan->extra);
	r->plan->extra = sec != NULL ? json_pack("{s:o}", "hierarchy", sec) : NULL;
	if (r->plan->extra == NULL) {
		json_util_fail(err, errlen, "out of memory");
		return -ENOMEM;
	}
	return 0;
}

void
bc_hierarchy_fini(struct bc_hierarchy *h)
{
	free(h->sites);
	h->sites = NULL;
	h->n_sites = 0;
}

void
bc_result_fini(struct bc_result *r)
{
	bc_hierarchy_fini(&r->h);
	plan_free(r->plan);
	r->plan = NULL;
}

/* ---- the plan's "hierarchy" section ---- */

json_t *
bc_hierarchy_to_json(const struct topo *t, const struct bc_hierarchy *h)
{
	json_t *sites = json_array(), *stages = json_array(), *root;

	for (int i = 0; sites != NULL && i < h->n_sites; i++) {
		const struct bc_site *s = &h->sites[i];

		json_array_append_new(sites,
				      json_pack("{s:s, s:i, s:i, s:i}", "id", t->nodes[s->node].id,
						"workers", s->workers, "gateways", s->gateways,
						"workers_per_gateway", s->per_gateway));
	}
	for (int i = 0; stages != NULL && i < h->n_stages; i++) {
		const struct bc_stage *st = &h->stages[i];
		char lv[4];

		bc_levels_str(st->levels, lv);
		json_array_append_new(
			stages,
			json_pack("{s:s, s:s, s:s, s:i, s:I, s:f}", "operation", bc_op_name(st->op),
				  "fabric", bc_fabric_name(st->fabric), "levels", lv, "group_size",
				  st->group_size, "bytes_per_rank", (json_int_t)st->bytes_per_rank,
				  "seconds", st->seconds));
	}
	if (sites == NULL || stages == NULL) {
		json_decref(sites);
		json_decref(stages);
		return NULL;
	}
	root = json_pack("{s:s, s:o, s:o, s:f}", "factorisation", h->factorisation, "sites", sites,
			 "stages", stages, "seconds", h->seconds);
	if (root != NULL && h->flat_ring_seconds >= 0 && h->site_mtree_seconds >= 0)
		json_object_set_new(root, "baselines",
				    json_pack("{s:f, s:f}", "flat_ring_seconds",
					      h->flat_ring_seconds, "site_mtree_seconds",
					      h->site_mtree_seconds));
	return root;
}

/* Reject fields outside allowed[] (NULL-terminated). */
static int
only_fields(const json_t *o, const char *const *allowed, const char *src, const char *path,
	    char *err, size_t errlen)
{
	const char *key;
	json_t *v;

	json_object_foreach ((json_t *)o, key, v) {
		bool known = false;

		for (int i = 0; allowed[i] != NULL && !known; i++)
			known = strcmp(key, allowed[i]) == 0;
		if (!known)
			return json_util_fail(err, errlen, "%s: field '%s.%.64s': unknown field",
					      src, path, key);
	}
	return 0;
}

static int
get_int(const json_t *o, const char *key, long min, long max, const char *src, const char *path,
	long *out, char *err, size_t errlen)
{
	json_t *v = json_object_get(o, key);

	if (v == NULL)
		return json_util_fail(err, errlen, "%s: field '%s.%s': missing", src, path, key);
	if (!json_is_integer(v))
		return json_util_fail(err, errlen, "%s: field '%s.%s': not an integer", src, path,
				      key);
	if (json_integer_value(v) < min || json_integer_value(v) > max)
		return json_util_fail(err, errlen,
				      "%s: field '%s.%s': %lld is out of range "
				      "[%ld, %ld]",
				      src, path, key, (long long)json_integer_value(v), min, max);
	*out = (long)json_integer_value(v);
	return 0;
}

/* A finite number >= 0. */
static int
get_seconds(const json_t *o, const char *key, const char *src, const char *path, double *out,
	    char *err, size_t errlen)
{
	json_t *v = json_object_get(o, key);

	if (v == NULL)
		return json_util_fail(err, errlen, "%s: field '%s.%s': missing", src, path, key);
	if (!json_is_number(v) || !isfinite(json_number_value(v)) || json_number_value(v) < 0)
		return json_util_fail(err, errlen, "%s: field '%s.%s': not a finite number >= 0",
				      src, path, key);
	*out = json_number_value(v);
	return 0;
}

static const char *
get_string(const json_t *o, const char *key, const char *src, const char *path, char *err,
	   size_t errlen)
{
	json_t *v = json_object_get(o, key);

	if (v == NULL)
		json_util_fail(err, errlen, "%s: field '%s.%s': missing", src, path, key);
	else if (!json_is_string(v))
		json_util_fail(err, errlen, "%s: field '%s.%s': not a string", src, path, key);
	else
		return json_string_value(v);
	return NULL;
}

static int
parse_sites(const struct topo *t, const json_t *arr, const char *src, struct bc_hierarchy *h,
	    char *err, size_t errlen)
{
	static const char *const fields[] = {"id", "workers", "gateways", "workers_per_gateway",
					     NULL};
	int want = topo_worker_sites(t);
	char *seen;

	if (!json_is_array(arr))
		return json_util_fail(err, errlen, "%s: field 'hierarchy.sites': not an array",
				      src);
	if ((int)json_array_size(arr) != want)
		return json_util_fail(err, errlen,
				      "%s: field 'hierarchy.sites': %zu entries, the "
				      "topology has %d worker sites",
				      src, json_array_size(arr), want);
	h->sites = calloc((size_t)want + 1, sizeof(*h->sites));
	seen = calloc((size_t)t->n_nodes + 1, 1);
	if (h->sites == NULL || seen == NULL) {
		free(seen);
		return json_util_fail(err, errlen, "%s: out of memory", src);
	}
	for (int i = 0; i < want; i++) {
		const json_t *e = json_array_get(arr, (size_t)i);
		struct bc_site *s = &h->sites[i];
		char path[48];
		const char *id;
		long w, g, per;
		int v;

		snprintf(path, sizeof(path), "hierarchy.sites[%d]", i);
		if (!json_is_object(e)) {
			free(seen);
			return json_util_fail(err, errlen, "%s: field '%s': not an object", src,
					      path);
		}
		if (only_fields(e, fields, src, path, err, errlen) != 0 ||
		    (id = get_string(e, "id", src, path, err, errlen)) == NULL ||
		    get_int(e, "workers", 1, BC_RANKS_MAX, src, path, &w, err, errlen) != 0 ||
		    get_int(e, "gateways", 1, w, src, path, &g, err, errlen) != 0 ||
		    get_int(e, "workers_per_gateway", 1, BC_RANKS_MAX, src, path, &per, err,
			    errlen) != 0) {
			free(seen);
			return -EINVAL;
		}
		v = topo_node_index(t, id);
		if (v < 0 || t->nodes[v].workers <= 0 || seen[v]) {
			const char *why = v < 0   ? "not a node of the topology" :
					  seen[v] ? "listed twice" :
						    "a relay site (no workers)";

			free(seen);
			return json_util_fail(err, errlen, "%s: field '%s.id': '%.64s' is %s", src,
					      path, id, why);
		}
		if (per != (w + g - 1) / g) {
			free(seen);
			return json_util_fail(err, errlen,
					      "%s: field '%s.workers_per_gateway': %ld "
					      "workers over %ld gateways make %ld per gateway",
					      src, path, w, g, (w + g - 1) / g);
		}
		seen[v] = 1;
		*s = (struct bc_site){
			.node = v, .workers = (int)w, .gateways = (int)g, .per_gateway = (int)per};
		h->n_sites++;
	}
	free(seen);
	return 0;
}

static int
parse_levels(const char *str, enum bc_op op, const char *src, const char *path, unsigned *out,
	     char *err, size_t errlen)
{
	char canon[4];
	unsigned m = 0;

	for (const char *c = str; *c != '\0'; c++)
		m |= *c == 'W' ? BC_LEVEL_W : *c == 'G' ? BC_LEVEL_G : *c == 'S' ? BC_LEVEL_S : 8u;
	bc_levels_str(m & 7u, canon);
	if (m == 0 || (m & 8u) || strcmp(canon, str) != 0)
		return json_util_fail(err, errlen,
				      "%s: field '%s.levels': '%.16s' is not one or "
				      "more of W, G, S in that order",
				      src, path, str);
	if ((op == BC_OP_ALLREDUCE) != ((m & BC_LEVEL_S) != 0))
		return json_util_fail(err, errlen, "%s: field '%s.levels': %s", src, path,
				      op == BC_OP_ALLREDUCE ?
					      "the allreduce stage spans the sites (S)" :
					      "only the allreduce stage spans the sites (S)");
	*out = m;
	return 0;
}

static int
parse_stage(const json_t *e, int i, const char *src, struct bc_stage *st, char *err, size_t errlen)
{
	static const char *const fields[] = {"operation",      "fabric",  "levels", "group_size",
					     "bytes_per_rank", "seconds", NULL};
	static const enum bc_op ops[] = {BC_OP_REDUCE_SCATTER, BC_OP_ALLREDUCE, BC_OP_ALL_GATHER};
	const char *op, *fabric, *levels;
	char path[48];
	long gs, bytes;
	int k;

	snprintf(path, sizeof(path), "hierarchy.stages[%d]", i);
	if (!json_is_object(e))
		return json_util_fail(err, errlen, "%s: field '%s': not an object", src, path);
	if (only_fields(e, fields, src, path, err, errlen) != 0 ||
	    (op = get_string(e, "operation", src, path, err, errlen)) == NULL ||
	    (fabric = get_string(e, "fabric", src, path, err, errlen)) == NULL ||
	    (levels = get_string(e, "levels", src, path, err, errlen)) == NULL ||
	    get_int(e, "group_size", 1, (long)BC_RANKS_MAX * TOPO_NODES_MAX, src, path, &gs, err,
		    errlen) != 0 ||
	    get_int(e, "bytes_per_rank", 0, (1l << 53), src, path, &bytes, err, errlen) != 0 ||
	    get_seconds(e, "seconds", src, path, &st->seconds, err, errlen) != 0)
		return -EINVAL;
	for (k = 0; k < 3 && strcmp(op, bc_op_name(ops[k])) != 0; k++)
		;
	if (k == 3)
		return json_util_fail(err, errlen,
				      "%s: field '%s.operation': '%.32s' is not "
				      "reduce_scatter, allreduce or all_gather",
				      src, path, op);
	st->op = ops[k];
	if (strcmp(fabric, "lan") != 0 && strcmp(fabric, "wan") != 0)
		return json_util_fail(err, errlen,
				      "%s: field '%s.fabric': '%.32s' is not lan or "
				      "wan",
				      src, path, fabric);
	st->fabric = strcmp(fabric, "lan") == 0 ? BC_FABRIC_LAN : BC_FABRIC_WAN;
	if ((st->fabric == BC_FABRIC_WAN) != (st->op == BC_OP_ALLREDUCE))
		return json_util_fail(err, errlen,
				      "%s: field '%s.fabric': the allreduce stage runs "
				      "on the wan, every other stage on the lan",
				      src, path);
	if (parse_levels(levels, st->op, src, path, &st->levels, err, errlen) != 0)
		return -EINVAL;
	st->group_size = (int)gs;
	st->bytes_per_rank = (uint64_t)bytes;
	return 0;
}

/* The stages against each other and against the sites. */
static int
check_stages(const struct bc_hierarchy *h, const char *src, char *err, size_t errlen)
{
	int n = h->n_stages, nb = n / 2;
	unsigned used = 0, need = 0;
	double sum = 0;
	char name[16];

	for (int s = 0; s < h->n_sites; s++) {
		need |= h->sites[s].per_gateway > 1 ? BC_LEVEL_W : 0;
		need |= h->sites[s].gateways > 1 ? BC_LEVEL_G : 0;
	}
	for (int i = 0; i < n; i++) {
		const struct bc_stage *st = &h->stages[i];
		enum bc_op want = i < nb  ? BC_OP_REDUCE_SCATTER :
				  i == nb ? BC_OP_ALLREDUCE :
					    BC_OP_ALL_GATHER;
		int gs = 1;

		if (st->op != want)
			return json_util_fail(
				err, errlen,
				"%s: field 'hierarchy.stages[%d].operation': "
				"want %s (reduce-scatters, one allreduce, all-gathers)",
				src, i, bc_op_name(want));
		for (int s = 0; s < h->n_sites; s++) {
			int k = group_at(&h->sites[s], st->levels);

			gs = k > gs ? k : gs;
		}
		if (st->levels & BC_LEVEL_S)
			gs *= h->n_sites;
		if (st->group_size != gs)
			return json_util_fail(err, errlen,
					      "%s: field 'hierarchy.stages[%d].group_size': "
					      "%d, the sites make %d",
					      src, i, st->group_size, gs);
		if (i > nb) {
			const struct bc_stage *rs = &h->stages[n - 1 - i];

			if (st->levels != rs->levels || st->group_size != rs->group_size ||
			    st->bytes_per_rank != rs->bytes_per_rank)
				return json_util_fail(err, errlen,
						      "%s: field 'hierarchy.stages[%d]': "
						      "does not mirror stages[%d]",
						      src, i, n - 1 - i);
			continue;
		}
		if (used & st->levels)
			return json_util_fail(err, errlen,
					      "%s: field 'hierarchy.stages[%d].levels': a "
					      "level is used twice",
					      src, i);
		used |= st->levels;
		if (i > 0 && st->bytes_per_rank > h->stages[i - 1].bytes_per_rank)
			return json_util_fail(err, errlen,
					      "%s: field 'hierarchy.stages[%d].bytes_per_"
					      "rank': grows after a reduce-scatter",
					      src, i);
	}
	if ((need & ~used) != 0)
		return json_util_fail(err, errlen,
				      "%s: field 'hierarchy.stages': level %s of the "
				      "sites is in no stage",
				      src, (need & ~used & BC_LEVEL_W) ? "W" : "G");
	for (int i = 0; i < n; i++)
		sum += h->stages[i].seconds;
	if (fabs(sum - h->seconds) > 1e-9 * fmax(1, sum))
		return json_util_fail(err, errlen,
				      "%s: field 'hierarchy.seconds': %.17g, the stages "
				      "sum to %.17g",
				      src, h->seconds, sum);
	name_of(h->stages, n, name, sizeof(name));
	if (strcmp(name, h->factorisation) != 0)
		return json_util_fail(err, errlen,
				      "%s: field 'hierarchy.factorisation': '%s', the "
				      "stages make '%s'",
				      src, h->factorisation, name);
	return 0;
}

int
blueconnect_parse(const struct topo *t, const json_t *plan_doc, const char *src,
		  struct bc_hierarchy *h, char *err, size_t errlen)
{
	static const char *const fields[] = {"factorisation", "sites",     "stages",
					     "seconds",       "baselines", NULL};
	static const char *const base_fields[] = {"flat_ring_seconds", "site_mtree_seconds", NULL};
	const json_t *sec = json_object_get(plan_doc, "hierarchy"), *stages, *base;
	const char *fact;
	int rc = -EINVAL;

	memset(h, 0, sizeof(*h));
	h->flat_ring_seconds = h->site_mtree_seconds = -1;
	if (!json_is_object(plan_doc))
		return json_util_fail(err, errlen, "%s: not a JSON object", src);
	if (sec == NULL)
		return json_util_fail(err, errlen, "%s: field 'hierarchy': missing", src);
	if (!json_is_object(sec))
		return json_util_fail(err, errlen, "%s: field 'hierarchy': not an object", src);
	if (only_fields(sec, fields, src, "hierarchy", err, errlen) != 0 ||
	    (fact = get_string(sec, "factorisation", src, "hierarchy", err, errlen)) == NULL ||
	    get_seconds(sec, "seconds", src, "hierarchy", &h->seconds, err, errlen) != 0)
		goto fail;
	if (strlen(fact) >= sizeof(h->factorisation)) {
		json_util_fail(err, errlen, "%s: field 'hierarchy.factorisation': too long", src);
		goto fail;
	}
	strcpy(h->factorisation, fact);
	if (json_object_get(sec, "sites") == NULL) {
		json_util_fail(err, errlen, "%s: field 'hierarchy.sites': missing", src);
		goto fail;
	}
	if (parse_sites(t, json_object_get(sec, "sites"), src, h, err, errlen) != 0)
		goto fail;
	stages = json_object_get(sec, "stages");
	if (!json_is_array(stages) || json_array_size(stages) % 2 == 0 ||
	    json_array_size(stages) > BC_STAGES_MAX) {
		json_util_fail(err, errlen, "%s: field 'hierarchy.stages': %s", src,
			       stages == NULL ? "missing" : "not an array of 1, 3 or 5 stages");
		goto fail;
	}
	h->n_stages = (int)json_array_size(stages);
	for (int i = 0; i < h->n_stages; i++)
		if (parse_stage(json_array_get(stages, (size_t)i), i, src, &h->stages[i], err,
				errlen) != 0)
			goto fail;
	if (check_stages(h, src, err, errlen) != 0)
		goto fail;
	base = json_object_get(sec, "baselines");
	if (base != NULL) {
		if (!json_is_object(base)) {
			json_util_fail(err, errlen,
				       "%s: field 'hierarchy.baselines': not an object", src);
			goto fail;
		}
		if (only_fields(base, base_fields, src, "hierarchy.baselines", err, errlen) != 0 ||
		    get_seconds(base, "flat_ring_seconds", src, "hierarchy.baselines",
				&h->flat_ring_seconds, err, errlen) != 0 ||
		    get_seconds(base, "site_mtree_seconds", src, "hierarchy.baselines",
				&h->site_mtree_seconds, err, errlen) != 0)
			goto fail;
	}
	return 0;
fail:
	bc_hierarchy_fini(h);
	return rc;
}

int
blueconnect_load(const struct topo *t, const char *path, struct bc_hierarchy *h, char *err,
		 size_t errlen)
{
	char *text = json_util_read_file(path, err, errlen);
	json_error_t je;
	json_t *doc;
	int rc;

	memset(h, 0, sizeof(*h));
	if (text == NULL)
		return -EINVAL;
	doc = json_loads(text, JSON_REJECT_DUPLICATES, &je);
	free(text);
	if (doc == NULL)
		return json_util_fail(err, errlen, "%s:%d:%d: %s", path, je.line, je.column,
				      je.text);
	rc = blueconnect_parse(t, doc, path, h, err, errlen);
	json_decref(doc);
	return rc;
}
