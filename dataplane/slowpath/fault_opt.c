/* SPDX-License-Identifier: BSD-3-Clause
 *
 * Slow path: the value of --fault (fault injection, fastpath/fault.c) read into a struct
 * dp_fault. Shared by the dataplane's options (main.c) and georeduce-bench's ring mode,
 * which runs the dataplane in its own process. The control thread, before dp_setup().
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dp.h"
#include "slowpath/slowpath.h"

#define FAULT_USAGE                                                                          \
	"expected PORT,rx|tx,KEY=VALUE... with loss, dup, reorder, corrupt in [0, 1], "      \
	"delay_ms (tx) up to 10000, and for bursty loss either burst=L (frames, >= 1) with " \
	"loss in (0, 1) or ge_p, ge_r (> 0 if ge_p is), ge_h, ge_k in [0, 1], e.g. "         \
	"1,tx,delay_ms=40,loss=0.01,burst=4"

/* A probability in [0, 1] as a threshold of the lcores' 32-bit draws. */
static uint32_t
p32(double v)
{
	return (uint32_t)(v * 4294967295.0);
}

/* The bursty-loss keys into f: burst=L with loss=P (a Gilbert channel of mean loss P and
 * bad runs of L frames on average), or the four Gilbert-Elliott parameters (ge: p, r, h,
 * k). -1 if they do not make a channel. */
static int
fault_ge(struct dp_fault *f, double loss, double burst, double *ge, bool ge_set)
{
	if (burst > 0 && ge_set)
		return -1; /* one way of saying it */
	if (burst > 0) {
		if (!(loss > 0 && loss < 1))
			return -1;
		ge[1] = 1 / burst;
		ge[0] = loss * ge[1] / (1 - loss);
		if (ge[0] > 1)
			return -1;
		ge_set = true;
	}
	if (!ge_set)
		return 0;
	if (ge[1] == 0 && ge[0] != 0)
		return -1; /* a bad state never left */
	f->ge = true;
	f->loss = 0;
	f->ge_p = p32(ge[0]);
	f->ge_r = p32(ge[1]);
	f->ge_h = p32(ge[2]);
	f->ge_k = p32(ge[3]);
	return 0;
}

int
dp_fault_parse(const char *s, double tsc_hz, unsigned int *port, int *dir, struct dp_fault *f,
	       char *err, size_t errlen)
{
	char buf[160], *tok, *save = NULL, *end;
	unsigned long pt = 0;
	int i = 0;
	double loss = 0, burst = 0, ge[4] = {0, 0, 1, 0}; /* p, r, h, k */
	bool ge_set = false;

	memset(f, 0, sizeof(*f));
	f->on = true;
	*dir = DP_RX;
	if (strlen(s) >= sizeof(buf))
		goto bad;
	strcpy(buf, s);
	for (tok = strtok_r(buf, ",", &save); tok != NULL; tok = strtok_r(NULL, ",", &save), i++) {
		if (i == 0) {
			pt = strtoul(tok, &end, 10);
			if (*tok == '\0' || *end != '\0' || pt >= DP_PORTS_MAX)
				goto bad;
			continue;
		}
		if (i == 1) {
			if (strcmp(tok, "rx") != 0 && strcmp(tok, "tx") != 0)
				goto bad;
			*dir = tok[0] == 'r' ? DP_RX : DP_TX;
			continue;
		}
		char *eq = strchr(tok, '=');
		double v;

		if (eq == NULL)
			goto bad;
		*eq = '\0';
		v = strtod(eq + 1, &end);
		if (eq[1] == '\0' || *end != '\0' || !(v >= 0)) {
			snprintf(err, errlen, "%s: '%s' is not a number >= 0; got '%s'", tok,
				 eq + 1, s);
			return -1;
		}
		if (strcmp(tok, "delay_ms") == 0) {
			if (*dir != DP_TX || v > DP_DELAY_MS_MAX)
				goto bad;
			f->delay_tsc = (uint64_t)(v * 1e-3 * tsc_hz);
			continue;
		}
		if (strcmp(tok, "burst") == 0) {
			if (!(v >= 1 && v <= 1e6))
				goto bad;
			burst = v;
			continue;
		}
		if (v > 1) {
			snprintf(err, errlen, "%s: %s is not a probability in [0, 1]; got '%s'",
				 tok, eq + 1, s);
			return -1;
		}
		if (strcmp(tok, "loss") == 0) {
			f->loss = p32(v);
			loss = v;
		} else if (strcmp(tok, "dup") == 0) {
			f->dup = p32(v);
		} else if (strcmp(tok, "reorder") == 0) {
			f->reorder = p32(v);
		} else if (strcmp(tok, "corrupt") == 0) {
			f->corrupt = p32(v);
		} else if (strncmp(tok, "ge_", 3) == 0 && tok[3] != '\0' && tok[4] == '\0' &&
			   strchr("prhk", tok[3]) != NULL) {
			ge[strchr("prhk", tok[3]) - "prhk"] = v;
			ge_set = true;
		} else {
			goto bad;
		}
	}
	if (i < 3 || fault_ge(f, loss, burst, ge, ge_set) != 0)
		goto bad;
	*port = (unsigned int)pt;
	return 0;
bad:
	snprintf(err, errlen, FAULT_USAGE "; got '%s'", s);
	return -1;
}
