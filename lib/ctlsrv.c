/* SPDX-License-Identifier: BSD-3-Clause
 *
 * The bounded control-protocol server (ctlsrv.h).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "ctlsrv.h"
#include "jsonutil.h"

#define PEER_MAX 64
/* Classes of connections: one per role (CTLSRV_ROLE_LOCAL among them), and handshakes. */
#define CLASS_HANDSHAKE CTLTLS_ROLE_N
#define N_CLASSES (CTLTLS_ROLE_N + 1)

enum slot_state {
	SLOT_FREE = 0,
	SLOT_HANDSHAKE, /* TLS handshake under way (hs) */
	SLOT_READY,     /* requests are read (cc) */
};

struct ctlsrv_client {
	struct ctlsrv *srv;
	int slot;
	uint32_t gen; /* bumped each time the slot is freed */
	enum slot_state st;
	enum ctltls_role role; /* SLOT_READY: the class */
	void *hs;              /* SLOT_HANDSHAKE: the handshake state */
	int hs_fd;
	short hs_want;
	struct ctl_conn cc; /* SLOT_READY */
	int64_t since;      /* accepted at (monotonic ms) */
	int64_t last;       /* the last request or reply */
	bool deferred;      /* a reply is owed (ctlsrv_defer()) */
	char peer[PEER_MAX];
};

struct ctlsrv {
	struct ctlsrv_opts o;
	char *unix_path; /* owned copy, unlinked at the end */
	int ufd, tfd;    /* listeners, or -1 */
	int n_slots;
	struct ctlsrv_client *slots;
	struct pollfd *pfd; /* n_slots + 3 */
	int *pslot;         /* pfd index -> slot */
	uint64_t refused[CTLSRV_REF_N];
};

static const char *const refusal_names[CTLSRV_REF_N] = {
	[CTLSRV_REF_HANDSHAKE] = "handshake", [CTLSRV_REF_HANDSHAKE_TIMEOUT] = "handshake_timeout",
	[CTLSRV_REF_ROLE] = "role",           [CTLSRV_REF_FORBIDDEN] = "forbidden",
	[CTLSRV_REF_EVICTED] = "evicted",     [CTLSRV_REF_IDLE] = "idle",
};

static const char *
class_name(int k)
{
	return k == CLASS_HANDSHAKE   ? "handshake" :
	       k == CTLSRV_ROLE_LOCAL ? "local" :
					ctltls_role_name(k);
}

/* The most connections of class k at once. */
static int
class_max(const struct ctlsrv *s, int k)
{
	if (k == CLASS_HANDSHAKE)
		return s->o.max_handshakes;
	return s->o.role_max[k] > 0 ? s->o.role_max[k] : s->o.max_per_role;
}

static int
class_of(const struct ctlsrv_client *c)
{
	return c->st == SLOT_HANDSHAKE ? CLASS_HANDSHAKE : (int)c->role;
}

static void
vlog_refusal(struct ctlsrv *s, const struct ctlsrv_client *c, enum ctlsrv_refusal why,
	     const char *fmt, va_list ap)
{
	char msg[CTL_ERR_MAX], line[CTL_ERR_MAX + PEER_MAX + 64];

	vsnprintf(msg, sizeof(msg), fmt, ap);
	s->refused[why]++;
	if (s->o.log == NULL)
		return;
	/* One line, whatever the peer sent. */
	json_util_fail(line, sizeof(line), "control: refused %s (%s): %s", c->peer,
		       class_name(class_of(c)), msg);
	s->o.log(s->o.arg, line);
}

void
ctlsrv_refuse(struct ctlsrv *s, const struct ctlsrv_client *cl, enum ctlsrv_refusal why,
	      const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vlog_refusal(s, cl, why, fmt, ap);
	va_end(ap);
}

static void
slot_close(struct ctlsrv_client *c)
{
	if (c->st == SLOT_HANDSHAKE)
		ctltls_abort(c->hs);
	else if (c->st == SLOT_READY)
		ctl_conn_fini(&c->cc);
	c->st = SLOT_FREE;
	c->hs = NULL;
	c->deferred = false;
	c->gen++;
}

