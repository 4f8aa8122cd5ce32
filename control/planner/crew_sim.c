/* SPDX-License-Identifier: BSD-3-Clause
 *
 * CREW's training-progress simulator (crew_simulate() in crew.h, docs/CREW.md): workers
 * and their straggling compute times, groups formed by the first p ready workers and
 * planned by the scheme, the partial reduce of every group in flight (scatter,
 * aggregation, broadcast, backups and relays), and link failures. The links and their
 * queues are in crew_simlink.c, the event queue is the planner's (eventq.c). Runs on the
 * caller's thread; a simulation owns all of its state.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "crew.h"
#include "crew_simlink.h"
#include "crew_util.h"
#include "eventq.h"

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

/* One partial reduce in flight. */
struct op {
	int p, chunks, done;
	double start;
	int *mem;           /* p member sites */
	int *midx;          /* n: member index of a site, or -1 */
	uint64_t *size;     /* n: chunk sizes */
	int *host;          /* n: aggregator of each chunk now (backups move it) */
	int *need;          /* n: scatter arrivals the chunk still waits for */
	int *sc, *bc, *via; /* p * n: scatter, broadcast transfer; relay member index */
	unsigned char *got; /* p * n: member k holds reduced chunk c */
	int *cnt;           /* p: reduced chunks member k holds */
};

static void
start_agg(struct crew_sim *s, int opi, int c)
{
	int h = s->ops[opi]->host[c];
	double st = fmax(s->now, s->cpu_free[h]);

	s->cpu_free[h] = st + s->o->aggregate_s;
	ev_push(s, st + s->o->aggregate_s, EV_AGG, opi, c, 0);
}

static void
member_done(struct crew_sim *s, int opi, int k)
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
member_got(struct crew_sim *s, int opi, int k, int c)
{
	struct op *op = s->ops[opi];
	size_t n = (size_t)s->n;

	if (op->got[(size_t)k * n + (size_t)c])
		return;
	op->got[(size_t)k * n + (size_t)c] = 1;
	for (int k2 = 0; k2 < op->p; k2++)
		if (op->via[(size_t)k2 * n + (size_t)c] == k &&
		    !op->got[(size_t)k2 * n + (size_t)c])
			op->bc[(size_t)k2 * n + (size_t)c] =
				crew_link_send(s, X_BCAST, op->mem[k], op->mem[k2],
					       (double)op->size[c], opi, c, k2);
	if (++op->cnt[k] == op->chunks)
		member_done(s, opi, k);
}

static struct crew_problem
op_problem(const struct crew_sim *s, const struct op *op)
{
	return (struct crew_problem){.n = s->n,
				     .gbps = s->g,
				     .group = op->mem,
				     .p = op->p,
				     .model_bytes = s->o->model_bytes};
}

/* Broadcast reduced chunk c from its host to member k, through a relay member when the
 * direct link is down. */
static void
send_bcast(struct crew_sim *s, int opi, int c, int k)
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
				op->bc[kc] = crew_link_send(s, X_BCAST, r, m, (double)op->size[c],
							    opi, c, k);
			return;
		}
	}
	op->bc[kc] = crew_link_send(s, X_BCAST, h, m, (double)op->size[c], opi, c, k);
}

static void
on_agg(struct crew_sim *s, int opi, int c)
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
reassign(struct crew_sim *s, int opi, int c, int j)
{
	struct op *op = s->ops[opi];
	size_t n = (size_t)s->n;

	for (int k = 0; k < op->p; k++) {
		int id = op->sc[(size_t)k * n + (size_t)c];

		if (id >= 0 && s->x[id].state == X_QUEUED)
			crew_link_remove(s, id);
		op->sc[(size_t)k * n + (size_t)c] = -1;
	}
	op->host[c] = j;
	op->need[c] = 0;
	for (int k = 0; k < op->p; k++)
		if (op->mem[k] != j) {
			op->need[c]++;
			op->sc[(size_t)k * n + (size_t)c] = crew_link_send(
				s, X_SCATTER, op->mem[k], j, (double)op->size[c], opi, c, k);
		}
	if (op->need[c] == 0)
		start_agg(s, opi, c);
}

