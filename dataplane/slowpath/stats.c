/* SPDX-License-Identifier: BSD-3-Clause
 *
 * Slow path (control thread, and DPDK's telemetry thread): counters, memory and tables as
 * JSON for the control socket, and the same counters through DPDK telemetry
 * (dpdk-telemetry.py: /georeduce/stats, /georeduce/lcore,<n>, /georeduce/jobs).
 *
 * The counters are written by their lcore with plain stores and read here with relaxed
 * atomic loads: a reading may lag by an iteration, never tears (64-bit aligned words).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rte_ethdev.h>
#include <rte_lcore.h>
#include <rte_telemetry.h>

#include "dp.h"
#include "slowpath/slowpath.h"

static const char *const ctr_names[DP_CTR_COUNT] = {
	[DP_CTR_RX_PACKETS] = "rx_packets",
	[DP_CTR_RX_BYTES] = "rx_bytes",
	[DP_CTR_TX_PACKETS] = "tx_packets",
	[DP_CTR_TX_BYTES] = "tx_bytes",
	[DP_CTR_TX_DROPPED] = "tx_dropped",
	[DP_CTR_CHUNKS_COMPLETED] = "chunks_completed",
	[DP_CTR_PARTIALS_SENT] = "partials_sent",
	[DP_CTR_RESULTS_SENT] = "results_sent",
	[DP_CTR_CONTRIBS] = "contributions",
	[DP_CTR_ACKS_SENT] = "acks_sent",
	[DP_CTR_RETRANSMITS] = "retransmits",
	[DP_CTR_NACKS_SENT] = "nacks_sent",
	[DP_CTR_RETX_STUCK] = "retx_stuck",
	[DP_CTR_MCAST_RX] = "mcast_rx",
	[DP_CTR_MCAST_COPIES] = "mcast_copies",
	[DP_CTR_PACED] = "paced",
	[DP_CTR_PACE_FULL] = "pace_full",
	[DP_CTR_ANSWER_BUDGET] = "answer_budget",
	[DP_CTR_RECOVER_ASKED] = "recover_asked",
	[DP_CTR_RECOVER_ANSWERED] = "recover_answered",
	[DP_CTR_RECOVERED] = "recovered",
	[DP_CTR_RECOVER_FULL] = "recover_full",
	[DP_CTR_SEALED] = "sealed",
	[DP_CTR_OPENED] = "opened",
	[DP_CTR_SEAL_BYTES] = "sealed_bytes",
	[DP_CTR_OPEN_BYTES] = "opened_bytes",
	[DP_CTR_ARP_REPLIES] = "arp_replies",
	[DP_CTR_ICMP_REPLIES] = "icmp_replies",
	[DP_CTR_NOT_FOR_US] = "not_for_us",
	[DP_CTR_NO_NEIGHBOUR] = "no_neighbour",
	[DP_CTR_NO_MBUF] = "no_mbuf",
	[DP_CTR_BAD_FRAME] = "bad_frame",
	[DP_CTR_BAD_HEADER] = "bad_header",
	[DP_CTR_CTL_TX] = "control_tx",
	[DP_CTR_FAULT_DROPPED] = "fault_dropped",
	[DP_CTR_FAULT_DUPLICATED] = "fault_duplicated",
	[DP_CTR_FAULT_REORDERED] = "fault_reordered",
	[DP_CTR_FAULT_DELAY_FULL] = "fault_delay_full",
};

static uint64_t
rd(const uint64_t *p)
{
	return __atomic_load_n(p, __ATOMIC_RELAXED);
}

/* One lcore's counters; drops only where nonzero (the reasons are many). */
static json_t *
lcore_json(const struct dp_lcore *lc)
{
	json_t *o = json_object(), *drops = json_object();
	uint64_t total = 0;

	json_object_set_new(o, "lcore", json_integer(lc->lcore_id));
	for (int c = 0; c < DP_CTR_COUNT; c++)
		json_object_set_new(o, ctr_names[c], json_integer((json_int_t)rd(&lc->ctr[c])));
	json_object_set_new(o, "duplicates",
			    json_integer((json_int_t)rd(&lc->drops[WIRE_REASON_DUPLICATE])));
	for (int r = 1; r < WIRE_REASON_COUNT_MAX; r++) {
		uint64_t v = rd(&lc->drops[r]);

		total += v;
		if (v != 0)
			json_object_set_new(drops, wire_reason_str((enum wire_reason)r),
					    json_integer((json_int_t)v));
	}
	json_object_set_new(o, "dropped", json_integer((json_int_t)total));
	json_object_set_new(o, "drops", drops);
	json_object_set_new(o, "iterations", json_integer((json_int_t)rd(&lc->iterations)));
	json_object_set_new(o, "busy_cycles", json_integer((json_int_t)rd(&lc->cycles_busy)));
	json_object_set_new(o, "kernels", json_string(lc->k->name));
	return o;
}

