/* SPDX-License-Identifier: BSD-3-Clause
 *
 * georeduce-bench-dataplane: the dataplane's worker loop (dp_worker_poll) on one core,
 * through a net_ring port in one process, against plain io-forwarding (rx_burst ->
 * tx_burst of the same packets on the same port) in the same run.
 *
 * Scenario per point (payload bytes P, fan-in F, dtype): a root gateway (table installed
 * with dp_prepare + dp_activate) with F local workers, one tree of W chunks (--window);
 * every round each worker sends one CONTRIB per chunk, every F contributions in complete
 * a chunk and produce F RESULT copies out (one per worker). Packets in = packets out.
 *
 * The bench plays the NIC on the same core, outside the measured interval:
 *  - Frames are built once (wire_hdr_encode + wire_frame_build: valid IPv4/UDP to the
 *    gateway's address and port range) and recycled. Each frame carries an extra
 *    reference, so the dataplane's free of a summed contribution only drops it.
 *  - The first contribution of a chunk becomes the accumulator and then the RESULT, which
 *    the slot keeps through the next round (a worker a round behind may still ask for
 *    it) and releases when the round after that reopens it. So worker 0 has three frames
 *    per chunk used in turn; before a round ("refill") the one
 *    due is restored from its template (a memcpy of the whole frame) and every frame of
 *    the round gets the new round number (4 header bytes; the UDP checksum updated
 *    incrementally with --udp-csum) and its extra reference back.
 *  - feed: a burst of frames is put on the RX ring; poll: one dp_worker_poll(); sink: the
 *    TX ring is drained and the result copies freed (header + indirect mbuf).
 * Rates are per core from the TSC cycles spent inside dp_worker_poll() (io-forward: inside
 * rx_burst + tx_burst); the cost of refill, feed and sink is reported next to them, and the
 * end-to-end rate of the whole loop on one core too.
 *
 * Ring io-forward only moves pointers between two rings (about 1 ns a packet): no
 * descriptors, no mbuf allocation or free. As a second reference the same run measures
 * io-forward on a net_null port, which allocates every packet on RX and frees it on TX like
 * a NIC driver (testpmd's NIC-less figure), against the dataplane's cost including the free
 * of the copies it sent. A third, "io+sum", is ring io-forward that also adds every payload
 * into one accumulator with the dataplane's kernels: what the sum alone costs from where
 * the frames are, a floor under any gateway that sums.
 *
 * Checks, so that a broken path cannot be measured: two rounds before and after every
 * measurement inspect every RESULT copy (addresses, header fields, and every payload
 * element equals the exact sum of the integer-valued inputs); during the measurement the
 * lcore's counters must show every chunk completed, every copy sent and no drop.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>
#include <rte_bus_vdev.h>
#include <rte_cycles.h>
#include <rte_eal.h>
#include <rte_ethdev.h>
#include <rte_eth_ring.h>
#include <rte_lcore.h>
#include <rte_log.h>
#include <rte_mbuf.h>
#include <rte_ring.h>

#include "bench_util.h"
#include "bytes.h"
#include "cli.h"
#include "dp.h"
#include "slowpath/slowpath.h"
#include "sum.h"
#include "table.h"
#include "wire.h"

#define PROG "georeduce-bench-dataplane"
#define LIST_MAX 16
#define REPEAT_MAX 101
#define RING_SIZE 1024
#define GW_ID 1
#define GW_IP 0x0a000001u               /* 10.0.0.1/16: the gateway */
#define WORKER_IP(w) (0x0a000101u + (uint32_t)(w)) /* 10.0.1.1 ...: worker w */
#define WORKER_ID(w) (101 + (w))
#define WORKER_PORT(w) (5000 + (w))
#define JOB 1
#define EPOCH 1
#define OFF_ROUND (WIRE_FRAME_HDR_OFF + 24)   /* round in the frame */
#define OFF_UDP_CSUM (WIRE_ETH_LEN + WIRE_IPV4_LEN + 6)

struct opts {
	unsigned int payload[LIST_MAX], n_payload;
	unsigned int fanin[LIST_MAX], n_fanin;
	enum wire_dtype dtype[3];
	unsigned int n_dtype;
	double seconds;
	unsigned int repeat;
	unsigned int window;
	unsigned int burst;
	unsigned int mtu;               /* 0: 1500 when the chunk fits, else 9000 */
	bool worker_order;              /* feed worker by worker instead of chunk by chunk */
	bool udp_csum;
	bool json;
};

/* Cycles and packets of one measurement. */
struct tally {
	uint64_t worker, feed, sink, refill, wall; /* TSC cycles */
	uint64_t pkts_in, pkts_out, chunks, rounds;
};

/* One point: its ports, dataplane and frames. */
struct point {
	unsigned int payload, fanin, window, slots, elems, frame_len, mtu;
	enum wire_dtype dtype;
	bool udp_csum;
	bool worker_order;
	unsigned int burst;
	struct rte_ring *rx, *tx;
	uint16_t port_id;
	bool port_made;
	struct dp *dp;
	bool dp_up;
	struct dp_lcore *lc;
	struct rte_mempool *pool;
	struct rte_mbuf **acc[3];       /* [round % 3][chunk]: worker 0's frames */
	struct rte_mbuf **shared;       /* [chunk * fanin + w], w >= 1: workers 1 .. F-1 */
	struct rte_mbuf **seq[3];       /* [round % 3]: the round's frames in feed order */
	uint8_t *tmpl;                  /* [chunk]: worker 0's frame as built */
	uint32_t round;                 /* of the last round run; frames built with 0 */
	const struct sum_kernels *scalar;
	float *scratch;                 /* result payload widened to fp32 */
	float *sink;                    /* io-forward + sum: the fp32 accumulator */
	uint8_t *pkt;                   /* a result copy made contiguous */
	uint8_t *seen;                  /* [chunk * fanin + w]: result copies of a round */
};

struct result {
	unsigned int payload, fanin;
	enum wire_dtype dtype;
	const char *kernels;
	unsigned int mtu;
	double mpps_in, mpps_out, gbps, io_mpps, ratio;
	double ns_pkt, io_ns_pkt, sink_ns_out, feed_ns_in, refill_ns_chunk;
	double e2e_mpps_in, io_e2e_mpps;
	double mpps_free;               /* with the free of the copies sent (a NIC's TX does it) */
	double null_mpps, ratio_null;   /* io-forward on a net_null port; mpps_free / null_mpps */
	double iosum_ns_pkt;            /* ring io-forward with each payload summed */
};

/* A net_null port: io-forward on it allocates on RX and frees on TX, as testpmd measures
 * a NIC-less forwarder. */
struct null_port {
	uint16_t port_id;
	bool up;
	struct rte_mempool *pool;
};

static unsigned int instance;

static double
cyc_s(uint64_t cycles)
{
	return (double)cycles / (double)rte_get_tsc_hz();
}

