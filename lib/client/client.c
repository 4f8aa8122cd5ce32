/* SPDX-License-Identifier: BSD-3-Clause
 *
 * libgeoreduce: the worker side of docs/PROTOCOL.md over one kernel UDP socket.
 *
 * One gr_allreduce() call is a loop of four steps: fill the send window with first
 * transmissions, run the timers of the chunks in flight (section 10), flush the transmit
 * batch with one sendmmsg(), read what arrived with one recvmmsg() and apply it. When a pass
 * did nothing, the loop sleeps in ppoll() until a packet, the earliest timer, the progress
 * interval or the deadline. Payloads go out straight from the caller's buffer (an iovec
 * behind a 54-byte header) and results are copied into it once validated; everything else
 * lives in the client, allocated at creation: one 16-byte record per chunk, the batch
 * headers and RX_BATCH receive buffers. Nothing is allocated per call or per packet.
 *
 * Every tree has its own window: at most `window` of its chunks in flight (sent, without
 * result), and a span of at most its slot pool: chunk i of a tree is sent only once every
 * chunk of that tree before i - slots has its result, so the chunks in flight of a tree
 * never collide in the gateway's slot pool for it (slot = chunk & (slots - 1)). The
 * gateway's table makes the pool twice the window, so a lost chunk does not stop the
 * window until it is resent: the others move on past it by up to a window. First
 * transmissions go round-robin over the trees with room in their window, so that every
 * tree of the plan runs at once, each at the rate its gateway paces it to (a single
 * window over the whole tensor would run the trees, whose ranges are contiguous, one
 * after the other).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "georeduce.h"
#include "halffloat.h"
#include "jsonutil.h"
#include "sum.h"
#include "table.h"
#include "wire.h"

#if !defined(__BYTE_ORDER__) || __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "libgeoreduce sends payloads as they are in memory: little-endian hosts only"
#endif

static_assert((int)GR_DTYPE_FP32 == (int)WIRE_DTYPE_FP32, "dtype codes agree");
static_assert((int)GR_DTYPE_FP16 == (int)WIRE_DTYPE_FP16, "dtype codes agree");
static_assert((int)GR_DTYPE_BF16 == (int)WIRE_DTYPE_BF16, "dtype codes agree");
static_assert((int)GR_DTYPE_MXINT8 == (int)WIRE_DTYPE_MXINT8, "dtype codes agree");
static_assert((int)GR_DTYPE_MXFP8 == (int)WIRE_DTYPE_MXFP8, "dtype codes agree");
static_assert((int)GR_DTYPE_MXFP4 == (int)WIRE_DTYPE_MXFP4, "dtype codes agree");
static_assert(GR_TREES_MAX == TABLE_TREES_MAX, "a table's trees fit a configuration");
static_assert(GR_CSET_BLOCKS_MAX == WIRE_CSET_BLOCKS_MAX && GR_CSET_BLOCK == WIRE_CSET_BLOCK,
	      "contributor sets as on the wire");

#define TX_BATCH 64                             /* packets per sendmmsg() */
#define RX_BATCH 32                             /* datagrams per recvmmsg() */
#define RX_LEN (WIRE_UDP_PAYLOAD_MAX + 1)       /* one more: oversize is detected */
#define NACK_RUN_MAX WIRE_NACK_RANGE_MAX        /* chunks per coalesced NACK_RESULT */
#define RTT_GRANULARITY_US 100                  /* floor of 4 x rttvar in a timer */
#define RTT_SAMPLE_MAX_US 60000000              /* longer samples are clock noise */
#define SOCK_BUF_BYTES (8 << 20)                /* asked for; the kernel may cap it */

/* Per chunk, docs/PROTOCOL.md section 10. IDLE: not sent in this call. */
enum chunk_state {
	CH_IDLE = 0,
	CH_SENT,        /* sent once, T1 armed */
	CH_RETX,        /* sent again with RETX, T1 armed with backoff */
	CH_HELD,        /* ACKed: the gateway holds it; T2 armed */
	CH_DONE,        /* result delivered */
};

/* What a tree's latest answered chunk through one gateway port tells of the chunks sent
 * before it through that port (the results of one port come back in order: one lcore of
 * the gateway; of different ports, not). */
struct rack {
	uint32_t sent;          /* its first transmission (us, mod 2^32) */
	uint32_t rtt;           /* the time its result took (us) */
	uint32_t chunk;         /* its index (the chunks of a burst share a time) */
};

struct chunk {
	uint64_t due_us;        /* expiry of T1 (SENT, RETX) or T2 (HELD) */
	uint32_t sent_us;       /* clock of the latest transmission (the first while SENT: a
				 * Karn sample) */
	uint16_t contrib;       /* the result's contributor count */
	uint8_t state;          /* enum chunk_state */
	uint8_t backoff;        /* timer doublings so far */
};

/* gr_mcast_recv()'s loss recovery: a chunk of the call's round missing from one origin.
 * `when` is in microseconds since the call started, plus 1 (0: not known missing): with
 * tries 0 the time it may first be asked for, else when it was last asked for. */
struct mmiss {
	uint32_t when;
	uint8_t tries;
};

/* ... and per origin: the chunk after the latest one received (chunks before it that
 * have not arrived are behind later ones: lost) and when the latest one arrived. */
struct morigin {
	uint32_t hi;
	uint32_t seen;                  /* the chunk after the latest one received (hi
					 * also moves past the chunks a probe asks for) */
	uint64_t last;                  /* us, 0: nothing received of the round */
	uint64_t probed;                /* us: the latest tail probe (0: none) */
};

#define MCAST_NACK_TRIES 8              /* NACK_MCASTs for one chunk, at most */
#define MCAST_REPAIR_INIT_US 20000      /* a repair's wait before a sample (doubles) */
#define MCAST_REPAIR_MAX_US 1000000     /* ... and the longest */
#define MCAST_TAIL_MIN_US 2000          /* an origin silent this long (at least) while
					 * chunks of it are missing has lost its last ones */
#define MCAST_TAIL_PROBE 1u             /* ... of which this many past the latest are
					 * asked for at a time (it may not have sent them
					 * yet: a busy origin pauses) */
#define MCAST_SILENT_US 100000          /* nothing of an origin this long into a call:
					 * its first chunk is asked for (all may be lost) */

/* A slot of gr_mcast_recv()'s window: the chunks kept of one round ahead. */
struct mslot {
	uint32_t round;                 /* the round kept; meaningless while held is 0 */
	uint32_t held;                  /* chunks kept; 0: the slot is free (bitmaps clear) */
};

/* The latest RESULT of a chunk this client got (its contributor set and payload are in
 * the client's kbuf), for a gateway that asks for it after a failover (docs/CLIENT.md,
 * "Results kept"). */
struct kept {
	uint32_t round;
	uint16_t contrib;
	uint16_t origin;                /* the root that completed it */
	bool valid;
};

/* RFC 6298 estimator, microseconds. */
struct rtt {
	int64_t srtt;
	int64_t rttvar;
	bool valid;
};

struct gr_client {
	struct gr_config cfg;           /* trees sorted by chunk_first */
	struct gr_gateway tgw[GR_TREES_MAX]; /* the gateway of each tree (cfg.trees order) */
	unsigned int n_gws;             /* the distinct gateways among them */
	struct gr_gateway gws[GR_GATEWAYS_MAX];
	int fd;
	uint32_t n_chunks;
	struct chunk *ch;               /* n_chunks */
	struct rack *rack;              /* per tree and gateway port, from rack_off[tree] */
	uint32_t rack_off[GR_TREES_MAX];
	struct rtt res;                 /* CONTRIB to RESULT, first transmissions only */
	struct rtt path;                /* echoed answers (ACK, RESULT to a NACK) */
	struct gr_stats st;
	char err[GR_ERR_MAX];
	/* Transmit batch: header, payload iovec and destination per packet. */
	unsigned int tx_n;
	struct mmsghdr txm[TX_BATCH];
	struct iovec txiov[TX_BATCH][3]; /* header (and set), payload, zeros padding it */
	struct sockaddr_in txaddr[TX_BATCH];
	uint8_t txhdr[TX_BATCH][WIRE_HDR_LEN + WIRE_CSET_BLOCK * WIRE_CSET_BLOCKS_MAX];
	uint32_t cset_len;              /* bytes of the job's contributor sets */
	uint8_t cset[WIRE_CSET_BLOCK * WIRE_CSET_BLOCKS_MAX]; /* this worker's own set */
	/* Receive batch. */
	struct mmsghdr rxm[RX_BATCH];
	struct iovec rxiov[RX_BATCH];
	struct sockaddr_in rxaddr[RX_BATCH];
	uint8_t *rxbuf;                 /* RX_BATCH x RX_LEN */
	/* gr_mcast_recv(): the round being received and mahead rounds after it. Per round
	 * and origin (configuration order) a bitmap of the chunks got and their count: set 0
	 * is the round of the call, set 1 + s that of window slot s. Slot s keeps the chunks
	 * of a round ahead with round % mahead == s, copied into its part of mdata, until
	 * the call of that round delivers them. Allocated with the configuration when it has
	 * origins (NULL without), so that a call allocates nothing. */
	uint8_t *mbits;                 /* (1 + mahead) x n_origins x mbits_stride bytes */
	size_t mbits_stride;
	uint32_t *mgot;                 /* (1 + mahead) x n_origins */
	struct mslot *mslot;            /* mahead */
	uint8_t *mdata;                 /* mahead x n_origins x mtensor bytes */
	size_t mtensor;                 /* bytes of one tensor */
	uint32_t mahead;
	/* Loss recovery of the call's round (NACK_MCAST, docs/CLIENT.md): n_origins x
	 * n_chunks missing-chunk records, n_origins origin records; the smoothed time between
	 * two chunks of an origin and between a NACK_MCAST and its repair (first tries). */
	struct mmiss *mmiss;
	struct morigin *morig;
	uint64_t mgap_us;               /* 0: no sample yet */
	struct rtt mrep;
	/* MX jobs: the caller's fp32 tensor encoded for the wire, chunk after chunk (each
	 * chunk_wire bytes, the last one shorter), with the kernels the dataplane uses; in
	 * the LAN dtype (lan) if the job has one, 0 bytes when that is fp32 (the CONTRIBs
	 * then carry the caller's buffer). */
	const struct sum_kernels *k;
	uint8_t *mxbuf;
	size_t chunk_wire;
	enum wire_dtype lan;            /* the dtype of this worker's CONTRIBs */
	/* Results kept (NULL with cfg.forget_results): per chunk its record and, at
	 * kbuf + chunk x kstride, its contributor set and payload as they came. Kept across a
	 * reconfiguration that leaves the chunks as they are. */
	struct kept *kept;
	uint8_t *kbuf;
	size_t kstride;
	/* The chunk records are those of a call of resume_round that timed out, as it left
	 * them (gr_options.resume). */
	bool resumable;
	uint32_t resume_round;
	size_t resume_elements;
};

/* What one gr_allreduce() call works with. */
struct call {
	struct gr_client *c;
	uint8_t *buf;
	uint8_t *csets;                 /* the caller's, or NULL */
	size_t esize;
	uint32_t round;
	/* The tensor on the job's chunk grid (call_layout()): it fills chunks
	 * [chunk_first, tend) of each tree, the tree's first one being the tensor's chunk
	 * tbase; its last chunk, `last`, holds `tail` elements of it (zeros pad the rest). */
	uint32_t n_used;                /* chunks the call sends */
	uint32_t tbase[GR_TREES_MAX];
	uint32_t last, tail;
	bool average;
	uint32_t window;
	uint64_t rto_min, rto_max, rto_initial;         /* us */
	uint32_t tnext[GR_TREES_MAX];   /* per tree: first chunk of its range never sent */
	uint32_t told[GR_TREES_MAX];    /* per tree: first chunk of its range without result */
	uint32_t tend[GR_TREES_MAX];    /* per tree: end of its range */
	uint32_t twin[GR_TREES_MAX];    /* per tree: its window (chunks in flight) */
	uint32_t tspan[GR_TREES_MAX];   /* per tree: how far past told a chunk may be sent */
	uint32_t tflight[GR_TREES_MAX]; /* per tree: chunks sent without result */
	uint64_t tprogress[GR_TREES_MAX]; /* per tree: when its latest result came (us) */
	uint32_t done;
	uint64_t next_due;              /* no timer expires before this */
	uint16_t contrib_min, contrib_max;
	int fatal;                      /* a send error that ends the call */
	/* NACK_RESULT coalescing (gateway with one port only). */
	uint32_t run_first, run_len;
};

size_t
gr_dtype_size(enum gr_dtype dtype)
{
	/* MX jobs take and give fp32: the caller's buffer has 4 bytes an element. */
	if (wire_dtype_is_mx((enum wire_dtype)dtype))
		return 4;
	return table_dtype_size((enum table_dtype)dtype);
}

const char *
gr_dtype_name(enum gr_dtype dtype)
{
	return table_dtype_name((enum table_dtype)dtype);
}

/* --- Configuration ------------------------------------------------------------------------ */

static int
cmp_tree_first(const void *a, const void *b)
{
	const struct gr_tree *x = a, *y = b;

	return (x->chunk_first > y->chunk_first) - (x->chunk_first < y->chunk_first);
}

static bool
id_ok(uint16_t id)
{
	return id >= WIRE_NODE_ID_MIN && id <= WIRE_NODE_ID_MAX;
}

/* The gateway of trees[i]: its own in tree_gateways, or the configuration's. */
static struct gr_gateway
tree_gateway(const struct gr_config *cfg, unsigned int i)
{
	if (cfg->tree_gateways[i].id != 0)
		return cfg->tree_gateways[i];
	return (struct gr_gateway){ .id = cfg->gateway_id, .ipv4 = cfg->gateway_ipv4,
				    .base_port = cfg->gateway_base_port,
				    .ports = cfg->gateway_ports };
}

