/* SPDX-License-Identifier: BSD-3-Clause
 *
 * georeduce-bench: its options (after EAL's and "--", parsed before EAL starts so that a
 * bad option costs nothing) and its usage text. The main thread.
 */
#include <getopt.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rte_ethdev.h>

#include "cli.h"
#include "dp.h"
#include "gen.h"
#include "georeduce_bench.h"
#include "georeduce_bench_opts.h"
#include "georeduce_bench_out.h"
#include "slowpath/slowpath.h"
#include "table.h"
#include "wire.h"

/* --- Options ------------------------------------------------------------------------------ */

static void
usage(FILE *f)
{
	fprintf(f,
		"Usage: " PROG " [EAL options] -- [OPTIONS]\n"
		"\n"
		"Emulate the local workers of a georeduce job: send their contributions to a\n"
		"gateway, verify the RESULTs, report rates, latency and losses (docs/BENCH.md).\n"
		"  " PROG " --no-huge -m 512 --no-pci --no-shconf --file-prefix=gb -l 0-1 -- "
		"--mode ring\n"
		"  " PROG " -l 0-1 -a 0000:3b:00.0 -- --mode port --table gw.json\n"
		"\n"
		"  --mode ring|port    ring: the dataplane in this process over net_ring, then\n"
		"                      io-forwarding on the same lcore and port; port: a gateway\n"
		"                      on an ethdev port (NIC, net_memif)              [ring]\n"
		"  --table PATH        port: the gateway's georeduce-table/1 file (required)\n"
		"  --port N            port: the ethdev port id                        [0]\n"
		"  --peer dataplane|io port: a gateway (verify RESULTs) or an io-forwarder\n"
		"                      (count the frames coming back)                  "
		"[dataplane]\n"
		"  --gw-mac MAC        port: the gateway's MAC (default: resolved by ARP)\n"
		"  --gw-socket PATH    port: the gateway's control socket, to read its drops\n"
		"                      by reason before and after each run\n"
		"  --payload BYTES     ring: payload per chunk, 64 .. 8896, a multiple of 64 "
		"[1024]\n"
		"  --fanin N           ring: workers, 1 .. %d                         [4]\n"
		"  --dtype T           ring: fp32, fp16 or bf16                        [fp32]\n"
		"  --mtu N             ring: the dataplane's IP MTU (default: 1500 if the chunk\n"
		"                      fits, else 9000)\n"
		"  --window N          chunks in flight, 1 .. 65536                    [128]\n"
		"  --rate-gbps R       offered rate on the wire (frame + 24 bytes), 0: full speed\n"
		"                      [0]\n"
		"  --pace-burst BYTES  the most the pacer sends at once after a pause, 1 KiB ..\n"
		"                      64 MiB                                         [16KiB]\n"
		"  --line-gbps R       the port's line rate for the percentages (default: what\n"
		"                      the port reports)\n"
		"  --duration S        measured seconds per phase                     [5]\n"
		"  --warmup S          seconds before measuring                       [0.5]\n"
		"  --rto-ms N          first retransmission timeout, 1 .. 10000        [50]\n"
		"  --verify-every N    compare every N-th RESULT's payload with the exact sum\n"
		"                      (every one's headers and contributor count)     [1]\n"
		"  --rounds N          every chunk runs N rounds, then the run ends (--duration\n"
		"                      caps it, default then 3600 s; no warm-up unless given)\n"
		"  --dp-fault SPEC     ring: the dataplane's --fault (0,rx|tx,KEY=VALUE,...,\n"
		"                      e.g. 0,tx,corrupt=1e-6: docs/DATAPLANE.md), up to 2\n"
		"  --dp-fault-seed N   ring: the dataplane's --fault-seed                [0]\n",
		TABLE_WORKERS_MAX);
	fprintf(f,
		"  --burst N           packets per burst, 1 .. %d                     [32]\n"
		"  --no-baseline       ring: skip the io-forward phase\n"
		"  --search            RFC 2544 zero-loss search: trials of --duration (default\n"
		"                      10 s) for the highest rate without loss (NDR) and with\n"
		"                      at most --pdr lost (PDR), up to the line rate\n"
		"  --pdr PCT           the PDR's loss allowance, 0 .. 50                [0.1]\n"
		"  --resolution PCT    the search's step, of the line rate, 0.01 .. 50   [0.5]\n"
		"  --rate-tolerance PCT  a trial fails if it offered less than asked by more,\n"
		"                      0 .. 50                                          [2]\n"
		"  --latency-at PCTS   after the search, a trial at each of these percentages of\n"
		"                      the NDR for its latency (comma-separated, up to %d;\n"
		"                      none: no trials)                        [10,50,90,100]\n"
		"  --retries N         run a trial again, up to N times, when it fell short\n"
		"                      of its rate without losing a frame, 0 .. 10        [1]\n"
		"  --quick             --duration 0.2 --warmup 0.1 unless given\n"
		"  --json | --csv      machine-readable report on stdout\n"
		"  --json=FILE         the JSON report into FILE (stdout keeps the table)\n"
		"  --out DIR           report.txt, report.json, report.csv and with --search\n"
		"                      the plots (gnuplot) into DIR, made if missing\n"
		"  --quiet             no progress lines on stderr\n"
		"  -h, --help\n"
		"Exit status 0; 1 if a chunk was lost, a RESULT's header was wrong or nothing "
		"came\n"
		"back; 2 on bad options or when EAL or the ports cannot start; 3 if a RESULT's "
		"sum\n"
		"was wrong (docs/BENCH.md).\n",
		GEN_BURST_MAX, SEARCH_LAT_MAX);
}

