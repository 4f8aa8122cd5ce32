/* SPDX-License-Identifier: BSD-3-Clause
 *
 * The control process's TLS files read again (tls_reload.h). On the daemon's thread.
 */
#include <errno.h>
#include <stdio.h>

#include "ctlmsg.h"
#include "ctltls.h"
#include "daemon.h"
#include "tls_reload.h"

/* Reload ctx (what, for the log) into msg: 0 or the error. */
static int
reload_one(struct ctltls_ctx *ctx, const char *what, char *msg, size_t msglen)
{
	int rc = ctx != NULL ? ctltls_ctx_reload(ctx, msg, msglen) : 0;

	if (rc != 0)
		control_log("tls: reload failed, the old files stay in use (%s): %s", what, msg);
	return rc;
}

int
tls_reload(struct dmn *m, char *msg, size_t msglen)
{
	char why[CTLTLS_INFO_MAX];
	int rc;

	if (m->tls_client == NULL && m->tls_server == NULL) {
		snprintf(why, sizeof(why), "no TLS (the deployment has no \"tls\")");
		control_log("tls: not reloaded: %s", why);
		rc = -ENOENT;
	} else {
		/* The same files: if the first does not load, the second is not tried. */
		rc = reload_one(m->tls_client, "to the gateways", why, sizeof(why));
		if (rc == 0)
			rc = reload_one(m->tls_server, "the API", why, sizeof(why));
		if (rc == 0)
			control_log("tls: reloaded: %s", why);
	}
	if (msg != NULL)
		snprintf(msg, msglen, "%s", why);
	return rc;
}

json_t *
tls_reload_op(struct dmn *m, const json_t *req, uint32_t id)
{
	char err[CTLTLS_INFO_MAX];
	const struct ctltls_ctx *c = m->tls_server != NULL ? m->tls_server : m->tls_client;
	json_t *r;
	int rc;

	if (ctl_args_unpack(req, err, sizeof(err), "{}") != 0)
		return ctl_reply_error(true, id, EINVAL, "%s", err);
	rc = tls_reload(m, err, sizeof(err));
	if (rc != 0)
		return ctl_reply_error(true, id, -rc, "%s", err);
	r = ctl_reply_ok(id);
	json_object_set_new(r, "tls", json_string(err));
	json_object_set_new(r, "reloads", json_integer((json_int_t)ctltls_ctx_reloads(c)));
	return r;
}
