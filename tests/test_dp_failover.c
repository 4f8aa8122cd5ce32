/* SPDX-License-Identifier: BSD-3-Clause
 *
 * EAL tests of result recovery across epochs (dataplane/fastpath, docs/PROTOCOL.md
 * section 10.1): after a re-plan, a RESULT a round needs is taken from an older epoch
 * that lingers, or asked of the child gateway or the worker that has it, and answered
 * from an older epoch for others; lingering epochs give way to a new one.
 *
 * The main thread plays the worker lcore (dp_worker_poll, dp_fixture.c).
 */
#include <inttypes.h>

#include <CUnit/CUnit.h>
#include <rte_cycles.h>
#include <rte_lcore.h>

#include "dp.h"
#include "dp_fixture.h"
#include "slowpath/slowpath.h"
#include "table.h"
#include "testutil.h"
#include "wire.h"

/* A RESULT of job 61 round `round`, chunk 0 (64 fp32 elements, each `v`), from gateway
 * `from` (at 10.0.0.from, origin 2) under `epoch` with `flags`. */
static struct rte_mbuf *
result_f32(uint32_t epoch, uint32_t round, uint16_t from, uint8_t flags, float v)
{
	float pl[64];
	struct pkt p = {WIRE_TYPE_RESULT, flags, 61,           epoch, 0, from, 2, 2, round, 0,
			WIRE_DTYPE_FP32,  64,    PEER_IP(from)};

	for (int i = 0; i < 64; i++)
		pl[i] = v;
	return mk_pkt(&p, pl);
}

/* Child gateway 2's partial sum (contrib 1) of job 61 chunk 0, each element `v`. */
static struct rte_mbuf *
child2_sum(uint32_t epoch, uint32_t round, uint8_t flags, float v)
{
	float pl[64];
	struct pkt p = {WIRE_TYPE_CONTRIB, flags, 61,        epoch, 0, 2, 2, 1, round, 0,
			WIRE_DTYPE_FP32,   64,    PEER_IP(2)};

	for (int i = 0; i < 64; i++)
		pl[i] = v;
	return mk_pkt(&p, pl);
}

/* Whether o is a RESULT of epoch 2, tree 0, round `round` to 10.0.0.to whose every element
 * is v (v < 0: worker 11's value + 1, the sum with child 2's ones). */
static bool
recovered_is(const struct out *o, uint32_t round, uint16_t to, float v)
{
	if (o->p.type != WIRE_TYPE_RESULT || o->p.epoch != 2 || o->p.tree != 0 ||
	    o->p.round != round || o->p.chunk != 0 || o->fl.dst_ip != PEER_IP(to))
		return false;
	for (uint32_t i = 0; i < 64; i++)
		if (out_f32(o, i) != (v < 0 ? val(11, i) + 1 : v))
			return false;
	return true;
}

/* Whether the n frames o[] are the two copies of a recovered RESULT (recovered_is()), one
 * to gateway 2 and one to worker 11, in either order. */
static bool
recovered_both(const struct out *o, int n, uint32_t round, float v)
{
	return n == 2 && ((recovered_is(&o[0], round, 2, v) && recovered_is(&o[1], round, 11, v)) ||
			  (recovered_is(&o[0], round, 11, v) && recovered_is(&o[1], round, 2, v)));
}

/* dp_up() with drained epochs kept a minute for result recovery (--linger-ms). */
static void
dp_up_lingering(void)
{
	linger_ms = 60000;
	CU_ASSERT_FATAL(dp_up(rte_get_main_lcore()) == 0);
	linger_ms = 0;
}

/* Whether o is an ACK of chunk `chunk` of round `round` to gateway 2 (it holds its
 * contribution: the answer to its NACK_RESULT, docs/PROTOCOL.md section 5). */
static bool
ack_to_child2(const struct out *o, uint32_t round, uint32_t chunk)
{
	return o->p.type == WIRE_TYPE_ACK && o->fl.dst_ip == PEER_IP(2) && o->p.round == round &&
	       o->p.chunk == chunk && o->p.count == 1 && o->p.origin == 2;
}

/* Gateway 1 has asked for round 6's RESULT: `again` (a frame that would ask for it) asks
 * nothing more (a NACK_RESULT of gateway 2, `nack`, is ACKed: its contribution is held),
 * and the answer from `from` completes the slot: the RESULT to gateway 2 and to worker
 * 11. */
static void
asked_then_answered(struct rte_mbuf *again, bool nack, uint16_t from)
{
	static struct out o[8];
	int n;

	inject(again);
	poll_all();
	n = collect(o, 8);
	CU_ASSERT(ctr(DP_CTR_RECOVER_ASKED) == 1);
	CHECK(nack ? n == 1 && ack_to_child2(&o[0], 6, 0) : n == 0, "again: %d frames", n);
	inject(result_f32(2, 6, from, WIRE_F_RETX | WIRE_F_ECHO, 5));
	poll_all();
	n = collect(o, 8);
	CHECK(recovered_both(o, n, 6, 5), "the answer: %d frames", n);
	CU_ASSERT(ctr(DP_CTR_RECOVERED) == 1);
}

/* Round 7 under epoch 2 from worker 11 and child 2 (a, b: in this order of arrival) is
 * summed as usual: its RESULT to both. */
static void
round7_summed(struct rte_mbuf *a, struct rte_mbuf *b)
{
	static struct out o[8];
	int n;

	inject(a);
	inject(b);
	poll_all();
	n = collect(o, 8);
	CHECK(recovered_both(o, n, 7, -1), "round 7: %d frames", n);
}

