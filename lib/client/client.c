/* SPDX-License-Identifier: BSD-3-Clause
 *
 * libgeoreduce: a client's life (georeduce.h). gr_client_create() and
 * gr_client_reconfigure() check a configuration and allocate all it needs before anything
 * of the client changes (prepare()), then move it in (install()): the chunk records, the
 * loss references, the multicast window and recovery records, the MX encode buffer, the
 * results kept and the socket (sock.c). Also gr_client_free(), the client's error line
 * (client_fail()) and its counters (gr_client_stats()). Runs in the caller's thread; the
 * calls (allreduce.c, mcast.c, mcast_recv.c) allocate nothing of their own.
 */
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "client_internal.h"
#include "georeduce.h"
#include "jsonutil.h"
#include "sum.h"
#include "wire.h"

/* What a configuration needs, built by prepare() before anything of the client changes,
 * then moved into it by install(). */
struct prepared {
	struct gr_config cfg;                /* trees sorted by chunk_first */
	struct gr_gateway tgw[GR_TREES_MAX]; /* struct gr_client */
	unsigned int n_gws;
	struct gr_gateway gws[GR_GATEWAYS_MAX];
	struct chunk *ch;  /* n_chunks */
	struct rack *rack; /* struct gr_client */
	uint32_t rack_off[GR_TREES_MAX];
	uint32_t n_chunks;
	int fd;
	/* gr_mcast_recv()'s window (struct gr_client); all NULL without origins. */
	uint8_t *mbits;
	size_t mbits_stride;
	uint32_t *mgot;
	struct mslot *mslot;
	uint8_t *mdata;
	size_t mtensor;
	uint32_t mahead;
	struct mmiss *mmiss;
	struct morigin *morig;
	uint8_t *mxbuf;    /* MX jobs: the encoded tensor; NULL otherwise */
	struct kept *kept; /* results kept; NULL: none, or (keep_old) the */
	uint8_t *kbuf;     /* client's own go on */
	size_t kstride;
	bool keep_old;
};

static void
prepared_free(struct prepared *p)
{
	free(p->ch);
	free(p->rack);
	free(p->mbits);
	free(p->mgot);
	free(p->mslot);
	free(p->mdata);
	free(p->mmiss);
	free(p->morig);
	free(p->mxbuf);
	free(p->kept);
	free(p->kbuf);
	p->kept = NULL;
	p->kbuf = NULL;
	p->mmiss = NULL;
	p->morig = NULL;
	p->ch = NULL;
	p->rack = NULL;
	p->mbits = NULL;
	p->mgot = NULL;
	p->mslot = NULL;
	p->mdata = NULL;
	p->mxbuf = NULL;
}

/* Allocate gr_mcast_recv()'s bitmaps, counts and window into p (cfg has origins). */
static int
prepare_mcast(const struct gr_config *cfg, struct prepared *p, char *err, size_t errlen)
{
	uint32_t ahead = cfg->mcast_rounds_ahead ? cfg->mcast_rounds_ahead : GR_MCAST_AHEAD_DEFAULT;
	size_t sets = (size_t)(1 + ahead) * cfg->n_origins, tensor, data;

	if (__builtin_mul_overflow(cfg->elements, gr_dtype_size(cfg->dtype), &tensor) ||
	    __builtin_mul_overflow(tensor, (size_t)ahead * cfg->n_origins, &data)) {
		(void)json_util_fail(err, errlen,
				     "%u rounds ahead of %u origins of %llu "
				     "elements: more bytes than memory has",
				     ahead, cfg->n_origins, (unsigned long long)cfg->elements);
		return -ENOMEM;
	}
	p->mahead = ahead;
	p->mtensor = tensor;
	p->mbits_stride = ((size_t)p->n_chunks + 7) / 8;
	p->mbits = calloc(sets, p->mbits_stride);
	p->mgot = calloc(sets, sizeof(*p->mgot));
	p->mslot = calloc(ahead, sizeof(*p->mslot));
	p->mdata = malloc(data);
	p->mmiss = calloc((size_t)cfg->n_origins * p->n_chunks, sizeof(*p->mmiss));
	p->morig = calloc(cfg->n_origins, sizeof(*p->morig));
	if (p->mbits == NULL || p->mgot == NULL || p->mslot == NULL || p->mdata == NULL ||
	    p->mmiss == NULL || p->morig == NULL) {
		(void)json_util_fail(err, errlen,
				     "out of memory for %u origins of %u chunks and "
				     "%zu bytes for %u rounds ahead (mcast_rounds_ahead)",
				     cfg->n_origins, p->n_chunks, data, ahead);
		return -ENOMEM;
	}
	return 0;
}

