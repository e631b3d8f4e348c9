// SPDX-License-Identifier: MIT
/*
 * transport.c - gradnet's DPDK poll-mode transport: the table of
 * lib/transport/transport.h over one ethdev port with one queue pair or
 * several (one per codec worker where the port has RSS), putting on the
 * wire the same Ethernet/IPv4/UDP datagrams as the UDP-socket path.
 *
 * Buffers are mbufs. A gn_buf lives in its mbuf's private area, and its
 * data points GN_WIRE_IPUDP + 14 bytes past where the frame starts, so the
 * packer encodes straight into the mbuf and send only writes the headers
 * in front. The gn_buf's reference count is the mbuf's: hold is
 * rte_mbuf_refcnt_update(), put is rte_pktmbuf_free(), and send takes one
 * more reference for the tx queue, so the core keeps its own and a
 * retransmission sends the very same mbuf again. Headers are written once
 * per mbuf (a stamp says for which peer and length), so a resend never
 * writes bytes that a NIC may still be reading from an earlier one.
 *
 * Two pools: tx buffers come from one, the rx queue fills from the other.
 * The core packs a whole step into tx buffers before it is acknowledged,
 * and with one pool it could leave the rx queue no mbuf for the very ACKs
 * that free them. Received packets that the core holds (a slice waiting
 * for its turn) stay in their rx mbufs, unless the rx pool runs low: then
 * packets are copied into tx buffers as they are handed out, so the rx
 * queue never starves.
 *
 * Receive: rx bursts are filtered (Ethernet to us, IPv4 without options
 * beyond the header length, no fragments, UDP to our port, lengths and
 * checksums checked) and the sender resolved to a rank by (IP, port);
 * ARP requests for our address are answered; everything else is freed.
 *
 * Threads: send, recv and the ARP replies run under the core's lock, so
 * the tx queues have one user at a time; with several queues, recv
 * reads each rx queue in a part of its own on the codec workers, every
 * part writing only its queue's state (struct dtp_rxq); wait runs in the
 * polling thread only, wake in any; get, hold and put in any (the pools
 * are multi-producer, multi-consumer rings and mbuf reference counts are
 * atomic).
 */
#include <errno.h>
#include <linux/futex.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <rte_alarm.h>
#include <rte_arp.h>
#include <rte_cycles.h>
#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_ethdev.h>
#include <rte_interrupts.h>
#include <rte_ether.h>
#include <rte_ip.h>
#include <rte_lcore.h>
#include <rte_log.h>
#include <rte_mbuf.h>
#include <rte_mbuf_pool_ops.h>
#include <rte_mempool.h>
#include <rte_udp.h>

#include "csum.h"
#include "dtp.h"
#include "gradnet/wire.h"

#define ETH_LEN RTE_ETHER_HDR_LEN
#define HDRS (ETH_LEN + GN_WIRE_IPUDP)	/* Ethernet + IPv4 + UDP: 42 */
/*
 * The payload starts at a cache line of the data room, so the packer's
 * stores are aligned; the frame starts HDRS before it, which puts the IP
 * header on a 4-byte boundary too.
 */
#define PAYLOAD_OFF RTE_PKTMBUF_HEADROOM
#define RX_DESC 1024
#define TX_DESC 1024
/* The rx pool: for one queue, and 2 * RX_DESC more for each other. */
#define RX_POOL 8191
/* Below this many free rx mbufs, received packets are copied out. */
#define RX_LOW 2048
/* Packets between two reads of the rx pool's fill. */
#define RX_LOW_EVERY 64
#define TX_POOL_MAX 131071
/* The tx pool's share of memory when its size is not given (rounded up). */
#define TX_POOL_BYTES (256u << 20)
#define POOL_CACHE 256
/* Idle wait: poll this long before the first sleep, then sleep from
 * SLEEP_MIN_NS doubling up to poll_us. */
#define SPIN_NS 20000ull
#define SLEEP_MIN_NS 50000ull
#define NSEC_PER_SEC 1000000000ull
/* A link down this long gets its port restarted (see link_watch()). */
#define LINK_CHECK_MS 100
#define LINK_RESTART_MS 1000

_Static_assert(RTE_PKTMBUF_HEADROOM >= HDRS, "no room for the headers");
_Static_assert(GN_WIRE_IPUDP == sizeof(struct rte_ipv4_hdr) +
	       sizeof(struct rte_udp_hdr), "wire.h and DPDK disagree");

/* What the core knows of an mbuf, in its private area. */
struct mbuf_priv {
	struct gn_buf b;
	u16 hdr_peer;			/* the headers in front are for this peer */
	u16 hdr_len;			/* and this payload length */
	u32 hdr_gen;			/* and the peers' MACs of this mac_gen */
};

/*
 * One context per port it owns, or per queue of an application's port:
 * a queue has one user.
 */
static pthread_mutex_t ports_lock = PTHREAD_MUTEX_INITIALIZER;
static bool port_busy[RTE_MAX_ETHPORTS];
static bool port_ours[RTE_MAX_ETHPORTS];	/* configured by gradnet */
static bool port_gone[RTE_MAX_ETHPORTS];	/* closed by gradnet */
static u64 queue_busy[RTE_MAX_ETHPORTS][RTE_MAX_QUEUES_PER_PORT / 64];

static bool queues_idle(u16 port)
{
	u32 i;

	for (i = 0; i < RTE_DIM(queue_busy[port]); i++)
		if (queue_busy[port][i])
			return false;
	return true;
}

/* Claim @port (@queue < 0) or one queue of it; false if taken. */
static bool port_claim(u16 port, int queue)
{
	bool ok;

	pthread_mutex_lock(&ports_lock);
	if (queue < 0) {
		ok = !port_busy[port] && queues_idle(port);
		port_busy[port] |= ok;
	} else {
		ok = !port_busy[port] &&
		     !(queue_busy[port][queue / 64] & (1ull << (queue % 64)));
		if (ok)
			queue_busy[port][queue / 64] |= 1ull << (queue % 64);
	}
	pthread_mutex_unlock(&ports_lock);
	return ok;
}

static void port_release(u16 port, int queue)
{
	pthread_mutex_lock(&ports_lock);
	if (queue < 0)
		port_busy[port] = false;
	else
		queue_busy[port][queue / 64] &= ~(1ull << (queue % 64));
	pthread_mutex_unlock(&ports_lock);
}

/* Did a context of this process close @port (net_af_xdp)? */
static bool port_closed(u16 port)
{
	bool gone;

	if (port >= RTE_MAX_ETHPORTS)
		return false;
	pthread_mutex_lock(&ports_lock);
	gone = port_gone[port];
	pthread_mutex_unlock(&ports_lock);
	return gone;
}

/*
 * When the process ends (or the library is unloaded), close the ports
 * gradnet configured and no context holds. A port only stopped keeps
 * what its driver set up outside the process: net_af_xdp's XDP program
 * stays attached to the interface after the process is gone, and its
 * sockets' libxdp state is never freed. A port a context still holds is
 * left alone: a thread of that context may still poll it.
 */
__attribute__((destructor)) static void ports_close(void)
{
	u16 port;

	pthread_mutex_lock(&ports_lock);
	for (port = 0; port < RTE_MAX_ETHPORTS; port++) {
		if (port_ours[port] && !port_busy[port]) {
			rte_eth_dev_close(port);
			port_ours[port] = false;
		}
	}
	pthread_mutex_unlock(&ports_lock);
}

/*
 * Stop @port on the EAL's interrupt thread and wait for it. Drivers
 * handle their peers' control messages on that thread: net_memif tears
 * the link down there when its peer leaves (unmaps and frees the shared
 * regions), and again in the thread that stops the port, with no lock
 * between the two, so a port stopped while its peer was leaving freed the
 * same memory twice (the EAL's "Invalid memory", or a crash in rte_free).
 * An alarm runs on that thread, one handler after another, so the stop
 * and the driver's handler never overlap.
 */
