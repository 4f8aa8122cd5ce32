/* SPDX-License-Identifier: BSD-3-Clause
 *
 * EAL tests of what the dataplane's receive path accepts, answers or drops
 * (dataplane/fastpath, docs/PROTOCOL.md sections 6 and 7): every class of bad packet
 * under its reason, a tree of the site's other gateway, ARP and ICMP answered and
 * neighbours learned, hostile senders and their NACK budgets, jumbo frames, unaligned
 * payloads and chained segments.
 *
 * The main thread plays the worker lcore (dp_worker_poll, dp_fixture.c).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <CUnit/CUnit.h>
#include <jansson.h>
#include <rte_arp.h>
#include <rte_cycles.h>
#include <rte_ether.h>
#include <rte_icmp.h>
#include <rte_ip.h>
#include <rte_lcore.h>
#include <rte_mbuf.h>
#include <rte_mempool.h>
#include <rte_udp.h>

#include "dp.h"
#include "dp_fixture.h"
#include "fuzzutil.h"
#include "slowpath/slowpath.h"
#include "table.h"
#include "wire.h"

/* Two gateways at this site: this one holds chunks 0 .. 7 (tree 0), the other 8 .. 15
 * (tree 1, in `shards`). A CONTRIB of tree 1 sent here is refused as `wrong_shard`, one of
 * a tree no gateway of the site has as `unknown_tree`; the shard's own chunks complete. */
static void
test_wrong_shard(void)
{
	const uint64_t el = 1000;
	const uint32_t ce = 64;
	static struct out o[64];
	char text[2048], err[TABLE_ERR_MAX] = "";
	struct table *tb;

	snprintf(text, sizeof(text),
		 "{\"format\": \"georeduce-table/1\", \"job\": 9, \"epoch\": 1,"
		 " \"gateway\": {\"id\": 1, \"ipv4\": \"10.0.0.1\", \"base_port\": %d,"
		 " \"ports\": %d}, \"dtype\": \"fp32\", \"elements\": 1000,"
		 " \"chunk_elements\": 64, \"limits\": {\"max_trees\": 8,"
		 " \"max_children\": 4, \"max_workers\": 16, \"max_slots\": 64},"
		 " \"trees\": [{\"id\": 0, \"role\": \"root\", \"parent\": null,"
		 " \"children\": [], \"workers\": [{\"id\": 11, \"ipv4\": \"10.0.0.11\","
		 " \"port\": %d}, {\"id\": 12, \"ipv4\": \"10.0.0.12\", \"port\": %d}],"
		 " \"expected\": 2, \"subtree_workers\": 2, \"chunk_first\": 0,"
		 " \"chunk_count\": 8, \"rate_gbps\": 1.0, \"slots\": 16}],"
		 " \"shards\": [{\"gateway\": {\"id\": 2, \"ipv4\": \"10.0.0.2\","
		 " \"base_port\": %d, \"ports\": %d}, \"trees\": [{\"id\": 1,"
		 " \"chunk_first\": 8, \"chunk_count\": 8, \"slots\": 16}]}]}",
		 WIRE_PORT_BASE_DEFAULT, WIRE_PORT_COUNT_DEFAULT, WORKER_PORT, WORKER_PORT,
		 WIRE_PORT_BASE_DEFAULT, WIRE_PORT_COUNT_DEFAULT);
	tb = table_parse(text, "shards", err, sizeof(err));
	CU_ASSERT_PTR_NOT_NULL_FATAL(tb);
	CU_ASSERT_FATAL(dp_up(rte_get_main_lcore()) == 0);
	CU_ASSERT_FATAL(install(tb, "install") == 0);
	for (uint32_t c = 0; c < 8; c++)
		for (int w = 11; w <= 12; w++)
			inject(contrib_f32(9, 1, 0, (uint16_t)w, 1, c, el, ce));
	/* Worker 11 takes this gateway for the other one's shard; then a tree of nobody. */
	inject(contrib_f32(9, 1, 1, 11, 1, 8, el, ce));
	inject(contrib_f32(9, 1, 1, 12, 1, 9, el, ce));
	inject(contrib_f32(9, 1, 5, 11, 1, 9, el, ce));
	poll_all();
	CU_ASSERT_EQUAL(collect(o, 64), 2 * 8);
	CU_ASSERT_EQUAL(ctr(DP_CTR_CHUNKS_COMPLETED), 8);
	CU_ASSERT_EQUAL(drops(WIRE_REASON_WRONG_SHARD), 2);
	CU_ASSERT_EQUAL(drops(WIRE_REASON_UNKNOWN_TREE), 1);
	dp_down();
}

/* Corrupt one byte of a valid frame at off (XOR x). */
static struct rte_mbuf *
corrupt(struct rte_mbuf *m, size_t off, uint8_t x)
{
	rte_pktmbuf_mtod(m, uint8_t *)[off] ^= x;
	return m;
}

