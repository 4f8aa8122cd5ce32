/* SPDX-License-Identifier: BSD-3-Clause
 *
 * Control replicas on etcd (docs/DEPLOYMENT.md, "Replicas on etcd"): with --etcd, any
 * number of georeduce-control processes share one deployment and one of them leads.
 *
 *  - Election: a replica that finds no PREFIX/leader key grants itself a lease of
 *    --lease-ms (rounded up to whole seconds, etcd's unit) and, in one transaction,
 *    creates PREFIX/leader (its name and API address) on that lease if the key's
 *    create_revision is still 0. The winner's term is that create revision: every new
 *    leader key has a higher one. The leader keeps its lease alive every lease/3; the
 *    others read the key every lease/3 and stand when it is gone (its lease expired or
 *    was revoked).
 *  - The leader's keepalives are sent by a thread of its own (keepalive.h), so that
 *    nothing the daemon's thread does delays them. Only the leader heartbeats, plans and
 *    installs; it holds the leadership until valid_until, the time its last successful
 *    keepalive was sent plus the lease. Past that, or as soon as etcd says the lease is
 *    gone, it changes no gateway (every request that would is checked against
 *    valid_until, install.h); the daemon's thread notices at its next elect_service() and
 *    the leader is deposed: it stops, and its process starts again as a follower
 *    (main.c).
 *  - Fencing: every request that changes a gateway's tables carries the term
 *    (install_gw.term); gateways refuse a term older than one they have seen.
 *  - State: the jobs of the API (jobs_state.c's document) are kept at PREFIX/state,
 *    written only in a transaction that checks the leader key is still this term's; a
 *    new leader reads it before it plans, and takes over the epochs the gateways run.
 *
 * On the daemon's thread, but for the leader's keepalives (keepalive.h, on their own
 * thread with their own etcd client); etcd is called with blocking requests of at most
 * lease/3 each. No DPDK.
 */
#ifndef GEOREDUCE_ELECT_H
#define GEOREDUCE_ELECT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "daemon_internal.h"
#include "etcd.h"
#include "keepalive.h"

#define ELECT_NAME_MAX 128
#define ELECT_KEY_MAX 256
#define ELECT_VALUE_MAX 512

struct elect {
	struct etcd *etcd;   /* the daemon thread's client */
	struct etcd_opts eo; /* how to reach etcd, for the keepalive thread's client */
	struct keepalive ka; /* leading: the keepalive thread, and valid_until */
	char key_leader[ELECT_KEY_MAX], key_state[ELECT_KEY_MAX];
	char value[ELECT_VALUE_MAX]; /* this replica's leader value (JSON) */
	char name[ELECT_NAME_MAX];   /* this replica's name */
	int lease_ms;
	int64_t lease;   /* the lease of this leadership; 0: none */
	bool leading;    /* won, and not deposed */
	bool deposed;    /* lost the lease while leading: the daemon stops */
	int64_t term;    /* leading: this one; following: the leader's seen (0: none) */
	int64_t next_at; /* following: monotonic ms of the next poll */
	uint64_t ka_failed, ka_answered; /* the keepalive thread's counts last looked at */
	char leader[ELECT_VALUE_MAX];    /* the leader's value as read ("" if none) */
	char error[ETCD_ERR_MAX];        /* the last etcd failure; "" once a call worked */
	int64_t error_since;             /* monotonic ms of the first failure in a row; -1 */
	uint64_t terms_won, etcd_errors;
};

/** With o->etcd: the client and the keys into m->el (NULL without --etcd). 0, or a
 * negative errno after logging why the daemon cannot start. */
int elect_setup(struct dmn *m);

/** Whether this replica may change gateways: always without --etcd. */
bool elect_leading(const struct dmn *m);

/** Leading: depose the leader if its keepalive thread lost the lease or none succeeded
 * for a whole lease (and log what the thread's failures were). Following: look for the
 * leader and stand, when due; on winning, the keepalive thread is started, the jobs of
 * PREFIX/state are read and every job planned. */
void elect_service(struct dmn *m);

/** The ms until elect_service() is due, or -1 without --etcd. */
int64_t elect_next_ms(const struct dmn *m);

/** Whether a follower refuses op (it changes something, or needs live plans). */
bool elect_refuses(const char *op);

/** A follower's refusal of request id: EAGAIN with "leader" and "term". */
json_t *elect_refusal(const struct dmn *m, uint32_t id, const char *op);

/** For `status`: "election" (null without --etcd). */
json_t *elect_json(const struct dmn *m);

/** The state document into PREFIX/state, if this is still the leader of its term:
 * 0, or a negative errno with err filled (-ESTALE: no longer the leader). */
int elect_state_save(const struct dmn *m, const json_t *doc, char *err, size_t errlen);

/** PREFIX/state into *doc (NULL if there is none): 0, or a negative errno. */
int elect_state_load(struct dmn *m, json_t **doc, char *err, size_t errlen);

/** At stop: the keepalive thread stopped and joined; a leader that was not deposed
 * revokes its lease (a follower takes over at once); the client freed. */
void elect_free(struct dmn *m);

#endif
