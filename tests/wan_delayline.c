/* SPDX-License-Identifier: BSD-3-Clause
 *
 * wan_delayline: a test tool of the emulated WAN (scripts/lib/testbed.py --kernel-wan),
 * not a product program. It stands where a site's georeduce-dataplane stands, in the
 * site's network namespace, and forwards the kernel's own IPv4 traffic (Gloo's TCP,
 * ping) between the site's LAN veth and its WAN veths over AF_PACKET, delaying every
 * frame it sends on a WAN port by that link's one-way latency, as the dataplane's delay
 * line (--fault PORT,tx,delay_ms=D) delays the gateway's. These kernels have no netem;
 * rates stay with the tc tbf qdisc of each WAN veth, which the frames cross after the
 * delay, as the dataplane's do (the sockets do not bypass the qdisc).
 *
 *   wan_delayline --lan IFACE,addr=A.B.C.D,peer=MAC [--wan IFACE,delay_ms=D,route=P/L...]...
 *                 [--queue FRAMES] [--frame-max BYTES]
 *
 * LAN side: ARP requests for addr (the gateway's address, the kernel's next hop) are
 * answered with the LAN interface's MAC; IPv4 frames for another site go out of the WAN
 * port whose route holds their destination (longest prefix), after its delay; frames
 * from a WAN port whose destination is in no route of a WAN port go to the LAN, to the
 * kernel's MAC (peer=). Between WAN ports (a site on the way) frames are routed the same.
 * WAN frames carry a locally administered destination MAC, so that the kernel of the
 * peer namespace, which sees them too, drops them (they are not for its interface).
 *
 * Per WAN port a FIFO of --queue frames (default 16384) of at most --frame-max bytes
 * (default 1536) holds what waits for its time: memory is sized at start. A full queue
 * drops and counts. Prints "ready" on stdout once every socket is bound; on SIGINT or
 * SIGTERM it prints one line of counters per port and exits 0. Exit 2: bad options or an
 * interface that cannot be opened.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <net/ethernet.h>
#include <net/if.h>
#include <netinet/in.h>
#include <netpacket/packet.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define PROG "wan_delayline"
#ifndef PACKET_IGNORE_OUTGOING
#define PACKET_IGNORE_OUTGOING 23 /* linux/if_packet.h, Linux 4.20 */
#endif
#define PORTS_MAX 64
#define ROUTES_MAX 256
#define RX_BURST 64
#define ETH_HLEN_ 14
#define SOCK_BUF (16 << 20)

struct route {
	uint32_t prefix, mask;  /* host order */
	int port;               /* WAN port index */
};

struct frame {
	uint64_t due_us;
	uint32_t len;
};

struct port {
	char name[IF_NAMESIZE];
	int fd, ifindex;
	uint8_t mac[6];
	uint64_t delay_us;
	/* The delay FIFO: cap slots of frame_max bytes, head .. head + n - 1. */
	struct frame *fr;
	uint8_t *data;
	uint32_t head, n;
	bool blocked;           /* the socket refused the head frame: wait for POLLOUT */
	uint64_t rx, tx, q_drops, q_max, qdisc_drops, send_errors;
};

struct fwd {
	struct port lan;
	uint32_t lan_addr;      /* host order */
	uint8_t lan_peer[6];
	struct port wan[PORTS_MAX];
	int n_wan;
	struct route routes[ROUTES_MAX];
	int n_routes;
	uint32_t cap, frame_max;
	uint64_t no_route, too_big, arp_replies, other;
	uint8_t *rxbuf;
};

static volatile sig_atomic_t stop;

static void
on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

static uint64_t
now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

static int __attribute__((format(printf, 1, 2)))
usage_error(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, PROG ": ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\n");
	return -EINVAL;
}

static int
parse_mac(const char *s, uint8_t mac[6])
{
	unsigned int b[6];
	char end;

	if (sscanf(s, "%x:%x:%x:%x:%x:%x%c", &b[0], &b[1], &b[2], &b[3], &b[4], &b[5],
		   &end) != 6)
		return -EINVAL;
	for (int i = 0; i < 6; i++) {
		if (b[i] > 255)
			return -EINVAL;
		mac[i] = (uint8_t)b[i];
	}
	return 0;
}

