/* SPDX-License-Identifier: BSD-3-Clause
 *
 * georeduce-bench-kernels: throughput of the summation kernels (lib/kernels/sum.h) for
 * every variant the CPU supports, in GB/s of input, next to memcpy of the same bytes.
 *
 * Input is the src operand of a kernel (fp32: 4 bytes per element; fp16/bf16: 2 bytes; an
 * MX chunk: 33 bytes per block of 32, 17 for mxfp4), or the fp32 accumulator for narrow
 * (and MX encode). Every row also gives the GB/s of fp32 output elements (4 bytes per
 * element of the accumulator read or written), the unit in which an MX decode-add compares
 * with sum_f32: the same elements summed, from fewer input bytes. Each row is measured with
 * input buffers of 16 KiB (L1), 512 KiB (L2) and 256 MiB (DRAM; MX decode 64 MiB); the
 * output buffer (fp32 acc, or the 16-bit result of narrow) comes on top. A sample times a
 * batch of calls long enough for clock_gettime to be exact (at least one call); the best and
 * the median sample are reported.
 *
 * No EAL: variants are taken with sum_kernels_get(). The dataplane itself uses
 * sum_kernels_select_eal(), which honours EAL's SIMD limit (256 bits by default on x86;
 * AVX-512 only with --force-max-simd-bitwidth=512).
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#include "bench_util.h"
#include "cli.h"
#include "clock.h"
#include "slowpath/kernel_select.h"
#include "sum.h"

#define KIB ((size_t)1024)
#define MIB (1024 * KIB)
#define SAMPLES_DEFAULT 15
#define SAMPLES_MAX 1001
#define SAMPLE_NS 2000000.0 /* batch length of one sample in caches: 2 ms */
#define SRC_SKEW 1088       /* src vs dst page offset: no 4 KiB aliasing between them */

enum kern {
	K_MEMCPY,
	K_SUM_F32,
	K_WIDEN_ADD_F16,
	K_WIDEN_F16,
	K_NARROW_F16,
	K_WIDEN_ADD_BF16,
	K_WIDEN_BF16,
	K_NARROW_BF16,
	K_MX_WIDEN_ADD_INT8,
	K_MX_WIDEN_ADD_FP8,
	K_MX_WIDEN_ADD_FP4,
	K_MX_WIDEN_INT8,
	K_MX_NARROW_INT8,
	K_MX_NARROW_FP8,
	K_MX_NARROW_FP4,
	K_COUNT,
};

static const char *const kern_names[K_COUNT] = {
	"memcpy",           "sum_f32",          "widen_add_f16",
	"widen_f16",        "narrow_f16",       "widen_add_bf16",
	"widen_bf16",       "narrow_bf16",      "mx_widen_add_int8",
	"mx_widen_add_fp8", "mx_widen_add_fp4", "mx_widen_int8",
	"mx_narrow_int8",   "mx_narrow_fp8",    "mx_narrow_fp4",
};

struct level {
	const char *name;
	size_t bytes;    /* of input */
	int samples_div; /* DRAM: fewer samples, each one call */
};

static const struct level levels[] = {
	{"L1", 16 * KIB, 1},
	{"L2", 512 * KIB, 1},
	{"DRAM", 256 * MIB, 3},
};
#define N_LEVELS (sizeof(levels) / sizeof(levels[0]))

struct result {
	enum kern k;
	const char *variant;
	double best_gbps[N_LEVELS];
	double median_gbps[N_LEVELS];
	double best_out_gbps[N_LEVELS]; /* fp32 elements of the acc, 4 bytes each */
};

#define PROG "georeduce-bench-kernels"

struct opts {
	bool json;
	bool no_dram;
	int samples;
	size_t offset;
};

/* Through a volatile pointer so that the copy into a never-read buffer is not elided. */
static void *(*volatile memcpy_fn)(void *, const void *, size_t) = memcpy;

