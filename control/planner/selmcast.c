/* SPDX-License-Identifier: BSD-3-Clause
 *
 * SELMCAST receiver selection: the heuristic (forced pairs, basic selection, Pareto
 * pass), the random baseline, the exact lexicographic MILP (GLPK), the multi-round
 * driver and the sites of a topology. docs/SELMCAST.md. The "multicast" plan section is
 * in selmcast_json.c.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <glpk.h>
#include <jansson.h>

#include "clock.h"
#include "jsonutil.h"
#include "selmcast.h"

#define EXACT_DEFAULT_SECONDS 10.0
#define EXACT_DEFAULT_TOLERANCE 1e-6

/* Seconds to move `bytes` through a port of `gbps`. Every load comparison goes through
 * this one expression, so a selection's completion time is reproduced exactly. */
static inline double
port_seconds(double bytes, double gbps)
{
	return bytes * 8.0 / (gbps * 1e9);
}

/* Uniform in [0, 1) from POSIX's 48-bit generator, its state kept in the low 48 bits of
 * *s: the same sequence on every platform. */
static double
uniform01(uint64_t *s)
{
	unsigned short x[3] = {(unsigned short)*s, (unsigned short)(*s >> 16),
			       (unsigned short)(*s >> 32)};
	double u = erand48(x);

	*s = (uint64_t)x[0] | (uint64_t)x[1] << 16 | (uint64_t)x[2] << 32;
	return u;
}

int
selmcast_check(const struct selmcast_inst *in, char *err, size_t errlen)
{
	if (in->n < 2 || in->n > TOPO_NODES_MAX)
		return json_util_fail(err, errlen, "need 2 to %d sites, got %d", TOPO_NODES_MAX,
				      in->n);
	if (in->model != SELMCAST_NETWORK && in->model != SELMCAST_APPLICATION)
		return json_util_fail(err, errlen, "unknown multicast model %d", (int)in->model);
	if (in->stale_rounds < 0)
		return json_util_fail(err, errlen, "stale_rounds must be >= 0");
	for (int i = 0; i < in->n; i++) {
		if (!(isfinite(in->ingress_gbps[i]) && in->ingress_gbps[i] > 0))
			return json_util_fail(err, errlen,
					      "site %d: ingress bandwidth must be "
					      "finite and > 0",
					      i);
		if (!(isfinite(in->egress_gbps[i]) && in->egress_gbps[i] > 0))
			return json_util_fail(err, errlen,
					      "site %d: egress bandwidth must be "
					      "finite and > 0",
					      i);
		if (in->bytes[i] == 0 || in->bytes[i] > SELMCAST_BYTES_MAX)
			return json_util_fail(err, errlen,
					      "site %d: update size must be in "
					      "[1, 2^40] bytes",
					      i);
		if (in->p[i] < 1 || in->p[i] > in->n - 1)
			return json_util_fail(err, errlen,
					      "site %d: p = %d is not in [1, n - 1 = %d]", i,
					      in->p[i], in->n - 1);
	}
	return 0;
}

/* Bytes leaving sender i with cnt receivers. */
static double
egress_bytes(const struct selmcast_inst *in, int i, int cnt)
{
	if (in->model == SELMCAST_NETWORK)
		return cnt > 0 ? (double)in->bytes[i] : 0;
	return (double)cnt * (double)in->bytes[i];
}

/* Per-sender receiver counts and per-receiver ingress bytes of a selection. */
static void
loads(const struct selmcast_inst *in, const unsigned char *x, int *cnt, double *in_bytes)
{
	int n = in->n;

	for (int j = 0; j < n; j++)
		in_bytes[j] = 0;
	for (int i = 0; i < n; i++) {
		cnt[i] = 0;
		for (int j = 0; j < n; j++)
			if (x[i * n + j]) {
				cnt[i]++;
				in_bytes[j] += (double)in->bytes[i];
			}
	}
}