struct port_stop {
	u16 port;
	bool done;
	pthread_mutex_t lock;
	pthread_cond_t cond;
};

static void port_stop_run(void *arg)
{
	struct port_stop *ps = arg;

	rte_eth_dev_stop(ps->port);
	pthread_mutex_lock(&ps->lock);
	ps->done = true;
	pthread_cond_signal(&ps->cond);
	pthread_mutex_unlock(&ps->lock);
}

static void port_stop(u16 port)
{
	struct port_stop ps = {
		.port = port,
		.lock = PTHREAD_MUTEX_INITIALIZER,
		.cond = PTHREAD_COND_INITIALIZER,
	};

	/* On that thread already, or without one: stop here. */
	if (rte_thread_is_intr() || rte_eal_alarm_set(1, port_stop_run, &ps)) {
		rte_eth_dev_stop(port);
		return;
	}
	pthread_mutex_lock(&ps.lock);
	while (!ps.done)
		pthread_cond_wait(&ps.cond, &ps.lock);
	pthread_mutex_unlock(&ps.lock);
}

static unsigned int pool_seq;

static struct mbuf_priv *priv_of(struct rte_mbuf *m)
{
	return rte_mbuf_to_priv(m);
}

static struct rte_mbuf *mbuf_of(struct gn_buf *b)
{
	return b->priv;
}

/* @m's gn_buf, pointing at the payload area, one reference (the mbuf's). */
static struct gn_buf *buf_init(struct rte_mbuf *m, u8 *data, u16 len)
{
	struct mbuf_priv *p = priv_of(m);

	p->b.data = data;
	p->b.len = len;
	p->b.peer = 0;
	p->b.refs = 0;
	p->b.next = NULL;
	p->b.priv = m;
	p->hdr_peer = GN_PEER_NONE;
	return &p->b;
}

static struct gn_buf *dtp_get(void *tp)
{
	struct dtp *d = tp;
	struct rte_mbuf *m = rte_pktmbuf_alloc(d->tx_pool);

	if (!m)
		return NULL;
	return buf_init(m, (u8 *)m->buf_addr + PAYLOAD_OFF, 0);
}

static void dtp_hold(void *tp, struct gn_buf *b)
{
	(void)tp;
	rte_mbuf_refcnt_update(mbuf_of(b), 1);
}

static void dtp_put(void *tp, struct gn_buf *b)
{
	(void)tp;
	rte_pktmbuf_free(mbuf_of(b));
}

/* ---- senders by address ---- */

static u32 addr_hash(u32 ip, u16 port)
{
	u32 h = (ip ^ ((u32)port << 16 | port)) * 0x9e3779b1u;

	return h ^ (h >> 16);
}

static u16 peer_of(const struct dtp *d, u32 ip, u16 port)
{
	u32 i;

	for (i = addr_hash(ip, port) & d->peer_mask;
	     d->peer_tab[i] != GN_PEER_NONE; i = (i + 1) & d->peer_mask) {
		const struct gn_dpdk_peer *p = &d->peers[d->peer_tab[i]];

		if (p->ip == ip && p->port == port)
			return d->peer_tab[i];
	}
	return GN_PEER_NONE;
}

static int peers_init(struct dtp *d, const struct gn_dpdk_peer *peers,
		      int world)
{
	u32 size = 16;
	int r;

	while (size < 2u * (u32)world)
		size <<= 1;
	d->peers = calloc((size_t)world, sizeof(*d->peers));
	d->peer_tab = malloc(size * sizeof(*d->peer_tab));
	if (!d->peers || !d->peer_tab)
		return -ENOMEM;
	memcpy(d->peers, peers, (size_t)world * sizeof(*peers));
	d->peer_mask = size - 1;
	memset(d->peer_tab, 0xff, size * sizeof(*d->peer_tab));
	for (r = 0; r < world; r++) {
		u32 i;

		/* Of two ranks at one address the first gets its packets. */
		if (peer_of(d, peers[r].ip, peers[r].port) != GN_PEER_NONE)
			continue;
		for (i = addr_hash(peers[r].ip, peers[r].port) & d->peer_mask;
		     d->peer_tab[i] != GN_PEER_NONE; i = (i + 1) & d->peer_mask)
			;
		d->peer_tab[i] = (u16)r;
	}
	return 0;
}

/* ---- send ---- */

/* The UDP checksum of a datagram of @ulen bytes, 0xffff for 0 (RFC 768). */
static rte_be16_t udp_csum(const struct rte_ipv4_hdr *ip,
			   const struct rte_udp_hdr *udp, u16 ulen)
{
	u64 ph = gn_dpdk_csum_words32(&ip->src_addr, 2) +
		 gn_dpdk_csum_be16(IPPROTO_UDP) + gn_dpdk_csum_be16(ulen);
	u16 sum = (u16)~gn_dpdk_csum(gn_dpdk_csum_fold(ph), udp, ulen);

	return rte_cpu_to_be_16(sum ? sum : 0xffff);
}

/*
 * The Ethernet, IPv4 and UDP headers in front of @p's payload, for its
 * peer. IP ID 0 with DF set: the datagram is never fragmented (RFC 6864).
 * The UDP checksum is always valid, kernel peers check it: computed here
 * over the payload when the port does not offload it, once per mbuf.
 */
static void frame_build(struct dtp *d, struct rte_mbuf *m, struct mbuf_priv *p)
{
	const struct gn_dpdk_peer *to = &d->peers[p->b.peer];
	struct rte_ether_hdr *eth = (void *)(p->b.data - HDRS);
	struct rte_ipv4_hdr *ip = (void *)(eth + 1);
	struct rte_udp_hdr *udp = (void *)(ip + 1);
	u16 len = p->b.len;

	memcpy(&eth->dst_addr, to->mac, RTE_ETHER_ADDR_LEN);
	rte_ether_addr_copy(&d->mac, &eth->src_addr);
	eth->ether_type = rte_cpu_to_be_16(RTE_ETHER_TYPE_IPV4);
	ip->version_ihl = RTE_IPV4_VHL_DEF;
	ip->type_of_service = 0;
	ip->total_length = rte_cpu_to_be_16(GN_WIRE_IPUDP + len);
	ip->packet_id = 0;
	ip->fragment_offset = rte_cpu_to_be_16(RTE_IPV4_HDR_DF_FLAG);
	ip->time_to_live = 64;
	ip->next_proto_id = IPPROTO_UDP;
	ip->hdr_checksum = 0;
	ip->src_addr = d->ip;
	ip->dst_addr = to->ip;
	udp->src_port = d->udp_port;
	udp->dst_port = to->port;
	udp->dgram_len = rte_cpu_to_be_16(sizeof(*udp) + len);
	udp->dgram_cksum = 0;
	m->data_off = PAYLOAD_OFF - HDRS;
	m->data_len = HDRS + len;
	m->pkt_len = HDRS + len;
	m->l2_len = ETH_LEN;
	m->l3_len = sizeof(*ip);
	if (d->tx_csum) {
		m->ol_flags = RTE_MBUF_F_TX_IPV4 | RTE_MBUF_F_TX_IP_CKSUM |
			      RTE_MBUF_F_TX_UDP_CKSUM;
		udp->dgram_cksum = rte_ipv4_phdr_cksum(ip, m->ol_flags);
	} else {
		m->ol_flags = 0;
		ip->hdr_checksum = rte_cpu_to_be_16((u16)~gn_dpdk_csum_fold(
			gn_dpdk_csum_words32(ip, sizeof(*ip) / 4)));
		udp->dgram_cksum = udp_csum(ip, udp, sizeof(*udp) + len);
	}
	p->hdr_peer = p->b.peer;
	p->hdr_len = len;
	p->hdr_gen = d->mac_gen;
}

