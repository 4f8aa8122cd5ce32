/* SPDX-License-Identifier: BSD-3-Clause
 *
 * Unit tests for lib/ctlmsg.{h,c}, the control-socket protocol (docs/CONTROL.md): the
 * worked example of CONTROL.md byte for byte, framing round trips over socketpairs (small,
 * large and exactly CTL_MSG_MAX), a stream fed one byte at a time through ctl_conn_read(),
 * every framing and envelope failure, strict argument unpacking, replies, ctl_listen() on
 * long, live, stale and foreign paths, ctl_call() against a server thread that stands in
 * for the dataplane, and a mutation fuzzer on the incremental reader.
 *
 * Environment: GEOREDUCE_FUZZ_SEED sets the seed of the fuzzer; GEOREDUCE_TEST_QUICK
 * shortens it (sanitizer builds). main returns the number of failures.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <CUnit/Basic.h>
#include <CUnit/CUnit.h>

#include "ctlmsg.h"
#include "fuzzutil.h"
#include "testutil.h"

#define ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))

static uint64_t fuzz_seed;

/* ------------------------------------------------------------------------------------ */
/* Helpers                                                                              */
/* ------------------------------------------------------------------------------------ */

static bool
quick(void)
{
	const char *q = getenv("GEOREDUCE_TEST_QUICK");

	return q != NULL && *q != '\0' && strcmp(q, "0") != 0;
}

/* A connected pair: sv[0] the writer, sv[1] the reader (non-blocking, as accept()ed). */
static void
pair(int sv[2])
{
	CU_ASSERT_FATAL(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) == 0);
	CU_ASSERT_FATAL(fcntl(sv[1], F_SETFL, O_NONBLOCK) == 0);
}

static void
write_all(int fd, const void *p, size_t n)
{
	const char *c = p;

	while (n > 0) {
		ssize_t w = write(fd, c, n);

		if (w < 0 && errno == EINTR)
			continue;
		CU_ASSERT_FATAL(w > 0);
		c += w;
		n -= (size_t)w;
	}
}

/* A length prefix for n. */
static void
put_len(uint8_t hdr[4], uint32_t n)
{
	hdr[0] = (uint8_t)(n >> 24);
	hdr[1] = (uint8_t)(n >> 16);
	hdr[2] = (uint8_t)(n >> 8);
	hdr[3] = (uint8_t)n;
}

/* Write one frame holding the n bytes at text. */
static void
write_frame(int fd, const char *text, size_t n)
{
	uint8_t hdr[4];

	put_len(hdr, (uint32_t)n);
	write_all(fd, hdr, 4);
	write_all(fd, text, n);
}

/* Read exactly n bytes from a blocking fd. */
static void
read_all(int fd, void *p, size_t n)
{
	char *c = p;

	while (n > 0) {
		ssize_t r = read(fd, c, n);

		if (r < 0 && errno == EINTR)
			continue;
		CU_ASSERT_FATAL(r > 0);
		c += r;
		n -= (size_t)r;
	}
}

/* ctl_conn_read() until it returns non-zero, polling in between (at most ~2 s). */
static int
conn_read_wait(struct ctl_conn *c, json_t **msg, char *err, size_t errlen)
{
	for (int i = 0; i < 2000; i++) {
		struct pollfd pfd = { .fd = c->fd, .events = POLLIN };
		int r = ctl_conn_read(c, msg, err, errlen);

		if (r != 0)
			return r;
		poll(&pfd, 1, 1);
	}
	return 0;
}

static json_t *
parse(const char *text)
{
	json_error_t jerr;
	json_t *v = json_loads(text, 0, &jerr);

	CU_ASSERT_PTR_NOT_NULL_FATAL(v);
	return v;
}

/* ------------------------------------------------------------------------------------ */
/* The worked example and round trips                                                   */
/* ------------------------------------------------------------------------------------ */

/* docs/CONTROL.md, "Worked example": these exact bytes, in both directions. */
static const char example_request[] =
	"\x00\x00\x00\x37"
	"{\"version\":1,\"id\":7,\"op\":\"activate\",\"job\":42,\"epoch\":3}";
static const char example_response[] =
	"\x00\x00\x00\x40"
	"{\"version\":1,\"id\":7,\"ok\":true,\"job\":42,\"epoch\":3,\"state\":\"live\"}";
static const char example_error[] =
	"\x00\x00\x00\x55"
	"{\"version\":1,\"id\":7,\"ok\":false,\"errno\":2,"
	"\"error\":\"nothing staged for job 42 epoch 3\"}";

static void
check_bytes(const char *what, const json_t *msg, const char *want, size_t want_len)
{
	char got[512];
	int sv[2];

	CU_ASSERT_FATAL(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) == 0);
	CHECK(ctl_send(sv[0], msg) == 0, "%s: send", what);
	read_all(sv[1], got, want_len);
	CHECK(memcmp(got, want, want_len) == 0, "%s: bytes differ: got %.*s", what,
	      (int)want_len - 4, got + 4);
	close(sv[0]);
	CHECK(recv(sv[1], got, 1, MSG_DONTWAIT) == 0, "%s: bytes past the frame", what);
	close(sv[1]);
}

