/* SPDX-License-Identifier: BSD-3-Clause
 *
 * Elastic membership (docs/CONTROL.md, "Elastic membership"): workers join a job created
 * through the API with `"elastic": true` without being declared in it (`join`, which gives
 * each a worker id), renew their membership (`heartbeat`, or any `worker` request) and
 * leave (`leave`, or a renewal missed for the member timeout). Each change edits the job's
 * object ("workers"), which is kept in the state directory with the ids that joined; the
 * changes of one batch window make one epoch (hyst_batch_due()). On the daemon's thread.
 * No DPDK.
 */
#ifndef GEOREDUCE_ELASTIC_H
#define GEOREDUCE_ELASTIC_H

#include <stdbool.h>
#include <stdint.h>

#include <jansson.h>

#include "daemon_internal.h"

/** The DNS name a `worker` certificate carries to join elastic jobs at site NODE:
 * "site-NODE". */
#define ELASTIC_SITE_NAME "site-"

/** Whether op is one of the ops of this file (join, leave, heartbeat). */
bool elastic_is_op(const char *op);

/** Answer one request of such an op from client cl of tenant t ("": none). */
json_t *elastic_op(struct dmn *m, struct ctlsrv_client *cl, const char *t, const char *op,
		   const json_t *req, uint32_t id);

/** Job i's member of worker id w, or NULL (none, or a worker of its object's own). */
struct member *elastic_member(const struct dmn *m, int i, uint32_t w);

/** Whether cl may speak for job i's worker k, a member that joined: its certificate names
 * the worker's site (ELASTIC_SITE_NAME). */
bool elastic_may_speak(const struct dmn *m, const struct ctlsrv_client *cl, int i, int k);

/** After an epoch of job i went live (planned from its members now): every member is in. */
void elastic_epoch_live(struct dmn *m, int i);

/** Every loop of the daemon: members that missed their renewals leave; a job whose batch
 * of changes is due is marked for a new epoch (CAUSE_MEMBERSHIP). */
void elastic_service(struct dmn *m);

/** Milliseconds until elastic_service() has something to do; -1: nothing pending. */
int64_t elastic_next_ms(const struct dmn *m);

/** The ids that joined job i, for the state file; NULL for none. */
json_t *elastic_state_json(const struct dmn *m, int i);

/** At start: job i's members from the state file's "joined" (ids of its workers), each
 * heard from now. */
void elastic_state_load(struct dmn *m, int i, const json_t *joined);

/** Free job j's members. */
void elastic_free(struct job *j);

#endif
