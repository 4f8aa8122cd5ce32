/* SPDX-License-Identifier: BSD-3-Clause
 *
 * The daemon's own control API (api.h): its setup, the requests and the roles that may
 * make them, the answer to `status`, and workers joining through the control process with
 * their long polls. On the daemon's thread. No DPDK.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "api.h"
#include "clock.h"
#include "daemon_internal.h"
#include "elastic.h"
#include "elect.h"
#include "jobs.h"
#include "promsrv.h"
#include "revision.h"
#include "shares.h"
#include "tls_reload.h"

/* ---- status -------------------------------------------------------------------------- */

static const char *const gw_state_names[] = {"unknown", "up", "down"};

/* The links for `status`: per direction the planned and measured rates, the probes'
 * round trip and the capacity plans use. */
static json_t *
links_json(const struct dmn *m, int64_t t)
{
	const struct topo *tp = m->d->topo;
	json_t *arr = json_array();

	for (int l = 0; l < tp->n_links; l++) {
		json_t *dirs = json_array();

		for (int d = 0; d < 2; d++) {
			const struct lrate *r = &m->lr[2 * l + d];
			int v = d == 0 ? tp->links[l].a : tp->links[l].b;
			int u = d == 0 ? tp->links[l].b : tp->links[l].a;
			double nominal = d == 0 ? tp->links[l].gbps_ab : tp->links[l].gbps_ba;

			json_array_append_new(
				dirs,
				json_pack("{s:s,s:s,s:f,s:o,s:o,s:o,s:f,s:o}", "from",
					  node_id(m, v), "to", node_id(m, u), "planned_gbps",
					  r->at >= 0 ? r->planned_gbps : 0.0, "gbps",
					  r->gbps >= 0 ? json_real(r->gbps) : json_null(), "rtt_ms",
					  r->rtt_ms > 0 ? json_real(r->rtt_ms) : json_null(),
					  "base_rtt_ms",
					  r->base_rtt_ms > 0 ? json_real(r->base_rtt_ms) :
							       json_null(),
					  "capacity_gbps",
					  r->measured_gbps > 0 ? r->measured_gbps : nominal,
					  "measured_for_s",
					  r->measured_gbps > 0 ?
						  json_real((double)(r->measured_until - t) / 1e3) :
						  json_null()));
		}
		json_array_append_new(arr, json_pack("{s:s,s:s,s:b,s:o}", "a",
						     node_id(m, tp->links[l].a), "b",
						     node_id(m, tp->links[l].b), "up",
						     m->link[l].up, "directions", dirs));
	}
	return arr;
}

/*
 * How far job i's live epoch is: at each of its gateways that reported the epoch, the
 * chunks whose RESULT it has had over the chunks a round has there (its trees' chunk
 * ranges); "completed" is the least of these, so its integer part is the rounds every
 * gateway has finished since the epoch went live and its fraction how far the slowest is
 * into the next. null without trees or before a gateway reported.
 */
static json_t *
rounds_json(const struct dmn *m, int i)
{
	const struct job *j = &m->jobs[i];
	const struct jobplan *jp = j->live;
	uint64_t per_max = 0, in_flight = 0;
	double least = -1;
	bool any = false;
	json_t *jo;
	size_t a;

	for (int v = 0; jp != NULL && v < jp->n_gateways; v++) {
		const struct table *tb = jp->tables[v];
		uint64_t per = 0;

		if (tb == NULL || m->gws[v].state != GW_UP)
			continue;
		for (int k = 0; k < tb->n_trees; k++)
			per += tb->trees[k].chunk_count;
		json_array_foreach (m->gws[v].jobs, a, jo) {
			double r;

			if (json_integer_value(json_object_get(jo, "job")) != m->d->jobs[i].id ||
			    json_integer_value(json_object_get(jo, "epoch")) != j->live_epoch ||
			    !json_is_integer(json_object_get(jo, "chunks_done")))
				continue;
			in_flight += (uint64_t)json_integer_value(
				json_object_get(jo, "chunks_in_flight"));
			if (per == 0)
				continue;
			r = (double)json_integer_value(json_object_get(jo, "chunks_done")) /
			    (double)per;
			least = any && least < r ? least : r;
			per_max = per > per_max ? per : per_max;
			any = true;
		}
	}
	if (!any)
		return json_null();
	return json_pack("{s:f,s:I,s:I}", "completed", least, "chunks_per_round",
			 (json_int_t)per_max, "chunks_in_flight", (json_int_t)in_flight);
}