static int
parse_prefix(const char *s, uint32_t *prefix, uint32_t *mask)
{
	char buf[32], *slash, *end;
	struct in_addr a;
	long len;

	if (strlen(s) >= sizeof(buf))
		return -EINVAL;
	strcpy(buf, s);
	slash = strchr(buf, '/');
	if (slash == NULL)
		return -EINVAL;
	*slash = '\0';
	len = strtol(slash + 1, &end, 10);
	if (*end != '\0' || len < 0 || len > 32 || inet_pton(AF_INET, buf, &a) != 1)
		return -EINVAL;
	*mask = len == 0 ? 0 : 0xffffffffu << (32 - len);
	*prefix = ntohl(a.s_addr) & *mask;
	return 0;
}

/* Open an AF_PACKET socket on iface, bound to it, big buffers, our own frames ignored. */
static int
port_open(struct port *p)
{
	struct sockaddr_ll sll = { .sll_family = AF_PACKET, .sll_protocol = htons(ETH_P_ALL) };
	struct ifreq ifr = { 0 };
	int one = 1, buf = SOCK_BUF;

	p->fd = socket(AF_PACKET, SOCK_RAW | SOCK_NONBLOCK, htons(ETH_P_ALL));
	if (p->fd < 0)
		return -errno;
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", p->name);
	if (ioctl(p->fd, SIOCGIFINDEX, &ifr) < 0)
		return -errno;
	p->ifindex = ifr.ifr_ifindex;
	if (ioctl(p->fd, SIOCGIFHWADDR, &ifr) < 0)
		return -errno;
	memcpy(p->mac, ifr.ifr_hwaddr.sa_data, 6);
	sll.sll_ifindex = p->ifindex;
	if (bind(p->fd, (struct sockaddr *)&sll, sizeof(sll)) < 0)
		return -errno;
	(void)setsockopt(p->fd, SOL_PACKET, PACKET_IGNORE_OUTGOING, &one, sizeof(one));
	if (setsockopt(p->fd, SOL_SOCKET, SO_RCVBUFFORCE, &buf, sizeof(buf)) < 0)
		(void)setsockopt(p->fd, SOL_SOCKET, SO_RCVBUF, &buf, sizeof(buf));
	if (setsockopt(p->fd, SOL_SOCKET, SO_SNDBUFFORCE, &buf, sizeof(buf)) < 0)
		(void)setsockopt(p->fd, SOL_SOCKET, SO_SNDBUF, &buf, sizeof(buf));
	return 0;
}

/* The WAN port whose route holds dst (longest prefix), or -1. */
static int
route_lookup(const struct fwd *f, uint32_t dst)
{
	int best = -1;
	uint32_t best_mask = 0;

	for (int i = 0; i < f->n_routes; i++)
		if ((dst & f->routes[i].mask) == f->routes[i].prefix &&
		    (best < 0 || f->routes[i].mask > best_mask)) {
			best = f->routes[i].port;
			best_mask = f->routes[i].mask;
		}
	return best;
}

/* Queue frame (len bytes, destination MAC rewritten) on WAN port p, due after its delay. */
static void
enqueue(struct fwd *f, struct port *p, const uint8_t *frame, uint32_t len, uint64_t now)
{
	static const uint8_t wan_dst[6] = { 0x02, 0x00, 0x00, 0x00, 0x00, 0x01 };
	uint32_t slot;
	uint8_t *d;

	if (p->n == f->cap) {
		p->q_drops++;
		return;
	}
	slot = (p->head + p->n) % f->cap;
	d = p->data + (size_t)slot * f->frame_max;
	memcpy(d, frame, len);
	memcpy(d, wan_dst, 6);
	memcpy(d + 6, p->mac, 6);
	p->fr[slot] = (struct frame){ .due_us = now + p->delay_us, .len = len };
	p->n++;
	if (p->n > p->q_max)
		p->q_max = p->n;
}

