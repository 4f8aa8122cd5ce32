/* SPDX-License-Identifier: BSD-3-Clause
 *
 * georeduce-bench's outputs (docs/BENCH.md, "Outputs"): the report on stdout (a table,
 * --json or --csv), the JSON document into --json=FILE, and every form into --out DIR:
 * report.txt, report.json and report.csv, and with --search the trials as gnuplot data
 * (search.dat), the script that plots them (search.gp) and, when gnuplot is on the PATH,
 * search-rate.png (rates received and lost against the rate offered) and
 * search-latency.png (latency quantiles against the rate offered). The main lcore, after
 * the run.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli.h"
#include "georeduce_bench.h"
#include "georeduce_bench_out.h"
#include "georeduce_bench_report.h"
#include "georeduce_bench_search.h"

enum fmt {
	FMT_TEXT = 0, /* as search_report() numbers them */
	FMT_JSON = 1,
	FMT_CSV = 2,
};

int
out_prepare(const struct opts *o)
{
	struct stat st;

	if (o->out_dir == NULL)
		return 0;
	if (mkdir(o->out_dir, 0777) != 0 && errno != EEXIST) {
		cli_error(PROG, "--out: cannot make %s: %s", o->out_dir, strerror(errno));
		return -1;
	}
	if (stat(o->out_dir, &st) != 0 || !S_ISDIR(st.st_mode) || access(o->out_dir, W_OK) != 0) {
		cli_error(PROG, "--out: %s is not a writable directory", o->out_dir);
		return -1;
	}
	return 0;
}

/* The report in one format on f. */
static void
emit(FILE *f, enum fmt fmt, const struct opts *o, const struct gen_job *gj, unsigned int mtu,
     const struct phase *ph, unsigned int n, const struct search_result *sr)
{
	if (sr != NULL && sr->n > 0) {
		search_report(f, o, gj, mtu, sr, (int)fmt);
		return;
	}
	if (n == 0)
		return;
	if (fmt == FMT_JSON)
		print_json(f, o, gj, mtu, ph, n);
	else if (fmt == FMT_CSV)
		print_csv(f, o, gj, ph, n);
	else
		print_text(f, o, gj, mtu, ph, n);
}

/* The report in one format into a file; 0, or -1 with a line naming opt. */
static int
emit_file(const char *path, const char *opt, enum fmt fmt, const struct opts *o,
	  const struct gen_job *gj, unsigned int mtu, const struct phase *ph, unsigned int n,
	  const struct search_result *sr)
{
	FILE *f = fopen(path, "w");
	int bad;

	if (f == NULL) {
		cli_error(PROG, "%s: cannot write %s: %s", opt, path, strerror(errno));
		return -1;
	}
	emit(f, fmt, o, gj, mtu, ph, n, sr);
	bad = ferror(f);
	if (fclose(f) != 0 || bad) {
		cli_error(PROG, "%s: cannot write %s", opt, path);
		return -1;
	}
	return 0;
}

/* DIR/NAME into buf; false if it does not fit. */
static bool
join(char *buf, size_t len, const char *dir, const char *name)
{
	int k = snprintf(buf, len, "%s/%s", dir, name);

	return k > 0 && (size_t)k < len;
}

/* gnuplot on the PATH? */
static bool
have_gnuplot(void)
{
	return system("command -v gnuplot >/dev/null 2>&1") == 0;
}

/* The trials as gnuplot data and the script that plots them; gnuplot run on it when it is
 * there. 0, or -1 with a line naming --out. */
