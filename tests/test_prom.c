/* SPDX-License-Identifier: BSD-3-Clause
 * The Prometheus exposition writer (lib/prom.h) and the metrics address parser
 * (lib/promsrv.h): exact text, escaping, names refused, sticky errors.
 */
#include <errno.h>
#include <math.h>
#include <netinet/in.h>

#include "prom.h"
#include "promsrv.h"
#include "testutil.h"

static char *
finish(struct prom *p, int *err)
{
	size_t len = 0;
	char *t = prom_finish(p, &len, err);

	if (t != NULL)
		CHECK(strlen(t) == len, "length %zu, text %zu", len, strlen(t));
	return t;
}

static void
test_text(void)
{
	struct prom p;
	struct prom_label l[] = { { "job", "1" }, { "reason", "no_slot" } };
	char *t;
	int err = 0;

	prom_init(&p);
	CU_ASSERT_EQUAL(prom_family(&p, "georeduce_x_drops_total", PROM_COUNTER,
				    "Frames dropped, by reason"), 0);
	CU_ASSERT_EQUAL(prom_sample_u64(&p, l, 2, 18446744073709551615ull), 0);
	CU_ASSERT_EQUAL(prom_family(&p, "georeduce_x_rate", PROM_GAUGE, "A rate"), 0);
	CU_ASSERT_EQUAL(prom_sample(&p, NULL, 0, 0.25), 0);
	CU_ASSERT_EQUAL(prom_sample(&p, NULL, 0, 8.022), 0);
	CU_ASSERT_EQUAL(prom_sample(&p, NULL, 0, 0.1 + 0.2), 0);
	CU_ASSERT_EQUAL(prom_sample(&p, l, 1, NAN), 0);
	CU_ASSERT_EQUAL(prom_sample(&p, l + 1, 1, INFINITY), 0);
	CU_ASSERT_EQUAL(prom_sample(&p, l, 1, -INFINITY), 0);
	t = finish(&p, &err);
	CU_ASSERT_PTR_NOT_NULL_FATAL(t);
	CHECK(strcmp(t, "# HELP georeduce_x_drops_total Frames dropped, by reason\n"
		     "# TYPE georeduce_x_drops_total counter\n"
		     "georeduce_x_drops_total{job=\"1\",reason=\"no_slot\"} 18446744073709551615\n"
		     "# HELP georeduce_x_rate A rate\n"
		     "# TYPE georeduce_x_rate gauge\n"
		     "georeduce_x_rate 0.25\n"
		     "georeduce_x_rate 8.022\n"
		     "georeduce_x_rate 0.30000000000000004\n"
		     "georeduce_x_rate{job=\"1\"} NaN\n"
		     "georeduce_x_rate{reason=\"no_slot\"} +Inf\n"
		     "georeduce_x_rate{job=\"1\"} -Inf\n") == 0, "got:\n%s", t);
	free(t);
	prom_free(&p);
}

static void
test_escaping(void)
{
	struct prom p;
	struct prom_label l[] = { { "link", "a\"b\\c\nd" }, { "gateway", "ü-1" } };
	char *t;

	prom_init(&p);
	CU_ASSERT_EQUAL(prom_family(&p, "m", PROM_GAUGE, "back\\slash \"quoted\"\nnext"), 0);
	CU_ASSERT_EQUAL(prom_sample(&p, l, 2, 1), 0);
	t = finish(&p, NULL);
	CU_ASSERT_PTR_NOT_NULL_FATAL(t);
	/* HELP escapes backslash and newline only; label values the double quote too. */
	CHECK(strcmp(t, "# HELP m back\\\\slash \"quoted\"\\nnext\n# TYPE m gauge\n"
		     "m{link=\"a\\\"b\\\\c\\nd\",gateway=\"ü-1\"} 1\n") == 0, "got:\n%s", t);
	free(t);
	prom_free(&p);
}

/* Each call must fail with want, and the error must stick. */
static void
refused(int (*fn)(struct prom *), int want, const char *what)
{
	struct prom p;
	int rc, err = 0;
	char *t;

	prom_init(&p);
	rc = fn(&p);
	CHECK(rc == want, "%s: %d, want %d", what, rc, want);
	CHECK(prom_family(&p, "ok_gauge", PROM_GAUGE, "fine") == want,
	      "%s: the error does not stick", what);
	t = prom_finish(&p, NULL, &err);
	CHECK(t == NULL && err == -want, "%s: finished with %p, err %d", what, (void *)t, err);
	CHECK(p.why[0] != '\0', "%s: no description", what);
	free(t);
	prom_free(&p);
}

