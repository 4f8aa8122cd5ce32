/* SPDX-License-Identifier: BSD-3-Clause
 *
 * The deployment parser's jobs (docs/DEPLOYMENT.md, "jobs"): each job's id, algorithm and
 * its options, workers, slots, and tensor (dtype, elements, MTU and chunk size, the
 * workers' LAN hop), checked against the topology, the gateways and the protected links,
 * which deploy_parse() (deploy.h) reads first.
 *
 * Control side, one parse per struct dctx at a time. No DPDK.
 */
#ifndef GEOREDUCE_DEPLOY_JOB_H
#define GEOREDUCE_DEPLOY_JOB_H

#include <jansson.h>

#include "deploy.h"
#include "deploy_field.h"

/** The document's "jobs" into d->jobs (d->n_jobs: those read so far, also on failure,
 * for deploy_free()). 0 or -EINVAL with the message in c's error buffer. */
int deploy_parse_jobs(struct dctx *c, const json_t *root, struct deploy *d);

#endif
