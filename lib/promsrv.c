/* SPDX-License-Identifier: BSD-3-Clause
 *
 * The metrics endpoint (promsrv.h) over libmicrohttpd in its "external polling" mode with
 * epoll: the caller's thread runs it (MHD_run() never blocks there), one descriptor tells
 * when. The listening socket is made and served here, not by libmicrohttpd: so that a bad
 * address or one in use is reported with the reason, and so that every connection is
 * accepted and either handed to libmicrohttpd (MHD_add_connection()) or makes room for
 * itself by closing another (shutdown(): libmicrohttpd then sees the end of the stream and
 * closes it in its next turn). Nothing waits in the listen backlog for a slot.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <unistd.h>

#include <jansson.h>
#include <microhttpd.h>

#include "prom.h"
#include "promsrv.h"

/* A connection the endpoint knows: accepted and being handed to libmicrohttpd, served by
 * it, or shut down to make room and waiting for libmicrohttpd to close it. */
enum conn_state {
	CONN_FREE = 0,
	CONN_ADDING,
	CONN_LIVE,
	CONN_CLOSING,
};

struct conn {
	enum conn_state state;
	int fd;
	uint64_t last; /* the endpoint's turn of its accept or its latest request */
	struct sockaddr_storage peer;
};

struct promsrv {
	struct MHD_Daemon *mhd;
	int lfd;  /* the listening socket */
	int epfd; /* lfd and libmicrohttpd's epoll descriptor: promsrv_fd() */
	promsrv_render_fn render;
	void *arg;
	void (*log)(void *arg, const char *line);
	int conns, per_addr;
	int n_tab;     /* 2 * conns: the open ones and as many closing */
	uint64_t turn; /* counts accepts and requests: the order of activity */
	struct promsrv_counters ctr;
	struct conn tab[];
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
	const union MHD_ConnectionInfo *ci =
		MHD_get_connection_info(conn, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
	char *body;
	size_t len = 0;

	(void)version;
	(void)upload_data;
	(void)upload_data_size;
	(void)req_cls;
	if (ci != NULL && ci->socket_context != NULL) /* a request: no longer quiet */
		((struct conn *)ci->socket_context)->last = ++s->turn;
	if (strcmp(method, MHD_HTTP_METHOD_GET) != 0)
		return text_reply(conn, MHD_HTTP_METHOD_NOT_ALLOWED, "only GET /metrics\n", true);
	if (strcmp(url, "/metrics") != 0)
		return text_reply(conn, MHD_HTTP_NOT_FOUND, "not found: only /metrics\n", false);
	body = s->render(s->arg, &len);
	if (body == NULL)
		return text_reply(conn, MHD_HTTP_INTERNAL_SERVER_ERROR,
				  "the metrics could not be rendered\n", false);
	s->ctr.scrapes++;
	return reply(conn, MHD_HTTP_OK, body, len, PROM_CONTENT_TYPE, false);
}

/* libmicrohttpd took a connection (started) or closed it: the entry of its descriptor
 * follows. */
static void
on_conn(void *cls, struct MHD_Connection *conn, void **socket_context,
	enum MHD_ConnectionNotificationCode code)
{
	struct promsrv *s = cls;

	if (code == MHD_CONNECTION_NOTIFY_STARTED) {
		const union MHD_ConnectionInfo *ci =
			MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CONNECTION_FD);

		for (int i = 0; ci != NULL && i < s->n_tab; i++)
			if (s->tab[i].state == CONN_ADDING && s->tab[i].fd == ci->connect_fd) {
				s->tab[i].state = CONN_LIVE;
				*socket_context = &s->tab[i];
			}
		return;
	}
	if (code == MHD_CONNECTION_NOTIFY_CLOSED && *socket_context != NULL) {
		struct conn *c = *socket_context;

		c->state = CONN_FREE;
		c->fd = -1;
		*socket_context = NULL;
	}
}

static bool
same_addr(const struct sockaddr_storage *a, const struct sockaddr_storage *b)
{
	if (a->ss_family != b->ss_family)
		return false;
	if (a->ss_family == AF_INET)
		return ((const struct sockaddr_in *)a)->sin_addr.s_addr ==
		       ((const struct sockaddr_in *)b)->sin_addr.s_addr;
	return memcmp(&((const struct sockaddr_in6 *)a)->sin6_addr,
		      &((const struct sockaddr_in6 *)b)->sin6_addr, sizeof(struct in6_addr)) == 0;
}

/* Close c to make room: libmicrohttpd reads the end of the stream and closes it. */
static void
evict(struct conn *c, uint64_t *counter)
{
	shutdown(c->fd, SHUT_RDWR);
	c->state = CONN_CLOSING;
	(*counter)++;
}

