/* SPDX-License-Identifier: BSD-3-Clause
 *
 * A selmcast job's plan and tables (jobplan_mcast.h): its multicast streams, one per
 * sending site, and each gateway's part in them.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>

#include "graph.h"
#include "jobplan_mcast.h"
#include "jobplan_trees.h"
#include "jsonutil.h"
#include "selmcast.h"

int
jobplan_selmcast_streams(struct jobplan *jp, const struct deploy_job *j, double wire, char *err,
			 size_t errlen)
{
	const struct topo *t = jp->topo;
	int n_nodes = t->n_nodes, n, p, rc = -ENOMEM;
	int *site = malloc(sizeof(int) * (size_t)n_nodes), *ps = NULL, *path = NULL;
	double *in_g = malloc(sizeof(double) * (size_t)n_nodes);
	double *eg_g = malloc(sizeof(double) * (size_t)n_nodes), *load = NULL, f, secs;
	uint64_t *bytes = malloc(sizeof(uint64_t) * (size_t)n_nodes);
	uint64_t tensor = table_dtype_bytes(j->dtype, j->elements);
	unsigned char *x = NULL;
	struct selmcast_inst in = {0};
	struct selmcast_result res;
	char serr[JOBPLAN_ERR_MAX];
	json_t *sec;

	if (site == NULL || in_g == NULL || eg_g == NULL || bytes == NULL)
		goto nomem;
	n = selmcast_sites(t, NULL, t->name, tensor, site, in_g, eg_g, bytes, serr, sizeof(serr));
	if (n < 0) {
		rc = json_util_failrc(-EINVAL, err, errlen, "job %u: selmcast: %s", j->id, serr);
		goto out;
	}
	if (n < 2) {
		rc = json_util_failrc(-ENOENT, err, errlen,
				      "job %u: selmcast: %d worker site up, "
				      "multicast needs 2",
				      j->id, n);
		goto out;
	}
	if (n > TABLE_STREAMS_MAX) {
		rc = json_util_failrc(-E2BIG, err, errlen,
				      "job %u: selmcast: %d worker sites, a "
				      "table holds at most %d streams",
				      j->id, n, TABLE_STREAMS_MAX);
		goto out;
	}
	/* p: the option, or 30% of the sites; at most the other sites (fewer may be up). */
	p = j->mcast_p > 0 ? j->mcast_p : (int)fmax(1, floor(0.3 * n + 0.5));
	if (p > n - 1)
		p = n - 1;
	ps = malloc(sizeof(int) * (size_t)n);
	x = calloc((size_t)n * (size_t)n, 1);
	path = malloc(sizeof(int) * (size_t)n_nodes);
	load = calloc(2 * (size_t)(t->n_links > 0 ? t->n_links : 1), sizeof(double));
	jp->streams = calloc((size_t)n, sizeof(*jp->streams));
	if (ps == NULL || x == NULL || path == NULL || load == NULL || jp->streams == NULL)
		goto nomem;
	for (int i = 0; i < n; i++) {
		ps[i] = p;
		bytes[i] = (uint64_t)((double)tensor * wire) * (uint64_t)t->nodes[site[i]].workers;
	}
	in = (struct selmcast_inst){.n = n,
				    .model = j->mcast_application ? SELMCAST_APPLICATION :
								    SELMCAST_NETWORK,
				    .ingress_gbps = in_g,
				    .egress_gbps = eg_g,
				    .bytes = bytes,
				    .p = ps};
	if (selmcast_check(&in, serr, sizeof(serr)) != 0) {
		rc = json_util_failrc(-EINVAL, err, errlen, "job %u: selmcast: %s", j->id, serr);
		goto out;
	}
	rc = selmcast_select(&in, NULL, x, &res);
	if (rc != 0)
		goto nomem;
	secs = res.seconds;
	for (int i = 0; i < n; i++) {
		struct jobplan_stream *st = &jp->streams[i];

		jp->n_streams++;
		st->source = site[i];
		st->parent = malloc(sizeof(int) * (size_t)n_nodes);
		st->receiver = calloc((size_t)n_nodes, sizeof(bool));
		if (st->parent == NULL || st->receiver == NULL)
			goto nomem;
		for (int v = 0; v < n_nodes; v++)
			st->parent[v] = PLAN_ABSENT;
		st->parent[site[i]] = PLAN_ROOT;
		st->rate_gbps = secs > 0 ? (double)bytes[i] * 8 / secs / 1e9 : 0;
		for (int k = 0; k < n; k++) {
			int len;

			if (!x[(size_t)i * n + k])
				continue;
			st->receiver[site[k]] = true;
			len = graph_route(t, site[i], site[k], path);
			if (len < 2) {
				rc = json_util_failrc(-EINVAL, err, errlen,
						      "job %u: selmcast: no "
						      "route from '%s' to '%s'",
						      j->id, t->nodes[site[i]].id,
						      t->nodes[site[k]].id);
				goto out;
			}
			/* Union of shortest paths: a node already on the tree keeps its parent,
			 * and shortest paths from one source share their prefixes. */
			for (int h = 1; h < len; h++)
				if (st->parent[path[h]] == PLAN_ABSENT)
					st->parent[path[h]] = path[h - 1];
		}
		for (int v = 0; v < n_nodes; v++) {
			int u = st->parent[v], l;

			if (u < 0)
				continue;
			l = topo_link_between(t, u, v);
			if (l >= 0)
				load[2 * l + (t->links[l].a == u ? 0 : 1)] += st->rate_gbps;
		}
	}
	f = jobplan_link_fit(t, load); /* a stream uses each edge one way: down from its source */
	for (int i = 0; i < n; i++)
		jp->streams[i].rate_gbps *= f;
	jp->plan = plan_create(deploy_algo_name(j->algo), t, 0);
	if (jp->plan == NULL)
		goto nomem;
	jp->plan->bytes = tensor;
	jp->plan->allreduce_seconds = f > 0 ? secs / f : secs;
	sec = selmcast_section(t, site, &in, 1, x, &jp->plan->allreduce_seconds);
	jp->plan->extra = json_object();
	if (sec == NULL || jp->plan->extra == NULL ||
	    json_object_set_new(jp->plan->extra, SELMCAST_SECTION, sec) != 0)
		goto nomem;
	rc = 0;
	goto out;
