/* SPDX-License-Identifier: BSD-3-Clause
 *
 * libgeoreduce: the worker side of georeduce. A training worker sums a gradient tensor with
 * every other worker of its job through its site's gateway (georeduce-dataplane), over an
 * ordinary kernel UDP socket: no DPDK, no privileges.
 *
 *   struct gr_config cfg;
 *   char err[GR_ERR_MAX];
 *
 *   if (gr_config_from_table(&cfg, "table.json", 301, err, sizeof(err)) < 0) ... // err: why
 *   struct gr_client *c = gr_client_create(&cfg, err, sizeof(err));
 *   int contrib = gr_allreduce(c, grad, n, GR_DTYPE_FP32, step, NULL);  // grad = the sum
 *   ...
 *   gr_client_free(c);
 *
 * gr_allreduce() cuts the tensor into chunks (one UDP packet each, docs/PROTOCOL.md section
 * 8), keeps a window of them in flight to the gateway, retransmits what the gateway did not
 * answer (section 10), and writes every chunk's result, the SUM over the job's workers, in
 * place. docs/CLIENT.md describes the configuration, the timers and an integration.
 *
 * Threads: a client is used by one thread at a time (it is not locked); different clients
 * are independent, so a process may run one client per thread. Nothing here keeps global
 * state. Payloads are little-endian (docs/PROTOCOL.md section 4): the library builds only
 * on little-endian hosts.
 *
 * Errors: int functions return 0 (or a count) or a negative errno; gr_client_create()
 * returns NULL and sets errno. Every failure writes one line saying why into the caller's
 * err buffer, or, for gr_allreduce(), into the client (gr_client_error()).
 */
#ifndef GEOREDUCE_CLIENT_H
#define GEOREDUCE_CLIENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/** Longest message written into an error buffer, with its NUL. */
#define GR_ERR_MAX 512
/** Most trees in a configuration (as many as a georeduce-table/1 may hold). */
#define GR_TREES_MAX 256
/** Most gateways of one site that a configuration sends to (gr_config.tree_gateways). */
#define GR_GATEWAYS_MAX 16
/** Largest send window, in chunks. */
#define GR_WINDOW_MAX 65536
/** Window per tree when neither the options nor the table give one. */
#define GR_WINDOW_DEFAULT 256
/** Default limit of one gr_allreduce() call. */
#define GR_TIMEOUT_DEFAULT_MS 60000
/** Default retransmission timer bounds and first value (docs/CLIENT.md, "Timers"). */
#define GR_RTO_MIN_DEFAULT_MS 10
#define GR_RTO_MAX_DEFAULT_MS 4000
#define GR_RTO_INITIAL_DEFAULT_MS 1000
/** Longest contributor set, in 32-byte blocks (worker ids up to 4095). */
#define GR_CSET_BLOCKS_MAX 16
/** Bytes of one block of a contributor set. */
#define GR_CSET_BLOCK 32
/** Most origins (senders) whose updates one worker receives by selective multicast. */
#define GR_ORIGINS_MAX 1024
/** Default interval between two progress callbacks. */
#define GR_PROGRESS_DEFAULT_MS 100
/** Rounds after the one being received whose multicast chunks gr_mcast_recv() keeps, when
 * gr_config.mcast_rounds_ahead is 0, and the most it may be. */
#define GR_MCAST_AHEAD_DEFAULT 1
#define GR_MCAST_AHEAD_MAX 8

/** Element types; the values are those of the wire header and the tables. */
enum gr_dtype {
	GR_DTYPE_FP32 = 1, /* IEEE 754 binary32 */
	GR_DTYPE_FP16 = 2, /* IEEE 754 binary16 */
	GR_DTYPE_BF16 = 3, /* bfloat16 */
	/* OCP Microscaling blocks of 32 on the wire, summed in fp32 at every gateway
	 * (docs/PROTOCOL.md section 4). The caller's buffer is fp32, in and out: the library
	 * encodes each chunk when it sends it and decodes each result into the buffer.
	 * elements and chunk_elements are multiples of 32. Allreduce only (no multicast). */
	GR_DTYPE_MXINT8 = 4, /* MXINT8 */
	GR_DTYPE_MXFP8 = 5,  /* MXFP8, E4M3 elements */
	GR_DTYPE_MXFP4 = 6,  /* MXFP4, E2M1 elements */
};