/*
 * The tx queue of frames to @peer. A peer's frames keep to one queue, as
 * RSS keeps a flow to one rx queue: loss detection takes a packet for
 * lost once a packet sent a reordering window after it is acknowledged,
 * and a PONG answers only for what arrived before its PING (send.c), so
 * one peer's frames spread over queues that fill and drain apart come
 * out of order, and the peer resends what had arrived (README.md,
 * "Queues"). A rank's peers spread over the queues.
 */
static u16 tx_queue(const struct dtp *d, u16 peer)
{
	return (u16)(d->queue + peer % d->nq);
}

static int dtp_send(void *tp, struct gn_buf *const *b, int n)
{
	struct dtp *d = tp;
	int done = 0;

	if (d->stopped)
		return 0;
	while (done < n) {
		int k = 0, at = done, r, i;
		u16 q = 0, xq;

		while (at < n && k < d->tx_cap) {
			struct gn_buf *x = b[at];
			struct rte_mbuf *m = mbuf_of(x);
			struct mbuf_priv *p = priv_of(m);

			/* No such rank: nowhere to send it, the core's bug. */
			if (unlikely(x->peer >= d->world || x->peer == d->rank ||
				     x->len > d->max_pkt)) {
				if (k)
					break;
				done = ++at;
				continue;
			}
			/* A burst is for one queue. */
			xq = tx_queue(d, x->peer);
			if (k && xq != q)
				break;
			q = xq;
			/*
			 * Headers are redone after a peer moved (neigh.c),
			 * unless the tx ring may still hold the mbuf from an
			 * earlier send: then it goes as it is, to the old
			 * address, and a later resend gets the new one.
			 */
			if (p->hdr_peer != x->peer || p->hdr_len != x->len ||
			    (unlikely(p->hdr_gen != d->mac_gen) &&
			     rte_mbuf_refcnt_read(m) == 1))
				frame_build(d, m, p);
			/* The tx queue's reference; the core keeps its own. */
			rte_mbuf_refcnt_update(m, 1);
			d->tx[k++] = m;
			at++;
		}
		if (!k)
			continue;
		r = rte_eth_tx_burst(d->port, q, d->tx, (u16)k);
		d->rxq[q - d->queue].tx_frames += (u64)r;
		/*
		 * A full ring is back-pressure: the rest go back to the core,
		 * which keeps its reference (ours is dropped), and the next
		 * bursts are as small as what fitted, growing again
		 * as they fit: a core that offers the same packets again and
		 * again to a full ring pays for a few, not for 64 each time.
		 */
		for (i = r; i < k; i++)
			rte_pktmbuf_free(d->tx[i]);
		done += r;
		if (r < k) {
			d->tx_cap = r ? r : 1;
			break;
		}
		if (d->tx_cap < BURST)
			d->tx_cap = d->tx_cap * 2 < BURST ? d->tx_cap * 2 : BURST;
	}
	if (done)
		d->active_tsc = rte_get_timer_cycles();
	return done;
}

/* ---- receive ---- */

/* Bursts read per call at most, so a flood of others' frames ends it. */
#define RX_BURSTS 4

/* What the port verified of a checksum, in filter.h's terms. */
static unsigned int csum_state(u64 flags, u64 good, u64 bad)
{
	if (flags == good)
		return GN_DCS_GOOD;
	return flags == bad ? GN_DCS_BAD : GN_DCS_UNKNOWN;
}

/*
 * The UDP payload of @m if it is a datagram to us, else NULL: ARP handed
 * to neigh.c (with several queues, kept in @q for after the round),
 * everything else counted by reason (filter.c checks every length
 * against the bytes the mbuf holds, in one segment). With several queues
 * it runs on one queue's worker and writes only @q and @m (and sets a
 * peer's doubt flag, which nothing else writes meanwhile).
 */
static u8 *rx_filter(struct dtp *d, struct dtp_rxq *q, struct rte_mbuf *m,
		     u16 *len, u16 *peer, bool *keep)
{
	u8 *frame = rte_pktmbuf_mtod(m, u8 *);
	struct gn_dpdk_rx rx;

	if (unlikely(m->nb_segs != 1)) {
		q->drops[GN_DDROP_SEGMENTED]++;
		return NULL;
	}
	switch (gn_dpdk_classify(&d->filt, frame, m->data_len,
				 csum_state(m->ol_flags & RTE_MBUF_F_RX_IP_CKSUM_MASK,
					    RTE_MBUF_F_RX_IP_CKSUM_GOOD,
					    RTE_MBUF_F_RX_IP_CKSUM_BAD),
				 csum_state(m->ol_flags & RTE_MBUF_F_RX_L4_CKSUM_MASK,
					    RTE_MBUF_F_RX_L4_CKSUM_GOOD,
					    RTE_MBUF_F_RX_L4_CKSUM_BAD), &rx)) {
	case GN_DRX_UDP:
		*len = rx.len;
		*peer = peer_of(d, rx.src_ip, rx.src_port);
		/* Moved, or forged: ask ARP (neigh.c). */
		if (unlikely(*peer < d->world &&
			     memcmp(frame + 6, d->peers[*peer].mac,
				    RTE_ETHER_ADDR_LEN)) &&
		    !d->neigh[*peer].fixed) {
			__atomic_store_n(&d->neigh[*peer].doubt, true,
					 __ATOMIC_RELAXED);
			q->doubt = true;
		}
		return frame + rx.off;
	case GN_DRX_ARP_REQUEST:
	case GN_DRX_ARP_REPLY:
	case GN_DRX_ARP_ANNOUNCE:
		/* One queue: at once, before the datagrams behind it. */
		if (d->nq == 1) {
			dtp_arp_in(d, &rx);
			return NULL;
		}
		/* Room: rx_take() stops when it is full. */
		q->arp_rx[q->arp_n] = rx;
		q->arp[q->arp_n++] = m;
		*keep = true;
		return NULL;
	default:
		q->drops[rx.drop]++;
		return NULL;
	}
}

/*
 * Few mbufs left in @mp, the pool an rx queue fills from: ours, or the
 * application's when the port is (a quarter of it, if it is small).
 */
static bool pool_low(struct rte_mempool *mp)
{
	return rte_mempool_avail_count(mp) < RTE_MIN((u32)RX_LOW, mp->size / 4);
}

/*
 * Whether the pool @m came from runs low, read again every RX_LOW_EVERY
 * packets: a read walks every lcore's cache (some 670 instructions), and
 * RX_LOW_EVERY is far below the RX_LOW mbufs of margin.
 */
static bool rx_pool_low(struct dtp_rxq *q, struct rte_mbuf *m)
{
	if (unlikely(!q->low_in--)) {
		q->low_in = RX_LOW_EVERY - 1;
		q->low = pool_low(m->pool);
	}
	return q->low;
}

/* @m as a gn_buf for the core, or NULL if it was not for us. */
static struct gn_buf *rx_one(struct dtp *d, struct dtp_rxq *q,
			     struct rte_mbuf *m)
{
	struct gn_buf *b;
	struct rte_mbuf *c;
	u16 len, peer;
	bool keep = false;
	u8 *data = rx_filter(d, q, m, &len, &peer, &keep);

	if (!data) {
		if (!keep)
			rte_pktmbuf_free(m);
		return NULL;
	}
	/* The rx pool runs low: the core may hold this one for long. */
	if (rx_pool_low(q, m) && (c = rte_pktmbuf_alloc(d->tx_pool))) {
		b = buf_init(c, (u8 *)c->buf_addr + PAYLOAD_OFF, len);
		memcpy(b->data, data, len);
		rte_pktmbuf_free(m);
	} else {
		b = buf_init(m, data, len);
	}
	b->peer = peer;
	return b;
}

static bool rx_fill(struct dtp *d, struct dtp_rxq *q)
{
	q->rx_i = 0;
	q->rx_n = d->stopped ? 0 :
		  rte_eth_rx_burst(d->port, (u16)(d->queue + (q - d->rxq)),
				   q->rx, BURST);
	q->rx_frames += q->rx_n;
	return q->rx_n;
}

