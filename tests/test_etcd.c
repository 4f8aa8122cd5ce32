/* SPDX-License-Identifier: BSD-3-Clause
 *
 * The etcd client's JSON (control/daemon/etcd.c): base64 both ways and bad input refused;
 * the request bodies of put, range (a prefix's range_end), txn; int64 fields as etcd's
 * gateway writes them (decimal strings, left out when zero); kv objects as etcd 3.4
 * answered them, and bad ones refused; endpoint lists refused with the reason; a call to
 * an endpoint that does not answer fails with every endpoint named. The leader's lease
 * keepalive thread (control/daemon/keepalive.c) with etcd silent: its failures counted
 * with their text, the lease held no longer than granted, never taken for lost; stopped
 * at once from a long wait; a bad endpoint list starts nothing.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <CUnit/Basic.h>
#include <jansson.h>

#include "clock.h"
#include "etcd.h"
#include "keepalive.h"
#include "testutil.h"

static void
test_b64(void)
{
	static const struct {
		const char *plain, *b64;
	} v[] = {{"", ""},         {"f", "Zg=="},         {"fo", "Zm8="},
		 {"foo", "Zm9v"},  {"foob", "Zm9vYg=="},  {"/georeduce/leader", "L2dlb3JlZHVjZS9sZWFkZXI="}};
	static const char *const bad[] = {"Zg=", "Z===", "Zm9v!A==", "=Zm9", "Zg==Zg==", "Zm=v"};

	for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		char *e = etcd_b64_encode(v[i].plain, strlen(v[i].plain)), *d;
		size_t n = 99;

		CHECK(e != NULL && strcmp(e, v[i].b64) == 0, "encode '%s': %s", v[i].plain, e);
		d = etcd_b64_decode(v[i].b64, &n);
		CHECK(d != NULL && n == strlen(v[i].plain) && memcmp(d, v[i].plain, n) == 0,
		      "decode '%s'", v[i].b64);
		free(e);
		free(d);
	}
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		size_t n;
		char *d = etcd_b64_decode(bad[i], &n);

		CHECK(d == NULL, "'%s' decoded", bad[i]);
		free(d);
	}
	/* Every byte value, both ways. */
	unsigned char all[256];
	size_t n;

	for (int i = 0; i < 256; i++)
		all[i] = (unsigned char)i;
	char *e = etcd_b64_encode(all, sizeof(all)), *d = etcd_b64_decode(e, &n);

	CU_ASSERT(d != NULL && n == 256 && memcmp(d, all, 256) == 0);
	free(e);
	free(d);
}

static void
test_ints(void)
{
	json_t *o = json_pack("{s:s,s:I,s:s,s:s,s:s}", "a", "9223372036854775807", "b",
			      (json_int_t)42, "c", "", "d", "12x", "e", "99999999999999999999");
	int64_t v = -1;

	CU_ASSERT(etcd_json_int(o, "a", 0, &v) && v == INT64_MAX);
	CU_ASSERT(etcd_json_int(o, "b", 0, &v) && v == 42);
	CU_ASSERT(etcd_json_int(o, "missing", 7, &v) && v == 7); /* proto3 leaves 0 out */
	CU_ASSERT(!etcd_json_int(o, "c", 0, &v));
	CU_ASSERT(!etcd_json_int(o, "d", 0, &v));
	CU_ASSERT(!etcd_json_int(o, "e", 0, &v));
	json_decref(o);
}

/* j dumped compactly with sorted keys equals want (single quotes for double). */
static void
same(json_t *j, const char *want)
{
	char *s = json_dumps(j, JSON_COMPACT | JSON_SORT_KEYS), *w = sq(want);

	CHECK(s != NULL && strcmp(s, w) == 0, "got %s, want %s", s, w);
	free(s);
	free(w);
	json_decref(j);
}

