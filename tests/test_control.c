/* SPDX-License-Identifier: BSD-3-Clause
 *
 * georeduce-control without dataplanes: the two-phase install (control/daemon/install.c)
 * against fake gateways, threads that serve the control-socket protocol and can reject a
 * prepare, never answer one, or die after one; and job planning (control/daemon/jobplan.c
 * and jobplan_trees.c) on the example deployment, with a gateway down and with the ring as
 * chain trees; how the daemon reads a dataplane's per-link counters
 * (control/daemon/rates.c); and the re-planning hysteresis and budget
 * (control/daemon/hyst.c), fed sequences of measurements and re-plans; and when a link is
 * down or up again (control/daemon/linkwatch.c), fed sequences of probe reports.
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <CUnit/Basic.h>
#include <jansson.h>

#include "ctlmsg.h"
#include "daemon.h"
#include "deploy.h"
#include "hyst.h"
#include "install.h"
#include "jobplan.h"
#include "linkwatch.h"
#include "revision.h"
#include "shares.h"
#include "testutil.h"

#define EXAMPLE "examples/deployments/3site.json"
#define N_GW 3
#define OPS_MAX 16

enum behaviour {
	FAKE_OK,                 /* answer everything ok */
	FAKE_REJECT_PREPARE,     /* answer prepare with EINVAL */
	FAKE_SILENT_PREPARE,     /* never answer prepare */
	FAKE_DIE_AFTER_PREPARE,  /* answer prepare, then close everything and exit */
};

/* Every op any fake receives gets the next number: the global order of the calls. */
static atomic_int op_seq;

struct fake {
	char path[108];
	enum behaviour how;
	int lfd;
	atomic_bool stop;
	pthread_t th;
	int n_ops;               /* written by the fake's thread; read after the join */
	char ops[OPS_MAX][16];
	int seq[OPS_MAX];
	uint32_t epoch[OPS_MAX]; /* the table's or the activate's epoch */
	int64_t membership[OPS_MAX]; /* a prepare's `membership`, -1 without one */
};

/* The answer to req, or NULL for none; *die when the fake must exit after it. */
static json_t *
fake_answer(struct fake *f, const json_t *req, bool *die)
{
	char err[CTL_ERR_MAX];
	const char *op;
	uint32_t id;
	json_t *e;

	if (ctl_request_check(req, &id, &op, err, sizeof(err)) != 0)
		return ctl_reply_error(ctl_request_id(req, &id), id, EINVAL, "%s", err);
	if (f->n_ops < OPS_MAX) {
		snprintf(f->ops[f->n_ops], sizeof(f->ops[0]), "%s", op);
		f->seq[f->n_ops] = atomic_fetch_add(&op_seq, 1);
		e = strcmp(op, "prepare") == 0 ? json_object_get(json_object_get(req, "table"),
								 "epoch")
					       : json_object_get(req, "epoch");
		f->membership[f->n_ops] = json_object_get(req, "membership") == NULL ?
						  -1 :
						  json_integer_value(
							  json_object_get(req, "membership"));
		f->epoch[f->n_ops++] = (uint32_t)json_integer_value(e);
	}
	if (strcmp(op, "prepare") == 0) {
		if (f->how == FAKE_REJECT_PREPARE)
			return ctl_reply_error(true, id, EINVAL, "field 'table.trees[0].slots': "
					       "rejected by the test");
		if (f->how == FAKE_SILENT_PREPARE)
			return NULL;
		*die = f->how == FAKE_DIE_AFTER_PREPARE;
	}
	return ctl_reply_ok(id);
}

static void *
fake_main(void *arg)
{
	struct fake *f = arg;
	struct ctl_conn conns[4];
	int n = 0;
	bool die = false;

	while (!atomic_load(&f->stop) && !die) {
		struct pollfd pfd[5] = { { .fd = f->lfd, .events = POLLIN } };

		for (int i = 0; i < n; i++)
			pfd[i + 1] = (struct pollfd){ .fd = conns[i].fd, .events = POLLIN };
		if (poll(pfd, (nfds_t)n + 1, 20) <= 0)
			continue;
		for (int i = n - 1; i >= 0 && !die; i--) {
			char err[CTL_ERR_MAX];
			json_t *req, *resp;
			int rc;

			if (pfd[i + 1].revents == 0)
				continue;
			while ((rc = ctl_conn_read(&conns[i], &req, err, sizeof(err))) == 1) {
				resp = fake_answer(f, req, &die);
				json_decref(req);
				if (resp != NULL)
					ctl_send(conns[i].fd, resp);
				json_decref(resp);
			}
			if (rc < 0) {
				ctl_conn_fini(&conns[i]);
				conns[i] = conns[--n];
			}
		}
		if ((pfd[0].revents & POLLIN) && n < 4) {
			int fd = accept4(f->lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);

			if (fd >= 0)
				ctl_conn_init(&conns[n++], fd);
		}
	}
	for (int i = 0; i < n; i++)
		ctl_conn_fini(&conns[i]);
	close(f->lfd);
	unlink(f->path);
	return NULL;
}

static char dir[] = "/tmp/test_control.XXXXXX";

static void
fake_start(struct fake *f, int i, enum behaviour how)
{
	memset(f, 0, sizeof(*f));
	snprintf(f->path, sizeof(f->path), "%s/gw%d.sock", dir, i);
	f->how = how;
	f->lfd = ctl_listen(f->path);
	CU_ASSERT_FATAL(f->lfd >= 0);
	CU_ASSERT_FATAL(pthread_create(&f->th, NULL, fake_main, f) == 0);
}

static void
fake_stop(struct fake *f)
{
	atomic_store(&f->stop, true);
	pthread_join(f->th, NULL);
}

/* The example deployment's job 1 planned for epoch; freed by the caller. */
static struct jobplan *
plan_example(struct deploy **d, uint32_t epoch, const bool *up)
{
	char err[JOBPLAN_ERR_MAX];
	struct jobplan *jp = NULL;

	*d = deploy_load(EXAMPLE, err, sizeof(err));
	CU_ASSERT_PTR_NOT_NULL_FATAL(*d);
	CHECK(jobplan_build(*d, 0, up, NULL, epoch, &jp, err, sizeof(err)) == 0, "%s", err);
	CU_ASSERT_PTR_NOT_NULL_FATAL(jp);
	return jp;
}

struct run {
	struct fake fakes[N_GW];
	struct install_gw gws[N_GW];
	bool af[N_GW];
	uint32_t membership[N_GW]; /* `prepare`'s, 0: none */
	struct install_report rep;
	double seconds;
	int rc;
};

/* Install epoch 5 of job 1 on three fakes behaving as how[]. */
static void
run_install(struct run *r, const enum behaviour *how, int timeout_ms)
{
	struct deploy *d;
	struct jobplan *jp = plan_example(&d, 5, NULL);
	struct timespec t0, t1;

	for (int i = 0; i < N_GW; i++) {
		fake_start(&r->fakes[i], i, how[i]);
		install_gw_init(&r->gws[i], d->topo->nodes[i].id, r->fakes[i].path);
	}
	r->rep.activate_failed = r->af;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	r->rc = install_epoch(r->gws, jp->tables, r->membership, N_GW, 1, 5, timeout_ms, &r->rep);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	r->seconds = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
	for (int i = 0; i < N_GW; i++) {
		install_gw_close(&r->gws[i]);
		fake_stop(&r->fakes[i]);
	}
	jobplan_free(jp);
	deploy_free(d);
}

static int
count_op(const struct fake *f, const char *op)
{
	int n = 0;

	for (int i = 0; i < f->n_ops; i++)
		n += strcmp(f->ops[i], op) == 0;
	return n;
}

static void
test_install_all_ok(void)
{
	static const enum behaviour how[N_GW] = { FAKE_OK, FAKE_OK, FAKE_OK };
	struct run r = {.membership = {0, 7, UINT32_MAX}};
	int last_prepare = -1, first_activate = 1 << 30;

	run_install(&r, how, 2000);
	CHECK(r.rc == 0, "rc %d: %s", r.rc, r.rep.error);
	CHECK(r.rep.n_prepared == N_GW && r.rep.n_activated == N_GW && r.rep.failed == -1,
	      "report %d %d %d", r.rep.n_prepared, r.rep.n_activated, r.rep.failed);
	for (int i = 0; i < N_GW; i++) {
		const struct fake *f = &r.fakes[i];

		CHECK(f->n_ops == 2 && strcmp(f->ops[0], "prepare") == 0 &&
		      strcmp(f->ops[1], "activate") == 0 && f->epoch[0] == 5 && f->epoch[1] == 5,
		      "gateway %d saw %d ops", i, f->n_ops);
		/* `membership` where named, and only there. */
		CHECK(f->membership[0] == (r.membership[i] != 0 ? (int64_t)r.membership[i] : -1),
		      "gateway %d: membership %" PRId64, i, f->membership[0]);
		last_prepare = f->seq[0] > last_prepare ? f->seq[0] : last_prepare;
		first_activate = f->seq[1] < first_activate ? f->seq[1] : first_activate;
	}
	CHECK(last_prepare < first_activate, "an activate (%d) before the last prepare (%d)",
	      first_activate, last_prepare);
}

static void
test_install_rejected(void)
{
	static const enum behaviour how[N_GW] = { FAKE_OK, FAKE_REJECT_PREPARE, FAKE_OK };
	struct run r = { 0 };

	run_install(&r, how, 2000);
	CHECK(r.rc == -ECANCELED, "rc %d", r.rc);
	CHECK(r.rep.phase == 1 && r.rep.failed == 1 && !r.rep.no_answer &&
	      r.rep.errnum == EINVAL && r.rep.n_prepared == 1 && r.rep.n_activated == 0,
	      "report phase %d failed %d errno %d", r.rep.phase, r.rep.failed, r.rep.errnum);
	CHECK(strstr(r.rep.error, "gateway b") != NULL &&
	      strstr(r.rep.error, "table.trees[0].slots") != NULL, "error '%s'", r.rep.error);
	for (int i = 0; i < N_GW; i++)
		CHECK(count_op(&r.fakes[i], "activate") == 0, "gateway %d activated", i);
	CHECK(count_op(&r.fakes[2], "prepare") == 0, "prepare went on after the rejection");
}

static void
test_install_silent(void)
{
	static const enum behaviour how[N_GW] = { FAKE_OK, FAKE_OK, FAKE_SILENT_PREPARE };
	struct run r = { 0 };

	run_install(&r, how, 300);
	CHECK(r.rc == -ECANCELED && r.rep.no_answer && r.rep.failed == 2 &&
	      r.rep.errnum == ETIMEDOUT, "rc %d no_answer %d errno %d", r.rc, r.rep.no_answer,
	      r.rep.errnum);
	CHECK(r.seconds >= 0.25 && r.seconds < 3, "took %.3f s", r.seconds);
	for (int i = 0; i < N_GW; i++)
		CHECK(count_op(&r.fakes[i], "activate") == 0, "gateway %d activated", i);
}

static void
test_install_dies(void)
{
	static const enum behaviour how[N_GW] = { FAKE_DIE_AFTER_PREPARE, FAKE_OK, FAKE_OK };
	struct run r = { 0 };

	run_install(&r, how, 1000);
	CHECK(r.rc == -EIO && r.rep.phase == 2 && r.rep.failed == 0 && r.rep.no_answer,
	      "rc %d phase %d failed %d", r.rc, r.rep.phase, r.rep.failed);
	CHECK(r.rep.n_prepared == N_GW && r.rep.n_activated == N_GW - 1 && r.af[0] &&
	      !r.af[1] && !r.af[2], "prepared %d activated %d", r.rep.n_prepared,
	      r.rep.n_activated);
	CHECK(count_op(&r.fakes[1], "activate") == 1 && count_op(&r.fakes[2], "activate") == 1,
	      "the others did not activate");
}

static void
test_install_no_socket(void)
{
	struct deploy *d;
	struct jobplan *jp = plan_example(&d, 2, NULL);
	struct install_gw gws[N_GW];
	struct install_report rep = { 0 };
	char path[160];
	int rc;

	snprintf(path, sizeof(path), "%s/none.sock", dir);
	for (int i = 0; i < N_GW; i++)
		install_gw_init(&gws[i], d->topo->nodes[i].id, path);
	rc = install_epoch(gws, jp->tables, NULL, N_GW, 1, 2, 500, &rep);
	CHECK(rc == -ECANCELED && rep.no_answer && rep.errnum == ENOENT && rep.failed == 0,
	      "rc %d errno %d", rc, rep.errnum);
	CHECK(strstr(rep.error, "cannot connect") != NULL, "error '%s'", rep.error);
	/* A table of another epoch than the one named is refused before any call. */
	rc = install_epoch(gws, jp->tables, NULL, N_GW, 1, 3, 500, &rep);
	CHECK(rc == -EINVAL, "rc %d", rc);
	jobplan_free(jp);
	deploy_free(d);
}

