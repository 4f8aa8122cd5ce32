/* SPDX-License-Identifier: BSD-3-Clause
 *
 * Slow path (control thread): the runtime form of an installed table. Everything a worker
 * reads is allocated on the NUMA socket of the lcores that read it: each lcore's slots and
 * accumulators on its own socket, the shared trees and destinations on the socket of the
 * first worker lcore. Memory is fixed at install and reported by the stats. Also the routes
 * and neighbour entries of a table's destinations, resolved from the ARP sightings that
 * state.c keeps (dp_seen_mac()).
 *
 * Calls go one way: state.c (prepare, activate, retire) calls the functions here, nothing
 * here calls into state.c.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rte_cycles.h>
#include <rte_lcore.h>
#include <rte_malloc.h>

#include "dp.h"
#include "jsonutil.h"
#include "slowpath/slowpath.h"

static void *
jalloc(struct dp_job *j, size_t size, int socket)
{
	void *p = rte_zmalloc_socket("georeduce-job", size == 0 ? 1 : size, RTE_CACHE_LINE_SIZE,
				     socket);

	if (p != NULL)
		j->bytes += size;
	return p;
}

static bool
in_subnet(uint32_t a, uint32_t net, uint8_t len)
{
	uint32_t mask = len == 0 ? 0 : ~0u << (32 - len);

	return (a & mask) == (net & mask);
}

uint64_t
dp_seen_mac(const struct dp *dp, uint32_t ipv4, uint16_t port)
{
	for (unsigned int i = 0; i < dp->n_seen; i++)
		if (dp->seen[i].ipv4 == ipv4 && dp->seen[i].port == port)
			return dp->seen[i].mac;
	return 0;
}

int
dp_neigh_get(struct dp *dp, uint32_t ipv4, uint16_t port)
{
	uint32_t n = atomic_load_explicit(&dp->n_neigh, memory_order_relaxed);

	for (uint32_t i = 0; i < n; i++)
		if (dp->neigh[i].ipv4 == ipv4 && dp->neigh[i].port == port)
			return (int)i;
	if (n == DP_NEIGH_MAX)
		return -E2BIG;
	dp->neigh[n].ipv4 = ipv4;
	dp->neigh[n].port = port;
	dp->neigh[n].is_static = false;
	dp->neigh[n].last_request_tsc = 0;
	/* Resolved already if it ARPed before any table named it. */
	atomic_store_explicit(&dp->neigh[n].mac, dp_seen_mac(dp, ipv4, port), memory_order_relaxed);
	atomic_store_explicit(&dp->n_neigh, n + 1, memory_order_release);
	return (int)n;
}

/*
 * Route a destination, longest prefix first: a port's own subnet (the destination is its
 * own next hop), a static route (--route: next hop the destination on a port, or a router
 * in a port's subnet), and last a port's router (--addr ...,GW).
 */
static int
route(struct dp *dp, struct dp_dest *d, const char *field, char *err, size_t errlen)
{
	char ip[16];
	int best_len = -1, port = -1, nh;
	uint32_t hop = 0;

	for (unsigned int p = 0; p < dp->n_ports; p++)
		if (in_subnet(d->ipv4, dp->ports[p].ipv4, dp->ports[p].prefix_len) &&
		    dp->ports[p].prefix_len > best_len) {
			best_len = dp->ports[p].prefix_len;
			port = (int)p;
			hop = d->ipv4;
		}
	for (unsigned int r = 0; r < dp->n_routes; r++) {
		const struct dp_route *rt = &dp->routes[r];

		if (in_subnet(d->ipv4, rt->dst, rt->prefix_len) && rt->prefix_len > best_len) {
			best_len = rt->prefix_len;
			port = rt->port;
			hop = rt->via != 0 ? rt->via : d->ipv4;
		}
	}
	for (unsigned int p = 0; port < 0 && p < dp->n_ports; p++)
		if (dp->ports[p].gw_ipv4 != 0) {
			port = (int)p;
			hop = dp->ports[p].gw_ipv4;
		}
	if (port < 0) {
		json_util_fail(err, errlen,
			       "field '%s': no route to %s: in no port's subnet, no "
			       "--route and no port with a router (--addr PORT:IP/LEN,GW)",
			       field, table_ipv4_format(d->ipv4, ip));
		errno = EINVAL;
		return -1;
	}
	d->port = (uint16_t)port;
	nh = dp_neigh_get(dp, hop, (uint16_t)port);
	if (nh < 0) {
		json_util_fail(err, errlen, "field '%s': more than %d neighbours", field,
			       DP_NEIGH_MAX);
		errno = E2BIG;
		return -1;
	}
	d->nh = (uint16_t)nh;
	return 0;
}

int
dp_dest_route(struct dp *dp, struct dp_dest *d, const char *field, char *err, size_t errlen)
{
	return route(dp, d, field, err, errlen);
}

/* A gateway of job j's table: its packets are sealed if the table protects the link. */
static int
dest_gw(struct dp *dp, const struct dp_job *j, struct dp_dest *d, const struct table_gw *g,
	const char *field, char *err, size_t errlen)
{
	d->id = g->id;
	d->ipv4 = g->ipv4;
	d->udp_base = g->base_port;
	d->udp_count = g->ports;
	d->seal = dp_job_seal(j, g->id);
	d->src_key =
		d->seal != NULL ? dp_src_key_sealed(g->id) : dp_src_key_of(g->ipv4, g->base_port);
	return route(dp, d, field, err, errlen);
}

