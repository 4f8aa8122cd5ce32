/* SPDX-License-Identifier: BSD-3-Clause
 *
 * Planning one job for one epoch and compiling its tables (jobplan.h).
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "baselines.h"
#include "blueconnect.h"
#include "crew.h"
#include "graph.h"
#include "jobplan.h"
#include "jsonutil.h"
#include "mtree.h"
#include "report.h"
#include "selmcast.h"
#include "table_compile.h"
#include "wire.h"

/* ---- the ring as chain trees --------------------------------------------------------- */

/* Fill parent[] with the chain seq[first], seq[first + step], ... (len nodes, indices
 * modulo n_seq), each node's parent the one before it; relay leaves pruned. */
static void
chain(const struct topo *t, const int *seq, int n_seq, int first, int step, int len,
      int *parent)
{
	for (int v = 0; v < t->n_nodes; v++)
		parent[v] = PLAN_ABSENT;
	parent[seq[first]] = PLAN_ROOT;
	for (int k = 1; k < len; k++) {
		int cur = seq[((first + k * step) % n_seq + n_seq) % n_seq];
		int prev = seq[((first + (k - 1) * step) % n_seq + n_seq) % n_seq];

		parent[cur] = prev;
	}
	graph_prune_relay_leaves(t, parent);
}

struct plan *
jobplan_ring_chains(const struct topo *t, double search_seconds, uint64_t bytes, char *err,
		    size_t errlen)
{
	struct ring_plan rp = { 0 };
	int n = t->n_nodes, n_seq = 0, rc;
	int *seq = malloc(sizeof(int) * (size_t)n), *path = malloc(sizeof(int) * (size_t)n);
	int *parents = NULL, *uses = calloc((size_t)(t->n_links > 0 ? t->n_links : 1),
					    sizeof(int));
	bool *seen = calloc((size_t)n, sizeof(bool));
	struct plan *p = NULL;

	errno = ENOMEM;
	if (seq == NULL || path == NULL || uses == NULL || seen == NULL)
		goto nomem;
	rc = baseline_ring(t, search_seconds, &rp);
	if (rc != 0) {
		json_util_failrc(rc, err, errlen, "ring: no ring found: %s", strerror(-rc));
		errno = -rc;
		goto out;
	}
	if (rp.m < 2) {
		json_util_failrc(-EINVAL, err, errlen, "ring: needs at least 2 worker sites");
		errno = EINVAL;
		goto out;
	}
	/* The ring as a walk of distinct nodes: for two members the route between them (the
	 * way back is the same path), else the closed walk through every route. */
	for (int i = 0; i < (rp.m == 2 ? 1 : rp.m); i++) {
		int a = rp.order[i], b = rp.order[(i + 1) % rp.m];
		int len = graph_route(t, a, b, path);

		if (len < 2) {
			json_util_failrc(-ENOENT, err, errlen, "ring: no route from '%s' to '%s'",
					 t->nodes[a].id, t->nodes[b].id);
			errno = ENOENT;
			goto out;
		}
		for (int k = 0; k < (rp.m == 2 ? len : len - 1); k++) {
			if (seen[path[k]]) {
				json_util_failrc(-ENOENT, err, errlen, "ring: the route from '%s' "
						 "to '%s' passes node '%s' twice, so the ring has "
						 "no chain form; use mtree or single-tree",
						 t->nodes[a].id, t->nodes[b].id,
						 t->nodes[path[k]].id);
				errno = ENOENT;
				goto out;
			}
			seen[path[k]] = true;
			seq[n_seq++] = path[k];
		}
	}
	/* One chain per member: forward from it round the ring, or (two members) along the
	 * path in the direction away from it. */
	parents = malloc(sizeof(int) * (size_t)n * (size_t)rp.m);
	p = plan_create("ring", t, rp.m);
	if (parents == NULL || p == NULL)
		goto nomem;
	for (int i = 0, tr = 0; i < n_seq; i++) {
		int *par = parents + (size_t)tr * (size_t)n;

		if (t->nodes[seq[i]].workers == 0)
			continue;
		if (rp.m == 2)
			chain(t, seq, n_seq, i, i == 0 ? 1 : -1, n_seq, par);
		else
			chain(t, seq, n_seq, i, 1, n_seq, par);
		for (int v = 0; v < n; v++)
			if (par[v] >= 0)
				uses[topo_link_between(t, v, par[v])]++;
		tr++;
	}
	for (int tr = 0; tr < rp.m; tr++) {
		const int *par = parents + (size_t)tr * (size_t)n;
		double rate = INFINITY;
		int root = -1;

		for (int v = 0; v < n; v++) {
			if (par[v] == PLAN_ROOT)
				root = v;
			if (par[v] >= 0) {
				int l = topo_link_between(t, v, par[v]);
				double r = topo_link_duplex_gbps(t, l) / uses[l];

				rate = r < rate ? r : rate;
			}
		}
		rc = plan_add_tree(p, root, rate, par);
		if (rc < 0) {
			json_util_failrc(rc, err, errlen, "ring: %s", strerror(-rc));
			errno = -rc;
			goto fail;
		}
	}
	if (plan_shares_from_rates(p) != 0) {
		json_util_failrc(-EINVAL, err, errlen, "ring: every chain has rate 0");
		errno = EINVAL;
		goto fail;
	}
	for (int i = 0; i < p->n_trees; i++) {
		struct plan_tree *tr = &p->trees[i];

		tr->chunk_bytes = planner_chunk_bytes((uint64_t)(tr->share * (double)bytes),
						      tr->rate_gbps, 0, 2 * plan_tree_depth(t, tr));
	}
	goto out;
nomem:
	json_util_failrc(-ENOMEM, err, errlen, "ring: out of memory");
	errno = ENOMEM;
fail:
	plan_free(p);
	p = NULL;
out:
	ring_plan_fini(&rp);
	free(parents);
	free(seen);
	free(uses);
	free(path);
	free(seq);
	return p;
}

