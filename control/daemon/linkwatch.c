/* SPDX-License-Identifier: BSD-3-Clause
 *
 * Links down and up again from the probe reports of each heartbeat (linkwatch.h). On the
 * daemon's thread and in tests. No clock, no I/O.
 */
#include <math.h>

#include "linkwatch.h"

int64_t
lw_limit_ms(const struct lw_cfg *c, const struct lw_probe *p, int64_t late_ms)
{
	/* A queue on the link delays the replies as it does the data: twice the last round
	 * trip seen. A starved machine delays them too: the daemon's own lateness and the
	 * time its gateways took to answer a ping. */
	return (int64_t)c->fail_after * c->heartbeat_ms + 2 * (int64_t)fmax(p->rtt_ms, 0) +
	       (late_ms > 0 ? late_ms : 0) + 2 * (int64_t)fmax(p->ping_ms, 0);
}

/* Is direction p quiet: fresh, silent for longer than allowed, and its prober sent at
 * least --fail-after PROBEs meanwhile (a dataplane whose control thread was busy or
 * starved sent none: its silence says nothing of the link)? */
static bool
quiet(const struct lw_cfg *c, const struct lw_probe *p, int64_t late_ms)
{
	return p->fresh && p->since_ms > lw_limit_ms(c, p, late_ms) &&
	       (p->unanswered < 0 || p->unanswered >= c->fail_after);
}

/* Does p's prober hear its peer: a reply within the silence allowed? */
static bool
hears(const struct lw_cfg *c, const struct lw_probe *p, int64_t late_ms)
{
	return p->since_ms >= 0 && p->since_ms <= lw_limit_ms(c, p, late_ms);
}

void
lw_beat_add(struct lw_beat *b, const struct lw_cfg *c, int64_t late_ms, const struct lw_probe *xy,
	    const struct lw_probe *yx)
{
	if (!xy->fresh || !yx->fresh)
		return; /* a gateway that missed this heartbeat tells nothing new */
	if (b->fresh == 0)
		b->heard = true;
	b->fresh++;
	b->quiet |= quiet(c, xy, late_ms) || quiet(c, yx, late_ms);
	b->heard &= hears(c, xy, late_ms) && hears(c, yx, late_ms);
	if (xy->since_ms > b->silence_ms)
		b->silence_ms = xy->since_ms;
	if (yx->since_ms > b->silence_ms)
		b->silence_ms = yx->since_ms;
}

void
lw_wan_add(struct lw_wan *w, const struct lw_beat *b)
{
	if (b->fresh == 0)
		return;
	w->fresh++;
	w->quiet += b->quiet;
}

bool
lw_host_starved(const struct lw_wan *w)
{
	return w->fresh >= 2 && w->quiet == w->fresh;
}

enum lw_change
lw_step(struct lw_link *w, bool up, const struct lw_beat *b, const struct lw_cfg *c)
{
	if (b->fresh == 0)
		return LW_SAME;
	if (up) {
		w->heard = 0;
		w->quiet = b->quiet ? w->quiet + 1 : 0;
		if (w->quiet < LW_CONFIRM_BEATS)
			return LW_SAME;
		w->quiet = 0;
		return LW_DOWN;
	}
	/* Back after --fail-after heartbeats in a row of both ends hearing each other, not
	 * at the first answer: a link that flaps is planned without until it holds. */
	w->quiet = 0;
	w->heard = b->heard ? w->heard + 1 : 0;
	if (w->heard < c->fail_after)
		return LW_SAME;
	w->heard = 0;
	return LW_UP;
}

int64_t
lw_late(int64_t prev_ms, int64_t now_ms, int64_t heartbeat_ms)
{
	int64_t kept = prev_ms - heartbeat_ms;

	if (now_ms < 0)
		now_ms = 0;
	return kept > now_ms ? kept : now_ms;
}
