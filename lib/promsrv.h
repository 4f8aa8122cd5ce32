/* SPDX-License-Identifier: BSD-3-Clause
 *
 * The metrics endpoint of the dataplane and the control process (--metrics ADDR:PORT):
 * HTTP through libmicrohttpd, driven from the caller's own thread (no thread of its own:
 * promsrv_run() serves what is ready and never blocks), so that the exposition is
 * rendered where the counters are read. Only GET /metrics is answered (404 for another
 * path, 405 for another method); connections, the memory of one request and the time a
 * connection may stay idle are bounded. No DPDK.
 *
 * Nobody can hold the endpoint: connections are accepted here (never left in the listen
 * backlog), at most `conns` at once and `per_addr` from one peer address. A connection
 * past the first bound takes the place of the one quiet longest (no request for the
 * longest time), past the second that of its own address's quietest; the one it replaces
 * is closed and counted (struct promsrv_counters). Memory is sized at creation.
 */
#ifndef GEOREDUCE_PROMSRV_H
#define GEOREDUCE_PROMSRV_H

#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include <jansson.h>

#define PROMSRV_CONNS_DEFAULT 16
#define PROMSRV_TIMEOUT_S_DEFAULT 10
#define PROMSRV_REQUEST_MAX_DEFAULT 16384
#define PROMSRV_PER_ADDR_DEFAULT 4
#define PROMSRV_CONNS_MAX 1024

/** The exposition text (malloc'd; the server frees it), or NULL (answered 500). */
typedef char *(*promsrv_render_fn)(void *arg, size_t *len);

struct promsrv_opts {
	const char *listen; /* "IPV4:PORT" or "[IPV6]:PORT" */
	int conns;          /* connections at once (..PROMSRV_CONNS_MAX); 0: the default */
	int per_addr;       /* of them from one peer address (..conns); 0: the default */
	int timeout_s;      /* an idle connection is closed after; 0: the default */
	size_t request_max; /* memory of one request (its headers); 0: the default */
	promsrv_render_fn render;
	void *arg;
	void (*log)(void *arg, const char *line); /* libmicrohttpd's complaints; may be NULL */
};

struct promsrv;

/**
 * Parse "IPV4:PORT" or "[IPV6]:PORT" (numeric address, port 1 .. 65535). 0, or -EINVAL
 * with a one-line err saying what was expected.
 */
int promsrv_parse_addr(const char *s, struct sockaddr_storage *sa, socklen_t *salen, char *err,
		       size_t errlen);

/** Listen on o->listen. NULL with a one-line err (bad address, address in use, ...). */
struct promsrv *promsrv_create(const struct promsrv_opts *o, char *err, size_t errlen);

/** Serve what is ready: accept, read requests, render and send. Never blocks. */
void promsrv_run(struct promsrv *s);

/** A descriptor that is readable when promsrv_run() has work (for poll()). */
int promsrv_fd(const struct promsrv *s);

/** The longest the caller may wait before calling promsrv_run() again; -1: no limit. */
int promsrv_timeout_ms(const struct promsrv *s);

/** Requests answered with 200 since the start. */
uint64_t promsrv_scrapes(const struct promsrv *s);

/** What the endpoint holds and what its bounds closed, since the start. */
struct promsrv_counters {
	uint64_t scrapes;      /* requests answered with 200 */
	uint64_t accepted;     /* connections accepted */
	uint64_t evicted;      /* closed for a new one: `conns` were open */
	uint64_t evicted_addr; /* closed for a new one of the same address: `per_addr` were */
	uint64_t refused;      /* closed at once: every entry held by one closing */
	unsigned int open;     /* connections open now (not counting those closing) */
};

/** The counters of s. */
void promsrv_counters(const struct promsrv *s, struct promsrv_counters *c);

/**
 * Write the endpoint's families into p, their names starting with prefix (e.g.
 * "georeduce_dataplane_"): metrics_scrapes_total, metrics_connections,
 * metrics_connections_accepted_total, metrics_connections_closed_total{reason="evicted"|
 * "per_address"|"refused"}. s NULL: zeros.
 */
struct prom;

void promsrv_prom(const struct promsrv *s, struct prom *p, const char *prefix);

/**
 * The same for the programs' stats: {"connections": N, "accepted": N, "scrapes": N,
 * "closed": {"evicted": N, "per_address": N, "refused": N}, "conns": N, "per_addr": N,
 * "table_bytes": N} (the bounds, and the memory of the endpoint's table of connections,
 * fixed at creation; libmicrohttpd's per connection is bounded by request_max). A new
 * reference, or NULL when out of memory.
 */
json_t *promsrv_json(const struct promsrv *s);

/** Close every connection and the listening socket. NULL is a no-op. */
void promsrv_free(struct promsrv *s);

#endif
