/* SPDX-License-Identifier: BSD-3-Clause */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "ctlmsg.h"
#include "jsonutil.h"

/* The reader keeps a buffer of at most this size between frames; bigger ones are freed. */
#define CONN_KEEP_BYTES (64u << 10)
#define LISTEN_BACKLOG 16
/* Pause between connect attempts while the listener's backlog is full. */
#define CONNECT_RETRY_MS 5

static const char *const envelope_keys[] = { "version", "id", "op" };

/* ---- time ---------------------------------------------------------------------------- */

/* The deadline for a timeout: -1 means none. */
static int64_t
deadline_of(int timeout_ms)
{
	return timeout_ms < 0 ? -1 : clock_now_ms() + timeout_ms;
}

/* Milliseconds left before deadline, for poll(): -1 (no deadline) or 0 .. INT_MAX. */
static int
ms_left(int64_t deadline)
{
	int64_t left;

	if (deadline < 0)
		return -1;
	left = deadline - clock_now_ms();
	if (left < 0)
		return 0;
	return left > INT_MAX ? INT_MAX : (int)left;
}

/* ---- sockets ------------------------------------------------------------------------- */

static int
fill_addr(const char *path, struct sockaddr_un *sa)
{
	size_t n;

	if (path == NULL || path[0] == '\0')
		return -EINVAL;
	n = strlen(path);
	if (n >= sizeof(sa->sun_path))
		return -ENAMETOOLONG;
	memset(sa, 0, sizeof(*sa));
	sa->sun_family = AF_UNIX;
	memcpy(sa->sun_path, path, n + 1);
	return 0;
}

/* A non-blocking, close-on-exec unix stream socket and the address of path: fd or -errno. */
static int
unix_socket(const char *path, struct sockaddr_un *sa)
{
	int r = fill_addr(path, sa), fd;

	if (r < 0)
		return r;
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	return fd < 0 ? -errno : fd;
}

/*
 * Whether something listens at sa: 1 yes (a connect succeeds or is only deferred because
 * the backlog is full), 0 no (refused: a stale file), -ENOENT gone, other negative errno.
 */
static int
probe_listener(const struct sockaddr_un *sa)
{
	int fd, r, e;

	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	do {
		r = connect(fd, (const struct sockaddr *)sa, sizeof(*sa));
	} while (r < 0 && errno == EINTR);
	e = errno;
	close(fd);
	if (r == 0 || e == EAGAIN || e == EINPROGRESS)
		return 1;
	if (e == ECONNREFUSED)
		return 0;
	return -e;
}

int
ctl_listen(const char *path)
{
	struct sockaddr_un sa;
	struct stat st;
	int fd, r, live;

	fd = unix_socket(path, &sa);
	if (fd < 0)
		return fd;
	/* Two rounds: a stale file is removed once, then the bind must succeed. */
	for (int round = 0;; round++) {
		if (bind(fd, (const struct sockaddr *)&sa, sizeof(sa)) == 0)
			break;
		r = -errno;
		if (r != -EADDRINUSE || round > 0)
			goto fail;
		if (lstat(path, &st) < 0) {
			if (errno == ENOENT)
				continue;
			r = -errno;
			goto fail;
		}
		if (!S_ISSOCK(st.st_mode)) {
			r = -EEXIST;
			goto fail;
		}
		live = probe_listener(&sa);
		if (live == 1) {
			r = -EADDRINUSE;
			goto fail;
		}
		if (live < 0 && live != -ENOENT) {
			r = live;
			goto fail;
		}
		if (live == 0 && unlink(path) < 0 && errno != ENOENT) {
			r = -errno;
			goto fail;
		}
	}
	if (listen(fd, LISTEN_BACKLOG) < 0) {
		r = -errno;
		unlink(path);
		goto fail;
	}
	return fd;
fail:
	close(fd);
	return r;
}

