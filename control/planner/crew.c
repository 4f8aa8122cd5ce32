/* SPDX-License-Identifier: BSD-3-Clause
 *
 * CREW partial reduce: the exact share solver and its baselines, rebalancing of the
 * non-blocking scatter, failover, the plan section, bandwidth matrices, and (at the end)
 * the training-progress simulator. docs/CREW.md explains the model.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "crew.h"
#include "jsonutil.h"
#include "plan.h"

/* Gbit/s -> bytes per second. */
#define GBPS_TO_BPS 125e6

const char *
crew_scheme_name(enum crew_scheme s)
{
	switch (s) {
	case CREW_SCHEME_CREW: return "crew";
	case CREW_SCHEME_PARTIAL: return "partial-reduce";
	case CREW_SCHEME_ALL_TO_ALL: return "all-to-all";
	}
	return "?";
}

static double
rate_of(const struct crew_problem *pb, int i, int j)
{
	return pb->gbps[(size_t)i * (size_t)pb->n + (size_t)j] * GBPS_TO_BPS;
}

int
crew_check(const struct crew_problem *pb, char *err, size_t errlen)
{
	if (pb->n < 1 || pb->n > TOPO_NODES_MAX)
		return json_util_fail(err, errlen, "sites: %d is out of range [1, %d]", pb->n,
				      TOPO_NODES_MAX);
	if (pb->p < 1 || pb->p > pb->n)
		return json_util_fail(err, errlen, "group: %d members for %d sites (need 1 to %d)",
				      pb->p, pb->n, pb->n);
	if (pb->model_bytes == 0 || pb->model_bytes > CREW_MAX_BYTES)
		return json_util_fail(err, errlen, "model_bytes: must be in [1, 2^50]");
	for (int k = 0; k < pb->p; k++) {
		int m = pb->group[k];

		if (m < 0 || m >= pb->n)
			return json_util_fail(err, errlen, "group[%d]: site %d out of range", k, m);
		for (int j = 0; j < k; j++)
			if (pb->group[j] == m)
				return json_util_fail(err, errlen, "group[%d]: duplicate member", k);
	}
	for (int i = 0; i < pb->n; i++)
		for (int j = 0; j < pb->n; j++) {
			double g = pb->gbps[(size_t)i * (size_t)pb->n + (size_t)j];

			if (i != j && !(isfinite(g) && g >= 0))
				return json_util_fail(err, errlen, "bandwidth %d -> %d: must be finite "
						      "and >= 0", i, j);
		}
	return 0;
}

void
crew_rates(const struct crew_problem *pb, int i, double *a, double *b)
{
	*a = INFINITY;
	*b = INFINITY;
	for (int k = 0; k < pb->p; k++) {
		int m = pb->group[k];

		if (m == i) /* its own copy stays local */
			continue;
		*a = fmin(*a, rate_of(pb, m, i));
		*b = fmin(*b, rate_of(pb, i, m));
	}
}

void
crew_eval(const struct crew_problem *pb, const uint64_t *bytes, struct crew_times *tm)
{
	tm->scatter_s = 0;
	tm->broadcast_s = 0;
	for (int i = 0; i < pb->n; i++) {
		double a, b, s = (double)bytes[i];

		if (bytes[i] == 0)
			continue;
		crew_rates(pb, i, &a, &b);
		tm->scatter_s = fmax(tm->scatter_s, a > 0 ? s / a : INFINITY);
		tm->broadcast_s = fmax(tm->broadcast_s, b > 0 ? s / b : INFINITY);
	}
}

/* Integer shares from real ones: floors, then the remaining bytes one each to the largest
 * fractional parts (lower index first among equals), only to sites with a real share. */
static void
round_shares(int n, const double *s, uint64_t total, uint64_t *bytes)
{
	uint64_t sum = 0;
	double scale = 0;

	for (int i = 0; i < n; i++)
		scale += s[i];
	for (int i = 0; i < n; i++) {
		double v = scale > 0 ? s[i] * ((double)total / scale) : 0;

		bytes[i] = v > 0 ? (uint64_t)floor(v) : 0;
		sum += bytes[i];
	}
	while (sum > total) { /* guards against rounding up in the scaling */
		for (int i = 0; i < n && sum > total; i++)
			if (bytes[i] > 0) {
				bytes[i]--;
				sum--;
			}
	}
	while (sum < total) {
		int best = -1;
		double bf = -1;

		for (int i = 0; i < n; i++) {
			double v = scale > 0 ? s[i] * ((double)total / scale) : 0, f;

			if (v <= 0)
				continue;
			f = v - (double)bytes[i];
			if (f > bf) {
				bf = f;
				best = i;
			}
		}
		if (best < 0)
			break;
		bytes[best]++;
		sum++;
	}
}

/* A copy of the problem whose group is every site. */
static int *
all_sites(const struct crew_problem *pb, struct crew_problem *all)
{
	int *g = malloc(sizeof(int) * (size_t)pb->n);

	if (g == NULL)
		return NULL;
	for (int i = 0; i < pb->n; i++)
		g[i] = i;
	*all = *pb;
	all->group = g;
	all->p = pb->n;
	return g;
}

struct bp {
	double rho;             /* breakpoint a / b */
	double a, b;
	int site;
};

static int
bp_cmp(const void *x, const void *y)
{
	const struct bp *p = x, *q = y;

	if (p->rho != q->rho)
		return p->rho < q->rho ? -1 : 1;
	return p->site - q->site;
}

/* Sites that may aggregate for the scheme: usable[i] and their rates. */
static int
candidates(const struct crew_problem *pb, enum crew_scheme s, struct bp *cand)
{
	int m = 0;

	for (int i = 0; i < pb->n; i++) {
		double a, b;
		bool member = false;

		for (int k = 0; k < pb->p; k++)
			member |= pb->group[k] == i;
		if (s == CREW_SCHEME_PARTIAL && !member)
			continue;
		crew_rates(pb, i, &a, &b);
		if (!(a > 0 && b > 0))
			continue; /* a missing link: this site cannot serve the whole group */
		cand[m].a = a;
		cand[m].b = b;
		cand[m].rho = a / b;
		cand[m].site = i;
		m++;
	}
	return m;
}

int
crew_solve(const struct crew_problem *pb, enum crew_scheme s, uint64_t *bytes,
	   struct crew_times *tm, char *err, size_t errlen)
{
	struct crew_problem all;
	struct bp *cand = NULL;
	double *share = NULL, *suffix_b = NULL, best_g = INFINITY, best_rho = 0, best_f = 0;
	double prefix_a = 0;
	int *g = NULL, m, rc;

	if ((rc = crew_check(pb, err, errlen)) != 0)
		return rc;
	if (s == CREW_SCHEME_ALL_TO_ALL) {
		g = all_sites(pb, &all);
		if (g == NULL)
			return -ENOMEM;
		pb = &all;
	}
	memset(bytes, 0, sizeof(*bytes) * (size_t)pb->n);
	if (pb->p == 1) { /* nothing to exchange: the member keeps the model */
		bytes[pb->group[0]] = pb->model_bytes;
		tm->scatter_s = tm->broadcast_s = 0;
		free(g);
		return 0;
	}
	cand = malloc(sizeof(*cand) * (size_t)pb->n);
	share = calloc((size_t)pb->n, sizeof(*share));
	suffix_b = malloc(sizeof(*suffix_b) * ((size_t)pb->n + 1));
	rc = -ENOMEM;
	if (cand == NULL || share == NULL || suffix_b == NULL)
		goto out;
	m = candidates(pb, s, cand);
	rc = -ENOENT;
	if (m == 0) {
		json_util_fail(err, errlen, "no site has links from and to every member");
		goto out;
	}
	/* With Y = rho X the most the sites carry is X f(rho), f(rho) = sum min(a_i, b_i rho):
	 * concave, piecewise linear, with breakpoints a_i / b_i. The cost M (1 + rho) / f(rho)
	 * is linear-fractional, hence monotone, between breakpoints, and unbounded at 0 and
	 * infinity: its minimum is at a breakpoint. At breakpoint t (sorted), the sites
	 * before and at t are limited by a (scatter), the later ones by b (broadcast). */
	qsort(cand, (size_t)m, sizeof(*cand), bp_cmp);
	suffix_b[m] = 0;
	for (int t = m - 1; t >= 0; t--)
		suffix_b[t] = suffix_b[t + 1] + cand[t].b;
	for (int t = 0; t < m; t++) {
		double f, cost;

		prefix_a += cand[t].a;
		f = prefix_a + cand[t].rho * suffix_b[t + 1];
		cost = (1 + cand[t].rho) / f;
		if (cost < best_g) {
			best_g = cost;
			best_rho = cand[t].rho;
			best_f = f;
		}
	}
	{
		double x = (double)pb->model_bytes / best_f, y = best_rho * x;

		for (int t = 0; t < m; t++)
			share[cand[t].site] = fmin(cand[t].a * x, cand[t].b * y);
	}
	round_shares(pb->n, share, pb->model_bytes, bytes);
	crew_eval(pb, bytes, tm);
	rc = 0;
out:
	free(cand);
	free(share);
	free(suffix_b);
	free(g);
	return rc;
}

/* ---- rebalancing a non-blocking scatter ---- */

struct rebal {
	const struct crew_problem *pb;
	const double *credit;
	double *u;              /* n: bytes site i can hold by the end of the scatter */
	double *b;              /* n: broadcast rate, 0 = cannot aggregate */
	struct bp *ord;         /* n: scratch for the Y sweep */
};

