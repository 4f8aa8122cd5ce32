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
 *
 * This file: the rounds and the measurements, the points and the report. A point's set-up
 * (ports, dataplane, frames) and the check of its RESULT copies are in
 * bench_dataplane_point.c, the options in bench_dataplane_opts.c. One thread, the main
 * lcore.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rte_bus_vdev.h>
#include <rte_cycles.h>
#include <rte_eal.h>
#include <rte_ethdev.h>
#include <rte_lcore.h>
#include <rte_log.h>
#include <rte_mbuf.h>
#include <rte_ring.h>

#include "bench_dataplane.h"
#include "bench_dataplane_opts.h"
#include "bench_dataplane_point.h"
#include "bench_util.h"
#include "bytes.h"
#include "cli.h"
#include "dp.h"
#include "slowpath/slowpath.h"
#include "sum.h"
#include "table.h"
#include "wire.h"

#define OFF_ROUND (WIRE_FRAME_HDR_OFF + 24) /* round in the frame */
#define OFF_UDP_CSUM (WIRE_ETH_LEN + WIRE_IPV4_LEN + 6)

/* Cycles and packets of one measurement. */
struct tally {
	uint64_t worker, feed, sink, refill, wall; /* TSC cycles */
	uint64_t pkts_in, pkts_out, chunks, rounds;
};

struct result {
	unsigned int payload, fanin;
	enum wire_dtype dtype;
	const char *kernels;
	unsigned int mtu;
	double mpps_in, mpps_out, gbps, io_mpps, ratio;
	double ns_pkt, io_ns_pkt, sink_ns_out, feed_ns_in, refill_ns_chunk;
	double e2e_mpps_in, io_e2e_mpps;
	double mpps_free;             /* with the free of the copies sent (a NIC's TX does it) */
	double null_mpps, ratio_null; /* io-forward on a net_null port; mpps_free / null_mpps */
	double iosum_ns_pkt;          /* ring io-forward with each payload summed */
};

/* A net_null port: io-forward on it allocates on RX and frees on TX, as testpmd measures
 * a NIC-less forwarder. */
struct null_port {
	uint16_t port_id;
	bool up;
	struct rte_mempool *pool;
};

static double
cyc_s(uint64_t cycles)
{
	return (double)cycles / (double)rte_get_tsc_hz();
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

	s += (uint16_t) ~(old >> 16) + (uint16_t) ~(old & 0xffff) + (round >> 16) +
	     (round & 0xffff);
	while (s >> 16)
		s = (s & 0xffff) + (s >> 16);
	hc = (uint16_t)~s;
	if (hc == 0)
		hc = 0xffff;
	frame[OFF_UDP_CSUM] = (uint8_t)(hc >> 8);
	frame[OFF_UDP_CSUM + 1] = (uint8_t)hc;
}

