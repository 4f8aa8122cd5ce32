/* SPDX-License-Identifier: BSD-3-Clause
 *
 * The daemon's Prometheus metrics (metrics.h): the endpoint, and the exposition of its
 * jobs, live plans, gateways and links. On the daemon's thread. No DPDK.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>

#include "clock.h"
#include "daemon_internal.h"
#include "metrics.h"
#include "prom.h"
#include "promsrv.h"
#include "shares.h"

#define M(name) "georeduce_control_" name
#define GBPS_BYTES(g) ((g)*1e9 / 8) /* Gbit/s in bytes per second, the metrics' unit */

static void
fmt_u(char *b, size_t n, uint64_t v)
{
	snprintf(b, n, "%llu", (unsigned long long)v);
}

/* A link's label: "a-b" by the topology's node ids (truncated names are still unique
 * enough for a label, and the deployment limits ids to DEPLOY_NAME_MAX). */
static void
link_label(const struct dmn *m, int l, char *b, size_t n)
{
	const struct topo *t = m->d->topo;
	int k = snprintf(b, n, "%s-%s", node_id(m, t->links[l].a), node_id(m, t->links[l].b));

	if (k < 0 || (size_t)k >= n)
		b[n - 1] = '\0';
}

static void
metrics_jobs(const struct dmn *m, struct prom *p)
{
	char job[12], epoch[12], tree[12];
	struct prom_label l[4] = {{"job", job}, {"epoch", epoch}};
	int nj = m->d->n_jobs;

	prom_family(p, M("jobs"), PROM_GAUGE, "Jobs of the deployment");
	prom_sample_u64(p, NULL, 0, (uint64_t)nj);
	prom_family(p, M("job_info"), PROM_GAUGE, "A job's algorithm and element type (always 1)");
	for (int i = 0; i < nj; i++) {
		struct prom_label il[] = {{"job", job},
					  {"algorithm", deploy_algo_name(m->d->jobs[i].algo)},
					  {"dtype", table_dtype_name(m->d->jobs[i].dtype)}};

		fmt_u(job, sizeof(job), m->d->jobs[i].id);
		prom_sample(p, il, 3, 1);
	}
	prom_family(p, M("job_live"), PROM_GAUGE, "1 if the job has a live epoch");
	for (int i = 0; i < nj; i++) {
		fmt_u(job, sizeof(job), m->d->jobs[i].id);
		prom_sample(p, l, 1, m->jobs[i].live != NULL);
	}
	prom_family(p, M("job_epoch"), PROM_GAUGE, "The job's live epoch (0: none)");
	for (int i = 0; i < nj; i++) {
		fmt_u(job, sizeof(job), m->d->jobs[i].id);
		prom_sample_u64(p, l, 1, m->jobs[i].live != NULL ? m->jobs[i].live_epoch : 0);
	}
	prom_family(p, M("job_replanning"), PROM_GAUGE,
		    "1 while a new epoch of the job is due (or waits for a retry)");
	for (int i = 0; i < nj; i++) {
		fmt_u(job, sizeof(job), m->d->jobs[i].id);
		prom_sample(p, l, 1, m->jobs[i].dirty || m->jobs[i].retry_in > 0);
	}
	prom_family(p, M("epochs_total"), PROM_COUNTER,
		    "Epochs of the job that went live (or were taken over at start)");
	for (int i = 0; i < nj; i++) {
		fmt_u(job, sizeof(job), m->d->jobs[i].id);
		prom_sample_u64(p, l, 1, m->jobs[i].epochs);
	}
	prom_family(p, M("replans_total"), PROM_COUNTER,
		    "Epochs planned for the job, by cause (the first plan's cause is start)");
	for (int i = 0; i < nj; i++) {
		struct prom_label cl[] = {{"job", job}, {"cause", NULL}};

		fmt_u(job, sizeof(job), m->d->jobs[i].id);
		for (int c = 0; c < CAUSE_COUNT; c++) {
			cl[1].value = cause_names[c];
			prom_sample_u64(p, cl, 2, m->jobs[i].replans[c]);
		}
	}
	static const char *const held_m[][2] = {
		{M("replans_held_total"), "Re-plans of the job held back by the hysteresis or the "
					  "budget, by cause (each counted once, when first held)"},
		{M("replans_unchanged_total"), "Re-plans of the job that came out as the live "
					       "epoch's tables (no new epoch), by cause"},
	};
	for (int k = 0; k < 2; k++) {
		prom_family(p, held_m[k][0], PROM_COUNTER, held_m[k][1]);
		for (int i = 0; i < nj; i++) {
			struct prom_label cl[] = {{"job", job}, {"cause", NULL}};

			fmt_u(job, sizeof(job), m->d->jobs[i].id);
			for (int c = 0; c < CAUSE_COUNT; c++) {
				cl[1].value = cause_names[c];
				prom_sample_u64(p, cl, 2,
						k == 0 ? m->jobs[i].held[c] :
							 m->jobs[i].unchanged[c]);
			}
		}
	}
	prom_family(p, M("plan_failures_total"), PROM_COUNTER,
		    "Plans of the job that gave no epoch (nothing to plan over, solver failure)");
	for (int i = 0; i < nj; i++) {
		fmt_u(job, sizeof(job), m->d->jobs[i].id);
		prom_sample_u64(p, l, 1, m->jobs[i].plan_failures);
	}

	/* The live plans: rate, bound, prediction, and per tree planned against measured. */
	static const char *const plan_m[][2] = {
		{M("plan_rate_bytes_per_second"), "The live plan's aggregate rate"},
		{M("plan_bound_bytes_per_second"),
		 "The packing bound over the topology the live plan was made on"},
		{M("plan_bound_ratio"), "The live plan's rate as a fraction of the packing bound"},
		{M("plan_predicted_seconds"), "The live plan's predicted AllReduce time"},
	};
	for (size_t k = 0; k < sizeof(plan_m) / sizeof(plan_m[0]); k++) {
		prom_family(p, plan_m[k][0], PROM_GAUGE, plan_m[k][1]);
		for (int i = 0; i < nj; i++) {
			const struct jobplan *jp = m->jobs[i].live;
			double rate, b;

			if (jp == NULL)
				continue;
			fmt_u(job, sizeof(job), m->d->jobs[i].id);
			fmt_u(epoch, sizeof(epoch), m->jobs[i].live_epoch);
			rate = plan_total_rate(jp->plan);
			b = jp->bound_gbps;
			if (k == 0)
				prom_sample(p, l, 2, GBPS_BYTES(rate));
			else if (k == 1 && b > 0)
				prom_sample(p, l, 2, GBPS_BYTES(b));
			else if (k == 2 && b > 0)
				prom_sample(p, l, 2, rate / b);
			else if (k == 3)
				prom_sample(p, l, 2, jp->plan->allreduce_seconds);
		}
	}
	for (int k = 0; k < 2; k++) {
		prom_family(p,
			    k == 0 ? M("tree_planned_bytes_per_second") :
				     M("tree_measured_bytes_per_second"),
			    PROM_GAUGE,
			    k == 0 ? "A live tree's planned rate" :
				     "A live tree's rate over the last heartbeat, the mean over "
				     "its link directions");
		for (int i = 0; i < nj; i++) {
			const struct job *j = &m->jobs[i];
			const struct jobplan *jp = j->live;

			for (int t = 0; jp != NULL && t < jp->plan->n_trees; t++) {
				struct prom_label tl[] = {
					{"job", job},
					{"epoch", epoch},
					{"tree", tree},
					{"root", jp->topo->nodes[jp->plan->trees[t].root].id}};

				fmt_u(job, sizeof(job), m->d->jobs[i].id);
				fmt_u(epoch, sizeof(epoch), j->live_epoch);
				fmt_u(tree, sizeof(tree), (uint64_t)t);
				if (k == 0)
					prom_sample(p, tl, 4,
						    GBPS_BYTES(jp->plan->trees[t].rate_gbps));
				else if (t < j->n_rates && j->rates[t].gbps >= 0)
					prom_sample(p, tl, 4, GBPS_BYTES(j->rates[t].gbps));
			}
		}
	}
}

