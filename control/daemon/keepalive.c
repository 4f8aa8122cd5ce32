/* SPDX-License-Identifier: BSD-3-Clause
 *
 * The leader's lease keepalive thread (keepalive.h): its loop, which runs on the
 * keepalive thread, and its start and stop, which the daemon's thread calls. No DPDK.
 */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "clock.h"
#include "keepalive.h"

/* One keepalive: valid_until moved on, or lost set, or the failure noted. false once
 * the lease is gone. */
static bool
keepalive_once(struct keepalive *k)
{
	char err[ETCD_ERR_MAX];
	int64_t sent = clock_now_ms(), ttl = 0;
	int rc = etcd_lease_keepalive(k->etcd, k->lease, &ttl, err, sizeof(err));

	if ((rc == 0 && ttl <= 0) || rc == -ENOENT) {
		/* valid_until first: whoever sees lost sees the leadership ended too. */
		atomic_store(&k->valid_until, 0);
		atomic_store(&k->failing, false);
		atomic_store(&k->lost, true);
		return false;
	}
	if (rc == 0) {
		/* Sent at sent, so etcd renewed the lease after it: held until sent + lease. */
		atomic_store(&k->valid_until, sent + k->lease_ms);
		atomic_store(&k->failing, false);
		atomic_fetch_add(&k->answered, 1);
		return true;
	}
	pthread_mutex_lock(&k->mu);
	snprintf(k->error, sizeof(k->error), "%s", err);
	pthread_mutex_unlock(&k->mu);
	atomic_store(&k->failing, true);
	atomic_fetch_add(&k->failed, 1);
	return true;
}

/* The keepalive thread: a keepalive every lease/3 from the grant on (the next one at
 * once if one took longer), until stopped or the lease is gone. */
static void *
keepalive_run(void *arg)
{
	struct keepalive *k = arg;
	struct pollfd p = {.fd = k->wake, .events = POLLIN};
	int64_t next = atomic_load(&k->valid_until) - k->lease_ms + k->lease_ms / 3;

	while (!atomic_load(&k->stop)) {
		int64_t left = next - clock_now_ms();

		if (left > 0) {
			poll(&p, 1, (int)left); /* woken early by keepalive_stop() */
			continue;
		}
		next = clock_now_ms() + k->lease_ms / 3;
		if (!keepalive_once(k))
			break;
	}
	return NULL;
}

int
keepalive_start(struct keepalive *k, const struct etcd_opts *o, int64_t lease, int lease_ms,
		int64_t valid_until, char *err, size_t errlen)
{
	sigset_t all, old;
	int rc;

	if (k->running)
		return -EBUSY;
	/* Made here, on the caller's thread: etcd_new() sets libcurl up once per process. */
	k->etcd = etcd_new(o, err, errlen);
	if (k->etcd == NULL)
		return -EINVAL;
	k->wake = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (k->wake < 0) {
		rc = -errno;
		snprintf(err, errlen, "keepalive thread: eventfd: %s", strerror(-rc));
		etcd_free(k->etcd);
		k->etcd = NULL;
		return rc;
	}
	k->lease = lease;
	k->lease_ms = lease_ms;
	k->error[0] = '\0';
	atomic_store(&k->valid_until, valid_until);
	atomic_store(&k->lost, false);
	atomic_store(&k->failing, false);
	atomic_store(&k->stop, false);
	pthread_mutex_init(&k->mu, NULL);
	/* Signals stay with the daemon's thread (its signalfd): the thread blocks them all. */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	rc = -pthread_create(&k->thread, NULL, keepalive_run, k);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (rc != 0) {
		snprintf(err, errlen, "keepalive thread: %s", strerror(-rc));
		pthread_mutex_destroy(&k->mu);
		close(k->wake);
		k->wake = -1;
		etcd_free(k->etcd);
		k->etcd = NULL;
		return rc;
	}
	k->running = true;
	return 0;
}

void
keepalive_stop(struct keepalive *k)
{
	uint64_t one = 1;

	if (!k->running)
		return;
	atomic_store(&k->stop, true);
	/* Wakes the thread's wait at once (were the write to fail, it would still see stop
	 * within lease/3). */
	ssize_t n = write(k->wake, &one, sizeof(one));

	(void)n;
	pthread_join(k->thread, NULL);
	k->running = false;
	pthread_mutex_destroy(&k->mu);
	close(k->wake);
	k->wake = -1;
	etcd_free(k->etcd);
	k->etcd = NULL;
}

void
keepalive_error(struct keepalive *k, char *buf, size_t len)
{
	if (!k->running) { /* no thread to race with */
		snprintf(buf, len, "%s", k->error);
		return;
	}
	pthread_mutex_lock(&k->mu);
	snprintf(buf, len, "%s", k->error);
	pthread_mutex_unlock(&k->mu);
}
