/* SPDX-License-Identifier: BSD-3-Clause
 *
 * EAL tests of the dataplane (dataplane/fastpath, dataplane/slowpath) through net_ring
 * ports: crafted frames in, the frames it sends out checked field by field.
 *
 * Most tests play the worker lcore on the main thread (dp_worker_poll), so every step is
 * deterministic; the epoch-swap test runs the real worker loop on lcore 1 while the main
 * thread injects traffic and swaps tables. No hugepages, no NIC.
 */
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <CUnit/Basic.h>
#include <jansson.h>
#include <openssl/evp.h>
#include <rte_arp.h>
#include <rte_cycles.h>
#include <rte_eal.h>
#include <rte_eth_ring.h>
#include <rte_ethdev.h>
#include <rte_icmp.h>
#include <rte_ip.h>
#include <rte_launch.h>
#include <rte_lcore.h>
#include <rte_mbuf.h>
#include <rte_ring.h>
#include <rte_udp.h>
#include <xmmintrin.h>

#include "dp.h"
#include "fuzzutil.h"
#include "testutil.h"
#include "slowpath/slowpath.h"
#include "table.h"
#include "wire.h"

#define GW_IP 0x0a000001u               /* 10.0.0.1: the dataplane's port */
#define PEER_IP(n) (0x0a000000u | (n))  /* 10.0.0.n */
#define WORKER_PORT 5000
#define RING_SIZE 8192

static struct dp dp;
static struct rte_ring *rx_ring, *tx_ring;
static struct rte_mempool *tpool;
static int n_setups;
static bool jumbo;                      /* dp_up() with MTU 9000 */
static struct dp_fault faults[2];       /* dp_up() with these faults on port 0 */
static unsigned int n_routes;           /* dp_up() with these routes */
static struct dp_route routes[4];
static const char *crypto_dev = "";     /* dp_up() with this --crypto */
static struct rte_ether_addr gw_mac;

/* --- Harness -------------------------------------------------------------------------------- */

/* --linger-ms of the next dp_up(): drained epochs retire at once but in the tests of
 * result recovery, which keep them. */
static uint32_t linger_ms;
static uint64_t fault_seed;             /* --fault-seed of the next dp_up() */

/* A fresh dataplane on a fresh ring port: lcore is the lcore that plays the worker. */
static int
dp_up(unsigned int lcore)
{
	struct dp_config cfg;
	char name[32], err[512];

	dp_config_defaults(&cfg);
	cfg.prm.mbufs = 16384;
	cfg.hdr_mbufs = 16384;
	cfg.rx_desc = 256;
	cfg.tx_desc = 256;
	cfg.prm.drain_ms = 200;
	cfg.prm.linger_ms = linger_ms;
	cfg.prm.fault_seed = fault_seed;
	if (jumbo) {
		cfg.prm.mtu = 9000;
		cfg.prm.mbufs = 4096;
	}
	cfg.n_lcores = 1;
	cfg.lcore_ids[0] = lcore;
	snprintf(name, sizeof(name), "t_rx%d", n_setups);
	rx_ring = rte_ring_create(name, RING_SIZE, SOCKET_ID_ANY, RING_F_SP_ENQ | RING_F_SC_DEQ);
	snprintf(name, sizeof(name), "t_tx%d", n_setups);
	tx_ring = rte_ring_create(name, RING_SIZE, SOCKET_ID_ANY, RING_F_SP_ENQ | RING_F_SC_DEQ);
	snprintf(name, sizeof(name), "net_ring_t%d", n_setups++);
	int port = rte_eth_from_rings(name, &rx_ring, 1, &tx_ring, 1, (unsigned)SOCKET_ID_ANY);

	if (rx_ring == NULL || tx_ring == NULL || port < 0)
		return -1;
	cfg.n_ports = 1;
	cfg.port_ids[0] = (uint16_t)port;
	cfg.addr[0].ipv4 = GW_IP;
	cfg.addr[0].prefix_len = 24;
	/* Every peer 10.0.0.2 .. 10.0.0.40 is a static neighbour 02:00:00:00:00:nn. */
	for (unsigned int n = 2; n <= 40; n++) {
		struct dp_static_neigh *sn = &cfg.neigh[cfg.n_neigh++];

		sn->ipv4 = PEER_IP(n);
		memset(&sn->mac, 0, sizeof(sn->mac));
		sn->mac.addr_bytes[0] = 0x02;
		sn->mac.addr_bytes[5] = (uint8_t)n;
	}
	cfg.rto_init_ms = 20;
	cfg.fault[0][DP_RX] = faults[DP_RX];
	cfg.fault[0][DP_TX] = faults[DP_TX];
	cfg.n_routes = n_routes;
	memcpy(cfg.routes, routes, sizeof(routes));
	snprintf(cfg.crypto_dev, sizeof(cfg.crypto_dev), "%s", crypto_dev);
	if (dp_setup(&dp, &cfg, err, sizeof(err)) != 0) {
		fprintf(stderr, "dp_setup: %s\n", err);
		return -1;
	}
	gw_mac = dp.ports[0].mac;
	return 0;
}

static void
dp_down(void)
{
	struct rte_mbuf *m;

	dp_teardown(&dp);
	while (rte_ring_dequeue(rx_ring, (void **)&m) == 0)
		rte_pktmbuf_free(m);
	while (rte_ring_dequeue(tx_ring, (void **)&m) == 0)
		rte_pktmbuf_free(m);
	rte_ring_free(rx_ring);
	rte_ring_free(tx_ring);
}

static void
poll_all(void)
{
	while (dp_worker_poll(dp.lcores[0]) != 0)
		;
}

static uint64_t
drops(enum wire_reason r)
{
	return dp.lcores[0]->drops[r];
}

static uint64_t
ctr(enum dp_ctr c)
{
	return dp.lcores[0]->ctr[c];
}

/* Tables: one gateway (id gw_id at 10.0.0.1) with the given trees. */
struct tdesc {
	uint16_t id;
	int parent;                     /* parent gateway id, 0: root */
	int n_children;
	uint16_t children[4];           /* child gateway ids; at 10.0.0.<id> */
	uint32_t first, count;
	uint32_t slots;
	uint16_t below[4];              /* without sets: the workers below each child (the
					 * contrib of its partial sums); with sets, counted
					 * from the struct tbelow */
};

/* With contributor sets, the workers below the children of a tree entry: ids ascending per
 * child, id[k] under children[child[k]]. */
struct tbelow {
	int n;
	uint16_t id[8];
	uint8_t child[8];
};

/* mk_table() of a job with contributor sets of one block: bl[i] lists the workers below the
 * children of tree i (NULL: none, and no sets). */
static struct table *
mk_table_sets(uint32_t job, uint32_t epoch, uint16_t gw_id, enum table_dtype dt,
	      uint64_t elements, uint32_t chunk_elements, int n_workers, const uint16_t *workers,
	      int n_trees, const struct tdesc *td, const struct tbelow *bl)
{
	int nc[8], nw[8], nb[8];

	for (int i = 0; i < n_trees; i++) {
		nc[i] = td[i].n_children;
		nw[i] = n_workers;
		nb[i] = bl != NULL ? bl[i].n : 0;
	}
	struct table *tb = table_create_full(n_trees, nc, nw, nb, 0);

	tb->job = job;
	tb->epoch = epoch;
	tb->gw = (struct table_gw){ gw_id, GW_IP, WIRE_PORT_BASE_DEFAULT, WIRE_PORT_COUNT_DEFAULT };
	tb->dtype = dt;
	tb->elements = elements;
	tb->chunk_elements = chunk_elements;
	tb->limits = (struct table_limits){ 8, 4, 16, 4096 };
	tb->n_trees = n_trees;
	for (int i = 0; i < n_trees; i++) {
		struct table_tree *t = &tb->trees[i];

		t->id = td[i].id;
		t->has_parent = td[i].parent != 0;
		if (t->has_parent)
			t->parent = (struct table_gw){ (uint16_t)td[i].parent,
						       PEER_IP((uint32_t)td[i].parent),
						       WIRE_PORT_BASE_DEFAULT,
						       WIRE_PORT_COUNT_DEFAULT };
		t->role = !t->has_parent ? TABLE_ROLE_ROOT
			  : td[i].n_children > 0 ? TABLE_ROLE_INTERIOR : TABLE_ROLE_LEAF;
		t->subtree_workers = (uint32_t)n_workers;
		for (int c = 0; c < td[i].n_children; c++) {
			t->children[c] = (struct table_gw){ td[i].children[c],
							    PEER_IP(td[i].children[c]),
							    WIRE_PORT_BASE_DEFAULT,
							    WIRE_PORT_COUNT_DEFAULT };
			t->child_workers[c] = bl != NULL ? 0 : td[i].below[c];
			for (int k = 0; k < nb[i]; k++)
				t->child_workers[c] += bl[i].child[k] == c;
			t->subtree_workers += t->child_workers[c];
		}
		for (int w = 0; w < n_workers; w++)
			t->workers[w] = (struct table_worker){ workers[w], PEER_IP(workers[w]),
							       WORKER_PORT };
		for (int k = 0; k < nb[i]; k++) {
			t->below[k] = bl[i].id[k];
			t->below_child[k] = bl[i].child[k];
		}
		t->expected = (uint32_t)(n_workers + td[i].n_children);
		t->chunk_first = td[i].first;
		t->chunk_count = td[i].count;
		t->rate_gbps = 1;
		t->slots = td[i].slots;
	}
	tb->cset_blocks = bl != NULL ? 1 : 0;
	return tb;
}

static struct table *
mk_table(uint32_t job, uint32_t epoch, uint16_t gw_id, enum table_dtype dt, uint64_t elements,
	 uint32_t chunk_elements, int n_workers, const uint16_t *workers, int n_trees,
	 const struct tdesc *td)
{
	return mk_table_sets(job, epoch, gw_id, dt, elements, chunk_elements, n_workers, workers,
			     n_trees, td, NULL);
}

/* Install a table through the control handler, as the socket would; returns errno. */
static int
install(struct table *tb, const char *op)
{
	json_t *req = json_pack("{s:i,s:i,s:s,s:o}", "version", 1, "id", 9, "op", op, "table",
				table_to_json(tb));
	json_t *rep = dp_ctl_handle(&dp, req);
	int e = json_is_true(json_object_get(rep, "ok"))
			? 0
			: (int)json_integer_value(json_object_get(rep, "errno"));

	if (e != 0 && getenv("TEST_VERBOSE") != NULL)
		fprintf(stderr, "install: %s\n", json_string_value(json_object_get(rep, "error")));
	json_decref(req);
	json_decref(rep);
	table_free(tb);
	return e;
}

/* Room for len more bytes at the end of m (test mbufs are large enough). */
static void *
must_append(struct rte_mbuf *m, size_t len)
{
	void *p = m == NULL ? NULL : rte_pktmbuf_append(m, (uint16_t)len);

	if (p == NULL)
		abort();
	return p;
}

struct pkt {
	enum wire_type type;
	uint8_t flags;
	uint32_t job, epoch;
	uint16_t tree, sender, origin, contrib;
	uint32_t round, chunk;
	enum wire_dtype dtype;
	uint16_t count;
	uint32_t src_ip;
};

/* While on, mk_pkt_set() sends from ip:sport (whatever the sender id) to dport (0: the
 * chunk's port). */
static struct {
	bool on;
	uint32_t ip;
	uint16_t sport, dport;
} spoof;

/* A frame from p.src_ip to the gateway with contributor set cset (k blocks; k = 0: none)
 * and payload pl (count elements of the dtype). */
static struct rte_mbuf *
mk_pkt_set(const struct pkt *p, unsigned int k, const uint8_t *cset, const void *pl)
{
	struct wire_pkt w = {
		.type = p->type, .flags = p->flags, .dtype = p->dtype, .cset_blocks = (uint8_t)k,
		.job = p->job,
		.epoch = p->epoch, .tree = p->tree, .sender = p->sender, .origin = p->origin,
		.contrib = p->contrib, .round = p->round, .chunk = p->chunk, .count = p->count,
	};
	size_t len = wire_pkt_len(&w);
	struct rte_mbuf *m = rte_pktmbuf_alloc(tpool);
	uint8_t *f = must_append(m, WIRE_FRAME_HDR_OFF + len);
	struct wire_flow fl = {
		.src_ip = p->src_ip, .dst_ip = GW_IP,
		/* Gateways have ids below 10 and send from their range, workers from theirs. */
		.src_port = (p->src_ip & 0xff) >= 10 ? WORKER_PORT
						     : wire_udp_port(WIRE_PORT_BASE_DEFAULT,
								     WIRE_PORT_COUNT_DEFAULT, p->chunk),
		.dst_port = wire_udp_port(WIRE_PORT_BASE_DEFAULT, WIRE_PORT_COUNT_DEFAULT, p->chunk),
	};

	if (spoof.on) {
		fl.src_ip = spoof.ip;
		fl.src_port = spoof.sport;
		fl.dst_port = spoof.dport != 0 ? spoof.dport : fl.dst_port;
	}
	memcpy(fl.dst_mac, gw_mac.addr_bytes, 6);
	fl.src_mac[0] = 0x02;
	fl.src_mac[5] = (uint8_t)p->src_ip;
	CU_ASSERT_FATAL(f != NULL);
	CU_ASSERT_FATAL(wire_hdr_encode(f + WIRE_FRAME_HDR_OFF, len, &w, NULL) == 0);
	if (k != 0)
		memcpy(f + WIRE_FRAME_PAYLOAD_OFF, cset, k * WIRE_CSET_BLOCK);
	if (pl != NULL)
		memcpy(f + WIRE_FRAME_PAYLOAD_OFF + k * WIRE_CSET_BLOCK, pl,
		       len - WIRE_HDR_LEN - k * WIRE_CSET_BLOCK);
	/* Even senders checksum their datagrams, odd ones leave it to zero: both are valid. */
	CU_ASSERT_FATAL(wire_frame_build(f, WIRE_FRAME_HDR_OFF + len, &fl, len,
					 p->sender % 2 == 0) == 0);
	return m;
}

static struct rte_mbuf *
mk_pkt(const struct pkt *p, const void *pl)
{
	return mk_pkt_set(p, 0, NULL, pl);
}

static void
inject(struct rte_mbuf *m)
{
	CU_ASSERT_FATAL(rte_ring_enqueue(rx_ring, m) == 0);
}

/* A frame the dataplane sent, decoded. */
struct out {
	struct wire_flow fl;
	struct wire_pkt p;
	uint8_t frame[WIRE_MTU_MAX + 64];
	size_t len;
};

/* Take every frame sent; returns how many (up to max), decoded into o[]. */
static int
collect(struct out *o, int max)
{
	struct rte_mbuf *m;
	int n = 0;

	while (rte_ring_dequeue(tx_ring, (void **)&m) == 0) {
		if (n < max) {
			struct out *x = &o[n];
			size_t off, plen;

			x->len = rte_pktmbuf_pkt_len(m);
			const void *d = rte_pktmbuf_read(m, 0, (uint32_t)x->len, x->frame);

			if (d != x->frame) /* contiguous: read() only points at it */
				memcpy(x->frame, d, x->len);
			memset(&x->p, 0, sizeof(x->p));
			/* A sealed frame ("GS") is for open_out() to decode. */
			if (wire_frame_parse(x->frame, x->len, &x->fl, &off, &plen, NULL) == 0 &&
			    !(plen >= 2 && x->frame[off] == 0x47 && x->frame[off + 1] == 0x53))
				CU_ASSERT(wire_hdr_decode(x->frame + off, plen, &x->p, NULL) == 0);
		}
		n++;
		rte_pktmbuf_free(m);
	}
	return n;
}

static float
out_f32(const struct out *o, uint32_t i)
{
	float v;

	memcpy(&v, o->frame + WIRE_FRAME_PAYLOAD_OFF + 4 * i, 4);
	return v;
}

/* Worker w's value for element e of the tensor: small integers, exact in every dtype. */
static float
val(uint16_t w, uint64_t e)
{
	return (float)((w * 7 + e) % 61);
}

static uint16_t
chunk_len(uint64_t elements, uint32_t ce, uint32_t c)
{
	return (uint16_t)wire_chunk_len(elements, ce, c);
}

/* CONTRIB of worker w (at 10.0.0.w) for one chunk of an fp32 tensor, with flags. */
static struct rte_mbuf *
contrib_f32_flags(uint32_t job, uint32_t epoch, uint8_t flags, uint16_t tree, uint16_t w,
		  uint32_t round, uint32_t chunk, uint64_t elements, uint32_t ce)
{
	float pl[4096];
	uint16_t n = chunk_len(elements, ce, chunk);
	struct pkt p = { WIRE_TYPE_CONTRIB, flags, job, epoch, tree, w, w, 1, round, chunk,
			 WIRE_DTYPE_FP32, n, PEER_IP(w) };

	for (uint16_t i = 0; i < n; i++)
		pl[i] = val(w, (uint64_t)chunk * ce + i);
	return mk_pkt(&p, pl);
}

/* ... a first transmission. */
static struct rte_mbuf *
contrib_f32(uint32_t job, uint32_t epoch, uint16_t tree, uint16_t w, uint32_t round,
	    uint32_t chunk, uint64_t elements, uint32_t ce)
{
	return contrib_f32_flags(job, epoch, 0, tree, w, round, chunk, elements, ce);
}


static json_t *
call(const char *text)
{
	json_error_t je;
	json_t *req = json_loads(text, 0, &je), *rep;

	CU_ASSERT_FATAL(req != NULL);
	rep = dp_ctl_handle(&dp, req);
	json_decref(req);
	return rep;
}

static int
call_errno(const char *text)
{
	json_t *rep = call(text);
	int e = json_is_true(json_object_get(rep, "ok"))
			? 0
			: (int)json_integer_value(json_object_get(rep, "errno"));

	CU_ASSERT(e == 0 || json_is_string(json_object_get(rep, "error")));
	json_decref(rep);
	return e;
}

/* --- Tests ---------------------------------------------------------------------------------- */

static const uint16_t W3[] = { 11, 12, 13 };

/* Two gateways at this site: this one holds chunks 0 .. 7 (tree 0), the other 8 .. 15
 * (tree 1, in `shards`). A CONTRIB of tree 1 sent here is refused as `wrong_shard`, one of
 * a tree no gateway of the site has as `unknown_tree`; the shard's own chunks complete. */
static void
test_wrong_shard(void)
{
	const uint64_t el = 1000;
	const uint32_t ce = 64;
	static struct out o[64];
	char text[2048], err[TABLE_ERR_MAX] = "";
	struct table *tb;

	snprintf(text, sizeof(text),
		 "{\"format\": \"georeduce-table/1\", \"job\": 9, \"epoch\": 1,"
		 " \"gateway\": {\"id\": 1, \"ipv4\": \"10.0.0.1\", \"base_port\": %d,"
		 " \"ports\": %d}, \"dtype\": \"fp32\", \"elements\": 1000,"
		 " \"chunk_elements\": 64, \"limits\": {\"max_trees\": 8,"
		 " \"max_children\": 4, \"max_workers\": 16, \"max_slots\": 64},"
		 " \"trees\": [{\"id\": 0, \"role\": \"root\", \"parent\": null,"
		 " \"children\": [], \"workers\": [{\"id\": 11, \"ipv4\": \"10.0.0.11\","
		 " \"port\": %d}, {\"id\": 12, \"ipv4\": \"10.0.0.12\", \"port\": %d}],"
		 " \"expected\": 2, \"subtree_workers\": 2, \"chunk_first\": 0,"
		 " \"chunk_count\": 8, \"rate_gbps\": 1.0, \"slots\": 16}],"
		 " \"shards\": [{\"gateway\": {\"id\": 2, \"ipv4\": \"10.0.0.2\","
		 " \"base_port\": %d, \"ports\": %d}, \"trees\": [{\"id\": 1,"
		 " \"chunk_first\": 8, \"chunk_count\": 8, \"slots\": 16}]}]}",
		 WIRE_PORT_BASE_DEFAULT, WIRE_PORT_COUNT_DEFAULT, WORKER_PORT, WORKER_PORT,
		 WIRE_PORT_BASE_DEFAULT, WIRE_PORT_COUNT_DEFAULT);
	tb = table_parse(text, "shards", err, sizeof(err));
	CU_ASSERT_PTR_NOT_NULL_FATAL(tb);
	CU_ASSERT_FATAL(dp_up(rte_get_main_lcore()) == 0);
	CU_ASSERT_FATAL(install(tb, "install") == 0);
	for (uint32_t c = 0; c < 8; c++)
		for (int w = 11; w <= 12; w++)
			inject(contrib_f32(9, 1, 0, (uint16_t)w, 1, c, el, ce));
	/* Worker 11 takes this gateway for the other one's shard; then a tree of nobody. */
	inject(contrib_f32(9, 1, 1, 11, 1, 8, el, ce));
	inject(contrib_f32(9, 1, 1, 12, 1, 9, el, ce));
	inject(contrib_f32(9, 1, 5, 11, 1, 9, el, ce));
	poll_all();
	CU_ASSERT_EQUAL(collect(o, 64), 2 * 8);
	CU_ASSERT_EQUAL(ctr(DP_CTR_CHUNKS_COMPLETED), 8);
	CU_ASSERT_EQUAL(drops(WIRE_REASON_WRONG_SHARD), 2);
	CU_ASSERT_EQUAL(drops(WIRE_REASON_UNKNOWN_TREE), 1);
	dp_down();
}

/* Root with three local workers: every chunk summed exactly, results to each worker. */
static void
test_root_three_workers(void)
{
	const uint64_t el = 1000;
	const uint32_t ce = 64, nch = 16;
	struct tdesc td = { 0, 0, 0, { 0 }, 0, nch, 16, { 0 } };
	static struct out o[64];

	CU_ASSERT_FATAL(dp_up(rte_get_main_lcore()) == 0);
	CU_ASSERT_FATAL(install(mk_table(7, 1, 1, TABLE_DTYPE_FP32, el, ce, 3, W3, 1, &td),
				"install") == 0);
	for (int w = 0; w < 3; w++)
		for (uint32_t c = 0; c < nch; c++)
			inject(contrib_f32(7, 1, 0, W3[w], 5, c, el, ce));
	poll_all();
	int n = collect(o, 64);

	CU_ASSERT(n == 3 * (int)nch);
	int bad = 0;

	for (int k = 0; k < n && k < 64; k++) {
		const struct out *x = &o[k];
		uint32_t c = x->p.chunk;

		bad += x->p.type != WIRE_TYPE_RESULT || x->p.contrib != 3 || x->p.origin != 1 ||
		       x->p.sender != 1 || x->p.round != 5 || x->fl.dst_port != WORKER_PORT ||
		       x->p.count != chunk_len(el, ce, c);
		bad += x->fl.dst_ip != PEER_IP(11) && x->fl.dst_ip != PEER_IP(12) &&
		       x->fl.dst_ip != PEER_IP(13);
		bad += x->fl.dst_mac[5] != (uint8_t)x->fl.dst_ip;
		for (uint32_t i = 0; i < x->p.count; i++) {
			uint64_t e = (uint64_t)c * ce + i;

			bad += out_f32(x, i) != val(11, e) + val(12, e) + val(13, e);
		}
	}
	CU_ASSERT(bad == 0);
	CU_ASSERT(ctr(DP_CTR_CHUNKS_COMPLETED) == nch);
	CU_ASSERT(ctr(DP_CTR_RESULTS_SENT) == 3 * nch);
	/* A retransmitted NACK_RESULT from worker 12 for chunks 3..4 gets the results again. */
	struct pkt nk = { WIRE_TYPE_NACK_RESULT, 0, 7, 1, 0, 12, 12, 0, 5, 3, WIRE_DTYPE_NONE, 2,
			  PEER_IP(12) };

	inject(mk_pkt(&nk, NULL));
	poll_all();
	n = collect(o, 64);
	CU_ASSERT(n == 2);
	CU_ASSERT(o[0].p.type == WIRE_TYPE_RESULT && (o[0].p.flags & WIRE_F_RETX) &&
		  o[0].fl.dst_ip == PEER_IP(12) && o[0].p.chunk == 3);
	/* A range that runs past the tree's chunks is dropped whole, as bad_chunk. */
	nk.chunk = nch - 1;
	inject(mk_pkt(&nk, NULL));
	poll_all();
	CU_ASSERT(collect(o, 64) == 0);
	CU_ASSERT(drops(WIRE_REASON_BAD_CHUNK) == 1);
	nk.chunk = 3;
	/* The same round again: duplicates, no new results. */
	inject(contrib_f32(7, 1, 0, 11, 5, 0, el, ce));
	poll_all();
	CU_ASSERT(collect(o, 64) == 0);
	CU_ASSERT(drops(WIRE_REASON_DUPLICATE) == 1);
	/* Worker 11 moves on to round 6 and reopens chunk 3's slot; worker 12, a round
	 * behind, still gets round 5's RESULT for it (NACK_RESULT, and a RETX CONTRIB). */
	inject(contrib_f32(7, 1, 0, 11, 6, 3, el, ce));
	nk.chunk = 3;
	nk.count = 1;
	inject(mk_pkt(&nk, NULL));
	struct rte_mbuf *rx = contrib_f32(7, 1, 0, 13, 5, 3, el, ce);

	rte_pktmbuf_mtod_offset(rx, struct wire_hdr *, WIRE_FRAME_HDR_OFF)->flags = WIRE_F_RETX;
	rte_pktmbuf_mtod_offset(rx, struct rte_udp_hdr *, 34)->dgram_cksum = 0;
	inject(rx);
	poll_all();
	n = collect(o, 64);
	if (n != 2)
		for (int r = 1; r < WIRE_REASON_COUNT_MAX; r++)
			if (drops((enum wire_reason)r))
				fprintf(stderr, "drop %s %lu\n", wire_reason_str((enum wire_reason)r),
					(unsigned long)drops((enum wire_reason)r));
	if (n != 2)
		for (int k = 0; k < n; k++)
			fprintf(stderr, "out %d: type %d round %u chunk %u to %x\n", k, o[k].p.type,
				o[k].p.round, o[k].p.chunk, o[k].fl.dst_ip);
	CU_ASSERT_FATAL(n == 2);
	for (int k = 0; k < n; k++) {
		CU_ASSERT(o[k].p.type == WIRE_TYPE_RESULT && o[k].p.round == 5 &&
			  o[k].p.chunk == 3 && (o[k].p.flags & WIRE_F_RETX));
		CU_ASSERT(out_f32(&o[k], 1) == val(11, 3 * ce + 1) + val(12, 3 * ce + 1) +
						   val(13, 3 * ce + 1));
	}
	CU_ASSERT(o[0].fl.dst_ip != o[1].fl.dst_ip);
	dp_down();
}

/*
 * Selective multicast at gateway 1 (docs/PROTOCOL.md section 7.5). Stream 5 comes from
 * gateway 2 (the source site's workers 31 and 32) and goes on to gateways 3 and 4 and to
 * the local workers 21 and 22; stream 6 starts here, from the local workers 21 and 22,
 * towards gateway 3 (and the other local worker).
 */
static struct table *
mcast_table(void)
{
	struct table *tb = table_create_streams(0, NULL, NULL, 2);
	struct table_stream *a = &tb->streams[0], *b = &tb->streams[1];
	const struct table_worker w21 = { 21, PEER_IP(21), WORKER_PORT };
	const struct table_worker w22 = { 22, PEER_IP(22), WORKER_PORT };

	tb->job = 8;
	tb->epoch = 1;
	tb->gw = (struct table_gw){ 1, GW_IP, WIRE_PORT_BASE_DEFAULT, WIRE_PORT_COUNT_DEFAULT };
	tb->dtype = TABLE_DTYPE_FP32;
	tb->elements = 1000;
	tb->chunk_elements = 64;
	tb->limits = (struct table_limits){ 8, 4, 16, 4096 };
	a->id = 5;
	a->source = 2;
	a->has_from = true;
	a->from = (struct table_gw){ 2, PEER_IP(2), WIRE_PORT_BASE_DEFAULT,
				     WIRE_PORT_COUNT_DEFAULT };
	a->n_to = 2;
	a->to[0] = (struct table_gw){ 3, PEER_IP(3), WIRE_PORT_BASE_DEFAULT,
				      WIRE_PORT_COUNT_DEFAULT };
	a->to[1] = (struct table_gw){ 4, PEER_IP(4), WIRE_PORT_BASE_DEFAULT,
				      WIRE_PORT_COUNT_DEFAULT };
	a->n_deliver = 2;
	a->deliver[0] = w21;
	a->deliver[1] = w22;
	a->n_origins = 2;
	a->origins[0] = 32;
	a->origins[1] = 31;
	a->rate_gbps = 10;
	b->id = 6;
	b->source = 1;
	b->n_to = 1;
	b->to[0] = a->to[0];
	b->n_deliver = 2;
	b->deliver[0] = w21;
	b->deliver[1] = w22;
	b->n_origins = 2;
	b->origins[0] = 21;
	b->origins[1] = 22;
	b->rate_gbps = 10;
	return tb;
}

/* An MCAST of stream `stream` from sender (at 10.0.0.sender), origin's data. */
static struct rte_mbuf *
mcast_f32(uint16_t stream, uint16_t sender, uint16_t origin, uint32_t round, uint32_t chunk,
	  uint16_t count)
{
	float pl[4096];
	struct pkt p = { WIRE_TYPE_MCAST, 0, 8, 1, stream, sender, origin, 1, round, chunk,
			 WIRE_DTYPE_FP32, count, PEER_IP(sender) };

	for (uint16_t i = 0; i < count; i++)
		pl[i] = val(origin, (uint64_t)chunk * 64 + i);
	return mk_pkt(&p, pl);
}

/* The first job's entry in `links` of stats st for (kind "tree" or "stream", its id n,
 * dir, gateway id); NULL if there is none. An entry without the kind's key is of the
 * other kind (json_integer_value() of the missing key would be 0, a valid id). */
static json_t *
link_entry(json_t *st, const char *kind, int n, const char *dir, int id)
{
	json_t *lk;
	size_t i;

	json_array_foreach(json_object_get(json_array_get(json_object_get(st, "jobs"), 0),
					   "links"), i, lk)
		if (json_is_integer(json_object_get(lk, kind)) &&
		    json_integer_value(json_object_get(lk, kind)) == n &&
		    json_integer_value(json_object_get(lk, "id")) == id &&
		    strcmp(json_string_value(json_object_get(lk, "dir")), dir) == 0)
			return lk;
	return NULL;
}

/* Stream n's entry in `links` towards gateway id: frames, bytes and no retransmission;
 * its address, the stream's rate. */
static bool
stream_link_is(json_t *st, int n, int id, json_int_t frames, json_int_t bytes)
{
	json_t *lk = link_entry(st, "stream", n, "down", id);
	char ip[16];

	return lk != NULL && json_integer_value(json_object_get(lk, "frames")) == frames &&
	       json_integer_value(json_object_get(lk, "bytes")) == bytes &&
	       json_integer_value(json_object_get(lk, "retx_bytes")) == 0 &&
	       json_real_value(json_object_get(lk, "rate_gbps")) == 10.0 &&
	       json_object_get(lk, "tree") == NULL &&
	       strcmp(json_string_value(json_object_get(lk, "ipv4")),
		      table_ipv4_format(PEER_IP((uint32_t)id), ip)) == 0;
}

