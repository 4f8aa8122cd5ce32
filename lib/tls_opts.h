/* SPDX-License-Identifier: BSD-3-Clause
 *
 * The TLS options of the command-line clients of the control protocol (georeduce-control
 * status and replan, georeduce-dpctl, georeduce-worker --control): --cert, --key, --ca
 * and --server-name, taken from getopt_long() and, for a tls:// endpoint, checked and
 * loaded into a client context (lib/ctltls.h). Each program keeps its own --help text
 * and its own rule of which commands take them. Slow path only. No DPDK.
 */
#ifndef GEOREDUCE_TLS_OPTS_H
#define GEOREDUCE_TLS_OPTS_H

#include <getopt.h>
#include <stdbool.h>

#include "ctltls.h"

/** getopt_long()'s codes of the five options. */
#define TLS_OPT_CERT 'C'
#define TLS_OPT_KEY 'K'
#define TLS_OPT_CA 'A'
#define TLS_OPT_CRL 'L'
#define TLS_OPT_SERVER_NAME 'N'

/** The five entries of a getopt_long() option table. */
#define TLS_OPTS_LONGOPTS                                                   \
	{"cert", required_argument, NULL, TLS_OPT_CERT},                    \
		{"key", required_argument, NULL, TLS_OPT_KEY},              \
		{"ca", required_argument, NULL, TLS_OPT_CA},                \
		{"crl", required_argument, NULL, TLS_OPT_CRL},              \
	{                                                                   \
		"server-name", required_argument, NULL, TLS_OPT_SERVER_NAME \
	}

/** What the options gave; NULL for an option not given. */
struct tls_opts {
	const char *cert, *key, *ca; /* PEM files: this client's certificate, its key, the CA */
	const char *crl;             /* the CA's CRL (optional) */
	const char *server_name;     /* the name the server's certificate must carry */
};

/**
 * Take getopt_long()'s option c with its argument arg if c is one of the five.
 *
 * @return  true if it was (nothing else is to be done with it), false otherwise.
 */
bool tls_opts_take(struct tls_opts *t, int c, const char *arg);

/** Whether any of the five was given. */
bool tls_opts_given(const struct tls_opts *t);

/**
 * The client context for endpoint (ctltls_client_ctx()): for a tls:// endpoint one from
 * --cert, --key and --ca, all three required, and --crl; for a socket path none
 * (*out = NULL), and then none of the files may be given.
 *
 * @return  0, or CLI_EXIT_USAGE after printing one line "PROG: ..." to stderr.
 */
int tls_opts_client_ctx(const struct tls_opts *t, const char *prog, const char *endpoint,
			struct ctltls_ctx **out);

#endif
