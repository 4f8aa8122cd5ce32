/* SPDX-License-Identifier: BSD-3-Clause
 * The metrics endpoint (lib/promsrv.h) over real TCP connections on the loopback: the
 * bound on connections at once and per peer address (the quiet longest is closed for a new
 * one, counted), an endpoint that still answers another address while one holds as many
 * connections as it can open, the counters in the exposition, and bad options refused.
 * Peers are told apart by their source address (127.0.0.2, 127.0.0.3, ...: the whole of
 * 127/8 is the loopback's). Nothing here is timed: every wait counts turns of the server.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "prom.h"
#include "promsrv.h"
#include "testutil.h"

#define TURNS 20000 /* turns of the server (each polls up to 1 ms) before giving up */

static char *
render(void *arg, size_t *len)
{
	struct prom p;
	char *t;

	prom_init(&p);
	promsrv_prom(*(struct promsrv **)arg, &p, "test_");
	t = prom_finish(&p, len, NULL);
	prom_free(&p);
	return t;
}

static void
logline(void *arg, const char *line)
{
	(void)arg;
	fprintf(stderr, "promsrv: %s\n", line);
}

/* A server on 127.0.0.1 at a port the kernel had free. */
static struct promsrv *
server(struct promsrv **self, int conns, int per_addr, uint16_t *port)
{
	for (int tries = 0; tries < 20; tries++) {
		struct sockaddr_in a = {.sin_family = AF_INET};
		socklen_t al = sizeof(a);
		int fd = socket(AF_INET, SOCK_STREAM, 0);
		char listen[64], err[256];

		a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
		if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof(a)) != 0 ||
		    getsockname(fd, (struct sockaddr *)&a, &al) != 0) {
			if (fd >= 0)
				close(fd);
			continue;
		}
		close(fd);
		snprintf(listen, sizeof(listen), "127.0.0.1:%u", ntohs(a.sin_port));
		struct promsrv_opts o = {.listen = listen,
					 .log = logline,
					 .conns = conns,
					 .per_addr = per_addr,
					 .render = render,
					 .arg = self};

		*self = promsrv_create(&o, err, sizeof(err));
		*port = ntohs(a.sin_port);
		if (*self != NULL)
			return *self;
	}
	return NULL;
}

/* A connection to port on 127.0.0.1 from 127.0.0.<host>; -1 on failure. */
static int
dial(uint16_t port, int host)
{
	struct sockaddr_in src = {.sin_family = AF_INET}, dst = {.sin_family = AF_INET};
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	src.sin_addr.s_addr = htonl(0x7f000000u | (uint32_t)host);
	dst.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	dst.sin_port = htons(port);
	if (fd < 0 || bind(fd, (struct sockaddr *)&src, sizeof(src)) != 0 ||
	    connect(fd, (struct sockaddr *)&dst, sizeof(dst)) != 0) {
		if (fd >= 0)
			close(fd);
		return -1;
	}
	return fd;
}

static void
turns(struct promsrv *s, int n)
{
	for (int i = 0; i < n; i++)
		promsrv_run(s);
}

/* n connections to port, the i-th from 127.0.0.<host + i * step>, each accepted in turn. */
static void
dial_n(struct promsrv *s, uint16_t port, int *fds, int n, int host, int step)
{
	for (int i = 0; i < n; i++) {
		fds[i] = dial(port, host + i * step);
		CU_ASSERT_FATAL(fds[i] >= 0);
		turns(s, 2);
	}
}

/* Run s until fd has something to read (or its end); whether it came. */
static bool
readable(struct promsrv *s, int fd)
{
	for (int i = 0; i < TURNS; i++) {
		struct pollfd p = {.fd = fd, .events = POLLIN};

		promsrv_run(s);
		if (poll(&p, 1, 1) == 1)
			return true;
	}
	return false;
}

/* Whether fd was closed by the server (end of stream or reset, nothing else). */
static bool
closed_by_server(struct promsrv *s, int fd)
{
	char b[16];

	if (!readable(s, fd))
		return false;
	ssize_t n = recv(fd, b, sizeof(b), MSG_DONTWAIT);

	return n == 0 || (n < 0 && errno == ECONNRESET);
}

