/* SPDX-License-Identifier: BSD-3-Clause
 *
 * libFuzzer harness of the control protocol (lib/ctlmsg.c, lib/ctlreq.c). Byte 0 picks
 * the side and seeds the sizes the transport hands out; the rest is the byte stream a
 * peer sent, read through a struct ctl_io_ops transport that returns it in pieces of
 * varying size, with "would block" in between, then the end of the stream.
 *   Server side (byte 0 even): ctl_conn_read() until the stream ends or breaks; every
 *   frame that is an object goes through ctl_request_check() and ctl_args_unpack() with
 *   the formats the dataplane and georeduce-control use, and an error reply is built.
 *   Client side (byte 0 odd): ctl_conn_call() reads the stream as the responses to one
 *   call (the response envelope checks, frames of other calls skipped).
 * Checks: no crash, no undefined behaviour, no leak; ctl_conn_read() returns only the
 * values its contract lists, a frame it returns is an object, and a broken stream stays
 * broken.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "ctlmsg.h"

struct feed {
	const uint8_t *data;
	size_t size, pos;
	uint32_t seed;
	int again;
	int no_again; /* the client's call waits for nothing: never "would block" */
};

static long
feed_read(void *io, void *buf, size_t n, short *want)
{
	struct feed *f = io;
	size_t k;

	(void)want;
	if (f->pos >= f->size)
		return 0;
	f->seed = f->seed * 1103515245u + 12345u;
	if (!f->no_again && (f->seed >> 16) % 5 == 0 && !f->again) {
		f->again = 1;
		return -EAGAIN;
	}
	f->again = 0;
	k = 1 + (f->seed >> 8) % 64;
	if ((f->seed >> 20) % 4 == 0)
		k = f->size - f->pos;
	if (k > n)
		k = n;
	if (k > f->size - f->pos)
		k = f->size - f->pos;
	memcpy(buf, f->data + f->pos, k);
	f->pos += k;
	return (long)k;
}

static long
feed_write(void *io, const void *buf, size_t n, short *want)
{
	(void)io;
	(void)buf;
	(void)want;
	return (long)n;
}

static void
feed_close(void *io)
{
	(void)io;
}

static const struct ctl_io_ops feed_ops = {
	.read = feed_read,
	.write = feed_write,
	.close = feed_close,
	.why = NULL,
};

/* What the dataplane's and georeduce-control's ops ask of their arguments. */
static void
unpack_all(const json_t *req)
{
	char err[256];
	uint32_t a = 0, b = 0, c = 0, d = 0;
	json_t *o = NULL;
	const char *s = NULL;
	size_t slen = 0;
	int i = 0;
	double x = 0;

	(void)ctl_args_unpack(req, err, sizeof(err), "{}");
	(void)ctl_args_unpack(req, err, sizeof(err), "{s:o}", "table", &o);
	(void)ctl_args_unpack(req, err, sizeof(err), "{s:u,s:u}", "job", &a, "epoch", &b);
	(void)ctl_args_unpack(req, err, sizeof(err), "{s?u}", "job", &a);
	(void)ctl_args_unpack(req, err, sizeof(err), "{s:o}", "peers", &o);
	(void)ctl_args_unpack(req, err, sizeof(err), "{s:u,s:u,s?u,s?u}", "job", &a, "worker", &b,
			      "after", &c, "wait_ms", &d);
	(void)ctl_args_unpack(req, err, sizeof(err), "{s:s%,s?b,s?i,s?f}", "name", &s, &slen,
			      "flag", &i, "n", &i, "x", &x);
}

static void
server_side(struct feed *f)
{
	struct ctl_conn c;
	char err[256];
	int r = 0, broken = 0;

	ctl_conn_init_io(&c, -1, &feed_ops, f);
	for (int iter = 0; iter < 100000; iter++) {
		json_t *msg = NULL, *reply;
		const char *op = NULL;
		uint32_t id = 0;

		r = ctl_conn_read(&c, &msg, err, sizeof(err));
		if (broken != 0 && r != broken)
			abort();
		if (r == 1) {
			if (!json_is_object(msg))
				abort();
			if (ctl_request_check(msg, &id, &op, err, sizeof(err)) == 0)
				unpack_all(msg);
			reply = ctl_reply_error(ctl_request_id(msg, &id), id, EINVAL, "%s", err);
			json_decref(reply);
			json_decref(msg);
			continue;
		}
		if (r == 0 || r == -EBADMSG)
			continue;
		if (r != -EPIPE && r != -EMSGSIZE && r != -ENOMEM)
			abort();
		if (broken != 0)
			break;
		broken = r;
	}
	ctl_conn_fini(&c);
}

static void
client_side(struct feed *f)
{
	struct ctl_conn c;
	char err[256];
	json_t *resp, *args = json_pack("{s:i}", "job", 1);

	ctl_conn_init_io(&c, -1, &feed_ops, f);
	resp = ctl_conn_call(&c, "stats", args, 0, err, sizeof(err));
	json_decref(resp);
	ctl_conn_fini(&c);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct feed f;

	if (size < 1)
		return 0;
	memset(&f, 0, sizeof(f));
	f.data = data + 1;
	f.size = size - 1;
	f.seed = data[0];
	f.no_again = data[0] & 1;
	if (data[0] & 1)
		client_side(&f);
	else
		server_side(&f);
	return 0;
}
