/* SPDX-License-Identifier: BSD-3-Clause
 *
 * The state of CREW's training-progress simulator (crew_sim.c) and its links
 * (crew_simlink.c). Every directed link serves its transfers first-come first-served at
 * its full bandwidth, one at a time; a transfer whose direct link is down goes over the
 * best two-hop path. Transfers join, leave and change size while the run goes on, as
 * groups form and rebalance and links fail. Events go through the planner's event queue
 * (eventq.h), ties in time first in, first out.
 *
 * This is not the AllReduce simulator's link model (sim_engine.c: flows that share a link
 * max-min fairly, over a schedule compiled before the run, with latency): CREW's model
 * has bandwidth only and one transfer per link at a time, as in CREW's evaluation.
 * Internal to the planner; a simulation runs on the caller's thread and owns its state.
 */
#ifndef GEOREDUCE_CREW_SIMLINK_H
#define GEOREDUCE_CREW_SIMLINK_H

#include <errno.h>
#include <stddef.h>
#include <stdint.h>

#include "crew.h"
#include "eventq.h"

enum {
	X_PRE,
	X_SCATTER,
	X_BCAST
};
enum {
	X_QUEUED,
	X_DONE,
	X_GONE
};
enum {
	EV_COMPUTE,
	EV_LINK,
	EV_AGG,
	EV_FAIL
};

/* Upper bound on transfers in one run (memory stays bounded). */
#define SIM_MAX_XFERS (8u << 20)

struct xfer {
	double left;       /* bytes to send; for a link's head, as of the link's start */
	double total;      /* bytes the hop carries */
	int src, dst, fin; /* this hop, and the final destination */
	int op, chunk, k;  /* operation, chunk (its original site), member index */
	int next;          /* next in the link's queue, -1 */
	unsigned char kind, state;
};

struct op;

struct crew_sim {
	int n;
	enum crew_scheme scheme;
	const struct crew_sim_opts *o;
	struct crew_sim_result *r;
	double now;
	double *g;        /* n * n Gbit/s now: failed links are 0 */
	double *queued;   /* n * n bytes in each link's queue */
	int *head, *tail; /* per link: FIFO of transfers */
	double *start;    /* per link: when the head began (or was resized) */
	unsigned *ver;    /* per link: invalidates stale completion events */
	struct xfer *x;
	size_t nx, capx;
	struct eventq events; /* key: seq, ties in time go first in, first out */
	uint64_t seq;
	struct op **ops;
	int nops, capops;
	int *iter; /* per worker: next iteration */
	double *ready_at;
	int *pool, npool; /* ready workers waiting for a group, in order */
	int *pre;         /* n * n: live pre-scatter transfer of w to site i, or -1 */
	double *pre_done; /* n * n: pre-scatter bytes already delivered */
	uint64_t *a2a;    /* all-to-all shares the pre-scatter uses */
	double *cpu_free; /* per site: when its aggregation queue drains */
	double *eff;      /* scratch: two-hop effective matrix */
	double *credit;   /* scratch: p * n */
	double op_sum, wait_sum;
	int waits, nb;
	int *bucket;
	int err;
};

/** Queue an event at time t; on failure s->err is set. */
static inline void
ev_push(struct crew_sim *s, double t, int type, int a, int b, unsigned ver)
{
	struct eventq_ev e = {.t = t,
			      .key = s->seq++,
			      .type = (uint32_t)type,
			      .a = (uint32_t)a,
			      .b = (uint32_t)b,
			      .ver = ver};

	if (eventq_push(&s->events, &e) != 0)
		s->err = -ENOMEM;
}

/** The head of link l starts (or restarts) sending now. */
void crew_link_start(struct crew_sim *s, int l);

/** Bytes transfer id still has to send now. */
double crew_link_left(const struct crew_sim *s, int id);

/** Take a queued transfer off its link. */
void crew_link_remove(struct crew_sim *s, int id);

/** Give a queued transfer a new remaining size (the head restarts from now). */
void crew_link_resize(struct crew_sim *s, int id, double left);

/**
 * Queue bytes from src towards fin: directly, or over the best two-hop path when the
 * direct link is down. Returns the transfer id, or -1 if fin cannot be reached.
 */
int crew_link_send(struct crew_sim *s, int kind, int src, int fin, double bytes, int op, int chunk,
		   int k);

#endif
