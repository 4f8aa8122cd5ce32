/* SPDX-License-Identifier: BSD-3-Clause
 *
 * Taking over, planning and installing each job's epochs (epochs.h), when a job marked for
 * a new epoch may be planned (the hysteresis and budget of hyst.h), and what the daemon
 * does after a failed install. On the daemon's thread. No DPDK.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "clock.h"
#include "daemon_internal.h"
#include "elastic.h"
#include "elect.h"
#include "epochs.h"
#include "health.h"
#include "jobs.h"
#include "revision.h"
#include "shares.h"

/* "a b c": the names of the gateways with a table in jp. */
static void
member_list(const struct dmn *m, const struct jobplan *jp, char *buf, size_t len)
{
	size_t off = 0;

	buf[0] = '\0';
	for (int v = 0; v < jp->n_gateways && off < len; v++)
		if (jp->tables[v] != NULL)
			off += (size_t)snprintf(buf + off, len - off, "%s%s", off > 0 ? " " : "",
						gw_name(m, v));
}

/* The live table of job ji that gateway v reported when it came up (its `dump` item's
 * "table"), or NULL. */
static json_t *
live_table(const struct dmn *m, int v, int ji)
{
	return json_object_get(m->gws[v].live[ji], "table");
}

/* Does the gateway seal exactly the links tb seals, each with the same AEAD? `sealed` is
 * its dump's list for the epoch (peer, key_id, aead; never a key), NULL from a gateway
 * without protected links. The keys themselves are known only to the gateways. */
static bool
same_seals(const struct table *tb, const json_t *sealed)
{
	if ((int)json_array_size(sealed) != tb->n_seals)
		return false;
	for (int i = 0; i < tb->n_seals; i++) {
		const char *an = table_aead_name(tb->seals[i].aead);
		bool found = false;
		const json_t *s;
		size_t k;

		json_array_foreach (sealed, k, s)
			found = found ||
				(json_integer_value(json_object_get(s, "peer")) ==
					 tb->seals[i].peer &&
				 an != NULL && json_is_string(json_object_get(s, "aead")) &&
				 strcmp(json_string_value(json_object_get(s, "aead")), an) == 0);
		if (!found)
			return false;
	}
	return true;
}

/* Does every gateway that is up run epoch e of job ji exactly as jp compiles it (and those
 * without a table in jp none of it), its protected links too? *k: the gateways with a
 * table. */
static bool
same_as_live(const struct dmn *m, int ji, const bool *up, const struct jobplan *jp, json_int_t e,
	     int *k)
{
	bool same = true;

	*k = 0;
	for (int v = 0; v < m->d->n_gateways && same; v++) {
		json_t *lt = up[v] ? live_table(m, v, ji) : NULL;
		bool has_e = lt != NULL && json_integer_value(json_object_get(lt, "epoch")) == e;

		if (jp->tables[v] == NULL) {
			same = !has_e;
			continue;
		}
		json_t *mine = table_to_json_public(jp->tables[v]);

		same = has_e && mine != NULL && json_equal(mine, lt) &&
		       same_seals(jp->tables[v], json_object_get(m->gws[v].live[ji], "sealed"));
		json_decref(mine);
		(*k)++;
	}
	return same;
}

/*
 * A plan taken over (adopt()) holds link keys of its own drawing, which the gateways never
 * had: they are wiped, and each protected link gets the key id the gateway reported. The
 * keys of a live epoch are needed only to install it, and an epoch is never installed
 * twice (every change is a new epoch with fresh keys), so a process that takes over does
 * without them: no key is kept in the state directory or in etcd.
 */
static void
forget_keys(const struct dmn *m, int ji, struct jobplan *jp)
{
	for (int v = 0; v < jp->n_gateways; v++)
		for (int i = 0; jp->tables[v] != NULL && i < jp->tables[v]->n_seals; i++) {
			struct table_seal *sl = &jp->tables[v]->seals[i];
			const json_t *s;
			size_t k;

			explicit_bzero(sl->key, sizeof(sl->key));
			json_array_foreach (json_object_get(m->gws[v].live[ji], "sealed"), k, s)
				if (json_integer_value(json_object_get(s, "peer")) == sl->peer)
					sl->key_id = (uint32_t)json_integer_value(
						json_object_get(s, "key_id"));
		}
}