/* The MX format of an MX kernel, SUM_MX_COUNT for the others; decode or encode. */
static enum sum_mx
mx_fmt(enum kern k)
{
	switch (k) {
	case K_MX_WIDEN_ADD_INT8:
	case K_MX_WIDEN_INT8:
	case K_MX_NARROW_INT8:
		return SUM_MX_INT8;
	case K_MX_WIDEN_ADD_FP8:
	case K_MX_NARROW_FP8:
		return SUM_MX_FP8;
	case K_MX_WIDEN_ADD_FP4:
	case K_MX_NARROW_FP4:
		return SUM_MX_FP4;
	default:
		return SUM_MX_COUNT;
	}
}

static bool
mx_encode(enum kern k)
{
	return k == K_MX_NARROW_INT8 || k == K_MX_NARROW_FP8 || k == K_MX_NARROW_FP4;
}

/* Input bytes of one unit (an element, or an MX block) and the elements it holds. */
static size_t
src_unit(enum kern k, size_t *elems)
{
	*elems = 1;
	if (mx_fmt(k) != SUM_MX_COUNT) {
		*elems = SUM_MX_BLOCK;
		return mx_encode(k) ? 4 * SUM_MX_BLOCK : sum_mx_elem_bytes(mx_fmt(k)) + 1;
	}
	switch (k) {
	case K_MEMCPY:
		return 4; /* counted as fp32 elements for the output column */
	case K_SUM_F32:
	case K_NARROW_F16:
	case K_NARROW_BF16:
		return 4;
	default:
		return 2;
	}
}

static void
run(const struct sum_kernels *ks, enum kern k, void *dst, const void *src, size_t bytes)
{
	size_t per, unit = src_unit(k, &per), n = bytes / unit;

	if (mx_fmt(k) != SUM_MX_COUNT) {
		if (k == K_MX_WIDEN_INT8)
			ks->mx_widen[SUM_MX_INT8](dst, src, n);
		else if (mx_encode(k))
			ks->mx_narrow[mx_fmt(k)](dst, src, n);
		else
			ks->mx_widen_add[mx_fmt(k)](dst, src, n);
		return;
	}
	n = k == K_MEMCPY ? bytes : n;
	switch (k) {
	case K_MEMCPY:
		memcpy_fn(dst, src, bytes);
		break;
	case K_SUM_F32:
		ks->sum_f32(dst, src, n);
		break;
	case K_WIDEN_ADD_F16:
		ks->widen_add_f16(dst, src, n);
		break;
	case K_WIDEN_F16:
		ks->widen_f16(dst, src, n);
		break;
	case K_NARROW_F16:
		ks->narrow_f16(dst, src, n);
		break;
	case K_WIDEN_ADD_BF16:
		ks->widen_add_bf16(dst, src, n);
		break;
	case K_WIDEN_BF16:
		ks->widen_bf16(dst, src, n);
		break;
	case K_NARROW_BF16:
		ks->narrow_bf16(dst, src, n);
		break;
	default:
		break;
	}
}

/* Time one (kernel, variant, size): best and median GB/s over `samples` samples, and the
 * best GB/s of fp32 output elements. */
static void
measure(const struct sum_kernels *ks, enum kern k, void *dst, const void *src, size_t bytes,
	int samples, double *best, double *median, double *best_out)
{
	size_t per, unit = src_unit(k, &per);

	double t[SAMPLES_MAX], t0, one;
	long iters;

	run(ks, k, dst, src, bytes); /* warm caches and TLB */
	t0 = clock_now_ns();
	run(ks, k, dst, src, bytes);
	one = clock_now_ns() - t0;
	iters = one >= SAMPLE_NS ? 1 : (long)(SAMPLE_NS / (one > 1 ? one : 1));
	for (int s = 0; s < samples; s++) {
		t0 = clock_now_ns();
		for (long i = 0; i < iters; i++)
			run(ks, k, dst, src, bytes);
		t[s] = (clock_now_ns() - t0) / (double)iters;
	}
	bench_sort(t, (size_t)samples);
	*best = (double)bytes / t[0]; /* bytes per ns = GB/s */
	*median = (double)bytes / t[samples / 2];
	*best_out = (double)(bytes / unit * per * 4) / t[0];
}