static double
seconds_of(const struct selmcast_inst *in, const int *cnt, const double *in_bytes)
{
	double t = 0;

	for (int i = 0; i < in->n; i++) {
		t = fmax(t, port_seconds(egress_bytes(in, i, cnt[i]), in->egress_gbps[i]));
		t = fmax(t, port_seconds(in_bytes[i], in->ingress_gbps[i]));
	}
	return t;
}

double
selmcast_seconds(const struct selmcast_inst *in, const unsigned char *x)
{
	int *cnt = malloc(sizeof(int) * (size_t)in->n);
	double *in_bytes = malloc(sizeof(double) * (size_t)in->n), t = NAN;

	if (cnt != NULL && in_bytes != NULL) {
		loads(in, x, cnt, in_bytes);
		t = seconds_of(in, cnt, in_bytes);
	}
	free(cnt);
	free(in_bytes);
	return t;
}

int
selmcast_receivers(int n, const unsigned char *x)
{
	int c = 0;

	for (int k = 0; k < n * n; k++)
		c += x[k] != 0;
	return c;
}

int
selmcast_forced(const struct selmcast_inst *in, const int *stale, unsigned char *x)
{
	int n = in->n, c = 0;

	memset(x, 0, (size_t)n * (size_t)n);
	if (stale == NULL || in->stale_rounds <= 0)
		return 0;
	for (int i = 0; i < n; i++)
		for (int j = 0; j < n; j++)
			if (i != j && stale[i * n + j] >= in->stale_rounds) {
				x[i * n + j] = 1;
				c++;
			}
	return c;
}

/* Sort keys: (primary, secondary, index), ascending. */
struct key {
	double a, b;
	int i, j;
};

static int
cmp_key(const void *pa, const void *pb)
{
	const struct key *x = pa, *y = pb;

	if (x->a != y->a)
		return x->a < y->a ? -1 : 1;
	if (x->b != y->b)
		return x->b < y->b ? -1 : 1;
	if (x->i != y->i)
		return x->i < y->i ? -1 : 1;
	return (x->j > y->j) - (x->j < y->j);
}

int
selmcast_basic(const struct selmcast_inst *in, const int *stale, unsigned char *x)
{
	int n = in->n, *cnt = malloc(sizeof(int) * (size_t)n);
	double *in_bytes = malloc(sizeof(double) * (size_t)n), t_cur = 0;
	struct key *order = malloc(sizeof(*order) * (size_t)n);
	struct key *cand = malloc(sizeof(*cand) * (size_t)n);

	if (cnt == NULL || in_bytes == NULL || order == NULL || cand == NULL) {
		free(cnt);
		free(in_bytes);
		free(order);
		free(cand);
		return -ENOMEM;
	}
	loads(in, x, cnt, in_bytes);
	/* What the round takes at least: every sender's egress at its quota, and the forced
	 * pairs' ingress. */
	for (int i = 0; i < n; i++) {
		t_cur = fmax(
			t_cur,
			port_seconds(egress_bytes(in, i, cnt[i] > in->p[i] ? cnt[i] : in->p[i]),
				     in->egress_gbps[i]));
		t_cur = fmax(t_cur, port_seconds(in_bytes[i], in->ingress_gbps[i]));
	}
	/* Senders with more preselected receivers have less choice left: they go first (the
	 * papers' order); among equals, larger updates first, then by index. */
	for (int i = 0; i < n; i++)
		order[i] = (struct key){-(double)cnt[i], -(double)in->bytes[i], i, 0};
	qsort(order, (size_t)n, sizeof(*order), cmp_key);
	for (int k = 0; k < n; k++) {
		int i = order[k].i, q = in->p[i] - cnt[i], m = 0;
		double b = (double)in->bytes[i];

		if (q <= 0)
			continue;
		/* The receivers whose ingress finishes earliest with this update added (the
		 * papers' rule). Receivers that would still finish within what the round takes
		 * anyway (t_cur) come first, most stale first: choosing among them costs no
		 * time, and spreading a sender over its stale pairs keeps them from being
		 * forced, all at once, in a later round. With equal staleness the order is the
		 * papers'. */
		for (int j = 0; j < n; j++) {
			double after = port_seconds(in_bytes[j] + b, in->ingress_gbps[j]);
			int st = stale != NULL ? stale[i * n + j] : 0;

			if (j == i || x[i * n + j])
				continue;
			if (after <= t_cur)
				cand[m++] = (struct key){-1.0 - st, after, j, 0};
			else
				cand[m++] = (struct key){
					after, port_seconds(in_bytes[j], in->ingress_gbps[j]), j,
					0};
		}
		qsort(cand, (size_t)m, sizeof(*cand), cmp_key);
		for (int c = 0; c < q && c < m; c++) {
			int j = cand[c].i;

			x[i * n + j] = 1;
			in_bytes[j] += b;
			cnt[i]++;
			t_cur = fmax(t_cur, port_seconds(in_bytes[j], in->ingress_gbps[j]));
		}
	}
	free(cnt);
	free(in_bytes);
	free(order);
	free(cand);
	return 0;
}

