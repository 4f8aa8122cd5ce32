/* SPDX-License-Identifier: BSD-3-Clause
 *
 * CREW partial reduce: the exact share solver and its baselines, the rebalancing of a
 * non-blocking scatter when the group forms, and random groups. docs/CREW.md explains the
 * model. The rest of crew.h is defined beside it: crew_failover.c (backup aggregators and
 * relays), crew_json.c (the plan section), crew_matrix.c (bandwidth matrices) and
 * crew_sim.c (the training-progress simulator). Functions of their arguments: any thread.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "crew.h"
#include "crew_util.h"
#include "jsonutil.h"

const char *
crew_scheme_name(enum crew_scheme s)
{
	switch (s) {
	case CREW_SCHEME_CREW:
		return "crew";
	case CREW_SCHEME_PARTIAL:
		return "partial-reduce";
	case CREW_SCHEME_ALL_TO_ALL:
		return "all-to-all";
	}
	return "?";
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
				return json_util_fail(err, errlen, "group[%d]: duplicate member",
						      k);
	}
	for (int i = 0; i < pb->n; i++)
		for (int j = 0; j < pb->n; j++) {
			double g = pb->gbps[(size_t)i * (size_t)pb->n + (size_t)j];

			if (i != j && !(isfinite(g) && g >= 0))
				return json_util_fail(err, errlen,
						      "bandwidth %d -> %d: must be finite "
						      "and >= 0",
						      i, j);
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

struct bp {
	double rho; /* breakpoint a / b */
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
	double *u;      /* n: bytes site i can hold by the end of the scatter */
	double *b;      /* n: broadcast rate, 0 = cannot aggregate */
	struct bp *ord; /* n: scratch for the Y sweep */
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
				u = fmin(u,
					 fmax(0, r->credit[(size_t)k * (size_t)pb->n + (size_t)i]) +
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
	struct rebal r = {.pb = pb, .credit = credit};
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
			double left =
				(double)bytes[i] - credit[(size_t)k * (size_t)pb->n + (size_t)i];

			if (m != i && left > 0)
				tm->scatter_s =
					fmax(tm->scatter_s, rate_of(pb, m, i) > 0 ?
								    left / rate_of(pb, m, i) :
								    INFINITY);
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
