/* SPDX-License-Identifier: BSD-3-Clause
 *
 * The state directory of the control process (jobs.h): the jobs created through its API,
 * the removals that gateways have not acknowledged and the ids deleted lately, in one
 * `georeduce-control-jobs/1` file (docs/DEPLOYMENT.md, "The state directory"), written
 * whole to a temporary file, synced and renamed over the old one, and read again at
 * start; with --etcd, the same document is the value of PREFIX/state in etcd instead,
 * written by the leader only (elect.h). It also keeps the measured capacities plans use
 * (rates.h) and each job's epochs (the live one, its gateways, the next number), so that a
 * restarted or new leader plans as the last one did and never uses an epoch number twice.
 * On the daemon's thread. No DPDK.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "clock.h"
#include "daemon_internal.h"
#include "elastic.h"
#include "elect.h"
#include "jobs.h"
#include "jsonutil.h"

/* Wall-clock milliseconds (a measured capacity's end, read by another process, maybe on
 * another host). */
static int64_t
wall_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* The measured capacities plans use now (rates.h), with when each ends (wall clock). */
static json_t *
caps_json(const struct dmn *m)
{
	const struct topo *t = m->d->topo;
	json_t *a = json_array();
	int64_t now = clock_now_ms(), wall = wall_ms();

	for (int l = 0; l < t->n_links && a != NULL; l++)
		for (int d = 0; d < 2; d++) {
			const struct lrate *r = &m->lr[2 * l + d];

			if (r->measured_gbps <= 0)
				continue;
			json_array_append_new(
				a,
				json_pack("{s:s,s:s,s:f,s:I}", "from",
					  node_id(m, d == 0 ? t->links[l].a : t->links[l].b), "to",
					  node_id(m, d == 0 ? t->links[l].b : t->links[l].a),
					  "gbps", r->measured_gbps, "until_unix_ms",
					  (json_int_t)(wall + r->measured_until - now)));
		}
	return a;
}

/* Capacities of a document (checked by state_ok()) in force again: those of links the
 * topology has and whose end has not passed. */
static void
caps_apply(struct dmn *m, const char *path, const json_t *caps)
{
	const struct topo *t = m->d->topo;
	int64_t now = clock_now_ms(), wall = wall_ms();
	const json_t *c;
	size_t k;

	json_array_foreach (caps, k, c) {
		const char *from = json_string_value(json_object_get(c, "from"));
		const char *to = json_string_value(json_object_get(c, "to"));
		double gbps = json_number_value(json_object_get(c, "gbps"));
		int64_t left = json_integer_value(json_object_get(c, "until_unix_ms")) - wall;
		int v = topo_node_index(t, from), u = topo_node_index(t, to), l;

		for (l = 0; l < t->n_links; l++)
			if ((t->links[l].a == v && t->links[l].b == u) ||
			    (t->links[l].a == u && t->links[l].b == v))
				break;
		if (l == t->n_links || v < 0 || u < 0) {
			control_log("%s: capacities[%zu]: no link %s-%s in the topology: skipped",
				    path, k, from, to);
			continue;
		}
		if (left <= 0)
			continue;
		int d = t->links[l].a == v ? 0 : 1;
		struct lrate *r = &m->lr[2 * l + d];

		r->measured_gbps = gbps;
		r->measured_until = now + left;
		*(d == 0 ? &m->link[l].gbps_ab : &m->link[l].gbps_ba) = gbps;
		control_log("link %s-%s: %s->%s measured at %.4g Gbit/s (%s): plans use it for "
			    "%lld s more",
			    node_id(m, t->links[l].a), node_id(m, t->links[l].b), from, to, gbps,
			    path, (long long)(left / 1000));
	}
}

/* Each job's epochs (but skip's): the live one (0: none), its gateways, and the next
 * number, which no epoch of the job was ever prepared with. */
static json_t *
epochs_json(const struct dmn *m, int skip)
{
	json_t *a = json_array();

	for (int i = 0; i < m->d->n_jobs && a != NULL; i++) {
		const struct job *j = &m->jobs[i];
		json_t *gws = json_array();

		if (i == skip)
			continue;
		for (int v = 0; j->live != NULL && v < j->live->n_gateways; v++)
			if (j->live->tables[v] != NULL)
				json_array_append_new(gws, json_string(gw_name(m, v)));
		json_array_append_new(
			a, json_pack("{s:I,s:I,s:I,s:o}", "job", (json_int_t)m->d->jobs[i].id,
				     "epoch", (json_int_t)(j->live != NULL ? j->live_epoch : 0),
				     "next", (json_int_t)j->next_epoch, "gateways", gws));
	}
	return a;
}