/* Gateway c down: tables for a and b only, naming no gateway 3 and no worker of c. */
static void
test_plan_without_node(void)
{
	static const bool up[N_GW] = { true, true, false };
	struct deploy *d;
	struct jobplan *jp = plan_example(&d, 9, up);

	CHECK(jp->n_tables == 2 && jp->tables[2] == NULL && jp->n_workers == 4,
	      "%d tables, %d workers", jp->n_tables, jp->n_workers);
	for (int v = 0; v < 2; v++) {
		const struct table *tb = jp->tables[v];

		CU_ASSERT_PTR_NOT_NULL_FATAL(tb);
		CHECK(tb->epoch == 9 && tb->job == 1, "job %u epoch %u", tb->job, tb->epoch);
		for (int k = 0; k < tb->n_trees; k++) {
			const struct table_tree *e = &tb->trees[k];

			CHECK(!e->has_parent || e->parent.id != 3, "parent 3");
			for (int c = 0; c < e->n_children; c++)
				CHECK(e->children[c].id != 3, "child 3");
			CHECK(e->subtree_workers <= 4, "subtree workers %u", e->subtree_workers);
		}
	}
	jobplan_free(jp);
	deploy_free(d);
}

/* An epoch's `membership` names its workers: the same for the same workers whatever the
 * epoch and their order, another without a site's gateway (its workers are out) or with
 * one worker at another port. */
static void
test_plan_membership(void)
{
	static const bool up[N_GW] = {true, true, false};
	struct deploy *d, *d2;
	struct jobplan *a = plan_example(&d, 4, NULL), *b = plan_example(&d2, 5, NULL);
	struct jobplan *c = NULL;
	char err[JOBPLAN_ERR_MAX];
	const struct deploy_job *j = &d->jobs[0];
	struct table_worker ws[16], rev[16];
	int n = j->n_workers;

	CU_ASSERT_FATAL(n >= 2 && n <= 16);
	for (int i = 0; i < n; i++) {
		ws[i] = j->workers[i].w;
		rev[n - 1 - i] = j->workers[i].w;
	}
	CHECK(a->membership != 0 && a->membership == b->membership &&
		      a->membership == jobplan_membership(ws, n) &&
		      jobplan_membership(rev, n) == a->membership,
	      "epochs 4 and 5: %" PRIu32 ", %" PRIu32, a->membership, b->membership);
	CHECK(jobplan_build(d, 0, up, NULL, 6, &c, err, sizeof(err)) == 0, "%s", err);
	CU_ASSERT_PTR_NOT_NULL_FATAL(c);
	CHECK(c->membership != 0 && c->membership != a->membership,
	      "without site c's workers: %" PRIu32, c->membership);
	ws[0].port++;
	CU_ASSERT(jobplan_membership(ws, n) != a->membership);
	ws[0].port--;
	CU_ASSERT(jobplan_membership(ws, n - 1) != a->membership);
	jobplan_free(a);
	jobplan_free(b);
	jobplan_free(c);
	deploy_free(d);
	deploy_free(d2);
}

/* The example deployment with a second gateway at site a (file order: last). */
static struct deploy *
example_two_at_a(const char *algorithm)
{
	char err[DEPLOY_ERR_MAX], *text;
	json_error_t je;
	json_t *doc = json_load_file(EXAMPLE, 0, &je);
	struct deploy *d;

	CU_ASSERT_PTR_NOT_NULL_FATAL(doc);
	json_array_append_new(json_object_get(doc, "gateways"),
			      json_loads("{\"node\": \"a\", \"id\": 4, \"ipv4\": \"10.99.0.4\","
					 " \"socket\": \"/run/georeduce/a2.sock\"}", 0, &je));
	if (algorithm != NULL) {
		json_t *j0 = json_array_get(json_object_get(doc, "jobs"), 0);

		json_object_set_new(j0, "algorithm", json_string(algorithm));
		json_object_del(j0, "options");
	}
	text = json_dumps(doc, 0);
	d = deploy_parse(text, EXAMPLE, err, sizeof(err));
	CHECK(d != NULL, "%s", err);
	free(text);
	json_decref(doc);
	CU_ASSERT_PTR_NOT_NULL_FATAL(d);
	return d;
}

/* Which of the tables holds chunk c in its own trees: a bit per table. */
static unsigned
holders(struct table *const *tb, int n, uint32_t c)
{
	unsigned m = 0;

	for (int i = 0; i < n; i++)
		if (tb[i] != NULL && table_tree_of_chunk(tb[i], c) != NULL)
			m |= 1u << i;
	return m;
}

/* Two gateways at a: each holds half of every chunk range and names the other; one of
 * them down moves its shard to the other in the next epoch; both down, the site leaves.
 * BlueConnect plans the same shards with its hierarchy. */
static void
test_plan_two_gateways(void)
{
	static const bool a2_down[4] = { true, false, true, true };
	static const bool a_down[4] = { false, false, true, true };
	char err[JOBPLAN_ERR_MAX], path[200];
	struct deploy *d = example_two_at_a(NULL);
	struct jobplan *jp = NULL;
	uint32_t n;

	CU_ASSERT_FATAL(jobplan_build(d, 0, NULL, NULL, 4, &jp, err, sizeof(err)) == 0);
	CHECK(jp->n_tables == 4 && jp->n_gateways == 4 && jp->n_workers == 6 &&
	      jp->site_table[0] == 0, "%d tables, %d workers", jp->n_tables, jp->n_workers);
	CU_ASSERT(jp->tables[0]->n_shards == 1 && jp->tables[0]->shards[0].gw.id == 4 &&
		  jp->tables[1]->n_shards == 1 && jp->tables[1]->shards[0].gw.id == 1 &&
		  jp->tables[2]->n_shards == 0);
	n = (uint32_t)table_n_chunks(jp->tables[0]);
	for (uint32_t c = 0; c < n; c++) {
		unsigned h = holders(jp->tables, 2, c);

		if (!CHECK(h == (c < n / 2 ? 1u : 2u), "chunk %u held by %x", c, h))
			break;
	}
	/* The files: each gateway's under its name, the site's under the node's. */
	CU_ASSERT(jobplan_write(jp, d, dir, err, sizeof(err)) == 0);
	snprintf(path, sizeof(path), "%s/job-1-a-2.json", dir);
	CU_ASSERT(access(path, R_OK) == 0);
	snprintf(path, sizeof(path), "%s/job-1-a.json", dir);
	struct table *site = table_load(path, err, sizeof(err));

	CHECK(site != NULL && site->gw.id == 1 && site->n_shards == 1, "%s", err);
	table_free(site);
	jobplan_free(jp);
	/* a-2 down: a-1 holds every chunk of the next epoch. */
	CU_ASSERT_FATAL(jobplan_build(d, 0, a2_down, NULL, 5, &jp, err, sizeof(err)) == 0);
	CHECK(jp->n_tables == 3 && jp->tables[1] == NULL && jp->n_workers == 6 &&
	      jp->tables[0]->n_shards == 0 && jp->site_table[0] == 0, "%d tables", jp->n_tables);
	for (uint32_t c = 0; c < n; c++)
		if (!CHECK(holders(jp->tables, 2, c) == 1u, "chunk %u", c))
			break;
	jobplan_free(jp);
	/* Both down: the site and its workers leave the job. */
	CU_ASSERT_FATAL(jobplan_build(d, 0, a_down, NULL, 6, &jp, err, sizeof(err)) == 0);
	CHECK(jp->n_tables == 2 && jp->n_workers == 4 && jp->site_table[0] == -1,
	      "%d tables %d workers", jp->n_tables, jp->n_workers);
	jobplan_free(jp);
	deploy_free(d);
	/* BlueConnect: the WAN stage's trees, sharded the same way, and its hierarchy with
	 * a's two gateways; the decomposition the gateways run has no ring stage. */
	d = example_two_at_a("blueconnect");
	CU_ASSERT_FATAL(jobplan_build(d, 0, NULL, NULL, 4, &jp, err, sizeof(err)) == 0);
	json_t *h = json_object_get(jp->plan->extra, "hierarchy");
	const char *fact = json_string_value(json_object_get(h, "factorisation"));

	CHECK(h != NULL && fact != NULL && strstr(fact, "][") == NULL && fact[0] == '[' &&
	      json_integer_value(json_object_get(json_array_get(json_object_get(h, "sites"), 0),
						 "gateways")) == 2,
	      "hierarchy %s", fact != NULL ? fact : "(none)");
	CHECK(strcmp(jp->plan->algorithm, "blueconnect") == 0 && jp->plan->allreduce_seconds > 0 &&
	      fabs(jp->plan->allreduce_seconds -
		   json_number_value(json_object_get(h, "seconds"))) < 1e-9,
	      "predicted %g", jp->plan->allreduce_seconds);
	CU_ASSERT(jp->tables[0]->n_shards == 1 && jp->tables[1]->n_shards == 1);
	for (uint32_t c = 0; c < n; c++)
		if (!CHECK(holders(jp->tables, 2, c) == (c < n / 2 ? 1u : 2u), "chunk %u", c))
			break;
	jobplan_free(jp);
	deploy_free(d);
}

/* Measured capacities: where below the topology's the plan uses them, where above it
 * they change nothing; a link down is left out. */
static void
test_plan_measured_links(void)
{
	char err[JOBPLAN_ERR_MAX];
	struct deploy *d;
	struct jobplan *nominal = plan_example(&d, 3, NULL), *jp = NULL;
	int nl = d->topo->n_links;
	struct jobplan_link *lk = calloc((size_t)nl, sizeof(*lk));
	double before = plan_total_rate(nominal->plan);

	CU_ASSERT_PTR_NOT_NULL_FATAL(lk);
	for (int l = 0; l < nl; l++)
		lk[l] = (struct jobplan_link){ .up = true, .gbps_ab = 1e6, .gbps_ba = 1e6 };
	CHECK(jobplan_build(d, 0, NULL, lk, 4, &jp, err, sizeof(err)) == 0, "%s", err);
	CHECK(jp != NULL && fabs(plan_total_rate(jp->plan) - before) < 1e-9 * before,
	      "%g against %g", jp != NULL ? plan_total_rate(jp->plan) : 0, before);
	jobplan_free(jp);
	for (int l = 0; l < nl; l++)
		lk[l] = (struct jobplan_link){ .up = true,
					       .gbps_ab = d->topo->links[l].gbps_ab / 4,
					       .gbps_ba = d->topo->links[l].gbps_ba / 4 };
	CHECK(jobplan_build(d, 0, NULL, lk, 5, &jp, err, sizeof(err)) == 0, "%s", err);
	/* Every link at a quarter: the same trees at a quarter of the rate. */
	CHECK(jp != NULL && fabs(plan_total_rate(jp->plan) - before / 4) < 1e-6 * before,
	      "%g against %g / 4", jp != NULL ? plan_total_rate(jp->plan) : 0, before);
	CHECK(jp != NULL && jp->topo->n_links == nl, "%d links", jp != NULL ? jp->topo->n_links : 0);
	jobplan_free(jp);
	lk[0].up = false;
	CHECK(jobplan_build(d, 0, NULL, lk, 6, &jp, err, sizeof(err)) == 0, "%s", err);
	CHECK(jp != NULL && jp->topo->n_links == nl - 1, "%d links",
	      jp != NULL ? jp->topo->n_links : 0);
	jobplan_free(jp);
	free(lk);
	jobplan_free(nominal);
	deploy_free(d);
}

/* One link's capacity split by weight: 3:1 gives 3:1; a job that does not use the link
 * leaves it whole to the other; three jobs, one of which needs less than its part; what
 * no user needs goes to every job by weight; the shares always add up to the capacity. */
