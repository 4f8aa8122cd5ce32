/* SPDX-License-Identifier: BSD-3-Clause
 *
 * georeduce-dataplane: the gateway program. EAL arguments first, then `--` and ours.
 * The main lcore runs the control thread (control socket, table installs, neighbours,
 * retirement of old epochs); every other EAL lcore runs the fast path on its queues.
 */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <rte_eal.h>
#include <rte_ethdev.h>
#include <rte_lcore.h>

#include "cli.h"
#include "ctlsrv.h"
#include "dp.h"
#include "promsrv.h"
#include "revision.h"
#include "slowpath/slowpath.h"
#include "table.h"

#define CTL_SOCKET_DEFAULT "/run/georeduce/dataplane.sock"
/* The control loop's longest wait for a request: housekeeping (ARP, PROBEs, retirement,
 * what the lcores learned) and metrics scrapes run at least this often. */
#define CTL_POLL_MS 10

static volatile sig_atomic_t quit, hup;

static void
on_signal(int sig)
{
	if (sig == SIGHUP)
		hup = 1; /* the control thread reloads the TLS files (dp_ctl_reload_tls()) */
	else
		quit = 1;
}

static void
usage(FILE *f, const struct dp_config *d)
{
	fprintf(f,
		"Usage: " DP_PROGRAM " [EAL options] -- [OPTIONS]\n"
		"\n"
		"Aggregate gradient chunks on packet buffers and forward them along the trees of\n"
		"the tables a control process installs over the control socket (docs/CONTROL.md).\n"
		"Every DPDK port is used; the main lcore is the control thread, every other lcore\n"
		"polls one RX queue of each port. Without NICs, for example:\n"
		"  " DP_PROGRAM " --no-huge -m 256 --no-pci --no-shconf -l 0-1 \\\n"
		"      --vdev net_af_packet0,iface=veth0 -- --addr 0:10.0.0.1/24 -s /tmp/gw.sock\n"
		"\n"
		"  -a, --addr PORT:IP/LEN[,GW]  address of port PORT (0, 1, ... in probe order) "
		"and\n"
		"                          optionally its router for other subnets   [required]\n"
		"  -s, --ctl-socket PATH   control socket                 [" CTL_SOCKET_DEFAULT
		"]\n"
		"      --ctl-listen HOST:PORT  also serve the control protocol there over TLS 1.3\n"
		"                          (the management address; never a DPDK port)\n"
		"      --ctl-cert FILE, --ctl-key FILE, --ctl-ca FILE  this gateway's certificate\n"
		"                          and key, and the CA its clients' certificates chain to\n"
		"      --ctl-crl FILE      the CA's CRL: a revoked client certificate is refused\n"
		"                          (SIGHUP reloads the four files for new connections)\n"
		"      --ctl-handshake-ms N    limit of a TLS handshake                  [%d]\n"
		"      --ctl-idle-ms N     a connection without requests is closed after  [%d]\n"
		"      --ctl-conns N       connections per role (control, monitor, local) [%d]\n"
		"      --term-file PATH    where the newest term of a replicated control process\n"
		"                          is kept across restarts, or none   [the socket's + "
		".term]\n"
		"      --metrics ADDR:PORT serve Prometheus metrics at http://ADDR:PORT/metrics\n"
		"                          from the control thread (docs/METRICS.md)   [off]\n"
		"      --nat-addr PORT:IP  the address a NAT gives port PORT towards the other\n"
		"                          gateways: tables may name it as this gateway's [none]\n"
		"  -n, --neigh IP=MAC      a static neighbour (repeatable); others by ARP\n"
		"  -r, --route DST/LEN,port=N | DST/LEN,via=IP\n"
		"                          a static route (repeatable): DST reached directly\n"
		"                          on port N, or through router IP; longest prefix wins\n"
		"      --base-port N       first UDP port of this gateway                [%u]\n"
		"      --ports N           UDP ports: chunk c arrives on base + c %% N     [%u]\n"
		"      --mtu N             IP MTU, 576 .. 9000                           [%u]\n"
		"      --revision N        answer and refuse as protocol revision 1.N, %d .. %d\n"
		"                          (a test and upgrade aid: below 16 `prepare` refuses\n"
		"                          `membership`, below 15 `version` has no revision,\n"
		"                          below 14 tables with chunks above 8192 bytes are\n"
		"                          refused)                                      [%d]\n",
		CTLSRV_HANDSHAKE_MS_DEFAULT, CTLSRV_IDLE_MS_DEFAULT, CTLSRV_PER_ROLE_DEFAULT,
		d->prm.udp_base, d->prm.udp_count, d->prm.mtu, REVISION_OLDEST, GEOREDUCE_REVISION,
		GEOREDUCE_REVISION);
	fprintf(f,
		"      --mbufs N           packet buffers per NUMA socket                [%" PRIu64
		"]\n"
		"      --hdr-mbufs N       header and indirect buffers for result copies [%u]\n"
		"      --rx-desc N, --tx-desc N  descriptors per queue              [%u, %u]\n"
		"      --burst N           packets per receive burst, 1 .. %d             [%u]\n"
		"      --idle MODE         what an idle worker lcore does: intr (wait for an Rx\n"
		"                          interrupt where its ports have them, else sleep),\n"
		"                          sleep (sleeps growing up to --idle-sleep-us) or\n"
		"                          poll (busy polling: line-rate certification)  [%s]\n"
		"      --idle-spin N       empty polls before an idle lcore waits; 0 = poll [%u]\n"
		"      --idle-sleep-us N   longest idle sleep: about the most a packet after\n"
		"                          a pause waits for a sleeping lcore            [%u]\n"
		"      --drain-ms N        how long an old epoch may keep unfinished chunks [%u]\n"
		"      --linger-ms N       how long an old epoch keeps its results once drained,\n"
		"                          for the workers a re-plan left without one     [%u]\n"
		"      --probe-ms N        PROBE interval to the peers the control process names\n"
		"                          (it tells a failed link from a failed gateway) [%u]\n"
		"      --no-pace           send at once instead of pacing every tree at its\n"
		"                          planned rate on each link to a gateway\n"
		"      --rto-ms N          retransmission timeout of a partial sum before a\n"
		"                          round trip to the parent is measured         [%u]\n"
		"      --retries N         retransmissions of a partial sum before it is\n"
		"                          reported stuck (it is still resent every 2 s) [%u]\n"
		"      --fault PORT,rx|tx,KEY=VALUE,...  inject faults (tests, WAN emulation):\n"
		"                          loss=P, dup=P, reorder=P (probabilities per frame),\n"
		"                          corrupt=P (a bit of a data frame's payload flipped),\n"
		"                          delay_ms=D (tx only: every frame leaves D ms later);\n"
		"                          bursty loss: burst=L with loss=P (mean loss P in\n"
		"                          runs of L frames on average), or the Gilbert-Elliott\n"
		"                          ge_p=P (good->bad), ge_r=R (bad->good), ge_h=H (loss\n"
		"                          when bad) [1], ge_k=K (loss when good) [0]\n"
		"      --fault-seed N      seed of the fault generators (runs repeat)     [0]\n"
		"      --fault-queue N     frames one lcore may hold delayed per port     [%u]\n"
		"      --crypto NAME       the cryptodev of protected links (sealed with AES-GCM,\n"
		"                          docs/PROTOCOL.md section 14): a vdev such as\n"
		"                          crypto_aesni_gcm0 or crypto_aesni_mb0, created unless\n"
		"                          EAL has it; without it tables with keys are refused\n"
		"      --crypto-ops        enqueue and dequeue operations even where the device\n"
		"                          offers synchronous CPU crypto\n"
		"      --seal-mbufs N      sealed frames in flight                       [%u]\n"
		"      --seal-links N      protected links of all installed tables       [%u]\n"
		"  -h, --help              this text\n"
		"  -V, --version           print the version\n"
		"\n"
		"Counters: '"
		"georeduce-dpctl -s PATH stats', --metrics, or DPDK telemetry\n"
		"(dpdk-telemetry.py: /georeduce/stats, /georeduce/lcore,<lcore id>).\n",
		d->prm.mbufs, d->hdr_mbufs, d->rx_desc, d->tx_desc, DP_BURST_MAX, d->prm.burst,
		dp_idle_mode_name(d->prm.idle_mode), d->prm.idle_spin, d->prm.idle_sleep_us,
		d->prm.drain_ms, d->prm.linger_ms, d->prm.probe_ms, d->rto_init_ms, d->retries_max,
		d->prm.fault_queue, d->seal_mbufs, d->seal_links);
}

