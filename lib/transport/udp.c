// SPDX-License-Identifier: MIT
/*
 * udp.c - the UDP-socket transport, gradnet's default data path: one
 * non-blocking socket, batched with sendmmsg/recvmmsg, an eventfd to wake
 * a sleeping driver, and a pool of packet buffers the core encodes into.
 *
 * Runs of packets to one peer that have one size (the last may be
 * shorter), as the packets of a dense chunk do, go out as one UDP GSO
 * send: an iovec per buffer, and the kernel cuts the concatenation at the
 * segment size. The receiving socket has UDP GRO on and splits what the
 * kernel merged. The datagrams on the wire are the same either way.
 *
 * Threads: send, recv, wait and close have one caller at a time; wake may
 * be called from any thread; get, hold and put from any thread at any
 * time (the trainer's thread packs while the driver puts acknowledged
 * packets), so the pool is a mutex-protected free list and the reference
 * counts are atomic.
 */
#include <errno.h>
#include <netinet/in.h>
#include <netinet/udp.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include "udp.h"

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
/* Buffers per pool allocation; a slab lives until close. */
#define SLAB_BUFS 256
#define BUF_ALIGN 64

struct slab {
	struct slab *next;
	u8 *data;			/* the buffers' rooms, one block */
	struct gn_buf bufs[SLAB_BUFS];
};

struct pool {
	pthread_mutex_t lock;
	struct gn_buf *free;		/* chained by ->next */
	struct slab *slabs;
	u32 max_pkt;
};

struct udp {
	int fd;
	int wake_fd;
	bool gso;
	u32 max_pkt;
	struct pool pool;

	/* Senders by address: open addressing, at most half full. */
	struct gn_addr *addrs;
	int world;
	u16 *peer_tab;
	u32 peer_mask;

	/*
	 * Datagrams land in staging buffers big enough for what GRO merges
	 * and are copied into pool buffers as they are handed out: the socket
	 * copies anyway, and one more memcpy of a packet that is still in
	 * cache costs little next to the system call. The next one is at
	 * @rx_at in staging buffer @rx_i of @rx_n. How many segments the
	 * kernel merges (64 before Linux 6.9, 128 since, for local senders)
	 * is its business, so nothing here is sized by it.
	 */
	u8 *rx_buf;
	int rx_n, rx_i;
	u32 rx_at, rx_seg;
	u16 rx_peer[UDP_BATCH];
	struct mmsghdr rx_msg[UDP_BATCH];
	struct iovec rx_iov[UDP_BATCH];
	struct sockaddr_storage rx_from[UDP_BATCH];
	char rx_cmsg[UDP_BATCH][CMSG_SPACE(sizeof(int))];
	/* Pool buffers taken in one locked batch for the next datagrams. */
	struct gn_buf *rx_spare[UDP_BATCH];
	int rx_nspare;

	struct mmsghdr tx_msg[UDP_BATCH];
	struct iovec tx_iov[UDP_BATCH][GSO_MAX_SEGS];
	char tx_cmsg[UDP_BATCH][CMSG_SPACE(sizeof(u16))];
	int tx_pkts[UDP_BATCH];
};

/* ---- the buffer pool ---- */

static size_t buf_stride(u32 max_pkt)
{
	return ((size_t)max_pkt + BUF_ALIGN - 1) & ~(size_t)(BUF_ALIGN - 1);
}

/* Called with the lock held: one more slab on the free list. */
static int pool_grow(struct pool *p)
{
	size_t stride = buf_stride(p->max_pkt);
	struct slab *s;
	u8 *data;
	int i;

	s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	if (posix_memalign((void **)&data, BUF_ALIGN, stride * SLAB_BUFS)) {
		free(s);
		return -ENOMEM;
	}
	s->data = data;
	for (i = SLAB_BUFS - 1; i >= 0; i--) {
		s->bufs[i].data = data + (size_t)i * stride;
		s->bufs[i].next = p->free;
		p->free = &s->bufs[i];
	}
	s->next = p->slabs;
	p->slabs = s;
	return 0;
}

