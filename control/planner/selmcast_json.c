/* SPDX-License-Identifier: BSD-3-Clause
 *
 * SELMCAST's "multicast" plan section (selmcast.h, docs/SELMCAST.md): the writer of a run's
 * rounds and the strict parser that checks a section, or a whole plan, against its
 * topology. Functions of their arguments: any thread.
 */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "jsonutil.h"
#include "plan.h"
#include "selmcast.h"

static const char *const model_names[] = {"network", "application"};

json_t *
selmcast_section(const struct topo *t, const int *site, const struct selmcast_inst *in, int rounds,
		 const unsigned char *x, const double *seconds)
{
	int n = in->n, pmin = in->p[0];
	json_t *sec, *arr = json_array();

	for (int i = 1; i < n; i++)
		pmin = in->p[i] < pmin ? in->p[i] : pmin;
	sec = json_pack("{s:s, s:i, s:i}", "model", model_names[in->model], "p", pmin,
			"stale_rounds", in->stale_rounds);
	if (sec == NULL || arr == NULL)
		goto nomem;
	for (int r = 0; r < rounds; r++) {
		const unsigned char *xr = x + (size_t)r * (size_t)n * (size_t)n;
		json_t *senders = json_array(), *jr;

		jr = json_pack("{s:f, s:o}", "completion_seconds", seconds[r], "senders", senders);
		if (jr == NULL || json_array_append_new(arr, jr) != 0)
			goto nomem;
		for (int i = 0; i < n; i++) {
			json_t *recv = json_array(), *js;

			js = json_pack("{s:s, s:I, s:o}", "site", t->nodes[site[i]].id, "bytes",
				       (json_int_t)in->bytes[i], "receivers", recv);
			if (js == NULL || json_array_append_new(senders, js) != 0)
				goto nomem;
			if (in->p[i] != pmin &&
			    json_object_set_new(js, "p", json_integer(in->p[i])))
				goto nomem;
			for (int j = 0; j < n; j++)
				if (xr[i * n + j] &&
				    json_array_append_new(recv,
							  json_string(t->nodes[site[j]].id)) != 0)
					goto nomem;
		}
	}
	if (json_object_set_new(sec, "rounds", arr) != 0) {
		arr = NULL;
		goto nomem;
	}
	return sec;
nomem:
	json_decref(arr);
	json_decref(sec);
	return NULL;
}

void
selmcast_plan_free(struct selmcast_plan *p)
{
	if (p == NULL)
		return;
	for (int r = 0; r < p->n_rounds; r++) {
		for (int s = 0; s < p->rounds[r].n_senders; s++)
			free(p->rounds[r].senders[s].receivers);
		free(p->rounds[r].senders);
	}
	free(p->rounds);
	free(p);
}

/* Reject keys of obj not in known[] (NULL-terminated), naming the field. */
static int
only_known(const json_t *obj, const char *const *known, const char *src, const char *path,
	   char *err, size_t errlen)
{
	size_t n = 0;
	const char *key;

	while (known[n] != NULL)
		n++;
	key = json_util_unknown_key(obj, known, n);
	if (key != NULL)
		return json_util_fail(err, errlen, "%s: field '%s.%.64s': unknown field", src, path,
				      key);
	return 0;
}

/* An integer field in [lo, hi]; def if absent and def >= lo, else required. */
static int
int_field(const json_t *obj, const char *key, long lo, long hi, long def, const char *src,
	  const char *path, int *out, char *err, size_t errlen)
{
	const json_t *f = json_object_get(obj, key);

	if (f == NULL && def >= lo) {
		*out = (int)def;
		return 0;
	}
	if (f == NULL)
		return json_util_fail(err, errlen, "%s: field '%s.%s': missing", src, path, key);
	if (!json_is_integer(f) || json_integer_value(f) < lo || json_integer_value(f) > hi)
		return json_util_fail(err, errlen,
				      "%s: field '%s.%s': expected an integer in "
				      "[%ld, %ld]",
				      src, path, key, lo, hi);
	*out = (int)json_integer_value(f);
	return 0;
}

