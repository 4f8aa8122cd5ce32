/* SPDX-License-Identifier: BSD-3-Clause
 *
 * Fast path: sealed frames of protected links (docs/PROTOCOL.md section 14), AES-GCM on
 * the lcore's own cryptodev queue pair. Worker lcores only: no allocation except mbufs and
 * crypto operations from pools sized at start, no locks, no syscalls, no logging.
 */
#ifndef GEOREDUCE_FASTPATH_SEAL_H
#define GEOREDUCE_FASTPATH_SEAL_H

#include <stdbool.h>
#include <stddef.h>

#include <rte_mbuf.h>

#include "dp.h"

/* Whether the UDP payload at p (at least 2 bytes) is a sealed frame. */
static inline bool
dp_is_sealed(const uint8_t *p)
{
	return p[0] == DP_SEAL_MAGIC >> 8 && p[1] == (DP_SEAL_MAGIC & 0xff);
}

/**
 * Open the sealed frame m, whose UDP payload (*plen bytes, Ethernet padding trimmed) is a
 * sealed frame: find the key (job, key id, sender) among the installed epochs, check the
 * replay window, authenticate and decrypt in place, check that the packet inside is of
 * that job, epoch and sender, then turn m into the plain frame (the seal header and tag
 * removed, lengths updated, marked RTE_MBUF_F_RX_SEC_OFFLOAD) and set *plen to its UDP
 * payload. Returns WIRE_REASON_NONE, or the reason to drop m with (m not freed).
 */
enum wire_reason dp_open(struct dp_lcore *lc, const struct dp_state *st, struct rte_mbuf *m,
			 size_t *plen);

/**
 * The frame m (Ethernet to payload, one or more segments) sealed for the protected link
 * k of job j: a new frame from the lcore's seal pool. Consumes m. NULL if a pool was empty
 * or the cryptodev failed (counted).
 */
struct rte_mbuf *dp_seal(struct dp_lcore *lc, const struct dp_job *j, const struct dp_seal *k,
			 struct rte_mbuf *m);

#endif
