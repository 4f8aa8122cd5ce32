/* SPDX-License-Identifier: BSD-3-Clause
 *
 * libgeoreduce: a client's configuration (struct gr_config, georeduce.h). Its check
 * (gr_config_check()), filling it from a georeduce-table/1 table (gr_config_from_table()),
 * the dtypes' sizes and names, and the trees' gateways and order. Runs in the caller's
 * thread when a client is created or reconfigured, never per call. Also the dtypes'
 * rounding of fp32 values (gr_dtype_round()), in the caller's thread, needing no client.
 */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "client_internal.h"
#include "georeduce.h"
#include "jsonutil.h"
#include "revision.h"
#include "sum.h"
#include "table.h"
#include "wire.h"

size_t
gr_dtype_size(enum gr_dtype dtype)
{
	/* MX jobs take and give fp32: the caller's buffer has 4 bytes an element. */
	if (wire_dtype_is_mx((enum wire_dtype)dtype))
		return 4;
	return table_dtype_size((enum table_dtype)dtype);
}

const char *
gr_dtype_name(enum gr_dtype dtype)
{
	return table_dtype_name((enum table_dtype)dtype);
}

/* Elements rounded per pass of gr_dtype_round(): whole MX blocks, the wire bytes of one
 * pass on the stack: 2 bytes an element for fp16 and bf16, 33 bytes a block at most for
 * an MX dtype, whichever is more. */
#define ROUND_STEP (8u * SUM_MX_BLOCK)
#define ROUND_WIRE_BYTES                                                     \
	(ROUND_STEP * 2u > ROUND_STEP / SUM_MX_BLOCK * (SUM_MX_BLOCK + 1u) ? \
		 ROUND_STEP * 2u :                                           \
		 ROUND_STEP / SUM_MX_BLOCK * (SUM_MX_BLOCK + 1u))

int
gr_dtype_round(enum gr_dtype dtype, float *buf, size_t elements)
{
	/* The kernels the clients use (client.c): bit-identical whichever the CPU has. */
	const struct sum_kernels *k = sum_kernels_select(UINT_MAX);
	uint8_t wire[ROUND_WIRE_BYTES];
	float tail[ROUND_STEP];

	if (gr_dtype_name(dtype) == NULL || (buf == NULL && elements > 0))
		return -EINVAL;
	for (size_t i = 0; i < elements && dtype != GR_DTYPE_FP32; i += ROUND_STEP) {
		size_t n = elements - i < ROUND_STEP ? elements - i : ROUND_STEP;
		size_t whole = (n + SUM_MX_BLOCK - 1) / SUM_MX_BLOCK * SUM_MX_BLOCK;
		float *v = buf + i;

		if (dtype == GR_DTYPE_FP16 || dtype == GR_DTYPE_BF16) {
			uint16_t *h = (uint16_t *)(void *)wire;

			(dtype == GR_DTYPE_FP16 ? k->narrow_f16 : k->narrow_bf16)(h, v, n);
			(dtype == GR_DTYPE_FP16 ? k->widen_f16 : k->widen_bf16)(v, h, n);
			continue;
		}
		/* A last partial block is padded with zeros, as a call pads its last chunk. */
		if (whole != n) {
			memcpy(tail, v, n * sizeof(float));
			memset(tail + n, 0, (whole - n) * sizeof(float));
			v = tail;
		}
		k->mx_narrow[dtype - GR_DTYPE_MXINT8](wire, v, whole / SUM_MX_BLOCK);
		k->mx_widen[dtype - GR_DTYPE_MXINT8](v, wire, whole / SUM_MX_BLOCK);
		if (v == tail)
			memcpy(buf + i, tail, n * sizeof(float));
	}
	return 0;
}

static int
cmp_tree_first(const void *a, const void *b)
{
	const struct gr_tree *x = a, *y = b;

	return (x->chunk_first > y->chunk_first) - (x->chunk_first < y->chunk_first);
}

static bool
id_ok(uint16_t id)
{
	return id >= WIRE_NODE_ID_MIN && id <= WIRE_NODE_ID_MAX;
}

