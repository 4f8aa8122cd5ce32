/* SPDX-License-Identifier: BSD-3-Clause
 *
 * Slow path: the cryptodev of protected links (docs/PROTOCOL.md section 14). The control
 * thread creates the device, its queue pairs (one per worker lcore), the pools and, per
 * installed table, two sessions (seal and open) per protected link. Workers seal and open
 * by CPU crypto where the device offers it (and --crypto-ops is not given), else enqueue
 * and dequeue operations on their own queue pair (fastpath/seal.c).
 *
 * Key bytes are copied into the session transform on the stack and wiped after it; they
 * are never logged.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <rte_bus_vdev.h>
#include <rte_crypto.h>
#include <rte_cryptodev.h>
#include <rte_lcore.h>
#include <rte_malloc.h>

#include "dp.h"
#include "jsonutil.h"
#include "slowpath/slowpath.h"

/* Operations a worker lcore may have out at once: its two rings (dp.h). */
#define OPS_PER_LCORE (2 * DP_CRYPTO_RING)
#define OP_CACHE 32

/* Whether the device seals AES-GCM with keys of `bytes`, a 12-byte IV, a 32-byte AAD and a
 * 16-byte tag. */
static bool
has_gcm(uint8_t dev, uint16_t bytes)
{
	struct rte_cryptodev_sym_capability_idx idx = {
		.type = RTE_CRYPTO_SYM_XFORM_AEAD,
		.algo.aead = RTE_CRYPTO_AEAD_AES_GCM,
	};
	const struct rte_cryptodev_symmetric_capability *cap =
		rte_cryptodev_sym_capability_get(dev, &idx);

	return cap != NULL &&
	       rte_cryptodev_sym_capability_check_aead(cap, bytes, DP_SEAL_TAG_LEN, DP_SEAL_HDR_LEN,
						       DP_SEAL_IV_LEN) == 0;
}

/* A session of key sl for op (seal: encrypt, open: decrypt), or NULL. */
static void *session(struct dp *dp, const struct table_seal *sl, enum rte_crypto_aead_operation op);

/*
 * Whether the started device seals by CPU crypto: it says so (RTE_CRYPTODEV_FF_SYM_CPU_CRYPTO)
 * and seals 16 bytes that way with a throwaway key. A scheduler reports the flag of its
 * workers but hands CPU crypto to none of them.
 */
static bool
cpu_crypto_works(struct dp *dp)
{
	struct table_seal sl = {.aead = TABLE_AEAD_AES128_GCM};
	uint8_t buf[16 + DP_SEAL_TAG_LEN] = {0}, aad[DP_SEAL_HDR_LEN] = {0}, iv[16] = {0};
	struct rte_crypto_vec seg = {.base = buf, .len = 16};
	struct rte_crypto_sgl sgl = {.vec = &seg, .num = 1};
	struct rte_crypto_va_iova_ptr ivp = {.va = iv}, aadp = {.va = aad}, dig = {.va = buf + 16};
	int32_t status = -1;
	struct rte_crypto_sym_vec v = {.num = 1,
				       .src_sgl = &sgl,
				       .iv = &ivp,
				       .digest = &dig,
				       .aad = &aadp,
				       .status = &status};
	void *sess = session(dp, &sl, RTE_CRYPTO_AEAD_OP_ENCRYPT);
	uint32_t done;

	if (sess == NULL)
		return false;
	done = rte_cryptodev_sym_cpu_crypto_process(dp->crypto.dev_id, sess,
						    (union rte_crypto_sym_ofs){.raw = 0}, &v);
	rte_cryptodev_sym_session_free(dp->crypto.dev_id, sess);
	return done == 1 && status == 0;
}