static void
test_example(void)
{
	json_t *req = json_pack("{s:i, s:i, s:s, s:i, s:i}", "version", 1, "id", 7, "op",
				"activate", "job", 42, "epoch", 3);
	json_t *resp = ctl_reply_ok(7), *err;
	char e[CTL_ERR_MAX];
	uint32_t id = 0, job = 0, epoch = 0;
	const char *op = NULL;

	CU_ASSERT_PTR_NOT_NULL_FATAL(req);
	CU_ASSERT_PTR_NOT_NULL_FATAL(resp);
	check_bytes("request", req, example_request, sizeof(example_request) - 1);
	CHECK(ctl_request_check(req, &id, &op, e, sizeof(e)) == 0, "%s", e);
	CHECK(id == 7 && op != NULL && strcmp(op, "activate") == 0, "id %u", id);
	CHECK(ctl_args_unpack(req, e, sizeof(e), "{s:u, s:u}", "job", &job, "epoch", &epoch)
	      == 0, "%s", e);
	CHECK(job == 42 && epoch == 3, "job %u epoch %u", job, epoch);
	json_object_set_new(resp, "job", json_integer(42));
	json_object_set_new(resp, "epoch", json_integer(3));
	json_object_set_new(resp, "state", json_string("live"));
	check_bytes("response", resp, example_response, sizeof(example_response) - 1);
	err = ctl_reply_error(true, 7, ENOENT, "nothing staged for job %u epoch %u", 42, 3);
	CU_ASSERT_PTR_NOT_NULL_FATAL(err);
	check_bytes("error", err, example_error, sizeof(example_error) - 1);
	json_decref(req);
	json_decref(resp);
	json_decref(err);
}

struct sender {
	int fd;
	json_t *msg;
	int r;
};

static void *
sender_main(void *arg)
{
	struct sender *s = arg;

	s->r = ctl_send_timeout(s->fd, s->msg, -1);
	return NULL;
}

/* An object whose compact text is exactly `bytes` long: {"s":"xxx..."}. */
static json_t *
object_of_size(size_t bytes)
{
	size_t n = bytes - strlen("{\"s\":\"\"}");
	char *s = malloc(n + 1);
	json_t *v;

	CU_ASSERT_PTR_NOT_NULL_FATAL(s);
	for (size_t i = 0; i < n; i++)
		s[i] = (char)('a' + i % 26);
	s[n] = '\0';
	v = json_pack("{s:s}", "s", s);
	free(s);
	CU_ASSERT_PTR_NOT_NULL_FATAL(v);
	return v;
}

static void
test_roundtrip(void)
{
	static const char *const docs[] = {
		"{}",
		"{\"version\":1,\"id\":4294967295,\"op\":\"stats\"}",
		"{\"a\":[1,2.5,-3e-7,true,false,null],\"b\":{\"c\":\"\\u00e9\\u4e2d\\ud83d\\ude00\"},"
		"\"d\":1.0000000000000002,\"e\":\"line\\nbreak\"}",
	};
	const size_t sizes[] = { 100000, 3u << 20, CTL_MSG_MAX };
	char err[CTL_ERR_MAX];
	struct ctl_conn c;
	json_t *got;
	int sv[2];

	for (size_t i = 0; i < ARRAY_LEN(docs); i++) {
		json_t *m = parse(docs[i]);

		pair(sv);
		CHECK(ctl_send(sv[0], m) == 0, "send %zu", i);
		CHECK(ctl_send(sv[0], m) == 0, "send %zu again", i);
		got = NULL;
		CHECK(ctl_recv(sv[1], 1000, &got, err, sizeof(err)) == 0, "%s", err);
		CHECK(got != NULL && json_equal(got, m), "ctl_recv %zu", i);
		json_decref(got);
		ctl_conn_init(&c, sv[1]);
		got = NULL;
		CHECK(conn_read_wait(&c, &got, err, sizeof(err)) == 1, "%s", err);
		CHECK(got != NULL && json_equal(got, m), "ctl_conn_read %zu", i);
		json_decref(got);
		close(sv[0]);
		CHECK(ctl_conn_read(&c, &got, err, sizeof(err)) == -EPIPE, "EOF");
		CHECK(strstr(err, "closed by the peer") != NULL, "%s", err);
		ctl_conn_fini(&c);
		json_decref(m);
	}
	/* Large frames need a writer thread: the socket buffer is smaller than the frame. */
	for (size_t i = 0; i < ARRAY_LEN(sizes); i++) {
		struct sender s = { 0 };
		pthread_t th;

		if (quick() && sizes[i] == CTL_MSG_MAX)
			continue;
		pair(sv);
		s.fd = sv[0];
		s.msg = object_of_size(sizes[i]);
		CU_ASSERT_FATAL(pthread_create(&th, NULL, sender_main, &s) == 0);
		ctl_conn_init(&c, sv[1]);
		got = NULL;
		CHECK(conn_read_wait(&c, &got, err, sizeof(err)) == 1, "%zu bytes: %s", sizes[i],
		      err);
		pthread_join(th, NULL);
		CHECK(s.r == 0, "%zu bytes: send %d", sizes[i], s.r);
		CHECK(got != NULL && json_equal(got, s.msg), "%zu bytes differ", sizes[i]);
		CHECK(c.cap <= sizes[i], "buffer %zu for a %zu-byte frame", c.cap, sizes[i]);
		json_decref(got);
		json_decref(s.msg);
		close(sv[0]);
		ctl_conn_fini(&c);
	}
	/* One byte too many is refused before anything is sent. */
	{
		json_t *big = object_of_size(CTL_MSG_MAX + 1);

		pair(sv);
		CHECK(ctl_send(sv[0], big) == -EMSGSIZE, "oversize send");
		CHECK(recv(sv[1], err, 1, MSG_DONTWAIT) < 0 && errno == EAGAIN, "bytes sent");
		CHECK(ctl_send(sv[0], json_array_get(json_object_get(big, "s"), 0)) == -EINVAL,
		      "NULL msg");
		json_decref(big);
		big = json_array();
		CHECK(ctl_send(sv[0], big) == -EINVAL, "array msg");
		json_decref(big);
		close(sv[0]);
		close(sv[1]);
	}
}

