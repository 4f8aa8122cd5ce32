/* SPDX-License-Identifier: BSD-3-Clause
 *
 * A bounded control-protocol server (docs/CONTROL.md, "Transport" and "Limits"): a unix
 * socket for local tools and, optionally, a TCP address with TLS 1.3 (ctltls.h), served
 * from one thread around poll(). The dataplane's control thread and georeduce-control use
 * it.
 *
 *  - Connections are bounded: max_handshakes in the TLS handshake at once, max_per_role
 *    authenticated ones per role (the unix socket's counting as the role "local"). When a
 *    class is full, a new connection takes the place of the one of that class that has
 *    been quiet longest, so connections that say nothing never lock anyone out.
 *  - A handshake must finish within handshake_ms; a connection idle for idle_ms (no
 *    request, no reply owed) is closed.
 *  - Every refusal (a failed or slow handshake, a role the server does not admit, an op
 *    the role may not call, an eviction, an idle close) is one log line with the peer
 *    address and the reason, and a counter (ctlsrv_json()).
 *  - A request gets its reply from the handler at once, or later (ctlsrv_defer() and
 *    ctlsrv_reply()): a long poll. A connection owed a reply is not read further and
 *    never idle.
 * Memory is sized at creation (plus each connection's frame buffer, bounded by
 * CTL_MSG_MAX). Slow path only; no DPDK.
 */
#ifndef GEOREDUCE_CTLSRV_H
#define GEOREDUCE_CTLSRV_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "ctltls.h"

#define CTLSRV_HANDSHAKE_MS_DEFAULT 5000
#define CTLSRV_IDLE_MS_DEFAULT 300000
#define CTLSRV_PER_ROLE_DEFAULT 16
#define CTLSRV_HANDSHAKES_DEFAULT 32
/** The most connections of one class and handshakes at once. */
#define CTLSRV_CLASS_MAX 1024

/** Why a connection or a request was refused (the counters of ctlsrv_json()). */
enum ctlsrv_refusal {
	CTLSRV_REF_HANDSHAKE = 0,     /* the TLS handshake failed (certificate, version, ...) */
	CTLSRV_REF_HANDSHAKE_TIMEOUT, /* no complete handshake within handshake_ms */
	CTLSRV_REF_ROLE,              /* a valid certificate of a role this server refuses */
	CTLSRV_REF_FORBIDDEN,         /* an op the connection's role may not call */
	CTLSRV_REF_EVICTED,           /* closed to make room for a new connection */
	CTLSRV_REF_IDLE,              /* closed after idle_ms without a request */
	CTLSRV_REF_N,
};

/** The role of the connections of the unix socket (anyone who may open it). */
#define CTLSRV_ROLE_LOCAL CTLTLS_ROLE_NONE

struct ctlsrv;
struct ctlsrv_client;

/** A reply owed: which connection, and which of its lives. */
struct ctlsrv_ref {
	int slot;
	uint32_t gen;
};

struct ctlsrv_opts {
	const char *unix_path;       /* the unix socket (ctl_listen()), or NULL */
	const char *tls_listen;      /* "HOST:PORT" for TLS, or NULL */
	struct ctltls_ctx *tls;      /* a server context; required with tls_listen */
	unsigned int roles;          /* the TLS roles admitted: bits (1u << enum ctltls_role) */
	int max_per_role;            /* authenticated connections per role, 1..CTLSRV_CLASS_MAX */
	int role_max[CTLTLS_ROLE_N]; /* per role instead, where > 0 (..CTLSRV_CLASS_MAX) */
	int max_handshakes;          /* TLS handshakes at once, 1..CTLSRV_CLASS_MAX */
	int handshake_ms;            /* >= 1 */
	int idle_ms;                 /* >= 1 */
	/* The reply to req from client cl (a new reference); NULL after ctlsrv_defer(), or
	 * when out of memory (the connection is closed). */
	json_t *(*handle)(void *arg, struct ctlsrv_client *cl, const json_t *req);
	/* One line, without a newline. */
	void (*log)(void *arg, const char *line);
	void *arg;
};

/**
 * Listen as o says. Caller: the serving thread, once.
 *
 * @return  The server, or NULL with err filled ("--ctl-socket PATH: ..." and the like are
 *          the caller's to add).
 */
struct ctlsrv *ctlsrv_create(const struct ctlsrv_opts *o, char *err, size_t errlen);

/** Close every connection and listener (removing the unix socket). NULL is a no-op. */
void ctlsrv_free(struct ctlsrv *s);

/**
 * Wait up to timeout_ms (< 0: no limit; deadlines of handshakes and idle connections
 * shorten it) for connections, requests or extra_fd (if >= 0) to be readable, and serve
 * what came: accept, handshake, read requests, call the handler, send replies, close
 * what timed out.
 *
 * @return  1 if extra_fd is readable (the caller reads it), else 0.
 */
int ctlsrv_poll(struct ctlsrv *s, int timeout_ms, int extra_fd);

/** The role of cl: CTLSRV_ROLE_LOCAL for the unix socket, else its certificate's. */
enum ctltls_role ctlsrv_client_role(const struct ctlsrv_client *cl);

/** Whether cl's certificate carries name (ctltls_peer_named()); false on the unix socket. */
bool ctlsrv_client_named(const struct ctlsrv_client *cl, const char *name);

/** cl's tenant (ctltls_peer_tenant()): 1 with the name in out, 0 for none (the unix
 * socket, a certificate without one), -EINVAL for a certificate that names it badly. */
int ctlsrv_client_tenant(const struct ctlsrv_client *cl, char *out);

/** cl's peer, "ADDR:PORT" or "local". */
const char *ctlsrv_client_peer(const struct ctlsrv_client *cl);

/**
 * Log and count a refusal of cl: "control: refused PEER (ROLE): MESSAGE". For requests
 * the handler then replies with an error as usual.
 */
void ctlsrv_refuse(struct ctlsrv *s, const struct ctlsrv_client *cl, enum ctlsrv_refusal why,
		   const char *fmt, ...) __attribute__((format(printf, 4, 5)));

/**
 * From the handler: the reply to the request being handled comes later, through
 * ctlsrv_reply() with *ref. The handler then returns NULL. Until then nothing more is
 * read from cl and it is never idle; if it goes away the reply is dropped.
 */
void ctlsrv_defer(struct ctlsrv_client *cl, struct ctlsrv_ref *ref);

/**
 * Send a deferred reply (the reference to resp is stolen) and read cl's next requests.
 *
 * @return  0, -ENOENT (that connection is gone; resp freed) or the send's error (the
 *          connection is closed).
 */
int ctlsrv_reply(struct ctlsrv *s, const struct ctlsrv_ref *ref, json_t *resp);

/**
 * The server's counters: {"connections": {"local": N, "control": N, ..., "handshake": N},
 * "refused": {"handshake": N, "handshake_timeout": N, "role": N, "forbidden": N,
 * "evicted": N, "idle": N}, "tls": bool}.
 */
json_t *ctlsrv_json(const struct ctlsrv *s);

/** The counter of one refusal reason. */
uint64_t ctlsrv_refused(const struct ctlsrv *s, enum ctlsrv_refusal why);

#endif
