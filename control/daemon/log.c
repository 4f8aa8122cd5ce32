/* SPDX-License-Identifier: BSD-3-Clause
 *
 * What every part of georeduce-control's loop calls and that calls none of them: the
 * daemon's log line (control_log(), daemon.h) and the mark that sends every job for a new
 * epoch with its cause and reason (mark_all_dirty(), daemon_internal.h), and the causes'
 * names and classes. The daemon's one thread.
 */
#include <stdarg.h>
#include <stdio.h>
#include <time.h>

#include "daemon.h"
#include "daemon_internal.h"

const char *const cause_names[CAUSE_COUNT] = {
	[CAUSE_START] = "start",
	[CAUSE_GATEWAY_DOWN] = "gateway_down",
	[CAUSE_GATEWAY_UP] = "gateway_up",
	[CAUSE_GATEWAY_NO_ANSWER] = "gateway_no_answer",
	[CAUSE_LINK_DOWN] = "link_down",
	[CAUSE_LINK_UP] = "link_up",
	[CAUSE_LINK_SHORT] = "link_short",
	[CAUSE_LINK_RESTORED] = "link_capacity_restored",
	[CAUSE_REJECTED] = "retry_after_rejection",
	[CAUSE_ACTIVATION] = "activation_failed",
	[CAUSE_REQUESTED] = "requested",
	[CAUSE_SHARES] = "shares_changed",
	[CAUSE_MEMBERSHIP] = "membership",
};

bool
cause_prompt(enum cause c)
{
	/* Measured shortfalls and capacities that expire, gateways and links back: the
	 * live epoch still runs, so they wait for the hysteresis (hyst.h). */
	return c != CAUSE_LINK_SHORT && c != CAUSE_LINK_RESTORED && c != CAUSE_GATEWAY_UP &&
	       c != CAUSE_LINK_UP && c != CAUSE_SHARES;
}

bool
cause_may_keep(enum cause c)
{
	return c == CAUSE_GATEWAY_DOWN || c == CAUSE_GATEWAY_NO_ANSWER || c == CAUSE_LINK_DOWN ||
	       c == CAUSE_LINK_UP || c == CAUSE_LINK_SHORT || c == CAUSE_LINK_RESTORED ||
	       c == CAUSE_SHARES;
}

void
control_log(const char *fmt, ...)
{
	char stamp[32], msg[2048];
	struct timespec ts;
	struct tm tm;
	va_list ap;

	clock_gettime(CLOCK_REALTIME, &ts);
	gmtime_r(&ts.tv_sec, &tm);
	strftime(stamp, sizeof(stamp), "%Y-%m-%dT%H:%M:%S", &tm);
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	for (char *c = msg; *c != '\0'; c++)
		if ((unsigned char)*c < 0x20)
			*c = '?';
	fprintf(stderr, "%s.%03ldZ " PROG ": %s\n", stamp, ts.tv_nsec / 1000000, msg);
	fflush(stderr);
}

void
mark_all_dirty(struct dmn *m, enum cause cause, const char *fmt, ...)
{
	char why[REASON_MAX];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(why, sizeof(why), fmt, ap);
	va_end(ap);
	m->shares_stale = true;
	for (int i = 0; i < m->d->n_jobs; i++) {
		/* A failure's re-plan that is due is not held back by a measurement's that
		 * comes after it: it keeps its cause (and the reason that goes with it). */
		if (m->jobs[i].dirty && cause_prompt(m->jobs[i].cause) && !cause_prompt(cause))
			continue;
		m->jobs[i].dirty = true;
		m->jobs[i].retry_in = 0;
		m->jobs[i].cause = cause;
		snprintf(m->jobs[i].reason, sizeof(m->jobs[i].reason), "%s", why);
	}
}
