/* SPDX-License-Identifier: BSD-3-Clause
 *
 * georeduce-control status and status --watch: the daemon's `status` answer printed for a
 * person (status_print.h). Command-line thread only.
 */
#include <inttypes.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include <jansson.h>

#include "status_print.h"

#define WATCH_BAR 20

/* A number or "-" for null, into buf. */
/* A crew job's grace window: ", grace 20 ms (in force 20.0 ms)", ", grace auto up to 1000
 * ms (in force 3.2 to 7.5 ms)"; nothing without one. */
static void
print_grace(const json_t *g)
{
	const json_t *c = json_object_get(g, "configured_ms");
	const json_t *f = json_object_get(g, "in_force_ms");

	if (g == NULL || (json_is_integer(c) && json_integer_value(c) == 0))
		return;
	if (json_is_string(c))
		printf(", grace auto up to %" JSON_INTEGER_FORMAT " ms",
		       json_integer_value(json_object_get(g, "max_ms")));
	else
		printf(", grace %" JSON_INTEGER_FORMAT " ms", json_integer_value(c));
	if (json_array_size(f) == 2 &&
	    json_number_value(json_array_get(f, 0)) == json_number_value(json_array_get(f, 1)))
		printf(" (in force %.1f ms)", json_number_value(json_array_get(f, 0)));
	else if (json_array_size(f) == 2)
		printf(" (in force %.1f to %.1f ms)", json_number_value(json_array_get(f, 0)),
		       json_number_value(json_array_get(f, 1)));
}

static const char *
num(const json_t *v, const char *fmt, char *buf, size_t len)
{
	if (json_is_number(v))
		snprintf(buf, len, fmt, json_number_value(v));
	else
		snprintf(buf, len, "-");
	return buf;
}

/* num() of field key of object o into the char array b. */
#define NUM(o, key, fmt, b) num(json_object_get((o), (key)), (fmt), (b), sizeof(b))

/* "HEAD cause n, cause n" of an object of counts by cause; nothing if it is empty. */
static void
print_causes(const char *head, const json_t *o)
{
	const char *k;
	json_t *v;
	int n = 0;

	json_object_foreach ((json_t *)o, k, v)
		printf("%s %s %" JSON_INTEGER_FORMAT, n++ == 0 ? head : ",", k,
		       json_integer_value(v));
}

/* With --etcd: one line on the election (docs/DEPLOYMENT.md, "Replicas on etcd"): the
 * replica that answered, its role, the leader it knows (its name and API address, or the
 * leader key's raw value) and the term; each line ends with eol. */
static void
election_print(FILE *f, const json_t *el, const char *eol)
{
	const json_t *ld = json_object_get(el, "leader");
	const char *addr = json_string_value(json_object_get(ld, "address"));

	if (!json_is_object(el))
		return;
	fprintf(f, "replica %s, %s; ", json_string_value(json_object_get(el, "name")),
		json_string_value(json_object_get(el, "role")));
	if (json_is_object(ld) || json_is_string(ld))
		fprintf(f, "leader %s%s%s, term %" JSON_INTEGER_FORMAT "%s\n",
			json_is_string(ld) ? json_string_value(ld) :
					     json_string_value(json_object_get(ld, "name")),
			addr != NULL && addr[0] != '\0' ? " at " : "", addr != NULL ? addr : "",
			json_integer_value(json_object_get(el, "term")), eol);
	else
		fprintf(f, "no leader now%s\n", eol);
	if (json_is_string(json_object_get(el, "etcd_error")))
		fprintf(f, "  etcd: %s%s\n", json_string_value(json_object_get(el, "etcd_error")),
			eol);
}