/* Integer-valued input of worker w, chunk c, element i: exact in fp16 and bf16, and so is
 * the sum of up to 16 of them. */
static int
value(unsigned int c, unsigned int w, unsigned int i)
{
	return (int)((i + 3 * c + 5 * w) % 16) - 8;
}

static int
expected(const struct point *x, unsigned int c, unsigned int i)
{
	int s = 0;

	for (unsigned int w = 0; w < x->fanin; w++)
		s += value(c, w, i);
	return s;
}

/* Set the round of a frame, updating a nonzero UDP checksum (RFC 1624, eqn. 3). */
static void
set_round(uint8_t *frame, uint32_t round)
{
	uint32_t old = be32_get(frame + OFF_ROUND);
	uint16_t hc = be16_get(frame + OFF_UDP_CSUM);

	be32_put(frame + OFF_ROUND, round);
	if (hc == 0)
		return;
	uint32_t s = (uint16_t)~hc;

	s += (uint16_t)~(old >> 16) + (uint16_t)~(old & 0xffff) + (round >> 16) + (round & 0xffff);
	while (s >> 16)
		s = (s & 0xffff) + (s >> 16);
	hc = (uint16_t)~s;
	if (hc == 0)
		hc = 0xffff;
	frame[OFF_UDP_CSUM] = (uint8_t)(hc >> 8);
	frame[OFF_UDP_CSUM + 1] = (uint8_t)hc;
}

/* --- Setup -------------------------------------------------------------------------------- */

static json_t *
table_json(const struct point *x)
{
	json_t *workers = json_array();
	char ip[16];

	for (unsigned int w = 0; w < x->fanin; w++)
		json_array_append_new(workers,
				      json_pack("{s:i, s:s, s:i}", "id", WORKER_ID(w), "ipv4",
						table_ipv4_format(WORKER_IP(w), ip), "port",
						WORKER_PORT(w)));
	json_t *tree = json_pack("{s:i, s:s, s:n, s:[], s:o, s:i, s:i, s:i, s:i, s:f, s:i}",
				 "id", 0, "role", "root", "parent", "children", "workers", workers,
				 "expected", (int)x->fanin, "subtree_workers", (int)x->fanin,
				 "chunk_first", 0, "chunk_count", (int)x->window, "rate_gbps", 100.0,
				 "slots", (int)x->slots);

	return json_pack("{s:s, s:i, s:i, s:{s:i, s:s, s:i, s:i}, s:s, s:I, s:i, "
			 "s:{s:i, s:i, s:i, s:i}, s:[o]}",
			 "format", TABLE_FORMAT, "job", JOB, "epoch", EPOCH,
			 "gateway", "id", GW_ID, "ipv4", table_ipv4_format(GW_IP, ip),
			 "base_port", WIRE_PORT_BASE_DEFAULT, "ports", WIRE_PORT_COUNT_DEFAULT,
			 "dtype", wire_dtype_str(x->dtype),
			 "elements", (json_int_t)x->window * x->elems,
			 "chunk_elements", (int)x->elems,
			 "limits", "max_trees", 1, "max_children", 1, "max_workers", (int)x->fanin,
			 "max_slots", (int)x->slots,
			 "trees", tree);
}

/* Build the frame of worker w for chunk c at frame (round 0). */
static int
build_frame(const struct point *x, uint8_t *frame, unsigned int c, unsigned int w, float *vals)
{
	struct wire_pkt p = {
		.type = WIRE_TYPE_CONTRIB,
		.dtype = x->dtype,
		.job = JOB,
		.epoch = EPOCH,
		.tree = 0,
		.sender = (uint16_t)WORKER_ID(w),
		.origin = (uint16_t)WORKER_ID(w),
		.contrib = 1,
		.round = 0,
		.chunk = c,
		.count = (uint16_t)x->elems,
	};
	struct wire_flow f = {
		.src_mac = { 0x02, 0, 0, 0, 1, (uint8_t)(w + 1) },
		.src_ip = WORKER_IP(w),
		.dst_ip = GW_IP,
		.src_port = (uint16_t)WORKER_PORT(w),
		.dst_port = wire_udp_port(WIRE_PORT_BASE_DEFAULT, WIRE_PORT_COUNT_DEFAULT, c),
		.ttl = 64,
	};
	uint8_t *payload = frame + WIRE_FRAME_PAYLOAD_OFF;

	memcpy(f.dst_mac, x->dp->ports[0].mac.addr_bytes, RTE_ETHER_ADDR_LEN);
	if (wire_hdr_encode(frame + WIRE_FRAME_HDR_OFF, x->frame_len - WIRE_FRAME_HDR_OFF, &p,
			    NULL) != 0)
		return -1;
	for (unsigned int i = 0; i < x->elems; i++)
		vals[i] = (float)value(c, w, i);
	if (x->dtype == WIRE_DTYPE_FP32)
		memcpy(payload, vals, (size_t)x->elems * sizeof(float));
	else if (x->dtype == WIRE_DTYPE_FP16)
		x->scalar->narrow_f16((uint16_t *)(void *)payload, vals, x->elems);
	else
		x->scalar->narrow_bf16((uint16_t *)(void *)payload, vals, x->elems);
	return wire_frame_build(frame, x->frame_len, &f, x->frame_len - WIRE_FRAME_HDR_OFF,
				x->udp_csum);
}

static struct rte_mbuf *
frame_mbuf(struct point *x, const uint8_t *frame)
{
	struct rte_mbuf *m = rte_pktmbuf_alloc(x->pool);
	char *d;

	if (m == NULL)
		return NULL;
	d = rte_pktmbuf_append(m, (uint16_t)x->frame_len);
	if (d == NULL) {
		rte_pktmbuf_free(m);
		return NULL;
	}
	memcpy(d, frame, x->frame_len);
	return m;
}

