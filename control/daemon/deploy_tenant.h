/* SPDX-License-Identifier: BSD-3-Clause
 *
 * The deployment parser's tenants (docs/DEPLOYMENT.md, "Tenants"): each tenant's name and
 * its quotas of jobs, slots and WAN weight. deploy_tenant_find() is in deploy.h. Control
 * side, one parse per struct dctx at a time. No DPDK.
 */
#ifndef GEOREDUCE_DEPLOY_TENANT_H
#define GEOREDUCE_DEPLOY_TENANT_H

#include <jansson.h>

#include "deploy.h"
#include "deploy_field.h"

/** The document's optional "tenants" into d->tenants, sorted by name. 0 or -EINVAL with
 * the message in c's error buffer. */
int deploy_parse_tenants(struct dctx *c, const json_t *root, struct deploy *d);

#endif
