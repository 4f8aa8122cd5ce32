/* SPDX-License-Identifier: BSD-3-Clause
 *
 * georeduce-bench-seal: a gateway link protected (docs/PROTOCOL.md section 14) against the
 * same link plain, per core, in one run: the dataplane's worker loop (dp_worker_poll) on
 * one core through a net_ring port, with the cryptodev named by --crypto.
 *
 * Scenario per point (payload bytes P): a root gateway with one local worker and one child
 * gateway, one tree of W chunks. Every chunk takes the worker's CONTRIB (plain, the LAN)
 * and the child's partial sum over the link; the chunk completes and its RESULT goes to
 * the worker and over the link to the child. So every chunk moves one frame in and one
 * frame out over the link: with the link protected, one frame opened and one sealed.
 *
 * The bench plays the NIC and the two peers outside the measured interval: all frames of
 * R rounds are built before a measurement (the child's sealed with OpenSSL under the
 * table's key, its own sequence numbers), fed in bursts, and the copies drained. Only the
 * TSC cycles inside dp_worker_poll() count. Before the measurements one round is checked
 * completely: both copies of every chunk hold the exact sum (the child's opened with
 * OpenSSL), and during them the counters must show every chunk completed and no drop.
 *
 * Output per point: ns per chunk plain and protected, the link's Gbit/s per core (payload
 * bits over the link, in and out, per second of the core), their ratio, and the AEAD's
 * share: Gbit/s sealed and opened per core from the difference.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>
#include <openssl/evp.h>
#include <rte_cryptodev.h>
#include <rte_cycles.h>
#include <rte_eal.h>
#include <rte_ethdev.h>
#include <rte_eth_ring.h>
#include <rte_ip.h>
#include <rte_lcore.h>
#include <rte_log.h>
#include <rte_mbuf.h>
#include <rte_ring.h>
#include <rte_udp.h>

#include "bench_dp.h"
#include "bench_util.h"
#include "bytes.h"
#include "cli.h"
#include "dp.h"
#include "slowpath/slowpath.h"
#include "table.h"
#include "wire.h"

#define PROG "georeduce-bench-seal"
#define RING_SIZE 4096
#define GW_ID 1
#define GW_IP 0x0a000001u
#define CHILD_ID 2
#define CHILD_IP 0x0a000002u
#define WORKER_ID 101
#define WORKER_IP 0x0a000101u
#define WORKER_PORT 5000
#define JOB 1
#define KEY_ID 0x5eed
#define REPEAT_MAX 51

static const uint8_t key[16] = {0x2b, 0x7e, 0x15, 0x16, 0x28, 0xae, 0xd2, 0xa6,
				0xab, 0xf7, 0x15, 0x88, 0x09, 0xcf, 0x4f, 0x3c};

struct opts {
	unsigned int payload[8], n_payload;
	unsigned int window, rounds, repeat;
	const char *crypto;
	bool crypto_ops;
	bool json;
};

struct point {
	unsigned int payload, elems, window, rounds, frame_len, mtu;
	bool sealed;
	uint32_t epoch;
	struct rte_ring *rx, *tx;
	uint16_t port_id;
	struct dp dp;
	bool dp_up;
	struct rte_mempool *pool;
	struct rte_mbuf **frames; /* [round][chunk][worker, child] in feed order */
	uint32_t round0;          /* first round of the frames built */
	uint64_t seq;             /* the child's last sequence number */
	EVP_CIPHER_CTX *gcm;
};

static int
value(unsigned int c, unsigned int who, unsigned int i)
{
	return (int)((i + 3 * c + 5 * who) % 16) - 8;
}

/* AES-128-GCM over the frame's georeduce packet (len bytes at f + 74), the seal header at
 * f + 42 the AAD and its bytes 12-23 the IV; enc: seal (tag after the packet), else open. */
static bool
gcm(struct point *x, bool enc, uint8_t *f, int len)
{
	uint8_t *sh = f + WIRE_FRAME_HDR_OFF, *pkt = sh + 32;
	int n = 0;

	return EVP_CipherInit_ex(x->gcm, EVP_aes_128_gcm(), NULL, NULL, NULL, enc) == 1 &&
	       EVP_CIPHER_CTX_ctrl(x->gcm, EVP_CTRL_GCM_SET_IVLEN, 12, NULL) == 1 &&
	       EVP_CipherInit_ex(x->gcm, NULL, NULL, key, sh + 12, enc) == 1 &&
	       EVP_CipherUpdate(x->gcm, NULL, &n, sh, 32) == 1 &&
	       EVP_CipherUpdate(x->gcm, pkt, &n, pkt, len) == 1 &&
	       (enc || EVP_CIPHER_CTX_ctrl(x->gcm, EVP_CTRL_GCM_SET_TAG, 16, pkt + len) == 1) &&
	       EVP_CipherFinal_ex(x->gcm, pkt + n, &n) == 1 &&
	       (!enc || EVP_CIPHER_CTX_ctrl(x->gcm, EVP_CTRL_GCM_GET_TAG, 16, pkt + len) == 1);
}

