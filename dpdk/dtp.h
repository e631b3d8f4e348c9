/* SPDX-License-Identifier: MIT */
/*
 * dtp.h - the DPDK transport's state and the functions its files share:
 * transport.c (the table of lib/transport/transport.h, open and close),
 * tx.c (buffers and send), rx.c (receive), port.c (the port and its
 * pools), poll.c (the poll loop and idle waits), eal.c (the EAL) and
 * neigh.c (ARP). Private to dpdk/.
 */
#ifndef GN_DPDK_DTP_H
#define GN_DPDK_DTP_H

#include <pthread.h>
#include <stdbool.h>

#include <rte_ether.h>
#include <rte_mbuf.h>
#include <rte_mempool.h>

#include "filter.h"
#include "gn_dpdk.h"
#include "gradnet/wire.h"

#define BURST 64
#define ETH_LEN RTE_ETHER_HDR_LEN
#define HDRS (ETH_LEN + GN_WIRE_IPUDP)	/* Ethernet + IPv4 + UDP: 42 */
/*
 * The payload starts at a cache line of the data room, so the packer's
 * stores are aligned; the frame starts HDRS before it, which puts the IP
 * header on a 4-byte boundary too.
 */
#define PAYLOAD_OFF RTE_PKTMBUF_HEADROOM

_Static_assert(RTE_PKTMBUF_HEADROOM >= HDRS, "no room for the headers");

/* What the core knows of an mbuf, in its private area. */
struct mbuf_priv {
	struct gn_buf b;
	u16 hdr_peer;			/* the headers in front are for this peer */
	u16 hdr_len;			/* and this payload length */
	u32 hdr_gen;			/* and the peers' MACs of this mac_gen */
	bool moved;			/* rx: its frame came from @src_mac, not
					   the sender's known address */
	u8 src_mac[6];
};

/* gradnet's pools give every mbuf a cache line of private area. */
_Static_assert(sizeof(struct mbuf_priv) <= RTE_CACHE_LINE_SIZE,
	       "struct mbuf_priv outgrows the mbufs' private area");

/* Where a peer's MAC address comes from, and when to ask for it again. */
struct dtp_neigh {
	bool known;			/* peers[].mac holds it */
	bool fixed;			/* from the static list: never learnt */
	u32 tries;			/* ARP requests sent while it is unknown */
	u64 next_tsc;			/* the next one is due */
};

/*
 * One queue pair: on the receive side a burst read and not yet handed
 * out (wait reads ahead) and, with several queues, what its part of a
 * receive round left for recv: packets for the core, ARP frames for
 * neigh.c (which runs under the core's lock, after the parts); the
 * filter's drops, and the frames each way.
 */
struct dtp_rxq {
	struct rte_mbuf *rx[BURST];
	u16 rx_n, rx_i;
	u32 low_in;			/* packets until the rx pool is read again */
	bool low;			/* it ran low at the last read */
	struct gn_buf *ready[BURST];
	u16 ready_n, ready_i;
	struct rte_mbuf *arp[BURST];
	struct gn_dpdk_rx arp_rx[BURST];
	u16 arp_n;
	u64 drops[GN_DDROP_N];		/* frames the filter dropped, by reason */
	u64 rx_frames, tx_frames;	/* through this queue pair */
} __rte_cache_aligned;

