/* SPDX-License-Identifier: BSD-3-Clause
 * The table compiler of the control side: one gateway's forwarding table for one job and
 * epoch, from a topology, a plan and a deployment, with its chunk split and slot pools.
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "jsonutil.h"
#include "table_compile.h"

/* The largest power of two <= x (x >= 1). */
static uint32_t
pow2_floor(uint32_t x)
{
	uint32_t p = 1;

	while (p <= x / 2)
		p <<= 1;
	return p;
}

static uint32_t
pow2_ceil(uint32_t x)
{
	uint32_t p = 1;

	while (p < x && p < (1u << 31))
		p <<= 1;
	return p;
}

struct split_item {
	int tree;
	double frac;
};

static int
cmp_split(const void *a, const void *b)
{
	const struct split_item *x = a, *y = b;

	if (x->frac != y->frac)
		return x->frac > y->frac ? -1 : 1;
	return (x->tree > y->tree) - (x->tree < y->tree);
}

int
table_split_chunks(const struct plan *p, uint32_t n_chunks, uint32_t *first, uint32_t *count)
{
	struct split_item *items;
	double sum = 0;
	uint64_t given = 0, left;
	int n = p->n_trees, positive = 0, n_items = 0;

	if (n <= 0)
		return -EINVAL;
	for (int i = 0; i < n; i++) {
		double s = p->trees[i].share;

		if (!(isfinite(s) && s >= 0))
			return -EINVAL;
		sum += s;
		positive += s > 0;
	}
	if (!(sum > 0 && isfinite(sum)))
		return -EINVAL;
	items = malloc(sizeof(*items) * (size_t)n);
	if (items == NULL)
		return -ENOMEM;
	/* Quotas, floors, and the remainders of the trees with a share. */
	for (int i = 0; i < n; i++) {
		double q = p->trees[i].share / sum * n_chunks, f = floor(q);

		if (f > n_chunks)
			f = n_chunks;
		count[i] = (uint32_t)f;
		given += count[i];
		if (p->trees[i].share > 0)
			items[n_items++] = (struct split_item){ .tree = i, .frac = q - f };
	}
	/* Rounding can only push the floors over n_chunks by a hair: take it back from the
	 * largest counts. */
	while (given > n_chunks) {
		int big = 0;

		for (int i = 1; i < n; i++)
			if (count[i] > count[big])
				big = i;
		count[big]--;
		given--;
	}
	qsort(items, (size_t)n_items, sizeof(*items), cmp_split);
	left = n_chunks - given;
	for (int k = 0; left > 0; k = (k + 1) % n_items, left--)
		count[items[k].tree]++;
	free(items);
	/* Every tree with a share gets a chunk if there are enough of them. */
	if ((uint32_t)positive <= n_chunks) {
		for (int i = 0; i < n; i++) {
			int big = -1;

			if (!(p->trees[i].share > 0) || count[i] > 0)
				continue;
			for (int j = 0; j < n; j++)
				if (count[j] >= 2 && (big < 0 || count[j] > count[big]))
					big = j;
			if (big < 0)
				break; /* cannot happen: n_chunks >= positive */
			count[big]--;
			count[i]++;
		}
	}
	for (uint64_t i = 0, at = 0; i < (uint64_t)n; i++) {
		first[i] = (uint32_t)at;
		at += count[i];
	}
	return 0;
}

uint32_t
table_slots(double rate_gbps, double hold_ms, uint32_t chunk_bytes, uint32_t slots_min,
	    uint32_t slots_max)
{
	uint32_t lo, hi;
	double need;

	hi = slots_max == 0 || slots_max > TABLE_SLOTS_MAX ? TABLE_SLOTS_MAX : pow2_floor(slots_max);
	lo = slots_min == 0 ? 1 : pow2_ceil(slots_min);
	if (lo > hi)
		lo = hi;
	if (!(isfinite(rate_gbps) && rate_gbps >= 0 && isfinite(hold_ms) && hold_ms >= 0) ||
	    chunk_bytes == 0)
		return hi;
	/* Gbit/s * ms = 1e9 / 8 bytes/s * 1e-3 s = 125000 bytes. */
	need = ceil(rate_gbps * hold_ms * 125000.0 / chunk_bytes);
	if (need >= hi)
		return hi;
	if (need <= lo)
		return lo;
	return pow2_ceil((uint32_t)need);
}

