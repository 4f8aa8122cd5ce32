/* SPDX-License-Identifier: BSD-3-Clause
 *
 * libgeoreduce against a fake gateway: a thread on 127.0.0.1 UDP sockets (one per port of
 * the steering range) that plays the aggregator of docs/PROTOCOL.md sections 7 and 10 for
 * the configured workers: it sums their CONTRIBs, sends every worker the RESULT from the
 * port of the chunk, answers NACK_RESULT from the results it retains (two rounds) and,
 * depending on the test, RETX CONTRIBs with an ACK or the result. It can drop, duplicate
 * and reorder packets both ways, stay silent (from the start, or after some results), or
 * inject packets of other rounds and garbage. It counts every packet of the client that
 * breaks a rule (wrong port, tree, count, sender), which must stay zero.
 *
 * Environment: GEOREDUCE_TEST_QUICK=1 runs fewer rounds on smaller tensors.
 * main returns the number of failures.
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
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "ctlmsg.h"
#include "fuzzutil.h"
#include "georeduce.h"
#include "halffloat.h"
#include "testutil.h"
#include "wire.h"

#define GW_PORTS_MAX 4
#define WORKERS_MAX 8
#define TREES_MAX 4
#define LOCALHOST 0x7f000001u

static bool quick;

/* What a test's job looks like: one gateway (the root of every tree) with local workers. */
struct job {
	uint32_t job, epoch;
	enum gr_dtype dtype;
	uint64_t elements;
	uint32_t ce;
	uint16_t gw_id;
	uint16_t base, ports;
	int n_workers;
	uint16_t wid[WORKERS_MAX];
	uint16_t wport[WORKERS_MAX];
	int n_trees;
	uint16_t tree_id[TREES_MAX];
	uint32_t first[TREES_MAX], count[TREES_MAX];
	uint32_t slots;
	uint32_t window;         /* 0: none in the table */
	double rate_gbps;        /* every tree's rate_gbps in the table; 0: 1.0 */
	uint8_t cset_blocks;     /* contributor sets in the job's packets */
	int threshold;           /* partial reduce: complete at this many; 0: all */
	uint32_t addr;           /* the gateway's address; 0: 127.0.0.1 */
	bool keep_wports;        /* bind_ports(): the workers' ports are set already */
	const struct job *shard; /* another gateway of the site and its trees, listed
					 * in the table's `shards`; NULL: none */
};

/* The gateway's address of a job. */
static uint32_t
job_addr(const struct job *j)
{
	return j->addr != 0 ? j->addr : LOCALHOST;
}

static const char *
ip_str(uint32_t a, char *buf)
{
	snprintf(buf, 16, "%u.%u.%u.%u", a >> 24, (a >> 16) & 0xff, (a >> 8) & 0xff, a & 0xff);
	return buf;
}

/* How the fake gateway misbehaves. Probabilities in parts per million. */
enum retx_mode {
	RETX_IGNORE, /* drop RETX duplicates unanswered (today's dataplane) */
	RETX_SPEC,   /* ACK if the chunk is open, the retained RESULT if done */
	RETX_ACK,    /* always ACK, never the result */
};

struct fake_opts {
	uint32_t loss_rx, loss_tx, dup_tx, reorder;
	enum retx_mode retx;
	bool drop_fanout;            /* drop every RESULT that is not an answer */
	bool drop_first_nack_answer; /* drop the first NACK answer per chunk and worker */
	bool nack_needs_ack;         /* answer NACK_RESULT only for chunks ACKed before */
	bool inject;                 /* stale rounds, other epochs, garbage with results */
	bool probe;                  /* PROBE each worker once */
	bool bad_cset;               /* before each fan-out RESULT, two with wrong sums and
					 * a set of the wrong length (none, one block more) */
	unsigned int silent_after;   /* fall silent after this many RESULTs (0: never) */
	bool lose_chunk0;            /* lose the first CONTRIB of chunk 0 */
	uint32_t delay_us;           /* take in each packet this long after it came (a
				      * longer round trip): at most DELAYQ_LEN held, each of
				      * at most DELAYQ_BYTES; changed with fakegw.delay_us */
	uint64_t seed;
};

/* lib/client/client_internal.h (which needs the kernels' headers): the window a tree's
 * rate and round trip give (allreduce.c). */
uint32_t client_window_for(double rate_gbps, uint32_t rtt_us, size_t chunk_bytes, uint32_t floor,
			   uint32_t slots);

#define DELAYQ_LEN 2048
#define DELAYQ_BYTES 2048

/* A packet the fake gateway holds for fake_opts.delay_us. */
struct delayed {
	uint64_t due_us;
	int port;
	bool first; /* a CONTRIB's first transmission */
	size_t len;
	struct sockaddr_in from;
	uint8_t pkt[DELAYQ_BYTES];
};

struct fslot {
	uint32_t round;
	int state; /* 0 free, 1 open, 2 done */
	uint32_t in, acked, nack_dropped;
	uint16_t contrib;
	uint8_t set[WIRE_CSET_BLOCK]; /* contributor set (one block in these tests) */
	float *acc;
	uint8_t *res;
};

struct fakegw {
	struct job j;
	struct fake_opts o;
	int fd[GW_PORTS_MAX];
	uint32_t n_chunks;
	size_t esize;
	struct fslot *slots; /* n_chunks x 2 (round parity) */
	float *acc;
	uint8_t *res;
	uint64_t rng;
	atomic_bool stop, silent;
	pthread_t th;
	/* Reorder: one packet held back until the next one is sent. */
	uint8_t held[WIRE_UDP_PAYLOAD_MAX];
	size_t held_len;
	int held_fd;
	struct sockaddr_in held_to;
	/* Window check of first transmissions in the latest round: per tree, the lowest
	 * chunk without its result and the widest span seen; the most chunks of one worker
	 * the gateway had from it without sending their result. */
	uint32_t win_round, lowest[TREES_MAX], max_span, max_flight;
	bool win_seen;
	/* Counters (read after the thread is joined). */
	unsigned int bad, contribs, retx, nacks, acks_sent, results, answers, probe_replies;
	unsigned int late, bad_csets;
	unsigned int tree_contribs[TREES_MAX]; /* first transmissions per tree */
	/* Packets held back (fake_opts.delay_us): a ring, the delay now, and the most
	 * first transmissions of CONTRIBs held at once since delay_peak was last set to 0. */
	struct delayed *dq;
	unsigned int dq_head, dq_n, dq_first;
	atomic_uint delay_us, delay_peak;
};

/* ---- table ------------------------------------------------------------------------------ */

static char *
table_json(const struct job *j)
{
	size_t cap = 16384, n = 0;
	char *s = malloc(cap), workers[2048];
	size_t wn = 0;

	char ip[16];

	CU_ASSERT_PTR_NOT_NULL_FATAL(s);
	for (int i = 0; i < j->n_workers; i++)
		wn += (size_t)snprintf(workers + wn, sizeof(workers) - wn,
				       "%s{\"id\": %u, \"ipv4\": \"127.0.0.1\", \"port\": %u}",
				       i ? ", " : "", j->wid[i], j->wport[i]);
	n += (size_t)snprintf(
		s + n, cap - n,
		"{\"format\": \"georeduce-table/1\", \"job\": %u, \"epoch\": %u,\n"
		" \"gateway\": {\"id\": %u, \"ipv4\": \"%s\", \"base_port\": %u, "
		"\"ports\": %u},\n \"dtype\": \"%s\", \"elements\": %llu, \"chunk_elements\": %u,\n"
		" \"limits\": {\"max_trees\": 4, \"max_children\": 4, \"max_workers\": 8, "
		"\"max_slots\": 4096},\n \"cset_blocks\": %u, \"trees\": [",
		j->job, j->epoch, j->gw_id, ip_str(job_addr(j), ip), j->base, j->ports,
		gr_dtype_name(j->dtype), (unsigned long long)j->elements, j->ce, j->cset_blocks);
	for (int t = 0; t < j->n_trees; t++)
		n += (size_t)snprintf(
			s + n, cap - n,
			"%s{\"id\": %u, \"role\": \"root\", \"parent\": null, \"children\": [],\n"
			"  \"workers\": [%s], \"expected\": %d, \"subtree_workers\": %d,\n"
			"  \"chunk_first\": %u, \"chunk_count\": %u, \"rate_gbps\": %g, "
			"\"slots\": %u%s%.0u%s%.0d}",
			t ? ",\n " : "", j->tree_id[t], workers, j->n_workers, j->n_workers,
			j->first[t], j->count[t], j->rate_gbps != 0 ? j->rate_gbps : 1.0, j->slots,
			j->window != 0 ? ", \"window\": " : "", j->window,
			j->threshold != 0 ? ", \"threshold\": " : "", j->threshold);
	n += (size_t)snprintf(s + n, cap - n, "]");
	if (j->shard != NULL) {
		const struct job *o = j->shard;

		n += (size_t)snprintf(s + n, cap - n,
				      ",\n \"shards\": [{\"gateway\": {\"id\": %u, "
				      "\"ipv4\": \"%s\", \"base_port\": %u, \"ports\": %u}, "
				      "\"trees\": [",
				      o->gw_id, ip_str(job_addr(o), ip), o->base, o->ports);
		for (int t = 0; t < o->n_trees; t++)
			n += (size_t)snprintf(s + n, cap - n,
					      "%s{\"id\": %u, \"chunk_first\": %u, "
					      "\"chunk_count\": %u, \"slots\": %u}",
					      t ? ", " : "", o->tree_id[t], o->first[t],
					      o->count[t], o->slots);
		n += (size_t)snprintf(s + n, cap - n, "]}]");
	}
	snprintf(s + n, cap - n, "}\n");
	return s;
}

/* A job of n workers over `trees` trees splitting the chunks evenly, on free ports. */
static void
job_init(struct job *j, int n_workers, int n_trees, int ports, enum gr_dtype dt, uint64_t elements,
	 uint32_t ce)
{
	uint32_t n_chunks = (uint32_t)((elements + ce - 1) / ce), at = 0;

	memset(j, 0, sizeof(*j));
	j->job = 7;
	j->epoch = 3;
	j->dtype = dt;
	j->elements = elements;
	j->ce = ce;
	j->gw_id = 1;
	j->ports = (uint16_t)ports;
	j->n_workers = n_workers;
	for (int i = 0; i < n_workers; i++)
		j->wid[i] = (uint16_t)(100 + 3 * i);
	j->n_trees = n_trees;
	for (int t = 0; t < n_trees; t++) {
		uint32_t end = (uint32_t)((uint64_t)n_chunks * (t + 1) / n_trees);

		j->tree_id[t] = (uint16_t)(10 * t + 2);
		j->first[t] = at;
		j->count[t] = end - at;
		at = end;
	}
	j->slots = 4096;
}

/* ---- fake gateway ------------------------------------------------------------------------ */

static bool
chance(struct fakegw *g, uint32_t ppm)
{
	return ppm != 0 && rnd(&g->rng, 1000000) < ppm;
}

static void
raw_send(int fd, const void *p, size_t len, const struct sockaddr_in *to)
{
	(void)!sendto(fd, p, len, 0, (const struct sockaddr *)to, sizeof(*to));
}

static void
held_flush(struct fakegw *g)
{
	if (g->held_len != 0)
		raw_send(g->held_fd, g->held, g->held_len, &g->held_to);
	g->held_len = 0;
}

/* Send with the configured loss, duplication and reordering. */
static void
gw_send(struct fakegw *g, int fd, const void *p, size_t len, const struct sockaddr_in *to)
{
	if (chance(g, g->o.loss_tx))
		return;
	if (g->held_len == 0 && chance(g, g->o.reorder)) {
		memcpy(g->held, p, len);
		g->held_len = len;
		g->held_fd = fd;
		g->held_to = *to;
		return;
	}
	raw_send(fd, p, len, to);
	if (chance(g, g->o.dup_tx))
		raw_send(fd, p, len, to);
	held_flush(g);
}

static struct sockaddr_in
worker_addr(const struct fakegw *g, int k)
{
	return (struct sockaddr_in){.sin_family = AF_INET,
				    .sin_port = htons(g->j.wport[k]),
				    .sin_addr.s_addr = htonl(LOCALHOST)};
}

static int
tree_index(const struct job *j, uint32_t chunk)
{
	for (int t = 0; t < j->n_trees; t++)
		if (chunk - j->first[t] < j->count[t])
			return t;
	return -1;
}

static uint32_t
chunk_len(const struct job *j, uint32_t c)
{
	return wire_chunk_len(j->elements, j->ce, c);
}

/* Send slot s's RESULT of chunk c to worker k. answer: RETX|ECHO with tsecr. */
static void
send_result(struct fakegw *g, const struct fslot *s, uint32_t c, int k, bool answer, uint32_t tsecr,
	    uint32_t round_delta, uint32_t epoch_delta)
{
	uint8_t pkt[WIRE_UDP_PAYLOAD_MAX];
	uint32_t n = chunk_len(&g->j, c);
	struct wire_pkt p = {
		.type = WIRE_TYPE_RESULT,
		.flags = answer ? WIRE_F_RETX | WIRE_F_ECHO : 0,
		.dtype = (enum wire_dtype)g->j.dtype,
		.job = g->j.job,
		.epoch = g->j.epoch + epoch_delta,
		.tree = g->j.tree_id[tree_index(&g->j, c)],
		.sender = g->j.gw_id,
		.origin = g->j.gw_id,
		.contrib = s->contrib,
		.round = s->round + round_delta,
		.chunk = c,
		.count = (uint16_t)n,
		.tsval = 1,
		.tsecr = answer ? tsecr : 0,
	};
	struct sockaddr_in to = worker_addr(g, k);
	size_t sl = g->j.cset_blocks * WIRE_CSET_BLOCK, len = WIRE_HDR_LEN + sl + n * g->esize;

	p.cset_blocks = g->j.cset_blocks;
	CU_ASSERT_FATAL(wire_hdr_encode(pkt, len, &p, NULL) == 0);
	memcpy(pkt + WIRE_HDR_LEN, s->set, sl);
	memcpy(pkt + WIRE_HDR_LEN + sl, s->res, n * g->esize);
	if (!answer && g->o.drop_fanout)
		return;
	gw_send(g, g->fd[c % g->j.ports], pkt, len, &to);
	if (answer)
		g->answers++;
	else
		g->results++;
	if (g->o.silent_after != 0 && g->results + g->answers == g->o.silent_after)
		atomic_store(&g->silent, true);
}

static void
send_ack(struct fakegw *g, const struct wire_pkt *q, int k)
{
	uint8_t pkt[WIRE_HDR_LEN];
	struct wire_pkt p = {
		.type = WIRE_TYPE_ACK,
		.flags = WIRE_F_ECHO,
		.job = q->job,
		.epoch = q->epoch,
		.tree = q->tree,
		.sender = g->j.gw_id,
		.origin = q->origin,
		.round = q->round,
		.chunk = q->chunk,
		.count = 1,
		.tsval = 1,
		.tsecr = q->tsval,
	};
	struct sockaddr_in to = worker_addr(g, k);

	CU_ASSERT_FATAL(wire_hdr_encode(pkt, sizeof(pkt), &p, NULL) == 0);
	gw_send(g, g->fd[q->chunk % g->j.ports], pkt, sizeof(pkt), &to);
	g->acks_sent++;
}

static void
inject(struct fakegw *g, const struct fslot *s, uint32_t c, int k)
{
	static const char garbage[] = "GR, but not quite a georeduce packet";
	struct sockaddr_in to = worker_addr(g, k);

	send_result(g, s, c, k, false, 0, (uint32_t)-1, 0); /* the previous round */
	send_result(g, s, c, k, false, 0, 0, 1);            /* a future epoch */
	raw_send(g->fd[0], garbage, sizeof(garbage), &to);
}

static void
probe(struct fakegw *g, int k)
{
	uint8_t pkt[WIRE_HDR_LEN + 16] = {0};
	struct wire_pkt p = {.type = WIRE_TYPE_PROBE,
			     .job = g->j.job,
			     .epoch = g->j.epoch,
			     .sender = g->j.gw_id,
			     .origin = g->j.gw_id,
			     .tsval = 5,
			     .payload_len = 16};
	struct sockaddr_in to = worker_addr(g, k);

	CU_ASSERT_FATAL(wire_hdr_encode(pkt, sizeof(pkt), &p, NULL) == 0);
	raw_send(g->fd[0], pkt, sizeof(pkt), &to);
}

static float
elem_get(const uint8_t *p, enum gr_dtype dt, uint32_t i)
{
	uint16_t h;
	float f;

	if (dt == GR_DTYPE_FP32) {
		memcpy(&f, p + 4 * i, 4);
		return f;
	}
	memcpy(&h, p + 2 * i, 2);
	return dt == GR_DTYPE_FP16 ? gr_f16_to_f32(h) : gr_bf16_to_f32(h);
}

static void
elem_put(uint8_t *p, enum gr_dtype dt, uint32_t i, float f)
{
	uint16_t h;

	if (dt == GR_DTYPE_FP32) {
		memcpy(p + 4 * i, &f, 4);
		return;
	}
	h = dt == GR_DTYPE_FP16 ? gr_f32_to_f16(f) : gr_f32_to_bf16(f);
	memcpy(p + 2 * i, &h, 2);
}

/* Send worker k a RESULT of slot s's chunk c whose contributor set is `blocks` blocks long
 * instead of the job's (s's set, zero beyond it, or none) and whose sums are off by one: a
 * client that took it would have a wrong result. */
static void
send_result_bad_cset(struct fakegw *g, const struct fslot *s, uint32_t c, int k, uint8_t blocks)
{
	uint8_t pkt[WIRE_UDP_PAYLOAD_MAX];
	uint32_t n = chunk_len(&g->j, c);
	struct wire_pkt p = {
		.type = WIRE_TYPE_RESULT,
		.dtype = (enum wire_dtype)g->j.dtype,
		.job = g->j.job,
		.epoch = g->j.epoch,
		.tree = g->j.tree_id[tree_index(&g->j, c)],
		.sender = g->j.gw_id,
		.origin = g->j.gw_id,
		.contrib = s->contrib,
		.round = s->round,
		.chunk = c,
		.count = (uint16_t)n,
		.tsval = 1,
		.cset_blocks = blocks,
	};
	struct sockaddr_in to = worker_addr(g, k);
	size_t sl = (size_t)blocks * WIRE_CSET_BLOCK, len = WIRE_HDR_LEN + sl + n * g->esize;

	CU_ASSERT_FATAL(blocks != g->j.cset_blocks && len <= sizeof(pkt));
	memset(pkt, 0, WIRE_HDR_LEN + sl);
	CU_ASSERT_FATAL(wire_hdr_encode(pkt, len, &p, NULL) == 0);
	memcpy(pkt + WIRE_HDR_LEN, s->set, sl < sizeof(s->set) ? sl : sizeof(s->set));
	for (uint32_t i = 0; i < n; i++)
		elem_put(pkt + WIRE_HDR_LEN + sl, g->j.dtype, i,
			 elem_get(s->res, g->j.dtype, i) + 1);
	gw_send(g, g->fd[c % g->j.ports], pkt, len, &to);
	g->bad_csets++;
}

