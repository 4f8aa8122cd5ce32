/* SPDX-License-Identifier: BSD-3-Clause
 *
 * `georeduce-control job ...` (jobcli.h): arguments, the call, what is printed. Main
 * thread of the command-line tool. No DPDK.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "cli.h"
#include "jobcli.h"
#include "jsonutil.h"

#define PROG "georeduce-control"

/* A JSON object from arg: inline text (starting with '{'), - for stdin, or a file. NULL
 * after a one-line error. */
static json_t *
object_arg(const char *what, const char *arg)
{
	json_error_t je;
	json_t *o;

	if (arg[0] == '{')
		o = json_loads(arg, JSON_REJECT_DUPLICATES, &je);
	else if (strcmp(arg, "-") == 0)
		o = json_loadf(stdin, JSON_REJECT_DUPLICATES, &je);
	else
		o = json_load_file(arg, JSON_REJECT_DUPLICATES, &je);
	if (o == NULL) {
		cli_error(PROG, "job: %s %s:%d:%d: %s", what, arg[0] == '{' ? "(text)" : arg,
			  je.line, je.column, je.text);
		return NULL;
	}
	if (!json_is_object(o)) {
		cli_error(PROG, "job: %s: expected a JSON object", what);
		json_decref(o);
		return NULL;
	}
	return o;
}

static void
print_list(const json_t *r)
{
	const json_t *j;
	size_t i;

	printf("%-10s %-10s %-12s %-11s %-6s %12s %7s %6s  %s\n", "job", "source", "tenant",
	       "algorithm", "dtype", "elements", "workers", "epoch", "state");
	json_array_foreach (json_object_get(r, "jobs"), i, j) {
		const json_t *e = json_object_get(j, "epoch");
		const json_t *t = json_object_get(j, "tenant");
		char ep[24];

		snprintf(ep, sizeof(ep), json_is_integer(e) ? "%" JSON_INTEGER_FORMAT : "-",
			 json_integer_value(e));
		printf("%-10" JSON_INTEGER_FORMAT " %-10s %-12s %-11s %-6s %12" JSON_INTEGER_FORMAT
		       " %7" JSON_INTEGER_FORMAT " %6s  %s\n",
		       json_integer_value(json_object_get(j, "job")),
		       json_string_value(json_object_get(j, "source")),
		       json_is_string(t) ? json_string_value(t) : "-",
		       json_string_value(json_object_get(j, "algorithm")),
		       json_string_value(json_object_get(j, "dtype")),
		       json_integer_value(json_object_get(j, "elements")),
		       json_integer_value(json_object_get(j, "workers")), ep,
		       json_string_value(json_object_get(j, "state")));
	}
}

/* join's NODE IPV4:PORT [WORKER] into o; 0, or -1 after a one-line error. */
static int
join_args(int n, char **args, json_t *o)
{
	const char *colon = strrchr(args[1], ':');
	char ipv4[16];
	uint64_t port, w;

	if (args[0][0] == '\0') {
		cli_error(PROG, "job join: NODE: empty");
		return -1;
	}
	if (colon == NULL || colon == args[1] || (size_t)(colon - args[1]) >= sizeof(ipv4)) {
		cli_error(PROG, "job join: '%s': expected IPV4:PORT", args[1]);
		return -1;
	}
	memcpy(ipv4, args[1], (size_t)(colon - args[1]));
	ipv4[colon - args[1]] = '\0';
	if (cli_uint(PROG, "PORT", colon + 1, 1, UINT16_MAX, &port) < 0)
		return -1;
	json_object_set_new(o, "node", json_string(args[0]));
	json_object_set_new(o, "ipv4", json_string(ipv4));
	json_object_set_new(o, "port", json_integer((json_int_t)port));
	if (n == 3) {
		if (cli_uint(PROG, "WORKER", args[2], 1, 65534, &w) < 0)
			return -1;
		json_object_set_new(o, "worker", json_integer((json_int_t)w));
	}
	return 0;
}