static json_t *
table_json(const struct point *x)
{
	char ip[16], ip2[16], ip3[16];
	json_t *t = json_pack(
		"{s:s, s:i, s:i, s:{s:i, s:s, s:i, s:i}, s:s, s:I, s:i, s:{s:i, s:i, s:i, s:i},"
		" s:[{s:i, s:s, s:n, s:[{s:i, s:s, s:i, s:i, s:i}], s:[{s:i, s:s, s:i}], s:i,"
		" s:i, s:i, s:i, s:f, s:i}]}",
		"format", TABLE_FORMAT, "job", JOB, "epoch", (int)x->epoch, "gateway", "id", GW_ID,
		"ipv4", table_ipv4_format(GW_IP, ip), "base_port", WIRE_PORT_BASE_DEFAULT, "ports",
		WIRE_PORT_COUNT_DEFAULT, "dtype", "fp32", "elements",
		(json_int_t)x->window * x->elems, "chunk_elements", (int)x->elems, "limits",
		"max_trees", 1, "max_children", 1, "max_workers", 1, "max_slots", 4096, "trees",
		"id", 0, "role", "root", "parent", "children", "id", CHILD_ID, "ipv4",
		table_ipv4_format(CHILD_IP, ip2), "base_port", WIRE_PORT_BASE_DEFAULT, "ports",
		WIRE_PORT_COUNT_DEFAULT, "subtree_workers", 1, "workers", "id", WORKER_ID, "ipv4",
		table_ipv4_format(WORKER_IP, ip3), "port", WORKER_PORT, "expected", 2,
		"subtree_workers", 2, "chunk_first", 0, "chunk_count", (int)x->window, "rate_gbps",
		1000.0, "slots", 4096);
	char hex[33];

	for (int i = 0; i < 16; i++)
		snprintf(hex + 2 * i, 3, "%02x", key[i]);
	if (t != NULL && x->sealed)
		json_object_set_new(t, "sealed",
				    json_pack("[{s:i, s:i, s:s, s:s}]", "peer", CHILD_ID, "key_id",
					      KEY_ID, "aead", "aes-128-gcm", "key", hex));
	return t;
}

/* The CONTRIB of the worker (child false) or the child for chunk c of round r, sealed if
 * the link is. */