/* u_i(X) = min over members m != i of credit + rate(m -> i) X. */
static void
rebal_u(const struct rebal *r, double x)
{
	const struct crew_problem *pb = r->pb;

	for (int i = 0; i < pb->n; i++) {
		double u = INFINITY;

		if (r->b[i] <= 0) {
			r->u[i] = 0;
			continue;
		}
		for (int k = 0; k < pb->p; k++) {
			int m = pb->group[k];

			if (m != i)
				u = fmin(u, fmax(0, r->credit[(size_t)k * (size_t)pb->n + (size_t)i]) +
					    rate_of(pb, m, i) * x);
		}
		r->u[i] = u;
	}
}

/* Smallest Y with sum min(u_i, b_i Y) >= M for the current u (INFINITY if none). */
static double
rebal_y(const struct rebal *r)
{
	const struct crew_problem *pb = r->pb;
	double m_bytes = (double)pb->model_bytes, a = 0, bsum = 0;
	int k = 0;

	for (int i = 0; i < pb->n; i++) {
		if (r->b[i] <= 0 || r->u[i] <= 0)
			continue;
		r->ord[k].rho = r->u[i] / r->b[i];
		r->ord[k].a = r->u[i];
		r->ord[k].b = r->b[i];
		r->ord[k].site = i;
		bsum += r->b[i];
		k++;
	}
	qsort(r->ord, (size_t)k, sizeof(*r->ord), bp_cmp);
	for (int t = 0; t < k; t++) {
		if (a + r->ord[t].rho * bsum >= m_bytes)
			return (m_bytes - a) / bsum;
		a += r->ord[t].a;
		bsum -= r->ord[t].b;
		if (bsum < 0)
			bsum = 0;
	}
	return a >= m_bytes * (1 - 1e-12) ? (k > 0 ? r->ord[k - 1].rho : 0) : INFINITY;
}

static double
rebal_cost(const struct rebal *r, double x, double *y)
{
	rebal_u(r, x);
	*y = rebal_y(r);
	return x + *y;
}

int
crew_rebalance(const struct crew_problem *pb, const double *credit, uint64_t *bytes,
	       struct crew_times *tm)
{
	struct rebal r = { .pb = pb, .credit = credit };
	struct crew_times lp;
	double *share = NULL, lo = 0, hi, y;
	char err[128];
	int rc;

	rc = crew_solve(pb, CREW_SCHEME_CREW, bytes, &lp, err, sizeof(err));
	if (rc != 0 || pb->p == 1)
		return rc;
	r.u = malloc(sizeof(double) * (size_t)pb->n);
	r.b = malloc(sizeof(double) * (size_t)pb->n);
	r.ord = malloc(sizeof(*r.ord) * (size_t)pb->n);
	share = calloc((size_t)pb->n, sizeof(double));
	rc = -ENOMEM;
	if (r.u == NULL || r.b == NULL || r.ord == NULL || share == NULL)
		goto out;
	for (int i = 0; i < pb->n; i++) {
		double a;

		crew_rates(pb, i, &a, &r.b[i]);
	}
	/* The credit-free optimum is feasible here too and costs at most X_lp + Y_lp, so the
	 * optimum's X lies in [X_min, X_lp + Y_lp], X_min the smallest X with enough room.
	 * X + Y(X) is convex (the feasible (X, Y) set is convex): golden-section search. */
	hi = lp.scatter_s + lp.broadcast_s;
	if (!isfinite(hi)) {
		rc = -ENOENT;
		goto out;
	}
	for (int it = 0; it < 100; it++) {
		double mid = (lo + hi) / 2;

		rebal_u(&r, mid);
		if (isfinite(rebal_y(&r)))
			hi = mid;
		else
			lo = mid;
	}
	lo = hi;
	hi = lp.scatter_s + lp.broadcast_s;
	{
		const double phi = (sqrt(5.0) - 1) / 2;
		double x1 = hi - phi * (hi - lo), x2 = lo + phi * (hi - lo), y1, y2;
		double f1 = rebal_cost(&r, x1, &y1), f2 = rebal_cost(&r, x2, &y2);

		for (int it = 0; it < 200 && hi - lo > 1e-12 * (1 + hi); it++) {
			if (f1 <= f2) {
				hi = x2;
				x2 = x1;
				f2 = f1;
				x1 = hi - phi * (hi - lo);
				f1 = rebal_cost(&r, x1, &y1);
			} else {
				lo = x1;
				x1 = x2;
				f1 = f2;
				x2 = lo + phi * (hi - lo);
				f2 = rebal_cost(&r, x2, &y2);
			}
		}
	}
	rebal_cost(&r, hi, &y);
	for (int i = 0; i < pb->n; i++)
		share[i] = r.b[i] > 0 ? fmin(r.u[i], r.b[i] * y) : 0;
	round_shares(pb->n, share, pb->model_bytes, bytes);
	/* The remaining scatter time and the broadcast time of the integer shares. */
	tm->scatter_s = 0;
	tm->broadcast_s = 0;
	for (int i = 0; i < pb->n; i++) {
		if (bytes[i] == 0)
			continue;
		tm->broadcast_s = fmax(tm->broadcast_s, (double)bytes[i] / r.b[i]);
		for (int k = 0; k < pb->p; k++) {
			int m = pb->group[k];
			double left = (double)bytes[i] - credit[(size_t)k * (size_t)pb->n + (size_t)i];

			if (m != i && left > 0)
				tm->scatter_s = fmax(tm->scatter_s, rate_of(pb, m, i) > 0 ?
						     left / rate_of(pb, m, i) : INFINITY);
		}
	}
	rc = 0;
out:
	free(r.u);
	free(r.b);
	free(r.ord);
	free(share);
	return rc;
}

/* ---- failover ---- */

static double
pend(const double *pending, int n, int i, int j)
{
	return pending != NULL ? pending[(size_t)i * (size_t)n + (size_t)j] : 0;
}

static bool
is_member(const struct crew_problem *pb, int v)
{
	for (int k = 0; k < pb->p; k++)
		if (pb->group[k] == v)
			return true;
	return false;
}

int
crew_pick_backup(const struct crew_problem *pb, int site, uint64_t bytes,
		 const double *pending, const bool *down, bool members_only)
{
	double best = INFINITY, s = (double)bytes;
	int pick = -1;

	for (int j = 0; j < pb->n; j++) {
		double xs = 0, ys = 0;
		bool ok = true;

		if (j == site || (down != NULL && down[j]) || (members_only && !is_member(pb, j)))
			continue;
		for (int k = 0; k < pb->p && ok; k++) {
			int m = pb->group[k];
			double r1, r2;

			if (m == j)
				continue;
			r1 = rate_of(pb, m, j);
			r2 = rate_of(pb, j, m);
			if (!(r1 > 0 && r2 > 0) || (down != NULL && down[m])) {
				ok = false;
				break;
			}
			xs = fmax(xs, (pend(pending, pb->n, m, j) + s) / r1);
			ys = fmax(ys, (pend(pending, pb->n, j, m) + s) / r2);
		}
		if (ok && xs + ys < best) {
			best = xs + ys;
			pick = j;
		}
	}
	return pick;
}

int
crew_pick_relay(const struct crew_problem *pb, int from, int to, uint64_t bytes,
		const double *pending, const bool *down)
{
	bool *mask = calloc((size_t)pb->n, sizeof(bool));
	double s = (double)bytes;

	if (mask == NULL)
		return -1;
	for (int k = 0; k < pb->p; k++)
		mask[pb->group[k]] = true;
	for (int pass = 0; pass < 2; pass++) {
		double best = INFINITY;
		int pick = -1;

		for (int r = 0; r < pb->n; r++) {
			double r1 = rate_of(pb, from, r), r2 = rate_of(pb, r, to), cost;
			bool member = mask[r];

			if (r == from || r == to || (down != NULL && down[r]) ||
			    (pass == 0) != member || !(r1 > 0 && r2 > 0))
				continue;
			/* A member receives the chunk anyway: only the second hop is extra. */
			cost = (pend(pending, pb->n, from, r) + (member ? 0 : s)) / r1 +
			       (pend(pending, pb->n, r, to) + s) / r2;
			if (cost < best) {
				best = cost;
				pick = r;
			}
		}
		if (pick >= 0) {
			free(mask);
			return pick;
		}
	}
	free(mask);
	return -1;
}

int
crew_failover(const struct crew_problem *pb, enum crew_scheme s, const uint64_t *bytes,
	      const bool *down, int *backup, int *relay)
{
	struct crew_problem all;
	const struct crew_problem *q = pb;
	double *load;
	int *g = NULL, n = pb->n;

	if (s == CREW_SCHEME_ALL_TO_ALL) {
		g = all_sites(pb, &all);
		if (g == NULL)
			return -ENOMEM;
		q = &all;
	}
	load = calloc((size_t)n * (size_t)n, sizeof(*load));
	if (load == NULL) {
		free(g);
		return -ENOMEM;
	}
	/* The planned transfers: every member sends S_i to i and receives S_i back. */
	for (int i = 0; i < n; i++)
		for (int k = 0; k < q->p && bytes[i] > 0; k++) {
			int m = q->group[k];

			if (m == i)
				continue;
			load[(size_t)m * (size_t)n + (size_t)i] += (double)bytes[i];
			load[(size_t)i * (size_t)n + (size_t)m] += (double)bytes[i];
		}
	for (int i = 0; i < n; i++) {
		backup[i] = bytes[i] > 0 ? crew_pick_backup(q, i, bytes[i], load, down,
							    s == CREW_SCHEME_PARTIAL) : -1;
		for (int k = 0; k < pb->p; k++) {
			int m = pb->group[k];

			relay[(size_t)i * (size_t)pb->p + (size_t)k] =
				bytes[i] > 0 && m != i ? crew_pick_relay(q, i, m, bytes[i], load, down) : -1;
		}
	}
	free(load);
	free(g);
	return 0;
}

