// SPDX-License-Identifier: MIT
/*
 * neigh.c - the DPDK path's neighbours: ARP requests for our address are
 * answered (kernel peers on the same L2 find us with no setup), and peers
 * whose MAC address the static list (GN_DPDK_PEERS) does not give are
 * resolved by ARP when the transport opens: requests go out again after
 * 100 ms, doubling up to a second, until every peer answered or the
 * job's timeout passed; the error then names the ranks that did not.
 *
 * ARP carries no proof of who sent it: any station on the segment can
 * claim a peer's IP address. So a peer's address is learnt only from a
 * reply to a request of ours, while we still look for it at open; a
 * request from a peer we look for only makes our next request to it due
 * at once, which spares the wait when two DPDK ranks start together. Once
 * known, ARP never moves a peer: unsolicited replies and gratuitous ARP
 * are counted and dropped, so a neighbour cannot divert a peer's frames
 * (read them, or drop them) by claiming its address.
 *
 * A learnt address can still change during a job (a NIC replaced, a VM
 * moved): the peer then sends from its new address, and the receive path
 * marks a datagram from a peer's IP and port but another MAC (rx.c). The
 * core authenticates each packet with the session key and says so
 * (transport.h's authentic, dtp_authentic()): the peer moves to the new
 * address then, and the headers stamped on mbufs are redone (a generation
 * number). What moves a peer is the session's key, not the frame; a
 * neighbour that captured an authentic frame of this session can send it
 * again from its own address, which the static list alone rules out
 * (doc/security.md). Addresses from the static list never move.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <rte_arp.h>
#include <rte_cycles.h>
#include <rte_ethdev.h>

#include "dtp.h"

#define ARP_FIRST_MS 100
#define ARP_MAX_MS 1000
/* How long the resolver sleeps between polls of the rx queue. */
#define RESOLVE_NAP_NS 200000L

/* An ARP frame in a fresh mbuf, queued in ctl[] for dtp_ctl_flush(). */
static void arp_queue(struct dtp *d, u16 op, const struct rte_ether_addr *to,
		      const u8 *tha, u32 tip)
{
	struct rte_ether_hdr *eth;
	struct rte_arp_hdr *a;
	struct rte_mbuf *m;

	if (d->ctl_n == BURST)
		dtp_ctl_flush(d);
	m = rte_pktmbuf_alloc(d->tx_pool);
	if (!m)
		return;
	/* The shortest Ethernet frame, zero padded. */
	eth = (void *)rte_pktmbuf_append(m, RTE_ETHER_MIN_LEN - RTE_ETHER_CRC_LEN);
	memset(eth, 0, RTE_ETHER_MIN_LEN - RTE_ETHER_CRC_LEN);
	rte_ether_addr_copy(to, &eth->dst_addr);
	rte_ether_addr_copy(&d->mac, &eth->src_addr);
	eth->ether_type = rte_cpu_to_be_16(RTE_ETHER_TYPE_ARP);
	a = (void *)(eth + 1);
	a->arp_hardware = rte_cpu_to_be_16(RTE_ARP_HRD_ETHER);
	a->arp_protocol = rte_cpu_to_be_16(RTE_ETHER_TYPE_IPV4);
	a->arp_hlen = RTE_ETHER_ADDR_LEN;
	a->arp_plen = 4;
	a->arp_opcode = rte_cpu_to_be_16(op);
	rte_ether_addr_copy(&d->mac, &a->arp_data.arp_sha);
	a->arp_data.arp_sip = d->ip;
	memcpy(&a->arp_data.arp_tha, tha, RTE_ETHER_ADDR_LEN);
	a->arp_data.arp_tip = tip;
	d->ctl[d->ctl_n++] = m;
}

/* A broadcast request for @ip, counted. */
static void arp_ask(struct dtp *d, u32 ip)
{
	static const u8 any[RTE_ETHER_ADDR_LEN];
	struct rte_ether_addr bcast;

	memset(bcast.addr_bytes, 0xff, sizeof(bcast.addr_bytes));
	arp_queue(d, RTE_ARP_OP_REQUEST, &bcast, any, ip);
	d->arp_asked++;
}

