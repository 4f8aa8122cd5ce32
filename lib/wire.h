/* SPDX-License-Identifier: BSD-3-Clause
 *
 * The georeduce wire protocol, version 1 (docs/PROTOCOL.md is the specification; this header
 * and wire.c are its reference implementation).
 *
 * A georeduce packet is the payload of a UDP datagram over IPv4:
 *
 *   Ethernet (14) | IPv4, no options (20) | UDP (8) | georeduce header (54)
 *     | contributor set (32 x cset_blocks) | payload
 *
 * so that the payload starts 96 + 32 x cset_blocks bytes into the Ethernet frame: a multiple
 * of 32, where the AVX2 summation kernels run at full speed (no vector straddles a cache
 * line). Every multi-byte header field is big-endian (network order); payload elements are
 * little-endian IEEE 754 binary32 / binary16 / bfloat16, summed in place on x86.
 *
 * One packet carries one chunk: up to count elements of one tensor of one job, at the chunk's
 * fixed element offset (chunk x elements per chunk). Aggregators sum whole packets into whole
 * packets, one slot per (job, epoch, tree, round, chunk).
 *
 * This file has no DPDK dependency: the dataplane, the control process, the worker client
 * library and the tests share it. Every function is thread-safe (no global state) and may be
 * called from a fast-path lcore: none allocates, locks, logs or makes a syscall.
 */
#ifndef GEOREDUCE_WIRE_H
#define GEOREDUCE_WIRE_H

#include <assert.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* --- Constants ---------------------------------------------------------------------------- */

#define WIRE_MAGIC 0x4752u /* "GR" */
#define WIRE_VERSION 1u

#define WIRE_ETH_LEN 14u  /* untagged Ethernet II header */
#define WIRE_IPV4_LEN 20u /* IPv4 header without options (IHL 5) */
#define WIRE_UDP_LEN 8u
#define WIRE_HDR_LEN 54u /* georeduce header */
/* Offsets in the Ethernet frame of the georeduce header and of the contributor set (or of the
 * payload when there is no set). */
#define WIRE_FRAME_HDR_OFF (WIRE_ETH_LEN + WIRE_IPV4_LEN + WIRE_UDP_LEN) /* 42 */
#define WIRE_FRAME_PAYLOAD_OFF (WIRE_FRAME_HDR_OFF + WIRE_HDR_LEN)       /* 96 */
/* IP + UDP + georeduce header: MTU overhead of every packet before the set and payload. */
#define WIRE_MTU_OVERHEAD (WIRE_IPV4_LEN + WIRE_UDP_LEN + WIRE_HDR_LEN) /* 82 */
/* What a sealed frame of a protected link adds (docs/PROTOCOL.md section 14): the seal
 * header and the tag. */
#define WIRE_SEAL_OVERHEAD (32 + 16)

/* Payload alignment the format guarantees relative to the start of the Ethernet frame. */
#define WIRE_PAYLOAD_ALIGN 32u

/* Contributor set: a bitmap of worker node ids in blocks of 32 bytes (256 ids; bit 0 is never
 * set, 0 not being a node id). */
#define WIRE_CSET_BLOCK 32u
#define WIRE_CSET_BLOCK_IDS (WIRE_CSET_BLOCK * 8u) /* 256 */
#define WIRE_CSET_BLOCKS_MAX 16u                   /* ids up to 4095 */

/* IP MTU range. The largest packet any receiver accepts has an IPv4 total length of
 * WIRE_MTU_MAX, i.e. a UDP payload (header + set + payload) of at most WIRE_UDP_PAYLOAD_MAX. */
#define WIRE_MTU_MIN 576u
#define WIRE_MTU_MAX 9000u
#define WIRE_UDP_PAYLOAD_MAX (WIRE_MTU_MAX - WIRE_IPV4_LEN - WIRE_UDP_LEN) /* 8972 */

/* Node ids are 1-65534, as in the job tables (docs/TABLES.md). WIRE_NODE_NONE names no node:
 * the sender of a PROBE or PROBE_REPLY outside any job. 0 is never valid in a packet. */