/* A document's epochs (checked by state_ok()): no job's next epoch below its recorded
 * next, so that no number is used twice, even one prepared at a gateway that is down now. */
static void
epochs_apply(struct dmn *m, const char *path, const json_t *epochs)
{
	const json_t *e;
	size_t k;

	json_array_foreach (epochs, k, e) {
		json_int_t id = json_integer_value(json_object_get(e, "job"));
		json_int_t next = json_integer_value(json_object_get(e, "next"));
		int i = 0;

		while (i < m->d->n_jobs && m->d->jobs[i].id != id)
			i++;
		if (i == m->d->n_jobs)
			continue; /* a job gone from the deployment */
		if ((uint32_t)next > m->jobs[i].next_epoch)
			m->jobs[i].next_epoch = (uint32_t)next;
		control_log("job %u: live epoch %lld recorded (%s; 0: none), the next epoch %u or "
			    "above",
			    m->d->jobs[i].id,
			    (long long)json_integer_value(json_object_get(e, "epoch")), path,
			    m->jobs[i].next_epoch);
	}
}

/* Whether a document's epochs (optional) have their shape; else why, in err. */
static bool
epochs_ok(const json_t *epochs, char *err, size_t errlen)
{
	const json_t *e, *g;
	size_t k, n;

	if (epochs != NULL && !json_is_array(epochs)) {
		json_util_fail(err, errlen, "field 'epochs': expected an array");
		return false;
	}
	json_array_foreach (epochs, k, e) {
		const json_t *id = json_object_get(e, "job"), *ep = json_object_get(e, "epoch");
		const json_t *next = json_object_get(e, "next"),
			     *gws = json_object_get(e, "gateways");
		bool ok = json_is_integer(id) && json_integer_value(id) >= 0 &&
			  json_integer_value(id) <= UINT32_MAX && json_is_integer(ep) &&
			  json_integer_value(ep) >= 0 && json_integer_value(ep) < UINT32_MAX &&
			  json_is_integer(next) && json_integer_value(next) >= 1 &&
			  json_integer_value(next) <= UINT32_MAX && json_is_array(gws);

		json_array_foreach (gws, n, g)
			ok = ok && json_is_string(g);
		if (!ok) {
			json_util_fail(err, errlen,
				       "field 'epochs[%zu]': expected job, epoch, next above 0 "
				       "and gateways (names)",
				       k);
			return false;
		}
	}
	return true;
}

/* The file's document: every job of the API but skip. */
static json_t *
state_json(const struct dmn *m, int skip)
{
	json_t *jobs = json_array(), *rem = json_array(), *del = json_array();

	for (int i = 0; i < m->d->n_jobs; i++) {
		json_t *item, *joined;

		if (i == skip || m->jobs[i].spec == NULL)
			continue;
		item = json_pack("{s:o,s:O}", "tenant",
				 m->jobs[i].tenant[0] != '\0' ? json_string(m->jobs[i].tenant) :
								json_null(),
				 "job", m->jobs[i].spec);
		joined = elastic_state_json(m, i);
		if (joined != NULL) /* the workers that joined it (elastic.c) */
			json_object_set_new(item, "joined", joined);
		json_array_append_new(jobs, item);
	}
	for (int k = 0; k < m->n_removals; k++)
		json_array_append_new(rem,
				      json_pack("{s:I,s:s}", "job", (json_int_t)m->removals[k].job,
						"gateway", gw_name(m, m->removals[k].gw)));
	for (int k = 0; k < m->n_deleted; k++)
		json_array_append_new(del, json_integer(m->deleted[k]));
	return json_pack("{s:s,s:o,s:o,s:o,s:o,s:o}", "format", DAEMON_STATE_FORMAT, "jobs", jobs,
			 "removing", rem, "deleted", del, "capacities", caps_json(m), "epochs",
			 epochs_json(m, skip));
}