void
status_print(const json_t *r)
{
	const json_t *g, *j, *t, *n;
	char a[32], b[32], c[32], d[32], e[32], f[32];
	size_t i, k;

	printf("deployment %s, topology %s, up %s s, heartbeat %" JSON_INTEGER_FORMAT
	       " ms, a gateway fails after %" JSON_INTEGER_FORMAT " missed\n",
	       json_string_value(json_object_get(r, "deployment")),
	       json_string_value(json_object_get(r, "topology")), NUM(r, "uptime_s", "%.1f", a),
	       json_integer_value(json_object_get(r, "heartbeat_ms")),
	       json_integer_value(json_object_get(r, "fail_after")));
	election_print(stdout, json_object_get(r, "election"), "");
	printf("\ngateways\n  %-16s %5s %-15s %-7s %14s %8s %9s %9s %8s\n", "gateway", "id", "ipv4",
	       "state", "last heartbeat", "rtt ms", "rx Gbit/s", "tx Gbit/s", "revision");
	json_array_foreach (json_object_get(r, "gateways"), i, g) {
		json_int_t rev = json_integer_value(json_object_get(g, "revision"));

		n = json_object_get(g, "last_heartbeat_ms_ago");
		if (rev > 0) /* 0: older than 1.15 (no revision in its `version`), or not asked */
			snprintf(d, sizeof(d), "1.%" JSON_INTEGER_FORMAT, rev);
		else
			snprintf(d, sizeof(d), "older");
		printf("  %-16s %5" JSON_INTEGER_FORMAT " %-15s %-7s %11s ms %8s %9s %9s %8s\n",
		       json_string_value(json_object_get(g, "name")),
		       json_integer_value(json_object_get(g, "id")),
		       json_string_value(json_object_get(g, "ipv4")),
		       json_string_value(json_object_get(g, "state")),
		       json_is_integer(n) ? (snprintf(e, sizeof(e), "%" JSON_INTEGER_FORMAT,
						      json_integer_value(n)),
					     e) :
					    "-",
		       NUM(g, "rtt_ms", "%.1f", a), NUM(g, "rx_gbps", "%.4f", b),
		       NUM(g, "tx_gbps", "%.4f", c), d);
		if (json_is_string(json_object_get(g, "error")))
			printf("    %s\n", json_string_value(json_object_get(g, "error")));
	}
	printf("\nlinks\n  %-16s %-16s %11s %11s %9s %9s %11s\n", "from", "to", "plan Gb/s",
	       "meas. Gb/s", "rtt ms", "min ms", "cap. Gb/s");
	json_array_foreach (json_object_get(r, "links"), i, n) {
		json_array_foreach (json_object_get(n, "directions"), k, g) {
			const json_t *mf = json_object_get(g, "measured_for_s");

			printf("  %-16s %-16s %11s %11s %9s %9s %11s%s%s\n",
			       json_string_value(json_object_get(g, "from")),
			       json_string_value(json_object_get(g, "to")),
			       NUM(g, "planned_gbps", "%.4f", a), NUM(g, "gbps", "%.4f", b),
			       NUM(g, "rtt_ms", "%.1f", c), NUM(g, "base_rtt_ms", "%.1f", e),
			       NUM(g, "capacity_gbps", "%.4f", f),
			       json_is_true(json_object_get(n, "up")) ? "" : " (down)",
			       json_is_number(mf) ? " (measured)" : "");
		}
	}
	printf("\njobs\n");
	json_array_foreach (json_object_get(r, "jobs"), i, j) {
		printf("  job %" JSON_INTEGER_FORMAT " (%s, %s x %" JSON_INTEGER_FORMAT,
		       json_integer_value(json_object_get(j, "job")),
		       json_string_value(json_object_get(j, "algorithm")),
		       json_string_value(json_object_get(j, "dtype")),
		       json_integer_value(json_object_get(j, "elements")));
		if (json_is_integer(json_object_get(j, "min_workers")))
			printf(", complete at %" JSON_INTEGER_FORMAT " workers",
			       json_integer_value(json_object_get(j, "min_workers")));
		print_grace(json_object_get(j, "grace"));
		printf("): ");
		if (!json_is_integer(json_object_get(j, "epoch"))) {
			printf("%s\n", json_string_value(json_object_get(j, "state")));
		} else {
			printf("epoch %" JSON_INTEGER_FORMAT " %s on",
			       json_integer_value(json_object_get(j, "epoch")),
			       json_string_value(json_object_get(j, "state")));
			json_array_foreach (json_object_get(j, "gateways"), k, n)
				printf(" %s", json_string_value(n));
			printf(" (%" JSON_INTEGER_FORMAT " workers), %s Gbit/s planned, predicted "
			       "%s s; %s\n",
			       json_integer_value(json_object_get(j, "workers")),
			       NUM(j, "rate_gbps", "%.4f", a),
			       NUM(j, "predicted_seconds", "%.4f", b),
			       json_is_true(json_object_get(j, "running")) ? "running" : "idle");
			printf("    %4s %-16s %12s %7s %10s %12s %12s\n", "tree", "root",
			       "rate Gbit/s", "share", "height ms", "meas. Gb/s", "root rx Gb/s");
		}
		json_array_foreach (json_object_get(j, "trees"), k, t)
			printf("    %4" JSON_INTEGER_FORMAT " %-16s %12s %7s %10s %12s %12s\n",
			       json_integer_value(json_object_get(t, "tree")),
			       json_string_value(json_object_get(t, "root")),
			       NUM(t, "rate_gbps", "%.4f", a), NUM(t, "share", "%.4f", b),
			       NUM(t, "height_ms", "%.2f", c), NUM(t, "measured_gbps", "%.4f", f),
			       NUM(t, "root_rx_gbps", "%.4f", e));
		printf("    re-plans");
		print_causes(":", json_object_get(j, "replans"));
		print_causes("; held back:", json_object_get(j, "replans_held"));
		print_causes("; unchanged:", json_object_get(j, "replans_unchanged"));
		printf("; %" JSON_INTEGER_FORMAT " in the last minute%s\n",
		       json_integer_value(json_object_get(j, "replans_last_minute")),
		       json_is_number(json_object_get(j, "replan_held_for_s")) ? ", one held" : "");
		if (json_is_string(json_object_get(j, "error")))
			printf("    last error: %s\n",
			       json_string_value(json_object_get(j, "error")));
	}
}