#define WIRE_NODE_ID_MIN 1u
#define WIRE_NODE_ID_MAX 0xfffeu
#define WIRE_NODE_NONE 0xffffu

/* Default UDP destination port range of a gateway: base + chunk % count. */
#define WIRE_PORT_BASE_DEFAULT 17400u
#define WIRE_PORT_COUNT_DEFAULT 16u

/** Packet types (header byte 3). Any other value is rejected (WIRE_REASON_TYPE). */
enum wire_type {
	WIRE_TYPE_CONTRIB = 1,      /* gradient or partial sum, up the tree */
	WIRE_TYPE_RESULT = 2,       /* complete sum, down the tree and to workers */
	WIRE_TYPE_ACK = 3,          /* "held": answer to a retransmitted CONTRIB */
	WIRE_TYPE_NACK_CONTRIB = 4, /* aggregator asks a contributor to resend */
	WIRE_TYPE_NACK_RESULT = 5,  /* contributor asks its aggregator to resend results */
	WIRE_TYPE_PROBE = 6,        /* round-trip probe / keepalive */
	WIRE_TYPE_PROBE_REPLY = 7,  /* echo of a PROBE */
	WIRE_TYPE_MCAST = 8,        /* one chunk of one worker's update, selective multicast */
	WIRE_TYPE_NACK_MCAST = 9,   /* a receiver asks for MCAST chunks it lacks */
	WIRE_TYPE_MAX = WIRE_TYPE_NACK_MCAST,
};

/** Element types (header byte 5). WIRE_DTYPE_NONE is the only value of control packets. */
enum wire_dtype {
	WIRE_DTYPE_NONE = 0,
	WIRE_DTYPE_FP32 = 1, /* IEEE 754 binary32, little-endian */
	WIRE_DTYPE_FP16 = 2, /* IEEE 754 binary16, little-endian */
	WIRE_DTYPE_BF16 = 3, /* bfloat16 (top half of a binary32), little-endian */
	/* OCP Microscaling v1.0: blocks of WIRE_MX_BLOCK elements sharing an E8M0 scale
	 * (docs/PROTOCOL.md section 4); count is then a multiple of WIRE_MX_BLOCK. */
	WIRE_DTYPE_MXINT8 = 4, /* MXINT8: 33 bytes a block */
	WIRE_DTYPE_MXFP8 = 5,  /* MXFP8, E4M3 elements: 33 bytes a block */
	WIRE_DTYPE_MXFP4 = 6,  /* MXFP4, E2M1 elements: 17 bytes a block */
	WIRE_DTYPE_MAX = WIRE_DTYPE_MXFP4,
};

#define WIRE_MX_BLOCK 32u /* elements per MX block */

/* Flags (header byte 4). Bits not listed are reserved, zero in version 1. */
#define WIRE_F_RETX \
	0x01u /* CONTRIB, RESULT: a retransmission (CONTRIB: reply wanted);
				 * MCAST: a copy sent again in answer to a NACK_MCAST */
#define WIRE_F_ECHO \
	0x02u /* any type but MCAST: tsecr echoes the tsval of the packet
				 * answered */
#define WIRE_F_ALL (WIRE_F_RETX | WIRE_F_ECHO)

/* The longest range of a NACK_CONTRIB, NACK_RESULT or NACK_MCAST, in chunks (docs/PROTOCOL.md section
 * 3, `count`): a longer one is dropped as WIRE_REASON_COUNT. It bounds what one request
 * may ask for (section 7.6). */
#define WIRE_NACK_RANGE_MAX 32

/**
 * Why a packet was rejected: by wire_hdr_decode() and wire_frame_parse() (below), and the
 * table-level reasons the dataplane counts (docs/PROTOCOL.md, "Receiver rules"), so that all
 * drop counters share one numbering. WIRE_REASON_NONE is 0; the rest are stable within a
 * protocol version.
 */
