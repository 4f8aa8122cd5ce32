/* SPDX-License-Identifier: BSD-3-Clause
 *
 * Elastic membership (elastic.h): the ops `join`, `leave` and `heartbeat`, the members'
 * renewals and their timeout, and the batches of changes that make one epoch each. A
 * change edits the job's object and parses it again with the deployment's parser, as
 * job_update does, so that a joined worker is checked as a declared one is. On the
 * daemon's thread. No DPDK.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "clock.h"
#include "daemon_internal.h"
#include "elastic.h"
#include "jobs.h"
#include "shares.h"

bool
elastic_is_op(const char *op)
{
	return strcmp(op, "join") == 0 || strcmp(op, "leave") == 0 || strcmp(op, "heartbeat") == 0;
}

struct member *
elastic_member(const struct dmn *m, int i, uint32_t w)
{
	const struct job *j = &m->jobs[i];

	for (int n = 0; n < j->n_members; n++)
		if (j->members[n].id == w)
			return &j->members[n];
	return NULL;
}

/* Whether cl's certificate names site v ("site-NODE"); the unix socket and a control
 * certificate speak for every site. */
static bool
names_site(const struct dmn *m, const struct ctlsrv_client *cl, int v)
{
	char name[DEPLOY_NAME_MAX + sizeof(ELASTIC_SITE_NAME)];

	if (ctlsrv_client_role(cl) != CTLTLS_ROLE_WORKER)
		return true;
	snprintf(name, sizeof(name), ELASTIC_SITE_NAME "%s", node_id(m, v));
	return ctlsrv_client_named(cl, name);
}

bool
elastic_may_speak(const struct dmn *m, const struct ctlsrv_client *cl, int i, int k)
{
	const struct deploy_worker *dw = &m->d->jobs[i].workers[k];

	return elastic_member(m, i, dw->w.id) != NULL && names_site(m, cl, dw->node);
}

void
elastic_epoch_live(struct dmn *m, int i)
{
	for (int n = 0; n < m->jobs[i].n_members; n++)
		m->jobs[i].members[n].in = true;
}

/* The index of worker w in job i's object, or -1. */
static int
worker_at(const struct dmn *m, int i, uint32_t w)
{
	for (int k = 0; k < m->d->jobs[i].n_workers; k++)
		if (m->d->jobs[i].workers[k].w.id == w)
			return k;
	return -1;
}

/* A parser's error about the new worker as the request's: "field 'job.workers[N].KEY':"
 * becomes "field 'KEY':" (the request's own field); another stays as it is. */
static json_t *
parse_refusal(uint32_t id, const char *err)
{
	const char *f = strstr(err, "field 'job.workers[");
	const char *dot = f != NULL ? strstr(f, "].") : NULL;

	if (dot != NULL)
		return ctl_reply_error(true, id, EINVAL, "field '%s", dot + 2);
	if (f != NULL)
		return ctl_reply_error(true, id, EINVAL, "%s", f);
	return ctl_reply_error(true, id, EINVAL, "%s", err);
}

/*
 * Job i takes spec (owned) as its object: parsed as job_update parses, kept in the state
 * directory, its workers replaced. NULL once done, else the error response (nothing
 * changed).
 */
static json_t *
take_spec(struct dmn *m, int i, json_t *spec, uint32_t id)
{
	char err[DEPLOY_ERR_MAX];
	struct deploy_job nj;

	if (deploy_job_parse(m->d, spec, i, "join", "job", &nj, err, sizeof(err)) != 0) {
		json_decref(spec);
		return parse_refusal(id, err);
	}
	if (jobs_replace(m, i, &nj, spec, err, sizeof(err)) != 0)
		return ctl_reply_error(true, id, EIO, "job %u unchanged: %s", nj.id, err);
	m->shares_stale = true; /* its sites may have changed */
	return NULL;
}

/* The smallest worker id that neither a gateway nor a worker of job i has; 0: none. */
static uint32_t
free_worker_id(const struct dmn *m, int i)
{
	for (uint32_t w = 1; w <= TABLE_ID_MAX; w++) {
		bool used = worker_at(m, i, w) >= 0;

		for (int g = 0; g < m->d->n_gateways && !used; g++)
			used = m->d->gateways[g].id == w;
		if (!used)
			return w;
	}
	return 0;
}