static void
window_check(struct fakegw *g, const struct wire_pkt *p, int k)
{
	int t = tree_index(&g->j, p->chunk);

	if (!g->win_seen || wire_round_before(g->win_round, p->round)) {
		g->win_seen = true;
		g->win_round = p->round;
		for (int i = 0; i < g->j.n_trees; i++)
			g->lowest[i] = g->j.first[i];
	}
	if (p->round != g->win_round || t < 0)
		return;
	uint32_t *lo = &g->lowest[t];

	while (*lo < g->j.first[t] + g->j.count[t]) {
		const struct fslot *s = &g->slots[2 * *lo + (p->round & 1)];

		if (s->state != 2 || s->round != p->round)
			break;
		(*lo)++;
	}
	if (p->chunk >= *lo && p->chunk - *lo + 1 > g->max_span)
		g->max_span = p->chunk - *lo + 1;
	uint32_t flight = 1; /* this one */

	for (uint32_t c = *lo; c < g->j.first[t] + g->j.count[t]; c++) {
		const struct fslot *s = &g->slots[2 * c + (p->round & 1)];

		flight += c != p->chunk && s->round == p->round && s->state == 1 &&
			  (s->in & (1u << k));
	}
	if (flight > g->max_flight)
		g->max_flight = flight;
}

static void
on_contrib(struct fakegw *g, const struct wire_pkt *p, const uint8_t *pkt, int k,
	   const struct sockaddr_in *from, int fd)
{
	struct fslot *s = &g->slots[2 * p->chunk + (p->round & 1)];
	bool retx = p->flags & WIRE_F_RETX;

	g->contribs++;
	if (retx) {
		g->retx++;
	} else {
		window_check(g, p, k);
		g->tree_contribs[tree_index(&g->j, p->chunk)]++;
	}
	/* Partial reduce: a straggler of this round or rounds behind gets the latest RESULT. */
	if (g->j.threshold != 0 && s->state == 2 && !wire_round_before(s->round, p->round) &&
	    !(s->in & (1u << k))) {
		g->late++;
		send_result(g, s, p->chunk, k, true, p->tsval, 0, 0);
		return;
	}
	if (s->state == 0 || s->round != p->round) {
		s->state = 1;
		s->round = p->round;
		s->in = s->acked = s->nack_dropped = 0;
		s->contrib = 0;
		memset(s->set, 0, sizeof(s->set));
		memset(s->acc, 0, g->j.ce * sizeof(float));
	}
	if (s->state == 2) {
		if (retx && g->o.retx == RETX_SPEC)
			send_result(g, s, p->chunk, k, true, p->tsval, 0, 0);
		else if (retx && g->o.retx == RETX_ACK)
			send_ack(g, p, k);
		if (retx && g->o.retx == RETX_ACK)
			s->acked |= 1u << k;
		return;
	}
	if (!(s->in & (1u << k))) {
		for (uint32_t i = 0; i < p->count; i++)
			s->acc[i] += elem_get(pkt + p->payload_off, g->j.dtype, i);
		s->in |= 1u << k;
		s->contrib++;
		if (g->j.cset_blocks != 0)
			CU_ASSERT(wire_cset_add(s->set, 1, p->origin) == 0);
	}
	if (s->contrib == (g->j.threshold != 0 ? g->j.threshold : g->j.n_workers)) {
		s->state = 2;
		for (uint32_t i = 0; i < p->count; i++)
			elem_put(s->res, g->j.dtype, i, s->acc[i]);
		for (int w = 0; w < g->j.n_workers; w++) {
			if (g->o.bad_cset) {
				send_result_bad_cset(g, s, p->chunk, w, 0);
				send_result_bad_cset(g, s, p->chunk, w, g->j.cset_blocks + 1);
			}
			send_result(g, s, p->chunk, w, false, 0, 0, 0);
			if (g->o.inject)
				inject(g, s, p->chunk, w);
		}
	}
	if (retx && g->o.retx != RETX_IGNORE && (s->state == 1 || g->o.retx == RETX_ACK)) {
		send_ack(g, p, k);
		s->acked |= 1u << k;
	}
	(void)from;
	(void)fd;
}

static void
on_nack(struct fakegw *g, const struct wire_pkt *p, int k)
{
	g->nacks++;
	for (uint32_t c = p->chunk; c - p->chunk < p->count; c++) {
		struct fslot *s = &g->slots[2 * c + (p->round & 1)];

		if (s->state != 2 || s->round != p->round)
			continue;
		if (g->o.nack_needs_ack && !(s->acked & (1u << k)))
			continue;
		if (g->o.drop_first_nack_answer && !(s->nack_dropped & (1u << k))) {
			s->nack_dropped |= 1u << k;
			continue;
		}
		send_result(g, s, c, k, true, p->tsval, 0, 0);
	}
}

static void
gw_rx(struct fakegw *g, int port_idx, const uint8_t *pkt, size_t len,
      const struct sockaddr_in *from)
{
	struct wire_pkt p;
	int k = -1, t;

	if (chance(g, g->o.loss_rx))
		return;
	if (wire_hdr_decode(pkt, len, &p, NULL) < 0) {
		g->bad++;
		return;
	}
	if (g->o.lose_chunk0 && p.type == WIRE_TYPE_CONTRIB && p.chunk == 0) {
		g->o.lose_chunk0 = false;
		return;
	}
	if (p.type == WIRE_TYPE_PROBE_REPLY) {
		g->probe_replies += p.tsecr == 5 && p.origin == g->j.gw_id;
		return;
	}
	for (int i = 0; i < g->j.n_workers; i++)
		if (g->j.wid[i] == p.origin)
			k = i;
	t = p.chunk < g->n_chunks ? tree_index(&g->j, p.chunk) : -1;
	if (p.job != g->j.job || p.epoch != g->j.epoch || k < 0 || p.sender != p.origin ||
	    ntohs(from->sin_port) != g->j.wport[k] || t < 0 || p.tree != g->j.tree_id[t] ||
	    (uint32_t)port_idx != p.chunk % g->j.ports) {
		g->bad++;
		return;
	}
	if (p.type == WIRE_TYPE_CONTRIB && p.count == chunk_len(&g->j, p.chunk) &&
	    p.dtype == (enum wire_dtype)g->j.dtype && p.contrib == 1 &&
	    p.cset_blocks == g->j.cset_blocks &&
	    (p.cset_blocks == 0 || wire_cset_test(pkt + WIRE_HDR_LEN, p.cset_blocks, p.origin)))
		on_contrib(g, &p, pkt, k, from, g->fd[port_idx]);
	else if (p.type == WIRE_TYPE_NACK_RESULT && p.count >= 1 &&
		 p.chunk + p.count <= g->j.first[t] + g->j.count[t])
		on_nack(g, &p, k);
	else
		g->bad++;
}

static uint64_t
mono_us(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000000u + (uint64_t)t.tv_nsec / 1000u;
}

/* A packet that came on port i: taken in now, or held for the delay. */
static void
gw_in(struct fakegw *g, int i, uint8_t *buf, size_t n, const struct sockaddr_in *from)
{
	uint32_t d = atomic_load(&g->delay_us);
	struct delayed *q;
	struct wire_pkt p;

	if (atomic_load(&g->silent))
		return;
	if (d == 0 || g->dq == NULL || g->dq_n == DELAYQ_LEN || n > DELAYQ_BYTES) {
		gw_rx(g, i, buf, n, from);
		return;
	}
	q = &g->dq[(g->dq_head + g->dq_n++) % DELAYQ_LEN];
	*q = (struct delayed){.due_us = mono_us() + d, .port = i, .len = n, .from = *from};
	q->first = wire_hdr_decode(buf, n, &p, NULL) == 0 && p.type == WIRE_TYPE_CONTRIB &&
		   !(p.flags & WIRE_F_RETX);
	memcpy(q->pkt, buf, n);
	g->dq_first += q->first;
	if (g->dq_first > atomic_load(&g->delay_peak))
		atomic_store(&g->delay_peak, g->dq_first);
}

/* Take in the held packets that are due; the ms until the next one is (-1: none held). */
static int
gw_delayed(struct fakegw *g)
{
	while (g->dq_n > 0) {
		struct delayed *q = &g->dq[g->dq_head];
		uint64_t now = mono_us();

		if (q->due_us > now)
			return (int)((q->due_us - now + 999) / 1000);
		gw_rx(g, q->port, q->pkt, q->len, &q->from);
		g->dq_first -= q->first;
		g->dq_head = (g->dq_head + 1) % DELAYQ_LEN;
		g->dq_n--;
	}
	return -1;
}

static void *
gw_main(void *arg)
{
	struct fakegw *g = arg;
	struct pollfd pfd[GW_PORTS_MAX];
	uint8_t buf[WIRE_UDP_PAYLOAD_MAX + 1];
	bool probed = false;

	for (int i = 0; i < g->j.ports; i++)
		pfd[i] = (struct pollfd){.fd = g->fd[i], .events = POLLIN};
	while (!atomic_load(&g->stop)) {
		int next = gw_delayed(g);

		if (poll(pfd, g->j.ports, next >= 0 && next < 5 ? next : 5) <= 0)
			continue;
		for (int i = 0; i < g->j.ports; i++) {
			struct sockaddr_in from;
			socklen_t fl = sizeof(from);
			ssize_t n;

			while ((n = recvfrom(g->fd[i], buf, sizeof(buf), MSG_DONTWAIT,
					     (struct sockaddr *)&from, &fl)) > 0) {
				gw_in(g, i, buf, (size_t)n, &from);
				fl = sizeof(from);
			}
		}
		if (g->o.probe && !probed && g->contribs > 0) {
			for (int k = 0; k < g->j.n_workers; k++)
				probe(g, k);
			probed = true;
		}
		held_flush(g);
	}
	return NULL;
}

/* Bind the gateway's ports and pick free worker ports: base + 8 + i. */
static bool
bind_ports(struct fakegw *g)
{
	for (int attempt = 0; attempt < 50; attempt++) {
		uint16_t base = (uint16_t)(20000 + rnd(&g->rng, 40000));
		int probe_fd[WORKERS_MAX];
		bool ok = true;
		int i;

		for (i = 0; i < g->j.ports + (g->j.keep_wports ? 0 : g->j.n_workers) && ok; i++) {
			struct sockaddr_in a = {
				.sin_family = AF_INET,
				.sin_port = htons((uint16_t)(base + (i < g->j.ports ? i : 8 + i))),
				.sin_addr.s_addr =
					htonl(i < g->j.ports ? job_addr(&g->j) : LOCALHOST),
			};
			int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);

			CU_ASSERT_FATAL(fd >= 0);
			if (bind(fd, (struct sockaddr *)&a, sizeof(a)) < 0) {
				close(fd);
				ok = false;
				break;
			}
			if (i < g->j.ports)
				g->fd[i] = fd;
			else
				probe_fd[i - g->j.ports] = fd;
		}
		for (int x = 0; x < i; x++)
			if (!ok || x >= g->j.ports)
				close(x < g->j.ports ? g->fd[x] : probe_fd[x - g->j.ports]);
		if (!ok)
			continue;
		g->j.base = base;
		for (int w = 0; w < g->j.n_workers && !g->j.keep_wports; w++)
			g->j.wport[w] = (uint16_t)(base + 8 + g->j.ports + w);
		return true;
	}
	return false;
}

static struct fakegw *
gw_start(struct job *j, const struct fake_opts *o)
{
	struct fakegw *g = calloc(1, sizeof(*g));

	CU_ASSERT_PTR_NOT_NULL_FATAL(g);
	g->j = *j;
	g->o = *o;
	g->rng = o->seed ? o->seed : 0x5eed;
	g->rng ^= (uint64_t)getpid() << 20 ^ (uint64_t)time(NULL);
	g->n_chunks = (uint32_t)((j->elements + j->ce - 1) / j->ce);
	g->esize = gr_dtype_size(j->dtype);
	g->slots = calloc(2 * (size_t)g->n_chunks, sizeof(*g->slots));
	g->acc = calloc(2 * (size_t)g->n_chunks * j->ce, sizeof(float));
	g->res = calloc(2 * (size_t)g->n_chunks * j->ce, g->esize);
	CU_ASSERT_FATAL(g->slots != NULL && g->acc != NULL && g->res != NULL);
	for (size_t i = 0; i < 2 * (size_t)g->n_chunks; i++) {
		g->slots[i].acc = g->acc + i * j->ce;
		g->slots[i].res = g->res + i * j->ce * g->esize;
	}
	if (o->delay_us != 0) {
		g->dq = calloc(DELAYQ_LEN, sizeof(*g->dq));
		CU_ASSERT_FATAL(g->dq != NULL);
		atomic_store(&g->delay_us, o->delay_us);
	}
	CU_ASSERT_FATAL(bind_ports(g));
	*j = g->j; /* the ports chosen */
	CU_ASSERT_FATAL(pthread_create(&g->th, NULL, gw_main, g) == 0);
	return g;
}

static void
gw_stop(struct fakegw *g)
{
	atomic_store(&g->stop, true);
	pthread_join(g->th, NULL);
	for (int i = 0; i < g->j.ports; i++)
		close(g->fd[i]);
}

static void
gw_free(struct fakegw *g)
{
	free(g->dq);
	free(g->slots);
	free(g->acc);
	free(g->res);
	free(g);
}

/* ---- workers ----------------------------------------------------------------------------- */

struct wrk {
	struct gr_client *c;
	struct job *j;
	int k; /* index in the job */
	uint8_t *buf;
	uint64_t n; /* elements of the tensor: 0, the job's */
	struct gr_options opt;
	uint32_t round0, rounds;
	int rc;    /* last gr_allreduce() result */
	int wrong; /* elements that differ from the expected sum */
	struct gr_stats st;
	double ms;
};

static float
pattern(int k, uint64_t e, uint32_t round)
{
	return (float)(((uint64_t)k * 5 + e + round) % 13);
}

static void *
wrk_main(void *arg)
{
	struct wrk *w = arg;
	const struct job *j = w->j;
	struct timespec t0, t1;

	uint64_t n = w->n != 0 ? w->n : j->elements;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (uint32_t r = w->round0; r < w->round0 + w->rounds; r++) {
		for (uint64_t e = 0; e < j->elements; e++) /* past n: a canary */
			elem_put(w->buf, j->dtype, (uint32_t)e, pattern(w->k, e, r));
		w->rc = gr_allreduce(w->c, w->buf, n, j->dtype, r, &w->opt);
		if (w->rc < 0)
			break;
		for (uint64_t e = n; e < j->elements; e++) {
			uint8_t want[4];

			elem_put(want, j->dtype, 0, pattern(w->k, e, r));
			if (memcmp(want, w->buf + e * gr_dtype_size(j->dtype),
				   gr_dtype_size(j->dtype)) != 0)
				w->wrong++;
		}
		for (uint64_t e = 0; e < n; e++) {
			float sum = 0;

			for (int k = 0; k < j->n_workers; k++)
				sum += pattern(k, e, r);
			if (w->opt.average)
				sum /= (float)j->n_workers;
			uint8_t want[4], got[4];

			elem_put(want, j->dtype, 0, sum);
			memcpy(got, w->buf + e * gr_dtype_size(j->dtype), gr_dtype_size(j->dtype));
			if (memcmp(want, got, gr_dtype_size(j->dtype)) != 0)
				w->wrong++;
		}
	}
	clock_gettime(CLOCK_MONOTONIC, &t1);
	w->ms = (double)(t1.tv_sec - t0.tv_sec) * 1e3 + (double)(t1.tv_nsec - t0.tv_nsec) / 1e6;
	gr_client_stats(w->c, &w->st);
	return NULL;
}

static struct gr_client *
client_for(const struct job *j, int k)
{
	char *json = table_json(j), err[GR_ERR_MAX];
	struct gr_config cfg;
	struct gr_client *c = NULL;

	if (CHECK(gr_config_from_table_string(&cfg, json, j->wid[k], err, sizeof(err)) == 0, "%s",
		  err))
		c = gr_client_create(&cfg, err, sizeof(err));
	CHECK(c != NULL, "%s", err);
	free(json);
	return c;
}

/* Run every worker of the job for `rounds` rounds with options o on tensors of n elements
 * (0: the job's); check exact results. */
static void
run_n(struct job *j, const struct gr_options *o, uint32_t rounds, uint64_t n, struct wrk *ws)
{
	pthread_t th[WORKERS_MAX];

	for (int k = 0; k < j->n_workers; k++) {
		ws[k] = (struct wrk){
			.j = j, .k = k, .n = n, .opt = *o, .round0 = 40, .rounds = rounds};
		ws[k].c = client_for(j, k);
		ws[k].buf = malloc(j->elements * gr_dtype_size(j->dtype));
		CU_ASSERT_FATAL(ws[k].c != NULL && ws[k].buf != NULL);
	}
	for (int k = 0; k < j->n_workers; k++)
		CU_ASSERT_FATAL(pthread_create(&th[k], NULL, wrk_main, &ws[k]) == 0);
	for (int k = 0; k < j->n_workers; k++)
		pthread_join(th[k], NULL);
	for (int k = 0; k < j->n_workers; k++) {
		CHECK(ws[k].rc == j->n_workers, "worker %d: %d (%s)", k, ws[k].rc,
		      gr_client_error(ws[k].c));
		CHECK(ws[k].wrong == 0, "worker %d: %d elements wrong", k, ws[k].wrong);
		gr_client_free(ws[k].c);
		free(ws[k].buf);
	}
}

static void
run(struct job *j, const struct gr_options *o, uint32_t rounds, struct wrk *ws)
{
	run_n(j, o, rounds, 0, ws);
}

/* Start a gateway with fo, run the job's workers through it, stop it (free it after). */
static struct fakegw *
gw_run(struct job *j, const struct fake_opts *fo, const struct gr_options *o, uint32_t rounds,
       struct wrk *ws)
{
	struct fakegw *g = gw_start(j, fo);

	run(j, o, rounds, ws);
	gw_stop(g);
	return g;
}

static uint64_t
sum_stat(const struct wrk *ws, int n, size_t off)
{
	uint64_t s = 0;

	for (int k = 0; k < n; k++)
		s += *(const uint64_t *)((const char *)&ws[k].st + off);
	return s;
}

#define SUM(ws, n, field) sum_stat(ws, n, offsetof(struct gr_stats, field))

/* ---- tests ------------------------------------------------------------------------------- */

/* ---- selective multicast ---------------------------------------------------------------- */

/* A fake gateway of one multicast stream: every MCAST from a worker goes to the other
 * workers (sender rewritten), except the chunks of `drop_origin` towards `drop_to` whose
 * bit is set in drop_chunks. With the first copy to the second worker it also sends a
 * duplicate, the same chunk of an earlier round and of another epoch, and garbage. With
 * `answer` it retains what it forwarded and answers NACK_MCASTs with it (RETX), to the
 * table's address of the requester, except the first answer of chunk `drop_repair` (-1:
 * none); without, it only counts them. */
struct mgw {
	int fd;
	uint16_t port, gw_id, wport[3], wid[3];
	uint16_t drop_origin, drop_to;
	uint32_t drop_chunks;
	uint16_t silent_origin, silent_to; /* every chunk of one origin to one worker lost */
	bool answer;
	int drop_repair;
	atomic_bool stop;
	pthread_t th;
	unsigned int forwarded, bad, nacks, repairs;
	unsigned int nacks_from[3];
	uint8_t kept[3][16][WIRE_HDR_LEN + 4 * 64];
	size_t kept_len[3][16];
};

/* A NACK_MCAST p to fake gateway g: each chunk of the range that g retains of its origin,
 * again with RETX, to the requester's port (never to where the request came from). */
