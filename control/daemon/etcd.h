/* SPDX-License-Identifier: BSD-3-Clause
 *
 * A small client of etcd's v3 API over its HTTP/JSON gateway (etcd 3.4 serves it at
 * /v3/...; docs/DEPLOYMENT.md, "Replicas on etcd"): put, range (one key or a prefix),
 * delete, transactions comparing a key's create or mod revision, and leases (grant, keep
 * alive, revoke). Keys and values travel base64-encoded, 64-bit integers as decimal
 * strings. A list of endpoints is tried in turn: a call that gets no answer from one
 * (cannot connect, timeout, HTTP 5xx) goes to the next, and the one that answered is used
 * first from then on. With a CA, client certificate and key, the endpoints are reached
 * over https with mutual TLS. Blocking calls (libcurl), each bounded by the client's
 * timeout; one thread per client at a time (the control daemon's). No DPDK.
 */
#ifndef GEOREDUCE_ETCD_H
#define GEOREDUCE_ETCD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#define ETCD_ENDPOINTS_MAX 16
#define ETCD_ERR_MAX 256

struct etcd;

/** How to reach etcd. */
struct etcd_opts {
	const char *endpoints; /* "http://HOST:PORT[,https://HOST:PORT...]" */
	const char *cacert;    /* for https: the CA that signed etcd's certificates, or NULL */
	const char *cert;      /* the client certificate and key for mutual TLS, or NULL */
	const char *key;
	int timeout_ms; /* one HTTP request, connection included; > 0 */
};

/** One key as read. */
struct etcd_kv {
	char *key;   /* NUL-terminated (keys are text here) */
	char *value; /* value_len bytes and a NUL */
	size_t value_len;
	int64_t create_revision, mod_revision, version, lease;
};

/** One comparison of a transaction: the key's create_revision (target "CREATE") or
 * mod_revision ("MOD") equal to rev (0: the key does not exist, for CREATE). */
struct etcd_cmp {
	const char *key;
	bool mod; /* false: create_revision */
	int64_t rev;
};

/** One operation of a transaction's branch. */
struct etcd_op {
	enum {
		ETCD_OP_PUT,
		ETCD_OP_GET,
		ETCD_OP_DELETE
	} kind;
	const char *key;
	const char *value; /* PUT: value_len bytes */
	size_t value_len;
	int64_t lease; /* PUT: 0 for none */
};

/** A client for o (the strings are copied). NULL with err filled on a bad endpoint list. */
struct etcd *etcd_new(const struct etcd_opts *o, char *err, size_t errlen);
void etcd_free(struct etcd *e);

/** The endpoint that answered last (or the first). */
const char *etcd_endpoint(const struct etcd *e);

/*
 * Every call below returns 0 or a negative errno with err filled ("etcd http://...:
 * ..."): -EHOSTUNREACH (no endpoint answered), -EPROTO (an answer that is not the v3
 * API's), -ENOENT (etcd's NotFound, e.g. an unknown lease), -EIO (another etcd error,
 * its message in err), -ENOMEM.
 */

/** Put key = value (len bytes), attached to lease (0: none). *rev: the revision, or NULL. */
int etcd_put(struct etcd *e, const char *key, const void *value, size_t len, int64_t lease,
	     int64_t *rev, char *err, size_t errlen);

/** The keys equal to key, or (prefix) starting with it, into *kvs (*n of them; free with
 * etcd_kvs_free()); *rev: the store's revision, or NULL. */
int etcd_range(struct etcd *e, const char *key, bool prefix, struct etcd_kv **kvs, size_t *n,
	       int64_t *rev, char *err, size_t errlen);

/** Delete key or (prefix) the keys starting with it; *deleted: how many, or NULL. */
int etcd_delete(struct etcd *e, const char *key, bool prefix, int64_t *deleted, char *err,
		size_t errlen);

/** If every comparison holds, the success ops, else the failure ops. *succeeded says
 * which; *rev the revision after it; the first key a GET op found into *kv (if kv is not
 * NULL; kv->key NULL if none: free with etcd_kv_free()). */
int etcd_txn(struct etcd *e, const struct etcd_cmp *cmp, size_t ncmp, const struct etcd_op *ok,
	     size_t nok, const struct etcd_op *fail, size_t nfail, bool *succeeded, int64_t *rev,
	     struct etcd_kv *kv, char *err, size_t errlen);

/** A lease of ttl_s seconds: its id into *id, the TTL etcd granted into *ttl_s_out. */
int etcd_lease_grant(struct etcd *e, int64_t ttl_s, int64_t *id, int64_t *ttl_s_out, char *err,
		     size_t errlen);

/** Keep lease id alive once: its TTL into *ttl_s (0: the lease is gone). */
int etcd_lease_keepalive(struct etcd *e, int64_t id, int64_t *ttl_s, char *err, size_t errlen);

/** Revoke lease id (the keys attached to it are deleted). */
int etcd_lease_revoke(struct etcd *e, int64_t id, char *err, size_t errlen);

void etcd_kv_free(struct etcd_kv *kv);
void etcd_kvs_free(struct etcd_kv *kvs, size_t n);

/* ---- the JSON of the gateway, for the client and its tests -------------------------- */

/** base64 (RFC 4648, padded) of len bytes: a malloc'd string, NULL on ENOMEM. */
char *etcd_b64_encode(const void *p, size_t len);
/** The bytes of base64 s into a malloc'd buffer with a NUL after them, *len its length;
 * NULL if s is not base64 (or ENOMEM). */
char *etcd_b64_decode(const char *s, size_t *len);
/** A decimal-string or integer int64 field of o, or def when absent (proto3 leaves zero
 * values out); false if present and not a 64-bit integer. */
bool etcd_json_int(const json_t *o, const char *field, int64_t def, int64_t *out);
/** The request body of a put / a range or delete (with range_end for a prefix) / a txn. */
json_t *etcd_json_put(const char *key, const void *value, size_t len, int64_t lease);
json_t *etcd_json_range(const char *key, bool prefix);
json_t *etcd_json_txn(const struct etcd_cmp *cmp, size_t ncmp, const struct etcd_op *ok, size_t nok,
		      const struct etcd_op *fail, size_t nfail);
/** One kv object of a response into kv: 0, or -EPROTO. */
int etcd_json_kv(const json_t *o, struct etcd_kv *kv);

#endif
