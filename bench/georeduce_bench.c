/* SPDX-License-Identifier: BSD-3-Clause
 *
 * georeduce-bench: a DPDK traffic generator that certifies a gateway's line rate
 * (docs/BENCH.md). It emulates the local workers of one job (in port mode also the
 * gateway's child gateways and parent), sends their contributions at full speed or at a
 * given rate, verifies every RESULT it gets back (and, as the parent, every partial sum)
 * and reports offered and achieved rates, chunk completion latency, losses and
 * retransmissions, per lcore.
 *
 *  --mode ring  the real dataplane (dp_setup, dp_prepare, dp_activate, dp_worker_main) on
 *               one worker lcore of this process, the generator on another lcore (the
 *               main lcore when there is no third one), connected by two net_ring ports;
 *               then, in the same run, an io-forwarder (rx_burst -> tx_burst) on the same
 *               lcore and port instead of the dataplane, for the same frames.
 *  --mode port  against a gateway on any port (a NIC, or net_memif to a dataplane in
 *               another process), driven by the gateway's georeduce-table/1 file; with
 *               --peer io, against an io-forwarder (dpdk-testpmd) on the same port.
 *
 * EAL options come first, the bench's after "--"; the bench's options are parsed before
 * EAL starts, so that a bad option costs nothing.
 *
 * This file: the runs of both modes (set-up, the phases, teardown) and main(). The options
 * are parsed in georeduce_bench_opts.c, the report made in georeduce_bench_report.c, the
 * generator itself is gen.c. Main lcore, except the io-forwarder, the core-to-core probe
 * and the generator when launched on worker lcores.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>
#include <rte_cycles.h>
#include <rte_eal.h>
#include <rte_ethdev.h>
#include <rte_eth_ring.h>
#include <rte_launch.h>
#include <rte_lcore.h>
#include <rte_log.h>
#include <rte_mbuf.h>
#include <rte_ring.h>

#include "bench_dp.h"
#include "cli.h"
#include "dp.h"
#include "gen.h"
#include "georeduce_bench.h"
#include "georeduce_bench_opts.h"
#include "georeduce_bench_out.h"
#include "georeduce_bench_report.h"
#include "georeduce_bench_search.h"
#include "slowpath/slowpath.h"
#include "table.h"
#include "wire.h"

#define RING_SIZE 4096
#define GW_ID 1
#define GW_IP 0x0a000001u      /* 10.0.0.1/16 */
#define WORKER_IP0 0x0a000101u /* 10.0.1.1, 10.0.1.2, ... */
#define WORKER_ID0 101
#define WORKER_PORT0 5000
#define JOB 1
#define EPOCH 1

/* An io-forwarder: rx_burst -> tx_burst on one queue, as testpmd's io mode. */
struct iofwd {
	uint16_t port;
	uint16_t burst;
	atomic_bool stop;
	uint64_t rx, tx, busy; /* this lcore: wo; others: relaxed */
};

/* The ring mode's set-up. */
struct ring_bench {
	struct rte_ring *to_dp, *to_gen;
	int dp_port, gen_port; /* -1: not created */
	struct rte_mempool *pool;
	struct dp *dp;
	bool dp_up;
	struct table *tb;
	unsigned int dp_lcore;
	struct iofwd io;
	struct phase *cur; /* the phase being measured (for the mark callback) */
};

/* --- Generator runs ----------------------------------------------------------------------- */

static void
fill_params(const struct opts *o, struct gen_params *p, uint16_t port, enum gen_peer peer)
{
	memset(p, 0, sizeof(*p));
	p->peer = peer;
	p->port_id = port;
	p->burst = o->burst;
	p->rate_gbps = o->rate_gbps;
	p->pace_burst = o->pace_burst;
	p->rto_tsc = rte_get_tsc_hz() / 1000 * o->rto_ms;
	p->verify_every = o->verify_every;
	p->rounds = o->rounds;
	p->progress = !o->quiet;
	p->progress_s = 1;
	p->warmup_s = o->warmup;
	p->duration_s = o->duration;
	p->drain_s = RTE_MAX(1.0, 8.0 * o->rto_ms / 1e3);
}

/* --- Core-to-core latency ------------------------------------------------------------------ */

