/* SPDX-License-Identifier: BSD-3-Clause
 *
 * georeduce-dpctl: talk to one dataplane over its control socket or, on its management
 * address, over TLS (docs/CONTROL.md).
 *
 *   georeduce-dpctl [--socket PATH | --socket tls://HOST:PORT --cert F --key F --ca F
 *                   [--server-name NAME]] [--timeout-ms N] [--json] COMMAND [ARGS]
 *
 * Exit status: 0 the dataplane answered ok, 1 it answered with an error, 2 bad options,
 * arguments or files, or no answer (cannot connect, timeout, broken protocol).
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "cli.h"
#include "ctlmsg.h"
#include "ctltls.h"
#include "jsonutil.h"
#include "table.h"
#include "tls_opts.h"

#define PROG "georeduce-dpctl"
#define DEFAULT_SOCKET "/run/georeduce/dataplane.sock"
#define DEFAULT_TIMEOUT_MS 5000

/* Keys of a response that are the envelope, not results. */
static const char *const envelope[] = {"version", "id", "ok", "errno", "error"};

struct opts {
	const char *socket;
	struct tls_opts tls_opts; /* for a tls:// endpoint: the files, and the name the
					 * gateway's certificate must carry */
	struct ctltls_ctx *tls;
	int timeout_ms;
	bool json;
};

struct command {
	const char *name;
	int min_args, max_args;
	const char *args_help;
	const char *help;
	/* Build the op's arguments from argv; 0, or CLI_EXIT_USAGE after printing why. */
	int (*build)(const struct command *cmd, char **argv, int argc, json_t **args);
	/* Print a successful response for humans. */
	void (*print)(const struct opts *o, const json_t *resp, double ms);
};

/* ---- generic printing ---------------------------------------------------------------- */

static bool
is_envelope(const char *key)
{
	for (size_t i = 0; i < sizeof(envelope) / sizeof(envelope[0]); i++)
		if (strcmp(key, envelope[i]) == 0)
			return true;
	return false;
}

/* A scalar as text into buf; arrays and objects as compact JSON (truncated). */
static const char *
value_text(const json_t *v, char *buf, size_t len)
{
	char *s;

	switch (json_typeof(v)) {
	case JSON_STRING:
		snprintf(buf, len, "%s", json_string_value(v));
		break;
	case JSON_INTEGER:
		snprintf(buf, len, "%" JSON_INTEGER_FORMAT, json_integer_value(v));
		break;
	case JSON_REAL:
		snprintf(buf, len, "%.6g", json_real_value(v));
		break;
	case JSON_TRUE:
		snprintf(buf, len, "true");
		break;
	case JSON_FALSE:
		snprintf(buf, len, "false");
		break;
	case JSON_NULL:
		snprintf(buf, len, "null");
		break;
	default:
		s = json_dumps(v, JSON_COMPACT);
		snprintf(buf, len, "%s", s != NULL ? s : "?");
		free(s);
		break;
	}
	return buf;
}

/* One flattened leaf: "drops.bad_magic" -> 3. */
struct leaf {
	char key[128];
	const json_t *v;
};

struct leaves {
	struct leaf *p;
	size_t n, cap;
};

static void
leaves_add(struct leaves *l, const char *key, const json_t *v)
{
	if (l->n == l->cap) {
		size_t cap = l->cap ? l->cap * 2 : 32;
		struct leaf *np = realloc(l->p, cap * sizeof(*np));

		if (np == NULL)
			return;
		l->p = np;
		l->cap = cap;
	}
	snprintf(l->p[l->n].key, sizeof(l->p[l->n].key), "%s", key);
	l->p[l->n].v = v;
	l->n++;
}

/* Flatten nested objects into dotted keys; arrays stay leaves. */
static void
flatten(struct leaves *l, const char *prefix, const json_t *obj)
{
	const char *k;
	json_t *v;
	char key[128];

	json_object_foreach ((json_t *)obj, k, v) {
		if (prefix[0] == '\0' && is_envelope(k))
			continue;
		snprintf(key, sizeof(key), "%s%s%s", prefix, prefix[0] ? "." : "", k);
		if (json_is_object(v) && json_object_size(v) > 0)
			flatten(l, key, v);
		else
			leaves_add(l, key, v);
	}
}

