/* SPDX-License-Identifier: BSD-3-Clause
 *
 * Jobs share the WAN by weight (shares.h): the weighted max-min split of a link
 * direction, what a plan loads each link with, every job's shares from its demand planned
 * alone, and the shares in `status`. On the daemon's thread. No DPDK.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rates.h"
#include "shares.h"

void
shares_split(double cap, int n, const double *weight, const double *demand, double *share)
{
	double left = cap > 0 ? cap : 0, wall = 0, used = 0;
	bool fixed[DEPLOY_JOBS_MAX];
	bool more = true;

	for (int i = 0; i < n; i++)
		share[i] = 0;
	n = n < DEPLOY_JOBS_MAX ? n : DEPLOY_JOBS_MAX;
	for (int i = 0; i < n; i++) {
		fixed[i] = !(demand[i] > 0) || !(weight[i] > 0);
		wall += weight[i] > 0 ? weight[i] : 0;
	}
	/* Water-filling: at the level L = left / (weights of the jobs not yet fixed), fix
	 * every job whose demand is met below its weight's part; the others share what is
	 * left at the next level. */
	while (more) {
		double w = 0, level;

		more = false;
		for (int i = 0; i < n; i++)
			w += fixed[i] ? 0 : weight[i];
		if (w <= 0)
			break;
		level = left / w;
		for (int i = 0; i < n; i++) {
			double d = demand[i] < cap ? demand[i] : cap;

			if (fixed[i] || d > weight[i] * level)
				continue;
			share[i] = d;
			left -= d;
			fixed[i] = more = true;
		}
		if (!more)
			for (int i = 0; i < n; i++)
				if (!fixed[i])
					share[i] = weight[i] * level;
	}
	for (int i = 0; i < n; i++)
		used += share[i];
	/* What no user needs: to every job by weight, on top of its share. */
	if (wall > 0 && cap - used > cap * 1e-9)
		for (int i = 0; i < n; i++)
			share[i] += weight[i] > 0 ? (cap - used) * weight[i] / wall : 0;
}

/* Add rate to the direction of deployment link between deployment nodes u -> v. */
static void
load_add(const struct topo *t, double *load, int u, int v, double rate, bool both)
{
	int l = topo_link_between(t, u, v);

	if (l < 0)
		return;
	if (both) {
		load[2 * l] += rate;
		load[2 * l + 1] += rate;
	} else {
		load[2 * l + (t->links[l].a == u ? 0 : 1)] += rate;
	}
}

void
shares_plan_loads(const struct jobplan *jp, const struct topo *t, double *load)
{
	for (int l = 0; l < 2 * t->n_links; l++)
		load[l] = 0;
	if (jp == NULL)
		return;
	for (int i = 0; jp->plan != NULL && i < jp->plan->n_trees; i++) {
		const struct plan_tree *tr = &jp->plan->trees[i];

		for (int v = 0; v < jp->topo->n_nodes; v++)
			if (tr->parent[v] >= 0)
				load_add(t, load, jp->node_of[v], jp->node_of[tr->parent[v]],
					 tr->rate_gbps, true);
	}
	for (int s = 0; s < jp->n_streams; s++)
		for (int v = 0; v < jp->topo->n_nodes; v++)
			if (jp->streams[s].parent[v] >= 0)
				load_add(t, load, jp->node_of[jp->streams[s].parent[v]],
					 jp->node_of[v], jp->streams[s].rate_gbps, false);
}

void
shares_free(struct job *j)
{
	free(j->share);
	free(j->planned_share);
	j->share = j->planned_share = NULL;
}

/* The capacity plans use for direction dir of link l (links: NULL for the topology's):
 * the topology's, or a measured one below it; 0 where the link is down. */
static double
capacity(const struct deploy *d, const struct jobplan_link *links, int l, int dir)
{
	const struct topo_link *tl = &d->topo->links[l];
	double nominal = dir == 0 ? tl->gbps_ab : tl->gbps_ba;
	double measured = links == NULL ? 0 : dir == 0 ? links[l].gbps_ab : links[l].gbps_ba;

	if (links != NULL && !links[l].up)
		return 0;
	return measured > 0 && measured < nominal ? measured : nominal;
}