int
selmcast_pareto(const struct selmcast_inst *in, const int *stale, unsigned char *x)
{
	int n = in->n, m = 0, added = 0, *cnt = malloc(sizeof(int) * (size_t)n);
	double *in_bytes = malloc(sizeof(double) * (size_t)n), t;
	struct key *cand = malloc(sizeof(*cand) * (size_t)n * (size_t)n);

	if (cnt == NULL || in_bytes == NULL || cand == NULL) {
		free(cnt);
		free(in_bytes);
		free(cand);
		return -ENOMEM;
	}
	loads(in, x, cnt, in_bytes);
	t = seconds_of(in, cnt, in_bytes);
	/* Most stale first (the papers' order); among equally stale pairs, the one that uses
	 * the smaller fraction of the round at its ports first, so that more pairs fit. */
	for (int i = 0; i < n; i++)
		for (int j = 0; j < n; j++) {
			double cost;

			if (i == j || x[i * n + j])
				continue;
			cost = port_seconds((double)in->bytes[i], in->ingress_gbps[j]);
			if (in->model == SELMCAST_APPLICATION)
				cost += port_seconds((double)in->bytes[i], in->egress_gbps[i]);
			cand[m++] = (struct key){stale != NULL ? -(double)stale[i * n + j] : 0,
						 cost, i, j};
		}
	qsort(cand, (size_t)m, sizeof(*cand), cmp_key);
	for (int c = 0; c < m; c++) {
		int i = cand[c].i, j = cand[c].j;
		double b = (double)in->bytes[i];

		if (port_seconds(in_bytes[j] + b, in->ingress_gbps[j]) > t ||
		    port_seconds(egress_bytes(in, i, cnt[i] + 1), in->egress_gbps[i]) > t)
			continue;
		x[i * n + j] = 1;
		in_bytes[j] += b;
		cnt[i]++;
		added++;
	}
	free(cnt);
	free(in_bytes);
	free(cand);
	return added;
}

static void
fill_result(const struct selmcast_inst *in, const unsigned char *x, int forced,
	    struct selmcast_result *res)
{
	if (res == NULL)
		return;
	memset(res, 0, sizeof(*res));
	res->seconds = selmcast_seconds(in, x);
	res->basic_seconds = res->seconds;
	res->receivers = selmcast_receivers(in->n, x);
	res->forced = forced;
}

int
selmcast_select(const struct selmcast_inst *in, const int *stale, unsigned char *x,
		struct selmcast_result *res)
{
	int forced = selmcast_forced(in, stale, x), rc, added;
	double basic;

	rc = selmcast_basic(in, stale, x);
	if (rc != 0)
		return rc;
	basic = selmcast_seconds(in, x);
	added = selmcast_pareto(in, stale, x);
	if (added < 0)
		return added;
	fill_result(in, x, forced, res);
	if (res != NULL) {
		res->basic_seconds = basic;
		res->added = added;
	}
	return 0;
}

int
selmcast_random(const struct selmcast_inst *in, const int *stale, uint64_t *rng, unsigned char *x,
		struct selmcast_result *res)
{
	int n = in->n, forced = selmcast_forced(in, stale, x);
	int *cand = malloc(sizeof(int) * (size_t)n);

