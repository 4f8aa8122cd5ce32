/* SPDX-License-Identifier: BSD-3-Clause
 *
 * The TLS options of the command-line clients of the control protocol (tls_opts.h): taken
 * from getopt_long(), then checked and loaded into a client context. Runs in the main
 * thread of georeduce-control, georeduce-dpctl and georeduce-worker, while they read
 * their options. No DPDK.
 */
#include <stdbool.h>
#include <stddef.h>

#include "cli.h"
#include "ctlmsg.h"
#include "ctltls.h"
#include "tls_opts.h"

bool
tls_opts_take(struct tls_opts *t, int c, const char *arg)
{
	switch (c) {
	case TLS_OPT_CERT:
		t->cert = arg;
		return true;
	case TLS_OPT_KEY:
		t->key = arg;
		return true;
	case TLS_OPT_CA:
		t->ca = arg;
		return true;
	case TLS_OPT_CRL:
		t->crl = arg;
		return true;
	case TLS_OPT_SERVER_NAME:
		t->server_name = arg;
		return true;
	default:
		return false;
	}
}

bool
tls_opts_given(const struct tls_opts *t)
{
	return t->cert != NULL || t->key != NULL || t->ca != NULL || t->crl != NULL ||
	       t->server_name != NULL;
}

int
tls_opts_client_ctx(const struct tls_opts *t, const char *prog, const char *endpoint,
		    struct ctltls_ctx **out)
{
	char err[CTL_ERR_MAX + 64];

	if (ctltls_client_ctx(endpoint, t->cert, t->key, t->ca, t->crl, out, err, sizeof(err)) !=
	    0) {
		cli_error(prog, "%s", err);
		return CLI_EXIT_USAGE;
	}
	return 0;
}