/* A site id that names a worker site; its node index, or -EINVAL. */
static int
site_ref(const struct topo *t, const json_t *f, const char *src, const char *path, char *err,
	 size_t errlen)
{
	int v;

	if (!json_is_string(f))
		return json_util_fail(err, errlen, "%s: field '%s': expected a site id", src, path);
	v = topo_node_index(t, json_string_value(f));
	if (v < 0)
		return json_util_fail(err, errlen, "%s: field '%s': unknown site id '%.64s'", src,
				      path, json_string_value(f));
	if (t->nodes[v].workers == 0)
		return json_util_fail(err, errlen,
				      "%s: field '%s': '%.64s' is a relay site (no "
				      "workers)",
				      src, path, json_string_value(f));
	return v;
}

static int
parse_sender(const struct topo *t, const json_t *js, struct selmcast_plan *p, int n_sites,
	     const char *src, const char *path, struct selmcast_sender *s, unsigned char *mark,
	     char *err, size_t errlen)
{
	static const char *const known[] = {"site", "bytes", "receivers", "p", NULL};
	const json_t *jb, *jr;
	char sub[160];
	int rc = 0;

	if (!json_is_object(js))
		return json_util_fail(err, errlen, "%s: field '%s': expected an object", src, path);
	if (only_known(js, known, src, path, err, errlen) != 0)
		return -EINVAL;
	snprintf(sub, sizeof(sub), "%s.site", path);
	if (json_object_get(js, "site") == NULL)
		return json_util_fail(err, errlen, "%s: field '%s': missing", src, sub);
	s->site = site_ref(t, json_object_get(js, "site"), src, sub, err, errlen);
	if (s->site < 0)
		return -EINVAL;
	jb = json_object_get(js, "bytes");
	if (jb == NULL || !json_is_integer(jb) || json_integer_value(jb) <= 0 ||
	    (uint64_t)json_integer_value(jb) > SELMCAST_BYTES_MAX)
		return json_util_fail(err, errlen, "%s: field '%s.bytes': %s", src, path,
				      jb == NULL ? "missing" : "expected an integer in [1, 2^40]");
	s->bytes = (uint64_t)json_integer_value(jb);
	if (int_field(js, "p", 1, n_sites - 1, p->p, src, path, &s->p, err, errlen) != 0)
		return -EINVAL;
	jr = json_object_get(js, "receivers");
	if (jr == NULL || !json_is_array(jr))
		return json_util_fail(err, errlen, "%s: field '%s.receivers': %s", src, path,
				      jr == NULL ? "missing" : "expected an array of site ids");
	s->n_receivers = (int)json_array_size(jr);
	if (s->n_receivers < s->p)
		return json_util_fail(err, errlen,
				      "%s: field '%s.receivers': %d receivers, fewer "
				      "than p = %d",
				      src, path, s->n_receivers, s->p);
	s->receivers = malloc(sizeof(int) * (size_t)s->n_receivers);
	if (s->receivers == NULL)
		return json_util_fail(err, errlen, "%s: out of memory", src);
	int done = 0;

	for (int k = 0; k < s->n_receivers && rc == 0; k++, done++) {
		int v;

		snprintf(sub, sizeof(sub), "%s.receivers[%d]", path, k);
		v = site_ref(t, json_array_get(jr, (size_t)k), src, sub, err, errlen);
		if (v < 0)
			rc = -EINVAL;
		else if (v == s->site)
			rc = json_util_fail(err, errlen,
					    "%s: field '%s': sender '%s' cannot receive "
					    "from itself",
					    src, sub, t->nodes[v].id);
		else if (mark[v])
			rc = json_util_fail(err, errlen, "%s: field '%s': duplicate receiver '%s'",
					    src, sub, t->nodes[v].id);
		else
			mark[v] = 1;
		s->receivers[k] = v;
	}
	for (int k = 0; k < done; k++)
		if (s->receivers[k] >= 0)
			mark[s->receivers[k]] = 0;
	return rc;
}

