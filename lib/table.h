/* SPDX-License-Identifier: BSD-3-Clause
 *
 * Forwarding tables: everything ONE gateway needs to aggregate ONE job at ONE plan epoch,
 * compiled by the control process from a topology, a plan and a deployment
 * (control/compile/table_compile.h), sent to the dataplane as `georeduce-table/1` JSON
 * (docs/TABLES.md) and checked there strictly (table_parse() runs table_validate()).
 * This header is the model (table.c), its rules (table_check.c) and its codec (the
 * parser table_json.c, the writer table_json_write.c): nothing here knows plans or
 * topologies.
 *
 * A table is immutable once built and lives in one allocation (table_free() is one free),
 * so the dataplane may publish it to its workers with RCU as it is. Every count in it is
 * bounded by the TABLE_*_MAX caps below and by the table's own `limits`, so the dataplane
 * sizes all per-job state (tree entries, contributor maps, slot pools) at install time;
 * nothing grows with traffic.
 *
 * Conventions shared with the dataplane and the worker library (docs/TABLES.md):
 *  - Chunks. The tensor of `elements` elements of `dtype` is cut into chunks of
 *    `chunk_elements` elements (the last one may be shorter); chunk c covers elements
 *    [c * chunk_elements, min((c + 1) * chunk_elements, elements)). One chunk is one
 *    packet payload. Each tree carries one contiguous range of chunk indices; the ranges of
 *    all trees of a job partition [0, table_n_chunks()).
 *  - Chunk steering. A sender sends chunk c to the UDP port base_port + (c % ports) of the
 *    receiving gateway, so that all contributions to one chunk reach the same RX queue
 *    (RSS or rte_flow on the destination port) and one lcore owns each slot.
 *  - Contributors. In tree entry e, bit k of a slot's contributor bitmap stands for
 *    e->workers[k] (k < n_workers) and bit n_workers + j for e->children[j]; a chunk is
 *    complete when e->expected bits are set, or in a partial reduce once the worker
 *    contributions summed reach e->threshold. expected <= TABLE_CONTRIB_MAX.
 *  - Ids. Gateway and worker ids share one 16-bit sender-id space per job, 1 ..
 *    TABLE_ID_MAX (0 and 0xffff are reserved for "none" here and on the wire); job ids
 *    and plan epochs are 32-bit; tree ids are the plan's tree indices (16-bit).
 *  - Addresses. IPv4 addresses are held in host byte order (a.b.c.d is
 *    a << 24 | b << 16 | c << 8 | d) and written as dotted quads; ports in host order.
 *
 * Who may call what: everything here is slow path (it allocates) except the lookups
 * table_n_chunks() and table_tree_of_chunk(). The control process compiles tables and
 * writes them with table_write(); the dataplane's control thread calls table_parse() and
 * hands the result to its workers read-only.
 */
#ifndef GEOREDUCE_TABLE_H
#define GEOREDUCE_TABLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <jansson.h>

#include "wire.h"

#define TABLE_FORMAT "georeduce-table/1"

/** Longest message the functions below write into their error buffer. */
#define TABLE_ERR_MAX 512

/*
 * Hard caps, compiled into the control process and the dataplane alike. A table's
 * `limits` may be lower, never higher: a dataplane built with smaller caps rejects a
 * table from a control process built with larger ones at install time.
 */
#define TABLE_TREES_MAX 256      /* tree entries in one table */
#define TABLE_CHILDREN_MAX 64    /* child gateways of one tree entry */
#define TABLE_WORKERS_MAX 192    /* local workers of one tree entry */
#define TABLE_GRACE_MS_MAX 60000 /* a partial reduce's grace window, ms */
#define TABLE_CONTRIB_MAX 256    /* expected contributions: the width of a slot bitmap */
#define TABLE_PORTS_MAX 1024     /* UDP ports of one gateway's steering range */
#define TABLE_SLOTS_MAX 65536    /* slots of one tree entry (power of two) */
#define TABLE_SLOTS_MIN 16       /* the slot formula's default floor (power of two) */
#define TABLE_POOL_WINDOWS 4     /* a tree's slot pool: this many windows, within the cap */
/* A chunk's payload (and its contributor set, and a sealed frame's 48 bytes) after the
 * IPv4, UDP and georeduce headers in an IP packet of the largest MTU any receiver takes,
 * 9000 (jumbo frames): 9000 - 82 = 8918 bytes (docs/TABLES.md, docs/PROTOCOL.md 8). */