/* Send the frames of p that are due. */
static void
drain(struct fwd *f, struct port *p, uint64_t now)
{
	while (p->n != 0 && p->fr[p->head].due_us <= now) {
		const struct frame *fr = &p->fr[p->head];
		ssize_t r = send(p->fd, p->data + (size_t)p->head * f->frame_max, fr->len,
				 MSG_DONTWAIT);

		if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
			p->blocked = true; /* the socket's buffer is full: wait for room */
			return;
		}
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0 && errno == ENOBUFS)
			p->qdisc_drops++; /* the link's queue (tbf) is full: lost, as on a router */
		else if (r < 0)
			p->send_errors++;
		else
			p->tx++;
		p->head = (p->head + 1) % f->cap;
		p->n--;
	}
	p->blocked = false;
}

static void
arp_reply(struct fwd *f, const uint8_t *req, uint32_t len)
{
	uint8_t r[42];
	uint32_t tpa;

	/* Ethernet/IPv4 request: htype 1, ptype 0x0800, hlen 6, plen 4, oper 1. */
	if (len < 42 || req[14] != 0 || req[15] != 1 || req[16] != 8 || req[17] != 0 ||
	    req[18] != 6 || req[19] != 4 || req[20] != 0 || req[21] != 1)
		return;
	memcpy(&tpa, req + 38, 4);
	if (ntohl(tpa) != f->lan_addr)
		return;
	memcpy(r, req + 6, 6);                  /* to the asker */
	memcpy(r + 6, f->lan.mac, 6);
	r[12] = 0x08, r[13] = 0x06;
	memcpy(r + 14, req + 14, 6);            /* htype, ptype, hlen, plen */
	r[20] = 0, r[21] = 2;                   /* reply */
	memcpy(r + 22, f->lan.mac, 6);          /* sha: us */
	memcpy(r + 28, req + 38, 4);            /* spa: the address asked for */
	memcpy(r + 32, req + 22, 10);           /* tha, tpa: the asker */
	if (send(f->lan.fd, r, sizeof(r), MSG_DONTWAIT) == (ssize_t)sizeof(r))
		f->arp_replies++;
	else
		f->lan.send_errors++;
}

/* One frame received on port `from` (NULL: the LAN). */
static void
on_frame(struct fwd *f, struct port *from, uint8_t *frame, uint32_t len, uint64_t now)
{
	uint16_t type;
	uint32_t dst;
	int out;

	if (len < ETH_HLEN_) {
		f->other++;
		return;
	}
	type = (uint16_t)(frame[12] << 8 | frame[13]);
	if (type == ETHERTYPE_ARP && from == NULL) {
		arp_reply(f, frame, len);
		return;
	}
	if (type != ETHERTYPE_IP || len < ETH_HLEN_ + 20) {
		f->other++;
		return;
	}
	if (len > f->frame_max) {
		f->too_big++;
		return;
	}
	memcpy(&dst, frame + ETH_HLEN_ + 16, 4);
	dst = ntohl(dst);
	out = route_lookup(f, dst);
	if (out >= 0) {
		if (&f->wan[out] == from) { /* back where it came from: a routing loop */
			f->no_route++;
			return;
		}
		enqueue(f, &f->wan[out], frame, len, now);
		return;
	}
	if (from == NULL) { /* from the LAN to nowhere */
		f->no_route++;
		return;
	}
	memcpy(frame, f->lan_peer, 6);
	memcpy(frame + 6, f->lan.mac, 6);
	if (send(f->lan.fd, frame, len, MSG_DONTWAIT) == (ssize_t)len)
		f->lan.tx++;
	else
		f->lan.send_errors++;
}

static void
rx_port(struct fwd *f, struct port *p, bool lan)
{
	for (int i = 0; i < RX_BURST; i++) {
		struct sockaddr_ll from;
		socklen_t fl = sizeof(from);
		ssize_t r = recvfrom(p->fd, f->rxbuf, f->frame_max + 1, MSG_DONTWAIT | MSG_TRUNC,
				     (struct sockaddr *)&from, &fl);

		if (r < 0)
			return;
		if (from.sll_pkttype == PACKET_OUTGOING)
			continue;
		p->rx++;
		on_frame(f, lan ? NULL : p, f->rxbuf, (uint32_t)r, now_us());
	}
}

