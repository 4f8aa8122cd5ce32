/* SPDX-License-Identifier: BSD-3-Clause
 *
 * Writes the seed corpus of fuzz_wire (tests/fuzz/corpus/fuzz_wire/): whole Ethernet frames
 * of every packet type built with the wire API (wire_hdr_encode(), wire_cset_add(),
 * wire_frame_build()), each checked to parse and decode before it is written. Run once by
 * hand when the format changes:
 *   clang -Ilib tests/fuzz/gen_wire_corpus.c lib/wire.c -o /tmp/gen && /tmp/gen DIR
 */
#include <stdio.h>
#include <string.h>

#include "wire.h"

static const struct wire_flow flow = {
	.dst_mac = {2, 0, 0, 0, 0, 2},
	.src_mac = {2, 0, 0, 0, 0, 1},
	.src_ip = 0x0a000101,
	.dst_ip = 0x0a000201,
	.src_port = 17408,
	.dst_port = 17408,
	.ttl = 64,
	.ip_id = 0x1234,
};

static int
emit(const char *dir, const char *name, struct wire_pkt p)
{
	static uint8_t frame[WIRE_FRAME_HDR_OFF + WIRE_UDP_PAYLOAD_MAX];
	uint8_t *g = frame + WIRE_FRAME_HDR_OFF;
	size_t len = wire_pkt_len(&p), off, plen;
	enum wire_reason why;
	struct wire_pkt q;
	char path[512];
	FILE *f;

	memset(frame, 0, sizeof(frame));
	if (p.type == WIRE_TYPE_PROBE || p.type == WIRE_TYPE_PROBE_REPLY)
		for (size_t i = WIRE_HDR_LEN; i < len; i++)
			g[i] = (uint8_t)i;
	for (unsigned int i = 0; i < p.contrib && p.cset_blocks > 0; i++)
		wire_cset_add(g + WIRE_HDR_LEN, p.cset_blocks, (uint16_t)(10 + i));
	for (size_t i = WIRE_HDR_LEN + WIRE_CSET_BLOCK * p.cset_blocks; i < len; i++)
		g[i] = (uint8_t)(i * 7);
	if (wire_hdr_encode(g, len, &p, &why) != 0) {
		fprintf(stderr, "%s: encode: %s\n", name, wire_reason_str(why));
		return 1;
	}
	if (wire_frame_build(frame, WIRE_FRAME_HDR_OFF + len, &flow, len, true) != 0 ||
	    wire_frame_parse(frame, WIRE_FRAME_HDR_OFF + len, NULL, &off, &plen, &why) != 0 ||
	    wire_hdr_decode(frame + off, plen, &q, &why) != 0) {
		fprintf(stderr, "%s: does not parse: %s\n", name, wire_reason_str(why));
		return 1;
	}
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "wb");
	if (f == NULL || fwrite(frame, 1, WIRE_FRAME_HDR_OFF + len, f) != WIRE_FRAME_HDR_OFF + len)
		return 1;
	return fclose(f) != 0;
}

int
main(int argc, char **argv)
{
	const struct wire_pkt base = {
		.type = WIRE_TYPE_CONTRIB,
		.dtype = WIRE_DTYPE_FP32,
		.job = 7,
		.epoch = 3,
		.tree = 2,
		.sender = 9,
		.origin = 8,
		.contrib = 1,
		.round = 41,
		.chunk = 1000,
		.count = 4,
		.tsval = 0x00abcdef,
	};
	struct wire_pkt p;
	int bad = 0;

	if (argc != 2)
		return 2;
	p = base;
	bad |= emit(argv[1], "contrib-fp32", p);
	p.type = WIRE_TYPE_RESULT;
	p.cset_blocks = 1;
	p.contrib = 3;
	bad |= emit(argv[1], "result-fp32-cset", p);
	p = base;
	p.dtype = WIRE_DTYPE_FP16;
	p.count = 9;
	bad |= emit(argv[1], "contrib-fp16", p);
	p.dtype = WIRE_DTYPE_BF16;
	bad |= emit(argv[1], "contrib-bf16", p);
	p.dtype = WIRE_DTYPE_MXINT8;
	p.count = 64;
	bad |= emit(argv[1], "contrib-mxint8", p);
	p.dtype = WIRE_DTYPE_MXFP4;
	p.count = 32;
	bad |= emit(argv[1], "contrib-mxfp4", p);
	p = base;
	p.type = WIRE_TYPE_MCAST;
	bad |= emit(argv[1], "mcast-fp32", p);
	p = base;
	p.type = WIRE_TYPE_ACK;
	p.flags = WIRE_F_ECHO;
	p.dtype = WIRE_DTYPE_NONE;
	p.contrib = 0;
	p.count = 1;
	bad |= emit(argv[1], "ack", p);
	p.flags = 0;
	p.type = WIRE_TYPE_NACK_CONTRIB;
	bad |= emit(argv[1], "nack-contrib", p);
	p.type = WIRE_TYPE_NACK_RESULT;
	bad |= emit(argv[1], "nack-result", p);
	p.type = WIRE_TYPE_NACK_MCAST;
	bad |= emit(argv[1], "nack-mcast", p);
	p.type = WIRE_TYPE_PROBE;
	p.count = 0;
	p.payload_len = 16;
	bad |= emit(argv[1], "probe", p);
	p.type = WIRE_TYPE_PROBE_REPLY;
	p.flags = WIRE_F_ECHO;
	bad |= emit(argv[1], "probe-reply", p);
	return bad;
}
