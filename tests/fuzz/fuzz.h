/* SPDX-License-Identifier: BSD-3-Clause
 *
 * What the harnesses of the text codecs share: the input as a NUL-terminated string, and
 * the checks of a round trip (the written text parses again, and writes the same text).
 * A failed check prints what differs and aborts, which libFuzzer reports as a crash.
 * Header-only; every function is static.
 */
#ifndef GEOREDUCE_FUZZ_H
#define GEOREDUCE_FUZZ_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#if defined(__GNUC__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-function"
#endif

/* data[0, size) and a NUL (the parsers take C strings); NULL when out of memory. */
static char *
fuzz_cstr(const uint8_t *data, size_t size)
{
	char *text = malloc(size + 1);

	if (text != NULL) {
		memcpy(text, data, size);
		text[size] = '\0';
	}
	return text;
}

/* A text the codec wrote must parse again: parsed is what that gave (NULL: failed). */
static void
fuzz_check_parsed(const void *parsed, const char *what, const char *err, const char *text)
{
	if (parsed != NULL)
		return;
	fprintf(stderr, "written %s does not parse: %s\n%s\n", what, err, text);
	abort();
}

/* Writing what was parsed from the codec's own text gives that text again. */
static void
fuzz_check_same(const char *what, const char *first, const char *second)
{
	if (strcmp(first, second) == 0)
		return;
	fprintf(stderr, "second %s write differs:\n%s\n---\n%s\n", what, first, second);
	abort();
}

#if defined(__GNUC__)
#pragma GCC diagnostic pop
#endif

#endif
