/* SPDX-License-Identifier: BSD-3-Clause
 *
 * TLS contexts of the control protocol (ctltls.h): made from the PEM files of a
 * certificate, its key, the CA and optionally the CA's CRL, and reloaded from them while
 * in use. Runs in the thread that owns the context (the dataplane's control thread, the
 * control process's one thread, a worker's joining thread, a command-line tool). No DPDK.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <openssl/bn.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

#include "ctltls.h"
#include "ctltls_internal.h"
#include "jsonutil.h"

const char *
ctltls_ssl_reason(char *buf, size_t len)
{
	unsigned long e = ERR_peek_last_error();

	buf[0] = '\0';
	if (e != 0)
		ERR_error_string_n(e, buf, len);
	ERR_clear_error();
	/* "error:0A000086:SSL routines::certificate verify failed": keep the reason. */
	char *r = strrchr(buf, ':');

	return r != NULL && r[1] != '\0' ? r + 1 : buf;
}

void
ctltls_cert_line(X509 *x, char *buf, size_t len)
{
	char subj[256] = "?";
	BIGNUM *bn = ASN1_INTEGER_to_BN(X509_get0_serialNumber(x), NULL);
	char *hex = bn != NULL ? BN_bn2hex(bn) : NULL;

	X509_NAME_oneline(X509_get_subject_name(x), subj, sizeof(subj));
	snprintf(buf, len, "%s, serial %s", subj, hex != NULL ? hex : "?");
	OPENSSL_free(hex);
	BN_free(bn);
	ERR_clear_error();
}

/* CRLs of the CA from crl into s's store, and the store set to check every peer's own
 * certificate against them (not its chain: the CA signs every certificate directly).
 * The number of certificates revoked, or -EINVAL with err. */
static int
load_crl(SSL_CTX *s, const char *crl, char *err, size_t errlen)
{
	X509_STORE *st = SSL_CTX_get_cert_store(s);
	X509_LOOKUP *lu = X509_STORE_add_lookup(st, X509_LOOKUP_file());
	STACK_OF(X509_OBJECT) * objs;
	char why[256];
	int revoked = 0;

	if (lu == NULL || X509_load_crl_file(lu, crl, X509_FILETYPE_PEM) <= 0)
		return json_util_fail(err, errlen, "CRL %s: %s", crl,
				      ctltls_ssl_reason(why, sizeof(why))[0] != '\0' ?
					      why :
					      "no CRL in the file");
	X509_STORE_set_flags(st, X509_V_FLAG_CRL_CHECK);
	objs = X509_STORE_get0_objects(st);
	for (int i = 0; i < sk_X509_OBJECT_num(objs); i++) {
		X509_CRL *c = X509_OBJECT_get0_X509_CRL(sk_X509_OBJECT_value(objs, i));

		if (c != NULL && X509_CRL_get_REVOKED(c) != NULL)
			revoked += sk_X509_REVOKED_num(X509_CRL_get_REVOKED(c));
	}
	return revoked;
}

/* With a CRL, this side's own certificate checked against it as a peer would: a CRL
 * that does not verify against the CA, has expired, or revokes this very certificate
 * would refuse every peer (or this side everywhere), so it is refused here. Errors that
 * are not about the CRL are left to the peers. 0 or -EINVAL with err. */
static int
check_crl(SSL_CTX *s, const char *cert, const char *crl, char *err, size_t errlen)
{
	X509_STORE_CTX *x = X509_STORE_CTX_new();
	STACK_OF(X509) *chain = NULL;
	int e = X509_V_OK;

	if (x == NULL)
		return json_util_fail(err, errlen, "out of memory");
	SSL_CTX_get0_chain_certs(s, &chain);
	if (X509_STORE_CTX_init(x, SSL_CTX_get_cert_store(s), SSL_CTX_get0_certificate(s), chain) ==
		    1 &&
	    X509_verify_cert(x) != 1)
		e = X509_STORE_CTX_get_error(x);
	X509_STORE_CTX_free(x);
	ERR_clear_error();
	switch (e) {
	case X509_V_ERR_CERT_REVOKED:
		return json_util_fail(err, errlen, "certificate %s: revoked by CRL %s", cert, crl);
	case X509_V_ERR_UNABLE_TO_GET_CRL:
		return json_util_fail(err, errlen, "CRL %s: no CRL of the CA in it", crl);
	case X509_V_ERR_UNABLE_TO_DECRYPT_CRL_SIGNATURE:
	case X509_V_ERR_CRL_SIGNATURE_FAILURE:
	case X509_V_ERR_CRL_NOT_YET_VALID:
	case X509_V_ERR_CRL_HAS_EXPIRED:
	case X509_V_ERR_ERROR_IN_CRL_LAST_UPDATE_FIELD:
	case X509_V_ERR_ERROR_IN_CRL_NEXT_UPDATE_FIELD:
	case X509_V_ERR_UNABLE_TO_GET_CRL_ISSUER:
	case X509_V_ERR_KEYUSAGE_NO_CRL_SIGN:
	case X509_V_ERR_DIFFERENT_CRL_SCOPE:
	case X509_V_ERR_CRL_PATH_VALIDATION_ERROR:
		return json_util_fail(err, errlen, "CRL %s: %s", crl,
				      X509_verify_cert_error_string(e));
	default:
		return 0;
	}
}

