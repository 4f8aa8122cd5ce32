/* SPDX-License-Identifier: BSD-3-Clause
 *
 * georeduce-bench-dataplane: a point's set-up, teardown and the check of its RESULT copies
 * (bench_dataplane_point.c). The main lcore, outside the measured intervals.
 */
#ifndef GEOREDUCE_BENCH_DATAPLANE_POINT_H
#define GEOREDUCE_BENCH_DATAPLANE_POINT_H

#include <stddef.h>
#include <stdint.h>

#include "bench_dataplane.h"

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
int check_result(struct point *x, struct rte_mbuf *m, uint32_t round, char *err, size_t errlen);

#endif
