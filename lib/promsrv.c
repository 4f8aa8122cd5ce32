/* SPDX-License-Identifier: BSD-3-Clause
 *
 * The metrics endpoint (promsrv.h) over libmicrohttpd in its "external polling" mode with
 * epoll: the caller's thread runs it (MHD_run() never blocks there), one descriptor tells
 * when. The listening socket is made here so that a bad address or one in use is reported
 * with the reason.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <microhttpd.h>

#include "prom.h"
#include "promsrv.h"

struct promsrv {
	struct MHD_Daemon *mhd;
	promsrv_render_fn render;
	void *arg;
	void (*log)(void *arg, const char *line);
	uint64_t scrapes;
};

int
promsrv_parse_addr(const char *s, struct sockaddr_storage *sa, socklen_t *salen, char *err,
		   size_t errlen)
{
	char host[64];
	const char *colon, *h = s;
	size_t hl;
	char *end;
	unsigned long port;

	memset(sa, 0, sizeof(*sa));
	colon = s != NULL ? strrchr(s, ':') : NULL;
	if (colon == NULL)
		goto bad;
	hl = (size_t)(colon - s);
	if (hl >= 2 && s[0] == '[' && s[hl - 1] == ']') {
		h = s + 1;
		hl -= 2;
	}
	if (hl == 0 || hl >= sizeof(host))
		goto bad;
	memcpy(host, h, hl);
	host[hl] = '\0';
	errno = 0;
	port = strtoul(colon + 1, &end, 10);
	if (colon[1] < '0' || colon[1] > '9' || *end != '\0' || errno != 0 || port < 1 ||
	    port > 65535)
		goto bad;
	if (h == s) {
		struct sockaddr_in *a = (struct sockaddr_in *)sa;

		if (inet_pton(AF_INET, host, &a->sin_addr) != 1)
			goto bad;
		a->sin_family = AF_INET;
		a->sin_port = htons((uint16_t)port);
		*salen = sizeof(*a);
	} else {
		struct sockaddr_in6 *a = (struct sockaddr_in6 *)sa;

		if (inet_pton(AF_INET6, host, &a->sin6_addr) != 1)
			goto bad;
		a->sin6_family = AF_INET6;
		a->sin6_port = htons((uint16_t)port);
		*salen = sizeof(*a);
	}
	return 0;
bad:
	snprintf(err, errlen,
		 "expected ADDR:PORT, a numeric IPv4 address or [IPv6] and a port "
		 "1..65535 (e.g. 127.0.0.1:9464), got '%s'",
		 s != NULL ? s : "");
	return -EINVAL;
}

static void
mhd_log(void *cls, const char *fmt, va_list ap)
{
	struct promsrv *s = cls;
	char line[256];
	size_t n;

	vsnprintf(line, sizeof(line), fmt, ap);
	n = strlen(line);
	while (n > 0 && (line[n - 1] == '\n' || line[n - 1] == '\r'))
		line[--n] = '\0';
	if (s->log != NULL)
		s->log(s->arg, line);
}

static enum MHD_Result
reply(struct MHD_Connection *conn, unsigned int status, char *body, size_t len, const char *type,
      bool allow)
{
	struct MHD_Response *r;
	enum MHD_Result ret;

	r = MHD_create_response_from_buffer(len, body, MHD_RESPMEM_MUST_FREE);
	if (r == NULL) {
		free(body);
		return MHD_NO;
	}
	MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, type);
	if (allow)
		MHD_add_response_header(r, MHD_HTTP_HEADER_ALLOW, "GET");
	ret = MHD_queue_response(conn, status, r);
	MHD_destroy_response(r);
	return ret;
}

static enum MHD_Result
text_reply(struct MHD_Connection *conn, unsigned int status, const char *msg, bool allow)
{
	char *b = strdup(msg);

	if (b == NULL)
		return MHD_NO;
	return reply(conn, status, b, strlen(b), "text/plain; charset=utf-8", allow);
}

/* Every request is answered at its first call, when its headers are in: a body (which a
 * GET has not) is never read, the connection is closed after the reply instead. */
