/* SPDX-License-Identifier: BSD-3-Clause
 *
 * Slow path (control thread): the control protocol (docs/CONTROL.md) on the unix socket
 * and, with --ctl-listen, on the management address over TLS 1.3 (lib/ctlsrv.h: bounded
 * connections, timeouts, refusals logged and counted). Requests are framed JSON
 * (lib/ctlmsg.h), answered in order. A malformed request gets an error reply and changes
 * nothing; broken framing closes the connection. A `monitor` certificate may only read.
 * The `delay` op changes a port's TX delay while the lcores run: they read it with a
 * relaxed atomic load at their next flush (dataplane/fastpath/fault.c). SIGHUP and the
 * `reload_tls` op read the TLS files again for the connections that follow.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rte_cycles.h>

#include "ctlmsg.h"
#include "ctlsrv.h"
#include "ctltls.h"
#include "dp.h"
#include "promsrv.h"
#include "revision.h"
#include "slowpath/slowpath.h"

struct dp_ctl {
	struct dp *dp;
	struct ctltls_ctx *tls;
	struct ctlsrv *srv;
};

static json_t *ctl_serve_request(void *arg, struct ctlsrv_client *cl, const json_t *req);

/* `delay`: the one-way delay of port P's TX frames, for a port started with a delay line
 * (--fault P,tx,delay_ms=D): an emulated WAN link's latency, changed while it runs. */
static json_t *
op_delay(struct dp *dp, const json_t *req, uint32_t id)
{
	char err[TABLE_ERR_MAX];
	uint32_t port = 0;
	double ms = -1;

	if (ctl_args_unpack(req, err, sizeof(err), "{s:u,s:F}", "port", &port, "delay_ms", &ms) !=
	    0)
		return ctl_reply_error(true, id, EINVAL, "%s", err);
	if (!isfinite(ms) || ms < 0 || ms > DP_DELAY_MS_MAX)
		return ctl_reply_error(true, id, EINVAL,
				       "field 'delay_ms': expected 0 .. %d, got %g",
				       DP_DELAY_MS_MAX, ms);
	if (port >= dp->n_ports || dp->n_lcores == 0 || dp->lcores[0]->delay[port].mask == 0)
		return ctl_reply_error(true, id, ENOENT,
				       "field 'port': port %u has no delay line (start it with "
				       "--fault %u,tx,delay_ms=D)",
				       port, port);
	uint64_t tsc = (uint64_t)(ms * 1e-3 * (double)rte_get_tsc_hz());
	json_t *r = ctl_reply_ok(id);

	__atomic_store_n(&dp->ports[port].fault[DP_TX].delay_tsc, tsc, __ATOMIC_RELAXED);
	json_object_set_new(r, "port", json_integer(port));
	json_object_set_new(r, "delay_ms", json_real(ms));
	return r;
}

static void
ctl_log(void *arg, const char *line)
{
	(void)arg;
	DP_LOG(WARNING, "%s\n", line);
}

struct dp_ctl *
dp_ctl_create(struct dp *dp, const struct dp_ctl_opts *o, char *err, size_t errlen)
{
	struct dp_ctl *c = calloc(1, sizeof(*c));
	char why[CTL_ERR_MAX];
	struct ctlsrv_opts so = {
		.unix_path = o->socket,
		.tls_listen = o->listen,
		.roles = 1u << CTLTLS_ROLE_CONTROL | 1u << CTLTLS_ROLE_MONITOR,
		.max_per_role = o->conns,
		.max_handshakes = 2 * o->conns,
		.handshake_ms = o->handshake_ms,
		.idle_ms = o->idle_ms,
		.handle = ctl_serve_request,
		.log = ctl_log,
	};

	if (c == NULL) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	c->dp = dp;
	so.arg = c;
	if (dp_term_load(dp, o->term_file, o->socket, err, errlen) != 0)
		goto fail;
	if (o->listen != NULL) {
		c->tls = ctltls_ctx_new(true, o->cert, o->key, o->ca, o->crl, why, sizeof(why));
		if (c->tls == NULL) {
			snprintf(err, errlen, "--ctl-listen %s: %s", o->listen, why);
			goto fail;
		}
		so.tls = c->tls;
	}
	c->srv = ctlsrv_create(&so, why, sizeof(why));
	if (c->srv == NULL) {
		snprintf(err, errlen, "control: %s", why);
		goto fail;
	}
	return c;
fail:
	dp_ctl_free(c);
	return NULL;
}

