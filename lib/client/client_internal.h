/* SPDX-License-Identifier: BSD-3-Clause
 *
 * libgeoreduce's internals, shared by the files of lib/client/ and not installed: the
 * client (struct gr_client), what one gr_allreduce() call works with (struct call) and
 * one multicast call (struct mcall), and the functions more than one file calls. Those on
 * the per-datagram paths (the round-trip estimator and the timers, a chunk's tree, loss
 * reference and place in the caller's buffer) are static inline here, so that a packet
 * calls no function of another file for them. The caller's thread runs all of it; a call
 * allocates nothing.
 */
#ifndef GEOREDUCE_CLIENT_INTERNAL_H
#define GEOREDUCE_CLIENT_INTERNAL_H

#include <assert.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/uio.h>

#include "georeduce.h"
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

#define TX_BATCH 64                       /* packets per sendmmsg() */
#define RX_BATCH 32                       /* datagrams per recvmmsg() */
#define RX_DRAIN_BATCHES 8                /* recvmmsg() calls at most before timers run */
#define RX_LEN (WIRE_UDP_PAYLOAD_MAX + 1) /* one more: oversize is detected */
#define RTT_GRANULARITY_US 100            /* floor of 4 x rttvar in a timer */

/* Per chunk, docs/PROTOCOL.md section 10. IDLE: not sent in this call. */
enum chunk_state {
	CH_IDLE = 0,
	CH_SENT,  /* sent once, T1 armed */
	CH_ASKED, /* sent once, T1 expired with no sign of loss: the gateway was asked
		   * (NACK_RESULT) whether it holds it; the ask timer armed */
	CH_RETX,  /* sent again with RETX, T1 armed with backoff */
	CH_HELD,  /* ACKed: the gateway holds it; T2 armed */
	CH_DONE,  /* result delivered */
};

/* What a tree's latest answered chunk through one gateway port tells of the chunks sent
 * before it through that port (the results of one port come back in order: one lcore of
 * the gateway; of different ports, not). */
struct rack {
	uint32_t sent;  /* its first transmission (us, mod 2^32) */
	uint32_t rtt;   /* the time its result took (us) */
	uint32_t chunk; /* its index (the chunks of a burst share a time) */
};

struct chunk {
	uint64_t due_us;  /* expiry of T1 (SENT, RETX) or T2 (HELD) */
	uint32_t sent_us; /* clock of the latest transmission (the first while SENT: a
				 * Karn sample) */
	uint16_t contrib; /* the result's contributor count */
	uint8_t state;    /* enum chunk_state */
	uint8_t backoff;  /* timer doublings so far */
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
	uint32_t seen;   /* the chunk after the latest one received (hi
					 * also moves past the chunks a probe asks for) */
	uint64_t last;   /* us, 0: nothing received of the round */
	uint64_t probed; /* us: the latest tail probe (0: none) */
};

/* A slot of gr_mcast_recv()'s window: the chunks kept of one round ahead. */
struct mslot {
	uint32_t round; /* the round kept; meaningless while held is 0 */
	uint32_t held;  /* chunks kept; 0: the slot is free (bitmaps clear) */
};

/* The latest RESULT of a chunk this client got (its contributor set and payload are in
 * the client's kbuf), for a gateway that asks for it after a failover (docs/CLIENT.md,
 * "Results kept"). */
struct kept {
	uint32_t round;
	uint16_t contrib;
	uint16_t origin; /* the root that completed it */
	bool valid;
};

/* RFC 6298 estimator, microseconds. */
struct rtt {
	int64_t srtt;
	int64_t rttvar;
	bool valid;
};

