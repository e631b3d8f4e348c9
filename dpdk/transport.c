// SPDX-License-Identifier: MIT
/*
 * transport.c - gradnet's DPDK poll-mode transport: the table of
 * lib/transport/transport.h over one ethdev port with one queue pair or
 * several (one per codec worker where the port has RSS), putting on the
 * wire the same Ethernet/IPv4/UDP datagrams as the UDP-socket path; its
 * open and close. tx.c, rx.c, poll.c, port.c and neigh.c hold the rest.
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
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rte_cycles.h>
#include <rte_ethdev.h>
#include <rte_ether.h>
#include <rte_lcore.h>
#include <rte_mbuf.h>
#include <rte_mempool.h>

#include "dtp.h"

/*
 * The filter's counters as one JSON line in d->stats_path (GN_DPDK_STATS),
 * for tests and operators: frames dropped by reason, ARP traffic, peers
 * moved.
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
	fprintf(f, "{\"rank\": %u, \"arp_answered\": %llu, \"arp_asked\": %llu, \"arp_moved\": %llu, \"arp_ignored\": %llu, \"drops\": {",
		d->rank, (unsigned long long)d->arp_answered,
		(unsigned long long)d->arp_asked,
		(unsigned long long)d->arp_moved,
		(unsigned long long)d->arp_ignored);
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
	dtp_port_down(d);
	free(d->peers);
	free(d->peer_tab);
	free(d->neigh);
	free(d->rxq);
	dtp_port_release(d->port, d->shared ? d->queue : -1);
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
	.authentic = dtp_authentic,
	.poll = NULL,
	.wait = dtp_wait,
	.wake = dtp_wake,
	.close = dtp_close,
};

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
	if (!dtp_port_claim(c->port_id, c->queue)) {
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
	r = dtp_peers_init(d, c->peers, c->world);
	if (!r)
		r = dtp_neigh_init(d, c);
	if (r) {
		snprintf(msg, len, "out of memory");
		goto out_free;
	}
	r = d->shared ? dtp_port_attach(d, c, msg, len) :
			 dtp_port_start(d, c, msg, len);
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
	dtp_port_release(c->port_id, c->queue);
	return r;
}
