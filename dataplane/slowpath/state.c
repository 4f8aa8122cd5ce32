/* SPDX-License-Identifier: BSD-3-Clause
 *
 * Slow path (control thread): the life of installed tables and of neighbours.
 *
 * Publication (RCU): the set of jobs the workers see is one immutable struct dp_state.
 * A change builds a new one, publishes it with a release store, waits for a grace period
 * (rte_rcu_qsbr_synchronize: every online worker has finished the loop iteration in which
 * it could have read the old one) and only then frees the old state and any job that
 * left it. A new epoch becomes epochs[0] (live); the previous ones stay behind it,
 * draining: their open slots finish, they open no new ones (chunks started under epoch N
 * finish under N). An epoch leaves when its slots have drained or after --drain-ms.
 *
 * A table's runtime form, its routes and neighbour entries are job.c's: this file calls
 * job.c, never the other way.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rte_arp.h>
#include <rte_cycles.h>
#include <rte_lcore.h>
#include <rte_log.h>
#include <rte_malloc.h>
#include <rte_rcu_qsbr.h>
#include <rte_ring_elem.h>

#include "dp.h"
#include "jsonutil.h"
#include "slowpath/slowpath.h"

#define ARP_RETRY_MS 200 /* unresolved neighbours are asked for this often */

/* A copy of st (or an empty state) where the workers read it: the first lcore's socket. */
static struct dp_state *
state_copy(const struct dp *dp, const struct dp_state *st)
{
	struct dp_state *n =
		rte_zmalloc_socket("georeduce-state", sizeof(*n), RTE_CACHE_LINE_SIZE,
				   (int)rte_lcore_to_socket_id(dp->lcores[0]->lcore_id));

	if (n != NULL && st != NULL)
		*n = *st;
	return n;
}

/* Publish nst, wait until no worker can see the old state, free it and the jobs given. */
static void
publish(struct dp *dp, struct dp_state *nst, struct dp_job **gone, int n_gone)
{
	struct dp_state *old = atomic_exchange_explicit(&dp->state, nst, memory_order_acq_rel);

	rte_rcu_qsbr_synchronize(dp->rcu, RTE_QSBR_THRID_INVALID);
	rte_free(old);
	for (int i = 0; i < n_gone; i++)
		dp_job_free(dp, gone[i]);
}

static int
find_entry(const struct dp_state *st, uint32_t job)
{
	for (int i = 0; st != NULL && i < st->n_jobs; i++)
		if (st->jobs[i].job == job)
			return i;
	return -1;
}

static int
find_staged(const struct dp *dp, uint32_t job)
{
	for (int i = 0; i < DP_JOBS_MAX; i++)
		if (dp->staged[i] != NULL && dp->staged[i]->job == job)
			return i;
	return -1;
}

static int retire(struct dp *dp, bool now_lingering);

