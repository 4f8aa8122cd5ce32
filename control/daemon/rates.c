/* SPDX-License-Identifier: BSD-3-Clause
 *
 * Measured tree and link rates, and the capacities plans use (rates.h); the parsing of a
 * dataplane's link counters (daemon_link_sent(), daemon_link_tree() in daemon.h). On the
 * daemon's thread. No DPDK.
 */
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "clock.h"
#include "daemon_internal.h"
#include "elect.h"
#include "health.h"
#include "jobs.h"
#include "rates.h"

uint64_t
daemon_first_tx_bytes(const json_t *lk)
{
	json_int_t b = json_integer_value(json_object_get(lk, "bytes"));
	json_int_t r = json_integer_value(json_object_get(lk, "retx_bytes"));

	return b > r ? (uint64_t)(b - r) : 0;
}

int
daemon_link_tree(const json_t *lk)
{
	const json_t *t = json_object_get(lk, "tree");

	/* A stream's entry has no "tree": json_integer_value() of the missing key would be 0,
	 * a valid tree id. */
	if (!json_is_integer(t) || json_integer_value(t) < 0 || json_integer_value(t) > UINT16_MAX)
		return -1;
	return (int)json_integer_value(t);
}

bool
daemon_link_sent(const json_t *jobs, uint16_t peer, uint64_t *bytes, double *planned, uint64_t *key)
{
	bool any = false;
	json_t *jo, *lk;
	size_t i, k;

	*bytes = 0;
	*planned = 0;
	*key = 0;
	json_array_foreach (jobs, i, jo) {
		const char *state = json_string_value(json_object_get(jo, "state"));

		if (state == NULL || strcmp(state, "live") != 0)
			continue;
		*key = *key * 1000003u +
		       (uint64_t)json_integer_value(json_object_get(jo, "job")) * 65537u +
		       (uint64_t)json_integer_value(json_object_get(jo, "epoch"));
		/* Trees and streams alike: a stream's copies load the link as a tree does. */
		json_array_foreach (json_object_get(jo, "links"), k, lk) {
			if (json_integer_value(json_object_get(lk, "id")) != peer)
				continue;
			*bytes += daemon_first_tx_bytes(lk);
			*planned += json_number_value(json_object_get(lk, "rate_gbps"));
			any = true;
		}
	}
	return any;
}

/* What the gateways of node v that are up handed to the link towards node u in their live
 * epochs (daemon_link_sent(), summed over the pairs of gateways). False if none did. */
static bool
link_sent(const struct dmn *m, int v, int u, uint64_t *bytes, double *planned, uint64_t *key)
{
	bool any = false;

	*bytes = 0;
	*planned = 0;
	*key = 0;
	NODE_GWS(m, v, g)
	{
		if (m->gws[g].state != GW_UP)
			continue;
		NODE_GWS(m, u, h)
		{
			uint64_t b, k;
			double pl;

			if (!daemon_link_sent(m->gws[g].jobs, m->d->gateways[h].id, &b, &pl, &k))
				continue;
			*bytes += b;
			*planned += pl;
			*key = *key * 31u + k;
			any = true;
		}
	}
	return any;
}

/* How many copies of each plan tree the live epoch's tables hold (distinct tree ids
 * congruent to it). */
static void
copies_count(const struct jobplan *jp, struct trate *r, int n)
{
	uint64_t *seen = n > 0 ? calloc(65536 / 64, sizeof(*seen)) : NULL;

	for (int g = 0; jp != NULL && seen != NULL && g < jp->n_gateways; g++)
		for (int e = 0; jp->tables[g] != NULL && e < jp->tables[g]->n_trees; e++) {
			uint16_t id = jp->tables[g]->trees[e].id;

			if (seen[id / 64] >> (id % 64) & 1)
				continue;
			seen[id / 64] |= 1ull << (id % 64);
			r[id % n].copies++;
		}
	free(seen);
}

