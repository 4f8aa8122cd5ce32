/* SPDX-License-Identifier: BSD-3-Clause
 *
 * georeduce-worker --follow and --control: each worker moves its client to the epoch the
 * control process installs, from the table file it rewrites or from the control process
 * itself (a long poll). Between rounds (follow_table(), await_epoch()), and during a round
 * that has had no result for FOLLOW_STALL_S, through gr_options.cancel (table_changed(),
 * control_changed()). After a SIGHUP each worker reloads its TLS files (certificate, key,
 * CA, CRL) before it next asks the control process. Runs in each worker's thread.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

#include "clock.h"
#include "georeduce.h"
#include "georeduce_worker.h"

#define CONTROL_RETRY_S 0.5 /* a stalled round asks an unreachable control process again */

volatile sig_atomic_t worker_hups;

static int follow_epoch(struct worker *w, int wait_ms);

/* --control after a SIGHUP: the TLS files read again for the next connection to the
 * control process (gr_join_reload_tls()); the connection open keeps its session. A
 * file that does not load leaves the old ones in use. */
static void
reload_if_asked(struct worker *w)
{
	sig_atomic_t n = worker_hups;
	char err[GR_ERR_MAX];

	if (n == w->hups || w->join == NULL)
		return;
	w->hups = n;
	if (gr_join_reload_tls(w->join, err, sizeof(err)) == 0)
		fprintf(stderr, PROG ": worker %u: TLS reloaded: %s\n", w->id, err);
	else
		fprintf(stderr,
			PROG ": worker %u: TLS reload failed, the old files stay in use: %s\n",
			w->id, err);
}

/* --join-elastic: renew the membership once a second (gr_join_renew()), between rounds
 * and during one; a failure is said once, the next renewal tries again. */
static void
renew(struct worker *w)
{
	char err[GR_ERR_MAX];

	if (!w->o->elastic || w->join == NULL || gr_join_renew(w->join, err, sizeof(err)) == 0)
		return;
	if (!w->control_away)
		fprintf(stderr, PROG ": worker %u: renewing its membership: %s\n", w->id, err);
}

/* --follow: the epoch of the table file or the control process, now. */
int
follow_table(struct worker *w)
{
	return follow_epoch(w, 0);
}

/* --control: an epoch other than the client's, waiting up to wait_ms for it (a long poll
 * at the control process); the client moved to it. 1 if it did, 0 if none came, -1 after
 * a message in w->msg. */
static int
follow_control(struct worker *w, int wait_ms)
{
	char err[GR_ERR_MAX];
	struct gr_config c;
	int rc;

	reload_if_asked(w);
	renew(w);
	if (w->pending) { /* control_changed() saw it during a round */
		c = w->pending_cfg;
		w->pending = false;
		rc = 1;
	} else {
		rc = gr_join_wait(w->join, gr_client_config(w->client)->epoch, wait_ms, &c, err,
				  sizeof(err));
	}

	c.forget_results = w->o->forget_results;
	c.revision = (uint8_t)w->o->revision;
	if (rc == 1 && gr_client_reconfigure(w->client, &c, err, sizeof(err)) != 0)
		rc = -EINVAL;
	if (rc == -EPERM || rc == -ENOENT || rc == -EINVAL) {
		snprintf(w->msg, sizeof(w->msg), "worker %u: %s", w->id, err);
		return -1;
	}
	if (rc < 0) {
		/* The control process is away (restarting): the gateways keep the live epoch,
		 * so go on with it and ask again later. */
		if (!w->control_away)
			fprintf(stderr, PROG ": worker %u: %s; going on under epoch %u\n", w->id,
				err, gr_client_config(w->client)->epoch);
		w->control_away = true;
		w->away_until = clock_now_s() + CONTROL_RETRY_S;
		if (wait_ms > 0)
			usleep((useconds_t)(wait_ms < 200 ? wait_ms : 200) * 1000);
		return 0;
	}
	w->control_away = false;
	return rc;
}

/* --follow: if the table file changed since it was loaded, load it and move the client
 * to its epoch; with --control, ask the control process (waiting up to wait_ms). 1 if it
 * did, 0 if unchanged, -1 after a message in w->msg. */
