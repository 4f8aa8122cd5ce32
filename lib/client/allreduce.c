/* SPDX-License-Identifier: BSD-3-Clause
 *
 * libgeoreduce: gr_allreduce(), the worker side of docs/PROTOCOL.md over one kernel UDP
 * socket; what it sends is in allreduce_tx.c, what it receives in allreduce_rx.c.
 *
 * One gr_allreduce() call is a loop of four steps: fill the send window with first
 * transmissions, run the timers of the chunks in flight (section 10), flush the transmit
 * batch with one sendmmsg(), read what arrived with one recvmmsg() and apply it. When a pass
 * did nothing, the loop sleeps in ppoll() until a packet, the earliest timer, the progress
 * interval or the deadline. Payloads go out straight from the caller's buffer (an iovec
 * behind a 54-byte header) and results are copied into it once validated; everything else
 * lives in the client, allocated at creation: one 16-byte record per chunk, the batch
 * headers and RX_BATCH receive buffers. Nothing is allocated per call or per packet.
 *
 * Every tree has its own window: at most `window` of its chunks in flight (sent, without
 * result), and a span of at most its slot pool: chunk i of a tree is sent only once every
 * chunk of that tree before i - slots has its result, so the chunks in flight of a tree
 * never collide in the gateway's slot pool for it (slot = chunk & (slots - 1)). The
 * gateway's table makes the pool up to four times its window, so a lost chunk does not
 * stop the window until it is resent: the others move on past it. First
 * transmissions go round-robin over the trees with room in their window, so that every
 * tree of the plan runs at once, each at the rate its gateway paces it to (a single
 * window over the whole tensor would run the trees, whose ranges are contiguous, one
 * after the other).
 *
 * With gr_options.follow_rtt a tree's window follows its round trip (docs/CLIENT.md,
 * "Windows that follow the round trip"): the table sizes it to the tree's rate times the round trip planned; each call
 * measures the least CONTRIB-to-RESULT time of the tree's first transmissions, and the next
 * call starts with the rate times that, where it is more than the table's, within half the
 * slot pool.
 *
 * Runs in the caller's thread.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "client_internal.h"
#include "clock.h"
#include "georeduce.h"
#include "sum.h"
#include "wire.h"

/* The window that keeps rate_gbps busy over a round trip of rtt_us with chunks of
 * chunk_bytes: rate x rtt / chunk_bytes, rounded up to a power of two (as the gateway's
 * table rounds its own, docs/TABLES.md), at least floor, and at most half of slots (a lost
 * chunk then still leaves the others a window to move on in the pool) or floor where that
 * is more. slots 0: no pool known, GR_WINDOW_MAX. */
uint32_t
client_window_for(double rate_gbps, uint32_t rtt_us, size_t chunk_bytes, uint32_t floor,
		  uint32_t slots)
{
	uint32_t cap = slots != 0 ? slots / 2 : GR_WINDOW_MAX, w = 1;
	double need;

	if (cap < floor)
		cap = floor;
	if (!(rate_gbps > 0) || rtt_us == 0 || chunk_bytes == 0)
		return floor;
	need = rate_gbps * 1e9 / 8 * (double)rtt_us / 1e6 / (double)chunk_bytes;
	while (w < cap && (double)w < need)
		w *= 2;
	if (w > cap)
		w = cap;
	return w > floor ? w : floor;
}

/* Tree t's window from its table: the table's window, else its slot pool, else
 * GR_WINDOW_DEFAULT, within the pool. */
uint32_t
client_table_window(const struct gr_client *c, unsigned int t)
{
	const struct gr_tree *tr = &c->cfg.trees[t];
	uint32_t tw = tr->window != 0 ? tr->window : tr->slots != 0 ? tr->slots : GR_WINDOW_DEFAULT;

	return tr->slots != 0 && tr->slots < tw ? tr->slots : tw;
}

/* Tree t's window by default: the table's, grown to the tree's rate times the round trip
 * the client measured. */
uint32_t
client_tree_window(const struct gr_client *c, unsigned int t)
{
	const struct gr_tree *tr = &c->cfg.trees[t];
	uint32_t tw = client_table_window(c, t);

	return client_window_for(
		c->cfg.tree_rate_gbps[t], c->trtt_min[t],
		wire_payload_bytes((enum wire_dtype)c->cfg.dtype, c->cfg.chunk_elements), tw,
		tr->slots);
}