static int
build_frames(struct point *x, char *err, size_t errlen)
{
	unsigned int W = x->window, F = x->fanin;
	uint8_t *frame = calloc(1, x->frame_len);
	float *vals = calloc(x->elems, sizeof(float));
	int rc = -ENOMEM;

	for (int r = 0; r < 3; r++)
		x->acc[r] = calloc(W, sizeof(*x->acc[r]));
	x->shared = calloc((size_t)W * F, sizeof(*x->shared));
	for (int r = 0; r < 3; r++)
		x->seq[r] = calloc((size_t)W * F, sizeof(*x->seq[r]));
	x->tmpl = calloc(W, x->frame_len);
	x->seen = calloc((size_t)W * F, 1);
	x->scratch = calloc(x->elems, sizeof(float));
	x->sink = calloc(x->elems, sizeof(float));
	x->pkt = calloc(1, x->frame_len);
	if (frame == NULL || vals == NULL || x->acc[0] == NULL || x->acc[1] == NULL ||
	    x->acc[2] == NULL || x->shared == NULL || x->seq[0] == NULL || x->seq[1] == NULL ||
	    x->seq[2] == NULL || x->tmpl == NULL ||
	    x->seen == NULL || x->scratch == NULL || x->sink == NULL || x->pkt == NULL) {
		snprintf(err, errlen, "out of memory for %u frames", W * F);
		goto out;
	}
	for (unsigned int c = 0; c < W; c++) {
		for (unsigned int w = 0; w < F; w++) {
			if (build_frame(x, frame, c, w, vals) != 0) {
				snprintf(err, errlen, "cannot build the frame of chunk %u", c);
				rc = -EINVAL;
				goto out;
			}
			if (w == 0) {
				memcpy(x->tmpl + (size_t)c * x->frame_len, frame, x->frame_len);
				for (int r = 0; r < 3; r++)
					if ((x->acc[r][c] = frame_mbuf(x, frame)) == NULL)
						goto nombuf;
			} else if ((x->shared[c * F + w] = frame_mbuf(x, frame)) == NULL) {
				goto nombuf;
			}
		}
	}
	/* Feed order: chunk by chunk (workers in lockstep), or worker by worker (every chunk
	 * of a round open at once). Worker 0 comes first for every chunk either way. */
	for (int par = 0; par < 3; par++) {
		for (unsigned int a = 0; a < W * F; a++) {
			unsigned int c = x->worker_order ? a % W : a / F;
			unsigned int w = x->worker_order ? a / W : a % F;

			x->seq[par][a] = w == 0 ? x->acc[par][c] : x->shared[c * F + w];
		}
	}
	rc = 0;
	goto out;
nombuf:
	snprintf(err, errlen, "out of frame mbufs");
	rc = -ENOMEM;
out:
	free(frame);
	free(vals);
	return rc;
}

static int
point_setup(struct point *x, char *err, size_t errlen)
{
	char name[RTE_RING_NAMESIZE];
	int socket = (int)rte_socket_id();
	unsigned int n_frames = x->window * (x->fanin + 2); /* worker 0 has three per chunk */
	uint32_t room = x->mtu + RTE_ETHER_HDR_LEN + RTE_ETHER_CRC_LEN;
	struct dp_config cfg;
	uint32_t job, epoch;
	json_t *t;
	int rc;

	instance++;
	snprintf(name, sizeof(name), "bdp_rx%u", instance);
	x->rx = rte_ring_create(name, RING_SIZE, socket, RING_F_SP_ENQ | RING_F_SC_DEQ);
	snprintf(name, sizeof(name), "bdp_tx%u", instance);
	x->tx = rte_ring_create(name, RING_SIZE, socket, RING_F_SP_ENQ | RING_F_SC_DEQ);
	if (x->rx == NULL || x->tx == NULL) {
		snprintf(err, errlen, "cannot create rings: %s", rte_strerror(rte_errno));
		return -ENOMEM;
	}
	snprintf(name, sizeof(name), "bdp_ring%u", instance);
	rc = rte_eth_from_rings(name, &x->rx, 1, &x->tx, 1, (unsigned int)socket);
	if (rc < 0) {
		snprintf(err, errlen, "rte_eth_from_rings: %s", rte_strerror(rte_errno));
		return -ENODEV;
	}
	x->port_id = (uint16_t)rc;
	x->port_made = true;
	snprintf(name, sizeof(name), "bdp_frames%u", instance);
	x->pool = rte_pktmbuf_pool_create(name, n_frames + 64, 0, 0,
					  (uint16_t)(room + RTE_PKTMBUF_HEADROOM), socket);
	x->dp = calloc(1, sizeof(*x->dp));
	if (x->pool == NULL || x->dp == NULL) {
		snprintf(err, errlen, "cannot create %u frames of %u bytes (give EAL more memory, "
			 "-m)", n_frames, room);
		return -ENOMEM;
	}
	dp_config_defaults(&cfg);
	cfg.prm.idle_spin = 0;
	cfg.prm.burst = (uint16_t)x->burst;
	cfg.prm.mtu = (uint16_t)x->mtu;
	cfg.prm.mbufs = x->slots + 4096; /* slots, queues, caches: the rings allocate none */
	cfg.n_lcores = 1;
	cfg.lcore_ids[0] = rte_get_main_lcore();
	cfg.n_ports = 1;
	cfg.port_ids[0] = x->port_id;
	cfg.addr[0].ipv4 = GW_IP;
	cfg.addr[0].prefix_len = 16;
	cfg.n_neigh = x->fanin;
	for (unsigned int w = 0; w < x->fanin; w++) {
		struct rte_ether_addr mac = { { 0x02, 0, 0, 0, 1, (uint8_t)(w + 1) } };

		cfg.neigh[w].ipv4 = WORKER_IP(w);
		cfg.neigh[w].mac = mac;
	}
	x->dp_up = true;
	rc = dp_setup(x->dp, &cfg, err, errlen);
	if (rc != 0)
		return rc;
	x->lc = x->dp->lcores[0];
	t = table_json(x);
	if (t == NULL) {
		snprintf(err, errlen, "cannot build the table");
		return -ENOMEM;
	}
	rc = dp_prepare(x->dp, t, &job, &epoch, err, errlen);
	json_decref(t);
	if (rc == 0)
		rc = dp_activate(x->dp, job, epoch, err, errlen);
	if (rc != 0)
		return rc;
	x->scalar = sum_kernels_get(SUM_ISA_SCALAR);
	return build_frames(x, err, errlen);
}

static void
free_frames(struct rte_mbuf **a, size_t n)
{
	for (size_t i = 0; a != NULL && i < n; i++)
		rte_pktmbuf_free(a[i]);
}

static void
point_teardown(struct point *x)
{
	struct rte_mbuf *m;
	size_t n = (size_t)x->window * x->fanin;

	if (x->dp_up)
		dp_teardown(x->dp); /* the slots drop their frames; the port is closed */
	if (x->port_made && (!x->dp_up || x->dp->n_ports == 0)) {
		rte_eth_dev_stop(x->port_id);
		rte_eth_dev_close(x->port_id);
	}
	while (x->tx != NULL && rte_ring_sc_dequeue(x->tx, (void **)&m) == 0)
		rte_pktmbuf_free(m);
	while (x->rx != NULL && rte_ring_sc_dequeue(x->rx, (void **)&m) == 0)
		; /* frames are freed below */
	for (int r = 0; r < 3; r++)
		free_frames(x->acc[r], x->window);
	for (size_t i = 0; x->shared != NULL && i < n; i++)
		rte_pktmbuf_free(x->shared[i]); /* NULL for worker 0 */
	rte_mempool_free(x->pool);
	rte_ring_free(x->rx);
	rte_ring_free(x->tx);
	for (int r = 0; r < 3; r++)
		free(x->acc[r]);
	free(x->shared);
	for (int r = 0; r < 3; r++)
		free(x->seq[r]);
	free(x->tmpl);
	free(x->seen);
	free(x->scratch);
	free(x->sink);
	free(x->pkt);
	free(x->dp);
}