	if (cand == NULL)
		return -ENOMEM;
	for (int i = 0; i < n; i++) {
		int have = 0, m = 0;

		for (int j = 0; j < n; j++) {
			if (x[i * n + j])
				have++;
			else if (j != i)
				cand[m++] = j;
		}
		/* Partial Fisher-Yates: the first q of a uniform shuffle. */
		for (int c = 0; c < in->p[i] - have && c < m; c++) {
			int r = c + (int)(uniform01(rng) * (m - c)), tmp = cand[c];

			cand[c] = cand[r];
			cand[r] = tmp;
			x[i * n + cand[c]] = 1;
		}
	}
	free(cand);
	fill_result(in, x, forced, res);
	return 0;
}

/* ---- exact MILP ---- */

struct exact_cb {
	const double *start; /* a feasible solution, columns 1..ncols */
	bool given;
	bool minimise;
	double bound; /* best proven bound on the objective seen so far */
};

static void
exact_callback(glp_tree *tree, void *info)
{
	struct exact_cb *cb = info;
	int best;

	if (glp_ios_reason(tree) == GLP_IHEUR && !cb->given && cb->start != NULL) {
		glp_ios_heur_sol(tree, cb->start);
		cb->given = true;
	}
	/* The best active node's bound holds for every solution not yet found. */
	best = glp_ios_best_node(tree);
	if (best != 0) {
		double v = glp_ios_node_bound(tree, best);

		if (cb->minimise ? v > cb->bound : v < cb->bound)
			cb->bound = v;
	}
}

/* Columns (1-based): pair (i, j), i != j; then T; then the integer receiver count of
 * every sender i and the integer sender count of every receiver j, which give the branch
 * and bound far better branching than single pairs. */
static inline int
pair_col(int n, int i, int j)
{
	return 1 + i * (n - 1) + (j < i ? j : j - 1);
}

static inline int
time_col(int n)
{
	return n * (n - 1) + 1;
}

static inline int
out_col(int n, int i)
{
	return n * (n - 1) + 2 + i;
}

static inline int
in_col(int n, int j)
{
	return n * (n - 1) + 2 + n + j;
}

/* Solve the MILP as set up; on a feasible result copy it into sol (columns 1..ncols).
 * Returns 1 if a solution was read, 0 if none, -EIO on a solver error. */
static int
exact_solve(glp_prob *mip, double seconds, struct exact_cb *cb, double *sol, bool *optimal)
{
	glp_smcp smcp;
	glp_iocp iocp;
	int ncols = glp_get_num_cols(mip), ret, st;
	double t0 = clock_now_s();

	*optimal = false;
	glp_init_smcp(&smcp);
	smcp.msg_lev = GLP_MSG_OFF;
	smcp.tm_lim = (int)(seconds * 1000);
	if (glp_simplex(mip, &smcp) != 0 || glp_get_status(mip) != GLP_OPT)
		return -EIO;
	/* The LP relaxation bounds the objective before any branching. */
	cb->bound = glp_get_obj_val(mip);
	seconds -= clock_now_s() - t0;
	glp_init_iocp(&iocp);
	iocp.msg_lev = GLP_MSG_OFF;
	iocp.presolve = GLP_OFF; /* the callback's solution is in the original columns */
	iocp.mir_cuts = GLP_ON;
	iocp.cov_cuts = GLP_ON;
	iocp.mip_gap = 1e-7;
	iocp.tm_lim = (int)(fmax(seconds, 0.01) * 1000);
	iocp.cb_func = exact_callback;
	iocp.cb_info = cb;
	cb->given = false;
	ret = glp_intopt(mip, &iocp);
	st = glp_mip_status(mip);
	if (ret != 0 && ret != GLP_ETMLIM && ret != GLP_EMIPGAP && ret != GLP_ENOPFS &&
	    ret != GLP_ESTOP)
		return -EIO;
	if (st != GLP_OPT && st != GLP_FEAS)
		return 0;
	*optimal = ret == 0 && st == GLP_OPT;
	for (int c = 1; c <= ncols; c++)
		sol[c] = glp_mip_col_val(mip, c);
	return 1;
}