/* The split of direction k among the jobs in `in` (demand: d->n_jobs rows of nd), into
 * sh (by job index; those not in `in` untouched). */
static void
split_among(const struct deploy *d, const bool *in, const double *demand, int nd, int k, double c,
	    double *sh)
{
	double w[DEPLOY_JOBS_MAX] = {0}, dm[DEPLOY_JOBS_MAX] = {0}, out[DEPLOY_JOBS_MAX];
	int idx[DEPLOY_JOBS_MAX] = {0}, n = 0;

	for (int i = 0; i < d->n_jobs; i++) {
		if (!in[i])
			continue;
		idx[n] = i;
		w[n] = d->jobs[i].weight;
		dm[n] = demand[(size_t)i * (size_t)nd + (size_t)k];
		n++;
	}
	if (n == 1) { /* alone: the whole direction, and no demand was planned */
		sh[idx[0]] = c;
		return;
	}
	shares_split(c, n, w, dm, out);
	for (int x = 0; x < n; x++)
		sh[idx[x]] = out[x];
}

int
shares_compute(const struct deploy *d, const bool *up, const struct jobplan_link *links,
	       const bool *running, double *share)
{
	int nj = d->n_jobs, nd = 2 * d->topo->n_links, n_run = 0;
	double *demand = calloc((size_t)nj * (size_t)nd + 1, sizeof(*demand));
	double sh[DEPLOY_JOBS_MAX] = {0}, with[DEPLOY_JOBS_MAX] = {0};
	bool in[DEPLOY_JOBS_MAX];
	char err[JOBPLAN_ERR_MAX];

	if (demand == NULL || nj > DEPLOY_JOBS_MAX) {
		free(demand);
		return -ENOMEM;
	}
	for (int i = 0; i < nj; i++)
		n_run += running == NULL || running[i];
	/* Each job's demand: what its plan alone loads every direction with (nothing when
	 * it cannot be planned). Needed only where jobs meet in a split: two or more jobs,
	 * one of them running (a job that does not run is split with those that do). */
	for (int i = 0; i < nj && nj > 1 && n_run > 0; i++) {
		struct jobplan *jp = NULL;

		if (jobplan_plan_only(d, i, up, links, &jp, err, sizeof(err)) != 0)
			jp = NULL;
		shares_plan_loads(jp, d->topo, demand + (size_t)i * (size_t)nd);
		jobplan_free(jp);
	}
	for (int k = 0; k < nd; k++) {
		double c = capacity(d, links, k / 2, k % 2);

		/* The jobs that run share among themselves; a job that does not gets what it
		 * would if it started now, so that its plan stays when it does. */
		for (int i = 0; i < nj; i++)
			in[i] = running == NULL || running[i];
		if (n_run > 0)
			split_among(d, in, demand, nd, k, c, sh);
		for (int i = 0; i < nj; i++) {
			if (running == NULL || running[i])
				continue;
			in[i] = true;
			split_among(d, in, demand, nd, k, c, with);
			in[i] = false;
			sh[i] = with[i];
		}
		for (int i = 0; i < nj; i++)
			share[(size_t)i * (size_t)nd + (size_t)k] = sh[i];
	}
	free(demand);
	return 0;
}

void
shares_job_links(const struct deploy *d, const struct jobplan_link *links, const double *share,
		 struct jobplan_link *lk)
{
	for (int l = 0; l < d->topo->n_links; l++) {
		double ab = share != NULL ? share[2 * l] : capacity(d, links, l, 0);
		double ba = share != NULL ? share[2 * l + 1] : capacity(d, links, l, 1);

		/* A share of 0 would read as "the topology's capacity" (jobplan_link): the
		 * link is left out; a direction without share keeps a token capacity, so
		 * that a tree (which loads both) cannot use the link. */
		lk[l].up = (links == NULL || links[l].up) && (ab > 0 || ba > 0);
		lk[l].gbps_ab = ab > 0 ? ab : 1e-9;
		lk[l].gbps_ba = ba > 0 ? ba : 1e-9;
	}
}