/* --- Rounds ------------------------------------------------------------------------------- */

/* Check one RESULT copy of round `round` completely and count it in x->seen. */
static int
check_result(struct point *x, struct rte_mbuf *m, uint32_t round, char *err, size_t errlen)
{
	const uint8_t *f;
	struct wire_flow fl;
	struct wire_pkt p;
	enum wire_reason why;
	size_t off, ulen;
	unsigned int w;

	if (rte_pktmbuf_pkt_len(m) != x->frame_len) {
		snprintf(err, errlen, "a result copy of %u bytes, not %u", rte_pktmbuf_pkt_len(m),
			 x->frame_len);
		return -1;
	}
	f = rte_pktmbuf_read(m, 0, x->frame_len, x->pkt);
	if (f == NULL || wire_frame_parse(f, x->frame_len, &fl, &off, &ulen, &why) != 0 ||
	    wire_hdr_decode(f + off, ulen, &p, &why) != 0) {
		snprintf(err, errlen, "a result copy does not parse (%s)", wire_reason_str(why));
		return -1;
	}
	w = fl.dst_ip - WORKER_IP(0);
	if (w >= x->fanin || fl.dst_port != WORKER_PORT(w) || fl.src_ip != GW_IP ||
	    p.type != WIRE_TYPE_RESULT || p.job != JOB || p.epoch != EPOCH || p.tree != 0 ||
	    p.sender != GW_ID || p.origin != GW_ID || p.contrib != x->fanin ||
	    p.round != round || p.chunk >= x->window || p.count != x->elems) {
		snprintf(err, errlen, "a result copy has wrong headers (type %s, to %08x:%u, "
			 "round %u, chunk %u, contrib %u)", wire_type_str(p.type), fl.dst_ip,
			 fl.dst_port, p.round, p.chunk, p.contrib);
		return -1;
	}
	const void *payload = f + WIRE_FRAME_PAYLOAD_OFF;

	if (x->dtype == WIRE_DTYPE_FP32)
		memcpy(x->scratch, payload, (size_t)x->elems * sizeof(float));
	else if (x->dtype == WIRE_DTYPE_FP16)
		x->scalar->widen_f16(x->scratch, payload, x->elems);
	else
		x->scalar->widen_bf16(x->scratch, payload, x->elems);
	for (unsigned int i = 0; i < x->elems; i++)
		if (x->scratch[i] != (float)expected(x, p.chunk, i)) {
			snprintf(err, errlen, "round %u chunk %u element %u: %g, expected %d", round,
				 p.chunk, i, (double)x->scratch[i], expected(x, p.chunk, i));
			return -1;
		}
	x->seen[p.chunk * x->fanin + w]++;
	return 0;
}

/*
 * One round: refill (restore the accumulator frames, new round number, extra references),
 * then feed / poll / sink a burst at a time. With check, every result copy is inspected.
 */
static int
run_round(struct point *x, bool check, struct tally *t, char *err, size_t errlen)
{
	unsigned int W = x->window, F = x->fanin, n_all = W * F, pos = 0;
	uint32_t round = x->round + 1;
	int par = (int)(round % 3);
	struct rte_mbuf **seq = x->seq[par];
	struct rte_mbuf *out[2 * DP_BURST_MAX];
	uint64_t t0, t1, t2, t3;

	t0 = rte_rdtsc();
	for (unsigned int c = 0; c < W; c++) {
		struct rte_mbuf *m = x->acc[par][c];

		if (rte_mbuf_refcnt_read(m) != 1)
			goto held;
		memcpy(rte_pktmbuf_mtod(m, void *), x->tmpl + (size_t)c * x->frame_len,
		       x->frame_len);
	}
	for (unsigned int a = 0; a < n_all; a++) {
		if (rte_mbuf_refcnt_read(seq[a]) != 1)
			goto held;
		set_round(rte_pktmbuf_mtod(seq[a], uint8_t *), round);
		rte_mbuf_refcnt_set(seq[a], 2);
	}
	t->refill += rte_rdtsc() - t0;
	if (check)
		memset(x->seen, 0, n_all);
	while (pos < n_all) {
		unsigned int n = RTE_MIN(x->burst, n_all - pos), got, k;

		t0 = rte_rdtsc();
		k = rte_ring_sp_enqueue_bulk(x->rx, (void **)&seq[pos], n, NULL);
		t1 = rte_rdtsc();
		if (k != n) {
			snprintf(err, errlen, "the RX ring is full");
			return -1;
		}
		got = dp_worker_poll(x->lc);
		t2 = rte_rdtsc();
		while ((k = rte_ring_sc_dequeue_burst(x->tx, (void **)out, RTE_DIM(out), NULL)) != 0) {
			for (unsigned int i = 0; check && i < k; i++)
				if (check_result(x, out[i], round, err, errlen) != 0) {
					rte_pktmbuf_free_bulk(out, k);
					return -1;
				}
			rte_pktmbuf_free_bulk(out, k);
			t->pkts_out += k;
		}
		t3 = rte_rdtsc();
		t->feed += t1 - t0;
		t->worker += t2 - t1;
		t->sink += t3 - t2;
		if (got != n) {
			snprintf(err, errlen, "the worker received %u of %u packets", got, n);
			return -1;
		}
		pos += n;
		t->pkts_in += n;
	}
	t->chunks += W;
	t->rounds++;
	x->round = round;
	for (unsigned int a = 0; check && a < n_all; a++)
		if (x->seen[a] != 1) {
			snprintf(err, errlen, "round %u chunk %u: worker %u got %u result copies",
				 round, a / F, a % F, x->seen[a]);
			return -1;
		}
	return 0;
held:
	snprintf(err, errlen, "round %u: a frame is still held by the dataplane (a slot "
		 "kept it or a copy was not sent)", round);
	return -1;
}

static uint64_t
drops_total(const struct dp_lcore *lc)
{
	uint64_t n = 0;

	for (int i = 0; i < WIRE_REASON_COUNT_MAX; i++)
		n += lc->drops[i];
	return n;
}

