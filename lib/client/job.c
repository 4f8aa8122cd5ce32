/* SPDX-License-Identifier: BSD-3-Clause
 *
 * A launcher's jobs through the control process (georeduce.h, docs/CONTROL.md, "Jobs
 * through the API"): job_create, job_update and job_delete over the control protocol
 * (lib/ctlmsg.h), on TLS 1.3 (lib/ctltls.h) or a unix socket, one connection per call,
 * failing over between the control endpoints of a list (lib/ctlpeers.h).
 * The caller's thread. No DPDK.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "ctlmsg.h"
#include "ctlpeers.h"
#include "ctltls.h"
#include "georeduce.h"
#include "jsonutil.h"

/* One call of op with args (stolen) on a new connection, to the endpoints of o's list by
 * their failover rule: the ok response (a new reference), or NULL with *rc and err. */
static json_t *
control_call(const struct gr_control_opts *o, const char *op, json_t *args, int *rc, char *err,
	     size_t errlen)
{
	struct ctltls_ctx *tls = NULL;
	struct ctl_peers peers;
	json_t *r = NULL;

	if (args == NULL) {
		*rc = json_util_failrc(-ENOMEM, err, errlen, "out of memory");
		return NULL;
	}
	*rc = ctl_peers_parse(&peers, o->control, err, errlen);
	if (*rc == 0)
		*rc = ctltls_client_ctx(o->control, o->cert, o->key, o->ca, o->crl, &tls, err,
					errlen);
	if (*rc < 0) {
		json_decref(args);
		return NULL;
	}
	ctl_peers_setup(&peers, tls, o->server_name != NULL ? o->server_name : "control",
			CTLTLS_ROLE_CONTROL, o->timeout_ms > 0 ? o->timeout_ms : GR_JOIN_TIMEOUT_MS,
			false);
	r = ctl_peers_call(&peers, op, args, 0, err, errlen);
	if (r == NULL) {
		*rc = -errno;
	} else if (!json_is_true(json_object_get(r, "ok"))) {
		json_int_t e = json_integer_value(json_object_get(r, "errno"));

		*rc = e > 0 && e < 4096 ? -(int)e : -EPROTO;
		json_util_fail(err, errlen, "%s: %s: %s", ctl_peers_current(&peers), op,
			       json_string_value(json_object_get(r, "error")));
		json_decref(r);
		r = NULL;
	}
	ctltls_ctx_free(tls);
	return r;
}

/* text as a JSON object, or NULL with *rc and err naming what. */
static json_t *
object_of(const char *what, const char *text, int *rc, char *err, size_t errlen)
{
	json_error_t je;
	json_t *o = text != NULL ? json_loads(text, JSON_REJECT_DUPLICATES, &je) : NULL;

	if (!json_is_object(o)) {
		*rc = json_util_failrc(-EINVAL, err, errlen, "%s: %s", what,
				       o == NULL && text != NULL ? je.text :
								   "expected a JSON object");
		json_decref(o);
		return NULL;
	}
	return o;
}

int
gr_job_create(const struct gr_control_opts *o, const char *job, uint32_t *id, char *err,
	      size_t errlen)
{
	json_t *obj, *r;
	int rc;

	obj = object_of("job", job, &rc, err, errlen);
	if (obj == NULL)
		return rc;
	r = control_call(o, "job_create", json_pack("{s:o}", "job", obj), &rc, err, errlen);
	if (r == NULL)
		return rc;
	*id = (uint32_t)json_integer_value(json_object_get(r, "job"));
	json_decref(r);
	return 0;
}

int
gr_job_update(const struct gr_control_opts *o, uint32_t id, const char *changes, char *err,
	      size_t errlen)
{
	json_t *obj, *r;
	int rc;

	obj = object_of("changes", changes, &rc, err, errlen);
	if (obj == NULL)
		return rc;
	r = control_call(o, "job_update",
			 json_pack("{s:I,s:o}", "job", (json_int_t)id, "changes", obj), &rc, err,
			 errlen);
	json_decref(r);
	return r != NULL ? 0 : rc;
}

int
gr_job_delete(const struct gr_control_opts *o, uint32_t id, char *err, size_t errlen)
{
	int rc;
	json_t *r = control_call(o, "job_delete", json_pack("{s:I}", "job", (json_int_t)id), &rc,
				 err, errlen);

	json_decref(r);
	return r != NULL ? 0 : rc;
}