int
jobs_state_save(const struct dmn *m, int skip, char *err, size_t errlen)
{
	char path[PATH_MAX], tmp[PATH_MAX];
	json_t *doc;
	FILE *f;
	int fd, rc = 0;

	if (m->el != NULL) {
		doc = state_json(m, skip);
		rc = doc != NULL ? elect_state_save(m, doc, err, errlen) :
				   json_util_failrc(-ENOMEM, err, errlen, "out of memory");
		json_decref(doc);
		return rc;
	}
	if (m->o->state_dir == NULL)
		return 0;
	snprintf(path, sizeof(path), "%s/%s", m->o->state_dir, DAEMON_STATE_FILE);
	snprintf(tmp, sizeof(tmp), "%s/%s.tmp", m->o->state_dir, DAEMON_STATE_FILE);
	doc = state_json(m, skip);
	if (doc == NULL)
		return json_util_failrc(-ENOMEM, err, errlen, "%s: out of memory", path);
	/* Aside, synced, renamed over the old one: a crash leaves one or the other. */
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	f = fd >= 0 ? fdopen(fd, "w") : NULL;
	if (f == NULL) {
		rc = -errno;
		if (fd >= 0)
			close(fd);
	} else {
		errno = 0;
		if (json_dumpf(doc, f, JSON_INDENT(1) | JSON_SORT_KEYS) != 0 ||
		    fputc('\n', f) == EOF || fflush(f) != 0 || fsync(fileno(f)) != 0)
			rc = errno != 0 ? -errno : -EIO;
		if (fclose(f) != 0 && rc == 0)
			rc = -errno;
	}
	json_decref(doc);
	if (rc == 0 && rename(tmp, path) != 0)
		rc = -errno;
	if (rc != 0) {
		unlink(tmp);
		return json_util_failrc(rc, err, errlen, "%s: cannot write: %s", path,
					strerror(-rc));
	}
	/* The rename itself is durable once the directory is. */
	fd = open(m->o->state_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd >= 0) {
		fsync(fd);
		close(fd);
	}
	return 0;
}

int
jobs_add(struct dmn *m, const struct deploy_job *nj, json_t *spec, const char *t)
{
	int i = m->d->n_jobs++;

	m->d->jobs[i] = *nj;
	memset(&m->jobs[i], 0, sizeof(m->jobs[i]));
	m->jobs[i].next_epoch = 1;
	m->jobs[i].rates_at = -1;
	m->jobs[i].spec = json_incref(spec);
	snprintf(m->jobs[i].tenant, sizeof(m->jobs[i].tenant), "%s", t);
	return i;
}

/* One item of the file's "jobs": added, or logged and left out. */
static void
load_job(struct dmn *m, const char *path, size_t k, const json_t *item)
{
	char err[DEPLOY_ERR_MAX], where[64];
	const json_t *spec = json_object_get(item, "job"), *t = json_object_get(item, "tenant");
	struct deploy_job nj;

	snprintf(where, sizeof(where), "jobs[%zu].job", k);
	if (m->d->n_jobs >= DEPLOY_JOBS_MAX) {
		control_log("%s: %s left out: %d jobs already, as many as a gateway holds", path,
			    where, DEPLOY_JOBS_MAX);
		return;
	}
	if (deploy_job_parse(m->d, spec, -1, path, where, &nj, err, sizeof(err)) != 0) {
		control_log("%s; the deployment no longer admits this job: left out", err);
		return;
	}
	elastic_state_load(
		m, jobs_add(m, &nj, (json_t *)spec, json_is_string(t) ? json_string_value(t) : ""),
		json_object_get(item, "joined"));
	control_log("job %u of tenant %s read from %s", nj.id,
		    json_is_string(t) ? json_string_value(t) : "(none)", path);
}

/* The file's "removing": gateways by name (one no longer in the deployment is dropped). */
static void
load_removals(struct dmn *m, const json_t *rem)
{
	const json_t *r;
	size_t k;

	json_array_foreach (rem, k, r) {
		const char *g = json_string_value(json_object_get(r, "gateway"));

		for (int v = 0; g != NULL && v < m->d->n_gateways; v++)
			if (strcmp(gw_name(m, v), g) == 0 && m->n_removals < DAEMON_REMOVALS_MAX) {
				m->removals[m->n_removals].gw = v;
				m->removals[m->n_removals++].job =
					(uint32_t)json_integer_value(json_object_get(r, "job"));
			}
	}
}