/* Three frames, the whole stream written one byte at a time. */
static void
test_byte_at_a_time(void)
{
	static const char *const docs[] = {
		"{\"version\":1,\"id\":1,\"op\":\"ping\"}",
		" {\"a\" : [ 1 , 2 ] }\n",
		"{\"s\":\"\\u00e9t\\u00e9\"}",
	};
	char err[CTL_ERR_MAX], stream[512];
	size_t len = 0, end[ARRAY_LEN(docs)];
	struct ctl_conn c;
	size_t next = 0;
	int sv[2];

	for (size_t i = 0; i < ARRAY_LEN(docs); i++) {
		size_t n = strlen(docs[i]);

		put_len((uint8_t *)stream + len, (uint32_t)n);
		memcpy(stream + len + 4, docs[i], n);
		len += 4 + n;
		end[i] = len;
	}
	pair(sv);
	ctl_conn_init(&c, sv[1]);
	for (size_t i = 0; i < len; i++) {
		json_t *got = NULL;
		int r;

		write_all(sv[0], stream + i, 1);
		r = ctl_conn_read(&c, &got, err, sizeof(err));
		if (next < ARRAY_LEN(docs) && i + 1 == end[next]) {
			json_t *want = parse(docs[next]);

			CHECK(r == 1 && got != NULL && json_equal(got, want),
			      "frame %zu at byte %zu: r %d", next, i, r);
			json_decref(want);
			next++;
		} else {
			CHECK(r == 0, "byte %zu: r %d (%s)", i, r, r < 0 ? err : "");
		}
		json_decref(got);
		CHECK(ctl_conn_read(&c, &got, err, sizeof(err)) == 0, "nothing more at %zu", i);
	}
	CHECK(next == ARRAY_LEN(docs), "%zu frames", next);
	close(sv[0]);
	ctl_conn_fini(&c);
}

/* ------------------------------------------------------------------------------------ */
/* Framing failures                                                                     */
/* ------------------------------------------------------------------------------------ */

static void
test_bad_lengths(void)
{
	const uint32_t lens[] = { 0, CTL_MSG_MAX + 1, 0xffffffffu, 0x80000000u };
	char err[CTL_ERR_MAX];
	struct ctl_conn c;
	json_t *got = NULL;
	int sv[2];

	for (size_t i = 0; i < ARRAY_LEN(lens); i++) {
		uint8_t hdr[4];

		pair(sv);
		put_len(hdr, lens[i]);
		write_all(sv[0], hdr, 4);
		write_all(sv[0], "{}", 2);
		ctl_conn_init(&c, sv[1]);
		CHECK(ctl_conn_read(&c, &got, err, sizeof(err)) == -EMSGSIZE, "length %u", lens[i]);
		CHECK(strstr(err, "out of range") != NULL, "%s", err);
		CHECK(ctl_conn_read(&c, &got, err, sizeof(err)) == -EMSGSIZE, "sticky %u", lens[i]);
		CHECK(got == NULL, "no message");
		ctl_conn_fini(&c);
		/* ctl_recv says the same. */
		pair(sv);
		write_all(sv[0], hdr, 4);
		CHECK(ctl_recv(sv[1], 1000, &got, err, sizeof(err)) == -EMSGSIZE, "recv %u",
		      lens[i]);
		close(sv[0]);
		close(sv[1]);
	}
	/* EOF inside the prefix and inside the payload. */
	pair(sv);
	write_all(sv[0], "\0\0", 2);
	close(sv[0]);
	ctl_conn_init(&c, sv[1]);
	CHECK(ctl_conn_read(&c, &got, err, sizeof(err)) == -EPIPE, "EOF in prefix");
	CHECK(strstr(err, "2 of 4") != NULL, "%s", err);
	ctl_conn_fini(&c);
	pair(sv);
	write_all(sv[0], "\0\0\0\x0a{\"a\":", 9);
	close(sv[0]);
	CHECK(ctl_recv(sv[1], 1000, &got, err, sizeof(err)) == -EPIPE, "EOF in payload");
	CHECK(strstr(err, "5 of 10") != NULL, "%s", err);
	close(sv[1]);
	/* Nothing arrives: a timeout, then EOF. */
	pair(sv);
	CHECK(ctl_recv(sv[1], 30, &got, err, sizeof(err)) == -ETIMEDOUT, "timeout");
	close(sv[0]);
	CHECK(ctl_recv(sv[1], 1000, &got, err, sizeof(err)) == -EPIPE, "EOF");
	close(sv[1]);
}

static void
test_bad_payloads(void)
{
	static const struct {
		const char *text;
		size_t len;       /* 0: strlen */
		const char *where; /* expected start of err */
	} cases[] = {
		{ "{\"a\":", 0, "1:5:" },
		{ "{\"a\":1,\"a\":2}", 0, "1:" },            /* duplicate key */
		{ "{} {}", 0, "1:" },                         /* two values */
		{ "{\"a\":\"\xff\"}", 0, "1:" },             /* not UTF-8 */
		{ "{\"a\":\"b\0\"}", 10, "1:" },              /* a NUL byte */
		{ "{\"a\":\"\\u0000\"}", 0, "1:" },           /* NUL escape */
		{ "[1,2]", 0, "1:1: a message must be a JSON object, not an array" },
		{ "\n  \"x\"", 0, "2:3: a message must be a JSON object, not a string" },
		{ "42", 0, "1:1:" },
		{ "null", 0, "1:1:" },
		{ "", 1, "1:" },                              /* one NUL byte */
		{ "   ", 0, "1:" },
	};
	char err[CTL_ERR_MAX];
	struct ctl_conn c;
	json_t *got;
	int sv[2];

	pair(sv);
	ctl_conn_init(&c, sv[1]);
	for (size_t i = 0; i < ARRAY_LEN(cases); i++) {
		size_t n = cases[i].len ? cases[i].len : strlen(cases[i].text);

		write_frame(sv[0], cases[i].text, n);
		write_frame(sv[0], "{\"ok\":1}", 8);
		got = NULL;
		err[0] = '\0';
		CHECK(conn_read_wait(&c, &got, err, sizeof(err)) == -EBADMSG, "case %zu", i);
		CHECK(strncmp(err, cases[i].where, strlen(cases[i].where)) == 0,
		      "case %zu: '%s', want '%s...'", i, err, cases[i].where);
		CHECK(strchr(err, '\n') == NULL, "case %zu: one line", i);
		CHECK(got == NULL, "case %zu: message", i);
		/* The stream stays in step. */
		CHECK(conn_read_wait(&c, &got, err, sizeof(err)) == 1, "case %zu: next", i);
		CHECK(json_is_object(got), "case %zu: next is the object", i);
		json_decref(got);
	}
	ctl_conn_fini(&c);
	close(sv[0]);
	/* ctl_recv too. */
	pair(sv);
	write_frame(sv[0], "[]", 2);
	CHECK(ctl_recv(sv[1], 1000, &got, err, sizeof(err)) == -EBADMSG, "ctl_recv array");
	close(sv[0]);
	close(sv[1]);
}

