/* SPDX-License-Identifier: BSD-3-Clause
 *
 * What the benchmarks that run the dataplane in their own process share (bench_dataplane,
 * bench_seal, georeduce-bench's ring mode): the configuration of a gateway of one worker
 * lcore and one port. Main lcore, before dp_setup().
 */
#ifndef GEOREDUCE_BENCH_DP_H
#define GEOREDUCE_BENCH_DP_H

#include <stdint.h>

#include "slowpath/slowpath.h"

/** One worker lcore and one ethdev port, the port's address ipv4/16. */
void bench_dp_one_port(struct dp_config *cfg, unsigned int lcore, uint16_t port, uint32_t ipv4);

#endif