/* Up to @n free buffers into @out, each with one reference. */
static int pool_take(struct pool *p, struct gn_buf **out, int n)
{
	int k = 0;

	pthread_mutex_lock(&p->lock);
	while (k < n) {
		struct gn_buf *b = p->free;

		if (!b) {
			if (pool_grow(p))
				break;
			continue;
		}
		p->free = b->next;
		b->next = NULL;
		b->len = 0;
		b->peer = 0;
		__atomic_store_n(&b->refs, 1, __ATOMIC_RELAXED);
		out[k++] = b;
	}
	pthread_mutex_unlock(&p->lock);
	return k;
}

static void pool_give(struct pool *p, struct gn_buf *b)
{
	pthread_mutex_lock(&p->lock);
	b->next = p->free;
	p->free = b;
	pthread_mutex_unlock(&p->lock);
}

static void pool_destroy(struct pool *p)
{
	struct slab *s, *next;

	for (s = p->slabs; s; s = next) {
		next = s->next;
		free(s->data);
		free(s);
	}
	p->slabs = NULL;
	p->free = NULL;
	pthread_mutex_destroy(&p->lock);
}

static struct gn_buf *udp_get(void *tp)
{
	struct udp *u = tp;
	struct gn_buf *b;

	return pool_take(&u->pool, &b, 1) ? b : NULL;
}

static void udp_hold(void *tp, struct gn_buf *b)
{
	(void)tp;
	__atomic_add_fetch(&b->refs, 1, __ATOMIC_RELAXED);
}

static void udp_put(void *tp, struct gn_buf *b)
{
	struct udp *u = tp;
	u32 old;

	/* Release: whoever takes the buffer next sees our last writes. */
	old = __atomic_fetch_sub(&b->refs, 1, __ATOMIC_ACQ_REL);
	if (old == 1) {
		pool_give(&u->pool, b);
	} else if (unlikely(old == 0)) {
		/* A put too many: the free list must not get it twice. */
		static bool warned;

		__atomic_add_fetch(&b->refs, 1, __ATOMIC_RELAXED);
		if (!__atomic_exchange_n(&warned, true, __ATOMIC_RELAXED))
			fprintf(stderr, "gradnet: udp: put of a free buffer\n");
	}
}

/* ---- senders by address ---- */

/* Family, port and address of @sa as bytes; 0 for other families. */
static size_t addr_key(const struct sockaddr_storage *sa, u8 key[20])
{
	if (sa->ss_family == AF_INET) {
		const struct sockaddr_in *in = (const void *)sa;

		memcpy(key, &in->sin_port, 2);
		memcpy(key + 2, &in->sin_addr, 4);
		return 6;
	}
	if (sa->ss_family == AF_INET6) {
		const struct sockaddr_in6 *in6 = (const void *)sa;

		memcpy(key, &in6->sin6_port, 2);
		memcpy(key + 2, &in6->sin6_addr, 16);
		return 18;
	}
	return 0;
}

/*
 * FNV-1a, then a multiplicative finish for the high bits. Unkeyed: a
 * stranger picks only which chain it probes, and the chains are made by
 * the job's own addresses, fixed at open.
 */
static u32 addr_hash(const u8 *key, size_t len)
{
	u32 h = 2166136261u;
	size_t i;

	for (i = 0; i < len; i++)
		h = (h ^ key[i]) * 16777619u;
	return (h ^ (h >> 15)) * 0x2c1b3c6du;
}

static u16 peer_of(const struct udp *u, const struct sockaddr_storage *sa)
{
	u8 key[20], k2[20];
	size_t len = addr_key(sa, key);
	u32 i;

	/* Before gn_udp_peers() nobody is a peer. */
	if (!len || !u->peer_tab)
		return GN_PEER_NONE;
	for (i = addr_hash(key, len) & u->peer_mask;
	     u->peer_tab[i] != GN_PEER_NONE; i = (i + 1) & u->peer_mask) {
		u16 r = u->peer_tab[i];

		if (u->addrs[r].sa.ss_family == sa->ss_family &&
		    addr_key(&u->addrs[r].sa, k2) == len &&
		    !memcmp(key, k2, len))
			return r;
	}
	return GN_PEER_NONE;
}

