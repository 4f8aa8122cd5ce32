/* SPDX-License-Identifier: BSD-3-Clause
 *
 * The control-socket protocol between a control process and a dataplane
 * (docs/CONTROL.md): length-prefixed JSON frames over a unix stream socket or a TLS
 * stream (ctltls.h, through struct ctl_io_ops), versioned
 * requests with an id and an op, responses that echo the id with "ok" and, on failure, a
 * positive errno and a one-line error naming the field.
 *
 * Frame: a 4-byte big-endian length N, 1 <= N <= CTL_MSG_MAX, then N bytes of UTF-8 JSON
 * holding one object. Anything else is a protocol error.
 *
 * Who may call what. Nothing here touches DPDK; everything allocates and makes system
 * calls, so it is slow path only:
 *  - the dataplane's control thread: ctl_listen(), the ctl_conn_*() reader, ctl_send(),
 *    ctl_request_check(), ctl_request_id(), ctl_args_unpack(), ctl_reply_*();
 *  - clients (georeduce-control, georeduce-dpctl, tests): ctl_connect(), ctl_call(), or
 *    ctl_send() with ctl_recv().
 * No function keeps hidden state except ctl_call()'s request-id counter, which is atomic;
 * one fd must not be used by two threads at once.
 *
 * ctlmsg.c holds the frames and their transport (sockets, sending, the ctl_conn reader);
 * ctlreq.c what they carry (the request envelope, arguments, responses, ctl_call()).
 */
#ifndef GEOREDUCE_CTLMSG_H
#define GEOREDUCE_CTLMSG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

/** The protocol version carried in every request and response ("version"). */
#define CTL_PROTOCOL_VERSION 1
/** Largest frame payload in bytes (the JSON text after the 4-byte length). */
#define CTL_MSG_MAX (16u << 20)
/** Bytes of the length prefix. */
#define CTL_HDR_BYTES 4
/** Longest message the functions below write into their error buffer. */
#define CTL_ERR_MAX 512
/** How long ctl_send() waits for room on a full non-blocking socket. */
#define CTL_SEND_TIMEOUT_MS 10000
/** Most keys one ctl_args_unpack() format may name. */
#define CTL_ARGS_MAX 16

/** The deadline (CLOCK_MONOTONIC ms, clock.h) of a timeout: -1 (none) if timeout_ms < 0. */
int64_t ctl_deadline(int timeout_ms);

/** Milliseconds left before deadline, for poll(): -1 (no deadline) or 0 .. INT_MAX. */
int ctl_ms_left(int64_t deadline);

/**
 * Create the dataplane's listening socket at path: bind, listen, non-blocking and
 * close-on-exec. A socket file left behind by a dead process is replaced; one with a live
 * listener (a connect to it succeeds or is only deferred) is never taken over, and a path
 * that exists but is no socket is never removed. The file's mode follows the umask.
 * Caller: the dataplane's control thread, once at start.
 *
 * @return  The listening fd, or -ENAMETOOLONG (path does not fit sun_path), -EINVAL (empty
 *          path), -EADDRINUSE (a live listener owns the path), -EEXIST (the path is not a
 *          socket) or another negative errno from socket(), bind() or listen().
 */
int ctl_listen(const char *path);

/**
 * Connect to the dataplane's socket at path, waiting up to timeout_ms (< 0: no limit)
 * while its accept backlog is full. The returned fd is blocking and close-on-exec.
 * Caller: clients.
 *
 * @return  The fd, or -ENAMETOOLONG, -EINVAL (empty path), -ENOENT (no such socket),
 *          -ECONNREFUSED (nobody listens), -ETIMEDOUT, or another negative errno.
 */
int ctl_connect(const char *path, int timeout_ms);

/**
 * Send msg (a JSON object) as one frame, serialised compactly with reals that read back
 * identical. Partial writes and EINTR are handled; SIGPIPE is never raised. On a
 * non-blocking socket that is full it waits up to CTL_SEND_TIMEOUT_MS for room; on a
 * blocking one the kernel blocks (SO_SNDTIMEO, if set, bounds it).
 * Caller: either side.
 *
 * @return  0, or -EINVAL (msg is not an object), -EMSGSIZE (the text would exceed
 *          CTL_MSG_MAX; nothing was sent), -ENOMEM, -EPIPE (peer gone), -ETIMEDOUT
 *          (part of a frame may have been sent: close the connection) or another
 *          negative errno from send().
 */
int ctl_send(int fd, const json_t *msg);