static void
test_mcast(void)
{
	static struct out o[16];
	bool seen[41] = { false };
	int n, bad = 0;

	CU_ASSERT_FATAL(dp_up(rte_get_main_lcore()) == 0);
	CU_ASSERT_FATAL(install(mcast_table(), "install") == 0);
	/* One MCAST of the last chunk (40 elements) from upstream: exactly four copies. */
	inject(mcast_f32(5, 2, 31, 9, 15, 40));
	poll_all();
	n = collect(o, 16);
	CU_ASSERT_FATAL(n == 4);
	for (int k = 0; k < n; k++) {
		const struct out *x = &o[k];
		uint32_t d = x->fl.dst_ip & 0xff;
		bool gw = d == 3 || d == 4;

		bad += x->p.type != WIRE_TYPE_MCAST || x->p.tree != 5 || x->p.sender != 1 ||
		       x->p.origin != 31 || x->p.contrib != 1 || x->p.round != 9 ||
		       x->p.chunk != 15 || x->p.count != 40 || x->p.flags != 0 || x->p.job != 8 ||
		       x->p.epoch != 1;
		bad += x->fl.src_ip != GW_IP || x->fl.dst_mac[5] != d;
		bad += gw ? x->fl.dst_port != wire_udp_port(WIRE_PORT_BASE_DEFAULT,
							     WIRE_PORT_COUNT_DEFAULT, 15)
			  : !(d == 21 || d == 22) || x->fl.dst_port != WORKER_PORT;
		bad += x->len != WIRE_FRAME_PAYLOAD_OFF + 40 * 4;
		for (uint32_t i = 0; i < 40; i++)
			bad += out_f32(x, i) != val(31, 15 * 64 + i);
		if (d <= 40)
			seen[d] = true;
	}
	CU_ASSERT(bad == 0);
	CU_ASSERT(seen[3] && seen[4] && seen[21] && seen[22]);
	CU_ASSERT(ctr(DP_CTR_MCAST_RX) == 1);
	CU_ASSERT(ctr(DP_CTR_MCAST_COPIES) == 4);
	/* Per stream and link to a next-hop gateway, what went out: one frame of stream 5 to
	 * each of 3 and 4, nothing of stream 6 yet; copies to local workers are no link's. */
	const json_int_t fb40 = WIRE_FRAME_PAYLOAD_OFF + 40 * 4;
	const json_int_t fb64 = WIRE_FRAME_PAYLOAD_OFF + 64 * 4;
	json_t *st = dp_stats_json(&dp);

	CU_ASSERT(stream_link_is(st, 5, 3, 1, fb40) && stream_link_is(st, 5, 4, 1, fb40));
	CU_ASSERT(stream_link_is(st, 6, 3, 0, 0));
	CU_ASSERT(json_array_size(json_object_get(json_array_get(json_object_get(st, "jobs"), 0),
						  "links")) == 3);
	CU_ASSERT(link_entry(st, "tree", 0, "down", 3) == NULL);
	json_decref(st);

	/* Drops, by reason, none answered. */
	inject(mcast_f32(5, 3, 31, 9, 0, 64));          /* not the upstream gateway */
	inject(mcast_f32(5, 2, 33, 9, 0, 64));          /* not an origin of the stream */
	inject(mcast_f32(5, 31, 31, 9, 0, 64));         /* the origin itself, off the source */
	poll_all();
	CU_ASSERT(drops(WIRE_REASON_BAD_SENDER) == 3);
	inject(mcast_f32(7, 2, 31, 9, 0, 64));          /* unknown stream */
	inject(mcast_f32(0, 2, 31, 9, 0, 64));          /* unknown stream (below the ids) */
	poll_all();
	CU_ASSERT(drops(WIRE_REASON_UNKNOWN_TREE) == 2);
	inject(mcast_f32(5, 2, 31, 9, 16, 64));         /* past the last chunk */
	poll_all();
	CU_ASSERT(drops(WIRE_REASON_BAD_CHUNK) == 1);
	inject(mcast_f32(5, 2, 31, 9, 15, 64));         /* the last chunk has 40 elements */
	inject(mcast_f32(5, 2, 31, 9, 3, 40));          /* the others 64 */
	poll_all();
	CU_ASSERT(drops(WIRE_REASON_JOB_MISMATCH) == 2);
	{
		struct pkt p = { WIRE_TYPE_MCAST, 0, 8, 1, 5, 2, 31, 1, 9, 0, WIRE_DTYPE_FP16, 64,
				 PEER_IP(2) };

		inject(mk_pkt(&p, NULL));               /* wrong dtype */
		p.epoch = 2;
		inject(mk_pkt(&p, NULL));               /* epoch ahead */
		p.job = 99;
		inject(mk_pkt(&p, NULL));               /* unknown job */
	}
	poll_all();
	CU_ASSERT(drops(WIRE_REASON_JOB_MISMATCH) == 3);
	CU_ASSERT(drops(WIRE_REASON_EPOCH_AHEAD) == 1);
	CU_ASSERT(drops(WIRE_REASON_UNKNOWN_JOB) == 1);
	CU_ASSERT(collect(o, 16) == 0);
	CU_ASSERT(ctr(DP_CTR_MCAST_RX) == 1 && ctr(DP_CTR_MCAST_COPIES) == 4);

	/* At the source: worker 21's own update goes to gateway 3 and to worker 22 only. */
	inject(mcast_f32(6, 21, 21, 4, 2, 64));
	poll_all();
	n = collect(o, 16);
	CU_ASSERT_FATAL(n == 2);
	bad = 0;
	for (int k = 0; k < n; k++) {
		uint32_t d = o[k].fl.dst_ip & 0xff;

		bad += o[k].p.sender != 1 || o[k].p.origin != 21 || o[k].p.tree != 6 ||
		       !(d == 3 || d == 22) || out_f32(&o[k], 5) != val(21, 2 * 64 + 5);
	}
	CU_ASSERT(bad == 0 && (o[0].fl.dst_ip & 0xff) != (o[1].fl.dst_ip & 0xff));
	CU_ASSERT(ctr(DP_CTR_MCAST_COPIES) == 6);
	st = dp_stats_json(&dp);
	CU_ASSERT(stream_link_is(st, 6, 3, 1, fb64) && stream_link_is(st, 5, 3, 1, fb40));
	json_decref(st);
	/* ... but not from a worker that is no origin, nor on behalf of another worker, nor
	 * from the upstream of a stream that starts here. */
	inject(mcast_f32(6, 23, 23, 4, 2, 64));
	inject(mcast_f32(6, 21, 22, 4, 2, 64));
	inject(mcast_f32(6, 2, 21, 4, 2, 64));
	poll_all();
	CU_ASSERT(collect(o, 16) == 0);
	CU_ASSERT(drops(WIRE_REASON_BAD_SENDER) == 6);
	/* The stats name the counters. */
	{
		json_t *rep = call("{\"version\": 1, \"id\": 1, \"op\": \"stats\"}");
		char *txt = json_dumps(rep, JSON_COMPACT);

		CU_ASSERT(txt != NULL && strstr(txt, "\"mcast_copies\":6") != NULL &&
			  strstr(txt, "\"mcast_rx\":2") != NULL);
		if (txt != NULL && strstr(txt, "\"mcast_copies\":6") == NULL)
			fprintf(stderr, "%s\n", txt);
		free(txt);
		json_decref(rep);
	}
	dp_down();
}

/* A NACK_MCAST of stream `stream` from sender (at 10.0.0.sender) for origin's chunks
 * [chunk, chunk + count) of round. */
static struct rte_mbuf *
nack_mcast(uint16_t stream, uint16_t sender, uint16_t origin, uint32_t round, uint32_t chunk,
	   uint16_t count)
{
	struct pkt p = { WIRE_TYPE_NACK_MCAST, 0, 8, 1, stream, sender, origin, 0, round, chunk,
			 WIRE_DTYPE_NONE, count, PEER_IP(sender) };

	return mk_pkt(&p, NULL);
}

/* mcast_f32() sent again in answer (RETX). */
static struct rte_mbuf *
mcast_repair(uint16_t stream, uint16_t sender, uint16_t origin, uint32_t round,
	     uint32_t chunk)
{
	float pl[64];
	struct pkt p = { WIRE_TYPE_MCAST, WIRE_F_RETX, 8, 1, stream, sender, origin, 1, round,
			 chunk, WIRE_DTYPE_FP32, 64, PEER_IP(sender) };

	for (uint16_t i = 0; i < 64; i++)
		pl[i] = val(origin, (uint64_t)chunk * 64 + i);
	return mk_pkt(&p, pl);
}

/* One MCAST repair in o: RETX, from this gateway, origin's chunk of round of stream 5,
 * to d at the table's address and port (a gateway's port of the chunk, a worker's). */
static bool
is_mcast_repair(const struct out *o, uint32_t d, uint16_t origin, uint32_t round,
		uint32_t chunk)
{
	bool ok = o->p.type == WIRE_TYPE_MCAST && o->p.flags == WIRE_F_RETX && o->p.tree == 5 &&
		  o->p.sender == 1 && o->p.origin == origin && o->p.round == round &&
		  o->p.chunk == chunk && o->p.count == 64 && o->fl.dst_ip == PEER_IP(d) &&
		  o->fl.dst_port == (d < 10 ? wire_udp_port(WIRE_PORT_BASE_DEFAULT,
							    WIRE_PORT_COUNT_DEFAULT, chunk)
					    : WORKER_PORT);

	for (uint32_t i = 0; ok && i < 64; i++)
		ok = out_f32(o, i) == val(origin, chunk * 64 + i);
	return ok;
}

/*
 * MCAST loss recovery at gateway 1 (docs/PROTOCOL.md sections 7.5 and 7.6), with the
 * table of test_mcast(): a NACK_MCAST is answered from the copies retained, to the table's
 * address of the requester; a chunk not retained is asked of the stream's `from` gateway
 * and its repair goes to who asked only; bad requests are dropped by reason; answers are
 * bounded by the requester's budget.
 */
static void
test_mcast_recovery(void)
{
	static struct out o[64];
	int n;

	CU_ASSERT_FATAL(dp_up(rte_get_main_lcore()) == 0);
	CU_ASSERT_FATAL(install(mcast_table(), "install") == 0);
	/* Retained copies: two rounds of 16 chunks of each of the 2 origins of each of the 2
	 * streams, one packet each, counted in what the job may hold. */
	{
		json_t *st = dp_stats_json(&dp);
		json_t *jb = json_array_get(json_object_get(st, "jobs"), 0);

		CU_ASSERT(json_integer_value(json_object_get(jb, "mcast_keep_per_lcore")) == 128);
		CU_ASSERT(json_integer_value(json_object_get(jb, "mcast_pace_queue")) ==
			  DP_MCAST_PACE_Q);
		CU_ASSERT(json_integer_value(json_object_get(jb, "mbufs_held_max")) >= 128);
		json_decref(st);
	}
	/* Chunks 0-3 of origin 31 arrive from upstream: four copies each. */
	for (uint32_t c = 0; c < 4; c++)
		inject(mcast_f32(5, 2, 31, 9, c, 64));
	poll_all();
	CU_ASSERT(collect(o, 64) == 16);

	/* Worker 21 lost chunk 2: the retained copy, to its table address alone. */
	inject(nack_mcast(5, 21, 31, 9, 2, 1));
	poll_all();
	n = collect(o, 64);
	CU_ASSERT_FATAL(n == 1);
	CU_ASSERT(is_mcast_repair(&o[0], 21, 31, 9, 2));
	CU_ASSERT(ctr(DP_CTR_MCAST_NACKS) == 1 && ctr(DP_CTR_MCAST_REPAIRS) == 1);
	/* Gateway 3 (a `to` of the stream) lost chunk 1: to its port of chunk 1, paced. */
	inject(nack_mcast(5, 3, 31, 9, 1, 1));
	poll_all();
	n = collect(o, 64);
	CU_ASSERT_FATAL(n == 1);
	CU_ASSERT(is_mcast_repair(&o[0], 3, 31, 9, 1));
	CU_ASSERT(ctr(DP_CTR_MCAST_REPAIRS) == 2);

	/* Bad requests: dropped by reason, none answered, nothing asked upstream. */
	inject(nack_mcast(5, 23, 31, 9, 2, 1));         /* no receiver of the stream */
	inject(nack_mcast(5, 2, 31, 9, 2, 1));          /* the upstream gateway */
	inject(nack_mcast(5, 21, 33, 9, 2, 1));         /* not an origin of the stream */
	inject(nack_mcast(6, 21, 21, 4, 2, 1));         /* its own update */
	spoof.on = true;                                /* 21's id from 22's address */
	spoof.ip = PEER_IP(22);
	spoof.sport = WORKER_PORT;
	inject(nack_mcast(5, 21, 31, 9, 2, 1));
	spoof.on = false;
	poll_all();
	CU_ASSERT(drops(WIRE_REASON_BAD_SENDER) == 5);
	inject(nack_mcast(7, 21, 31, 9, 2, 1));         /* unknown stream */
	poll_all();
	CU_ASSERT(drops(WIRE_REASON_UNKNOWN_TREE) == 1);
	inject(nack_mcast(5, 21, 31, 9, 15, 2));        /* runs past the last chunk */
	inject(nack_mcast(5, 21, 31, 9, 16, 1));        /* past the last chunk */
	poll_all();
	CU_ASSERT(drops(WIRE_REASON_BAD_CHUNK) == 2);
	CU_ASSERT(collect(o, 64) == 0);
	CU_ASSERT(ctr(DP_CTR_MCAST_NACKS) == 2 && ctr(DP_CTR_MCAST_ASKED) == 0);

	/* Chunk 5 was lost upstream of this gateway: asked of gateway 2 (count 1) ... */
	inject(nack_mcast(5, 21, 31, 9, 5, 1));
	poll_all();
	n = collect(o, 64);
	CU_ASSERT_FATAL(n == 1);
	CU_ASSERT(o[0].p.type == WIRE_TYPE_NACK_MCAST && o[0].p.tree == 5 &&
		  o[0].p.sender == 1 && o[0].p.origin == 31 && o[0].p.round == 9 &&
		  o[0].p.chunk == 5 && o[0].p.count == 1 && o[0].p.flags == 0 &&
		  o[0].fl.dst_ip == PEER_IP(2) &&
		  o[0].fl.dst_port == wire_udp_port(WIRE_PORT_BASE_DEFAULT,
						    WIRE_PORT_COUNT_DEFAULT, 5));
	CU_ASSERT(ctr(DP_CTR_MCAST_ASKED) == 1);
	/* ... the repair from a gateway other than `from` is no answer ... */
	inject(mcast_repair(5, 3, 31, 9, 5));
	poll_all();
	CU_ASSERT(drops(WIRE_REASON_BAD_SENDER) == 6 && collect(o, 64) == 0);
	/* ... the one from gateway 2 goes to worker 21 only, which asked. */
	inject(mcast_repair(5, 2, 31, 9, 5));
	poll_all();
	n = collect(o, 64);
	CU_ASSERT_FATAL(n == 1);
	CU_ASSERT(is_mcast_repair(&o[0], 21, 31, 9, 5));
	CU_ASSERT(ctr(DP_CTR_MCAST_REPAIRS) == 3);
	/* Retained: worker 22's request for it is answered here, not asked again. */
	inject(nack_mcast(5, 22, 31, 9, 5, 1));
	poll_all();
	n = collect(o, 64);
	CU_ASSERT_FATAL(n == 1);
	CU_ASSERT(is_mcast_repair(&o[0], 22, 31, 9, 5));
	CU_ASSERT(ctr(DP_CTR_MCAST_ASKED) == 1);
	/* A repair nobody waits for is late (and retained). */
	inject(mcast_repair(5, 2, 32, 9, 6));
	poll_all();
	CU_ASSERT(collect(o, 64) == 0 && drops(WIRE_REASON_LATE) == 1);
	inject(nack_mcast(5, 4, 32, 9, 6, 1));
	poll_all();
	n = collect(o, 64);
	CU_ASSERT(n == 1 && is_mcast_repair(&o[0], 4, 32, 9, 6));
	/* Asked for, then the original arrives after all: it goes to every receiver, and
	 * the repair after it is late. */
	inject(nack_mcast(5, 21, 31, 9, 7, 1));
	poll_all();
	CU_ASSERT(collect(o, 64) == 1 && ctr(DP_CTR_MCAST_ASKED) == 2);
	inject(mcast_f32(5, 2, 31, 9, 7, 64));
	poll_all();
	CU_ASSERT(collect(o, 64) == 4);
	inject(mcast_repair(5, 2, 31, 9, 7));
	poll_all();
	CU_ASSERT(collect(o, 64) == 0 && drops(WIRE_REASON_LATE) == 2);
	/* A copy already retained is a duplicate: not forwarded again. */
	inject(mcast_f32(5, 2, 31, 9, 0, 64));
	poll_all();
	CU_ASSERT(collect(o, 64) == 0 && drops(WIRE_REASON_DUPLICATE) == 1);
	/* The next round's chunk 0 is retained beside this one's: a receiver still in round 9
	 * gets its chunk 0 while the origin sends round 10. */
	inject(mcast_f32(5, 2, 31, 10, 0, 64));
	poll_all();
	CU_ASSERT(collect(o, 64) == 4);
	inject(nack_mcast(5, 22, 31, 9, 0, 1));
	poll_all();
	n = collect(o, 64);
	CU_ASSERT(n == 1 && is_mcast_repair(&o[0], 22, 31, 9, 0));

	/* At the source nothing is upstream: a chunk the gateway never had is not held, and
	 * a worker sends no repairs. */
	inject(nack_mcast(6, 22, 21, 4, 3, 1));
	inject(mcast_repair(6, 21, 21, 4, 3));
	poll_all();
	CU_ASSERT(collect(o, 64) == 0 && ctr(DP_CTR_MCAST_NOT_HELD) == 1 &&
		  drops(WIRE_REASON_BAD_SENDER) == 7);

	/* The budget: 2000 requests of worker 22 for a retained chunk get at most a full
	 * budget (a frame per copy stream 5 retains: 2 rounds of 16 chunks of 2 origins) and
	 * what time added while they were handled (1,000,000 bytes a second, measured here);
	 * the rest are counted. */
	{
		const uint32_t frame = WIRE_FRAME_PAYLOAD_OFF + 64 * 4, asks = 2000, cap = 64;
		uint64_t before = ctr(DP_CTR_MCAST_REPAIRS), t0 = rte_rdtsc();
		uint64_t sent = 0, withheld;

		for (uint32_t i = 0; i < asks; i++) {
			inject(nack_mcast(5, 22, 31, 9, 0, 1));
			if (i % 256 == 255) {
				poll_all();
				sent += (uint64_t)collect(o, 64);
			}
		}
		poll_all();
		sent += (uint64_t)collect(o, 64);
		double us = (double)(rte_rdtsc() - t0) * 1e6 / (double)rte_get_tsc_hz();
		withheld = ctr(DP_CTR_MCAST_BUDGET);

		CU_ASSERT(sent == ctr(DP_CTR_MCAST_REPAIRS) - before);
		CU_ASSERT(sent + withheld == asks);
		CU_ASSERT((double)sent <= cap + us / frame + 2);
		if (us < 500.0 * frame) /* under 0.17 s: most were refused */
			CU_ASSERT(withheld >= asks / 2);
	}
	dp_down();
}

static double
ms_since(uint64_t t0)
{
	return (double)(rte_rdtsc() - t0) * 1e3 / (double)rte_get_tsc_hz();
}

/*
 * Requests pending upstream, with the table of test_mcast(): a slot per copy the rings
 * hold (two rounds of 16 chunks of 2 origins), so the chunks of two rounds are pending at
 * once, and a chunk two rounds on takes the slot of its namesake. That does not stop the
 * new loss from being asked: the older request is evicted, its repair is late (retained)
 * and answers the next request for it. And a chunk asked of `from` is not asked again
 * while its repair may be on its way: for the measured repair time and four deviations.
 */
static void
test_mcast_ask_full(void)
{
	static struct out o[64];
	uint32_t asked = 0;
	int n;

	CU_ASSERT_FATAL(dp_up(rte_get_main_lcore()) == 0);
	CU_ASSERT_FATAL(install(mcast_table(), "install") == 0);
	/* Copies forwarded to worker 21 earn what its repairs may cost. */
	for (uint32_t c = 0; c < 4; c++)
		inject(mcast_f32(5, 2, 31, 9, c, 64));
	poll_all();
	CU_ASSERT(collect(o, 64) == 16);
	/* Every chunk of origin 31's rounds 100 and 101, and chunk 3 of 32's round 100. */
	for (uint32_t i = 0; i < 32; i++) {
		inject(nack_mcast(5, 21, 31, 100 + i / 16, i % 16, 1));
		if (i % 16 == 15) {
			poll_all();
			asked += (uint32_t)collect(o, 64);
		}
	}
	inject(nack_mcast(5, 21, 32, 100, 3, 1));
	poll_all();
	asked += (uint32_t)collect(o, 64);
	CHECK(asked == 33 && ctr(DP_CTR_MCAST_ASK_FULL) == 0, "%u NACK_MCASTs upstream, %"
	      PRIu64 " evicted", asked, ctr(DP_CTR_MCAST_ASK_FULL));
	/* Chunk 3 of 31's round 102 takes round 100's slot: asked, the other evicted. */
	inject(nack_mcast(5, 21, 31, 102, 3, 1));
	poll_all();
	n = collect(o, 64);
	CHECK(n == 1 && o[0].p.type == WIRE_TYPE_NACK_MCAST && o[0].p.round == 102 &&
	      ctr(DP_CTR_MCAST_ASKED) == 34 && ctr(DP_CTR_MCAST_ASK_FULL) == 1,
	      "%d sent, %" PRIu64 " asked, %" PRIu64 " evicted", n, ctr(DP_CTR_MCAST_ASKED),
	      ctr(DP_CTR_MCAST_ASK_FULL));
	/* The evicted one's repair is late and retained ... */
	inject(mcast_repair(5, 2, 31, 100, 3));
	poll_all();
	CU_ASSERT(collect(o, 64) == 0 && drops(WIRE_REASON_LATE) == 1);
	/* ... and answers worker 21's next request for it at once. */
	inject(nack_mcast(5, 21, 31, 100, 3, 1));
	poll_all();
	n = collect(o, 64);
	CU_ASSERT(n == 1 && is_mcast_repair(&o[0], 21, 31, 100, 3));
	/* The others are pending: their repairs go to worker 21. */
	inject(mcast_repair(5, 2, 31, 102, 3));
	inject(mcast_repair(5, 2, 31, 101, 14));
	poll_all();
	n = collect(o, 64);
	CHECK(n == 2 && is_mcast_repair(&o[0], 21, 31, 102, 3) &&
		      is_mcast_repair(&o[1], 21, 31, 101, 14),
	      "%d sent (round %u chunk %u), %" PRIu64 " withheld", n, n > 0 ? o[0].p.round : 0,
	      n > 0 ? o[0].p.chunk : 0, ctr(DP_CTR_MCAST_BUDGET));
	CU_ASSERT(drops(WIRE_REASON_LATE) == 1);
	dp_down();

	/* A repair 30 ms after the request: the first sample of the repair time (rt); a
	 * chunk asked for then is asked again at a later request only once 3 rt (rt and
	 * four deviations of rt / 2) have passed, not after the 20 ms floor. */
	CU_ASSERT_FATAL(dp_up(rte_get_main_lcore()) == 0);
	CU_ASSERT_FATAL(install(mcast_table(), "install") == 0);
	uint64_t t0 = rte_rdtsc();

	inject(nack_mcast(5, 21, 31, 300, 4, 1));
	poll_all();
	double rt_lo, rt_hi;
	uint64_t t1 = rte_rdtsc();

	CU_ASSERT_FATAL(collect(o, 64) == 1);
	rte_delay_us_sleep(30000);
	rt_lo = ms_since(t1);
	inject(mcast_repair(5, 2, 31, 300, 4));
	poll_all();
	rt_hi = ms_since(t0);
	CU_ASSERT(collect(o, 64) == 1);
	t0 = rte_rdtsc();
	inject(nack_mcast(5, 21, 31, 301, 4, 1));
	poll_all();
	CU_ASSERT(collect(o, 64) == 1 && ctr(DP_CTR_MCAST_ASKED) == 2);
	rte_delay_us_sleep(35000);
	inject(nack_mcast(5, 21, 31, 301, 4, 1));
	poll_all();
	t1 = rte_rdtsc();
	n = collect(o, 64);
	/* Between the two requests, at most what passed from t0 to now; the floor passed. */
	if (ms_since(t0) < 3 * rt_lo)
		CHECK(n == 0, "asked again %.1f ms later, repairs took %.1f ms", ms_since(t0),
		      rt_lo);
	/* Once 3 rt have passed for sure, the next request asks again. */
	while (ms_since(t1) < 3 * rt_hi + 1)
		rte_delay_us_sleep(5000);
	inject(nack_mcast(5, 21, 31, 301, 4, 1));
	poll_all();
	CU_ASSERT(collect(o, 64) == 1 && ctr(DP_CTR_MCAST_ASKED) == 3 + (uint64_t)n);
	dp_down();
}

/* An fp32 CONTRIB of one chunk with a one-block contributor set: the sum of the values of
 * workers ids[0 .. n - 1], from sender (a worker, or a gateway's partial sum). */
static struct rte_mbuf *
contrib_set(uint32_t job, uint32_t epoch, uint16_t sender, const uint16_t *ids, int n,
	    uint32_t round, uint32_t chunk, uint64_t elements, uint32_t ce, uint8_t flags)
{
	float pl[4096];
	uint8_t set[WIRE_CSET_BLOCK] = { 0 };
	uint16_t len = chunk_len(elements, ce, chunk);
	struct pkt p = { WIRE_TYPE_CONTRIB, flags, job, epoch, 0, sender, sender, (uint16_t)n,
			 round, chunk, WIRE_DTYPE_FP32, len, PEER_IP(sender) };
	struct rte_mbuf *m;

	for (uint16_t i = 0; i < len; i++) {
		pl[i] = 0;
		for (int k = 0; k < n; k++)
			pl[i] += val(ids[k], (uint64_t)chunk * ce + i);
	}
	for (int k = 0; k < n; k++)
		CU_ASSERT_FATAL(wire_cset_add(set, 1, ids[k]) == 0);
	m = mk_pkt_set(&p, 1, set, pl);
	if (flags & WIRE_F_RETX) /* no UDP checksum: the header changed after it */
		rte_pktmbuf_mtod_offset(m, struct rte_udp_hdr *, 34)->dgram_cksum = 0;
	return m;
}

/* The RESULT o holds exactly workers ids[0 .. n - 1]: count, set and every element. */
static bool
result_is(const struct out *o, const uint16_t *ids, int n, uint32_t ce)
{
	const uint8_t *set = o->frame + WIRE_FRAME_PAYLOAD_OFF;
	bool ok = o->p.type == WIRE_TYPE_RESULT && o->p.cset_blocks == 1 && o->p.contrib == n &&
		  wire_cset_count(set, 1) == (unsigned int)n;

	for (int k = 0; k < n; k++)
		ok = ok && wire_cset_test(set, 1, ids[k]);
	for (uint32_t i = 0; ok && i < o->p.count; i++) {
		float want = 0, got;
		uint64_t e = (uint64_t)o->p.chunk * ce + i;

		for (int k = 0; k < n; k++)
			want += val(ids[k], e);
		memcpy(&got, set + WIRE_CSET_BLOCK + 4 * i, 4);
		ok = got == want;
	}
	return ok;
}

/* Partial reduce at a root: local workers 11, 12, 13 and child gateway 3 (workers 31 and
 * 32 behind it), complete at 4 of the 5 workers. The RESULT carries who is in it; the
 * straggler is late and gets that RESULT; a child's set naming a worker that is not below
 * it and a worker claiming another's bit are refused; the next round is unaffected. Then
 * a leaf that completes at 1 of 2. */
static void
test_partial_reduce(void)
{
	const uint64_t el = 128;
	const uint32_t ce = 64;
	struct tdesc td = { 0, 0, 1, { 3 }, 0, 2, 16, { 0 } };
	struct tbelow bl = { 2, { 31, 32 }, { 0, 0 } }; /* both below child 3 */
	static const uint16_t in4[] = { 11, 12, 31, 32 }, w31[] = { 31, 32 }, all[] = {
		11, 12, 13, 31, 32 };
	static struct out o[16];
	struct table *tb;
	uint64_t late;
	int n;

	CU_ASSERT_FATAL(dp_up(rte_get_main_lcore()) == 0);
	tb = mk_table_sets(14, 1, 1, TABLE_DTYPE_FP32, el, ce, 3, W3, 1, &td, &bl);
	tb->trees[0].subtree_workers = 5;
	tb->trees[0].threshold = 4;
	CU_ASSERT_FATAL(install(tb, "install") == 0);
	/* Round 5, chunk 0: 11, 12 and the child's {31, 32} make 4: complete. */
	inject(contrib_set(14, 1, 11, &in4[0], 1, 5, 0, el, ce, 0));
	inject(contrib_set(14, 1, 12, &in4[1], 1, 5, 0, el, ce, 0));
	poll_all();
	CU_ASSERT(collect(o, 16) == 0);
	inject(contrib_set(14, 1, 3, w31, 2, 5, 0, el, ce, 0));
	poll_all();
	n = collect(o, 16);
	CU_ASSERT(n == 4); /* the child and the three workers, the straggler too */
	for (int k = 0; k < n && k < 16; k++)
		CU_ASSERT(result_is(&o[k], in4, 4, ce));
	/* The straggler 13: late, answered with that RESULT, which it is not in. */
	late = drops(WIRE_REASON_LATE);
	inject(contrib_set(14, 1, 13, &all[2], 1, 5, 0, el, ce, 0));
	poll_all();
	n = collect(o, 16);
	CU_ASSERT(drops(WIRE_REASON_LATE) == late + 1);
	CU_ASSERT(n == 1 && o[0].fl.dst_ip == PEER_IP(13) && result_is(&o[0], in4, 4, ce) &&
		  (o[0].p.flags & WIRE_F_RETX));
	/* Chunk 1: the child's set names worker 11, already in and not below the child:
	 * refused, slot unchanged. */
	inject(contrib_set(14, 1, 11, &in4[0], 1, 5, 1, el, ce, 0));
	{
		static const uint16_t bad[] = { 11, 31 };

		inject(contrib_set(14, 1, 3, bad, 2, 5, 1, el, ce, 0));
	}
	/* Worker 12 with 13's bit: a worker contributes itself only. */
	{
		struct rte_mbuf *m = contrib_set(14, 1, 12, &all[2], 1, 5, 1, el, ce, 0);

		inject(m);
	}
	/* No set (cset_blocks 0) where the job carries them. */
	inject(contrib_f32(14, 1, 0, 12, 5, 1, el, ce));
	poll_all();
	CU_ASSERT(collect(o, 16) == 0);
	CU_ASSERT(drops(WIRE_REASON_CSET_OVERLAP) == 0);
	CU_ASSERT(drops(WIRE_REASON_BAD_SENDER) == 2);
	CU_ASSERT(drops(WIRE_REASON_JOB_MISMATCH) == 1);
	/* The rest of chunk 1 as it should be: 12, then all of the child: 11, 12, 31, 32. */
	inject(contrib_set(14, 1, 12, &in4[1], 1, 5, 1, el, ce, 0));
	inject(contrib_set(14, 1, 3, w31, 2, 5, 1, el, ce, 0));
	poll_all();
	n = collect(o, 16);
	CU_ASSERT(n == 4);
	for (int k = 0; k < n && k < 16; k++)
		CU_ASSERT(result_is(&o[k], in4, 4, ce));
	/* Round 6: 13 first this time, then 11 and 12: 3 of 4; the child's two make all five. */
	inject(contrib_set(14, 1, 13, &all[2], 1, 6, 0, el, ce, 0));
	inject(contrib_set(14, 1, 11, &all[0], 1, 6, 0, el, ce, 0));
	inject(contrib_set(14, 1, 12, &all[1], 1, 6, 0, el, ce, 0));
	poll_all();
	CU_ASSERT(collect(o, 16) == 0);
	inject(contrib_set(14, 1, 3, w31, 2, 6, 0, el, ce, 0));
	poll_all();
	n = collect(o, 16);
	CU_ASSERT(n == 4);
	for (int k = 0; k < n && k < 16; k++)
		CU_ASSERT(result_is(&o[k], all, 5, ce) && o[k].p.round == 6);
	/* Round 5's straggler again, a round behind now: late, nothing summed. */
	late = drops(WIRE_REASON_LATE);
	inject(contrib_set(14, 1, 13, &all[2], 1, 5, 0, el, ce, 0));
	poll_all();
	collect(o, 16);
	CU_ASSERT(drops(WIRE_REASON_LATE) == late + 1);
	CU_ASSERT(ctr(DP_CTR_CHUNKS_COMPLETED) == 3);

	/* A leaf (gateway 2, parent 4) of workers 21, 22 that sends up at 1 of 2. */
	{
		static const uint16_t w2[] = { 21, 22 };
		struct tdesc tl = { 0, 4, 0, { 0 }, 0, 2, 16, { 0 } };
		uint8_t set[WIRE_CSET_BLOCK] = { 0 };
		float pl[64];

		tb = mk_table(14, 2, 1, TABLE_DTYPE_FP32, el, ce, 2, w2, 1, &tl);
		tb->cset_blocks = 1;
		tb->trees[0].subtree_workers = 2;
		tb->trees[0].threshold = 1;
		CU_ASSERT_FATAL(install(tb, "install") == 0);
		struct rte_mbuf *m = contrib_set(14, 2, 21, &w2[0], 1, 7, 0, el, ce, 0);

		inject(m);
		poll_all();
		n = collect(o, 16);
		CU_ASSERT_FATAL(n == 1);
		CU_ASSERT(o[0].p.type == WIRE_TYPE_CONTRIB && o[0].p.contrib == 1 &&
			  o[0].fl.dst_ip == PEER_IP(4) && o[0].p.origin == 1);
		/* 22 is late at the complete slot; the parent's RESULT ({21, 40}) reaches both. */
		m = contrib_set(14, 2, 22, &w2[1], 1, 7, 0, el, ce, 0);
		late = drops(WIRE_REASON_LATE);
		inject(m);
		poll_all();
		CU_ASSERT(collect(o, 16) == 0 && drops(WIRE_REASON_LATE) == late + 1);
		static const uint16_t r2[] = { 21, 40 };
		struct pkt rp = { WIRE_TYPE_RESULT, 0, 14, 2, 0, 4, 4, 2, 7, 0, WIRE_DTYPE_FP32,
				  (uint16_t)ce, PEER_IP(4) };

		for (uint32_t i = 0; i < ce; i++)
			pl[i] = val(21, i) + val(40, i);
		wire_cset_add(set, 1, 21);
		wire_cset_add(set, 1, 40);
		inject(mk_pkt_set(&rp, 1, set, pl));
		poll_all();
		n = collect(o, 16);
		CU_ASSERT(n == 2);
		for (int k = 0; k < n && k < 16; k++)
			CU_ASSERT(result_is(&o[k], r2, 2, ce));
		/* 22 from round 5, two rounds behind: this leaf (no threshold of its own)
		 * answers with round 7's RESULT, where its group is. */
		m = contrib_set(14, 2, 22, &w2[1], 1, 5, 0, el, ce, 0);
		inject(m);
		poll_all();
		n = collect(o, 16);
		CU_ASSERT(n == 1 && o[0].p.round == 7 && o[0].fl.dst_ip == PEER_IP(22) &&
			  result_is(&o[0], r2, 2, ce));
	}
	dp_down();
}

