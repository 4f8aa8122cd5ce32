/* SPDX-License-Identifier: BSD-3-Clause
 *
 * The fixture the EAL tests of the dataplane share (tests/test_dp_*.c, one CUnit
 * executable per area, each linking tests/dp_fixture.c): EAL and the pool of the test's
 * own frames for the whole run, a fresh dataplane on a fresh net_ring port per test,
 * tables built in C, crafted frames in and the frames the dataplane sent decoded, the
 * control handler called as the socket would.
 *
 * Everything runs on the EAL main lcore, which plays the worker lcore (dp_worker_poll)
 * unless a test launches the real worker loop on another. No hugepages, no NIC.
 */
#ifndef GEOREDUCE_DP_FIXTURE_H
#define GEOREDUCE_DP_FIXTURE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <CUnit/CUnit.h>
#include <jansson.h>
#include <rte_ether.h>
#include <rte_mbuf.h>
#include <rte_mempool.h>
#include <rte_ring.h>

#include "dp.h"
#include "table.h"
#include "wire.h"

#define GW_IP 0x0a000001u              /* 10.0.0.1: the dataplane's port */
#define PEER_IP(n) (0x0a000000u | (n)) /* 10.0.0.n */
#define WORKER_PORT 5000

/** The dataplane under test (dp_up() .. dp_down()). */
extern struct dp dp;
/** The frames the dataplane sent (collect() takes them). */
extern struct rte_ring *tx_ring;
/** The pool of the test's own frames. */
extern struct rte_mempool *tpool;
/** The MAC address of the dataplane's port. */
extern struct rte_ether_addr gw_mac;

/* Options of the next dp_up(); a test that sets one sets it back once dp_up() returned. */
extern bool jumbo;                /* MTU 9000 */
extern struct dp_fault faults[2]; /* these faults on port 0, by enum dp_dir */
extern unsigned int n_routes;     /* these routes */
extern struct dp_route routes[4];
extern const char *crypto_dev; /* this --crypto */
extern bool crypto_ops;        /* --crypto-ops */
extern uint32_t linger_ms;     /* this --linger-ms */
extern uint32_t nat_ipv4;      /* this --nat-addr 0:IP (0: none) */
extern uint64_t fault_seed;    /* this --fault-seed */
extern uint8_t idle_mode;      /* this --idle (enum dp_idle_mode; intr by default) */

/** Three local workers, 11, 12 and 13. */
extern const uint16_t W3[3];

/* Tables: one gateway (id gw_id at 10.0.0.1) with the given trees. */
struct tdesc {
	uint16_t id;
	int parent; /* parent gateway id, 0: root */
	int n_children;
	uint16_t children[4]; /* child gateway ids; at 10.0.0.<id> */
	uint32_t first, count;
	uint32_t slots;
	uint16_t below[4]; /* without sets: the workers below each child (the
					 * contrib of its partial sums); with sets, counted
					 * from the struct tbelow */
};

/* With contributor sets, the workers below the children of a tree entry: ids ascending per
 * child, id[k] under children[child[k]]. */
struct tbelow {
	int n;
	uint16_t id[8];
	uint8_t child[8];
};

/** A georeduce packet to craft (mk_pkt()). */
struct pkt {
	enum wire_type type;
	uint8_t flags;
	uint32_t job, epoch;
	uint16_t tree, sender, origin, contrib;
	uint32_t round, chunk;
	enum wire_dtype dtype;
	uint16_t count;
	uint32_t src_ip;
};

/* While on, mk_pkt_set() sends from ip:sport (whatever the sender id) to dport (0: the
 * chunk's port). */
struct dp_spoof {
	bool on;
	uint32_t ip;
	uint16_t sport, dport;
};
extern struct dp_spoof spoof;

/* A frame the dataplane sent, decoded. */
struct out {
	struct wire_flow fl;
	struct wire_pkt p;
	uint8_t frame[WIRE_MTU_MAX + 64];
	size_t len;
};

