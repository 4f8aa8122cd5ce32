/* SPDX-License-Identifier: BSD-3-Clause
 *
 * The etcd v3 client (etcd.h): the JSON of etcd's HTTP gateway and the HTTP calls, with
 * libcurl, over a list of endpoints. On the control daemon's thread. No DPDK.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <curl/curl.h>
#include <jansson.h>

#include "etcd.h"

struct etcd {
	char *list; /* the endpoints, NUL-separated in place */
	const char *ep[ETCD_ENDPOINTS_MAX];
	int n_ep, cur;
	char *cacert, *cert, *key;
	int timeout_ms;
	CURL *curl;
};

/* ---- base64 ------------------------------------------------------------------------ */

static const char b64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

char *
etcd_b64_encode(const void *p, size_t len)
{
	const unsigned char *s = p;
	char *o = malloc(4 * ((len + 2) / 3) + 1), *q = o;

	if (o == NULL)
		return NULL;
	for (size_t i = 0; i < len; i += 3) {
		uint32_t v = (uint32_t)s[i] << 16 | (i + 1 < len ? (uint32_t)s[i + 1] << 8 : 0) |
			     (i + 2 < len ? s[i + 2] : 0);

		*q++ = b64[v >> 18 & 63];
		*q++ = b64[v >> 12 & 63];
		*q++ = i + 1 < len ? b64[v >> 6 & 63] : '=';
		*q++ = i + 2 < len ? b64[v & 63] : '=';
	}
	*q = '\0';
	return o;
}

char *
etcd_b64_decode(const char *s, size_t *len)
{
	size_t n = strlen(s), k = 0;
	char *o;

	if (n % 4 != 0 || (o = malloc(n / 4 * 3 + 1)) == NULL)
		return NULL;
	for (size_t i = 0; i < n; i += 4) {
		uint32_t v = 0;
		int pad = 0;

		for (int j = 0; j < 4; j++) {
			const char *c = s[i + j] != '\0' ? strchr(b64, s[i + j]) : NULL;

			if (s[i + j] == '=' && i + 4 == n && j >= 2 &&
			    (j == 3 || s[i + 3] == '=')) {
				pad++;
				v <<= 6;
			} else if (c == NULL || pad > 0) {
				free(o);
				return NULL;
			} else {
				v = v << 6 | (uint32_t)(c - b64);
			}
		}
		o[k++] = (char)(v >> 16);
		if (pad < 2)
			o[k++] = (char)(v >> 8 & 255);
		if (pad < 1)
			o[k++] = (char)(v & 255);
	}
	o[k] = '\0';
	*len = k;
	return o;
}

/* ---- JSON -------------------------------------------------------------------------- */

bool
etcd_json_int(const json_t *o, const char *field, int64_t def, int64_t *out)
{
	const json_t *v = json_object_get(o, field);
	char *end;

	if (v == NULL) {
		*out = def;
		return true;
	}
	if (json_is_integer(v)) {
		*out = json_integer_value(v);
		return true;
	}
	if (!json_is_string(v) || json_string_value(v)[0] == '\0')
		return false;
	errno = 0;
	*out = strtoll(json_string_value(v), &end, 10);
	return errno == 0 && *end == '\0';
}

/* A JSON string of the base64 of len bytes. */
static json_t *
b64_json(const void *p, size_t len)
{
	char *s = etcd_b64_encode(p, len);
	json_t *j = s != NULL ? json_string(s) : NULL;

	free(s);
	return j;
}

/* An int64 as etcd's gateway writes it: a decimal string. */
static json_t *
int_json(int64_t v)
{
	char s[24];

	snprintf(s, sizeof(s), "%" PRId64, v);
	return json_string(s);
}

json_t *
etcd_json_put(const char *key, const void *value, size_t len, int64_t lease)
{
	json_t *o = json_pack("{s:o,s:o}", "key", b64_json(key, strlen(key)), "value",
			      b64_json(value, len));

	if (o != NULL && lease != 0)
		json_object_set_new(o, "lease", int_json(lease));
	return o;
}