/* Epoch 1: this gateway (1) is a leaf under gateway 2 with worker 11; round 6 goes up, and
 * with `answered` the parent's RESULT (every element 5) comes back and goes to worker 11.
 * Then epoch 2 makes it the root, with child gateway 2: the re-plan of a link failure. */
static void
recovery_two_epochs_of(bool answered, uint32_t members1, uint32_t members2)
{
	static const uint16_t w11[] = {11};
	struct tdesc leaf = {0, 2, 0, {0}, 0, 1, 16, {0}};
	struct tdesc root = {0, 0, 1, {2}, 0, 1, 16, {1}};
	static struct out o[8];

	CU_ASSERT_FATAL(
		install_membership(mk_table(61, 1, 1, TABLE_DTYPE_FP32, 64, 64, 1, w11, 1, &leaf),
				   "install", members1) == 0);
	inject(contrib_f32(61, 1, 0, 11, 6, 0, 64, 64));
	poll_all();
	CU_ASSERT(collect(o, 8) == 1 && o[0].p.type == WIRE_TYPE_CONTRIB &&
		  o[0].fl.dst_ip == PEER_IP(2));
	if (answered) {
		inject(result_f32(1, 6, 2, 0, 5));
		poll_all();
		CU_ASSERT(collect(o, 8) == 1 && o[0].p.type == WIRE_TYPE_RESULT &&
			  o[0].fl.dst_ip == PEER_IP(11));
	}
	CU_ASSERT_FATAL(
		install_membership(mk_table(61, 2, 1, TABLE_DTYPE_FP32, 64, 64, 1, w11, 1, &root),
				   "install", members2) == 0);
}

static void
recovery_two_epochs(bool answered)
{
	recovery_two_epochs_of(answered, 0, 0);
}

/* Worker 11 lost its round 6 RESULT to the re-plan and runs the round again under epoch 2,
 * while gateway 2's side has moved on to round 7: the RESULT this gateway retains from
 * epoch 1 completes the slot, and round 7 then completes as usual. */
static void
test_recovery_from_older_epoch(void)
{
	static struct out o[8];

	dp_up_lingering();
	recovery_two_epochs(true);
	inject(contrib_f32(61, 2, 0, 11, 6, 0, 64, 64)); /* opens the slot for round 6 */
	poll_all();
	CU_ASSERT(collect(o, 8) == 0);
	inject(child2_sum(2, 7, 0, 1)); /* the other side is at round 7 */
	poll_all();
	int n = collect(o, 8);

	CHECK(recovered_both(o, n, 6, 5), "%d frames sent, the first type %d round %u", n,
	      n > 0 ? (int)o[0].p.type : -1, n > 0 ? o[0].p.round : 0);
	CU_ASSERT(ctr(DP_CTR_RECOVERED) == 1 && ctr(DP_CTR_RECOVER_ASKED) == 0);
	/* Round 7 from both: exact. */
	round7_summed(contrib_f32(61, 2, 0, 11, 7, 0, 64, 64), child2_sum(2, 7, WIRE_F_RETX, 1));
	dp_down();
}

/* As above, but epoch 2 names another membership than epoch 1 (a worker elsewhere joined
 * or left between them): the RESULT epoch 1 retains counts other workers, so it neither
 * completes the slot nor answers worker 11's NACK_RESULT (recover_other_members). The round
 * runs again under epoch 2 with its own contributions, which make its RESULT. With the
 * same membership named in both, epoch 1's RESULT completes it as without one. */
static void
test_recovery_other_membership(void)
{
	struct pkt nk = {WIRE_TYPE_NACK_RESULT, 0, 61,         2, 0, 11, 11, 0, 6, 0,
			 WIRE_DTYPE_NONE,       1, PEER_IP(11)};
	static struct out o[8];
	int n;

	dp_up_lingering();
	recovery_two_epochs_of(true, 101, 202);
	inject(contrib_f32(61, 2, 0, 11, 6, 0, 64, 64)); /* opens the slot for round 6 */
	poll_all();
	CU_ASSERT(collect(o, 8) == 0);
	inject(mk_pkt(&nk, NULL)); /* worker 11 asks while the slot waits for child 2 */
	poll_all();
	n = collect(o, 8);
	for (int i = 0; i < n; i++)
		CHECK(o[i].p.type != WIRE_TYPE_RESULT, "frame %d of %d: a RESULT of round %u", i, n,
		      o[i].p.round);
	CHECK(ctr(DP_CTR_RECOVER_OTHER_MEMBERS) == 1 && ctr(DP_CTR_RECOVERED) == 0,
	      "other members %" PRIu64 ", recovered %" PRIu64, ctr(DP_CTR_RECOVER_OTHER_MEMBERS),
	      ctr(DP_CTR_RECOVERED));
	inject(child2_sum(2, 7, 0, 1)); /* moved on: asked, not completed from epoch 1 */
	poll_all();
	n = collect(o, 8);
	CHECK(n == 1 && o[0].p.type == WIRE_TYPE_NACK_RESULT && o[0].p.epoch == 2 &&
		      o[0].p.round == 6 && o[0].fl.dst_ip == PEER_IP(2),
	      "child 2 at round 7: %d frames, the first type %d", n, n > 0 ? (int)o[0].p.type : -1);
	CU_ASSERT(ctr(DP_CTR_RECOVER_OTHER_MEMBERS) == 2 && ctr(DP_CTR_RECOVERED) == 0);
	/* Child 2 runs round 6 again under epoch 2 too: the new sum, worker 11's plus 1. */
	inject(child2_sum(2, 6, 0, 1));
	poll_all();
	n = collect(o, 8);
	CHECK(recovered_both(o, n, 6, -1), "round 6 under epoch 2: %d frames", n);
	dp_down();

	/* The same membership named in both epochs: recovered from epoch 1 (every element 5). */
	dp_up_lingering();
	recovery_two_epochs_of(true, 303, 303);
	inject(contrib_f32(61, 2, 0, 11, 6, 0, 64, 64));
	inject(child2_sum(2, 7, 0, 1));
	poll_all();
	n = collect(o, 8);
	CHECK(recovered_both(o, n, 6, 5), "the same membership: %d frames", n);
	CU_ASSERT(ctr(DP_CTR_RECOVERED) == 1 && ctr(DP_CTR_RECOVER_OTHER_MEMBERS) == 0);
	dp_down();
}