static int
parse_mac(const char *s, uint8_t *mac)
{
	unsigned int b[6];
	int n = 0;

	if (sscanf(s, "%2x:%2x:%2x:%2x:%2x:%2x%n", &b[0], &b[1], &b[2], &b[3], &b[4], &b[5], &n) !=
		    6 ||
	    s[n] != '\0')
		return -1;
	for (int i = 0; i < 6; i++)
		mac[i] = (uint8_t)b[i];
	return 0;
}

enum {
	O_MODE = 256,
	O_TABLE,
	O_PORT,
	O_PEER,
	O_GWMAC,
	O_GWSOCK,
	O_PAYLOAD,
	O_FANIN,
	O_DTYPE,
	O_MTU,
	O_WINDOW,
	O_RATE,
	O_LINE,
	O_PACEBURST,
	O_DURATION,
	O_WARMUP,
	O_RTO,
	O_VERIFY,
	O_ROUNDS,
	O_DPFAULT,
	O_DPSEED,
	O_BURST,
	O_NOBASE,
	O_SEARCH,
	O_PDR,
	O_RESOLUTION,
	O_TOLERANCE,
	O_RETRIES,
	O_LATENCY,
	O_QUICK,
	O_JSON,
	O_OUT,
	O_CSV,
	O_QUIET,
};

/* What the options given say beyond their values: which mode's options came, which
 * defaults --quick may still change, which need --search. */
struct seen {
	bool quick, set_d, set_w, ring_only, port_only, search_only, rate;
};

/* --latency-at: "none", or up to SEARCH_LAT_MAX percentages in (0, 100] with commas. */
static int
parse_latency(const char *arg, struct opts *o)
{
	char buf[256], *save = NULL, *tok;

	o->n_lat = 0;
	if (strcmp(arg, "none") == 0)
		return 0;
	if (snprintf(buf, sizeof(buf), "%s", arg) >= (int)sizeof(buf)) {
		cli_error(PROG, "--latency-at: '%s' is too long", arg);
		return -1;
	}
	for (tok = strtok_r(buf, ",", &save); tok != NULL; tok = strtok_r(NULL, ",", &save)) {
		if (o->n_lat == SEARCH_LAT_MAX) {
			cli_error(PROG, "--latency-at: more than %d percentages", SEARCH_LAT_MAX);
			return -1;
		}
		if (cli_double(PROG, "latency-at", tok, 0.01, 100, &o->lat_pct[o->n_lat]) != 0)
			return -1;
		o->n_lat++;
	}
	if (o->n_lat == 0) {
		cli_error(PROG, "--latency-at: '%s' has no percentage", arg);
		return -1;
	}
	return 0;
}

/* --dp-fault: the dataplane's --fault value, checked now (dp_fault_parse()), applied to
 * ring mode's port 0 once EAL runs. */
static int
parse_dp_fault(const char *arg, struct opts *o)
{
	char err[512];
	unsigned int port;
	struct dp_fault f;
	int dir;

	if (dp_fault_parse(arg, 0, &port, &dir, &f, err, sizeof(err)) != 0) {
		cli_error(PROG, "--dp-fault: %s", err);
		return -1;
	}
	if (port != 0) {
		cli_error(PROG, "--dp-fault: port %u: ring mode's dataplane has port 0 only", port);
		return -1;
	}
	if (o->n_dp_fault == DP_FAULTS_MAX) {
		cli_error(PROG, "--dp-fault: at most %d (one for rx, one for tx)", DP_FAULTS_MAX);
		return -1;
	}
	o->dp_fault[o->n_dp_fault++] = arg;
	return 0;
}