json_t *
etcd_json_range(const char *key, bool prefix)
{
	size_t n = strlen(key);
	json_t *o = json_pack("{s:o}", "key", b64_json(key, n));

	/* A prefix's range ends at the prefix with its last byte incremented. */
	if (o != NULL && prefix && n > 0 && (unsigned char)key[n - 1] < 0xff) {
		char *end = strdup(key);

		if (end == NULL) {
			json_decref(o);
			return NULL;
		}
		end[n - 1] = (char)((unsigned char)end[n - 1] + 1);
		json_object_set_new(o, "range_end", b64_json(end, n));
		free(end);
	}
	return o;
}

/* One branch of a transaction. */
static json_t *
ops_json(const struct etcd_op *ops, size_t n)
{
	json_t *a = json_array();

	for (size_t i = 0; i < n; i++) {
		const struct etcd_op *op = &ops[i];

		if (op->kind == ETCD_OP_PUT)
			json_array_append_new(a,
					      json_pack("{s:o}", "request_put",
							etcd_json_put(op->key, op->value,
								      op->value_len, op->lease)));
		else
			json_array_append_new(a, json_pack("{s:o}",
							   op->kind == ETCD_OP_GET ?
								   "request_range" :
								   "request_delete_range",
							   etcd_json_range(op->key, false)));
	}
	return a;
}

json_t *
etcd_json_txn(const struct etcd_cmp *cmp, size_t ncmp, const struct etcd_op *ok, size_t nok,
	      const struct etcd_op *fail, size_t nfail)
{
	json_t *c = json_array();

	for (size_t i = 0; i < ncmp; i++)
		json_array_append_new(c,
				      json_pack("{s:o,s:s,s:s,s:o}", "key",
						b64_json(cmp[i].key, strlen(cmp[i].key)), "target",
						cmp[i].mod ? "MOD" : "CREATE", "result", "EQUAL",
						cmp[i].mod ? "mod_revision" : "create_revision",
						int_json(cmp[i].rev)));
	return json_pack("{s:o,s:o,s:o}", "compare", c, "success", ops_json(ok, nok), "failure",
			 ops_json(fail, nfail));
}

void
etcd_kv_free(struct etcd_kv *kv)
{
	free(kv->key);
	free(kv->value);
	memset(kv, 0, sizeof(*kv));
}

void
etcd_kvs_free(struct etcd_kv *kvs, size_t n)
{
	for (size_t i = 0; kvs != NULL && i < n; i++)
		etcd_kv_free(&kvs[i]);
	free(kvs);
}

int
etcd_json_kv(const json_t *o, struct etcd_kv *kv)
{
	const json_t *k = json_object_get(o, "key"), *v = json_object_get(o, "value");
	size_t klen;

	memset(kv, 0, sizeof(*kv));
	if (!json_is_string(k) || (v != NULL && !json_is_string(v)) ||
	    !etcd_json_int(o, "create_revision", 0, &kv->create_revision) ||
	    !etcd_json_int(o, "mod_revision", 0, &kv->mod_revision) ||
	    !etcd_json_int(o, "version", 0, &kv->version) ||
	    !etcd_json_int(o, "lease", 0, &kv->lease))
		return -EPROTO;
	kv->key = etcd_b64_decode(json_string_value(k), &klen);
	/* proto3 leaves an empty value out. */
	kv->value = etcd_b64_decode(v != NULL ? json_string_value(v) : "", &kv->value_len);
	if (kv->key == NULL || kv->value == NULL || strlen(kv->key) != klen) {
		etcd_kv_free(kv);
		return -EPROTO;
	}
	return 0;
}

/* The "kvs" of a range response into *kvs, *n. */
static int
kvs_parse(const json_t *r, struct etcd_kv **kvs, size_t *n)
{
	const json_t *a = json_object_get(r, "kvs"), *o;
	size_t i;

	*kvs = NULL;
	*n = 0;
	if (a == NULL)
		return 0;
	if (!json_is_array(a))
		return -EPROTO;
	*kvs = calloc(json_array_size(a) + 1, sizeof(**kvs));
	if (*kvs == NULL)
		return -ENOMEM;
	json_array_foreach (a, i, o) {
		int rc = etcd_json_kv(o, &(*kvs)[i]);

		if (rc != 0) {
			etcd_kvs_free(*kvs, i);
			*kvs = NULL;
			return rc;
		}
		*n = i + 1;
	}
	return 0;
}

/* ---- HTTP -------------------------------------------------------------------------- */