/* A crew job's grace window for `status`: as configured ("auto" for the adaptive one, with
 * its bound) and in force at the gateways of the live epoch that are up, from their last
 * stats (the smallest and the largest; null before any reported it). */
static json_t *
grace_json(const struct dmn *m, int i)
{
	const struct deploy_job *dj = &m->d->jobs[i];
	const struct job *j = &m->jobs[i];
	double lo = -1, hi = -1;
	json_t *jo;
	size_t a;

	for (int g = 0; j->live != NULL && g < m->d->n_gateways; g++) {
		if (m->gws[g].state != GW_UP)
			continue;
		json_array_foreach (m->gws[g].jobs, a, jo) {
			const json_t *ms =
				json_object_get(json_object_get(jo, "quorum"), "grace_ms");

			if (json_integer_value(json_object_get(jo, "job")) != dj->id ||
			    json_integer_value(json_object_get(jo, "epoch")) != j->live_epoch ||
			    !json_is_number(ms))
				continue;
			lo = lo < 0 || json_number_value(ms) < lo ? json_number_value(ms) : lo;
			hi = json_number_value(ms) > hi ? json_number_value(ms) : hi;
		}
	}
	return json_pack("{s:o,s:o,s:o}", "configured_ms",
			 dj->grace_auto ? json_string("auto") : json_integer(dj->grace_ms),
			 "max_ms", dj->grace_auto ? json_integer(dj->grace_ms) : json_null(),
			 "in_force_ms", lo < 0 ? json_null() : json_pack("[f,f]", lo, hi));
}

/* Counts by cause, for `status`: {"start": 1, ...}, the causes with none left out. */
static json_t *
causes_json(const uint64_t *n)
{
	json_t *o = json_object();

	for (int c = 0; c < CAUSE_COUNT; c++)
		if (n[c] > 0)
			json_object_set_new(o, cause_names[c], json_integer((json_int_t)n[c]));
	return o;
}