/* ---- the plan section ---- */

int
crew_section_init(struct crew_section *s, int n, int p)
{
	memset(s, 0, sizeof(*s));
	s->n = n;
	s->p = p;
	s->group = malloc(sizeof(int) * (size_t)(p > 0 ? p : 1));
	s->bytes = calloc((size_t)n, sizeof(uint64_t));
	s->backup = malloc(sizeof(int) * (size_t)n);
	s->relay = malloc(sizeof(int) * (size_t)n * (size_t)(p > 0 ? p : 1));
	if (s->group == NULL || s->bytes == NULL || s->backup == NULL || s->relay == NULL) {
		crew_section_fini(s);
		return -ENOMEM;
	}
	for (int i = 0; i < n; i++)
		s->backup[i] = -1;
	for (size_t i = 0; i < (size_t)n * (size_t)p; i++)
		s->relay[i] = -1;
	return 0;
}

void
crew_section_fini(struct crew_section *s)
{
	free(s->group);
	free(s->bytes);
	free(s->backup);
	free(s->relay);
	s->group = NULL;
	s->bytes = NULL;
	s->backup = NULL;
	s->relay = NULL;
}

json_t *
crew_section_to_json(const struct topo *t, const struct crew_section *s)
{
	json_t *sec, *group = json_array(), *aggs = json_array(), *relays = json_array();
	uint64_t off = 0;

	if (group == NULL || aggs == NULL || relays == NULL)
		goto nomem;
	for (int k = 0; k < s->p; k++)
		json_array_append_new(group, json_string(t->nodes[s->group[k]].id));
	for (int i = 0; i < s->n; i++) {
		json_t *a;

		if (s->bytes[i] == 0)
			continue;
		a = json_pack("{s:s, s:I, s:I}", "site", t->nodes[i].id, "offset", (json_int_t)off,
			      "bytes", (json_int_t)s->bytes[i]);
		if (a == NULL)
			goto nomem;
		if (s->backup[i] >= 0)
			json_object_set_new(a, "backup", json_string(t->nodes[s->backup[i]].id));
		json_array_append_new(aggs, a);
		off += s->bytes[i];
		for (int k = 0; k < s->p; k++) {
			int r = s->relay[(size_t)i * (size_t)s->p + (size_t)k];

			if (r >= 0)
				json_array_append_new(relays, json_pack("{s:s, s:s, s:s}", "from",
									t->nodes[i].id, "to",
									t->nodes[s->group[k]].id,
									"via", t->nodes[r].id));
		}
	}
	sec = json_pack("{s:s, s:I, s:o, s:o, s:o, s:{s:f, s:f, s:f, s:f}}", "scheme",
			crew_scheme_name(s->scheme), "model_bytes", (json_int_t)s->model_bytes,
			"group", group, "aggregators", aggs, "relays", relays, "predicted",
			"scatter_seconds", s->scatter_s, "aggregate_seconds", s->aggregate_s,
			"broadcast_seconds", s->broadcast_s, "operation_seconds",
			s->scatter_s + s->aggregate_s + s->broadcast_s);
	return sec;
nomem:
	json_decref(group);
	json_decref(aggs);
	json_decref(relays);
	return NULL;
}

/* Fail on the first key of obj that is not in known[]. */
static int
known_keys(const json_t *obj, const char *const *known, size_t n_known, const char *src,
	   const char *path, char *err, size_t errlen)
{
	const char *key;
	json_t *val;

	json_object_foreach((json_t *)obj, key, val) {
		size_t k = 0;

		while (k < n_known && strcmp(key, known[k]) != 0)
			k++;
		if (k == n_known)
			return json_util_fail(err, errlen, "%s: field '%s.%.*s': unknown field", src,
					      path, TOPO_ID_MAX, key);
	}
	return 0;
}

/* A site id field: its index, or a negative value after err is set. */
static int
site_field(const struct topo *t, const json_t *v, const char *src, const char *path,
	   char *err, size_t errlen)
{
	int i;

	if (!json_is_string(v))
		return json_util_fail(err, errlen, "%s: field '%s': expected a site id", src, path);
	i = topo_node_index(t, json_string_value(v));
	if (i < 0)
		return json_util_fail(err, errlen, "%s: field '%s': unknown site id '%.*s'", src,
				      path, TOPO_ID_MAX, json_string_value(v));
	return i;
}

/* Every member other than `site` has links to and from it. */
static bool
serves_group(const struct topo *t, const struct crew_section *s, int site)
{
	for (int k = 0; k < s->p; k++)
		if (s->group[k] != site && topo_link_between(t, s->group[k], site) < 0)
			return false;
	return true;
}

static int
parse_predicted(const json_t *pr, const char *src, struct crew_section *s, char *err,
		size_t errlen)
{
	static const char *const known[] = { "scatter_seconds", "aggregate_seconds",
					     "broadcast_seconds", "operation_seconds" };
	double *dst[] = { &s->scatter_s, &s->aggregate_s, &s->broadcast_s, NULL };

	if (!json_is_object(pr))
		return json_util_fail(err, errlen, "%s: field '" CREW_SECTION ".predicted': "
				      "expected an object", src);
	if (known_keys(pr, known, 4, src, CREW_SECTION ".predicted", err, errlen) != 0)
		return -EINVAL;
	for (int f = 0; f < 4; f++) {
		json_t *v = json_object_get(pr, known[f]);
		double x;

		if (v == NULL)
			return json_util_fail(err, errlen, "%s: field '" CREW_SECTION ".predicted.%s': "
					      "missing", src, known[f]);
		x = json_is_number(v) ? json_number_value(v) : -1;
		if (!(isfinite(x) && x >= 0))
			return json_util_fail(err, errlen, "%s: field '" CREW_SECTION ".predicted.%s': "
					      "expected a finite number >= 0", src, known[f]);
		if (dst[f] != NULL)
			*dst[f] = x;
	}
	return 0;
}

static int
parse_aggregators(const struct topo *t, const json_t *aggs, const char *src,
		  struct crew_section *s, char *err, size_t errlen)
{
	static const char *const known[] = { "site", "offset", "bytes", "backup" };
	uint64_t off = 0;
	char path[96];

	if (!json_is_array(aggs) || json_array_size(aggs) == 0)
		return json_util_fail(err, errlen, "%s: field '" CREW_SECTION ".aggregators': "
				      "expected a non-empty array", src);
	for (size_t a = 0; a < json_array_size(aggs); a++) {
		json_t *o = json_array_get(aggs, a), *jo, *jb, *bk;
		int i;

		snprintf(path, sizeof(path), CREW_SECTION ".aggregators[%zu]", a);
		if (!json_is_object(o))
			return json_util_fail(err, errlen, "%s: field '%s': expected an object", src,
					      path);
		if (known_keys(o, known, 4, src, path, err, errlen) != 0)
			return -EINVAL;
		snprintf(path, sizeof(path), CREW_SECTION ".aggregators[%zu].site", a);
		if ((i = site_field(t, json_object_get(o, "site"), src, path, err, errlen)) < 0)
			return -EINVAL;
		if (s->bytes[i] != 0)
			return json_util_fail(err, errlen, "%s: field '%s': site '%s' listed twice",
					      src, path, t->nodes[i].id);
		if (!serves_group(t, s, i))
			return json_util_fail(err, errlen, "%s: field '%s': site '%s' lacks a link to "
					      "a member", src, path, t->nodes[i].id);
		jo = json_object_get(o, "offset");
		jb = json_object_get(o, "bytes");
		if (!json_is_integer(jo) || json_integer_value(jo) != (json_int_t)off)
			return json_util_fail(err, errlen, "%s: field '" CREW_SECTION ".aggregators[%zu]"
					      ".offset': expected the integer %llu (ranges are "
					      "contiguous)", src, a, (unsigned long long)off);
		if (!json_is_integer(jb) || json_integer_value(jb) <= 0 ||
		    (uint64_t)json_integer_value(jb) > s->model_bytes - off)
			return json_util_fail(err, errlen, "%s: field '" CREW_SECTION ".aggregators[%zu]"
					      ".bytes': expected an integer in [1, %llu]", src, a,
					      (unsigned long long)(s->model_bytes - off));
		s->bytes[i] = (uint64_t)json_integer_value(jb);
		off += s->bytes[i];
		bk = json_object_get(o, "backup");
		if (bk != NULL) {
			int j;

			snprintf(path, sizeof(path), CREW_SECTION ".aggregators[%zu].backup", a);
			if ((j = site_field(t, bk, src, path, err, errlen)) < 0)
				return -EINVAL;
			if (j == i || !serves_group(t, s, j))
				return json_util_fail(err, errlen, "%s: field '%s': '%s' %s", src, path,
						      t->nodes[j].id, j == i ? "is the aggregator "
						      "itself" : "lacks a link to a member");
			s->backup[i] = j;
		}
	}
	if (off != s->model_bytes)
		return json_util_fail(err, errlen, "%s: field '" CREW_SECTION ".aggregators': shares "
				      "sum to %llu bytes, model_bytes is %llu", src,
				      (unsigned long long)off, (unsigned long long)s->model_bytes);
	return 0;
}