static int
parse_addr(const char *s, struct dp_config *cfg)
{
	char buf[64], *colon, *slash, *comma, *end;
	unsigned long port, len;

	if (strlen(s) >= sizeof(buf))
		goto bad;
	strcpy(buf, s);
	colon = strchr(buf, ':');
	if (colon == NULL)
		goto bad;
	*colon = '\0';
	port = strtoul(buf, &end, 10);
	if (*buf == '\0' || *end != '\0' || port >= DP_PORTS_MAX)
		goto bad;
	slash = strchr(colon + 1, '/');
	if (slash == NULL)
		goto bad;
	*slash = '\0';
	comma = strchr(slash + 1, ',');
	if (comma != NULL)
		*comma = '\0';
	len = strtoul(slash + 1, &end, 10);
	if (slash[1] == '\0' || *end != '\0' || len < 1 || len > 32)
		goto bad;
	struct dp_port_addr *a = &cfg->addr[port];

	if (table_ipv4_parse(colon + 1, &a->ipv4) != 0 || !table_ipv4_unicast(a->ipv4))
		goto bad;
	a->prefix_len = (uint8_t)len;
	a->gw_ipv4 = 0;
	if (comma != NULL &&
	    (table_ipv4_parse(comma + 1, &a->gw_ipv4) != 0 || !table_ipv4_unicast(a->gw_ipv4)))
		goto bad;
	return 0;
bad:
	cli_error(DP_PROGRAM, "--addr: expected PORT:IP/LEN[,GW] (e.g. 0:10.0.0.1/24), got '%s'",
		  s);
	return -1;
}