/* The links job ji would have been planned over alone (whole: the whole capacities) or
 * with every job running, into lk. 0 or -ENOMEM. */
static int
adopt_links(struct dmn *m, int ji, const bool *up, bool whole, struct jobplan_link *lk)
{
	int nd = 2 * m->d->topo->n_links;
	double *share;

	if (whole) {
		shares_job_links(m->d, m->link, NULL, lk);
		return 0;
	}
	share = calloc((size_t)m->d->n_jobs * (size_t)nd + 1, sizeof(*share));
	if (share == NULL || shares_compute(m->d, up, m->link, NULL, share) != 0) {
		free(share);
		return -ENOMEM;
	}
	shares_job_links(m->d, m->link, share + (size_t)ji * (size_t)nd, lk);
	free(share);
	return 0;
}

/*
 * At start: if the gateways already run an epoch of job ji (a restarted control process,
 * a replica that takes over), plan that epoch again over the gateways that are up and the
 * job's shares of the links (lk); when every gateway's live table is exactly what the plan
 * compiles to (the planner is deterministic), take it over as the live epoch, installing
 * nothing. The shares it was planned with depend on which jobs ran then, which this process
 * may not know yet (a job between rounds looks idle): the plans over the whole links and
 * with every job running are tried too. True if it took the epoch over.
 */
static bool
adopt(struct dmn *m, int ji, const bool *up, const struct jobplan_link *lk)
{
	const struct deploy_job *dj = &m->d->jobs[ji];
	struct job *j = &m->jobs[ji];
	int n = m->d->n_gateways, k = 0;
	char err[JOBPLAN_ERR_MAX], members[1024];
	struct jobplan_link *alt = calloc((size_t)m->d->topo->n_links + 1, sizeof(*alt));
	struct jobplan *jp = NULL;
	json_int_t e = -1;
	bool same = false;

	for (int v = 0; v < n; v++) {
		json_t *lt = live_table(m, v, ji);

		if (up[v] && lt != NULL && json_integer_value(json_object_get(lt, "epoch")) > e)
			e = json_integer_value(json_object_get(lt, "epoch"));
	}
	if (e <= 0 || alt == NULL) {
		free(alt);
		return false;
	}
	for (int a = 0; a < 3 && !same; a++) {
		jobplan_free(jp);
		jp = NULL;
		if (a > 0 && adopt_links(m, ji, up, a == 1, alt) != 0)
			continue;
		if (jobplan_build(m->d, ji, up, a == 0 ? lk : alt, (uint32_t)e, &jp, err,
				  sizeof(err)) != 0) {
			if (a == 0)
				control_log("job %u: epoch %lld runs on the gateways but cannot be "
					    "planned again (%s): a new epoch replaces it",
					    dj->id, (long long)e, err);
			if (a == 0)
				break;
			continue;
		}
		same = same_as_live(m, ji, up, jp, e, &k);
		/* Taken over with other shares than the job's now: recorded as those of its
		 * plan, so that the shares re-plan it (shares_update(), within the hysteresis). */
		for (int l = 0;
		     same && a > 0 && j->planned_share != NULL && l < m->d->topo->n_links; l++) {
			j->planned_share[2 * l] =
				alt[l].up && alt[l].gbps_ab > 1e-9 ? alt[l].gbps_ab : 0;
			j->planned_share[2 * l + 1] =
				alt[l].up && alt[l].gbps_ba > 1e-9 ? alt[l].gbps_ba : 0;
		}
	}
	free(alt);
	if (!same) {
		if (jp != NULL)
			control_log(
				"job %u: epoch %lld on the gateways is not what this deployment "
				"plans now: a new epoch replaces it",
				dj->id, (long long)e);
		jobplan_free(jp);
		return false;
	}
	forget_keys(m, ji, jp);
	member_list(m, jp, members, sizeof(members));
	jobplan_free(j->live);
	j->live = jp;
	j->epochs++;
	j->live_epoch = (uint32_t)e;
	j->live_since = clock_now_ms();
	j->error[0] = '\0';
	elastic_epoch_live(m, ji);
	if (m->o->out != NULL && jobplan_write(j->live, m->d, m->o->out, err, sizeof(err)) != 0)
		control_log("job %u: epoch %u: %s", dj->id, j->live_epoch, err);
	control_log("job %u: epoch %u found live on %d gateways (%s): carried on, nothing "
		    "installed",
		    dj->id, j->live_epoch, k, members);
	if (jobs_state_save(m, -1, err, sizeof(err)) != 0) /* what this process took over */
		control_log("job %u: epoch %u carried on but not recorded (%s)", dj->id,
			    j->live_epoch, err);
	return true;
}

