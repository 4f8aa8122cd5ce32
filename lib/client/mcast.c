/* SPDX-License-Identifier: BSD-3-Clause
 *
 * libgeoreduce, selective multicast's sending side (docs/PROTOCOL.md sections 5 and 7.5):
 * gr_mcast_send() sends this worker's update of a round to its gateway, chunk after chunk
 * straight from the caller's buffer, in batches paced to the stream's rate; while it
 * waits between batches it takes in what the other origins send (mcast_recv.c keeps it
 * in the window ahead). Runs in the caller's thread; nothing is allocated.
 */
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

#include "client_internal.h"
#include "clock.h"
#include "georeduce.h"
#include "wire.h"

int
gr_mcast_send(struct gr_client *c, const void *buf, size_t elements, enum gr_dtype dtype,
	      uint32_t round, const struct gr_options *opt)
{
	const struct gr_config *cfg;
	struct call k = {.c = c, .round = round};
	struct mcall m = {.c = c, .round = round - 1, .sending = true};
	double rate, ns_per_byte;
	uint64_t start, bytes = 0;

	if (c == NULL)
		return -EINVAL;
	cfg = &c->cfg;
	c->err[0] = '\0';
	if (buf == NULL)
		return client_fail(c, -EINVAL, "no buffer");
	if (!cfg->mcast_send)
		return client_fail(c, -EINVAL, "worker %u sends on no multicast stream of job %u",
				   cfg->worker_id, cfg->job);
	if (c->mxbuf != NULL)
		return client_fail(c, -EINVAL,
				   "%s: selective multicast carries element-wise "
				   "dtypes only",
				   gr_dtype_name(cfg->dtype));
	if (dtype != cfg->dtype || elements != cfg->elements)
		return client_fail(c, -EINVAL, "%zu elements of %s: the job's tensor is %llu of %s",
				   elements, gr_dtype_name(dtype) ? gr_dtype_name(dtype) : "?",
				   (unsigned long long)cfg->elements, gr_dtype_name(cfg->dtype));
	rate = opt != NULL && opt->rate_gbps > 0 ? opt->rate_gbps : cfg->mcast_rate_gbps;
	if (!isfinite(rate) || rate < 0)
		return client_fail(c, -EINVAL, "rate_gbps: must be a finite number >= 0");
	ns_per_byte = rate > 0 ? 8 / rate : 0;
	k.esize = gr_dtype_size(dtype);
	c->tx_n = 0;
	start = clock_now_us();
	for (uint32_t i = 0; i < c->n_chunks; i++) {
		uint32_t n = wire_chunk_len(cfg->elements, cfg->chunk_elements, i);
		struct wire_pkt p = {
			.type = WIRE_TYPE_MCAST,
			.dtype = (enum wire_dtype)cfg->dtype,
			.job = cfg->job,
			.epoch = cfg->epoch,
			.tree = cfg->mcast_stream,
			.sender = cfg->worker_id,
			.origin = cfg->worker_id,
			.contrib = 1,
			.round = round,
			.chunk = i,
			.count = (uint16_t)n,
			.tsval = (uint32_t)clock_now_us(),
		};

		client_tx_add(&k, &p,
			      (const uint8_t *)buf + (size_t)i * cfg->chunk_elements * k.esize,
			      n * k.esize, 0, cfg->gateway_ipv4,
			      wire_udp_port(cfg->gateway_base_port, cfg->gateway_ports, i));
		bytes += WIRE_FRAME_PAYLOAD_OFF + (uint64_t)n * k.esize;
		if (c->tx_n == TX_BATCH || i + 1 == c->n_chunks) {
			client_tx_flush(&k);
			if (k.fatal < 0)
				return k.fatal;
			/* Pace: the batch may leave once its bytes fit the rate since start.
			 * Meanwhile a receiver takes in what the other origins send for
			 * this round (kept in the window ahead, as gr_mcast_recv() of the
			 * round before would): left on the socket, a whole update at the
			 * link's rate overflows it long before gr_mcast_recv() of this
			 * round starts. */
			uint64_t due = start + (uint64_t)((double)bytes * ns_per_byte / 1000);

			for (uint64_t now = clock_now_us(); now < due; now = clock_now_us()) {
				int r = 0;

				if (c->mahead > 0) {
					r = client_mcast_rx_batch(&m);
					if (r < 0)
						return client_fail(c, r, "receive: %s",
								   strerror(-r));
					if (r == 0)
						r = client_wait_until(c, due);
					if (r < 0)
						return client_fail(c, r, "poll: %s", strerror(-r));
					continue;
				}
				struct timespec ts = {.tv_sec = (time_t)((due - now) / 1000000),
						      .tv_nsec =
							      (long)((due - now) % 1000000) * 1000};

				nanosleep(&ts, NULL);
			}
		}
	}
	c->st.mcast_sent += c->n_chunks;
	return (int)c->n_chunks;
}