/* `prepare`'s `membership`: 1 .. 2^32 - 1, or absent; shown in `stats`. */
static void
test_membership_field(void)
{
	static const uint16_t w11[] = {11};
	struct tdesc root = {0, 0, 1, {2}, 0, 1, 16, {1}};
	json_t *req, *rep;

	CU_ASSERT_FATAL(dp_up(rte_get_main_lcore()) == 0);
	CU_ASSERT(install_membership(mk_table(61, 1, 1, TABLE_DTYPE_FP32, 64, 64, 1, w11, 1, &root),
				     "prepare", 4294967295u) == 0);
	/* The same table again with another membership is another prepare: refused. */
	CU_ASSERT(install_membership(mk_table(61, 1, 1, TABLE_DTYPE_FP32, 64, 64, 1, w11, 1, &root),
				     "prepare", 5) == EEXIST);
	static const char *const bad[] = {"0", "-1", "4294967296", "\"7\"", "1.5", "null"};
	struct table *t2 = mk_table(61, 2, 1, TABLE_DTYPE_FP32, 64, 64, 1, w11, 1, &root);
	struct table *t62 = mk_table(62, 1, 1, TABLE_DTYPE_FP32, 64, 64, 1, w11, 1, &root);

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		char text[160];
		json_t *tj = table_to_json(t2);

		snprintf(text, sizeof(text),
			 "{\"version\": 1, \"id\": 3, \"op\": \"prepare\", \"membership\": %s}",
			 bad[i]);
		req = json_loads(text, 0, NULL);
		CU_ASSERT_PTR_NOT_NULL_FATAL(req);
		json_object_set_new(req, "table", tj);
		rep = dp_ctl_handle(&dp, req);
		const char *e = json_string_value(json_object_get(rep, "error"));

		CHECK(json_is_false(json_object_get(rep, "ok")) &&
			      json_integer_value(json_object_get(rep, "errno")) == EINVAL &&
			      e != NULL && strstr(e, "field 'membership'") != NULL,
		      "membership %s: %s", bad[i], e != NULL ? e : "accepted");
		json_decref(req);
		json_decref(rep);
	}
	/* A dataplane acting as revision 1.15 does not know the field. */
	dp.prm.act_revision = 15;
	req = json_pack("{s:i,s:i,s:s,s:o,s:i}", "version", 1, "id", 5, "op", "prepare", "table",
			table_to_json(t62), "membership", 9);
	table_free(t2);
	table_free(t62);
	rep = dp_ctl_handle(&dp, req);
	const char *e15 = json_string_value(json_object_get(rep, "error"));

	CHECK(json_integer_value(json_object_get(rep, "errno")) == EINVAL && e15 != NULL &&
		      strstr(e15, "field 'membership': unknown field") != NULL,
	      "--revision 15: %s", e15 != NULL ? e15 : "accepted");
	dp.prm.act_revision = 0;
	json_decref(req);
	json_decref(rep);
	req = json_pack("{s:i,s:i,s:s}", "version", 1, "id", 4, "op", "stats");
	rep = dp_ctl_handle(&dp, req);
	json_t *jobs = json_object_get(rep, "jobs");

	CHECK(json_array_size(jobs) == 1 &&
		      json_integer_value(json_object_get(json_array_get(jobs, 0), "membership")) ==
			      4294967295,
	      "stats: %zu jobs", json_array_size(jobs));
	json_decref(req);
	json_decref(rep);
	dp_down();
}

/* As above, but this gateway never got round 6's RESULT (lost on the failed link): it asks
 * gateway 2, which moved on and so has it, and completes the slot with the answer. A
 * RESULT from a child that nobody asked for, or without RETX, changes nothing. */
static void
test_recovery_asks_child(void)
{
	static struct out o[8];

	dp_up_lingering();
	recovery_two_epochs(false);
	inject(result_f32(2, 9, 2, WIRE_F_RETX, 3)); /* asked for by nobody */
	inject(result_f32(2, 9, 2, 0, 3));           /* not an answer */
	poll_all();
	CU_ASSERT(collect(o, 8) == 0 && drops(WIRE_REASON_BAD_SENDER) == 1 &&
		  drops(WIRE_REASON_LATE) == 1);
	inject(contrib_f32(61, 2, 0, 11, 6, 0, 64, 64));
	inject(child2_sum(2, 7, 0, 1));
	poll_all();
	int n = collect(o, 8);

	CHECK(n == 1 && o[0].p.type == WIRE_TYPE_NACK_RESULT && o[0].p.epoch == 2 &&
		      o[0].p.round == 6 && o[0].p.chunk == 0 && o[0].p.count == 1 &&
		      o[0].p.sender == 1 && o[0].fl.dst_ip == PEER_IP(2),
	      "%d frames, type %d", n, n > 0 ? (int)o[0].p.type : -1);
	asked_then_answered(child2_sum(2, 7, WIRE_F_RETX, 1), false, 2); /* asked already */
	dp_down();
}

