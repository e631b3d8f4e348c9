/* SPDX-License-Identifier: MIT */
/*
 * socket.h - the module's transport: a kernel UDP tunnel socket bound in
 * the opener's network namespace, packet buffers that are skbs, and the
 * transport table of lib/transport/transport.h over them (socket.c).
 */
#ifndef GN_KMOD_SOCKET_H
#define GN_KMOD_SOCKET_H

#include <linux/skbuff.h>
#include <linux/spinlock.h>
#include <linux/in6.h>
#include <net/dst_cache.h>

#include <uapi/linux/gradnet.h>
#include "transport.h"
#include "params.h"

struct net;
struct socket;

struct gk_peer {
	u16 family;
	__be16 port;
	__be32 addr4;
	struct in6_addr addr6;
	struct dst_cache cache;
};

/* A packet buffer: a tx room in an skb, or a received skb (in its cb). */
struct gk_buf {
	struct gn_buf b;
	atomic_t refs;
	bool rx;
	struct gk_buf *all;		/* tx: every buffer, for the close */
};

struct gk_sock {
	struct gn_transport tp;
	struct net *net;
	struct socket *sock;
	struct sock *sk;		/* held until the queue is purged */
	int world, rank;
	struct gk_peer *peers;
	u32 max_pkt;
	u32 hroom;			/* headroom for IP and UDP headers */

	/* Receive: skbs queued in softirq for the worker. */
	struct sk_buff_head rxq;
	u32 rxq_max;			/* packets */
	u32 rcvbuf;			/* bytes: the socket's sk_rcvbuf */
	struct sk_buff *late;		/* fault injection: held back */
	struct gk_faults faults;
	atomic64_t rx_overflow;		/* dropped: the queue was full */
	atomic64_t rx_strangers;	/* dropped: from no rank of the job */
	atomic_t rx_out;		/* handed to the core, not yet put */

	/* Transmit buffers: a free list and every one made. */
	spinlock_t pool_lock;
	struct gk_buf *free;
	struct gk_buf *all;
	u64 tx_errors;

	/* Wakes the context's worker: a packet came, the core asked. */
	void (*kick)(void *arg);
	void *kick_arg;
};

int gk_sock_open(struct gk_sock **out, struct net *net,
		 const struct gradnet_peer *peers, int world, int rank,
		 u32 max_pkt, void (*kick)(void *), void *kick_arg,
		 char *msg, size_t len);
void gk_sock_shutdown(struct gk_sock *ks);
void gk_sock_free(struct gk_sock *ks);
int gk_peer_name(const struct gradnet_peer *p, char *buf, size_t len);

#endif /* GN_KMOD_SOCKET_H */
