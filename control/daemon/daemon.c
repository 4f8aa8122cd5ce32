/* SPDX-License-Identifier: BSD-3-Clause
 *
 * The georeduce-control daemon (daemon.h): setting up, the poll loop of its one thread
 * and tearing down. What happens in the loop is in health.c (heartbeats, gateways and links up or down), rates.c
 * (measured rates and capacities), epochs.c (planning and installing epochs), api.c (its
 * own control socket), metrics.c (Prometheus) and tls_reload.c (SIGHUP: the TLS files); all of them log and mark jobs for a new
 * epoch through log.c, which calls none of them. One thread, the caller's, but for the
 * lease keepalives of a replica that leads on etcd (elect.c, keepalive.c). No DPDK.
 */
#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <time.h>
#include <unistd.h>

#include "api.h"
#include "clock.h"
#include "daemon.h"
#include "daemon_internal.h"
#include "elect.h"
#include "epochs.h"
#include "health.h"
#include "elastic.h"
#include "jobs.h"
#include "metrics.h"
#include "promsrv.h"
#include "rates.h"
#include "shares.h"
#include "tls_reload.h"

/* ---- the poll loop ------------------------------------------------------------------- */

/* Wait for clients or a signal until deadline (monotonic ms), serving what comes. */
static void
wait_until(struct dmn *m, int64_t deadline)
{
	int64_t left;

	waiters_service(m); /* epochs installed since the last round */
	while (!m->stop && (left = deadline - clock_now_ms()) > 0) {
		int64_t w = waiters_next_ms(m);
		int ready;

		if (w >= 0 && w < left)
			left = w;
		if ((w = elastic_next_ms(m)) >= 0 && w < left)
			left = w;
		if (m->msrv != NULL && (w = promsrv_timeout_ms(m->msrv)) >= 0 && w < left)
			left = w;
		if ((w = elect_next_ms(m)) >= 0 && w < left)
			left = w;
		/* With --metrics, m->wfd: the signalfd or the endpoint is readable. */
		ready = ctlsrv_poll(m->srv, (int)left, m->msrv != NULL ? m->wfd : m->sfd);
		if (m->msrv != NULL)
			promsrv_run(m->msrv);
		if (ready == 1) {
			struct signalfd_siginfo si;
			ssize_t n = read(m->sfd, &si, sizeof(si));

			if (n == (ssize_t)sizeof(si) && si.ssi_signo == SIGHUP) {
				tls_reload(m, NULL, 0); /* and go on serving */
			} else if (n == (ssize_t)sizeof(si)) {
				control_log("stopping on %s", strsignal((int)si.ssi_signo));
				m->stop = true;
				return;
			} else if (m->msrv == NULL) { /* readable and nothing to read: stop */
				m->stop = true;
				return;
			}
		}
		bool led = elect_leading(m);

		elect_service(m); /* deposed, or look for a leader */
		if (!led && elect_leading(m))
			return; /* just won: heartbeat at once */
		if (elect_leading(m)) {
			elastic_service(m); /* joins and leaves, renewals missed */
			install_due(m);     /* a replan request, a batch of joins and leaves */
		}
		waiters_service(m);
	}
}

/* ---- start and stop ------------------------------------------------------------------ */

