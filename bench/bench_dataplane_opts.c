/* SPDX-License-Identifier: BSD-3-Clause
 *
 * georeduce-bench-dataplane: its options (after EAL's and "--") and its usage text. The
 * main thread, before any measurement.
 */
#include <getopt.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_dataplane.h"
#include "bench_dataplane_opts.h"
#include "cli.h"
#include "dp.h"
#include "table.h"
#include "wire.h"

/* --- Options ------------------------------------------------------------------------------ */

static void
usage(FILE *f)
{
	fprintf(f,
		"Usage: " PROG " [EAL options] -- [OPTIONS]\n"
		"\n"
		"The dataplane's worker loop on one core through a net_ring port, against\n"
		"io-forwarding of the same packets on the same port: a root gateway summing\n"
		"F contributions per chunk and sending the result to its F workers. For example:\n"
		"  " PROG " --no-huge -m 1024 --no-pci --no-shconf --file-prefix=bdp -l 0 --\n"
		"\n"
		"  --payload LIST   payload bytes per packet (256 .. 8192, KiB suffix allowed)\n"
		"                                                  [256,1024,4096,8192]\n"
		"  --fanin LIST     contributions per chunk, 1 .. 64          [2,4,8,16]\n"
		"  --dtype LIST     fp32, fp16, bf16                           [fp32]\n"
		"  --seconds S      measured time per repetition and side      [1]\n"
		"  --repeat N       repetitions per point, the median is shown [3]\n"
		"  --window N       chunks per round (in flight), 1 .. 65536   [128]\n"
		"  --burst N        packets per RX burst, 1 .. %d              [32]\n"
		"  --mtu N          IP MTU (default: 1500 if the chunk fits, else 9000)\n"
		"  --order chunk|worker  feed chunk by chunk (workers in lockstep) or worker by\n"
		"                   worker (every chunk of the round open at once)  [chunk]\n"
		"  --udp-csum       contributions carry UDP checksums (verified in software)\n"
		"  --quick          1024,4096 B x 2,8, 0.2 s, one repetition\n"
		"  --json           JSON on stdout instead of the table\n"
		"  -h, --help\n"
		"Progress on stderr. Exit status 0, 1 if a point failed its checks, 2 on bad "
		"options.\n",
		DP_BURST_MAX);
}

static int
parse_list(const char *opt, const char *s, bool bytes, unsigned int min, unsigned int max,
	   unsigned int *out, unsigned int *n)
{
	char buf[256], *save = NULL, *tok;

	if (strlen(s) >= sizeof(buf)) {
		cli_error(PROG, "--%s: list too long", opt);
		return -1;
	}
	strcpy(buf, s);
	*n = 0;
	for (tok = strtok_r(buf, ",", &save); tok != NULL; tok = strtok_r(NULL, ",", &save)) {
		uint64_t v;
		char name[32];

		snprintf(name, sizeof(name), "--%s", opt);
		if (*n == LIST_MAX) {
			cli_error(PROG, "--%s: at most %d values", opt, LIST_MAX);
			return -1;
		}
		if (bytes ? cli_bytes(PROG, opt, tok, min, &v) :
			    cli_uint(PROG, name, tok, min, max, &v))
			return -1;
		if (v > max) {
			cli_error(PROG, "--%s: %s is above %u", opt, tok, max);
			return -1;
		}
		out[(*n)++] = (unsigned int)v;
	}
	if (*n == 0) {
		cli_error(PROG, "--%s: empty list", opt);
		return -1;
	}
	return 0;
}

