// SPDX-License-Identifier: MIT
/*
 * socket.c - the transport of the kernel data path: one kernel UDP tunnel
 * socket per context, bound at the rank's address in the opener's network
 * namespace.
 *
 * Receive: the socket's encap_rcv takes every datagram in softirq (the
 * UDP layer has verified its checksum) and resolves the sender to a rank.
 * A datagram from no rank of the job is dropped there and counted (STATS
 * adds them to the context's source drops, as the core counts them on
 * the UDP path): a stranger's flood costs no memory, no queue room and no
 * wake-up of the worker. The others are queued for the context's worker,
 * charged to the socket as the UDP layer charges its own queue
 * (sk_rmem_alloc against sk_rcvbuf, which rx_queue_bytes sets, and the
 * protocol's and the memory cgroup's pages); what does not fit is dropped
 * and counted in the socket's drops (/proc/net/udp). Nothing is queued to
 * a user socket and nothing is copied. The core runs in the worker (its
 * environment sleeps), where recv() takes the skbs off the queue, gives
 * their charge back and hands them out with their gn_buf in the skb's
 * control block.
 *
 * Transmit: a tx buffer is an skb with headroom for the IP and UDP headers
 * that the packer encodes into. send() transmits a clone that shares the
 * bytes (the headers go into the shared headroom, which the buffer's own
 * skb has given up: __skb_header_release()), so a retransmission sends the
 * same bytes without encoding them again. A buffer whose previous clone is
 * still in flight is sent as a copy; a freed buffer whose bytes are still
 * in flight gets a fresh skb before it is written again. The UDP checksum
 * is left to the device (CHECKSUM_PARTIAL) or computed by the stack.
 */
#include <linux/in.h>
#include <linux/ip.h>
#include <linux/ipv6.h>
#include <linux/netdevice.h>
#include <linux/random.h>
#include <linux/slab.h>
#include <linux/udp.h>
#include <net/ip.h>
#include <net/ipv6_stubs.h>
#include <net/net_namespace.h>
#include <net/route.h>
#include <net/udp.h>
#include <net/udp_tunnel.h>

#include "kernel.h"
#include "socket.h"

/* The rx gn_buf lives in the skb's control block. */
static struct gk_buf *skb_gkbuf(struct sk_buff *skb)
{
	BUILD_BUG_ON(sizeof(struct gk_buf) > sizeof(skb->cb));
	return (struct gk_buf *)skb->cb;
}

static struct gk_buf *to_gkbuf(struct gn_buf *b)
{
	return container_of(b, struct gk_buf, b);
}

/* ---- peers ---- */

/**
 * gk_peer_name() - "a.b.c.d:port" or "[v6]:port" of @p
 * @p: a peer as OPEN gave it (network byte order)
 * @buf, @len: where to write, NUL-terminated
 *
 * Return: characters written, as snprintf().
 */
int gk_peer_name(const struct gradnet_peer *p, char *buf, size_t len)
{
	if (p->family == AF_INET)
		return snprintf(buf, len, "%pI4:%u", p->addr,
				ntohs((__force __be16)p->port));
	return snprintf(buf, len, "[%pI6c]:%u", p->addr,
			ntohs((__force __be16)p->port));
}

static int peers_init(struct gk_sock *ks, const struct gradnet_peer *peers)
{
	int r, err;

	ks->peers = kcalloc(ks->world, sizeof(*ks->peers), GN_KERNEL_GFP);
	if (!ks->peers)
		return -ENOMEM;
	for (r = 0; r < ks->world; r++) {
		struct gk_peer *p = &ks->peers[r];

		p->family = peers[r].family;
		p->port = (__force __be16)peers[r].port;
		if (p->family == AF_INET)
			memcpy(&p->addr4, peers[r].addr, 4);
		else
			memcpy(&p->addr6, peers[r].addr, 16);
		err = dst_cache_init(&p->cache, GN_KERNEL_GFP);
		if (err)
			return err;
	}
	return 0;
}