static int
parse_relays(const struct topo *t, const json_t *rel, const char *src, struct crew_section *s,
	     char *err, size_t errlen)
{
	static const char *const known[] = { "from", "to", "via" };
	char path[96];

	if (!json_is_array(rel))
		return json_util_fail(err, errlen, "%s: field '" CREW_SECTION ".relays': expected "
				      "an array", src);
	for (size_t r = 0; r < json_array_size(rel); r++) {
		json_t *o = json_array_get(rel, r);
		int v[3], k;

		snprintf(path, sizeof(path), CREW_SECTION ".relays[%zu]", r);
		if (!json_is_object(o))
			return json_util_fail(err, errlen, "%s: field '%s': expected an object", src,
					      path);
		if (known_keys(o, known, 3, src, path, err, errlen) != 0)
			return -EINVAL;
		for (int f = 0; f < 3; f++) {
			snprintf(path, sizeof(path), CREW_SECTION ".relays[%zu].%s", r, known[f]);
			if ((v[f] = site_field(t, json_object_get(o, known[f]), src, path, err,
					       errlen)) < 0)
				return -EINVAL;
		}
		for (k = 0; k < s->p && s->group[k] != v[1]; k++)
			;
		if (s->bytes[v[0]] == 0)
			return json_util_fail(err, errlen, "%s: field '" CREW_SECTION ".relays[%zu]."
					      "from': '%s' is not an aggregator", src, r,
					      t->nodes[v[0]].id);
		if (k == s->p || v[1] == v[0])
			return json_util_fail(err, errlen, "%s: field '" CREW_SECTION ".relays[%zu].to':"
					      " '%s' is not another member", src, r, t->nodes[v[1]].id);
		if (v[2] == v[0] || v[2] == v[1] || topo_link_between(t, v[0], v[2]) < 0 ||
		    topo_link_between(t, v[2], v[1]) < 0)
			return json_util_fail(err, errlen, "%s: field '" CREW_SECTION ".relays[%zu].via':"
					      " '%s' is no two-hop path", src, r, t->nodes[v[2]].id);
		if (s->relay[(size_t)v[0] * (size_t)s->p + (size_t)k] >= 0)
			return json_util_fail(err, errlen, "%s: field '" CREW_SECTION ".relays[%zu]': "
					      "a second relay for '%s' -> '%s'", src, r,
					      t->nodes[v[0]].id, t->nodes[v[1]].id);
		s->relay[(size_t)v[0] * (size_t)s->p + (size_t)k] = v[2];
	}
	return 0;
}

int
crew_section_parse(const struct topo *t, const json_t *sec, const char *src,
		   struct crew_section *s, char *err, size_t errlen)
{
	static const char *const known[] = { "scheme", "model_bytes", "group", "aggregators",
					     "relays", "predicted" };
	json_t *sch, *mb, *grp, *pr;
	size_t p;
	int rc;

	memset(s, 0, sizeof(*s));
	if (src == NULL)
		src = "<plan>";
	if (!json_is_object(sec))
		return json_util_fail(err, errlen, "%s: field '" CREW_SECTION "': expected an object",
				      src);
	if (known_keys(sec, known, 6, src, CREW_SECTION, err, errlen) != 0)
		return -EINVAL;
	grp = json_object_get(sec, "group");
	p = json_array_size(grp);
	if (!json_is_array(grp) || p == 0 || p > (size_t)t->n_nodes)
		return json_util_fail(err, errlen, "%s: field '" CREW_SECTION ".group': expected 1 "
				      "to %d site ids", src, t->n_nodes);
	if (crew_section_init(s, t->n_nodes, (int)p) != 0) {
		json_util_fail(err, errlen, "%s: out of memory", src);
		return -ENOMEM;
	}
	rc = -EINVAL;
	sch = json_object_get(sec, "scheme");
	s->scheme = CREW_SCHEME_CREW;
	while (json_is_string(sch) &&
	       strcmp(json_string_value(sch), crew_scheme_name(s->scheme)) != 0 &&
	       s->scheme != CREW_SCHEME_ALL_TO_ALL)
		s->scheme++;
	if (!json_is_string(sch) || strcmp(json_string_value(sch), crew_scheme_name(s->scheme)) != 0) {
		json_util_fail(err, errlen, "%s: field '" CREW_SECTION ".scheme': expected \"crew\", "
			       "\"partial-reduce\" or \"all-to-all\"", src);
		goto bad;
	}
	mb = json_object_get(sec, "model_bytes");
	if (!json_is_integer(mb) || json_integer_value(mb) <= 0 ||
	    (uint64_t)json_integer_value(mb) > CREW_MAX_BYTES) {
		json_util_fail(err, errlen, "%s: field '" CREW_SECTION ".model_bytes': expected an "
			       "integer in [1, 2^50]", src);
		goto bad;
	}
	s->model_bytes = (uint64_t)json_integer_value(mb);
	for (size_t k = 0; k < p; k++) {
		char path[64];
		int v;

		snprintf(path, sizeof(path), CREW_SECTION ".group[%zu]", k);
		if ((v = site_field(t, json_array_get(grp, k), src, path, err, errlen)) < 0)
			goto bad;
		for (size_t j = 0; j < k; j++)
			if (s->group[j] == v) {
				json_util_fail(err, errlen, "%s: field '%s': duplicate member '%s'", src,
					       path, t->nodes[v].id);
				goto bad;
			}
		s->group[k] = v;
	}
	if (s->scheme == CREW_SCHEME_ALL_TO_ALL && s->p != t->n_nodes) {
		json_util_fail(err, errlen, "%s: field '" CREW_SECTION ".group': all-to-all needs "
			       "every site", src);
		goto bad;
	}
	if (parse_aggregators(t, json_object_get(sec, "aggregators"), src, s, err, errlen) != 0)
		goto bad;
	if (s->scheme == CREW_SCHEME_PARTIAL)
		for (int i = 0; i < s->n; i++) {
			bool member = false;

			for (int k = 0; k < s->p; k++)
				member |= s->group[k] == i;
			if (s->bytes[i] > 0 && !member) {
				json_util_fail(err, errlen, "%s: field '" CREW_SECTION ".aggregators': "
					       "'%s' is not a member (scheme partial-reduce)", src,
					       t->nodes[i].id);
				goto bad;
			}
		}
	if (json_object_get(sec, "relays") == NULL) {
		json_util_fail(err, errlen, "%s: field '" CREW_SECTION ".relays': missing", src);
		goto bad;
	}
	if (parse_relays(t, json_object_get(sec, "relays"), src, s, err, errlen) != 0)
		goto bad;
	pr = json_object_get(sec, "predicted");
	if (pr != NULL && parse_predicted(pr, src, s, err, errlen) != 0)
		goto bad;
	return 0;
bad:
	crew_section_fini(s);
	return rc;
}

int
crew_section_load(const struct topo *t, const char *path, struct crew_section *s, char *err,
		  size_t errlen)
{
	char *text = json_util_read_file(path, err, errlen);
	struct plan *p;
	json_t *root;
	int rc;

	memset(s, 0, sizeof(*s));
	if (text == NULL)
		return -errno;
	p = plan_parse(t, text, path, err, errlen);
	if (p == NULL) {
		free(text);
		return -EINVAL;
	}
	plan_free(p);
	root = json_loads(text, JSON_REJECT_DUPLICATES, NULL);
	free(text);
	if (root == NULL)
		return json_util_fail(err, errlen, "%s: out of memory", path);
	if (json_object_get(root, CREW_SECTION) == NULL)
		rc = json_util_fail(err, errlen, "%s: field '" CREW_SECTION "': missing", path);
	else
		rc = crew_section_parse(t, json_object_get(root, CREW_SECTION), path, s, err,
					errlen);
	json_decref(root);
	return rc;
}

/* ---- bandwidth matrices ---- */

double *
crew_matrix_from_topo(const struct topo *t)
{
	size_t n = (size_t)t->n_nodes;
	double *g = calloc(n * n, sizeof(*g));

	if (g == NULL)
		return NULL;
	for (int l = 0; l < t->n_links; l++) {
		const struct topo_link *k = &t->links[l];

		g[(size_t)k->a * n + (size_t)k->b] = k->gbps_ab;
		g[(size_t)k->b * n + (size_t)k->a] = k->gbps_ba;
	}
	return g;
}

/* Split one CSV line in place at commas; returns the number of fields (at most max, one
 * more means too many). Surrounding blanks are trimmed. */
static int
csv_split(char *line, char **f, int max)
{
	int k = 0;

	for (char *p = line;; ) {
		char *c = strchr(p, ','), *e;

		if (k == max)
			return max + 1;
		if (c != NULL)
			*c = '\0';
		while (*p == ' ' || *p == '\t')
			p++;
		e = p + strlen(p);
		while (e > p && (e[-1] == ' ' || e[-1] == '\t' || e[-1] == '\r'))
			*--e = '\0';
		f[k++] = p;
		if (c == NULL)
			return k;
		p = c + 1;
	}
}

/* A strict number: the whole cell, finite. */
static bool
cell_number(const char *s, double *v)
{
	char *end;

	if (*s == '\0')
		return false;
	errno = 0;
	*v = strtod(s, &end);
	return *end == '\0' && errno == 0 && isfinite(*v);
}

/* Next line of text (in place); NULL at the end. */
static char *
next_line(char **cur)
{
	char *s = *cur, *nl;

	if (s == NULL || *s == '\0')
		return NULL;
	nl = strchr(s, '\n');
	if (nl != NULL) {
		*nl = '\0';
		*cur = nl + 1;
	} else {
		*cur = s + strlen(s);
	}
	return s;
}

static bool
blank(const char *s)
{
	return s[strspn(s, " \t\r")] == '\0';
}

