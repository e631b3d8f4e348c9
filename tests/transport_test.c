// SPDX-License-Identifier: MIT
/*
 * transport_test.c - the transports under the protocol core: the UDP
 * socket transport over 127.0.0.1 (intact packets from the right rank,
 * strangers, GSO runs and their GRO split, oversized datagrams, the
 * buffer pool and its thread safety), the in-memory fabric (order,
 * faults and their counts, determinism, every buffer back in the pool)
 * and the GN_TEST_FAULTS wrapper of tests/lib/fault_tp.c.
 */
#include <errno.h>
#include <netinet/in.h>
#include <netinet/udp.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "kselftest_harness.h"
#include "env.h"
#include "mem.h"
#include "udp.h"

#ifndef UDP_GRO
#define UDP_GRO 104
#endif

/* tests/lib/fault_tp.c */
int gn_fault_wrap(struct gn_transport *tp);

/* ---- a libc env of our own, so the test needs nothing of lib/env ---- */

static void *env_alloc(void *env, size_t bytes)
{
	return calloc(1, bytes);
}

static void env_free(void *env, void *p)
{
	free(p);
}

static u64 env_now(void *env)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (u64)ts.tv_sec * 1000000000u + (u64)ts.tv_nsec;
}

static void env_nop(void *env)
{
}

static int env_random(void *env, void *buf, size_t len)
{
	return getrandom(buf, len, 0) == (ssize_t)len ? 0 : -EIO;
}

static const struct gn_env_ops env_ops = {
	.alloc = env_alloc, .free = env_free, .now_ns = env_now,
	.lock = env_nop, .unlock = env_nop, .wake = env_nop,
	.random = env_random,
};
static const struct gn_env test_env = { .ops = &env_ops };

/* ---- UDP helpers ---- */

/* 127.0.0.1 at a port the kernel just had free. */
static struct gn_addr loopback_addr(void)
{
	struct gn_addr a = { .len = sizeof(struct sockaddr_in) };
	struct sockaddr_in *in = (struct sockaddr_in *)&a.sa;
	socklen_t len = sizeof(*in);
	int fd = socket(AF_INET, SOCK_DGRAM, 0);

	in->sin_family = AF_INET;
	in->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (fd < 0 || bind(fd, (struct sockaddr *)in, sizeof(*in)) ||
	    getsockname(fd, (struct sockaddr *)in, &len))
		abort();
	close(fd);
	return a;
}

/* A plain socket bound at @a, or at a fresh port if @a is NULL. */
static int plain_socket(const struct gn_addr *a)
{
	struct gn_addr any = loopback_addr();
	int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);

	if (!a)
		a = &any;
	if (fd < 0 || bind(fd, (const struct sockaddr *)&a->sa, a->len))
		abort();
	return fd;
}

static void fill(u8 *p, u16 len, u32 seq)
{
	u16 i;

	for (i = 0; i < len; i++)
		p[i] = (u8)(seq * 31 + i);
}

static bool filled(const u8 *p, u16 len, u32 seq)
{
	u16 i;

	for (i = 0; i < len; i++)
		if (p[i] != (u8)(seq * 31 + i))
			return false;
	return true;
}

/* A buffer of @tp holding packet @seq of @len bytes for @peer. */
static struct gn_buf *packet(struct gn_transport *tp, u16 peer, u16 len,
			     u32 seq)
{
	struct gn_buf *b = tp->ops->get(tp->state);

	if (!b)
		abort();
	b->peer = peer;
	b->len = len;
	fill(b->data, len, seq);
	return b;
}

/* Up to @want packets into @b, waiting at most two seconds. */
static int recv_some(struct gn_transport *tp, struct gn_buf **b, int want)
{
	u64 end = env_now(NULL) + 2000000000ull;
	int n = 0, r;

	while (n < want && env_now(NULL) < end) {
		r = tp->ops->recv(tp->state, b + n, want - n);
		if (r < 0)
			return r;
		n += r;
		if (!r)
			tp->ops->wait(tp->state, 50);
	}
	return n;
}

static void put_all(struct gn_transport *tp, struct gn_buf **b, int n)
{
	int i;

	for (i = 0; i < n; i++)
		tp->ops->put(tp->state, b[i]);
}

#define MAX_PKT 1500

/* Ranks 0..@world-1 on loopback, all opened. */
static void open_world(struct gn_transport *tp, struct gn_addr *addrs,
		       int world, u32 max_pkt)
{
	int r;

	for (r = 0; r < world; r++)
		addrs[r] = loopback_addr();
	for (r = 0; r < world; r++)
		if (gn_udp_open(&tp[r], addrs, world, r, max_pkt))
			abort();
}

static void close_world(struct gn_transport *tp, int world)
{
	int r;

	for (r = 0; r < world; r++)
		tp[r].ops->close(tp[r].state);
}

/* ---- UDP ---- */