static void
test_requests(void)
{
	struct etcd_cmp c = {.key = "/p/leader", .mod = false, .rev = 0};
	struct etcd_cmp cm = {.key = "/p/state", .mod = true, .rev = 12};
	struct etcd_op put = {.kind = ETCD_OP_PUT, .key = "/p/leader", .value = "x",
			      .value_len = 1, .lease = 7587883405958713865};
	struct etcd_op get = {.kind = ETCD_OP_GET, .key = "/p/leader"};
	struct etcd_op del = {.kind = ETCD_OP_DELETE, .key = "/p/state"};
	struct etcd_cmp both[2] = {c, cm};

	same(etcd_json_put("a", "b", 1, 0), "{'key':'YQ==','value':'Yg=='}");
	same(etcd_json_put("a", "", 0, 5), "{'key':'YQ==','lease':'5','value':''}");
	same(etcd_json_range("a", false), "{'key':'YQ=='}");
	/* "/jobs/" up to "/jobs0": the prefix with its last byte incremented. */
	same(etcd_json_range("/jobs/", true), "{'key':'L2pvYnMv','range_end':'L2pvYnMw'}");
	same(etcd_json_txn(both, 2, &put, 1, &get, 1),
	     "{'compare':[{'create_revision':'0','key':'L3AvbGVhZGVy','result':'EQUAL',"
	     "'target':'CREATE'},{'key':'L3Avc3RhdGU=','mod_revision':'12','result':'EQUAL',"
	     "'target':'MOD'}],'failure':[{'request_range':{'key':'L3AvbGVhZGVy'}}],"
	     "'success':[{'request_put':{'key':'L3AvbGVhZGVy','lease':'7587883405958713865',"
	     "'value':'eA=='}}]}");
	same(etcd_json_txn(&cm, 1, &del, 1, NULL, 0),
	     "{'compare':[{'key':'L3Avc3RhdGU=','mod_revision':'12','result':'EQUAL',"
	     "'target':'MOD'}],'failure':[],'success':[{'request_delete_range':{'key':"
	     "'L3Avc3RhdGU='}}]}");
}

static void
test_kv(void)
{
	/* As etcd 3.4's gateway answered a range. */
	char *ok = sq("{'key':'bA==','create_revision':'3','mod_revision':'5','version':'2',"
		      "'value':'eA==','lease':'4111120480080195335'}");
	char *empty = sq("{'key':'YQ==','create_revision':'2','mod_revision':'2','version':'1'}");
	static const char *const bad[] = {
		"{'create_revision':'3'}",
		"{'key':'bA=','create_revision':'3'}",
		"{'key':'bA==','create_revision':'x'}",
		"{'key':'bA==','value':5}",
		"{'key':'AA==','value':'eA=='}", /* a key with a NUL */
	};
	json_t *j = json_loads(ok, 0, NULL);
	struct etcd_kv kv;

	CU_ASSERT_FATAL(j != NULL);
	CU_ASSERT(etcd_json_kv(j, &kv) == 0);
	CU_ASSERT(kv.key != NULL && strcmp(kv.key, "l") == 0);
	CU_ASSERT(kv.value_len == 1 && strcmp(kv.value, "x") == 0);
	CU_ASSERT(kv.create_revision == 3 && kv.mod_revision == 5 && kv.version == 2);
	CU_ASSERT(kv.lease == 4111120480080195335);
	etcd_kv_free(&kv);
	json_decref(j);
	j = json_loads(empty, 0, NULL);
	CU_ASSERT(etcd_json_kv(j, &kv) == 0 && kv.value_len == 0 && kv.lease == 0);
	etcd_kv_free(&kv);
	json_decref(j);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		char *t = sq(bad[i]);

		j = json_loads(t, 0, NULL);
		CHECK(j != NULL && etcd_json_kv(j, &kv) == -EPROTO, "accepted %s", t);
		json_decref(j);
		free(t);
	}
	free(ok);
	free(empty);
}