/* `status` for a client of tenant t ("": every job; else that tenant's only). */
static json_t *
status_json(const struct dmn *m, const char *tenant)
{
	json_t *o = json_object(), *gws = json_array(), *jobs = json_array();
	int64_t t = clock_now_ms();
	char ip[16];

	json_object_set_new(o, "program", json_string(PROG));
	json_object_set_new(o, "deployment", json_string(m->d->path));
	json_object_set_new(o, "topology", json_string(m->d->topo->name));
	json_object_set_new(o, "heartbeat_ms", json_integer(m->o->heartbeat_ms));
	json_object_set_new(o, "fail_after", json_integer(m->o->fail_after));
	json_object_set_new(o, "hysteresis",
			    json_pack("{s:I,s:I,s:i,s:i,s:i}", "min_epoch_ms",
				      (json_int_t)m->o->hyst.min_epoch_ms, "short_ms",
				      (json_int_t)m->o->hyst.short_ms, "short_samples",
				      m->o->hyst.short_samples, "replans_per_min",
				      m->o->hyst.replans_per_min, "failure_replans_per_min",
				      m->o->hyst.failure_replans_per_min));
	json_object_set_new(o, "uptime_s", json_real((double)(t - m->started) / 1e3));
	json_object_set_new(o, "election", elect_json(m));
	for (int v = 0; v < m->d->n_gateways; v++) {
		const struct gw *g = &m->gws[v];
		const struct deploy_gateway *dg = &m->d->gateways[v];
		json_t *go =
			json_pack("{s:s,s:s,s:i,s:i,s:s,s:s,s:s,s:i}", "node", node_id(m, dg->node),
				  "name", dg->name, "shard", dg->shard, "id", dg->id, "ipv4",
				  table_ipv4_format(dg->ipv4, ip), "socket", dg->socket, "state",
				  gw_state_names[g->state], "missed", g->missed);

		/* What its `version` answered when it came up; 0: older, or not asked. */
		json_object_set_new(go, "revision", json_integer(dg->revision));

		json_object_set_new(go, "last_heartbeat_ms_ago",
				    g->last_ok >= 0 ? json_integer(t - g->last_ok) : json_null());
		json_object_set_new(go, "rtt_ms",
				    g->last_ok >= 0 ? json_real(g->rtt_ms) : json_null());
		json_object_set_new(go, "rx_gbps",
				    g->rx_gbps >= 0 ? json_real(g->rx_gbps) : json_null());
		json_object_set_new(go, "tx_gbps",
				    g->tx_gbps >= 0 ? json_real(g->tx_gbps) : json_null());
		json_object_set_new(go, "chunks_completed", json_integer((json_int_t)g->chunks));
		json_object_set_new(go, "dropped", json_integer((json_int_t)g->dropped));
		json_object_set_new(go, "drops_per_s",
				    g->drops_per_s >= 0 ? json_real(g->drops_per_s) : json_null());
		json_object_set_new(go, "drops",
				    g->drops != NULL ? json_copy(g->drops) : json_object());
		if (g->state != GW_UP && g->error[0] != '\0')
			json_object_set_new(go, "error", json_string(g->error));
		json_array_append_new(gws, go);
	}
	for (int i = 0; i < m->d->n_jobs; i++) {
		const struct deploy_job *dj = &m->d->jobs[i];
		const struct job *j = &m->jobs[i];
		const struct jobplan *jp = j->live;
		json_t *jo =
			json_pack("{s:I,s:s,s:s,s:I}", "job", (json_int_t)dj->id, "algorithm",
				  deploy_algo_name(dj->algo), "dtype", table_dtype_name(dj->dtype),
				  "elements", (json_int_t)dj->elements);
		json_t *trees = json_array(), *members = json_array();

		if (!jobs_visible(m, tenant, i)) {
			json_decref(jo);
			json_decref(trees);
			json_decref(members);
			continue;
		}
		json_object_set_new(jo, "source",
				    json_string(j->spec != NULL ? "api" : "deployment"));
		json_object_set_new(jo, "tenant",
				    j->tenant[0] != '\0' ? json_string(j->tenant) : json_null());
		if (dj->algo == DEPLOY_ALGO_CREW) { /* a round completes at this many workers */
			json_object_set_new(jo, "min_workers",
					    json_integer(dj->min_workers != 0 ?
								 dj->min_workers :
								 (uint32_t)dj->n_workers));
			json_object_set_new(jo, "grace", grace_json(m, i));
		}
		json_object_set_new(jo, "epoch",
				    jp != NULL ? json_integer(j->live_epoch) : json_null());
		json_object_set_new(jo, "replans", causes_json(j->replans));
		json_object_set_new(jo, "replans_held", causes_json(j->held));
		json_object_set_new(jo, "replans_unchanged", causes_json(j->unchanged));
		json_object_set_new(jo, "replans_last_minute",
				    json_integer(hyst_recent(&j->hy, t)));
		json_object_set_new(jo, "replan_held_for_s",
				    j->dirty && j->holding && j->due > t ?
					    json_real((double)(j->due - t) / 1e3) :
					    json_null());
		json_object_set_new(jo, "state",
				    json_string(jp == NULL                  ? "not installed" :
						j->dirty || j->retry_in > 0 ? "live, re-planning" :
									      "live"));
		if (jp != NULL) {
			for (int v = 0; v < jp->n_gateways; v++)
				if (jp->tables[v] != NULL)
					json_array_append_new(members, json_string(gw_name(m, v)));
			json_object_set_new(jo, "live_for_s",
					    json_real((double)(t - j->live_since) / 1e3));
			json_object_set_new(jo, "workers", json_integer(jp->n_workers));
			json_object_set_new(jo, "membership", json_integer(jp->membership));
			/* Planned within its oldest gateway (docs/PROTOCOL.md 12). */
			json_object_set_new(jo, "revision", json_integer(jp->revision));
			json_object_set_new(jo, "chunk_bytes", json_integer(jp->chunk_bytes));
			json_object_set_new(jo, "rate_gbps", json_real(plan_total_rate(jp->plan)));
			json_object_set_new(jo, "predicted_seconds",
					    json_real(jp->plan->allreduce_seconds));
			for (int k = 0; k < jp->plan->n_trees; k++) {
				const struct plan_tree *tr = &jp->plan->trees[k];
				/* measured_gbps: the mean over the tree's link directions
				 * (tree_rates_update()); root_rx_gbps: all the root site's
				 * gateways receive. */
				double rx = -1;

				NODE_GWS(m, jp->node_of[tr->root], g)
				if (m->gws[g].state == GW_UP && m->gws[g].rx_gbps >= 0)
					rx = (rx > 0 ? rx : 0) + m->gws[g].rx_gbps;

				json_array_append_new(
					trees,
					json_pack("{s:i,s:s,s:f,s:f,s:f,s:o,s:o}", "tree", k,
						  "root", jp->topo->nodes[tr->root].id, "rate_gbps",
						  tr->rate_gbps, "share", tr->share, "height_ms",
						  plan_tree_height_ms(jp->topo, tr),
						  "measured_gbps",
						  k < j->n_rates && j->rates[k].gbps >= 0 ?
							  json_real(j->rates[k].gbps) :
							  json_null(),
						  "root_rx_gbps",
						  rx >= 0 ? json_real(rx) : json_null()));
			}
		}
		json_object_set_new(jo, "gateways", members);
		json_object_set_new(jo, "trees", trees);
		json_object_set_new(jo, "rounds", rounds_json(m, i));
		json_object_set_new(jo, "weight", json_real(dj->weight));
		json_object_set_new(jo, "running", json_boolean(j->running));
		json_object_set_new(
			jo, "idle_s",
			j->active_at > 0 ?
				json_real((double)(clock_now_ms() - j->active_at) / 1e3) :
				json_null());
		if (dj->elastic) /* its members now, the epoch's `workers` may lag */
			json_object_set_new(jo, "elastic",
					    json_pack("{s:i,s:i,s:i}", "workers", dj->n_workers,
						      "joined", j->n_members, "pending",
						      j->batch.joins + j->batch.leaves));
		json_object_set_new(jo, "links", shares_json(m, i));
		if (j->error[0] != '\0')
			json_object_set_new(jo, "error", json_string(j->error));
		json_array_append_new(jobs, jo);
	}
	json_object_set_new(o, "gateways", gws);
	json_object_set_new(o, "api", ctlsrv_json(m->srv));
	if (m->msrv != NULL)
		json_object_set_new(o, "metrics", promsrv_json(m->msrv));
	json_object_set_new(o, "links", links_json(m, t));
	json_object_set_new(o, "jobs", jobs);
	return o;
}

