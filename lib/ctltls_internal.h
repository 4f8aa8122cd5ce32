/* SPDX-License-Identifier: BSD-3-Clause
 *
 * What the two halves of the control protocol's TLS share (ctltls.h): ctltls_ctx.c makes
 * and reloads contexts, ctltls.c makes streams from them. Inside lib/ only. Slow path;
 * no DPDK.
 */
#ifndef GEOREDUCE_CTLTLS_INTERNAL_H
#define GEOREDUCE_CTLTLS_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>

#include <openssl/ssl.h>

struct ctltls_ctx {
	SSL_CTX *ssl; /* the one new handshakes use; streams hold references to older ones */
	bool server;
	char *cert, *key, *ca, *crl; /* the files, read again by ctltls_ctx_reload() */
	int revoked;                 /* certificates the CRL revokes (-1: no CRL) */
	unsigned long reloads;
};

/* OpenSSL's reason for the last failure, and the queue emptied; "" if it has none. */
const char *ctltls_ssl_reason(char *buf, size_t len);

/* "SUBJECT, serial HEX" of x into buf. */
void ctltls_cert_line(X509 *x, char *buf, size_t len);

/* The verify callback of every context: the first certificate the check refused is
 * written, with ctltls_cert_line(), into the why of the stream being set up (the SSL
 * object's app data), so that the refusal names it. Keeps OpenSSL's verdict. */
int ctltls_verify_cb(int ok, X509_STORE_CTX *x);

#endif