/* The defaults: ring mode, 1024 B x 4 workers fp32, a window of 128 chunks. */
static void
opts_defaults(struct opts *o)
{
	memset(o, 0, sizeof(*o));
	o->payload = 1024;
	o->fanin = 4;
	o->dtype = WIRE_DTYPE_FP32;
	o->window = 128;
	o->burst = 32;
	o->verify_every = 1;
	o->rto_ms = 50;
	o->duration = 5;
	o->warmup = 0.5;
	o->baseline = true;
	o->pace_burst = 16384;
	o->pdr_pct = 0.1;
	o->resolution_pct = 0.5;
	o->tolerance_pct = 2;
	o->retries = 1;
	o->n_lat = 4;
	o->lat_pct[0] = 10;
	o->lat_pct[1] = 50;
	o->lat_pct[2] = 90;
	o->lat_pct[3] = 100;
}

/* --rounds, --dp-fault and --dp-fault-seed. */
static int
parse_rounds_faults(int c, struct opts *o, struct seen *s)
{
	uint64_t v;

	switch (c) {
	case O_ROUNDS:
		if (cli_uint(PROG, "--rounds", optarg, 1, 1u << 30, &v) != 0)
			return -1;
		o->rounds = (unsigned int)v;
		return 0;
	case O_DPFAULT:
		if (parse_dp_fault(optarg, o) != 0)
			return -1;
		s->ring_only = true;
		return 0;
	case O_DPSEED:
		if (cli_uint(PROG, "--dp-fault-seed", optarg, 0, INT32_MAX, &v) != 0)
			return -1;
		o->dp_fault_seed = (uint32_t)v;
		s->ring_only = true;
		return 0;
	}
	return 0;
}