TEST(udp_open_checks)
{
	struct gn_addr addrs[2] = { loopback_addr(), loopback_addr() };
	struct gn_transport tp;

	ASSERT_EQ(-EINVAL, gn_udp_open(&tp, addrs, 2, 2, MAX_PKT));
	ASSERT_EQ(-EINVAL, gn_udp_open(&tp, addrs, 0, 0, MAX_PKT));
	ASSERT_EQ(-EINVAL, gn_udp_open(&tp, addrs, 2, 0, 0));
	ASSERT_EQ(-EINVAL, gn_udp_open(&tp, addrs, 2, 0, 70000));
	ASSERT_EQ(0, gn_udp_open(&tp, addrs, 2, 0, MAX_PKT));
	ASSERT_EQ(MAX_PKT, tp.caps.max_pkt);
	ASSERT_STREQ("udp", tp.ops->name);
	ASSERT_EQ(NULL, tp.ops->poll);
	tp.ops->close(tp.state);
}

/* Packets of assorted sizes arrive whole, in order, from the right rank. */
TEST(udp_delivers)
{
	struct gn_transport tp[3];
	struct gn_addr addrs[3];
	struct gn_buf *out[10], *in[16];
	int i, to;

	open_world(tp, addrs, 3, MAX_PKT);
	for (i = 0; i < 10; i++)
		out[i] = packet(&tp[0], 1 + i % 2, (u16)(1 + i * 149), i);
	ASSERT_EQ(10, tp[0].ops->send(tp[0].state, out, 10));
	/* A retransmission sends the very same buffer again. */
	ASSERT_EQ(1, tp[0].ops->send(tp[0].state, &out[0], 1));
	for (to = 1; to <= 2; to++) {
		int want = to == 1 ? 6 : 5;

		ASSERT_EQ(want, recv_some(&tp[to], in, want));
		for (i = 0; i < want; i++) {
			u32 seq = to == 1 && i == 5 ? 0 : (u32)(2 * i + to - 1);

			ASSERT_EQ(0, in[i]->peer);
			ASSERT_EQ(1 + seq * 149, in[i]->len);
			ASSERT_TRUE(filled(in[i]->data, in[i]->len, seq));
		}
		put_all(&tp[to], in, want);
	}
	put_all(&tp[0], out, 10);

	/* And back: rank 2 to rank 0. */
	out[0] = packet(&tp[2], 0, 77, 5);
	ASSERT_EQ(1, tp[2].ops->send(tp[2].state, out, 1));
	ASSERT_EQ(1, recv_some(&tp[0], in, 1));
	ASSERT_EQ(2, in[0]->peer);
	ASSERT_EQ(77, in[0]->len);
	ASSERT_TRUE(filled(in[0]->data, 77, 5));
	put_all(&tp[0], in, 1);
	put_all(&tp[2], out, 1);
	close_world(tp, 3);
}

/* A datagram from no rank's address is GN_PEER_NONE, and intact. */
TEST(udp_unknown_sender)
{
	struct gn_transport tp[2];
	struct gn_addr addrs[2];
	struct gn_buf *in[1];
	u8 msg[100];
	int fd;

	open_world(tp, addrs, 2, MAX_PKT);
	fd = plain_socket(NULL);
	fill(msg, sizeof(msg), 9);
	ASSERT_EQ(100, sendto(fd, msg, sizeof(msg), 0,
			      (struct sockaddr *)&addrs[1].sa, addrs[1].len));
	ASSERT_EQ(1, recv_some(&tp[1], in, 1));
	ASSERT_EQ(GN_PEER_NONE, in[0]->peer);
	ASSERT_EQ(100, in[0]->len);
	ASSERT_TRUE(filled(in[0]->data, 100, 9));
	put_all(&tp[1], in, 1);

	/* The same from rank 0's own address is rank 0's. */
	close(fd);
	tp[0].ops->close(tp[0].state);
	fd = plain_socket(&addrs[0]);
	ASSERT_EQ(100, sendto(fd, msg, sizeof(msg), 0,
			      (struct sockaddr *)&addrs[1].sa, addrs[1].len));
	ASSERT_EQ(1, recv_some(&tp[1], in, 1));
	ASSERT_EQ(0, in[0]->peer);
	put_all(&tp[1], in, 1);
	close(fd);
	tp[1].ops->close(tp[1].state);
}

/*
 * Equal-size runs go out as one GSO send. A socket with UDP_GRO gets a
 * GSO send on loopback as one buffer with its segment size: proof that
 * the kernel took the iovec-per-buffer send as one segmented datagram.
 */