/* What pacer `pacer` of job j was handed, summed over the lcores. */
static void
pacer_sum(const struct dp_job *j, uint32_t pacer, uint64_t *bytes, uint64_t *frames,
	  uint64_t *retx)
{
	*bytes = *frames = *retx = 0;
	for (unsigned int l = 0; l < j->n_lcores; l++) {
		const struct dp_pacer *pc = &j->lj[l].pacers[pacer];

		*bytes += rd(&pc->bytes);
		*frames += rd(&pc->frames);
		*retx += rd(&pc->retx_bytes);
	}
}

/* Per tree and link to a gateway (the parent, each child gateway), then per stream and
 * link to a next-hop gateway: the planned rate and what the tree or stream handed to that
 * link so far, summed over the lcores. The control process derives each link's measured
 * rate from these (docs/CONTROL.md). Stream entries have "stream" where tree entries have
 * "tree" (tree and stream ids are independent: a reader tells them apart by the key).
 * Copies to local workers are no link's. */
static json_t *
links_json(const struct dp_job *j)
{
	json_t *arr = json_array();
	uint64_t bytes, frames, retx;
	char ip[16];

	for (int i = 0; i < j->n_trees; i++) {
		const struct dp_tree *t = &j->trees[i];

		for (uint32_t k = t->has_parent ? 0 : 1; k <= t->n_children; k++) {
			const struct dp_dest *d = k == 0 ? &t->parent : &t->down[k - 1];

			pacer_sum(j, t->pace_first + k, &bytes, &frames, &retx);
			json_array_append_new(arr, json_pack("{s:i,s:s,s:s,s:i,s:f,s:I,s:I,s:I}",
				"tree", t->id, "dir", k == 0 ? "up" : "down", "ipv4",
				table_ipv4_format(d->ipv4, ip), "id", d->id, "rate_gbps",
				t->tt->rate_gbps, "bytes", (json_int_t)bytes, "frames",
				(json_int_t)frames, "retx_bytes", (json_int_t)retx));
		}
	}
	for (int i = 0; i < j->n_streams; i++) {
		const struct dp_stream *s = &j->streams[i];

		for (uint32_t k = 0; k < s->n_to; k++) {
			const struct dp_dest *d = &s->out[k];

			/* retx is 0: a stream's copies are never retransmitted. */
			pacer_sum(j, s->pace_first + k, &bytes, &frames, &retx);
			json_array_append_new(arr, json_pack("{s:i,s:s,s:s,s:i,s:f,s:I,s:I,s:I}",
				"stream", s->id, "dir", "down", "ipv4",
				table_ipv4_format(d->ipv4, ip), "id", d->id, "rate_gbps",
				j->tb->streams[i].rate_gbps, "bytes", (json_int_t)bytes, "frames",
				(json_int_t)frames, "retx_bytes", (json_int_t)retx));
		}
	}
	return arr;
}

static json_t *
job_json(const struct dp_job *j, const char *state)
{
	json_t *o = json_object();

	json_object_set_new(o, "job", json_integer(j->job));
	json_object_set_new(o, "epoch", json_integer(j->epoch));
	json_object_set_new(o, "state", json_string(state));
	json_object_set_new(o, "trees", json_integer(j->n_trees));
	json_object_set_new(o, "streams", json_integer(j->n_streams));
	json_object_set_new(o, "slots_per_lcore", json_integer(j->slots_per_lcore));
	json_object_set_new(o, "chunks_in_flight", json_integer((json_int_t)dp_job_busy(j)));
	json_object_set_new(o, "chunks_done", json_integer((json_int_t)dp_job_done(j)));
	json_object_set_new(o, "memory_bytes", json_integer((json_int_t)j->bytes));
	json_object_set_new(o, "mbufs_held_max", json_integer((json_int_t)j->mbufs_held_max));
	json_object_set_new(o, "links", links_json(j));
	return o;
}

/* Call fn for every job: live, draining and prepared. */
static void
each_job(struct dp *dp, void (*fn)(const struct dp_job *, const char *, void *), void *arg)
{
	const struct dp_state *st = atomic_load_explicit(&dp->state, memory_order_acquire);

	for (int e = 0; st != NULL && e < st->n_jobs; e++)
		for (int k = 0; k < st->jobs[e].n_epochs; k++)
			fn(st->jobs[e].epochs[k],
			   k == 0 && !st->jobs[e].removed ? "live" : "draining", arg);
	for (int s = 0; s < DP_JOBS_MAX; s++)
		if (dp->staged[s] != NULL)
			fn(dp->staged[s], "prepared", arg);
}

static void
add_job(const struct dp_job *j, const char *state, void *arg)
{
	json_array_append_new(arg, job_json(j, state));
}

