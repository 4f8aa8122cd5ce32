/* SPDX-License-Identifier: BSD-3-Clause
 *
 * Deployments: what georeduce-control runs, read from `georeduce-deployment/1` JSON
 * (docs/DEPLOYMENT.md): a topology, the gateway of every topology node (its sender id,
 * data-plane address and UDP ports, and the control endpoint of its dataplane: a unix
 * socket or tls://HOST:PORT), the control process's TLS files and address, and the jobs
 * with their algorithm, tensor and workers.
 *
 * The parser is strict like the table parser: unknown fields and duplicate keys are
 * rejected, integers are range-checked, and every error is one line naming the file and
 * the field ("deploy.json: field 'jobs[0].workers[2].ipv4': ..."), or the file, line and
 * column for JSON syntax. A deployment is immutable once loaded. Control side only; no
 * DPDK.
 */
#ifndef GEOREDUCE_DEPLOY_H
#define GEOREDUCE_DEPLOY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "plan.h"
#include "table.h"
#include "topo.h"

#define DEPLOY_FORMAT "georeduce-deployment/1"
/** Longest message deploy_parse() and deploy_load() write into their error buffer. */
#define DEPLOY_ERR_MAX 768
/** Jobs of one deployment: what one dataplane holds at once. */
#define DEPLOY_JOBS_MAX 16
/** Gateways of one deployment, and of one site (each holds a shard of the tensor). */
#define DEPLOY_GATEWAYS_MAX 4096
#define DEPLOY_SITE_GATEWAYS_MAX 16
/** Bytes of a gateway's name (without the NUL): a node id, "-" and a number. */
#define DEPLOY_NAME_MAX (TOPO_ID_MAX + 11)
/** Bytes of a control socket path, without the NUL (sockaddr_un.sun_path holds 108). */
#define DEPLOY_SOCKET_MAX 107
/** Bytes of a control endpoint: a socket path or "tls://HOST:PORT". */
#define DEPLOY_ENDPOINT_MAX 280
/** Longest path of a deployment or topology file. */
#define DEPLOY_PATH_MAX 4095
/** Defaults of the optional fields. */
#define DEPLOY_DEFAULT_MTU 1500
#define DEPLOY_DEFAULT_MAX_TREES 10
#define DEPLOY_DEFAULT_GRACE_MAX_MS 1000 /* crew: the bound of "grace_ms": "auto" */
#define DEPLOY_DEFAULT_RING_SECONDS 0.5

/** How a job's gradients flow. */
enum deploy_algo {
	DEPLOY_ALGO_MTREE = 1,       /* mTree: several height-bounded trees (control/planner) */
	DEPLOY_ALGO_RING = 2,        /* the best ring, run as one chain tree per member */
	DEPLOY_ALGO_SINGLE_TREE = 3, /* the maximum-bottleneck spanning tree */
	DEPLOY_ALGO_CREW = 4,        /* CREW partial reduce: every site aggregates a range */
	DEPLOY_ALGO_SELMCAST = 5,    /* selective multicast: each site's updates to p others */
	DEPLOY_ALGO_BLUECONNECT = 6, /* BlueConnect's decomposition: the sites' gateways sum
				      * their shards, an mTree per shard over the WAN */
};

/** A gateway of one topology node (a site has one or several). */
struct deploy_gateway {
	uint16_t id;        /* sender id, 1 .. TABLE_ID_MAX, unique */
	uint32_t ipv4;      /* data-plane address, host order, unicast, unique */
	uint16_t base_port; /* first UDP port of the steering range */
	uint16_t ports;     /* ports of the steering range */
	/* its dataplane's control endpoint: a socket path (resolved) or "tls://HOST:PORT",
	 * whose certificate must name the gateway (`name`) */
	char socket[DEPLOY_ENDPOINT_MAX + 1];
	int node;  /* its topology node */
	int shard; /* its position among the node's gateways: it holds the
				      * shard-th of the node's equal parts of every tensor */
	/* The name in logs, files and its certificate: the node id when the node has one
	 * gateway, else the file's "name" or NODE-K (K = shard + 1). Unique. */
	char name[DEPLOY_NAME_MAX + 1];
	/* The protocol revision its dataplane implements, which planning keeps its jobs
	 * within (lib/revision.h): GEOREDUCE_REVISION from the file (the gateways of this
	 * build); georeduce-control run sets what the gateway's `version` answered, 0 for an
	 * older one (no revision in the answer) or one not asked yet. */
	uint8_t revision;
};