#define TABLE_CHUNK_BYTES_MAX (WIRE_MTU_MAX - WIRE_MTU_OVERHEAD)
#define TABLE_ID_MAX 0xfffe      /* largest gateway or worker id (0, 0xffff: none) */
#define TABLE_CSET_BLOCKS_MAX 16 /* contributor set: worker ids up to 4095 */
/* Workers below the child gateways of one tree entry (contributor sets only): distinct
 * ids of a set, 1 .. 4095. */
#define TABLE_BELOW_MAX (TABLE_CSET_BLOCKS_MAX * 256 - 1)
#define TABLE_STREAMS_MAX 64 /* multicast streams in one table */
#define TABLE_SEALS_MAX 128  /* protected links of one table (one per peer gateway) */
#define TABLE_KEY_MAX 32     /* bytes of a link key (AES-256) */
#define TABLE_SHARDS_MAX 15  /* other gateways of this site in one table: 16 a site */

/** Element types of a tensor. 0 is not a dtype. */
enum table_dtype {
	TABLE_DTYPE_FP32 = 1,
	TABLE_DTYPE_FP16 = 2,
	TABLE_DTYPE_BF16 = 3,
	TABLE_DTYPE_MXINT8 = 4, /* OCP MX blocks of 32 elements (docs/PROTOCOL.md section 4) */
	TABLE_DTYPE_MXFP8 = 5,
	TABLE_DTYPE_MXFP4 = 6,
};

/** The AEAD of a protected link (docs/PROTOCOL.md section 14). 0 is none. */
enum table_aead {
	TABLE_AEAD_AES128_GCM = 1,
	TABLE_AEAD_AES256_GCM = 2,
};

/**
 * A protected link: every georeduce packet between this gateway and gateway `peer` is
 * sealed with this key (docs/PROTOCOL.md section 14, docs/TABLES.md "Protected links").
 * The key is secret: never logged, never in a stats or dump reply (table_to_json_public()).
 */
struct table_seal {
	uint16_t peer;   /* gateway id of the other end, a neighbour in the table */
	uint32_t key_id; /* >= 1; names the key on the wire */
	enum table_aead aead;
	uint8_t key[TABLE_KEY_MAX]; /* table_aead_key_len(aead) bytes, the rest zero */
};

/** What this gateway is in one tree. */
enum table_role {
	TABLE_ROLE_ROOT = 1,     /* no parent: completes chunks and starts the result down */
	TABLE_ROLE_INTERIOR = 2, /* a parent and at least one child gateway */
	TABLE_ROLE_LEAF = 3,     /* a parent, local workers only */
};

/** A gateway as seen by its peers: where to send chunks of a job to it. */
struct table_gw {
	uint16_t id;        /* sender id, 1 .. TABLE_ID_MAX */
	uint32_t ipv4;      /* host order, unicast */
	uint16_t base_port; /* chunk c goes to UDP port base_port + c % ports */
	uint16_t ports;     /* >= 1, base_port + ports - 1 <= 65535 */
};

/** A local worker: contributes every chunk of the trees that list it, gets the results. */
struct table_worker {
	uint16_t id;   /* sender id, 1 .. TABLE_ID_MAX */
	uint32_t ipv4; /* host order, unicast */
	uint16_t port; /* the worker's UDP port, >= 1 */
};

/** Per-table bounds the dataplane sizes its per-job state by (see TABLE_*_MAX). */
struct table_limits {
	uint32_t max_trees;    /* 1 .. TABLE_TREES_MAX; n_trees <= max_trees */
	uint32_t max_children; /* 0 .. TABLE_CHILDREN_MAX; per tree entry */
	uint32_t max_workers;  /* 0 .. TABLE_WORKERS_MAX; per tree entry */
	uint32_t max_slots;    /* power of two, 1 .. TABLE_SLOTS_MAX; per tree entry */
};

