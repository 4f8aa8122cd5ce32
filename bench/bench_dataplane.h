/* SPDX-License-Identifier: BSD-3-Clause
 *
 * georeduce-bench-dataplane (bench_dataplane.c describes the scenario): the types its
 * files share, the options and one point (its ports, dataplane and frames). The main lcore.
 */
#ifndef GEOREDUCE_BENCH_DATAPLANE_H
#define GEOREDUCE_BENCH_DATAPLANE_H

#include <stdbool.h>
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
	unsigned int mtu;  /* 0: 1500 when the chunk fits, else 9000 */
	bool worker_order; /* feed worker by worker instead of chunk by chunk */
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
	struct rte_mbuf **acc[3]; /* [round % 3][chunk]: worker 0's frames */
	struct rte_mbuf **shared; /* [chunk * fanin + w], w >= 1: workers 1 .. F-1 */
	struct rte_mbuf **seq[3]; /* [round % 3]: the round's frames in feed order */
	uint8_t *tmpl;            /* [chunk]: worker 0's frame as built */
	uint32_t round;           /* of the last round run; frames built with 0 */
	const struct sum_kernels *scalar;
	float *scratch; /* result payload widened to fp32 */
	float *sink;    /* io-forward + sum: the fp32 accumulator */
	uint8_t *pkt;   /* a result copy made contiguous */
	uint8_t *seen;  /* [chunk * fanin + w]: result copies of a round */
};

#endif
