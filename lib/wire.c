/* SPDX-License-Identifier: BSD-3-Clause
 * The georeduce wire protocol, version 1: header codec, chunk mapping, port formula and
 * DPDK-free Ethernet/IPv4/UDP helpers. Specification: docs/PROTOCOL.md.
 *
 * Every access to packet bytes goes through be16_get/be32_get/be16_put/be32_put (bytes.h) on byte pointers: no
 * alignment is assumed and the code is independent of the host's byte order.
 */
#include <errno.h>
#include <string.h>

#include "bytes.h"
#include "wire.h"

/* --- Names ------------------------------------------------------------------------------- */

unsigned int
wire_dtype_size(enum wire_dtype dtype)
{
	switch (dtype) {
	case WIRE_DTYPE_FP32:
		return 4;
	case WIRE_DTYPE_FP16:
	case WIRE_DTYPE_BF16:
		return 2;
	case WIRE_DTYPE_MXINT8:
	case WIRE_DTYPE_MXFP8:
	case WIRE_DTYPE_MXFP4:
	case WIRE_DTYPE_NONE:
		break;
	}
	return 0;
}

/* Bytes of one MX block: the elements and the scale. */
static unsigned int
mx_block_bytes(enum wire_dtype dtype)
{
	return dtype == WIRE_DTYPE_MXFP4 ? 17 : 33;
}

size_t
wire_payload_bytes(enum wire_dtype dtype, uint32_t count)
{
	if (wire_dtype_is_mx(dtype))
		return count % WIRE_MX_BLOCK != 0 ?
			       0 :
			       (size_t)(count / WIRE_MX_BLOCK) * mx_block_bytes(dtype);
	return (size_t)count * wire_dtype_size(dtype);
}

unsigned int
wire_dtype_granule(enum wire_dtype dtype)
{
	return wire_dtype_is_mx(dtype) ? WIRE_MX_BLOCK : wire_dtype_size(dtype) != 0 ? 1 : 0;
}

const char *
wire_dtype_str(enum wire_dtype dtype)
{
	switch (dtype) {
	case WIRE_DTYPE_NONE:
		return "none";
	case WIRE_DTYPE_FP32:
		return "fp32";
	case WIRE_DTYPE_FP16:
		return "fp16";
	case WIRE_DTYPE_BF16:
		return "bf16";
	case WIRE_DTYPE_MXINT8:
		return "mxint8";
	case WIRE_DTYPE_MXFP8:
		return "mxfp8";
	case WIRE_DTYPE_MXFP4:
		return "mxfp4";
	}
	return "?";
}

const char *
wire_type_str(enum wire_type type)
{
	switch (type) {
	case WIRE_TYPE_CONTRIB:
		return "contrib";
	case WIRE_TYPE_RESULT:
		return "result";
	case WIRE_TYPE_ACK:
		return "ack";
	case WIRE_TYPE_NACK_CONTRIB:
		return "nack_contrib";
	case WIRE_TYPE_NACK_RESULT:
		return "nack_result";
	case WIRE_TYPE_PROBE:
		return "probe";
	case WIRE_TYPE_PROBE_REPLY:
		return "probe_reply";
	case WIRE_TYPE_MCAST:
		return "mcast";
	case WIRE_TYPE_NACK_MCAST:
		return "nack_mcast";
	}
	return "?";
}