static void peers_free(struct gk_sock *ks)
{
	int r;

	if (!ks->peers)
		return;
	for (r = 0; r < ks->world; r++)
		dst_cache_destroy(&ks->peers[r].cache);
	kfree(ks->peers);
	ks->peers = NULL;
}

/*
 * The rank that sent @skb, or GN_PEER_NONE. A linear scan: worlds are at
 * most GRADNET_MAX_WORLD and the table is fixed after open, so softirq
 * reads it without a lock.
 */
static u16 sender_of(const struct gk_sock *ks, const struct sk_buff *skb)
{
	__be16 port = udp_hdr(skb)->source;
	int r;

	for (r = 0; r < ks->world; r++) {
		const struct gk_peer *p = &ks->peers[r];

		if (p->port != port)
			continue;
		if (skb->protocol == htons(ETH_P_IP) && p->family == AF_INET &&
		    p->addr4 == ip_hdr(skb)->saddr)
			return r;
		if (skb->protocol == htons(ETH_P_IPV6) &&
		    p->family == AF_INET6 &&
		    ipv6_addr_equal(&p->addr6, &ipv6_hdr(skb)->saddr))
			return r;
	}
	return GN_PEER_NONE;
}

/* ---- receive ---- */

/* The UDP payload of @skb, linear, at skb->data; false if malformed. */
static bool rx_prepare(struct sk_buff *skb)
{
	struct udphdr *uh = udp_hdr(skb);
	int off = (u8 *)uh - skb->data;
	unsigned int len;

	if (off < 0 || off + sizeof(*uh) > skb->len)
		return false;
	len = ntohs(uh->len);
	if (len < sizeof(*uh) || len > skb->len - off)
		return false;
	if (pskb_trim(skb, off + len) || skb_linearize(skb))
		return false;
	__skb_pull(skb, off + sizeof(struct udphdr));
	return true;
}

/*
 * A queued skb's charge, given back when the worker takes it (skb_orphan())
 * or when it is freed in the queue. Softirq on another CPU charges the
 * same counters: the receive queue's lock serialises sk_forward_alloc, as
 * it does for the UDP layer's own queue.
 */
static void rx_uncharge(struct sk_buff *skb)
{
	struct sock *sk = skb->sk;

	spin_lock_bh(&sk->sk_receive_queue.lock);
	atomic_sub(skb->truesize, &sk->sk_rmem_alloc);
	sk_mem_uncharge(sk, skb->truesize);
	spin_unlock_bh(&sk->sk_receive_queue.lock);
}

/* Charge @skb to @sk if it fits in sk_rcvbuf and the protocol's memory. */
static bool rx_charge(struct sock *sk, struct sk_buff *skb)
{
	unsigned int size = skb->truesize;
	bool ok;

	skb_orphan(skb);
	spin_lock(&sk->sk_receive_queue.lock);
	ok = atomic_read(&sk->sk_rmem_alloc) + size <= READ_ONCE(sk->sk_rcvbuf) &&
	     sk_rmem_schedule(sk, skb, size);
	if (ok) {
		sk_mem_charge(sk, size);
		atomic_add(size, &sk->sk_rmem_alloc);
	}
	spin_unlock(&sk->sk_receive_queue.lock);
	if (!ok)
		return false;
	skb->sk = sk;
	skb->destructor = rx_uncharge;
	return true;
}

/*
 * encap_rcv: softirq. Return 0: the skb is ours (queued or freed), the
 * UDP layer does nothing more with it.
 */