/* Input bytes of a kernel at a level: MX decode reads a quarter of the DRAM level (its
 * output is up to 7.5 times its input), still far beyond the caches. */
static size_t
in_bytes(enum kern k, size_t l)
{
	bool mx_decode = mx_fmt(k) != SUM_MX_COUNT && !mx_encode(k);

	return mx_decode && l == N_LEVELS - 1 ? levels[l].bytes / 4 : levels[l].bytes;
}

/* MX decode input: random element bytes (E4M3 NaN codes made 448), the scales of a chunk
 * of `bytes` bytes all 2^-7: normal values, as a chunk of gradients would be. */
static void
fill_mx(enum kern k, uint8_t *mx, size_t bytes)
{
	size_t eb = sum_mx_elem_bytes(mx_fmt(k)), nb = bytes / (eb + 1);
	uint64_t x = 0x2545f4914f6cdd1dull;

	for (size_t i = 0; i < nb * eb; i++) {
		x ^= x >> 12;
		x ^= x << 25;
		x ^= x >> 27;
		mx[i] = (uint8_t)(x >> 32);
		if (mx_fmt(k) == SUM_MX_FP8 && (mx[i] & 0x7f) == 0x7f)
			mx[i] = (uint8_t)(mx[i] - 1);
	}
	memset(mx + nb * eb, 120, nb);
}

/*
 * src: 16-bit words sign | 0x3c00 | 10 random bits, which read as normal numbers of moderate
 * size whether taken as fp16 (1 .. 2), bf16 (2^-7 .. 2^-5) or, in pairs, fp32 (about 2^-7):
 * no subnormal (slow on some CPUs), no overflow over millions of adds. dst: zero.
 */
static void
fill_inputs(uint8_t *src, uint8_t *dst, size_t src_bytes, size_t dst_bytes)
{
	uint64_t x = 0x9e3779b97f4a7c15ull;

	for (size_t i = 0; i + 1 < src_bytes; i += 2) {
		uint16_t h;

		x ^= x >> 12;
		x ^= x << 25;
		x ^= x >> 27;
		h = (uint16_t)((x >> 20) & 0x83ff) | 0x3c00;
		memcpy(src + i, &h, sizeof(h));
	}
	memset(dst, 0, dst_bytes);
}

static void *
alloc_big(size_t bytes)
{
	void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED)
		return NULL;
	(void)madvise(p, bytes, MADV_HUGEPAGE); /* best effort: fewer TLB misses */
	return p;
}

static void
usage(FILE *f)
{
	fprintf(f,
		"usage: georeduce-bench-kernels [--json] [--samples N] [--offset BYTES] "
		"[--no-dram]\n"
		"\n"
		"Throughput of the gradient summation kernels, in GB/s of input, for every\n"
		"variant this CPU supports, with input buffers of 16 KiB (L1), 512 KiB (L2) and\n"
		"256 MiB (DRAM), next to memcpy of the same bytes. Best and median of N samples.\n"
		"\n"
		"  --json          one JSON document on stdout instead of the table\n"
		"  --samples N     samples per measurement, 3 .. %d (default %d; DRAM uses N/3)\n"
		"  --offset BYTES  misalign every buffer by BYTES from a 64-byte boundary, "
		"0 .. 63\n"
		"                  (default 0; packet payloads are at arbitrary offsets)\n"
		"  --no-dram       skip the 256 MiB measurements (about 3/4 of the run time)\n"
		"  --help          this text\n",
		SAMPLES_MAX, SAMPLES_DEFAULT);
}