/* Resolve the options into k; 0 or -EINVAL. */
static int
call_init(struct call *k, struct gr_client *c, const struct gr_options *o)
{
	uint32_t w = o->window;

	if (w > GR_WINDOW_MAX)
		return client_fail(c, -EINVAL, "window %u: at most %u", w, GR_WINDOW_MAX);
	k->window = w;
	/* By default a tree's window is the one its table gives: the gateway sizes it to the
	 * tree's bandwidth-delay product (docs/TABLES.md), which is what keeps the tree busy,
	 * and its slot pool to up to four times that; with follow_rtt grown where the round
	 * trip measured is longer than planned (client_tree_window()). */
	for (unsigned int t = 0; t < c->cfg.n_trees; t++) {
		const struct gr_tree *tr = &c->cfg.trees[t];
		uint32_t tw = w != 0        ? w :
			      o->follow_rtt ? client_tree_window(c, t) :
					      client_table_window(c, t);

		k->tnext[t] = k->told[t] = tr->chunk_first;
		k->tprogress[t] = 0;
		k->twin[t] = tr->slots != 0 && tr->slots < tw ? tr->slots : tw;
		k->tspan[t] = tr->slots != 0 ? tr->slots : k->twin[t];
		k->tflight[t] = 0;
		k->trtt[t] = 0;
	}
	k->rto_min = (uint64_t)(o->rto_min_ms ? o->rto_min_ms : GR_RTO_MIN_DEFAULT_MS) * 1000;
	k->rto_max = (uint64_t)(o->rto_max_ms ? o->rto_max_ms : GR_RTO_MAX_DEFAULT_MS) * 1000;
	k->rto_initial =
		(uint64_t)(o->rto_initial_ms ? o->rto_initial_ms : GR_RTO_INITIAL_DEFAULT_MS) *
		1000;
	if (k->rto_min > k->rto_max)
		return client_fail(c, -EINVAL, "rto_min_ms %u above rto_max_ms %u",
				   (unsigned int)(k->rto_min / 1000),
				   (unsigned int)(k->rto_max / 1000));
	k->average = o->average;
	k->csets = o->csets;
	k->next_due = UINT64_MAX;
	return 0;
}

/*
 * Lay a tensor of `elements` (1 .. the job's) on the job's chunk grid. The whole tensor is
 * the job's grid as it is. A shorter one of m chunks takes the first chunks of every tree,
 * as many as its share of the m (largest remainders, ties to the lower tree), so that
 * every tree of the plan carries it at once, each its planned part; the job's last chunk
 * is left out if it is short. The tensor's chunks are in tree order: tree 0's, tree 1's...
 * Every worker lays the same tensor the same way (the trees' ranges are the job's).
 */
static void
call_layout(struct call *k, size_t elements)
{
	const struct gr_client *c = k->c;
	const struct gr_config *cfg = &c->cfg;
	uint32_t ce = cfg->chunk_elements, m = (uint32_t)((elements + ce - 1) / ce);
	uint32_t cap[GR_TREES_MAX], take[GR_TREES_MAX], short_last = cfg->elements % ce != 0;
	uint64_t rem[GR_TREES_MAX], usable = c->n_chunks - short_last, given = 0;
	unsigned int n = cfg->n_trees, last_tree = 0;

	for (unsigned int t = 0; t < n; t++) {
		const struct gr_tree *tr = &cfg->trees[t];
		bool holds_last = tr->chunk_first + tr->chunk_count == c->n_chunks;

		cap[t] = m == c->n_chunks ? tr->chunk_count :
					    tr->chunk_count - (holds_last && short_last);
		take[t] = m == c->n_chunks ? cap[t] : (uint32_t)((uint64_t)m * cap[t] / usable);
		rem[t] = m == c->n_chunks ? 0 : (uint64_t)m * cap[t] % usable;
		given += take[t];
	}
	for (; given < m; given++) { /* fewer than n trees are short by one */
		unsigned int best = n;

		for (unsigned int t = 0; t < n; t++)
			if (take[t] < cap[t] && (best == n || rem[t] > rem[best]))
				best = t;
		take[best]++;
		rem[best] = 0;
	}
	k->n_used = m;
	for (unsigned int t = 0, at = 0; t < n; t++) {
		k->tbase[t] = at;
		k->tend[t] = cfg->trees[t].chunk_first + take[t];
		at += take[t];
		if (take[t] != 0)
			last_tree = t;
	}
	k->last = k->tend[last_tree] - 1;
	k->tail = (uint32_t)(elements - (size_t)(m - 1) * ce);
}

/*
 * gr_options.resume: take up the chunk records where the call that timed out left them.
 * Chunks with a result keep it (it is in the buffer); those in flight are due at once (a
 * RETX CONTRIB, or a NACK_RESULT if the gateway holds them), the others go as usual. The
 * gateways' slots hold what that call sent: had it started again from the first chunk
 * instead, the slot pools may have moved on past the chunks it sent first.
 */