/** This gateway's part in one tree. */
struct table_tree {
	uint16_t id; /* the plan's tree index; unique in a table */
	enum table_role role;
	bool has_parent;        /* false exactly at the root */
	struct table_gw parent; /* zero at the root */
	int n_children;
	int n_workers;
	struct table_gw *children;    /* n_children entries, inside the table's block */
	struct table_worker *workers; /* n_workers entries, inside the table's block */
	uint32_t *child_workers;      /* n_children entries, inside the table's block: the
				   * workers of children[j]'s subtree (its own subtree_workers,
				   * 1 .. TABLE_ID_MAX), which is the contrib of each of its
				   * partial sums in a job without contributor sets */
	uint32_t expected;            /* contributions per chunk: n_workers + n_children */
	uint32_t subtree_workers;     /* worker contributions summed in a complete partial sum
				   * of this gateway (every worker of the job at the root):
				   * n_workers + the sum of child_workers[] */
	uint32_t chunk_first;         /* the tree carries chunks chunk_first .. +chunk_count-1 */
	uint32_t chunk_count;         /* >= 1 */
	double rate_gbps;             /* planned rate: pace this tree's traffic on each link */
	uint32_t slots;               /* slot pool: chunks in flight held here (power of two) */
	uint32_t window;              /* chunks a worker keeps unanswered in this tree, <= slots:
				   * the pool's span beyond it lets the window move on past a
				   * lost chunk until it is resent; 0: slots */
	uint32_t threshold;           /* partial reduce: a chunk is complete here once this many
				   * worker contributions are summed (or every contributor is
				   * in), 1 .. subtree_workers; 0: subtree_workers (all). Below
				   * subtree_workers the job must carry contributor sets */
	uint32_t grace_ms;            /* partial reduce: once the threshold is reached, wait up
				   * to this long for the other contributors (every one in:
				   * complete at once), then complete with what is in;
				   * 0: complete at the threshold. Only with a threshold
				   * below subtree_workers; <= TABLE_GRACE_MS_MAX */
	bool grace_adaptive;          /* grace_ms is the bound of a window the gateway sets
				   * from the recent arrivals (docs/TABLES.md) */
	/* With contributor sets (cset_blocks >= 1): the workers below each child gateway
	 * (in its subtree), which are all the workers its partial sums may name. Entry k
	 * is worker below[k] under children[below_child[k]], sorted by (child, id); every
	 * child has at least one, and n_workers + n_below == subtree_workers. Without
	 * sets n_below is 0. Both arrays are inside the table's block. */
	int n_below;          /* 0 .. TABLE_BELOW_MAX */
	uint16_t *below;      /* worker ids */
	uint8_t *below_child; /* index in children[] */
};

/**
 * This gateway's part in one multicast stream (selective multicast, docs/SELMCAST.md): the
 * MCAST packets of the workers `origins` of the source site, every chunk [0, n_chunks) of
 * the tensor, copied once to each next-hop gateway `to` of the stream's distribution tree
 * and to each local worker `deliver`. Arrays are inline and bounded by the caps.
 */
struct table_stream {
	uint16_t id;          /* stream id (the wire header's `tree` of an MCAST); unique
				   * among the table's streams, independent of tree ids */
	uint16_t source;      /* gateway id of the sending site */
	bool has_from;        /* false exactly at the source gateway */
	struct table_gw from; /* the gateway the stream arrives from; zero at the source,
				   * which takes it from its local workers `origins` */
	int n_to;             /* 0 .. TABLE_CHILDREN_MAX */
	int n_deliver;        /* 0 .. TABLE_WORKERS_MAX; n_to + n_deliver >= 1 */
	int n_origins;        /* 1 .. TABLE_WORKERS_MAX */
	double rate_gbps;     /* pace the stream at this rate on each link to `to` */
	struct table_gw to[TABLE_CHILDREN_MAX];         /* one copy each */
	struct table_worker deliver[TABLE_WORKERS_MAX]; /* local workers, one copy each */
	uint16_t origins[TABLE_WORKERS_MAX];            /* worker ids of the source site */
};