/* --nat-addr PORT:IP */
static int
parse_nat_addr(const char *s, struct dp_config *cfg)
{
	char buf[64], *colon, *end;
	unsigned long port;

	if (strlen(s) >= sizeof(buf) || (colon = strchr(strcpy(buf, s), ':')) == NULL)
		goto bad;
	*colon = '\0';
	port = strtoul(buf, &end, 10);
	if (*buf == '\0' || *end != '\0' || port >= DP_PORTS_MAX ||
	    table_ipv4_parse(colon + 1, &cfg->addr[port].nat_ipv4) != 0 ||
	    !table_ipv4_unicast(cfg->addr[port].nat_ipv4))
		goto bad;
	return 0;
bad:
	cli_error(DP_PROGRAM,
		  "--nat-addr: expected PORT:IP, a unicast IPv4 address "
		  "(e.g. 0:203.0.113.7), got '%s'",
		  s);
	return -1;
}

static int
parse_neigh(const char *s, struct dp_config *cfg)
{
	char buf[64], *eq;
	struct dp_static_neigh *n;

	if (cfg->n_neigh == sizeof(cfg->neigh) / sizeof(cfg->neigh[0])) {
		cli_error(DP_PROGRAM, "--neigh: at most %zu",
			  sizeof(cfg->neigh) / sizeof(cfg->neigh[0]));
		return -1;
	}
	n = &cfg->neigh[cfg->n_neigh];
	if (strlen(s) >= sizeof(buf) || (eq = strchr(strcpy(buf, s), '=')) == NULL)
		goto bad;
	*eq = '\0';
	if (table_ipv4_parse(buf, &n->ipv4) != 0 || rte_ether_unformat_addr(eq + 1, &n->mac) != 0)
		goto bad;
	cfg->n_neigh++;
	return 0;
bad:
	cli_error(DP_PROGRAM,
		  "--neigh: expected IP=MAC (e.g. 10.0.0.2=02:00:00:00:00:02), got '%s'", s);
	return -1;
}