struct gr_client {
	struct gr_config cfg;                /* trees sorted by chunk_first */
	struct gr_gateway tgw[GR_TREES_MAX]; /* the gateway of each tree (cfg.trees order) */
	unsigned int n_gws;                  /* the distinct gateways among them */
	struct gr_gateway gws[GR_GATEWAYS_MAX];
	int fd;
	uint32_t n_chunks;
	struct chunk *ch;  /* n_chunks */
	struct rack *rack; /* per tree and gateway port, from rack_off[tree] */
	uint32_t rack_off[GR_TREES_MAX];
	struct rtt res;  /* CONTRIB to RESULT, first transmissions only */
	struct rtt path; /* echoed answers (ACK, RESULT to a NACK) */
	/* Per tree (cfg.trees order): the least CONTRIB-to-RESULT time of its first
	 * transmissions in the latest call that had one (us; 0: none since the
	 * configuration), which sizes its window (client_tree_window()). */
	uint32_t trtt_min[GR_TREES_MAX];
	struct gr_stats st;
	char err[GR_ERR_MAX];
	/* Transmit batch: header, payload iovec and destination per packet. */
	unsigned int tx_n;
	struct mmsghdr txm[TX_BATCH];
	struct iovec txiov[TX_BATCH][3]; /* header (and set), payload, zeros padding it */
	struct sockaddr_in txaddr[TX_BATCH];
	uint8_t txhdr[TX_BATCH][WIRE_HDR_LEN + WIRE_CSET_BLOCK * WIRE_CSET_BLOCKS_MAX];
	uint32_t cset_len; /* bytes of the job's contributor sets */
	uint8_t cset[WIRE_CSET_BLOCK * WIRE_CSET_BLOCKS_MAX]; /* this worker's own set */
	/* Receive batch. */
	struct mmsghdr rxm[RX_BATCH];
	struct iovec rxiov[RX_BATCH];
	struct sockaddr_in rxaddr[RX_BATCH];
	uint8_t *rxbuf; /* RX_BATCH x RX_LEN */
	/* gr_mcast_recv(): the round being received and mahead rounds after it. Per round
	 * and origin (configuration order) a bitmap of the chunks got and their count: set 0
	 * is the round of the call, set 1 + s that of window slot s. Slot s keeps the chunks
	 * of a round ahead with round % mahead == s, copied into its part of mdata, until
	 * the call of that round delivers them. Allocated with the configuration when it has
	 * origins (NULL without), so that a call allocates nothing. */
	uint8_t *mbits; /* (1 + mahead) x n_origins x mbits_stride bytes */
	size_t mbits_stride;
	uint32_t *mgot;      /* (1 + mahead) x n_origins */
	struct mslot *mslot; /* mahead */
	uint8_t *mdata;      /* mahead x n_origins x mtensor bytes */
	size_t mtensor;      /* bytes of one tensor */
	uint32_t mahead;
	/* Loss recovery of the call's round (NACK_MCAST, docs/CLIENT.md): n_origins x
	 * n_chunks missing-chunk records, n_origins origin records; the smoothed time between
	 * two chunks of an origin and between a NACK_MCAST and its repair (first tries). */
	struct mmiss *mmiss;
	struct morigin *morig;
	uint64_t mgap_us; /* 0: no sample yet */
	struct rtt mrep;
	/* MX jobs: the caller's fp32 tensor encoded for the wire, chunk after chunk (each
	 * chunk_wire bytes, the last one shorter), with the kernels the dataplane uses; in
	 * the LAN dtype (lan) if the job has one, 0 bytes when that is fp32 (the CONTRIBs
	 * then carry the caller's buffer). */
	const struct sum_kernels *k;
	uint8_t *mxbuf;
	size_t chunk_wire;
	enum wire_dtype lan; /* the dtype of this worker's CONTRIBs */
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
	uint8_t *csets; /* the caller's, or NULL */
	size_t esize;
	uint32_t round;
	/* The tensor on the job's chunk grid (call_layout()): it fills chunks
	 * [chunk_first, tend) of each tree, the tree's first one being the tensor's chunk
	 * tbase; its last chunk, `last`, holds `tail` elements of it (zeros pad the rest). */
	uint32_t n_used; /* chunks the call sends */
	uint32_t tbase[GR_TREES_MAX];
	uint32_t last, tail;
	bool average;
	uint32_t window;
	uint64_t rto_min, rto_max, rto_initial; /* us */
	uint32_t tnext[GR_TREES_MAX];           /* per tree: first chunk of its range never sent */
	uint32_t told[GR_TREES_MAX];      /* per tree: first chunk of its range without result */
	uint32_t tend[GR_TREES_MAX];      /* per tree: end of its range */
	uint32_t twin[GR_TREES_MAX];      /* per tree: its window (chunks in flight) */
	uint32_t tspan[GR_TREES_MAX];     /* per tree: how far past told a chunk may be sent */
	uint32_t tflight[GR_TREES_MAX];   /* per tree: chunks sent without result */
	uint32_t trtt[GR_TREES_MAX];      /* per tree: least CONTRIB-to-RESULT time of a
					   * first transmission in this call (us; 0: none) */
	uint64_t tprogress[GR_TREES_MAX]; /* per tree: when its latest result came (us) */
	uint32_t done;
	uint64_t next_due; /* no timer expires before this */
	uint16_t contrib_min, contrib_max;
	int fatal; /* a send error that ends the call */
	/* NACK_RESULT coalescing (gateway with one port only). */
	uint32_t run_first, run_len;
};