static struct rte_mbuf *
build(struct point *x, unsigned int c, uint32_t r, bool child)
{
	uint16_t id = child ? CHILD_ID : WORKER_ID;
	struct wire_pkt p = {
		.type = WIRE_TYPE_CONTRIB,
		.dtype = WIRE_DTYPE_FP32,
		.job = JOB,
		.epoch = x->epoch,
		.sender = id,
		.origin = id,
		.contrib = 1,
		.round = r,
		.chunk = c,
		.count = (uint16_t)x->elems,
	};
	struct wire_flow f = {
		.src_mac = {0x02, 0, 0, 0, 1, child ? 2 : 1},
		.src_ip = child ? CHILD_IP : WORKER_IP,
		.dst_ip = GW_IP,
		.src_port =
			child ? wire_udp_port(WIRE_PORT_BASE_DEFAULT, WIRE_PORT_COUNT_DEFAULT, c) :
				WORKER_PORT,
		.dst_port = wire_udp_port(WIRE_PORT_BASE_DEFAULT, WIRE_PORT_COUNT_DEFAULT, c),
		.ttl = 64,
	};
	bool seal = child && x->sealed;
	uint32_t len = WIRE_FRAME_HDR_OFF + WIRE_HDR_LEN + 4 * x->elems;
	struct rte_mbuf *m = rte_pktmbuf_alloc(x->pool);
	uint8_t *fr = m == NULL ?
			      NULL :
			      (uint8_t *)rte_pktmbuf_append(m, (uint16_t)(len + (seal ? 48 : 0)));
	float *v;

	if (fr == NULL)
		return NULL;
	memcpy(f.dst_mac, x->dp.ports[0].mac.addr_bytes, RTE_ETHER_ADDR_LEN);
	/* Plain frame at fr (sealed: at fr + 32, then moved into place). */
	uint8_t *pl = seal ? fr + 32 : fr;

	if (wire_hdr_encode(pl + WIRE_FRAME_HDR_OFF, len - WIRE_FRAME_HDR_OFF, &p, NULL) != 0)
		return NULL;
	v = (float *)(void *)(pl + WIRE_FRAME_PAYLOAD_OFF);
	for (unsigned int i = 0; i < x->elems; i++) {
		float e = (float)value(c, child, i);

		memcpy(&v[i], &e, sizeof(e));
	}
	if (wire_frame_build(pl, len, &f, len - WIRE_FRAME_HDR_OFF, false) != 0)
		return NULL;
	if (!seal)
		return m;
	memmove(fr, pl, WIRE_FRAME_HDR_OFF);
	uint8_t *sh = fr + WIRE_FRAME_HDR_OFF;

	memset(sh, 0, 32);
	sh[0] = 0x47;
	sh[1] = 0x53;
	sh[2] = 1;
	sh[3] = 1;
	be32_put(sh + 4, JOB);
	be32_put(sh + 8, KEY_ID);
	sh[13] = CHILD_ID;
	x->seq++;
	be32_put(sh + 16, (uint32_t)(x->seq >> 32));
	be32_put(sh + 20, (uint32_t)x->seq);
	if (!gcm(x, true, fr, (int)(len - WIRE_FRAME_HDR_OFF)))
		return NULL;
	struct rte_ipv4_hdr *ip = (struct rte_ipv4_hdr *)(fr + WIRE_ETH_LEN);
	struct rte_udp_hdr *udp = (struct rte_udp_hdr *)(ip + 1);

	ip->total_length = rte_cpu_to_be_16((uint16_t)(len + 48 - WIRE_ETH_LEN));
	ip->hdr_checksum = 0;
	ip->hdr_checksum = rte_ipv4_cksum(ip);
	udp->dgram_len = rte_cpu_to_be_16((uint16_t)(len + 48 - WIRE_ETH_LEN - WIRE_IPV4_LEN));
	udp->dgram_cksum = 0;
	return m;
}

/* The frames of rounds round0 .. round0 + rounds - 1. */
static int
build_all(struct point *x)
{
	size_t k = 0;

	for (uint32_t r = 0; r < x->rounds; r++)
		for (unsigned int c = 0; c < x->window; c++)
			for (int who = 0; who < 2; who++)
				if ((x->frames[k++] = build(x, c, x->round0 + r, who)) == NULL)
					return -ENOMEM;
	return 0;
}

static int
setup(struct point *x, const char *crypto, bool ops, char *err, size_t errlen)
{
	static unsigned int inst;
	char name[RTE_RING_NAMESIZE];
	struct dp_config cfg;
	uint32_t job, epoch;
	size_t n = (size_t)2 * x->rounds * x->window;

	inst++;
	snprintf(name, sizeof(name), "bs_rx%u", inst);
	x->rx = rte_ring_create(name, RING_SIZE, (int)rte_socket_id(),
				RING_F_SP_ENQ | RING_F_SC_DEQ);
	snprintf(name, sizeof(name), "bs_tx%u", inst);
	x->tx = rte_ring_create(name, RING_SIZE, (int)rte_socket_id(),
				RING_F_SP_ENQ | RING_F_SC_DEQ);
	snprintf(name, sizeof(name), "bs_ring%u", inst);
	int port = x->rx == NULL || x->tx == NULL ?
			   -1 :
			   rte_eth_from_rings(name, &x->rx, 1, &x->tx, 1, rte_socket_id());
	snprintf(name, sizeof(name), "bs_frames%u", inst);
	x->pool = rte_pktmbuf_pool_create(name, (unsigned int)n + 1024, 0, 0,
					  (uint16_t)(RTE_PKTMBUF_HEADROOM + x->frame_len + 64),
					  (int)rte_socket_id());
	x->frames = calloc(n, sizeof(*x->frames));
	x->gcm = EVP_CIPHER_CTX_new();
	if (port < 0 || x->pool == NULL || x->frames == NULL || x->gcm == NULL) {
		snprintf(err, errlen, "cannot create the port, %zu frames of %u bytes (raise -m)",
			 n, x->frame_len);
		return -ENOMEM;
	}
	x->port_id = (uint16_t)port;
	dp_config_defaults(&cfg);
	cfg.prm.idle_spin = 0;
	cfg.prm.mtu = (uint16_t)x->mtu;
	cfg.prm.mbufs = 16384;
	cfg.prm.pace = false;
	cfg.seal_mbufs = 4096;
	if (x->sealed) /* the plain point has no cryptodev: both are set up at once */
		snprintf(cfg.crypto_dev, sizeof(cfg.crypto_dev), "%s", crypto);
	cfg.crypto_ops = ops;
	bench_dp_one_port(&cfg, rte_get_main_lcore(), x->port_id, GW_IP);
	cfg.n_neigh = 2;
	cfg.neigh[0].ipv4 = WORKER_IP;
	cfg.neigh[0].mac = (struct rte_ether_addr){{0x02, 0, 0, 0, 1, 1}};
	cfg.neigh[1].ipv4 = CHILD_IP;
	cfg.neigh[1].mac = (struct rte_ether_addr){{0x02, 0, 0, 0, 1, 2}};
	x->dp_up = true;
	int rc = dp_setup(&x->dp, &cfg, err, errlen);

	if (rc != 0)
		return rc;
	x->epoch = 1;
	json_t *t = table_json(x);

	rc = t == NULL ? -ENOMEM : dp_prepare(&x->dp, t, 0, &job, &epoch, err, errlen);
	json_decref(t);
	if (rc == 0)
		rc = dp_activate(&x->dp, job, epoch, err, errlen);
	return rc;
}