static int
dest_worker(struct dp *dp, struct dp_dest *d, const struct table_worker *w, const char *field,
	    char *err, size_t errlen)
{
	d->id = w->id;
	d->ipv4 = w->ipv4;
	d->udp_base = w->port;
	d->udp_count = 1;
	d->src_key = dp_src_key_of(w->ipv4, w->port);
	return route(dp, d, field, err, errlen);
}

/* The fixed part of the IPv4 header checksum from this gateway to d (tx.h adds the total
 * length): version/IHL 0x45, DF, TTL 64, UDP, the two addresses; 16-bit words summed. */
static void
dest_ip_sum(const struct dp_job *j, struct dp_dest *d)
{
	d->ip_sum = 0x4500u + 0x4000u + (64u << 8 | 17u) + (j->self_ipv4 >> 16) +
		    (j->self_ipv4 & 0xffffu) + (d->ipv4 >> 16) + (d->ipv4 & 0xffffu);
}

/* Contributors of a tree sorted by id, for the fast path's binary search. */
static void
sort_sources(struct dp_tree *t)
{
	for (int i = 1; i < t->n_src; i++)
		for (int k = i; k > 0 && t->src_ids[k - 1] > t->src_ids[k]; k--) {
			uint16_t id = t->src_ids[k];
			uint8_t b = t->src_bits[k], w = t->src_worker[k];
			uint16_t d = t->src_down[k], n = t->src_contrib[k];

			t->src_ids[k] = t->src_ids[k - 1];
			t->src_bits[k] = t->src_bits[k - 1];
			t->src_worker[k] = t->src_worker[k - 1];
			t->src_down[k] = t->src_down[k - 1];
			t->src_contrib[k] = t->src_contrib[k - 1];
			t->src_ids[k - 1] = id;
			t->src_bits[k - 1] = b;
			t->src_worker[k - 1] = w;
			t->src_down[k - 1] = d;
			t->src_contrib[k - 1] = n;
		}
}

static int
build_tree(struct dp *dp, struct dp_job *j, int i, int socket, char *err, size_t errlen)
{
	const struct table_tree *tt = &j->tb->trees[i];
	struct dp_tree *t = &j->trees[i];
	char field[64];

	t->tt = tt;
	t->id = tt->id;
	t->expected = (uint16_t)tt->expected;
	/* A partial reduce completes at its threshold; a full one only when every
	 * contributor is in (whatever counts a faulty child claims). */
	t->threshold = tt->threshold != 0 && tt->threshold < tt->subtree_workers ? tt->threshold :
										   UINT32_MAX;
	/* The grace window after it (table_check: only with such a threshold). */
	t->grace_tsc = t->threshold != UINT32_MAX ? rte_get_tsc_hz() / 1000 * tt->grace_ms : 0;
	t->grace_adaptive = t->grace_tsc != 0 && tt->grace_adaptive;
	t->chunk_first = tt->chunk_first;
	t->chunk_count = tt->chunk_count;
	t->slot_mask = tt->slots - 1;
	t->slot_off = j->slots_per_lcore;
	j->slots_per_lcore += tt->slots;
	t->has_parent = tt->has_parent;
	if (tt->has_parent) {
		snprintf(field, sizeof(field), "trees[%d].parent.ipv4", i);
		if (dest_gw(dp, j, &t->parent, &tt->parent, field, err, errlen) != 0)
			return -1;
	}
	t->n_children = (uint16_t)tt->n_children;
	t->budget_off = j->n_budgets;
	j->n_budgets += (uint32_t)(tt->n_children + tt->n_workers);
	t->pace_first = j->n_pacers;
	j->n_pacers += 1 + (uint32_t)tt->n_children;
	t->n_down = (uint16_t)(tt->n_children + tt->n_workers);
	t->n_src = t->n_down;
	t->down = jalloc(j, sizeof(*t->down) * t->n_down, socket);
	t->src_ids = jalloc(j, sizeof(*t->src_ids) * t->n_src, socket);
	t->src_bits = jalloc(j, t->n_src, socket);
	t->src_worker = jalloc(j, t->n_src, socket);
	t->src_down = jalloc(j, sizeof(*t->src_down) * t->n_src, socket);
	t->src_contrib = jalloc(j, sizeof(*t->src_contrib) * t->n_src, socket);
	if (t->down == NULL || t->src_ids == NULL || t->src_bits == NULL || t->src_worker == NULL ||
	    t->src_down == NULL || t->src_contrib == NULL) {
		json_util_fail(err, errlen, "out of memory for tree %u", tt->id);
		errno = ENOMEM;
		return -1;
	}
	for (int c = 0; c < tt->n_children; c++) {
		snprintf(field, sizeof(field), "trees[%d].children[%d].ipv4", i, c);
		if (dest_gw(dp, j, &t->down[c], &tt->children[c], field, err, errlen) != 0)
			return -1;
		t->src_ids[c] = tt->children[c].id;
		t->src_bits[c] = (uint8_t)(tt->n_workers + c);
		t->src_worker[c] = 0;
		t->src_down[c] = (uint16_t)c;
		/* table_validate(): 1 .. TABLE_ID_MAX, a uint16_t like the wire's contrib. */
		t->src_contrib[c] = (uint16_t)tt->child_workers[c];
	}
	for (int w = 0; w < tt->n_workers; w++) {
		int k = tt->n_children + w;

		snprintf(field, sizeof(field), "trees[%d].workers[%d].ipv4", i, w);
		if (dest_worker(dp, &t->down[k], &tt->workers[w], field, err, errlen) != 0)
			return -1;
		t->src_ids[k] = tt->workers[w].id;
		t->src_bits[k] = (uint8_t)w;
		t->src_worker[k] = 1;
		t->src_down[k] = (uint16_t)k;
		t->src_contrib[k] = 1;
	}
	sort_sources(t);
	/* The workers below each child gateway, as sets (the table checked that they are
	 * inside the job's sets). */
	if (j->cset_len != 0 && tt->n_children > 0) {
		t->child_sets = jalloc(j, (size_t)tt->n_children * j->cset_len, socket);
		if (t->child_sets == NULL) {
			json_util_fail(err, errlen, "out of memory for tree %u", tt->id);
			errno = ENOMEM;
			return -1;
		}
		for (int k = 0; k < tt->n_below; k++) {
			uint16_t id = tt->below[k];

			if (id >= j->cset_len * 8 || tt->below_child[k] >= tt->n_children) {
				json_util_fail(err, errlen,
					       "field 'trees[%d].children': worker %u "
					       "below child %u does not fit the job's contributor "
					       "sets",
					       i, id, tt->below_child[k]);
				errno = EINVAL;
				return -1;
			}
			t->child_sets[(size_t)tt->below_child[k] * j->cset_len + id / 8] |=
				(uint8_t)(1u << (id % 8));
		}
	}
	if (t->has_parent)
		dest_ip_sum(j, &t->parent);
	for (int k = 0; k < t->n_down; k++)
		dest_ip_sum(j, &t->down[k]);
	return 0;
}