static void
cols_from_x(int n, const unsigned char *x, double t_scaled, double *sol)
{
	for (int i = 0; i < n; i++) {
		sol[out_col(n, i)] = 0;
		sol[in_col(n, i)] = 0;
	}
	for (int i = 0; i < n; i++)
		for (int j = 0; j < n; j++)
			if (i != j) {
				sol[pair_col(n, i, j)] = x[i * n + j] ? 1 : 0;
				sol[out_col(n, i)] += x[i * n + j] ? 1 : 0;
				sol[in_col(n, j)] += x[i * n + j] ? 1 : 0;
			}
	sol[time_col(n)] = t_scaled;
}

static void
x_from_cols(int n, const double *sol, unsigned char *x)
{
	memset(x, 0, (size_t)n * (size_t)n);
	for (int i = 0; i < n; i++)
		for (int j = 0; j < n; j++)
			if (i != j)
				x[i * n + j] = sol[pair_col(n, i, j)] > 0.5;
}

int
selmcast_exact(const struct selmcast_inst *in, const int *stale,
	       const struct selmcast_exact_opts *opts, unsigned char *x,
	       struct selmcast_result *res)
{
	int n = in->n, npair = n * (n - 1), ncols = npair + 1 + 2 * n, rc = -ENOMEM, got;
	int rows = in->model == SELMCAST_APPLICATION ? 4 * n : 3 * n, tcol = time_col(n);
	double limit =
		opts != NULL && opts->time_limit_s > 0 ? opts->time_limit_s : EXACT_DEFAULT_SECONDS;
	double tol =
		opts != NULL && opts->tolerance > 0 ? opts->tolerance : EXACT_DEFAULT_TOLERANCE;
	double t_start = clock_now_s(), t0, t_lo = 0, t1, lower;
	struct selmcast_result heur;
	struct exact_cb cb = {0};
	unsigned char *xh = NULL, *xm = NULL;
	double *sol = NULL, *start = NULL, *val = NULL;
	int *ind = NULL, forced;
	glp_prob *mip = NULL;
	bool opt1 = false, opt2 = false;

	if (n > SELMCAST_EXACT_MAX_N)
		return -E2BIG;
	xh = malloc((size_t)n * (size_t)n);
	xm = malloc((size_t)n * (size_t)n);
	sol = calloc((size_t)ncols + 1, sizeof(double));
	start = calloc((size_t)ncols + 1, sizeof(double));
	ind = malloc(sizeof(int) * ((size_t)n + 2));
	val = malloc(sizeof(double) * ((size_t)n + 2));
	if (xh == NULL || xm == NULL || sol == NULL || start == NULL || ind == NULL || val == NULL)
		goto out;
	/* The heuristic's selection is the first incumbent, and its time the unit of T. */
	rc = selmcast_select(in, stale, xh, &heur);
	if (rc != 0)
		goto out;
	forced = heur.forced;
	t0 = heur.seconds;

