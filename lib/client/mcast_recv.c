/* SPDX-License-Identifier: BSD-3-Clause
 *
 * libgeoreduce, selective multicast's receiving side (docs/PROTOCOL.md sections 5 and 7.5,
 * docs/CLIENT.md): gr_mcast_recv() delivers each origin's chunks of a round to the caller
 * as they come, keeps the chunks of the rounds ahead (up to mcast_rounds_ahead) in a
 * window until their call, and recovers what is lost with NACK_MCAST: a chunk behind a
 * later one of its origin after a reordering allowance, the last ones of an origin after
 * a silence, each again after a smoothed repair time. Runs in the caller's thread, per
 * datagram: nothing is allocated (the bitmaps, window and records come with the
 * configuration, client.c).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "client_internal.h"
#include "clock.h"
#include "georeduce.h"
#include "wire.h"

#define MCAST_NACK_TRIES 8          /* NACK_MCASTs for one chunk, at most */
#define MCAST_REPAIR_INIT_US 20000  /* a repair's wait before a sample (doubles) */
#define MCAST_REPAIR_MAX_US 1000000 /* ... and the longest */
#define MCAST_TAIL_MIN_US \
	2000 /* an origin silent this long (at least) while
					 * chunks of it are missing has lost its last ones */
#define MCAST_TAIL_PROBE \
	1u /* ... of which this many past the latest are
					 * asked for at a time (it may not have sent them
					 * yet: a busy origin pauses) */
#define MCAST_SILENT_US \
	100000 /* nothing of an origin this long into a call:
					 * its first chunk is asked for (all may be lost) */

/* Index of origin id in the configuration, or -1. */
static int
origin_index(const struct gr_config *cfg, uint16_t id)
{
	for (unsigned int i = 0; i < cfg->n_origins; i++)
		if (cfg->origins[i] == id)
			return (int)i;
	return -1;
}

/* Bitmap and count of origin o in set k (0: the call's round, 1 + s: window slot s). */
static uint8_t *
mcast_bits(const struct gr_client *c, uint32_t k, unsigned int o)
{
	return c->mbits + ((size_t)k * c->cfg.n_origins + o) * c->mbits_stride;
}

static uint32_t *
mcast_got(const struct gr_client *c, uint32_t k, unsigned int o)
{
	return c->mgot + (size_t)k * c->cfg.n_origins + o;
}

/* Where window slot s keeps chunk `chunk` of origin o. */
static uint8_t *
mcast_data(const struct gr_client *c, uint32_t s, unsigned int o, uint32_t chunk)
{
	return c->mdata + ((size_t)s * c->cfg.n_origins + o) * c->mtensor +
	       (size_t)chunk * c->cfg.chunk_elements * gr_dtype_size(c->cfg.dtype);
}

/* Empty window slot s; its chunks not delivered are counted as skipped. */
static void
mcast_slot_clear(struct gr_client *c, uint32_t s, bool skipped)
{
	if (skipped)
		c->st.mcast_skipped += c->mslot[s].held;
	c->mslot[s].held = 0;
	memset(mcast_bits(c, 1 + s, 0), 0, c->mbits_stride * c->cfg.n_origins);
	memset(mcast_got(c, 1 + s, 0), 0, sizeof(*c->mgot) * c->cfg.n_origins);
}

/* Mark chunk of origin o in set k; false if it was there already (a duplicate). */
static bool
mcast_mark(struct gr_client *c, uint32_t k, unsigned int o, uint32_t chunk)
{
	uint8_t *bits = mcast_bits(c, k, o);

	if (bits[chunk / 8] & (1u << (chunk % 8)))
		return false;
	bits[chunk / 8] |= (uint8_t)(1u << (chunk % 8));
	++*mcast_got(c, k, o);
	return true;
}

/* Deliver chunk of origin o to the caller, counting it. */
static void
mcast_deliver(struct mcall *m, unsigned int o, uint32_t chunk, const void *data)
{
	struct gr_client *c = m->c;

	c->st.mcast_received++;
	if (*mcast_got(c, 0, o) == c->n_chunks)
		m->complete++;
	m->fn(m->arg, c->cfg.origins[o], m->round, chunk, data,
	      wire_chunk_len(c->cfg.elements, c->cfg.chunk_elements, chunk));
}