/** One tree of the job as this worker's gateway carries it: a contiguous chunk range. */
struct gr_tree {
	uint16_t id;          /* tree id, written into every packet of its chunks */
	uint32_t chunk_first; /* the tree carries chunks chunk_first .. + chunk_count - 1 */
	uint32_t chunk_count; /* >= 1 */
	uint32_t slots;       /* the gateway's slot pool for the tree (bounds the span of
				 * the chunks in flight); 0: unknown */
	uint32_t window;      /* chunks to keep unanswered in the tree (the gateway's
				 * bandwidth-delay product for it, <= slots); 0: slots */
};

/** A gateway of this worker's site: where the chunks of a tree go (gr_config.tree_gateways). */
struct gr_gateway {
	uint16_t id;        /* its node id, 1 .. 65534; 0: the configuration's gateway_* */
	uint32_t ipv4;      /* its data-plane address */
	uint16_t base_port; /* chunk c goes to base_port + c % ports */
	uint16_t ports;     /* >= 1 */
};

/**
 * Everything a client needs, as plain data: fill it by hand or with gr_config_from_table().
 * Addresses are IPv4 in host byte order (a.b.c.d is a << 24 | b << 16 | c << 8 | d), ports
 * in host order. The trees' ranges must partition the tensor's chunks [0, C), C =
 * ceil(elements / chunk_elements), in any order.
 */
struct gr_config {
	uint32_t job;
	uint32_t epoch; /* plan epoch of the gateway's table */
	enum gr_dtype dtype;
	uint64_t elements;          /* tensor length, >= 1 */
	uint32_t chunk_elements;    /* elements per packet, 1 .. 65535, at most 8918 bytes */
	uint16_t worker_id;         /* this worker's node id, 1 .. 65534 */
	uint32_t worker_ipv4;       /* address to bind; 0: any */
	uint16_t worker_port;       /* UDP port to bind: the gateway sends results there */
	uint16_t gateway_id;        /* the gateway's node id, 1 .. 65534 */
	uint32_t gateway_ipv4;      /* the gateway's data-plane address */
	uint16_t gateway_base_port; /* chunk c goes to gateway_base_port + c % gateway_ports */
	uint16_t gateway_ports;     /* >= 1 */
	unsigned int n_trees;       /* 1 .. GR_TREES_MAX */
	struct gr_tree trees[GR_TREES_MAX];
	uint8_t cset_blocks; /* the job's contributor sets (docs/PROTOCOL.md section
					 * 4), 32-byte blocks, 0 .. GR_CSET_BLOCKS_MAX; with sets
					 * worker_id < 256 x cset_blocks. A partial reduce needs
					 * them: results then say whose gradients they hold */
	/* Selective multicast (a selmcast job: n_trees may then be 0; docs/CLIENT.md). */
	bool mcast_send;                         /* this worker's updates go out on mcast_stream */
	uint16_t mcast_stream;                   /* the stream of this worker's site */
	double mcast_rate_gbps;                  /* gr_mcast_send() pace: this worker's part of the
					 * stream's planned rate; 0: unpaced */
	unsigned int n_origins;                  /* 0 .. GR_ORIGINS_MAX */
	uint16_t origins[GR_ORIGINS_MAX];        /* workers whose updates reach this worker */
	uint16_t origin_streams[GR_ORIGINS_MAX]; /* the stream each of them arrives on */
	uint32_t mcast_rounds_ahead; /* gr_mcast_recv(r) keeps the chunks of rounds r + 1 ..
					 * r + this for the calls of those rounds (a sender that
					 * is ahead); 0: GR_MCAST_AHEAD_DEFAULT; at most
					 * GR_MCAST_AHEAD_MAX. With origins, each round kept costs
					 * n_origins x the tensor's bytes (gr_client_create()) */
	/* Several gateways at this worker's site, each holding a shard of the tensor
	 * (docs/CLIENT.md): trees[i]'s chunks go to tree_gateways[i], and its results come
	 * from there; an entry with id 0 means the gateway_* fields above. At most
	 * GR_GATEWAYS_MAX distinct gateways. gr_config_from_table() fills every tree's from a
	 * table with `shards` and leaves them zero for a site with one gateway. (Last in the
	 * structure: the fields above keep their offsets.) */
	struct gr_gateway tree_gateways[GR_TREES_MAX];
	/* The dtype of this worker's CONTRIBs to its gateway (the table's lan_dtype): 0 or
	 * dtype for the same; GR_DTYPE_FP32 or GR_DTYPE_BF16 for an MX dtype, so that the
	 * gradient is first rounded where the gateway's sum leaves for the WAN (results come
	 * in dtype). chunk_elements of it at most 8918 bytes. (After tree_gateways, for the
	 * same reason.) */
	enum gr_dtype lan_dtype;
	/* Whether to forget each chunk's result once delivered. By default (false) the client
	 * keeps a copy of the latest RESULT of every chunk (the tensor's bytes in dtype, and
	 * its contributor sets), and answers a gateway that asks for one of them: after a
	 * gateway failure, peers at another site may lack RESULTs that this worker got, and
	 * nobody else holds them (docs/CLIENT.md, "Results kept"). true saves that memory; a
	 * round cut that way then times out. (After lan_dtype: the offsets above stay.) */
	bool forget_results;
	/* The protocol revision this client acts as (docs/PROTOCOL.md section 12): 0 for the
	 * library's own; 13 or 14 to act as a worker library of that revision, a test and
	 * upgrade aid: below 14 a chunk of more than 8192 bytes of payload is refused, as
	 * such a library refuses it. gr_config_from_table() leaves it 0. (After
	 * forget_results, for the same reason.) */
	uint8_t revision;
	/* The planned rate of trees[i] through this worker's gateway, Gbit/s (the table's
	 * rate_gbps): with it a call with gr_options.follow_rtt sizes the tree's window from
	 * the round trip it measured (docs/CLIENT.md, "Windows that follow the round trip").
	 * 0: unknown (a tree of another gateway of the site), its window stays
	 * trees[i].window. Finite, >= 0. (Last, for the same reason.) */
	double tree_rate_gbps[GR_TREES_MAX];
};

