/* SPDX-License-Identifier: BSD-3-Clause
 *
 * georeduce-worker --json: the summary of every worker's rounds and counters on stdout,
 * written by the main thread once the workers' threads are done.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include <jansson.h>

#include "georeduce.h"
#include "georeduce_worker.h"

/* Per tree of the client's configuration: its id, the window the next call starts with
 * and the least round trip of the latest call that measured one. */
static json_t *
trees_json(const struct gr_client *c, const struct gr_stats *s)
{
	const struct gr_config *cfg = gr_client_config(c);
	json_t *a = json_array();

	for (unsigned int t = 0; a != NULL && t < cfg->n_trees; t++)
		json_array_append_new(a,
				      json_pack("{s:i, s:I, s:I}", "id", (int)cfg->trees[t].id,
						"window", (json_int_t)s->tree_windows[t],
						"rtt_min_us", (json_int_t)s->tree_rtt_min_us[t]));
	return a;
}

static json_t *
stats_json(const struct gr_client *c)
{
	struct gr_stats s;
	json_t *j;

	gr_client_stats(c, &s);
	j = json_pack("{s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, "
		      "s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I}",
		      "timeouts", (json_int_t)s.timeouts, "cancels", (json_int_t)s.cancels,
		      "contribs_sent", (json_int_t)s.contribs_sent, "contribs_retx",
		      (json_int_t)s.contribs_retx, "nacks_sent", (json_int_t)s.nacks_sent,
		      "results", (json_int_t)s.results, "acks", (json_int_t)s.acks, "duplicates",
		      (json_int_t)s.duplicates, "stale", (json_int_t)s.stale, "invalid",
		      (json_int_t)s.invalid, "srtt_us", (json_int_t)s.srtt_us, "t1_us",
		      (json_int_t)s.t1_us, "mcast_sent", (json_int_t)s.mcast_sent, "mcast_received",
		      (json_int_t)s.mcast_received, "mcast_late", (json_int_t)s.mcast_late,
		      "mcast_too_far", (json_int_t)s.mcast_too_far, "mcast_skipped",
		      (json_int_t)s.mcast_skipped, "mcast_nacks_sent",
		      (json_int_t)s.mcast_nacks_sent, "mcast_repaired",
		      (json_int_t)s.mcast_repaired, "kept_answers", (json_int_t)s.kept_answers,
		      "kept_misses", (json_int_t)s.kept_misses, "held_asked",
		      (json_int_t)s.held_asked, "retx_fast", (json_int_t)s.retx_fast,
		      "asks_unanswered", (json_int_t)s.asks_unanswered);
	if (j != NULL)
		json_object_set_new(j, "trees", trees_json(c, &s));
	return j;
}

int
print_json(const struct opts *o, const struct gr_config *cfg, struct worker *ws, bool ok)
{
	double bytes = (double)cfg->elements * (double)gr_dtype_size(cfg->dtype);
	json_t *workers = json_array();
	json_t *doc;
	int rc;

	for (int i = 0; i < o->n_ids; i++) {
		struct worker *w = &ws[i];
		json_t *rounds = json_array();

		for (uint32_t r = 0; r < w->rounds_run; r++) {
			const struct round_res *x = &w->res[r];

			if (o->multicast) {
				json_array_append_new(
					rounds,
					json_pack("{s:I, s:f, s:i, s:i, s:i, s:I, s:I, s:I, s:b}",
						  "round", (json_int_t)x->round, "ms", x->ms,
						  "sent", x->sent, "origins",
						  (int)gr_client_config(w->client)->n_origins,
						  "origins_complete", (int)x->complete,
						  "chunks_verified", (json_int_t)x->chunks_ok,
						  "chunks_missing", (json_int_t)x->chunks_missing,
						  "chunks_wrong", (json_int_t)x->chunks_wrong,
						  "verified", x->verified));
				continue;
			}
			json_array_append_new(rounds,
					      json_pack("{s:I, s:f, s:f, s:i, s:b}", "round",
							(json_int_t)x->round, "ms", x->ms, "gbps",
							bytes * 8 / (x->ms * 1e6), "contrib",
							x->contrib, "verified", x->verified));
		}
		json_array_append_new(workers,
				      json_pack("{s:i, s:b, s:s?, s:o, s:o}", "id", w->id, "ok",
						w->ok, "error", w->ok ? NULL : w->msg, "rounds",
						rounds, "stats", stats_json(w->client)));
	}
	doc = json_pack("{s:b, s:b, s:I, s:I, s:s, s:I, s:f, s:o}", "ok", ok, "multicast",
			o->multicast, "job", (json_int_t)cfg->job, "epoch", (json_int_t)cfg->epoch,
			"dtype", gr_dtype_name(cfg->dtype), "elements", (json_int_t)cfg->elements,
			"bytes", bytes, "workers", workers);
	if (doc == NULL)
		return -1;
	rc = json_dumpf(doc, stdout, JSON_INDENT(2));
	fputc('\n', stdout);
	json_decref(doc);
	return rc;
}
