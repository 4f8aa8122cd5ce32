/* SPDX-License-Identifier: BSD-3-Clause
 *
 * georeduce-worker --multicast: worker_mcast() runs in a thread of its own per
 * --worker-id. Each round it sends its generated tensor (gr_mcast_send()) if its site's
 * stream carries it, and receives the other origins' (gr_mcast_recv()), each chunk checked
 * against the origin's generated data. Rounds start together in the process (a barrier)
 * or on the wall clock (--start-at, --round-interval).
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "clock.h"
#include "georeduce.h"
#include "georeduce_worker.h"

/* The wall clock, which processes on one host (or NTP-synchronised hosts) share. */
double
real_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

void
sleep_until_real(double t)
{
	struct timespec ts = {.tv_sec = (time_t)t};
	long ns = (long)((t - (double)ts.tv_sec) * 1e9);

	ts.tv_nsec = ns < 0 ? 0 : (ns > 999999999 ? 999999999 : ns);
	while (clock_nanosleep(CLOCK_REALTIME, TIMER_ABSTIME, &ts, NULL) == EINTR)
		;
}

/* gr_mcast_recv() callback: check the chunk against the origin's generated data. */
static void
mcast_chunk(void *arg, uint16_t origin, uint32_t round, uint32_t chunk, const void *data,
	    uint32_t count)
{
	struct worker *w = arg;
	const struct gr_config *cfg = gr_client_config(w->client);
	uint64_t m = modulus(cfg->dtype), e0 = (uint64_t)chunk * cfg->chunk_elements;
	unsigned int k = 0;

	(void)round; /* gr_mcast_recv() delivers the round it was asked for only */
	while (k < cfg->n_origins && cfg->origins[k] != origin)
		k++;
	if (k < cfg->n_origins)
		w->ogot[k]++;
	for (uint32_t i = 0; i < count; i++) {
		uint32_t want = encode(cfg->dtype, (double)((7 * (uint64_t)origin + e0 + i) % m));
		uint32_t got = load(data, cfg->dtype, i);

		if (got != want) {
			if (w->cur->chunks_wrong++ == 0)
				snprintf(w->wrong, sizeof(w->wrong),
					 "origin %u chunk %" PRIu32 " element %" PRIu64
					 " is 0x%" PRIx32 ", want 0x%" PRIx32,
					 origin, chunk, e0 + i, got, want);
			return;
		}
	}
	w->cur->chunks_ok++;
}

/* Record a failed round: the worker's first failure is the one it reports. */
static void mcast_fail(struct worker *w, struct round_res *r, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void
mcast_fail(struct worker *w, struct round_res *r, const char *fmt, ...)
{
	va_list ap;
	int n;

	r->verified = false;
	if (!w->ok)
		return;
	w->ok = false;
	n = snprintf(w->msg, sizeof(w->msg), "worker %u round %" PRIu32 ": ", w->id, r->round);
	va_start(ap, fmt);
	vsnprintf(w->msg + n, sizeof(w->msg) - (size_t)n, fmt, ap);
	va_end(ap);
}

/* --multicast: every round, send this worker's update (if its site's stream carries it)
 * and receive the others' (gr_mcast_recv() asks for what is lost). Rounds are
 * independent: a failed one is recorded and the next one runs, so that the workers of
 * the process stay in step. */
void *
worker_mcast(void *arg)
{
	struct worker *w = arg;
	const struct opts *o = w->o;
	const struct gr_config *cfg = gr_client_config(w->client);
	uint64_t n_chunks = (cfg->elements + cfg->chunk_elements - 1) / cfg->chunk_elements;
	struct gr_mcast_opts mo = {0};

	w->ok = true;
	for (uint32_t i = 0; i < o->rounds; i++) {
		struct round_res *r = &w->res[i];
		double t0, until = 0, limit = o->timeout_s;
		uint64_t expect = (uint64_t)cfg->n_origins * n_chunks;
		int rc;

		r->round = o->first_round + i;
		r->verified = true;
		if (o->interval_s > 0) {
			sleep_until_real(w->start + i * o->interval_s);
			until = w->start + (i + 1) * o->interval_s;
		} else if (i == 0) {
			sleep_until_real(w->start);
		} else if (w->barrier != NULL) {
			pthread_barrier_wait(w->barrier);
		}
		t0 = clock_now_s();
		if (cfg->mcast_send) {
			fill(w, cfg);
			r->sent = gr_mcast_send(w->client, w->buf, cfg->elements, cfg->dtype,
						r->round, NULL);
			if (r->sent < 0)
				mcast_fail(w, r, "send: %s", gr_client_error(w->client));
		}
		if (cfg->n_origins > 0) {
			if (until > 0 && until - real_s() < limit)
				limit = until - real_s();
			mo.timeout_ms = limit > 0.001 ? (uint32_t)(limit * 1000) : 1;
			memset(w->ogot, 0, cfg->n_origins * sizeof(w->ogot[0]));
			w->cur = r;
			w->wrong[0] = '\0';
			rc = gr_mcast_recv(w->client, r->round, mcast_chunk, w, &mo);
			if (rc < 0) {
				mcast_fail(w, r, "receive: %s", gr_client_error(w->client));
			} else {
				r->complete = (unsigned int)rc;
				r->chunks_missing = expect - r->chunks_ok - r->chunks_wrong;
			}
			for (unsigned int k = 0; rc >= 0 && k < cfg->n_origins; k++)
				r->origins_empty += w->ogot[k] == 0;
			if (r->chunks_wrong != 0) {
				mcast_fail(w, r, "%s (%" PRIu64 " wrong chunks)", w->wrong,
					   r->chunks_wrong);
			} else if (r->origins_empty != 0) {
				unsigned int k = 0;

				while (w->ogot[k] != 0)
					k++;
				mcast_fail(w, r,
					   "nothing from origin %u in %.0f ms (%u of %u origins "
					   "complete, %" PRIu64 " chunks missing)",
					   cfg->origins[k], (clock_now_s() - t0) * 1e3, r->complete,
					   cfg->n_origins, r->chunks_missing);
			} else if (o->require_all && r->chunks_missing != 0) {
				mcast_fail(w, r,
					   "%u of %u origins complete, %" PRIu64 " chunks "
					   "missing after %.0f ms (--require-all)",
					   r->complete, cfg->n_origins, r->chunks_missing,
					   (clock_now_s() - t0) * 1e3);
			}
		}
		r->ms = (clock_now_s() - t0) * 1e3;
		w->rounds_run++;
		if (o->json)
			continue;
		char miss[48] = "", wrong[48] = "";

		if (r->chunks_missing != 0)
			snprintf(miss, sizeof(miss), ", %" PRIu64 " missing", r->chunks_missing);
		if (r->chunks_wrong != 0)
			snprintf(wrong, sizeof(wrong), ", %" PRIu64 " WRONG", r->chunks_wrong);
		/* One printf per line: the workers' threads share stdout. */
		printf("worker %u round %" PRIu32 ": %.3f ms, %d chunks sent, %u of %u origins "
		       "complete, %" PRIu64 " chunks verified%s%s%s\n",
		       w->id, r->round, r->ms, r->sent < 0 ? 0 : r->sent, r->complete,
		       cfg->n_origins, r->chunks_ok, miss, wrong, r->verified ? "" : " (failed)");
	}
	return NULL;
}
