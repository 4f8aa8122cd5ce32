/* SPDX-License-Identifier: BSD-3-Clause
 *
 * The job ops of the control API (jobs.h): job_create, job_update, job_delete and
 * job_list, the tenants that own the jobs and their quotas, and the removal of a deleted
 * job from every gateway. The state directory is jobs_state.c. On the daemon's thread.
 * No DPDK.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "clock.h"
#include "daemon_internal.h"
#include "elastic.h"
#include "health.h"
#include "jobs.h"
#include "jsonutil.h"
#include "shares.h"

/* ---- tenants ------------------------------------------------------------------------- */

int
jobs_client_tenant(const struct ctlsrv_client *cl, char *out)
{
	char t[CTLTLS_TENANT_MAX + 1];
	int rc = ctlsrv_client_tenant(cl, t);

	out[0] = '\0';
	if (rc < 0)
		return -EINVAL;
	if (rc > 0)
		snprintf(out, DEPLOY_TENANT_NAME_MAX + 1, "%s", t);
	return 0;
}

json_t *
jobs_refuse_tenant(struct dmn *m, struct ctlsrv_client *cl, uint32_t id)
{
	ctlsrv_refuse(m->srv, cl, CTLSRV_REF_FORBIDDEN, "a malformed tenant URI");
	return ctl_reply_error(true, id, EPERM,
			       "this certificate names its tenant badly (one URI %sNAME, NAME 1 "
			       "to %d letters, digits, '.', '_', '-')",
			       CTLTLS_TENANT_URI, DEPLOY_TENANT_NAME_MAX);
}

bool
jobs_visible(const struct dmn *m, const char *t, int i)
{
	return t[0] == '\0' || strcmp(m->jobs[i].tenant, t) == 0;
}

bool
jobs_was_deleted(const struct dmn *m, uint32_t id)
{
	for (int k = 0; k < m->n_deleted; k++)
		if (m->deleted[k] == id)
			return true;
	return false;
}

/* The index of job id, or -1. */
static int
job_index(const struct dmn *m, uint32_t id)
{
	for (int i = 0; i < m->d->n_jobs; i++)
		if (m->d->jobs[i].id == id)
			return i;
	return -1;
}

/* A gateway that has not acknowledged the removal of job id, or -1. */
static int
removal_pending(const struct dmn *m, uint32_t id)
{
	for (int k = 0; k < m->n_removals; k++)
		if (m->removals[k].job == id)
			return m->removals[k].gw;
	return -1;
}

/* A job's WAN weight, from its job object ("weight", 1 without). */
static double
spec_weight(const json_t *spec)
{
	const json_t *w = json_object_get(spec, "weight");

	return json_is_number(w) ? json_number_value(w) : 1.0;
}

/* A job's slot cap: its slots.max, else the compiler's cap. */
static uint64_t
job_slots(const struct deploy_job *j)
{
	return j->slots_max != 0 ? j->slots_max : TABLE_SLOTS_MAX;
}

/*
 * Whether tenant t may hold job nj (job object spec) beside its other jobs (but job skip,
 * which nj replaces): an error response naming the quota it would pass, or NULL. path is
 * where the job object is in the request.
 */
static json_t *
quota_check(const struct dmn *m, const char *t, int skip, const struct deploy_job *nj,
	    const json_t *spec, const char *path, uint32_t id)
{
	const struct deploy_tenant *q = deploy_tenant_find(m->d, t);
	uint64_t slots = job_slots(nj);
	double weight = spec_weight(spec);
	uint32_t jobs = 1;

	if (t[0] == '\0')
		return NULL;
	if (q == NULL)
		return ctl_reply_error(true, id, EPERM,
				       "field '%s': tenant '%s' is not in the deployment's "
				       "\"tenants\": it may not create jobs",
				       path, t);
	for (int i = 0; i < m->d->n_jobs; i++) {
		if (i == skip || m->jobs[i].spec == NULL || strcmp(m->jobs[i].tenant, t) != 0)
			continue;
		jobs++;
		slots += job_slots(&m->d->jobs[i]);
		weight += spec_weight(m->jobs[i].spec);
	}
	if (q->jobs != 0 && jobs > q->jobs)
		return ctl_reply_error(true, id, EDQUOT,
				       "field '%s': tenant '%s' has %u jobs already, its quota",
				       path, t, jobs - 1);
	if (q->slots != 0 && slots > q->slots)
		return ctl_reply_error(true, id, EDQUOT,
				       "field '%s.slots.max': tenant '%s' would hold %llu slots "
				       "with this job's %llu (without slots.max, %d), its quota "
				       "is %llu",
				       path, t, (unsigned long long)slots,
				       (unsigned long long)job_slots(nj), TABLE_SLOTS_MAX,
				       (unsigned long long)q->slots);
	if (q->weight > 0 && weight > q->weight * (1 + 1e-9))
		return ctl_reply_error(true, id, EDQUOT,
				       "field '%s.weight': tenant '%s' would hold a weight of %g "
				       "with this job's %g, its quota is %g",
				       path, t, weight, spec_weight(spec), q->weight);
	return NULL;
}

