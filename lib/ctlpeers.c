/* SPDX-License-Identifier: BSD-3-Clause
 *
 * A client's list of control endpoints and its calls that fail over between them
 * (ctlpeers.h, docs/CONTROL.md "Several control endpoints"). The caller's thread.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "ctlpeers.h"
#include "jsonutil.h"

int
ctl_peers_parse(struct ctl_peers *p, const char *list, char *err, size_t errlen)
{
	const char *s = list, *comma;
	char host[CTLTLS_HOST_MAX + 1], why[CTL_ERR_MAX];
	unsigned int port;

	memset(p, 0, sizeof(*p));
	if (list == NULL || list[0] == '\0')
		return json_util_fail(err, errlen, "no control endpoint");
	for (;;) {
		size_t len;

		comma = strchr(s, ',');
		len = comma != NULL ? (size_t)(comma - s) : strlen(s);
		if (p->n == CTL_PEERS_MAX)
			return json_util_fail(err, errlen, "more than %d control endpoints",
					      CTL_PEERS_MAX);
		if (len == 0)
			return json_util_fail(err, errlen,
					      "control endpoint %u of the list is empty", p->n + 1);
		if (len > CTL_PEER_MAX)
			return json_util_fail(
				err, errlen,
				"control endpoint %u of the list: longer than %d bytes", p->n + 1,
				CTL_PEER_MAX);
		memcpy(p->ep[p->n], s, len);
		p->ep[p->n][len] = '\0';
		if (ctltls_is_endpoint(p->ep[p->n]) != ctltls_is_endpoint(p->ep[0]))
			return json_util_fail(
				err, errlen,
				"control endpoint %u of the list, '%s': mixes a socket "
				"path and tls:// endpoints",
				p->n + 1, p->ep[p->n]);
		if (ctltls_is_endpoint(p->ep[p->n]) &&
		    ctltls_split(p->ep[p->n], host, &port, why, sizeof(why)) != 0)
			return json_util_fail(err, errlen,
					      "control endpoint %u of the list, '%s': %s", p->n + 1,
					      p->ep[p->n], why);
		for (unsigned int k = 0; k < p->n; k++)
			if (strcmp(p->ep[k], p->ep[p->n]) == 0)
				return json_util_fail(
					err, errlen,
					"control endpoint %u of the list, '%s': given "
					"twice",
					p->n + 1, p->ep[k]);
		p->n++;
		if (comma == NULL)
			return 0;
		s = comma + 1;
	}
}

void
ctl_peers_setup(struct ctl_peers *p, struct ctltls_ctx *tls, const char *expect,
		enum ctltls_role role, int timeout_ms, bool keep)
{
	p->tls = tls;
	p->expect = expect;
	p->role = role;
	p->timeout_ms = timeout_ms;
	p->keep = keep;
}

const char *
ctl_peers_current(const struct ctl_peers *p)
{
	return p->n > 0 ? p->ep[p->cur] : "";
}

bool
ctl_peers_refused(const json_t *r)
{
	return json_is_false(json_object_get(r, "ok")) &&
	       json_integer_value(json_object_get(r, "errno")) == EAGAIN &&
	       json_object_get(r, "leader") != NULL;
}

void
ctl_peers_close(struct ctl_peers *p)
{
	if (p->open)
		ctl_conn_fini(&p->conn);
	p->open = false;
}

/* The index of the endpoint that a follower's refusal r names as the leader's (its
 * "address" for tls:// lists, its "socket" for socket paths), if it is one of p's not yet
 * tried; else -1. */
static int
leader_hint(const struct ctl_peers *p, const json_t *r, const bool *tried)
{
	const json_t *ld = json_object_get(r, "leader");
	bool tls = ctltls_is_endpoint(p->ep[0]);
	const char *at = json_string_value(json_object_get(ld, tls ? "address" : "socket"));
	size_t skip = tls ? strlen(CTLTLS_SCHEME) : 0;

	if (at == NULL || at[0] == '\0')
		return -1;
	if (tls && ctltls_is_endpoint(at))
		at += skip;
	for (unsigned int k = 0; k < p->n; k++)
		if (!tried[k] && strcmp(p->ep[k] + skip, at) == 0)
			return (int)k;
	return -1;
}

/* One try of op at endpoint i (the open connection if it is there: once more on a new one
 * if that is broken). The response, or NULL with *rc and err. */
static json_t *
try_one(struct ctl_peers *p, unsigned int i, const char *op, const json_t *args, int wait_ms,
	int *rc, char *err, size_t errlen)
{
	char why[CTL_ERR_MAX];
	bool reused;

	if (p->open && p->cur != i)
		ctl_peers_close(p);
	reused = p->open;
	for (;;) {
		json_t *a = args != NULL ? json_deep_copy(args) : NULL, *r;

		if (args != NULL && a == NULL) {
			*rc = json_util_failrc(-ENOMEM, err, errlen, "out of memory");
			return NULL;
		}
		if (!p->open) {
			*rc = ctltls_dial(p->tls, p->ep[i], p->expect, p->role, p->timeout_ms,
					  &p->conn, why, sizeof(why));
			if (*rc < 0) {
				json_decref(a);
				json_util_fail(err, errlen, "%s", why);
				return NULL;
			}
			p->open = true;
			p->cur = i;
		}
		r = ctl_conn_call(&p->conn, op, a, p->timeout_ms + wait_ms, why, sizeof(why));
		if (r != NULL)
			return r;
		*rc = -errno;
		json_util_fail(err, errlen, "%s: %s", p->ep[i], why);
		/* The stream may be out of step (a late answer, a half-read frame): start over. */
		ctl_peers_close(p);
		if (!reused)
			return NULL;
		reused = false;
	}
}

json_t *
ctl_peers_call(struct ctl_peers *p, const char *op, json_t *args, int wait_ms, char *err,
	       size_t errlen)
{
	bool tried[CTL_PEERS_MAX] = {false};
	unsigned int i = p->cur;
	int rc = -EINVAL;
	json_t *r;

	p->tried = 0;
	if (p->n == 0) {
		json_decref(args);
		json_util_fail(err, errlen, "no control endpoint");
		errno = EINVAL;
		return NULL;
	}
	for (;;) {
		int next = -1;

		tried[i] = true;
		p->tried++;
		r = try_one(p, i, op, args, wait_ms, &rc, err, errlen);
		if (r != NULL && !ctl_peers_refused(r)) {
			p->cur = i;
			if (!p->keep)
				ctl_peers_close(p);
			json_decref(args);
			return r;
		}
		if (r != NULL) { /* a follower: the leader it names first */
			rc = -EAGAIN;
			json_util_fail(err, errlen, "%s: %s", p->ep[i],
				       json_string_value(json_object_get(r, "error")));
			next = leader_hint(p, r, tried);
			json_decref(r);
			ctl_peers_close(p);
		}
		for (unsigned int k = 1; next < 0 && k < p->n; k++)
			if (!tried[(i + k) % p->n])
				next = (int)((i + k) % p->n);
		if (next < 0)
			break;
		i = (unsigned int)next;
	}
	json_decref(args);
	errno = -rc;
	return NULL;
}