/** Called with the chunks done and the total (see struct gr_options). */
typedef void (*gr_progress_fn)(void *arg, uint64_t done, uint64_t total);

/** Asked while a call waits whether to stop it (see struct gr_options): nonzero stops. */
typedef int (*gr_cancel_fn)(void *arg);

/**
 * Options of one gr_allreduce() call. A zeroed struct (or NULL) means every default.
 */
struct gr_options {
	uint32_t window;         /* chunks in flight (sent, without result) per tree at most;
				 * 0: the tree's window from its table (the gateway's
				 * bandwidth-delay product for it), else its slot pool, else
				 * GR_WINDOW_DEFAULT; with follow_rtt grown to the tree's rate
				 * times the round trip measured in an earlier call where that is
				 * more (up to half the slot pool; docs/CLIENT.md). Whatever the
				 * window, the
				 * chunks in flight of a tree span at most its slot pool (no chunk
				 * is sent before every chunk of the tree a pool earlier has its
				 * result). */
	uint32_t timeout_ms;     /* give up with -ETIMEDOUT after this; 0: GR_TIMEOUT_DEFAULT_MS */
	bool average;            /* divide each result by its contributor count in place */
	gr_progress_fn progress; /* NULL: none */
	void *progress_arg;
	uint32_t progress_ms;    /* at most one callback per interval (and one at the end);
				 * 0: GR_PROGRESS_DEFAULT_MS */
	uint32_t rto_min_ms;     /* retransmission timer floor; 0: GR_RTO_MIN_DEFAULT_MS */
	uint32_t rto_max_ms;     /* cap of the timer and of its backoff; 0: GR_RTO_MAX_DEFAULT_MS */
	uint32_t rto_initial_ms; /* before any round trip is measured; 0: the default */
	uint8_t *csets;          /* NULL, or room for every chunk's contributor set:
				 * C x GR_CSET_BLOCK x cset_blocks bytes (C chunks). Chunk c's
				 * result came from the workers whose ids are set in the bitmap
				 * at c x GR_CSET_BLOCK x cset_blocks: id i is bit i % 8 of byte
				 * i / 8. Untouched without sets (cset_blocks 0) */
	double rate_gbps;        /* gr_mcast_send(): pace at this rate; 0: the configuration's
				 * mcast_rate_gbps */
	bool resume;             /* take up the previous call on this client where it stopped:
				 * it timed out or was cancelled, had the same round and buffer,
				 * and neither the buffer nor the client changed since. Results
				 * it got are kept (not asked for again), chunks it had in flight
				 * are asked for at once, the rest go as usual. Without such a
				 * call: -EINVAL */
	gr_cancel_fn cancel;     /* NULL, or asked at least every progress_ms while the call
				 * waits (never per packet): nonzero ends the call with
				 * -ECANCELED, which leaves it resumable as a timeout does. A
				 * caller that learns of a new epoch (a re-plan) stops the round
				 * at once this way instead of waiting for its timeout */
	void *cancel_arg;
	bool follow_rtt; /* with window 0: each tree's window grows with the round trip
			  * measured (docs/CLIENT.md, "Windows that follow the round trip");
			  * false: the table's */
};

