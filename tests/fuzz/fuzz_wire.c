/* SPDX-License-Identifier: BSD-3-Clause
 *
 * libFuzzer harness of the wire format (lib/wire.c): the input is a whole Ethernet frame.
 * It goes through wire_frame_parse() (and wire_frame_parse_flags() without the checksum
 * checks), and the input itself, and the UDP payload of an accepted frame, through
 * wire_hdr_decode(). Besides "no crash, no undefined behaviour, no read outside the
 * input": a header that decodes encodes again (wire_hdr_encode() accepts it) to the same
 * 54 bytes, decodes again to the same fields, and wire_pkt_len() of it is the length it
 * was decoded from; the contributor set's helpers stay within the set.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "wire.h"

static void
check_hdr(const uint8_t *buf, size_t len)
{
	struct wire_pkt p, q;
	enum wire_reason why;
	uint8_t *enc;

	memset(&p, 0, sizeof(p));
	if (wire_hdr_decode(buf, len, &p, &why) != 0)
		return;
	if (why != WIRE_REASON_NONE || wire_pkt_len(&p) != len)
		abort();
	if (p.cset_blocks > 0) {
		unsigned int n = wire_cset_count(buf + WIRE_HDR_LEN, p.cset_blocks);

		if (n > p.cset_blocks * WIRE_CSET_BLOCK * 8u)
			abort();
		(void)wire_cset_test(buf + WIRE_HDR_LEN, p.cset_blocks, p.sender);
	}
	/* Encode into a copy of the packet (the set and payload stay as they were). */
	enc = malloc(len);
	if (enc == NULL)
		return;
	memcpy(enc, buf, len);
	memset(enc, 0xa5, WIRE_HDR_LEN);
	if (wire_hdr_encode(enc, len, &p, &why) != 0)
		abort();
	if (memcmp(enc, buf, WIRE_HDR_LEN) != 0)
		abort();
	memset(&q, 0, sizeof(q));
	if (wire_hdr_decode(enc, len, &q, &why) != 0 || memcmp(&p, &q, sizeof(p)) != 0)
		abort();
	free(enc);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct wire_flow f;
	size_t off = 0, plen = 0;
	enum wire_reason why;

	check_hdr(data, size);
	if (wire_frame_parse(data, size, &f, &off, &plen, &why) == 0) {
		if (off > size || plen > size - off)
			abort();
		check_hdr(data + off, plen);
	}
	if (wire_frame_parse_flags(data, size, WIRE_PARSE_NO_IP_CSUM | WIRE_PARSE_NO_UDP_CSUM, &f,
				   &off, &plen, &why) == 0) {
		if (off > size || plen > size - off)
			abort();
		check_hdr(data + off, plen);
	}
	return 0;
}