/* Gateway 1 completes round 6 under epoch 1 as the root of worker 11 and child 2; then
 * epoch 2 makes it a leaf of worker 11 under gateway 2. */
static void
root_done_then_leaf(void)
{
	static const uint16_t w11[] = {11};
	struct tdesc root = {0, 0, 1, {2}, 0, 1, 16, {1}};
	struct tdesc leaf = {0, 2, 0, {0}, 0, 1, 16, {0}};
	static struct out o[8];

	CU_ASSERT_FATAL(install(mk_table(61, 1, 1, TABLE_DTYPE_FP32, 64, 64, 1, w11, 1, &root),
				"install") == 0);
	inject(contrib_f32(61, 1, 0, 11, 6, 0, 64, 64));
	inject(child2_sum(1, 6, 0, 1));
	poll_all();
	CU_ASSERT(collect(o, 8) == 2);
	CU_ASSERT_FATAL(install(mk_table(61, 2, 1, TABLE_DTYPE_FP32, 64, 64, 1, w11, 1, &leaf),
				"install") == 0);
}

/* The other end: a gateway that completed round 6 under epoch 1 (root of worker 11 and
 * child 2) answers under epoch 2, from epoch 1, its new parent's request for that RESULT
 * and worker 11's late CONTRIB of that round; once epoch 1 is retired, it cannot. */
static void
test_recovery_answers(void)
{
	struct pkt nk = {WIRE_TYPE_NACK_RESULT, 0, 61,        2, 0, 2, 2, 0, 6, 0,
			 WIRE_DTYPE_NONE,       1, PEER_IP(2)};
	static struct out o[8];

	dp_up_lingering();
	root_done_then_leaf();
	/* Room in the parent's answer budget: it starts empty and fills at 1 MB/s. */
	rte_delay_us_sleep(2000);
	inject(mk_pkt(&nk, NULL));
	poll_all();
	int n = collect(o, 8);

	CHECK(n == 1 && recovered_is(&o[0], 6, 2, -1) &&
		      o[0].p.flags == (WIRE_F_RETX | WIRE_F_ECHO) && o[0].p.sender == 1,
	      "%d frames, type %d epoch %u", n, n > 0 ? (int)o[0].p.type : -1,
	      n > 0 ? o[0].p.epoch : 0);
	/* Round 7 under epoch 2 goes up; then worker 11's late round 6 gets its RESULT. */
	inject(contrib_f32(61, 2, 0, 11, 7, 0, 64, 64));
	poll_all();
	CU_ASSERT(collect(o, 8) == 1 && o[0].p.type == WIRE_TYPE_CONTRIB && o[0].p.round == 7);
	inject(contrib_f32(61, 2, 0, 11, 6, 0, 64, 64));
	poll_all();
	n = collect(o, 8);
	CHECK(n == 1 && recovered_is(&o[0], 6, 11, -1), "late CONTRIB: %d frames", n);
	CU_ASSERT(ctr(DP_CTR_RECOVER_ANSWERED) == 2);
	dp_down();

	/* Without lingering epochs the RESULT is gone with epoch 1: only the neighbours
	 * could still have it, and the leaf asks its parent. */
	CU_ASSERT_FATAL(dp_up(rte_get_main_lcore()) == 0);
	root_done_then_leaf();
	dp_housekeeping(&dp); /* epoch 1 drained: it retires at once */
	CU_ASSERT(atomic_load(&dp.state)->jobs[0].n_epochs == 1);
	inject(contrib_f32(61, 2, 0, 11, 7, 0, 64, 64));
	inject(contrib_f32(61, 2, 0, 11, 6, 0, 64, 64));
	poll_all();
	n = collect(o, 8);
	CHECK(n == 2 && o[1].p.type == WIRE_TYPE_NACK_RESULT && o[1].fl.dst_ip == PEER_IP(2) &&
		      o[1].p.round == 6,
	      "%d frames", n);
	dp_down();
}

/* Whether o is gateway 1's NACK_RESULT under epoch 2 for chunk 0 of round `round`, to
 * 10.0.0.to. */
static bool
recovery_asked(const struct out *o, uint32_t round, uint16_t to)
{
	return o->p.type == WIRE_TYPE_NACK_RESULT && o->p.epoch == 2 && o->p.round == round &&
	       o->p.chunk == 0 && o->p.count == 1 && o->p.sender == 1 &&
	       o->fl.dst_ip == PEER_IP(to);
}

/* A re-plan moved chunk 0 here from a gateway that died after its local worker 11 had
 * round 6's RESULT and before child gateway 2's side had it: gateway 1 holds that RESULT
 * in no epoch, and is now root over worker 11 and child 2. Child 2 runs round 6 again,
 * worker 11 sends round 7: gateway 1 asks worker 11, whose answer (from the results it
 * keeps) completes the slot for everyone; round 7 is then summed as usual. A worker's
 * RESULT without RETX, from another address or unasked changes nothing. */