/* With stale_rounds k > 0: no worker pair goes more than k rounds without a delivery. */
static int
check_staleness(const struct topo *t, const struct selmcast_plan *p, const char *src, char *err,
		size_t errlen)
{
	int k = p->stale_rounds, nw = 0, *widx, *last, rc = 0;

	if (k <= 0)
		return 0;
	widx = malloc(sizeof(int) * (size_t)t->n_nodes);
	for (int v = 0; widx != NULL && v < t->n_nodes; v++)
		widx[v] = t->nodes[v].workers > 0 ? nw++ : -1;
	last = widx != NULL ? malloc(sizeof(int) * (size_t)nw * (size_t)nw) : NULL;
	if (last == NULL) {
		free(widx);
		return json_util_fail(err, errlen, "%s: out of memory", src);
	}
	for (int q = 0; q < nw * nw; q++)
		last[q] = -1;
	for (int r = 0; r < p->n_rounds && rc == 0; r++) {
		const struct selmcast_round *rd = &p->rounds[r];

		for (int s = 0; s < rd->n_senders; s++)
			for (int c = 0; c < rd->senders[s].n_receivers; c++)
				last[widx[rd->senders[s].site] * nw +
				     widx[rd->senders[s].receivers[c]]] = r;
		for (int s = 0; s < rd->n_senders && rc == 0; s++) {
			int a = rd->senders[s].site;

			for (int b = 0; b < t->n_nodes && rc == 0; b++) {
				int gap;

				if (b == a || widx[b] < 0)
					continue;
				gap = r - last[widx[a] * nw + widx[b]];
				if (gap > k)
					rc = json_util_fail(
						err, errlen,
						"%s: field '" SELMCAST_SECTION
						".rounds[%d].senders[%d].receivers': '%s' -> "
						"'%s' not delivered for %d rounds in a row "
						"(stale_rounds %d)",
						src, r, s, t->nodes[a].id, t->nodes[b].id, gap, k);
			}
		}
	}
	free(widx);
	free(last);
	return rc;
}

