/* SPDX-License-Identifier: BSD-3-Clause
 *
 * Joining a job through the control process (georeduce.h, docs/CLIENT.md): the worker's
 * table over the control protocol (lib/ctlmsg.h), on TLS 1.3 (lib/ctltls.h) or a unix
 * socket, and a long poll for each next epoch.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <jansson.h>

#include "clock.h"
#include "ctlmsg.h"
#include "ctlpeers.h"
#include "ctltls.h"
#include "georeduce.h"
#include "jsonutil.h"

/* How often gr_join_config() asks again while no replica of the control process leads,
 * or after the control process hung up. */
#define JOIN_AGAIN_MS 200

struct gr_join {
	struct ctl_peers peers; /* the control endpoints, the one that answered last */
	char *server_name;
	struct ctltls_ctx *tls;
	uint32_t job;
	uint16_t worker_id;
	bool elastic;    /* joined with gr_join_elastic(): renews its membership */
	int64_t last_ms; /* monotonic ms of its last request */
};

void
gr_join_close(struct gr_join *j)
{
	if (j == NULL)
		return;
	ctl_peers_close(&j->peers);
	ctltls_ctx_free(j->tls);
	free(j->server_name);
	free(j);
}

/* Close j after a failure rc (a negative errno): NULL with errno set. */
static struct gr_join *
join_fail(struct gr_join *j, int rc)
{
	gr_join_close(j);
	errno = -rc;
	return NULL;
}

/* Whether a call's failure rc is the control process closing the connection before it
 * answered: in the handshake (a worker too slow to finish it, as one stopped or starved of
 * CPU is, is closed after the control process's handshake limit), or before the answer. The
 * "worker" request only reads, so it is made again. */
static bool
hung_up(int rc)
{
	return rc == -ECONNRESET || rc == -EPIPE || rc == -ECONNABORTED;
}

/* Whether the "worker" request that failed with rc is asked again (gr_join_config()):
 * while no replica leads (EAGAIN), after a hang-up, or when nothing listens yet
 * (ECONNREFUSED: the control process is starting or restarting; nothing was sent). */
static bool
ask_again(int rc)
{
	return rc == -EAGAIN || hung_up(rc) || rc == -ECONNREFUSED;
}

/* One request of op with the arguments args (a reference taken over) to the control
 * endpoints by their failover rule (lib/ctlpeers.h): reconnecting once if the connection
 * broke (the control process restarted), another replica if one does not answer or
 * follows. The ok response (a new reference), or NULL with *rc and err. */
static json_t *
join_rpc(struct gr_join *j, const char *op, json_t *args, int wait_ms, int *rc, char *err,
	 size_t errlen)
{
	json_t *r;

	if (args == NULL) {
		*rc = -ENOMEM;
		json_util_fail(err, errlen, "out of memory");
		return NULL;
	}
	r = ctl_peers_call(&j->peers, op, args, wait_ms, err, errlen);
	if (r == NULL) {
		*rc = -errno;
		return NULL;
	}
	j->last_ms = clock_now_ms();
	if (!json_is_true(json_object_get(r, "ok"))) {
		json_int_t e = json_integer_value(json_object_get(r, "errno"));

		*rc = e > 0 && e < 4096 ? -(int)e : -EPROTO;
		json_util_fail(err, errlen, "%s: job %u worker %u: %s",
			       ctl_peers_current(&j->peers), j->job, j->worker_id,
			       json_string_value(json_object_get(r, "error")));
		json_decref(r);
		return NULL;
	}
	*rc = 0;
	return r;
}

/* One "worker" request: the table, or with has_after a long poll. As join_rpc(). */
static json_t *
join_call(struct gr_join *j, bool has_after, uint32_t after, int wait_ms, int *rc, char *err,
	  size_t errlen)
{
	json_t *args =
		json_pack("{s:I,s:i}", "job", (json_int_t)j->job, "worker", (int)j->worker_id);

	if (args != NULL && has_after) {
		json_object_set_new(args, "after", json_integer(after));
		json_object_set_new(args, "wait_ms", json_integer(wait_ms));
	}
	return join_rpc(j, "worker", args, wait_ms, rc, err, errlen);
}