static void
test_recovery_asks_worker(void)
{
	static const uint16_t w11[] = {11};
	struct tdesc root = {0, 0, 1, {2}, 0, 1, 16, {1}};
	static struct out o[8];

	CU_ASSERT_FATAL(dp_up(rte_get_main_lcore()) == 0);
	CU_ASSERT_FATAL(install(mk_table(61, 2, 1, TABLE_DTYPE_FP32, 64, 64, 1, w11, 1, &root),
				"install") == 0);
	inject(child2_sum(2, 6, 0, 1));
	poll_all();
	CU_ASSERT(collect(o, 8) == 0);
	inject(result_f32(2, 6, 11, WIRE_F_RETX | WIRE_F_ECHO, 5)); /* unasked */
	inject(result_f32(2, 6, 11, 0, 5));                         /* no answer */
	spoof = (typeof(spoof)){true, PEER_IP(12), WORKER_PORT, 0};
	inject(result_f32(2, 6, 11, WIRE_F_RETX | WIRE_F_ECHO, 5)); /* not from 11 */
	spoof.on = false;
	poll_all();
	CU_ASSERT(collect(o, 8) == 0 && drops(WIRE_REASON_LATE) == 1 &&
		  drops(WIRE_REASON_BAD_SENDER) == 2);
	inject(contrib_f32(61, 2, 0, 11, 7, 0, 64, 64)); /* worker 11 moved on */
	poll_all();
	int n = collect(o, 8);

	CHECK(n == 1 && recovery_asked(&o[0], 6, 11), "%d frames, type %d to %08x", n,
	      n > 0 ? (int)o[0].p.type : -1, n > 0 ? o[0].fl.dst_ip : 0);
	/* Worker 11's round 7 again (RETX): asked already. */
	asked_then_answered(contrib_f32_flags(61, 2, WIRE_F_RETX, 0, 11, 7, 0, 64, 64), false, 11);
	/* Child 2's round 7, then worker 11's again, which completes it. */
	round7_summed(child2_sum(2, 7, 0, 1),
		      contrib_f32_flags(61, 2, WIRE_F_RETX, 0, 11, 7, 0, 64, 64));
	dp_down();
}

/* The same cut seen from a leaf: gateway 1, new under parent 2 with worker 11, holds
 * worker 11's round 7 (sent up) when the parent asks for round 6's RESULT. Gateway 1 has
 * it nowhere and no other neighbour: it asks worker 11, and the answer goes to the
 * parent. */
static void
test_recovery_leaf_asks_worker(void)
{
	static const uint16_t w11[] = {11};
	struct tdesc leaf = {0, 2, 0, {0}, 0, 1, 16, {0}};
	struct pkt nk = {WIRE_TYPE_NACK_RESULT, 0, 61,        2, 0, 2, 2, 0, 6, 0,
			 WIRE_DTYPE_NONE,       1, PEER_IP(2)};
	static struct out o[8];

	CU_ASSERT_FATAL(dp_up(rte_get_main_lcore()) == 0);
	CU_ASSERT_FATAL(install(mk_table(61, 2, 1, TABLE_DTYPE_FP32, 64, 64, 1, w11, 1, &leaf),
				"install") == 0);
	inject(contrib_f32(61, 2, 0, 11, 7, 0, 64, 64));
	poll_all();
	CU_ASSERT(collect(o, 8) == 1 && o[0].p.type == WIRE_TYPE_CONTRIB && o[0].p.round == 7);
	inject(mk_pkt(&nk, NULL));
	poll_all();
	int n = collect(o, 8);

	CHECK(n == 1 && recovery_asked(&o[0], 6, 11), "%d frames, type %d to %08x", n,
	      n > 0 ? (int)o[0].p.type : -1, n > 0 ? o[0].fl.dst_ip : 0);
	inject(result_f32(2, 6, 11, WIRE_F_RETX | WIRE_F_ECHO, 5));
	poll_all();
	n = collect(o, 8);
	CHECK(n == 1 && recovered_is(&o[0], 6, 2, 5) && (o[0].p.flags & WIRE_F_RETX) &&
		      o[0].p.sender == 1,
	      "the answer: %d frames, type %d", n, n > 0 ? (int)o[0].p.type : -1);
	dp_down();
}

/* The cut of test_recovery_asks_worker with worker 11's next round ahead of the slot: it
 * sends round 7 of chunk 1 only (its window), none of chunk 0. Child 2's round 6 of chunk
 * 0 then opens that slot for a round worker 11 is past (`open`), or finds it open in a
 * NACK_RESULT: gateway 1 asks worker 11, once, and its answer completes the slot. Worker
 * 11's CONTRIBs of round 6 are what it waits for otherwise: before the worker moved on,
 * the child's CONTRIB asks nobody. */
