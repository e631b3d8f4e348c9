// SPDX-License-Identifier: MIT
/*
 * udp.c - the UDP socket transport, gradnet's default data path: one
 * non-blocking socket, batched with sendmmsg/recvmmsg, an eventfd to wake
 * the progress thread.
 *
 * Runs of packets that lie back to back in memory, go to one peer and have
 * one size (the last may be shorter), as the packets of a dense chunk do,
 * go out as one UDP GSO send; the receiving socket has UDP GRO on and
 * splits what the kernel merged. On loopback that moves 4.5x the bytes of
 * plain sendmmsg/recvmmsg (gradnet-bench udp). The datagrams on the wire
 * are the same either way.
 */
#include <errno.h>
#include <netinet/in.h>
#include <netinet/udp.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include "internal.h"

#ifndef UDP_SEGMENT
#define UDP_SEGMENT 103
#endif
#ifndef UDP_GRO
#define UDP_GRO 104
#endif

#define UDP_BATCH 64
#define UDP_SOCKBUF (32 << 20)
/* Segments per GSO send: every kernel with UDP_SEGMENT takes 64. */
#define GSO_MAX_SEGS 64
#define GSO_MAX_BYTES 65000
#define GRO_BUF 65536

struct udp {
	int fd;
	int wake_fd;
	bool gso;
	unsigned int max_pkt;
	u8 *rx_buf;
	struct mmsghdr rx_msg[UDP_BATCH];
	struct iovec rx_iov[UDP_BATCH];
	struct sockaddr_storage rx_from[UDP_BATCH];
	char rx_cmsg[UDP_BATCH][CMSG_SPACE(sizeof(int))];
	/*
	 * The buffers of the last receive, split into datagrams as they are
	 * handed out: the next one is at @rx_at in buffer @rx_i of @rx_n.
	 * How many segments the kernel merged into one buffer is its business
	 * (64 before Linux 6.9, 128 since, for local senders), so nothing here
	 * is sized by it.
	 */
	int rx_n, rx_i;
	unsigned int rx_at, rx_seg;
	struct mmsghdr tx_msg[UDP_BATCH];
	struct iovec tx_iov[UDP_BATCH];
	char tx_cmsg[UDP_BATCH][CMSG_SPACE(sizeof(u16))];
	int tx_pkts[UDP_BATCH];
};

/* Big socket buffers absorb bursts; as root the limits do not apply. */
static void size_buffers(int fd)
{
	int v = UDP_SOCKBUF;

	if (setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &v, sizeof(v)))
		setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &v, sizeof(v));
	if (setsockopt(fd, SOL_SOCKET, SO_SNDBUFFORCE, &v, sizeof(v)))
		setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &v, sizeof(v));
}

