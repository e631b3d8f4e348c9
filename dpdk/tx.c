// SPDX-License-Identifier: MIT
/*
 * tx.c - the DPDK transport's tx buffers and send.
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
 */
#include <string.h>

#include <rte_cycles.h>
#include <rte_ethdev.h>
#include <rte_ether.h>
#include <rte_ip.h>
#include <rte_mbuf.h>
#include <rte_udp.h>

#include "csum.h"
#include "dtp.h"

_Static_assert(GN_WIRE_IPUDP == sizeof(struct rte_ipv4_hdr) +
	       sizeof(struct rte_udp_hdr), "wire.h and DPDK disagree");

struct gn_buf *dtp_get(void *tp)
{
	struct dtp *d = tp;
	struct rte_mbuf *m = rte_pktmbuf_alloc(d->tx_pool);

	if (!m)
		return NULL;
	return buf_init(m, (u8 *)m->buf_addr + PAYLOAD_OFF, 0);
}

void dtp_hold(void *tp, struct gn_buf *b)
{
	(void)tp;
	rte_mbuf_refcnt_update(mbuf_of(b), 1);
}

void dtp_put(void *tp, struct gn_buf *b)
{
	(void)tp;
	rte_pktmbuf_free(mbuf_of(b));
}

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

int dtp_send(void *tp, struct gn_buf *const *b, int n)
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