/* Up to @max packets of @q for the core in @out, reading @bursts at most. */
static int rx_take(struct dtp *d, struct dtp_rxq *q, struct gn_buf **out,
		   int max, int bursts)
{
	int n = 0;

	while (n < max && q->arp_n < BURST) {
		if (q->rx_i == q->rx_n && (!bursts-- || !rx_fill(d, q)))
			break;
		out[n] = rx_one(d, q, q->rx[q->rx_i++]);
		n += out[n] != NULL;
	}
	return n;
}

/* One queue's part of a receive round, on a codec worker. */
static void rx_part(void *arg, u32 part)
{
	struct dtp *d = arg;
	struct dtp_rxq *q = &d->rxq[part];

	q->ready_i = 0;
	q->ready_n = (u16)rx_take(d, q, q->ready, BURST, RX_BURSTS);
}

/* Packets the last round left, queue by queue, up to @max. */
static int rx_ready(struct dtp *d, struct gn_buf **b, int max)
{
	int n = 0, i;

	for (i = 0; i < d->nq && n < max; i++) {
		struct dtp_rxq *q = &d->rxq[i];

		while (q->ready_i < q->ready_n && n < max)
			b[n++] = q->ready[q->ready_i++];
	}
	return n;
}

/*
 * Several queues: every queue's burst is read and filtered at once, a
 * part per queue on the codec workers (memif copies each frame out of
 * its ring in the rx burst, and checksums are checked in software where
 * the port does not), then handed out; a round starts when the last
 * one's packets are all out.
 */
static int rx_round(struct dtp *d, struct gn_buf **b, int max)
{
	int n = rx_ready(d, b, max), i;

	if (n)
		return n;
	if (d->run)
		d->run(d->run_arg, rx_part, d, d->nq);
	else
		for (i = 0; i < d->nq; i++)
			rx_part(d, (u32)i);
	return rx_ready(d, b, max);
}

/* What the parts left for the core's thread: ARP, peers in doubt. */
static void rx_after(struct dtp *d)
{
	bool doubt = false;
	int i, k;

	for (i = 0; i < d->nq; i++) {
		struct dtp_rxq *q = &d->rxq[i];

		for (k = 0; k < q->arp_n; k++) {
			dtp_arp_in(d, &q->arp_rx[k]);
			rte_pktmbuf_free(q->arp[k]);
		}
		q->arp_n = 0;
		doubt |= q->doubt;
		q->doubt = false;
	}
	d->doubt |= doubt;
}

/*
 * A port whose link stays down is stopped and started again: a memif
 * client that connected before its server's port started was turned away
 * and does not try again by itself, and a NIC may recover the same way.
 * Called under the core's lock, so no send runs meanwhile.
 */
static void link_watch(struct dtp *d)
{
	u64 now = rte_get_timer_cycles();
	struct rte_eth_link link;

	if (d->shared)
		return;
	if (now - d->link_check_tsc < d->tsc_hz / 1000 * LINK_CHECK_MS)
		return;
	d->link_check_tsc = now;
	if (rte_eth_link_get_nowait(d->port, &link) ||
	    link.link_status == RTE_ETH_LINK_UP) {
		d->link_down_tsc = 0;
		return;
	}
	if (!d->link_down_tsc) {
		d->link_down_tsc = now;
		return;
	}
	if (now - d->link_down_tsc < d->tsc_hz / 1000 * LINK_RESTART_MS)
		return;
	d->link_down_tsc = now;
	port_stop(d->port);
	/* A stopped port is not polled (DPDK complains) until it starts. */
	if (!rte_eth_dev_start(d->port)) {
		d->stopped = false;
	} else if (!d->stopped) {
		d->stopped = true;
		fprintf(stderr, "gradnet: dpdk: port %u does not restart\n",
			d->port);
	}
}

static int dtp_recv(void *tp, struct gn_buf **b, int max)
{
	struct dtp *d = tp;
	int n;

	link_watch(d);
	n = d->nq == 1 ? rx_take(d, d->rxq, b, max, RX_BURSTS) :
			 rx_round(d, b, max);
	rx_after(d);
	if (unlikely(d->doubt))
		dtp_neigh_doubt(d, rte_get_timer_cycles());
	dtp_ctl_flush(d);
	if (n)
		d->active_tsc = rte_get_timer_cycles();
	return n;
}

/* ---- idle ---- */

static u64 mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (u64)ts.tv_sec * NSEC_PER_SEC + (u64)ts.tv_nsec;
}

/*
 * The poll loop's thread runs on an lcore's CPUs. With GN_DPDK_LCORE
 * naming a worker lcore of the EAL that runs nothing, the loop is that
 * lcore's function (rte_eal_remote_launch()): the EAL's own thread, with
 * its lcore id (per-lcore mempool caches, rte_lcore_id()). Otherwise it
 * is a thread of ours pinned to that lcore's CPUs (the main lcore, or one
 * already running something), or without GN_DPDK_LCORE to the main
 * lcore's, so two ranks on one host given -l 0 and -l 1 do not share a
 * core; on an application's port it stays where the application put the
 * opening thread. Either thread is named gn-dpdk-poll, for top -H and the
 * tests.
 */
static pthread_mutex_t launch_lock = PTHREAD_MUTEX_INITIALIZER;

static int poller_main(void *arg)
{
	struct dtp *d = arg;
	char name[16] = "";
	rte_cpuset_t set;

	pthread_getname_np(pthread_self(), name, sizeof(name));
	pthread_setname_np(pthread_self(), "gn-dpdk-poll");
	if (!d->launched && !(d->shared && d->lcore < 0)) {
		set = rte_lcore_cpuset(d->lcore >= 0 ? (unsigned int)d->lcore :
							rte_get_main_lcore());
		if (CPU_COUNT(&set))
			pthread_setaffinity_np(pthread_self(), sizeof(set),
					       &set);
	}
	d->poller_fn(d->poller_arg);
	/* The lcore's thread goes back to the EAL as it was. */
	if (d->launched)
		pthread_setname_np(pthread_self(), name);
	return 0;
}

static void *poller_thread(void *arg)
{
	poller_main(arg);
	return NULL;
}

int gn_dpdk_poller_start(void *tp, void *(*fn)(void *), void *arg)
{
	struct dtp *d = tp;
	unsigned int lc = (unsigned int)d->lcore;

	d->poller_fn = fn;
	d->poller_arg = arg;
	/* Decided before the launch: the launched thread reads it. */
	pthread_mutex_lock(&launch_lock);
	d->launched = d->lcore >= 0 && lc != rte_get_main_lcore() &&
		      rte_eal_get_lcore_state(lc) == WAIT;
	if (d->launched && rte_eal_remote_launch(poller_main, d, lc))
		d->launched = false;
	pthread_mutex_unlock(&launch_lock);
	if (d->launched)
		return 0;
	return -pthread_create(&d->poller, NULL, poller_thread, d);
}

void gn_dpdk_poller_join(void *tp)
{
	struct dtp *d = tp;

	if (d->launched)
		rte_eal_wait_lcore((unsigned int)d->lcore);
	else
		pthread_join(d->poller, NULL);
}

/* Sleep up to @ns, or until wake() (a futex, so wake cuts it short). */
static void nap(struct dtp *d, u64 ns)
{
	struct timespec ts = { (time_t)(ns / NSEC_PER_SEC),
			       (long)(ns % NSEC_PER_SEC) };

	__atomic_store_n(&d->sleeping, 1, __ATOMIC_SEQ_CST);
	if (!__atomic_load_n(&d->wake_word, __ATOMIC_SEQ_CST))
		syscall(SYS_futex, &d->wake_word, FUTEX_WAIT_PRIVATE, 0, &ts,
			NULL, 0);
	__atomic_store_n(&d->sleeping, 0, __ATOMIC_SEQ_CST);
}

/* Packets waiting in a queue, read ahead into its burst if need be. */
static bool rx_any(struct dtp *d)
{
	int i;

	for (i = 0; i < d->nq; i++) {
		struct dtp_rxq *q = &d->rxq[i];

		if (q->ready_i < q->ready_n || q->rx_i < q->rx_n ||
		    rx_fill(d, q))
			return true;
	}
	return false;
}