static void
test_endpoints(void)
{
	static const char *const bad[] = {"", "127.0.0.1:2379", "http://a:1,tcp://b:2", ","};
	char err[ETCD_ERR_MAX];
	struct etcd *e;
	struct etcd_kv *kvs;
	size_t n;
	int64_t rev;

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct etcd_opts o = {.endpoints = bad[i], .timeout_ms = 100};

		err[0] = '\0';
		e = etcd_new(&o, err, sizeof(err));
		CHECK(e == NULL && strncmp(err, "etcd: ", 6) == 0, "'%s': %s", bad[i], err);
		etcd_free(e);
	}
	/* Port 1 on the loopback refuses: each endpoint is tried and named. */
	struct etcd_opts o = {.endpoints = "http://127.0.0.1:1,http://[::1]:1",
			      .timeout_ms = 2000};

	e = etcd_new(&o, err, sizeof(err));
	CU_ASSERT_FATAL(e != NULL);
	int rc = etcd_range(e, "/k", false, &kvs, &n, &rev, err, sizeof(err));

	CHECK(rc == -EHOSTUNREACH && strstr(err, "http://127.0.0.1:1") != NULL &&
		      strstr(err, "http://[::1]:1") != NULL,
	      "rc %d: %s", rc, err);
	CU_ASSERT(n == 0 && kvs == NULL);
	etcd_free(e);
}

/* A loopback listener that never accepts nor answers (the kernel completes the
 * handshake into its backlog): its port, its socket in *fd. */
static int
silent_listener(int *fd)
{
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t len = sizeof(a);

	*fd = socket(AF_INET, SOCK_STREAM, 0);
	if (*fd < 0 || bind(*fd, (struct sockaddr *)&a, sizeof(a)) != 0 || listen(*fd, 8) != 0 ||
	    getsockname(*fd, (struct sockaddr *)&a, &len) != 0)
		return -1;
	return ntohs(a.sin_port);
}

/* A call spends its timeout over all its endpoints, not each: two that never answer and
 * one that refuses, behind them. The first silent one takes the whole call; the others are
 * named as not tried, and the next call starts after it. */
static void
test_call_deadline(void)
{
	char eps[128], err[ETCD_ERR_MAX];
	struct etcd_kv *kvs;
	size_t n;
	int64_t rev;
	int fa, fb, pa = silent_listener(&fa), pb = silent_listener(&fb);

	CU_ASSERT_FATAL(pa > 0 && pb > 0);
	snprintf(eps, sizeof(eps), "http://127.0.0.1:%d,http://127.0.0.1:%d,http://127.0.0.1:1",
		 pa, pb);
	struct etcd_opts o = {.endpoints = eps, .timeout_ms = 300};
	struct etcd *e = etcd_new(&o, err, sizeof(err));

	CU_ASSERT_FATAL(e != NULL);
	int rc = etcd_range(e, "/k", false, &kvs, &n, &rev, err, sizeof(err));

	CHECK(rc == -EHOSTUNREACH && strstr(err, "the call's 300 ms are spent") != NULL &&
		      strstr(err, "http://127.0.0.1:1: not tried") != NULL,
	      "rc %d: %s", rc, err);
	/* The next call starts at the second endpoint (the first failed). */
	rc = etcd_range(e, "/k", false, &kvs, &n, &rev, err, sizeof(err));
	char first[64];

	snprintf(first, sizeof(first), "(http://127.0.0.1:%d:", pb);
	CHECK(rc == -EHOSTUNREACH && strstr(err, first) != NULL, "rc %d: %s", rc, err);
	etcd_free(e);
	close(fa);
	close(fb);
}

/* The keepalive thread against an etcd that never answers: every keepalive fails, is
 * counted and its text kept; valid_until stays as granted (nothing extends it) and the
 * lease is not taken for lost (etcd never said so). */