int
dp_prepare(struct dp *dp, const json_t *table, uint32_t membership, uint32_t *job, uint32_t *epoch,
	   char *err, size_t errlen)
{
	const struct dp_state *st = atomic_load_explicit(&dp->state, memory_order_relaxed);
	char *text = json_dumps(table, JSON_COMPACT | JSON_SORT_KEYS);
	struct table *tb;
	struct dp_job *j;
	int e, s;

	if (text == NULL) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	tb = table_parse(text, "table", err, errlen);
	if (tb != NULL && dp->prm.act_revision != 0 &&
	    table_check_revision(tb, dp->prm.act_revision, err, errlen) != 0) {
		table_free(tb); /* --revision: what that older gateway refuses */
		tb = NULL;
		errno = EINVAL;
	}
	if (tb == NULL) {
		free(text);
		return errno == ENOMEM ? -ENOMEM : -EINVAL;
	}
	*job = tb->job;
	*epoch = tb->epoch;
	e = find_entry(st, tb->job);
	if (e >= 0 && !st->jobs[e].removed) {
		const struct dp_job *live = st->jobs[e].epochs[0];

		if (live->epoch == tb->epoch) {
			snprintf(err, errlen, "job %u epoch %u is already live", tb->job,
				 tb->epoch);
			goto eexist;
		}
		if (wire_round_before(tb->epoch, live->epoch)) {
			snprintf(err, errlen,
				 "field 'epoch': %u is older than the live epoch %u of "
				 "job %u",
				 tb->epoch, live->epoch, tb->job);
			table_free(tb);
			free(text);
			return -ESTALE;
		}
	}
	s = find_staged(dp, tb->job);
	if (s >= 0 && dp->staged[s]->epoch == tb->epoch) {
		if (strcmp(dp->staged[s]->table_json, text) == 0 &&
		    dp->staged[s]->membership == membership) { /* the same again: fine */
			table_free(tb);
			free(text);
			return 0;
		}
		snprintf(err, errlen,
			 "job %u epoch %u is already prepared with another table or membership",
			 tb->job, tb->epoch);
		goto eexist;
	}
	if (e < 0 && (st == NULL ? 0 : st->n_jobs) >= DP_JOBS_MAX) {
		snprintf(err, errlen,
			 "field 'job': %d jobs are installed, the most this dataplane "
			 "holds",
			 DP_JOBS_MAX);
		table_free(tb);
		free(text);
		return -E2BIG;
	}
	if (s >= 0) { /* a newer table replaces the staged one */
		dp_job_free(dp, dp->staged[s]);
		dp->staged[s] = NULL;
	} else {
		for (s = 0; s < DP_JOBS_MAX && dp->staged[s] != NULL; s++)
			;
		if (s == DP_JOBS_MAX) {
			snprintf(err, errlen, "%d tables are prepared and not activated",
				 DP_JOBS_MAX);
			table_free(tb);
			free(text);
			return -E2BIG;
		}
	}
	j = dp_job_create(dp, tb, err, errlen);
	/* Out of room (mbufs, sessions): what drained epochs keep for result recovery is the
	 * first to go. */
	if (j == NULL && errno == E2BIG && retire(dp, true) > 0)
		j = dp_job_create(dp, tb, err, errlen);
	if (j == NULL) {
		int rc = -errno;

		table_free(tb);
		free(text);
		return rc;
	}
	j->table_json = text;
	j->membership = membership;
	dp->staged[s] = j;
	DP_LOG(INFO, "job %u epoch %u prepared: %d trees, %u slots per lcore, %" PRIu64 " bytes\n",
	       j->job, j->epoch, j->n_trees, j->slots_per_lcore, j->bytes);
	return 0;
eexist:
	table_free(tb);
	free(text);
	return -EEXIST;
}

int
dp_activate(struct dp *dp, uint32_t job, uint32_t epoch, char *err, size_t errlen)
{
	const struct dp_state *st = atomic_load_explicit(&dp->state, memory_order_relaxed);
	int s = find_staged(dp, job), e = find_entry(st, job);
	struct dp_job *gone[1];
	int n_gone = 0;

	if (s < 0 || dp->staged[s]->epoch != epoch) {
		if (e >= 0 && !st->jobs[e].removed && st->jobs[e].epochs[0]->epoch == epoch)
			return 0; /* already live */
		snprintf(err, errlen, "job %u epoch %u is not prepared", job, epoch);
		return -ENOENT;
	}
	struct dp_state *n = state_copy(dp, st);

	if (n == NULL) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	if (e < 0) {
		e = n->n_jobs++;
		memset(&n->jobs[e], 0, sizeof(n->jobs[e]));
		n->jobs[e].job = job;
	} else {
		uint64_t now = rte_get_tsc_cycles();

		if (n->jobs[e].n_epochs == DP_EPOCHS_MAX) /* the oldest draining one goes */
			gone[n_gone++] = n->jobs[e].epochs[--n->jobs[e].n_epochs];
		if (n->jobs[e].epochs[0]->retire_tsc == 0)
			n->jobs[e].epochs[0]->retire_tsc = now;
		memmove(&n->jobs[e].epochs[1], &n->jobs[e].epochs[0],
			sizeof(n->jobs[e].epochs[0]) * (size_t)n->jobs[e].n_epochs);
	}
	n->jobs[e].epochs[0] = dp->staged[s];
	n->jobs[e].n_epochs++;
	n->jobs[e].removed = false;
	dp->staged[s] = NULL;
	publish(dp, n, gone, n_gone);
	DP_LOG(INFO, "job %u epoch %u live\n", job, epoch);
	return 0;
}