/* A new connection fd from peer: make room for it if a bound is reached (the quiet longest
 * of its address, or of all), then hand it to libmicrohttpd. */
static void
admit(struct promsrv *s, int fd, const struct sockaddr_storage *peer, socklen_t peerlen)
{
	struct conn *quiet = NULL, *quiet_addr = NULL, *free_c = NULL;
	int open = 0, of_addr = 0;

	for (int i = 0; i < s->n_tab; i++) {
		struct conn *c = &s->tab[i];

		if (c->state == CONN_FREE && free_c == NULL)
			free_c = c;
		if (c->state != CONN_LIVE)
			continue;
		open++;
		if (quiet == NULL || c->last < quiet->last)
			quiet = c;
		if (!same_addr(&c->peer, peer))
			continue;
		of_addr++;
		if (quiet_addr == NULL || c->last < quiet_addr->last)
			quiet_addr = c;
	}
	if (free_c == NULL) { /* as many closing as open: libmicrohttpd closes them next */
		close(fd);
		s->ctr.refused++;
		return;
	}
	if (of_addr >= s->per_addr)
		evict(quiet_addr, &s->ctr.evicted_addr);
	else if (open >= s->conns)
		evict(quiet, &s->ctr.evicted);
	*free_c = (struct conn){.state = CONN_ADDING, .fd = fd, .last = ++s->turn, .peer = *peer};
	s->ctr.accepted++;
	/* libmicrohttpd closes fd itself if it cannot take it. */
	if (MHD_add_connection(s->mhd, fd, (const struct sockaddr *)peer, peerlen) != MHD_YES &&
	    free_c->state == CONN_ADDING) {
		free_c->state = CONN_FREE;
		free_c->fd = -1;
		s->ctr.refused++;
	}
}

/* Listen on sa: the socket, or -1 with errno. */
static int
listen_on(const struct sockaddr_storage *sa, socklen_t salen)
{
	int fd = socket(sa->ss_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0), one = 1;

	if (fd < 0)
		return -1;
	if (setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) != 0 ||
	    bind(fd, (const struct sockaddr *)sa, salen) != 0 || listen(fd, 64) != 0) {
		int e = errno;

		close(fd);
		errno = e;
		return -1;
	}
	return fd;
}

/* The descriptor poll() watches: lfd and libmicrohttpd's epoll descriptor. */
static int
watch_fd(struct promsrv *s)
{
	const union MHD_DaemonInfo *i = MHD_get_daemon_info(s->mhd, MHD_DAEMON_INFO_EPOLL_FD);
	struct epoll_event ev = {.events = EPOLLIN};

	s->epfd = epoll_create1(EPOLL_CLOEXEC);
	if (s->epfd < 0 || i == NULL || epoll_ctl(s->epfd, EPOLL_CTL_ADD, s->lfd, &ev) != 0 ||
	    epoll_ctl(s->epfd, EPOLL_CTL_ADD, i->epoll_fd, &ev) != 0)
		return -1;
	return 0;
}

struct promsrv *
promsrv_create(const struct promsrv_opts *o, char *err, size_t errlen)
{
	struct sockaddr_storage sa;
	socklen_t salen = 0;
	char why[200];
	int conns = o->conns > 0 ? o->conns : PROMSRV_CONNS_DEFAULT;
	int per_addr = o->per_addr > 0 ? o->per_addr : PROMSRV_PER_ADDR_DEFAULT;
	struct promsrv *s;

	if (o->render == NULL) {
		snprintf(err, errlen, "metrics: no renderer");
		return NULL;
	}
	if (o->conns < 0 || conns > PROMSRV_CONNS_MAX || o->per_addr < 0 || o->per_addr > conns) {
		snprintf(err, errlen,
			 "metrics: connections %d and per address %d: expected 1..%d and 1..that",
			 o->conns, o->per_addr, PROMSRV_CONNS_MAX);
		return NULL;
	}
	if (per_addr > conns)
		per_addr = conns;
	if (promsrv_parse_addr(o->listen, &sa, &salen, why, sizeof(why)) != 0) {
		snprintf(err, errlen, "--metrics: %s", why);
		return NULL;
	}
	s = calloc(1, sizeof(*s) + 2 * (size_t)conns * sizeof(s->tab[0]));
	if (s == NULL) {
		snprintf(err, errlen, "--metrics %s: out of memory", o->listen);
		return NULL;
	}
	s->render = o->render;
	s->arg = o->arg;
	s->log = o->log;
	s->conns = conns;
	s->per_addr = per_addr;
	s->n_tab = 2 * conns;
	s->epfd = -1;
	for (int i = 0; i < s->n_tab; i++)
		s->tab[i].fd = -1;
	s->lfd = listen_on(&sa, salen);
	if (s->lfd < 0) {
		snprintf(err, errlen, "--metrics %s: cannot listen: %s", o->listen,
			 strerror(errno));
		free(s);
		return NULL;
	}
	s->mhd = MHD_start_daemon(
		MHD_USE_EPOLL | MHD_USE_ERROR_LOG | MHD_USE_NO_LISTEN_SOCKET, 0, NULL, NULL,
		on_request, s, MHD_OPTION_EXTERNAL_LOGGER, mhd_log, s, MHD_OPTION_NOTIFY_CONNECTION,
		on_conn, s, MHD_OPTION_CONNECTION_LIMIT, (unsigned int)s->n_tab,
		MHD_OPTION_CONNECTION_TIMEOUT,
		(unsigned int)(o->timeout_s > 0 ? o->timeout_s : PROMSRV_TIMEOUT_S_DEFAULT),
		MHD_OPTION_CONNECTION_MEMORY_LIMIT,
		(size_t)(o->request_max > 0 ? o->request_max : PROMSRV_REQUEST_MAX_DEFAULT),
		MHD_OPTION_END);
	if (s->mhd == NULL || watch_fd(s) != 0) {
		snprintf(err, errlen, "--metrics %s: the HTTP server did not start", o->listen);
		promsrv_free(s);
		return NULL;
	}
	return s;
}