static int gk_encap_rcv(struct sock *sk, struct sk_buff *skb)
{
	struct gk_sock *ks = rcu_dereference_sk_user_data(sk);
	struct gk_buf *g;
	u16 from;

	if (unlikely(!ks))
		goto drop;
	from = sender_of(ks, skb);
	if (unlikely(from == GN_PEER_NONE)) {
		atomic64_inc(&ks->rx_strangers);
		goto drop;
	}
	/* A full queue refuses before the datagram is linearized. */
	if (atomic_read(&sk->sk_rmem_alloc) >= READ_ONCE(sk->sk_rcvbuf) ||
	    skb_queue_len(&ks->rxq) >= ks->rxq_max)
		goto overflow;
	if (unlikely(!rx_prepare(skb)))
		goto drop;
	if (!rx_charge(sk, skb))
		goto overflow;
	g = skb_gkbuf(skb);
	memset(g, 0, sizeof(*g));
	g->b.peer = from;
	g->rx = true;
	skb_queue_tail(&ks->rxq, skb);
	ks->kick(ks->kick_arg);
	return 0;
overflow:
	atomic64_inc(&ks->rx_overflow);
drop:
	atomic_inc(&sk->sk_drops);
	kfree_skb(skb);
	return 0;
}

/* A received skb as a gn_buf with one reference. */
static struct gn_buf *rx_buf(struct sk_buff *skb)
{
	struct gk_buf *g = skb_gkbuf(skb);

	g->b.data = skb->data;
	g->b.len = skb->len > U16_MAX ? 0 : skb->len;
	g->b.priv = skb;
	g->b.next = NULL;
	atomic_set(&g->refs, 1);
	return &g->b;
}

static bool chance(u32 permille)
{
	return permille && get_random_u32() % 1000 < permille;
}

/*
 * The next packet for the core, after fault injection: some dropped,
 * some duplicated (a clone, with its own control block), one at a time
 * held back behind the next.
 */
static struct sk_buff *rx_next(struct gk_sock *ks, struct sk_buff **dup)
{
	struct sk_buff *skb;

	*dup = NULL;
	for (;;) {
		skb = skb_dequeue(&ks->rxq);
		if (!skb) {
			skb = ks->late;
			ks->late = NULL;
			return skb;
		}
		/* Off the queue: its room is free again (rx_uncharge()). */
		skb_orphan(skb);
		if (chance(ks->faults.drop)) {
			kfree_skb(skb);
			continue;
		}
		if (!ks->late && chance(ks->faults.reorder)) {
			ks->late = skb;
			continue;
		}
		break;
	}
	if (chance(ks->faults.dup))
		*dup = skb_clone(skb, GFP_KERNEL);
	if (ks->late && !*dup) {
		*dup = ks->late;
		ks->late = NULL;
	}
	return skb;
}

/*
 * The core decrypts a packet in place, so its bytes must be its own: a
 * clone (a duplicate above, or one a packet tap holds) gets a private
 * copy of the data first. false: no memory for it, and @skb is freed.
 */
static bool rx_writable(struct sk_buff *skb)
{
	if (!skb_unclone(skb, GN_KERNEL_GFP))
		return true;
	kfree_skb(skb);
	return false;
}

static int gk_recv(void *tp, struct gn_buf **b, int max)
{
	struct gk_sock *ks = tp;
	int n = 0;

	while (n < max) {
		struct sk_buff *dup, *skb = rx_next(ks, &dup);

		if (!skb)
			break;
		if (rx_writable(skb))
			b[n++] = rx_buf(skb);
		if (dup && n < max) {
			if (rx_writable(dup))
				b[n++] = rx_buf(dup);
		} else if (dup) {
			skb_queue_head(&ks->rxq, dup);
		}
	}
	atomic_add(n, &ks->rx_out);
	return n;
}

/* ---- transmit buffers ---- */

static struct sk_buff *tx_skb_new(struct gk_sock *ks)
{
	struct sk_buff *skb = alloc_skb(ks->hroom + ks->max_pkt,
					GN_KERNEL_GFP);

	if (!skb)
		return NULL;
	skb_reserve(skb, ks->hroom);
	/* Clones may write their headers into the headroom. */
	__skb_header_release(skb);
	return skb;
}

static struct gk_buf *tx_buf_new(struct gk_sock *ks)
{
	struct gk_buf *g = kzalloc(sizeof(*g), GN_KERNEL_GFP);

	if (!g)
		return NULL;
	spin_lock(&ks->pool_lock);
	g->all = ks->all;
	ks->all = g;
	spin_unlock(&ks->pool_lock);
	return g;
}