void
tree_rates_update(struct dmn *m)
{
	int64_t now = clock_now_ms();

	for (int i = 0; i < m->d->n_jobs; i++) {
		struct job *j = &m->jobs[i];
		int n = j->live != NULL ? j->live->plan->n_trees : 0;
		json_t *jo, *lk;
		size_t a, b;

		if (j->rates_epoch != j->live_epoch || j->n_rates != n) {
			free(j->rates);
			j->rates = calloc((size_t)n + 1, sizeof(*j->rates));
			j->n_rates = j->rates != NULL ? n : 0;
			j->rates_epoch = j->live_epoch;
			j->rates_at = -1;
			copies_count(j->live, j->rates, j->n_rates);
		}
		for (int k = 0; k < j->n_rates; k++) {
			j->rates[k].now_bytes = 0;
			j->rates[k].now_links = 0;
		}
		for (int v = 0; v < m->d->n_gateways; v++)
			json_array_foreach (m->gws[v].jobs, a, jo) {
				if (json_integer_value(json_object_get(jo, "job")) !=
					    m->d->jobs[i].id ||
				    json_integer_value(json_object_get(jo, "epoch")) !=
					    j->live_epoch)
					continue;
				json_array_foreach (json_object_get(jo, "links"), b, lk) {
					int k = daemon_link_tree(lk); /* -1: a stream's */

					/* A tree's copy in a segment of the shards has an id
					 * congruent to the plan tree's (docs/TABLES.md). */
					if (k < 0 || j->n_rates == 0)
						continue;
					k %= j->n_rates;
					j->rates[k].now_bytes += daemon_first_tx_bytes(lk);
					j->rates[k].now_links++;
				}
			}
		for (int k = 0; k < j->n_rates; k++) {
			struct trate *r = &j->rates[k];

			r->gbps = j->rates_at >= 0 && now > j->rates_at && r->now_links > 0 &&
						  r->now_links == r->links &&
						  r->now_bytes >= r->bytes ?
					  (double)(r->now_bytes - r->bytes) * 8 /
						  ((double)(now - j->rates_at) * 1e6) / r->links *
						  (r->copies > 0 ? r->copies : 1) :
					  -1;
			r->bytes = r->now_bytes;
			r->links = r->now_links;
		}
		j->rates_at = now;
	}
}

void
lrate_forget(struct dmn *m, int l)
{
	for (int d = 0; d < 2; d++)
		m->lr[2 * l + d] = (struct lrate){.at = -1, .rtt_ms = -1, .gbps = -1};
	m->link[l].gbps_ab = m->link[l].gbps_ba = 0;
}

/* The measured capacities changed: into the state (jobs_state_save()), for the next
 * leader or a restart. */
static void
caps_save(struct dmn *m)
{
	char err[CTL_ERR_MAX];

	if (m->el != NULL && !elect_leading(m))
		return;
	if (jobs_state_save(m, -1, err, sizeof(err)) != 0)
		control_log("the measured capacities are not kept: %s", err);
}

