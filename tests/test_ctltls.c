/* SPDX-License-Identifier: BSD-3-Clause
 *
 * The control protocol over TLS 1.3 (lib/ctltls.h) and the bounded server (lib/ctlsrv.h),
 * with certificates made by scripts/georeduce-pki: mutual authentication, roles and
 * names; refusals of no client certificate, another CA, an expired certificate, TLS 1.2,
 * plain TCP and a role the server does not admit, each logged and counted; 64 idle TCP
 * and 64 idle unix connections that do not lock a client out; handshake and idle
 * timeouts; a deferred reply (a long poll); contexts reloaded from their files (a renewed
 * certificate taken, a broken file, a key of another certificate, a bad or foreign CRL,
 * a CRL revoking the context's own certificate each leaving the old files in use;
 * connections made before going on), and a server refusing a certificate its CRL
 * revokes once reloaded, with the certificate named in the log line. Lists of control
 * endpoints (lib/ctlpeers.h): their parsing and bad lists, and calls that fail over past
 * a dead endpoint and a follower (to the leader it names), each endpoint once per call.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <openssl/err.h>
#include <openssl/ssl.h>

#include "ctlmsg.h"
#include "ctlpeers.h"
#include "ctlsrv.h"
#include "ctltls.h"
#include "testutil.h"

static char dir[64];
static char sock_path[128];
static char endpoint[64];
static struct ctlsrv *srv;
static struct ctltls_ctx *server_ctx;
static pthread_t thr;
static int stop_pipe[2];
static atomic_int log_lines;
static char last_log[1024];
static pthread_mutex_t log_mu = PTHREAD_MUTEX_INITIALIZER;
static struct ctlsrv_ref parked; /* the deferred "wait" request */
static bool have_parked;
static uint32_t parked_id;
static atomic_int follow_left;  /* refusals as a follower still to answer */
static char leader_at[192];     /* the leader those refusals name: a socket path */

static const char *
path_of(const char *name, const char *ext)
{
	static char buf[8][192];
	static int k;

	k = (k + 1) % 8;
	snprintf(buf[k], sizeof(buf[k]), "%s/%s.%s", dir, name, ext);
	return buf[k];
}

static void
on_log(void *arg, const char *line)
{
	(void)arg;
	pthread_mutex_lock(&log_mu);
	snprintf(last_log, sizeof(last_log), "%s", line);
	pthread_mutex_unlock(&log_mu);
	atomic_fetch_add(&log_lines, 1);
}

/* ping: the caller's role and whether it is named worker-7; wait: deferred until kick;
 * counters: the server's counters. */
static json_t *
handle(void *arg, struct ctlsrv_client *cl, const json_t *req)
{
	const char *op = json_string_value(json_object_get(req, "op"));
	uint32_t id = 0;
	json_t *r;

	(void)arg;
	ctl_request_id(req, &id);
	if (op != NULL && strcmp(op, "wait") == 0) {
		ctlsrv_defer(cl, &parked);
		parked_id = id;
		have_parked = true;
		return NULL;
	}
	if (atomic_load(&follow_left) > 0) { /* as a replica that follows (docs/CONTROL.md) */
		atomic_fetch_sub(&follow_left, 1);
		r = ctl_reply_error(true, id, EAGAIN, "field 'op': '%s' goes to the leader", op);
		json_object_set_new(r, "leader", json_pack("{s:s,s:s}", "address", "",
							   "socket", leader_at));
		json_object_set_new(r, "term", json_integer(7));
		return r;
	}
	if (op != NULL && strcmp(op, "busy") == 0) /* an EAGAIN of the leader: an answer */
		return ctl_reply_error(true, id, EAGAIN, "no live epoch yet");
	r = ctl_reply_ok(id);
	if (op != NULL && strcmp(op, "kick") == 0 && have_parked) {
		json_t *w = ctl_reply_ok(parked_id);

		json_object_set_new(w, "woken", json_true());
		json_object_set_new(r, "sent", json_integer(ctlsrv_reply(srv, &parked, w)));
		have_parked = false;
	}
	if (op != NULL && strcmp(op, "counters") == 0)
		json_object_set_new(r, "counters", ctlsrv_json(srv));
	if (op != NULL && strcmp(op, "reload") == 0) { /* in the thread that owns it */
		char msg[CTLTLS_INFO_MAX];

		json_object_set_new(r, "rc", json_integer(ctltls_ctx_reload(server_ctx, msg,
									    sizeof(msg))));
		json_object_set_new(r, "msg", json_string(msg));
	}
	json_object_set_new(r, "role", json_string(ctltls_role_name(ctlsrv_client_role(cl))));
	json_object_set_new(r, "worker7", json_boolean(ctlsrv_client_named(cl, "worker-7")));
	json_object_set_new(r, "peer", json_string(ctlsrv_client_peer(cl)));
	{
		char t[CTLTLS_TENANT_MAX + 1];
		int rc = ctlsrv_client_tenant(cl, t);

		json_object_set_new(r, "tenant", rc > 0 ? json_string(t) : json_integer(rc));
	}
	return r;
}

static void *
serve_main(void *arg)
{
	(void)arg;
	while (ctlsrv_poll(srv, 1000, stop_pipe[0]) == 0)
		;
	return NULL;
}