/** One worker of a job. */
struct deploy_worker {
	int node;              /* topology node index of its site */
	struct table_worker w; /* id, address, UDP port */
};

/** The range of a job's weight. */
#define DEPLOY_WEIGHT_MIN 0.001
#define DEPLOY_WEIGHT_MAX 1000000.0

/** One job. */
struct deploy_job {
	uint32_t id;
	enum deploy_algo algo;
	/* mtree options (docs/PLANNER.md) */
	int max_trees;        /* 0: any number */
	double max_height_ms; /* 0: no limit */
	double min_rate_gbps; /* 0: none */
	double rho;           /* 0: no ITH search */
	bool paper;           /* GBST candidates only */
	/* ring option */
	double ring_seconds; /* local search time limit */
	/* crew option: a round completes at this many worker contributions (0: all) */
	uint32_t min_workers;
	/* crew options: the grace window after min_workers, ms (0: none); with grace_auto
	 * the gateways set it from the recent arrivals and this is its bound */
	uint32_t grace_ms;
	bool grace_auto;
	/* selmcast options: receivers per sender site (0: max(1, 30% of the worker sites)),
	 * and the selection's cost model */
	int mcast_p;
	bool mcast_application; /* "application": one copy per receiver leaves the
				      * sender; false: "network" (one copy per tree edge) */
	uint8_t cset_blocks;    /* contributor sets of the job's packets (crew: the
				      * fewest 32-byte blocks that hold every worker id) */
	/* its weight in the WAN's links against the other jobs (docs/CONTROL.md, "Jobs share
	 * the WAN by weight"): DEPLOY_WEIGHT_MIN .. DEPLOY_WEIGHT_MAX, 1 if not given */
	double weight;
	/* the tensor */
	enum table_dtype dtype;
	uint64_t elements;
	uint32_t mtu;                  /* IP MTU of every path of the job (the LAN's: lan_mtu) */
	enum table_dtype lan_dtype;    /* the workers' CONTRIBs to their gateway (fp32 or bf16
				      * for an MX dtype); 0: dtype */
	uint32_t lan_mtu;              /* IP MTU between the workers and their gateway */
	uint32_t chunk_bytes;          /* payload bytes per chunk (default from mtu) */
	uint32_t slots_min, slots_max; /* slot formula floor and cap (0: the defaults) */
	/* elastic membership (docs/CONTROL.md, "Elastic membership"): workers join and leave
	 * through the control API; its workers may then be none, and at most max_workers
	 * (0: no limit but the gateways') */
	bool elastic;
	uint32_t max_workers;
	int n_workers;
	struct deploy_worker *workers; /* in file order */
};

/** Tenants of one deployment (docs/DEPLOYMENT.md, "Tenants"). */
#define DEPLOY_TENANTS_MAX 1024
/** Bytes of a tenant's name, without the NUL (CTLTLS_TENANT_MAX). */
#define DEPLOY_TENANT_NAME_MAX 63

/** A tenant and its quotas over the jobs created through the control API in its name. */
struct deploy_tenant {
	char name[DEPLOY_TENANT_NAME_MAX + 1];
	uint32_t jobs;  /* jobs at once; 0: no limit */
	uint64_t slots; /* the sum of its jobs' slot caps (slots.max); 0: no limit */
	double weight;  /* the sum of its jobs' WAN weights; 0: no limit */
};

