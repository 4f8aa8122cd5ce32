/* SPDX-License-Identifier: BSD-3-Clause
 *
 * The control protocol's frames and their transport (ctlmsg.h, docs/CONTROL.md): the
 * dataplane's unix listening socket and a client's connect, sending a JSON object as one
 * length-prefixed frame, and the incremental, bounded frame reader of a connection, over a
 * plain socket or a transport such as TLS (ctltls.c, through struct ctl_io_ops). What the
 * frames carry (requests, responses, calls) is ctlreq.c's. Slow path only: the
 * dataplane's control thread and the clients; everything allocates and makes system calls.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "bytes.h"
#include "clock.h"
#include "ctlmsg.h"
#include "jsonutil.h"

/* The reader keeps a buffer of at most this size between frames; bigger ones are freed. */
#define CONN_KEEP_BYTES (64u << 10)
#define LISTEN_BACKLOG 16
/* Pause between connect attempts while the listener's backlog is full. */
#define CONNECT_RETRY_MS 5

/* ---- time ---------------------------------------------------------------------------- */

int64_t
ctl_deadline(int timeout_ms)
{
	return timeout_ms < 0 ? -1 : clock_now_ms() + timeout_ms;
}

int
ctl_ms_left(int64_t deadline)
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
	int64_t deadline = ctl_deadline(timeout_ms);
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
		if (ctl_ms_left(deadline) == 0) {
			r = -ETIMEDOUT;
			goto fail;
		}
		nanosleep(&(struct timespec){0, CONNECT_RETRY_MS * 1000000L}, NULL);
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

/* The payload of msg's frame: msg (an object) compact, with reals that read back identical.
 * 0 with *text (the caller frees it) and *len, or -EINVAL, -ENOMEM or -EMSGSIZE. */
static int
frame_text(const json_t *msg, char **text, size_t *len)
{
	if (!json_is_object(msg))
		return -EINVAL;
	*text = json_dumps(msg, JSON_COMPACT | JSON_REAL_PRECISION(17));
	if (*text == NULL)
		return -ENOMEM;
	*len = strlen(*text);
	if (*len == 0 || *len > CTL_MSG_MAX) {
		free(*text);
		return -EMSGSIZE;
	}
	return 0;
}