/* A bar of WATCH_BAR cells, the fraction f (clamped to [0, 1]) of them filled. */
static const char *
bar(double f, char buf[WATCH_BAR + 3])
{
	int k = !isfinite(f) || f < 0 ? 0 : f > 1 ? WATCH_BAR : (int)(f * WATCH_BAR + 0.5);

	buf[0] = '[';
	for (int i = 0; i < WATCH_BAR; i++)
		buf[1 + i] = i < k ? '#' : '-';
	buf[WATCH_BAR + 1] = ']';
	buf[WATCH_BAR + 2] = '\0';
	return buf;
}

/* The number of field key of o, or def where it is not a number. */
static double
numv(const json_t *o, const char *key, double def)
{
	const json_t *v = json_object_get(o, key);

	return json_is_number(v) ? json_number_value(v) : def;
}

static const char *
strv(const json_t *o, const char *key)
{
	const char *s = json_string_value(json_object_get(o, key));

	return s != NULL ? s : "?";
}

/* One screen of the watch: each line ends with eol (clear to its end on a terminal). */
void
status_print_watch(FILE *f, const json_t *r, const char *endpoint, double interval_s, int refresh,
		   const char *eol)
{
	const json_t *g, *j, *t, *n, *d, *rd;
	char a[32], b[32], c[32], e[32], br[WATCH_BAR + 3], when[32];
	size_t i, k;
	int up = 0, down = 0, other = 0;
	time_t now = time(NULL);
	struct tm tm;

	gmtime_r(&now, &tm);
	strftime(when, sizeof(when), "%H:%M:%S UTC", &tm);
	fprintf(f, "georeduce-control status --watch: %s, refresh %d every %g s, %s%s\n", endpoint,
		refresh, interval_s, when, eol);
	fprintf(f, "deployment %s, topology %s, control process up %s s%s\n", strv(r, "deployment"),
		strv(r, "topology"), NUM(r, "uptime_s", "%.1f", a), eol);
	election_print(f, json_object_get(r, "election"), eol);
	json_array_foreach (json_object_get(r, "gateways"), i, g) {
		const char *st = strv(g, "state");

		if (strcmp(st, "up") == 0)
			up++;
		else if (strcmp(st, "down") == 0)
			down++;
		else
			other++;
	}
	fprintf(f, "%s\n", eol);
	fprintf(f, "gateways: %d up, %d down, %d not heard from yet%s\n", up, down, other, eol);
	fprintf(f, "  %-16s %-7s %8s %10s %10s %10s %9s  %s%s\n", "gateway", "state", "rtt ms",
		"rx Gbit/s", "tx Gbit/s", "dropped", "drops/s", "top drop reasons", eol);
	json_array_foreach (json_object_get(r, "gateways"), i, g) {
		const char *reason, *top[2] = {NULL, NULL};
		json_int_t topn[2] = {0, 0};
		char why[160] = "";
		json_t *v;

		json_object_foreach (json_object_get(g, "drops"), reason, v) {
			json_int_t x = json_integer_value(v);

			if (x > topn[0]) {
				top[1] = top[0];
				topn[1] = topn[0];
				top[0] = reason;
				topn[0] = x;
			} else if (x > topn[1]) {
				top[1] = reason;
				topn[1] = x;
			}
		}
		if (top[0] != NULL &&
		    snprintf(why, sizeof(why), "%.60s %" JSON_INTEGER_FORMAT "%s%.60s%s", top[0],
			     topn[0], top[1] != NULL ? ", " : "", top[1] != NULL ? top[1] : "",
			     top[1] != NULL ? " ..." : "") >= (int)sizeof(why))
			why[sizeof(why) - 1] = '\0';
		fprintf(f, "  %-16s %-7s %8s %10s %10s %10s %9s  %s%s\n", strv(g, "name"),
			strv(g, "state"), NUM(g, "rtt_ms", "%.1f", a), NUM(g, "rx_gbps", "%.4f", b),
			NUM(g, "tx_gbps", "%.4f", c), NUM(g, "dropped", "%.0f", e),
			num(json_object_get(g, "drops_per_s"), "%.1f", br, sizeof(br)), why, eol);
	}
	fprintf(f, "%s\n", eol);
	fprintf(f, "jobs%s\n", eol);
	json_array_foreach (json_object_get(r, "jobs"), i, j) {
		double measured = 0;
		bool any_measured = false;

		if (!json_is_integer(json_object_get(j, "epoch"))) {
			fprintf(f, "  job %" JSON_INTEGER_FORMAT " (%s): %s%s\n",
				json_integer_value(json_object_get(j, "job")), strv(j, "algorithm"),
				strv(j, "state"), eol);
			if (json_is_string(json_object_get(j, "error")))
				fprintf(f, "    last error: %s%s\n", strv(j, "error"), eol);
			continue;
		}
		json_array_foreach (json_object_get(j, "trees"), k, t) {
			if (json_is_number(json_object_get(t, "measured_gbps"))) {
				measured += numv(t, "measured_gbps", 0);
				any_measured = true;
			}
		}
		fprintf(f,
			"  job %" JSON_INTEGER_FORMAT " (%s, %s): epoch %" JSON_INTEGER_FORMAT
			" %s for %s s, %" JSON_INTEGER_FORMAT " workers, %s Gbit/s planned, "
			"%s measured%s\n",
			json_integer_value(json_object_get(j, "job")), strv(j, "algorithm"),
			strv(j, "dtype"), json_integer_value(json_object_get(j, "epoch")),
			strv(j, "state"), NUM(j, "live_for_s", "%.1f", a),
			json_integer_value(json_object_get(j, "workers")),
			NUM(j, "rate_gbps", "%.4f", b),
			any_measured ? (snprintf(c, sizeof(c), "%.4f", measured), c) : "-", eol);
		rd = json_object_get(j, "rounds");
		if (json_is_object(rd)) {
			double done = numv(rd, "completed", 0);
			double whole = floor(done + 1e-9);

			fprintf(f,
				"    rounds: %.0f done, round %.0f %s %3.0f%%, "
				"%" JSON_INTEGER_FORMAT
				" chunks in flight (of %" JSON_INTEGER_FORMAT " a round)%s\n",
				whole, whole + 1, bar(done - whole, br), 100 * (done - whole),
				json_integer_value(json_object_get(rd, "chunks_in_flight")),
				json_integer_value(json_object_get(rd, "chunks_per_round")), eol);
		} else {
			fprintf(f, "    rounds: -%s\n", eol);
		}
		json_array_foreach (json_object_get(j, "trees"), k, t) {
			double p = numv(t, "rate_gbps", 0), m = numv(t, "measured_gbps", -1);

			fprintf(f,
				"    tree %-3" JSON_INTEGER_FORMAT " root %-16s %10s planned %10s "
				"measured %s%s\n",
				json_integer_value(json_object_get(t, "tree")), strv(t, "root"),
				NUM(t, "rate_gbps", "%.4f", a), NUM(t, "measured_gbps", "%.4f", b),
				m >= 0 && p > 0 ? bar(m / p, br) : "", eol);
		}
		if (json_is_string(json_object_get(j, "error")))
			fprintf(f, "    last error: %s%s\n", strv(j, "error"), eol);
	}
	fprintf(f, "%s\n", eol);
	fprintf(f, "links (Gbit/s, measured against planned)%s\n", eol);
	fprintf(f, "  %-16s %-16s %10s %10s %10s  %-*s%s\n", "from", "to", "planned", "measured",
		"capacity", WATCH_BAR + 2, "", eol);
	json_array_foreach (json_object_get(r, "links"), i, n) {
		json_array_foreach (json_object_get(n, "directions"), k, d) {
			double p = numv(d, "planned_gbps", 0), m = numv(d, "gbps", -1);

			fprintf(f, "  %-16s %-16s %10s %10s %10s  %s%s%s%s\n", strv(d, "from"),
				strv(d, "to"), NUM(d, "planned_gbps", "%.4f", a),
				NUM(d, "gbps", "%.4f", b), NUM(d, "capacity_gbps", "%.4f", c),
				p > 0 && m >= 0 ? bar(m / p, br) : "",
				json_is_true(json_object_get(n, "up")) ? "" : " down",
				json_is_number(json_object_get(d, "measured_for_s")) ? " measured" :
										       "",
				eol);
		}
	}
}
