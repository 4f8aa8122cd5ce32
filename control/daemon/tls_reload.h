/* SPDX-License-Identifier: BSD-3-Clause
 *
 * The control process's TLS files read again while it runs (docs/DEPLOYMENT.md,
 * "Certificates"): on SIGHUP (daemon.c) and through the `reload_tls` op of its API
 * (docs/CONTROL.md). New connections, to the gateways and from workers and tools, use
 * the new files; connections open keep their session until they close. On the daemon's
 * thread (daemon_internal.h). No DPDK.
 */
#ifndef GEOREDUCE_TLS_RELOAD_H
#define GEOREDUCE_TLS_RELOAD_H

#include <jansson.h>

#include "daemon_internal.h"

/**
 * Reload the client context (to the gateways) and the server context (the API over TLS)
 * from the deployment's "tls" files. Logged either way; a file that does not load
 * leaves the files loaded before in use. msg (if not NULL) receives the log line's text.
 *
 * @return  0, -ENOENT (the deployment has no "tls") or -EINVAL.
 */
int tls_reload(struct dmn *m, char *msg, size_t msglen);

/** The `reload_tls` op: request req with id; the reply (a new reference). */
json_t *tls_reload_op(struct dmn *m, const json_t *req, uint32_t id);

#endif
