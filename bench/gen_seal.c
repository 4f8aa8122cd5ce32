/* SPDX-License-Identifier: BSD-3-Clause
 *
 * Protected links for georeduce-bench's generator (docs/PROTOCOL.md section 14): the
 * frames of the parent and child gateways the bench plays, to and from a gateway whose
 * table seals those links, sealed and opened with AES-GCM through OpenSSL under the
 * table's keys. A frame goes out as: its Ethernet, IPv4 and UDP headers (lengths 48 bytes
 * longer), the 32-byte seal header (magic "GS", version 1, the AEAD, the job, the key id,
 * the sending gateway's id, lane 0 and its next sequence number under the key), the
 * georeduce packet encrypted, and the 16-byte tag; the seal header is the AAD and its
 * bytes 12-23 the nonce. A frame that comes sealed is opened back into a plain frame
 * (fresh IPv4 and UDP headers for the packet inside) after its key, its sender and its
 * tag check out; the generator then takes it as if it had come plain. The bench keeps no
 * replay window: it checks sums, and the gateway's windows are under test.
 *
 * gen_seal_create()/gen_seal_free() on the main lcore; the rest on the generator's lcore,
 * which owns the cipher context (no allocation there: EVP_CipherInit_ex() on a context
 * already set up reuses it).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/evp.h>

#include "bytes.h"
#include "gen.h"
#include "gen_priv.h"

#define SEAL_HDR 32u
#define SEAL_TAG 16u
#define SEAL_MAGIC 0x4753u

struct gen_seal {
	EVP_CIPHER_CTX *ctx;
	const struct gen_job *gj;
	uint64_t seq[TABLE_SEALS_MAX]; /* the last sequence number sealed, per key */
};

struct gen_seal *
gen_seal_create(const struct gen_job *gj)
{
	struct gen_seal *s = calloc(1, sizeof(*s));

	if (s == NULL || (s->ctx = EVP_CIPHER_CTX_new()) == NULL) {
		free(s);
		return NULL;
	}
	s->gj = gj;
	return s;
}

void
gen_seal_free(struct gen_seal *s)
{
	if (s == NULL)
		return;
	EVP_CIPHER_CTX_free(s->ctx);
	free(s);
}

/* AES-GCM over the packet (len bytes at sh + 32) with seal header sh as AAD and its
 * nonce: enc, in place with the tag after it; else open and check the tag there. */
static bool
gcm(struct gen_seal *s, const struct table_seal *k, bool enc, const uint8_t *sh, const uint8_t *in,
    uint8_t *out, int len)
{
	const EVP_CIPHER *ci =
		k->aead == TABLE_AEAD_AES256_GCM ? EVP_aes_256_gcm() : EVP_aes_128_gcm();
	int n = 0;

	return EVP_CipherInit_ex(s->ctx, ci, NULL, NULL, NULL, enc) == 1 &&
	       EVP_CIPHER_CTX_ctrl(s->ctx, EVP_CTRL_GCM_SET_IVLEN, 12, NULL) == 1 &&
	       EVP_CipherInit_ex(s->ctx, NULL, NULL, k->key, sh + 12, enc) == 1 &&
	       EVP_CipherUpdate(s->ctx, NULL, &n, sh, SEAL_HDR) == 1 &&
	       EVP_CipherUpdate(s->ctx, out, &n, in, len) == 1 &&
	       (enc || EVP_CIPHER_CTX_ctrl(s->ctx, EVP_CTRL_GCM_SET_TAG, SEAL_TAG,
					   (void *)(uintptr_t)(in + len)) == 1) &&
	       EVP_CipherFinal_ex(s->ctx, out + n, &n) == 1 &&
	       (!enc ||
		EVP_CIPHER_CTX_ctrl(s->ctx, EVP_CTRL_GCM_GET_TAG, SEAL_TAG, out + len) == 1);
}

int
gen_seal_frame(struct gen_seal *s, int key, const uint8_t *f, uint32_t len, uint8_t *out)
{
	const struct table_seal *k = &s->gj->seals[key];
	struct wire_flow fl;
	uint8_t *sh = out + WIRE_FRAME_HDR_OFF;
	uint32_t plen = len - WIRE_FRAME_HDR_OFF;
	uint64_t seq = ++s->seq[key];
	size_t ulen;

	if (wire_frame_parse_flags(f, len, WIRE_PARSE_NO_UDP_CSUM, &fl, NULL, &ulen, NULL) != 0 ||
	    wire_frame_build(out, len + WIRE_SEAL_OVERHEAD, &fl, plen + WIRE_SEAL_OVERHEAD,
			     false) != 0)
		return -EINVAL;
	memset(sh, 0, SEAL_HDR);
	be16_put(sh, SEAL_MAGIC);
	sh[2] = 1;
	sh[3] = (uint8_t)k->aead;
	be32_put(sh + 4, s->gj->job);
	be32_put(sh + 8, k->key_id);
	memcpy(sh + 12, f + WIRE_FRAME_HDR_OFF + 18, 2); /* the packet's sender */
	be32_put(sh + 16, (uint32_t)(seq >> 32));
	be32_put(sh + 20, (uint32_t)seq);
	return gcm(s, k, true, sh, f + WIRE_FRAME_HDR_OFF, sh + SEAL_HDR, (int)plen) ? 0 : -EIO;
}

bool
gen_seal_is_sealed(const uint8_t *d, uint32_t len)
{
	return len >= WIRE_FRAME_HDR_OFF + 2 && be16_get(d + WIRE_FRAME_HDR_OFF) == SEAL_MAGIC;
}

int
gen_seal_open(struct gen_seal *s, const uint8_t *d, uint32_t len, uint8_t *out, int *key)
{
	const struct gen_job *gj = s->gj;
	const uint8_t *sh = d + WIRE_FRAME_HDR_OFF;
	struct wire_flow fl;
	size_t ulen;
	uint32_t plen;

	if (wire_frame_parse_flags(d, len, WIRE_PARSE_NO_UDP_CSUM, &fl, NULL, &ulen, NULL) != 0 ||
	    ulen < SEAL_HDR + WIRE_HDR_LEN + SEAL_TAG || sh[2] != 1 ||
	    be32_get(sh + 4) != gj->job || be16_get(sh + 12) != gj->gw_id)
		return -EBADMSG;
	plen = (uint32_t)ulen - SEAL_HDR - SEAL_TAG;
	*key = -1;
	for (unsigned int k = 0; k < gj->n_seals; k++)
		if (gj->seals[k].key_id == be32_get(sh + 8) && (uint8_t)gj->seals[k].aead == sh[3])
			*key = (int)k;
	if (*key < 0)
		return -ENOKEY;
	if (!gcm(s, &gj->seals[*key], false, sh, sh + SEAL_HDR, out + WIRE_FRAME_HDR_OFF,
		 (int)plen) ||
	    wire_frame_build(out, WIRE_FRAME_HDR_OFF + plen, &fl, plen, false) != 0)
		return -EBADMSG;
	return (int)(WIRE_FRAME_HDR_OFF + plen);
}
