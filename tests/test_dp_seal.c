/* SPDX-License-Identifier: BSD-3-Clause
 *
 * EAL tests of protected links (dataplane/fastpath/seal.c, dataplane/slowpath/crypto.c,
 * docs/PROTOCOL.md section 14): sealed frames built and opened with OpenSSL, independently
 * of the dataplane's cryptodev; forged, altered, replayed and unknown-key frames dropped,
 * key rotation with epochs, the document's example, duplicates, sealed frames leaving in
 * sequence through the pacers, and senders known by their key behind NAT (--nat-addr too).
 *
 * The main thread plays the worker lcore (dp_worker_poll, dp_fixture.c).
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include <CUnit/CUnit.h>
#include <jansson.h>
#include <openssl/evp.h>
#include <rte_bus_vdev.h>
#include <rte_cycles.h>
#include <rte_ip.h>
#include <rte_lcore.h>
#include <rte_mbuf.h>
#include <rte_udp.h>

#include "dp.h"
#include "dp_fixture.h"
#include "fastpath/seal.h"
#include "slowpath/slowpath.h"
#include "table.h"
#include "testutil.h"
#include "wire.h"

#define SEAL_HDR 32
#define SEAL_TAG 16

static const uint8_t key1[16] = {0x10, 0x21, 0x32, 0x43, 0x54, 0x65, 0x76, 0x87,
				 0x98, 0xa9, 0xba, 0xcb, 0xdc, 0xed, 0xfe, 0x0f};
static const uint8_t key4[16] = {0x44, 0x45, 0x46, 0x47, 0x48, 0x49, 0x4a, 0x4b,
				 0x4c, 0x4d, 0x4e, 0x4f, 0x50, 0x51, 0x52, 0x53};
static const uint8_t key2[32] = {0x5a, 0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08, 0x09, 0x0a,
				 0x0b, 0x0c, 0x0d, 0x0e, 0x0f, 0x10, 0x11, 0x12, 0x13, 0x14, 0x15,
				 0x16, 0x17, 0x18, 0x19, 0x1a, 0x1b, 0x1c, 0x1d, 0x1e, 0x1f};

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
	    (uint32_t)(sh[8] << 24 | sh[9] << 16 | sh[10] << 8 | sh[11]) != key_id || sh[12] != 0 ||
	    sh[13] != 1)
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
	struct pkt p = {WIRE_TYPE_CONTRIB, 0, job,       epoch, 0, 3, 3, 2, round, c,
			WIRE_DTYPE_FP32,   n, PEER_IP(3)};

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
	static const uint16_t w[] = {11, 12};
	struct tdesc td = {0, 0, 1, {3}, 0, nch, 16, {2}};
	struct table *tb = mk_table(60, epoch, 1, TABLE_DTYPE_FP32, el, ce, 2, w, 1, &td);

	tb->n_seals = 1;
	tb->seals[0] = (struct table_seal){.peer = 3,
					   .key_id = key_id,
					   .aead = klen == 16 ? TABLE_AEAD_AES128_GCM :
								TABLE_AEAD_AES256_GCM};
	memcpy(tb->seals[0].key, key, klen);
	return install(tb, "install");
}

/* Round r of epoch `epoch`: workers 11, 12 plain, child 3 sealed (key, key_id, from seq);
 * true if every RESULT is exact: plain to the workers, sealed to the child. */
static bool
sealed_round_exact(uint32_t epoch, uint32_t r, const uint8_t *key, size_t klen, uint32_t key_id,
		   uint64_t *seq, uint64_t el, uint32_t ce, uint32_t nch)
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
		bad += o[k].p.type != WIRE_TYPE_RESULT || o[k].p.round != r || o[k].p.contrib != 4;
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
	struct rte_mbuf *m =
		seal_frame(child_sum(60, epoch, r, 0, el, ce), 60, key1, 16, 1, 3, 0, seq);

	rte_pktmbuf_mtod(m, uint8_t *)[WIRE_FRAME_HDR_OFF + at] ^= x;
	return m;
}