int
ctl_connect(const char *path, int timeout_ms)
{
	int64_t deadline = deadline_of(timeout_ms);
	struct sockaddr_un sa;
	int fd, r, flags;

	fd = unix_socket(path, &sa);
	if (fd < 0)
		return fd;
	/*
	 * A unix connect completes at once or fails with EAGAIN while the listener's backlog
	 * is full; that cannot be polled for, so retry until the deadline.
	 */
	for (;;) {
		if (connect(fd, (const struct sockaddr *)&sa, sizeof(sa)) == 0)
			break;
		r = -errno;
		if (r == -EINTR)
			continue;
		if (r != -EAGAIN && r != -EINPROGRESS)
			goto fail;
		if (ms_left(deadline) == 0) {
			r = -ETIMEDOUT;
			goto fail;
		}
		nanosleep(&(struct timespec){ 0, CONNECT_RETRY_MS * 1000000L }, NULL);
	}
	flags = fcntl(fd, F_GETFL);
	if (flags < 0 || fcntl(fd, F_SETFL, flags & ~O_NONBLOCK) < 0) {
		r = -errno;
		goto fail;
	}
	return fd;
fail:
	close(fd);
	return r;
}

/* ---- sending ------------------------------------------------------------------------- */

int
ctl_send_timeout(int fd, const json_t *msg, int timeout_ms)
{
	int64_t deadline = deadline_of(timeout_ms);
	uint8_t hdr[CTL_HDR_BYTES];
	struct iovec iov[2];
	struct msghdr mh;
	size_t len, left;
	ssize_t n;
	char *text;
	int r = 0;

	if (!json_is_object(msg))
		return -EINVAL;
	text = json_dumps(msg, JSON_COMPACT | JSON_REAL_PRECISION(17));
	if (text == NULL)
		return -ENOMEM;
	len = strlen(text);
	if (len == 0 || len > CTL_MSG_MAX) {
		free(text);
		return -EMSGSIZE;
	}
	hdr[0] = (uint8_t)(len >> 24);
	hdr[1] = (uint8_t)(len >> 16);
	hdr[2] = (uint8_t)(len >> 8);
	hdr[3] = (uint8_t)len;
	iov[0] = (struct iovec){ .iov_base = hdr, .iov_len = sizeof(hdr) };
	iov[1] = (struct iovec){ .iov_base = text, .iov_len = len };
	memset(&mh, 0, sizeof(mh));
	mh.msg_iov = iov;
	mh.msg_iovlen = 2;
	left = sizeof(hdr) + len;
	while (left > 0) {
		n = sendmsg(fd, &mh, MSG_NOSIGNAL);
		if (n < 0) {
			struct pollfd pfd = { .fd = fd, .events = POLLOUT };
			int p;

			if (errno == EINTR)
				continue;
			if (errno != EAGAIN && errno != EWOULDBLOCK) {
				r = -errno;
				break;
			}
			p = poll(&pfd, 1, ms_left(deadline));
			if (p < 0 && errno != EINTR) {
				r = -errno;
				break;
			}
			if (p == 0) {
				r = -ETIMEDOUT;
				break;
			}
			continue;
		}
		left -= (size_t)n;
		/* Skip what was written: drop finished iovecs, advance into the current one. */
		while (mh.msg_iovlen > 0 && (size_t)n >= mh.msg_iov[0].iov_len) {
			n -= (ssize_t)mh.msg_iov[0].iov_len;
			mh.msg_iov++;
			mh.msg_iovlen--;
		}
		if (mh.msg_iovlen > 0) {
			mh.msg_iov[0].iov_base = (char *)mh.msg_iov[0].iov_base + n;
			mh.msg_iov[0].iov_len -= (size_t)n;
		}
	}
	free(text);
	return r;
}

int
ctl_send(int fd, const json_t *msg)
{
	return ctl_send_timeout(fd, msg, CTL_SEND_TIMEOUT_MS);
}

/* Write all of buf through c's transport, waiting for room until deadline. */
static int
io_write_all(struct ctl_conn *c, const uint8_t *buf, size_t len, int64_t deadline)
{
	while (len > 0) {
		short want = POLLOUT;
		long n = c->ops->write(c->io, buf, len, &want);
		struct pollfd pfd = { .fd = c->fd, .events = want };
		int p;

		if (n > 0) {
			buf += n;
			len -= (size_t)n;
			continue;
		}
		if (n != -EAGAIN)
			return n < 0 ? (int)n : -EPIPE;
		p = poll(&pfd, 1, ms_left(deadline));
		if (p < 0 && errno != EINTR)
			return -errno;
		if (p == 0)
			return -ETIMEDOUT;
	}
	return 0;
}