/*
 * Where the host places the generator's and the peer's cores decides how fast frames move
 * between them: a cache line's round trip is ~60 ns between cores that share an L3 and
 * ~300 ns across L3 domains (two vCPUs of a VM can land on either, and move). Measured
 * before each phase and printed with it, so that runs compare like with like.
 */
struct c2c {
	atomic_uint flag __rte_cache_aligned;
	unsigned int rounds;
	uint64_t tsc;
};

#define C2C_ROUNDS 20000

static int
c2c_pong(void *arg)
{
	struct c2c *c = arg;

	for (unsigned int i = 0; i < c->rounds; i++) {
		while (atomic_load_explicit(&c->flag, memory_order_acquire) != 2 * i + 1)
			;
		atomic_store_explicit(&c->flag, 2 * i + 2, memory_order_release);
	}
	return 0;
}

static int
c2c_ping(void *arg)
{
	struct c2c *c = arg;
	uint64_t t0 = rte_rdtsc();

	for (unsigned int i = 0; i < c->rounds; i++) {
		atomic_store_explicit(&c->flag, 2 * i + 1, memory_order_release);
		while (atomic_load_explicit(&c->flag, memory_order_acquire) != 2 * i + 2)
			;
	}
	c->tsc = rte_rdtsc() - t0;
	return 0;
}

/* The mean round trip of a cache line between lcores a and b (b a worker lcore, idle) in
 * ns; 0 if b cannot be launched. */
static double
c2c_rtt_ns(unsigned int a, unsigned int b)
{
	static struct c2c c;

	atomic_store(&c.flag, 0);
	c.rounds = C2C_ROUNDS;
	c.tsc = 0;
	if (rte_eal_remote_launch(c2c_pong, &c, b) != 0)
		return 0;
	if (a == rte_get_main_lcore())
		c2c_ping(&c);
	else if (rte_eal_remote_launch(c2c_ping, &c, a) == 0)
		rte_eal_wait_lcore(a);
	else
		c2c_pong(&c); /* a is busy (cannot happen): let b finish, report nothing */
	rte_eal_wait_lcore(b);
	return (double)c.tsc * 1e9 / (double)rte_get_tsc_hz() / C2C_ROUNDS;
}

/* The generator's lcore: the first worker lcore not taken, else the main lcore. */
static unsigned int
pick_lcore(int skip)
{
	unsigned int id;

	RTE_LCORE_FOREACH_WORKER (id)
		if ((int)id != skip)
			return id;
	return rte_get_main_lcore();
}

/* Run one generator to the end of its schedule on lcore `lcore`. */
int
bench_run_gen(struct gen_lcore *g, unsigned int lcore)
{
	if (lcore == rte_get_main_lcore())
		return gen_lcore_main(g);
	if (rte_eal_remote_launch(gen_lcore_main, g, lcore) != 0)
		return -EBUSY;
	return rte_eal_wait_lcore(lcore);
}

int
bench_phase_run(const struct opts *o, const struct gen_job *gj, const struct gen_params *prm,
		struct rte_mempool *pool, struct phase *p)
{
	char err[TABLE_ERR_MAX] = "";
	struct gen_lcore *g = gen_lcore_create(gj, prm, pool, err, sizeof(err));
	int rc;

	if (g == NULL) {
		cli_error(PROG, "%s", err);
		return -ENOMEM;
	}
	gw_mark(o, p, false);
	rc = bench_run_gen(g, p->gen_lcore);
	gw_mark(o, p, true);
	p->res = *gen_lcore_result(g);
	p->ran = rc == 0;
	gen_lcore_free(g);
	return rc;
}

/* --- Ring mode ---------------------------------------------------------------------------- */

static int
iofwd_main(void *arg)
{
	struct iofwd *io = arg;
	struct rte_mbuf *pkts[GEN_BURST_MAX];

	while (!atomic_load_explicit(&io->stop, memory_order_relaxed)) {
		uint64_t t0 = rte_rdtsc();
		uint16_t n = rte_eth_rx_burst(io->port, 0, pkts, io->burst), sent;

		if (n == 0)
			continue;
		sent = rte_eth_tx_burst(io->port, 0, pkts, n);
		if (sent < n)
			rte_pktmbuf_free_bulk(&pkts[sent], n - sent);
		io->rx += n;
		io->tx += sent;
		io->busy += rte_rdtsc() - t0;
	}
	return 0;
}