/* ---- planning a job ------------------------------------------------------------------ */

/* What the links carry of a tensor of `bytes`: every packet of chunk_bytes of payload
 * travels with WIRE_FRAME_PAYLOAD_OFF bytes of Ethernet, IPv4, UDP and georeduce header
 * (6.8% at 1408 B) and the job's contributor set, which the capacities must also carry. */
static uint64_t
wire_bytes(const struct deploy_job *j, uint64_t bytes)
{
	double wire = (double)(j->chunk_bytes + WIRE_FRAME_PAYLOAD_OFF +
			       j->cset_blocks * WIRE_CSET_BLOCK) / (double)j->chunk_bytes;

	return (uint64_t)((double)bytes * wire);
}

/* Gateway g of the deployment is up (up: by gateway, NULL: all). */
static bool
gw_up(const bool *up, int g)
{
	return up == NULL || up[g];
}

/* The planning topology: nodes with a gateway that is up (as many gateways as are up), the
 * links between them that are up (at their measured capacity where that is lower), the
 * job's worker counts. */
static int
planning_topo(const struct deploy *d, const struct deploy_job *j, const bool *up,
	      const struct jobplan_link *lk, struct jobplan *jp, char *err, size_t errlen)
{
	const struct topo *t = d->topo;
	struct topo_node *nodes = malloc(sizeof(*nodes) * (size_t)t->n_nodes);
	struct topo_link *links = malloc(sizeof(*links) * (size_t)(t->n_links + 1));
	int *idx = malloc(sizeof(int) * (size_t)t->n_nodes);
	int n = 0, nl = 0, workers = 0, rc = 0;
	char terr[TOPO_ERR_MAX];

	jp->node_of = malloc(sizeof(int) * (size_t)t->n_nodes);
	if (nodes == NULL || links == NULL || idx == NULL || jp->node_of == NULL) {
		rc = json_util_failrc(-ENOMEM, err, errlen, "out of memory");
		goto out;
	}
	for (int v = 0; v < t->n_nodes; v++) {
		int g = 0;

		idx[v] = -1;
		for (int k = 0; k < d->node_ngw[v]; k++)
			g += gw_up(up, d->node_gw[v] + k);
		if (g == 0)
			continue;
		nodes[n] = t->nodes[v];
		nodes[n].gateways = g;
		nodes[n].workers = deploy_job_workers_at(j, v);
		workers += nodes[n].workers;
		jp->node_of[n] = v;
		idx[v] = n++;
	}
	for (int l = 0; l < t->n_links; l++) {
		if (idx[t->links[l].a] < 0 || idx[t->links[l].b] < 0 || (lk != NULL && !lk[l].up))
			continue;
		links[nl] = t->links[l];
		links[nl].a = idx[t->links[l].a];
		links[nl].b = idx[t->links[l].b];
		if (lk != NULL && lk[l].gbps_ab > 0 && lk[l].gbps_ab < links[nl].gbps_ab)
			links[nl].gbps_ab = lk[l].gbps_ab;
		if (lk != NULL && lk[l].gbps_ba > 0 && lk[l].gbps_ba < links[nl].gbps_ba)
			links[nl].gbps_ba = lk[l].gbps_ba;
		nl++;
	}
	jp->n_workers = workers;
	if (workers == 0) {
		rc = json_util_failrc(-ENOENT, err, errlen, "job %u: no worker at a gateway that "
				      "is up", j->id);
		goto out;
	}
	jp->topo = topo_create(t->name, n, nodes, nl, links, terr, sizeof(terr));
	if (jp->topo == NULL)
		rc = json_util_failrc(errno == ENOMEM ? -ENOMEM : -EINVAL, err, errlen,
				      "job %u: %s", j->id, terr);
out:
	free(idx);
	free(links);
	free(nodes);
	return rc;
}