void
promsrv_run(struct promsrv *s)
{
	/* At most conns at a turn, so that the entries closing are closed before more come. */
	for (int n = 0; n < s->conns; n++) {
		struct sockaddr_storage peer;
		socklen_t pl = sizeof(peer);
		int fd = accept4(s->lfd, (struct sockaddr *)&peer, &pl,
				 SOCK_NONBLOCK | SOCK_CLOEXEC);

		if (fd < 0)
			break;
		admit(s, fd, &peer, pl);
	}
	MHD_run(s->mhd);
}

int
promsrv_fd(const struct promsrv *s)
{
	return s->epfd;
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
	return s->ctr.scrapes;
}

void
promsrv_counters(const struct promsrv *s, struct promsrv_counters *c)
{
	*c = s->ctr;
	c->open = 0;
	for (int i = 0; i < s->n_tab; i++)
		if (s->tab[i].state == CONN_LIVE || s->tab[i].state == CONN_ADDING)
			c->open++;
}

void
promsrv_prom(const struct promsrv *s, struct prom *p, const char *prefix)
{
	struct promsrv_counters c = {0};
	char name[PROM_NAME_MAX + 1];
	static const char *const why[] = {"evicted", "per_address", "refused"};

	if (s != NULL)
		promsrv_counters(s, &c);
	const uint64_t closed[] = {c.evicted, c.evicted_addr, c.refused};

	snprintf(name, sizeof(name), "%smetrics_scrapes_total", prefix);
	prom_family(p, name, PROM_COUNTER, "Scrapes of this endpoint answered before this one");
	prom_sample_u64(p, NULL, 0, c.scrapes);
	snprintf(name, sizeof(name), "%smetrics_connections", prefix);
	prom_family(p, name, PROM_GAUGE, "Connections to this endpoint open now");
	prom_sample_u64(p, NULL, 0, c.open);
	snprintf(name, sizeof(name), "%smetrics_connections_accepted_total", prefix);
	prom_family(p, name, PROM_COUNTER, "Connections to this endpoint accepted");
	prom_sample_u64(p, NULL, 0, c.accepted);
	snprintf(name, sizeof(name), "%smetrics_connections_closed_total", prefix);
	prom_family(p, name, PROM_COUNTER,
		    "Connections to this endpoint closed by its bounds: evicted for a new one "
		    "when all were open, per_address for a new one of the same address, "
		    "refused at once");
	for (int i = 0; i < 3; i++)
		prom_sample_u64(p, &(struct prom_label){"reason", why[i]}, 1, closed[i]);
}

json_t *
promsrv_json(const struct promsrv *s)
{
	struct promsrv_counters c;

	promsrv_counters(s, &c);
	return json_pack("{sI sI sI s{sI sI sI} si si sI}", "connections", (json_int_t)c.open,
			 "accepted", (json_int_t)c.accepted, "scrapes", (json_int_t)c.scrapes,
			 "closed", "evicted", (json_int_t)c.evicted, "per_address",
			 (json_int_t)c.evicted_addr, "refused", (json_int_t)c.refused, "conns",
			 s->conns, "per_addr", s->per_addr, "table_bytes",
			 (json_int_t)(sizeof(*s) + (size_t)s->n_tab * sizeof(s->tab[0])));
}

void
promsrv_free(struct promsrv *s)
{
	if (s == NULL)
		return;
	if (s->mhd != NULL)
		MHD_stop_daemon(s->mhd);
	if (s->epfd >= 0)
		close(s->epfd);
	close(s->lfd);
	free(s);
}