/* ------------------------------------------------------------------------------------ */
/* Envelopes, arguments, replies                                                        */
/* ------------------------------------------------------------------------------------ */

static void
test_request_check(void)
{
	static const struct {
		const char *req;
		int want;
		bool has_id;
		uint32_t id;
		const char *field; /* in err */
	} cases[] = {
		{ "{\"version\":1,\"id\":0,\"op\":\"ping\"}", 0, true, 0, NULL },
		{ "{\"op\":\"ping\",\"id\":4294967295,\"version\":1,\"x\":1}", 0, true, 4294967295u,
		  NULL },
		{ "{\"version\":2,\"id\":5,\"op\":\"ping\"}", -EPROTONOSUPPORT, true, 5, "'version'" },
		{ "{\"version\":0,\"op\":\"ping\"}", -EPROTONOSUPPORT, false, 0, "'version'" },
		{ "{\"id\":5,\"op\":\"ping\"}", -EINVAL, true, 5, "'version': missing" },
		{ "{\"version\":\"1\",\"id\":5,\"op\":\"ping\"}", -EINVAL, true, 5, "'version'" },
		{ "{\"version\":1.0,\"id\":5,\"op\":\"ping\"}", -EINVAL, true, 5, "'version'" },
		{ "{\"version\":1,\"op\":\"ping\"}", -EINVAL, false, 0, "'id': missing" },
		{ "{\"version\":1,\"id\":-1,\"op\":\"ping\"}", -EINVAL, false, 0, "'id'" },
		{ "{\"version\":1,\"id\":4294967296,\"op\":\"ping\"}", -EINVAL, false, 0, "'id'" },
		{ "{\"version\":1,\"id\":1.5,\"op\":\"ping\"}", -EINVAL, false, 0, "'id'" },
		{ "{\"version\":1,\"id\":\"3\",\"op\":\"ping\"}", -EINVAL, false, 0, "'id'" },
		{ "{\"version\":1,\"id\":null,\"op\":\"ping\"}", -EINVAL, false, 0, "'id'" },
		{ "{\"version\":1,\"id\":true,\"op\":\"ping\"}", -EINVAL, false, 0, "'id'" },
		{ "{\"version\":1,\"id\":9}", -EINVAL, true, 9, "'op': missing" },
		{ "{\"version\":1,\"id\":9,\"op\":\"\"}", -EINVAL, true, 9, "'op'" },
		{ "{\"version\":1,\"id\":9,\"op\":3}", -EINVAL, true, 9, "'op'" },
		{ "[1]", -EINVAL, false, 0, "object" },
	};
	char err[CTL_ERR_MAX];

	for (size_t i = 0; i < ARRAY_LEN(cases); i++) {
		json_t *req = parse(cases[i].req);
		uint32_t id = 12345, id2 = 54321;
		const char *op = NULL;
		int r;

		err[0] = '\0';
		r = ctl_request_check(req, &id, &op, err, sizeof(err));
		CHECK(r == cases[i].want, "case %zu: %d (%s)", i, r, err);
		CHECK(ctl_request_id(req, &id2) == cases[i].has_id, "case %zu: has_id", i);
		if (cases[i].has_id)
			CHECK(id == cases[i].id && id2 == cases[i].id, "case %zu: id %u", i, id);
		else
			CHECK(id == 12345 && id2 == 54321, "case %zu: id touched", i);
		if (r == 0)
			CHECK(op != NULL && strcmp(op, "ping") == 0, "case %zu: op", i);
		else
			CHECK(strstr(err, cases[i].field) != NULL, "case %zu: '%s' lacks %s", i,
			      err, cases[i].field);
		json_decref(req);
	}
}

