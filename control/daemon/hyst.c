/* SPDX-License-Identifier: BSD-3-Clause
 *
 * Re-planning hysteresis and budget (hyst.h): pure decisions over the times given. On the
 * daemon's thread and in tests. No DPDK.
 */
#include <stddef.h>

#include "hyst.h"

int
hyst_recent(const struct hyst_job *h, int64_t now)
{
	int k = 0;

	for (int i = 0; i < h->n; i++) {
		int64_t t = h->at[(h->head - 1 - i + HYST_WINDOW_MAX) % HYST_WINDOW_MAX];

		if (now - t >= HYST_WINDOW_MS)
			break; /* older ones are older still */
		k++;
	}
	return k;
}

void
hyst_record(struct hyst_job *h, int64_t now)
{
	h->at[h->head] = now;
	h->head = (h->head + 1) % HYST_WINDOW_MAX;
	if (h->n < HYST_WINDOW_MAX)
		h->n++;
}

/* When the job's re-plans of the last minute fall below `budget` again. */
static int64_t
budget_free_at(const struct hyst_job *h, int budget)
{
	/* The budget-th newest re-plan leaves the window then. */
	return h->at[(h->head - budget + HYST_WINDOW_MAX) % HYST_WINDOW_MAX] + HYST_WINDOW_MS;
}

enum hyst_verdict
hyst_gate(const struct hyst_cfg *c, const struct hyst_job *h, bool prompt, int64_t live_since,
	  int64_t now, int64_t *due)
{
	int budget = prompt ? c->failure_replans_per_min : c->replans_per_min;
	int64_t at = now;

	if (!prompt && live_since >= 0 && now - live_since < c->min_epoch_ms)
		at = live_since + c->min_epoch_ms;
	if (hyst_recent(h, now) >= budget) {
		int64_t free_at = budget_free_at(h, budget);

		at = free_at > at ? free_at : at;
	}
	*due = at;
	return at > now ? HYST_WAIT : HYST_NOW;
}

bool
hyst_short_step(const struct hyst_cfg *c, struct hyst_short *s, bool is_short, int64_t now)
{
	bool counts;

	if (s->samples == 0) {
		if (!is_short)
			return false;
		s->since = now;
		s->n_short = 0;
	}
	s->samples++;
	s->n_short += is_short;
	if (s->samples < c->short_samples || now - s->since < c->short_ms)
		return false;
	counts = (int64_t)s->n_short * HYST_SHORT_SHARE_DEN >=
		 (int64_t)s->samples * HYST_SHORT_SHARE_NUM;
	s->samples = 0;
	return counts;
}

enum hyst_cap
hyst_cap_step(double in_force, double found, double same)
{
	if (in_force <= 0)
		return HYST_CAP_NEW;
	if (found <= in_force * (1 - same))
		return HYST_CAP_LOWER;
	return found < in_force * (1 + same) ? HYST_CAP_SAME : HYST_CAP_NEW;
}

int64_t
hyst_idle_after(const struct hyst_idle *h, int64_t idle_ms)
{
	return h->after_ms > 0 ? h->after_ms : idle_ms;
}

bool
hyst_idle_step(struct hyst_idle *h, bool was, int64_t active_at, int64_t now, int64_t idle_ms)
{
	int64_t after = hyst_idle_after(h, idle_ms);
	bool run = active_at > 0 && now - active_at < after;

	if (was && !run) {
		h->idle_at = now;
	} else if (!was && run && h->idle_at > 0) {
		int64_t most = idle_ms * HYST_IDLE_MAX_MUL;

		if (active_at - h->idle_at < after)
			h->after_ms = after * 2 < most ? after * 2 : most;
		else
			h->after_ms = idle_ms;
	}
	return run;
}

void
hyst_batch_note(struct hyst_batch *b, bool join, int64_t now)
{
	if (b->joins + b->leaves == 0)
		b->first = now;
	if (join)
		b->joins++;
	else
		b->leaves++;
}

bool
hyst_batch_due(struct hyst_batch *b, int64_t window_ms, int64_t now, int *joins, int *leaves,
	       int64_t *due)
{
	if (b->joins + b->leaves == 0) {
		*due = -1;
		return false;
	}
	if (now - b->first < window_ms) {
		*due = b->first + window_ms;
		return false;
	}
	*joins = b->joins;
	*leaves = b->leaves;
	b->joins = b->leaves = 0;
	*due = -1;
	return true;
}

bool
hyst_member_expired(int64_t seen, int64_t timeout_ms, int64_t now)
{
	return now - seen >= timeout_ms;
}

const char *
hyst_cfg_check(const struct hyst_cfg *c)
{
	if (c->min_epoch_ms < 0 || c->short_ms < 0)
		return "times must not be negative";
	if (c->short_samples < 1)
		return "a shortfall needs at least one measurement";
	if (c->replans_per_min < 1 || c->replans_per_min > HYST_WINDOW_MAX)
		return "re-plans per minute: 1 to 120";
	if (c->failure_replans_per_min < c->replans_per_min ||
	    c->failure_replans_per_min > HYST_WINDOW_MAX)
		return "failure re-plans per minute: from the re-plans per minute to 120";
	return NULL;
}