/* Job jid for an elastic op of client cl of tenant t: its index, or -1 with *resp. */
static int
elastic_job(const struct dmn *m, const char *t, uint32_t jid, uint32_t id, json_t **resp)
{
	int i;

	for (i = 0; i < m->d->n_jobs && m->d->jobs[i].id != jid; i++)
		;
	if (i == m->d->n_jobs || !jobs_visible(m, t, i)) {
		*resp = ctl_reply_error(true, id, ENOENT, "field 'job': no job %u", jid);
		return -1;
	}
	if (!m->d->jobs[i].elastic || m->jobs[i].spec == NULL) {
		*resp = ctl_reply_error(true, id, EPERM,
					"field 'job': job %u is not elastic (its object has no "
					"\"elastic\": true)",
					jid);
		return -1;
	}
	return i;
}

/* The reply to a join of worker w to job i. */
static json_t *
joined_reply(const struct dmn *m, int i, uint32_t w, uint32_t id, bool again)
{
	const struct job *j = &m->jobs[i];
	json_t *r = ctl_reply_ok(id);

	json_object_set_new(r, "job", json_integer(m->d->jobs[i].id));
	json_object_set_new(r, "worker", json_integer(w));
	json_object_set_new(r, "again", json_boolean(again));
	json_object_set_new(r, "epoch",
			    j->live != NULL ? json_integer(j->live_epoch) : json_null());
	json_object_set_new(r, "heartbeat_ms", json_integer(m->o->member_timeout_ms / 5));
	json_object_set_new(r, "timeout_ms", json_integer(m->o->member_timeout_ms));
	return r;
}

/* Room for one more member of job i: 0 or -ENOMEM. */
static int
member_room(struct job *j)
{
	struct member *mb;

	if (j->n_members < j->members_cap)
		return 0;
	mb = realloc(j->members, (size_t)(j->members_cap * 2 + 8) * sizeof(*mb));
	if (mb == NULL)
		return -ENOMEM;
	j->members = mb;
	j->members_cap = j->members_cap * 2 + 8;
	return 0;
}

/*
 * "join": {job, node, ipv4, port, worker?}. A worker not declared in job's object joins
 * it at site node, reached at ipv4:port, as worker id `worker` or the smallest free one.
 * A join again from the same site, address and port (a restarted worker) is the same
 * member, renewed.
 */
static json_t *
op_join(struct dmn *m, struct ctlsrv_client *cl, const char *t, const json_t *req, uint32_t id)
{
	char err[CTL_ERR_MAX];
	const char *node = NULL, *ipv4 = NULL;
	uint32_t jid = 0, port = 0, w = 0, addr;
	json_t *r = NULL, *spec;
	int i, v;

	if (ctl_args_unpack(req, err, sizeof(err), "{s:u,s:s,s:s,s:u,s?u}", "job", &jid, "node",
			    &node, "ipv4", &ipv4, "port", &port, "worker", &w) != 0)
		return ctl_reply_error(true, id, EINVAL, "%s", err);
	if (port < 1 || port > UINT16_MAX)
		return ctl_reply_error(true, id, EINVAL, "field 'port': expected 1 .. 65535");
	if (table_ipv4_parse(ipv4, &addr) != 0)
		return ctl_reply_error(true, id, EINVAL, "field 'ipv4': '%.40s' is not an address",
				       ipv4);
	if (json_object_get(req, "worker") != NULL && (w < 1 || w > TABLE_ID_MAX))
		return ctl_reply_error(true, id, EINVAL, "field 'worker': expected 1 .. %d",
				       TABLE_ID_MAX);
	v = topo_node_index(m->d->topo, node);
	if (v < 0)
		return ctl_reply_error(true, id, EINVAL,
				       "field 'node': '%.64s' is not a site of topology %s", node,
				       m->d->topo->name);
	if (!names_site(m, cl, v)) {
		ctlsrv_refuse(m->srv, cl, CTLSRV_REF_FORBIDDEN,
			      "the certificate does not name " ELASTIC_SITE_NAME "%s", node);
		return ctl_reply_error(
			true, id, EPERM,
			"field 'node': this certificate does not name " ELASTIC_SITE_NAME "%s",
			node);
	}
	i = elastic_job(m, t, jid, id, &r);
	if (i < 0)
		return r;
	for (int k = 0; k < m->d->jobs[i].n_workers; k++) {
		const struct deploy_worker *dw = &m->d->jobs[i].workers[k];
		struct member *mb = elastic_member(m, i, dw->w.id);

		if (dw->w.ipv4 != addr || dw->w.port != port)
			continue;
		if (mb == NULL || dw->node != v || (w != 0 && w != dw->w.id))
			return ctl_reply_error(true, id, EEXIST,
					       "field 'port': %s:%u is worker %u's in job %u", ipv4,
					       port, dw->w.id, jid);
		mb->seen = clock_now_ms(); /* the same worker again */
		return joined_reply(m, i, dw->w.id, id, true);
	}
	if (w != 0 && worker_at(m, i, w) >= 0)
		return ctl_reply_error(true, id, EEXIST, "field 'worker': job %u has a worker %u",
				       jid, w);
	if (m->d->jobs[i].max_workers != 0 &&
	    (uint32_t)m->d->jobs[i].n_workers >= m->d->jobs[i].max_workers)
		return ctl_reply_error(true, id, ENOSPC,
				       "field 'job': job %u has %d workers, its max_workers", jid,
				       m->d->jobs[i].n_workers);
	if (w == 0)
		w = free_worker_id(m, i);
	if (w == 0 || member_room(&m->jobs[i]) != 0)
		return ctl_reply_error(true, id, ENOSPC, "field 'job': no room for a worker");
	spec = json_deep_copy(m->jobs[i].spec);
	if (spec == NULL)
		return ctl_reply_error(true, id, ENOMEM, "out of memory");
	json_array_append_new(json_object_get(spec, "workers"),
			      json_pack("{s:s,s:I,s:s,s:I}", "node", node, "id", (json_int_t)w,
					"ipv4", ipv4, "port", (json_int_t)port));
	/* A member before the file is written, so that it is written with it. */
	m->jobs[i].members[m->jobs[i].n_members++] =
		(struct member){.id = (uint16_t)w, .seen = clock_now_ms()};
	r = take_spec(m, i, spec, id);
	if (r != NULL) {
		m->jobs[i].n_members--;
		return r;
	}
	hyst_batch_note(&m->jobs[i].batch, true, clock_now_ms());
	shares_touch(m, i, clock_now_ms()); /* its rounds are about to start */
	control_log("job %u: worker %u joined at %s (%s:%u); planned with the batch of %d ms", jid,
		    w, node, ipv4, port, m->o->batch_ms);
	return joined_reply(m, i, w, id, false);
}