static void
test_shares_split(void)
{
	static const struct {
		int n;
		double cap, w[3], demand[3], want[3];
	} cases[] = {
		{2, 10, {3, 1}, {10, 10}, {7.5, 2.5}},
		{2, 10, {1, 3}, {10, 10}, {2.5, 7.5}},
		{2, 10, {3, 1}, {10, 0}, {10, 0}},          /* job 2 absent: job 1 has it all */
		{2, 10, {1, 3}, {0, 10}, {0, 10}},          /* job 1 absent, whatever its weight */
		{2, 10, {3, 1}, {10, -1}, {10, 0}},         /* a negative demand: absent */
		{1, 10, {1}, {4}, {10}},                    /* alone: the whole link */
		{3, 10, {1, 1, 2}, {10, 10, 10}, {2.5, 2.5, 5}},
		{3, 10, {1, 1, 2}, {1, 10, 10}, {1, 3, 6}}, /* job 1 needs less than its part */
		{3, 10, {1, 1, 2}, {1, 2, 10}, {1, 2, 7}},  /* jobs 1 and 2 do */
		{3, 10, {1, 1, 2}, {10, 0, 10}, {10.0 / 3, 0, 20.0 / 3}},
		/* No job needs it all: 5 are left, to all three by weight. */
		{3, 10, {1, 1, 2}, {2, 3, 0}, {3.25, 4.25, 2.5}},
		{2, 10, {1, 1}, {30, 30}, {5, 5}}, /* demands above the capacity */
		{2, 0, {1, 1}, {3, 3}, {0, 0}},    /* a link that is down */
	};
	double share[3];

	for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
		double sum = 0;

		shares_split(cases[c].cap, cases[c].n, cases[c].w, cases[c].demand, share);
		for (int i = 0; i < cases[c].n; i++) {
			CHECK(fabs(share[i] - cases[c].want[i]) < 1e-9, "case %zu job %d: %g, not %g",
			      c, i, share[i], cases[c].want[i]);
			sum += share[i];
		}
		CHECK(fabs(sum - cases[c].cap) < 1e-9, "case %zu: shares add up to %g", c, sum);
	}
	/* Random ones: the sum is the capacity, and no job gets less than the smaller of its
	 * demand and its weight's part of the capacity. */
	srand(7);
	for (int r = 0; r < 2000; r++) {
		double w[8], dm[8], sh[8], wsum = 0, sum = 0, cap = 1 + rand() % 100;
		int n = 1 + rand() % 8;

		for (int i = 0; i < n; i++) {
			w[i] = 0.001 + (rand() % 1000) / 10.0;
			dm[i] = rand() % 4 == 0 ? 0 : (rand() % 1000) / 500.0 * cap;
			wsum += w[i];
		}
		shares_split(cap, n, w, dm, sh);
		for (int i = 0; i < n; i++) {
			double fair = cap * w[i] / wsum;
			double least = dm[i] > 0 && dm[i] < fair ? dm[i] : dm[i] > 0 ? fair : 0;

			sum += sh[i];
			if (!CHECK(sh[i] >= least - 1e-9, "random %d job %d: %g below %g", r, i, sh[i],
				   least))
				break;
		}
		if (!CHECK(fabs(sum - cap) < 1e-9 * cap, "random %d: sum %g of %g", r, sum, cap))
			break;
	}
}

/* Two jobs of the example planned together, weights 3 and 1: each job's demand is its plan
 * alone, the shares split every link direction, and each job planned over its shares
 * loads no link direction above its share, the two together none above its capacity. */
static void
test_shares_plans(void)
{
	char err[JOBPLAN_ERR_MAX];
	struct deploy *d;
	struct jobplan *jp[2] = {NULL, NULL}, *alone = plan_example(&d, 1, NULL);
	const struct topo *t = d->topo;
	int nd = 2 * t->n_links;
	double *load[2], *share[2], w[2] = {3, 1};
	struct jobplan_link *lk = calloc((size_t)t->n_links, sizeof(*lk));

	CU_ASSERT_PTR_NOT_NULL_FATAL(lk);
	for (int i = 0; i < 2; i++) {
		load[i] = calloc((size_t)nd, sizeof(double));
		share[i] = calloc((size_t)nd, sizeof(double));
		CU_ASSERT_FATAL(load[i] != NULL && share[i] != NULL);
		CHECK(jobplan_plan_only(d, i, NULL, NULL, &jp[i], err, sizeof(err)) == 0, "%s",
		      err);
		CU_ASSERT_PTR_NOT_NULL_FATAL(jp[i]);
		CU_ASSERT(jp[i]->tables[0] == NULL && jp[i]->n_tables == 0); /* not compiled */
		shares_plan_loads(jp[i], t, load[i]);
		jobplan_free(jp[i]);
	}
	/* The plan alone loads its links as its trees say: both directions alike. */
	for (int k = 0; k < nd; k += 2)
		CHECK(fabs(load[0][k] - load[0][k + 1]) < 1e-9, "link %d: %g and %g", k / 2,
		      load[0][k], load[0][k + 1]);
	for (int k = 0; k < nd; k++) {
		double dm[2] = {load[0][k], load[1][k]}, sh[2];
		const struct topo_link *tl = &t->links[k / 2];

		shares_split(k % 2 == 0 ? tl->gbps_ab : tl->gbps_ba, 2, w, dm, sh);
		share[0][k] = sh[0];
		share[1][k] = sh[1];
	}
	for (int i = 0; i < 2; i++) {
		for (int l = 0; l < t->n_links; l++)
			lk[l] = (struct jobplan_link){.up = share[i][2 * l] > 0,
						      .gbps_ab = share[i][2 * l],
						      .gbps_ba = share[i][2 * l + 1]};
		CHECK(jobplan_build(d, i, NULL, lk, 2, &jp[i], err, sizeof(err)) == 0, "%s", err);
		CU_ASSERT_PTR_NOT_NULL_FATAL(jp[i]);
		shares_plan_loads(jp[i], t, load[i]);
	}
	for (int k = 0; k < nd; k++) {
		const struct topo_link *tl = &t->links[k / 2];
		double cap = k % 2 == 0 ? tl->gbps_ab : tl->gbps_ba;

		for (int i = 0; i < 2; i++)
			CHECK(load[i][k] <= share[i][k] * (1 + 1e-6), "job %d link %d dir %d: %g above "
			      "its share %g", i, k / 2, k % 2, load[i][k], share[i][k]);
		CHECK(load[0][k] + load[1][k] <= cap * (1 + 1e-6), "link %d dir %d: %g above %g",
		      k / 2, k % 2, load[0][k] + load[1][k], cap);
	}
	/* Job 1 runs slower than alone, but runs. */
	CHECK(plan_total_rate(jp[0]->plan) < plan_total_rate(alone->plan) &&
	      plan_total_rate(jp[0]->plan) > 0, "%g against %g alone",
	      plan_total_rate(jp[0]->plan), plan_total_rate(alone->plan));
	for (int i = 0; i < 2; i++) {
		jobplan_free(jp[i]);
		free(load[i]);
		free(share[i]);
	}
	free(lk);
	jobplan_free(alone);
	deploy_free(d);
}

/* Only the jobs that run share (a: the shares with all three running): none running, every
 * job has the whole capacities; jobs 1 and 2 running, they split as the two of them alone
 * would, and job 3, which does not run, gets what it would among the three. */
static void
shares_running(struct deploy *d, const double *a, double *b, int nd)
{
	bool none[3] = {false, false, false}, two[3] = {true, true, false};
	double *c = calloc((size_t)(3 * nd), sizeof(*c));

	CU_ASSERT_FATAL(c != NULL);
	CU_ASSERT_FATAL(shares_compute(d, NULL, NULL, none, b) == 0);
	for (int k = 0; k < nd; k++) {
		const struct topo_link *tl = &d->topo->links[k / 2];
		double cap = k % 2 == 0 ? tl->gbps_ab : tl->gbps_ba;

		for (int i = 0; i < 3; i++)
			CHECK(fabs(b[i * nd + k] - cap) < 1e-9, "idle job %d, direction %d: %g", i, k,
			      b[i * nd + k]);
	}
	CU_ASSERT_FATAL(shares_compute(d, NULL, NULL, two, b) == 0);
	d->n_jobs = 2; /* the deployment without job 3: the split of jobs 1 and 2 */
	CU_ASSERT_FATAL(shares_compute(d, NULL, NULL, NULL, c) == 0);
	d->n_jobs = 3;
	for (int k = 0; k < nd; k++) {
		for (int i = 0; i < 2; i++)
			CHECK(fabs(b[i * nd + k] - c[i * nd + k]) < 1e-9,
			      "job %d running, direction %d: %g, alone with the other %g", i, k,
			      b[i * nd + k], c[i * nd + k]);
		CHECK(fabs(b[2 * nd + k] - a[2 * nd + k]) < 1e-9,
		      "job 3 idle, direction %d: %g, %g with all three running", k, b[2 * nd + k],
		      a[2 * nd + k]);
	}
	free(c);
}

/* The shares of the example's three jobs: on every link direction they add up to the
 * capacity plans use; computed again with a link measured at half its capacity, that
 * link's shares add up to the half; with a link down, nobody has a share of it; with
 * job 1's weight raised, its share of no direction falls and of some it grows; only the
 * jobs that run share (shares_running()). */
static void
test_shares_compute(void)
{
	char err[DEPLOY_ERR_MAX];
	struct deploy *d = deploy_load(EXAMPLE, err, sizeof(err));
	int nl, nd, nj;
	double *a, *b;
	struct jobplan_link *lk;
	bool grew = false;

	CU_ASSERT_PTR_NOT_NULL_FATAL(d);
	nl = d->topo->n_links;
	nd = 2 * nl;
	nj = d->n_jobs;
	a = calloc((size_t)(nj * nd), sizeof(*a));
	b = calloc((size_t)(nj * nd), sizeof(*b));
	lk = calloc((size_t)nl, sizeof(*lk));
	CU_ASSERT_FATAL(a != NULL && b != NULL && lk != NULL && nj == 3);
	CU_ASSERT_FATAL(shares_compute(d, NULL, NULL, NULL, a) == 0);
	for (int k = 0; k < nd; k++) {
		const struct topo_link *tl = &d->topo->links[k / 2];
		double sum = 0;

		for (int i = 0; i < nj; i++)
			sum += a[i * nd + k];
		CHECK(fabs(sum - (k % 2 == 0 ? tl->gbps_ab : tl->gbps_ba)) < 1e-9, "direction %d: %g",
		      k, sum);
	}
	for (int l = 0; l < nl; l++)
		lk[l] = (struct jobplan_link){.up = true};
	lk[0].gbps_ab = d->topo->links[0].gbps_ab / 2;
	lk[0].gbps_ba = d->topo->links[0].gbps_ba / 2;
	lk[1].up = false;
	CU_ASSERT_FATAL(shares_compute(d, NULL, lk, NULL, b) == 0);
	for (int dir = 0; dir < 2; dir++) {
		double half = 0, down = 0;

		for (int i = 0; i < nj; i++) {
			half += b[i * nd + dir];
			down += b[i * nd + 2 + dir];
		}
		CHECK(fabs(half - (dir == 0 ? d->topo->links[0].gbps_ab : d->topo->links[0].gbps_ba) /
					  2) < 1e-9, "link 0 measured at half: %g", half);
		CHECK(down == 0, "link 1 down: %g", down);
	}
	d->jobs[0].weight = 5;
	CU_ASSERT_FATAL(shares_compute(d, NULL, NULL, NULL, b) == 0);
	for (int k = 0; k < nd; k++) {
		CHECK(b[k] >= a[k] - 1e-9, "direction %d: %g, %g at weight 1", k, b[k], a[k]);
		grew |= b[k] > a[k] + 1e-9;
	}
	CHECK(grew, "a weight of 5 gives job 1 more of some link");
	d->jobs[0].weight = 1;
	shares_running(d, a, b, nd);
	free(lk);
	free(b);
	free(a);
	deploy_free(d);
}

/* A dataplane's `links` counters as the daemon reads them: a link's bytes and planned rate
 * are those of its trees and streams in live epochs (retransmissions apart); a stream's
 * entry, which has no "tree", is no tree (its missing key would read as tree 0). */