static void
mgw_nack(struct mgw *g, const struct wire_pkt *p)
{
	int o = -1, r = -1;

	for (int k = 0; k < 3; k++) {
		o = g->wid[k] == p->origin ? k : o;
		r = g->wid[k] == p->sender ? k : r;
	}
	if (o < 0 || r < 0 || r == o || p->tree != 3 || p->round != 4 || p->chunk + p->count > 16) {
		g->bad++;
		return;
	}
	g->nacks++;
	g->nacks_from[r]++;
	for (uint32_t c = p->chunk; g->answer && c < p->chunk + p->count; c++) {
		struct sockaddr_in to = {.sin_family = AF_INET,
					 .sin_port = htons(g->wport[r]),
					 .sin_addr.s_addr = htonl(LOCALHOST)};
		uint8_t *q = g->kept[o][c];

		if (g->kept_len[o][c] == 0)
			continue;
		if ((int)c == g->drop_repair) {
			g->drop_repair = -1;
			continue;
		}
		q[4] = WIRE_F_RETX;
		raw_send(g->fd, q, g->kept_len[o][c], &to);
		g->repairs++;
	}
}

static void *
mgw_main(void *arg)
{
	struct mgw *g = arg;
	uint8_t pkt[WIRE_UDP_PAYLOAD_MAX + 1];
	bool injected = false;

	while (!atomic_load(&g->stop)) {
		struct pollfd pfd = {.fd = g->fd, .events = POLLIN};
		struct wire_pkt p;
		ssize_t len;

		if (poll(&pfd, 1, 20) <= 0)
			continue;
		len = recv(g->fd, pkt, sizeof(pkt), 0);
		if (len > 0 && wire_hdr_decode(pkt, (size_t)len, &p, NULL) == 0 &&
		    p.type == WIRE_TYPE_NACK_MCAST) {
			mgw_nack(g, &p);
			continue;
		}
		if (len <= 0 || wire_hdr_decode(pkt, (size_t)len, &p, NULL) != 0 ||
		    p.type != WIRE_TYPE_MCAST || p.sender != p.origin || p.chunk >= 16 ||
		    (size_t)len > sizeof(g->kept[0][0])) {
			g->bad++;
			continue;
		}
		pkt[18] = (uint8_t)(g->gw_id >> 8);
		pkt[19] = (uint8_t)g->gw_id;
		for (int k = 0; k < 3; k++) {
			if (g->wid[k] == p.origin) {
				memcpy(g->kept[k][p.chunk], pkt, (size_t)len);
				g->kept_len[k][p.chunk] = (size_t)len;
			}
		}
		for (int k = 0; k < 3; k++) {
			struct sockaddr_in to = {.sin_family = AF_INET,
						 .sin_port = htons(g->wport[k]),
						 .sin_addr.s_addr = htonl(LOCALHOST)};

			if (g->wid[k] == p.origin ||
			    (p.origin == g->drop_origin && g->wid[k] == g->drop_to &&
			     (g->drop_chunks >> p.chunk & 1)) ||
			    (p.origin == g->silent_origin && g->wid[k] == g->silent_to))
				continue;
			raw_send(g->fd, pkt, (size_t)len, &to);
			g->forwarded++;
			if (k == 1 && !injected) {
				injected = true;
				raw_send(g->fd, pkt, (size_t)len, &to); /* duplicate */
				pkt[27] ^= 4;                           /* round 0: late */
				raw_send(g->fd, pkt, (size_t)len, &to);
				pkt[27] ^= 4;
				pkt[15] ^= 1; /* another epoch */
				raw_send(g->fd, pkt, (size_t)len, &to);
				pkt[15] ^= 1;
				raw_send(g->fd, "garbage", 7, &to);
			}
		}
	}
	return NULL;
}

static uint16_t
ephemeral_port(int *fd_keep)
{
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(LOCALHOST)};
	socklen_t al = sizeof(a);
	int fd = socket(AF_INET, SOCK_DGRAM, 0);

	CU_ASSERT_FATAL(fd >= 0 && bind(fd, (struct sockaddr *)&a, sizeof(a)) == 0 &&
			getsockname(fd, (struct sockaddr *)&a, &al) == 0);
	if (fd_keep != NULL)
		*fd_keep = fd;
	else
		close(fd);
	return ntohs(a.sin_port);
}

struct mwrk {
	struct gr_client *c;
	int k;
	uint32_t timeout_ms;
	int sent, complete;
	unsigned int got, wrong;
	uint8_t done[2];
};

#define M_ELEMS 1000
#define M_CE 64

static void
mcast_cb(void *arg, uint16_t origin, uint32_t round, uint32_t chunk, const void *data,
	 uint32_t count)
{
	struct mwrk *w = arg;

	w->got++;
	w->wrong += round != 4 || count != wire_chunk_len(M_ELEMS, M_CE, chunk);
	for (uint32_t i = 0; i < count; i++) {
		float v;

		memcpy(&v, (const uint8_t *)data + 4 * i, 4);
		w->wrong += v != (float)((7u * origin + chunk * M_CE + i) % 61);
	}
}

static void *
mwrk_main(void *arg)
{
	struct mwrk *w = arg;
	float buf[M_ELEMS];
	const struct gr_config *cfg = gr_client_config(w->c);
	struct gr_mcast_opts mo = {.timeout_ms = w->timeout_ms, .complete = w->done};

	for (uint32_t e = 0; e < M_ELEMS; e++)
		buf[e] = (float)((7u * cfg->worker_id + e) % 61);
	w->sent = gr_mcast_send(w->c, buf, M_ELEMS, GR_DTYPE_FP32, 4, NULL);
	w->complete = gr_mcast_recv(w->c, 4, mcast_cb, w, &mo);
	return NULL;
}

/* A multicast-only table of job 5 at epoch: no trees, one stream (3) from the three workers
 * wid of gateway 1 (127.0.0.1, one port) to each other, of elements fp32 in chunks of M_CE. */
static void
mcast_table(char *json, size_t len, uint32_t epoch, uint16_t gw_port, const uint16_t wid[3],
	    const uint16_t wport[3], uint32_t elements)
{
	char deliver[512];
	size_t n = 0;

	for (int k = 0; k < 3; k++)
		n += (size_t)snprintf(deliver + n, sizeof(deliver) - n,
				      "%s{\"id\": %u, \"ipv4\": \"127.0.0.1\", \"port\": %u}",
				      k ? ", " : "", wid[k], wport[k]);
	snprintf(json, len,
		 "{\"format\": \"georeduce-table/1\", \"job\": 5, \"epoch\": %u,"
		 " \"gateway\": {\"id\": 1, \"ipv4\": \"127.0.0.1\", \"base_port\": %u, \"ports\": "
		 "1},"
		 " \"dtype\": \"fp32\", \"elements\": %u, \"chunk_elements\": %d,"
		 " \"limits\": {\"max_trees\": 4, \"max_children\": 4, \"max_workers\": 8,"
		 " \"max_slots\": 4096}, \"trees\": [], \"streams\": [{\"id\": 3, \"source\": 1,"
		 " \"from\": null, \"to\": [], \"deliver\": [%s], \"rate_gbps\": 3.0,"
		 " \"origins\": [%u, %u, %u]}]}",
		 epoch, gw_port, elements, M_CE, deliver, wid[0], wid[1], wid[2]);
}

/* Clients of the workers of fake gateway g for table json, worker 11 with timeout t0, the
 * others t. */
static void
mcast_clients(const struct mgw *g, struct mwrk ws[3], const char *json, uint32_t t0, uint32_t t)
{
	char err[GR_ERR_MAX];
	struct gr_config cfg;

	for (int k = 0; k < 3; k++) {
		CU_ASSERT_FATAL(
			gr_config_from_table_string(&cfg, json, g->wid[k], err, sizeof(err)) == 0);
		ws[k] = (struct mwrk){.k = k, .timeout_ms = k == 0 ? t0 : t};
		ws[k].c = gr_client_create(&cfg, err, sizeof(err));
		CU_ASSERT_FATAL(ws[k].c != NULL);
	}
}

/* Round 4 of the three workers through fake gateway g, to its end. */
static void
mcast_run(struct mgw *g, struct mwrk ws[3])
{
	pthread_t th[3];

	CU_ASSERT_FATAL(pthread_create(&g->th, NULL, mgw_main, g) == 0);
	for (int k = 0; k < 3; k++)
		CU_ASSERT_FATAL(pthread_create(&th[k], NULL, mwrk_main, &ws[k]) == 0);
	for (int k = 0; k < 3; k++)
		pthread_join(th[k], NULL);
	atomic_store(&g->stop, true);
	pthread_join(g->th, NULL);
}

static void
test_mcast(void)
{
	struct mgw g = {.gw_id = 1,
			.wid = {11, 12, 13},
			.drop_origin = 13,
			.drop_to = 11,
			.drop_chunks = 1u << 5,
			.drop_repair = -1};
	struct mwrk ws[3];
	char json[4096], err[GR_ERR_MAX];
	struct gr_config cfg;
	struct gr_stats st;

	g.port = ephemeral_port(&g.fd);
	for (int k = 0; k < 3; k++)
		g.wport[k] = ephemeral_port(NULL);
	mcast_table(json, sizeof(json), 2, g.port, g.wid, g.wport, M_ELEMS);
	CU_ASSERT_FATAL(gr_config_from_table_string(&cfg, json, 12, err, sizeof(err)) == 0);
	CHECK(cfg.n_trees == 0 && cfg.mcast_send && cfg.mcast_stream == 3 &&
		      cfg.mcast_rate_gbps == 1.0 && cfg.n_origins == 2 && cfg.origins[0] == 11 &&
		      cfg.origins[1] == 13 && cfg.origin_streams[1] == 3 &&
		      cfg.worker_port == g.wport[1],
	      "config: %u origins, stream %u", cfg.n_origins, cfg.mcast_stream);
	CHECK(gr_config_from_table_string(&cfg, json, 14, err, sizeof(err)) == -EINVAL &&
		      strstr(err, "not a local worker") != NULL,
	      "%s", err);
	mcast_clients(&g, ws, json, 1500, 10000);
	/* No trees: AllReduce is refused with a clear error. */
	{
		float b[M_ELEMS] = {0};

		CHECK(gr_allreduce(ws[0].c, b, M_ELEMS, GR_DTYPE_FP32, 1, NULL) == -EINVAL &&
			      strstr(gr_client_error(ws[0].c), "multicast-only") != NULL,
		      "%s", gr_client_error(ws[0].c));
		CHECK(gr_mcast_send(ws[0].c, b, 999, GR_DTYPE_FP32, 1, NULL) == -EINVAL, "size");
	}
	mcast_run(&g, ws);
	for (int k = 0; k < 3; k++) {
		CHECK(ws[k].sent == 16, "worker %d sent %d", k, ws[k].sent);
		CHECK(ws[k].wrong == 0, "worker %d: %u wrong", k, ws[k].wrong);
		gr_client_stats(ws[k].c, &st);
		CHECK(st.mcast_sent == 16, "worker %d: %llu sent", k,
		      (unsigned long long)st.mcast_sent);
		if (k == 0) {
			/* Chunk 5 of 13 never came, not even when asked for (this gateway
			 * does not answer): only 12's update complete. Asked for a few times,
			 * never more than 8. */
			CHECK(ws[k].complete == 1 && ws[k].got == 31 && ws[k].done[0] == 1 &&
				      ws[k].done[1] == 0 &&
				      strstr(gr_client_error(ws[k].c), "1 chunks "
								       "missing") != NULL,
			      "worker 11: %d complete, %u chunks: %s", ws[k].complete, ws[k].got,
			      gr_client_error(ws[k].c));
			CHECK(st.mcast_nacks_sent >= 1 && st.mcast_nacks_sent <= 8 &&
				      st.mcast_nacks_sent == g.nacks_from[0] &&
				      st.mcast_repaired == 0,
			      "worker 11: %llu NACK_MCAST sent, %u got",
			      (unsigned long long)st.mcast_nacks_sent, g.nacks_from[0]);
		} else {
			CHECK(ws[k].complete == 2 && ws[k].got == 32 && ws[k].done[0] &&
				      ws[k].done[1],
			      "worker %d: %d complete, %u chunks (%s)", k, ws[k].complete,
			      ws[k].got, gr_client_error(ws[k].c));
		}
		if (k == 1)
			CHECK(st.duplicates == 1 && st.stale == 1 && st.mcast_late == 1 &&
				      st.invalid == 1,
			      "worker 12: %llu duplicates, %llu stale, %llu late, "
			      "%llu invalid",
			      (unsigned long long)st.duplicates, (unsigned long long)st.stale,
			      (unsigned long long)st.mcast_late, (unsigned long long)st.invalid);
		gr_client_free(ws[k].c);
	}
	CHECK(g.bad == 0 && g.forwarded == 3 * 2 * 16 - 1, "gateway: %u forwarded, %u bad",
	      g.forwarded, g.bad);
	close(g.fd);
}

/* Multicast with chunks lost: the first, the last and a run of 13's to 11, the first
 * repair of one of them too, and every chunk of 12's to 13; every origin is still
 * complete at every worker, bit-exact, through NACK_MCAST and the gateway's retained
 * copies. */
static void
test_mcast_repair(void)
{
	struct mgw g = {.gw_id = 1,
			.wid = {11, 12, 13},
			.drop_origin = 13,
			.drop_to = 11,
			.drop_chunks = 1u << 0 | 1u << 5 | 1u << 6 | 1u << 7 | 1u << 15,
			.silent_origin = 12,
			.silent_to = 13,
			.answer = true,
			.drop_repair = 6};
	struct mwrk ws[3];
	char json[4096];
	struct gr_stats st;

	g.port = ephemeral_port(&g.fd);
	for (int k = 0; k < 3; k++)
		g.wport[k] = ephemeral_port(NULL);
	mcast_table(json, sizeof(json), 2, g.port, g.wid, g.wport, M_ELEMS);
	mcast_clients(&g, ws, json, 20000, 20000);
	mcast_run(&g, ws);
	for (int k = 0; k < 3; k++) {
		gr_client_stats(ws[k].c, &st);
		CHECK(ws[k].complete == 2 && ws[k].got == 32 && ws[k].done[0] && ws[k].done[1] &&
			      ws[k].wrong == 0,
		      "worker %d: %d complete, %u chunks, %u wrong (%s)", k, ws[k].complete,
		      ws[k].got, ws[k].wrong, gr_client_error(ws[k].c));
		CHECK(st.mcast_received == 32 && st.mcast_nacks_sent == g.nacks_from[k],
		      "worker %d: %llu received, %llu NACK_MCAST sent, %u got", k,
		      (unsigned long long)st.mcast_received,
		      (unsigned long long)st.mcast_nacks_sent, g.nacks_from[k]);
		if (k == 0)
			/* The five chunks lost came as repairs; chunk 6 asked for again. */
			CHECK(st.mcast_repaired >= 5 && st.mcast_nacks_sent >= 2,
			      "worker 11: %llu repaired, %llu NACK_MCAST sent",
			      (unsigned long long)st.mcast_repaired,
			      (unsigned long long)st.mcast_nacks_sent);
		if (k == 2)
			/* Nothing of 12 came: its first chunk asked for, then the rest. */
			CHECK(st.mcast_repaired >= 16, "worker 13: %llu repaired",
			      (unsigned long long)st.mcast_repaired);
		gr_client_free(ws[k].c);
	}
	CHECK(g.bad == 0 && g.forwarded == 3 * 2 * 16 - 5 - 16 && g.repairs >= 5 + 16,
	      "gateway: %u forwarded, %u bad, %u repairs", g.forwarded, g.bad, g.repairs);
	close(g.fd);
}

/* Element i of chunk `chunk` of origin's update of round, as mcast_send_round() sends it. */
static float
mcast_value(uint16_t origin, uint32_t round, uint32_t chunk, uint32_t i)
{
	return (float)((7u * origin + 3u * round + chunk * M_CE + i) % 61);
}

/* Send worker `to` chunk `chunk` of origin's update of round in stream 3 of job 5 at epoch
 * from the gateway's socket fd, as the gateway delivers it, with flags (WIRE_F_RETX: a
 * repair). */
static void
mcast_send_flags(int fd, uint16_t to, uint32_t epoch, uint32_t round, uint16_t origin,
		 uint32_t chunk, uint32_t elements, uint8_t flags)
{
	uint8_t pkt[WIRE_HDR_LEN + 4 * M_CE];
	uint32_t n = wire_chunk_len(elements, M_CE, chunk);
	struct wire_pkt p = {
		.type = WIRE_TYPE_MCAST,
		.flags = flags,
		.dtype = WIRE_DTYPE_FP32,
		.job = 5,
		.epoch = epoch,
		.tree = 3,
		.sender = 1,
		.origin = origin,
		.contrib = 1,
		.round = round,
		.chunk = chunk,
		.count = (uint16_t)n,
		.tsval = 1,
	};
	struct sockaddr_in a = {
		.sin_family = AF_INET, .sin_port = htons(to), .sin_addr.s_addr = htonl(LOCALHOST)};

	CU_ASSERT_FATAL(wire_hdr_encode(pkt, WIRE_HDR_LEN + 4 * n, &p, NULL) == 0);
	for (uint32_t i = 0; i < n; i++) {
		float v = mcast_value(origin, round, chunk, i);

		memcpy(pkt + WIRE_HDR_LEN + 4 * i, &v, 4);
	}
	raw_send(fd, pkt, WIRE_HDR_LEN + 4 * n, &a);
}

static void
mcast_send_round(int fd, uint16_t to, uint32_t epoch, uint32_t round, uint16_t origin,
		 uint32_t chunk, uint32_t elements)
{
	mcast_send_flags(fd, to, epoch, round, origin, chunk, elements, 0);
}

/* mcast_send_round() of round 4. */
static void
mcast_deliver(int fd, uint16_t to, uint32_t epoch, uint16_t origin, uint32_t chunk,
	      uint32_t elements)
{
	mcast_send_round(fd, to, epoch, 4, origin, chunk, elements);
}

static void
count_cb(void *arg, uint16_t origin, uint32_t round, uint32_t chunk, const void *data,
	 uint32_t count)
{
	(*(unsigned int *)arg)++;
	(void)origin;
	(void)round;
	(void)chunk;
	(void)data;
	(void)count;
}

/* What a gateway sends a receiver while the receiver paces its own update out. */
struct mflood {
	int fd;
	uint16_t to;
	uint32_t elements, chunks;
};

/* Origins 11 and 13's round 4, in bursts of 200 chunks 5 ms apart. */
static void *
mflood_main(void *arg)
{
	const struct mflood *f = arg;

	for (uint32_t c = 0; c < f->chunks; c++) {
		mcast_deliver(f->fd, f->to, 2, 11, c, f->elements);
		mcast_deliver(f->fd, f->to, 2, 13, c, f->elements);
		if (c % 100 == 99) {
			struct timespec ts = {0, 5000000};

			nanosleep(&ts, NULL);
		}
	}
	return NULL;
}

/*
 * A receiver that is an origin too takes in the others' chunks of the round while
 * gr_mcast_send() paces its own update (into the window ahead): 20,000 chunks (7 MB,
 * some 25 MB of socket buffer) come meanwhile, far more than its socket holds, and gr_mcast_recv() of the round then
 * has them without asking (the gateway here answers no NACK_MCAST). Left on the socket
 * until gr_mcast_recv(), most were lost. The bound leaves room for a receiver off the CPU
 * for a while on a busy machine.
 */