/* What one gr_mcast_recv() call works with; gr_mcast_send() has one too, for what arrives
 * while it paces. */
struct mcall {
	struct gr_client *c;
	uint32_t round;
	gr_mcast_fn fn;
	void *arg;
	unsigned int complete; /* origins with every chunk */
	uint64_t start;        /* us */
	uint64_t next_scan;    /* no missing chunk is due before this (us) */
	bool sending;          /* gr_mcast_send() of round + 1: no call of `round` is
					 * on; what comes is only kept in the window ahead */
};

/* --- Timers ------------------------------------------------------------------------------- */

static inline void
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

static inline uint64_t
rtt_rto(const struct rtt *r)
{
	int64_t v = 4 * r->rttvar;

	return (uint64_t)(r->srtt + (v > RTT_GRANULARITY_US ? v : RTT_GRANULARITY_US));
}

/* T1's base: the result estimate (before any, the initial value), at least the path's RTO,
 * within [min, max]. T2 uses the same base. */
static inline uint64_t
t1_base(const struct gr_client *c, uint64_t min, uint64_t max, uint64_t initial)
{
	uint64_t t = c->res.valid ? rtt_rto(&c->res) : initial;

	if (c->path.valid && rtt_rto(&c->path) > t)
		t = rtt_rto(&c->path);
	return t < min ? min : (t > max ? max : t);
}

static inline uint64_t
timer_us(const struct call *k, unsigned int backoff)
{
	uint64_t t = t1_base(k->c, k->rto_min, k->rto_max, k->rto_initial);

	for (unsigned int i = 0; i < backoff && t < k->rto_max; i++)
		t *= 2;
	return t > k->rto_max ? k->rto_max : t;
}

/* The ask timer of a chunk in CH_ASKED: an ACK or the RESULT comes back from the first hop
 * (its round trip, the path's RTO) unless the CONTRIB was lost; twice that, and at least
 * T1's base: a gateway on a loaded host (its lcore waiting for a core) answers tens to
 * hundreds of milliseconds late, and an answer that comes after the resend has saved
 * nothing. A loss that no later chunk's result reveals so waits one T1 more. */
static inline uint64_t
ask_us(const struct call *k)
{
	uint64_t t1 = timer_us(k, 0);
	uint64_t t = k->c->path.valid ? 2 * rtt_rto(&k->c->path) : t1;

	t = t < t1 ? t1 : t;
	return t > k->rto_max ? k->rto_max : t;
}