static int peers_init(struct udp *u, const struct gn_addr *addrs, int world)
{
	u32 size = 16;
	int r;

	while (size < 2u * (u32)world)
		size <<= 1;
	u->addrs = calloc((size_t)world, sizeof(*u->addrs));
	u->peer_tab = malloc(size * sizeof(*u->peer_tab));
	if (!u->addrs || !u->peer_tab)
		return -ENOMEM;
	memcpy(u->addrs, addrs, (size_t)world * sizeof(*addrs));
	u->world = world;
	u->peer_mask = size - 1;
	memset(u->peer_tab, 0xff, size * sizeof(*u->peer_tab));
	for (r = 0; r < world; r++) {
		u8 key[20];
		size_t len = addr_key(&addrs[r].sa, key);
		u32 i;

		/* Of two ranks at one address the first gets its packets. */
		if (!len || peer_of(u, &addrs[r].sa) != GN_PEER_NONE)
			continue;
		for (i = addr_hash(key, len) & u->peer_mask;
		     u->peer_tab[i] != GN_PEER_NONE; i = (i + 1) & u->peer_mask)
			;
		u->peer_tab[i] = (u16)r;
	}
	return 0;
}

/* ---- send ---- */

/* How many buffers from @b on can go as one GSO send. */
static int gso_run(struct gn_buf *const *b, int n)
{
	size_t bytes = b[0]->len;
	int k = 1;

	if (!b[0]->len)
		return 1;
	while (k < n && k < GSO_MAX_SEGS && b[k]->peer == b[0]->peer &&
	       b[k - 1]->len == b[0]->len && b[k]->len <= b[0]->len &&
	       b[k]->len && bytes + b[k]->len <= GSO_MAX_BYTES) {
		bytes += b[k]->len;
		k++;
	}
	return k;
}