/* An ICMP message of type `type` (32 bytes of data) from 10.0.0.5 to the gateway. */
static struct rte_mbuf *
mk_icmp(uint8_t type)
{
	uint8_t frame[14 + 60] = {0};
	struct wire_flow fl = {.src_ip = PEER_IP(5), .dst_ip = GW_IP};
	struct rte_ipv4_hdr *ip = (struct rte_ipv4_hdr *)(frame + 14);
	struct rte_icmp_hdr *ic = (struct rte_icmp_hdr *)(ip + 1);
	struct rte_mbuf *m = rte_pktmbuf_alloc(tpool);

	memcpy(fl.dst_mac, gw_mac.addr_bytes, 6);
	CU_ASSERT(wire_frame_build(frame, sizeof(frame), &fl, 36, false) == 0);
	ip->next_proto_id = IPPROTO_ICMP;
	ip->total_length = rte_cpu_to_be_16(20 + 8 + 32);
	ip->hdr_checksum = 0;
	ip->hdr_checksum = rte_ipv4_cksum(ip);
	ic->icmp_type = type;
	ic->icmp_ident = rte_cpu_to_be_16(0x1234);
	ic->icmp_seq_nb = rte_cpu_to_be_16(1);
	ic->icmp_cksum = (uint16_t)~rte_raw_cksum(ic, 40);
	memcpy(must_append(m, sizeof(frame)), frame, sizeof(frame));
	return m;
}

/* Every class of bad packet is counted by its reason; afterwards a round still completes
 * exactly (no slot was touched). */