TEST(udp_gso_accepted)
{
	struct gn_addr addrs[2] = { loopback_addr(), loopback_addr() };
	struct gn_transport tp;
	struct gn_buf *out[11];
	static u8 rx[65536];
	char cbuf[CMSG_SPACE(sizeof(int))];
	struct iovec iov = { rx, sizeof(rx) };
	struct msghdr h = {
		.msg_iov = &iov, .msg_iovlen = 1,
		.msg_control = cbuf, .msg_controllen = sizeof(cbuf),
	};
	struct cmsghdr *c;
	int fd, one = 1, seg = 0, i;
	ssize_t len;

	ASSERT_EQ(0, gn_udp_open(&tp, addrs, 2, 0, MAX_PKT));
	if (!(tp.caps.flags & GN_TP_SEGMENT)) {
		tp.ops->close(tp.state);
		SKIP(return, "no UDP GSO in this kernel");
	}
	fd = plain_socket(&addrs[1]);
	ASSERT_EQ(0, setsockopt(fd, IPPROTO_UDP, UDP_GRO, &one, sizeof(one)));
	for (i = 0; i < 11; i++)
		out[i] = packet(&tp, 1, i < 10 ? 1000 : 300, i);
	ASSERT_EQ(11, tp.ops->send(tp.state, out, 11));
	len = recvmsg(fd, &h, 0);
	for (c = CMSG_FIRSTHDR(&h); c; c = CMSG_NXTHDR(&h, c))
		if (c->cmsg_level == IPPROTO_UDP && c->cmsg_type == UDP_GRO)
			memcpy(&seg, CMSG_DATA(c), sizeof(seg));
	ASSERT_EQ(10300, len);
	ASSERT_EQ(1000, seg);
	for (i = 0; i < 11; i++)
		ASSERT_TRUE(filled(rx + i * 1000, i < 10 ? 1000 : 300, i));
	put_all(&tp, out, 11);
	close(fd);
	tp.ops->close(tp.state);
}

/* GSO runs arrive as separate packets of the right sizes, in order. */
TEST(udp_gso_runs)
{
	static const u16 sizes[] = {
		1200, 1200, 1200, 1200, 1200, 1200, 1200, 1200, 1200, 1200,
		500, 1200, 1200, 1200, 7, 7, 1500, 1500, 1, 0, 1400,
	};
	enum { N = sizeof(sizes) / sizeof(sizes[0]) };
	struct gn_transport tp[3];
	struct gn_addr addrs[3];
	struct gn_buf *out[N + 80], *in[N + 80];
	int i, n = 0;

	open_world(tp, addrs, 3, MAX_PKT);
	for (i = 0; i < N; i++) {
		out[n++] = packet(&tp[0], 1, sizes[i], i);
		/* A run to another peer in between ends the run. */
		if (i == 12)
			for (int k = 0; k < 5; k++)
				out[n++] = packet(&tp[0], 2, 800, 100 + k);
	}
	/* More than one GSO send holds: 70 equal segments. */
	for (i = 0; i < 70; i++)
		out[n++] = packet(&tp[0], 1, 900, 200 + i);
	ASSERT_EQ(n, tp[0].ops->send(tp[0].state, out, n));
	ASSERT_EQ(N + 70, recv_some(&tp[1], in, N + 70));
	for (i = 0; i < N + 70; i++) {
		u32 seq = i < N ? (u32)i : (u32)(200 + i - N);
		u16 len = i < N ? sizes[i] : 900;

		ASSERT_EQ(0, in[i]->peer);
		ASSERT_EQ(len, in[i]->len);
		ASSERT_TRUE(filled(in[i]->data, len, seq));
	}
	put_all(&tp[1], in, N + 70);
	ASSERT_EQ(5, recv_some(&tp[2], in, 5));
	for (i = 0; i < 5; i++) {
		ASSERT_EQ(800, in[i]->len);
		ASSERT_TRUE(filled(in[i]->data, 800, 100 + i));
	}
	put_all(&tp[2], in, 5);
	put_all(&tp[0], out, n);
	close_world(tp, 3);
}

/* A datagram bigger than a buffer is handed out with length 0. */
TEST(udp_oversized)
{
	struct gn_transport tp[2];
	struct gn_addr addrs[2];
	struct gn_buf *in[2];
	static u8 msg[3000];
	int fd;

	open_world(tp, addrs, 2, 1000);
	tp[0].ops->close(tp[0].state);
	fd = plain_socket(&addrs[0]);
	fill(msg, 1001, 1);
	ASSERT_EQ(1001, sendto(fd, msg, 1001, 0,
			       (struct sockaddr *)&addrs[1].sa, addrs[1].len));
	fill(msg, 1000, 2);
	ASSERT_EQ(1000, sendto(fd, msg, 1000, 0,
			       (struct sockaddr *)&addrs[1].sa, addrs[1].len));
	ASSERT_EQ(2, recv_some(&tp[1], in, 2));
	ASSERT_EQ(0, in[0]->len);
	ASSERT_EQ(0, in[0]->peer);
	ASSERT_EQ(1000, in[1]->len);
	ASSERT_TRUE(filled(in[1]->data, 1000, 2));
	put_all(&tp[1], in, 2);
	close(fd);
	tp[1].ops->close(tp[1].state);
}