static int
setup(struct dmn *m, sigset_t *old)
{
	sigset_t set;
	int n = m->d->n_gateways, rc;

	m->gws = calloc((size_t)n, sizeof(*m->gws));
	m->jobs = calloc(DEPLOY_JOBS_MAX, sizeof(*m->jobs)); /* with room for the API's */
	m->link = calloc((size_t)m->d->topo->n_links + 1, sizeof(*m->link));
	m->lr = calloc(2 * (size_t)m->d->topo->n_links + 1, sizeof(*m->lr));
	if (m->gws == NULL || m->jobs == NULL || m->link == NULL || m->lr == NULL) {
		control_log("cannot start: out of memory");
		return -ENOMEM;
	}
	for (int v = 0; v < n; v++) {
		m->gws[v].live = calloc(DEPLOY_JOBS_MAX, sizeof(*m->gws[v].live));
		if (m->gws[v].live == NULL) {
			control_log("cannot start: out of memory");
			return -ENOMEM;
		}
		install_gw_init(&m->gws[v].conn, gw_name(m, v), m->d->gateways[v].socket);
		m->gws[v].last_ok = -1;
		m->gws[v].sample_at = -1;
		m->d->gateways[v].revision = 0; /* until it answers `version` (health.c) */
		m->gws[v].rx_gbps = m->gws[v].tx_gbps = -1;
		m->gws[v].drops_per_s = -1;
	}
	for (int l = 0; l < m->d->topo->n_links; l++) {
		m->link[l].up = true;
		lrate_forget(m, l); /* nothing measured yet */
	}
	for (int i = 0; i < m->d->n_jobs; i++)
		m->jobs[i].next_epoch = 1;
	/* With --etcd, the jobs are read from etcd by the replica that wins (elect.c). */
	rc = elect_setup(m);
	if (rc == 0 && m->el == NULL)
		rc = jobs_load(m);
	if (rc != 0)
		return rc;
	mark_all_dirty(m, CAUSE_START, "start");
	sigemptyset(&set);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGHUP); /* the TLS files read again (tls_reload.c) */
	if (sigprocmask(SIG_BLOCK, &set, old) != 0 ||
	    (m->sfd = signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC)) < 0) {
		rc = -errno;
		control_log("cannot start: signals: %s", strerror(-rc));
		return rc;
	}
	rc = api_setup(m);
	return rc == 0 ? metrics_setup(m) : rc;
}

int
daemon_run(struct deploy *d, const struct daemon_opts *o)
{
	struct dmn m = {.d = d, .o = o, .sfd = -1, .wfd = -1, .started = clock_now_ms()};
	sigset_t old;
	int rc;

	sigprocmask(SIG_BLOCK, NULL, &old);
	rc = setup(&m, &old);

	if (rc == 0) {
		control_log("started: deployment %s, topology %s (%d sites), %d job%s, heartbeat "
			    "%d ms, failed after %d missed, socket %s",
			    d->path, d->topo->name, d->topo->n_nodes, d->n_jobs,
			    d->n_jobs == 1 ? "" : "s", o->heartbeat_ms, o->fail_after, o->socket);
		while (!m.stop) {
			int64_t now = clock_now_ms(), next = now + o->heartbeat_ms;

			elect_service(&m);
			if (!elect_leading(&m)) { /* a follower changes nothing */
				wait_until(&m, next);
				continue;
			}
			heartbeat_all(&m);
			/* How late this round's samples are against when it was due. */
			m.late_ms = lw_late(m.late_ms, clock_now_ms() - (m.due > 0 ? m.due : now),
					    o->heartbeat_ms);
			m.due = next;
			jobs_service(&m);
			elastic_service(&m);
			m.heartbeats++;
			links_update(&m);
			rates_update(&m);
			tree_rates_update(&m);
			shares_activity(&m, clock_now_ms());
			for (int i = 0; i < d->n_jobs; i++)
				if (m.jobs[i].retry_in > 0 && --m.jobs[i].retry_in == 0)
					m.jobs[i].dirty = true;
			install_due(&m);
			wait_until(&m, next);
		}
		control_log("stopped; the dataplanes keep their live epochs");
	}
	if (rc == 0 && m.el != NULL && m.el->deposed)
		rc = -ESTALE;
	elect_free(&m);
	ctlsrv_free(m.srv);
	promsrv_free(m.msrv);
	if (m.wfd >= 0)
		close(m.wfd);
	free(m.waiters);
	if (m.sfd >= 0)
		close(m.sfd);
	for (int v = 0; m.gws != NULL && v < d->n_gateways; v++) {
		install_gw_close(&m.gws[v].conn);
		for (int i = 0; m.gws[v].live != NULL && i < d->n_jobs; i++)
			json_decref(m.gws[v].live[i]);
		free(m.gws[v].live);
		json_decref(m.gws[v].peers);
		json_decref(m.gws[v].jobs);
		json_decref(m.gws[v].drops);
	}
	free(m.link);
	free(m.lr);
	jobs_free(&m);
	for (int i = 0; m.jobs != NULL && i < d->n_jobs; i++) {
		jobplan_free(m.jobs[i].live);
		free(m.jobs[i].rates);
		shares_free(&m.jobs[i]);
		elastic_free(&m.jobs[i]);
	}
	free(m.jobs);
	free(m.gws);
	ctltls_ctx_free(m.tls_client);
	ctltls_ctx_free(m.tls_server);
	sigprocmask(SIG_SETMASK, &old, NULL);
	return rc;
}
