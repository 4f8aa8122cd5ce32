/* SPDX-License-Identifier: BSD-3-Clause
 * The mutation fuzzer the codec suites share: a seeded PRNG (splitmix64), a growable
 * string, and fuzz_mutate(), which damages a valid document in the ways that break
 * parsers. Header-only; every function is static.
 */
#ifndef GEOREDUCE_FUZZUTIL_H
#define GEOREDUCE_FUZZUTIL_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <CUnit/CUnit.h>

#if defined(__GNUC__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-function"
#endif

static uint64_t
rng_next(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

/* Uniform in [0, n). */
static size_t
rnd(uint64_t *s, size_t n)
{
	return n == 0 ? 0 : (size_t)(rng_next(s) % n);
}

struct sbuf {
	char *p;
	size_t len, cap;
};

static void
sb_reserve(struct sbuf *b, size_t extra)
{
	if (b->len + extra + 1 > b->cap) {
		size_t cap = b->cap ? b->cap : 256;

		while (b->len + extra + 1 > cap)
			cap *= 2;
		b->p = realloc(b->p, cap);
		CU_ASSERT_PTR_NOT_NULL_FATAL(b->p);
		b->cap = cap;
	}
}

static void
sb_insert(struct sbuf *b, size_t at, const char *s, size_t n)
{
	sb_reserve(b, n);
	memmove(b->p + at + n, b->p + at, b->len - at);
	memcpy(b->p + at, s, n);
	b->len += n;
	b->p[b->len] = '\0';
}

static void
sb_delete(struct sbuf *b, size_t at, size_t n)
{
	if (at + n > b->len)
		n = b->len - at;
	memmove(b->p + at, b->p + at + n, b->len - at - n);
	b->len -= n;
	b->p[b->len] = '\0';
}

static void
sb_set(struct sbuf *b, const char *s)
{
	b->len = 0;
	sb_insert(b, 0, s, strlen(s));
}

/* Numbers that parsers get wrong. */
static const char *const fuzz_numbers[] = {
	"0", "-0", "-1", "1.5", "1e999", "-1e999", "1e-999", "2147483648", "-2147483649", "1e308",
	"4.9e-324", "0.0", "1000001", "00", "1.", ".5", "+1", "0x10", "1e", "3",
};

/*
 * One random mutation of a text: flip a bit, overwrite or insert a byte, delete a range,
 * splice in or replace a range by one of frags[], replace a number by a hostile one,
 * duplicate a chunk, or truncate. The text stays a NUL-terminated C string.
 */
static void
fuzz_mutate(struct sbuf *b, uint64_t *s, const char *const *frags, size_t n_frags)
{
	size_t pos = rnd(s, b->len + 1), n;
	const char *f;

	switch (rnd(s, 10)) {
	case 0: /* flip a bit */
		if (b->len > 0) {
			pos = rnd(s, b->len);
			b->p[pos] ^= (char)(1u << rnd(s, 8));
			if (b->p[pos] == '\0')
				b->p[pos] = '\x01';
		}
		break;
	case 1: /* overwrite a byte with a random one (never NUL: the text is a C string) */
		if (b->len > 0)
			b->p[rnd(s, b->len)] = (char)(1 + rnd(s, 255));
		break;
	case 2: { /* insert a random byte */
		char c = (char)(1 + rnd(s, 255));

		sb_insert(b, pos, &c, 1);
		break;
	}
	case 3: /* delete a range */
		sb_delete(b, pos, 1 + rnd(s, 8));
		break;
	case 4: /* splice a fragment */
	case 5:
		f = frags[rnd(s, n_frags)];
		sb_insert(b, pos, f, strlen(f));
		break;
	case 6: /* replace a range by a fragment */
		f = frags[rnd(s, n_frags)];
		sb_delete(b, pos, 1 + rnd(s, 6));
		sb_insert(b, pos < b->len ? pos : b->len, f, strlen(f));
		break;
	case 7: { /* replace a number by a hostile one */
		size_t start = rnd(s, b->len + 1), i, j;

		for (i = start; i < b->len && !(b->p[i] >= '0' && b->p[i] <= '9'); i++)
			;
		if (i >= b->len)
			break;
		while (i > 0 && strchr("0123456789.eE+-", b->p[i - 1]) != NULL)
			i--;
		for (j = i; j < b->len && strchr("0123456789.eE+-", b->p[j]) != NULL; j++)
			;
		f = fuzz_numbers[rnd(s, sizeof(fuzz_numbers) / sizeof(*fuzz_numbers))];
		sb_delete(b, i, j - i);
		sb_insert(b, i, f, strlen(f));
		break;
	}
	case 8: { /* duplicate a chunk somewhere else (repeats keys, items, links) */
		size_t from = rnd(s, b->len + 1), len;
		char *chunk;

		n = 1 + rnd(s, 64);
		len = from + n > b->len ? b->len - from : n;
		chunk = malloc(len + 1);
		CU_ASSERT_PTR_NOT_NULL_FATAL(chunk);
		memcpy(chunk, b->p + from, len);
		sb_insert(b, rnd(s, b->len + 1), chunk, len);
		free(chunk);
		break;
	}
	default: /* truncate */
		if (rnd(s, 4) == 0)
			sb_delete(b, pos, b->len);
		else
			sb_delete(b, pos, 1);
		break;
	}
}

/* An unsigned from the environment (decimal or 0x hex), or dflt. */
static unsigned long
fuzz_env_ulong(const char *name, unsigned long dflt)
{
	const char *v = getenv(name);
	char *end;
	unsigned long x;

	if (v == NULL || *v == '\0')
		return dflt;
	x = strtoul(v, &end, 0);
	return *end == '\0' ? x : dflt;
}

#if defined(__GNUC__)
#pragma GCC diagnostic pop
#endif

#endif