static void
test_mcast_send_drains(void)
{
	const uint16_t wid[3] = {11, 12, 13};
	const uint32_t chunks = 10000, elements = chunks * M_CE;
	uint16_t wport[3], gw_port;
	struct gr_mcast_opts mo = {.timeout_ms = 1000};
	struct gr_options so = {.rate_gbps = 0.05}; /* 10,000 x 352 bytes: 0.56 s */
	char json[4096], err[GR_ERR_MAX];
	struct gr_config cfg;
	struct gr_client *c;
	struct gr_stats st;
	unsigned int got = 0;
	pthread_t th;
	float *buf;
	int gw_fd, rc;

	gw_port = ephemeral_port(&gw_fd);
	for (int k = 0; k < 3; k++)
		wport[k] = ephemeral_port(NULL);
	mcast_table(json, sizeof(json), 2, gw_port, wid, wport, elements);
	CU_ASSERT_FATAL(gr_config_from_table_string(&cfg, json, 12, err, sizeof(err)) == 0);
	c = gr_client_create(&cfg, err, sizeof(err));
	buf = calloc(elements, sizeof(float));
	CU_ASSERT_FATAL(c != NULL && buf != NULL);
	struct mflood f = {.fd = gw_fd, .to = wport[1], .elements = elements, .chunks = chunks};

	CU_ASSERT_FATAL(pthread_create(&th, NULL, mflood_main, &f) == 0);
	rc = gr_mcast_send(c, buf, elements, GR_DTYPE_FP32, 4, &so);
	pthread_join(th, NULL);
	CHECK(rc == (int)chunks, "send: %d (%s)", rc, gr_client_error(c));
	rc = gr_mcast_recv(c, 4, count_cb, &got, &mo);
	gr_client_stats(c, &st);
	CHECK(got >= 2 * chunks * 3 / 4, "%u of %u chunks received (rc %d, %llu NACK_MCAST)", got,
	      2 * chunks, rc, (unsigned long long)st.mcast_nacks_sent);
	gr_client_free(c);
	free(buf);
	close(gw_fd);
}

/* Worker 12 of mcast_table() at epoch 2 (workers 11, 12, 13) behind a fake gateway: its
 * socket *gw_fd on *gw_port, the workers' ports, the table in json, 12's configuration. */
static void
mcast_worker12(int *gw_fd, uint16_t *gw_port, uint16_t wport[3], char *json, size_t len,
	       struct gr_config *cfg)
{
	static const uint16_t wid[3] = {11, 12, 13};
	char err[GR_ERR_MAX];

	*gw_port = ephemeral_port(gw_fd);
	for (int k = 0; k < 3; k++)
		wport[k] = ephemeral_port(NULL);
	mcast_table(json, len, 2, *gw_port, wid, wport, M_ELEMS);
	CU_ASSERT_FATAL(gr_config_from_table_string(cfg, json, 12, err, sizeof(err)) == 0);
}

/* The receive state of gr_mcast_recv() comes with the configuration: a client without
 * origins is refused, one with origins receives from its first call, and a reconfiguration
 * to a longer tensor, to no origins and back replaces it. */
static void
test_mcast_recv_state(void)
{
	const uint16_t wid[3] = {11, 12, 13};
	uint16_t wport[3], gw_port;
	struct gr_mcast_opts mo = {.timeout_ms = 50};
	char json[4096], err[GR_ERR_MAX];
	struct gr_config cfg;
	struct gr_client *c;
	struct gr_stats st;
	unsigned int got = 0;
	uint8_t done[2];
	int gw_fd, rc;
	struct job j;

	/* A job of trees only: no origin, nothing to receive. */
	job_init(&j, 1, 1, 1, GR_DTYPE_FP32, 100, 10);
	j.base = 30000;
	j.wport[0] = ephemeral_port(NULL);
	c = client_for(&j, 0);
	CU_ASSERT_FATAL(c != NULL);
	CHECK(gr_mcast_recv(c, 1, count_cb, &got, &mo) == -EINVAL &&
		      strstr(gr_client_error(c), "receives no multicast stream") != NULL,
	      "%s", gr_client_error(c));
	gr_client_free(c);

	mcast_worker12(&gw_fd, &gw_port, wport, json, sizeof(json), &cfg);
	c = gr_client_create(&cfg, err, sizeof(err));
	CU_ASSERT_FATAL(c != NULL);
	CHECK(gr_mcast_recv(c, 4, NULL, NULL, &mo) == -EINVAL, "no callback");
	/* The first call receives: every chunk of origin 13, half of 11's. */
	for (uint32_t ch = 0; ch < 16; ch++) {
		mcast_deliver(gw_fd, wport[1], 2, 13, ch, M_ELEMS);
		if (ch % 2 == 0)
			mcast_deliver(gw_fd, wport[1], 2, 11, ch, M_ELEMS);
	}
	mo.complete = done;
	rc = gr_mcast_recv(c, 4, count_cb, &got, &mo);
	CHECK(rc == 1 && got == 24 && done[0] == 0 && done[1] == 1 &&
		      strstr(gr_client_error(c), "8 chunks missing") != NULL,
	      "rc %d, %u chunks: %s", rc, got, gr_client_error(c));
	/* A tensor three times as long: its bitmaps came with the new configuration. */
	mcast_table(json, sizeof(json), 3, gw_port, wid, wport, 3 * M_ELEMS);
	CU_ASSERT_FATAL(gr_config_from_table_string(&cfg, json, 12, err, sizeof(err)) == 0);
	CHECK(gr_client_reconfigure(c, &cfg, err, sizeof(err)) == 0, "%s", err);
	got = 0;
	for (uint32_t ch = 0; ch < 47; ch++)
		for (int o = 0; o < 3; o += 2)
			mcast_deliver(gw_fd, wport[1], 3, wid[o], ch, 3 * M_ELEMS);
	rc = gr_mcast_recv(c, 4, count_cb, &got, &mo);
	CHECK(rc == 2 && got == 94 && done[0] == 1 && done[1] == 1, "rc %d, %u chunks: %s", rc, got,
	      gr_client_error(c));
	/* No origins any more (the worker still sends), then origins again. */
	cfg.epoch = 4;
	cfg.n_origins = 0;
	CHECK(gr_client_reconfigure(c, &cfg, err, sizeof(err)) == 0, "%s", err);
	CU_ASSERT(gr_mcast_recv(c, 4, count_cb, &got, &mo) == -EINVAL);
	mcast_table(json, sizeof(json), 5, gw_port, wid, wport, M_ELEMS);
	CU_ASSERT_FATAL(gr_config_from_table_string(&cfg, json, 12, err, sizeof(err)) == 0);
	CHECK(gr_client_reconfigure(c, &cfg, err, sizeof(err)) == 0, "%s", err);
	got = 0;
	for (uint32_t ch = 0; ch < 16; ch++)
		mcast_deliver(gw_fd, wport[1], 5, 11, ch, M_ELEMS);
	rc = gr_mcast_recv(c, 4, count_cb, &got, &mo);
	CHECK(rc == 1 && got == 16 && done[0] == 1 && done[1] == 0, "rc %d, %u chunks: %s", rc, got,
	      gr_client_error(c));
	gr_client_stats(c, &st);
	CHECK(st.mcast_received == 24 + 94 + 16 && st.invalid == 0 && st.duplicates == 0,
	      "%llu received, %llu invalid, %llu duplicates", (unsigned long long)st.mcast_received,
	      (unsigned long long)st.invalid, (unsigned long long)st.duplicates);
	gr_client_free(c);
	close(gw_fd);
}

/* What one gr_mcast_recv() call of the window test delivered. */
struct wcall {
	uint32_t round;                /* the round asked for */
	unsigned int got, wrong;       /* chunks; of another round, count or content */
	unsigned int disorder;         /* chunks after one of a later (origin, chunk) */
	int64_t last;                  /* origin index x 2^32 + chunk of the previous one */
	void (*first)(struct wcall *); /* run at the first chunk (packets during the call) */
	int fd;
	uint16_t to;
};

static void
wcall_cb(void *arg, uint16_t origin, uint32_t round, uint32_t chunk, const void *data,
	 uint32_t count)
{
	struct wcall *w = arg;
	int64_t at = (int64_t)(origin == 13) << 32 | chunk;

	if (w->got++ == 0 && w->first != NULL)
		w->first(w);
	w->disorder += at < w->last;
	w->last = at;
	w->wrong += round != w->round || count != wire_chunk_len(M_ELEMS, M_CE, chunk);
	for (uint32_t i = 0; i < count && round == w->round; i++) {
		float v;

		memcpy(&v, (const uint8_t *)data + 4 * i, 4);
		w->wrong += v != mcast_value(origin, round, chunk, i);
	}
}

/* During the call of round 4: the rest of origin 13's round 5, last chunk first, then the
 * chunk of round 4 that completes it. */
static void
wcall_during4(struct wcall *w)
{
	for (uint32_t ch = 15; ch >= 8; ch--)
		mcast_send_round(w->fd, w->to, 2, 5, 13, ch, M_ELEMS);
	mcast_send_round(w->fd, w->to, 2, 4, 13, 15, M_ELEMS);
}

/* One gr_mcast_recv() of round into w; its return value, *ms its duration. */
static int
wcall_run(struct gr_client *c, struct wcall *w, uint32_t round, uint32_t timeout_ms, double *ms)
{
	struct gr_mcast_opts mo = {.timeout_ms = timeout_ms};
	struct timespec t0, t1;
	int rc;

	w->round = round;
	w->got = w->wrong = w->disorder = 0;
	w->last = -1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	rc = gr_mcast_recv(c, round, wcall_cb, w, &mo);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	*ms = (double)(t1.tv_sec - t0.tv_sec) * 1e3 + (double)(t1.tv_nsec - t0.tv_nsec) / 1e6;
	w->first = NULL;
	return rc;
}

/* Every chunk of round of origins 11 and 13 to worker 12, except chunk `but` of 13 (-1:
 * none). */
static void
wsend_all(int fd, uint16_t to, uint32_t epoch, uint32_t round, int but)
{
	for (uint32_t ch = 0; ch < 16; ch++) {
		mcast_send_round(fd, to, epoch, round, 11, ch, M_ELEMS);
		if ((int)ch != but)
			mcast_send_round(fd, to, epoch, round, 13, ch, M_ELEMS);
	}
}

/* gr_mcast_recv()'s window of rounds: chunks of the next round that come before or during
 * the call of a round are delivered whole by the next call without waiting, first (by
 * origin, then chunk); a round beyond the window and a late one are dropped and counted;
 * what was kept for a round the caller skips, or across a reconfiguration, is discarded and
 * counted; two rounds ahead when so configured. The callback sees the asked round only. */
static void
test_mcast_window(void)
{
	uint16_t wport[3], gw_port;
	char json[4096], err[GR_ERR_MAX];
	struct gr_config cfg;
	struct gr_client *c;
	struct gr_stats st;
	struct wcall w = {0};
	double ms;
	int gw_fd, rc;

	mcast_worker12(&gw_fd, &gw_port, wport, json, sizeof(json), &cfg);
	CHECK(cfg.mcast_rounds_ahead == 0, "from a table: %u", cfg.mcast_rounds_ahead);
	cfg.mcast_rounds_ahead = GR_MCAST_AHEAD_MAX + 1;
	CHECK(gr_config_check(&cfg, err, sizeof(err)) == -EINVAL &&
		      strstr(err, "mcast_rounds_ahead") != NULL,
	      "%s", err);
	CU_ASSERT(gr_client_create(&cfg, err, sizeof(err)) == NULL && errno == EINVAL);
	cfg.mcast_rounds_ahead = GR_MCAST_AHEAD_MAX;
	CHECK(gr_config_check(&cfg, err, sizeof(err)) == 0, "%s", err);
	cfg.mcast_rounds_ahead = 0;
	c = gr_client_create(&cfg, err, sizeof(err));
	CU_ASSERT_FATAL(c != NULL);
	w.fd = gw_fd;
	w.to = wport[1];

	/* Before the call of round 4: all of 11's round 5 (chunk 3 twice), half of 13's, and
	 * round 4 but its last chunk of 13; the rest of round 5 comes during the call. */
	for (uint32_t ch = 0; ch < 16; ch++)
		mcast_send_round(gw_fd, wport[1], 2, 5, 11, ch, M_ELEMS);
	mcast_send_round(gw_fd, wport[1], 2, 5, 11, 3, M_ELEMS);
	for (uint32_t ch = 0; ch < 8; ch++)
		mcast_send_round(gw_fd, wport[1], 2, 5, 13, ch, M_ELEMS);
	wsend_all(gw_fd, wport[1], 2, 4, 15);
	w.first = wcall_during4;
	rc = wcall_run(c, &w, 4, 30000, &ms);
	CHECK(rc == 2 && w.got == 32 && w.wrong == 0, "round 4: rc %d, %u chunks, %u wrong: %s", rc,
	      w.got, w.wrong, gr_client_error(c));
	/* Round 5 came whole meanwhile: delivered at once, origin by origin, chunk by chunk. */
	rc = wcall_run(c, &w, 5, 30000, &ms);
	CHECK(rc == 2 && w.got == 32 && w.wrong == 0 && w.disorder == 0 && ms < 10000,
	      "round 5: rc %d, %u chunks, %u wrong, %u out of order, %.0f ms: %s", rc, w.got,
	      w.wrong, w.disorder, ms, gr_client_error(c));
	gr_client_stats(c, &st);
	CHECK(st.mcast_received == 64 && st.duplicates == 1 && st.stale == 0 &&
		      st.mcast_late == 0 && st.mcast_too_far == 0 && st.mcast_skipped == 0 &&
		      st.invalid == 0,
	      "%llu received, %llu duplicates, %llu stale, %llu late",
	      (unsigned long long)st.mcast_received, (unsigned long long)st.duplicates,
	      (unsigned long long)st.stale, (unsigned long long)st.mcast_late);

	/* During round 6: round 8 is beyond the window, round 5 late, epoch 3 stale; five
	 * chunks of round 7 are kept, and a copy of one of them is a duplicate. */
	for (uint32_t ch = 0; ch < 16; ch++)
		mcast_send_round(gw_fd, wport[1], 2, 8, 11, ch, M_ELEMS);
	mcast_send_round(gw_fd, wport[1], 2, 5, 11, 0, M_ELEMS);
	mcast_send_round(gw_fd, wport[1], 3, 6, 11, 0, M_ELEMS);
	for (uint32_t ch = 0; ch < 5; ch++)
		mcast_send_round(gw_fd, wport[1], 2, 7, 13, ch, M_ELEMS);
	mcast_send_round(gw_fd, wport[1], 2, 7, 13, 2, M_ELEMS);
	wsend_all(gw_fd, wport[1], 2, 6, -1);
	rc = wcall_run(c, &w, 6, 30000, &ms);
	CHECK(rc == 2 && w.got == 32 && w.wrong == 0, "round 6: rc %d, %u chunks: %s", rc, w.got,
	      gr_client_error(c));
	gr_client_stats(c, &st);
	CHECK(st.mcast_too_far == 16 && st.mcast_late == 1 && st.stale == 1 && st.duplicates == 2 &&
		      st.mcast_skipped == 0,
	      "%llu too far, %llu late, %llu stale, "
	      "%llu duplicates",
	      (unsigned long long)st.mcast_too_far, (unsigned long long)st.mcast_late,
	      (unsigned long long)st.stale, (unsigned long long)st.duplicates);
	/* Round 7 skipped: its five chunks are discarded; round 8's were dropped. */
	rc = wcall_run(c, &w, 8, 50, &ms);
	gr_client_stats(c, &st);
	CHECK(rc == 0 && w.got == 0 && st.mcast_skipped == 5 &&
		      strstr(gr_client_error(c), "32 chunks missing") != NULL,
	      "round 8: rc %d, %u chunks, %llu skipped: %s", rc, w.got,
	      (unsigned long long)st.mcast_skipped, gr_client_error(c));

	/* A reconfiguration resets the window: six chunks kept of round 10 are discarded. */
	for (uint32_t ch = 0; ch < 6; ch++)
		mcast_send_round(gw_fd, wport[1], 2, 10, 11, ch, M_ELEMS);
	wsend_all(gw_fd, wport[1], 2, 9, -1);
	rc = wcall_run(c, &w, 9, 30000, &ms);
	CHECK(rc == 2 && w.got == 32, "round 9: rc %d, %u chunks: %s", rc, w.got,
	      gr_client_error(c));
	cfg.epoch = 3;
	cfg.mcast_rounds_ahead = 2;
	CHECK(gr_client_reconfigure(c, &cfg, err, sizeof(err)) == 0, "%s", err);
	rc = wcall_run(c, &w, 10, 50, &ms);
	gr_client_stats(c, &st);
	CHECK(rc == 0 && w.got == 0 && st.mcast_skipped == 5 + 6,
	      "round 10: rc %d, %u chunks, "
	      "%llu skipped",
	      rc, w.got, (unsigned long long)st.mcast_skipped);

	/* Two rounds ahead: during round 11, rounds 12 and 13 are kept, 14 is too far. A call
	 * of round 13 discards round 12 and delivers 13 at once. */
	wsend_all(gw_fd, wport[1], 3, 12, -1);
	wsend_all(gw_fd, wport[1], 3, 13, -1);
	for (uint32_t ch = 0; ch < 3; ch++)
		mcast_send_round(gw_fd, wport[1], 3, 14, 13, ch, M_ELEMS);
	wsend_all(gw_fd, wport[1], 3, 11, -1);
	rc = wcall_run(c, &w, 11, 30000, &ms);
	CHECK(rc == 2 && w.got == 32 && w.wrong == 0, "round 11: rc %d, %u chunks: %s", rc, w.got,
	      gr_client_error(c));
	rc = wcall_run(c, &w, 13, 30000, &ms);
	gr_client_stats(c, &st);
	CHECK(rc == 2 && w.got == 32 && w.wrong == 0 && w.disorder == 0 && ms < 10000 &&
		      st.mcast_skipped == 11 + 32 && st.mcast_too_far == 16 + 3,
	      "round 13: rc %d, %u chunks, %.0f ms, %llu skipped, %llu too far: %s", rc, w.got, ms,
	      (unsigned long long)st.mcast_skipped, (unsigned long long)st.mcast_too_far,
	      gr_client_error(c));
	/* Rounds 4, 5, 6, 9, 11 and 13 delivered. */
	CHECK(st.mcast_received == 32 * 6 && st.invalid == 0, "%llu received, %llu invalid",
	      (unsigned long long)st.mcast_received, (unsigned long long)st.invalid);
	gr_client_free(c);
	close(gw_fd);
}

/* A gateway whose origins pause: chunks 0-4 of 11 and 13 of round 4, nothing for 150 ms
 * (the NACK_MCASTs meanwhile counted by the chunks they ask for), then the rest but 11's
 * chunk 5, which it sends again when asked for. */
struct mpause {
	int fd;
	uint16_t to;
	unsigned int paused_asks, asked5;
};

static void *
mpause_main(void *arg)
{
	struct mpause *g = arg;
	uint8_t pkt[WIRE_UDP_PAYLOAD_MAX];
	struct timespec t0, t;

	for (uint32_t ch = 0; ch < 5; ch++) {
		mcast_send_round(g->fd, g->to, 2, 4, 11, ch, M_ELEMS);
		mcast_send_round(g->fd, g->to, 2, 4, 13, ch, M_ELEMS);
	}
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (bool resumed = false;;) {
		struct pollfd pfd = {.fd = g->fd, .events = POLLIN};
		struct wire_pkt p;
		double ms;

		clock_gettime(CLOCK_MONOTONIC, &t);
		ms = (double)(t.tv_sec - t0.tv_sec) * 1e3 + (double)(t.tv_nsec - t0.tv_nsec) / 1e6;
		if (!resumed && ms >= 150) {
			resumed = true;
			for (uint32_t ch = 5; ch < 16; ch++) {
				if (ch != 5)
					mcast_send_round(g->fd, g->to, 2, 4, 11, ch, M_ELEMS);
				mcast_send_round(g->fd, g->to, 2, 4, 13, ch, M_ELEMS);
			}
		}
		if (ms > 10000 || poll(&pfd, 1, 5) <= 0)
			continue;
		ssize_t len = recv(g->fd, pkt, sizeof(pkt), 0);

		if (len <= 0 || wire_hdr_decode(pkt, (size_t)len, &p, NULL) != 0 ||
		    p.type != WIRE_TYPE_NACK_MCAST)
			continue;
		if (!resumed) {
			g->paused_asks += p.count;
			continue;
		}
		if (p.origin == 11 && p.chunk <= 5 && p.chunk + p.count > 5) {
			mcast_send_flags(g->fd, g->to, 2, 4, 11, 5, M_ELEMS, WIRE_F_RETX);
			if (++g->asked5 == 1)
				break;
		}
	}
	return NULL;
}

