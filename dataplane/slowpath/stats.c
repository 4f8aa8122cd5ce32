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

#include <rte_cycles.h>
#include <rte_ethdev.h>
#include <rte_lcore.h>
#include <rte_telemetry.h>

#include "dp.h"
#include "prom.h"
#include "promsrv.h"
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
	[DP_CTR_RETX_FAST] = "retx_fast",
	[DP_CTR_RETX_TAIL] = "retx_tail",
	[DP_CTR_RETX_COPY] = "retx_copies",
	[DP_CTR_NACKS_SENT] = "nacks_sent",
	[DP_CTR_RETX_STUCK] = "retx_stuck",
	[DP_CTR_HELD_ASKED] = "held_asked",
	[DP_CTR_NACK_OPEN_WITHOUT] = "nack_open_without",
	[DP_CTR_NACK_NOT_OPEN] = "nack_not_open",
	[DP_CTR_MCAST_RX] = "mcast_rx",
	[DP_CTR_MCAST_COPIES] = "mcast_copies",
	[DP_CTR_MCAST_NACKS] = "mcast_nacks",
	[DP_CTR_MCAST_REPAIRS] = "mcast_repairs",
	[DP_CTR_MCAST_ASKED] = "mcast_asked_upstream",
	[DP_CTR_MCAST_NOT_HELD] = "mcast_not_held",
	[DP_CTR_MCAST_ASK_FULL] = "mcast_ask_full",
	[DP_CTR_MCAST_BUDGET] = "mcast_answer_budget",
	[DP_CTR_PACED] = "paced",
	[DP_CTR_PACE_FULL] = "pace_full",
	[DP_CTR_ANSWER_BUDGET] = "answer_budget",
	[DP_CTR_RECOVER_ASKED] = "recover_asked",
	[DP_CTR_RECOVER_ANSWERED] = "recover_answered",
	[DP_CTR_RECOVERED] = "recovered",
	[DP_CTR_RECOVER_FULL] = "recover_full",
	[DP_CTR_RECOVER_EVICTED] = "recover_evicted",
	[DP_CTR_RECOVER_OTHER_MEMBERS] = "recover_other_members",
	[DP_CTR_ROUNDS_GIVEN_UP] = "rounds_given_up",
	[DP_CTR_SEALED] = "sealed",
	[DP_CTR_OPENED] = "opened",
	[DP_CTR_SEAL_BYTES] = "sealed_bytes",
	[DP_CTR_OPEN_BYTES] = "opened_bytes",
	[DP_CTR_CRYPTO_LATE] = "crypto_late",
	[DP_CTR_CRYPTO_FAILED] = "crypto_failed",
	[DP_CTR_CRYPTO_FULL] = "crypto_full",
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
	[DP_CTR_FAULT_CORRUPTED] = "fault_corrupted",
};