int
ctl_conn_send(struct ctl_conn *c, const json_t *msg, int timeout_ms)
{
	int64_t deadline = deadline_of(timeout_ms);
	uint8_t *frame;
	size_t len;
	char *text;
	int r;

	if (c->ops == NULL)
		return ctl_send_timeout(c->fd, msg, timeout_ms);
	if (!json_is_object(msg))
		return -EINVAL;
	text = json_dumps(msg, JSON_COMPACT | JSON_REAL_PRECISION(17));
	if (text == NULL)
		return -ENOMEM;
	len = strlen(text);
	if (len == 0 || len > CTL_MSG_MAX) {
		free(text);
		return -EMSGSIZE;
	}
	/* One buffer: the length and the text go out in as few records as they fit. */
	frame = malloc(CTL_HDR_BYTES + len);
	if (frame == NULL) {
		free(text);
		return -ENOMEM;
	}
	frame[0] = (uint8_t)(len >> 24);
	frame[1] = (uint8_t)(len >> 16);
	frame[2] = (uint8_t)(len >> 8);
	frame[3] = (uint8_t)len;
	memcpy(frame + CTL_HDR_BYTES, text, len);
	free(text);
	r = io_write_all(c, frame, CTL_HDR_BYTES + len, deadline);
	free(frame);
	return r;
}

/* ---- receiving ----------------------------------------------------------------------- */

void
ctl_conn_init(struct ctl_conn *c, int fd)
{
	memset(c, 0, sizeof(*c));
	c->fd = fd;
	c->want = POLLIN;
}

void
ctl_conn_init_io(struct ctl_conn *c, int fd, const struct ctl_io_ops *ops, void *io)
{
	ctl_conn_init(c, fd);
	c->ops = ops;
	c->io = io;
}

/* Free the buffer; keep the fd. */
static void
conn_release(struct ctl_conn *c)
{
	free(c->buf);
	c->buf = NULL;
	c->cap = 0;
}

void
ctl_conn_fini(struct ctl_conn *c)
{
	conn_release(c);
	if (c->ops != NULL && c->ops->close != NULL)
		c->ops->close(c->io);
	if (c->fd >= 0)
		close(c->fd);
	ctl_conn_init(c, -1);
}

static const char *
json_type_desc(const json_t *v)
{
	switch (json_typeof(v)) {
	case JSON_OBJECT:
		return "an object";
	case JSON_ARRAY:
		return "an array";
	case JSON_STRING:
		return "a string";
	case JSON_INTEGER:
		return "an integer";
	case JSON_REAL:
		return "a real";
	case JSON_TRUE:
		return "true";
	case JSON_FALSE:
		return "false";
	default:
		return "null";
	}
}

/* Parse the complete payload in c->buf: 1 with *msg, or -EBADMSG / -ENOMEM with err. */
static int
conn_parse(struct ctl_conn *c, json_t **msg, char *err, size_t errlen)
{
	json_error_t jerr;
	json_t *v;
	int line = 1, col = 1;

	v = json_loadb(c->buf, c->len, JSON_REJECT_DUPLICATES | JSON_DECODE_ANY, &jerr);
	if (v == NULL) {
		if (json_error_code(&jerr) == json_error_out_of_memory) {
			json_util_fail(err, errlen, "out of memory parsing a %u-byte frame", c->len);
			return -ENOMEM;
		}
		json_util_fail(err, errlen, "%d:%d: invalid JSON: %s", jerr.line, jerr.column,
			       jerr.text);
		return -EBADMSG;
	}
	if (!json_is_object(v)) {
		/* Point at the value: skip the whitespace JSON allows before it. */
		for (size_t i = 0; i < c->len && (c->buf[i] == ' ' || c->buf[i] == '\t' ||
						  c->buf[i] == '\r' || c->buf[i] == '\n'); i++) {
			if (c->buf[i] == '\n') {
				line++;
				col = 1;
			} else {
				col++;
			}
		}
		json_util_fail(err, errlen, "%d:%d: a message must be a JSON object, not %s",
			       line, col, json_type_desc(v));
		json_decref(v);
		return -EBADMSG;
	}
	*msg = v;
	return 1;
}

