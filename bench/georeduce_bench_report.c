/* SPDX-License-Identifier: BSD-3-Clause
 *
 * georeduce-bench: the report. The figures derived from a phase's counters (offered and
 * achieved rates, latency quantiles, losses, the peer's busy share) and their output as a
 * table, JSON or CSV. The main lcore, after the generator runs.
 */
#include <inttypes.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <jansson.h>
#include <rte_common.h>
#include <rte_cycles.h>

#include "gen.h"
#include "georeduce_bench.h"
#include "georeduce_bench_report.h"
#include "cert_rates.h"
#include "wire.h"

/* --- Report ------------------------------------------------------------------------------- */

const char *
gw_drop_name(unsigned int i)
{
	static const char *const ctrs[GW_DROP_CTRS] = {"tx_dropped", "no_mbuf", "no_neighbour",
						       "pace_full"};

	if (i < GW_DROP_CTRS)
		return ctrs[i];
	return i > GW_DROP_CTRS && i < GW_DROPS ?
		       wire_reason_str((enum wire_reason)(i - GW_DROP_CTRS)) :
		       "?";
}

/* Offered and received rates (cert_rates.h), and the frames lost. */
static void
derive_rates(struct phase *ph, unsigned int workers, double s)
{
	const struct gen_stats *a = &ph->res.start, *b = &ph->res.end, *z = &ph->res.final;
	struct rates_in in = {b->tx_pkts - a->tx_pkts, b->tx_bytes - a->tx_bytes,
			      b->tx_payload - a->tx_payload, s, ph->line_gbps};
	/* With a multicast table the outputs' NACK_MCASTs stand for the copies that did not
	 * come within the timeout, as the resent frames of a tree do (the origins never send
	 * again; the NACK_MCAST carries no RETX). */
	uint64_t retx = z->retx - a->retx + z->mc_nacks - a->mc_nacks, late;

	/* A retransmission whose first copy's answer still came back (late, behind a busy
	 * peer) draws a second answer: a duplicate, a copy of an ended round, or an ACK. */
	late = z->duplicates - a->duplicates + z->stale - a->stale + z->acks - a->acks;
	late = RTE_MIN(late, retx);

	rates_compute(&in, &ph->off);
	in = (struct rates_in){b->rx_ok - a->rx_ok, b->rx_ok_bytes - a->rx_ok_bytes,
			       b->rx_payload - a->rx_payload, s, ph->line_gbps};
	rates_compute(&in, &ph->rcv);
	ph->lost_frames = retx - late + (uint64_t)ph->res.open_after_drain * workers;
	ph->first_sends = z->tx_pkts - a->tx_pkts - retx;
	ph->loss_ratio =
		ph->first_sends > 0 ? (double)ph->lost_frames / (double)ph->first_sends : 0;
}

void
derive(struct phase *ph, unsigned int workers)
{
	const struct gen_stats *a = &ph->res.start, *b = &ph->res.end;
	double s = (double)ph->res.measured_tsc / (double)rte_get_tsc_hz();
	uint64_t tx = b->tx_pkts - a->tx_pkts, ok = b->rx_ok - a->rx_ok;

	ph->secs = s;
	if (s <= 0)
		return;
	derive_rates(ph, workers, s);
	ph->offered_mpps = (double)tx / s / 1e6;
	ph->offered_gbps = (double)(b->tx_payload - a->tx_payload) * 8 / s / 1e9;
	ph->offered_wire_gbps =
		(double)(b->tx_bytes - a->tx_bytes + tx * GEN_WIRE_OVERHEAD) * 8 / s / 1e9;
	ph->achieved_mpps = (double)ok / s / 1e6;
	ph->achieved_gbps = (double)(b->rx_payload - a->rx_payload) * 8 / s / 1e9;
	ph->chunks_s = (double)(b->chunks - a->chunks) / s;
	ph->p50_us = gen_hist_quantile(&ph->res.hist, 0.5) / 1e3;
	ph->p99_us = gen_hist_quantile(&ph->res.hist, 0.99) / 1e3;
	ph->p999_us = gen_hist_quantile(&ph->res.hist, 0.999) / 1e3;
	ph->max_us = (double)ph->res.hist.max_ns / 1e3;
	ph->gen_busy = (double)(b->busy_cycles - a->busy_cycles) / (double)ph->res.measured_tsc;
	ph->lost = ph->res.open_after_drain;
	ph->retx = ph->res.end.retx; /* over the whole run, drain included */
	ph->timeouts = ph->res.end.timeouts;
	ph->refused = b->tx_refused - a->tx_refused;
	ph->duplicates = ph->res.end.duplicates;
	ph->stale = ph->res.end.stale;
	ph->unexpected = ph->res.end.unexpected;
	/* Over the whole run: a wrong RESULT in the warm-up or the drain fails it too. */
	ph->verified = ph->res.final.verified;
	ph->bad = ph->res.final.verify_fail;
	ph->wrong = ph->res.final.wrong;
	if (ph->has_peer) {
		ph->peer_busy = (double)(ph->peer[1].busy - ph->peer[0].busy) /
				(double)ph->res.measured_tsc;
		ph->peer_mpps_in = (double)(ph->peer[1].rx - ph->peer[0].rx) / s / 1e6;
	}
}