/* A job whose workers are all at one site: one tree of that site alone. */
static struct plan *
one_site(const struct topo *t, const struct deploy_job *j, uint64_t bytes)
{
	int *parent = malloc(sizeof(int) * (size_t)t->n_nodes);
	struct plan *p = plan_create(deploy_algo_name(j->algo), t, 1);
	int root = 0;

	if (parent == NULL || p == NULL)
		goto fail;
	for (int v = 0; v < t->n_nodes; v++) {
		parent[v] = PLAN_ABSENT;
		if (t->nodes[v].workers > 0)
			root = v;
	}
	parent[root] = PLAN_ROOT;
	if (plan_add_tree(p, root, t->nodes[root].lan_gbps * t->nodes[root].workers, parent) < 0 ||
	    plan_shares_from_rates(p) != 0)
		goto fail;
	p->trees[0].chunk_bytes = bytes > 0 ? bytes : 1;
	free(parent);
	return p;
fail:
	free(parent);
	plan_free(p);
	errno = ENOMEM;
	return NULL;
}

/* The largest factor (at most 1) by which loads fit every link direction: load[2 l] a to
 * b of link l, load[2 l + 1] b to a, in Gbit/s. */
static double
link_fit(const struct topo *t, const double *load)
{
	double f = 1;

	for (int l = 0; l < t->n_links; l++) {
		if (load[2 * l] > t->links[l].gbps_ab * f)
			f = t->links[l].gbps_ab / load[2 * l];
		if (load[2 * l + 1] > t->links[l].gbps_ba * f)
			f = t->links[l].gbps_ba / load[2 * l + 1];
	}
	return f;
}

/* link_fit() of a tree plan: a tree uses its rate in both directions of each of its
 * edges. -1 on ENOMEM. */
static double
fit_rates(const struct topo *t, const struct plan *pl)
{
	double *load = calloc(2 * (size_t)t->n_links, sizeof(double)), f;

	if (load == NULL)
		return -1;
	for (int k = 0; k < pl->n_trees; k++)
		for (int v = 0; v < t->n_nodes; v++) {
			int u = pl->trees[k].parent[v], l;

			if (u < 0)
				continue;
			l = topo_link_between(t, v, u);
			if (l < 0)
				continue; /* plan_validate() reports it */
			load[2 * l] += pl->trees[k].rate_gbps;
			load[2 * l + 1] += pl->trees[k].rate_gbps;
		}
	f = link_fit(t, load);
	free(load);
	return f;
}

/*
 * CREW as trees: the shares of crew_solve() with every worker site a member (the group of
 * a round is whoever is ready first, so every site may be in it), and for each site that
 * aggregates a share one star rooted there, whose children are the other member sites.
 * Star i carries S_i bytes at S_i / (X + Y): on the link between member m and aggregator
 * i, star i's scatter and star m's broadcast (or the reverse) need at most
 * bw (X + Y), which is what CREW's shares guarantee, so the plan keeps every link within
 * its capacity.
 *
 * Where an aggregator and a member have no link (a failed one), CREW's relay carries the
 * chunk over two hops (crew_pick_relay(): a member if one has both links): the star
 * reaches that member through the relay, the shares are solved with the two hops' rate
 * (the slower hop), and since relayed chunks load links a star would not, every rate is
 * then scaled down as far as the busiest link needs. NULL with err and errno (ENOENT: no
 * site can aggregate).
 */