/* The CONTRIBs' dtype of a configuration. */
static enum wire_dtype
lan_of(const struct gr_config *cfg)
{
	return (enum wire_dtype)(cfg->lan_dtype != 0 ? cfg->lan_dtype : cfg->dtype);
}

/* MX jobs: bytes of a chunk encoded in mxbuf, in the LAN dtype; 0 for fp32, sent from
 * the caller's buffer. */
static size_t
enc_bytes(const struct gr_config *cfg)
{
	return lan_of(cfg) == WIRE_DTYPE_FP32 ?
		       0 :
		       wire_payload_bytes(lan_of(cfg), cfg->chunk_elements);
}

/* Whether the results old keeps are of the chunks cfg has: same tensor, chunking, dtype
 * and contributor sets (a re-plan that moved trees and gateways, not the chunks). */
static bool
keep_fits(const struct gr_client *old, const struct gr_config *cfg)
{
	return old != NULL && old->kept != NULL && !cfg->forget_results &&
	       old->cfg.elements == cfg->elements &&
	       old->cfg.chunk_elements == cfg->chunk_elements && old->cfg.dtype == cfg->dtype &&
	       old->cfg.cset_blocks == cfg->cset_blocks;
}

/* The results kept that cfg needs into p: old's go on if they fit, else new ones, none
 * with forget_results. */
static int
prepare_keep(const struct gr_config *cfg, const struct gr_client *old, struct prepared *p,
	     char *err, size_t errlen)
{
	p->kstride = (size_t)cfg->cset_blocks * WIRE_CSET_BLOCK +
		     wire_payload_bytes((enum wire_dtype)cfg->dtype, cfg->chunk_elements);
	p->keep_old = keep_fits(old, cfg);
	if (cfg->forget_results || p->keep_old)
		return 0;
	p->kept = calloc(p->n_chunks, sizeof(*p->kept));
	p->kbuf = malloc(p->n_chunks * p->kstride);
	if (p->kept == NULL || p->kbuf == NULL) {
		(void)json_util_fail(err, errlen,
				     "out of memory for a copy of %u results (%zu bytes; "
				     "forget_results saves it)",
				     p->n_chunks, p->n_chunks * p->kstride);
		return -ENOMEM;
	}
	return 0;
}

/* Check cfg and build what it needs into p: a sorted copy, the chunk records, the
 * multicast receive bitmaps and window if it has origins, the results kept (old's, when
 * they fit: a reconfiguration) and (if fd < 0) the socket. fd is the socket to keep, or
 * -1. Nothing of the client changes here. */
static int
prepare(const struct gr_config *cfg, const struct gr_client *old, int fd, struct prepared *p,
	char *err, size_t errlen)
{
	int rc = gr_config_check(cfg, err, errlen);

	memset(p, 0, sizeof(*p));
	p->fd = fd;
	if (rc < 0)
		return rc;
	p->cfg = *cfg;
	client_sort_trees(&p->cfg);
	for (unsigned int i = 0; i < p->cfg.n_trees; i++)
		p->tgw[i] = client_tree_gateway(&p->cfg, i);
	p->n_gws = client_distinct_gateways(&p->cfg, p->gws, GR_GATEWAYS_MAX); /* checked */
	p->n_chunks = (uint32_t)wire_chunk_total(cfg->elements, cfg->chunk_elements);
	p->ch = calloc(p->n_chunks, sizeof(*p->ch));
	if (p->ch == NULL) {
		(void)json_util_fail(err, errlen, "out of memory for %u chunk records",
				     p->n_chunks);
		return -ENOMEM;
	}
	uint32_t n_rack = 0;

	for (unsigned int i = 0; i < p->cfg.n_trees; i++) {
		p->rack_off[i] = n_rack;
		n_rack += p->tgw[i].ports;
	}
	p->rack = calloc(n_rack, sizeof(*p->rack));
	if (p->rack == NULL) {
		prepared_free(p);
		(void)json_util_fail(err, errlen, "out of memory for %u loss references", n_rack);
		return -ENOMEM;
	}
	if (cfg->n_origins > 0) {
		rc = prepare_mcast(cfg, p, err, errlen);
		if (rc < 0) {
			prepared_free(p);
			return rc;
		}
	}
	if (wire_dtype_is_mx((enum wire_dtype)cfg->dtype)) {
		p->mxbuf = malloc(mx_tail_off(enc_bytes(cfg), p->n_chunks) +
				  (size_t)cfg->chunk_elements * sizeof(float));
		if (p->mxbuf == NULL) {
			(void)json_util_fail(err, errlen, "out of memory for %u encoded chunks",
					     p->n_chunks);
			prepared_free(p);
			return -ENOMEM;
		}
	}
	rc = prepare_keep(cfg, old, p, err, errlen);
	if (rc < 0) {
		prepared_free(p);
		return rc;
	}
	if (p->fd < 0) {
		rc = client_open_socket(cfg, &p->fd, err, errlen);
		if (rc < 0) {
			prepared_free(p);
			return rc;
		}
	}
	return 0;
}