struct etcd *
etcd_new(const struct etcd_opts *o, char *err, size_t errlen)
{
	static bool global;
	struct etcd *e = calloc(1, sizeof(*e));
	char *save = NULL;

	if (!global) {
		curl_global_init(CURL_GLOBAL_DEFAULT);
		global = true;
	}
	if (e == NULL || (e->list = strdup(o->endpoints != NULL ? o->endpoints : "")) == NULL) {
		snprintf(err, errlen, "etcd: out of memory");
		free(e);
		return NULL;
	}
	for (char *t = strtok_r(e->list, ",", &save); t != NULL; t = strtok_r(NULL, ",", &save)) {
		if (strncmp(t, "http://", 7) != 0 && strncmp(t, "https://", 8) != 0) {
			snprintf(err, errlen,
				 "etcd: endpoint '%s': expected http://HOST:PORT or "
				 "https://HOST:PORT",
				 t);
			etcd_free(e);
			return NULL;
		}
		if (e->n_ep == ETCD_ENDPOINTS_MAX) {
			snprintf(err, errlen, "etcd: more than %d endpoints", ETCD_ENDPOINTS_MAX);
			etcd_free(e);
			return NULL;
		}
		e->ep[e->n_ep++] = t;
	}
	e->timeout_ms = o->timeout_ms > 0 ? o->timeout_ms : 1000;
	e->cacert = o->cacert != NULL ? strdup(o->cacert) : NULL;
	e->cert = o->cert != NULL ? strdup(o->cert) : NULL;
	e->key = o->key != NULL ? strdup(o->key) : NULL;
	e->curl = curl_easy_init();
	if (e->n_ep == 0 || e->curl == NULL) {
		snprintf(err, errlen, e->n_ep == 0 ? "etcd: no endpoint" : "etcd: libcurl failed");
		etcd_free(e);
		return NULL;
	}
	return e;
}

void
etcd_free(struct etcd *e)
{
	if (e == NULL)
		return;
	if (e->curl != NULL)
		curl_easy_cleanup(e->curl);
	free(e->cacert);
	free(e->cert);
	free(e->key);
	free(e->list);
	free(e);
}

const char *
etcd_endpoint(const struct etcd *e)
{
	return e->ep[e->cur];
}

struct buf {
	char *p;
	size_t n;
};

static size_t
on_data(char *p, size_t size, size_t nmemb, void *arg)
{
	struct buf *b = arg;
	size_t n = size * nmemb;
	char *q = n < (1u << 26) ? realloc(b->p, b->n + n + 1) : NULL;

	if (q == NULL)
		return 0;
	memcpy(q + b->n, p, n);
	b->n += n;
	q[b->n] = '\0';
	b->p = q;
	return n;
}

/* An endpoint is not tried with less of the call's time left than this. */
#define ETCD_CALL_MIN_MS 10

/* Milliseconds of the monotonic clock. */
static int64_t
mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* POST body to one endpoint within timeout_ms (connected within connect_ms): the HTTP
 * status, or -1 with err filled (no answer). */
