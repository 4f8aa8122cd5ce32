/* SPDX-License-Identifier: BSD-3-Clause
 *
 * When a link is down, and when it is up again, from what the gateways' probes tell at
 * each heartbeat (docs/DEPLOYMENT.md, "Failures", "When a link is down"): pure decisions
 * on the probe reports they are given, no clock and no I/O, so that tests can feed them
 * sequences of heartbeats. On the daemon's thread (daemon_internal.h) and in tests.
 */
#ifndef GEOREDUCE_LINKWATCH_H
#define GEOREDUCE_LINKWATCH_H

#include <stdbool.h>
#include <stdint.h>

/** Heartbeats in a row that must find a link quiet before it is down. One quiet sample is
 * not enough: a dataplane starved of CPU for about the silence allowed looks like it. */
#define LW_CONFIRM_BEATS 2

struct lw_cfg {
	int64_t heartbeat_ms; /* the daemon's heartbeat interval, > 0 */
	int fail_after;       /* --fail-after, >= 1 */
};

/** What gateway x's last stats said of its probes to gateway y, at one heartbeat. */
struct lw_probe {
	bool fresh;         /* x and y both answered this heartbeat (ping and stats) */
	int64_t since_ms;   /* since y's last PROBE_REPLY to x; -1: none since x probes y */
	int64_t unanswered; /* PROBEs x sent y since then; -1: not said */
	double rtt_ms;      /* x's last probe round trip to y; < 0: none */
	double ping_ms;     /* the longest of this heartbeat's pings of x and y; < 0: none */
};

/** The evidence of one heartbeat over the pairs of gateways of a link's two ends. Start
 * from {0} and add each pair with lw_beat_add(). */
struct lw_beat {
	int fresh;          /* pairs whose two gateways both answered this heartbeat */
	bool quiet;         /* some fresh pair has a direction that is quiet */
	bool heard;         /* every fresh pair hears each other both ways */
	int64_t silence_ms; /* the longest silence of a fresh pair */
};

/** A link's state between heartbeats. Zero-initialised: no streak. */
struct lw_link {
	int quiet; /* heartbeats in a row that found it quiet (while up) */
	int heard; /* heartbeats in a row that found both ends hearing (while down) */
};

enum lw_change {
	LW_SAME,
	LW_DOWN, /* it was up and is down now */
	LW_UP,   /* it was down and is up again */
};

/** The silence allowed to the direction p at lateness late_ms: --fail-after heartbeats,
 * twice its last probe round trip, the lateness and twice the ping of the two gateways. */
int64_t lw_limit_ms(const struct lw_cfg *c, const struct lw_probe *p, int64_t late_ms);

/** Add the pair (x, y) to b: xy is x's report of y, yx y's report of x. */
void lw_beat_add(struct lw_beat *b, const struct lw_cfg *c, int64_t late_ms,
		 const struct lw_probe *xy, const struct lw_probe *yx);

/** One heartbeat over every link of the WAN. Start from {0}; add each link's beat. */
struct lw_wan {
	int fresh; /* links with a fresh pair */
	int quiet; /* ... of which quiet */
};

void lw_wan_add(struct lw_wan *w, const struct lw_beat *b);

/** Does the heartbeat tell of the host rather than the WAN: at least 2 links with a fresh
 * pair, and every one of them quiet? A starved host stalls the probes of all its gateways
 * at once; a cut silences the links it cuts, not every link. Such a heartbeat is taken for
 * none of the links (lw_step() is not given it). */
bool lw_host_starved(const struct lw_wan *w);

/** Take heartbeat b for a link that is up (or down): the change it makes. A heartbeat
 * without a fresh pair changes nothing, not even the streaks. */
enum lw_change lw_step(struct lw_link *w, bool up, const struct lw_beat *b, const struct lw_cfg *c);

/** The daemon's lateness to allow for: the larger of this heartbeat's (how long after it
 * was due its gateways had all answered) and the previous one less a heartbeat, so that a
 * stall is remembered for as many heartbeats as it lasted. Negative inputs count as 0. */
int64_t lw_late(int64_t prev_ms, int64_t now_ms, int64_t heartbeat_ms);

#endif