static const json_t *
leaves_get(const struct leaves *l, const char *key)
{
	for (size_t i = 0; i < l->n; i++)
		if (strcmp(l->p[i].key, key) == 0)
			return l->p[i].v;
	return NULL;
}

/* "key  value" lines for an object, nested keys dotted, indented by ind. */
static void
print_object(const json_t *obj, int ind)
{
	struct leaves l = {0};
	size_t w = 0;
	char buf[256];

	flatten(&l, "", obj);
	for (size_t i = 0; i < l.n; i++)
		if (strlen(l.p[i].key) > w)
			w = strlen(l.p[i].key);
	for (size_t i = 0; i < l.n; i++)
		printf("%*s%-*s  %s\n", ind, "", (int)w, l.p[i].key,
		       value_text(l.p[i].v, buf, sizeof(buf)));
	free(l.p);
}

/*
 * An array of objects as a table with one column per item and one row per field, so that
 * many counters over a few lcores or ports fit a terminal. Columns are headed by the
 * item's first field ("lcore 3"); rows of integers get a total.
 */
static void
print_array_table(const json_t *arr, int ind)
{
	size_t n = json_array_size(arr), rows_w = 5, i, j, r;
	struct leaves *items = calloc(n, sizeof(*items));
	struct leaves rows = {0};
	size_t *col_w = calloc(n + 1, sizeof(*col_w));
	char(*head)[64] = calloc(n, sizeof(*head));
	const char *first = NULL;
	char buf[256];

	if (items == NULL || col_w == NULL || head == NULL)
		goto out;
	for (i = 0; i < n; i++) {
		flatten(&items[i], "", json_array_get(arr, i));
		if (items[i].n > 0 && first == NULL)
			first = items[i].p[0].key;
		for (j = 0; j < items[i].n; j++)
			if (leaves_get(&rows, items[i].p[j].key) == NULL)
				leaves_add(&rows, items[i].p[j].key, items[i].p[j].v);
	}
	for (i = 0; i < n; i++) {
		const json_t *id = first != NULL ? leaves_get(&items[i], first) : NULL;

		if (id != NULL)
			snprintf(head[i], sizeof(head[i]), "%.31s %.31s", first,
				 value_text(id, buf, sizeof(buf)));
		else
			snprintf(head[i], sizeof(head[i]), "#%zu", i);
		col_w[i] = strlen(head[i]);
	}
	col_w[n] = strlen("total");
	for (r = 0; r < rows.n; r++) {
		long long total = 0;

		if (strlen(rows.p[r].key) > rows_w)
			rows_w = strlen(rows.p[r].key);
		for (i = 0; i < n; i++) {
			const json_t *v = leaves_get(&items[i], rows.p[r].key);

			if (v != NULL && strlen(value_text(v, buf, sizeof(buf))) > col_w[i])
				col_w[i] = strlen(buf);
			if (json_is_integer(v))
				total += json_integer_value(v);
		}
		snprintf(buf, sizeof(buf), "%lld", total);
		if (strlen(buf) > col_w[n])
			col_w[n] = strlen(buf);
	}
	printf("%*s%-*s", ind, "", (int)rows_w, "");
	for (i = 0; i < n; i++)
		printf("  %*s", (int)col_w[i], head[i]);
	if (n > 1)
		printf("  %*s", (int)col_w[n], "total");
	putchar('\n');
	for (r = 0; r < rows.n; r++) {
		bool all_int = true;
		long long total = 0;

		if (first != NULL && strcmp(rows.p[r].key, first) == 0)
			continue;
		printf("%*s%-*s", ind, "", (int)rows_w, rows.p[r].key);
		for (i = 0; i < n; i++) {
			const json_t *v = leaves_get(&items[i], rows.p[r].key);

			printf("  %*s", (int)col_w[i],
			       v != NULL ? value_text(v, buf, sizeof(buf)) : "-");
			if (v != NULL && !json_is_integer(v))
				all_int = false;
			else if (v != NULL)
				total += json_integer_value(v);
		}
		if (n > 1 && all_int)
			printf("  %*lld", (int)col_w[n], total);
		putchar('\n');
	}
out:
	for (i = 0; items != NULL && i < n; i++)
		free(items[i].p);
	free(items);
	free(rows.p);
	free(col_w);
	free(head);
}