static int
follow_epoch(struct worker *w, int wait_ms)
{
	struct stat st;
	struct gr_config c;
	char err[GR_ERR_MAX];

	if (w->o->control != NULL)
		return follow_control(w, wait_ms);
	if (stat(w->o->table, &st) != 0 ||
	    (st.st_ino == w->table_ino && st.st_mtim.tv_sec == w->table_mtime.tv_sec &&
	     st.st_mtim.tv_nsec == w->table_mtime.tv_nsec))
		return 0;
	if (gr_config_from_table(&c, w->o->table, w->id, err, sizeof(err)) != 0)
		goto fail;
	c.forget_results = w->o->forget_results;
	c.revision = (uint8_t)w->o->revision;
	if (c.epoch != gr_client_config(w->client)->epoch &&
	    gr_client_reconfigure(w->client, &c, err, sizeof(err)) != 0)
		goto fail;
	w->table_ino = st.st_ino;
	w->table_mtime = st.st_mtim;
	return 1;
fail:
	snprintf(w->msg, sizeof(w->msg), "worker %u: %s", w->id, err);
	return -1;
}

/* Whether the round has had no result for FOLLOW_STALL_S. A new epoch stops only such a
 * round: one still completing under its epoch finishes there (a re-plan for a link's
 * measured rate leaves the old trees working), since a round some workers complete
 * under the old epoch and others run again under the new one could never complete for
 * the latter. */
static bool
stalled(const struct worker *w)
{
	return clock_now_s() - w->prog_at >= FOLLOW_STALL_S;
}

/* gr_options.cancel under --follow: stop a stalled round as soon as the table file
 * changes (the control process installed a new epoch, for instance around a failed
 * gateway) instead of waiting for the round's timeout. A stat() every progress interval,
 * never per packet. */
int
table_changed(void *arg)
{
	const struct worker *w = arg;
	struct stat st;

	return stalled(w) && stat(w->o->table, &st) == 0 &&
	       (st.st_ino != w->table_ino || st.st_mtim.tv_sec != w->table_mtime.tv_sec ||
		st.st_mtim.tv_nsec != w->table_mtime.tv_nsec);
}

/* gr_options.cancel with --control: stop a stalled round as soon as the control process
 * has another epoch (asked every progress interval, without waiting), keeping it for
 * follow_control(). */
int
control_changed(void *arg)
{
	struct worker *w = arg;
	char err[GR_ERR_MAX];
	int rc;

	/* While the control process cannot be reached (it is restarting), a stalled round
	 * asks again once every CONTROL_RETRY_S, not at every progress call: a round begun
	 * while it was away follows the epoch it installs once back within about that, not
	 * at the round's timeout. */
	renew(w);
	if (!stalled(w))
		return 0;
	if (w->pending || (w->control_away && clock_now_s() < w->away_until))
		return w->pending;
	reload_if_asked(w);
	rc = gr_join_wait(w->join, gr_client_config(w->client)->epoch, 0, &w->pending_cfg, err,
			  sizeof(err));
	w->pending = rc == 1;
	w->control_away = rc < 0;
	if (rc < 0)
		w->away_until = clock_now_s() + CONTROL_RETRY_S;
	return w->pending;
}

/*
 * --follow after a round timed out under epoch `ran` (`same`: how often the round already
 * went on without a new epoch): whether to go on with it, under the table file's epoch.
 * A newer epoch (the control process re-planned around a failure) is taken at once.
 * Without one, the round goes on under the same epoch once, also at once: the table may
 * have changed between the round's start at another worker and at this one, so that the
 * other began it under the previous epoch. That worker times out about when this one
 * does and runs the round again under this epoch; waiting for yet another epoch instead
 * would leave it there alone for its whole timeout, and then the roles swap (no result at
 * all, round after round). After that, wait up to the round timeout for a new epoch.
 */
bool
await_epoch(struct worker *w, uint32_t ran, int same)
{
	double until = clock_now_s() + w->o->timeout_s;

	do {
		if (follow_table(w) < 0)
			return false;
		if (gr_client_config(w->client)->epoch != ran || same == 0)
			return true;
		if (w->o->control == NULL)
			usleep(50000);
		else if (follow_epoch(w, (int)((until - clock_now_s()) * 1000) + 1) < 0)
			return false;
	} while (clock_now_s() < until);
	return false;
}