/** Counters of a client since it was created (reconfiguration keeps them). */
struct gr_stats {
	uint64_t calls;         /* gr_allreduce() calls */
	uint64_t calls_ok;      /* ... that returned every result */
	uint64_t timeouts;      /* ... that returned -ETIMEDOUT */
	uint64_t contribs_sent; /* first transmissions of a CONTRIB */
	uint64_t contribs_retx; /* CONTRIBs sent again with RETX */
	uint64_t nacks_sent;    /* NACK_RESULT packets sent */
	uint64_t results;       /* RESULTs delivered */
	uint64_t acks;          /* ACKs that held at least one chunk */
	uint64_t nack_contribs; /* NACK_CONTRIB packets received */
	uint64_t probes;        /* PROBEs answered */
	uint64_t duplicates;    /* RESULT or ACK for a chunk already done or held */
	uint64_t stale;         /* packets of another round or epoch */
	uint64_t invalid;       /* dropped: malformed, wrong job, source or field */
	uint64_t send_errors;   /* packets the kernel refused (counted as lost) */
	uint32_t srtt_us;       /* smoothed CONTRIB-to-RESULT time; 0: no sample yet */
	uint32_t rttvar_us;
	uint32_t path_srtt_us;     /* smoothed round trip of echoed answers; 0: none */
	uint32_t t1_us;            /* the retransmission timer the next call starts with */
	uint64_t superseded;       /* partial reduce: chunks answered by the RESULT of a
					 * later round (this worker was a straggler) */
	uint32_t latest_round;     /* the latest round of such a RESULT: a straggler
					 * continues after it; 0 until one came */
	uint64_t mcast_sent;       /* MCAST packets sent (gr_mcast_send()) */
	uint64_t mcast_received;   /* MCAST chunks delivered (gr_mcast_recv()) */
	uint64_t mcast_late;       /* MCAST chunks of a round before the one received:
					 * dropped (it came after its call) */
	uint64_t mcast_too_far;    /* MCAST chunks of a round more than
					 * mcast_rounds_ahead after the one received: dropped */
	uint64_t mcast_skipped;    /* MCAST chunks kept for a round ahead and discarded
					 * undelivered: a call of another round left that round
					 * outside the window (the caller skipped it), or a
					 * reconfiguration reset the rounds kept */
	uint64_t cancels;          /* gr_allreduce() calls that returned -ECANCELED
					 * (gr_options.cancel) */
	uint64_t mcast_nacks_sent; /* NACK_MCAST packets sent (gr_mcast_recv(): chunks
					 * missing) */
	uint64_t mcast_repaired;   /* MCAST chunks delivered from a repair (RETX) */
	uint64_t kept_answers;     /* RESULTs of a past round sent back, from the copies
					 * kept, to a gateway that asked (a NACK_RESULT: peers
					 * lost them in a failover) */
	uint64_t kept_misses;      /* ... chunks asked for whose copy is of another
					 * round, or not kept (forget_results) */
	uint64_t held_asked;       /* chunks whose timer expired with no sign of loss and
					 * that were asked for (NACK_RESULT) instead of resent:
					 * the gateway ACKs those it holds */
	uint64_t retx_fast;        /* CONTRIBs resent because one sent after them had its
					 * result (fast retransmit; the rest of contribs_retx
					 * are timeouts) */
	uint64_t asks_unanswered;  /* ... resent because the gateway answered no question
					 * (held_asked) within the ask timer: lost, or a
					 * gateway before PROTOCOL.md revision 1.4 */
	/* Per tree, in the order of gr_client_config()'s trees (sorted by chunk_first), its
	 * first n_trees entries: the window the next call with gr_options.follow_rtt starts
	 * with (chunks in flight), and the least CONTRIB-to-RESULT
	 * time of the tree's first transmissions in the latest call that had one, which
	 * sized it (us; 0: none yet, or since the latest reconfiguration). */
	uint32_t tree_windows[GR_TREES_MAX];
	uint32_t tree_rtt_min_us[GR_TREES_MAX];
};

/** Called by gr_mcast_recv() with each chunk received: count elements of dtype at data
 * (valid during the call only), chunk `chunk` of origin's update of `round`. */
typedef void (*gr_mcast_fn)(void *arg, uint16_t origin, uint32_t round, uint32_t chunk,
			    const void *data, uint32_t count);