static bool
gateway_same(const struct gr_gateway *a, const struct gr_gateway *b)
{
	return a->id == b->id && a->ipv4 == b->ipv4 && a->base_port == b->base_port &&
	       a->ports == b->ports;
}

/* The distinct gateways of cfg's trees into out[] (at most max); returns how many there
 * are, possibly more than max. */
static unsigned int
distinct_gateways(const struct gr_config *cfg, struct gr_gateway *out, unsigned int max)
{
	unsigned int n = 0;

	for (unsigned int i = 0; i < cfg->n_trees && i < GR_TREES_MAX; i++) {
		struct gr_gateway g = tree_gateway(cfg, i);
		unsigned int k = 0;

		while (k < n && k < max && !gateway_same(&out[k], &g))
			k++;
		if (k < n)
			continue;
		if (n < max)
			out[n] = g;
		n++;
	}
	return n;
}

/* The trees' gateways: valid, other than the worker, one address and ports per id, at
 * most GR_GATEWAYS_MAX. */
static int
check_tree_gateways(const struct gr_config *cfg, char *err, size_t errlen)
{
	struct gr_gateway gws[GR_GATEWAYS_MAX];
	unsigned int n;

	for (unsigned int i = 0; i < cfg->n_trees; i++) {
		const struct gr_gateway *g = &cfg->tree_gateways[i];

		if (g->id == 0)
			continue;
		if (!id_ok(g->id) || g->id == cfg->worker_id)
			return json_util_fail(err, errlen, "tree_gateways[%u].id: %u, ids are 1 to %u "
					      "and not the worker's", i, g->id, WIRE_NODE_ID_MAX);
		if (!table_ipv4_unicast(g->ipv4))
			return json_util_fail(err, errlen, "tree_gateways[%u].ipv4: not a unicast "
					      "address", i);
		if (wire_port_range_check(g->base_port, g->ports) < 0)
			return json_util_fail(err, errlen, "tree_gateways[%u] ports: %u from %u leave "
					      "1 .. 65535", i, g->ports, g->base_port);
	}
	n = distinct_gateways(cfg, gws, GR_GATEWAYS_MAX);
	if (n > GR_GATEWAYS_MAX)
		return json_util_fail(err, errlen, "tree_gateways: %u gateways, at most %u", n,
				      GR_GATEWAYS_MAX);
	for (unsigned int a = 0; a < n; a++)
		for (unsigned int b = 0; b < a; b++)
			if (gws[a].id == gws[b].id || gws[a].ipv4 == gws[b].ipv4)
				return json_util_fail(err, errlen, "tree_gateways: gateway %u at %u "
						      "ports from %u and gateway %u: one id and "
						      "address per gateway", gws[a].id, gws[a].ports,
						      gws[a].base_port, gws[b].id);
	return 0;
}

int
gr_config_check(const struct gr_config *cfg, char *err, size_t errlen)
{
	struct gr_tree sorted[GR_TREES_MAX];
	size_t esize;
	unsigned int gran;
	int64_t n_chunks;
	uint64_t end = 0;

	if (cfg == NULL)
		return json_util_fail(err, errlen, "no configuration");
	esize = table_dtype_unit_bytes((enum table_dtype)cfg->dtype);
	gran = table_dtype_granule((enum table_dtype)cfg->dtype);
	if (esize == 0)
		return json_util_fail(err, errlen, "dtype: %d is not fp32 (1), fp16 (2), bf16 (3), "
				      "mxint8 (4), mxfp8 (5) or mxfp4 (6)", (int)cfg->dtype);
	if (cfg->elements == 0)
		return json_util_fail(err, errlen, "elements: must be at least 1");
	if (cfg->chunk_elements % gran != 0 || cfg->elements % gran != 0)
		return json_util_fail(err, errlen, "elements %llu, chunk_elements %u: %s chunks are "
				      "whole blocks of %u", (unsigned long long)cfg->elements,
				      cfg->chunk_elements, gr_dtype_name(cfg->dtype), gran);
	if (cfg->chunk_elements == 0 || cfg->chunk_elements / gran * esize > TABLE_CHUNK_BYTES_MAX)
		return json_util_fail(err, errlen,
				      "chunk_elements: %u elements of %s must be 1 to %u bytes",
				      cfg->chunk_elements, gr_dtype_name(cfg->dtype),
				      TABLE_CHUNK_BYTES_MAX);
	n_chunks = wire_chunk_total(cfg->elements, cfg->chunk_elements);
	if (n_chunks < 0)
		return json_util_fail(err, errlen, "elements: %llu elements make 2^32 chunks or more",
				      (unsigned long long)cfg->elements);
	if (!id_ok(cfg->worker_id) || !id_ok(cfg->gateway_id) ||
	    cfg->worker_id == cfg->gateway_id)
		return json_util_fail(err, errlen,
				      "worker_id %u, gateway_id %u: ids are 1 to %u and differ",
				      cfg->worker_id, cfg->gateway_id, WIRE_NODE_ID_MAX);
	if (!table_ipv4_unicast(cfg->gateway_ipv4))
		return json_util_fail(err, errlen, "gateway_ipv4: not a unicast address");
	if (cfg->worker_ipv4 != 0 && !table_ipv4_unicast(cfg->worker_ipv4))
		return json_util_fail(err, errlen, "worker_ipv4: not a unicast address (0: any)");
	if (wire_port_range_check(cfg->gateway_base_port, cfg->gateway_ports) < 0)
		return json_util_fail(err, errlen, "gateway ports: %u from %u leave 1 .. 65535",
				      cfg->gateway_ports, cfg->gateway_base_port);
	if (cfg->worker_port == 0)
		return json_util_fail(err, errlen, "worker_port: must be 1 to 65535");
	if (cfg->lan_dtype != 0 && cfg->lan_dtype != cfg->dtype) {
		if ((cfg->lan_dtype != GR_DTYPE_FP32 && cfg->lan_dtype != GR_DTYPE_BF16) ||
		    !wire_dtype_is_mx((enum wire_dtype)cfg->dtype))
			return json_util_fail(err, errlen, "lan_dtype: %d, must be 0, the dtype, or "
					      "fp32 (1) or bf16 (3) for an MX dtype",
					      (int)cfg->lan_dtype);
		if ((size_t)cfg->chunk_elements * gr_dtype_size(cfg->lan_dtype) >
		    TABLE_CHUNK_BYTES_MAX)
			return json_util_fail(err, errlen, "chunk_elements: %u elements of the "
					      "lan_dtype %s must be at most %u bytes",
					      cfg->chunk_elements, gr_dtype_name(cfg->lan_dtype),
					      TABLE_CHUNK_BYTES_MAX);
	}
	if (cfg->cset_blocks > GR_CSET_BLOCKS_MAX)
		return json_util_fail(err, errlen, "cset_blocks: %u, must be 0 to %u",
				      cfg->cset_blocks, GR_CSET_BLOCKS_MAX);
	if (cfg->cset_blocks != 0 && cfg->worker_id >= 256u * cfg->cset_blocks)
		return json_util_fail(err, errlen, "worker_id: %u is outside a contributor set of "
				      "%u blocks (ids below %u)", cfg->worker_id, cfg->cset_blocks,
				      256u * cfg->cset_blocks);
	if (cfg->n_origins > GR_ORIGINS_MAX)
		return json_util_fail(err, errlen, "n_origins: %u, at most %u", cfg->n_origins,
				      GR_ORIGINS_MAX);
	for (unsigned int i = 0; i < cfg->n_origins; i++) {
		if (!id_ok(cfg->origins[i]) || cfg->origins[i] == cfg->worker_id ||
		    cfg->origins[i] == cfg->gateway_id)
			return json_util_fail(err, errlen, "origins[%u]: %u is not another worker",
					      i, cfg->origins[i]);
		for (unsigned int j = 0; j < i; j++)
			if (cfg->origins[j] == cfg->origins[i])
				return json_util_fail(err, errlen, "origins[%u]: %u also in "
						      "origins[%u]", i, cfg->origins[i], j);
	}
	if (cfg->mcast_rounds_ahead > GR_MCAST_AHEAD_MAX)
		return json_util_fail(err, errlen, "mcast_rounds_ahead: %u, at most %u (0: %u)",
				      cfg->mcast_rounds_ahead, GR_MCAST_AHEAD_MAX,
				      GR_MCAST_AHEAD_DEFAULT);
	if (!(isfinite(cfg->mcast_rate_gbps) && cfg->mcast_rate_gbps >= 0))
		return json_util_fail(err, errlen, "mcast_rate_gbps: must be a finite number >= 0");
	/* A multicast-only job (selmcast) has no tree. */
	if (cfg->n_trees == 0 && (cfg->mcast_send || cfg->n_origins > 0))
		return 0;
	if (cfg->n_trees == 0 || cfg->n_trees > GR_TREES_MAX)
		return json_util_fail(err, errlen, "n_trees: %u, must be 1 to %u", cfg->n_trees,
				      GR_TREES_MAX);
	for (unsigned int i = 0; i < cfg->n_trees; i++) {
		if (cfg->trees[i].chunk_count == 0)
			return json_util_fail(err, errlen, "trees[%u].chunk_count: must be at least 1",
					      i);
		if (cfg->trees[i].window != 0 && cfg->trees[i].slots != 0 &&
		    cfg->trees[i].window > cfg->trees[i].slots)
			return json_util_fail(err, errlen, "trees[%u].window: %u is more than its %u "
					      "slots", i, cfg->trees[i].window, cfg->trees[i].slots);
		for (unsigned int j = 0; j < i; j++)
			if (cfg->trees[j].id == cfg->trees[i].id)
				return json_util_fail(err, errlen, "trees[%u].id: %u also in trees[%u]",
						      i, cfg->trees[i].id, j);
	}
	if (check_tree_gateways(cfg, err, errlen) != 0)
		return -EINVAL;
	memcpy(sorted, cfg->trees, cfg->n_trees * sizeof(sorted[0]));
	qsort(sorted, cfg->n_trees, sizeof(sorted[0]), cmp_tree_first);
	for (unsigned int i = 0; i < cfg->n_trees; i++) {
		if (sorted[i].chunk_first != end)
			return json_util_fail(err, errlen,
					      "trees: tree %u starts at chunk %u where chunk %llu "
					      "was expected (the ranges must partition the %lld "
					      "chunks)", sorted[i].id, sorted[i].chunk_first,
					      (unsigned long long)end, (long long)n_chunks);
		end += sorted[i].chunk_count;
	}
	if (end != (uint64_t)n_chunks)
		return json_util_fail(err, errlen,
				      "trees: the ranges cover %llu chunks, the tensor has %lld",
				      (unsigned long long)end, (long long)n_chunks);
	return 0;
}

static int
config_from(struct gr_config *cfg, struct table *tb, const char *src, uint16_t worker_id,
	    char *err, size_t errlen)
{
	const struct table_tree *t0;
	const struct table_worker *me;
	int k = -1;
	int rc;

	if (tb == NULL)
		return errno == ENOMEM ? -ENOMEM : (errno == ENOENT ? -ENOENT : -EINVAL);
	if (cfg == NULL) {
		rc = json_util_fail(err, errlen, "%s: no configuration to fill", src);
		goto out;
	}
	if (tb->n_trees == 0 && tb->n_streams == 0) {
		rc = json_util_fail(err, errlen, "%s: gateway %u carries no tree of job %u at epoch "
				    "%u: it has no local workers", src, tb->gw.id, tb->job,
				    tb->epoch);
		goto out;
	}
	/* This worker's entry: among the trees' workers, or in a multicast-only job among
	 * the streams' deliver lists (every worker of a site is in its site's stream). */
	me = NULL;
	if (tb->n_trees > 0) {
		t0 = &tb->trees[0];
		for (int i = 0; i < t0->n_workers; i++)
			if (t0->workers[i].id == worker_id)
				k = i;
		if (k >= 0)
			me = &t0->workers[k];
	}
	for (int i = 0; me == NULL && i < tb->n_streams; i++)
		for (int w = 0; w < tb->streams[i].n_deliver; w++)
			if (tb->streams[i].deliver[w].id == worker_id)
				me = &tb->streams[i].deliver[w];
	if (me == NULL) {
		rc = json_util_fail(err, errlen, "%s: worker %u is not a local worker of gateway %u",
				    src, worker_id, tb->gw.id);
		goto out;
	}
	memset(cfg, 0, sizeof(*cfg));
	cfg->job = tb->job;
	cfg->epoch = tb->epoch;
	cfg->dtype = (enum gr_dtype)tb->dtype;
	cfg->lan_dtype = (enum gr_dtype)tb->lan_dtype;
	cfg->elements = tb->elements;
	cfg->chunk_elements = tb->chunk_elements;
	cfg->worker_id = worker_id;
	cfg->worker_ipv4 = me->ipv4;
	cfg->worker_port = me->port;
	cfg->gateway_id = tb->gw.id;
	cfg->gateway_ipv4 = tb->gw.ipv4;
	cfg->gateway_base_port = tb->gw.base_port;
	cfg->gateway_ports = tb->gw.ports;
	cfg->n_trees = (unsigned int)tb->n_trees;
	cfg->cset_blocks = tb->cset_blocks;
	for (int i = 0; i < tb->n_trees; i++) {
		cfg->trees[i].id = tb->trees[i].id;
		cfg->trees[i].chunk_first = tb->trees[i].chunk_first;
		cfg->trees[i].chunk_count = tb->trees[i].chunk_count;
		cfg->trees[i].slots = tb->trees[i].slots;
		cfg->trees[i].window = tb->trees[i].window;
	}
	/* The site's other gateways: their trees too, each with its gateway (the table's rule
	 * keeps them within GR_TREES_MAX together). */
	for (int s = 0; s < tb->n_shards; s++) {
		const struct table_shard *sh = &tb->shards[s];

		for (int k = 0; k < sh->n_trees && cfg->n_trees < GR_TREES_MAX; k++) {
			struct gr_tree *t = &cfg->trees[cfg->n_trees];

			t->id = sh->trees[k].id;
			t->chunk_first = sh->trees[k].chunk_first;
			t->chunk_count = sh->trees[k].chunk_count;
			t->slots = sh->trees[k].slots;
			t->window = sh->trees[k].window;
			cfg->tree_gateways[cfg->n_trees++] = (struct gr_gateway){
				.id = sh->gw.id, .ipv4 = sh->gw.ipv4, .base_port = sh->gw.base_port,
				.ports = sh->gw.ports };
		}
	}
	for (int i = 0; tb->n_shards > 0 && i < tb->n_trees; i++)
		cfg->tree_gateways[i] = (struct gr_gateway){ .id = tb->gw.id, .ipv4 = tb->gw.ipv4,
							     .base_port = tb->gw.base_port,
							     .ports = tb->gw.ports };
	for (int i = 0; i < tb->n_streams; i++) {
		const struct table_stream *ts = &tb->streams[i];
		bool mine = false, origin = false;

		for (int w = 0; w < ts->n_deliver; w++)
			mine = mine || ts->deliver[w].id == worker_id;
		for (int o = 0; o < ts->n_origins; o++)
			origin = origin || ts->origins[o] == worker_id;
		if (!ts->has_from && origin) {
			cfg->mcast_send = true;
			cfg->mcast_stream = ts->id;
			cfg->mcast_rate_gbps = ts->rate_gbps / ts->n_origins;
		}
		for (int o = 0; mine && o < ts->n_origins; o++) {
			unsigned int j = 0;

			if (ts->origins[o] == worker_id)
				continue;
			while (j < cfg->n_origins && cfg->origins[j] != ts->origins[o])
				j++;
			if (j < cfg->n_origins)
				continue;
			if (cfg->n_origins == GR_ORIGINS_MAX) {
				rc = json_util_fail(err, errlen, "%s: worker %u receives more than %d "
						    "origins", src, worker_id, GR_ORIGINS_MAX);
				goto out;
			}
			cfg->origin_streams[cfg->n_origins] = ts->id;
			cfg->origins[cfg->n_origins++] = ts->origins[o];
		}
	}
	rc = gr_config_check(cfg, err, errlen);
out:
	table_free(tb);
	return rc;
}

