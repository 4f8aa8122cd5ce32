/* SPDX-License-Identifier: BSD-3-Clause
 *
 * georeduce-bench, port mode: the gateway's drop counters read over its control socket
 * (--gw-socket, the `stats` request of docs/CONTROL.md, as georeduce-dpctl stats sends
 * it), summed over its lcores by counter and reason, before and after a run. The main
 * lcore, outside the measurement.
 */
#include <stdint.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "ctlmsg.h"
#include "georeduce_bench.h"
#include "georeduce_bench_report.h"

#define GW_TIMEOUT_MS 5000

int
gw_snap(const char *path, uint64_t *why)
{
	char err[CTL_ERR_MAX];
	struct ctl_conn c;
	const json_t *lc;
	json_t *r;
	size_t i;
	int fd = ctl_connect(path, GW_TIMEOUT_MS);

	if (fd < 0)
		return -1;
	ctl_conn_init(&c, fd);
	r = ctl_conn_call(&c, "stats", NULL, GW_TIMEOUT_MS, err, sizeof(err));
	ctl_conn_fini(&c);
	if (r == NULL || !json_is_true(json_object_get(r, "ok"))) {
		json_decref(r);
		return -1;
	}
	memset(why, 0, GW_DROPS * sizeof(*why));
	json_array_foreach (json_object_get(r, "lcores"), i, lc) {
		const json_t *drops = json_object_get(lc, "drops");

		for (unsigned int k = 0; k < GW_DROPS; k++) {
			const json_t *v =
				json_object_get(k < GW_DROP_CTRS ? lc : drops, gw_drop_name(k));

			if (k != GW_DROP_CTRS && json_is_integer(v))
				why[k] += (uint64_t)json_integer_value(v);
		}
	}
	json_decref(r);
	return 0;
}

void
gw_mark(const struct opts *o, struct phase *p, bool after)
{
	if (o->gw_socket == NULL)
		return;
	if (!after) {
		p->gw_read = gw_snap(o->gw_socket, p->peer[0].why) == 0;
		return;
	}
	p->gw_read = p->gw_read && gw_snap(o->gw_socket, p->peer[1].why) == 0;
}