struct selmcast_plan *
selmcast_section_parse(const struct topo *t, const json_t *section, const char *src, char *err,
		       size_t errlen)
{
	static const char *const known[] = {"model", "p", "stale_rounds", "rounds", NULL};
	static const char *const round_known[] = {"completion_seconds", "senders", NULL};
	struct selmcast_plan *p = NULL;
	unsigned char *mark = NULL, *seen = NULL;
	const json_t *jm, *jrounds;
	int n_sites = topo_worker_sites(t);
	char path[64];

	if (src == NULL)
		src = "<plan>";
	if (!json_is_object(section)) {
		json_util_fail(err, errlen, "%s: field '" SELMCAST_SECTION "': expected an object",
			       src);
		return NULL;
	}
	if (n_sites < 2) {
		json_util_fail(err, errlen,
			       "%s: field '" SELMCAST_SECTION "': the topology has "
			       "fewer than two worker sites",
			       src);
		return NULL;
	}
	if (only_known(section, known, src, SELMCAST_SECTION, err, errlen) != 0)
		return NULL;
	p = calloc(1, sizeof(*p));
	mark = calloc((size_t)t->n_nodes, 1);
	seen = calloc((size_t)t->n_nodes, 1);
	if (p == NULL || mark == NULL || seen == NULL) {
		json_util_fail(err, errlen, "%s: out of memory", src);
		goto bad;
	}
	jm = json_object_get(section, "model");
	if (json_is_string(jm) && strcmp(json_string_value(jm), "network") == 0)
		p->model = SELMCAST_NETWORK;
	else if (json_is_string(jm) && strcmp(json_string_value(jm), "application") == 0)
		p->model = SELMCAST_APPLICATION;
	else {
		json_util_fail(err, errlen, "%s: field '" SELMCAST_SECTION ".model': %s", src,
			       jm == NULL ? "missing" : "expected \"network\" or \"application\"");
		goto bad;
	}
	if (int_field(section, "p", 1, n_sites - 1, 0, src, SELMCAST_SECTION, &p->p, err, errlen) !=
		    0 ||
	    int_field(section, "stale_rounds", 0, INT_MAX / 2, 0, src, SELMCAST_SECTION,
		      &p->stale_rounds, err, errlen) != 0)
		goto bad;
	jrounds = json_object_get(section, "rounds");
	if (!json_is_array(jrounds) || json_array_size(jrounds) < 1 ||
	    json_array_size(jrounds) > SELMCAST_ROUNDS_MAX) {
		json_util_fail(err, errlen, "%s: field '" SELMCAST_SECTION ".rounds': %s", src,
			       jrounds == NULL ? "missing" :
						 "expected an array of 1 to 1000 rounds");
		goto bad;
	}
	p->rounds = calloc(json_array_size(jrounds), sizeof(*p->rounds));
	if (p->rounds == NULL) {
		json_util_fail(err, errlen, "%s: out of memory", src);
		goto bad;
	}
	for (size_t r = 0; r < json_array_size(jrounds); r++) {
		const json_t *jr = json_array_get(jrounds, r), *js, *jt;
		struct selmcast_round *rd = &p->rounds[r];

		p->n_rounds++;
		snprintf(path, sizeof(path), SELMCAST_SECTION ".rounds[%zu]", r);
		if (!json_is_object(jr)) {
			json_util_fail(err, errlen, "%s: field '%s': expected an object", src,
				       path);
			goto bad;
		}
		if (only_known(jr, round_known, src, path, err, errlen) != 0)
			goto bad;
		jt = json_object_get(jr, "completion_seconds");
		if (jt == NULL || !json_is_number(jt) || !isfinite(json_number_value(jt)) ||
		    json_number_value(jt) < 0) {
			json_util_fail(err, errlen, "%s: field '%s.completion_seconds': %s", src,
				       path,
				       jt == NULL ? "missing" : "expected a finite number >= 0");
			goto bad;
		}
		rd->seconds = json_number_value(jt);
		js = json_object_get(jr, "senders");
		if (js == NULL || !json_is_array(js)) {
			json_util_fail(err, errlen, "%s: field '%s.senders': %s", src, path,
				       js == NULL ? "missing" : "expected an array");
			goto bad;
		}
		if (json_array_size(js) > (size_t)n_sites) {
			json_util_fail(err, errlen,
				       "%s: field '%s.senders': more senders than the "
				       "%d worker sites",
				       src, path, n_sites);
			goto bad;
		}
		rd->senders = calloc(json_array_size(js) + 1, sizeof(*rd->senders));
		if (rd->senders == NULL) {
			json_util_fail(err, errlen, "%s: out of memory", src);
			goto bad;
		}
		memset(seen, 0, (size_t)t->n_nodes);
		for (size_t s = 0; s < json_array_size(js); s++) {
			char spath[112];
			struct selmcast_sender *sd = &rd->senders[s];

			rd->n_senders++;
			snprintf(spath, sizeof(spath), "%s.senders[%zu]", path, s);
			if (parse_sender(t, json_array_get(js, s), p, n_sites, src, spath, sd, mark,
					 err, errlen) != 0)
				goto bad;
			if (seen[sd->site]) {
				json_util_fail(err, errlen,
					       "%s: field '%s.site': duplicate sender '%s'", src,
					       spath, t->nodes[sd->site].id);
				goto bad;
			}
			seen[sd->site] = 1;
		}
		for (int v = 0; v < t->n_nodes; v++)
			if (t->nodes[v].workers > 0 && !seen[v]) {
				json_util_fail(err, errlen,
					       "%s: field '%s.senders': worker site '%s' "
					       "is missing",
					       src, path, t->nodes[v].id);
				goto bad;
			}
	}
	if (check_staleness(t, p, src, err, errlen) != 0)
		goto bad;
	free(mark);
	free(seen);
	return p;
bad:
	free(mark);
	free(seen);
	selmcast_plan_free(p);
	errno = EINVAL;
	return NULL;
}

struct selmcast_plan *
selmcast_plan_parse(const struct topo *t, const char *text, const char *src, char *err,
		    size_t errlen)
{
	struct plan *common = plan_parse(t, text, src, err, errlen);
	struct selmcast_plan *p = NULL;
	json_error_t jerr;
	json_t *root;

	if (common == NULL)
		return NULL;
	plan_free(common);
	if (src == NULL)
		src = "<plan>";
	root = json_loads(text, JSON_REJECT_DUPLICATES, &jerr);
	if (root == NULL) {
		json_util_fail(err, errlen, "%s:%d:%d: invalid JSON: %s", src, jerr.line,
			       jerr.column, jerr.text);
		return NULL;
	}
	if (json_object_get(root, SELMCAST_SECTION) == NULL)
		json_util_fail(err, errlen, "%s: field '" SELMCAST_SECTION "': missing", src);
	else
		p = selmcast_section_parse(t, json_object_get(root, SELMCAST_SECTION), src, err,
					   errlen);
	json_decref(root);
	if (p == NULL)
		errno = EINVAL;
	return p;
}