/* The last put gives a buffer back, and the pool hands it out again. */
TEST(udp_refs)
{
	struct gn_transport tp[2];
	struct gn_addr addrs[2];
	struct gn_buf *a, *b, *c, *many[600], *in[1];
	const struct gn_transport_ops *o;
	int i, j;

	open_world(tp, addrs, 2, MAX_PKT);
	o = tp[0].ops;
	a = o->get(tp[0].state);
	ASSERT_NE(NULL, a);
	o->put(tp[0].state, a);
	for (i = 0; i < 100000; i++) {
		b = o->get(tp[0].state);
		ASSERT_EQ(a, b);
		o->put(tp[0].state, b);
	}
	/* A held buffer stays out until its last put. */
	a = o->get(tp[0].state);
	o->hold(tp[0].state, a);
	o->put(tp[0].state, a);
	b = o->get(tp[0].state);
	ASSERT_NE(a, b);
	o->put(tp[0].state, b);
	o->put(tp[0].state, a);
	c = o->get(tp[0].state);
	ASSERT_EQ(a, c);
	o->put(tp[0].state, c);

	/* Beyond one slab: all distinct, and the same ones come back. */
	for (i = 0; i < 600; i++) {
		many[i] = o->get(tp[0].state);
		ASSERT_NE(NULL, many[i]);
		memset(many[i]->data, i, MAX_PKT);
		for (j = 0; j < i; j += 97)
			ASSERT_NE(many[j], many[i]);
	}
	for (i = 0; i < 600; i++)
		ASSERT_EQ((u8)i, many[i]->data[MAX_PKT - 1]);
	for (i = 599; i >= 0; i--)
		o->put(tp[0].state, many[i]);
	for (i = 0; i < 600; i++) {
		b = o->get(tp[0].state);
		ASSERT_EQ(many[i], b);
	}
	for (i = 0; i < 600; i++)
		o->put(tp[0].state, many[i]);

	/* A received packet is a pool buffer: put, it is the next one out. */
	a = packet(&tp[0], 1, 10, 1);
	ASSERT_EQ(1, o->send(tp[0].state, &a, 1));
	o->put(tp[0].state, a);
	ASSERT_EQ(1, recv_some(&tp[1], in, 1));
	tp[1].ops->put(tp[1].state, in[0]);
	b = tp[1].ops->get(tp[1].state);
	ASSERT_EQ(in[0], b);
	ASSERT_EQ(0, b->len);
	tp[1].ops->put(tp[1].state, b);
	close_world(tp, 2);
}

#define HAMMER_ITERS 100000
#define HAMMER_HOLD 4

struct hammer {
	struct gn_transport *tp;
	u16 tag;
	struct gn_buf **seen;		/* HAMMER_ITERS * HAMMER_HOLD */
	int bad;
};

/* Get, mark, hold, put and check: two owners of one buffer show up. */
static void *hammer_main(void *arg)
{
	struct hammer *h = arg;
	const struct gn_transport_ops *o = h->tp->ops;
	void *s = h->tp->state;
	struct gn_buf *b[HAMMER_HOLD];
	int it, i, k;

	for (it = 0; it < HAMMER_ITERS; it++) {
		k = 1 + it % HAMMER_HOLD;
		for (i = 0; i < k; i++) {
			b[i] = o->get(s);
			if (!b[i] || b[i]->peer != 0) {
				h->bad++;
				return NULL;
			}
			__atomic_store_n(&b[i]->peer, h->tag, __ATOMIC_RELAXED);
			memset(b[i]->data, h->tag, 64);
			h->seen[it * HAMMER_HOLD + i] = b[i];
		}
		o->hold(s, b[0]);
		o->put(s, b[0]);
		for (i = 0; i < k; i++) {
			if (__atomic_load_n(&b[i]->peer, __ATOMIC_RELAXED) !=
			    h->tag || b[i]->data[0] != (u8)h->tag ||
			    b[i]->data[63] != (u8)h->tag)
				h->bad++;
			o->put(s, b[i]);
		}
	}
	return NULL;
}

static int cmp_ptr(const void *a, const void *b)
{
	uintptr_t x = *(const uintptr_t *)a, y = *(const uintptr_t *)b;

	return x < y ? -1 : x > y;
}

/* Two threads get and put at once: no buffer has two owners. */
TEST(udp_pool_threads)
{
	struct gn_addr addrs[1] = { loopback_addr() };
	struct gn_transport tp;
	struct hammer h[2];
	pthread_t t[2];
	size_t n = 2 * HAMMER_ITERS * HAMMER_HOLD, i, distinct = 0;
	struct gn_buf **seen = calloc(n, sizeof(*seen));

	ASSERT_NE(NULL, seen);
	ASSERT_EQ(0, gn_udp_open(&tp, addrs, 1, 0, MAX_PKT));
	for (i = 0; i < 2; i++) {
		h[i] = (struct hammer){ &tp, (u16)(i + 1),
					seen + i * HAMMER_ITERS * HAMMER_HOLD, 0 };
		ASSERT_EQ(0, pthread_create(&t[i], NULL, hammer_main, &h[i]));
	}
	for (i = 0; i < 2; i++)
		pthread_join(t[i], NULL);
	ASSERT_EQ(0, h[0].bad);
	ASSERT_EQ(0, h[1].bad);
	/* Eight out at once at most: a pool that reuses needs few more. */
	qsort(seen, n, sizeof(*seen), cmp_ptr);
	for (i = 0; i < n; i++)
		if (seen[i] && (!i || seen[i] != seen[i - 1]))
			distinct++;
	ASSERT_LE(HAMMER_HOLD, distinct);
	ASSERT_GE(64, distinct);
	free(seen);
	tp.ops->close(tp.state);
}