/* Rounds for `seconds`; the lcore's counters must account for every packet. */
static int
measure_dp(struct point *x, double seconds, struct tally *t, char *err, size_t errlen)
{
	static const enum dp_ctr zero[] = {
		DP_CTR_TX_DROPPED, DP_CTR_NOT_FOR_US, DP_CTR_NO_NEIGHBOUR, DP_CTR_NO_MBUF,
		DP_CTR_BAD_FRAME, DP_CTR_BAD_HEADER,
	};
	uint64_t before[DP_CTR_COUNT], drops = drops_total(x->lc);
	uint64_t limit = (uint64_t)(seconds * (double)rte_get_tsc_hz()), start;

	memcpy(before, x->lc->ctr, sizeof(before));
	memset(t, 0, sizeof(*t));
	start = rte_rdtsc();
	do {
		if (run_round(x, false, t, err, errlen) != 0)
			return -1;
	} while (rte_rdtsc() - start < limit);
	t->wall = rte_rdtsc() - start;
	const uint64_t *now = x->lc->ctr;

	for (size_t i = 0; i < RTE_DIM(zero); i++)
		if (now[zero[i]] != before[zero[i]]) {
			snprintf(err, errlen, "counter %d moved by %" PRIu64, (int)zero[i],
				 now[zero[i]] - before[zero[i]]);
			return -1;
		}
	if (drops_total(x->lc) != drops ||
	    now[DP_CTR_CHUNKS_COMPLETED] - before[DP_CTR_CHUNKS_COMPLETED] != t->chunks ||
	    now[DP_CTR_CONTRIBS] - before[DP_CTR_CONTRIBS] != t->pkts_in ||
	    now[DP_CTR_RESULTS_SENT] - before[DP_CTR_RESULTS_SENT] != t->pkts_out ||
	    t->pkts_out != t->chunks * x->fanin) {
		snprintf(err, errlen, "counters disagree: %" PRIu64 " chunks completed of %" PRIu64
			 ", %" PRIu64 " drops, %" PRIu64 " copies out of %" PRIu64,
			 now[DP_CTR_CHUNKS_COMPLETED] - before[DP_CTR_CHUNKS_COMPLETED], t->chunks,
			 drops_total(x->lc) - drops, t->pkts_out, t->chunks * x->fanin);
		return -1;
	}
	return 0;
}

/* Add the payload of every frame of a burst into x->sink with the dataplane's kernels:
 * the least a gateway that sums must do with a packet beyond forwarding it. */
static void
sum_burst(struct point *x, struct rte_mbuf **pkts, unsigned int n)
{
	const struct sum_kernels *k = x->lc->k;

	for (unsigned int i = 0; i < n; i++) {
		const void *pl = rte_pktmbuf_mtod_offset(pkts[i], const void *,
							 WIRE_FRAME_PAYLOAD_OFF);

		if (x->dtype == WIRE_DTYPE_FP32)
			k->sum_f32(x->sink, pl, x->elems);
		else if (x->dtype == WIRE_DTYPE_FP16)
			k->widen_add_f16(x->sink, pl, x->elems);
		else
			k->widen_add_bf16(x->sink, pl, x->elems);
	}
}

/* io-forward of the same frames on the same port: rx_burst -> tx_burst, untouched, or
 * with `sum` each payload added into one accumulator in between (sum_burst()). */
static int
measure_io(struct point *x, bool sum, double seconds, struct tally *t, char *err, size_t errlen)
{
	struct rte_mbuf **all = x->seq[0], *pkts[DP_BURST_MAX], *out[2 * DP_BURST_MAX];
	unsigned int n_all = x->window * x->fanin, pos = 0;
	uint64_t limit = (uint64_t)(seconds * (double)rte_get_tsc_hz()), start, t0, t1, t2, t3;

	memset(t, 0, sizeof(*t));
	start = rte_rdtsc();
	do {
		unsigned int n = RTE_MIN(x->burst, n_all - pos), k;
		uint16_t got, sent;

		t0 = rte_rdtsc();
		k = rte_ring_sp_enqueue_bulk(x->rx, (void **)&all[pos], n, NULL);
		t1 = rte_rdtsc();
		if (k != n) {
			snprintf(err, errlen, "the RX ring is full");
			return -1;
		}
		got = rte_eth_rx_burst(x->port_id, 0, pkts, (uint16_t)x->burst);
		if (sum)
			sum_burst(x, pkts, got);
		sent = rte_eth_tx_burst(x->port_id, 0, pkts, got);
		t2 = rte_rdtsc();
		while ((k = rte_ring_sc_dequeue_burst(x->tx, (void **)out, RTE_DIM(out), NULL)) != 0)
			t->pkts_out += k;
		t3 = rte_rdtsc();
		t->feed += t1 - t0;
		t->worker += t2 - t1;
		t->sink += t3 - t2;
		if (got != n || sent != got) {
			snprintf(err, errlen, "io-forward moved %u of %u packets", sent, n);
			return -1;
		}
		t->pkts_in += n;
		pos = (pos + n) % n_all;
	} while (t3 - start < limit);
	t->wall = rte_rdtsc() - start;
	return 0;
}

#define NULL_NAME "net_null_bdp"

static int
null_setup(struct null_port *np, char *err, size_t errlen)
{
	int socket = (int)rte_socket_id();
	struct rte_eth_conf conf = { 0 };
	int rc;

	if (rte_vdev_init(NULL_NAME, "size=64,copy=0") != 0 ||
	    rte_eth_dev_get_port_by_name(NULL_NAME, &np->port_id) != 0) {
		snprintf(err, errlen, "cannot create the %s port", NULL_NAME);
		return -ENODEV;
	}
	np->up = true;
	np->pool = rte_pktmbuf_pool_create("bdp_null", 4095, 256, 0, RTE_MBUF_DEFAULT_BUF_SIZE,
					   socket);
	if (np->pool == NULL) {
		snprintf(err, errlen, "cannot create the net_null pool");
		return -ENOMEM;
	}
	rc = rte_eth_dev_configure(np->port_id, 1, 1, &conf);
	if (rc == 0)
		rc = rte_eth_rx_queue_setup(np->port_id, 0, 1024, (unsigned int)socket, NULL,
					    np->pool);
	if (rc == 0)
		rc = rte_eth_tx_queue_setup(np->port_id, 0, 1024, (unsigned int)socket, NULL);
	if (rc == 0)
		rc = rte_eth_dev_start(np->port_id);
	if (rc != 0)
		snprintf(err, errlen, "%s: %s", NULL_NAME, rte_strerror(-rc));
	return rc;
}

static void
null_teardown(struct null_port *np)
{
	if (np->up) {
		rte_eth_dev_stop(np->port_id);
		rte_eth_dev_close(np->port_id);
		rte_vdev_uninit(NULL_NAME);
	}
	rte_mempool_free(np->pool);
}

/* io-forward on the null port: rx_burst (allocates) -> tx_burst (frees). */
static void
measure_null(const struct null_port *np, unsigned int burst, double seconds, struct tally *t)
{
	struct rte_mbuf *pkts[DP_BURST_MAX];
	uint64_t limit = (uint64_t)(seconds * (double)rte_get_tsc_hz()), start, t0, t1;

	memset(t, 0, sizeof(*t));
	start = rte_rdtsc();
	do {
		uint16_t got, sent;

		t0 = rte_rdtsc();
		got = rte_eth_rx_burst(np->port_id, 0, pkts, (uint16_t)burst);
		sent = rte_eth_tx_burst(np->port_id, 0, pkts, got);
		t1 = rte_rdtsc();
		if (sent < got)
			rte_pktmbuf_free_bulk(&pkts[sent], got - sent);
		t->worker += t1 - t0;
		t->pkts_in += sent;
	} while (t1 - start < limit);
	t->wall = rte_rdtsc() - start;
}