static int
plots(const struct opts *o, const struct search_result *sr)
{
	char dat[4096], gp[4096], cmd[4200];
	FILE *f;

	if (!join(dat, sizeof(dat), o->out_dir, "search.dat") ||
	    !join(gp, sizeof(gp), o->out_dir, "search.gp") || (f = fopen(dat, "w")) == NULL) {
		cli_error(PROG, "--out: cannot write the plot data in %s", o->out_dir);
		return -1;
	}
	fprintf(f, "# trial asked_l1_gbps offered_l1_gbps received_l1_gbps loss_pct p50_us "
		   "p99_us p999_us max_us (sorted by the rate asked)\n");
	for (double last = -1;;) {
		int best = -1;

		for (unsigned int i = 0; i < sr->n; i++)
			if (sr->target[i] > last && (best < 0 || sr->target[i] < sr->target[best]))
				best = (int)i;
		if (best < 0)
			break;
		last = sr->target[best];
		const struct phase *p = &sr->ph[best];

		fprintf(f, "%d %.6f %.6f %.6f %.6f %.2f %.2f %.2f %.2f\n", best + 1, last,
			p->off.l1_gbps, p->rcv.l1_gbps, 100 * p->loss_ratio, p->p50_us, p->p99_us,
			p->p999_us, p->max_us);
	}
	fclose(f);
	f = fopen(gp, "w");
	if (f == NULL) {
		cli_error(PROG, "--out: cannot write %s", gp);
		return -1;
	}
	fprintf(f,
		"# georeduce-bench --search: run with gnuplot in this directory.\n"
		"set terminal pngcairo size 900,560 noenhanced\n"
		"set grid; set key left top; set xlabel 'offered, L1 Gbit/s'\n"
		"set output 'search-rate.png'\n"
		"set title 'Zero-loss search: received and lost against offered (line %.3f "
		"Gbit/s)'\n"
		"set ylabel 'received, L1 Gbit/s'; set y2label 'lost, %% of frames'\n"
		"set ytics nomirror; set y2tics\n"
		"plot 'search.dat' using 3:4 with points pt 7 title 'received', "
		"'' using 3:5 axes x1y2 with points pt 5 title 'lost %%', "
		"x with lines dashtype 2 title 'offered'\n"
		"set output 'search-latency.png'\n"
		"unset y2tics; unset y2label; set ytics mirror\n"
		"set title 'Zero-loss search: chunk latency against offered'\n"
		"set ylabel 'microseconds'; set logscale y\n"
		"plot 'search.dat' using 3:6 with linespoints title 'p50', "
		"'' using 3:7 with linespoints title 'p99', "
		"'' using 3:8 with linespoints title 'p99.9', "
		"'' using 3:9 with points title 'max'\n",
		sr->s.top);
	fclose(f);
	if (!have_gnuplot()) {
		fprintf(stderr, PROG ": --out: no gnuplot on the PATH; run it on %s to plot\n", gp);
		return 0;
	}
	snprintf(cmd, sizeof(cmd), "cd '%s' && gnuplot search.gp", o->out_dir);
	if (strchr(o->out_dir, '\'') != NULL || system(cmd) != 0) {
		cli_error(PROG, "--out: gnuplot failed on %s", gp);
		return -1;
	}
	return 0;
}

int
out_write(const struct opts *o, const struct gen_job *gj, unsigned int mtu, const struct phase *ph,
	  unsigned int n, const struct search_result *sr)
{
	static const struct {
		const char *name;
		enum fmt fmt;
	} files[] = {{"report.txt", FMT_TEXT}, {"report.json", FMT_JSON}, {"report.csv", FMT_CSV}};
	char path[4096];

	emit(stdout, o->json ? FMT_JSON : o->csv ? FMT_CSV : FMT_TEXT, o, gj, mtu, ph, n, sr);
	fflush(stdout);
	if (o->json_file != NULL &&
	    emit_file(o->json_file, "--json", FMT_JSON, o, gj, mtu, ph, n, sr) != 0)
		return CLI_EXIT_USAGE;
	if (o->out_dir == NULL)
		return 0;
	for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
		if (!join(path, sizeof(path), o->out_dir, files[i].name)) {
			cli_error(PROG, "--out: %s is too long", o->out_dir);
			return CLI_EXIT_USAGE;
		}
		if (emit_file(path, "--out", files[i].fmt, o, gj, mtu, ph, n, sr) != 0)
			return CLI_EXIT_USAGE;
	}
	if (sr != NULL && sr->n > 0 && plots(o, sr) != 0)
		return CLI_EXIT_USAGE;
	return 0;
}
