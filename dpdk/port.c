// SPDX-License-Identifier: MIT
/*
 * port.c - the DPDK transport's port and its pools: which context holds
 * which port or queue, configuring and starting a port gradnet owns (or
 * taking one queue of the application's), stopping it, restarting it when
 * its link stays down, and closing every port gradnet configured when the
 * process ends.
 *
 * Two pools: tx buffers come from one, the rx queue fills from the other.
 * The core packs a whole step into tx buffers before it is acknowledged,
 * and with one pool it could leave the rx queue no mbuf for the very ACKs
 * that free them. Received packets that the core holds (a slice waiting
 * for its turn) stay in their rx mbufs, unless the rx pool runs low: then
 * packets are copied into tx buffers as they are handed out (rx.c), so
 * the rx queue never starves.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <rte_alarm.h>
#include <rte_cycles.h>
#include <rte_errno.h>
#include <rte_ethdev.h>
#include <rte_interrupts.h>
#include <rte_mbuf.h>
#include <rte_mbuf_pool_ops.h>
#include <rte_mempool.h>

#include "dtp.h"

#define RX_DESC 1024
#define TX_DESC 1024
/* The rx pool: for one queue, and 2 * RX_DESC more for each other. */
#define RX_POOL 8191
#define TX_POOL_MAX 131071
/* The tx pool's share of memory when its size is not given (rounded up). */
#define TX_POOL_BYTES (256u << 20)
#define POOL_CACHE 256
/* A link down this long gets its port restarted (see dtp_link_watch()). */
#define LINK_CHECK_MS 100
#define LINK_RESTART_MS 1000

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
bool dtp_port_claim(u16 port, int queue)
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

void dtp_port_release(u16 port, int queue)
{
	pthread_mutex_lock(&ports_lock);
	if (queue < 0)
		port_busy[port] = false;
	else
		queue_busy[port][queue / 64] &= ~(1ull << (queue % 64));
	pthread_mutex_unlock(&ports_lock);
}

/* Did a context of this process close @port (net_af_xdp)? */
bool dtp_port_closed(u16 port)
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
 * between the two, so a port stopped while its peer leaves would free the
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
	 * so the MAC and the decoder read contiguous bytes (a frame in
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

int dtp_port_start(struct dtp *d, const struct gn_dpdk_conf *c, char *msg,
		   size_t len)
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
int dtp_port_attach(struct dtp *d, const struct gn_dpdk_conf *c, char *msg,
		    size_t len)
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

/*
 * A port whose link stays down is stopped and started again: a memif
 * client that connected before its server's port started was turned away
 * and does not try again by itself, and a NIC may recover the same way.
 * Called under the core's lock, so no send runs meanwhile.
 */
void dtp_link_watch(struct dtp *d)
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

/*
 * The end of @d's use of its port: a port gradnet configured is stopped
 * and its pools freed; on the application's port only the tx pool is
 * ours, freed once the queue has let its mbufs go.
 */
void dtp_port_down(struct dtp *d)
{
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
}
