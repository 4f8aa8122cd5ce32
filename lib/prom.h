/* SPDX-License-Identifier: BSD-3-Clause
 *
 * The Prometheus text exposition format (version 0.0.4) written into a growing buffer:
 * one family at a time, a HELP and a TYPE line, then its samples. Names are checked
 * (metric names [a-zA-Z_:][a-zA-Z0-9_:]*, label names [a-zA-Z_][a-zA-Z0-9_]* and not
 * starting with "__"), counters must end in "_total", a family is written once; label
 * values and help texts are escaped. The first error sticks: later calls do nothing and
 * prom_finish() reports it. Slow path only (it allocates); no DPDK. docs/METRICS.md lists
 * what the programs export.
 */
#ifndef GEOREDUCE_PROM_H
#define GEOREDUCE_PROM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/** The Content-Type of the format. */
#define PROM_CONTENT_TYPE "text/plain; version=0.0.4; charset=utf-8"
/** Families in one exposition at most (each name is kept to refuse a second one). */
#define PROM_FAMILIES_MAX 256
/** Labels of one sample at most. */
#define PROM_LABELS_MAX 8
/** Longest metric or label name. */
#define PROM_NAME_MAX 128

enum prom_type {
	PROM_COUNTER,
	PROM_GAUGE,
};

struct prom {
	char *buf;
	size_t len, cap;
	int err;                        /* 0, or the first negative errno */
	char why[160];                  /* what the first error was */
	char family[PROM_NAME_MAX + 1]; /* the current family's name; "" before the first */
	int n_families;
	char *families[PROM_FAMILIES_MAX];
};

/** A sample's label: name and value (any UTF-8; escaped when written). */
struct prom_label {
	const char *name;
	const char *value;
};

/** An empty exposition. */
void prom_init(struct prom *p);

/** Free the buffer and the names (the buffer too, unless prom_finish() handed it out). */
void prom_free(struct prom *p);

/** Is s a valid metric name? */
bool prom_metric_name_ok(const char *s);

/** Is s a valid label name (and not reserved: "__...")? */
bool prom_label_name_ok(const char *s);

/**
 * Start family `name` of type `type` with help text `help` (one line; escaped). -EINVAL
 * for a bad name, a counter not ending in "_total" or an empty help; -EEXIST if the family
 * was written before; -E2BIG past PROM_FAMILIES_MAX. The error sticks.
 */
int prom_family(struct prom *p, const char *name, enum prom_type type, const char *help);

/**
 * One sample of the current family with n labels (0 .. PROM_LABELS_MAX; bad or repeated
 * label names: -EINVAL) and value v (NaN and infinities as the format spells them). Before
 * any family: -EINVAL. The error sticks.
 */
int prom_sample(struct prom *p, const struct prom_label *labels, int n, double v);

/** The same with an integer value, written exactly. */
int prom_sample_u64(struct prom *p, const struct prom_label *labels, int n, uint64_t v);

/**
 * The exposition: its text (NUL-terminated, *len bytes without the NUL), now the
 * caller's to free(); or NULL with the first error's errno in *err (if not NULL) and its
 * description in p->why. p is left empty either way (prom_free() still frees the names).
 */
char *prom_finish(struct prom *p, size_t *len, int *err);

#endif