/* ---- removing a deleted job from the gateways ----------------------------------------- */

/* Ask gateway v to remove job id: true once it has (or holds no such job). */
static bool
remove_on(struct dmn *m, int v, uint32_t id)
{
	char err[CTL_ERR_MAX];
	json_t *r;
	int errnum = 0;
	bool done;

	if (m->gws[v].state == GW_DOWN)
		return false;
	r = install_call(&m->gws[v].conn, "remove", json_pack("{s:I}", "job", (json_int_t)id),
			 m->o->timeout_ms, err, sizeof(err));
	done = r != NULL &&
	       (install_resp_ok(r, "remove", &errnum, err, sizeof(err)) || errnum == ENOENT);
	if (!done)
		control_log("job %u: gateway %s did not remove it (%s): asked again every "
			    "heartbeat",
			    id, gw_name(m, v), err);
	json_decref(r);
	return done;
}

void
jobs_service(struct dmn *m)
{
	char err[CTL_ERR_MAX];
	bool changed = false;

	for (int k = m->n_removals - 1; k >= 0; k--) {
		const struct removal *r = &m->removals[k];

		if (m->gws[r->gw].state != GW_UP || !remove_on(m, r->gw, r->job))
			continue;
		control_log("job %u: removed from gateway %s", r->job, gw_name(m, r->gw));
		m->removals[k] = m->removals[--m->n_removals];
		changed = true;
	}
	if (changed && jobs_state_save(m, -1, err, sizeof(err)) != 0)
		control_log("%s", err);
}

/* Job i out of the daemon's arrays: its plan and tables, its long polls marked to be
 * answered, the jobs after it one place down. */
static void
job_drop(struct dmn *m, int i)
{
	struct deploy *d = m->d;
	uint32_t id = d->jobs[i].id;

	for (int n = m->n_waiters - 1; n >= 0; n--) {
		struct waiter *w = &m->waiters[n];

		if (w->job == i) { /* answered by waiters_service(), outside any request */
			w->job = -1;
			w->gone = id;
		} else if (w->job > i) {
			w->job--;
		}
	}
	free(d->jobs[i].workers);
	jobplan_free(m->jobs[i].live);
	free(m->jobs[i].rates);
	json_decref(m->jobs[i].spec);
	shares_free(&m->jobs[i]);
	elastic_free(&m->jobs[i]);
	m->shares_stale = true; /* its shares go to the others */
	for (int v = 0; v < d->n_gateways; v++) {
		json_decref(m->gws[v].live[i]);
		memmove(&m->gws[v].live[i], &m->gws[v].live[i + 1],
			(size_t)(d->n_jobs - i - 1) * sizeof(*m->gws[v].live));
		m->gws[v].live[d->n_jobs - 1] = NULL;
	}
	memmove(&d->jobs[i], &d->jobs[i + 1], (size_t)(d->n_jobs - i - 1) * sizeof(*d->jobs));
	memmove(&m->jobs[i], &m->jobs[i + 1], (size_t)(d->n_jobs - i - 1) * sizeof(*m->jobs));
	d->n_jobs--;
	memset(&d->jobs[d->n_jobs], 0, sizeof(d->jobs[0]));
	memset(&m->jobs[d->n_jobs], 0, sizeof(m->jobs[0]));
	for (int k = i; k < d->n_jobs; k++) /* the plans borrow their job */
		if (m->jobs[k].live != NULL)
			m->jobs[k].live->job = &d->jobs[k];
	if (m->n_deleted == DAEMON_DELETED_MAX) {
		memmove(&m->deleted[0], &m->deleted[1],
			(DAEMON_DELETED_MAX - 1) * sizeof(uint32_t));
		m->n_deleted--;
	}
	m->deleted[m->n_deleted++] = id;
}

/* ---- the ops ------------------------------------------------------------------------- */

/* A parser's error as the reply's: "field '...': ...", without the parser's "SRC: ". */
static json_t *
parse_error(uint32_t id, const char *src, const char *err)
{
	size_t n = strlen(src);

	if (strncmp(err, src, n) == 0 && strncmp(err + n, ": ", 2) == 0)
		err += n + 2;
	return ctl_reply_error(true, id, EINVAL, "%s", err);
}