static const char *const reason_names[WIRE_REASON_COUNT_MAX] = {
	[WIRE_REASON_NONE] = "none",
	[WIRE_REASON_TRUNCATED] = "truncated",
	[WIRE_REASON_MAGIC] = "bad_magic",
	[WIRE_REASON_VERSION] = "bad_version",
	[WIRE_REASON_TYPE] = "bad_type",
	[WIRE_REASON_FLAGS] = "bad_flags",
	[WIRE_REASON_RESERVED] = "reserved_nonzero",
	[WIRE_REASON_DTYPE] = "bad_dtype",
	[WIRE_REASON_CSET_LEN] = "bad_cset_len",
	[WIRE_REASON_NODE] = "bad_node_id",
	[WIRE_REASON_CONTRIB] = "bad_contrib",
	[WIRE_REASON_COUNT] = "bad_count",
	[WIRE_REASON_OVERSIZE] = "oversize",
	[WIRE_REASON_LENGTH] = "bad_length",
	[WIRE_REASON_CSET] = "bad_cset",
	[WIRE_REASON_L2] = "not_ipv4_frame",
	[WIRE_REASON_IP_HDR] = "bad_ipv4_header",
	[WIRE_REASON_IP_FRAG] = "ipv4_fragment",
	[WIRE_REASON_IP_CSUM] = "bad_ipv4_csum",
	[WIRE_REASON_NOT_UDP] = "not_udp",
	[WIRE_REASON_UDP_LEN] = "bad_udp_length",
	[WIRE_REASON_UDP_CSUM] = "bad_udp_csum",
	[WIRE_REASON_UNKNOWN_JOB] = "unknown_job",
	[WIRE_REASON_EPOCH_AHEAD] = "epoch_ahead",
	[WIRE_REASON_EPOCH_STALE] = "epoch_stale",
	[WIRE_REASON_UNKNOWN_TREE] = "unknown_tree",
	[WIRE_REASON_BAD_CHUNK] = "bad_chunk",
	[WIRE_REASON_JOB_MISMATCH] = "job_mismatch",
	[WIRE_REASON_BAD_SENDER] = "bad_sender",
	[WIRE_REASON_CSET_OVERLAP] = "cset_overlap",
	[WIRE_REASON_DUPLICATE] = "duplicate",
	[WIRE_REASON_LATE] = "late",
	[WIRE_REASON_NO_SLOT] = "no_slot",
	[WIRE_REASON_MISALIGNED] = "misaligned",
	[WIRE_REASON_OTHER_DST] = "other_ipv4_dst",
	[WIRE_REASON_OTHER_PORT] = "other_udp_port",
	[WIRE_REASON_ICMP_NOT_ECHO] = "icmp_not_echo",
	[WIRE_REASON_ARP_UNANSWERED] = "arp_unanswered",
	[WIRE_REASON_PROBE_REPLY] = "unsolicited_probe_reply",
	[WIRE_REASON_CTL_RING_FULL] = "ctl_ring_full",
	[WIRE_REASON_BAD_PORT] = "bad_port",
	[WIRE_REASON_BAD_SEAL] = "bad_seal",
	[WIRE_REASON_UNKNOWN_KEY] = "unknown_key",
	[WIRE_REASON_REPLAY] = "replay",
	[WIRE_REASON_BAD_TAG] = "bad_tag",
	[WIRE_REASON_WRONG_SHARD] = "wrong_shard",
};

const char *
wire_reason_str(enum wire_reason reason)
{
	if ((unsigned int)reason >= WIRE_REASON_COUNT_MAX || reason_names[reason] == NULL)
		return "?";
	return reason_names[reason];
}

/* --- Header codec ------------------------------------------------------------------------ */

/* Packets with a payload of elements: CONTRIB, RESULT and MCAST. */
static inline bool
type_is_data(enum wire_type t)
{
	return t == WIRE_TYPE_CONTRIB || t == WIRE_TYPE_RESULT || t == WIRE_TYPE_MCAST;
}

static inline bool
type_is_range(enum wire_type t)
{
	return t == WIRE_TYPE_ACK || t == WIRE_TYPE_NACK_CONTRIB || t == WIRE_TYPE_NACK_RESULT ||
	       t == WIRE_TYPE_NACK_MCAST;
}

static inline bool
type_is_probe(enum wire_type t)
{
	return t == WIRE_TYPE_PROBE || t == WIRE_TYPE_PROBE_REPLY;
}

size_t
wire_pkt_len(const struct wire_pkt *pkt)
{
	if (type_is_data(pkt->type))
		return WIRE_HDR_LEN + (size_t)pkt->cset_blocks * WIRE_CSET_BLOCK +
		       wire_payload_bytes(pkt->dtype, pkt->count);
	if (type_is_range(pkt->type))
		return WIRE_HDR_LEN;
	if (type_is_probe(pkt->type))
		return WIRE_HDR_LEN + (size_t)pkt->payload_len;
	return 0;
}