/* contrib_set() with the header's contrib changed to `contrib`, the set left as it is (the
 * UDP checksum is dropped: the header changed after it). */
static struct rte_mbuf *
contrib_set_count(uint32_t job, uint32_t epoch, uint16_t sender, const uint16_t *ids, int n,
		  uint32_t round, uint32_t chunk, uint64_t elements, uint32_t ce, uint16_t contrib)
{
	struct rte_mbuf *m = contrib_set(job, epoch, sender, ids, n, round, chunk, elements, ce, 0);

	rte_pktmbuf_mtod_offset(m, struct wire_hdr *, WIRE_FRAME_HDR_OFF)->contrib =
		rte_cpu_to_be_16(contrib);
	rte_pktmbuf_mtod_offset(m, struct rte_udp_hdr *, 34)->dgram_cksum = 0;
	return m;
}

/* Contributor sets of child gateways, at a root of workers 11 and 12 and children 3
 * (workers 31, 32 below it) and 4 (worker 41), every contributor needed. A child's set may
 * name only workers below it: child 3 claiming 41, who has not contributed yet, is
 * refused (bad_sender) without touching the slot, and 41's own sum through child 4 still
 * counts. A set whose population is not its contrib is malformed (bad_cset). */
static void
test_partial_reduce_child_sets(void)
{
	const uint64_t el = 128;
	const uint32_t ce = 64;
	struct tdesc td = { 0, 0, 2, { 3, 4 }, 0, 2, 16, { 0 } };
	struct tbelow bl = { 3, { 31, 32, 41 }, { 0, 0, 1 } };
	static const uint16_t w[] = { 11, 12 }, w3[] = { 31, 32 }, w4[] = { 41 },
			      forged[] = { 31, 32, 41 }, all[] = { 11, 12, 31, 32, 41 };
	static struct out o[16];
	struct table *tb;
	uint64_t contribs;
	int n;

	CU_ASSERT_FATAL(dp_up(rte_get_main_lcore()) == 0);
	tb = mk_table_sets(16, 1, 1, TABLE_DTYPE_FP32, el, ce, 2, w, 1, &td, &bl);
	tb->trees[0].subtree_workers = 5;
	CU_ASSERT_FATAL(install(tb, "install") == 0);
	inject(contrib_set(16, 1, 11, &w[0], 1, 1, 0, el, ce, 0));
	poll_all();
	contribs = ctr(DP_CTR_CONTRIBS);
	CU_ASSERT(contribs == 1);
	/* Child 3 names 41, below child 4: dropped, nothing summed or marked. */
	inject(contrib_set(16, 1, 3, forged, 3, 1, 0, el, ce, 0));
	poll_all();
	CU_ASSERT(collect(o, 16) == 0);
	CU_ASSERT(drops(WIRE_REASON_BAD_SENDER) == 1);
	CU_ASSERT(ctr(DP_CTR_CONTRIBS) == contribs);
	/* Child 4 names 12, a local worker of this gateway: dropped as well. */
	{
		static const uint16_t bad4[] = { 12, 41 };

		inject(contrib_set(16, 1, 4, bad4, 2, 1, 0, el, ce, 0));
	}
	poll_all();
	CU_ASSERT(collect(o, 16) == 0);
	CU_ASSERT(drops(WIRE_REASON_BAD_SENDER) == 2);
	/* Child 3's own workers with contrib 3 (or 1): the count is not the set's. Dropped
	 * as malformed before the tables are looked at. */
	inject(contrib_set_count(16, 1, 3, w3, 2, 1, 0, el, ce, 3));
	inject(contrib_set_count(16, 1, 3, w3, 2, 1, 0, el, ce, 1));
	poll_all();
	CU_ASSERT(collect(o, 16) == 0);
	CU_ASSERT(drops(WIRE_REASON_CSET) == 2);
	CU_ASSERT(ctr(DP_CTR_BAD_HEADER) == 2);
	CU_ASSERT(ctr(DP_CTR_CONTRIBS) == contribs);
	/* The real contributions: 12, child 3's {31, 32}, then child 4's {41} completes the
	 * chunk with every worker exactly once. */
	inject(contrib_set(16, 1, 12, &w[1], 1, 1, 0, el, ce, 0));
	inject(contrib_set(16, 1, 3, w3, 2, 1, 0, el, ce, 0));
	poll_all();
	CU_ASSERT(collect(o, 16) == 0);
	inject(contrib_set(16, 1, 4, w4, 1, 1, 0, el, ce, 0));
	poll_all();
	n = collect(o, 16);
	CU_ASSERT(n == 4); /* children 3 and 4, workers 11 and 12 */
	for (int k = 0; k < n && k < 16; k++)
		CU_ASSERT(result_is(&o[k], all, 5, ce));
	CU_ASSERT(ctr(DP_CTR_CONTRIBS) == 4);
	CU_ASSERT(ctr(DP_CTR_CHUNKS_COMPLETED) == 1);
	CU_ASSERT(drops(WIRE_REASON_CSET_OVERLAP) == 0);
	CU_ASSERT(drops(WIRE_REASON_DUPLICATE) == 0);
	dp_down();
}

/* An fp32 CONTRIB of one chunk without a contributor set, from sender: the sum of the
 * values of workers ids[0 .. n - 1], claiming `contrib` worker contributions. */
static struct rte_mbuf *
contrib_sum(uint32_t job, uint32_t epoch, uint16_t sender, uint16_t contrib, const uint16_t *ids,
	    int n, uint32_t round, uint32_t chunk, uint64_t elements, uint32_t ce)
{
	float pl[4096];
	uint16_t len = chunk_len(elements, ce, chunk);
	struct pkt p = { WIRE_TYPE_CONTRIB, 0, job, epoch, 0, sender, sender, contrib, round,
			 chunk, WIRE_DTYPE_FP32, len, PEER_IP(sender) };

	for (uint16_t i = 0; i < len; i++) {
		pl[i] = 0;
		for (int k = 0; k < n; k++)
			pl[i] += val(ids[k], (uint64_t)chunk * ce + i);
	}
	return mk_pkt(&p, pl);
}

/* The RESULT o (no contributor set) of chunk `chunk` sums exactly workers ids[0 .. n - 1]
 * and says so in its contrib. */
static bool
sum_is(const struct out *o, uint32_t chunk, const uint16_t *ids, int n, uint32_t ce)
{
	bool ok = o->p.type == WIRE_TYPE_RESULT && o->p.cset_blocks == 0 && o->p.contrib == n &&
		  o->p.chunk == chunk && o->p.count == ce;

	for (uint32_t i = 0; ok && i < o->p.count; i++) {
		float want = 0;

		for (int k = 0; k < n; k++)
			want += val(ids[k], (uint64_t)chunk * ce + i);
		ok = out_f32(o, i) == want;
	}
	return ok;
}

/*
 * Without contributor sets a child gateway's partial sum holds every worker below it, so
 * its contrib is their number (the table's subtree_workers of the child). Root 1 with
 * workers 11, 12 and child gateways 3 (workers 31, 32, 33 below it) and 4 (41). A child
 * claiming another count, more, fewer, or the other child's, is refused (bad_sender)
 * before the slot is touched, open or not; the right counts complete the chunk with all
 * six workers in the RESULT's contrib. With sets, a child's count is its set's population
 * and may be below the workers under it (a partial sum sent at a threshold).
 */
static void
test_child_contrib_count(void)
{
	const uint64_t el = 128;
	const uint32_t ce = 64;
	struct tdesc td = { 0, 0, 2, { 3, 4 }, 0, 2, 16, { 3, 1 } };
	static const uint16_t w[] = { 11, 12 }, w3[] = { 31, 32, 33 }, w4[] = { 41 },
			      all[] = { 11, 12, 31, 32, 33, 41 };
	static struct out o[16];
	struct table *tb;
	int n, bad = 0;

	CU_ASSERT_FATAL(dp_up(rte_get_main_lcore()) == 0);
	tb = mk_table(17, 1, 1, TABLE_DTYPE_FP32, el, ce, 2, w, 1, &td);
	CU_ASSERT_FATAL(tb->trees[0].subtree_workers == 6);
	CU_ASSERT_FATAL(install(tb, "install") == 0);
	/* Chunk 1, no slot open for it: child 3 claiming 1000 workers opens none. */
	inject(contrib_sum(17, 1, 3, 1000, w3, 3, 1, 1, el, ce));
	poll_all();
	CU_ASSERT(collect(o, 16) == 0);
	CU_ASSERT(drops(WIRE_REASON_BAD_SENDER) == 1);
	CU_ASSERT(ctr(DP_CTR_CONTRIBS) == 0);
	/* Chunk 0, open with both workers: too many, too few, and child 3's count from 4. */
	inject(contrib_f32(17, 1, 0, 11, 1, 0, el, ce));
	inject(contrib_f32(17, 1, 0, 12, 1, 0, el, ce));
	inject(contrib_sum(17, 1, 3, 1000, w3, 3, 1, 0, el, ce));
	inject(contrib_sum(17, 1, 3, 2, w3, 3, 1, 0, el, ce));
	inject(contrib_sum(17, 1, 4, 3, w4, 1, 1, 0, el, ce));
	poll_all();
	CU_ASSERT(collect(o, 16) == 0);
	CU_ASSERT(drops(WIRE_REASON_BAD_SENDER) == 4);
	CU_ASSERT(ctr(DP_CTR_CONTRIBS) == 2);
	/* The right counts complete it: nothing of the refused ones was summed or marked (a
	 * mark would make child 3's real sum a duplicate). */
	inject(contrib_sum(17, 1, 4, 1, w4, 1, 1, 0, el, ce));
	poll_all();
	CU_ASSERT(collect(o, 16) == 0);
	inject(contrib_sum(17, 1, 3, 3, w3, 3, 1, 0, el, ce));
	poll_all();
	n = collect(o, 16);
	CU_ASSERT(n == 4); /* children 3 and 4, workers 11 and 12 */
	for (int k = 0; k < n && k < 16; k++)
		bad += !sum_is(&o[k], 0, all, 6, ce);
	CU_ASSERT(bad == 0);
	CU_ASSERT(drops(WIRE_REASON_DUPLICATE) == 0);
	/* Chunk 1 as well: the refused claim left no slot behind. */
	inject(contrib_sum(17, 1, 3, 3, w3, 3, 1, 1, el, ce));
	inject(contrib_f32(17, 1, 0, 11, 1, 1, el, ce));
	inject(contrib_f32(17, 1, 0, 12, 1, 1, el, ce));
	inject(contrib_sum(17, 1, 4, 1, w4, 1, 1, 1, el, ce));
	poll_all();
	n = collect(o, 16);
	CU_ASSERT(n == 4);
	bad = 0;
	for (int k = 0; k < n && k < 16; k++)
		bad += !sum_is(&o[k], 1, all, 6, ce);
	CU_ASSERT(bad == 0);
	CU_ASSERT(ctr(DP_CTR_CONTRIBS) == 8);
	CU_ASSERT(ctr(DP_CTR_CHUNKS_COMPLETED) == 2);
	CU_ASSERT(drops(WIRE_REASON_BAD_SENDER) == 4);
	CU_ASSERT(drops(WIRE_REASON_DUPLICATE) == 0 && drops(WIRE_REASON_LATE) == 0);
	dp_down();

	/* With sets (job 18), child 3 (31, 32 below it) sends 31 alone: taken, and the
	 * threshold of 3 completes the chunk. */
	{
		struct tdesc ts = { 0, 0, 1, { 3 }, 0, 2, 16, { 0 } };
		struct tbelow bl = { 2, { 31, 32 }, { 0, 0 } };
		static const uint16_t in3[] = { 11, 12, 31 };

		CU_ASSERT_FATAL(dp_up(rte_get_main_lcore()) == 0);
		tb = mk_table_sets(18, 1, 1, TABLE_DTYPE_FP32, el, ce, 2, w, 1, &ts, &bl);
		CU_ASSERT_FATAL(tb->trees[0].child_workers[0] == 2 &&
				tb->trees[0].subtree_workers == 4);
		tb->trees[0].threshold = 3;
		CU_ASSERT_FATAL(install(tb, "install") == 0);
		inject(contrib_set(18, 1, 11, &in3[0], 1, 1, 0, el, ce, 0));
		inject(contrib_set(18, 1, 12, &in3[1], 1, 1, 0, el, ce, 0));
		inject(contrib_set(18, 1, 3, &in3[2], 1, 1, 0, el, ce, 0));
		poll_all();
		n = collect(o, 16);
		CU_ASSERT(n == 3);
		for (int k = 0; k < n && k < 16; k++)
			CU_ASSERT(result_is(&o[k], in3, 3, ce));
		CU_ASSERT(drops(WIRE_REASON_BAD_SENDER) == 0);
		dp_down();
	}
}

/* Counter `key` of the first job's stats entry for (tree, dir, gateway id) in `links`;
 * -1 if there is none. */
static json_int_t
link_ctr(int tree, const char *dir, int id, const char *key)
{
	json_t *st = dp_stats_json(&dp), *lk = link_entry(st, "tree", tree, dir, id);
	json_int_t v = lk != NULL ? json_integer_value(json_object_get(lk, key)) : -1;

	json_decref(st);
	return v;
}

/* Interior gateway 2: workers 21, 22 and child gateway 3 (contrib 4) up to parent 4; the
 * parent's RESULT down to the child and both workers. Also a leaf tree and a bad chunk. */
static void
test_interior_and_two_trees(void)
{
	const uint64_t el = 256;
	const uint32_t ce = 32;
	static const uint16_t w2[] = { 21, 22 };
	struct tdesc td[2] = {
		{ 0, 4, 1, { 3 }, 0, 4, 16, { 4 } }, /* interior: parent 4, child 3 (4 workers
						      * below), chunks 0-3 */
		{ 1, 4, 0, { 0 }, 4, 4, 16, { 0 } }, /* leaf: parent 4, chunks 4-7 */
	};
	static struct out o[64];

	CU_ASSERT_FATAL(dp_up(rte_get_main_lcore()) == 0);
	CU_ASSERT_FATAL(install(mk_table(8, 1, 2, TABLE_DTYPE_FP32, el, ce, 2, w2, 2, td),
				"install") == 0);
	for (uint32_t c = 0; c < 8; c++) {
		inject(contrib_f32(8, 1, c < 4 ? 0 : 1, 21, 0, c, el, ce));
		inject(contrib_f32(8, 1, c < 4 ? 0 : 1, 22, 0, c, el, ce));
	}
	for (uint32_t c = 0; c < 4; c++) {
		float pl[32];
		struct pkt p = { WIRE_TYPE_CONTRIB, 0, 8, 1, 0, 3, 3, 4, 0, c, WIRE_DTYPE_FP32, 32,
				 PEER_IP(3) };

		for (int i = 0; i < 32; i++)
			pl[i] = 100;
		inject(mk_pkt(&p, pl));
	}
	poll_all();
	int n = collect(o, 64), bad = 0;

	CU_ASSERT(n == 8);
	for (int k = 0; k < n && k < 64; k++) {
		const struct out *x = &o[k];
		uint32_t c = x->p.chunk;

		bad += x->p.type != WIRE_TYPE_CONTRIB || x->fl.dst_ip != PEER_IP(4) ||
		       x->p.sender != 2 || x->p.origin != 2 || x->p.contrib != (c < 4 ? 6 : 2) ||
		       x->p.tree != (c < 4 ? 0 : 1) ||
		       x->fl.dst_port != WIRE_PORT_BASE_DEFAULT + c % WIRE_PORT_COUNT_DEFAULT;
		for (uint32_t i = 0; i < 32; i++) {
			uint64_t e = (uint64_t)c * ce + i;

			bad += out_f32(x, i) != val(21, e) + val(22, e) + (c < 4 ? 100 : 0);
		}
	}
	CU_ASSERT(bad == 0);
	/* The parent's RESULT for chunk 2: to child 3 (gateway port) and workers 21, 22. */
	float res[32];
	struct pkt r = { WIRE_TYPE_RESULT, 0, 8, 1, 0, 4, 4, 9, 0, 2, WIRE_DTYPE_FP32, 32,
			 PEER_IP(4) };

	for (int i = 0; i < 32; i++)
		res[i] = (float)(1000 + i);
	inject(mk_pkt(&r, res));
	poll_all();
	n = collect(o, 64);
	CU_ASSERT(n == 3);
	bad = 0;
	for (int k = 0; k < n && k < 64; k++) {
		bad += o[k].p.type != WIRE_TYPE_RESULT || o[k].p.contrib != 9 ||
		       o[k].p.origin != 4 || o[k].p.sender != 2 || o[k].p.chunk != 2;
		bad += o[k].fl.dst_ip == PEER_IP(3)
			       ? o[k].fl.dst_port != WIRE_PORT_BASE_DEFAULT + 2
			       : o[k].fl.dst_port != WORKER_PORT;
		for (int i = 0; i < 32; i++)
			bad += out_f32(&o[k], (uint32_t)i) != (float)(1000 + i);
	}
	CU_ASSERT(bad == 0);
	/* The same RESULT again: duplicate. From a non-parent: bad_sender. */
	inject(mk_pkt(&r, res));
	r.sender = 3;
	r.src_ip = PEER_IP(3);
	inject(mk_pkt(&r, res));
	/* A chunk of tree 1 sent as tree 0: bad_chunk. */
	inject(contrib_f32(8, 1, 0, 21, 1, 5, el, ce));
	poll_all();
	CU_ASSERT(collect(o, 64) == 0);
	CU_ASSERT(drops(WIRE_REASON_DUPLICATE) == 1);
	CU_ASSERT(drops(WIRE_REASON_BAD_SENDER) == 1);
	CU_ASSERT(drops(WIRE_REASON_BAD_CHUNK) == 1);
	/* Per tree and gateway link, what went out: 4 partial sums up in each tree to 4, one
	 * RESULT down to child 3 in tree 0; the local workers' copies are not a link's. */
	const json_int_t fb = WIRE_FRAME_PAYLOAD_OFF + 32 * 4;

	CU_ASSERT(link_ctr(0, "up", 4, "frames") == 4 && link_ctr(0, "up", 4, "bytes") == 4 * fb);
	CU_ASSERT(link_ctr(1, "up", 4, "frames") == 4 && link_ctr(1, "up", 4, "bytes") == 4 * fb);
	CU_ASSERT(link_ctr(0, "down", 3, "frames") == 1 && link_ctr(0, "down", 3, "bytes") == fb);
	CU_ASSERT(link_ctr(1, "down", 3, "frames") == -1);
	CU_ASSERT(link_ctr(0, "up", 4, "retx_bytes") == 0);
	dp_down();
}

/* Hundreds of chunks in flight, arriving shuffled with duplicates: exact sums. */
static void
test_many_in_flight_shuffled(void)
{
	const uint32_t ce = 16, nch = 512;
	const uint64_t el = (uint64_t)ce * nch - 5;
	struct tdesc td = { 0, 0, 0, { 0 }, 0, nch, 512, { 0 } };
	const int n_in = 3 * (int)nch, n_dup = 100;
	struct rte_mbuf **in = calloc((size_t)(n_in + n_dup), sizeof(*in));
	static struct out o[2048];
	uint64_t rng = fuzz_env_ulong("GEOREDUCE_FUZZ_SEED", 42);
	int k = 0;

	CU_ASSERT_FATAL(dp_up(rte_get_main_lcore()) == 0);
	CU_ASSERT_FATAL(install(mk_table(9, 4, 1, TABLE_DTYPE_FP32, el, ce, 3, W3, 1, &td),
				"install") == 0);
	for (int w = 0; w < 3; w++)
		for (uint32_t c = 0; c < nch; c++)
			in[k++] = contrib_f32(9, 4, 0, W3[w], 77, c, el, ce);
	/* Fisher-Yates, then duplicates of random packets placed after their original. */
	for (int i = n_in - 1; i > 0; i--) {
		int j = (int)(rng_next(&rng) % (uint64_t)(i + 1));
		struct rte_mbuf *t = in[i];

		in[i] = in[j];
		in[j] = t;
	}
	for (int d = 0; d < n_dup; d++) {
		int j = (int)(rng_next(&rng) % (uint64_t)k);

		in[k] = rte_pktmbuf_copy(in[j], tpool, 0, UINT32_MAX);
		struct rte_mbuf *t = in[k];

		memmove(&in[j + 2], &in[j + 1], sizeof(*in) * (size_t)(k - j - 1));
		in[j + 1] = t;
		k++;
	}
	/* The first third alone: nothing completes yet, the slots hold it all. */
	for (int i = 0; i < k; i++) {
		inject(in[i]);
		if ((i & 255) == 255)
			poll_all();
	}
	poll_all();
	int n = collect(o, 2048), bad = 0;

	CU_ASSERT(n == 3 * (int)nch);
	for (int i = 0; i < n && i < 2048; i++) {
		uint32_t c = o[i].p.chunk;

		bad += o[i].p.contrib != 3;
		for (uint32_t e = 0; e < o[i].p.count; e++) {
			uint64_t x = (uint64_t)c * ce + e;

			bad += out_f32(&o[i], e) != val(11, x) + val(12, x) + val(13, x);
		}
	}
	CU_ASSERT(bad == 0);
	CU_ASSERT(drops(WIRE_REASON_DUPLICATE) == (uint64_t)n_dup);
	CU_ASSERT(ctr(DP_CTR_CHUNKS_COMPLETED) == nch);
	free(in);
	dp_down();
}

/* fp16 and bf16: accumulated in fp32, rounded once; integer values are exact. */
static void
half_case(enum table_dtype tdt, enum wire_dtype wdt)
{
	const uint64_t el = 300;
	const uint32_t ce = 128;
	struct tdesc td = { 0, 0, 0, { 0 }, 0, 3, 16, { 0 } };
	static struct out o[16];
	const struct sum_kernels *k = sum_kernels_get(SUM_ISA_SCALAR);

	CU_ASSERT_FATAL(dp_up(rte_get_main_lcore()) == 0);
	CU_ASSERT_FATAL(install(mk_table(10, 1, 1, tdt, el, ce, 3, W3, 1, &td), "install") == 0);
	for (int w = 0; w < 3; w++)
		for (uint32_t c = 0; c < 3; c++) {
			uint16_t n = chunk_len(el, ce, c), pl[128];
			float f[128];
			struct pkt p = { WIRE_TYPE_CONTRIB, 0, 10, 1, 0, W3[w], W3[w], 1, 2, c, wdt, n,
					 PEER_IP(W3[w]) };

			for (uint16_t i = 0; i < n; i++)
				f[i] = val(W3[w], (uint64_t)c * ce + i);
			if (wdt == WIRE_DTYPE_FP16)
				k->narrow_f16(pl, f, n);
			else
				k->narrow_bf16(pl, f, n);
			inject(mk_pkt(&p, pl));
		}
	poll_all();
	int n = collect(o, 16), bad = 0;

	CU_ASSERT(n == 9);
	for (int i = 0; i < n && i < 16; i++) {
		uint16_t h[128];
		float f[128];
		uint32_t c = o[i].p.chunk;

		bad += o[i].p.dtype != wdt;
		memcpy(h, o[i].frame + WIRE_FRAME_PAYLOAD_OFF, 2u * o[i].p.count);
		if (wdt == WIRE_DTYPE_FP16)
			k->widen_f16(f, h, o[i].p.count);
		else
			k->widen_bf16(f, h, o[i].p.count);
		for (uint32_t e = 0; e < o[i].p.count; e++) {
			uint64_t x = (uint64_t)c * ce + e;

			bad += f[e] != val(11, x) + val(12, x) + val(13, x);
		}
	}
	CU_ASSERT(bad == 0);
	/* A contribution of the wrong dtype: job_mismatch. */
	inject(contrib_f32(10, 1, 0, 11, 3, 0, el, ce));
	poll_all();
	CU_ASSERT(drops(WIRE_REASON_JOB_MISMATCH) == 1);
	collect(o, 16);
	dp_down();
}

static void
test_fp16(void)
{
	half_case(TABLE_DTYPE_FP16, WIRE_DTYPE_FP16);
}

static void
test_bf16(void)
{
	half_case(TABLE_DTYPE_BF16, WIRE_DTYPE_BF16);
}

/* MXCSR of the lcore that runs it, into *arg: what the EAL left for worker lcores. */
static int
read_mxcsr(void *arg)
{
	*(unsigned int *)arg = _mm_getcsr();
	return 0;
}

/* FTZ (bit 15) and DAZ (bit 6) clear, rounding to nearest (bits 13-14 zero). */
static bool
mxcsr_ieee(unsigned int csr)
{
	return (csr & (0x8000u | 0x0040u | 0x6000u)) == 0;
}

#define ANY_NAN 0xffffffffu /* an expected value: any NaN */

/*
 * The arithmetic docs/PROTOCOL.md section 4 promises, through a root with three workers:
 * IEEE binary32 adds in arrival order, subnormals kept (no FTZ/DAZ on the main thread or
 * on an EAL worker lcore), signed zeros and infinities as IEEE, NaN stays NaN.
 */
static void
test_ieee_sums(void)
{
	enum { N = 8 };
	static const uint32_t in[3][N] = { /* workers 11, 12, 13 */
		{ 0x00000001, 0x80000000, 0x00000000, 0x7f800000, 0x7f800000, 0x4cbebc20,
		  0x7f7fffff, 0x80000001 },
		{ 0x00000001, 0x80000000, 0x80000000, 0x3f800000, 0xff800000, 0x3f800000,
		  0x7f7fffff, 0x00000000 },
		{ 0x00000001, 0x80000000, 0x80000000, 0x3f800000, 0x3f800000, 0xccbebc20,
		  0xff7fffff, 0x00000000 },
	};
	/* Arrival 11, 12, 13: (1e8 + 1) - 1e8 = 0 and (max + max) - max = inf; arrival 11,
	 * 13, 12: (1e8 - 1e8) + 1 = 1 and (max - max) + max = max. */
	static const uint32_t want[2][N] = {
		{ 0x00000003, 0x80000000, 0x00000000, 0x7f800000, ANY_NAN, 0x00000000, 0x7f800000,
		  0x80000001 },
		{ 0x00000003, 0x80000000, 0x00000000, 0x7f800000, ANY_NAN, 0x3f800000, 0x7f7fffff,
		  0x80000001 },
	};
	static const int order[2][3] = { { 0, 1, 2 }, { 0, 2, 1 } };
	struct tdesc td = { 0, 0, 0, { 0 }, 0, 1, 16, { 0 } };
	static struct out o[8];
	unsigned int csr = _mm_getcsr(), lcore = rte_get_next_lcore(-1, 1, 0);

	CU_ASSERT(mxcsr_ieee(csr));
	if (lcore < RTE_MAX_LCORE) {
		csr = 0xffffffffu;
		CU_ASSERT_FATAL(rte_eal_remote_launch(read_mxcsr, &csr, lcore) == 0);
		rte_eal_wait_lcore(lcore);
		CU_ASSERT(mxcsr_ieee(csr));
	}
	CU_ASSERT_FATAL(dp_up(rte_get_main_lcore()) == 0);
	CU_ASSERT_FATAL(install(mk_table(8, 1, 1, TABLE_DTYPE_FP32, N, N, 3, W3, 1, &td),
				"install") == 0);
	for (int r = 0; r < 2; r++) {
		for (int k = 0; k < 3; k++) {
			int w = order[r][k];
			struct pkt p = { WIRE_TYPE_CONTRIB, 0, 8, 1, 0, W3[w], W3[w], 1,
					 (uint32_t)(5 + r), 0, WIRE_DTYPE_FP32, N, PEER_IP(W3[w]) };

			inject(mk_pkt(&p, in[w]));
			poll_all(); /* one at a time: the arrival order is the injection order */
		}
		int n = collect(o, 8), bad = 0;

		CU_ASSERT_FATAL(n == 3);
		for (int k = 0; k < n; k++)
			for (int i = 0; i < N; i++) {
				uint32_t got;

				memcpy(&got, o[k].frame + WIRE_FRAME_PAYLOAD_OFF + 4 * i, 4);
				bad += want[r][i] != ANY_NAN ? got != want[r][i]
							     : (got & 0x7fffffffu) <= 0x7f800000u;
			}
		CU_ASSERT(bad == 0);
	}
	dp_down();
}

/*
 * MX: each contribution decoded into the slot's fp32 accumulator in arrival order, the sum
 * encoded once as it leaves; the RESULT is bit for bit the reference computation of
 * docs/PROTOCOL.md section 4 (scalar kernels, the same order): acc = decode(c_1), acc +=
 * decode(c_i), encode(acc). Random data, the arrival order varying by chunk.
 */