static void
test_bad_packets(void)
{
	const uint64_t el = 64;
	const uint32_t ce = 64;
	struct tdesc td = {0, 0, 0, {0}, 0, 1, 16, {0}};
	static struct out o[16];
	struct pkt p;
	struct rte_mbuf *m;
	float pl[64] = {0};

	CU_ASSERT_FATAL(dp_up(rte_get_main_lcore()) == 0);
	CU_ASSERT_FATAL(install(mk_table(11, 3, 1, TABLE_DTYPE_FP32, el, ce, 3, W3, 1, &td),
				"install") == 0);
	/* One contribution in, so that a corrupted packet would show in the sum. */
	inject(contrib_f32(11, 3, 0, 11, 1, 0, el, ce));
	poll_all();
	const size_t H = WIRE_FRAME_HDR_OFF;
	struct {
		size_t off;
		uint8_t x;
		enum wire_reason why;
	} hdr_cases[] = {
		{H + 0, 0xff, WIRE_REASON_MAGIC},
		{H + 2, 0x03, WIRE_REASON_VERSION},
		{H + 3, 0x40, WIRE_REASON_TYPE},
		{H + 4, 0x80, WIRE_REASON_FLAGS},
		{H + 7, 0x01, WIRE_REASON_RESERVED},
		{H + 5, 0x0f, WIRE_REASON_DTYPE}, /* fp32 -> 14 */
		{H + 6, 0x20, WIRE_REASON_CSET_LEN},
		{H + 23, 0x01, WIRE_REASON_CONTRIB}, /* contrib 1 -> 0 */
	};

	for (size_t i = 0; i < sizeof(hdr_cases) / sizeof(hdr_cases[0]); i++) {
		m = corrupt(contrib_f32(11, 3, 0, 13, 1, 0, el, ce), hdr_cases[i].off,
			    hdr_cases[i].x);
		inject(m);
		poll_all();
		CU_ASSERT(drops(hdr_cases[i].why) == 1);
		if (drops(hdr_cases[i].why) != 1)
			fprintf(stderr, "case %zu: reason %s not counted\n", i,
				wire_reason_str(hdr_cases[i].why));
	}
	/* Lower layers: IP checksum, fragment, UDP checksum, UDP length, truncated frame. */
	inject(corrupt(contrib_f32(11, 3, 0, 12, 1, 0, el, ce), 14 + 8, 0x01)); /* TTL: csum */
	m = contrib_f32(11, 3, 0, 12, 1, 0, el, ce);
	{
		struct rte_ipv4_hdr *ip = rte_pktmbuf_mtod_offset(m, struct rte_ipv4_hdr *, 14);

		ip->fragment_offset = rte_cpu_to_be_16(RTE_IPV4_HDR_MF_FLAG);
		ip->hdr_checksum = 0;
		ip->hdr_checksum = rte_ipv4_cksum(ip);
	}
	inject(m);
	inject(corrupt(contrib_f32(11, 3, 0, 12, 1, 0, el, ce), 14 + 20 + 6, 0x01)); /* UDP csum */
	m = contrib_f32(11, 3, 0, 12, 1, 0, el, ce);
	rte_pktmbuf_trim(m, 100); /* IP total length now beyond the frame */
	inject(m);
	m = contrib_f32(11, 3, 0, 12, 1, 0, el, ce);
	rte_pktmbuf_trim(m, rte_pktmbuf_data_len(m) - 10); /* 10 bytes: not even Ethernet+IP */
	inject(m);
	poll_all();
	CU_ASSERT(drops(WIRE_REASON_IP_CSUM) == 1);
	CU_ASSERT(drops(WIRE_REASON_IP_FRAG) == 1);
	CU_ASSERT(drops(WIRE_REASON_UDP_CSUM) == 1);
	CU_ASSERT(drops(WIRE_REASON_IP_HDR) == 1);
	/* Table level: unknown job, epoch ahead and stale, unknown tree, chunk out of range,
	 * count that is not the chunk's, sender not in the table, worker claiming contrib 2. */
	p = (struct pkt){WIRE_TYPE_CONTRIB, 0,  99,         3, 0, 12, 12, 1, 1, 0,
			 WIRE_DTYPE_FP32,   64, PEER_IP(12)};
	inject(mk_pkt(&p, pl));
	p.job = 11;
	p.epoch = 4;
	inject(mk_pkt(&p, pl));
	p.epoch = 2;
	inject(mk_pkt(&p, pl));
	p.epoch = 3;
	p.tree = 5;
	inject(mk_pkt(&p, pl));
	p.tree = 0;
	p.chunk = 1;
	inject(mk_pkt(&p, pl));
	p.chunk = 0;
	p.count = 32;
	inject(mk_pkt(&p, pl));
	p.count = 64;
	p.sender = p.origin = 14;
	inject(mk_pkt(&p, pl));
	p.sender = p.origin = 12;
	p.contrib = 2;
	inject(mk_pkt(&p, pl));
	/* Not for us, each frame under a reason of its own: another destination address,
	 * an unknown EtherType, another UDP port, another IP protocol, ICMP other than an
	 * echo request, a PROBE_REPLY to no probe of this gateway (it probes outside jobs). */
	m = contrib_f32(11, 3, 0, 12, 1, 0, el, ce);
	{
		struct rte_ipv4_hdr *ip = rte_pktmbuf_mtod_offset(m, struct rte_ipv4_hdr *, 14);

		ip->dst_addr = rte_cpu_to_be_32(PEER_IP(99));
	}
	inject(m);
	inject(corrupt(contrib_f32(11, 3, 0, 12, 1, 0, el, ce), 12, 0x55));
	m = contrib_f32(11, 3, 0, 12, 1, 0, el, ce);
	rte_pktmbuf_mtod_offset(m, struct rte_udp_hdr *, 34)->dst_port = rte_cpu_to_be_16(9999);
	inject(m);
	m = contrib_f32(11, 3, 0, 12, 1, 0, el, ce);
	{
		struct rte_ipv4_hdr *ip = rte_pktmbuf_mtod_offset(m, struct rte_ipv4_hdr *, 14);

		ip->next_proto_id = IPPROTO_TCP;
		ip->hdr_checksum = 0;
		ip->hdr_checksum = rte_ipv4_cksum(ip);
	}
	inject(m);
	inject(mk_icmp(RTE_IP_ICMP_ECHO_REPLY));
	p = (struct pkt){WIRE_TYPE_PROBE_REPLY, WIRE_F_ECHO, 11,         3, 0, 12, 12, 0, 0, 0,
			 WIRE_DTYPE_NONE,       0,           PEER_IP(12)};
	inject(mk_pkt(&p, NULL));
	/* ... and one that looks like an answer to this gateway's probes, from an address
	 * that is no peer: the control thread counts it. */
	p = (struct pkt){WIRE_TYPE_PROBE_REPLY,
			 WIRE_F_ECHO,
			 0,
			 0,
			 0,
			 WIRE_NODE_NONE,
			 WIRE_NODE_NONE,
			 0,
			 0,
			 0,
			 WIRE_DTYPE_NONE,
			 0,
			 PEER_IP(12)};
	inject(mk_pkt(&p, NULL));
	poll_all();
	dp_housekeeping(&dp);
	CU_ASSERT(dp.probe_replies_unsolicited == 1);
	CU_ASSERT(drops(WIRE_REASON_OTHER_DST) == 1);
	CU_ASSERT(drops(WIRE_REASON_L2) == 2); /* and the runt of 10 bytes, a bad frame */
	CU_ASSERT(drops(WIRE_REASON_OTHER_PORT) == 1);
	CU_ASSERT(drops(WIRE_REASON_NOT_UDP) == 1);
	CU_ASSERT(drops(WIRE_REASON_ICMP_NOT_ECHO) == 1);
	CU_ASSERT(drops(WIRE_REASON_PROBE_REPLY) == 1);
	CU_ASSERT(ctr(DP_CTR_NOT_FOR_US) == 6);
	CU_ASSERT(drops(WIRE_REASON_UNKNOWN_JOB) == 1);
	CU_ASSERT(drops(WIRE_REASON_EPOCH_AHEAD) == 1);
	CU_ASSERT(drops(WIRE_REASON_EPOCH_STALE) == 1);
	CU_ASSERT(drops(WIRE_REASON_UNKNOWN_TREE) == 1);
	CU_ASSERT(drops(WIRE_REASON_BAD_CHUNK) == 1);
	CU_ASSERT(drops(WIRE_REASON_JOB_MISMATCH) == 1);
	CU_ASSERT(drops(WIRE_REASON_BAD_SENDER) == 2);
	CU_ASSERT(collect(o, 16) == 0);
	/* Every frame dropped so far is under exactly one reason: 8 header cases, 5 lower
	 * layers, 8 table-level, 6 not for us. */
	uint64_t total = 0;

	for (int r = 1; r < WIRE_REASON_COUNT_MAX; r++)
		total += drops((enum wire_reason)r);
	CU_ASSERT(total == 8 + 5 + 8 + 6);
	CU_ASSERT(ctr(DP_CTR_BAD_FRAME) == 5 && ctr(DP_CTR_BAD_HEADER) == 8);
	/* stats (docs/CONTROL.md): every counter, zeros included; drops only where not 0. */
	{
		json_t *st = dp_stats_json(&dp);
		json_t *lj = json_array_get(json_object_get(st, "lcores"), 0);
		json_t *dj = json_object_get(lj, "drops");
		size_t nz = 0;

		for (int r = 1; r < WIRE_REASON_COUNT_MAX; r++) {
			json_t *v = json_object_get(dj, wire_reason_str((enum wire_reason)r));

			nz += drops((enum wire_reason)r) != 0;
			CU_ASSERT(drops((enum wire_reason)r) != 0 ?
					  json_integer_value(v) ==
						  (json_int_t)drops((enum wire_reason)r) :
					  v == NULL);
		}
		CU_ASSERT(json_object_size(dj) == nz);
		CU_ASSERT(json_integer_value(json_object_get(lj, "dropped")) == (json_int_t)total);
		CU_ASSERT(json_integer_value(json_object_get(lj, "not_for_us")) == 6);
		CU_ASSERT(json_is_integer(json_object_get(lj, "no_mbuf")) &&
			  json_integer_value(json_object_get(lj, "no_mbuf")) == 0);
		CU_ASSERT(json_integer_value(json_object_get(st, "probe_replies_unsolicited")) ==
			  1);
		json_decref(st);
	}
	/* Random garbage: never a crash, never a result. */
	uint64_t rng = fuzz_env_ulong("GEOREDUCE_FUZZ_SEED", 7);
	unsigned long iters = fuzz_env_ulong("GEOREDUCE_FUZZ_ITERS",
					     getenv("GEOREDUCE_TEST_QUICK") ? 2000 : 20000);

	for (unsigned long i = 0; i < iters; i++) {
		m = contrib_f32(11, 3, 0, (uint16_t)(12 + i % 2), 1, 0, el, ce);
		uint8_t *f = rte_pktmbuf_mtod(m, uint8_t *);
		size_t len = rte_pktmbuf_data_len(m);
		int flips = 1 + (int)(rng_next(&rng) % 4);

		for (int b = 0; b < flips; b++)
			f[14 + rng_next(&rng) % (len - 14)] ^=
				(uint8_t)(1u << (rng_next(&rng) % 8));
		if (rng_next(&rng) % 4 == 0)
			rte_pktmbuf_trim(m, (uint16_t)(rng_next(&rng) % (len - 1)));
		inject(m);
		if ((i & 127) == 127)
			poll_all();
	}
	poll_all();
	/* A mutation may leave a valid packet (another round, a flipped payload bit), which
	 * legitimately opens or fills a slot. What must hold: the next epoch sums exactly, and
	 * once the job is gone every test mbuf is back in its pool (no slot leaked one). */
	collect(o, 16);
	CU_ASSERT(install(mk_table(11, 4, 1, TABLE_DTYPE_FP32, el, ce, 3, W3, 1, &td), "install") ==
		  0);
	for (int w = 0; w < 3; w++)
		inject(contrib_f32(11, 4, 0, W3[w], 2, 0, el, ce));
	poll_all();
	int n = collect(o, 16), bad = 0;

	CU_ASSERT(n == 3);
	for (int i = 0; i < n && i < 16; i++)
		for (uint32_t e = 0; e < 64; e++)
			bad += out_f32(&o[i], e) != val(11, e) + val(12, e) + val(13, e);
	CU_ASSERT(bad == 0);
	CU_ASSERT(call_errno("{\"version\":1,\"id\":1,\"op\":\"remove\",\"job\":11}") == 0);
	rte_delay_us_sleep(1000 * (dp.prm.drain_ms + 10));
	dp_housekeeping(&dp);
	CU_ASSERT(atomic_load(&dp.state)->n_jobs == 0);
	CU_ASSERT(rte_mempool_in_use_count(tpool) == 0);
	/* Every header and indirect mbuf of the copies sent is back: what the pools miss
	 * is what the lcore's stashes hold. */
	const struct dp_lcore *lc = dp.lcores[0];

	CU_ASSERT(rte_mempool_in_use_count(lc->hdr_pool) ==
		  lc->hdr_stash.tail - lc->hdr_stash.head);
	CU_ASSERT(rte_mempool_in_use_count(lc->clone_pool) ==
		  lc->clone_stash.tail - lc->clone_stash.head);
	CU_ASSERT(lc->hdr_stash.tail - lc->hdr_stash.head <= DP_STASH_SIZE);
	dp_down();
}