/*
 * No descriptor to sleep on: poll the rx queues, busily while traffic is
 * recent (spin_tsc since the last packet sent or received, so a step's
 * next packet, an ACK or the peer's share, is seen at once) or for
 * SPIN_NS at least, then with sleeps that double from SLEEP_MIN_NS up to
 * poll_ns, so a rank between steps costs little CPU and a burst of
 * traffic is seen within poll_ns. It spins without yielding only on an
 * lcore of its own (GN_DPDK_LCORE), for SPIN_NS; on the main lcore it
 * yields the CPU at every round to any thread waiting for it: the
 * trainer's, gradnet's progress thread, which share that CPU (each
 * hand-over of the queue between the two waited out the whole SPIN_NS),
 * another rank's. What a poll finds stays for recv.
 * Return: 1 packets are there, 0 woken or timed out.
 */
static int dtp_wait(void *tp, int timeout_ms)
{
	struct dtp *d = tp;
	u64 start = mono_ns(), now = start, nap_ns = SLEEP_MIN_NS;
	u64 end = start + (u64)timeout_ms * 1000000ull;
	u64 since = rte_get_timer_cycles() - d->active_tsc;
	u64 spin_end = start + SPIN_NS;

	if (since < d->spin_tsc) {
		u64 left = (d->spin_tsc - since) * NSEC_PER_SEC / d->tsc_hz;

		if (spin_end < start + left)
			spin_end = start + left;
	}
	for (;;) {
		if (rx_any(d))
			return 1;
		if (__atomic_exchange_n(&d->wake_word, 0, __ATOMIC_SEQ_CST))
			return 0;
		if (now >= end)
			return 0;
		if (!d->poll_ns || now < spin_end) {
			if (d->lcore >= 0 && now - start < SPIN_NS)
				rte_pause();
			else
				sched_yield();
		} else {
			nap(d, nap_ns < end - now ? nap_ns : end - now);
			nap_ns = nap_ns * 2 < d->poll_ns ? nap_ns * 2 : d->poll_ns;
		}
		now = mono_ns();
	}
}

static void dtp_wake(void *tp)
{
	struct dtp *d = tp;

	if (!__atomic_exchange_n(&d->wake_word, 1, __ATOMIC_SEQ_CST) &&
	    __atomic_load_n(&d->sleeping, __ATOMIC_SEQ_CST))
		syscall(SYS_futex, &d->wake_word, FUTEX_WAKE_PRIVATE, 1, NULL,
			NULL, 0);
}

/* ---- open and close ---- */

/*
 * The filter's counters as one JSON line in d->stats_path (GN_DPDK_STATS),
 * for tests and operators: frames dropped by reason, ARP traffic.
 */
static void stats_write(const struct dtp *d)
{
	struct rte_eth_stats es;
	FILE *f;
	int i, q;

	if (!d->stats_path)
		return;
	f = fopen(d->stats_path, "w");
	if (!f) {
		fprintf(stderr, "gradnet: dpdk: cannot write %s\n", d->stats_path);
		return;
	}
	fprintf(f, "{\"rank\": %u, \"arp_answered\": %llu, \"arp_asked\": %llu, \"arp_moved\": %llu, \"arp_reasked\": %llu, \"drops\": {",
		d->rank, (unsigned long long)d->arp_answered,
		(unsigned long long)d->arp_asked,
		(unsigned long long)d->arp_moved,
		(unsigned long long)d->arp_reasked);
	for (i = 0; i < GN_DDROP_N; i++) {
		u64 n = 0;

		for (q = 0; q < d->nq; q++)
			n += d->rxq[q].drops[i];
		fprintf(f, "%s\"%s\": %llu", i ? ", " : "", gn_dpdk_drop_name(i),
			(unsigned long long)n);
	}
	fprintf(f, "}");
	/* The port's own counters: what it missed or could not place. */
	if (!rte_eth_stats_get(d->port, &es))
		fprintf(f, ", \"port\": {\"ipackets\": %llu, \"opackets\": %llu, \"imissed\": %llu, \"ierrors\": %llu, \"oerrors\": %llu, \"rx_nombuf\": %llu}",
			(unsigned long long)es.ipackets,
			(unsigned long long)es.opackets,
			(unsigned long long)es.imissed,
			(unsigned long long)es.ierrors,
			(unsigned long long)es.oerrors,
			(unsigned long long)es.rx_nombuf);
	/* Frames per queue pair: how RSS (or memif's rings) spread them. */
	fprintf(f, ", \"queues\": [");
	for (q = 0; q < d->nq; q++)
		fprintf(f, "%s{\"rx\": %llu, \"tx\": %llu}", q ? ", " : "",
			(unsigned long long)d->rxq[q].rx_frames,
			(unsigned long long)d->rxq[q].tx_frames);
	fprintf(f, "]}\n");
	fclose(f);
}

/* Who we are, for the receive filter. */
static void filter_init(struct dtp *d)
{
	memcpy(d->filt.mac, d->mac.addr_bytes, sizeof(d->filt.mac));
	d->filt.ip = d->ip;
	d->filt.udp_port = d->udp_port;
	d->filt.max_pkt = d->max_pkt;
}

static void dtp_free(struct dtp *d)
{
	int i, k;

	for (i = 0; d->rxq && i < d->nq; i++) {
		struct dtp_rxq *q = &d->rxq[i];

		for (k = q->rx_i; k < q->rx_n; k++)
			rte_pktmbuf_free(q->rx[k]);
		for (k = q->ready_i; k < q->ready_n; k++)
			rte_pktmbuf_free(mbuf_of(q->ready[k]));
	}
	stats_write(d);
	if (!d->shared) {
		/* The queues may hold mbufs of the pools until the port stops. */
		port_stop(d->port);
		/*
		 * Stopping leaves net_af_xdp's socket bound, its fill ring
		 * full of rx pool buffers the kernel may still write frames
		 * into: the port closes before the pool goes.
		 */
		if (d->umem) {
			pthread_mutex_lock(&ports_lock);
			rte_eth_dev_close(d->port);
			port_ours[d->port] = false;
			port_gone[d->port] = true;
			pthread_mutex_unlock(&ports_lock);
		}
		rte_mempool_free(d->tx_pool);
		rte_mempool_free(d->rx_pool);
	} else if (rte_eth_tx_done_cleanup(d->port, d->queue, 0) >= 0) {
		rte_mempool_free(d->tx_pool);
	}
	/*
	 * Else the application's running tx queue may still hold mbufs of
	 * the tx pool, and the driver cannot say when it lets them go: the
	 * pool stays, once per context.
	 */
	free(d->peers);
	free(d->peer_tab);
	free(d->neigh);
	free(d->rxq);
	port_release(d->port, d->shared ? d->queue : -1);
	free(d);
}

static void dtp_close(void *tp)
{
	dtp_free(tp);
}

static const struct gn_transport_ops dtp_ops = {
	.name = "dpdk",
	.get = dtp_get,
	.hold = dtp_hold,
	.put = dtp_put,
	.send = dtp_send,
	.recv = dtp_recv,
	.poll = NULL,
	.wait = dtp_wait,
	.wake = dtp_wake,
	.close = dtp_close,
};

/*
 * The smallest 2^k - 1 (a mempool's best size) not under @n, at least
 * 1023: rounding down would halve the pool of 2 KiB mbufs at MTU 1500
 * (65535), fewer than a dense step of 25 M floats packs (71 k).
 */
static u32 pool_size(u32 n)
{
	u32 s = 1023;

	while (s < n)
		s = 2 * s + 1;
	return s;
}