int
parse_opts(int argc, char **argv, struct opts *o)
{
	static const struct option longopts[] = {
		{"payload", required_argument, NULL, 'p'},
		{"fanin", required_argument, NULL, 'f'},
		{"dtype", required_argument, NULL, 'd'},
		{"seconds", required_argument, NULL, 's'},
		{"repeat", required_argument, NULL, 'r'},
		{"window", required_argument, NULL, 'w'},
		{"burst", required_argument, NULL, 'b'},
		{"mtu", required_argument, NULL, 'm'},
		{"order", required_argument, NULL, 'o'},
		{"udp-csum", no_argument, NULL, 'u'},
		{"quick", no_argument, NULL, 'q'},
		{"json", no_argument, NULL, 'j'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	bool quick = false, set_p = false, set_f = false, set_s = false, set_r = false;
	uint64_t v;
	int c;

	memset(o, 0, sizeof(*o));
	o->dtype[0] = WIRE_DTYPE_FP32;
	o->n_dtype = 1;
	o->seconds = 1;
	o->repeat = 3;
	o->window = 128;
	o->burst = 32;
	optind = 1;
	while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		switch (c) {
		case 'p':
			if (parse_list("payload", optarg, true, 64, TABLE_CHUNK_BYTES_MAX,
				       o->payload, &o->n_payload) != 0)
				return -1;
			for (unsigned int i = 0; i < o->n_payload; i++)
				if (o->payload[i] % 64 != 0) {
					cli_error(PROG,
						  "--payload: %u is not a multiple of 64 "
						  "bytes",
						  o->payload[i]);
					return -1;
				}
			set_p = true;
			break;
		case 'f':
			if (parse_list("fanin", optarg, false, 1, 64, o->fanin, &o->n_fanin) != 0)
				return -1;
			set_f = true;
			break;
		case 'd': {
			char buf[64], *save = NULL, *tok;

			snprintf(buf, sizeof(buf), "%s", optarg);
			o->n_dtype = 0;
			for (tok = strtok_r(buf, ",", &save); tok != NULL;
			     tok = strtok_r(NULL, ",", &save)) {
				int d = table_dtype_from_name(tok);

				if (d <= 0 || wire_dtype_is_mx((enum wire_dtype)d) ||
				    o->n_dtype == 3) {
					cli_error(PROG, "--dtype: '%s' is not fp32, fp16 or bf16",
						  tok);
					return -1;
				}
				o->dtype[o->n_dtype++] = (enum wire_dtype)d;
			}
			if (o->n_dtype == 0) {
				cli_error(PROG, "--dtype: empty list");
				return -1;
			}
			break;
		}
		case 's':
			if (cli_double(PROG, "seconds", optarg, 0.01, 3600, &o->seconds) != 0)
				return -1;
			set_s = true;
			break;
		case 'r':
			if (cli_uint(PROG, "--repeat", optarg, 1, REPEAT_MAX, &v) != 0)
				return -1;
			o->repeat = (unsigned int)v;
			set_r = true;
			break;
		case 'w':
			if (cli_uint(PROG, "--window", optarg, 1, TABLE_SLOTS_MAX, &v) != 0)
				return -1;
			o->window = (unsigned int)v;
			break;
		case 'b':
			if (cli_uint(PROG, "--burst", optarg, 1, DP_BURST_MAX, &v) != 0)
				return -1;
			o->burst = (unsigned int)v;
			break;
		case 'm':
			if (cli_uint(PROG, "--mtu", optarg, WIRE_MTU_MIN, WIRE_MTU_MAX, &v) != 0)
				return -1;
			o->mtu = (unsigned int)v;
			break;
		case 'o':
			if (strcmp(optarg, "chunk") != 0 && strcmp(optarg, "worker") != 0) {
				cli_error(PROG, "--order: '%s' is not chunk or worker", optarg);
				return -1;
			}
			o->worker_order = strcmp(optarg, "worker") == 0;
			break;
		case 'u':
			o->udp_csum = true;
			break;
		case 'q':
			quick = true;
			break;
		case 'j':
			o->json = true;
			break;
		case 'h':
			usage(stdout);
			exit(0);
		default:
			usage(stderr);
			return -1;
		}
	}
	if (optind < argc) {
		cli_error(PROG, "unexpected argument '%s'", argv[optind]);
		return -1;
	}
	if (!set_p) {
		static const unsigned int def[] = {256, 1024, 4096, 8192}, q[] = {1024, 4096};

		o->n_payload = quick ? 2 : 4;
		memcpy(o->payload, quick ? q : def, o->n_payload * sizeof(unsigned int));
	}
	if (!set_f) {
		static const unsigned int def[] = {2, 4, 8, 16}, q[] = {2, 8};

		o->n_fanin = quick ? 2 : 4;
		memcpy(o->fanin, quick ? q : def, o->n_fanin * sizeof(unsigned int));
	}
	if (quick && !set_s)
		o->seconds = 0.2;
	if (quick && !set_r)
		o->repeat = 1;
	return 0;
}