/* An origin that pauses mid-round is probed for its next chunk, not asked for the rest of
 * its round (chunks it has not sent), and while nothing comes only the probe is asked
 * again; once it resumes, a chunk lost then is asked for and repaired. */
static void
test_mcast_pause(void)
{
	uint16_t wport[3];
	char json[4096], err[GR_ERR_MAX];
	struct gr_config cfg;
	struct gr_client *c;
	struct gr_stats st;
	struct wcall w = {0};
	struct mpause g = {0};
	pthread_t th;
	double ms;
	int rc;

	uint16_t gw_port;

	mcast_worker12(&g.fd, &gw_port, wport, json, sizeof(json), &cfg);
	c = gr_client_create(&cfg, err, sizeof(err));
	CU_ASSERT_FATAL(c != NULL);
	g.to = wport[1];
	CU_ASSERT_FATAL(pthread_create(&th, NULL, mpause_main, &g) == 0);
	rc = wcall_run(c, &w, 4, 30000, &ms);
	pthread_join(th, NULL);
	gr_client_stats(c, &st);
	CHECK(rc == 2 && w.got == 32 && w.wrong == 0 && st.mcast_repaired == 1,
	      "rc %d, %u chunks, %u wrong, %llu repaired: %s", rc, w.got, w.wrong,
	      (unsigned long long)st.mcast_repaired, gr_client_error(c));
	/* Each origin's probe, at most its 8 tries: asking for the rest is 22 at once. */
	CHECK(g.paused_asks <= 2 * 8, "%u chunks asked for while the origins paused",
	      g.paused_asks);
	gr_client_free(c);
	close(g.fd);
}

static void
test_config_table(void)
{
	struct job j;
	struct gr_config cfg;
	char err[GR_ERR_MAX], *json;

	job_init(&j, 3, 2, 4, GR_DTYPE_FP16, 10007, 100);
	j.base = 30000;
	for (int k = 0; k < 3; k++)
		j.wport[k] = (uint16_t)(31000 + k);
	json = table_json(&j);
	CU_ASSERT_FATAL(gr_config_from_table_string(&cfg, json, 103, err, sizeof(err)) == 0);
	CU_ASSERT_EQUAL(cfg.job, 7);
	CU_ASSERT_EQUAL(cfg.epoch, 3);
	CU_ASSERT_EQUAL(cfg.dtype, GR_DTYPE_FP16);
	CU_ASSERT_EQUAL(cfg.elements, 10007);
	CU_ASSERT_EQUAL(cfg.chunk_elements, 100);
	CU_ASSERT_EQUAL(cfg.worker_id, 103);
	CU_ASSERT_EQUAL(cfg.worker_port, 31001);
	CU_ASSERT_EQUAL(cfg.worker_ipv4, LOCALHOST);
	CU_ASSERT_EQUAL(cfg.gateway_ipv4, LOCALHOST);
	CU_ASSERT_EQUAL(cfg.gateway_base_port, 30000);
	CU_ASSERT_EQUAL(cfg.gateway_ports, 4);
	CU_ASSERT_EQUAL(cfg.n_trees, 2);
	CU_ASSERT(cfg.trees[0].id == 2 && cfg.trees[0].chunk_first == 0 &&
		  cfg.trees[0].chunk_count == 50 && cfg.trees[0].slots == 4096);
	CU_ASSERT(cfg.trees[1].id == 12 && cfg.trees[1].chunk_first == 50 &&
		  cfg.trees[1].chunk_count == 51);
	CU_ASSERT(gr_config_check(&cfg, err, sizeof(err)) == 0);

	/* A worker the table does not list. */
	CU_ASSERT(gr_config_from_table_string(&cfg, json, 104, err, sizeof(err)) == -EINVAL);
	CHECK(strstr(err, "worker 104") != NULL && strchr(err, '\n') == NULL, "%s", err);
	/* A broken table names the field. */
	json[strlen(json) - 3] = '\0';
	CU_ASSERT(gr_config_from_table_string(&cfg, json, 103, err, sizeof(err)) == -EINVAL);
	CHECK(strstr(err, "<string>") != NULL, "%s", err);
	free(json);
	CU_ASSERT(gr_config_from_table(&cfg, "/nonexistent/t.json", 1, err, sizeof(err)) < 0);
	CHECK(strstr(err, "/nonexistent/t.json") != NULL, "%s", err);
	/* A gateway that carries no tree. */
	json = strdup("{\"format\": \"georeduce-table/1\", \"job\": 1, \"epoch\": 1, \"gateway\": "
		      "{\"id\": 1, \"ipv4\": \"10.0.0.1\", \"base_port\": 17400, \"ports\": 1}, "
		      "\"dtype\": \"fp32\", \"elements\": 10, \"chunk_elements\": 4, \"limits\": "
		      "{\"max_trees\": 1, \"max_children\": 1, \"max_workers\": 1, "
		      "\"max_slots\": 16}, \"trees\": []}");
	CU_ASSERT(gr_config_from_table_string(&cfg, json, 1, err, sizeof(err)) == -EINVAL);
	CHECK(strstr(err, "carries no tree") != NULL, "%s", err);
	free(json);
}

static void
test_config_check(void)
{
	struct job j;
	struct gr_config good, cfg;
	char err[GR_ERR_MAX], *json;

	job_init(&j, 2, 3, 2, GR_DTYPE_FP32, 1000, 64);
	j.base = 30000;
	j.wport[0] = 31000;
	j.wport[1] = 31001;
	json = table_json(&j);
	CU_ASSERT_FATAL(gr_config_from_table_string(&good, json, 100, err, sizeof(err)) == 0);
	free(json);

	/* Each change alone must be refused, naming what is wrong. */
	cfg = good;
	cfg.dtype = 0;
	CHECK(gr_config_check(&cfg, err, sizeof(err)) == -EINVAL && strstr(err, "dtype"), "%s",
	      err);
	cfg = good;
	cfg.elements = 0;
	CHECK(gr_config_check(&cfg, err, sizeof(err)) == -EINVAL && strstr(err, "elements"), "%s",
	      err);
	cfg = good;
	cfg.chunk_elements = 2230; /* 8920 bytes: past a 9000-byte IP packet's 8918 */
	CHECK(gr_config_check(&cfg, err, sizeof(err)) == -EINVAL && strstr(err, "chunk_elements"),
	      "%s", err);
	cfg = good;
	cfg.chunk_elements = 2222; /* 8888 bytes and a 32-byte contributor set */
	cfg.cset_blocks = 1;
	CHECK(gr_config_check(&cfg, err, sizeof(err)) == -EINVAL && strstr(err, "chunk_elements") &&
		      strstr(err, "8920 bytes"),
	      "%s", err);
	cfg = good;
	cfg.worker_id = cfg.gateway_id;
	CHECK(gr_config_check(&cfg, err, sizeof(err)) == -EINVAL && strstr(err, "worker_id"), "%s",
	      err);
	/* MX: fp32 in the caller's buffer; chunks and the tensor are whole blocks of 32. */
	CU_ASSERT(gr_dtype_size(GR_DTYPE_MXFP4) == 4 && gr_dtype_size(GR_DTYPE_MXINT8) == 4);
	CU_ASSERT_STRING_EQUAL(gr_dtype_name(GR_DTYPE_MXFP8), "mxfp8");
	cfg = good;
	cfg.dtype = GR_DTYPE_MXINT8;
	cfg.elements = 992;
	CHECK(gr_config_check(&cfg, err, sizeof(err)) == 0, "%s", err);
	cfg = good;
	cfg.dtype = GR_DTYPE_MXFP4;
	CHECK(gr_config_check(&cfg, err, sizeof(err)) == -EINVAL && strstr(err, "whole blocks"),
	      "%s", err);
	cfg = good;
	cfg.dtype = GR_DTYPE_MXFP8;
	cfg.elements = 992;
	cfg.chunk_elements = 48;
	CHECK(gr_config_check(&cfg, err, sizeof(err)) == -EINVAL && strstr(err, "whole blocks"),
	      "%s", err);
	cfg = good;
	cfg.dtype = (enum gr_dtype)7;
	CHECK(gr_config_check(&cfg, err, sizeof(err)) == -EINVAL && strstr(err, "dtype"), "%s",
	      err);
	cfg = good;
	cfg.worker_id = 0xffff;
	CU_ASSERT(gr_config_check(&cfg, err, sizeof(err)) == -EINVAL);
	cfg = good;
	cfg.gateway_ipv4 = 0xe0000001;
	CHECK(gr_config_check(&cfg, err, sizeof(err)) == -EINVAL && strstr(err, "gateway_ipv4"),
	      "%s", err);
	cfg = good;
	cfg.gateway_base_port = 65535;
	cfg.gateway_ports = 2;
	CHECK(gr_config_check(&cfg, err, sizeof(err)) == -EINVAL && strstr(err, "ports"), "%s",
	      err);
	cfg = good;
	cfg.worker_port = 0;
	CU_ASSERT(gr_config_check(&cfg, err, sizeof(err)) == -EINVAL);
	cfg = good;
	cfg.n_trees = 0;
	CU_ASSERT(gr_config_check(&cfg, err, sizeof(err)) == -EINVAL);
	cfg = good;
	cfg.trees[2].id = cfg.trees[0].id;
	CHECK(gr_config_check(&cfg, err, sizeof(err)) == -EINVAL && strstr(err, "also in"), "%s",
	      err);
	cfg = good;
	cfg.trees[1].window = cfg.trees[1].slots + 1;
	CHECK(gr_config_check(&cfg, err, sizeof(err)) == -EINVAL && strstr(err, "window"), "%s",
	      err);
	cfg = good;
	cfg.trees[1].window = cfg.trees[1].slots; /* at most: ok */
	CHECK(gr_config_check(&cfg, err, sizeof(err)) == 0, "%s", err);
	cfg = good;
	cfg.trees[1].chunk_first++;
	cfg.trees[1].chunk_count--; /* a gap */
	CHECK(gr_config_check(&cfg, err, sizeof(err)) == -EINVAL && strstr(err, "partition"), "%s",
	      err);
	cfg = good;
	cfg.trees[1].chunk_first--; /* an overlap */
	CU_ASSERT(gr_config_check(&cfg, err, sizeof(err)) == -EINVAL);
	cfg = good;
	cfg.trees[2].chunk_count++; /* too long */
	CHECK(gr_config_check(&cfg, err, sizeof(err)) == -EINVAL && strstr(err, "cover"), "%s",
	      err);
	cfg = good;
	cfg.elements = 2000; /* mismatch */
	CU_ASSERT(gr_config_check(&cfg, err, sizeof(err)) == -EINVAL);
	/* Trees may come in any order. */
	cfg = good;
	cfg.trees[0] = good.trees[2];
	cfg.trees[2] = good.trees[0];
	CU_ASSERT(gr_config_check(&cfg, err, sizeof(err)) == 0);
	/* A bad configuration creates no client. */
	cfg = good;
	cfg.elements = 0;
	errno = 0;
	CU_ASSERT(gr_client_create(&cfg, err, sizeof(err)) == NULL && errno == EINVAL);
}

static void
test_call_args(void)
{
	struct job j;
	struct gr_client *c;
	float buf[100];
	struct gr_options o = {.rto_min_ms = 50, .rto_max_ms = 10};

	struct fake_opts fo = {0};
	struct fakegw *g;

	job_init(&j, 1, 1, 1, GR_DTYPE_FP32, 100, 10);
	g = gw_start(&j, &fo);

	c = client_for(&j, 0);
	CU_ASSERT_FATAL(c != NULL);
	CU_ASSERT(gr_allreduce(c, buf, 101, GR_DTYPE_FP32, 0, NULL) == -EINVAL);
	CHECK(strstr(gr_client_error(c), "101 elements: the job's tensor has 100, a tensor may "
					 "have no more") != NULL,
	      "%s", gr_client_error(c));
	CU_ASSERT(gr_allreduce(c, buf, 0, GR_DTYPE_FP32, 0, NULL) == -EINVAL);
	CHECK(strstr(gr_client_error(c), "0 elements") != NULL, "%s", gr_client_error(c));
	CU_ASSERT(gr_allreduce(c, buf, 100, GR_DTYPE_BF16, 0, NULL) == -EINVAL);
	CHECK(strstr(gr_client_error(c), "bf16") != NULL, "%s", gr_client_error(c));
	CU_ASSERT(gr_allreduce(c, NULL, 100, GR_DTYPE_FP32, 0, NULL) == -EINVAL);
	CU_ASSERT(gr_allreduce(c, buf, 100, GR_DTYPE_FP32, 0, &o) == -EINVAL);
	CHECK(strstr(gr_client_error(c), "rto_min_ms") != NULL, "%s", gr_client_error(c));
	/* A second client on the same address and port cannot bind. */
	char *json = table_json(&j), err[GR_ERR_MAX];
	struct gr_config cfg;

	CU_ASSERT(gr_config_from_table_string(&cfg, json, j.wid[0], err, sizeof(err)) == 0);
	errno = 0;
	CU_ASSERT(gr_client_create(&cfg, err, sizeof(err)) == NULL && errno == EADDRINUSE);
	CHECK(strstr(err, "bind 127.0.0.1") != NULL, "%s", err);
	free(json);
	gr_client_free(c);
	gr_client_free(NULL);
	gw_stop(g);
	gw_free(g);
}

/* Clean network: every packet valid and steered, exact sums, no retransmission. */
static void
clean_run(enum gr_dtype dt, uint64_t elements, uint32_t ce, int workers, int trees, int ports,
	  bool average)
{
	struct job j;
	struct fake_opts fo = {.retx = RETX_SPEC};
	struct gr_options o = {.average = average};
	struct wrk ws[WORKERS_MAX];
	struct fakegw *g;
	uint32_t rounds = quick ? 2 : 4;
	uint64_t n_chunks = (elements + ce - 1) / ce;

	job_init(&j, workers, trees, ports, dt, elements, ce);
	g = gw_run(&j, &fo, &o, rounds, ws);
	CHECK(g->bad == 0, "%u packets broke a rule", g->bad);
	CHECK(SUM(ws, workers, contribs_sent) == workers * rounds * n_chunks, "%llu sent",
	      (unsigned long long)SUM(ws, workers, contribs_sent));
	CHECK(SUM(ws, workers, results) == workers * rounds * n_chunks, "%llu results",
	      (unsigned long long)SUM(ws, workers, results));
	CU_ASSERT(SUM(ws, workers, invalid) == 0);
	CU_ASSERT(SUM(ws, workers, calls_ok) == workers * rounds);
	CU_ASSERT(ws[0].st.srtt_us > 0);
	gw_free(g);
}

static void
test_fp32(void)
{
	clean_run(GR_DTYPE_FP32, quick ? 20011 : 100003, 352, 3, 2, 3, false);
}

static void
test_fp16_bf16_odd(void)
{
	clean_run(GR_DTYPE_FP16, 12345, 704, 2, 1, 2, false);
	clean_run(GR_DTYPE_BF16, 7, 3, 4, 3, 1, false);       /* 3 chunks, the last of 1 */
	clean_run(GR_DTYPE_BF16, 1, 4096, 2, 1, 4, false);    /* one element */
	clean_run(GR_DTYPE_FP32, 4097, 2048, 1, 1, 1, false); /* one worker, 8 KiB chunks */
}

static void
test_average(void)
{
	clean_run(GR_DTYPE_FP32, 5000, 100, 4, 2, 2, true);
	clean_run(GR_DTYPE_FP16, 5000, 100, 2, 1, 2, true);
}

/*
 * A tensor shorter than the job's: its chunks spread over the trees in proportion to their
 * ranges, the last one padded with zeros to the chunk the wire carries; nothing past the
 * tensor is touched, and the sums are exact. The job's short last chunk is left out until
 * the tensor reaches into it. Trees of 30, 30 and 41 chunks (the last of 3 elements).
 */
static void
test_shorter(void)
{
	static const struct {
		uint64_t n;
		unsigned int per_tree[3]; /* first transmissions per worker and round */
	} cases[] = {
		{1, {0, 0, 1}}, /* one chunk: the largest share's */
		{50, {0, 0, 1}},
		{51, {1, 0, 1}},              /* a tie: the lower tree */
		{100 * 50 + 2, {30, 30, 41}}, /* reaches into the job's last chunk */
		{100 * 50, {30, 30, 40}},     /* every full chunk */
		{60 * 50 + 1, {18, 18, 25}},
		{10 * 50 - 1, {3, 3, 4}},
	};
	struct job j;
	struct fake_opts fo = {.retx = RETX_SPEC};
	struct gr_options o = {0};
	struct wrk ws[WORKERS_MAX];

	job_init(&j, 3, 3, 2, GR_DTYPE_FP32, 100 * 50 + 3, 50);
	j.first[0] = 0, j.count[0] = 30;
	j.first[1] = 30, j.count[1] = 30;
	j.first[2] = 60, j.count[2] = 41;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct fakegw *g = gw_start(&j, &fo);

		run_n(&j, &o, 2, cases[i].n, ws);
		gw_stop(g);
		CHECK(g->bad == 0, "%llu elements: %u packets broke a rule",
		      (unsigned long long)cases[i].n, g->bad);
		for (int t = 0; t < 3; t++)
			CHECK(g->tree_contribs[t] == 3 * 2 * cases[i].per_tree[t],
			      "%llu elements: tree %d carried %u chunks, not %u",
			      (unsigned long long)cases[i].n, t, g->tree_contribs[t],
			      3 * 2 * cases[i].per_tree[t]);
		gw_free(g);
	}
	/* fp16 and bf16 with averaging, and one tree. */
	o.average = true;
	job_init(&j, 2, 1, 1, GR_DTYPE_BF16, 1000, 64);
	for (int k = 0; k < 2; k++) {
		struct fakegw *g = gw_start(&j, &fo);

		run_n(&j, &o, 2, k == 0 ? 999 : 65, ws);
		gw_stop(g);
		CU_ASSERT(g->bad == 0);
		gw_free(g);
		j.dtype = GR_DTYPE_FP16;
	}
}

/* The window bounds the chunks in flight of each tree, and is used; the slot pool bounds
 * their span, which goes past the window when a chunk is lost. */
static void
test_window(void)
{
	struct job j;
	struct fake_opts fo = {.retx = RETX_SPEC};
	struct gr_options o = {.window = 8};
	struct wrk ws[WORKERS_MAX];
	struct fakegw *g;

	job_init(&j, 2, 1, 2, GR_DTYPE_FP32, 64 * 500, 64);
	g = gw_run(&j, &fo, &o, 1, ws);
	/* The gateway sees a worker's chunks in flight only while the other worker has not
	 * sent them yet: at most the window. That the window is used: the span reaches it. */
	CHECK(g->max_flight <= 8 && g->max_span >= 8, "chunks in flight %u, span %u, window 8",
	      g->max_flight, g->max_span);
	gw_free(g);

	/* The slot pool caps the window and the span. */
	job_init(&j, 2, 2, 2, GR_DTYPE_FP32, 64 * 500, 64);
	j.slots = 16;
	o.window = 1000;
	g = gw_run(&j, &fo, &o, 1, ws);
	CHECK(g->max_span <= 16 && g->max_span >= 8 && g->max_flight <= 16,
	      "span %u, in flight %u, slot pool 16", g->max_span, g->max_flight);
	gw_free(g);

	/* The table's window (4 of a pool of 32) by default; lost chunks: the others go on
	 * past them, up to the pool. */
	job_init(&j, 2, 1, 2, GR_DTYPE_FP32, 64 * 2000, 64);
	j.slots = 32;
	j.window = 4;
	fo.loss_rx = 20000;
	o = (struct gr_options){.rto_min_ms = 5, .rto_initial_ms = 20, .timeout_ms = 20000};
	g = gw_run(&j, &fo, &o, 1, ws);
	CHECK(g->max_flight <= 4 && g->max_span > 4 && g->max_span <= 32,
	      "in flight %u (window 4), span %u (pool 32)", g->max_flight, g->max_span);
	gw_free(g);
}