int
dp_remove(struct dp *dp, uint32_t job, char *err, size_t errlen)
{
	const struct dp_state *st = atomic_load_explicit(&dp->state, memory_order_relaxed);
	int e = find_entry(st, job), s = find_staged(dp, job);

	if (s >= 0) {
		dp_job_free(dp, dp->staged[s]);
		dp->staged[s] = NULL;
	}
	if (e < 0 || st->jobs[e].removed) {
		if (s >= 0)
			return 0;
		snprintf(err, errlen, "job %u is not installed", job);
		return -ENOENT;
	}
	struct dp_state *n = state_copy(dp, st);

	if (n == NULL) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	n->jobs[e].removed = true;
	n->jobs[e].epochs[0]->retire_tsc = rte_get_tsc_cycles();
	publish(dp, n, NULL, 0);
	DP_LOG(INFO, "job %u removed, draining\n", job);
	return 0;
}

void
dp_neigh_set(struct dp *dp, int idx, const struct rte_ether_addr *mac, bool is_static)
{
	if (is_static)
		dp->neigh[idx].is_static = true;
	atomic_store_explicit(&dp->neigh[idx].mac, dp_neigh_word(mac->addr_bytes),
			      memory_order_relaxed);
}

/* A PROBE_REPLY from a peer: when, and the round trip. From no peer: counted, dropped. */
static void
peer_reply(struct dp *dp, const struct dp_learn *l)
{
	bool peer = false;

	for (unsigned int i = 0; i < dp->n_peers; i++)
		if (dp->peers[i].ipv4 == l->ipv4) {
			dp->peers[i].last_reply_tsc = rte_get_tsc_cycles();
			dp->peers[i].rtt_us = l->rtt_us;
			dp->peers[i].unanswered = 0;
			dp->peers[i].replies++;
			peer = true;
		}
	if (!peer)
		dp->probe_replies_unsolicited++;
}

int
dp_peers_set(struct dp *dp, const json_t *peers, char *err, size_t errlen)
{
	struct dp_peer np[DP_PEERS_MAX];
	size_t i, n = json_array_size(peers);
	const json_t *v;

	if (!json_is_array(peers)) {
		snprintf(err, errlen, "field 'peers': expected an array");
		return -EINVAL;
	}
	if (n > DP_PEERS_MAX) {
		snprintf(err, errlen, "field 'peers': %zu peers, at most %d", n, DP_PEERS_MAX);
		return -E2BIG;
	}
	memset(np, 0, sizeof(np));
	json_array_foreach (peers, i, v) {
		const char *ip = NULL;
		json_int_t base = 0, ports = 0;
		json_error_t je;
		char field[32];

		snprintf(field, sizeof(field), "peers[%zu]", i);
		if (json_unpack_ex((json_t *)v, &je, JSON_STRICT, "{s:s,s:I,s:I}", "ipv4", &ip,
				   "base_port", &base, "ports", &ports) != 0 ||
		    table_ipv4_parse(ip, &np[i].ipv4) != 0 || !table_ipv4_unicast(np[i].ipv4) ||
		    wire_port_range_check((unsigned int)base, (unsigned int)ports) != 0 ||
		    base < 1 || base > 65535 || ports < 1 || ports > 65535) {
			snprintf(err, errlen,
				 "field '%s': expected {\"ipv4\": dotted quad, "
				 "\"base_port\": 1..65535, \"ports\": >= 1}",
				 field);
			return -EINVAL;
		}
		np[i].d.ipv4 = np[i].ipv4;
		np[i].d.udp_base = (uint16_t)base;
		np[i].d.udp_count = (uint16_t)ports;
		if (dp_dest_route(dp, &np[i].d, field, err, errlen) != 0)
			return errno == E2BIG ? -E2BIG : -EINVAL;
		/* Keep what is known of a peer that stays. */
		for (unsigned int k = 0; k < dp->n_peers; k++)
			if (dp->peers[k].ipv4 == np[i].ipv4) {
				np[i].last_reply_tsc = dp->peers[k].last_reply_tsc;
				np[i].rtt_us = dp->peers[k].rtt_us;
				np[i].unanswered = dp->peers[k].unanswered;
				np[i].probes = dp->peers[k].probes;
				np[i].replies = dp->peers[k].replies;
			}
	}
	memcpy(dp->peers, np, sizeof(np));
	dp->n_peers = (unsigned int)n;
	dp->peers_since_tsc = rte_get_tsc_cycles();
	return 0;
}