/* The gateway of trees[i]: its own in tree_gateways, or the configuration's. */
struct gr_gateway
client_tree_gateway(const struct gr_config *cfg, unsigned int i)
{
	if (cfg->tree_gateways[i].id != 0)
		return cfg->tree_gateways[i];
	return (struct gr_gateway){.id = cfg->gateway_id,
				   .ipv4 = cfg->gateway_ipv4,
				   .base_port = cfg->gateway_base_port,
				   .ports = cfg->gateway_ports};
}

static bool
gateway_same(const struct gr_gateway *a, const struct gr_gateway *b)
{
	return a->id == b->id && a->ipv4 == b->ipv4 && a->base_port == b->base_port &&
	       a->ports == b->ports;
}

/* The distinct gateways of cfg's trees into out[] (at most max); returns how many there
 * are, possibly more than max. */
unsigned int
client_distinct_gateways(const struct gr_config *cfg, struct gr_gateway *out, unsigned int max)
{
	unsigned int n = 0;

	for (unsigned int i = 0; i < cfg->n_trees && i < GR_TREES_MAX; i++) {
		struct gr_gateway g = client_tree_gateway(cfg, i);
		unsigned int k = 0;

		while (k < n && k < max && !gateway_same(&out[k], &g))
			k++;
		if (k < n)
			continue;
		if (n < max)
			out[n] = g;
		n++;
	}
	return n;
}

/* The trees' gateways: valid, other than the worker, one address and ports per id, at
 * most GR_GATEWAYS_MAX. */
static int
check_tree_gateways(const struct gr_config *cfg, char *err, size_t errlen)
{
	struct gr_gateway gws[GR_GATEWAYS_MAX];
	unsigned int n;

	for (unsigned int i = 0; i < cfg->n_trees; i++) {
		const struct gr_gateway *g = &cfg->tree_gateways[i];

		if (g->id == 0)
			continue;
		if (!id_ok(g->id) || g->id == cfg->worker_id)
			return json_util_fail(err, errlen,
					      "tree_gateways[%u].id: %u, ids are 1 to %u "
					      "and not the worker's",
					      i, g->id, WIRE_NODE_ID_MAX);
		if (!table_ipv4_unicast(g->ipv4))
			return json_util_fail(err, errlen,
					      "tree_gateways[%u].ipv4: not a unicast "
					      "address",
					      i);
		if (wire_port_range_check(g->base_port, g->ports) < 0)
			return json_util_fail(err, errlen,
					      "tree_gateways[%u] ports: %u from %u leave "
					      "1 .. 65535",
					      i, g->ports, g->base_port);
	}
	n = client_distinct_gateways(cfg, gws, GR_GATEWAYS_MAX);
	if (n > GR_GATEWAYS_MAX)
		return json_util_fail(err, errlen, "tree_gateways: %u gateways, at most %u", n,
				      GR_GATEWAYS_MAX);
	for (unsigned int a = 0; a < n; a++)
		for (unsigned int b = 0; b < a; b++)
			if (gws[a].id == gws[b].id || gws[a].ipv4 == gws[b].ipv4)
				return json_util_fail(err, errlen,
						      "tree_gateways: gateway %u at %u "
						      "ports from %u and gateway %u: one id and "
						      "address per gateway",
						      gws[a].id, gws[a].ports, gws[a].base_port,
						      gws[b].id);
	return 0;
}

