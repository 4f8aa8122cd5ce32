/* SPDX-License-Identifier: BSD-3-Clause
 *
 * TLS 1.3 streams for the control protocol (ctltls.h), set up through OpenSSL.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

#include "ctltls.h"
#include "ctltls_internal.h"
#include "jsonutil.h"

#define LISTEN_BACKLOG 64

static const char *const role_names[CTLTLS_ROLE_N] = {
	[CTLTLS_ROLE_NONE] = "none",       [CTLTLS_ROLE_CONTROL] = "control",
	[CTLTLS_ROLE_MONITOR] = "monitor", [CTLTLS_ROLE_WORKER] = "worker",
	[CTLTLS_ROLE_GATEWAY] = "gateway",
};

const char *
ctltls_role_name(enum ctltls_role r)
{
	return r >= 0 && r < CTLTLS_ROLE_N ? role_names[r] : "none";
}

bool
ctltls_is_endpoint(const char *endpoint)
{
	return endpoint != NULL && strncmp(endpoint, CTLTLS_SCHEME, strlen(CTLTLS_SCHEME)) == 0;
}

/* ctltls_split(), port 0 (any) allowed if any_port. */
static int
split(const char *endpoint, bool any_port, char host[CTLTLS_HOST_MAX + 1], unsigned int *port,
      char *err, size_t errlen)
{
	const char *p = endpoint, *colon, *h = p;
	size_t hl;
	char *end;
	long v;

	if (p == NULL)
		return json_util_fail(err, errlen, "no endpoint");
	if (ctltls_is_endpoint(p))
		p += strlen(CTLTLS_SCHEME);
	h = p;
	if (*p == '[') {
		const char *rb = strchr(p, ']');

		if (rb == NULL || rb[1] != ':')
			return json_util_fail(err, errlen, "%s: expected [ADDRESS]:PORT", endpoint);
		h = p + 1;
		hl = (size_t)(rb - h);
		colon = rb + 1;
	} else {
		colon = strrchr(p, ':');
		if (colon == NULL)
			return json_util_fail(err, errlen, "%s: expected HOST:PORT", endpoint);
		hl = (size_t)(colon - p);
	}
	if (hl == 0 || hl > CTLTLS_HOST_MAX)
		return json_util_fail(err, errlen, "%s: the host must be 1..%d characters",
				      endpoint, CTLTLS_HOST_MAX);
	errno = 0;
	v = strtol(colon + 1, &end, 10);
	if (colon[1] == '\0' || *end != '\0' || errno != 0 || v < (any_port ? 0 : 1) || v > 65535)
		return json_util_fail(err, errlen, "%s: the port must be 1..65535", endpoint);
	memcpy(host, h, hl);
	host[hl] = '\0';
	*port = (unsigned int)v;
	return 0;
}

int
ctltls_split(const char *endpoint, char host[CTLTLS_HOST_MAX + 1], unsigned int *port, char *err,
	     size_t errlen)
{
	return split(endpoint, false, host, port, err, errlen);
}

/* Resolve host:port for TCP: a list for freeaddrinfo(), or NULL with err filled. */
static struct addrinfo *
resolve(const char *endpoint, bool passive, char *err, size_t errlen)
{
	struct addrinfo hints = {.ai_socktype = SOCK_STREAM, .ai_family = AF_UNSPEC};
	char host[CTLTLS_HOST_MAX + 1], service[8];
	struct addrinfo *res = NULL;
	unsigned int port = 0; /* -O3 cannot see that split() fails whenever it leaves it */
	int r;

	if (split(endpoint, passive, host, &port, err, errlen) != 0)
		return NULL;
	snprintf(service, sizeof(service), "%u", port);
	hints.ai_flags = AI_NUMERICSERV | (passive ? AI_PASSIVE : 0);
	r = getaddrinfo(host, service, &hints, &res);
	if (r != 0) {
		json_util_fail(err, errlen, "%s: %s", endpoint, gai_strerror(r));
		return NULL;
	}
	return res;
}