static void
test_link_counters(void)
{
	json_error_t je;
	json_t *jobs = json_loads(
		"[{\"job\": 1, \"epoch\": 2, \"state\": \"live\", \"links\": ["
		"  {\"tree\": 0, \"dir\": \"up\", \"ipv4\": \"10.0.0.5\", \"id\": 5,"
		"   \"rate_gbps\": 1.0, \"bytes\": 1000, \"frames\": 10, \"retx_bytes\": 100},"
		"  {\"tree\": 1, \"dir\": \"down\", \"ipv4\": \"10.0.0.6\", \"id\": 6,"
		"   \"rate_gbps\": 2.0, \"bytes\": 500, \"frames\": 5, \"retx_bytes\": 0},"
		"  {\"stream\": 0, \"dir\": \"down\", \"ipv4\": \"10.0.0.5\", \"id\": 5,"
		"   \"rate_gbps\": 0.5, \"bytes\": 300, \"frames\": 3, \"retx_bytes\": 0}]},"
		" {\"job\": 1, \"epoch\": 1, \"state\": \"draining\", \"links\": ["
		"  {\"tree\": 0, \"dir\": \"up\", \"ipv4\": \"10.0.0.5\", \"id\": 5,"
		"   \"rate_gbps\": 9.0, \"bytes\": 99999, \"frames\": 99, \"retx_bytes\": 0}]},"
		" {\"job\": 2, \"epoch\": 1, \"state\": \"live\", \"links\": ["
		"  {\"stream\": 3, \"dir\": \"down\", \"ipv4\": \"10.0.0.5\", \"id\": 5,"
		"   \"rate_gbps\": 0.25, \"bytes\": 200, \"frames\": 2, \"retx_bytes\": 0},"
		"  {\"stream\": 4, \"dir\": \"down\", \"ipv4\": \"10.0.0.7\", \"id\": 7,"
		"   \"rate_gbps\": 0.25, \"bytes\": 700, \"frames\": 7, \"retx_bytes\": 0}]}]",
		0, &je);
	uint64_t bytes, key, key2;
	double planned;
	json_t *lk;
	size_t i;
	int trees = 0;

	CHECK(jobs != NULL, "line %d: %s", je.line, je.text);
	CU_ASSERT_FATAL(jobs != NULL);
	/* Towards 5: tree 0 up (900 first transmissions), job 1's stream 0 and job 2's
	 * stream 3; the draining epoch not. */
	CHECK(daemon_link_sent(jobs, 5, &bytes, &planned, &key) && bytes == 900 + 300 + 200 &&
	      fabs(planned - 1.75) < 1e-12, "%llu bytes, %g planned",
	      (unsigned long long)bytes, planned);
	/* Towards 7 a stream only (a multicast-only job): a link all the same. */
	CHECK(daemon_link_sent(jobs, 7, &bytes, &planned, &key2) && bytes == 700 &&
	      fabs(planned - 0.25) < 1e-12 && key2 == key, "%llu bytes, %g planned",
	      (unsigned long long)bytes, planned);
	CU_ASSERT(!daemon_link_sent(jobs, 8, &bytes, &planned, &key) && bytes == 0);
	/* Trees: 0 and 1 of job 1; the streams' entries are none. */
	json_array_foreach(json_object_get(json_array_get(jobs, 0), "links"), i, lk)
		trees += daemon_link_tree(lk) == (int)i;
	CU_ASSERT(trees == 2);
	CU_ASSERT(daemon_link_tree(json_array_get(json_object_get(json_array_get(jobs, 0), "links"),
						  2)) == -1);
	json_array_foreach(json_object_get(json_array_get(jobs, 2), "links"), i, lk)
		CU_ASSERT(daemon_link_tree(lk) == -1);
	json_decref(jobs);
}

/* CREW (job 3 of the example, 2 of 3 workers): one star per aggregating site, rooted
 * there over the other sites, within every link's capacity in both directions; tables with
 * contributor sets whose roots complete at 2 workers; without a gateway, stars of what is
 * left. */
static void
test_crew_plan(void)
{
	char err[JOBPLAN_ERR_MAX];
	static const bool up[N_GW] = { true, false, true };
	struct deploy *d = deploy_load(EXAMPLE, err, sizeof(err));
	struct jobplan *jp = NULL;

	CU_ASSERT_PTR_NOT_NULL_FATAL(d);
	/* An adaptive grace window of at most 250 ms: on the roots, with their threshold. */
	d->jobs[2].grace_ms = 250;
	d->jobs[2].grace_auto = true;
	CHECK(jobplan_build(d, 2, NULL, NULL, 4, &jp, err, sizeof(err)) == 0, "%s", err);
	CU_ASSERT_PTR_NOT_NULL_FATAL(jp);
	CHECK(jp->plan->n_trees == 3 && strcmp(jp->plan->algorithm, "crew") == 0,
	      "%d trees of %s", jp->plan->n_trees, jp->plan->algorithm);
	for (int k = 0; k < jp->plan->n_trees; k++) {
		const struct plan_tree *tr = &jp->plan->trees[k];

		for (int v = 0; v < N_GW; v++)
			CHECK(tr->parent[v] == (v == tr->root ? PLAN_ROOT : tr->root),
			      "tree %d: node %d's parent %d, root %d", k, v, tr->parent[v],
			      tr->root);
	}
	CHECK(plan_validate(jp->topo, jp->plan, 0, err, sizeof(err)) == 0, "%s", err);
	for (int v = 0; v < N_GW; v++) {
		const struct table *tb = jp->tables[v];

		CU_ASSERT_PTR_NOT_NULL_FATAL(tb);
		CHECK(tb->cset_blocks == 2 && tb->n_trees == 3, "node %d: %u blocks, %d trees", v,
		      tb->cset_blocks, tb->n_trees);
		for (int k = 0; k < tb->n_trees; k++) {
			const struct table_tree *e = &tb->trees[k];

			CHECK(e->has_parent ? e->threshold == 0 && e->n_children == 0 &&
						      e->subtree_workers == 1
					    : e->threshold == 2 && e->n_children == 2 &&
						      e->subtree_workers == 3,
			      "node %d tree %u: threshold %u, %d children, %u workers", v, e->id,
			      e->threshold, e->n_children, e->subtree_workers);
			CHECK(e->has_parent ? e->grace_ms == 0 && !e->grace_adaptive
					    : e->grace_ms == 250 && e->grace_adaptive,
			      "node %d tree %u: grace %u ms", v, e->id, e->grace_ms);
		}
	}
	jobplan_free(jp);
	jp = NULL;
	CHECK(jobplan_build(d, 2, up, NULL, 5, &jp, err, sizeof(err)) == 0, "%s", err);
	CHECK(jp != NULL && jp->plan->n_trees == 2 && jp->n_workers == 2 &&
		      jp->tables[1] == NULL,
	      "without b: %d trees, %d workers", jp != NULL ? jp->plan->n_trees : -1,
	      jp != NULL ? jp->n_workers : -1);
	jobplan_free(jp);
	jp = NULL;
	/* Link a-c down: a and c reach each other through the member b (CREW's relay), and
	 * the plan stays within every link's capacity. */
	{
		struct jobplan_link lk[3];
		int ac = topo_link_between(d->topo, 0, 2);

		CU_ASSERT_FATAL(ac >= 0 && d->topo->n_links == 3);
		for (int l = 0; l < 3; l++)
			lk[l] = (struct jobplan_link){ .up = l != ac };
		CHECK(jobplan_build(d, 2, NULL, lk, 6, &jp, err, sizeof(err)) == 0, "%s", err);
		CU_ASSERT_PTR_NOT_NULL_FATAL(jp);
		int relayed = 0;

		for (int k = 0; k < jp->plan->n_trees; k++) {
			const struct plan_tree *tr = &jp->plan->trees[k];

			if (tr->root == 0)
				relayed += tr->parent[2] == 1 && tr->parent[1] == 0;
			if (tr->root == 2)
				relayed += tr->parent[0] == 1 && tr->parent[1] == 2;
		}
		CHECK(relayed == 2, "%d stars relayed through b", relayed);
		CHECK(plan_validate(jp->topo, jp->plan, 0, err, sizeof(err)) == 0, "%s", err);
		jobplan_free(jp);
	}
	deploy_free(d);
}

/*
 * Three sites at mtu 9000: an fp32 job at its default chunk size (8896 bytes), one with an
 * explicit chunk_bytes of 8916 (the largest, 2229 elements) and an mxint8 job at its
 * default (270 blocks, 8910 bytes).
 */
static const char jumbo_deploy[] =
	"{\"format\": \"georeduce-deployment/1\", \"topology\": {"
	" \"format\": \"georeduce-topology/1\", \"name\": \"j\", \"nodes\": ["
	" {\"id\": \"a\", \"workers\": 1}, {\"id\": \"b\", \"workers\": 1},"
	" {\"id\": \"c\", \"workers\": 1}], \"links\": ["
	" {\"a\": \"a\", \"b\": \"b\", \"gbps\": 10, \"latency_ms\": 5},"
	" {\"a\": \"b\", \"b\": \"c\", \"gbps\": 10, \"latency_ms\": 5},"
	" {\"a\": \"a\", \"b\": \"c\", \"gbps\": 10, \"latency_ms\": 5}]},"
	" \"gateways\": ["
	" {\"node\": \"a\", \"id\": 1, \"ipv4\": \"10.98.0.1\", \"socket\": \"/tmp/a.sock\"},"
	" {\"node\": \"b\", \"id\": 2, \"ipv4\": \"10.98.0.2\", \"socket\": \"/tmp/b.sock\"},"
	" {\"node\": \"c\", \"id\": 3, \"ipv4\": \"10.98.0.3\", \"socket\": \"/tmp/c.sock\"}],"
	" \"jobs\": ["
	" {\"id\": 1, \"algorithm\": \"mtree\", \"dtype\": \"fp32\", \"elements\": 100000,"
	"  \"mtu\": 9000, \"workers\": ["
	"  {\"node\": \"a\", \"id\": 101, \"ipv4\": \"10.98.1.1\", \"port\": 5000},"
	"  {\"node\": \"b\", \"id\": 201, \"ipv4\": \"10.98.2.1\", \"port\": 5000},"
	"  {\"node\": \"c\", \"id\": 301, \"ipv4\": \"10.98.3.1\", \"port\": 5000}]},"
	" {\"id\": 2, \"algorithm\": \"mtree\", \"dtype\": \"fp32\", \"elements\": 100000,"
	"  \"mtu\": 9000, \"chunk_bytes\": 8916, \"workers\": ["
	"  {\"node\": \"a\", \"id\": 102, \"ipv4\": \"10.98.1.1\", \"port\": 5001},"
	"  {\"node\": \"c\", \"id\": 302, \"ipv4\": \"10.98.3.1\", \"port\": 5001}]},"
	" {\"id\": 3, \"algorithm\": \"mtree\", \"dtype\": \"mxint8\", \"elements\": 100000,"
	"  \"mtu\": 9000, \"workers\": ["
	"  {\"node\": \"a\", \"id\": 103, \"ipv4\": \"10.98.1.1\", \"port\": 5002},"
	"  {\"node\": \"b\", \"id\": 203, \"ipv4\": \"10.98.2.1\", \"port\": 5002}]}]}";

/* The chunk_elements of every table of job ji planned with gateway b at `revision`, all
 * equal to want, and the plan's revision rev_want; false after a failed CHECK. */
static bool
jumbo_chunks(struct deploy *d, int ji, unsigned int revision, uint32_t want,
	     unsigned int rev_want)
{
	char err[JOBPLAN_ERR_MAX];
	struct jobplan *jp = NULL;
	bool ok;

	d->gateways[1].revision = (uint8_t)revision;
	if (!CHECK(jobplan_build(d, ji, NULL, NULL, 1, &jp, err, sizeof(err)) == 0, "%s", err))
		return false;
	ok = CHECK(jp->revision == rev_want, "job %u, b at %u: plan revision %u, not %u",
		   d->jobs[ji].id, revision, jp->revision, rev_want);
	ok &= CHECK(rev_want >= 15 || jp->revision_gw == 1, "the oldest is b, not %d",
		    jp->revision_gw);
	for (int g = 0; g < jp->n_gateways; g++)
		if (jp->tables[g] != NULL)
			ok &= CHECK(jp->tables[g]->chunk_elements == want,
				    "job %u, b at %u: gateway %d's chunks of %u elements, not %u",
				    d->jobs[ji].id, revision, g, jp->tables[g]->chunk_elements,
				    want);
	jobplan_free(jp);
	return ok;
}

/* A job is planned within its oldest gateway: below revision 1.14 (or an older gateway
 * that answers no revision, 0) chunks of at most 8192 bytes, from 1.14 the full size;
 * an explicit chunk_bytes above 8192 is clamped too. */