/* The rates of one direction as a table row. */
static void
rates_row(FILE *f, const char *what, const struct rates *r, bool pct)
{
	fprintf(f, "  %-9s %8.3f", what, r->mpps);
	if (pct)
		fprintf(f, " (%5.1f%%) | %8.3f (%5.1f%%) | %8.3f (%5.1f%%) | %8.3f (%5.1f%%)\n",
			r->mpps_pct, r->l1_gbps, r->l1_pct, r->l2_gbps, r->l2_pct, r->payload_gbps,
			r->payload_pct);
	else
		fprintf(f, "          | %8.3f          | %8.3f          | %8.3f\n", r->l1_gbps,
			r->l2_gbps, r->payload_gbps);
}

/* The gateway's drops over the measurement by name (ring mode's dataplane), i of them. */
static uint64_t
gw_drop(const struct phase *p, unsigned int i)
{
	return i == GW_DROP_CTRS ? 0 : p->peer[1].why[i] - p->peer[0].why[i];
}

/* ... printed on one line. */
static void
gw_drops(FILE *f, const struct phase *p)
{
	unsigned int shown = 0;

	for (unsigned int i = 0; i < GW_DROPS; i++)
		if (gw_drop(p, i) != 0)
			fprintf(f, "%s %s %" PRIu64, shown++ == 0 ? "" : ",", gw_drop_name(i),
				gw_drop(p, i));
	fprintf(f, "%s\n", shown == 0 ? " none" : "");
}

/* ... into the JSON object o. */
static void
gw_drops_json(const struct phase *p, json_t *o)
{
	for (unsigned int i = 0; o != NULL && i < GW_DROPS; i++)
		if (gw_drop(p, i) != 0)
			json_object_set_new(o, gw_drop_name(i),
					    json_integer((json_int_t)gw_drop(p, i)));
}

/* What a certifier reads first: rates against the line rate, loss, port and gateway
 * counters. */