static void
test_args_unpack(void)
{
	char err[CTL_ERR_MAX];
	uint32_t job = 77, epoch = 88;
	json_int_t big = 0;
	const char *s = NULL;
	json_t *req, *tb = NULL;
	size_t slen = 0;
	double d = 0;
	int b = 0, i = 0;

	req = parse("{\"version\":1,\"id\":1,\"op\":\"activate\",\"job\":4294967295,"
		    "\"epoch\":0}");
	CHECK(ctl_args_unpack(req, err, sizeof(err), "{s:u, s:u}", "job", &job, "epoch",
			      &epoch) == 0, "%s", err);
	CHECK(job == 4294967295u && epoch == 0, "job %u epoch %u", job, epoch);
	/* A key the format does not name. */
	job = 77;
	CHECK(ctl_args_unpack(req, err, sizeof(err), "{s:u}", "job", &job) == -EINVAL, "extra");
	CHECK(strcmp(err, "field 'epoch': unknown field") == 0, "%s", err);
	CHECK(job == 77, "written on failure");
	/* Missing, optional. */
	CHECK(ctl_args_unpack(req, err, sizeof(err), "{s:u, s:u, s:o}", "job", &job, "epoch",
			      &epoch, "table", &tb) == -EINVAL, "missing");
	CHECK(strcmp(err, "field 'table': missing") == 0, "%s", err);
	CHECK(ctl_args_unpack(req, err, sizeof(err), "{s:u, s:u, s?o}", "job", &job, "epoch",
			      &epoch, "table", &tb) == 0, "%s", err);
	CHECK(tb == NULL, "optional written");
	json_decref(req);

	req = parse("{\"version\":1,\"id\":1,\"op\":\"x\",\"job\":-1}");
	CHECK(ctl_args_unpack(req, err, sizeof(err), "{s:u}", "job", &job) == -EINVAL, "-1");
	CHECK(strcmp(err, "field 'job': expected an integer 0..4294967295, got -1") == 0, "%s",
	      err);
	json_decref(req);
	req = parse("{\"version\":1,\"id\":1,\"op\":\"x\",\"job\":\"7\"}");
	CHECK(ctl_args_unpack(req, err, sizeof(err), "{s:u}", "job", &job) == -EINVAL, "str");
	CHECK(strstr(err, "field 'job'") != NULL && strstr(err, "a string") != NULL, "%s", err);
	json_decref(req);

	/* jansson's own value types. */
	req = parse("{\"version\":1,\"id\":1,\"op\":\"x\",\"t\":{\"a\":1},\"s\":\"hi\","
		    "\"b\":true,\"d\":2,\"i\":-5,\"I\":12345678901,\"n\":null}");
	CHECK(ctl_args_unpack(req, err, sizeof(err),
			      "{s:o, s:s%, s:b, s:F, s:i, s:I, s:n}", "t", &tb, "s", &s, &slen,
			      "b", &b, "d", &d, "i", &i, "I", &big, "n") == 0, "%s", err);
	CHECK(json_is_object(tb) && s != NULL && strcmp(s, "hi") == 0 && slen == 2 && b == 1 &&
	      d == 2.0 && i == -5 && big == 12345678901ll, "values");
	CHECK(ctl_args_unpack(req, err, sizeof(err),
			      "{s:o, s:s, s:b, s:f, s:i, s:I, s:n}", "t", &tb, "s", &s, "b", &b,
			      "d", &d, "i", &i, "I", &big, "n") == -EINVAL, "f on an integer");
	CHECK(strcmp(err, "field 'd': expected a real, got an integer") == 0, "%s", err);
	CHECK(ctl_args_unpack(req, err, sizeof(err),
			      "{s:o, s:s, s:b, s:F, s:i, s:i, s:n}", "t", &tb, "s", &s, "b", &b,
			      "d", &d, "i", &i, "I", &i, "n") == -EINVAL, "i overflow");
	CHECK(strstr(err, "field 'I'") != NULL, "%s", err);
	json_decref(req);

	/* Formats this function does not take. */
	req = parse("{\"version\":1,\"id\":1,\"op\":\"x\"}");
	CHECK(ctl_args_unpack(req, err, sizeof(err), "{}") == 0, "empty: %s", err);
	CHECK(ctl_args_unpack(req, err, sizeof(err), "{s:{s:i}}", "a", "b", &i) == -EINVAL,
	      "nested");
	CHECK(strstr(err, "unsupported format") != NULL, "%s", err);
	CHECK(ctl_args_unpack(req, err, sizeof(err), "[i]", &i) == -EINVAL, "array");
	CHECK(ctl_args_unpack(req, err, sizeof(err), "{s?u}*", "job", &job) == -EINVAL,
	      "trailing");
	json_decref(req);
}

static void
test_replies(void)
{
	json_t *r = ctl_reply_ok(4294967295u);
	const char *e;

	CU_ASSERT_PTR_NOT_NULL_FATAL(r);
	CHECK(json_integer_value(json_object_get(r, "version")) == CTL_PROTOCOL_VERSION &&
	      json_integer_value(json_object_get(r, "id")) == 4294967295ll &&
	      json_is_true(json_object_get(r, "ok")) && json_object_size(r) == 3, "ok reply");
	json_decref(r);
	r = ctl_reply_error(false, 99, -EPROTONOSUPPORT, "field '%s': two\nlines\r", "ver\tsion");
	CU_ASSERT_PTR_NOT_NULL_FATAL(r);
	e = json_string_value(json_object_get(r, "error"));
	CHECK(json_is_null(json_object_get(r, "id")), "id null");
	CHECK(json_is_false(json_object_get(r, "ok")), "ok false");
	CHECK(json_integer_value(json_object_get(r, "errno")) == EPROTONOSUPPORT, "errno");
	CHECK(e != NULL && strcmp(e, "field 'ver?sion': two?lines?") == 0, "error '%s'", e);
	json_decref(r);
	r = ctl_reply_error(true, 3, EINVAL, "bad byte \xff here");
	CU_ASSERT_PTR_NOT_NULL_FATAL(r);
	e = json_string_value(json_object_get(r, "error"));
	CHECK(e != NULL && strcmp(e, "bad byte ? here") == 0, "non-UTF-8: '%s'", e);
	CHECK(json_integer_value(json_object_get(r, "id")) == 3, "id 3");
	json_decref(r);
}

/* ------------------------------------------------------------------------------------ */
/* Listening and connecting                                                             */
/* ------------------------------------------------------------------------------------ */

static char tmpdir[64];

static void
sock_path(char *buf, size_t len, const char *name)
{
	snprintf(buf, len, "%s/%s", tmpdir, name);
}

