/* SPDX-License-Identifier: BSD-3-Clause
 *
 * libFuzzer harness of the topology and plan codecs (lib/topo.c, lib/plan.c): the input
 * is a `georeduce-topology/1` document, optionally followed by a NUL byte and a
 * `georeduce-plan/1` document over that topology. Besides "no crash, no undefined
 * behaviour, no leak": a topology that parses is written (topo_write()), parses again and
 * writes the same text; a plan that parses is checked (plan_validate(), any verdict), and
 * written, parsed again and written to the same text.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "plan.h"
#include "topo.h"

static char *
topo_text(const struct topo *t)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	if (f == NULL || topo_write(t, f) != 0)
		abort();
	fclose(f);
	return buf;
}

static char *
plan_text(const struct topo *t, const struct plan *p)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	if (f == NULL || plan_write(t, p, f) != 0)
		abort();
	fclose(f);
	return buf;
}

static void
check_plan(const struct topo *t, const char *text)
{
	char err[TOPO_ERR_MAX], *t1, *t2;
	struct plan *p = plan_parse(t, text, "fuzz", err, sizeof(err)), *back;

	if (p == NULL)
		return;
	(void)plan_validate(t, p, 0, err, sizeof(err));
	t1 = plan_text(t, p);
	back = plan_parse(t, t1, "again", err, sizeof(err));
	fuzz_check_parsed(back, "plan", err, t1);
	t2 = plan_text(t, back);
	fuzz_check_same("plan", t1, t2);
	free(t1);
	free(t2);
	plan_free(back);
	plan_free(p);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char err[TOPO_ERR_MAX], *text, *t1, *t2;
	struct topo *t, *back;
	size_t tlen;

	text = fuzz_cstr(data, size);
	if (text == NULL)
		return 0;
	tlen = strlen(text);
	t = topo_parse(text, "fuzz", err, sizeof(err));
	if (t == NULL) {
		free(text);
		return 0;
	}
	t1 = topo_text(t);
	back = topo_parse(t1, "again", err, sizeof(err));
	fuzz_check_parsed(back, "topology", err, t1);
	t2 = topo_text(back);
	fuzz_check_same("topology", t1, t2);
	if (tlen < size)
		check_plan(t, text + tlen + 1);
	free(t1);
	free(t2);
	topo_free(back);
	topo_free(t);
	free(text);
	return 0;
}