static struct plan *
crew_stars(const struct topo *t, uint64_t bytes, char *err, size_t errlen)
{
	int n = t->n_nodes, p = 0;
	double *bw = crew_matrix_from_topo(t), *eff = malloc(sizeof(double) * (size_t)n * n);
	int *group = malloc(sizeof(int) * (size_t)n), *parent = malloc(sizeof(int) * (size_t)n);
	int *via = malloc(sizeof(int) * (size_t)n * n);
	uint64_t *share = calloc((size_t)n, sizeof(*share));
	struct plan *pl = NULL;
	struct crew_times tm;
	int rc = -ENOMEM, aggs = 0;
	double f;

	if (bw == NULL || eff == NULL || group == NULL || parent == NULL || via == NULL ||
	    share == NULL)
		goto out;
	for (int v = 0; v < n; v++)
		if (t->nodes[v].workers > 0)
			group[p++] = v;
	struct crew_problem pb = { .n = n, .gbps = bw, .group = group, .p = p,
				   .model_bytes = bytes > 0 ? bytes : 1 };

	/* Relays for the pairs without a link, and the rates the shares are solved with. */
	memcpy(eff, bw, sizeof(double) * (size_t)n * n);
	for (int i = 0; i < n; i++)
		for (int k = 0; k < p; k++) {
			int m = group[k], r;

			via[i * n + m] = -1;
			if (m == i || (bw[m * n + i] > 0 && bw[i * n + m] > 0))
				continue;
			r = crew_pick_relay(&pb, i, m, bytes, NULL, NULL);
			if (r < 0 || bw[m * n + r] <= 0 || bw[r * n + i] <= 0)
				continue;
			via[i * n + m] = r;
			eff[i * n + m] = fmin(bw[i * n + r], bw[r * n + m]);
			eff[m * n + i] = fmin(bw[m * n + r], bw[r * n + i]);
		}
	pb.gbps = eff;
	rc = crew_solve(&pb, CREW_SCHEME_CREW, share, &tm, err, errlen);
	if (rc == -ENOENT)
		snprintf(err, errlen, "crew: no site reaches every worker site in two hops");
	if (rc != 0)
		goto out;
	for (int i = 0; i < n; i++)
		aggs += share[i] > 0;
	pl = plan_create("crew", t, aggs);
	rc = pl == NULL ? -ENOMEM : 0;
	for (int i = 0; i < n && rc == 0; i++) {
		double T = tm.scatter_s + tm.broadcast_s, lat;
		int k;

		if (share[i] == 0)
			continue;
		for (int v = 0; v < n; v++)
			parent[v] = PLAN_ABSENT;
		for (int m = 0; m < p; m++) {
			int r = via[i * n + group[m]];

			parent[group[m]] = r >= 0 ? r : i;
			if (r >= 0 && parent[r] == PLAN_ABSENT)
				parent[r] = i;
		}
		parent[i] = PLAN_ROOT;
		k = plan_add_tree(pl, i, (double)share[i] * 8 / 1e9 / T, parent);
		if (k < 0) {
			rc = k;
			break;
		}
		lat = planner_tree_max_latency_ms(t, &pl->trees[k]);
		pl->trees[k].chunk_bytes = planner_chunk_bytes(share[i], pl->trees[k].rate_gbps,
							       lat, 2 * plan_tree_depth(t,
											&pl->trees[k]));
	}
	f = rc == 0 ? fit_rates(t, pl) : 1;
	if (f < 0)
		rc = -ENOMEM;
	for (int k = 0; rc == 0 && f < 1 && k < pl->n_trees; k++)
		pl->trees[k].rate_gbps *= f;
	if (rc == 0)
		rc = plan_shares_from_rates(pl);
	if (rc != 0)
		snprintf(err, errlen, "crew: %s", strerror(-rc));
out:
	free(bw);
	free(eff);
	free(group);
	free(parent);
	free(via);
	free(share);
	if (rc != 0) {
		plan_free(pl);
		errno = -rc;
		return NULL;
	}
	return pl;
}

/* ---- selective multicast --------------------------------------------------------------- */

/*
 * A selmcast job (docs/DEPLOYMENT.md): the receivers of one round by the SELMCAST heuristic
 * from fresh staleness, over the worker sites of the planning topology (ingress and egress
 * from their links, each site's update = the tensor bytes with headers, times its workers);
 * for each sender site the union of the latency-shortest paths to its receivers as a
 * distribution tree (one copy per tree edge); each stream paced at update / T, T the
 * selection's completion time, scaled down by the largest factor that keeps the sum of
 * the streams on every link direction within its capacity. The plan has no trees; its
 * "multicast" section holds the selection.
 */