struct topo *
crew_matrix_parse(const char *text, const char *src, const char *name, char *err,
		  size_t errlen)
{
	char *buf = strdup(text), *cur = buf, *line, **f = NULL;
	struct topo_node *nodes = NULL;
	struct topo_link *links = NULL;
	struct topo *t = NULL;
	double *m = NULL;
	int n = 0, row = 0, lineno = 0, nl = 0;

	if (buf == NULL)
		goto nomem;
	while ((line = next_line(&cur)) != NULL) {
		int k;

		lineno++;
		if (blank(line))
			continue;
		if (f == NULL) { /* the header fixes n */
			n = 1;
			for (const char *p = line; *p; p++)
				n += *p == ',';
			n -= 1;
			if (n < 1 || n > TOPO_NODES_MAX) {
				json_util_fail(err, errlen, "%s:%d: header: expected 'name,ID1,...,IDn' "
					       "with 1 to %d sites", src, lineno, TOPO_NODES_MAX);
				goto bad;
			}
			f = malloc(sizeof(*f) * ((size_t)n + 2));
			nodes = calloc((size_t)n, sizeof(*nodes));
			m = calloc((size_t)n * (size_t)n, sizeof(*m));
			links = calloc((size_t)n * (size_t)(n - 1) / 2 + 1, sizeof(*links));
			if (f == NULL || nodes == NULL || m == NULL || links == NULL)
				goto nomem;
			csv_split(line, f, n + 1);
			for (int i = 0; i < n; i++) {
				size_t len = strlen(f[i + 1]);

				if (len == 0 || len > TOPO_ID_MAX) {
					json_util_fail(err, errlen, "%s:%d:%d: site id must be 1 to %d "
						       "bytes", src, lineno, i + 2, TOPO_ID_MAX);
					goto bad;
				}
				for (int j = 0; j < i; j++)
					if (strcmp(nodes[j].id, f[i + 1]) == 0) {
						json_util_fail(err, errlen, "%s:%d:%d: duplicate site id "
							       "'%s'", src, lineno, i + 2, f[i + 1]);
						goto bad;
					}
				memcpy(nodes[i].id, f[i + 1], len + 1);
				nodes[i].workers = TOPO_DEFAULT_WORKERS;
				nodes[i].gateways = TOPO_DEFAULT_GATEWAYS;
				nodes[i].lan_gbps = TOPO_DEFAULT_LAN_GBPS;
				nodes[i].lan_latency_ms = TOPO_DEFAULT_LAN_LATENCY_MS;
			}
			continue;
		}
		k = csv_split(line, f, n + 1);
		if (row == n || k != n + 1) {
			json_util_fail(err, errlen, "%s:%d: the matrix is not square: %s", src, lineno,
				       row == n ? "more rows than sites" : "the row's cell count "
				       "differs from the header's");
			goto bad;
		}
		if (strcmp(f[0], nodes[row].id) != 0) {
			json_util_fail(err, errlen, "%s:%d:1: expected the row of '%s' (rows in the "
				       "header's order)", src, lineno, nodes[row].id);
			goto bad;
		}
		for (int j = 0; j < n; j++) {
			double v;
			const char *c = f[j + 1];

			if (j == row) {
				if (*c != '\0' && !(cell_number(c, &v) && v == 0)) {
					json_util_fail(err, errlen, "%s:%d:%d: the diagonal must be "
						       "empty or 0", src, lineno, j + 2);
					goto bad;
				}
				continue;
			}
			if (*c == '\0') {
				json_util_fail(err, errlen, "%s:%d:%d: missing bandwidth '%s' -> '%s'",
					       src, lineno, j + 2, nodes[row].id, nodes[j].id);
				goto bad;
			}
			if (!cell_number(c, &v) || v <= 0) {
				json_util_fail(err, errlen, "%s:%d:%d: bandwidth '%s' -> '%s' must be a "
					       "number > 0, got '%.32s'", src, lineno, j + 2,
					       nodes[row].id, nodes[j].id, c);
				goto bad;
			}
			m[(size_t)row * (size_t)n + (size_t)j] = v;
		}
		row++;
	}
	if (f == NULL || row != n) {
		json_util_fail(err, errlen, "%s: the matrix is not square: %d sites in the header, "
			       "%d rows", src, n, row);
		goto bad;
	}
	for (int i = 0; i < n; i++)
		for (int j = i + 1; j < n; j++) {
			links[nl].a = i;
			links[nl].b = j;
			links[nl].gbps_ab = m[(size_t)i * (size_t)n + (size_t)j];
			links[nl].gbps_ba = m[(size_t)j * (size_t)n + (size_t)i];
			nl++;
		}
	t = topo_create(name, n, nodes, nl, links, err, errlen);
	goto out;
nomem:
	json_util_fail(err, errlen, "%s: out of memory", src);
bad:
	t = NULL;
out:
	free(buf);
	free(f);
	free(nodes);
	free(links);
	free(m);
	return t;
}

int
crew_values_load(const char *path, double **values, char *err, size_t errlen)
{
	char *text = json_util_read_file(path, err, errlen), *cur, *line;
	double *v = NULL;
	int n = 0, cap = 0, lineno = 0;

	*values = NULL;
	if (text == NULL)
		return -EINVAL;
	cur = text;
	while ((line = next_line(&cur)) != NULL) {
		char *c = strrchr(line, ',');
		double x;

		lineno++;
		if (blank(line))
			continue;
		c = c != NULL ? c + 1 : line;
		while (*c == ' ' || *c == '\t')
			c++;
		c[strcspn(c, " \t\r")] = '\0';
		if (!cell_number(c, &x)) {
			if (n == 0 && lineno == 1)
				continue; /* a header */
			json_util_fail(err, errlen, "%s:%d: expected a bandwidth in Mbit/s, got "
				       "'%.32s'", path, lineno, c);
			goto bad;
		}
		if (x <= 0) {
			json_util_fail(err, errlen, "%s:%d: bandwidth must be > 0", path, lineno);
			goto bad;
		}
		if (n == cap) {
			double *nv = realloc(v, sizeof(*v) * (size_t)(cap = cap ? cap * 2 : 128));

			if (nv == NULL) {
				json_util_fail(err, errlen, "%s: out of memory", path);
				goto bad;
			}
			v = nv;
		}
		v[n++] = x;
	}
	if (n == 0) {
		json_util_fail(err, errlen, "%s: no bandwidth values", path);
		goto bad;
	}
	free(text);
	*values = v;
	return n;
bad:
	free(text);
	free(v);
	return -EINVAL;
}

