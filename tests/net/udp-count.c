// SPDX-License-Identifier: MIT
/*
 * udp-count.c - send a known number of UDP datagrams and count how many
 * arrive, for the loss injector test.
 *
 *   udp-count recv --port P --ctl-port C [--ready FILE]
 *                  [--lost FILE --count N]
 *   udp-count send --to ADDR --port P [--sport S] --count N [--size B]
 *                  [--ctl-port C]
 *
 * recv counts datagrams on port P until a datagram arrives on port C (sent
 * by `send --ctl-port C` after its data), drains what is still queued, and
 * prints the count. The control port must lie outside the lossy range.
 * send numbers its datagrams from 0; with --lost, recv writes the numbers
 * below N that never arrived to FILE, one per line.
 * Sending is paced and the receive buffer is large, so the only loss is
 * the one injected.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define RCVBUF_BYTES	(64 << 20)
#define PACE_BURST	32	/* datagrams between pauses */
#define PACE_NS		50000
#define DRAIN_MS	200	/* quiet time that ends the drain */
#define RECV_MAX_MS	120000	/* give up without a control datagram */

struct udp_args {
	const char *to;
	const char *ready;
	const char *lost;
	long port, ctl_port, sport, count, size;
};

static int udp_bind(long port)
{
	struct sockaddr_in sin = {
		.sin_family = AF_INET,
		.sin_port = htons(port),
		.sin_addr.s_addr = htonl(INADDR_ANY),
	};
	int fd, sz = RCVBUF_BYTES;

	fd = socket(AF_INET, SOCK_DGRAM, 0);
	if (fd < 0)
		return -errno;
	/* FORCE needs CAP_NET_ADMIN; fall back to what rmem_max allows. */
	if (setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &sz, sizeof(sz)))
		setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &sz, sizeof(sz));
	if (bind(fd, (struct sockaddr *)&sin, sizeof(sin))) {
		close(fd);
		return -errno;
	}
	return fd;
}

/* Receive what is queued; mark each datagram's number below @count. */
static long drain(int fd, char *buf, size_t len, unsigned char *seen,
		  long count)
{
	ssize_t r;
	long n = 0, i;

	while ((r = recv(fd, buf, len, MSG_DONTWAIT)) >= 0) {
		n++;
		if (!seen || r < (ssize_t)sizeof(i))
			continue;
		memcpy(&i, buf, sizeof(i));
		if (i >= 0 && i < count)
			seen[i] = 1;
	}
	return n;
}

/* Write the numbers below @count that @seen lacks to @path. */
static int write_lost(const char *path, const unsigned char *seen, long count)
{
	FILE *f = fopen(path, "w");
	long i;

	if (!f) {
		perror("udp-count: lost file");
		return -1;
	}
	for (i = 0; i < count; i++)
		if (!seen[i])
			fprintf(f, "%ld\n", i);
	if (fclose(f)) {
		perror("udp-count: lost file");
		return -1;
	}
	return 0;
}

static int cmd_recv(const struct udp_args *a)
{
	unsigned char *seen = NULL;
	struct pollfd pfd[2];
	char buf[65536];
	long got = 0;
	int fd, ctl, ret = 1, elapsed = 0;
	FILE *f;

	if (a->lost) {
		seen = calloc((size_t)a->count, 1);
		if (!seen) {
			fprintf(stderr, "udp-count: out of memory\n");
			return 1;
		}
	}
	fd = udp_bind(a->port);
	if (fd < 0) {
		fprintf(stderr, "udp-count: bind %ld: %s\n", a->port, strerror(-fd));
		free(seen);
		return 1;
	}
	ctl = udp_bind(a->ctl_port);
	if (ctl < 0) {
		fprintf(stderr, "udp-count: bind %ld: %s\n", a->ctl_port,
			strerror(-ctl));
		goto out_close_fd;
	}
	if (a->ready) {
		f = fopen(a->ready, "w");
		if (!f || fclose(f)) {
			perror("udp-count: ready file");
			goto out_close_ctl;
		}
	}

	pfd[0] = (struct pollfd){ .fd = fd, .events = POLLIN };
	pfd[1] = (struct pollfd){ .fd = ctl, .events = POLLIN };
	while (elapsed < RECV_MAX_MS) {
		int n = poll(pfd, 2, 100);

		if (n < 0 && errno != EINTR) {
			perror("udp-count: poll");
			goto out_close_ctl;
		}
		if (n <= 0) {
			elapsed += 100;
			continue;
		}
		if (pfd[0].revents & POLLIN)
			got += drain(fd, buf, sizeof(buf), seen, a->count);
		if (pfd[1].revents & POLLIN)
			break;
	}
	if (elapsed >= RECV_MAX_MS)
		fprintf(stderr, "udp-count: no control datagram, giving up\n");
	else
		ret = 0;
	/* Data sent before the control datagram may still be on its way. */
	pfd[0].revents = 0;
	while (poll(pfd, 1, DRAIN_MS) > 0)
		got += drain(fd, buf, sizeof(buf), seen, a->count);
	printf("%ld\n", got);
	if (seen && write_lost(a->lost, seen, a->count))
		ret = 1;

out_close_ctl:
	close(ctl);
out_close_fd:
	close(fd);
	free(seen);
	return ret;
}