int
gr_config_from_table(struct gr_config *cfg, const char *path, uint16_t worker_id, char *err,
		     size_t errlen)
{
	char msg[TABLE_ERR_MAX];
	struct table *tb;

	if (path == NULL)
		return json_util_fail(err, errlen, "no table file");
	tb = table_load(path, msg, sizeof(msg));
	if (tb == NULL)
		(void)json_util_fail(err, errlen, "%s", msg);
	return config_from(cfg, tb, path, worker_id, err, errlen);
}

int
gr_config_from_table_string(struct gr_config *cfg, const char *json, uint16_t worker_id,
			    char *err, size_t errlen)
{
	char msg[TABLE_ERR_MAX];
	struct table *tb;

	if (json == NULL)
		return json_util_fail(err, errlen, "no table");
	tb = table_parse(json, NULL, msg, sizeof(msg));
	if (tb == NULL)
		(void)json_util_fail(err, errlen, "%s", msg);
	return config_from(cfg, tb, "<string>", worker_id, err, errlen);
}

/* --- Client ------------------------------------------------------------------------------- */

static int
open_socket(const struct gr_config *cfg, int *out, char *err, size_t errlen)
{
	struct sockaddr_in a = {
		.sin_family = AF_INET,
		.sin_port = htons(cfg->worker_port),
		.sin_addr.s_addr = htonl(cfg->worker_ipv4),
	};
	int buf = SOCK_BUF_BYTES, pmtu = IP_PMTUDISC_DO;
	char ip[16];
	int fd, rc;

	fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		rc = -errno;
		(void)json_util_fail(err, errlen, "socket: %s", strerror(-rc));
		return rc;
	}
	/* Larger buffers absorb a window of results; the kernel caps what it grants. DF on
	 * every packet: georeduce packets are never fragmented (PROTOCOL.md section 2). */
	(void)setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &buf, sizeof(buf));
	(void)setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &buf, sizeof(buf));
	if (setsockopt(fd, IPPROTO_IP, IP_MTU_DISCOVER, &pmtu, sizeof(pmtu)) < 0 ||
	    bind(fd, (const struct sockaddr *)&a, sizeof(a)) < 0) {
		rc = -errno;
		(void)json_util_fail(err, errlen, "bind %s:%u: %s",
				     table_ipv4_format(cfg->worker_ipv4, ip), cfg->worker_port,
				     strerror(-rc));
		close(fd);
		return rc;
	}
	*out = fd;
	return 0;
}

/* What a configuration needs, built by prepare() before anything of the client changes,
 * then moved into it by install(). */
struct prepared {
	struct gr_config cfg;           /* trees sorted by chunk_first */
	struct gr_gateway tgw[GR_TREES_MAX]; /* struct gr_client */
	unsigned int n_gws;
	struct gr_gateway gws[GR_GATEWAYS_MAX];
	struct chunk *ch;               /* n_chunks */
	struct rack *rack;              /* struct gr_client */
	uint32_t rack_off[GR_TREES_MAX];
	uint32_t n_chunks;
	int fd;
	/* gr_mcast_recv()'s window (struct gr_client); all NULL without origins. */
	uint8_t *mbits;
	size_t mbits_stride;
	uint32_t *mgot;
	struct mslot *mslot;
	uint8_t *mdata;
	size_t mtensor;
	uint32_t mahead;
	struct mmiss *mmiss;
	struct morigin *morig;
	uint8_t *mxbuf;                 /* MX jobs: the encoded tensor; NULL otherwise */
	struct kept *kept;              /* results kept; NULL: none, or (keep_old) the */
	uint8_t *kbuf;                  /* client's own go on */
	size_t kstride;
	bool keep_old;
};

static void
prepared_free(struct prepared *p)
{
	free(p->ch);
	free(p->rack);
	free(p->mbits);
	free(p->mgot);
	free(p->mslot);
	free(p->mdata);
	free(p->mmiss);
	free(p->morig);
	free(p->mxbuf);
	free(p->kept);
	free(p->kbuf);
	p->kept = NULL;
	p->kbuf = NULL;
	p->mmiss = NULL;
	p->morig = NULL;
	p->ch = NULL;
	p->rack = NULL;
	p->mbits = NULL;
	p->mgot = NULL;
	p->mslot = NULL;
	p->mdata = NULL;
	p->mxbuf = NULL;
}

/* Allocate gr_mcast_recv()'s bitmaps, counts and window into p (cfg has origins). */
static int
prepare_mcast(const struct gr_config *cfg, struct prepared *p, char *err, size_t errlen)
{
	uint32_t ahead = cfg->mcast_rounds_ahead ? cfg->mcast_rounds_ahead : GR_MCAST_AHEAD_DEFAULT;
	size_t sets = (size_t)(1 + ahead) * cfg->n_origins, tensor, data;

	if (__builtin_mul_overflow(cfg->elements, gr_dtype_size(cfg->dtype), &tensor) ||
	    __builtin_mul_overflow(tensor, (size_t)ahead * cfg->n_origins, &data)) {
		(void)json_util_fail(err, errlen, "%u rounds ahead of %u origins of %llu "
				     "elements: more bytes than memory has", ahead, cfg->n_origins,
				     (unsigned long long)cfg->elements);
		return -ENOMEM;
	}
	p->mahead = ahead;
	p->mtensor = tensor;
	p->mbits_stride = ((size_t)p->n_chunks + 7) / 8;
	p->mbits = calloc(sets, p->mbits_stride);
	p->mgot = calloc(sets, sizeof(*p->mgot));
	p->mslot = calloc(ahead, sizeof(*p->mslot));
	p->mdata = malloc(data);
	p->mmiss = calloc((size_t)cfg->n_origins * p->n_chunks, sizeof(*p->mmiss));
	p->morig = calloc(cfg->n_origins, sizeof(*p->morig));
	if (p->mbits == NULL || p->mgot == NULL || p->mslot == NULL || p->mdata == NULL ||
	    p->mmiss == NULL || p->morig == NULL) {
		(void)json_util_fail(err, errlen, "out of memory for %u origins of %u chunks and "
				     "%zu bytes for %u rounds ahead (mcast_rounds_ahead)",
				     cfg->n_origins, p->n_chunks, data, ahead);
		return -ENOMEM;
	}
	return 0;
}

/* The CONTRIBs' dtype of a configuration. */
static enum wire_dtype
lan_of(const struct gr_config *cfg)
{
	return (enum wire_dtype)(cfg->lan_dtype != 0 ? cfg->lan_dtype : cfg->dtype);
}

/* MX jobs: bytes of a chunk encoded in mxbuf, in the LAN dtype; 0 for fp32, sent from
 * the caller's buffer. */
static size_t
enc_bytes(const struct gr_config *cfg)
{
	return lan_of(cfg) == WIRE_DTYPE_FP32 ? 0 : wire_payload_bytes(lan_of(cfg),
								       cfg->chunk_elements);
}

/* MX jobs: behind the encoded tensor in mxbuf, room for one chunk of fp32 (the padded
 * last chunk of a tensor shorter than the job's), aligned. */
static size_t
mx_tail_off(size_t chunk_wire, uint32_t n_chunks)
{
	return (chunk_wire * n_chunks + 15) & ~(size_t)15;
}

static float *
mx_tail(const struct gr_client *c)
{
	return (float *)(void *)(c->mxbuf + mx_tail_off(c->chunk_wire, c->n_chunks));
}

/* A tree with its gateway, for sort_trees(). */
struct tree_gw {
	struct gr_tree t;
	struct gr_gateway g;
};

static int
cmp_tree_gw_first(const void *a, const void *b)
{
	return cmp_tree_first(&((const struct tree_gw *)a)->t, &((const struct tree_gw *)b)->t);
}

/* Sort cfg's trees by their first chunk, each keeping its entry of tree_gateways. */
static void
sort_trees(struct gr_config *cfg)
{
	struct tree_gw tg[GR_TREES_MAX];

	for (unsigned int i = 0; i < cfg->n_trees; i++)
		tg[i] = (struct tree_gw){ cfg->trees[i], cfg->tree_gateways[i] };
	qsort(tg, cfg->n_trees, sizeof(tg[0]), cmp_tree_gw_first);
	for (unsigned int i = 0; i < cfg->n_trees; i++) {
		cfg->trees[i] = tg[i].t;
		cfg->tree_gateways[i] = tg[i].g;
	}
}

/* Whether the results old keeps are of the chunks cfg has: same tensor, chunking, dtype
 * and contributor sets (a re-plan that moved trees and gateways, not the chunks). */
static bool
keep_fits(const struct gr_client *old, const struct gr_config *cfg)
{
	return old != NULL && old->kept != NULL && !cfg->forget_results &&
	       old->cfg.elements == cfg->elements &&
	       old->cfg.chunk_elements == cfg->chunk_elements && old->cfg.dtype == cfg->dtype &&
	       old->cfg.cset_blocks == cfg->cset_blocks;
}

/* The results kept that cfg needs into p: old's go on if they fit, else new ones, none
 * with forget_results. */
static int
prepare_keep(const struct gr_config *cfg, const struct gr_client *old, struct prepared *p,
	     char *err, size_t errlen)
{
	p->kstride = (size_t)cfg->cset_blocks * WIRE_CSET_BLOCK +
		     wire_payload_bytes((enum wire_dtype)cfg->dtype, cfg->chunk_elements);
	p->keep_old = keep_fits(old, cfg);
	if (cfg->forget_results || p->keep_old)
		return 0;
	p->kept = calloc(p->n_chunks, sizeof(*p->kept));
	p->kbuf = malloc(p->n_chunks * p->kstride);
	if (p->kept == NULL || p->kbuf == NULL) {
		(void)json_util_fail(err, errlen,
				     "out of memory for a copy of %u results (%zu bytes; "
				     "forget_results saves it)",
				     p->n_chunks, p->n_chunks * p->kstride);
		return -ENOMEM;
	}
	return 0;
}

/* Check cfg and build what it needs into p: a sorted copy, the chunk records, the
 * multicast receive bitmaps and window if it has origins, the results kept (old's, when
 * they fit: a reconfiguration) and (if fd < 0) the socket. fd is the socket to keep, or
 * -1. Nothing of the client changes here. */
static int
prepare(const struct gr_config *cfg, const struct gr_client *old, int fd, struct prepared *p,
	char *err, size_t errlen)
{
	int rc = gr_config_check(cfg, err, errlen);

	memset(p, 0, sizeof(*p));
	p->fd = fd;
	if (rc < 0)
		return rc;
	p->cfg = *cfg;
	sort_trees(&p->cfg);
	for (unsigned int i = 0; i < p->cfg.n_trees; i++)
		p->tgw[i] = tree_gateway(&p->cfg, i);
	p->n_gws = distinct_gateways(&p->cfg, p->gws, GR_GATEWAYS_MAX); /* checked */
	p->n_chunks = (uint32_t)wire_chunk_total(cfg->elements, cfg->chunk_elements);
	p->ch = calloc(p->n_chunks, sizeof(*p->ch));
	if (p->ch == NULL) {
		(void)json_util_fail(err, errlen, "out of memory for %u chunk records",
				     p->n_chunks);
		return -ENOMEM;
	}
	uint32_t n_rack = 0;

	for (unsigned int i = 0; i < p->cfg.n_trees; i++) {
		p->rack_off[i] = n_rack;
		n_rack += p->tgw[i].ports;
	}
	p->rack = calloc(n_rack, sizeof(*p->rack));
	if (p->rack == NULL) {
		prepared_free(p);
		(void)json_util_fail(err, errlen, "out of memory for %u loss references",
				     n_rack);
		return -ENOMEM;
	}
	if (cfg->n_origins > 0) {
		rc = prepare_mcast(cfg, p, err, errlen);
		if (rc < 0) {
			prepared_free(p);
			return rc;
		}
	}
	if (wire_dtype_is_mx((enum wire_dtype)cfg->dtype)) {
		p->mxbuf = malloc(mx_tail_off(enc_bytes(cfg), p->n_chunks) +
				  (size_t)cfg->chunk_elements * sizeof(float));
		if (p->mxbuf == NULL) {
			(void)json_util_fail(err, errlen, "out of memory for %u encoded chunks",
					     p->n_chunks);
			prepared_free(p);
			return -ENOMEM;
		}
	}
	rc = prepare_keep(cfg, old, p, err, errlen);
	if (rc < 0) {
		prepared_free(p);
		return rc;
	}
	if (p->fd < 0) {
		rc = open_socket(cfg, &p->fd, err, errlen);
		if (rc < 0) {
			prepared_free(p);
			return rc;
		}
	}
	return 0;
}