void
print_certifier(FILE *f, const struct phase *p)
{
	const struct port_snap *x = p->xs;
	bool pct = p->line_gbps > 0;

	if (pct)
		fprintf(f,
			"%s: line rate %.3f Gbit/s (%s); L1 counts frame + FCS + preamble + gap "
			"(24 B a frame), L2 frame + FCS\n",
			p->name, p->line_gbps, p->line_from);
	else
		fprintf(f,
			"%s: line rate unknown (give --line-gbps); L1 counts frame + FCS + "
			"preamble + gap (24 B a frame), L2 frame + FCS\n",
			p->name);
	fprintf(f, "  %-9s %8s %8s | %8s %8s | %8s %8s | %8s %8s\n", "", "Mpps", "(line)",
		"L1 Gb/s", "(line)", "L2 Gb/s", "(line)", "pay Gb/s", "(line)");
	rates_row(f, "offered", &p->off, pct);
	rates_row(f, "received", &p->rcv, pct);
	fprintf(f,
		"  loss: %" PRIu64 " of %" PRIu64 " frames (%.4f%%) unanswered within the "
		"timeout\n",
		p->lost_frames, p->first_sends, 100 * p->loss_ratio);
	fprintf(f,
		"  port %u: imissed %" PRIu64 " -> %" PRIu64 ", rx_nombuf %" PRIu64 " -> %" PRIu64
		", ierrors %" PRIu64 " -> %" PRIu64 ", oerrors %" PRIu64 " -> %" PRIu64 "\n",
		p->port, x[0].imissed, x[1].imissed, x[0].rx_nombuf, x[1].rx_nombuf, x[0].ierrors,
		x[1].ierrors, x[0].oerrors, x[1].oerrors);
	if ((p->has_peer && strcmp(p->name, "dataplane") == 0) || p->gw_read) {
		fprintf(f, "  gateway drops%s:", p->gw_read ? " (--gw-socket, the whole run)" : "");
		gw_drops(f, p);
	}
}

void
print_wrong(FILE *f, const struct phase *p)
{
	for (unsigned int i = 0; i < p->res.n_wrong; i++) {
		const struct gen_wrong *x = &p->res.wrong[i];

		fprintf(f,
			PROG
			": %s: wrong sum: chunk %u round %u worker %u element %u: expected %.9g "
			"(0x%x), received %.9g (0x%x); %u of the chunk's elements wrong\n",
			p->name, x->chunk, x->round, x->worker, x->element, x->expect,
			x->expect_bits, x->got, x->got_bits, x->n_elems);
	}
	if (p->wrong > p->res.n_wrong)
		fprintf(f, PROG ": %s: %" PRIu64 " more wrong sums\n", p->name,
			p->wrong - p->res.n_wrong);
}

void
print_text(FILE *f, const struct opts *o, const struct gen_job *gj, unsigned int mtu,
	   const struct phase *ph, unsigned int n)
{
	fprintf(f, "%s mode, %u B x %u workers %s, MTU %u, window %u chunks, %s, %.2f s measured\n",
		o->mode == MODE_RING ? "ring" : "port", gj->payload, gj->n_workers,
		wire_dtype_str(gj->dtype), mtu, gj->n_chunks,
		o->rate_gbps > 0 ? "paced" : "full speed", n > 0 ? ph[0].secs : 0);
	fprintf(f, "%-10s | %8s %7s | %8s %7s %9s | %8s %8s %8s | %4s %5s %5s | %s\n", "phase",
		"off Gb/s", "Mpps", "ach Gb/s", "Mpps", "chunks/s", "p50 us", "p99 us", "p99.9 us",
		"lost", "retx", "bad", "lcores (busy)");
	for (unsigned int i = 0; i < n; i++) {
		const struct phase *p = &ph[i];

		fprintf(f,
			"%-10s | %8.2f %7.3f | %8.2f %7.3f %9.0f | %8.1f %8.1f %8.1f | %4" PRIu64
			" %5" PRIu64 " %5" PRIu64 " | generator %u (%.0f%%)",
			p->name, p->offered_gbps, p->offered_mpps, p->achieved_gbps,
			p->achieved_mpps, p->chunks_s, p->p50_us, p->p99_us, p->p999_us, p->lost,
			p->retx, p->bad, p->gen_lcore, 100 * p->gen_busy);
		if (p->has_peer)
			fprintf(f, ", %s %u (%.0f%%)", p->name, p->peer_lcore, 100 * p->peer_busy);
		fprintf(f, "\n");
	}
	if (n == 2 && ph[1].achieved_mpps > 0)
		fprintf(f, "dataplane / io-forward packet rate: %.3f\n",
			ph[0].achieved_mpps / ph[1].achieved_mpps);
	if (ph[0].c2c_ns > 0)
		fprintf(f,
			"cache-line round trip generator <-> %s lcore before each phase: %.0f ns%s",
			ph[0].name, ph[0].c2c_ns, n == 2 && ph[1].c2c_ns > 0 ? ", " : "\n");
	if (n == 2 && ph[1].c2c_ns > 0)
		fprintf(f, "%.0f ns\n", ph[1].c2c_ns);
	for (unsigned int i = 0; i < n; i++)
		print_certifier(f, &ph[i]);
	for (unsigned int i = 0; i < n; i++) {
		fprintf(f, "%s: %" PRIu64 " payloads verified, wrong_results %" PRIu64, ph[i].name,
			ph[i].verified, ph[i].wrong);
		if (ph[i].corrupted_read)
			fprintf(f, " (the dataplane corrupted %" PRIu64 " frames)",
				ph[i].corrupted);
		fprintf(f, "\n");
		if (ph[i].res.error[0] != '\0')
			fprintf(f, "%s: %s\n", ph[i].name, ph[i].res.error);
		print_wrong(f, &ph[i]);
	}
}

