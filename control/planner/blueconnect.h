/* SPDX-License-Identifier: BSD-3-Clause
 *
 * BlueConnect: an AllReduce over a hierarchy (workers of a gateway, gateways of a site,
 * sites over the WAN) decomposed into reduce-scatter stages inside the sites, one
 * cross-site AllReduce (an mTree plan over the site topology, run by every site's
 * gateways on byte ranges of the tensor) and all-gather stages in reverse. Every
 * factorisation and stage order the hierarchy allows is costed in an alpha-beta model and
 * the cheapest is chosen; a flat ring over all workers and mTree over the sites alone
 * (every worker sending straight to one site gateway) are costed in the same model.
 *
 * Levels, innermost first: W (the workers a gateway serves), G (the gateways of a site),
 * S (the sites). docs/BLUECONNECT.md has the cost model, the enumeration and the plan's
 * `hierarchy` section, which blueconnect_parse() reads back strictly.
 */
#ifndef GEOREDUCE_BLUECONNECT_H
#define GEOREDUCE_BLUECONNECT_H

#include <stdbool.h>
#include <stdint.h>

#include <jansson.h>

#include "mtree.h"
#include "plan.h"
#include "topo.h"

/* Hierarchy levels, as a bit mask in bc_stage.levels. */
#define BC_LEVEL_W 1u /* workers of one gateway */
#define BC_LEVEL_G 2u /* gateways of one site */
#define BC_LEVEL_S 4u /* sites, over the WAN */

/** Stages of one decomposition: reduce-scatters, the AllReduce, all-gathers. */
#define BC_STAGES_MAX 5
/** Decompositions one hierarchy allows (6 with both in-site levels). */
#define BC_CANDIDATES_MAX 8
/** Largest group or override the model takes (workers per site and per gateway). */
#define BC_RANKS_MAX (1 << 20)

enum bc_op {
	BC_OP_REDUCE_SCATTER,
	BC_OP_ALLREDUCE,
	BC_OP_ALL_GATHER
};
enum bc_fabric {
	BC_FABRIC_LAN,
	BC_FABRIC_WAN
};

struct bc_stage {
	enum bc_op op;
	enum bc_fabric fabric;
	unsigned levels;         /* BC_LEVEL_* the stage's groups span */
	int group_size;          /* ranks per group, largest over the sites */
	uint64_t bytes_per_rank; /* bytes each rank holds entering the stage, largest over
				  * the sites */
	double seconds;          /* alpha-beta time of the stage: the slowest site's */
};

/** One decomposition with its stages in execution order and its total alpha-beta time. */
struct bc_candidate {
	char name[16]; /* "[W][G][S]": the stages' levels, ring stages first */
	int n_stages;
	struct bc_stage stages[BC_STAGES_MAX];
	double seconds;
};

/** A worker site as the model sees it. */
struct bc_site {
	int node;        /* topology node index */
	int workers;     /* real workers (after overrides) */
	int gateways;    /* gateways that serve workers: min(gateways, workers) */
	int per_gateway; /* ceil(workers / gateways): every gateway group is costed
				 * at this size (padding) */
};

struct bc_opts {
	int gateways;            /* override for every worker site; 0: the topology's */
	int workers_per_gateway; /* override: every worker site gets gateways x this many
				  * workers; 0: the topology's */
	uint64_t bytes;          /* tensor size N */
	int max_trees;           /* the WAN stage's mTree K; 0: unlimited */
	double ring_seconds;     /* time limit of the flat ring's site-order search; 0: 1 s */
};

#define BC_OPTS_DEFAULT                            \
	{                                          \
		.bytes = 1u << 30, .max_trees = 10 \
	}

/** The hierarchy section of a plan, as written and as parsed. */
struct bc_hierarchy {
	char factorisation[16];
	int n_stages;
	struct bc_stage stages[BC_STAGES_MAX];
	int n_sites;
	struct bc_site *sites;    /* in node order; owned */
	double seconds;           /* the whole AllReduce */
	double flat_ring_seconds; /* baselines; negative when absent */
	double site_mtree_seconds;
};

struct bc_result {
	struct bc_hierarchy h; /* the chosen decomposition */
	int n_candidates;
	struct bc_candidate cand[BC_CANDIDATES_MAX];
	int chosen;           /* index into cand */
	int ranks;            /* workers over all sites */
	int wan_sites;        /* worker sites */
	double wan_rate_gbps; /* the mTree plan's aggregate rate (0 with one site) */
	double wan_height_ms; /* its largest tree height */
	int wan_depth;        /* its largest tree depth in hops */
	struct plan *plan;    /* the WAN trees; `extra` holds the hierarchy section;
				 * `predicted` the chosen decomposition's time. Owned. */
};

/**
 * Plan a hierarchical AllReduce: the WAN stage's trees by mTree, every decomposition
 * costed, the cheapest chosen, the two baselines costed. Returns 0, or a negative errno
 * with one line in err: -EINVAL for bad options, -ENOENT or -EIO when mTree fails,
 * -ENOMEM. Free r with bc_result_fini() whatever the result.
 */
int blueconnect_plan(const struct topo *t, const struct bc_opts *o, struct bc_result *r, char *err,
		     size_t errlen);

void bc_result_fini(struct bc_result *r);

/**
 * Make candidate i (0 .. n_candidates - 1) the plan's decomposition: the hierarchy section,
 * r->h and the plan's predicted time become its own (the trees are every candidate's).
 * Candidate 0 is the one without ring stages: every in-site level summed at the gateways,
 * each gateway of a site taking an equal byte range, which is what the dataplanes run
 * (docs/BLUECONNECT.md). Returns 0, -EINVAL (no such candidate) or -ENOMEM.
 */
int blueconnect_choose(const struct topo *t, struct bc_result *r, int i, char *err, size_t errlen);

/** The hierarchy section (the value of the plan's "hierarchy" key), NULL on ENOMEM. */
json_t *bc_hierarchy_to_json(const struct topo *t, const struct bc_hierarchy *h);

/**
 * Parse and check a plan's "hierarchy" section against a topology: known fields only,
 * every worker site exactly once, stages that mirror (reduce-scatters, one AllReduce over
 * the WAN, the all-gathers in reverse), bytes per rank shrinking inwards, a factorisation
 * naming the stages. plan_doc is the whole plan document. Returns 0, or -EINVAL with one
 * line naming the field in err (prefixed with src); free h with bc_hierarchy_fini().
 */
int blueconnect_parse(const struct topo *t, const json_t *plan_doc, const char *src,
		      struct bc_hierarchy *h, char *err, size_t errlen);

/** Read a plan file ("-": stdin) and blueconnect_parse() its hierarchy section. */
int blueconnect_load(const struct topo *t, const char *path, struct bc_hierarchy *h, char *err,
		     size_t errlen);

void bc_hierarchy_fini(struct bc_hierarchy *h);

/** "reduce_scatter", "allreduce", "all_gather". */
const char *bc_op_name(enum bc_op op);

/** "lan", "wan". */
const char *bc_fabric_name(enum bc_fabric f);

/** The letters of a level mask in the order W, G, S ("WG"); buf holds at least 4 bytes. */
void bc_levels_str(unsigned levels, char *buf);

#endif