/* The HELP text of each counter's metric (georeduce_dataplane_<name>_total). */
static const char *const ctr_help[DP_CTR_COUNT] = {
	[DP_CTR_RX_PACKETS] = "Frames received from every port by this worker lcore",
	[DP_CTR_RX_BYTES] = "Bytes of the frames received by this worker lcore",
	[DP_CTR_TX_PACKETS] = "Frames handed to a TX queue by this worker lcore",
	[DP_CTR_TX_BYTES] = "Bytes of the frames handed to a TX queue",
	[DP_CTR_TX_DROPPED] = "Frames a TX queue did not take",
	[DP_CTR_CHUNKS_COMPLETED] = "Slots that had all their contributions (chunks summed)",
	[DP_CTR_PARTIALS_SENT] = "Partial sums sent to a parent gateway",
	[DP_CTR_RESULTS_SENT] = "Result copies sent to children and workers",
	[DP_CTR_CONTRIBS] = "Contributions summed",
	[DP_CTR_ACKS_SENT] = "Answers to retransmitted contributions held here",
	[DP_CTR_RETRANSMITS] = "Partial sums sent again to the parent (retransmissions)",
	[DP_CTR_RETX_FAST] = "Retransmissions because a partial sum sent later was answered first",
	[DP_CTR_RETX_TAIL] =
		"Retransmissions of an overdue partial sum once the tree's RESULTs stopped",
	[DP_CTR_RETX_COPY] = "Second copies of a repair sent into an idle link",
	[DP_CTR_NACKS_SENT] = "NACK_RESULTs sent to the parent",
	[DP_CTR_RETX_STUCK] = "Chunks still without a RESULT after the retries",
	[DP_CTR_HELD_ASKED] = "NACK_RESULTs sent at a partial sum's first timeout to ask whether "
			      "the parent holds it",
	[DP_CTR_NACK_OPEN_WITHOUT] =
		"Chunks asked for by a contributor whose open slot lacks its contribution",
	[DP_CTR_NACK_NOT_OPEN] =
		"Chunks asked for whose slot holds neither the round nor its RESULT",
	[DP_CTR_MCAST_RX] = "MCAST packets accepted",
	[DP_CTR_MCAST_COPIES] = "MCAST copies sent to next-hop gateways and workers",
	[DP_CTR_MCAST_NACKS] = "NACK_MCAST requests accepted",
	[DP_CTR_MCAST_REPAIRS] = "MCAST copies sent again in answer to a NACK_MCAST",
	[DP_CTR_MCAST_ASKED] = "NACK_MCASTs sent upstream for chunks not retained here",
	[DP_CTR_MCAST_NOT_HELD] = "MCAST chunks asked for that are not retained at the source",
	[DP_CTR_MCAST_ASK_FULL] =
		"MCAST requests pending upstream evicted by a new one for their slot",
	[DP_CTR_MCAST_BUDGET] = "NACK_MCAST answers withheld for the requester's budget",
	[DP_CTR_PACED] = "Frames that waited for their pacer",
	[DP_CTR_PACE_FULL] = "Frames dropped because a pacer queue was full",
	[DP_CTR_ANSWER_BUDGET] = "NACK_RESULT answers withheld for the sender's budget",
	[DP_CTR_RECOVER_ASKED] = "Result recovery: NACK_RESULTs asked of older epochs",
	[DP_CTR_RECOVER_ANSWERED] = "Result recovery: RESULTs sent from an older epoch or relayed",
	[DP_CTR_RECOVERED] = "Result recovery: RESULTs that came back and completed a slot",
	[DP_CTR_RECOVER_FULL] = "Result recovery: requests not recorded, the table was full and "
				"their requester held its share",
	[DP_CTR_RECOVER_EVICTED] = "Result recovery: requests dropped from the full table for "
				   "another requester's, theirs holding the most",
	[DP_CTR_RECOVER_OTHER_MEMBERS] =
		"Result recovery: RESULTs an older epoch retains held back, "
		"summed over other workers (membership)",
	[DP_CTR_ROUNDS_GIVEN_UP] = "Slots that gave up their round: every contributor had sent "
				   "a later one",
	[DP_CTR_SEALED] = "Frames sealed for a protected link",
	[DP_CTR_OPENED] = "Sealed frames opened and authenticated",
	[DP_CTR_SEAL_BYTES] = "Bytes of the georeduce packets sealed",
	[DP_CTR_OPEN_BYTES] = "Bytes of the georeduce packets opened",
	[DP_CTR_CRYPTO_LATE] = "Crypto operations the device returned in a later loop iteration",
	[DP_CTR_CRYPTO_FAILED] = "Crypto operations the device failed (not a tag mismatch)",
	[DP_CTR_CRYPTO_FULL] = "Frames dropped: the lcore's ring of crypto operations was full",
	[DP_CTR_ARP_REPLIES] = "ARP replies sent",
	[DP_CTR_ICMP_REPLIES] = "ICMP echo replies sent",
	[DP_CTR_NOT_FOR_US] = "Frames dropped: another host, protocol or port",
	[DP_CTR_NO_NEIGHBOUR] = "Frames dropped: the destination's MAC was not resolved",
	[DP_CTR_NO_MBUF] = "Frames dropped: a buffer pool was empty",
	[DP_CTR_BAD_FRAME] = "Frames dropped: Ethernet, IP or UDP rejected",
	[DP_CTR_BAD_HEADER] = "Frames dropped: georeduce header rejected",
	[DP_CTR_CTL_TX] = "Control-thread frames sent by this lcore",
	[DP_CTR_FAULT_DROPPED] = "Fault injection: frames dropped on purpose",
	[DP_CTR_FAULT_DUPLICATED] = "Fault injection: frames duplicated",
	[DP_CTR_FAULT_REORDERED] = "Fault injection: frames held back behind the next",
	[DP_CTR_FAULT_DELAY_FULL] = "Fault injection: frames dropped, the delay line was full",
	[DP_CTR_FAULT_CORRUPTED] = "Fault injection: frames with a bit of their payload flipped",
};

/* A counter of a worker lcore: a plain field that only its lcore writes (dp.h), read here
 * with a relaxed load of the whole word, like the fields dp.h declares _Atomic. */
static uint64_t
rd(const uint64_t *p)
{
	return atomic_load_explicit((const _Atomic uint64_t *)p, memory_order_relaxed);
}

/* rd() of a 32-bit field: a pacer's head or tail. */
static uint32_t
rd32(const uint32_t *p)
{
	return atomic_load_explicit((const _Atomic uint32_t *)p, memory_order_relaxed);
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
	json_object_set_new(o, "idle_mode", json_string(dp_idle_mode_name(lc->idle_mode)));
	json_object_set_new(o, "sleeps", json_integer((json_int_t)rd(&lc->sleeps)));
	json_object_set_new(
		o, "sleep_us",
		json_integer((json_int_t)(rd(&lc->slept_cycles) * 1000000 / rte_get_tsc_hz())));
	json_object_set_new(o, "intr_wakeups", json_integer((json_int_t)rd(&lc->intr_wakeups)));
	json_object_set_new(o, "kernels", json_string(lc->k->name));
	json_object_set_new(o, "crypto_in_flight",
			    json_integer((json_int_t)rd32(&lc->crypto_held)));
	return o;
}