/* A PROBE to every peer (job 0, sender none), through the lcore owning the port's queue 0. */
static void
probe_peers(struct dp *dp)
{
	uint64_t now = rte_get_tsc_cycles();

	if (dp->n_peers == 0 || now - dp->probe_tsc < rte_get_tsc_hz() / 1000 * dp->prm.probe_ms)
		return;
	dp->probe_tsc = now;
	for (unsigned int i = 0; i < dp->n_peers; i++) {
		struct dp_peer *pr = &dp->peers[i];
		const struct dp_port *pt = &dp->ports[pr->d.port];
		uint64_t mac = atomic_load_explicit(&dp->neigh[pr->d.nh].mac, memory_order_relaxed);
		struct wire_pkt w = {
			.type = WIRE_TYPE_PROBE,
			.dtype = WIRE_DTYPE_NONE,
			.sender = WIRE_NODE_NONE,
			.origin = WIRE_NODE_NONE,
			.tsval = (uint32_t)(now / (rte_get_tsc_hz() / 1000000u)),
		};
		struct wire_flow f = {
			.src_ip = pt->ipv4,
			.dst_ip = pr->ipv4,
			.src_port = dp->prm.udp_base,
			.dst_port = pr->d.udp_base,
		};
		struct rte_mbuf *m;
		uint8_t *frame;

		if (!(mac & DP_NEIGH_VALID))
			continue; /* resolve() is asking for it */
		for (int b = 0; b < RTE_ETHER_ADDR_LEN; b++)
			f.dst_mac[b] = (uint8_t)(mac >> (8 * (RTE_ETHER_ADDR_LEN - 1 - b)));
		memcpy(f.src_mac, pt->mac.addr_bytes, RTE_ETHER_ADDR_LEN);
		m = rte_pktmbuf_alloc(dp->lcores[0]->hdr_pool);
		if (m == NULL)
			return;
		frame = (uint8_t *)rte_pktmbuf_append(m, WIRE_FRAME_HDR_OFF + WIRE_HDR_LEN);
		if (frame == NULL ||
		    wire_hdr_encode(frame + WIRE_FRAME_HDR_OFF, WIRE_HDR_LEN, &w, NULL) != 0 ||
		    wire_frame_build(frame, WIRE_FRAME_HDR_OFF + WIRE_HDR_LEN, &f, WIRE_HDR_LEN,
				     false) != 0 ||
		    rte_ring_sp_enqueue(pt->ctl_tx, m) != 0) {
			rte_pktmbuf_free(m);
			continue;
		}
		pr->probes++;
		pr->unanswered++;
	}
	dp_lcore_wake(dp, 0); /* it may wait for an Rx interrupt */
}

