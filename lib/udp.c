// SPDX-License-Identifier: MIT
/*
 * udp.c - the UDP socket transport, gradnet's default data path: one
 * non-blocking socket, batched with sendmmsg/recvmmsg, an eventfd to wake
 * the progress thread.
 */
#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include "internal.h"

#define UDP_BATCH 64
#define UDP_SOCKBUF (32 << 20)

struct udp {
	int fd;
	int wake_fd;
	unsigned int max_pkt;
	u8 *rx_buf;
	struct mmsghdr rx_msg[UDP_BATCH];
	struct iovec rx_iov[UDP_BATCH];
	struct sockaddr_storage rx_from[UDP_BATCH];
	struct mmsghdr tx_msg[UDP_BATCH];
	struct iovec tx_iov[UDP_BATCH];
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
	int i, err;

	if (!u)
		return -ENOMEM;
	u->max_pkt = max_pkt;
	u->rx_buf = malloc((size_t)UDP_BATCH * max_pkt);
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
	for (i = 0; i < UDP_BATCH; i++) {
		u->rx_iov[i].iov_base = u->rx_buf + (size_t)i * max_pkt;
		u->rx_iov[i].iov_len = max_pkt;
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

static int udp_send(void *state, const struct gn_addr *peers,
		    const struct gn_tx_pkt *pkts, int n)
{
	struct udp *u = state;
	int i, sent = 0;

	while (sent < n) {
		int batch = n - sent < UDP_BATCH ? n - sent : UDP_BATCH, r;

		for (i = 0; i < batch; i++) {
			const struct gn_tx_pkt *p = &pkts[sent + i];
			struct msghdr *h = &u->tx_msg[i].msg_hdr;

			u->tx_iov[i].iov_base = (void *)p->data;
			u->tx_iov[i].iov_len = p->len;
			h->msg_name = (void *)&peers[p->peer].sa;
			h->msg_namelen = peers[p->peer].len;
		}
		r = sendmmsg(u->fd, u->tx_msg, (unsigned int)batch, 0);
		if (r < 0) {
			/* A full socket buffer is back-pressure, not an error. */
			if (errno == EAGAIN || errno == ENOBUFS || errno == EINTR)
				break;
			/* Unreachable peers are for the retransmission timer. */
			if (errno == ECONNREFUSED || errno == EHOSTUNREACH ||
			    errno == ENETUNREACH) {
				sent++;
				continue;
			}
			return sent ? sent : -errno;
		}
		sent += r;
		if (r < batch)
			break;
	}
	return sent;
}

static int udp_recv(void *state, struct gn_rx_pkt *pkts, int max)
{
	struct udp *u = state;
	int i, r, n = max < UDP_BATCH ? max : UDP_BATCH;

	for (i = 0; i < n; i++) {
		u->rx_msg[i].msg_hdr.msg_name = &u->rx_from[i];
		u->rx_msg[i].msg_hdr.msg_namelen = sizeof(u->rx_from[i]);
	}
	r = recvmmsg(u->fd, u->rx_msg, (unsigned int)n, MSG_DONTWAIT, NULL);
	if (r < 0)
		return errno == EAGAIN || errno == EINTR ? 0 : -errno;
	for (i = 0; i < r; i++) {
		pkts[i].data = u->rx_iov[i].iov_base;
		/* A datagram longer than any gradnet packet arrives cut. */
		pkts[i].len = (u->rx_msg[i].msg_hdr.msg_flags & MSG_TRUNC) ?
				      0 : (u16)u->rx_msg[i].msg_len;
		memcpy(&pkts[i].from.sa, &u->rx_from[i], sizeof(u->rx_from[i]));
		pkts[i].from.len = u->rx_msg[i].msg_hdr.msg_namelen;
	}
	return r;
}

static int udp_wait(void *state, int timeout_ms)
{
	struct udp *u = state;
	struct pollfd fds[2] = {
		{ .fd = u->fd, .events = POLLIN },
		{ .fd = u->wake_fd, .events = POLLIN },
	};
	u64 v;
	int r = poll(fds, 2, timeout_ms);

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
