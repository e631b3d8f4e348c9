// SPDX-License-Identifier: MIT
/*
 * bench_udp.c - `gradnet-bench udp`: is UDP GSO/GRO worth it for gradnet's
 * packets? Sends the same bytes over loopback as MTU-sized datagrams, by
 * sendmmsg/recvmmsg batches (what lib/transport/udp.c does) and by UDP_SEGMENT
 * super-datagrams received with UDP_GRO, and prints both rates.
 */
#include <errno.h>
#include <netinet/in.h>
#include <netinet/udp.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "bench.h"

#ifndef UDP_SEGMENT
#define UDP_SEGMENT 103
#endif
#ifndef UDP_GRO
#define UDP_GRO 104
#endif

#define PKT 1472
#define BATCH 44	/* 44 * 1472 fits one 64 KiB GSO send */
#define TOTAL (256u << 20)

struct rx_arg {
	int fd;
	int gro;
	size_t bytes;
	double last;
};

static int bound_socket(int *port)
{
	struct sockaddr_in a = { .sin_family = AF_INET,
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t len = sizeof(a);
	int fd = socket(AF_INET, SOCK_DGRAM, 0), big = 64 << 20;

	if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof(a)) ||
	    getsockname(fd, (struct sockaddr *)&a, &len))
		bench_die("socket: %s", strerror(errno));
	setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &big, sizeof(big));
	setsockopt(fd, SOL_SOCKET, SO_SNDBUFFORCE, &big, sizeof(big));
	*port = ntohs(a.sin_port);
	return fd;
}

/* Count received bytes until the sender has been quiet for 200 ms. */
static void *receiver(void *p)
{
	struct rx_arg *a = p;
	static char buf[BATCH][65536];
	struct timeval quiet = { 0, 200000 };
	struct mmsghdr msg[BATCH];
	struct iovec iov[BATCH];
	int i, one = 1;

	setsockopt(a->fd, SOL_SOCKET, SO_RCVTIMEO, &quiet, sizeof(quiet));
	if (a->gro)
		setsockopt(a->fd, IPPROTO_UDP, UDP_GRO, &one, sizeof(one));
	for (i = 0; i < BATCH; i++) {
		iov[i] = (struct iovec){ buf[i], sizeof(buf[i]) };
		msg[i].msg_hdr = (struct msghdr){ .msg_iov = &iov[i], .msg_iovlen = 1 };
	}
	for (;;) {
		int n = recvmmsg(a->fd, msg, BATCH, MSG_WAITFORONE, NULL);

		if (n < 0)
			return NULL;
		for (i = 0; i < n; i++)
			a->bytes += msg[i].msg_len;
		a->last = bench_now();
	}
}

static double run(int gso)
{
	static char data[BATCH * PKT];
	struct sockaddr_in to = { .sin_family = AF_INET,
				  .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	struct rx_arg ra;
	struct mmsghdr msg[BATCH];
	struct iovec iov[BATCH];
	pthread_t th;
	int port, tx_port, tx = bound_socket(&tx_port), i;
	size_t sent = 0;
	double t0, dt;
	int seg = PKT;

	ra = (struct rx_arg){ bound_socket(&port), gso, 0, 0 };
	to.sin_port = htons((uint16_t)port);
	if (connect(tx, (struct sockaddr *)&to, sizeof(to)))
		bench_die("connect: %s", strerror(errno));
	if (gso && setsockopt(tx, IPPROTO_UDP, UDP_SEGMENT, &seg, sizeof(seg)))
		bench_die("UDP_SEGMENT: %s", strerror(errno));
	for (i = 0; i < BATCH; i++) {
		iov[i] = (struct iovec){ data + i * PKT, PKT };
		msg[i].msg_hdr = (struct msghdr){ .msg_iov = &iov[i], .msg_iovlen = 1 };
	}
	pthread_create(&th, NULL, receiver, &ra);
	t0 = bench_now();
	while (sent < TOTAL) {
		int r;

		if (gso)
			r = send(tx, data, sizeof(data), 0) > 0 ? BATCH : -1;
		else
			r = sendmmsg(tx, msg, BATCH, 0);
		if (r < 0 && errno != ENOBUFS && errno != EAGAIN)
			bench_die("send: %s", strerror(errno));
		if (r > 0)
			sent += (size_t)r * PKT;
	}
	pthread_join(th, NULL);
	dt = ra.last - t0;
	close(tx);
	close(ra.fd);
	return (double)ra.bytes / dt / 1e9;
}

int bench_udp(int argc, char **argv)
{
	double plain, gso;

	(void)argc;
	(void)argv;
	plain = run(0);
	gso = run(1);
	printf("# %u-byte datagrams over loopback, 256 MiB sent, receiver on another thread;\n"
	       "# rates are bytes received (drops included) over the receiving time\n"
	       "sendmmsg + recvmmsg        %6.2f GB/s\n"
	       "UDP_SEGMENT + UDP_GRO      %6.2f GB/s (%.2fx)\n",
	       PKT, plain, gso, gso / plain);
	return 0;
}