/* Keep the sighting l of an address that no neighbour entry has (yet). */
static void
seen_add(struct dp *dp, const struct dp_learn *l)
{
	unsigned int i;

	for (i = 0; i < dp->n_seen; i++)
		if (dp->seen[i].ipv4 == l->ipv4 && dp->seen[i].port == l->port)
			break;
	if (i == dp->n_seen) {
		if (dp->n_seen < DP_SEEN_MAX) {
			i = dp->n_seen++;
		} else {
			i = dp->seen_next;
			dp->seen_next = (dp->seen_next + 1) % DP_SEEN_MAX;
		}
	}
	dp->seen[i] =
		(struct dp_seen){.ipv4 = l->ipv4, .port = l->port, .mac = dp_neigh_word(l->mac)};
}

/* Take the workers' ARP sightings: refresh known neighbours (not static ones), and keep
 * the others for the tables to come. */
static void
learn(struct dp *dp)
{
	uint32_t n_neigh = atomic_load_explicit(&dp->n_neigh, memory_order_relaxed);

	for (unsigned int l = 0; l < dp->n_lcores; l++) {
		struct dp_learn ls[32];
		unsigned int n;

		while ((n = rte_ring_sc_dequeue_burst_elem(dp->lcores[l]->learn, ls, sizeof(ls[0]),
							   32, NULL)) != 0) {
			for (unsigned int i = 0; i < n; i++) {
				bool known = false;

				if (ls[i].kind == DP_LEARN_PROBE) {
					peer_reply(dp, &ls[i]);
					continue;
				}
				for (uint32_t k = 0; k < n_neigh; k++) {
					struct dp_neigh *nb = &dp->neigh[k];

					if (nb->ipv4 != ls[i].ipv4 || nb->port != ls[i].port)
						continue;
					known = true;
					if (!nb->is_static)
						atomic_store_explicit(&nb->mac,
								      dp_neigh_word(ls[i].mac),
								      memory_order_relaxed);
				}
				if (!known)
					seen_add(dp, &ls[i]);
			}
		}
	}
}

/* An ARP request for an unresolved neighbour, sent by the lcore that owns the port's
 * queue 0 (the control thread has no TX queue of its own). */
static void
arp_request(struct dp *dp, struct dp_neigh *nb)
{
	struct dp_port *pt = &dp->ports[nb->port];
	struct rte_mbuf *m = rte_pktmbuf_alloc(dp->lcores[0]->hdr_pool);

	if (m == NULL)
		return;
	struct rte_ether_hdr *eth = (struct rte_ether_hdr *)rte_pktmbuf_append(
		m, RTE_ETHER_MIN_LEN - RTE_ETHER_CRC_LEN);

	if (eth == NULL) {
		rte_pktmbuf_free(m);
		return;
	}
	memset(eth, 0, RTE_ETHER_MIN_LEN - RTE_ETHER_CRC_LEN);
	memset(eth->dst_addr.addr_bytes, 0xff, RTE_ETHER_ADDR_LEN);
	rte_ether_addr_copy(&pt->mac, &eth->src_addr);
	eth->ether_type = rte_cpu_to_be_16(RTE_ETHER_TYPE_ARP);
	struct rte_arp_hdr *arp = (struct rte_arp_hdr *)(eth + 1);

	arp->arp_hardware = rte_cpu_to_be_16(RTE_ARP_HRD_ETHER);
	arp->arp_protocol = rte_cpu_to_be_16(RTE_ETHER_TYPE_IPV4);
	arp->arp_hlen = RTE_ETHER_ADDR_LEN;
	arp->arp_plen = 4;
	arp->arp_opcode = rte_cpu_to_be_16(RTE_ARP_OP_REQUEST);
	rte_ether_addr_copy(&pt->mac, &arp->arp_data.arp_sha);
	arp->arp_data.arp_sip = rte_cpu_to_be_32(pt->ipv4);
	arp->arp_data.arp_tip = rte_cpu_to_be_32(nb->ipv4);
	if (rte_ring_sp_enqueue(pt->ctl_tx, m) != 0)
		rte_pktmbuf_free(m);
	else
		dp_lcore_wake(dp, 0);
}