/*
 * A protected link to child gateway 3: forged, altered, replayed, unknown-key and plain
 * frames from it are dropped by reason before any slot sees them, and every round stays
 * exact; after a key rotation (epoch 2, a new key) a frame under the old key is unknown.
 */
static void
protected_link(const char *dev, bool ops)
{
	const uint64_t el = 4 * 64;
	const uint32_t ce = 64, nch = 4;
	uint64_t seq = 0;
	static struct out o[64];

	crypto_dev = dev;
	crypto_ops = ops;
	CU_ASSERT_FATAL(dp_up(rte_get_main_lcore()) == 0);
	crypto_dev = "";
	crypto_ops = false;
	CU_ASSERT(dp.crypto.on);
	CU_ASSERT(dp.crypto.cpu == (!ops && strcmp(dev, "crypto_aesni_gcm0") == 0));
	CU_ASSERT_FATAL(install_sealed(1, key1, 16, 1, el, ce, nch) == 0);
	/* Forged tag; a bit flipped in the seal header (the AAD: its sequence number), in
	 * the encrypted georeduce header and in the encrypted payload; an unknown key id; the
	 * child's partial sum unsealed. Nothing may reach the slot. */
	struct rte_mbuf *forged = sealed_flipped(1, 1, 1000, 0, 0, el, ce);
	size_t tag_at = rte_pktmbuf_pkt_len(forged) - WIRE_FRAME_HDR_OFF - 1;

	rte_pktmbuf_mtod(forged, uint8_t *)[WIRE_FRAME_HDR_OFF + tag_at] ^= 0x01;
	inject(forged);
	inject(sealed_flipped(1, 1, 1001, 23, 0x04, el, ce));                /* seq, in the AAD */
	inject(sealed_flipped(1, 1, 1002, SEAL_HDR + 22, 0x01, el, ce));     /* contrib */
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
	CU_ASSERT(text != NULL && strstr(text, dev) != NULL && strstr(text, "5a0102") == NULL);
	free(text);
	json_decref(rep);
	CU_ASSERT(ctr(DP_CTR_CRYPTO_FAILED) == 0 && ctr(DP_CTR_CRYPTO_FULL) == 0);
	CU_ASSERT(dp_crypto_pending(dp.lcores[0]) == 0 && dp.lcores[0]->crypto_held == 0);
	CU_ASSERT(rte_mempool_in_use_count(dp.crypto.op_pool) == 0);
	dp_down();
}

/* The software PMD offers CPU crypto: no operation is made. */
static void
test_protected_link(void)
{
	protected_link("crypto_aesni_gcm0", false);
}

/* The same PMD through operations (--crypto-ops): each comes back in the iteration that
 * enqueued it (the PMD works within the enqueue call). */
static void
test_protected_link_ops(void)
{
	protected_link("crypto_aesni_gcm0", true);
}

/*
 * A cryptodev that returns operations late: DPDK's crypto_scheduler in multi-core mode,
 * whose worker (crypto_aesni_mb) runs on another lcore: an operation enqueued comes back
 * from a later dequeue, once that lcore has done it. Created once (EAL lcore 1); false if
 * EAL has no second lcore.
 */
static bool
late_device(void)
{
	static int made;

	if (made == 0) {
		made = rte_lcore_count() < 2 ? -1 : 1;
		if (made == 1) {
			CU_ASSERT_FATAL(rte_vdev_init("crypto_aesni_mb7", "max_nb_queue_pairs=1") ==
					0);
			CU_ASSERT_FATAL(rte_vdev_init("crypto_scheduler7",
						      "worker=crypto_aesni_mb7,mode=multi-core,"
						      "corelist=1") == 0);
		}
	}
	if (made < 0)
		fprintf(stderr, "only one EAL lcore: no late-completing cryptodev\n");
	return made > 0;
}

static void
test_protected_link_late(void)
{
	if (!late_device())
		return;
	protected_link("crypto_scheduler7", false);
}

/* docs/PROTOCOL.md section 14.4: section 11's RESULT sealed by gateway 9 (key 00 .. 0f, id
 * 42, lane 0, sequence 1, job 7) is byte for byte the document's, and opens back. */