/** One tree of another gateway of this site, as a worker sees it: where its chunks go. */
struct table_shard_tree {
	uint16_t id;          /* the tree id of that gateway's entry */
	uint32_t chunk_first; /* it carries chunks chunk_first .. + chunk_count - 1 */
	uint32_t chunk_count; /* >= 1 */
	uint32_t slots;       /* that gateway's slot pool for the tree (power of two) */
	uint32_t window;      /* chunks a worker keeps unanswered in it, <= slots; 0: slots */
};

/**
 * Another gateway of this gateway's site and the chunk ranges it carries (its shard of the
 * tensor): the site's workers send every chunk of those ranges to it, not here. The
 * gateway itself carries none of them (docs/TABLES.md, `shards`).
 */
struct table_shard {
	struct table_gw gw;             /* where the shard's chunks go */
	int n_trees;                    /* 1 .. TABLE_TREES_MAX */
	struct table_shard_tree *trees; /* ids ascending, inside the table's block */
};

struct table {
	uint32_t job;
	uint32_t epoch;
	struct table_gw gw; /* this gateway */
	enum table_dtype dtype;
	uint64_t elements;       /* tensor elements, >= 1 */
	uint32_t chunk_elements; /* elements per chunk; * dtype size <= TABLE_CHUNK_BYTES_MAX */
	/* The local workers' CONTRIBs to this gateway (the LAN hop) in another dtype than the
	 * WAN's: fp32 or bf16 for an MX dtype, so that a worker's gradient is first rounded
	 * where its gateway's sum leaves; RESULTs stay in dtype. 0: dtype (table_lan_dtype()).
	 * chunk_elements of it fit TABLE_CHUNK_BYTES_MAX too. */
	enum table_dtype lan_dtype;
	struct table_limits limits;
	uint8_t cset_blocks;          /* contributor sets in every CONTRIB and RESULT, in 32-byte
				   * blocks (docs/PROTOCOL.md section 4), 0 .. TABLE_CSET_BLOCKS_MAX;
				   * every local worker id < 256 * cset_blocks. 0: none */
	int n_trees;                  /* 0 .. limits.max_trees; a gateway in no tree has none */
	struct table_tree *trees;     /* sorted by id, inside the table's block */
	int n_streams;                /* 0 .. TABLE_STREAMS_MAX; written only when nonzero */
	struct table_stream *streams; /* sorted by id, inside the table's block */
	int n_seals;                  /* 0 .. TABLE_SEALS_MAX; written only when nonzero */
	struct table_seal seals[TABLE_SEALS_MAX]; /* sorted by peer */
	/* Several gateways at this site: the other ones with their trees, for the workers
	 * (every local worker contributes every chunk, each to the gateway that holds it). */
	int n_shards;               /* 0 .. TABLE_SHARDS_MAX; written only when nonzero */
	struct table_shard *shards; /* inside the table's block */
};

/**
 * An empty table (every field zero) with room for n_trees tree entries, the i-th with
 * n_children[i] child gateways and n_workers[i] workers, in one allocation: trees[i] has
 * its id, n_children, n_workers, children, child_workers and workers set, the rest is
 * the caller's. Counts are checked against the TABLE_*_MAX caps.
 *
 * @return  The table, or NULL with errno EINVAL (a count out of range) or ENOMEM.
 */
struct table *table_create(int n_trees, const int *n_children, const int *n_workers);

/**
 * table_create() with room for n_streams multicast streams as well (0 .. TABLE_STREAMS_MAX),
 * zeroed: the caller fills them. Still one allocation.
 *
 * @return  The table, or NULL with errno EINVAL or ENOMEM.
 */
struct table *
table_create_streams(int n_trees, const int *n_children, const int *n_workers, int n_streams);

