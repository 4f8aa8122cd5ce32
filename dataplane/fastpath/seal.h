/* SPDX-License-Identifier: BSD-3-Clause
 *
 * Fast path: sealed frames of protected links (docs/PROTOCOL.md section 14), AES-GCM on
 * the lcore's own cryptodev queue pair, a burst at a time. Worker lcores only: no
 * allocation except mbufs and crypto operations from pools sized at start, no locks, no
 * syscalls, no logging.
 */
#ifndef GEOREDUCE_FASTPATH_SEAL_H
#define GEOREDUCE_FASTPATH_SEAL_H

#include <stdbool.h>
#include <stddef.h>

#include <rte_mbuf.h>

#include "dp.h"
#include "fastpath/tx.h"

/* Whether the UDP payload at p (at least 2 bytes) is a sealed frame. */
static inline bool
dp_is_sealed(const uint8_t *p)
{
	return p[0] == DP_SEAL_MAGIC >> 8 && p[1] == (DP_SEAL_MAGIC & 0xff);
}

/**
 * Take the sealed frame m, received on port, whose UDP payload (plen bytes, Ethernet
 * padding trimmed) is a sealed frame: check its seal header, find the key (job, key id,
 * sender) among the installed epochs, check the replay window, and queue its decryption
 * for dp_open_flush() (a frame whose buffer is shared is copied first: it is opened in
 * place). Consumes m: queued, or dropped and counted (bad_seal, unknown_key, replay).
 */
void dp_open_queue(struct dp_lcore *lc, const struct dp_state *st, struct rte_mbuf *m,
		   uint16_t port, size_t plen);

/**
 * Decrypt and authenticate the queued frames in one cryptodev burst; each that verifies,
 * holds a packet of its key's job, epoch and sender and is still fresh for the replay
 * window becomes the plain frame (seal header and tag removed, lengths updated, marked
 * RTE_MBUF_F_RX_SEC_OFFLOAD); the others are dropped and counted (bad_tag, unknown_key,
 * replay). The queue is then empty, and the plain frames are left in its first entries,
 * in the order received (m, port, len), for the caller to take on (rx.c).
 * @return  The number of plain frames.
 */
uint16_t dp_open_flush(struct dp_lcore *lc);

/**
 * Seal the frame m (Ethernet to payload, one or more segments; consumed) for the protected
 * link k of job j into a fresh frame of the seal pool, with the lcore's next sequence
 * number of k, and queue its encryption; after dp_seal_flush() it is staged for TX on
 * port. Frames leave in the order they were sealed in: pacers seal what they release
 * (fastpath/pace.c), so that the receiver's replay window sees sequence numbers in order.
 * A full queue is flushed first. Counted; nothing sent if a pool is empty.
 */
void dp_seal_queue(struct dp_lcore *lc, const struct dp_job *j, const struct dp_seal *k,
		   struct rte_mbuf *m, uint16_t port);

/** Encrypt the queued frames in one cryptodev burst and stage them for TX. */
void dp_seal_flush(struct dp_lcore *lc);

/** m out on port: staged, or on a protected link (k) sealed first. Consumes m. */
static inline void
dp_wire_out(struct dp_lcore *lc, const struct dp_job *j, const struct dp_seal *k, uint16_t port,
	    struct rte_mbuf *m)
{
	if (likely(k == NULL))
		dp_tx_stage(lc, port, m);
	else
		dp_seal_queue(lc, j, k, m, port);
}

#endif