	glp_term_out(GLP_OFF);
	mip = glp_create_prob();
	glp_add_rows(mip, rows);
	glp_add_cols(mip, ncols);
	for (int i = 0; i < n; i++) {
		for (int j = 0; j < n; j++) {
			int c = pair_col(n, i, j);

			if (i == j)
				continue;
			glp_set_col_kind(mip, c, GLP_BV);
			if (stale != NULL && in->stale_rounds > 0 &&
			    stale[i * n + j] >= in->stale_rounds)
				glp_set_col_bnds(mip, c, GLP_FX, 1, 1);
		}
		/* Row i + 1: sender i's receivers, at least p_i. */
		for (int j = 0, k = 0; j < n; j++)
			if (j != i) {
				ind[++k] = pair_col(n, i, j);
				val[k] = 1;
			}
		ind[n] = out_col(n, i);
		val[n] = -1;
		glp_set_mat_row(mip, i + 1, n, ind, val);
		glp_set_row_bnds(mip, i + 1, GLP_FX, 0, 0);
		glp_set_col_kind(mip, out_col(n, i), GLP_IV);
		if (in->p[i] < n - 1)
			glp_set_col_bnds(mip, out_col(n, i), GLP_DB, in->p[i], n - 1);
		else
			glp_set_col_bnds(mip, out_col(n, i), GLP_FX, n - 1, n - 1);
		/* Row rows - n + i + 1: receiver i's senders. */
		for (int s = 0, k = 0; s < n; s++)
			if (s != i) {
				ind[++k] = pair_col(n, s, i);
				val[k] = 1;
			}
		ind[n] = in_col(n, i);
		val[n] = -1;
		glp_set_mat_row(mip, rows - n + i + 1, n, ind, val);
		glp_set_row_bnds(mip, rows - n + i + 1, GLP_FX, 0, 0);
		glp_set_col_kind(mip, in_col(n, i), GLP_IV);
		glp_set_col_bnds(mip, in_col(n, i), GLP_DB, 0, n - 1);
		/* Row n + j + 1 (j = i): receiver i's ingress finishes by T. */
		for (int s = 0, k = 0; s < n; s++)
			if (s != i) {
				ind[++k] = pair_col(n, s, i);
				val[k] = port_seconds((double)in->bytes[s], in->ingress_gbps[i]) /
					 t0;
			}
		ind[n] = tcol;
		val[n] = -1;
		glp_set_mat_row(mip, n + i + 1, n, ind, val);
		glp_set_row_bnds(mip, n + i + 1, GLP_UP, 0, 0);
		if (in->model == SELMCAST_APPLICATION) {
			/* Row 2n + i + 1: sender i's egress, one copy per receiver. */
			double u = port_seconds((double)in->bytes[i], in->egress_gbps[i]) / t0;

			for (int j = 0, k = 0; j < n; j++)
				if (j != i) {
					ind[++k] = pair_col(n, i, j);
					val[k] = u;
				}
			ind[n] = tcol;
			val[n] = -1;
			glp_set_mat_row(mip, 2 * n + i + 1, n, ind, val);
			glp_set_row_bnds(mip, 2 * n + i + 1, GLP_UP, 0, 0);
		} else {
			/* One copy leaves every sender (p_i >= 1): a constant bound on T. */
			t_lo = fmax(t_lo,
				    port_seconds((double)in->bytes[i], in->egress_gbps[i]) / t0);
		}
	}

	/* Stage 1: minimise T. */
	glp_set_obj_dir(mip, GLP_MIN);
	glp_set_obj_coef(mip, tcol, 1);
	glp_set_col_bnds(mip, tcol, GLP_LO, t_lo, 0);
	cols_from_x(n, xh, 1.0 + 1e-9, start);
	cb.start = start;
	cb.minimise = true;
	got = exact_solve(mip, limit, &cb, sol, &opt1);
	if (got < 0) {
		rc = got;
		goto out;
	}
	t1 = heur.seconds;
	lower = fmin(cb.bound * t0, t1);
	memcpy(xm, xh, (size_t)n * (size_t)n);
	if (got > 0) {
		x_from_cols(n, sol, xm);
		if (selmcast_seconds(in, xm) < t1) {
			t1 = selmcast_seconds(in, xm);
			/* The MILP's selection may leave room: fill it without raising T. */
			if (selmcast_pareto(in, stale, xm) < 0) {
				rc = -ENOMEM;
				goto out;
			}
		} else {
			memcpy(xm, xh, (size_t)n * (size_t)n);
		}
	}
	if (opt1)
		lower = t1 / (1 + 1e-7);