/* The smallest id that no job has, that is not being removed and was not deleted lately
 * (while another is free). */
static uint32_t
free_id(const struct dmn *m)
{
	for (int pass = 0; pass < 2; pass++)
		for (uint32_t id = 1; id < UINT32_MAX; id++)
			if (job_index(m, id) < 0 && removal_pending(m, id) < 0 &&
			    (pass == 1 || !jobs_was_deleted(m, id)))
				return id;
	return 0;
}

/* "job_create": {job: a job object, its id optional}. */
static json_t *
op_create(struct dmn *m, const char *t, const json_t *req, uint32_t id)
{
	char err[DEPLOY_ERR_MAX];
	struct deploy_job nj;
	json_t *obj = NULL, *spec, *r, *idv;
	uint32_t jid;
	bool given;
	int i;

	if (ctl_args_unpack(req, err, sizeof(err), "{s:o}", "job", &obj) != 0)
		return ctl_reply_error(true, id, EINVAL, "%s", err);
	if (!json_is_object(obj))
		return ctl_reply_error(true, id, EINVAL,
				       "field 'job': expected a job object (docs/DEPLOYMENT.md)");
	if (m->d->n_jobs >= DEPLOY_JOBS_MAX)
		return ctl_reply_error(true, id, ENOSPC,
				       "field 'job': %d jobs already, as many as a gateway holds",
				       DEPLOY_JOBS_MAX);
	spec = json_deep_copy(obj);
	if (spec == NULL)
		return ctl_reply_error(true, id, ENOMEM, "out of memory");
	if (json_object_get(spec, "id") == NULL)
		json_object_set_new(spec, "id", json_integer(free_id(m)));
	idv = json_object_get(spec, "id");
	given = json_is_integer(idv) && json_integer_value(idv) >= 0 &&
		json_integer_value(idv) <= UINT32_MAX; /* else the parser names it */
	jid = given ? (uint32_t)json_integer_value(idv) : 0;
	if (given && job_index(m, jid) >= 0) {
		json_decref(spec);
		return ctl_reply_error(true, id, EEXIST, "field 'job.id': job %u exists", jid);
	}
	if (given && removal_pending(m, jid) >= 0) {
		r = ctl_reply_error(true, id, EBUSY,
				    "field 'job.id': job %u is still being removed from gateway "
				    "%s",
				    jid, gw_name(m, removal_pending(m, jid)));
		json_decref(spec);
		return r;
	}
	if (deploy_job_parse(m->d, spec, -1, "job_create", "job", &nj, err, sizeof(err)) != 0) {
		json_decref(spec);
		return parse_error(id, "job_create", err);
	}
	r = quota_check(m, t, -1, &nj, spec, "job", id);
	if (r != NULL) {
		free(nj.workers);
		json_decref(spec);
		return r;
	}
	i = jobs_add(m, &nj, spec, t);
	json_decref(spec);
	if (jobs_state_save(m, -1, err, sizeof(err)) != 0) {
		m->d->n_jobs--; /* as if it had never been */
		free(m->d->jobs[i].workers);
		json_decref(m->jobs[i].spec);
		memset(&m->d->jobs[i], 0, sizeof(m->d->jobs[i]));
		memset(&m->jobs[i], 0, sizeof(m->jobs[i]));
		return ctl_reply_error(true, id, EIO, "job %u not created: %s", nj.id, err);
	}
	for (int v = 0; v < m->d->n_gateways; v++) /* its epochs, should they hold some */
		if (m->gws[v].state == GW_UP)
			gateway_sync_job(m, v, i);
	for (int k = 0; k < m->n_deleted; k++) /* the id is in use again */
		if (m->deleted[k] == nj.id)
			m->deleted[k] = m->deleted[--m->n_deleted];
	m->jobs[i].dirty = true;
	m->jobs[i].cause = CAUSE_START;
	snprintf(m->jobs[i].reason, sizeof(m->jobs[i].reason), "created through the API");
	control_log("job %u (%s, %s, %llu elements, %d workers) created through the API%s%s", nj.id,
		    deploy_algo_name(nj.algo), table_dtype_name(nj.dtype),
		    (unsigned long long)nj.elements, nj.n_workers,
		    t[0] != '\0' ? " by tenant " : "", t);
	r = ctl_reply_ok(id);
	json_object_set_new(r, "job", json_integer(nj.id));
	json_object_set_new(r, "tenant", t[0] != '\0' ? json_string(t) : json_null());
	return r;
}