json_t *
dp_stats_json(struct dp *dp)
{
	json_t *o = json_object(), *lcores = json_array(), *ports = json_array();
	json_t *mem = json_object(), *jobs = json_array(), *neigh = json_array();

	for (unsigned int i = 0; i < dp->n_lcores; i++)
		json_array_append_new(lcores, lcore_json(dp->lcores[i]));
	for (unsigned int p = 0; p < dp->n_ports; p++) {
		const struct dp_port *pt = &dp->ports[p];
		struct rte_eth_stats es;
		json_t *po = json_object();
		char ip[16], mac[RTE_ETHER_ADDR_FMT_SIZE];

		rte_ether_format_addr(mac, sizeof(mac), &pt->mac);
		json_object_set_new(po, "port", json_integer(pt->port_id));
		json_object_set_new(po, "ipv4", json_string(table_ipv4_format(pt->ipv4, ip)));
		json_object_set_new(po, "prefix_len", json_integer(pt->prefix_len));
		json_object_set_new(po, "mac", json_string(mac));
		json_object_set_new(po, "rx_queues", json_integer(pt->n_rxq));
		json_object_set_new(po, "tx_queues", json_integer(pt->n_txq));
		if (rte_eth_stats_get(pt->port_id, &es) == 0) {
			json_object_set_new(po, "ipackets", json_integer((json_int_t)es.ipackets));
			json_object_set_new(po, "opackets", json_integer((json_int_t)es.opackets));
			json_object_set_new(po, "imissed", json_integer((json_int_t)es.imissed));
			json_object_set_new(po, "ierrors", json_integer((json_int_t)es.ierrors));
			json_object_set_new(po, "rx_nombuf", json_integer((json_int_t)es.rx_nombuf));
		}
		json_array_append_new(ports, po);
	}
	uint32_t nn = atomic_load_explicit(&dp->n_neigh, memory_order_acquire);

	for (uint32_t i = 0; i < nn; i++) {
		json_t *no = json_object();
		uint64_t v = atomic_load_explicit(&dp->neigh[i].mac, memory_order_relaxed);
		char ip[16], mac[24];

		snprintf(mac, sizeof(mac), "%02x:%02x:%02x:%02x:%02x:%02x", (unsigned)(v >> 40 & 0xff),
			 (unsigned)(v >> 32 & 0xff), (unsigned)(v >> 24 & 0xff),
			 (unsigned)(v >> 16 & 0xff), (unsigned)(v >> 8 & 0xff), (unsigned)(v & 0xff));
		json_object_set_new(no, "ipv4", json_string(table_ipv4_format(dp->neigh[i].ipv4, ip)));
		json_object_set_new(no, "port", json_integer(dp->ports[dp->neigh[i].port].port_id));
		json_object_set_new(no, "mac", (v & DP_NEIGH_VALID) ? json_string(mac) : json_null());
		json_object_set_new(no, "static", json_boolean(dp->neigh[i].is_static));
		json_array_append_new(neigh, no);
	}
	json_object_set_new(mem, "mempool_bytes", json_integer((json_int_t)dp->pool_bytes));
	json_object_set_new(mem, "job_bytes", json_integer((json_int_t)dp->job_bytes));
	json_object_set_new(mem, "mbufs_per_pool", json_integer((json_int_t)dp->prm.mbufs));
	json_object_set_new(mem, "mbufs_slot_budget", json_integer((json_int_t)dp->mbufs_budget));
	json_object_set_new(mem, "mbufs_committed", json_integer((json_int_t)dp->mbufs_committed));
	if (dp->n_lcores > 0)
		json_object_set_new(mem, "mbufs_free",
				    json_integer(rte_mempool_avail_count(dp->lcores[0]->pool)));
	if (dp->crypto.on) { /* the device and its pools; never a key */
		const struct dp_crypto *c = &dp->crypto;

		json_object_set_new(mem, "crypto", json_pack(
			"{s:s,s:s,s:b,s:i,s:I,s:I,s:I,s:I,s:I}", "device", c->name, "driver",
			c->driver != NULL ? c->driver : "?", "out_of_place", c->oop_lb && c->oop_sgl,
			"queue_pairs", (int)dp->n_lcores,
			"sessions_used", (json_int_t)c->sessions_used, "sessions_max",
			(json_int_t)c->sessions_max, "seal_mbufs", (json_int_t)c->seal_pool->size,
			"seal_mbufs_free", (json_int_t)rte_mempool_avail_count(c->seal_pool),
			"pool_bytes", (json_int_t)c->bytes));
	}
	each_job(dp, add_job, jobs);
	json_t *peers = json_array();
	uint64_t now = rte_get_tsc_cycles(), hz = rte_get_tsc_hz();

	for (unsigned int i = 0; i < dp->n_peers; i++) {
		const struct dp_peer *pr = &dp->peers[i];
		char ip[16];

		/* since_ms: since the last PROBE_REPLY, -1 if none since the list was set. */
		json_array_append_new(peers, json_pack("{s:s,s:I,s:f,s:I,s:I}", "ipv4",
			table_ipv4_format(pr->ipv4, ip), "since_ms",
			pr->last_reply_tsc == 0 ? (json_int_t)-1
						: (json_int_t)((now - pr->last_reply_tsc) * 1000 / hz),
			"rtt_ms", pr->rtt_us / 1e3, "probes", (json_int_t)pr->probes, "replies",
			(json_int_t)pr->replies));
	}
	json_object_set_new(o, "peers", peers);
	json_object_set_new(o, "probe_replies_unsolicited",
			    json_integer((json_int_t)dp->probe_replies_unsolicited));
	json_object_set_new(o, "peers_age_ms", json_integer(dp->n_peers == 0 ? -1 :
		(json_int_t)((now - dp->peers_since_tsc) * 1000 / hz)));
	json_object_set_new(o, "lcores", lcores);
	json_object_set_new(o, "ports", ports);
	json_object_set_new(o, "neighbours", neigh);
	json_object_set_new(o, "memory", mem);
	json_object_set_new(o, "jobs", jobs);
	return o;
}