int
gr_config_check(const struct gr_config *cfg, char *err, size_t errlen)
{
	struct gr_tree sorted[GR_TREES_MAX];
	size_t esize;
	unsigned int gran;
	int64_t n_chunks;
	uint64_t end = 0;

	if (cfg == NULL)
		return json_util_fail(err, errlen, "no configuration");
	esize = table_dtype_unit_bytes((enum table_dtype)cfg->dtype);
	gran = table_dtype_granule((enum table_dtype)cfg->dtype);
	if (esize == 0)
		return json_util_fail(err, errlen,
				      "dtype: %d is not fp32 (1), fp16 (2), bf16 (3), "
				      "mxint8 (4), mxfp8 (5) or mxfp4 (6)",
				      (int)cfg->dtype);
	if (cfg->elements == 0)
		return json_util_fail(err, errlen, "elements: must be at least 1");
	if (cfg->chunk_elements % gran != 0 || cfg->elements % gran != 0)
		return json_util_fail(err, errlen,
				      "elements %llu, chunk_elements %u: %s chunks are "
				      "whole blocks of %u",
				      (unsigned long long)cfg->elements, cfg->chunk_elements,
				      gr_dtype_name(cfg->dtype), gran);
	if (cfg->chunk_elements == 0 || cfg->chunk_elements / gran * esize > TABLE_CHUNK_BYTES_MAX)
		return json_util_fail(
			err, errlen, "chunk_elements: %u elements of %s must be 1 to %u bytes",
			cfg->chunk_elements, gr_dtype_name(cfg->dtype), TABLE_CHUNK_BYTES_MAX);
	n_chunks = wire_chunk_total(cfg->elements, cfg->chunk_elements);
	if (n_chunks < 0)
		return json_util_fail(err, errlen,
				      "elements: %llu elements make 2^32 chunks or more",
				      (unsigned long long)cfg->elements);
	if (!id_ok(cfg->worker_id) || !id_ok(cfg->gateway_id) || cfg->worker_id == cfg->gateway_id)
		return json_util_fail(err, errlen,
				      "worker_id %u, gateway_id %u: ids are 1 to %u and differ",
				      cfg->worker_id, cfg->gateway_id, WIRE_NODE_ID_MAX);
	if (!table_ipv4_unicast(cfg->gateway_ipv4))
		return json_util_fail(err, errlen, "gateway_ipv4: not a unicast address");
	if (cfg->worker_ipv4 != 0 && !table_ipv4_unicast(cfg->worker_ipv4))
		return json_util_fail(err, errlen, "worker_ipv4: not a unicast address (0: any)");
	if (wire_port_range_check(cfg->gateway_base_port, cfg->gateway_ports) < 0)
		return json_util_fail(err, errlen, "gateway ports: %u from %u leave 1 .. 65535",
				      cfg->gateway_ports, cfg->gateway_base_port);
	if (cfg->worker_port == 0)
		return json_util_fail(err, errlen, "worker_port: must be 1 to 65535");
	if (cfg->lan_dtype != 0 && cfg->lan_dtype != cfg->dtype) {
		if ((cfg->lan_dtype != GR_DTYPE_FP32 && cfg->lan_dtype != GR_DTYPE_BF16) ||
		    !wire_dtype_is_mx((enum wire_dtype)cfg->dtype))
			return json_util_fail(err, errlen,
					      "lan_dtype: %d, must be 0, the dtype, or "
					      "fp32 (1) or bf16 (3) for an MX dtype",
					      (int)cfg->lan_dtype);
		if ((size_t)cfg->chunk_elements * gr_dtype_size(cfg->lan_dtype) >
		    TABLE_CHUNK_BYTES_MAX)
			return json_util_fail(err, errlen,
					      "chunk_elements: %u elements of the "
					      "lan_dtype %s must be at most %u bytes",
					      cfg->chunk_elements, gr_dtype_name(cfg->lan_dtype),
					      TABLE_CHUNK_BYTES_MAX);
	}
	if (cfg->cset_blocks > GR_CSET_BLOCKS_MAX)
		return json_util_fail(err, errlen, "cset_blocks: %u, must be 0 to %u",
				      cfg->cset_blocks, GR_CSET_BLOCKS_MAX);
	if (cfg->cset_blocks != 0 && cfg->worker_id >= 256u * cfg->cset_blocks)
		return json_util_fail(err, errlen,
				      "worker_id: %u is outside a contributor set of "
				      "%u blocks (ids below %u)",
				      cfg->worker_id, cfg->cset_blocks, 256u * cfg->cset_blocks);
	/* A full CONTRIB (in the LAN dtype) or RESULT with its contributor set fits the
	 * largest IP MTU, 9000, after the 82 bytes of headers. */
	size_t set = (size_t)cfg->cset_blocks * WIRE_CSET_BLOCK;
	size_t full = (size_t)cfg->chunk_elements / gran * esize;

	if (cfg->lan_dtype != 0 &&
	    (size_t)cfg->chunk_elements * gr_dtype_size(cfg->lan_dtype) > full)
		full = (size_t)cfg->chunk_elements * gr_dtype_size(cfg->lan_dtype);
	if (full + set > TABLE_CHUNK_BYTES_MAX)
		return json_util_fail(err, errlen,
				      "chunk_elements: %u elements with a contributor set of "
				      "%u blocks make %zu bytes, more than the %u a 9000-byte IP "
				      "packet holds",
				      cfg->chunk_elements, cfg->cset_blocks, full + set,
				      TABLE_CHUNK_BYTES_MAX);
	if (cfg->revision != 0 &&
	    (cfg->revision < REVISION_OLDEST || cfg->revision > GEOREDUCE_REVISION))
		return json_util_fail(err, errlen, "revision: %u, must be 0 or %d to %d",
				      cfg->revision, REVISION_OLDEST, GEOREDUCE_REVISION);
	/* Acting as an older library: what it refused (the chunk cap before 1.14). */
	if (cfg->revision != 0 &&
	    full > revision_chunk_bytes_max(cfg->revision, TABLE_CHUNK_BYTES_MAX))
		return json_util_fail(
			err, errlen,
			"chunk_elements: %u elements make %zu bytes a chunk, too "
			"large for a worker of revision 1.%u (%u bytes at most)",
			cfg->chunk_elements, full, cfg->revision,
			revision_chunk_bytes_max(cfg->revision, TABLE_CHUNK_BYTES_MAX));
	if (cfg->n_origins > GR_ORIGINS_MAX)
		return json_util_fail(err, errlen, "n_origins: %u, at most %u", cfg->n_origins,
				      GR_ORIGINS_MAX);
	for (unsigned int i = 0; i < cfg->n_origins; i++) {
		if (!id_ok(cfg->origins[i]) || cfg->origins[i] == cfg->worker_id ||
		    cfg->origins[i] == cfg->gateway_id)
			return json_util_fail(err, errlen, "origins[%u]: %u is not another worker",
					      i, cfg->origins[i]);
		for (unsigned int j = 0; j < i; j++)
			if (cfg->origins[j] == cfg->origins[i])
				return json_util_fail(err, errlen,
						      "origins[%u]: %u also in "
						      "origins[%u]",
						      i, cfg->origins[i], j);
	}
	if (cfg->mcast_rounds_ahead > GR_MCAST_AHEAD_MAX)
		return json_util_fail(err, errlen, "mcast_rounds_ahead: %u, at most %u (0: %u)",
				      cfg->mcast_rounds_ahead, GR_MCAST_AHEAD_MAX,
				      GR_MCAST_AHEAD_DEFAULT);
	if (!(isfinite(cfg->mcast_rate_gbps) && cfg->mcast_rate_gbps >= 0))
		return json_util_fail(err, errlen, "mcast_rate_gbps: must be a finite number >= 0");
	/* A multicast-only job (selmcast) has no tree. */
	if (cfg->n_trees == 0 && (cfg->mcast_send || cfg->n_origins > 0))
		return 0;
	if (cfg->n_trees == 0 || cfg->n_trees > GR_TREES_MAX)
		return json_util_fail(err, errlen, "n_trees: %u, must be 1 to %u", cfg->n_trees,
				      GR_TREES_MAX);
	for (unsigned int i = 0; i < cfg->n_trees; i++) {
		if (cfg->trees[i].chunk_count == 0)
			return json_util_fail(err, errlen,
					      "trees[%u].chunk_count: must be at least 1", i);
		if (!(isfinite(cfg->tree_rate_gbps[i]) && cfg->tree_rate_gbps[i] >= 0))
			return json_util_fail(
				err, errlen, "tree_rate_gbps[%u]: must be a finite number >= 0", i);
		if (cfg->trees[i].window != 0 && cfg->trees[i].slots != 0 &&
		    cfg->trees[i].window > cfg->trees[i].slots)
			return json_util_fail(err, errlen,
					      "trees[%u].window: %u is more than its %u "
					      "slots",
					      i, cfg->trees[i].window, cfg->trees[i].slots);
		for (unsigned int j = 0; j < i; j++)
			if (cfg->trees[j].id == cfg->trees[i].id)
				return json_util_fail(err, errlen,
						      "trees[%u].id: %u also in trees[%u]", i,
						      cfg->trees[i].id, j);
	}
	if (check_tree_gateways(cfg, err, errlen) != 0)
		return -EINVAL;
	memcpy(sorted, cfg->trees, cfg->n_trees * sizeof(sorted[0]));
	qsort(sorted, cfg->n_trees, sizeof(sorted[0]), cmp_tree_first);
	for (unsigned int i = 0; i < cfg->n_trees; i++) {
		if (sorted[i].chunk_first != end)
			return json_util_fail(err, errlen,
					      "trees: tree %u starts at chunk %u where chunk %llu "
					      "was expected (the ranges must partition the %lld "
					      "chunks)",
					      sorted[i].id, sorted[i].chunk_first,
					      (unsigned long long)end, (long long)n_chunks);
		end += sorted[i].chunk_count;
	}
	if (end != (uint64_t)n_chunks)
		return json_util_fail(err, errlen,
				      "trees: the ranges cover %llu chunks, the tensor has %lld",
				      (unsigned long long)end, (long long)n_chunks);
	return 0;
}

