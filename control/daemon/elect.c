/* SPDX-License-Identifier: BSD-3-Clause
 *
 * Leader election of control replicas on etcd, fencing terms and the state kept there
 * (elect.h). On the daemon's thread; the leader's keepalives on their own (keepalive.c).
 * No DPDK.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "clock.h"
#include "elect.h"
#include "jobs.h"
#include "jsonutil.h"

int
elect_setup(struct dmn *m)
{
	const struct daemon_opts *o = m->o;
	const char *prefix = o->etcd_prefix != NULL ? o->etcd_prefix : ELECT_PREFIX_DEFAULT;
	const char *listen = o->listen != NULL           ? o->listen :
			     m->d->tls.listen[0] != '\0' ? m->d->tls.listen :
							   NULL;
	char err[ETCD_ERR_MAX], host[64] = "localhost", *v;
	struct elect *el;
	json_t *jv;

	if (o->etcd == NULL)
		return 0;
	el = calloc(1, sizeof(*el));
	if (el == NULL)
		return -ENOMEM;
	m->el = el;
	el->lease_ms = o->lease_ms > 0 ? o->lease_ms : ELECT_LEASE_MS_DEFAULT;
	el->error_since = -1;
	gethostname(host, sizeof(host) - 1);
	snprintf(el->name, sizeof(el->name), "%s", o->name != NULL ? o->name : host);
	snprintf(el->key_leader, sizeof(el->key_leader), "%s/leader", prefix);
	snprintf(el->key_state, sizeof(el->key_state), "%s/state", prefix);
	/* Each etcd request may take a third of the lease: a leader that cannot reach etcd
	 * for a whole lease has tried three times. */
	el->eo = (struct etcd_opts){.endpoints = o->etcd,
				    .cacert = o->etcd_ca,
				    .cert = o->etcd_cert,
				    .key = o->etcd_key,
				    .timeout_ms = el->lease_ms / 3};
	el->ka.wake = -1;
	el->etcd = etcd_new(&el->eo, err, sizeof(err));
	if (el->etcd == NULL) {
		control_log("cannot start: --etcd: %s", err);
		return -EINVAL;
	}
	jv = json_pack("{s:s,s:s,s:s,s:i}", "name", el->name, "address",
		       listen != NULL ? listen : "", "socket", o->socket, "pid", (int)getpid());
	v = jv != NULL ? json_dumps(jv, JSON_COMPACT | JSON_SORT_KEYS) : NULL;
	json_decref(jv);
	if (v == NULL || strlen(v) >= sizeof(el->value)) {
		free(v);
		control_log("cannot start: --name or the API address is too long");
		return -EINVAL;
	}
	snprintf(el->value, sizeof(el->value), "%s", v);
	free(v);
	control_log("replica %s: leader election on etcd %s, key %s, lease %d ms", el->name,
		    o->etcd, el->key_leader, el->lease_ms);
	return 0;
}

bool
elect_leading(const struct dmn *m)
{
	return m->el == NULL ||
	       (m->el->leading && clock_now_ms() < atomic_load(&m->el->ka.valid_until));
}

int64_t
elect_next_ms(const struct dmn *m)
{
	int64_t left;

	if (m->el == NULL)
		return -1;
	/* Leading: look at the keepalive thread's news every lease/3, and at valid_until. */
	if (m->el->leading) {
		left = atomic_load(&m->el->ka.valid_until) - clock_now_ms();
		left = left < m->el->lease_ms / 3 ? left : m->el->lease_ms / 3;
	} else {
		left = m->el->next_at - clock_now_ms();
	}
	return left > 0 ? left : 0;
}

/* An etcd call failed (err), or worked (err NULL): logged once per run of failures. */
static void
etcd_result(struct elect *el, const char *err)
{
	if (err == NULL) {
		if (el->error[0] != '\0')
			control_log("etcd reachable again at %s", etcd_endpoint(el->etcd));
		el->error[0] = '\0';
		el->error_since = -1;
		return;
	}
	el->etcd_errors++;
	if (el->error[0] == '\0') {
		control_log("%s; %s", err,
			    el->leading ? "leading until the lease runs out" :
					  "no leader can be elected until etcd answers");
		el->error_since = clock_now_ms();
	}
	snprintf(el->error, sizeof(el->error), "%s", err);
}