/* wake() ends a wait at once, from another thread too. */
static void *waker_main(void *arg)
{
	struct gn_transport *tp = arg;

	usleep(20000);
	tp->ops->wake(tp->state);
	return NULL;
}

TEST(udp_wake)
{
	struct gn_addr addrs[1] = { loopback_addr() };
	struct gn_transport tp;
	pthread_t t;
	u64 t0;

	ASSERT_EQ(0, gn_udp_open(&tp, addrs, 1, 0, MAX_PKT));
	ASSERT_EQ(0, tp.ops->wait(tp.state, 0));
	ASSERT_EQ(0, pthread_create(&t, NULL, waker_main, &tp));
	t0 = env_now(NULL);
	ASSERT_EQ(1, tp.ops->wait(tp.state, 10000));
	ASSERT_GT(5000000000ull, env_now(NULL) - t0);
	pthread_join(t, NULL);
	/* The wake was consumed. */
	ASSERT_EQ(0, tp.ops->wait(tp.state, 0));
	tp.ops->close(tp.state);
}

/* ---- the in-memory fabric ---- */

static void mem_world(struct gn_mem_fabric *fab, struct gn_transport *tp,
		      int world)
{
	int r;

	for (r = 0; r < world; r++)
		if (gn_mem_open(fab, r, &tp[r]))
			abort();
}

static u32 seq_of(const struct gn_buf *b)
{
	return gn_get_le32(b->data);
}

/* Without faults every packet arrives once, in order, from its sender. */
TEST(mem_in_order)
{
	struct gn_mem_fabric *fab;
	struct gn_transport tp[3];
	struct gn_mem_counts c;
	struct gn_buf *b, *in[64];
	u32 next[3][3] = { { 0 } };
	int round, from, to, n, i;

	ASSERT_EQ(0, gn_mem_fabric_new(&test_env, 3, 256, 1024, NULL, &fab));
	mem_world(fab, tp, 3);
	ASSERT_STREQ("mem", tp[0].ops->name);
	ASSERT_EQ(256, tp[0].caps.max_pkt);
	for (round = 0; round < 100; round++) {
		for (from = 0; from < 3; from++)
			for (to = 0; to < 3; to++) {
				if (to == from)
					continue;
				b = packet(&tp[from], (u16)to, 4 + round % 200, 0);
				gn_put_le32((u32)round, b->data);
				ASSERT_EQ(1, tp[from].ops->send(tp[from].state, &b, 1));
				/* The fabric holds what it queued. */
				tp[from].ops->put(tp[from].state, b);
			}
		if (round % 7)
			continue;
		for (to = 0; to < 3; to++)
			while ((n = tp[to].ops->recv(tp[to].state, in, 64)) > 0) {
				for (i = 0; i < n; i++) {
					ASSERT_GT(3, in[i]->peer);
					ASSERT_EQ(next[in[i]->peer][to], seq_of(in[i]));
					ASSERT_EQ(4 + seq_of(in[i]) % 200, in[i]->len);
					next[in[i]->peer][to]++;
				}
				put_all(&tp[to], in, n);
			}
	}
	for (to = 0; to < 3; to++)
		while ((n = tp[to].ops->recv(tp[to].state, in, 64)) > 0) {
			for (i = 0; i < n; i++)
				ASSERT_EQ(next[in[i]->peer][to]++, seq_of(in[i]));
			put_all(&tp[to], in, n);
		}
	for (from = 0; from < 3; from++)
		for (to = 0; to < 3; to++)
			ASSERT_EQ(from == to ? 0 : 100, next[from][to]);
	gn_mem_fabric_counts(fab, &c);
	ASSERT_EQ(600, c.sent);
	ASSERT_EQ(600, c.delivered);
	ASSERT_EQ(0, c.lost);
	ASSERT_EQ(0, c.duplicated);
	ASSERT_EQ(0, c.reordered);
	ASSERT_EQ(c.bufs_total, c.bufs_free);
	ASSERT_EQ(1024, c.bufs_total);
	close_world(tp, 3);
	gn_mem_fabric_free(fab);
}

#define FAULT_PKTS 10000

/*
 * Rank 0 sends FAULT_PKTS numbered packets to rank 1, which receives
 * after every batch and polls after every fourth; @seq gets the numbers
 * in the order they arrived. Return: how many arrived.
 */
