/* SPDX-License-Identifier: BSD-3-Clause
 *
 * The rates a certifier reads (cert_rates.h): pure arithmetic on counts, no DPDK. Any thread;
 * georeduce-bench calls it on its main lcore after a measurement.
 */
#include <string.h>

#include "cert_rates.h"

double
rates_line_mpps(double line_gbps, double frame_bytes_with_fcs)
{
	double l1 = frame_bytes_with_fcs + RATES_PREAMBLE + RATES_GAP;

	return l1 > 0 ? line_gbps * 1e9 / (8 * l1) / 1e6 : 0;
}

int
rates_compute(const struct rates_in *in, struct rates *out)
{
	double s = in->seconds, f = (double)in->frames;

	memset(out, 0, sizeof(*out));
	if (!(s > 0))
		return -1;
	out->mpps = f / s / 1e6;
	out->l2_gbps = ((double)in->frame_bytes + f * RATES_FCS) * 8 / s / 1e9;
	out->l1_gbps = ((double)in->frame_bytes + f * RATES_L1_EXTRA) * 8 / s / 1e9;
	out->payload_gbps = (double)in->payload_bytes * 8 / s / 1e9;
	if (in->line_gbps > 0) {
		out->l1_pct = 100 * out->l1_gbps / in->line_gbps;
		out->l2_pct = 100 * out->l2_gbps / in->line_gbps;
		out->payload_pct = 100 * out->payload_gbps / in->line_gbps;
		if (in->frames > 0) {
			out->line_mpps = rates_line_mpps(in->line_gbps,
							 (double)in->frame_bytes / f + RATES_FCS);
			out->mpps_pct = 100 * out->mpps / out->line_mpps;
		}
	}
	return 0;
}