static void
test_plan_revision(void)
{
	char err[DEPLOY_ERR_MAX];
	struct deploy *d = deploy_parse(jumbo_deploy, "jumbo.json", err, sizeof(err));

	if (!CHECK(d != NULL, "%s", err))
		return;
	CHECK(d->gateways[0].revision == GEOREDUCE_REVISION && d->jobs[0].chunk_bytes == 8896 &&
	      d->jobs[1].chunk_bytes == 8916 && d->jobs[2].chunk_bytes == 8910,
	      "from the file: revision %u, chunk_bytes %u %u %u", d->gateways[0].revision,
	      d->jobs[0].chunk_bytes, d->jobs[1].chunk_bytes, d->jobs[2].chunk_bytes);
	/* fp32 at the default: 2224 elements from 1.14, 2048 (8192 bytes) before. */
	jumbo_chunks(d, 0, 15, 2224, 15);
	jumbo_chunks(d, 0, 14, 2224, 14);
	jumbo_chunks(d, 0, 13, 2048, 13);
	jumbo_chunks(d, 0, 0, 2048, 13);
	/* The explicit 8916 bytes: clamped to 8192 for an older gateway only. */
	jumbo_chunks(d, 1, 15, 2229, 15);
	jumbo_chunks(d, 1, 0, 2048, 13);
	/* mxint8: 270 blocks of 33 bytes, or 248 (8184 bytes) before 1.14. */
	jumbo_chunks(d, 2, 14, 8640, 14);
	jumbo_chunks(d, 2, 13, 7936, 13);
	/* A gateway that is down does not count. */
	{
		bool up[3] = {true, false, true};
		struct jobplan *jp = NULL;
		char perr[JOBPLAN_ERR_MAX];

		d->gateways[1].revision = 0;
		if (CHECK(jobplan_build(d, 1, up, NULL, 2, &jp, perr, sizeof(perr)) == 0, "%s",
			  perr))
			CHECK(jp->revision == GEOREDUCE_REVISION && jp->chunk_bytes == 8916,
			      "b down: revision %u, chunk_bytes %u", jp->revision,
			      jp->chunk_bytes);
		jobplan_free(jp);
	}
	CHECK(jobplan_chunk_bytes(&d->jobs[0], 0) == 8192 &&
	      jobplan_chunk_bytes(&d->jobs[0], 14) == 8896 &&
	      jobplan_chunk_bytes(&d->jobs[2], 13) == 8184,
	      "jobplan_chunk_bytes: %u %u %u", jobplan_chunk_bytes(&d->jobs[0], 0),
	      jobplan_chunk_bytes(&d->jobs[0], 14), jobplan_chunk_bytes(&d->jobs[2], 13));
	deploy_free(d);
}

/*
 * selmcast: a relay r joins a, b and c (one worker each); a-r carries 4 Gbit/s, the rest
 * 10. With p = 2 every site sends to both others, so each stream's distribution tree is a
 * star through r: the link out of the source carries ONE copy that r replicates.
 */
static const char selmcast_deploy[] =
	"{\"format\": \"georeduce-deployment/1\", \"topology\": {"
	" \"format\": \"georeduce-topology/1\", \"name\": \"star\", \"nodes\": ["
	" {\"id\": \"a\", \"workers\": 1}, {\"id\": \"b\", \"workers\": 1},"
	" {\"id\": \"c\", \"workers\": 1}, {\"id\": \"r\", \"workers\": 0}], \"links\": ["
	" {\"a\": \"a\", \"b\": \"r\", \"gbps\": 4, \"latency_ms\": 5},"
	" {\"a\": \"b\", \"b\": \"r\", \"gbps\": 10, \"latency_ms\": 5},"
	" {\"a\": \"c\", \"b\": \"r\", \"gbps\": 10, \"latency_ms\": 5}]},"
	" \"gateways\": ["
	" {\"node\": \"a\", \"id\": 1, \"ipv4\": \"10.98.0.1\", \"socket\": \"/tmp/a.sock\"},"
	" {\"node\": \"b\", \"id\": 2, \"ipv4\": \"10.98.0.2\", \"socket\": \"/tmp/b.sock\"},"
	" {\"node\": \"c\", \"id\": 3, \"ipv4\": \"10.98.0.3\", \"socket\": \"/tmp/c.sock\"},"
	" {\"node\": \"r\", \"id\": 4, \"ipv4\": \"10.98.0.4\", \"socket\": \"/tmp/r.sock\"}],"
	" \"jobs\": [{\"id\": 9, \"algorithm\": \"selmcast\", \"options\": {\"p\": 2},"
	" \"dtype\": \"fp32\", \"elements\": 100000, \"workers\": ["
	" {\"node\": \"a\", \"id\": 101, \"ipv4\": \"10.98.1.1\", \"port\": 5000},"
	" {\"node\": \"b\", \"id\": 201, \"ipv4\": \"10.98.2.1\", \"port\": 5000},"
	" {\"node\": \"c\", \"id\": 301, \"ipv4\": \"10.98.3.1\", \"port\": 5000}]}]}";

static void
test_selmcast_plan(void)
{
	enum { A, B, C, R };
	char err[JOBPLAN_ERR_MAX], path[256], sum[1024];
	struct deploy *d = deploy_parse(selmcast_deploy, "selmcast.json", err, sizeof(err));
	struct jobplan *jp = NULL;
	double load[3][2] = { { 0 } };

	if (!CHECK(d != NULL, "%s", err))
		return;
	CHECK(d->jobs[0].algo == DEPLOY_ALGO_SELMCAST && d->jobs[0].mcast_p == 2 &&
	      !d->jobs[0].mcast_application, "parsed options");
	CHECK(jobplan_build(d, 0, NULL, NULL, 1, &jp, err, sizeof(err)) == 0, "%s", err);
	CU_ASSERT_PTR_NOT_NULL_FATAL(jp);
	CHECK(jp->plan->n_trees == 0 && jp->n_streams == 3 && jp->n_tables == 4,
	      "%d trees, %d streams, %d tables", jp->plan->n_trees, jp->n_streams, jp->n_tables);
	CHECK(json_object_get(jp->plan->extra, "multicast") != NULL, "multicast section");
	CHECK(jp->plan->allreduce_seconds > 0, "predicted %g s", jp->plan->allreduce_seconds);
	for (int s = 0; s < jp->n_streams; s++) {
		const struct jobplan_stream *st = &jp->streams[s];
		int src = st->source;

		/* Star through r: every site other than the source hangs off r. */
		for (int v = 0; v < 4; v++)
			CHECK(st->parent[v] == (v == src ? PLAN_ROOT : v == R ? src : R),
			      "stream %d: node %d's parent %d", s, v, st->parent[v]);
		CHECK(st->rate_gbps > 0, "stream %d rate", s);
		/* Links are (a,r), (b,r), (c,r): index = site. Up from the source, down to the
		 * other two. */
		for (int v = 0; v < 3; v++)
			load[v][v == src ? 0 : 1] += st->rate_gbps;
	}
	for (int v = 0; v < 3; v++)
		for (int dir = 0; dir < 2; dir++)
			CHECK(load[v][dir] <= d->topo->links[v].gbps_ab * (1 + 1e-9),
			      "link %d direction %d: %g Gbit/s over %g", v, dir, load[v][dir],
			      d->topo->links[v].gbps_ab);
	/* The 4 Gbit/s link into a carries two streams: the binding one. */
	CHECK(fabs(load[A][1] - 4) < 1e-6, "a's downlink filled: %g", load[A][1]);
	/* Tables: the relay replicates every stream to the two others, one copy each; a
	 * receiver delivers to its worker; a source takes its worker's updates. */
	{
		const struct table *tr = jp->tables[R], *ta = jp->tables[A];

		CU_ASSERT_PTR_NOT_NULL_FATAL(tr);
		CU_ASSERT_PTR_NOT_NULL_FATAL(ta);
		CHECK(tr->n_trees == 0 && tr->n_streams == 3, "r: %d streams", tr->n_streams);
		for (int s = 0; s < tr->n_streams; s++) {
			const struct table_stream *e = &tr->streams[s];

			CHECK(e->has_from && e->from.id == e->source && e->n_to == 2 &&
			      e->n_deliver == 0 && e->n_origins == 1 &&
			      e->origins[0] == 100 * e->source + 1,
			      "r stream %u: from %u, %d to, %d deliver", e->id, e->from.id, e->n_to,
			      e->n_deliver);
		}
		CHECK(ta->n_streams == 3, "a: %d streams", ta->n_streams);
		for (int s = 0; s < ta->n_streams; s++) {
			const struct table_stream *e = &ta->streams[s];

			if (e->source == 1)
				CHECK(!e->has_from && e->n_to == 1 && e->to[0].id == 4 &&
				      e->n_deliver == 1 && e->deliver[0].id == 101 &&
				      e->origins[0] == 101, "a's own stream");
			else
				CHECK(e->has_from && e->from.id == 4 && e->n_to == 0 &&
				      e->n_deliver == 1 && e->deliver[0].id == 101,
				      "a receives stream %u", e->id);
		}
	}
	jobplan_summary(jp, sum, sizeof(sum));
	CHECK(strstr(sum, "selmcast: 0 trees") != NULL && strstr(sum, "stream 2 from c") != NULL,
	      "%s", sum);
	/* jobplan_write writes the plan and every table. */
	CHECK(jobplan_write(jp, d, dir, err, sizeof(err)) == 0, "%s", err);
	snprintf(path, sizeof(path), "%s/job-9-r.json", dir);
	{
		struct table *back = table_load(path, err, sizeof(err));

		CHECK(back != NULL && back->n_streams == 3, "%s", err);
		table_free(back);
	}
	unlink(path);
	for (int v = 0; v < 3; v++) {
		snprintf(path, sizeof(path), "%s/job-9-%c.json", dir, "abc"[v]);
		unlink(path);
	}
	snprintf(path, sizeof(path), "%s/job-9-plan.json", dir);
	CHECK(access(path, R_OK) == 0, "plan written");
	unlink(path);
	jobplan_free(jp);
	jp = NULL;
	/* Without c: two sites, p clamps to the one other site. */
	{
		static const bool up[4] = { true, true, false, true };

		CHECK(jobplan_build(d, 0, up, NULL, 2, &jp, err, sizeof(err)) == 0, "%s", err);
		CHECK(jp != NULL && jp->n_streams == 2 && jp->tables[C] == NULL, "without c");
		jobplan_free(jp);
		jp = NULL;
	}
	/* Only one site left: no multicast to plan. */
	{
		static const bool up[4] = { true, false, false, true };

		CHECK(jobplan_build(d, 0, up, NULL, 3, &jp, err, sizeof(err)) == -ENOENT &&
		      strstr(err, "needs 2") != NULL, "one site: %s", err);
	}
	deploy_free(d);
}

/* The ring as chain trees: one per member, a valid plan, each link within capacity. */
static void
test_ring_chains(void)
{
	struct topo_node nodes[5] = {
		{ .id = "a", .workers = 1, .gateways = 1, .lan_gbps = 100 },
		{ .id = "b", .workers = 1, .gateways = 1, .lan_gbps = 100 },
		{ .id = "r", .workers = 0, .gateways = 1, .lan_gbps = 100 },
		{ .id = "c", .workers = 1, .gateways = 1, .lan_gbps = 100 },
		{ .id = "d", .workers = 1, .gateways = 1, .lan_gbps = 100 },
	};
	/* a - b - r - c - d - a: a ring with a relay between b and c. */
	struct topo_link links[5] = {
		{ .a = 0, .b = 1, .gbps_ab = 10, .gbps_ba = 10, .latency_ms = 5 },
		{ .a = 1, .b = 2, .gbps_ab = 10, .gbps_ba = 10, .latency_ms = 5 },
		{ .a = 2, .b = 3, .gbps_ab = 10, .gbps_ba = 10, .latency_ms = 5 },
		{ .a = 3, .b = 4, .gbps_ab = 6, .gbps_ba = 6, .latency_ms = 5 },
		{ .a = 4, .b = 0, .gbps_ab = 10, .gbps_ba = 10, .latency_ms = 5 },
	};
	char err[JOBPLAN_ERR_MAX];
	struct topo *t = topo_create("ring5", 5, nodes, 5, links, err, sizeof(err));
	struct plan *p;

	CU_ASSERT_PTR_NOT_NULL_FATAL(t);
	p = jobplan_ring_chains(t, 0.2, 1 << 20, err, sizeof(err));
	CHECK(p != NULL, "%s", err);
	if (p != NULL) {
		CHECK(p->n_trees == 4, "%d trees", p->n_trees);
		CHECK(plan_validate(t, p, 0, err, sizeof(err)) == 0, "%s", err);
		/* Each link carries 3 of the 4 chains: 4 * c / 3 with the 6 Gbit/s link the
		 * bottleneck of the chains through it. */
		CHECK(plan_total_rate(p) > 6.0 && plan_total_rate(p) <= 40.0 / 3 + 1e-9,
		      "rate %.3f", plan_total_rate(p));
		for (int i = 0; i < p->n_trees; i++)
			CHECK(t->nodes[p->trees[i].root].workers > 0, "tree %d rooted at a relay", i);
	}
	plan_free(p);
	topo_free(t);
}