void
rates_update(struct dmn *m)
{
	const struct topo *t = m->d->topo;
	int64_t now = clock_now_ms();
	bool changed = false;

	for (int l = 0; l < t->n_links; l++)
		for (int d = 0; d < 2; d++) {
			int v = d == 0 ? t->links[l].a : t->links[l].b;
			int u = d == 0 ? t->links[l].b : t->links[l].a;
			struct lrate *r = &m->lr[2 * l + d];
			double *cap = d == 0 ? &m->link[l].gbps_ab : &m->link[l].gbps_ba;
			double nominal = d == 0 ? t->links[l].gbps_ab : t->links[l].gbps_ba;
			uint64_t bytes, key;
			double planned;

			if (r->measured_gbps > 0 && now >= r->measured_until) {
				control_log(
					"link %s-%s: plans use %s->%s's topology capacity of %g "
					"Gbit/s again",
					node_id(m, t->links[l].a), node_id(m, t->links[l].b),
					node_id(m, v), node_id(m, u), nominal);
				r->measured_gbps = 0;
				*cap = 0;
				changed = true;
				mark_all_dirty(m, CAUSE_LINK_RESTORED,
					       "link %s-%s: measured capacity expired",
					       node_id(m, t->links[l].a),
					       node_id(m, t->links[l].b));
			}
			if (!m->link[l].up || !node_up(m, v) ||
			    !link_sent(m, v, u, &bytes, &planned, &key)) {
				r->at = -1;
				r->gbps = -1;
				r->sh.samples = 0;
				continue;
			}
			r->gbps = r->at >= 0 && r->key == key && bytes >= r->bytes && now > r->at ?
					  (double)(bytes - r->bytes) * 8 /
						  ((double)(now - r->at) * 1e6) :
					  -1;
			double dt_ms = r->gbps >= 0 ? (double)(now - r->at) : 0;
			r->bytes = bytes;
			r->key = key;
			r->at = now;
			r->planned_gbps = planned;
			r->rtt_ms = probe_rtt_ms(m, v, u);
			if (r->rtt_ms > 0 && (r->base_rtt_ms <= 0 || r->rtt_ms < r->base_rtt_ms))
				r->base_rtt_ms = r->rtt_ms;
			double queue = r->rtt_ms > 0 ? r->rtt_ms - r->base_rtt_ms : 0;
			/* What it should carry: the plans' rates, but no more than the capacity
			 * plans use (each job is planned over its share of the link, so they add
			 * up to at most that, to rounding). */
			double in_plans = *cap > 0 ? *cap : nominal;
			double expect = planned < in_plans ? planned : in_plans;

			bool is_short = r->gbps >= 0 && planned > 0 &&
					r->gbps < DAEMON_RATE_SHORT * expect &&
					r->gbps >= DAEMON_RATE_IDLE * expect &&
					queue > DAEMON_RATE_QUEUE_MS && queue > r->base_rtt_ms / 2;

			/* Short in most heartbeats of a window of short_ms and short_samples
			 * (hyst.h): a host starved of CPU for a moment shows the same as a slow
			 * link, and a job's rounds leave the link idle between them. */
			if (r->sh.samples == 0)
				r->sh_gbit = r->sh_ms = r->sh_queue_ms = 0; /* the window's own */
			if (is_short) {
				r->sh_gbit += r->gbps * dt_ms;
				r->sh_ms += dt_ms;
				r->sh_queue_ms += queue;
			}
			int n_short = r->sh.n_short + is_short, n_all = r->sh.samples + 1;
			int64_t span = r->sh.samples > 0 ? now - r->sh.since : 0;

			if (!hyst_short_step(&m->o->hyst, &r->sh, is_short, now))
				continue;
			/* What it carried in the window's short heartbeats, its queue standing:
			 * the link's pace, not the job's gaps between rounds. At least
			 * DAEMON_RATE_FLOOR of the topology's capacity: a link that delivers next
			 * to nothing is left to the probes, which decide whether it is down. */
			double carried = r->sh_ms > 0 ? r->sh_gbit / r->sh_ms : r->gbps;
			double best = carried > DAEMON_RATE_FLOOR * nominal ?
					      carried :
					      DAEMON_RATE_FLOOR * nominal;

			double mean_queue = n_short > 0 ? r->sh_queue_ms / n_short : queue;
			/* A measured capacity of either direction: the other one's plans the
			 * trees of both at it, and a direction planned at what the other was
			 * measured to deliver compounds the same way (hyst_cap_step()). */
			const struct lrate *o = &m->lr[2 * l + (1 - d)];
			/* The other direction's, unless it lapses now (cleared when the loop
			 * comes to it, after this one). */
			double o_held = now < o->measured_until ? o->measured_gbps : 0;
			double held = r->measured_gbps > 0 ? r->measured_gbps : o_held;
			enum hyst_cap cv = hyst_cap_step(held, best, DAEMON_RATE_SAME);

			if (cv == HYST_CAP_LOWER) {
				/* Not planned lower (hyst_cap_step()): the measurement lapses at
				 * its time, and the link is measured again against the
				 * topology's capacity. Said once for each measurement. */
				const struct lrate *h = r->measured_gbps > 0 ? r : o;
				double lapse_s = (double)(h->measured_until - now) / 1000;

				if (r->lower_said != held)
					control_log(
						"link %s-%s: %s->%s carries %.4g Gbit/s of the "
						"%.4g the link was measured at, behind %.0f ms "
						"of queue (short in %d of %d heartbeats over "
						"%.1f s); not planned lower: plans keep it until "
						"it lapses in %.0f s, then use the topology's %g",
						node_id(m, t->links[l].a),
						node_id(m, t->links[l].b), node_id(m, v),
						node_id(m, u), carried, held, mean_queue, n_short,
						n_all, (double)span / 1000, lapse_s, nominal);
				r->lower_said = held;
				continue;
			}
			if (cv == HYST_CAP_SAME) {
				/* What plans use already: it holds longer, no new epoch. */
				if (r->measured_gbps > 0)
					r->measured_until = now + DAEMON_RATE_HOLD_MS;
				continue;
			}
			r->measured_until = now + DAEMON_RATE_HOLD_MS;
			r->measured_gbps = best;
			*cap = best;
			changed = true;
			control_log(
				"link %s-%s: %s->%s carries %.4g Gbit/s of the %.4g planned behind "
				"%.0f ms of queue (round trip %.0f ms now, %.0f ms at best; "
				"short in %d of %d heartbeats over %.1f s); planning with %.4g "
				"Gbit/s for %d s",
				node_id(m, t->links[l].a), node_id(m, t->links[l].b), node_id(m, v),
				node_id(m, u), carried, expect, mean_queue, r->rtt_ms,
				r->base_rtt_ms, n_short, n_all, (double)span / 1000,
				r->measured_gbps, DAEMON_RATE_HOLD_MS / 1000);
			mark_all_dirty(m, CAUSE_LINK_SHORT, "link %s-%s measured at %.4g Gbit/s",
				       node_id(m, t->links[l].a), node_id(m, t->links[l].b),
				       r->measured_gbps);
		}
	if (changed)
		caps_save(m);
}