/* An ARP request (broadcast) or reply (to the gateway) from 10.0.0.n, MAC 02:00:00:00:00:n,
 * about the address tip. */
static struct rte_mbuf *
mk_arp(uint16_t op, uint8_t n, uint32_t tip)
{
	struct rte_mbuf *m = rte_pktmbuf_alloc(tpool);
	struct rte_ether_hdr *eth =
		(struct rte_ether_hdr *)must_append(m, sizeof(*eth) + sizeof(struct rte_arp_hdr));
	struct rte_arp_hdr *arp = (struct rte_arp_hdr *)(eth + 1);

	if (op == RTE_ARP_OP_REQUEST)
		memset(eth->dst_addr.addr_bytes, 0xff, 6);
	else
		eth->dst_addr = gw_mac;
	memset(&eth->src_addr, 0, 6);
	eth->src_addr.addr_bytes[0] = 2;
	eth->src_addr.addr_bytes[5] = n;
	eth->ether_type = rte_cpu_to_be_16(RTE_ETHER_TYPE_ARP);
	arp->arp_hardware = rte_cpu_to_be_16(RTE_ARP_HRD_ETHER);
	arp->arp_protocol = rte_cpu_to_be_16(RTE_ETHER_TYPE_IPV4);
	arp->arp_hlen = 6;
	arp->arp_plen = 4;
	arp->arp_opcode = rte_cpu_to_be_16(op);
	arp->arp_data.arp_sha = eth->src_addr;
	arp->arp_data.arp_sip = rte_cpu_to_be_32(PEER_IP(n));
	if (op == RTE_ARP_OP_REQUEST)
		memset(&arp->arp_data.arp_tha, 0, 6);
	else
		arp->arp_data.arp_tha = gw_mac;
	arp->arp_data.arp_tip = rte_cpu_to_be_32(tip);
	return m;
}