/* Job jid for a client of tenant t that would change it: its index, or -1 with *resp. */
static int
own_job(const struct dmn *m, const char *t, uint32_t jid, uint32_t id, json_t **resp)
{
	int i = job_index(m, jid);

	if (i < 0 || !jobs_visible(m, t, i)) {
		*resp = ctl_reply_error(true, id, ENOENT, "field 'job': no job %u", jid);
		return -1;
	}
	if (m->jobs[i].spec == NULL) {
		*resp = ctl_reply_error(true, id, EPERM,
					"field 'job': job %u is in the deployment file %s: change "
					"it there",
					jid, m->d->path);
		return -1;
	}
	return i;
}

/* job i's object with changes: algorithm, options, weight, grace_ms (null: removed); a new
 * algorithm without options drops the old ones. NULL with *resp. */
static json_t *
merged_spec(const struct dmn *m, int i, const json_t *changes, uint32_t id, json_t **resp)
{
	static const char *const known[] = {"algorithm", "options", "weight", "grace_ms"};
	const char *bad = json_util_unknown_key(changes, known, sizeof(known) / sizeof(known[0]));
	const char *k;
	json_t *spec, *v;

	if (bad != NULL) {
		*resp = ctl_reply_error(
			true, id, EINVAL,
			"field 'changes.%.64s': job_update changes algorithm, "
			"options, weight and grace_ms; delete the job and create it "
			"again to change the rest",
			bad);
		return NULL;
	}
	if (json_object_size(changes) == 0) {
		*resp = ctl_reply_error(true, id, EINVAL, "field 'changes': nothing to change");
		return NULL;
	}
	spec = json_deep_copy(m->jobs[i].spec);
	if (spec == NULL) {
		*resp = ctl_reply_error(true, id, ENOMEM, "out of memory");
		return NULL;
	}
	v = json_object_get(changes, "algorithm");
	if (v != NULL && json_object_get(changes, "options") == NULL &&
	    !json_equal(v, json_object_get(spec, "algorithm")))
		json_object_del(spec, "options");
	json_object_foreach ((json_t *)changes, k, v) {
		if (json_is_null(v))
			json_object_del(spec, k);
		else
			json_object_set(spec, k, v);
	}
	return spec;
}

int
jobs_replace(struct dmn *m, int i, const struct deploy_job *nj, json_t *spec, char *err,
	     size_t errlen)
{
	struct deploy_job old = m->d->jobs[i];
	json_t *old_spec = m->jobs[i].spec;
	int rc;

	m->d->jobs[i] = *nj;
	m->jobs[i].spec = spec;
	rc = jobs_state_save(m, -1, err, errlen);
	if (rc != 0) { /* as it was */
		m->d->jobs[i] = old;
		m->jobs[i].spec = old_spec;
		free(nj->workers);
		json_decref(spec);
		return rc;
	}
	free(old.workers);
	json_decref(old_spec);
	return 0;
}

/* "job_update": {job, changes}. A new epoch is planned with the changed job. */
static json_t *
op_update(struct dmn *m, const char *t, const json_t *req, uint32_t id)
{
	char err[DEPLOY_ERR_MAX];
	json_t *changes = NULL, *spec, *r = NULL;
	struct deploy_job nj;
	uint32_t jid = 0;
	int i;

	if (ctl_args_unpack(req, err, sizeof(err), "{s:u,s:o}", "job", &jid, "changes", &changes) !=
	    0)
		return ctl_reply_error(true, id, EINVAL, "%s", err);
	if (!json_is_object(changes))
		return ctl_reply_error(true, id, EINVAL, "field 'changes': expected an object");
	i = own_job(m, t, jid, id, &r);
	if (i < 0)
		return r;
	spec = merged_spec(m, i, changes, id, &r);
	if (spec == NULL)
		return r;
	if (deploy_job_parse(m->d, spec, i, "job_update", "changes", &nj, err, sizeof(err)) != 0) {
		json_decref(spec);
		return parse_error(id, "job_update", err);
	}
	r = quota_check(m, m->jobs[i].tenant, i, &nj, spec, "changes", id);
	if (r != NULL) {
		free(nj.workers);
		json_decref(spec);
		return r;
	}
	if (jobs_replace(m, i, &nj, spec, err, sizeof(err)) != 0)
		return ctl_reply_error(true, id, EIO, "job %u not changed: %s", jid, err);
	m->jobs[i].dirty = true;
	m->jobs[i].retry_in = 0;
	m->jobs[i].cause = CAUSE_REQUESTED;
	m->shares_stale = true; /* its weight or its demand may have changed */
	snprintf(m->jobs[i].reason, sizeof(m->jobs[i].reason), "job updated through the API");
	control_log("job %u updated through the API (%s): a new epoch is planned", jid,
		    deploy_algo_name(nj.algo));
	r = ctl_reply_ok(id);
	json_object_set_new(r, "job", json_integer(jid));
	json_object_set_new(r, "epoch",
			    m->jobs[i].live != NULL ? json_integer(m->jobs[i].live_epoch) :
						      json_null());
	return r;
}