static void
recovery_worker_ahead(bool open)
{
	static const uint16_t w11[] = {11};
	struct tdesc root = {0, 0, 1, {2}, 0, 2, 16, {1}};
	struct pkt nk = {WIRE_TYPE_NACK_RESULT, 0, 61,        2, 0, 2, 2, 0, 6, 0,
			 WIRE_DTYPE_NONE,       1, PEER_IP(2)};
	static struct out o[8];
	int n;

	CU_ASSERT_FATAL(dp_up(rte_get_main_lcore()) == 0);
	CU_ASSERT_FATAL(install(mk_table(61, 2, 1, TABLE_DTYPE_FP32, 128, 64, 1, w11, 1, &root),
				"install") == 0);
	if (!open) {
		inject(child2_sum(2, 6, 0, 1));
		poll_all();
		CU_ASSERT(collect(o, 8) == 0);
	}
	inject(contrib_f32(61, 2, 0, 11, 7, 1, 128, 64));
	poll_all();
	CU_ASSERT(collect(o, 8) == 0);
	inject(open ? child2_sum(2, 6, 0, 1) : mk_pkt(&nk, NULL));
	poll_all();
	n = collect(o, 8);
	/* The NACK_RESULT of gateway 2, whose contribution the slot holds, is also ACKed. */
	if (!open && n == 2 && ack_to_child2(&o[0], 6, 0))
		o[0] = o[1], n = 1;
	else if (!open && n == 2 && ack_to_child2(&o[1], 6, 0))
		n = 1;
	else if (!open)
		n = -n;
	CHECK(n == 1 && recovery_asked(&o[0], 6, 11), "%d frames, type %d to %08x", n,
	      n > 0 ? (int)o[0].p.type : -1, n > 0 ? o[0].fl.dst_ip : 0);
	asked_then_answered(mk_pkt(&nk, NULL), true, 11); /* asked already */
	dp_down();
}

static void
test_recovery_worker_ahead_open(void)
{
	recovery_worker_ahead(true);
}

static void
test_recovery_worker_ahead_nack(void)
{
	recovery_worker_ahead(false);
}

/* Epochs lingering for result recovery keep the mbufs their slot pools may hold; an epoch
 * that needs them gets them: the drained lingering epochs retire first. */
static void
test_recovery_linger_room(void)
{
	static const uint16_t w11[] = {11};
	struct tdesc big = {0, 0, 0, {0}, 0, 1, 4096, {0}};
	struct tdesc small = {0, 0, 0, {0}, 0, 1, 1024, {0}};
	const struct dp_state *st;

	dp_up_lingering();
	CU_ASSERT_FATAL(install(mk_table(62, 1, 1, TABLE_DTYPE_FP32, 64, 64, 1, w11, 1, &big),
				"install") == 0);
	CU_ASSERT_FATAL(install(mk_table(62, 2, 1, TABLE_DTYPE_FP32, 64, 64, 1, w11, 1, &small),
				"install") == 0);
	dp_housekeeping(&dp);
	st = atomic_load(&dp.state);
	CU_ASSERT(st->jobs[0].n_epochs == 2); /* epoch 1 lingers, drained */
	CHECK(dp.mbufs_committed + 2 * 4096 > dp.mbufs_budget,
	      "%" PRIu64 " of %" PRIu64
	      " committed: the test needs a budget that cannot hold three epochs",
	      dp.mbufs_committed, dp.mbufs_budget);
	CU_ASSERT(install(mk_table(62, 3, 1, TABLE_DTYPE_FP32, 64, 64, 1, w11, 1, &big),
			  "install") == 0);
	st = atomic_load(&dp.state);
	CU_ASSERT(st->jobs[0].n_epochs == 2 && st->jobs[0].epochs[0]->epoch == 3 &&
		  st->jobs[0].epochs[1]->epoch == 2);
	dp_down();
}

/* The request table is per lcore and job (DP_RECOVER_MAX entries, each pending 4 RTOs): a
 * leaf under parent 2 whose worker 11 sends round 100, then late CONTRIBs of 36 other
 * rounds from worker 11's address (forged or not: this gateway cannot tell) that nobody
 * retains. Each is recorded and asked of the parent until the table is full; worker 11
 * then holds it all, and its next requests are refused (recover_full). The parent's
 * NACK_RESULT for round 99, which PROTOCOL.md 10.1 requires this gateway to pass on to
 * worker 11, still is: it takes one of worker 11's entries (recover_evicted). Worker 11
 * cannot take it back, and the answer goes to the parent. A bad late CONTRIB (another
 * address) records nothing. */