/* The generator's port's counters into p->xs[end] (on the generator's lcore). */
static void
port_mark(struct phase *p, bool end)
{
	struct rte_eth_stats st;

	if (rte_eth_stats_get(p->port, &st) == 0)
		p->xs[end ? 1 : 0] = (struct port_snap){st.ipackets,  st.opackets, st.imissed,
							st.rx_nombuf, st.ierrors,  st.oerrors};
}

/* The line rate of a phase's port: --line-gbps, else what the port reports. */
static void
line_rate(const struct opts *o, struct phase *p)
{
	struct rte_eth_link link;

	p->line_gbps = o->line_gbps;
	p->line_from = "--line-gbps";
	if (o->line_gbps > 0)
		return;
	p->line_from = "unknown";
	memset(&link, 0, sizeof(link));
	if (rte_eth_link_get_nowait(p->port, &link) == 0 &&
	    link.link_speed != RTE_ETH_SPEED_NUM_NONE &&
	    link.link_speed != RTE_ETH_SPEED_NUM_UNKNOWN) {
		p->line_gbps = link.link_speed / 1e3;
		p->line_from = "port";
	}
}

static void
port_only_mark(void *arg, bool end)
{
	port_mark(arg, end);
}

static void
ring_mark(void *arg, bool end)
{
	struct ring_bench *rb = arg;
	struct peer_snap *s = &rb->cur->peer[end ? 1 : 0];

	port_mark(rb->cur, end);
	if (strcmp(rb->cur->name, "io-forward") == 0) {
		s->rx = rb->io.rx;
		s->tx = rb->io.tx;
		s->busy = rb->io.busy;
		s->drops = 0;
		return;
	}
	const struct dp_lcore *lc = rb->dp->lcores[0];

	s->rx = lc->ctr[DP_CTR_RX_PACKETS];
	s->tx = lc->ctr[DP_CTR_TX_PACKETS];
	s->busy = lc->cycles_busy;
	s->drops = lc->ctr[DP_CTR_TX_DROPPED] + lc->ctr[DP_CTR_NO_MBUF] +
		   lc->ctr[DP_CTR_NO_NEIGHBOUR] + lc->ctr[DP_CTR_BAD_FRAME] +
		   lc->ctr[DP_CTR_BAD_HEADER] + lc->ctr[DP_CTR_NOT_FOR_US];
	for (int i = 0; i < WIRE_REASON_COUNT_MAX; i++)
		s->drops += lc->drops[i];
	s->why[0] = lc->ctr[DP_CTR_TX_DROPPED];
	s->why[1] = lc->ctr[DP_CTR_NO_MBUF];
	s->why[2] = lc->ctr[DP_CTR_NO_NEIGHBOUR];
	s->why[3] = lc->ctr[DP_CTR_PACE_FULL];
	for (int i = 1; i < WIRE_REASON_COUNT_MAX; i++)
		s->why[GW_DROP_CTRS + i] = lc->drops[i];
}

/* The table of the ring mode's gateway: root of one tree with F local workers. */
static struct table *
ring_table(const struct opts *o, unsigned int slots)
{
	int n_children = 0, n_workers = (int)o->fanin;
	struct table *tb = table_create(1, &n_children, &n_workers);
	struct table_tree *tr;

	if (tb == NULL)
		return NULL;
	tb->job = JOB;
	tb->epoch = EPOCH;
	tb->gw = (struct table_gw){GW_ID, GW_IP, WIRE_PORT_BASE_DEFAULT, WIRE_PORT_COUNT_DEFAULT};
	tb->dtype = (enum table_dtype)o->dtype;
	tb->chunk_elements = o->payload / wire_dtype_size(o->dtype);
	tb->elements = (uint64_t)o->window * tb->chunk_elements;
	tb->limits = (struct table_limits){1, 1, o->fanin, slots};
	tr = &tb->trees[0];
	tr->role = TABLE_ROLE_ROOT;
	tr->expected = o->fanin;
	tr->subtree_workers = o->fanin;
	tr->chunk_first = 0;
	tr->chunk_count = o->window;
	tr->rate_gbps = 100;
	tr->slots = slots;
	for (unsigned int w = 0; w < o->fanin; w++)
		tr->workers[w] = (struct table_worker){(uint16_t)(WORKER_ID0 + w), WORKER_IP0 + w,
						       (uint16_t)(WORKER_PORT0 + w)};
	return tb;
}