/* GET /metrics on fd: the answer's first bytes in out ("" if none came). */
static void
scrape(struct promsrv *s, int fd, char *out, size_t outlen)
{
	static const char req[] = "GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n";
	size_t got = 0;

	out[0] = '\0';
	if (send(fd, req, sizeof(req) - 1, MSG_NOSIGNAL) != (ssize_t)sizeof(req) - 1)
		return;
	while (got + 1 < outlen && readable(s, fd)) {
		ssize_t n = recv(fd, out + got, outlen - 1 - got, MSG_DONTWAIT);

		if (n <= 0)
			break;
		got += (size_t)n;
		out[got] = '\0';
		if (strstr(out, "test_metrics_connections_closed_total{reason=\"refused\"}") !=
		    NULL)
			break;
	}
}

/* The value of the sample `name` in the exposition text t, or -1. */
static long long
sample(const char *t, const char *name)
{
	const char *at = t;
	size_t n = strlen(name);

	while ((at = strstr(at, name)) != NULL) {
		if ((at == t || at[-1] == '\n') && at[n] == ' ')
			return atoll(at + n + 1);
		at += n;
	}
	return -1;
}

/* One address opens connection after connection, as a client that reopens what is closed
 * would: it never holds more than per_addr, each one past that closes its own quietest
 * (counted), and another address is still answered. */
static void
test_per_address(void)
{
	struct promsrv *s = NULL;
	struct promsrv_counters c;
	uint16_t port;
	int fds[40], other;
	char out[8192];

	CU_ASSERT_PTR_NOT_NULL_FATAL(server(&s, 6, 2, &port));
	dial_n(s, port, fds, 40, 2, 0);
	turns(s, 10);
	promsrv_counters(s, &c);
	CHECK(c.accepted == 40 && c.evicted_addr == 38 && c.evicted == 0 && c.open == 2,
	      "accepted %llu, per address %llu, evicted %llu, open %u",
	      (unsigned long long)c.accepted, (unsigned long long)c.evicted_addr,
	      (unsigned long long)c.evicted, c.open);
	/* The quiet longest went first: every one but the last two was closed. */
	for (int i = 0; i < 38; i++)
		CHECK(closed_by_server(s, fds[i]), "connection %d still open", i);
	other = dial(port, 3);
	CU_ASSERT_FATAL(other >= 0);
	scrape(s, other, out, sizeof(out));
	CHECK(strncmp(out, "HTTP/1.1 200", 12) == 0, "another address got: %.60s", out);
	CHECK(sample(out, "test_metrics_connections_closed_total{reason=\"per_address\"}") == 38,
	      "exposition:\n%s", out);
	CHECK(sample(out, "test_metrics_connections") == 3, "exposition:\n%s", out);
	/* The last two of the first address are still served. */
	scrape(s, fds[38], out, sizeof(out));
	CHECK(strncmp(out, "HTTP/1.1 200", 12) == 0, "the next newest got: %.60s", out);
	scrape(s, fds[39], out, sizeof(out));
	CHECK(strncmp(out, "HTTP/1.1 200", 12) == 0, "the newest got: %.60s", out);
	for (int i = 0; i < 40; i++)
		close(fds[i]);
	close(other);
	promsrv_free(s);
}

/* Idle connections from many addresses fill the endpoint: a new one closes the quiet
 * longest (the oldest: none made a request), and is answered, and closed after its answer
 * as every scrape is (the request's body is never read). */
static void
test_full(void)
{
	struct promsrv *s = NULL;
	struct promsrv_counters c;
	uint16_t port;
	int fds[4], late;
	char out[8192];

	CU_ASSERT_PTR_NOT_NULL_FATAL(server(&s, 4, 2, &port));
	dial_n(s, port, fds, 4, 10, 1);
	late = dial(port, 20);
	CU_ASSERT_FATAL(late >= 0);
	CHECK(closed_by_server(s, fds[0]), "the quiet longest is still open");
	scrape(s, late, out, sizeof(out));
	CHECK(strncmp(out, "HTTP/1.1 200", 12) == 0, "the fifth got: %.60s", out);
	CHECK(sample(out, "test_metrics_connections_closed_total{reason=\"evicted\"}") == 1,
	      "exposition:\n%s", out);
	CHECK(sample(out, "test_metrics_connections") == 4, "exposition:\n%s", out);
	CHECK(closed_by_server(s, late), "a scrape's connection is kept");
	promsrv_counters(s, &c);
	CHECK(c.evicted == 1 && c.evicted_addr == 0 && c.refused == 0 && c.open == 3 &&
		      c.scrapes == 1 && c.accepted == 5,
	      "evicted %llu, per address %llu, refused %llu, open %u, scrapes %llu",
	      (unsigned long long)c.evicted, (unsigned long long)c.evicted_addr,
	      (unsigned long long)c.refused, c.open, (unsigned long long)c.scrapes);
	/* The others are still there: one more scrape is answered on each. */
	for (int i = 1; i < 4; i++) {
		scrape(s, fds[i], out, sizeof(out));
		CHECK(strncmp(out, "HTTP/1.1 200", 12) == 0, "connection %d got: %.60s", i, out);
	}
	for (int i = 0; i < 4; i++)
		close(fds[i]);
	close(late);
	promsrv_free(s);
}