static void
mx_case(enum table_dtype tdt, enum wire_dtype wdt)
{
	const uint64_t el = 320;
	const uint32_t ce = 128;        /* 4 blocks; the last chunk has 2 */
	struct tdesc td = { 0, 0, 0, { 0 }, 0, 3, 16, { 0 } };
	static struct out o[16];
	static uint8_t enc[3][3][4 * 33], want[3][4 * 33];
	const struct sum_kernels *k = sum_kernels_get(SUM_ISA_SCALAR);
	enum sum_mx f = (enum sum_mx)(wdt - WIRE_DTYPE_MXINT8);
	static const int order[3][3] = { { 0, 1, 2 }, { 2, 0, 1 }, { 1, 2, 0 } };
	uint64_t seed = 0x6d78u + (uint64_t)wdt;

	CU_ASSERT_FATAL(dp_up(rte_get_main_lcore()) == 0);
	CU_ASSERT_FATAL(install(mk_table(10, 1, 1, tdt, el, ce, 3, W3, 1, &td), "install") == 0);
	for (uint32_t c = 0; c < 3; c++) {
		uint16_t n = chunk_len(el, ce, c);
		float acc[128], v[128];

		for (int w = 0; w < 3; w++) {
			for (uint16_t i = 0; i < n; i++) {
				seed = seed * 6364136223846793005ull + 1442695040888963407ull;
				/* magnitudes over 2^-20 .. 2^12, either sign */
				v[i] = (float)((double)(int32_t)(seed >> 32) * 0x1p-31 *
					       (double)(1u << ((seed >> 8) % 32)) * 0x1p-20);
			}
			k->mx_narrow[f](enc[c][w], v, n / 32u);
		}
		for (int j = 0; j < 3; j++) {
			int w = order[c][j];
			struct pkt p = { WIRE_TYPE_CONTRIB, 0, 10, 1, 0, W3[w], W3[w], 1, 2, c, wdt,
					 n, PEER_IP(W3[w]) };

			if (j == 0)
				k->mx_widen[f](acc, enc[c][w], n / 32u);
			else
				k->mx_widen_add[f](acc, enc[c][w], n / 32u);
			inject(mk_pkt(&p, enc[c][w]));
			poll_all();     /* this arrival order at the gateway */
		}
		k->mx_narrow[f](want[c], acc, n / 32u);
	}
	int n = collect(o, 16), bad = 0;

	CU_ASSERT(n == 9);
	for (int i = 0; i < n && i < 16; i++) {
		uint32_t c = o[i].p.chunk;
		size_t len = wire_payload_bytes(wdt, o[i].p.count);

		bad += o[i].p.dtype != wdt || o[i].p.type != WIRE_TYPE_RESULT || c >= 3 ||
		       len != wire_payload_bytes(wdt, chunk_len(el, ce, c));
		if (c < 3 && len != 0)
			bad += memcmp(o[i].frame + WIRE_FRAME_PAYLOAD_OFF, want[c], len) != 0;
	}
	CU_ASSERT(bad == 0);
	/* A contribution of another dtype: job_mismatch. */
	inject(contrib_f32(10, 1, 0, 11, 3, 0, el, ce));
	poll_all();
	CU_ASSERT(drops(WIRE_REASON_JOB_MISMATCH) == 1);
	collect(o, 16);
	dp_down();
	/* Chunks that are not whole blocks: the table is refused. */
	CU_ASSERT_FATAL(dp_up(rte_get_main_lcore()) == 0);
	CU_ASSERT(install(mk_table(10, 1, 1, tdt, el, 100, 3, W3, 1, &td), "install") != 0);
	dp_down();
}

static void
test_mxint8(void)
{
	mx_case(TABLE_DTYPE_MXINT8, WIRE_DTYPE_MXINT8);
}

static void
test_mxfp8(void)
{
	mx_case(TABLE_DTYPE_MXFP8, WIRE_DTYPE_MXFP8);
}

static void
test_mxfp4(void)
{
	mx_case(TABLE_DTYPE_MXFP4, WIRE_DTYPE_MXFP4);
}

/*
 * An MX job whose table has a lan_dtype: the local workers' CONTRIBs come in fp32 or bf16
 * and go into the fp32 accumulator as they are (bf16 widened), the child gateway's in the
 * MX format, decoded; the sum is encoded once, and the RESULT leaves in the MX format,
 * also when the frame that holds it came from a worker (trimmed to the MX length). Bit for
 * bit the reference computation in the arrival order; a worker in the WAN dtype and a child
 * in the LAN dtype are job_mismatch.
 */
static void
mx_lan_case(enum table_dtype tdt, enum wire_dtype wdt, enum table_dtype lan)
{
	const uint64_t el = 320;
	const uint32_t ce = 128;        /* 4 blocks; the last chunk has 2 */
	struct tdesc td = { 0, 0, 1, { 2 }, 0, 3, 16, { 1 } };
	static struct out o[16];
	static float v[3][3][128];
	static uint16_t bf[3][3][128];
	static uint8_t enc[3][4 * 33], want[3][4 * 33];
	const struct sum_kernels *k = sum_kernels_get(SUM_ISA_SCALAR);
	enum sum_mx f = (enum sum_mx)(wdt - WIRE_DTYPE_MXINT8);
	/* 0, 1: the workers W3[0], W3[1]; 2: the child gateway 2 */
	static const int order[3][3] = { { 0, 2, 1 }, { 2, 1, 0 }, { 1, 0, 2 } };
	uint64_t seed = 0x6c616eu + (uint64_t)wdt + (uint64_t)lan;
	struct table *tb = mk_table(10, 1, 1, tdt, el, ce, 2, W3, 1, &td);

	tb->lan_dtype = lan;
	CU_ASSERT_FATAL(dp_up(rte_get_main_lcore()) == 0);
	CU_ASSERT_FATAL(install(tb, "install") == 0);
	for (uint32_t c = 0; c < 3; c++) {
		uint16_t n = chunk_len(el, ce, c);
		float acc[128], x[128];

		for (int w = 0; w < 3; w++) {
			for (uint16_t i = 0; i < n; i++) {
				seed = seed * 6364136223846793005ull + 1442695040888963407ull;
				v[c][w][i] = (float)((double)(int32_t)(seed >> 32) * 0x1p-31 *
						     (double)(1u << ((seed >> 8) % 24)) * 0x1p-12);
			}
			k->narrow_bf16(bf[c][w], v[c][w], n);
		}
		k->mx_narrow[f](enc[c], v[c][2], n / 32u);
		for (int j = 0; j < 3; j++) {
			int w = order[c][j];
			bool child = w == 2;
			uint16_t id = child ? 2 : W3[w];
			struct pkt p = { WIRE_TYPE_CONTRIB, 0, 10, 1, 0, id, id, 1, 2, c,
					 child ? wdt : (enum wire_dtype)lan, n, PEER_IP(id) };
			const void *pl = child ? (const void *)enc[c]
				       : lan == TABLE_DTYPE_BF16 ? (const void *)bf[c][w]
								 : (const void *)v[c][w];

			if (child)
				k->mx_widen[f](x, enc[c], n / 32u);
			else if (lan == TABLE_DTYPE_BF16)
				k->widen_bf16(x, bf[c][w], n);
			else
				memcpy(x, v[c][w], sizeof(float) * n);
			if (j == 0)
				memcpy(acc, x, sizeof(float) * n);
			else
				k->sum_f32(acc, x, n);
			inject(mk_pkt(&p, pl));
			poll_all();     /* this arrival order at the gateway */
		}
		k->mx_narrow[f](want[c], acc, n / 32u);
	}
	int n = collect(o, 16), bad = 0;

	CU_ASSERT(n == 9);      /* 3 chunks to the 2 workers and the child */
	for (int i = 0; i < n && i < 16; i++) {
		uint32_t c = o[i].p.chunk;
		size_t len = wire_payload_bytes(wdt, o[i].p.count);

		bad += o[i].p.dtype != wdt || o[i].p.type != WIRE_TYPE_RESULT || c >= 3 ||
		       o[i].p.contrib != 3 ||
		       len != wire_payload_bytes(wdt, chunk_len(el, ce, c)) ||
		       o[i].len != WIRE_FRAME_PAYLOAD_OFF + len;
		if (c < 3 && len != 0)
			bad += memcmp(o[i].frame + WIRE_FRAME_PAYLOAD_OFF, want[c], len) != 0;
	}
	CU_ASSERT(bad == 0);
	/* The next round: a worker in the WAN dtype, the child in the LAN dtype. */
	struct pkt pw = { WIRE_TYPE_CONTRIB, 0, 10, 1, 0, W3[0], W3[0], 1, 3, 0, wdt, ce,
			  PEER_IP(W3[0]) };
	struct pkt pc = { WIRE_TYPE_CONTRIB, 0, 10, 1, 0, 2, 2, 1, 3, 0, (enum wire_dtype)lan, ce,
			  PEER_IP(2) };

	inject(mk_pkt(&pw, enc[0]));
	inject(mk_pkt(&pc, lan == TABLE_DTYPE_BF16 ? (const void *)bf[0][0]
						   : (const void *)v[0][0]));
	poll_all();
	CU_ASSERT(drops(WIRE_REASON_JOB_MISMATCH) == 2);
	CU_ASSERT(collect(o, 16) == 0);
	dp_down();
}

static void
test_mx_lan(void)
{
	mx_lan_case(TABLE_DTYPE_MXINT8, WIRE_DTYPE_MXINT8, TABLE_DTYPE_FP32);
	mx_lan_case(TABLE_DTYPE_MXFP4, WIRE_DTYPE_MXFP4, TABLE_DTYPE_BF16);
	mx_lan_case(TABLE_DTYPE_MXFP8, WIRE_DTYPE_MXFP8, TABLE_DTYPE_FP32);
}

/* Corrupt one byte of a valid frame at off (XOR x). */
static struct rte_mbuf *
corrupt(struct rte_mbuf *m, size_t off, uint8_t x)
{
	rte_pktmbuf_mtod(m, uint8_t *)[off] ^= x;
	return m;
}

/* An ICMP message of type `type` (32 bytes of data) from 10.0.0.5 to the gateway. */
static struct rte_mbuf *
mk_icmp(uint8_t type)
{
	uint8_t frame[14 + 60] = { 0 };
	struct wire_flow fl = { .src_ip = PEER_IP(5), .dst_ip = GW_IP };
	struct rte_ipv4_hdr *ip = (struct rte_ipv4_hdr *)(frame + 14);
	struct rte_icmp_hdr *ic = (struct rte_icmp_hdr *)(ip + 1);
	struct rte_mbuf *m = rte_pktmbuf_alloc(tpool);

	memcpy(fl.dst_mac, gw_mac.addr_bytes, 6);
	CU_ASSERT(wire_frame_build(frame, sizeof(frame), &fl, 36, false) == 0);
	ip->next_proto_id = IPPROTO_ICMP;
	ip->total_length = rte_cpu_to_be_16(20 + 8 + 32);
	ip->hdr_checksum = 0;
	ip->hdr_checksum = rte_ipv4_cksum(ip);
	ic->icmp_type = type;
	ic->icmp_ident = rte_cpu_to_be_16(0x1234);
	ic->icmp_seq_nb = rte_cpu_to_be_16(1);
	ic->icmp_cksum = (uint16_t)~rte_raw_cksum(ic, 40);
	memcpy(must_append(m, sizeof(frame)), frame, sizeof(frame));
	return m;
}

/* Every class of bad packet is counted by its reason; afterwards a round still completes
 * exactly (no slot was touched). */
static void
test_bad_packets(void)
{
	const uint64_t el = 64;
	const uint32_t ce = 64;
	struct tdesc td = { 0, 0, 0, { 0 }, 0, 1, 16, { 0 } };
	static struct out o[16];
	struct pkt p;
	struct rte_mbuf *m;
	float pl[64] = { 0 };

	CU_ASSERT_FATAL(dp_up(rte_get_main_lcore()) == 0);
	CU_ASSERT_FATAL(install(mk_table(11, 3, 1, TABLE_DTYPE_FP32, el, ce, 3, W3, 1, &td),
				"install") == 0);
	/* One contribution in, so that a corrupted packet would show in the sum. */
	inject(contrib_f32(11, 3, 0, 11, 1, 0, el, ce));
	poll_all();
	const size_t H = WIRE_FRAME_HDR_OFF;
	struct {
		size_t off;
		uint8_t x;
		enum wire_reason why;
	} hdr_cases[] = {
		{ H + 0, 0xff, WIRE_REASON_MAGIC },
		{ H + 2, 0x03, WIRE_REASON_VERSION },
		{ H + 3, 0x40, WIRE_REASON_TYPE },
		{ H + 4, 0x80, WIRE_REASON_FLAGS },
		{ H + 7, 0x01, WIRE_REASON_RESERVED },
		{ H + 5, 0x0f, WIRE_REASON_DTYPE }, /* fp32 -> 14 */
		{ H + 6, 0x20, WIRE_REASON_CSET_LEN },
		{ H + 23, 0x01, WIRE_REASON_CONTRIB }, /* contrib 1 -> 0 */
	};

	for (size_t i = 0; i < sizeof(hdr_cases) / sizeof(hdr_cases[0]); i++) {
		m = corrupt(contrib_f32(11, 3, 0, 13, 1, 0, el, ce), hdr_cases[i].off, hdr_cases[i].x);
		inject(m);
		poll_all();
		CU_ASSERT(drops(hdr_cases[i].why) == 1);
		if (drops(hdr_cases[i].why) != 1)
			fprintf(stderr, "case %zu: reason %s not counted\n", i,
				wire_reason_str(hdr_cases[i].why));
	}
	/* Lower layers: IP checksum, fragment, UDP checksum, UDP length, truncated frame. */
	inject(corrupt(contrib_f32(11, 3, 0, 12, 1, 0, el, ce), 14 + 8, 0x01)); /* TTL: csum */
	m = contrib_f32(11, 3, 0, 12, 1, 0, el, ce);
	{
		struct rte_ipv4_hdr *ip = rte_pktmbuf_mtod_offset(m, struct rte_ipv4_hdr *, 14);

		ip->fragment_offset = rte_cpu_to_be_16(RTE_IPV4_HDR_MF_FLAG);
		ip->hdr_checksum = 0;
		ip->hdr_checksum = rte_ipv4_cksum(ip);
	}
	inject(m);
	inject(corrupt(contrib_f32(11, 3, 0, 12, 1, 0, el, ce), 14 + 20 + 6, 0x01)); /* UDP csum */
	m = contrib_f32(11, 3, 0, 12, 1, 0, el, ce);
	rte_pktmbuf_trim(m, 100); /* IP total length now beyond the frame */
	inject(m);
	m = contrib_f32(11, 3, 0, 12, 1, 0, el, ce);
	rte_pktmbuf_trim(m, rte_pktmbuf_data_len(m) - 10); /* 10 bytes: not even Ethernet+IP */
	inject(m);
	poll_all();
	CU_ASSERT(drops(WIRE_REASON_IP_CSUM) == 1);
	CU_ASSERT(drops(WIRE_REASON_IP_FRAG) == 1);
	CU_ASSERT(drops(WIRE_REASON_UDP_CSUM) == 1);
	CU_ASSERT(drops(WIRE_REASON_IP_HDR) == 1);
	/* Table level: unknown job, epoch ahead and stale, unknown tree, chunk out of range,
	 * count that is not the chunk's, sender not in the table, worker claiming contrib 2. */
	p = (struct pkt){ WIRE_TYPE_CONTRIB, 0, 99, 3, 0, 12, 12, 1, 1, 0, WIRE_DTYPE_FP32, 64,
			  PEER_IP(12) };
	inject(mk_pkt(&p, pl));
	p.job = 11;
	p.epoch = 4;
	inject(mk_pkt(&p, pl));
	p.epoch = 2;
	inject(mk_pkt(&p, pl));
	p.epoch = 3;
	p.tree = 5;
	inject(mk_pkt(&p, pl));
	p.tree = 0;
	p.chunk = 1;
	inject(mk_pkt(&p, pl));
	p.chunk = 0;
	p.count = 32;
	inject(mk_pkt(&p, pl));
	p.count = 64;
	p.sender = p.origin = 14;
	inject(mk_pkt(&p, pl));
	p.sender = p.origin = 12;
	p.contrib = 2;
	inject(mk_pkt(&p, pl));
	/* Not for us, each frame under a reason of its own: another destination address,
	 * an unknown EtherType, another UDP port, another IP protocol, ICMP other than an
	 * echo request, a PROBE_REPLY to no probe of this gateway (it probes outside jobs). */
	m = contrib_f32(11, 3, 0, 12, 1, 0, el, ce);
	{
		struct rte_ipv4_hdr *ip = rte_pktmbuf_mtod_offset(m, struct rte_ipv4_hdr *, 14);

		ip->dst_addr = rte_cpu_to_be_32(PEER_IP(99));
	}
	inject(m);
	inject(corrupt(contrib_f32(11, 3, 0, 12, 1, 0, el, ce), 12, 0x55));
	m = contrib_f32(11, 3, 0, 12, 1, 0, el, ce);
	rte_pktmbuf_mtod_offset(m, struct rte_udp_hdr *, 34)->dst_port = rte_cpu_to_be_16(9999);
	inject(m);
	m = contrib_f32(11, 3, 0, 12, 1, 0, el, ce);
	{
		struct rte_ipv4_hdr *ip = rte_pktmbuf_mtod_offset(m, struct rte_ipv4_hdr *, 14);

		ip->next_proto_id = IPPROTO_TCP;
		ip->hdr_checksum = 0;
		ip->hdr_checksum = rte_ipv4_cksum(ip);
	}
	inject(m);
	inject(mk_icmp(RTE_IP_ICMP_ECHO_REPLY));
	p = (struct pkt){ WIRE_TYPE_PROBE_REPLY, WIRE_F_ECHO, 11, 3, 0, 12, 12, 0, 0, 0,
			  WIRE_DTYPE_NONE, 0, PEER_IP(12) };
	inject(mk_pkt(&p, NULL));
	/* ... and one that looks like an answer to this gateway's probes, from an address
	 * that is no peer: the control thread counts it. */
	p = (struct pkt){ WIRE_TYPE_PROBE_REPLY, WIRE_F_ECHO, 0, 0, 0, WIRE_NODE_NONE,
			  WIRE_NODE_NONE, 0, 0, 0, WIRE_DTYPE_NONE, 0, PEER_IP(12) };
	inject(mk_pkt(&p, NULL));
	poll_all();
	dp_housekeeping(&dp);
	CU_ASSERT(dp.probe_replies_unsolicited == 1);
	CU_ASSERT(drops(WIRE_REASON_OTHER_DST) == 1);
	CU_ASSERT(drops(WIRE_REASON_L2) == 2); /* and the runt of 10 bytes, a bad frame */
	CU_ASSERT(drops(WIRE_REASON_OTHER_PORT) == 1);
	CU_ASSERT(drops(WIRE_REASON_NOT_UDP) == 1);
	CU_ASSERT(drops(WIRE_REASON_ICMP_NOT_ECHO) == 1);
	CU_ASSERT(drops(WIRE_REASON_PROBE_REPLY) == 1);
	CU_ASSERT(ctr(DP_CTR_NOT_FOR_US) == 6);
	CU_ASSERT(drops(WIRE_REASON_UNKNOWN_JOB) == 1);
	CU_ASSERT(drops(WIRE_REASON_EPOCH_AHEAD) == 1);
	CU_ASSERT(drops(WIRE_REASON_EPOCH_STALE) == 1);
	CU_ASSERT(drops(WIRE_REASON_UNKNOWN_TREE) == 1);
	CU_ASSERT(drops(WIRE_REASON_BAD_CHUNK) == 1);
	CU_ASSERT(drops(WIRE_REASON_JOB_MISMATCH) == 1);
	CU_ASSERT(drops(WIRE_REASON_BAD_SENDER) == 2);
	CU_ASSERT(collect(o, 16) == 0);
	/* Every frame dropped so far is under exactly one reason: 8 header cases, 5 lower
	 * layers, 8 table-level, 6 not for us. */
	uint64_t total = 0;

	for (int r = 1; r < WIRE_REASON_COUNT_MAX; r++)
		total += drops((enum wire_reason)r);
	CU_ASSERT(total == 8 + 5 + 8 + 6);
	CU_ASSERT(ctr(DP_CTR_BAD_FRAME) == 5 && ctr(DP_CTR_BAD_HEADER) == 8);
	/* stats (docs/CONTROL.md): every counter, zeros included; drops only where not 0. */
	{
		json_t *st = dp_stats_json(&dp);
		json_t *lj = json_array_get(json_object_get(st, "lcores"), 0);
		json_t *dj = json_object_get(lj, "drops");
		size_t nz = 0;

		for (int r = 1; r < WIRE_REASON_COUNT_MAX; r++) {
			json_t *v = json_object_get(dj, wire_reason_str((enum wire_reason)r));

			nz += drops((enum wire_reason)r) != 0;
			CU_ASSERT(drops((enum wire_reason)r) != 0
					  ? json_integer_value(v) == (json_int_t)drops((enum wire_reason)r)
					  : v == NULL);
		}
		CU_ASSERT(json_object_size(dj) == nz);
		CU_ASSERT(json_integer_value(json_object_get(lj, "dropped")) == (json_int_t)total);
		CU_ASSERT(json_integer_value(json_object_get(lj, "not_for_us")) == 6);
		CU_ASSERT(json_is_integer(json_object_get(lj, "no_mbuf")) &&
			  json_integer_value(json_object_get(lj, "no_mbuf")) == 0);
		CU_ASSERT(json_integer_value(json_object_get(st, "probe_replies_unsolicited")) == 1);
		json_decref(st);
	}
	/* Random garbage: never a crash, never a result. */
	uint64_t rng = fuzz_env_ulong("GEOREDUCE_FUZZ_SEED", 7);
	unsigned long iters = fuzz_env_ulong("GEOREDUCE_FUZZ_ITERS",
					     getenv("GEOREDUCE_TEST_QUICK") ? 2000 : 20000);

	for (unsigned long i = 0; i < iters; i++) {
		m = contrib_f32(11, 3, 0, (uint16_t)(12 + i % 2), 1, 0, el, ce);
		uint8_t *f = rte_pktmbuf_mtod(m, uint8_t *);
		size_t len = rte_pktmbuf_data_len(m);
		int flips = 1 + (int)(rng_next(&rng) % 4);

		for (int b = 0; b < flips; b++)
			f[14 + rng_next(&rng) % (len - 14)] ^= (uint8_t)(1u << (rng_next(&rng) % 8));
		if (rng_next(&rng) % 4 == 0)
			rte_pktmbuf_trim(m, (uint16_t)(rng_next(&rng) % (len - 1)));
		inject(m);
		if ((i & 127) == 127)
			poll_all();
	}
	poll_all();
	/* A mutation may leave a valid packet (another round, a flipped payload bit), which
	 * legitimately opens or fills a slot. What must hold: the next epoch sums exactly, and
	 * once the job is gone every test mbuf is back in its pool (no slot leaked one). */
	collect(o, 16);
	CU_ASSERT(install(mk_table(11, 4, 1, TABLE_DTYPE_FP32, el, ce, 3, W3, 1, &td),
			  "install") == 0);
	for (int w = 0; w < 3; w++)
		inject(contrib_f32(11, 4, 0, W3[w], 2, 0, el, ce));
	poll_all();
	int n = collect(o, 16), bad = 0;

	CU_ASSERT(n == 3);
	for (int i = 0; i < n && i < 16; i++)
		for (uint32_t e = 0; e < 64; e++)
			bad += out_f32(&o[i], e) != val(11, e) + val(12, e) + val(13, e);
	CU_ASSERT(bad == 0);
	CU_ASSERT(call_errno("{\"version\":1,\"id\":1,\"op\":\"remove\",\"job\":11}") == 0);
	rte_delay_us_sleep(1000 * (dp.prm.drain_ms + 10));
	dp_housekeeping(&dp);
	CU_ASSERT(atomic_load(&dp.state)->n_jobs == 0);
	CU_ASSERT(rte_mempool_in_use_count(tpool) == 0);
	/* Every header and indirect mbuf of the copies sent is back: what the pools miss
	 * is what the lcore's stashes hold. */
	const struct dp_lcore *lc = dp.lcores[0];

	CU_ASSERT(rte_mempool_in_use_count(lc->hdr_pool) ==
		  lc->hdr_stash.tail - lc->hdr_stash.head);
	CU_ASSERT(rte_mempool_in_use_count(lc->clone_pool) ==
		  lc->clone_stash.tail - lc->clone_stash.head);
	CU_ASSERT(lc->hdr_stash.tail - lc->hdr_stash.head <= DP_STASH_SIZE);
	dp_down();
}

/* An ARP request (broadcast) or reply (to the gateway) from 10.0.0.n, MAC 02:00:00:00:00:n,
 * about the address tip. */
static struct rte_mbuf *
mk_arp(uint16_t op, uint8_t n, uint32_t tip)
{
	struct rte_mbuf *m = rte_pktmbuf_alloc(tpool);
	struct rte_ether_hdr *eth =
		(struct rte_ether_hdr *)must_append(m, sizeof(*eth) + sizeof(struct rte_arp_hdr));
	struct rte_arp_hdr *arp = (struct rte_arp_hdr *)(eth + 1);

	if (op == RTE_ARP_OP_REQUEST)
		memset(eth->dst_addr.addr_bytes, 0xff, 6);
	else
		eth->dst_addr = gw_mac;
	memset(&eth->src_addr, 0, 6);
	eth->src_addr.addr_bytes[0] = 2;
	eth->src_addr.addr_bytes[5] = n;
	eth->ether_type = rte_cpu_to_be_16(RTE_ETHER_TYPE_ARP);
	arp->arp_hardware = rte_cpu_to_be_16(RTE_ARP_HRD_ETHER);
	arp->arp_protocol = rte_cpu_to_be_16(RTE_ETHER_TYPE_IPV4);
	arp->arp_hlen = 6;
	arp->arp_plen = 4;
	arp->arp_opcode = rte_cpu_to_be_16(op);
	arp->arp_data.arp_sha = eth->src_addr;
	arp->arp_data.arp_sip = rte_cpu_to_be_32(PEER_IP(n));
	if (op == RTE_ARP_OP_REQUEST)
		memset(&arp->arp_data.arp_tha, 0, 6);
	else
		arp->arp_data.arp_tha = gw_mac;
	arp->arp_data.arp_tip = rte_cpu_to_be_32(tip);
	return m;
}

/* ARP requests for our address are answered; ICMP echo too; ARP learning resolves a
 * neighbour that has no static entry, and the control thread's ARP request goes out. */
static void
test_arp_icmp(void)
{
	static struct out o[16];

	CU_ASSERT_FATAL(dp_up(rte_get_main_lcore()) == 0);
	/* ARP request from 10.0.0.60 (02:..:3c) for 10.0.0.1, and one for 10.0.0.77. */
	inject(mk_arp(RTE_ARP_OP_REQUEST, 60, GW_IP));
	inject(mk_arp(RTE_ARP_OP_REQUEST, 60, PEER_IP(77)));
	poll_all();
	CU_ASSERT(collect(o, 16) == 1);
	{
		const struct rte_ether_hdr *eth = (const struct rte_ether_hdr *)o[0].frame;
		const struct rte_arp_hdr *arp = (const struct rte_arp_hdr *)(eth + 1);

		CU_ASSERT(arp->arp_opcode == rte_cpu_to_be_16(RTE_ARP_OP_REPLY));
		CU_ASSERT(rte_is_same_ether_addr(&arp->arp_data.arp_sha, &gw_mac));
		CU_ASSERT(arp->arp_data.arp_sip == rte_cpu_to_be_32(GW_IP));
		CU_ASSERT(arp->arp_data.arp_tip == rte_cpu_to_be_32(PEER_IP(60)));
		CU_ASSERT(eth->dst_addr.addr_bytes[5] == 60);
	}
	CU_ASSERT(ctr(DP_CTR_ARP_REPLIES) == 1);
	CU_ASSERT(drops(WIRE_REASON_ARP_UNANSWERED) == 1); /* the one for 10.0.0.77 */
	/* ICMP echo request from 10.0.0.5. */
	inject(mk_icmp(RTE_IP_ICMP_ECHO_REQUEST));
	poll_all();
	CU_ASSERT(collect(o, 16) == 1);
	{
		const struct rte_ipv4_hdr *ip = (const struct rte_ipv4_hdr *)(o[0].frame + 14);
		const struct rte_icmp_hdr *ic = (const struct rte_icmp_hdr *)(ip + 1);

		CU_ASSERT(ip->dst_addr == rte_cpu_to_be_32(PEER_IP(5)));
		CU_ASSERT(ic->icmp_type == RTE_IP_ICMP_ECHO_REPLY);
		CU_ASSERT(rte_raw_cksum(ic, 40) == 0xffff);
		CU_ASSERT(rte_ipv4_cksum(ip) == 0);
	}
	/* A neighbour with no static entry: the control thread asks for it by ARP. */
	int nh = dp_neigh_get(&dp, PEER_IP(61), 0);

	CU_ASSERT(nh >= 0);
	dp_housekeeping(&dp);
	poll_all(); /* the lcore owning queue 0 sends the control thread's request */
	dp_worker_poll(dp.lcores[0]);
	CU_ASSERT(collect(o, 16) == 1);
	{
		const struct rte_ether_hdr *eth = (const struct rte_ether_hdr *)o[0].frame;
		const struct rte_arp_hdr *arp = (const struct rte_arp_hdr *)(eth + 1);

		CU_ASSERT(eth->ether_type == rte_cpu_to_be_16(RTE_ETHER_TYPE_ARP));
		CU_ASSERT(arp->arp_opcode == rte_cpu_to_be_16(RTE_ARP_OP_REQUEST));
		CU_ASSERT(arp->arp_data.arp_tip == rte_cpu_to_be_32(PEER_IP(61)));
	}
	/* ... and learns the answer. */
	inject(mk_arp(RTE_ARP_OP_REPLY, 61, GW_IP));
	poll_all();
	dp_housekeeping(&dp);
	uint64_t v = atomic_load(&dp.neigh[nh].mac);

	CU_ASSERT(v == (DP_NEIGH_VALID | 0x02000000003dull));
	collect(o, 16);
	dp_down();
}

/* Frame m as if a bridge had rewritten its source MAC (to 02:00:00:00:00:ee): from its
 * sender's address, as the sender rules want, but its MAC says nothing about where the
 * sender is. */
static struct rte_mbuf *
from_other_mac(struct rte_mbuf *m)
{
	rte_pktmbuf_mtod(m, struct rte_ether_hdr *)->src_addr.addr_bytes[5] = 0xee;
	return m;
}

/*
 * A worker that has ARPed for the gateway, or sent it a packet, is a known neighbour by the
 * time its first RESULT leaves, with no turn of the control thread in between. Worker 61
 * ARPed before the table existed, 62 ARPs after the install (both send their CONTRIB
 * with another source MAC, so that only the ARP tells where they are); 63 does not ARP (its
 * kernel knew the gateway's MAC already) and sends its CONTRIB itself. None of them has a
 * static entry.
 */
static void
test_neighbours_known(void)
{
	static const uint16_t ws[] = { 11, 61, 62, 63 };
	struct tdesc td = { 0, 0, 0, { 0 }, 0, 1, 16, { 0 } };
	static struct out o[16];

	CU_ASSERT_FATAL(dp_up(rte_get_main_lcore()) == 0);
	inject(mk_arp(RTE_ARP_OP_REQUEST, 61, GW_IP));
	poll_all();
	dp_housekeeping(&dp); /* the sighting reaches the control thread: no table uses it */
	CU_ASSERT(collect(o, 16) == 1); /* the ARP reply */
	CU_ASSERT_FATAL(install(mk_table(9, 1, 1, TABLE_DTYPE_FP32, 64, 64, 4, ws, 1, &td),
				"install") == 0);
	inject(mk_arp(RTE_ARP_OP_REQUEST, 62, GW_IP));
	for (int w = 0; w < 4; w++) {
		struct rte_mbuf *x = contrib_f32(9, 1, 0, ws[w], 1, 0, 64, 64);

		inject(ws[w] == 61 || ws[w] == 62 ? from_other_mac(x) : x);
	}
	poll_all();
	int n = collect(o, 16), results = 0;

	for (int k = 0; k < n; k++) {
		if (o[k].p.type != WIRE_TYPE_RESULT)
			continue;
		results++;
		CU_ASSERT(o[k].fl.dst_mac[0] == 2 && o[k].fl.dst_mac[5] == (uint8_t)o[k].fl.dst_ip);
	}
	CU_ASSERT(n == 5 && results == 4); /* the ARP reply to 62 and four results */
	CU_ASSERT(ctr(DP_CTR_NO_NEIGHBOUR) == 0);
	dp_down();
}

