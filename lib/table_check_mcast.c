/* SPDX-License-Identifier: BSD-3-Clause
 *
 * Forwarding tables: the consistency rules of docs/TABLES.md for selective multicast
 * streams (table_check_streams(), part of table_validate()).
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "jsonutil.h"
#include "table.h"
#include "table_check.h"

/* A local worker of the table's trees with the same id, address and port as w? */
static bool
tree_worker_known(const struct table *tb, const struct table_worker *w)
{
	const struct table_tree *e0 = &tb->trees[0];

	for (int k = 0; k < e0->n_workers; k++)
		if (e0->workers[k].id == w->id && e0->workers[k].ipv4 == w->ipv4 &&
		    e0->workers[k].port == w->port)
			return true;
	return false;
}

/* Stream entry s = streams[i] (docs/TABLES.md, "Multicast streams"). */
static int
check_stream(const struct table *tb, const struct table_stream *s, int i, char *err, size_t errlen)
{
	bool at_source = s->source == tb->gw.id;
	char path[64];
	int rc;

	if (s->source == 0 || s->source > TABLE_ID_MAX)
		return json_util_fail(err, errlen, "field 'streams[%d].source': must be in [1, %d]",
				      i, TABLE_ID_MAX);
	if (at_source && s->has_from)
		return json_util_fail(err, errlen,
				      "field 'streams[%d].from': null at the source "
				      "gateway (it takes the stream from its local workers)",
				      i);
	if (!at_source && !s->has_from)
		return json_util_fail(err, errlen,
				      "field 'streams[%d].from': a gateway other than "
				      "the source (%u) receives the stream from another gateway",
				      i, s->source);
	if (s->has_from) {
		snprintf(path, sizeof(path), "streams[%d].from", i);
		rc = table_check_gw(&s->from, path, err, errlen);
		if (rc != 0)
			return rc;
		if (s->from.id == tb->gw.id)
			return json_util_fail(err, errlen,
					      "field 'streams[%d].from.id': %u is this "
					      "gateway",
					      i, s->from.id);
	}
	if (s->n_to < 0 || s->n_to > TABLE_CHILDREN_MAX || s->n_to > (int)tb->limits.max_children)
		return json_util_fail(err, errlen,
				      "field 'streams[%d].to': %d entries, limit %" PRIu32, i,
				      s->n_to, tb->limits.max_children);
	if (s->n_deliver < 0 || s->n_deliver > TABLE_WORKERS_MAX ||
	    s->n_deliver > (int)tb->limits.max_workers)
		return json_util_fail(err, errlen,
				      "field 'streams[%d].deliver': %d entries, limit %" PRIu32, i,
				      s->n_deliver, tb->limits.max_workers);
	if (s->n_to + s->n_deliver == 0)
		return json_util_fail(err, errlen,
				      "field 'streams[%d].to': the stream goes "
				      "nowhere (no 'to' gateway and no 'deliver' worker)",
				      i);
	if (s->n_origins < 1 || s->n_origins > TABLE_WORKERS_MAX)
		return json_util_fail(err, errlen,
				      "field 'streams[%d].origins': must hold 1 to %d "
				      "worker ids",
				      i, TABLE_WORKERS_MAX);
	if (!(isfinite(s->rate_gbps) && s->rate_gbps > 0))
		return json_util_fail(err, errlen,
				      "field 'streams[%d].rate_gbps': must be a finite "
				      "number > 0",
				      i);
	for (int j = 0; j < s->n_to; j++) {
		const struct table_gw *g = &s->to[j];

		snprintf(path, sizeof(path), "streams[%d].to[%d]", i, j);
		rc = table_check_gw(g, path, err, errlen);
		if (rc != 0)
			return rc;
		if (g->id == tb->gw.id || g->id == s->source ||
		    (s->has_from && g->id == s->from.id))
			return json_util_fail(err, errlen,
					      "field 'streams[%d].to[%d].id': %u is "
					      "this gateway, the source or 'from' (a loop)",
					      i, j, g->id);
		for (int k = 0; k < j; k++)
			if (s->to[k].id == g->id)
				return json_util_fail(
					err, errlen,
					"field 'streams[%d].to[%d].id': "
					"duplicate gateway %u (also to[%d]): one copy "
					"per next hop",
					i, j, g->id, k);
	}
	for (int j = 0; j < s->n_deliver; j++) {
		const struct table_worker *w = &s->deliver[j];

		snprintf(path, sizeof(path), "streams[%d].deliver[%d]", i, j);
		rc = table_check_worker(w, path, err, errlen);
		if (rc != 0)
			return rc;
		for (int k = 0; k < j; k++)
			if (s->deliver[k].id == w->id)
				return json_util_fail(err, errlen,
						      "field 'streams[%d].deliver[%d].id'"
						      ": duplicate worker %u (also deliver[%d])",
						      i, j, w->id, k);
		if (w->id == tb->gw.id || w->id == s->source ||
		    (s->has_from && w->id == s->from.id))
			return json_util_fail(err, errlen,
					      "field 'streams[%d].deliver[%d].id': %u "
					      "is a gateway id",
					      i, j, w->id);
		for (int k = 0; k < s->n_to; k++)
			if (s->to[k].id == w->id)
				return json_util_fail(err, errlen,
						      "field 'streams[%d].deliver[%d].id'"
						      ": %u is also to[%d], a gateway",
						      i, j, w->id, k);
		if (tb->n_trees > 0 && !tree_worker_known(tb, w))
			return json_util_fail(err, errlen,
					      "field 'streams[%d].deliver[%d]': worker "
					      "%u is not a local worker of this gateway's trees",
					      i, j, w->id);
	}
	for (int j = 0; j < s->n_origins; j++) {
		uint16_t o = s->origins[j];

		if (o == 0 || o > TABLE_ID_MAX)
			return json_util_fail(err, errlen,
					      "field 'streams[%d].origins[%d]': must be "
					      "in [1, %d]",
					      i, j, TABLE_ID_MAX);
		for (int k = 0; k < j; k++)
			if (s->origins[k] == o)
				return json_util_fail(err, errlen,
						      "field 'streams[%d].origins[%d]': "
						      "duplicate worker %u (also origins[%d])",
						      i, j, o, k);
		if (o == tb->gw.id || o == s->source || (s->has_from && o == s->from.id))
			return json_util_fail(err, errlen,
					      "field 'streams[%d].origins[%d]': %u is a "
					      "gateway id",
					      i, j, o);
		for (int k = 0; k < s->n_to; k++)
			if (s->to[k].id == o)
				return json_util_fail(err, errlen,
						      "field 'streams[%d].origins[%d]': %u"
						      " is also to[%d], a gateway",
						      i, j, o, k);
		/* Away from the source the origins are remote: never delivered back here. */
		if (!at_source)
			for (int k = 0; k < s->n_deliver; k++)
				if (s->deliver[k].id == o)
					return json_util_fail(err, errlen,
							      "field 'streams[%d]."
							      "origins[%d]': %u is a local worker "
							      "(deliver[%d]) but the stream comes "
							      "from gateway %u",
							      i, j, o, k, s->source);
	}
	return 0;
}

int
table_check_streams(const struct table *tb, char *err, size_t errlen)
{
	if (tb->n_streams < 0 || tb->n_streams > TABLE_STREAMS_MAX)
		return json_util_fail(err, errlen,
				      "field 'streams': %d entries exceed the limit of "
				      "%d",
				      tb->n_streams, TABLE_STREAMS_MAX);
	for (int i = 0; i < tb->n_streams; i++) {
		int rc;

		if (i > 0 && tb->streams[i].id <= tb->streams[i - 1].id)
			return json_util_fail(err, errlen,
					      "field 'streams[%d].id': stream ids must "
					      "be unique and ascending (%u after %u)",
					      i, tb->streams[i].id, tb->streams[i - 1].id);
		for (int j = 0; j < i; j++)
			if (tb->streams[j].source == tb->streams[i].source)
				return json_util_fail(err, errlen,
						      "field 'streams[%d].source': "
						      "gateway %u already has streams[%d] (one "
						      "stream per sending site)",
						      i, tb->streams[i].source, j);
		rc = check_stream(tb, &tb->streams[i], i, err, errlen);
		if (rc != 0)
			return rc;
	}
	return 0;
}