/* A worker of the table with id `id` (in a tree entry or a stream's deliver list), or NULL:
 * where its packets come from. */
static const struct table_worker *
job_worker(const struct table *tb, uint16_t id)
{
	for (int i = 0; i < tb->n_trees; i++)
		for (int w = 0; w < tb->trees[i].n_workers; w++)
			if (tb->trees[i].workers[w].id == id)
				return &tb->trees[i].workers[w];
	for (int i = 0; i < tb->n_streams; i++)
		for (int w = 0; w < tb->streams[i].n_deliver; w++)
			if (tb->streams[i].deliver[w].id == id)
				return &tb->streams[i].deliver[w];
	return NULL;
}

/* Stream i of the table: its destinations and sorted origins (NUMA-local like trees). */
static int
build_stream(struct dp *dp, struct dp_job *j, int i, int socket, char *err, size_t errlen)
{
	const struct table_stream *ts = &j->tb->streams[i];
	struct dp_stream *s = &j->streams[i];
	char field[64];

	s->id = ts->id;
	s->at_source = !ts->has_from;
	s->from_id = ts->has_from ? ts->from.id : 0;
	s->n_to = (uint16_t)ts->n_to;
	s->n_out = (uint16_t)(ts->n_to + ts->n_deliver);
	s->n_origins = (uint16_t)ts->n_origins;
	s->pace_first = j->n_pacers;
	j->n_pacers += (uint32_t)ts->n_to;
	s->out = jalloc(j, sizeof(*s->out) * s->n_out, socket);
	s->origins = jalloc(j, sizeof(*s->origins) * s->n_origins, socket);
	s->origin_key = jalloc(j, sizeof(*s->origin_key) * s->n_origins, socket);
	s->origin_count = jalloc(j, sizeof(*s->origin_count) * s->n_origins, socket);
	if (s->out == NULL || s->origins == NULL || s->origin_key == NULL ||
	    s->origin_count == NULL) {
		json_util_fail(err, errlen, "out of memory for stream %u", ts->id);
		errno = ENOMEM;
		return -1;
	}
	for (int k = 0; k < ts->n_to; k++) {
		snprintf(field, sizeof(field), "streams[%d].to[%d].ipv4", i, k);
		if (dest_gw(dp, j, &s->out[k], &ts->to[k], field, err, errlen) != 0)
			return -1;
	}
	for (int w = 0; w < ts->n_deliver; w++) {
		snprintf(field, sizeof(field), "streams[%d].deliver[%d].ipv4", i, w);
		if (dest_worker(dp, &s->out[ts->n_to + w], &ts->deliver[w], field, err, errlen) !=
		    0)
			return -1;
	}
	for (int k = 0; k < s->n_out; k++)
		dest_ip_sum(j, &s->out[k]);
	for (int k = 0; k < s->n_origins; k++) {
		int m = k;

		while (m > 0 && s->origins[m - 1] > ts->origins[k]) {
			s->origins[m] = s->origins[m - 1];
			m--;
		}
		s->origins[m] = ts->origins[k];
	}
	if (ts->has_from) {
		snprintf(field, sizeof(field), "streams[%d].from.ipv4", i);
		if (dest_gw(dp, j, &s->from, &ts->from, field, err, errlen) != 0)
			return -1;
		dest_ip_sum(j, &s->from);
		s->from_key = dp_job_seal(j, ts->from.id) != NULL ?
				      dp_src_key_sealed(ts->from.id) :
				      dp_src_key_of(ts->from.ipv4, ts->from.base_port);
		s->from_count = ts->from.ports;
	}
	for (int k = 0; k < s->n_origins; k++) {
		const struct table_worker *w = job_worker(j->tb, s->origins[k]);

		if (w != NULL) {
			s->origin_key[k] = dp_src_key_of(w->ipv4, w->port);
			s->origin_count[k] = 1;
		}
	}
	return 0;
}