/* The example deployment with its links protected: each pair of neighbouring gateways gets
 * one key, the same at both ends, a new one every epoch; table files carry none. */
static void
test_protected_links(void)
{
	char err[JOBPLAN_ERR_MAX];
	json_error_t je;
	json_t *doc = json_load_file(EXAMPLE, 0, &je);
	struct jobplan *jp = NULL, *jp2 = NULL;
	struct deploy *d;
	char *text;
	int pairs = 0;

	CU_ASSERT_PTR_NOT_NULL_FATAL(doc);
	json_object_set_new(doc, "protected", json_pack("{s:s,s:s}", "links", "all", "aead",
							 "aes-256-gcm"));
	text = json_dumps(doc, 0);
	d = deploy_parse(text, EXAMPLE, err, sizeof(err));
	free(text);
	CHECK(d != NULL, "%s", err);
	CU_ASSERT_FATAL(d != NULL && d->seal_aead == TABLE_AEAD_AES256_GCM);
	CHECK(jobplan_build(d, 0, NULL, NULL, 7, &jp, err, sizeof(err)) == 0, "%s", err);
	CHECK(jobplan_build(d, 0, NULL, NULL, 8, &jp2, err, sizeof(err)) == 0, "%s", err);
	CU_ASSERT_FATAL(jp != NULL && jp2 != NULL);
	for (int u = 0; u < jp->n_nodes; u++) {
		const struct table *a = jp->tables[u];

		CU_ASSERT_FATAL(a != NULL);
		for (int k = 0; k < a->n_seals; k++) {
			const struct table_seal *s = &a->seals[k];
			int v = 0;

			while (v < jp->n_nodes && d->gateways[v].id != s->peer)
				v++;
			CU_ASSERT_FATAL(v < jp->n_nodes);
			const struct table_seal *back = table_seal_find(jp->tables[v], a->gw.id);
			const struct table_seal *next = table_seal_find(jp2->tables[u], s->peer);
			uint8_t zero[32] = { 0 };

			CU_ASSERT(back != NULL && back->key_id == s->key_id &&
				  memcmp(back->key, s->key, 32) == 0);
			CU_ASSERT(s->aead == TABLE_AEAD_AES256_GCM && s->key_id != 0 &&
				  memcmp(s->key, zero, 32) != 0);
			CU_ASSERT(next != NULL && memcmp(next->key, s->key, 32) != 0);
			pairs++;
		}
	}
	CHECK(pairs >= 4, "%d protected link ends", pairs); /* at least two links, both ends */
	/* Two different links never share a key. */
	const struct table *a = jp->tables[0];

	if (a->n_seals >= 2)
		CU_ASSERT(memcmp(a->seals[0].key, a->seals[1].key, 32) != 0);
	/* The table files: no key. */
	char dir[] = "/tmp/georeduce-seal-XXXXXX";

	CU_ASSERT_FATAL(mkdtemp(dir) != NULL);
	CHECK(jobplan_write(jp, d, dir, err, sizeof(err)) == 0, "%s", err);
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "! grep -rq -e sealed -e '\"key\"' %s && rm -r %s", dir, dir);
	CU_ASSERT(system(cmd) == 0);
	/* A link that is not in the topology is refused, naming it. */
	json_object_set_new(doc, "protected", json_pack("{s:[[s,s]]}", "links", "a", "q"));
	text = json_dumps(doc, 0);
	CU_ASSERT_PTR_NULL(deploy_parse(text, EXAMPLE, err, sizeof(err)));
	CU_ASSERT_PTR_NOT_NULL(strstr(err, "protected.links[0]"));
	free(text);
	json_object_set_new(doc, "protected", json_pack("{s:s,s:s}", "links", "all", "aead",
							 "des"));
	text = json_dumps(doc, 0);
	CU_ASSERT_PTR_NULL(deploy_parse(text, EXAMPLE, err, sizeof(err)));
	CU_ASSERT_PTR_NOT_NULL(strstr(err, "protected"));
	free(text);
	json_decref(doc);
	jobplan_free(jp);
	jobplan_free(jp2);
	deploy_free(d);
}

/* ---- re-planning hysteresis and budget (control/daemon/hyst.c) ---- */

static const struct hyst_cfg hcfg = {
	.min_epoch_ms = HYST_MIN_EPOCH_MS_DEFAULT,
	.short_ms = HYST_SHORT_MS_DEFAULT,
	.short_samples = HYST_SHORT_SAMPLES_DEFAULT,
	.replans_per_min = HYST_REPLANS_PER_MIN_DEFAULT,
	.failure_replans_per_min = HYST_FAILURE_REPLANS_PER_MIN_DEFAULT,
};

/* A measurement waits for the live epoch's minimum age, a failure does not. */
static void
test_hyst_min_epoch(void)
{
	struct hyst_job h = {0};
	int64_t due = -1;

	/* No live epoch: nothing to outlive. */
	CU_ASSERT(hyst_gate(&hcfg, &h, false, -1, 5000, &due) == HYST_NOW && due == 5000);
	hyst_record(&h, 5000);
	/* Epoch live since 6000: a measurement at 7000 waits until 16000. */
	CU_ASSERT(hyst_gate(&hcfg, &h, false, 6000, 7000, &due) == HYST_WAIT);
	CU_ASSERT_EQUAL(due, 6000 + HYST_MIN_EPOCH_MS_DEFAULT);
	CU_ASSERT(hyst_gate(&hcfg, &h, false, 6000, 15999, &due) == HYST_WAIT);
	CU_ASSERT(hyst_gate(&hcfg, &h, false, 6000, 16000, &due) == HYST_NOW);
	/* A failure is planned at once. */
	CU_ASSERT(hyst_gate(&hcfg, &h, true, 6000, 6001, &due) == HYST_NOW && due == 6001);
	CU_ASSERT_EQUAL(hyst_recent(&h, 6001), 1);
	CU_ASSERT_EQUAL(hyst_recent(&h, 5000 + HYST_WINDOW_MS), 0);
}

/*
 * The budgets: measurements stop at replans_per_min re-plans in a minute (failures
 * included), failures at failure_replans_per_min; both free again as the oldest leaves
 * the minute. Counted decisions, no clock.
 */
static void
test_hyst_budget(void)
{
	struct hyst_job h = {0};
	int64_t due, t = 100000;
	int now = 0;

	/* Failures every 100 ms: the first 30 at once, then they wait. */
	for (int i = 0; i < 100; i++, t += 100)
		if (hyst_gate(&hcfg, &h, true, t - 100, t, &due) == HYST_NOW) {
			hyst_record(&h, t);
			now++;
		}
	CU_ASSERT_EQUAL(now, HYST_FAILURE_REPLANS_PER_MIN_DEFAULT);
	CU_ASSERT(hyst_gate(&hcfg, &h, true, 0, t, &due) == HYST_WAIT);
	CU_ASSERT_EQUAL(due, 100000 + HYST_WINDOW_MS); /* the first leaves the minute */
	/* A measurement waits too, and for the smaller budget: until only 5 are left. */
	CU_ASSERT(hyst_gate(&hcfg, &h, false, 0, t, &due) == HYST_WAIT);
	CU_ASSERT_EQUAL(due, 100000 + 100 * (HYST_FAILURE_REPLANS_PER_MIN_DEFAULT -
					     HYST_REPLANS_PER_MIN_DEFAULT) +
				     HYST_WINDOW_MS);
	CU_ASSERT(hyst_gate(&hcfg, &h, false, 0, due, &due) == HYST_NOW);

	/* Measurements alone, one as soon as allowed, over ten minutes: never more than the
	 * budget in any minute, never two within the minimum age of an epoch. */
	struct hyst_job m = {0};
	int64_t live = -1, last = -HYST_WINDOW_MS; /* no live epoch at first */
	int planned = 0;

	for (t = 0; t < 10 * HYST_WINDOW_MS; t += 200)
		if (hyst_gate(&hcfg, &m, false, live, t, &due) == HYST_NOW) {
			CU_ASSERT(t - last >= HYST_MIN_EPOCH_MS_DEFAULT);
			hyst_record(&m, t);
			CU_ASSERT(hyst_recent(&m, t) <= HYST_REPLANS_PER_MIN_DEFAULT);
			live = last = t;
			planned++;
		}
	CU_ASSERT_EQUAL(planned, 10 * HYST_WINDOW_MS / HYST_MIN_EPOCH_MS_DEFAULT);

	/* A budget of 2 a minute with no minimum age: 2, then the third a minute after the
	 * first. */
	struct hyst_cfg two = hcfg;
	struct hyst_job b = {0};

	two.min_epoch_ms = 0;
	two.replans_per_min = 2;
	planned = 0;
	for (t = 0; t < HYST_WINDOW_MS + 1000; t += 1000)
		if (hyst_gate(&two, &b, false, t, t, &due) == HYST_NOW) {
			hyst_record(&b, t);
			planned++;
			CU_ASSERT(t == 0 || t == 1000 || t == HYST_WINDOW_MS);
		}
	CU_ASSERT_EQUAL(planned, 3);
}

/* The first heartbeat (200 ms apart, from 0) at which hyst_short_step() counts a
 * shortfall, short at heartbeat i when short(i); -1 if none within n heartbeats. *counted:
 * how many times it counted. */
static int
hyst_first_count(const struct hyst_cfg *c, bool (*is_short)(int), int n, int *counted)
{
	struct hyst_short s = { 0 };
	int first = -1;

	*counted = 0;
	for (int i = 0; i < n; i++)
		if (hyst_short_step(c, &s, is_short(i), (int64_t)i * 200)) {
			if (first < 0)
				first = i;
			++*counted;
		}
	return first;
}

static bool
every_other(int i)
{
	return i % 2 == 0;
}

static bool
one_in_four(int i)
{
	return i % 4 == 0;
}

static bool
always(int i)
{
	(void)i;
	return true;
}
/* A job's rounds: the link short behind its queue, but the heartbeat that falls between
 * two rounds finds the queue drained, one in six. */
static bool
rounds(int i)
{
	return i % 6 != 5;
}
/* A lone short heartbeat (a moment of starvation), 3 s of nothing, then short for good
 * from heartbeat 16. */
static bool
late(int i)
{
	return i == 0 || i >= 16;
}

/* A shortfall counts once a window of short_ms and short_samples, opened by a short
 * measurement, has at least two thirds of its measurements short. */
static void
test_hyst_short(void)
{
	int counted, first;

	/* A loaded host: short every other heartbeat, or one in four, for ten minutes:
	 * never counted. */
	CU_ASSERT_EQUAL(hyst_first_count(&hcfg, every_other, 3000, &counted), -1);
	CU_ASSERT_EQUAL(counted, 0);
	CU_ASSERT_EQUAL(hyst_first_count(&hcfg, one_in_four, 3000, &counted), -1);
	CU_ASSERT_EQUAL(counted, 0);
	/* Short all along: counted at the heartbeat 5 s after the first, then every 5 s
	 * (the next window opens at the heartbeat after). */
	first = hyst_first_count(&hcfg, always, 60, &counted);
	CU_ASSERT_EQUAL(first, HYST_SHORT_MS_DEFAULT / 200);
	CU_ASSERT_EQUAL(counted, 2);
	/* Rounds with a gap between them: counted as soon, though no six heartbeats in a row
	 * were ever short. */
	first = hyst_first_count(&hcfg, rounds, 60, &counted);
	CU_ASSERT_EQUAL(first, HYST_SHORT_MS_DEFAULT / 200);
	CU_ASSERT_EQUAL(counted, 2);
	/* The window a lone short heartbeat opened does not count (11 of 26 short); the next
	 * one, opened when the shortfall starts, does, 5 s on. */
	first = hyst_first_count(&hcfg, late, 120, &counted);
	CU_ASSERT_EQUAL(first, 26 + HYST_SHORT_MS_DEFAULT / 200);
	CU_ASSERT(first * 200 - 16 * 200 <= 2 * HYST_SHORT_MS_DEFAULT);
	/* Heartbeats 10 s apart: 5 s pass at once, the samples do not. */
	struct hyst_short w = { 0 };

	CU_ASSERT(!hyst_short_step(&hcfg, &w, true, 0));
	CU_ASSERT(!hyst_short_step(&hcfg, &w, false, 10000));
	CU_ASSERT(hyst_short_step(&hcfg, &w, true, 20000)); /* 2 of 3 */
	CU_ASSERT(!hyst_short_step(&hcfg, &w, true, 30000));
	CU_ASSERT(!hyst_short_step(&hcfg, &w, false, 40000));
	CU_ASSERT(!hyst_short_step(&hcfg, &w, false, 50000)); /* 1 of 3 */
	CU_ASSERT(!hyst_short_step(&hcfg, &w, false, 60000)); /* no window open */
	/* One measurement, no time: each short one counts, no other does. */
	struct hyst_cfg now = hcfg;

	now.short_ms = 0;
	now.short_samples = 1;
	w = (struct hyst_short){ 0 };
	CU_ASSERT(hyst_short_step(&now, &w, true, 0));
	CU_ASSERT(!hyst_short_step(&now, &w, false, 200));
	CU_ASSERT(hyst_short_step(&now, &w, true, 400));
}