struct dump_arg {
	uint32_t job;
	bool all;
	json_t *arr;
};

static void
add_table(const struct dp_job *j, const char *state, void *arg)
{
	struct dump_arg *a = arg;
	json_t *t;

	if (!a->all && j->job != a->job)
		return;
	t = table_to_json_public(j->tb); /* never the link keys */
	if (t == NULL)
		return;
	json_array_append_new(a->arr, json_pack("{s:s,s:o,s:o}", "state", state, "table", t,
						"sealed", table_seals_json(j->tb)));
}

json_t *
dp_dump_json(struct dp *dp, uint32_t job, bool all)
{
	struct dump_arg a = { .job = job, .all = all, .arr = json_array() };

	each_job(dp, add_table, &a);
	return a.arr;
}

/* --- Telemetry: read-only, from DPDK's telemetry thread ---------------------------------- */

static struct dp *tel_dp;

static int
tel_stats(const char *cmd __rte_unused, const char *params __rte_unused, struct rte_tel_data *d)
{
	uint64_t sum[DP_CTR_COUNT] = { 0 }, drops = 0, dups = 0;

	rte_tel_data_start_dict(d);
	for (unsigned int i = 0; i < tel_dp->n_lcores; i++) {
		const struct dp_lcore *lc = tel_dp->lcores[i];

		for (int c = 0; c < DP_CTR_COUNT; c++)
			sum[c] += rd(&lc->ctr[c]);
		for (int r = 1; r < WIRE_REASON_COUNT_MAX; r++)
			drops += rd(&lc->drops[r]);
		dups += rd(&lc->drops[WIRE_REASON_DUPLICATE]);
	}
	for (int c = 0; c < DP_CTR_COUNT; c++)
		rte_tel_data_add_dict_u64(d, ctr_names[c], sum[c]);
	rte_tel_data_add_dict_u64(d, "duplicates", dups);
	rte_tel_data_add_dict_u64(d, "dropped", drops);
	rte_tel_data_add_dict_u64(d, "lcores", tel_dp->n_lcores);
	return 0;
}

static int
tel_lcore(const char *cmd __rte_unused, const char *params, struct rte_tel_data *d)
{
	char *end;
	unsigned long n;

	if (params == NULL || *params == '\0')
		return -EINVAL;
	n = strtoul(params, &end, 10);
	for (unsigned int i = 0; *end == '\0' && i < tel_dp->n_lcores; i++) {
		const struct dp_lcore *lc = tel_dp->lcores[i];

		if (lc->lcore_id != n)
			continue;
		rte_tel_data_start_dict(d);
		for (int c = 0; c < DP_CTR_COUNT; c++)
			rte_tel_data_add_dict_u64(d, ctr_names[c], rd(&lc->ctr[c]));
		for (int r = 1; r < WIRE_REASON_COUNT_MAX; r++)
			rte_tel_data_add_dict_u64(d, wire_reason_str((enum wire_reason)r),
						  rd(&lc->drops[r]));
		return 0;
	}
	return -EINVAL;
}

int
dp_telemetry_register(struct dp *dp)
{
	tel_dp = dp;
	if (rte_telemetry_register_cmd("/georeduce/stats", tel_stats,
				       "georeduce counters summed over worker lcores") != 0 ||
	    rte_telemetry_register_cmd("/georeduce/lcore", tel_lcore,
				       "georeduce counters and drop reasons of one worker lcore. "
				       "Parameter: lcore id") != 0)
		return -EINVAL;
	return 0;
}