/*
 * One lcore's pacers of a job: per tree, the parent link then each child gateway's link,
 * at rate_gbps / lcores (chunks are spread evenly over the lcores), each with a queue as
 * deep as twice the tree's slot pool. Rate 0 (pacing off) lets every frame go at once.
 */
static int
init_pacers(struct dp *dp, struct dp_job *j, struct dp_job_lcore *lj, int socket)
{
	lj->pacers = jalloc(j, sizeof(*lj->pacers) * j->n_pacers, socket);
	lj->active = jalloc(j, sizeof(*lj->active) * j->n_pacers, socket);
	if (lj->pacers == NULL || lj->active == NULL)
		return -ENOMEM;
	for (int i = 0; i < j->n_trees; i++) {
		const struct dp_tree *t = &j->trees[i];
		double bps = t->tt->rate_gbps * 1e9 / 8 / dp->n_lcores;
		double tpb = dp->prm.pace && bps > 0 ? (double)rte_get_tsc_hz() / bps : 0;

		for (uint32_t k = 0; k <= t->n_children; k++) {
			struct dp_pacer *pc = &lj->pacers[t->pace_first + k];

			pc->tsc_per_byte = tpb;
			pc->port = k == 0 ? t->parent.port : t->down[k - 1].port;
			pc->seal = k == 0 ? t->parent.seal : t->down[k - 1].seal;
			pc->mask = 2 * (t->slot_mask + 1) - 1;
			pc->q = jalloc(j, sizeof(*pc->q) * (pc->mask + 1), socket);
			if (pc->q == NULL)
				return -ENOMEM;
		}
	}
	/* Streams: one pacer per `to` link, at the stream's rate, a fixed queue. */
	for (int i = 0; i < j->n_streams; i++) {
		const struct dp_stream *s = &j->streams[i];
		double bps = j->tb->streams[i].rate_gbps * 1e9 / 8 / dp->n_lcores;
		double tpb = dp->prm.pace && bps > 0 ? (double)rte_get_tsc_hz() / bps : 0;

		for (uint32_t k = 0; k < s->n_to; k++) {
			struct dp_pacer *pc = &lj->pacers[s->pace_first + k];

			pc->tsc_per_byte = tpb;
			pc->port = s->out[k].port;
			pc->seal = s->out[k].seal;
			pc->mask = j->mcast_pace_q - 1;
			pc->q = jalloc(j, sizeof(*pc->q) * j->mcast_pace_q, socket);
			if (pc->q == NULL)
				return -ENOMEM;
		}
	}
	return 0;
}

/* Copies of one origin that stream s retains per lcore: a power of two, at most
 * DP_MCAST_KEEP_CHUNKS, no more than two rounds of the tensor's chunks (rounded up: a
 * receiver may still ask for a round while its origin sends the next one), and the
 * stream's ring at most DP_MCAST_KEEP_MAX copies; then halved `shift` times, to no fewer
 * than DP_MCAST_KEEP_MIN (or the first length). */
static uint32_t
mcast_keep_len(const struct dp_job *j, const struct dp_stream *s, unsigned int shift)
{
	uint32_t n = 1;

	while (n < DP_MCAST_KEEP_CHUNKS && n < 2 * j->n_chunks &&
	       (uint64_t)2 * n * s->n_origins <= DP_MCAST_KEEP_MAX)
		n <<= 1;
	while (shift-- > 0 && n > DP_MCAST_KEEP_MIN)
		n >>= 1;
	return n;
}

/* The copies the job's streams retain per lcore with their rings halved `shift` times. */
static uint32_t
mcast_keep_total(const struct dp_job *j, unsigned int shift)
{
	uint32_t n = 0;

	for (int i = 0; i < j->n_streams; i++)
		n += mcast_keep_len(j, &j->streams[i], shift) * j->streams[i].n_origins;
	return n;
}

/* One lcore's retained MCAST copies, pending upstream requests and answer budgets of
 * every stream (PROTOCOL.md section 7.5), empty. */
/* The FIFO of grace windows: one entry per slot of the trees with a window at most. */
static int
init_grace(struct dp_job *j, struct dp_job_lcore *lj, int socket)
{
	uint32_t n = 0, cap = 1;

	for (int i = 0; i < j->n_trees; i++)
		n += j->trees[i].grace_tsc != 0 ? j->trees[i].slot_mask + 1 : 0;
	if (n == 0)
		return 0;
	while (cap < n)
		cap <<= 1;
	lj->gq = jalloc(j, sizeof(*lj->gq) * cap, socket);
	lj->gmask = cap - 1;
	return lj->gq == NULL ? -1 : 0;
}