/* Retransmitted contributions are answered: ACK while the chunk is open (and for a copy
 * it already holds), the retained RESULT once it is done, also to a late straggler. */
static void
test_retx_answers(void)
{
	const uint64_t el = 64;
	const uint32_t ce = 64;
	struct tdesc td = { 0, 0, 0, { 0 }, 0, 1, 16, { 0 } };
	static struct out o[16];
	struct rte_mbuf *m;

	CU_ASSERT_FATAL(dp_up(rte_get_main_lcore()) == 0);
	CU_ASSERT_FATAL(install(mk_table(13, 1, 1, TABLE_DTYPE_FP32, el, ce, 3, W3, 1, &td),
				"install") == 0);
	/* Worker 11 sends with RETX (tsval 777): held, ACK echoing 777. */
	m = contrib_f32(13, 1, 0, 11, 4, 0, el, ce);
	{
		struct wire_hdr *h = rte_pktmbuf_mtod_offset(m, struct wire_hdr *, WIRE_FRAME_HDR_OFF);

		h->flags = WIRE_F_RETX;
		h->tsval = rte_cpu_to_be_32(777);
		struct rte_udp_hdr *u = rte_pktmbuf_mtod_offset(m, struct rte_udp_hdr *, 34);

		u->dgram_cksum = 0;
	}
	inject(m);
	poll_all();
	CU_ASSERT_FATAL(collect(o, 16) == 1);
	CU_ASSERT(o[0].p.type == WIRE_TYPE_ACK && o[0].p.tsecr == 777 && o[0].p.origin == 11 &&
		  o[0].p.chunk == 0 && o[0].p.round == 4 && o[0].fl.dst_ip == PEER_IP(11) &&
		  o[0].fl.dst_port == WORKER_PORT && (o[0].p.flags & WIRE_F_ECHO));
	/* The same again: a duplicate, still answered with an ACK. */
	m = contrib_f32(13, 1, 0, 11, 4, 0, el, ce);
	rte_pktmbuf_mtod_offset(m, struct wire_hdr *, WIRE_FRAME_HDR_OFF)->flags = WIRE_F_RETX;
	rte_pktmbuf_mtod_offset(m, struct rte_udp_hdr *, 34)->dgram_cksum = 0;
	inject(m);
	poll_all();
	CU_ASSERT(collect(o, 16) == 1 && o[0].p.type == WIRE_TYPE_ACK);
	CU_ASSERT(drops(WIRE_REASON_DUPLICATE) == 1);
	CU_ASSERT(ctr(DP_CTR_ACKS_SENT) == 2);
	/* Workers 12 and 13 complete the chunk, 13 with a RETX: the RESULT's ordinary copies
	 * answer it (to every worker), no ACK, no copy of its own; the copy to 13 echoes its
	 * RETX (ECHO, tsecr its tsval: that RESULT answers it), the others flags 0, no echo. */
	inject(contrib_f32(13, 1, 0, 12, 4, 0, el, ce));
	m = contrib_f32(13, 1, 0, 13, 4, 0, el, ce);
	rte_pktmbuf_mtod_offset(m, struct wire_hdr *, WIRE_FRAME_HDR_OFF)->flags = WIRE_F_RETX;
	rte_pktmbuf_mtod_offset(m, struct wire_hdr *, WIRE_FRAME_HDR_OFF)->tsval =
		rte_cpu_to_be_32(777);
	rte_pktmbuf_mtod_offset(m, struct rte_udp_hdr *, 34)->dgram_cksum = 0;
	inject(m);
	poll_all();
	CU_ASSERT_FATAL(collect(o, 16) == 3);
	for (int k = 0; k < 3; k++) {
		bool echo = W3[k] == 13;

		CU_ASSERT(o[k].p.type == WIRE_TYPE_RESULT && o[k].fl.dst_ip == PEER_IP(W3[k]));
		CU_ASSERT(o[k].p.flags == (echo ? WIRE_F_ECHO : 0) &&
			  o[k].p.tsecr == (echo ? 777u : 0u));
	}
	CU_ASSERT(ctr(DP_CTR_ACKS_SENT) == 2);
	/* Done: a RETX from 12 gets the retained RESULT (RETX|ECHO) to 12 alone. */
	m = contrib_f32(13, 1, 0, 12, 4, 0, el, ce);
	rte_pktmbuf_mtod_offset(m, struct wire_hdr *, WIRE_FRAME_HDR_OFF)->flags = WIRE_F_RETX;
	rte_pktmbuf_mtod_offset(m, struct rte_udp_hdr *, 34)->dgram_cksum = 0;
	inject(m);
	poll_all();
	int n = collect(o, 16);

	CU_ASSERT_FATAL(n == 1);
	CU_ASSERT(o[0].p.type == WIRE_TYPE_RESULT && o[0].fl.dst_ip == PEER_IP(12) &&
		  o[0].p.flags == (WIRE_F_RETX | WIRE_F_ECHO) && o[0].p.contrib == 3);
	for (uint32_t e = 0; e < 64; e++)
		CU_ASSERT(out_f32(&o[0], e) == val(11, e) + val(12, e) + val(13, e));
	dp_down();
}

/* The NACK_RESULT of worker w for chunks [first, first + count) of round r. */
static struct rte_mbuf *
nack_result(uint32_t job, uint16_t w, uint32_t r, uint32_t first, uint16_t count)
{
	struct pkt nk = { WIRE_TYPE_NACK_RESULT, 0, job, 1, 0, w, w, 0, r, first,
			  WIRE_DTYPE_NONE, count, PEER_IP(w) };

	return mk_pkt(&nk, NULL);
}

/* m with a payload no worker sent (its first element 1e6; UDP checksum cleared). */
static struct rte_mbuf *
poisoned(struct rte_mbuf *m)
{
	float v = 1e6f;

	memcpy(rte_pktmbuf_mtod_offset(m, uint8_t *, WIRE_FRAME_PAYLOAD_OFF), &v, sizeof(v));
	rte_pktmbuf_mtod_offset(m, struct rte_udp_hdr *, 34)->dgram_cksum = 0;
	return m;
}

/* One round of workers W3 on every chunk; true if each RESULT is exact and came once per
 * worker and chunk. */
static bool
round_exact(uint32_t job, uint32_t r, uint64_t el, uint32_t ce, uint32_t nch)
{
	static struct out o[64];
	int bad = 0;

	for (int w = 0; w < 3; w++)
		for (uint32_t c = 0; c < nch; c++)
			inject(contrib_f32(job, 1, 0, W3[w], r, c, el, ce));
	poll_all();
	int n = collect(o, 64);

	for (int k = 0; k < n && k < 64; k++) {
		bad += o[k].p.type != WIRE_TYPE_RESULT || o[k].p.round != r || o[k].p.contrib != 3;
		for (uint32_t i = 0; i < o[k].p.count; i++) {
			uint64_t e = (uint64_t)o[k].p.chunk * ce + i;

			bad += out_f32(&o[k], i) != val(11, e) + val(12, e) + val(13, e);
		}
	}
	return n == 3 * (int)nch && bad == 0;
}

/*
 * Hostile senders (docs/PROTOCOL.md sections 7.2 and 7.6): contributions under a worker's
 * id from another address or port, or to another port of the range, are dropped and sum
 * nothing; NACK_RESULTs past the tree, longer than the cap, from other addresses or past
 * the sender's budget get nothing. Every round after a barrage is still exact.
 */
static void
test_hostile_senders(void)
{
	const uint64_t el = 4 * 64;
	const uint32_t ce = 64, nch = 4;
	struct tdesc td = { 0, 0, 0, { 0 }, 0, nch, 16, { 0 } };
	static struct out o[512];

	CU_ASSERT_FATAL(dp_up(rte_get_main_lcore()) == 0);
	CU_ASSERT_FATAL(install(mk_table(16, 1, 1, TABLE_DTYPE_FP32, el, ce, 3, W3, 1, &td),
				"install") == 0);
	/* Worker 11's id from 10.213.0.66:5000 and from its address with port 5999; worker
	 * 12's from its own address and port, to the port of the next chunk. */
	spoof = (typeof(spoof)){ true, 0x0ad50042, WORKER_PORT, 0 };
	for (uint32_t c = 0; c < nch; c++)
		inject(poisoned(contrib_f32(16, 1, 0, 11, 1, c, el, ce)));
	spoof.ip = PEER_IP(11);
	spoof.sport = 5999;
	for (uint32_t c = 0; c < nch; c++)
		inject(poisoned(contrib_f32(16, 1, 0, 11, 1, c, el, ce)));
	spoof.ip = PEER_IP(12);
	spoof.sport = WORKER_PORT;
	for (uint32_t c = 0; c < nch; c++) {
		spoof.dport = wire_udp_port(WIRE_PORT_BASE_DEFAULT, WIRE_PORT_COUNT_DEFAULT, c + 1);
		inject(poisoned(contrib_f32(16, 1, 0, 12, 1, c, el, ce)));
	}
	spoof.on = false;
	poll_all();
	CU_ASSERT(collect(o, 512) == 0);
	CU_ASSERT(drops(WIRE_REASON_BAD_SENDER) == 2 * nch);
	CU_ASSERT(drops(WIRE_REASON_BAD_PORT) == nch);
	CU_ASSERT(ctr(DP_CTR_CONTRIBS) == 0);
	/* The real workers are summed, not taken for duplicates. */
	CU_ASSERT(round_exact(16, 1, el, ce, nch));
	CU_ASSERT(drops(WIRE_REASON_DUPLICATE) == 0);

	/* A NACK_RESULT running past the tree's 4 chunks: bad_chunk, no answer. */
	inject(nack_result(16, 11, 1, 2, 3));
	poll_all();
	CU_ASSERT(collect(o, 512) == 0);
	CU_ASSERT(drops(WIRE_REASON_BAD_CHUNK) == 1);
	/* A range longer than WIRE_NACK_RANGE_MAX (the tree made long enough is not needed:
	 * the header rule comes first): bad_count. */
	struct rte_mbuf *m = nack_result(16, 11, 1, 0, WIRE_NACK_RANGE_MAX);
	struct wire_hdr *h = rte_pktmbuf_mtod_offset(m, struct wire_hdr *, WIRE_FRAME_HDR_OFF);

	h->count = rte_cpu_to_be_16(WIRE_NACK_RANGE_MAX + 1); /* odd sender: no UDP checksum */
	inject(m);
	poll_all();
	CU_ASSERT(collect(o, 512) == 0);
	CU_ASSERT(drops(WIRE_REASON_COUNT) == 1);

	/* A flood of NACK_RESULTs naming worker 12 from 200 other addresses: nothing sent. */
	spoof = (typeof(spoof)){ true, 0, WORKER_PORT, 0 };
	for (uint32_t k = 0; k < 200; k++) {
		spoof.ip = 0x0a010000u | k;
		inject(nack_result(16, 12, 1, 0, nch));
	}
	spoof.on = false;
	poll_all();
	CU_ASSERT(collect(o, 512) == 0);
	CU_ASSERT(drops(WIRE_REASON_BAD_SENDER) == 2 * nch + 200);

	/* Worker 13 asks again and again from its own address: answered while its budget
	 * lasts (the bytes it contributed, and time), then counted. */
	uint64_t t0 = rte_rdtsc();
	int answered = 0, elsewhere = 0;

	for (int k = 0; k < 100; k++) {
		inject(nack_result(16, 13, 1, 0, nch));
		if (k % 16 == 15 || k == 99) {
			poll_all();
			int n = collect(o, 512);

			for (int i = 0; i < n; i++)
				elsewhere += o[i].fl.dst_ip != PEER_IP(13) ||
					     o[i].fl.dst_port != WORKER_PORT;
			answered += n;
		}
	}
	double secs = (double)(rte_rdtsc() - t0) / (double)rte_get_tsc_hz() + 0.01;
	uint32_t frame = WIRE_FRAME_PAYLOAD_OFF + 4 * ce;
	/* Install to now refills at most the cap; the 4 contributions add 4 frames. */
	double bound = DP_BUDGET_CAP + nch + secs * DP_BUDGET_REFILL_BPS / frame;

	CU_ASSERT(answered >= (int)nch);
	CU_ASSERT(answered <= bound);
	CU_ASSERT(answered < 100 * (int)nch);
	CU_ASSERT(ctr(DP_CTR_ANSWER_BUDGET) > 0);
	CU_ASSERT(elsewhere == 0);

	/* After every barrage the next round is exact. */
	CU_ASSERT(round_exact(16, 2, el, ce, nch));
	dp_down();
}

/* --- Protected links: sealed frames built and opened with OpenSSL, independently of the
 * dataplane's cryptodev (docs/PROTOCOL.md section 14). */

#define SEAL_HDR 32
#define SEAL_TAG 16

static const uint8_t key1[16] = { 0x10, 0x21, 0x32, 0x43, 0x54, 0x65, 0x76, 0x87,
				  0x98, 0xa9, 0xba, 0xcb, 0xdc, 0xed, 0xfe, 0x0f };
static const uint8_t key2[32] = { 0x5a, 0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07,
				  0x08, 0x09, 0x0a, 0x0b, 0x0c, 0x0d, 0x0e, 0x0f,
				  0x10, 0x11, 0x12, 0x13, 0x14, 0x15, 0x16, 0x17,
				  0x18, 0x19, 0x1a, 0x1b, 0x1c, 0x1d, 0x1e, 0x1f };

/* AES-GCM of len bytes at in into out with a 12-byte iv and 32 bytes of aad; enc: seal
 * (tag written), else open (tag checked). True on success. */
static bool
gcm(bool enc, const uint8_t *key, size_t klen, const uint8_t *iv, const uint8_t *aad,
    const uint8_t *in, int len, uint8_t *out, uint8_t *tag)
{
	EVP_CIPHER_CTX *c = EVP_CIPHER_CTX_new();
	const EVP_CIPHER *ci = klen == 16 ? EVP_aes_128_gcm() : EVP_aes_256_gcm();
	int n = 0, ok;

	ok = EVP_CipherInit_ex(c, ci, NULL, NULL, NULL, enc) == 1 &&
	     EVP_CIPHER_CTX_ctrl(c, EVP_CTRL_GCM_SET_IVLEN, 12, NULL) == 1 &&
	     EVP_CipherInit_ex(c, NULL, NULL, key, iv, enc) == 1 &&
	     EVP_CipherUpdate(c, NULL, &n, aad, SEAL_HDR) == 1 &&
	     EVP_CipherUpdate(c, out, &n, in, len) == 1 &&
	     (enc || EVP_CIPHER_CTX_ctrl(c, EVP_CTRL_GCM_SET_TAG, SEAL_TAG, tag) == 1) &&
	     EVP_CipherFinal_ex(c, out + n, &n) == 1 &&
	     (!enc || EVP_CIPHER_CTX_ctrl(c, EVP_CTRL_GCM_GET_TAG, SEAL_TAG, tag) == 1);
	EVP_CIPHER_CTX_free(c);
	return ok;
}

/* The plain frame m sealed as gateway `sender` would on its lane with sequence seq (the
 * seal header byte for byte as PROTOCOL.md section 14 gives it). Consumes m. */
static struct rte_mbuf *
seal_frame(struct rte_mbuf *m, uint32_t job, const uint8_t *key, size_t klen, uint32_t key_id,
	   uint16_t sender, uint16_t lane, uint64_t seq)
{
	uint32_t len = rte_pktmbuf_pkt_len(m) - WIRE_FRAME_HDR_OFF;
	struct rte_mbuf *s = rte_pktmbuf_alloc(tpool);
	uint8_t *f = must_append(s, WIRE_FRAME_HDR_OFF + SEAL_HDR + len + SEAL_TAG);
	const uint8_t *in = rte_pktmbuf_mtod(m, const uint8_t *);
	uint8_t *sh = f + WIRE_FRAME_HDR_OFF;

	memcpy(f, in, WIRE_FRAME_HDR_OFF);
	memset(sh, 0, SEAL_HDR);
	sh[0] = 0x47;
	sh[1] = 0x53;
	sh[2] = 1;
	sh[3] = klen == 16 ? 1 : 2;
	for (int i = 0; i < 4; i++) {
		sh[4 + i] = (uint8_t)(job >> (24 - 8 * i));
		sh[8 + i] = (uint8_t)(key_id >> (24 - 8 * i));
	}
	sh[12] = (uint8_t)(sender >> 8);
	sh[13] = (uint8_t)sender;
	sh[14] = (uint8_t)(lane >> 8);
	sh[15] = (uint8_t)lane;
	for (int i = 0; i < 8; i++)
		sh[16 + i] = (uint8_t)(seq >> (56 - 8 * i));
	CU_ASSERT_FATAL(gcm(true, key, klen, sh + 12, sh, in + WIRE_FRAME_HDR_OFF, (int)len,
			    sh + SEAL_HDR, sh + SEAL_HDR + len));
	rte_pktmbuf_free(m);
	struct rte_ipv4_hdr *ip = (struct rte_ipv4_hdr *)(f + WIRE_ETH_LEN);
	struct rte_udp_hdr *udp = (struct rte_udp_hdr *)(ip + 1);

	ip->total_length = rte_cpu_to_be_16((uint16_t)(28 + SEAL_HDR + len + SEAL_TAG));
	ip->hdr_checksum = 0;
	ip->hdr_checksum = rte_ipv4_cksum(ip);
	udp->dgram_len = rte_cpu_to_be_16((uint16_t)(8 + SEAL_HDR + len + SEAL_TAG));
	udp->dgram_cksum = 0;
	return s;
}

/* Open a sealed frame the dataplane sent (o->frame): decrypt it in place into a plain frame
 * and decode it into o->p. True if it was sealed with key (key_id) by sender 1. */
static bool
open_out(struct out *o, const uint8_t *key, size_t klen, uint32_t key_id)
{
	uint8_t *sh = o->frame + WIRE_FRAME_HDR_OFF, pt[WIRE_MTU_MAX];
	size_t len = o->len - WIRE_FRAME_HDR_OFF - SEAL_HDR - SEAL_TAG, off, plen;

	if (o->len < WIRE_FRAME_HDR_OFF + SEAL_HDR + SEAL_TAG || sh[0] != 0x47 || sh[1] != 0x53 ||
	    sh[2] != 1 || sh[3] != (klen == 16 ? 1 : 2) ||
	    (uint32_t)(sh[8] << 24 | sh[9] << 16 | sh[10] << 8 | sh[11]) != key_id ||
	    sh[12] != 0 || sh[13] != 1)
		return false;
	if (!gcm(false, key, klen, sh + 12, sh, sh + SEAL_HDR, (int)len, pt, sh + SEAL_HDR + len))
		return false;
	memcpy(sh, pt, len);
	o->len = WIRE_FRAME_HDR_OFF + len;
	struct rte_ipv4_hdr *ip = (struct rte_ipv4_hdr *)(o->frame + WIRE_ETH_LEN);
	struct rte_udp_hdr *udp = (struct rte_udp_hdr *)(ip + 1);

	ip->total_length = rte_cpu_to_be_16((uint16_t)(28 + len));
	ip->hdr_checksum = 0;
	ip->hdr_checksum = rte_ipv4_cksum(ip);
	udp->dgram_len = rte_cpu_to_be_16((uint16_t)(8 + len));
	udp->dgram_cksum = 0;
	return wire_frame_parse(o->frame, o->len, &o->fl, &off, &plen, NULL) == 0 &&
	       wire_hdr_decode(o->frame + off, plen, &o->p, NULL) == 0;
}

/* Child gateway 3's partial sum of chunk c (its two workers below: contrib 2; values
 * val(3, e)), plain. */
static struct rte_mbuf *
child_sum(uint32_t job, uint32_t epoch, uint32_t round, uint32_t c, uint64_t el, uint32_t ce)
{
	float pl[64];
	uint16_t n = chunk_len(el, ce, c);
	struct pkt p = { WIRE_TYPE_CONTRIB, 0, job, epoch, 0, 3, 3, 2, round, c,
			 WIRE_DTYPE_FP32, n, PEER_IP(3) };

	for (uint16_t i = 0; i < n; i++)
		pl[i] = val(3, (uint64_t)c * ce + i);
	return mk_pkt(&p, pl);
}

/* A root with workers 11, 12 and child gateway 3 over a protected link: key key (key_id)
 * for epoch `epoch`. */
static int
install_sealed(uint32_t epoch, const uint8_t *key, size_t klen, uint32_t key_id, uint64_t el,
	       uint32_t ce, uint32_t nch)
{
	static const uint16_t w[] = { 11, 12 };
	struct tdesc td = { 0, 0, 1, { 3 }, 0, nch, 16, { 2 } };
	struct table *tb = mk_table(60, epoch, 1, TABLE_DTYPE_FP32, el, ce, 2, w, 1, &td);

	tb->n_seals = 1;
	tb->seals[0] = (struct table_seal){ .peer = 3, .key_id = key_id,
					    .aead = klen == 16 ? TABLE_AEAD_AES128_GCM
							       : TABLE_AEAD_AES256_GCM };
	memcpy(tb->seals[0].key, key, klen);
	return install(tb, "install");
}

/* Round r of epoch `epoch`: workers 11, 12 plain, child 3 sealed (key, key_id, from seq);
 * true if every RESULT is exact: plain to the workers, sealed to the child. */
static bool
sealed_round_exact(uint32_t epoch, uint32_t r, const uint8_t *key, size_t klen,
		   uint32_t key_id, uint64_t *seq, uint64_t el, uint32_t ce, uint32_t nch)
{
	static struct out o[64];
	int bad = 0, sealed = 0;

	for (uint32_t c = 0; c < nch; c++) {
		inject(contrib_f32(60, epoch, 0, 11, r, c, el, ce));
		inject(contrib_f32(60, epoch, 0, 12, r, c, el, ce));
		inject(seal_frame(child_sum(60, epoch, r, c, el, ce), 60, key, klen, key_id, 3, 0,
				  ++*seq));
	}
	poll_all();
	int n = collect(o, 64);

	for (int k = 0; k < n && k < 64; k++) {
		if (o[k].fl.dst_ip == PEER_IP(3)) {
			bad += !open_out(&o[k], key, klen, key_id);
			sealed++;
		}
		bad += o[k].p.type != WIRE_TYPE_RESULT || o[k].p.round != r ||
		       o[k].p.contrib != 4;
		for (uint32_t i = 0; i < o[k].p.count; i++) {
			uint64_t e = (uint64_t)o[k].p.chunk * ce + i;

			bad += out_f32(&o[k], i) != val(11, e) + val(12, e) + val(3, e);
		}
	}
	return n == 3 * (int)nch && sealed == (int)nch && bad == 0;
}

/* A frame sealed by child 3 for chunk 0 of round r with byte `at` (from the UDP payload)
 * XORed with x. */
static struct rte_mbuf *
sealed_flipped(uint32_t epoch, uint32_t r, uint64_t seq, size_t at, uint8_t x, uint64_t el,
	       uint32_t ce)
{
	struct rte_mbuf *m = seal_frame(child_sum(60, epoch, r, 0, el, ce), 60, key1, 16, 1, 3, 0,
					seq);

	rte_pktmbuf_mtod(m, uint8_t *)[WIRE_FRAME_HDR_OFF + at] ^= x;
	return m;
}

/*
 * A protected link to child gateway 3: forged, altered, replayed, unknown-key and plain
 * frames from it are dropped by reason before any slot sees them, and every round stays
 * exact; after a key rotation (epoch 2, a new key) a frame under the old key is unknown.
 */
static void
test_protected_link(void)
{
	const uint64_t el = 4 * 64;
	const uint32_t ce = 64, nch = 4;
	uint64_t seq = 0;
	static struct out o[64];

	crypto_dev = "crypto_aesni_gcm0";
	CU_ASSERT_FATAL(dp_up(rte_get_main_lcore()) == 0);
	crypto_dev = "";
	CU_ASSERT(dp.crypto.on);
	CU_ASSERT_FATAL(install_sealed(1, key1, 16, 1, el, ce, nch) == 0);
	/* Forged tag; a bit flipped in the seal header (the AAD: its sequence number), in
	 * the encrypted georeduce header and in the encrypted payload; an unknown key id; the
	 * child's partial sum unsealed. Nothing may reach the slot. */
	struct rte_mbuf *forged = sealed_flipped(1, 1, 1000, 0, 0, el, ce);
	size_t tag_at = rte_pktmbuf_pkt_len(forged) - WIRE_FRAME_HDR_OFF - 1;

	rte_pktmbuf_mtod(forged, uint8_t *)[WIRE_FRAME_HDR_OFF + tag_at] ^= 0x01;
	inject(forged);
	inject(sealed_flipped(1, 1, 1001, 23, 0x04, el, ce));          /* seq, in the AAD */
	inject(sealed_flipped(1, 1, 1002, SEAL_HDR + 22, 0x01, el, ce)); /* contrib */
	inject(sealed_flipped(1, 1, 1003, SEAL_HDR + 96 + 8, 0x80, el, ce)); /* a float */
	inject(seal_frame(child_sum(60, 1, 1, 0, el, ce), 60, key1, 16, 77, 3, 0, 1004));
	inject(seal_frame(child_sum(60, 1, 1, 0, el, ce), 60, key2, 32, 1, 3, 0, 1005));
	inject(child_sum(60, 1, 1, 0, el, ce));
	poll_all();
	CU_ASSERT(collect(o, 64) == 0);
	CU_ASSERT(drops(WIRE_REASON_BAD_TAG) == 4);
	CU_ASSERT(drops(WIRE_REASON_UNKNOWN_KEY) == 2); /* key id 77; AES-256 under id 1 */
	CU_ASSERT(drops(WIRE_REASON_BAD_SENDER) == 1);
	CU_ASSERT(ctr(DP_CTR_CONTRIBS) == 0);
	CU_ASSERT(sealed_round_exact(1, 1, key1, 16, 1, &seq, el, ce, nch));
	CU_ASSERT(ctr(DP_CTR_OPENED) == nch && ctr(DP_CTR_SEALED) == nch);

	/* Replayed: a frame seen, and one older than the window. The next round is exact. */
	inject(seal_frame(child_sum(60, 1, 1, 0, el, ce), 60, key1, 16, 1, 3, 0, seq));
	inject(seal_frame(child_sum(60, 1, 1, 0, el, ce), 60, key1, 16, 1, 3, 0, 0));
	poll_all();
	CU_ASSERT(collect(o, 64) == 0);
	CU_ASSERT(drops(WIRE_REASON_REPLAY) == 1);
	CU_ASSERT(drops(WIRE_REASON_BAD_SEAL) == 1); /* sequence 0 */
	seq += DP_REPLAY_WINDOW + 8;
	CU_ASSERT(sealed_round_exact(1, 2, key1, 16, 1, &seq, el, ce, nch));
	inject(seal_frame(child_sum(60, 1, 2, 0, el, ce), 60, key1, 16, 1, 3, 0,
			  seq - DP_REPLAY_WINDOW - 1));
	poll_all();
	CU_ASSERT(collect(o, 64) == 0);
	CU_ASSERT(drops(WIRE_REASON_REPLAY) == 2);

	/* Key rotation: epoch 2 with a new key (AES-256, id 2); epoch 1 drains and retires. */
	CU_ASSERT_FATAL(install_sealed(2, key2, 32, 2, el, ce, nch) == 0);
	uint64_t t0 = rte_rdtsc(), hz = rte_get_tsc_hz();

	while (atomic_load(&dp.state)->jobs[0].n_epochs > 1 && rte_rdtsc() - t0 < 30 * hz) {
		dp_housekeeping(&dp);
		rte_delay_us_sleep(1000);
	}
	CU_ASSERT_FATAL(atomic_load(&dp.state)->jobs[0].n_epochs == 1);
	/* A frame of round 3 sealed under the old key, for either epoch: unknown. */
	inject(seal_frame(child_sum(60, 1, 3, 0, el, ce), 60, key1, 16, 1, 3, 0, seq + 100));
	inject(seal_frame(child_sum(60, 2, 3, 0, el, ce), 60, key1, 16, 1, 3, 0, seq + 101));
	/* The new key with the old epoch inside: unknown too. */
	inject(seal_frame(child_sum(60, 1, 3, 0, el, ce), 60, key2, 32, 2, 3, 0, 1));
	poll_all();
	CU_ASSERT(collect(o, 64) == 0);
	CU_ASSERT(drops(WIRE_REASON_UNKNOWN_KEY) == 5);
	seq = 1;
	CU_ASSERT(sealed_round_exact(2, 3, key2, 32, 2, &seq, el, ce, nch));
	/* Keys never leave: not in dump, not in stats. */
	json_t *rep = call("{\"version\":1,\"id\":2,\"op\":\"dump\",\"job\":60}");
	char *text = json_dumps(rep, 0);

	CU_ASSERT(text != NULL && strstr(text, "\"key_id\": 2") != NULL &&
		  strstr(text, "\"key\"") == NULL && strstr(text, "5a0102") == NULL);
	free(text);
	json_decref(rep);
	rep = call("{\"version\":1,\"id\":3,\"op\":\"stats\"}");
	text = json_dumps(rep, 0);
	CU_ASSERT(text != NULL && strstr(text, "crypto_aesni_gcm0") != NULL &&
		  strstr(text, "5a0102") == NULL);
	free(text);
	json_decref(rep);
	dp_down();
}

/* docs/PROTOCOL.md section 14.4: section 11's RESULT sealed by gateway 9 (key 00 .. 0f, id
 * 42, lane 0, sequence 1, job 7) is byte for byte the document's, and opens back. */
static void
test_sealed_example(void)
{
	static const uint8_t plain[102] = {
		0x47, 0x52, 0x01, 0x02, 0x00, 0x01, 0x01, 0x00, 0x00, 0x00, 0x00, 0x07, 0x00, 0x00,
		0x00, 0x03, 0x00, 0x02, 0x00, 0x09, 0x00, 0x08, 0x00, 0x03, 0x00, 0x00, 0x00, 0x29,
		0x00, 0x00, 0x03, 0xe8, 0x00, 0x04, 0x00, 0x00, 0x00, 0xab, 0xcd, 0xef, [54] = 0x26,
		[86] = 0x00, 0x00, 0x80, 0x3f, 0x00, 0x00, 0x00, 0xc0, 0x00, 0x00, 0x60, 0x40, 0x00,
		0x00, 0x80, 0x3e,
	};
	static const uint8_t sealed[150] = {
		0x47, 0x53, 0x01, 0x01, 0x00, 0x00, 0x00, 0x07, 0x00, 0x00, 0x00, 0x2a, 0x00, 0x09,
		0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x00,
		0x00, 0x00, 0x00, 0x00, 0x48, 0xa6, 0x29, 0xaa, 0xfa, 0x06, 0xa1, 0xbf, 0xff, 0x0a,
		0x44, 0x6c, 0xfe, 0xf8, 0x20, 0x8a, 0xd3, 0x55, 0x29, 0x79, 0x2a, 0xb0, 0x4f, 0x0c,
		0x93, 0x2d, 0x9d, 0x99, 0x7d, 0xae, 0x6b, 0x90, 0x8f, 0xd7, 0x65, 0x64, 0x69, 0x18,
		0xca, 0xb4, 0x15, 0xd2, 0xbc, 0xed, 0xa6, 0xc1, 0xea, 0x12, 0x6a, 0x0c, 0xed, 0xad,
		0xb1, 0xec, 0xb1, 0x10, 0xdc, 0x1f, 0x83, 0x9b, 0xc2, 0xa7, 0x60, 0xcf, 0xd4, 0xf7,
		0xab, 0x26, 0xfb, 0x44, 0x9d, 0xae, 0x61, 0x02, 0xf0, 0x09, 0xb3, 0x50, 0x12, 0x2f,
		0x3d, 0xc7, 0x37, 0xe3, 0xfc, 0xfa, 0x1a, 0x52, 0x9d, 0x4c, 0x38, 0x6d, 0xab, 0xa9,
		0x05, 0x5d, 0x06, 0x7a, 0xf7, 0x26, 0x31, 0x25, 0xe9, 0x82, 0x32, 0x2b, 0xd0, 0x19,
		0x06, 0xa0, 0xcc, 0x63, 0x39, 0x7e, 0xfa, 0x8b, 0xe7, 0xc7,
	};
	uint8_t key[16], pt[102];
	struct rte_mbuf *m = rte_pktmbuf_alloc(tpool);
	uint8_t *f = must_append(m, WIRE_FRAME_HDR_OFF + sizeof(plain));

	for (int i = 0; i < 16; i++)
		key[i] = (uint8_t)i;
	memset(f, 0, WIRE_FRAME_HDR_OFF);
	memcpy(f + WIRE_FRAME_HDR_OFF, plain, sizeof(plain));
	m = seal_frame(m, 7, key, 16, 42, 9, 0, 1);
	CU_ASSERT_FATAL(rte_pktmbuf_pkt_len(m) == WIRE_FRAME_HDR_OFF + sizeof(sealed));
	CU_ASSERT(memcmp(rte_pktmbuf_mtod_offset(m, uint8_t *, WIRE_FRAME_HDR_OFF), sealed,
			 sizeof(sealed)) == 0);
	rte_pktmbuf_free(m);
	CU_ASSERT(gcm(false, key, 16, sealed + 12, sealed, sealed + 32, 102, pt, (uint8_t *)
		      sealed + 134) && memcmp(pt, plain, sizeof(plain)) == 0);
}

