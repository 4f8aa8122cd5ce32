/* SPDX-License-Identifier: BSD-3-Clause
 *
 * Slow path (control thread): the newest leadership term of a replicated control process
 * that this gateway has seen (docs/CONTROL.md, "Terms of replicated control processes"),
 * kept in a file so that a restarted dataplane still refuses a deposed leader's requests.
 * The file holds the term in decimal and a newline; it is replaced whole (written beside,
 * synced, renamed over), so that a crash leaves the old term or the new one, never a torn
 * one. A new term is written before any request carrying it is carried out.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "dp.h"
#include "slowpath/slowpath.h"

#define TERM_FILE_SUFFIX ".term"
#define TERM_TEXT_MAX 24 /* "9223372036854775807\n" */

/* Parse the file's text: a term 1..2^63-1 and a newline, nothing else. */
static int
term_parse(const char *s, size_t n, int64_t *term)
{
	int64_t v = 0;
	size_t i = 0;

	if (n < 2 || s[n - 1] != '\n')
		return -1;
	for (; i < n - 1; i++) {
		if (s[i] < '0' || s[i] > '9' || v > (INT64_MAX - (s[i] - '0')) / 10)
			return -1;
		v = v * 10 + (s[i] - '0');
	}
	if (v < 1)
		return -1;
	*term = v;
	return 0;
}

int
dp_term_load(struct dp *dp, const char *path, const char *socket, char *err, size_t errlen)
{
	char text[TERM_TEXT_MAX + 1];
	int64_t term;
	ssize_t n;
	int fd, w;

	dp->ctl_term_file[0] = '\0';
	if (path != NULL && strcmp(path, "none") == 0)
		return 0;
	w = path != NULL ? snprintf(dp->ctl_term_file, sizeof(dp->ctl_term_file), "%s", path) :
			   snprintf(dp->ctl_term_file, sizeof(dp->ctl_term_file), "%s%s", socket,
				    TERM_FILE_SUFFIX);
	if (w < 0 || (size_t)w >= sizeof(dp->ctl_term_file)) {
		snprintf(err, errlen, "--term-file: the path is too long");
		dp->ctl_term_file[0] = '\0';
		return -ENAMETOOLONG;
	}
	fd = open(dp->ctl_term_file, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		if (errno == ENOENT)
			return 0; /* no term seen yet */
		snprintf(err, errlen, "--term-file %s: %s", dp->ctl_term_file, strerror(errno));
		return -errno;
	}
	n = read(fd, text, sizeof(text));
	close(fd);
	if (n < 0 || term_parse(text, (size_t)n, &term) != 0) {
		snprintf(err, errlen,
			 "--term-file %s: not a leadership term (a decimal integer and a newline); "
			 "remove it only if no replicated control process is deposed",
			 dp->ctl_term_file);
		return -EINVAL;
	}
	dp->ctl_term = term;
	DP_LOG(NOTICE, "ctl: control leader term %" PRId64 " (from %s)\n", term, dp->ctl_term_file);
	return 0;
}

int
dp_term_keep(struct dp *dp, int64_t term, char *err, size_t errlen)
{
	char tmp[sizeof(dp->ctl_term_file) + 8], text[TERM_TEXT_MAX + 1];
	int fd, n, rc = 0;

	if (dp->ctl_term_file[0] == '\0')
		return 0;
	errno = 0;
	snprintf(tmp, sizeof(tmp), "%s.new", dp->ctl_term_file);
	n = snprintf(text, sizeof(text), "%" PRId64 "\n", term);
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0 || write(fd, text, (size_t)n) != n || fsync(fd) != 0)
		rc = -(errno != 0 ? errno : EIO);
	if (fd >= 0 && close(fd) != 0 && rc == 0)
		rc = -errno;
	if (rc == 0 && rename(tmp, dp->ctl_term_file) != 0)
		rc = -errno;
	if (rc != 0) {
		snprintf(err, errlen, "term %" PRId64 " not recorded in %s: %s", term,
			 dp->ctl_term_file, strerror(-rc));
		unlink(tmp);
	}
	return rc;
}