static enum MHD_Result
on_request(void *cls, struct MHD_Connection *conn, const char *url, const char *method,
	   const char *version, const char *upload_data, size_t *upload_data_size, void **req_cls)
{
	struct promsrv *s = cls;
	char *body;
	size_t len = 0;

	(void)version;
	(void)upload_data;
	(void)upload_data_size;
	(void)req_cls;
	if (strcmp(method, MHD_HTTP_METHOD_GET) != 0)
		return text_reply(conn, MHD_HTTP_METHOD_NOT_ALLOWED, "only GET /metrics\n", true);
	if (strcmp(url, "/metrics") != 0)
		return text_reply(conn, MHD_HTTP_NOT_FOUND, "not found: only /metrics\n", false);
	body = s->render(s->arg, &len);
	if (body == NULL)
		return text_reply(conn, MHD_HTTP_INTERNAL_SERVER_ERROR,
				  "the metrics could not be rendered\n", false);
	s->scrapes++;
	return reply(conn, MHD_HTTP_OK, body, len, PROM_CONTENT_TYPE, false);
}

struct promsrv *
promsrv_create(const struct promsrv_opts *o, char *err, size_t errlen)
{
	struct sockaddr_storage sa;
	socklen_t salen = 0;
	char why[200];
	int fd = -1, one = 1;
	struct promsrv *s;

	if (o->render == NULL) {
		snprintf(err, errlen, "metrics: no renderer");
		return NULL;
	}
	if (promsrv_parse_addr(o->listen, &sa, &salen, why, sizeof(why)) != 0) {
		snprintf(err, errlen, "--metrics: %s", why);
		return NULL;
	}
	s = calloc(1, sizeof(*s));
	if (s == NULL) {
		snprintf(err, errlen, "--metrics %s: out of memory", o->listen);
		return NULL;
	}
	s->render = o->render;
	s->arg = o->arg;
	s->log = o->log;
	fd = socket(sa.ss_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) != 0 ||
	    bind(fd, (struct sockaddr *)&sa, salen) != 0 || listen(fd, 16) != 0) {
		snprintf(err, errlen, "--metrics %s: cannot listen: %s", o->listen,
			 strerror(errno));
		if (fd >= 0)
			close(fd);
		free(s);
		return NULL;
	}
	s->mhd = MHD_start_daemon(
		MHD_USE_EPOLL | MHD_USE_ERROR_LOG | (sa.ss_family == AF_INET6 ? MHD_USE_IPv6 : 0),
		0, NULL, NULL, on_request, s, MHD_OPTION_EXTERNAL_LOGGER, mhd_log, s,
		MHD_OPTION_LISTEN_SOCKET, (MHD_socket)fd, MHD_OPTION_CONNECTION_LIMIT,
		(unsigned int)(o->conns > 0 ? o->conns : PROMSRV_CONNS_DEFAULT),
		MHD_OPTION_CONNECTION_TIMEOUT,
		(unsigned int)(o->timeout_s > 0 ? o->timeout_s : PROMSRV_TIMEOUT_S_DEFAULT),
		MHD_OPTION_CONNECTION_MEMORY_LIMIT,
		(size_t)(o->request_max > 0 ? o->request_max : PROMSRV_REQUEST_MAX_DEFAULT),
		MHD_OPTION_END);
	if (s->mhd == NULL) {
		snprintf(err, errlen, "--metrics %s: the HTTP server did not start", o->listen);
		close(fd);
		free(s);
		return NULL;
	}
	return s;
}

void
promsrv_run(struct promsrv *s)
{
	MHD_run(s->mhd);
}

int
promsrv_fd(const struct promsrv *s)
{
	const union MHD_DaemonInfo *i = MHD_get_daemon_info(s->mhd, MHD_DAEMON_INFO_EPOLL_FD);

	return i != NULL ? i->epoll_fd : -1;
}

int
promsrv_timeout_ms(const struct promsrv *s)
{
	MHD_UNSIGNED_LONG_LONG t;

	if (MHD_get_timeout(s->mhd, &t) != MHD_YES)
		return -1;
	return t > 60000 ? 60000 : (int)t;
}

uint64_t
promsrv_scrapes(const struct promsrv *s)
{
	return s->scrapes;
}

void
promsrv_free(struct promsrv *s)
{
	if (s == NULL)
		return;
	MHD_stop_daemon(s->mhd); /* closes the listening socket too */
	free(s);
}