/* Every result field of a response, whatever its shape. */
static void
print_generic(const struct opts *o, const json_t *resp, double ms)
{
	const char *k;
	json_t *v;
	char buf[256];

	(void)o;
	(void)ms;
	json_object_foreach ((json_t *)resp, k, v) {
		if (is_envelope(k))
			continue;
		if (json_is_array(v) && json_array_size(v) > 0 &&
		    json_is_object(json_array_get(v, 0))) {
			printf("%s:\n", k);
			print_array_table(v, 2);
		} else if (json_is_object(v) && json_object_size(v) > 0) {
			printf("%s:\n", k);
			print_object(v, 2);
		} else if (json_is_array(v) && json_array_size(v) == 0) {
			printf("%s: none\n", k);
		} else {
			printf("%s: %s\n", k, value_text(v, buf, sizeof(buf)));
		}
	}
}

/* ---- per-command output -------------------------------------------------------------- */

static void
print_version(const struct opts *o, const json_t *resp, double ms)
{
	const char *program, *version, *format;
	json_int_t protocol;

	if (json_unpack((json_t *)resp, "{s:s, s:s, s:I, s:s}", "program", &program,
			"program_version", &version, "protocol", &protocol, "table_format",
			&format) != 0) {
		print_generic(o, resp, ms);
		return;
	}
	printf("%s %s, control protocol %" JSON_INTEGER_FORMAT ", tables %s", program, version,
	       protocol, format);
	/* An older dataplane (before revision 1.15) does not say which revision it is. */
	if (json_is_integer(json_object_get(resp, "revision")))
		printf(", protocol revision 1.%" JSON_INTEGER_FORMAT,
		       json_integer_value(json_object_get(resp, "revision")));
	else
		printf(", protocol revision older than 1.15");
	printf("\n");
}

static void
print_ping(const struct opts *o, const json_t *resp, double ms)
{
	(void)resp;
	printf("%s answered in %.3f ms\n", o->socket, ms);
}

static void
print_state(const struct opts *o, const json_t *resp, double ms)
{
	json_int_t job, epoch;
	const char *state;

	if (json_unpack((json_t *)resp, "{s:I, s:I, s:s}", "job", &job, "epoch", &epoch, "state",
			&state) != 0) {
		print_generic(o, resp, ms);
		return;
	}
	printf("job %" JSON_INTEGER_FORMAT " epoch %" JSON_INTEGER_FORMAT ": %s\n", job, epoch,
	       state);
}

static void
print_removed(const struct opts *o, const json_t *resp, double ms)
{
	(void)o;
	(void)resp;
	(void)ms;
	printf("removed\n");
}

/* A gateway of a table as "id 3 10.0.0.3:40000+4". */
static const char *
gw_text(const json_t *g, char *buf, size_t len)
{
	json_int_t id, port, ports;
	const char *ip;

	if (json_is_null(g))
		snprintf(buf, len, "none");
	else if (json_unpack((json_t *)g, "{s:I, s:s, s:I, s:I}", "id", &id, "ipv4", &ip,
			     "base_port", &port, "ports", &ports) == 0)
		snprintf(buf, len,
			 "%" JSON_INTEGER_FORMAT " %s:%" JSON_INTEGER_FORMAT
			 "+%" JSON_INTEGER_FORMAT,
			 id, ip, port, ports);
	else
		value_text(g, buf, len);
	return buf;
}