/* splitmix64: the planner's seeded generator. */
static uint64_t
mix64(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

void
crew_random_group(int n, int p, uint64_t seed, int *group)
{
	int *perm = malloc(sizeof(int) * (size_t)n);
	uint64_t s = seed ^ 0x67726f7570ull;

	if (perm == NULL) { /* fall back to the first p sites */
		for (int k = 0; k < p; k++)
			group[k] = k;
		return;
	}
	for (int i = 0; i < n; i++)
		perm[i] = i;
	for (int k = 0; k < p; k++) { /* partial Fisher-Yates */
		int j = k + (int)(mix64(&s) % (uint64_t)(n - k)), tmp = perm[k];

		perm[k] = perm[j];
		perm[j] = tmp;
		group[k] = perm[k];
	}
	free(perm);
}

struct topo *
crew_draw_mesh(int n, const double *values, int n_values, uint64_t seed, char *err,
	       size_t errlen)
{
	struct topo_node *nodes = calloc((size_t)(n > 0 ? n : 1), sizeof(*nodes));
	struct topo_link *links = calloc((size_t)(n > 1 ? n * (n - 1) / 2 : 1), sizeof(*links));
	struct topo *t = NULL;
	uint64_t s = seed;
	int nl = 0, width = n > 100 ? 4 : 2;
	char name[64];

	if (nodes == NULL || links == NULL || n_values < 1 || n < 1 || n > TOPO_NODES_MAX) {
		json_util_fail(err, errlen, nodes == NULL || links == NULL ? "out of memory" :
			       "intercloud: need 1 to %d sites and at least one value",
			       TOPO_NODES_MAX);
		goto out;
	}
	for (int i = 0; i < n; i++) {
		snprintf(nodes[i].id, sizeof(nodes[i].id), "c%0*d", width, i);
		nodes[i].workers = TOPO_DEFAULT_WORKERS;
		nodes[i].gateways = TOPO_DEFAULT_GATEWAYS;
		nodes[i].lan_gbps = TOPO_DEFAULT_LAN_GBPS;
		nodes[i].lan_latency_ms = TOPO_DEFAULT_LAN_LATENCY_MS;
	}
	for (int i = 0; i < n; i++)
		for (int j = i + 1; j < n; j++) {
			links[nl].a = i;
			links[nl].b = j;
			links[nl].gbps_ab = values[mix64(&s) % (uint64_t)n_values] / 1000;
			links[nl].gbps_ba = values[mix64(&s) % (uint64_t)n_values] / 1000;
			nl++;
		}
	snprintf(name, sizeof(name), "crew-intercloud-%d-seed%llu", n, (unsigned long long)seed);
	t = topo_create(name, n, nodes, nl, links, err, errlen);
out:
	free(nodes);
	free(links);
	return t;
}

/* ---- training-progress simulator ---- */

/* Uniform in (0, 1). */
static double
unif(uint64_t *s)
{
	return ((double)(mix64(s) >> 11) + 0.5) * 0x1.0p-53;
}

double
crew_compute_time(const struct crew_sim_opts *o, int w, int it)
{
	uint64_t s = o->seed ^ ((uint64_t)(unsigned)w * 0xd1b54a32d192ed03ull) ^
		     ((uint64_t)(unsigned)it * 0x8cb92ba72f3d8dd7ull);
	double u1 = unif(&s), u2 = unif(&s), u3 = unif(&s), u4 = unif(&s), t;

	/* Body: lognormal around the median (sigma 0.2). Tail: with straggler_prob the
	 * iteration is slowed by a Pareto factor (minimum 2, shape 1.5), at most 20x. */
	t = o->compute_s * exp(0.2 * sqrt(-2 * log(u1)) * cos(2 * M_PI * u2));
	if (u3 < o->straggler_prob)
		t *= fmin(20, 2 * pow(u4, -1 / 1.5));
	return t;
}

enum { X_PRE, X_SCATTER, X_BCAST };
enum { X_QUEUED, X_DONE, X_GONE };
enum { EV_COMPUTE, EV_LINK, EV_AGG, EV_FAIL };

/* Upper bound on transfers in one run (memory stays bounded). */
#define SIM_MAX_XFERS (8u << 20)

struct xfer {
	double left;            /* bytes to send; for a link's head, as of the link's start */
	double total;           /* bytes the hop carries */
	int src, dst, fin;      /* this hop, and the final destination */
	int op, chunk, k;       /* operation, chunk (its original site), member index */
	int next;               /* next in the link's queue, -1 */
	unsigned char kind, state;
};

struct ev {
	double t;
	uint64_t seq;           /* ties in time go first in, first out */
	int type, a, b;
	unsigned ver;
};

/* One partial reduce in flight. */
struct op {
	int p, chunks, done;
	double start;
	int *mem;               /* p member sites */
	int *midx;              /* n: member index of a site, or -1 */
	uint64_t *size;         /* n: chunk sizes */
	int *host;              /* n: aggregator of each chunk now (backups move it) */
	int *need;              /* n: scatter arrivals the chunk still waits for */
	int *sc, *bc, *via;     /* p * n: scatter, broadcast transfer; relay member index */
	unsigned char *got;     /* p * n: member k holds reduced chunk c */
	int *cnt;               /* p: reduced chunks member k holds */
};

struct sim {
	int n;
	enum crew_scheme scheme;
	const struct crew_sim_opts *o;
	struct crew_sim_result *r;
	double now;
	double *g;              /* n * n Gbit/s now: failed links are 0 */
	double *queued;         /* n * n bytes in each link's queue */
	int *head, *tail;       /* per link: FIFO of transfers */
	double *start;          /* per link: when the head began (or was resized) */
	unsigned *ver;          /* per link: invalidates stale completion events */
	struct xfer *x;
	size_t nx, capx;
	struct ev *heap;
	size_t nh, caph;
	uint64_t seq;
	struct op **ops;
	int nops, capops;
	int *iter;              /* per worker: next iteration */
	double *ready_at;
	int *pool, npool;       /* ready workers waiting for a group, in order */
	int *pre;               /* n * n: live pre-scatter transfer of w to site i, or -1 */
	double *pre_done;       /* n * n: pre-scatter bytes already delivered */
	uint64_t *a2a;          /* all-to-all shares the pre-scatter uses */
	double *cpu_free;       /* per site: when its aggregation queue drains */
	double *eff;            /* scratch: two-hop effective matrix */
	double *credit;         /* scratch: p * n */
	double op_sum, wait_sum;
	int waits, nb;
	int *bucket;
	int err;
};

static double
bps(const struct sim *s, int l)
{
	return s->g[l] * GBPS_TO_BPS;
}

static bool
ev_less(const struct ev *a, const struct ev *b)
{
	return a->t < b->t || (a->t == b->t && a->seq < b->seq);
}

static void
ev_push(struct sim *s, double t, int type, int a, int b, unsigned ver)
{
	struct ev e = { .t = t, .seq = s->seq++, .type = type, .a = a, .b = b, .ver = ver };
	size_t i;

	if (s->nh == s->caph) {
		size_t cap = s->caph ? s->caph * 2 : 1024;
		struct ev *h = realloc(s->heap, sizeof(*h) * cap);

		if (h == NULL) {
			s->err = -ENOMEM;
			return;
		}
		s->heap = h;
		s->caph = cap;
	}
	for (i = s->nh++; i > 0 && ev_less(&e, &s->heap[(i - 1) / 2]); i = (i - 1) / 2)
		s->heap[i] = s->heap[(i - 1) / 2];
	s->heap[i] = e;
}

static struct ev
ev_pop(struct sim *s)
{
	struct ev top = s->heap[0], last = s->heap[--s->nh];
	size_t i = 0;

	for (;;) {
		size_t c = 2 * i + 1;

		if (c >= s->nh)
			break;
		if (c + 1 < s->nh && ev_less(&s->heap[c + 1], &s->heap[c]))
			c++;
		if (!ev_less(&s->heap[c], &last))
			break;
		s->heap[i] = s->heap[c];
		i = c;
	}
	if (s->nh > 0)
		s->heap[i] = last;
	return top;
}

static int
link_of(const struct sim *s, int id)
{
	return s->x[id].src * s->n + s->x[id].dst;
}

/* The head of link l starts (or restarts) sending now. */
static void
link_start(struct sim *s, int l)
{
	int h = s->head[l];

	s->ver[l]++;
	if (h < 0)
		return;
	s->start[l] = s->now;
	ev_push(s, s->now + s->x[h].left / bps(s, l), EV_LINK, l, 0, s->ver[l]);
}

static void
link_push(struct sim *s, int id)
{
	int l = link_of(s, id);

	s->x[id].next = -1;
	s->queued[l] += s->x[id].left;
	if (s->tail[l] < 0) {
		s->head[l] = s->tail[l] = id;
		link_start(s, l);
	} else {
		s->x[s->tail[l]].next = id;
		s->tail[l] = id;
	}
}

/* Bytes transfer id still has to send now. */
static double
left_now(const struct sim *s, int id)
{
	int l = link_of(s, id);

	if (s->head[l] != id)
		return s->x[id].left;
	return fmax(0, s->x[id].left - (s->now - s->start[l]) * bps(s, l));
}

/* Take a queued transfer off its link. */
static void
link_remove(struct sim *s, int id)
{
	int l = link_of(s, id);

	s->queued[l] = fmax(0, s->queued[l] - s->x[id].left);
	s->x[id].state = X_GONE;
	if (s->head[l] == id) {
		s->head[l] = s->x[id].next;
		if (s->head[l] < 0)
			s->tail[l] = -1;
		link_start(s, l);
		return;
	}
	for (int p = s->head[l]; p >= 0; p = s->x[p].next)
		if (s->x[p].next == id) {
			s->x[p].next = s->x[id].next;
			if (s->tail[l] == id)
				s->tail[l] = p;
			return;
		}
}

/* Give a queued transfer a new remaining size (the head restarts from now). */
static void
x_resize(struct sim *s, int id, double left)
{
	int l = link_of(s, id);

	s->queued[l] += left - s->x[id].left;
	s->x[id].left = left;
	s->x[id].total = left;
	if (s->head[l] == id)
		link_start(s, l);
}

/* Queue bytes from src towards fin: directly, or over the best two-hop path when the
 * direct link is down. Returns the transfer id, or -1 if fin cannot be reached. */
static int
send(struct sim *s, int kind, int src, int fin, double bytes, int op, int chunk, int k)
{
	int n = s->n, hop = fin, id;

	if (s->g[src * n + fin] <= 0) {
		double best = INFINITY;

		hop = -1;
		for (int r = 0; r < n; r++) {
			int l1 = src * n + r, l2 = r * n + fin;
			double c;

			if (r == src || r == fin || s->g[l1] <= 0 || s->g[l2] <= 0)
				continue;
			c = (s->queued[l1] + bytes) / bps(s, l1) + (s->queued[l2] + bytes) / bps(s, l2);
			if (c < best) {
				best = c;
				hop = r;
			}
		}
		if (hop < 0)
			return -1;
		s->r->rerouted++;
	}
	if (s->nx == s->capx) {
		size_t cap = s->capx ? s->capx * 2 : 4096;
		struct xfer *x = cap > SIM_MAX_XFERS ? NULL : realloc(s->x, sizeof(*x) * cap);

		if (x == NULL) {
			s->err = cap > SIM_MAX_XFERS ? -E2BIG : -ENOMEM;
			return -1;
		}
		s->x = x;
		s->capx = cap;
	}
	id = (int)s->nx++;
	s->x[id] = (struct xfer){ .left = bytes, .total = bytes, .src = src, .dst = hop,
				  .fin = fin, .op = op, .chunk = chunk, .k = k, .next = -1,
				  .kind = (unsigned char)kind, .state = X_QUEUED };
	s->r->transfers++;
	link_push(s, id);
	return id;
}

static void
start_agg(struct sim *s, int opi, int c)
{
	int h = s->ops[opi]->host[c];
	double st = fmax(s->now, s->cpu_free[h]);

	s->cpu_free[h] = st + s->o->aggregate_s;
	ev_push(s, st + s->o->aggregate_s, EV_AGG, opi, c, 0);
}

static void
member_done(struct sim *s, int opi, int k)
{
	struct op *op = s->ops[opi];
	int w = op->mem[k];

	ev_push(s, s->now + crew_compute_time(s->o, w, s->iter[w]), EV_COMPUTE, w, 0, 0);
	s->iter[w]++;
	if (++op->done < op->p)
		return;
	s->r->rounds++;
	s->op_sum += s->now - op->start;
	s->bucket[s->now <= 1 ? 0 : (int)fmin(s->nb - 1, ceil(s->now) - 1)]++;
	free(op);
	s->ops[opi] = NULL;
}

/* Member k holds reduced chunk c: forward it where k relays, count it. */
static void
member_got(struct sim *s, int opi, int k, int c)
{
	struct op *op = s->ops[opi];
	size_t n = (size_t)s->n;

	if (op->got[(size_t)k * n + (size_t)c])
		return;
	op->got[(size_t)k * n + (size_t)c] = 1;
	for (int k2 = 0; k2 < op->p; k2++)
		if (op->via[(size_t)k2 * n + (size_t)c] == k && !op->got[(size_t)k2 * n + (size_t)c])
			op->bc[(size_t)k2 * n + (size_t)c] =
				send(s, X_BCAST, op->mem[k], op->mem[k2], (double)op->size[c], opi, c,
				     k2);
	if (++op->cnt[k] == op->chunks)
		member_done(s, opi, k);
}

static struct crew_problem
op_problem(const struct sim *s, const struct op *op)
{
	return (struct crew_problem){ .n = s->n, .gbps = s->g, .group = op->mem, .p = op->p,
				      .model_bytes = s->o->model_bytes };
}

/* Broadcast reduced chunk c from its host to member k, through a relay member when the
 * direct link is down. */
static void
send_bcast(struct sim *s, int opi, int c, int k)
{
	struct op *op = s->ops[opi];
	struct crew_problem pb = op_problem(s, op);
	int h = op->host[c], m = op->mem[k], r;
	size_t kc = (size_t)k * (size_t)s->n + (size_t)c;

	if (s->g[h * s->n + m] <= 0) {
		r = crew_pick_relay(&pb, h, m, op->size[c], s->queued, NULL);
		if (r >= 0 && op->midx[r] >= 0) {
			s->r->relays++;
			op->via[kc] = op->midx[r];
			if (op->got[(size_t)op->midx[r] * (size_t)s->n + (size_t)c])
				op->bc[kc] = send(s, X_BCAST, r, m, (double)op->size[c], opi, c, k);
			return;
		}
	}
	op->bc[kc] = send(s, X_BCAST, h, m, (double)op->size[c], opi, c, k);
}

static void
on_agg(struct sim *s, int opi, int c)
{
	struct op *op = s->ops[opi];
	int host_k = -1;

	for (int k = 0; k < op->p; k++) {
		if (op->mem[k] == op->host[c])
			host_k = k;
		else
			send_bcast(s, opi, c, k);
	}
	if (host_k >= 0) /* last: it may complete (and free) the operation */
		member_got(s, opi, host_k, c);
}

/* Move chunk c to aggregator j: every member sends its whole copy there. */
static void
reassign(struct sim *s, int opi, int c, int j)
{
	struct op *op = s->ops[opi];
	size_t n = (size_t)s->n;

	for (int k = 0; k < op->p; k++) {
		int id = op->sc[(size_t)k * n + (size_t)c];

		if (id >= 0 && s->x[id].state == X_QUEUED)
			link_remove(s, id);
		op->sc[(size_t)k * n + (size_t)c] = -1;
	}
	op->host[c] = j;
	op->need[c] = 0;
	for (int k = 0; k < op->p; k++)
		if (op->mem[k] != j) {
			op->need[c]++;
			op->sc[(size_t)k * n + (size_t)c] =
				send(s, X_SCATTER, op->mem[k], j, (double)op->size[c], opi, c, k);
		}
	if (op->need[c] == 0)
		start_agg(s, opi, c);
}

static void
deliver(struct sim *s, int id)
{
	struct xfer x = s->x[id];
	size_t n = (size_t)s->n;
	struct op *op;

	s->x[id].state = X_DONE;
	if (x.kind == X_PRE) {
		s->pre[(size_t)x.src * n + (size_t)x.fin] = -1;
		s->pre_done[(size_t)x.src * n + (size_t)x.fin] += x.total;
		return;
	}
	op = s->ops[x.op];
	if (op == NULL)
		return;
	if (x.dst != x.fin) { /* the relay forwards what it received */
		int nid = send(s, x.kind, x.dst, x.fin, x.total, x.op, x.chunk, x.k);
		int *ref = x.kind == X_SCATTER ? op->sc : op->bc;

		if (ref[(size_t)x.k * n + (size_t)x.chunk] == id)
			ref[(size_t)x.k * n + (size_t)x.chunk] = nid;
		return;
	}
	if (x.kind == X_SCATTER) {
		if (op->sc[(size_t)x.k * n + (size_t)x.chunk] != id || op->host[x.chunk] != x.fin)
			return; /* superseded by a backup */
		op->sc[(size_t)x.k * n + (size_t)x.chunk] = -1;
		if (--op->need[x.chunk] == 0)
			start_agg(s, x.op, x.chunk);
		return;
	}
	member_got(s, x.op, x.k, x.chunk);
}

/* Every missing or failed pair gets the store-and-forward rate of its best relay. */
static void
effective_matrix(struct sim *s)
{
	int n = s->n;

	for (int u = 0; u < n; u++)
		for (int v = 0; v < n; v++) {
			double best = s->g[u * n + v];

			for (int r = 0; r < n && best <= 0 && u != v; r++) {
				double a = s->g[u * n + r], b = s->g[r * n + v];

				if (r != u && r != v && a > 0 && b > 0)
					best = fmax(best, 1 / (1 / a + 1 / b));
			}
			s->eff[u * n + v] = best;
		}
}

static void
form_group(struct sim *s)
{
	size_t n = (size_t)s->n;
	int p = s->npool, opi, rc;
	struct crew_problem pb;
	struct crew_times tm;
	struct op *op;
	char err[128];
	size_t pn = (size_t)p * n;
	char *mem;

	/* One allocation for the operation and its arrays: the struct, the 64-bit sizes,
	 * then the ints, then the flags. */
	mem = calloc(1, sizeof(*op) + sizeof(uint64_t) * n +
			     sizeof(int) * (2 * (size_t)p + 3 * n + 3 * pn) + pn);
	if (mem == NULL) {
		s->err = -ENOMEM;
		return;
	}
	op = (struct op *)(void *)mem;
	op->size = (uint64_t *)(void *)(mem + sizeof(*op));
	op->mem = (int *)(void *)(op->size + n);
	op->midx = op->mem + p;
	op->host = op->midx + n;
	op->need = op->host + n;
	op->sc = op->need + n;
	op->bc = op->sc + pn;
	op->via = op->bc + pn;
	op->cnt = op->via + pn;
	op->got = (unsigned char *)(op->cnt + p);
	op->p = p;
	op->start = s->now;
	memcpy(op->mem, s->pool, sizeof(int) * (size_t)p);
	s->npool = 0;
	for (size_t i = 0; i < n; i++)
		op->midx[i] = -1;
	for (int k = 0; k < p; k++) {
		op->midx[op->mem[k]] = k;
		s->wait_sum += s->now - s->ready_at[op->mem[k]];
		s->waits++;
	}
	for (size_t i = 0; i < 3 * pn; i++)
		op->sc[i] = -1; /* sc, bc and via are contiguous */
	if (s->nops == s->capops) {
		int cap = s->capops ? s->capops * 2 : 256;
		struct op **o = realloc(s->ops, sizeof(*o) * (size_t)cap);

		if (o == NULL) {
			free(mem);
			s->err = -ENOMEM;
			return;
		}
		s->ops = o;
		s->capops = cap;
	}
	opi = s->nops++;
	s->ops[opi] = op;

	pb = op_problem(s, op);
	for (int k = 0; k < p; k++)
		for (size_t i = 0; i < n; i++) {
			size_t wi = (size_t)op->mem[k] * n + i;
			int id = s->pre[wi];

			s->credit[(size_t)k * n + i] =
				s->pre_done[wi] + (id >= 0 ? s->x[id].total - left_now(s, id) : 0);
		}
	if (s->scheme == CREW_SCHEME_CREW && s->o->nonblocking)
		rc = crew_rebalance(&pb, s->credit, op->size, &tm);
	else
		rc = crew_solve(&pb, s->scheme, op->size, &tm, err, sizeof(err));
	if (rc == -ENOENT) { /* some link the scheme needs is down: plan over two hops */
		effective_matrix(s);
		pb.gbps = s->eff;
		rc = crew_solve(&pb, s->scheme, op->size, &tm, err, sizeof(err));
	}
	if (rc != 0) {
		if (rc != -ENOENT)
			s->err = rc;
		return; /* unreachable group: its members stay idle */
	}
	for (size_t c = 0; c < n; c++) {
		op->host[c] = (int)c;
		if (op->size[c] == 0)
			continue;
		op->chunks++;
		op->need[c] = p - (op->midx[c] >= 0);
	}
	for (int k = 0; k < p; k++) {
		int w = op->mem[k];

		for (size_t c = 0; c < n; c++) {
			size_t wc = (size_t)w * n + c, kc = (size_t)k * n + c;
			int id = s->pre[wc];
			double rem = (double)op->size[c] - s->credit[kc];

			s->pre[wc] = -1;
			if (op->size[c] == 0 || (size_t)w == c) {
				if (id >= 0)
					link_remove(s, id); /* not needed any more */
				continue;
			}
			if (rem <= 0) {
				if (id >= 0)
					link_remove(s, id);
				op->need[c]--;
			} else if (id >= 0) { /* the pre-scatter goes on as this group's */
				s->x[id].kind = X_SCATTER;
				s->x[id].op = opi;
				s->x[id].chunk = (int)c;
				s->x[id].k = k;
				x_resize(s, id, rem);
				op->sc[kc] = id;
			} else {
				op->sc[kc] = send(s, X_SCATTER, w, (int)c, rem, opi, (int)c, k);
			}
		}
	}
	for (size_t c = 0; c < n; c++)
		if (op->size[c] > 0 && op->need[c] == 0)
			start_agg(s, opi, (int)c);
}

static void
on_compute(struct sim *s, int w)
{
	size_t n = (size_t)s->n;
	int p = s->scheme == CREW_SCHEME_ALL_TO_ALL ? s->n : s->o->p;

	s->ready_at[w] = s->now;
	s->pool[s->npool++] = w;
	for (size_t i = 0; i < n; i++)
		s->pre_done[(size_t)w * n + i] = 0;
	if (s->npool == p) {
		form_group(s);
		return;
	}
	if (s->scheme != CREW_SCHEME_CREW || !s->o->nonblocking || s->a2a == NULL)
		return;
	/* Non-blocking scatter: send the all-to-all chunks before the group is known. */
	for (size_t i = 0; i < n; i++)
		if (i != (size_t)w && s->a2a[i] > 0 && s->g[(size_t)w * n + i] > 0) {
			int id = send(s, X_PRE, w, (int)i, (double)s->a2a[i], -1, (int)i, -1);

			s->pre[(size_t)w * n + i] = id;
		}
}

static void
on_fail(struct sim *s, int l)
{
	size_t n = (size_t)s->n;
	int *ids = NULL, m = 0;
	double *left = NULL;

	if (s->g[l] <= 0)
		return;
	s->r->links_failed++;
	for (int id = s->head[l]; id >= 0; id = s->x[id].next)
		m++;
	ids = malloc(sizeof(int) * (size_t)(m + 1));
	left = malloc(sizeof(double) * (size_t)(m + 1));
	if (ids == NULL || left == NULL) {
		free(ids);
		free(left);
		s->err = -ENOMEM;
		return;
	}
	m = 0;
	for (int id = s->head[l]; id >= 0; id = s->x[id].next) {
		left[m] = left_now(s, id);
		ids[m++] = id;
	}
	for (int i = 0; i < m; i++)
		s->x[ids[i]].state = X_GONE;
	s->head[l] = s->tail[l] = -1;
	s->queued[l] = 0;
	s->ver[l]++;
	s->g[l] = 0;
	for (int i = 0; i < m; i++) {
		struct xfer x = s->x[ids[i]];
		size_t kc = (size_t)x.k * n + (size_t)x.chunk;
		struct op *op;

		if (x.kind == X_PRE) {
			s->pre[(size_t)x.src * n + (size_t)x.fin] = -1;
			s->pre_done[(size_t)x.src * n + (size_t)x.fin] += x.total - left[i];
			continue;
		}
		op = s->ops[x.op];
		if (op == NULL)
			continue;
		if (x.kind == X_SCATTER) {
			if (op->sc[kc] != ids[i])
				continue;
			if (x.src == op->mem[x.k] && op->host[x.chunk] == x.fin) {
				/* A member cannot reach the aggregator: move the chunk. */
				struct crew_problem pb = op_problem(s, op);
				int j = crew_pick_backup(&pb, x.fin, op->size[x.chunk], s->queued, NULL,
							 s->scheme == CREW_SCHEME_PARTIAL);

				if (j >= 0) {
					s->r->backups++;
					reassign(s, x.op, x.chunk, j);
					continue;
				}
			}
			op->sc[kc] = send(s, X_SCATTER, x.src, x.fin, left[i], x.op, x.chunk, x.k);
		} else {
			if (op->bc[kc] != ids[i])
				continue;
			if (x.src == op->host[x.chunk] && x.fin == op->mem[x.k])
				send_bcast(s, x.op, x.chunk, x.k);
			else
				op->bc[kc] = send(s, X_BCAST, x.src, x.fin, left[i], x.op, x.chunk,
						  x.k);
		}
	}
	free(ids);
	free(left);
}

static void
sim_free(struct sim *s)
{
	for (int i = 0; i < s->nops; i++)
		free(s->ops[i]);
	free(s->ops);
	free(s->g);
	free(s->queued);
	free(s->head);
	free(s->tail);
	free(s->start);
	free(s->ver);
	free(s->x);
	free(s->heap);
	free(s->iter);
	free(s->ready_at);
	free(s->pool);
	free(s->pre);
	free(s->pre_done);
	free(s->a2a);
	free(s->cpu_free);
	free(s->eff);
	free(s->credit);
	free(s->bucket);
}

int
crew_simulate(int n, const double *gbps, enum crew_scheme scheme, const struct crew_sim_opts *o,
	      struct crew_sim_result *r)
{
	size_t nn = (size_t)n * (size_t)n;
	struct sim s = { .n = n, .scheme = scheme, .o = o, .r = r };
	int *progress = r->progress, p = scheme == CREW_SCHEME_ALL_TO_ALL ? n : o->p;
	uint64_t rng = o->seed ^ 0x5eed5eed5eedull;

	memset(r, 0, sizeof(*r));
	r->progress = progress;
	if (n < 1 || n > TOPO_NODES_MAX || p < 1 || p > n || o->model_bytes == 0 ||
	    o->model_bytes > CREW_MAX_BYTES || !(o->seconds > 0 && o->seconds <= 1e6) ||
	    !(o->aggregate_s >= 0) || !(o->compute_s >= 0) ||
	    !(o->straggler_prob >= 0 && o->straggler_prob <= 1) || o->failed_links < 0)
		return -EINVAL;
	s.nb = (int)ceil(o->seconds);
	s.g = malloc(sizeof(double) * nn);
	s.queued = calloc(nn, sizeof(double));
	s.head = malloc(sizeof(int) * nn);
	s.tail = malloc(sizeof(int) * nn);
	s.start = calloc(nn, sizeof(double));
	s.ver = calloc(nn, sizeof(unsigned));
	s.iter = calloc((size_t)n, sizeof(int));
	s.ready_at = calloc((size_t)n, sizeof(double));
	s.pool = malloc(sizeof(int) * (size_t)n);
	s.pre = malloc(sizeof(int) * nn);
	s.pre_done = calloc(nn, sizeof(double));
	s.cpu_free = calloc((size_t)n, sizeof(double));
	s.eff = malloc(sizeof(double) * nn);
	s.credit = calloc(nn, sizeof(double));
	s.bucket = calloc((size_t)s.nb, sizeof(int));
	s.a2a = malloc(sizeof(uint64_t) * (size_t)n);
	if (!s.g || !s.queued || !s.head || !s.tail || !s.start || !s.ver || !s.iter ||
	    !s.ready_at || !s.pool || !s.pre || !s.pre_done || !s.cpu_free || !s.eff ||
	    !s.credit || !s.bucket || !s.a2a) {
		sim_free(&s);
		return -ENOMEM;
	}
	for (size_t i = 0; i < nn; i++) {
		s.g[i] = i / (size_t)n == i % (size_t)n ? 0 : fmax(0, gbps[i]);
		s.head[i] = s.tail[i] = s.pre[i] = -1;
	}
	if (scheme == CREW_SCHEME_CREW && o->nonblocking) {
		struct crew_problem pb = { .n = n, .gbps = s.g, .group = s.pool, .p = 1,
					   .model_bytes = o->model_bytes };
		struct crew_times tm;
		char err[128];

		s.pool[0] = 0;
		if (crew_solve(&pb, CREW_SCHEME_ALL_TO_ALL, s.a2a, &tm, err, sizeof(err)) != 0) {
			free(s.a2a);
			s.a2a = NULL;
		}
	}
	for (int w = 0; w < n; w++) {
		ev_push(&s, crew_compute_time(o, w, 0), EV_COMPUTE, w, 0, 0);
		s.iter[w] = 1;
	}
	/* Failures: distinct directed links, at uniform times within the run. */
	for (int f = 0; f < o->failed_links && (size_t)f < nn - (size_t)n; f++) {
		int l;

		do {
			l = (int)(mix64(&rng) % nn);
		} while (l / n == l % n || s.pre[l] == -2);
		s.pre[l] = -2; /* drawn; reset below */
		ev_push(&s, unif(&rng) * o->seconds, EV_FAIL, l, 0, 0);
	}
	for (size_t i = 0; i < nn; i++)
		s.pre[i] = -1;
	while (s.nh > 0 && s.err == 0) {
		struct ev e = ev_pop(&s);

		if (e.t > o->seconds)
			break;
		s.now = e.t;
		r->events++;
		switch (e.type) {
		case EV_COMPUTE:
			on_compute(&s, e.a);
			break;
		case EV_LINK: {
			int l = e.a, id = s.head[l];

			if (e.ver != s.ver[l] || id < 0)
				break;
			s.head[l] = s.x[id].next;
			if (s.head[l] < 0)
				s.tail[l] = -1;
			s.queued[l] = fmax(0, s.queued[l] - s.x[id].left);
			link_start(&s, l);
			deliver(&s, id);
			break;
		}
		case EV_AGG:
			if (s.ops[e.a] != NULL)
				on_agg(&s, e.a, e.b);
			break;
		case EV_FAIL:
			on_fail(&s, e.a);
			break;
		}
	}
	r->op_mean_s = r->rounds > 0 ? s.op_sum / r->rounds : 0;
	r->wait_mean_s = s.waits > 0 ? s.wait_sum / s.waits : 0;
	if (progress != NULL)
		for (int b = 0, sum = 0; b < s.nb; b++)
			progress[b] = sum += s.bucket[b];
	{
		int rc = s.err;

		sim_free(&s);
		return rc;
	}
}
