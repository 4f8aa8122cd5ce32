/* SPDX-License-Identifier: BSD-3-Clause
 *
 * Dataplane connections and the two-phase epoch install (install.h).
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "clock.h"
#include "install.h"
#include "jsonutil.h"

void
install_gw_init(struct install_gw *gw, const char *name, const char *path)
{
	memset(gw, 0, sizeof(*gw));
	gw->name = name;
	gw->socket = path;
	gw->expect = name;
	gw->role = CTLTLS_ROLE_GATEWAY;
	ctl_conn_init(&gw->conn, -1);
}

void
install_gw_tls(struct install_gw *gw, struct ctltls_ctx *tls, const char *expect,
	       enum ctltls_role role)
{
	gw->tls = tls;
	gw->expect = expect;
	gw->role = role;
}

void
install_gw_close(struct install_gw *gw)
{
	if (gw->open)
		ctl_conn_fini(&gw->conn);
	gw->open = false;
}

bool
install_op_fenced(const char *op)
{
	return strcmp(op, "prepare") == 0 || strcmp(op, "activate") == 0 ||
	       strcmp(op, "install") == 0 || strcmp(op, "remove") == 0;
}

json_t *
install_call(struct install_gw *gw, const char *op, json_t *args, int timeout_ms, char *err,
	     size_t errlen)
{
	char cerr[CTL_ERR_MAX];
	json_t *resp;
	int saved, r;

	if (install_op_fenced(op) && gw->until != NULL &&
	    clock_now_ms() >= atomic_load(gw->until)) {
		json_decref(args);
		json_util_fail(err, errlen,
			       "%s: not sent: this control process no longer leads (term %lld)", op,
			       (long long)gw->term);
		errno = ESTALE;
		return NULL;
	}
	if (install_op_fenced(op) && gw->term > 0) {
		if (args == NULL)
			args = json_object();
		json_object_set_new(args, "term", json_integer(gw->term));
	}
	if (!gw->open) {
		r = ctltls_dial(gw->tls, gw->socket, gw->expect, gw->role, timeout_ms, &gw->conn,
				cerr, sizeof(cerr));
		if (r < 0) {
			json_decref(args);
			json_util_fail(err, errlen, "%s", cerr);
			errno = -r;
			return NULL;
		}
		gw->open = true;
	}
	resp = ctl_conn_call(&gw->conn, op, args, timeout_ms, cerr, sizeof(cerr));
	if (resp == NULL) {
		saved = errno;
		json_util_fail(err, errlen, "%s: %s", gw->socket, cerr);
		/* The stream may be out of step (a late answer, a half-read frame): start over. */
		install_gw_close(gw);
		errno = saved;
	}
	return resp;
}

bool
install_resp_ok(const json_t *resp, const char *op, int *errnum, char *err, size_t errlen)
{
	json_t *e = json_object_get(resp, "errno");
	int n;

	if (json_is_true(json_object_get(resp, "ok")))
		return true;
	n = json_is_integer(e) && json_integer_value(e) > 0 && json_integer_value(e) < 4096 ?
		    (int)json_integer_value(e) :
		    EBADMSG;
	if (errnum != NULL)
		*errnum = n;
	json_util_fail(err, errlen, "%s: %s (%s)", op,
		       json_is_string(json_object_get(resp, "error")) ?
			       json_string_value(json_object_get(resp, "error")) :
			       "error without a message",
		       strerror(n));
	return false;
}

/* Record gateway i's failure in rep (only the first failure's details are kept). */
static void
note_failure(struct install_report *rep, const struct install_gw *gw, int i, int phase,
	     bool no_answer, int errnum, const char *msg)
{
	if (rep->activate_failed != NULL && phase == 2)
		rep->activate_failed[i] = true;
	rep->n_failed++;
	if (rep->failed >= 0)
		return;
	rep->failed = i;
	rep->phase = phase;
	rep->no_answer = no_answer;
	rep->errnum = errnum;
	snprintf(rep->error, sizeof(rep->error), "gateway %s: %s", gw->name, msg);
}

/* One op on gateway i; 0 if it answered ok, else the failure is noted and -1 returned. */
static int
step(struct install_gw *gw, int i, int phase, const char *op, json_t *args, int timeout_ms,
     struct install_report *rep)
{
	char err[CTL_ERR_MAX];
	json_t *resp = install_call(gw, op, args, timeout_ms, err, sizeof(err));
	int errnum = 0;

	if (resp == NULL) {
		note_failure(rep, gw, i, phase, true, errno, err);
		return -1;
	}
	if (!install_resp_ok(resp, op, &errnum, err, sizeof(err))) {
		note_failure(rep, gw, i, phase, false, errnum, err);
		json_decref(resp);
		return -1;
	}
	json_decref(resp);
	return 0;
}

int
install_epoch(struct install_gw *gws, struct table *const *tables, const uint32_t *membership,
	      int n, uint32_t job, uint32_t epoch, int timeout_ms, struct install_report *rep)
{
	bool *af = rep->activate_failed;

	memset(rep, 0, sizeof(*rep));
	rep->failed = -1;
	rep->activate_failed = af;
	if (n < 0 || (n > 0 && (gws == NULL || tables == NULL)))
		return -EINVAL;
	for (int i = 0; i < n; i++) {
		if (tables[i] == NULL || tables[i]->job != job || tables[i]->epoch != epoch)
			return -EINVAL;
		if (af != NULL)
			af[i] = false;
	}
	/* Phase 1: stage everywhere; stop at the first gateway that does not. */
	for (int i = 0; i < n; i++) {
		json_t *tj = table_to_json(tables[i]);
		json_t *args = tj == NULL ? NULL : json_pack("{s:o}", "table", tj);

		if (args == NULL ||
		    (membership != NULL && membership[i] != 0 &&
		     json_object_set_new(args, "membership", json_integer(membership[i])) != 0)) {
			json_decref(args);
			return -ENOMEM;
		}
		if (step(&gws[i], i, 1, "prepare", args, timeout_ms, rep) != 0)
			return -ECANCELED;
		rep->n_prepared++;
	}
	/* Phase 2: every gateway holds the epoch: make it live everywhere. */
	for (int i = 0; i < n; i++) {
		if (step(&gws[i], i, 2, "activate",
			 json_pack("{s:I,s:I}", "job", (json_int_t)job, "epoch", (json_int_t)epoch),
			 timeout_ms, rep) == 0)
			rep->n_activated++;
	}
	return rep->n_activated == n ? 0 : -EIO;
}