/** Options of gr_mcast_recv(). A zeroed struct (or NULL) means every default. */
struct gr_mcast_opts {
	uint32_t timeout_ms; /* stop waiting after this; 0: GR_TIMEOUT_DEFAULT_MS */
	uint8_t *complete;   /* NULL, or n_origins bytes: 1 where every chunk of
				 * origins[i] (the configuration's order) arrived */
};

/**
 * Fill a configuration from a georeduce-table/1 file of this worker's gateway
 * (docs/TABLES.md): the job, epoch, dtype and tensor, the gateway's address and ports, the
 * trees' chunk ranges and slot pools, and this worker's address and port from its entry
 * among the gateway's local workers. A site with several gateways: the table of any of
 * them lists the others with their trees (`shards`), which are added to the trees, each
 * with its gateway in tree_gateways.
 *
 * @param cfg        Written on success.
 * @param path       The table file; "-" reads stdin.
 * @param worker_id  This worker's node id: one of the table's local workers.
 * @param err        One line on failure: the file and field, or why the worker does not fit.
 * @return           0; -EINVAL (bad table, unknown worker, a table without trees), -ENOENT
 *                   or another errno of reading the file, -ENOMEM.
 */
int gr_config_from_table(struct gr_config *cfg, const char *path, uint16_t worker_id, char *err,
			 size_t errlen);

/** gr_config_from_table() of a NUL-terminated JSON document instead of a file. */
int gr_config_from_table_string(struct gr_config *cfg, const char *json, uint16_t worker_id,
				char *err, size_t errlen);

/** Where and as whom a worker joins its job through the control process (gr_join_open()). */
struct gr_join_opts {
	const char *control; /* "tls://HOST:PORT" (its API), or its unix socket path */
	const char *cert;    /* for tls://: this worker's certificate (role worker,
				  * naming "worker-ID"), its key and the deployment's CA */
	const char *key;
	const char *ca;
	const char *server_name; /* the name the control process's certificate carries;
				  * NULL: "control" */
	uint32_t job;
	uint16_t worker_id;
	int timeout_ms;  /* connecting and each answer; 0: GR_JOIN_TIMEOUT_MS */
	const char *crl; /* for tls://: the CA's CRL, or NULL; a revoked control certificate
			  * is refused */
};

/** A connection to the control process for one worker of one job. */
struct gr_join;

#define GR_JOIN_TIMEOUT_MS 10000
/** The longest one gr_join_wait() waits for the control process (longer waits repeat). */
#define GR_JOIN_WAIT_MAX_MS 60000

/**
 * Connect to the control process (TLS 1.3 with the worker's certificate for tls://) and
 * check that it knows this worker in this job: it answers with the worker's table once an
 * epoch is live, which gr_join_config() returns. Links OpenSSL; no other thread is used.
 *
 * @return  The connection (gr_join_close()), or NULL with errno and one line in err:
 *          EPERM (the certificate does not name this worker), ENOENT (the deployment has
 *          no such worker in that job), EPROTO (TLS: a certificate refused), ETIMEDOUT,
 *          EINVAL (options), ... A control process that closed the connection before it
 *          answered (ECONNRESET, EPIPE, ECONNABORTED: it closes a handshake not finished
 *          within its limit, as a worker stopped or starved of CPU leaves it), or that
 *          does not listen yet (ECONNREFUSED: it is starting or restarting), is not a
 *          failure here: gr_join_config() asks again.
 */
struct gr_join *gr_join_open(const struct gr_join_opts *o, char *err, size_t errlen);

/**
 * The configuration of the job's live epoch at this worker's gateway, waiting up to
 * wait_ms for one if none is live yet.
 *
 * @return  0 with cfg filled; -ETIMEDOUT (no live epoch in time), or another negative
 *          errno with err filled (after a broken connection the next call reconnects).
 *          While no replica of a replicated control process leads (each refuses with
 *          EAGAIN), while the control process closes the connection before it answers
 *          (ECONNRESET, EPIPE, ECONNABORTED), or while nothing listens at its address
 *          (ECONNREFUSED), it asks again every 200 ms until wait_ms, then returns that
 *          error, err ending "(asked for WAIT_MS ms)".
 */
int gr_join_config(struct gr_join *j, struct gr_config *cfg, int wait_ms, char *err, size_t errlen);

