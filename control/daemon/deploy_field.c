/* SPDX-License-Identifier: BSD-3-Clause
 *
 * The field readers of the deployment parser (deploy_field.h): each checks one field of
 * the document and fails with a one-line message that names it.
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include <jansson.h>

#include "deploy_field.h"
#include "jsonutil.h"

int
dctx_check_keys(struct dctx *c, const json_t *obj, const char *path, const char *const *known,
		size_t n_known, size_t n_required)
{
	const char *bad;

	if (!json_is_object(obj))
		return json_util_field_fail(&c->js, path, "", "expected an object");
	bad = json_util_unknown_key(obj, known, n_known);
	if (bad != NULL)
		return json_util_field_fail(&c->js, path, bad, "unknown field");
	for (size_t k = 0; k < n_required; k++)
		if (json_object_get(obj, known[k]) == NULL)
			return json_util_field_fail(&c->js, path, known[k], "missing");
	return 0;
}

int
dctx_each_item(struct dctx *c, const json_t *root, const char *key, size_t max, bool nonempty,
	       struct deploy *d,
	       int (*fn)(struct dctx *, const json_t *, const char *, struct deploy *, int))
{
	json_t *arr = json_object_get(root, key);
	char path[FIELD_MAX];
	int rc;

	if (!json_is_array(arr))
		return json_util_field_fail(&c->js, "", key, "expected an array");
	if (json_array_size(arr) > max)
		return json_util_field_fail(&c->js, "", key, "%zu items, at most %zu",
					    json_array_size(arr), max);
	if (nonempty && json_array_size(arr) == 0)
		return json_util_field_fail(&c->js, "", key, "empty");
	for (size_t i = 0; i < json_array_size(arr); i++) {
		snprintf(path, sizeof(path), "%s[%zu]", key, i);
		rc = fn(c, json_array_get(arr, i), path, d, (int)i);
		if (rc != 0)
			return rc;
	}
	return 0;
}

int
dctx_get_uint(struct dctx *c, const json_t *obj, const char *path, const char *key, uint64_t min,
	      uint64_t max, uint64_t dflt, uint64_t *out)
{
	json_t *v = json_object_get(obj, key);
	json_int_t x;

	*out = dflt; /* defined on every path: callers read it only on success */
	if (v == NULL)
		return 0;
	if (!json_is_integer(v))
		return json_util_field_fail(&c->js, path, key,
					    "expected an integer in [%" PRIu64 ", %" PRIu64 "]",
					    min, max);
	x = json_integer_value(v);
	if (x < 0 || (uint64_t)x < min || (uint64_t)x > max)
		return json_util_field_fail(&c->js, path, key,
					    "%lld is not in [%" PRIu64 ", %" PRIu64 "]",
					    (long long)x, min, max);
	*out = (uint64_t)x;
	return 0;
}

int
dctx_get_u32(struct dctx *c, const json_t *obj, const char *path, const char *key, uint32_t min,
	     uint32_t max, uint32_t dflt, uint32_t *out)
{
	uint64_t v;
	int rc = dctx_get_uint(c, obj, path, key, min, max, dflt, &v);

	if (rc == 0)
		*out = (uint32_t)v;
	return rc;
}

int
dctx_get_real(struct dctx *c, const json_t *obj, const char *path, const char *key, double min,
	      double max, double *out)
{
	json_t *v = json_object_get(obj, key);
	double x;

	if (v == NULL)
		return 0;
	if (!json_is_number(v))
		return json_util_field_fail(&c->js, path, key, "expected a number in [%g, %g]", min,
					    max);
	x = json_number_value(v);
	if (!isfinite(x) || x < min || x > max)
		return json_util_field_fail(&c->js, path, key, "%g is not in [%g, %g]", x, min,
					    max);
	*out = x;
	return 0;
}

int
dctx_get_str(struct dctx *c, const json_t *obj, const char *path, const char *key, const char **out)
{
	json_t *v = json_object_get(obj, key);
	const char *s;

	*out = NULL;
	if (!json_is_string(v))
		return json_util_field_fail(&c->js, path, key, "expected a string");
	s = json_string_value(v);
	if (s[0] == '\0' || strlen(s) != json_string_length(v))
		return json_util_field_fail(&c->js, path, key,
					    "expected a non-empty string without NUL bytes");
	for (const char *p = s; *p != '\0'; p++)
		if ((unsigned char)*p < 0x20)
			return json_util_field_fail(&c->js, path, key,
						    "control character in the string");
	*out = s;
	return 0;
}

int
dctx_get_ipv4(struct dctx *c, const json_t *obj, const char *path, uint32_t *out)
{
	const char *s;
	int rc = dctx_get_str(c, obj, path, "ipv4", &s);

	*out = 0;
	if (rc != 0)
		return rc;
	if (table_ipv4_parse(s, out) != 0)
		return json_util_field_fail(&c->js, path, "ipv4",
					    "expected a dotted-quad IPv4 address, got '%.32s'", s);
	if (!table_ipv4_unicast(*out))
		return json_util_field_fail(&c->js, path, "ipv4", "%s is not a unicast address", s);
	return 0;
}

int
dctx_get_node(struct dctx *c, const struct topo *t, const json_t *obj, const char *path,
	      const char *key, int *out)
{
	const char *s;
	int rc = dctx_get_str(c, obj, path, key, &s);

	if (rc != 0)
		return rc;
	*out = topo_node_index(t, s);
	if (*out < 0)
		return json_util_field_fail(&c->js, path, key, "no topology node '%.*s'",
					    TOPO_ID_MAX, s);
	return 0;
}

int
dctx_resolve(struct dctx *c, const char *path, char *out, size_t max)
{
	int n;

	if (path[0] == '/' || c->base[0] == '\0')
		n = snprintf(out, max + 1, "%s", path);
	else
		n = snprintf(out, max + 1, "%s/%s", c->base, path);
	return n < 0 || (size_t)n > max ? -ENAMETOOLONG : 0;
}

bool
deploy_dns_name(const char *s)
{
	return s[0] != '\0' && s[0] != '-' && s[0] != '.' &&
	       strspn(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.-") ==
		       strlen(s);
}