static int
init_mstreams(struct dp_job *j, struct dp_job_lcore *lj, int socket)
{
	if (j->n_streams == 0)
		return 0;
	lj->mstreams = jalloc(j, sizeof(*lj->mstreams) * (size_t)j->n_streams, socket);
	if (lj->mstreams == NULL)
		return -ENOMEM;
	for (int i = 0; i < j->n_streams; i++) {
		const struct dp_stream *s = &j->streams[i];
		struct dp_mstream *ms = &lj->mstreams[i];
		uint32_t n = mcast_keep_len(j, s, j->mcast_keep_shift);

		ms->keep_mask = n - 1;
		/* Repairs for up to every copy the ring holds (what the copies earn, below
		 * that; fastpath/mcast.c), never less than a NACK_RESULT budget. */
		uint64_t cap = (uint64_t)n * s->n_origins * (j->budget_cap / DP_BUDGET_CAP);

		ms->budget_cap = cap > j->budget_cap ?
					 (uint32_t)(cap < UINT32_MAX ? cap : UINT32_MAX) :
					 j->budget_cap;
		ms->keep = jalloc(j, sizeof(*ms->keep) * n * s->n_origins, socket);
		ms->budget = jalloc(j, sizeof(*ms->budget) * s->n_out, socket);
		ms->ask_mask = rte_align32pow2(n * s->n_origins);
		ms->ask_mask =
			(ms->ask_mask < DP_MCAST_ASK_MAX ? ms->ask_mask : DP_MCAST_ASK_MAX) - 1;
		ms->ask = jalloc(j, sizeof(*ms->ask) * (ms->ask_mask + 1), socket);
		if (ms->keep == NULL || ms->budget == NULL || ms->ask == NULL)
			return -ENOMEM;
		for (uint16_t k = 0; k < s->n_out; k++)
			ms->budget[k].tsc = rte_rdtsc();
	}
	return 0;
}

/* Check that the table is for this gateway and fits this dataplane. */
static int
check_fit(struct dp *dp, struct dp_job *j, char *err, size_t errlen)
{
	const struct table *tb = j->tb;
	char ip[16];
	unsigned int p;

	/* The table's address of this gateway: a port's own, or the one a NAT gives it towards
	 * the peers (--nat-addr). Packets leave from the port's own address either way: the
	 * NAT rewrites it. */
	for (p = 0; p < dp->n_ports; p++)
		if (dp->ports[p].ipv4 == tb->gw.ipv4 ||
		    (dp->ports[p].nat_ipv4 != 0 && dp->ports[p].nat_ipv4 == tb->gw.ipv4))
			break;
	if (p == dp->n_ports) {
		json_util_fail(err, errlen,
			       "field 'gateway.ipv4': %s is not an address of this dataplane "
			       "(--addr) nor one a NAT gives it (--nat-addr)",
			       table_ipv4_format(tb->gw.ipv4, ip));
		errno = EINVAL;
		return -1;
	}
	j->self_port = (uint16_t)p;
	j->self_ipv4 = dp->ports[p].ipv4;
	if (tb->gw.base_port != dp->prm.udp_base || tb->gw.ports != dp->prm.udp_count) {
		json_util_fail(err, errlen,
			       "field 'gateway.base_port': ports %u+%u differ from "
			       "this dataplane's --base-port %u --ports %u",
			       tb->gw.base_port, tb->gw.ports, dp->prm.udp_base, dp->prm.udp_count);
		errno = EINVAL;
		return -1;
	}
	/* A full chunk with its contributor set, sealed or in the LAN dtype: the largest
	 * packet of the table. */
	uint64_t need = table_mtu_needed(tb);

	if (need > dp->prm.mtu) {
		json_util_fail(err, errlen,
			       "field 'chunk_elements': chunks of %" PRIu64 " bytes (with "
			       "their contributor set) need an MTU of %" PRIu64
			       ", this dataplane runs --mtu %u",
			       need - WIRE_MTU_OVERHEAD, need, dp->prm.mtu);
		errno = E2BIG;
		return -1;
	}
	return 0;
}