/* Start the next frame; keep a small buffer for it. */
static void
conn_next(struct ctl_conn *c)
{
	if (c->cap > CONN_KEEP_BYTES)
		conn_release(c);
	c->hdr_got = 0;
	c->len = 0;
	c->got = 0;
}

static int
conn_broken(struct ctl_conn *c, int r, char *err, size_t errlen, const char *fmt, ...)
	__attribute__((format(printf, 5, 6)));

/* Mark c broken with r and say why in err. */
static int
conn_broken(struct ctl_conn *c, int r, char *err, size_t errlen, const char *fmt, ...)
{
	char msg[CTL_ERR_MAX];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	json_util_fail(err, errlen, "%s", msg);
	c->broken = r;
	conn_release(c);
	return r;
}

/* Make room for more payload: grow with what arrived, never past the frame length. */
static int
conn_grow(struct ctl_conn *c)
{
	size_t want = c->cap == 0 ? CONN_KEEP_BYTES : c->cap * 2;
	char *nb;

	if (want > c->len)
		want = c->len;
	if (want <= c->cap)
		return 0;
	nb = realloc(c->buf, want + 1);
	if (nb == NULL)
		return -ENOMEM;
	c->buf = nb;
	c->cap = want;
	return 0;
}

/* Read up to n bytes from c without blocking: as recv(), with errno set on -1. */
static ssize_t
conn_recv(struct ctl_conn *c, void *buf, size_t n)
{
	long r;

	c->want = POLLIN;
	if (c->ops == NULL)
		return recv(c->fd, buf, n, MSG_DONTWAIT);
	r = c->ops->read(c->io, buf, n, &c->want);
	if (r >= 0)
		return r;
	errno = (int)-r;
	return -1;
}

int
ctl_conn_read(struct ctl_conn *c, json_t **msg, char *err, size_t errlen)
{
	ssize_t n;
	int r;

	if (c->broken != 0) {
		json_util_fail(err, errlen, "connection already failed: %s",
			       strerror(-c->broken));
		return c->broken;
	}
	for (;;) {
		if (c->hdr_got < CTL_HDR_BYTES) {
			n = conn_recv(c, c->hdr + c->hdr_got, CTL_HDR_BYTES - c->hdr_got);
		} else {
			/* A buffer kept from a longer frame is used up to this frame's end. */
			size_t end = c->cap < c->len ? c->cap : c->len;

			if (c->got == end) {
				if (conn_grow(c) < 0)
					return conn_broken(c, -ENOMEM, err, errlen,
							   "out of memory for a %u-byte frame",
							   c->len);
				end = c->cap < c->len ? c->cap : c->len;
			}
			n = conn_recv(c, c->buf + c->got, end - c->got);
		}
		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN || errno == EWOULDBLOCK)
				return 0;
			r = -errno;
			if (c->ops != NULL && c->ops->why != NULL && c->ops->why(c->io) != NULL)
				return conn_broken(c, r, err, errlen, "receive: %s",
						   c->ops->why(c->io));
			return conn_broken(c, r, err, errlen, "receive: %s", strerror(-r));
		}
		if (n == 0) {
			if (c->hdr_got == 0)
				return conn_broken(c, -EPIPE, err, errlen,
						   "connection closed by the peer");
			if (c->hdr_got < CTL_HDR_BYTES)
				return conn_broken(c, -EPIPE, err, errlen,
						   "connection closed inside a length prefix "
						   "(%zu of 4 bytes)", c->hdr_got);
			return conn_broken(c, -EPIPE, err, errlen,
					   "connection closed inside a frame (%zu of %u bytes)",
					   c->got, c->len);
		}
		if (c->hdr_got < CTL_HDR_BYTES) {
			c->hdr_got += (size_t)n;
			if (c->hdr_got < CTL_HDR_BYTES)
				continue;
			c->len = (uint32_t)c->hdr[0] << 24 | (uint32_t)c->hdr[1] << 16 |
				 (uint32_t)c->hdr[2] << 8 | c->hdr[3];
			if (c->len == 0 || c->len > CTL_MSG_MAX)
				return conn_broken(c, -EMSGSIZE, err, errlen,
						   "frame length %u is out of range 1..%u",
						   c->len, CTL_MSG_MAX);
			continue;
		}
		c->got += (size_t)n;
		if (c->got < c->len)
			continue;
		c->buf[c->len] = '\0';
		r = conn_parse(c, msg, err, errlen);
		conn_next(c);
		if (r == -ENOMEM) {
			c->broken = r;
			conn_release(c);
		}
		return r;
	}
}