/* --- Rounds ------------------------------------------------------------------------------- */

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
		while ((k = rte_ring_sc_dequeue_burst(x->tx, (void **)out, RTE_DIM(out), NULL)) !=
		       0) {
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
	snprintf(err, errlen,
		 "round %u: a frame is still held by the dataplane (a slot "
		 "kept it or a copy was not sent)",
		 round);
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
		DP_CTR_TX_DROPPED, DP_CTR_NOT_FOR_US, DP_CTR_NO_NEIGHBOUR,
		DP_CTR_NO_MBUF,    DP_CTR_BAD_FRAME,  DP_CTR_BAD_HEADER,
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
		snprintf(err, errlen,
			 "counters disagree: %" PRIu64 " chunks completed of %" PRIu64 ", %" PRIu64
			 " drops, %" PRIu64 " copies out of %" PRIu64,
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
		const void *pl =
			rte_pktmbuf_mtod_offset(pkts[i], const void *, WIRE_FRAME_PAYLOAD_OFF);

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
		while ((k = rte_ring_sc_dequeue_burst(x->tx, (void **)out, RTE_DIM(out), NULL)) !=
		       0)
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
	struct rte_eth_conf conf = {0};
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
		M_IN,
		M_OUT,
		M_NS,
		M_IO,
		M_IO_NS,
		M_SINK,
		M_FEED,
		M_REFILL,
		M_E2E,
		M_IO_E2E,
		M_FREE,
		M_NULL,
		M_IOSUM,
		M_N
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
		fprintf(stderr,
			"%s: %u B x %u %s, %u/%u: %.2f Mpps in (%.1f Gbit/s summed), "
			"io-forward ring %.2f Mpps, null %.2f Mpps; %" PRIu64 " rounds\n",
			PROG, payload, fanin, wire_dtype_str(dtype), rep + 1, o->repeat,
			v[M_IN][rep], v[M_IN][rep] * payload * 8 / 1e3, v[M_IO][rep],
			v[M_NULL][rep], t.rounds);
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
		       "%5.2f | %6.1f | %8.1f %7.2f\n",
		       r->payload, r->fanin, wire_dtype_str(r->dtype), r->mtu, r->mpps_in, r->gbps,
		       r->ns_pkt, r->sink_ns_out, r->io_mpps, r->ratio, r->mpps_free, r->null_mpps,
		       r->ratio_null, r->iosum_ns_pkt, r->refill_ns_chunk, r->e2e_mpps_in);
	}
	printf("Mpps in (= out), Gbit/s of input payload summed and ns/pkt: cycles inside "
	       "dp_worker_poll. free: ns per copy sent to\nfree it (TX ring drain + "
	       "rte_pktmbuf_free). ring io: Mpps of rx_burst -> tx_burst on the same port and "
	       "frames; ratio: Mpps in / ring io.\n+free: Mpps in counting the free too; null "
	       "io: io-forward on a net_null port (RX allocates, TX frees); ratio: +free / null "
	       "io.\nio+sum: ns per packet of ring io-forward that also adds each payload into "
	       "one accumulator (the SIMD sum alone, from where the frames are).\nrefill: ns per "
	       "chunk to restore the accumulator frame and renumber the round "
	       "(outside the rates); e2e: Mpps in of the\nwhole loop on one core (feed, worker, "
	       "free, refill).\n");
}

static void
print_json(const struct opts *o, const struct result *res, size_t n)
{
	printf("{\n  \"window\": %u,\n  \"burst\": %u,\n  \"order\": \"%s\",\n"
	       "  \"udp_checksum\": %s,\n  \"repeat\": %u,\n  \"seconds\": %g,\n"
	       "  \"kernels\": \"%s\",\n  \"points\": [",
	       o->window, o->burst, o->worker_order ? "worker" : "chunk",
	       o->udp_csum ? "true" : "false", o->repeat, o->seconds, n > 0 ? res[0].kernels : "");
	for (size_t i = 0; i < n; i++) {
		const struct result *r = &res[i];

		printf("%s\n    {\"payload\": %u, \"fanin\": %u, \"dtype\": \"%s\", \"mtu\": %u, "
		       "\"mpps_in\": %.3f, \"mpps_out\": %.3f, \"gbps_summed\": %.2f, "
		       "\"ns_per_pkt\": %.2f, \"free_ns_per_out\": %.2f, \"mpps_in_with_free\": "
		       "%.3f, \"ring_io_mpps\": %.3f, \"ring_io_ns_per_pkt\": %.2f, "
		       "\"ratio\": %.4f, "
		       "\"null_io_mpps\": %.3f, \"ratio_null\": %.3f, \"io_sum_ns_per_pkt\": %.2f, "
		       "\"feed_ns_per_in\": %.2f, "
		       "\"refill_ns_per_chunk\": %.2f, \"e2e_mpps_in\": %.3f, "
		       "\"ring_io_e2e_mpps\": %.3f}",
		       i == 0 ? "" : ",", r->payload, r->fanin, wire_dtype_str(r->dtype), r->mtu,
		       r->mpps_in, r->mpps_out, r->gbps, r->ns_pkt, r->sink_ns_out, r->mpps_free,
		       r->io_mpps, r->io_ns_pkt, r->ratio, r->null_mpps, r->ratio_null,
		       r->iosum_ns_pkt, r->feed_ns_in, r->refill_ns_chunk, r->e2e_mpps_in,
		       r->io_e2e_mpps);
	}
	printf("\n  ]\n}\n");
}

int
main(int argc, char **argv)
{
	struct result res[LIST_MAX * LIST_MAX * 3];
	size_t n_res = 0;
	struct null_port np = {0};
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