struct dp_job *
dp_job_create(struct dp *dp, struct table *tb, char *err, size_t errlen)
{
	int socket = (int)rte_lcore_to_socket_id(dp->lcores[0]->lcore_id);
	struct dp_job *j =
		rte_zmalloc_socket("georeduce-job", sizeof(*j), RTE_CACHE_LINE_SIZE, socket);
	int max_id = -1;

	if (j == NULL) {
		json_util_fail(err, errlen, "out of memory");
		errno = ENOMEM;
		return NULL;
	}
	j->tb = tb;
	j->job = tb->job;
	j->epoch = tb->epoch;
	j->dtype = (enum wire_dtype)tb->dtype; /* the same numbering (docs/TABLES.md) */
	j->lan_dtype = (enum wire_dtype)table_lan_dtype(tb);
	j->chunk_elements = tb->chunk_elements;
	j->cset_blocks = tb->cset_blocks;
	j->cset_len = (uint32_t)tb->cset_blocks * WIRE_CSET_BLOCK;
	j->elements = tb->elements;
	j->n_chunks = table_n_chunks(tb);
	j->self_id = tb->gw.id;
	j->udp_base = tb->gw.base_port;
	j->udp_count = tb->gw.ports;
	j->n_lcores = dp->n_lcores;
	if (check_fit(dp, j, err, errlen) != 0 ||
	    dp_job_seals_create(dp, j, socket, err, errlen) != 0)
		goto fail;
	j->n_trees = tb->n_trees;
	for (int i = 0; i < tb->n_trees; i++)
		max_id = tb->trees[i].id > max_id ? tb->trees[i].id : max_id;
	for (int s = 0; s < tb->n_shards; s++)
		for (int k = 0; k < tb->shards[s].n_trees; k++)
			max_id = tb->shards[s].trees[k].id > max_id ? tb->shards[s].trees[k].id :
								      max_id;
	j->tree_map_n = (uint16_t)(max_id + 1);
	j->tree_map = jalloc(j, sizeof(*j->tree_map) * (size_t)(max_id + 1), socket);
	j->trees = jalloc(j, sizeof(*j->trees) * (size_t)tb->n_trees, socket);
	j->slots = jalloc(j, sizeof(*j->slots) * dp->n_lcores, socket);
	j->arena = jalloc(j, sizeof(*j->arena) * dp->n_lcores, socket);
	j->busy = jalloc(j, sizeof(*j->busy) * dp->n_lcores, socket);
	j->done = jalloc(j, sizeof(*j->done) * dp->n_lcores, socket);
	j->lj = jalloc(j, sizeof(*j->lj) * dp->n_lcores, socket);
	if (j->tree_map == NULL || j->trees == NULL || j->slots == NULL || j->arena == NULL ||
	    j->busy == NULL || j->done == NULL || j->lj == NULL) {
		json_util_fail(err, errlen, "out of memory");
		errno = ENOMEM;
		goto fail;
	}
	/* The trees of the site's other gateways: their chunks are not for this one. */
	for (int s = 0; s < tb->n_shards; s++)
		for (int k = 0; k < tb->shards[s].n_trees; k++)
			j->tree_map[tb->shards[s].trees[k].id] = DP_TREE_SHARD;
	for (int i = 0; i < tb->n_trees; i++) {
		j->tree_map[tb->trees[i].id] = (uint16_t)(i + 1);
		if (build_tree(dp, j, i, socket, err, errlen) != 0)
			goto fail;
	}
	/* Each tree's parent may ask for RESULTs too (result recovery, PROTOCOL.md 10.1). */
	j->parent_budget_off = j->n_budgets;
	j->n_budgets += (uint32_t)tb->n_trees;
	j->src_round = jalloc(j, sizeof(*j->src_round) * j->parent_budget_off, socket);
	if (j->src_round == NULL) {
		json_util_fail(err, errlen, "out of memory");
		errno = ENOMEM;
		goto fail;
	}
	max_id = -1;
	for (int i = 0; i < tb->n_streams; i++)
		max_id = tb->streams[i].id > max_id ? tb->streams[i].id : max_id;
	j->n_streams = tb->n_streams;
	j->stream_map_n = (uint16_t)(max_id + 1);
	j->stream_map = jalloc(j, sizeof(*j->stream_map) * (size_t)(max_id + 1), socket);
	j->streams = jalloc(j, sizeof(*j->streams) * (size_t)tb->n_streams, socket);
	if (j->stream_map == NULL || j->streams == NULL) {
		json_util_fail(err, errlen, "out of memory");
		errno = ENOMEM;
		goto fail;
	}
	for (int i = 0; i < tb->n_streams; i++) {
		j->stream_map[tb->streams[i].id] = (uint16_t)(i + 1);
		if (build_stream(dp, j, i, socket, err, errlen) != 0)
			goto fail;
	}
	/* A slot holds at most two packets: the accumulator, partial sum or RESULT of its
	 * round, and the RESULT of the round before. */
	j->mbufs_held_max = 2 * (uint64_t)j->slots_per_lcore * dp->n_lcores;
	/* A copy waiting in a stream's pacer keeps the received frame (packet pool) alive
	 * through its indirect mbuf: at most one packet per queue entry. The queues are
	 * halved (to DP_MCAST_PACE_Q_MIN) while the job with its smallest rings would not
	 * fit what is left of the budget. */
	uint64_t to_links = 0;

	for (int i = 0; i < j->n_streams; i++)
		to_links += (uint64_t)j->streams[i].n_to * dp->n_lcores;
	for (j->mcast_pace_q = DP_MCAST_PACE_Q;
	     j->mcast_pace_q > DP_MCAST_PACE_Q_MIN &&
	     dp->mbufs_committed + j->mbufs_held_max + j->mcast_pace_q * to_links +
			     (uint64_t)mcast_keep_total(j, 31) * dp->n_lcores >
		     dp->mbufs_budget;
	     j->mcast_pace_q /= 2)
		;
	j->mbufs_held_max += j->mcast_pace_q * to_links;
	/* Every stream retains the copies it forwarded (one packet each), per lcore: rings
	 * halved until the job fits what is left of the budget, while they can be. */
	j->mcast_keep_shift = 0;
	while (mcast_keep_total(j, j->mcast_keep_shift + 1) <
		       mcast_keep_total(j, j->mcast_keep_shift) &&
	       dp->mbufs_committed + j->mbufs_held_max +
			       (uint64_t)mcast_keep_total(j, j->mcast_keep_shift) * dp->n_lcores >
		       dp->mbufs_budget)
		j->mcast_keep_shift++;
	j->mcast_keep_per_lcore = mcast_keep_total(j, j->mcast_keep_shift);
	j->mbufs_held_max += (uint64_t)j->mcast_keep_per_lcore * dp->n_lcores;
	if (dp->mbufs_committed + j->mbufs_held_max > dp->mbufs_budget) {
		json_util_fail(err, errlen,
			       "field 'trees': the slot pools hold up to %" PRIu64
			       " packets, this dataplane has %" PRIu64 " of %" PRIu64
			       " left (raise --mbufs)",
			       j->mbufs_held_max, dp->mbufs_budget - dp->mbufs_committed,
			       dp->mbufs_budget);
		errno = E2BIG;
		goto fail;
	}
	bool half = j->dtype != WIRE_DTYPE_FP32;

	/* NACK_RESULT answers: DP_BUDGET_CAP full RESULT frames, refilled with time. */
	j->budget_cap = DP_BUDGET_CAP * (uint32_t)(WIRE_FRAME_PAYLOAD_OFF + j->cset_len +
						   table_dtype_bytes(tb->dtype, j->chunk_elements));
	j->budget_tsc_per_byte = rte_get_tsc_hz() / DP_BUDGET_REFILL_BPS;
	j->mcast_reask_tsc = rte_get_tsc_hz() / 1000000 * DP_MCAST_REASK_US;
	j->grace_floor_tsc = rte_get_tsc_hz() / 1000000 * DP_GRACE_FLOOR_US;
	j->mcast_ask_life_tsc = rte_get_tsc_hz() / 1000000 * DP_MCAST_ASK_LIFE_US;
	for (unsigned int l = 0; l < dp->n_lcores; l++) {
		int ls = (int)rte_lcore_to_socket_id(dp->lcores[l]->lcore_id);

		j->slots[l] = jalloc(j, sizeof(struct dp_slot) * j->slots_per_lcore, ls);
		if (half)
			j->arena[l] = jalloc(
				j, sizeof(float) * j->chunk_elements * (size_t)j->slots_per_lcore,
				ls);
		if (j->slots[l] == NULL || (half && j->arena[l] == NULL)) {
			json_util_fail(err, errlen, "out of memory for %u slots (lcore %u)",
				       j->slots_per_lcore, dp->lcores[l]->lcore_id);
			errno = ENOMEM;
			goto fail;
		}
		for (uint32_t s = 0; half && s < j->slots_per_lcore; s++)
			j->slots[l][s].acc32 = j->arena[l] + (size_t)s * j->chunk_elements;
		/* Timers: two entries per slot at most. */
		struct dp_job_lcore *lj = &j->lj[l];
		uint32_t cap = 1;

		while (cap < 2 * j->slots_per_lcore)
			cap <<= 1;
		lj->q = jalloc(j, sizeof(*lj->q) * cap, ls);
		lj->srtt = jalloc(j, sizeof(*lj->srtt) * (size_t)j->n_trees, ls);
		lj->rttvar = jalloc(j, sizeof(*lj->rttvar) * (size_t)j->n_trees, ls);
		lj->progress = jalloc(j, sizeof(*lj->progress) * (size_t)j->n_trees, ls);
		lj->progress_sent = jalloc(j, sizeof(*lj->progress_sent) * (size_t)j->n_trees, ls);
		lj->progress_rtt = jalloc(j, sizeof(*lj->progress_rtt) * (size_t)j->n_trees, ls);
		lj->tail_probe = jalloc(j, sizeof(*lj->tail_probe) * (size_t)j->n_trees, ls);
		lj->progress_round =
			jalloc(j, sizeof(*lj->progress_round) * (size_t)j->n_trees, ls);
		lj->budget = jalloc(j, sizeof(*lj->budget) * j->n_budgets, ls);
		if (lj->q == NULL || lj->srtt == NULL || lj->rttvar == NULL ||
		    lj->progress == NULL || lj->progress_sent == NULL || lj->progress_rtt == NULL ||
		    lj->tail_probe == NULL || lj->progress_round == NULL || lj->budget == NULL) {
			json_util_fail(err, errlen, "out of memory for timers (lcore %u)",
				       dp->lcores[l]->lcore_id);
			errno = ENOMEM;
			goto fail;
		}
		lj->mask = cap - 1;
		for (uint32_t b = 0; b < j->n_budgets; b++) /* empty; time refills it */
			lj->budget[b].tsc = rte_rdtsc();
		if (init_pacers(dp, j, lj, ls) != 0 || init_mstreams(j, lj, ls) != 0 ||
		    init_grace(j, lj, ls) != 0) {
			json_util_fail(err, errlen, "out of memory for pacers (lcore %u)",
				       dp->lcores[l]->lcore_id);
			errno = ENOMEM;
			goto fail;
		}
	}
	dp->mbufs_committed += j->mbufs_held_max;
	dp->job_bytes += j->bytes;
	return j;
fail : {
	int e = errno;

	j->mbufs_held_max = 0; /* not committed */
	j->bytes = 0;
	j->tb = NULL; /* the caller still owns tb */
	dp_job_free(dp, j);
	errno = e;
	return NULL;
}
}