/* ARP requests for our address are answered; ICMP echo too; ARP learning resolves a
 * neighbour that has no static entry, and the control thread's ARP request goes out. */
static void
test_arp_icmp(void)
{
	static struct out o[16];

	CU_ASSERT_FATAL(dp_up(rte_get_main_lcore()) == 0);
	/* ARP request from 10.0.0.60 (02:..:3c) for 10.0.0.1, and one for 10.0.0.77. */
	inject(mk_arp(RTE_ARP_OP_REQUEST, 60, GW_IP));
	inject(mk_arp(RTE_ARP_OP_REQUEST, 60, PEER_IP(77)));
	poll_all();
	CU_ASSERT(collect(o, 16) == 1);
	{
		const struct rte_ether_hdr *eth = (const struct rte_ether_hdr *)o[0].frame;
		const struct rte_arp_hdr *arp = (const struct rte_arp_hdr *)(eth + 1);

		CU_ASSERT(arp->arp_opcode == rte_cpu_to_be_16(RTE_ARP_OP_REPLY));
		CU_ASSERT(rte_is_same_ether_addr(&arp->arp_data.arp_sha, &gw_mac));
		CU_ASSERT(arp->arp_data.arp_sip == rte_cpu_to_be_32(GW_IP));
		CU_ASSERT(arp->arp_data.arp_tip == rte_cpu_to_be_32(PEER_IP(60)));
		CU_ASSERT(eth->dst_addr.addr_bytes[5] == 60);
	}
	CU_ASSERT(ctr(DP_CTR_ARP_REPLIES) == 1);
	CU_ASSERT(drops(WIRE_REASON_ARP_UNANSWERED) == 1); /* the one for 10.0.0.77 */
	/* ICMP echo request from 10.0.0.5. */
	inject(mk_icmp(RTE_IP_ICMP_ECHO_REQUEST));
	poll_all();
	CU_ASSERT(collect(o, 16) == 1);
	{
		const struct rte_ipv4_hdr *ip = (const struct rte_ipv4_hdr *)(o[0].frame + 14);
		const struct rte_icmp_hdr *ic = (const struct rte_icmp_hdr *)(ip + 1);

		CU_ASSERT(ip->dst_addr == rte_cpu_to_be_32(PEER_IP(5)));
		CU_ASSERT(ic->icmp_type == RTE_IP_ICMP_ECHO_REPLY);
		CU_ASSERT(rte_raw_cksum(ic, 40) == 0xffff);
		CU_ASSERT(rte_ipv4_cksum(ip) == 0);
	}
	/* A neighbour with no static entry: the control thread asks for it by ARP. */
	int nh = dp_neigh_get(&dp, PEER_IP(61), 0);

	CU_ASSERT(nh >= 0);
	dp_housekeeping(&dp);
	poll_all(); /* the lcore owning queue 0 sends the control thread's request */
	dp_worker_poll(dp.lcores[0]);
	CU_ASSERT(collect(o, 16) == 1);
	{
		const struct rte_ether_hdr *eth = (const struct rte_ether_hdr *)o[0].frame;
		const struct rte_arp_hdr *arp = (const struct rte_arp_hdr *)(eth + 1);

		CU_ASSERT(eth->ether_type == rte_cpu_to_be_16(RTE_ETHER_TYPE_ARP));
		CU_ASSERT(arp->arp_opcode == rte_cpu_to_be_16(RTE_ARP_OP_REQUEST));
		CU_ASSERT(arp->arp_data.arp_tip == rte_cpu_to_be_32(PEER_IP(61)));
	}
	/* ... and learns the answer. */
	inject(mk_arp(RTE_ARP_OP_REPLY, 61, GW_IP));
	poll_all();
	dp_housekeeping(&dp);
	uint64_t v = atomic_load(&dp.neigh[nh].mac);

	CU_ASSERT(v == (DP_NEIGH_VALID | 0x02000000003dull));
	collect(o, 16);
	dp_down();
}