int
dp_ctl_reload_tls(struct dp_ctl *c, char *msg, size_t msglen)
{
	char why[CTLTLS_INFO_MAX];
	int rc;

	if (c->tls == NULL) {
		snprintf(why, sizeof(why), "no TLS (the dataplane runs without --ctl-listen)");
		rc = -ENOENT;
		DP_LOG(WARNING, "tls: not reloaded: %s\n", why);
	} else if ((rc = ctltls_ctx_reload(c->tls, why, sizeof(why))) == 0) {
		DP_LOG(NOTICE, "tls: reloaded: %s\n", why);
	} else {
		DP_LOG(ERR, "tls: reload failed, the old files stay in use: %s\n", why);
	}
	if (msg != NULL)
		snprintf(msg, msglen, "%s", why);
	return rc;
}

void
dp_ctl_free(struct dp_ctl *c)
{
	if (c == NULL)
		return;
	ctlsrv_free(c->srv);
	ctltls_ctx_free(c->tls);
	free(c);
}

/* prepare {table[, membership]}, install {table[, membership]} (prepare and activate) and
 * activate {job, epoch}. */
static json_t *
op_table(struct dp *dp, const json_t *req, uint32_t id, bool prepare, bool activate)
{
	char err[TABLE_ERR_MAX];
	json_t *table = NULL, *r;
	uint32_t job = 0, epoch = 0;
	int rc;

	if (prepare) {
		uint32_t membership = 0;
		/* `membership` came with revision 1.16: as an older gateway, an unknown field. */
		int rc_args =
			dp->prm.act_revision != 0 && dp->prm.act_revision < REVISION_MEMBERSHIP ?
				ctl_args_unpack(req, err, sizeof(err), "{s:o}", "table", &table) :
				ctl_args_unpack(req, err, sizeof(err), "{s:o,s?u}", "table", &table,
						"membership", &membership);

		if (rc_args != 0)
			return ctl_reply_error(true, id, EINVAL, "%s", err);
		if (json_object_get(req, "membership") != NULL && membership == 0)
			return ctl_reply_error(true, id, EINVAL,
					       "field 'membership': expected 1..4294967295 "
					       "(absent: not named)");
		rc = dp_prepare(dp, table, membership, &job, &epoch, err, sizeof(err));
		if (rc != 0)
			return ctl_reply_error(true, id, -rc, "%s", err);
	} else if (ctl_args_unpack(req, err, sizeof(err), "{s:u,s:u}", "job", &job, "epoch",
				   &epoch) != 0) {
		return ctl_reply_error(true, id, EINVAL, "%s", err);
	}
	if (activate) {
		rc = dp_activate(dp, job, epoch, err, sizeof(err));
		if (rc != 0)
			return ctl_reply_error(true, id, -rc, "%s", err);
	}
	r = ctl_reply_ok(id);
	json_object_set_new(r, "job", json_integer(job));
	json_object_set_new(r, "epoch", json_integer(epoch));
	json_object_set_new(r, "state", json_string(activate ? "live" : "prepared"));
	return r;
}

/*
 * The optional "term" of a request that changes tables (docs/CONTROL.md, "Terms"): NULL
 * if it may go on (the newest term seen is raised to it), else the refusal: EINVAL for a
 * term that is not an integer 1..2^63-1, ESTALE (counted) for one older than the newest.
 */
static json_t *
term_check(struct dp *dp, const json_t *req, uint32_t id, const char *op)
{
	const json_t *t = json_object_get(req, "term");

	if (t == NULL)
		return NULL;
	if (!json_is_integer(t) || json_integer_value(t) < 1)
		return ctl_reply_error(true, id, EINVAL,
				       "field 'term': expected an integer 1..9223372036854775807");
	if (json_integer_value(t) < dp->ctl_term) {
		dp->ctl_stale_terms++;
		DP_LOG(WARNING, "ctl: %s of term %lld refused: term %lld seen\n", op,
		       (long long)json_integer_value(t), (long long)dp->ctl_term);
		return ctl_reply_error(true, id, ESTALE,
				       "field 'term': %lld is older than term %lld, of a newer "
				       "control leader",
				       (long long)json_integer_value(t), (long long)dp->ctl_term);
	}
	if (json_integer_value(t) > dp->ctl_term) {
		char why[TABLE_ERR_MAX];
		int rc = dp_term_keep(dp, json_integer_value(t), why, sizeof(why));

		if (rc != 0) { /* acting on a term it may forget would unfence a restart */
			DP_LOG(ERR, "ctl: %s refused: %s\n", op, why);
			return ctl_reply_error(true, id, EIO, "%s", why);
		}
		DP_LOG(NOTICE, "ctl: control leader term %lld\n", (long long)json_integer_value(t));
		dp->ctl_term = json_integer_value(t);
	}
	return NULL;
}

