/* SPDX-License-Identifier: MIT */
/*
 * gn_dpdk.h - gradnet's DPDK poll-mode transport as libgradnet sees it: the
 * EAL brought up once per process, and lib/transport/transport.h's table
 * over one port and one queue pair or several, peers found by ARP or a
 * list. No DPDK type appears here (SPDK's env.h boundary): the caller
 * passes plain addresses.
 *
 * Built without libdpdk (absent.c), both functions fail with -EOPNOTSUPP
 * and say why.
 */
#ifndef GN_DPDK_TP_H
#define GN_DPDK_TP_H

#include <stddef.h>

#include "transport.h"

/* Where rank j is on the wire; what the static neighbour list holds. */
struct gn_dpdk_peer {
	u8 mac[6];			/* all zero: resolved by ARP at open (and
					   for the own rank: the port's) */
	u32 ip;				/* IPv4 address, network byte order */
	u16 port;			/* UDP port, network byte order */
};

/* GN_DPDK_SPIN_US's default: a step's packets come closer together. */
#define GN_DPDK_SPIN_US_DEFAULT 1000

struct gn_dpdk_conf {
	u16 port_id;			/* the ethdev port, started by the transport */
	int world, rank;
	const struct gn_dpdk_peer *peers;	/* @world entries, copied */
	u32 mtu;			/* IP MTU: the port is set to it */
	u32 max_pkt;			/* largest UDP payload, <= mtu - 28 */
	u32 mbufs;			/* tx pool size; 0: sized from the MTU */
	u32 poll_us;			/* longest idle sleep; 0: poll, never sleep */
	u32 spin_us;			/* after a packet sent or received, poll
					   this long before any sleep */
	u32 arp_timeout_ms;		/* resolving peers without a MAC gives up */
	int lcore;			/* the poll loop runs on this lcore's CPUs;
					   -1: the main lcore's, or, on the
					   application's port, where it is */
	int queue;			/* -1: the transport configures, starts and
					   stops the port (@queues below); >= 0:
					   the application did, and this rx and
					   tx queue are the transport's */
	const char *stats_path;		/* NULL, or a file for the filter's
					   counters, written at close */
	/*
	 * Queue pairs on a port the transport configures: @queues if not 0
	 * (-EINVAL if the port has fewer; over memif both ends need the
	 * same count), else one per codec worker (@workers) where the port
	 * hashes flows to queues (RSS), else one.
	 */
	u32 queues, workers;
	/*
	 * With several queues: runs @fn(@fn_arg, part) for every part in
	 * [0, @parts), spread over the codec workers (one rx queue each);
	 * NULL: in turn on the caller.
	 */
	void (*run)(void *arg, void (*fn)(void *, u32), void *fn_arg,
		    u32 parts);
	void *run_arg;
};

/*
 * gn_dpdk_eal_init() - bring the EAL up once per process
 * @args: EAL arguments separated by spaces (as on a command line, no
 *	quoting), or NULL; ignored once the EAL is up, by an earlier call or
 *	by the application itself
 * @msg: why it failed, @len bytes
 *
 * Return: 0, or -errno from the EAL (-ENOMEM without hugepages, say).
 */
int gn_dpdk_eal_init(const char *args, char *msg, size_t len);

/*
 * gn_dpdk_open() - the transport over port @conf->port_id
 * @tp: filled with the table, the state and the capabilities
 * @conf: addresses and sizes, copied
 * @msg: why it failed, @len bytes
 *
 * With @conf->queue >= 0 the port is the application's, configured and
 * started by it with that rx and tx queue left to gradnet: the transport
 * takes the port's MTU and offloads as they are, receives into the
 * application's rx mempool, pins no thread and never stops the port. ARP
 * and gradnet's UDP port must reach that queue (the application's flow
 * rules), or @conf gives every peer's MAC.
 *
 * Peers whose MAC @conf does not give are resolved by ARP before it
 * returns: requests are sent again until each answers or
 * @conf->arp_timeout_ms passes (meanwhile ARP requests for our address
 * are answered, so ranks that resolve each other meet).
 *
 * A port the transport configured outlives the context: closing leaves
 * it started with its pools, and the next open on it takes it as it is
 * when @conf asks for the same queue pairs, MTU and tx pool size, or sets
 * it up anew (port.c says how; a net_af_xdp port keeps its first shape),
 * so a process may open and close contexts any number of times. Every
 * such port closes when the process ends.
 *
 * Return: 0, -EINVAL (bad arguments, a queue the port lacks, an MTU over
 * the port's, another shape on a net_af_xdp port), -ENODEV (no such
 * port), -EBUSY (the port or queue is in use by another context), -ENOMEM
 * (no memory for the mbuf pools), -EHOSTUNREACH (a peer did not answer
 * ARP: the message names its rank and address), or the -errno of the
 * port's configuration (an MTU it refuses, for one).
 */
int gn_dpdk_open(struct gn_transport *tp, const struct gn_dpdk_conf *conf,
		 char *msg, size_t len);

/*
 * gn_dpdk_poller_start() - start @fn(@arg), the loop that polls the
 * transport @tp (gn_dpdk_open()'s state) between a caller's steps, on
 * the lcore of @conf->lcore: as that lcore's function where it is a
 * worker lcore of the EAL running nothing, else on a thread pinned to its
 * CPUs (or the main lcore's). @fn returns when told to stop.
 *
 * Return: 0, or -errno if no thread could start.
 */
int gn_dpdk_poller_start(void *tp, void *(*fn)(void *), void *arg);

/* gn_dpdk_poller_join() - wait for the loop to return, before closing @tp. */
void gn_dpdk_poller_join(void *tp);

#endif /* GN_DPDK_TP_H */