	/* Stage 2: maximise the receivers with T <= T1 (1 + tol). */
	glp_set_obj_dir(mip, GLP_MAX);
	glp_set_obj_coef(mip, tcol, 0);
	for (int c = 1; c <= npair; c++)
		glp_set_obj_coef(mip, c, 1);
	glp_set_col_bnds(mip, tcol, GLP_DB, t_lo, t1 / t0 * (1 + tol));
	cols_from_x(n, xm, fmin(selmcast_seconds(in, xm) / t0 * (1 + 1e-9), t1 / t0 * (1 + tol)),
		    start);
	cb.minimise = false;
	got = exact_solve(mip, limit, &cb, sol, &opt2);
	if (got < 0) {
		rc = got;
		goto out;
	}
	memcpy(x, xm, (size_t)n * (size_t)n);
	if (got > 0) {
		x_from_cols(n, sol, xh);
		if (selmcast_receivers(n, xh) > selmcast_receivers(n, x) &&
		    selmcast_seconds(in, xh) <= t1 * (1 + tol))
			memcpy(x, xh, (size_t)n * (size_t)n);
	}
	fill_result(in, x, forced, res);
	if (res != NULL) {
		res->lower_seconds = lower;
		res->time_optimal = opt1;
		res->count_optimal = opt2;
		res->solve_seconds = clock_now_s() - t_start;
	}
	rc = 0;
out:
	if (mip != NULL)
		glp_delete_prob(mip);
	free(xh);
	free(xm);
	free(sol);
	free(start);
	free(ind);
	free(val);
	return rc;
}

/* ---- multi-round driver ---- */

int
selmcast_state_init(struct selmcast_state *s, int n)
{
	s->n = n;
	s->rounds = 0;
	s->stale = calloc((size_t)n * (size_t)n, sizeof(int));
	return s->stale != NULL ? 0 : -ENOMEM;
}

void
selmcast_state_advance(struct selmcast_state *s, const unsigned char *x)
{
	for (int k = 0; k < s->n * s->n; k++)
		s->stale[k] = x[k] ? 0 : s->stale[k] + 1;
	s->rounds++;
}

void
selmcast_state_fini(struct selmcast_state *s)
{
	free(s->stale);
	s->stale = NULL;
}

int
selmcast_run(const struct selmcast_inst *in, enum selmcast_algo algo, int rounds, uint64_t seed,
	     const struct selmcast_exact_opts *opts, unsigned char *x, struct selmcast_result *res)
{
	size_t nn = (size_t)in->n * (size_t)in->n;
	struct selmcast_state st;
	uint64_t rng = seed << 16 | 0x330e;
	int rc = selmcast_state_init(&st, in->n);

	for (int r = 0; rc == 0 && r < rounds; r++) {
		unsigned char *xr = x + (size_t)r * nn;
		struct selmcast_result *rr = res != NULL ? &res[r] : NULL;

		switch (algo) {
		case SELMCAST_HEURISTIC:
			rc = selmcast_select(in, st.stale, xr, rr);
			break;
		case SELMCAST_RANDOM:
			rc = selmcast_random(in, st.stale, &rng, xr, rr);
			break;
		case SELMCAST_EXACT:
			rc = selmcast_exact(in, st.stale, opts, xr, rr);
			break;
		default:
			rc = -EINVAL;
			break;
		}
		if (rc == 0)
			selmcast_state_advance(&st, xr);
	}
	selmcast_state_fini(&st);
	return rc;
}

/* ---- sites of a topology ---- */

/* A positive finite number field of a node, if present. 1 if read, 0 if absent. */
static int
node_number(const json_t *node, const char *key, int v, const char *src, double *out, char *err,
	    size_t errlen)
{
	const json_t *f = json_object_get(node, key);

	if (f == NULL)
		return 0;
	if (!json_is_number(f) || !isfinite(json_number_value(f)) || json_number_value(f) <= 0)
		return json_util_fail(err, errlen,
				      "%s: field 'nodes[%d].%s': expected a finite "
				      "number > 0",
				      src, v, key);
	*out = json_number_value(f);
	return 1;
}

