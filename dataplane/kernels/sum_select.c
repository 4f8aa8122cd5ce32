/* SPDX-License-Identifier: BSD-3-Clause
 *
 * Choice of the kernel variant (slow path, once at start), from CPU flags and the SIMD width
 * limit, as DPDK's lib/net/rte_net_crc.c does. rte_cpu_get_flag_enabled() reads CPUID and
 * needs no EAL. Variants compiled in are announced by meson: SUM_HAVE_AVX2, SUM_HAVE_AVX512.
 */
#include <stdbool.h>

#include <rte_cpuflags.h>
#include <rte_vect.h>

#include "sum.h"

static bool cpu_has(enum rte_cpu_flag_t flag)
{
	return rte_cpu_get_flag_enabled(flag) > 0;
}

const struct sum_kernels *sum_kernels_get(enum sum_isa isa)
{
	switch (isa) {
	case SUM_ISA_SCALAR:
		return &sum_kernels_scalar;
	case SUM_ISA_AVX2:
#ifdef SUM_HAVE_AVX2
		if (cpu_has(RTE_CPUFLAG_AVX2) && cpu_has(RTE_CPUFLAG_F16C))
			return &sum_kernels_avx2;
#endif
		return NULL;
	case SUM_ISA_AVX512:
#ifdef SUM_HAVE_AVX512
		if (cpu_has(RTE_CPUFLAG_AVX512F) && cpu_has(RTE_CPUFLAG_AVX512BW))
			return &sum_kernels_avx512;
#endif
		return NULL;
	case SUM_ISA_COUNT:
		break;
	}
	return NULL;
}

const struct sum_kernels *sum_kernels_select(unsigned int max_bitwidth)
{
	const struct sum_kernels *k;

	for (int isa = SUM_ISA_COUNT - 1; isa > SUM_ISA_SCALAR; isa--) {
		k = sum_kernels_get((enum sum_isa)isa);
		if (k != NULL && k->bitwidth <= max_bitwidth)
			return k;
	}
	return &sum_kernels_scalar;
}

const struct sum_kernels *sum_kernels_select_eal(void)
{
	unsigned int bw = rte_vect_get_max_simd_bitwidth();

	/* 0 before rte_eal_init(); EAL would then set its default. */
	if (bw == 0)
		bw = RTE_VECT_DEFAULT_SIMD_BITWIDTH;
	return sum_kernels_select(bw);
}