/* --route DST/LEN,port=N or DST/LEN,via=IP */
static int
parse_route(const char *s, struct dp_config *cfg)
{
	char buf[64], *slash, *comma, *end;
	struct dp_route *rt;
	unsigned long v;

	if (cfg->n_routes == DP_ROUTES_MAX) {
		cli_error(DP_PROGRAM, "--route: at most %d", DP_ROUTES_MAX);
		return -1;
	}
	rt = &cfg->routes[cfg->n_routes];
	memset(rt, 0, sizeof(*rt));
	if (strlen(s) >= sizeof(buf))
		goto bad;
	strcpy(buf, s);
	slash = strchr(buf, '/');
	comma = strchr(buf, ',');
	if (slash == NULL || comma == NULL || comma < slash)
		goto bad;
	*slash = *comma = '\0';
	v = strtoul(slash + 1, &end, 10);
	if (slash[1] == '\0' || *end != '\0' || v > 32 || table_ipv4_parse(buf, &rt->dst) != 0)
		goto bad;
	rt->prefix_len = (uint8_t)v;
	if (strncmp(comma + 1, "port=", 5) == 0) {
		v = strtoul(comma + 6, &end, 10);
		if (comma[6] == '\0' || *end != '\0' || v >= DP_PORTS_MAX)
			goto bad;
		rt->port = (uint16_t)v;
	} else if (strncmp(comma + 1, "via=", 4) != 0 ||
		   table_ipv4_parse(comma + 5, &rt->via) != 0 || !table_ipv4_unicast(rt->via)) {
		goto bad;
	}
	cfg->n_routes++;
	return 0;
bad:
	cli_error(DP_PROGRAM,
		  "--route: expected DST/LEN,port=N or DST/LEN,via=IP (e.g. "
		  "10.2.0.0/16,via=10.255.0.2), got '%s'",
		  s);
	return -1;
}

/* --fault: dp_fault_parse() (slowpath/fault_opt.c). */
static int
parse_fault(const char *s, struct dp_config *cfg)
{
	char err[512];
	unsigned int port;
	struct dp_fault f;
	int dir;

	if (dp_fault_parse(s, (double)rte_get_tsc_hz(), &port, &dir, &f, err, sizeof(err)) != 0) {
		cli_error(DP_PROGRAM, "--fault: %s", err);
		return -1;
	}
	cfg->fault[port][dir] = f;
	return 0;
}

static int
u32_opt(const char *opt, const char *s, long min, long max, uint32_t *out)
{
	int v;

	if (cli_int(DP_PROGRAM, opt, s, min, max, &v) != 0)
		return -1;
	*out = (uint32_t)v;
	return 0;
}

/* Our options (after EAL's). */
enum {
	O_BASE = 256,
	O_PORTS,
	O_MTU,
	O_MBUFS,
	O_HDR,
	O_RXD,
	O_TXD,
	O_BURST,
	O_IDLE,
	O_SPIN,
	O_SLEEP,
	O_DRAIN,
	O_LINGER,
	O_FAULT,
	O_FAULTQ,
	O_FAULTSEED,
	O_RTO,
	O_RETRIES,
	O_NOPACE,
	O_PROBE,
	O_LISTEN,
	O_CERT,
	O_KEY,
	O_CA,
	O_CRL,
	O_TERM_FILE,
	O_HSMS,
	O_IDLEMS,
	O_CONNS,
	O_CRYPTO,
	O_CRYPTO_OPS,
	O_SEAL_MBUFS,
	O_SEAL_LINKS,
	O_METRICS,
	O_NAT,
	O_REVISION
};

static const struct option long_opts[] = {
	{"addr", required_argument, NULL, 'a'},
	{"ctl-socket", required_argument, NULL, 's'},
	{"neigh", required_argument, NULL, 'n'},
	{"route", required_argument, NULL, 'r'},
	{"base-port", required_argument, NULL, O_BASE},
	{"ports", required_argument, NULL, O_PORTS},
	{"mtu", required_argument, NULL, O_MTU},
	{"mbufs", required_argument, NULL, O_MBUFS},
	{"hdr-mbufs", required_argument, NULL, O_HDR},
	{"rx-desc", required_argument, NULL, O_RXD},
	{"tx-desc", required_argument, NULL, O_TXD},
	{"burst", required_argument, NULL, O_BURST},
	{"idle", required_argument, NULL, O_IDLE},
	{"idle-spin", required_argument, NULL, O_SPIN},
	{"idle-sleep-us", required_argument, NULL, O_SLEEP},
	{"drain-ms", required_argument, NULL, O_DRAIN},
	{"linger-ms", required_argument, NULL, O_LINGER},
	{"fault", required_argument, NULL, O_FAULT},
	{"fault-queue", required_argument, NULL, O_FAULTQ},
	{"fault-seed", required_argument, NULL, O_FAULTSEED},
	{"rto-ms", required_argument, NULL, O_RTO},
	{"retries", required_argument, NULL, O_RETRIES},
	{"no-pace", no_argument, NULL, O_NOPACE},
	{"probe-ms", required_argument, NULL, O_PROBE},
	{"ctl-listen", required_argument, NULL, O_LISTEN},
	{"ctl-cert", required_argument, NULL, O_CERT},
	{"ctl-key", required_argument, NULL, O_KEY},
	{"ctl-ca", required_argument, NULL, O_CA},
	{"ctl-crl", required_argument, NULL, O_CRL},
	{"term-file", required_argument, NULL, O_TERM_FILE},
	{"ctl-handshake-ms", required_argument, NULL, O_HSMS},
	{"ctl-idle-ms", required_argument, NULL, O_IDLEMS},
	{"ctl-conns", required_argument, NULL, O_CONNS},
	{"crypto", required_argument, NULL, O_CRYPTO},
	{"crypto-ops", no_argument, NULL, O_CRYPTO_OPS},
	{"seal-mbufs", required_argument, NULL, O_SEAL_MBUFS},
	{"seal-links", required_argument, NULL, O_SEAL_LINKS},
	{"metrics", required_argument, NULL, O_METRICS},
	{"nat-addr", required_argument, NULL, O_NAT},
	{"revision", required_argument, NULL, O_REVISION},
	{"help", no_argument, NULL, 'h'},
	{"version", no_argument, NULL, 'V'},
	{NULL, 0, NULL, 0},
};