/* One mmsghdr for a run of @k buffers to one peer. */
static void tx_fill(struct udp *u, int slot, struct gn_buf *const *b, int k)
{
	struct msghdr *h = &u->tx_msg[slot].msg_hdr;
	const struct gn_addr *to = &u->addrs[b[0]->peer];
	int i;

	for (i = 0; i < k; i++) {
		u->tx_iov[slot][i].iov_base = b[i]->data;
		u->tx_iov[slot][i].iov_len = b[i]->len;
	}
	h->msg_iov = u->tx_iov[slot];
	h->msg_iovlen = (size_t)k;
	h->msg_name = (void *)&to->sa;
	h->msg_namelen = to->len;
	h->msg_control = NULL;
	h->msg_controllen = 0;
	h->msg_flags = 0;
	if (k > 1) {
		struct cmsghdr *c;
		u16 seg = b[0]->len;

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

static int udp_send(void *tp, struct gn_buf *const *b, int n)
{
	struct udp *u = tp;
	int sent = 0;

	while (sent < n) {
		int slots = 0, at = sent, r, i;

		while (at < n && slots < UDP_BATCH) {
			int k;

			/* No such rank: nowhere to send it, the core's bug. */
			if (unlikely(b[at]->peer >= u->world)) {
				if (at == sent) {
					sent++;
					at++;
					continue;
				}
				break;
			}
			k = u->gso ? gso_run(b + at, n - at) : 1;
			tx_fill(u, slots++, b + at, k);
			at += k;
		}
		if (!slots)
			continue;
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
			/*
			 * A path that cannot segment (no checksum offload, a
			 * segment over the MTU) refuses GSO: send plainly.
			 */
			if ((errno == EIO || errno == EINVAL) &&
			    u->tx_pkts[0] > 1) {
				u->gso = false;
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

/* ---- receive ---- */

/* The GRO segment size of a received buffer, or 0 if it is one datagram. */
static u32 gro_size(struct msghdr *h)
{
	struct cmsghdr *c;
	int v;

	for (c = CMSG_FIRSTHDR(h); c; c = CMSG_NXTHDR(h, c))
		if (c->cmsg_level == IPPROTO_UDP && c->cmsg_type == UDP_GRO) {
			memcpy(&v, CMSG_DATA(c), sizeof(v));
			return v > 0 ? (u32)v : 0;
		}
	return 0;
}

/* One datagram into @b; a cut or oversized one with length 0. */
static void rx_one(struct udp *u, struct gn_buf *b, const u8 *data, u32 len)
{
	struct msghdr *h = &u->rx_msg[u->rx_i].msg_hdr;

	b->peer = u->rx_peer[u->rx_i];
	if ((h->msg_flags & MSG_TRUNC) || len > u->max_pkt) {
		b->len = 0;
		return;
	}
	memcpy(b->data, data, len);
	b->len = (u16)len;
}

/*
 * The next datagram of the staging buffers into @b. A staging buffer is
 * one datagram, or several that GRO merged, cut at the segment size.
 */
static void rx_next(struct udp *u, struct gn_buf *b)
{
	u32 len = u->rx_msg[u->rx_i].msg_len;
	const u8 *base = u->rx_iov[u->rx_i].iov_base;

	if (!u->rx_at)
		u->rx_seg = gro_size(&u->rx_msg[u->rx_i].msg_hdr);
	if (!u->rx_seg || u->rx_seg >= len) {
		rx_one(u, b, base, len);	/* empty ones count, as malformed */
		u->rx_at = len;
	} else {
		rx_one(u, b, base + u->rx_at, len - u->rx_at < u->rx_seg ?
					      len - u->rx_at : u->rx_seg);
		u->rx_at += u->rx_seg;
	}
	if (u->rx_at >= len) {
		u->rx_i++;
		u->rx_at = 0;
	}
}

/* Read the socket into the staging buffers: datagrams read, or -errno. */
static int rx_fill(struct udp *u)
{
	int i, r;

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
	for (i = 0; i < r; i++)
		u->rx_peer[i] = peer_of(u, &u->rx_from[i]);
	u->rx_n = r;
	return r;
}

/*
 * The socket is read again only once every datagram of the last read has
 * been handed out, so one call makes at most one system call.
 */
static int udp_recv(void *tp, struct gn_buf **b, int max)
{
	struct udp *u = tp;
	int r, n = 0;

	if (u->rx_i == u->rx_n) {
		r = rx_fill(u);
		if (r <= 0)
			return r;
	}
	while (n < max && u->rx_i < u->rx_n) {
		if (!u->rx_nspare) {
			u->rx_nspare = pool_take(&u->pool, u->rx_spare,
						 UDP_BATCH);
			if (!u->rx_nspare)
				return n ? n : -ENOMEM;
		}
		b[n] = u->rx_spare[--u->rx_nspare];
		rx_next(u, b[n++]);
	}
	return n;
}

static int udp_wait(void *tp, int timeout_ms)
{
	struct udp *u = tp;
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

static void udp_wake(void *tp)
{
	struct udp *u = tp;
	u64 one = 1;

	(void)!write(u->wake_fd, &one, sizeof(one));
}

/* ---- open and close ---- */

static void udp_free(struct udp *u)
{
	if (u->fd >= 0)
		close(u->fd);
	if (u->wake_fd >= 0)
		close(u->wake_fd);
	pool_destroy(&u->pool);
	free(u->rx_buf);
	free(u->addrs);
	free(u->peer_tab);
	free(u);
}

/* Every buffer, handed out or not, goes with the transport. */
static void udp_close(void *tp)
{
	udp_free(tp);
}

static const struct gn_transport_ops udp_ops = {
	.name = "udp",
	.get = udp_get,
	.hold = udp_hold,
	.put = udp_put,
	.send = udp_send,
	.recv = udp_recv,
	.poll = NULL,
	.wait = udp_wait,
	.wake = udp_wake,
	.close = udp_close,
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

/**
 * gn_udp_bind() - a UDP socket bound at @self, as a transport with no
 * peers yet: every packet is GN_PEER_NONE's until gn_udp_peers()
 * @tp: filled with the table, the state and the capabilities
 * @self: the address to bind; port 0 lets the kernel pick a free one
 * @max_pkt: bytes of a buffer, the largest datagram accepted
 * @bound: out (may be NULL): the address the socket holds, port included
 *
 * Return: 0, -EINVAL for bad arguments, -ENOMEM, or the -errno of the
 * socket, eventfd or bind.
 */
int gn_udp_bind(struct gn_transport *tp, const struct gn_addr *self,
		u32 max_pkt, struct gn_addr *bound)
{
	struct udp *u;
	int i, err, one = 1, zero = 0;

	if (!tp || !self || !max_pkt || max_pkt > 0xffff)
		return -EINVAL;
	u = calloc(1, sizeof(*u));
	if (!u)
		return -ENOMEM;
	u->fd = -1;
	u->wake_fd = -1;
	u->max_pkt = max_pkt;
	u->pool.max_pkt = max_pkt;
	pthread_mutex_init(&u->pool.lock, NULL);
	u->rx_buf = malloc((size_t)UDP_BATCH * GRO_BUF);
	if (!u->rx_buf) {
		err = -ENOMEM;
		goto out_free;
	}
	u->fd = socket(self->sa.ss_family,
		       SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (u->fd < 0) {
		err = -errno;
		goto out_free;
	}
	u->wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (u->wake_fd < 0) {
		err = -errno;
		goto out_free;
	}
	size_buffers(u->fd);
	if (bind(u->fd, (const struct sockaddr *)&self->sa, self->len)) {
		err = -errno;
		goto out_free;
	}
	if (bound) {
		bound->len = sizeof(bound->sa);
		if (getsockname(u->fd, (struct sockaddr *)&bound->sa,
				&bound->len)) {
			err = -errno;
			goto out_free;
		}
	}
	/*
	 * Kernels without GSO or GRO just get plain datagrams. A zero
	 * segment size is the socket's default, so setting it only asks
	 * whether the kernel knows UDP_SEGMENT.
	 */
	setsockopt(u->fd, IPPROTO_UDP, UDP_GRO, &one, sizeof(one));
	u->gso = !setsockopt(u->fd, IPPROTO_UDP, UDP_SEGMENT, &zero,
			     sizeof(zero));
	for (i = 0; i < UDP_BATCH; i++) {
		u->rx_iov[i].iov_base = u->rx_buf + (size_t)i * GRO_BUF;
		u->rx_iov[i].iov_len = GRO_BUF;
		u->rx_msg[i].msg_hdr.msg_iov = &u->rx_iov[i];
		u->rx_msg[i].msg_hdr.msg_iovlen = 1;
	}
	tp->ops = &udp_ops;
	tp->state = u;
	tp->caps.max_pkt = max_pkt;
	tp->caps.flags = u->gso ? GN_TP_SEGMENT : 0;
	return 0;

out_free:
	udp_free(u);
	return err;
}

/**
 * gn_udp_peers() - give a bound transport every rank's address
 * @state: the transport's state (struct gn_transport.state of gn_udp_bind())
 * @addrs: every rank's address, copied; a packet from @addrs[j] is rank j's
 * @world: ranks, 1 to 65535
 *
 * Called once, before the transport sends or receives.
 * Return: 0, -EINVAL, -EALREADY (peers given before) or -ENOMEM.
 */
int gn_udp_peers(void *state, const struct gn_addr *addrs, int world)
{
	struct udp *u = state;

	if (!u || !addrs || world < 1 || world >= (int)GN_PEER_NONE)
		return -EINVAL;
	if (u->addrs)
		return -EALREADY;
	return peers_init(u, addrs, world);
}

/**
 * gn_udp_open() - bind a UDP socket at @addrs[@rank] as a transport
 * @tp: filled with the table, the state and the capabilities
 * @addrs: every rank's address, copied
 * @world: ranks, 1 to 65535
 * @rank: this one
 * @max_pkt: bytes of a buffer, the largest datagram accepted
 *
 * Return: 0, -EINVAL for bad arguments, -ENOMEM, or the -errno of the
 * socket, eventfd or bind.
 */
int gn_udp_open(struct gn_transport *tp, const struct gn_addr *addrs,
		int world, int rank, u32 max_pkt)
{
	int err;

	if (!tp || !addrs || world < 1 || world >= (int)GN_PEER_NONE ||
	    rank < 0 || rank >= world)
		return -EINVAL;
	err = gn_udp_bind(tp, &addrs[rank], max_pkt, NULL);
	if (err)
		return err;
	err = gn_udp_peers(tp->state, addrs, world);
	if (err) {
		udp_free(tp->state);
		tp->ops = NULL;
		tp->state = NULL;
	}
	return err;
}