/* --- Loss recovery of multicast (NACK_MCAST, docs/CLIENT.md) --- */

/* The missing-chunk record of chunk `chunk` of origin o in the call's round. */
static struct mmiss *
mcast_miss(const struct gr_client *c, unsigned int o, uint32_t chunk)
{
	return &c->mmiss[(size_t)o * c->n_chunks + chunk];
}

/* How long a chunk asked for `tries` times waits for its repair before it is asked for
 * again: the smoothed repair time and four deviations (before a sample,
 * MCAST_REPAIR_INIT_US), doubled per try, within [1 ms, MCAST_REPAIR_MAX_US]. */
static uint64_t
mcast_wait(const struct gr_client *c, unsigned int tries)
{
	uint64_t w = c->mrep.valid ? rtt_rto(&c->mrep) : MCAST_REPAIR_INIT_US;

	w = w < 1000 ? 1000 : w;
	for (unsigned int i = 1; i < tries && w < MCAST_REPAIR_MAX_US; i++)
		w *= 2;
	return w < MCAST_REPAIR_MAX_US ? w : MCAST_REPAIR_MAX_US;
}

/* Chunks of one origin arrive in order along their path, but from a gateway's several
 * lcores they may pass one another: a chunk behind a later one is asked for after this
 * allowance (us). */
static uint64_t
mcast_reorder(const struct gr_client *c)
{
	return 1000 + 2 * c->mgap_us;
}

/* An origin silent this long while chunks of it are missing has lost its last ones. */
static uint64_t
mcast_tail(const struct gr_client *c)
{
	uint64_t t = 16 * c->mgap_us;

	return t > MCAST_TAIL_MIN_US ? t : MCAST_TAIL_MIN_US;
}

static void
mcast_due(struct mcall *m, uint64_t t)
{
	if (t < m->next_scan)
		m->next_scan = t;
}

/* First copy of chunk `chunk` of origin o of the call's round at time now (us): the
 * chunks it passed are missing, and (sample: it came off the network now) it is a
 * sample of the time between chunks. */
static void
mcast_arrived(struct mcall *m, unsigned int o, uint32_t chunk, uint64_t now, bool sample)
{
	struct gr_client *c = m->c;
	struct morigin *mo = &c->morig[o];
	uint32_t t = (uint32_t)(now - m->start + mcast_reorder(c)) + 1;

	if (sample && mo->last != 0 && chunk == mo->seen) {
		uint64_t gap = now - mo->last;

		c->mgap_us = c->mgap_us == 0 ? gap : (7 * c->mgap_us + gap) / 8;
	}
	/* The chunks it passed; those asked for before anything showed them sent (a probe,
	 * an origin's first chunk) were perhaps asked for before they were sent, and get
	 * their tries afresh. */
	for (uint32_t i = mo->seen; i < chunk; i++) {
		struct mmiss *mm = mcast_miss(c, o, i);

		if (mm->tries != 0) {
			mm->tries = 0;
			mm->when = t;
		} else if (mm->when == 0) {
			mm->when = t;
		}
	}
	if (chunk > mo->seen)
		mcast_due(m, now + mcast_reorder(c));
	if (chunk >= mo->seen)
		mo->seen = chunk + 1;
	if (chunk >= mo->hi)
		mo->hi = chunk + 1;
	mo->last = now;
	mcast_due(m, now + mcast_tail(c));
}

/* One NACK_MCAST for chunks [first, first + n) of origin o to the gateway. */
static void
mcast_nack_send(struct mcall *m, struct call *k, unsigned int o, uint32_t first, uint32_t n,
		uint64_t now)
{
	const struct gr_config *cfg = &m->c->cfg;
	struct wire_pkt p = {
		.type = WIRE_TYPE_NACK_MCAST,
		.job = cfg->job,
		.epoch = cfg->epoch,
		.tree = cfg->origin_streams[o],
		.sender = cfg->worker_id,
		.origin = cfg->origins[o],
		.round = m->round,
		.chunk = first,
		.count = (uint16_t)n,
		.tsval = (uint32_t)now,
	};

	client_tx_add(k, &p, NULL, 0, 0, cfg->gateway_ipv4,
		      wire_udp_port(cfg->gateway_base_port, cfg->gateway_ports, first));
	m->c->st.mcast_nacks_sent++;
}

