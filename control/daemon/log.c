/* SPDX-License-Identifier: BSD-3-Clause
 *
 * What every part of georeduce-control's loop calls and that calls none of them: the
 * daemon's log line (control_log(), daemon.h) and the mark that sends every job for a new
 * epoch with its cause and reason (mark_all_dirty(), daemon_internal.h). The daemon's one
 * thread.
 */
#include <stdarg.h>
#include <stdio.h>
#include <time.h>

#include "daemon.h"
#include "daemon_internal.h"

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
	for (int i = 0; i < m->d->n_jobs; i++) {
		m->jobs[i].dirty = true;
		m->jobs[i].retry_in = 0;
		m->jobs[i].cause = cause;
		snprintf(m->jobs[i].reason, sizeof(m->jobs[i].reason), "%s", why);
	}
}
