/* SPDX-License-Identifier: BSD-3-Clause
 * The table compiler of the control side: one gateway's forwarding table for one job and
 * epoch, from a topology, a plan and a deployment, with its chunk split and slot pools.
 * The keys of the protected links between an epoch's tables are table_seal.c's.
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

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
			items[n_items++] = (struct split_item){.tree = i, .frac = q - f};
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

	hi = slots_max == 0 || slots_max > TABLE_SLOTS_MAX ? TABLE_SLOTS_MAX :
							     pow2_floor(slots_max);
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
	double up, down = 0, height = 0;

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
	/* The tree's height: the longest way of a contribution to the root (from a worker's
	 * LAN). A chunk at v is done when the root has every contribution and the RESULT is
	 * back: with every worker starting at once, the height plus the way down to v (and
	 * to v's workers). Near the root of a tall tree that is well above twice v's own
	 * way up and down. */
	for (int u = 0; u < t->n_nodes; u++) {
		double lat;

		if (tr->parent[u] == PLAN_ABSENT || (in_tree != NULL && !in_tree[u]))
			continue;
		if (!(has_workers != NULL ? has_workers[u] : t->nodes[u].workers > 0))
			continue;
		lat = up_ms(t, tr, u);
		if (lat >= 0 && lat + t->nodes[u].lan_latency_ms > height)
			height = lat + t->nodes[u].lan_latency_ms;
	}
	bool workers = has_workers != NULL ? has_workers[v] : t->nodes[v].workers > 0;
	double path = height + up + (workers ? t->nodes[v].lan_latency_ms : 0);

	return 2 * (up + down) > path ? 2 * (up + down) : path;
}

struct compile {
	const struct topo *t;
	const struct plan *p;
	const struct table_deploy *d;
	char *err;
	size_t errlen;
};

/* Write a one-line message (at most TABLE_ERR_MAX bytes, as table.h promises) into the
 * compile's err buffer; returns -code. */