static void
teardown(struct point *x)
{
	struct rte_mbuf *m = NULL;

	if (x->dp_up)
		dp_teardown(&x->dp);
	while (x->tx != NULL && rte_ring_sc_dequeue(x->tx, (void **)&m) == 0)
		rte_pktmbuf_free(m);
	while (x->rx != NULL && rte_ring_sc_dequeue(x->rx, (void **)&m) == 0)
		rte_pktmbuf_free(m);
	rte_mempool_free(x->pool);
	rte_ring_free(x->rx);
	rte_ring_free(x->tx);
	free(x->frames);
	EVP_CIPHER_CTX_free(x->gcm);
}

/* Whether the copy m (to the worker or, sealed or not, to the child) is the exact sum of a
 * chunk of round r. */
static bool
check_copy(struct point *x, struct rte_mbuf *m, uint32_t r)
{
	static uint8_t f[WIRE_MTU_MAX + 128];
	uint32_t len = rte_pktmbuf_pkt_len(m);
	const uint8_t *d = rte_pktmbuf_read(m, 0, len, f);
	struct wire_flow fl;
	struct wire_pkt p;
	size_t off, plen;

	if (d == NULL || len > sizeof(f))
		return false;
	if (d != f)
		memcpy(f, d, len);
	bool to_child = (uint32_t)(f[30] << 24 | f[31] << 16 | f[32] << 8 | f[33]) == CHILD_IP;

	if (to_child && x->sealed) {
		if (len < WIRE_FRAME_HDR_OFF + 48 || f[42] != 0x47 || f[43] != 0x53 ||
		    !gcm(x, false, f, (int)(len - WIRE_FRAME_HDR_OFF - 48)))
			return false;
		memmove(f + 32, f, WIRE_FRAME_HDR_OFF);
		memmove(f, f + 32, len - 32);
		len -= 48;
		struct rte_ipv4_hdr *ip = (struct rte_ipv4_hdr *)(f + WIRE_ETH_LEN);

		ip->total_length = rte_cpu_to_be_16((uint16_t)(len - WIRE_ETH_LEN));
		ip->hdr_checksum = 0;
		ip->hdr_checksum = rte_ipv4_cksum(ip);
		((struct rte_udp_hdr *)(ip + 1))->dgram_len =
			rte_cpu_to_be_16((uint16_t)(len - WIRE_ETH_LEN - WIRE_IPV4_LEN));
	}
	if (wire_frame_parse(f, len, &fl, &off, &plen, NULL) != 0 ||
	    wire_hdr_decode(f + off, plen, &p, NULL) != 0 || p.type != WIRE_TYPE_RESULT ||
	    p.round != r || p.contrib != 2 || p.count != x->elems)
		return false;
	for (unsigned int i = 0; i < x->elems; i++) {
		float v;

		memcpy(&v, f + WIRE_FRAME_PAYLOAD_OFF + 4 * i, sizeof(v));
		if (v != (float)(value(p.chunk, 0, i) + value(p.chunk, 1, i)))
			return false;
	}
	return true;
}