enum wire_reason {
	WIRE_REASON_NONE = 0,
	/* wire_hdr_decode(): stateless checks of the georeduce header, in the order made. */
	WIRE_REASON_TRUNCATED, /* fewer than WIRE_HDR_LEN bytes */
	WIRE_REASON_MAGIC,     /* magic != WIRE_MAGIC */
	WIRE_REASON_VERSION,   /* version != WIRE_VERSION */
	WIRE_REASON_TYPE,      /* unknown packet type */
	WIRE_REASON_FLAGS,     /* a flag reserved or not allowed for the type */
	WIRE_REASON_RESERVED,  /* reserved byte, or tsecr without WIRE_F_ECHO, nonzero */
	WIRE_REASON_DTYPE,     /* unknown dtype, or dtype on a control packet */
	WIRE_REASON_CSET_LEN,  /* cset_blocks too large or on a control packet */
	WIRE_REASON_NODE,      /* sender or origin 0, or WIRE_NODE_NONE off a probe */
	WIRE_REASON_CONTRIB,   /* contrib 0 or beyond the set on data, !0 on control */
	WIRE_REASON_COUNT,     /* count 0 on data, ACK/NACK range bad, nonzero on PROBE */
	WIRE_REASON_OVERSIZE,  /* packet exceeds WIRE_UDP_PAYLOAD_MAX bytes */
	WIRE_REASON_LENGTH,    /* length != header + set + count x dtype size */
	WIRE_REASON_CSET,      /* set's population != contrib, or it holds id 0 */
	/* wire_frame_parse(): Ethernet / IPv4 / UDP. */
	WIRE_REASON_L2,       /* frame too short or EtherType not IPv4 */
	WIRE_REASON_IP_HDR,   /* IPv4 version, IHL != 5 (options), total length */
	WIRE_REASON_IP_FRAG,  /* a fragment (MF or fragment offset) */
	WIRE_REASON_IP_CSUM,  /* IPv4 header checksum */
	WIRE_REASON_NOT_UDP,  /* IP protocol != 17 */
	WIRE_REASON_UDP_LEN,  /* UDP length inconsistent with the IP length */
	WIRE_REASON_UDP_CSUM, /* nonzero UDP checksum that does not verify */
	/* Table-level checks, made by the dataplane and worker library (not in this file). */
	WIRE_REASON_UNKNOWN_JOB,
	WIRE_REASON_EPOCH_AHEAD, /* epoch newer than any installed table */
	WIRE_REASON_EPOCH_STALE, /* epoch retired, or draining and the slot is not open */
	WIRE_REASON_UNKNOWN_TREE,
	WIRE_REASON_BAD_CHUNK,    /* chunk outside the tree's range on this node */
	WIRE_REASON_JOB_MISMATCH, /* dtype, cset_blocks or count differ from the table */
	WIRE_REASON_BAD_SENDER,   /* sender/origin not a neighbour/contributor here */
	WIRE_REASON_CSET_OVERLAP, /* set intersects what the slot already holds */
	WIRE_REASON_DUPLICATE,    /* contributor already counted / result already had */
	WIRE_REASON_LATE,         /* round older than the slot's round */
	WIRE_REASON_NO_SLOT,      /* slot still busy with an older round */
	/* Frames a gateway receives and has no use for (the dataplane's receive path). */
	WIRE_REASON_MISALIGNED,     /* frame at an odd address in its buffer */
	WIRE_REASON_OTHER_DST,      /* IPv4 to an address that is not the port's */
	WIRE_REASON_OTHER_PORT,     /* UDP to a port outside the gateway's range */
	WIRE_REASON_ICMP_NOT_ECHO,  /* ICMP other than a well-formed echo request */
	WIRE_REASON_ARP_UNANSWERED, /* ARP other than a request for the port's address */
	WIRE_REASON_PROBE_REPLY,    /* PROBE_REPLY that answers no probe of this gateway */
	WIRE_REASON_CTL_RING_FULL,  /* PROBE_REPLY for the control thread, its ring full */
	WIRE_REASON_BAD_PORT,       /* UDP destination port not the chunk's */
	/* Protected links (docs/PROTOCOL.md section 14). */
	WIRE_REASON_BAD_SEAL,    /* sealed frame malformed, or sealed where none is kept */
	WIRE_REASON_UNKNOWN_KEY, /* no installed key of that job, id and sender */
	WIRE_REASON_REPLAY,      /* sequence number seen, or older than the window */
	WIRE_REASON_BAD_TAG,     /* authentication failed: forged or altered */
	WIRE_REASON_WRONG_SHARD, /* a tree of another gateway of this site (its shard) */
	WIRE_REASON_COUNT_MAX,   /* number of reasons, not a reason */
};