int
dp_crypto_setup(struct dp *dp, const struct dp_config *cfg, char *err, size_t errlen)
{
	struct dp_crypto *c = &dp->crypto;
	int socket = (int)rte_lcore_to_socket_id(dp->lcores[0]->lcore_id);
	char name[64];
	int id;

	if (cfg->crypto_dev[0] == '\0')
		return 0;
	snprintf(c->name, sizeof(c->name), "%s", cfg->crypto_dev);
	id = rte_cryptodev_get_dev_id(c->name);
	if (id < 0) {
		char args[64];

		snprintf(args, sizeof(args), "max_nb_queue_pairs=%u,socket_id=%d", dp->n_lcores,
			 socket);
		if (rte_vdev_init(c->name, args) != 0)
			return json_util_fail(err, errlen,
					      "--crypto: cannot create the vdev "
					      "(crypto_aesni_gcm0 or crypto_aesni_mb0 of "
					      "librte-crypto-ipsec-mb, or a device probed by EAL)");
		c->created = true;
		id = rte_cryptodev_get_dev_id(c->name);
		if (id < 0)
			return json_util_fail(err, errlen, "--crypto: the vdev made no cryptodev");
	}
	c->dev_id = (uint8_t)id;
	{
		struct rte_cryptodev_info info;

		rte_cryptodev_info_get(c->dev_id, &info);
		c->driver = info.driver_name;
		c->oop_lb = info.feature_flags & RTE_CRYPTODEV_FF_OOP_LB_IN_LB_OUT;
		c->oop_sgl = info.feature_flags & RTE_CRYPTODEV_FF_OOP_SGL_IN_LB_OUT;
		c->cpu = !cfg->crypto_ops && (info.feature_flags & RTE_CRYPTODEV_FF_SYM_CPU_CRYPTO);
		if (info.max_nb_queue_pairs < dp->n_lcores) {
			return json_util_fail(err, errlen,
					      "--crypto: %s has %u queue pairs, %u "
					      "worker lcores need one each",
					      c->name, info.max_nb_queue_pairs, dp->n_lcores);
		}
	}
	if (!has_gcm(c->dev_id, 16) || !has_gcm(c->dev_id, 32)) {
		return json_util_fail(err, errlen,
				      "--crypto: %s does not do AES-128-GCM and "
				      "AES-256-GCM with a 12-byte IV, 32-byte AAD and 16-byte tag",
				      c->name);
	}
	struct rte_cryptodev_config conf = {
		.socket_id = socket,
		.nb_queue_pairs = (uint16_t)dp->n_lcores,
		.ff_disable = RTE_CRYPTODEV_FF_ASYMMETRIC_CRYPTO | RTE_CRYPTODEV_FF_SECURITY,
	};

	if (rte_cryptodev_configure(c->dev_id, &conf) != 0)
		return json_util_fail(err, errlen, "--crypto: cannot configure the cryptodev");
	c->sessions_max = 2 * cfg->seal_links;
	snprintf(name, sizeof(name), "gr%u_sess", (unsigned int)c->dev_id);
	rte_mempool_free(rte_mempool_lookup(name)); /* a previous setup's, in tests */
	c->sess_pool = rte_cryptodev_sym_session_pool_create(
		name, c->sessions_max + 1, rte_cryptodev_sym_get_private_session_size(c->dev_id), 0,
		0, socket);
	snprintf(name, sizeof(name), "gr%u_cop", (unsigned int)c->dev_id);
	rte_mempool_free(rte_mempool_lookup(name));
	/* Each lcore's rings, and what the lcores' pool caches may keep besides. */
	c->op_pool = rte_crypto_op_pool_create(name, RTE_CRYPTO_OP_TYPE_SYMMETRIC,
					       dp->n_lcores * (OPS_PER_LCORE + OP_CACHE * 3 / 2),
					       OP_CACHE, DP_SEAL_IV_LEN + 4, socket);
	snprintf(name, sizeof(name), "gr%u_seal", (unsigned int)c->dev_id);
	rte_mempool_free(rte_mempool_lookup(name));
	c->seal_pool = rte_pktmbuf_pool_create(
		name, cfg->seal_mbufs, 256, 0,
		(uint16_t)(RTE_PKTMBUF_HEADROOM + WIRE_ETH_LEN + cfg->prm.mtu + DP_SEAL_OVERHEAD),
		socket);
	if (c->sess_pool == NULL || c->op_pool == NULL || c->seal_pool == NULL) {
		json_util_fail(err, errlen,
			       "--crypto: cannot create the session, operation or "
			       "sealed-frame pools (raise -m)");
		return -ENOMEM;
	}
	struct rte_mempool *pools[3] = {c->sess_pool, c->op_pool, c->seal_pool};

	for (int k = 0; k < 3; k++)
		c->bytes += (uint64_t)pools[k]->size *
			    (pools[k]->elt_size + pools[k]->header_size + pools[k]->trailer_size);
	for (unsigned int l = 0; l < dp->n_lcores; l++) {
		struct rte_cryptodev_qp_conf qp = {
			.nb_descriptors = OPS_PER_LCORE,
			.mp_session = c->sess_pool,
		};

		if (rte_cryptodev_queue_pair_setup(
			    c->dev_id, (uint16_t)l, &qp,
			    (int)rte_lcore_to_socket_id(dp->lcores[l]->lcore_id)) != 0)
			return json_util_fail(err, errlen, "--crypto: cannot set up a queue pair");
		dp->lcores[l]->op_pool = c->op_pool;
		dp->lcores[l]->seal_pool = c->seal_pool;
	}
	if (rte_cryptodev_start(c->dev_id) != 0)
		return json_util_fail(err, errlen, "--crypto: cannot start the cryptodev");
	c->on = true;
	c->cpu = c->cpu && cpu_crypto_works(dp);
	DP_LOG(INFO, "protected links through %s (%s, %s), %u queue pairs\n", c->name, c->driver,
	       c->cpu ? "CPU crypto" : "operations", dp->n_lcores);
	return 0;
}

void
dp_crypto_teardown(struct dp *dp)
{
	struct dp_crypto *c = &dp->crypto;

	if (c->name[0] == '\0')
		return;
	if (c->on)
		rte_cryptodev_stop(c->dev_id);
	rte_mempool_free(c->seal_pool);
	rte_mempool_free(c->op_pool);
	rte_mempool_free(c->sess_pool);
	if (c->created) {
		rte_cryptodev_close(c->dev_id);
		rte_vdev_uninit(c->name);
	}
	memset(c, 0, sizeof(*c));
}