static int
parse_opts(int argc, char **argv, struct opts *o)
{
	static const struct option longopts[] = {
		{"json", no_argument, NULL, 'j'},         {"samples", required_argument, NULL, 's'},
		{"offset", required_argument, NULL, 'o'}, {"no-dram", no_argument, NULL, 'd'},
		{"help", no_argument, NULL, 'h'},         {NULL, 0, NULL, 0},
	};
	int v;
	int c;

	o->json = false;
	o->no_dram = false;
	o->samples = SAMPLES_DEFAULT;
	o->offset = 0;
	while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		switch (c) {
		case 'j':
			o->json = true;
			break;
		case 's':
			if (cli_int(PROG, "samples", optarg, 3, SAMPLES_MAX, &o->samples) < 0)
				return -EINVAL;
			break;
		case 'o':
			if (cli_int(PROG, "offset", optarg, 0, 63, &v) < 0)
				return -EINVAL;
			o->offset = (size_t)v;
			break;
		case 'd':
			o->no_dram = true;
			break;
		case 'h':
			usage(stdout);
			exit(0);
		default:
			usage(stderr);
			return -EINVAL;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "georeduce-bench-kernels: unexpected argument '%s'\n",
			argv[optind]);
		return -EINVAL;
	}
	return 0;
}

static void
print_table(const struct opts *o, const struct result *res, size_t n_res)
{
	printf("GB/s of input (src bytes; fp32 acc bytes for narrow), best / median of %d samples"
	       " (DRAM: %d), buffers at +%zu bytes from a 64-byte boundary\n",
	       o->samples, o->samples / levels[N_LEVELS - 1].samples_div, o->offset);
	printf("%-17s %-7s", "kernel", "variant");
	for (size_t l = 0; l < N_LEVELS; l++) {
		char head[32];

		if (o->no_dram && l == N_LEVELS - 1)
			continue;
		snprintf(head, sizeof(head), "%s %zu %s", levels[l].name,
			 levels[l].bytes >= MIB ? levels[l].bytes / MIB : levels[l].bytes / KIB,
			 levels[l].bytes >= MIB ? "MiB" : "KiB");
		printf("  %-15s", head);
	}
	printf("  %s\n", "fp32 out GB/s L1 / L2 (best)");
	for (size_t r = 0; r < n_res; r++) {
		printf("%-17s %-7s", kern_names[res[r].k], res[r].variant);
		for (size_t l = 0; l < N_LEVELS; l++) {
			char cell[32];

			if (o->no_dram && l == N_LEVELS - 1)
				continue;
			snprintf(cell, sizeof(cell), "%6.1f / %6.1f", res[r].best_gbps[l],
				 res[r].median_gbps[l]);
			printf("  %-15s", cell);
		}
		printf("  %6.1f / %6.1f\n", res[r].best_out_gbps[0], res[r].best_out_gbps[1]);
	}
}

static void
print_json(const struct opts *o, const struct result *res, size_t n_res)
{
	const struct sum_kernels *eal_default = sum_kernels_select(256);
	const struct sum_kernels *eal_512 = sum_kernels_select(512);

	printf("{\n  \"unit\": \"GB/s of input\",\n  \"samples\": %d,\n  \"offset\": %zu,\n",
	       o->samples, o->offset);
	printf("  \"selected_eal_default\": \"%s\",\n  \"selected_simd_512\": \"%s\",\n",
	       eal_default->name, eal_512->name);
	printf("  \"results\": [");
	for (size_t r = 0; r < n_res; r++) {
		for (size_t l = 0; l < N_LEVELS; l++) {
			if (o->no_dram && l == N_LEVELS - 1)
				continue;
			printf("%s\n    {\"kernel\": \"%s\", \"variant\": \"%s\", "
			       "\"level\": \"%s\", \"input_bytes\": %zu, \"gbps_best\": %.3f, "
			       "\"gbps_median\": %.3f, "
			       "\"out_elem_gbps_best\": %.3f}",
			       r == 0 && l == 0 ? "" : ",", kern_names[res[r].k], res[r].variant,
			       levels[l].name, in_bytes(res[r].k, l), res[r].best_gbps[l],
			       res[r].median_gbps[l], res[r].best_out_gbps[l]);
		}
	}
	printf("\n  ]\n}\n");
}

