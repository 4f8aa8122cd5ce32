/* SPDX-License-Identifier: BSD-3-Clause
 *
 * georeduce-worker's AllReduce worker: worker_main() runs in a thread of its own per
 * --worker-id, round after round of gr_allreduce() on the generated (or --input) tensor,
 * each result verified (verify.c) and printed; under --follow a round stopped or timed
 * out for a new epoch runs again under it (follow.c).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "clock.h"
#include "georeduce.h"
#include "georeduce_worker.h"

static void
progress(void *arg, uint64_t done, uint64_t total)
{
	const struct worker *w = arg;

	fprintf(stderr, "\r" PROG ": worker %u: %3u%% of %" PRIu64 " chunks", w->id,
		(unsigned int)(total != 0 ? done * 100 / total : 100), total);
	fflush(stderr);
}

/* gr_options.progress: the progress line on a terminal, and under --follow when the
 * round's results last came (stalled()). */
static void
round_progress(void *arg, uint64_t done, uint64_t total)
{
	struct worker *w = arg;

	if (done != w->prog_done) {
		w->prog_done = done;
		w->prog_at = clock_now_s();
	}
	if (w->show_progress)
		progress(arg, done, total);
}

/* Room for the contributor sets of cfg's chunks (none without sets); 0, or -1 with
 * w->msg filled. */
static int
csets_room(struct worker *w, const struct gr_config *cfg)
{
	size_t len = (size_t)((cfg->elements + cfg->chunk_elements - 1) / cfg->chunk_elements) *
		     cfg->cset_blocks * GR_CSET_BLOCK;
	uint8_t *p;

	if (len <= w->csets_len)
		return 0;
	p = realloc(w->csets, len);
	if (p == NULL) {
		snprintf(w->msg, sizeof(w->msg),
			 "worker %u: out of memory for %zu bytes of "
			 "contributor sets",
			 w->id, len);
		return -1;
	}
	w->csets = p;
	w->csets_len = len;
	return 0;
}

void *
worker_main(void *arg)
{
	struct worker *w = arg;
	const struct opts *o = w->o;
	const struct gr_config *cfg = gr_client_config(w->client);
	double bytes = (double)cfg->elements * (double)gr_dtype_size(cfg->dtype);
	struct gr_options go = {
		.window = o->window,
		.follow_rtt = o->follow_rtt,
		.timeout_ms = (uint32_t)(o->timeout_s * 1000 + 0.5),
		.progress = w->show_progress || o->follow ? round_progress : NULL,
		.progress_arg = w,
		.progress_ms = 200,
		.cancel = !o->follow         ? NULL :
			  o->control != NULL ? control_changed :
					       table_changed,
		.cancel_arg = w,
	};

	uint64_t superseded = 0, kept = 0;
	uint32_t skipped = 0; /* rounds a partial reduce went on without us */
	struct gr_stats st;

	w->ok = true;
	/* --start-at: the first round starts at the same instant in every process given
	 * it, whenever each got its table (joining through the control process takes each
	 * its own time), so that a round's time is the AllReduce's, not the spread of the
	 * workers' starts. */
	if (o->start_at >= 0)
		sleep_until_real(w->start);
	for (uint32_t i = 0; i < o->rounds; i++) {
		struct round_res *r = &w->res[i];
		double t0;

		r->round = o->first_round + i + skipped;
		if (o->follow && follow_table(w) < 0) {
			w->ok = false;
			break;
		}
		cfg = gr_client_config(w->client);
		if (csets_room(w, cfg) < 0) {
			w->ok = false;
			break;
		}
		go.csets = w->csets;
		fill(w, cfg);
		t0 = clock_now_s();
		w->prog_done = 0;
		w->prog_at = t0;
		r->contrib =
			gr_allreduce(w->client, w->buf, cfg->elements, cfg->dtype, r->round, &go);
		bool told = false; /* following the job failed with its own message */

		/* A gateway failed mid-round: the control process installs a new epoch
		 * without it, the table file changes and the call stops (table_changed());
		 * run the round again under that epoch. Or the round timed out: the
		 * workers began it under two epochs, and all go on with it under the newer
		 * one (await_epoch()). A re-plan may follow a re-plan (a link found short
		 * of its rate while a gateway fails): follow up to FOLLOW_RUNS_MAX. */
		for (int again = 0, same = 0;
		     o->follow && (r->contrib == -ETIMEDOUT || r->contrib == -ECANCELED) &&
		     again < FOLLOW_RUNS_MAX;
		     again++) {
			uint32_t ran = cfg->epoch;

			w->msg[0] = '\0';
			if (r->contrib == -ECANCELED ? follow_table(w) < 0 :
						       !await_epoch(w, ran, same)) {
				/* The control process's answer (the job was deleted, say) says more
				 * than the round's timeout. */
				told = w->msg[0] != '\0';
				break;
			}
			cfg = gr_client_config(w->client);
			if (csets_room(w, cfg) < 0)
				break;
			go.csets = w->csets;
			/* Under the same epoch the call goes on where it stopped (resume): the
			 * gateways' slots hold what it sent, and had it started again from the
			 * first chunk, their pools may have moved on past it meanwhile. */
			go.resume = cfg->epoch == ran;
			same += go.resume;
			if (!o->json)
				printf("worker %u round %" PRIu32 ": epoch %u %s\n", w->id,
				       r->round, cfg->epoch,
				       go.resume ? "as before, round taken up again" :
						   "installed, round run again");
			if (!go.resume)
				fill(w, cfg);
			w->prog_done = 0;
			w->prog_at = clock_now_s();
			r->contrib = gr_allreduce(w->client, w->buf, cfg->elements, cfg->dtype,
						  r->round, &go);
			go.resume = false;
		}
		r->ms = (clock_now_s() - t0) * 1e3;
		if (w->show_progress)
			fputs("\r\033[K", stderr);
		w->rounds_run++;
		if (r->contrib < 0) {
			if (!told)
				snprintf(w->msg, sizeof(w->msg), "worker %u round %" PRIu32 ": %s",
					 w->id, r->round, gr_client_error(w->client));
			w->ok = false;
			break;
		}
		r->verified = w->input == NULL && verify(w, cfg, r->round, r->contrib);
		if (w->input == NULL && !r->verified) {
			w->ok = false;
			break;
		}
		if (!o->json)
			printf("worker %u round %" PRIu32
			       ": %.3f ms, %.3f Gbit/s, %d contributors, "
			       "%s\n",
			       w->id, r->round, r->ms, bytes * 8 / (r->ms * 1e6), r->contrib,
			       r->verified ? "verified" : "not verified (--input)");
		/* A straggler in a partial reduce got a later round's results: go on after it. */
		gr_client_stats(w->client, &st);
		if (st.superseded != superseded) {
			superseded = st.superseded;
			if ((int32_t)(st.latest_round - r->round) > 0) {
				if (!o->json)
					printf("worker %u round %" PRIu32
					       ": a straggler, answered by "
					       "round %" PRIu32 "; continuing after it\n",
					       w->id, r->round, st.latest_round);
				skipped += st.latest_round - r->round;
			}
		}
		/* Peers that lost results in a failover got them back from this worker. */
		if (st.kept_answers != kept && !o->json)
			printf("worker %u round %" PRIu32 ": %" PRIu64 " results of an earlier "
			       "round given back to its gateway\n",
			       w->id, r->round, st.kept_answers - kept);
		kept = st.kept_answers;
	}
	return NULL;
}