/* Not one of the options a parse_*_opt() function takes. */
#define OPT_OTHER 1

/* One option of the control socket or the metrics endpoint: 0, -1 on error, OPT_OTHER. */
static int
parse_ctl_opt(int c, struct dp_ctl_opts *ctl, const char **metrics)
{
	int rc = 0;

	switch (c) {
	case 's':
		ctl->socket = optarg;
		break;
	case O_LISTEN:
		ctl->listen = optarg;
		break;
	case O_CERT:
		ctl->cert = optarg;
		break;
	case O_KEY:
		ctl->key = optarg;
		break;
	case O_CA:
		ctl->ca = optarg;
		break;
	case O_CRL:
		ctl->crl = optarg;
		break;
	case O_TERM_FILE:
		ctl->term_file = optarg;
		break;
	case O_METRICS: {
		struct sockaddr_storage sa;
		socklen_t salen;
		char why[200];

		if (promsrv_parse_addr(optarg, &sa, &salen, why, sizeof(why)) != 0) {
			cli_error(DP_PROGRAM, "--metrics: %s", why);
			rc = -1;
		}
		*metrics = optarg;
		break;
	}
	case O_HSMS:
		rc = cli_int(DP_PROGRAM, "ctl-handshake-ms", optarg, 1, 600000, &ctl->handshake_ms);
		break;
	case O_IDLEMS:
		rc = cli_int(DP_PROGRAM, "ctl-idle-ms", optarg, 1, 86400000, &ctl->idle_ms);
		break;
	case O_CONNS:
		rc = cli_int(DP_PROGRAM, "ctl-conns", optarg, 1, CTLSRV_CLASS_MAX / 2, &ctl->conns);
		break;
	default:
		return OPT_OTHER;
	}
	return rc;
}

