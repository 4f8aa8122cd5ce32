/* SPDX-License-Identifier: BSD-3-Clause
 *
 * Re-planning hysteresis and budget (docs/DEPLOYMENT.md, "Re-planning without churn"):
 * when a job that is marked for a new epoch may be planned, and when a link direction's
 * measured shortfall has lasted long enough to count. Pure decisions on the times and
 * samples they are given (monotonic ms): no clock, no I/O, so that tests can feed them
 * sequences. On the daemon's thread (daemon_internal.h) and in tests.
 */
#ifndef GEOREDUCE_HYST_H
#define GEOREDUCE_HYST_H

#include <stdbool.h>
#include <stdint.h>

/** The re-plans of the last minute a job remembers: the largest budget allowed. */
#define HYST_WINDOW_MAX 120
/** The window of the budgets, ms. */
#define HYST_WINDOW_MS 60000

/** Defaults of the daemon's options (georeduce-control run, docs/DEPLOYMENT.md). */
#define HYST_MIN_EPOCH_MS_DEFAULT 10000
#define HYST_SHORT_MS_DEFAULT 5000
#define HYST_SHORT_SAMPLES_DEFAULT 3
#define HYST_REPLANS_PER_MIN_DEFAULT 6
#define HYST_FAILURE_REPLANS_PER_MIN_DEFAULT 30

struct hyst_cfg {
	int64_t min_epoch_ms;        /* a live epoch is replaced for a measurement no sooner */
	int64_t short_ms;            /* a shortfall is judged over windows this long ... */
	int short_samples;           /* ... and of at least this many samples */
	int replans_per_min;         /* re-plans of a job in a minute, after which measurements
				   * (and returns) wait; 1..HYST_WINDOW_MAX */
	int failure_replans_per_min; /* the same for failures, >= replans_per_min */
};

/** A job's recent re-plans. Zero-initialised: none. */
struct hyst_job {
	int64_t at[HYST_WINDOW_MAX]; /* when, a ring; the newest at (head - 1) */
	int head, n;
};

enum hyst_verdict {
	HYST_NOW,  /* plan it now */
	HYST_WAIT, /* not yet: *due says when to ask again */
};

/**
 * May a job marked for a new epoch be planned at `now`? `prompt`: its cause is a failure
 * (a gateway or link down, a gateway that did not answer, an activation that failed, a
 * rejected table's retry, the start, an operator's request): it waits only for the failure
 * budget (failure_replans_per_min re-plans of the job in the last minute). Otherwise (a
 * measured shortfall, a measured capacity expired, a gateway or link back) it waits until
 * the live epoch has been live for min_epoch_ms (`live_since`, < 0: no live epoch, no
 * wait) and for the budget of replans_per_min. On HYST_WAIT, *due is the earliest time
 * the answer can change.
 */
enum hyst_verdict hyst_gate(const struct hyst_cfg *c, const struct hyst_job *h, bool prompt,
			    int64_t live_since, int64_t now, int64_t *due);

/** Count a re-plan of the job at `now` (whether or not it gave a new epoch). */
void hyst_record(struct hyst_job *h, int64_t now);

/** The job's re-plans in the minute up to `now`. */
int hyst_recent(const struct hyst_job *h, int64_t now);

/**
 * A shortfall counts when at least HYST_SHORT_SHARE_NUM / HYST_SHORT_SHARE_DEN of a
 * window's measurements are short: rounds of a job leave their link idle for a moment
 * between them, and a heartbeat that falls there finds no queue.
 */
#define HYST_SHORT_SHARE_NUM 2
#define HYST_SHORT_SHARE_DEN 3

/** One link direction's window of measurements. Zero-initialised: none open. */
struct hyst_short {
	int samples;   /* measurements in the window; 0: no window open */
	int n_short;   /* of them short */
	int64_t since; /* the window's first measurement, a short one */
};