int
ctl_conn_recv(struct ctl_conn *c, int timeout_ms, json_t **msg, char *err, size_t errlen)
{
	int64_t deadline = deadline_of(timeout_ms);
	int r, p;

	for (;;) {
		struct pollfd pfd = { .fd = c->fd };

		r = ctl_conn_read(c, msg, err, errlen);
		if (r != 0)
			break;
		pfd.events = c->want;
		p = poll(&pfd, 1, ms_left(deadline));
		if (p < 0 && errno != EINTR) {
			r = -errno;
			json_util_fail(err, errlen, "poll: %s", strerror(-r));
			break;
		}
		if (p == 0) {
			r = -ETIMEDOUT;
			json_util_fail(err, errlen, "no complete frame within %d ms", timeout_ms);
			break;
		}
	}
	return r == 1 ? 0 : r;
}

int
ctl_recv(int fd, int timeout_ms, json_t **msg, char *err, size_t errlen)
{
	struct ctl_conn c;
	int r;

	ctl_conn_init(&c, fd);
	r = ctl_conn_recv(&c, timeout_ms, msg, err, errlen);
	conn_release(&c);
	return r;
}

/* ---- requests and responses ---------------------------------------------------------- */

/* A uint32 in v: true with *out set, or false. */
static bool
get_u32(const json_t *v, uint32_t *out)
{
	json_int_t x;

	if (!json_is_integer(v))
		return false;
	x = json_integer_value(v);
	if (x < 0 || x > (json_int_t)UINT32_MAX)
		return false;
	*out = (uint32_t)x;
	return true;
}

/* "field 'k': expected an integer 0..4294967295, got ..." */
static int
fail_u32(char *err, size_t errlen, const char *key, const json_t *v)
{
	if (json_is_integer(v))
		return json_util_fail(err, errlen,
				      "field '%s': expected an integer 0..4294967295, got %"
				      JSON_INTEGER_FORMAT, key, json_integer_value(v));
	return json_util_fail(err, errlen,
			      "field '%s': expected an integer 0..4294967295, got %s", key,
			      json_type_desc(v));
}

bool
ctl_request_id(const json_t *req, uint32_t *id)
{
	return json_is_object(req) && get_u32(json_object_get(req, "id"), id);
}

int
ctl_request_check(const json_t *req, uint32_t *id, const char **op, char *err,
		  size_t errlen)
{
	const json_t *v;

	if (!json_is_object(req))
		return json_util_fail(err, errlen, "request: expected a JSON object");
	ctl_request_id(req, id);
	v = json_object_get(req, "version");
	if (v == NULL)
		return json_util_fail(err, errlen, "field 'version': missing");
	if (!json_is_integer(v))
		return json_util_fail(err, errlen, "field 'version': expected an integer, got %s",
				      json_type_desc(v));
	if (json_integer_value(v) != CTL_PROTOCOL_VERSION) {
		json_util_fail(err, errlen,
			       "field 'version': protocol version %" JSON_INTEGER_FORMAT
			       " is not supported (only %d)", json_integer_value(v),
			       CTL_PROTOCOL_VERSION);
		return -EPROTONOSUPPORT;
	}
	v = json_object_get(req, "id");
	if (v == NULL)
		return json_util_fail(err, errlen, "field 'id': missing");
	if (!get_u32(v, id))
		return fail_u32(err, errlen, "id", v);
	v = json_object_get(req, "op");
	if (v == NULL)
		return json_util_fail(err, errlen, "field 'op': missing");
	if (!json_is_string(v) || json_string_length(v) == 0)
		return json_util_fail(err, errlen, "field 'op': expected a non-empty string, got %s",
				      json_is_string(v) ? "\"\"" : json_type_desc(v));
	*op = json_string_value(v);
	return 0;
}