/* What a link found short does to the capacity plans use: nothing new within a fifth of
 * a measured one, never lower than a measured one. */
static void
test_hyst_cap(void)
{
	CU_ASSERT_EQUAL(hyst_cap_step(0, 0.008, 0.2), HYST_CAP_NEW);
	CU_ASSERT_EQUAL(hyst_cap_step(0.008, 0.0075, 0.2), HYST_CAP_SAME);
	CU_ASSERT_EQUAL(hyst_cap_step(0.008, 0.009, 0.2), HYST_CAP_SAME);
	CU_ASSERT_EQUAL(hyst_cap_step(0.008, 0.010, 0.2), HYST_CAP_NEW);
	CU_ASSERT_EQUAL(hyst_cap_step(0.008, 0.0064, 0.2), HYST_CAP_LOWER);
	CU_ASSERT_EQUAL(hyst_cap_step(0.008, 0.002, 0.2), HYST_CAP_LOWER);
	/* Senders that carry half of any plan (windows sized for a round trip that a loaded
	 * host doubles), on a 0.02 Gbit/s link found short at every window: planned once
	 * at what it carried, and no lower after, where planning at every finding would
	 * halve the link at every epoch. */
	double in_force = 0;
	int epochs = 0;

	for (int k = 0; k < 10; k++) {
		double plan = in_force > 0 ? in_force : 0.02;

		if (hyst_cap_step(in_force, plan / 2, 0.2) == HYST_CAP_NEW) {
			in_force = plan / 2;
			epochs++;
		}
	}
	CU_ASSERT_EQUAL(epochs, 1);
	CU_ASSERT_DOUBLE_EQUAL(in_force, 0.01, 1e-12);
}

/* A job's traffic at heartbeats 200 ms apart from *t: signs for busy_ms, then none for
 * gap_ms; hyst_idle_step() at each with idle_ms 10 s. The changes of running counted. */
static void
idle_period(struct hyst_idle *h, bool *running, int64_t *active_at, int64_t *t, int64_t busy_ms,
	    int64_t gap_ms, int *flips)
{
	for (int64_t end = *t + busy_ms + gap_ms; *t < end; *t += 200) {
		bool run;

		if (*t < end - gap_ms)
			*active_at = *t;
		run = hyst_idle_step(h, *running, *active_at, *t, 10000);
		*flips += run != *running;
		*running = run;
	}
}

/* Going idle, damped: rounds a little more than --idle-ms apart flip the job's running
 * once, not at every round; an outer step minutes apart goes idle after --idle-ms every
 * time; the time grows to 8 --idle-ms at most and is reset by a long idle. */
static void
test_hyst_idle(void)
{
	struct hyst_idle h = {0};
	int64_t t = 1000, at = 0;
	bool running = false;
	int flips = 0;

	CU_ASSERT(!hyst_idle_step(&h, false, 0, t, 10000)); /* no traffic yet */
	CU_ASSERT_EQUAL(hyst_idle_after(&h, 10000), 10000);
	for (int k = 0; k < 40; k++) /* 3 s runs, 12 s apart: 10 minutes */
		idle_period(&h, &running, &at, &t, 3000, 12000, &flips);
	CU_ASSERT_EQUAL(flips, 3); /* running, idle once, running for good */
	CU_ASSERT(running);
	CU_ASSERT_EQUAL(hyst_idle_after(&h, 10000), 20000);

	h = (struct hyst_idle){0};
	running = false;
	flips = 0;
	for (int k = 0; k < 5; k++) { /* 3 s every 2 minutes: idle 10 s after each */
		int before = flips;

		idle_period(&h, &running, &at, &t, 3000, 120000, &flips);
		CU_ASSERT_EQUAL(flips - before, 2);
		CU_ASSERT(!running);
		CU_ASSERT_EQUAL(h.idle_at - at, 10000);
		CU_ASSERT_EQUAL(hyst_idle_after(&h, 10000), 10000);
	}

	/* Back 1 s after each going idle: 20, 40, 80 s, then no more than 80. */
	h = (struct hyst_idle){0};
	running = false;
	idle_period(&h, &running, &at, &t, 1000, 11000, &flips);
	CU_ASSERT(!running);
	for (int k = 0, want[] = {20000, 40000, 80000, 80000}; k < 4; k++) {
		int64_t after;

		idle_period(&h, &running, &at, &t, 1000, 0, &flips);
		after = hyst_idle_after(&h, 10000);
		CU_ASSERT_EQUAL(after, want[k]);
		idle_period(&h, &running, &at, &t, 0, after + 1000, &flips);
		CU_ASSERT(!running);
	}
	idle_period(&h, &running, &at, &t, 0, 100000, &flips); /* longer than its 80 s */
	idle_period(&h, &running, &at, &t, 1000, 0, &flips);
	CU_ASSERT(running);
	CU_ASSERT_EQUAL(hyst_idle_after(&h, 10000), 10000);
}

static void
test_hyst_cfg(void)
{
	struct hyst_cfg c = hcfg;

	CU_ASSERT_PTR_NULL(hyst_cfg_check(&c));
	c.replans_per_min = 0;
	CU_ASSERT_PTR_NOT_NULL(hyst_cfg_check(&c));
	c = hcfg;
	c.failure_replans_per_min = c.replans_per_min - 1;
	CU_ASSERT_PTR_NOT_NULL(hyst_cfg_check(&c));
	c = hcfg;
	c.failure_replans_per_min = HYST_WINDOW_MAX + 1;
	CU_ASSERT_PTR_NOT_NULL(hyst_cfg_check(&c));
	c = hcfg;
	c.short_samples = 0;
	CU_ASSERT_PTR_NOT_NULL(hyst_cfg_check(&c));
	c = hcfg;
	c.min_epoch_ms = -1;
	CU_ASSERT_PTR_NOT_NULL(hyst_cfg_check(&c));
}

/*
 * The daemon's loop over one elastic job, fed membership changes at the given times (ms,
 * ascending; join[k] says a join or a leave): the batch is asked at every event and every
 * `tick` ms, as the poll loop wakes; each due batch is an epoch, which takes `install` ms
 * during which nothing is asked (the install blocks the daemon's thread) but changes
 * still arrive. The epochs made, and the changes they carried in *joins, *leaves.
 */
static int
batch_run(const int64_t *at, const bool *join, int n, int64_t window, int64_t tick,
	  int64_t install, int *joins, int *leaves)
{
	struct hyst_batch b = {0};
	int64_t busy_until = 0, due;
	int epochs = 0, k = 0, jn, lv;

	*joins = *leaves = 0;
	for (int64_t t = 0; k < n || b.joins + b.leaves > 0; t += tick) {
		while (k < n && at[k] <= t)
			hyst_batch_note(&b, join[k], at[k]), k++;
		if (t < busy_until || !hyst_batch_due(&b, window, t, &jn, &lv, &due))
			continue;
		epochs++;
		*joins += jn;
		*leaves += lv;
		busy_until = t + install;
	}
	return epochs;
}

static void
test_membership_batch(void)
{
	int64_t at[128];
	bool join[128];
	int64_t due;
	int jn, lv, e;
	struct hyst_batch b = {0};

	/* Nothing pending: nothing due, no time to ask again. */
	CU_ASSERT_FALSE(hyst_batch_due(&b, 500, 1000, &jn, &lv, &due));
	CU_ASSERT_EQUAL(due, -1);
	/* One join: due a window after it, not before. */
	hyst_batch_note(&b, true, 1000);
	CU_ASSERT_FALSE(hyst_batch_due(&b, 500, 1499, &jn, &lv, &due));
	CU_ASSERT_EQUAL(due, 1500);
	CU_ASSERT_TRUE(hyst_batch_due(&b, 500, 1500, &jn, &lv, &due));
	CU_ASSERT(jn == 1 && lv == 0);
	CU_ASSERT_FALSE(hyst_batch_due(&b, 500, 1501, &jn, &lv, &due));

	/* A storm of 64 joins within 64 ms: one epoch with all of them. */
	for (int k = 0; k < 64; k++)
		at[k] = k, join[k] = true;
	e = batch_run(at, join, 64, 500, 1, 0, &jn, &lv);
	CU_ASSERT_EQUAL(e, 1);
	CU_ASSERT(jn == 64 && lv == 0);
	/* The same storm spread over 1.26 s (one join every 20 ms): one epoch per window,
	 * 3, every join in one of them. */
	for (int k = 0; k < 64; k++)
		at[k] = 20 * k;
	e = batch_run(at, join, 64, 500, 1, 0, &jn, &lv);
	CU_ASSERT_EQUAL(e, 3);
	CU_ASSERT_EQUAL(jn, 64);
	/* Installs of 300 ms each hold the thread: changes queue into the next batch, the
	 * epochs are no more. */
	e = batch_run(at, join, 64, 500, 1, 300, &jn, &lv);
	CU_ASSERT(e >= 2 && e <= 3);
	CU_ASSERT_EQUAL(jn, 64);
	/* Without a window every change that finds the loop free is an epoch of its own. */
	e = batch_run(at, join, 64, 0, 1, 0, &jn, &lv);
	CU_ASSERT_EQUAL(e, 64);
	/* 64 joins then 64 leaves, all within 100 ms: one epoch carrying both. */
	for (int k = 0; k < 128; k++)
		at[k] = k * 100 / 128, join[k] = k < 64;
	e = batch_run(at, join, 128, 500, 10, 0, &jn, &lv);
	CU_ASSERT_EQUAL(e, 1);
	CU_ASSERT(jn == 64 && lv == 64);

	/* A member's renewals: missed once timeout_ms have passed since the last. */
	CU_ASSERT_FALSE(hyst_member_expired(1000, 5000, 5999));
	CU_ASSERT_TRUE(hyst_member_expired(1000, 5000, 6000));
}

/* ---- links down and up (linkwatch.c): heartbeats of 200 ms, --fail-after 3 ----------- */

static const struct lw_cfg lwc = {.heartbeat_ms = 200, .fail_after = 3};

/* A probe report: fresh, a 4 ms round trip, 1 ms pings. */
static struct lw_probe
lw_rep(int64_t since, int64_t unanswered)
{
	return (struct lw_probe){.fresh = true,
				 .since_ms = since,
				 .unanswered = unanswered,
				 .rtt_ms = 4,
				 .ping_ms = 1};
}

/* One heartbeat of a link with one gateway per site, both directions reporting r. */
static enum lw_change
lw_feed(struct lw_link *w, bool *up, struct lw_probe r, int64_t late)
{
	struct lw_beat b = {0};
	enum lw_change c;

	lw_beat_add(&b, &lwc, late, &r, &r);
	c = lw_step(w, *up, &b, &lwc);
	if (c != LW_SAME)
		*up = c == LW_UP;
	return c;
}

/* Starved but alive: no pattern of late or missing replies shorter than the documented
 * allowance, nor a prober that sent nothing, nor heartbeats that a gateway missed, make
 * the link down. */