/* Replace the client's configuration by p, which it takes over; what the old one kept
 * for multicast rounds ahead is discarded. */
static void
install(struct gr_client *c, struct prepared *p)
{
	for (uint32_t s = 0; s < c->mahead; s++)
		c->st.mcast_skipped += c->mslot[s].held;
	free(c->ch);
	free(c->rack);
	free(c->mbits);
	free(c->mgot);
	free(c->mslot);
	free(c->mdata);
	free(c->mmiss);
	free(c->morig);
	free(c->mxbuf);
	if (!p->keep_old) {
		free(c->kept);
		free(c->kbuf);
		c->kept = p->kept;
		c->kbuf = p->kbuf;
		c->kstride = p->kstride;
	}
	if (c->fd >= 0 && c->fd != p->fd)
		close(c->fd);
	c->cfg = p->cfg;
	memset(c->trtt_min, 0, sizeof(c->trtt_min)); /* other trees, other paths */
	memcpy(c->tgw, p->tgw, sizeof(c->tgw));
	memcpy(c->gws, p->gws, sizeof(c->gws));
	c->n_gws = p->n_gws;
	c->cset_len = p->cfg.cset_blocks * WIRE_CSET_BLOCK;
	memset(c->cset, 0, sizeof(c->cset));
	if (c->cset_len != 0)
		(void)wire_cset_add(c->cset, p->cfg.cset_blocks, p->cfg.worker_id); /* checked */
	c->ch = p->ch;
	c->rack = p->rack;
	memcpy(c->rack_off, p->rack_off, sizeof(c->rack_off));
	c->n_chunks = p->n_chunks;
	c->fd = p->fd;
	c->mbits = p->mbits;
	c->mbits_stride = p->mbits_stride;
	c->mgot = p->mgot;
	c->mslot = p->mslot;
	c->mdata = p->mdata;
	c->mtensor = p->mtensor;
	c->mahead = p->mahead;
	c->mmiss = p->mmiss;
	c->morig = p->morig;
	c->mxbuf = p->mxbuf;
	c->chunk_wire = wire_dtype_is_mx((enum wire_dtype)c->cfg.dtype) ? enc_bytes(&c->cfg) : 0;
	c->lan = lan_of(&c->cfg);
	c->resumable = false;
}

struct gr_client *
gr_client_create(const struct gr_config *cfg, char *err, size_t errlen)
{
	struct gr_client *c = calloc(1, sizeof(*c));
	struct prepared p;
	int rc;

	if (c == NULL || (c->rxbuf = malloc((size_t)RX_BATCH * RX_LEN)) == NULL) {
		(void)json_util_fail(err, errlen, "out of memory for a client");
		rc = -ENOMEM;
		goto fail;
	}
	rc = prepare(cfg, NULL, -1, &p, err, errlen);
	if (rc < 0)
		goto fail;
	c->fd = -1;
	c->k = sum_kernels_select(UINT_MAX); /* bit-identical whichever the CPU has */
	install(c, &p);
	for (unsigned int i = 0; i < RX_BATCH; i++) {
		c->rxiov[i].iov_base = c->rxbuf + (size_t)i * RX_LEN;
		c->rxiov[i].iov_len = RX_LEN;
		c->rxm[i].msg_hdr.msg_iov = &c->rxiov[i];
		c->rxm[i].msg_hdr.msg_iovlen = 1;
		c->rxm[i].msg_hdr.msg_name = &c->rxaddr[i];
	}
	return c;
fail:
	if (c != NULL)
		free(c->rxbuf);
	free(c);
	errno = -rc;
	return NULL;
}