json_t *
ctl_reply_ok(uint32_t id)
{
	json_t *r = json_object();

	if (r == NULL)
		return NULL;
	if (json_object_set_new(r, "version", json_integer(CTL_PROTOCOL_VERSION)) < 0 ||
	    json_object_set_new(r, "id", json_integer(id)) < 0 ||
	    json_object_set_new(r, "ok", json_true()) < 0) {
		json_decref(r);
		return NULL;
	}
	return r;
}

json_t *
ctl_reply_error(bool has_id, uint32_t id, int errnum, const char *fmt, ...)
{
	char msg[CTL_ERR_MAX], line[CTL_ERR_MAX];
	json_t *r = json_object();
	va_list ap;

	if (r == NULL)
		return NULL;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	json_util_fail(line, sizeof(line), "%s", msg);
	if (errnum < 0)
		errnum = -errnum;
	/* json_string() refuses text that is not UTF-8: fall back to an escaped copy. */
	if (json_object_set_new(r, "version", json_integer(CTL_PROTOCOL_VERSION)) < 0 ||
	    json_object_set_new(r, "id", has_id ? json_integer(id) : json_null()) < 0 ||
	    json_object_set_new(r, "ok", json_false()) < 0 ||
	    json_object_set_new(r, "errno", json_integer(errnum)) < 0)
		goto fail;
	if (json_object_set_new(r, "error", json_string(line)) < 0) {
		for (char *c = line; *c != '\0'; c++)
			if ((unsigned char)*c >= 0x80)
				*c = '?';
		if (json_object_set_new(r, "error", json_string(line)) < 0)
			goto fail;
	}
	return r;
fail:
	json_decref(r);
	return NULL;
}

/* ---- strict argument unpacking ------------------------------------------------------- */

struct arg_spec {
	const char *key;
	bool optional;
	char type;        /* i I b s f F o O n u */
	bool with_len;    /* "s%" */
	union {
		int *i;
		json_int_t *I;
		const char **s;
		double *f;
		json_t **o;
		uint32_t *u;
	} out;
	size_t *len_out;  /* "s%" */
};

static bool
is_fmt_sep(char c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == ',' || c == ':';
}

/* Read fmt and the matching arguments into specs. Returns the count, or -1 on a bad fmt. */
static int
args_parse_fmt(const char *fmt, va_list ap, struct arg_spec *specs)
{
	const char *p = fmt;
	int n = 0;

	while (is_fmt_sep(*p))
		p++;
	if (*p++ != '{')
		return -1;
	for (;;) {
		struct arg_spec *a = &specs[n];

		while (is_fmt_sep(*p))
			p++;
		if (*p == '!')
			p++;
		while (is_fmt_sep(*p))
			p++;
		if (*p == '}')
			break;
		if (*p++ != 's' || n == CTL_ARGS_MAX)
			return -1;
		memset(a, 0, sizeof(*a));
		if (*p == '?') {
			a->optional = true;
			p++;
		}
		while (is_fmt_sep(*p))
			p++;
		a->type = *p++;
		a->key = va_arg(ap, const char *);
		switch (a->type) {
		case 'i':
		case 'b':
			a->out.i = va_arg(ap, int *);
			break;
		case 'I':
			a->out.I = va_arg(ap, json_int_t *);
			break;
		case 's':
			a->out.s = va_arg(ap, const char **);
			if (*p == '%') {
				p++;
				a->with_len = true;
				a->len_out = va_arg(ap, size_t *);
			}
			break;
		case 'f':
		case 'F':
			a->out.f = va_arg(ap, double *);
			break;
		case 'o':
		case 'O':
			a->out.o = va_arg(ap, json_t **);
			break;
		case 'u':
			a->out.u = va_arg(ap, uint32_t *);
			break;
		case 'n':
			break;
		default:
			return -1;
		}
		if (a->key == NULL)
			return -1;
		n++;
	}
	p++;
	while (is_fmt_sep(*p))
		p++;
	return *p == '\0' ? n : -1;
}

static const char *
arg_type_desc(char type)
{
	switch (type) {
	case 'i':
	case 'I':
		return "an integer";
	case 'b':
		return "a boolean";
	case 's':
		return "a string";
	case 'f':
		return "a real";
	case 'F':
		return "a number";
	case 'n':
		return "null";
	default:
		return "a value";
	}
}