/* One option, c as getopt_long() returned it and its value in optarg. */
static int
parse_one(int c, struct opts *o, struct seen *s)
{
	uint64_t v;

	switch (c) {
	case O_MODE:
		if (strcmp(optarg, "ring") != 0 && strcmp(optarg, "port") != 0) {
			cli_error(PROG, "--mode: '%s' is not ring or port", optarg);
			return -1;
		}
		o->mode = strcmp(optarg, "port") == 0 ? MODE_PORT : MODE_RING;
		break;
	case O_TABLE:
		o->table = optarg;
		s->port_only = true;
		break;
	case O_PORT:
		if (cli_uint(PROG, "--port", optarg, 0, RTE_MAX_ETHPORTS - 1, &v) != 0)
			return -1;
		o->port = (uint16_t)v;
		s->port_only = true;
		break;
	case O_PEER:
		if (strcmp(optarg, "dataplane") != 0 && strcmp(optarg, "io") != 0) {
			cli_error(PROG, "--peer: '%s' is not dataplane or io", optarg);
			return -1;
		}
		o->peer = strcmp(optarg, "io") == 0 ? GEN_PEER_IO : GEN_PEER_DATAPLANE;
		s->port_only = true;
		break;
	case O_GWMAC:
		if (parse_mac(optarg, o->gw_mac) != 0) {
			cli_error(PROG, "--gw-mac: '%s' is not a MAC address (aa:bb:cc:dd:ee:ff)",
				  optarg);
			return -1;
		}
		o->gw_mac_set = true;
		s->port_only = true;
		break;
	case O_GWSOCK:
		if (optarg[0] == '\0' || strlen(optarg) >= 108) {
			cli_error(PROG, "--gw-socket: '%s' is not a unix socket path", optarg);
			return -1;
		}
		o->gw_socket = optarg;
		s->port_only = true;
		break;
	case O_PAYLOAD:
		if (cli_bytes(PROG, "payload", optarg, 64, &v) != 0)
			return -1;
		if (v > TABLE_CHUNK_BYTES_MAX || v % 64 != 0) {
			cli_error(PROG, "--payload: %s is not a multiple of 64 in 64 .. %u", optarg,
				  TABLE_CHUNK_BYTES_MAX);
			return -1;
		}
		o->payload = (unsigned int)v;
		s->ring_only = true;
		break;
	case O_FANIN:
		if (cli_uint(PROG, "--fanin", optarg, 1, TABLE_WORKERS_MAX, &v) != 0)
			return -1;
		o->fanin = (unsigned int)v;
		s->ring_only = true;
		break;
	case O_DTYPE: {
		int d = table_dtype_from_name(optarg);

		if (d <= 0 || wire_dtype_is_mx((enum wire_dtype)d)) {
			cli_error(PROG, "--dtype: '%s' is not fp32, fp16 or bf16", optarg);
			return -1;
		}
		o->dtype = (enum wire_dtype)d;
		s->ring_only = true;
		break;
	}
	case O_MTU:
		if (cli_uint(PROG, "--mtu", optarg, WIRE_MTU_MIN, WIRE_MTU_MAX, &v) != 0)
			return -1;
		o->mtu = (unsigned int)v;
		s->ring_only = true;
		break;
	case O_WINDOW:
		if (cli_uint(PROG, "--window", optarg, 1, TABLE_SLOTS_MAX, &v) != 0)
			return -1;
		o->window = (unsigned int)v;
		break;
	case O_RATE:
		if (cli_double(PROG, "rate-gbps", optarg, 0, 10000, &o->rate_gbps) != 0)
			return -1;
		s->rate = true;
		break;
	case O_PACEBURST:
		if (cli_bytes(PROG, "pace-burst", optarg, 1024, &v) != 0)
			return -1;
		if (v > 64u << 20) {
			cli_error(PROG, "--pace-burst: %s is above 64 MiB", optarg);
			return -1;
		}
		o->pace_burst = (double)v;
		break;
	case O_LINE:
		if (cli_double(PROG, "line-gbps", optarg, 0.001, 100000, &o->line_gbps) != 0)
			return -1;
		break;
	case O_DURATION:
		if (cli_double(PROG, "duration", optarg, 0.01, 86400, &o->duration) != 0)
			return -1;
		s->set_d = true;
		break;
	case O_WARMUP:
		if (cli_double(PROG, "warmup", optarg, 0, 3600, &o->warmup) != 0)
			return -1;
		s->set_w = true;
		break;
	case O_RTO:
		if (cli_uint(PROG, "--rto-ms", optarg, 1, 10000, &v) != 0)
			return -1;
		o->rto_ms = (unsigned int)v;
		break;
	case O_VERIFY:
		if (cli_uint(PROG, "--verify-every", optarg, 1, 1000000, &v) != 0)
			return -1;
		o->verify_every = (unsigned int)v;
		break;
	case O_ROUNDS:
	case O_DPFAULT:
	case O_DPSEED:
		return parse_rounds_faults(c, o, s);
	case O_BURST:
		if (cli_uint(PROG, "--burst", optarg, 1, GEN_BURST_MAX, &v) != 0)
			return -1;
		o->burst = (unsigned int)v;
		break;
	case O_NOBASE:
		o->baseline = false;
		s->ring_only = true;
		break;
	case O_SEARCH:
		o->search = true;
		break;
	case O_PDR:
		if (cli_double(PROG, "pdr", optarg, 0, 50, &o->pdr_pct) != 0)
			return -1;
		s->search_only = true;
		break;
	case O_RESOLUTION:
		if (cli_double(PROG, "resolution", optarg, 0.01, 50, &o->resolution_pct) != 0)
			return -1;
		s->search_only = true;
		break;
	case O_TOLERANCE:
		if (cli_double(PROG, "rate-tolerance", optarg, 0, 50, &o->tolerance_pct) != 0)
			return -1;
		s->search_only = true;
		break;
	case O_LATENCY:
		if (parse_latency(optarg, o) != 0)
			return -1;
		s->search_only = true;
		break;
	case O_RETRIES:
		if (cli_uint(PROG, "--retries", optarg, 0, 10, &v) != 0)
			return -1;
		o->retries = (unsigned int)v;
		s->search_only = true;
		break;
	case O_QUICK:
		s->quick = true;
		break;
	case O_JSON:
		if (optarg == NULL)
			o->json = true;
		else if (optarg[0] == '\0') {
			cli_error(PROG, "--json=: the file name is empty");
			return -1;
		} else
			o->json_file = optarg;
		break;
	case O_OUT:
		o->out_dir = optarg;
		break;
	case O_CSV:
		o->csv = true;
		break;
	case O_QUIET:
		o->quiet = true;
		break;
	}
	return 0;
}

