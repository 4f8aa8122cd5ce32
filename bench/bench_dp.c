/* SPDX-License-Identifier: BSD-3-Clause
 *
 * The dataplane configuration the benchmarks share (bench_dp.h). Main lcore, before
 * dp_setup().
 */
#include <stdint.h>

#include "bench_dp.h"
#include "slowpath/slowpath.h"

void
bench_dp_one_port(struct dp_config *cfg, unsigned int lcore, uint16_t port, uint32_t ipv4)
{
	cfg->n_lcores = 1;
	cfg->lcore_ids[0] = lcore;
	cfg->n_ports = 1;
	cfg->port_ids[0] = port;
	cfg->addr[0].ipv4 = ipv4;
	cfg->addr[0].prefix_len = 16;
}