/**
 * table_create_streams() with room for n_below[i] (0 .. TABLE_BELOW_MAX) workers below
 * the child gateways of tree entry i as well: trees[i].n_below, below and below_child
 * are set, the entries are the caller's. n_below may be NULL (none). Still one
 * allocation.
 *
 * @return  The table, or NULL with errno EINVAL or ENOMEM.
 */
struct table *table_create_full(int n_trees, const int *n_children, const int *n_workers,
				const int *n_below, int n_streams);

/**
 * table_create_full() with room for n_shards (0 .. TABLE_SHARDS_MAX) other gateways of this
 * site as well, the j-th with n_shard_trees[j] (1 .. TABLE_TREES_MAX) trees: shards[j].n_trees
 * and trees are set, the rest is the caller's. Still one allocation.
 *
 * @return  The table, or NULL with errno EINVAL or ENOMEM.
 */
struct table *
table_create_sharded(int n_trees, const int *n_children, const int *n_workers, const int *n_below,
		     int n_streams, int n_shards, const int *n_shard_trees);

/** The stream entry with id `id`, or NULL. */
const struct table_stream *table_stream_find(const struct table *tb, uint16_t id);

/** The protected link to gateway `peer`, or NULL (not protected). */
const struct table_seal *table_seal_find(const struct table *tb, uint16_t peer);

/** Whether gateway `id` is a neighbour in table tb: a tree's parent or child, or a
 * stream's `from` or `to`. */
bool table_is_neighbour(const struct table *tb, uint16_t id);

/** Key bytes of an AEAD: 16 (AES-128-GCM), 32 (AES-256-GCM), 0 for a value that is none. */
size_t table_aead_key_len(enum table_aead a);

/** "aes-128-gcm", "aes-256-gcm", or NULL. */
const char *table_aead_name(enum table_aead a);

/** The AEAD named s, or 0 if none. */
enum table_aead table_aead_from_name(const char *s);

/** Free a table and everything in it, its keys wiped first. NULL is a no-op. */
void table_free(struct table *tb);

/**
 * Check the consistency rules of docs/TABLES.md: role against parent and children,
 * expected == n_workers + n_children, ids unique, addresses unicast dotted IPv4, ports in
 * range, counts and slot pools within `limits` and `limits` within the caps, tree ranges
 * disjoint inside [0, n_chunks) and covering it when the gateway has local workers,
 * every tree listing the same local workers, and the multicast streams' rules (ids
 * unique and ascending, `from` null exactly at the source, peers and workers distinct and
 * valid, deliver workers among the trees' local workers when there are trees), and the
 * shards' rules (other gateways of the site, tree ids unique across the table, their
 * ranges and this gateway's together covering the tensor exactly). Every
 * child gateway counts the workers below it (child_workers, >= 1), and the local workers
 * and those counts make subtree_workers. With contributor sets every child gateway lists
 * the workers below it as well (ids inside the set, distinct from every other id of the
 * entry, as many as its count); without, none does.
 *
 * @param err  Receives one line "field 'trees[1].expected': ..." naming the field.
 * @return     0, or -EINVAL with err filled.
 */
int table_validate(const struct table *tb, char *err, size_t errlen);

/**
 * What a peer of protocol revision `revision` (docs/PROTOCOL.md section 12; lib/revision.h)
 * takes of a valid table beyond table_validate(): below 1.14, chunks of at most 8192 bytes
 * of payload. For a dataplane told to act as an older revision (`--revision`), with the
 * text such a gateway gives.
 *
 * @return 0, or -EINVAL with err naming `chunk_elements`.
 */
int table_check_revision(const struct table *tb, unsigned int revision, char *err, size_t errlen);

/**
 * Parse a `georeduce-table/1` document strictly: every field is required, unknown fields
 * and duplicate keys are rejected, integers are range-checked, then table_validate().
 *
 * @param text  NUL-terminated JSON.
 * @param src   Name used in messages ("ctl-socket", a path); NULL means "<string>".
 * @param err   Receives one line: "src:line:column: invalid JSON: ..." for syntax errors,
 *              "src: field 'trees[0].workers[1].ipv4': ..." for everything else.
 * @return      The table (free with table_free()), or NULL with err filled and errno
 *              EINVAL (ENOMEM when out of memory).
 */