int
ctltls_listen(const char *hostport, char *err, size_t errlen)
{
	struct addrinfo *res = resolve(hostport, true, err, errlen), *a;
	int fd = -1, r = -EADDRNOTAVAIL, one = 1;

	if (res == NULL)
		return -EINVAL;
	for (a = res; a != NULL; a = a->ai_next) {
		fd = socket(a->ai_family, a->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC,
			    a->ai_protocol);
		if (fd < 0) {
			r = -errno;
			continue;
		}
		setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
		if (bind(fd, a->ai_addr, a->ai_addrlen) == 0 && listen(fd, LISTEN_BACKLOG) == 0)
			break;
		r = -errno;
		close(fd);
		fd = -1;
	}
	freeaddrinfo(res);
	if (fd < 0)
		json_util_fail(err, errlen, "%s: cannot listen: %s", hostport, strerror(-r));
	return fd < 0 ? r : fd;
}

/* ---- the stream ---------------------------------------------------------------------- */

/*
 * OpenSSL writes to its socket with write(), which raises SIGPIPE when the peer has gone.
 * The library must not change a program's signal handling, so each call that may write
 * blocks SIGPIPE in the calling thread, and takes a SIGPIPE it raised before unblocking.
 */
struct nosig {
	sigset_t old;
	bool pending; /* a SIGPIPE was pending before: leave it be */
};

static void
nosig_begin(struct nosig *ns)
{
	sigset_t pipe_set, pend;

	sigemptyset(&pipe_set);
	sigaddset(&pipe_set, SIGPIPE);
	sigpending(&pend);
	ns->pending = sigismember(&pend, SIGPIPE) == 1;
	pthread_sigmask(SIG_BLOCK, &pipe_set, &ns->old);
}

static void
nosig_end(struct nosig *ns)
{
	sigset_t pipe_set, pend;

	sigemptyset(&pipe_set);
	sigaddset(&pipe_set, SIGPIPE);
	sigpending(&pend);
	if (!ns->pending && sigismember(&pend, SIGPIPE) == 1) {
		int saved = errno;

		sigtimedwait(&pipe_set, NULL, &(struct timespec){0, 0});
		errno = saved;
	}
	pthread_sigmask(SIG_SETMASK, &ns->old, NULL);
}

/* Before an SSL call that may write: OpenSSL's error queue and errno cleared, so that a
 * failure reads its own, and SIGPIPE held off until nosig_end(). */
static void
ssl_call_begin(struct nosig *ns)
{
	ERR_clear_error();
	errno = 0;
	nosig_begin(ns);
}

/* A stream: the SSL object and why its last read or write failed; during the handshake,
 * the certificate the check refused (ctltls_verify_cb()). The SSL object's app data. */
struct tls_stream {
	SSL *ssl;
	char why[320];
};

int
ctltls_verify_cb(int ok, X509_STORE_CTX *x)
{
	SSL *s = X509_STORE_CTX_get_ex_data(x, SSL_get_ex_data_X509_STORE_CTX_idx());
	struct tls_stream *t = s != NULL ? SSL_get_app_data(s) : NULL;
	X509 *c = X509_STORE_CTX_get_current_cert(x);

	if (!ok && t != NULL && t->why[0] == '\0' && c != NULL)
		ctltls_cert_line(c, t->why, sizeof(t->why));
	return ok;
}

/* A stream for a new SSL object of ctx on fd, the stream its app data; NULL. */
static struct tls_stream *
stream_new(struct ctltls_ctx *ctx, int fd)
{
	struct tls_stream *t = calloc(1, sizeof(*t));

	if (t == NULL)
		return NULL;
	/* SSL_new() takes a reference to ctx's current context: a reload does not touch
	 * this stream. */
	t->ssl = SSL_new(ctx->ssl);
	if (t->ssl == NULL || SSL_set_fd(t->ssl, fd) != 1) {
		SSL_free(t->ssl);
		free(t);
		ERR_clear_error();
		return NULL;
	}
	SSL_set_app_data(t->ssl, t);
	return t;
}