/**
 * Wait up to wait_ms (a long poll at the control process) for an epoch other than
 * `epoch`: the re-plan after a failure reaches the worker this way, without any file.
 *
 * @return  1 with cfg filled for the new epoch; 0 if none came within wait_ms; or a
 *          negative errno with err filled.
 */
int gr_join_wait(struct gr_join *j, uint32_t epoch, int wait_ms, struct gr_config *cfg, char *err,
		 size_t errlen);

/**
 * Read the certificate, key, CA and CRL files of j again (a certificate renewed, a CRL
 * updated), for the next connection to the control process; the open connection keeps
 * its session until it closes. On failure the files loaded before stay in use. Call it
 * from the thread that uses j (a program's SIGHUP handler only sets a flag); with a unix
 * socket it does nothing.
 *
 * @return  0 with one line on the new certificate in err, or -EINVAL with one line
 *          naming the file at fault.
 */
int gr_join_reload_tls(struct gr_join *j, char *err, size_t errlen);

/** Close the connection and free j. NULL is a no-op. */
void gr_join_close(struct gr_join *j);

/** How often a worker that joined an elastic job renews its membership (gr_join_renew());
 * its long polls (gr_join_wait()) wait no longer than this, so that they renew it too. */
#define GR_JOIN_RENEW_MS 1000

/**
 * Join an elastic job (docs/CONTROL.md, "Elastic membership") without being declared in
 * it: as o's worker_id, or with 0 as the id the control process gives, at site `node` (a
 * topology node id), reached at ipv4:port. The certificate (role worker) names
 * "site-NODE". Then as gr_join_open(): gr_join_config() waits for the first epoch with
 * this worker (planned within the control process's batch window).
 *
 * @return  The connection, with the worker id in *worker_id; or NULL with errno and one
 *          line in err naming the field: EPERM (not elastic, or the certificate does not
 *          name the site), ENOENT (no such job), EEXIST (the id or the address is another
 *          worker's), ENOSPC (max_workers reached), EINVAL, ...
 */
struct gr_join *gr_join_elastic(const struct gr_join_opts *o, const char *node, const char *ipv4,
				uint16_t port, uint16_t *worker_id, char *err, size_t errlen);

/**
 * Renew the membership of a worker that joined with gr_join_elastic(): a `heartbeat` once
 * GR_JOIN_RENEW_MS have passed since j last asked the control process (else nothing). Call
 * it often (between rounds, from gr_options.cancel during one); a worker not heard from
 * for the control process's member timeout is removed from the job.
 *
 * @return  0, or a negative errno with err filled (ENOENT: the worker was removed).
 */
int gr_join_renew(struct gr_join *j, char *err, size_t errlen);

/** Leave the elastic job j joined; the next epoch is planned without this worker. 0, or a
 * negative errno with err filled. */
int gr_join_leave(struct gr_join *j, char *err, size_t errlen);

/**
 * Where and as whom a launcher reaches the control process to create, change and delete
 * jobs (gr_job_create(); docs/CONTROL.md, "Jobs through the API").
 */
struct gr_control_opts {
	const char *control; /* "tls://HOST:PORT" (its API), or its unix socket path */
	const char *cert;    /* for tls://: a certificate of role control (naming the
				  * launcher's tenant, if any), its key and the CA */
	const char *key;
	const char *ca;
	const char *server_name; /* the name the control process's certificate carries;
				  * NULL: "control" */
	int timeout_ms;          /* connecting and the answer; 0: GR_JOIN_TIMEOUT_MS */
	const char *crl;         /* for tls://: the CA's CRL (a revoked control certificate is
				  * refused); NULL: none */
};

/**
 * Create a job (`job_create`): job is a JSON job object as an item of the deployment
 * file's "jobs" (docs/DEPLOYMENT.md); without an "id", the control process gives one. Its
 * first epoch is then planned and installed; workers join it with gr_join_open().
 *
 * @param id   Receives the job's id.
 * @return     0, or a negative errno with the control process's one line in err: -EINVAL
 *             (a field, named), -EDQUOT (a tenant's quota), -EEXIST, -EPERM, -ENOSPC,
 *             -ECONNREFUSED, -ETIMEDOUT, -EPROTO (TLS), ...
 */
int gr_job_create(const struct gr_control_opts *o, const char *job, uint32_t *id, char *err,
		  size_t errlen);

/** Change job id (`job_update`): changes a JSON object of algorithm, options, weight or
 * grace_ms; a new epoch is planned. 0 or a negative errno with err filled. */
int gr_job_update(const struct gr_control_opts *o, uint32_t id, const char *changes, char *err,
		  size_t errlen);