/* One table of a dump: a summary line, then one line per tree entry. */
static void
print_table(const json_t *item)
{
	const json_t *tb = json_object_get(item, "table"), *tree, *child;
	json_int_t job, epoch, elements, chunk_el;
	const char *state = "?", *dtype;
	char buf[128], gw[128];
	size_t i, j;

	if (!json_is_object(tb))
		tb = item;
	json_unpack((json_t *)item, "{s:s}", "state", &state);
	if (json_unpack((json_t *)tb, "{s:I, s:I, s:s, s:I, s:I}", "job", &job, "epoch", &epoch,
			"dtype", &dtype, "elements", &elements, "chunk_elements", &chunk_el) != 0) {
		printf("%s\n", value_text(item, buf, sizeof(buf)));
		return;
	}
	printf("job %" JSON_INTEGER_FORMAT " epoch %" JSON_INTEGER_FORMAT " (%s): gateway %s, "
	       "%" JSON_INTEGER_FORMAT " %s elements in chunks of %" JSON_INTEGER_FORMAT
	       ", %zu trees\n",
	       job, epoch, state, gw_text(json_object_get(tb, "gateway"), gw, sizeof(gw)), elements,
	       dtype, chunk_el, json_array_size(json_object_get(tb, "trees")));
	json_array_foreach (json_object_get(tb, "trees"), i, tree) {
		json_int_t id = -1, first = 0, count = 0, expected = 0, slots = 0;
		const char *role = "?";
		double rate = 0;

		json_unpack((json_t *)tree, "{s?I, s?s, s?I, s?I, s?I, s?I, s?F}", "id", &id,
			    "role", &role, "chunk_first", &first, "chunk_count", &count, "expected",
			    &expected, "slots", &slots, "rate_gbps", &rate);
		printf("  tree %" JSON_INTEGER_FORMAT " %s: chunks %" JSON_INTEGER_FORMAT
		       "..%" JSON_INTEGER_FORMAT ", %g Gbit/s, %" JSON_INTEGER_FORMAT
		       " slots, expects %" JSON_INTEGER_FORMAT
		       " (%zu workers), parent %s, children [",
		       id, role, first, first + count - 1, rate, slots, expected,
		       json_array_size(json_object_get(tree, "workers")),
		       gw_text(json_object_get(tree, "parent"), gw, sizeof(gw)));
		json_array_foreach (json_object_get(tree, "children"), j, child) {
			json_int_t below;

			printf("%s%s", j ? ", " : "", gw_text(child, gw, sizeof(gw)));
			if (json_unpack((json_t *)child, "{s:I}", "subtree_workers", &below) == 0)
				printf(" (%" JSON_INTEGER_FORMAT " worker%s below)", below,
				       below == 1 ? "" : "s");
		}
		printf("]\n");
	}
}

static void
print_dump(const struct opts *o, const json_t *resp, double ms)
{
	const json_t *tables = json_object_get(resp, "tables"), *item;
	size_t i;

	if (!json_is_array(tables)) {
		print_generic(o, resp, ms);
		return;
	}
	if (json_array_size(tables) == 0)
		printf("no tables\n");
	json_array_foreach (tables, i, item)
		print_table(item);
}

/* ---- per-command arguments ----------------------------------------------------------- */

static int
build_none(const struct command *cmd, char **argv, int argc, json_t **args)
{
	(void)cmd;
	(void)argv;
	(void)argc;
	*args = NULL;
	return 0;
}

/* {"table": <the file's table>}, checked locally with the dataplane's own parser. */
static int
build_table(const struct command *cmd, char **argv, int argc, json_t **args)
{
	char err[TABLE_ERR_MAX];
	struct table *tb;
	json_t *t;

	(void)argc;
	tb = table_load(argv[0], err, sizeof(err));
	if (tb == NULL) {
		cli_error(PROG, "%s: %s", cmd->name, err);
		return CLI_EXIT_USAGE;
	}
	t = table_to_json(tb);
	table_free(tb);
	*args = t != NULL ? json_pack("{s:o}", "table", t) : NULL;
	if (*args == NULL) {
		cli_error(PROG, "%s: out of memory", cmd->name);
		return CLI_EXIT_USAGE;
	}
	return 0;
}