/* Set every gateway connection's term and fence. */
static void
set_term(struct dmn *m, int64_t term)
{
	for (int v = 0; v < m->d->n_gateways; v++) {
		m->gws[v].conn.term = term;
		m->gws[v].conn.until = term > 0 ? &m->el->ka.valid_until : NULL;
	}
}

/* Lost the lease while leading: no keepalive is sent and nothing is changed from now on;
 * the daemon stops and starts again as a follower. */
static void
depose(struct dmn *m, const char *why)
{
	struct elect *el = m->el;

	keepalive_stop(&el->ka);
	atomic_store(&el->ka.valid_until, 0);
	el->leading = false;
	el->deposed = true;
	control_log("deposed as leader of term %" PRId64 ": %s; no gateway is changed from now "
		    "on, starting again as a follower",
		    el->term, why);
	m->stop = true;
}

/* Leading: what the keepalive thread found since the last look. Its failures are
 * logged and counted as the daemon's own etcd calls are (once per run of them); lost, or
 * no keepalive that succeeded for a whole lease, deposes. */
static void
watch_keepalive(struct dmn *m)
{
	struct elect *el = m->el;
	uint64_t failed = atomic_load(&el->ka.failed), answered = atomic_load(&el->ka.answered);
	char err[ETCD_ERR_MAX];

	if (failed != el->ka_failed) {
		keepalive_error(&el->ka, err, sizeof(err));
		etcd_result(el, err);
		el->etcd_errors += failed - el->ka_failed - 1; /* etcd_result() counted one */
		el->ka_failed = failed;
	}
	if (answered != el->ka_answered && !atomic_load(&el->ka.failing))
		etcd_result(el, NULL); /* reachable again, if it was not */
	el->ka_answered = answered;
	if (atomic_load(&el->ka.lost))
		depose(m, "etcd says its lease is gone");
	else if (clock_now_ms() >= atomic_load(&el->ka.valid_until))
		depose(m, "no keepalive reached etcd for a whole lease");
}

/* The leader key's value into el->leader, and its term. */
static void
note_leader(struct elect *el, const struct etcd_kv *kv)
{
	if (kv == NULL || kv->key == NULL) {
		el->leader[0] = '\0';
		return;
	}
	if (strcmp(el->leader, kv->value) != 0 || el->term != kv->create_revision)
		control_log("following %s, term %" PRId64, kv->value, kv->create_revision);
	snprintf(el->leader, sizeof(el->leader), "%s", kv->value);
	el->term = kv->create_revision;
}

/* Won term: read the state, then plan and install as a restarted daemon does. */
static void
take_over(struct dmn *m, int64_t term, int64_t granted)
{
	struct elect *el = m->el;
	char err[ETCD_ERR_MAX], why[ETCD_ERR_MAX + 64];

	el->leading = true;
	el->term = term;
	atomic_store(&el->ka.valid_until, granted + el->lease_ms);
	snprintf(el->leader, sizeof(el->leader), "%s", el->value);
	el->terms_won++;
	set_term(m, term);
	control_log("leader of term %" PRId64 " (etcd %s)", term, etcd_endpoint(el->etcd));
	if (keepalive_start(&el->ka, &el->eo, el->lease, el->lease_ms, granted + el->lease_ms, err,
			    sizeof(err)) != 0) {
		snprintf(why, sizeof(why), "the keepalive thread could not start: %s", err);
		etcd_lease_revoke(el->etcd, el->lease, err, sizeof(err));
		el->lease = 0;
		depose(m, why);
		return;
	}
	if (jobs_load(m) != 0) {
		/* The state cannot be read: lead nothing; another replica may do better. */
		keepalive_stop(&el->ka);
		etcd_lease_revoke(el->etcd, el->lease, err, sizeof(err));
		el->lease = 0;
		depose(m, "the state in etcd could not be read");
		return;
	}
	mark_all_dirty(m, CAUSE_START, "leader of term %" PRId64, term);
}