/** Delete job id (`job_delete`): removed from every gateway, its workers told. 0 or a
 * negative errno with err filled (-ENOENT: no such job this certificate sees). */
int gr_job_delete(const struct gr_control_opts *o, uint32_t id, char *err, size_t errlen);

/**
 * Check a configuration: ids, addresses, ports, dtype and chunk size in range, tree ids
 * unique and the ranges a partition of the tensor's chunks, the trees' gateways valid and
 * at most GR_GATEWAYS_MAX.
 *
 * @return  0, or -EINVAL with one line in err naming the field.
 */
int gr_config_check(const struct gr_config *cfg, char *err, size_t errlen);

/**
 * Create a client: check the configuration, open and bind its UDP socket to
 * worker_ipv4:worker_port and allocate everything gr_allreduce() and gr_mcast_recv() need:
 * one state record per chunk, the batch buffers and, with origins, what gr_mcast_recv()
 * keeps: A = mcast_rounds_ahead (or its default) rounds of A x n_origins x elements x
 * gr_dtype_size(dtype) bytes for the chunks of rounds ahead, and (A + 1) x n_origins x
 * (ceil(C / 8) + 4) bytes of bitmaps and counts (C chunks). No allocation happens per
 * packet or per call.
 *
 * @return  The client, or NULL with errno (EINVAL: bad configuration; EADDRINUSE,
 *          EADDRNOTAVAIL, ...: the socket; ENOMEM) and one line in err.
 */
struct gr_client *gr_client_create(const struct gr_config *cfg, char *err, size_t errlen);

/**
 * Move a client to a new epoch between calls (a failover installed a new table): same job
 * and worker id, an epoch after the current one (serial arithmetic); anything else may
 * change. The socket is reopened if the worker's address or port changed, the round-trip
 * estimates reset if the gateway did. The multicast chunks kept for rounds ahead are
 * discarded (gr_stats.mcast_skipped). On failure the client keeps its configuration.
 *
 * @return  0, or a negative errno with one line in err.
 */
int
gr_client_reconfigure(struct gr_client *c, const struct gr_config *cfg, char *err, size_t errlen);

/** Close the socket and free the client. NULL is a no-op. */
void gr_client_free(struct gr_client *c);

/** The client's current configuration (valid until the next reconfiguration). */
const struct gr_config *gr_client_config(const struct gr_client *c);

/**
 * AllReduce (sum) buf in place with every worker of the job.
 *
 * Sends one CONTRIB per chunk, at most a window of them unanswered; writes each RESULT
 * into its chunk of buf as it arrives, ignoring duplicates and packets of other rounds or
 * epochs; retransmits by docs/PROTOCOL.md section 10 (a CONTRIB without its RESULT after
 * the timer T1 is sent again with RETX, together with a NACK_RESULT for the chunk; an ACK
 * stops payload retransmission and arms T2, on whose expiry a NACK_RESULT asks for the
 * result). The timers follow measured round trips (docs/CLIENT.md).
 *
 * @param buf       elements little-endian values of dtype (fp32 for the MX dtypes): this
 *                  worker's contribution on entry, the sum (or the average, with
 *                  opt->average) on success. On
 *                  failure each chunk holds either its input or its result.
 * @param elements  1 .. the configuration's elements. A shorter tensor (every worker's the
 *                  same length in a round) takes the first chunks of every tree, each tree
 *                  as many as its share of the job's chunks, so that all trees carry it;
 *                  its last chunk is padded with zeros on the wire, and nothing past
 *                  buf[elements] is read or written. Contributor sets (opt->csets) stay
 *                  indexed by the job's chunks. docs/CLIENT.md, "One call".
 * @param dtype     Must equal the configuration's dtype.
 * @param round     The AllReduce round: every worker of the job uses the same number for
 *                  the same tensor, and a later number for the next one.
 * @param opt       NULL or options (zeroed fields take their defaults).
 * Partial reduce (a job with contributor sets whose gateways complete a chunk at p of n
 * workers): a result may leave this worker out (it came late: its contribution is dropped,
 * the result is still delivered); opt->csets says who is in each chunk. A worker more than
 * a round behind gets, for a chunk, the RESULT of the later round its group has reached:
 * it is written in place like any other, counted in gr_stats.superseded, and
 * gr_stats.latest_round says which round to continue after.
 *
 * @return          The number of workers summed (the results' contributor count; if the
 *                  chunks' counts differ, the smallest, and opt->average divides each chunk
 *                  by its own); -EINVAL for arguments that do not match the configuration
 *                  (another dtype, 0 elements or more than the job's);
 *                  -ETIMEDOUT if a result is still missing after the timeout; -ECANCELED
 *                  if opt->cancel asked to stop (resumable, as a timeout); -EMSGSIZE if
 *                  a packet exceeds the path MTU; another negative errno of the socket.
 *                  gr_client_error() then says why. The client stays usable.
 */
