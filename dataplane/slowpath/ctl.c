/* SPDX-License-Identifier: BSD-3-Clause
 *
 * Slow path (control thread): the control socket (docs/CONTROL.md). Requests are framed
 * JSON (lib/ctlmsg.h), answered in order, one connection at a time served to the end of
 * what it has sent. A malformed request gets an error reply and changes nothing; broken
 * framing closes the connection.
 */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "ctlmsg.h"
#include "dp.h"
#include "slowpath/slowpath.h"

#define CTL_CONNS_MAX 16

struct dp_ctl {
	struct dp *dp;
	char *path;
	int lfd;
	int n_conns;
	struct ctl_conn conns[CTL_CONNS_MAX];
};

struct dp_ctl *
dp_ctl_create(struct dp *dp, const char *path, char *err, size_t errlen)
{
	struct dp_ctl *c = calloc(1, sizeof(*c));
	int fd;

	if (c == NULL) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	fd = ctl_listen(path);
	if (fd < 0) {
		snprintf(err, errlen, "--ctl-socket %s: %s", path, strerror(-fd));
		free(c);
		return NULL;
	}
	c->dp = dp;
	c->lfd = fd;
	c->path = strdup(path);
	return c;
}

void
dp_ctl_free(struct dp_ctl *c)
{
	if (c == NULL)
		return;
	for (int i = 0; i < c->n_conns; i++)
		ctl_conn_fini(&c->conns[i]);
	close(c->lfd);
	if (c->path != NULL)
		unlink(c->path);
	free(c->path);
	free(c);
}

/* prepare {table}, install {table} (prepare and activate) and activate {job, epoch}. */
static json_t *
op_table(struct dp *dp, const json_t *req, uint32_t id, bool prepare, bool activate)
{
	char err[TABLE_ERR_MAX];
	json_t *table = NULL, *r;
	uint32_t job = 0, epoch = 0;
	int rc;

	if (prepare) {
		if (ctl_args_unpack(req, err, sizeof(err), "{s:o}", "table", &table) != 0)
			return ctl_reply_error(true, id, EINVAL, "%s", err);
		rc = dp_prepare(dp, table, &job, &epoch, err, sizeof(err));
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
		}
		return r;
	}
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
	if (strcmp(op, "stats") == 0) {
		if (ctl_args_unpack(req, err, sizeof(err), "{}") != 0)
			return ctl_reply_error(true, id, EINVAL, "%s", err);
		json_t *st = dp_stats_json(dp);

		r = ctl_reply_ok(id);
		json_object_update(r, st);
		json_decref(st);
		return r;
	}
	if (strcmp(op, "dump") == 0) {
		json_t *jv = NULL;

		if (ctl_args_unpack(req, err, sizeof(err), "{s?o}", "job", &jv) != 0)
			return ctl_reply_error(true, id, EINVAL, "%s", err);
		if (jv != NULL && (!json_is_integer(jv) || json_integer_value(jv) < 0 ||
				   json_integer_value(jv) > UINT32_MAX))
			return ctl_reply_error(true, id, EINVAL, "field 'job': expected an integer "
					       "0..4294967295");
		r = ctl_reply_ok(id);
		json_object_set_new(r, "tables",
				    dp_dump_json(dp, jv != NULL ? (uint32_t)json_integer_value(jv)
								: 0, jv == NULL));
		return r;
	}
	return ctl_reply_error(true, id, EOPNOTSUPP, "field 'op': unknown op '%s'", op);
}

/* Serve one connection's complete requests; false when it must be closed. */
static bool
serve(struct dp_ctl *c, struct ctl_conn *cn)
{
	char err[256];
	json_t *msg, *reply;
	int rc;

	while ((rc = ctl_conn_read(cn, &msg, err, sizeof(err))) != 0) {
		if (rc == -EBADMSG) {
			reply = ctl_reply_error(false, 0, EBADMSG, "invalid message: %s", err);
		} else if (rc < 0) {
			return false;
		} else {
			reply = dp_ctl_handle(c->dp, msg);
			json_decref(msg);
		}
		rc = reply != NULL ? ctl_send(cn->fd, reply) : -ENOMEM;
		json_decref(reply);
		if (rc != 0)
			return false;
	}
	return true;
}

void
dp_ctl_poll(struct dp_ctl *c, int timeout_ms)
{
	struct pollfd pfd[CTL_CONNS_MAX + 1];

	pfd[0].fd = c->lfd;
	pfd[0].events = POLLIN;
	for (int i = 0; i < c->n_conns; i++) {
		pfd[i + 1].fd = c->conns[i].fd;
		pfd[i + 1].events = POLLIN;
	}
	if (poll(pfd, (nfds_t)c->n_conns + 1, timeout_ms) <= 0)
		return;
	for (int i = c->n_conns - 1; i >= 0; i--) {
		if (pfd[i + 1].revents == 0)
			continue;
		if (!serve(c, &c->conns[i])) {
			ctl_conn_fini(&c->conns[i]);
			c->conns[i] = c->conns[--c->n_conns];
		}
	}
	if (pfd[0].revents & POLLIN) {
		int fd = accept4(c->lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);

		if (fd < 0)
			return;
		if (c->n_conns == CTL_CONNS_MAX) {
			DP_LOG(WARNING, "control socket: %d connections open, refusing another\n",
			       CTL_CONNS_MAX);
			close(fd);
			return;
		}
		ctl_conn_init(&c->conns[c->n_conns++], fd);
	}
}