int
ctl_send_timeout(int fd, const json_t *msg, int timeout_ms)
{
	int64_t deadline = ctl_deadline(timeout_ms);
	uint8_t hdr[CTL_HDR_BYTES];
	struct iovec iov[2];
	struct msghdr mh;
	size_t len, left;
	ssize_t n;
	char *text;
	int r;

	r = frame_text(msg, &text, &len);
	if (r < 0)
		return r;
	be32_put(hdr, (uint32_t)len);
	iov[0] = (struct iovec){.iov_base = hdr, .iov_len = sizeof(hdr)};
	iov[1] = (struct iovec){.iov_base = text, .iov_len = len};
	memset(&mh, 0, sizeof(mh));
	mh.msg_iov = iov;
	mh.msg_iovlen = 2;
	left = sizeof(hdr) + len;
	while (left > 0) {
		n = sendmsg(fd, &mh, MSG_NOSIGNAL);
		if (n < 0) {
			struct pollfd pfd = {.fd = fd, .events = POLLOUT};
			int p;

			if (errno == EINTR)
				continue;
			if (errno != EAGAIN && errno != EWOULDBLOCK) {
				r = -errno;
				break;
			}
			p = poll(&pfd, 1, ctl_ms_left(deadline));
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
		struct pollfd pfd = {.fd = c->fd, .events = want};
		int p;

		if (n > 0) {
			buf += n;
			len -= (size_t)n;
			continue;
		}
		if (n != -EAGAIN)
			return n < 0 ? (int)n : -EPIPE;
		p = poll(&pfd, 1, ctl_ms_left(deadline));
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
	int64_t deadline = ctl_deadline(timeout_ms);
	uint8_t *frame;
	size_t len;
	char *text;
	int r;

	if (c->ops == NULL)
		return ctl_send_timeout(c->fd, msg, timeout_ms);
	r = frame_text(msg, &text, &len);
	if (r < 0)
		return r;
	/* One buffer: the length and the text go out in as few records as they fit. */
	frame = malloc(CTL_HDR_BYTES + len);
	if (frame == NULL) {
		free(text);
		return -ENOMEM;
	}
	be32_put(frame, (uint32_t)len);
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

void
ctl_conn_release(struct ctl_conn *c)
{
	free(c->buf);
	c->buf = NULL;
	c->cap = 0;
}

void
ctl_conn_fini(struct ctl_conn *c)
{
	ctl_conn_release(c);
	if (c->ops != NULL && c->ops->close != NULL)
		c->ops->close(c->io);
	if (c->fd >= 0)
		close(c->fd);
	ctl_conn_init(c, -1);
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
			json_util_fail(err, errlen, "out of memory parsing a %u-byte frame",
				       c->len);
			return -ENOMEM;
		}
		json_util_fail(err, errlen, "%d:%d: invalid JSON: %s", jerr.line, jerr.column,
			       jerr.text);
		return -EBADMSG;
	}
	if (!json_is_object(v)) {
		/* Point at the value: skip the whitespace JSON allows before it. */
		for (size_t i = 0; i < c->len && (c->buf[i] == ' ' || c->buf[i] == '\t' ||
						  c->buf[i] == '\r' || c->buf[i] == '\n');
		     i++) {
			if (c->buf[i] == '\n') {
				line++;
				col = 1;
			} else {
				col++;
			}
		}
		json_util_fail(err, errlen, "%d:%d: a message must be a JSON object, not %s", line,
			       col, json_util_type_desc(v));
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
		ctl_conn_release(c);
	c->hdr_got = 0;
	c->len = 0;
	c->got = 0;
}

static int conn_broken(struct ctl_conn *c, int r, char *err, size_t errlen, const char *fmt, ...)
	__attribute__((format(printf, 5, 6)));

/* Mark c broken with r and say why in err. */
static int
conn_broken(struct ctl_conn *c, int r, char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	/* At most CTL_ERR_MAX bytes, as ctlmsg.h promises. */
	va_start(ap, fmt);
	json_util_vfail(err, errlen < CTL_ERR_MAX ? errlen : CTL_ERR_MAX, fmt, ap);
	va_end(ap);
	c->broken = r;
	ctl_conn_release(c);
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
		json_util_fail(err, errlen, "connection already failed: %s", strerror(-c->broken));
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
						   "(%zu of 4 bytes)",
						   c->hdr_got);
			return conn_broken(c, -EPIPE, err, errlen,
					   "connection closed inside a frame (%zu of %u bytes)",
					   c->got, c->len);
		}
		if (c->hdr_got < CTL_HDR_BYTES) {
			c->hdr_got += (size_t)n;
			if (c->hdr_got < CTL_HDR_BYTES)
				continue;
			c->len = be32_get(c->hdr);
			if (c->len == 0 || c->len > CTL_MSG_MAX)
				return conn_broken(c, -EMSGSIZE, err, errlen,
						   "frame length %u is out of range 1..%u", c->len,
						   CTL_MSG_MAX);
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
			ctl_conn_release(c);
		}
		return r;
	}
}

int
ctl_conn_recv(struct ctl_conn *c, int timeout_ms, json_t **msg, char *err, size_t errlen)
{
	int64_t deadline = ctl_deadline(timeout_ms);
	int r, p;

	for (;;) {
		struct pollfd pfd = {.fd = c->fd};

		r = ctl_conn_read(c, msg, err, errlen);
		if (r != 0)
			break;
		pfd.events = c->want;
		p = poll(&pfd, 1, ctl_ms_left(deadline));
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
	ctl_conn_release(&c);
	return r;
}