static int faulty_run(u64 seed, u32 *seq, int cap, struct gn_mem_counts *c)
{
	struct gn_mem_faults f = {
		.loss = 65536 / 5, .dup = 65536 / 5, .reorder = 65536 / 5,
		.seed = seed,
	};
	struct gn_mem_fabric *fab;
	struct gn_transport tp[2];
	struct gn_buf *out[16], *in[64];
	int sent = 0, got = 0, batch = 0, n, i;

	if (gn_mem_fabric_new(&test_env, 2, 64, 512, &f, &fab))
		return -1;
	mem_world(fab, tp, 2);
	while (sent < FAULT_PKTS) {
		for (i = 0; i < 16; i++) {
			out[i] = packet(&tp[0], 1, 4 + i, 0);
			gn_put_le32((u32)sent++, out[i]->data);
		}
		if (tp[0].ops->send(tp[0].state, out, 16) != 16)
			return -1;
		put_all(&tp[0], out, 16);
		if (++batch % 4 == 0)
			tp[1].ops->poll(tp[1].state, 0, NULL);
		while ((n = tp[1].ops->recv(tp[1].state, in, 64)) > 0) {
			for (i = 0; i < n; i++) {
				if (in[i]->peer != 0 || got >= cap)
					return -1;
				seq[got++] = seq_of(in[i]);
			}
			put_all(&tp[1], in, n);
		}
	}
	tp[1].ops->poll(tp[1].state, 0, NULL);
	while ((n = tp[1].ops->recv(tp[1].state, in, 64)) > 0) {
		for (i = 0; i < n && got < cap; i++)
			seq[got++] = seq_of(in[i]);
		put_all(&tp[1], in, n);
	}
	close_world(tp, 2);
	gn_mem_fabric_counts(fab, c);
	gn_mem_fabric_free(fab);
	return got;
}

/* 20% loss, duplication and reordering: counts add up, seeds repeat. */
TEST(mem_faults)
{
	enum { CAP = 2 * FAULT_PKTS };
	u32 *a = calloc(CAP, sizeof(*a)), *b = calloc(CAP, sizeof(*b));
	struct gn_mem_counts ca, cb;
	int na, nb, i, late = 0, twice = 0;
	u32 top = 0;
	u8 *seen = calloc(FAULT_PKTS, 1);

	ASSERT_NE(NULL, a);
	ASSERT_NE(NULL, b);
	ASSERT_NE(NULL, seen);
	na = faulty_run(7, a, CAP, &ca);
	ASSERT_LT(0, na);
	ASSERT_EQ(FAULT_PKTS, ca.sent);
	ASSERT_EQ(ca.sent - ca.lost + ca.duplicated, ca.delivered);
	ASSERT_EQ(ca.delivered, (u64)na);
	/* About 2000, 1600 and 1600 of each. */
	ASSERT_LT(1500, ca.lost);
	ASSERT_LT(1200, ca.duplicated);
	ASSERT_LT(1200, ca.reordered);
	ASSERT_GT(2500, ca.lost);
	ASSERT_EQ(ca.bufs_total, ca.bufs_free);
	for (i = 0; i < na; i++) {
		ASSERT_GT(FAULT_PKTS, a[i]);
		if (a[i] < top)
			late++;
		top = a[i] > top ? a[i] : top;
		twice += seen[a[i]]++ != 0;
	}
	ASSERT_LT(1000, late);
	ASSERT_EQ(ca.duplicated, (u64)twice);

	/* The same seed gives the same packets in the same order. */
	nb = faulty_run(7, b, CAP, &cb);
	ASSERT_EQ(na, nb);
	ASSERT_EQ(0, memcmp(a, b, (size_t)na * sizeof(*a)));
	ASSERT_EQ(0, memcmp(&ca, &cb, sizeof(ca)));
	/* Another seed does not. */
	nb = faulty_run(8, b, CAP, &cb);
	ASSERT_TRUE(na != nb || memcmp(a, b, (size_t)na * sizeof(*a)));
	ASSERT_EQ(cb.bufs_total, cb.bufs_free);
	free(a);
	free(b);
	free(seen);
}