/* ---- workers joining through the control process ---------------------------------- */

/* The index of worker id w in job i, or -1. */
static int
worker_index(const struct dmn *m, int i, uint32_t w)
{
	const struct deploy_job *dj = &m->d->jobs[i];

	for (int k = 0; k < dj->n_workers; k++)
		if (dj->workers[k].w.id == w)
			return k;
	return -1;
}

/* Job i's live table for its worker k: its site's gateway's (with several, the one of
 * them whose table the site's workers read: jobplan.site_table), or NULL (no live epoch,
 * one without that worker's site, or a worker that joined before it went live). */
static const struct table *
worker_table(const struct dmn *m, int i, int k)
{
	const struct jobplan *jp = m->jobs[i].live;
	int v = m->d->jobs[i].workers[k].node;
	const struct member *mb = elastic_member(m, i, m->d->jobs[i].workers[k].w.id);

	if (mb != NULL && !mb->in) /* joined: no epoch with it yet */
		return NULL;
	return jp != NULL && v >= 0 && v < jp->n_nodes && jp->site_table[v] >= 0 ?
		       jp->tables[jp->site_table[v]] :
		       NULL;
}

/* The answer to a worker's request: its table if the live epoch is not `after` (or
 * has_after is false); else {"changed": false}. NULL with *errnum when nothing fits. */
