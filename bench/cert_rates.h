/* SPDX-License-Identifier: BSD-3-Clause
 *
 * The rates a certifier reads (docs/BENCH.md, "The report"): frames, L1, L2 and payload
 * bits per second, each as a share of the port's line rate, from counts and a duration.
 * Pure arithmetic without DPDK, so that the tests check it against hand computations. Run
 * by georeduce-bench's main lcore after a measurement.
 */
#ifndef GEOREDUCE_BENCH_CERT_RATES_H
#define GEOREDUCE_BENCH_CERT_RATES_H

#include <stdint.h>

/* Ethernet bytes of a frame besides what a port counts (DPDK's byte counters leave out the
 * FCS): L2 adds the FCS, L1 also the preamble with its start delimiter and the gap. */
#define RATES_FCS 4u
#define RATES_PREAMBLE 8u
#define RATES_GAP 12u
#define RATES_L1_EXTRA (RATES_FCS + RATES_PREAMBLE + RATES_GAP)

/** What was counted over a measurement. */
struct rates_in {
	uint64_t frames;        /* frames */
	uint64_t frame_bytes;   /* their bytes from the destination MAC to the payload's end,
				   without the FCS (as ports count them) */
	uint64_t payload_bytes; /* the chunk payload they carried */
	double seconds;         /* the measurement's length, > 0 */
	double line_gbps;       /* the port's line rate in Gbit/s; 0: unknown */
};

/** The figures: rates, and each as a percentage of the line rate (0 when it is unknown). */
struct rates {
	double mpps;         /* frames per second / 1e6 */
	double l1_gbps;      /* (frame + FCS + preamble + gap) x 8 per second / 1e9 */
	double l2_gbps;      /* (frame + FCS) x 8 per second / 1e9 */
	double payload_gbps; /* payload x 8 per second / 1e9 */
	double l1_pct, l2_pct, payload_pct, mpps_pct;
	double line_mpps; /* frames per second at line rate with the mean frame, / 1e6 */
};

/**
 * The figures of `in` into `out`. mpps_pct equals l1_pct: at the mean frame size the
 * line's frame rate is line / (8 x (frame + 24)). Returns 0, or -1 if in->seconds is not
 * positive (out is then zeroed).
 */
int rates_compute(const struct rates_in *in, struct rates *out);

/** Frames per second / 1e6 at line rate for frames of frame_bytes with the FCS. */
double rates_line_mpps(double line_gbps, double frame_bytes_with_fcs);

#endif
