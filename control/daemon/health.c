/* SPDX-License-Identifier: BSD-3-Clause
 *
 * Heartbeats, gateways and links up and down, and what the gateways' probes to each other
 * tell (health.h). On the daemon's thread. No DPDK.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include <jansson.h>

#include "clock.h"
#include "daemon_internal.h"
#include "elect.h"
#include "health.h"
#include "revision.h"
#include "shares.h"

/* ---- heartbeats ---------------------------------------------------------------------- */

/* Sum of an integer field over the objects of array arr. */
static uint64_t
sum_field(const json_t *arr, const char *key)
{
	uint64_t s = 0;
	size_t i;
	json_t *o;

	json_array_foreach (arr, i, o) {
		json_t *v = json_object_get(o, key);

		if (json_is_integer(v) && json_integer_value(v) > 0)
			s += (uint64_t)json_integer_value(v);
	}
	return s;
}

/* The drops of g's lcores: in all, per second since the previous sample, by reason. */
static void
drops_sample(struct gw *g, const json_t *lc, int64_t t)
{
	uint64_t n = sum_field(lc, "dropped");
	json_t *by = json_object(), *o, *v;
	const char *reason;
	size_t i;

	g->drops_per_s = g->sample_at >= 0 && t > g->sample_at && n >= g->dropped ?
				 (double)(n - g->dropped) * 1e3 / (double)(t - g->sample_at) :
				 -1;
	g->dropped = n;
	json_array_foreach (lc, i, o)
		json_object_foreach (json_object_get(o, "drops"), reason, v) {
			json_int_t had = json_integer_value(json_object_get(by, reason));

			if (json_is_integer(v) && json_integer_value(v) > 0)
				json_object_set_new(by, reason,
						    json_integer(had + json_integer_value(v)));
		}
	json_decref(g->drops);
	g->drops = by;
}

/* Read the counters of a stats response into g (rates from the previous sample). */
static void
take_sample(struct gw *g, const json_t *st, int64_t t)
{
	const json_t *lc = json_object_get(st, "lcores");
	uint64_t rx = sum_field(lc, "rx_bytes"), tx = sum_field(lc, "tx_bytes");

	if (g->sample_at >= 0 && t > g->sample_at && rx >= g->rx_bytes && tx >= g->tx_bytes) {
		double s = (double)(t - g->sample_at) / 1e3;

		g->rx_gbps = (double)(rx - g->rx_bytes) * 8 / s / 1e9;
		g->tx_gbps = (double)(tx - g->tx_bytes) * 8 / s / 1e9;
	} else {
		g->rx_gbps = g->tx_gbps = -1;
	}
	g->rx_bytes = rx;
	g->tx_bytes = tx;
	g->chunks = sum_field(lc, "chunks_completed");
	drops_sample(g, lc, t);
	g->sample_at = t;
	json_decref(g->peers);
	g->peers = json_incref(json_object_get(st, "peers"));
	json_decref(g->jobs);
	g->jobs = json_incref(json_object_get(st, "jobs"));
	g->peers_age_ms = json_integer_value(json_object_get(st, "peers_age_ms"));
}

/* Ping and read the stats of gateway g. True if it answered; *gone if its socket is gone. */
static bool
heartbeat(struct dmn *m, struct gw *g, bool *gone)
{
	struct timespec t0, t1;
	json_t *r;

	g->fresh = false;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	r = install_call(&g->conn, "ping", NULL, m->o->timeout_ms, g->error, sizeof(g->error));
	/* A connection that broke (the peer closed or reset it) is tried again at once on a
	 * new one: a dataplane that is gone then refuses, and is seen down now rather than
	 * at the next heartbeat. */
	if (r == NULL && (errno == EPIPE || errno == ECONNRESET || errno == EPROTO)) {
		clock_gettime(CLOCK_MONOTONIC, &t0);
		r = install_call(&g->conn, "ping", NULL, m->o->timeout_ms, g->error,
				 sizeof(g->error));
	}
	clock_gettime(CLOCK_MONOTONIC, &t1);
	*gone = false;
	if (r == NULL) {
		*gone = errno == ENOENT || errno == ECONNREFUSED;
		g->missed++;
		return false;
	}
	json_decref(r);
	g->rtt_ms = (double)(t1.tv_sec - t0.tv_sec) * 1e3 + (double)(t1.tv_nsec - t0.tv_nsec) / 1e6;
	g->missed = 0;
	g->last_ok = clock_now_ms();
	r = install_call(&g->conn, "stats", NULL, m->o->timeout_ms, g->error, sizeof(g->error));
	if (r != NULL && json_is_true(json_object_get(r, "ok"))) {
		json_t *before = json_incref(g->jobs);

		take_sample(g, r, clock_now_ms());
		shares_traffic(m, before, g->jobs, g->last_ok);
		json_decref(before);
		g->fresh = true;
	}
	json_decref(r);
	return true;
}

