// SPDX-License-Identifier: MIT
/*
 * rx.c - the DPDK transport's receive side: rx bursts are filtered
 * (Ethernet to us, IPv4 without options beyond the header length, no
 * fragments, UDP to our port, lengths and checksums checked, filter.c)
 * and the sender resolved to a rank by (IP, port); ARP goes to neigh.c;
 * everything else is freed. With several queues, a receive round reads
 * each rx queue in a part of its own on the codec workers, every part
 * writing only its queue's state (struct dtp_rxq).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <rte_cycles.h>
#include <rte_ethdev.h>
#include <rte_mbuf.h>
#include <rte_mempool.h>

#include "dtp.h"

/* Below this many free rx mbufs, received packets are copied out. */
#define RX_LOW 2048
/* Packets between two reads of the rx pool's fill. */
#define RX_LOW_EVERY 64
/* Bursts read per call at most, so a flood of others' frames ends it. */
#define RX_BURSTS 4

/* Senders by (IP, port): open addressing, at most half full. */
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

int dtp_peers_init(struct dtp *d, const struct gn_dpdk_peer *peers, int world)
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
 * against the bytes the mbuf holds, in one segment). *@from is the
 * frame's source MAC if a learnt peer's datagram comes from another
 * address than its own (moved, or forged), else NULL. With several
 * queues it runs on one queue's worker and writes only @q and @m.
 */
static u8 *rx_filter(struct dtp *d, struct dtp_rxq *q, struct rte_mbuf *m,
		     u16 *len, u16 *peer, bool *keep, const u8 **from)
{
	u8 *frame = rte_pktmbuf_mtod(m, u8 *);
	struct gn_dpdk_rx rx;

	*from = NULL;
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
		if (unlikely(*peer < d->world &&
			     memcmp(frame + 6, d->peers[*peer].mac,
				    RTE_ETHER_ADDR_LEN)) &&
		    !d->neigh[*peer].fixed)
			*from = frame + 6;
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

/*
 * Marks @b as come from @from, another MAC than its sender's: the peer
 * moves there if the core finds @b authentic (dtp_authentic()).
 */
static void rx_mark(struct gn_buf *b, const u8 *from)
{
	struct mbuf_priv *p = priv_of(mbuf_of(b));

	p->moved = from != NULL;
	if (unlikely(from))
		memcpy(p->src_mac, from, sizeof(p->src_mac));
}

/* @m as a gn_buf for the core, or NULL if it was not for us. */
static struct gn_buf *rx_one(struct dtp *d, struct dtp_rxq *q,
			     struct rte_mbuf *m)
{
	struct gn_buf *b;
	struct rte_mbuf *c;
	u16 len, peer;
	bool keep = false;
	const u8 *from;
	u8 *data = rx_filter(d, q, m, &len, &peer, &keep, &from);

	if (!data) {
		if (!keep)
			rte_pktmbuf_free(m);
		return NULL;
	}
	/* The rx pool runs low: the core may hold this one for long. */
	if (rx_pool_low(q, m) && (c = rte_pktmbuf_alloc(d->tx_pool))) {
		b = buf_init(c, (u8 *)c->buf_addr + PAYLOAD_OFF, len);
		memcpy(b->data, data, len);
		rx_mark(b, from);
		rte_pktmbuf_free(m);
	} else {
		b = buf_init(m, data, len);
		rx_mark(b, from);
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

/* What the parts left for the core's thread: ARP. */
static void rx_after(struct dtp *d)
{
	int i, k;

	for (i = 0; i < d->nq; i++) {
		struct dtp_rxq *q = &d->rxq[i];

		for (k = 0; k < q->arp_n; k++) {
			dtp_arp_in(d, &q->arp_rx[k]);
			rte_pktmbuf_free(q->arp[k]);
		}
		q->arp_n = 0;
	}
}
int dtp_recv(void *tp, struct gn_buf **b, int max)
{
	struct dtp *d = tp;
	int n;

	dtp_link_watch(d);
	n = d->nq == 1 ? rx_take(d, d->rxq, b, max, RX_BURSTS) :
			 rx_round(d, b, max);
	rx_after(d);
	dtp_ctl_flush(d);
	if (n)
		d->active_tsc = rte_get_timer_cycles();
	return n;
}


/* Packets waiting in a queue, read ahead into its burst if need be. */
bool dtp_rx_any(struct dtp *d)
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