/* Did job j's shares move from those of its last plan? */
static bool
moved(const struct dmn *m, const struct job *j)
{
	for (int k = 0; k < 2 * m->d->topo->n_links; k++) {
		double c = capacity(m->d, m->link, k / 2, k % 2);
		double dx = j->share[k] - j->planned_share[k];

		if (dx > c * SHARES_SAME || -dx > c * SHARES_SAME ||
		    (j->share[k] > 0) != (j->planned_share[k] > 0))
			return true;
	}
	return false;
}

void
shares_update(struct dmn *m)
{
	int nj = m->d->n_jobs, nd = 2 * m->d->topo->n_links, ng = m->d->n_gateways;
	double *share = calloc((size_t)nj * (size_t)nd + 1, sizeof(*share));
	bool *up = calloc((size_t)ng + 1, sizeof(*up));
	bool run[DEPLOY_JOBS_MAX] = {false};
	bool stale = m->shares_stale;

	for (int i = 0; i < nj; i++) {
		struct job *j = &m->jobs[i];

		if (j->share != NULL)
			continue;
		j->share = calloc((size_t)nd + 1, sizeof(*j->share));
		j->planned_share = calloc((size_t)nd + 1, sizeof(*j->planned_share));
		if (j->share == NULL || j->planned_share == NULL)
			shares_free(j);
		stale = true;
	}
	if (!stale || share == NULL || up == NULL)
		goto out;
	for (int g = 0; g < ng; g++)
		up[g] = m->gws[g].state == GW_UP;
	for (int i = 0; i < nj; i++)
		run[i] = m->jobs[i].running;
	if (shares_compute(m->d, up, m->link, run, share) != 0)
		goto out;
	m->shares_stale = false;
	for (int i = 0; i < nj; i++) {
		struct job *j = &m->jobs[i];

		if (j->share == NULL)
			continue;
		memcpy(j->share, share + (size_t)i * (size_t)nd, sizeof(*share) * (size_t)nd);
		if (j->dirty || !moved(m, j))
			continue;
		j->dirty = true;
		j->retry_in = 0;
		j->cause = CAUSE_SHARES;
		snprintf(j->reason, sizeof(j->reason), "its shares of the links moved");
	}
out:
	free(up);
	free(share);
}

/* The entry of (job, epoch) in a gateway's stats "jobs"; NULL if none. */
static const json_t *
job_entry(const json_t *jobs, json_int_t job, json_int_t epoch)
{
	const json_t *jo;
	size_t a;

	json_array_foreach (jobs, a, jo)
		if (json_integer_value(json_object_get(jo, "job")) == job &&
		    json_integer_value(json_object_get(jo, "epoch")) == epoch)
			return jo;
	return NULL;
}

void
shares_traffic(struct dmn *m, const json_t *before, const json_t *after, int64_t now)
{
	const json_t *jo;
	size_t a;

	json_array_foreach (after, a, jo) {
		json_int_t job = json_integer_value(json_object_get(jo, "job"));
		const json_t *was =
			job_entry(before, job, json_integer_value(json_object_get(jo, "epoch")));
		json_int_t done = json_integer_value(json_object_get(jo, "chunks_done"));
		json_int_t busy = json_integer_value(json_object_get(jo, "chunks_in_flight"));
		json_int_t done0 = json_integer_value(json_object_get(was, "chunks_done"));

		/* Chunks done since the last stats, or chunks in flight: a round going on, also
		 * one held up by a failure (so that a stalled job keeps its shares and the
		 * re-plans around the failure are not joined by the shares'), or abandoned by
		 * workers that died (its share kept until its slots are freed).
		 * In a gateway's first stats (a control process that starts, a replica that takes
		 * over) only chunks in flight count, so that the jobs that run are known before
		 * the first plans (and a live epoch planned with them is taken over). */
		if (busy == 0 && (done <= done0 || !json_is_array(before)))
			continue;
		for (int i = 0; i < m->d->n_jobs; i++)
			if (m->d->jobs[i].id == job)
				m->jobs[i].active_at = now;
	}
}

void
shares_touch(struct dmn *m, int ji, int64_t now)
{
	m->jobs[ji].active_at = now;
}