/* A request that changes tables: its term checked, then the op without it. */
static json_t *
op_fenced(struct dp *dp, const json_t *req, uint32_t id, const char *op)
{
	json_t *r = term_check(dp, req, id, op), *q;

	if (r != NULL)
		return r;
	q = json_copy((json_t *)req); /* shallow: the args are only read */
	if (q == NULL)
		return ctl_reply_error(true, id, ENOMEM, "out of memory");
	json_object_del(q, "term");
	r = dp_ctl_handle(dp, q);
	json_decref(q);
	return r;
}

json_t *
dp_ctl_handle(struct dp *dp, const json_t *req)
{
	char err[TABLE_ERR_MAX];
	const char *op = NULL;
	uint32_t id = 0, job = 0;
	json_t *r;
	int rc = ctl_request_check(req, &id, &op, err, sizeof(err));

	if (rc != 0)
		return ctl_reply_error(ctl_request_id(req, &id), id, -rc, "%s", err);
	if (strcmp(op, "version") == 0 || strcmp(op, "ping") == 0) {
		if (ctl_args_unpack(req, err, sizeof(err), "{}") != 0)
			return ctl_reply_error(true, id, EINVAL, "%s", err);
		r = ctl_reply_ok(id);
		if (op[0] == 'v') {
			json_object_set_new(r, "program", json_string(DP_PROGRAM));
			json_object_set_new(r, "program_version", json_string(DP_VERSION));
			json_object_set_new(r, "protocol", json_integer(CTL_PROTOCOL_VERSION));
			json_object_set_new(r, "table_format", json_string(TABLE_FORMAT));
			/* A gateway older than 1.15 (--revision) has no such field. */
			if (dp->prm.act_revision == 0 || dp->prm.act_revision >= 15)
				json_object_set_new(r, "revision",
						    json_integer(dp->prm.act_revision != 0 ?
									 dp->prm.act_revision :
									 GEOREDUCE_REVISION));
		}
		return r;
	}
	if (json_object_get(req, "term") != NULL &&
	    (strcmp(op, "prepare") == 0 || strcmp(op, "install") == 0 ||
	     strcmp(op, "activate") == 0 || strcmp(op, "remove") == 0))
		return op_fenced(dp, req, id, op);
	if (strcmp(op, "prepare") == 0)
		return op_table(dp, req, id, true, false);
	if (strcmp(op, "install") == 0)
		return op_table(dp, req, id, true, true);
	if (strcmp(op, "activate") == 0)
		return op_table(dp, req, id, false, true);
	if (strcmp(op, "remove") == 0) {
		if (ctl_args_unpack(req, err, sizeof(err), "{s:u}", "job", &job) != 0)
			return ctl_reply_error(true, id, EINVAL, "%s", err);
		rc = dp_remove(dp, job, err, sizeof(err));
		if (rc != 0)
			return ctl_reply_error(true, id, -rc, "%s", err);
		return ctl_reply_ok(id);
	}
	if (strcmp(op, "peers") == 0) {
		json_t *peers = NULL;

		if (ctl_args_unpack(req, err, sizeof(err), "{s:o}", "peers", &peers) != 0)
			return ctl_reply_error(true, id, EINVAL, "%s", err);
		rc = dp_peers_set(dp, peers, err, sizeof(err));
		if (rc != 0)
			return ctl_reply_error(true, id, -rc, "%s", err);
		r = ctl_reply_ok(id);
		json_object_set_new(r, "peers", json_integer(dp->n_peers));
		return r;
	}
	if (strcmp(op, "delay") == 0)
		return op_delay(dp, req, id);
	if (strcmp(op, "stats") == 0) {
		if (ctl_args_unpack(req, err, sizeof(err), "{}") != 0)
			return ctl_reply_error(true, id, EINVAL, "%s", err);
		dp_peers_update(dp);
		json_t *st = dp_stats_json(dp);

		r = ctl_reply_ok(id);
		json_object_update(r, st);
		json_decref(st);
		json_object_set_new(r, "control_term",
				    dp->ctl_term > 0 ? json_integer(dp->ctl_term) : json_null());
		json_object_set_new(r, "stale_terms_refused",
				    json_integer((json_int_t)dp->ctl_stale_terms));
		return r;
	}
	if (strcmp(op, "dump") == 0) {
		json_t *jv = NULL;

		if (ctl_args_unpack(req, err, sizeof(err), "{s?o}", "job", &jv) != 0)
			return ctl_reply_error(true, id, EINVAL, "%s", err);
		if (jv != NULL && (!json_is_integer(jv) || json_integer_value(jv) < 0 ||
				   json_integer_value(jv) > UINT32_MAX))
			return ctl_reply_error(true, id, EINVAL,
					       "field 'job': expected an integer "
					       "0..4294967295");
		r = ctl_reply_ok(id);
		json_object_set_new(r, "tables",
				    dp_dump_json(dp,
						 jv != NULL ? (uint32_t)json_integer_value(jv) : 0,
						 jv == NULL));
		return r;
	}
	return ctl_reply_error(true, id, EOPNOTSUPP, "field 'op': unknown op '%s'", op);
}