/* --- Points ------------------------------------------------------------------------------- */

static double
per_ns(uint64_t cycles, uint64_t n)
{
	return n == 0 ? 0 : cyc_s(cycles) * 1e9 / (double)n;
}

static double
mpps(uint64_t n, uint64_t cycles)
{
	return cycles == 0 ? 0 : (double)n / cyc_s(cycles) / 1e6;
}

static int
run_point(const struct opts *o, const struct null_port *np, unsigned int payload,
	  unsigned int fanin, enum wire_dtype dtype, struct result *r)
{
	enum {
		M_IN, M_OUT, M_NS, M_IO, M_IO_NS, M_SINK, M_FEED, M_REFILL, M_E2E, M_IO_E2E,
		M_FREE, M_NULL, M_IOSUM, M_N
	};
	double v[M_N][REPEAT_MAX];
	struct point x = {
		.payload = payload,
		.fanin = fanin,
		.window = o->window,
		.dtype = dtype,
		.udp_csum = o->udp_csum,
		.worker_order = o->worker_order,
		.burst = o->burst,
	};
	char err[TABLE_ERR_MAX] = "";
	struct tally t, tio, tsum, tnull, scratch;
	int rc;

	x.slots = (unsigned int)rte_align32pow2(x.window);
	x.elems = payload / wire_dtype_size(dtype);
	x.frame_len = WIRE_FRAME_PAYLOAD_OFF + payload;
	x.mtu = o->mtu != 0 ? o->mtu : payload + WIRE_MTU_OVERHEAD <= 1500 ? 1500 : 9000;
	if (payload + WIRE_MTU_OVERHEAD > x.mtu) {
		cli_error(PROG, "--payload %u needs an MTU of %u, not --mtu %u", payload,
			  payload + WIRE_MTU_OVERHEAD, x.mtu);
		return -1;
	}
	rc = point_setup(&x, err, sizeof(err));
	for (unsigned int rep = 0; rc == 0 && rep < o->repeat; rep++) {
		memset(&scratch, 0, sizeof(scratch));
		rc = run_round(&x, true, &scratch, err, sizeof(err));
		if (rc == 0)
			rc = run_round(&x, true, &scratch, err, sizeof(err));
		if (rc == 0)
			rc = measure_dp(&x, o->seconds, &t, err, sizeof(err));
		if (rc == 0)
			rc = run_round(&x, true, &scratch, err, sizeof(err));
		if (rc == 0)
			rc = run_round(&x, true, &scratch, err, sizeof(err));
		if (rc == 0)
			rc = measure_io(&x, false, o->seconds, &tio, err, sizeof(err));
		if (rc == 0)
			rc = measure_io(&x, true, o->seconds, &tsum, err, sizeof(err));
		if (rc != 0)
			break;
		measure_null(np, o->burst, o->seconds, &tnull);
		v[M_IN][rep] = mpps(t.pkts_in, t.worker);
		v[M_OUT][rep] = mpps(t.pkts_out, t.worker);
		v[M_NS][rep] = per_ns(t.worker, t.pkts_in);
		v[M_IO][rep] = mpps(tio.pkts_in, tio.worker);
		v[M_IO_NS][rep] = per_ns(tio.worker, tio.pkts_in);
		v[M_SINK][rep] = per_ns(t.sink, t.pkts_out);
		v[M_FEED][rep] = per_ns(t.feed, t.pkts_in);
		v[M_REFILL][rep] = per_ns(t.refill, t.chunks);
		v[M_E2E][rep] = mpps(t.pkts_in, t.wall);
		v[M_IO_E2E][rep] = mpps(tio.pkts_in, tio.wall);
		v[M_FREE][rep] = mpps(t.pkts_in, t.worker + t.sink);
		v[M_NULL][rep] = mpps(tnull.pkts_in, tnull.worker);
		v[M_IOSUM][rep] = per_ns(tsum.worker, tsum.pkts_in);
		fprintf(stderr, "%s: %u B x %u %s, %u/%u: %.2f Mpps in (%.1f Gbit/s summed), "
			"io-forward ring %.2f Mpps, null %.2f Mpps; %" PRIu64 " rounds\n", PROG,
			payload, fanin, wire_dtype_str(dtype), rep + 1, o->repeat, v[M_IN][rep],
			v[M_IN][rep] * payload * 8 / 1e3, v[M_IO][rep], v[M_NULL][rep], t.rounds);
	}
	if (rc == 0) {
		r->payload = payload;
		r->fanin = fanin;
		r->dtype = dtype;
		r->kernels = x.lc->k->name;
		r->mtu = x.mtu;
		r->mpps_in = bench_median(v[M_IN], o->repeat);
		r->mpps_out = bench_median(v[M_OUT], o->repeat);
		r->gbps = r->mpps_in * payload * 8 / 1e3;
		r->ns_pkt = bench_median(v[M_NS], o->repeat);
		r->io_mpps = bench_median(v[M_IO], o->repeat);
		r->io_ns_pkt = bench_median(v[M_IO_NS], o->repeat);
		r->ratio = r->mpps_in / r->io_mpps;
		r->sink_ns_out = bench_median(v[M_SINK], o->repeat);
		r->feed_ns_in = bench_median(v[M_FEED], o->repeat);
		r->refill_ns_chunk = bench_median(v[M_REFILL], o->repeat);
		r->e2e_mpps_in = bench_median(v[M_E2E], o->repeat);
		r->io_e2e_mpps = bench_median(v[M_IO_E2E], o->repeat);
		r->mpps_free = bench_median(v[M_FREE], o->repeat);
		r->null_mpps = bench_median(v[M_NULL], o->repeat);
		r->ratio_null = r->mpps_free / r->null_mpps;
		r->iosum_ns_pkt = bench_median(v[M_IOSUM], o->repeat);
	} else {
		cli_error(PROG, "%u B x %u %s: %s", payload, fanin, wire_dtype_str(dtype), err);
	}
	point_teardown(&x);
	return rc == 0 ? 0 : -1;
}

/* --- Output ------------------------------------------------------------------------------- */

