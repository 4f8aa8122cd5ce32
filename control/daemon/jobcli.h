/* SPDX-License-Identifier: BSD-3-Clause
 *
 * `georeduce-control job ...`: the operator's and the launcher's client of the job ops of
 * a running control process (docs/CONTROL.md, "job_create" and the rest):
 *
 *   job create JOB        a job object (docs/DEPLOYMENT.md, "jobs"): a file, - for stdin,
 *                         or the JSON text itself; prints the job's id
 *   job update ID CHANGES  algorithm, options, weight or grace_ms, as a JSON object
 *                         (file, - or text)
 *   job delete ID         removed from every gateway
 *   job list              the jobs the certificate's tenant sees (all without one)
 *   job join ID NODE IPV4:PORT [WORKER]  a worker into an elastic job at site NODE, for
 *                         it (docs/CONTROL.md, "Elastic membership"); prints its id
 *   job leave ID WORKER   a joined worker out of it
 *
 * Exit status as the other client commands: 0, 1 the daemon refused, 2 bad arguments or
 * no answer. Caller: main, once.
 */
#ifndef GEOREDUCE_JOBCLI_H
#define GEOREDUCE_JOBCLI_H

#include <stdbool.h>

#include <jansson.h>

/** The lines of --help. */
#define JOBCLI_USAGE                                                                         \
	"  job create JOB | update ID CHANGES | delete ID | list  [--socket ...] [--json]\n" \
	"      jobs through the running daemon's API: JOB a job object as in the\n"          \
	"      deployment's \"jobs\" (its id optional), CHANGES an object of algorithm,\n"   \
	"      options, weight, grace_ms; each a file, - (stdin) or the JSON text\n"         \
	"  job join ID NODE IPV4:PORT [WORKER] | leave ID WORKER  [--socket ...]\n"          \
	"      an elastic job's members, for its workers: join gives the worker an id\n"     \
	"      (or WORKER), which its own requests then renew; leave removes one\n"

/**
 * Run `job ARGS...`. call makes one call to the daemon (args stolen) and returns the ok
 * response, or NULL after printing why with *status set.
 */
int jobcli_run(int n_args, char **args, bool json,
	       json_t *(*call)(const void *ctx, const char *op, json_t *args, int *status),
	       const void *ctx);

#endif
