/* SPDX-License-Identifier: BSD-3-Clause
 *
 * The deployment parser's tenants (docs/DEPLOYMENT.md, "Tenants"): "tenants", an object
 * from each tenant's name to its quotas over the jobs created through the control API in
 * its name: "jobs" (at once), "slots" (the sum of their slot caps) and "weight" (the sum
 * of their WAN weights), each optional. Control side, one parse at a time. No DPDK.
 */
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "ctltls.h"
#include "deploy.h"
#include "deploy_field.h"
#include "deploy_tenant.h"
#include "jsonutil.h"

static int
by_name(const void *a, const void *b)
{
	return strcmp(((const struct deploy_tenant *)a)->name,
		      ((const struct deploy_tenant *)b)->name);
}

int
deploy_parse_tenants(struct dctx *c, const json_t *root, struct deploy *d)
{
	static const char *const known[] = {"jobs", "slots", "weight"};
	const json_t *ts = json_object_get(root, "tenants");
	char path[FIELD_MAX + DEPLOY_TENANT_NAME_MAX];
	const char *name;
	json_t *q;
	int rc;

	if (ts == NULL)
		return 0;
	if (!json_is_object(ts))
		return json_util_field_fail(&c->js, "", "tenants",
					    "expected an object of tenants by name");
	if (json_object_size(ts) > DEPLOY_TENANTS_MAX)
		return json_util_field_fail(&c->js, "", "tenants", "%zu tenants, at most %d",
					    json_object_size(ts), DEPLOY_TENANTS_MAX);
	d->tenants = calloc(json_object_size(ts) + 1, sizeof(*d->tenants));
	if (d->tenants == NULL)
		return json_util_field_fail(&c->js, "", "tenants", "out of memory");
	json_object_foreach ((json_t *)ts, name, q) {
		struct deploy_tenant *t = &d->tenants[d->n_tenants];
		uint64_t jobs = 0;

		if (!ctltls_tenant_name_ok(name))
			return json_util_field_fail(&c->js, "tenants", name,
						    "a tenant's name is 1 to %d letters, digits, "
						    "'.', '_' or '-'",
						    DEPLOY_TENANT_NAME_MAX);
		snprintf(path, sizeof(path), "tenants.%s", name);
		rc = dctx_check_keys(c, q, path, known, N_OF(known), 0);
		if (rc == 0)
			rc = dctx_get_uint(c, q, path, "jobs", 1, DEPLOY_JOBS_MAX, 0, &jobs);
		if (rc == 0)
			rc = dctx_get_uint(c, q, path, "slots", 1, (uint64_t)TABLE_SLOTS_MAX * 1024,
					   0, &t->slots);
		if (rc == 0)
			rc = dctx_get_real(c, q, path, "weight", 1e-6, 1e9, &t->weight);
		if (rc != 0)
			return rc;
		snprintf(t->name, sizeof(t->name), "%s", name);
		t->jobs = (uint32_t)jobs;
		d->n_tenants++;
	}
	qsort(d->tenants, (size_t)d->n_tenants, sizeof(*d->tenants), by_name);
	return 0;
}

const struct deploy_tenant *
deploy_tenant_find(const struct deploy *d, const char *name)
{
	struct deploy_tenant key;

	if (d->n_tenants == 0 || strlen(name) > DEPLOY_TENANT_NAME_MAX)
		return NULL;
	snprintf(key.name, sizeof(key.name), "%s", name);
	return bsearch(&key, d->tenants, (size_t)d->n_tenants, sizeof(*d->tenants), by_name);
}