static void
call_resume(struct call *k, uint64_t now)
{
	struct gr_client *c = k->c;

	for (unsigned int t = 0; t < c->cfg.n_trees; t++) {
		uint32_t i;

		/* Chunks of a tree are sent in order: the sent ones are a prefix of its range. */
		for (i = k->told[t]; i < k->tend[t] && c->ch[i].state != CH_IDLE; i++) {
			struct chunk *h = &c->ch[i];

			if (h->state == CH_DONE) {
				if (k->done == 0 || h->contrib < k->contrib_min)
					k->contrib_min = h->contrib;
				if (k->done == 0 || h->contrib > k->contrib_max)
					k->contrib_max = h->contrib;
				k->done++;
				continue;
			}
			if (sent_once(h))
				h->state = CH_RETX; /* Karn: no round-trip sample from its result */
			h->backoff = 0;
			h->due_us = now;
			k->tflight[t]++;
		}
		k->tnext[t] = i;
		while (k->told[t] < k->tnext[t] && c->ch[k->told[t]].state == CH_DONE)
			k->told[t]++;
	}
	k->next_due = now;
}

/* An MX job's fp32 tensor encoded into c->mxbuf, the call's chunks each at its place;
 * the last one of a shorter tensor padded with zeros first. */
static void
mx_encode_all(struct call *k)
{
	struct gr_client *c = k->c;
	enum sum_mx f = (enum sum_mx)(c->cfg.dtype - GR_DTYPE_MXINT8);

	if (c->chunk_wire == 0) /* a LAN dtype of fp32: the caller's buffer as it is */
		return;
	for (unsigned int t = 0; t < c->cfg.n_trees; t++) {
		for (uint32_t i = c->cfg.trees[t].chunk_first; i < k->tend[t]; i++) {
			uint32_t n = wire_chunk_len(c->cfg.elements, c->cfg.chunk_elements, i);
			const float *src = (const float *)(const void *)chunk_data(k, i);

			if (i == k->last && k->tail < n) {
				float *tail = mx_tail(c);

				memcpy(tail, src, (size_t)k->tail * sizeof(float));
				memset(tail + k->tail, 0, (size_t)(n - k->tail) * sizeof(float));
				src = tail;
			}
			if (c->lan == WIRE_DTYPE_BF16)
				c->k->narrow_bf16(
					(uint16_t *)(void *)(c->mxbuf + (size_t)i * c->chunk_wire),
					src, n);
			else
				c->k->mx_narrow[f](c->mxbuf + (size_t)i * c->chunk_wire, src,
						   n / WIRE_MX_BLOCK);
		}
	}
}

