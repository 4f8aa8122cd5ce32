/* SPDX-License-Identifier: BSD-3-Clause
 *
 * georeduce-bench's zero-loss search (docs/BENCH.md, "Zero-loss search"): RFC 2544 section
 * 26.1 as TRex's NDR bench runs it. A binary search over the offered L1 rate, between 0
 * and the port's line rate, in trials of --duration seconds (after --warmup each), finds
 * in one pass the highest rate without loss (NDR) and the highest with at most --pdr of
 * its frames lost (PDR), to --resolution of the line rate (ndr.h decides the rates). A
 * trial passes when its loss is within the allowance and it offered the rate asked for to
 * within --rate-tolerance: a gateway that pushes back (a full ring or memif queue) makes
 * the generator fall short, which fails the rate as loss would. Every trial is printed as
 * it ends. The main lcore; each trial's generator on the generator's lcore.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>
#include <rte_launch.h>
#include <rte_lcore.h>

#include "cli.h"
#include "gen.h"
#include "georeduce_bench.h"
#include "georeduce_bench_report.h"
#include "georeduce_bench_search.h"
#include "ndr.h"

/* The stream trials are printed on as they end: stdout under the text report, else stderr
 * (NULL with --quiet). */
static FILE *
trial_stream(const struct opts *o)
{
	if (!o->json && !o->csv)
		return stdout;
	return o->quiet ? NULL : stderr;
}

/* One trial at `gbps` (L1) into p; 0, or an exit status. */
static int
trial(const struct opts *o, struct search_env *e, double gbps, unsigned int workers,
      struct phase *p)
{
	int rc;

	*p = e->tmpl;
	e->prm.rate_gbps = gbps;
	if (e->cur != NULL)
		*e->cur = p;
	else
		e->prm.mark_arg = p;
	rc = bench_phase_run(o, e->gj, &e->prm, e->pool, p);
	if (rc == -ENOMEM)
		return CLI_EXIT_FAIL;
	if (rc != 0) {
		cli_error(PROG, "the generator did not run on lcore %u", p->gen_lcore);
		return CLI_EXIT_FAIL;
	}
	/* The next trial's rounds come after every round this one sent: the gateway takes
	 * them as new. */
	e->prm.first_round = p->res.last_round + 1;
	derive(p, workers);
	return 0;
}

/* Judge the trial just run (the sr->n-th) at rate r, the tries-th at that rate: record it
 * in the search, or mark it to be run again (short of the rate without a loss, or nothing
 * completed at all: a pause of the generator or the gateway, not the gateway's limit,
 * may be why). Prints it. 0, or -1 if it failed verification or completed nothing on its
 * last try. */
static int
search_one(const struct opts *o, struct search_result *sr, double r, unsigned int tries, FILE *f)
{
	unsigned int i = sr->n++;
	const struct phase *p = &sr->ph[i];
	double top = sr->s.top;

	sr->target[i] = r;
	sr->reached[i] = p->off.l1_gbps >= r * (1 - o->tolerance_pct / 100);
	sr->again[i] = ((!sr->reached[i] && p->lost_frames == 0) || p->rcv.mpps <= 0) &&
		       tries < o->retries;
	if (!sr->again[i])
		ndr_record(&sr->s, r, p->loss_ratio, sr->reached[i]);
	if (f != NULL) {
		fprintf(f,
			"trial %2u: asked %9.4g Gb/s L1 (%5.1f%%): offered %9.4g (%7.4f Mpps), "
			"received %9.4g, lost %" PRIu64 " of %" PRIu64 " (%.4f%%)%s -> %s%s%s%s\n",
			i + 1, r, 100 * r / top, p->off.l1_gbps, p->off.mpps, p->rcv.l1_gbps,
			p->lost_frames, p->first_sends, 100 * p->loss_ratio,
			sr->reached[i] ? "" : ", short of the rate",
			sr->again[i] ? "again" : "NDR ",
			sr->again[i]                         ? "" :
			sr->reached[i] && p->loss_ratio <= 0 ? "pass" :
							       "fail",
			sr->again[i] ? "" : ", PDR ",
			sr->again[i]                                        ? "" :
			sr->reached[i] && p->loss_ratio <= o->pdr_pct / 100 ? "pass" :
									      "fail");
		fflush(f);
	}
	/* A trial that completed nothing is a failure once it is not to run again. */
	if (p->bad != 0 || (p->rcv.mpps <= 0 && !sr->again[i])) {
		cli_error(PROG, "trial %u: %s", i + 1,
			  p->res.error[0] != '\0' ? p->res.error : "no chunk completed");
		print_wrong(stderr, p);
		sr->failed = true;
		sr->wrong = p->wrong != 0;
		return -1;
	}
	return 0;
}