static int
port_start(uint16_t port, struct rte_mempool *pool, unsigned int mtu, char *err, size_t errlen)
{
	struct rte_eth_conf conf = {0};
	struct rte_eth_dev_info info;
	int rc = rte_eth_dev_info_get(port, &info);

	if (rc == 0 && mtu > RTE_ETHER_MTU) {
		if (info.max_mtu < mtu) {
			snprintf(err, errlen, "port %u: its largest MTU is %u, %u needed", port,
				 info.max_mtu, mtu);
			return -EINVAL;
		}
		conf.rxmode.mtu = mtu;
	}
	if (rc == 0)
		rc = rte_eth_dev_configure(port, 1, 1, &conf);
	if (rc == 0)
		rc = rte_eth_rx_queue_setup(port, 0, 1024,
					    (unsigned int)rte_eth_dev_socket_id(port), NULL, pool);
	if (rc == 0)
		rc = rte_eth_tx_queue_setup(port, 0, 1024,
					    (unsigned int)rte_eth_dev_socket_id(port), NULL);
	if (rc == 0)
		rc = rte_eth_dev_start(port);
	if (rc != 0)
		snprintf(err, errlen, "port %u: cannot start it: %s", port, rte_strerror(-rc));
	return rc;
}

static struct rte_mempool *
frame_pool(const char *name, unsigned int n, unsigned int frame_len)
{
	unsigned int room = RTE_MAX(frame_len, (unsigned int)RTE_MBUF_DEFAULT_DATAROOM);

	room = RTE_ALIGN_CEIL(room, 64);
	return rte_pktmbuf_pool_create(name, n, 256, 0, (uint16_t)(room + RTE_PKTMBUF_HEADROOM),
				       (int)rte_socket_id());
}

static void
ring_teardown(struct ring_bench *rb)
{
	if (rb->dp_up)
		dp_teardown(rb->dp); /* closes the dataplane's port; slots drop their frames */
	else if (rb->dp_port >= 0)
		rte_eth_dev_close((uint16_t)rb->dp_port);
	if (rb->gen_port >= 0) {
		rte_eth_dev_stop((uint16_t)rb->gen_port);
		rte_eth_dev_close((uint16_t)rb->gen_port);
	}
	for (struct rte_ring *r = rb->to_dp; r != NULL; r = r == rb->to_dp ? rb->to_gen : NULL) {
		struct rte_mbuf *m;

		while (rte_ring_dequeue(r, (void **)&m) == 0)
			rte_pktmbuf_free(m);
	}
	rte_ring_free(rb->to_dp);
	rte_ring_free(rb->to_gen);
	rte_mempool_free(rb->pool);
	table_free(rb->tb);
	free(rb->dp);
}

