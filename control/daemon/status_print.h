/* SPDX-License-Identifier: BSD-3-Clause
 *
 * georeduce-control status and status --watch: the daemon's `status` answer
 * (docs/CONTROL.md) printed for a person, as a report or as one screen of the watch.
 * Command-line thread only; formatting alone, no calls.
 */
#ifndef GEOREDUCE_STATUS_PRINT_H
#define GEOREDUCE_STATUS_PRINT_H

#include <stdio.h>

#include <jansson.h>

/** `status` r as text on stdout. */
void status_print(const json_t *r);

/**
 * One screen of `status --watch` from `status` r: the endpoint asked and the refresh
 * (count, every interval_s) in its head line; each line ends with eol (a terminal's clear
 * to the end of the line, or "").
 */
void status_print_watch(FILE *f, const json_t *r, const char *endpoint, double interval_s,
			int refresh, const char *eol);

#endif