void
gateway_sync_job(struct dmn *m, int v, int i)
{
	struct job *j = &m->jobs[i];
	char err[CTL_ERR_MAX];
	json_t *r = install_call(&m->gws[v].conn, "dump",
				 json_pack("{s:I}", "job", (json_int_t)m->d->jobs[i].id),
				 m->o->timeout_ms, err, sizeof(err));
	json_t *item;
	size_t k;

	json_decref(m->gws[v].live[i]);
	m->gws[v].live[i] = NULL;
	json_array_foreach (json_object_get(r, "tables"), k, item) {
		json_t *tb = json_object_get(item, "table");
		json_t *e = json_object_get(json_is_object(tb) ? tb : item, "epoch");
		const char *st = json_string_value(json_object_get(item, "state"));

		/* The whole item: its table and the links it seals (no keys). */
		if (st != NULL && strcmp(st, "live") == 0 && json_is_object(tb)) {
			json_decref(m->gws[v].live[i]);
			m->gws[v].live[i] = json_incref(item);
		}

		if (json_is_integer(e) && json_integer_value(e) >= j->next_epoch &&
		    json_integer_value(e) < UINT32_MAX)
			j->next_epoch = (uint32_t)json_integer_value(e) + 1;
	}
	json_decref(r);
}

/* Raise every job's next epoch above what gateway v holds (live, draining or staged), so
 * that a restarted daemon never offers an epoch the dataplane has seen; keep the live
 * tables, which a restarted daemon may take over (adopt()). */
static void
sync_epochs(struct dmn *m, int v)
{
	for (int i = 0; i < m->d->n_jobs; i++)
		gateway_sync_job(m, v, i);
}

void
gateway_down(struct dmn *m, int v, const char *why)
{
	struct gw *g = &m->gws[v];
	bool was_up = g->state == GW_UP;

	g->state = GW_DOWN;
	install_gw_close(&g->conn);
	control_log("gateway %s (id %u, %s) is down: %s", gw_name(m, v), m->d->gateways[v].id,
		    g->conn.socket, why);
	if (was_up)
		mark_all_dirty(m, CAUSE_GATEWAY_DOWN, "gateway %s failed", gw_name(m, v));
}

/* Tell gateway v's dataplane to probe the gateways of its topology neighbours (every
 * gateway of each neighbouring site). */
static void
send_peers(struct dmn *m, int v)
{
	const struct topo *t = m->d->topo;
	json_t *arr = json_array(), *r;
	int nv = m->d->gateways[v].node;
	char ip[16];

	for (int l = 0; l < t->n_links; l++) {
		int u = t->links[l].a == nv ? t->links[l].b :
			t->links[l].b == nv ? t->links[l].a :
					      -1;

		if (u < 0)
			continue;
		NODE_GWS(m, u, h)
		json_array_append_new(arr, json_pack("{s:s,s:i,s:i}", "ipv4",
						     table_ipv4_format(m->d->gateways[h].ipv4, ip),
						     "base_port", m->d->gateways[h].base_port,
						     "ports", m->d->gateways[h].ports));
	}
	r = install_call(&m->gws[v].conn, "peers", json_pack("{s:o}", "peers", arr),
			 m->o->timeout_ms, m->gws[v].error, sizeof(m->gws[v].error));
	m->gws[v].peers_sent = r != NULL && json_is_true(json_object_get(r, "ok"));
	if (!m->gws[v].peers_sent)
		control_log("gateway %s: cannot set its probe peers: %s", gw_name(m, v),
			    r != NULL ? json_string_value(json_object_get(r, "error")) :
					m->gws[v].error);
	json_decref(r);
}