/*
 * A tx buffer with one reference. Its skb is replaced when a clone of it
 * is still in flight: the bytes it sent must not change under it.
 */
static struct gn_buf *gk_get(void *tp)
{
	struct gk_sock *ks = tp;
	struct sk_buff *skb;
	struct gk_buf *g;

	spin_lock(&ks->pool_lock);
	g = ks->free;
	if (g)
		ks->free = (struct gk_buf *)g->b.next;
	spin_unlock(&ks->pool_lock);
	if (!g) {
		g = tx_buf_new(ks);
		if (!g)
			return NULL;
	}
	skb = g->b.priv;
	if (!skb || skb_cloned(skb)) {
		struct sk_buff *fresh = tx_skb_new(ks);

		if (!fresh) {
			spin_lock(&ks->pool_lock);
			g->b.next = (struct gn_buf *)ks->free;
			ks->free = g;
			spin_unlock(&ks->pool_lock);
			return NULL;
		}
		consume_skb(skb);
		g->b.priv = fresh;
		skb = fresh;
	}
	g->b.data = skb->data;
	g->b.len = 0;
	g->b.peer = 0;
	g->b.next = NULL;
	atomic_set(&g->refs, 1);
	return &g->b;
}

static void gk_hold(void *tp, struct gn_buf *b)
{
	atomic_inc(&to_gkbuf(b)->refs);
}

static void gk_put(void *tp, struct gn_buf *b)
{
	struct gk_sock *ks = tp;
	struct gk_buf *g = to_gkbuf(b);

	if (!atomic_dec_and_test(&g->refs))
		return;
	if (g->rx) {
		atomic_dec(&ks->rx_out);
		consume_skb(b->priv);
		return;
	}
	spin_lock(&ks->pool_lock);
	g->b.next = (struct gn_buf *)ks->free;
	ks->free = g;
	spin_unlock(&ks->pool_lock);
}

/* ---- transmit ---- */

/* An skb that carries @b's bytes: a clone of its own, or a copy. */
static struct sk_buff *tx_skb_of(struct gk_sock *ks, struct gn_buf *b)
{
	struct sk_buff *skb = b->priv;

	if (skb_cloned(skb))
		return pskb_copy(skb, GFP_ATOMIC);
	__skb_trim(skb, 0);
	__skb_put(skb, b->len);
	return skb_clone(skb, GFP_ATOMIC);
}

static int xmit4(struct gk_sock *ks, struct gk_peer *p, struct sk_buff *skb)
{
	struct sock *sk = ks->sock->sk;
	struct flowi4 fl4 = {
		.saddr = inet_sk(sk)->inet_saddr,
		.daddr = p->addr4,
		.fl4_dport = p->port,
		.fl4_sport = ks->peers[ks->rank].port,
		.flowi4_proto = IPPROTO_UDP,
		.flowi4_oif = sk->sk_bound_dev_if,
	};
	struct rtable *rt;

	rt = dst_cache_get_ip4(&p->cache, &fl4.saddr);
	if (!rt) {
		rt = ip_route_output_flow(sock_net(sk), &fl4, sk);
		if (IS_ERR(rt)) {
			kfree_skb(skb);
			return PTR_ERR(rt);
		}
		dst_cache_set_ip4(&p->cache, &rt->dst, fl4.saddr);
	}
	skb->ignore_df = 1;
	udp_tunnel_xmit_skb(rt, sk, skb, fl4.saddr, fl4.daddr, 0,
			    ip4_dst_hoplimit(&rt->dst), 0, fl4.fl4_sport,
			    fl4.fl4_dport, false, false);
	return 0;
}