/*
 * Ask the gateway for every missing chunk of the call's round whose time has come: one
 * behind a later chunk of its origin once the reordering allowance has passed, the
 * last ones of an origin once it has been silent for mcast_tail(), each again after
 * mcast_wait() of its tries, at most MCAST_NACK_TRIES times. Runs of consecutive chunks
 * of an origin go as one range (at most WIRE_NACK_RANGE_MAX) to a gateway with one port,
 * each chunk alone to its port otherwise (PROTOCOL.md section 9). Sets m->next_scan.
 */
static int
mcast_nack_scan(struct mcall *m, uint64_t now)
{
	struct gr_client *c = m->c;
	struct call k = {.c = c, .round = m->round};
	uint32_t t = (uint32_t)(now - m->start) + 1;
	bool ranges = c->cfg.gateway_ports == 1;

	m->next_scan = UINT64_MAX;
	c->tx_n = 0;
	for (unsigned int o = 0; o < c->cfg.n_origins; o++) {
		struct morigin *mo = &c->morig[o];
		const uint8_t *bits = mcast_bits(c, 0, o);
		uint32_t run_first = 0, run_len = 0;

		if (*mcast_got(c, 0, o) == c->n_chunks)
			continue;
		/* Nothing of it yet: its first chunk is asked for once the call has waited
		 * MCAST_SILENT_US (its repair, if the gateway has it, shows what else is
		 * missing); before, the origin may just not have sent. */
		if (mo->last == 0 && mcast_miss(c, o, 0)->when == 0) {
			uint64_t silent = MCAST_SILENT_US + 16 * c->mgap_us;

			if (now - m->start < silent) {
				mcast_due(m, m->start + silent);
				continue;
			}
			mcast_miss(c, o, 0)->when = t;
		}
		/* Once something came after the latest probe (or before the first). */
		if (mo->last != 0 && mo->hi < c->n_chunks && mo->last > mo->probed) {
			if (now - mo->last >= mcast_tail(c)) {
				/* A probe of the next few: their repairs (a gateway holds
				 * what the origin did send) move hi on, and a silence after
				 * them asks for the next few; while nothing comes, only the
				 * probe is asked for again. Asking for the rest of the round
				 * would ask, of an origin that only paused, for thousands of
				 * chunks not sent yet. */
				uint32_t end = c->n_chunks - mo->hi > MCAST_TAIL_PROBE ?
						       mo->hi + MCAST_TAIL_PROBE :
						       c->n_chunks;

				for (uint32_t i = mo->hi; i < end; i++)
					if (mcast_miss(c, o, i)->when == 0)
						mcast_miss(c, o, i)->when = t;
				mo->hi = end;
				mo->probed = now;
			} else {
				mcast_due(m, mo->last + mcast_tail(c));
			}
		}
		uint32_t end = mo->last == 0 ? 1 : mo->hi;

		for (uint32_t i = 0; i <= end; i++) {
			struct mmiss *mm = i < end ? mcast_miss(c, o, i) : NULL;
			bool ask = false;

			if (mm != NULL && !(bits[i / 8] & (1u << (i % 8))) && mm->when != 0 &&
			    mm->tries < MCAST_NACK_TRIES) {
				uint64_t due = m->start + mm->when - 1 +
					       (mm->tries ? mcast_wait(c, mm->tries) : 0);

				if (due <= now)
					ask = true;
				else
					mcast_due(m, due);
			}
			if (ask && run_len != 0 && ranges && run_len < WIRE_NACK_RANGE_MAX &&
			    run_first + run_len == i) {
				run_len++;
			} else if (ask || run_len != 0) {
				if (run_len != 0)
					mcast_nack_send(m, &k, o, run_first, run_len, now);
				run_first = i;
				run_len = ask ? 1 : 0;
			}
			if (ask) {
				mm->tries++;
				mm->when = t;
				if (mm->tries < MCAST_NACK_TRIES)
					mcast_due(m, now + mcast_wait(c, mm->tries));
			}
		}
	}
	client_tx_flush(&k);
	return k.fatal;
}