/* Job i without its member w (why: for the log). NULL once done, else the error
 * response. Its long polls are answered that it left. */
static json_t *
member_remove(struct dmn *m, int i, uint32_t w, uint32_t id, const char *why)
{
	struct job *j = &m->jobs[i];
	struct member *mb = elastic_member(m, i, w), was = *mb;
	int k = worker_at(m, i, w);
	json_t *spec, *r;

	spec = json_deep_copy(j->spec);
	if (spec == NULL)
		return ctl_reply_error(true, id, ENOMEM, "out of memory");
	json_array_remove(json_object_get(spec, "workers"), (size_t)k);
	*mb = j->members[--j->n_members]; /* not a member in the file written */
	r = take_spec(m, i, spec, id);
	if (r != NULL) {
		j->members[j->n_members++] = was;
		return r;
	}
	for (int n = 0; n < m->n_waiters; n++) {
		struct waiter *wt = &m->waiters[n];

		if (wt->job != i)
			continue;
		if (wt->worker == k) { /* answered by waiters_service() */
			wt->job = -1;
			wt->gone = m->d->jobs[i].id;
			wt->left = w;
		} else if (wt->worker > k) {
			wt->worker--;
		}
	}
	hyst_batch_note(&j->batch, false, clock_now_ms());
	control_log("job %u: worker %u left (%s); planned with the batch of %d ms",
		    m->d->jobs[i].id, w, why, m->o->batch_ms);
	return NULL;
}

/* "leave" {job, worker} and "heartbeat" {job, worker}: of a member, from a client that
 * may speak for it. */