static void refuse_close(struct ctlsrv *s, struct ctlsrv_client *c, enum ctlsrv_refusal why,
			 const char *fmt, ...) __attribute__((format(printf, 4, 5)));

static void
refuse_close(struct ctlsrv *s, struct ctlsrv_client *c, enum ctlsrv_refusal why, const char *fmt,
	     ...)
{
	va_list ap;

	va_start(ap, fmt);
	vlog_refusal(s, c, why, fmt, ap);
	va_end(ap);
	slot_close(c);
}

struct ctlsrv *
ctlsrv_create(const struct ctlsrv_opts *o, char *err, size_t errlen)
{
	struct ctlsrv *s = calloc(1, sizeof(*s));
	int r;

	if (s == NULL) {
		json_util_fail(err, errlen, "out of memory");
		return NULL;
	}
	s->o = *o;
	s->ufd = s->tfd = -1;
	if (o->max_per_role < 1 || o->max_per_role > CTLSRV_CLASS_MAX || o->max_handshakes < 1 ||
	    o->max_handshakes > CTLSRV_CLASS_MAX || o->handshake_ms < 1 || o->idle_ms < 1 ||
	    o->handle == NULL || (o->tls_listen != NULL && o->tls == NULL)) {
		json_util_fail(err, errlen, "bad server options");
		goto fail;
	}
	s->n_slots = o->max_handshakes;
	for (int r = 0; r < CTLTLS_ROLE_N; r++) {
		if (o->role_max[r] < 0 || o->role_max[r] > CTLSRV_CLASS_MAX) {
			json_util_fail(err, errlen, "bad server options");
			goto fail;
		}
		s->n_slots += class_max(s, r);
	}
	s->slots = calloc((size_t)s->n_slots, sizeof(*s->slots));
	s->pfd = calloc((size_t)s->n_slots + 3, sizeof(*s->pfd));
	s->pslot = calloc((size_t)s->n_slots + 3, sizeof(*s->pslot));
	if (s->slots == NULL || s->pfd == NULL || s->pslot == NULL) {
		json_util_fail(err, errlen, "out of memory");
		goto fail;
	}
	for (int i = 0; i < s->n_slots; i++) {
		s->slots[i].srv = s;
		s->slots[i].slot = i;
	}
	if (o->unix_path != NULL) {
		r = ctl_listen(o->unix_path);
		if (r < 0) {
			json_util_fail(err, errlen, "%s: %s", o->unix_path, strerror(-r));
			goto fail;
		}
		s->ufd = r;
		s->unix_path = strdup(o->unix_path);
	}
	if (o->tls_listen != NULL) {
		r = ctltls_listen(o->tls_listen, err, errlen);
		if (r < 0)
			goto fail;
		s->tfd = r;
	}
	return s;
fail:
	ctlsrv_free(s);
	return NULL;
}

void
ctlsrv_free(struct ctlsrv *s)
{
	if (s == NULL)
		return;
	for (int i = 0; s->slots != NULL && i < s->n_slots; i++)
		slot_close(&s->slots[i]);
	if (s->ufd >= 0) {
		close(s->ufd);
		unlink(s->unix_path);
	}
	if (s->tfd >= 0)
		close(s->tfd);
	free(s->unix_path);
	free(s->slots);
	free(s->pfd);
	free(s->pslot);
	free(s);
}

/* A free slot for a connection of class k, evicting the quietest of that class when it
 * is full; NULL if every one of them owes a reply. */
static struct ctlsrv_client *
slot_for(struct ctlsrv *s, int k, const char *peer)
{
	struct ctlsrv_client *free_slot = NULL, *quiet = NULL;
	int n = 0, max = class_max(s, k);

	for (int i = 0; i < s->n_slots; i++) {
		struct ctlsrv_client *c = &s->slots[i];

		if (c->st == SLOT_FREE) {
			if (free_slot == NULL)
				free_slot = c;
			continue;
		}
		if (class_of(c) != k)
			continue;
		n++;
		if (!c->deferred && (quiet == NULL || c->last < quiet->last))
			quiet = c;
	}
	if (n < max)
		return free_slot;
	if (quiet == NULL)
		return NULL;
	refuse_close(s, quiet, CTLSRV_REF_EVICTED,
		     "%d %s connections open: the one quiet "
		     "for %lld ms makes room for %s",
		     max, class_name(k), (long long)(clock_now_ms() - quiet->last), peer);
	return quiet;
}