/* After the search: a trial at each --latency-at share of the NDR, for the latency
 * there (as CSIT measures it at 10, 50 and 90% of the rate found). 0, or an exit status. */
static int
latency_trials(const struct opts *o, struct search_env *e, unsigned int workers,
	       struct search_result *sr, FILE *f)
{
	for (unsigned int k = 0; k < o->n_lat && sr->ndr >= 0; k++) {
		struct phase *p = &sr->lat[k];
		double r = sr->target[sr->ndr] * o->lat_pct[k] / 100;
		int rc = trial(o, e, r, workers, p);

		if (rc != 0)
			return rc;
		sr->n_lat++;
		if (f != NULL) {
			fprintf(f,
				"latency at %3g%% of NDR (%9.4g Gb/s L1): offered %9.4g, lost "
				"%" PRIu64 ", p50 %.1f us, p99 %.1f us, p99.9 %.1f us, max %.1f "
				"us\n",
				o->lat_pct[k], r, p->off.l1_gbps, p->lost_frames, p->p50_us,
				p->p99_us, p->p999_us, p->max_us);
			fflush(f);
		}
		if (p->bad != 0) {
			cli_error(PROG, "latency trial at %g%% of NDR: %s", o->lat_pct[k],
				  p->res.error);
			print_wrong(stderr, p);
			sr->failed = true;
			sr->wrong = p->wrong != 0;
			return sr->wrong ? EXIT_WRONG_SUM : CLI_EXIT_FAIL;
		}
	}
	return 0;
}

int
search_run(const struct opts *o, struct search_env *e, unsigned int workers,
	   struct search_result *sr)
{
	double top = e->tmpl.line_gbps, r;
	FILE *f = trial_stream(o);
	int rc = 0;

	memset(sr, 0, sizeof(*sr));
	sr->ndr = sr->pdr = -1;
	if (top <= 0) {
		cli_error(PROG, "--search: port %u reports no line rate: give --line-gbps",
			  e->tmpl.port);
		return CLI_EXIT_USAGE;
	}
	sr->ph = calloc(SEARCH_TRIALS_MAX, sizeof(*sr->ph));
	sr->target = calloc(SEARCH_TRIALS_MAX, sizeof(*sr->target));
	sr->reached = calloc(SEARCH_TRIALS_MAX, sizeof(*sr->reached));
	sr->again = calloc(SEARCH_TRIALS_MAX, sizeof(*sr->again));
	sr->lat = calloc(SEARCH_LAT_MAX, sizeof(*sr->lat));
	if (sr->ph == NULL || sr->target == NULL || sr->reached == NULL || sr->again == NULL ||
	    sr->lat == NULL ||
	    ndr_init(&sr->s, top, top * o->resolution_pct / 100, o->pdr_pct / 100) != 0) {
		cli_error(PROG, "--search: %s", sr->ph == NULL ? strerror(ENOMEM) : "bad bounds");
		return CLI_EXIT_USAGE;
	}
	if (f != NULL)
		fprintf(f,
			"search: NDR and PDR (loss <= %g%%) up to %.3f Gbit/s L1 (%s), "
			"resolution %g%% (%.4g Gbit/s), trials of %g s after %g s warm-up\n",
			o->pdr_pct, top, e->tmpl.line_from, o->resolution_pct,
			top * o->resolution_pct / 100, o->duration, o->warmup);
	while ((r = ndr_next(&sr->s)) > 0 && sr->n < SEARCH_TRIALS_MAX) {
		for (unsigned int tries = 0; sr->n < SEARCH_TRIALS_MAX; tries++) {
			rc = trial(o, e, r, workers, &sr->ph[sr->n]);
			if (rc != 0 || search_one(o, sr, r, tries, f) != 0)
				break;
			if (!sr->again[sr->n - 1])
				break;
		}
		if (rc != 0 || sr->failed)
			break;
	}
	for (unsigned int i = 0; i < sr->n; i++) {
		if (sr->target[i] == sr->s.ndr_lo && sr->s.ndr_lo > 0 && !sr->again[i])
			sr->ndr = (int)i;
		if (sr->target[i] == sr->s.pdr_lo && sr->s.pdr_lo > 0 && !sr->again[i])
			sr->pdr = (int)i;
	}
	if (rc == 0 && !sr->failed)
		rc = latency_trials(o, e, workers, sr, f);
	return rc != 0 ? rc : sr->wrong ? EXIT_WRONG_SUM : sr->failed ? CLI_EXIT_FAIL : 0;
}