/* One option of the dataplane's sizes, addresses and behaviour: 0, -1 on error, OPT_OTHER. */
static int
parse_dp_opt(int c, struct dp_config *cfg)
{
	uint32_t v = 0;
	int rc = 0;

	switch (c) {
	case 'a':
		rc = parse_addr(optarg, cfg);
		break;
	case O_NAT:
		rc = parse_nat_addr(optarg, cfg);
		break;
	case O_REVISION: /* act as an older gateway: a test and upgrade aid */
		rc = u32_opt("revision", optarg, REVISION_OLDEST, GEOREDUCE_REVISION, &v);
		cfg->prm.act_revision = v < GEOREDUCE_REVISION ? (uint8_t)v : 0;
		break;
	case 'n':
		rc = parse_neigh(optarg, cfg);
		break;
	case 'r':
		rc = parse_route(optarg, cfg);
		break;
	case O_BASE:
		rc = u32_opt("base-port", optarg, 1, 65535, &v);
		cfg->prm.udp_base = (uint16_t)v;
		break;
	case O_PORTS:
		rc = u32_opt("ports", optarg, 1, TABLE_PORTS_MAX, &v);
		cfg->prm.udp_count = (uint16_t)v;
		break;
	case O_MTU:
		rc = u32_opt("mtu", optarg, WIRE_MTU_MIN, WIRE_MTU_MAX, &v);
		cfg->prm.mtu = (uint16_t)v;
		break;
	case O_MBUFS:
		rc = u32_opt("mbufs", optarg, 1024, 1 << 24, &v);
		cfg->prm.mbufs = v;
		break;
	case O_HDR:
		rc = u32_opt("hdr-mbufs", optarg, 256, 1 << 22, &cfg->hdr_mbufs);
		break;
	case O_CRYPTO:
		if (strlen(optarg) == 0 || strlen(optarg) >= sizeof(cfg->crypto_dev)) {
			fprintf(stderr,
				DP_PROGRAM ": --crypto: a device name of 1 to %zu "
					   "characters\n",
				sizeof(cfg->crypto_dev) - 1);
			rc = -1;
			break;
		}
		strcpy(cfg->crypto_dev, optarg);
		break;
	case O_CRYPTO_OPS:
		cfg->crypto_ops = true;
		break;
	case O_SEAL_MBUFS:
		rc = u32_opt("seal-mbufs", optarg, 256, 1 << 22, &cfg->seal_mbufs);
		break;
	case O_SEAL_LINKS:
		rc = u32_opt("seal-links", optarg, 1, 1 << 16, &cfg->seal_links);
		break;
	case O_RXD:
		rc = u32_opt("rx-desc", optarg, 32, 16384, &v);
		cfg->rx_desc = (uint16_t)v;
		break;
	case O_TXD:
		rc = u32_opt("tx-desc", optarg, 32, 16384, &v);
		cfg->tx_desc = (uint16_t)v;
		break;
	case O_BURST:
		rc = u32_opt("burst", optarg, 1, DP_BURST_MAX, &v);
		cfg->prm.burst = (uint16_t)v;
		break;
	case O_SPIN:
		rc = u32_opt("idle-spin", optarg, 0, 1 << 30, &cfg->prm.idle_spin);
		break;
	case O_IDLE:
		rc = dp_idle_mode_parse(optarg, &cfg->prm.idle_mode);
		if (rc != 0)
			cli_error(DP_PROGRAM, "--idle: expected intr, sleep or poll, got '%s'",
				  optarg);
		break;
	case O_SLEEP:
		rc = u32_opt("idle-sleep-us", optarg, 1, 1000000, &cfg->prm.idle_sleep_us);
		break;
	case O_DRAIN:
		rc = u32_opt("drain-ms", optarg, 0, 3600000, &cfg->prm.drain_ms);
		break;
	case O_LINGER:
		rc = u32_opt("linger-ms", optarg, 0, 3600000, &cfg->prm.linger_ms);
		break;
	case O_FAULT:
		rc = parse_fault(optarg, cfg);
		break;
	case O_FAULTSEED:
		rc = u32_opt("fault-seed", optarg, 0, INT_MAX, &v);
		cfg->prm.fault_seed = v;
		break;
	case O_NOPACE:
		cfg->prm.pace = false;
		break;
	case O_PROBE:
		rc = u32_opt("probe-ms", optarg, 10, 60000, &cfg->prm.probe_ms);
		break;
	case O_RTO:
		rc = u32_opt("rto-ms", optarg, 1, 60000, &cfg->rto_init_ms);
		break;
	case O_RETRIES:
		rc = u32_opt("retries", optarg, 0, 64, &v);
		cfg->retries_max = (uint8_t)v;
		break;
	case O_FAULTQ:
		rc = u32_opt("fault-queue", optarg, 64, 1 << 20, &v);
		if (rc == 0 && (v & (v - 1)) != 0) {
			cli_error(DP_PROGRAM, "--fault-queue: %u is not a power of two", v);
			rc = -1;
		}
		cfg->prm.fault_queue = v;
		break;
	default:
		return OPT_OTHER;
	}
	return rc;
}

