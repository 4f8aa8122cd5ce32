/* SPDX-License-Identifier: BSD-3-Clause
 *
 * libFuzzer harness of the table parser and its rules (lib/table_json.c, table_check*.c):
 * the input is a `georeduce-table/1` document for table_parse(), which checks it with
 * table_validate(). Besides "no crash, no undefined behaviour, no leak": a table that
 * parses is written again (table_write()), the text parses again, validates, and writes
 * the same text a second time; the public form (table_to_json_public()) parses too.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "fuzz.h"
#include "table.h"

static char *
text_of(const struct table *tb)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	if (f == NULL)
		abort();
	if (table_write(tb, f) != 0)
		abort();
	fclose(f);
	return buf;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char err[TABLE_ERR_MAX], *text, *t1, *t2, *pub;
	struct table *tb, *back, *pubtb;
	json_t *j;

	text = fuzz_cstr(data, size);
	if (text == NULL)
		return 0;
	tb = table_parse(text, "fuzz", err, sizeof(err));
	free(text);
	if (tb == NULL)
		return 0;
	if (table_validate(tb, err, sizeof(err)) != 0)
		abort();
	t1 = text_of(tb);
	back = table_parse(t1, "again", err, sizeof(err));
	fuzz_check_parsed(back, "table", err, t1);
	t2 = text_of(back);
	fuzz_check_same("table", t1, t2);
	j = table_to_json_public(tb);
	pub = j != NULL ? json_dumps(j, JSON_COMPACT) : NULL;
	if (pub == NULL)
		abort();
	pubtb = table_parse(pub, "public", err, sizeof(err));
	fuzz_check_parsed(pubtb, "public table", err, pub);
	table_free(pubtb);
	free(pub);
	json_decref(j);
	free(t1);
	free(t2);
	table_free(back);
	table_free(tb);
	return 0;
}