/* A pool of @n mbufs of @room data bytes, or NULL and why in @msg. */
static struct rte_mempool *pool_new(const char *name, u32 n, u32 room,
				    int socket, char *msg, size_t len)
{
	struct rte_mempool *mp = rte_pktmbuf_pool_create(name, n, POOL_CACHE,
							 RTE_CACHE_LINE_SIZE,
							 (u16)room, socket);

	if (!mp)
		snprintf(msg, len, "cannot create a pool of %u mbufs of %u bytes: %s (EAL memory: -m or hugepages)",
			 n, room, rte_strerror(rte_errno));
	return mp;
}

/*
 * The kernel writes a received frame XDP_PACKET_HEADROOM (256) bytes past
 * the headroom DPDK 22.11 registers for each chunk (mempool header, mbuf,
 * private area, RTE_PKTMBUF_HEADROOM), and drops a frame that does not
 * fit in the rest of the chunk, which is one pool object: so the rx data
 * room holds that much more than a frame. A chunk is at most a page.
 */
#define XDP_HEADROOM 256

/* The data room of net_af_xdp's rx mbufs for frames of MTU @mtu. */
static u32 umem_room(u32 mtu)
{
	u32 frame = ETH_LEN + mtu + 8;		/* with a VLAN tag */

	return PAYLOAD_OFF + XDP_HEADROOM +
	       RTE_MAX(RTE_ALIGN(frame, RTE_CACHE_LINE_SIZE),
		       (u32)RTE_MBUF_DEFAULT_DATAROOM);
}

/* Bytes of one object of net_af_xdp's rx pool: one UMEM chunk. */
static u32 umem_chunk(u32 room)
{
	return (u32)rte_mempool_calc_obj_size((u32)sizeof(struct rte_mbuf) +
					      RTE_CACHE_LINE_SIZE + room,
					      RTE_MEMPOOL_F_NO_IOVA_CONTIG, NULL);
}

/* The largest MTU whose frames fit a page's chunk. */
static u32 umem_mtu_max(void)
{
	u32 mtu = GN_WIRE_MAX_PKT + GN_WIRE_IPUDP;

	while (mtu > 576 && umem_chunk(umem_room(mtu)) > (u32)getpagesize())
		mtu--;
	return mtu;
}

/*
 * The same pool for net_af_xdp's rx queue, which DPDK 22.11 registers
 * as the socket's UMEM: from its first memory chunk's page, populated
 * size times object size bytes, so every mbuf must lie in that span.
 * rte_pktmbuf_pool_create() keeps objects from crossing a page, which
 * on 4 KiB pages (--no-huge) puts one 2.5 KiB mbuf per page: the UMEM
 * then covers only some 60% of the pool, and a buffer beyond it, handed
 * to the fill ring or (for a frame from the tx pool) to the tx ring
 * as a copy, is refused by the kernel as invalid and never given back
 * (the socket's tx_invalid_descs count them): frames lost, then the pool
 * drained. Packed objects (no IOVA-contiguity, which the kernel does not
 * need of a UMEM) in one chunk make the span exact.
 */
static struct rte_mempool *pool_new_umem(const char *name, u32 n, u32 room,
					 int socket, char *msg, size_t len)
{
	struct rte_pktmbuf_pool_private priv = {
		.mbuf_data_room_size = (u16)room,
		.mbuf_priv_size = RTE_CACHE_LINE_SIZE,
	};
	u32 elt = (u32)sizeof(struct rte_mbuf) + RTE_CACHE_LINE_SIZE + room;
	struct rte_mempool *mp;
	int r;

	mp = rte_mempool_create_empty(name, n, elt, POOL_CACHE, sizeof(priv),
				      socket, RTE_MEMPOOL_F_NO_IOVA_CONTIG);
	if (!mp) {
		r = -rte_errno;
		goto fail;
	}
	r = rte_mempool_set_ops_byname(mp, rte_mbuf_best_mempool_ops(), NULL);
	if (r)
		goto fail;
	rte_pktmbuf_pool_init(mp, &priv);
	r = rte_mempool_populate_default(mp);
	if (r < 0)
		goto fail;
	if (mp->nb_mem_chunks != 1) {
		snprintf(msg, len, "the rx pool of net_af_xdp came in %u pieces of memory, its UMEM can only be one (EAL memory: -m or hugepages)",
			 mp->nb_mem_chunks);
		rte_mempool_free(mp);
		return NULL;
	}
	rte_mempool_obj_iter(mp, rte_pktmbuf_init, NULL);
	return mp;
fail:
	rte_mempool_free(mp);
	snprintf(msg, len, "cannot create a pool of %u mbufs of %u bytes: %s (EAL memory: -m or hugepages)",
		 n, room, rte_strerror(-r));
	return NULL;
}

static int pools_create(struct dtp *d, const struct gn_dpdk_conf *c,
			int socket, char *msg, size_t len)
{
	/*
	 * Room for a whole frame of the MTU (and a VLAN tag) in one segment,
	 * so the seal and the decoder read contiguous bytes (a frame in
	 * several segments is dropped as "segmented"); in whole KiB and at
	 * least DPDK's default 2 KiB: drivers such as net_af_packet refuse rx
	 * buffers smaller than their frame slots, which hold a header too.
	 */
	u32 frame = RTE_ALIGN(ETH_LEN + c->mtu + 8, 1024);
	u32 room = PAYLOAD_OFF + RTE_MAX(frame, (u32)RTE_MBUF_DEFAULT_DATAROOM);
	u32 elt = (u32)sizeof(struct rte_mbuf) + RTE_CACHE_LINE_SIZE + room;
	u32 ntx = c->mbufs ? c->mbufs : pool_size(TX_POOL_BYTES / elt), nrx;
	unsigned int seq = __atomic_fetch_add(&pool_seq, 1, __ATOMIC_RELAXED);
	char name[RTE_MEMPOOL_NAMESIZE];

	if (ntx > TX_POOL_MAX && !c->mbufs)
		ntx = TX_POOL_MAX;
	snprintf(name, sizeof(name), "gn_tx%u_%u", d->port, seq);
	d->tx_pool = pool_new(name, ntx, room, socket, msg, len);
	if (!d->tx_pool)
		return -ENOMEM;
	/* An application's port receives into the application's pool. */
	if (c->queue >= 0)
		return 0;
	snprintf(name, sizeof(name), "gn_rx%u_%u", d->port, seq);
	nrx = pool_size(RX_POOL + (d->nq - 1u) * 2 * RX_DESC);
	d->rx_pool = d->umem ?
		pool_new_umem(name, nrx, umem_room(c->mtu), socket, msg, len) :
		pool_new(name, nrx, room, socket, msg, len);
	return d->rx_pool ? 0 : -ENOMEM;
}