/* Start the call of m->round on the window: the slot that kept this round is delivered
 * (origin by origin, chunks in ascending order) and freed; a slot of a round outside the
 * window from m->round (one the caller passed over) is freed, its chunks counted as
 * skipped. */
static void
mcast_window_start(struct mcall *m)
{
	struct gr_client *c = m->c;
	unsigned int n = c->cfg.n_origins;

	memset(mcast_bits(c, 0, 0), 0, c->mbits_stride * n);
	memset(mcast_got(c, 0, 0), 0, sizeof(*c->mgot) * n);
	memset(c->mmiss, 0, sizeof(*c->mmiss) * n * c->n_chunks);
	memset(c->morig, 0, sizeof(*c->morig) * n);
	for (uint32_t s = 0; s < c->mahead; s++) {
		uint32_t d = c->mslot[s].round - m->round;

		if (c->mslot[s].held == 0 || (d >= 1 && d <= c->mahead))
			continue;
		if (d != 0) {
			mcast_slot_clear(c, s, true);
			continue;
		}
		for (unsigned int o = 0; o < n; o++) {
			const uint8_t *bits = mcast_bits(c, 1 + s, o);

			for (uint32_t i = 0; i < c->n_chunks; i++)
				if ((bits[i / 8] & (1u << (i % 8))) && mcast_mark(c, 0, o, i)) {
					mcast_arrived(m, o, i, m->start, false);
					mcast_deliver(m, o, i, mcast_data(c, s, o, i));
				}
		}
		mcast_slot_clear(c, s, false);
	}
}

/* Keep chunk p (of origin o, payload at data) of a round in the window ahead. */
static void
mcast_keep(struct gr_client *c, const struct wire_pkt *p, unsigned int o, const uint8_t *data)
{
	uint32_t s = p->round % c->mahead;
	struct mslot *sl = &c->mslot[s];

	/* The window's rounds have slots of their own and mcast_window_start() freed the
	 * others, so a slot holds this round or none. */
	if (sl->held != 0 && sl->round != p->round)
		mcast_slot_clear(c, s, true);
	if (!mcast_mark(c, 1 + s, o, p->chunk)) {
		c->st.duplicates++;
		return;
	}
	sl->round = p->round;
	sl->held++;
	memcpy(mcast_data(c, s, o, p->chunk), data, (size_t)p->count * gr_dtype_size(c->cfg.dtype));
}

static void
mcast_rx_one(void *ctx, uint8_t *pkt, size_t len, const struct sockaddr_in *from, uint64_t now)
{
	struct mcall *m = ctx;
	struct gr_client *c = m->c;
	const struct gr_config *cfg = &c->cfg;
	struct wire_pkt p;
	uint32_t ahead;
	int o;

	if (wire_hdr_decode(pkt, len, &p, NULL) < 0) {
		c->st.invalid++;
		return;
	}
	if (p.type == WIRE_TYPE_PROBE) {
		struct call k = {.c = c};

		client_on_probe(&k, &p, pkt, from, now);
		return;
	}
	if (p.type != WIRE_TYPE_MCAST || ntohl(from->sin_addr.s_addr) != cfg->gateway_ipv4 ||
	    p.job != cfg->job || p.sender != cfg->gateway_id ||
	    ntohs(from->sin_port) !=
		    wire_udp_port(cfg->gateway_base_port, cfg->gateway_ports, p.chunk)) {
		c->st.invalid++;
		return;
	}
	if (p.epoch != cfg->epoch) {
		c->st.stale++;
		return;
	}
	o = origin_index(cfg, p.origin);
	if (o < 0 || cfg->origin_streams[o] != p.tree || p.chunk >= c->n_chunks ||
	    p.dtype != (enum wire_dtype)cfg->dtype ||
	    p.count != wire_chunk_len(cfg->elements, cfg->chunk_elements, p.chunk)) {
		c->st.invalid++;
		return;
	}
	ahead = p.round - m->round;
	if (wire_round_before(p.round, m->round) || (m->sending && ahead == 0)) {
		c->st.mcast_late++;
	} else if (ahead > c->mahead) {
		c->st.mcast_too_far++;
	} else if (ahead > 0) {
		mcast_keep(c, &p, (unsigned int)o, pkt + p.payload_off);
	} else if (!mcast_mark(c, 0, (unsigned int)o, p.chunk)) {
		c->st.duplicates++;
	} else {
		struct mmiss *mm = mcast_miss(c, (unsigned int)o, p.chunk);

		if (p.flags & WIRE_F_RETX) {
			/* A repair: a sample of the time it took if asked for once (Karn). */
			if (mm->tries == 1)
				rtt_sample(&c->mrep, (int64_t)(now - (m->start + mm->when - 1)));
			c->st.mcast_repaired++;
			/* Past the latest chunk received of its origin (its first, or a
			 * probe's): the chunks before it are missing too, and the origin is
			 * not silent. */
			if (c->morig[o].last == 0 || p.chunk >= c->morig[o].seen)
				mcast_arrived(m, (unsigned int)o, p.chunk, now, false);
		} else {
			mcast_arrived(m, (unsigned int)o, p.chunk, now, true);
		}
		mcast_deliver(m, (unsigned int)o, p.chunk, pkt + p.payload_off);
	}
}