/** The control process's TLS (docs/DEPLOYMENT.md, "Certificates"); files resolved. */
struct deploy_tls {
	bool on;                        /* the deployment has a "tls" object */
	char ca[DEPLOY_PATH_MAX + 1];   /* the CA every certificate chains to */
	char cert[DEPLOY_PATH_MAX + 1]; /* the control process's certificate (role control) */
	char key[DEPLOY_PATH_MAX + 1];
	char crl[DEPLOY_PATH_MAX + 1];        /* the CA's CRL; "" for none */
	char listen[DEPLOY_ENDPOINT_MAX + 1]; /* its own API, "HOST:PORT"; "" for none */
};

/** The CRL of t for ctltls_ctx_new(): its path, or NULL for none. */
#define DEPLOY_TLS_CRL(t) ((t)->crl[0] != '\0' ? (t)->crl : NULL)

struct deploy {
	char path[DEPLOY_PATH_MAX + 1]; /* the file it was read from ("<string>" if none) */
	struct deploy_tls tls;
	char topology_src[DEPLOY_PATH_MAX + 1]; /* the topology's file, or "inline" */
	struct topo *topo;
	/* Every gateway, by node and, within a node, in file order (its shards): with one
	 * gateway per node, gateways[v] is node v's. */
	struct deploy_gateway *gateways;
	int n_gateways;
	int *node_gw;  /* by node: the index of its first gateway */
	int *node_ngw; /* by node: how many it has, 1 .. 16 */
	int n_jobs;
	struct deploy_job *jobs; /* room for DEPLOY_JOBS_MAX: the file's, then the daemon
				  * adds those created through its API */
	int n_tenants;
	struct deploy_tenant *tenants; /* the file's "tenants", sorted by name; NULL if none */
	/* Protected links (docs/DEPLOYMENT.md, "protected"): the AEAD their frames are
	 * sealed with, 0 if none is protected, and per topology link whether it is. */
	enum table_aead seal_aead;
	bool *sealed_links; /* topo->n_links entries, NULL if none is protected */
};

/**
 * Parse a `georeduce-deployment/1` document.
 *
 * @param text  NUL-terminated JSON.
 * @param src   The file's path: used in messages and as the base of relative topology
 *              and socket paths (NULL: "<string>", relative to the working directory).
 * @param err   Receives one line: "SRC:LINE:COLUMN: invalid JSON: ..." for syntax errors,
 *              "SRC: field 'gateways[1].id': ..." for everything else.
 * @return      The deployment (free with deploy_free()), or NULL with err filled and errno
 *              EINVAL (ENOMEM when out of memory).
 */
struct deploy *deploy_parse(const char *text, const char *src, char *err, size_t errlen);

/** Read a file and deploy_parse() it. NULL with err on failure. */
struct deploy *deploy_load(const char *path, char *err, size_t errlen);

/** Free a deployment. NULL is a no-op. */
void deploy_free(struct deploy *d);

/** "mtree", "ring", "single-tree", "crew", "selmcast", "blueconnect", or NULL. */
const char *deploy_algo_name(enum deploy_algo a);

/**
 * Parse one job object, in the syntax of an item of the file's "jobs", against d's
 * topology, gateways and protected links, as a job of d beside d->jobs other than
 * d->jobs[skip] (-1: all; its id must differ from theirs). Errors name the field as
 * "SRC: field 'PATH.KEY': ...".
 *
 * @param out  Receives the job (its workers allocated: free them with free()).
 * @return     0, or -EINVAL with err filled (-ENOMEM when out of memory).
 */
int deploy_job_parse(const struct deploy *d, const json_t *job, int skip, const char *src,
		     const char *path, struct deploy_job *out, char *err, size_t errlen);

/** The tenant named name, or NULL. */
const struct deploy_tenant *deploy_tenant_find(const struct deploy *d, const char *name);

/** Number of workers job j has at node v. */
int deploy_job_workers_at(const struct deploy_job *j, int v);

#endif