static int udp_open(const struct gn_addr *self, unsigned int max_pkt,
		    void **state)
{
	struct udp *u = calloc(1, sizeof(*u));
	int i, err, one = 1;

	if (!u)
		return -ENOMEM;
	u->max_pkt = max_pkt;
	u->rx_buf = malloc((size_t)UDP_BATCH * GRO_BUF);
	u->fd = socket(self->sa.ss_family, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	u->wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (!u->rx_buf || u->fd < 0 || u->wake_fd < 0) {
		err = -errno;
		goto out_free;
	}
	size_buffers(u->fd);
	if (bind(u->fd, (const struct sockaddr *)&self->sa, self->len)) {
		err = -errno;
		goto out_free;
	}
	/* Kernels without GSO or GRO just get plain datagrams. */
	u->gso = !setsockopt(u->fd, IPPROTO_UDP, UDP_GRO, &one, sizeof(one));
	for (i = 0; i < UDP_BATCH; i++) {
		u->rx_iov[i].iov_base = u->rx_buf + (size_t)i * GRO_BUF;
		u->rx_iov[i].iov_len = GRO_BUF;
		u->rx_msg[i].msg_hdr.msg_iov = &u->rx_iov[i];
		u->rx_msg[i].msg_hdr.msg_iovlen = 1;
		u->tx_msg[i].msg_hdr.msg_iov = &u->tx_iov[i];
		u->tx_msg[i].msg_hdr.msg_iovlen = 1;
	}
	*state = u;
	return 0;

out_free:
	if (u->fd >= 0)
		close(u->fd);
	if (u->wake_fd >= 0)
		close(u->wake_fd);
	free(u->rx_buf);
	free(u);
	return err ? err : -ENOMEM;
}

static void udp_close(void *state)
{
	struct udp *u = state;

	close(u->fd);
	close(u->wake_fd);
	free(u->rx_buf);
	free(u);
}

/* How many packets from @p on can go as one GSO send. */
static int gso_run(const struct gn_tx_pkt *p, int n)
{
	size_t bytes = p[0].len;
	int k = 1;

	while (k < n && k < GSO_MAX_SEGS && p[k].peer == p[0].peer &&
	       p[k].data == p[k - 1].data + p[k - 1].len &&
	       p[k - 1].len == p[0].len && p[k].len <= p[0].len &&
	       bytes + p[k].len <= GSO_MAX_BYTES) {
		bytes += p[k].len;
		k++;
	}
	return k;
}

/* Fill one mmsghdr with a run of @k packets; returns its byte length. */
static void tx_fill(struct udp *u, int slot, const struct gn_addr *peers,
		    const struct gn_tx_pkt *p, int k)
{
	struct msghdr *h = &u->tx_msg[slot].msg_hdr;
	size_t bytes = 0;
	int i;

	for (i = 0; i < k; i++)
		bytes += p[i].len;
	u->tx_iov[slot].iov_base = (void *)p[0].data;
	u->tx_iov[slot].iov_len = bytes;
	h->msg_name = (void *)&peers[p[0].peer].sa;
	h->msg_namelen = peers[p[0].peer].len;
	h->msg_control = NULL;
	h->msg_controllen = 0;
	if (k > 1) {
		struct cmsghdr *c;
		u16 seg = p[0].len;

		h->msg_control = u->tx_cmsg[slot];
		h->msg_controllen = sizeof(u->tx_cmsg[slot]);
		c = CMSG_FIRSTHDR(h);
		c->cmsg_level = IPPROTO_UDP;
		c->cmsg_type = UDP_SEGMENT;
		c->cmsg_len = CMSG_LEN(sizeof(seg));
		memcpy(CMSG_DATA(c), &seg, sizeof(seg));
	}
	u->tx_pkts[slot] = k;
}

static int udp_send(void *state, const struct gn_addr *peers,
		    const struct gn_tx_pkt *pkts, int n)
{
	struct udp *u = state;
	int sent = 0;

	while (sent < n) {
		int slots = 0, at = sent, r, i;

		while (at < n && slots < UDP_BATCH) {
			int k = u->gso ? gso_run(pkts + at, n - at) : 1;

			tx_fill(u, slots++, peers, pkts + at, k);
			at += k;
		}
		r = sendmmsg(u->fd, u->tx_msg, (unsigned int)slots, 0);
		if (r < 0) {
			/* A full socket buffer is back-pressure, not an error. */
			if (errno == EAGAIN || errno == ENOBUFS || errno == EINTR)
				break;
			/* Unreachable peers are for the retransmission timer. */
			if (errno == ECONNREFUSED || errno == EHOSTUNREACH ||
			    errno == ENETUNREACH) {
				sent += u->tx_pkts[0];
				continue;
			}
			return sent ? sent : -errno;
		}
		for (i = 0; i < r; i++)
			sent += u->tx_pkts[i];
		if (r < slots)
			break;
	}
	return sent;
}

/* The GRO segment size of a received buffer, or 0 if it is one datagram. */
static unsigned int gro_size(struct msghdr *h)
{
	struct cmsghdr *c;
	int v;

	for (c = CMSG_FIRSTHDR(h); c; c = CMSG_NXTHDR(h, c))
		if (c->cmsg_level == IPPROTO_UDP && c->cmsg_type == UDP_GRO) {
			memcpy(&v, CMSG_DATA(c), sizeof(v));
			return v > 0 ? (unsigned int)v : 0;
		}
	return 0;
}

/* Hand out one received datagram; a cut or oversized one with length 0. */
static void rx_one(struct udp *u, struct gn_rx_pkt *p, u8 *data,
		   unsigned int len)
{
	struct msghdr *h = &u->rx_msg[u->rx_i].msg_hdr;

	p->data = data;
	p->len = (h->msg_flags & MSG_TRUNC) || len > u->max_pkt ? 0 : (u16)len;
	memcpy(&p->from.sa, &u->rx_from[u->rx_i], sizeof(u->rx_from[u->rx_i]));
	p->from.len = h->msg_namelen;
}

/*
 * The next datagram of the received buffers into @p. A buffer is one
 * datagram, or several that GRO merged, cut at the segment size.
 */
static void rx_next(struct udp *u, struct gn_rx_pkt *p)
{
	unsigned int len = u->rx_msg[u->rx_i].msg_len;
	u8 *base = u->rx_iov[u->rx_i].iov_base;

	if (!u->rx_at)
		u->rx_seg = gro_size(&u->rx_msg[u->rx_i].msg_hdr);
	if (!u->rx_seg || u->rx_seg >= len) {
		rx_one(u, p, base, len);	/* empty ones count, as malformed */
		u->rx_at = len;
	} else {
		rx_one(u, p, base + u->rx_at, len - u->rx_at < u->rx_seg ?
					      len - u->rx_at : u->rx_seg);
		u->rx_at += u->rx_seg;
	}
	if (u->rx_at >= len) {
		u->rx_i++;
		u->rx_at = 0;
	}
}

/*
 * Datagrams point into the receive buffers, so the socket is read again
 * only once every datagram of the last read has been handed out (and the
 * caller is done with them).
 */
static int udp_recv(void *state, struct gn_rx_pkt *pkts, int max)
{
	struct udp *u = state;
	int i, r, n = 0;

	if (u->rx_i == u->rx_n) {
		u->rx_i = u->rx_n = 0;
		u->rx_at = 0;
		for (i = 0; i < UDP_BATCH; i++) {
			struct msghdr *h = &u->rx_msg[i].msg_hdr;

			h->msg_name = &u->rx_from[i];
			h->msg_namelen = sizeof(u->rx_from[i]);
			h->msg_control = u->rx_cmsg[i];
			h->msg_controllen = sizeof(u->rx_cmsg[i]);
		}
		r = recvmmsg(u->fd, u->rx_msg, UDP_BATCH, MSG_DONTWAIT, NULL);
		if (r < 0)
			return errno == EAGAIN || errno == EINTR ? 0 : -errno;
		u->rx_n = r;
	}
	while (n < max && u->rx_i < u->rx_n)
		rx_next(u, &pkts[n++]);
	return n;
}

static int udp_wait(void *state, int timeout_ms)
{
	struct udp *u = state;
	struct pollfd fds[2] = {
		{ .fd = u->fd, .events = POLLIN },
		{ .fd = u->wake_fd, .events = POLLIN },
	};
	u64 v;
	int r;

	if (u->rx_i < u->rx_n)
		return 1;
	r = poll(fds, 2, timeout_ms);
	if (r > 0 && fds[1].revents)
		(void)!read(u->wake_fd, &v, sizeof(v));
	return r < 0 ? -errno : r;
}

static void udp_wake(void *state)
{
	struct udp *u = state;
	u64 one = 1;

	(void)!write(u->wake_fd, &one, sizeof(one));
}

const struct gn_transport_ops gn_udp_ops = {
	.name = "udp",
	.open = udp_open,
	.close = udp_close,
	.send = udp_send,
	.recv = udp_recv,
	.wait = udp_wait,
	.wake = udp_wake,
};