static void
stream_free(struct tls_stream *t)
{
	SSL_free(t->ssl);
	free(t);
}

/* After a failed SSL call: -EAGAIN with *want, 0 for the end of the stream, or -errno;
 * for a TLS failure (-EPROTO) OpenSSL's reason into why. */
static long
ssl_io_error_why(SSL *s, int ret, short *want, char *why, size_t whylen)
{
	int e = SSL_get_error(s, ret);
	char buf[256];

	if (e == SSL_ERROR_SSL && why != NULL) {
		snprintf(why, whylen, "%s", ctltls_ssl_reason(buf, sizeof(buf)));
		return -EPROTO;
	}
	switch (e) {
	case SSL_ERROR_WANT_READ:
		*want = POLLIN;
		return -EAGAIN;
	case SSL_ERROR_WANT_WRITE:
		*want = POLLOUT;
		return -EAGAIN;
	case SSL_ERROR_ZERO_RETURN:
		ERR_clear_error();
		return 0;
	case SSL_ERROR_SYSCALL:
		ERR_clear_error();
		return errno != 0 ? -errno : 0;
	default:
		ERR_clear_error();
		return -EPROTO;
	}
}

static long
tls_read(void *io, void *buf, size_t n, short *want)
{
	struct tls_stream *t = io;
	struct nosig ns;
	size_t got = 0;
	int ret;

	ssl_call_begin(&ns);
	ret = SSL_read_ex(t->ssl, buf, n, &got);
	nosig_end(&ns);
	return ret == 1 ? (long)got : ssl_io_error_why(t->ssl, ret, want, t->why, sizeof(t->why));
}

static long
tls_write(void *io, const void *buf, size_t n, short *want)
{
	struct tls_stream *t = io;
	struct nosig ns;
	size_t put = 0;
	long r;
	int ret;

	ssl_call_begin(&ns);
	ret = SSL_write_ex(t->ssl, buf, n, &put);
	nosig_end(&ns);
	if (ret == 1)
		return (long)put;
	r = ssl_io_error_why(t->ssl, ret, want, t->why, sizeof(t->why));
	return r == 0 ? -EPIPE : r;
}

static void
tls_close(void *io)
{
	struct tls_stream *t = io;
	struct nosig ns;

	/* One try at close_notify; the socket is non-blocking, so it never waits. */
	nosig_begin(&ns);
	if (SSL_is_init_finished(t->ssl))
		SSL_shutdown(t->ssl);
	nosig_end(&ns);
	ERR_clear_error();
	stream_free(t);
}

static const char *
tls_why(void *io)
{
	struct tls_stream *t = io;

	return t->why[0] != '\0' ? t->why : NULL;
}

static const struct ctl_io_ops tls_ops;

/* The stream t, its handshake done, on fd into c. */
static void
stream_init(struct ctl_conn *c, int fd, struct tls_stream *t)
{
	t->why[0] = '\0';
	ctl_conn_init_io(c, fd, &tls_ops, t);
}

static const struct ctl_io_ops tls_ops = {
	.read = tls_read,
	.write = tls_write,
	.close = tls_close,
	.why = tls_why,
};

/* The role in the OU of the peer's certificate. */
static enum ctltls_role
cert_role(X509 *x)
{
	X509_NAME *subj = x != NULL ? X509_get_subject_name(x) : NULL;
	int i, next;
	const unsigned char *v;
	ASN1_STRING *d;
	int len;

	if (subj == NULL)
		return CTLTLS_ROLE_NONE;
	i = X509_NAME_get_index_by_NID(subj, NID_organizationalUnitName, -1);
	if (i < 0)
		return CTLTLS_ROLE_NONE;
	next = X509_NAME_get_index_by_NID(subj, NID_organizationalUnitName, i);
	if (next >= 0)
		return CTLTLS_ROLE_NONE; /* two roles are none */
	d = X509_NAME_ENTRY_get_data(X509_NAME_get_entry(subj, i));
	v = ASN1_STRING_get0_data(d);
	len = ASN1_STRING_length(d);
	for (int r = CTLTLS_ROLE_CONTROL; r < CTLTLS_ROLE_N; r++)
		if ((size_t)len == strlen(role_names[r]) && memcmp(v, role_names[r], len) == 0)
			return (enum ctltls_role)r;
	return CTLTLS_ROLE_NONE;
}