/*
 * The rules on header fields shared by encode and decode, in the order of enum wire_reason
 * (from WIRE_REASON_TYPE on; reserved bytes are the decoder's). Returns the first rule
 * broken, WIRE_REASON_NONE if none.
 */
static enum wire_reason
check_fields(const struct wire_pkt *p)
{
	enum wire_type t = p->type;
	bool data = type_is_data(t), range = type_is_range(t), probe = type_is_probe(t);
	bool mcast = t == WIRE_TYPE_MCAST;
	unsigned int allowed;

	if (!data && !range && !probe)
		return WIRE_REASON_TYPE;
	/* MCAST answers no request, so it never echoes; RETX marks a copy that answers a
	 * NACK_MCAST. */
	allowed = mcast ? WIRE_F_RETX : data ? WIRE_F_ALL : WIRE_F_ECHO;
	if ((p->flags & ~allowed) != 0)
		return WIRE_REASON_FLAGS;
	/* PROBE_REPLY and ACK are always answers: they must echo. */
	if ((t == WIRE_TYPE_PROBE_REPLY || t == WIRE_TYPE_ACK) && !(p->flags & WIRE_F_ECHO))
		return WIRE_REASON_FLAGS;
	if (!(p->flags & WIRE_F_ECHO) && p->tsecr != 0)
		return WIRE_REASON_RESERVED;
	if (data ? wire_dtype_granule(p->dtype) == 0 : p->dtype != WIRE_DTYPE_NONE)
		return WIRE_REASON_DTYPE;
	if (data && !mcast ? p->cset_blocks > WIRE_CSET_BLOCKS_MAX : p->cset_blocks != 0)
		return WIRE_REASON_CSET_LEN;
	if (p->sender == 0 || p->origin == 0)
		return WIRE_REASON_NODE;
	if (!probe && (p->sender == WIRE_NODE_NONE || p->origin == WIRE_NODE_NONE))
		return WIRE_REASON_NODE;
	if (mcast ? p->contrib != 1 : data ? p->contrib == 0 : p->contrib != 0)
		return WIRE_REASON_CONTRIB;
	if (data && p->cset_blocks != 0 && p->contrib >= p->cset_blocks * WIRE_CSET_BLOCK_IDS)
		return WIRE_REASON_CONTRIB;
	if (data || range) {
		if (p->count == 0 || (data && p->count % wire_dtype_granule(p->dtype) != 0))
			return WIRE_REASON_COUNT;
		if (range && (uint64_t)p->chunk + p->count > (1ull << 32))
			return WIRE_REASON_COUNT;
		if (range && p->type != WIRE_TYPE_ACK && p->count > WIRE_NACK_RANGE_MAX)
			return WIRE_REASON_COUNT;
	} else if (p->count != 0) {
		return WIRE_REASON_COUNT;
	}
	if (wire_pkt_len(p) > WIRE_UDP_PAYLOAD_MAX)
		return WIRE_REASON_OVERSIZE;
	return WIRE_REASON_NONE;
}

int
wire_hdr_encode(void *buf, size_t len, const struct wire_pkt *pkt, enum wire_reason *why)
{
	enum wire_reason r;
	uint8_t *b = buf;

	if (why != NULL)
		*why = WIRE_REASON_NONE;
	if (buf == NULL || pkt == NULL)
		return -EINVAL;
	r = check_fields(pkt);
	if (r != WIRE_REASON_NONE) {
		if (why != NULL)
			*why = r;
		return -EINVAL;
	}
	if (len < wire_pkt_len(pkt))
		return -ENOSPC;

	be16_put(b + 0, WIRE_MAGIC);
	b[2] = WIRE_VERSION;
	b[3] = (uint8_t)pkt->type;
	b[4] = pkt->flags;
	b[5] = (uint8_t)pkt->dtype;
	b[6] = pkt->cset_blocks;
	b[7] = 0;
	be32_put(b + 8, pkt->job);
	be32_put(b + 12, pkt->epoch);
	be16_put(b + 16, pkt->tree);
	be16_put(b + 18, pkt->sender);
	be16_put(b + 20, pkt->origin);
	be16_put(b + 22, pkt->contrib);
	be32_put(b + 24, pkt->round);
	be32_put(b + 28, pkt->chunk);
	be16_put(b + 32, pkt->count);
	be16_put(b + 34, 0);
	be32_put(b + 36, pkt->tsval);
	be32_put(b + 40, pkt->tsecr);
	memset(b + 44, 0, WIRE_HDR_LEN - 44);
	return 0;
}