/* Run every frame built; cycles inside dp_worker_poll. With check: every copy checked. */
static int
run(struct point *x, uint64_t *cycles, bool check)
{
	size_t n = (size_t)2 * x->rounds * x->window, pos = 0;
	struct rte_mbuf *out[64];
	unsigned int bad = 0, copies = 0;
	uint64_t c = 0;

	while (pos < n || rte_ring_count(x->rx) != 0) {
		unsigned int k = n - pos < 32 ? (unsigned int)(n - pos) : 32;

		if (k != 0 &&
		    rte_ring_sp_enqueue_bulk(x->rx, (void **)&x->frames[pos], k, NULL) == k)
			pos += k;
		uint64_t t0 = rte_rdtsc();

		dp_worker_poll(x->dp.lcores[0]);
		c += rte_rdtsc() - t0;
		while ((k = rte_ring_sc_dequeue_burst(x->tx, (void **)out, 64, NULL)) != 0)
			for (unsigned int i = 0; i < k; i++) {
				if (check)
					bad += !check_copy(
						x, out[i],
						x->round0 + (uint32_t)(copies / (2 * x->window)));
				copies++;
				rte_pktmbuf_free(out[i]);
			}
	}
	*cycles = c;
	return bad == 0 && copies == n ? 0 : -1;
}

static uint64_t
counter(struct point *x, enum dp_ctr k)
{
	return x->dp.lcores[0]->ctr[k];
}

/* One measurement of R rounds (check: every copy checked); ns per chunk in *ns. */
static int
measure_once(struct point *x, bool check, double *ns, char *err, size_t errlen)
{
	uint64_t before = counter(x, DP_CTR_CHUNKS_COMPLETED), drops = 0, cyc;

	if (build_all(x) != 0) {
		snprintf(err, errlen, "out of frames");
		return -ENOMEM;
	}
	if (run(x, &cyc, check) != 0) {
		snprintf(err, errlen, "%s link: a result copy is wrong or missing",
			 x->sealed ? "protected" : "plain");
		return -EIO;
	}
	x->round0 += x->rounds;
	for (int r = 1; r < WIRE_REASON_COUNT_MAX; r++)
		drops += x->dp.lcores[0]->drops[r];
	if (counter(x, DP_CTR_CHUNKS_COMPLETED) - before != (uint64_t)x->rounds * x->window ||
	    drops != 0) {
		snprintf(err, errlen, "%s link: %" PRIu64 " chunks of %u, %" PRIu64 " drops",
			 x->sealed ? "protected" : "plain",
			 counter(x, DP_CTR_CHUNKS_COMPLETED) - before, x->rounds * x->window,
			 drops);
		return -EIO;
	}
	*ns = (double)cyc * 1e9 / (double)rte_get_tsc_hz() / ((double)x->rounds * x->window);
	return 0;
}

/*
 * The AEAD alone, in the same run and on the same cryptodev and path as the protected
 * link (CPU crypto, or operations enqueued and dequeued on lcore 0's queue pair): per
 * chunk the link's work, one encryption and one decryption of its georeduce packet (the
 * seal header the AAD), over as many frames as a measurement of the links feeds (window
 * x rounds, from a pool of their own: as cold as theirs). *ns: per chunk.
 */
#define AEAD_BURST 32

static void *
aead_session(struct point *x, enum rte_crypto_aead_operation op)
{
	struct rte_crypto_sym_xform xf = {
		.type = RTE_CRYPTO_SYM_XFORM_AEAD,
		.aead = {.op = op,
			 .algo = RTE_CRYPTO_AEAD_AES_GCM,
			 .key = {.data = key, .length = sizeof(key)},
			 .iv = {.offset = sizeof(struct rte_crypto_op) +
					  sizeof(struct rte_crypto_sym_op),
				.length = 12},
			 .digest_length = 16,
			 .aad_length = 32},
	};

	return rte_cryptodev_sym_session_create(x->dp.crypto.dev_id, &xf, x->dp.crypto.sess_pool);
}