int
main(int argc, char **argv)
{
	const struct sum_kernels *variants[SUM_ISA_COUNT];
	struct result res[1 + SUM_ISA_COUNT * (K_COUNT - 1)];
	size_t n_var = 0, n_res = 0;
	size_t src_bytes = levels[N_LEVELS - 1].bytes + SRC_SKEW + 64;
	/* fp32 acc of fp16 input; MX decode reads a quarter of the DRAM level's bytes, so
	 * that its acc (128 bytes per 17 of mxfp4) fits too. */
	size_t dst_bytes = 2 * levels[N_LEVELS - 1].bytes + 64;
	uint8_t *src_buf, *dst_buf, *mx_buf;
	struct opts o;
	double t_start = clock_now_ns();

	if (parse_opts(argc, argv, &o) < 0)
		return CLI_EXIT_USAGE;
	for (int isa = 0; isa < SUM_ISA_COUNT; isa++) {
		variants[n_var] = sum_kernels_get((enum sum_isa)isa);
		if (variants[n_var] != NULL)
			n_var++;
	}
	src_buf = alloc_big(src_bytes);
	dst_buf = alloc_big(dst_bytes);
	mx_buf = alloc_big(src_bytes);
	if (src_buf == NULL || dst_buf == NULL || mx_buf == NULL) {
		fprintf(stderr, "georeduce-bench-kernels: cannot map %zu MiB of buffers\n",
			(src_bytes + dst_bytes) / MIB);
		return 1;
	}
	fill_inputs(src_buf, dst_buf, src_bytes, dst_bytes);

	if (!o.json) {
		printf("variants on this CPU:");
		for (size_t v = 0; v < n_var; v++)
			printf(" %s", variants[v]->name);
		printf("; the dataplane selects %s under EAL's default SIMD limit (256 bits), "
		       "%s with --force-max-simd-bitwidth=512\n",
		       sum_kernels_select(256)->name, sum_kernels_select(512)->name);
	}

	for (enum kern k = 0; k < K_COUNT; k++) {
		for (size_t v = 0; v < (k == K_MEMCPY ? 1 : n_var); v++) {
			struct result *r = &res[n_res++];

			r->k = k;
			r->variant = k == K_MEMCPY ? "libc" : variants[v]->name;
			for (size_t l = 0; l < N_LEVELS; l++) {
				int samples = o.samples / levels[l].samples_div;

				r->best_gbps[l] = r->median_gbps[l] = 0;
				if (o.no_dram && l == N_LEVELS - 1)
					continue;
				uint8_t *src = src_buf + SRC_SKEW + o.offset;
				size_t in = in_bytes(k, l);

				if (mx_fmt(k) != SUM_MX_COUNT && !mx_encode(k)) {
					src = mx_buf + SRC_SKEW + o.offset;
					fill_mx(k, src, in);
				}
				measure(variants[v], k, dst_buf + o.offset, src, in,
					samples < 3 ? 3 : samples, &r->best_gbps[l],
					&r->median_gbps[l], &r->best_out_gbps[l]);
			}
		}
	}

	if (o.json) {
		print_json(&o, res, n_res);
	} else {
		print_table(&o, res, n_res);
		printf("run time %.1f s\n", (clock_now_ns() - t_start) / 1e9);
	}
	munmap(src_buf, src_bytes);
	munmap(dst_buf, dst_bytes);
	munmap(mx_buf, src_bytes);
	return 0;
}