static json_t *
worker_answer(const struct dmn *m, uint32_t id, int i, int k, bool has_after, uint32_t after)
{
	const struct table *tb = worker_table(m, i, k);
	const struct job *j = &m->jobs[i];
	json_t *r;

	if (tb != NULL && (!has_after || j->live_epoch != after)) {
		r = ctl_reply_ok(id);
		json_object_set_new(r, "job", json_integer(m->d->jobs[i].id));
		json_object_set_new(r, "epoch", json_integer(j->live_epoch));
		json_object_set_new(
			r, "gateway",
			json_string(
				gw_name(m, j->live->site_table[m->d->jobs[i].workers[k].node])));
		/* A worker gets its gateway's table without the link keys. */
		json_object_set_new(r, "table", table_to_json_public(tb));
		return r;
	}
	if (has_after) {
		r = ctl_reply_ok(id);
		json_object_set_new(r, "job", json_integer(m->d->jobs[i].id));
		json_object_set_new(r, "epoch",
				    tb != NULL ? json_integer(j->live_epoch) : json_null());
		json_object_set_new(r, "changed", json_false());
		return r;
	}
	return ctl_reply_error(true, id, EAGAIN,
			       "job %u has no live epoch through the gateway "
			       "of worker %u (%s) yet",
			       m->d->jobs[i].id, m->d->jobs[i].workers[k].w.id,
			       node_id(m, m->d->jobs[i].workers[k].node));
}

void
waiters_service(struct dmn *m)
{
	int64_t t = clock_now_ms();

	for (int n = m->n_waiters - 1; n >= 0; n--) {
		struct waiter *w = &m->waiters[n];

		if (w->job < 0 && w->left != 0) { /* its worker left the job (elastic.c) */
			ctlsrv_reply(m->srv, &w->ref,
				     ctl_reply_error(true, w->id, ENOENT,
						     "field 'worker': worker %u left job %u",
						     w->left, w->gone));
			m->waiters[n] = m->waiters[--m->n_waiters];
			continue;
		}
		if (w->job < 0) { /* its job was deleted */
			ctlsrv_reply(m->srv, &w->ref,
				     ctl_reply_error(true, w->id, ENOENT,
						     "field 'job': job %u was deleted", w->gone));
			m->waiters[n] = m->waiters[--m->n_waiters];
			continue;
		}
		const struct table *tb = worker_table(m, w->job, w->worker);
		bool due = tb != NULL && m->jobs[w->job].live_epoch != w->after;

		if (!due && t < w->deadline)
			continue;
		ctlsrv_reply(m->srv, &w->ref,
			     worker_answer(m, w->id, w->job, w->worker, true, w->after));
		m->waiters[n] = m->waiters[--m->n_waiters];
	}
}

int64_t
waiters_next_ms(const struct dmn *m)
{
	int64_t next = -1, t = clock_now_ms();

	for (int n = 0; n < m->n_waiters; n++) {
		int64_t left = m->waiters[n].deadline - t;

		if (next < 0 || left < next)
			next = left < 0 ? 0 : left;
	}
	return next;
}

/*
 * "worker": {job, worker, after?, wait_ms?}. A worker's certificate must name it
 * ("worker-ID") and the deployment must list it in that job. Without `after`: the table
 * of its gateway in the live epoch. With `after`: that table once the live epoch is
 * another, waiting up to wait_ms (a long poll), else {"changed": false}.
 */
static json_t *
op_worker(struct dmn *m, struct ctlsrv_client *cl, const json_t *req, uint32_t id)
{
	char err[CTL_ERR_MAX], name[32];
	uint32_t job = 0, wid = 0, after = 0, wait_ms = 0;
	int i, k;

	if (ctl_args_unpack(req, err, sizeof(err), "{s:u,s:u,s?u,s?u}", "job", &job, "worker", &wid,
			    "after", &after, "wait_ms", &wait_ms) != 0)
		return ctl_reply_error(true, id, EINVAL, "%s", err);
	if (wait_ms > DAEMON_WAIT_MS_MAX)
		return ctl_reply_error(true, id, EINVAL, "field 'wait_ms': at most %d",
				       DAEMON_WAIT_MS_MAX);
	snprintf(name, sizeof(name), "worker-%u", wid);
	for (i = 0; i < m->d->n_jobs && m->d->jobs[i].id != job; i++)
		;
	k = i < m->d->n_jobs ? worker_index(m, i, wid) : -1;
	if (ctlsrv_client_role(cl) == CTLTLS_ROLE_WORKER && !ctlsrv_client_named(cl, name) &&
	    (k < 0 || !elastic_may_speak(m, cl, i, k))) {
		ctlsrv_refuse(m->srv, cl, CTLSRV_REF_FORBIDDEN,
			      "the certificate does not name "
			      "%s",
			      name);
		return ctl_reply_error(true, id, EPERM,
				       "field 'worker': this certificate does "
				       "not name %s",
				       name);
	}
	if (k < 0) {
		ctlsrv_refuse(m->srv, cl, CTLSRV_REF_FORBIDDEN,
			      "the deployment has no worker %u "
			      "in job %u",
			      wid, job);
		if (i == m->d->n_jobs && jobs_was_deleted(m, job))
			return ctl_reply_error(true, id, ENOENT,
					       "field 'job': job %u was deleted (worker %u)", job,
					       wid);
		return ctl_reply_error(true, id, ENOENT,
				       i < m->d->n_jobs ?
					       "field 'worker': job %u has no worker %u" :
					       "field 'job': no job %u (worker %u)",
				       job, wid);
	}
	bool has_after = json_object_get(req, "after") != NULL;
	const struct table *tb = worker_table(m, i, k);
	struct member *mb = elastic_member(m, i, wid);

	if (mb != NULL) /* a request renews a joined worker's membership */
		mb->seen = clock_now_ms();

	if (has_after && wait_ms > 0 && (tb == NULL || m->jobs[i].live_epoch == after) &&
	    m->n_waiters < DAEMON_WAITERS_MAX) {
		struct waiter *w = &m->waiters[m->n_waiters++];

		ctlsrv_defer(cl, &w->ref);
		w->id = id;
		w->job = i;
		w->worker = k;
		w->after = after;
		w->deadline = clock_now_ms() + wait_ms;
		return NULL;
	}
	return worker_answer(m, id, i, k, has_after, after);
}

