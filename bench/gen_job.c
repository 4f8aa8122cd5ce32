/* SPDX-License-Identifier: BSD-3-Clause
 *
 * The job georeduce-bench's generator drives, from the gateway's table (gen.h,
 * gen_job_from_table()): the gateway, the parties it exchanges chunks with (local workers,
 * child gateways, the parent), the protected links' keys, and the chunks driven.
 *
 * Main lcore, before and after the run.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <rte_common.h>

#include "gen.h"
#include "gen_priv.h"

int
gen_cmp_worker(const void *a, const void *b)
{
	const struct gen_worker *x = a, *y = b;
	uint64_t kx = (uint64_t)x->ipv4 << 16 | x->port, ky = (uint64_t)y->ipv4 << 16 | y->port;

	return kx < ky ? -1 : kx > ky;
}

static int
cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return x < y ? -1 : x > y;
}

static bool
same_gw(const struct table_gw *a, const struct table_gw *b)
{
	return a->id == b->id && a->ipv4 == b->ipv4 && a->base_port == b->base_port &&
	       a->ports == b->ports;
}

/* The trees must agree on the parties the generator plays: those of the first. */
static int
check_trees(const struct table *tb, char *err, size_t errlen)
{
	const struct table_tree *t0 = &tb->trees[0];

	for (int t = 0; t < tb->n_trees; t++) {
		const struct table_tree *tr = &tb->trees[t];
		bool same = tr->has_parent == t0->has_parent && tr->n_children == t0->n_children &&
			    (!tr->has_parent || same_gw(&tr->parent, &t0->parent));

		for (int k = 0; same && k < tr->n_children; k++)
			same = same_gw(&tr->children[k], &t0->children[k]) &&
			       tr->child_workers[k] == t0->child_workers[k];
		if (!same || tr->subtree_workers != t0->subtree_workers ||
		    tr->threshold != t0->threshold) {
			snprintf(err, errlen,
				 "--table: tree %u: its parent, children or subtree differ from "
				 "tree %u's (the bench plays one set of parties)",
				 tr->id, t0->id);
			return -EINVAL;
		}
		if (table_lan_dtype(tb) != tb->dtype) {
			snprintf(err, errlen,
				 "--table: a LAN dtype (%s) is not driven by the bench",
				 table_dtype_name(table_lan_dtype(tb)));
			return -EINVAL;
		}
	}
	return 0;
}

int16_t
gen_seal_of(const struct gen_job *gj, uint16_t id)
{
	for (unsigned int k = 0; id != 0 && k < gj->n_seals; k++)
		if (gj->seals[k].peer == id)
			return (int16_t)k;
	return -1;
}

/* With contributor sets: each contributor's set (a worker its id, a child the workers
 * below it), then the parent's own share's, one id that no worker of the table has (the
 * highest the sets hold): the parent adds it as a contribution of its own subtree. */
static int
set_sets(struct gen_job *gj, const struct table_tree *t0, char *err, size_t errlen)
{
	uint32_t L = gj->cset_len;
	uint8_t *share;

	gj->sets = calloc(gj->n_workers + 1u, L);
	if (gj->sets == NULL) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	for (unsigned int w = 0; w < gj->n_workers; w++) {
		uint8_t *set = gj->sets + (size_t)w * L;
		const struct gen_worker *wk = &gj->workers[w];

		if (wk->child < 0)
			set[wk->id >> 3] |= (uint8_t)(1u << (wk->id & 7));
		for (int b = 0; wk->child >= 0 && b < t0->n_below; b++)
			if (t0->below_child[b] == wk->child)
				set[t0->below[b] >> 3] |= (uint8_t)(1u << (t0->below[b] & 7));
	}
	share = gj->sets + (size_t)gj->n_workers * L;
	for (uint32_t id = L * 8 - 1; id >= 1 && gj->has_parent; id--) {
		bool used = false;

		for (unsigned int w = 0; w < gj->n_workers && !used; w++)
			used = gj->sets[(size_t)w * L + (id >> 3)] >> (id & 7) & 1;
		if (!used) {
			share[id >> 3] = (uint8_t)(1u << (id & 7));
			return 0;
		}
	}
	if (gj->has_parent) {
		snprintf(err, errlen,
			 "--table: no worker id below %u left for the parent's own contribution",
			 L * 8);
		return -EINVAL;
	}
	return 0;
}

/* The contributors (local workers, then child gateways) and the parent of tree 0. */
static void
set_parties(struct gen_job *gj, const struct table_tree *t0)
{
	unsigned int k = 0;

	for (int w = 0; w < t0->n_workers; w++, k++) {
		gj->workers[k].id = t0->workers[w].id;
		gj->workers[k].ipv4 = t0->workers[w].ipv4;
		gj->workers[k].port = t0->workers[w].port;
		gj->workers[k].n_ports = 1;
		gj->workers[k].contrib = 1;
		gj->workers[k].seal = -1; /* links to workers are plain */
		gj->workers[k].child = -1;
	}
	for (int w = 0; w < t0->n_children; w++, k++) {
		gj->workers[k].id = t0->children[w].id;
		gj->workers[k].ipv4 = t0->children[w].ipv4;
		gj->workers[k].port = t0->children[w].base_port;
		gj->workers[k].n_ports = t0->children[w].ports;
		gj->workers[k].contrib = (uint16_t)t0->child_workers[w];
		gj->workers[k].seal = gen_seal_of(gj, t0->children[w].id);
		gj->workers[k].child = (int16_t)w;
	}
	qsort(gj->workers, gj->n_workers, sizeof(*gj->workers), gen_cmp_worker);
	gj->n_children = (unsigned int)t0->n_children;
	gj->has_parent = t0->has_parent;
	gj->sub_contrib = (uint16_t)t0->subtree_workers;
	gj->result_contrib = (uint16_t)(t0->subtree_workers + (t0->has_parent ? 1 : 0));
	gj->root_id = t0->has_parent ? t0->parent.id : gj->gw_id;
	if (t0->has_parent) {
		gj->parent.id = t0->parent.id;
		gj->parent.ipv4 = t0->parent.ipv4;
		gj->parent.port = t0->parent.base_port;
		gj->parent.n_ports = t0->parent.ports;
		gj->parent.contrib = 1;
	}
	gj->parent.seal = t0->has_parent ? gen_seal_of(gj, t0->parent.id) : -1;
}

