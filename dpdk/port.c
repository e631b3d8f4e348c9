// SPDX-License-Identifier: MIT
/*
 * port.c - the DPDK transport's port and its pools: which context holds
 * which port or queue, configuring and starting a port gradnet owns (or
 * taking one queue of the application's), restarting it when its link
 * stays down, and closing every port gradnet configured when the process
 * ends.
 *
 * A port gradnet configured keeps its configuration, its pools and its
 * link from one context to the next: closing a context leaves the port
 * started, and the next context on it takes it as it is when it asks for
 * the same shape (queue pairs, MTU, tx pool), or sets it up anew. Ports
 * made from the EAL's arguments (--vdev) cannot be made again by the EAL
 * (it starts once per process), and two drivers cannot be stopped and
 * set up anew in place. A stopped net_memif server still lets its client
 * connect, into the queues that setting them up again replaces (the link
 * comes up, and what the client sends is read from rings it never
 * wrote): a context that needs another shape closes the port and probes
 * its device again from the same arguments (port_reprobe()). net_af_xdp's
 * rx pool is its socket's UMEM, which must live as long as the port is
 * open, and DPDK 22.11 never frees a closed port's UMEM, whose socket
 * then stays bound to the queue: another shape on it is refused until
 * the process ends.
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
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <rte_alarm.h>
#include <rte_cycles.h>
#include <rte_dev.h>
#include <rte_devargs.h>
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

/* A port gradnet configured, as it stays between contexts. */
struct port_setup {
	bool ours;			/* configured by gradnet: closed at exit */
	bool started;			/* not stopped by a failed restart */
	bool umem;			/* net_af_xdp: the rx pool is its UMEM */
	bool tx_csum;			/* it computes IPv4 and UDP checksums */
	u16 nq;				/* its shape: queue pairs (0: none yet), */
	u32 mtu, mbufs;			/* MTU and the tx pool size asked for */
	struct rte_mempool *tx_pool, *rx_pool;
};

/*
 * One context per port it owns, or per queue of an application's port:
 * a queue has one user. A port's setup is read and written by the
 * context that holds the port, and by ports_close() once none does.
 */
static pthread_mutex_t ports_lock = PTHREAD_MUTEX_INITIALIZER;
static bool port_busy[RTE_MAX_ETHPORTS];
static struct port_setup setups[RTE_MAX_ETHPORTS];
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

/* @s's pools, freed once nothing holds their mbufs. */
static void setup_pools_free(struct port_setup *s)
{
	rte_mempool_free(s->tx_pool);
	rte_mempool_free(s->rx_pool);
	s->tx_pool = NULL;
	s->rx_pool = NULL;
}

/*
 * Stop (and with @close, close) @port on the EAL's interrupt thread and
 * wait for it. Drivers handle their peers' control messages on that
 * thread: net_memif tears the link down there when its peer leaves
 * (unmaps and frees the shared regions), and again in the thread that
 * stops the port, with no lock between the two, so a port stopped while
 * its peer leaves would free the same memory twice (the EAL's "Invalid
 * memory", or a crash in rte_free). An alarm runs on that thread, one
 * handler after another, so the stop and the driver's handler never
 * overlap.
 */
struct port_stop {
	u16 port;
	bool close;
	bool done;
	pthread_mutex_t lock;
	pthread_cond_t cond;
};

static void port_stop_now(u16 port, bool close)
{
	rte_eth_dev_stop(port);
	if (close)
		rte_eth_dev_close(port);
}

static void port_stop_run(void *arg)
{
	struct port_stop *ps = arg;

	port_stop_now(ps->port, ps->close);
	pthread_mutex_lock(&ps->lock);
	ps->done = true;
	pthread_cond_signal(&ps->cond);
	pthread_mutex_unlock(&ps->lock);
}

static void port_stop_on_intr(u16 port, bool close)
{
	struct port_stop ps = {
		.port = port,
		.close = close,
		.lock = PTHREAD_MUTEX_INITIALIZER,
		.cond = PTHREAD_COND_INITIALIZER,
	};

	/* On that thread already, or without one: stop here. */
	if (rte_thread_is_intr() || rte_eal_alarm_set(1, port_stop_run, &ps)) {
		port_stop_now(port, close);
		return;
	}
	pthread_mutex_lock(&ps.lock);
	while (!ps.done)
		pthread_cond_wait(&ps.cond, &ps.lock);
	pthread_mutex_unlock(&ps.lock);
}