unsigned int
wire_cset_count(const uint8_t *cset, unsigned int cset_blocks)
{
	size_t n = (size_t)cset_blocks * WIRE_CSET_BLOCK;
	unsigned int c = 0;

	/* 8 bytes at a time: the block size is a multiple of 8, byte order is irrelevant. */
	for (size_t i = 0; i < n; i += 8) {
		uint64_t w;

		memcpy(&w, cset + i, sizeof(w));
		c += (unsigned int)__builtin_popcountll(w);
	}
	return c;
}

bool
wire_cset_test(const uint8_t *cset, unsigned int cset_blocks, uint16_t id)
{
	if (id >= cset_blocks * WIRE_CSET_BLOCK_IDS)
		return false;
	return (cset[id / 8] >> (id % 8)) & 1;
}

int
wire_cset_add(uint8_t *cset, unsigned int cset_blocks, uint16_t id)
{
	if (id == 0 || id >= cset_blocks * WIRE_CSET_BLOCK_IDS)
		return -ERANGE;
	cset[id / 8] |= (uint8_t)(1u << (id % 8));
	return 0;
}

static int
decode_fail(enum wire_reason r, enum wire_reason *why)
{
	if (why != NULL)
		*why = r;
	switch (r) {
	case WIRE_REASON_VERSION:
		return -EPROTONOSUPPORT;
	case WIRE_REASON_OVERSIZE:
		return -EMSGSIZE;
	default:
		return -EBADMSG;
	}
}

int
wire_hdr_decode(const void *buf, size_t len, struct wire_pkt *out, enum wire_reason *why)
{
	const uint8_t *b = buf;
	enum wire_reason r;
	size_t want;

	if (why != NULL)
		*why = WIRE_REASON_NONE;
	if (buf == NULL || out == NULL)
		return -EINVAL;
	if (len < WIRE_HDR_LEN)
		return decode_fail(WIRE_REASON_TRUNCATED, why);
	if (be16_get(b) != WIRE_MAGIC)
		return decode_fail(WIRE_REASON_MAGIC, why);
	if (b[2] != WIRE_VERSION)
		return decode_fail(WIRE_REASON_VERSION, why);

	/* Enum fields get the raw byte: check_fields() rejects values outside the enums. */
	out->type = (enum wire_type)b[3];
	out->flags = b[4];
	out->dtype = (enum wire_dtype)b[5];
	out->cset_blocks = b[6];
	out->job = be32_get(b + 8);
	out->epoch = be32_get(b + 12);
	out->tree = be16_get(b + 16);
	out->sender = be16_get(b + 18);
	out->origin = be16_get(b + 20);
	out->contrib = be16_get(b + 22);
	out->round = be32_get(b + 24);
	out->chunk = be32_get(b + 28);
	out->count = be16_get(b + 32);
	out->tsval = be32_get(b + 36);
	out->tsecr = be32_get(b + 40);
	out->payload_off = WIRE_HDR_LEN;
	out->payload_len = 0;

	if (b[3] == 0 || b[3] > WIRE_TYPE_MAX)
		return decode_fail(WIRE_REASON_TYPE, why);
	if (type_is_probe(out->type))
		out->payload_len = (uint32_t)(len > WIRE_UDP_PAYLOAD_MAX ? 0 : len - WIRE_HDR_LEN);
	r = check_fields(out);
	/* Reserved bytes rank between flags and dtype (enum order): report them there. */
	if (r == WIRE_REASON_NONE || r > WIRE_REASON_RESERVED) {
		/* Bytes 44 .. 53 as two words: a byte loop is a branch per byte on every packet. */
		uint64_t w;
		uint16_t h;

		_Static_assert(WIRE_HDR_LEN == 44 + sizeof(w) + sizeof(h), "reserved tail");
		memcpy(&w, b + 44, sizeof(w));
		memcpy(&h, b + 44 + sizeof(w), sizeof(h));
		if ((b[7] | b[34] | b[35]) != 0 || w != 0 || h != 0)
			r = WIRE_REASON_RESERVED;
	}
	if (r != WIRE_REASON_NONE)
		return decode_fail(r, why);

	if (len > WIRE_UDP_PAYLOAD_MAX)
		return decode_fail(WIRE_REASON_OVERSIZE, why);
	want = wire_pkt_len(out);
	if (len != want)
		return decode_fail(WIRE_REASON_LENGTH, why);
	if (type_is_data(out->type)) {
		out->payload_off = WIRE_HDR_LEN + (uint32_t)out->cset_blocks * WIRE_CSET_BLOCK;
		out->payload_len = (uint32_t)wire_payload_bytes(out->dtype, out->count);
		if (out->cset_blocks != 0 &&
		    ((b[WIRE_HDR_LEN] & 1) != 0 ||
		     wire_cset_count(b + WIRE_HDR_LEN, out->cset_blocks) != out->contrib))
			return decode_fail(WIRE_REASON_CSET, why);
	}
	return 0;
}