/* n frames m[] of len-byte packets through session s; false if any failed. */
static bool
aead_burst(struct point *x, void *s, struct rte_mbuf **m, unsigned int n, uint32_t len)
{
	const struct dp_crypto *c = &x->dp.crypto;
	unsigned int ok = 0;

	if (c->cpu) {
		struct rte_crypto_vec seg[AEAD_BURST];
		struct rte_crypto_sgl sgl[AEAD_BURST];
		struct rte_crypto_va_iova_ptr iv[AEAD_BURST], aad[AEAD_BURST], dig[AEAD_BURST];
		int32_t st[AEAD_BURST];
		struct rte_crypto_sym_vec v = {.num = n,
					       .src_sgl = sgl,
					       .iv = iv,
					       .digest = dig,
					       .aad = aad,
					       .status = st};

		for (unsigned int i = 0; i < n; i++) {
			uint8_t *sh = rte_pktmbuf_mtod_offset(m[i], uint8_t *, WIRE_FRAME_HDR_OFF);

			seg[i] = (struct rte_crypto_vec){.base = sh + 32, .len = len};
			sgl[i] = (struct rte_crypto_sgl){.vec = &seg[i], .num = 1};
			iv[i].va = sh + 12;
			aad[i].va = sh;
			dig[i].va = sh + 32 + len;
		}
		return rte_cryptodev_sym_cpu_crypto_process(
			       c->dev_id, s, (union rte_crypto_sym_ofs){.raw = 0}, &v) == n;
	}
	struct rte_crypto_op *op[AEAD_BURST], *done[AEAD_BURST];

	if (rte_crypto_op_bulk_alloc(c->op_pool, RTE_CRYPTO_OP_TYPE_SYMMETRIC, op, n) != n)
		return false;
	for (unsigned int i = 0; i < n; i++) {
		struct rte_crypto_sym_op *sym = op[i]->sym;
		uint32_t off = WIRE_FRAME_HDR_OFF + 32;

		memcpy(rte_crypto_op_ctod_offset(op[i], uint8_t *,
						 sizeof(struct rte_crypto_op) +
							 sizeof(struct rte_crypto_sym_op)),
		       rte_pktmbuf_mtod_offset(m[i], uint8_t *, WIRE_FRAME_HDR_OFF + 12), 12);
		sym->m_src = m[i];
		sym->aead.data.offset = off;
		sym->aead.data.length = len;
		sym->aead.digest.data = rte_pktmbuf_mtod_offset(m[i], uint8_t *, off + len);
		sym->aead.digest.phys_addr = rte_pktmbuf_iova_offset(m[i], off + len);
		sym->aead.aad.data = rte_pktmbuf_mtod_offset(m[i], uint8_t *, WIRE_FRAME_HDR_OFF);
		sym->aead.aad.phys_addr = rte_pktmbuf_iova_offset(m[i], WIRE_FRAME_HDR_OFF);
		rte_crypto_op_attach_sym_session(op[i], s);
	}
	unsigned int in = rte_cryptodev_enqueue_burst(c->dev_id, 0, op, (uint16_t)n), out = 0;

	while (out < in) { /* the bench waits; the dataplane never does */
		uint16_t k = rte_cryptodev_dequeue_burst(c->dev_id, 0, done, (uint16_t)(in - out));

		for (uint16_t i = 0; i < k; i++)
			ok += done[i]->status == RTE_CRYPTO_OP_STATUS_SUCCESS;
		out += k;
	}
	for (unsigned int i = 0; i < n; i++)
		rte_crypto_op_free(op[i]);
	return in == n && ok == n;
}

static int
aead_measure(struct point *x, struct rte_mempool *pool, double *ns, char *err, size_t errlen)
{
	uint32_t len = x->frame_len - WIRE_FRAME_HDR_OFF - 48, n = x->window * x->rounds;
	struct rte_mbuf **m = calloc(n, sizeof(*m));
	void *enc = aead_session(x, RTE_CRYPTO_AEAD_OP_ENCRYPT);
	void *dec = aead_session(x, RTE_CRYPTO_AEAD_OP_DECRYPT);
	bool ok = m != NULL && pool != NULL && enc != NULL && dec != NULL &&
		  rte_pktmbuf_alloc_bulk(pool, m, n) == 0;
	uint64_t t0;

	for (unsigned int i = 0; ok && i < n; i++) {
		uint8_t *f = (uint8_t *)rte_pktmbuf_append(m[i], (uint16_t)x->frame_len);

		ok = f != NULL;
		if (ok) {
			memset(f, (int)i, x->frame_len);
			be32_put(f + WIRE_FRAME_HDR_OFF + 20, i); /* a different IV each */
		}
	}
	/* As many frames as a measurement of the links, each sealed then opened once. */
	t0 = rte_rdtsc();
	for (unsigned int i = 0; ok && i < n; i += AEAD_BURST) {
		unsigned int k = RTE_MIN(AEAD_BURST, n - i);

		ok = aead_burst(x, enc, m + i, k, len) && aead_burst(x, dec, m + i, k, len);
	}
	*ns = (double)(rte_rdtsc() - t0) * 1e9 / (double)rte_get_tsc_hz() / n;
	if (m != NULL && m[0] != NULL)
		rte_pktmbuf_free_bulk(m, n);
	free(m);
	if (enc != NULL)
		rte_cryptodev_sym_session_free(x->dp.crypto.dev_id, enc);
	if (dec != NULL)
		rte_cryptodev_sym_session_free(x->dp.crypto.dev_id, dec);
	if (!ok) {
		snprintf(err, errlen, "the AEAD alone failed (sessions, frames or tags)");
		return -EIO;
	}
	return 0;
}