/* Pool and queue limits, bad receivers, and forwarding what arrived. */
TEST(mem_limits)
{
	struct gn_mem_fabric *fab;
	struct gn_transport tp[2];
	struct gn_mem_counts c;
	struct gn_buf *b[5], *in[32];
	int i, n, total = 0;

	ASSERT_EQ(-EINVAL, gn_mem_fabric_new(&test_env, 0, 64, 4, NULL, &fab));
	ASSERT_EQ(-EINVAL, gn_mem_fabric_new(&test_env, 2, 0, 4, NULL, &fab));
	ASSERT_EQ(-EINVAL, gn_mem_fabric_new(&test_env, 2, 64, 0, NULL, &fab));
	ASSERT_EQ(0, gn_mem_fabric_new(&test_env, 2, 64, 4, NULL, &fab));
	ASSERT_EQ(-EINVAL, gn_mem_open(fab, 2, &tp[0]));
	mem_world(fab, tp, 2);
	ASSERT_EQ(-EINVAL, gn_mem_open(fab, 1, &tp[1]));
	for (i = 0; i < 4; i++)
		ASSERT_NE(NULL, b[i] = tp[0].ops->get(tp[0].state));
	ASSERT_EQ(NULL, tp[1].ops->get(tp[1].state));
	put_all(&tp[0], b + 1, 3);

	/* To itself and to no rank: taken and lost. */
	b[0]->len = 8;
	b[0]->peer = 0;
	ASSERT_EQ(1, tp[0].ops->send(tp[0].state, b, 1));
	b[0]->peer = 9;
	ASSERT_EQ(1, tp[0].ops->send(tp[0].state, b, 1));
	gn_mem_fabric_counts(fab, &c);
	ASSERT_EQ(2, c.lost);

	/* A queue holds 16 (4 rounded up to 16): the rest is lost. */
	b[0]->peer = 1;
	memset(b[0]->data, 0x5a, 8);
	for (i = 0; i < 20; i++)
		ASSERT_EQ(1, tp[0].ops->send(tp[0].state, b, 1));
	tp[0].ops->put(tp[0].state, b[0]);
	gn_mem_fabric_counts(fab, &c);
	ASSERT_EQ(22, c.sent);
	ASSERT_EQ(6, c.lost);
	ASSERT_EQ(3, c.bufs_free);
	/* 8 receive buffers: the rest waits for them. */
	n = tp[1].ops->recv(tp[1].state, in, 32);
	ASSERT_EQ(8, n);
	ASSERT_EQ(8, in[0]->len);
	ASSERT_EQ(0, in[0]->peer);
	ASSERT_EQ(0x5a, in[7]->data[7]);
	/* Forwarding a received one sends the same bytes on. */
	in[0]->peer = 0;
	ASSERT_EQ(1, tp[1].ops->send(tp[1].state, in, 1));
	put_all(&tp[1], in, n);
	total += n;
	while ((n = tp[1].ops->recv(tp[1].state, in, 32)) > 0) {
		total += n;
		put_all(&tp[1], in, n);
	}
	ASSERT_EQ(16, total);
	ASSERT_EQ(1, tp[0].ops->recv(tp[0].state, in, 32));
	ASSERT_EQ(1, in[0]->peer);
	ASSERT_EQ(8, in[0]->len);
	ASSERT_EQ(0x5a, in[0]->data[0]);
	tp[0].ops->put(tp[0].state, in[0]);
	gn_mem_fabric_counts(fab, &c);
	ASSERT_EQ(17, c.delivered);
	ASSERT_EQ(4, c.bufs_free);

	/* What is queued for a rank that closes is lost, and given back. */
	b[0] = packet(&tp[0], 1, 8, 0);
	ASSERT_EQ(1, tp[0].ops->send(tp[0].state, b, 1));
	tp[0].ops->put(tp[0].state, b[0]);
	tp[1].ops->close(tp[1].state);
	b[0] = packet(&tp[0], 1, 8, 0);
	ASSERT_EQ(1, tp[0].ops->send(tp[0].state, b, 1));
	tp[0].ops->put(tp[0].state, b[0]);
	gn_mem_fabric_counts(fab, &c);
	ASSERT_EQ(c.sent - c.lost + c.duplicated, c.delivered);
	ASSERT_EQ(4, c.bufs_free);
	tp[0].ops->close(tp[0].state);
	gn_mem_fabric_free(fab);
}

/* ---- GN_TEST_FAULTS over a fabric ---- */

/* A two-rank fabric whose rank 0 is behind GN_TEST_FAULTS=@spec. */
static int faulty_pair(const char *spec, struct gn_mem_fabric **fab,
		       struct gn_transport *tp)
{
	int r;

	if (gn_mem_fabric_new(&test_env, 2, 256, 64, NULL, fab))
		abort();
	mem_world(*fab, tp, 2);
	setenv("GN_TEST_FAULTS", spec, 1);
	r = gn_fault_wrap(&tp[0]);
	unsetenv("GN_TEST_FAULTS");
	return r;
}

static void pair_free(struct gn_mem_fabric *fab, struct gn_transport *tp)
{
	struct gn_mem_counts c;

	close_world(tp, 2);
	gn_mem_fabric_counts(fab, &c);
	if (c.bufs_free != c.bufs_total)
		abort();
	gn_mem_fabric_free(fab);
}

/*
 * Send @n packets numbered from @first (at most 8: the number is read
 * back from the first byte) to rank 1; receive what came.
 */