/* --- Sizes, ports, chunks ---------------------------------------------------------------- */

int
wire_max_elems(unsigned int mtu, enum wire_dtype dtype, unsigned int cset_blocks)
{
	unsigned int granule = wire_dtype_granule(dtype), size, overhead;

	if (mtu < WIRE_MTU_MIN || mtu > WIRE_MTU_MAX || granule == 0 ||
	    cset_blocks > WIRE_CSET_BLOCKS_MAX)
		return -EINVAL;
	/* Bytes of the smallest unit: one element, or one MX block. */
	size = (unsigned int)wire_payload_bytes(dtype, granule);
	overhead = WIRE_MTU_OVERHEAD + cset_blocks * WIRE_CSET_BLOCK;
	if (mtu < overhead + size)
		return -EINVAL;
	return (int)((mtu - overhead) / size * granule);
}

int
wire_chunk_elems_default(unsigned int mtu, enum wire_dtype dtype, unsigned int cset_blocks)
{
	int max = wire_max_elems(mtu, dtype, cset_blocks);
	int per64;

	if (max < 0 || wire_dtype_is_mx(dtype))
		return max;
	per64 = (int)(64 / wire_dtype_size(dtype));
	return max >= per64 ? max - max % per64 : max;
}

int
wire_port_range_check(unsigned int base, unsigned int count)
{
	if (base < 1 || base > 65535 || count < 1 || count > 65535 || base + count - 1 > 65535)
		return -EINVAL;
	return 0;
}

int64_t
wire_chunk_total(uint64_t n_elems, uint32_t chunk_elems)
{
	uint64_t c;

	if (chunk_elems == 0 || chunk_elems > UINT16_MAX)
		return -EINVAL;
	c = n_elems / chunk_elems + (n_elems % chunk_elems != 0);
	if (c > UINT32_MAX)
		return -ERANGE;
	return (int64_t)c;
}

uint32_t
wire_chunk_len(uint64_t n_elems, uint32_t chunk_elems, uint32_t chunk)
{
	int64_t total = wire_chunk_total(n_elems, chunk_elems);
	uint64_t start;

	if (total <= 0 || chunk >= (uint64_t)total)
		return 0;
	start = (uint64_t)chunk * chunk_elems;
	return n_elems - start < chunk_elems ? (uint32_t)(n_elems - start) : chunk_elems;
}