/* --- The header on the wire --------------------------------------------------------------- */

/**
 * The 54-byte georeduce header exactly as on the wire: every multi-byte field big-endian
 * (convert with ntohs/ntohl or rte_be_to_cpu_*). Packed: fields are not naturally aligned (the
 * header starts at frame offset 42), so access members by value, never through pointers to
 * them. docs/PROTOCOL.md documents every byte.
 */
struct __attribute__((packed)) wire_hdr {
	uint16_t magic;      /* 0: WIRE_MAGIC */
	uint8_t version;     /* 2: WIRE_VERSION */
	uint8_t type;        /* 3: enum wire_type */
	uint8_t flags;       /* 4: WIRE_F_* */
	uint8_t dtype;       /* 5: enum wire_dtype */
	uint8_t cset_blocks; /* 6: contributor set length, 32-byte blocks */
	uint8_t rsvd0;       /* 7: zero */
	uint32_t job;        /* 8 */
	uint32_t epoch;      /* 12 */
	uint16_t tree;       /* 16 */
	uint16_t sender;     /* 18: node that sent this packet on this hop */
	uint16_t origin;     /* 20: node whose data this is (unchanged by relays) */
	uint16_t contrib;    /* 22: worker contributions summed in the payload */
	uint32_t round;      /* 24 */
	uint32_t chunk;      /* 28: chunk index; ACK/NACK: first chunk of a range */
	uint16_t count;      /* 32: elements; ACK/NACK: chunks in the range */
	uint16_t rsvd1;      /* 34: zero */
	uint32_t tsval;      /* 36: sender's clock, microseconds mod 2^32 */
	uint32_t tsecr;      /* 40: echoed tsval (WIRE_F_ECHO), else zero */
	uint8_t rsvd2[10];   /* 44: zero */
};

static_assert(sizeof(struct wire_hdr) == WIRE_HDR_LEN, "wire_hdr is 54 bytes");
static_assert(offsetof(struct wire_hdr, magic) == 0, "magic at 0");
static_assert(offsetof(struct wire_hdr, version) == 2, "version at 2");
static_assert(offsetof(struct wire_hdr, type) == 3, "type at 3");
static_assert(offsetof(struct wire_hdr, flags) == 4, "flags at 4");
static_assert(offsetof(struct wire_hdr, dtype) == 5, "dtype at 5");
static_assert(offsetof(struct wire_hdr, cset_blocks) == 6, "cset_blocks at 6");
static_assert(offsetof(struct wire_hdr, rsvd0) == 7, "rsvd0 at 7");
static_assert(offsetof(struct wire_hdr, job) == 8, "job at 8");
static_assert(offsetof(struct wire_hdr, epoch) == 12, "epoch at 12");
static_assert(offsetof(struct wire_hdr, tree) == 16, "tree at 16");
static_assert(offsetof(struct wire_hdr, sender) == 18, "sender at 18");
static_assert(offsetof(struct wire_hdr, origin) == 20, "origin at 20");
static_assert(offsetof(struct wire_hdr, contrib) == 22, "contrib at 22");
static_assert(offsetof(struct wire_hdr, round) == 24, "round at 24");
static_assert(offsetof(struct wire_hdr, chunk) == 28, "chunk at 28");
static_assert(offsetof(struct wire_hdr, count) == 32, "count at 32");
static_assert(offsetof(struct wire_hdr, rsvd1) == 34, "rsvd1 at 34");
static_assert(offsetof(struct wire_hdr, tsval) == 36, "tsval at 36");
static_assert(offsetof(struct wire_hdr, tsecr) == 40, "tsecr at 40");
static_assert(offsetof(struct wire_hdr, rsvd2) == 44, "rsvd2 at 44");
static_assert(WIRE_FRAME_PAYLOAD_OFF % WIRE_PAYLOAD_ALIGN == 0, "payload 32-byte aligned");
static_assert(WIRE_CSET_BLOCK % WIRE_PAYLOAD_ALIGN == 0, "sets keep the payload aligned");