static long
post_one(struct etcd *e, const char *ep, const char *path, const char *body, struct buf *b,
	 long timeout_ms, long connect_ms, char *err, size_t errlen)
{
	char url[512];
	long code = 0;
	CURLcode c;

	snprintf(url, sizeof(url), "%s%s", ep, path);
	curl_easy_reset(e->curl);
	curl_easy_setopt(e->curl, CURLOPT_URL, url);
	curl_easy_setopt(e->curl, CURLOPT_POSTFIELDS, body);
	curl_easy_setopt(e->curl, CURLOPT_TIMEOUT_MS, timeout_ms);
	curl_easy_setopt(e->curl, CURLOPT_CONNECTTIMEOUT_MS, connect_ms);
	curl_easy_setopt(e->curl, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(e->curl, CURLOPT_WRITEFUNCTION, on_data);
	curl_easy_setopt(e->curl, CURLOPT_WRITEDATA, b);
	if (e->cacert != NULL)
		curl_easy_setopt(e->curl, CURLOPT_CAINFO, e->cacert);
	if (e->cert != NULL)
		curl_easy_setopt(e->curl, CURLOPT_SSLCERT, e->cert);
	if (e->key != NULL)
		curl_easy_setopt(e->curl, CURLOPT_SSLKEY, e->key);
	c = curl_easy_perform(e->curl);
	if (c != CURLE_OK) {
		snprintf(err, errlen, "etcd %s: %s", ep, curl_easy_strerror(c));
		return -1;
	}
	curl_easy_getinfo(e->curl, CURLINFO_RESPONSE_CODE, &code);
	if (code >= 500 && b->p != NULL && strstr(b->p, "\"code\"") == NULL) {
		snprintf(err, errlen, "etcd %s: HTTP %ld", ep, code);
		return -1;
	}
	return code;
}

/*
 * POST req (stolen) to path at the endpoints in turn from the current one, all within the
 * timeout (an endpoint that never answers a connection takes at most half of what is left
 * while others remain, and the next call starts after it); the answer's JSON into *resp.
 * An error object ({"error", "code"}) becomes -ENOENT (code 5, NotFound) or -EIO.
 */
static int
call(struct etcd *e, const char *path, json_t *req, json_t **resp, char *err, size_t errlen)
{
	char *body = req != NULL ? json_dumps(req, JSON_COMPACT) : NULL, why[ETCD_ERR_MAX];
	json_error_t je;
	int rc = -EHOSTUNREACH, off;

	json_decref(req);
	*resp = NULL;
	if (body == NULL) {
		snprintf(err, errlen, "etcd: out of memory");
		return -ENOMEM;
	}
	off = snprintf(err, errlen, "etcd: no endpoint answered (");
	int64_t end = mono_ms() + e->timeout_ms;
	int first = e->cur;

	for (int k = 0; k < e->n_ep; k++) {
		int i = (first + k) % e->n_ep;
		struct buf b = {0};
		long left = (long)(end - mono_ms()), code;

		if (left < ETCD_CALL_MIN_MS) {
			snprintf(why, sizeof(why), "etcd %s: not tried, the call's %d ms are spent",
				 e->ep[i], e->timeout_ms);
			code = -1;
		} else {
			code = post_one(e, e->ep[i], path, body, &b, left,
					k + 1 < e->n_ep && left > 1 ? left / 2 : left, why,
					sizeof(why));
		}
		if (code < 0) {
			free(b.p);
			if (left >= ETCD_CALL_MIN_MS)
				e->cur = (i + 1) % e->n_ep;
			if (off >= 0 && (size_t)off < errlen)
				off += snprintf(err + off, errlen - (size_t)off, "%s%s)",
						k > 0 ? "; " : "", why + 5);
			if (off >= 1 && (size_t)off < errlen)
				off--; /* the ')' is overwritten by the next one */
			continue;
		}
		e->cur = i;
		*resp = b.p != NULL ? json_loads(b.p, 0, &je) : NULL;
		if (!json_is_object(*resp)) {
			snprintf(err, errlen, "etcd %s%s: HTTP %ld, not the v3 API's JSON",
				 e->ep[i], path, code);
			rc = -EPROTO;
		} else if (json_object_get(*resp, "error") != NULL || code != 200) {
			const char *m = json_string_value(json_object_get(*resp, "error"));
			int64_t ec = 0;

			etcd_json_int(*resp, "code", 0, &ec);
			snprintf(err, errlen, "etcd %s%s: %s", e->ep[i], path,
				 m != NULL ? m : "error without a message");
			rc = ec == 5 ? -ENOENT : -EIO;
		} else {
			rc = 0;
		}
		free(b.p);
		break;
	}
	free(body);
	if (rc != 0) {
		json_decref(*resp);
		*resp = NULL;
	}
	return rc;
}

/* The header's revision of a response. */
static int
header_rev(const json_t *r, int64_t *rev, char *err, size_t errlen)
{
	int64_t v;

	if (!etcd_json_int(json_object_get(r, "header"), "revision", 0, &v)) {
		snprintf(err, errlen, "etcd: a response without a valid revision");
		return -EPROTO;
	}
	if (rev != NULL)
		*rev = v;
	return 0;
}

int
etcd_put(struct etcd *e, const char *key, const void *value, size_t len, int64_t lease,
	 int64_t *rev, char *err, size_t errlen)
{
	json_t *r;
	int rc = call(e, "/v3/kv/put", etcd_json_put(key, value, len, lease), &r, err, errlen);

	if (rc == 0)
		rc = header_rev(r, rev, err, errlen);
	json_decref(r);
	return rc;
}

int
etcd_range(struct etcd *e, const char *key, bool prefix, struct etcd_kv **kvs, size_t *n,
	   int64_t *rev, char *err, size_t errlen)
{
	json_t *r;
	int rc = call(e, "/v3/kv/range", etcd_json_range(key, prefix), &r, err, errlen);

	*kvs = NULL;
	*n = 0;
	if (rc == 0)
		rc = header_rev(r, rev, err, errlen);
	if (rc == 0 && (rc = kvs_parse(r, kvs, n)) != 0)
		snprintf(err, errlen, "etcd: a range response with bad kvs");
	json_decref(r);
	return rc;
}

int
etcd_delete(struct etcd *e, const char *key, bool prefix, int64_t *deleted, char *err,
	    size_t errlen)
{
	json_t *r;
	int64_t d = 0;
	int rc = call(e, "/v3/kv/deleterange", etcd_json_range(key, prefix), &r, err, errlen);

	if (rc == 0 && !etcd_json_int(r, "deleted", 0, &d)) {
		snprintf(err, errlen, "etcd: a delete response with a bad count");
		rc = -EPROTO;
	}
	if (deleted != NULL)
		*deleted = d;
	json_decref(r);
	return rc;
}

int
etcd_txn(struct etcd *e, const struct etcd_cmp *cmp, size_t ncmp, const struct etcd_op *ok,
	 size_t nok, const struct etcd_op *fail, size_t nfail, bool *succeeded, int64_t *rev,
	 struct etcd_kv *kv, char *err, size_t errlen)
{
	json_t *r, *x;
	size_t i;
	int rc = call(e, "/v3/kv/txn", etcd_json_txn(cmp, ncmp, ok, nok, fail, nfail), &r, err,
		      errlen);

	if (kv != NULL)
		memset(kv, 0, sizeof(*kv));
	if (rc == 0)
		rc = header_rev(r, rev, err, errlen);
	if (rc != 0) {
		json_decref(r);
		return rc;
	}
	*succeeded = json_is_true(json_object_get(r, "succeeded"));
	json_array_foreach (json_object_get(r, "responses"), i, x) {
		const json_t *kvs = json_object_get(json_object_get(x, "response_range"), "kvs");

		if (kv != NULL && kv->key == NULL && json_array_size(kvs) > 0 &&
		    etcd_json_kv(json_array_get(kvs, 0), kv) != 0) {
			snprintf(err, errlen, "etcd: a txn response with a bad kv");
			rc = -EPROTO;
		}
	}
	json_decref(r);
	return rc;
}

int
etcd_lease_grant(struct etcd *e, int64_t ttl_s, int64_t *id, int64_t *ttl_s_out, char *err,
		 size_t errlen)
{
	json_t *r;
	int rc = call(e, "/v3/lease/grant", json_pack("{s:o}", "TTL", int_json(ttl_s)), &r, err,
		      errlen);

	if (rc == 0 && (!etcd_json_int(r, "ID", 0, id) || !etcd_json_int(r, "TTL", 0, ttl_s_out) ||
			*id == 0)) {
		snprintf(err, errlen, "etcd: a lease grant without a valid ID and TTL");
		rc = -EPROTO;
	}
	json_decref(r);
	return rc;
}

int
etcd_lease_keepalive(struct etcd *e, int64_t id, int64_t *ttl_s, char *err, size_t errlen)
{
	json_t *r;
	int rc = call(e, "/v3/lease/keepalive", json_pack("{s:o}", "ID", int_json(id)), &r, err,
		      errlen);

	/* The gateway streams: one {"result": {...}} per request; a lease that is gone
	 * answers without a TTL (0). */
	if (rc == 0 && (!json_is_object(json_object_get(r, "result")) ||
			!etcd_json_int(json_object_get(r, "result"), "TTL", 0, ttl_s))) {
		snprintf(err, errlen, "etcd: a keepalive answer without a result");
		rc = -EPROTO;
	}
	json_decref(r);
	return rc;
}

int
etcd_lease_revoke(struct etcd *e, int64_t id, char *err, size_t errlen)
{
	json_t *r;
	int rc = call(e, "/v3/lease/revoke", json_pack("{s:o}", "ID", int_json(id)), &r, err,
		      errlen);

	json_decref(r);
	return rc;
}