void
dp_job_free(struct dp *dp, struct dp_job *j)
{
	if (j == NULL)
		return;
	for (unsigned int l = 0; j->slots != NULL && l < j->n_lcores; l++) {
		for (uint32_t i = 0; j->slots[l] != NULL && i < j->slots_per_lcore; i++) {
			rte_pktmbuf_free(j->slots[l][i].acc);
			rte_pktmbuf_free(j->slots[l][i].result);
			rte_pktmbuf_free(j->slots[l][i].prev);
		}
		rte_free(j->slots[l]);
		if (j->arena != NULL)
			rte_free(j->arena[l]);
		if (j->lj != NULL) {
			struct dp_job_lcore *lj = &j->lj[l];

			for (uint32_t k = 0; lj->pacers != NULL && k < j->n_pacers; k++) {
				struct dp_pacer *pc = &lj->pacers[k];

				while (pc->q != NULL && pc->head != pc->tail)
					rte_pktmbuf_free(pc->q[pc->head++ & pc->mask]);
				rte_free(pc->q);
			}
			rte_free(lj->pacers);
			rte_free(lj->active);
			rte_free(lj->q);
			rte_free(lj->gq);
			rte_free(lj->srtt);
			rte_free(lj->rttvar);
			rte_free(lj->progress);
			rte_free(lj->progress_sent);
			rte_free(lj->progress_rtt);
			rte_free(lj->tail_probe);
			rte_free(lj->progress_round);
			rte_free(lj->budget);
			for (int i = 0; lj->mstreams != NULL && i < j->n_streams; i++) {
				struct dp_mstream *ms = &lj->mstreams[i];
				uint32_t n = (ms->keep_mask + 1) * j->streams[i].n_origins;

				for (uint32_t k = 0; ms->keep != NULL && k < n; k++)
					rte_pktmbuf_free(ms->keep[k].m);
				rte_free(ms->keep);
				rte_free(ms->budget);
				rte_free(ms->ask);
			}
			rte_free(lj->mstreams);
		}
	}
	for (int i = 0; j->trees != NULL && i < j->n_trees; i++) {
		rte_free(j->trees[i].down);
		rte_free(j->trees[i].src_ids);
		rte_free(j->trees[i].src_bits);
		rte_free(j->trees[i].src_worker);
		rte_free(j->trees[i].src_down);
		rte_free(j->trees[i].src_contrib);
		rte_free(j->trees[i].child_sets);
	}
	rte_free(j->trees);
	rte_free(j->tree_map);
	for (int i = 0; j->streams != NULL && i < j->n_streams; i++) {
		rte_free(j->streams[i].out);
		rte_free(j->streams[i].origins);
		rte_free(j->streams[i].origin_key);
		rte_free(j->streams[i].origin_count);
	}
	rte_free(j->streams);
	rte_free(j->stream_map);
	dp_job_seals_free(dp, j);
	rte_free((void *)j->busy);
	rte_free((void *)j->done);
	rte_free((void *)j->src_round);
	rte_free(j->lj);
	rte_free(j->slots);
	rte_free(j->arena);
	dp->mbufs_committed -= j->mbufs_held_max;
	dp->job_bytes -= j->bytes;
	table_free(j->tb);
	if (j->table_json != NULL) /* holds the link keys */
		explicit_bzero(j->table_json, strlen(j->table_json));
	free(j->table_json);
	rte_free(j);
}