/*
 * Sealed frames leave a protected link in the order of their sequence numbers, pacing or
 * not: leaf gateway 1 sends partial sums of a slow tree (queued in its pacer) and a fast
 * one to protected parent 4; the receiver's replay window (64) would drop a frame sealed
 * long before it left.
 */
static void
test_sealed_pacing_order(void)
{
	static const uint16_t w1[] = { 11 };
	const uint32_t ce = 64, n0 = 120, n1 = 8;
	struct tdesc td[2] = { { 0, 4, 0, { 0 }, 0, n0, 128, { 0 } },
			       { 1, 4, 0, { 0 }, n0, n1, 16, { 0 } } };
	static struct out o[64];
	uint64_t last = 0;
	int frames = 0, disorder = 0;

	crypto_dev = "crypto_aesni_gcm0";
	CU_ASSERT_FATAL(dp_up(rte_get_main_lcore()) == 0);
	crypto_dev = "";
	struct table *tb = mk_table(61, 1, 1, TABLE_DTYPE_FP32, (uint64_t)(n0 + n1) * ce, ce, 1,
				    w1, 2, td);

	tb->trees[0].rate_gbps = 0.002; /* 16 KiB at once, then one frame every 1.4 ms */
	tb->n_seals = 1;
	tb->seals[0] = (struct table_seal){ .peer = 4, .key_id = 9,
					    .aead = TABLE_AEAD_AES128_GCM };
	memcpy(tb->seals[0].key, key1, 16);
	CU_ASSERT_FATAL(install(tb, "install") == 0);
	for (uint32_t c = 0; c < n0; c++)
		inject(contrib_f32(61, 1, 0, 11, 1, c, (uint64_t)(n0 + n1) * ce, ce));
	poll_all();
	for (uint32_t c = n0; c < n0 + n1; c++)
		inject(contrib_f32(61, 1, 1, 11, 1, c, (uint64_t)(n0 + n1) * ce, ce));
	uint64_t t0 = rte_rdtsc(), hz = rte_get_tsc_hz();

	while (frames < (int)(n0 + n1) && rte_rdtsc() - t0 < 20 * hz) {
		dp_worker_poll(dp.lcores[0]);
		int n = collect(o, 64);

		for (int k = 0; k < n && k < 64; k++) {
			const uint8_t *sh = o[k].frame + WIRE_FRAME_HDR_OFF;
			uint64_t seq = 0;

			for (int i = 0; i < 8; i++) /* before open_out() overwrites it */
				seq = seq << 8 | sh[16 + i];
			CU_ASSERT_FATAL(open_out(&o[k], key1, 16, 9));
			disorder += seq <= last;
			last = seq;
			frames += o[k].p.type == WIRE_TYPE_CONTRIB && !(o[k].p.flags & WIRE_F_RETX);
		}
		rte_delay_us_sleep(200);
	}
	CU_ASSERT(frames == (int)(n0 + n1));
	CU_ASSERT(disorder == 0);
	CU_ASSERT(ctr(DP_CTR_PACED) > 0);
	dp_down();
}

/* Every frame duplicated on receive (an indirect copy sharing its buffer): a sealed frame is
 * opened in place, so its duplicate must not be decrypted over it; the duplicates are
 * replays, and every round stays exact. */
static void
test_protected_link_duplicates(void)
{
	const uint64_t el = 4 * 64;
	const uint32_t ce = 64, nch = 4;
	uint64_t seq = 0;

	faults[DP_RX] = (struct dp_fault){ .on = true, .dup = UINT32_MAX };
	crypto_dev = "crypto_aesni_gcm0";
	CU_ASSERT_FATAL(dp_up(rte_get_main_lcore()) == 0);
	crypto_dev = "";
	faults[DP_RX] = (struct dp_fault){ 0 };
	CU_ASSERT_FATAL(install_sealed(1, key1, 16, 1, el, ce, nch) == 0);
	CU_ASSERT(sealed_round_exact(1, 1, key1, 16, 1, &seq, el, ce, nch));
	CU_ASSERT(sealed_round_exact(1, 2, key1, 16, 1, &seq, el, ce, nch));
	CU_ASSERT(ctr(DP_CTR_FAULT_DUPLICATED) > 0);
	CU_ASSERT(drops(WIRE_REASON_REPLAY) == 2 * nch);
	CU_ASSERT(drops(WIRE_REASON_BAD_TAG) == 0);
	dp_down();
}

/* A RETX CONTRIB of worker w (UDP checksum cleared: the header changed after it). */
static struct rte_mbuf *
retx_f32(uint32_t job, uint16_t w, uint32_t round, uint32_t chunk, uint64_t el, uint32_t ce)
{
	struct rte_mbuf *m = contrib_f32(job, 1, 0, w, round, chunk, el, ce);

	rte_pktmbuf_mtod_offset(m, struct wire_hdr *, WIRE_FRAME_HDR_OFF)->flags = WIRE_F_RETX;
	rte_pktmbuf_mtod_offset(m, struct rte_udp_hdr *, 34)->dgram_cksum = 0;
	return m;
}

/* A slot that moved on to chunk c + slots keeps answering for chunk c from the RESULT it
 * retains, and chunk c never takes the slot back (docs/PROTOCOL.md section 7.3). */
static void
test_slot_moved_on(void)
{
	const uint64_t el = 32 * 16;
	const uint32_t ce = 16;
	struct tdesc td = { 0, 0, 0, { 0 }, 0, 32, 16, { 0 } };
	static struct out o[16];
	uint64_t late;
	int n;

	CU_ASSERT_FATAL(dp_up(rte_get_main_lcore()) == 0);
	CU_ASSERT_FATAL(install(mk_table(15, 1, 1, TABLE_DTYPE_FP32, el, ce, 3, W3, 1, &td),
				"install") == 0);
	for (uint32_t c = 3; c <= 19; c += 16)
		for (int w = 0; w < 3; w++)
			inject(contrib_f32(15, 1, 0, W3[w], 4, c, el, ce));
	poll_all();
	CU_ASSERT(collect(o, 16) == 6);
	/* Worker 12 lost chunk 3's RESULT: its RETX gets it, the slot still holds 19. */
	late = drops(WIRE_REASON_LATE);
	inject(retx_f32(15, 12, 4, 3, el, ce));
	poll_all();
	n = collect(o, 16);
	CU_ASSERT_FATAL(n == 1);
	CU_ASSERT(o[0].p.type == WIRE_TYPE_RESULT && o[0].p.chunk == 3 && o[0].p.round == 4 &&
		  o[0].fl.dst_ip == PEER_IP(12) && out_f32(&o[0], 1) == val(11, 3 * ce + 1) +
									 val(12, 3 * ce + 1) +
									 val(13, 3 * ce + 1));
	CU_ASSERT(drops(WIRE_REASON_LATE) == late + 1);
	inject(retx_f32(15, 11, 4, 19, el, ce));
	poll_all();
	n = collect(o, 16);
	CU_ASSERT(n == 1 && o[0].p.type == WIRE_TYPE_RESULT && o[0].p.chunk == 19);
	dp_down();
}

/* Move a frame by `by` bytes inside its buffer. */
static void
shift_frame(struct rte_mbuf *m, uint16_t by)
{
	uint16_t len = rte_pktmbuf_data_len(m);
	static uint8_t tmp[9100];

	memcpy(tmp, rte_pktmbuf_mtod(m, void *), len);
	m->data_off = (uint16_t)(m->data_off + by);
	memcpy(rte_pktmbuf_mtod(m, void *), tmp, len);
}

/* Jumbo frames (MTU 9000, 8 KiB chunks: the table's largest), payloads at unaligned
 * offsets, a frame at an odd address (dropped), and frames in more than one segment
 * (never summed: dropped as oversize). */
static void
test_jumbo_misaligned(void)
{
	const uint32_t ce = TABLE_CHUNK_BYTES_MAX / 4;
	const uint64_t el = 3 * ce - 100;
	struct tdesc td = { 0, 0, 0, { 0 }, 0, 3, 16, { 0 } };
	static struct out o[16];
	struct rte_mempool *big = rte_pktmbuf_pool_create("t_big", 256, 0, 0, 9216 + 256,
							  SOCKET_ID_ANY);
	struct rte_mempool *small = tpool;
	struct table *tb;

	CU_ASSERT_FATAL(big != NULL);
	CU_ASSERT_FATAL(dp_up(rte_get_main_lcore()) == 0);
	/* This dataplane runs MTU 1500: jumbo chunks do not fit. */
	tb = mk_table(14, 1, 1, TABLE_DTYPE_FP32, el, ce, 3, W3, 1, &td);
	CU_ASSERT(install(tb, "install") == E2BIG);
	dp_down();
	jumbo = true;
	CU_ASSERT_FATAL(dp_up(rte_get_main_lcore()) == 0);
	CU_ASSERT_FATAL(install(mk_table(14, 1, 1, TABLE_DTYPE_FP32, el, ce, 3, W3, 1, &td),
				"install") == 0);
	tpool = big;
	for (int w = 0; w < 3; w++)
		for (uint32_t c = 0; c < 3; c++) {
			struct rte_mbuf *m = contrib_f32(14, 1, 0, W3[w], 0, c, el, ce);

			/* Shift the frame by 2 or 6 bytes: the payload is no longer 4- or
			 * 32-byte aligned. */
			if (w > 0)
				shift_frame(m, (uint16_t)(4 * w - 2));
			inject(m);
		}
	tpool = small;
	/* A valid frame split over two segments. */
	{
		struct rte_mbuf *a, *b;

		tpool = big;
		a = contrib_f32(14, 1, 0, 11, 1, 0, el, ce);
		tpool = small;
		b = rte_pktmbuf_alloc(small);
		memcpy(must_append(b, 100), rte_pktmbuf_mtod_offset(a, void *, a->data_len - 100),
		       100);
		rte_pktmbuf_trim(a, 100);
		CU_ASSERT(rte_pktmbuf_chain(a, b) == 0);
		inject(a);
	}
	/* A frame at an odd address: dropped, counted. */
	tpool = big;
	struct rte_mbuf *odd = contrib_f32(14, 1, 0, 11, 1, 1, el, ce);

	tpool = small;
	shift_frame(odd, 1);
	inject(odd);
	poll_all();
	int n = collect(o, 16), bad = 0;

	CU_ASSERT(n == 9);
	CU_ASSERT(drops(WIRE_REASON_MISALIGNED) == 1);
	for (int i = 0; i < n && i < 16; i++) {
		bad += o[i].p.count != wire_chunk_len(el, ce, o[i].p.chunk);
		for (uint32_t e = 0; e < o[i].p.count; e++) {
			uint64_t x = (uint64_t)o[i].p.chunk * ce + e;

			bad += out_f32(&o[i], e) != val(11, x) + val(12, x) + val(13, x);
		}
	}
	CU_ASSERT(bad == 0);
	CU_ASSERT(drops(WIRE_REASON_OVERSIZE) == 1);
	dp_down();
	jumbo = false;
	rte_mempool_free(big);
}

/* Routes: a worker beyond a router (--route via), one on a directly attached prefix
 * (--route port, resolved by ARP), the longest prefix winning, no route at all. */
static void
test_routes(void)
{
	const uint64_t el = 64;
	const uint32_t ce = 64;
	struct tdesc td = { 0, 0, 0, { 0 }, 0, 1, 16, { 0 } };
	static const uint16_t wk[] = { 11, 12 };
	static struct out o[16];
	struct table *tb;

	routes[0] = (struct dp_route){ .dst = 0x0a050000, .prefix_len = 16, .via = PEER_IP(9) };
	routes[1] = (struct dp_route){ .dst = 0x0a050700, .prefix_len = 24, .via = PEER_IP(8) };
	routes[2] = (struct dp_route){ .dst = 0x0a060000, .prefix_len = 16, .port = 0 };
	n_routes = 3;
	CU_ASSERT_FATAL(dp_up(rte_get_main_lcore()) == 0);
	n_routes = 0;
	CU_ASSERT(dp.n_routes == 3 && dp.routes[0].port == 0);
	/* Worker 11 at 10.5.1.1 (via .9), worker 12 at 10.5.7.1 (the /24 wins: via .8). */
	tb = mk_table(20, 1, 1, TABLE_DTYPE_FP32, el, ce, 2, wk, 1, &td);
	tb->trees[0].workers[0].ipv4 = 0x0a050101;
	tb->trees[0].workers[1].ipv4 = 0x0a050701;
	CU_ASSERT_FATAL(install(tb, "install") == 0);
	for (int w = 0; w < 2; w++) {
		struct rte_mbuf *m = contrib_f32(20, 1, 0, wk[w], 0, 0, el, ce);
		struct rte_ipv4_hdr *ip = rte_pktmbuf_mtod_offset(m, struct rte_ipv4_hdr *, 14);

		ip->src_addr = rte_cpu_to_be_32(w == 0 ? 0x0a050101 : 0x0a050701);
		ip->hdr_checksum = 0;
		ip->hdr_checksum = rte_ipv4_cksum(ip);
		rte_pktmbuf_mtod_offset(m, struct rte_udp_hdr *, 34)->dgram_cksum = 0;
		inject(m);
	}
	poll_all();
	int n = collect(o, 16);

	CU_ASSERT_FATAL(n == 2);
	for (int i = 0; i < n; i++) {
		bool first = o[i].fl.dst_ip == 0x0a050101;

		CU_ASSERT(o[i].fl.dst_mac[5] == (first ? 9 : 8));
		CU_ASSERT(o[i].fl.dst_ip == (first ? 0x0a050101u : 0x0a050701u));
	}
	/* 10.6.0.5 is on port 0 directly: its own neighbour entry, resolved by ARP. */
	tb = mk_table(21, 1, 1, TABLE_DTYPE_FP32, el, ce, 2, wk, 1, &td);
	tb->trees[0].workers[0].ipv4 = 0x0a060005;
	CU_ASSERT(install(tb, "install") == 0);
	dp_housekeeping(&dp);
	poll_all();
	dp_worker_poll(dp.lcores[0]);
	n = collect(o, 16);
	CU_ASSERT(n == 1 && o[0].frame[12] == 0x08 && o[0].frame[13] == 0x06);
	/* 10.7.0.1: no route. */
	tb = mk_table(22, 1, 1, TABLE_DTYPE_FP32, el, ce, 2, wk, 1, &td);
	tb->trees[0].workers[0].ipv4 = 0x0a070001;
	CU_ASSERT(install(tb, "install") == EINVAL);
	dp_down();
}

/* Fault injection: TX delay holds frames back, TX duplication doubles them, RX loss
 * drops them, RX reordering swaps them; each counted. */
static void
test_faults(void)
{
	const uint64_t el = 64 * 8;
	const uint32_t ce = 64;
	struct tdesc td = { 0, 0, 0, { 0 }, 0, 8, 16, { 0 } };
	static struct out o[64];

	faults[DP_TX] = (struct dp_fault){ .on = true, .dup = UINT32_MAX,
					   .delay_tsc = rte_get_tsc_hz() / 50 };
	CU_ASSERT_FATAL(dp_up(rte_get_main_lcore()) == 0);
	faults[DP_TX] = (struct dp_fault){ 0 };
	CU_ASSERT_FATAL(install(mk_table(30, 1, 1, TABLE_DTYPE_FP32, el, ce, 3, W3, 1, &td),
				"install") == 0);
	for (int w = 0; w < 3; w++)
		inject(contrib_f32(30, 1, 0, W3[w], 0, 0, el, ce));
	poll_all();
	CU_ASSERT(collect(o, 64) == 0);        /* 20 ms in the delay line */
	CU_ASSERT(ctr(DP_CTR_FAULT_DUPLICATED) == 3);
	rte_delay_us_sleep(25000);
	dp_worker_poll(dp.lcores[0]);
	int n = collect(o, 64);

	CU_ASSERT(n == 6);                      /* three results, each twice */
	for (int i = 0; i < n && i < 64; i++)
		CU_ASSERT(o[i].p.type == WIRE_TYPE_RESULT && out_f32(&o[i], 5) ==
			  val(11, 5) + val(12, 5) + val(13, 5));
	dp_down();

	faults[DP_RX] = (struct dp_fault){ .on = true, .loss = UINT32_MAX / 2,
					   .reorder = UINT32_MAX / 4 };
	CU_ASSERT_FATAL(dp_up(rte_get_main_lcore()) == 0);
	faults[DP_RX] = (struct dp_fault){ 0 };
	CU_ASSERT_FATAL(install(mk_table(31, 1, 1, TABLE_DTYPE_FP32, el, ce, 3, W3, 1, &td),
				"install") == 0);
	for (uint32_t c = 0; c < 8; c++)
		for (int w = 0; w < 3; w++)
			inject(contrib_f32(31, 1, 0, W3[w], 0, c, el, ce));
	poll_all();
	uint64_t lost = ctr(DP_CTR_FAULT_DROPPED);

	CU_ASSERT(lost > 0 && lost < 24);
	CU_ASSERT(ctr(DP_CTR_CONTRIBS) == 24 - lost);
	CU_ASSERT(ctr(DP_CTR_FAULT_REORDERED) > 0);
	collect(o, 64);
	dp_down();
}

/* One run of 512 single-worker chunks through RX faults f with fault seed `seed`: which
 * chunks were lost (their RESULT never came), and the number of runs of losses. */
static unsigned int
ge_run(const struct dp_fault *f, uint64_t seed, bool lost[512], unsigned int *runs)
{
	const uint64_t el = 64 * 512;
	const uint32_t ce = 64;
	static const uint16_t w1[] = { 11 };
	struct tdesc td = { 0, 0, 0, { 0 }, 0, 512, 512, { 0 } };
	static struct out o[64];
	unsigned int n_lost = 0;

	faults[DP_RX] = *f;
	fault_seed = seed;
	CU_ASSERT_FATAL(dp_up(rte_get_main_lcore()) == 0);
	faults[DP_RX] = (struct dp_fault){ 0 };
	fault_seed = 0;
	CU_ASSERT_FATAL(install(mk_table(32, 1, 1, TABLE_DTYPE_FP32, el, ce, 1, w1, 1, &td),
				"install") == 0);
	for (uint32_t c = 0; c < 512; c++)
		lost[c] = true;
	for (uint32_t c = 0; c < 512; c += 32) {
		for (uint32_t i = c; i < c + 32; i++)
			inject(contrib_f32(32, 1, 0, 11, 0, i, el, ce));
		poll_all();
		int n = collect(o, 64);

		for (int i = 0; i < n && i < 64; i++) {
			CU_ASSERT(o[i].p.type == WIRE_TYPE_RESULT &&
				  out_f32(&o[i], 3) == val(11, (uint64_t)o[i].p.chunk * ce + 3));
			if (o[i].p.chunk < 512)
				lost[o[i].p.chunk] = false;
		}
	}
	*runs = 0;
	for (uint32_t c = 0; c < 512; c++) {
		n_lost += lost[c];
		*runs += lost[c] && (c == 0 || !lost[c - 1]);
	}
	CU_ASSERT(ctr(DP_CTR_FAULT_DROPPED) == n_lost);
	dp_down();
	return n_lost;
}

/* Bursty loss (a Gilbert-Elliott channel): losses come in runs, at about the mean the
 * parameters give, and the same seed loses the same frames. */
static void
test_faults_bursty(void)
{
	/* Good -> bad 2%, bad -> good 25%: mean loss 0.02 / 0.27 = 7.4%, runs of 4. */
	struct dp_fault ge = { .on = true, .ge = true, .ge_p = UINT32_MAX / 50,
			       .ge_r = UINT32_MAX / 4, .ge_h = UINT32_MAX, .ge_k = 0 };
	static bool a[512], b[512], c[512];
	unsigned int ra, rb, rc;
	unsigned int na = ge_run(&ge, 7, a, &ra);
	unsigned int nb = ge_run(&ge, 7, b, &rb);
	unsigned int nc = ge_run(&ge, 8, c, &rc);

	/* 38 expected of 512: far from 0 and from a third. */
	CU_ASSERT(na > 8 && na < 170);
	CU_ASSERT(nc > 8 && nc < 170);
	/* In runs: independent losses at 7.4% would give about 0.93 runs per loss. */
	CU_ASSERT(ra * 3 < na * 2);
	CU_ASSERT(rc * 3 < nc * 2);
	CU_ASSERT(na == nb && ra == rb && memcmp(a, b, sizeof(a)) == 0);
	CU_ASSERT(memcmp(a, c, sizeof(a)) != 0);
	(void)nb;
}

/* Loss recovery towards the parent: a partial sum without RESULT is sent again (RETX)
 * after the timeout; once the parent ACKs it, NACK_RESULT instead; NACK_CONTRIB makes it
 * go again at once; the RESULT ends it all. */
static void
test_retransmit_up(void)
{
	const uint64_t el = 64;
	const uint32_t ce = 64;
	static const uint16_t w2[] = { 21, 22 };
	struct tdesc td = { 0, 4, 0, { 0 }, 0, 1, 16, { 0 } };   /* leaf under gateway 4 */
	static struct out o[16];
	struct pkt ctl = { WIRE_TYPE_ACK, WIRE_F_ECHO, 40, 1, 0, 4, 2, 0, 3, 0, WIRE_DTYPE_NONE, 1,
			   PEER_IP(4) };
	int n;

	CU_ASSERT_FATAL(dp_up(rte_get_main_lcore()) == 0);
	CU_ASSERT_FATAL(install(mk_table(40, 1, 2, TABLE_DTYPE_FP32, el, ce, 2, w2, 1, &td),
				"install") == 0);
	inject(contrib_f32(40, 1, 0, 21, 3, 0, el, ce));
	inject(contrib_f32(40, 1, 0, 22, 3, 0, el, ce));
	poll_all();
	CU_ASSERT_FATAL(collect(o, 16) == 1);
	CU_ASSERT(o[0].p.type == WIRE_TYPE_CONTRIB && o[0].p.flags == 0 && o[0].p.contrib == 2);
	/* Nothing before the timeout (20 ms, twice that before the tree's first RESULT of
	 * the round), then the same partial sum with RETX. */
	dp_worker_poll(dp.lcores[0]);
	CU_ASSERT(collect(o, 16) == 0);
	rte_delay_us_sleep(45000);
	dp_worker_poll(dp.lcores[0]);
	n = collect(o, 16);
	CU_ASSERT_FATAL(n == 1);
	CU_ASSERT(o[0].p.type == WIRE_TYPE_CONTRIB && o[0].p.flags == WIRE_F_RETX &&
		  o[0].fl.dst_ip == PEER_IP(4) && o[0].p.contrib == 2 &&
		  out_f32(&o[0], 7) == val(21, 7) + val(22, 7));
	CU_ASSERT(ctr(DP_CTR_RETRANSMITS) == 1);
	/* NACK_CONTRIB from the parent: again at once. */
	ctl.type = WIRE_TYPE_NACK_CONTRIB;
	ctl.flags = 0;
	inject(mk_pkt(&ctl, NULL));
	poll_all();
	CU_ASSERT(collect(o, 16) == 1 && o[0].p.flags == WIRE_F_RETX);
	/* The parent ACKs: the next timeout (doubled, 40 ms) sends NACK_RESULT instead. */
	ctl.type = WIRE_TYPE_ACK;
	ctl.flags = WIRE_F_ECHO;
	inject(mk_pkt(&ctl, NULL));
	poll_all();
	CU_ASSERT(collect(o, 16) == 0);
	rte_delay_us_sleep(45000);
	dp_worker_poll(dp.lcores[0]);
	n = collect(o, 16);
	CU_ASSERT_FATAL(n == 1);
	CU_ASSERT(o[0].p.type == WIRE_TYPE_NACK_RESULT && o[0].p.chunk == 0 && o[0].p.round == 3);
	CU_ASSERT(ctr(DP_CTR_NACKS_SENT) == 1);
	/* An ACK from another gateway is refused. */
	ctl.sender = 9;
	inject(mk_pkt(&ctl, NULL));
	poll_all();
	CU_ASSERT(drops(WIRE_REASON_BAD_SENDER) == 1);
	/* The RESULT: to both workers; the partial sum is released, no timer fires again. */
	float res[64];
	struct pkt r = { WIRE_TYPE_RESULT, 0, 40, 1, 0, 4, 4, 5, 3, 0, WIRE_DTYPE_FP32, 64,
			 PEER_IP(4) };

	for (int i = 0; i < 64; i++)
		res[i] = (float)i;
	inject(mk_pkt(&r, res));
	poll_all();
	CU_ASSERT(collect(o, 16) == 2);
	rte_delay_us_sleep(90000);
	dp_worker_poll(dp.lcores[0]);
	CU_ASSERT(collect(o, 16) == 0);
	/* The parent link carried the partial sum three times, two of them resent. */
	CU_ASSERT(link_ctr(0, "up", 4, "frames") == 3);
	CU_ASSERT(link_ctr(0, "up", 4, "retx_bytes") * 3 == link_ctr(0, "up", 4, "bytes") * 2);
	dp_down();
}

/* Pacing: a leaf whose tree runs at 8 Mbit/s sends its partial sums no faster: after
 * the burst allowance the rest wait in the pacer and leave as their time comes. */
static void
test_pacing(void)
{
	const uint32_t ce = 256, nch = 64;          /* 1 KiB payloads, 1.1 KB frames */
	const uint64_t el = (uint64_t)ce * nch;
	static const uint16_t w1[] = { 21 };
	struct tdesc td = { 0, 4, 0, { 0 }, 0, nch, 64, { 0 } };
	static struct out o[128];
	struct table *tb = mk_table(50, 1, 2, TABLE_DTYPE_FP32, el, ce, 1, w1, 1, &td);
	int first, total;

	tb->trees[0].rate_gbps = 0.008;             /* 1 MB/s: a 1.1 KB frame per 1.1 ms */
	CU_ASSERT_FATAL(dp_up(rte_get_main_lcore()) == 0);
	CU_ASSERT_FATAL(install(tb, "install") == 0);
	uint64_t t0 = rte_get_timer_cycles();

	for (uint32_t c = 0; c < nch; c++)
		inject(contrib_f32(50, 1, 0, 21, 0, c, el, ce));
	poll_all();
	first = collect(o, 128);
	/* The burst allowance (16 KiB) lets about 14 frames go at once, not 64. */
	CU_ASSERT(first >= 10 && first <= 20);
	CU_ASSERT(ctr(DP_CTR_PACED) == nch - (uint64_t)first);
	total = first;
	/* Count first transmissions only: past the RTO (20 ms here) the timers resend the
	 * partial sums still without a RESULT through the same pacer, and on a loaded
	 * machine one poll may release two frames at once. */
	while (total < (int)nch && rte_get_timer_cycles() - t0 < 20 * rte_get_timer_hz()) {
		dp_worker_poll(dp.lcores[0]);
		int n = collect(o, 128);

		for (int k = 0; k < n && k < 128; k++)
			total += !(o[k].p.flags & WIRE_F_RETX);
	}
	double s = (double)(rte_get_timer_cycles() - t0) / (double)rte_get_timer_hz();

	CU_ASSERT(total == (int)nch);
	/* (64 - 14) frames of ~1.1 KB at 1 MB/s: about 55 ms, surely more than 40. */
	CU_ASSERT(s > 0.040);
	if (s <= 0.040 || total != (int)nch)
		fprintf(stderr, "pacing: %d frames in %.3f s\n", total, s);
	dp_down();
}

/* A draining epoch whose slots are done but whose pacers still hold RESULT copies for a
 * child gateway is retired only once they have left: they are the only copies. */
static void
test_retire_after_pacers(void)
{
	const uint32_t ce = 256, nch = 48;          /* 1 KiB payloads */
	const uint64_t el = (uint64_t)ce * nch;
	static const uint16_t w1[] = { 21 };
	struct tdesc td = { 0, 0, 1, { 3 }, 0, nch, 64, { 1 } };
	static struct out o[128];
	struct table *tb = mk_table(51, 1, 1, TABLE_DTYPE_FP32, el, ce, 1, w1, 1, &td);
	const struct dp_state *st;
	int to_child = 0, n;

	tb->trees[0].rate_gbps = 0.008;             /* a 1.1 KB frame per 1.1 ms */
	CU_ASSERT_FATAL(dp_up(rte_get_main_lcore()) == 0);
	CU_ASSERT_FATAL(install(tb, "install") == 0);
	for (uint32_t c = 0; c < nch; c++) {
		inject(contrib_f32(51, 1, 0, 21, 0, c, el, ce));
		inject(contrib_f32(51, 1, 0, 3, 0, c, el, ce));
	}
	poll_all();
	n = collect(o, 128);
	for (int k = 0; k < n && k < 128; k++)
		to_child += o[k].p.type == WIRE_TYPE_RESULT && o[k].fl.dst_ip == PEER_IP(3);
	CU_ASSERT(to_child < (int)nch);            /* the rest wait in the child's pacer */
	tb = mk_table(51, 2, 1, TABLE_DTYPE_FP32, el, ce, 1, w1, 1, &td);
	tb->trees[0].rate_gbps = 0.008;
	CU_ASSERT_FATAL(install(tb, "install") == 0);
	dp_housekeeping(&dp);
	st = atomic_load(&dp.state);
	CU_ASSERT(st->jobs[0].n_epochs == 2);      /* done slots, but frames waiting */
	uint64_t t0 = rte_get_timer_cycles();

	while (to_child < (int)nch && rte_get_timer_cycles() - t0 < 10 * rte_get_timer_hz()) {
		dp_worker_poll(dp.lcores[0]);
		n = collect(o, 128);
		for (int k = 0; k < n && k < 128; k++)
			to_child += o[k].p.type == WIRE_TYPE_RESULT &&
				    o[k].fl.dst_ip == PEER_IP(3);
	}
	CU_ASSERT(to_child == (int)nch);
	dp_worker_poll(dp.lcores[0]);               /* the drained pacer leaves its list */
	dp_housekeeping(&dp);
	st = atomic_load(&dp.state);
	CU_ASSERT(st->jobs[0].n_epochs == 1 && st->jobs[0].epochs[0]->epoch == 2);
	dp_down();
}

/* A RESULT's copies share one indirect segment of its payload: each copy is a header mbuf
 * chained to it, holding one reference. A copy that cannot go (a worker whose neighbour is
 * unresolved) gives its reference back; once the copies are freed and the job is gone,
 * every header and indirect mbuf is back in its pool. */
