/* SPDX-License-Identifier: BSD-3-Clause
 *
 * The AllReduce simulator's engine (sim_engine.c): the transfers, flows and directed
 * links of a compiled schedule, and the event loop that runs them to completion. sim.c
 * compiles tree plans, rings and parameter servers into it; the rest of the planner
 * uses sim.h.
 *
 * A simulation lives in one struct sim, on the caller's thread: sim_init(), then
 * sim_flow_add(), sim_xfer_add() and sim_dep_add() to build the schedule, sim_run(),
 * sim_fini().
 */
#ifndef GEOREDUCE_SIM_ENGINE_H
#define GEOREDUCE_SIM_ENGINE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "eventq.h"
#include "sim.h"
#include "topo.h"

#define SIM_NONE UINT32_MAX /* no transfer / no flow */

struct sim_flow {
	uint32_t dl;         /* directed link */
	uint32_t head, tail; /* FIFO of ready transfers, linked through sim.x_next */
	uint32_t cur;        /* transfer being transmitted, or SIM_NONE */
	uint32_t inflight;   /* transfers transmitting or propagating */
	bool dirty;          /* on sim.dirty_f: may be able to start a transfer */
	double cap;          /* bytes/s, INFINITY if not paced */
	double rate;         /* current allocation while transmitting, bytes/s */
	double rem;          /* bytes of cur left to transmit */
};

struct sim_dlink {
	double cap;       /* bytes/s */
	double delay;     /* latency + alpha, s */
	double last;      /* time the remaining bytes of its flows were computed at */
	uint32_t *active; /* transmitting flows, by cap ascending (slice of act_pool) */
	uint32_t n_active;
	uint32_t n_flows; /* flows on this link: size of the active slice */
	uint32_t ver;     /* bumped on every allocation change (wraps harmlessly) */
	uint32_t next;    /* flow finishing first under the current allocation */
	bool dirty;       /* on sim.dirty_l: allocation must be recomputed */
};

struct sim {
	const struct topo *t;
	double alpha_s;
	uint32_t window;

	uint32_t n_dl; /* 2 * n_links: d = 2 * link + (from == links[link].a ? 0 : 1) */
	struct sim_dlink *dl;

	uint32_t n_flows, cap_flows;
	struct sim_flow *flows;

	/* Transfers, structure of arrays. Joins have x_flow == SIM_NONE. */
	uint32_t n_x, cap_x;
	uint64_t n_link_x; /* transfers that are not joins */
	double *x_bytes;
	uint32_t *x_flow;
	uint32_t *x_deps;     /* unmet dependencies */
	uint32_t *x_next;     /* next in its flow's FIFO */
	uint32_t *x_succ_off; /* successors of x: x_succ[x_succ_off[x] .. x_succ_off[x+1]) */
	uint32_t *x_succ;

	/* Dependency edges while building (turned into x_succ_off / x_succ by sim_run). */
	size_t n_e, cap_e;
	uint32_t *e_from, *e_to;

	/* Event loop state. Events: a = transfer id, or SIM_EV_LINK | directed link
	 * (sim_engine.c), also the key (ties in time: arrivals by transfer id, then links by
	 * id); ver = the link version a completion was computed for. */
	struct eventq events;
	uint32_t *ready; /* transfers that became ready at `now` */
	size_t n_ready, cap_ready;
	uint32_t *dirty_f, n_dirty_f;
	uint32_t *dirty_l, n_dirty_l;
	uint32_t *act_pool;
	double now, last_arrival;
	uint64_t n_events, n_arrived;
};

/** 0 if alpha_s is finite and >= 0 and window >= 0, else -EINVAL. */
int sim_check_params(const struct sim_params *sp);

/**
 * An empty simulation over the directed links of t (*s is zeroed first, so sim_fini() is
 * safe after a failure). Returns 0 or -ENOMEM.
 */
int sim_init(struct sim *s, const struct topo *t, const struct sim_params *sp);

void sim_fini(struct sim *s);

/** Next capacity for a growing array of `cap` entries that must hold `need`. */
size_t sim_grow_to(size_t cap, size_t need);

/**
 * Grow the array that the pointer at pp points to (elements of `size` bytes) to n
 * elements: 0, or -ENOMEM with the array as it was. pp is the address of any object
 * pointer (its value is copied in and out as bytes, so its type does not matter).
 */
int sim_regrow(void *pp, size_t n, size_t size);

/**
 * Add a flow on the link u -> v with a rate cap in bytes/s (INFINITY: none).
 * Returns the flow id, or -EINVAL if u and v are not adjacent, or -ENOMEM.
 */
int sim_flow_add(struct sim *s, int u, int v, double cap);

/**
 * Add a transfer of `bytes` on flow `flow`, or a join if flow is SIM_NONE.
 * Its id goes to *id. Returns 0, -E2BIG or -ENOMEM.
 */
int sim_xfer_add(struct sim *s, uint32_t flow, double bytes, uint32_t *id);

/** Transfer `succ` cannot start before transfer `pred` has arrived. Returns 0 or -ENOMEM. */
int sim_dep_add(struct sim *s, uint32_t pred, uint32_t succ);

/**
 * Run the compiled schedule to completion and fill *res. Returns 0, -ENOMEM, or -EDEADLK
 * if transfers were left behind (a dependency cycle).
 */
int sim_run(struct sim *s, struct sim_result *res);

#endif