/* What pacer `pacer` of job j was handed, summed over the lcores. */
static void
pacer_sum(const struct dp_job *j, uint32_t pacer, uint64_t *bytes, uint64_t *frames, uint64_t *retx)
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
			json_array_append_new(
				arr,
				json_pack("{s:i,s:s,s:s,s:i,s:f,s:I,s:I,s:I}", "tree", t->id, "dir",
					  k == 0 ? "up" : "down", "ipv4",
					  table_ipv4_format(d->ipv4, ip), "id", d->id, "rate_gbps",
					  t->tt->rate_gbps, "bytes", (json_int_t)bytes, "frames",
					  (json_int_t)frames, "retx_bytes", (json_int_t)retx));
		}
	}
	for (int i = 0; i < j->n_streams; i++) {
		const struct dp_stream *s = &j->streams[i];

		for (uint32_t k = 0; k < s->n_to; k++) {
			const struct dp_dest *d = &s->out[k];

			/* retx: the repairs sent on the link (NACK_MCAST answers). */
			pacer_sum(j, s->pace_first + k, &bytes, &frames, &retx);
			json_array_append_new(
				arr,
				json_pack("{s:i,s:s,s:s,s:i,s:f,s:I,s:I,s:I}", "stream", s->id,
					  "dir", "down", "ipv4", table_ipv4_format(d->ipv4, ip),
					  "id", d->id, "rate_gbps", j->tb->streams[i].rate_gbps,
					  "bytes", (json_int_t)bytes, "frames", (json_int_t)frames,
					  "retx_bytes", (json_int_t)retx));
		}
	}
	return arr;
}

/* How the chunks of the job's partial reduce completed (enum dp_quorum) and its grace
 * window. */
static json_t *
quorum_json(const struct dp_job *j)
{
	uint64_t q[DP_QUORUM_COUNT], us = dp_job_quorum(j, q);

	return json_pack("{s:I,s:I,s:I,s:I,s:I,s:I,s:f}", "chunks_all",
			 (json_int_t)q[DP_QUORUM_ALL], "chunks_all_in_grace",
			 (json_int_t)q[DP_QUORUM_ALL_IN_GRACE], "chunks_threshold",
			 (json_int_t)q[DP_QUORUM_THRESHOLD], "chunks_expired",
			 (json_int_t)q[DP_QUORUM_EXPIRED], "contribs_in_grace",
			 (json_int_t)q[DP_QUORUM_IN_GRACE], "contribs_late",
			 (json_int_t)q[DP_QUORUM_LATE], "grace_ms", (double)us / 1000);
}