static void
test_fanout_shared_segment(void)
{
	const uint32_t ce = 64, nch = 8;
	const uint64_t el = (uint64_t)ce * nch;
	static const uint16_t w3[] = { 11, 12, 45 };
	struct tdesc td = { 0, 0, 0, { 0 }, 0, nch, 16, { 0 } };
	struct rte_mbuf *m[32];
	int bad = 0;

	/* 45 at 10.0.5.45, behind router 10.0.0.50 (no static neighbour, never answers):
	 * its frames come from its own address but its RESULTs go through the router, which
	 * stays unresolved. */
	n_routes = 1;
	routes[0] = (struct dp_route){ .dst = 0x0a000500u, .prefix_len = 24, .via = PEER_IP(50) };
	CU_ASSERT_FATAL(dp_up(rte_get_main_lcore()) == 0);
	n_routes = 0;
	struct table *tb = mk_table(52, 1, 1, TABLE_DTYPE_FP32, el, ce, 3, w3, 1, &td);

	tb->trees[0].workers[2].ipv4 = 0x0a00052du;
	CU_ASSERT_FATAL(install(tb, "install") == 0);
	for (uint32_t c = 0; c < nch; c++)
		for (int w = 0; w < 3; w++) {
			spoof = (typeof(spoof)){ w3[w] == 45, 0x0a00052du, WORKER_PORT, 0 };
			inject(contrib_f32(52, 1, 0, w3[w], 0, c, el, ce));
		}
	spoof.on = false;
	poll_all();
	unsigned int n = rte_ring_dequeue_burst(tx_ring, (void **)m, 32, NULL);

	CU_ASSERT(n == 2 * nch);
	CU_ASSERT(ctr(DP_CTR_RESULTS_SENT) == 2 * nch);
	CU_ASSERT(ctr(DP_CTR_NO_NEIGHBOUR) == nch);
	for (unsigned int i = 0; i + 1 < n; i += 2) {
		struct rte_mbuf *seg = m[i]->next;
		uint8_t f[2048];

		/* Workers 11 and 12 of one chunk: one segment, two references. */
		bad += m[i]->nb_segs != 2 || seg == NULL || m[i + 1]->next != seg ||
		       rte_mbuf_refcnt_read(seg) != 2 || !RTE_MBUF_CLONED(seg) ||
		       rte_pktmbuf_pkt_len(m[i]) != WIRE_FRAME_PAYLOAD_OFF + 4 * ce;
		const uint8_t *d = rte_pktmbuf_read(m[i], 0, rte_pktmbuf_pkt_len(m[i]), f);
		struct wire_pkt p;
		size_t off, plen;

		if (d == NULL || wire_frame_parse(d, rte_pktmbuf_pkt_len(m[i]), NULL, &off, &plen,
						  NULL) != 0 ||
		    wire_hdr_decode(d + off, plen, &p, NULL) != 0) {
			bad++;
			continue;
		}
		for (uint32_t e = 0; e < ce; e++) {
			float v;
			uint64_t x = (uint64_t)p.chunk * ce + e;

			memcpy(&v, d + off + p.payload_off + 4 * e, sizeof(v));
			bad += v != val(11, x) + val(12, x) + val(45, x);
		}
	}
	CU_ASSERT(bad == 0);
	rte_pktmbuf_free_bulk(m, n);
	CU_ASSERT(call_errno("{\"version\":1,\"id\":1,\"op\":\"remove\",\"job\":52}") == 0);
	rte_delay_us_sleep(1000 * (dp.prm.drain_ms + 10));
	dp_housekeeping(&dp);
	CU_ASSERT(atomic_load(&dp.state)->n_jobs == 0);
	CU_ASSERT(rte_mempool_in_use_count(tpool) == 0);
	poll_all();                 /* the ARP requests for the router go out: free them */
	while (rte_ring_dequeue(tx_ring, (void **)&m[0]) == 0) {
		CU_ASSERT(rte_pktmbuf_mtod(m[0], struct rte_ether_hdr *)->ether_type ==
			  rte_cpu_to_be_16(RTE_ETHER_TYPE_ARP));
		rte_pktmbuf_free(m[0]);
	}
	const struct dp_lcore *lc = dp.lcores[0];

	CU_ASSERT(rte_mempool_in_use_count(lc->hdr_pool) ==
		  lc->hdr_stash.tail - lc->hdr_stash.head);
	CU_ASSERT(rte_mempool_in_use_count(lc->clone_pool) ==
		  lc->clone_stash.tail - lc->clone_stash.head);
	dp_down();
}

/* A child gateway one round behind gets the previous round's RESULT: its NACK_RESULT
 * and its retransmitted partial sum are answered after the root's workers moved on. */
static void
test_prev_round_child(void)
{
	const uint64_t el = 64;
	const uint32_t ce = 64;
	static const uint16_t w2[] = { 11, 12 };
	struct tdesc td = { 0, 0, 1, { 3 }, 0, 1, 16, { 2 } }; /* root, child gateway 3 */
	static struct out o[16];
	float pl[64];
	struct pkt cp = { WIRE_TYPE_CONTRIB, 0, 60, 1, 0, 3, 3, 2, 101, 0, WIRE_DTYPE_FP32, 64,
			  PEER_IP(3) };

	for (int i = 0; i < 64; i++)
		pl[i] = 1;
	CU_ASSERT_FATAL(dp_up(rte_get_main_lcore()) == 0);
	CU_ASSERT_FATAL(install(mk_table(60, 1, 1, TABLE_DTYPE_FP32, el, ce, 2, w2, 1, &td),
				"install") == 0);
	inject(contrib_f32(60, 1, 0, 11, 101, 0, el, ce));
	inject(contrib_f32(60, 1, 0, 12, 101, 0, el, ce));
	inject(mk_pkt(&cp, pl));
	poll_all();
	CU_ASSERT(collect(o, 16) == 3);         /* to the child and both workers */
	inject(contrib_f32(60, 1, 0, 11, 102, 0, el, ce));
	inject(contrib_f32(60, 1, 0, 12, 102, 0, el, ce));
	poll_all();
	CU_ASSERT(collect(o, 16) == 0);
	struct pkt nk = { WIRE_TYPE_NACK_RESULT, 0, 60, 1, 0, 3, 3, 0, 101, 0, WIRE_DTYPE_NONE,
			  1, PEER_IP(3) };

	inject(mk_pkt(&nk, NULL));
	cp.flags = WIRE_F_RETX;
	inject(mk_pkt(&cp, pl));
	poll_all();
	int n = collect(o, 16);

	CU_ASSERT(n == 2);
	for (int k = 0; k < n && k < 16; k++)
		CU_ASSERT(o[k].p.type == WIRE_TYPE_RESULT && o[k].p.round == 101 &&
			  o[k].fl.dst_ip == PEER_IP(3) && o[k].p.contrib == 4);
	dp_down();
}

/* --- Result recovery across epochs (docs/PROTOCOL.md section 10.1) ----------------------- */

/* A RESULT of job 61 round `round`, chunk 0 (64 fp32 elements, each `v`), from gateway
 * `from` (at 10.0.0.from, origin 2) under `epoch` with `flags`. */
static struct rte_mbuf *
result_f32(uint32_t epoch, uint32_t round, uint16_t from, uint8_t flags, float v)
{
	float pl[64];
	struct pkt p = { WIRE_TYPE_RESULT, flags, 61, epoch, 0, from, 2, 2, round, 0,
			 WIRE_DTYPE_FP32, 64, PEER_IP(from) };

	for (int i = 0; i < 64; i++)
		pl[i] = v;
	return mk_pkt(&p, pl);
}

/* Child gateway 2's partial sum (contrib 1) of job 61 chunk 0, each element `v`. */
static struct rte_mbuf *
child2_sum(uint32_t epoch, uint32_t round, uint8_t flags, float v)
{
	float pl[64];
	struct pkt p = { WIRE_TYPE_CONTRIB, flags, 61, epoch, 0, 2, 2, 1, round, 0,
			 WIRE_DTYPE_FP32, 64, PEER_IP(2) };

	for (int i = 0; i < 64; i++)
		pl[i] = v;
	return mk_pkt(&p, pl);
}

/* Whether o is a RESULT of epoch 2, tree 0, round `round` to 10.0.0.to whose every element
 * is v (v < 0: worker 11's value + 1, the sum with child 2's ones). */
static bool
recovered_is(const struct out *o, uint32_t round, uint16_t to, float v)
{
	if (o->p.type != WIRE_TYPE_RESULT || o->p.epoch != 2 || o->p.tree != 0 ||
	    o->p.round != round || o->p.chunk != 0 || o->fl.dst_ip != PEER_IP(to))
		return false;
	for (uint32_t i = 0; i < 64; i++)
		if (out_f32(o, i) != (v < 0 ? val(11, i) + 1 : v))
			return false;
	return true;
}

/* Whether the n frames o[] are the two copies of a recovered RESULT (recovered_is()), one
 * to gateway 2 and one to worker 11, in either order. */
static bool
recovered_both(const struct out *o, int n, uint32_t round, float v)
{
	return n == 2 && ((recovered_is(&o[0], round, 2, v) && recovered_is(&o[1], round, 11, v)) ||
			  (recovered_is(&o[0], round, 11, v) && recovered_is(&o[1], round, 2, v)));
}

/* Epoch 1: this gateway (1) is a leaf under gateway 2 with worker 11; round 6 goes up, and
 * with `answered` the parent's RESULT (every element 5) comes back and goes to worker 11.
 * Then epoch 2 makes it the root, with child gateway 2: the re-plan of a link failure. */
static void
recovery_two_epochs(bool answered)
{
	static const uint16_t w11[] = { 11 };
	struct tdesc leaf = { 0, 2, 0, { 0 }, 0, 1, 16, { 0 } };
	struct tdesc root = { 0, 0, 1, { 2 }, 0, 1, 16, { 1 } };
	static struct out o[8];

	CU_ASSERT_FATAL(install(mk_table(61, 1, 1, TABLE_DTYPE_FP32, 64, 64, 1, w11, 1, &leaf),
				"install") == 0);
	inject(contrib_f32(61, 1, 0, 11, 6, 0, 64, 64));
	poll_all();
	CU_ASSERT(collect(o, 8) == 1 && o[0].p.type == WIRE_TYPE_CONTRIB &&
		  o[0].fl.dst_ip == PEER_IP(2));
	if (answered) {
		inject(result_f32(1, 6, 2, 0, 5));
		poll_all();
		CU_ASSERT(collect(o, 8) == 1 && o[0].p.type == WIRE_TYPE_RESULT &&
			  o[0].fl.dst_ip == PEER_IP(11));
	}
	CU_ASSERT_FATAL(install(mk_table(61, 2, 1, TABLE_DTYPE_FP32, 64, 64, 1, w11, 1, &root),
				"install") == 0);
}

/* Worker 11 lost its round 6 RESULT to the re-plan and runs the round again under epoch 2,
 * while gateway 2's side has moved on to round 7: the RESULT this gateway retains from
 * epoch 1 completes the slot, and round 7 then completes as usual. */
static void
test_recovery_from_older_epoch(void)
{
	static struct out o[8];

	linger_ms = 60000;
	CU_ASSERT_FATAL(dp_up(rte_get_main_lcore()) == 0);
	linger_ms = 0;
	recovery_two_epochs(true);
	inject(contrib_f32(61, 2, 0, 11, 6, 0, 64, 64)); /* opens the slot for round 6 */
	poll_all();
	CU_ASSERT(collect(o, 8) == 0);
	inject(child2_sum(2, 7, 0, 1)); /* the other side is at round 7 */
	poll_all();
	int n = collect(o, 8);

	CHECK(recovered_both(o, n, 6, 5),
	      "%d frames sent, the first type %d round %u", n, n > 0 ? (int)o[0].p.type : -1,
	      n > 0 ? o[0].p.round : 0);
	CU_ASSERT(ctr(DP_CTR_RECOVERED) == 1 && ctr(DP_CTR_RECOVER_ASKED) == 0);
	/* Round 7 from both: exact. */
	inject(contrib_f32(61, 2, 0, 11, 7, 0, 64, 64));
	inject(child2_sum(2, 7, WIRE_F_RETX, 1));
	poll_all();
	n = collect(o, 8);
	CHECK(recovered_both(o, n, 7, -1),
	      "round 7: %d frames", n);
	dp_down();
}

/* As above, but this gateway never got round 6's RESULT (lost on the failed link): it asks
 * gateway 2, which moved on and so has it, and completes the slot with the answer. A
 * RESULT from a child that nobody asked for, or without RETX, changes nothing. */
static void
test_recovery_asks_child(void)
{
	static struct out o[8];

	linger_ms = 60000;
	CU_ASSERT_FATAL(dp_up(rte_get_main_lcore()) == 0);
	linger_ms = 0;
	recovery_two_epochs(false);
	inject(result_f32(2, 9, 2, WIRE_F_RETX, 3)); /* asked for by nobody */
	inject(result_f32(2, 9, 2, 0, 3));           /* not an answer */
	poll_all();
	CU_ASSERT(collect(o, 8) == 0 && drops(WIRE_REASON_BAD_SENDER) == 1 &&
		  drops(WIRE_REASON_LATE) == 1);
	inject(contrib_f32(61, 2, 0, 11, 6, 0, 64, 64));
	inject(child2_sum(2, 7, 0, 1));
	poll_all();
	int n = collect(o, 8);

	CHECK(n == 1 && o[0].p.type == WIRE_TYPE_NACK_RESULT && o[0].p.epoch == 2 &&
		      o[0].p.round == 6 && o[0].p.chunk == 0 && o[0].p.count == 1 &&
		      o[0].p.sender == 1 && o[0].fl.dst_ip == PEER_IP(2),
	      "%d frames, type %d", n, n > 0 ? (int)o[0].p.type : -1);
	inject(child2_sum(2, 7, WIRE_F_RETX, 1)); /* asked already: not again */
	poll_all();
	CU_ASSERT(collect(o, 8) == 0 && ctr(DP_CTR_RECOVER_ASKED) == 1);
	inject(result_f32(2, 6, 2, WIRE_F_RETX | WIRE_F_ECHO, 5));
	poll_all();
	n = collect(o, 8);
	CHECK(recovered_both(o, n, 6, 5),
	      "the answer: %d frames", n);
	CU_ASSERT(ctr(DP_CTR_RECOVERED) == 1);
	dp_down();
}

/* The other end: a gateway that completed round 6 under epoch 1 (root of worker 11 and
 * child 2) answers under epoch 2, from epoch 1, its new parent's request for that RESULT
 * and worker 11's late CONTRIB of that round; once epoch 1 is retired, it cannot. */
static void
test_recovery_answers(void)
{
	static const uint16_t w11[] = { 11 };
	struct tdesc root = { 0, 0, 1, { 2 }, 0, 1, 16, { 1 } };
	struct tdesc leaf = { 0, 2, 0, { 0 }, 0, 1, 16, { 0 } };
	struct pkt nk = { WIRE_TYPE_NACK_RESULT, 0, 61, 2, 0, 2, 2, 0, 6, 0, WIRE_DTYPE_NONE,
			  1, PEER_IP(2) };
	static struct out o[8];

	linger_ms = 60000;
	CU_ASSERT_FATAL(dp_up(rte_get_main_lcore()) == 0);
	linger_ms = 0;
	CU_ASSERT_FATAL(install(mk_table(61, 1, 1, TABLE_DTYPE_FP32, 64, 64, 1, w11, 1, &root),
				"install") == 0);
	inject(contrib_f32(61, 1, 0, 11, 6, 0, 64, 64));
	inject(child2_sum(1, 6, 0, 1));
	poll_all();
	CU_ASSERT(collect(o, 8) == 2);
	CU_ASSERT_FATAL(install(mk_table(61, 2, 1, TABLE_DTYPE_FP32, 64, 64, 1, w11, 1, &leaf),
				"install") == 0);
	/* Room in the parent's answer budget: it starts empty and fills at 1 MB/s. */
	rte_delay_us_sleep(2000);
	inject(mk_pkt(&nk, NULL));
	poll_all();
	int n = collect(o, 8);

	CHECK(n == 1 && recovered_is(&o[0], 6, 2, -1) &&
		      o[0].p.flags == (WIRE_F_RETX | WIRE_F_ECHO) && o[0].p.sender == 1,
	      "%d frames, type %d epoch %u", n, n > 0 ? (int)o[0].p.type : -1,
	      n > 0 ? o[0].p.epoch : 0);
	/* Round 7 under epoch 2 goes up; then worker 11's late round 6 gets its RESULT. */
	inject(contrib_f32(61, 2, 0, 11, 7, 0, 64, 64));
	poll_all();
	CU_ASSERT(collect(o, 8) == 1 && o[0].p.type == WIRE_TYPE_CONTRIB && o[0].p.round == 7);
	inject(contrib_f32(61, 2, 0, 11, 6, 0, 64, 64));
	poll_all();
	n = collect(o, 8);
	CHECK(n == 1 && recovered_is(&o[0], 6, 11, -1), "late CONTRIB: %d frames", n);
	CU_ASSERT(ctr(DP_CTR_RECOVER_ANSWERED) == 2);
	dp_down();

	/* Without lingering epochs the RESULT is gone with epoch 1: only the neighbours
	 * could still have it, and the leaf asks its parent. */
	CU_ASSERT_FATAL(dp_up(rte_get_main_lcore()) == 0);
	CU_ASSERT_FATAL(install(mk_table(61, 1, 1, TABLE_DTYPE_FP32, 64, 64, 1, w11, 1, &root),
				"install") == 0);
	inject(contrib_f32(61, 1, 0, 11, 6, 0, 64, 64));
	inject(child2_sum(1, 6, 0, 1));
	poll_all();
	CU_ASSERT(collect(o, 8) == 2);
	CU_ASSERT_FATAL(install(mk_table(61, 2, 1, TABLE_DTYPE_FP32, 64, 64, 1, w11, 1, &leaf),
				"install") == 0);
	dp_housekeeping(&dp); /* epoch 1 drained: it retires at once */
	CU_ASSERT(atomic_load(&dp.state)->jobs[0].n_epochs == 1);
	inject(contrib_f32(61, 2, 0, 11, 7, 0, 64, 64));
	inject(contrib_f32(61, 2, 0, 11, 6, 0, 64, 64));
	poll_all();
	n = collect(o, 8);
	CHECK(n == 2 && o[1].p.type == WIRE_TYPE_NACK_RESULT && o[1].fl.dst_ip == PEER_IP(2) &&
		      o[1].p.round == 6, "%d frames", n);
	dp_down();
}

/* Whether o is gateway 1's NACK_RESULT under epoch 2 for chunk 0 of round `round`, to
 * 10.0.0.to. */
static bool
recovery_asked(const struct out *o, uint32_t round, uint16_t to)
{
	return o->p.type == WIRE_TYPE_NACK_RESULT && o->p.epoch == 2 && o->p.round == round &&
	       o->p.chunk == 0 && o->p.count == 1 && o->p.sender == 1 &&
	       o->fl.dst_ip == PEER_IP(to);
}

/* A re-plan moved chunk 0 here from a gateway that died after its local worker 11 had
 * round 6's RESULT and before child gateway 2's side had it: gateway 1 holds that RESULT
 * in no epoch, and is now root over worker 11 and child 2. Child 2 runs round 6 again,
 * worker 11 sends round 7: gateway 1 asks worker 11, whose answer (from the results it
 * keeps) completes the slot for everyone; round 7 is then summed as usual. A worker's
 * RESULT without RETX, from another address or unasked changes nothing. */
static void
test_recovery_asks_worker(void)
{
	static const uint16_t w11[] = { 11 };
	struct tdesc root = { 0, 0, 1, { 2 }, 0, 1, 16, { 1 } };
	static struct out o[8];

	CU_ASSERT_FATAL(dp_up(rte_get_main_lcore()) == 0);
	CU_ASSERT_FATAL(install(mk_table(61, 2, 1, TABLE_DTYPE_FP32, 64, 64, 1, w11, 1, &root),
				"install") == 0);
	inject(child2_sum(2, 6, 0, 1));
	poll_all();
	CU_ASSERT(collect(o, 8) == 0);
	inject(result_f32(2, 6, 11, WIRE_F_RETX | WIRE_F_ECHO, 5)); /* unasked */
	inject(result_f32(2, 6, 11, 0, 5));                          /* no answer */
	spoof = (typeof(spoof)){ true, PEER_IP(12), WORKER_PORT, 0 };
	inject(result_f32(2, 6, 11, WIRE_F_RETX | WIRE_F_ECHO, 5)); /* not from 11 */
	spoof.on = false;
	poll_all();
	CU_ASSERT(collect(o, 8) == 0 && drops(WIRE_REASON_LATE) == 1 &&
		  drops(WIRE_REASON_BAD_SENDER) == 2);
	inject(contrib_f32(61, 2, 0, 11, 7, 0, 64, 64)); /* worker 11 moved on */
	poll_all();
	int n = collect(o, 8);

	CHECK(n == 1 && recovery_asked(&o[0], 6, 11), "%d frames, type %d to %08x", n,
	      n > 0 ? (int)o[0].p.type : -1, n > 0 ? o[0].fl.dst_ip : 0);
	inject(contrib_f32_flags(61, 2, WIRE_F_RETX, 0, 11, 7, 0, 64, 64)); /* asked already */
	poll_all();
	CU_ASSERT(collect(o, 8) == 0 && ctr(DP_CTR_RECOVER_ASKED) == 1);
	inject(result_f32(2, 6, 11, WIRE_F_RETX | WIRE_F_ECHO, 5));
	poll_all();
	n = collect(o, 8);
	CHECK(recovered_both(o, n, 6, 5),
	      "the answer: %d frames", n);
	CU_ASSERT(ctr(DP_CTR_RECOVERED) == 1);
	inject(child2_sum(2, 7, 0, 1));
	inject(contrib_f32_flags(61, 2, WIRE_F_RETX, 0, 11, 7, 0, 64, 64)); /* completes it */
	poll_all();
	n = collect(o, 8);
	CHECK(recovered_both(o, n, 7, -1),
	      "round 7: %d frames", n);
	dp_down();
}

/* The same cut seen from a leaf: gateway 1, new under parent 2 with worker 11, holds
 * worker 11's round 7 (sent up) when the parent asks for round 6's RESULT. Gateway 1 has
 * it nowhere and no other neighbour: it asks worker 11, and the answer goes to the
 * parent. */
static void
test_recovery_leaf_asks_worker(void)
{
	static const uint16_t w11[] = { 11 };
	struct tdesc leaf = { 0, 2, 0, { 0 }, 0, 1, 16, { 0 } };
	struct pkt nk = { WIRE_TYPE_NACK_RESULT, 0, 61, 2, 0, 2, 2, 0, 6, 0, WIRE_DTYPE_NONE,
			  1, PEER_IP(2) };
	static struct out o[8];

	CU_ASSERT_FATAL(dp_up(rte_get_main_lcore()) == 0);
	CU_ASSERT_FATAL(install(mk_table(61, 2, 1, TABLE_DTYPE_FP32, 64, 64, 1, w11, 1, &leaf),
				"install") == 0);
	inject(contrib_f32(61, 2, 0, 11, 7, 0, 64, 64));
	poll_all();
	CU_ASSERT(collect(o, 8) == 1 && o[0].p.type == WIRE_TYPE_CONTRIB && o[0].p.round == 7);
	inject(mk_pkt(&nk, NULL));
	poll_all();
	int n = collect(o, 8);

	CHECK(n == 1 && recovery_asked(&o[0], 6, 11), "%d frames, type %d to %08x", n,
	      n > 0 ? (int)o[0].p.type : -1, n > 0 ? o[0].fl.dst_ip : 0);
	inject(result_f32(2, 6, 11, WIRE_F_RETX | WIRE_F_ECHO, 5));
	poll_all();
	n = collect(o, 8);
	CHECK(n == 1 && recovered_is(&o[0], 6, 2, 5) && (o[0].p.flags & WIRE_F_RETX) &&
		      o[0].p.sender == 1,
	      "the answer: %d frames, type %d", n, n > 0 ? (int)o[0].p.type : -1);
	dp_down();
}

/* The cut of test_recovery_asks_worker with worker 11's next round ahead of the slot: it
 * sends round 7 of chunk 1 only (its window), none of chunk 0. Child 2's round 6 of chunk
 * 0 then opens that slot for a round worker 11 is past (`open`), or finds it open in a
 * NACK_RESULT: gateway 1 asks worker 11, once, and its answer completes the slot. Worker
 * 11's CONTRIBs of round 6 are what it waits for otherwise: before the worker moved on,
 * the child's CONTRIB asks nobody. */
static void
recovery_worker_ahead(bool open)
{
	static const uint16_t w11[] = { 11 };
	struct tdesc root = { 0, 0, 1, { 2 }, 0, 2, 16, { 1 } };
	struct pkt nk = { WIRE_TYPE_NACK_RESULT, 0, 61, 2, 0, 2, 2, 0, 6, 0, WIRE_DTYPE_NONE,
			  1, PEER_IP(2) };
	static struct out o[8];
	int n;

	CU_ASSERT_FATAL(dp_up(rte_get_main_lcore()) == 0);
	CU_ASSERT_FATAL(install(mk_table(61, 2, 1, TABLE_DTYPE_FP32, 128, 64, 1, w11, 1, &root),
				"install") == 0);
	if (!open) {
		inject(child2_sum(2, 6, 0, 1));
		poll_all();
		CU_ASSERT(collect(o, 8) == 0);
	}
	inject(contrib_f32(61, 2, 0, 11, 7, 1, 128, 64));
	poll_all();
	CU_ASSERT(collect(o, 8) == 0);
	inject(open ? child2_sum(2, 6, 0, 1) : mk_pkt(&nk, NULL));
	poll_all();
	n = collect(o, 8);
	CHECK(n == 1 && recovery_asked(&o[0], 6, 11), "%d frames, type %d to %08x", n,
	      n > 0 ? (int)o[0].p.type : -1, n > 0 ? o[0].fl.dst_ip : 0);
	inject(mk_pkt(&nk, NULL)); /* asked already */
	poll_all();
	CU_ASSERT(collect(o, 8) == 0 && ctr(DP_CTR_RECOVER_ASKED) == 1);
	inject(result_f32(2, 6, 11, WIRE_F_RETX | WIRE_F_ECHO, 5));
	poll_all();
	n = collect(o, 8);
	CHECK(recovered_both(o, n, 6, 5),
	      "the answer: %d frames", n);
	CU_ASSERT(ctr(DP_CTR_RECOVERED) == 1);
	dp_down();
}

static void
test_recovery_worker_ahead_open(void)
{
	recovery_worker_ahead(true);
}

static void
test_recovery_worker_ahead_nack(void)
{
	recovery_worker_ahead(false);
}

/* Epochs lingering for result recovery keep the mbufs their slot pools may hold; an epoch
 * that needs them gets them: the drained lingering epochs retire first. */
static void
test_recovery_linger_room(void)
{
	static const uint16_t w11[] = { 11 };
	struct tdesc big = { 0, 0, 0, { 0 }, 0, 1, 4096, { 0 } };
	struct tdesc small = { 0, 0, 0, { 0 }, 0, 1, 1024, { 0 } };
	const struct dp_state *st;

	linger_ms = 60000;
	CU_ASSERT_FATAL(dp_up(rte_get_main_lcore()) == 0);
	linger_ms = 0;
	CU_ASSERT_FATAL(install(mk_table(62, 1, 1, TABLE_DTYPE_FP32, 64, 64, 1, w11, 1, &big),
				"install") == 0);
	CU_ASSERT_FATAL(install(mk_table(62, 2, 1, TABLE_DTYPE_FP32, 64, 64, 1, w11, 1, &small),
				"install") == 0);
	dp_housekeeping(&dp);
	st = atomic_load(&dp.state);
	CU_ASSERT(st->jobs[0].n_epochs == 2); /* epoch 1 lingers, drained */
	CHECK(dp.mbufs_committed + 2 * 4096 > dp.mbufs_budget, "%" PRIu64 " of %" PRIu64
	      " committed: the test needs a budget that cannot hold three epochs",
	      dp.mbufs_committed, dp.mbufs_budget);
	CU_ASSERT(install(mk_table(62, 3, 1, TABLE_DTYPE_FP32, 64, 64, 1, w11, 1, &big),
			  "install") == 0);
	st = atomic_load(&dp.state);
	CU_ASSERT(st->jobs[0].n_epochs == 2 && st->jobs[0].epochs[0]->epoch == 3 &&
		  st->jobs[0].epochs[1]->epoch == 2);
	dp_down();
}

/* A stream pacer's queue is halved while the job would not fit the packet budget (a
 * dataplane with few mbufs for many streams and links), to DP_MCAST_PACE_Q_MIN at least,
 * rather than the table being refused. */
static void
test_mcast_pace_queue_fits(void)
{
	CU_ASSERT_FATAL(dp_up(rte_get_main_lcore()) == 0);
	dp.mbufs_budget = dp.mbufs_committed + 1000;
	CU_ASSERT_FATAL(install(mcast_table(), "install") == 0);
	{
		json_t *st = dp_stats_json(&dp);
		json_t *jb = json_array_get(json_object_get(st, "jobs"), 0);
		json_int_t q = json_integer_value(json_object_get(jb, "mcast_pace_queue"));

		CHECK(q >= DP_MCAST_PACE_Q_MIN && q < DP_MCAST_PACE_Q && (q & (q - 1)) == 0,
		      "a pace queue of %lld", (long long)q);
		CU_ASSERT(json_integer_value(json_object_get(jb, "mbufs_held_max")) <= 1000);
		json_decref(st);
	}
	dp_down();
}

/* Fast retransmit: a partial sum sent later got its RESULT first, so the earlier one was
 * lost: it goes again at once, long before its timeout (here 20 ms before any sample). */
static void
test_fast_retransmit(void)
{
	const uint64_t el = 128;
	const uint32_t ce = 64;
	static const uint16_t w1[] = { 21 };
	struct tdesc td = { 0, 4, 0, { 0 }, 0, 2, 16, { 0 } };   /* leaf under gateway 4 */
	static struct out o[16];
	float res[64] = { 0 };
	struct pkt r = { WIRE_TYPE_RESULT, 0, 70, 1, 0, 4, 4, 1, 9, 1, WIRE_DTYPE_FP32, 64,
			 PEER_IP(4) };

	CU_ASSERT_FATAL(dp_up(rte_get_main_lcore()) == 0);
	CU_ASSERT_FATAL(install(mk_table(70, 1, 2, TABLE_DTYPE_FP32, el, ce, 1, w1, 1, &td),
				"install") == 0);
	inject(contrib_f32(70, 1, 0, 21, 9, 0, el, ce));
	poll_all();
	rte_delay_us_sleep(3000);
	inject(contrib_f32(70, 1, 0, 21, 9, 1, el, ce));
	poll_all();
	CU_ASSERT(collect(o, 16) == 2);         /* both partial sums up */
	inject(mk_pkt(&r, res));                /* chunk 1's RESULT, chunk 0's never */
	poll_all();
	dp_worker_poll(dp.lcores[0]);
	int n = collect(o, 16), retx = 0;

	for (int i = 0; i < n && i < 16; i++)
		retx += o[i].p.type == WIRE_TYPE_CONTRIB && o[i].p.chunk == 0 &&
			(o[i].p.flags & WIRE_F_RETX);
	/* At once, no 20 ms wait; into an idle link its second copy follows an eighth of a
	 * round trip later, which a slow poll (a busy or instrumented build) may reach. */
	CU_ASSERT(ctr(DP_CTR_RETX_FAST) == 1);
	CHECK(retx == 1 + (int)ctr(DP_CTR_RETX_COPY) && ctr(DP_CTR_RETX_COPY) <= 1,
	      "%d resends, %" PRIu64 " copies", retx, ctr(DP_CTR_RETX_COPY));
	CU_ASSERT(ctr(DP_CTR_RETRANSMITS) == (uint64_t)retx);
	dp_down();
}

/*
 * A loss among a round's last chunks: the partial sums of chunks 0 and 1 go up back to
 * back, chunk 1's RESULT comes after a round trip and chunk 0's never. No chunk was sent
 * long after chunk 0, so only the time tells: once the round trip chunk 1 took (plus an
 * eighth) has passed since chunk 0 went, chunk 0 is resent, long before its timer (which
 * would restart from chunk 1's RESULT and wait a whole timeout more).
 */