static void
metrics_gateways(const struct dmn *m, struct prom *p)
{
	int64_t t = clock_now_ms();
	static const char *const gw_m[][3] = {
		{M("gateway_up"), "g", "1 if the gateway answers its heartbeats"},
		{M("gateway_heartbeats_missed"), "g", "Heartbeats the gateway missed in a row"},
		{M("gateway_heartbeat_round_trip_seconds"), "g", "Round trip of the last ping"},
		{M("gateway_since_heartbeat_seconds"), "g",
		 "Time since the last heartbeat answered"},
		{M("gateway_rx_bytes_per_second"), "g",
		 "What the gateway received over the last heartbeat"},
		{M("gateway_tx_bytes_per_second"), "g",
		 "What the gateway sent over the last heartbeat"},
	};
	int up = 0;

	for (int v = 0; v < m->d->n_gateways; v++)
		up += m->gws[v].state == GW_UP;
	prom_family(p, M("gateways"), PROM_GAUGE, "Gateways of the deployment");
	prom_sample_u64(p, NULL, 0, (uint64_t)m->d->n_gateways);
	prom_family(p, M("gateways_up"), PROM_GAUGE, "Gateways that answer their heartbeats");
	prom_sample_u64(p, NULL, 0, (uint64_t)up);
	for (size_t k = 0; k < sizeof(gw_m) / sizeof(gw_m[0]); k++) {
		prom_family(p, gw_m[k][0], PROM_GAUGE, gw_m[k][2]);
		for (int v = 0; v < m->d->n_gateways; v++) {
			const struct gw *g = &m->gws[v];
			struct prom_label gl[] = {{"gateway", gw_name(m, v)},
						  {"site", node_id(m, m->d->gateways[v].node)}};

			if (k == 0)
				prom_sample(p, gl, 2, g->state == GW_UP);
			else if (k == 1)
				prom_sample_u64(p, gl, 2, (uint64_t)g->missed);
			else if (k == 2 && g->last_ok >= 0)
				prom_sample(p, gl, 2, g->rtt_ms / 1e3);
			else if (k == 3 && g->last_ok >= 0)
				prom_sample(p, gl, 2, (double)(t - g->last_ok) / 1e3);
			else if (k == 4 && g->rx_gbps >= 0)
				prom_sample(p, gl, 2, GBPS_BYTES(g->rx_gbps));
			else if (k == 5 && g->tx_gbps >= 0)
				prom_sample(p, gl, 2, GBPS_BYTES(g->tx_gbps));
		}
	}
}