/* What the options say together. 0, or -1 after a one-line error. */
static int
check_args(int argc, char **argv, const struct dp_config *cfg, const struct dp_ctl_opts *ctl)
{
	if (optind < argc) {
		cli_error(DP_PROGRAM, "unexpected argument '%s'", argv[optind]);
		return -1;
	}
	if (ctl->listen != NULL && (ctl->cert == NULL || ctl->key == NULL || ctl->ca == NULL)) {
		cli_error(DP_PROGRAM, "--ctl-listen needs --ctl-cert, --ctl-key and --ctl-ca");
		return -1;
	}
	if (ctl->listen == NULL &&
	    (ctl->cert != NULL || ctl->key != NULL || ctl->ca != NULL || ctl->crl != NULL)) {
		cli_error(DP_PROGRAM,
			  "--ctl-cert, --ctl-key, --ctl-ca and --ctl-crl need --ctl-listen");
		return -1;
	}
	if (wire_port_range_check(cfg->prm.udp_base, cfg->prm.udp_count) != 0) {
		cli_error(DP_PROGRAM, "--base-port %u --ports %u: the range passes 65535",
			  cfg->prm.udp_base, cfg->prm.udp_count);
		return -1;
	}
	return 0;
}

/* Our options (after EAL's). Returns 0, 1 for --help/--version (exit 0), -1 on error. */
static int
parse_args(int argc, char **argv, struct dp_config *cfg, struct dp_ctl_opts *ctl,
	   const char **metrics)
{
	int c, rc = 0;

	opterr = 0;
	optind = 1;
	while (rc == 0 && (c = getopt_long(argc, argv, "a:s:n:r:hV", long_opts, NULL)) != -1) {
		rc = parse_ctl_opt(c, ctl, metrics);
		if (rc == OPT_OTHER)
			rc = parse_dp_opt(c, cfg);
		if (rc != OPT_OTHER)
			continue;
		rc = 0;
		switch (c) {
		case 'h':
			usage(stdout, cfg);
			return 1;
		case 'V':
			printf(DP_PROGRAM " " DP_VERSION " (protocol revision 1.%d)\n",
			       GEOREDUCE_REVISION);
			return 1;
		default:
			cli_error(DP_PROGRAM,
				  "unknown option or missing value in '%s' (try -- --help)",
				  argv[optind - 1]);
			return -1;
		}
	}
	if (rc != 0)
		return -1;
	return check_args(argc, argv, cfg, ctl);
}

/* The metrics endpoint's renderer and log, on the control thread (promsrv_run()). */
static char *
metrics_render(void *arg, size_t *len)
{
	dp_peers_update(arg); /* replies already in count, as for `stats` */
	return dp_metrics_text(arg, len);
}

static void
metrics_log(void *arg, const char *line)
{
	(void)arg;
	DP_LOG(WARNING, "metrics: %s\n", line);
}

/* --help and --version without starting EAL: the options after "--", or alone. */
static bool
wants_help(int argc, char **argv)
{
	for (int i = 1; i < argc; i++)
		if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0 ||
		    strcmp(argv[i], "--version") == 0 || strcmp(argv[i], "-V") == 0) {
			bool after_dashes = false;

			for (int k = 1; k < i; k++)
				after_dashes |= strcmp(argv[k], "--") == 0;
			if (after_dashes || i == 1)
				return true;
		}
	return false;
}