void
shares_activity(struct dmn *m, int64_t now)
{
	for (int i = 0; i < m->d->n_jobs; i++) {
		struct job *j = &m->jobs[i];
		int64_t was_after = hyst_idle_after(&j->idle, m->o->idle_ms);
		bool run = hyst_idle_step(&j->idle, j->running, j->active_at, now, m->o->idle_ms);
		int64_t after = hyst_idle_after(&j->idle, m->o->idle_ms);

		if (run == j->running)
			continue;
		j->running = run;
		m->shares_stale = true;
		if (!run)
			control_log("job %u: idle for %.1f s: its shares of the links go to the "
				    "jobs that run",
				    m->d->jobs[i].id, (double)(now - j->active_at) / 1e3);
		else if (after > was_after)
			control_log("job %u: running again %.1f s after it went idle: it shares "
				    "the links with the other jobs that run, and goes idle after "
				    "%.1f s without traffic from now on",
				    m->d->jobs[i].id,
				    (double)(j->active_at - j->idle.idle_at) / 1e3,
				    (double)after / 1e3);
		else
			control_log("job %u: running (its rounds go through the gateways): it "
				    "shares the links with the other jobs that run",
				    m->d->jobs[i].id);
	}
}

void
shares_links(struct dmn *m, int ji, struct jobplan_link *lk)
{
	struct job *j = &m->jobs[ji];

	shares_job_links(m->d, m->link, j->share, lk);
	if (j->share != NULL)
		memcpy(j->planned_share, j->share,
		       sizeof(*j->share) * 2 * (size_t)m->d->topo->n_links);
}

/* What the gateways of node v that are up handed to those of node u in job ji's live epoch
 * (first transmissions, or with retx its retransmissions), from their last stats. */
static uint64_t
job_sent(const struct dmn *m, int ji, int v, int u, bool retx)
{
	uint64_t bytes = 0;
	json_t *jo, *lk;
	size_t a, b;

	NODE_GWS(m, v, g)
	{
		if (m->gws[g].state != GW_UP)
			continue;
		json_array_foreach (m->gws[g].jobs, a, jo) {
			if (json_integer_value(json_object_get(jo, "job")) != m->d->jobs[ji].id ||
			    json_integer_value(json_object_get(jo, "epoch")) !=
				    m->jobs[ji].live_epoch)
				continue;
			json_array_foreach (json_object_get(jo, "links"), b, lk) {
				json_int_t id = json_integer_value(json_object_get(lk, "id"));

				NODE_GWS(m, u, h)
				if (id == m->d->gateways[h].id)
					bytes += retx ? (uint64_t)json_integer_value(
								json_object_get(lk, "retx_bytes")) :
							daemon_first_tx_bytes(lk);
			}
		}
	}
	return bytes;
}

json_t *
shares_json(const struct dmn *m, int ji)
{
	const struct topo *t = m->d->topo;
	const struct job *j = &m->jobs[ji];
	double *load = calloc(2 * (size_t)t->n_links + 1, sizeof(*load));
	json_t *a = json_array();

	if (load == NULL)
		return a;
	shares_plan_loads(j->live, t, load);
	for (int l = 0; l < t->n_links; l++) {
		double ab = j->share != NULL ? j->share[2 * l] : 0;
		double ba = j->share != NULL ? j->share[2 * l + 1] : 0;

		if (ab <= 0 && ba <= 0 && load[2 * l] <= 0 && load[2 * l + 1] <= 0)
			continue;
		json_array_append_new(
			a,
			json_pack("{s:i,s:s,s:s,s:[f,f],s:[f,f],s:[I,I],s:[I,I]}", "link", l, "a",
				  node_id(m, t->links[l].a), "b", node_id(m, t->links[l].b),
				  "share_gbps", ab, ba, "planned_gbps", load[2 * l],
				  load[2 * l + 1], "sent_bytes",
				  (json_int_t)job_sent(m, ji, t->links[l].a, t->links[l].b, false),
				  (json_int_t)job_sent(m, ji, t->links[l].b, t->links[l].a, false),
				  "retx_bytes",
				  (json_int_t)job_sent(m, ji, t->links[l].a, t->links[l].b, true),
				  (json_int_t)job_sent(m, ji, t->links[l].b, t->links[l].a, true)));
	}
	free(load);
	return a;
}