nomem:
	rc = json_util_failrc(-ENOMEM, err, errlen, "out of memory");
out:
	free(load);
	free(path);
	free(x);
	free(ps);
	free(bytes);
	free(eg_g);
	free(in_g);
	free(site);
	return rc;
}

int
jobplan_streams_validate(const struct topo *t, const struct jobplan *jp, char *err, size_t errlen)
{
	double *load = calloc(2 * (size_t)(t->n_links > 0 ? t->n_links : 1), sizeof(double));
	int rc = -EINVAL;

	if (load == NULL)
		return json_util_failrc(-ENOMEM, err, errlen, "out of memory");
	for (int s = 0; s < jp->n_streams; s++) {
		const struct jobplan_stream *st = &jp->streams[s];

		if (!(isfinite(st->rate_gbps) && st->rate_gbps >= 0)) {
			json_util_fail(err, errlen, "stream %d: rate %g", s, st->rate_gbps);
			goto out;
		}
		for (int v = 0; v < t->n_nodes; v++) {
			int u = st->parent[v], h = 0, l, w = v;

			if (st->receiver[v] && u == PLAN_ABSENT) {
				json_util_fail(err, errlen, "stream %d: receiver '%s' is not on it",
					       s, t->nodes[v].id);
				goto out;
			}
			if (u < 0)
				continue;
			l = topo_link_between(t, u, v);
			while (w >= 0 && st->parent[w] >= 0 && h++ <= t->n_nodes)
				w = topo_link_between(t, w, st->parent[w]) < 0 ? -1 : st->parent[w];
			if (l < 0 || w != st->source) {
				json_util_fail(
					err, errlen,
					"stream %d: '%s' does not reach the source over links", s,
					t->nodes[v].id);
				goto out;
			}
			load[2 * l + (t->links[l].a == u ? 0 : 1)] += st->rate_gbps;
		}
	}
	for (int l = 0; l < t->n_links; l++)
		for (int dir = 0; dir < 2; dir++) {
			const struct topo_link *lk = &t->links[l];
			double cap = dir == 0 ? lk->gbps_ab : lk->gbps_ba;

			if (load[2 * l + dir] > cap * (1 + PLAN_EPS) + 1e-9) {
				json_util_fail(err, errlen,
					       "link %s -> %s: streams load %.6g Gbit/s over its "
					       "capacity %.6g",
					       t->nodes[dir == 0 ? lk->a : lk->b].id,
					       t->nodes[dir == 0 ? lk->b : lk->a].id,
					       load[2 * l + dir], cap);
				goto out;
			}
		}
	rc = 0;
out:
	free(load);
	return rc;
}