int
wire_chunk_map(uint64_t n_elems, uint32_t chunk_elems, const uint32_t *weights,
	       unsigned int n_trees, struct wire_share *out)
{
	int64_t total = wire_chunk_total(n_elems, chunk_elems);
	uint64_t c, w = 0, prefix = 0, lo;

	if (total < 0)
		return (int)total;
	if (weights == NULL || out == NULL || n_trees == 0)
		return -EINVAL;
	for (unsigned int t = 0; t < n_trees; t++)
		w += weights[t];
	if (w == 0 || w > UINT32_MAX)
		return -EINVAL;
	c = (uint64_t)total;
	/* c < 2^32 and prefix <= w < 2^32: c * prefix < 2^64, no overflow. */
	lo = 0;
	for (unsigned int t = 0; t < n_trees; t++) {
		uint64_t hi, e_lo, e_hi;

		prefix += weights[t];
		hi = c * prefix / w;
		e_lo = lo * chunk_elems;
		e_hi = hi * chunk_elems;
		if (e_hi > n_elems)
			e_hi = n_elems;
		if (e_lo > n_elems)
			e_lo = n_elems;
		out[t].first_chunk = (uint32_t)lo; /* lo <= c < 2^32 */
		out[t].n_chunks = (uint32_t)(hi - lo);
		out[t].first_elem = e_lo;
		out[t].n_elems = e_hi - e_lo;
		lo = hi;
	}
	return 0;
}

/* --- Ethernet / IPv4 / UDP --------------------------------------------------------------- */

uint32_t
wire_csum_add(uint32_t sum, const void *buf, size_t len)
{
	const uint8_t *b = buf;
	uint64_t s = sum;
	size_t i;

	for (i = 0; i + 1 < len; i += 2)
		s += be16_get(b + i);
	if (i < len)
		s += (uint32_t)b[i] << 8;
	while (s >> 32)
		s = (s & 0xffffffffu) + (s >> 32);
	return (uint32_t)s;
}

uint16_t
wire_csum_fold(uint32_t sum)
{
	while (sum >> 16)
		sum = (sum & 0xffffu) + (sum >> 16);
	return (uint16_t)~sum;
}

/* UDP checksum over the pseudo-header, the UDP header (checksum field as stored) and data. */
static uint16_t
udp_csum(uint32_t src, uint32_t dst, const uint8_t *udp, size_t udp_len)
{
	uint8_t pseudo[12];

	be32_put(pseudo, src);
	be32_put(pseudo + 4, dst);
	pseudo[8] = 0;
	pseudo[9] = 17;
	be16_put(pseudo + 10, (uint16_t)udp_len);
	return wire_csum_fold(
		wire_csum_add(wire_csum_add(0, pseudo, sizeof(pseudo)), udp, udp_len));
}

int
wire_ipv4_udp_build(void *buf, size_t len, const struct wire_flow *f, size_t udp_payload_len,
		    bool with_csum)
{
	uint8_t *ip = buf, *udp;
	size_t udp_len = WIRE_UDP_LEN + udp_payload_len;

	if (buf == NULL || f == NULL || udp_payload_len > WIRE_UDP_PAYLOAD_MAX || f->dscp > 63)
		return -EINVAL;
	if (len < WIRE_IPV4_LEN + WIRE_UDP_LEN || (with_csum && len < WIRE_IPV4_LEN + udp_len))
		return -ENOSPC;

	ip[0] = 0x45;                    /* version 4, IHL 5 */
	ip[1] = (uint8_t)(f->dscp << 2); /* ECN 0 */
	be16_put(ip + 2, (uint16_t)(WIRE_IPV4_LEN + udp_len));
	be16_put(ip + 4, f->ip_id);
	be16_put(ip + 6, 0x4000); /* DF, offset 0 */
	ip[8] = f->ttl != 0 ? f->ttl : 64;
	ip[9] = 17; /* UDP */
	be16_put(ip + 10, 0);
	be32_put(ip + 12, f->src_ip);
	be32_put(ip + 16, f->dst_ip);
	be16_put(ip + 10, wire_csum_fold(wire_csum_add(0, ip, WIRE_IPV4_LEN)));

	udp = ip + WIRE_IPV4_LEN;
	be16_put(udp, f->src_port);
	be16_put(udp + 2, f->dst_port);
	be16_put(udp + 4, (uint16_t)udp_len);
	be16_put(udp + 6, 0);
	if (with_csum) {
		uint16_t c = udp_csum(f->src_ip, f->dst_ip, udp, udp_len);

		be16_put(udp + 6, c == 0 ? 0xffff : c); /* 0 would mean "no checksum" */
	}
	return 0;
}

