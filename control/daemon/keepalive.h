/* SPDX-License-Identifier: BSD-3-Clause
 *
 * The leader's lease keepalive on a thread of its own (docs/DEPLOYMENT.md, "Replicas on
 * etcd"; elect.h). A replica that wins the election keeps its etcd lease alive every
 * lease/3 from this thread, with an etcd client of its own (etcd.h: one thread per
 * client), so that nothing the daemon's thread does (a gateway call blocked for
 * --timeout-ms, a slow plan) can delay a keepalive.
 *
 * The thread publishes in C11 atomics what the daemon's thread reads: valid_until (the
 * monotonic ms at which its last successful keepalive was sent, plus the lease; 0 once
 * the lease is gone), lost (etcd answered that the lease is gone: its TTL 0, or not
 * found), and counts of keepalives answered and failed. The text of the last failure is
 * kept under a mutex, the one lock here: a string cannot be published atomically, and it
 * is written only when a keepalive fails.
 *
 * keepalive_start() and keepalive_stop() are called on the daemon's thread; the loop in
 * keepalive.c runs on the keepalive thread. No DPDK.
 */
#ifndef GEOREDUCE_KEEPALIVE_H
#define GEOREDUCE_KEEPALIVE_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "etcd.h"

struct keepalive {
	/* Written by the keepalive thread while it runs, read by any thread. */
	_Atomic int64_t valid_until;   /* monotonic ms until which the lease is surely held */
	atomic_bool lost;              /* etcd answered that the lease is gone */
	atomic_bool failing;           /* the last keepalive got no answer from etcd */
	atomic_uint_fast64_t answered; /* keepalives etcd answered with the lease alive */
	atomic_uint_fast64_t failed;   /* keepalives etcd did not answer */
	/* The thread's, set by keepalive_start(). */
	struct etcd *etcd;
	int64_t lease;
	int lease_ms;
	atomic_bool stop; /* keepalive_stop() asks the thread to end */
	int wake;         /* an eventfd that keepalive_stop() writes; -1 */
	bool running;     /* the thread was started and not yet joined */
	pthread_t thread;
	pthread_mutex_t mu;       /* guards error */
	char error[ETCD_ERR_MAX]; /* the last failure's text */
};

/**
 * Start keeping lease (of lease_ms) alive on a new thread, with a client of its own made
 * from o (on the calling thread); valid_until as it is when the thread starts (the time
 * the lease was granted plus the lease). The counts are kept across starts. 0, or a
 * negative errno with err filled (nothing started).
 */
int keepalive_start(struct keepalive *k, const struct etcd_opts *o, int64_t lease, int lease_ms,
		    int64_t valid_until, char *err, size_t errlen);

/** Stop the thread and join it (a keepalive in flight ends first, within its etcd
 * timeout), and free its client. valid_until and lost keep their last values. Does
 * nothing if the thread is not running. */
void keepalive_stop(struct keepalive *k);

/** The text of the last failed keepalive into buf ("" if none). */
void keepalive_error(struct keepalive *k, char *buf, size_t len);

#endif
