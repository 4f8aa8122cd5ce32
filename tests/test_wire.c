/* SPDX-License-Identifier: BSD-3-Clause
 *
 * Unit tests for lib/wire.{h,c}, the georeduce wire protocol (docs/PROTOCOL.md): layout,
 * encode/decode round trips for every type and dtype, the worked example of PROTOCOL.md byte
 * for byte, every validation failure class, a mutation fuzzer over valid packets and frames
 * (each decoded from a heap buffer of its exact length, so that ASan sees any read past the
 * end), the chunk mapping, the port formula, sizes for an MTU and checksums.
 *
 * Environment: GEOREDUCE_FUZZ_SEED sets the seed of the random tests; GEOREDUCE_TEST_QUICK
 * shortens them (sanitizer builds). main returns the number of failures.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <CUnit/Basic.h>
#include <CUnit/CUnit.h>

#include "testutil.h"
#include "wire.h"

#define ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))

/* ------------------------------------------------------------------------------------ */
/* Helpers                                                                              */
/* ------------------------------------------------------------------------------------ */


static uint64_t rng_state;

/* splitmix64: small, good enough, reproducible from the printed seed. */
static uint64_t
rnd(void)
{
	uint64_t z = (rng_state += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

/* Uniform in [0, n), n > 0 (modulo bias is irrelevant here). */
static uint64_t
rnd_below(uint64_t n)
{
	return rnd() % n;
}

static bool
quick(void)
{
	const char *q = getenv("GEOREDUCE_TEST_QUICK");

	return q != NULL && *q != '\0' && strcmp(q, "0") != 0;
}

static const enum wire_type all_types[] = {
	WIRE_TYPE_CONTRIB, WIRE_TYPE_RESULT, WIRE_TYPE_ACK, WIRE_TYPE_NACK_CONTRIB,
	WIRE_TYPE_NACK_RESULT, WIRE_TYPE_PROBE, WIRE_TYPE_PROBE_REPLY, WIRE_TYPE_NACK_MCAST,
};
static const enum wire_dtype data_dtypes[] = {
	WIRE_DTYPE_FP32, WIRE_DTYPE_FP16, WIRE_DTYPE_BF16,
};

static bool
is_data(enum wire_type t)
{
	return t == WIRE_TYPE_CONTRIB || t == WIRE_TYPE_RESULT;
}

static bool
is_probe(enum wire_type t)
{
	return t == WIRE_TYPE_PROBE || t == WIRE_TYPE_PROBE_REPLY;
}

/*
 * A valid packet of type t: header fields in *p, the whole packet (header, set, payload) in
 * buf, its length returned. Data packets get dtype d, `blocks` set blocks holding `contrib`
 * ids and `count` elements of a recognisable pattern; probes get count opaque bytes.
 */
static size_t
make_pkt(uint8_t *buf, size_t cap, struct wire_pkt *p, enum wire_type t, enum wire_dtype d,
	 unsigned int blocks, uint16_t contrib, uint16_t count)
{
	size_t len;
	int rc;

	memset(p, 0, sizeof(*p));
	p->type = t;
	p->job = 0x01020304;
	p->epoch = 0x0a0b0c0d;
	p->tree = 0x1122;
	p->sender = 0x3344;
	p->origin = 0x5566;
	p->round = 0xfedcba98;
	p->chunk = 0x00c0ffee;
	p->tsval = 0x76543210;
	if (is_data(t)) {
		p->dtype = d;
		p->cset_blocks = (uint8_t)blocks;
		p->contrib = contrib;
		p->count = count;
		p->flags = WIRE_F_RETX;
	} else if (is_probe(t)) {
		p->payload_len = count;
		if (t == WIRE_TYPE_PROBE_REPLY) {
			p->flags = WIRE_F_ECHO;
			p->tsecr = 0x01234567;
		}
	} else {
		p->count = count != 0 ? count : 1;
		if ((t == WIRE_TYPE_NACK_CONTRIB || t == WIRE_TYPE_NACK_RESULT ||
		     t == WIRE_TYPE_NACK_MCAST) && p->count > WIRE_NACK_RANGE_MAX)
			p->count = WIRE_NACK_RANGE_MAX;
		if (t == WIRE_TYPE_ACK) {
			p->flags = WIRE_F_ECHO;
			p->tsecr = 0x89abcdef;
		}
	}
	len = wire_pkt_len(p);
	CHECK(len <= cap, "packet of %zu bytes in a buffer of %zu", len, cap);
	memset(buf, 0, len);
	rc = wire_hdr_encode(buf, cap, p, NULL);
	CHECK(rc == 0, "encode %s: %d", wire_type_str(t), rc);
	if (is_data(t)) {
		uint8_t *cset = buf + WIRE_HDR_LEN;

		/* contrib distinct ids 1 + 64i mod (256 x blocks - 1): 64 is prime to that odd
		 * modulus, so i < 256 x blocks - 1 gives distinct ids, none of them 0. */
		for (unsigned int i = 0; blocks != 0 && i < contrib; i++)
			wire_cset_add(cset, blocks, (uint16_t)(1 + i * 64 % (blocks * 256 - 1)));
		for (size_t i = WIRE_HDR_LEN + blocks * WIRE_CSET_BLOCK; i < len; i++)
			buf[i] = (uint8_t)(i * 13 + 1);
	} else if (is_probe(t)) {
		for (size_t i = WIRE_HDR_LEN; i < len; i++)
			buf[i] = (uint8_t)(i ^ 0x5a);
	}
	return len;
}

/* Decode a copy of pkt[0, len) from a heap buffer of exactly len bytes (ASan: no overread). */
static int
decode_exact(const uint8_t *pkt, size_t len, struct wire_pkt *out, enum wire_reason *why)
{
	uint8_t *copy = malloc(len != 0 ? len : 1);
	int rc;

	if (copy == NULL)
		abort();
	memcpy(copy, pkt, len);
	rc = wire_hdr_decode(copy, len, out, why);
	free(copy);
	return rc;
}

static bool
pkt_equal(const struct wire_pkt *a, const struct wire_pkt *b)
{
	return a->type == b->type && a->flags == b->flags && a->dtype == b->dtype &&
	       a->cset_blocks == b->cset_blocks && a->job == b->job && a->epoch == b->epoch &&
	       a->tree == b->tree && a->sender == b->sender && a->origin == b->origin &&
	       a->contrib == b->contrib && a->round == b->round && a->chunk == b->chunk &&
	       a->count == b->count && a->tsval == b->tsval && a->tsecr == b->tsecr;
}

/* ------------------------------------------------------------------------------------ */
/* Layout and the worked example                                                        */
/* ------------------------------------------------------------------------------------ */

static void
test_layout(void)
{
	CHECK(sizeof(struct wire_hdr) == 54, "%zu", sizeof(struct wire_hdr));
	CHECK(WIRE_FRAME_HDR_OFF == 42, "%u", WIRE_FRAME_HDR_OFF);
	CHECK(WIRE_FRAME_PAYLOAD_OFF == 96, "%u", WIRE_FRAME_PAYLOAD_OFF);
	for (unsigned int b = 0; b <= WIRE_CSET_BLOCKS_MAX; b++)
		CHECK((WIRE_FRAME_PAYLOAD_OFF + b * WIRE_CSET_BLOCK) % 32 == 0, "blocks %u", b);
	/* 128-byte DPDK headroom + 96: every payload at a 32-byte boundary of the mbuf. */
	CHECK((128 + WIRE_FRAME_PAYLOAD_OFF) % 32 == 0, "headroom");
	CHECK(WIRE_UDP_PAYLOAD_MAX == 8972, "%u", WIRE_UDP_PAYLOAD_MAX);
	CHECK(wire_dtype_size(WIRE_DTYPE_FP32) == 4 && wire_dtype_size(WIRE_DTYPE_FP16) == 2 &&
	      wire_dtype_size(WIRE_DTYPE_BF16) == 2 && wire_dtype_size(WIRE_DTYPE_NONE) == 0 &&
	      wire_dtype_size((enum wire_dtype)9) == 0, "dtype sizes");
	CHECK(strcmp(wire_dtype_str(WIRE_DTYPE_BF16), "bf16") == 0, "name");
	CHECK(strcmp(wire_type_str((enum wire_type)0), "?") == 0, "unknown type name");
	CHECK(strcmp(wire_type_str(WIRE_TYPE_NACK_RESULT), "nack_result") == 0, "type name");

	/* The packed struct reads the encoded bytes at the documented offsets. */
	{
		uint8_t buf[WIRE_HDR_LEN];
		struct wire_pkt p = {
			.type = WIRE_TYPE_CONTRIB, .dtype = WIRE_DTYPE_FP16, .job = 0x11223344,
			.epoch = 5, .tree = 6, .sender = 7, .origin = 8, .contrib = 1,
			.round = 9, .chunk = 10, .count = 0, .tsval = 12,
		};
		struct wire_hdr h;

		p.type = WIRE_TYPE_ACK;
		p.dtype = WIRE_DTYPE_NONE;
		p.contrib = 0;
		p.count = 11;
		p.flags = WIRE_F_ECHO;
		p.tsecr = 13;
		CHECK(wire_hdr_encode(buf, sizeof(buf), &p, NULL) == 0, "encode");
		memcpy(&h, buf, sizeof(h));
		CHECK(h.version == 1 && h.type == WIRE_TYPE_ACK && h.flags == WIRE_F_ECHO,
		      "bytes");
		CHECK(buf[0] == 0x47 && buf[1] == 0x52, "magic GR");
		CHECK(buf[8] == 0x11 && buf[11] == 0x44, "job big-endian");
		CHECK(buf[33] == 11 && buf[43] == 13, "count, tsecr");
	}
}

/* docs/PROTOCOL.md, "Worked example": computed independently (Python struct), not by wire.c. */
static const uint8_t example_frame[144] = {
	0x02, 0x00, 0x00, 0x00, 0x00, 0x02, 0x02, 0x00, 0x00, 0x00, 0x00, 0x01, 0x08, 0x00, 0x45, 0x00,
	0x00, 0x82, 0x12, 0x34, 0x40, 0x00, 0x40, 0x11, 0x11, 0x36, 0x0a, 0x00, 0x01, 0x01, 0x0a, 0x00,
	0x02, 0x01, 0x44, 0x00, 0x44, 0x00, 0x00, 0x6e, 0xbc, 0x6c, 0x47, 0x52, 0x01, 0x02, 0x00, 0x01,
	0x01, 0x00, 0x00, 0x00, 0x00, 0x07, 0x00, 0x00, 0x00, 0x03, 0x00, 0x02, 0x00, 0x09, 0x00, 0x08,
	0x00, 0x03, 0x00, 0x00, 0x00, 0x29, 0x00, 0x00, 0x03, 0xe8, 0x00, 0x04, 0x00, 0x00, 0x00, 0xab,
	0xcd, 0xef, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
	0x26, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
	0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
	0x00, 0x00, 0x80, 0x3f, 0x00, 0x00, 0x00, 0xc0, 0x00, 0x00, 0x60, 0x40, 0x00, 0x00, 0x80, 0x3e,
};

static const struct wire_pkt example_pkt = {
	.type = WIRE_TYPE_RESULT, .flags = 0, .dtype = WIRE_DTYPE_FP32, .cset_blocks = 1,
	.job = 7, .epoch = 3, .tree = 2, .sender = 9, .origin = 8, .contrib = 3,
	.round = 41, .chunk = 1000, .count = 4, .tsval = 0x00abcdef, .tsecr = 0,
};

static const struct wire_flow example_flow = {
	.dst_mac = { 2, 0, 0, 0, 0, 2 }, .src_mac = { 2, 0, 0, 0, 0, 1 },
	.src_ip = 0x0a000101, .dst_ip = 0x0a000201,
	.src_port = 17408, .dst_port = 17408, .dscp = 0, .ttl = 64, .ip_id = 0x1234,
};

static void
test_example_vector(void)
{
	static const float vals[4] = { 1.0f, -2.0f, 3.5f, 0.25f };
	uint8_t frame[sizeof(example_frame)];
	uint8_t *g = frame + WIRE_FRAME_HDR_OFF;
	struct wire_flow f;
	struct wire_pkt p;
	enum wire_reason why;
	size_t off, plen;
	int rc;

	/* Build it with the library: the port formula, the set helpers, the header, the frame. */
	CHECK(wire_udp_port(WIRE_PORT_BASE_DEFAULT, WIRE_PORT_COUNT_DEFAULT, 1000) == 17408,
	      "port");
	CHECK(wire_pkt_len(&example_pkt) == sizeof(frame) - WIRE_FRAME_HDR_OFF, "length");
	memset(frame, 0xee, sizeof(frame));
	rc = wire_hdr_encode(g, sizeof(frame) - WIRE_FRAME_HDR_OFF, &example_pkt, &why);
	CHECK(rc == 0, "encode %d %s", rc, wire_reason_str(why));
	memset(g + WIRE_HDR_LEN, 0, WIRE_CSET_BLOCK);
	CHECK(wire_cset_add(g + WIRE_HDR_LEN, 1, 1) == 0 && wire_cset_add(g + WIRE_HDR_LEN, 1, 2) ==
	      0 && wire_cset_add(g + WIRE_HDR_LEN, 1, 5) == 0, "cset");
	CHECK(wire_cset_add(g + WIRE_HDR_LEN, 1, 256) == -ERANGE, "id beyond the set");
	CHECK(wire_cset_add(g + WIRE_HDR_LEN, 1, 0) == -ERANGE, "id 0");
	/* Payload: little-endian binary32 (this test runs on little-endian hosts only). */
	for (int i = 0; i < 4; i++) {
		uint32_t u;

		memcpy(&u, &vals[i], 4);
		for (int k = 0; k < 4; k++)
			g[WIRE_HDR_LEN + WIRE_CSET_BLOCK + 4 * i + k] = (uint8_t)(u >> (8 * k));
	}
	rc = wire_frame_build(frame, sizeof(frame), &example_flow,
			      sizeof(frame) - WIRE_FRAME_HDR_OFF, true);
	CHECK(rc == 0, "frame build %d", rc);
	for (size_t i = 0; i < sizeof(frame); i++)
		if (!CHECK(frame[i] == example_frame[i], "byte 0x%02zx: built 0x%02x, spec 0x%02x", i,
			   frame[i], example_frame[i]))
			break;
	/* Payload at offset 128 = 96 + one 32-byte set block, a multiple of 32. */
	CHECK(WIRE_FRAME_HDR_OFF + WIRE_HDR_LEN + WIRE_CSET_BLOCK == 128, "offset");

	/* And parse the specification's bytes back. */
	rc = wire_frame_parse(example_frame, sizeof(example_frame), &f, &off, &plen, &why);
	CHECK(rc == 0, "parse %d %s", rc, wire_reason_str(why));
	CHECK(off == 42 && plen == 102, "off %zu len %zu", off, plen);
	CHECK(memcmp(&f, &example_flow, sizeof(f)) == 0, "flow");
	rc = wire_hdr_decode(example_frame + off, plen, &p, &why);
	CHECK(rc == 0, "decode %d %s", rc, wire_reason_str(why));
	CHECK(pkt_equal(&p, &example_pkt), "fields");
	CHECK(p.payload_off == 86 && p.payload_len == 16, "%u %u", p.payload_off, p.payload_len);
	CHECK(wire_cset_count(example_frame + off + WIRE_HDR_LEN, 1) == 3, "3 contributors");
	CHECK(wire_cset_test(example_frame + off + WIRE_HDR_LEN, 1, 5) &&
	      wire_cset_test(example_frame + off + WIRE_HDR_LEN, 1, 1) &&
	      !wire_cset_test(example_frame + off + WIRE_HDR_LEN, 1, 0) &&
	      !wire_cset_test(example_frame + off + WIRE_HDR_LEN, 1, 3) &&
	      !wire_cset_test(example_frame + off + WIRE_HDR_LEN, 1, 300), "membership");

	/* Without the UDP checksum the frame differs only in it. */
	memcpy(frame, example_frame, sizeof(frame));
	CHECK(wire_frame_build(frame, sizeof(frame), &example_flow, plen, false) == 0, "build");
	CHECK(frame[40] == 0 && frame[41] == 0 && memcmp(frame, example_frame, 40) == 0 &&
	      memcmp(frame + 42, example_frame + 42, sizeof(frame) - 42) == 0, "no checksum");
	CHECK(wire_frame_parse(frame, sizeof(frame), NULL, NULL, NULL, &why) == 0,
	      "a zero UDP checksum is accepted");
}

/* ------------------------------------------------------------------------------------ */
/* Round trips                                                                          */
/* ------------------------------------------------------------------------------------ */

static void
roundtrip_one(enum wire_type t, enum wire_dtype d, unsigned int blocks, uint16_t contrib,
	      uint16_t count)
{
	static uint8_t buf[WIRE_UDP_PAYLOAD_MAX], again[WIRE_UDP_PAYLOAD_MAX];
	struct wire_pkt in, out;
	enum wire_reason why;
	size_t len = make_pkt(buf, sizeof(buf), &in, t, d, blocks, contrib, count);
	int rc = decode_exact(buf, len, &out, &why);

	if (!CHECK(rc == 0, "%s %s blocks %u count %u: %d %s", wire_type_str(t), wire_dtype_str(d),
		   blocks, count, rc, wire_reason_str(why)))
		return;
	CHECK(why == WIRE_REASON_NONE, "why");
	CHECK(pkt_equal(&in, &out), "%s %s: fields differ", wire_type_str(t), wire_dtype_str(d));
	CHECK(out.payload_off + out.payload_len == len, "%u + %u != %zu", out.payload_off,
	      out.payload_len, len);
	if (is_data(t)) {
		CHECK(out.payload_off == WIRE_HDR_LEN + blocks * WIRE_CSET_BLOCK, "off");
		CHECK(out.payload_len == (uint32_t)count * wire_dtype_size(d), "len");
	}
	if (is_probe(t))
		CHECK(out.payload_len == count, "probe payload");
	/* The decoded fields encode back to the same bytes; encode needs room for it all. */
	CHECK(wire_hdr_encode(again, len - 1, &out, NULL) == -ENOSPC, "room for the packet");
	CHECK(wire_hdr_encode(again, len, &out, NULL) == 0, "re-encode");
	CHECK(memcmp(again, buf, WIRE_HDR_LEN) == 0, "re-encoded header identical");
}

static void
test_roundtrip(void)
{
	for (size_t ti = 0; ti < ARRAY_LEN(all_types); ti++) {
		enum wire_type t = all_types[ti];

		if (is_data(t)) {
			for (size_t di = 0; di < ARRAY_LEN(data_dtypes); di++) {
				enum wire_dtype d = data_dtypes[di];
				int max = wire_max_elems(WIRE_MTU_MAX, d, 0);
				int max_set = wire_max_elems(WIRE_MTU_MAX, d, WIRE_CSET_BLOCKS_MAX);

				roundtrip_one(t, d, 0, 1, 1);
				roundtrip_one(t, d, 0, 65535, 333);
				roundtrip_one(t, d, 1, 3, 352);
				roundtrip_one(t, d, 0, 12, (uint16_t)max);
				roundtrip_one(t, d, WIRE_CSET_BLOCKS_MAX, 4095, (uint16_t)max_set);
				roundtrip_one(t, d, 1, 255, 64);
				roundtrip_one(t, d, 5, 1, 17);
			}
		} else if (is_probe(t)) {
			roundtrip_one(t, WIRE_DTYPE_NONE, 0, 0, 0);
			roundtrip_one(t, WIRE_DTYPE_NONE, 0, 0, 8);
			roundtrip_one(t, WIRE_DTYPE_NONE, 0, 0, WIRE_UDP_PAYLOAD_MAX - WIRE_HDR_LEN);
		} else {
			roundtrip_one(t, WIRE_DTYPE_NONE, 0, 0, 1);
			roundtrip_one(t, WIRE_DTYPE_NONE, 0, 0, 65535);
		}
	}
	/* PROBE with a job-less sender, node ids at their extremes. */
	{
		uint8_t buf[64];
		struct wire_pkt p = { .type = WIRE_TYPE_PROBE, .sender = WIRE_NODE_NONE,
				      .origin = WIRE_NODE_NONE, .payload_len = 8 }, q;

		CHECK(wire_hdr_encode(buf, sizeof(buf), &p, NULL) == 0, "probe");
		CHECK(wire_hdr_decode(buf, WIRE_HDR_LEN + 8, &q, NULL) == 0 && pkt_equal(&p, &q),
		      "probe without a job");
		p.type = WIRE_TYPE_PROBE_REPLY;
		p.flags = WIRE_F_ECHO;
		CHECK(wire_hdr_encode(buf, sizeof(buf), &p, NULL) == 0, "reply with no node id");
	}
}

/* ------------------------------------------------------------------------------------ */
/* Validation                                                                           */
/* ------------------------------------------------------------------------------------ */

/* Expect decode of pkt[0, len) to fail with errno e and reason r. */
#define EXPECT_FAIL(pkt, len, e, r, ...) \
	expect_fail_at(__LINE__, (pkt), (len), (e), (r), __VA_ARGS__)

static void expect_fail_at(int line, const uint8_t *pkt, size_t len, int e, enum wire_reason r,
			   const char *fmt, ...) __attribute__((format(printf, 6, 7)));

static void
expect_fail_at(int line, const uint8_t *pkt, size_t len, int e, enum wire_reason r,
	       const char *fmt, ...)
{
	struct wire_pkt out;
	enum wire_reason why;
	char what[160];
	va_list ap;
	int rc = decode_exact(pkt, len, &out, &why);

	va_start(ap, fmt);
	vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	check_at(rc == e && why == r, __FILE__, line, what, "got %d %s, want %d %s", rc,
		 wire_reason_str(why), e, wire_reason_str(r));
}

static void
test_truncated(void)
{
	uint8_t buf[WIRE_HDR_LEN + 64];
	struct wire_pkt p;
	size_t len;

	/* Every truncation of every type below the header length. */
	for (size_t ti = 0; ti < ARRAY_LEN(all_types); ti++) {
		len = make_pkt(buf, sizeof(buf), &p, all_types[ti], WIRE_DTYPE_FP32, 0, 1, 4);
		for (size_t l = 0; l < WIRE_HDR_LEN; l++)
			EXPECT_FAIL(buf, l, -EBADMSG, WIRE_REASON_TRUNCATED, "%s len %zu",
				    wire_type_str(all_types[ti]), l);
		/* Past the header, a data packet cut short is a length mismatch. */
		if (is_data(all_types[ti]))
			for (size_t l = WIRE_HDR_LEN; l < len; l++)
				EXPECT_FAIL(buf, l, -EBADMSG, WIRE_REASON_LENGTH, "len %zu", l);
	}
	CHECK(wire_hdr_decode(NULL, 54, &p, NULL) == -EINVAL, "NULL buffer");
	CHECK(wire_hdr_decode(buf, 54, NULL, NULL) == -EINVAL, "NULL out");
}

static void
test_bad_magic_version_type(void)
{
	uint8_t buf[WIRE_HDR_LEN + 64];
	struct wire_pkt p;
	size_t len = make_pkt(buf, sizeof(buf), &p, WIRE_TYPE_CONTRIB, WIRE_DTYPE_FP16, 0, 1, 8);

	for (int byte = 0; byte < 2; byte++)
		for (int bit = 0; bit < 8; bit++) {
			buf[byte] ^= (uint8_t)(1u << bit);
			EXPECT_FAIL(buf, len, -EBADMSG, WIRE_REASON_MAGIC, "magic byte %d bit %d",
				    byte, bit);
			buf[byte] ^= (uint8_t)(1u << bit);
		}
	for (unsigned int v = 0; v < 256; v++) {
		if (v == WIRE_VERSION)
			continue;
		buf[2] = (uint8_t)v;
		EXPECT_FAIL(buf, len, -EPROTONOSUPPORT, WIRE_REASON_VERSION, "version %u", v);
	}
	buf[2] = WIRE_VERSION;
	for (unsigned int t = 0; t < 256; t++) {
		if (t >= 1 && t <= WIRE_TYPE_MAX)
			continue;
		buf[3] = (uint8_t)t;
		EXPECT_FAIL(buf, len, -EBADMSG, WIRE_REASON_TYPE, "type %u", t);
	}
}

static void
test_bad_flags_reserved(void)
{
	uint8_t buf[WIRE_HDR_LEN + 64];
	struct wire_pkt p;
	size_t len;

	for (size_t ti = 0; ti < ARRAY_LEN(all_types); ti++) {
		enum wire_type t = all_types[ti];

		len = make_pkt(buf, sizeof(buf), &p, t, WIRE_DTYPE_BF16, 1, 2, 6);
		for (int bit = 0; bit < 8; bit++) {
			uint8_t f = buf[4] ^ (uint8_t)(1u << bit);
			bool ok;

			/* Which flag sets are valid for t (tsecr != 0 needs ECHO). */
			if (is_data(t))
				ok = (f & ~WIRE_F_ALL) == 0;
			else
				ok = (f & ~WIRE_F_ECHO) == 0;
			if ((t == WIRE_TYPE_ACK || t == WIRE_TYPE_PROBE_REPLY) && !(f & WIRE_F_ECHO))
				ok = false;
			if (ok)
				continue;
			buf[4] = f;
			EXPECT_FAIL(buf, len, -EBADMSG, WIRE_REASON_FLAGS, "%s flags 0x%02x",
				    wire_type_str(t), f);
			buf[4] ^= (uint8_t)(1u << bit);
		}
		/* Every reserved byte, every bit. */
		for (unsigned int i = 0; i < WIRE_HDR_LEN; i++) {
			if (!(i == 7 || i == 34 || i == 35 || i >= 44))
				continue;
			for (int bit = 0; bit < 8; bit++) {
				buf[i] ^= (uint8_t)(1u << bit);
				EXPECT_FAIL(buf, len, -EBADMSG, WIRE_REASON_RESERVED,
					    "%s reserved byte %u bit %d", wire_type_str(t), i, bit);
				buf[i] ^= (uint8_t)(1u << bit);
			}
		}
	}
	/* tsecr without ECHO. */
	len = make_pkt(buf, sizeof(buf), &p, WIRE_TYPE_CONTRIB, WIRE_DTYPE_FP32, 0, 1, 2);
	buf[43] = 1;
	EXPECT_FAIL(buf, len, -EBADMSG, WIRE_REASON_RESERVED, "tsecr without echo");
	buf[4] |= WIRE_F_ECHO;
	CHECK(decode_exact(buf, len, &p, NULL) == 0, "tsecr with echo");
}

static void
test_bad_fields(void)
{
	uint8_t buf[WIRE_HDR_LEN + 600];
	struct wire_pkt p;
	size_t len;

	/* dtype: unknown values on data, any value on control packets. */
	len = make_pkt(buf, sizeof(buf), &p, WIRE_TYPE_RESULT, WIRE_DTYPE_FP32, 0, 1, 4);
	for (unsigned int d = 0; d < 256; d++) {
		if (d == WIRE_DTYPE_FP32)
			continue;
		buf[5] = (uint8_t)d;
		/* fp16/bf16 with the same count make a 2-byte element: a length error; 4
		 * elements are no whole MX block: a count error. */
		if (d == WIRE_DTYPE_FP16 || d == WIRE_DTYPE_BF16)
			EXPECT_FAIL(buf, len, -EBADMSG, WIRE_REASON_LENGTH, "dtype %u", d);
		else if (wire_dtype_is_mx((enum wire_dtype)d))
			EXPECT_FAIL(buf, len, -EBADMSG, WIRE_REASON_COUNT, "dtype %u", d);
		else
			EXPECT_FAIL(buf, len, -EBADMSG, WIRE_REASON_DTYPE, "dtype %u", d);
	}
	for (size_t ti = 0; ti < ARRAY_LEN(all_types); ti++) {
		if (is_data(all_types[ti]))
			continue;
		len = make_pkt(buf, sizeof(buf), &p, all_types[ti], WIRE_DTYPE_NONE, 0, 0, 0);
		buf[5] = WIRE_DTYPE_FP32;
		EXPECT_FAIL(buf, len, -EBADMSG, WIRE_REASON_DTYPE, "dtype on %s",
			    wire_type_str(all_types[ti]));
		buf[5] = 0;
		buf[6] = 1;
		EXPECT_FAIL(buf, len, -EBADMSG, WIRE_REASON_CSET_LEN, "set on %s",
			    wire_type_str(all_types[ti]));
		buf[6] = 0;
		buf[23] = 1;
		EXPECT_FAIL(buf, len, -EBADMSG, WIRE_REASON_CONTRIB, "contrib on %s",
			    wire_type_str(all_types[ti]));
		buf[23] = 0;
		if (is_probe(all_types[ti])) {
			buf[33] = 1;
			EXPECT_FAIL(buf, len, -EBADMSG, WIRE_REASON_COUNT, "count on a probe");
			buf[33] = 0;
			/* Node ids may be NONE on probes. */
			buf[18] = buf[19] = buf[20] = buf[21] = 0xff;
			CHECK(decode_exact(buf, len, &p, NULL) == 0, "probe from no node");
			buf[19] = 0;
			CHECK(decode_exact(buf, len, &p, NULL) == 0, "probe from node 0xff00");
			buf[18] = 0;
			EXPECT_FAIL(buf, len, -EBADMSG, WIRE_REASON_NODE, "probe from node 0");
			buf[18] = buf[19] = 0xff;
			buf[20] = buf[21] = 0;
			EXPECT_FAIL(buf, len, -EBADMSG, WIRE_REASON_NODE, "probe origin 0");
			buf[20] = buf[21] = 0xff;
		} else {
			for (int v = 0; v < 2; v++) {
				uint8_t b = v == 0 ? 0xff : 0;     /* none, then 0 */

				buf[18] = buf[19] = b;
				EXPECT_FAIL(buf, len, -EBADMSG, WIRE_REASON_NODE, "sender %02x", b);
				buf[18] = 0x33;
				buf[19] = 0x44;
				buf[20] = buf[21] = b;
				EXPECT_FAIL(buf, len, -EBADMSG, WIRE_REASON_NODE, "origin %02x", b);
				buf[20] = 0x55;
				buf[21] = 0x66;
			}
			buf[18] = buf[20] = 0xff;
			buf[19] = buf[21] = 0xfe;
			CHECK(decode_exact(buf, len, &p, NULL) == 0 && p.sender == WIRE_NODE_ID_MAX,
			      "node id 65534 is an id");
			buf[18] = 0x33;
			buf[19] = 0x44;
			buf[20] = 0x55;
			buf[21] = 0x66;
			buf[32] = buf[33] = 0;
			EXPECT_FAIL(buf, len, -EBADMSG, WIRE_REASON_COUNT, "empty range");
			/* chunk 0x00c0ffee + count must stay <= 2^32 */
			buf[28] = buf[29] = buf[30] = buf[31] = 0xff;
			buf[32] = 0;
			buf[33] = 1;
			CHECK(decode_exact(buf, len, &p, NULL) == 0, "range ending at 2^32");
			buf[33] = 2;
			EXPECT_FAIL(buf, len, -EBADMSG, WIRE_REASON_COUNT, "range wraps");
			/* NACK ranges: at most WIRE_NACK_RANGE_MAX chunks (ACK ranges any). */
			buf[28] = buf[29] = buf[30] = buf[31] = 0;
			buf[33] = WIRE_NACK_RANGE_MAX;
			CHECK(decode_exact(buf, len, &p, NULL) == 0, "the longest NACK range");
			buf[33] = WIRE_NACK_RANGE_MAX + 1;
			if (buf[3] == WIRE_TYPE_ACK)
				CHECK(decode_exact(buf, len, &p, NULL) == 0, "a long ACK range");
			else
				EXPECT_FAIL(buf, len, -EBADMSG, WIRE_REASON_COUNT, "NACK range too long");
		}
	}

	/* Data packets: cset length, node ids, contrib, count. */
	len = make_pkt(buf, sizeof(buf), &p, WIRE_TYPE_CONTRIB, WIRE_DTYPE_FP16, 0, 1, 10);
	for (unsigned int b = WIRE_CSET_BLOCKS_MAX + 1; b < 256; b++) {
		buf[6] = (uint8_t)b;
		EXPECT_FAIL(buf, len, -EBADMSG, WIRE_REASON_CSET_LEN, "cset_blocks %u", b);
	}
	buf[6] = 0;
	buf[18] = buf[19] = 0xff;
	EXPECT_FAIL(buf, len, -EBADMSG, WIRE_REASON_NODE, "data from no node");
	buf[18] = buf[19] = 0;
	EXPECT_FAIL(buf, len, -EBADMSG, WIRE_REASON_NODE, "data from node 0");
	buf[18] = 0x33;
	buf[19] = 0x44;
	buf[22] = buf[23] = 0;
	EXPECT_FAIL(buf, len, -EBADMSG, WIRE_REASON_CONTRIB, "contrib 0");
	buf[23] = 1;
	buf[32] = buf[33] = 0;
	EXPECT_FAIL(buf, len, -EBADMSG, WIRE_REASON_COUNT, "count 0");

	/* The contributor set must hold exactly contrib ids. */
	len = make_pkt(buf, sizeof(buf), &p, WIRE_TYPE_RESULT, WIRE_DTYPE_FP32, 2, 5, 3);
	CHECK(decode_exact(buf, len, &p, NULL) == 0, "valid set");
	buf[WIRE_HDR_LEN + 63] ^= 0x80;
	EXPECT_FAIL(buf, len, -EBADMSG, WIRE_REASON_CSET, "one id too many");
	buf[WIRE_HDR_LEN + 63] ^= 0x80;
	buf[23] = 4;
	EXPECT_FAIL(buf, len, -EBADMSG, WIRE_REASON_CSET, "contrib 4, 5 ids");
	buf[23] = 5;
	/* id 0 is no node: a set holding it is malformed even with the right population */
	CHECK(decode_exact(buf, len, &p, NULL) == 0 && !wire_cset_test(buf + WIRE_HDR_LEN, 2, 0),
	      "valid again");
	for (int i = 1; i < 64 * 8; i++)
		if (wire_cset_test(buf + WIRE_HDR_LEN, 2, (uint16_t)i)) {
			buf[WIRE_HDR_LEN + i / 8] ^= (uint8_t)(1u << (i % 8));
			break;
		}
	buf[WIRE_HDR_LEN] |= 1;
	EXPECT_FAIL(buf, len, -EBADMSG, WIRE_REASON_CSET, "id 0 in the set");
	buf[22] = 0x02;
	buf[23] = 0x00;         /* 2 blocks hold ids 1-511: at most 511 contributors */
	EXPECT_FAIL(buf, len, -EBADMSG, WIRE_REASON_CONTRIB, "contrib larger than the set");
}

static void
test_length_and_size(void)
{
	static uint8_t buf[WIRE_UDP_PAYLOAD_MAX + 64];
	struct wire_pkt p;
	size_t len;

	/* One byte too many or too few, for every data shape. */
	for (size_t di = 0; di < ARRAY_LEN(data_dtypes); di++)
		for (unsigned int b = 0; b <= 2; b++) {
			len = make_pkt(buf, sizeof(buf), &p, WIRE_TYPE_CONTRIB, data_dtypes[di], b,
				       1, 100);
			EXPECT_FAIL(buf, len - 1, -EBADMSG, WIRE_REASON_LENGTH, "short");
			EXPECT_FAIL(buf, len + 1, -EBADMSG, WIRE_REASON_LENGTH, "long");
			/* count says more elements than the payload has */
			buf[33]++;
			EXPECT_FAIL(buf, len, -EBADMSG, WIRE_REASON_LENGTH, "count + 1");
			buf[33] -= 2;
			EXPECT_FAIL(buf, len, -EBADMSG, WIRE_REASON_LENGTH, "count - 1");
		}
	/* ACK/NACK carry no payload. */
	len = make_pkt(buf, sizeof(buf), &p, WIRE_TYPE_NACK_RESULT, WIRE_DTYPE_NONE, 0, 0, 5);
	EXPECT_FAIL(buf, len + 4, -EBADMSG, WIRE_REASON_LENGTH, "NACK with a payload");

	/* Jumbo limit: the largest count that fits 9000 passes, one more is oversized even
	 * when the buffer holds it; so is any packet longer than 8972 bytes. */
	for (size_t di = 0; di < ARRAY_LEN(data_dtypes); di++) {
		enum wire_dtype d = data_dtypes[di];
		unsigned int max = (unsigned int)wire_max_elems(WIRE_MTU_MAX, d, 0);
		size_t sz = wire_dtype_size(d);

		len = make_pkt(buf, sizeof(buf), &p, WIRE_TYPE_RESULT, d, 0, 1, (uint16_t)max);
		CHECK(len <= WIRE_UDP_PAYLOAD_MAX && len + sz > WIRE_UDP_PAYLOAD_MAX,
		      "max %u is the largest", max);
		buf[32] = (uint8_t)((max + 1) >> 8);
		buf[33] = (uint8_t)(max + 1);
		EXPECT_FAIL(buf, len + sz, -EMSGSIZE, WIRE_REASON_OVERSIZE, "%s count %u",
			    wire_dtype_str(d), max + 1);
		EXPECT_FAIL(buf, len, -EMSGSIZE, WIRE_REASON_OVERSIZE, "count %u, short", max + 1);
		buf[32] = buf[33] = 0xff;
		EXPECT_FAIL(buf, 65535 * sz + WIRE_HDR_LEN > sizeof(buf) ? sizeof(buf) : len,
			    -EMSGSIZE, WIRE_REASON_OVERSIZE, "count 65535");
		/* encode refuses it too */
		p.count = (uint16_t)(max + 1);
		{
			enum wire_reason why;

			CHECK(wire_hdr_encode(buf, sizeof(buf), &p, &why) == -EINVAL &&
			      why == WIRE_REASON_OVERSIZE, "encode oversize");
		}
	}
	len = make_pkt(buf, sizeof(buf), &p, WIRE_TYPE_PROBE, WIRE_DTYPE_NONE, 0, 0,
		       WIRE_UDP_PAYLOAD_MAX - WIRE_HDR_LEN);
	CHECK(decode_exact(buf, len, &p, NULL) == 0, "largest probe");
	EXPECT_FAIL(buf, len + 1, -EMSGSIZE, WIRE_REASON_OVERSIZE, "probe beyond 9000");
	len = make_pkt(buf, sizeof(buf), &p, WIRE_TYPE_ACK, WIRE_DTYPE_NONE, 0, 0, 1);
	EXPECT_FAIL(buf, WIRE_UDP_PAYLOAD_MAX + 1, -EMSGSIZE, WIRE_REASON_OVERSIZE, "ACK 8973");
}

static void
test_encode_rules(void)
{
	uint8_t buf[WIRE_HDR_LEN + 64], before[sizeof(buf)];
	struct wire_pkt p;
	enum wire_reason why;

	make_pkt(buf, sizeof(buf), &p, WIRE_TYPE_CONTRIB, WIRE_DTYPE_FP32, 0, 1, 4);
	memcpy(before, buf, sizeof(buf));

#define ENC_FAIL(field_stmt, reason)                                                       \
	do {                                                                               \
		struct wire_pkt q = p;                                                     \
		int rc_;                                                                   \
		field_stmt;                                                                \
		rc_ = wire_hdr_encode(buf, sizeof(buf), &q, &why);                         \
		CHECK(rc_ == -EINVAL && why == (reason), "%s: %d %s", #field_stmt, rc_,    \
		      wire_reason_str(why));                                               \
		CHECK(memcmp(buf, before, sizeof(buf)) == 0, "nothing written");           \
	} while (0)

	ENC_FAIL(q.type = (enum wire_type)0, WIRE_REASON_TYPE);
	ENC_FAIL(q.type = (enum wire_type)10, WIRE_REASON_TYPE);
	/* The CONTRIB made MCAST: RETX is allowed there (a repair), ECHO is not. */
	ENC_FAIL((q.type = WIRE_TYPE_MCAST, q.flags = WIRE_F_RETX | WIRE_F_ECHO), WIRE_REASON_FLAGS);
	ENC_FAIL(q.flags = 0x04, WIRE_REASON_FLAGS);
	ENC_FAIL(q.tsecr = 1, WIRE_REASON_RESERVED);
	ENC_FAIL(q.dtype = WIRE_DTYPE_NONE, WIRE_REASON_DTYPE);
	ENC_FAIL(q.dtype = (enum wire_dtype)7, WIRE_REASON_DTYPE);
	ENC_FAIL(q.cset_blocks = WIRE_CSET_BLOCKS_MAX + 1, WIRE_REASON_CSET_LEN);
	ENC_FAIL(q.sender = WIRE_NODE_NONE, WIRE_REASON_NODE);
	ENC_FAIL(q.contrib = 0, WIRE_REASON_CONTRIB);
	ENC_FAIL(q.count = 0, WIRE_REASON_COUNT);
	ENC_FAIL((q.type = WIRE_TYPE_ACK, q.dtype = WIRE_DTYPE_NONE, q.contrib = 0,
		  q.flags = 0), WIRE_REASON_FLAGS);
	ENC_FAIL((q.type = WIRE_TYPE_NACK_CONTRIB, q.dtype = WIRE_DTYPE_NONE, q.contrib = 0,
		  q.flags = WIRE_F_RETX), WIRE_REASON_FLAGS);
	ENC_FAIL((q.type = WIRE_TYPE_PROBE, q.dtype = WIRE_DTYPE_NONE, q.contrib = 0,
		  q.flags = 0, q.count = 0, q.payload_len = 9000), WIRE_REASON_OVERSIZE);
#undef ENC_FAIL

	CHECK(wire_hdr_encode(buf, wire_pkt_len(&p) - 1, &p, &why) == -ENOSPC, "no room");
	CHECK(wire_hdr_encode(NULL, 100, &p, &why) == -EINVAL, "NULL");
	CHECK(wire_hdr_encode(buf, sizeof(buf), NULL, &why) == -EINVAL, "NULL pkt");
	CHECK(memcmp(buf, before, sizeof(buf)) == 0, "nothing written");
}

/* ------------------------------------------------------------------------------------ */
/* Fuzzers                                                                              */
/* ------------------------------------------------------------------------------------ */

/* A random valid packet in buf; returns its length. */
static size_t
random_pkt(uint8_t *buf, size_t cap, struct wire_pkt *p)
{
	enum wire_type t = all_types[rnd_below(ARRAY_LEN(all_types))];
	enum wire_dtype d = data_dtypes[rnd_below(ARRAY_LEN(data_dtypes))];
	unsigned int blocks = rnd_below(3) == 0 ? (unsigned int)rnd_below(4) : 0;
	uint16_t count, contrib;

	if (is_data(t)) {
		int max = wire_max_elems(1500 + (unsigned int)rnd_below(7501), d, blocks);

		count = (uint16_t)(1 + rnd_below((uint64_t)max));
		contrib = blocks != 0 ? (uint16_t)(1 + rnd_below(blocks * 256 - 1))
				      : (uint16_t)(1 + rnd_below(65535));
	} else if (is_probe(t)) {
		count = (uint16_t)rnd_below(rnd_below(4) == 0 ? 1500 : 40);
		contrib = 0;
	} else {
		count = (uint16_t)(1 + rnd_below(65535));
		contrib = 0;
	}
	return make_pkt(buf, cap, p, t, d, blocks, contrib, count);
}

static void
test_fuzz_decode(void)
{
	static uint8_t buf[WIRE_UDP_PAYLOAD_MAX + 16], whole[WIRE_UDP_PAYLOAD_MAX + 16];
	unsigned long iters = quick() ? 20000 : 300000, accepted = 0;
	unsigned long by_reason[WIRE_REASON_COUNT_MAX] = { 0 };

	for (unsigned long it = 0; it < iters; it++) {
		struct wire_pkt p, out;
		enum wire_reason why;
		size_t len = random_pkt(buf, sizeof(buf), &p);
		int muts = 1 + (int)rnd_below(4), rc;

		for (int m = 0; m < muts; m++) {
			switch (rnd_below(6)) {
			case 0:         /* flip a bit in the header */
				buf[rnd_below(WIRE_HDR_LEN)] ^= (uint8_t)(1u << rnd_below(8));
				break;
			case 1:         /* random byte in the header */
				buf[rnd_below(WIRE_HDR_LEN)] = (uint8_t)rnd();
				break;
			case 2:         /* a byte anywhere */
				if (len != 0)
					buf[rnd_below(len)] = (uint8_t)rnd();
				break;
			case 3:         /* truncate */
				len = rnd_below(len + 1);
				break;
			case 4:         /* extend (junk up to the buffer) */
				len += rnd_below(sizeof(buf) - len + 1);
				break;
			default:        /* an interesting value in a 16-bit field */
			{
				static const uint16_t vals[] = { 0, 1, 0x7fff, 0x8000, 0xffff,
								 0x100, 0x2c, 0x2d };
				size_t at = 2 * rnd_below(WIRE_HDR_LEN / 2);
				uint16_t v = vals[rnd_below(ARRAY_LEN(vals))];

				buf[at] = (uint8_t)(v >> 8);
				buf[at + 1] = (uint8_t)v;
			}
			}
		}
		rc = decode_exact(buf, len, &out, &why);
		if (rc != 0) {
			if (!CHECK(rc == -EBADMSG || rc == -EPROTONOSUPPORT || rc == -EMSGSIZE,
				   "errno %d", rc))
				break;
			if (!CHECK(why > WIRE_REASON_NONE && why <= WIRE_REASON_CSET,
				   "reason %d", (int)why))
				break;
			by_reason[why]++;
			continue;
		}
		accepted++;
		/* Accepted: consistent, and re-encoding gives back the same header bytes. */
		if (!CHECK(out.payload_off + out.payload_len == len && len <= WIRE_UDP_PAYLOAD_MAX,
			   "layout %u + %u vs %zu", out.payload_off, out.payload_len, len))
			break;
		if (!CHECK(wire_hdr_encode(whole, sizeof(whole), &out, NULL) == 0 &&
			   memcmp(whole, buf, WIRE_HDR_LEN) == 0 && wire_pkt_len(&out) == len,
			   "accepted packet does not re-encode to itself (iteration %lu)", it))
			break;
	}
	printf("\n    fuzz: %lu packets, %lu accepted; rejected by", iters, accepted);
	for (int r = 1; r < WIRE_REASON_COUNT_MAX; r++)
		if (by_reason[r] != 0)
			printf(" %s %lu", wire_reason_str((enum wire_reason)r), by_reason[r]);
	printf("\n");
	/* Every stateless reason is reached by the mutations. */
	for (int r = WIRE_REASON_TRUNCATED; r <= WIRE_REASON_CSET; r++)
		CHECK(by_reason[r] != 0, "reason %s never produced",
		      wire_reason_str((enum wire_reason)r));
}

static void
test_fuzz_frame(void)
{
	static uint8_t frame[WIRE_FRAME_HDR_OFF + WIRE_UDP_PAYLOAD_MAX + 64];
	unsigned long iters = quick() ? 20000 : 200000, ok = 0;

	for (unsigned long it = 0; it < iters; it++) {
		struct wire_flow f = example_flow, g;
		struct wire_pkt p, out;
		enum wire_reason why;
		size_t plen = random_pkt(frame + WIRE_FRAME_HDR_OFF, sizeof(frame) -
					 WIRE_FRAME_HDR_OFF, &p), len, off, ulen;
		uint8_t *copy;
		int rc;

		f.src_ip = (uint32_t)rnd();
		f.src_port = (uint16_t)rnd();
		f.ttl = (uint8_t)rnd();
		f.dscp = (uint8_t)rnd_below(64);
		CHECK(wire_frame_build(frame, sizeof(frame), &f, plen, rnd_below(2)) == 0, "build");
		len = WIRE_FRAME_HDR_OFF + plen;
		if (rnd_below(8) == 0)
			len += rnd_below(20);   /* Ethernet padding */
		for (int m = (int)rnd_below(3); m > 0; m--) {
			if (rnd_below(4) == 0)
				len = rnd_below(len + 1);
			else
				frame[rnd_below(WIRE_FRAME_HDR_OFF + 8)] ^=
					(uint8_t)(1u << rnd_below(8));
		}
		copy = malloc(len != 0 ? len : 1);
		if (copy == NULL)
			abort();
		memcpy(copy, frame, len);
		rc = wire_frame_parse(copy, len, &g, &off, &ulen, &why);
		if (rc == 0) {
			ok++;
			if (!CHECK(off + ulen <= len, "%zu + %zu > %zu", off, ulen, len)) {
				free(copy);
				break;
			}
			(void)wire_hdr_decode(copy + off, ulen, &out, &why);
		} else {
			CHECK(rc == -EBADMSG && why >= WIRE_REASON_L2 && why <= WIRE_REASON_UDP_CSUM,
			      "%d %d", rc, (int)why);
		}
		free(copy);
	}
	printf("\n    frame fuzz: %lu frames, %lu parsed\n", iters, ok);
	CHECK(ok > iters / 10, "some frames survive");
}

/* ------------------------------------------------------------------------------------ */
/* Lower layers                                                                         */
/* ------------------------------------------------------------------------------------ */

static void
test_frame_parse_failures(void)
{
	uint8_t f[sizeof(example_frame) + 8];
	enum wire_reason why;

#define FRAME_FAIL(len, reason, what)                                                      \
	do {                                                                               \
		int rc_ = wire_frame_parse(f, (len), NULL, NULL, NULL, &why);              \
		CHECK(rc_ == -EBADMSG && why == (reason), "%s: %d %s", what, rc_,          \
		      wire_reason_str(why));                                               \
		memcpy(f, example_frame, sizeof(example_frame));                           \
	} while (0)

	memcpy(f, example_frame, sizeof(example_frame));
	FRAME_FAIL(13, WIRE_REASON_L2, "short");
	f[12] = 0x81;           /* VLAN tag */
	FRAME_FAIL(sizeof(example_frame), WIRE_REASON_L2, "802.1Q");
	FRAME_FAIL(33, WIRE_REASON_IP_HDR, "short IP");
	f[14] = 0x46;           /* IHL 6: options */
	FRAME_FAIL(sizeof(example_frame), WIRE_REASON_IP_HDR, "options");
	f[14] = 0x65;
	FRAME_FAIL(sizeof(example_frame), WIRE_REASON_IP_HDR, "IPv6 version");
	FRAME_FAIL(sizeof(example_frame) - 1, WIRE_REASON_IP_HDR, "IP length beyond the frame");
	f[20] = 0x60;           /* DF + MF */
	FRAME_FAIL(sizeof(example_frame), WIRE_REASON_IP_FRAG, "MF");
	f[21] = 0x01;           /* fragment offset */
	FRAME_FAIL(sizeof(example_frame), WIRE_REASON_IP_FRAG, "offset");
	f[22] = 0x3f;           /* TTL changed, checksum not updated */
	FRAME_FAIL(sizeof(example_frame), WIRE_REASON_IP_CSUM, "IP checksum");
	f[23] = 6;              /* TCP; fix the checksum: 0x11 -> 0x06 adds 0x000b */
	f[25] = (uint8_t)(f[25] + 0x0b);
	FRAME_FAIL(sizeof(example_frame), WIRE_REASON_NOT_UDP, "TCP");
	f[39] = 0x6f;           /* UDP length 111 */
	FRAME_FAIL(sizeof(example_frame), WIRE_REASON_UDP_LEN, "UDP length");
	f[143] ^= 1;            /* payload bit */
	FRAME_FAIL(sizeof(example_frame), WIRE_REASON_UDP_CSUM, "UDP checksum");
	f[41] ^= 1;
	FRAME_FAIL(sizeof(example_frame), WIRE_REASON_UDP_CSUM, "UDP checksum field");
#undef FRAME_FAIL
	/* Ethernet padding after the IP packet is ignored. */
	memcpy(f, example_frame, sizeof(example_frame));
	memset(f + sizeof(example_frame), 0xaa, 8);
	{
		size_t ulen = 0;

		CHECK(wire_frame_parse(f, sizeof(f), NULL, NULL, &ulen, &why) == 0 && ulen == 102,
		      "padding");
	}
	CHECK(wire_frame_parse(NULL, 10, NULL, NULL, NULL, &why) == -EINVAL, "NULL");
	/* Builder errors. */
	{
		struct wire_flow fl = example_flow;

		CHECK(wire_frame_build(f, 41, &fl, 0, false) == -ENOSPC, "no room");
		CHECK(wire_frame_build(f, sizeof(f), &fl, 200, true) == -ENOSPC,
		      "checksum needs the payload");
		CHECK(wire_frame_build(f, sizeof(f), &fl, WIRE_UDP_PAYLOAD_MAX + 1, false) ==
		      -EINVAL, "oversized");
		fl.dscp = 64;
		CHECK(wire_frame_build(f, sizeof(f), &fl, 10, false) == -EINVAL, "dscp");
	}
}

static void
test_checksum(void)
{
	/* RFC 1071 section 3 example: 00 01 f2 03 f4 f5 f6 f7 sums to 0xddf2 (folded). */
	static const uint8_t rfc[] = { 0x00, 0x01, 0xf2, 0x03, 0xf4, 0xf5, 0xf6, 0xf7 };
	uint8_t big[9001];

	CHECK(wire_csum_fold(wire_csum_add(0, rfc, sizeof(rfc))) == (uint16_t)~0xddf2, "rfc");
	/* Chained even pieces equal one pass; an odd tail is zero-padded. */
	CHECK(wire_csum_add(wire_csum_add(0, rfc, 4), rfc + 4, 4) ==
	      wire_csum_add(0, rfc, 8), "chain");
	CHECK(wire_csum_fold(wire_csum_add(0, rfc, 3)) ==
	      wire_csum_fold(wire_csum_add(0, (const uint8_t[]){ 0x00, 0x01, 0xf2, 0x00 }, 4)),
	      "odd");
	/* A UDP checksum that computes to 0 is sent as 0xffff (0 means "none"): with a 2-byte
	 * probe payload of 0 the checksum is c; a payload word of c makes the sum 0xffff. */
	{
		uint8_t fr[WIRE_FRAME_HDR_OFF + WIRE_HDR_LEN + 2] = { 0 };
		struct wire_pkt p = { .type = WIRE_TYPE_PROBE, .sender = 1, .origin = 1,
				      .payload_len = 2 };
		uint8_t *pay = fr + WIRE_FRAME_HDR_OFF + WIRE_HDR_LEN;
		size_t plen = WIRE_HDR_LEN + 2;

		CHECK(wire_hdr_encode(fr + WIRE_FRAME_HDR_OFF, plen, &p, NULL) == 0, "probe");
		CHECK(wire_frame_build(fr, sizeof(fr), &example_flow, plen, true) == 0, "build");
		pay[0] = fr[40];
		pay[1] = fr[41];
		CHECK(wire_frame_build(fr, sizeof(fr), &example_flow, plen, true) == 0, "build");
		CHECK(fr[40] == 0xff && fr[41] == 0xff, "checksum 0 sent as 0xffff, got %02x%02x",
		      fr[40], fr[41]);
		CHECK(wire_frame_parse(fr, sizeof(fr), NULL, NULL, NULL, NULL) == 0, "and accepted");
	}
	memset(big, 0xff, sizeof(big));
	CHECK(wire_csum_fold(wire_csum_add(0, big, sizeof(big) - 1)) == 0, "all ones");
	CHECK(wire_csum_fold(wire_csum_add(0xffffffffu, big, sizeof(big))) ==
	      wire_csum_fold(wire_csum_add(0xffffffffu, big, sizeof(big))), "no overflow");
}

/* ------------------------------------------------------------------------------------ */
/* Sizes, ports, chunks, rounds                                                         */
/* ------------------------------------------------------------------------------------ */

static void
test_max_elems(void)
{
	CHECK(wire_max_elems(1500, WIRE_DTYPE_FP32, 0) == 354, "%d",
	      wire_max_elems(1500, WIRE_DTYPE_FP32, 0));
	CHECK(wire_max_elems(1500, WIRE_DTYPE_FP16, 0) == 709, "1500 fp16");
	CHECK(wire_max_elems(9000, WIRE_DTYPE_FP32, 0) == 2229, "9000 fp32");
	CHECK(wire_max_elems(9000, WIRE_DTYPE_BF16, 0) == 4459, "9000 bf16");
	CHECK(wire_max_elems(1500, WIRE_DTYPE_FP32, 4) == 322, "1500 fp32, 4 set blocks");
	CHECK(wire_chunk_elems_default(1500, WIRE_DTYPE_FP32, 0) == 352, "default 1500 fp32");
	CHECK(wire_chunk_elems_default(1500, WIRE_DTYPE_FP16, 0) == 704, "default 1500 fp16");
	CHECK(wire_chunk_elems_default(9000, WIRE_DTYPE_FP32, 0) == 2224, "default 9000 fp32");
	CHECK(wire_chunk_elems_default(9000, WIRE_DTYPE_BF16, 0) == 4448, "default 9000 bf16");
	/* MX: whole blocks of 33 (17) bytes. */
	CHECK(wire_max_elems(1500, WIRE_DTYPE_MXINT8, 0) == 1344, "1500 mxint8");
	CHECK(wire_max_elems(1500, WIRE_DTYPE_MXFP8, 2) == 1312, "1500 mxfp8, 2 set blocks");
	CHECK(wire_max_elems(1500, WIRE_DTYPE_MXFP4, 0) == 2656, "1500 mxfp4");
	CHECK(wire_max_elems(9000, WIRE_DTYPE_MXFP4, 0) == 16768, "9000 mxfp4");
	CHECK(wire_max_elems(9000, WIRE_DTYPE_MXINT8, 0) == 8640, "9000 mxint8");
	/* PROTOCOL.md section 8's sealed rows: E for the MTU less the 48 bytes of a seal
	 * (the largest E and the default). */
	static const struct {
		unsigned int mtu;
		enum wire_dtype dt;
		int max, def;
	} sealed[] = {
		{ 1500, WIRE_DTYPE_FP32, 342, 336 },	 { 1500, WIRE_DTYPE_FP16, 685, 672 },
		{ 1500, WIRE_DTYPE_MXINT8, 1312, 1312 }, { 1500, WIRE_DTYPE_MXFP4, 2560, 2560 },
		{ 9000, WIRE_DTYPE_FP32, 2217, 2208 },	 { 9000, WIRE_DTYPE_BF16, 4435, 4416 },
		{ 9000, WIRE_DTYPE_MXINT8, 8576, 8576 }, { 9000, WIRE_DTYPE_MXFP4, 16672, 16672 },
	};
	for (size_t i = 0; i < sizeof(sealed) / sizeof(sealed[0]); i++) {
		unsigned int m = sealed[i].mtu - WIRE_SEAL_OVERHEAD;

		CHECK(wire_max_elems(m, sealed[i].dt, 0) == sealed[i].max &&
			      wire_chunk_elems_default(m, sealed[i].dt, 0) == sealed[i].def,
		      "sealed row %zu: %d %d", i, wire_max_elems(m, sealed[i].dt, 0),
		      wire_chunk_elems_default(m, sealed[i].dt, 0));
	}
	CHECK(wire_chunk_elems_default(1500, WIRE_DTYPE_MXINT8, 0) == 1344, "default mxint8");
	CHECK(wire_payload_bytes(WIRE_DTYPE_MXINT8, 64) == 66, "2 mxint8 blocks");
	CHECK(wire_payload_bytes(WIRE_DTYPE_MXFP4, 64) == 34, "2 mxfp4 blocks");
	CHECK(wire_payload_bytes(WIRE_DTYPE_MXFP8, 33) == 0, "a partial block");
	CHECK(wire_payload_bytes(WIRE_DTYPE_BF16, 3) == 6, "bf16");
	CHECK(wire_payload_bytes((enum wire_dtype)7, 32) == 0, "no dtype");
	CHECK(wire_dtype_granule(WIRE_DTYPE_MXFP4) == 32 &&
	      wire_dtype_granule(WIRE_DTYPE_FP16) == 1 &&
	      wire_dtype_granule(WIRE_DTYPE_NONE) == 0, "granules");
	CHECK(strcmp(wire_dtype_str(WIRE_DTYPE_MXFP8), "mxfp8") == 0, "name");
	CHECK(wire_max_elems(575, WIRE_DTYPE_FP32, 0) == -EINVAL, "mtu too small");
	CHECK(wire_max_elems(9001, WIRE_DTYPE_FP32, 0) == -EINVAL, "mtu too big");
	CHECK(wire_max_elems(1500, WIRE_DTYPE_NONE, 0) == -EINVAL, "no dtype");
	CHECK(wire_max_elems(1500, WIRE_DTYPE_FP32, 17) == -EINVAL, "set too long");
	CHECK(wire_max_elems(576, WIRE_DTYPE_FP32, 16) == -EINVAL, "nothing fits");
	/* 576 - 82 - 15 x 32 = 14 bytes: 3 fp32, fewer than 64 bytes, not rounded. */
	CHECK(wire_chunk_elems_default(576, WIRE_DTYPE_FP32, 15) == 3, "< 64 bytes: unrounded");
	/* Every MTU and dtype: the maximum fits the MTU exactly, one more does not. */
	for (unsigned int mtu = WIRE_MTU_MIN; mtu <= WIRE_MTU_MAX; mtu += 37)
		for (size_t di = 0; di < ARRAY_LEN(data_dtypes); di++)
			for (unsigned int b = 0; b <= WIRE_CSET_BLOCKS_MAX; b += 5) {
				enum wire_dtype d = data_dtypes[di];
				int max = wire_max_elems(mtu, d, b), def;
				struct wire_pkt p = { .type = WIRE_TYPE_CONTRIB, .dtype = d,
						      .cset_blocks = (uint8_t)b };
				size_t ip;

				if (max < 0)
					continue;
				p.count = (uint16_t)max;
				ip = WIRE_IPV4_LEN + WIRE_UDP_LEN + wire_pkt_len(&p);
				CHECK(ip <= mtu && ip + wire_dtype_size(d) > mtu, "mtu %u", mtu);
				def = wire_chunk_elems_default(mtu, d, b);
				CHECK(def > 0 && def <= max && (def * wire_dtype_size(d) % 64 == 0 ||
								def == max), "default %d", def);
			}
}

static void
test_ports(void)
{
	CHECK(wire_port_range_check(WIRE_PORT_BASE_DEFAULT, WIRE_PORT_COUNT_DEFAULT) == 0, "def");
	CHECK(wire_port_range_check(1, 65535) == 0, "all ports");
	CHECK(wire_port_range_check(65535, 1) == 0, "last port");
	CHECK(wire_port_range_check(0, 1) == -EINVAL, "port 0");
	CHECK(wire_port_range_check(65535, 2) == -EINVAL, "beyond 65535");
	CHECK(wire_port_range_check(100, 0) == -EINVAL, "no ports");
	CHECK(wire_port_range_check(70000, 1) == -EINVAL, "base too big");
	CHECK(wire_udp_port(17400, 16, 0) == 17400 && wire_udp_port(17400, 16, 15) == 17415 &&
	      wire_udp_port(17400, 16, 16) == 17400 && wire_udp_port(17400, 16, UINT32_MAX) ==
	      17415, "formula");
	CHECK(wire_udp_port(1, 65535, UINT32_MAX) == 1 + UINT32_MAX % 65535, "full range");
	for (int it = 0; it < 2000; it++) {
		unsigned int count = 1 + (unsigned int)rnd_below(rnd_below(4) == 0 ? 65535 : 64);
		unsigned int base = 1 + (unsigned int)rnd_below(65536 - count);
		uint32_t seen = 0, c0 = (uint32_t)rnd();

		CHECK(wire_port_range_check(base, count) == 0, "%u %u", base, count);
		for (uint32_t k = 0; k < 64; k++) {
			uint32_t c = c0 + k;
			uint16_t port = wire_udp_port((uint16_t)base, (uint16_t)count, c);

			if (!CHECK(port >= base && port <= base + count - 1 &&
				   port == base + c % count, "chunk %u -> %u", c, port))
				return;
			if (count <= 32)
				seen |= 1u << (port - base);
		}
		/* 64 consecutive chunks reach every port of a range of up to 32 ports. */
		if (count <= 32)
			CHECK(seen == (count == 32 ? UINT32_MAX : (1u << count) - 1), "coverage");
	}
}

/* Check the shares of one mapping: each element and each chunk exactly once, in order. */
static bool
check_map(uint64_t n, uint32_t e, const uint32_t *w, unsigned int k,
	  const struct wire_share *s)
{
	int64_t total = wire_chunk_total(n, e);
	uint64_t next_chunk = 0, next_elem = 0, wsum = 0, wpre = 0;

	for (unsigned int t = 0; t < k; t++)
		wsum += w[t];
	for (unsigned int t = 0; t < k; t++) {
		uint64_t elems = 0;

		/* contiguous: share t starts where share t - 1 ended */
		if (!CHECK(s[t].first_chunk == next_chunk || s[t].n_chunks == 0, "tree %u chunk", t))
			return false;
		if (!CHECK(s[t].first_elem == next_elem, "tree %u first_elem %" PRIu64 " want %"
			   PRIu64, t, s[t].first_elem, next_elem))
			return false;
		if (s[t].n_chunks != 0 &&
		    !CHECK(s[t].first_elem == (uint64_t)s[t].first_chunk * e, "offset"))
			return false;
		/* the formula, recomputed */
		wpre += w[t];
		if (!CHECK((uint64_t)s[t].first_chunk + s[t].n_chunks ==
			   (uint64_t)total * wpre / wsum || s[t].n_chunks == 0, "boundary"))
			return false;
		if (k <= 64 && s[t].n_chunks <= 4096)
			for (uint32_t c = 0; c < s[t].n_chunks; c++)
				elems += wire_chunk_len(n, e, s[t].first_chunk + c);
		else
			elems = s[t].n_elems;
		if (!CHECK(elems == s[t].n_elems, "tree %u elems %" PRIu64 " vs %" PRIu64, t, elems,
			   s[t].n_elems))
			return false;
		if (w[t] == 0 && !CHECK(s[t].n_chunks == 0, "weight 0 gets nothing"))
			return false;
		next_chunk += s[t].n_chunks;
		next_elem += s[t].n_elems;
	}
	return CHECK(next_chunk == (uint64_t)total && next_elem == n, "covers %" PRIu64 "/%" PRIu64
		     " elems, %" PRIu64 "/%" PRId64 " chunks", next_elem, n, next_chunk, total);
}

static void
test_chunk_map(void)
{
	struct wire_share s[70];
	uint32_t w[70];
	int iters = quick() ? 300 : 3000;

	/* The fixed cases of PROTOCOL.md. */
	{
		uint32_t w3[3] = { 500000, 300000, 200000 };

		CHECK(wire_chunk_map(1000000, 352, w3, 3, s) == 0, "map");
		CHECK(wire_chunk_total(1000000, 352) == 2841, "2841 chunks");
		CHECK(s[0].first_chunk == 0 && s[0].n_chunks == 1420 && s[1].first_chunk == 1420 &&
		      s[1].n_chunks == 852 && s[2].first_chunk == 2272 && s[2].n_chunks == 569,
		      "ranges %u+%u %u+%u %u+%u", s[0].first_chunk, s[0].n_chunks, s[1].first_chunk,
		      s[1].n_chunks, s[2].first_chunk, s[2].n_chunks);
		CHECK(s[2].first_elem == 799744 && s[2].n_elems == 200256, "last share");
		CHECK(wire_chunk_len(1000000, 352, 2840) == 1000000 - 2840 * 352, "tail 320");
		CHECK(wire_chunk_len(1000000, 352, 2841) == 0, "beyond");
		check_map(1000000, 352, w3, 3, s);
	}
	/* Edge cases. */
	{
		uint32_t w1[1] = { 1 }, w2[2] = { 0, 7 }, wz[2] = { 0, 0 };
		uint32_t wbig[2] = { UINT32_MAX - 1, 1 }, wover[2] = { UINT32_MAX, 1 };

		CHECK(wire_chunk_map(0, 100, w1, 1, s) == 0 && s[0].n_chunks == 0 &&
		      s[0].n_elems == 0, "empty tensor");
		CHECK(wire_chunk_map(5, 100, w2, 2, s) == 0 && s[0].n_chunks == 0 &&
		      s[1].n_chunks == 1 && s[1].n_elems == 5, "weight 0");
		CHECK(wire_chunk_map(5, 100, wz, 2, s) == -EINVAL, "all zero");
		CHECK(wire_chunk_map(5, 0, w1, 1, s) == -EINVAL, "0 elements per chunk");
		CHECK(wire_chunk_map(5, 65536, w1, 1, s) == -EINVAL, "count is 16 bits");
		CHECK(wire_chunk_map(5, 10, w1, 0, s) == -EINVAL, "no trees");
		CHECK(wire_chunk_map(5, 10, NULL, 1, s) == -EINVAL, "NULL");
		CHECK(wire_chunk_map(1000, 10, wover, 2, s) == -EINVAL, "weights overflow");
		CHECK(wire_chunk_map(1000, 10, wbig, 2, s) == 0, "largest weight sum");
		check_map(1000, 10, wbig, 2, s);
		/* 2^32 - 1 chunks of 65535 elements: the largest tensor, no overflow. */
		CHECK(wire_chunk_total(65535ull * UINT32_MAX, 65535) == UINT32_MAX, "largest");
		CHECK(wire_chunk_total(65535ull * UINT32_MAX + 1, 65535) == -ERANGE, "too many");
		CHECK(wire_chunk_map(65535ull * UINT32_MAX, 65535, wbig, 2, s) == 0, "huge");
		check_map(65535ull * UINT32_MAX, 65535, wbig, 2, s);
		CHECK(s[0].n_chunks == UINT32_MAX - 1 && s[1].n_chunks == 1, "%u %u",
		      s[0].n_chunks, s[1].n_chunks);
		CHECK(wire_chunk_len(65535ull * UINT32_MAX, 65535, UINT32_MAX - 1) == 65535,
		      "last chunk");
	}
	/* Random tensors, chunk sizes and shares: every element exactly once. */
	for (int it = 0; it < iters; it++) {
		unsigned int k = 1 + (unsigned int)rnd_below(rnd_below(4) == 0 ? 70 : 6);
		unsigned int bits = 10 + (unsigned int)rnd_below(30);
		uint64_t n = rnd_below(5) == 0 ? rnd_below(100) : rnd_below(1ull << bits);
		uint32_t e = 1 + (uint32_t)rnd_below(rnd_below(2) ? 65535 : 5000);
		uint64_t wsum = 0;

		for (unsigned int t = 0; t < k; t++) {
			uint64_t lim = rnd_below(2) ? 1000001 : UINT32_MAX / k;

			w[t] = rnd_below(6) == 0 ? 0 : (uint32_t)rnd_below(lim);
			wsum += w[t];
		}
		if (wsum == 0)
			w[0] = 1;
		if (wire_chunk_total(n, e) < 0) {
			CHECK(wire_chunk_total(n, e) == -ERANGE && wire_chunk_map(n, e, w, k, s) ==
			      -ERANGE, "n %" PRIu64 " e %u: 2^32 chunks or more", n, e);
			continue;
		}
		if (!CHECK(wire_chunk_map(n, e, w, k, s) == 0, "map n %" PRIu64 " e %u k %u", n, e,
			   k))
			break;
		if (!check_map(n, e, w, k, s)) {
			fprintf(stderr, "  n %" PRIu64 " e %u k %u\n", n, e, k);
			break;
		}
	}
	/* Exhaustive small tensors: an element-ownership array. */
	for (uint64_t n = 0; n <= 200; n++)
		for (uint32_t e = 1; e <= 23; e += 3) {
			uint32_t w4[4] = { 3, 0, 1, (uint32_t)n % 5 };
			uint8_t owner[201];

			memset(owner, 0, sizeof(owner));
			CHECK(wire_chunk_map(n, e, w4, 4, s) == 0, "map");
			for (unsigned int t = 0; t < 4; t++)
				for (uint32_t c = 0; c < s[t].n_chunks; c++) {
					uint64_t at = (uint64_t)(s[t].first_chunk + c) * e;
					uint32_t l = wire_chunk_len(n, e, s[t].first_chunk + c);

					for (uint32_t i = 0; i < l; i++)
						owner[at + i]++;
				}
			for (uint64_t i = 0; i < n; i++)
				if (!CHECK(owner[i] == 1, "n %" PRIu64 " e %u: element %" PRIu64
					   " owned %u times", n, e, i, owner[i]))
					return;
		}
}

static void
test_rounds_and_names(void)
{
	const char *names[WIRE_REASON_COUNT_MAX];

	CHECK(wire_round_before(1, 2) && !wire_round_before(2, 1) && !wire_round_before(5, 5),
	      "order");
	CHECK(wire_round_before(UINT32_MAX, 0) && !wire_round_before(0, UINT32_MAX), "wrap");
	CHECK(wire_round_before(0, 0x7fffffff) && !wire_round_before(0, 0x80000001u), "half");
	for (int r = 0; r < WIRE_REASON_COUNT_MAX; r++) {
		names[r] = wire_reason_str((enum wire_reason)r);
		CHECK(strcmp(names[r], "?") != 0, "reason %d has a name", r);
		for (int q = 0; q < r; q++)
			CHECK(strcmp(names[q], names[r]) != 0, "names %d and %d differ", q, r);
	}
	CHECK(strcmp(wire_reason_str(WIRE_REASON_COUNT_MAX), "?") == 0, "out of range");
	CHECK(strcmp(wire_reason_str((enum wire_reason)-1), "?") == 0, "negative");
}

/* ------------------------------------------------------------------------------------ */
/* MCAST (type 8)                                                                       */
/* ------------------------------------------------------------------------------------ */

/* A valid MCAST of `count` elements of dtype d in buf (header + payload), its length
 * returned. */
static size_t
make_mcast(uint8_t *buf, size_t cap, struct wire_pkt *p, enum wire_dtype d, uint16_t count)
{
	size_t len;

	memset(p, 0, sizeof(*p));
	p->type = WIRE_TYPE_MCAST;
	p->dtype = d;
	p->job = 77;
	p->epoch = 3;
	p->tree = 0x0102;               /* stream id */
	p->sender = 12;
	p->origin = 5;
	p->contrib = 1;
	p->round = 0x80000001u;
	p->chunk = 4321;
	p->count = count;
	p->tsval = 0xdeadbeef;
	len = wire_pkt_len(p);
	CHECK(len == WIRE_HDR_LEN + (size_t)count * wire_dtype_size(d), "mcast length %zu", len);
	CHECK(len <= cap, "mcast of %zu bytes in %zu", len, cap);
	memset(buf, 0, len);
	CHECK(wire_hdr_encode(buf, cap, p, NULL) == 0, "encode mcast");
	for (size_t i = WIRE_HDR_LEN; i < len; i++)
		buf[i] = (uint8_t)(i * 7 + 3);
	return len;
}

static void
test_mcast(void)
{
	static uint8_t buf[WIRE_UDP_PAYLOAD_MAX + 16];
	struct wire_pkt p, q;
	enum wire_reason why;
	size_t len;

	CHECK(WIRE_TYPE_MCAST == 8, "MCAST is type 8");
	CHECK(strcmp(wire_type_str(WIRE_TYPE_MCAST), "mcast") == 0, "name");

	/* Round trips, every dtype, 1 element to the jumbo maximum. */
	for (size_t di = 0; di < ARRAY_LEN(data_dtypes); di++) {
		enum wire_dtype d = data_dtypes[di];
		uint16_t counts[] = { 1, 352, (uint16_t)wire_max_elems(WIRE_MTU_MAX, d, 0) };

		for (size_t ci = 0; ci < ARRAY_LEN(counts); ci++) {
			len = make_mcast(buf, sizeof(buf), &p, d, counts[ci]);
			CHECK(buf[3] == 8 && buf[4] == 0 && buf[6] == 0, "type byte, no flags, no set");
			CHECK(decode_exact(buf, len, &q, &why) == 0, "decode %s x %u: %s",
			      wire_dtype_str(d), counts[ci], wire_reason_str(why));
			CHECK(pkt_equal(&p, &q), "round trip %s x %u", wire_dtype_str(d), counts[ci]);
			CHECK(q.payload_off == WIRE_HDR_LEN &&
			      q.payload_len == counts[ci] * wire_dtype_size(d), "payload at 54");
		}
	}
	/* Too many elements for a jumbo frame. */
	len = make_mcast(buf, sizeof(buf), &p, WIRE_DTYPE_FP32, 1);
	p.count = (uint16_t)(wire_max_elems(WIRE_MTU_MAX, WIRE_DTYPE_FP32, 0) + 1);
	CHECK(wire_hdr_encode(buf, sizeof(buf), &p, &why) == -EINVAL &&
	      why == WIRE_REASON_OVERSIZE, "encode: oversize");

	/* RETX alone is allowed (a copy sent again in answer to a NACK_MCAST): an MCAST
	 * answers no request, so it never echoes. */
	len = make_mcast(buf, sizeof(buf), &p, WIRE_DTYPE_FP16, 8);
	for (int bit = 1; bit < 8; bit++) {
		buf[4] = (uint8_t)(1u << bit);
		EXPECT_FAIL(buf, len, -EBADMSG, WIRE_REASON_FLAGS, "mcast flag bit %d", bit);
		buf[4] = (uint8_t)(1u << bit | WIRE_F_RETX);
		EXPECT_FAIL(buf, len, -EBADMSG, WIRE_REASON_FLAGS, "mcast flag bits 0, %d", bit);
	}
	buf[4] = WIRE_F_RETX;
	CHECK(decode_exact(buf, len, &q, &why) == 0 && q.flags == WIRE_F_RETX, "mcast RETX: %s",
	      wire_reason_str(why));
	buf[4] = 0;
	p.flags = WIRE_F_ECHO;
	CHECK(wire_hdr_encode(buf, sizeof(buf), &p, &why) == -EINVAL && why == WIRE_REASON_FLAGS,
	      "encode: ECHO");
	p.flags = WIRE_F_RETX;
	CHECK(wire_hdr_encode(buf, sizeof(buf), &p, &why) == 0 && buf[4] == WIRE_F_RETX,
	      "encode: RETX");
	p.flags = 0;
	buf[4] = 0;
	/* tsecr without ECHO, and reserved bytes. */
	buf[41] = 1;
	EXPECT_FAIL(buf, len, -EBADMSG, WIRE_REASON_RESERVED, "mcast tsecr");
	buf[41] = 0;
	buf[50] = 1;
	EXPECT_FAIL(buf, len, -EBADMSG, WIRE_REASON_RESERVED, "mcast reserved byte 50");
	buf[50] = 0;
	/* MX: whole blocks only. */
	{
		struct wire_pkt mp;
		uint8_t mb[200];
		size_t ml = make_pkt(mb, sizeof(mb), &mp, WIRE_TYPE_CONTRIB, WIRE_DTYPE_MXFP4, 0, 1,
				     64);
		struct wire_pkt out;

		CHECK(ml == WIRE_HDR_LEN + 34, "mxfp4 length %zu", ml);
		CHECK(wire_hdr_decode(mb, ml, &out, NULL) == 0 && out.payload_len == 34 &&
		      out.dtype == WIRE_DTYPE_MXFP4, "mxfp4 decodes");
		mb[33] = 48;    /* count 48: one block and a half */
		EXPECT_FAIL(mb, ml, -EBADMSG, WIRE_REASON_COUNT, "mxfp4 count 48");
		mb[33] = 96;
		EXPECT_FAIL(mb, ml, -EBADMSG, WIRE_REASON_LENGTH, "mxfp4 count 96, 2 blocks");
		mp.count = 33;
		CHECK(wire_hdr_encode(mb, sizeof(mb), &mp, NULL) == -EINVAL, "encode count 33");
	}
	/* dtype 0 and 7. */
	buf[5] = 0;
	EXPECT_FAIL(buf, len, -EBADMSG, WIRE_REASON_DTYPE, "mcast dtype 0");
	buf[5] = 7;
	EXPECT_FAIL(buf, len, -EBADMSG, WIRE_REASON_DTYPE, "mcast dtype 7");
	buf[5] = WIRE_DTYPE_FP16;
	/* No contributor set, ever. */
	buf[6] = 1;
	EXPECT_FAIL(buf, len, -EBADMSG, WIRE_REASON_CSET_LEN, "mcast with a set");
	buf[6] = 0;
	/* sender and origin: never 0 nor none. */
	buf[19] = 0;
	buf[18] = 0;
	EXPECT_FAIL(buf, len, -EBADMSG, WIRE_REASON_NODE, "mcast sender 0");
	buf[18] = 0xff;
	buf[19] = 0xff;
	EXPECT_FAIL(buf, len, -EBADMSG, WIRE_REASON_NODE, "mcast sender none");
	buf[18] = 0;
	buf[19] = 12;
	buf[21] = 0;
	EXPECT_FAIL(buf, len, -EBADMSG, WIRE_REASON_NODE, "mcast origin 0");
	buf[21] = 5;
	/* contrib is exactly 1: one worker's update, never a sum. */
	buf[23] = 0;
	EXPECT_FAIL(buf, len, -EBADMSG, WIRE_REASON_CONTRIB, "mcast contrib 0");
	buf[23] = 2;
	EXPECT_FAIL(buf, len, -EBADMSG, WIRE_REASON_CONTRIB, "mcast contrib 2");
	buf[23] = 1;
	/* count 0, and lengths that do not match count. */
	buf[32] = 0;
	buf[33] = 0;
	EXPECT_FAIL(buf, len, -EBADMSG, WIRE_REASON_COUNT, "mcast count 0");
	buf[33] = 8;
	EXPECT_FAIL(buf, len - 1, -EBADMSG, WIRE_REASON_LENGTH, "mcast short by one");
	EXPECT_FAIL(buf, len + 1, -EBADMSG, WIRE_REASON_LENGTH, "mcast long by one");
	CHECK(decode_exact(buf, len, &q, &why) == 0 && pkt_equal(&p, &q), "restored: valid");
	/* Type 10 and up still rejected. */
	buf[3] = 10;
	EXPECT_FAIL(buf, len, -EBADMSG, WIRE_REASON_TYPE, "type 10");
}

/* NACK_MCAST (type 9): a receiver's request for the MCAST chunks [chunk, chunk + count) of
 * one origin's round in one stream. */
static void
test_nack_mcast(void)
{
	/* job 77, epoch 3, stream 0x0102, requester 12, origin 5, round 0x80000001, chunks
	 * 4321 .. 4352 (32), tsval 0xdeadbeef: PROTOCOL.md section 5, byte for byte. */
	static const uint8_t want[WIRE_HDR_LEN] = {
		0x47, 0x52, 0x01, 0x09, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x4d,
		0x00, 0x00, 0x00, 0x03, 0x01, 0x02, 0x00, 0x0c, 0x00, 0x05, 0x00, 0x00,
		0x80, 0x00, 0x00, 0x01, 0x00, 0x00, 0x10, 0xe1, 0x00, 0x20, 0x00, 0x00,
		0xde, 0xad, 0xbe, 0xef,
	};
	uint8_t buf[WIRE_HDR_LEN + 8];
	struct wire_pkt p = {
		.type = WIRE_TYPE_NACK_MCAST, .job = 77, .epoch = 3, .tree = 0x0102,
		.sender = 12, .origin = 5, .round = 0x80000001u, .chunk = 4321,
		.count = WIRE_NACK_RANGE_MAX, .tsval = 0xdeadbeef,
	}, q;
	enum wire_reason why;

	CHECK(WIRE_TYPE_NACK_MCAST == 9 && WIRE_TYPE_MAX == 9, "NACK_MCAST is type 9, the last");
	CHECK(strcmp(wire_type_str(WIRE_TYPE_NACK_MCAST), "nack_mcast") == 0, "name");
	CHECK(wire_pkt_len(&p) == WIRE_HDR_LEN, "header only");
	memset(buf, 0xaa, sizeof(buf));
	CHECK(wire_hdr_encode(buf, sizeof(buf), &p, &why) == 0, "encode: %s",
	      wire_reason_str(why));
	CHECK(memcmp(buf, want, WIRE_HDR_LEN) == 0, "bytes as PROTOCOL.md");
	CHECK(decode_exact(buf, WIRE_HDR_LEN, &q, &why) == 0 && pkt_equal(&p, &q), "round trip");
	/* ECHO is allowed, as on every request. */
	buf[4] = WIRE_F_ECHO;
	CHECK(decode_exact(buf, WIRE_HDR_LEN, &q, &why) == 0, "ECHO: %s", wire_reason_str(why));
	buf[4] = 0;
	/* One byte changed at a time: RETX, a dtype, a set, a contrib, count 33 and 0. */
	{
		static const struct {
			unsigned int off;
			uint8_t v;
			enum wire_reason why;
		} bad[] = {
			{ 4, WIRE_F_RETX, WIRE_REASON_FLAGS }, { 5, WIRE_DTYPE_FP32, WIRE_REASON_DTYPE },
			{ 6, 1, WIRE_REASON_CSET_LEN }, { 23, 1, WIRE_REASON_CONTRIB },
			{ 33, WIRE_NACK_RANGE_MAX + 1, WIRE_REASON_COUNT }, { 33, 0, WIRE_REASON_COUNT },
		};

		for (size_t i = 0; i < ARRAY_LEN(bad); i++) {
			uint8_t keep = buf[bad[i].off];

			buf[bad[i].off] = bad[i].v;
			EXPECT_FAIL(buf, WIRE_HDR_LEN, -EBADMSG, bad[i].why, "byte %u = %u",
				    bad[i].off, bad[i].v);
			buf[bad[i].off] = keep;
		}
	}
	EXPECT_FAIL(buf, WIRE_HDR_LEN + 4, -EBADMSG, WIRE_REASON_LENGTH, "with a payload");
	/* The range within 2^32 chunks. */
	buf[33] = 2;
	memset(buf + 28, 0xff, 4);
	EXPECT_FAIL(buf, WIRE_HDR_LEN, -EBADMSG, WIRE_REASON_COUNT, "past chunk 2^32 - 1");
	buf[33] = 1;
	CHECK(decode_exact(buf, WIRE_HDR_LEN, &q, &why) == 0 && q.chunk == UINT32_MAX,
	      "the last chunk alone");
	p.count = WIRE_NACK_RANGE_MAX + 1;
	CHECK(wire_hdr_encode(buf, sizeof(buf), &p, &why) == -EINVAL && why == WIRE_REASON_COUNT,
	      "encode: count 33");
	/* sender and origin: never 0 nor none. */
	p.count = 1;
	p.origin = WIRE_NODE_NONE;
	CHECK(wire_hdr_encode(buf, sizeof(buf), &p, &why) == -EINVAL && why == WIRE_REASON_NODE,
	      "encode: origin none");
}

/* ------------------------------------------------------------------------------------ */
/* main                                                                                 */
/* ------------------------------------------------------------------------------------ */

static const struct testutil_case tests[] = {
	{ "layout and static facts", test_layout },
	{ "PROTOCOL.md worked example, byte for byte", test_example_vector },
	{ "round trip: every type and dtype", test_roundtrip },
	{ "reject: truncated", test_truncated },
	{ "reject: magic, version, type", test_bad_magic_version_type },
	{ "reject: flags, reserved bits", test_bad_flags_reserved },
	{ "reject: dtype, set, node, contrib, count", test_bad_fields },
	{ "reject: length, oversize (jumbo)", test_length_and_size },
	{ "encode: rules and no partial writes", test_encode_rules },
	{ "fuzz: mutated packets", test_fuzz_decode },
	{ "fuzz: mutated frames", test_fuzz_frame },
	{ "frame parse failures", test_frame_parse_failures },
	{ "internet checksum", test_checksum },
	{ "max elements for an MTU", test_max_elems },
	{ "UDP port formula", test_ports },
	{ "chunk mapping covers every element once", test_chunk_map },
	{ "rounds and reason names", test_rounds_and_names },
	{ "MCAST: round trip and rejections", test_mcast },
	{ "NACK_MCAST: layout, round trip and rejections", test_nack_mcast },
};

int
main(void)
{
	const char *s = getenv("GEOREDUCE_FUZZ_SEED");
	uint64_t seed = s != NULL ? strtoull(s, NULL, 0) : 0x6e0e0d0ce;

	rng_state = seed;
	printf("test_wire: seed 0x%" PRIx64 " (GEOREDUCE_FUZZ_SEED)\n", seed);
	return testutil_run("test_wire", "wire", tests, TESTUTIL_N(tests));
}