/* ---- the daemon's own API ------------------------------------------------------------ */

/* Whether role may call op: a worker joins (and joins, renews and leaves an elastic job),
 * a monitor reads, control and the unix socket may do everything. */
static bool
role_may(enum ctltls_role role, const char *op)
{
	bool reads = strcmp(op, "ping") == 0 || strcmp(op, "version") == 0 ||
		     strcmp(op, "status") == 0 || strcmp(op, "job_list") == 0;

	switch (role) {
	case CTLTLS_ROLE_WORKER:
		return strcmp(op, "ping") == 0 || strcmp(op, "version") == 0 ||
		       strcmp(op, "worker") == 0 || elastic_is_op(op);
	case CTLTLS_ROLE_MONITOR:
		return reads;
	default:
		return true;
	}
}

static json_t *
handle(void *arg, struct ctlsrv_client *cl, const json_t *req)
{
	struct dmn *m = arg;
	char err[CTL_ERR_MAX], t[DEPLOY_TENANT_NAME_MAX + 1];
	const char *op = NULL;
	uint32_t id = 0, job = 0;
	json_t *r;
	int rc = ctl_request_check(req, &id, &op, err, sizeof(err));

	if (rc != 0) {
		bool has_id = ctl_request_id(req, &id);

		return ctl_reply_error(has_id, id, -rc, "%s", err);
	}
	if (!role_may(ctlsrv_client_role(cl), op)) {
		ctlsrv_refuse(m->srv, cl, CTLSRV_REF_FORBIDDEN, "op '%s' is not for the role '%s'",
			      op, ctltls_role_name(ctlsrv_client_role(cl)));
		return ctl_reply_error(true, id, EPERM,
				       "field 'op': '%s' is not for a "
				       "certificate of role '%s'",
				       op, ctltls_role_name(ctlsrv_client_role(cl)));
	}
	if (!elect_leading(m) && elect_refuses(op)) /* a follower (elect.h) */
		return elect_refusal(m, id, op);
	if (jobs_client_tenant(cl, t) != 0)
		return jobs_refuse_tenant(m, cl, id);
	if (jobs_is_op(op))
		return jobs_op(m, t, op, req, id);
	if (elastic_is_op(op))
		return elastic_op(m, cl, t, op, req, id);
	if (strcmp(op, "ping") == 0 || strcmp(op, "version") == 0 || strcmp(op, "status") == 0) {
		json_t *res =
			strcmp(op, "status") == 0  ? status_json(m, t) :
			strcmp(op, "version") == 0 ? json_pack("{s:s,s:i,s:i}", "program", PROG,
							       "protocol", CTL_PROTOCOL_VERSION,
							       "revision", GEOREDUCE_REVISION) :
						     json_object();

		rc = ctl_args_unpack(req, err, sizeof(err), "{}");
		r = rc == 0 ? ctl_reply_ok(id) : ctl_reply_error(true, id, EINVAL, "%s", err);
		if (rc == 0 && r != NULL)
			json_object_update(r, res);
		json_decref(res);
		return r;
	}
	if (strcmp(op, "worker") == 0)
		return op_worker(m, cl, req, id);
	if (strcmp(op, "reload_tls") == 0)
		return tls_reload_op(m, req, id);
	if (strcmp(op, "replan") == 0) {
		bool one = json_object_get(req, "job") != NULL;

		if (ctl_args_unpack(req, err, sizeof(err), "{s?u}", "job", &job) != 0)
			return ctl_reply_error(true, id, EINVAL, "%s", err);
		r = json_array();
		for (int i = 0; i < m->d->n_jobs; i++) {
			if ((one && m->d->jobs[i].id != job) || !jobs_visible(m, t, i))
				continue;
			m->jobs[i].dirty = true;
			m->jobs[i].cause = CAUSE_REQUESTED;
			snprintf(m->jobs[i].reason, sizeof(m->jobs[i].reason), "replan requested");
			json_array_append_new(r, json_integer(m->d->jobs[i].id));
		}
		if (json_array_size(r) == 0) {
			json_decref(r);
			return one ? ctl_reply_error(true, id, ENOENT, "field 'job': no job %u",
						     job) :
				     ctl_reply_error(true, id, ENOENT, "no job to re-plan");
		}
		json_t *ok = ctl_reply_ok(id);

		json_object_set_new(ok, "jobs", r);
		return ok;
	}
	return ctl_reply_error(true, id, EOPNOTSUPP, "field 'op': unknown op '%s'", op);
}