static void
deliver(struct crew_sim *s, int id)
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
		int nid = crew_link_send(s, x.kind, x.dst, x.fin, x.total, x.op, x.chunk, x.k);
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
effective_matrix(struct crew_sim *s)
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
form_group(struct crew_sim *s)
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
				s->pre_done[wi] +
				(id >= 0 ? s->x[id].total - crew_link_left(s, id) : 0);
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
					crew_link_remove(s, id); /* not needed any more */
				continue;
			}
			if (rem <= 0) {
				if (id >= 0)
					crew_link_remove(s, id);
				op->need[c]--;
			} else if (id >= 0) { /* the pre-scatter goes on as this group's */
				s->x[id].kind = X_SCATTER;
				s->x[id].op = opi;
				s->x[id].chunk = (int)c;
				s->x[id].k = k;
				crew_link_resize(s, id, rem);
				op->sc[kc] = id;
			} else {
				op->sc[kc] = crew_link_send(s, X_SCATTER, w, (int)c, rem, opi,
							    (int)c, k);
			}
		}
	}
	for (size_t c = 0; c < n; c++)
		if (op->size[c] > 0 && op->need[c] == 0)
			start_agg(s, opi, (int)c);
}

static void
on_compute(struct crew_sim *s, int w)
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
			int id = crew_link_send(s, X_PRE, w, (int)i, (double)s->a2a[i], -1, (int)i,
						-1);

			s->pre[(size_t)w * n + i] = id;
		}
}

static void
on_fail(struct crew_sim *s, int l)
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
		left[m] = crew_link_left(s, id);
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
				int j = crew_pick_backup(&pb, x.fin, op->size[x.chunk], s->queued,
							 NULL, s->scheme == CREW_SCHEME_PARTIAL);

				if (j >= 0) {
					s->r->backups++;
					reassign(s, x.op, x.chunk, j);
					continue;
				}
			}
			op->sc[kc] = crew_link_send(s, X_SCATTER, x.src, x.fin, left[i], x.op,
						    x.chunk, x.k);
		} else {
			if (op->bc[kc] != ids[i])
				continue;
			if (x.src == op->host[x.chunk] && x.fin == op->mem[x.k])
				send_bcast(s, x.op, x.chunk, x.k);
			else
				op->bc[kc] = crew_link_send(s, X_BCAST, x.src, x.fin, left[i], x.op,
							    x.chunk, x.k);
		}
	}
	free(ids);
	free(left);
}

static void
sim_free(struct crew_sim *s)
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
	eventq_fini(&s->events);
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
	struct crew_sim s = {.n = n, .scheme = scheme, .o = o, .r = r};
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
	    !s.ready_at || !s.pool || !s.pre || !s.pre_done || !s.cpu_free || !s.eff || !s.credit ||
	    !s.bucket || !s.a2a) {
		sim_free(&s);
		return -ENOMEM;
	}
	for (size_t i = 0; i < nn; i++) {
		s.g[i] = i / (size_t)n == i % (size_t)n ? 0 : fmax(0, gbps[i]);
		s.head[i] = s.tail[i] = s.pre[i] = -1;
	}
	if (scheme == CREW_SCHEME_CREW && o->nonblocking) {
		struct crew_problem pb = {.n = n,
					  .gbps = s.g,
					  .group = s.pool,
					  .p = 1,
					  .model_bytes = o->model_bytes};
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
	while (!eventq_empty(&s.events) && s.err == 0) {
		struct eventq_ev e = eventq_pop(&s.events);

		if (e.t > o->seconds)
			break;
		s.now = e.t;
		r->events++;
		switch (e.type) {
		case EV_COMPUTE:
			on_compute(&s, (int)e.a);
			break;
		case EV_LINK: {
			int l = (int)e.a, id = s.head[l];

			if (e.ver != s.ver[l] || id < 0)
				break;
			s.head[l] = s.x[id].next;
			if (s.head[l] < 0)
				s.tail[l] = -1;
			s.queued[l] = fmax(0, s.queued[l] - s.x[id].left);
			crew_link_start(&s, l);
			deliver(&s, id);
			break;
		}
		case EV_AGG:
			if (s.ops[e.a] != NULL)
				on_agg(&s, (int)e.a, (int)e.b);
			break;
		case EV_FAIL:
			on_fail(&s, (int)e.a);
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