static void
lossy_run(enum retx_mode mode, const char *what)
{
	struct job j;
	struct fake_opts fo = {.loss_rx = 50000,
			       .loss_tx = 50000,
			       .dup_tx = 20000,
			       .reorder = 20000,
			       .retx = mode};
	struct gr_options o = {
		.rto_min_ms = 5, .rto_initial_ms = 20, .rto_max_ms = 200, .timeout_ms = 20000};
	struct wrk ws[WORKERS_MAX];
	struct fakegw *g;
	uint32_t rounds = quick ? 3 : 5;

	job_init(&j, 3, 2, 4, GR_DTYPE_FP32, quick ? 20000 : 40000, 256);
	g = gw_run(&j, &fo, &o, rounds, ws);
	CHECK(g->bad == 0, "%s: %u packets broke a rule", what, g->bad);
	CHECK(SUM(ws, 3, contribs_retx) > 0, "%s: no retransmission", what);
	CHECK(SUM(ws, 3, nacks_sent) > 0 && g->nacks > 0, "%s: no NACK_RESULT", what);
	CHECK(SUM(ws, 3, duplicates) > 0, "%s: duplicates not seen", what);
	if (mode == RETX_SPEC)
		CHECK(g->acks_sent > 0 && SUM(ws, 3, acks) > 0, "%s: no ACK", what);
	printf("\n    %s: %.0f ms, %llu retx, %llu nacks, %llu acks, %llu dups ", what, ws[0].ms,
	       (unsigned long long)SUM(ws, 3, contribs_retx),
	       (unsigned long long)SUM(ws, 3, nacks_sent), (unsigned long long)SUM(ws, 3, acks),
	       (unsigned long long)SUM(ws, 3, duplicates));
	gw_free(g);
}

static void
test_loss(void)
{
	lossy_run(RETX_SPEC, "5% loss, gateway answers RETX");
	lossy_run(RETX_IGNORE, "5% loss, RETX unanswered");
}

/* Every fan-out RESULT lost, RETX answered with ACK only, and the first answer to each
 * NACK_RESULT lost: each chunk's payload is sent again exactly once (the ACK stops it),
 * and its result comes from a NACK_RESULT sent on T2 in the held state. */
static void
test_held(void)
{
	struct job j;
	struct fake_opts fo = {.retx = RETX_ACK,
			       .drop_fanout = true,
			       .nack_needs_ack = true,
			       .drop_first_nack_answer = true};
	struct gr_options o = {
		.rto_min_ms = 5, .rto_initial_ms = 10, .rto_max_ms = 50, .timeout_ms = 10000};
	struct wrk ws[WORKERS_MAX];
	struct fakegw *g;
	uint64_t n_chunks = 40;

	job_init(&j, 2, 1, 1, GR_DTYPE_FP32, 64 * n_chunks, 64);
	g = gw_run(&j, &fo, &o, 1, ws);
	CHECK(g->bad == 0, "%u packets broke a rule", g->bad);
	for (int k = 0; k < 2; k++) {
		CHECK(ws[k].st.contribs_retx == n_chunks,
		      "worker %d: %llu payloads resent, want %llu", k,
		      (unsigned long long)ws[k].st.contribs_retx, (unsigned long long)n_chunks);
		CHECK(ws[k].st.acks > 0, "worker %d: no ACK", k);
		CHECK(ws[k].st.path_srtt_us > 0, "worker %d: no echoed round trip", k);
	}
	CU_ASSERT(g->answers >= 2 * n_chunks);
	gw_free(g);
}

/* A loss among a round's last chunks: the first CONTRIB of chunk 0 of two is lost, chunk
 * 1's result comes at once. No chunk is sent long after chunk 0, but once the time chunk
 * 1's result took (and an eighth of the timeout) has passed since chunk 0 went, chunk 0
 * goes again: after about 0.6 s here, where its timer (5 s, doubled before the round's
 * first result) would have waited 10 s. */
static void
test_tail_loss(void)
{
	struct job j;
	struct fake_opts fo = {.retx = RETX_SPEC, .lose_chunk0 = true};
	struct gr_options o = {.rto_min_ms = 5000,
			       .rto_initial_ms = 5000,
			       .rto_max_ms = 10000,
			       .timeout_ms = 30000};
	struct wrk ws[WORKERS_MAX];
	struct fakegw *g;

	job_init(&j, 1, 1, 1, GR_DTYPE_FP32, 64 * 2, 64);
	g = gw_run(&j, &fo, &o, 1, ws);
	CHECK(ws[0].rc == 1 && ws[0].wrong == 0, "rc %d, %d elements wrong", ws[0].rc, ws[0].wrong);
	CHECK(ws[0].st.contribs_retx == 1, "%llu payloads resent, want 1",
	      (unsigned long long)ws[0].st.contribs_retx);
	CHECK(ws[0].ms < 4000, "took %.0f ms: the lost chunk waited for its timer", ws[0].ms);
	CU_ASSERT(g->bad == 0);
	gw_free(g);
}

static void
test_timeout(void)
{
	struct job j;
	struct fake_opts fo = {.retx = RETX_SPEC};
	struct gr_options o = {.timeout_ms = 300, .rto_initial_ms = 20};
	struct fakegw *g;
	struct gr_client *c;
	struct timespec t0, t1;
	float *buf;
	double ms;
	int rc;

	job_init(&j, 1, 1, 2, GR_DTYPE_FP32, 1000, 100);
	g = gw_start(&j, &fo);
	atomic_store(&g->silent, true);
	c = client_for(&j, 0);
	buf = calloc(1000, sizeof(float));
	CU_ASSERT_FATAL(c != NULL && buf != NULL);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	rc = gr_allreduce(c, buf, 1000, GR_DTYPE_FP32, 1, &o);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	ms = (double)(t1.tv_sec - t0.tv_sec) * 1e3 + (double)(t1.tv_nsec - t0.tv_nsec) / 1e6;
	CHECK(rc == -ETIMEDOUT, "rc %d", rc);
	CHECK(ms >= 299 && ms < 1000, "returned after %.0f ms, limit 300", ms);
	CHECK(strstr(gr_client_error(c), "10 of 10 chunks") != NULL, "%s", gr_client_error(c));
	/* The client stays usable: the gateway speaks again, the next round completes. */
	atomic_store(&g->silent, false);
	o.timeout_ms = 5000;
	for (int e = 0; e < 1000; e++)
		buf[e] = (float)e;
	rc = gr_allreduce(c, buf, 1000, GR_DTYPE_FP32, 2, &o);
	CHECK(rc == 1, "rc %d: %s", rc, gr_client_error(c));
	CU_ASSERT(buf[999] == 999.0f);
	struct gr_stats st;

	gr_client_stats(c, &st);
	CU_ASSERT(st.timeouts == 1 && st.calls == 2 && st.calls_ok == 1);
	gr_client_free(c);
	free(buf);
	gw_stop(g);
	gw_free(g);
}

/* A call that timed out is taken up where it stopped (gr_options.resume): the results it
 * got are kept, no chunk goes twice as a first transmission, the rest completes. A call
 * that starts from the first chunk again would send chunks the gateway's slot pool may
 * have moved past (georeduce-worker --follow goes on like this under an unchanged epoch). */
static void
test_resume(void)
{
	const uint32_t n_chunks = 40, ce = 50;
	struct job j;
	struct fake_opts fo = {.retx = RETX_SPEC, .silent_after = 12};
	struct gr_options o = {.window = 8, .timeout_ms = 300, .rto_initial_ms = 20};
	struct fakegw *g;
	struct gr_client *c;
	struct gr_stats st;
	float *buf;
	int rc;

	job_init(&j, 1, 1, 1, GR_DTYPE_FP32, (uint64_t)n_chunks * ce, ce);
	g = gw_start(&j, &fo);
	c = client_for(&j, 0);
	buf = calloc((size_t)n_chunks * ce, sizeof(float));
	CU_ASSERT_FATAL(c != NULL && buf != NULL);
	for (uint32_t e = 0; e < n_chunks * ce; e++)
		buf[e] = (float)(e % 9);
	o.resume = true; /* nothing to take up yet */
	rc = gr_allreduce(c, buf, n_chunks * ce, GR_DTYPE_FP32, 5, &o);
	CHECK(rc == -EINVAL, "rc %d", rc);
	o.resume = false;
	rc = gr_allreduce(c, buf, n_chunks * ce, GR_DTYPE_FP32, 5, &o);
	CHECK(rc == -ETIMEDOUT, "rc %d", rc);
	CHECK(strstr(gr_client_error(c), "28 of 40 chunks") != NULL, "%s", gr_client_error(c));
	o.resume = true;
	rc = gr_allreduce(c, buf, n_chunks * ce, GR_DTYPE_FP32, 6, &o);
	CHECK(rc == -EINVAL, "another round: rc %d", rc);
	/* The gateway speaks again: the call goes on from where it stopped. */
	gr_client_stats(c, &st);
	uint64_t retx = st.contribs_retx;

	atomic_store(&g->silent, false);
	o.timeout_ms = 5000;
	rc = gr_allreduce(c, buf, n_chunks * ce, GR_DTYPE_FP32, 5, &o);
	CHECK(rc == 1, "rc %d: %s", rc, gr_client_error(c));
	for (uint32_t e = 0; e < n_chunks * ce; e++)
		if (!CHECK(buf[e] == (float)(e % 9), "element %u: %g", e, buf[e]))
			break;
	gr_client_stats(c, &st);
	CHECK(st.contribs_sent == n_chunks && st.results == n_chunks,
	      "%llu chunks sent, %llu results", (unsigned long long)st.contribs_sent,
	      (unsigned long long)st.results);
	CU_ASSERT(st.contribs_retx > retx); /* those in flight, asked for again */
	rc = gr_allreduce(c, buf, n_chunks * ce, GR_DTYPE_FP32, 5, &o);
	CHECK(rc == -EINVAL, "after a success: rc %d", rc);
	gr_client_free(c);
	free(buf);
	gw_stop(g);
	CU_ASSERT(g->bad == 0);
	gw_free(g);
}

/* gr_options.cancel: asked while the call waits; once it says stop, the call ends with
 * -ECANCELED long before its timeout, resumable: taken up again it completes exactly. */
struct cancel_arg {
	struct fakegw *g;
	unsigned int asked;
	unsigned int stop_after; /* asked this often while the gateway is silent */
};

static int
cancel_when_silent(void *arg)
{
	struct cancel_arg *a = arg;

	a->asked++;
	return atomic_load(&a->g->silent) && --a->stop_after == 0;
}

static void
test_cancel(void)
{
	const uint32_t n_chunks = 40, ce = 50;
	struct job j;
	struct fake_opts fo = {.retx = RETX_SPEC, .silent_after = 12};
	struct gr_options o = {.window = 8,
			       .timeout_ms = 120000,
			       .rto_initial_ms = 20,
			       .progress_ms = 5,
			       .cancel = cancel_when_silent};
	struct timespec t0, t1;
	struct cancel_arg ca;
	struct fakegw *g;
	struct gr_client *c;
	struct gr_stats st;
	float *buf;
	int rc;

	job_init(&j, 1, 1, 1, GR_DTYPE_FP32, (uint64_t)n_chunks * ce, ce);
	g = gw_start(&j, &fo);
	c = client_for(&j, 0);
	buf = calloc((size_t)n_chunks * ce, sizeof(float));
	CU_ASSERT_FATAL(c != NULL && buf != NULL);
	for (uint32_t e = 0; e < n_chunks * ce; e++)
		buf[e] = (float)(e % 7);
	ca = (struct cancel_arg){.g = g, .stop_after = 3};
	o.cancel_arg = &ca;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	rc = gr_allreduce(c, buf, n_chunks * ce, GR_DTYPE_FP32, 5, &o);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	CHECK(rc == -ECANCELED, "rc %d: %s", rc, gr_client_error(c));
	CHECK(strstr(gr_client_error(c), "cancelled with 28 of 40 chunks") != NULL, "%s",
	      gr_client_error(c));
	/* Well before the two-minute timeout, however busy the machine. */
	CHECK(t1.tv_sec - t0.tv_sec < 60, "cancelled after %ld s", (long)(t1.tv_sec - t0.tv_sec));
	gr_client_stats(c, &st);
	CHECK(st.cancels == 1 && st.timeouts == 0, "%llu cancels, %llu timeouts",
	      (unsigned long long)st.cancels, (unsigned long long)st.timeouts);
	/* Taken up again with a callback that never stops it: exact. */
	atomic_store(&g->silent, false);
	ca.stop_after = 0; /* decrements only while silent: never reaches 0 again */
	o.resume = true;
	rc = gr_allreduce(c, buf, n_chunks * ce, GR_DTYPE_FP32, 5, &o);
	CHECK(rc == 1, "rc %d: %s", rc, gr_client_error(c));
	for (uint32_t e = 0; e < n_chunks * ce; e++)
		if (!CHECK(buf[e] == (float)(e % 7), "element %u: %g", e, buf[e]))
			break;
	gr_client_stats(c, &st);
	CHECK(st.cancels == 1 && st.results == n_chunks && ca.asked >= 3,
	      "%llu cancels, %llu "
	      "results, asked %u times",
	      (unsigned long long)st.cancels, (unsigned long long)st.results, ca.asked);
	gr_client_free(c);
	free(buf);
	gw_stop(g);
	CU_ASSERT(g->bad == 0);
	gw_free(g);
}

/* Every packet twice, results of the previous round and of another epoch, garbage and a
 * PROBE: the sum is exact, the rest is counted and ignored, the PROBE answered. */
static void
test_duplicates_and_strays(void)
{
	struct job j;
	struct fake_opts fo = {.retx = RETX_SPEC, .dup_tx = 1000000, .inject = true, .probe = true};
	struct gr_options o = {0};
	struct wrk ws[WORKERS_MAX];
	struct fakegw *g;
	uint64_t n_chunks = 30;

	job_init(&j, 2, 2, 2, GR_DTYPE_BF16, 100 * n_chunks, 100);
	/* Two rounds: the PROBE goes out during the first, and a client answers only inside
	 * gr_allreduce(), which a fast first round may have left already. */
	g = gw_run(&j, &fo, &o, 2, ws);
	for (int k = 0; k < 2; k++) {
		CHECK(ws[k].st.duplicates >= n_chunks / 2, "worker %d: %llu duplicates", k,
		      (unsigned long long)ws[k].st.duplicates);
		CHECK(ws[k].st.stale >= n_chunks / 2, "worker %d: %llu stale", k,
		      (unsigned long long)ws[k].st.stale);
		CHECK(ws[k].st.invalid >= 1, "worker %d: garbage not counted", k);
	}
	CHECK(g->probe_replies >= 1, "%u probe replies", g->probe_replies);
	gw_free(g);
}

/* A job with contributor sets: before each RESULT the gateway sends two of the same chunk
 * whose set has the wrong length (none, and one block more) and whose sums are wrong. The
 * client counts them invalid and takes the right one that follows: the sums are exact. */
static void
test_cset_length(void)
{
	const uint32_t n_chunks = 16, rounds = 2;
	struct job j;
	struct fake_opts fo = {.retx = RETX_SPEC, .bad_cset = true};
	struct gr_options o = {0};
	struct wrk ws[WORKERS_MAX];
	struct fakegw *g;

	job_init(&j, 2, 2, 2, GR_DTYPE_FP32, 64 * n_chunks, 64);
	j.cset_blocks = 1;
	g = gw_run(&j, &fo, &o, rounds, ws); /* checks the sums */
	CHECK(g->bad == 0 && g->bad_csets == 2 * 2 * rounds * n_chunks,
	      "%u packets broke a rule, %u RESULTs with a wrong set sent", g->bad, g->bad_csets);
	for (int k = 0; k < 2; k++)
		CHECK(ws[k].st.invalid == 2 * rounds * n_chunks &&
			      ws[k].st.results == rounds * n_chunks,
		      "worker %d: %llu invalid, %llu results, want %u and %u", k,
		      (unsigned long long)ws[k].st.invalid, (unsigned long long)ws[k].st.results,
		      2 * rounds * n_chunks, rounds * n_chunks);
	gw_free(g);
}

/* The partial-reduce worker k of job j: rounds r0 .. r0 + n - 1, each result checked
 * against the contributor set of its chunk (and a superseded one as the later round's). */
struct pr_wrk {
	struct job *j;
	int k;
	uint32_t r0, n;
	int rc, wrong, outside;
	struct gr_stats st;
};

/* Check buf, the result of round r, against the sets in csets (one block per chunk);
 * returns the elements that differ. */
static int
pr_check(const struct job *j, const uint8_t *buf, const uint8_t *csets, uint32_t r)
{
	int wrong = 0;

	for (uint64_t e = 0; e < j->elements; e++) {
		const uint8_t *set = csets + (e / j->ce) * WIRE_CSET_BLOCK;
		float sum = 0;
		uint8_t want[4];

		for (int k = 0; k < j->n_workers; k++)
			if (wire_cset_test(set, 1, j->wid[k]))
				sum += pattern(k, e, r);
		elem_put(want, j->dtype, 0, sum);
		wrong += memcmp(want, buf + e * gr_dtype_size(j->dtype), gr_dtype_size(j->dtype)) !=
			 0;
	}
	return wrong;
}

static void *
pr_main(void *arg)
{
	struct pr_wrk *w = arg;
	struct job *j = w->j;
	struct gr_client *c = client_for(j, w->k);
	uint8_t *buf = malloc(j->elements * gr_dtype_size(j->dtype));
	uint8_t *csets = calloc((j->elements + j->ce - 1) / j->ce, WIRE_CSET_BLOCK);
	struct gr_options o = {.csets = csets, .timeout_ms = 5000};

	CU_ASSERT_FATAL(c != NULL && buf != NULL && csets != NULL);
	for (uint32_t r = w->r0; r < w->r0 + w->n; r++) {
		for (uint64_t e = 0; e < j->elements; e++)
			elem_put(buf, j->dtype, (uint32_t)e, pattern(w->k, e, r));
		w->rc = gr_allreduce(c, buf, j->elements, j->dtype, r, &o);
		if (w->rc < 0)
			break;
		gr_client_stats(c, &w->st); /* superseded: every chunk, by latest_round */
		w->wrong += pr_check(j, buf, csets, w->st.superseded != 0 ? w->st.latest_round : r);
		for (uint64_t ch = 0; ch * j->ce < j->elements; ch++)
			w->outside +=
				!wire_cset_test(csets + ch * WIRE_CSET_BLOCK, 1, j->wid[w->k]);
	}
	gr_client_stats(c, &w->st);
	gr_client_free(c);
	free(buf);
	free(csets);
	return NULL;
}

/* Partial reduce, 2 of 3: workers 0 and 1 sum rounds 40 and 41 without worker 2, whose
 * round 41 contribution then comes late (it gets the result it is not in) and whose
 * round 39, two rounds behind, is answered by round 41's result (superseded). */