/** EAL for this executable (its own --file-prefix, name_pid), the test pool and a CUnit
 * suite `name` to add the tests to; NULL on failure. */
CU_pSuite dp_fixture_init(int argc, char **argv, const char *name);
/** Run the registered tests, clean up EAL; the number of failures (at most 255). */
int dp_fixture_run(void);

/** A fresh dataplane on a fresh ring port; lcore plays the worker. 0, or -1. */
int dp_up(unsigned int lcore);
void dp_down(void);
/** Poll the worker lcore until it has nothing left to do. */
void poll_all(void);
/** The worker lcore's drops for reason r, its counter c. */
uint64_t drops(enum wire_reason r);
uint64_t ctr(enum dp_ctr c);

/** A table of a job with contributor sets of one block (bl: NULL, none), and without. */
struct table *
mk_table_sets(uint32_t job, uint32_t epoch, uint16_t gw_id, enum table_dtype dt, uint64_t elements,
	      uint32_t chunk_elements, int n_workers, const uint16_t *workers, int n_trees,
	      const struct tdesc *td, const struct tbelow *bl);
struct table *mk_table(uint32_t job, uint32_t epoch, uint16_t gw_id, enum table_dtype dt,
		       uint64_t elements, uint32_t chunk_elements, int n_workers,
		       const uint16_t *workers, int n_trees, const struct tdesc *td);
/* A table of job `job`, epoch 1, gateway 1 at 10.0.0.1, fp32 in chunks of 64 elements, with
 * n_streams multicast streams (zeroed: the caller fills them) and no tree. */
struct table *mk_stream_table(uint32_t job, uint64_t elements, int n_streams);
/** Install tb (and free it) through the control handler with op; returns errno. */
int install(struct table *tb, const char *op);
/** The same with `prepare`'s `membership` (0: none). */
int install_membership(struct table *tb, const char *op, uint32_t membership);

/** Room for len more bytes at the end of m. */
void *must_append(struct rte_mbuf *m, size_t len);
/** A frame of p to the gateway with contributor set cset (k blocks) and payload pl. */
struct rte_mbuf *
mk_pkt_set(const struct pkt *p, unsigned int k, const uint8_t *cset, const void *pl);
struct rte_mbuf *mk_pkt(const struct pkt *p, const void *pl);
/** Hand m to the dataplane's port. */
void inject(struct rte_mbuf *m);
/** Take every frame sent; returns how many (up to max), decoded into o[]. */
int collect(struct out *o, int max);
/** Element i of the fp32 payload of o. */
float out_f32(const struct out *o, uint32_t i);

/** Worker w's value for element e of the tensor. */
float val(uint16_t w, uint64_t e);
/** The elements of chunk c. */
uint16_t chunk_len(uint64_t elements, uint32_t ce, uint32_t c);
/** CONTRIB of worker w (at 10.0.0.w) for one chunk of an fp32 tensor, with flags; without;
 * with RETX (epoch 1, tree 0). */
struct rte_mbuf *
contrib_f32_flags(uint32_t job, uint32_t epoch, uint8_t flags, uint16_t tree, uint16_t w,
		  uint32_t round, uint32_t chunk, uint64_t elements, uint32_t ce);
struct rte_mbuf *contrib_f32(uint32_t job, uint32_t epoch, uint16_t tree, uint16_t w,
			     uint32_t round, uint32_t chunk, uint64_t elements, uint32_t ce);
struct rte_mbuf *contrib_f32_retx(uint32_t job, uint16_t w, uint32_t round, uint32_t chunk,
				  uint64_t elements, uint32_t ce);

/** A control request (JSON text) through the handler: its reply (caller frees), or its
 * errno (0: ok). */
json_t *call(const char *text);
int call_errno(const char *text);

/** The first job's entry in `links` of stats st for (kind, its id n, dir, gateway id). */
json_t *link_entry(json_t *st, const char *kind, int n, const char *dir, int id);
/** Counter key of the first job's link of (tree, dir, gateway id); -1 if none. */
json_int_t link_ctr(int tree, const char *dir, int id, const char *key);

#endif