static json_t *
op_member(struct dmn *m, struct ctlsrv_client *cl, const char *t, const char *op, const json_t *req,
	  uint32_t id)
{
	char err[CTL_ERR_MAX];
	uint32_t jid = 0, w = 0;
	json_t *r = NULL;
	struct member *mb;
	int i, k;

	if (ctl_args_unpack(req, err, sizeof(err), "{s:u,s:u}", "job", &jid, "worker", &w) != 0)
		return ctl_reply_error(true, id, EINVAL, "%s", err);
	i = elastic_job(m, t, jid, id, &r);
	if (i < 0)
		return r;
	k = worker_at(m, i, w);
	mb = elastic_member(m, i, w);
	if (k < 0)
		return ctl_reply_error(true, id, ENOENT, "field 'worker': job %u has no worker %u",
				       jid, w);
	if (mb == NULL)
		return ctl_reply_error(true, id, EPERM,
				       "field 'worker': worker %u is declared in job %u's object, "
				       "it did not join",
				       w, jid);
	if (!elastic_may_speak(m, cl, i, k)) {
		ctlsrv_refuse(m->srv, cl, CTLSRV_REF_FORBIDDEN,
			      "the certificate does not name " ELASTIC_SITE_NAME "%s",
			      node_id(m, m->d->jobs[i].workers[k].node));
		return ctl_reply_error(
			true, id, EPERM,
			"field 'worker': this certificate does not name " ELASTIC_SITE_NAME "%s",
			node_id(m, m->d->jobs[i].workers[k].node));
	}
	if (strcmp(op, "heartbeat") == 0) {
		mb->seen = clock_now_ms();
		r = ctl_reply_ok(id);
		json_object_set_new(r, "epoch",
				    m->jobs[i].live != NULL ? json_integer(m->jobs[i].live_epoch) :
							      json_null());
		json_object_set_new(r, "in", json_boolean(mb->in));
		return r;
	}
	r = member_remove(m, i, w, id, "leave");
	if (r != NULL)
		return r;
	r = ctl_reply_ok(id);
	json_object_set_new(r, "job", json_integer(jid));
	json_object_set_new(r, "worker", json_integer(w));
	return r;
}

json_t *
elastic_op(struct dmn *m, struct ctlsrv_client *cl, const char *t, const char *op,
	   const json_t *req, uint32_t id)
{
	if (strcmp(op, "join") == 0)
		return op_join(m, cl, t, req, id);
	return op_member(m, cl, t, op, req, id);
}

void
elastic_service(struct dmn *m)
{
	int64_t now = clock_now_ms(), due;
	int joins, leaves;

	for (int i = 0; i < m->d->n_jobs; i++) {
		struct job *j = &m->jobs[i];

		for (int n = j->n_members - 1; n >= 0; n--) {
			char why[64];
			json_t *r;

			if (n >= j->n_members ||
			    !hyst_member_expired(j->members[n].seen, m->o->member_timeout_ms, now))
				continue;
			snprintf(why, sizeof(why), "not heard from for %d ms",
				 m->o->member_timeout_ms);
			r = member_remove(m, i, j->members[n].id, 0, why);
			if (r != NULL) {
				control_log("job %u: worker %u stays: %s", m->d->jobs[i].id,
					    j->members[n].id,
					    json_string_value(json_object_get(r, "error")));
				json_decref(r);
			}
		}
		if (!hyst_batch_due(&j->batch, m->o->batch_ms, now, &joins, &leaves, &due))
			continue;
		j->dirty = true;
		j->retry_in = 0;
		j->cause = CAUSE_MEMBERSHIP;
		snprintf(j->reason, sizeof(j->reason), "%d workers joined, %d left", joins, leaves);
	}
}

int64_t
elastic_next_ms(const struct dmn *m)
{
	int64_t next = -1, now = clock_now_ms();

	for (int i = 0; i < m->d->n_jobs; i++) {
		const struct job *j = &m->jobs[i];
		int64_t at =
			j->batch.joins + j->batch.leaves > 0 ? j->batch.first + m->o->batch_ms : -1;

		for (int n = 0; n < j->n_members; n++) {
			int64_t e = j->members[n].seen + m->o->member_timeout_ms;

			at = at < 0 || e < at ? e : at;
		}
		if (at >= 0 && (next < 0 || at - now < next))
			next = at - now < 0 ? 0 : at - now;
	}
	return next;
}

json_t *
elastic_state_json(const struct dmn *m, int i)
{
	json_t *a;

	if (m->jobs[i].n_members == 0)
		return NULL;
	a = json_array();
	for (int n = 0; n < m->jobs[i].n_members; n++)
		json_array_append_new(a, json_integer(m->jobs[i].members[n].id));
	return a;
}

void
elastic_state_load(struct dmn *m, int i, const json_t *joined)
{
	const json_t *v;
	size_t n;

	json_array_foreach (joined, n, v) {
		uint32_t w = (uint32_t)json_integer_value(v);

		if (!json_is_integer(v) || worker_at(m, i, w) < 0 ||
		    elastic_member(m, i, w) != NULL || member_room(&m->jobs[i]) != 0)
			continue;
		m->jobs[i].members[m->jobs[i].n_members++] =
			(struct member){.id = (uint16_t)w, .seen = clock_now_ms()};
	}
}

void
elastic_free(struct job *j)
{
	free(j->members);
	j->members = NULL;
	j->n_members = j->members_cap = 0;
}