static int port_start(struct dtp *d, const struct gn_dpdk_conf *c,
		      char *msg, size_t len)
{
	const u64 tx_csum = RTE_ETH_TX_OFFLOAD_IPV4_CKSUM |
			    RTE_ETH_TX_OFFLOAD_UDP_CKSUM;
	const u64 rx_csum = RTE_ETH_RX_OFFLOAD_IPV4_CKSUM |
			    RTE_ETH_RX_OFFLOAD_UDP_CKSUM;
	struct rte_eth_conf pc = { 0 };
	struct rte_eth_dev_info info;
	struct rte_eth_txconf txc;
	int socket = rte_eth_dev_socket_id(d->port), r;
	u16 nrx = RX_DESC, ntx = TX_DESC, q;
	u64 rss;

	r = rte_eth_dev_info_get(d->port, &info);
	if (r) {
		snprintf(msg, len, "DPDK port %u: cannot read its capabilities: %s",
			 d->port, rte_strerror(-r));
		return r;
	}
	if (c->mtu < info.min_mtu || c->mtu > info.max_mtu) {
		snprintf(msg, len, "DPDK port %u (%s) takes an MTU of %u..%u, the job's is %u",
			 d->port, info.driver_name, info.min_mtu, info.max_mtu,
			 c->mtu);
		return -EINVAL;
	}
	/* memif in DPDK 22.11, for one, takes no frame over 1518 bytes. */
	if (info.max_rx_pktlen &&
	    ETH_LEN + c->mtu + RTE_ETHER_CRC_LEN > info.max_rx_pktlen) {
		snprintf(msg, len, "DPDK port %u (%s) takes frames of at most %u bytes (an MTU of %u), the job's MTU is %u",
			 d->port, info.driver_name, info.max_rx_pktlen,
			 info.max_rx_pktlen - ETH_LEN - RTE_ETHER_CRC_LEN, c->mtu);
		return -EINVAL;
	}
	d->umem = !strcmp(info.driver_name, "net_af_xdp");
	if (d->umem && umem_chunk(umem_room(c->mtu)) > (u32)getpagesize()) {
		snprintf(msg, len, "DPDK port %u (%s) receives each frame into one page of %d bytes with its headroom: an MTU of at most %u, the job's is %u",
			 d->port, info.driver_name, getpagesize(),
			 umem_mtu_max(), c->mtu);
		return -EINVAL;
	}
	/*
	 * A queue pair per codec worker where the port spreads flows over
	 * its queues by RSS (over the UDP ports and addresses: a NIC), or as
	 * many as asked for: memif pairs our queue i with the peer's, and
	 * net_af_packet's queues are sockets in a fanout group that the
	 * kernel spreads by flow hash.
	 */
	q = RTE_MIN(info.max_rx_queues, info.max_tx_queues);
	rss = info.flow_type_rss_offloads &
	      (RTE_ETH_RSS_NONFRAG_IPV4_UDP | RTE_ETH_RSS_IPV4);
	if (c->queues > q) {
		snprintf(msg, len, "DPDK port %u (%s) has at most %u queue pairs, GN_DPDK_QUEUES is %u",
			 d->port, info.driver_name, q, c->queues);
		return -EINVAL;
	}
	d->nq = (u16)(c->queues ? c->queues :
		      rss ? RTE_MAX(RTE_MIN(c->workers, (u32)q), 1u) : 1);
	if (d->nq > 1 && rss) {
		pc.rxmode.mq_mode = RTE_ETH_MQ_RX_RSS;
		pc.rx_adv_conf.rss_conf.rss_hf = rss;
	}
	r = pools_create(d, c, socket, msg, len);
	if (r)
		return r;
	d->tx_csum = (info.tx_offload_capa & tx_csum) == tx_csum;
	if (d->tx_csum)
		pc.txmode.offloads = tx_csum;
	if ((info.rx_offload_capa & rx_csum) == rx_csum)
		pc.rxmode.offloads = rx_csum;
	pc.rxmode.mtu = c->mtu;
	r = rte_eth_dev_configure(d->port, d->nq, d->nq, &pc);
	if (!r) {
		pthread_mutex_lock(&ports_lock);
		port_ours[d->port] = true;
		pthread_mutex_unlock(&ports_lock);
		r = rte_eth_dev_adjust_nb_rx_tx_desc(d->port, &nrx, &ntx);
	}
	if (r) {
		snprintf(msg, len, "DPDK port %u (%s): configuration with %u queue pairs and MTU %u refused: %s",
			 d->port, info.driver_name, d->nq, c->mtu,
			 rte_strerror(-r));
		return r;
	}
	txc = info.default_txconf;
	txc.offloads = pc.txmode.offloads;
	for (q = 0, r = 0; q < d->nq && !r; q++) {
		r = rte_eth_rx_queue_setup(d->port, q, nrx, socket, NULL,
					   d->rx_pool);
		if (!r)
			r = rte_eth_tx_queue_setup(d->port, q, ntx, socket,
						   &txc);
	}
	if (r) {
		snprintf(msg, len, "DPDK port %u (%s): queue setup failed: %s",
			 d->port, info.driver_name, rte_strerror(-r));
		return r;
	}
	r = rte_eth_dev_set_mtu(d->port, (u16)c->mtu);
	if (r && r != -ENOTSUP) {
		snprintf(msg, len, "DPDK port %u (%s) refuses MTU %u: %s",
			 d->port, info.driver_name, c->mtu, rte_strerror(-r));
		return r;
	}
	r = rte_eth_dev_start(d->port);
	if (r) {
		snprintf(msg, len, "DPDK port %u (%s) does not start: %s",
			 d->port, info.driver_name, rte_strerror(-r));
		return r;
	}
	return rte_eth_macaddr_get(d->port, &d->mac);
}

/*
 * The application's port: queue @c->queue of it is ours, as the
 * application configured it; only the tx pool is ours to make.
 */
static int port_attach(struct dtp *d, const struct gn_dpdk_conf *c,
		       char *msg, size_t len)
{
	const u64 tx_csum = RTE_ETH_TX_OFFLOAD_IPV4_CKSUM |
			    RTE_ETH_TX_OFFLOAD_UDP_CKSUM;
	struct rte_eth_txq_info qi;
	struct rte_eth_dev_info info;
	u16 mtu = 0;
	int r;

	r = rte_eth_dev_info_get(d->port, &info);
	if (r) {
		snprintf(msg, len, "DPDK port %u: cannot read its capabilities: %s",
			 d->port, rte_strerror(-r));
		return r;
	}
	if (c->queue >= info.nb_rx_queues || c->queue >= info.nb_tx_queues) {
		snprintf(msg, len, "DPDK port %u (%s) has %u rx and %u tx queues configured, GN_DPDK_QUEUE is %d",
			 d->port, info.driver_name, info.nb_rx_queues,
			 info.nb_tx_queues, c->queue);
		return -EINVAL;
	}
	if (!rte_eth_dev_get_mtu(d->port, &mtu) && mtu < c->mtu) {
		snprintf(msg, len, "DPDK port %u (%s) has MTU %u, the job's is %u: the application sets the MTU of its port",
			 d->port, info.driver_name, mtu, c->mtu);
		return -EINVAL;
	}
	/*
	 * The queue's own offloads say nothing of the port's (and reading
	 * the port's configuration is experimental API in DPDK 22.11):
	 * checksums are computed here unless the queue itself offloads them.
	 */
	if (!rte_eth_tx_queue_info_get(d->port, (u16)c->queue, &qi))
		d->tx_csum = (qi.conf.offloads & tx_csum) == tx_csum;
	r = pools_create(d, c, rte_eth_dev_socket_id(d->port), msg, len);
	if (r)
		return r;
	return rte_eth_macaddr_get(d->port, &d->mac);
}

static bool mac_zero(const u8 *mac)
{
	static const u8 zero[6];

	return !memcmp(mac, zero, sizeof(zero));
}

static int conf_check(const struct gn_dpdk_conf *c, char *msg, size_t len)
{
	if (!c->peers || c->world < 1 || c->world >= (int)GN_PEER_NONE ||
	    c->rank < 0 || c->rank >= c->world || !c->max_pkt ||
	    c->max_pkt > c->mtu - GN_WIRE_IPUDP || c->mtu > GN_WIRE_MAX_PKT + GN_WIRE_IPUDP) {
		snprintf(msg, len, "DPDK transport: bad rank, world or packet size");
		return -EINVAL;
	}
	if (!c->peers[c->rank].ip || !c->peers[c->rank].port) {
		snprintf(msg, len, "DPDK transport: rank %d needs its own IPv4 address and port (0.0.0.0 does not do)",
			 c->rank);
		return -EINVAL;
	}
	if (c->queues > (u32)RTE_MAX_QUEUES_PER_PORT ||
	    c->workers > (u32)RTE_MAX_QUEUES_PER_PORT) {
		snprintf(msg, len, "DPDK transport: %u queue pairs or %u workers: a port has at most %d queues",
			 c->queues, c->workers, RTE_MAX_QUEUES_PER_PORT);
		return -EINVAL;
	}
	if (c->queues > 1 && c->queue >= 0) {
		snprintf(msg, len, "GN_DPDK_QUEUES=%u is for a port gradnet configures; on the application's port (GN_DPDK_QUEUE=%d) gradnet has one queue pair",
			 c->queues, c->queue);
		return -EINVAL;
	}
	return 0;
}