static int
config_from(struct gr_config *cfg, struct table *tb, const char *src, uint16_t worker_id, char *err,
	    size_t errlen)
{
	const struct table_tree *t0;
	const struct table_worker *me;
	int k = -1;
	int rc;

	if (tb == NULL)
		return errno == ENOMEM ? -ENOMEM : (errno == ENOENT ? -ENOENT : -EINVAL);
	if (cfg == NULL) {
		rc = json_util_fail(err, errlen, "%s: no configuration to fill", src);
		goto out;
	}
	if (tb->n_trees == 0 && tb->n_streams == 0) {
		rc = json_util_fail(err, errlen,
				    "%s: gateway %u carries no tree of job %u at epoch "
				    "%u: it has no local workers",
				    src, tb->gw.id, tb->job, tb->epoch);
		goto out;
	}
	/* This worker's entry: among the trees' workers, or in a multicast-only job among
	 * the streams' deliver lists (every worker of a site is in its site's stream). */
	me = NULL;
	if (tb->n_trees > 0) {
		t0 = &tb->trees[0];
		for (int i = 0; i < t0->n_workers; i++)
			if (t0->workers[i].id == worker_id)
				k = i;
		if (k >= 0)
			me = &t0->workers[k];
	}
	for (int i = 0; me == NULL && i < tb->n_streams; i++)
		for (int w = 0; w < tb->streams[i].n_deliver; w++)
			if (tb->streams[i].deliver[w].id == worker_id)
				me = &tb->streams[i].deliver[w];
	if (me == NULL) {
		rc = json_util_fail(err, errlen,
				    "%s: worker %u is not a local worker of gateway %u", src,
				    worker_id, tb->gw.id);
		goto out;
	}
	memset(cfg, 0, sizeof(*cfg));
	cfg->job = tb->job;
	cfg->epoch = tb->epoch;
	cfg->dtype = (enum gr_dtype)tb->dtype;
	cfg->lan_dtype = (enum gr_dtype)tb->lan_dtype;
	cfg->elements = tb->elements;
	cfg->chunk_elements = tb->chunk_elements;
	cfg->worker_id = worker_id;
	cfg->worker_ipv4 = me->ipv4;
	cfg->worker_port = me->port;
	cfg->gateway_id = tb->gw.id;
	cfg->gateway_ipv4 = tb->gw.ipv4;
	cfg->gateway_base_port = tb->gw.base_port;
	cfg->gateway_ports = tb->gw.ports;
	cfg->n_trees = (unsigned int)tb->n_trees;
	cfg->cset_blocks = tb->cset_blocks;
	for (int i = 0; i < tb->n_trees; i++) {
		cfg->trees[i].id = tb->trees[i].id;
		cfg->trees[i].chunk_first = tb->trees[i].chunk_first;
		cfg->trees[i].chunk_count = tb->trees[i].chunk_count;
		cfg->trees[i].slots = tb->trees[i].slots;
		cfg->trees[i].window = tb->trees[i].window;
		cfg->tree_rate_gbps[i] = tb->trees[i].rate_gbps;
	}
	/* The site's other gateways: their trees too, each with its gateway (the table's rule
	 * keeps them within GR_TREES_MAX together). */
	for (int s = 0; s < tb->n_shards; s++) {
		const struct table_shard *sh = &tb->shards[s];

		for (int k = 0; k < sh->n_trees && cfg->n_trees < GR_TREES_MAX; k++) {
			struct gr_tree *t = &cfg->trees[cfg->n_trees];

			t->id = sh->trees[k].id;
			t->chunk_first = sh->trees[k].chunk_first;
			t->chunk_count = sh->trees[k].chunk_count;
			t->slots = sh->trees[k].slots;
			t->window = sh->trees[k].window;
			cfg->tree_gateways[cfg->n_trees++] =
				(struct gr_gateway){.id = sh->gw.id,
						    .ipv4 = sh->gw.ipv4,
						    .base_port = sh->gw.base_port,
						    .ports = sh->gw.ports};
		}
	}
	for (int i = 0; tb->n_shards > 0 && i < tb->n_trees; i++)
		cfg->tree_gateways[i] = (struct gr_gateway){.id = tb->gw.id,
							    .ipv4 = tb->gw.ipv4,
							    .base_port = tb->gw.base_port,
							    .ports = tb->gw.ports};
	for (int i = 0; i < tb->n_streams; i++) {
		const struct table_stream *ts = &tb->streams[i];
		bool mine = false, origin = false;

		for (int w = 0; w < ts->n_deliver; w++)
			mine = mine || ts->deliver[w].id == worker_id;
		for (int o = 0; o < ts->n_origins; o++)
			origin = origin || ts->origins[o] == worker_id;
		if (!ts->has_from && origin) {
			cfg->mcast_send = true;
			cfg->mcast_stream = ts->id;
			cfg->mcast_rate_gbps = ts->rate_gbps / ts->n_origins;
		}
		for (int o = 0; mine && o < ts->n_origins; o++) {
			unsigned int j = 0;

			if (ts->origins[o] == worker_id)
				continue;
			while (j < cfg->n_origins && cfg->origins[j] != ts->origins[o])
				j++;
			if (j < cfg->n_origins)
				continue;
			if (cfg->n_origins == GR_ORIGINS_MAX) {
				rc = json_util_fail(err, errlen,
						    "%s: worker %u receives more than %d "
						    "origins",
						    src, worker_id, GR_ORIGINS_MAX);
				goto out;
			}
			cfg->origin_streams[cfg->n_origins] = ts->id;
			cfg->origins[cfg->n_origins++] = ts->origins[o];
		}
	}
	rc = gr_config_check(cfg, err, errlen);
out:
	table_free(tb);
	return rc;
}