/* Replace the client's configuration by p, which it takes over; what the old one kept
 * for multicast rounds ahead is discarded. */
static void
install(struct gr_client *c, struct prepared *p)
{
	for (uint32_t s = 0; s < c->mahead; s++)
		c->st.mcast_skipped += c->mslot[s].held;
	free(c->ch);
	free(c->rack);
	free(c->mbits);
	free(c->mgot);
	free(c->mslot);
	free(c->mdata);
	free(c->mmiss);
	free(c->morig);
	free(c->mxbuf);
	if (!p->keep_old) {
		free(c->kept);
		free(c->kbuf);
		c->kept = p->kept;
		c->kbuf = p->kbuf;
		c->kstride = p->kstride;
	}
	if (c->fd >= 0 && c->fd != p->fd)
		close(c->fd);
	c->cfg = p->cfg;
	memcpy(c->tgw, p->tgw, sizeof(c->tgw));
	memcpy(c->gws, p->gws, sizeof(c->gws));
	c->n_gws = p->n_gws;
	c->cset_len = p->cfg.cset_blocks * WIRE_CSET_BLOCK;
	memset(c->cset, 0, sizeof(c->cset));
	if (c->cset_len != 0)
		(void)wire_cset_add(c->cset, p->cfg.cset_blocks, p->cfg.worker_id); /* checked */
	c->ch = p->ch;
	c->rack = p->rack;
	memcpy(c->rack_off, p->rack_off, sizeof(c->rack_off));
	c->n_chunks = p->n_chunks;
	c->fd = p->fd;
	c->mbits = p->mbits;
	c->mbits_stride = p->mbits_stride;
	c->mgot = p->mgot;
	c->mslot = p->mslot;
	c->mdata = p->mdata;
	c->mtensor = p->mtensor;
	c->mahead = p->mahead;
	c->mmiss = p->mmiss;
	c->morig = p->morig;
	c->mxbuf = p->mxbuf;
	c->chunk_wire = wire_dtype_is_mx((enum wire_dtype)c->cfg.dtype) ? enc_bytes(&c->cfg) : 0;
	c->lan = lan_of(&c->cfg);
	c->resumable = false;
}

struct gr_client *
gr_client_create(const struct gr_config *cfg, char *err, size_t errlen)
{
	struct gr_client *c = calloc(1, sizeof(*c));
	struct prepared p;
	int rc;

	if (c == NULL || (c->rxbuf = malloc((size_t)RX_BATCH * RX_LEN)) == NULL) {
		(void)json_util_fail(err, errlen, "out of memory for a client");
		rc = -ENOMEM;
		goto fail;
	}
	rc = prepare(cfg, NULL, -1, &p, err, errlen);
	if (rc < 0)
		goto fail;
	c->fd = -1;
	c->k = sum_kernels_select(UINT_MAX);    /* bit-identical whichever the CPU has */
	install(c, &p);
	for (unsigned int i = 0; i < RX_BATCH; i++) {
		c->rxiov[i].iov_base = c->rxbuf + (size_t)i * RX_LEN;
		c->rxiov[i].iov_len = RX_LEN;
		c->rxm[i].msg_hdr.msg_iov = &c->rxiov[i];
		c->rxm[i].msg_hdr.msg_iovlen = 1;
		c->rxm[i].msg_hdr.msg_name = &c->rxaddr[i];
	}
	return c;
fail:
	if (c != NULL)
		free(c->rxbuf);
	free(c);
	errno = -rc;
	return NULL;
}

int
gr_client_reconfigure(struct gr_client *c, const struct gr_config *cfg, char *err,
		      size_t errlen)
{
	struct prepared p;
	int fd, rc;

	if (c == NULL || cfg == NULL)
		return json_util_fail(err, errlen, "no client or configuration");
	if (cfg->job != c->cfg.job || cfg->worker_id != c->cfg.worker_id)
		return json_util_fail(err, errlen,
				      "job %u, worker %u: the client is worker %u of job %u",
				      cfg->job, cfg->worker_id, c->cfg.worker_id, c->cfg.job);
	if (!wire_round_before(c->cfg.epoch, cfg->epoch))
		return json_util_fail(err, errlen, "epoch %u: not after the current epoch %u",
				      cfg->epoch, c->cfg.epoch);
	fd = cfg->worker_ipv4 == c->cfg.worker_ipv4 && cfg->worker_port == c->cfg.worker_port
		     ? c->fd
		     : -1;
	rc = prepare(cfg, c, fd, &p, err, errlen);
	if (rc < 0)
		return rc;
	/* Other gateways, other paths: the estimates start again. */
	bool moved = cfg->gateway_ipv4 != c->cfg.gateway_ipv4 || p.n_gws != c->n_gws;

	for (unsigned int i = 0; i < p.n_gws && !moved; i++)
		moved = p.gws[i].ipv4 != c->gws[i].ipv4;
	if (moved) {
		memset(&c->res, 0, sizeof(c->res));
		memset(&c->path, 0, sizeof(c->path));
		memset(&c->mrep, 0, sizeof(c->mrep));
		c->mgap_us = 0;
	}
	install(c, &p);
	return 0;
}

void
gr_client_free(struct gr_client *c)
{
	if (c == NULL)
		return;
	if (c->fd >= 0)
		close(c->fd);
	free(c->ch);
	free(c->rack);
	free(c->rxbuf);
	free(c->mbits);
	free(c->mgot);
	free(c->mslot);
	free(c->mdata);
	free(c->mmiss);
	free(c->morig);
	free(c->mxbuf);
	free(c->kept);
	free(c->kbuf);
	free(c);
}

const struct gr_config *
gr_client_config(const struct gr_client *c)
{
	return c != NULL ? &c->cfg : NULL;
}

const char *
gr_client_error(const struct gr_client *c)
{
	return c != NULL ? c->err : "no client";
}

/* --- Timers ------------------------------------------------------------------------------- */

static void
rtt_sample(struct rtt *r, int64_t us)
{
	if (!r->valid) {
		r->srtt = us;
		r->rttvar = us / 2;
		r->valid = true;
		return;
	}
	r->rttvar = (3 * r->rttvar + (r->srtt > us ? r->srtt - us : us - r->srtt)) / 4;
	r->srtt = (7 * r->srtt + us) / 8;
}

static uint64_t
rtt_rto(const struct rtt *r)
{
	int64_t v = 4 * r->rttvar;

	return (uint64_t)(r->srtt + (v > RTT_GRANULARITY_US ? v : RTT_GRANULARITY_US));
}

/* T1's base: the result estimate (before any, the initial value), at least the path's RTO,
 * within [min, max]. T2 uses the same base. */
static uint64_t
t1_base(const struct gr_client *c, uint64_t min, uint64_t max, uint64_t initial)
{
	uint64_t t = c->res.valid ? rtt_rto(&c->res) : initial;

	if (c->path.valid && rtt_rto(&c->path) > t)
		t = rtt_rto(&c->path);
	return t < min ? min : (t > max ? max : t);
}

static uint64_t
timer_us(const struct call *k, unsigned int backoff)
{
	uint64_t t = t1_base(k->c, k->rto_min, k->rto_max, k->rto_initial);

	for (unsigned int i = 0; i < backoff && t < k->rto_max; i++)
		t *= 2;
	return t > k->rto_max ? k->rto_max : t;
}

/* --- Packets ------------------------------------------------------------------------------ */

/* Index in the sorted trees of the tree carrying chunk (which exists). */
static unsigned int
tree_of(const struct gr_client *c, uint32_t chunk)
{
	unsigned int lo = 0, hi = c->cfg.n_trees - 1;

	while (lo < hi) {
		unsigned int mid = (lo + hi + 1) / 2;

		if (c->cfg.trees[mid].chunk_first <= chunk)
			lo = mid;
		else
			hi = mid - 1;
	}
	return lo;
}

/* The loss reference of chunk's gateway port in tree t (sorted index). */
static inline struct rack *
rack_of(const struct gr_client *c, unsigned int t, uint32_t chunk)
{
	return &c->rack[c->rack_off[t] + chunk % c->tgw[t].ports];
}

static void
tx_flush(struct call *k)
{
	struct gr_client *c = k->c;
	unsigned int i = 0;

	while (i < c->tx_n) {
		int r = sendmmsg(c->fd, c->txm + i, c->tx_n - i, 0);

		if (r > 0) {
			i += (unsigned int)r;
			continue;
		}
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0 && errno == EMSGSIZE && k->fatal == 0) {
			k->fatal = -EMSGSIZE;
			(void)json_util_fail(c->err, sizeof(c->err),
					     "a packet of %zu bytes exceeds the path MTU to the "
					     "gateway",
					     c->txiov[i][0].iov_len + c->txiov[i][1].iov_len +
					     c->txiov[i][2].iov_len);
		}
		c->st.send_errors++;    /* this packet is lost; the timers recover it */
		i++;
	}
	c->tx_n = 0;
}

/* Zeros that pad the last chunk of a tensor shorter than the job's. */
static const uint8_t zeros[TABLE_CHUNK_BYTES_MAX];

/* Queue one packet: header p (encoded here), the contributor set `set` if p has one
 * (a CONTRIB: this worker's own; a kept RESULT's), then plen payload bytes and pad zeros,
 * to ipv4:port. */
static void
tx_add_set(struct call *k, const struct wire_pkt *p, const uint8_t *set, const void *payload,
	   size_t plen, size_t pad, uint32_t ipv4, uint16_t port)
{
	struct gr_client *c = k->c;
	size_t hlen = WIRE_HDR_LEN + (size_t)p->cset_blocks * WIRE_CSET_BLOCK;
	unsigned int i;

	if (c->tx_n == TX_BATCH)
		tx_flush(k);
	i = c->tx_n;
	if (wire_hdr_encode(c->txhdr[i], hlen + plen + pad, p, NULL) < 0) {
		c->st.send_errors++;    /* not reached: every field comes from a checked config */
		return;
	}
	memcpy(c->txhdr[i] + WIRE_HDR_LEN, set, hlen - WIRE_HDR_LEN);
	c->txaddr[i] = (struct sockaddr_in){
		.sin_family = AF_INET,
		.sin_port = htons(port),
		.sin_addr.s_addr = htonl(ipv4),
	};
	c->txiov[i][0] = (struct iovec){ .iov_base = c->txhdr[i], .iov_len = hlen };
	c->txiov[i][1] = (struct iovec){ .iov_base = (void *)(uintptr_t)payload, .iov_len = plen };
	c->txiov[i][2] = (struct iovec){ .iov_base = (void *)(uintptr_t)zeros, .iov_len = pad };
	c->txm[i].msg_hdr = (struct msghdr){
		.msg_name = &c->txaddr[i],
		.msg_namelen = sizeof(c->txaddr[i]),
		.msg_iov = c->txiov[i],
		.msg_iovlen = pad != 0 ? 3 : plen != 0 ? 2 : 1,
	};
	c->tx_n++;
}

/* tx_add_set() with this worker's own contributor set. */
static void
tx_add(struct call *k, const struct wire_pkt *p, const void *payload, size_t plen, size_t pad,
       uint32_t ipv4, uint16_t port)
{
	tx_add_set(k, p, k->c->cset, payload, plen, pad, ipv4, port);
}

/* The header fields every packet of this worker about chunk carries. */
static struct wire_pkt
pkt_base(const struct call *k, enum wire_type type, uint32_t chunk, uint64_t now)
{
	const struct gr_client *c = k->c;

	return (struct wire_pkt){
		.type = type,
		.job = c->cfg.job,
		.epoch = c->cfg.epoch,
		.tree = c->cfg.trees[tree_of(c, chunk)].id,
		.sender = c->cfg.worker_id,
		.origin = c->cfg.worker_id,
		.round = k->round,
		.chunk = chunk,
		.tsval = (uint32_t)now,
	};
}

/* Where job chunk `chunk` (one of the call's) is in the caller's buffer. */
static uint8_t *
chunk_data(const struct call *k, uint32_t chunk)
{
	const struct gr_client *c = k->c;
	unsigned int t = tree_of(c, chunk);
	size_t i = k->tbase[t] + (chunk - c->cfg.trees[t].chunk_first);

	return k->buf + i * c->cfg.chunk_elements * k->esize;
}

static void
send_contrib(struct call *k, uint32_t chunk, bool retx, uint64_t now)
{
	const struct gr_config *cfg = &k->c->cfg;
	struct wire_pkt p = pkt_base(k, WIRE_TYPE_CONTRIB, chunk, now);
	uint32_t n = wire_chunk_len(cfg->elements, cfg->chunk_elements, chunk);
	uint32_t have = chunk == k->last ? k->tail : n;
	const struct gr_gateway *g = &k->c->tgw[tree_of(k->c, chunk)];

	p.flags = retx ? WIRE_F_RETX : 0;
	p.dtype = k->c->lan;
	p.cset_blocks = cfg->cset_blocks;
	p.contrib = 1;
	p.count = (uint16_t)n;
	if (k->c->chunk_wire != 0)      /* MX: the chunk as gr_allreduce() encoded it */
		tx_add(k, &p, k->c->mxbuf + (size_t)chunk * k->c->chunk_wire,
		       wire_payload_bytes(p.dtype, n), 0, g->ipv4,
		       wire_udp_port(g->base_port, g->ports, chunk));
	else
		tx_add(k, &p, chunk_data(k, chunk), have * k->esize, (n - have) * k->esize,
		       g->ipv4, wire_udp_port(g->base_port, g->ports, chunk));
}