/**
 * Feed one measurement of a link direction: `is_short` whether it carried less than
 * planned behind a standing queue (rates.c decides). A short measurement opens a window
 * when none is open; the window closes at the first measurement that makes it span
 * short_ms and hold short_samples measurements. True if at least the share above of them
 * were short: the shortfall counts. Either way the next short measurement opens the next
 * window, so a shortfall that starts inside a window that does not count is found by the
 * next one, within twice short_ms.
 */
bool hyst_short_step(const struct hyst_cfg *c, struct hyst_short *s, bool is_short, int64_t now);

/** What a link direction found short does to the capacity plans use for it. */
enum hyst_cap {
	HYST_CAP_NEW,   /* plan with what it was found to carry: a new epoch */
	HYST_CAP_SAME,  /* about the capacity in force: it holds longer, no new epoch */
	HYST_CAP_LOWER, /* below the measured capacity in force: kept as it is, to lapse */
};

/**
 * A link direction found short carried `found` Gbit/s while plans use `in_force` (0: the
 * topology's capacity). Within the share `same` of a measured capacity in force: SAME.
 * Lower than that by more: LOWER, not NEW. The link was planned at what it was measured
 * to deliver and delivers less: its senders (windows sized for a shorter round trip) or
 * its gateways (short of CPU) fall short, not the link, whose capacity does not follow
 * the plan; planning lower on that would compound, epoch after epoch. Otherwise NEW.
 */
enum hyst_cap hyst_cap_step(double in_force, double found, double same);

/** Defaults of the elastic membership's knobs (georeduce-control run, docs/CONTROL.md). */
#define HYST_BATCH_MS_DEFAULT 500
#define HYST_MEMBER_TIMEOUT_MS_DEFAULT 5000
/** A job idle this long stops counting in the other jobs' shares of the links (shares.h). */
#define HYST_IDLE_MS_DEFAULT 10000
/** The longest a job is given before it goes idle, in --idle-ms (hyst_idle_step()). */
#define HYST_IDLE_MAX_MUL 8

/** When a job goes idle (docs/CONTROL.md, "Which jobs run"). Zero-initialised: never. */
struct hyst_idle {
	int64_t after_ms; /* the time without traffic that makes it idle; 0: --idle-ms */
	int64_t idle_at;  /* when it last went idle; 0: never */
};

/**
 * Whether a job runs at `now`: it ran (`was`) or not, its last sign of traffic was at
 * `active_at` (0: none yet). It runs until none has been seen for its time, at first
 * idle_ms. Going idle and running again each change the shares of the other jobs, and
 * re-plan them, so a job whose rounds come a little more than idle_ms apart would re-plan
 * them twice a round: a job that runs again sooner after going idle than its time is
 * given twice that time from then on (up to HYST_IDLE_MAX_MUL idle_ms); one that was
 * idle for at least its time is given idle_ms again.
 */
bool hyst_idle_step(struct hyst_idle *h, bool was, int64_t active_at, int64_t now, int64_t idle_ms);

/** The time without traffic that makes the job of h idle, ms. */
int64_t hyst_idle_after(const struct hyst_idle *h, int64_t idle_ms);

/** An elastic job's membership changes not yet planned. Zero-initialised: none. */
struct hyst_batch {
	int64_t first; /* when the first of them came */
	int joins, leaves;
};

/** Count a join (or a leave) of the job at `now`: the first change opens the batch. */
void hyst_batch_note(struct hyst_batch *b, bool join, int64_t now);

/**
 * Whether the job's batch of membership changes is to be planned at `now`: once
 * `window_ms` have passed since its first change, so that every change of that window
 * makes one epoch. True hands over the counts in *joins, *leaves and empties the batch;
 * false leaves *due the time to ask again (-1: nothing pending).
 */
bool hyst_batch_due(struct hyst_batch *b, int64_t window_ms, int64_t now, int *joins, int *leaves,
		    int64_t *due);

/** Whether a joined worker last heard from at `seen` has missed its renewals at `now`. */
bool hyst_member_expired(int64_t seen, int64_t timeout_ms, int64_t now);

/** NULL if c is valid, else why not (for an option's error). */
const char *hyst_cfg_check(const struct hyst_cfg *c);

#endif
