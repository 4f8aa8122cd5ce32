/* SPDX-License-Identifier: BSD-3-Clause
 *
 * The control process's TLS files read again (tls_reload.h). On the daemon's thread.
 */
#include <errno.h>
#include <stdio.h>

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

/* tls_reload() for ctltls_reload_reply(). */
static int
reload_cb(void *arg, char *msg, size_t msglen)
{
	return tls_reload(arg, msg, msglen);
}

json_t *
tls_reload_op(struct dmn *m, const json_t *req, uint32_t id)
{
	return ctltls_reload_reply(req, id, reload_cb, m,
				   m->tls_server != NULL ? m->tls_server : m->tls_client);
}