/* Do the plans live (of epoch `live_epoch`) and jp compile to the same tables on every
 * gateway, link keys apart? */
static bool
same_tables(const struct jobplan *live, const struct jobplan *jp, uint32_t live_epoch)
{
	bool same = live != NULL && live->n_gateways == jp->n_gateways;

	for (int v = 0; same && v < jp->n_gateways; v++) {
		json_t *a, *b;

		if (live->tables[v] == NULL || jp->tables[v] == NULL) {
			same = live->tables[v] == jp->tables[v];
			continue;
		}
		a = table_to_json_public(live->tables[v]);
		b = table_to_json_public(jp->tables[v]);
		if (b != NULL) /* compared as if of the same epoch */
			json_object_set_new(b, "epoch", json_integer(live_epoch));
		same = a != NULL && b != NULL && json_equal(a, b);
		json_decref(a);
		json_decref(b);
	}
	return same;
}

static void
install_job(struct dmn *m, int ji)
{
	const struct deploy_job *dj = &m->d->jobs[ji];
	struct job *j = &m->jobs[ji];
	int n = m->d->n_gateways, k = 0, rc;
	struct install_gw *gws = calloc((size_t)n, sizeof(*gws));
	struct table **tables = calloc((size_t)n, sizeof(*tables));
	bool *up = calloc((size_t)n, sizeof(*up)), *af = calloc((size_t)n, sizeof(*af));
	int *idx = calloc((size_t)n, sizeof(*idx));
	uint32_t *mship = calloc((size_t)n, sizeof(*mship));
	struct jobplan_link *lk = calloc((size_t)m->d->topo->n_links + 1, sizeof(*lk));
	struct install_report rep = {.activate_failed = af};
	char summary[2048], members[1024];
	struct jobplan *jp = NULL;
	enum cause cause;
	uint32_t epoch;

	j->dirty = false;
	if (gws == NULL || tables == NULL || up == NULL || af == NULL || idx == NULL ||
	    mship == NULL || lk == NULL) {
		control_log("job %u: out of memory", dj->id);
		j->dirty = true;
		goto out;
	}
	for (int v = 0; v < n; v++)
		up[v] = m->gws[v].state == GW_UP;
	/* Planned over its shares of the links, not their whole capacity. */
	shares_links(m, ji, lk);
	if (dj->n_workers == 0) { /* an elastic job before its first join */
		control_log("job %u: no workers yet: no epoch until one joins", dj->id);
		goto out;
	}
	if (!j->adopt_tried) {
		j->adopt_tried = true;
		if (j->live == NULL && adopt(m, ji, up, lk))
			goto out;
	}
	epoch = j->next_epoch++;
	if (j->next_epoch == 0)
		j->next_epoch = 1;
	cause = j->cause < CAUSE_COUNT ? j->cause : CAUSE_START;
	j->replans[cause]++;
	j->holding = false;
	rc = jobplan_build(m->d, ji, up, lk, epoch, &jp, j->error, sizeof(j->error));
	if (rc != 0) {
		j->plan_failures++;
		control_log("job %u: no epoch %u (%s): %s; it stays on epoch %u", dj->id, epoch,
			    j->reason, j->error, j->live_epoch);
		goto out;
	}
	if (jp->chunk_bytes < dj->chunk_bytes &&
	    (j->live == NULL || j->live->chunk_bytes != jp->chunk_bytes))
		control_log("job %u: chunks of %u bytes, not %u: gateway %s implements revision "
			    "1.%u%s, which takes at most %d bytes a chunk (1.%d takes more)",
			    dj->id, jp->chunk_bytes, dj->chunk_bytes, gw_name(m, jp->revision_gw),
			    jp->revision,
			    m->d->gateways[jp->revision_gw].revision == 0 ? " (no revision in its "
									    "`version`: older)" :
									    "",
			    REVISION_OLD_CHUNK_BYTES, REVISION_JUMBO_CHUNKS);
	if (cause_may_keep(cause) && same_tables(j->live, jp, j->live_epoch)) {
		/* A change that this job's plan does not see (a link or gateway it does not
		 * use, a capacity that changes nothing): no epoch, the number is not used. */
		j->unchanged[cause]++;
		j->next_epoch = epoch;
		j->error[0] = '\0';
		control_log("job %u: re-planned (%s; cause %s): the same tables as epoch %u, "
			    "which stays",
			    dj->id, j->reason, cause_names[cause], j->live_epoch);
		goto out;
	}
	/* The epoch's number is recorded as used before any gateway sees it, so that no
	 * later leader or restart prepares another epoch with it (the state, jobs.h): a
	 * replica deposed meanwhile cannot record it, and installs nothing. */
	if (jobs_state_save(m, -1, j->error, sizeof(j->error)) != 0) {
		control_log("job %u: epoch %u not installed: its number cannot be recorded: %s",
			    dj->id, epoch, j->error);
		j->retry_in = DAEMON_RETRY_HEARTBEATS;
		goto out;
	}
	/* Only a re-plan that makes an epoch counts in the budget (hyst.h): one that found
	 * no plan or nothing new installed nothing. */
	hyst_record(&j->hy, clock_now_ms());
	member_list(m, jp, members, sizeof(members));
	control_log("job %u: epoch %u planned (%s; cause %s, %llu so far, %d re-plans in the "
		    "last minute): %s",
		    dj->id, epoch, j->reason, cause_names[cause],
		    (unsigned long long)j->replans[cause], hyst_recent(&j->hy, clock_now_ms()),
		    jobplan_summary(jp, summary, sizeof(summary)));
	for (int v = 0; v < n; v++) {
		if (jp->tables[v] == NULL)
			continue;
		gws[k] = m->gws[v].conn;
		tables[k] = jp->tables[v];
		/* Named to the gateways that take it (docs/PROTOCOL.md 10.1, revision 1.16). */
		mship[k] = revision_effective(m->d->gateways[v].revision) >= REVISION_MEMBERSHIP ?
				   jp->membership :
				   0;
		idx[k++] = v;
	}
	rc = install_epoch(gws, tables, mship, k, dj->id, epoch, m->o->timeout_ms, &rep);
	for (int i = 0; i < k; i++) /* connections opened or closed during the install */
		m->gws[idx[i]].conn = gws[i];
	if (rc == -ECANCELED) {
		snprintf(j->error, sizeof(j->error), "%s", rep.error);
		control_log("job %u: epoch %u not installed: %s; prepared on %d of %d gateways, "
			    "activated on none; the job stays on epoch %u",
			    dj->id, epoch, rep.error, rep.n_prepared, k, j->live_epoch);
		if (rep.no_answer) {
			gateway_down(m, idx[rep.failed], rep.error);
			j->dirty = true;
			j->cause = CAUSE_GATEWAY_NO_ANSWER;
			snprintf(j->reason, sizeof(j->reason), "gateway %s did not answer",
				 gw_name(m, idx[rep.failed]));
		} else {
			if (j->retry_after < DAEMON_RETRY_HEARTBEATS)
				j->retry_after = DAEMON_RETRY_HEARTBEATS;
			j->retry_in = j->retry_after;
			if (j->retry_after < DAEMON_RETRY_MAX_HEARTBEATS / 2)
				j->retry_after *= 2;
			j->cause = CAUSE_REJECTED;
			snprintf(j->reason, sizeof(j->reason), "retry after a rejected prepare");
		}
		goto out;
	}
	if (rc != 0 && rc != -EIO) {
		snprintf(j->error, sizeof(j->error), "install: %s", strerror(-rc));
		control_log("job %u: epoch %u not installed: %s", dj->id, epoch, j->error);
		goto out;
	}
	jobplan_free(j->live);
	j->live = jp;
	jp = NULL;
	j->epochs++;
	j->live_epoch = epoch;
	j->live_since = clock_now_ms();
	elastic_epoch_live(m, ji);
	if (jobs_state_save(m, -1, summary, sizeof(summary)) != 0)
		control_log("job %u: epoch %u live but not recorded as such (%s): a process that "
			    "takes over reads the gateways",
			    dj->id, epoch, summary);
	if (m->o->out != NULL) {
		char err[256];

		if (jobplan_write(j->live, m->d, m->o->out, err, sizeof(err)) != 0)
			control_log("job %u: epoch %u: %s", dj->id, epoch, err);
	}
	if (rc == 0) {
		j->error[0] = '\0';
		j->retry_after = 0;
		control_log("job %u: epoch %u live on %d gateways (%s)", dj->id, epoch, k, members);
		goto out;
	}
	/* Some activates failed: those gateways still run the previous epoch. */
	snprintf(j->error, sizeof(j->error), "%s", rep.error);
	control_log("job %u: epoch %u live on %d of %d gateways (%s); %d failed to activate, "
		    "first %s",
		    dj->id, epoch, rep.n_activated, k, members, rep.n_failed, rep.error);
	for (int i = 0; i < k; i++)
		if (af[i] && !m->gws[idx[i]].conn.open && m->gws[idx[i]].state == GW_UP)
			gateway_down(m, idx[i], "no answer to activate");
	j->dirty = true;
	j->cause = CAUSE_ACTIVATION;
	snprintf(j->reason, sizeof(j->reason), "activation failed on %d gateways", rep.n_failed);
out:
	jobplan_free(jp);
	free(lk);
	free(idx);
	free(mship);
	free(af);
	free(up);
	free(tables);
	free(gws);
}