uint64_t
dp_job_pacing(const struct dp_job *j)
{
	uint64_t n = 0;

	for (unsigned int l = 0; l < j->n_lcores; l++)
		n += atomic_load_explicit(&j->lj[l].n_active, memory_order_relaxed);
	return n;
}

uint64_t
dp_job_done(const struct dp_job *j)
{
	uint64_t n = 0;

	for (unsigned int l = 0; l < j->n_lcores; l++)
		n += atomic_load_explicit(&j->done[l], memory_order_relaxed);
	return n;
}

uint64_t
dp_job_busy(const struct dp_job *j)
{
	uint64_t n = 0;

	for (unsigned int l = 0; l < j->n_lcores; l++)
		n += atomic_load_explicit(&j->busy[l], memory_order_relaxed);
	return n;
}

uint64_t
dp_job_quorum(const struct dp_job *j, uint64_t *q)
{
	uint64_t win = 0;

	for (int k = 0; k < DP_QUORUM_COUNT; k++)
		q[k] = 0;
	for (unsigned int l = 0; l < j->n_lcores; l++) {
		uint64_t a = atomic_load_explicit(&j->lj[l].grace_auto_tsc, memory_order_relaxed);

		for (int k = 0; k < DP_QUORUM_COUNT; k++)
			q[k] += atomic_load_explicit(&j->lj[l].quorum[k], memory_order_relaxed);
		for (int i = 0; i < j->n_trees; i++) {
			const struct dp_tree *t = &j->trees[i];
			uint64_t w =
				t->grace_adaptive && a != 0 && a < t->grace_tsc ? a : t->grace_tsc;

			win = w > win ? w : win;
		}
	}
	return win / (rte_get_tsc_hz() / 1000000);
}