static void
test_keepalive_silent(void)
{
	char eps[64], err[ETCD_ERR_MAX], port[32];
	int fd, p = silent_listener(&fd);
	struct keepalive k = {.wake = -1};
	int64_t until = clock_now_ms() + 900;

	CU_ASSERT_FATAL(p > 0);
	snprintf(eps, sizeof(eps), "http://127.0.0.1:%d", p);
	snprintf(port, sizeof(port), "127.0.0.1:%d", p);
	struct etcd_opts o = {.endpoints = eps, .timeout_ms = 300};
	int rc = keepalive_start(&k, &o, 42, 900, until, err, sizeof(err));

	CHECK(rc == 0, "start: %d %s", rc, err);
	CU_ASSERT(keepalive_start(&k, &o, 42, 900, until, err, sizeof(err)) == -EBUSY);
	/* Generous: three failures take about a second on an idle machine. */
	for (int i = 0; i < 3000 && atomic_load(&k.failed) < 3; i++)
		usleep(10000);
	CHECK(atomic_load(&k.failed) >= 3, "%u failures", (unsigned)atomic_load(&k.failed));
	CU_ASSERT(atomic_load(&k.failing));
	CU_ASSERT(atomic_load(&k.answered) == 0);
	CU_ASSERT(!atomic_load(&k.lost));
	CU_ASSERT(atomic_load(&k.valid_until) == until);
	keepalive_error(&k, err, sizeof(err));
	CHECK(strstr(err, port) != NULL, "error: %s", err);
	keepalive_stop(&k);
	CU_ASSERT(!k.running && k.etcd == NULL && k.wake == -1);
	CU_ASSERT(!atomic_load(&k.lost) && atomic_load(&k.valid_until) == until);
	keepalive_error(&k, err, sizeof(err)); /* kept after the stop */
	CHECK(strstr(err, port) != NULL, "error after the stop: %s", err);
	keepalive_stop(&k); /* twice: nothing to do */
	close(fd);
}

/* A thread waiting for its next keepalive, twenty minutes away with an hour's lease, is
 * stopped and joined at once (the test would hang otherwise); a bad endpoint list starts
 * nothing. */
static void
test_keepalive_stop(void)
{
	char err[ETCD_ERR_MAX];
	struct keepalive k = {.wake = -1};
	struct etcd_opts o = {.endpoints = "http://127.0.0.1:1", .timeout_ms = 1000};
	struct etcd_opts bad = {.endpoints = "127.0.0.1:1", .timeout_ms = 1000};
	int64_t until = clock_now_ms() + 3600000;

	CU_ASSERT_FATAL(keepalive_start(&k, &o, 7, 3600000, until, err, sizeof(err)) == 0);
	keepalive_stop(&k);
	CU_ASSERT(!k.running && atomic_load(&k.failed) == 0 &&
		  atomic_load(&k.valid_until) == until);
	int rc = keepalive_start(&k, &bad, 7, 3600000, until, err, sizeof(err));

	CHECK(rc == -EINVAL && strstr(err, "expected http://HOST:PORT") != NULL, "rc %d: %s", rc,
	      err);
	CU_ASSERT(!k.running && k.etcd == NULL);
	keepalive_stop(&k);
}

int
main(void)
{
	static const struct testutil_case tests[] = {
		{"base64 both ways, bad input refused", test_b64},
		{"int64 fields as the gateway writes them", test_ints},
		{"request bodies of put, range and txn", test_requests},
		{"kv objects of a response, bad ones refused", test_kv},
		{"endpoint lists; no endpoint answering", test_endpoints},
		{"a call's timeout spans its endpoints", test_call_deadline},
		{"keepalive thread: etcd silent", test_keepalive_silent},
		{"keepalive thread: stopped at once, bad endpoints", test_keepalive_stop},
	};

	return testutil_run("test_etcd", "etcd", tests, sizeof(tests) / sizeof(tests[0]));
}