/* "job_delete": {job}. Removed from every gateway; one that does not answer is asked again
 * every heartbeat. */
static json_t *
op_delete(struct dmn *m, const char *t, const json_t *req, uint32_t id)
{
	char err[CTL_ERR_MAX];
	json_t *r = NULL, *done, *pending;
	uint32_t jid = 0;
	int i;

	if (ctl_args_unpack(req, err, sizeof(err), "{s:u}", "job", &jid) != 0)
		return ctl_reply_error(true, id, EINVAL, "%s", err);
	i = own_job(m, t, jid, id, &r);
	if (i < 0)
		return r;
	if (jobs_state_save(m, i, err, sizeof(err)) != 0)
		return ctl_reply_error(true, id, EIO, "job %u not deleted: %s", jid, err);
	job_drop(m, i);
	done = json_array();
	pending = json_array();
	for (int v = 0; v < m->d->n_gateways; v++) {
		if (remove_on(m, v, jid)) {
			json_array_append_new(done, json_string(gw_name(m, v)));
			continue;
		}
		json_array_append_new(pending, json_string(gw_name(m, v)));
		if (m->n_removals < DAEMON_REMOVALS_MAX) {
			m->removals[m->n_removals].gw = v;
			m->removals[m->n_removals++].job = jid;
		}
	}
	if (jobs_state_save(m, -1, err, sizeof(err)) != 0)
		control_log("%s", err);
	control_log("job %u deleted through the API: removed from %zu gateways, %zu to go", jid,
		    json_array_size(done), json_array_size(pending));
	r = ctl_reply_ok(id);
	json_object_set_new(r, "job", json_integer(jid));
	json_object_set_new(r, "removed", done);
	json_object_set_new(r, "pending", pending);
	return r;
}

/* "job_list": {}. The jobs the client sees. */
static json_t *
op_list(struct dmn *m, const char *t, const json_t *req, uint32_t id)
{
	char err[CTL_ERR_MAX];
	json_t *arr, *r;

	if (ctl_args_unpack(req, err, sizeof(err), "{}") != 0)
		return ctl_reply_error(true, id, EINVAL, "%s", err);
	arr = json_array();
	for (int i = 0; i < m->d->n_jobs; i++) {
		const struct deploy_job *dj = &m->d->jobs[i];
		const struct job *j = &m->jobs[i];

		if (!jobs_visible(m, t, i))
			continue;
		json_array_append_new(
			arr, json_pack("{s:I,s:s,s:o,s:s,s:s,s:I,s:i,s:o,s:s,s:o}", "job",
				       (json_int_t)dj->id, "source",
				       j->spec != NULL ? "api" : "deployment", "tenant",
				       j->tenant[0] != '\0' ? json_string(j->tenant) : json_null(),
				       "algorithm", deploy_algo_name(dj->algo), "dtype",
				       table_dtype_name(dj->dtype), "elements",
				       (json_int_t)dj->elements, "workers", dj->n_workers, "epoch",
				       j->live != NULL ? json_integer(j->live_epoch) : json_null(),
				       "state",
				       j->live == NULL ? "not installed" :
				       j->dirty        ? "live, re-planning" :
							 "live",
				       "spec", j->spec != NULL ? json_copy(j->spec) : json_null()));
	}
	r = ctl_reply_ok(id);
	json_object_set_new(r, "jobs", arr);
	return r;
}

bool
jobs_is_op(const char *op)
{
	return strcmp(op, "job_create") == 0 || strcmp(op, "job_update") == 0 ||
	       strcmp(op, "job_delete") == 0 || strcmp(op, "job_list") == 0;
}

json_t *
jobs_op(struct dmn *m, const char *t, const char *op, const json_t *req, uint32_t id)
{
	if (strcmp(op, "job_create") == 0)
		return op_create(m, t, req, id);
	if (strcmp(op, "job_update") == 0)
		return op_update(m, t, req, id);
	if (strcmp(op, "job_delete") == 0)
		return op_delete(m, t, req, id);
	return op_list(m, t, req, id);
}

void
jobs_free(struct dmn *m)
{
	for (int i = 0; m->jobs != NULL && i < m->d->n_jobs; i++) {
		json_decref(m->jobs[i].spec);
		m->jobs[i].spec = NULL;
	}
}