/* Why a handshake failed: the certificate check's result when that failed, with the
 * certificate refused, else OpenSSL's reason (taken from the error queue by
 * ssl_io_error_why()). */
static void
handshake_why(SSL *s, const char *reason, char *why, size_t whylen)
{
	long v = SSL_get_verify_result(s);
	const struct tls_stream *t = SSL_get_app_data(s);

	if (v != X509_V_OK && t != NULL && t->why[0] != '\0')
		json_util_fail(why, whylen, "certificate rejected: %s: %s",
			       X509_verify_cert_error_string(v), t->why);
	else if (v != X509_V_OK)
		json_util_fail(why, whylen, "certificate rejected: %s",
			       X509_verify_cert_error_string(v));
	else
		json_util_fail(why, whylen, "%s",
			       reason[0] != '\0' ? reason : "connection closed in the handshake");
}

/* Whether the failed SSL call ret of s ended because the peer closed the connection
 * (end of stream or a reset) without a TLS alert. Before ssl_io_error_why(), which clears
 * the error queue. */
static bool
peer_hung_up(SSL *s, int ret)
{
	int e = SSL_get_error(s, ret);
	unsigned long last = ERR_peek_last_error();

	if (e == SSL_ERROR_ZERO_RETURN)
		return true;
	if (e == SSL_ERROR_SYSCALL)
		return errno == 0 || errno == ECONNRESET || errno == EPIPE;
	return e == SSL_ERROR_SSL && ERR_GET_LIB(last) == ERR_LIB_SSL &&
	       ERR_GET_REASON(last) == SSL_R_UNEXPECTED_EOF_WHILE_READING;
}

/* One step of s's handshake: 1 done, 0 to wait for *want, or with why -ECONNRESET (the
 * peer closed the connection without an alert, its certificate not refused here) or
 * -EPROTO (any other failure). */
static int
handshake_step(SSL *s, short *want, char *why, size_t whylen)
{
	char reason[160] = "";
	struct nosig ns;
	bool hung_up;
	int ret;

	ssl_call_begin(&ns);
	ret = SSL_do_handshake(s);
	nosig_end(&ns);
	if (ret == 1)
		return 1;
	hung_up = peer_hung_up(s, ret);
	if (ssl_io_error_why(s, ret, want, reason, sizeof(reason)) == -EAGAIN)
		return 0;
	if (hung_up && SSL_get_verify_result(s) == X509_V_OK) {
		json_util_fail(why, whylen, "connection closed in the handshake");
		return -ECONNRESET;
	}
	handshake_why(s, reason, why, whylen);
	return -EPROTO;
}

void *
ctltls_server_new(struct ctltls_ctx *ctx, int fd)
{
	struct tls_stream *t = stream_new(ctx, fd);

	if (t != NULL)
		SSL_set_accept_state(t->ssl);
	return t;
}

int
ctltls_accept_step(void *hs, struct ctl_conn *c, enum ctltls_role *role, short *want, char *why,
		   size_t whylen)
{
	struct tls_stream *t = hs;
	int r = handshake_step(t->ssl, want, why, whylen);

	if (r != 1)
		return r;
	*role = cert_role(SSL_get0_peer_certificate(t->ssl));
	stream_init(c, SSL_get_fd(t->ssl), t);
	return 1;
}

void
ctltls_abort(void *hs)
{
	struct tls_stream *t = hs;
	int fd = SSL_get_fd(t->ssl);

	stream_free(t);
	if (fd >= 0)
		close(fd);
}

/* ---- the client ---------------------------------------------------------------------- */