static void
test_sealed_example(void)
{
	static const uint8_t
		plain[102] =
			{
				0x47, 0x52, 0x01, 0x02, 0x00,        0x01,        0x01, 0x00, 0x00,
				0x00, 0x00, 0x07, 0x00, 0x00,        0x00,        0x03, 0x00, 0x02,
				0x00, 0x09, 0x00, 0x08, 0x00,        0x03,        0x00, 0x00, 0x00,
				0x29, 0x00, 0x00, 0x03, 0xe8,        0x00,        0x04, 0x00, 0x00,
				0x00, 0xab, 0xcd, 0xef, [54] = 0x26, [86] = 0x00, 0x00, 0x80, 0x3f,
				0x00, 0x00, 0x00, 0xc0, 0x00,        0x00,        0x60, 0x40, 0x00,
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
	CU_ASSERT(gcm(false, key, 16, sealed + 12, sealed, sealed + 32, 102, pt,
		      (uint8_t *)sealed + 134) &&
		  memcmp(pt, plain, sizeof(plain)) == 0);
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
	static const uint16_t w1[] = {11};
	const uint32_t ce = 64, n0 = 120, n1 = 8;
	struct tdesc td[2] = {{0, 4, 0, {0}, 0, n0, 128, {0}}, {1, 4, 0, {0}, n0, n1, 16, {0}}};
	static struct out o[64];
	uint64_t last = 0;
	int frames = 0, disorder = 0;

	crypto_dev = "crypto_aesni_gcm0";
	CU_ASSERT_FATAL(dp_up(rte_get_main_lcore()) == 0);
	crypto_dev = "";
	struct table *tb =
		mk_table(61, 1, 1, TABLE_DTYPE_FP32, (uint64_t)(n0 + n1) * ce, ce, 1, w1, 2, td);

	tb->trees[0].rate_gbps = 0.002; /* 16 KiB at once, then one frame every 1.4 ms */
	tb->n_seals = 1;
	tb->seals[0] = (struct table_seal){.peer = 4, .key_id = 9, .aead = TABLE_AEAD_AES128_GCM};
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

	faults[DP_RX] = (struct dp_fault){.on = true, .dup = UINT32_MAX};
	crypto_dev = "crypto_aesni_gcm0";
	CU_ASSERT_FATAL(dp_up(rte_get_main_lcore()) == 0);
	crypto_dev = "";
	faults[DP_RX] = (struct dp_fault){0};
	CU_ASSERT_FATAL(install_sealed(1, key1, 16, 1, el, ce, nch) == 0);
	CU_ASSERT(sealed_round_exact(1, 1, key1, 16, 1, &seq, el, ce, nch));
	CU_ASSERT(sealed_round_exact(1, 2, key1, 16, 1, &seq, el, ce, nch));
	CU_ASSERT(ctr(DP_CTR_FAULT_DUPLICATED) > 0);
	CU_ASSERT(drops(WIRE_REASON_REPLAY) == 2 * nch);
	CU_ASSERT(drops(WIRE_REASON_BAD_TAG) == 0);
	dp_down();
}

/* Child gateway `id`'s partial sum of chunk 0 of round r (contrib 2, values val(id, e)),
 * sealed with key (key_id) as gateway `as` would seal it, from src_ip:sport: the address
 * and port a NAT between the gateways gave it. */
static struct rte_mbuf *
nat_sum(uint16_t id, uint16_t as, uint32_t r, const uint8_t *key, uint32_t key_id, uint64_t seq,
	uint32_t src_ip, uint16_t sport)
{
	float pl[64];
	struct pkt p = {WIRE_TYPE_CONTRIB, 0,  60,         1, 0, id, id, 2, r, 0,
			WIRE_DTYPE_FP32,   64, PEER_IP(id)};
	struct rte_mbuf *m;

	for (uint16_t i = 0; i < 64; i++)
		pl[i] = val(id, i);
	spoof = (struct dp_spoof){true, src_ip, sport, 0};
	m = mk_pkt(&p, pl);
	spoof.on = false;
	return seal_frame(m, 60, key, 16, key_id, as, 0, seq);
}

/* Round r with child gateways 3 and 4 sealing from the addresses and ports a NAT gave them
 * (src[0..1], sport[0..1]) and workers 11, 12 plain: the RESULT is exact, plain to the
 * workers and sealed to each child at its table address. */
static bool
nat_round_exact(uint32_t r, uint64_t seq, const uint32_t *src, const uint16_t *sport)
{
	static struct out o[8];
	int bad = 0, sealed = 0;

	inject(contrib_f32(60, 1, 0, 11, r, 0, 64, 64));
	inject(contrib_f32(60, 1, 0, 12, r, 0, 64, 64));
	inject(nat_sum(3, 3, r, key1, 1, seq, src[0], sport[0]));
	inject(nat_sum(4, 4, r, key4, 4, seq, src[1], sport[1]));
	poll_all();
	int n = collect(o, 8);

	for (int k = 0; k < n; k++) {
		if (o[k].fl.dst_ip == PEER_IP(3) || o[k].fl.dst_ip == PEER_IP(4)) {
			bad += !open_out(&o[k], o[k].fl.dst_ip == PEER_IP(3) ? key1 : key4, 16,
					 o[k].fl.dst_ip == PEER_IP(3) ? 1 : 4);
			sealed++;
		}
		bad += o[k].p.type != WIRE_TYPE_RESULT || o[k].p.round != r || o[k].p.contrib != 6;
		for (uint32_t i = 0; i < o[k].p.count; i++)
			bad += out_f32(&o[k], i) != val(11, i) + val(12, i) + val(3, i) + val(4, i);
	}
	return n == 4 && sealed == 2 && bad == 0;
}

/*
 * Protected links authenticate the sender by its key, not its address (PROTOCOL.md 7.2):
 * child gateways 3 and 4 behind one NAT reach this root from one public address, first
 * from the same port, then from other ports and addresses as the NAT's mapping changes;
 * every round is exact. A frame that is not the sender's own is refused whatever address
 * it comes from: plain from the child's table address or from the NAT's (bad_sender),
 * sealed with gateway 4's key but claiming to be gateway 3 in the seal header or in the
 * packet, or under a key id nobody has (unknown_key), under gateway 3's key id with another
 * key (bad_tag), or gateway
 * 3's frame again from yet another address (replay).
 */
static void
test_protected_link_nat(void)
{
	static const uint16_t w[] = {11, 12};
	static const uint8_t bad_key[16] = {1};
	const uint32_t nat = PEER_IP(40), nat2 = PEER_IP(39);
	struct tdesc td = {0, 0, 2, {3, 4}, 0, 1, 16, {2, 2}};
	struct table *tb = mk_table(60, 1, 1, TABLE_DTYPE_FP32, 64, 64, 2, w, 1, &td);
	static struct out o[8];

	crypto_dev = "crypto_aesni_gcm0";
	CU_ASSERT_FATAL(dp_up(rte_get_main_lcore()) == 0);
	crypto_dev = "";
	tb->n_seals = 2;
	tb->seals[0] = (struct table_seal){.peer = 3, .key_id = 1, .aead = TABLE_AEAD_AES128_GCM};
	tb->seals[1] = (struct table_seal){.peer = 4, .key_id = 4, .aead = TABLE_AEAD_AES128_GCM};
	memcpy(tb->seals[0].key, key1, 16);
	memcpy(tb->seals[1].key, key4, 16);
	CU_ASSERT_FATAL(install(tb, "install") == 0);

	inject(child_sum(60, 1, 1, 0, 64, 64)); /* plain, from 10.0.0.3, the table's address */
	spoof = (struct dp_spoof){true, nat, 50001, 0};
	inject(child_sum(60, 1, 1, 0, 64, 64)); /* plain, from the NAT */
	spoof.on = false;
	inject(nat_sum(3, 3, 1, key4, 4, 1, nat, 50001)); /* 4's key, seal header says 3 */
	inject(nat_sum(3, 4, 1, key4, 4, 2, nat, 50001)); /* sealed by 4, packet says 3 */
	inject(nat_sum(3, 3, 1, bad_key, 1, 3, nat, 50001));
	inject(nat_sum(3, 3, 1, key1, 77, 4, nat, 50001)); /* a key id nobody has */
	poll_all();
	CU_ASSERT(collect(o, 8) == 0);
	CU_ASSERT(drops(WIRE_REASON_BAD_SENDER) == 2);
	CU_ASSERT(drops(WIRE_REASON_UNKNOWN_KEY) == 3);
	CU_ASSERT(drops(WIRE_REASON_BAD_TAG) == 1);
	CU_ASSERT(ctr(DP_CTR_CONTRIBS) == 0);

	/* Both children from the NAT's one address and port, then from new mappings. */
	CHECK(nat_round_exact(1, 10, (uint32_t[]){nat, nat}, (uint16_t[]){50001, 50001}),
	      "round 1 from one address and port");
	CHECK(nat_round_exact(2, 11, (uint32_t[]){nat, nat}, (uint16_t[]){61000, 50002}),
	      "round 2 from new ports");
	CHECK(nat_round_exact(3, 12, (uint32_t[]){nat2, PEER_IP(3)}, (uint16_t[]){7, 17400}),
	      "round 3 from another address, and 4 from 3's table address");
	CU_ASSERT(drops(WIRE_REASON_BAD_SENDER) == 2);
	inject(nat_sum(3, 3, 3, key1, 1, 12, PEER_IP(38), 9)); /* round 3's frame again */
	poll_all();
	CU_ASSERT(collect(o, 8) == 0 && drops(WIRE_REASON_REPLAY) == 1);
	dp_down();
}

/*
 * This gateway behind a NAT too (--nat-addr 0:203.0.113.7): the tables name it by the
 * address the NAT gives it, which the dataplane accepts as its own, and its packets leave
 * from its port's address (10.0.0.1), which the NAT rewrites; the rounds of
 * test_protected_link_nat are exact. A table naming an address that is neither is
 * refused, and so is the NAT's address without --nat-addr.
 */
static void
test_nat_addr(void)
{
	static const uint16_t w[] = {11, 12};
	const uint32_t pub = 0xcb007107u; /* 203.0.113.7 */
	struct tdesc td = {0, 0, 2, {3, 4}, 0, 1, 16, {2, 2}};
	struct table *tb;
	static struct out o[8];

	for (int with_nat = 0; with_nat < 2; with_nat++) {
		crypto_dev = "crypto_aesni_gcm0";
		nat_ipv4 = with_nat ? pub : 0;
		CU_ASSERT_FATAL(dp_up(rte_get_main_lcore()) == 0);
		crypto_dev = "";
		nat_ipv4 = 0;
		tb = mk_table(60, 1, 1, TABLE_DTYPE_FP32, 64, 64, 2, w, 1, &td);
		tb->gw.ipv4 = pub + 1; /* nobody's */
		CU_ASSERT(install(tb, "install") != 0);
		tb = mk_table(60, 1, 1, TABLE_DTYPE_FP32, 64, 64, 2, w, 1, &td);
		tb->gw.ipv4 = pub;
		tb->n_seals = 2;
		tb->seals[0] = (struct table_seal){3, 1, TABLE_AEAD_AES128_GCM, {0}};
		tb->seals[1] = (struct table_seal){4, 4, TABLE_AEAD_AES128_GCM, {0}};
		memcpy(tb->seals[0].key, key1, 16);
		memcpy(tb->seals[1].key, key4, 16);
		CHECK((install(tb, "install") == 0) == (with_nat == 1), "NAT address %s --nat-addr",
		      with_nat ? "with" : "without");
		if (with_nat) {
			CU_ASSERT(nat_round_exact(1, 1, (uint32_t[]){PEER_IP(40), PEER_IP(40)},
						  (uint16_t[]){1024, 1025}));
			/* What left, left from the port's own address. */
			inject(contrib_f32(60, 1, 0, 11, 2, 0, 64, 64));
			inject(contrib_f32(60, 1, 0, 12, 2, 0, 64, 64));
			inject(nat_sum(3, 3, 2, key1, 1, 2, PEER_IP(40), 1024));
			inject(nat_sum(4, 4, 2, key4, 4, 2, PEER_IP(40), 1025));
			poll_all();
			int n = collect(o, 8), from_port = 0;

			for (int k = 0; k < n; k++)
				from_port += o[k].fl.src_ip == GW_IP;
			CHECK(n == 4 && from_port == 4, "%d frames, %d from 10.0.0.1", n,
			      from_port);
		}
		dp_down();
	}
}

/* A multicast stream from gateway 2 over a protected link, behind a NAT: its sealed MCAST
 * comes from the NAT's address and is delivered; the same MCAST plain from gateway 2's own
 * table address is refused (bad_sender), and so is one sealed with another key (bad_tag). */
static void
test_mcast_from_nat(void)
{
	struct table *tb = mk_stream_table(60, 64, 1);
	struct table_stream *a = &tb->streams[0];
	float pl[64];
	struct pkt p = {WIRE_TYPE_MCAST, 0,  60,        1, 5, 2, 31, 1, 9, 0,
			WIRE_DTYPE_FP32, 64, PEER_IP(2)};
	static struct out o[4];
	int n;

	for (int i = 0; i < 64; i++)
		pl[i] = val(31, (uint64_t)i);
	*a = (struct table_stream){.id = 5,
				   .source = 2,
				   .has_from = true,
				   .n_deliver = 1,
				   .n_origins = 1,
				   .rate_gbps = 10};
	a->from = (struct table_gw){2, PEER_IP(2), WIRE_PORT_BASE_DEFAULT, WIRE_PORT_COUNT_DEFAULT};
	a->deliver[0] = (struct table_worker){21, PEER_IP(21), WORKER_PORT};
	a->origins[0] = 31;
	tb->n_seals = 1;
	tb->seals[0] = (struct table_seal){2, 1, TABLE_AEAD_AES128_GCM, {0}};
	memcpy(tb->seals[0].key, key1, 16);
	crypto_dev = "crypto_aesni_gcm0";
	CU_ASSERT_FATAL(dp_up(rte_get_main_lcore()) == 0);
	crypto_dev = "";
	CU_ASSERT_FATAL(install(tb, "install") == 0);
	inject(mk_pkt(&p, pl)); /* plain, from 10.0.0.2 */
	spoof = (struct dp_spoof){true, PEER_IP(40), 40000, 0};
	inject(seal_frame(mk_pkt(&p, pl), 60, key4, 16, 1, 2, 0, 1)); /* another key */
	inject(seal_frame(mk_pkt(&p, pl), 60, key1, 16, 1, 2, 0, 2));
	spoof.on = false;
	poll_all();
	n = collect(o, 4);
	CHECK(n == 1 && o[0].p.type == WIRE_TYPE_MCAST && o[0].fl.dst_ip == PEER_IP(21) &&
		      o[0].p.round == 9 && out_f32(&o[0], 63) == val(31, 63),
	      "%d frames", n);
	CU_ASSERT(drops(WIRE_REASON_BAD_SENDER) == 1 && drops(WIRE_REASON_BAD_TAG) == 1);
	dp_down();
}

/*
 * Operations that come back late: a child's sealed partial sums (a chunk each) arrive in
 * one burst. Until the device returns a frame's operation the frame is neither summed nor
 * freed: at every poll each frame is opened (and summed) or still in the ring with its
 * operation out of the pool, and the operations out are those of the ring. In the end all
 * are opened, some of them late, none failed, and every round sealed back is exact.
 */
static void
test_late_completions(void)
{
	const uint64_t el = 16 * 64; /* the slots of the tree's window */
	const uint32_t ce = 64, nch = 16;
	uint64_t seq = 0, t0, hz = rte_get_tsc_hz();
	int polls = 0, odd = 0;
	static struct out o[64];

	if (!late_device())
		return;
	crypto_dev = "crypto_scheduler7";
	CU_ASSERT_FATAL(dp_up(rte_get_main_lcore()) == 0);
	crypto_dev = "";
	struct dp_lcore *lc = dp.lcores[0];

	CU_ASSERT_FATAL(dp.crypto.on && !dp.crypto.cpu);
	CU_ASSERT_FATAL(install_sealed(1, key1, 16, 1, el, ce, nch) == 0);
	for (uint32_t c = 0; c < nch; c++)
		inject(seal_frame(child_sum(60, 1, 1, c, el, ce), 60, key1, 16, 1, 3, 0, ++seq));
	t0 = rte_rdtsc();
	do {
		dp_worker_poll(lc);
		polls++;
		uint32_t pending = dp_crypto_pending(lc);

		odd += ctr(DP_CTR_OPENED) + pending != nch ||
		       ctr(DP_CTR_CONTRIBS) != ctr(DP_CTR_OPENED) ||
		       rte_mempool_in_use_count(dp.crypto.op_pool) != pending ||
		       lc->crypto_held > pending;
	} while (ctr(DP_CTR_OPENED) < nch && rte_rdtsc() - t0 < 60 * hz);
	CU_ASSERT(odd == 0);
	CU_ASSERT(ctr(DP_CTR_OPENED) == nch && ctr(DP_CTR_CONTRIBS) == nch);
	for (uint32_t c = 0; c < nch; c++) { /* the workers' parts: round 1 completes */
		inject(contrib_f32(60, 1, 0, 11, 1, c, el, ce));
		inject(contrib_f32(60, 1, 0, 12, 1, c, el, ce));
	}
	poll_all();
	CU_ASSERT(collect(o, 64) == 3 * (int)nch && ctr(DP_CTR_SEALED) == nch);
	for (uint32_t r = 2; r < 6; r++)
		CU_ASSERT(sealed_round_exact(1, r, key1, 16, 1, &seq, el, ce, nch));
	CU_ASSERT(ctr(DP_CTR_OPENED) == 5 * nch && ctr(DP_CTR_SEALED) == 5 * nch);
	/* The multi-core worker takes the operations from a ring on another lcore: dozens of
	 * AES-GCM operations cannot all be done before the dequeue that follows the enqueue. */
	CU_ASSERT(ctr(DP_CTR_CRYPTO_LATE) > 0);
	CU_ASSERT(ctr(DP_CTR_CRYPTO_FAILED) == 0 && ctr(DP_CTR_CRYPTO_FULL) == 0);
	CU_ASSERT(dp_crypto_pending(lc) == 0 && lc->crypto_held == 0);
	CU_ASSERT(rte_mempool_in_use_count(dp.crypto.op_pool) == 0);
	fprintf(stderr, "late completions: %d polls for the first burst, %" PRIu64 " late\n", polls,
		ctr(DP_CTR_CRYPTO_LATE));
	dp_down();
}

int
main(int argc, char **argv)
{
	CU_pSuite s = dp_fixture_init(argc, argv, "test_dp_seal");

	if (s == NULL)
		return 1;
	CU_add_test(s, "a protected link: forged, altered, replayed, rotated keys",
		    test_protected_link);
	CU_add_test(s, "the same through crypto operations (--crypto-ops)",
		    test_protected_link_ops);
	CU_add_test(s, "the same through a cryptodev that completes operations late",
		    test_protected_link_late);
	CU_add_test(s, "late completions: nothing summed or freed before its operation is back",
		    test_late_completions);
	CU_add_test(s, "PROTOCOL.md sealed example", test_sealed_example);
	CU_add_test(s, "a protected link under duplication", test_protected_link_duplicates);
	CU_add_test(s, "sealed frames leave in sequence, paced or not", test_sealed_pacing_order);
	CU_add_test(s, "protected links behind NAT: the key says who sent, not the address",
		    test_protected_link_nat);
	CU_add_test(s, "a gateway behind NAT: tables name it by the NAT's address", test_nat_addr);
	CU_add_test(s, "a multicast stream from a gateway behind NAT", test_mcast_from_nat);
	return dp_fixture_run();
}