/* A uint32 argument named name from s into obj[key]. */
static int
add_u32(json_t *obj, const char *name, const char *key, const char *s)
{
	uint64_t v;

	if (cli_uint(PROG, name, s, 0, UINT32_MAX, &v) < 0)
		return CLI_EXIT_USAGE;
	if (json_object_set_new(obj, key, json_integer((json_int_t)v)) < 0) {
		cli_error(PROG, "out of memory");
		return CLI_EXIT_USAGE;
	}
	return 0;
}

/* {"job": JOB[, "epoch": EPOCH]} from the positional arguments, in that order. */
static int
build_job_epoch(const struct command *cmd, char **argv, int argc, json_t **args)
{
	static const char *const names[][2] = {{"JOB", "job"}, {"EPOCH", "epoch"}};
	json_t *obj = json_object();

	(void)cmd;
	if (obj == NULL) {
		cli_error(PROG, "out of memory");
		return CLI_EXIT_USAGE;
	}
	for (int i = 0; i < argc && i < 2; i++) {
		if (add_u32(obj, names[i][0], names[i][1], argv[i]) != 0) {
			json_decref(obj);
			return CLI_EXIT_USAGE;
		}
	}
	*args = obj;
	return 0;
}

static const struct command commands[] = {
	{"version", 0, 0, "",
	 "program, version, protocol, table format and revision of the dataplane", build_none,
	 print_version},
	{"ping", 0, 0, "", "check that the dataplane answers; prints the round trip", build_none,
	 print_ping},
	{"prepare", 1, 1, "TABLE_FILE",
	 "stage a georeduce-table/1 table without making it "
	 "live ('-': stdin)",
	 build_table, print_state},
	{"activate", 2, 2, "JOB EPOCH", "make a staged epoch live; answers once workers use it",
	 build_job_epoch, print_state},
	{"install", 1, 1, "TABLE_FILE", "prepare and activate in one step ('-': stdin)",
	 build_table, print_state},
	{"remove", 1, 1, "JOB", "retire a job: its slots drain, then its tables are freed",
	 build_job_epoch, print_removed},
	{"stats", 0, 0, "", "per-lcore and per-port counters, memory and jobs", build_none,
	 print_generic},
	{"dump", 0, 1, "[JOB]", "the live and draining tables, of one job or all", build_job_epoch,
	 print_dump},
	{"reload_tls", 0, 0, "", "read the TLS files again for new connections (as SIGHUP)",
	 build_none, print_generic},
};

static void
usage(FILE *f)
{
	fprintf(f,
		"Usage: " PROG " [--socket PATH] [--timeout-ms N] [--json] COMMAND [ARGS]\n"
		"\n"
		"Send one request to a georeduce dataplane over its control socket\n"
		"(docs/CONTROL.md) and print the answer.\n"
		"\n"
		"Options:\n"
		"  -s, --socket PATH     the dataplane's control socket\n"
		"                        (default " DEFAULT_SOCKET "), or\n"
		"                        tls://HOST:PORT, its management address over TLS 1.3\n"
		"      --cert FILE, --key FILE, --ca FILE  with tls://: this client's\n"
		"                        certificate (role control or monitor) and key, and\n"
		"                        the deployment's CA\n"
		"      --crl FILE        with tls://: the CA's CRL (a revoked gateway\n"
		"                        certificate is refused)\n"
		"      --server-name NAME  the name the gateway's certificate must carry\n"
		"                        (default: HOST)\n"
		"  -t, --timeout-ms N    wait at most N ms to connect and for the answer, 1 .. "
		"3600000\n"
		"                        (default %d)\n"
		"  -j, --json            print the response object as JSON instead of text\n"
		"  -h, --help            this help\n"
		"\n"
		"Commands:\n",
		DEFAULT_TIMEOUT_MS);
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++) {
		char head[64];

		snprintf(head, sizeof(head), "%s %s", commands[i].name, commands[i].args_help);
		fprintf(f, "  %-22s %s\n", head, commands[i].help);
	}
	fprintf(f,
		"  %-22s %s\n"
		"\n"
		"TABLE_FILE is checked locally with the dataplane's parser before it is sent.\n"
		"Exit status: 0 the dataplane answered ok, 1 it answered with an error (printed\n"
		"as '" PROG ": OP: ERROR (strerror)'), 2 bad options, arguments or files, or no\n"
		"answer (cannot connect, timeout, protocol error).\n",
		"raw JSON_OBJECT", "send the object as it is (for tests) and print the reply");
}