/* Whether chunk h went once only (its result is a round-trip sample, Karn). */
static inline bool
sent_once(const struct chunk *h)
{
	return h->state == CH_SENT || h->state == CH_ASKED;
}

/* --- Chunks ------------------------------------------------------------------------------- */

/* Index in the sorted trees of the tree carrying chunk (which exists). */
static inline unsigned int
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

/* Where job chunk `chunk` (one of the call's) is in the caller's buffer. */
static inline uint8_t *
chunk_data(const struct call *k, uint32_t chunk)
{
	const struct gr_client *c = k->c;
	unsigned int t = tree_of(c, chunk);
	size_t i = k->tbase[t] + (chunk - c->cfg.trees[t].chunk_first);

	return k->buf + i * c->cfg.chunk_elements * k->esize;
}

/* MX jobs: behind the encoded tensor in mxbuf, room for one chunk of fp32 (the padded
 * last chunk of a tensor shorter than the job's), aligned. */
static inline size_t
mx_tail_off(size_t chunk_wire, uint32_t n_chunks)
{
	return (chunk_wire * n_chunks + 15) & ~(size_t)15;
}

static inline float *
mx_tail(const struct gr_client *c)
{
	return (float *)(void *)(c->mxbuf + mx_tail_off(c->chunk_wire, c->n_chunks));
}

/* --- Functions of one file that others call ------------------------------------------------ */

/* config.c: the gateway of cfg's tree i; the distinct gateways of cfg's trees into out[]
 * (at most max; returns how many there are); cfg's trees sorted by their first chunk. */
struct gr_gateway client_tree_gateway(const struct gr_config *cfg, unsigned int i);
unsigned int
client_distinct_gateways(const struct gr_config *cfg, struct gr_gateway *out, unsigned int max);
void client_sort_trees(struct gr_config *cfg);

/* client.c: the call's error line into c->err (printf-style); returns rc. */
int client_fail(struct gr_client *c, int rc, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* sock.c: the socket, the transmit and receive batches, the wait, PROBE answers. */
int client_open_socket(const struct gr_config *cfg, int *out, char *err, size_t errlen);
void client_tx_flush(struct call *k);
void client_tx_add_set(struct call *k, const struct wire_pkt *p, const uint8_t *set,
		       const void *payload, size_t plen, size_t pad, uint32_t ipv4, uint16_t port);
void client_tx_add(struct call *k, const struct wire_pkt *p, const void *payload, size_t plen,
		   size_t pad, uint32_t ipv4, uint16_t port);
void client_on_probe(struct call *k, const struct wire_pkt *p, uint8_t *pkt,
		     const struct sockaddr_in *from, uint64_t now);

/* What one datagram read from the socket goes to: an AllReduce call or a multicast one. */
typedef void (*rx_fn)(void *ctx, uint8_t *pkt, size_t len, const struct sockaddr_in *from,
		      uint64_t now);

int client_rx_read(struct gr_client *c, rx_fn fn, void *ctx);
int client_wait_until(const struct gr_client *c, uint64_t until);

/* allreduce_tx.c: a chunk's CONTRIB; the timers of the chunks in flight. */
void client_send_contrib(struct call *k, uint32_t chunk, bool retx, uint64_t now);
void client_run_timers(struct call *k, uint64_t now);

/* allreduce.c: the window a call starts tree t with when its options give none. */
uint32_t client_tree_window(const struct gr_client *c, unsigned int t);
uint32_t client_table_window(const struct gr_client *c, unsigned int t);
uint32_t client_window_for(double rate_gbps, uint32_t rtt_us, size_t chunk_bytes, uint32_t floor,
			   uint32_t slots);

/* allreduce_rx.c: read and apply what arrived for an AllReduce call. */
int client_rx_batch(struct call *k);

/* mcast_recv.c: take in what arrived for a multicast call (its round, the window ahead). */
int client_mcast_rx_batch(struct mcall *m);

#endif