static void
print_table(const struct opts *o, const struct result *res, size_t n)
{
	printf("dataplane worker loop (dp_worker_poll) vs io-forward, one core; kernels %s; "
	       "window %u chunks, burst %u, %s order, UDP checksums %s; median of %u x %g s\n",
	       n > 0 ? res[0].kernels : "?", o->window, o->burst,
	       o->worker_order ? "worker" : "chunk", o->udp_csum ? "on" : "off", o->repeat,
	       o->seconds);
	printf("%7s %6s %5s %5s | %7s %7s %6s %6s | %8s %5s | %7s %7s %5s | %6s | %8s %7s\n",
	       "payload", "fan-in", "dtype", "mtu", "Mpps in", "Gbit/s", "ns/pkt", "free",
	       "ring io", "ratio", "+free", "null io", "ratio", "io+sum", "refill", "e2e");
	for (size_t i = 0; i < n; i++) {
		const struct result *r = &res[i];

		printf("%7u %6u %5s %5u | %7.2f %7.1f %6.1f %6.1f | %8.1f %5.3f | %7.2f %7.2f "
		       "%5.2f | %6.1f | %8.1f %7.2f\n", r->payload, r->fanin,
		       wire_dtype_str(r->dtype), r->mtu, r->mpps_in, r->gbps, r->ns_pkt,
		       r->sink_ns_out, r->io_mpps, r->ratio, r->mpps_free, r->null_mpps,
		       r->ratio_null, r->iosum_ns_pkt, r->refill_ns_chunk, r->e2e_mpps_in);
	}
	printf("Mpps in (= out), Gbit/s of input payload summed and ns/pkt: cycles inside "
	       "dp_worker_poll. free: ns per copy sent to\nfree it (TX ring drain + "
	       "rte_pktmbuf_free). ring io: Mpps of rx_burst -> tx_burst on the same port and "
	       "frames; ratio: Mpps in / ring io.\n+free: Mpps in counting the free too; null "
	       "io: io-forward on a net_null port (RX allocates, TX frees); ratio: +free / null "
	       "io.\nio+sum: ns per packet of ring io-forward that also adds each payload into "
	       "one accumulator (the SIMD sum alone, from where the frames are).\nrefill: ns per chunk to restore the accumulator frame and renumber the round "
	       "(outside the rates); e2e: Mpps in of the\nwhole loop on one core (feed, worker, "
	       "free, refill).\n");
}

static void
print_json(const struct opts *o, const struct result *res, size_t n)
{
	printf("{\n  \"window\": %u,\n  \"burst\": %u,\n  \"order\": \"%s\",\n"
	       "  \"udp_checksum\": %s,\n  \"repeat\": %u,\n  \"seconds\": %g,\n"
	       "  \"kernels\": \"%s\",\n  \"points\": [", o->window, o->burst,
	       o->worker_order ? "worker" : "chunk", o->udp_csum ? "true" : "false", o->repeat,
	       o->seconds, n > 0 ? res[0].kernels : "");
	for (size_t i = 0; i < n; i++) {
		const struct result *r = &res[i];

		printf("%s\n    {\"payload\": %u, \"fanin\": %u, \"dtype\": \"%s\", \"mtu\": %u, "
		       "\"mpps_in\": %.3f, \"mpps_out\": %.3f, \"gbps_summed\": %.2f, "
		       "\"ns_per_pkt\": %.2f, \"free_ns_per_out\": %.2f, \"mpps_in_with_free\": "
		       "%.3f, \"ring_io_mpps\": %.3f, \"ring_io_ns_per_pkt\": %.2f, \"ratio\": %.4f, "
		       "\"null_io_mpps\": %.3f, \"ratio_null\": %.3f, \"io_sum_ns_per_pkt\": %.2f, "
		       "\"feed_ns_per_in\": %.2f, "
		       "\"refill_ns_per_chunk\": %.2f, \"e2e_mpps_in\": %.3f, "
		       "\"ring_io_e2e_mpps\": %.3f}",
		       i == 0 ? "" : ",", r->payload, r->fanin, wire_dtype_str(r->dtype), r->mtu,
		       r->mpps_in, r->mpps_out, r->gbps, r->ns_pkt, r->sink_ns_out, r->mpps_free,
		       r->io_mpps, r->io_ns_pkt, r->ratio, r->null_mpps, r->ratio_null,
		       r->iosum_ns_pkt, r->feed_ns_in, r->refill_ns_chunk, r->e2e_mpps_in, r->io_e2e_mpps);
	}
	printf("\n  ]\n}\n");
}

/* --- Options ------------------------------------------------------------------------------ */

static void
usage(FILE *f)
{
	fprintf(f,
		"Usage: " PROG " [EAL options] -- [OPTIONS]\n"
		"\n"
		"The dataplane's worker loop on one core through a net_ring port, against\n"
		"io-forwarding of the same packets on the same port: a root gateway summing\n"
		"F contributions per chunk and sending the result to its F workers. For example:\n"
		"  " PROG " --no-huge -m 1024 --no-pci --no-shconf --file-prefix=bdp -l 0 --\n"
		"\n"
		"  --payload LIST   payload bytes per packet (256 .. 8192, KiB suffix allowed)\n"
		"                                                  [256,1024,4096,8192]\n"
		"  --fanin LIST     contributions per chunk, 1 .. 64          [2,4,8,16]\n"
		"  --dtype LIST     fp32, fp16, bf16                           [fp32]\n"
		"  --seconds S      measured time per repetition and side      [1]\n"
		"  --repeat N       repetitions per point, the median is shown [3]\n"
		"  --window N       chunks per round (in flight), 1 .. 65536   [128]\n"
		"  --burst N        packets per RX burst, 1 .. %d              [32]\n"
		"  --mtu N          IP MTU (default: 1500 if the chunk fits, else 9000)\n"
		"  --order chunk|worker  feed chunk by chunk (workers in lockstep) or worker by\n"
		"                   worker (every chunk of the round open at once)  [chunk]\n"
		"  --udp-csum       contributions carry UDP checksums (verified in software)\n"
		"  --quick          1024,4096 B x 2,8, 0.2 s, one repetition\n"
		"  --json           JSON on stdout instead of the table\n"
		"  -h, --help\n"
		"Progress on stderr. Exit status 0, 1 if a point failed its checks, 2 on bad options.\n",
		DP_BURST_MAX);
}

static int
parse_list(const char *opt, const char *s, bool bytes, unsigned int min, unsigned int max,
	   unsigned int *out, unsigned int *n)
{
	char buf[256], *save = NULL, *tok;

	if (strlen(s) >= sizeof(buf)) {
		cli_error(PROG, "--%s: list too long", opt);
		return -1;
	}
	strcpy(buf, s);
	*n = 0;
	for (tok = strtok_r(buf, ",", &save); tok != NULL; tok = strtok_r(NULL, ",", &save)) {
		uint64_t v;
		char name[32];

		snprintf(name, sizeof(name), "--%s", opt);
		if (*n == LIST_MAX) {
			cli_error(PROG, "--%s: at most %d values", opt, LIST_MAX);
			return -1;
		}
		if (bytes ? cli_bytes(PROG, opt, tok, min, &v) : cli_uint(PROG, name, tok, min, max,
									  &v))
			return -1;
		if (v > max) {
			cli_error(PROG, "--%s: %s is above %u", opt, tok, max);
			return -1;
		}
		out[(*n)++] = (unsigned int)v;
	}
	if (*n == 0) {
		cli_error(PROG, "--%s: empty list", opt);
		return -1;
	}
	return 0;
}