/* ---- main ---------------------------------------------------------------------------- */

static double
elapsed_ms(const struct timespec *t0)
{
	struct timespec t1;

	clock_gettime(CLOCK_MONOTONIC, &t1);
	return (double)(t1.tv_sec - t0->tv_sec) * 1e3 + (double)(t1.tv_nsec - t0->tv_nsec) / 1e6;
}

/* Connect, or print one line naming the socket and return -1. */
static int
connect_or_say(const struct opts *o, struct ctl_conn *c)
{
	char err[CTL_ERR_MAX];
	int r;

	if (!ctltls_is_endpoint(o->socket) && strlen(o->socket) >= 108) {
		cli_error(PROG, "--socket: '%s' is too long for a unix socket path", o->socket);
		return -1;
	}
	r = ctltls_dial(o->tls, o->socket, o->tls_opts.server_name, CTLTLS_ROLE_GATEWAY,
			o->timeout_ms, c, err, sizeof(err));
	if (r < 0) {
		cli_error(PROG, "%s", err);
		return -1;
	}
	return 0;
}

/* Print an ok:false response's error line; the exit status. */
static int
answer_status(const char *op, const json_t *resp)
{
	const json_t *e = json_object_get(resp, "errno");
	const char *msg = json_string_value(json_object_get(resp, "error"));
	int code = json_is_integer(e) ? (int)json_integer_value(e) : 0;

	if (json_is_true(json_object_get(resp, "ok")))
		return 0;
	cli_error(PROG, "%s: %s (%s)", op, msg != NULL ? msg : "error",
		  code > 0 ? strerror(code) : "no errno");
	return CLI_EXIT_FAIL;
}

/* raw JSON_OBJECT: send it unchanged, print the first frame that comes back. */
static int
run_raw(const struct opts *o, const char *text)
{
	char err[CTL_ERR_MAX];
	json_error_t jerr;
	json_t *req, *resp = NULL;
	struct ctl_conn c;
	const char *op;
	int r;

	req = json_loads(text, JSON_REJECT_DUPLICATES, &jerr);
	if (req == NULL) {
		cli_error(PROG, "raw: JSON_OBJECT:%d:%d: %s", jerr.line, jerr.column, jerr.text);
		return CLI_EXIT_USAGE;
	}
	if (!json_is_object(req)) {
		cli_error(PROG, "raw: JSON_OBJECT must be a JSON object");
		json_decref(req);
		return CLI_EXIT_USAGE;
	}
	op = json_is_string(json_object_get(req, "op")) ?
		     json_string_value(json_object_get(req, "op")) :
		     "raw";
	if (connect_or_say(o, &c) < 0) {
		json_decref(req);
		return CLI_EXIT_USAGE;
	}
	r = ctl_conn_send(&c, req, CTL_SEND_TIMEOUT_MS);
	if (r < 0) {
		cli_error(PROG, "%s: %s: send: %s", o->socket, op, strerror(-r));
	} else {
		r = ctl_conn_recv(&c, o->timeout_ms, &resp, err, sizeof(err));
		if (r < 0)
			cli_error(PROG, "%s: %s: %s", o->socket, op, err);
	}
	ctl_conn_fini(&c);
	if (r < 0) {
		json_decref(req);
		return CLI_EXIT_USAGE;
	}
	json_util_dump(resp, stdout);
	r = answer_status(op, resp);
	json_decref(resp);
	json_decref(req);
	return r;
}