/* Over IPv6: [::1] answers, and its connections count per address as IPv4's do; the
 * counters as stats shows them. */
static void
test_ipv6(void)
{
	struct sockaddr_in6 a = {.sin6_family = AF_INET6, .sin6_addr = IN6ADDR_LOOPBACK_INIT};
	socklen_t al = sizeof(a);
	int probe = socket(AF_INET6, SOCK_STREAM, 0), fds[3];
	struct promsrv *s = NULL;
	struct promsrv_counters c;
	char listen[64], err[256], out[8192];

	if (probe < 0 || bind(probe, (struct sockaddr *)&a, sizeof(a)) != 0 ||
	    getsockname(probe, (struct sockaddr *)&a, &al) != 0) {
		if (probe >= 0)
			close(probe);
		return; /* no IPv6 loopback here: nothing to check */
	}
	close(probe);
	snprintf(listen, sizeof(listen), "[::1]:%u", ntohs(a.sin6_port));
	struct promsrv_opts o = {
		.listen = listen, .conns = 4, .per_addr = 2, .render = render, .arg = &s};

	s = promsrv_create(&o, err, sizeof(err));
	CU_ASSERT_PTR_NOT_NULL_FATAL(s);
	for (int i = 0; i < 3; i++) {
		fds[i] = socket(AF_INET6, SOCK_STREAM | SOCK_CLOEXEC, 0);
		CU_ASSERT_FATAL(fds[i] >= 0 && connect(fds[i], (struct sockaddr *)&a, al) == 0);
		turns(s, 2);
	}
	CHECK(closed_by_server(s, fds[0]), "the third from [::1] kept the first open");
	scrape(s, fds[2], out, sizeof(out));
	CHECK(strncmp(out, "HTTP/1.1 200", 12) == 0, "over IPv6: %.60s", out);
	promsrv_counters(s, &c);
	CU_ASSERT(c.evicted_addr == 1 && c.scrapes == 1);
	json_t *j = promsrv_json(s);

	CU_ASSERT(j != NULL && json_integer_value(json_object_get(j, "per_addr")) == 2 &&
		  json_integer_value(json_object_get(j, "connections")) == 1 &&
		  json_integer_value(
			  json_object_get(json_object_get(j, "closed"), "per_address")) == 1 &&
		  json_integer_value(json_object_get(j, "table_bytes")) > 0);
	json_decref(j);
	for (int i = 0; i < 3; i++)
		close(fds[i]);
	promsrv_free(s);
}

static void
test_bad_options(void)
{
	static const int bad[][2] = {
		{-1, 0}, {PROMSRV_CONNS_MAX + 1, 0},     {4, 5},
		{4, -1}, {0, PROMSRV_CONNS_DEFAULT + 1},
	};
	char err[256];

	for (size_t i = 0; i < TESTUTIL_N(bad); i++) {
		struct promsrv_opts o = {.listen = "127.0.0.1:1",
					 .conns = bad[i][0],
					 .per_addr = bad[i][1],
					 .render = render};

		err[0] = '\0';
		CHECK(promsrv_create(&o, err, sizeof(err)) == NULL, "conns %d per address %d",
		      bad[i][0], bad[i][1]);
		CHECK(strstr(err, "per address") != NULL, "%d %d: %s", bad[i][0], bad[i][1], err);
	}
}

static const struct testutil_case tests[] = {
	{"one address reopening connections is bounded, another is answered", test_per_address},
	{"a full endpoint closes the quiet longest for a new connection", test_full},
	{"over IPv6", test_ipv6},
	{"bad connection bounds refused", test_bad_options},
};

int
main(void)
{
	return testutil_run("test_promsrv", "promsrv", tests, TESTUTIL_N(tests));
}
