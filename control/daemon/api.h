/* SPDX-License-Identifier: BSD-3-Clause
 *
 * The daemon's own control API (docs/CONTROL.md) on its unix socket and, with the
 * deployment's "tls", over TLS (ctlsrv.h): `version`, `ping`, `status`, `replan` and the
 * workers' `worker` (their table, and a long poll for the next epoch), each allowed by the
 * role of the client's certificate. On the daemon's thread (daemon_internal.h). No
 * DPDK.
 */
#ifndef GEOREDUCE_API_H
#define GEOREDUCE_API_H

#include "daemon_internal.h"

/** Answer the long polls whose epoch came or whose time is up. */
void waiters_service(struct dmn *m);

/** The ms until the first long poll's deadline, or -1. */
int64_t waiters_next_ms(const struct dmn *m);

/** The TLS contexts of the deployment, the gateways' certificates expected, and the API. */
int api_setup(struct dmn *m);

#endif
