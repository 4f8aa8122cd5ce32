/* SPDX-License-Identifier: BSD-3-Clause
 *
 * The fixture of the dataplane's EAL tests (dp_fixture.h): EAL with --no-huge, a file
 * prefix of the executable's own (several run at once under `meson test`) and the pool of
 * the test's frames; per test a fresh dataplane (dataplane/fastpath, dataplane/slowpath)
 * on a fresh net_ring port: crafted frames in, the frames it sends out decoded. The tables,
 * frame builders and checks more than one area's tests use are here too.
 *
 * The EAL main lcore runs the tests; most make it play the worker lcore (dp_worker_poll),
 * so every step is deterministic. No hugepages, no NIC.
 */
#include <dirent.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <CUnit/Basic.h>
#include <jansson.h>
#include <rte_cycles.h>
#include <rte_eal.h>
#include <rte_eth_ring.h>
#include <rte_log.h>
#include <rte_mbuf.h>
#include <rte_mempool.h>
#include <rte_ring.h>

#include "dp_fixture.h"
#include "fastpath/seal.h"
#include "slowpath/slowpath.h"
#include "table.h"
#include "wire.h"

#define RING_SIZE 8192

struct dp dp;
static struct rte_ring *rx_ring;
struct rte_ring *tx_ring;
struct rte_mempool *tpool;
static int n_setups;
bool jumbo;                /* dp_up() with MTU 9000 */
struct dp_fault faults[2]; /* dp_up() with these faults on port 0 */
unsigned int n_routes;     /* dp_up() with these routes */
struct dp_route routes[4];
const char *crypto_dev = ""; /* dp_up() with this --crypto */
bool crypto_ops;             /* ... and --crypto-ops */
struct rte_ether_addr gw_mac;
const uint16_t W3[3] = {11, 12, 13};

/* --- Harness -------------------------------------------------------------------------------- */

/* --linger-ms of the next dp_up(): drained epochs retire at once but in the tests of
 * result recovery, which keep them. */
uint32_t linger_ms;
/* --nat-addr of port 0 at the next dp_up(); 0: none. */
uint32_t nat_ipv4;
uint64_t fault_seed;              /* --fault-seed of the next dp_up() */
uint8_t idle_mode = DP_IDLE_INTR; /* --idle of the next dp_up() */

/* A fresh dataplane on a fresh ring port: lcore is the lcore that plays the worker. */
int
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
	cfg.prm.idle_mode = idle_mode;
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
	cfg.addr[0].nat_ipv4 = nat_ipv4;
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
	cfg.crypto_ops = crypto_ops;
	if (dp_setup(&dp, &cfg, err, sizeof(err)) != 0) {
		fprintf(stderr, "dp_setup: %s\n", err);
		return -1;
	}
	gw_mac = dp.ports[0].mac;
	return 0;
}

void
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

void
poll_all(void)
{
	uint64_t t0 = rte_rdtsc(), hz = rte_get_tsc_hz();

	/* Until nothing comes, and the cryptodev gave back every operation (late ones come
	 * back on later polls; a minute at most on a busy machine). */
	while (dp_worker_poll(dp.lcores[0]) != 0 ||
	       (dp_crypto_pending(dp.lcores[0]) != 0 && rte_rdtsc() - t0 < 60 * hz))
		;
}

uint64_t
drops(enum wire_reason r)
{
	return dp.lcores[0]->drops[r];
}

uint64_t
ctr(enum dp_ctr c)
{
	return dp.lcores[0]->ctr[c];
}

/* mk_table() of a job with contributor sets of one block: bl[i] lists the workers below the
 * children of tree i (NULL: none, and no sets). */
