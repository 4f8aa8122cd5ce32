/* SPDX-License-Identifier: BSD-3-Clause
 *
 * Choice of the kernel variant (slow path, once at start), from CPU flags and a SIMD width
 * limit. No DPDK: the worker library links the kernels too; the dataplane's EAL limit is
 * applied in dataplane/slowpath/kernel_select.c. GCC's CPU builtins read CPUID. Variants
 * compiled in are announced by meson: SUM_HAVE_AVX2, SUM_HAVE_AVX512.
 */
#include <stdbool.h>

#include "sum.h"

#ifdef SUM_HAVE_AVX2
static bool
cpu_avx2(void)
{
	__builtin_cpu_init();
	return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("f16c") &&
	       __builtin_cpu_supports("fma");
}
#endif

#ifdef SUM_HAVE_AVX512
static bool
cpu_avx512(void)
{
	__builtin_cpu_init();
	return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw");
}
#endif

const struct sum_kernels *
sum_kernels_get(enum sum_isa isa)
{
	switch (isa) {
	case SUM_ISA_SCALAR:
		return &sum_kernels_scalar;
	case SUM_ISA_AVX2:
#ifdef SUM_HAVE_AVX2
		if (cpu_avx2())
			return &sum_kernels_avx2;
#endif
		return NULL;
	case SUM_ISA_AVX512:
#ifdef SUM_HAVE_AVX512
		if (cpu_avx512())
			return &sum_kernels_avx512;
#endif
		return NULL;
	case SUM_ISA_COUNT:
		break;
	}
	return NULL;
}

const struct sum_kernels *
sum_kernels_select(unsigned int max_bitwidth)
{
	const struct sum_kernels *k;

	for (int isa = SUM_ISA_COUNT - 1; isa > SUM_ISA_SCALAR; isa--) {
		k = sum_kernels_get((enum sum_isa)isa);
		if (k != NULL && k->bitwidth <= max_bitwidth)
			return k;
	}
	return &sum_kernels_scalar;
}