/* Frame m as if a bridge had rewritten its source MAC (to 02:00:00:00:00:ee): from its
 * sender's address, as the sender rules want, but its MAC says nothing about where the
 * sender is. */
static struct rte_mbuf *
from_other_mac(struct rte_mbuf *m)
{
	rte_pktmbuf_mtod(m, struct rte_ether_hdr *)->src_addr.addr_bytes[5] = 0xee;
	return m;
}

/*
 * A worker that has ARPed for the gateway, or sent it a packet, is a known neighbour by the
 * time its first RESULT leaves, with no turn of the control thread in between. Worker 61
 * ARPed before the table existed, 62 ARPs after the install (both send their CONTRIB
 * with another source MAC, so that only the ARP tells where they are); 63 does not ARP (its
 * kernel knew the gateway's MAC already) and sends its CONTRIB itself. None of them has a
 * static entry.
 */
static void
test_neighbours_known(void)
{
	static const uint16_t ws[] = {11, 61, 62, 63};
	struct tdesc td = {0, 0, 0, {0}, 0, 1, 16, {0}};
	static struct out o[16];

	CU_ASSERT_FATAL(dp_up(rte_get_main_lcore()) == 0);
	inject(mk_arp(RTE_ARP_OP_REQUEST, 61, GW_IP));
	poll_all();
	dp_housekeeping(&dp); /* the sighting reaches the control thread: no table uses it */
	CU_ASSERT(collect(o, 16) == 1); /* the ARP reply */
	CU_ASSERT_FATAL(install(mk_table(9, 1, 1, TABLE_DTYPE_FP32, 64, 64, 4, ws, 1, &td),
				"install") == 0);
	inject(mk_arp(RTE_ARP_OP_REQUEST, 62, GW_IP));
	for (int w = 0; w < 4; w++) {
		struct rte_mbuf *x = contrib_f32(9, 1, 0, ws[w], 1, 0, 64, 64);

		inject(ws[w] == 61 || ws[w] == 62 ? from_other_mac(x) : x);
	}
	poll_all();
	int n = collect(o, 16), results = 0;

	for (int k = 0; k < n; k++) {
		if (o[k].p.type != WIRE_TYPE_RESULT)
			continue;
		results++;
		CU_ASSERT(o[k].fl.dst_mac[0] == 2 && o[k].fl.dst_mac[5] == (uint8_t)o[k].fl.dst_ip);
	}
	CU_ASSERT(n == 5 && results == 4); /* the ARP reply to 62 and four results */
	CU_ASSERT(ctr(DP_CTR_NO_NEIGHBOUR) == 0);
	dp_down();
}

/* The NACK_RESULT of worker w for chunks [first, first + count) of round r. */
static struct rte_mbuf *
nack_result(uint32_t job, uint16_t w, uint32_t r, uint32_t first, uint16_t count)
{
	struct pkt nk = {WIRE_TYPE_NACK_RESULT, 0,     job,       1, 0, w, w, 0, r, first,
			 WIRE_DTYPE_NONE,       count, PEER_IP(w)};

	return mk_pkt(&nk, NULL);
}

/* m with a payload no worker sent (its first element 1e6; UDP checksum cleared). */
static struct rte_mbuf *
poisoned(struct rte_mbuf *m)
{
	float v = 1e6f;

	memcpy(rte_pktmbuf_mtod_offset(m, uint8_t *, WIRE_FRAME_PAYLOAD_OFF), &v, sizeof(v));
	rte_pktmbuf_mtod_offset(m, struct rte_udp_hdr *, 34)->dgram_cksum = 0;
	return m;
}

/* One round of workers W3 on every chunk; true if each RESULT is exact and came once per
 * worker and chunk. */
static bool
round_exact(uint32_t job, uint32_t r, uint64_t el, uint32_t ce, uint32_t nch)
{
	static struct out o[64];
	int bad = 0;

	for (int w = 0; w < 3; w++)
		for (uint32_t c = 0; c < nch; c++)
			inject(contrib_f32(job, 1, 0, W3[w], r, c, el, ce));
	poll_all();
	int n = collect(o, 64);

	for (int k = 0; k < n && k < 64; k++) {
		bad += o[k].p.type != WIRE_TYPE_RESULT || o[k].p.round != r || o[k].p.contrib != 3;
		for (uint32_t i = 0; i < o[k].p.count; i++) {
			uint64_t e = (uint64_t)o[k].p.chunk * ce + i;

			bad += out_f32(&o[k], i) != val(11, e) + val(12, e) + val(13, e);
		}
	}
	return n == 3 * (int)nch && bad == 0;
}

/*
 * Hostile senders (docs/PROTOCOL.md sections 7.2 and 7.6): contributions under a worker's
 * id from another address or port, or to another port of the range, are dropped and sum
 * nothing; NACK_RESULTs past the tree, longer than the cap, from other addresses or past
 * the sender's budget get nothing. Every round after a barrage is still exact.
 */