#if IS_ENABLED(CONFIG_IPV6)
static int xmit6(struct gk_sock *ks, struct gk_peer *p, struct sk_buff *skb)
{
	struct sock *sk = ks->sock->sk;
	struct flowi6 fl6 = {
		.saddr = sk->sk_v6_rcv_saddr,
		.daddr = p->addr6,
		.fl6_dport = p->port,
		.fl6_sport = ks->peers[ks->rank].port,
		.flowi6_proto = IPPROTO_UDP,
		.flowi6_oif = sk->sk_bound_dev_if,
	};
	struct dst_entry *dst;

	dst = dst_cache_get_ip6(&p->cache, &fl6.saddr);
	if (!dst) {
		dst = ipv6_stub->ipv6_dst_lookup_flow(sock_net(sk), sk, &fl6,
						      NULL);
		if (IS_ERR(dst)) {
			kfree_skb(skb);
			return PTR_ERR(dst);
		}
		dst_cache_set_ip6(&p->cache, dst, &fl6.saddr);
	}
	skb->ignore_df = 1;
	udp_tunnel6_xmit_skb(dst, sk, skb, skb->dev, &fl6.saddr, &fl6.daddr,
			     0, ip6_dst_hoplimit(dst), 0, fl6.fl6_sport,
			     fl6.fl6_dport, false);
	return 0;
}
#else
static int xmit6(struct gk_sock *ks, struct gk_peer *p, struct sk_buff *skb)
{
	kfree_skb(skb);
	return -EAFNOSUPPORT;
}
#endif

/*
 * The socket is not charged for what it sends, so there is no
 * back-pressure here: a queue that drops is loss, which the core's
 * retransmission and congestion window answer. A peer without a route
 * is left to the retransmission timer, as the UDP path leaves it.
 */
static int gk_send(void *tp, struct gn_buf *const *b, int n)
{
	struct gk_sock *ks = tp;
	int i;

	rcu_read_lock_bh();
	for (i = 0; i < n; i++) {
		struct gk_peer *p;
		struct sk_buff *skb;

		if (unlikely(b[i]->peer >= ks->world || !b[i]->len ||
			     b[i]->len > ks->max_pkt))
			continue;
		p = &ks->peers[b[i]->peer];
		skb = tx_skb_of(ks, b[i]);
		if (!skb) {
			rcu_read_unlock_bh();
			return i ? i : -ENOMEM;
		}
		if ((p->family == AF_INET ? xmit4(ks, p, skb) :
		     xmit6(ks, p, skb)))
			ks->tx_errors++;
	}
	rcu_read_unlock_bh();
	return n;
}

/* The worker sleeps on its own wait queue; see worker.c. */
static void gk_wake(void *tp)
{
	struct gk_sock *ks = tp;

	ks->kick(ks->kick_arg);
}

/* Closing is gk_sock_shutdown() and gk_sock_free(), in the module's order. */
static void gk_close(void *tp)
{
}

static const struct gn_transport_ops gk_ops = {
	.name = "kmod",
	.get = gk_get,
	.hold = gk_hold,
	.put = gk_put,
	.send = gk_send,
	.recv = gk_recv,
	.wake = gk_wake,
	.close = gk_close,
};

/* ---- open and close ---- */

static int sock_bind(struct gk_sock *ks, const struct gradnet_peer *self)
{
	struct udp_port_cfg cfg = {
		.family = self->family,
		.local_udp_port = (__force __be16)self->port,
		.use_udp_checksums = true,
		.use_udp6_tx_checksums = true,
		.use_udp6_rx_checksums = true,
		.ipv6_v6only = 1,
	};
	struct udp_tunnel_sock_cfg tcfg = {
		.sk_user_data = ks,
		.encap_type = 1,
		.encap_rcv = gk_encap_rcv,
	};
	int err;

	if (self->family == AF_INET)
		memcpy(&cfg.local_ip, self->addr, 4);
	else
		memcpy(&cfg.local_ip6, self->addr, 16);
	err = udp_sock_create(ks->net, &cfg, &ks->sock);
	if (err)
		return err;
	/* Queued skbs charge it until the queue is purged, after release. */
	ks->sk = ks->sock->sk;
	sock_hold(ks->sk);
	WRITE_ONCE(ks->sk->sk_rcvbuf, ks->rcvbuf);
	setup_udp_tunnel_sock(ks->net, ks->sock, &tcfg);
	return 0;
}