/* The options together: the mode's options only, its requirements, --quick. */
static int
opts_finish(struct opts *o, const struct seen *s)
{
	if (o->json && o->csv) {
		cli_error(PROG, "--json and --csv exclude each other");
		return -1;
	}
	if (o->mode == MODE_RING && s->port_only) {
		cli_error(PROG,
			  "--table, --port, --peer, --gw-mac and --gw-socket need --mode port");
		return -1;
	}
	if (o->mode == MODE_PORT && s->ring_only) {
		cli_error(PROG,
			  "--payload, --fanin, --dtype, --mtu, --no-baseline, --dp-fault and "
			  "--dp-fault-seed need --mode ring (port mode takes them from --table; "
			  "the gateway its faults from its own --fault)");
		return -1;
	}
	if (o->mode == MODE_PORT && o->table == NULL) {
		cli_error(PROG, "--table: required with --mode port");
		return -1;
	}
	if (o->mode == MODE_RING && o->payload % wire_dtype_size(o->dtype) != 0) {
		cli_error(PROG, "--payload: %u is not a whole number of %s elements", o->payload,
			  wire_dtype_str(o->dtype));
		return -1;
	}
	if (o->mode == MODE_RING && o->mtu != 0 && o->payload + WIRE_MTU_OVERHEAD > o->mtu) {
		cli_error(PROG, "--mtu: %u is below the %u bytes a %u-byte chunk needs", o->mtu,
			  o->payload + WIRE_MTU_OVERHEAD, o->payload);
		return -1;
	}
	if (s->search_only && !o->search) {
		cli_error(PROG,
			  "--pdr, --resolution, --rate-tolerance, --retries and --latency-at need "
			  "--search");
		return -1;
	}
	if (o->search && s->rate) {
		cli_error(PROG, "--rate-gbps: the search sets the rate (--search)");
		return -1;
	}
	if (o->search && o->rounds != 0) {
		cli_error(PROG, "--rounds: the search's trials last --duration (--search)");
		return -1;
	}
	if (o->search && !s->set_d)
		o->duration = 10;
	if (o->rounds != 0 && !s->set_d)
		o->duration = 3600;
	if (o->rounds != 0 && !s->set_w)
		o->warmup = 0;
	if (out_prepare(o) != 0)
		return -1;
	if (s->quick && !s->set_d && o->rounds == 0)
		o->duration = 0.2;
	if (s->quick && !s->set_w && o->rounds == 0)
		o->warmup = 0.1;
	return 0;
}

int
parse_opts(int argc, char **argv, struct opts *o)
{
	static const struct option longopts[] = {
		{"mode", required_argument, NULL, O_MODE},
		{"table", required_argument, NULL, O_TABLE},
		{"port", required_argument, NULL, O_PORT},
		{"peer", required_argument, NULL, O_PEER},
		{"gw-mac", required_argument, NULL, O_GWMAC},
		{"gw-socket", required_argument, NULL, O_GWSOCK},
		{"payload", required_argument, NULL, O_PAYLOAD},
		{"fanin", required_argument, NULL, O_FANIN},
		{"dtype", required_argument, NULL, O_DTYPE},
		{"mtu", required_argument, NULL, O_MTU},
		{"window", required_argument, NULL, O_WINDOW},
		{"rate-gbps", required_argument, NULL, O_RATE},
		{"line-gbps", required_argument, NULL, O_LINE},
		{"pace-burst", required_argument, NULL, O_PACEBURST},
		{"duration", required_argument, NULL, O_DURATION},
		{"warmup", required_argument, NULL, O_WARMUP},
		{"rto-ms", required_argument, NULL, O_RTO},
		{"verify-every", required_argument, NULL, O_VERIFY},
		{"rounds", required_argument, NULL, O_ROUNDS},
		{"dp-fault", required_argument, NULL, O_DPFAULT},
		{"dp-fault-seed", required_argument, NULL, O_DPSEED},
		{"burst", required_argument, NULL, O_BURST},
		{"no-baseline", no_argument, NULL, O_NOBASE},
		{"search", no_argument, NULL, O_SEARCH},
		{"pdr", required_argument, NULL, O_PDR},
		{"resolution", required_argument, NULL, O_RESOLUTION},
		{"rate-tolerance", required_argument, NULL, O_TOLERANCE},
		{"retries", required_argument, NULL, O_RETRIES},
		{"latency-at", required_argument, NULL, O_LATENCY},
		{"quick", no_argument, NULL, O_QUICK},
		{"json", optional_argument, NULL, O_JSON},
		{"out", required_argument, NULL, O_OUT},
		{"csv", no_argument, NULL, O_CSV},
		{"quiet", no_argument, NULL, O_QUIET},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	struct seen s = {0};
	int c;

	opts_defaults(o);
	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":h", longopts, NULL)) != -1) {
		switch (c) {
		case 'h':
			usage(stdout);
			exit(0);
		case ':':
			cli_error(PROG, "%s: a value is required", argv[optind - 1]);
			return -1;
		case '?':
			cli_error(PROG, "unknown option '%s' (--help lists them)",
				  argv[optind - 1]);
			return -1;
		default:
			if (parse_one(c, o, &s) != 0)
				return -1;
		}
	}
	if (optind < argc) {
		cli_error(PROG, "unexpected argument '%s'", argv[optind]);
		return -1;
	}
	return opts_finish(o, &s);
}