/* The files of a context: this side's certificate and key, the CA, and the CRL. */
struct tls_files {
	const char *cert, *key, *ca, *crl;
};

/* The peer checks, the options and the CA's names (a server's list of acceptable CAs)
 * of a new context s. 0 or -EINVAL with err. */
static int
setup_verify(SSL_CTX *s, bool server, const struct tls_files *f, char *err, size_t errlen)
{
	char why[256];

	if (SSL_CTX_load_verify_locations(s, f->ca, NULL) != 1)
		return json_util_fail(err, errlen, "CA %s: %s", f->ca,
				      ctltls_ssl_reason(why, sizeof(why)));
	if (server) {
		STACK_OF(X509_NAME) *names = SSL_load_client_CA_file(f->ca);

		if (names == NULL)
			return json_util_fail(err, errlen, "CA %s: %s", f->ca,
					      ctltls_ssl_reason(why, sizeof(why)));
		SSL_CTX_set_client_CA_list(s, names);
		/* No resumption: every connection shows its certificate. */
		SSL_CTX_set_num_tickets(s, 0);
		SSL_CTX_set_session_cache_mode(s, SSL_SESS_CACHE_OFF);
	}
	SSL_CTX_set_verify(s, SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT, ctltls_verify_cb);
	SSL_CTX_set_mode(s, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
	/* The frames carry their own lengths: an EOF without close_notify is an EOF. */
	SSL_CTX_set_options(s, SSL_OP_IGNORE_UNEXPECTED_EOF | SSL_OP_NO_RENEGOTIATION);
	return 0;
}

/* An OpenSSL context from f, with the number of certificates its CRL revokes in
 * *revoked (-1 without a CRL); NULL with err. */
static SSL_CTX *
build(bool server, const struct tls_files *f, int *revoked, char *err, size_t errlen)
{
	SSL_CTX *s;
	char why[256];

	ERR_clear_error();
	*revoked = -1;
	s = SSL_CTX_new(server ? TLS_server_method() : TLS_client_method());
	if (s == NULL) {
		json_util_fail(err, errlen, "TLS context: %s", ctltls_ssl_reason(why, sizeof(why)));
		return NULL;
	}
	if (SSL_CTX_set_min_proto_version(s, TLS1_3_VERSION) != 1 ||
	    SSL_CTX_set_max_proto_version(s, TLS1_3_VERSION) != 1) {
		json_util_fail(err, errlen, "TLS 1.3: %s", ctltls_ssl_reason(why, sizeof(why)));
		goto fail;
	}
	if (SSL_CTX_use_certificate_chain_file(s, f->cert) != 1) {
		json_util_fail(err, errlen, "certificate %s: %s", f->cert,
			       ctltls_ssl_reason(why, sizeof(why)));
		goto fail;
	}
	if (SSL_CTX_use_PrivateKey_file(s, f->key, SSL_FILETYPE_PEM) != 1) {
		json_util_fail(err, errlen, "key %s: %s", f->key,
			       ctltls_ssl_reason(why, sizeof(why)));
		goto fail;
	}
	if (SSL_CTX_check_private_key(s) != 1) {
		json_util_fail(err, errlen, "key %s does not match certificate %s", f->key,
			       f->cert);
		ERR_clear_error();
		goto fail;
	}
	if (setup_verify(s, server, f, err, errlen) != 0)
		goto fail;
	if (f->crl != NULL) {
		*revoked = load_crl(s, f->crl, err, errlen);
		if (*revoked < 0 || check_crl(s, f->cert, f->crl, err, errlen) != 0)
			goto fail;
	}
	return s;
fail:
	SSL_CTX_free(s);
	return NULL;
}

struct ctltls_ctx *
ctltls_ctx_new(bool server, const char *cert, const char *key, const char *ca, const char *crl,
	       char *err, size_t errlen)
{
	const struct tls_files f = {cert, key, ca, crl};
	struct ctltls_ctx *c;

	if (cert == NULL || key == NULL || ca == NULL) {
		json_util_fail(err, errlen, "TLS needs a certificate, its key and the CA");
		return NULL;
	}
	c = calloc(1, sizeof(*c));
	if (c == NULL || (c->cert = strdup(cert)) == NULL || (c->key = strdup(key)) == NULL ||
	    (c->ca = strdup(ca)) == NULL || (crl != NULL && (c->crl = strdup(crl)) == NULL)) {
		json_util_fail(err, errlen, "out of memory");
		goto fail;
	}
	c->server = server;
	c->ssl = build(server, &f, &c->revoked, err, errlen);
	if (c->ssl != NULL)
		return c;
fail:
	ctltls_ctx_free(c);
	return NULL;
}

void
ctltls_ctx_free(struct ctltls_ctx *ctx)
{
	if (ctx == NULL)
		return;
	SSL_CTX_free(ctx->ssl); /* a reference: streams still open hold theirs */
	free(ctx->cert);
	free(ctx->key);
	free(ctx->ca);
	free(ctx->crl);
	free(ctx);
}

int
ctltls_ctx_reload(struct ctltls_ctx *ctx, char *msg, size_t msglen)
{
	const struct tls_files f = {ctx->cert, ctx->key, ctx->ca, ctx->crl};
	int revoked;
	SSL_CTX *s = build(ctx->server, &f, &revoked, msg, msglen);

	if (s == NULL)
		return -EINVAL;
	/* The SSL objects of open streams and handshakes under way each hold a reference
	 * to the old context: it goes when the last of them closes. */
	SSL_CTX_free(ctx->ssl);
	ctx->ssl = s;
	ctx->revoked = revoked;
	ctx->reloads++;
	ctltls_ctx_describe(ctx, msg, msglen);
	return 0;
}

void
ctltls_ctx_describe(const struct ctltls_ctx *ctx, char *msg, size_t msglen)
{
	X509 *x = SSL_CTX_get0_certificate(ctx->ssl);
	char line[320] = "?", until[32] = "?";
	struct tm tm;

	if (x != NULL) {
		ctltls_cert_line(x, line, sizeof(line));
		if (ASN1_TIME_to_tm(X509_get0_notAfter(x), &tm) == 1)
			strftime(until, sizeof(until), "%Y-%m-%dT%H:%M:%SZ", &tm);
	}
	if (ctx->crl != NULL)
		snprintf(msg, msglen, "certificate %s: %s, not after %s; CRL %s: %d revoked",
			 ctx->cert, line, until, ctx->crl, ctx->revoked);
	else
		snprintf(msg, msglen, "certificate %s: %s, not after %s; no CRL", ctx->cert, line,
			 until);
	ERR_clear_error();
}

unsigned long
ctltls_ctx_reloads(const struct ctltls_ctx *ctx)
{
	return ctx->reloads;
}

json_t *
ctltls_reload_reply(const json_t *req, uint32_t id,
		    int (*reload)(void *arg, char *msg, size_t msglen), void *arg,
		    const struct ctltls_ctx *ctx)
{
	char msg[CTLTLS_INFO_MAX];
	json_t *r;
	int rc;

	if (ctl_args_unpack(req, msg, sizeof(msg), "{}") != 0)
		return ctl_reply_error(true, id, EINVAL, "%s", msg);
	rc = reload(arg, msg, sizeof(msg));
	if (rc != 0)
		return ctl_reply_error(true, id, -rc, "%s", msg);
	r = ctl_reply_ok(id);
	json_object_set_new(r, "tls", json_string(msg));
	json_object_set_new(r, "reloads", json_integer(ctx != NULL ? (json_int_t)ctx->reloads : 0));
	return r;
}

int
ctltls_client_ctx(const char *endpoint, const char *cert, const char *key, const char *ca,
		  const char *crl, struct ctltls_ctx **out, char *err, size_t errlen)
{
	*out = NULL;
	if (!ctltls_is_endpoint(endpoint)) {
		if (cert != NULL || key != NULL || ca != NULL || crl != NULL)
			return json_util_fail(err, errlen, "--%s: only for a tls:// endpoint",
					      cert != NULL ? "cert" :
					      key != NULL  ? "key" :
					      ca != NULL   ? "ca" :
							     "crl");
		return 0;
	}
	if (cert == NULL || key == NULL || ca == NULL)
		return json_util_fail(err, errlen, "%s: a tls:// endpoint needs --%s", endpoint,
				      cert == NULL ? "cert" :
				      key == NULL  ? "key" :
						     "ca");
	*out = ctltls_ctx_new(false, cert, key, ca, crl, err, errlen);
	return *out != NULL ? 0 : -EINVAL;
}
