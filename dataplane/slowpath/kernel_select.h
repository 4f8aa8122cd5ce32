/* SPDX-License-Identifier: BSD-3-Clause
 *
 * The dataplane's choice of the kernel variant (lib/kernels/sum.h) under EAL's limits.
 */
#ifndef GEOREDUCE_DP_KERNEL_SELECT_H
#define GEOREDUCE_DP_KERNEL_SELECT_H

#include "sum.h"

/**
 * sum_kernels_select(rte_vect_get_max_simd_bitwidth()): honours EAL's
 * --force-max-simd-bitwidth. EAL's default limit on x86 is 256 bits, so AVX-512 is used only
 * with --force-max-simd-bitwidth=512. Before rte_eal_init() (limit reads 0) EAL's default,
 * 256, is assumed. Call once at start, from the main lcore; never NULL.
 */
const struct sum_kernels *sum_kernels_select_eal(void);

#endif