static int
parse_opts(int argc, char **argv, struct opts *o)
{
	static const struct option longopts[] = {
		{"payload", required_argument, NULL, 'p'},
		{"fanin", required_argument, NULL, 'f'},
		{"dtype", required_argument, NULL, 'd'},
		{"seconds", required_argument, NULL, 's'},
		{"repeat", required_argument, NULL, 'r'},
		{"window", required_argument, NULL, 'w'},
		{"burst", required_argument, NULL, 'b'},
		{"mtu", required_argument, NULL, 'm'},
		{"order", required_argument, NULL, 'o'},
		{"udp-csum", no_argument, NULL, 'u'},
		{"quick", no_argument, NULL, 'q'},
		{"json", no_argument, NULL, 'j'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	bool quick = false, set_p = false, set_f = false, set_s = false, set_r = false;
	uint64_t v;
	int c;

	memset(o, 0, sizeof(*o));
	o->dtype[0] = WIRE_DTYPE_FP32;
	o->n_dtype = 1;
	o->seconds = 1;
	o->repeat = 3;
	o->window = 128;
	o->burst = 32;
	optind = 1;
	while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		switch (c) {
		case 'p':
			if (parse_list("payload", optarg, true, 64, TABLE_CHUNK_BYTES_MAX, o->payload,
				       &o->n_payload) != 0)
				return -1;
			for (unsigned int i = 0; i < o->n_payload; i++)
				if (o->payload[i] % 64 != 0) {
					cli_error(PROG, "--payload: %u is not a multiple of 64 bytes",
						  o->payload[i]);
					return -1;
				}
			set_p = true;
			break;
		case 'f':
			if (parse_list("fanin", optarg, false, 1, 64, o->fanin, &o->n_fanin) != 0)
				return -1;
			set_f = true;
			break;
		case 'd': {
			char buf[64], *save = NULL, *tok;

			snprintf(buf, sizeof(buf), "%s", optarg);
			o->n_dtype = 0;
			for (tok = strtok_r(buf, ",", &save); tok != NULL;
			     tok = strtok_r(NULL, ",", &save)) {
				int d = table_dtype_from_name(tok);

				if (d <= 0 || wire_dtype_is_mx((enum wire_dtype)d) ||
				    o->n_dtype == 3) {
					cli_error(PROG, "--dtype: '%s' is not fp32, fp16 or bf16", tok);
					return -1;
				}
				o->dtype[o->n_dtype++] = (enum wire_dtype)d;
			}
			if (o->n_dtype == 0) {
				cli_error(PROG, "--dtype: empty list");
				return -1;
			}
			break;
		}
		case 's':
			if (cli_double(PROG, "seconds", optarg, 0.01, 3600, &o->seconds) != 0)
				return -1;
			set_s = true;
			break;
		case 'r':
			if (cli_uint(PROG, "--repeat", optarg, 1, REPEAT_MAX, &v) != 0)
				return -1;
			o->repeat = (unsigned int)v;
			set_r = true;
			break;
		case 'w':
			if (cli_uint(PROG, "--window", optarg, 1, TABLE_SLOTS_MAX, &v) != 0)
				return -1;
			o->window = (unsigned int)v;
			break;
		case 'b':
			if (cli_uint(PROG, "--burst", optarg, 1, DP_BURST_MAX, &v) != 0)
				return -1;
			o->burst = (unsigned int)v;
			break;
		case 'm':
			if (cli_uint(PROG, "--mtu", optarg, WIRE_MTU_MIN, WIRE_MTU_MAX, &v) != 0)
				return -1;
			o->mtu = (unsigned int)v;
			break;
		case 'o':
			if (strcmp(optarg, "chunk") != 0 && strcmp(optarg, "worker") != 0) {
				cli_error(PROG, "--order: '%s' is not chunk or worker", optarg);
				return -1;
			}
			o->worker_order = strcmp(optarg, "worker") == 0;
			break;
		case 'u':
			o->udp_csum = true;
			break;
		case 'q':
			quick = true;
			break;
		case 'j':
			o->json = true;
			break;
		case 'h':
			usage(stdout);
			exit(0);
		default:
			usage(stderr);
			return -1;
		}
	}
	if (optind < argc) {
		cli_error(PROG, "unexpected argument '%s'", argv[optind]);
		return -1;
	}
	if (!set_p) {
		static const unsigned int def[] = { 256, 1024, 4096, 8192 }, q[] = { 1024, 4096 };

		o->n_payload = quick ? 2 : 4;
		memcpy(o->payload, quick ? q : def, o->n_payload * sizeof(unsigned int));
	}
	if (!set_f) {
		static const unsigned int def[] = { 2, 4, 8, 16 }, q[] = { 2, 8 };

		o->n_fanin = quick ? 2 : 4;
		memcpy(o->fanin, quick ? q : def, o->n_fanin * sizeof(unsigned int));
	}
	if (quick && !set_s)
		o->seconds = 0.2;
	if (quick && !set_r)
		o->repeat = 1;
	return 0;
}

int
main(int argc, char **argv)
{
	struct result res[LIST_MAX * LIST_MAX * 3];
	size_t n_res = 0;
	struct null_port np = { 0 };
	char err[256];
	struct opts o;
	int n, failed = 0;

	rte_openlog_stream(stderr); /* stdout is for the table */
	n = rte_eal_init(argc, argv);
	if (n < 0) {
		cli_error(PROG, "cannot initialise EAL: %s", rte_strerror(rte_errno));
		return CLI_EXIT_USAGE;
	}
	argc -= n;
	argv += n;
	if (parse_opts(argc, argv, &o) != 0) {
		rte_eal_cleanup();
		return CLI_EXIT_USAGE;
	}
	rte_log_set_level(dp_logtype, RTE_LOG_WARNING);
	if (null_setup(&np, err, sizeof(err)) != 0) {
		cli_error(PROG, "%s", err);
		null_teardown(&np);
		rte_eal_cleanup();
		return CLI_EXIT_FAIL;
	}
	for (unsigned int d = 0; d < o.n_dtype; d++)
		for (unsigned int p = 0; p < o.n_payload; p++)
			for (unsigned int f = 0; f < o.n_fanin; f++) {
				if (o.payload[p] % wire_dtype_size(o.dtype[d]) != 0 ||
				    run_point(&o, &np, o.payload[p], o.fanin[f], o.dtype[d],
					      &res[n_res]) != 0) {
					failed++;
					continue;
				}
				n_res++;
			}
	if (o.json)
		print_json(&o, res, n_res);
	else
		print_table(&o, res, n_res);
	null_teardown(&np);
	rte_eal_cleanup();
	return failed != 0 ? CLI_EXIT_FAIL : 0;
}