/* --- Decoded header ----------------------------------------------------------------------- */

/**
 * A header in host byte order, as wire_hdr_decode() returns it and wire_hdr_encode() takes
 * it. The version is implied (WIRE_VERSION). Field meanings: struct wire_hdr and
 * docs/PROTOCOL.md.
 */
struct wire_pkt {
	enum wire_type type;
	uint8_t flags;
	enum wire_dtype dtype;
	uint8_t cset_blocks;
	uint32_t job;
	uint32_t epoch;
	uint16_t tree;
	uint16_t sender;
	uint16_t origin;
	uint16_t contrib;
	uint32_t round;
	uint32_t chunk;
	uint16_t count;
	uint32_t tsval;
	uint32_t tsecr;
	/* Layout of the rest of the packet, in bytes from the start of the georeduce header.
	 * wire_hdr_decode() sets both. wire_hdr_encode() reads payload_len of PROBE and
	 * PROBE_REPLY (their opaque payload) and ignores both otherwise. The contributor set, if
	 * any, is at WIRE_HDR_LEN and is WIRE_CSET_BLOCK x cset_blocks bytes long. */
	uint32_t payload_off;
	uint32_t payload_len;
};

/* --- Functions ---------------------------------------------------------------------------- */

/**
 * Size in bytes of one element of an element-wise dtype.
 *
 * @param dtype  Any value.
 * @return       4 (fp32), 2 (fp16, bf16); 0 for the MX dtypes (their elements come in
 *               blocks: wire_payload_bytes()), WIRE_DTYPE_NONE or an unknown value.
 */
unsigned int wire_dtype_size(enum wire_dtype dtype);

/** Whether dtype is one of the MX dtypes (WIRE_DTYPE_MXINT8, _MXFP8, _MXFP4). */
static inline bool
wire_dtype_is_mx(enum wire_dtype dtype)
{
	return dtype >= WIRE_DTYPE_MXINT8 && dtype <= WIRE_DTYPE_MXFP4;
}

/**
 * Bytes of the payload of `count` elements of a dtype: count x element size, or for an MX
 * dtype count / 32 blocks of 33 bytes (MXINT8, MXFP8) or 17 bytes (MXFP4).
 *
 * @return  The length; 0 for an unknown dtype, WIRE_DTYPE_NONE, or an MX count that is not
 *          a whole number of blocks. Fast path.
 */
size_t wire_payload_bytes(enum wire_dtype dtype, uint32_t count);

/**
 * Elements of a dtype that the smallest unit of its payload holds: 1, or WIRE_MX_BLOCK for
 * the MX dtypes (a chunk is a whole number of blocks); 0 for no dtype.
 */
unsigned int wire_dtype_granule(enum wire_dtype dtype);

/** Short lower-case name of a dtype ("fp32", "fp16", "bf16", "mxint8", "mxfp8", "mxfp4",
 * "none"), "?" if unknown. */
const char *wire_dtype_str(enum wire_dtype dtype);

/** Name of a packet type ("contrib", "result", "ack", ...), "?" if unknown. */
const char *wire_type_str(enum wire_type type);

/**
 * Stable snake_case name of a reason ("bad_magic", "truncated", ...), for counters and
 * telemetry; "?" for values out of range.
 */
const char *wire_reason_str(enum wire_reason reason);

/**
 * Total length of a packet (header + contributor set + payload, i.e. the UDP payload) with
 * these header fields. Data types: WIRE_HDR_LEN + 32 x cset_blocks + count x dtype size;
 * ACK/NACK: WIRE_HDR_LEN; PROBE/PROBE_REPLY: WIRE_HDR_LEN + payload_len. No validation: use
 * wire_hdr_encode() for that. Returns 0 for an unknown type.
 */