static void
send_nack(struct call *k, uint32_t first, uint32_t count, uint64_t now)
{
	const struct gr_gateway *g = &k->c->tgw[tree_of(k->c, first)];
	struct wire_pkt p = pkt_base(k, WIRE_TYPE_NACK_RESULT, first, now);

	p.count = (uint16_t)count;
	tx_add(k, &p, NULL, 0, 0, g->ipv4, wire_udp_port(g->base_port, g->ports, first));
	k->c->st.nacks_sent++;
}

static void
nack_flush(struct call *k, uint64_t now)
{
	if (k->run_len != 0)
		send_nack(k, k->run_first, k->run_len, now);
	k->run_len = 0;
}

/* Ask for chunk's result. A gateway with one port gets coalesced ranges within a tree; with
 * several, each chunk goes alone to the port (and lcore) that owns it. */
static void
nack_add(struct call *k, uint32_t chunk, uint64_t now)
{
	const struct gr_client *c = k->c;

	if (k->run_len != 0 && c->tgw[tree_of(c, chunk)].ports == 1 && k->run_len < NACK_RUN_MAX &&
	    k->run_first + k->run_len == chunk && tree_of(c, chunk) == tree_of(c, k->run_first)) {
		k->run_len++;
		return;
	}
	nack_flush(k, now);
	k->run_first = chunk;
	k->run_len = 1;
}

/* Expire the timers of the chunks in flight (section 10): SENT or RETX resends the CONTRIB
 * with RETX and asks for the result (a gateway that does not answer RETX still answers a
 * NACK_RESULT from the result it retains); HELD asks for the result. */
static void
run_timers(struct call *k, uint64_t now)
{
	struct gr_client *c = k->c;

	k->next_due = UINT64_MAX;
	for (unsigned int t = 0; t < c->cfg.n_trees; t++) {
		/* While results of the tree keep coming, an overdue chunk is most likely
		 * queued behind them (a full window drains at the tree's paced rate), not
		 * lost: its timer restarts from the latest result, as TCP restarts its
		 * retransmission timer on every ACK (RFC 6298, 5.3). */
		uint64_t base = timer_us(k, 0), quiet = k->tprogress[t] + base;

		for (uint32_t i = k->told[t]; i < k->tnext[t]; i++) {
			struct chunk *h = &c->ch[i];

			if (h->state == CH_DONE || h->state == CH_IDLE)
				continue;
			/* ... unless a chunk first sent after it (as last sent) already has
			 * its result, and the time that one took (plus an eighth of the
			 * timeout, for the spread) has passed since this one went: then it,
			 * or its result, was lost, and goes again now (fast retransmit, as
			 * RACK, RFC 8985; also after a resend, and among a round's last
			 * chunks, where none goes long after them); not once the gateway
			 * holds it (HELD: its result may wait for others). */
			const struct rack *rk = rack_of(c, t, i);
			int32_t d = (int32_t)(rk->sent - h->sent_us);
			bool after = d > 0 || (d == 0 && i < rk->chunk);
			int32_t age = (int32_t)((uint32_t)now - h->sent_us);
			int32_t lost_at = (int32_t)(rk->rtt + base / 8);
			bool overtaken = h->state != CH_HELD && after && age >= lost_at;

			if (overtaken)
				h->due_us = now;
			else if (h->due_us <= now && quiet > now && h->backoff == 0)
				h->due_us = quiet;
			if (h->state != CH_HELD && after && !overtaken &&
			    now + (uint64_t)(lost_at - age) < k->next_due)
				k->next_due = now + (uint64_t)(lost_at - age);
			if (h->due_us <= now) {
				/* A timeout doubles the next one; a fast retransmit does not. */
				if (h->backoff < 32 && !overtaken)
					h->backoff++;
				if (h->state != CH_HELD) {
					send_contrib(k, i, true, now);
					c->st.contribs_retx++;
					h->state = CH_RETX;
					h->sent_us = (uint32_t)now;
				}
				nack_add(k, i, now);
				h->due_us = now + timer_us(k, h->backoff);
			}
			if (h->due_us < k->next_due)
				k->next_due = h->due_us;
		}
		nack_flush(k, now); /* a NACK range never spans two trees */
	}
}

static void
divide(uint8_t *p, uint32_t n, enum gr_dtype dt, uint16_t contrib)
{
	for (uint32_t i = 0; i < n; i++) {
		if (dt == GR_DTYPE_FP32 || wire_dtype_is_mx((enum wire_dtype)dt)) {
			float v;

			memcpy(&v, p + 4 * (size_t)i, 4);
			v /= contrib;
			memcpy(p + 4 * (size_t)i, &v, 4);
		} else {
			uint16_t h;

			memcpy(&h, p + 2 * (size_t)i, 2);
			h = dt == GR_DTYPE_FP16 ? gr_f32_to_f16(gr_f16_to_f32(h) / contrib)
						: gr_f32_to_bf16(gr_bf16_to_f32(h) / contrib);
			memcpy(p + 2 * (size_t)i, &h, 2);
		}
	}
}

/* Keep a copy of the RESULT p (frame pkt) as it came, its contributor set and payload. */
static void
keep_result(struct gr_client *c, const struct wire_pkt *p, const uint8_t *pkt)
{
	uint8_t *to = c->kbuf + (size_t)p->chunk * c->kstride;

	memcpy(to, pkt + WIRE_HDR_LEN, c->cset_len);
	memcpy(to + c->cset_len, pkt + p->payload_off, p->payload_len);
	c->kept[p->chunk] = (struct kept){ .round = p->round, .contrib = p->contrib,
					   .origin = p->origin, .valid = true };
}

/* NACK_RESULT from the gateway of the range's tree: after a failover it lacks the RESULTs
 * of a round this worker has moved on from, which its peers still wait for (docs/PROTOCOL.md
 * section 10.1, rule 6). Each chunk of the range whose kept RESULT is of that round goes
 * back as it came, relabelled with the request's epoch and tree and this worker as
 * sender, RETX|ECHO. */
static void
on_nack_result(struct call *k, const struct wire_pkt *p, uint64_t now)
{
	struct gr_client *c = k->c;
	const struct gr_gateway *g = &c->tgw[tree_of(c, p->chunk)];

	for (uint32_t i = p->chunk; i - p->chunk < p->count; i++) {
		const struct kept *e = c->kept != NULL ? &c->kept[i] : NULL;

		if (e == NULL || !e->valid || e->round != p->round) {
			c->st.kept_misses++;
			continue;
		}
		uint32_t n = wire_chunk_len(c->cfg.elements, c->cfg.chunk_elements, i);
		const uint8_t *from = c->kbuf + (size_t)i * c->kstride;
		struct wire_pkt r = {
			.type = WIRE_TYPE_RESULT, .flags = WIRE_F_RETX | WIRE_F_ECHO,
			.dtype = (enum wire_dtype)c->cfg.dtype, .cset_blocks = c->cfg.cset_blocks,
			.job = c->cfg.job, .epoch = c->cfg.epoch, .tree = p->tree,
			.sender = c->cfg.worker_id, .origin = e->origin, .contrib = e->contrib,
			.round = p->round, .chunk = i, .count = (uint16_t)n,
			.tsval = (uint32_t)now, .tsecr = p->tsval,
		};

		tx_add_set(k, &r, from, from + c->cset_len,
			   wire_payload_bytes(r.dtype, n), 0, g->ipv4,
			   wire_udp_port(g->base_port, g->ports, i));
		c->st.kept_answers++;
	}
}

static void
on_result(struct call *k, const struct wire_pkt *p, const uint8_t *pkt, uint64_t now)
{
	struct gr_client *c = k->c;
	struct chunk *h = &c->ch[p->chunk];
	uint32_t n = wire_chunk_len(c->cfg.elements, c->cfg.chunk_elements, p->chunk), have;
	uint8_t *dst;

	if (p->dtype != (enum wire_dtype)c->cfg.dtype || p->cset_blocks != c->cfg.cset_blocks ||
	    p->count != n) {
		c->st.invalid++;
		return;
	}
	if (h->state == CH_DONE) {
		c->st.duplicates++;
		return;
	}
	if (h->state == CH_IDLE) {      /* not sent in this call: an earlier call's answer */
		c->st.stale++;
		return;
	}
	if (h->state == CH_SENT && !(p->flags & WIRE_F_RETX))
		rtt_sample(&c->res, (int32_t)((uint32_t)now - h->sent_us));
	if (p->round != k->round) { /* a later round's: this worker is a straggler */
		c->st.superseded++;
		if (c->st.latest_round == 0 || wire_round_before(c->st.latest_round, p->round))
			c->st.latest_round = p->round;
	}
	if (k->csets != NULL && c->cset_len != 0)
		memcpy(k->csets + (size_t)p->chunk * c->cset_len, pkt + WIRE_HDR_LEN, c->cset_len);
	if (c->kept != NULL)
		keep_result(c, p, pkt);
	dst = chunk_data(k, p->chunk);
	have = p->chunk == k->last ? k->tail : n; /* the rest pads a shorter tensor */
	if (c->mxbuf != NULL) {         /* MX: decoded into the caller's fp32 */
		float *to = have < n ? mx_tail(c) : (float *)(void *)dst;

		c->k->mx_widen[p->dtype - WIRE_DTYPE_MXINT8](to, pkt + p->payload_off,
							     n / WIRE_MX_BLOCK);
		if (have < n)
			memcpy(dst, to, (size_t)have * sizeof(float));
	} else {
		memcpy(dst, pkt + p->payload_off, (size_t)have * k->esize);
	}
	if (k->average)
		divide(dst, have, c->cfg.dtype, p->contrib);
	unsigned int tr = tree_of(c, p->chunk);

	struct rack *rk = rack_of(c, tr, p->chunk);

	if (h->state == CH_SENT && ((int32_t)(h->sent_us - rk->sent) > 0 ||
				    (h->sent_us == rk->sent && p->chunk > rk->chunk))) {
		rk->sent = h->sent_us;
		rk->rtt = (uint32_t)now - h->sent_us;
		rk->chunk = p->chunk;
	}
	h->state = CH_DONE;
	k->tflight[tr]--;
	k->tprogress[tr] = now;
	h->contrib = p->contrib;
	if (k->done == 0 || p->contrib < k->contrib_min)
		k->contrib_min = p->contrib;
	if (k->done == 0 || p->contrib > k->contrib_max)
		k->contrib_max = p->contrib;
	k->done++;
	c->st.results++;
}

/* ACK or NACK_CONTRIB for chunks [p->chunk, p->chunk + p->count) of this worker. */
static void
on_range(struct call *k, const struct wire_pkt *p, uint64_t now)
{
	struct gr_client *c = k->c;
	bool held = false;

	if (p->origin != c->cfg.worker_id) {
		c->st.invalid++;
		return;
	}
	if (p->type == WIRE_TYPE_NACK_CONTRIB)
		c->st.nack_contribs++;
	for (uint32_t i = p->chunk; i - p->chunk < p->count; i++) {
		struct chunk *h = &c->ch[i];

		if (p->type == WIRE_TYPE_NACK_CONTRIB) {
			if (h->state == CH_SENT || h->state == CH_RETX || h->state == CH_HELD) {
				send_contrib(k, i, true, now);
				c->st.contribs_retx++;
			}
			continue;
		}
		if (h->state == CH_SENT || h->state == CH_RETX) {
			h->state = CH_HELD;
			h->backoff = 0;
			h->due_us = now + timer_us(k, 0);
			if (h->due_us < k->next_due)
				k->next_due = h->due_us;
			held = true;
		}
	}
	if (p->type == WIRE_TYPE_ACK) {
		if (held)
			c->st.acks++;
		else
			c->st.duplicates++;
	}
}

/* Is ipv4 with sender id `id` one of the client's gateways? */
static bool
from_gateway(const struct gr_client *c, uint32_t ipv4, uint16_t id)
{
	for (unsigned int i = 0; i < c->n_gws; i++)
		if (c->gws[i].ipv4 == ipv4 && c->gws[i].id == id)
			return true;
	return false;
}

/* PROBE: answer at once to its source (section 5), whatever the job. */
static void
on_probe(struct call *k, const struct wire_pkt *p, uint8_t *pkt, const struct sockaddr_in *from,
	 uint64_t now)
{
	struct gr_client *c = k->c;
	struct wire_pkt r = *p;
	size_t len = WIRE_HDR_LEN + p->payload_len;

	r.type = WIRE_TYPE_PROBE_REPLY;
	r.flags = WIRE_F_ECHO;
	r.sender = p->job == c->cfg.job && p->job != 0 ? c->cfg.worker_id : WIRE_NODE_NONE;
	r.tsval = (uint32_t)now;
	r.tsecr = p->tsval;
	if (wire_hdr_encode(pkt, len, &r, NULL) == 0 &&
	    sendto(c->fd, pkt, len, 0, (const struct sockaddr *)from, sizeof(*from)) ==
		    (ssize_t)len)
		c->st.probes++;
	else
		c->st.send_errors++;
}