int gn_dpdk_open(struct gn_transport *tp, const struct gn_dpdk_conf *c,
		 char *msg, size_t len)
{
	const struct gn_dpdk_peer *self;
	struct dtp *d;
	u32 nq;
	int r;

	r = conf_check(c, msg, len);
	if (r)
		return r;
	self = &c->peers[c->rank];
	if (port_closed(c->port_id)) {
		snprintf(msg, len, "DPDK port %u (net_af_xdp) was closed when the last context on it ended (its rx pool was the kernel's UMEM): open it again in a new process",
			 c->port_id);
		return -ENODEV;
	}
	if (!rte_eth_dev_is_valid_port(c->port_id)) {
		snprintf(msg, len, "DPDK port %u does not exist: the EAL found %u ports (its -a or --vdev arguments make them)",
			 c->port_id, rte_eth_dev_count_avail());
		return -ENODEV;
	}
	if (c->lcore >= 0 && (c->lcore >= RTE_MAX_LCORE ||
			      !rte_lcore_is_enabled((unsigned int)c->lcore))) {
		snprintf(msg, len, "GN_DPDK_LCORE=%d is not one of the EAL's lcores (its -l or --lcores)",
			 c->lcore);
		return -EINVAL;
	}
	if (c->queue >= RTE_MAX_QUEUES_PER_PORT) {
		snprintf(msg, len, "DPDK queue %d: at most %d queues per port",
			 c->queue, RTE_MAX_QUEUES_PER_PORT);
		return -EINVAL;
	}
	if (!port_claim(c->port_id, c->queue)) {
		if (c->queue < 0)
			snprintf(msg, len, "DPDK port %u is in use by another gradnet context",
				 c->port_id);
		else
			snprintf(msg, len, "DPDK port %u queue %d is in use by another gradnet context",
				 c->port_id, c->queue);
		return -EBUSY;
	}
	d = calloc(1, sizeof(*d));
	if (!d) {
		r = -ENOMEM;
		snprintf(msg, len, "out of memory");
		goto out_port;
	}
	/* Room for every queue the port may give; port_start() says how many. */
	nq = RTE_MAX(RTE_MAX(c->queues, c->workers), 1u);
	d->rxq = aligned_alloc(RTE_CACHE_LINE_SIZE, sizeof(*d->rxq) * nq);
	if (!d->rxq) {
		free(d);
		r = -ENOMEM;
		snprintf(msg, len, "out of memory");
		goto out_port;
	}
	memset(d->rxq, 0, sizeof(*d->rxq) * nq);
	d->nq = 1;
	d->run = c->run;
	d->run_arg = c->run_arg;
	d->port = c->port_id;
	d->queue = c->queue < 0 ? 0 : (u16)c->queue;
	d->shared = c->queue >= 0;
	d->lcore = c->lcore;
	d->rank = (u16)c->rank;
	d->world = (u16)c->world;
	d->max_pkt = c->max_pkt;
	d->poll_ns = c->poll_us * 1000u;
	d->tx_cap = BURST;
	d->tsc_hz = rte_get_timer_hz();
	d->spin_tsc = d->tsc_hz * c->spin_us / 1000000u;
	d->ip = self->ip;
	d->udp_port = self->port;
	d->stats_path = c->stats_path;
	r = peers_init(d, c->peers, c->world);
	if (!r)
		r = dtp_neigh_init(d, c);
	if (r) {
		snprintf(msg, len, "out of memory");
		goto out_free;
	}
	r = d->shared ? port_attach(d, c, msg, len) : port_start(d, c, msg, len);
	if (r)
		goto out_free;
	if (!mac_zero(self->mac) && memcmp(self->mac, d->mac.addr_bytes, 6)) {
		snprintf(msg, len, "GN_DPDK_PEERS gives rank %d the MAC address %02x:%02x:%02x:%02x:%02x:%02x, DPDK port %u has " RTE_ETHER_ADDR_PRT_FMT,
			 c->rank, self->mac[0], self->mac[1], self->mac[2],
			 self->mac[3], self->mac[4], self->mac[5], d->port,
			 RTE_ETHER_ADDR_BYTES(&d->mac));
		r = -EINVAL;
		goto out_free;
	}
	filter_init(d);
	r = dtp_neigh_resolve(d, c->arp_timeout_ms, msg, len);
	if (r)
		goto out_free;
	tp->ops = &dtp_ops;
	tp->state = d;
	tp->caps.max_pkt = c->max_pkt;
	tp->caps.flags = d->tx_csum ? GN_TP_CSUM : 0;
	return 0;

out_free:
	if (d->tx_pool || d->rx_pool) {
		dtp_free(d);
		return r;
	}
	free(d->peers);
	free(d->peer_tab);
	free(d->neigh);
	free(d->rxq);
	free(d);
out_port:
	port_release(c->port_id, c->queue);
	return r;
}

/* ---- the EAL ---- */

#define EAL_ARGS_MAX 64

static pthread_mutex_t eal_lock = PTHREAD_MUTEX_INITIALIZER;
static int eal_state;			/* 0 not tried, 1 up, -errno failed */
static char eal_err[160];

/*
 * The EAL keeps pointers into its arguments, so they live as long as the
 * process; it is brought up once. rte_eal_init() pins the calling thread
 * to the main lcore: the caller's thread is the application's and gets
 * its CPUs back; the poll loop's thread is pinned (poller_main()).
 */
static int eal_up(const char *args)
{
	static char *argv[EAL_ARGS_MAX + 1];
	char *copy = strdup(args ? args : ""), *tok, *save = NULL;
	cpu_set_t mine;
	bool have_mine;
	int argc = 0, r;

	/*
	 * An EAL that is up (the application's) has lcores; asking it again
	 * would only make it log a FATAL line.
	 */
	if (rte_lcore_count()) {
		free(copy);
		return 1;
	}
	if (!copy)
		return -ENOMEM;
	argv[argc++] = "gradnet";
	for (tok = strtok_r(copy, " \t\n", &save); tok;
	     tok = strtok_r(NULL, " \t\n", &save)) {
		if (argc == EAL_ARGS_MAX) {
			snprintf(eal_err, sizeof(eal_err), "more than %d EAL arguments",
				 EAL_ARGS_MAX - 1);
			free(copy);
			return -E2BIG;
		}
		argv[argc++] = tok;
	}
	argv[argc] = NULL;
	/* stdout is the application's: DPDK logs to stderr. */
	rte_openlog_stream(stderr);
	have_mine = !pthread_getaffinity_np(pthread_self(), sizeof(mine), &mine);
	r = rte_eal_init(argc, argv);
	if (have_mine)
		pthread_setaffinity_np(pthread_self(), sizeof(mine), &mine);
	if (r >= 0)
		return 1;
	/* Only an EAL that came up keeps pointers into its arguments. */
	free(copy);
	if (rte_errno == EALREADY)
		return 1;
	r = rte_errno ? -rte_errno : -EINVAL;
	/*
	 * The EAL says EACCES when it finds no hugepages it may use, and
	 * ENOMEM when they are too few: name the likely cause and the fix.
	 */
	snprintf(eal_err, sizeof(eal_err), "rte_eal_init(\"%s\") failed: %s%s",
		 args ? args : "", rte_strerror(-r),
		 r == -EACCES || r == -ENOMEM ?
		 " (no or too few free hugepages? tools/dpdk-host-check.sh says; or run without them: --no-huge -m 1024)" :
		 "");
	return r;
}

int gn_dpdk_eal_init(const char *args, char *msg, size_t len)
{
	int r;

	pthread_mutex_lock(&eal_lock);
	if (!eal_state)
		eal_state = eal_up(args);
	r = eal_state;
	if (r < 0)
		snprintf(msg, len, "%s", eal_err[0] ? eal_err : strerror(-r));
	pthread_mutex_unlock(&eal_lock);
	return r < 0 ? r : 0;
}