int
selmcast_sites(const struct topo *t, const json_t *doc, const char *src, uint64_t default_bytes,
	       int *site, double *ingress, double *egress, uint64_t *bytes, char *err,
	       size_t errlen)
{
	const json_t *nodes = doc != NULL ? json_object_get(doc, "nodes") : NULL;
	int n = 0;

	if (src == NULL)
		src = "<topology>";
	for (int v = 0; v < t->n_nodes; v++) {
		const json_t *node = json_array_get(nodes, (size_t)v);
		double in = 0, out = 0;

		if (t->nodes[v].workers == 0)
			continue;
		for (int a = t->adj_off[v]; a < t->adj_off[v + 1]; a++) {
			in += topo_link_gbps_from(t, t->adj[a].link, t->adj[a].node);
			out += topo_link_gbps_from(t, t->adj[a].link, v);
		}
		bytes[n] = default_bytes;
		if (node != NULL) {
			const json_t *ub = json_object_get(node, "update_bytes");

			if (node_number(node, "ingress_gbps", v, src, &in, err, errlen) < 0 ||
			    node_number(node, "egress_gbps", v, src, &out, err, errlen) < 0)
				return -EINVAL;
			if (ub != NULL) {
				if (!json_is_integer(ub) || json_integer_value(ub) <= 0 ||
				    (uint64_t)json_integer_value(ub) > SELMCAST_BYTES_MAX)
					return json_util_fail(
						err, errlen,
						"%s: field "
						"'nodes[%d].update_bytes': expected an "
						"integer in [1, 2^40]",
						src, v);
				bytes[n] = (uint64_t)json_integer_value(ub);
			}
		}
		if (!(in > 0) || !(out > 0))
			return json_util_fail(err, errlen,
					      "%s: field 'nodes[%d]': site '%s' has no "
					      "%s bandwidth (no links and no %s)",
					      src, v, t->nodes[v].id, in > 0 ? "egress" : "ingress",
					      in > 0 ? "egress_gbps" : "ingress_gbps");
		if (bytes[n] == 0 || bytes[n] > SELMCAST_BYTES_MAX)
			return json_util_fail(err, errlen,
					      "update size must be in [1, 2^40] bytes");
		site[n] = v;
		ingress[n] = in;
		egress[n] = out;
		n++;
	}
	return n;
}

struct topo *
selmcast_gen_topology(int n, uint64_t seed, double mean_gbps, double lambda, double mu, char *err,
		      size_t errlen)
{
	struct topo_node *nodes;
	struct topo_link *links;
	struct topo *t;
	char name[TOPO_NAME_MAX + 1];
	uint64_t s = seed << 16 | 0x330e; /* as srand48() seeds */

	if (n < 2 || n >= TOPO_NODES_MAX) {
		json_util_fail(err, errlen, "need 2 to %d sites, got %d", TOPO_NODES_MAX - 1, n);
		return NULL;
	}
	if (!(isfinite(mean_gbps) && mean_gbps > 0) || !(lambda >= 0 && lambda < 1) ||
	    !(isfinite(mu) && mu > 0)) {
		json_util_fail(err, errlen, "need mean bandwidth > 0, 0 <= lambda < 1, mu > 0");
		return NULL;
	}
	nodes = calloc((size_t)n + 1, sizeof(*nodes));
	links = calloc((size_t)n, sizeof(*links));
	if (nodes == NULL || links == NULL) {
		free(nodes);
		free(links);
		json_util_fail(err, errlen, "out of memory");
		return NULL;
	}
	for (int v = 0; v <= n; v++) {
		if (v < n)
			snprintf(nodes[v].id, sizeof(nodes[v].id), "w%d", v + 1);
		else
			snprintf(nodes[v].id, sizeof(nodes[v].id), "switch");
		nodes[v].workers = v < n ? 1 : 0;
		nodes[v].gateways = 1;
		nodes[v].lan_gbps = TOPO_DEFAULT_LAN_GBPS;
		nodes[v].lan_latency_ms = TOPO_DEFAULT_LAN_LATENCY_MS;
	}
	for (int v = 0; v < n; v++) {
		double xe = 2.0 * uniform01(&s) - 1.0, xi = 2.0 * uniform01(&s) - 1.0;

		links[v].a = v;
		links[v].b = n;
		links[v].gbps_ab = mean_gbps * (1 + lambda * xe);      /* site -> switch */
		links[v].gbps_ba = mean_gbps * mu * (1 + lambda * xi); /* switch -> site */
	}
	snprintf(name, sizeof(name), "selmcast-random-%d-seed%llu", n, (unsigned long long)seed);
	t = topo_create(name, n + 1, nodes, n, links, err, errlen);
	free(nodes);
	free(links);
	return t;
}