static int
ring_setup(const struct opts *o, struct ring_bench *rb, struct gen_job *gj, unsigned int mtu,
	   char *err, size_t errlen)
{
	unsigned int slots = rte_align32pow2(o->window), socket = rte_socket_id();
	struct rte_ether_addr gen_mac;
	struct dp_config cfg;
	uint32_t job, epoch;
	json_t *tj;
	int rc;

	rb->tb = ring_table(o, slots);
	if (rb->tb == NULL || table_validate(rb->tb, err, errlen) != 0) {
		if (rb->tb == NULL)
			snprintf(err, errlen, "cannot build the table: %s", strerror(errno));
		return -EINVAL;
	}
	rc = gen_job_from_table(gj, rb->tb, o->window, err, errlen);
	if (rc != 0)
		return rc;
	rb->to_dp =
		rte_ring_create("gb_to_dp", RING_SIZE, (int)socket, RING_F_SP_ENQ | RING_F_SC_DEQ);
	rb->to_gen =
		rte_ring_create("gb_to_gen", RING_SIZE, (int)socket, RING_F_SP_ENQ | RING_F_SC_DEQ);
	if (rb->to_dp == NULL || rb->to_gen == NULL) {
		snprintf(err, errlen, "cannot create the rings: %s", rte_strerror(rte_errno));
		return -ENOMEM;
	}
	rb->dp_port = rte_eth_from_rings("gb_dp", &rb->to_dp, 1, &rb->to_gen, 1, socket);
	rb->gen_port = rb->dp_port < 0 ?
			       -1 :
			       rte_eth_from_rings("gb_gen", &rb->to_gen, 1, &rb->to_dp, 1, socket);
	if (rb->dp_port < 0 || rb->gen_port < 0) {
		snprintf(err, errlen, "rte_eth_from_rings: %s", rte_strerror(rte_errno));
		return -ENODEV;
	}
	/* Frames per worker and chunk, a copy per round in flight and two per slot. */
	rb->pool =
		frame_pool("gb_frames", gj->n_chunks * (gj->n_workers + 4) + 4096, gj->frame_len);
	rb->dp = calloc(1, sizeof(*rb->dp));
	if (rb->pool == NULL || rb->dp == NULL) {
		snprintf(err, errlen,
			 "cannot allocate %u frames of %u bytes (give EAL more "
			 "memory, -m)",
			 gj->n_chunks * (gj->n_workers + 4) + 4096, gj->frame_len);
		return -ENOMEM;
	}
	if ((rc = port_start((uint16_t)rb->gen_port, rb->pool, 0, err, errlen)) != 0)
		return rc;
	rte_eth_macaddr_get((uint16_t)rb->gen_port, &gen_mac);
	dp_config_defaults(&cfg);
	cfg.prm.idle_spin = 0;
	cfg.prm.burst = (uint16_t)o->burst;
	cfg.prm.mtu = (uint16_t)mtu;
	cfg.prm.mbufs = 2 * slots + 8192;
	cfg.hdr_mbufs = RTE_MAX(8192u, 2 * gj->n_chunks * gj->n_workers + 4096);
	bench_dp_one_port(&cfg, rb->dp_lcore, (uint16_t)rb->dp_port, GW_IP);
	cfg.prm.fault_seed = o->dp_fault_seed;
	for (unsigned int i = 0; i < o->n_dp_fault; i++) {
		unsigned int port;
		struct dp_fault f;
		int dir;

		/* Checked with the options; now with the TSC's rate for delay_ms. */
		if (dp_fault_parse(o->dp_fault[i], (double)rte_get_tsc_hz(), &port, &dir, &f, err,
				   errlen) != 0)
			return -EINVAL;
		cfg.fault[0][dir] = f;
	}
	cfg.n_neigh = RTE_MIN(o->fanin, (unsigned int)RTE_DIM(cfg.neigh));
	for (unsigned int w = 0; w < cfg.n_neigh; w++) {
		cfg.neigh[w].ipv4 = WORKER_IP0 + w;
		cfg.neigh[w].mac = gen_mac;
	}
	rb->dp_up = true;
	if ((rc = dp_setup(rb->dp, &cfg, err, errlen)) != 0)
		return rc;
	rte_eal_remote_launch(dp_worker_main, rb->dp->lcores[0], rb->dp_lcore);
	tj = table_to_json(rb->tb);
	if (tj == NULL) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	rc = dp_prepare(rb->dp, tj, 0, &job, &epoch, err, errlen);
	json_decref(tj);
	if (rc == 0)
		rc = dp_activate(rb->dp, job, epoch, err, errlen);
	return rc;
}

/* The search against ring mode's dataplane (no io-forward phase). */
static int
ring_search(const struct opts *o, struct ring_bench *rb, const struct gen_job *gj,
	    struct search_result *sr)
{
	struct search_env e = {.gj = gj, .pool = rb->pool, .cur = &rb->cur};
	struct rte_ether_addr mac;