/* One row of the final table: the rate found and the figures of its trial. */
static void
text_row(FILE *f, const char *what, const struct search_result *sr, int i)
{
	const struct phase *p;

	if (i < 0) {
		fprintf(f, "%-4s | none: every trial lost frames or fell short of its rate\n",
			what);
		return;
	}
	p = &sr->ph[i];
	fprintf(f,
		"%-4s | %9.3f %5.1f%% | %8.4f %9.3f %5.1f%% %9.3f %9.3f | %8.4f %9.3f | %7.4f "
		"| %8.1f %8.1f %8.1f %8.1f\n",
		what, sr->target[i], 100 * sr->target[i] / sr->s.top, p->off.mpps, p->off.l1_gbps,
		p->off.l1_pct, p->off.l2_gbps, p->off.payload_gbps, p->rcv.mpps, p->rcv.l1_gbps,
		100 * p->loss_ratio, p->p50_us, p->p99_us, p->p999_us, p->max_us);
}

static json_t *
found_json(const struct search_result *sr, int i, double lo, double hi)
{
	if (i < 0)
		return json_pack("{s:n, s:f, s:f}", "l1_gbps", "lower", lo, "upper", hi);
	return json_pack("{s:f, s:f, s:f, s:i}", "l1_gbps", sr->target[i], "lower", lo, "upper", hi,
			 "trial", i + 1);
}

static void
report_json(FILE *f, const struct opts *o, const struct gen_job *gj, unsigned int mtu,
	    const struct search_result *sr)
{
	json_t *trials = json_array(), *root, *lat;

	for (unsigned int i = 0; i < sr->n; i++) {
		json_t *t = phase_json(&sr->ph[i]);

		json_object_set_new(t, "trial", json_integer(i + 1));
		json_object_set_new(t, "asked_l1_gbps", json_real(sr->target[i]));
		json_object_set_new(t, "reached", json_boolean(sr->reached[i]));
		json_object_set_new(t, "repeated", json_boolean(sr->again[i]));
		json_array_append_new(trials, t);
	}
	root = json_pack("{s:s, s:s, s:i, s:i, s:s, s:i, s:i, s:{s:f, s:s, s:f, s:f, s:f, s:i, "
			 "s:f, s:f, s:f, s:o, s:o}, s:o}",
			 "mode", o->mode == MODE_RING ? "ring" : "port", "peer",
			 o->mode == MODE_RING || o->peer == GEN_PEER_DATAPLANE ? "dataplane" : "io",
			 "payload", (int)gj->payload, "workers", (int)gj->n_workers, "dtype",
			 wire_dtype_str(gj->dtype), "mtu", (int)mtu, "window", (int)gj->n_chunks,
			 "search", "line_gbps", sr->s.top, "line_from",
			 sr->n > 0 ? sr->ph[0].line_from : "unknown", "pdr_loss_pct", o->pdr_pct,
			 "resolution_pct", o->resolution_pct, "rate_tolerance_pct",
			 o->tolerance_pct, "retries", (int)o->retries, "trial_s", o->duration,
			 "warmup_s", o->warmup, "frame_bytes", (double)gj->frame_len + 4, "ndr",
			 found_json(sr, sr->ndr, sr->s.ndr_lo, sr->s.ndr_hi), "pdr",
			 found_json(sr, sr->pdr, sr->s.pdr_lo, sr->s.pdr_hi), "trials", trials);
	lat = json_array();
	for (unsigned int k = 0; k < sr->n_lat; k++) {
		json_t *t = phase_json(&sr->lat[k]);

		json_object_set_new(t, "ndr_pct", json_real(o->lat_pct[k]));
		json_object_set_new(t, "asked_l1_gbps",
				    json_real(sr->target[sr->ndr] * o->lat_pct[k] / 100));
		json_array_append_new(lat, t);
	}
	json_object_set_new(root, "latency_at_ndr", lat);
	json_dumpf(root, f, JSON_INDENT(2) | JSON_REAL_PRECISION(6));
	fprintf(f, "\n");
	json_decref(root);
}