static void
test_hostile_senders(void)
{
	const uint64_t el = 4 * 64;
	const uint32_t ce = 64, nch = 4;
	struct tdesc td = {0, 0, 0, {0}, 0, nch, 16, {0}};
	static struct out o[512];

	CU_ASSERT_FATAL(dp_up(rte_get_main_lcore()) == 0);
	CU_ASSERT_FATAL(install(mk_table(16, 1, 1, TABLE_DTYPE_FP32, el, ce, 3, W3, 1, &td),
				"install") == 0);
	/* Worker 11's id from 10.213.0.66:5000 and from its address with port 5999; worker
	 * 12's from its own address and port, to the port of the next chunk. */
	spoof = (typeof(spoof)){true, 0x0ad50042, WORKER_PORT, 0};
	for (uint32_t c = 0; c < nch; c++)
		inject(poisoned(contrib_f32(16, 1, 0, 11, 1, c, el, ce)));
	spoof.ip = PEER_IP(11);
	spoof.sport = 5999;
	for (uint32_t c = 0; c < nch; c++)
		inject(poisoned(contrib_f32(16, 1, 0, 11, 1, c, el, ce)));
	spoof.ip = PEER_IP(12);
	spoof.sport = WORKER_PORT;
	for (uint32_t c = 0; c < nch; c++) {
		spoof.dport = wire_udp_port(WIRE_PORT_BASE_DEFAULT, WIRE_PORT_COUNT_DEFAULT, c + 1);
		inject(poisoned(contrib_f32(16, 1, 0, 12, 1, c, el, ce)));
	}
	spoof.on = false;
	poll_all();
	CU_ASSERT(collect(o, 512) == 0);
	CU_ASSERT(drops(WIRE_REASON_BAD_SENDER) == 2 * nch);
	CU_ASSERT(drops(WIRE_REASON_BAD_PORT) == nch);
	CU_ASSERT(ctr(DP_CTR_CONTRIBS) == 0);
	/* The real workers are summed, not taken for duplicates. */
	CU_ASSERT(round_exact(16, 1, el, ce, nch));
	CU_ASSERT(drops(WIRE_REASON_DUPLICATE) == 0);

	/* A NACK_RESULT running past the tree's 4 chunks: bad_chunk, no answer. */
	inject(nack_result(16, 11, 1, 2, 3));
	poll_all();
	CU_ASSERT(collect(o, 512) == 0);
	CU_ASSERT(drops(WIRE_REASON_BAD_CHUNK) == 1);
	/* A range longer than WIRE_NACK_RANGE_MAX (the tree made long enough is not needed:
	 * the header rule comes first): bad_count. */
	struct rte_mbuf *m = nack_result(16, 11, 1, 0, WIRE_NACK_RANGE_MAX);
	struct wire_hdr *h = rte_pktmbuf_mtod_offset(m, struct wire_hdr *, WIRE_FRAME_HDR_OFF);

	h->count = rte_cpu_to_be_16(WIRE_NACK_RANGE_MAX + 1); /* odd sender: no UDP checksum */
	inject(m);
	poll_all();
	CU_ASSERT(collect(o, 512) == 0);
	CU_ASSERT(drops(WIRE_REASON_COUNT) == 1);

	/* A flood of NACK_RESULTs naming worker 12 from 200 other addresses: nothing sent. */
	spoof = (typeof(spoof)){true, 0, WORKER_PORT, 0};
	for (uint32_t k = 0; k < 200; k++) {
		spoof.ip = 0x0a010000u | k;
		inject(nack_result(16, 12, 1, 0, nch));
	}
	spoof.on = false;
	poll_all();
	CU_ASSERT(collect(o, 512) == 0);
	CU_ASSERT(drops(WIRE_REASON_BAD_SENDER) == 2 * nch + 200);

	/* Worker 13 asks again and again from its own address: answered while its budget
	 * lasts (the bytes it contributed, and time), then counted. */
	uint64_t t0 = rte_rdtsc();
	int answered = 0, elsewhere = 0;

	for (int k = 0; k < 100; k++) {
		inject(nack_result(16, 13, 1, 0, nch));
		if (k % 16 == 15 || k == 99) {
			poll_all();
			int n = collect(o, 512);

			for (int i = 0; i < n; i++)
				elsewhere += o[i].fl.dst_ip != PEER_IP(13) ||
					     o[i].fl.dst_port != WORKER_PORT;
			answered += n;
		}
	}
	double secs = (double)(rte_rdtsc() - t0) / (double)rte_get_tsc_hz() + 0.01;
	uint32_t frame = WIRE_FRAME_PAYLOAD_OFF + 4 * ce;
	/* Install to now refills at most the cap; the 4 contributions add 4 frames. */
	double bound = DP_BUDGET_CAP + nch + secs * DP_BUDGET_REFILL_BPS / frame;

	CU_ASSERT(answered >= (int)nch);
	CU_ASSERT(answered <= bound);
	CU_ASSERT(answered < 100 * (int)nch);
	CU_ASSERT(ctr(DP_CTR_ANSWER_BUDGET) > 0);
	CU_ASSERT(elsewhere == 0);

	/* After every barrage the next round is exact. */
	CU_ASSERT(round_exact(16, 2, el, ce, nch));
	dp_down();
}