/* Take one batch of what waits on the socket (m's round, the window ahead, answers to
 * probes): the packets read, or -errno. */
int
client_mcast_rx_batch(struct mcall *m)
{
	return client_rx_read(m->c, mcast_rx_one, m);
}

int
gr_mcast_recv(struct gr_client *c, uint32_t round, gr_mcast_fn fn, void *arg,
	      const struct gr_mcast_opts *o)
{
	static const struct gr_mcast_opts defaults;
	struct mcall m = {.c = c, .round = round, .fn = fn, .arg = arg, .next_scan = UINT64_MAX};
	uint64_t start, deadline;
	unsigned int n;

	if (c == NULL)
		return -EINVAL;
	c->err[0] = '\0';
	if (o == NULL)
		o = &defaults;
	if (fn == NULL)
		return client_fail(c, -EINVAL, "no callback");
	n = c->cfg.n_origins;
	if (n == 0)
		return client_fail(c, -EINVAL, "worker %u receives no multicast stream of job %u",
				   c->cfg.worker_id, c->cfg.job);
	/* The bitmaps and the window came with the configuration (prepare()): nothing is
	 * allocated here. */
	start = clock_now_us();
	m.start = start;
	deadline = start + (uint64_t)(o->timeout_ms ? o->timeout_ms : GR_TIMEOUT_DEFAULT_MS) * 1000;
	mcast_window_start(&m);
	while (m.complete < n) {
		int r = client_mcast_rx_batch(&m);

		if (r < 0)
			return client_fail(c, r, "receive: %s", strerror(-r));
		uint64_t now = clock_now_us();

		if (m.complete < n && now >= m.next_scan) {
			r = mcast_nack_scan(&m, now);
			if (r < 0)
				return client_fail(c, r, "%s", c->err);
		}
		if (r > 0)
			continue;
		if (now >= deadline)
			break;
		r = client_wait_until(c, deadline < m.next_scan ? deadline : m.next_scan);
		if (r < 0)
			return client_fail(c, r, "poll: %s", strerror(-r));
	}
	if (o->complete != NULL)
		for (unsigned int i = 0; i < n; i++)
			o->complete[i] = *mcast_got(c, 0, i) == c->n_chunks;
	if (m.complete < n) {
		uint64_t missing = 0;

		for (unsigned int i = 0; i < n; i++)
			missing += c->n_chunks - *mcast_got(c, 0, i);
		(void)client_fail(c, 0,
				  "round %u: %u of %u origins complete, %llu chunks "
				  "missing after %llu ms",
				  round, m.complete, n, (unsigned long long)missing,
				  (unsigned long long)((clock_now_us() - start) / 1000));
	}
	return (int)m.complete;
}