static json_t *
rates_json(const struct rates *r)
{
	return json_pack("{s:f, s:f, s:f, s:f, s:f, s:f, s:f, s:f}", "mpps", r->mpps, "l1_gbps",
			 r->l1_gbps, "l2_gbps", r->l2_gbps, "payload_gbps", r->payload_gbps,
			 "mpps_pct", r->mpps_pct, "l1_pct", r->l1_pct, "l2_pct", r->l2_pct,
			 "payload_pct", r->payload_pct);
}

static json_t *
port_json(const struct port_snap *x)
{
	return json_pack("{s:I, s:I, s:I, s:I, s:I, s:I}", "ipackets", (json_int_t)x->ipackets,
			 "opackets", (json_int_t)x->opackets, "imissed", (json_int_t)x->imissed,
			 "rx_nombuf", (json_int_t)x->rx_nombuf, "ierrors", (json_int_t)x->ierrors,
			 "oerrors", (json_int_t)x->oerrors);
}

/* The certifier's figures of a phase into its JSON object. */
static void
certifier_json(const struct phase *p, json_t *o)
{
	json_t *drops = json_object();

	json_object_set_new(o, "line_gbps", json_real(p->line_gbps));
	json_object_set_new(o, "line_from", json_string(p->line_from));
	json_object_set_new(o, "offered", rates_json(&p->off));
	json_object_set_new(o, "received", rates_json(&p->rcv));
	json_object_set_new(o, "loss",
			    json_pack("{s:I, s:I, s:f}", "frames", (json_int_t)p->lost_frames,
				      "sent", (json_int_t)p->first_sends, "ratio", p->loss_ratio));
	json_object_set_new(o, "port_stats",
			    json_pack("{s:i, s:o, s:o}", "port", (int)p->port, "before",
				      port_json(&p->xs[0]), "after", port_json(&p->xs[1])));
	bool ring_dp = p->has_peer && strcmp(p->name, "dataplane") == 0;

	if (ring_dp || p->gw_read)
		gw_drops_json(p, drops);
	json_object_set_new(o, "gateway_drops", drops);
	json_object_set_new(o, "gateway_drops_from",
			    json_string(ring_dp    ? "dataplane" :
					p->gw_read ? "gw-socket" :
						     "none"));
}

