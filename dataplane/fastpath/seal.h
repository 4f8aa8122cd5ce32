/* SPDX-License-Identifier: BSD-3-Clause
 *
 * Fast path: sealed frames of protected links (docs/PROTOCOL.md section 14), AES-GCM on
 * the lcore's own cryptodev queue pair: by CPU crypto where the device offers it, else by
 * operations that come back when the device is done (in this loop iteration or a later
 * one). Worker lcores only: no allocation except mbufs and crypto operations from pools
 * sized at start, no locks, no syscalls, no logging.
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
 * in the lcore's opening ring (a frame whose buffer is shared is copied first: it is
 * opened in place). Consumes m: queued, or dropped and counted (bad_seal, unknown_key,
 * replay; crypto_full when the ring is full: the caller flushes it first).
 */
void dp_open_queue(struct dp_lcore *lc, const struct dp_state *st, struct rte_mbuf *m,
		   uint16_t port, size_t plen);

/**
 * Run the opening ring: decrypt what was queued (CPU crypto), or hand it to the device
 * and take back what it finished; then retire the done frames from the ring's head, in
 * the order received, up to the first the device still holds. Each that verified, holds a
 * packet of its key's job, epoch and sender and is still fresh for the replay window
 * becomes the plain frame (seal header and tag removed, lengths updated, marked
 * RTE_MBUF_F_RX_SEC_OFFLOAD) in lc->opened[], for the caller to take on (rx.c); the
 * others are dropped and counted (bad_tag, unknown_key, replay; crypto_failed).
 * @return  The number of plain frames in lc->opened[].
 */
uint16_t dp_open_flush(struct dp_lcore *lc);

/**
 * Seal the frame m (Ethernet to payload, one or more segments; consumed) for the protected
 * link k of job j into a fresh frame of the seal pool, with the lcore's next sequence
 * number of k, and queue its encryption in the lcore's sealing ring; once done it is
 * staged for TX on port (dp_seal_flush()). Frames leave in the order they were sealed in:
 * pacers seal what they release (fastpath/pace.c), so that the receiver's replay window
 * sees sequence numbers in order. A ring with a burst prepared, or full, is flushed
 * first; still full, the frame is dropped (crypto_full). Counted; nothing sent if a pool
 * is empty.
 */
void dp_seal_queue(struct dp_lcore *lc, const struct dp_job *j, const struct dp_seal *k,
		   struct rte_mbuf *m, uint16_t port);

/** Run the sealing ring (as dp_open_flush()) and stage its done frames for TX, in order. */
void dp_seal_flush(struct dp_lcore *lc);

/** Whether the lcore's opening (seal false) or sealing ring is full. */
bool dp_crypto_ring_full(const struct dp_lcore *lc, bool seal);

/** Frames in the lcore's two rings: prepared, in the device or done and not yet retired. */
uint32_t dp_crypto_pending(const struct dp_lcore *lc);

/** The RCU token the oldest frame in the rings was queued under (its loop iteration's
 * first read of it; the frame may refer to any state published before); 0: none. */
uint64_t dp_crypto_oldest_token(const struct dp_lcore *lc);

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