/* Latency from v up to the root of tr along parent links, or -1 if the chain breaks. */
static double
up_ms(const struct topo *t, const struct plan_tree *tr, int v)
{
	double lat = 0;

	for (int steps = 0; tr->parent[v] != PLAN_ROOT; steps++) {
		int u = tr->parent[v], l;

		if (u < 0 || u >= t->n_nodes || steps > t->n_nodes)
			return -1;
		l = topo_link_between(t, v, u);
		if (l < 0)
			return -1;
		lat += t->links[l].latency_ms;
		v = u;
	}
	return lat;
}

double
table_hold_ms(const struct topo *t, const struct plan_tree *tr, int v, const bool *in_tree,
	      const bool *has_workers)
{
	double up, down = 0;

	if (v < 0 || v >= t->n_nodes || tr->parent[v] == PLAN_ABSENT ||
	    (in_tree != NULL && !in_tree[v]))
		return -1;
	up = up_ms(t, tr, v);
	if (up < 0)
		return -1;
	for (int u = 0; u < t->n_nodes; u++) {
		double lat = 0;
		int w = u, steps = 0;
		bool workers;

		if (tr->parent[u] == PLAN_ABSENT || (in_tree != NULL && !in_tree[u]))
			continue;
		/* Walk up from u: is v on the way, and how far? */
		while (w != v && tr->parent[w] >= 0 && steps++ <= t->n_nodes) {
			int l = topo_link_between(t, w, tr->parent[w]);

			if (l < 0)
				break;
			lat += t->links[l].latency_ms;
			w = tr->parent[w];
		}
		if (w != v)
			continue;
		workers = has_workers != NULL ? has_workers[u] : t->nodes[u].workers > 0;
		if (workers)
			lat += t->nodes[u].lan_latency_ms;
		if (lat > down)
			down = lat;
	}
	return 2 * (up + down);
}

struct compile {
	const struct topo *t;
	const struct plan *p;
	const struct table_deploy *d;
	char *err;
	size_t errlen;
};

