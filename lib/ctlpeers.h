/* SPDX-License-Identifier: BSD-3-Clause
 *
 * A client's list of control endpoints (docs/CONTROL.md, "Several control endpoints"):
 * the replicas of a replicated control process, given as one comma-separated list
 * ("tls://a:7310,tls://b:7310" or socket paths), and the calls that fail over between
 * them. The worker library (lib/client/join.c, job.c) and georeduce-control's own client
 * commands use it. The caller's thread; one list belongs to one thread. Slow path only.
 * No DPDK.
 *
 * The rule: a call first tries the endpoint that answered last (the first of the list at
 * the start). It goes on to another endpoint on a connection failure, a TLS failure, no
 * answer in time, or an answer of a follower (ok false, errno EAGAIN and a "leader"
 * field): to the leader it names if that is one of the list and not yet tried in this
 * call, else to the next in the list after the one just tried (wrapping around). Each
 * endpoint is tried at most once per call; when none answered otherwise, the call fails
 * with the last failure. A connection kept from an earlier call that turns out broken is
 * dialled again once, on the same endpoint, before the call moves on.
 */
#ifndef GEOREDUCE_CTLPEERS_H
#define GEOREDUCE_CTLPEERS_H

#include <stdbool.h>
#include <stddef.h>

#include <jansson.h>

#include "ctlmsg.h"
#include "ctltls.h"

/** Most endpoints one list holds. */
#define CTL_PEERS_MAX 8
/** Longest endpoint of a list, without the NUL (a socket path or tls://HOST:PORT). */
#define CTL_PEER_MAX 300

struct ctl_peers {
	unsigned int n;                           /* endpoints */
	unsigned int cur;                         /* the one that answered last, tried first */
	unsigned int tried;                       /* endpoints tried by the last call */
	char ep[CTL_PEERS_MAX][CTL_PEER_MAX + 1]; /* as given */
	struct ctltls_ctx *tls;                   /* for tls:// lists, borrowed; else NULL */
	const char *expect;                       /* the name the server's certificate carries */
	enum ctltls_role role;                    /* and its role */
	int timeout_ms;                           /* connecting, and each answer */
	bool keep;                                /* keep the connection between calls */
	bool open;                                /* conn is connected to ep[cur] */
	struct ctl_conn conn;
};

/**
 * Parse list (1 to CTL_PEERS_MAX endpoints separated by commas, all tls:// endpoints or
 * all socket paths, none empty and none twice) into p, with no connection.
 *
 * @param err  One line naming the element at fault ("control endpoint 2 of the list is
 *             empty").
 * @return     0, or -EINVAL with err filled.
 */
int ctl_peers_parse(struct ctl_peers *p, const char *list, char *err, size_t errlen);

/** Set how p's calls connect: the client context of a tls:// list (NULL for socket paths;
 * kept, not freed), the server's certificate name and role (CTLTLS_ROLE_CONTROL for the
 * control process), the timeout, and whether a connection stays open between calls. */
void ctl_peers_setup(struct ctl_peers *p, struct ctltls_ctx *tls, const char *expect,
		     enum ctltls_role role, int timeout_ms, bool keep);

/**
 * One call of op with args (a reference taken over; NULL: none) by the rule above;
 * wait_ms is added to the answer's timeout (a long poll's wait). At most n + 1 tries,
 * each at most timeout_ms to connect and timeout_ms + wait_ms for the answer.
 *
 * @return  The response (a new reference: ok, or an error other than a follower's
 *          refusal), or NULL with errno and err ("ENDPOINT: why") of the last failure;
 *          EAGAIN when the last endpoint tried was a follower.
 */
json_t *ctl_peers_call(struct ctl_peers *p, const char *op, json_t *args, int wait_ms, char *err,
		       size_t errlen);

/** The endpoint that answered last (the one the next call tries first). */
const char *ctl_peers_current(const struct ctl_peers *p);

/** Whether r is a follower's refusal: ok false, errno EAGAIN and a "leader" field. */
bool ctl_peers_refused(const json_t *r);

/** Close p's connection, if one is open. p stays usable. */
void ctl_peers_close(struct ctl_peers *p);

#endif
