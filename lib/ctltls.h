/* SPDX-License-Identifier: BSD-3-Clause
 *
 * The control protocol's TLS transport (docs/CONTROL.md, "Transport"): TCP with TLS 1.3
 * and mutual authentication, through OpenSSL 3. Nothing here does cryptography, parses a
 * certificate or speaks TLS itself: OpenSSL does, and this module only sets it up.
 *
 *  - Contexts come from three PEM files: this side's certificate (chain), its private key,
 *    and the deployment's CA, and optionally a fourth, the CA's CRL. TLS 1.3 only; the
 *    peer must present a certificate that chains to that CA, is valid now and, with a
 *    CRL, is not revoked (the peer's own certificate is checked against the CRL, not the
 *    CA above it: the deployment's CA signs every certificate directly), on both sides.
 *  - A context is reloaded from the same files while it is in use (ctltls_ctx_reload(),
 *    on SIGHUP or a `reload_tls` request): new handshakes use the new files, streams set
 *    up before keep theirs until they close. A context belongs to one thread: the one
 *    that makes streams from it also reloads it.
 *  - A certificate's role is its subject's organizational unit (OU): "gateway",
 *    "control", "monitor" or "worker"; exactly one OU. Its names are its subjectAltName
 *    DNS (and IP) entries: a gateway's carry the gateway's topology node id, a worker's one
 *    "worker-ID" per worker id it may speak for.
 *  - A client checks the server's role and one expected name (an IP literal is matched
 *    against the IP entries). A server reads the client's role and leaves the decision to
 *    its caller (lib/ctlsrv.h).
 *  - Handshakes never block a server: ctltls_accept_step() is called whenever the socket
 *    polls ready. A client connects and handshakes within one deadline.
 *
 * The resulting streams are struct ctl_conn transports (lib/ctlmsg.h), so the framing is
 * the same as on the unix socket. Slow path only. No DPDK.
 */
#ifndef GEOREDUCE_CTLTLS_H
#define GEOREDUCE_CTLTLS_H

#include <stdbool.h>
#include <stddef.h>

#include "ctlmsg.h"

/** The prefix of a TLS endpoint: "tls://HOST:PORT". */
#define CTLTLS_SCHEME "tls://"
/** Longest host name or address in an endpoint. */
#define CTLTLS_HOST_MAX 255
/** Longest name a certificate is checked for. */
#define CTLTLS_NAME_MAX 255

/** What a certificate says its holder is (the subject's OU). */
enum ctltls_role {
	CTLTLS_ROLE_NONE = 0, /* no OU, several, or one of no known role */
	CTLTLS_ROLE_CONTROL,  /* the control process: every op */
	CTLTLS_ROLE_MONITOR,  /* reads only: stats, dump, status, version, ping */
	CTLTLS_ROLE_WORKER,   /* a training worker: joins its job (the control process) */
	CTLTLS_ROLE_GATEWAY,  /* a gateway's dataplane (a server) */
	CTLTLS_ROLE_N,
};

/** "control", "monitor", "worker", "gateway"; "none" for CTLTLS_ROLE_NONE. */
const char *ctltls_role_name(enum ctltls_role r);

struct ctltls_ctx;

/** Longest line ctltls_ctx_reload() writes about the files it loaded. */
#define CTLTLS_INFO_MAX 512

/**
 * A TLS 1.3 context from PEM files. server: accepts connections and requires a client
 * certificate; otherwise connects. The key must match the certificate. crl (NULL: none)
 * holds one or more CRLs of the CA: every CRL must verify against the CA and be current,
 * and this side's own certificate must not be revoked by it.
 *
 * @param err  Receives one line naming the file at fault and OpenSSL's reason.
 * @return     The context (free with ctltls_ctx_free()), or NULL with err filled.
 */
struct ctltls_ctx *ctltls_ctx_new(bool server, const char *cert, const char *key, const char *ca,
				  const char *crl, char *err, size_t errlen);

/**
 * Load ctx's files again (the paths it was made from) into a new OpenSSL context and put
 * it in place of the old one for the handshakes that follow; streams made before keep
 * the old one until they are closed (each holds a reference to it). On any failure
 * nothing changes. Caller: the thread that makes streams from ctx.
 *
 * @param msg  On 0, one line on what is now in use ("certificate F: subject S, serial X,
 *             not after T; CRL F: N revoked"); on failure, one line naming the file at
 *             fault, as ctltls_ctx_new().
 * @return     0, or -EINVAL (the old files stay in use) or -ENOMEM.
 */
int ctltls_ctx_reload(struct ctltls_ctx *ctx, char *msg, size_t msglen);

/** One line on ctx's files in use, as ctltls_ctx_reload() writes on success. */
void ctltls_ctx_describe(const struct ctltls_ctx *ctx, char *msg, size_t msglen);

/** How many times ctx was reloaded successfully. */
unsigned long ctltls_ctx_reloads(const struct ctltls_ctx *ctx);

/**
 * The reply to a `reload_tls` request req with id (docs/CONTROL.md), a server's:
 * reload(arg, msg, msglen) reloads its contexts (and logs), returning 0 or a negative
 * errno with msg filled; ctx is the context whose reloads the reply counts.
 *
 * @return  {"tls": MSG, "reloads": N}, an error reply naming the file, or EINVAL for
 *          arguments (reload not called); a new reference.
 */
json_t *ctltls_reload_reply(const json_t *req, uint32_t id,
			    int (*reload)(void *arg, char *msg, size_t msglen), void *arg,
			    const struct ctltls_ctx *ctx);