static json_t *
phase_json_base(const struct phase *p)
{
	json_t *lcores = json_array();

	json_array_append_new(lcores,
			      json_pack("{s:i, s:s, s:f, s:f, s:f}", "lcore", (int)p->gen_lcore,
					"role", "generator", "busy", p->gen_busy, "tx_mpps",
					p->offered_mpps, "rx_mpps", p->achieved_mpps));
	if (p->has_peer)
		json_array_append_new(lcores,
				      json_pack("{s:i, s:s, s:f, s:f, s:I}", "lcore",
						(int)p->peer_lcore, "role", p->name, "busy",
						p->peer_busy, "rx_mpps", p->peer_mpps_in, "drops",
						(json_int_t)(p->peer[1].drops - p->peer[0].drops)));
	return json_pack("{s:s, s:f, s:f, s:f, s:f, s:f, s:f, s:f, "
			 "s:{s:f, s:f, s:f, s:f, s:I}, "
			 "s:{s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I}, "
			 "s:{s:I, s:I, s:I}, s:o, s:f, s:s?}",
			 "phase", p->name, "seconds", p->secs, "offered_gbps", p->offered_gbps,
			 "offered_wire_gbps", p->offered_wire_gbps, "offered_mpps", p->offered_mpps,
			 "achieved_gbps", p->achieved_gbps, "achieved_mpps", p->achieved_mpps,
			 "chunks_per_s", p->chunks_s, "latency_us", "p50", p->p50_us, "p99",
			 p->p99_us, "p999", p->p999_us, "max", p->max_us, "samples",
			 (json_int_t)p->res.hist.n, "losses", "lost_chunks", (json_int_t)p->lost,
			 "timeouts", (json_int_t)p->timeouts, "retransmitted", (json_int_t)p->retx,
			 "tx_refused", (json_int_t)p->refused, "duplicates",
			 (json_int_t)p->duplicates, "stale", (json_int_t)p->stale, "unexpected",
			 (json_int_t)p->unexpected, "parent_nacks", (json_int_t)p->res.final.nacks,
			 "parent_resent", (json_int_t)p->res.final.partial_repeats,
			 "nacks_to_contributors", (json_int_t)p->res.final.nacks_down, "verify",
			 "payloads_checked", (json_int_t)p->verified, "failures",
			 (json_int_t)p->bad, "partial_sums_checked",
			 (json_int_t)p->res.final.partials, "lcores", lcores, "core_to_core_rtt_ns",
			 p->c2c_ns, "error", p->res.error[0] != '\0' ? p->res.error : NULL);
}

/* A number in JSON, or null (jansson refuses NaN and infinities). */
static json_t *
json_num(double v)
{
	return isfinite(v) ? json_real(v) : json_null();
}

/* The verification's counts and the first wrong RESULTs into the phase's JSON object. */
static void
verify_json(const struct phase *p, json_t *pj)
{
	json_t *v = json_object_get(pj, "verify"), *a = json_array();
	char eb[16], gb[16];

	for (unsigned int i = 0; i < p->res.n_wrong; i++) {
		const struct gen_wrong *x = &p->res.wrong[i];

		snprintf(eb, sizeof(eb), "0x%x", x->expect_bits);
		snprintf(gb, sizeof(gb), "0x%x", x->got_bits);
		json_array_append_new(
			a, json_pack("{s:i, s:i, s:i, s:i, s:i, s:o, s:o, s:s, s:s}", "chunk",
				     (int)x->chunk, "round", (int)x->round, "worker",
				     (int)x->worker, "element", (int)x->element, "elements_wrong",
				     (int)x->n_elems, "expected", json_num(x->expect), "received",
				     json_num(x->got), "expected_bits", eb, "received_bits", gb));
	}
	json_object_set_new(v, "wrong_results", json_integer((json_int_t)p->wrong));
	json_object_set_new(v, "wrong", a);
	json_object_set_new(pj, "wrong_results", json_integer((json_int_t)p->wrong));
	if (p->corrupted_read)
		json_object_set_new(pj, "gateway_corrupted",
				    json_integer((json_int_t)p->corrupted));
}

json_t *
phase_json(const struct phase *p)
{
	json_t *pj = phase_json_base(p);

	verify_json(p, pj);
	certifier_json(p, pj);
	json_object_set_new(pj, "sealed_frames",
			    json_pack("{s:I, s:I}", "sealed", (json_int_t)p->res.final.sealed,
				      "opened", (json_int_t)p->res.final.opened));
	json_object_set_new(pj, "multicast",
			    json_pack("{s:I, s:I, s:I, s:I, s:I, s:I}", "copies_verified",
				      (json_int_t)p->res.final.mc_copies, "repairs_received",
				      (json_int_t)p->res.final.mc_repairs, "nacks_sent",
				      (json_int_t)p->res.final.mc_nacks, "chunks_asked_upstream",
				      (json_int_t)p->res.final.mc_asked, "repairs_sent",
				      (json_int_t)p->res.final.mc_repaired, "withdrawn",
				      (json_int_t)p->res.final.mc_obsolete));
	return pj;
}