static void
test_recovery_share(void)
{
	static const uint16_t w11[] = {11};
	struct tdesc leaf = {0, 2, 0, {0}, 0, 1, 16, {0}};
	struct pkt nk = {WIRE_TYPE_NACK_RESULT, 0, 61,        2, 0, 2, 2, 0, 99, 0,
			 WIRE_DTYPE_NONE,       1, PEER_IP(2)};
	static struct out o[48];
	int n, to_parent = 0;

	CU_ASSERT_FATAL(dp_up(rte_get_main_lcore()) == 0);
	/* Entries pending for minutes: nothing here may expire on a slow machine. */
	dp.prm.rto_init_tsc = dp.prm.rto_min_tsc = dp.prm.rto_max_tsc = rte_get_tsc_hz() * 60;
	CU_ASSERT_FATAL(install(mk_table(61, 2, 1, TABLE_DTYPE_FP32, 64, 64, 1, w11, 1, &leaf),
				"install") == 0);
	inject(contrib_f32(61, 2, 0, 11, 100, 0, 64, 64));
	poll_all();
	CU_ASSERT(collect(o, 48) == 1 && o[0].p.type == WIRE_TYPE_CONTRIB);
	spoof = (typeof(spoof)){true, PEER_IP(12), WORKER_PORT, 0};
	inject(contrib_f32(61, 2, 0, 11, 50, 0, 64, 64)); /* not from worker 11's address */
	spoof.on = false;
	for (uint32_t r = 60; r < 60 + DP_RECOVER_MAX + 4; r++)
		inject(contrib_f32(61, 2, 0, 11, r, 0, 64, 64));
	poll_all();
	n = collect(o, 48);
	for (int i = 0; i < n; i++)
		to_parent += recovery_asked(&o[i], o[i].p.round, 2);
	CHECK(n == DP_RECOVER_MAX && to_parent == n && drops(WIRE_REASON_BAD_SENDER) == 1,
	      "%d frames, %d NACK_RESULTs to the parent", n, to_parent);
	CHECK(ctr(DP_CTR_RECOVER_FULL) == 4 && ctr(DP_CTR_RECOVER_EVICTED) == 0,
	      "full %" PRIu64 ", evicted %" PRIu64, ctr(DP_CTR_RECOVER_FULL),
	      ctr(DP_CTR_RECOVER_EVICTED));
	inject(mk_pkt(&nk, NULL));
	poll_all();
	n = collect(o, 48);
	CHECK(n == 1 && recovery_asked(&o[0], 99, 11), "%d frames, type %d to %08x", n,
	      n > 0 ? (int)o[0].p.type : -1, n > 0 ? o[0].fl.dst_ip : 0);
	CU_ASSERT(ctr(DP_CTR_RECOVER_EVICTED) == 1);
	inject(contrib_f32(61, 2, 0, 11, 98, 0, 64, 64)); /* worker 11 again: refused */
	poll_all();
	CU_ASSERT(collect(o, 48) == 0 && ctr(DP_CTR_RECOVER_FULL) == 5 &&
		  ctr(DP_CTR_RECOVER_EVICTED) == 1);
	inject(result_f32(2, 99, 11, WIRE_F_RETX | WIRE_F_ECHO, 5));
	poll_all();
	n = collect(o, 48);
	CHECK(n == 1 && recovered_is(&o[0], 99, 2, 5) && (o[0].p.flags & WIRE_F_RETX),
	      "the answer: %d frames, type %d", n, n > 0 ? (int)o[0].p.type : -1);
	dp_down();
}

/* A restarted job (docs/CLIENT.md, PROTOCOL.md 10.1 rule 7): workers 11 and 12 sent round 4
 * of the chunk, worker 13 never did, and all three restart at round 9 under the same
 * epoch. The slot keeps round 4 while any contributor has not moved past it (no_slot), and
 * gives it up for round 9 once the last one has; the retransmissions of 11 and 12 then
 * complete round 9 alone. */
static void
test_restarted_job(void)
{
	struct tdesc td = {0, 0, 0, {0}, 0, 1, 16, {0}};
	static struct out o[16];
	int n;

	CU_ASSERT_FATAL(dp_up(rte_get_main_lcore()) == 0);
	CU_ASSERT_FATAL(install(mk_table(17, 1, 1, TABLE_DTYPE_FP32, 64, 64, 3, W3, 1, &td),
				"install") == 0);
	inject(contrib_f32(17, 1, 0, 11, 4, 0, 64, 64));
	inject(contrib_f32(17, 1, 0, 12, 4, 0, 64, 64));
	poll_all();
	CU_ASSERT(collect(o, 16) == 0);
	/* 11 and 12 at round 9: 13 has sent nothing, so round 4 might still complete. */
	inject(contrib_f32(17, 1, 0, 11, 9, 0, 64, 64));
	inject(contrib_f32(17, 1, 0, 12, 9, 0, 64, 64));
	poll_all();
	collect(o, 16); /* the round's RESULT asked of a worker that moved on */
	CHECK(drops(WIRE_REASON_NO_SLOT) == 2 && ctr(DP_CTR_ROUNDS_GIVEN_UP) == 0,
	      "no_slot %" PRIu64 ", given up %" PRIu64, drops(WIRE_REASON_NO_SLOT),
	      ctr(DP_CTR_ROUNDS_GIVEN_UP));
	/* 13 at round 9: every contributor is past round 4. */
	inject(contrib_f32(17, 1, 0, 13, 9, 0, 64, 64));
	poll_all();
	n = collect(o, 16);
	CHECK(n == 0 && drops(WIRE_REASON_NO_SLOT) == 2 && ctr(DP_CTR_ROUNDS_GIVEN_UP) == 1,
	      "%d frames, no_slot %" PRIu64 ", given up %" PRIu64, n, drops(WIRE_REASON_NO_SLOT),
	      ctr(DP_CTR_ROUNDS_GIVEN_UP));
	inject(contrib_f32_flags(17, 1, WIRE_F_RETX, 0, 11, 9, 0, 64, 64));
	inject(contrib_f32_flags(17, 1, WIRE_F_RETX, 0, 12, 9, 0, 64, 64));
	poll_all();
	/* 11's is held (an ACK), 12's completes the chunk: the RESULT to the three. */
	n = collect(o, 16);
	CU_ASSERT_FATAL(n == 4);
	CU_ASSERT(o[0].p.type == WIRE_TYPE_ACK && o[0].p.round == 9 && o[0].p.origin == 11);
	for (int k = 1; k < n; k++)
		CU_ASSERT(o[k].p.type == WIRE_TYPE_RESULT && o[k].p.round == 9 &&
			  o[k].p.contrib == 3);
	for (uint32_t e = 0; e < 64; e++)
		CU_ASSERT(out_f32(&o[1], e) == val(11, e) + val(12, e) + val(13, e));
	CU_ASSERT(ctr(DP_CTR_ROUNDS_GIVEN_UP) == 1);
	dp_down();
}