static int
selmcast_streams(struct jobplan *jp, const struct deploy_job *j, double wire, char *err,
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
	struct selmcast_inst in = { 0 };
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
		rc = json_util_failrc(-ENOENT, err, errlen, "job %u: selmcast: %d worker site up, "
				      "multicast needs 2", j->id, n);
		goto out;
	}
	if (n > TABLE_STREAMS_MAX) {
		rc = json_util_failrc(-E2BIG, err, errlen, "job %u: selmcast: %d worker sites, a "
				      "table holds at most %d streams", j->id, n,
				      TABLE_STREAMS_MAX);
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
	in = (struct selmcast_inst){ .n = n, .model = j->mcast_application ? SELMCAST_APPLICATION
									  : SELMCAST_NETWORK,
				     .ingress_gbps = in_g, .egress_gbps = eg_g, .bytes = bytes,
				     .p = ps };
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
				rc = json_util_failrc(-EINVAL, err, errlen, "job %u: selmcast: no "
						      "route from '%s' to '%s'", j->id,
						      t->nodes[site[i]].id, t->nodes[site[k]].id);
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
	f = link_fit(t, load); /* a stream uses each edge one way: down from its source */
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

/* The first gateway of deployment node v that is in the epoch (v has one). */
static const struct deploy_gateway *
lead_gw(const struct jobplan *jp, const struct deploy *d, int v)
{
	int g = d->node_gw[v];

	while (!jp->gw_up[g] && g < d->node_gw[v] + d->node_ngw[v] - 1)
		g++;
	return &d->gateways[g];
}

/* The table of gateway g at planning node i of a selmcast job: its part in every stream
 * through it. A site's streams go through its first gateway that is up; the others get
 * none. */
static struct table *
stream_table(const struct jobplan *jp, const struct deploy *d, const struct deploy_job *j,
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
	tb->gw = (struct table_gw){ g->id, g->ipv4, g->base_port, g->ports };
	tb->dtype = j->dtype;
	tb->elements = j->elements;
	tb->chunk_elements = j->chunk_bytes / (uint32_t)table_dtype_unit_bytes(j->dtype) *
			     table_dtype_granule(j->dtype);
	tb->limits = (struct table_limits){ TABLE_TREES_MAX, TABLE_CHILDREN_MAX,
					    TABLE_WORKERS_MAX,
					    j->slots_max != 0 ? j->slots_max : TABLE_SLOTS_MAX };
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
			ts->from = (struct table_gw){ f->id, f->ipv4, f->base_port, f->ports };
		}
		for (int v = 0; v < t->n_nodes; v++) {
			const struct deploy_gateway *c = lead_gw(jp, d, jp->node_of[v]);

			if (js->parent[v] == i && ts->n_to < TABLE_CHILDREN_MAX)
				ts->to[ts->n_to++] = (struct table_gw){ c->id, c->ipv4,
									c->base_port, c->ports };
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

/*
 * BlueConnect (docs/BLUECONNECT.md) over the planning topology, whose sites have the job's
 * workers and the gateways that are up: the WAN stage's mTree and every decomposition
 * costed for `bytes` (what the links carry). The gateways run the decomposition without
 * ring stages (every in-site level summed at them, each taking its shard), which becomes
 * the plan's; when the planner's cheapest has ring stages among the workers, jp->note says
 * so. NULL with errno and perr.
 */
static struct plan *
blueconnect_job(struct jobplan *jp, const struct deploy_job *j, uint64_t bytes, char *perr,
		size_t len)
{
	struct bc_opts o = BC_OPTS_DEFAULT;
	struct bc_result r;
	struct plan *p = NULL;
	int rc;

	o.bytes = bytes;
	o.max_trees = j->max_trees;
	rc = blueconnect_plan(jp->topo, &o, &r, perr, len);
	if (rc == 0 && r.chosen != 0)
		snprintf(jp->note, sizeof(jp->note), "; the planner's cheapest, %s at %.3f s, has "
			 "ring stages among the workers, which the gateways do not run",
			 r.cand[r.chosen].name, r.cand[r.chosen].seconds);
	if (rc == 0)
		rc = blueconnect_choose(jp->topo, &r, 0, perr, len);
	if (rc == 0) {
		p = r.plan;
		r.plan = NULL;
	}
	bc_result_fini(&r);
	errno = rc == -ENOMEM ? ENOMEM : rc == -EIO ? EIO : rc == -EINVAL ? EINVAL : ENOENT;
	return p;
}

static int
plan_job(struct jobplan *jp, const struct deploy_job *j, char *err, size_t errlen)
{
	const struct topo *t = jp->topo;
	uint64_t bytes = table_dtype_bytes(j->dtype, j->elements);
	char perr[JOBPLAN_ERR_MAX];
	int rc;

	jp->bound_gbps = -1;
	if (j->algo == DEPLOY_ALGO_SELMCAST)
		return selmcast_streams(jp, j, (double)(j->chunk_bytes + WIRE_FRAME_PAYLOAD_OFF) /
						  (double)j->chunk_bytes, err, errlen);
	if (topo_worker_sites(t) == 1) {
		jp->plan = one_site(t, j, bytes);
	} else if (j->algo == DEPLOY_ALGO_MTREE) {
		struct mtree_opts o = MTREE_OPTS_DEFAULT;

		o.max_trees = j->max_trees;
		o.max_height_ms = j->max_height_ms;
		o.min_rate_gbps = j->min_rate_gbps;
		o.rho = j->rho;
		o.paper_only = j->paper;
		o.bytes = bytes;
		o.window = 0;
		jp->plan = mtree_plan(t, &o, NULL, perr, sizeof(perr));
	} else if (j->algo == DEPLOY_ALGO_RING) {
		jp->plan = jobplan_ring_chains(t, j->ring_seconds, bytes, perr, sizeof(perr));
	} else if (j->algo == DEPLOY_ALGO_CREW) {
		jp->plan = crew_stars(t, bytes, perr, sizeof(perr));
	} else if (j->algo == DEPLOY_ALGO_BLUECONNECT) {
		jp->plan = blueconnect_job(jp, j, wire_bytes(j, bytes), perr, sizeof(perr));
	} else {
		jp->plan = baseline_single_tree(t, bytes, 0);
		snprintf(perr, sizeof(perr), "single-tree: %s", strerror(errno));
	}
	if (jp->plan == NULL) {
		rc = errno == ENOMEM ? -ENOMEM : errno == EIO ? -EIO : -ENOENT;
		return json_util_failrc(rc, err, errlen, "job %u: %s", j->id, perr);
	}
	rc = plan_validate(t, jp->plan, j->algo == DEPLOY_ALGO_MTREE ? j->max_height_ms : 0, perr,
			   sizeof(perr));
	if (rc != 0)
		return json_util_failrc(rc, err, errlen, "job %u: the %s plan is invalid: %s",
					j->id, deploy_algo_name(j->algo), perr);
	/* BlueConnect's prediction is its own model's, of the LAN hand-off and the WAN. */
	rc = j->algo == DEPLOY_ALGO_BLUECONNECT && topo_worker_sites(t) > 1
		     ? 0 : plan_predict(t, jp->plan, wire_bytes(j, bytes), 0);
	if (rc != 0)
		return json_util_failrc(rc, err, errlen, "job %u: prediction failed: %s", j->id,
					strerror(-rc));
	jp->plan->bytes = bytes;
	/* What the plan reaches of the most any set of trees could carry here (metrics). */
	jp->bound_gbps = topo_worker_sites(t) > 1 ? plan_packing_bound(t, NULL) : -1;
	return 0;
}

/* Whether the deployment protects the topology link between the nodes of deployment
 * gateways u and v. */
static bool
link_sealed(void *arg, int u, int v)
{
	const struct deploy *d = arg;
	int l = topo_link_between(d->topo, d->gateways[u].node, d->gateways[v].node);

	return l >= 0 && d->sealed_links[l];
}

/* Fresh keys for the protected links between the epoch's tables (docs/DEPLOYMENT.md). */
static int
seal_tables(struct jobplan *jp, const struct deploy *d, char *err, size_t errlen)
{
	uint16_t *ids = malloc(sizeof(*ids) * (size_t)jp->n_gateways);
	char terr[TABLE_ERR_MAX];
	int rc;

	if (ids == NULL)
		return json_util_failrc(-ENOMEM, err, errlen, "out of memory");
	for (int g = 0; g < jp->n_gateways; g++)
		ids[g] = d->gateways[g].id;
	rc = table_seal_links(jp->tables, jp->n_gateways, ids, link_sealed, (void *)d,
			      d->seal_aead, terr, sizeof(terr));
	free(ids);
	return rc == 0 ? 0 : json_util_failrc(rc, err, errlen, "job %u: %s", jp->job->id, terr);
}

static int
compile_tables(struct jobplan *jp, const struct deploy *d, const struct deploy_job *j,
	       char *err, size_t errlen)
{
	int n = jp->topo->n_nodes, rc = 0;
	struct table_deploy_node *dn = calloc((size_t)n, sizeof(*dn));
	struct table_worker *ws = malloc(sizeof(*ws) * (size_t)j->n_workers);
	struct table_gw *gws = malloc(sizeof(*gws) * (size_t)d->n_gateways);
	int *gw_of = malloc(sizeof(int) * (size_t)d->n_gateways);
	struct table_deploy td = {
		.n_nodes = n,
		.nodes = dn,
		.elements = j->elements,
		.dtype = j->dtype,
		.lan_dtype = j->lan_dtype,
		.chunk_bytes = j->chunk_bytes,
		.slots_min = j->slots_min,
		.slots_max = j->slots_max,
		.cset_blocks = j->cset_blocks,
		.min_workers = j->min_workers,
	};
	char terr[TABLE_ERR_MAX];
	int k = 0, m = 0;

	if (dn == NULL || ws == NULL || gws == NULL || gw_of == NULL) {
		rc = json_util_failrc(-ENOMEM, err, errlen, "out of memory");
		goto out;
	}
	/* Each planning node: its gateways that are up, in shard order, and its workers. */
	for (int i = 0; i < n; i++) {
		int v = jp->node_of[i];

		dn[i].gateways = gws + m;
		for (int g = d->node_gw[v]; g < d->node_gw[v] + d->node_ngw[v]; g++) {
			const struct deploy_gateway *dg = &d->gateways[g];

			if (!jp->gw_up[g])
				continue;
			gw_of[m] = g;
			gws[m++] = (struct table_gw){ dg->id, dg->ipv4, dg->base_port, dg->ports };
		}
		dn[i].n_gateways = (int)(gws + m - dn[i].gateways);
		dn[i].workers = ws + k;
		for (int w = 0; w < j->n_workers; w++)
			if (j->workers[w].node == v)
				ws[k++] = j->workers[w].w;
		dn[i].n_workers = (int)(ws + k - dn[i].workers);
	}
	for (int i = 0; i < n; i++)
		for (int s = 0; s < dn[i].n_gateways; s++) {
			int g = gw_of[dn[i].gateways + s - gws];
			struct table *tb = j->algo == DEPLOY_ALGO_SELMCAST
						   ? stream_table(jp, d, j, i, &d->gateways[g], terr,
								  sizeof(terr))
						   : table_compile_gateway(jp->topo, jp->plan, &td, i, s,
									   j->id, jp->epoch, terr,
									   sizeof(terr));

			if (tb == NULL) {
				rc = json_util_failrc(errno == ENOMEM ? -ENOMEM : errno == E2BIG ?
						      -E2BIG : -EINVAL, err, errlen,
						      "job %u: gateway %s: %s", j->id,
						      d->gateways[g].name, terr);
				goto out;
			}
			jp->tables[g] = tb;
			jp->n_tables++;
			/* The site's workers read the first table that carries chunks. */
			if (jp->site_table[jp->node_of[i]] < 0 ||
			    (tb->n_trees + tb->n_streams > 0 &&
			     jp->tables[jp->site_table[jp->node_of[i]]]->n_trees +
					     jp->tables[jp->site_table[jp->node_of[i]]]->n_streams ==
				     0))
				jp->site_table[jp->node_of[i]] = g;
		}
	if (d->seal_aead != 0)
		rc = seal_tables(jp, d, err, errlen);
out:
	free(gw_of);
	free(gws);
	free(ws);
	free(dn);
	return rc;
}

int
jobplan_build(const struct deploy *d, int ji, const bool *up, const struct jobplan_link *links,
	      uint32_t epoch, struct jobplan **out, char *err, size_t errlen)
{
	const struct deploy_job *j = &d->jobs[ji];
	struct jobplan *jp = calloc(1, sizeof(*jp));
	int rc;

	if (jp == NULL)
		return json_util_failrc(-ENOMEM, err, errlen, "out of memory");
	jp->job = j;
	jp->epoch = epoch;
	jp->n_nodes = d->topo->n_nodes;
	jp->n_gateways = d->n_gateways;
	jp->tables = calloc((size_t)jp->n_gateways, sizeof(*jp->tables));
	jp->gw_up = calloc((size_t)jp->n_gateways, sizeof(*jp->gw_up));
	jp->site_table = malloc(sizeof(*jp->site_table) * (size_t)jp->n_nodes);
	rc = jp->tables == NULL || jp->gw_up == NULL || jp->site_table == NULL
		     ? json_util_failrc(-ENOMEM, err, errlen, "out of memory") : 0;
	for (int g = 0; rc == 0 && g < jp->n_gateways; g++)
		jp->gw_up[g] = gw_up(up, g);
	for (int v = 0; rc == 0 && v < jp->n_nodes; v++)
		jp->site_table[v] = -1;
	if (rc == 0)
		rc = planning_topo(d, j, up, links, jp, err, errlen);
	if (rc == 0)
		rc = plan_job(jp, j, err, errlen);
	if (rc == 0)
		rc = compile_tables(jp, d, j, err, errlen);
	if (rc != 0) {
		jobplan_free(jp);
		return rc;
	}
	*out = jp;
	return 0;
}

void
jobplan_free(struct jobplan *jp)
{
	if (jp == NULL)
		return;
	for (int g = 0; jp->tables != NULL && g < jp->n_gateways; g++)
		table_free(jp->tables[g]);
	for (int s = 0; s < jp->n_streams; s++) {
		free(jp->streams[s].parent);
		free(jp->streams[s].receiver);
	}
	free(jp->streams);
	free(jp->tables);
	free(jp->gw_up);
	free(jp->site_table);
	plan_free(jp->plan);
	topo_free(jp->topo);
	free(jp->node_of);
	free(jp);
}

char *
jobplan_summary(const struct jobplan *jp, char *buf, size_t len)
{
	const struct plan *p = jp->plan;
	char size[32];
	size_t off;

	plan_fmt_bytes(size, sizeof(size), (double)p->bytes);
	off = (size_t)snprintf(buf, len, "%s: %d tree%s, %.3f Gbit/s, predicted %.3f s for %s, "
			       "%d workers at %d gateways%s", deploy_algo_name(jp->job->algo),
			       p->n_trees, p->n_trees == 1 ? "" : "s", plan_total_rate(p),
			       p->allreduce_seconds, size, jp->n_workers, jp->n_tables, jp->note);
	for (int s = 0; s < jp->n_streams && off < len; s++) {
		int r = 0;

		for (int v = 0; v < jp->topo->n_nodes; v++)
			r += jp->streams[s].receiver[v];
		off += (size_t)snprintf(buf + off, len - off, "%s stream %d from %s to %d site%s "
					"%.3f Gbit/s", s == 0 ? ";" : ",", s,
					jp->topo->nodes[jp->streams[s].source].id, r,
					r == 1 ? "" : "s", jp->streams[s].rate_gbps);
	}
	for (int i = 0; i < p->n_trees && off < len; i++)
		off += (size_t)snprintf(buf + off, len - off, "%s tree %d root %s %.3f Gbit/s share "
					"%.3f height %.1f ms", i == 0 ? ";" : ",", i,
					jp->topo->nodes[p->trees[i].root].id, p->trees[i].rate_gbps,
					p->trees[i].share,
					plan_tree_height_ms(jp->topo, &p->trees[i]));
	return buf;
}

/* A node id as a file name part: anything but [A-Za-z0-9._-] becomes '_'. */
static void
file_part(const char *id, char *out, size_t len)
{
	size_t i;

	for (i = 0; id[i] != '\0' && i + 1 < len; i++) {
		char ch = id[i];

		out[i] = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
			 (ch >= '0' && ch <= '9') || ch == '.' || ch == '-' ? ch : '_';
	}
	out[i] = '\0';
	if (strcmp(out, ".") == 0 || strcmp(out, "..") == 0)
		out[0] = '_';
}

static int
write_file(const char *path, const void *obj, bool is_plan, const struct topo *t, char *err,
	   size_t errlen)
{
	char tmp[DEPLOY_PATH_MAX + 8];
	FILE *f;
	int rc;

	/* Write aside and rename: a reader (a worker following its table) sees the old file
	 * or the new one, never half of one. */
	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	f = fopen(tmp, "w");
	if (f == NULL)
		return json_util_failrc(-errno, err, errlen, "%s: cannot create: %s", tmp,
					strerror(errno));
	/* A table file is for the workers and people: without the link keys. */
	rc = is_plan ? plan_write(t, obj, f) : json_util_dump_new(table_to_json_public(obj), f);
	if (fclose(f) != 0 && rc == 0)
		rc = -errno;
	if (rc == 0 && rename(tmp, path) != 0)
		rc = -errno;
	if (rc != 0) {
		unlink(tmp);
		return json_util_failrc(rc, err, errlen, "%s: write error: %s", path,
					strerror(-rc));
	}
	return 0;
}

int
jobplan_write(const struct jobplan *jp, const struct deploy *d, const char *dir, char *err,
	      size_t errlen)
{
	char path[DEPLOY_PATH_MAX + 1], part[DEPLOY_NAME_MAX + 1];
	int rc;

	if (mkdir(dir, 0777) != 0 && errno != EEXIST)
		return json_util_failrc(-errno, err, errlen, "%s: cannot create: %s", dir,
					strerror(errno));
	snprintf(path, sizeof(path), "%s/job-%u-plan.json", dir, jp->job->id);
	rc = write_file(path, jp->plan, true, jp->topo, err, errlen);
	for (int g = 0; rc == 0 && g < jp->n_gateways; g++) {
		if (jp->tables[g] == NULL)
			continue;
		file_part(d->gateways[g].name, part, sizeof(part));
		snprintf(path, sizeof(path), "%s/job-%u-%s.json", dir, jp->job->id, part);
		rc = write_file(path, jp->tables[g], false, NULL, err, errlen);
	}
	/* A site with several gateways: the table its workers read, under the site's name. */
	for (int v = 0; rc == 0 && v < jp->n_nodes; v++) {
		if (d->node_ngw[v] == 1 || jp->site_table[v] < 0)
			continue;
		file_part(d->topo->nodes[v].id, part, sizeof(part));
		snprintf(path, sizeof(path), "%s/job-%u-%s.json", dir, jp->job->id, part);
		rc = write_file(path, jp->tables[jp->site_table[v]], false, NULL, err, errlen);
	}
	return rc;
}