static json_t *
job_json(const struct dp_job *j, const char *state)
{
	json_t *o = json_object();

	json_object_set_new(o, "job", json_integer(j->job));
	json_object_set_new(o, "epoch", json_integer(j->epoch));
	json_object_set_new(o, "state", json_string(state));
	if (j->membership != 0)
		json_object_set_new(o, "membership", json_integer(j->membership));
	json_object_set_new(o, "trees", json_integer(j->n_trees));
	json_object_set_new(o, "streams", json_integer(j->n_streams));
	json_object_set_new(o, "slots_per_lcore", json_integer(j->slots_per_lcore));
	json_object_set_new(o, "mcast_keep_per_lcore", json_integer(j->mcast_keep_per_lcore));
	json_object_set_new(o, "mcast_pace_queue",
			    json_integer(j->n_streams ? j->mcast_pace_q : 0));
	json_object_set_new(o, "chunks_in_flight", json_integer((json_int_t)dp_job_busy(j)));
	json_object_set_new(o, "chunks_done", json_integer((json_int_t)dp_job_done(j)));
	json_object_set_new(o, "memory_bytes", json_integer((json_int_t)j->bytes));
	json_object_set_new(o, "mbufs_held_max", json_integer((json_int_t)j->mbufs_held_max));
	json_object_set_new(o, "links", links_json(j));
	json_object_set_new(o, "quorum", quorum_json(j));
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
			json_object_set_new(po, "rx_nombuf",
					    json_integer((json_int_t)es.rx_nombuf));
		}
		json_array_append_new(ports, po);
	}
	uint32_t nn = atomic_load_explicit(&dp->n_neigh, memory_order_acquire);

	for (uint32_t i = 0; i < nn; i++) {
		json_t *no = json_object();
		uint64_t v = atomic_load_explicit(&dp->neigh[i].mac, memory_order_relaxed);
		char ip[16], mac[24];

		snprintf(mac, sizeof(mac), "%02x:%02x:%02x:%02x:%02x:%02x",
			 (unsigned)(v >> 40 & 0xff), (unsigned)(v >> 32 & 0xff),
			 (unsigned)(v >> 24 & 0xff), (unsigned)(v >> 16 & 0xff),
			 (unsigned)(v >> 8 & 0xff), (unsigned)(v & 0xff));
		json_object_set_new(no, "ipv4",
				    json_string(table_ipv4_format(dp->neigh[i].ipv4, ip)));
		json_object_set_new(no, "port", json_integer(dp->ports[dp->neigh[i].port].port_id));
		json_object_set_new(no, "mac",
				    (v & DP_NEIGH_VALID) ? json_string(mac) : json_null());
		json_object_set_new(no, "static", json_boolean(dp->neigh[i].is_static));
		json_array_append_new(neigh, no);
	}
	json_object_set_new(mem, "mempool_bytes", json_integer((json_int_t)dp->pool_bytes));
	json_object_set_new(mem, "job_bytes", json_integer((json_int_t)dp->job_bytes));
	json_object_set_new(mem, "mbufs_per_pool", json_integer((json_int_t)dp->prm.mbufs));
	json_object_set_new(mem, "mbuf_data_room", json_integer(dp_mbuf_room(dp->prm.mtu)));
	json_object_set_new(mem, "mbufs_slot_budget", json_integer((json_int_t)dp->mbufs_budget));
	json_object_set_new(mem, "mbufs_committed", json_integer((json_int_t)dp->mbufs_committed));
	if (dp->n_lcores > 0)
		json_object_set_new(mem, "mbufs_free",
				    json_integer(rte_mempool_avail_count(dp->lcores[0]->pool)));
	if (dp->crypto.on) { /* the device and its pools; never a key */
		const struct dp_crypto *c = &dp->crypto;

		json_object_set_new(
			mem, "crypto",
			json_pack("{s:s,s:s,s:s,s:i,s:b,s:i,s:I,s:I,s:I,s:I,s:I}", "device",
				  c->name, "driver", c->driver != NULL ? c->driver : "?", "path",
				  c->cpu ? "cpu" : "operations", "ring", DP_CRYPTO_RING,
				  "out_of_place", !c->cpu && c->oop_lb && c->oop_sgl, "queue_pairs",
				  (int)dp->n_lcores, "sessions_used", (json_int_t)c->sessions_used,
				  "sessions_max", (json_int_t)c->sessions_max, "seal_mbufs",
				  (json_int_t)c->seal_pool->size, "seal_mbufs_free",
				  (json_int_t)rte_mempool_avail_count(c->seal_pool), "pool_bytes",
				  (json_int_t)c->bytes));
	}
	each_job(dp, add_job, jobs);
	json_t *peers = json_array();
	uint64_t now = rte_get_tsc_cycles(), hz = rte_get_tsc_hz();

	for (unsigned int i = 0; i < dp->n_peers; i++) {
		const struct dp_peer *pr = &dp->peers[i];
		char ip[16];

		/* since_ms: since the last PROBE_REPLY, -1 if none since the list was set;
		 * unanswered: PROBEs sent since then. */
		json_array_append_new(
			peers,
			json_pack("{s:s,s:I,s:I,s:f,s:I,s:I}", "ipv4",
				  table_ipv4_format(pr->ipv4, ip), "since_ms",
				  pr->last_reply_tsc == 0 ?
					  (json_int_t)-1 :
					  (json_int_t)((now - pr->last_reply_tsc) * 1000 / hz),
				  "unanswered", (json_int_t)pr->unanswered, "rtt_ms",
				  pr->rtt_us / 1e3, "probes", (json_int_t)pr->probes, "replies",
				  (json_int_t)pr->replies));
	}
	json_object_set_new(o, "peers", peers);
	json_object_set_new(o, "probe_replies_unsolicited",
			    json_integer((json_int_t)dp->probe_replies_unsolicited));
	json_object_set_new(
		o, "peers_age_ms",
		json_integer(dp->n_peers == 0 ?
				     -1 :
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
	struct dump_arg a = {.job = job, .all = all, .arr = json_array()};

	each_job(dp, add_table, &a);
	return a.arr;
}

/* --- Prometheus metrics (--metrics; docs/METRICS.md) ------------------------------------ */

#define M(name) "georeduce_dataplane_" name

/* Label values as text. */
struct mlabels {
	char job[12], epoch[12], tree[12], lcore[12], peer[12], link[16];
};

static void
fmt_u(char *b, size_t n, uint64_t v)
{
	snprintf(b, n, "%llu", (unsigned long long)v);
}

static void
job_labels(const struct dp_job *j, struct mlabels *ml)
{
	fmt_u(ml->job, sizeof(ml->job), j->job);
	fmt_u(ml->epoch, sizeof(ml->epoch), j->epoch);
}

/* The job-level gauges of one family, for every job. */
struct mjob_arg {
	struct dp *dp;
	struct prom *p;
	int what;
};

enum {
	MJ_SLOTS,
	MJ_BUSY,
	MJ_MEM,
	MJ_MBUFS,
	MJ_TREES,
	MJ_GRACE,
	MJ_QUORUM /* + enum dp_quorum */
};

static void
mjob(const struct dp_job *j, const char *state, void *arg)
{
	struct mjob_arg *a = arg;
	struct mlabels ml;
	struct prom_label l[] = {{"job", ml.job}, {"epoch", ml.epoch}, {"state", state}};
	uint64_t v = 0, q[DP_QUORUM_COUNT];

	job_labels(j, &ml);
	switch (a->what) {
	case MJ_SLOTS:
		v = (uint64_t)j->slots_per_lcore * j->n_lcores;
		break;
	case MJ_BUSY:
		v = dp_job_busy(j);
		break;
	case MJ_MEM:
		v = j->bytes;
		break;
	case MJ_MBUFS:
		v = j->mbufs_held_max;
		break;
	case MJ_TREES:
		v = (uint64_t)j->n_trees;
		break;
	case MJ_GRACE:
		prom_sample(a->p, l, 3, (double)dp_job_quorum(j, q) / 1e6);
		return;
	default:
		dp_job_quorum(j, q);
		v = q[a->what - MJ_QUORUM];
		break;
	}
	prom_sample_u64(a->p, l, 3, v);
}

/* Per tree and link to a gateway (or stream and next hop): one family's samples. */
enum {
	ML_BYTES,
	ML_FRAMES,
	ML_RETX,
	ML_PLANNED,
	ML_QUEUED,
	ML_SBYTES,
	ML_SFRAMES,
	ML_SPLANNED,
	ML_SQUEUED
};

/* Frames waiting in pacer `pacer` of job j, summed over the lcores (each lcore's head
 * and tail, read as they are: a reading may lag, the pacers are not stopped). */
static uint64_t
pacer_queued(const struct dp_job *j, uint32_t pacer)
{
	uint64_t n = 0;

	for (unsigned int l = 0; l < j->n_lcores; l++) {
		const struct dp_pacer *pc = &j->lj[l].pacers[pacer];
		uint32_t h = rd32(&pc->head);
		uint32_t t = rd32(&pc->tail);

		n += (uint32_t)(t - h) <= pc->mask + 1 ? (uint32_t)(t - h) : 0;
	}
	return n;
}

static void
mlink_one(struct prom *p, int what, const struct dp_job *j, const char *kind, int id,
	  const char *dir, const struct dp_dest *d, uint32_t pacer, double rate_gbps)
{
	struct mlabels ml;
	struct prom_label l[] = {{"job", ml.job}, {"epoch", ml.epoch}, {kind, ml.tree},
				 {"dir", dir},    {"link", ml.link},   {"peer", ml.peer}};
	uint64_t bytes, frames, retx;

	job_labels(j, &ml);
	fmt_u(ml.tree, sizeof(ml.tree), (uint64_t)id);
	table_ipv4_format(d->ipv4, ml.link);
	fmt_u(ml.peer, sizeof(ml.peer), d->id);
	pacer_sum(j, pacer, &bytes, &frames, &retx);
	switch (what) {
	case ML_BYTES:
	case ML_SBYTES:
		prom_sample_u64(p, l, 6, bytes);
		break;
	case ML_FRAMES:
	case ML_SFRAMES:
		prom_sample_u64(p, l, 6, frames);
		break;
	case ML_RETX:
		prom_sample_u64(p, l, 6, retx);
		break;
	case ML_PLANNED:
	case ML_SPLANNED:
		prom_sample(p, l, 6, rate_gbps * 1e9 / 8);
		break;
	case ML_QUEUED:
	case ML_SQUEUED:
		prom_sample_u64(p, l, 6, pacer_queued(j, pacer));
		break;
	}
}

static void
mlinks(const struct dp_job *j, const char *state, void *arg)
{
	struct mjob_arg *a = arg;
	bool streams = a->what >= ML_SBYTES;

	(void)state;
	for (int i = 0; !streams && i < j->n_trees; i++) {
		const struct dp_tree *t = &j->trees[i];

		for (uint32_t k = t->has_parent ? 0 : 1; k <= t->n_children; k++)
			mlink_one(a->p, a->what, j, "tree", t->id, k == 0 ? "up" : "down",
				  k == 0 ? &t->parent : &t->down[k - 1], t->pace_first + k,
				  t->tt->rate_gbps);
	}
	for (int i = 0; streams && i < j->n_streams; i++) {
		const struct dp_stream *s = &j->streams[i];

		for (uint32_t k = 0; k < s->n_to; k++)
			mlink_one(a->p, a->what, j, "stream", s->id, "down", &s->out[k],
				  s->pace_first + k, j->tb->streams[i].rate_gbps);
	}
}

/* Per tree and lcore: the smoothed CONTRIB-to-RESULT round trip towards the parent. */
static void
mrtt(const struct dp_job *j, const char *state, void *arg)
{
	struct mjob_arg *a = arg;
	double hz = (double)rte_get_tsc_hz();

	(void)state;
	for (int i = 0; i < j->n_trees; i++) {
		if (!j->trees[i].has_parent)
			continue;
		for (unsigned int l = 0; l < j->n_lcores; l++) {
			uint64_t v = rd(&j->lj[l].srtt[i]);
			struct mlabels ml;
			struct prom_label lb[] = {{"job", ml.job},
						  {"epoch", ml.epoch},
						  {"tree", ml.tree},
						  {"lcore", ml.lcore}};

			if (v == 0 || l >= a->dp->n_lcores)
				continue;
			job_labels(j, &ml);
			fmt_u(ml.tree, sizeof(ml.tree), j->trees[i].id);
			fmt_u(ml.lcore, sizeof(ml.lcore), a->dp->lcores[l]->lcore_id);
			prom_sample(a->p, lb, 4, (double)v / hz);
		}
	}
}

static void
mfamily_jobs(struct dp *dp, struct prom *p, const char *name, enum prom_type type, const char *help,
	     void (*fn)(const struct dp_job *, const char *, void *), int what)
{
	struct mjob_arg a = {.dp = dp, .p = p, .what = what};

	prom_family(p, name, type, help);
	each_job(dp, fn, &a);
}

/* The dataplane's metrics of its memory: the pools and what the jobs' slots hold of them. */
static void
metrics_memory(struct dp *dp, struct prom *p)
{
	prom_family(p, M("mempool_bytes"), PROM_GAUGE, "Bytes of the packet buffer pools");
	prom_sample_u64(p, NULL, 0, dp->pool_bytes);
	prom_family(p, M("jobs_memory_bytes"), PROM_GAUGE,
		    "Bytes of the installed jobs' state, every epoch");
	prom_sample_u64(p, NULL, 0, dp->job_bytes);
	prom_family(p, M("mbufs_per_pool"), PROM_GAUGE, "Packet buffers per NUMA socket");
	prom_sample_u64(p, NULL, 0, dp->prm.mbufs);
	prom_family(p, M("mbuf_data_room_bytes"), PROM_GAUGE,
		    "Data room of a packet buffer: one frame of --mtu, rounded up");
	prom_sample_u64(p, NULL, 0, dp_mbuf_room(dp->prm.mtu));
	prom_family(p, M("mbufs_slot_budget"), PROM_GAUGE,
		    "Packet buffers the jobs' slots may hold at most (the pool for slots)");
	prom_sample_u64(p, NULL, 0, dp->mbufs_budget);
	prom_family(p, M("mbufs_committed"), PROM_GAUGE,
		    "Packet buffers the installed jobs' slots may hold");
	prom_sample_u64(p, NULL, 0, dp->mbufs_committed);
	if (dp->n_lcores > 0) {
		prom_family(p, M("mbufs_free"), PROM_GAUGE, "Packet buffers free in the pool");
		prom_sample_u64(p, NULL, 0, rte_mempool_avail_count(dp->lcores[0]->pool));
	}
}

char *
dp_metrics_text(struct dp *dp, size_t *len)
{
	struct prom p;
	char name[PROM_NAME_MAX + 1], lc[12], why[200];
	struct prom_label l[2] = {{"lcore", lc}, {"reason", NULL}};
	double hz = (double)rte_get_tsc_hz();
	uint64_t now = rte_get_tsc_cycles();
	char *text;
	int err = 0;

	prom_init(&p);
	for (int c = 0; c < DP_CTR_COUNT; c++) {
		/* "us" would read as microseconds (promtool's lint): not_for_gateway. */
		snprintf(name, sizeof(name), M("%s_total"),
			 c == DP_CTR_NOT_FOR_US ? "not_for_gateway" : ctr_names[c]);
		prom_family(&p, name, PROM_COUNTER, ctr_help[c]);
		for (unsigned int i = 0; i < dp->n_lcores; i++) {
			fmt_u(lc, sizeof(lc), dp->lcores[i]->lcore_id);
			prom_sample_u64(&p, l, 1, rd(&dp->lcores[i]->ctr[c]));
		}
	}
	prom_family(&p, M("drops_total"), PROM_COUNTER,
		    "Frames and packets dropped, by reason (duplicates among them)");
	for (unsigned int i = 0; i < dp->n_lcores; i++) {
		fmt_u(lc, sizeof(lc), dp->lcores[i]->lcore_id);
		for (int r = 1; r < WIRE_REASON_COUNT_MAX; r++) {
			l[1].value = wire_reason_str((enum wire_reason)r);
			prom_sample_u64(&p, l, 2, rd(&dp->lcores[i]->drops[r]));
		}
	}
	prom_family(&p, M("busy_seconds_total"), PROM_COUNTER,
		    "Time a worker lcore spent on work (not idle polls)");
	for (unsigned int i = 0; i < dp->n_lcores; i++) {
		fmt_u(lc, sizeof(lc), dp->lcores[i]->lcore_id);
		prom_sample(&p, l, 1, (double)rd(&dp->lcores[i]->cycles_busy) / hz);
	}
	prom_family(&p, M("crypto_in_flight"), PROM_GAUGE,
		    "Crypto operations a worker lcore has in its cryptodev");
	for (unsigned int i = 0; i < dp->n_lcores; i++) {
		fmt_u(lc, sizeof(lc), dp->lcores[i]->lcore_id);
		prom_sample_u64(&p, l, 1, rd32(&dp->lcores[i]->crypto_held));
	}
	prom_family(&p, M("iterations_total"), PROM_COUNTER,
		    "Poll loop iterations of a worker lcore");
	for (unsigned int i = 0; i < dp->n_lcores; i++) {
		fmt_u(lc, sizeof(lc), dp->lcores[i]->lcore_id);
		prom_sample_u64(&p, l, 1, rd(&dp->lcores[i]->iterations));
	}
	prom_family(&p, M("sleeps_total"), PROM_COUNTER,
		    "Idle sleeps and Rx interrupt waits of a worker lcore (--idle)");
	for (unsigned int i = 0; i < dp->n_lcores; i++) {
		fmt_u(lc, sizeof(lc), dp->lcores[i]->lcore_id);
		prom_sample_u64(&p, l, 1, rd(&dp->lcores[i]->sleeps));
	}
	prom_family(&p, M("sleep_seconds_total"), PROM_COUNTER,
		    "Time a worker lcore spent in idle sleeps and Rx interrupt waits");
	for (unsigned int i = 0; i < dp->n_lcores; i++) {
		fmt_u(lc, sizeof(lc), dp->lcores[i]->lcore_id);
		prom_sample(&p, l, 1, (double)rd(&dp->lcores[i]->slept_cycles) / hz);
	}

	/* Ports, as the ethdev counts them. */
	static const char *const port_m[][2] = {
		{M("port_rx_packets_total"), "Frames the port received (ethdev ipackets)"},
		{M("port_tx_packets_total"), "Frames the port sent (ethdev opackets)"},
		{M("port_rx_missed_total"), "Frames the port dropped, its RX queue full (imissed)"},
		{M("port_rx_errors_total"), "Erroneous frames the port received (ierrors)"},
		{M("port_rx_nombuf_total"), "RX buffer allocation failures (rx_nombuf)"},
	};
	for (size_t m = 0; m < sizeof(port_m) / sizeof(port_m[0]); m++) {
		prom_family(&p, port_m[m][0], PROM_COUNTER, port_m[m][1]);
		for (unsigned int i = 0; i < dp->n_ports; i++) {
			struct rte_eth_stats es;
			char pn[12];
			struct prom_label pl = {"port", pn};
			uint64_t v[] = {0, 0, 0, 0, 0};

			if (rte_eth_stats_get(dp->ports[i].port_id, &es) != 0)
				continue;
			v[0] = es.ipackets, v[1] = es.opackets, v[2] = es.imissed;
			v[3] = es.ierrors, v[4] = es.rx_nombuf;
			fmt_u(pn, sizeof(pn), dp->ports[i].port_id);
			prom_sample_u64(&p, &pl, 1, v[m]);
		}
	}

	metrics_memory(dp, &p);

	/* Jobs: slots in use against the slots there are, per (job, epoch, state). */
	mfamily_jobs(dp, &p, M("job_slots"), PROM_GAUGE,
		     "Aggregation slots of a job's epoch, over every worker lcore", mjob, MJ_SLOTS);
	mfamily_jobs(dp, &p, M("job_slots_in_use"), PROM_GAUGE,
		     "Aggregation slots holding a chunk in flight", mjob, MJ_BUSY);
	mfamily_jobs(dp, &p, M("job_memory_bytes"), PROM_GAUGE, "Bytes of one job epoch's state",
		     mjob, MJ_MEM);
	mfamily_jobs(dp, &p, M("job_mbufs_held_max"), PROM_GAUGE,
		     "Packet buffers one job epoch's slots may hold", mjob, MJ_MBUFS);
	mfamily_jobs(dp, &p, M("job_trees"), PROM_GAUGE, "Trees of a job's epoch on this gateway",
		     mjob, MJ_TREES);
	static const char *const quorum_m[DP_QUORUM_COUNT][2] = {
		{M("quorum_chunks_all_total"), "Chunks of a partial reduce complete with every "
					       "contribution in"},
		{M("quorum_chunks_all_in_grace_total"), "... of them, the last within the grace "
							"window"},
		{M("quorum_chunks_threshold_total"), "Chunks complete at the threshold, without a "
						     "grace window"},
		{M("quorum_chunks_expired_total"), "Chunks complete when their grace window ran "
						   "out"},
		{M("quorum_contribs_in_grace_total"), "Contributions summed within a grace window"},
		{M("quorum_contribs_late_total"), "Contributions that came after their chunk of a "
						  "partial reduce completed"},
	};
	for (int k = 0; k < DP_QUORUM_COUNT; k++)
		mfamily_jobs(dp, &p, quorum_m[k][0], PROM_COUNTER, quorum_m[k][1], mjob,
			     MJ_QUORUM + k);
	mfamily_jobs(dp, &p, M("quorum_grace_seconds"), PROM_GAUGE,
		     "The grace window of a partial reduce (adaptive: the largest of the lcores')",
		     mjob, MJ_GRACE);
	mfamily_jobs(dp, &p, M("tree_link_bytes_total"), PROM_COUNTER,
		     "Bytes a tree handed to its link to a gateway (parent: up, child: down), "
		     "retransmissions included",
		     mlinks, ML_BYTES);
	mfamily_jobs(dp, &p, M("tree_link_frames_total"), PROM_COUNTER,
		     "Frames a tree handed to its link to a gateway", mlinks, ML_FRAMES);
	mfamily_jobs(dp, &p, M("tree_link_retransmitted_bytes_total"), PROM_COUNTER,
		     "Bytes of retransmissions among tree_link_bytes_total", mlinks, ML_RETX);
	mfamily_jobs(dp, &p, M("tree_link_planned_bytes_per_second"), PROM_GAUGE,
		     "The tree's planned rate on the link", mlinks, ML_PLANNED);
	mfamily_jobs(dp, &p, M("tree_link_pacer_queued_frames"), PROM_GAUGE,
		     "Frames waiting in the tree's pacer of the link", mlinks, ML_QUEUED);
	mfamily_jobs(dp, &p, M("stream_link_bytes_total"), PROM_COUNTER,
		     "Bytes a multicast stream handed to its link to a next-hop gateway", mlinks,
		     ML_SBYTES);
	mfamily_jobs(dp, &p, M("stream_link_frames_total"), PROM_COUNTER,
		     "Frames a multicast stream handed to its link", mlinks, ML_SFRAMES);
	mfamily_jobs(dp, &p, M("stream_link_planned_bytes_per_second"), PROM_GAUGE,
		     "The stream's planned rate on the link", mlinks, ML_SPLANNED);
	mfamily_jobs(dp, &p, M("stream_link_pacer_queued_frames"), PROM_GAUGE,
		     "Frames waiting in the stream's pacer of the link", mlinks, ML_SQUEUED);
	mfamily_jobs(dp, &p, M("tree_round_trip_seconds"), PROM_GAUGE,
		     "Smoothed time from a partial sum sent up to its RESULT, per tree and lcore",
		     mrtt, 0);

	/* The gateways it probes: round trips and answers. */
	static const char *const peer_m[][3] = {
		{M("peer_round_trip_seconds"), "g", "Round trip of the last PROBE answered"},
		{M("peer_probes_total"), "c", "PROBEs sent to the gateway"},
		{M("peer_replies_total"), "c", "PROBE_REPLYs from the gateway"},
		{M("peer_since_reply_seconds"), "g", "Time since the last PROBE_REPLY"},
	};
	for (size_t m = 0; m < sizeof(peer_m) / sizeof(peer_m[0]); m++) {
		prom_family(&p, peer_m[m][0], peer_m[m][1][0] == 'c' ? PROM_COUNTER : PROM_GAUGE,
			    peer_m[m][2]);
		for (unsigned int i = 0; i < dp->n_peers; i++) {
			const struct dp_peer *pr = &dp->peers[i];
			char ip[16];
			struct prom_label pl = {"peer", table_ipv4_format(pr->ipv4, ip)};

			if (m == 0 && pr->replies > 0)
				prom_sample(&p, &pl, 1, pr->rtt_us / 1e6);
			else if (m == 1)
				prom_sample_u64(&p, &pl, 1, pr->probes);
			else if (m == 2)
				prom_sample_u64(&p, &pl, 1, pr->replies);
			else if (m == 3 && pr->last_reply_tsc != 0)
				prom_sample(&p, &pl, 1, (double)(now - pr->last_reply_tsc) / hz);
		}
	}
	prom_family(&p, M("probe_replies_unsolicited_total"), PROM_COUNTER,
		    "PROBE_REPLYs that answered no probe of this gateway");
	prom_sample_u64(&p, NULL, 0, dp->probe_replies_unsolicited);
	prom_family(&p, M("control_term"), PROM_GAUGE,
		    "The newest control leadership term seen on a request (0: none)");
	prom_sample_u64(&p, NULL, 0, (uint64_t)dp->ctl_term);
	prom_family(&p, M("stale_terms_refused_total"), PROM_COUNTER,
		    "Control requests refused for an older leadership term");
	prom_sample_u64(&p, NULL, 0, dp->ctl_stale_terms);
	prom_family(&p, M("lcores"), PROM_GAUGE, "Worker lcores");
	prom_sample_u64(&p, NULL, 0, dp->n_lcores);
	promsrv_prom(dp->msrv, &p, M(""));
	text = prom_finish(&p, len, &err);
	if (text == NULL) {
		snprintf(why, sizeof(why), "%s", p.why);
		DP_LOG(ERR, "metrics: %s\n", why);
	}
	prom_free(&p);
	return text;
}

/* --- Telemetry: read-only, from DPDK's telemetry thread ---------------------------------- */

static struct dp *tel_dp;

static int
tel_stats(const char *cmd __rte_unused, const char *params __rte_unused, struct rte_tel_data *d)
{
	uint64_t sum[DP_CTR_COUNT] = {0}, drops = 0, dups = 0;

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
		rte_tel_data_add_dict_u64(d, "sleeps", rd(&lc->sleeps));
		rte_tel_data_add_dict_u64(d, "sleep_us",
					  rd(&lc->slept_cycles) * 1000000 / rte_get_tsc_hz());
		rte_tel_data_add_dict_u64(d, "intr_wakeups", rd(&lc->intr_wakeups));
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