static void port_stop(u16 port)
{
	port_stop_on_intr(port, false);
}

/*
 * When the process ends (or the library is unloaded), close the ports
 * gradnet configured and no context holds (stopped first: DPDK closes no
 * started port), then free their pools. A port only stopped keeps what
 * its driver set up outside the process: net_af_xdp's XDP program stays
 * attached to the interface after the process is gone, and its sockets'
 * libxdp state is never freed. A port a context still holds is left
 * alone: a thread of that context may still poll it.
 */
__attribute__((destructor)) static void ports_close(void)
{
	u16 port;

	pthread_mutex_lock(&ports_lock);
	for (port = 0; port < RTE_MAX_ETHPORTS; port++) {
		struct port_setup *s = &setups[port];

		if (s->ours && !port_busy[port]) {
			port_stop_on_intr(port, true);
			setup_pools_free(s);
			s->ours = false;
		}
	}
	pthread_mutex_unlock(&ports_lock);
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

/*
 * Whether @c fits @d's port, whose capabilities are @info: the MTU and
 * the queue pairs it can take, into d->nq, and *@rss, the flows its RSS
 * can hash by. Sets d->umem.
 */
static int port_check(struct dtp *d, const struct gn_dpdk_conf *c,
		      const struct rte_eth_dev_info *info, u64 *rss,
		      char *msg, size_t len)
{
	u16 q;

	if (c->mtu < info->min_mtu || c->mtu > info->max_mtu) {
		snprintf(msg, len, "DPDK port %u (%s) takes an MTU of %u..%u, the job's is %u",
			 d->port, info->driver_name, info->min_mtu,
			 info->max_mtu, c->mtu);
		return -EINVAL;
	}
	/* memif in DPDK 22.11, for one, takes no frame over 1518 bytes. */
	if (info->max_rx_pktlen &&
	    ETH_LEN + c->mtu + RTE_ETHER_CRC_LEN > info->max_rx_pktlen) {
		snprintf(msg, len, "DPDK port %u (%s) takes frames of at most %u bytes (an MTU of %u), the job's MTU is %u",
			 d->port, info->driver_name, info->max_rx_pktlen,
			 info->max_rx_pktlen - ETH_LEN - RTE_ETHER_CRC_LEN,
			 c->mtu);
		return -EINVAL;
	}
	d->umem = !strcmp(info->driver_name, "net_af_xdp");
	if (d->umem && umem_chunk(umem_room(c->mtu)) > (u32)getpagesize()) {
		snprintf(msg, len, "DPDK port %u (%s) receives each frame into one page of %d bytes with its headroom: an MTU of at most %u, the job's is %u",
			 d->port, info->driver_name, getpagesize(),
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
	q = RTE_MIN(info->max_rx_queues, info->max_tx_queues);
	*rss = info->flow_type_rss_offloads &
	       (RTE_ETH_RSS_NONFRAG_IPV4_UDP | RTE_ETH_RSS_IPV4);
	if (c->queues > q) {
		snprintf(msg, len, "DPDK port %u (%s) has at most %u queue pairs, GN_DPDK_QUEUES is %u",
			 d->port, info->driver_name, q, c->queues);
		return -EINVAL;
	}
	d->nq = (u16)(c->queues ? c->queues :
		      *rss ? RTE_MAX(RTE_MIN(c->workers, (u32)q), 1u) : 1);
	return 0;
}

/* Configure, set up the queues of and start @d's port with d's pools. */
static int port_configure(struct dtp *d, const struct gn_dpdk_conf *c,
			  const struct rte_eth_dev_info *info, u64 rss,
			  char *msg, size_t len)
{
	const u64 tx_csum = RTE_ETH_TX_OFFLOAD_IPV4_CKSUM |
			    RTE_ETH_TX_OFFLOAD_UDP_CKSUM;
	const u64 rx_csum = RTE_ETH_RX_OFFLOAD_IPV4_CKSUM |
			    RTE_ETH_RX_OFFLOAD_UDP_CKSUM;
	struct rte_eth_conf pc = { 0 };
	struct rte_eth_txconf txc;
	int socket = rte_eth_dev_socket_id(d->port), r;
	u16 nrx = RX_DESC, ntx = TX_DESC, q;

	if (d->nq > 1 && rss) {
		pc.rxmode.mq_mode = RTE_ETH_MQ_RX_RSS;
		pc.rx_adv_conf.rss_conf.rss_hf = rss;
	}
	d->tx_csum = (info->tx_offload_capa & tx_csum) == tx_csum;
	if (d->tx_csum)
		pc.txmode.offloads = tx_csum;
	if ((info->rx_offload_capa & rx_csum) == rx_csum)
		pc.rxmode.offloads = rx_csum;
	pc.rxmode.mtu = c->mtu;
	r = rte_eth_dev_configure(d->port, d->nq, d->nq, &pc);
	if (!r) {
		setups[d->port].ours = true;
		r = rte_eth_dev_adjust_nb_rx_tx_desc(d->port, &nrx, &ntx);
	}
	if (r) {
		snprintf(msg, len, "DPDK port %u (%s): configuration with %u queue pairs and MTU %u refused: %s",
			 d->port, info->driver_name, d->nq, c->mtu,
			 rte_strerror(-r));
		return r;
	}
	txc = info->default_txconf;
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
			 d->port, info->driver_name, rte_strerror(-r));
		return r;
	}
	r = rte_eth_dev_set_mtu(d->port, (u16)c->mtu);
	if (r && r != -ENOTSUP) {
		snprintf(msg, len, "DPDK port %u (%s) refuses MTU %u: %s",
			 d->port, info->driver_name, c->mtu, rte_strerror(-r));
		return r;
	}
	r = rte_eth_dev_start(d->port);
	if (r)
		snprintf(msg, len, "DPDK port %u (%s) does not start: %s",
			 d->port, info->driver_name, rte_strerror(-r));
	return r;
}

/*
 * Drivers whose ports are closed and probed again for another shape,
 * rather than stopped and set up anew (the file's opening comment).
 */
static bool port_reprobed(const char *driver)
{
	return !strcmp(driver, "net_memif");
}

/*
 * Close @d's port, free its pools and probe its device again from the
 * arguments it was made with (the EAL's hotplug); *@info becomes the new
 * port's. The port keeps its number: a new port gets the lowest free one.
 */
static int port_reprobe(struct dtp *d, struct rte_eth_dev_info *info,
			char *msg, size_t len)
{
	struct rte_device *dev = info->device;
	const struct rte_devargs *da = rte_dev_devargs(dev);
	const char *args = da && da->args ? da->args : "";
	char name[RTE_DEV_NAME_MAX_LEN], *spec;
	u16 port = d->port;
	int r;

	snprintf(name, sizeof(name), "%s", rte_dev_name(dev));
	if (asprintf(&spec, "%s%s%s", name, *args ? "," : "", args) < 0) {
		snprintf(msg, len, "out of memory");
		return -ENOMEM;
	}
	port_stop_on_intr(d->port, true);
	setup_pools_free(&setups[d->port]);
	memset(&setups[d->port], 0, sizeof(setups[d->port]));
	r = rte_dev_remove(dev);
	if (!r)
		r = rte_dev_probe(spec);
	if (!r)
		r = rte_eth_dev_get_port_by_name(name, &port);
	if (!r && port != d->port)
		r = -EADDRINUSE;
	if (!r)
		r = rte_eth_dev_info_get(d->port, info);
	if (r)
		snprintf(msg, len, "DPDK port %u (\"%s\"): closed to be set up for another MTU, queue count or pool size, and probing it again failed: %s",
			 d->port, spec,
			 r == -EADDRINUSE ? "it came back as another port" :
					    rte_strerror(-r));
	free(spec);
	return r;
}

/*
 * The frames a port kept while no context held it, all for an earlier
 * context: freed, at most twice a ring's worth a queue.
 */
static void port_drain(struct dtp *d)
{
	struct rte_mbuf *m[BURST];
	u16 q, n;
	int i;

	for (q = 0; q < d->nq; q++)
		for (i = 0; i < 2 * RX_DESC / BURST; i++) {
			n = rte_eth_rx_burst(d->port, q, m, BURST);
			if (!n)
				break;
			rte_pktmbuf_free_bulk(m, n);
		}
}

/* @d on its port as an earlier context left it, started again if need be. */
static int port_resume(struct dtp *d, const char *driver, char *msg,
		       size_t len)
{
	struct port_setup *s = &setups[d->port];
	int r;

	d->tx_pool = s->tx_pool;
	d->rx_pool = s->rx_pool;
	d->umem = s->umem;
	d->tx_csum = s->tx_csum;
	if (!s->started) {
		r = rte_eth_dev_start(d->port);
		if (r) {
			/* So dtp_port_down() leaves it known as stopped. */
			d->stopped = true;
			snprintf(msg, len, "DPDK port %u (%s) does not start: %s",
				 d->port, driver, rte_strerror(-r));
			return r;
		}
		s->started = true;
	}
	port_drain(d);
	rte_eth_stats_reset(d->port);
	return rte_eth_macaddr_get(d->port, &d->mac);
}

int dtp_port_start(struct dtp *d, const struct gn_dpdk_conf *c, char *msg,
		   size_t len)
{
	struct port_setup *s = &setups[d->port], old;
	struct rte_eth_dev_info info;
	u64 rss;
	int r;

	r = rte_eth_dev_info_get(d->port, &info);
	if (!r)
		r = port_check(d, c, &info, &rss, msg, len);
	else
		snprintf(msg, len, "DPDK port %u: cannot read its capabilities: %s",
			 d->port, rte_strerror(-r));
	if (r)
		return r;
	if (s->ours && s->nq == d->nq && s->mtu == c->mtu &&
	    s->mbufs == c->mbufs)
		return port_resume(d, info.driver_name, msg, len);
	if (s->ours && s->nq && d->umem) {
		snprintf(msg, len, "DPDK port %u (%s) is set up for MTU %u, %u queue pairs, GN_DPDK_MBUFS=%u; DPDK 22.11 keeps a closed net_af_xdp port's socket bound, so it keeps that shape: open so, or in a new process",
			 d->port, info.driver_name, s->mtu, s->nq, s->mbufs);
		return -EINVAL;
	}
	if (s->ours && port_reprobed(info.driver_name)) {
		r = port_reprobe(d, &info, msg, len);
		if (!r)
			r = port_check(d, c, &info, &rss, msg, len);
		if (r)
			return r;
	}
	r = pools_create(d, c, rte_eth_dev_socket_id(d->port), msg, len);
	if (r) {
		/* The port is as it was: nothing for dtp_port_down() to undo. */
		rte_mempool_free(d->tx_pool);
		d->tx_pool = NULL;
		return r;
	}
	/* Set up anew: the old pools go once the queues hold the new ones. */
	old = *s;
	if (s->ours)
		port_stop(d->port);
	s->nq = 0;
	r = port_configure(d, c, &info, rss, msg, len);
	if (r) {
		s->started = false;
		return r;
	}
	if (old.tx_pool != d->tx_pool)
		setup_pools_free(&old);
	*s = (struct port_setup){
		.ours = true, .started = true, .umem = d->umem,
		.tx_csum = d->tx_csum, .nq = d->nq, .mtu = c->mtu,
		.mbufs = c->mbufs, .tx_pool = d->tx_pool,
		.rx_pool = d->rx_pool,
	};
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
 * The end of @d's use of its port. A port gradnet configured stays as it
 * is, started, with its pools, for the next context on it; the pools of
 * a setup that failed are freed once the port stops (for net_af_xdp,
 * closes: the kernel may still write into the UMEM's buffers). On the
 * application's port only the tx pool is ours, freed once the queue has
 * let its mbufs go.
 */
void dtp_port_down(struct dtp *d)
{
	struct port_setup *s = &setups[d->port];

	if (!d->shared) {
		if (s->ours && s->nq && s->tx_pool == d->tx_pool) {
			s->started = !d->stopped;
			return;
		}
		if (d->umem) {
			port_stop_on_intr(d->port, true);
			setup_pools_free(s);
			memset(s, 0, sizeof(*s));
		} else {
			port_stop(d->port);
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