/* Write a one-line message into the compile's err buffer; returns -code. */
static int cfail(struct compile *c, int code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int
cfail(struct compile *c, int code, const char *fmt, ...)
{
	char msg[TABLE_ERR_MAX];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	json_util_fail(c->err, c->errlen, "%s", msg);
	return -code;
}

/* The deployment's own rules, checked for every node so that every gateway's compile
 * gives the same verdict. */
static int
check_deploy(struct compile *c)
{
	const struct topo *t = c->t;
	const struct table_deploy *d = c->d;
	uint64_t *seen;
	int total = 0, rc = 0;
	char ip[16];

	seen = calloc(65536 / 64, sizeof(*seen));
	if (seen == NULL)
		return cfail(c, ENOMEM, "out of memory");
	for (int v = 0; v < t->n_nodes && rc == 0; v++) {
		const struct table_deploy_node *dn = &d->nodes[v];
		const char *id = t->nodes[v].id;

		if (dn->gateway_id == 0 || dn->gateway_id > TABLE_ID_MAX)
			rc = cfail(c, EINVAL, "deploy.nodes[%d] ('%s').gateway_id: must be in [1, %d]",
				   v, id, TABLE_ID_MAX);
		else if (seen[dn->gateway_id / 64] & (1ull << (dn->gateway_id % 64)))
			rc = cfail(c, EINVAL, "deploy.nodes[%d] ('%s').gateway_id: id %u is used twice",
				   v, id, dn->gateway_id);
		else if (!table_ipv4_unicast(dn->ipv4))
			rc = cfail(c, EINVAL, "deploy.nodes[%d] ('%s').ipv4: %s is not a unicast "
				   "address", v, id, table_ipv4_format(dn->ipv4, ip));
		else if (dn->base_port == 0 || dn->ports == 0 || dn->ports > TABLE_PORTS_MAX ||
			 (uint32_t)dn->base_port + dn->ports - 1 > 65535)
			rc = cfail(c, EINVAL, "deploy.nodes[%d] ('%s').ports: base_port %u and %u "
				   "ports must make a range inside [1, 65535] of at most %d ports", v,
				   id, dn->base_port, dn->ports, TABLE_PORTS_MAX);
		else if (dn->n_workers < 0 || (dn->n_workers > 0 && dn->workers == NULL))
			rc = cfail(c, EINVAL, "deploy.nodes[%d] ('%s').workers: bad worker array", v,
				   id);
		else if (dn->n_workers > TABLE_WORKERS_MAX)
			rc = cfail(c, E2BIG, "deploy.nodes[%d] ('%s').workers: %d workers, more than "
				   "the table limit %d", v, id, dn->n_workers, TABLE_WORKERS_MAX);
		if (rc != 0)
			break;
		seen[dn->gateway_id / 64] |= 1ull << (dn->gateway_id % 64);
		for (int u = 0; u < v; u++)
			if (d->nodes[u].ipv4 == dn->ipv4) {
				rc = cfail(c, EINVAL, "deploy.nodes[%d] ('%s').ipv4: %s is also the "
					   "gateway of nodes[%d] ('%s')", v, id,
					   table_ipv4_format(dn->ipv4, ip), u, t->nodes[u].id);
				break;
			}
		total += dn->n_workers;
	}
	/* Worker ids: unique in the deployment and distinct from every gateway id. */
	for (int v = 0; v < t->n_nodes && rc == 0; v++) {
		const struct table_deploy_node *dn = &d->nodes[v];

		for (int k = 0; k < dn->n_workers && rc == 0; k++) {
			const struct table_worker *w = &dn->workers[k];

			if (w->id == 0 || w->id > TABLE_ID_MAX ||
			    (seen[w->id / 64] & (1ull << (w->id % 64))))
				rc = cfail(c, EINVAL, "deploy.nodes[%d] ('%s').workers[%d].id: %u is %s",
					   v, t->nodes[v].id, k, w->id,
					   w->id == 0 || w->id > TABLE_ID_MAX ?
					   "reserved (ids are 1 .. 65534)" :
					   "already a gateway or worker id");
			else if (!table_ipv4_unicast(w->ipv4))
				rc = cfail(c, EINVAL, "deploy.nodes[%d] ('%s').workers[%d].ipv4: %s is "
					   "not a unicast address", v, t->nodes[v].id, k,
					   table_ipv4_format(w->ipv4, ip));
			else if (w->port == 0)
				rc = cfail(c, EINVAL, "deploy.nodes[%d] ('%s').workers[%d].port: must be "
					   "in [1, 65535]", v, t->nodes[v].id, k);
			for (int j = 0; j < k && rc == 0; j++)
				if (dn->workers[j].ipv4 == w->ipv4 && dn->workers[j].port == w->port)
					rc = cfail(c, EINVAL, "deploy.nodes[%d] ('%s').workers[%d]: "
						   "%s:%u is also workers[%d]", v, t->nodes[v].id, k,
						   table_ipv4_format(w->ipv4, ip), w->port, j);
			seen[w->id / 64] |= 1ull << (w->id % 64);
		}
	}
	free(seen);
	if (rc == 0 && total == 0)
		rc = cfail(c, EINVAL, "deploy.nodes: the job has no workers");
	if (rc == 0 && d->cset_blocks > TABLE_CSET_BLOCKS_MAX)
		rc = cfail(c, EINVAL, "deploy.cset_blocks: %u, at most %d", d->cset_blocks,
			   TABLE_CSET_BLOCKS_MAX);
	if (rc == 0 && d->min_workers != 0 && d->cset_blocks == 0)
		rc = cfail(c, EINVAL, "deploy.min_workers: a partial reduce needs contributor sets "
			   "(cset_blocks >= 1)");
	for (int v = 0; v < t->n_nodes && rc == 0 && d->cset_blocks != 0; v++)
		for (int k = 0; k < d->nodes[v].n_workers && rc == 0; k++)
			if (d->nodes[v].workers[k].id >= 256u * d->cset_blocks)
				rc = cfail(c, EINVAL, "deploy.nodes[%d] ('%s').workers[%d].id: %u is "
					   "outside contributor sets of %u blocks", v, t->nodes[v].id,
					   k, d->nodes[v].workers[k].id, d->cset_blocks);
	return rc;
}

/* Mark the nodes of tree tr that stay in it: those whose subtree holds a worker of the
 * deployment (walking up from every worker site). Also counts the workers below each
 * node. Fails if a node with workers is absent from the tree. */
static int
prune_tree(struct compile *c, int i, bool *active, uint32_t *below)
{
	const struct plan_tree *tr = &c->p->trees[i];
	const struct topo *t = c->t;

	memset(active, 0, sizeof(*active) * (size_t)t->n_nodes);
	memset(below, 0, sizeof(*below) * (size_t)t->n_nodes);
	for (int v = 0; v < t->n_nodes; v++) {
		int n = c->d->nodes[v].n_workers, u = v;

		if (n == 0)
			continue;
		if (tr->parent[v] == PLAN_ABSENT)
			return cfail(c, EINVAL, "deploy.nodes[%d] ('%s'): has %d workers but plan "
				     "trees[%d] does not reach the site", v, t->nodes[v].id, n, i);
		/* plan_validate() checked that the chain reaches the root without cycles. */
		while (u >= 0) {
			active[u] = true;
			below[u] += (uint32_t)n;
			u = tr->parent[u];
		}
	}
	return 0;
}

/* With contributor sets: the workers below child gateway u of tree tr (the workers of
 * u's subtree), ascending, into e's entries from *k on as those of children[j]. Worker
 * ids are below 256 * cset_blocks (check_deploy()). */
static void
fill_below(const struct compile *c, const struct plan_tree *tr, int u, struct table_tree *e,
	   int j, int *k)
{
	uint64_t ids[(TABLE_BELOW_MAX + 1) / 64] = { 0 };

	for (int w = 0; w < c->t->n_nodes; w++) {
		const struct table_deploy_node *dn = &c->d->nodes[w];
		int v = w;

		if (dn->n_workers == 0)
			continue;
		while (v >= 0 && v != u)
			v = tr->parent[v];
		for (int m = 0; v == u && m < dn->n_workers; m++)
			ids[dn->workers[m].id / 64] |= 1ull << (dn->workers[m].id % 64);
	}
	for (int id = 1; id <= TABLE_BELOW_MAX; id++)
		if (ids[id / 64] >> (id % 64) & 1) {
			e->below[*k] = (uint16_t)id;
			e->below_child[*k] = (uint8_t)j;
			(*k)++;
		}
}

struct table *
table_compile(const struct topo *t, const struct plan *p, const struct table_deploy *d,
	      int node, uint32_t job, uint32_t epoch, char *err, size_t errlen)
{
	struct compile c = { .t = t, .p = p, .d = d, .err = err, .errlen = errlen };
	int n_children[TABLE_TREES_MAX], n_workers[TABLE_TREES_MAX], tree_of[TABLE_TREES_MAX];
	int n_below[TABLE_TREES_MAX];
	uint32_t *first = NULL, *count = NULL, *below = NULL, chunk_elements, smin, smax;
	bool *active = NULL, *has_workers = NULL;
	int *kids_of = NULL;
	char msg[TABLE_ERR_MAX];
	struct table *tb = NULL;
	uint64_t n_chunks;
	size_t esize;
	int rc, n_trees = 0, carrying = 0;

	if (t == NULL || p == NULL || d == NULL) {
		rc = cfail(&c, EINVAL, "table_compile: no topology, plan or deployment");
		goto out;
	}
	if (node < 0 || node >= t->n_nodes) {
		rc = cfail(&c, EINVAL, "node %d: not a node of topology '%s' (%d nodes)", node,
			   t->name, t->n_nodes);
		goto out;
	}
	if (d->n_nodes != t->n_nodes || d->nodes == NULL) {
		rc = cfail(&c, EINVAL, "deploy.nodes: %d entries, the topology has %d nodes",
			   d->n_nodes, t->n_nodes);
		goto out;
	}
	if (plan_validate(t, p, 0, msg, sizeof(msg)) != 0) {
		rc = cfail(&c, EINVAL, "plan: %s", msg);
		goto out;
	}
	esize = table_dtype_unit_bytes(d->dtype); /* an element, or an MX block */
	if (esize == 0) {
		rc = cfail(&c, EINVAL, "deploy.dtype: %d is not a dtype", (int)d->dtype);
		goto out;
	}
	if (d->chunk_bytes == 0 || d->chunk_bytes % esize != 0 ||
	    d->chunk_bytes > TABLE_CHUNK_BYTES_MAX) {
		rc = cfail(&c, EINVAL, "deploy.chunk_bytes: %" PRIu32 " is not a multiple of %zu "
			   "(%s) in [%zu, %d]", d->chunk_bytes, esize, table_dtype_name(d->dtype),
			   esize, TABLE_CHUNK_BYTES_MAX);
		goto out;
	}
	chunk_elements = d->chunk_bytes / (uint32_t)esize * table_dtype_granule(d->dtype);
	if (d->elements % table_dtype_granule(d->dtype) != 0) {
		rc = cfail(&c, EINVAL, "deploy.elements: %" PRIu64 " is not a whole number of %s "
			   "blocks", d->elements, table_dtype_name(d->dtype));
		goto out;
	}
	n_chunks = d->elements / chunk_elements + (d->elements % chunk_elements != 0);
	if (d->elements == 0 || d->elements > INT64_MAX || n_chunks > UINT32_MAX) {
		rc = cfail(&c, EINVAL, "deploy.elements: %" PRIu64 " elements must be >= 1 and make "
			   "at most %" PRIu32 " chunks", d->elements, UINT32_MAX);
		goto out;
	}
	smax = d->slots_max == 0 ? TABLE_SLOTS_MAX : d->slots_max;
	smin = d->slots_min == 0 ? TABLE_SLOTS_MIN : d->slots_min;
	if (smax > TABLE_SLOTS_MAX || smin > smax) {
		rc = cfail(&c, EINVAL, "deploy.slots_max: slots_min %" PRIu32 " and slots_max %"
			   PRIu32 " must satisfy slots_min <= slots_max <= %d", smin, smax,
			   TABLE_SLOTS_MAX);
		goto out;
	}
	smax = pow2_floor(smax);
	rc = check_deploy(&c);
	if (rc != 0)
		goto out;
	first = calloc((size_t)p->n_trees, sizeof(*first));
	count = calloc((size_t)p->n_trees, sizeof(*count));
	below = calloc((size_t)t->n_nodes, sizeof(*below));
	active = calloc((size_t)t->n_nodes, sizeof(*active));
	has_workers = calloc((size_t)t->n_nodes, sizeof(*has_workers));
	kids_of = calloc((size_t)t->n_nodes, sizeof(*kids_of));
	if (first == NULL || count == NULL || below == NULL || active == NULL ||
	    has_workers == NULL || kids_of == NULL) {
		rc = cfail(&c, ENOMEM, "out of memory");
		goto out;
	}
	for (int v = 0; v < t->n_nodes; v++)
		has_workers[v] = d->nodes[v].n_workers > 0;
	rc = table_split_chunks(p, (uint32_t)n_chunks, first, count);
	if (rc != 0) {
		rc = cfail(&c, -rc, "plan: trees[].share: cannot split %" PRIu64 " chunks by these "
			   "shares", n_chunks);
		goto out;
	}
	/* Which trees carry chunks and hold this node; the shape of its entry in each. */
	for (int i = 0; i < p->n_trees; i++) {
		const struct plan_tree *tr = &p->trees[i];
		int ch = 0;

		if (count[i] == 0)
			continue;
		if (++carrying > TABLE_TREES_MAX) {
			rc = cfail(&c, E2BIG, "plan: more than %d trees carry chunks (the table "
				   "limit)", TABLE_TREES_MAX);
			goto out;
		}
		if (!(isfinite(tr->rate_gbps) && tr->rate_gbps > 0)) {
			rc = cfail(&c, EINVAL, "plan: trees[%d].rate_gbps: a tree that carries "
				   "chunks needs a rate > 0", i);
			goto out;
		}
		rc = prune_tree(&c, i, active, below);
		if (rc != 0)
			goto out;
		memset(kids_of, 0, sizeof(*kids_of) * (size_t)t->n_nodes);
		for (int w = 0; w < t->n_nodes; w++)
			if (active[w] && tr->parent[w] >= 0)
				kids_of[tr->parent[w]]++;
		for (int u = 0; u < t->n_nodes; u++) {
			int kids = kids_of[u];

			if (!active[u])
				continue;
			if (kids > TABLE_CHILDREN_MAX) {
				rc = cfail(&c, E2BIG, "plan: trees[%d]: node '%s' has %d child "
					   "gateways, more than the table limit %d", i,
					   t->nodes[u].id, kids, TABLE_CHILDREN_MAX);
				goto out;
			}
			if (kids + d->nodes[u].n_workers > TABLE_CONTRIB_MAX) {
				rc = cfail(&c, E2BIG, "plan: trees[%d]: node '%s' expects %d "
					   "contributions, more than the table limit %d", i,
					   t->nodes[u].id, kids + d->nodes[u].n_workers,
					   TABLE_CONTRIB_MAX);
				goto out;
			}
			if (u == node)
				ch = kids;
		}
		if (!active[node])
			continue;
		tree_of[n_trees] = i;
		n_children[n_trees] = ch;
		n_workers[n_trees] = d->nodes[node].n_workers;
		/* With sets, every worker of the subtree is local or below a child. */
		n_below[n_trees] = d->cset_blocks != 0 ? (int)below[node] - n_workers[n_trees] : 0;
		n_trees++;
	}
	tb = table_create_full(n_trees, n_children, n_workers, n_below, 0);
	if (tb == NULL) {
		rc = cfail(&c, errno, "out of memory");
		goto out;
	}
	tb->job = job;
	tb->epoch = epoch;
	tb->gw = (struct table_gw){ .id = d->nodes[node].gateway_id, .ipv4 = d->nodes[node].ipv4,
				    .base_port = d->nodes[node].base_port,
				    .ports = d->nodes[node].ports };
	tb->dtype = d->dtype;
	tb->elements = d->elements;
	tb->chunk_elements = chunk_elements;
	tb->limits = (struct table_limits){ .max_trees = TABLE_TREES_MAX,
					    .max_children = TABLE_CHILDREN_MAX,
					    .max_workers = TABLE_WORKERS_MAX, .max_slots = smax };
	tb->cset_blocks = d->cset_blocks;
	for (int k = 0; k < n_trees; k++) {
		const struct plan_tree *tr = &p->trees[tree_of[k]];
		struct table_tree *e = &tb->trees[k];
		int par = tr->parent[node], j = 0, nb = 0;
		double hold;

		(void)prune_tree(&c, tree_of[k], active, below); /* succeeded above */
		e->id = (uint16_t)tree_of[k];
		e->has_parent = par != PLAN_ROOT;
		if (e->has_parent) {
			const struct table_deploy_node *pn = &d->nodes[par];

			e->parent = (struct table_gw){ .id = pn->gateway_id, .ipv4 = pn->ipv4,
						       .base_port = pn->base_port,
						       .ports = pn->ports };
		}
		for (int u = 0; u < t->n_nodes; u++) {
			const struct table_deploy_node *cn = &d->nodes[u];

			if (!active[u] || tr->parent[u] != node)
				continue;
			if (e->n_below > 0)
				fill_below(&c, tr, u, e, j, &nb);
			e->child_workers[j] = below[u];
			e->children[j++] = (struct table_gw){ .id = cn->gateway_id, .ipv4 = cn->ipv4,
							      .base_port = cn->base_port,
							      .ports = cn->ports };
		}
		for (int w = 0; w < e->n_workers; w++) {
			const struct table_worker *src = &d->nodes[node].workers[w];

			/* Field by field: the padding stays zero, the block is deterministic. */
			e->workers[w].id = src->id;
			e->workers[w].ipv4 = src->ipv4;
			e->workers[w].port = src->port;
		}
		e->role = !e->has_parent ? TABLE_ROLE_ROOT :
			  e->n_children > 0 ? TABLE_ROLE_INTERIOR : TABLE_ROLE_LEAF;
		e->expected = (uint32_t)(e->n_workers + e->n_children);
		e->subtree_workers = below[node];
		e->chunk_first = first[tree_of[k]];
		e->chunk_count = count[tree_of[k]];
		e->rate_gbps = tr->rate_gbps;
		hold = table_hold_ms(t, tr, node, active, has_workers);
		/* The window is the formula's pool; the pool is twice that (within the cap),
		 * so that a lost chunk does not stop the window until it is resent. */
		e->window = table_slots(tr->rate_gbps, hold, d->chunk_bytes, smin, smax);
		e->slots = e->window <= smax / 2 ? 2 * e->window : e->window;
		if (!e->has_parent && d->min_workers != 0 && d->min_workers < e->subtree_workers)
			e->threshold = d->min_workers;
		/* A partial reduce holds every chunk of its tree (within the cap), so that the
		 * RESULTs of a round stay until the next round: a straggler up to a round
		 * behind gets each of them. */
		if (d->min_workers != 0 && e->chunk_count > e->slots)
			e->slots = pow2_ceil(e->chunk_count) < smax ? pow2_ceil(e->chunk_count) : smax;
	}
	if (table_validate(tb, msg, sizeof(msg)) != 0) {
		/* The deployment checks above should make this unreachable. */
		rc = cfail(&c, EINVAL, "node '%s': compiled table is invalid: %s", t->nodes[node].id,
			   msg);
		goto out;
	}
	rc = 0;
out:
	free(first);
	free(count);
	free(below);
	free(active);
	free(has_workers);
	free(kids_of);
	if (rc != 0) {
		table_free(tb);
		errno = -rc;
		return NULL;
	}
	return tb;
}

/* n random bytes from the kernel's CSPRNG. */
static int
random_bytes(void *buf, size_t n)
{
	uint8_t *p = buf;

	while (n > 0) {
		ssize_t r = getrandom(p, n, 0);

		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return -EIO;
		p += r;
		n -= (size_t)r;
	}
	return 0;
}

/* Whether gateway id is a parent, child, `from` or `to` of table tb. */
static bool
names_gateway(const struct table *tb, uint16_t id)
{
	for (int i = 0; i < tb->n_trees; i++) {
		const struct table_tree *e = &tb->trees[i];

		if (e->has_parent && e->parent.id == id)
			return true;
		for (int c = 0; c < e->n_children; c++)
			if (e->children[c].id == id)
				return true;
	}
	for (int i = 0; i < tb->n_streams; i++) {
		const struct table_stream *s = &tb->streams[i];

		if (s->has_from && s->from.id == id)
			return true;
		for (int k = 0; k < s->n_to; k++)
			if (s->to[k].id == id)
				return true;
	}
	return false;
}

/* Put sl into tb's sealed entries, which stay sorted by peer. */
static int
seal_insert(struct table *tb, const struct table_seal *sl)
{
	int k = tb->n_seals;

	if (k >= TABLE_SEALS_MAX)
		return -E2BIG;
	while (k > 0 && tb->seals[k - 1].peer > sl->peer) {
		tb->seals[k] = tb->seals[k - 1];
		k--;
	}
	tb->seals[k] = *sl;
	tb->n_seals++;
	return 0;
}

int
table_seal_links(struct table **tables, int n, const uint16_t *gw_ids,
		 bool (*is_protected)(void *arg, int u, int v), void *arg,
		 enum table_aead aead, char *err, size_t errlen)
{
	for (int u = 0; u < n; u++)
		for (int v = u + 1; tables[u] != NULL && v < n; v++) {
			struct table_seal sl = { .peer = gw_ids[v], .aead = aead };
			int rc = 0;

			if (tables[v] == NULL || !names_gateway(tables[u], gw_ids[v]) ||
			    !names_gateway(tables[v], gw_ids[u]) || !is_protected(arg, u, v))
				continue;
			while (rc == 0 && sl.key_id == 0)
				rc = random_bytes(&sl.key_id, sizeof(sl.key_id));
			if (rc == 0)
				rc = random_bytes(sl.key, table_aead_key_len(aead));
			if (rc != 0) {
				explicit_bzero(&sl, sizeof(sl));
				json_util_fail(err, errlen, "no randomness for a link key "
					       "(getrandom: %s)", strerror(errno));
				return -EIO;
			}
			rc = seal_insert(tables[u], &sl);
			sl.peer = gw_ids[u];
			if (rc == 0)
				rc = seal_insert(tables[v], &sl);
			explicit_bzero(&sl, sizeof(sl));
			if (rc != 0) {
				json_util_fail(err, errlen, "more than %d protected links at one "
					       "gateway", TABLE_SEALS_MAX);
				return rc;
			}
		}
	return 0;
}