static void
usage(FILE *f)
{
	fprintf(f,
		"Usage: " PROG " [EAL options] -- [OPTIONS]\n"
		"\n"
		"A gateway link protected (AES-128-GCM, docs/PROTOCOL.md section 14) against the\n"
		"same link plain, per core: a root with a local worker and a child gateway over\n"
		"the link; one frame in and one out over the link per chunk.\n"
		"\n"
		"  --payload LIST   payload bytes per chunk, multiples of 64     [1024,8192]\n"
		"  --window N       chunks per round                               [128]\n"
		"  --rounds N       rounds per measurement                          [8]\n"
		"  --repeat N       measurements per link kind (the median)         [5]\n"
		"  --crypto NAME    the cryptodev vdev             [crypto_aesni_gcm0]\n"
		"  --crypto-ops     operations even where the device offers CPU crypto\n"
		"  --json           one JSON object per point\n"
		"\n"
		"Besides the links, the AEAD alone on the same device and path (one encryption\n"
		"and one decryption of each chunk's packet), in turn with them: its rate A and "
		"the\n"
		"plain link's P give the bound A/(A+P) of the protected link's ratio.\n");
}

int
main(int argc, char **argv)
{
	struct opts o = {.payload = {1024, 8192},
			 .n_payload = 2,
			 .window = 128,
			 .rounds = 8,
			 .repeat = 5,
			 .crypto = "crypto_aesni_gcm0"};
	static const struct option longopts[] = {
		{"payload", required_argument, NULL, 'p'},
		{"window", required_argument, NULL, 'w'},
		{"rounds", required_argument, NULL, 'r'},
		{"repeat", required_argument, NULL, 'n'},
		{"crypto", required_argument, NULL, 'c'},
		{"json", no_argument, NULL, 'j'},
		{"crypto-ops", no_argument, NULL, 'o'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	int e = rte_eal_init(argc, argv), c;
	uint64_t v;

	if (e < 0) {
		cli_error(PROG, "cannot initialise EAL: %s", rte_strerror(rte_errno));
		return CLI_EXIT_USAGE;
	}
	argc -= e;
	argv += e;
	rte_log_set_global_level(RTE_LOG_WARNING);
	while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		switch (c) {
		case 'p': {
			char *s = optarg, *tok, *save = NULL;

			o.n_payload = 0;
			for (tok = strtok_r(s, ",", &save); tok != NULL && o.n_payload < 8;
			     tok = strtok_r(NULL, ",", &save)) {
				if (cli_uint(PROG, "--payload", tok, 64, 8192, &v) != 0 ||
				    v % 64 != 0) {
					cli_error(PROG, "--payload: 64 .. 8192, a multiple of 64");
					return CLI_EXIT_USAGE;
				}
				o.payload[o.n_payload++] = (unsigned int)v;
			}
			break;
		}
		case 'w':
			if (cli_uint(PROG, "--window", optarg, 1, 2048, &v) != 0)
				return CLI_EXIT_USAGE;
			o.window = (unsigned int)v;
			break;
		case 'r':
			if (cli_uint(PROG, "--rounds", optarg, 1, 1000, &v) != 0)
				return CLI_EXIT_USAGE;
			o.rounds = (unsigned int)v;
			break;
		case 'n':
			if (cli_uint(PROG, "--repeat", optarg, 1, REPEAT_MAX - 1, &v) != 0)
				return CLI_EXIT_USAGE;
			o.repeat = (unsigned int)v;
			break;
		case 'c':
			o.crypto = optarg;
			break;
		case 'j':
			o.json = true;
			break;
		case 'o':
			o.crypto_ops = true;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return CLI_EXIT_USAGE;
		}
	}
	if (!o.json)
		printf("%8s %10s %5s %12s %12s %11s %11s %7s %13s %11s %7s %8s\n", "payload", "pmd",
		       "path", "plain ns/ch", "sealed ns/ch", "plain Gb/s", "sealed Gb/s", "ratio",
		       "aead Gb/s", "A Gb/s", "bound", "of bound");
	int rc = 0;

	for (unsigned int i = 0; i < o.n_payload && rc == 0; i++) {
		static struct point x[2];
		struct rte_mempool *apool = rte_pktmbuf_pool_create(
			"bs_aead", o.window * o.rounds + 64, 0, 0,
			(uint16_t)(RTE_PKTMBUF_HEADROOM + WIRE_FRAME_PAYLOAD_OFF + o.payload[i] +
				   48),
			(int)rte_socket_id());
		double ns[3], t[3][REPEAT_MAX];
		char err[512] = "", pmd[64] = "?";

		/* Both links set up at once, measured in turn: a loaded machine slows both. */
		for (int s = 0; s < 2; s++) {
			x[s] = (struct point){
				.payload = o.payload[i],
				.elems = o.payload[i] / 4,
				.window = o.window,
				.rounds = o.rounds,
				.sealed = s == 1,
				.round0 = 1,
			};
			x[s].frame_len = WIRE_FRAME_PAYLOAD_OFF + x[s].payload + 48;
			x[s].mtu = x[s].frame_len - WIRE_ETH_LEN <= 1500 ? 1500 : 9000;
			if (rc == 0)
				rc = setup(&x[s], o.crypto, o.crypto_ops, err, sizeof(err));
		}
		for (unsigned int k = 0; k <= o.repeat && rc == 0; k++) {
			for (int s = 0; s < 2 && rc == 0; s++)
				rc = measure_once(&x[s], k == 0, &t[s][k == 0 ? 0 : k - 1], err,
						  sizeof(err));
			if (rc == 0)
				rc = aead_measure(&x[1], apool, &t[2][k == 0 ? 0 : k - 1], err,
						  sizeof(err));
		}
		const char *path = x[1].dp.crypto.cpu ? "cpu" : "ops";
		if (x[1].dp.crypto.on && x[1].dp.crypto.driver != NULL)
			snprintf(pmd, sizeof(pmd), "%s", x[1].dp.crypto.driver);
		for (int s = 0; s < 2; s++)
			teardown(&x[s]);
		rte_mempool_free(apool);
		if (rc != 0) {
			cli_error(PROG, "%u B: %s", o.payload[i], err);
			break;
		}
		for (int s = 0; s < 3; s++) {
			bench_sort(t[s], o.repeat);
			ns[s] = t[s][o.repeat / 2];
		}
		/* Over the link per chunk: P bytes in and P bytes out. */
		double bits = 2.0 * 8 * o.payload[i];
		double g0 = bits / ns[0], g1 = bits / ns[1];
		double aead = ns[1] > ns[0] ? bits / (ns[1] - ns[0]) : 0;
		/* The AEAD alone (A) and the plain link (P): the protected link cannot beat
		 * A/(A+P), the time of both added. */
		double a = bits / ns[2], bound = a / (a + g0);

		if (o.json)
			printf("{\"payload\": %u, \"pmd\": \"%s\", \"path\": \"%s\", "
			       "\"plain_ns_chunk\": %.1f, \"sealed_ns_chunk\": %.1f, "
			       "\"aead_ns_chunk\": %.1f, \"plain_gbps\": %.2f, \"sealed_gbps\": "
			       "%.2f, \"ratio\": %.3f, \"aead_gbps\": %.2f, \"aead_alone_gbps\": "
			       "%.2f, \"bound\": %.3f, \"of_bound\": %.3f}\n",
			       o.payload[i], pmd, path, ns[0], ns[1], ns[2], g0, g1, g1 / g0, aead,
			       a, bound, g1 / g0 / bound);
		else
			printf("%8u %10s %5s %12.1f %12.1f %11.2f %11.2f %7.3f %13.2f %11.2f %7.3f "
			       "%8.3f\n",
			       o.payload[i], pmd, path, ns[0], ns[1], g0, g1, g1 / g0, aead, a,
			       bound, g1 / g0 / bound);
	}
	rte_eal_cleanup();
	return rc == 0 ? 0 : CLI_EXIT_FAIL;
}