/* Wait for fd to poll events until deadline: 0, -ETIMEDOUT or -errno. */
static int
wait_fd(int fd, short events, int64_t deadline)
{
	struct pollfd pfd = {.fd = fd, .events = events};
	int p;

	do {
		p = poll(&pfd, 1, ctl_ms_left(deadline));
	} while (p < 0 && errno == EINTR);
	if (p < 0)
		return -errno;
	return p == 0 ? -ETIMEDOUT : 0;
}

/* A connected non-blocking TCP socket to endpoint, or a negative errno with err. */
static int
tcp_connect(const char *endpoint, int64_t deadline, char *err, size_t errlen)
{
	struct addrinfo *res = resolve(endpoint, false, err, errlen), *a;
	int fd = -1, r = -EHOSTUNREACH, one = 1;

	if (res == NULL)
		return -EINVAL;
	for (a = res; a != NULL; a = a->ai_next) {
		int soerr = 0;
		socklen_t sl = sizeof(soerr);

		fd = socket(a->ai_family, a->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC,
			    a->ai_protocol);
		if (fd < 0) {
			r = -errno;
			continue;
		}
		if (connect(fd, a->ai_addr, a->ai_addrlen) == 0)
			break;
		r = -errno;
		if (r == -EINPROGRESS) {
			r = wait_fd(fd, POLLOUT, deadline);
			if (r == 0 && getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &sl) == 0)
				r = -soerr;
			if (r == 0)
				break;
		}
		close(fd);
		fd = -1;
	}
	freeaddrinfo(res);
	if (fd < 0) {
		json_util_fail(err, errlen, "%s: cannot connect: %s", endpoint, strerror(-r));
		return r;
	}
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	return fd;
}

int
ctltls_connect(struct ctltls_ctx *ctx, const char *endpoint, const char *expect,
	       enum ctltls_role role, int timeout_ms, struct ctl_conn *c, char *err, size_t errlen)
{
	int64_t deadline = ctl_deadline(timeout_ms);
	char host[CTLTLS_HOST_MAX + 1], why[CTL_ERR_MAX];
	unsigned char ip[16];
	unsigned int port;
	X509_VERIFY_PARAM *vp;
	enum ctltls_role got;
	struct tls_stream *t = NULL;
	SSL *s;
	int fd, r;

	if (ctx == NULL)
		return json_util_fail(err, errlen, "%s: TLS needs --cert, --key and --ca",
				      endpoint);
	if (ctltls_split(endpoint, host, &port, err, errlen) != 0)
		return -EINVAL;
	if (expect == NULL)
		expect = host;
	fd = tcp_connect(endpoint, deadline, err, errlen);
	if (fd < 0)
		return fd;
	ERR_clear_error();
	t = stream_new(ctx, fd);
	if (t == NULL) {
		r = -ENOMEM;
		json_util_fail(err, errlen, "%s: out of memory", endpoint);
		goto fail;
	}
	s = t->ssl;
	vp = SSL_get0_param(s);
	X509_VERIFY_PARAM_set_hostflags(vp, X509_CHECK_FLAG_NO_WILDCARDS);
	if (inet_pton(AF_INET, expect, ip) == 1 || inet_pton(AF_INET6, expect, ip) == 1)
		r = X509_VERIFY_PARAM_set1_ip_asc(vp, expect);
	else
		r = SSL_set1_host(s, expect) == 1 && SSL_set_tlsext_host_name(s, expect) == 1;
	if (r != 1) {
		r = -EINVAL;
		json_util_fail(err, errlen, "%s: cannot check for the name '%s'", endpoint, expect);
		goto fail;
	}
	SSL_set_connect_state(s);
	for (;;) {
		short want = POLLIN;

		r = handshake_step(s, &want, why, sizeof(why));
		if (r == 1)
			break;
		if (r < 0) {
			json_util_fail(err, errlen, "%s: TLS handshake: %s", endpoint, why);
			goto fail;
		}
		r = wait_fd(fd, want, deadline);
		if (r < 0) {
			json_util_fail(err, errlen, "%s: TLS handshake: %s", endpoint,
				       strerror(-r));
			goto fail;
		}
	}
	got = cert_role(SSL_get0_peer_certificate(s));
	if (got != role) {
		r = -EPROTO;
		json_util_fail(err, errlen, "%s: the server's certificate has role '%s', not '%s'",
			       endpoint, ctltls_role_name(got), ctltls_role_name(role));
		goto fail;
	}
	stream_init(c, fd, t);
	return 0;
fail:
	if (t != NULL)
		stream_free(t);
	ERR_clear_error();
	close(fd);
	return r;
}