size_t wire_pkt_len(const struct wire_pkt *pkt);

/**
 * Validate a header and write it, in network byte order, to buf[0, WIRE_HDR_LEN). Only the
 * header is written: the caller places the contributor set and the payload behind it.
 *
 * @param buf   Start of the georeduce header (e.g. frame + WIRE_FRAME_HDR_OFF).
 * @param len   Bytes available at buf; must hold the whole packet (wire_pkt_len(pkt)).
 * @param pkt   Header fields, checked with the same rules as wire_hdr_decode() except the
 *              contributor set's population (the set is not written here).
 * @param why   If not NULL, set to the reason of a -EINVAL, else WIRE_REASON_NONE.
 * @return      0; -EINVAL if a field breaks a rule (*why says which); -ENOSPC if len is
 *              shorter than the packet. Nothing is written on failure. Any thread.
 */
int wire_hdr_encode(void *buf, size_t len, const struct wire_pkt *pkt, enum wire_reason *why);

/**
 * Parse and validate a packet: the georeduce header, the contributor set and the payload
 * length. Every check that needs no table (docs/PROTOCOL.md, "Validation") is made here; the
 * table-level ones (job, epoch, tree, chunk, sender) are the caller's. Never reads outside
 * buf[0, len).
 *
 * @param buf   Start of the georeduce header (the UDP payload).
 * @param len   Length of the UDP payload (UDP length - 8), not of the buffer or the frame:
 *              a packet must fill it exactly.
 * @param out   Decoded fields on success; unspecified on failure.
 * @param why   If not NULL, set to the first rule broken (WIRE_REASON_NONE on success);
 *              checks run in the order of enum wire_reason.
 * @return      0; -EPROTONOSUPPORT for another version; -EMSGSIZE for a packet longer than
 *              WIRE_UDP_PAYLOAD_MAX or an element count that cannot fit in one; -EBADMSG for
 *              any other rule; -EINVAL if buf or out is NULL. Any thread; fast path.
 */
int wire_hdr_decode(const void *buf, size_t len, struct wire_pkt *out, enum wire_reason *why);

/**
 * Largest element count of a CONTRIB or RESULT whose IPv4 packet fits an MTU.
 *
 * @param mtu          IP MTU in bytes, [WIRE_MTU_MIN, WIRE_MTU_MAX] (1500, 9000, ...).
 * @param dtype        Element type.
 * @param cset_blocks  Contributor set length the job uses, [0, WIRE_CSET_BLOCKS_MAX].
 * @return             floor((mtu - 82 - 32 x cset_blocks) / dtype size), at least 1; for an
 *                     MX dtype the whole blocks that fit, times 32; -EINVAL if an argument
 *                     is out of range or not even one element (block) fits.
 */
int wire_max_elems(unsigned int mtu, enum wire_dtype dtype, unsigned int cset_blocks);

/**
 * Recommended elements per chunk for an MTU: wire_max_elems() rounded down so that a full
 * chunk's payload is a multiple of 64 bytes (16 fp32 or 32 fp16/bf16 elements), which the
 * SIMD kernels process without a scalar tail. 1500 MTU: fp32 352, fp16/bf16 704; 9000 MTU:
 * fp32 2224, fp16/bf16 4448 (no contributor set).
 *
 * MX dtypes: wire_max_elems(), whole blocks (1500 MTU: 1344 MXINT8 or MXFP8, 2656 MXFP4).
 *
 * @return  Elements (> 0), or -EINVAL as wire_max_elems(); if fewer than 64 bytes fit,
 *          wire_max_elems() unchanged.
 */
int wire_chunk_elems_default(unsigned int mtu, enum wire_dtype dtype, unsigned int cset_blocks);

/**
 * Check a gateway's UDP port range: count in [1, 65535], base >= 1 and base + count - 1 <=
 * 65535. Returns 0 or -EINVAL.
 */
int wire_port_range_check(unsigned int base, unsigned int count);

/**
 * UDP destination port of every packet about a chunk sent to a gateway (and the source port
 * of every packet a gateway sends): base + chunk % count, so that RSS or rte_flow can steer a
 * chunk's packets to one queue. The range must pass wire_port_range_check(); out of range,
 * the result is unspecified (but no undefined behaviour). Fast path.
 */