static void
test_partial_reduce(void)
{
	struct job j;
	struct fake_opts fo = {.retx = RETX_SPEC};
	struct pr_wrk ws[3];
	pthread_t th[2];
	struct fakegw *g;

	job_init(&j, 3, 2, 2, GR_DTYPE_FP32, 1000, 64);
	j.cset_blocks = 1;
	j.threshold = 2;
	g = gw_start(&j, &fo);
	for (int k = 0; k < 2; k++) {
		ws[k] = (struct pr_wrk){.j = &j, .k = k, .r0 = 40, .n = 2};
		CU_ASSERT_FATAL(pthread_create(&th[k], NULL, pr_main, &ws[k]) == 0);
	}
	for (int k = 0; k < 2; k++) {
		pthread_join(th[k], NULL);
		CHECK(ws[k].rc == 2, "worker %d: %d", k, ws[k].rc);
		CU_ASSERT(ws[k].wrong == 0 && ws[k].outside == 0 && ws[k].st.superseded == 0);
	}
	/* The straggler, in round 41: late, every chunk answered, itself not in. */
	ws[2] = (struct pr_wrk){.j = &j, .k = 2, .r0 = 41, .n = 1};
	pr_main(&ws[2]);
	CHECK(ws[2].rc == 2, "straggler: %d", ws[2].rc);
	CU_ASSERT(ws[2].wrong == 0);
	CU_ASSERT(ws[2].outside == 16); /* every chunk of 1000 / 64 */
	CU_ASSERT(ws[2].st.superseded == 0);
	/* Two rounds behind: round 41's results answer round 39. */
	ws[2] = (struct pr_wrk){.j = &j, .k = 2, .r0 = 39, .n = 1};
	pr_main(&ws[2]);
	CHECK(ws[2].rc == 2, "straggler two rounds behind: %d", ws[2].rc);
	CU_ASSERT(ws[2].st.superseded == 16 && ws[2].st.latest_round == 41);
	CU_ASSERT(ws[2].wrong == 0 && ws[2].outside == 16);
	gw_stop(g);
	CU_ASSERT(g->bad == 0 && g->late >= 32);
	gw_free(g);
}

struct prog {
	uint64_t calls, last_done, total;
	bool monotonic;
};

static void
on_progress(void *arg, uint64_t done, uint64_t total)
{
	struct prog *p = arg;

	if (done < p->last_done || done > total)
		p->monotonic = false;
	p->calls++;
	p->last_done = done;
	p->total = total;
}

static void
test_progress(void)
{
	struct job j;
	struct fake_opts fo = {.retx = RETX_SPEC, .drop_fanout = true};
	struct prog pr = {.monotonic = true};
	struct gr_options o = {.progress = on_progress,
			       .progress_arg = &pr,
			       .progress_ms = 10,
			       .rto_initial_ms = 30,
			       .rto_min_ms = 30,
			       .window = 4};
	struct fakegw *g;
	struct gr_client *c;
	float buf[400];
	int rc;

	/* Every result comes by retransmission after 30 ms, 4 at a time: ~100 ms in all. */
	job_init(&j, 1, 1, 1, GR_DTYPE_FP32, 400, 40);
	g = gw_start(&j, &fo);
	c = client_for(&j, 0);
	CU_ASSERT_FATAL(c != NULL);
	memset(buf, 0, sizeof(buf));
	rc = gr_allreduce(c, buf, 400, GR_DTYPE_FP32, 0, &o);
	CHECK(rc == 1, "rc %d: %s", rc, gr_client_error(c));
	CHECK(pr.calls >= 3 && pr.calls <= 40, "%llu progress calls", (unsigned long long)pr.calls);
	CU_ASSERT(pr.monotonic);
	CU_ASSERT(pr.last_done == 10 && pr.total == 10);
	gr_client_free(c);
	gw_stop(g);
	gw_free(g);
}

/* A new epoch with another tensor and other trees: the old one is refused, the new one
 * works with a gateway at that epoch. */
/* Two gateways at the site, each holding half of the chunks (at 127.0.0.1 and 127.0.0.2):
 * the workers' table names the other one in `shards`. Every chunk and every NACK_RESULT
 * goes to the gateway of its tree and every result is taken from it only; the sums are
 * exact under loss. Then what the configuration checks about the trees' gateways. */
static void
test_two_gateways(void)
{
	struct job ja, jb;
	struct fake_opts fo = {.loss_rx = 20000, .retx = RETX_SPEC};
	struct gr_options o = {.rto_min_ms = 5, .rto_initial_ms = 20, .timeout_ms = 20000};
	struct wrk ws[WORKERS_MAX];
	struct fakegw *ga, *gb;
	struct gr_config cfg, bad;
	char *json, err[GR_ERR_MAX];

	job_init(&ja, 3, 2, 2, GR_DTYPE_FP32, quick ? 20000 : 60000, 256);
	jb = ja;
	ja.n_trees = 1; /* a: the first tree's chunks */
	jb.gw_id = 2;   /* b: the second's */
	jb.addr = LOCALHOST + 1;
	jb.ports = 3;
	jb.n_trees = 1;
	jb.tree_id[0] = ja.tree_id[1];
	jb.first[0] = ja.first[1];
	jb.count[0] = ja.count[1];
	ga = gw_start(&ja, &fo);
	memcpy(jb.wport, ja.wport, sizeof(jb.wport));
	jb.keep_wports = true;
	gb = gw_start(&jb, &fo);
	ja.shard = &jb;
	json = table_json(&ja);
	CU_ASSERT_FATAL(gr_config_from_table_string(&cfg, json, ja.wid[0], err, sizeof(err)) == 0);
	CU_ASSERT(cfg.n_trees == 2 && cfg.gateway_id == 1 && cfg.tree_gateways[0].id == 1 &&
		  cfg.tree_gateways[1].id == 2 && cfg.tree_gateways[1].ipv4 == LOCALHOST + 1 &&
		  cfg.tree_gateways[1].ports == 3 && cfg.trees[1].chunk_first == ja.first[1]);
	run(&ja, &o, quick ? 2 : 3, ws);
	gw_stop(ga);
	gw_stop(gb);
	CHECK(ga->bad == 0 && gb->bad == 0, "packets to the wrong gateway: %u at a, %u at b",
	      ga->bad, gb->bad);
	CHECK(ga->contribs > 0 && gb->contribs > 0 && ga->nacks + gb->nacks > 0,
	      "contributions %u and %u, NACK_RESULTs %u and %u", ga->contribs, gb->contribs,
	      ga->nacks, gb->nacks);
	gw_free(ga);
	gw_free(gb);
	/* The configuration's checks. */
	bad = cfg;
	bad.tree_gateways[1].id = cfg.worker_id;
	CHECK(gr_config_check(&bad, err, sizeof(err)) == -EINVAL &&
		      strstr(err, "tree_gateways[1].id") != NULL,
	      "%s", err);
	bad = cfg;
	bad.tree_gateways[1].ipv4 = 0xe0000001u;
	CHECK(gr_config_check(&bad, err, sizeof(err)) == -EINVAL &&
		      strstr(err, "tree_gateways[1].ipv4") != NULL,
	      "%s", err);
	bad = cfg;
	bad.tree_gateways[1].base_port = 65535;
	CHECK(gr_config_check(&bad, err, sizeof(err)) == -EINVAL &&
		      strstr(err, "tree_gateways[1] ports") != NULL,
	      "%s", err);
	bad = cfg;
	bad.tree_gateways[1].ipv4 = LOCALHOST; /* gateway 2 at gateway 1's address */
	CHECK(gr_config_check(&bad, err, sizeof(err)) == -EINVAL &&
		      strstr(err, "one id and address per gateway") != NULL,
	      "%s", err);
	/* 17 gateways of 17 trees: one too many. */
	bad = cfg;
	bad.n_trees = GR_GATEWAYS_MAX + 1;
	for (unsigned int i = 0; i < bad.n_trees; i++) {
		bad.trees[i] =
			(struct gr_tree){.id = (uint16_t)i, .chunk_first = i, .chunk_count = 1};
		bad.tree_gateways[i] =
			(struct gr_gateway){(uint16_t)(500 + i), 0x0a000001u + i, 17400, 1};
	}
	bad.trees[bad.n_trees - 1].chunk_count =
		(uint32_t)((bad.elements + bad.chunk_elements - 1) / bad.chunk_elements) -
		(bad.n_trees - 1);
	CHECK(gr_config_check(&bad, err, sizeof(err)) == -EINVAL &&
		      strstr(err, "tree_gateways: 17 gateways") != NULL,
	      "%s", err);
	bad.tree_gateways[GR_GATEWAYS_MAX] = bad.tree_gateways[0];
	CHECK(gr_config_check(&bad, err, sizeof(err)) == 0, "%s", err);
	/* One gateway: no shards, nothing in tree_gateways. */
	ja.shard = NULL;
	free(json);
	json = table_json(&ja);
	CU_ASSERT(gr_config_from_table_string(&cfg, json, ja.wid[0], err, sizeof(err)) == -EINVAL);
	ja.n_trees = 2;
	free(json);
	json = table_json(&ja);
	CU_ASSERT_FATAL(gr_config_from_table_string(&cfg, json, ja.wid[0], err, sizeof(err)) == 0);
	for (unsigned int i = 0; i < GR_TREES_MAX; i++)
		CU_ASSERT(cfg.tree_gateways[i].id == 0 && cfg.tree_gateways[i].ipv4 == 0);
	free(json);
}

static void
test_reconfigure(void)
{
	struct job j, j2;
	struct fake_opts fo = {.retx = RETX_SPEC};
	struct fakegw *g, *g2;
	struct gr_client *c;
	struct gr_config cfg;
	char *json, err[GR_ERR_MAX];
	float buf[3000];
	int rc;

	job_init(&j, 1, 1, 2, GR_DTYPE_FP32, 1000, 100);
	g = gw_start(&j, &fo);
	c = client_for(&j, 0);
	CU_ASSERT_FATAL(c != NULL);
	for (int e = 0; e < 1000; e++)
		buf[e] = 1.0f;
	CU_ASSERT(gr_allreduce(c, buf, 1000, GR_DTYPE_FP32, 0, NULL) == 1);
	gw_stop(g);

	job_init(&j2, 1, 3, 3, GR_DTYPE_FP32, 3000, 64);
	j2.epoch = 4;
	g2 = gw_start(&j2, &fo);
	j2.wport[0] = j.wport[0]; /* same worker port: the socket stays */
	g2->j.wport[0] = j.wport[0];
	json = table_json(&j2);
	CU_ASSERT_FATAL(gr_config_from_table_string(&cfg, json, j2.wid[0], err, sizeof(err)) == 0);
	free(json);
	cfg.epoch = 3;
	CHECK(gr_client_reconfigure(c, &cfg, err, sizeof(err)) == -EINVAL &&
		      strstr(err, "not after"),
	      "%s", err);
	cfg.epoch = 4;
	cfg.job = 8;
	CU_ASSERT(gr_client_reconfigure(c, &cfg, err, sizeof(err)) == -EINVAL);
	cfg.job = 7;
	CHECK(gr_client_reconfigure(c, &cfg, err, sizeof(err)) == 0, "%s", err);
	CU_ASSERT(gr_client_config(c)->epoch == 4 && gr_client_config(c)->n_trees == 3);
	for (int e = 0; e < 3000; e++)
		buf[e] = (float)(e % 7);
	rc = gr_allreduce(c, buf, 3000, GR_DTYPE_FP32, 1, NULL);
	CHECK(rc == 1, "rc %d: %s", rc, gr_client_error(c));
	CU_ASSERT(buf[2999] == (float)(2999 % 7));
	gr_client_free(c);
	gw_stop(g2);
	CU_ASSERT(g2->bad == 0);
	gw_free(g);
	gw_free(g2);
}

/* Sockets bound to the ports of job j's gateway again, once its fake gateway stopped. */
static void
gw_rebind(const struct job *j, int *fd)
{
	for (int i = 0; i < j->ports; i++) {
		struct sockaddr_in a = {.sin_family = AF_INET,
					.sin_port = htons(j->base + i),
					.sin_addr.s_addr = htonl(job_addr(j))};

		fd[i] = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
		CU_ASSERT_FATAL(fd[i] >= 0 && bind(fd[i], (struct sockaddr *)&a, sizeof(a)) == 0);
	}
}

/* A NACK_RESULT from socket fd (a port of j's gateway, id `sender`) to worker 0 for chunks
 * [chunk, chunk + count) of `round`, under epoch and tree, tsval 777. */
static void
nack_to_worker(const struct job *j, int fd, uint32_t epoch, uint16_t tree, uint16_t sender,
	       uint32_t round, uint32_t chunk, uint16_t count)
{
	uint8_t pkt[WIRE_HDR_LEN];
	struct wire_pkt p = {
		.type = WIRE_TYPE_NACK_RESULT,
		.job = j->job,
		.epoch = epoch,
		.tree = tree,
		.sender = sender,
		.origin = sender,
		.round = round,
		.chunk = chunk,
		.count = count,
		.tsval = 777,
	};
	struct sockaddr_in to = {.sin_family = AF_INET,
				 .sin_port = htons(j->wport[0]),
				 .sin_addr.s_addr = htonl(LOCALHOST)};

	CU_ASSERT_FATAL(wire_hdr_encode(pkt, sizeof(pkt), &p, NULL) == 0);
	raw_send(fd, pkt, sizeof(pkt), &to);
}

/* Send the NACK_RESULTs of test_kept_results() and run a call of round 6 (which times out:
 * nobody sums it) so that the worker reads them. */
static void
kept_ask(struct gr_client *c, const struct job *j, const int *fd, uint32_t epoch)
{
	struct gr_options o = {.timeout_ms = 300};
	float buf[1000] = {0};

	nack_to_worker(j, fd[0], epoch, 9, 1, 5, 0, 4);     /* chunks 0-3 */
	nack_to_worker(j, fd[0], epoch, 9, 1, 4, 4, 1);     /* a round not kept */
	nack_to_worker(j, fd[0], epoch, 9, 1, 5, 5, 1);     /* from chunk 4's port */
	nack_to_worker(j, fd[0], epoch - 1, 9, 1, 5, 6, 1); /* the old epoch */
	nack_to_worker(j, fd[0], epoch, 2, 1, 5, 8, 1);     /* the old tree */
	nack_to_worker(j, fd[0], epoch, 9, 3, 5, 8, 1);     /* another gateway */
	CU_ASSERT(gr_allreduce(c, buf, 1000, GR_DTYPE_FP32, 6, &o) == -ETIMEDOUT);
}

/* A worker keeps the latest RESULT of each chunk and gives it back, relabelled, to its
 * gateway when asked (NACK_RESULT of a past round, after a failover: docs/CLIENT.md,
 * "Results kept"), across a re-plan that moved the trees; exactly the bytes it got, to
 * the port of each chunk. Nothing for another round, epoch, tree, port or sender, and
 * nothing once told to forget. */
static void
test_kept_results(void)
{
	struct job j;
	struct fake_opts fo = {.retx = RETX_SPEC};
	struct gr_config cfg;
	struct gr_stats st;
	char err[GR_ERR_MAX];
	float buf[1000], want[1000];
	int fd[2];
	bool got[4] = {false};
	int n = 0, bad = 0;

	job_init(&j, 1, 1, 2, GR_DTYPE_FP32, 1000, 100);
	struct fakegw *g = gw_start(&j, &fo);
	struct gr_client *c = client_for(&j, 0);

	CU_ASSERT_FATAL(c != NULL);
	for (int e = 0; e < 1000; e++)
		buf[e] = (float)e * 0.25f;
	CU_ASSERT_FATAL(gr_allreduce(c, buf, 1000, GR_DTYPE_FP32, 5, NULL) == 1);
	memcpy(want, buf, sizeof(want));
	gw_stop(g);
	cfg = *gr_client_config(c);
	cfg.epoch = 4;
	cfg.trees[0].id = 9;
	CHECK(gr_client_reconfigure(c, &cfg, err, sizeof(err)) == 0, "%s", err);
	gw_rebind(&j, fd);
	kept_ask(c, &j, fd, 4);
	for (int i = 0; i < 2; i++) {
		uint8_t pkt[WIRE_UDP_PAYLOAD_MAX];
		ssize_t len;
		struct wire_pkt p;

		while ((len = recv(fd[i], pkt, sizeof(pkt), MSG_DONTWAIT)) > 0) {
			if (wire_hdr_decode(pkt, (size_t)len, &p, NULL) < 0 ||
			    p.type == WIRE_TYPE_CONTRIB || p.type == WIRE_TYPE_NACK_RESULT)
				continue; /* round 6's own */
			n++;
			bad += !(p.type == WIRE_TYPE_RESULT && p.chunk < 4 && !got[p.chunk] &&
				 (int)(p.chunk % 2) == i &&
				 p.flags == (WIRE_F_RETX | WIRE_F_ECHO) && p.tsecr == 777 &&
				 p.epoch == 4 && p.tree == 9 && p.sender == j.wid[0] &&
				 p.origin == j.gw_id && p.contrib == 1 && p.round == 5 &&
				 p.count == 100 && p.payload_len == 400 &&
				 memcmp(pkt + p.payload_off, want + 100 * p.chunk, 400) == 0);
			if (p.type == WIRE_TYPE_RESULT && p.chunk < 4)
				got[p.chunk] = true;
		}
	}
	gr_client_stats(c, &st);
	CHECK(n == 4 && bad == 0 && st.kept_answers == 4 && st.kept_misses == 1 && st.stale >= 1 &&
		      st.invalid >= 3,
	      "%d answers, %d wrong; kept_answers %llu misses %llu stale %llu invalid %llu", n, bad,
	      (unsigned long long)st.kept_answers, (unsigned long long)st.kept_misses,
	      (unsigned long long)st.stale, (unsigned long long)st.invalid);
	/* Told to forget: nothing kept, nothing answered; keeping again starts empty. */
	for (uint32_t e = 5; e <= 6; e++) {
		cfg.epoch = e;
		cfg.forget_results = e == 5;
		CHECK(gr_client_reconfigure(c, &cfg, err, sizeof(err)) == 0, "%s", err);
		kept_ask(c, &j, fd, e);
		gr_client_stats(c, &st);
		CHECK(st.kept_answers == 4 && st.kept_misses == 1 + 5 * (e - 4),
		      "epoch %u: kept_answers %llu misses %llu", e,
		      (unsigned long long)st.kept_answers, (unsigned long long)st.kept_misses);
	}
	for (int i = 0; i < 2; i++)
		close(fd[i]);
	gr_client_free(c);
	gw_free(g);
}

/* gr_dtype_round(): each dtype's rounding of a contribution, on values whose result is
 * known, a partial last block, idempotence, and bad arguments. */