/* Follower: read the leader key; if there is none, stand. */
static void
poll_leader(struct dmn *m)
{
	struct elect *el = m->el;
	char err[ETCD_ERR_MAX];
	struct etcd_kv *kvs = NULL, kv;
	size_t n = 0;
	int64_t rev, granted, ttl;
	bool won = false;
	int rc = etcd_range(el->etcd, el->key_leader, false, &kvs, &n, &rev, err, sizeof(err));

	etcd_result(el, rc == 0 ? NULL : err);
	if (rc != 0 || n > 0) {
		note_leader(el, n > 0 ? &kvs[0] : NULL);
		etcd_kvs_free(kvs, n);
		return;
	}
	etcd_kvs_free(kvs, n);
	granted = clock_now_ms();
	rc = etcd_lease_grant(el->etcd, (el->lease_ms + 999) / 1000, &el->lease, &ttl, err,
			      sizeof(err));
	if (rc == 0) {
		struct etcd_cmp c = {.key = el->key_leader, .mod = false, .rev = 0};
		struct etcd_op put = {.kind = ETCD_OP_PUT,
				      .key = el->key_leader,
				      .value = el->value,
				      .value_len = strlen(el->value),
				      .lease = el->lease};
		struct etcd_op get = {.kind = ETCD_OP_GET, .key = el->key_leader};

		rc = etcd_txn(el->etcd, &c, 1, &put, 1, &get, 1, &won, &rev, &kv, err, sizeof(err));
		if (rc == 0 && !won) {
			note_leader(el, &kv);
			etcd_lease_revoke(el->etcd, el->lease, err, sizeof(err));
			el->lease = 0;
		}
		if (rc == 0)
			etcd_kv_free(&kv);
	}
	etcd_result(el, rc == 0 ? NULL : err);
	if (rc == 0 && won)
		take_over(m, rev, granted);
}

void
elect_service(struct dmn *m)
{
	struct elect *el = m->el;
	int64_t t = clock_now_ms();

	if (el == NULL || el->deposed)
		return;
	if (el->leading) { /* the keepalives are the keepalive thread's */
		watch_keepalive(m);
		return;
	}
	if (t < el->next_at)
		return;
	el->next_at = t + el->lease_ms / 3;
	poll_leader(m);
}

/* The leader key's value as JSON: its object, the raw text if it is not one (a key
 * written by something else), or null if none is known. */
static json_t *
leader_json(const struct elect *el)
{
	json_t *v;

	if (el->leader[0] == '\0')
		return json_null();
	v = json_loads(el->leader, 0, NULL);
	if (json_is_object(v))
		return v;
	json_decref(v);
	return json_string(el->leader);
}

bool
elect_refuses(const char *op)
{
	static const char *const reads[] = {"ping", "version", "status", "job_list", "reload_tls"};

	for (size_t i = 0; i < sizeof(reads) / sizeof(reads[0]); i++)
		if (strcmp(op, reads[i]) == 0)
			return false;
	return true;
}

json_t *
elect_refusal(const struct dmn *m, uint32_t id, const char *op)
{
	const struct elect *el = m->el;
	json_t *lv = leader_json(el);
	const char *addr = json_string_value(json_object_get(lv, "address"));
	const char *name = json_string_value(json_object_get(lv, "name"));
	json_t *r;

	if (el->leader[0] != '\0')
		r = ctl_reply_error(true, id, EAGAIN,
				    "field 'op': '%s' goes to the leader, %s at %s (term %" PRId64
				    "); this replica follows",
				    op, name != NULL ? name : el->leader,
				    addr != NULL && addr[0] != '\0' ? addr : "(no TLS address)",
				    el->term);
	else
		r = ctl_reply_error(true, id, EAGAIN,
				    "field 'op': '%s' goes to the leader, and there is none "
				    "now%s%s",
				    op, el->error[0] != '\0' ? ": " : "", el->error);
	json_object_set_new(r, "leader", lv);
	json_object_set_new(r, "term", el->term > 0 ? json_integer(el->term) : json_null());
	return r;
}

