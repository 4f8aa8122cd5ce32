/* SPDX-License-Identifier: BSD-3-Clause
 *
 * The dataplane's choice of the kernel variant: sum_kernels_select() under EAL's SIMD width
 * limit (--force-max-simd-bitwidth). The only part of the kernels
 * that needs DPDK, and so the only one that lives in dataplane/ (the kernels: lib/kernels/).
 */
#include <rte_vect.h>

#include "slowpath/kernel_select.h"

const struct sum_kernels *
sum_kernels_select_eal(void)
{
	unsigned int bw = rte_vect_get_max_simd_bitwidth();

	/* 0 before rte_eal_init(); EAL would then set its default. */
	if (bw == 0)
		bw = RTE_VECT_DEFAULT_SIMD_BITWIDTH;
	return sum_kernels_select(bw);
}