static int send_recv(struct gn_transport *tp, int n, u32 first, u32 *seq)
{
	struct gn_buf *out[16], *in[64];
	int i, got;

	for (i = 0; i < n; i++)
		out[i] = packet(&tp[0], 1, 20, first + i);
	if (n && tp[0].ops->send(tp[0].state, out, n) != n)
		abort();
	put_all(&tp[0], out, n);
	got = tp[1].ops->recv(tp[1].state, in, 64);
	for (i = 0; i < got; i++) {
		seq[i] = in[i]->data[0] / 31u;
		if (!filled(in[i]->data, 20, seq[i]))
			seq[i] = ~0u;
	}
	put_all(&tp[1], in, got);
	return got;
}

TEST(fault_wrapper)
{
	struct gn_mem_fabric *fab;
	struct gn_transport tp[2];
	const struct gn_transport_ops *mem;
	u32 seq[64];
	int i;

	/* Unset: nothing to wrap. A bad spec leaves the transport alone. */
	ASSERT_EQ(0, faulty_pair("", &fab, tp));
	mem = tp[0].ops;
	ASSERT_STREQ("mem", mem->name);
	ASSERT_EQ(0, gn_fault_wrap(&tp[0]));
	ASSERT_EQ(mem, tp[0].ops);
	setenv("GN_TEST_FAULTS", "bogus=1", 1);
	ASSERT_EQ(-EINVAL, gn_fault_wrap(&tp[0]));
	unsetenv("GN_TEST_FAULTS");
	ASSERT_EQ(mem, tp[0].ops);
	pair_free(fab, tp);

	/* Lost: taken, never delivered. */
	ASSERT_EQ(0, faulty_pair("loss=1", &fab, tp));
	ASSERT_STREQ("fault", tp[0].ops->name);
	ASSERT_EQ(0, send_recv(tp, 5, 0, seq));
	pair_free(fab, tp);

	/* Duplicated: each twice, in order. */
	ASSERT_EQ(0, faulty_pair("dup=1", &fab, tp));
	ASSERT_EQ(6, send_recv(tp, 3, 0, seq));
	for (i = 0; i < 6; i++)
		ASSERT_EQ((u32)i / 2, seq[i]);
	pair_free(fab, tp);

	/* Reordered: held (a reference) until a later send or a wait. */
	ASSERT_EQ(0, faulty_pair("reorder=1", &fab, tp));
	ASSERT_EQ(0, send_recv(tp, 3, 0, seq));
	/* 3 and 4 are held in their turn; 0 to 2 go after them. */
	ASSERT_EQ(3, send_recv(tp, 2, 3, seq));
	for (i = 0; i < 3; i++)
		ASSERT_EQ((u32)i, seq[i]);
	tp[0].ops->wait(tp[0].state, 0);
	ASSERT_EQ(2, send_recv(tp, 0, 0, seq));
	ASSERT_EQ(3, seq[0]);
	ASSERT_EQ(4, seq[1]);
	/* Held at close: given back. */
	ASSERT_EQ(0, send_recv(tp, 4, 5, seq));
	pair_free(fab, tp);
}

TEST(fault_record_replay)
{
	char path[] = "/tmp/gn_transport_test_XXXXXX", spec[64];
	struct gn_mem_fabric *fab;
	struct gn_transport tp[2];
	u8 file[256];
	u32 seq[64];
	FILE *in;
	int fd, i;
	size_t len;

	fd = mkstemp(path);
	ASSERT_LE(0, fd);
	close(fd);
	snprintf(spec, sizeof(spec), "record=%s", path);
	ASSERT_EQ(0, faulty_pair(spec, &fab, tp));
	ASSERT_EQ(3, send_recv(tp, 3, 0, seq));
	pair_free(fab, tp);
	in = fopen(path, "rb");
	ASSERT_NE(NULL, in);
	len = fread(file, 1, sizeof(file), in);
	fclose(in);
	ASSERT_EQ(3 * (4 + 20), len);
	for (i = 0; i < 3; i++) {
		const u8 *r = file + i * 24;

		ASSERT_EQ(1, gn_get_le16(r));
		ASSERT_EQ(20, gn_get_le16(r + 2));
		ASSERT_TRUE(filled(r + 4, 20, i));
	}

	/* Replay: one recorded packet after each of this run, round again. */
	snprintf(spec, sizeof(spec), "replay=%s", path);
	ASSERT_EQ(0, faulty_pair(spec, &fab, tp));
	ASSERT_EQ(4, send_recv(tp, 2, 4, seq));
	ASSERT_EQ(4, seq[0]);
	ASSERT_EQ(5, seq[1]);
	ASSERT_EQ(0, seq[2]);
	ASSERT_EQ(1, seq[3]);
	ASSERT_EQ(4, send_recv(tp, 2, 6, seq));
	ASSERT_EQ(6, seq[0]);
	ASSERT_EQ(2, seq[2]);
	ASSERT_EQ(0, seq[3]);
	pair_free(fab, tp);
	unlink(path);

	snprintf(spec, sizeof(spec), "replay=%s", path);
	ASSERT_EQ(-ENOENT, faulty_pair(spec, &fab, tp));
	pair_free(fab, tp);
}

TEST_HARNESS_MAIN
