/* SPDX-License-Identifier: BSD-3-Clause
 *
 * The parts of table_validate() (table.h) that its two files share: table_check.c (the
 * gateways, workers, trees, ranges, shards and seals) and table_check_mcast.c (the
 * multicast streams). Not part of the table API.
 */
#ifndef GEOREDUCE_TABLE_CHECK_H
#define GEOREDUCE_TABLE_CHECK_H

#include <stddef.h>

#include "table.h"

/** A gateway entry at path (for the error): 0, or -EINVAL after a one-line error. */
int table_check_gw(const struct table_gw *g, const char *path, char *err, size_t errlen);

/** A worker entry at path: 0, or -EINVAL after a one-line error. */
int table_check_worker(const struct table_worker *w, const char *path, char *err, size_t errlen);

/** Every multicast stream of tb: 0, or -EINVAL after a one-line error. */
int table_check_streams(const struct table *tb, char *err, size_t errlen);

#endif