void
print_json(FILE *f, const struct opts *o, const struct gen_job *gj, unsigned int mtu,
	   const struct phase *ph, unsigned int n)
{
	json_t *phases = json_array(), *root;

	for (unsigned int i = 0; i < n; i++) {
		json_array_append_new(phases, phase_json(&ph[i]));
	}
	root = json_pack("{s:s, s:s, s:i, s:i, s:s, s:i, s:i, s:f, s:o}", "mode",
			 o->mode == MODE_RING ? "ring" : "port", "peer",
			 o->mode == MODE_RING || o->peer == GEN_PEER_DATAPLANE ? "dataplane" : "io",
			 "payload", (int)gj->payload, "workers", (int)gj->n_workers, "dtype",
			 wire_dtype_str(gj->dtype), "mtu", (int)mtu, "window", (int)gj->n_chunks,
			 "rate_gbps", o->rate_gbps, "phases", phases);
	json_object_set_new(root, "role",
			    json_string(!gj->has_parent    ? "root" :
					gj->n_children > 0 ? "interior" :
							     "leaf"));
	json_object_set_new(root, "child_gateways", json_integer(gj->n_children));
	json_object_set_new(root, "sealed_links", json_integer(gj->n_seals));
	json_object_set_new(root, "multicast_streams", json_integer(gj->n_streams));
	if (n == 2 && ph[1].achieved_mpps > 0)
		json_object_set_new(root, "ratio_to_io",
				    json_real(ph[0].achieved_mpps / ph[1].achieved_mpps));
	json_dumpf(root, f, JSON_INDENT(2) | JSON_REAL_PRECISION(6));
	fprintf(f, "\n");
	json_decref(root);
}

void
print_csv(FILE *f, const struct opts *o, const struct gen_job *gj, const struct phase *ph,
	  unsigned int n)
{
	fprintf(f,
		"mode,phase,payload,workers,dtype,window,offered_gbps,offered_mpps,achieved_gbps,"
		"achieved_mpps,p50_us,p99_us,p999_us,lost,retx,failures,generator_busy,peer_busy,"
		"ratio_to_io,c2c_rtt_ns,line_gbps,offered_l1_gbps,offered_l2_gbps,offered_l1_pct,"
		"received_mpps,received_l1_gbps,received_l2_gbps,received_l1_pct,loss_ratio,"
		"wrong_results\n");
	for (unsigned int i = 0; i < n; i++) {
		const struct phase *p = &ph[i];
		double ratio = n == 2 && ph[1].achieved_mpps > 0 ?
				       p->achieved_mpps / ph[1].achieved_mpps :
				       0;

		fprintf(f,
			"%s,%s,%u,%u,%s,%u,%.3f,%.4f,%.3f,%.4f,%.2f,%.2f,%.2f,%" PRIu64 ",%" PRIu64
			",%" PRIu64
			",%.3f,%.3f,%.4f,%.0f,%.3f,%.3f,%.3f,%.2f,%.4f,%.3f,%.3f,%.2f,%.6f,%" PRIu64
			"\n",
			o->mode == MODE_RING ? "ring" : "port", p->name, gj->payload, gj->n_workers,
			wire_dtype_str(gj->dtype), gj->n_chunks, p->offered_gbps, p->offered_mpps,
			p->achieved_gbps, p->achieved_mpps, p->p50_us, p->p99_us, p->p999_us,
			p->lost, p->retx, p->bad, p->gen_busy, p->has_peer ? p->peer_busy : 0,
			ratio, p->c2c_ns, p->line_gbps, p->off.l1_gbps, p->off.l2_gbps,
			p->off.l1_pct, p->rcv.mpps, p->rcv.l1_gbps, p->rcv.l2_gbps, p->rcv.l1_pct,
			p->loss_ratio, p->wrong);
	}
}