/* cfg from a response that carries a table: 0 or -EINVAL. */
static int
config_of(struct gr_join *j, const json_t *r, struct gr_config *cfg, char *err, size_t errlen)
{
	char *text = json_dumps(json_object_get(r, "table"), JSON_COMPACT);
	int rc;

	if (text == NULL)
		return json_util_fail(err, errlen, "%s: an answer without a table",
				      ctl_peers_current(&j->peers));
	rc = gr_config_from_table_string(cfg, text, j->worker_id, err, errlen);
	free(text);
	return rc;
}

/* A connection for o, connected to nothing yet; NULL with errno and err filled. */
static struct gr_join *
join_new(const struct gr_join_opts *o, char *err, size_t errlen)
{
	struct gr_join *j = calloc(1, sizeof(*j));
	int rc;

	if (j == NULL) {
		json_util_fail(err, errlen, "out of memory");
		errno = ENOMEM;
		return NULL;
	}
	rc = ctl_peers_parse(&j->peers, o->control, err, errlen);
	if (rc != 0)
		goto fail;
	j->job = o->job;
	j->worker_id = o->worker_id;
	j->server_name = strdup(o->server_name != NULL ? o->server_name : "control");
	rc = j->server_name == NULL ? json_util_failrc(-ENOMEM, err, errlen, "out of memory") :
				      ctltls_client_ctx(o->control, o->cert, o->key, o->ca, o->crl,
							&j->tls, err, errlen);
	ctl_peers_setup(&j->peers, j->tls, j->server_name, CTLTLS_ROLE_CONTROL,
			o->timeout_ms > 0 ? o->timeout_ms : GR_JOIN_TIMEOUT_MS, true);
	if (rc == 0)
		return j;
fail:
	return join_fail(j, rc);
}

struct gr_join *
gr_join_elastic(const struct gr_join_opts *o, const char *node, const char *ipv4, uint16_t port,
		uint16_t *worker_id, char *err, size_t errlen)
{
	struct gr_join *j;
	json_t *r, *args;
	int rc;

	if (node == NULL || ipv4 == NULL) {
		errno = EINVAL;
		json_util_fail(err, errlen, "no site or address to join at");
		return NULL;
	}
	j = join_new(o, err, errlen);
	if (j == NULL)
		return NULL;
	args = json_pack("{s:I,s:s,s:s,s:i}", "job", (json_int_t)o->job, "node", node, "ipv4", ipv4,
			 "port", (int)port);
	if (args != NULL && o->worker_id != 0)
		json_object_set_new(args, "worker", json_integer(o->worker_id));
	r = join_rpc(j, "join", args, 0, &rc, err, errlen);
	if (r == NULL)
		return join_fail(j, rc);
	j->worker_id = (uint16_t)json_integer_value(json_object_get(r, "worker"));
	j->elastic = true;
	json_decref(r);
	*worker_id = j->worker_id;
	return j;
}

/* One op of this elastic worker ({job, worker}): 0 or a negative errno with err. */
static int
member_op(struct gr_join *j, const char *op, char *err, size_t errlen)
{
	int rc;
	json_t *r = join_rpc(
		j, op,
		json_pack("{s:I,s:i}", "job", (json_int_t)j->job, "worker", (int)j->worker_id), 0,
		&rc, err, errlen);

	json_decref(r);
	return rc;
}

int
gr_join_renew(struct gr_join *j, char *err, size_t errlen)
{
	if (!j->elastic || clock_now_ms() - j->last_ms < GR_JOIN_RENEW_MS)
		return 0;
	return member_op(j, "heartbeat", err, errlen);
}