/* Whether v fits a's type (the validation pass: nothing is written). */
static int
arg_check(const struct arg_spec *a, const json_t *v, char *err, size_t errlen)
{
	char fmt[2] = { a->type, '\0' };
	json_error_t jerr;

	if (a->type == 'u') {
		uint32_t x;

		return get_u32(v, &x) ? 0 : fail_u32(err, errlen, a->key, v);
	}
	if (a->type == 'i' && json_is_integer(v) &&
	    (json_integer_value(v) < INT_MIN || json_integer_value(v) > INT_MAX))
		return json_util_fail(err, errlen,
				      "field '%s': %" JSON_INTEGER_FORMAT " is out of range %d..%d",
				      a->key, json_integer_value(v), INT_MIN, INT_MAX);
	if (json_unpack_ex((json_t *)v, &jerr, JSON_VALIDATE_ONLY | JSON_STRICT, fmt) != 0)
		return json_util_fail(err, errlen, "field '%s': expected %s, got %s", a->key,
				      arg_type_desc(a->type), json_type_desc(v));
	return 0;
}

/* Store v into a's outputs; v has passed arg_check(). */
static void
arg_store(const struct arg_spec *a, json_t *v)
{
	switch (a->type) {
	case 'i':
		*a->out.i = (int)json_integer_value(v);
		break;
	case 'b':
		*a->out.i = json_is_true(v);
		break;
	case 'I':
		*a->out.I = json_integer_value(v);
		break;
	case 's':
		*a->out.s = json_string_value(v);
		if (a->with_len)
			*a->len_out = json_string_length(v);
		break;
	case 'f':
	case 'F':
		*a->out.f = json_number_value(v);
		break;
	case 'o':
		*a->out.o = v;
		break;
	case 'O':
		*a->out.o = json_incref(v);
		break;
	case 'u':
		*a->out.u = (uint32_t)json_integer_value(v);
		break;
	default:
		break;
	}
}

static bool
is_envelope_key(const char *k)
{
	for (size_t i = 0; i < sizeof(envelope_keys) / sizeof(envelope_keys[0]); i++)
		if (strcmp(k, envelope_keys[i]) == 0)
			return true;
	return false;
}

int
ctl_args_unpack(const json_t *req, char *err, size_t errlen, const char *fmt, ...)
{
	struct arg_spec specs[CTL_ARGS_MAX];
	const char *key;
	json_t *v;
	va_list ap;
	int n, i, r;

	if (!json_is_object(req))
		return json_util_fail(err, errlen, "request: expected a JSON object");
	va_start(ap, fmt);
	n = args_parse_fmt(fmt, ap, specs);
	va_end(ap);
	if (n < 0)
		return json_util_fail(err, errlen, "ctl_args_unpack: unsupported format \"%s\"",
				      fmt);
	json_object_foreach((json_t *)req, key, v) {
		if (is_envelope_key(key))
			continue;
		for (i = 0; i < n && strcmp(specs[i].key, key) != 0; i++)
			;
		if (i == n)
			return json_util_fail(err, errlen, "field '%s': unknown field", key);
	}
	for (i = 0; i < n; i++) {
		v = json_object_get(req, specs[i].key);
		if (v == NULL) {
			if (specs[i].optional)
				continue;
			return json_util_fail(err, errlen, "field '%s': missing", specs[i].key);
		}
		r = arg_check(&specs[i], v, err, errlen);
		if (r < 0)
			return r;
	}
	for (i = 0; i < n; i++) {
		v = json_object_get(req, specs[i].key);
		if (v != NULL)
			arg_store(&specs[i], v);
	}
	return 0;
}

/* ---- client calls -------------------------------------------------------------------- */

static atomic_uint_least32_t next_call_id = 1;

/* NULL with errno = -r. */
static json_t *
call_fail(int r)
{
	errno = -r;
	return NULL;
}

/*
 * Whether resp answers the call with this id: 1 yes, 0 another call's (skip it), or
 * -EBADMSG with err when the envelope breaks the protocol.
 */