bool
node_up(const struct dmn *m, int v)
{
	NODE_GWS(m, v, g)
	if (m->gws[g].state == GW_UP)
		return true;
	return false;
}

/* ---- probes -------------------------------------------------------------------------- */

/* What gateway v's last stats said of its probes to gateway u (linkwatch.h): since_ms -1
 * if u never answered v since v started probing it, or is not a probe peer of v (no
 * evidence either way: the path may not carry probes at all, as on test ports without a
 * wire); unanswered -1 from a dataplane that does not say. */
static struct lw_probe
probe_report(const struct dmn *m, int v, int u)
{
	const struct gw *g = &m->gws[v], *h = &m->gws[u];
	struct lw_probe p = {
		.fresh = g->fresh && h->fresh,
		.since_ms = -1,
		.unanswered = -1,
		.rtt_ms = -1,
		.ping_ms = fmax(g->rtt_ms, h->rtt_ms),
	};
	char ip[16];
	size_t i;
	json_t *o;

	table_ipv4_format(m->d->gateways[u].ipv4, ip);
	json_array_foreach (g->peers, i, o) {
		const char *pip = json_string_value(json_object_get(o, "ipv4"));
		json_t *un = json_object_get(o, "unanswered"), *s = json_object_get(o, "since_ms");

		if (pip == NULL || strcmp(pip, ip) != 0)
			continue;
		if (json_is_integer(un))
			p.unanswered = json_integer_value(un);
		if (json_is_integer(s))
			p.since_ms = json_integer_value(s);
		if (json_integer_value(json_object_get(o, "replies")) > 0)
			p.rtt_ms = json_number_value(json_object_get(o, "rtt_ms"));
		break;
	}
	return p;
}

/* Gateway v's last probe round trip to gateway u in ms; -1 if it has none. */
static double
gw_probe_rtt_ms(const struct dmn *m, int v, int u)
{
	char ip[16];
	size_t i;
	json_t *p;

	table_ipv4_format(m->d->gateways[u].ipv4, ip);
	json_array_foreach (m->gws[v].peers, i, p) {
		const char *pip = json_string_value(json_object_get(p, "ipv4"));

		if (pip != NULL && strcmp(pip, ip) == 0 &&
		    json_integer_value(json_object_get(p, "replies")) > 0)
			return json_number_value(json_object_get(p, "rtt_ms"));
	}
	return -1;
}

double
probe_rtt_ms(const struct dmn *m, int v, int u)
{
	NODE_GWS(m, v, g)
	{
		if (m->gws[g].state != GW_UP)
			continue;
		NODE_GWS(m, u, h)
		{
			double r = gw_probe_rtt_ms(m, g, h);

			if (r >= 0)
				return r;
		}
	}
	return -1;
}

/* ---- gateways and links up and down -------------------------------------------------- */

void
links_update(struct dmn *m)
{
	const struct topo *t = m->d->topo;
	const struct lw_cfg c = {.heartbeat_ms = m->o->heartbeat_ms,
				 .fail_after = m->o->fail_after};
	struct lw_wan wan = {0};
	bool starved;

	for (int l = 0; l < t->n_links; l++) {
		m->lr[2 * l].beat = (struct lw_beat){0};
		/* Every pair of their gateways that answered this heartbeat. */
		NODE_GWS(m, t->links[l].a, x)
		{
			if (m->gws[x].state != GW_UP)
				continue;
			NODE_GWS(m, t->links[l].b, y)
			{
				struct lw_probe xy = probe_report(m, x, y),
						yx = probe_report(m, y, x);

				if (m->gws[y].state == GW_UP)
					lw_beat_add(&m->lr[2 * l].beat, &c, m->late_ms, &xy, &yx);
			}
		}
	}
	for (int l = 0; l < t->n_links; l++)
		lw_wan_add(&wan, &m->lr[2 * l].beat);
	starved = lw_host_starved(&wan);
	if (starved && !m->starved_logged)
		control_log("every link with a fresh report is quiet at once: the host is starved, "
			    "not the WAN; no link is taken for down while it lasts");
	m->starved_logged = starved;
	for (int l = 0; l < t->n_links && !starved; l++) {
		int a = t->links[l].a, b = t->links[l].b;

		switch (lw_step(&m->lr[2 * l].watch, m->link[l].up, &m->lr[2 * l].beat, &c)) {
		case LW_DOWN:
			m->link[l].up = false;
			control_log("link %s-%s is down: no probe answered for %lld ms "
				    "(%d heartbeats in a row; lateness allowed %lld ms)",
				    node_id(m, a), node_id(m, b),
				    (long long)m->lr[2 * l].beat.silence_ms, LW_CONFIRM_BEATS,
				    (long long)m->late_ms);
			mark_all_dirty(m, CAUSE_LINK_DOWN, "link %s-%s failed", node_id(m, a),
				       node_id(m, b));
			break;
		case LW_UP:
			m->link[l].up = true;
			control_log("link %s-%s is up again", node_id(m, a), node_id(m, b));
			mark_all_dirty(m, CAUSE_LINK_UP, "link %s-%s is back", node_id(m, a),
				       node_id(m, b));
			break;
		case LW_SAME:
			break;
		}
	}
}

