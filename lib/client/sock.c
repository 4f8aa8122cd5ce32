/* SPDX-License-Identifier: BSD-3-Clause
 *
 * libgeoreduce: the client's UDP socket. Opening it (bound to the worker's address, DF on
 * every packet), the transmit batch (client_tx_add() queues a packet, client_tx_flush()
 * sends the batch with one sendmmsg()), the receive batch (client_rx_read(): one
 * recvmmsg(), each datagram handed to an AllReduce or a multicast call), the wait for a
 * packet or a time (ppoll()) and the answer to a PROBE. Runs in the caller's thread, on
 * the per-datagram path of every call: nothing is allocated, and a payload goes out
 * straight from the caller's buffer (an iovec behind the header).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "client_internal.h"
#include "clock.h"
#include "jsonutil.h"
#include "table.h"
#include "wire.h"

#define SOCK_BUF_BYTES (8 << 20) /* asked for; the kernel may cap it */

int
client_open_socket(const struct gr_config *cfg, int *out, char *err, size_t errlen)
{
	struct sockaddr_in a = {
		.sin_family = AF_INET,
		.sin_port = htons(cfg->worker_port),
		.sin_addr.s_addr = htonl(cfg->worker_ipv4),
	};
	int buf = SOCK_BUF_BYTES, pmtu = IP_PMTUDISC_DO;
	char ip[16];
	int fd, rc;

	fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		rc = -errno;
		(void)json_util_fail(err, errlen, "socket: %s", strerror(-rc));
		return rc;
	}
	/* Larger buffers absorb a window of results; the kernel caps what it grants. DF on
	 * every packet: georeduce packets are never fragmented (PROTOCOL.md section 2). */
	(void)setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &buf, sizeof(buf));
	(void)setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &buf, sizeof(buf));
	if (setsockopt(fd, IPPROTO_IP, IP_MTU_DISCOVER, &pmtu, sizeof(pmtu)) < 0 ||
	    bind(fd, (const struct sockaddr *)&a, sizeof(a)) < 0) {
		rc = -errno;
		(void)json_util_fail(err, errlen, "bind %s:%u: %s",
				     table_ipv4_format(cfg->worker_ipv4, ip), cfg->worker_port,
				     strerror(-rc));
		close(fd);
		return rc;
	}
	*out = fd;
	return 0;
}

void
client_tx_flush(struct call *k)
{
	struct gr_client *c = k->c;
	unsigned int i = 0;

	while (i < c->tx_n) {
		int r = sendmmsg(c->fd, c->txm + i, c->tx_n - i, 0);

		if (r > 0) {
			i += (unsigned int)r;
			continue;
		}
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0 && errno == EMSGSIZE && k->fatal == 0) {
			k->fatal = -EMSGSIZE;
			(void)json_util_fail(c->err, sizeof(c->err),
					     "a packet of %zu bytes exceeds the path MTU to the "
					     "gateway",
					     c->txiov[i][0].iov_len + c->txiov[i][1].iov_len +
						     c->txiov[i][2].iov_len);
		}
		c->st.send_errors++; /* this packet is lost; the timers recover it */
		i++;
	}
	c->tx_n = 0;
}

/* Zeros that pad the last chunk of a tensor shorter than the job's. */
static const uint8_t zeros[TABLE_CHUNK_BYTES_MAX];

/* Queue one packet: header p (encoded here), the contributor set `set` if p has one
 * (a CONTRIB: this worker's own; a kept RESULT's), then plen payload bytes and pad zeros,
 * to ipv4:port. */