static int udp_connect(const char *to, long port, long sport)
{
	struct sockaddr_in dst = {
		.sin_family = AF_INET,
		.sin_port = htons(port),
	};
	struct sockaddr_in src = {
		.sin_family = AF_INET,
		.sin_port = htons(sport),
		.sin_addr.s_addr = htonl(INADDR_ANY),
	};
	int fd;

	if (inet_pton(AF_INET, to, &dst.sin_addr) != 1)
		return -EINVAL;
	fd = socket(AF_INET, SOCK_DGRAM, 0);
	if (fd < 0)
		return -errno;
	if ((sport && bind(fd, (struct sockaddr *)&src, sizeof(src))) ||
	    connect(fd, (struct sockaddr *)&dst, sizeof(dst))) {
		close(fd);
		return -errno;
	}
	return fd;
}

static int cmd_send(const struct udp_args *a)
{
	const struct timespec pause = { .tv_nsec = PACE_NS };
	char buf[65536] = { 0 };
	long i, sent = 0;
	int fd, ctl;

	fd = udp_connect(a->to, a->port, a->sport);
	if (fd < 0) {
		fprintf(stderr, "udp-count: %s:%ld: %s\n", a->to, a->port,
			strerror(-fd));
		return 1;
	}
	for (i = 0; i < a->count; i++) {
		memcpy(buf, &i, sizeof(i));
		if (send(fd, buf, a->size, 0) != a->size) {
			perror("udp-count: send");
			break;
		}
		sent++;
		if (i % PACE_BURST == PACE_BURST - 1)
			nanosleep(&pause, NULL);
	}
	close(fd);
	printf("%ld\n", sent);
	if (sent != a->count)
		return 1;
	if (!a->ctl_port)
		return 0;

	ctl = udp_connect(a->to, a->ctl_port, 0);
	if (ctl < 0 || send(ctl, "end", 3, 0) != 3) {
		fprintf(stderr, "udp-count: control datagram failed\n");
		return 1;
	}
	close(ctl);
	return 0;
}

static void usage(FILE *f)
{
	fprintf(f,
		"usage: udp-count recv --port P --ctl-port C [--ready FILE] [--lost FILE --count N]\n"
		"       udp-count send --to ADDR --port P [--sport S] --count N [--size B] [--ctl-port C]\n");
}

static int parse_long(const char *s, long min, long max, long *out)
{
	char *end;

	errno = 0;
	*out = strtol(s, &end, 10);
	return errno || end == s || *end || *out < min || *out > max;
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "to", required_argument, NULL, 't' },
		{ "port", required_argument, NULL, 'p' },
		{ "ctl-port", required_argument, NULL, 'c' },
		{ "sport", required_argument, NULL, 's' },
		{ "count", required_argument, NULL, 'n' },
		{ "size", required_argument, NULL, 'z' },
		{ "ready", required_argument, NULL, 'r' },
		{ "lost", required_argument, NULL, 'l' },
		{ NULL, 0, NULL, 0 },
	};
	struct udp_args a = { .size = 64 };
	int c, bad = 0;

	if (argc < 2) {
		usage(stderr);
		return 2;
	}
	optind = 2;
	while ((c = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
		switch (c) {
		case 't':
			a.to = optarg;
			break;
		case 'p':
			bad |= parse_long(optarg, 1, 65535, &a.port);
			break;
		case 'c':
			bad |= parse_long(optarg, 1, 65535, &a.ctl_port);
			break;
		case 's':
			bad |= parse_long(optarg, 1, 65535, &a.sport);
			break;
		case 'n':
			bad |= parse_long(optarg, 0, 100000000, &a.count);
			break;
		case 'z':
			bad |= parse_long(optarg, sizeof(long), 65000, &a.size);
			break;
		case 'r':
			a.ready = optarg;
			break;
		case 'l':
			a.lost = optarg;
			break;
		default:
			bad = 1;
		}
	}
	if (bad || optind != argc || !a.port) {
		usage(stderr);
		return 2;
	}
	if (!strcmp(argv[1], "recv") && a.ctl_port && (!a.lost || a.count))
		return cmd_recv(&a);
	if (!strcmp(argv[1], "send") && a.to)
		return cmd_send(&a);
	usage(stderr);
	return 2;
}