/* Ask gateway v, just seen up, which protocol revision it implements (docs/PROTOCOL.md
 * section 12) and record it: 0 for an older gateway, whose answer has none (planned as
 * REVISION_OLDEST), or one that does not answer now. Its jobs' next plans take it
 * (jobplan.c); a gateway that restarted with another binary is re-planned anyway. */
static void
ask_revision(struct dmn *m, int v)
{
	struct deploy_gateway *dg = &m->d->gateways[v];
	char err[CTL_ERR_MAX];
	json_t *r = install_call(&m->gws[v].conn, "version", json_object(), m->o->timeout_ms, err,
				 sizeof(err));
	json_int_t rev = json_integer_value(json_object_get(r, "revision"));
	bool ok = json_is_true(json_object_get(r, "ok"));

	dg->revision = ok && rev > 0 && rev <= UINT8_MAX ? (uint8_t)rev : 0;
	const char *why = r != NULL ? json_string_value(json_object_get(r, "error")) : err;

	if (!ok)
		control_log("gateway %s: `version` not answered (%s): planned as revision 1.%d",
			    gw_name(m, v), why != NULL ? why : "an error without a message",
			    REVISION_OLDEST);
	else if (dg->revision == 0)
		control_log("gateway %s answers `version` without a revision: older than 1.15, "
			    "planned as 1.%d",
			    gw_name(m, v), REVISION_OLDEST);
	else
		control_log("gateway %s implements protocol revision 1.%u", gw_name(m, v),
			    dg->revision);
	json_decref(r);
}

void
heartbeat_all(struct dmn *m)
{
	for (int v = 0; v < m->d->n_gateways; v++) {
		struct gw *g = &m->gws[v];
		char why[CTL_ERR_MAX + 64];
		bool gone;

		/* Gateways that time out can make a round last longer than the lease: a
		 * leader deposed meanwhile (its keepalive thread lost the lease) stops
		 * between them (elect.h). */
		elect_service(m);
		if (heartbeat(m, g, &gone)) {
			if (g->state != GW_UP) {
				control_log("gateway %s (id %u, %s) is up%s, ping %.1f ms",
					    gw_name(m, v), m->d->gateways[v].id, g->conn.socket,
					    g->state == GW_DOWN ? " again" : "", g->rtt_ms);
				/* From unknown (at start) the jobs are due anyway: installs
				 * wait until no gateway is unknown. */
				if (g->state == GW_DOWN)
					mark_all_dirty(m, CAUSE_GATEWAY_UP, "gateway %s is back",
						       gw_name(m, v));
				ask_revision(m, v);
				g->state = GW_UP;
				g->peers_sent = false;
				sync_epochs(m, v);
			}
			if (!g->peers_sent)
				send_peers(m, v);
			continue;
		}
		if (g->state == GW_DOWN)
			continue;
		if (gone || g->missed >= m->o->fail_after) {
			if (gone)
				snprintf(why, sizeof(why), "%s", g->error);
			else
				snprintf(why, sizeof(why), "missed %d heartbeats: %s", g->missed,
					 g->error);
			gateway_down(m, v, why);
		} else if (g->state == GW_UP) {
			control_log("gateway %s: heartbeat missed (%d of %d): %s", gw_name(m, v),
				    g->missed, m->o->fail_after, g->error);
		}
	}
}