int
gr_client_reconfigure(struct gr_client *c, const struct gr_config *cfg, char *err, size_t errlen)
{
	struct prepared p;
	int fd, rc;

	if (c == NULL || cfg == NULL)
		return json_util_fail(err, errlen, "no client or configuration");
	if (cfg->job != c->cfg.job || cfg->worker_id != c->cfg.worker_id)
		return json_util_fail(err, errlen,
				      "job %u, worker %u: the client is worker %u of job %u",
				      cfg->job, cfg->worker_id, c->cfg.worker_id, c->cfg.job);
	if (!wire_round_before(c->cfg.epoch, cfg->epoch))
		return json_util_fail(err, errlen, "epoch %u: not after the current epoch %u",
				      cfg->epoch, c->cfg.epoch);
	fd = cfg->worker_ipv4 == c->cfg.worker_ipv4 && cfg->worker_port == c->cfg.worker_port ?
		     c->fd :
		     -1;
	rc = prepare(cfg, c, fd, &p, err, errlen);
	if (rc < 0)
		return rc;
	/* Other gateways, other paths: the estimates start again. */
	bool moved = cfg->gateway_ipv4 != c->cfg.gateway_ipv4 || p.n_gws != c->n_gws;

	for (unsigned int i = 0; i < p.n_gws && !moved; i++)
		moved = p.gws[i].ipv4 != c->gws[i].ipv4;
	if (moved) {
		memset(&c->res, 0, sizeof(c->res));
		memset(&c->path, 0, sizeof(c->path));
		memset(&c->mrep, 0, sizeof(c->mrep));
		c->mgap_us = 0;
	}
	install(c, &p);
	return 0;
}

void
gr_client_free(struct gr_client *c)
{
	if (c == NULL)
		return;
	if (c->fd >= 0)
		close(c->fd);
	free(c->ch);
	free(c->rack);
	free(c->rxbuf);
	free(c->mbits);
	free(c->mgot);
	free(c->mslot);
	free(c->mdata);
	free(c->mmiss);
	free(c->morig);
	free(c->mxbuf);
	free(c->kept);
	free(c->kbuf);
	free(c);
}

const struct gr_config *
gr_client_config(const struct gr_client *c)
{
	return c != NULL ? &c->cfg : NULL;
}

const char *
gr_client_error(const struct gr_client *c)
{
	return c != NULL ? c->err : "no client";
}

int
client_fail(struct gr_client *c, int rc, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	(void)json_util_vfail(c->err, sizeof(c->err), fmt, ap);
	va_end(ap);
	return rc;
}

/* A smoothed round trip for gr_stats, where 0 means "no sample yet" (georeduce.h): an
 * estimate that rounds down to 0 us (answers within the microsecond, as on loopback) is
 * reported as 1. */
static uint32_t
srtt_report(const struct rtt *r)
{
	return !r->valid ? 0 : r->srtt > 1 ? (uint32_t)r->srtt : 1;
}

void
gr_client_stats(const struct gr_client *c, struct gr_stats *out)
{
	if (c == NULL || out == NULL)
		return;
	*out = c->st;
	out->srtt_us = srtt_report(&c->res);
	out->rttvar_us = c->res.valid ? (uint32_t)c->res.rttvar : 0;
	out->path_srtt_us = srtt_report(&c->path);
	out->t1_us = (uint32_t)t1_base(c, GR_RTO_MIN_DEFAULT_MS * 1000ull,
				       GR_RTO_MAX_DEFAULT_MS * 1000ull,
				       GR_RTO_INITIAL_DEFAULT_MS * 1000ull);
	for (unsigned int t = 0; t < c->cfg.n_trees; t++) {
		out->tree_windows[t] = client_tree_window(c, t);
		out->tree_rtt_min_us[t] = c->trtt_min[t];
	}
}