static void
test_tail_loss(void)
{
	const uint64_t el = 128;
	const uint32_t ce = 64;
	static const uint16_t w1[] = { 21 };
	struct tdesc td = { 0, 4, 0, { 0 }, 0, 2, 16, { 0 } };   /* leaf under gateway 4 */
	static struct out o[16];
	float res[64] = { 0 };
	struct pkt r = { WIRE_TYPE_RESULT, 0, 71, 1, 0, 4, 4, 1, 9, 1, WIRE_DTYPE_FP32, 64,
			 PEER_IP(4) };

	CU_ASSERT_FATAL(dp_up(rte_get_main_lcore()) == 0);
	CU_ASSERT_FATAL(install(mk_table(71, 1, 2, TABLE_DTYPE_FP32, el, ce, 1, w1, 1, &td),
				"install") == 0);
	uint64_t t0 = rte_get_timer_cycles();

	inject(contrib_f32(71, 1, 0, 21, 9, 0, el, ce));
	inject(contrib_f32(71, 1, 0, 21, 9, 1, el, ce));
	poll_all();
	CU_ASSERT(collect(o, 16) == 2);         /* both partial sums up; chunk 0 is lost */
	rte_delay_us_sleep(20000);
	inject(mk_pkt(&r, res));                /* chunk 1's RESULT */
	poll_all();
	/* The round trip chunk 1 took is at most t1 - t0; wait until a quarter more has
	 * passed since chunk 0 went (at most t0), then one poll must resend it. */
	uint64_t t1 = rte_get_timer_cycles();

	while (rte_get_timer_cycles() - t0 < (t1 - t0) * 5 / 4)
		rte_delay_us_sleep(500);
	dp_worker_poll(dp.lcores[0]);
	int n = collect(o, 16), retx = 0;

	for (int i = 0; i < n && i < 16; i++)
		retx += o[i].p.type == WIRE_TYPE_CONTRIB && o[i].p.chunk == 0 &&
			(o[i].p.flags & WIRE_F_RETX);
	CU_ASSERT(retx == 1);
	CU_ASSERT(ctr(DP_CTR_RETRANSMITS) == 1);
	dp_down();
}

/*
 * The last partial sum of a round lost: chunks 0 and 1 go up, chunk 0's RESULT comes and
 * chunk 1's never. No partial sum after chunk 1 can tell of its loss; once the round trip
 * chunk 0 took has passed since chunk 1 went, and the tree's RESULTs have stopped for an
 * eighth of it, chunk 1 is resent (a tail probe), where its timer would have restarted
 * from chunk 0's RESULT and waited a whole timeout more.
 */
static void
test_tail_probe(void)
{
	const uint64_t el = 128;
	const uint32_t ce = 64;
	static const uint16_t w1[] = { 21 };
	struct tdesc td = { 0, 4, 0, { 0 }, 0, 2, 16, { 0 } };   /* leaf under gateway 4 */
	static struct out o[16];
	float res[64] = { 0 };
	struct pkt r = { WIRE_TYPE_RESULT, 0, 72, 1, 0, 4, 4, 1, 9, 0, WIRE_DTYPE_FP32, 64,
			 PEER_IP(4) };

	CU_ASSERT_FATAL(dp_up(rte_get_main_lcore()) == 0);
	CU_ASSERT_FATAL(install(mk_table(72, 1, 2, TABLE_DTYPE_FP32, el, ce, 1, w1, 1, &td),
				"install") == 0);
	uint64_t t0 = rte_get_timer_cycles();

	inject(contrib_f32(72, 1, 0, 21, 9, 0, el, ce));
	inject(contrib_f32(72, 1, 0, 21, 9, 1, el, ce));
	poll_all();
	CU_ASSERT(collect(o, 16) == 2);         /* both partial sums up; chunk 1 is lost */
	rte_delay_us_sleep(20000);
	inject(mk_pkt(&r, res));                /* chunk 0's RESULT */
	poll_all();
	/* That round trip is at most t1 - t0: a quarter of it past t1, chunk 1 is overdue
	 * and the RESULTs have stopped long enough. */
	uint64_t t1 = rte_get_timer_cycles();

	while (rte_get_timer_cycles() - t1 < (t1 - t0) / 4)
		rte_delay_us_sleep(500);
	dp_worker_poll(dp.lcores[0]);
	int n = collect(o, 16), retx = 0;

	for (int i = 0; i < n && i < 16; i++)
		retx += o[i].p.type == WIRE_TYPE_CONTRIB && o[i].p.chunk == 1 &&
			(o[i].p.flags & WIRE_F_RETX);
	CU_ASSERT(retx == 1);
	CU_ASSERT(ctr(DP_CTR_RETRANSMITS) == 1 && ctr(DP_CTR_RETX_TAIL) == 1);
	CU_ASSERT(ctr(DP_CTR_RETX_FAST) == 0);
	dp_down();
}

/* Poll until pred(o[0 .. n - 1]) over everything sent so far holds, or 60 s: the frames
 * are appended to o (at most max); returns how many there are. */
static int
poll_until(struct out *o, int have, int max, bool (*pred)(const struct out *, int))
{
	uint64_t t0 = rte_get_timer_cycles();

	while (!pred(o, have) && rte_get_timer_cycles() - t0 < 60 * rte_get_timer_hz()) {
		dp_worker_poll(dp.lcores[0]);
		have += collect(o + have, max - have);
		if (have >= max)
			break;
	}
	return have;
}

/* The index in o[0 .. n - 1] of the first CONTRIB of chunk c with RETX (to the parent),
 * or -1. */
static int
find_retx(const struct out *o, int n, uint32_t c)
{
	for (int i = 0; i < n; i++)
		if (o[i].p.type == WIRE_TYPE_CONTRIB && o[i].p.chunk == c &&
		    (o[i].p.flags & WIRE_F_RETX))
			return i;
	return -1;
}

static bool
has_retx0(const struct out *o, int n)
{
	return find_retx(o, n, 0) >= 0;
}

/* First transmissions of partial sums of chunks 1 .. 63 in o[0 .. n - 1] (each once). */
static int
first_sums(const struct out *o, int n)
{
	int k = 0;

	for (int i = 0; i < n; i++)
		k += o[i].p.type == WIRE_TYPE_CONTRIB && !(o[i].p.flags & WIRE_F_RETX) &&
		     o[i].p.chunk >= 1 && o[i].p.chunk < 64;
	return k;
}

static bool
all_sums(const struct out *o, int n)
{
	return first_sums(o, n) == 63;
}

/*
 * Selective repeat at a leaf: the partial sum of chunk 0, the first of a round, is lost
 * on its way up. The chunks behind it keep going up (all 63 of the pool while chunk 0 is
 * missing), and once a later chunk's RESULT shows the loss chunk 0 is resent ahead of the
 * partial sums still waiting in the pacer. Its RESULT then reaches the worker bit-exact.
 */
static void
test_selective_leaf(void)
{
	const uint32_t ce = 256, nch = 64;          /* 1 KiB payloads, 1.1 KB frames */
	const uint64_t el = (uint64_t)ce * nch;
	static const uint16_t w1[] = { 21 };
	struct tdesc td = { 0, 4, 0, { 0 }, 0, nch, 64, { 0 } };   /* leaf under gateway 4 */
	static struct out o[512];
	struct table *tb = mk_table(80, 1, 2, TABLE_DTYPE_FP32, el, ce, 1, w1, 1, &td);
	float res[256];
	struct pkt r = { WIRE_TYPE_RESULT, 0, 80, 1, 0, 4, 4, 1, 2, 1, WIRE_DTYPE_FP32, 256,
			 PEER_IP(4) };
	int n, at, later = 0, bad = 0;

	tb->trees[0].rate_gbps = 0.0008;            /* 100 KB/s: a frame per 11 ms */
	CU_ASSERT_FATAL(dp_up(rte_get_main_lcore()) == 0);
	CU_ASSERT_FATAL(install(tb, "install") == 0);
	inject(contrib_f32(80, 1, 0, 21, 2, 0, el, ce));
	poll_all();
	CU_ASSERT_FATAL(collect(o, 512) == 1);      /* chunk 0 up: lost */
	rte_delay_us_sleep(3000);
	for (uint32_t c = 1; c < nch; c++)
		inject(contrib_f32(80, 1, 0, 21, 2, c, el, ce));
	poll_all();
	n = collect(o, 512);                        /* the burst allowance's worth */
	CU_ASSERT(n >= 10 && n <= 20);
	/* Chunk 1's RESULT: chunk 0 was lost. */
	for (int i = 0; i < 256; i++)
		res[i] = (float)(3 * i + 1);
	inject(mk_pkt(&r, res));
	int n0 = n;

	n = poll_until(o, n0, 512, has_retx0);
	at = find_retx(o, n, 0);
	CU_ASSERT_FATAL(at >= n0);
	/* Ahead of the queue: at most the frame the pacer was releasing went before it. */
	for (int i = n0; i < at; i++)
		later += o[i].p.type == WIRE_TYPE_CONTRIB && !(o[i].p.flags & WIRE_F_RETX);
	CU_ASSERT(later <= 1);
	CU_ASSERT(o[at].fl.dst_ip == PEER_IP(4) && o[at].p.contrib == 1 &&
		  out_f32(&o[at], 9) == val(21, 9));
	/* The RESULT of chunk 1 went to the worker as the parent sent it. */
	for (int i = 0; i < n; i++)
		if (o[i].p.type == WIRE_TYPE_RESULT && o[i].p.chunk == 1)
			for (uint32_t e = 0; e < 256; e++)
				bad += o[i].fl.dst_ip != PEER_IP(21) || out_f32(&o[i], e) != res[e];
	CU_ASSERT(bad == 0);
	/* Every other chunk of the pool went up while chunk 0 was missing. */
	n = poll_until(o, n, 512, all_sums);
	CU_ASSERT(first_sums(o, n) == 63);
	/* Chunk 0's RESULT ends it: to the worker, bit-exact; nothing more is resent for
	 * it, whatever else the timers still do. */
	r.chunk = 0;
	for (int i = 0; i < 256; i++)
		res[i] = -(float)i / 8;
	inject(mk_pkt(&r, res));
	poll_all();
	n = collect(o, 512);
	int got = 0;

	for (int i = 0; i < n; i++)
		if (o[i].p.type == WIRE_TYPE_RESULT && o[i].p.chunk == 0) {
			got++;
			for (uint32_t e = 0; e < 256; e++)
				bad += out_f32(&o[i], e) != res[e];
		}
	CU_ASSERT(got == 1 && bad == 0);
	rte_delay_us_sleep(100000);
	dp_worker_poll(dp.lcores[0]);
	n = collect(o, 512);
	CU_ASSERT(find_retx(o, n, 0) < 0);
	dp_down();
}

/* contrib_f32() with RETX: a contributor's retransmission. */
static struct rte_mbuf *
contrib_f32_retx(uint32_t job, uint16_t w, uint32_t round, uint32_t chunk, uint64_t elements,
		 uint32_t ce)
{
	return contrib_f32_flags(job, 1, WIRE_F_RETX, 0, w, round, chunk, elements, ce);
}

/* The root of a tree with local worker 11 and child gateway 2 (one worker below it). */
static struct table *
root_with_child(uint32_t job, uint64_t el, uint32_t ce, uint32_t nch)
{
	static const uint16_t w1[] = { 11 };
	struct tdesc td = { 0, 0, 1, { 2 }, 0, nch, 64, { 1 } };
	struct table *tb = mk_table(job, 1, 1, TABLE_DTYPE_FP32, el, ce, 1, w1, 1, &td);

	tb->trees[0].rate_gbps = 0.0008;            /* copies to the child: a frame per 11 ms */
	return tb;
}

/* A RESULT of chunk c to gateway 2 in o[0 .. n - 1], with the sum of 11 and 2 bit-exact:
 * its index, or -1. */
static int
find_result_to_child(const struct out *o, int n, uint32_t c, uint32_t ce, uint8_t flags)
{
	for (int i = 0; i < n; i++) {
		if (o[i].p.type != WIRE_TYPE_RESULT || o[i].p.chunk != c ||
		    o[i].fl.dst_ip != PEER_IP(2) || o[i].p.flags != flags)
			continue;
		for (uint32_t e = 0; e < ce; e++) {
			uint64_t x = (uint64_t)c * ce + e;

			if (out_f32(&o[i], e) != val(11, x) + val(2, x))
				return -2;
		}
		return i;
	}
	return -1;
}

static uint32_t want_chunk;
static uint8_t want_flags;

static bool
has_child_result(const struct out *o, int n)
{
	return find_result_to_child(o, n, want_chunk, 256, want_flags) != -1;
}

/* RESULT copies to the child in o[0 .. n - 1] other than of chunk c. */
static int
other_copies(const struct out *o, int n, uint32_t c)
{
	int k = 0;

	for (int i = 0; i < n; i++)
		k += o[i].p.type == WIRE_TYPE_RESULT && o[i].fl.dst_ip == PEER_IP(2) &&
		     o[i].p.chunk != c;
	return k;
}

/*
 * At the root: a child gateway's partial sum of chunk 0 is lost on its way up. The
 * later chunks complete meanwhile (their RESULTs reach the local worker at once and
 * queue in the pacer towards the child); when the child resends chunk 0 (RETX), its
 * RESULT goes to the child ahead of the queued copies, echoing the RETX. Then a RESULT lost on its way down:
 * the child's RETX partial sum gets the retained RESULT (RETX, ECHO), ahead of the queue
 * too. Every sum bit-exact.
 */
static void
test_lost_partial_and_result(void)
{
	const uint32_t ce = 256, nch = 48;
	const uint64_t el = (uint64_t)ce * nch;
	static struct out o[512];
	int n, at;

	CU_ASSERT_FATAL(dp_up(rte_get_main_lcore()) == 0);
	CU_ASSERT_FATAL(install(root_with_child(81, el, ce, nch), "install") == 0);
	for (uint32_t c = 0; c < nch; c++) {
		inject(contrib_f32(81, 1, 0, 11, 0, c, el, ce));
		if (c != 0)     /* the child's chunk 0 is lost */
			inject(contrib_f32(81, 1, 0, 2, 0, c, el, ce));
	}
	poll_all();
	n = collect(o, 512);
	/* Chunks 1 .. 47 complete: all their RESULTs to the worker, some to the child. */
	int to_worker = 0, bad = 0;

	for (int i = 0; i < n; i++)
		if (o[i].p.type == WIRE_TYPE_RESULT && o[i].fl.dst_ip == PEER_IP(11)) {
			to_worker += o[i].p.chunk != 0;
			bad += o[i].p.chunk == 0 ||
			       out_f32(&o[i], 7) != val(11, (uint64_t)o[i].p.chunk * ce + 7) +
							val(2, (uint64_t)o[i].p.chunk * ce + 7);
		}
	CU_ASSERT(to_worker == (int)nch - 1 && bad == 0);
	CU_ASSERT(other_copies(o, n, 0) < (int)nch - 10);   /* the rest wait in the pacer */
	/* The child's repair: chunk 0 with RETX. Its RESULT leaves ahead of the queue. */
	inject(contrib_f32_retx(81, 2, 0, 0, el, ce));
	int before = n;

	want_chunk = 0;
	want_flags = WIRE_F_ECHO;       /* it answers the child's RETX, and says so */
	n = poll_until(o, n, 512, has_child_result);
	at = find_result_to_child(o, n, 0, ce, WIRE_F_ECHO);
	CU_ASSERT_FATAL(at >= before);
	CU_ASSERT(other_copies(o + before, at - before, 0) <= 1);
	/* A RESULT lost on its way down: the copy of chunk 20 never reached the child, which
	 * resends its partial sum (RETX) and gets the retained RESULT, ahead of the queue. */
	inject(contrib_f32_retx(81, 2, 0, 20, el, ce));
	before = n;
	want_chunk = 20;
	want_flags = WIRE_F_RETX | WIRE_F_ECHO;
	n = poll_until(o, n, 512, has_child_result);
	at = find_result_to_child(o, n, 20, ce, WIRE_F_RETX | WIRE_F_ECHO);
	CU_ASSERT_FATAL(at >= before);
	CU_ASSERT(other_copies(o + before, at - before, 20) <= 1);
	CU_ASSERT(ctr(DP_CTR_PACED) > 0);
	dp_down();
}

/* Control requests: malformed ones get an error and change nothing. */
static void
test_control(void)
{
	struct tdesc td = { 0, 0, 0, { 0 }, 0, 4, 16, { 0 } };

	CU_ASSERT_FATAL(dp_up(rte_get_main_lcore()) == 0);
	CU_ASSERT(call_errno("{\"version\":1,\"id\":1,\"op\":\"ping\"}") == 0);
	CU_ASSERT(call_errno("{\"version\":2,\"id\":1,\"op\":\"ping\"}") == EPROTONOSUPPORT);
	CU_ASSERT(call_errno("{\"version\":1,\"id\":1,\"op\":\"fly\"}") == EOPNOTSUPP);
	CU_ASSERT(call_errno("{\"version\":1,\"op\":\"ping\"}") == EINVAL);
	CU_ASSERT(call_errno("{\"version\":1,\"id\":1,\"op\":\"ping\",\"x\":1}") == EINVAL);
	CU_ASSERT(call_errno("{\"version\":1,\"id\":1,\"op\":\"install\"}") == EINVAL);
	CU_ASSERT(call_errno("{\"version\":1,\"id\":1,\"op\":\"install\",\"table\":{}}") == EINVAL);
	CU_ASSERT(call_errno("{\"version\":1,\"id\":1,\"op\":\"activate\",\"job\":5,\"epoch\":1}") ==
		  ENOENT);
	CU_ASSERT(call_errno("{\"version\":1,\"id\":1,\"op\":\"activate\",\"job\":5}") == EINVAL);
	CU_ASSERT(call_errno("{\"version\":1,\"id\":1,\"op\":\"activate\",\"table\":{}}") == EINVAL);
	CU_ASSERT(call_errno("{\"version\":1,\"id\":1,\"op\":\"prepare\",\"job\":5,"
			     "\"epoch\":1}") == EINVAL);
	CU_ASSERT(call_errno("{\"version\":1,\"id\":1,\"op\":\"remove\",\"job\":5}") == ENOENT);
	CU_ASSERT(call_errno("{\"version\":1,\"id\":1,\"op\":\"dump\",\"job\":-1}") == EINVAL);
	/* A table for another gateway address, and chunks too big for the MTU. */
	struct table *tb = mk_table(5, 1, 1, TABLE_DTYPE_FP32, 256, 64, 3, W3, 1, &td);

	tb->gw.ipv4 = PEER_IP(9);
	CU_ASSERT(install(tb, "install") == EINVAL);
	tb = mk_table(5, 1, 1, TABLE_DTYPE_FP32, 8192, 2048, 3, W3, 1, &td);
	CU_ASSERT(install(tb, "install") == E2BIG);
	/* Slot pools beyond the mbuf budget. */
	td.slots = 4096;
	tb = mk_table(5, 1, 1, TABLE_DTYPE_FP32, 256, 64, 3, W3, 1, &td);
	tb->trees[0].slots = 4096;
	tb->limits.max_slots = 4096;
	td.slots = 16;
	/* 4096 slots fit the budget of 16384 mbufs less what queues and caches hold. */
	CU_ASSERT(install(tb, "prepare") == 0);
	CU_ASSERT(dp.mbufs_committed == 2 * 4096); /* two packets per slot at most */
	/* Nothing live yet: prepared only. */
	CU_ASSERT(atomic_load(&dp.state) == NULL);
	CU_ASSERT(call_errno("{\"version\":1,\"id\":1,\"op\":\"activate\",\"job\":5,\"epoch\":1}") ==
		  0);
	CU_ASSERT(install(mk_table(5, 1, 1, TABLE_DTYPE_FP32, 256, 64, 3, W3, 1, &td), "install") ==
		  EEXIST);
	CU_ASSERT(install(mk_table(5, 0, 1, TABLE_DTYPE_FP32, 256, 64, 3, W3, 1, &td), "install") ==
		  ESTALE);
	json_t *d = call("{\"version\":1,\"id\":1,\"op\":\"dump\"}");

	CU_ASSERT(json_array_size(json_object_get(d, "tables")) == 1);
	json_decref(d);
	/* Epoch 2 goes live, epoch 1 drains (no open slots) and is freed by housekeeping. */
	CU_ASSERT(install(mk_table(5, 2, 1, TABLE_DTYPE_FP32, 256, 64, 3, W3, 1, &td), "install") ==
		  0);
	const struct dp_state *st = atomic_load(&dp.state);

	CU_ASSERT(st->n_jobs == 1 && st->jobs[0].n_epochs == 2);
	dp_housekeeping(&dp);
	st = atomic_load(&dp.state);
	CU_ASSERT(st->n_jobs == 1 && st->jobs[0].n_epochs == 1 && st->jobs[0].epochs[0]->epoch == 2);
	CU_ASSERT(dp.mbufs_committed == 2 * 16);
	json_t *s = call("{\"version\":1,\"id\":1,\"op\":\"stats\"}");

	CU_ASSERT(json_is_array(json_object_get(s, "lcores")));
	CU_ASSERT(json_integer_value(json_object_get(json_object_get(s, "memory"),
						     "mbufs_committed")) == 2 * 16);
	json_decref(s);
	CU_ASSERT(call_errno("{\"version\":1,\"id\":1,\"op\":\"remove\",\"job\":5}") == 0);
	dp_housekeeping(&dp);
	st = atomic_load(&dp.state);
	CU_ASSERT(st != NULL && st->n_jobs == 0);
	CU_ASSERT(dp.mbufs_committed == 0);
	dp_down();
}

/* The real worker loop on lcore 1; the main thread swaps epochs mid-round. */
static void
wait_rx(uint64_t n)
{
	uint64_t t = rte_get_timer_cycles() + 5 * rte_get_timer_hz();

	while (__atomic_load_n(&dp.lcores[0]->ctr[DP_CTR_RX_PACKETS], __ATOMIC_RELAXED) < n &&
	       rte_get_timer_cycles() < t)
		rte_delay_us_sleep(100);
}

static void
test_epoch_swap_under_traffic(void)
{
	const uint64_t el = 64 * 64;
	const uint32_t ce = 64, nch = 64;
	struct tdesc td = { 0, 0, 0, { 0 }, 0, nch, 64, { 0 } };
	static struct out o[1024];
	unsigned int worker = rte_get_next_lcore(rte_get_main_lcore(), 1, 0);
	uint64_t sent = 0;

	if (worker >= RTE_MAX_LCORE) {
		fprintf(stderr, "epoch swap: needs a second lcore, skipped\n");
		return;
	}
	CU_ASSERT_FATAL(dp_up(worker) == 0);
	CU_ASSERT_FATAL(install(mk_table(12, 1, 1, TABLE_DTYPE_FP32, el, ce, 3, W3, 1, &td),
				"install") == 0);
	CU_ASSERT_FATAL(rte_eal_remote_launch(dp_worker_main, dp.lcores[0], worker) == 0);
	/* Round 0 under epoch 1: two of three workers. */
	for (uint32_t c = 0; c < nch; c++) {
		inject(contrib_f32(12, 1, 0, 11, 0, c, el, ce));
		inject(contrib_f32(12, 1, 0, 12, 0, c, el, ce));
		sent += 2;
	}
	wait_rx(sent);
	/* Epoch 2 goes live while round 0 is open under epoch 1. */
	CU_ASSERT(install(mk_table(12, 2, 1, TABLE_DTYPE_FP32, el, ce, 3, W3, 1, &td), "install") ==
		  0);
	/* The third worker finishes round 0 under epoch 1 (draining); a round-1 chunk under
	 * epoch 1 opens nothing (stale); round 1 runs under epoch 2. */
	for (uint32_t c = 0; c < nch; c++) {
		inject(contrib_f32(12, 1, 0, 13, 0, c, el, ce));
		sent++;
	}
	inject(contrib_f32(12, 1, 0, 11, 1, 0, el, ce));
	sent++;
	for (int w = 0; w < 3; w++)
		for (uint32_t c = 0; c < nch; c++) {
			inject(contrib_f32(12, 2, 0, W3[w], 1, c, el, ce));
			sent++;
		}
	wait_rx(sent);
	rte_delay_us_sleep(20000);
	atomic_store(&dp.stop, true);
	rte_eal_wait_lcore(worker);
	int n = collect(o, 1024), bad = 0, per_epoch[3] = { 0 };

	CU_ASSERT(n == 2 * 3 * (int)nch);
	for (int i = 0; i < n && i < 1024; i++) {
		uint32_t c = o[i].p.chunk;

		if (o[i].p.epoch <= 2)
			per_epoch[o[i].p.epoch]++;
		bad += (o[i].p.round == 0) != (o[i].p.epoch == 1);
		for (uint32_t e = 0; e < o[i].p.count; e++) {
			uint64_t x = (uint64_t)c * ce + e;

			bad += out_f32(&o[i], e) != val(11, x) + val(12, x) + val(13, x);
		}
	}
	CU_ASSERT(bad == 0);
	CU_ASSERT(per_epoch[1] == 3 * (int)nch && per_epoch[2] == 3 * (int)nch);
	CU_ASSERT(drops(WIRE_REASON_EPOCH_STALE) == 1);
	/* Epoch 1 has drained: housekeeping retires it. */
	dp_housekeeping(&dp);
	const struct dp_state *st = atomic_load(&dp.state);

	CU_ASSERT(st->jobs[0].n_epochs == 1 && st->jobs[0].epochs[0]->epoch == 2);
	dp_down();
}

/* Remove EAL's runtime directory of this process (its telemetry socket and config). */
static void
remove_dir(const char *path)
{
	DIR *d = opendir(path);
	struct dirent *e;
	char f[PATH_MAX];

	while (d != NULL && (e = readdir(d)) != NULL) {
		if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
			continue;
		snprintf(f, sizeof(f), "%s/%s", path, e->d_name);
		unlink(f);
	}
	if (d != NULL)
		closedir(d);
	rmdir(path);
}

int
main(int argc, char **argv)
{
	char prefix[64];
	char *eal[] = { argv[0], "--no-huge", "-m", "512", "--no-pci", "--no-shconf", prefix,
			"-l", "0-1", "--log-level=lib.eal:error",
			"--log-level=pmd:error", NULL };
	unsigned int failures;

	(void)argc;
	snprintf(prefix, sizeof(prefix), "--file-prefix=test_dp_%d", getpid());
	if (sysconf(_SC_NPROCESSORS_ONLN) < 2)
		eal[8] = "0";
	if (rte_eal_init((int)(sizeof(eal) / sizeof(eal[0])) - 1, eal) < 0) {
		fprintf(stderr, "test_dataplane: EAL init failed\n");
		return 1;
	}
	rte_log_set_level_pattern("georeduce.*", RTE_LOG_WARNING);
	tpool = rte_pktmbuf_pool_create("t_pool", 32768, 256, 0, RTE_MBUF_DEFAULT_BUF_SIZE,
					SOCKET_ID_ANY);
	if (tpool == NULL || CU_initialize_registry() != CUE_SUCCESS)
		return 1;
	CU_pSuite s = CU_add_suite("dataplane", NULL, NULL);

	CU_add_test(s, "root with three workers", test_root_three_workers);
	CU_add_test(s, "interior gateway and two trees", test_interior_and_two_trees);
	CU_add_test(s, "512 chunks in flight, shuffled, duplicated", test_many_in_flight_shuffled);
	CU_add_test(s, "fp16", test_fp16);
	CU_add_test(s, "mxint8: decoded in arrival order, encoded once", test_mxint8);
	CU_add_test(s, "mxfp8: decoded in arrival order, encoded once", test_mxfp8);
	CU_add_test(s, "mxfp4: decoded in arrival order, encoded once", test_mxfp4);
	CU_add_test(s, "MX with a lan_dtype: workers in fp32 or bf16, the sum encoded once",
		    test_mx_lan);
	CU_add_test(s, "bf16", test_bf16);
	CU_add_test(s, "IEEE sums in arrival order, no FTZ/DAZ", test_ieee_sums);
	CU_add_test(s, "bad packets by reason", test_bad_packets);
	CU_add_test(s, "a tree of the site's other gateway: wrong_shard", test_wrong_shard);
	CU_add_test(s, "ARP, ICMP, neighbour resolution", test_arp_icmp);
	CU_add_test(s, "a worker that ARPed or sent is a known neighbour", test_neighbours_known);
	CU_add_test(s, "retransmissions answered", test_retx_answers);
	CU_add_test(s, "hostile senders: addresses, ports, NACK ranges and budgets",
		    test_hostile_senders);
	CU_add_test(s, "a protected link: forged, altered, replayed, rotated keys",
		    test_protected_link);
	CU_add_test(s, "PROTOCOL.md sealed example", test_sealed_example);
	CU_add_test(s, "a protected link under duplication", test_protected_link_duplicates);
	CU_add_test(s, "sealed frames leave in sequence, paced or not", test_sealed_pacing_order);
	CU_add_test(s, "partial reduce", test_partial_reduce);
	CU_add_test(s, "partial reduce: sets of child gateways", test_partial_reduce_child_sets);
	CU_add_test(s, "a child gateway's contrib counts the workers below it",
		    test_child_contrib_count);
	CU_add_test(s, "a slot moved on answers for its previous chunk", test_slot_moved_on);
	CU_add_test(s, "jumbo frames, unaligned payloads, segments", test_jumbo_misaligned);
	CU_add_test(s, "routes", test_routes);
	CU_add_test(s, "fault injection", test_faults);
	CU_add_test(s, "fault injection: bursty loss from a seed", test_faults_bursty);
	CU_add_test(s, "retransmission to the parent", test_retransmit_up);
	CU_add_test(s, "pacing at the planned rate", test_pacing);
	CU_add_test(s, "a draining epoch waits for its pacers", test_retire_after_pacers);
	CU_add_test(s, "a RESULT's copies share one payload segment", test_fanout_shared_segment);
	CU_add_test(s, "fast retransmit", test_fast_retransmit);
	CU_add_test(s, "a loss among a round's last chunks", test_tail_loss);
	CU_add_test(s, "the last partial sum of a round lost: a tail probe", test_tail_probe);
	CU_add_test(s, "selective repeat: a lost partial sum does not stop the pool",
		    test_selective_leaf);
	CU_add_test(s, "a lost partial sum up and a lost RESULT down, repaired ahead of the queue",
		    test_lost_partial_and_result);
	CU_add_test(s, "previous round's RESULT for a child", test_prev_round_child);
	CU_add_test(s, "result recovery: an older epoch's RESULT completes the slot",
		    test_recovery_from_older_epoch);
	CU_add_test(s, "result recovery: a RESULT held nowhere here asked of the child",
		    test_recovery_asks_child);
	CU_add_test(s, "result recovery: answers from an older epoch, and once retired none",
		    test_recovery_answers);
	CU_add_test(s, "result recovery: a RESULT only a moved-on worker has, asked of it",
		    test_recovery_asks_worker);
	CU_add_test(s, "result recovery: a leaf asks its moved-on worker for its parent",
		    test_recovery_leaf_asks_worker);
	CU_add_test(s, "result recovery: a child opens a slot its worker has moved past",
		    test_recovery_worker_ahead_open);
	CU_add_test(s, "result recovery: a NACK_RESULT finds a slot its worker moved past",
		    test_recovery_worker_ahead_nack);
	CU_add_test(s, "result recovery: lingering epochs give way to a new one",
		    test_recovery_linger_room);
	CU_add_test(s, "control requests", test_control);
	CU_add_test(s, "epoch swap under traffic", test_epoch_swap_under_traffic);
	CU_add_test(s, "selective multicast: copies, drops, source", test_mcast);
	CU_add_test(s, "selective multicast: loss recovery, answers and their budget",
		    test_mcast_recovery);
	CU_add_test(s, "selective multicast: a full table of requests upstream, re-asking",
		    test_mcast_ask_full);
	CU_add_test(s, "selective multicast: pace queues halved to fit the packet budget",
		    test_mcast_pace_queue_fits);
	CU_basic_set_mode(CU_BRM_VERBOSE);
	CU_basic_run_tests();
	failures = CU_get_number_of_failures();
	CU_cleanup_registry();
	rte_mempool_free(tpool);
	snprintf(prefix, sizeof(prefix), "%s", rte_eal_get_runtime_dir());
	rte_eal_cleanup();
	remove_dir(prefix);
	return failures > 255 ? 255 : (int)failures;
}