static void
peer_name(int fd, bool tcp, char *buf, size_t len)
{
	struct sockaddr_storage ss;
	socklen_t sl = sizeof(ss);
	char host[INET6_ADDRSTRLEN] = "?";
	unsigned int port = 0;

	if (!tcp || getpeername(fd, (struct sockaddr *)&ss, &sl) != 0) {
		snprintf(buf, len, "%s", tcp ? "?" : "local");
		return;
	}
	if (ss.ss_family == AF_INET) {
		const struct sockaddr_in *a = (const void *)&ss;

		inet_ntop(AF_INET, &a->sin_addr, host, sizeof(host));
		port = ntohs(a->sin_port);
		snprintf(buf, len, "%s:%u", host, port);
	} else if (ss.ss_family == AF_INET6) {
		const struct sockaddr_in6 *a = (const void *)&ss;

		inet_ntop(AF_INET6, &a->sin6_addr, host, sizeof(host));
		port = ntohs(a->sin6_port);
		snprintf(buf, len, "[%s]:%u", host, port);
	} else {
		snprintf(buf, len, "?");
	}
}

static void serve(struct ctlsrv *s, struct ctlsrv_client *c);

/* A connection whose handshake finished: admit its role, or refuse it. */
static void
admit(struct ctlsrv *s, struct ctlsrv_client *c, struct ctl_conn *cc, enum ctltls_role role)
{
	struct ctlsrv_client *to;

	c->st = SLOT_READY;
	c->cc = *cc;
	c->role = role;
	c->hs = NULL;
	if (role == CTLTLS_ROLE_NONE || !(s->o.roles & (1u << role))) {
		refuse_close(s, c, CTLSRV_REF_ROLE,
			     "a certificate of role '%s' is not "
			     "admitted here",
			     ctltls_role_name(role));
		return;
	}
	/* Count it in its role's class, not among the handshakes: it may have to make room. */
	c->st = SLOT_HANDSHAKE;
	to = slot_for(s, (int)role, c->peer);
	c->st = SLOT_READY;
	if (to == NULL) {
		refuse_close(s, c, CTLSRV_REF_EVICTED,
			     "%d %s connections open, all owed a "
			     "reply",
			     class_max(s, (int)role), ctltls_role_name(role));
		return;
	}
	if (to != c) {
		/* Move into the freed slot (the handshake slot is freed for the next). */
		int slot = to->slot;
		uint32_t gen = to->gen;

		*to = *c;
		to->slot = slot;
		to->gen = gen;
		c->st = SLOT_FREE;
		c->gen++;
		c = to;
	}
	c->last = clock_now_ms();
	serve(s, c); /* a request may have come with the handshake's last flight */
}

static void
handshake(struct ctlsrv *s, struct ctlsrv_client *c)
{
	char why[CTL_ERR_MAX];
	enum ctltls_role role = CTLTLS_ROLE_NONE;
	struct ctl_conn cc;
	int r = ctltls_accept_step(c->hs, &cc, &role, &c->hs_want, why, sizeof(why));

	if (r == 0)
		return;
	if (r < 0) {
		refuse_close(s, c, CTLSRV_REF_HANDSHAKE, "TLS handshake: %s", why);
		return;
	}
	admit(s, c, &cc, role);
}