void
search_report(FILE *f, const struct opts *o, const struct gen_job *gj, unsigned int mtu,
	      const struct search_result *sr, int format)
{
	if (format == 1) {
		report_json(f, o, gj, mtu, sr);
		return;
	}
	if (format == 2) {
		fprintf(f, "trial,asked_l1_gbps,asked_pct,reached,offered_mpps,offered_l1_gbps,"
			   "offered_l2_gbps,offered_payload_gbps,received_mpps,received_l1_gbps,"
			   "lost_frames,sent_frames,loss_ratio,p50_us,p99_us,p999_us,max_us,"
			   "ndr_pass,pdr_pass\n");
		for (unsigned int i = 0; i < sr->n; i++) {
			const struct phase *p = &sr->ph[i];

			fprintf(f,
				"%u,%.4f,%.3f,%d,%.5f,%.4f,%.4f,%.4f,%.5f,%.4f,%" PRIu64 ",%" PRIu64
				",%.8f,%.2f,%.2f,%.2f,%.2f,%d,%d\n",
				i + 1, sr->target[i], 100 * sr->target[i] / sr->s.top,
				sr->reached[i], p->off.mpps, p->off.l1_gbps, p->off.l2_gbps,
				p->off.payload_gbps, p->rcv.mpps, p->rcv.l1_gbps, p->lost_frames,
				p->first_sends, p->loss_ratio, p->p50_us, p->p99_us, p->p999_us,
				p->max_us, sr->reached[i] && p->loss_ratio <= 0,
				sr->reached[i] && p->loss_ratio <= o->pdr_pct / 100);
		}
		return;
	}
	fprintf(f,
		"%s mode, %u B x %u workers %s, MTU %u, window %u chunks, %u B frames with FCS; "
		"%u trials\n",
		o->mode == MODE_RING ? "ring" : "port", gj->payload, gj->n_workers,
		wire_dtype_str(gj->dtype), mtu, gj->n_chunks, gj->frame_len + 4, sr->n);
	fprintf(f, "     | asked L1  (line) |  offered Mpps  L1 Gb/s (line)  L2 Gb/s pay Gb/s | "
		   "received  L1 Gb/s |  loss %% |   p50 us   p99 us p99.9 us   max us\n");
	text_row(f, "NDR", sr, sr->ndr);
	text_row(f, "PDR", sr, sr->pdr);
	fprintf(f, "NDR within [%.6g, %.6g] Gbit/s L1, PDR (loss <= %g%%) within [%.6g, %.6g]\n",
		sr->s.ndr_lo, sr->s.ndr_hi, o->pdr_pct, sr->s.pdr_lo, sr->s.pdr_hi);
	if (sr->n_lat > 0)
		fprintf(f, "latency | %% of NDR  asked L1 | offered L1 |  loss %% |   p50 us   p99 "
			   "us p99.9 us   max us\n");
	for (unsigned int k = 0; k < sr->n_lat; k++) {
		const struct phase *p = &sr->lat[k];

		fprintf(f, "        | %8g %9.4g | %10.4g | %7.4f | %8.1f %8.1f %8.1f %8.1f\n",
			o->lat_pct[k], sr->target[sr->ndr] * o->lat_pct[k] / 100, p->off.l1_gbps,
			100 * p->loss_ratio, p->p50_us, p->p99_us, p->p999_us, p->max_us);
	}
	if (sr->ndr >= 0)
		print_certifier(f, &sr->ph[sr->ndr]);
}

void
search_fini(struct search_result *sr)
{
	free(sr->ph);
	free(sr->target);
	free(sr->reached);
	free(sr->again);
	free(sr->lat);
	memset(sr, 0, sizeof(*sr));
}