static int
sh(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static int
sh(const char *fmt, ...)
{
	char cmd[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	return system(cmd);
}

/* Certificates, and a server admitting control and monitor on 127.0.0.1 and a unix
 * socket; handshake 300 ms, idle 1500 ms, 4 per role, 8 handshakes. */
static int
suite_init(void)
{
	char err[CTL_ERR_MAX];
	struct sockaddr_in a;
	socklen_t al = sizeof(a);
	struct ctlsrv_opts o = {
		.roles = 1u << CTLTLS_ROLE_CONTROL | 1u << CTLTLS_ROLE_MONITOR,
		.max_per_role = 4,
		.max_handshakes = 8,
		.handshake_ms = 300,
		.idle_ms = 1500,
		.handle = handle,
		.log = on_log,
		.unix_path = sock_path,
		.tls_listen = "127.0.0.1:0",
	};
	int fd;

	char cwd[256];

	snprintf(dir, sizeof(dir), "/tmp/test_ctltls.%d", (int)getpid());
	/* $PKI for the commands that run in dir. */
	if (getcwd(cwd, sizeof(cwd) - 32) == NULL)
		return 1;
	strcat(cwd, "/scripts/georeduce-pki");
	setenv("PKI", cwd, 1);
	snprintf(sock_path, sizeof(sock_path), "%s/ctl.sock", dir);
	if (sh("P=scripts/georeduce-pki D=%s; $P ca $D && $P cert $D gw gateway --dns gw "
	       "--ip 127.0.0.1 && $P cert $D control control && $P cert $D monitor monitor && "
	       "$P cert $D worker worker --dns worker-7 --dns worker-8 && "
	       "$P cert $D old control --days -1 && $P cert $D acme control --tenant acme && "
	       "$P ca $D/other && "
	       "$P cert $D/other control control && $P cert $D rot control && "
	       "$P cert $D control2 control && cp $D/crl.pem $D/srv-crl.pem && "
	       "cp $D/crl.pem $D/rot-crl.pem",
	       dir) != 0)
		return 1;
	server_ctx = ctltls_ctx_new(true, path_of("gw", "pem"), path_of("gw", "key"),
				    path_of("ca", "pem"), path_of("srv-crl", "pem"), err,
				    sizeof(err));
	if (server_ctx == NULL) {
		fprintf(stderr, "server context: %s\n", err);
		return 1;
	}
	o.tls = server_ctx;
	srv = ctlsrv_create(&o, err, sizeof(err));
	if (srv == NULL) {
		fprintf(stderr, "server: %s\n", err);
		return 1;
	}
	/* The port the kernel chose: the listener is the server's only TCP socket, found
	 * by asking each fd (the test process has few). */
	for (fd = 3; fd < 64; fd++)
		if (getsockname(fd, (struct sockaddr *)&a, &al) == 0 && a.sin_family == AF_INET &&
		    a.sin_port != 0)
			break;
	if (fd == 64)
		return 1;
	snprintf(endpoint, sizeof(endpoint), "tls://127.0.0.1:%u", ntohs(a.sin_port));
	if (pipe(stop_pipe) != 0 || pthread_create(&thr, NULL, serve_main, NULL) != 0)
		return 1;
	return 0;
}

static int
suite_fini(void)
{
	if (write(stop_pipe[1], "x", 1) == 1)
		pthread_join(thr, NULL);
	ctlsrv_free(srv);
	ctltls_ctx_free(server_ctx);
	sh("rm -rf %s", dir);
	return 0;
}

static struct ctltls_ctx *
client_ctx(const char *name, const char *ca)
{
	char err[CTL_ERR_MAX];
	struct ctltls_ctx *c = ctltls_ctx_new(false, path_of(name, "pem"), path_of(name, "key"),
					      ca, NULL, err, sizeof(err));

	CHECK(c != NULL, "client context %s: %s", name, err);
	return c;
}

/* One call over a new connection with the named certificate: the response or NULL. */
static json_t *
call_as(const char *name, const char *op, char *err, size_t errlen)
{
	struct ctltls_ctx *cx = client_ctx(name, path_of("ca", "pem"));
	struct ctl_conn c;
	json_t *r = NULL;

	if (cx == NULL)
		return NULL;
	if (ctltls_connect(cx, endpoint, "gw", CTLTLS_ROLE_GATEWAY, 3000, &c, err, errlen) == 0) {
		r = ctl_conn_call(&c, op, NULL, 3000, err, errlen);
		ctl_conn_fini(&c);
	}
	ctltls_ctx_free(cx);
	return r;
}

/* The server's refusal counter `why`, asked over the unix socket. */
static long
refused(const char *why)
{
	char err[CTL_ERR_MAX];
	int fd = ctl_connect(sock_path, 3000);
	json_t *r = fd >= 0 ? ctl_call(fd, "counters", NULL, 3000, err, sizeof(err)) : NULL;
	long n = -1;

	if (r != NULL)
		n = (long)json_integer_value(json_object_get(json_object_get(json_object_get(
			r, "counters"), "refused"), why));
	json_decref(r);
	if (fd >= 0)
		close(fd);
	return n;
}

/* Wait up to 10 s for refusal counter why to reach at least n. */
static bool
wait_refused(const char *why, long n)
{
	for (int i = 0; i < 1000; i++) {
		if (refused(why) >= n)
			return true;
		nanosleep(&(struct timespec){ 0, 10000000 }, NULL);
	}
	return false;
}

/* A certificate's tenant: its URI urn:georeduce:tenant:NAME; none without one. */
static void
test_tenant(void)
{
	static const char *const bad[] = {"", "a b", "x/y", "t\x01",
					  "0123456789012345678901234567890123456789"
					  "012345678901234567890123"};
	char err[CTL_ERR_MAX];
	json_t *r = call_as("acme", "ping", err, sizeof(err));

	CHECK(r != NULL && json_is_string(json_object_get(r, "tenant")) &&
		      strcmp(json_string_value(json_object_get(r, "tenant")), "acme") == 0,
	      "acme's tenant: %s", err);
	CHECK(r != NULL && strcmp(json_string_value(json_object_get(r, "role")), "control") == 0,
	      "acme's role");
	json_decref(r);
	r = call_as("control", "ping", err, sizeof(err));
	CHECK(r != NULL && json_integer_value(json_object_get(r, "tenant")) == 0 &&
		      json_is_integer(json_object_get(r, "tenant")),
	      "a certificate without a tenant: %s", err);
	json_decref(r);
	CHECK(ctltls_tenant_name_ok("acme.eu-1_x"), "a good name");
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		CHECK(!ctltls_tenant_name_ok(bad[i]), "bad name %zu accepted", i);
	CHECK(system("scripts/georeduce-pki cert /tmp/no-such-dir x control --tenant 'a b' "
		     ">/dev/null 2>&1") != 0,
	      "georeduce-pki took a bad tenant");
}

static void
test_roles_and_names(void)
{
	char err[CTL_ERR_MAX];
	json_t *r = call_as("control", "ping", err, sizeof(err));

	CHECK(r != NULL && json_is_true(json_object_get(r, "ok")), "control ping: %s", err);
	CHECK(r != NULL && strcmp(json_string_value(json_object_get(r, "role")), "control") == 0,
	      "role");
	CHECK(r != NULL && strncmp(json_string_value(json_object_get(r, "peer")), "127.0.0.1:",
				  10) == 0, "peer");
	json_decref(r);
	r = call_as("monitor", "ping", err, sizeof(err));
	CHECK(r != NULL && strcmp(json_string_value(json_object_get(r, "role")), "monitor") == 0,
	      "monitor: %s", err);
	json_decref(r);

	/* The client checks the server's name and role. */
	struct ctltls_ctx *cx = client_ctx("control", path_of("ca", "pem"));
	struct ctl_conn c;

	CHECK(ctltls_connect(cx, endpoint, "other-gw", CTLTLS_ROLE_GATEWAY, 3000, &c, err,
			     sizeof(err)) == -EPROTO, "a gateway of another name");
	CHECK(strstr(err, "hostname mismatch") != NULL, "why: %s", err);
	CHECK(ctltls_connect(cx, endpoint, "gw", CTLTLS_ROLE_CONTROL, 3000, &c, err,
			     sizeof(err)) == -EPROTO, "a server of the wrong role");
	CHECK(strstr(err, "role 'gateway', not 'control'") != NULL, "why: %s", err);
	/* An IP literal is checked against the certificate's IP entries. */
	CHECK(ctltls_connect(cx, endpoint, NULL, CTLTLS_ROLE_GATEWAY, 3000, &c, err,
			     sizeof(err)) == 0, "by address: %s", err);
	ctl_conn_fini(&c);
	ctltls_ctx_free(cx);

	/* Endpoints. */
	char host[CTLTLS_HOST_MAX + 1];
	unsigned int port;

	CHECK(ctltls_split("tls://[::1]:7300", host, &port, err, sizeof(err)) == 0 &&
	      strcmp(host, "::1") == 0 && port == 7300, "ipv6");
	CHECK(ctltls_split("tls://h:0", host, &port, err, sizeof(err)) == -EINVAL, "port 0");
	CHECK(ctltls_split("tls://h", host, &port, err, sizeof(err)) == -EINVAL, "no port");
	CHECK(ctltls_split("tls://:1", host, &port, err, sizeof(err)) == -EINVAL, "no host");
	CHECK(ctltls_split("tls://h:70000", host, &port, err, sizeof(err)) == -EINVAL, "big");
	CHECK(ctltls_client_ctx("/tmp/x.sock", "a", NULL, NULL, NULL, &cx, err, sizeof(err)) ==
	      -EINVAL && strstr(err, "--cert") != NULL, "cert for a socket");
	CHECK(ctltls_client_ctx(endpoint, path_of("control", "pem"), NULL, NULL, NULL, &cx, err,
				sizeof(err)) == -EINVAL && strstr(err, "--key") != NULL, "no key");
	CHECK(ctltls_ctx_new(false, path_of("control", "pem"), path_of("monitor", "key"),
			     path_of("ca", "pem"), NULL, err, sizeof(err)) == NULL &&
	      strstr(err, "mismatch") != NULL, "a key of another certificate: %s", err);
	CHECK(ctltls_ctx_new(false, "/nonexistent.pem", path_of("monitor", "key"),
			     path_of("ca", "pem"), NULL, err, sizeof(err)) == NULL &&
	      strstr(err, "/nonexistent.pem") != NULL, "no such file: %s", err);
}

static void
test_refusals(void)
{
	char err[CTL_ERR_MAX];
	long hs = refused("handshake"), role = refused("role");
	int lines = atomic_load(&log_lines);
	json_t *r;

	/* Another CA's certificate, an expired one. */
	struct ctltls_ctx *cx = ctltls_ctx_new(false, path_of("other/control", "pem"),
					       path_of("other/control", "key"),
					       path_of("ca", "pem"), NULL, err, sizeof(err));
	struct ctl_conn c;

	CHECK(cx != NULL, "%s", err);
	r = NULL;
	if (cx != NULL && ctltls_connect(cx, endpoint, "gw", CTLTLS_ROLE_GATEWAY, 3000, &c, err,
					 sizeof(err)) == 0) {
		r = ctl_conn_call(&c, "ping", NULL, 3000, err, sizeof(err));
		ctl_conn_fini(&c);
	}
	CHECK(r == NULL, "another CA");
	json_decref(r);
	ctltls_ctx_free(cx);
	CHECK(wait_refused("handshake", hs + 1), "counted");
	pthread_mutex_lock(&log_mu);
	CHECK(strstr(last_log, "refused 127.0.0.1:") != NULL &&
	      strstr(last_log, "unable to get local issuer certificate") != NULL, "log: %s",
	      last_log);
	pthread_mutex_unlock(&log_mu);
	r = call_as("old", "ping", err, sizeof(err));
	CHECK(r == NULL, "expired");
	json_decref(r);
	CHECK(wait_refused("handshake", hs + 2), "counted");
	pthread_mutex_lock(&log_mu);
	CHECK(strstr(last_log, "certificate has expired") != NULL, "log: %s", last_log);
	pthread_mutex_unlock(&log_mu);

	/* A role this server does not admit. */
	r = call_as("worker", "ping", err, sizeof(err));
	CHECK(r == NULL, "a worker certificate is refused");
	json_decref(r);
	CHECK(wait_refused("role", role + 1), "counted");

	/* No client certificate, and TLS 1.2, with OpenSSL directly. */
	for (int k = 0; k < 2; k++) {
		SSL_CTX *sc = SSL_CTX_new(TLS_client_method());
		SSL *s;
		struct sockaddr_in a = { .sin_family = AF_INET };
		int fd = socket(AF_INET, SOCK_STREAM, 0);
		char buf[16];
		const char *port = strrchr(endpoint, ':') + 1;

		a.sin_port = htons((uint16_t)atoi(port));
		a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
		SSL_CTX_load_verify_locations(sc, path_of("ca", "pem"), NULL);
		if (k == 1) {
			SSL_CTX_set_max_proto_version(sc, TLS1_2_VERSION);
			SSL_CTX_use_certificate_file(sc, path_of("control", "pem"), SSL_FILETYPE_PEM);
			SSL_CTX_use_PrivateKey_file(sc, path_of("control", "key"), SSL_FILETYPE_PEM);
		}
		CHECK(connect(fd, (struct sockaddr *)&a, sizeof(a)) == 0, "connect");
		s = SSL_new(sc);
		SSL_set_fd(s, fd);
		int hsr = SSL_connect(s);
		/* TLS 1.3 without a certificate: the refusal comes with the first read. */
		if (hsr == 1)
			hsr = SSL_read(s, buf, sizeof(buf));
		CHECK(hsr <= 0, "%s: no stream", k == 0 ? "no certificate" : "TLS 1.2");
		SSL_free(s);
		SSL_CTX_free(sc);
		close(fd);
		ERR_clear_error();
		CHECK(wait_refused("handshake", hs + 3 + k), "counted %d", k);
		pthread_mutex_lock(&log_mu);
		CHECK(strstr(last_log, k == 0 ? "did not return a certificate"
					      : "unsupported protocol") != NULL, "log: %s",
		      last_log);
		pthread_mutex_unlock(&log_mu);
	}

	/* Plain TCP: a frame without TLS. */
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in a = { .sin_family = AF_INET };
	json_t *ping = json_pack("{s:i,s:i,s:s}", "version", 1, "id", 1, "op", "ping");

	a.sin_port = htons((uint16_t)atoi(strrchr(endpoint, ':') + 1));
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	CHECK(connect(fd, (struct sockaddr *)&a, sizeof(a)) == 0, "connect");
	ctl_send(fd, ping);
	CHECK(ctl_recv(fd, 3000, &r, err, sizeof(err)) < 0, "no answer in plain TCP");
	json_decref(ping);
	close(fd);
	CHECK(wait_refused("handshake", hs + 5), "counted");
	CHECK(atomic_load(&log_lines) >= lines + 6, "one line per refusal: %d",
	      atomic_load(&log_lines) - lines);
}

/* 64 TCP connections and 64 unix connections that say nothing, held open: a client with
 * a certificate and a local one still get answers; the quiet ones were evicted. */
static void
test_idle_flood(void)
{
	char err[CTL_ERR_MAX];
	int tcp[64], ux[64], n = 0;
	long ev = refused("evicted");
	json_t *r;

	for (int i = 0; i < 64; i++) {
		struct sockaddr_in a = { .sin_family = AF_INET };

		a.sin_port = htons((uint16_t)atoi(strrchr(endpoint, ':') + 1));
		a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
		tcp[i] = socket(AF_INET, SOCK_STREAM, 0);
		n += connect(tcp[i], (struct sockaddr *)&a, sizeof(a)) == 0;
		ux[i] = ctl_connect(sock_path, 3000);
		n += ux[i] >= 0;
	}
	CHECK(n == 128, "%d of 128 connections", n);
	r = call_as("control", "ping", err, sizeof(err));
	CHECK(r != NULL && json_is_true(json_object_get(r, "ok")), "TLS client: %s", err);
	json_decref(r);
	CHECK(refused("evicted") > ev, "evictions counted");
	for (int i = 0; i < 64; i++) {
		close(tcp[i]);
		if (ux[i] >= 0)
			close(ux[i]);
	}
}

/* A TCP connection without a handshake is closed after handshake_ms; a connection
 * without requests after idle_ms. */
static void
test_timeouts(void)
{
	long hto = refused("handshake_timeout"), idle = refused("idle");
	struct sockaddr_in a = { .sin_family = AF_INET };
	int fd = socket(AF_INET, SOCK_STREAM, 0), u = ctl_connect(sock_path, 3000);
	char c;

	a.sin_port = htons((uint16_t)atoi(strrchr(endpoint, ':') + 1));
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	CHECK(connect(fd, (struct sockaddr *)&a, sizeof(a)) == 0, "connect");
	CHECK(wait_refused("handshake_timeout", hto + 1), "handshake timeout");
	CHECK(recv(fd, &c, 1, 0) == 0, "closed");
	CHECK(wait_refused("idle", idle + 1), "idle timeout");
	CHECK(u >= 0 && recv(u, &c, 1, 0) == 0, "closed");
	close(fd);
	close(u);
}

/* Accept one connection on the listening socket (intptr_t) arg and close it at once. */
static void *
hang_up_main(void *arg)
{
	int fd = accept((int)(intptr_t)arg, NULL, NULL);

	if (fd >= 0)
		close(fd);
	return NULL;
}

/* A server that closes the connection in the handshake without an alert (as this one does
 * with a client too slow to finish it) fails the client's dial with ECONNRESET, which a
 * caller may try again; a certificate refused stays EPROTO (test_refusals). */
static void
test_hung_up(void)
{
	struct ctltls_ctx *cx = client_ctx("control", path_of("ca", "pem"));
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t al = sizeof(a);
	int lfd = socket(AF_INET, SOCK_STREAM, 0);
	char err[CTL_ERR_MAX] = "", ep[64];
	struct ctl_conn c;
	pthread_t t;
	int rc;

	CU_ASSERT_FATAL(cx != NULL && lfd >= 0 && bind(lfd, (struct sockaddr *)&a, al) == 0 &&
			listen(lfd, 4) == 0 &&
			getsockname(lfd, (struct sockaddr *)&a, &al) == 0);
	snprintf(ep, sizeof(ep), "tls://127.0.0.1:%u", ntohs(a.sin_port));
	CU_ASSERT_FATAL(pthread_create(&t, NULL, hang_up_main, (void *)(intptr_t)lfd) == 0);
	rc = ctltls_dial(cx, ep, "gw", CTLTLS_ROLE_GATEWAY, 3000, &c, err, sizeof(err));
	pthread_join(t, NULL);
	CHECK(rc == -ECONNRESET && strstr(err, "connection closed in the handshake") != NULL,
	      "hung up on in the handshake: %d: %s", rc, err);
	if (rc == 0)
		ctl_conn_fini(&c);
	close(lfd);
	ctltls_ctx_free(cx);
}

/* A deferred request is answered when another request says so; the connection is not
 * idle meanwhile. */
static void
test_deferred(void)
{
	char err[CTL_ERR_MAX];
	int w = ctl_connect(sock_path, 3000), k;
	json_t *req = json_pack("{s:i,s:i,s:s}", "version", 1, "id", 9, "op", "wait"), *r;

	CHECK(ctl_send(w, req) == 0, "send wait");
	CHECK(ctl_recv(w, 2000, &r, err, sizeof(err)) == -ETIMEDOUT, "parked past idle_ms");
	k = ctl_connect(sock_path, 3000);
	r = ctl_call(k, "kick", NULL, 3000, err, sizeof(err));
	CHECK(r != NULL && json_integer_value(json_object_get(r, "sent")) == 0, "kick: %s", err);
	json_decref(r);
	CHECK(ctl_recv(w, 3000, &r, err, sizeof(err)) == 0 &&
	      json_is_true(json_object_get(r, "woken")), "woken: %s", err);
	json_decref(r);
	json_decref(req);
	/* The parked connection reads requests again. */
	r = ctl_call(w, "ping", NULL, 3000, err, sizeof(err));
	CHECK(r != NULL && json_is_true(json_object_get(r, "ok")), "after: %s", err);
	json_decref(r);
	close(w);
	close(k);
}

/* The serial of certificate NAME.pem (openssl x509), in hex as OpenSSL prints it. */
static void
serial_of(const char *name, char *buf, size_t len)
{
	char cmd[256];
	FILE *f;

	snprintf(cmd, sizeof(cmd), "openssl x509 -in %s -noout -serial", path_of(name, "pem"));
	buf[0] = '\0';
	f = popen(cmd, "r");
	if (f != NULL && fgets(buf, (int)len, f) != NULL)
		memmove(buf, buf + strlen("serial="), strlen(buf) - strlen("serial=") + 1);
	buf[strcspn(buf, "\n")] = '\0';
	if (f != NULL)
		pclose(f);
}

/* A ping over c: whether it was answered. */
static bool
ping_ok(struct ctl_conn *c)
{
	char err[CTL_ERR_MAX];
	json_t *r = ctl_conn_call(c, "ping", NULL, 3000, err, sizeof(err));
	bool ok = r != NULL && json_is_true(json_object_get(r, "ok"));

	json_decref(r);
	return ok;
}

/* A new connection through cx answers a ping. */
static bool
dial_ok(struct ctltls_ctx *cx)
{
	char err[CTL_ERR_MAX];
	struct ctl_conn c;
	bool ok;

	if (ctltls_connect(cx, endpoint, "gw", CTLTLS_ROLE_GATEWAY, 3000, &c, err, sizeof(err)) !=
	    0)
		return false;
	ok = ping_ok(&c);
	ctl_conn_fini(&c);
	return ok;
}

/* Reload cx after the shell command cmd changed its files: the return code, msg filled. */
static int
reload_after(struct ctltls_ctx *cx, const char *cmd, char *msg, size_t len)
{
	if (cmd != NULL && sh("cd %s && %s", dir, cmd) != 0)
		return -999;
	return ctltls_ctx_reload(cx, msg, len);
}

/* A client context reloaded: every bad file leaves the old one in use; a renewed
 * certificate is taken; a connection made before goes on (parked on a deferred "wait"
 * meanwhile, so that it is never idle, then woken over its old session). */
static void
test_reload_client(void)
{
	char msg[CTLTLS_INFO_MAX], s0[64], s1[64];
	struct ctltls_ctx *cx = ctltls_ctx_new(false, path_of("rot", "pem"), path_of("rot", "key"),
					       path_of("ca", "pem"), path_of("rot-crl", "pem"),
					       msg, sizeof(msg));
	struct ctl_conn a;

	CHECK(cx != NULL, "%s", msg);
	if (cx == NULL)
		return;
	json_t *wait = json_pack("{s:i,s:i,s:s}", "version", 1, "id", 77, "op", "wait"), *r;

	CHECK(ctltls_connect(cx, endpoint, "gw", CTLTLS_ROLE_GATEWAY, 3000, &a, msg,
			     sizeof(msg)) == 0 && ctl_conn_send(&a, wait, 3000) == 0,
	      "connect: %s", msg);
	json_decref(wait);
	serial_of("rot", s0, sizeof(s0));
	ctltls_ctx_describe(cx, msg, sizeof(msg));
	CHECK(s0[0] != '\0' && strstr(msg, s0) != NULL && strstr(msg, "0 revoked") != NULL,
	      "describe %s: %s", s0, msg);

	sh("cp %s %s.good && echo garbage > %s", path_of("rot", "pem"), path_of("rot", "pem"),
	   path_of("rot", "pem"));
	CHECK(reload_after(cx, NULL, msg, sizeof(msg)) == -EINVAL &&
	      strstr(msg, "certificate ") != NULL && strstr(msg, "rot.pem") != NULL,
	      "a broken certificate: %s", msg);
	CHECK(dial_ok(cx), "the old files stay in use");
	CHECK(reload_after(cx, "mv rot.pem.good rot.pem && cp rot.key rot.key.good && "
			   "cp monitor.key rot.key", msg, sizeof(msg)) == -EINVAL &&
	      strstr(msg, "rot.key") != NULL && strstr(msg, "mismatch") != NULL,
	      "a key of another certificate: %s", msg);
	CHECK(reload_after(cx, "mv rot.key.good rot.key && cp rot-crl.pem rot-crl.good && "
			   "echo garbage > rot-crl.pem", msg, sizeof(msg)) == -EINVAL &&
	      strstr(msg, "CRL ") != NULL && strstr(msg, "rot-crl.pem") != NULL,
	      "a broken CRL: %s", msg);
	/* Another CA of the same name: its CRL is found, and its signature fails. */
	CHECK(reload_after(cx, "cp other/crl.pem rot-crl.pem", msg, sizeof(msg)) == -EINVAL &&
	      strstr(msg, "rot-crl.pem: CRL signature failure") != NULL, "another CA's CRL: %s",
	      msg);
	CHECK(ctltls_ctx_reloads(cx) == 0 && dial_ok(cx), "nothing changed");

	/* Renewed: the next handshake shows the new certificate; the open one goes on. */
	CHECK(reload_after(cx, "mv rot-crl.good rot-crl.pem && $PKI renew . rot", msg,
			   sizeof(msg)) == 0,
	      "renewed: %s", msg);
	serial_of("rot", s1, sizeof(s1));
	CHECK(strcmp(s0, s1) != 0 && strstr(msg, s1) != NULL, "new serial %s: %s", s1, msg);
	CHECK(ctltls_ctx_reloads(cx) == 1 && dial_ok(cx), "after the renewal");
	r = call_as("control", "kick", msg, sizeof(msg));
	json_decref(r);
	r = NULL;
	CHECK(ctl_conn_recv(&a, 3000, &r, msg, sizeof(msg)) == 0 &&
	      json_is_true(json_object_get(r, "woken")) && ping_ok(&a),
	      "the connection made before the renewal: %s", msg);
	json_decref(r);

	/* A CRL revoking this very certificate would lock it out everywhere: refused. */
	CHECK(reload_after(cx, "$PKI revoke . rot && "
			   "cp crl.pem rot-crl.pem", msg, sizeof(msg)) == -EINVAL &&
	      strstr(msg, "revoked by CRL") != NULL, "its own certificate revoked: %s", msg);
	CHECK(ctltls_ctx_reloads(cx) == 1 && dial_ok(cx), "the renewed one stays");
	ctl_conn_fini(&a);
	ctltls_ctx_free(cx);
}

/* The server's context reloaded (in its thread, asked as control): whether the reload
 * returned rc with want in its message. */
static bool
server_reload(int rc, const char *want)
{
	char err[CTL_ERR_MAX];
	json_t *r = call_as("control", "reload", err, sizeof(err));
	const char *msg = r != NULL ? json_string_value(json_object_get(r, "msg")) : err;
	bool ok = r != NULL && json_integer_value(json_object_get(r, "rc")) == rc &&
		  strstr(msg, want) != NULL;

	CHECK(ok, "reload: rc %lld: %s",
	      r != NULL ? (long long)json_integer_value(json_object_get(r, "rc")) : 0LL, msg);
	json_decref(r);
	return ok;
}

/* The server reloaded with a CRL that revokes control2: refused at the handshake, the
 * log line names it; control still admitted; a broken CRL keeps the one loaded. */
static void
test_reload_server_crl(void)
{
	char err[CTL_ERR_MAX], serial[64];
	long hs = refused("handshake");
	json_t *r = call_as("control2", "ping", err, sizeof(err));

	CHECK(r != NULL, "control2 before: %s", err);
	json_decref(r);
	CHECK(sh("cd %s && $PKI revoke . control2 && "
		 "cp crl.pem srv-crl.pem", dir) == 0, "revoke");
	server_reload(0, "2 revoked");
	r = call_as("control2", "ping", err, sizeof(err));
	CHECK(r == NULL, "a revoked certificate was admitted");
	json_decref(r);
	CHECK(wait_refused("handshake", hs + 1), "counted");
	serial_of("control2", serial, sizeof(serial));
	pthread_mutex_lock(&log_mu);
	CHECK(strstr(last_log, "certificate revoked") != NULL &&
	      strstr(last_log, "CN=control2") != NULL && strstr(last_log, serial) != NULL,
	      "log: %s", last_log);
	pthread_mutex_unlock(&log_mu);
	r = call_as("control", "ping", err, sizeof(err));
	CHECK(r != NULL, "control after: %s", err);
	json_decref(r);

	sh("echo garbage > %s", path_of("srv-crl", "pem"));
	server_reload(-EINVAL, "srv-crl.pem");
	r = call_as("control2", "ping", err, sizeof(err));
	CHECK(r == NULL, "the CRL loaded before stays in use");
	json_decref(r);
	CHECK(ctltls_ctx_reloads(server_ctx) == 1, "one reload");
}

/* A list that ctl_peers_parse() refuses, with want in its error. */
static void
peers_bad(const char *list, const char *want)
{
	struct ctl_peers p;
	char err[CTL_ERR_MAX] = "";
	int rc = ctl_peers_parse(&p, list, err, sizeof(err));

	CHECK(rc == -EINVAL && strstr(err, want) != NULL, "'%s': rc %d, '%s' (want '%s')",
	      list != NULL ? list : "(null)", rc, err, want);
}

/* Lists of endpoints: one, eight, socket paths; and those refused, the element named. */
static void
test_peers_parse(void)
{
	char err[CTL_ERR_MAX] = "", long_ep[CTL_PEER_MAX + 16];
	struct ctl_peers p;
	int rc;

	rc = ctl_peers_parse(&p, "tls://a:7310", err, sizeof(err));
	CHECK(rc == 0 && p.n == 1 && strcmp(p.ep[0], "tls://a:7310") == 0, "one: %s", err);
	rc = ctl_peers_parse(&p,
			     "tls://a:1,tls://b:2,tls://[::1]:3,tls://10.0.0.4:4,tls://e:5,"
			     "tls://f:6,tls://g:7,tls://h:8",
			     err, sizeof(err));
	CHECK(rc == 0 && p.n == 8 && strcmp(p.ep[2], "tls://[::1]:3") == 0 &&
		      strcmp(p.ep[7], "tls://h:8") == 0 && strcmp(ctl_peers_current(&p), p.ep[0]) == 0,
	      "eight: %s", err);
	rc = ctl_peers_parse(&p, "/run/a.sock,/run/b.sock", err, sizeof(err));
	CHECK(rc == 0 && p.n == 2 && strcmp(p.ep[1], "/run/b.sock") == 0, "paths: %s", err);

	peers_bad(NULL, "no control endpoint");
	peers_bad("", "no control endpoint");
	peers_bad("tls://a:1,,tls://b:2", "control endpoint 2 of the list is empty");
	peers_bad(",tls://a:1", "control endpoint 1 of the list is empty");
	peers_bad("tls://a:1,", "control endpoint 2 of the list is empty");
	peers_bad("a,b,c,d,e,f,g,h,i", "more than 8 control endpoints");
	peers_bad("tls://a:1,/run/b.sock", "control endpoint 2 of the list, '/run/b.sock': mixes "
					   "a socket path and tls:// endpoints");
	peers_bad("/run/b.sock,tls://a:1", "control endpoint 2 of the list, 'tls://a:1': mixes");
	peers_bad("tls://a:1,tls://b", "control endpoint 2 of the list, 'tls://b': ");
	peers_bad("tls://a:1,tls://b:99999", "control endpoint 2 of the list, 'tls://b:99999': ");
	peers_bad("tls://a:1,tls://b:2,tls://a:1",
		  "control endpoint 3 of the list, 'tls://a:1': given twice");
	memset(long_ep, 'x', sizeof(long_ep) - 1);
	long_ep[sizeof(long_ep) - 1] = '\0';
	peers_bad(long_ep, "control endpoint 1 of the list: longer than 300 bytes");
}

/* A local TCP port with a socket bound to it but not listening: connecting is refused,
 * and no other process takes the port while fd is open. */
static int
dead_port(unsigned int *port)
{
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t al = sizeof(a);
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	if (fd < 0 || bind(fd, (struct sockaddr *)&a, al) != 0 ||
	    getsockname(fd, (struct sockaddr *)&a, &al) != 0) {
		if (fd >= 0)
			close(fd);
		return -1;
	}
	*port = ntohs(a.sin_port);
	return fd;
}

/* Calls over lists: past a dead endpoint (then the live one first), past a follower to
 * the leader it names (the dead endpoint between them not tried), all followers (EAGAIN,
 * each tried once), an EAGAIN without "leader" taken as the answer. */
static void
test_peers_failover(void)
{
	struct ctltls_ctx *cx = client_ctx("control", path_of("ca", "pem"));
	char err[CTL_ERR_MAX], list[640], alias[192];
	unsigned int port = 0;
	int fd = dead_port(&port);
	struct ctl_peers p;
	json_t *r;

	CHECK(fd >= 0 && cx != NULL, "setup");
	snprintf(list, sizeof(list), "tls://127.0.0.1:%u,%s", port, endpoint);
	CHECK(ctl_peers_parse(&p, list, err, sizeof(err)) == 0, "%s", err);
	ctl_peers_setup(&p, cx, "gw", CTLTLS_ROLE_GATEWAY, 3000, true);
	r = ctl_peers_call(&p, "ping", NULL, 0, err, sizeof(err));
	CHECK(r != NULL && p.tried == 2 && strcmp(ctl_peers_current(&p), endpoint) == 0,
	      "past a dead endpoint: %s, tried %u", r != NULL ? "ok" : err, p.tried);
	json_decref(r);
	r = ctl_peers_call(&p, "ping", json_object(), 0, err, sizeof(err));
	CHECK(r != NULL && p.tried == 1, "then the live one first: tried %u", p.tried);
	json_decref(r);

	atomic_store(&follow_left, 100); /* it follows: then the dead one, the last error */
	r = ctl_peers_call(&p, "ping", NULL, 0, err, sizeof(err));
	CHECK(r == NULL && errno == ECONNREFUSED && p.tried == 2 && strstr(err, "refused"),
	      "a follower and a dead endpoint: tried %u: %s", p.tried, err);
	atomic_store(&follow_left, 0);
	ctl_peers_close(&p);

	/* A follower (an alias of the socket) names the leader (the socket itself). */
	snprintf(alias, sizeof(alias), "%s/alias.sock", dir);
	snprintf(leader_at, sizeof(leader_at), "%s", sock_path);
	CHECK(symlink(sock_path, alias) == 0, "symlink");
	snprintf(list, sizeof(list), "%s,%s/dead.sock,%s", alias, dir, sock_path);
	CHECK(ctl_peers_parse(&p, list, err, sizeof(err)) == 0, "%s", err);
	ctl_peers_setup(&p, NULL, NULL, CTLTLS_ROLE_CONTROL, 3000, false);
	atomic_store(&follow_left, 1);
	r = ctl_peers_call(&p, "ping", NULL, 0, err, sizeof(err));
	CHECK(r != NULL && json_is_true(json_object_get(r, "ok")) && p.tried == 2 &&
		      strcmp(ctl_peers_current(&p), sock_path) == 0,
	      "to the leader named: %s, tried %u", r != NULL ? "ok" : err, p.tried);
	json_decref(r);
	CHECK(!p.open, "no connection kept");
	snprintf(list, sizeof(list), "%s,%s", alias, sock_path);
	CHECK(ctl_peers_parse(&p, list, err, sizeof(err)) == 0, "%s", err);
	ctl_peers_setup(&p, NULL, NULL, CTLTLS_ROLE_CONTROL, 3000, false);
	atomic_store(&follow_left, 100); /* both follow */
	r = ctl_peers_call(&p, "ping", NULL, 0, err, sizeof(err));
	CHECK(r == NULL && errno == EAGAIN && p.tried == 2 && strstr(err, "goes to the leader"),
	      "all followers: tried %u: %s", p.tried, err);
	atomic_store(&follow_left, 0);
	r = ctl_peers_call(&p, "busy", NULL, 0, err, sizeof(err));
	CHECK(r != NULL && !ctl_peers_refused(r) && p.tried == 1,
	      "an EAGAIN without a leader is an answer: tried %u", p.tried);
	json_decref(r);
	close(fd);
	ctltls_ctx_free(cx);
}

int
main(void)
{
	static const struct testutil_case tests[] = {
		{ "mutual TLS: roles, names, endpoints, files", test_roles_and_names },
		{ "a certificate's tenant (its URI)", test_tenant },
		{ "refusals: CA, expired, role, no certificate, TLS 1.2, plain TCP",
		  test_refusals },
		{ "64 idle TCP and 64 idle unix connections lock nobody out", test_idle_flood },
		{ "handshake and idle timeouts", test_timeouts },
		{ "a server that hangs up in the handshake: ECONNRESET", test_hung_up },
		{ "a deferred reply", test_deferred },
		{ "a client context reloaded: renewal, bad files, CRLs", test_reload_client },
		{ "a server reloaded with a CRL refuses a revoked certificate",
		  test_reload_server_crl },
		{ "lists of control endpoints: parsed, bad ones refused", test_peers_parse },
		{ "lists of control endpoints: calls fail over", test_peers_failover },
	};
	int rc;

	if (suite_init() != 0) {
		fprintf(stderr, "test_ctltls: setup failed\n");
		suite_fini();
		return 1;
	}
	rc = testutil_run("test_ctltls", "ctltls", tests, TESTUTIL_N(tests));
	suite_fini();
	return rc;
}