struct dtp {
	u16 port;
	u16 queue;			/* the first rx and tx queue */
	u16 nq;				/* queue pairs: queue .. queue + nq - 1 */
	struct dtp_rxq *rxq;		/* @nq of them */
	/* Runs a round's parts, one per rx queue, on the codec workers. */
	void (*run)(void *arg, void (*fn)(void *, u32), void *fn_arg,
		    u32 parts);
	void *run_arg;
	bool shared;			/* the application's port: never configured,
					   started or stopped here */
	bool umem;			/* net_af_xdp: the rx pool is the socket's
					   UMEM, so the port closes with it */
	u16 rank, world;
	u32 max_pkt;
	u32 poll_ns;			/* longest idle sleep; 0: never sleep */
	u64 spin_tsc;			/* poll this long after traffic (cycles) */
	u64 active_tsc;			/* the last send or receive of a packet */
	bool tx_csum;			/* the port computes IPv4 and UDP checksums */
	int lcore;			/* whose CPUs the poll loop takes; -1: the
					   main lcore's (none on a shared port) */
	/* The poll loop's thread: lcore's own function, or ours. */
	bool launched;
	pthread_t poller;
	void *(*poller_fn)(void *);
	void *poller_arg;
	struct rte_mempool *tx_pool, *rx_pool;
	struct rte_ether_addr mac;
	u32 ip;				/* ours, network byte order */
	u16 udp_port;
	struct gn_dpdk_filter filt;	/* the same, for the receive filter */
	struct gn_dpdk_peer *peers;
	struct dtp_neigh *neigh;

	/* Senders by (IP, port): open addressing, at most half full. */
	u16 *peer_tab;
	u32 peer_mask;

	struct rte_mbuf *tx[BURST];
	int tx_cap;			/* mbufs per tx burst: fewer after a full
					   ring, back to BURST as they fit */
	struct rte_mbuf *ctl[BURST];	/* ARP frames of one recv */
	int ctl_n;

	u64 arp_answered, arp_asked;	/* requests for us, requests sent */
	u64 arp_moved;			/* peers moved to a new MAC address */
	u64 arp_ignored;		/* ARP that teaches nothing: replies to no
					   request of ours, announcements */
	u32 mac_gen;			/* bumped when a peer's MAC changes */
	const char *stats_path;

	/* The link: when it was last checked, when it went down (port.c). */
	u64 link_check_tsc, link_down_tsc;
	bool stopped;			/* a restart failed: not polled */
	u64 tsc_hz;

	/* wait() sleeps on @wake_word; wake() sets it. */
	u32 wake_word;
	u32 sleeping;
};

static inline struct mbuf_priv *priv_of(struct rte_mbuf *m)
{
	return rte_mbuf_to_priv(m);
}

static inline struct rte_mbuf *mbuf_of(struct gn_buf *b)
{
	return b->priv;
}

/* @m's gn_buf, pointing at the payload area, one reference (the mbuf's). */
static inline struct gn_buf *buf_init(struct rte_mbuf *m, u8 *data, u16 len)
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

/* tx.c */
struct gn_buf *dtp_get(void *tp);
void dtp_hold(void *tp, struct gn_buf *b);
void dtp_put(void *tp, struct gn_buf *b);
int dtp_send(void *tp, struct gn_buf *const *b, int n);

/* rx.c */
int dtp_peers_init(struct dtp *d, const struct gn_dpdk_peer *peers, int world);
int dtp_recv(void *tp, struct gn_buf **b, int max);
bool dtp_rx_any(struct dtp *d);

/* poll.c */
int dtp_wait(void *tp, int timeout_ms);
void dtp_wake(void *tp);

/* port.c */
bool dtp_port_claim(u16 port, int queue);
void dtp_port_release(u16 port, int queue);
int dtp_port_start(struct dtp *d, const struct gn_dpdk_conf *c, char *msg,
		   size_t len);
int dtp_port_attach(struct dtp *d, const struct gn_dpdk_conf *c, char *msg,
		    size_t len);
void dtp_port_down(struct dtp *d);
void dtp_link_watch(struct dtp *d);

/* neigh.c */
void dtp_arp_in(struct dtp *d, const struct gn_dpdk_rx *rx);
void dtp_ctl_flush(struct dtp *d);
int dtp_neigh_init(struct dtp *d, const struct gn_dpdk_conf *c);
int dtp_neigh_resolve(struct dtp *d, u32 timeout_ms, char *msg, size_t len);
void dtp_authentic(void *tp, struct gn_buf *b);

#endif /* GN_DPDK_DTP_H */