/* dp_ctl_reload_tls() for ctltls_reload_reply(). */
static int
reload_cb(void *arg, char *msg, size_t msglen)
{
	return dp_ctl_reload_tls(arg, msg, msglen);
}

/* `reload_tls`: the TLS files read again, as on SIGHUP; the reply says what is in use. */
static json_t *
op_reload_tls(struct dp_ctl *c, const json_t *req)
{
	char err[CTLTLS_INFO_MAX];
	const char *op;
	uint32_t id = 0;
	int rc = ctl_request_check(req, &id, &op, err, sizeof(err));

	if (rc != 0)
		return ctl_reply_error(ctl_request_id(req, &id), id, -rc, "%s", err);
	return ctltls_reload_reply(req, id, reload_cb, c, c->tls);
}

/* The ops a `monitor` certificate may call: those that change nothing. */
static bool
op_reads_only(const char *op)
{
	static const char *const ro[] = {"version", "ping", "stats", "dump"};

	for (size_t i = 0; i < sizeof(ro) / sizeof(ro[0]); i++)
		if (strcmp(op, ro[i]) == 0)
			return true;
	return false;
}

/* A request from the unix socket or a TLS client: its role's rights, then the op. */
static json_t *
ctl_serve_request(void *arg, struct ctlsrv_client *cl, const json_t *req)
{
	struct dp_ctl *c = arg;
	const json_t *opv = json_object_get(req, "op");
	const char *op = json_is_string(opv) ? json_string_value(opv) : NULL;
	uint32_t id = 0;
	json_t *r;

	if (op != NULL && ctlsrv_client_role(cl) == CTLTLS_ROLE_MONITOR && !op_reads_only(op)) {
		bool has_id = ctl_request_id(req, &id);

		ctlsrv_refuse(c->srv, cl, CTLSRV_REF_FORBIDDEN, "op '%s' needs the role 'control'",
			      op);
		return ctl_reply_error(has_id, id, EPERM,
				       "field 'op': '%s' needs a certificate "
				       "of role 'control', this one is 'monitor'",
				       op);
	}
	if (op != NULL && strcmp(op, "reload_tls") == 0)
		return op_reload_tls(c, req);
	r = dp_ctl_handle(c->dp, req);
	if (r != NULL && op != NULL && strcmp(op, "stats") == 0 &&
	    json_is_true(json_object_get(r, "ok"))) {
		json_object_set_new(r, "control", ctlsrv_json(c->srv));
		if (c->dp->msrv != NULL)
			json_object_set_new(r, "metrics", promsrv_json(c->dp->msrv));
	}
	return r;
}

void
dp_ctl_poll(struct dp_ctl *c, int timeout_ms)
{
	ctlsrv_poll(c->srv, timeout_ms, -1);
}