static void
rx_one(void *ctx, uint8_t *pkt, size_t len, const struct sockaddr_in *from, uint64_t now)
{
	struct call *k = ctx;
	struct gr_client *c = k->c;
	const struct gr_config *cfg = &c->cfg;
	struct wire_pkt p;
	const struct gr_tree *t;
	const struct gr_gateway *g;
	uint32_t n;

	if (wire_hdr_decode(pkt, len, &p, NULL) < 0) {
		c->st.invalid++;
		return;
	}
	if (p.type == WIRE_TYPE_PROBE) {
		on_probe(k, &p, pkt, from, now);
		return;
	}
	if (!from_gateway(c, ntohl(from->sin_addr.s_addr), p.sender) || p.job != cfg->job ||
	    (p.type != WIRE_TYPE_RESULT && p.type != WIRE_TYPE_ACK &&
	     p.type != WIRE_TYPE_NACK_CONTRIB && p.type != WIRE_TYPE_NACK_RESULT)) {
		c->st.invalid++;
		return;
	}
	/* Another round's packets are stale, except in a partial reduce the RESULT of a
	 * later round: the group moved on without this worker, and that result answers it;
	 * and a NACK_RESULT, which asks for results kept of another round. */
	if (p.epoch != cfg->epoch ||
	    (p.round != k->round && p.type != WIRE_TYPE_NACK_RESULT &&
	     !(cfg->cset_blocks != 0 && p.type == WIRE_TYPE_RESULT &&
	       wire_round_before(k->round, p.round)))) {
		c->st.stale++;
		return;
	}
	n = p.type == WIRE_TYPE_RESULT ? 1 : p.count;
	if (p.chunk >= c->n_chunks || n > c->n_chunks - p.chunk) {
		c->st.invalid++;
		return;
	}
	t = &cfg->trees[tree_of(c, p.chunk)];
	g = &c->tgw[tree_of(c, p.chunk)];
	/* From the gateway of the chunk's tree, from the port of the chunk. */
	if (t->id != p.tree || p.chunk + n > t->chunk_first + t->chunk_count ||
	    ntohl(from->sin_addr.s_addr) != g->ipv4 || p.sender != g->id ||
	    ntohs(from->sin_port) != wire_udp_port(g->base_port, g->ports, p.chunk)) {
		c->st.invalid++;
		return;
	}
	if (p.flags & WIRE_F_ECHO) {
		int32_t s = (int32_t)((uint32_t)now - p.tsecr);

		if (s >= 0 && s < RTT_SAMPLE_MAX_US)
			rtt_sample(&c->path, s);
	}
	if (p.type == WIRE_TYPE_RESULT)
		on_result(k, &p, pkt, now);
	else if (p.type == WIRE_TYPE_NACK_RESULT)
		on_nack_result(k, &p, now);
	else
		on_range(k, &p, now);
}

/* What one datagram read from the socket goes to: an AllReduce call or a multicast one. */
typedef void (*rx_fn)(void *ctx, uint8_t *pkt, size_t len, const struct sockaddr_in *from,
		      uint64_t now);

/* Read one batch of datagrams and hand each well-formed one to fn (a truncated, oversized
 * or non-IPv4 one is counted invalid). Returns datagrams read, or a negative errno. */
static int
rx_read(struct gr_client *c, rx_fn fn, void *ctx)
{
	uint64_t now;
	int r;

	for (unsigned int i = 0; i < RX_BATCH; i++) {
		c->rxm[i].msg_hdr.msg_namelen = sizeof(c->rxaddr[i]);
		c->rxm[i].msg_hdr.msg_flags = 0;
	}
	r = recvmmsg(c->fd, c->rxm, RX_BATCH, MSG_DONTWAIT, NULL);
	if (r < 0)
		return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR ? 0 : -errno;
	now = clock_now_us();
	for (int i = 0; i < r; i++) {
		struct msghdr *m = &c->rxm[i].msg_hdr;

		if ((m->msg_flags & MSG_TRUNC) || c->rxm[i].msg_len > WIRE_UDP_PAYLOAD_MAX ||
		    m->msg_namelen != sizeof(struct sockaddr_in)) {
			c->st.invalid++;
			continue;
		}
		fn(ctx, c->rxiov[i].iov_base, c->rxm[i].msg_len, &c->rxaddr[i], now);
	}
	return r;
}

/* Read and apply what arrived. Returns datagrams read, or a negative errno. */
static int
rx_batch(struct call *k)
{
	return rx_read(k->c, rx_one, k);
}

/* Sleep until a packet arrives or until the time `until`. */
static int
wait_until(const struct gr_client *c, uint64_t until)
{
	uint64_t now = clock_now_us();
	struct pollfd pfd = { .fd = c->fd, .events = POLLIN };
	struct timespec ts;

	if (until <= now)
		return 0;
	ts.tv_sec = (time_t)((until - now) / 1000000u);
	ts.tv_nsec = (long)((until - now) % 1000000u) * 1000;
	if (ppoll(&pfd, 1, &ts, NULL) < 0 && errno != EINTR)
		return -errno;
	return 0;
}

/* --- AllReduce ---------------------------------------------------------------------------- */

static int __attribute__((format(printf, 3, 4)))
fail(struct gr_client *c, int rc, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	(void)json_util_vfail(c->err, sizeof(c->err), fmt, ap);
	va_end(ap);
	return rc;
}

/* Resolve the options into k; 0 or -EINVAL. */
static int
call_init(struct call *k, struct gr_client *c, const struct gr_options *o)
{
	uint32_t w = o->window;

	if (w > GR_WINDOW_MAX)
		return fail(c, -EINVAL, "window %u: at most %u", w, GR_WINDOW_MAX);
	k->window = w;
	/* By default a tree's window is the one its table gives: the gateway sizes it to the
	 * tree's bandwidth-delay product (docs/TABLES.md), which is what keeps the tree busy,
	 * and its slot pool to twice that. */
	for (unsigned int t = 0; t < c->cfg.n_trees; t++) {
		const struct gr_tree *tr = &c->cfg.trees[t];
		uint32_t tw = w != 0 ? w : tr->window != 0 ? tr->window :
			      tr->slots != 0 ? tr->slots : GR_WINDOW_DEFAULT;

		k->tnext[t] = k->told[t] = tr->chunk_first;
		k->tprogress[t] = 0;
		k->twin[t] = tr->slots != 0 && tr->slots < tw ? tr->slots : tw;
		k->tspan[t] = tr->slots != 0 ? tr->slots : k->twin[t];
		k->tflight[t] = 0;
	}
	k->rto_min = (uint64_t)(o->rto_min_ms ? o->rto_min_ms : GR_RTO_MIN_DEFAULT_MS) * 1000;
	k->rto_max = (uint64_t)(o->rto_max_ms ? o->rto_max_ms : GR_RTO_MAX_DEFAULT_MS) * 1000;
	k->rto_initial =
		(uint64_t)(o->rto_initial_ms ? o->rto_initial_ms : GR_RTO_INITIAL_DEFAULT_MS) * 1000;
	if (k->rto_min > k->rto_max)
		return fail(c, -EINVAL, "rto_min_ms %u above rto_max_ms %u",
			    (unsigned int)(k->rto_min / 1000), (unsigned int)(k->rto_max / 1000));
	k->average = o->average;
	k->csets = o->csets;
	k->next_due = UINT64_MAX;
	return 0;
}

/*
 * Lay a tensor of `elements` (1 .. the job's) on the job's chunk grid. The whole tensor is
 * the job's grid as it is. A shorter one of m chunks takes the first chunks of every tree,
 * as many as its share of the m (largest remainders, ties to the lower tree), so that
 * every tree of the plan carries it at once, each its planned part; the job's last chunk
 * is left out if it is short. The tensor's chunks are in tree order: tree 0's, tree 1's...
 * Every worker lays the same tensor the same way (the trees' ranges are the job's).
 */
static void
call_layout(struct call *k, size_t elements)
{
	const struct gr_client *c = k->c;
	const struct gr_config *cfg = &c->cfg;
	uint32_t ce = cfg->chunk_elements, m = (uint32_t)((elements + ce - 1) / ce);
	uint32_t cap[GR_TREES_MAX], take[GR_TREES_MAX], short_last = cfg->elements % ce != 0;
	uint64_t rem[GR_TREES_MAX], usable = c->n_chunks - short_last, given = 0;
	unsigned int n = cfg->n_trees, last_tree = 0;

	for (unsigned int t = 0; t < n; t++) {
		const struct gr_tree *tr = &cfg->trees[t];
		bool holds_last = tr->chunk_first + tr->chunk_count == c->n_chunks;

		cap[t] = m == c->n_chunks ? tr->chunk_count : tr->chunk_count - (holds_last &&
										  short_last);
		take[t] = m == c->n_chunks ? cap[t] : (uint32_t)((uint64_t)m * cap[t] / usable);
		rem[t] = m == c->n_chunks ? 0 : (uint64_t)m * cap[t] % usable;
		given += take[t];
	}
	for (; given < m; given++) { /* fewer than n trees are short by one */
		unsigned int best = n;

		for (unsigned int t = 0; t < n; t++)
			if (take[t] < cap[t] && (best == n || rem[t] > rem[best]))
				best = t;
		take[best]++;
		rem[best] = 0;
	}
	k->n_used = m;
	for (unsigned int t = 0, at = 0; t < n; t++) {
		k->tbase[t] = at;
		k->tend[t] = cfg->trees[t].chunk_first + take[t];
		at += take[t];
		if (take[t] != 0)
			last_tree = t;
	}
	k->last = k->tend[last_tree] - 1;
	k->tail = (uint32_t)(elements - (size_t)(m - 1) * ce);
}

/*
 * gr_options.resume: take up the chunk records where the call that timed out left them.
 * Chunks with a result keep it (it is in the buffer); those in flight are due at once (a
 * RETX CONTRIB, or a NACK_RESULT if the gateway holds them), the others go as usual. The
 * gateways' slots hold what that call sent: had it started again from the first chunk
 * instead, the slot pools may have moved on past the chunks it sent first.
 */
static void
call_resume(struct call *k, uint64_t now)
{
	struct gr_client *c = k->c;

	for (unsigned int t = 0; t < c->cfg.n_trees; t++) {
		uint32_t i;

		/* Chunks of a tree are sent in order: the sent ones are a prefix of its range. */
		for (i = k->told[t]; i < k->tend[t] && c->ch[i].state != CH_IDLE; i++) {
			struct chunk *h = &c->ch[i];

			if (h->state == CH_DONE) {
				if (k->done == 0 || h->contrib < k->contrib_min)
					k->contrib_min = h->contrib;
				if (k->done == 0 || h->contrib > k->contrib_max)
					k->contrib_max = h->contrib;
				k->done++;
				continue;
			}
			if (h->state == CH_SENT)
				h->state = CH_RETX; /* Karn: no round-trip sample from its result */
			h->backoff = 0;
			h->due_us = now;
			k->tflight[t]++;
		}
		k->tnext[t] = i;
		while (k->told[t] < k->tnext[t] && c->ch[k->told[t]].state == CH_DONE)
			k->told[t]++;
	}
	k->next_due = now;
}

/* An MX job's fp32 tensor encoded into c->mxbuf, the call's chunks each at its place;
 * the last one of a shorter tensor padded with zeros first. */
static void
mx_encode_all(struct call *k)
{
	struct gr_client *c = k->c;
	enum sum_mx f = (enum sum_mx)(c->cfg.dtype - GR_DTYPE_MXINT8);

	if (c->chunk_wire == 0)         /* a LAN dtype of fp32: the caller's buffer as it is */
		return;
	for (unsigned int t = 0; t < c->cfg.n_trees; t++) {
		for (uint32_t i = c->cfg.trees[t].chunk_first; i < k->tend[t]; i++) {
			uint32_t n = wire_chunk_len(c->cfg.elements, c->cfg.chunk_elements, i);
			const float *src = (const float *)(const void *)chunk_data(k, i);

			if (i == k->last && k->tail < n) {
				float *tail = mx_tail(c);

				memcpy(tail, src, (size_t)k->tail * sizeof(float));
				memset(tail + k->tail, 0, (size_t)(n - k->tail) * sizeof(float));
				src = tail;
			}
			if (c->lan == WIRE_DTYPE_BF16)
				c->k->narrow_bf16((uint16_t *)(void *)(c->mxbuf +
								       (size_t)i * c->chunk_wire),
						  src, n);
			else
				c->k->mx_narrow[f](c->mxbuf + (size_t)i * c->chunk_wire, src,
						   n / WIRE_MX_BLOCK);
		}
	}
}

