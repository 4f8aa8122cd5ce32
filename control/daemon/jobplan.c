/* SPDX-License-Identifier: BSD-3-Clause
 *
 * Planning one job for one epoch and compiling its tables (jobplan.h): the planning
 * topology, the plan of the job's algorithm (the ring's chain trees and CREW's stars in
 * jobplan_trees.c, selmcast's streams and their tables in jobplan_mcast.c), the tables, and
 * the files of an epoch for the workers.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "baselines.h"
#include "blueconnect.h"
#include "jobplan.h"
#include "jobplan_mcast.h"
#include "jobplan_trees.h"
#include "jsonutil.h"
#include "mtree.h"
#include "report.h"
#include "revision.h"
#include "table_compile.h"
#include "wire.h"

/* ---- planning a job ------------------------------------------------------------------ */

/* What the links carry of a tensor of `bytes`: every packet of chunk_bytes of payload
 * travels with WIRE_FRAME_PAYLOAD_OFF bytes of Ethernet, IPv4, UDP and georeduce header
 * (6.8% at 1408 B) and the job's contributor set, which the capacities must also carry. */
static uint64_t
wire_bytes(const struct deploy_job *j, uint64_t bytes)
{
	double wire = (double)(j->chunk_bytes + WIRE_FRAME_PAYLOAD_OFF +
			       j->cset_blocks * WIRE_CSET_BLOCK) /
		      (double)j->chunk_bytes;

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
		rc = json_util_failrc(-ENOENT, err, errlen,
				      "job %u: no worker at a gateway that "
				      "is up",
				      j->id);
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
		snprintf(jp->note, sizeof(jp->note),
			 "; the planner's cheapest, %s at %.3f s, has "
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
	if (j->algo == DEPLOY_ALGO_SELMCAST) {
		rc = jobplan_selmcast_streams(jp, j,
					      (double)(j->chunk_bytes + WIRE_FRAME_PAYLOAD_OFF) /
						      (double)j->chunk_bytes,
					      err, errlen);
		if (rc == 0 && (rc = jobplan_streams_validate(t, jp, perr, sizeof(perr))) != 0)
			return json_util_failrc(rc, err, errlen,
						"job %u: the selmcast plan is invalid: %s", j->id,
						perr);
		return rc;
	}
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
		jp->plan = jobplan_crew_stars(t, bytes, perr, sizeof(perr));
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
	rc = j->algo == DEPLOY_ALGO_BLUECONNECT && topo_worker_sites(t) > 1 ?
		     0 :
		     plan_predict(t, jp->plan, wire_bytes(j, bytes), 0);
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
	rc = table_seal_links(jp->tables, jp->n_gateways, ids, link_sealed, (void *)d, d->seal_aead,
			      terr, sizeof(terr));
	free(ids);
	return rc == 0 ? 0 : json_util_failrc(rc, err, errlen, "job %u: %s", jp->job->id, terr);
}

static int
worker_cmp(const void *a, const void *b)
{
	const struct table_worker *x = a, *y = b;

	return (x->id > y->id) - (x->id < y->id);
}

uint32_t
jobplan_membership(const struct table_worker *ws, int n)
{
	struct table_worker *s = malloc(sizeof(*s) * (size_t)(n > 0 ? n : 1));
	uint32_t h = 2166136261u; /* FNV-1a, 32 bits */

	if (s == NULL)
		return 0;
	memcpy(s, ws, sizeof(*s) * (size_t)n);
	qsort(s, (size_t)n, sizeof(*s), worker_cmp);
	for (int i = 0; i < n; i++) {
		const uint8_t b[8] = {(uint8_t)(s[i].id >> 8),    (uint8_t)s[i].id,
				      (uint8_t)(s[i].ipv4 >> 24), (uint8_t)(s[i].ipv4 >> 16),
				      (uint8_t)(s[i].ipv4 >> 8),  (uint8_t)s[i].ipv4,
				      (uint8_t)(s[i].port >> 8),  (uint8_t)s[i].port};

		for (int k = 0; k < 8; k++)
			h = (h ^ b[k]) * 16777619u;
	}
	free(s);
	return h != 0 ? h : 1;
}

static int
compile_tables(struct jobplan *jp, const struct deploy *d, const struct deploy_job *j, char *err,
	       size_t errlen)
{
	int n = jp->topo->n_nodes, rc = 0;
	struct table_deploy_node *dn = calloc((size_t)n, sizeof(*dn));
	struct table_worker *ws = calloc((size_t)j->n_workers + 1, sizeof(*ws));
	struct table_gw *gws = malloc(sizeof(*gws) * (size_t)d->n_gateways);
	int *gw_of = malloc(sizeof(int) * (size_t)d->n_gateways);
	struct table_deploy td = {
		.n_nodes = n,
		.nodes = dn,
		.elements = j->elements,
		.dtype = j->dtype,
		.lan_dtype = j->lan_dtype,
		.chunk_bytes = jp->chunk_bytes,
		.slots_min = j->slots_min,
		.slots_max = j->slots_max,
		.cset_blocks = j->cset_blocks,
		.min_workers = j->min_workers,
		.grace_ms = j->grace_ms,
		.grace_adaptive = j->grace_auto,
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
			gws[m++] = (struct table_gw){dg->id, dg->ipv4, dg->base_port, dg->ports};
		}
		dn[i].n_gateways = (int)(gws + m - dn[i].gateways);
		dn[i].workers = ws + k;
		for (int w = 0; w < j->n_workers; w++)
			if (j->workers[w].node == v)
				ws[k++] = j->workers[w].w;
		dn[i].n_workers = (int)(ws + k - dn[i].workers);
	}
	jp->membership = jobplan_membership(ws, k);
	if (jp->membership == 0) {
		rc = json_util_failrc(-ENOMEM, err, errlen, "out of memory");
		goto out;
	}
	for (int i = 0; i < n; i++)
		for (int s = 0; s < dn[i].n_gateways; s++) {
			int g = gw_of[dn[i].gateways + s - gws];
			struct table *tb =
				j->algo == DEPLOY_ALGO_SELMCAST ?
					jobplan_stream_table(jp, d, j, i, &d->gateways[g], terr,
							     sizeof(terr)) :
					table_compile_gateway(jp->topo, jp->plan, &td, i, s, j->id,
							      jp->epoch, terr, sizeof(terr));

			if (tb == NULL) {
				rc = json_util_failrc(errno == ENOMEM ? -ENOMEM :
						      errno == E2BIG  ? -E2BIG :
									-EINVAL,
						      err, errlen, "job %u: gateway %s: %s", j->id,
						      d->gateways[g].name, terr);
				goto out;
			}
			jp->tables[g] = tb;
			jp->n_tables++;
			/* The site's workers read the first table that carries chunks. */
			if (jp->site_table[jp->node_of[i]] < 0 ||
			    (tb->n_trees + tb->n_streams > 0 &&
			     jp->tables[jp->site_table[jp->node_of[i]]]->n_trees +
					     jp->tables[jp->site_table[jp->node_of[i]]]
						     ->n_streams ==
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

uint32_t
jobplan_chunk_bytes(const struct deploy_job *j, unsigned int revision)
{
	uint32_t cap =
		revision_chunk_bytes_max(revision_effective(revision), TABLE_CHUNK_BYTES_MAX);
	uint32_t esz = (uint32_t)table_dtype_unit_bytes(j->dtype);
	uint32_t gran = table_dtype_granule(j->dtype);
	uint32_t elems = cap / esz * gran;

	if (j->lan_dtype != 0 && j->lan_dtype != j->dtype &&
	    (uint64_t)elems * table_dtype_size(j->lan_dtype) > cap)
		elems = (uint32_t)(cap / table_dtype_size(j->lan_dtype) / gran * gran);
	return j->chunk_bytes / esz * gran <= elems ? j->chunk_bytes : elems / gran * esz;
}

/* jobplan_build(), and jobplan_plan_only() where compile is false. */
static int
build(const struct deploy *d, int ji, const bool *up, const struct jobplan_link *links,
      uint32_t epoch, bool compile, struct jobplan **out, char *err, size_t errlen)
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
	rc = jp->tables == NULL || jp->gw_up == NULL || jp->site_table == NULL ?
		     json_util_failrc(-ENOMEM, err, errlen, "out of memory") :
		     0;
	jp->revision = GEOREDUCE_REVISION;
	jp->revision_gw = -1;
	for (int g = 0; rc == 0 && g < jp->n_gateways; g++) {
		jp->gw_up[g] = gw_up(up, g);
		/* Planned within the oldest gateway of the epoch (docs/PROTOCOL.md 12). */
		if (jp->gw_up[g] && (jp->revision_gw < 0 ||
				     revision_effective(d->gateways[g].revision) < jp->revision)) {
			jp->revision = revision_effective(d->gateways[g].revision);
			jp->revision_gw = g;
		}
	}
	jp->chunk_bytes = jobplan_chunk_bytes(j, jp->revision);
	for (int v = 0; rc == 0 && v < jp->n_nodes; v++)
		jp->site_table[v] = -1;
	if (rc == 0)
		rc = planning_topo(d, j, up, links, jp, err, errlen);
	if (rc == 0)
		rc = plan_job(jp, j, err, errlen);
	if (rc == 0 && compile)
		rc = compile_tables(jp, d, j, err, errlen);
	if (rc != 0) {
		jobplan_free(jp);
		return rc;
	}
	*out = jp;
	return 0;
}

int
jobplan_build(const struct deploy *d, int ji, const bool *up, const struct jobplan_link *links,
	      uint32_t epoch, struct jobplan **out, char *err, size_t errlen)
{
	return build(d, ji, up, links, epoch, true, out, err, errlen);
}

int
jobplan_plan_only(const struct deploy *d, int ji, const bool *up, const struct jobplan_link *links,
		  struct jobplan **out, char *err, size_t errlen)
{
	return build(d, ji, up, links, 0, false, out, err, errlen);
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
	off = (size_t)snprintf(buf, len,
			       "%s: %d tree%s, %.3f Gbit/s, predicted %.3f s for %s, "
			       "%d workers at %d gateways%s",
			       deploy_algo_name(jp->job->algo), p->n_trees,
			       p->n_trees == 1 ? "" : "s", plan_total_rate(p), p->allreduce_seconds,
			       size, jp->n_workers, jp->n_tables, jp->note);
	for (int s = 0; s < jp->n_streams && off < len; s++) {
		int r = 0;

		for (int v = 0; v < jp->topo->n_nodes; v++)
			r += jp->streams[s].receiver[v];
		off += (size_t)snprintf(buf + off, len - off,
					"%s stream %d from %s to %d site%s "
					"%.3f Gbit/s",
					s == 0 ? ";" : ",", s,
					jp->topo->nodes[jp->streams[s].source].id, r,
					r == 1 ? "" : "s", jp->streams[s].rate_gbps);
	}
	for (int i = 0; i < p->n_trees && off < len; i++)
		off += (size_t)snprintf(buf + off, len - off,
					"%s tree %d root %s %.3f Gbit/s share "
					"%.3f height %.1f ms",
					i == 0 ? ";" : ",", i, jp->topo->nodes[p->trees[i].root].id,
					p->trees[i].rate_gbps, p->trees[i].share,
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
					 (ch >= '0' && ch <= '9') || ch == '.' || ch == '-' ?
				 ch :
				 '_';
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