static void
metrics_links(const struct dmn *m, struct prom *p)
{
	const struct topo *tp = m->d->topo;
	char link[2 * DEPLOY_NAME_MAX + 2];
	struct prom_label ll = {"link", link};
	int up = 0;
	static const char *const dir_m[][2] = {
		{M("link_planned_bytes_per_second"),
		 "What the live trees and streams on the link direction are planned to carry"},
		{M("link_measured_bytes_per_second"),
		 "What the sender handed to the link direction over the last heartbeat"},
		{M("link_capacity_bytes_per_second"),
		 "The capacity plans use for the link direction (topology's or measured)"},
		{M("link_round_trip_seconds"),
		 "The sender's last probe round trip to the other end"},
		{M("link_capacity_measured"),
		 "1 while plans use a measured capacity below the topology's"},
	};

	for (int l = 0; l < tp->n_links; l++)
		up += m->link[l].up;
	prom_family(p, M("links"), PROM_GAUGE, "Links of the topology");
	prom_sample_u64(p, NULL, 0, (uint64_t)tp->n_links);
	prom_family(p, M("links_up"), PROM_GAUGE, "Links that plans may use");
	prom_sample_u64(p, NULL, 0, (uint64_t)up);
	prom_family(p, M("link_up"), PROM_GAUGE, "1 if plans may use the link");
	for (int l = 0; l < tp->n_links; l++) {
		link_label(m, l, link, sizeof(link));
		prom_sample(p, &ll, 1, m->link[l].up);
	}
	for (size_t k = 0; k < sizeof(dir_m) / sizeof(dir_m[0]); k++) {
		prom_family(p, dir_m[k][0], PROM_GAUGE, dir_m[k][1]);
		for (int l = 0; l < tp->n_links; l++)
			for (int d = 0; d < 2; d++) {
				const struct lrate *r = &m->lr[2 * l + d];
				int v = d == 0 ? tp->links[l].a : tp->links[l].b;
				int u = d == 0 ? tp->links[l].b : tp->links[l].a;
				double nominal =
					d == 0 ? tp->links[l].gbps_ab : tp->links[l].gbps_ba;
				struct prom_label dl[] = {{"link", link},
							  {"from", node_id(m, v)},
							  {"to", node_id(m, u)}};

				link_label(m, l, link, sizeof(link));
				if (k == 0)
					prom_sample(p, dl, 3,
						    GBPS_BYTES(r->at >= 0 ? r->planned_gbps : 0.0));
				else if (k == 1 && r->gbps >= 0)
					prom_sample(p, dl, 3, GBPS_BYTES(r->gbps));
				else if (k == 2)
					prom_sample(p, dl, 3,
						    GBPS_BYTES(r->measured_gbps > 0 ?
								       r->measured_gbps :
								       nominal));
				else if (k == 3 && r->rtt_ms > 0)
					prom_sample(p, dl, 3, r->rtt_ms / 1e3);
				else if (k == 4)
					prom_sample(p, dl, 3, r->measured_gbps > 0);
			}
	}
}

/* Per job: its weight, and its share of each link direction against what its live plan
 * loads it with (shares.h). */