/** ctl_send() with an explicit wait for room: timeout_ms < 0 waits forever. */
int ctl_send_timeout(int fd, const json_t *msg, int timeout_ms);

/**
 * Read one whole frame, waiting up to timeout_ms (< 0: no limit) in total. Works on
 * blocking and non-blocking sockets; reads nothing past the end of the frame.
 * Caller: clients (the dataplane uses the non-blocking ctl_conn reader instead).
 *
 * @param msg  Receives the object (a new reference) on success; untouched otherwise.
 * @param err  Receives one line on failure; for -EBADMSG "LINE:COLUMN: ...".
 * @return     0, or -ETIMEDOUT (if part of a frame had arrived it is lost and the stream
 *             is out of step: close), -EPIPE (the peer closed the connection, also in the
 *             middle of a frame), -EMSGSIZE (length 0 or over CTL_MSG_MAX: the stream
 *             is broken), -EBADMSG (the frame is not UTF-8 JSON holding one object; it
 *             was consumed and the stream is still in step), -ENOMEM, or another
 *             negative errno from recv() or poll().
 */
int ctl_recv(int fd, int timeout_ms, json_t **msg, char *err, size_t errlen);

/**
 * The server side's incremental frame reader for one connection. Memory is bounded: the
 * buffer grows with the bytes actually received, to at most CTL_MSG_MAX.
 * Owned by the dataplane's control thread; fields are private to ctl_conn_*().
 */
/**
 * A transport under the frames other than a plain socket (the TLS streams of ctltls.h).
 * Both calls never block: they move what they can and say what to poll for.
 */
struct ctl_io_ops {
	/* Up to n bytes: > 0 read, 0 end of stream, -EAGAIN (*want: POLLIN or POLLOUT), or
	 * another negative errno. */
	long (*read)(void *io, void *buf, size_t n, short *want);
	/* Up to n bytes: > 0 written, -EAGAIN (*want as above) or a negative errno. */
	long (*write)(void *io, const void *buf, size_t n, short *want);
	/* Free the transport's state (not the fd). */
	void (*close)(void *io);
	/* What the last failed read or write meant, one line; NULL: strerror() says it. */
	const char *(*why)(void *io);
};

struct ctl_conn {
	int fd;                       /* the connection; closed by ctl_conn_fini() */
	const struct ctl_io_ops *ops; /* NULL: recv()/send() on fd */
	void *io;                     /* the transport's state, for ops */
	short want;                   /* what to poll for after ctl_conn_read() gave 0 */
	uint8_t hdr[CTL_HDR_BYTES];   /* the length prefix being read */
	size_t hdr_got;               /* bytes of hdr read */
	uint32_t len;                 /* payload length once hdr is complete, else 0 */
	size_t got;                   /* payload bytes read */
	size_t cap;                   /* bytes allocated in buf */
	char *buf;                    /* payload (NUL-terminated when complete) */
	int broken;                   /* 0, or the negative errno every read returns */
};

/** Initialise c for the connected socket fd (an accept()ed fd). Never fails. */
void ctl_conn_init(struct ctl_conn *c, int fd);

/** Initialise c for a transport io with ops over the socket fd (ctltls.h does this). */
void ctl_conn_init_io(struct ctl_conn *c, int fd, const struct ctl_io_ops *ops, void *io);

/**
 * ctl_send_timeout() on the connection c, whatever its transport.
 * Caller: either side.
 */
int ctl_conn_send(struct ctl_conn *c, const json_t *msg, int timeout_ms);

/**
 * ctl_recv() on the connection c, whatever its transport: waits up to timeout_ms for the
 * rest of a frame (a partial frame from an earlier call is kept). Returns as ctl_recv().
 */
int ctl_conn_recv(struct ctl_conn *c, int timeout_ms, json_t **msg, char *err, size_t errlen);

/** ctl_call() on the connection c, whatever its transport. Caller: clients. */
json_t *ctl_conn_call(struct ctl_conn *c, const char *op, json_t *args, int timeout_ms, char *err,
		      size_t errlen);

/**
 * Read what the socket has, without ever blocking (MSG_DONTWAIT), and stop at the end of
 * a frame. Call it while it returns 1 when the fd polls readable: with edge-triggered
 * epoll, until it returns 0 or a negative value.
 *
 * @param msg  Receives the object (a new reference) when it returns 1.
 * @param err  Receives one line when it returns a negative errno.
 * @return     1 with a whole frame in *msg; 0 when more bytes are needed; -EBADMSG when a
 *             whole frame arrived that is not a JSON object (err "LINE:COLUMN: ..."; the
 *             frame is consumed: reply with an error and go on); -EPIPE on EOF (between
 *             frames or in the middle of one); -EMSGSIZE when the length prefix is 0 or
 *             over CTL_MSG_MAX (framing is lost: close); -ENOMEM; or another negative
 *             errno from recv(). After -EPIPE, -EMSGSIZE or a recv() error every later
 *             call returns the same value: close the connection.
 */
