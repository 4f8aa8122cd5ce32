/* SPDX-License-Identifier: BSD-3-Clause
 *
 * Talking to the gateways' dataplanes (docs/CONTROL.md) and installing one epoch of one
 * job on all of them in two phases (docs/DEPLOYMENT.md, "Installing an epoch"):
 *
 *  1. `prepare` the gateway's table on every gateway of the epoch, in order. The first
 *     gateway that rejects its table or does not answer ends the attempt: nothing is
 *     activated anywhere and the job stays on its previous epoch. Tables already staged on
 *     other gateways stay staged, unused, until a later `prepare` of a newer epoch of the
 *     job replaces them (a dataplane holds one staged table per job), so no `remove` is
 *     needed and a failed attempt never disturbs the live epoch.
 *  2. Only when every gateway prepared: `activate` on every gateway, in the same order.
 *     Activation is not atomic across gateways; see the guarantee in docs/DEPLOYMENT.md.
 *     A gateway that fails to activate is reported; the others still activate, so the
 *     gateways left on the previous epoch are exactly the failed ones, and the caller
 *     installs the next epoch without them.
 *
 * Control side, one thread per struct install_gw at a time. No DPDK.
 */
#ifndef GEOREDUCE_INSTALL_H
#define GEOREDUCE_INSTALL_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "ctlmsg.h"
#include "ctltls.h"
#include "table.h"

/** A connection to one dataplane's control endpoint, opened on first use. */
struct install_gw {
	const char *name;       /* for messages: the topology node id */
	const char *socket;     /* the endpoint: a socket path or tls://HOST:PORT */
	struct ctltls_ctx *tls; /* for a tls:// endpoint: the client context */
	const char *expect;     /* the name the server's certificate must carry */
	enum ctltls_role role;  /* and its role */
	bool open;              /* conn is connected */
	struct ctl_conn conn;
	/* A replicated control process's leadership (elect.h): the term that requests that
	 * change tables (prepare, activate, install, remove) carry, 0 for none; and, if not
	 * NULL, the monotonic ms until which it may send them (after that they fail with
	 * ESTALE, unsent), which the leader's keepalive thread moves on (keepalive.h). */
	int64_t term;
	const _Atomic int64_t *until;
};

/** Initialise gw for the endpoint at path (nothing is connected yet); a tls:// endpoint
 * needs install_gw_tls() too. */
void install_gw_init(struct install_gw *gw, const char *name, const char *path);

/** The TLS client context for gw's tls:// endpoint, and the certificate the server must
 * present: its name and role (the context is borrowed and must outlive gw's use). */
void install_gw_tls(struct install_gw *gw, struct ctltls_ctx *tls, const char *expect,
		    enum ctltls_role role);

/** Close gw's connection, if any. */
void install_gw_close(struct install_gw *gw);

/** Whether op changes a dataplane's tables (and carries the leadership's term). */
bool install_op_fenced(const char *op);

/**
 * One call on gw's dataplane: connect if needed, then ctl_call(). An op that changes
 * tables carries gw->term (if not 0) and is not sent past *gw->until (errno ESTALE). On a transport failure
 * (cannot connect, timeout, broken frame, peer gone) the connection is closed, so that the
 * next call reconnects.
 *
 * @param args  Op arguments or NULL; the reference is stolen.
 * @param err   Receives one line on failure ("SOCKET: cannot connect: ..." and the like).
 * @return      The response (a new reference; check "ok"), or NULL with errno set and err
 *              filled: the dataplane did not answer.
 */
json_t *install_call(struct install_gw *gw, const char *op, json_t *args, int timeout_ms, char *err,
		     size_t errlen);

/**
 * Whether resp is a success response; if not, err receives "OP: ERROR (strerror)" and
 * *errnum the response's errno (EBADMSG for a response without one).
 */
bool install_resp_ok(const json_t *resp, const char *op, int *errnum, char *err, size_t errlen);

/** What install_epoch() did. */
struct install_report {
	int n_prepared;               /* gateways that acknowledged prepare */
	int n_activated;              /* gateways that acknowledged activate */
	int failed;                   /* index of the first gateway that failed, -1 if none */
	int n_failed;                 /* gateways that failed (at most one in phase 1) */
	int phase;                    /* 1 prepare, 2 activate, 0 no failure */
	bool no_answer;               /* the first failure was no answer (not a rejection) */
	int errnum;                   /* its errno */
	char error[CTL_ERR_MAX + 64]; /* its one-line message */
	bool *activate_failed;        /* if not NULL (n entries): set for every gateway whose
				  * activate failed */
};

/**
 * Install epoch `epoch` of job `job` on n gateways: tables[i] goes to gws[i] (every table
 * must carry that job and epoch), with `prepare`'s `membership` membership[i] where that is
 * not 0 (NULL: none anywhere; a gateway older than revision 1.16 refuses the field). Two
 * phases as described above.
 *
 * @return  0 (every gateway runs the epoch), -ECANCELED (a prepare failed: no gateway
 *          activated; the job stays on its previous epoch), -EIO (every gateway prepared
 *          but some activate failed: rep says which), -EINVAL (bad arguments), -ENOMEM.
 */
int install_epoch(struct install_gw *gws, struct table *const *tables, const uint32_t *membership,
		  int n, uint32_t job, uint32_t epoch, int timeout_ms, struct install_report *rep);

#endif