	e.tmpl.name = "dataplane";
	e.tmpl.gen_lcore = pick_lcore((int)rb->dp_lcore);
	e.tmpl.has_peer = true;
	e.tmpl.peer_lcore = rb->dp_lcore;
	e.tmpl.port = (uint16_t)rb->gen_port;
	line_rate(o, &e.tmpl);
	fill_params(o, &e.prm, (uint16_t)rb->gen_port, GEN_PEER_DATAPLANE);
	e.prm.first_copy = true;
	e.prm.on_mark = ring_mark;
	e.prm.mark_arg = rb;
	rte_eth_macaddr_get((uint16_t)rb->gen_port, &mac);
	memcpy(e.prm.src_mac, mac.addr_bytes, 6);
	memcpy(e.prm.dst_mac, rb->dp->ports[0].mac.addr_bytes, 6);
	return search_run(o, &e, gj->n_workers, sr);
}

static int
run_ring(const struct opts *o, struct phase *ph, unsigned int *n_ph, struct gen_job *gj,
	 unsigned int *mtu_out, struct search_result *sr)
{
	struct ring_bench rb = {.dp_port = -1, .gen_port = -1};
	unsigned int mtu = o->mtu != 0                                     ? o->mtu :
			   o->payload + WIRE_MTU_OVERHEAD <= RTE_ETHER_MTU ? RTE_ETHER_MTU :
									     9000;
	char err[TABLE_ERR_MAX] = "";
	struct gen_params prm;
	struct rte_ether_addr mac;
	int rc;

	*mtu_out = mtu;
	if (rte_lcore_count() < 2) {
		cli_error(PROG, "--mode ring needs two lcores at least (-l 0-1): the dataplane "
				"runs on a worker lcore");
		return CLI_EXIT_USAGE;
	}
	rb.dp_lcore = rte_get_next_lcore(-1, 1, 0);
	ph[0].c2c_ns = c2c_rtt_ns(pick_lcore((int)rb.dp_lcore), rb.dp_lcore);
	rc = ring_setup(o, &rb, gj, mtu, err, sizeof(err));
	if (rc != 0) {
		cli_error(PROG, "%s", err);
		if (rb.dp != NULL)
			atomic_store(&rb.dp->stop, true);
		rte_eal_mp_wait_lcore();
		ring_teardown(&rb);
		return CLI_EXIT_USAGE;
	}
	if (o->search) {
		rc = ring_search(o, &rb, gj, sr);
		atomic_store(&rb.dp->stop, true);
		rte_eal_mp_wait_lcore();
		ring_teardown(&rb);
		return rc;
	}
	for (int k = 0; k < (o->baseline ? 2 : 1); k++) {
		struct phase *p = &ph[(*n_ph)++];

		p->name = k == 0 ? "dataplane" : "io-forward";
		p->gen_lcore = pick_lcore((int)rb.dp_lcore);
		p->has_peer = true;
		p->peer_lcore = rb.dp_lcore;
		p->port = (uint16_t)rb.gen_port;
		line_rate(o, p);
		rb.cur = p;
		if (k == 1) {
			/* The same lcore and port, now forwarding instead of aggregating. */
			atomic_store(&rb.dp->stop, true);
			rte_eal_wait_lcore(rb.dp_lcore);
			p->c2c_ns = c2c_rtt_ns(p->gen_lcore, rb.dp_lcore);
			rb.io.port = (uint16_t)rb.dp_port;
			rb.io.burst = (uint16_t)o->burst;
			atomic_store(&rb.io.stop, false);
			rte_eal_remote_launch(iofwd_main, &rb.io, rb.dp_lcore);
		}
		fill_params(o, &prm, (uint16_t)rb.gen_port,
			    k == 0 ? GEN_PEER_DATAPLANE : GEN_PEER_IO);
		prm.first_copy = true; /* the dataplane sums into the first frame */
		prm.on_mark = ring_mark;
		prm.mark_arg = &rb;
		rte_eth_macaddr_get((uint16_t)rb.gen_port, &mac);
		memcpy(prm.src_mac, mac.addr_bytes, 6);
		memcpy(prm.dst_mac, rb.dp->ports[0].mac.addr_bytes, 6);
		if (!o->quiet)
			fprintf(stderr,
				PROG ": %s: %u B x %u workers %s, window %u, generator on "
				     "lcore %u, %s on lcore %u\n",
				p->name, o->payload, o->fanin, wire_dtype_str(o->dtype),
				gj->n_chunks, p->gen_lcore, p->name, rb.dp_lcore);
		rc = bench_phase_run(o, gj, &prm, rb.pool, p);
		if (rc != 0)
			break;
		if (k == 0) {
			/* Every frame it corrupted went to the generator before the run ended. */
			p->corrupted = rb.dp->lcores[0]->ctr[DP_CTR_FAULT_CORRUPTED];
			p->corrupted_read = true;
		}
	}
	atomic_store(&rb.dp->stop, true);
	atomic_store(&rb.io.stop, true);
	rte_eal_mp_wait_lcore();
	ring_teardown(&rb);
	return rc == 0 ? 0 : CLI_EXIT_FAIL;
}