struct table *
mk_table_sets(uint32_t job, uint32_t epoch, uint16_t gw_id, enum table_dtype dt, uint64_t elements,
	      uint32_t chunk_elements, int n_workers, const uint16_t *workers, int n_trees,
	      const struct tdesc *td, const struct tbelow *bl)
{
	int nc[8] = {0}, nw[8] = {0}, nb[8] = {0};

	for (int i = 0; i < n_trees; i++) {
		nc[i] = td[i].n_children;
		nw[i] = n_workers;
		nb[i] = bl != NULL ? bl[i].n : 0;
	}
	struct table *tb = table_create_full(n_trees, nc, nw, nb, 0);

	tb->job = job;
	tb->epoch = epoch;
	tb->gw = (struct table_gw){gw_id, GW_IP, WIRE_PORT_BASE_DEFAULT, WIRE_PORT_COUNT_DEFAULT};
	tb->dtype = dt;
	tb->elements = elements;
	tb->chunk_elements = chunk_elements;
	tb->limits = (struct table_limits){8, 4, 16, 4096};
	tb->n_trees = n_trees;
	for (int i = 0; i < n_trees; i++) {
		struct table_tree *t = &tb->trees[i];

		t->id = td[i].id;
		t->has_parent = td[i].parent != 0;
		if (t->has_parent)
			t->parent = (struct table_gw){
				(uint16_t)td[i].parent, PEER_IP((uint32_t)td[i].parent),
				WIRE_PORT_BASE_DEFAULT, WIRE_PORT_COUNT_DEFAULT};
		t->role = !t->has_parent       ? TABLE_ROLE_ROOT :
			  td[i].n_children > 0 ? TABLE_ROLE_INTERIOR :
						 TABLE_ROLE_LEAF;
		t->subtree_workers = (uint32_t)n_workers;
		for (int c = 0; c < td[i].n_children; c++) {
			t->children[c] =
				(struct table_gw){td[i].children[c], PEER_IP(td[i].children[c]),
						  WIRE_PORT_BASE_DEFAULT, WIRE_PORT_COUNT_DEFAULT};
			t->child_workers[c] = bl != NULL ? 0 : td[i].below[c];
			for (int k = 0; k < nb[i]; k++)
				t->child_workers[c] += bl[i].child[k] == c;
			t->subtree_workers += t->child_workers[c];
		}
		for (int w = 0; w < n_workers; w++)
			t->workers[w] =
				(struct table_worker){workers[w], PEER_IP(workers[w]), WORKER_PORT};
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

struct table *
mk_stream_table(uint32_t job, uint64_t elements, int n_streams)
{
	struct table *tb = table_create_streams(0, NULL, NULL, n_streams);

	if (tb == NULL)
		abort();
	tb->job = job;
	tb->epoch = 1;
	tb->gw = (struct table_gw){1, GW_IP, WIRE_PORT_BASE_DEFAULT, WIRE_PORT_COUNT_DEFAULT};
	tb->dtype = TABLE_DTYPE_FP32;
	tb->elements = elements;
	tb->chunk_elements = 64;
	tb->limits = (struct table_limits){8, 4, 16, 4096};
	return tb;
}

struct table *
mk_table(uint32_t job, uint32_t epoch, uint16_t gw_id, enum table_dtype dt, uint64_t elements,
	 uint32_t chunk_elements, int n_workers, const uint16_t *workers, int n_trees,
	 const struct tdesc *td)
{
	return mk_table_sets(job, epoch, gw_id, dt, elements, chunk_elements, n_workers, workers,
			     n_trees, td, NULL);
}

/* Install a table through the control handler, as the socket would; returns errno. */
int
install(struct table *tb, const char *op)
{
	return install_membership(tb, op, 0);
}

int
install_membership(struct table *tb, const char *op, uint32_t membership)
{
	json_t *req = json_pack("{s:i,s:i,s:s,s:o}", "version", 1, "id", 9, "op", op, "table",
				table_to_json(tb));

	if (membership != 0)
		json_object_set_new(req, "membership", json_integer(membership));
	json_t *rep = dp_ctl_handle(&dp, req);
	int e = json_is_true(json_object_get(rep, "ok")) ?
			0 :
			(int)json_integer_value(json_object_get(rep, "errno"));

	if (e != 0 && getenv("TEST_VERBOSE") != NULL)
		fprintf(stderr, "install: %s\n", json_string_value(json_object_get(rep, "error")));
	json_decref(req);
	json_decref(rep);
	table_free(tb);
	return e;
}

/* Room for len more bytes at the end of m (test mbufs are large enough). */
void *
must_append(struct rte_mbuf *m, size_t len)
{
	void *p = m == NULL ? NULL : rte_pktmbuf_append(m, (uint16_t)len);

	if (p == NULL)
		abort();
	return p;
}

/* While on, mk_pkt_set() sends from ip:sport (whatever the sender id) to dport (0: the
 * chunk's port). */
struct dp_spoof spoof;

/* A frame from p.src_ip to the gateway with contributor set cset (k blocks; k = 0: none)
 * and payload pl (count elements of the dtype). */
struct rte_mbuf *
mk_pkt_set(const struct pkt *p, unsigned int k, const uint8_t *cset, const void *pl)
{
	struct wire_pkt w = {
		.type = p->type,
		.flags = p->flags,
		.dtype = p->dtype,
		.cset_blocks = (uint8_t)k,
		.job = p->job,
		.epoch = p->epoch,
		.tree = p->tree,
		.sender = p->sender,
		.origin = p->origin,
		.contrib = p->contrib,
		.round = p->round,
		.chunk = p->chunk,
		.count = p->count,
	};
	size_t len = wire_pkt_len(&w);
	struct rte_mbuf *m = rte_pktmbuf_alloc(tpool);
	uint8_t *f = must_append(m, WIRE_FRAME_HDR_OFF + len);
	struct wire_flow fl = {
		.src_ip = p->src_ip,
		.dst_ip = GW_IP,
		/* Gateways have ids below 10 and send from their range, workers from theirs. */
		.src_port = (p->src_ip & 0xff) >= 10 ?
				    WORKER_PORT :
				    wire_udp_port(WIRE_PORT_BASE_DEFAULT, WIRE_PORT_COUNT_DEFAULT,
						  p->chunk),
		.dst_port =
			wire_udp_port(WIRE_PORT_BASE_DEFAULT, WIRE_PORT_COUNT_DEFAULT, p->chunk),
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
	CU_ASSERT_FATAL(
		wire_frame_build(f, WIRE_FRAME_HDR_OFF + len, &fl, len, p->sender % 2 == 0) == 0);
	return m;
}

struct rte_mbuf *
mk_pkt(const struct pkt *p, const void *pl)
{
	return mk_pkt_set(p, 0, NULL, pl);
}

void
inject(struct rte_mbuf *m)
{
	CU_ASSERT_FATAL(rte_ring_enqueue(rx_ring, m) == 0);
}

/* Take every frame sent; returns how many (up to max), decoded into o[]. */
int
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

float
out_f32(const struct out *o, uint32_t i)
{
	float v;

	memcpy(&v, o->frame + WIRE_FRAME_PAYLOAD_OFF + 4 * i, 4);
	return v;
}

/* Worker w's value for element e of the tensor: small integers, exact in every dtype. */
float
val(uint16_t w, uint64_t e)
{
	return (float)((w * 7 + e) % 61);
}

uint16_t
chunk_len(uint64_t elements, uint32_t ce, uint32_t c)
{
	return (uint16_t)wire_chunk_len(elements, ce, c);
}

/* CONTRIB of worker w (at 10.0.0.w) for one chunk of an fp32 tensor, with flags. */
struct rte_mbuf *
contrib_f32_flags(uint32_t job, uint32_t epoch, uint8_t flags, uint16_t tree, uint16_t w,
		  uint32_t round, uint32_t chunk, uint64_t elements, uint32_t ce)
{
	float pl[4096];
	uint16_t n = chunk_len(elements, ce, chunk);
	struct pkt p = {WIRE_TYPE_CONTRIB, flags, job,       epoch, tree, w, w, 1, round, chunk,
			WIRE_DTYPE_FP32,   n,     PEER_IP(w)};

	for (uint16_t i = 0; i < n; i++)
		pl[i] = val(w, (uint64_t)chunk * ce + i);
	return mk_pkt(&p, pl);
}

/* ... a first transmission. */
struct rte_mbuf *
contrib_f32(uint32_t job, uint32_t epoch, uint16_t tree, uint16_t w, uint32_t round, uint32_t chunk,
	    uint64_t elements, uint32_t ce)
{
	return contrib_f32_flags(job, epoch, 0, tree, w, round, chunk, elements, ce);
}

/* contrib_f32() with RETX: a contributor's retransmission. */
struct rte_mbuf *
contrib_f32_retx(uint32_t job, uint16_t w, uint32_t round, uint32_t chunk, uint64_t elements,
		 uint32_t ce)
{
	return contrib_f32_flags(job, 1, WIRE_F_RETX, 0, w, round, chunk, elements, ce);
}

json_t *
call(const char *text)
{
	json_error_t je;
	json_t *req = json_loads(text, 0, &je), *rep;

	CU_ASSERT_FATAL(req != NULL);
	rep = dp_ctl_handle(&dp, req);
	json_decref(req);
	return rep;
}

int
call_errno(const char *text)
{
	json_t *rep = call(text);
	int e = json_is_true(json_object_get(rep, "ok")) ?
			0 :
			(int)json_integer_value(json_object_get(rep, "errno"));

	CU_ASSERT(e == 0 || json_is_string(json_object_get(rep, "error")));
	json_decref(rep);
	return e;
}

/* The first job's entry in `links` of stats st for (kind "tree" or "stream", its id n,
 * dir, gateway id); NULL if there is none. An entry without the kind's key is of the
 * other kind (json_integer_value() of the missing key would be 0, a valid id). */
json_t *
link_entry(json_t *st, const char *kind, int n, const char *dir, int id)
{
	json_t *lk;
	size_t i;

	json_array_foreach (
		json_object_get(json_array_get(json_object_get(st, "jobs"), 0), "links"), i, lk)
		if (json_is_integer(json_object_get(lk, kind)) &&
		    json_integer_value(json_object_get(lk, kind)) == n &&
		    json_integer_value(json_object_get(lk, "id")) == id &&
		    strcmp(json_string_value(json_object_get(lk, "dir")), dir) == 0)
			return lk;
	return NULL;
}

/* Counter `key` of the first job's stats entry for (tree, dir, gateway id) in `links`;
 * -1 if there is none. */
json_int_t
link_ctr(int tree, const char *dir, int id, const char *key)
{
	json_t *st = dp_stats_json(&dp), *lk = link_entry(st, "tree", tree, dir, id);
	json_int_t v = lk != NULL ? json_integer_value(json_object_get(lk, key)) : -1;

	json_decref(st);
	return v;
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

/* The runtime directory of this process's EAL, removed after rte_eal_cleanup(). */
static char runtime_dir[128];

/* EAL (--no-huge, 512 MB, lcores 0-1), the test pool, the CUnit registry and the suite
 * `name` of this executable. */
CU_pSuite
dp_fixture_init(int argc, char **argv, const char *name)
{
	char prefix[64];
	char *eal[] = {argv[0],
		       "--no-huge",
		       "-m",
		       "512",
		       "--no-pci",
		       "--no-shconf",
		       prefix,
		       "-l",
		       "0-1",
		       "--log-level=lib.eal:error",
		       "--log-level=pmd:error",
		       NULL};

	(void)argc;
	/* Its own prefix: several of these executables run at once under meson test. */
	snprintf(prefix, sizeof(prefix), "--file-prefix=%s_%d", name, getpid());
	if (sysconf(_SC_NPROCESSORS_ONLN) < 2)
		eal[8] = "0";
	if (rte_eal_init((int)(sizeof(eal) / sizeof(eal[0])) - 1, eal) < 0) {
		fprintf(stderr, "%s: EAL init failed\n", name);
		return NULL;
	}
	rte_log_set_level_pattern("georeduce.*", RTE_LOG_WARNING);
	tpool = rte_pktmbuf_pool_create("t_pool", 32768, 256, 0, RTE_MBUF_DEFAULT_BUF_SIZE,
					SOCKET_ID_ANY);
	if (tpool == NULL || CU_initialize_registry() != CUE_SUCCESS)
		return NULL;
	return CU_add_suite(name, NULL, NULL);
}

/* Run the suite; EAL cleaned up and its runtime directory removed. */
int
dp_fixture_run(void)
{
	unsigned int failures;

	CU_basic_set_mode(CU_BRM_VERBOSE);
	CU_basic_run_tests();
	failures = CU_get_number_of_failures();
	CU_cleanup_registry();
	rte_mempool_free(tpool);
	snprintf(runtime_dir, sizeof(runtime_dir), "%s", rte_eal_get_runtime_dir());
	rte_eal_cleanup();
	remove_dir(runtime_dir);
	return failures > 255 ? 255 : (int)failures;
}