int
main(int argc, char **argv)
{
	static struct dp dp;
	struct dp_config cfg;
	struct dp_ctl_opts ctlo = {
		.socket = CTL_SOCKET_DEFAULT,
		.handshake_ms = CTLSRV_HANDSHAKE_MS_DEFAULT,
		.idle_ms = CTLSRV_IDLE_MS_DEFAULT,
		.conns = CTLSRV_PER_ROLE_DEFAULT,
	};
	const char *sock, *metrics = NULL;
	char err[512];
	struct dp_ctl *ctl;
	struct promsrv *msrv = NULL;
	unsigned int lcore;
	int rc, n;

	dp_config_defaults(&cfg);
	if (wants_help(argc, argv)) {
		int i = 1;

		while (i < argc && strcmp(argv[i], "--") != 0)
			i++;
		char **a = i < argc ? argv + i : argv;
		int na = i < argc ? argc - i : argc;

		return parse_args(na, a, &cfg, &ctlo, &metrics) < 0 ? CLI_EXIT_USAGE : 0;
	}
	n = rte_eal_init(argc, argv);
	if (n < 0) {
		cli_error(DP_PROGRAM, "EAL initialisation failed: %s", rte_strerror(rte_errno));
		return CLI_EXIT_USAGE;
	}
	argv[n] = argv[0];
	rc = parse_args(argc - n, argv + n, &cfg, &ctlo, &metrics);
	sock = ctlo.socket;
	if (rc != 0) {
		rte_eal_cleanup();
		return rc < 0 ? CLI_EXIT_USAGE : 0;
	}
	RTE_LCORE_FOREACH_WORKER (lcore) {
		if (cfg.n_lcores < DP_LCORES_MAX)
			cfg.lcore_ids[cfg.n_lcores++] = lcore;
	}
	uint16_t pid;

	RTE_ETH_FOREACH_DEV (pid) {
		if (cfg.n_ports < DP_PORTS_MAX)
			cfg.port_ids[cfg.n_ports++] = pid;
	}
	if (dp_setup(&dp, &cfg, err, sizeof(err)) != 0) {
		cli_error(DP_PROGRAM, "%s", err);
		dp_teardown(&dp);
		rte_eal_cleanup();
		return CLI_EXIT_USAGE;
	}
	/* The default socket's directory may not exist yet. */
	if (strcmp(sock, CTL_SOCKET_DEFAULT) == 0)
		mkdir("/run/georeduce", 0755);
	ctl = dp_ctl_create(&dp, &ctlo, err, sizeof(err));
	if (ctl == NULL) {
		cli_error(DP_PROGRAM, "%s", err);
		dp_teardown(&dp);
		rte_eal_cleanup();
		return CLI_EXIT_USAGE;
	}
	if (metrics != NULL) {
		struct promsrv_opts mo = {
			.listen = metrics,
			.render = metrics_render,
			.arg = &dp,
			.log = metrics_log,
		};

		msrv = promsrv_create(&mo, err, sizeof(err));
		if (msrv == NULL) {
			cli_error(DP_PROGRAM, "%s", err);
			dp_ctl_free(ctl);
			dp_teardown(&dp);
			rte_eal_cleanup();
			return CLI_EXIT_USAGE;
		}
		dp.msrv = msrv;
	}
	if (dp_telemetry_register(&dp) != 0)
		DP_LOG(WARNING, "telemetry commands not registered\n");
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	signal(SIGHUP, on_signal);
	signal(SIGPIPE, SIG_IGN);
	for (unsigned int i = 0; i < dp.n_lcores; i++)
		rte_eal_remote_launch(dp_worker_main, dp.lcores[i], dp.lcores[i]->lcore_id);
	for (unsigned int p = 0; p < dp.n_ports; p++) {
		char ip[16], mac[RTE_ETHER_ADDR_FMT_SIZE];

		rte_ether_format_addr(mac, sizeof(mac), &dp.ports[p].mac);
		DP_LOG(NOTICE, "port %u: %s/%u %s, %u RX queues\n", dp.ports[p].port_id,
		       table_ipv4_format(dp.ports[p].ipv4, ip), dp.ports[p].prefix_len, mac,
		       dp.ports[p].n_rxq);
	}
	unsigned int n_intr = 0;

	for (unsigned int i = 0; i < dp.n_lcores; i++)
		n_intr += dp.lcores[i]->idle_mode == DP_IDLE_INTR;
	DP_LOG(NOTICE,
	       "%u worker lcores, kernels %s, idle %s (%u on Rx interrupts), control socket %s\n",
	       dp.n_lcores, dp.lcores[0]->k->name, dp_idle_mode_name(dp.prm.idle_mode), n_intr,
	       sock);
	if (ctlo.listen != NULL)
		DP_LOG(NOTICE, "control protocol over TLS on %s\n", ctlo.listen);
	if (metrics != NULL)
		DP_LOG(NOTICE, "metrics on http://%s/metrics\n", metrics);
	printf(DP_PROGRAM ": ready, control socket %s%s%s\n", sock,
	       ctlo.listen != NULL ? ", tls://" : "", ctlo.listen != NULL ? ctlo.listen : "");
	fflush(stdout);
	while (!quit) {
		if (hup) {
			hup = 0;
			dp_ctl_reload_tls(ctl, NULL, 0);
		}
		dp_ctl_poll(ctl, CTL_POLL_MS);
		dp_housekeeping(&dp);
		if (msrv != NULL)
			promsrv_run(msrv); /* never blocks; scrapes are rendered here */
	}
	DP_LOG(NOTICE, "stopping\n");
	atomic_store(&dp.stop, true);
	for (unsigned int i = 0; i < dp.n_lcores; i++)
		dp_lcore_wake(&dp, i);
	rte_eal_mp_wait_lcore();
	promsrv_free(msrv);
	dp_ctl_free(ctl);
	dp_teardown(&dp);
	rte_eal_cleanup();
	return 0;
}