static void
test_dtype_round(void)
{
	float v[70], w[70];

	CU_ASSERT(gr_dtype_round((enum gr_dtype)0, v, 1) == -EINVAL);
	CU_ASSERT(gr_dtype_round((enum gr_dtype)7, v, 1) == -EINVAL);
	CU_ASSERT(gr_dtype_round(GR_DTYPE_MXINT8, NULL, 1) == -EINVAL);
	CU_ASSERT(gr_dtype_round(GR_DTYPE_MXINT8, NULL, 0) == 0);
	/* fp32: unchanged. fp16 and bf16: to nearest, ties to even. */
	v[0] = 0.1f;
	CU_ASSERT(gr_dtype_round(GR_DTYPE_FP32, v, 1) == 0 && v[0] == 0.1f);
	v[0] = 1.0f + 0x1p-11f; /* a tie between 1 and 1 + 2^-10 */
	v[1] = 1.0f + 3 * 0x1p-11f;
	CU_ASSERT(gr_dtype_round(GR_DTYPE_FP16, v, 2) == 0 && v[0] == 1.0f &&
		  v[1] == 1.0f + 0x1p-9f);
	v[0] = 1.0f + 0x1p-8f; /* a tie between 1 and 1 + 2^-7 */
	CU_ASSERT(gr_dtype_round(GR_DTYPE_BF16, v, 1) == 0 && v[0] == 1.0f);
	/* MXINT8: the scale of the block's largest magnitude, elements in 1/64 of it. Block
	 * 0: max 1, so 0.3 -> 19/64; block 1: max 0.5, so 0.3 -> 38/128; block 2 (6 values,
	 * padded with zeros): max 4, so 1 -> 1 and 0.3 -> 5/16. */
	for (int i = 0; i < 70; i++)
		v[i] = 0.3f;
	v[0] = 1.0f;
	v[32] = 0.5f;
	v[64] = 4.0f;
	v[65] = 1.0f;
	memcpy(w, v, sizeof(v));
	CU_ASSERT(gr_dtype_round(GR_DTYPE_MXINT8, v, 70) == 0);
	CHECK(v[0] == 1.0f && v[1] == 19.0f / 64 && v[32] == 0.5f && v[33] == 38.0f / 128 &&
		      v[64] == 4.0f && v[65] == 1.0f && v[66] == 5.0f / 16 && v[69] == 5.0f / 16,
	      "%g %g %g %g %g %g %g", v[0], v[1], v[32], v[33], v[64], v[65], v[66]);
	/* MXFP4 (E2M1, largest 6 = 1.5 x 2^2): max 1 gets the scale 2^-2, so 0.3 x 4 = 1.2
	 * -> 1, i.e. 0.25. MXFP8: within E4M3's 3 mantissa bits. Rounded values stay put. */
	memcpy(v, w, sizeof(v));
	CU_ASSERT(gr_dtype_round(GR_DTYPE_MXFP4, v, 32) == 0 && v[0] == 1.0f && v[1] == 0.25f);
	memcpy(v, w, sizeof(v));
	CU_ASSERT(gr_dtype_round(GR_DTYPE_MXFP8, v, 70) == 0 && v[1] != 0.3f &&
		  fabsf(v[1] - 0.3f) <= 0.3f / 16);
	memcpy(w, v, sizeof(v));
	CU_ASSERT(gr_dtype_round(GR_DTYPE_MXFP8, v, 70) == 0 && memcmp(v, w, sizeof(v)) == 0);
	/* Longer than one pass (256 elements), every dtype: fp16 and bf16 take 2 bytes an
	 * element of the pass's wire buffer, more than the MX dtypes' 33 a block (the
	 * sanitizer build sees an overflow). Values already on the grid stay put. */
	{
		static float big[1000], want[1000];
		static const enum gr_dtype dts[] = {GR_DTYPE_FP16, GR_DTYPE_BF16, GR_DTYPE_MXINT8,
						    GR_DTYPE_MXFP8, GR_DTYPE_MXFP4};

		for (size_t d = 0; d < sizeof(dts) / sizeof(dts[0]); d++) {
			for (int i = 0; i < 1000; i++)
				want[i] = big[i] = (float)(i % 4);
			CHECK(gr_dtype_round(dts[d], big, 1000) == 0 &&
				      memcmp(big, want, sizeof(big)) == 0,
			      "dtype %d", (int)dts[d]);
		}
	}
}

/* One call of round r on c (worker 0 alone) with options o: every element 1, back exact. */
static void
call_ones(struct gr_client *c, const struct job *j, uint32_t r, const struct gr_options *o)
{
	float *buf = malloc(j->elements * sizeof(float));
	int rc, wrong = 0;

	CU_ASSERT_FATAL(buf != NULL);
	for (uint64_t e = 0; e < j->elements; e++)
		buf[e] = 1.0f;
	rc = gr_allreduce(c, buf, j->elements, GR_DTYPE_FP32, r, o);
	for (uint64_t e = 0; e < j->elements; e++)
		wrong += buf[e] != 1.0f;
	CHECK(rc == 1 && wrong == 0, "round %u: %d, %d wrong: %s", r, rc, wrong,
	      gr_client_error(c));
	free(buf);
}

/* With follow_rtt a tree's window follows the round trip measured: the rate times the
 * least CONTRIB-to-RESULT time of the latest call, rounded up to a power of two, between
 * the table's window and half the slot pool; back to the table's when the round trip
 * shrinks. An explicit window holds; without follow_rtt the table's does. */
static void
test_window_follows(void)
{
	struct job j;
	struct fakegw *g;
	struct gr_client *c;
	struct gr_stats st;
	struct gr_options fixed = {.window = 8}, follow = {.follow_rtt = true};
	uint32_t w2, rtt;

	/* The arithmetic: 10 Gbit/s x 20 ms / 4096 B = 6103.5 chunks. */
	CU_ASSERT(client_window_for(10, 20000, 4096, 1024, 16384) == 8192);
	CU_ASSERT(client_window_for(10, 20000, 4096, 1024, 8192) == 4096); /* half the pool */
	CU_ASSERT(client_window_for(10, 1000, 4096, 1024, 16384) == 1024); /* 305: the floor */
	CU_ASSERT(client_window_for(10, 20000, 4096, 64, 64) == 64);       /* no room: the floor */
	CU_ASSERT(client_window_for(0, 20000, 4096, 16, 256) == 16);       /* no rate */
	CU_ASSERT(client_window_for(10, 0, 4096, 16, 256) == 16);          /* no sample */
	CU_ASSERT(client_window_for(1, 100000, 1024, 16, 0) == 16384);     /* no pool: 12207 */
	CU_ASSERT(client_window_for(1e6, 100000, 1024, 16, 0) == GR_WINDOW_MAX);

	/* 1024 chunks of 1 KiB at 0.05 Gbit/s, window 16, 1024 slots; a gateway 20 ms away:
	 * 0.05e9 / 8 x 0.02 / 1024 = 122 chunks, 128 at least (more if the machine is busy
	 * and the least round trip longer), 512 at most. */
	job_init(&j, 1, 1, 1, GR_DTYPE_FP32, 1024 * 256, 256);
	j.window = 16;
	j.slots = 1024;
	j.rate_gbps = 0.05;
	g = gw_start(&j, &(struct fake_opts){.retx = RETX_SPEC, .delay_us = 20000});
	c = client_for(&j, 0);
	CU_ASSERT_FATAL(c != NULL);
	gr_client_stats(c, &st);
	CHECK(st.tree_windows[0] == 16 && st.tree_rtt_min_us[0] == 0,
	      "before a call: window %u, rtt %u", st.tree_windows[0], st.tree_rtt_min_us[0]);
	call_ones(c, &j, 1, &follow);
	gr_client_stats(c, &st);
	rtt = st.tree_rtt_min_us[0];
	w2 = st.tree_windows[0];
	CHECK(rtt >= 20000 && w2 >= 128 && w2 <= 512 &&
		      w2 == client_window_for(0.05, rtt, 1024, 16, 1024),
	      "20 ms away: least round trip %u us, window %u", rtt, w2);
	atomic_store(&g->delay_peak, 0);
	call_ones(c, &j, 2, &follow);
	CHECK(atomic_load(&g->delay_peak) > 16 && atomic_load(&g->delay_peak) <= w2,
	      "the call with window %u had %u first transmissions on their way at most", w2,
	      atomic_load(&g->delay_peak));
	atomic_store(&g->delay_peak, 0);
	call_ones(c, &j, 3, &fixed);
	CHECK(atomic_load(&g->delay_peak) <= 8, "window 8 given: %u chunks on their way",
	      atomic_load(&g->delay_peak));
	atomic_store(&g->delay_peak, 0);
	call_ones(c, &j, 4, NULL);
	CHECK(atomic_load(&g->delay_peak) <= 16, "by default the table's window: %u on their way",
	      atomic_load(&g->delay_peak));

	atomic_store(&g->delay_us, 0); /* the round trip shrinks */
	call_ones(c, &j, 5, &follow);
	gr_client_stats(c, &st);
	CHECK(st.tree_rtt_min_us[0] < 20000 && st.tree_windows[0] <= 64 &&
		      st.tree_windows[0] ==
			      client_window_for(0.05, st.tree_rtt_min_us[0], 1024, 16, 1024),
	      "close again: least round trip %u us, window %u", st.tree_rtt_min_us[0],
	      st.tree_windows[0]);
	gr_client_free(c);
	gw_stop(g);
	gw_free(g);
}

/* ---- joining through the control process ------------------------------------------------- */

/* A control process on a unix socket, one connection at a time: it hangs up on its first
 * hang_ups connections as soon as it accepts them (< 0: on all), as the control process
 * does with a worker too slow to finish its TLS handshake; then it answers "worker"
 * requests with the table of job 7 if the worker is one of table's, else ENOENT. */
struct fakectl {
	int lfd;
	char path[108];
	int hang_ups;
	int listen_after_ms; /* > 0: bound but not listening (connections refused) so long */
	char *table;
	uint16_t worker; /* the one worker of the table */
	atomic_int accepted, answered;
	atomic_bool stop;
	pthread_t th;
};

static double
mono_s(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static void
fakectl_serve(struct fakectl *f, int fd)
{
	while (!atomic_load(&f->stop)) {
		struct pollfd p = {.fd = fd, .events = POLLIN};
		json_t *req = NULL, *resp;
		char err[256];
		uint32_t id = 0;
		json_int_t w;

		if (poll(&p, 1, 50) <= 0)
			continue;
		if (ctl_recv(fd, 2000, &req, err, sizeof(err)) != 0)
			return;
		ctl_request_id(req, &id);
		w = json_integer_value(json_object_get(req, "worker"));
		if (w == f->worker && json_integer_value(json_object_get(req, "job")) == 7) {
			resp = ctl_reply_ok(id);
			json_object_set_new(resp, "table", json_loads(f->table, 0, NULL));
		} else {
			resp = ctl_reply_error(true, id, ENOENT, "job 7 has no worker %d", (int)w);
		}
		atomic_fetch_add(&f->answered, 1);
		(void)ctl_send(fd, resp);
		json_decref(resp);
		json_decref(req);
	}
}

static void *
fakectl_main(void *arg)
{
	struct fakectl *f = arg;

	if (f->listen_after_ms > 0) {
		double until = mono_s() + f->listen_after_ms / 1e3;

		while (mono_s() < until && !atomic_load(&f->stop))
			nanosleep(&(struct timespec){0, 10 * 1000000L}, NULL);
		if (atomic_load(&f->stop))
			return NULL;
		CU_ASSERT(listen(f->lfd, 8) == 0);
	}
	while (!atomic_load(&f->stop)) {
		struct pollfd p = {.fd = f->lfd, .events = POLLIN};
		int fd;

		if (poll(&p, 1, 50) <= 0 || (fd = accept(f->lfd, NULL, NULL)) < 0)
			continue;
		atomic_fetch_add(&f->accepted, 1);
		if (f->hang_ups != 0) {
			if (f->hang_ups > 0)
				f->hang_ups--;
		} else {
			fakectl_serve(f, fd);
		}
		close(fd);
	}
	return NULL;
}

static void
fakectl_start(struct fakectl *f, int hang_ups, const struct job *j)
{
	memset(f, 0, sizeof(*f));
	snprintf(f->path, sizeof(f->path), "/tmp/test_client.%d.sock", (int)getpid());
	f->lfd = ctl_listen(f->path);
	CU_ASSERT_FATAL(f->lfd >= 0);
	f->hang_ups = hang_ups;
	f->table = table_json(j);
	f->worker = j->wid[0];
	CU_ASSERT_FATAL(pthread_create(&f->th, NULL, fakectl_main, f) == 0);
}

/* As fakectl_start() with no hang-ups, but its socket is bound and not listening for the
 * first listen_after_ms: a connection is refused (ECONNREFUSED), as while the control
 * process restarts. The same socket then listens, so no connection ever meets no file. */
static void
fakectl_start_late(struct fakectl *f, int listen_after_ms, const struct job *j)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};

	memset(f, 0, sizeof(*f));
	snprintf(f->path, sizeof(f->path), "/tmp/test_client.%d.sock", (int)getpid());
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", f->path);
	unlink(f->path);
	f->lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	CU_ASSERT_FATAL(f->lfd >= 0);
	CU_ASSERT_FATAL(bind(f->lfd, (const struct sockaddr *)&sa, sizeof(sa)) == 0);
	f->listen_after_ms = listen_after_ms;
	f->table = table_json(j);
	f->worker = j->wid[0];
	CU_ASSERT_FATAL(pthread_create(&f->th, NULL, fakectl_main, f) == 0);
}

static void
fakectl_stop(struct fakectl *f)
{
	atomic_store(&f->stop, true);
	pthread_join(f->th, NULL);
	close(f->lfd);
	unlink(f->path);
	free(f->table);
}

/* The one-worker job 7 that the fake control process hands out, and the options that join
 * it as its worker. */
static void
join_setup(struct job *j, struct gr_join_opts *o)
{
	job_init(j, 1, 1, 1, GR_DTYPE_FP32, 4096, 1024);
	j->base = 7000; /* never sent to: the table is only read */
	j->wport[0] = 7100;
	*o = (struct gr_join_opts){.job = 7, .timeout_ms = 2000, .worker_id = j->wid[0]};
}

/* A worker joining while the control process hangs up on it (a worker stopped or starved
 * in its handshake is closed after the handshake limit) asks again until its wait ends:
 * gr_join_open() keeps the connection, gr_join_config() gets the table. A worker the
 * control process does not know is refused at once; one that is hung up on every time
 * fails when its wait ends, with the connection's error. */
static void
test_join_hung_up(void)
{
	struct gr_join_opts o;
	char err[GR_ERR_MAX] = "";
	struct gr_config cfg;
	struct fakectl f;
	struct gr_join *jn;
	struct job j;
	double t0;
	int rc;

	join_setup(&j, &o);

	fakectl_start(&f, 2, &j);
	o.control = f.path;
	jn = gr_join_open(&o, err, sizeof(err));
	CHECK(jn != NULL, "hung up on once: gr_join_open: %s", err);
	rc = jn != NULL ? gr_join_config(jn, &cfg, 10000, err, sizeof(err)) : -1;
	CHECK(rc == 0 && cfg.job == 7 && cfg.epoch == 3,
	      "hung up on twice, then the table: rc %d: %s", rc, err);
	CHECK(atomic_load(&f.accepted) >= 3 && atomic_load(&f.answered) >= 1,
	      "connections %d, answered %d", atomic_load(&f.accepted), atomic_load(&f.answered));
	gr_join_close(jn);

	o.worker_id = 9; /* unknown: refused at the first answer */
	jn = gr_join_open(&o, err, sizeof(err));
	CHECK(jn == NULL && errno == ENOENT && strstr(err, "no worker 9") != NULL,
	      "an unknown worker: %s", jn == NULL ? err : "joined");
	gr_join_close(jn);
	fakectl_stop(&f);

	fakectl_start(&f, -1, &j);
	o.control = f.path;
	o.worker_id = j.wid[0];
	t0 = mono_s();
	jn = gr_join_open(&o, err, sizeof(err));
	rc = jn != NULL ? gr_join_config(jn, &cfg, 600, err, sizeof(err)) : -1;
	/* 0.599: the wait counts whole milliseconds (clock_now_ms() truncates). */
	CHECK(jn != NULL && (rc == -EPIPE || rc == -ECONNRESET) && mono_s() - t0 >= 0.599 &&
		      atomic_load(&f.accepted) >= 2 && atomic_load(&f.answered) == 0,
	      "always hung up on: rc %d after %.3f s, %d connections: %s", rc, mono_s() - t0,
	      atomic_load(&f.accepted), err);
	gr_join_close(jn);
	fakectl_stop(&f);
}

/* A worker joining while nothing listens at the control process's address (it is
 * restarting: ECONNREFUSED) asks again until its wait ends: it gets the table once the
 * control process listens, and one refused for its whole wait fails with ECONNREFUSED
 * after it, the error saying how long it asked. */
static void
test_join_refused(void)
{
	static const struct {
		int listen_after_ms, wait_ms, want_rc;
		double least_s;
	} cases[] = {
		{500, 10000, 0, 0.45},
		{60000, 600, -ECONNREFUSED, 0.599}, /* never listens while it waits */
	};
	struct gr_join_opts o;
	struct job j;

	join_setup(&j, &o);
	for (size_t k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
		char err[GR_ERR_MAX] = "";
		struct gr_config cfg = {0};
		struct fakectl f;
		struct gr_join *jn;
		double t0 = mono_s(), took;
		int rc;

		fakectl_start_late(&f, cases[k].listen_after_ms, &j);
		o.control = f.path;
		jn = gr_join_open(&o, err, sizeof(err));
		rc = jn != NULL ? gr_join_config(jn, &cfg, cases[k].wait_ms, err, sizeof(err)) : -1;
		took = mono_s() - t0;
		CHECK(jn != NULL && rc == cases[k].want_rc && took >= cases[k].least_s,
		      "listening after %d ms, waiting %d ms: rc %d after %.3f s: %s",
		      cases[k].listen_after_ms, cases[k].wait_ms, rc, took, err);
		if (rc == 0)
			CHECK(cfg.job == 7 && atomic_load(&f.answered) >= 1, "job %u, answered %d",
			      cfg.job, atomic_load(&f.answered));
		else
			CHECK(strstr(err, "(asked for 600 ms)") != NULL, "the error: %s", err);
		gr_join_close(jn);
		fakectl_stop(&f);
	}
}

int
main(void)
{
	static const struct testutil_case tests[] = {
		{"configuration from a table", test_config_table},
		{"configuration checks", test_config_check},
		{"a dtype's rounding of a contribution", test_dtype_round},
		{"selective multicast: send, receive, loss, strays", test_mcast},
		{"selective multicast: lost chunks repaired (NACK_MCAST)", test_mcast_repair},
		{"multicast receive state comes with the configuration", test_mcast_recv_state},
		{"multicast window: rounds ahead, too far, late, skipped", test_mcast_window},
		{"multicast: an origin that pauses is probed, not asked for its round",
		 test_mcast_pause},
		{"multicast: what comes while sending is kept", test_mcast_send_drains},
		{"call arguments", test_call_args},
		{"fp32, three workers, two trees", test_fp32},
		{"fp16, bf16, odd sizes", test_fp16_bf16_odd},
		{"average", test_average},
		{"a tensor shorter than the job's", test_shorter},
		{"window", test_window},
		{"5% loss both ways", test_loss},
		{"ACK stops payload retransmission, T2 asks", test_held},
		{"a loss among a round's last chunks", test_tail_loss},
		{"silent gateway: -ETIMEDOUT", test_timeout},
		{"a timed-out call taken up again", test_resume},
		{"a call cancelled by its callback, taken up again", test_cancel},
		{"duplicates, stale rounds, garbage, probe", test_duplicates_and_strays},
		{"progress callback", test_progress},
		{"reconfiguration to a new epoch", test_reconfigure},
		{"results kept and given back after a failover", test_kept_results},
		{"two gateways at the site, each a shard", test_two_gateways},
		{"partial reduce: sets, stragglers", test_partial_reduce},
		{"RESULT with a contributor set of the wrong length", test_cset_length},
		{"a tree's window follows the round trip measured (follow_rtt)",
		 test_window_follows},
		{"joining: the control process hangs up, the worker asks again", test_join_hung_up},
		{"joining: nothing listens yet, the worker asks again", test_join_refused},
	};
	const char *q = getenv("GEOREDUCE_TEST_QUICK");

	quick = q != NULL && strcmp(q, "0") != 0;
	return testutil_run("test_client", "client", tests, TESTUTIL_N(tests));
}