static void
print_stats(const struct fwd *f)
{
	printf("lan %s: rx %" PRIu64 " tx %" PRIu64 " send_errors %" PRIu64 " arp_replies %"
	       PRIu64 " no_route %" PRIu64 " too_big %" PRIu64 " other %" PRIu64 "\n",
	       f->lan.name, f->lan.rx, f->lan.tx, f->lan.send_errors, f->arp_replies,
	       f->no_route, f->too_big, f->other);
	for (int i = 0; i < f->n_wan; i++) {
		const struct port *p = &f->wan[i];

		printf("wan %s: delay_us %" PRIu64 " rx %" PRIu64 " tx %" PRIu64 " queue_max %"
		       PRIu64 " queue_drops %" PRIu64 " qdisc_drops %" PRIu64 " send_errors %"
		       PRIu64 "\n", p->name, p->delay_us, p->rx, p->tx, p->q_max, p->q_drops,
		       p->qdisc_drops, p->send_errors);
	}
	fflush(stdout);
}

/* "IFACE,key=value,..." into p (and, for the LAN, the address and peer MAC). */
static int
parse_port(struct fwd *f, char *spec, bool lan)
{
	struct port *p = lan ? &f->lan : &f->wan[f->n_wan];
	char *save = NULL, *tok = strtok_r(spec, ",", &save);
	bool have_addr = false, have_peer = false;

	if (!lan && f->n_wan == PORTS_MAX)
		return usage_error("at most %d --wan ports", PORTS_MAX);
	if (tok == NULL || strlen(tok) >= IF_NAMESIZE)
		return usage_error("%s: an interface name first", lan ? "--lan" : "--wan");
	snprintf(p->name, sizeof(p->name), "%s", tok);
	while ((tok = strtok_r(NULL, ",", &save)) != NULL) {
		char *v = strchr(tok, '=');
		struct in_addr a;

		if (v == NULL)
			return usage_error("'%s': expected key=value", tok);
		*v++ = '\0';
		if (lan && strcmp(tok, "addr") == 0 && inet_pton(AF_INET, v, &a) == 1) {
			f->lan_addr = ntohl(a.s_addr);
			have_addr = true;
		} else if (lan && strcmp(tok, "peer") == 0 && parse_mac(v, f->lan_peer) == 0) {
			have_peer = true;
		} else if (!lan && strcmp(tok, "delay_ms") == 0) {
			char *end;
			double d = strtod(v, &end);

			if (*end != '\0' || !(d >= 0 && d <= 10000))
				return usage_error("delay_ms=%s: 0 .. 10000", v);
			p->delay_us = (uint64_t)(d * 1000 + 0.5);
		} else if (!lan && strcmp(tok, "route") == 0) {
			struct route *r = &f->routes[f->n_routes];

			if (f->n_routes == ROUTES_MAX)
				return usage_error("at most %d routes", ROUTES_MAX);
			if (parse_prefix(v, &r->prefix, &r->mask) < 0)
				return usage_error("route=%s: expected A.B.C.D/LEN", v);
			r->port = f->n_wan;
			f->n_routes++;
		} else {
			return usage_error("%s=%s: unknown or malformed", tok, v);
		}
	}
	if (lan && (!have_addr || !have_peer))
		return usage_error("--lan needs addr=A.B.C.D and peer=MAC");
	if (!lan)
		f->n_wan++;
	return 0;
}