static void
api_log(void *arg, const char *line)
{
	(void)arg;
	control_log("%s", line);
}

int
api_setup(struct dmn *m)
{
	const struct deploy_tls *t = &m->d->tls;
	const char *listen = m->o->listen != NULL ? m->o->listen :
			     t->listen[0] != '\0' ? t->listen :
						    NULL;
	char err[CTL_ERR_MAX];
	struct ctlsrv_opts so = {
		.unix_path = m->o->socket,
		.roles = 1u << CTLTLS_ROLE_CONTROL | 1u << CTLTLS_ROLE_MONITOR |
			 1u << CTLTLS_ROLE_WORKER,
		.max_per_role = CTLSRV_PER_ROLE_DEFAULT,
		.role_max = {[CTLTLS_ROLE_WORKER] = DAEMON_WAITERS_MAX},
		.max_handshakes = CTLSRV_HANDSHAKES_DEFAULT,
		.handshake_ms = CTLSRV_HANDSHAKE_MS_DEFAULT,
		.idle_ms = CTLSRV_IDLE_MS_DEFAULT,
		.handle = handle,
		.log = api_log,
		.arg = m,
	};

	m->waiters = calloc(DAEMON_WAITERS_MAX, sizeof(*m->waiters));
	if (m->waiters == NULL) {
		control_log("cannot start: out of memory");
		return -ENOMEM;
	}
	if (t->on) {
		m->tls_client = ctltls_ctx_new(false, t->cert, t->key, t->ca, DEPLOY_TLS_CRL(t),
					       err, sizeof(err));
		if (m->tls_client == NULL) {
			control_log("cannot start: tls: %s", err);
			return -EINVAL;
		}
		for (int v = 0; v < m->d->n_gateways; v++)
			install_gw_tls(&m->gws[v].conn, m->tls_client, gw_name(m, v),
				       CTLTLS_ROLE_GATEWAY);
	}
	if (listen != NULL) {
		if (!t->on) {
			control_log("cannot start: --listen %s needs the deployment's \"tls\"",
				    listen);
			return -EINVAL;
		}
		m->tls_server = ctltls_ctx_new(true, t->cert, t->key, t->ca, DEPLOY_TLS_CRL(t), err,
					       sizeof(err));
		if (m->tls_server == NULL) {
			control_log("cannot start: tls: %s", err);
			return -EINVAL;
		}
		so.tls_listen = listen;
		so.tls = m->tls_server;
	}
	m->srv = ctlsrv_create(&so, err, sizeof(err));
	if (m->srv == NULL) {
		control_log("cannot listen: %s", err);
		return -EADDRINUSE;
	}
	if (listen != NULL)
		control_log("API over TLS on %s", listen);
	return 0;
}
