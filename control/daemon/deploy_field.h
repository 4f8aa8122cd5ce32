/* SPDX-License-Identifier: BSD-3-Clause
 *
 * The deployment parser's state and its field readers (deploy.c, deploy_job.c): each reads
 * and checks one field of a `georeduce-deployment/1` document (docs/DEPLOYMENT.md) and, on
 * failure, writes the one-line message that names the file and the field ("deploy.json:
 * field 'jobs[0].workers[2].ipv4': ...") and returns -EINVAL.
 *
 * Control side, one parse per struct dctx at a time. No DPDK.
 */
#ifndef GEOREDUCE_DEPLOY_FIELD_H
#define GEOREDUCE_DEPLOY_FIELD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "deploy.h"
#include "jsonutil.h"
#include "topo.h"

#define N_OF(a) (sizeof(a) / sizeof((a)[0]))

/* Field paths in messages: "jobs[12].workers[4095].ipv4" and the like. */
#define FIELD_MAX 96

struct dctx {
	struct json_util_src js;        /* the file's name and the error buffer */
	char base[DEPLOY_PATH_MAX + 1]; /* directory relative paths start from, "" for cwd */
	uint32_t seal_room;             /* bytes of a frame sealing takes (protected links) */
};

/** obj is an object whose keys are all in known[]; its first n_required are present. */
int dctx_check_keys(struct dctx *c, const json_t *obj, const char *path, const char *const *known,
		    size_t n_known, size_t n_required);

/**
 * The items of array root[key] (at most max, at least one if nonempty), each parsed by
 * fn with its path "key[i]".
 */
int dctx_each_item(struct dctx *c, const json_t *root, const char *key, size_t max, bool nonempty,
		   struct deploy *d,
		   int (*fn)(struct dctx *, const json_t *, const char *, struct deploy *, int));

/** An integer in [min, max]; an absent key gives dflt. */
int dctx_get_uint(struct dctx *c, const json_t *obj, const char *path, const char *key,
		  uint64_t min, uint64_t max, uint64_t dflt, uint64_t *out);

/** dctx_get_uint() into a 32-bit field, which is set only on success. */
int dctx_get_u32(struct dctx *c, const json_t *obj, const char *path, const char *key, uint32_t min,
		 uint32_t max, uint32_t dflt, uint32_t *out);

/** A finite number (integer or real) in [min, max]; an absent key leaves *out. */
int dctx_get_real(struct dctx *c, const json_t *obj, const char *path, const char *key, double min,
		  double max, double *out);

/** A non-empty string without control characters. */
int dctx_get_str(struct dctx *c, const json_t *obj, const char *path, const char *key,
		 const char **out);

/** obj's "ipv4": a unicast IPv4 address in dotted-quad form. */
int dctx_get_ipv4(struct dctx *c, const json_t *obj, const char *path, uint32_t *out);

/** The topology node named by obj[key]. */
int dctx_get_node(struct dctx *c, const struct topo *t, const json_t *obj, const char *path,
		  const char *key, int *out);

/** A path relative to the deployment's directory (absolute paths stay), at most max bytes;
 * -ENAMETOOLONG (and no message) if longer. */
int dctx_resolve(struct dctx *c, const char *path, char *out, size_t max);

/** A name for a gateway: letters, digits, '-' and '.', not starting with either of the
 * last two (a DNS name, which a tls:// gateway's certificate carries). */
bool deploy_dns_name(const char *s);

#endif