static void
resolve(struct dp *dp)
{
	uint32_t n = atomic_load_explicit(&dp->n_neigh, memory_order_relaxed);
	uint64_t now = rte_get_tsc_cycles(), every = rte_get_tsc_hz() / 1000 * ARP_RETRY_MS;

	for (uint32_t i = 0; i < n; i++) {
		struct dp_neigh *nb = &dp->neigh[i];

		if (atomic_load_explicit(&nb->mac, memory_order_relaxed) & DP_NEIGH_VALID)
			continue;
		if (nb->last_request_tsc != 0 && now - nb->last_request_tsc < every)
			continue;
		nb->last_request_tsc = now;
		arp_request(dp, nb);
	}
}

/* Retire draining epochs whose slots have drained and that lingered --linger-ms since
 * they were replaced, keeping their RESULTs for result recovery (or that drained too
 * long); with `now_lingering`, every drained one at once. A removed job's epochs do not
 * linger. Returns how many it retired. */
static int
retire(struct dp *dp, bool now_lingering)
{
	const struct dp_state *st = atomic_load_explicit(&dp->state, memory_order_relaxed);
	struct dp_job *gone[DP_JOBS_MAX * DP_EPOCHS_MAX];
	uint64_t now = rte_get_tsc_cycles();
	uint64_t limit = rte_get_tsc_hz() / 1000 * dp->prm.drain_ms;
	uint64_t linger = rte_get_tsc_hz() / 1000 * dp->prm.linger_ms;
	int n_gone = 0;

	if (st == NULL)
		return 0;
	struct dp_state n = *st;

	for (int e = 0; e < n.n_jobs; e++) {
		int keep = 0;

		for (int k = 0; k < n.jobs[e].n_epochs; k++) {
			struct dp_job *j = n.jobs[e].epochs[k];
			bool draining = k > 0 || n.jobs[e].removed;

			/* Drained: no open slot, and every frame its pacers held has left (a
			 * RESULT copy waiting there is the only one its receiver gets). */
			bool idle = dp_job_busy(j) == 0 && dp_job_pacing(j) == 0;

			bool lingered =
				now_lingering || n.jobs[e].removed || now - j->retire_tsc >= linger;

			if (draining &&
			    ((idle && lingered) || (!idle && now - j->retire_tsc > limit))) {
				if (dp_job_busy(j) != 0)
					DP_LOG(WARNING,
					       "job %u epoch %u retired with %" PRIu64
					       " chunks unfinished\n",
					       j->job, j->epoch, dp_job_busy(j));
				gone[n_gone++] = j;
				continue;
			}
			n.jobs[e].epochs[keep++] = j;
		}
		n.jobs[e].n_epochs = keep;
	}
	if (n_gone == 0)
		return 0;
	/* Drop job entries with no epoch left. */
	int keep = 0;

	for (int e = 0; e < n.n_jobs; e++)
		if (n.jobs[e].n_epochs > 0)
			n.jobs[keep++] = n.jobs[e];
	n.n_jobs = keep;
	struct dp_state *ns = state_copy(dp, &n);

	if (ns == NULL)
		return 0; /* try again next time */
	publish(dp, ns, gone, n_gone);
	return n_gone;
}

void
dp_peers_update(struct dp *dp)
{
	learn(dp);
}

void
dp_housekeeping(struct dp *dp)
{
	learn(dp);
	resolve(dp);
	probe_peers(dp);
	(void)retire(dp, false);
}

void
dp_jobs_free_all(struct dp *dp)
{
	struct dp_state *st = atomic_exchange_explicit(&dp->state, NULL, memory_order_acq_rel);

	if (dp->rcu != NULL)
		rte_rcu_qsbr_synchronize(dp->rcu, RTE_QSBR_THRID_INVALID);
	for (int e = 0; st != NULL && e < st->n_jobs; e++)
		for (int k = 0; k < st->jobs[e].n_epochs; k++)
			dp_job_free(dp, st->jobs[e].epochs[k]);
	rte_free(st);
	for (int s = 0; s < DP_JOBS_MAX; s++) {
		dp_job_free(dp, dp->staged[s]);
		dp->staged[s] = NULL;
	}
}