static int bad_first_digit(struct prom *p)
{ return prom_family(p, "9lives", PROM_GAUGE, "h"); }
static int bad_dash(struct prom *p)
{ return prom_family(p, "georeduce-x", PROM_GAUGE, "h"); }
static int bad_empty(struct prom *p)
{ return prom_family(p, "", PROM_GAUGE, "h"); }
static int bad_space(struct prom *p)
{ return prom_family(p, "a b", PROM_GAUGE, "h"); }
static int counter_no_total(struct prom *p)
{ return prom_family(p, "georeduce_bytes", PROM_COUNTER, "h"); }
static int counter_just_total(struct prom *p)
{ return prom_family(p, "_total", PROM_COUNTER, "h"); }
static int no_help(struct prom *p)
{ return prom_family(p, "x", PROM_GAUGE, ""); }
static int twice(struct prom *p)
{
	prom_family(p, "x", PROM_GAUGE, "h");
	return prom_family(p, "x", PROM_GAUGE, "h");
}
static int sample_first(struct prom *p)
{ return prom_sample(p, NULL, 0, 1); }
static int label_reserved(struct prom *p)
{
	struct prom_label l = { "__name__", "y" };

	prom_family(p, "x", PROM_GAUGE, "h");
	return prom_sample(p, &l, 1, 1);
}
static int label_colon(struct prom *p)
{
	struct prom_label l = { "a:b", "y" };

	prom_family(p, "x", PROM_GAUGE, "h");
	return prom_sample(p, &l, 1, 1);
}
static int label_twice(struct prom *p)
{
	struct prom_label l[] = { { "a", "1" }, { "a", "2" } };

	prom_family(p, "x", PROM_GAUGE, "h");
	return prom_sample_u64(p, l, 2, 1);
}
static int too_many_labels(struct prom *p)
{
	struct prom_label l[PROM_LABELS_MAX + 1];

	for (int i = 0; i <= PROM_LABELS_MAX; i++)
		l[i] = (struct prom_label){ "a", "1" };
	prom_family(p, "x", PROM_GAUGE, "h");
	return prom_sample(p, l, PROM_LABELS_MAX + 1, 1);
}
static int too_many_families(struct prom *p)
{
	char name[32];
	int rc = 0;

	for (int i = 0; rc == 0 && i <= PROM_FAMILIES_MAX; i++) {
		snprintf(name, sizeof(name), "m%d", i);
		rc = prom_family(p, name, PROM_GAUGE, "h");
	}
	return rc;
}

static void
test_refused(void)
{
	refused(bad_first_digit, -EINVAL, "leading digit");
	refused(bad_dash, -EINVAL, "dash");
	refused(bad_empty, -EINVAL, "empty name");
	refused(bad_space, -EINVAL, "space");
	refused(counter_no_total, -EINVAL, "counter without _total");
	refused(counter_just_total, -EINVAL, "counter named _total");
	refused(no_help, -EINVAL, "no help");
	refused(twice, -EEXIST, "family twice");
	refused(sample_first, -EINVAL, "sample before a family");
	refused(label_reserved, -EINVAL, "reserved label");
	refused(label_colon, -EINVAL, "colon in a label name");
	refused(label_twice, -EINVAL, "label twice");
	refused(too_many_labels, -EINVAL, "too many labels");
	refused(too_many_families, -E2BIG, "too many families");
	CU_ASSERT(prom_metric_name_ok("a:b_c9"));
	CU_ASSERT(prom_label_name_ok("_x9"));
	CU_ASSERT(!prom_label_name_ok("9x"));
	CU_ASSERT(!prom_metric_name_ok(NULL));
}

static void
test_addr(void)
{
	static const char *const bad[] = {
		"", ":9464", "127.0.0.1", "127.0.0.1:", "127.0.0.1:0", "127.0.0.1:65536",
		"127.0.0.1:-1", "127.0.0.1:+80", "127.0.0.1:80x", "localhost:9464",
		"300.1.1.1:80", "::1:80", "[127.0.0.1]:80", "[::1:80", "1.2.3.4:99999999999999999999",
	};
	struct sockaddr_storage sa;
	socklen_t len = 0;
	char err[256];

	CU_ASSERT_EQUAL(promsrv_parse_addr("127.0.0.1:9464", &sa, &len, err, sizeof(err)), 0);
	CU_ASSERT(sa.ss_family == AF_INET && len == sizeof(struct sockaddr_in));
	CU_ASSERT(ntohs(((struct sockaddr_in *)&sa)->sin_port) == 9464);
	CU_ASSERT_EQUAL(promsrv_parse_addr("[::1]:1", &sa, &len, err, sizeof(err)), 0);
	CU_ASSERT(sa.ss_family == AF_INET6 && len == sizeof(struct sockaddr_in6));
	CU_ASSERT_EQUAL(promsrv_parse_addr("0.0.0.0:65535", &sa, &len, err, sizeof(err)), 0);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		err[0] = '\0';
		CHECK(promsrv_parse_addr(bad[i], &sa, &len, err, sizeof(err)) == -EINVAL,
		      "'%s' accepted", bad[i]);
		CHECK(strstr(err, "ADDR:PORT") != NULL, "'%s': %s", bad[i], err);
	}
}

static const struct testutil_case tests[] = {
	{ "exposition text, exact", test_text },
	{ "escaping of help texts and label values", test_escaping },
	{ "bad names and misuse refused, errors stick", test_refused },
	{ "--metrics addresses", test_addr },
};

int
main(void)
{
	return testutil_run("test_prom", "prom", tests, TESTUTIL_N(tests));
}