int ctl_conn_read(struct ctl_conn *c, json_t **msg, char *err, size_t errlen);

/** Free c's buffer and transport, and close its fd (if >= 0). c may then be initialised
 * again. */
void ctl_conn_fini(struct ctl_conn *c);

/** Free c's buffer only, keeping its fd: the end of a reader set up for one call on a
 * caller's fd (ctl_recv(), ctl_call()). */
void ctl_conn_release(struct ctl_conn *c);

/**
 * Check a request's envelope, in this order: an object; "version" an integer equal to
 * CTL_PROTOCOL_VERSION; "id" an integer 0 .. 2^32-1; "op" a non-empty string. Op
 * arguments are not looked at (ctl_args_unpack() does that, strictly).
 * Caller: the dataplane's control thread, on each message from ctl_conn_read().
 *
 * @param id   Set whenever the request's id is readable, even if the check fails on
 *             another field (ctl_request_id() tells whether it was).
 * @param op   Set to the op (borrowed from req) on success.
 * @param err  Receives one line naming the field on failure.
 * @return     0, -EPROTONOSUPPORT (another version: reply with that errno), or -EINVAL.
 */
int ctl_request_check(const json_t *req, uint32_t *id, const char **op, char *err, size_t errlen);

/**
 * Whether req (any JSON value) carries a readable id: an integer 0 .. 2^32-1 under "id".
 * If so *id receives it. Use the result as ctl_reply_error()'s has_id.
 */
bool ctl_request_id(const json_t *req, uint32_t *id);

/**
 * Unpack a request's op arguments strictly. fmt is a flat jansson object format,
 * "{s:I, s?o, ...}" (keys "s" or optional "s?", values i I b s s% f F o O n), plus the
 * extension "u": a uint32_t * that takes an integer 0 .. 2^32-1. Each value is unpacked
 * with json_unpack_ex() and JSON_STRICT; the envelope keys version, id and op are
 * ignored; any other key that fmt does not name is an error. An optional key that is
 * absent leaves its outputs untouched. Strings and objects are borrowed from req.
 * Caller: the dataplane's op handlers.
 *
 * @param err  Receives one line naming the field: "field 'job': missing",
 *             "field 'jbo': unknown field", "field 'epoch': expected an integer
 *             0..4294967295, got -1".
 * @return     0, or -EINVAL (a bad argument, or a fmt this function does not support).
 */
int ctl_args_unpack(const json_t *req, char *err, size_t errlen, const char *fmt, ...);

/**
 * A success response: {"version": 1, "id": id, "ok": true}; add the op's results to it.
 * Caller: the dataplane's op handlers.
 *
 * @return  A new object, or NULL on ENOMEM.
 */
json_t *ctl_reply_ok(uint32_t id);

/**
 * An error response: {"version": 1, "id": id or null, "ok": false, "errno": errnum,
 * "error": "..."}. The message is printf-formatted; control characters (newlines) become
 * '?', so it stays one line. errnum is a positive errno; a negative one is negated.
 * Caller: the dataplane's control thread.
 *
 * @param has_id  False when the request's id was not readable: "id" is then null.
 * @return        A new object, or NULL on ENOMEM.
 */
json_t *ctl_reply_error(bool has_id, uint32_t id, int errnum, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

/**
 * Make one call: build {"version": 1, "id": <next id>, "op": op, ...args}, send it, and
 * wait up to timeout_ms (< 0: no limit) for the response that carries the same id.
 * Responses with other ids (left over from an earlier call that timed out) are skipped;
 * an error response with id null is taken as the answer. Caller: clients, one call at a
 * time per fd.
 *
 * @param args  An object of op arguments or NULL. Its reference is stolen, also on
 *              failure. It must not hold version, id or op.
 * @param err   Receives one line on failure.
 * @return      The response (a new reference; check "ok"), or NULL with err filled and
 *              errno set: EINVAL (bad op or args), ETIMEDOUT, EPIPE, EMSGSIZE, EBADMSG
 *              (a frame or a response envelope that breaks the protocol), ENOMEM, ...
 */
json_t *ctl_call(int fd, const char *op, json_t *args, int timeout_ms, char *err, size_t errlen);

#endif