static void
accept_all(struct ctlsrv *s, int lfd, bool tcp)
{
	for (;;) {
		struct ctlsrv_client *c;
		char peer[PEER_MAX];
		int fd = accept4(lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);

		if (fd < 0)
			return;
		peer_name(fd, tcp, peer, sizeof(peer));
		c = slot_for(s, tcp ? CLASS_HANDSHAKE : CTLSRV_ROLE_LOCAL, peer);
		if (c == NULL) {
			struct ctlsrv_client tmp = {.st = tcp ? SLOT_HANDSHAKE : SLOT_READY,
						    .role = CTLSRV_ROLE_LOCAL};

			snprintf(tmp.peer, sizeof(tmp.peer), "%s", peer);
			ctlsrv_refuse(s, &tmp, CTLSRV_REF_EVICTED,
				      "every connection of its "
				      "class is owed a reply");
			close(fd);
			continue;
		}
		c->since = c->last = clock_now_ms();
		c->deferred = false;
		snprintf(c->peer, sizeof(c->peer), "%s", peer);
		if (!tcp) {
			c->st = SLOT_READY;
			c->role = CTLSRV_ROLE_LOCAL;
			ctl_conn_init(&c->cc, fd);
			continue;
		}
		c->hs = ctltls_server_new(s->o.tls, fd);
		if (c->hs == NULL) {
			close(fd);
			continue;
		}
		c->st = SLOT_HANDSHAKE;
		c->hs_fd = fd;
		c->hs_want = POLLIN;
		handshake(s, c);
	}
}

/* Read and answer c's complete requests until it has no more or owes a reply. */
static void
serve(struct ctlsrv *s, struct ctlsrv_client *c)
{
	char err[CTL_ERR_MAX];
	json_t *msg, *reply;
	int rc;

	while (c->st == SLOT_READY && !c->deferred) {
		rc = ctl_conn_read(&c->cc, &msg, err, sizeof(err));
		if (rc == 0)
			return;
		c->last = clock_now_ms();
		if (rc == -EBADMSG) {
			reply = ctl_reply_error(false, 0, EBADMSG, "invalid message: %s", err);
		} else if (rc < 0) {
			slot_close(c);
			return;
		} else {
			reply = s->o.handle(s->o.arg, c, msg);
			json_decref(msg);
			if (reply == NULL && c->deferred)
				return;
		}
		rc = reply != NULL ? ctl_conn_send(&c->cc, reply, CTL_SEND_TIMEOUT_MS) : -ENOMEM;
		json_decref(reply);
		if (rc != 0) {
			slot_close(c);
			return;
		}
	}
}

/* Close what has timed out; the ms until the next deadline (or -1). */
static int
expire(struct ctlsrv *s)
{
	int64_t t = clock_now_ms(), next = -1;

	for (int i = 0; i < s->n_slots; i++) {
		struct ctlsrv_client *c = &s->slots[i];
		int64_t due;

		if (c->st == SLOT_HANDSHAKE) {
			due = c->since + s->o.handshake_ms;
			if (due <= t) {
				refuse_close(s, c, CTLSRV_REF_HANDSHAKE_TIMEOUT,
					     "no TLS handshake "
					     "within %d ms",
					     s->o.handshake_ms);
				continue;
			}
		} else if (c->st == SLOT_READY && !c->deferred) {
			due = c->last + s->o.idle_ms;
			if (due <= t) {
				refuse_close(s, c, CTLSRV_REF_IDLE, "no request for %d ms",
					     s->o.idle_ms);
				continue;
			}
		} else {
			continue;
		}
		if (next < 0 || due - t < next)
			next = due - t;
	}
	return (int)next;
}

