/* SPDX-License-Identifier: BSD-3-Clause
 *
 * Jobs created, changed and deleted through the control API (docs/CONTROL.md,
 * "job_create" and the rest) beside the deployment file's, and the tenants that own them
 * (docs/DEPLOYMENT.md, "Tenants"): a certificate that names a tenant sees and changes only
 * that tenant's jobs, within its quotas. The jobs of the API are kept in the state
 * directory (DAEMON_STATE_FILE, written to a temporary file, synced and renamed over the
 * old one) and read again at start. A deleted job is removed from every gateway (the
 * dataplane's `remove`); a gateway that does not answer is asked again every heartbeat.
 * On the daemon's thread. No DPDK.
 */
#ifndef GEOREDUCE_JOBS_H
#define GEOREDUCE_JOBS_H

#include <stdbool.h>
#include <stdint.h>

#include <jansson.h>

#include "daemon_internal.h"

/** At start, before the first plan: the state directory's jobs into m->d and m->jobs
 * (those the deployment no longer admits are logged and left out). 0, or a negative
 * errno after logging why the daemon cannot start (an unreadable or damaged file). */
int jobs_load(struct dmn *m);

/** Whether op is one of the ops of this file (job_create, job_update, job_delete,
 * job_list). */
bool jobs_is_op(const char *op);

/** Answer one request of such an op from a client of tenant t ("": none; its
 * certificate checked with jobs_client_tenant()). */
json_t *jobs_op(struct dmn *m, const char *t, const char *op, const json_t *req, uint32_t id);

/**
 * cl's tenant into out (DEPLOY_TENANT_NAME_MAX + 1 bytes): "" for the unix socket and a
 * certificate that names none, which see every job.
 *
 * @return  0, or -EINVAL for a certificate that names its tenant badly (refused).
 */
int jobs_client_tenant(const struct ctlsrv_client *cl, char *out);

/** The refusal of a request from cl, whose certificate names its tenant badly. */
json_t *jobs_refuse_tenant(struct dmn *m, struct ctlsrv_client *cl, uint32_t id);

/** Whether a client of tenant t ("" for none) sees job i. */
bool jobs_visible(const struct dmn *m, const char *t, int i);

/** Whether job id was deleted through the API lately (its workers are told so). */
bool jobs_was_deleted(const struct dmn *m, uint32_t id);

/** Every heartbeat: send the removals that gateways have not acknowledged again. */
void jobs_service(struct dmn *m);

/** Write the jobs of the API, but job skip (-1: none), the removals pending and the
 * deleted ids to the state directory (nothing without one). 0, or a negative errno with
 * err filled; the file is then as it was. */
int jobs_state_save(const struct dmn *m, int skip, char *err, size_t errlen);

/** Add job nj (its workers are taken over), created through the API with its job object
 * spec (a reference is taken) by tenant t (""), as m->d->jobs[m->d->n_jobs]. Its index. */
int jobs_add(struct dmn *m, const struct deploy_job *nj, json_t *spec, const char *t);

/** Job i of the API becomes nj (its workers taken over) with its object spec (owned),
 * kept in the state directory. 0; or a negative errno with err filled, job i as it was
 * and nj's workers and spec freed. */
int jobs_replace(struct dmn *m, int i, const struct deploy_job *nj, json_t *spec, char *err,
		 size_t errlen);

/** At stop: free what the jobs of the API hold. */
void jobs_free(struct dmn *m);

#endif