/* --- Port mode ---------------------------------------------------------------------------- */

/*
 * Before the port closes: QUIESCE_MS without sending, whatever comes in received and freed.
 * A dataplane on the other side of net_memif (its server) unmaps the bench's shared memory
 * when the bench disconnects, from its control thread and without waiting for its worker
 * lcores: a worker still copying the bench's last frames out of it then faults (DPDK 22.11's
 * memif). Quiet, the gateway's receive ring is empty and its worker idle when that happens.
 */
#define QUIESCE_MS 500

static void
port_quiesce(uint16_t port)
{
	uint64_t end = rte_get_timer_cycles() + rte_get_timer_hz() * QUIESCE_MS / 1000;
	struct rte_mbuf *m[32];

	while (rte_get_timer_cycles() < end) {
		uint16_t n = rte_eth_rx_burst(port, 0, m, RTE_DIM(m));

		rte_pktmbuf_free_bulk(m, n);
		if (n == 0)
			rte_delay_us_sleep(1000);
	}
}

static int
run_port(const struct opts *o, struct phase *ph, unsigned int *n_ph, struct gen_job *gj,
	 struct table **tbp, unsigned int *mtu_out, struct search_result *sr)
{
	char err[TABLE_ERR_MAX] = "";
	struct rte_mempool *pool = NULL;
	struct rte_ether_addr mac;
	struct gen_params prm;
	struct phase *p;
	int rc;

	*tbp = table_load(o->table, err, sizeof(err));
	if (*tbp == NULL) {
		cli_error(PROG, "--table: %s", err);
		return CLI_EXIT_USAGE;
	}
	if (gen_job_from_table(gj, *tbp, o->window, err, sizeof(err)) != 0) {
		cli_error(PROG, "%s", err);
		return CLI_EXIT_USAGE;
	}
	if (gj->mc != NULL && o->peer != GEN_PEER_DATAPLANE) {
		cli_error(PROG, "--peer: a multicast table is driven against a gateway only");
		return CLI_EXIT_USAGE;
	}
	*mtu_out = RTE_MAX(RTE_ETHER_MTU, gj->max_frame - RTE_ETHER_HDR_LEN);
	if (!rte_eth_dev_is_valid_port(o->port)) {
		cli_error(PROG, "--port: no ethdev port %u (%u probed; bind a NIC or add --vdev)",
			  o->port, rte_eth_dev_count_avail());
		return CLI_EXIT_USAGE;
	}
	pool = frame_pool("gb_frames", gj->n_chunks * (gj->n_workers + 4) + 8192, gj->max_frame);
	if (pool == NULL) {
		cli_error(PROG, "cannot allocate the frames (give EAL more memory, -m)");
		return CLI_EXIT_USAGE;
	}
	if (port_start(o->port, pool,
		       gj->max_frame > RTE_ETHER_MAX_LEN - RTE_ETHER_CRC_LEN ? *mtu_out : 0, err,
		       sizeof(err)) != 0) {
		cli_error(PROG, "%s", err);
		rte_mempool_free(pool);
		return CLI_EXIT_USAGE;
	}
	rte_eth_macaddr_get(o->port, &mac);
	fill_params(o, &prm, o->port, o->peer);
	prm.answer_arp = true;
	memcpy(prm.src_mac, mac.addr_bytes, 6);
	memset(prm.dst_mac, 0xff, 6);
	if (o->peer == GEN_PEER_DATAPLANE) {
		rc = gen_arp_resolve(o->port, 0, pool, gj, prm.src_mac, o->gw_mac_set ? 1 : 5,
				     prm.dst_mac);
		if (rc != 0 && !o->gw_mac_set) {
			char ip[16];

			cli_error(PROG,
				  "--table: the gateway %s does not answer ARP on port %u "
				  "(is the dataplane running with the job installed? --gw-mac "
				  "skips ARP)",
				  table_ipv4_format(gj->gw_ipv4, ip), o->port);
			rte_eth_dev_stop(o->port);
			rte_mempool_free(pool);
			return CLI_EXIT_FAIL;
		}
	}
	if (o->gw_mac_set)
		memcpy(prm.dst_mac, o->gw_mac, 6);
	p = &ph[(*n_ph)++];
	p->name = o->peer == GEN_PEER_IO ? "io-forward" : "dataplane";
	p->gen_lcore = pick_lcore(-1);
	p->port = o->port;
	line_rate(o, p);
	prm.on_mark = port_only_mark;
	prm.mark_arg = p;
	if (!o->quiet)
		fprintf(stderr,
			PROG ": %s on port %u: job %u, %u B x %u workers %s, window %u, "
			     "generator on lcore %u\n",
			p->name, o->port, gj->job, gj->payload, gj->n_workers,
			wire_dtype_str(gj->dtype), gj->n_chunks, p->gen_lcore);
	if (o->search) {
		struct search_env e = {.gj = gj, .prm = prm, .pool = pool, .tmpl = *p};

		(*n_ph)--;
		rc = search_run(o, &e, gj->n_workers, sr);
		port_quiesce(o->port);
		rte_eth_dev_stop(o->port);
		rte_eth_dev_close(o->port);
		rte_mempool_free(pool);
		return rc;
	}
	rc = bench_phase_run(o, gj, &prm, pool, p);
	port_quiesce(o->port);
	rte_eth_dev_stop(o->port);
	rte_eth_dev_close(o->port);
	rte_mempool_free(pool);
	return rc == 0 ? 0 : CLI_EXIT_FAIL;
}