void dtp_ctl_flush(struct dtp *d)
{
	int r, i;

	if (!d->ctl_n)
		return;
	r = d->stopped ? 0 :
	    rte_eth_tx_burst(d->port, d->queue, d->ctl, (u16)d->ctl_n);
	for (i = r; i < d->ctl_n; i++)
		rte_pktmbuf_free(d->ctl[i]);
	d->ctl_n = 0;
}

/* Log and count @d's peer @j moving to @mac. */
static void neigh_moved(struct dtp *d, int j, const u8 *mac)
{
	const u8 *ip = (const u8 *)&d->peers[j].ip;

	d->mac_gen++;
	d->arp_moved++;
	fprintf(stderr, "gradnet: dpdk: rank %d (%u.%u.%u.%u) is now at %02x:%02x:%02x:%02x:%02x:%02x\n",
		j, ip[0], ip[1], ip[2], ip[3],
		mac[0], mac[1], mac[2], mac[3], mac[4], mac[5]);
}

/*
 * @rx, ARP from a peer's IP: a reply to our request teaches every peer at
 * that IP we still look for its address; a request from one makes our
 * next request to it due now. Nothing else is learnt from ARP.
 * Return: whether @rx taught anything or was a request.
 */
static bool neigh_learn(struct dtp *d, const struct gn_dpdk_rx *rx)
{
	bool used = rx->kind == GN_DRX_ARP_REQUEST;
	int j;

	for (j = 0; j < d->world; j++) {
		struct dtp_neigh *n = &d->neigh[j];

		if (n->known || !n->tries || d->peers[j].ip != rx->src_ip)
			continue;
		if (rx->kind == GN_DRX_ARP_REQUEST) {
			n->next_tsc = 0;
		} else if (rx->kind == GN_DRX_ARP_REPLY &&
			   !(rx->src_mac[0] & 1)) {	/* not a group address */
			memcpy(d->peers[j].mac, rx->src_mac, RTE_ETHER_ADDR_LEN);
			n->known = true;
			used = true;
		}
	}
	return used;
}

void dtp_arp_in(struct dtp *d, const struct gn_dpdk_rx *rx)
{
	struct rte_ether_addr to;

	if (rx->kind == GN_DRX_ARP_REQUEST) {
		memcpy(to.addr_bytes, rx->src_mac, RTE_ETHER_ADDR_LEN);
		arp_queue(d, RTE_ARP_OP_REPLY, &to, rx->src_mac, rx->src_ip);
		d->arp_answered++;
	}
	if (!neigh_learn(d, rx))
		d->arp_ignored++;
}

/*
 * The core found @b authentic (its seal opened under the session key): if its
 * frame came from another address than its sender's (rx_mark()), the
 * sender is there now. Under the core's lock, like recv.
 */
void dtp_authentic(void *tp, struct gn_buf *b)
{
	struct dtp *d = tp;
	struct mbuf_priv *p = priv_of(mbuf_of(b));

	if (likely(!p->moved))
		return;
	p->moved = false;
	if (b->peer >= d->world || d->neigh[b->peer].fixed ||
	    !memcmp(d->peers[b->peer].mac, p->src_mac, RTE_ETHER_ADDR_LEN))
		return;
	memcpy(d->peers[b->peer].mac, p->src_mac, RTE_ETHER_ADDR_LEN);
	neigh_moved(d, b->peer, p->src_mac);
}

int dtp_neigh_init(struct dtp *d, const struct gn_dpdk_conf *c)
{
	int j;

	d->neigh = calloc((size_t)c->world, sizeof(*d->neigh));
	if (!d->neigh)
		return -ENOMEM;
	for (j = 0; j < c->world; j++) {
		static const u8 zero[6];

		d->neigh[j].fixed = memcmp(c->peers[j].mac, zero, sizeof(zero));
		d->neigh[j].known = j == c->rank || d->neigh[j].fixed;
	}
	return 0;
}