int
gr_join_leave(struct gr_join *j, char *err, size_t errlen)
{
	int rc;

	if (!j->elastic)
		return json_util_failrc(-EINVAL, err, errlen,
					"worker %u did not join job %u with gr_join_elastic()",
					j->worker_id, j->job);
	rc = member_op(j, "leave", err, errlen);
	if (rc == 0)
		j->elastic = false;
	return rc;
}

struct gr_join *
gr_join_open(const struct gr_join_opts *o, char *err, size_t errlen)
{
	struct gr_join *j = join_new(o, err, errlen);
	json_t *r;
	int rc;

	if (j == NULL)
		return NULL;
	/* The worker is known (or refused) at once; a missing epoch is not an error here,
	 * nor a control process that closed the connection or does not listen yet:
	 * gr_join_config() asks again. */
	r = join_call(j, false, 0, 0, &rc, err, errlen);
	json_decref(r);
	return rc != 0 && !ask_again(rc) ? join_fail(j, rc) : j;
}

int
gr_join_reload_tls(struct gr_join *j, char *err, size_t errlen)
{
	if (j->tls == NULL) {
		json_util_fail(err, errlen, "%s: no TLS", ctl_peers_current(&j->peers));
		return 0;
	}
	return ctltls_ctx_reload(j->tls, err, errlen);
}

int
gr_join_config(struct gr_join *j, struct gr_config *cfg, int wait_ms, char *err, size_t errlen)
{
	int64_t until = clock_now_ms() + (wait_ms > 0 ? wait_ms : 0);
	int rc;

	/* Epoch 0 is never live: "after 0" answers with the first live epoch. An elastic
	 * worker's long polls are short (its renewals): asked again until wait_ms. While no
	 * replica of a replicated control process leads (EAGAIN from every one: an
	 * election), after the control process closed the connection before answering, or
	 * while nothing listens at its address (a restart), asked again every JOIN_AGAIN_MS
	 * until wait_ms too; the error that ends the wait says how long it was asked. */
	for (;;) {
		int64_t left;

		rc = gr_join_wait(j, 0, (int)(until - clock_now_ms()), cfg, err, errlen);
		left = until - clock_now_ms();
		if (left <= 0 || !((rc == 0 && j->elastic) || ask_again(rc)))
			break;
		if (rc < 0) {
			int64_t ms = left < JOIN_AGAIN_MS ? left : JOIN_AGAIN_MS;
			struct timespec ts = {(time_t)(ms / 1000), (long)(ms % 1000) * 1000000L};

			nanosleep(&ts, NULL);
		}
	}
	if (rc == 0) {
		json_util_fail(err, errlen,
			       "%s: job %u has no live epoch for worker %u after "
			       "%d ms",
			       ctl_peers_current(&j->peers), j->job, j->worker_id, wait_ms);
		return -ETIMEDOUT;
	}
	if (ask_again(rc) && wait_ms > 0) {
		size_t n = strnlen(err, errlen);

		if (n + 1 < errlen)
			snprintf(err + n, errlen - n, " (asked for %d ms)", wait_ms);
	}
	return rc < 0 ? rc : 0;
}

int
gr_join_wait(struct gr_join *j, uint32_t epoch, int wait_ms, struct gr_config *cfg, char *err,
	     size_t errlen)
{
	json_t *r;
	int rc;

	if (wait_ms < 0)
		wait_ms = 0;
	if (wait_ms > GR_JOIN_WAIT_MAX_MS)
		wait_ms = GR_JOIN_WAIT_MAX_MS;
	if (j->elastic && wait_ms > GR_JOIN_RENEW_MS) /* its long polls renew it */
		wait_ms = GR_JOIN_RENEW_MS;
	r = join_call(j, true, epoch, wait_ms, &rc, err, errlen);
	if (r == NULL)
		return rc;
	if (json_object_get(r, "table") == NULL) {
		json_decref(r);
		return 0;
	}
	rc = config_of(j, r, cfg, err, errlen);
	json_decref(r);
	return rc == 0 ? 1 : rc;
}