int
main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "lan", required_argument, NULL, 'l' },
		{ "wan", required_argument, NULL, 'w' },
		{ "queue", required_argument, NULL, 'q' },
		{ "frame-max", required_argument, NULL, 'm' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	static struct fwd f;
	struct pollfd pfd[PORTS_MAX + 1];
	bool have_lan = false;
	int c, rc = 2;

	f.cap = 16384;
	f.frame_max = 1536;
	while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		char *end;
		long v;

		switch (c) {
		case 'l':
			if (have_lan) {
				usage_error("--lan twice");
				return 2;
			}
			if (parse_port(&f, optarg, true) < 0)
				return 2;
			have_lan = true;
			break;
		case 'w':
			if (parse_port(&f, optarg, false) < 0)
				return 2;
			break;
		case 'q':
		case 'm':
			v = strtol(optarg, &end, 10);
			if (*end != '\0' || v < (c == 'q' ? 16 : 64) ||
			    v > (c == 'q' ? 1 << 20 : 65536)) {
				usage_error("--%s %s: out of range", c == 'q' ? "queue" : "frame-max",
					    optarg);
				return 2;
			}
			if (c == 'q')
				f.cap = (uint32_t)v;
			else
				f.frame_max = (uint32_t)v;
			break;
		case 'h':
			printf("usage: " PROG " --lan IFACE,addr=A.B.C.D,peer=MAC "
			       "[--wan IFACE,delay_ms=D,route=P/L...]... [--queue FRAMES] "
			       "[--frame-max BYTES]\n");
			return 0;
		default:
			return 2;
		}
	}
	if (optind != argc || !have_lan || f.n_wan == 0) {
		usage_error("needs --lan and at least one --wan (try --help)");
		return 2;
	}
	f.rxbuf = malloc(f.frame_max + 1);
	if (f.rxbuf == NULL)
		goto nomem;
	for (int i = 0; i < f.n_wan; i++) {
		f.wan[i].fr = calloc(f.cap, sizeof(*f.wan[i].fr));
		f.wan[i].data = malloc((size_t)f.cap * f.frame_max);
		if (f.wan[i].fr == NULL || f.wan[i].data == NULL)
			goto nomem;
	}
	for (int i = -1; i < f.n_wan; i++) {
		struct port *p = i < 0 ? &f.lan : &f.wan[i];
		int e = port_open(p);

		if (e < 0) {
			fprintf(stderr, PROG ": %s: %s\n", p->name, strerror(-e));
			goto out;
		}
	}
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	printf("ready\n");
	fflush(stdout);
	while (!stop) {
		uint64_t now = now_us(), next = now + 100000;
		struct timespec ts;

		for (int i = 0; i < f.n_wan; i++) {
			struct port *p = &f.wan[i];

			drain(&f, p, now);
			if (p->n != 0 && !p->blocked && p->fr[p->head].due_us < next)
				next = p->fr[p->head].due_us;
		}
		pfd[0] = (struct pollfd){ .fd = f.lan.fd, .events = POLLIN };
		for (int i = 0; i < f.n_wan; i++)
			pfd[i + 1] = (struct pollfd){ .fd = f.wan[i].fd,
						      .events = POLLIN |
								(f.wan[i].blocked ? POLLOUT : 0) };
		ts.tv_sec = (time_t)((next - now) / 1000000u);
		ts.tv_nsec = (long)((next - now) % 1000000u) * 1000;
		if (ppoll(pfd, (nfds_t)f.n_wan + 1, next > now ? &ts : &(struct timespec){ 0 },
			  NULL) < 0 && errno != EINTR) {
			perror(PROG ": ppoll");
			goto out;
		}
		if (pfd[0].revents & POLLIN)
			rx_port(&f, &f.lan, true);
		for (int i = 0; i < f.n_wan; i++) {
			if (pfd[i + 1].revents & POLLIN)
				rx_port(&f, &f.wan[i], false);
			if (pfd[i + 1].revents & POLLOUT)
				f.wan[i].blocked = false;
		}
	}
	print_stats(&f);
	rc = 0;
	goto out;
nomem:
	fprintf(stderr, PROG ": out of memory for %u frames of %u bytes per port\n", f.cap,
		f.frame_max);
out:
	for (int i = -1; i < f.n_wan; i++) {
		struct port *p = i < 0 ? &f.lan : &f.wan[i];

		if (p->fd > 0)
			close(p->fd);
		if (i >= 0) {
			free(p->fr);
			free(p->data);
		}
	}
	free(f.rxbuf);
	return rc;
}