int
ctlsrv_poll(struct ctlsrv *s, int timeout_ms, int extra_fd)
{
	int n = 0, ext = -1, ui = -1, ti = -1, p, due = expire(s);

	if (due >= 0 && (timeout_ms < 0 || due < timeout_ms))
		timeout_ms = due;
	if (extra_fd >= 0) {
		ext = n;
		s->pfd[n++] = (struct pollfd){.fd = extra_fd, .events = POLLIN};
	}
	if (s->ufd >= 0) {
		ui = n;
		s->pfd[n++] = (struct pollfd){.fd = s->ufd, .events = POLLIN};
	}
	if (s->tfd >= 0) {
		ti = n;
		s->pfd[n++] = (struct pollfd){.fd = s->tfd, .events = POLLIN};
	}
	for (int i = 0; i < s->n_slots; i++) {
		const struct ctlsrv_client *c = &s->slots[i];

		if (c->st == SLOT_FREE)
			continue;
		s->pslot[n] = i;
		s->pfd[n++] = (struct pollfd){
			.fd = c->st == SLOT_HANDSHAKE ? c->hs_fd : c->cc.fd,
			/* Owed a reply: only a hang-up is of interest. */
			.events = c->st == SLOT_HANDSHAKE ? c->hs_want :
				  c->deferred             ? 0 :
							    c->cc.want,
		};
	}
	p = poll(s->pfd, (nfds_t)n, timeout_ms);
	if (p <= 0) {
		expire(s);
		return 0;
	}
	for (int k = n - 1; k >= 0; k--) {
		struct ctlsrv_client *c;

		if (k == ext || k == ui || k == ti || s->pfd[k].revents == 0)
			continue;
		c = &s->slots[s->pslot[k]];
		if (c->st == SLOT_HANDSHAKE)
			handshake(s, c);
		else if (c->st == SLOT_READY && c->deferred &&
			 (s->pfd[k].revents & (POLLHUP | POLLERR)))
			slot_close(c);
		else if (c->st == SLOT_READY && !c->deferred)
			serve(s, c);
	}
	if (ui >= 0 && (s->pfd[ui].revents & POLLIN))
		accept_all(s, s->ufd, false);
	if (ti >= 0 && (s->pfd[ti].revents & POLLIN))
		accept_all(s, s->tfd, true);
	expire(s);
	return ext >= 0 && (s->pfd[ext].revents & POLLIN) ? 1 : 0;
}

enum ctltls_role
ctlsrv_client_role(const struct ctlsrv_client *cl)
{
	return cl->role;
}

bool
ctlsrv_client_named(const struct ctlsrv_client *cl, const char *name)
{
	return cl->st == SLOT_READY && ctltls_peer_named(&cl->cc, name);
}

int
ctlsrv_client_tenant(const struct ctlsrv_client *cl, char *out)
{
	out[0] = '\0';
	return cl->st == SLOT_READY ? ctltls_peer_tenant(&cl->cc, out) : 0;
}

const char *
ctlsrv_client_peer(const struct ctlsrv_client *cl)
{
	return cl->peer;
}

void
ctlsrv_defer(struct ctlsrv_client *cl, struct ctlsrv_ref *ref)
{
	cl->deferred = true;
	ref->slot = cl->slot;
	ref->gen = cl->gen;
}

int
ctlsrv_reply(struct ctlsrv *s, const struct ctlsrv_ref *ref, json_t *resp)
{
	struct ctlsrv_client *c;
	int rc;

	if (ref->slot < 0 || ref->slot >= s->n_slots) {
		json_decref(resp);
		return -ENOENT;
	}
	c = &s->slots[ref->slot];
	if (c->gen != ref->gen || c->st != SLOT_READY || !c->deferred) {
		json_decref(resp);
		return -ENOENT;
	}
	c->deferred = false;
	rc = resp != NULL ? ctl_conn_send(&c->cc, resp, CTL_SEND_TIMEOUT_MS) : -ENOMEM;
	json_decref(resp);
	if (rc != 0) {
		slot_close(c);
		return rc;
	}
	c->last = clock_now_ms();
	serve(s, c);
	return 0;
}

json_t *
ctlsrv_json(const struct ctlsrv *s)
{
	json_t *o = json_object(), *conns = json_object(), *ref = json_object();
	int count[N_CLASSES] = {0};

	for (int i = 0; i < s->n_slots; i++)
		if (s->slots[i].st != SLOT_FREE)
			count[class_of(&s->slots[i])]++;
	for (int k = 0; k < N_CLASSES; k++)
		json_object_set_new(conns, class_name(k), json_integer(count[k]));
	for (int r = 0; r < CTLSRV_REF_N; r++)
		json_object_set_new(ref, refusal_names[r], json_integer((json_int_t)s->refused[r]));
	json_object_set_new(o, "connections", conns);
	json_object_set_new(o, "refused", ref);
	json_object_set_new(o, "tls", json_boolean(s->tfd >= 0));
	return o;
}

uint64_t
ctlsrv_refused(const struct ctlsrv *s, enum ctlsrv_refusal why)
{
	return why >= 0 && why < CTLSRV_REF_N ? s->refused[why] : 0;
}