static int
run(const struct opts *o, const struct command *cmd, char **argv, int argc)
{
	char err[CTL_ERR_MAX];
	struct timespec t0;
	json_t *args = NULL, *resp;
	struct ctl_conn c;
	int r;

	r = cmd->build(cmd, argv, argc, &args);
	if (r != 0)
		return r;
	if (connect_or_say(o, &c) < 0) {
		json_decref(args);
		return CLI_EXIT_USAGE;
	}
	clock_gettime(CLOCK_MONOTONIC, &t0);
	resp = ctl_conn_call(&c, cmd->name, args, o->timeout_ms, err, sizeof(err));
	ctl_conn_fini(&c);
	if (resp == NULL) {
		cli_error(PROG, "%s: %s", o->socket, err);
		return CLI_EXIT_USAGE;
	}
	if (o->json)
		json_util_dump(resp, stdout);
	else if (json_is_true(json_object_get(resp, "ok")))
		cmd->print(o, resp, elapsed_ms(&t0));
	r = answer_status(cmd->name, resp);
	json_decref(resp);
	return r;
}

static int dispatch(const struct opts *o, const char *name, char **args, int nargs);

int
main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{"socket", required_argument, NULL, 's'},
		{"timeout-ms", required_argument, NULL, 't'},
		{"json", no_argument, NULL, 'j'},
		TLS_OPTS_LONGOPTS,
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	struct opts o = {.socket = DEFAULT_SOCKET, .timeout_ms = DEFAULT_TIMEOUT_MS};
	const char *name;
	int c, nargs, rc;

	opterr = 0;
	/* '+': options end at the command, so that a command's arguments are never options. */
	while ((c = getopt_long(argc, argv, "+:s:t:jh", longopts, NULL)) != -1) {
		if (tls_opts_take(&o.tls_opts, c, optarg))
			continue;
		switch (c) {
		case 's':
			if (optarg[0] == '\0') {
				cli_error(PROG, "--socket: empty path");
				return CLI_EXIT_USAGE;
			}
			o.socket = optarg;
			break;
		case 't':
			if (cli_int(PROG, "timeout-ms", optarg, 1, 3600000, &o.timeout_ms) < 0)
				return CLI_EXIT_USAGE;
			break;
		case 'j':
			o.json = true;
			break;
		case 'h':
			usage(stdout);
			return 0;
		case ':':
			cli_error(PROG, "%s: missing argument (see --help)", argv[optind - 1]);
			return CLI_EXIT_USAGE;
		default:
			if (optopt != 0)
				cli_error(PROG, "-%c: unknown option (see --help)", optopt);
			else
				cli_error(PROG, "%s: unknown option (see --help)",
					  argv[optind - 1]);
			return CLI_EXIT_USAGE;
		}
	}
	if (optind >= argc) {
		cli_error(PROG, "no command (see --help)");
		return CLI_EXIT_USAGE;
	}
	if (tls_opts_client_ctx(&o.tls_opts, PROG, o.socket, &o.tls) != 0)
		return CLI_EXIT_USAGE;
	name = argv[optind++];
	nargs = argc - optind;
	rc = dispatch(&o, name, argv + optind, nargs);
	ctltls_ctx_free(o.tls);
	return rc;
}

/* The command name with its nargs arguments: the exit status. */
static int
dispatch(const struct opts *o, const char *name, char **args, int nargs)
{
	if (strcmp(name, "raw") == 0) {
		if (nargs != 1) {
			cli_error(PROG, "raw: expects one argument, JSON_OBJECT");
			return CLI_EXIT_USAGE;
		}
		return run_raw(o, args[0]);
	}
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++) {
		const struct command *cmd = &commands[i];

		if (strcmp(name, cmd->name) != 0)
			continue;
		if (nargs < cmd->min_args || nargs > cmd->max_args) {
			cli_error(PROG, "%s: expects %s%s", cmd->name,
				  cmd->max_args == 0 ? "no arguments" : "arguments ",
				  cmd->args_help);
			return CLI_EXIT_USAGE;
		}
		return run(o, cmd, args, nargs);
	}
	cli_error(PROG, "'%s': unknown command (see --help)", name);
	return CLI_EXIT_USAGE;
}