/* Worker w's RESULTs of round `round` among o[0..n), for chunks 0..7 of 64 elements:
 * got[w - 11][chunk] set for each, which must be the three workers' sum, bit-exact. */
static void
restart_results(const struct out *o, int n, uint32_t round, bool got[3][8])
{
	for (int i = 0; i < n; i++) {
		uint32_t c = o[i].p.chunk, w = o[i].fl.dst_ip & 0xff;

		if (o[i].p.type != WIRE_TYPE_RESULT || o[i].p.round != round)
			continue;
		CU_ASSERT_FATAL(c < 8 && w >= 11 && w <= 13 && o[i].p.contrib == 3);
		for (uint32_t e = 0; e < 64; e++)
			CU_ASSERT(out_f32(&o[i], e) ==
				  val(11, c * 64 + e) + val(12, c * 64 + e) + val(13, c * 64 + e));
		got[w - 11][c] = true;
	}
}

/* A job restarted far ahead, in a round that had gone past the slot pool: a pool of 4
 * slots, 8 chunks. In round 4 the three workers complete chunks 0 and 1, then 11 and 12
 * send chunks 2 to 5 (slots 0 and 1 move on to chunks 4 and 5) and the job is killed. The
 * restarted workers begin round `round` with chunk 0, which meets slot 0 held by another
 * chunk of round 4: the slot gives round 4 up for it all the same once every contributor is
 * past round 4, and the round completes, bit-exact, as the workers resend what has no
 * RESULT yet. */
static void
restart_far_ahead(uint32_t round)
{
	struct tdesc td = {0, 0, 0, {0}, 0, 8, 4, {0}};
	static struct out o[256];
	bool got[3][8] = {{false}};
	int sends = 0, missing = 24;

	CU_ASSERT_FATAL(dp_up(rte_get_main_lcore()) == 0);
	CU_ASSERT_FATAL(install(mk_table(18, 1, 1, TABLE_DTYPE_FP32, 512, 64, 3, W3, 1, &td),
				"install") == 0);
	for (uint32_t c = 0; c < 2; c++)
		for (uint16_t w = 11; w <= 13; w++)
			inject(contrib_f32(18, 1, 0, w, 4, c, 512, 64));
	for (uint32_t c = 2; c < 6; c++)
		for (uint16_t w = 11; w <= 12; w++)
			inject(contrib_f32(18, 1, 0, w, 4, c, 512, 64));
	poll_all();
	collect(o, 256);
	/* The restarted workers, each its whole window at once, then what lacks a RESULT
	 * again (RETX) until every one has every chunk's, or 16 times. */
	for (; missing > 0 && sends < 16; sends++) {
		for (uint16_t w = 11; w <= 13; w++)
			for (uint32_t c = 0; c < 8; c++)
				if (!got[w - 11][c])
					inject(contrib_f32_flags(18, 1, sends > 0 ? WIRE_F_RETX : 0,
								 0, w, round, c, 512, 64));
		poll_all();
		restart_results(o, collect(o, 256), round, got);
		missing = 0;
		for (int w = 0; w < 3; w++)
			for (int c = 0; c < 8; c++)
				missing += !got[w][c];
	}
	CHECK(missing == 0 && ctr(DP_CTR_ROUNDS_GIVEN_UP) >= 2,
	      "round %u: %d RESULTs missing after %d sends, %" PRIu64 " given up, no_slot %" PRIu64,
	      round, missing, sends, ctr(DP_CTR_ROUNDS_GIVEN_UP), drops(WIRE_REASON_NO_SLOT));
	dp_down();
}

static void
test_restarted_far_ahead(void)
{
	restart_far_ahead(4 + 100); /* a multiple of the pool ahead */
	restart_far_ahead(4 + 101); /* and not */
	restart_far_ahead(5);       /* the next round */
}

int
main(int argc, char **argv)
{
	CU_pSuite s = dp_fixture_init(argc, argv, "test_dp_failover");

	if (s == NULL)
		return 1;
	CU_add_test(s, "result recovery: an older epoch's RESULT completes the slot",
		    test_recovery_from_older_epoch);
	CU_add_test(s, "result recovery: no RESULT of another membership",
		    test_recovery_other_membership);
	CU_add_test(s, "prepare's membership: bad values refused, shown in stats",
		    test_membership_field);
	CU_add_test(s, "result recovery: a RESULT held nowhere here asked of the child",
		    test_recovery_asks_child);
	CU_add_test(s, "result recovery: answers from an older epoch, and once retired none",
		    test_recovery_answers);
	CU_add_test(s, "result recovery: a RESULT only a moved-on worker has, asked of it",
		    test_recovery_asks_worker);
	CU_add_test(s, "result recovery: a leaf asks its moved-on worker for its parent",
		    test_recovery_leaf_asks_worker);
	CU_add_test(s, "result recovery: a child opens a slot its worker has moved past",
		    test_recovery_worker_ahead_open);
	CU_add_test(s, "result recovery: a NACK_RESULT finds a slot its worker moved past",
		    test_recovery_worker_ahead_nack);
	CU_add_test(s, "result recovery: lingering epochs give way to a new one",
		    test_recovery_linger_room);
	CU_add_test(s, "result recovery: one requester cannot take another's share of the table",
		    test_recovery_share);
	CU_add_test(s, "a restarted job: a round every contributor left is given up",
		    test_restarted_job);
	CU_add_test(s, "a restarted job far ahead: a slot held by another chunk is given up",
		    test_restarted_far_ahead);
	return dp_fixture_run();
}
