/* SPDX-License-Identifier: BSD-3-Clause
 *
 * The table compiler's protected links (table_seal_links(), declared in table_compile.h):
 * a fresh key and key id from getrandom(2) for each protected link between the gateways of
 * one job's epoch, into the `sealed` entries of both tables (docs/TABLES.md, "Protected
 * links"). Control side only: the control process, once an epoch's tables are compiled.
 * Keys are never logged and are wiped from the stack once copied into the tables.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <sys/random.h>

#include "jsonutil.h"
#include "table_compile.h"

/* n random bytes from the kernel's CSPRNG. */
static int
random_bytes(void *buf, size_t n)
{
	uint8_t *p = buf;

	while (n > 0) {
		ssize_t r = getrandom(p, n, 0);

		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return -EIO;
		p += r;
		n -= (size_t)r;
	}
	return 0;
}

/* Put sl into tb's sealed entries, which stay sorted by peer. */
static int
seal_insert(struct table *tb, const struct table_seal *sl)
{
	int k = tb->n_seals;

	if (k >= TABLE_SEALS_MAX)
		return -E2BIG;
	while (k > 0 && tb->seals[k - 1].peer > sl->peer) {
		tb->seals[k] = tb->seals[k - 1];
		k--;
	}
	tb->seals[k] = *sl;
	tb->n_seals++;
	return 0;
}

int
table_seal_links(struct table **tables, int n, const uint16_t *gw_ids,
		 bool (*is_protected)(void *arg, int u, int v), void *arg, enum table_aead aead,
		 char *err, size_t errlen)
{
	for (int u = 0; u < n; u++)
		for (int v = u + 1; tables[u] != NULL && v < n; v++) {
			struct table_seal sl = {.peer = gw_ids[v], .aead = aead};
			int rc = 0;

			if (tables[v] == NULL || !table_is_neighbour(tables[u], gw_ids[v]) ||
			    !table_is_neighbour(tables[v], gw_ids[u]) || !is_protected(arg, u, v))
				continue;
			while (rc == 0 && sl.key_id == 0)
				rc = random_bytes(&sl.key_id, sizeof(sl.key_id));
			if (rc == 0)
				rc = random_bytes(sl.key, table_aead_key_len(aead));
			if (rc != 0) {
				explicit_bzero(&sl, sizeof(sl));
				json_util_fail(err, errlen,
					       "no randomness for a link key "
					       "(getrandom: %s)",
					       strerror(errno));
				return -EIO;
			}
			rc = seal_insert(tables[u], &sl);
			sl.peer = gw_ids[u];
			if (rc == 0)
				rc = seal_insert(tables[v], &sl);
			explicit_bzero(&sl, sizeof(sl));
			if (rc != 0) {
				json_util_fail(err, errlen,
					       "more than %d protected links at one "
					       "gateway",
					       TABLE_SEALS_MAX);
				return rc;
			}
		}
	return 0;
}
