/* SPDX-License-Identifier: BSD-3-Clause
 *
 * The revision of protocol version 1 that this build implements (docs/PROTOCOL.md section
 * 12): the dataplane and the control process answer it in their `version` op, the control
 * process plans each job within the oldest of its gateways, and a dataplane or worker
 * library told to act as an older revision (a test and upgrade aid) refuses what that
 * revision does not implement. Header only, any thread, no DPDK.
 */
#ifndef GEOREDUCE_REVISION_H
#define GEOREDUCE_REVISION_H

#include <stdint.h>

/** Revision 1.N of protocol version 1 that this build implements: N. */
#define GEOREDUCE_REVISION 16

/** The oldest revision the rules below know: a peer that answers `version` without a
 * revision is planned as this one, and the compatibility mode goes down to it. */
#define REVISION_OLDEST 13

/** The first revision whose `prepare` takes the job's `membership` (docs/CONTROL.md), by
 * which result recovery across epochs keeps one membership per round (docs/PROTOCOL.md
 * 10.1): the control process sends it only to gateways of this revision or later. */
#define REVISION_MEMBERSHIP 16

/** The first revision whose chunks may fill a 9000-byte IP MTU (8918 bytes with the
 * contributor set); older gateways and worker libraries take at most
 * REVISION_OLD_CHUNK_BYTES bytes of payload a chunk. */
#define REVISION_JUMBO_CHUNKS 14
#define REVISION_OLD_CHUNK_BYTES 8192

/** The revision a peer is planned as: what it answered, or REVISION_OLDEST for 0 (an
 * older peer whose answer has no revision, or one not asked yet). */
static inline unsigned int
revision_effective(unsigned int answered)
{
	return answered == 0 ? REVISION_OLDEST : answered;
}

/** The most payload bytes a chunk may have for a peer of revision `rev` (effective), given
 * this build's own cap `own`. */
static inline uint32_t
revision_chunk_bytes_max(unsigned int rev, uint32_t own)
{
	return rev < REVISION_JUMBO_CHUNKS && own > REVISION_OLD_CHUNK_BYTES ?
		       REVISION_OLD_CHUNK_BYTES :
		       own;
}

#endif