static void
test_listen(void)
{
	struct sockaddr_un sa;
	char path[256], longp[sizeof(sa.sun_path) + 8];
	struct stat st;
	int l, l2, c, s, fd;

	memset(longp, 'x', sizeof(longp) - 1);
	longp[sizeof(longp) - 1] = '\0';
	CHECK(ctl_listen(longp) == -ENAMETOOLONG, "long path");
	CHECK(ctl_connect(longp, 100) == -ENAMETOOLONG, "long path connect");
	longp[sizeof(sa.sun_path)] = '\0';
	CHECK(ctl_listen(longp) == -ENAMETOOLONG, "exactly sun_path bytes");
	CHECK(ctl_listen("") == -EINVAL, "empty path");
	CHECK(ctl_connect("", 100) == -EINVAL, "empty path connect");

	sock_path(path, sizeof(path), "none.sock");
	CHECK(ctl_connect(path, 100) == -ENOENT, "no socket");

	/* A live listener is never taken over. */
	sock_path(path, sizeof(path), "live.sock");
	l = ctl_listen(path);
	CU_ASSERT_FATAL(l >= 0);
	CHECK((fcntl(l, F_GETFL) & O_NONBLOCK) != 0, "non-blocking");
	CHECK((fcntl(l, F_GETFD) & FD_CLOEXEC) != 0, "close-on-exec");
	CHECK(ctl_listen(path) == -EADDRINUSE, "live socket stolen");
	c = ctl_connect(path, 1000);
	CHECK(c >= 0, "connect: %s", strerror(-c));
	CHECK(c < 0 || (fcntl(c, F_GETFL) & O_NONBLOCK) == 0, "client blocking");
	/* The original listener still works: accept the probe and the client. */
	for (int i = 0; i < 2; i++) {
		struct pollfd pfd = { .fd = l, .events = POLLIN };

		poll(&pfd, 1, 1000);
		s = accept4(l, NULL, NULL, SOCK_CLOEXEC);
		CHECK(s >= 0, "accept %d", i);
		if (s >= 0)
			close(s);
	}
	if (c >= 0)
		close(c);
	close(l);

	/* The file left behind is stale now: replaced. */
	CHECK(stat(path, &st) == 0 && S_ISSOCK(st.st_mode), "stale file left");
	CHECK(ctl_connect(path, 100) == -ECONNREFUSED, "stale connect");
	l = ctl_listen(path);
	CHECK(l >= 0, "stale socket not replaced: %s", strerror(l < 0 ? -l : 0));
	l2 = l >= 0 ? ctl_connect(path, 1000) : -1;
	CHECK(l2 >= 0, "connect to the new listener");
	if (l2 >= 0)
		close(l2);
	if (l >= 0)
		close(l);

	/* A path that is no socket is never removed. */
	sock_path(path, sizeof(path), "file");
	fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
	CU_ASSERT_FATAL(fd >= 0);
	close(fd);
	CHECK(ctl_listen(path) == -EEXIST, "regular file");
	CHECK(stat(path, &st) == 0 && S_ISREG(st.st_mode), "regular file removed");
	unlink(path);
	sock_path(path, sizeof(path), "live.sock");
	unlink(path);
}

/* ------------------------------------------------------------------------------------ */
/* A server thread standing in for the dataplane, and ctl_call()                        */
/* ------------------------------------------------------------------------------------ */

struct server {
	int lfd;
	int stop_pipe[2];
	int requests;      /* handled, for the test to read after join */
	int bad_frames;
};

/* Answer one request the way the dataplane's control thread does. */
static void
server_handle(struct server *sv, int fd, json_t *req)
{
	char err[CTL_ERR_MAX];
	uint32_t id = 0, job = 0;
	const char *op = NULL;
	json_t *resp = NULL, *other;
	int r;

	sv->requests++;
	r = ctl_request_check(req, &id, &op, err, sizeof(err));
	if (r < 0) {
		resp = ctl_reply_error(ctl_request_id(req, &id), id, -r, "%s", err);
		goto send;
	}
	if (strcmp(op, "ping") == 0) {
		r = ctl_args_unpack(req, err, sizeof(err), "{}");
		resp = r < 0 ? ctl_reply_error(true, id, EINVAL, "%s", err) : ctl_reply_ok(id);
	} else if (strcmp(op, "remove") == 0) {
		r = ctl_args_unpack(req, err, sizeof(err), "{s:u}", "job", &job);
		if (r < 0)
			resp = ctl_reply_error(true, id, EINVAL, "%s", err);
		else if (job != 1)
			resp = ctl_reply_error(true, id, ENOENT, "field 'job': no job %u", job);
		else
			resp = ctl_reply_ok(id);
	} else if (strcmp(op, "stale") == 0) {
		/* A leftover answer to an earlier call comes first. */
		other = ctl_reply_ok(id + 1000);
		ctl_send(fd, other);
		json_decref(other);
		resp = ctl_reply_ok(id);
		json_object_set_new(resp, "mine", json_true());
	} else if (strcmp(op, "anon") == 0) {
		resp = ctl_reply_error(false, 0, EBADMSG, "cannot tell which request");
	} else if (strcmp(op, "broken") == 0) {
		resp = json_pack("{s:i, s:i}", "version", 1, "id", (int)id);
	} else if (strcmp(op, "silent") == 0) {
		return;
	} else {
		resp = ctl_reply_error(true, id, ENOTSUP, "field 'op': unknown op '%s'", op);
	}
send:
	if (resp != NULL)
		ctl_send(fd, resp);
	json_decref(resp);
}

static void *
server_main(void *arg)
{
	struct server *sv = arg;
	struct ctl_conn conns[4];
	struct pollfd pfd[2 + ARRAY_LEN(conns)];
	char err[CTL_ERR_MAX];
	size_t n_conns = 0;

	for (;;) {
		size_t n = 0;

		pfd[n++] = (struct pollfd){ .fd = sv->stop_pipe[0], .events = POLLIN };
		pfd[n++] = (struct pollfd){ .fd = sv->lfd, .events = POLLIN };
		for (size_t i = 0; i < n_conns; i++)
			pfd[n++] = (struct pollfd){ .fd = conns[i].fd, .events = POLLIN };
		if (poll(pfd, n, 5000) <= 0 || pfd[0].revents != 0)
			break;
		if (pfd[1].revents != 0 && n_conns < ARRAY_LEN(conns)) {
			int fd = accept4(sv->lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);

			if (fd >= 0)
				ctl_conn_init(&conns[n_conns++], fd);
		}
		for (size_t i = 0; i < n_conns; i++) {
			json_t *msg;
			int r;

			if (pfd[2 + i].revents == 0)
				continue;
			while ((r = ctl_conn_read(&conns[i], &msg, err, sizeof(err))) == 1) {
				server_handle(sv, conns[i].fd, msg);
				json_decref(msg);
			}
			if (r == -EBADMSG) {
				json_t *e = ctl_reply_error(false, 0, EBADMSG, "%s", err);

				sv->bad_frames++;
				ctl_send(conns[i].fd, e);
				json_decref(e);
			} else if (r < 0) {
				ctl_conn_fini(&conns[i]);
				conns[i] = conns[--n_conns];
				break; /* pfd indices moved: poll again */
			}
		}
	}
	for (size_t i = 0; i < n_conns; i++)
		ctl_conn_fini(&conns[i]);
	return NULL;
}

