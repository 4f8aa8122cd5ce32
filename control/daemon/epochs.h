/* SPDX-License-Identifier: BSD-3-Clause
 *
 * Each job's epochs (docs/DEPLOYMENT.md, "Installing an epoch"): at start, taking over the
 * epoch the gateways run when it is what the daemon would plan; then, whenever a job is
 * marked for a new epoch, planning it over the gateways and links that are up and
 * installing it in two phases (install.h), with what follows a failure. On the daemon's
 * thread (daemon_internal.h). No DPDK.
 */
#ifndef GEOREDUCE_EPOCHS_H
#define GEOREDUCE_EPOCHS_H

#include "daemon_internal.h"

/** Install the jobs that need it, once every gateway's state is known. */
void install_due(struct dmn *m);

#endif