/* The request of `job SUB ARGS`; NULL after a one-line error. */
static json_t *
request(const char *sub, int n, char **args)
{
	static const struct {
		const char *sub;
		int n_min, n_max;
		const char *usage;
	} subs[] = {{"create", 1, 1, "create JOB"},
		    {"update", 2, 2, "update ID CHANGES"},
		    {"delete", 1, 1, "delete ID"},
		    {"list", 0, 0, "list"},
		    {"join", 3, 4, "join ID NODE IPV4:PORT [WORKER]"},
		    {"leave", 2, 2, "leave ID WORKER"}};
	uint64_t id = 0, w;
	json_t *o;
	size_t k;

	for (k = 0; k < sizeof(subs) / sizeof(subs[0]) && strcmp(sub, subs[k].sub) != 0; k++)
		;
	if (k == sizeof(subs) / sizeof(subs[0])) {
		cli_error(PROG,
			  "job: unknown subcommand '%s' (create, update, delete, list, join, "
			  "leave)",
			  sub);
		return NULL;
	}
	if (n < subs[k].n_min || n > subs[k].n_max) {
		cli_error(PROG, "job %s: expects %s", sub, subs[k].usage);
		return NULL;
	}
	if (k != 0 && k != 3 && cli_uint(PROG, "ID", args[0], 0, UINT32_MAX, &id) < 0)
		return NULL;
	switch (k) {
	case 0:
		o = object_arg("JOB", args[0]);
		return o != NULL ? json_pack("{s:o}", "job", o) : NULL;
	case 1:
		o = object_arg("CHANGES", args[1]);
		return o != NULL ? json_pack("{s:I,s:o}", "job", (json_int_t)id, "changes", o) :
				   NULL;
	case 2:
		return json_pack("{s:I}", "job", (json_int_t)id);
	case 4:
		o = json_pack("{s:I}", "job", (json_int_t)id);
		if (join_args(n - 1, args + 1, o) == 0)
			return o;
		json_decref(o);
		return NULL;
	case 5:
		if (cli_uint(PROG, "WORKER", args[1], 1, 65534, &w) < 0)
			return NULL;
		return json_pack("{s:I,s:I}", "job", (json_int_t)id, "worker", (json_int_t)w);
	default:
		return json_object();
	}
}

int
jobcli_run(int n_args, char **args, bool json,
	   json_t *(*call)(const void *ctx, const char *op, json_t *args, int *status),
	   const void *ctx)
{
	char op[16];
	json_t *req, *r;
	int status;

	if (n_args < 1) {
		cli_error(PROG,
			  "job: expects create, update, delete, list, join or leave (see --help)");
		return CLI_EXIT_USAGE;
	}
	req = request(args[0], n_args - 1, args + 1);
	if (req == NULL)
		return CLI_EXIT_USAGE;
	/* join and leave are the elastic membership's ops (docs/CONTROL.md), the others
	 * job_SUB. */
	if (strcmp(args[0], "join") == 0 || strcmp(args[0], "leave") == 0)
		snprintf(op, sizeof(op), "%s", args[0]);
	else
		snprintf(op, sizeof(op), "job_%s", args[0]);
	r = call(ctx, op, req, &status);
	if (r == NULL)
		return status;
	if (json) {
		json_object_del(r, "version");
		json_object_del(r, "id");
		json_object_del(r, "ok");
		json_util_dump(r, stdout);
	} else if (strcmp(args[0], "list") == 0) {
		print_list(r);
	} else if (strcmp(args[0], "join") == 0) {
		bool again = json_is_true(json_object_get(r, "again"));

		printf("job %" JSON_INTEGER_FORMAT ": worker %" JSON_INTEGER_FORMAT " %s; it must "
		       "renew within %" JSON_INTEGER_FORMAT " ms\n",
		       json_integer_value(json_object_get(r, "job")),
		       json_integer_value(json_object_get(r, "worker")),
		       again ? "joined again (the same member)" :
			       "joined; an epoch with it follows within the batch window",
		       json_integer_value(json_object_get(r, "timeout_ms")));
	} else if (strcmp(args[0], "leave") == 0) {
		printf("job %" JSON_INTEGER_FORMAT ": worker %" JSON_INTEGER_FORMAT
		       " left; the next epoch is planned without it\n",
		       json_integer_value(json_object_get(r, "job")),
		       json_integer_value(json_object_get(r, "worker")));
	} else if (strcmp(args[0], "delete") == 0) {
		printf("job %" JSON_INTEGER_FORMAT " deleted: removed from %zu gateways, %zu to "
		       "go\n",
		       json_integer_value(json_object_get(r, "job")),
		       json_array_size(json_object_get(r, "removed")),
		       json_array_size(json_object_get(r, "pending")));
	} else {
		printf("job %" JSON_INTEGER_FORMAT " %s: a new epoch is being planned\n",
		       json_integer_value(json_object_get(r, "job")),
		       strcmp(args[0], "create") == 0 ? "created" : "updated");
	}
	json_decref(r);
	return 0;
}