static void *
session(struct dp *dp, const struct table_seal *sl, enum rte_crypto_aead_operation op)
{
	uint8_t key[TABLE_KEY_MAX];
	struct rte_crypto_sym_xform x = {
		.type = RTE_CRYPTO_SYM_XFORM_AEAD,
		.aead =
			{
				.op = op,
				.algo = RTE_CRYPTO_AEAD_AES_GCM,
				.key = {.data = key,
					.length = (uint16_t)table_aead_key_len(sl->aead)},
				.iv = {.offset = sizeof(struct rte_crypto_op) +
						 sizeof(struct rte_crypto_sym_op),
				       .length = DP_SEAL_IV_LEN},
				.digest_length = DP_SEAL_TAG_LEN,
				.aad_length = DP_SEAL_HDR_LEN,
			},
	};
	void *s;

	memcpy(key, sl->key, sizeof(key));
	s = rte_cryptodev_sym_session_create(dp->crypto.dev_id, &x, dp->crypto.sess_pool);
	explicit_bzero(key, sizeof(key));
	return s;
}

int
dp_job_seals_create(struct dp *dp, struct dp_job *j, int socket, char *err, size_t errlen)
{
	const struct table *tb = j->tb;

	if (tb->n_seals == 0)
		return 0;
	if (!dp->crypto.on) {
		snprintf(err, errlen,
			 "field 'sealed': this dataplane has no cryptodev (--crypto) "
			 "for protected links");
		errno = EINVAL;
		return -1;
	}
	if (dp->crypto.sessions_used + 2 * (uint32_t)tb->n_seals > dp->crypto.sessions_max) {
		snprintf(err, errlen,
			 "field 'sealed': %d protected links need %d sessions, %u of "
			 "%u are free (raise --seal-links)",
			 tb->n_seals, 2 * tb->n_seals,
			 dp->crypto.sessions_max - dp->crypto.sessions_used,
			 dp->crypto.sessions_max);
		errno = E2BIG;
		return -1;
	}
	j->seals = rte_zmalloc_socket("georeduce-seal", sizeof(*j->seals) * (size_t)tb->n_seals,
				      RTE_CACHE_LINE_SIZE, socket);
	if (j->seals == NULL)
		goto nomem;
	j->n_seals = tb->n_seals;
	for (int i = 0; i < tb->n_seals; i++) {
		const struct table_seal *sl = &tb->seals[i];
		struct dp_seal *s = &j->seals[i];
		size_t rx = sizeof(*s->rx) * j->n_lcores * DP_SEAL_LANES;

		s->peer = sl->peer;
		s->key_id = sl->key_id;
		s->aead = (uint8_t)sl->aead;
		s->tx_seq = rte_zmalloc_socket("georeduce-seal", sizeof(*s->tx_seq) * j->n_lcores,
					       RTE_CACHE_LINE_SIZE, socket);
		s->rx = rte_zmalloc_socket("georeduce-seal", rx, RTE_CACHE_LINE_SIZE, socket);
		if (s->tx_seq == NULL || s->rx == NULL)
			goto nomem;
		j->bytes += sizeof(*s->tx_seq) * j->n_lcores + rx;
		s->enc = session(dp, sl, RTE_CRYPTO_AEAD_OP_ENCRYPT);
		s->dec = session(dp, sl, RTE_CRYPTO_AEAD_OP_DECRYPT);
		dp->crypto.sessions_used += (s->enc != NULL) + (s->dec != NULL);
		if (s->enc == NULL || s->dec == NULL) {
			snprintf(err, errlen,
				 "field 'sealed[%d]': the cryptodev refused the "
				 "session",
				 i);
			errno = EINVAL;
			return -1;
		}
	}
	j->bytes += sizeof(*j->seals) * (size_t)tb->n_seals;
	return 0;
nomem:
	snprintf(err, errlen, "out of memory for protected links");
	errno = ENOMEM;
	return -1;
}

void
dp_job_seals_free(struct dp *dp, struct dp_job *j)
{
	for (int i = 0; j->seals != NULL && i < j->n_seals; i++) {
		struct dp_seal *s = &j->seals[i];

		if (s->enc != NULL) {
			rte_cryptodev_sym_session_free(dp->crypto.dev_id, s->enc);
			dp->crypto.sessions_used--;
		}
		if (s->dec != NULL) {
			rte_cryptodev_sym_session_free(dp->crypto.dev_id, s->dec);
			dp->crypto.sessions_used--;
		}
		rte_free(s->tx_seq);
		rte_free(s->rx);
	}
	rte_free(j->seals);
	j->seals = NULL;
	j->n_seals = 0;
}

const struct dp_seal *
dp_job_seal(const struct dp_job *j, uint16_t peer)
{
	for (int i = 0; i < j->n_seals; i++)
		if (j->seals[i].peer == peer)
			return &j->seals[i];
	return NULL;
}