int
wire_frame_build(void *frame, size_t len, const struct wire_flow *f, size_t udp_payload_len,
		 bool with_csum)
{
	uint8_t *eth = frame;
	int rc;

	if (frame == NULL || f == NULL)
		return -EINVAL;
	if (len < WIRE_ETH_LEN)
		return -ENOSPC;
	rc = wire_ipv4_udp_build(eth + WIRE_ETH_LEN, len - WIRE_ETH_LEN, f, udp_payload_len,
				 with_csum);
	if (rc < 0)
		return rc;
	memcpy(eth, f->dst_mac, 6);
	memcpy(eth + 6, f->src_mac, 6);
	be16_put(eth + 12, 0x0800);
	return 0;
}

static int
parse_fail(enum wire_reason r, enum wire_reason *why)
{
	if (why != NULL)
		*why = r;
	return -EBADMSG;
}

int
wire_frame_parse(const void *frame, size_t len, struct wire_flow *f, size_t *payload_off,
		 size_t *payload_len, enum wire_reason *why)
{
	return wire_frame_parse_flags(frame, len, 0, f, payload_off, payload_len, why);
}

int
wire_frame_parse_flags(const void *frame, size_t len, unsigned int flags, struct wire_flow *f,
		       size_t *payload_off, size_t *payload_len, enum wire_reason *why)
{
	const uint8_t *eth = frame, *ip, *udp;
	uint16_t ip_len, udp_len;

	if (why != NULL)
		*why = WIRE_REASON_NONE;
	if (frame == NULL)
		return -EINVAL;
	if (len < WIRE_ETH_LEN || be16_get(eth + 12) != 0x0800)
		return parse_fail(WIRE_REASON_L2, why);
	ip = eth + WIRE_ETH_LEN;
	if (len < WIRE_ETH_LEN + WIRE_IPV4_LEN || ip[0] != 0x45)
		return parse_fail(WIRE_REASON_IP_HDR, why);
	ip_len = be16_get(ip + 2);
	if (ip_len < WIRE_IPV4_LEN || ip_len > len - WIRE_ETH_LEN)
		return parse_fail(WIRE_REASON_IP_HDR, why);
	if ((be16_get(ip + 6) & 0x3fff) != 0) /* MF or a fragment offset */
		return parse_fail(WIRE_REASON_IP_FRAG, why);
	if (!(flags & WIRE_PARSE_NO_IP_CSUM) &&
	    wire_csum_fold(wire_csum_add(0, ip, WIRE_IPV4_LEN)) != 0)
		return parse_fail(WIRE_REASON_IP_CSUM, why);
	if (ip[9] != 17)
		return parse_fail(WIRE_REASON_NOT_UDP, why);
	udp = ip + WIRE_IPV4_LEN;
	if (ip_len < WIRE_IPV4_LEN + WIRE_UDP_LEN)
		return parse_fail(WIRE_REASON_UDP_LEN, why);
	udp_len = be16_get(udp + 4);
	if (udp_len != ip_len - WIRE_IPV4_LEN)
		return parse_fail(WIRE_REASON_UDP_LEN, why);
	if (!(flags & WIRE_PARSE_NO_UDP_CSUM) && be16_get(udp + 6) != 0 &&
	    udp_csum(be32_get(ip + 12), be32_get(ip + 16), udp, udp_len) != 0)
		return parse_fail(WIRE_REASON_UDP_CSUM, why);

	if (f != NULL) {
		memcpy(f->dst_mac, eth, 6);
		memcpy(f->src_mac, eth + 6, 6);
		f->src_ip = be32_get(ip + 12);
		f->dst_ip = be32_get(ip + 16);
		f->src_port = be16_get(udp);
		f->dst_port = be16_get(udp + 2);
		f->dscp = ip[1] >> 2;
		f->ttl = ip[8];
		f->ip_id = be16_get(ip + 4);
	}
	if (payload_off != NULL)
		*payload_off = WIRE_FRAME_HDR_OFF;
	if (payload_len != NULL)
		*payload_len = (size_t)udp_len - WIRE_UDP_LEN;
	return 0;
}