struct table *table_parse(const char *text, const char *src, char *err, size_t errlen);

/** Read a file ("-": stdin) and table_parse() it. NULL with err on failure. */
struct table *table_load(const char *path, char *err, size_t errlen);

/** The table as a `georeduce-table/1` JSON object (new reference), NULL on ENOMEM. It holds
 * the link keys: send it only over the control socket or its TLS channel. */
json_t *table_to_json(const struct table *tb);

/** table_to_json() without the protected links and their keys: a valid table for a
 * worker's file, a dump or a log (the worker library needs no link key). NULL on ENOMEM.
 * table_seals_json() describes the links without their keys. */
json_t *table_to_json_public(const struct table *tb);

/** The protected links as {"peer", "key_id", "aead"} objects, never a key (new reference;
 * NULL on ENOMEM). */
json_t *table_seals_json(const struct table *tb);

/** Write the table as `georeduce-table/1` JSON. Returns 0 or a negative errno. */
int table_write(const struct table *tb, FILE *out);

/** Number of chunks of the table's tensor: ceil(elements / chunk_elements). */
uint64_t table_n_chunks(const struct table *tb);

/** The tree entry that carries chunk c, or NULL (not this gateway's, or out of range). */
const struct table_tree *table_tree_of_chunk(const struct table *tb, uint32_t c);

/** The dtype of the local workers' CONTRIBs: lan_dtype, or dtype when that is 0. */
enum table_dtype table_lan_dtype(const struct table *tb);

/**
 * The IP MTU the table's largest packet needs: the 82 bytes of IPv4, UDP and georeduce
 * headers, the contributor set and a full chunk, in the dtype (48 bytes more when the
 * table has sealed links) or in the LAN dtype of the local workers' CONTRIBs (never
 * sealed), whichever is the larger. A valid table needs at most WIRE_MTU_MAX.
 */
uint64_t table_mtu_needed(const struct table *tb);

/** Total bytes of slot buffers the table asks for: sum of slots * chunk payload bytes. */
uint64_t table_slot_bytes(const struct table *tb);

/** "fp32", "fp16", "bf16", "mxint8", "mxfp8", "mxfp4", or NULL for a value that is no
 * dtype. */
const char *table_dtype_name(enum table_dtype dt);

/** The dtype named s, or 0 if none. */
enum table_dtype table_dtype_from_name(const char *s);

/** Bytes per element: 4 for fp32, 2 for fp16 and bf16, 0 for an MX dtype (whose elements
 * come in blocks: table_dtype_unit_bytes()) or a value that is no dtype. */
size_t table_dtype_size(enum table_dtype dt);

/** Elements of the smallest whole unit of a dtype's payload: 1, or 32 (one MX block), of
 * which chunk_elements and elements are multiples; 0 for a value that is no dtype. */
unsigned int table_dtype_granule(enum table_dtype dt);

/** Bytes of that unit: the element size, or 33 (MXINT8, MXFP8) or 17 (MXFP4) for a block
 * with its scale; 0 for a value that is no dtype. */
size_t table_dtype_unit_bytes(enum table_dtype dt);

/** Bytes of `elements` elements on the wire (a partial MX block counts whole). */
uint64_t table_dtype_bytes(enum table_dtype dt, uint64_t elements);

/** "root", "interior", "leaf", or NULL. */
const char *table_role_name(enum table_role r);

/** The role named s, or 0 if none. */
enum table_role table_role_from_name(const char *s);

/**
 * Parse a strict dotted quad: four decimal octets 0..255 without leading zeros, signs or
 * spaces. Any address is accepted here (see table_ipv4_unicast()).
 * @return  0 with *out in host order, or -EINVAL.
 */
int table_ipv4_parse(const char *s, uint32_t *out);

/** Format a host-order address as a dotted quad into buf (at least 16 bytes); returns buf. */
char *table_ipv4_format(uint32_t ipv4, char *buf);

/** True for an address a gateway or worker may have: not in 0/8, 224/4 or 240/4. */
bool table_ipv4_unicast(uint32_t ipv4);

#endif