/* Whether the document has the file's shape; else why, in err. */
static bool
state_ok(const json_t *doc, char *err, size_t errlen)
{
	const json_t *v;
	size_t k;

	if (!json_is_object(doc) || !json_is_string(json_object_get(doc, "format")) ||
	    strcmp(json_string_value(json_object_get(doc, "format")), DAEMON_STATE_FORMAT) != 0) {
		json_util_fail(err, errlen, "field 'format': expected \"%s\"", DAEMON_STATE_FORMAT);
		return false;
	}
	json_array_foreach (json_object_get(doc, "jobs"), k, v)
		if (!json_is_object(json_object_get(v, "job")) ||
		    (!json_is_string(json_object_get(v, "tenant")) &&
		     !json_is_null(json_object_get(v, "tenant")))) {
			json_util_fail(err, errlen,
				       "field 'jobs[%zu]': expected a job and a tenant", k);
			return false;
		}
	json_array_foreach (json_object_get(doc, "removing"), k, v)
		if (!json_is_integer(json_object_get(v, "job")) ||
		    json_integer_value(json_object_get(v, "job")) < 0 ||
		    json_integer_value(json_object_get(v, "job")) > UINT32_MAX ||
		    !json_is_string(json_object_get(v, "gateway"))) {
			json_util_fail(err, errlen,
				       "field 'removing[%zu]': expected a job and a "
				       "gateway",
				       k);
			return false;
		}
	json_array_foreach (json_object_get(doc, "deleted"), k, v)
		if (!json_is_integer(v) || json_integer_value(v) < 0 ||
		    json_integer_value(v) > UINT32_MAX) {
			json_util_fail(err, errlen, "field 'deleted[%zu]': expected a job id", k);
			return false;
		}
	/* Optional: a document written before it lacks it. */
	v = json_object_get(doc, "capacities");
	if (v != NULL && !json_is_array(v)) {
		json_util_fail(err, errlen, "field 'capacities': expected an array");
		return false;
	}
	json_array_foreach (json_object_get(doc, "capacities"), k, v)
		if (!json_is_string(json_object_get(v, "from")) ||
		    !json_is_string(json_object_get(v, "to")) ||
		    !json_is_number(json_object_get(v, "gbps")) ||
		    !(json_number_value(json_object_get(v, "gbps")) > 0) ||
		    !json_is_integer(json_object_get(v, "until_unix_ms"))) {
			json_util_fail(err, errlen,
				       "field 'capacities[%zu]': expected from, to, gbps above 0 "
				       "and until_unix_ms",
				       k);
			return false;
		}
	return epochs_ok(json_object_get(doc, "epochs"), err, errlen);
}

/* The document doc (a reference stolen) read from path: its jobs added. */
static int
state_apply(struct dmn *m, const char *path, json_t *doc)
{
	char err[CTL_ERR_MAX];
	const json_t *v;
	size_t k;

	if (!state_ok(doc, err, sizeof(err))) {
		control_log("cannot start: %s: %s", path, err);
		json_decref(doc);
		return -EINVAL;
	}
	json_array_foreach (json_object_get(doc, "jobs"), k, v)
		load_job(m, path, k, v);
	load_removals(m, json_object_get(doc, "removing"));
	json_array_foreach (json_object_get(doc, "deleted"), k, v)
		if (m->n_deleted < DAEMON_DELETED_MAX)
			m->deleted[m->n_deleted++] = (uint32_t)json_integer_value(v);
	caps_apply(m, path, json_object_get(doc, "capacities"));
	epochs_apply(m, path, json_object_get(doc, "epochs"));
	json_decref(doc);
	return 0;
}

int
jobs_load(struct dmn *m)
{
	char path[PATH_MAX], err[CTL_ERR_MAX];
	json_error_t je;
	json_t *doc;

	if (m->el != NULL) {
		snprintf(path, sizeof(path), "etcd %s", m->el->key_state);
		if (elect_state_load(m, &doc, err, sizeof(err)) != 0) {
			control_log("cannot lead: %s", err);
			return -EIO;
		}
		if (doc == NULL)
			return 0;
		return state_apply(m, path, doc);
	}
	if (m->o->state_dir == NULL) {
		control_log("no --state-dir: the jobs created through the API are not kept across "
			    "a restart");
		return 0;
	}
	if (mkdir(m->o->state_dir, 0750) != 0 && errno != EEXIST) {
		control_log("cannot start: --state-dir %s: %s", m->o->state_dir, strerror(errno));
		return -errno;
	}
	snprintf(path, sizeof(path), "%s/%s", m->o->state_dir, DAEMON_STATE_FILE);
	if (access(path, F_OK) != 0 && errno == ENOENT)
		return 0;
	doc = json_load_file(path, JSON_REJECT_DUPLICATES, &je);
	if (doc == NULL) {
		control_log("cannot start: %s:%d:%d: %s", path, je.line, je.column, je.text);
		return -EINVAL;
	}
	return state_apply(m, path, doc);
}