/* May job i, marked for a new epoch, be planned now (hyst_gate())? Logs a re-plan held
 * back once, when it is first held. */
static bool
replan_allowed(struct dmn *m, int i)
{
	struct job *j = &m->jobs[i];
	int64_t now = clock_now_ms(), due;
	bool prompt = cause_prompt(j->cause);
	int recent = hyst_recent(&j->hy, now);

	if (hyst_gate(&m->o->hyst, &j->hy, prompt, j->live != NULL ? j->live_since : -1, now,
		      &due) == HYST_NOW)
		return true;
	j->due = due;
	if (!j->holding) {
		j->holding = true;
		j->held[j->cause < CAUSE_COUNT ? j->cause : CAUSE_START]++;
		control_log("job %u: re-plan (%s; cause %s) held for %.1f s: epoch %u live for "
			    "%.1f s (at least %.1f s for a measurement or a return), %d re-plans "
			    "in the last minute (at most %d for it)",
			    m->d->jobs[i].id, j->reason, cause_names[j->cause],
			    (double)(due - now) / 1e3, j->live_epoch,
			    (double)(now - j->live_since) / 1e3,
			    (double)m->o->hyst.min_epoch_ms / 1e3, recent,
			    prompt ? m->o->hyst.failure_replans_per_min :
				     m->o->hyst.replans_per_min);
	}
	return false;
}

void
install_due(struct dmn *m)
{
	for (int v = 0; v < m->d->n_gateways; v++)
		if (m->gws[v].state == GW_UNKNOWN)
			return;
	shares_update(m);
	for (int i = 0; i < m->d->n_jobs && !m->stop; i++) {
		elect_service(m); /* installs can take long: a deposition noticed (elect.h) */
		if (m->jobs[i].dirty && replan_allowed(m, i) && elect_leading(m))
			install_job(m, i);
	}
}