static int
cfail(struct compile *c, int code, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

static int
cfail(struct compile *c, int code, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	json_util_vfail(c->err, c->errlen < TABLE_ERR_MAX ? c->errlen : TABLE_ERR_MAX, fmt, ap);
	va_end(ap);
	return -code;
}

/* The number of gateways of a node and its j-th gateway. */
static int
node_ngw(const struct table_deploy_node *dn)
{
	return dn->n_gateways > 0 ? dn->n_gateways : 1;
}

static struct table_gw
node_gw(const struct table_deploy_node *dn, int j)
{
	if (dn->n_gateways > 0)
		return dn->gateways[j];
	return (struct table_gw){.id = dn->gateway_id,
				 .ipv4 = dn->ipv4,
				 .base_port = dn->base_port,
				 .ports = dn->ports};
}

/* "deploy.nodes[1] ('b')" and the gateway field's prefix: ".gateway_id"-style names for a
 * node with its one gateway in the node's fields, ".gateways[j]." for a list. */
static void
gw_field(const struct compile *c, int v, int j, const char *one, const char *many, char *buf,
	 size_t len)
{
	if (c->d->nodes[v].n_gateways > 0)
		snprintf(buf, len, "deploy.nodes[%d] ('%s').gateways[%d].%s", v, c->t->nodes[v].id,
			 j, many);
	else
		snprintf(buf, len, "deploy.nodes[%d] ('%s').%s", v, c->t->nodes[v].id, one);
}

/* Gateway j of node v: its id, address and ports; ids in seen[] so far are taken. */
static int
check_gateway(struct compile *c, int v, int j, uint64_t *seen)
{
	const struct table_gw g = node_gw(&c->d->nodes[v], j);
	char f[160], ip[16];

	if (g.id == 0 || g.id > TABLE_ID_MAX) {
		gw_field(c, v, j, "gateway_id", "id", f, sizeof(f));
		return cfail(c, EINVAL, "%s: must be in [1, %d]", f, TABLE_ID_MAX);
	}
	if (seen[g.id / 64] & (1ull << (g.id % 64))) {
		gw_field(c, v, j, "gateway_id", "id", f, sizeof(f));
		return cfail(c, EINVAL, "%s: id %u is used twice", f, g.id);
	}
	if (!table_ipv4_unicast(g.ipv4)) {
		gw_field(c, v, j, "ipv4", "ipv4", f, sizeof(f));
		return cfail(c, EINVAL, "%s: %s is not a unicast address", f,
			     table_ipv4_format(g.ipv4, ip));
	}
	if (g.base_port == 0 || g.ports == 0 || g.ports > TABLE_PORTS_MAX ||
	    (uint32_t)g.base_port + g.ports - 1 > 65535) {
		gw_field(c, v, j, "ports", "ports", f, sizeof(f));
		return cfail(c, EINVAL,
			     "%s: base_port %u and %u ports must make a range inside "
			     "[1, 65535] of at most %d ports",
			     f, g.base_port, g.ports, TABLE_PORTS_MAX);
	}
	seen[g.id / 64] |= 1ull << (g.id % 64);
	for (int u = 0; u <= v; u++)
		for (int k = 0; k < (u < v ? node_ngw(&c->d->nodes[u]) : j); k++) {
			if (node_gw(&c->d->nodes[u], k).ipv4 != g.ipv4)
				continue;
			gw_field(c, v, j, "ipv4", "ipv4", f, sizeof(f));
			if (c->d->nodes[u].n_gateways > 0)
				return cfail(c, EINVAL,
					     "%s: %s is also gateways[%d] of nodes[%d] "
					     "('%s')",
					     f, table_ipv4_format(g.ipv4, ip), k, u,
					     c->t->nodes[u].id);
			return cfail(c, EINVAL, "%s: %s is also the gateway of nodes[%d] ('%s')", f,
				     table_ipv4_format(g.ipv4, ip), u, c->t->nodes[u].id);
		}
	return 0;
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

		if (dn->n_gateways < 0 || dn->n_gateways > TABLE_SITE_GATEWAYS_MAX ||
		    (dn->n_gateways > 0 && dn->gateways == NULL)) {
			rc = cfail(c, EINVAL,
				   "deploy.nodes[%d] ('%s').gateways: %d gateways, a site "
				   "has 1 to %d",
				   v, id, dn->n_gateways, TABLE_SITE_GATEWAYS_MAX);
			break;
		}
		for (int j = 0; j < node_ngw(dn) && rc == 0; j++)
			rc = check_gateway(c, v, j, seen);
		if (rc != 0)
			break;
		if (dn->n_workers < 0 || (dn->n_workers > 0 && dn->workers == NULL))
			rc = cfail(c, EINVAL, "deploy.nodes[%d] ('%s').workers: bad worker array",
				   v, id);
		else if (dn->n_workers > TABLE_WORKERS_MAX)
			rc = cfail(c, E2BIG,
				   "deploy.nodes[%d] ('%s').workers: %d workers, more than "
				   "the table limit %d",
				   v, id, dn->n_workers, TABLE_WORKERS_MAX);
		total += dn->n_workers;
	}
	/* Worker ids: unique in the deployment and distinct from every gateway id. */
	for (int v = 0; v < t->n_nodes && rc == 0; v++) {
		const struct table_deploy_node *dn = &d->nodes[v];

		for (int k = 0; k < dn->n_workers && rc == 0; k++) {
			const struct table_worker *w = &dn->workers[k];

			if (w->id == 0 || w->id > TABLE_ID_MAX ||
			    (seen[w->id / 64] & (1ull << (w->id % 64))))
				rc = cfail(c, EINVAL,
					   "deploy.nodes[%d] ('%s').workers[%d].id: %u is %s", v,
					   t->nodes[v].id, k, w->id,
					   w->id == 0 || w->id > TABLE_ID_MAX ?
						   "reserved (ids are 1 .. 65534)" :
						   "already a gateway or worker id");
			else if (!table_ipv4_unicast(w->ipv4))
				rc = cfail(c, EINVAL,
					   "deploy.nodes[%d] ('%s').workers[%d].ipv4: %s is "
					   "not a unicast address",
					   v, t->nodes[v].id, k, table_ipv4_format(w->ipv4, ip));
			else if (w->port == 0)
				rc = cfail(c, EINVAL,
					   "deploy.nodes[%d] ('%s').workers[%d].port: must be "
					   "in [1, 65535]",
					   v, t->nodes[v].id, k);
			for (int j = 0; j < k && rc == 0; j++)
				if (dn->workers[j].ipv4 == w->ipv4 &&
				    dn->workers[j].port == w->port)
					rc = cfail(c, EINVAL,
						   "deploy.nodes[%d] ('%s').workers[%d]: "
						   "%s:%u is also workers[%d]",
						   v, t->nodes[v].id, k,
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
		rc = cfail(c, EINVAL,
			   "deploy.min_workers: a partial reduce needs contributor sets "
			   "(cset_blocks >= 1)");
	for (int v = 0; v < t->n_nodes && rc == 0 && d->cset_blocks != 0; v++)
		for (int k = 0; k < d->nodes[v].n_workers && rc == 0; k++)
			if (d->nodes[v].workers[k].id >= 256u * d->cset_blocks)
				rc = cfail(c, EINVAL,
					   "deploy.nodes[%d] ('%s').workers[%d].id: %u is "
					   "outside contributor sets of %u blocks",
					   v, t->nodes[v].id, k, d->nodes[v].workers[k].id,
					   d->cset_blocks);
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
			return cfail(c, EINVAL,
				     "deploy.nodes[%d] ('%s'): has %d workers but plan "
				     "trees[%d] does not reach the site",
				     v, t->nodes[v].id, n, i);
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
fill_below(const struct compile *c, const struct plan_tree *tr, int u, struct table_tree *e, int j,
	   int *k)
{
	uint64_t ids[(TABLE_BELOW_MAX + 1) / 64] = {0};

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

int
table_shard_of(uint64_t c, uint64_t n_chunks, int g)
{
	for (int j = g - 1; j > 0; j--)
		if ((uint64_t)j * n_chunks / (uint64_t)g <= c)
			return j;
	return 0;
}

static int
cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return (x > y) - (x < y);
}

/*
 * The segments of the chunks [0, n): cut at every boundary floor(j n / g) of every node
 * with g > 1 gateways. bounds[0 .. *n_seg] ascending, bounds[0] = 0, bounds[*n_seg] = n.
 * One segment when every node has one gateway. -ENOMEM.
 */
static int
segments(const struct table_deploy *d, uint32_t n, uint32_t **bounds, int *n_seg)
{
	size_t cap = 2;
	uint32_t *b;
	int k = 0, m = 0;

	for (int v = 0; v < d->n_nodes; v++)
		cap += (size_t)node_ngw(&d->nodes[v]) - 1;
	b = malloc(sizeof(*b) * cap);
	if (b == NULL)
		return -ENOMEM;
	b[k++] = 0;
	b[k++] = n;
	for (int v = 0; v < d->n_nodes; v++) {
		int g = node_ngw(&d->nodes[v]);

		for (int j = 1; j < g; j++)
			b[k++] = (uint32_t)((uint64_t)j * n / (uint64_t)g);
	}
	qsort(b, (size_t)k, sizeof(*b), cmp_u32);
	for (int i = 0; i < k; i++)
		if (m == 0 || b[i] != b[m - 1])
			b[m++] = b[i];
	*bounds = b;
	*n_seg = m - 1;
	return 0;
}

/* The window and slot pool of a tree entry (or a shard's tree): the formula's window, the
 * pool TABLE_POOL_WINDOWS times that within the cap; a partial reduce holds every chunk of
 * the tree. */
static void
pool_of(const struct table_deploy *d, double rate, double hold, uint32_t chunk_count, uint32_t smin,
	uint32_t smax, uint32_t *window, uint32_t *slots)
{
	/* The window is the formula's pool; the pool is four windows (within the cap), so
	 * that the window moves on past a lost chunk for the two round trips or so its
	 * repair takes (one until a later chunk's RESULT tells of the loss, one for the
	 * resent chunk), and past several at once. */
	*window = table_slots(rate, hold, d->chunk_bytes, smin, smax);
	*slots = *window;
	while (*slots < TABLE_POOL_WINDOWS * *window && *slots <= pow2_floor(smax) / 2)
		*slots *= 2;
	/* A partial reduce holds every chunk of its tree (within the cap), so that the
	 * RESULTs of a round stay until the next round: a straggler up to a round behind gets
	 * each of them. */
	if (d->min_workers != 0 && chunk_count > *slots)
		*slots = pow2_ceil(chunk_count) < smax ? pow2_ceil(chunk_count) : smax;
}

/* One copy of a plan tree in one segment: what it carries. */
struct pair {
	uint32_t first, count; /* chunks */
	double rate;           /* the plan tree's rate times the segment's part of the chunks */
};

struct table *
table_compile(const struct topo *t, const struct plan *p, const struct table_deploy *d, int node,
	      uint32_t job, uint32_t epoch, char *err, size_t errlen)
{
	return table_compile_gateway(t, p, d, node, 0, job, epoch, err, errlen);
}

/* One gateway's compile (table_compile_gateway()): its inputs, and what each step finds for
 * the next. */
struct gw_compile {
	struct compile c;
	int node, gwi; /* the node, and which of its gateways */
	uint32_t chunk_elements, smin, smax;
	uint64_t n_chunks;
	uint32_t *bounds; /* the segments of the chunks (segments()) */
	int n_seg;
	uint32_t *first, *count;    /* one segment's split among the plan's trees */
	struct pair *pairs;         /* segment k's copy of tree i at k * n_trees + i */
	bool *carries;              /* per tree: it carries chunks */
	uint32_t *below;            /* per node: workers below it (prune_tree()) */
	bool *active, *has_workers; /* per node: in the pruned tree; has workers */
	int *kids_of;               /* per node: its children in the pruned tree */
	int *kids;                  /* per tree: this node's children, -1 if not in it */
	/* This gateway's entries: their pairs and shapes. */
	int n_trees;
	int n_children[TABLE_TREES_MAX], n_workers[TABLE_TREES_MAX], pair_of[TABLE_TREES_MAX];
	int n_below[TABLE_TREES_MAX];
	/* The site's other gateways that the local workers send to, and their trees. */
	int n_shards;
	int n_shard_trees[TABLE_SHARDS_MAX], shard_gw[TABLE_SHARDS_MAX];
};

/* Check the inputs; the chunk size in elements, the chunk count and the slot limits. */
static int
gw_check_inputs(struct gw_compile *g)
{
	const struct topo *t = g->c.t;
	const struct plan *p = g->c.p;
	const struct table_deploy *d = g->c.d;
	int node = g->node, gwi = g->gwi, rc;
	char msg[TABLE_ERR_MAX];
	size_t esize;

	if (t == NULL || p == NULL || d == NULL)
		return cfail(&g->c, EINVAL, "table_compile: no topology, plan or deployment");
	if (node < 0 || node >= t->n_nodes)
		return cfail(&g->c, EINVAL, "node %d: not a node of topology '%s' (%d nodes)", node,
			     t->name, t->n_nodes);
	if (d->n_nodes != t->n_nodes || d->nodes == NULL)
		return cfail(&g->c, EINVAL, "deploy.nodes: %d entries, the topology has %d nodes",
			     d->n_nodes, t->n_nodes);
	if (plan_validate(t, p, 0, msg, sizeof(msg)) != 0)
		return cfail(&g->c, EINVAL, "plan: %s", msg);
	esize = table_dtype_unit_bytes(d->dtype); /* an element, or an MX block */
	if (esize == 0)
		return cfail(&g->c, EINVAL, "deploy.dtype: %d is not a dtype", (int)d->dtype);
	if (d->chunk_bytes == 0 || d->chunk_bytes % esize != 0 ||
	    d->chunk_bytes > TABLE_CHUNK_BYTES_MAX)
		return cfail(&g->c, EINVAL,
			     "deploy.chunk_bytes: %" PRIu32 " is not a multiple of "
			     "%zu (%s) in [%zu, %u]",
			     d->chunk_bytes, esize, table_dtype_name(d->dtype), esize,
			     TABLE_CHUNK_BYTES_MAX);
	g->chunk_elements = d->chunk_bytes / (uint32_t)esize * table_dtype_granule(d->dtype);
	if (d->elements % table_dtype_granule(d->dtype) != 0)
		return cfail(&g->c, EINVAL,
			     "deploy.elements: %" PRIu64 " is not a whole number of "
			     "%s blocks",
			     d->elements, table_dtype_name(d->dtype));
	g->n_chunks = d->elements / g->chunk_elements + (d->elements % g->chunk_elements != 0);
	if (d->elements == 0 || d->elements > INT64_MAX || g->n_chunks > UINT32_MAX)
		return cfail(&g->c, EINVAL,
			     "deploy.elements: %" PRIu64 " elements must be >= 1 "
			     "and make at most %" PRIu32 " chunks",
			     d->elements, UINT32_MAX);
	g->smax = d->slots_max == 0 ? TABLE_SLOTS_MAX : d->slots_max;
	g->smin = d->slots_min == 0 ? TABLE_SLOTS_MIN : d->slots_min;
	if (g->smax > TABLE_SLOTS_MAX || g->smin > g->smax)
		return cfail(&g->c, EINVAL,
			     "deploy.slots_max: slots_min %" PRIu32 " and "
			     "slots_max %" PRIu32 " must satisfy slots_min <= slots_max <= %d",
			     g->smin, g->smax, TABLE_SLOTS_MAX);
	g->smax = pow2_floor(g->smax);
	rc = check_deploy(&g->c);
	if (rc != 0)
		return rc;
	if (gwi < 0 || gwi >= node_ngw(&d->nodes[node]))
		return cfail(&g->c, EINVAL, "node '%s': no gateway %d (it has %d)",
			     t->nodes[node].id, gwi, node_ngw(&d->nodes[node]));
	return 0;
}

/* Cut the chunks into segments (segments()) and split every segment among the plan's trees
 * by their shares: the pairs, and which trees carry chunks. */
static int
gw_split(struct gw_compile *g)
{
	const struct topo *t = g->c.t;
	const struct plan *p = g->c.p;
	const struct table_deploy *d = g->c.d;
	int rc, n_pairs, carrying = 0;

	rc = segments(d, (uint32_t)g->n_chunks, &g->bounds, &g->n_seg);
	if (rc != 0)
		return cfail(&g->c, ENOMEM, "out of memory");
	n_pairs = g->n_seg * p->n_trees;
	if (n_pairs > UINT16_MAX + 1)
		return cfail(&g->c, E2BIG,
			     "plan: %d trees in %d segments of the site's shards: "
			     "more tree ids than 16 bits hold",
			     p->n_trees, g->n_seg);
	g->first = calloc((size_t)p->n_trees, sizeof(*g->first));
	g->count = calloc((size_t)p->n_trees, sizeof(*g->count));
	g->pairs = calloc((size_t)n_pairs, sizeof(*g->pairs));
	g->carries = calloc((size_t)p->n_trees, sizeof(*g->carries));
	g->below = calloc((size_t)t->n_nodes, sizeof(*g->below));
	g->active = calloc((size_t)t->n_nodes, sizeof(*g->active));
	g->has_workers = calloc((size_t)t->n_nodes, sizeof(*g->has_workers));
	g->kids_of = calloc((size_t)t->n_nodes, sizeof(*g->kids_of));
	g->kids = calloc((size_t)p->n_trees, sizeof(*g->kids));
	if (g->first == NULL || g->count == NULL || g->pairs == NULL || g->carries == NULL ||
	    g->below == NULL || g->active == NULL || g->has_workers == NULL || g->kids_of == NULL ||
	    g->kids == NULL)
		return cfail(&g->c, ENOMEM, "out of memory");
	for (int v = 0; v < t->n_nodes; v++)
		g->has_workers[v] = d->nodes[v].n_workers > 0;
	/* Every segment split among the plan's trees by their shares. */
	for (int k = 0; k < g->n_seg; k++) {
		uint32_t seg = g->bounds[k + 1] - g->bounds[k];

		rc = table_split_chunks(p, seg, g->first, g->count);
		if (rc != 0)
			return cfail(&g->c, -rc,
				     "plan: trees[].share: cannot split %" PRIu64
				     " chunks by these shares",
				     g->n_seg == 1 ? g->n_chunks : (uint64_t)seg);
		for (int i = 0; i < p->n_trees; i++) {
			struct pair *pr = &g->pairs[k * p->n_trees + i];

			pr->first = g->bounds[k] + g->first[i];
			pr->count = g->count[i];
			pr->rate = p->trees[i].rate_gbps * ((double)seg / (double)g->n_chunks);
			g->carries[i] |= g->count[i] > 0;
			carrying += g->count[i] > 0;
		}
	}
	if (carrying > TABLE_TREES_MAX) {
		if (g->n_seg == 1)
			return cfail(&g->c, E2BIG,
				     "plan: more than %d trees carry chunks (the "
				     "table limit)",
				     TABLE_TREES_MAX);
		return cfail(&g->c, E2BIG,
			     "plan: %d trees in the %d segments of the sites' shards "
			     "carry chunks, more than the table limit %d (fewer trees or gateways)",
			     carrying, g->n_seg, TABLE_TREES_MAX);
	}
	return 0;
}

/* Which trees carry chunks; the shape of this node's entry in each (its children), within
 * the table's limits at every node; and how many trees each other gateway of the site
 * holds for this node. */
static int
gw_shape_trees(struct gw_compile *g)
{
	const struct topo *t = g->c.t;
	const struct plan *p = g->c.p;
	const struct table_deploy *d = g->c.d;
	int node = g->node, rc;

	for (int i = 0; i < p->n_trees; i++) {
		const struct plan_tree *tr = &p->trees[i];

		g->kids[i] = -1; /* not at this node */
		if (!g->carries[i])
			continue;
		if (!(isfinite(tr->rate_gbps) && tr->rate_gbps > 0))
			return cfail(&g->c, EINVAL,
				     "plan: trees[%d].rate_gbps: a tree that "
				     "carries chunks needs a rate > 0",
				     i);
		rc = prune_tree(&g->c, i, g->active, g->below);
		if (rc != 0)
			return rc;
		memset(g->kids_of, 0, sizeof(*g->kids_of) * (size_t)t->n_nodes);
		for (int w = 0; w < t->n_nodes; w++)
			if (g->active[w] && tr->parent[w] >= 0)
				g->kids_of[tr->parent[w]]++;
		for (int u = 0; u < t->n_nodes; u++) {
			if (!g->active[u])
				continue;
			if (g->kids_of[u] > TABLE_CHILDREN_MAX)
				return cfail(&g->c, E2BIG,
					     "plan: trees[%d]: node '%s' has %d "
					     "child gateways, more than the table limit %d",
					     i, t->nodes[u].id, g->kids_of[u], TABLE_CHILDREN_MAX);
			if (g->kids_of[u] + d->nodes[u].n_workers > TABLE_CONTRIB_MAX)
				return cfail(&g->c, E2BIG,
					     "plan: trees[%d]: node '%s' expects %d "
					     "contributions, more than the table limit %d",
					     i, t->nodes[u].id,
					     g->kids_of[u] + d->nodes[u].n_workers,
					     TABLE_CONTRIB_MAX);
		}
		if (!g->active[node])
			continue;
		g->kids[i] = g->kids_of[node];
		/* Its copies in the segments this gateway holds; shards count the others. */
		for (int k = 0; k < g->n_seg; k++) {
			const struct pair *pr = &g->pairs[k * p->n_trees + i];
			int h = table_shard_of(g->bounds[k], g->n_chunks,
					       node_ngw(&d->nodes[node]));

			if (pr->count == 0 || h == g->gwi)
				continue;
			for (int s = 0; s <= g->n_shards; s++) {
				if (s == g->n_shards) {
					g->shard_gw[g->n_shards] = h;
					g->n_shard_trees[g->n_shards++] = 0;
				}
				if (g->shard_gw[s] == h) {
					g->n_shard_trees[s]++;
					break;
				}
			}
		}
	}
	return 0;
}

/* This gateway's entries, by id, and the shards its local workers need, in shard order. */
static void
gw_pick_entries(struct gw_compile *g)
{
	const struct plan *p = g->c.p;
	const struct table_deploy *d = g->c.d;
	int node = g->node;

	/* This gateway's entries, by id: segment k's copy of tree i is k * n_trees + i. */
	for (int k = 0; k < g->n_seg; k++)
		for (int i = 0; i < p->n_trees; i++) {
			const struct pair *pr = &g->pairs[k * p->n_trees + i];

			if (g->kids[i] < 0 || pr->count == 0 ||
			    table_shard_of(g->bounds[k], g->n_chunks, node_ngw(&d->nodes[node])) !=
				    g->gwi)
				continue;
			(void)prune_tree(&g->c, i, g->active, g->below); /* succeeded above */
			g->pair_of[g->n_trees] = k * p->n_trees + i;
			g->n_children[g->n_trees] = g->kids[i];
			g->n_workers[g->n_trees] = d->nodes[node].n_workers;
			/* With sets, every worker of the subtree is local or below a child. */
			g->n_below[g->n_trees] =
				d->cset_blocks != 0 ?
					(int)g->below[node] - g->n_workers[g->n_trees] :
					0;
			g->n_trees++;
		}
	/* The other gateways of the site matter to the local workers only, and only when
	 * this gateway carries something of the tensor for them too. */
	if (d->nodes[node].n_workers == 0 || g->n_trees == 0)
		g->n_shards = 0;
	/* In shard order (the order of the node's gateways). */
	for (int s = 1; s < g->n_shards; s++)
		for (int r = s; r > 0 && g->shard_gw[r - 1] > g->shard_gw[r]; r--) {
			int gw = g->shard_gw[r], n = g->n_shard_trees[r];

			g->shard_gw[r] = g->shard_gw[r - 1];
			g->n_shard_trees[r] = g->n_shard_trees[r - 1];
			g->shard_gw[r - 1] = gw;
			g->n_shard_trees[r - 1] = n;
		}
}

/* Tree entry e of this gateway: segment k's copy of plan tree i, pair k * n_trees + i. */
static void
gw_fill_entry(struct gw_compile *g, struct table_tree *e, int pair)
{
	const struct topo *t = g->c.t;
	const struct plan *p = g->c.p;
	const struct table_deploy *d = g->c.d;
	int node = g->node;
	int i = pair % p->n_trees, k = pair / p->n_trees;
	const struct plan_tree *tr = &p->trees[i];
	const struct pair *pr = &g->pairs[pair];
	int par = tr->parent[node], j = 0, nb = 0;
	double hold;

	(void)prune_tree(&g->c, i, g->active, g->below); /* succeeded above */
	e->id = (uint16_t)pair;
	e->has_parent = par != PLAN_ROOT;
	if (e->has_parent)
		e->parent = node_gw(&d->nodes[par], table_shard_of(g->bounds[k], g->n_chunks,
								   node_ngw(&d->nodes[par])));
	for (int u = 0; u < t->n_nodes; u++) {
		if (!g->active[u] || tr->parent[u] != node)
			continue;
		if (e->n_below > 0)
			fill_below(&g->c, tr, u, e, j, &nb);
		e->child_workers[j] = g->below[u];
		e->children[j++] = node_gw(&d->nodes[u], table_shard_of(g->bounds[k], g->n_chunks,
									node_ngw(&d->nodes[u])));
	}
	for (int w = 0; w < e->n_workers; w++) {
		const struct table_worker *src = &d->nodes[node].workers[w];

		/* Field by field: the padding stays zero, the block is deterministic. */
		e->workers[w].id = src->id;
		e->workers[w].ipv4 = src->ipv4;
		e->workers[w].port = src->port;
	}
	e->role = !e->has_parent    ? TABLE_ROLE_ROOT :
		  e->n_children > 0 ? TABLE_ROLE_INTERIOR :
				      TABLE_ROLE_LEAF;
	e->expected = (uint32_t)(e->n_workers + e->n_children);
	e->subtree_workers = g->below[node];
	e->chunk_first = pr->first;
	e->chunk_count = pr->count;
	e->rate_gbps = pr->rate;
	hold = table_hold_ms(t, tr, node, g->active, g->has_workers);
	pool_of(d, pr->rate, hold, e->chunk_count, g->smin, g->smax, &e->window, &e->slots);
	if (!e->has_parent && d->min_workers != 0 && d->min_workers < e->subtree_workers) {
		e->threshold = d->min_workers;
		e->grace_ms = d->grace_ms;
		e->grace_adaptive = d->grace_ms != 0 && d->grace_adaptive;
	}
}

/* The site's other gateways, with their trees as the local workers send to them. */
static void
gw_fill_shards(struct gw_compile *g, struct table *tb)
{
	const struct topo *t = g->c.t;
	const struct plan *p = g->c.p;
	const struct table_deploy *d = g->c.d;
	int node = g->node;

	for (int s = 0; s < g->n_shards; s++) {
		struct table_shard *sh = &tb->shards[s];
		int m = 0;

		sh->gw = node_gw(&d->nodes[node], g->shard_gw[s]);
		for (int k = 0; k < g->n_seg; k++)
			for (int i = 0; i < p->n_trees; i++) {
				const struct pair *pr = &g->pairs[k * p->n_trees + i];
				struct table_shard_tree *st;
				double hold;

				if (g->kids[i] < 0 || pr->count == 0 ||
				    table_shard_of(g->bounds[k], g->n_chunks,
						   node_ngw(&d->nodes[node])) != g->shard_gw[s])
					continue;
				/* succeeded above */
				(void)prune_tree(&g->c, i, g->active, g->below);
				st = &sh->trees[m++];
				st->id = (uint16_t)(k * p->n_trees + i);
				st->chunk_first = pr->first;
				st->chunk_count = pr->count;
				hold = table_hold_ms(t, &p->trees[i], node, g->active,
						     g->has_workers);
				pool_of(d, pr->rate, hold, pr->count, g->smin, g->smax, &st->window,
					&st->slots);
			}
	}
}

struct table *
table_compile_gateway(const struct topo *t, const struct plan *p, const struct table_deploy *d,
		      int node, int gwi, uint32_t job, uint32_t epoch, char *err, size_t errlen)
{
	struct gw_compile g = {.c = {.t = t, .p = p, .d = d, .err = err, .errlen = errlen},
			       .node = node,
			       .gwi = gwi};
	char msg[TABLE_ERR_MAX];
	struct table *tb = NULL;
	int rc;

	rc = gw_check_inputs(&g);
	if (rc == 0)
		rc = gw_split(&g);
	if (rc == 0)
		rc = gw_shape_trees(&g);
	if (rc != 0)
		goto out;
	gw_pick_entries(&g);
	tb = table_create_sharded(g.n_trees, g.n_children, g.n_workers, g.n_below, 0, g.n_shards,
				  g.n_shard_trees);
	if (tb == NULL) {
		rc = cfail(&g.c, errno, "out of memory");
		goto out;
	}
	tb->job = job;
	tb->epoch = epoch;
	tb->gw = node_gw(&d->nodes[node], gwi);
	tb->dtype = d->dtype;
	tb->lan_dtype = d->lan_dtype != d->dtype ? d->lan_dtype : 0;
	tb->elements = d->elements;
	tb->chunk_elements = g.chunk_elements;
	tb->limits = (struct table_limits){.max_trees = TABLE_TREES_MAX,
					   .max_children = TABLE_CHILDREN_MAX,
					   .max_workers = TABLE_WORKERS_MAX,
					   .max_slots = g.smax};
	tb->cset_blocks = d->cset_blocks;
	for (int e_i = 0; e_i < g.n_trees; e_i++)
		gw_fill_entry(&g, &tb->trees[e_i], g.pair_of[e_i]);
	gw_fill_shards(&g, tb);
	if (table_validate(tb, msg, sizeof(msg)) != 0) {
		/* The deployment checks above should make this unreachable. */
		rc = cfail(&g.c, EINVAL, "node '%s': compiled table is invalid: %s",
			   t->nodes[node].id, msg);
		goto out;
	}
	rc = 0;
out:
	free(g.first);
	free(g.count);
	free(g.pairs);
	free(g.carries);
	free(g.bounds);
	free(g.below);
	free(g.active);
	free(g.has_workers);
	free(g.kids_of);
	free(g.kids);
	if (rc != 0) {
		table_free(tb);
		errno = -rc;
		return NULL;
	}
	return tb;
}