int
ctltls_dial(struct ctltls_ctx *ctx, const char *endpoint, const char *expect, enum ctltls_role role,
	    int timeout_ms, struct ctl_conn *c, char *err, size_t errlen)
{
	int fd;

	if (ctltls_is_endpoint(endpoint))
		return ctltls_connect(ctx, endpoint, expect, role, timeout_ms, c, err, errlen);
	fd = ctl_connect(endpoint, timeout_ms);
	if (fd < 0) {
		json_util_fail(err, errlen, "%s: cannot connect: %s", endpoint, strerror(-fd));
		return fd;
	}
	ctl_conn_init(c, fd);
	return 0;
}

enum ctltls_role
ctltls_peer_role(const struct ctl_conn *c)
{
	if (c->ops != &tls_ops)
		return CTLTLS_ROLE_NONE;
	return cert_role(SSL_get0_peer_certificate(((struct tls_stream *)c->io)->ssl));
}

bool
ctltls_peer_named(const struct ctl_conn *c, const char *name)
{
	X509 *x;

	if (c->ops != &tls_ops || name == NULL || name[0] == '\0')
		return false;
	x = SSL_get0_peer_certificate(((struct tls_stream *)c->io)->ssl);
	return x != NULL &&
	       X509_check_host(x, name, 0,
			       X509_CHECK_FLAG_NO_WILDCARDS | X509_CHECK_FLAG_NEVER_CHECK_SUBJECT,
			       NULL) == 1;
}

bool
ctltls_tenant_name_ok(const char *s)
{
	size_t n = strlen(s);

	if (n == 0 || n > CTLTLS_TENANT_MAX)
		return false;
	for (size_t i = 0; i < n; i++)
		if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= 'A' && s[i] <= 'Z') ||
		      (s[i] >= '0' && s[i] <= '9') || s[i] == '.' || s[i] == '_' || s[i] == '-'))
			return false;
	return true;
}

int
ctltls_peer_tenant(const struct ctl_conn *c, char *out)
{
	const size_t plen = strlen(CTLTLS_TENANT_URI);
	GENERAL_NAMES *names;
	X509 *x;
	int found = 0;

	out[0] = '\0';
	if (c->ops != &tls_ops)
		return 0;
	x = SSL_get0_peer_certificate(((struct tls_stream *)c->io)->ssl);
	names = x != NULL ? X509_get_ext_d2i(x, NID_subject_alt_name, NULL, NULL) : NULL;
	for (int i = 0; names != NULL && i < sk_GENERAL_NAME_num(names); i++) {
		const GENERAL_NAME *gn = sk_GENERAL_NAME_value(names, i);
		const unsigned char *u;
		int len;

		if (gn->type != GEN_URI)
			continue;
		u = ASN1_STRING_get0_data(gn->d.uniformResourceIdentifier);
		len = ASN1_STRING_length(gn->d.uniformResourceIdentifier);
		if (len < (int)plen || memcmp(u, CTLTLS_TENANT_URI, plen) != 0)
			continue;
		if (found++ > 0 || len - (int)plen > CTLTLS_TENANT_MAX ||
		    memchr(u, '\0', (size_t)len) != NULL) {
			found = -EINVAL;
			break;
		}
		memcpy(out, u + plen, (size_t)len - plen);
		out[len - (int)plen] = '\0';
		if (!ctltls_tenant_name_ok(out)) {
			found = -EINVAL;
			break;
		}
	}
	GENERAL_NAMES_free(names);
	if (found < 0)
		out[0] = '\0';
	return found;
}