static void
metrics_shares(const struct dmn *m, struct prom *p)
{
	const struct topo *tp = m->d->topo;
	char job[12], link[2 * DEPLOY_NAME_MAX + 2];
	struct prom_label jl = {"job", job};
	double *load = calloc(2 * (size_t)tp->n_links + 1, sizeof(*load));

	prom_family(p, M("job_weight"), PROM_GAUGE,
		    "The job's weight in the links' capacity against the other jobs");
	for (int i = 0; i < m->d->n_jobs; i++) {
		fmt_u(job, sizeof(job), m->d->jobs[i].id);
		prom_sample(p, &jl, 1, m->d->jobs[i].weight);
	}
	prom_family(p, M("job_running"), PROM_GAUGE,
		    "1 while the job's rounds go through the gateways (it shares the links "
		    "with the other jobs that run), 0 once idle for --idle-ms");
	for (int i = 0; i < m->d->n_jobs; i++) {
		fmt_u(job, sizeof(job), m->d->jobs[i].id);
		prom_sample(p, &jl, 1, m->jobs[i].running ? 1 : 0);
	}
	for (int k = 0; k < 2 && load != NULL; k++) {
		prom_family(p,
			    k == 0 ? M("job_link_share_bytes_per_second") :
				     M("job_link_planned_bytes_per_second"),
			    PROM_GAUGE,
			    k == 0 ? "The job's share of the link direction's capacity" :
				     "What the job's live plan loads the link direction with");
		for (int i = 0; i < m->d->n_jobs; i++) {
			const struct job *j = &m->jobs[i];

			fmt_u(job, sizeof(job), m->d->jobs[i].id);
			shares_plan_loads(j->live, tp, load);
			for (int l = 0; l < 2 * tp->n_links; l++) {
				const struct topo_link *t = &tp->links[l / 2];
				double v = k == 0 ? (j->share != NULL ? j->share[l] : 0) : load[l];
				struct prom_label dl[] = {
					{"job", job},
					{"link", link},
					{"from", node_id(m, l % 2 == 0 ? t->a : t->b)},
					{"to", node_id(m, l % 2 == 0 ? t->b : t->a)}};

				link_label(m, l / 2, link, sizeof(link));
				if (v > 0)
					prom_sample(p, dl, 4, GBPS_BYTES(v));
			}
		}
	}
	free(load);
}

/* The exposition, rendered on the daemon's thread when a scrape comes (promsrv_run()). */
static char *
metrics_render(void *arg, size_t *len)
{
	const struct dmn *m = arg;
	struct prom p;
	char *text;
	int err = 0;

	prom_init(&p);
	prom_family(&p, M("uptime_seconds"), PROM_GAUGE, "Time since the daemon started");
	prom_sample(&p, NULL, 0, (double)(clock_now_ms() - m->started) / 1e3);
	prom_family(&p, M("heartbeats_total"), PROM_COUNTER,
		    "Rounds of heartbeats to the gateways");
	prom_sample_u64(&p, NULL, 0, m->heartbeats);
	metrics_jobs(m, &p);
	metrics_gateways(m, &p);
	metrics_links(m, &p);
	metrics_shares(m, &p);
	promsrv_prom(m->msrv, &p, M(""));
	text = prom_finish(&p, len, &err);
	if (text == NULL)
		control_log("metrics: %s", p.why);
	prom_free(&p);
	return text;
}

static void
metrics_log(void *arg, const char *line)
{
	(void)arg;
	control_log("metrics: %s", line);
}

int
metrics_setup(struct dmn *m)
{
	struct promsrv_opts mo = {
		.listen = m->o->metrics,
		.render = metrics_render,
		.arg = m,
		.log = metrics_log,
	};
	struct epoll_event ev = {.events = EPOLLIN};
	char err[256];
	int rc;

	if (m->o->metrics == NULL)
		return 0;
	m->msrv = promsrv_create(&mo, err, sizeof(err));
	if (m->msrv == NULL) {
		control_log("cannot start: %s", err);
		return -EADDRINUSE;
	}
	m->wfd = epoll_create1(EPOLL_CLOEXEC);
	if (m->wfd < 0 || epoll_ctl(m->wfd, EPOLL_CTL_ADD, m->sfd, &ev) != 0 ||
	    epoll_ctl(m->wfd, EPOLL_CTL_ADD, promsrv_fd(m->msrv), &ev) != 0) {
		rc = -errno;
		control_log("cannot start: metrics: epoll: %s", strerror(-rc));
		return rc;
	}
	control_log("metrics on http://%s/metrics", m->o->metrics);
	return 0;
}