static inline uint16_t
wire_udp_port(uint16_t base, uint16_t count, uint32_t chunk)
{
	return (uint16_t)(base + (count != 0 ? chunk % count : 0));
}

/**
 * Serial-number comparison of rounds (RFC 1982 style, 32 bits): true if round a is older
 * than round b, i.e. (int32_t)(a - b) < 0. Rounds wrap; two rounds compare correctly while
 * they are less than 2^31 apart.
 */
static inline bool
wire_round_before(uint32_t a, uint32_t b)
{
	return (uint32_t)(a - b) >= 0x80000000u;
}

/** One tree's share of a tensor: a contiguous range of chunks and of elements. */
struct wire_share {
	uint32_t first_chunk; /* chunk index of the share's first chunk */
	uint32_t n_chunks;    /* chunks in the share; 0 for an empty share */
	uint64_t first_elem;  /* element offset of first_chunk in the tensor */
	uint64_t n_elems;     /* elements in the share */
};

/**
 * Number of chunks of a tensor: ceil(n_elems / chunk_elems).
 *
 * @return  Chunks (0 for an empty tensor); -EINVAL if chunk_elems is 0 or above 65535 (the
 *          count field is 16 bits); -ERANGE if there would be 2^32 chunks or more (the
 *          index is 32 bits and so must a share's length). int64_t holds both.
 */
int64_t wire_chunk_total(uint64_t n_elems, uint32_t chunk_elems);

/**
 * Elements in chunk `chunk` of a tensor: chunk_elems for every chunk but the last, which holds
 * the remainder. 0 if the chunk does not exist (chunk >= wire_chunk_total(), or bad args).
 */
uint32_t wire_chunk_len(uint64_t n_elems, uint32_t chunk_elems, uint32_t chunk);

/**
 * Split a tensor's chunks among trees by integer weights (docs/PROTOCOL.md, "Chunks"): with
 * C = ceil(n_elems / chunk_elems) chunks and W = sum of the weights, tree t gets the chunks
 * [B(t), B(t + 1)) where B(t) = floor(C x (w[0] + ... + w[t - 1]) / W). Exact integer
 * arithmetic, so every implementation computes the same ranges; every chunk belongs to exactly
 * one tree; a tree of weight 0 gets none.
 *
 * @param n_elems      Elements of the tensor (any dtype: the chunk mapping counts elements).
 * @param chunk_elems  Elements per chunk (the job's, e.g. wire_chunk_elems_default()).
 * @param weights      n_trees weights; their sum must be in [1, 2^32 - 1].
 * @param n_trees      Number of trees, >= 1.
 * @param out          n_trees shares, written on success.
 * @return             0; -EINVAL on a bad argument or weight sum; -ERANGE as
 *                     wire_chunk_total(). Any thread.
 */
int wire_chunk_map(uint64_t n_elems, uint32_t chunk_elems, const uint32_t *weights,
		   unsigned int n_trees, struct wire_share *out);

/**
 * Number of set bits (contributors) in a contributor set of cset_blocks blocks. Bit i of the
 * set (worker node id i) is bit (i % 8) of byte (i / 8). Fast path.
 */
unsigned int wire_cset_count(const uint8_t *cset, unsigned int cset_blocks);

/** Whether node id `id` is in a contributor set; false if it is beyond the set's length. */
bool wire_cset_test(const uint8_t *cset, unsigned int cset_blocks, uint16_t id);

/** Add node id `id` to a set. Returns 0, or -ERANGE if id is 0 or beyond the set's length. */
int wire_cset_add(uint8_t *cset, unsigned int cset_blocks, uint16_t id);

/* --- Ethernet / IPv4 / UDP without DPDK --------------------------------------------------- */

/**
 * The addresses and IP options of one packet, host byte order. The dataplane builds these
 * headers with DPDK's own structs; this is for the worker library, tools and tests.
 */