int
gr_config_from_table(struct gr_config *cfg, const char *path, uint16_t worker_id, char *err,
		     size_t errlen)
{
	char msg[TABLE_ERR_MAX];
	struct table *tb;

	if (path == NULL)
		return json_util_fail(err, errlen, "no table file");
	tb = table_load(path, msg, sizeof(msg));
	if (tb == NULL)
		(void)json_util_fail(err, errlen, "%s", msg);
	return config_from(cfg, tb, path, worker_id, err, errlen);
}

int
gr_config_from_table_string(struct gr_config *cfg, const char *json, uint16_t worker_id, char *err,
			    size_t errlen)
{
	char msg[TABLE_ERR_MAX];
	struct table *tb;

	if (json == NULL)
		return json_util_fail(err, errlen, "no table");
	tb = table_parse(json, NULL, msg, sizeof(msg));
	if (tb == NULL)
		(void)json_util_fail(err, errlen, "%s", msg);
	return config_from(cfg, tb, "<string>", worker_id, err, errlen);
}

/* A tree with its gateway and rate, for client_sort_trees(). */
struct tree_gw {
	struct gr_tree t;
	struct gr_gateway g;
	double rate_gbps;
};

static int
cmp_tree_gw_first(const void *a, const void *b)
{
	return cmp_tree_first(&((const struct tree_gw *)a)->t, &((const struct tree_gw *)b)->t);
}

/* Sort cfg's trees by their first chunk, each keeping its entries of tree_gateways and
 * tree_rate_gbps. */
void
client_sort_trees(struct gr_config *cfg)
{
	struct tree_gw tg[GR_TREES_MAX];

	for (unsigned int i = 0; i < cfg->n_trees; i++)
		tg[i] = (struct tree_gw){cfg->trees[i], cfg->tree_gateways[i],
					 cfg->tree_rate_gbps[i]};
	qsort(tg, cfg->n_trees, sizeof(tg[0]), cmp_tree_gw_first);
	for (unsigned int i = 0; i < cfg->n_trees; i++) {
		cfg->trees[i] = tg[i].t;
		cfg->tree_gateways[i] = tg[i].g;
		cfg->tree_rate_gbps[i] = tg[i].rate_gbps;
	}
}
