/* SPDX-License-Identifier: BSD-3-Clause
 *
 * georeduce-bench-dataplane: one point's set-up and teardown (a net_ring port, the
 * dataplane with a root gateway's table of F local workers, the frames every worker sends)
 * and the check of a RESULT copy against the exact sum of the integer-valued inputs.
 * The main lcore, outside the measured intervals (bench_dataplane.c measures).
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>
#include <rte_ethdev.h>
#include <rte_eth_ring.h>
#include <rte_lcore.h>
#include <rte_mbuf.h>
#include <rte_ring.h>

#include "bench_dataplane.h"
#include "bench_dataplane_point.h"
#include "bench_dp.h"
#include "dp.h"
#include "slowpath/slowpath.h"
#include "sum.h"
#include "table.h"
#include "wire.h"

#define RING_SIZE 1024
#define GW_ID 1
#define GW_IP 0x0a000001u                          /* 10.0.0.1/16: the gateway */
#define WORKER_IP(w) (0x0a000101u + (uint32_t)(w)) /* 10.0.1.1 ...: worker w */
#define WORKER_ID(w) (101 + (w))
#define WORKER_PORT(w) (5000 + (w))
#define JOB 1
#define EPOCH 1

static unsigned int instance;

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
	json_t *tree = json_pack("{s:i, s:s, s:n, s:[], s:o, s:i, s:i, s:i, s:i, s:f, s:i}", "id",
				 0, "role", "root", "parent", "children", "workers", workers,
				 "expected", (int)x->fanin, "subtree_workers", (int)x->fanin,
				 "chunk_first", 0, "chunk_count", (int)x->window, "rate_gbps",
				 100.0, "slots", (int)x->slots);

	return json_pack("{s:s, s:i, s:i, s:{s:i, s:s, s:i, s:i}, s:s, s:I, s:i, "
			 "s:{s:i, s:i, s:i, s:i}, s:[o]}",
			 "format", TABLE_FORMAT, "job", JOB, "epoch", EPOCH, "gateway", "id", GW_ID,
			 "ipv4", table_ipv4_format(GW_IP, ip), "base_port", WIRE_PORT_BASE_DEFAULT,
			 "ports", WIRE_PORT_COUNT_DEFAULT, "dtype", wire_dtype_str(x->dtype),
			 "elements", (json_int_t)x->window * x->elems, "chunk_elements",
			 (int)x->elems, "limits", "max_trees", 1, "max_children", 1, "max_workers",
			 (int)x->fanin, "max_slots", (int)x->slots, "trees", tree);
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
		.src_mac = {0x02, 0, 0, 0, 1, (uint8_t)(w + 1)},
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
	    x->seq[2] == NULL || x->tmpl == NULL || x->seen == NULL || x->scratch == NULL ||
	    x->sink == NULL || x->pkt == NULL) {
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

int
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
		snprintf(err, errlen,
			 "cannot create %u frames of %u bytes (give EAL more memory, "
			 "-m)",
			 n_frames, room);
		return -ENOMEM;
	}
	dp_config_defaults(&cfg);
	cfg.prm.idle_spin = 0;
	cfg.prm.burst = (uint16_t)x->burst;
	cfg.prm.mtu = (uint16_t)x->mtu;
	cfg.prm.mbufs = x->slots + 4096; /* slots, queues, caches: the rings allocate none */
	bench_dp_one_port(&cfg, rte_get_main_lcore(), x->port_id, GW_IP);
	cfg.n_neigh = x->fanin;
	for (unsigned int w = 0; w < x->fanin; w++) {
		struct rte_ether_addr mac = {{0x02, 0, 0, 0, 1, (uint8_t)(w + 1)}};

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
	rc = dp_prepare(x->dp, t, 0, &job, &epoch, err, errlen);
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

void
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

/* Check one RESULT copy of round `round` completely and count it in x->seen. */
int
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
	    p.sender != GW_ID || p.origin != GW_ID || p.contrib != x->fanin || p.round != round ||
	    p.chunk >= x->window || p.count != x->elems) {
		snprintf(err, errlen,
			 "a result copy has wrong headers (type %s, to %08x:%u, "
			 "round %u, chunk %u, contrib %u)",
			 wire_type_str(p.type), fl.dst_ip, fl.dst_port, p.round, p.chunk,
			 p.contrib);
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
			snprintf(err, errlen, "round %u chunk %u element %u: %g, expected %d",
				 round, p.chunk, i, (double)x->scratch[i], expected(x, p.chunk, i));
			return -1;
		}
	x->seen[p.chunk * x->fanin + w]++;
	return 0;
}