/** Free a context. Streams made from it keep the OpenSSL context they were made with
 * until they are closed. NULL is a no-op. */
void ctltls_ctx_free(struct ctltls_ctx *ctx);

/**
 * The client context a command-line tool needs for endpoint: for a tls:// endpoint, one
 * from cert, key and ca (all three required) and crl (optional); for a socket path none
 * (*out = NULL), and then none of the files may be given.
 *
 * @param err  Receives one line naming the option at fault ("--ca: ...").
 * @return     0, or -EINVAL with err filled.
 */
int ctltls_client_ctx(const char *endpoint, const char *cert, const char *key, const char *ca,
		      const char *crl, struct ctltls_ctx **out, char *err, size_t errlen);

/** Whether endpoint names a TLS endpoint ("tls://..."); otherwise it is a socket path. */
bool ctltls_is_endpoint(const char *endpoint);

/**
 * Split "tls://HOST:PORT" (or "HOST:PORT"; an IPv6 HOST in brackets) into host and port.
 *
 * @return  0, or -EINVAL with err saying what is wrong.
 */
int ctltls_split(const char *endpoint, char host[CTLTLS_HOST_MAX + 1], unsigned int *port,
		 char *err, size_t errlen);

/**
 * Listen on "HOST:PORT" (tls:// optional) over TCP: non-blocking, close-on-exec,
 * SO_REUSEADDR. HOST is a numeric address or a name resolved once here.
 *
 * @return  The listening fd, or a negative errno with err filled.
 */
int ctltls_listen(const char *hostport, char *err, size_t errlen);

/**
 * Start the server side of a TLS stream on an accepted TCP socket fd (non-blocking).
 * On success the fd belongs to the stream (closed by ctl_conn_fini() once c is set up by
 * ctltls_accept_step()).
 *
 * @return  An opaque handshake state, or NULL (out of memory): the caller closes fd.
 */
void *ctltls_server_new(struct ctltls_ctx *ctx, int fd);

/**
 * Advance a server handshake. On 1 the stream is set up in c (ctl_conn_init_io()) and the
 * client's role is in *role.
 *
 * @param want  On 0, the poll events to wait for (POLLIN or POLLOUT).
 * @param why   On a negative return, one line: OpenSSL's reason, with the certificate
 *              check's result and the certificate's subject and serial when that failed
 *              ("certificate rejected: certificate revoked: /O=georeduce/OU=worker/CN=w,
 *              serial 5A...").
 * @return      1 done, 0 not yet, or -ECONNRESET (the client closed the connection without
 *              an alert) or -EPROTO (the handshake failed otherwise): then free the state
 *              with ctltls_abort().
 */
int ctltls_accept_step(void *hs, struct ctl_conn *c, enum ctltls_role *role, short *want, char *why,
		       size_t whylen);

/** Drop a handshake that did not complete, closing its socket. */
void ctltls_abort(void *hs);

/**
 * Connect to a TLS endpoint and handshake within timeout_ms (< 0: no limit). The server's
 * certificate must chain to the CA, carry role and the name expect (NULL: the endpoint's
 * host). On success c is a stream for ctl_conn_call() and the other ctl_conn_*() calls.
 *
 * @return  0, or -EINVAL (bad endpoint), -ETIMEDOUT, -ECONNREFUSED, -ECONNRESET (the server
 *          closed the connection in the handshake without an alert: "connection closed in
 *          the handshake", as a server does with a client too slow to finish it), -EPROTO
 *          (the handshake failed otherwise or the certificate is not the expected one: err
 *          says why), or another negative errno, with err filled.
 */
int
ctltls_connect(struct ctltls_ctx *ctx, const char *endpoint, const char *expect,
	       enum ctltls_role role, int timeout_ms, struct ctl_conn *c, char *err, size_t errlen);

/**
 * Connect to a control endpoint of either kind: a TLS endpoint through ctx (which must
 * then be a client context; expect and role as ctltls_connect()), or a unix socket path
 * (ctl_connect()). On success c holds the connection.
 *
 * @return  0 or a negative errno with err filled ("ENDPOINT: ...").
 */
int
ctltls_dial(struct ctltls_ctx *ctx, const char *endpoint, const char *expect, enum ctltls_role role,
	    int timeout_ms, struct ctl_conn *c, char *err, size_t errlen);

/** The role of the peer of a TLS stream c; CTLTLS_ROLE_NONE for a plain socket. */
enum ctltls_role ctltls_peer_role(const struct ctl_conn *c);

/**
 * Whether the certificate of c's peer carries name among its subjectAltName DNS
 * entries (exactly; no wildcard). False for a plain socket.
 */
bool ctltls_peer_named(const struct ctl_conn *c, const char *name);

/** The prefix of the subjectAltName URI that names a certificate's tenant. */
#define CTLTLS_TENANT_URI "urn:georeduce:tenant:"
/** Bytes of a tenant's name, without the NUL. */
#define CTLTLS_TENANT_MAX 63

/**
 * The tenant that the certificate of c's peer names: its one subjectAltName URI
 * "urn:georeduce:tenant:NAME" (NAME 1 .. CTLTLS_TENANT_MAX letters, digits, '.', '_' or
 * '-'), copied into out (CTLTLS_TENANT_MAX + 1 bytes).
 *
 * @return  1 with the name, 0 for a certificate without such a URI or a plain socket,
 *          -EINVAL for several such URIs or a malformed name (out is then "").
 */
int ctltls_peer_tenant(const struct ctl_conn *c, char *out);

/** Whether s is a valid tenant name (see ctltls_peer_tenant()). */
bool ctltls_tenant_name_ok(const char *s);

#endif