static void
test_lw_starved(void)
{
	struct lw_link w = {0};
	bool up = true;
	int downs = 0, late = 0;

	for (int i = 0; i < 1000; i++) {
		struct lw_probe r;

		switch (i % 7) {
		case 2: /* one stalled sample: 1.5 s of silence, 14 probes unanswered */
			r = lw_rep(1500, 14);
			break;
		case 4: /* the prober's control thread starved: silent, but it sent 1 probe */
			r = lw_rep(5000, 1);
			break;
		case 5: /* a gateway that missed the heartbeat: its stale report */
			r = lw_rep(9000, 90);
			r.fresh = false;
			break;
		default:
			r = lw_rep(40, 0);
		}
		downs += lw_feed(&w, &up, r, 0) == LW_DOWN;
	}
	CU_ASSERT_EQUAL(downs, 0);
	CU_ASSERT(up);
	/* Stalled twice in a row, 700 ms and 900 ms of silence, on a machine where the
	 * daemon itself was 600 ms late: its lateness (remembered for the heartbeats it
	 * lasted) is allowed for. */
	for (int i = 0; i < 100; i++) {
		int64_t l = lw_late(late, i % 5 == 0 ? 600 : 0, lwc.heartbeat_ms);

		late = (int)l;
		downs += lw_feed(&w, &up, i % 5 == 0 ? lw_rep(700, 7) : i % 5 == 1 ? lw_rep(900, 9) :
										 lw_rep(30, 0),
				 l) == LW_DOWN;
	}
	CU_ASSERT_EQUAL(downs, 0);
	/* Pings of 300 ms (a starved dataplane control thread): 1.1 s of silence allowed. */
	for (int i = 0; i < 100; i++) {
		struct lw_probe r = i % 3 == 2 ? lw_rep(30, 0) : lw_rep(1100, 11);

		r.ping_ms = 300;
		downs += lw_feed(&w, &up, r, 0) == LW_DOWN;
	}
	CU_ASSERT_EQUAL(downs, 0);
	/* Never heard from the start (a path without probes): no evidence, stays up. */
	for (int i = 0; i < 50; i++)
		downs += lw_feed(&w, &up, lw_rep(-1, 10 * i), 0) == LW_DOWN;
	CU_ASSERT_EQUAL(downs, 0);
}

/* A real cut: the silence grows by a heartbeat at each, probes go unanswered; down within
 * --fail-after + 1 + LW_CONFIRM_BEATS heartbeats, and only once; up again after
 * --fail-after heartbeats in a row of both ends hearing, not before. */
static void
test_lw_cut(void)
{
	struct lw_link w = {0};
	bool up = true;
	int at = -1, downs = 0, ups = 0;

	for (int i = 0; i < 20; i++)
		CU_ASSERT_EQUAL(lw_feed(&w, &up, lw_rep(50, 0), 0), LW_SAME);
	/* The cut: the last reply came 50 ms before it. */
	for (int k = 1; k <= 30; k++)
		if (lw_feed(&w, &up, lw_rep(50 + 200 * k, 2 * k), 0) == LW_DOWN) {
			downs++;
			if (at < 0)
				at = k;
		}
	CU_ASSERT_EQUAL(downs, 1);
	CU_ASSERT(at > 0 && at <= lwc.fail_after + 1 + LW_CONFIRM_BEATS);
	CU_ASSERT_FALSE(up);
	/* Heard again, but a quiet heartbeat in between starts the count again. */
	CU_ASSERT_EQUAL(lw_feed(&w, &up, lw_rep(20, 0), 0), LW_SAME);
	CU_ASSERT_EQUAL(lw_feed(&w, &up, lw_rep(20, 0), 0), LW_SAME);
	CU_ASSERT_EQUAL(lw_feed(&w, &up, lw_rep(2000, 20), 0), LW_SAME);
	for (int i = 0; i < lwc.fail_after; i++)
		ups += lw_feed(&w, &up, lw_rep(20, 0), 0) == LW_UP ? i + 1 : 0;
	CU_ASSERT_EQUAL(ups, lwc.fail_after);
	CU_ASSERT(up);
	/* One direction only (a one-way loss): down too. */
	struct lw_link w2 = {0};
	struct lw_probe ok = lw_rep(30, 0);

	downs = 0;
	up = true;
	for (int k = 1; k <= 10; k++) {
		struct lw_probe cut = lw_rep(200 * k, 2 * k);
		struct lw_beat b = {0};
		enum lw_change c;

		lw_beat_add(&b, &lwc, 0, &ok, &cut);
		CU_ASSERT_EQUAL(b.fresh, 1);
		CU_ASSERT_EQUAL(b.silence_ms, 200 * k);
		c = lw_step(&w2, up, &b, &lwc);
		downs += c == LW_DOWN;
		up &= c != LW_DOWN;
	}
	CU_ASSERT_EQUAL(downs, 1);
	CU_ASSERT_FALSE(up);
	/* A heartbeat that no pair answered holds the streak: cut, then gateways that miss
	 * heartbeats in between, still down at the second quiet one. */
	struct lw_link w3 = {0};
	struct lw_beat none = {0}, q = {0};
	struct lw_probe qr = lw_rep(5000, 50);

	lw_beat_add(&q, &lwc, 0, &qr, &qr);
	CU_ASSERT_EQUAL(lw_step(&w3, true, &q, &lwc), LW_SAME);
	for (int i = 0; i < 10; i++)
		CU_ASSERT_EQUAL(lw_step(&w3, true, &none, &lwc), LW_SAME);
	CU_ASSERT_EQUAL(lw_step(&w3, true, &q, &lwc), LW_DOWN);
}

/* A starved host: every link of the WAN quiet at the same heartbeats (the probes of every
 * gateway stalled) takes no link down; a cut of one link among heard ones does, and so does
 * the cut of every link of one site while another link is heard. */
static void
test_lw_wan(void)
{
	struct lw_link w[3] = {{0}};
	bool up[3] = {true, true, true};
	int downs = 0;

	for (int k = 1; k <= 20; k++) {
		/* Three links, all silent for 5 s every fourth heartbeat and the next. */
		bool stall = k % 4 == 0 || k % 4 == 1;
		struct lw_probe r = stall ? lw_rep(5000, 50) : lw_rep(30, 0);
		struct lw_beat b[3] = {{0}};
		struct lw_wan wan = {0};

		for (int l = 0; l < 3; l++) {
			lw_beat_add(&b[l], &lwc, 0, &r, &r);
			lw_wan_add(&wan, &b[l]);
		}
		CU_ASSERT_EQUAL(lw_host_starved(&wan), stall);
		for (int l = 0; l < 3 && !lw_host_starved(&wan); l++)
			downs += lw_step(&w[l], up[l], &b[l], &lwc) == LW_DOWN;
	}
	CU_ASSERT_EQUAL(downs, 0);
	/* Links 0 and 1 cut (a site cut off), link 2 heard: not the host. */
	for (int k = 1; k <= 10; k++) {
		struct lw_probe cut = lw_rep(200 * k, 2 * k), ok = lw_rep(30, 0);
		struct lw_beat b[3] = {{0}};
		struct lw_wan wan = {0};

		for (int l = 0; l < 3; l++) {
			lw_beat_add(&b[l], &lwc, 0, l < 2 ? &cut : &ok, l < 2 ? &cut : &ok);
			lw_wan_add(&wan, &b[l]);
		}
		CU_ASSERT_FALSE(lw_host_starved(&wan));
		for (int l = 0; l < 3; l++) {
			enum lw_change c = lw_step(&w[l], up[l], &b[l], &lwc);

			downs += c == LW_DOWN;
			up[l] &= c != LW_DOWN;
		}
	}
	CU_ASSERT_EQUAL(downs, 2);
	CU_ASSERT(!up[0] && !up[1] && up[2]);
	/* One link with evidence: a cut of it is a cut (a two-site WAN has no other). */
	struct lw_wan one = {0};
	struct lw_beat q = {0};
	struct lw_probe qr = lw_rep(5000, 50);

	lw_beat_add(&q, &lwc, 0, &qr, &qr);
	lw_wan_add(&one, &q);
	lw_wan_add(&one, &(struct lw_beat){0});
	CU_ASSERT_FALSE(lw_host_starved(&one));
}

/* Two gateways per site: the link is quiet when one pair is, heard when all are. */
static void
test_lw_pairs(void)
{
	struct lw_probe ok = lw_rep(30, 0), cut = lw_rep(3000, 30), never = lw_rep(-1, 30);
	struct lw_beat b = {0};

	lw_beat_add(&b, &lwc, 0, &ok, &ok);
	lw_beat_add(&b, &lwc, 0, &cut, &ok);
	CU_ASSERT_EQUAL(b.fresh, 2);
	CU_ASSERT(b.quiet);
	CU_ASSERT_FALSE(b.heard);
	b = (struct lw_beat){0};
	lw_beat_add(&b, &lwc, 0, &ok, &ok);
	lw_beat_add(&b, &lwc, 0, &never, &ok);
	CU_ASSERT_FALSE(b.quiet);
	CU_ASSERT_FALSE(b.heard);
	/* The allowance: 3 heartbeats, twice the round trip, the lateness, twice the ping. */
	CU_ASSERT_EQUAL(lw_limit_ms(&lwc, &ok, 100), 600 + 8 + 100 + 2);
	CU_ASSERT_EQUAL(lw_limit_ms(&lwc, &ok, -5), 600 + 8 + 2);
	/* The lateness remembered: 1 s late, then on time, decays a heartbeat at a time. */
	CU_ASSERT_EQUAL(lw_late(0, 1000, 200), 1000);
	CU_ASSERT_EQUAL(lw_late(1000, 0, 200), 800);
	CU_ASSERT_EQUAL(lw_late(800, 900, 200), 900);
	CU_ASSERT_EQUAL(lw_late(100, -3, 200), 0);
}

int
main(void)
{
	CU_pSuite s;
	unsigned int fails;

	if (mkdtemp(dir) == NULL)
		return 1;
	if (CU_initialize_registry() != CUE_SUCCESS)
		return 1;
	s = CU_add_suite("control", NULL, NULL);
	CU_add_test(s, "two-phase install: every gateway ok", test_install_all_ok);
	CU_add_test(s, "two-phase install: a prepare rejected", test_install_rejected);
	CU_add_test(s, "two-phase install: a prepare unanswered", test_install_silent);
	CU_add_test(s, "two-phase install: a gateway dies between the phases", test_install_dies);
	CU_add_test(s, "two-phase install: no socket, wrong epoch", test_install_no_socket);
	CU_add_test(s, "planning without a failed gateway", test_plan_without_node);
	CU_add_test(s, "an epoch's membership names its workers", test_plan_membership);
	CU_add_test(s, "planning with two gateways at a site", test_plan_two_gateways);
	CU_add_test(s, "planning with measured link capacities", test_plan_measured_links);
	CU_add_test(s, "planning within the oldest gateway's revision", test_plan_revision);
	CU_add_test(s, "the daemon's per-link counters: trees and streams", test_link_counters);
	CU_add_test(s, "jobs share a link by weight", test_shares_split);
	CU_add_test(s, "jobs planned over their shares of the links", test_shares_plans);
	CU_add_test(s, "shares computed again: capacities, links, weights", test_shares_compute);
	CU_add_test(s, "the ring as chain trees", test_ring_chains);
	CU_add_test(s, "CREW as stars with a threshold", test_crew_plan);
	CU_add_test(s, "selmcast: streams, one copy per tree edge, rates fit", test_selmcast_plan);
	CU_add_test(s, "protected links: a key per link and epoch", test_protected_links);
	CU_add_test(s, "re-plans: a measurement waits for the epoch's minimum age",
		    test_hyst_min_epoch);
	CU_add_test(s, "re-plans: the budgets of measurements and failures", test_hyst_budget);
	CU_add_test(s, "re-plans: a shortfall counts once it persists", test_hyst_short);
	CU_add_test(s, "re-plans: a link found short is never planned lower than measured",
		    test_hyst_cap);
	CU_add_test(s, "re-plans: a job back soon after going idle stays running longer",
		    test_hyst_idle);
	CU_add_test(s, "re-plans: bad hysteresis settings", test_hyst_cfg);
	CU_add_test(s, "elastic jobs: joins and leaves batched into epochs",
		    test_membership_batch);
	CU_add_test(s, "links: a starved but live link stays up", test_lw_starved);
	CU_add_test(s, "links: a cut is down within the documented heartbeats", test_lw_cut);
	CU_add_test(s, "links: pairs of gateways, the allowance, the lateness", test_lw_pairs);
	CU_add_test(s, "links: every link quiet at once is the host, not the WAN", test_lw_wan);
	CU_basic_set_mode(CU_BRM_VERBOSE);
	CU_basic_run_tests();
	fails = CU_get_number_of_failures();
	CU_cleanup_registry();
	rmdir(dir);
	return (int)fails;
}