struct wire_flow {
	uint8_t dst_mac[6];
	uint8_t src_mac[6];
	uint32_t src_ip; /* e.g. 10.0.0.1 is 0x0a000001 */
	uint32_t dst_ip;
	uint16_t src_port;
	uint16_t dst_port;
	uint8_t dscp; /* 0-63; the ECN bits are sent as 0 */
	uint8_t ttl;  /* 0 means 64 */
	uint16_t ip_id;
};

/**
 * Internet checksum (RFC 1071) accumulation: add the 16-bit big-endian words of buf to sum (an
 * odd trailing byte is padded with zero) and return the unfolded 32-bit sum. Chain calls
 * on consecutive even-length pieces; finish with wire_csum_fold().
 */
uint32_t wire_csum_add(uint32_t sum, const void *buf, size_t len);

/** Fold a wire_csum_add() sum to 16 bits and complement it: the checksum, host order. */
uint16_t wire_csum_fold(uint32_t sum);

/**
 * Write an IPv4 header (IHL 5, DF set, protocol UDP, header checksum) and a UDP header at buf
 * (WIRE_IPV4_LEN + WIRE_UDP_LEN bytes), for a UDP payload of udp_payload_len bytes.
 *
 * @param buf              Start of the IPv4 header.
 * @param len              Bytes available at buf.
 * @param f                Addresses, ports, DSCP, TTL, IP id (MACs unused).
 * @param udp_payload_len  Georeduce packet length, <= WIRE_UDP_PAYLOAD_MAX.
 * @param udp_csum         Compute the UDP checksum; the payload must then already be at
 *                         buf + 28 and len must cover it. Otherwise the checksum is 0 (none).
 * @return                 0; -EINVAL for a NULL pointer or oversized payload; -ENOSPC if len
 *                         is too short.
 */
int wire_ipv4_udp_build(void *buf, size_t len, const struct wire_flow *f, size_t udp_payload_len,
			bool udp_csum);

/**
 * wire_ipv4_udp_build() behind an Ethernet II header (dst, src, EtherType 0x0800): a whole
 * frame whose georeduce header is at frame + WIRE_FRAME_HDR_OFF. Same return values.
 */
int wire_frame_build(void *frame, size_t len, const struct wire_flow *f, size_t udp_payload_len,
		     bool udp_csum);

/**
 * Parse and check the Ethernet, IPv4 and UDP headers of a frame (docs/PROTOCOL.md, "Lower
 * layers"): untagged IPv4, no options, no fragment, valid header checksum, protocol UDP, UDP
 * length within the IP length, UDP checksum valid unless zero. Bytes beyond the IP total
 * length (Ethernet padding) are ignored. Never reads outside frame[0, len).
 *
 * @param frame        Start of the Ethernet header.
 * @param len          Frame length (without FCS).
 * @param f            If not NULL: addresses, ports, DSCP, TTL and IP id of the packet.
 * @param payload_off  If not NULL: offset of the UDP payload in the frame (always 42).
 * @param payload_len  If not NULL: UDP payload length, to pass to wire_hdr_decode().
 * @param why          If not NULL: reason of a failure, WIRE_REASON_NONE on success.
 * @return             0, -EBADMSG (see *why), or -EINVAL for a NULL frame. Any thread.
 */
int wire_frame_parse(const void *frame, size_t len, struct wire_flow *f, size_t *payload_off,
		     size_t *payload_len, enum wire_reason *why);

/* Flags of wire_frame_parse_flags(): checks the caller makes itself (a NIC's checksum
 * offload, or a faster routine of its own). */
#define WIRE_PARSE_NO_IP_CSUM 0x1u  /* do not verify the IPv4 header checksum */
#define WIRE_PARSE_NO_UDP_CSUM 0x2u /* do not verify the UDP checksum */

/**
 * wire_frame_parse() without the checks that flags name; every other rule is applied.
 * The caller must then make those checks itself to accept exactly what
 * wire_frame_parse() accepts.
 */
int wire_frame_parse_flags(const void *frame, size_t len, unsigned int flags, struct wire_flow *f,
			   size_t *payload_off, size_t *payload_len, enum wire_reason *why);

#endif