static void
test_call(void)
{
	struct server sv = { 0 };
	char path[256], err[CTL_ERR_MAX];
	json_t *resp, *args;
	uint32_t id;
	pthread_t th;
	int fd;

	sock_path(path, sizeof(path), "call.sock");
	sv.lfd = ctl_listen(path);
	CU_ASSERT_FATAL(sv.lfd >= 0);
	CU_ASSERT_FATAL(pipe(sv.stop_pipe) == 0);
	CU_ASSERT_FATAL(pthread_create(&th, NULL, server_main, &sv) == 0);
	fd = ctl_connect(path, 1000);
	CU_ASSERT_FATAL(fd >= 0);

	resp = ctl_call(fd, "ping", NULL, 2000, err, sizeof(err));
	CHECK(resp != NULL && json_is_true(json_object_get(resp, "ok")), "ping: %s", err);
	CHECK(resp != NULL && ctl_request_id(resp, &id), "ping: id");
	json_decref(resp);

	/* Ids go up by one per call; the stale answer with another id is skipped. */
	resp = ctl_call(fd, "stale", NULL, 2000, err, sizeof(err));
	CHECK(resp != NULL && json_is_true(json_object_get(resp, "mine")), "stale: %s", err);
	{
		uint32_t id2 = 0;

		CHECK(resp != NULL && ctl_request_id(resp, &id2) && id2 == id + 1,
		      "ids %u then %u", id, id2);
	}
	json_decref(resp);

	resp = ctl_call(fd, "remove", json_pack("{s:i}", "job", 2), 2000, err, sizeof(err));
	CHECK(resp != NULL && json_is_false(json_object_get(resp, "ok")) &&
	      json_integer_value(json_object_get(resp, "errno")) == ENOENT, "remove 2");
	json_decref(resp);
	resp = ctl_call(fd, "remove", json_pack("{s:i, s:i}", "job", 1, "jbo", 1), 2000, err,
			sizeof(err));
	CHECK(resp != NULL && strcmp(json_string_value(json_object_get(resp, "error")),
				     "field 'jbo': unknown field") == 0, "remove unknown arg");
	json_decref(resp);
	resp = ctl_call(fd, "frobnicate", NULL, 2000, err, sizeof(err));
	CHECK(resp != NULL && json_integer_value(json_object_get(resp, "errno")) == ENOTSUP,
	      "unknown op");
	json_decref(resp);

	/* An error with id null answers the call. */
	resp = ctl_call(fd, "anon", NULL, 2000, err, sizeof(err));
	CHECK(resp != NULL && json_is_null(json_object_get(resp, "id")), "anon: %s", err);
	json_decref(resp);

	/* Failures: reserved argument names, a broken envelope, no answer. */
	resp = ctl_call(fd, "ping", json_pack("{s:i}", "id", 3), 2000, err, sizeof(err));
	CHECK(resp == NULL && errno == EINVAL && strstr(err, "'id'") != NULL, "args id: %s",
	      err);
	args = json_array();
	resp = ctl_call(fd, "ping", args, 2000, err, sizeof(err));
	CHECK(resp == NULL && errno == EINVAL, "args array");
	resp = ctl_call(fd, "broken", NULL, 2000, err, sizeof(err));
	CHECK(resp == NULL && errno == EBADMSG && strstr(err, "'ok'") != NULL, "broken: %s", err);
	resp = ctl_call(fd, "silent", NULL, 50, err, sizeof(err));
	CHECK(resp == NULL && errno == ETIMEDOUT, "silent: %s", err);
	close(fd);

	/* The server answers a frame that is no object with errno EBADMSG and id null. */
	fd = ctl_connect(path, 1000);
	CU_ASSERT_FATAL(fd >= 0);
	write_frame(fd, "[1,2]", 5);
	resp = NULL;
	CHECK(ctl_recv(fd, 2000, &resp, err, sizeof(err)) == 0, "%s", err);
	CHECK(resp != NULL && json_is_null(json_object_get(resp, "id")) &&
	      json_integer_value(json_object_get(resp, "errno")) == EBADMSG, "bad frame reply");
	json_decref(resp);
	/* ... and a request of another version with EPROTONOSUPPORT and its id. */
	write_frame(fd, "{\"version\":2,\"id\":8,\"op\":\"ping\"}", 32);
	resp = NULL;
	CHECK(ctl_recv(fd, 2000, &resp, err, sizeof(err)) == 0, "%s", err);
	CHECK(resp != NULL && json_integer_value(json_object_get(resp, "id")) == 8 &&
	      json_integer_value(json_object_get(resp, "errno")) == EPROTONOSUPPORT,
	      "version 2 reply");
	json_decref(resp);
	/* A zero length: the server closes the connection. */
	write_all(fd, "\0\0\0\0", 4);
	CHECK(ctl_recv(fd, 2000, &resp, err, sizeof(err)) == -EPIPE, "closed after length 0");
	close(fd);

	CHECK(write(sv.stop_pipe[1], "x", 1) == 1, "stop");
	pthread_join(th, NULL);
	CHECK(sv.bad_frames == 1, "bad frames %d", sv.bad_frames);
	close(sv.stop_pipe[0]);
	close(sv.stop_pipe[1]);
	close(sv.lfd);
	unlink(path);
}