void
gen_job_common(struct gen_job *gj, const struct table *tb)
{
	gj->job = tb->job;
	gj->epoch = tb->epoch;
	gj->dtype = (enum wire_dtype)tb->dtype;
	gj->elems = tb->chunk_elements;
	gj->payload = (uint32_t)table_dtype_bytes(tb->dtype, tb->chunk_elements);
	gj->cset_len = WIRE_CSET_BLOCK * tb->cset_blocks;
	gj->pl_off = WIRE_FRAME_PAYLOAD_OFF + gj->cset_len;
	gj->frame_len = gj->pl_off + gj->payload;
	gj->max_frame = gj->frame_len + (tb->n_seals > 0 ? WIRE_SEAL_OVERHEAD : 0);
	gj->gw_id = tb->gw.id;
	gj->gw_ipv4 = tb->gw.ipv4;
	gj->base_port = tb->gw.base_port;
	gj->n_ports = tb->gw.ports;
	gj->n_seals = (unsigned int)tb->n_seals;
	gj->seals = calloc(RTE_MAX(gj->n_seals, 1u), sizeof(*gj->seals));
	if (gj->seals != NULL)
		memcpy(gj->seals, tb->seals, gj->n_seals * sizeof(*gj->seals));
}

int
gen_job_from_table(struct gen_job *gj, const struct table *tb, unsigned int window, char *err,
		   size_t errlen)
{
	uint64_t total = table_n_chunks(tb);
	unsigned int n = 0, cap = 0;
	uint32_t *pairs;

	memset(gj, 0, sizeof(*gj));
	if (tb->n_streams > 0)
		return gen_mcast_job(gj, tb, window, err, errlen);
	if (tb->n_trees == 0) {
		snprintf(err, errlen, "--table: the gateway is in no tree of job %u", tb->job);
		return -EINVAL;
	}
	if (check_trees(tb, err, errlen) != 0)
		return -EINVAL;
	for (int t = 0; t < tb->n_trees; t++)
		cap += RTE_MIN(tb->trees[t].chunk_count, tb->trees[t].slots);
	gen_job_common(gj, tb);
	gj->n_workers = (unsigned int)(tb->trees[0].n_workers + tb->trees[0].n_children);
	gj->workers = calloc(gj->n_workers, sizeof(*gj->workers));
	pairs = calloc(cap, 2 * sizeof(uint32_t));
	gj->chunk = calloc(RTE_MAX(cap, 1u), sizeof(*gj->chunk));
	gj->tree = calloc(RTE_MAX(cap, 1u), sizeof(*gj->tree));
	if (gj->workers == NULL || pairs == NULL || gj->chunk == NULL || gj->tree == NULL ||
	    gj->seals == NULL) {
		free(pairs);
		gen_job_fini(gj);
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	set_parties(gj, &tb->trees[0]);
	if (tb->trees[0].threshold < tb->trees[0].subtree_workers)
		gj->threshold = tb->trees[0].threshold;
	if (gj->cset_len != 0 && set_sets(gj, &tb->trees[0], err, errlen) != 0) {
		free(pairs);
		gen_job_fini(gj);
		return -EINVAL;
	}
	/* Round-robin over the trees, so that a small window still covers every tree. */
	for (uint32_t k = 0; n < window && n < cap; k++) {
		for (int t = 0; t < tb->n_trees && n < window; t++) {
			const struct table_tree *tr = &tb->trees[t];
			uint32_t c = tr->chunk_first + k;

			if (k >= RTE_MIN(tr->chunk_count, tr->slots))
				continue;
			if (wire_chunk_len(tb->elements, tb->chunk_elements, c) ==
			    tb->chunk_elements) {
				pairs[2 * n] = c;
				pairs[2 * n + 1] = tr->id;
				n++;
			} else {
				cap--; /* a short last chunk: not driven */
			}
		}
	}
	qsort(pairs, n, 2 * sizeof(uint32_t), cmp_u32);
	for (unsigned int i = 0; i < n; i++) {
		gj->chunk[i] = pairs[2 * i];
		gj->tree[i] = (uint16_t)pairs[2 * i + 1];
	}
	free(pairs);
	gj->n_chunks = n;
	gj->amplitude = RTE_MAX(1, RTE_MIN(8, 256 / (int)(gj->n_workers + gj->has_parent)));
	if (n == 0 || total == 0) {
		gen_job_fini(gj);
		snprintf(err, errlen, "--table: job %u has no full chunk to drive", tb->job);
		return -EINVAL;
	}
	return 0;
}

void
gen_job_fini(struct gen_job *gj)
{
	if (gj->seals != NULL)
		memset(gj->seals, 0, gj->n_seals * sizeof(*gj->seals)); /* the keys */
	free(gj->seals);
	free(gj->sets);
	gen_mcast_fini(gj);
	free(gj->workers);
	free(gj->chunk);
	free(gj->tree);
	gj->seals = NULL;
	gj->sets = NULL;
	gj->workers = NULL;
	gj->chunk = NULL;
	gj->tree = NULL;
}