void
client_tx_add_set(struct call *k, const struct wire_pkt *p, const uint8_t *set, const void *payload,
		  size_t plen, size_t pad, uint32_t ipv4, uint16_t port)
{
	struct gr_client *c = k->c;
	size_t hlen = WIRE_HDR_LEN + (size_t)p->cset_blocks * WIRE_CSET_BLOCK;
	unsigned int i;

	if (c->tx_n == TX_BATCH)
		client_tx_flush(k);
	i = c->tx_n;
	if (wire_hdr_encode(c->txhdr[i], hlen + plen + pad, p, NULL) < 0) {
		c->st.send_errors++; /* not reached: every field comes from a checked config */
		return;
	}
	memcpy(c->txhdr[i] + WIRE_HDR_LEN, set, hlen - WIRE_HDR_LEN);
	c->txaddr[i] = (struct sockaddr_in){
		.sin_family = AF_INET,
		.sin_port = htons(port),
		.sin_addr.s_addr = htonl(ipv4),
	};
	c->txiov[i][0] = (struct iovec){.iov_base = c->txhdr[i], .iov_len = hlen};
	c->txiov[i][1] = (struct iovec){.iov_base = (void *)(uintptr_t)payload, .iov_len = plen};
	c->txiov[i][2] = (struct iovec){.iov_base = (void *)(uintptr_t)zeros, .iov_len = pad};
	c->txm[i].msg_hdr = (struct msghdr){
		.msg_name = &c->txaddr[i],
		.msg_namelen = sizeof(c->txaddr[i]),
		.msg_iov = c->txiov[i],
		.msg_iovlen = pad != 0  ? 3 :
			      plen != 0 ? 2 :
					  1,
	};
	c->tx_n++;
}

/* client_tx_add_set() with this worker's own contributor set. */
void
client_tx_add(struct call *k, const struct wire_pkt *p, const void *payload, size_t plen,
	      size_t pad, uint32_t ipv4, uint16_t port)
{
	client_tx_add_set(k, p, k->c->cset, payload, plen, pad, ipv4, port);
}

/* PROBE: answer at once to its source (section 5), whatever the job. */
void
client_on_probe(struct call *k, const struct wire_pkt *p, uint8_t *pkt,
		const struct sockaddr_in *from, uint64_t now)
{
	struct gr_client *c = k->c;
	struct wire_pkt r = *p;
	size_t len = WIRE_HDR_LEN + p->payload_len;

	r.type = WIRE_TYPE_PROBE_REPLY;
	r.flags = WIRE_F_ECHO;
	r.sender = p->job == c->cfg.job && p->job != 0 ? c->cfg.worker_id : WIRE_NODE_NONE;
	r.tsval = (uint32_t)now;
	r.tsecr = p->tsval;
	if (wire_hdr_encode(pkt, len, &r, NULL) == 0 &&
	    sendto(c->fd, pkt, len, 0, (const struct sockaddr *)from, sizeof(*from)) ==
		    (ssize_t)len)
		c->st.probes++;
	else
		c->st.send_errors++;
}

/* Read one batch of datagrams and hand each well-formed one to fn (a truncated, oversized
 * or non-IPv4 one is counted invalid). Returns datagrams read, or a negative errno. */
int
client_rx_read(struct gr_client *c, rx_fn fn, void *ctx)
{
	uint64_t now;
	int r;

	for (unsigned int i = 0; i < RX_BATCH; i++) {
		c->rxm[i].msg_hdr.msg_namelen = sizeof(c->rxaddr[i]);
		c->rxm[i].msg_hdr.msg_flags = 0;
	}
	r = recvmmsg(c->fd, c->rxm, RX_BATCH, MSG_DONTWAIT, NULL);
	if (r < 0)
		return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR ? 0 : -errno;
	now = clock_now_us();
	for (int i = 0; i < r; i++) {
		struct msghdr *m = &c->rxm[i].msg_hdr;

		if ((m->msg_flags & MSG_TRUNC) || c->rxm[i].msg_len > WIRE_UDP_PAYLOAD_MAX ||
		    m->msg_namelen != sizeof(struct sockaddr_in)) {
			c->st.invalid++;
			continue;
		}
		fn(ctx, c->rxiov[i].iov_base, c->rxm[i].msg_len, &c->rxaddr[i], now);
	}
	return r;
}

/* Sleep until a packet arrives or until the time `until`. */
int
client_wait_until(const struct gr_client *c, uint64_t until)
{
	uint64_t now = clock_now_us();
	struct pollfd pfd = {.fd = c->fd, .events = POLLIN};
	struct timespec ts;

	if (until <= now)
		return 0;
	ts.tv_sec = (time_t)((until - now) / 1000000u);
	ts.tv_nsec = (long)((until - now) % 1000000u) * 1000;
	if (ppoll(&pfd, 1, &ts, NULL) < 0 && errno != EINTR)
		return -errno;
	return 0;
}
