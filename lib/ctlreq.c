/* SPDX-License-Identifier: BSD-3-Clause
 *
 * The control protocol's messages (ctlmsg.h, docs/CONTROL.md) on top of the frames of
 * ctlmsg.c: the request envelope and its check, success and error responses, the strict
 * unpacking of an op's arguments, and the client's call (a request out, the response with
 * the same id back). The dataplane's control thread checks requests and builds replies;
 * clients (georeduce-control, georeduce-dpctl, the worker library, tests) make calls.
 * Slow path only: everything allocates.
 */
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctlmsg.h"
#include "jsonutil.h"

static const char *const envelope_keys[] = {"version", "id", "op"};

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
		return json_util_fail(
			err, errlen,
			"field '%s': expected an integer 0..4294967295, got %" JSON_INTEGER_FORMAT,
			key, json_integer_value(v));
	return json_util_fail(err, errlen, "field '%s': expected an integer 0..4294967295, got %s",
			      key, json_util_type_desc(v));
}

bool
ctl_request_id(const json_t *req, uint32_t *id)
{
	return json_is_object(req) && get_u32(json_object_get(req, "id"), id);
}

int
ctl_request_check(const json_t *req, uint32_t *id, const char **op, char *err, size_t errlen)
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
				      json_util_type_desc(v));
	if (json_integer_value(v) != CTL_PROTOCOL_VERSION) {
		json_util_fail(err, errlen,
			       "field 'version': protocol version %" JSON_INTEGER_FORMAT
			       " is not supported (only %d)",
			       json_integer_value(v), CTL_PROTOCOL_VERSION);
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
		return json_util_fail(err, errlen,
				      "field 'op': expected a non-empty string, got %s",
				      json_is_string(v) ? "\"\"" : json_util_type_desc(v));
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
	char line[CTL_ERR_MAX];
	json_t *r = json_object();
	va_list ap;

	if (r == NULL)
		return NULL;
	va_start(ap, fmt);
	json_util_vfail(line, sizeof(line), fmt, ap);
	va_end(ap);
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
	char type;     /* i I b s f F o O n u */
	bool with_len; /* "s%" */
	union {
		int *i;
		json_int_t *I;
		const char **s;
		double *f;
		json_t **o;
		uint32_t *u;
	} out;
	size_t *len_out; /* "s%" */
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
	char fmt[2] = {a->type, '\0'};
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
				      arg_type_desc(a->type), json_util_type_desc(v));
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
	json_object_foreach ((json_t *)req, key, v) {
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
			       CTL_PROTOCOL_VERSION,
			       v == NULL ? "nothing" : json_util_type_desc(v));
		return -EBADMSG;
	}
	ok = json_object_get(resp, "ok");
	if (!json_is_boolean(ok)) {
		json_util_fail(err, errlen, "response: field 'ok': expected a boolean, got %s",
			       ok == NULL ? "nothing" : json_util_type_desc(ok));
		return -EBADMSG;
	}
	if (json_is_false(ok)) {
		v = json_object_get(resp, "errno");
		if (!json_is_integer(v) || json_integer_value(v) <= 0 ||
		    !json_is_string(json_object_get(resp, "error"))) {
			json_util_fail(err, errlen,
				       "response: an error without a positive "
				       "'errno' and an 'error' string");
			return -EBADMSG;
		}
	}
	rid = json_object_get(resp, "id");
	if (json_is_null(rid) && json_is_false(ok))
		return 1;
	if (!get_u32(rid, &got)) {
		json_util_fail(err, errlen,
			       "response: field 'id': expected an integer "
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
	ctl_conn_release(&c);
	return r;
}

json_t *
ctl_conn_call(struct ctl_conn *c, const char *op, json_t *args, int timeout_ms, char *err,
	      size_t errlen)
{
	int64_t deadline = ctl_deadline(timeout_ms);
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
			json_util_fail(err, errlen,
				       "%s: argument '%s' is reserved for the envelope", op,
				       envelope_keys[i]);
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
		int left = ctl_ms_left(deadline);

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