json_t *
elect_json(const struct dmn *m)
{
	const struct elect *el = m->el;
	int64_t t = clock_now_ms();

	if (el == NULL)
		return json_null();
	return json_pack(
		"{s:s,s:s,s:o,s:o,s:s,s:i,s:o,s:o,s:I,s:I,s:I}", "name", el->name, "role",
		elect_leading(m) ? "leader" : "follower", "leader", leader_json(el), "term",
		el->term > 0 ? json_integer(el->term) : json_null(), "etcd",
		etcd_endpoint(el->etcd), "lease_ms", el->lease_ms, "etcd_error",
		el->error[0] != '\0' ? json_string(el->error) : json_null(), "etcd_error_for_s",
		el->error_since >= 0 ? json_real((double)(t - el->error_since) / 1e3) : json_null(),
		"terms_won", (json_int_t)el->terms_won, "etcd_errors", (json_int_t)el->etcd_errors,
		"keepalives", (json_int_t)atomic_load(&el->ka.answered));
}

int
elect_state_save(const struct dmn *m, const json_t *doc, char *err, size_t errlen)
{
	struct elect *el = m->el;
	char *s = json_dumps(doc, JSON_COMPACT | JSON_SORT_KEYS), e[ETCD_ERR_MAX];
	struct etcd_cmp c = {.key = el->key_leader, .mod = false, .rev = el->term};
	struct etcd_op put = {.kind = ETCD_OP_PUT, .key = el->key_state, .value = s};
	bool ok = false;
	int rc;

	if (s == NULL)
		return json_util_failrc(-ENOMEM, err, errlen, "etcd: out of memory");
	if (!elect_leading(m)) {
		free(s);
		return json_util_failrc(-ESTALE, err, errlen,
					"not the leader: the state in etcd is "
					"the leader's to change");
	}
	put.value_len = strlen(s);
	rc = etcd_txn(el->etcd, &c, 1, &put, 1, NULL, 0, &ok, NULL, NULL, e, sizeof(e));
	free(s);
	etcd_result(el, rc == 0 ? NULL : e);
	if (rc != 0)
		return json_util_failrc(rc, err, errlen, "%s", e);
	if (!ok)
		return json_util_failrc(-ESTALE, err, errlen,
					"%s is no longer this replica's (term %" PRId64
					"): the state was not written",
					el->key_leader, el->term);
	return 0;
}

int
elect_state_load(struct dmn *m, json_t **doc, char *err, size_t errlen)
{
	struct elect *el = m->el;
	struct etcd_kv *kvs = NULL;
	json_error_t je;
	size_t n = 0;
	int rc = etcd_range(el->etcd, el->key_state, false, &kvs, &n, NULL, err, errlen);

	*doc = NULL;
	if (rc == 0 && n > 0) {
		*doc = json_loads(kvs[0].value, JSON_REJECT_DUPLICATES, &je);
		if (*doc == NULL)
			rc = json_util_failrc(-EINVAL, err, errlen, "%s: %d:%d: %s", el->key_state,
					      je.line, je.column, je.text);
	}
	etcd_kvs_free(kvs, n);
	return rc;
}

void
elect_free(struct dmn *m)
{
	struct elect *el = m->el;
	char err[ETCD_ERR_MAX];

	if (el == NULL)
		return;
	keepalive_stop(&el->ka); /* before the revoke: no keepalive races it */
	if (el->leading && el->lease != 0 &&
	    etcd_lease_revoke(el->etcd, el->lease, err, sizeof(err)) == 0)
		control_log("leadership of term %" PRId64 " handed back (lease revoked)", el->term);
	etcd_free(el->etcd);
	free(el);
	m->el = NULL;
}