/* ------------------------------------------------------------------------------------ */
/* Fuzz: mutated streams through ctl_conn_read()                                        */
/* ------------------------------------------------------------------------------------ */

static const char *const fuzz_frags[] = {
	"{", "}", "[", "]", ",", ":", "\"", "\\", "\\u", "\\ud800", "null", "true", "\"op\"",
	"\"version\":1", "\"id\":", "{\"a\":{\"b\":[", "\xc3", "\xff", "\xed\xa0\x80", " ",
};

static void
test_fuzz(void)
{
	static const char *const seeds[] = {
		"{\"version\":1,\"id\":7,\"op\":\"activate\",\"job\":42,\"epoch\":3}",
		"{\"version\":1,\"id\":1,\"op\":\"install\",\"table\":{\"format\":"
		"\"georeduce-table/1\",\"job\":7,\"trees\":[{\"id\":0,\"rate_gbps\":3.0}]}}",
		"{\"version\":1,\"id\":2,\"ok\":false,\"errno\":22,\"error\":\"field 'x'\"}",
	};
	unsigned long iters = fuzz_env_ulong("GEOREDUCE_FUZZ_ITERS", quick() ? 300 : 3000);
	uint64_t s = fuzz_seed;
	struct sbuf b = { 0 };
	unsigned long frames = 0, bad = 0, fatal = 0;

	for (unsigned long it = 0; it < iters; it++) {
		char stream[4096], err[CTL_ERR_MAX];
		size_t len = 0, off = 0;
		struct ctl_conn c;
		int sv[2], r = 0;

		/* A few frames, each text mutated, some lengths lying. */
		for (int f = 0; f < 3; f++) {
			uint32_t n;

			sb_set(&b, seeds[rnd(&s, ARRAY_LEN(seeds))]);
			for (size_t m = rnd(&s, 4); m > 0; m--)
				fuzz_mutate(&b, &s, fuzz_frags, ARRAY_LEN(fuzz_frags));
			if (b.len + 8 > sizeof(stream) - len)
				break;
			n = (uint32_t)b.len;
			switch (rnd(&s, 12)) {
			case 0:
				n = (uint32_t)rng_next(&s);
				break;
			case 1:
				n = n > 0 ? n - 1 : 0;
				break;
			case 2:
				n = n + 1;
				break;
			default:
				break;
			}
			put_len((uint8_t *)stream + len, n);
			memcpy(stream + len + 4, b.p, b.len);
			len += 4 + b.len;
		}
		pair(sv);
		ctl_conn_init(&c, sv[1]);
		/* Feed it in random pieces; read after each. */
		while (off < len && r >= 0) {
			size_t piece = 1 + rnd(&s, 64);
			json_t *msg = NULL;

			if (piece > len - off)
				piece = len - off;
			write_all(sv[0], stream + off, piece);
			off += piece;
			if (off == len)
				close(sv[0]);
			do {
				msg = NULL;
				r = ctl_conn_read(&c, &msg, err, sizeof(err));
				if (r == 1) {
					frames++;
					CHECK(json_is_object(msg), "iteration %lu: not an object", it);
					json_decref(msg);
				} else if (r == -EBADMSG) {
					bad++;
					CHECK(msg == NULL && strchr(err, '\n') == NULL,
					      "iteration %lu: EBADMSG", it);
				}
			} while (r == 1 || r == -EBADMSG);
			CHECK(r == 0 || r == -EPIPE || r == -EMSGSIZE,
			      "iteration %lu: unexpected %d (%s)", it, r, err);
			CHECK(c.cap <= CTL_MSG_MAX, "buffer %zu", c.cap);
			if (r < 0)
				fatal++;
		}
		if (off < len)
			close(sv[0]);
		ctl_conn_fini(&c);
	}
	free(b.p);
	printf("\n  fuzz: %lu iterations, %lu objects, %lu bad frames, %lu closed\n", iters,
	       frames, bad, fatal);
	CHECK(frames > 0 && bad > 0, "the fuzzer reached neither branch");
}

/* ------------------------------------------------------------------------------------ */
/* main                                                                                 */
/* ------------------------------------------------------------------------------------ */

static const struct testutil_case tests[] = {
	{ "CONTROL.md worked example, byte for byte", test_example },
	{ "round trips: small, large, CTL_MSG_MAX", test_roundtrip },
	{ "one byte at a time through ctl_conn_read", test_byte_at_a_time },
	{ "framing: zero, oversize lengths, EOF, timeout", test_bad_lengths },
	{ "framing: invalid JSON, non-objects", test_bad_payloads },
	{ "request envelope", test_request_check },
	{ "strict arguments", test_args_unpack },
	{ "replies", test_replies },
	{ "listen: long, live, stale, foreign paths", test_listen },
	{ "ctl_call against a server thread", test_call },
	{ "fuzz: mutated streams", test_fuzz },
};

int
main(void)
{
	const char *seed = getenv("GEOREDUCE_FUZZ_SEED");
	int rc;

	fuzz_seed = seed != NULL ? strtoull(seed, NULL, 0) : 0xc7105e5;
	printf("test_ctlmsg: seed 0x%" PRIx64 " (GEOREDUCE_FUZZ_SEED)\n", fuzz_seed);
	snprintf(tmpdir, sizeof(tmpdir), "/tmp/test_ctlmsg.XXXXXX");
	if (mkdtemp(tmpdir) == NULL) {
		perror("test_ctlmsg: mkdtemp");
		return 1;
	}
	rc = testutil_run("test_ctlmsg", "ctlmsg", tests, TESTUTIL_N(tests));
	rmdir(tmpdir);
	return rc;
}