int gr_allreduce(struct gr_client *c, void *buf, size_t elements, enum gr_dtype dtype,
		 uint32_t round, const struct gr_options *opt);

/**
 * Selective multicast: send this worker's update of `round` to the receivers its job's
 * plan selected, one MCAST per chunk to its gateway, which replicates it (docs/PROTOCOL.md
 * section 5). Nothing is acknowledged, and nothing is sent again: the gateways retain
 * what they forwarded and answer the receivers' NACK_MCASTs from it. Paced at
 * opt->rate_gbps, or the configuration's mcast_rate_gbps (this worker's share of its
 * stream's planned rate), so that the gateway's pacer queue is not overrun; unpaced if both
 * are 0. Of opt only rate_gbps is used.
 *
 * @return  The number of chunks sent; -EINVAL (arguments, or no stream carries this
 *          worker's updates: mcast_send false), -EMSGSIZE or another errno of the socket.
 */
int gr_mcast_send(struct gr_client *c, const void *buf, size_t elements, enum gr_dtype dtype,
		  uint32_t round, const struct gr_options *opt);

/**
 * Receive the updates of `round` that the gateway delivers to this worker: fn is called
 * once per (origin, chunk) of `round` and of no other round, until every chunk of every
 * expected origin (the configuration's origins) has arrived or the timeout passes. First
 * come the chunks of `round` that an earlier call kept (origin by origin in the
 * configuration's order, each in ascending chunk order), then those that arrive, in
 * arrival order. Chunks of the rounds after `round`, up to mcast_rounds_ahead of them, are
 * kept for their own calls; a call discards what was kept for a round outside its window,
 * as a round it passed over (gr_stats.mcast_skipped). Dropped and counted: duplicates (also of a kept
 * chunk), chunks of an earlier round (mcast_late) or of a round beyond those kept
 * (mcast_too_far), packets of another epoch (stale), anything malformed or from elsewhere
 * (invalid). PROBEs are answered. Chunks of `round` found missing (behind a later chunk of
 * their origin, or an origin's last ones once it has gone silent) are asked of the gateway
 * with NACK_MCAST, each a few times with backoff (gr_stats.mcast_nacks_sent); a repair is
 * delivered like any chunk (gr_stats.mcast_repaired). A worker then averages over the
 * origins it got.
 *
 * @return  The number of origins complete (0 .. n_origins; fewer after a timeout, with
 *          gr_client_error() saying how many chunks were missing); -EINVAL (arguments, no
 *          origin configured) or another errno of the socket.
 */
int gr_mcast_recv(struct gr_client *c, uint32_t round, gr_mcast_fn fn, void *arg,
		  const struct gr_mcast_opts *o);

/** One line about the last failed call ("" if none). Valid until the next call. */
const char *gr_client_error(const struct gr_client *c);

/** Copy the client's counters and timer estimates into out. */
void gr_client_stats(const struct gr_client *c, struct gr_stats *out);

/** Bytes per element of the caller's buffer for a dtype: 4, 2, 2, and 4 for the MX dtypes
 * (fp32 in and out); 0 for a value that is no dtype. */
size_t gr_dtype_size(enum gr_dtype dtype);

/** "fp32", "fp16", "bf16", "mxint8", "mxfp8", "mxfp4", or NULL for a value that is no
 * dtype. */
const char *gr_dtype_name(enum gr_dtype dtype);

/**
 * Round `elements` fp32 values in place to what a contribution of dtype carries, as this library
 * encodes it: fp32 unchanged; fp16 and bf16 rounded to nearest even; an MX dtype encoded
 * and decoded by blocks of 32 from buf[0] (the wire's blocks of a tensor, since chunks are
 * whole blocks), a last partial block padded with zeros. buf - round(buf) is the error a
 * worker's contribution takes on when it is sent (error feedback). Any thread, no client.
 * @return 0, or -EINVAL (no dtype, or buf NULL with elements > 0).
 */
int gr_dtype_round(enum gr_dtype dtype, float *buf, size_t elements);

#ifdef __cplusplus
}
#endif

#endif
