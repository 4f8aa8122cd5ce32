/* SPDX-License-Identifier: BSD-3-Clause
 *
 * georeduce-bench-dataplane (bench_dataplane.c describes the scenario): what its files
 * share, the options, one point (its ports, dataplane and frames) and the functions that
 * set a point up, check its RESULT copies and parse the options. All on the main lcore, the
 * set-up and the checks outside the measured intervals.
 */
#ifndef GEOREDUCE_BENCH_DATAPLANE_H
#define GEOREDUCE_BENCH_DATAPLANE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "wire.h"

#define PROG "georeduce-bench-dataplane"
#define LIST_MAX 16
#define REPEAT_MAX 101

struct dp;
struct dp_lcore;
struct rte_mbuf;
struct rte_mempool;
struct rte_ring;
struct sum_kernels;

struct opts {
	unsigned int payload[LIST_MAX], n_payload;
	unsigned int fanin[LIST_MAX], n_fanin;
	enum wire_dtype dtype[3];
	unsigned int n_dtype;
	double seconds;
	unsigned int repeat;
	unsigned int window;
	unsigned int burst;
	unsigned int mtu;               /* 0: 1500 when the chunk fits, else 9000 */
	bool worker_order;              /* feed worker by worker instead of chunk by chunk */
	bool udp_csum;
	bool json;
};

/* One point: its ports, dataplane and frames. */
struct point {
	unsigned int payload, fanin, window, slots, elems, frame_len, mtu;
	enum wire_dtype dtype;
	bool udp_csum;
	bool worker_order;
	unsigned int burst;
	struct rte_ring *rx, *tx;
	uint16_t port_id;
	bool port_made;
	struct dp *dp;
	bool dp_up;
	struct dp_lcore *lc;
	struct rte_mempool *pool;
	struct rte_mbuf **acc[3];       /* [round % 3][chunk]: worker 0's frames */
	struct rte_mbuf **shared;       /* [chunk * fanin + w], w >= 1: workers 1 .. F-1 */
	struct rte_mbuf **seq[3];       /* [round % 3]: the round's frames in feed order */
	uint8_t *tmpl;                  /* [chunk]: worker 0's frame as built */
	uint32_t round;                 /* of the last round run; frames built with 0 */
	const struct sum_kernels *scalar;
	float *scratch;                 /* result payload widened to fp32 */
	float *sink;                    /* io-forward + sum: the fp32 accumulator */
	uint8_t *pkt;                   /* a result copy made contiguous */
	uint8_t *seen;                  /* [chunk * fanin + w]: result copies of a round */
};

/**
 * Parse the bench's options (argv[0] stands for the program, EAL's are gone) into o:
 * defaults first, --quick where it applies. -1 after a message on stderr; --help prints the
 * usage and exits.
 */
int parse_opts(int argc, char **argv, struct opts *o);

/**
 * Set up point x (its payload, fan-in, window, dtype, slots, elems, frame_len, mtu,
 * udp_csum, worker_order and burst set): the net_ring port, the dataplane with the
 * point's table installed and active, and every frame. On failure a message in err;
 * point_teardown() frees what was made either way.
 */
int point_setup(struct point *x, char *err, size_t errlen);

/** Free what point_setup() made, the dataplane first (its slots drop their frames). */
void point_teardown(struct point *x);

/** Check one RESULT copy of round `round` completely and count it in x->seen. */
int check_result(struct point *x, struct rte_mbuf *m, uint32_t round, char *err,
		 size_t errlen);

#endif