/* --- Main --------------------------------------------------------------------------------- */

int
main(int argc, char **argv)
{
	struct phase ph[2];
	struct search_result sr = {0};
	struct gen_job gj = {0};
	struct table *tb = NULL;
	unsigned int n_ph = 0, mtu = 0;
	struct opts o;
	int sep = argc, rc;

	for (int i = 1; i < argc; i++)
		if (strcmp(argv[i], "--") == 0) {
			sep = i;
			break;
		}
	/* The bench's options first: argv[sep] ("--") stands in for the program name. */
	if (parse_opts(sep < argc ? argc - sep : 1, sep < argc ? argv + sep : argv, &o) != 0)
		return CLI_EXIT_USAGE;
	memset(ph, 0, sizeof(ph));
	rte_openlog_stream(stderr);
	if (rte_eal_init(sep, argv) < 0) {
		cli_error(PROG, "cannot initialise EAL: %s", rte_strerror(rte_errno));
		return CLI_EXIT_USAGE;
	}
	rte_log_set_level(dp_logtype, RTE_LOG_WARNING);
	if (o.mode == MODE_RING)
		rc = run_ring(&o, ph, &n_ph, &gj, &mtu, &sr);
	else
		rc = run_port(&o, ph, &n_ph, &gj, &tb, &mtu, &sr);
	for (unsigned int i = 0; i < n_ph; i++) {
		derive(&ph[i], gj.n_workers);
		if (ph[i].wrong != 0 && rc != CLI_EXIT_USAGE)
			rc = EXIT_WRONG_SUM;
		else if (rc == 0 && (ph[i].bad != 0 || ph[i].lost != 0 || ph[i].achieved_mpps <= 0))
			rc = CLI_EXIT_FAIL;
		else
			continue;
		cli_error(PROG, "%s: %s", ph[i].name,
			  ph[i].res.error[0] != '\0' ? ph[i].res.error :
			  ph[i].lost != 0            ? "chunks were lost" :
						       "no chunk completed");
		print_wrong(stderr, &ph[i]);
	}
	if (gj.payload != 0 && (n_ph > 0 || sr.n > 0)) {
		int orc = out_write(&o, &gj, mtu, ph, n_ph, &sr);

		if (rc == 0)
			rc = orc;
	}
	search_fini(&sr);
	gen_job_fini(&gj);
	table_free(tb);
	rte_eal_cleanup();
	return rc;
}