int
gr_allreduce(struct gr_client *c, void *buf, size_t elements, enum gr_dtype dtype, uint32_t round,
	     const struct gr_options *opt)
{
	static const struct gr_options defaults;
	const struct gr_options *o = opt != NULL ? opt : &defaults;
	struct call k = {.c = c, .buf = buf, .round = round};
	uint64_t start, deadline, progress_us, next_progress;
	int rc;

	if (c == NULL)
		return -EINVAL;
	c->err[0] = '\0';
	if (buf == NULL)
		return client_fail(c, -EINVAL, "no buffer");
	if (dtype != c->cfg.dtype)
		return client_fail(c, -EINVAL, "dtype %s: the job's is %s",
				   gr_dtype_name(dtype) ? gr_dtype_name(dtype) : "?",
				   gr_dtype_name(c->cfg.dtype));
	if (elements == 0 || elements > c->cfg.elements)
		return client_fail(c, -EINVAL, "%zu elements: the job's tensor has %llu%s",
				   elements, (unsigned long long)c->cfg.elements,
				   elements == 0 ? "" : ", a tensor may have no more");
	if (c->cfg.n_trees == 0)
		return client_fail(c, -EINVAL,
				   "job %u has no tree at this gateway (a "
				   "multicast-only job: gr_mcast_send, gr_mcast_recv)",
				   c->cfg.job);
	rc = call_init(&k, c, o);
	if (rc < 0)
		return rc;
	if (o->resume &&
	    (!c->resumable || c->resume_round != round || c->resume_elements != elements))
		return client_fail(c, -EINVAL,
				   "round %u: no call of it timed out or was "
				   "cancelled just before to resume",
				   round);
	call_layout(&k, elements);
	k.esize = gr_dtype_size(dtype);
	c->st.calls++;
	c->tx_n = 0;
	start = clock_now_us();
	if (o->resume)
		call_resume(&k, start);
	else
		memset(c->ch, 0, (size_t)c->n_chunks * sizeof(c->ch[0]));
	if (c->mxbuf != NULL && !o->resume) /* encode once; a resume sends the same bytes */
		mx_encode_all(&k);
	c->resumable = false;
	for (unsigned int t = 0; t < c->cfg.n_trees; t++)
		for (unsigned int q = 0; q < c->tgw[t].ports; q++) /* before every chunk of it */
			c->rack[c->rack_off[t] + q] = (struct rack){.sent = (uint32_t)start - 1};
	deadline = start + (uint64_t)(o->timeout_ms ? o->timeout_ms : GR_TIMEOUT_DEFAULT_MS) * 1000;
	progress_us = (uint64_t)(o->progress_ms ? o->progress_ms : GR_PROGRESS_DEFAULT_MS) * 1000;
	next_progress = start + progress_us;
	for (;;) {
		uint64_t now = clock_now_us(), until;
		bool busy = false;

		for (bool more = true; more;) { /* one chunk per tree with room, round-robin */
			more = false;
			for (unsigned int t = 0; t < c->cfg.n_trees; t++) {
				uint32_t i = k.tnext[t];

				if (i == k.tend[t] || i - k.told[t] >= k.tspan[t] ||
				    k.tflight[t] >= k.twin[t])
					continue;
				struct chunk *h = &c->ch[i];

				h->state = CH_SENT;
				h->sent_us = (uint32_t)now;
				/* Until the tree's first result of this call, twice T1: the
				 * round's first chunks also wait for the peers that started
				 * it later (they got their last result of the round before
				 * up to a round trip after this worker). */
				h->due_us = now + timer_us(&k, 0) * (k.tprogress[t] == 0 ? 2 : 1);
				if (h->due_us < k.next_due)
					k.next_due = h->due_us;
				client_send_contrib(&k, i, false, now);
				c->st.contribs_sent++;
				k.tnext[t]++;
				k.tflight[t]++;
				busy = more = true;
			}
		}
		client_tx_flush(&k);
		/* What arrived is applied before the timers run: after the thread waited for
		 * a core, the socket holds the results and ACKs of chunks whose timers expired
		 * meanwhile, and a timer run first would resend or ask for them. */
		rc = client_rx_batch(&k);
		for (int b = 1; rc > 0 && rc % RX_BATCH == 0 && b < RX_DRAIN_BATCHES; b++) {
			int more = client_rx_batch(&k);

			rc = more < 0 ? more : rc + more;
			if (more <= 0)
				break;
		}
		if (rc < 0) {
			client_fail(c, rc, "receive: %s", strerror(-rc));
			break;
		}
		/* Due timers, and results that may have overtaken lost chunks: resend those
		 * now. */
		if (rc > 0 || clock_now_us() >= k.next_due)
			client_run_timers(&k, clock_now_us());
		busy = busy || rc > 0;
		client_tx_flush(&k); /* what the packets asked for (NACK_CONTRIB) */
		if (k.fatal < 0) {
			rc = k.fatal;
			break;
		}
		for (unsigned int t = 0; t < c->cfg.n_trees; t++)
			while (k.told[t] < k.tnext[t] && c->ch[k.told[t]].state == CH_DONE)
				k.told[t]++;
		if (k.done == k.n_used) {
			rc = k.contrib_min;
			break;
		}
		now = clock_now_us();
		if (now >= next_progress) {
			if (o->progress != NULL)
				o->progress(o->progress_arg, k.done, k.n_used);
			next_progress = now + progress_us;
			if (o->cancel != NULL && o->cancel(o->cancel_arg) != 0) {
				c->st.cancels++;
				rc = client_fail(c, -ECANCELED,
						 "round %u: cancelled with %u of "
						 "%u chunks without a result after %llu ms",
						 round, k.n_used - k.done, k.n_used,
						 (unsigned long long)((now - start) / 1000));
				break;
			}
		}
		if (now >= deadline) {
			c->st.timeouts++;
			rc = client_fail(c, -ETIMEDOUT,
					 "round %u: %u of %u chunks without a result after %llu ms",
					 round, k.n_used - k.done, k.n_used,
					 (unsigned long long)((now - start) / 1000));
			break;
		}
		if (busy)
			continue;
		until = k.next_due < deadline ? k.next_due : deadline;
		if ((o->progress != NULL || o->cancel != NULL) && next_progress < until)
			until = next_progress;
		rc = client_wait_until(c, until);
		if (rc < 0) {
			client_fail(c, rc, "poll: %s", strerror(-rc));
			break;
		}
	}
	/* The round trips measured size the next call's windows (a call without a first
	 * transmission's result in a tree leaves that tree's as it was). */
	for (unsigned int t = 0; t < c->cfg.n_trees; t++)
		if (k.trtt[t] != 0)
			c->trtt_min[t] = k.trtt[t];
	if (rc > 0) {
		c->st.calls_ok++;
		if (o->progress != NULL)
			o->progress(o->progress_arg, k.n_used, k.n_used);
	}
	c->resumable = rc == -ETIMEDOUT || rc == -ECANCELED;
	c->resume_round = round;
	c->resume_elements = elements;
	return rc;
}