/* Requests to the unknown peers that are due; true if none is unknown. */
static bool neigh_ask(struct dtp *d, u64 now)
{
	bool all = true;
	int j, k;

	for (j = 0; j < d->world; j++) {
		struct dtp_neigh *n = &d->neigh[j];
		u64 gap;

		if (n->known)
			continue;
		all = false;
		if (now < n->next_tsc)
			continue;
		gap = (u64)ARP_FIRST_MS << (n->tries < 4 ? n->tries : 4);
		gap = gap < ARP_MAX_MS ? gap : ARP_MAX_MS;
		n->next_tsc = now + d->tsc_hz / 1000 * gap;
		n->tries++;
		/* Ranks that share an address share the request. */
		for (k = 0; k < j; k++)
			if (!d->neigh[k].known && d->peers[k].ip == d->peers[j].ip)
				break;
		if (k < j)
			continue;
		arp_ask(d, d->peers[j].ip);
	}
	dtp_ctl_flush(d);
	return all;
}

/*
 * Whatever the rx queues hold now: ARP handled, the rest freed. Every
 * queue: ARP need not come in on the first (net_af_packet's fanout
 * hashes it to any of its sockets). A link that stays down is restarted
 * here as on the data path: a memif client turned away by a server not
 * yet started would otherwise wait out the whole resolution.
 */
static void neigh_rx(struct dtp *d)
{
	struct rte_mbuf *m[BURST];
	struct gn_dpdk_rx rx;
	u16 n, i, q;

	dtp_link_watch(d);
	if (d->stopped)
		return;
	for (q = d->queue; q < d->queue + d->nq; q++) {
		n = rte_eth_rx_burst(d->port, q, m, BURST);
		for (i = 0; i < n; i++) {
			if (m[i]->nb_segs == 1 &&
			    gn_dpdk_classify(&d->filt,
					     rte_pktmbuf_mtod(m[i], u8 *),
					     m[i]->data_len, GN_DCS_UNKNOWN,
					     GN_DCS_UNKNOWN, &rx) != GN_DRX_UDP &&
			    rx.kind != GN_DRX_DROP)
				dtp_arp_in(d, &rx);
			rte_pktmbuf_free(m[i]);
		}
	}
	dtp_ctl_flush(d);
}

/* "rank 1 (10.0.0.2), rank 3 (...)": the peers still unknown. */
static void unknown_peers(struct dtp *d, char *buf, size_t len)
{
	size_t at = 0;
	int j;

	buf[0] = 0;
	for (j = 0; j < d->world && at < len; j++) {
		const u8 *ip = (const u8 *)&d->peers[j].ip;

		if (d->neigh[j].known)
			continue;
		at += (size_t)snprintf(buf + at, len - at, "%srank %d (%u.%u.%u.%u)",
				       at ? ", " : "", j, ip[0], ip[1], ip[2], ip[3]);
	}
}

int dtp_neigh_resolve(struct dtp *d, u32 timeout_ms, char *msg, size_t len)
{
	const struct timespec nap = { 0, RESOLVE_NAP_NS };
	u64 start = rte_get_timer_cycles(), now = start;
	u64 end = start + d->tsc_hz / 1000 * timeout_ms;
	char who[160];

	while (!neigh_ask(d, now)) {
		if (now >= end) {
			unknown_peers(d, who, sizeof(who));
			snprintf(msg, len, "no ARP reply within %u ms from %s: is it up, with that address, on the L2 segment of DPDK port %u? (or give its MAC in GN_DPDK_PEERS)",
				 timeout_ms, who, d->port);
			return -EHOSTUNREACH;
		}
		neigh_rx(d);
		nanosleep(&nap, NULL);
		now = rte_get_timer_cycles();
	}
	return 0;
}