int
gr_allreduce(struct gr_client *c, void *buf, size_t elements, enum gr_dtype dtype,
	     uint32_t round, const struct gr_options *opt)
{
	static const struct gr_options defaults;
	const struct gr_options *o = opt != NULL ? opt : &defaults;
	struct call k = { .c = c, .buf = buf, .round = round };
	uint64_t start, deadline, progress_us, next_progress;
	int rc;

	if (c == NULL)
		return -EINVAL;
	c->err[0] = '\0';
	if (buf == NULL)
		return fail(c, -EINVAL, "no buffer");
	if (dtype != c->cfg.dtype)
		return fail(c, -EINVAL, "dtype %s: the job's is %s",
			    gr_dtype_name(dtype) ? gr_dtype_name(dtype) : "?",
			    gr_dtype_name(c->cfg.dtype));
	if (elements == 0 || elements > c->cfg.elements)
		return fail(c, -EINVAL, "%zu elements: the job's tensor has %llu%s", elements,
			    (unsigned long long)c->cfg.elements,
			    elements == 0 ? "" : ", a tensor may have no more");
	if (c->cfg.n_trees == 0)
		return fail(c, -EINVAL, "job %u has no tree at this gateway (a multicast-only job: "
			    "gr_mcast_send, gr_mcast_recv)", c->cfg.job);
	rc = call_init(&k, c, o);
	if (rc < 0)
		return rc;
	if (o->resume && (!c->resumable || c->resume_round != round ||
			  c->resume_elements != elements))
		return fail(c, -EINVAL, "round %u: no call of it timed out or was cancelled just "
			    "before to resume", round);
	call_layout(&k, elements);
	k.esize = gr_dtype_size(dtype);
	c->st.calls++;
	c->tx_n = 0;
	start = clock_now_us();
	if (o->resume)
		call_resume(&k, start);
	else
		memset(c->ch, 0, (size_t)c->n_chunks * sizeof(c->ch[0]));
	if (c->mxbuf != NULL && !o->resume)     /* encode once; a resume sends the same bytes */
		mx_encode_all(&k);
	c->resumable = false;
	for (unsigned int t = 0; t < c->cfg.n_trees; t++)
		for (unsigned int q = 0; q < c->tgw[t].ports; q++) /* before every chunk of it */
			c->rack[c->rack_off[t] + q] = (struct rack){ .sent = (uint32_t)start - 1 };
	deadline = start + (uint64_t)(o->timeout_ms ? o->timeout_ms : GR_TIMEOUT_DEFAULT_MS) * 1000;
	progress_us = (uint64_t)(o->progress_ms ? o->progress_ms : GR_PROGRESS_DEFAULT_MS) * 1000;
	next_progress = start + progress_us;
	for (;;) {
		uint64_t now = clock_now_us(), until;
		bool busy = false;

		for (bool more = true; more;) { /* one chunk per tree with room, round-robin */
			more = false;
			for (unsigned int t = 0; t < c->cfg.n_trees; t++) {
				uint32_t i = k.tnext[t];

				if (i == k.tend[t] || i - k.told[t] >= k.tspan[t] ||
				    k.tflight[t] >= k.twin[t])
					continue;
				struct chunk *h = &c->ch[i];

				h->state = CH_SENT;
				h->sent_us = (uint32_t)now;
				/* Until the tree's first result of this call, twice T1: the
				 * round's first chunks also wait for the peers that started
				 * it later (they got their last result of the round before
				 * up to a round trip after this worker). */
				h->due_us = now + timer_us(&k, 0) * (k.tprogress[t] == 0 ? 2 : 1);
				if (h->due_us < k.next_due)
					k.next_due = h->due_us;
				send_contrib(&k, i, false, now);
				c->st.contribs_sent++;
				k.tnext[t]++;
				k.tflight[t]++;
				busy = more = true;
			}
		}
		if (now >= k.next_due)
			run_timers(&k, now);
		tx_flush(&k);
		rc = rx_batch(&k);
		if (rc < 0) {
			fail(c, rc, "receive: %s", strerror(-rc));
			break;
		}
		if (rc > 0) /* results may have overtaken lost chunks: resend those now */
			run_timers(&k, clock_now_us());
		busy = busy || rc > 0;
		tx_flush(&k);   /* what the packets asked for (NACK_CONTRIB) */
		if (k.fatal < 0) {
			rc = k.fatal;
			break;
		}
		for (unsigned int t = 0; t < c->cfg.n_trees; t++)
			while (k.told[t] < k.tnext[t] && c->ch[k.told[t]].state == CH_DONE)
				k.told[t]++;
		if (k.done == k.n_used) {
			rc = k.contrib_min;
			break;
		}
		now = clock_now_us();
		if (now >= next_progress) {
			if (o->progress != NULL)
				o->progress(o->progress_arg, k.done, k.n_used);
			next_progress = now + progress_us;
			if (o->cancel != NULL && o->cancel(o->cancel_arg) != 0) {
				c->st.cancels++;
				rc = fail(c, -ECANCELED, "round %u: cancelled with %u of %u chunks "
					  "without a result after %llu ms", round,
					  k.n_used - k.done, k.n_used,
					  (unsigned long long)((now - start) / 1000));
				break;
			}
		}
		if (now >= deadline) {
			c->st.timeouts++;
			rc = fail(c, -ETIMEDOUT,
				  "round %u: %u of %u chunks without a result after %llu ms", round,
				  k.n_used - k.done, k.n_used,
				  (unsigned long long)((now - start) / 1000));
			break;
		}
		if (busy)
			continue;
		until = k.next_due < deadline ? k.next_due : deadline;
		if ((o->progress != NULL || o->cancel != NULL) && next_progress < until)
			until = next_progress;
		rc = wait_until(c, until);
		if (rc < 0) {
			fail(c, rc, "poll: %s", strerror(-rc));
			break;
		}
	}
	if (rc > 0) {
		c->st.calls_ok++;
		if (o->progress != NULL)
			o->progress(o->progress_arg, k.n_used, k.n_used);
	}
	c->resumable = rc == -ETIMEDOUT || rc == -ECANCELED;
	c->resume_round = round;
	c->resume_elements = elements;
	return rc;
}

/* --- Selective multicast (docs/PROTOCOL.md sections 5 and 7.5) -------------------------- */

struct mcall {
	struct gr_client *c;
	uint32_t round;
	gr_mcast_fn fn;
	void *arg;
	unsigned int complete;          /* origins with every chunk */
	uint64_t start;                 /* us */
	uint64_t next_scan;             /* no missing chunk is due before this (us) */
	bool sending;                   /* gr_mcast_send() of round + 1: no call of `round` is
					 * on; what comes is only kept in the window ahead */
};

static int mcast_rx_batch(struct mcall *m);

int
gr_mcast_send(struct gr_client *c, const void *buf, size_t elements, enum gr_dtype dtype,
	      uint32_t round, const struct gr_options *opt)
{
	const struct gr_config *cfg;
	struct call k = { .c = c, .round = round };
	struct mcall m = { .c = c, .round = round - 1, .sending = true };
	double rate, ns_per_byte;
	uint64_t start, bytes = 0;

	if (c == NULL)
		return -EINVAL;
	cfg = &c->cfg;
	c->err[0] = '\0';
	if (buf == NULL)
		return fail(c, -EINVAL, "no buffer");
	if (!cfg->mcast_send)
		return fail(c, -EINVAL, "worker %u sends on no multicast stream of job %u",
			    cfg->worker_id, cfg->job);
	if (c->mxbuf != NULL)
		return fail(c, -EINVAL, "%s: selective multicast carries element-wise dtypes only",
			    gr_dtype_name(cfg->dtype));
	if (dtype != cfg->dtype || elements != cfg->elements)
		return fail(c, -EINVAL, "%zu elements of %s: the job's tensor is %llu of %s",
			    elements, gr_dtype_name(dtype) ? gr_dtype_name(dtype) : "?",
			    (unsigned long long)cfg->elements, gr_dtype_name(cfg->dtype));
	rate = opt != NULL && opt->rate_gbps > 0 ? opt->rate_gbps : cfg->mcast_rate_gbps;
	if (!isfinite(rate) || rate < 0)
		return fail(c, -EINVAL, "rate_gbps: must be a finite number >= 0");
	ns_per_byte = rate > 0 ? 8 / rate : 0;
	k.esize = gr_dtype_size(dtype);
	c->tx_n = 0;
	start = clock_now_us();
	for (uint32_t i = 0; i < c->n_chunks; i++) {
		uint32_t n = wire_chunk_len(cfg->elements, cfg->chunk_elements, i);
		struct wire_pkt p = {
			.type = WIRE_TYPE_MCAST, .dtype = (enum wire_dtype)cfg->dtype,
			.job = cfg->job, .epoch = cfg->epoch, .tree = cfg->mcast_stream,
			.sender = cfg->worker_id, .origin = cfg->worker_id, .contrib = 1,
			.round = round, .chunk = i, .count = (uint16_t)n, .tsval = (uint32_t)clock_now_us(),
		};

		tx_add(&k, &p, (const uint8_t *)buf + (size_t)i * cfg->chunk_elements * k.esize,
		       n * k.esize, 0, cfg->gateway_ipv4,
		       wire_udp_port(cfg->gateway_base_port, cfg->gateway_ports, i));
		bytes += WIRE_FRAME_PAYLOAD_OFF + (uint64_t)n * k.esize;
		if (c->tx_n == TX_BATCH || i + 1 == c->n_chunks) {
			tx_flush(&k);
			if (k.fatal < 0)
				return k.fatal;
			/* Pace: the batch may leave once its bytes fit the rate since start.
			 * Meanwhile a receiver takes in what the other origins send for
			 * this round (kept in the window ahead, as gr_mcast_recv() of the
			 * round before would): left on the socket, a whole update at the
			 * link's rate overflows it long before gr_mcast_recv() of this
			 * round starts. */
			uint64_t due = start + (uint64_t)((double)bytes * ns_per_byte / 1000);

			for (uint64_t now = clock_now_us(); now < due; now = clock_now_us()) {
				int r = 0;

				if (c->mahead > 0) {
					r = mcast_rx_batch(&m);
					if (r < 0)
						return fail(c, r, "receive: %s", strerror(-r));
					if (r == 0)
						r = wait_until(c, due);
					if (r < 0)
						return fail(c, r, "poll: %s", strerror(-r));
					continue;
				}
				struct timespec ts = { .tv_sec = (time_t)((due - now) / 1000000),
						       .tv_nsec = (long)((due - now) % 1000000) * 1000 };

				nanosleep(&ts, NULL);
			}
		}
	}
	c->st.mcast_sent += c->n_chunks;
	return (int)c->n_chunks;
}

/* Index of origin id in the configuration, or -1. */
static int
origin_index(const struct gr_config *cfg, uint16_t id)
{
	for (unsigned int i = 0; i < cfg->n_origins; i++)
		if (cfg->origins[i] == id)
			return (int)i;
	return -1;
}


/* Bitmap and count of origin o in set k (0: the call's round, 1 + s: window slot s). */
static uint8_t *
mcast_bits(const struct gr_client *c, uint32_t k, unsigned int o)
{
	return c->mbits + ((size_t)k * c->cfg.n_origins + o) * c->mbits_stride;
}

static uint32_t *
mcast_got(const struct gr_client *c, uint32_t k, unsigned int o)
{
	return c->mgot + (size_t)k * c->cfg.n_origins + o;
}

/* Where window slot s keeps chunk `chunk` of origin o. */
static uint8_t *
mcast_data(const struct gr_client *c, uint32_t s, unsigned int o, uint32_t chunk)
{
	return c->mdata + ((size_t)s * c->cfg.n_origins + o) * c->mtensor +
	       (size_t)chunk * c->cfg.chunk_elements * gr_dtype_size(c->cfg.dtype);
}

/* Empty window slot s; its chunks not delivered are counted as skipped. */
static void
mcast_slot_clear(struct gr_client *c, uint32_t s, bool skipped)
{
	if (skipped)
		c->st.mcast_skipped += c->mslot[s].held;
	c->mslot[s].held = 0;
	memset(mcast_bits(c, 1 + s, 0), 0, c->mbits_stride * c->cfg.n_origins);
	memset(mcast_got(c, 1 + s, 0), 0, sizeof(*c->mgot) * c->cfg.n_origins);
}

/* Mark chunk of origin o in set k; false if it was there already (a duplicate). */
static bool
mcast_mark(struct gr_client *c, uint32_t k, unsigned int o, uint32_t chunk)
{
	uint8_t *bits = mcast_bits(c, k, o);

	if (bits[chunk / 8] & (1u << (chunk % 8)))
		return false;
	bits[chunk / 8] |= (uint8_t)(1u << (chunk % 8));
	++*mcast_got(c, k, o);
	return true;
}

/* Deliver chunk of origin o to the caller, counting it. */
static void
mcast_deliver(struct mcall *m, unsigned int o, uint32_t chunk, const void *data)
{
	struct gr_client *c = m->c;

	c->st.mcast_received++;
	if (*mcast_got(c, 0, o) == c->n_chunks)
		m->complete++;
	m->fn(m->arg, c->cfg.origins[o], m->round, chunk, data,
	      wire_chunk_len(c->cfg.elements, c->cfg.chunk_elements, chunk));
}

/* --- Loss recovery of multicast (NACK_MCAST, docs/CLIENT.md) --- */

/* The missing-chunk record of chunk `chunk` of origin o in the call's round. */
static struct mmiss *
mcast_miss(const struct gr_client *c, unsigned int o, uint32_t chunk)
{
	return &c->mmiss[(size_t)o * c->n_chunks + chunk];
}

/* How long a chunk asked for `tries` times waits for its repair before it is asked for
 * again: the smoothed repair time and four deviations (before a sample,
 * MCAST_REPAIR_INIT_US), doubled per try, within [1 ms, MCAST_REPAIR_MAX_US]. */
static uint64_t
mcast_wait(const struct gr_client *c, unsigned int tries)
{
	uint64_t w = c->mrep.valid ? rtt_rto(&c->mrep) : MCAST_REPAIR_INIT_US;

	w = w < 1000 ? 1000 : w;
	for (unsigned int i = 1; i < tries && w < MCAST_REPAIR_MAX_US; i++)
		w *= 2;
	return w < MCAST_REPAIR_MAX_US ? w : MCAST_REPAIR_MAX_US;
}

/* Chunks of one origin arrive in order along their path, but from a gateway's several
 * lcores they may pass one another: a chunk behind a later one is asked for after this
 * allowance (us). */
static uint64_t
mcast_reorder(const struct gr_client *c)
{
	return 1000 + 2 * c->mgap_us;
}

/* An origin silent this long while chunks of it are missing has lost its last ones. */
static uint64_t
mcast_tail(const struct gr_client *c)
{
	uint64_t t = 16 * c->mgap_us;

	return t > MCAST_TAIL_MIN_US ? t : MCAST_TAIL_MIN_US;
}

static void
mcast_due(struct mcall *m, uint64_t t)
{
	if (t < m->next_scan)
		m->next_scan = t;
}

/* First copy of chunk `chunk` of origin o of the call's round at time now (us): the
 * chunks it passed are missing, and (sample: it came off the network now) it is a
 * sample of the time between chunks. */
static void
mcast_arrived(struct mcall *m, unsigned int o, uint32_t chunk, uint64_t now, bool sample)
{
	struct gr_client *c = m->c;
	struct morigin *mo = &c->morig[o];
	uint32_t t = (uint32_t)(now - m->start + mcast_reorder(c)) + 1;

	if (sample && mo->last != 0 && chunk == mo->seen) {
		uint64_t gap = now - mo->last;

		c->mgap_us = c->mgap_us == 0 ? gap : (7 * c->mgap_us + gap) / 8;
	}
	/* The chunks it passed; those asked for before anything showed them sent (a probe,
	 * an origin's first chunk) were perhaps asked for before they were sent, and get
	 * their tries afresh. */
	for (uint32_t i = mo->seen; i < chunk; i++) {
		struct mmiss *mm = mcast_miss(c, o, i);

		if (mm->tries != 0) {
			mm->tries = 0;
			mm->when = t;
		} else if (mm->when == 0) {
			mm->when = t;
		}
	}
	if (chunk > mo->seen)
		mcast_due(m, now + mcast_reorder(c));
	if (chunk >= mo->seen)
		mo->seen = chunk + 1;
	if (chunk >= mo->hi)
		mo->hi = chunk + 1;
	mo->last = now;
	mcast_due(m, now + mcast_tail(c));
}