/**
 * gk_sock_open() - bind this rank's tunnel socket and make the transport
 * @out: the transport, with its table in (*out)->tp
 * @net: the namespace to bind in; a reference is taken
 * @peers: every rank's address (checked by the caller: one family)
 * @world, @rank: the job's size and this rank
 * @max_pkt: the largest packet, tag included
 * @kick, @kick_arg: called (also in softirq) when the worker has work
 * @msg, @len: why it failed
 *
 * Return: 0 or -errno (-EADDRINUSE, -EADDRNOTAVAIL from the bind).
 */
int gk_sock_open(struct gk_sock **out, struct net *net,
		 const struct gradnet_peer *peers, int world, int rank,
		 u32 max_pkt, void (*kick)(void *), void *kick_arg,
		 char *msg, size_t len)
{
	struct gk_sock *ks;
	char name[64];
	int err;

	ks = kzalloc(sizeof(*ks), GN_KERNEL_GFP);
	if (!ks)
		return -ENOMEM;
	ks->net = get_net(net);
	ks->world = world;
	ks->rank = rank;
	ks->max_pkt = max_pkt;
	ks->hroom = ALIGN(LL_MAX_HEADER + sizeof(struct ipv6hdr) +
			  sizeof(struct udphdr), 64);
	ks->rxq_max = max(READ_ONCE(gk_rx_queue_max), 64u);
	ks->rcvbuf = clamp(READ_ONCE(gk_rx_queue_bytes), 65536u, (u32)INT_MAX);
	ks->kick = kick;
	ks->kick_arg = kick_arg;
	gk_faults_get(&ks->faults);
	skb_queue_head_init(&ks->rxq);
	spin_lock_init(&ks->pool_lock);
	err = peers_init(ks, peers);
	if (err)
		goto out_free;
	err = sock_bind(ks, &peers[rank]);
	if (err) {
		gk_peer_name(&peers[rank], name, sizeof(name));
		snprintf(msg, len, "cannot bind rank %d's address %s: error %d",
			 rank, name, err);
		goto out_free;
	}
	ks->tp.ops = &gk_ops;
	ks->tp.state = ks;
	ks->tp.caps.max_pkt = max_pkt;
	ks->tp.caps.flags = GN_TP_CSUM;
	*out = ks;
	return 0;

out_free:
	gk_sock_free(ks);
	return err;
}

/**
 * gk_sock_shutdown() - close the socket: no receive callback runs after
 * @ks: the transport; its buffers stay valid for the core
 */
void gk_sock_shutdown(struct gk_sock *ks)
{
	if (!ks || !ks->sock)
		return;
	/* Clears sk_user_data and waits out encap_rcv callers (RCU). */
	udp_tunnel_sock_release(ks->sock);
	ks->sock = NULL;
	skb_queue_purge(&ks->rxq);
	kfree_skb(ks->late);
	ks->late = NULL;
	sock_put(ks->sk);
	ks->sk = NULL;
}

/**
 * gk_sock_free() - free the transport, after the core that used it
 * @ks: shut down, or never bound; every buffer goes with it
 */
void gk_sock_free(struct gk_sock *ks)
{
	struct gk_buf *g, *next;
	int out;

	if (!ks)
		return;
	gk_sock_shutdown(ks);
	for (g = ks->all; g; g = next) {
		next = g->all;
		consume_skb(g->b.priv);
		kfree(g);
	}
	if (atomic64_read(&ks->rx_overflow) || ks->tx_errors ||
	    atomic64_read(&ks->rx_strangers))
		pr_info("gradnet: rank %d: %lld packets dropped on a full receive queue (rx_queue_bytes, rx_queue_max), %lld from no rank of the job, %llu sends without a route\n",
			ks->rank, (long long)atomic64_read(&ks->rx_overflow),
			(long long)atomic64_read(&ks->rx_strangers),
			ks->tx_errors);
	out = atomic_read(&ks->rx_out);
	if (out)
		pr_err("gradnet: %d received packets were not given back by the core\n",
		       out);
	peers_free(ks);
	put_net(ks->net);
	kfree(ks);
}
