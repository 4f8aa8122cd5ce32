/* SPDX-License-Identifier: BSD-3-Clause
 *
 * libFuzzer harness of the deployment parser (control/daemon/deploy*.c): the input is a
 * `georeduce-deployment/1` document for deploy_parse(), its topology inline (a file name
 * is resolved against a directory that does not exist, so nothing is read from disk but
 * what the input names absolutely). Checks: no crash, no undefined behaviour, no leak;
 * a parsed deployment's jobs count their workers within the topology's nodes.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "deploy.h"
#include "fuzz.h"

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char err[DEPLOY_ERR_MAX], *text;
	struct deploy *d;

	text = fuzz_cstr(data, size);
	if (text == NULL)
		return 0;
	d = deploy_parse(text, "/nonexistent/fuzz/deployment.json", err, sizeof(err));
	free(text);
	if (d == NULL)
		return 0;
	for (int j = 0; j < d->n_jobs; j++)
		for (int v = 0; v < d->topo->n_nodes; v++)
			if (deploy_job_workers_at(&d->jobs[j], v) < 0)
				abort();
	deploy_free(d);
	return 0;
}