/* One NACK_MCAST for chunks [first, first + n) of origin o to the gateway. */
static void
mcast_nack_send(struct mcall *m, struct call *k, unsigned int o, uint32_t first, uint32_t n,
		uint64_t now)
{
	const struct gr_config *cfg = &m->c->cfg;
	struct wire_pkt p = {
		.type = WIRE_TYPE_NACK_MCAST, .job = cfg->job, .epoch = cfg->epoch,
		.tree = cfg->origin_streams[o], .sender = cfg->worker_id,
		.origin = cfg->origins[o], .round = m->round, .chunk = first,
		.count = (uint16_t)n, .tsval = (uint32_t)now,
	};

	tx_add(k, &p, NULL, 0, 0, cfg->gateway_ipv4,
	       wire_udp_port(cfg->gateway_base_port, cfg->gateway_ports, first));
	m->c->st.mcast_nacks_sent++;
}

/*
 * Ask the gateway for every missing chunk of the call's round whose time has come: one
 * behind a later chunk of its origin once the reordering allowance has passed, the
 * last ones of an origin once it has been silent for mcast_tail(), each again after
 * mcast_wait() of its tries, at most MCAST_NACK_TRIES times. Runs of consecutive chunks
 * of an origin go as one range (at most WIRE_NACK_RANGE_MAX) to a gateway with one port,
 * each chunk alone to its port otherwise (PROTOCOL.md section 9). Sets m->next_scan.
 */
static int
mcast_nack_scan(struct mcall *m, uint64_t now)
{
	struct gr_client *c = m->c;
	struct call k = { .c = c, .round = m->round };
	uint32_t t = (uint32_t)(now - m->start) + 1;
	bool ranges = c->cfg.gateway_ports == 1;

	m->next_scan = UINT64_MAX;
	c->tx_n = 0;
	for (unsigned int o = 0; o < c->cfg.n_origins; o++) {
		struct morigin *mo = &c->morig[o];
		const uint8_t *bits = mcast_bits(c, 0, o);
		uint32_t run_first = 0, run_len = 0;

		if (*mcast_got(c, 0, o) == c->n_chunks)
			continue;
		/* Nothing of it yet: its first chunk is asked for once the call has waited
		 * MCAST_SILENT_US (its repair, if the gateway has it, shows what else is
		 * missing); before, the origin may just not have sent. */
		if (mo->last == 0 && mcast_miss(c, o, 0)->when == 0) {
			uint64_t silent = MCAST_SILENT_US + 16 * c->mgap_us;

			if (now - m->start < silent) {
				mcast_due(m, m->start + silent);
				continue;
			}
			mcast_miss(c, o, 0)->when = t;
		}
		/* Once something came after the latest probe (or before the first). */
		if (mo->last != 0 && mo->hi < c->n_chunks && mo->last > mo->probed) {
			if (now - mo->last >= mcast_tail(c)) {
				/* A probe of the next few: their repairs (a gateway holds
				 * what the origin did send) move hi on, and a silence after
				 * them asks for the next few; while nothing comes, only the
				 * probe is asked for again. Asking for the rest of the round
				 * would ask, of an origin that only paused, for thousands of
				 * chunks not sent yet. */
				uint32_t end = c->n_chunks - mo->hi > MCAST_TAIL_PROBE
						       ? mo->hi + MCAST_TAIL_PROBE
						       : c->n_chunks;

				for (uint32_t i = mo->hi; i < end; i++)
					if (mcast_miss(c, o, i)->when == 0)
						mcast_miss(c, o, i)->when = t;
				mo->hi = end;
				mo->probed = now;
			} else {
				mcast_due(m, mo->last + mcast_tail(c));
			}
		}
		uint32_t end = mo->last == 0 ? 1 : mo->hi;

		for (uint32_t i = 0; i <= end; i++) {
			struct mmiss *mm = i < end ? mcast_miss(c, o, i) : NULL;
			bool ask = false;

			if (mm != NULL && !(bits[i / 8] & (1u << (i % 8))) && mm->when != 0 &&
			    mm->tries < MCAST_NACK_TRIES) {
				uint64_t due = m->start + mm->when - 1 +
					       (mm->tries ? mcast_wait(c, mm->tries) : 0);

				if (due <= now)
					ask = true;
				else
					mcast_due(m, due);
			}
			if (ask && run_len != 0 && ranges && run_len < WIRE_NACK_RANGE_MAX &&
			    run_first + run_len == i) {
				run_len++;
			} else if (ask || run_len != 0) {
				if (run_len != 0)
					mcast_nack_send(m, &k, o, run_first, run_len, now);
				run_first = i;
				run_len = ask ? 1 : 0;
			}
			if (ask) {
				mm->tries++;
				mm->when = t;
				if (mm->tries < MCAST_NACK_TRIES)
					mcast_due(m, now + mcast_wait(c, mm->tries));
			}
		}
	}
	tx_flush(&k);
	return k.fatal;
}

/* Start the call of m->round on the window: the slot that kept this round is delivered
 * (origin by origin, chunks in ascending order) and freed; a slot of a round outside the
 * window from m->round (one the caller passed over) is freed, its chunks counted as
 * skipped. */
static void
mcast_window_start(struct mcall *m)
{
	struct gr_client *c = m->c;
	unsigned int n = c->cfg.n_origins;

	memset(mcast_bits(c, 0, 0), 0, c->mbits_stride * n);
	memset(mcast_got(c, 0, 0), 0, sizeof(*c->mgot) * n);
	memset(c->mmiss, 0, sizeof(*c->mmiss) * n * c->n_chunks);
	memset(c->morig, 0, sizeof(*c->morig) * n);
	for (uint32_t s = 0; s < c->mahead; s++) {
		uint32_t d = c->mslot[s].round - m->round;

		if (c->mslot[s].held == 0 || (d >= 1 && d <= c->mahead))
			continue;
		if (d != 0) {
			mcast_slot_clear(c, s, true);
			continue;
		}
		for (unsigned int o = 0; o < n; o++) {
			const uint8_t *bits = mcast_bits(c, 1 + s, o);

			for (uint32_t i = 0; i < c->n_chunks; i++)
				if ((bits[i / 8] & (1u << (i % 8))) && mcast_mark(c, 0, o, i)) {
					mcast_arrived(m, o, i, m->start, false);
					mcast_deliver(m, o, i, mcast_data(c, s, o, i));
				}
		}
		mcast_slot_clear(c, s, false);
	}
}

/* Keep chunk p (of origin o, payload at data) of a round in the window ahead. */
static void
mcast_keep(struct gr_client *c, const struct wire_pkt *p, unsigned int o, const uint8_t *data)
{
	uint32_t s = p->round % c->mahead;
	struct mslot *sl = &c->mslot[s];

	/* The window's rounds have slots of their own and mcast_window_start() freed the
	 * others, so a slot holds this round or none. */
	if (sl->held != 0 && sl->round != p->round)
		mcast_slot_clear(c, s, true);
	if (!mcast_mark(c, 1 + s, o, p->chunk)) {
		c->st.duplicates++;
		return;
	}
	sl->round = p->round;
	sl->held++;
	memcpy(mcast_data(c, s, o, p->chunk), data, (size_t)p->count * gr_dtype_size(c->cfg.dtype));
}

static void
mcast_rx_one(void *ctx, uint8_t *pkt, size_t len, const struct sockaddr_in *from,
	     uint64_t now)
{
	struct mcall *m = ctx;
	struct gr_client *c = m->c;
	const struct gr_config *cfg = &c->cfg;
	struct wire_pkt p;
	uint32_t ahead;
	int o;

	if (wire_hdr_decode(pkt, len, &p, NULL) < 0) {
		c->st.invalid++;
		return;
	}
	if (p.type == WIRE_TYPE_PROBE) {
		struct call k = { .c = c };

		on_probe(&k, &p, pkt, from, now);
		return;
	}
	if (p.type != WIRE_TYPE_MCAST || ntohl(from->sin_addr.s_addr) != cfg->gateway_ipv4 ||
	    p.job != cfg->job || p.sender != cfg->gateway_id ||
	    ntohs(from->sin_port) !=
		    wire_udp_port(cfg->gateway_base_port, cfg->gateway_ports, p.chunk)) {
		c->st.invalid++;
		return;
	}
	if (p.epoch != cfg->epoch) {
		c->st.stale++;
		return;
	}
	o = origin_index(cfg, p.origin);
	if (o < 0 || cfg->origin_streams[o] != p.tree || p.chunk >= c->n_chunks ||
	    p.dtype != (enum wire_dtype)cfg->dtype ||
	    p.count != wire_chunk_len(cfg->elements, cfg->chunk_elements, p.chunk)) {
		c->st.invalid++;
		return;
	}
	ahead = p.round - m->round;
	if (wire_round_before(p.round, m->round) || (m->sending && ahead == 0)) {
		c->st.mcast_late++;
	} else if (ahead > c->mahead) {
		c->st.mcast_too_far++;
	} else if (ahead > 0) {
		mcast_keep(c, &p, (unsigned int)o, pkt + p.payload_off);
	} else if (!mcast_mark(c, 0, (unsigned int)o, p.chunk)) {
		c->st.duplicates++;
	} else {
		struct mmiss *mm = mcast_miss(c, (unsigned int)o, p.chunk);

		if (p.flags & WIRE_F_RETX) {
			/* A repair: a sample of the time it took if asked for once (Karn). */
			if (mm->tries == 1)
				rtt_sample(&c->mrep, (int64_t)(now - (m->start + mm->when - 1)));
			c->st.mcast_repaired++;
			/* Past the latest chunk received of its origin (its first, or a
			 * probe's): the chunks before it are missing too, and the origin is
			 * not silent. */
			if (c->morig[o].last == 0 || p.chunk >= c->morig[o].seen)
				mcast_arrived(m, (unsigned int)o, p.chunk, now, false);
		} else {
			mcast_arrived(m, (unsigned int)o, p.chunk, now, true);
		}
		mcast_deliver(m, (unsigned int)o, p.chunk, pkt + p.payload_off);
	}
}

/* Take one batch of what waits on the socket (m's round, the window ahead, answers to
 * probes): the packets read, or -errno. */
static int
mcast_rx_batch(struct mcall *m)
{
	return rx_read(m->c, mcast_rx_one, m);
}

int
gr_mcast_recv(struct gr_client *c, uint32_t round, gr_mcast_fn fn, void *arg,
	      const struct gr_mcast_opts *o)
{
	static const struct gr_mcast_opts defaults;
	struct mcall m = { .c = c, .round = round, .fn = fn, .arg = arg,
			   .next_scan = UINT64_MAX };
	uint64_t start, deadline;
	unsigned int n;

	if (c == NULL)
		return -EINVAL;
	c->err[0] = '\0';
	if (o == NULL)
		o = &defaults;
	if (fn == NULL)
		return fail(c, -EINVAL, "no callback");
	n = c->cfg.n_origins;
	if (n == 0)
		return fail(c, -EINVAL, "worker %u receives no multicast stream of job %u",
			    c->cfg.worker_id, c->cfg.job);
	/* The bitmaps and the window came with the configuration (prepare()): nothing is
	 * allocated here. */
	start = clock_now_us();
	m.start = start;
	deadline = start + (uint64_t)(o->timeout_ms ? o->timeout_ms : GR_TIMEOUT_DEFAULT_MS) * 1000;
	mcast_window_start(&m);
	while (m.complete < n) {
		int r = mcast_rx_batch(&m);

		if (r < 0)
			return fail(c, r, "receive: %s", strerror(-r));
		uint64_t now = clock_now_us();

		if (m.complete < n && now >= m.next_scan) {
			r = mcast_nack_scan(&m, now);
			if (r < 0)
				return fail(c, r, "%s", c->err);
		}
		if (r > 0)
			continue;
		if (now >= deadline)
			break;
		r = wait_until(c, deadline < m.next_scan ? deadline : m.next_scan);
		if (r < 0)
			return fail(c, r, "poll: %s", strerror(-r));
	}
	if (o->complete != NULL)
		for (unsigned int i = 0; i < n; i++)
			o->complete[i] = *mcast_got(c, 0, i) == c->n_chunks;
	if (m.complete < n) {
		uint64_t missing = 0;

		for (unsigned int i = 0; i < n; i++)
			missing += c->n_chunks - *mcast_got(c, 0, i);
		(void)fail(c, 0, "round %u: %u of %u origins complete, %llu chunks missing after "
			   "%llu ms", round, m.complete, n, (unsigned long long)missing,
			   (unsigned long long)((clock_now_us() - start) / 1000));
	}
	return (int)m.complete;
}

/* A smoothed round trip for gr_stats, where 0 means "no sample yet" (georeduce.h): an
 * estimate that rounds down to 0 us (answers within the microsecond, as on loopback) is
 * reported as 1. */
static uint32_t
srtt_report(const struct rtt *r)
{
	return !r->valid ? 0 : r->srtt > 1 ? (uint32_t)r->srtt : 1;
}

void
gr_client_stats(const struct gr_client *c, struct gr_stats *out)
{
	if (c == NULL || out == NULL)
		return;
	*out = c->st;
	out->srtt_us = srtt_report(&c->res);
	out->rttvar_us = c->res.valid ? (uint32_t)c->res.rttvar : 0;
	out->path_srtt_us = srtt_report(&c->path);
	out->t1_us = (uint32_t)t1_base(c, GR_RTO_MIN_DEFAULT_MS * 1000ull,
				       GR_RTO_MAX_DEFAULT_MS * 1000ull,
				       GR_RTO_INITIAL_DEFAULT_MS * 1000ull);
}