/* Move a frame by `by` bytes inside its buffer. */
static void
shift_frame(struct rte_mbuf *m, uint16_t by)
{
	uint16_t len = rte_pktmbuf_data_len(m);
	static uint8_t tmp[9100];

	memcpy(tmp, rte_pktmbuf_mtod(m, void *), len);
	m->data_off = (uint16_t)(m->data_off + by);
	memcpy(rte_pktmbuf_mtod(m, void *), tmp, len);
}

/* Jumbo frames (MTU 9000, 2229 fp32 elements: the table's largest chunk, 8998 bytes of IP),
 * payloads at unaligned
 * offsets, a frame at an odd address (dropped), and frames in more than one segment
 * (never summed: dropped as oversize). */
static void
test_jumbo_misaligned(void)
{
	const uint32_t ce = TABLE_CHUNK_BYTES_MAX / 4;
	const uint64_t el = 3 * ce - 100;
	struct tdesc td = {0, 0, 0, {0}, 0, 3, 16, {0}};
	static struct out o[16];
	struct rte_mempool *big =
		rte_pktmbuf_pool_create("t_big", 256, 0, 0, 9216 + 256, SOCKET_ID_ANY);
	struct rte_mempool *small = tpool;
	struct table *tb;

	CU_ASSERT_FATAL(big != NULL);
	CU_ASSERT_FATAL(dp_up(rte_get_main_lcore()) == 0);
	/* This dataplane runs MTU 1500: jumbo chunks do not fit. */
	tb = mk_table(14, 1, 1, TABLE_DTYPE_FP32, el, ce, 3, W3, 1, &td);
	CU_ASSERT(install(tb, "install") == E2BIG);
	dp_down();
	jumbo = true;
	CU_ASSERT_FATAL(dp_up(rte_get_main_lcore()) == 0);
	CU_ASSERT_FATAL(install(mk_table(14, 1, 1, TABLE_DTYPE_FP32, el, ce, 3, W3, 1, &td),
				"install") == 0);
	tpool = big;
	for (int w = 0; w < 3; w++)
		for (uint32_t c = 0; c < 3; c++) {
			struct rte_mbuf *m = contrib_f32(14, 1, 0, W3[w], 0, c, el, ce);

			/* Shift the frame by 2 or 6 bytes: the payload is no longer 4- or
			 * 32-byte aligned. */
			if (w > 0)
				shift_frame(m, (uint16_t)(4 * w - 2));
			inject(m);
		}
	tpool = small;
	/* A valid frame split over two segments. */
	{
		struct rte_mbuf *a, *b;

		tpool = big;
		a = contrib_f32(14, 1, 0, 11, 1, 0, el, ce);
		tpool = small;
		b = rte_pktmbuf_alloc(small);
		memcpy(must_append(b, 100), rte_pktmbuf_mtod_offset(a, void *, a->data_len - 100),
		       100);
		rte_pktmbuf_trim(a, 100);
		CU_ASSERT(rte_pktmbuf_chain(a, b) == 0);
		inject(a);
	}
	/* A frame at an odd address: dropped, counted. */
	tpool = big;
	struct rte_mbuf *odd = contrib_f32(14, 1, 0, 11, 1, 1, el, ce);

	tpool = small;
	shift_frame(odd, 1);
	inject(odd);
	poll_all();
	int n = collect(o, 16), bad = 0;

	CU_ASSERT(n == 9);
	CU_ASSERT(drops(WIRE_REASON_MISALIGNED) == 1);
	for (int i = 0; i < n && i < 16; i++) {
		bad += o[i].p.count != wire_chunk_len(el, ce, o[i].p.chunk);
		for (uint32_t e = 0; e < o[i].p.count; e++) {
			uint64_t x = (uint64_t)o[i].p.chunk * ce + e;

			bad += out_f32(&o[i], e) != val(11, x) + val(12, x) + val(13, x);
		}
	}
	CU_ASSERT(bad == 0);
	CU_ASSERT(drops(WIRE_REASON_OVERSIZE) == 1);
	dp_down();
	jumbo = false;
	rte_mempool_free(big);
}

int
main(int argc, char **argv)
{
	CU_pSuite s = dp_fixture_init(argc, argv, "test_dp_rx");

	if (s == NULL)
		return 1;
	CU_add_test(s, "bad packets by reason", test_bad_packets);
	CU_add_test(s, "a tree of the site's other gateway: wrong_shard", test_wrong_shard);
	CU_add_test(s, "ARP, ICMP, neighbour resolution", test_arp_icmp);
	CU_add_test(s, "a worker that ARPed or sent is a known neighbour", test_neighbours_known);
	CU_add_test(s, "hostile senders: addresses, ports, NACK ranges and budgets",
		    test_hostile_senders);
	CU_add_test(s, "jumbo frames, unaligned payloads, segments", test_jumbo_misaligned);
	return dp_fixture_run();
}
