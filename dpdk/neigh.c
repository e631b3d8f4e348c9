// SPDX-License-Identifier: MIT
/*
 * neigh.c - the DPDK path's neighbours: ARP requests for our address are
 * answered (kernel peers on the same L2 find us with no setup), and peers
 * whose MAC address the static list (GN_DPDK_PEERS) does not give are
 * resolved by ARP when the transport opens: requests go out again after
 * 100 ms, doubling up to a second, until every peer answered or the
 * job's timeout passed; the error then names the ranks that did not.
 *
 * Resolution happens at open, so the data path never meets a peer without
 * an address. A request from a peer while we still look for it counts as
 * its answer (its sender fields are the same), which spares a round trip
 * when two DPDK ranks start together.
 *
 * A learnt address can change during a job (a NIC replaced, a VM moved, a
 * rank restarted on another port): any ARP request or reply to us, or
 * gratuitous ARP, from a peer's IP with another sender MAC moves it there
 * (a kernel that changes its MAC forgets its neighbours and asks again
 * before it sends; with arp_notify it also announces the change), and the
 * headers stamped on mbufs are redone (a generation number). A peer that
 * does not ask (it has a static neighbour entry for us) still sends from
 * its new address: a datagram from a peer's IP and port but another MAC
 * has us ask for that peer again by broadcast, at most once per
 * NEIGH_ASK_MS, and its reply moves it. The datagram itself, not yet
 * authenticated, moves nothing. Addresses from the static list never move.
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
/* A peer heard from another MAC is asked for at most this often. */
#define NEIGH_ASK_MS 500
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

/*
 * @rx's sender is the address of every peer at its IP not from the static
 * list: learnt if unknown, moved if it was elsewhere.
 */
static void neigh_learn(struct dtp *d, const struct gn_dpdk_rx *rx)
{
	const u8 *ip = (const u8 *)&rx->src_ip, *m = rx->src_mac;
	int j;

	for (j = 0; j < d->world; j++) {
		struct dtp_neigh *n = &d->neigh[j];

		if (j == d->rank || n->fixed || d->peers[j].ip != rx->src_ip)
			continue;
		if (n->known) {
			if (!memcmp(d->peers[j].mac, m, RTE_ETHER_ADDR_LEN))
				continue;
			d->mac_gen++;
			d->arp_moved++;
			fprintf(stderr, "gradnet: dpdk: rank %d (%u.%u.%u.%u) is now at %02x:%02x:%02x:%02x:%02x:%02x\n",
				j, ip[0], ip[1], ip[2], ip[3],
				m[0], m[1], m[2], m[3], m[4], m[5]);
		}
		memcpy(d->peers[j].mac, m, RTE_ETHER_ADDR_LEN);
		n->known = true;
	}
}

void dtp_arp_in(struct dtp *d, const struct gn_dpdk_rx *rx)
{
	struct rte_ether_addr to;

	if (rx->kind == GN_DRX_ARP_REQUEST) {
		memcpy(to.addr_bytes, rx->src_mac, RTE_ETHER_ADDR_LEN);
		arp_queue(d, RTE_ARP_OP_REPLY, &to, rx->src_mac, rx->src_ip);
		d->arp_answered++;
	}
	neigh_learn(d, rx);
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
 * Peers whose datagrams came from another MAC address (rx_filter() in
 * rx.c sets doubt) are asked for again, each at most once per
 * NEIGH_ASK_MS. Called under the core's lock, from the receive path.
 */
void dtp_neigh_doubt(struct dtp *d, u64 now)
{
	int j;

	d->doubt = false;
	for (j = 0; j < d->world; j++) {
		struct dtp_neigh *n = &d->neigh[j];

		if (!n->doubt)
			continue;
		if (now < n->next_tsc) {
			d->doubt = true;
			continue;
		}
		n->doubt = false;
		n->next_tsc = now + d->tsc_hz / 1000 * NEIGH_ASK_MS;
		arp_ask(d, d->peers[j].ip);
		d->arp_reasked++;
	}
}

/*
 * Whatever the rx queues hold now: ARP handled, the rest freed. Every
 * queue: ARP need not come in on the first (net_af_packet's fanout
 * hashes it to any of its sockets).
 */
static void neigh_rx(struct dtp *d)
{
	struct rte_mbuf *m[BURST];
	struct gn_dpdk_rx rx;
	u16 n, i, q;

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