static int
response_match(const json_t *resp, uint32_t id, char *err, size_t errlen)
{
	const json_t *v = json_object_get(resp, "version"), *ok, *rid;
	uint32_t got;

	if (!json_is_integer(v) || json_integer_value(v) != CTL_PROTOCOL_VERSION) {
		json_util_fail(err, errlen, "response: field 'version': expected %d, got %s",
			       CTL_PROTOCOL_VERSION, v == NULL ? "nothing" : json_type_desc(v));
		return -EBADMSG;
	}
	ok = json_object_get(resp, "ok");
	if (!json_is_boolean(ok)) {
		json_util_fail(err, errlen, "response: field 'ok': expected a boolean, got %s",
			       ok == NULL ? "nothing" : json_type_desc(ok));
		return -EBADMSG;
	}
	if (json_is_false(ok)) {
		v = json_object_get(resp, "errno");
		if (!json_is_integer(v) || json_integer_value(v) <= 0 ||
		    !json_is_string(json_object_get(resp, "error"))) {
			json_util_fail(err, errlen, "response: an error without a positive "
				       "'errno' and an 'error' string");
			return -EBADMSG;
		}
	}
	rid = json_object_get(resp, "id");
	if (json_is_null(rid) && json_is_false(ok))
		return 1;
	if (!get_u32(rid, &got)) {
		json_util_fail(err, errlen, "response: field 'id': expected an integer "
			       "0..4294967295 or null");
		return -EBADMSG;
	}
	return got == id ? 1 : 0;
}

json_t *
ctl_call(int fd, const char *op, json_t *args, int timeout_ms, char *err, size_t errlen)
{
	struct ctl_conn c;
	json_t *r;

	ctl_conn_init(&c, fd);
	r = ctl_conn_call(&c, op, args, timeout_ms, err, errlen);
	conn_release(&c);
	return r;
}

json_t *
ctl_conn_call(struct ctl_conn *c, const char *op, json_t *args, int timeout_ms, char *err,
	      size_t errlen)
{
	int64_t deadline = deadline_of(timeout_ms);
	json_t *req = NULL, *resp = NULL;
	uint32_t id;
	int r;

	if (op == NULL || op[0] == '\0' || (args != NULL && !json_is_object(args))) {
		json_util_fail(err, errlen, "%s: arguments must be an object",
			       op != NULL && op[0] != '\0' ? op : "(no op)");
		json_decref(args);
		return call_fail(-EINVAL);
	}
	for (size_t i = 0; args != NULL && i < sizeof(envelope_keys) / sizeof(*envelope_keys);
	     i++) {
		if (json_object_get(args, envelope_keys[i]) != NULL) {
			json_util_fail(err, errlen, "%s: argument '%s' is reserved for the envelope",
				       op, envelope_keys[i]);
			json_decref(args);
			return call_fail(-EINVAL);
		}
	}
	id = (uint32_t)atomic_fetch_add(&next_call_id, 1);
	req = json_object();
	if (req == NULL ||
	    json_object_set_new(req, "version", json_integer(CTL_PROTOCOL_VERSION)) < 0 ||
	    json_object_set_new(req, "id", json_integer(id)) < 0 ||
	    json_object_set_new(req, "op", json_string(op)) < 0 ||
	    (args != NULL && json_object_update(req, args) < 0)) {
		json_util_fail(err, errlen, "%s: out of memory or op not UTF-8", op);
		r = -ENOMEM;
		goto out;
	}
	r = ctl_conn_send(c, req, CTL_SEND_TIMEOUT_MS);
	if (r < 0) {
		json_util_fail(err, errlen, "%s: send: %s", op,
			       r == -EMSGSIZE ? "request larger than 16 MiB" : strerror(-r));
		goto out;
	}
	for (;;) {
		char why[CTL_ERR_MAX];
		int left = ms_left(deadline);

		r = ctl_conn_recv(c, left, &resp, why, sizeof(why));
		if (r == -ETIMEDOUT) {
			json_util_fail(err, errlen, "%s: no response within %d ms", op, timeout_ms);
			goto out;
		}
		if (r < 0) {
			json_util_fail(err, errlen, "%s: %s", op, why);
			goto out;
		}
		r = response_match(resp, id, why, sizeof(why));
		if (r == 1)
			break;
		json_decref(resp);
		resp = NULL;
		if (r < 0) {
			json_util_fail(err, errlen, "%s: %s", op, why);
			goto out;
		}
	}
	r = 0;
out:
	json_decref(args);
	json_decref(req);
	return r < 0 ? call_fail(r) : resp;
}