/* The first gateway of deployment node v that is in the epoch (v has one). */
static const struct deploy_gateway *
lead_gw(const struct jobplan *jp, const struct deploy *d, int v)
{
	int g = d->node_gw[v];

	while (!jp->gw_up[g] && g < d->node_gw[v] + d->node_ngw[v] - 1)
		g++;
	return &d->gateways[g];
}

struct table *
jobplan_stream_table(const struct jobplan *jp, const struct deploy *d, const struct deploy_job *j,
		     int i, const struct deploy_gateway *g, char *err, size_t errlen)
{
	const struct topo *t = jp->topo;
	int n_here = 0, k = 0;
	struct table *tb;

	for (int s = 0; s < jp->n_streams && g == lead_gw(jp, d, jp->node_of[i]); s++)
		n_here += jp->streams[s].parent[i] != PLAN_ABSENT;
	tb = table_create_streams(0, NULL, NULL, n_here);
	if (tb == NULL) {
		json_util_failrc(-ENOMEM, err, errlen, "out of memory");
		return NULL;
	}
	tb->job = j->id;
	tb->epoch = jp->epoch;
	tb->gw = (struct table_gw){g->id, g->ipv4, g->base_port, g->ports};
	tb->dtype = j->dtype;
	tb->elements = j->elements;
	tb->chunk_elements = jp->chunk_bytes / (uint32_t)table_dtype_unit_bytes(j->dtype) *
			     table_dtype_granule(j->dtype);
	tb->limits = (struct table_limits){TABLE_TREES_MAX, TABLE_CHILDREN_MAX, TABLE_WORKERS_MAX,
					   j->slots_max != 0 ? j->slots_max : TABLE_SLOTS_MAX};
	for (int s = 0; s < jp->n_streams && n_here > 0; s++) {
		const struct jobplan_stream *js = &jp->streams[s];
		struct table_stream *ts;
		int src = jp->node_of[js->source];

		if (js->parent[i] == PLAN_ABSENT)
			continue;
		ts = &tb->streams[k++];
		ts->id = (uint16_t)s;
		ts->source = lead_gw(jp, d, src)->id;
		ts->rate_gbps = js->rate_gbps;
		if (js->parent[i] >= 0) {
			const struct deploy_gateway *f = lead_gw(jp, d, jp->node_of[js->parent[i]]);

			ts->has_from = true;
			ts->from = (struct table_gw){f->id, f->ipv4, f->base_port, f->ports};
		}
		for (int v = 0; v < t->n_nodes; v++) {
			const struct deploy_gateway *c = lead_gw(jp, d, jp->node_of[v]);

			if (js->parent[v] == i && ts->n_to < TABLE_CHILDREN_MAX)
				ts->to[ts->n_to++] =
					(struct table_gw){c->id, c->ipv4, c->base_port, c->ports};
		}
		for (int w = 0; w < j->n_workers; w++) {
			const struct deploy_worker *dw = &j->workers[w];

			if (dw->node == src && ts->n_origins < TABLE_WORKERS_MAX)
				ts->origins[ts->n_origins++] = dw->w.id;
			/* Receivers' workers get the stream; at the source, every worker of
			 * the site is listed too: the others get it (the dataplane never
			 * returns a worker its own update), and each worker finds its address
			 * in the table even when the job has no tree. */
			if (dw->node == jp->node_of[i] && (js->receiver[i] || i == js->source) &&
			    ts->n_deliver < TABLE_WORKERS_MAX)
				ts->deliver[ts->n_deliver++] = dw->w;
		}
	}
	if (table_validate(tb, err, errlen) != 0) {
		table_free(tb);
		errno = EINVAL;
		return NULL;
	}
	return tb;
}
