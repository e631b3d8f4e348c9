/* SPDX-License-Identifier: MIT */
/*
 * transport.h - what the protocol core asks of a data path: packet
 * buffers the transport owns, sending and receiving them, and a poll.
 *
 * The UDP-socket path (udp.c), the in-memory test fabric (mem.c), the
 * DPDK path (dpdk/) and the kernel module implement this one table; the
 * core (lib/delivery, lib/collective) sees nothing else of them.
 *
 * Buffers. The packer asks for a buffer (get) and encodes straight into
 * its data room: a socket batch slot, an mbuf, an skb. A buffer is
 * counted: get returns it with one reference; hold adds one, put drops
 * one, and the last put gives it back to the transport. The core keeps
 * its reference on a packet until every receiver has acknowledged it, so
 * a retransmission sends the very same buffer again. send never takes the
 * caller's reference: a transport that still needs a buffer after send
 * returns (an mbuf in a TX ring) holds it itself.
 *
 * Receive hands out buffers with one reference each, with the sender
 * already resolved to a rank (or GN_PEER_NONE); the core puts each one
 * when it is done with it, or holds it for later (zero copy). A received
 * buffer's bytes are the receiver's alone, shared with no sender and no
 * other packet: the core decrypts bodies in place.
 *
 * Threads: one caller at a time, except wake(), which any thread may
 * call. get/hold/put may be called from the same context as send.
 */
#ifndef GN_TRANSPORT_H
#define GN_TRANSPORT_H

#include "gn_deps.h"

/* The sender of a received packet is no rank of the job. */
#define GN_PEER_NONE 0xffffu

struct gn_buf {
	u8 *data;			/* caps.max_pkt bytes of room */
	u16 len;			/* bytes of the packet */
	u16 peer;			/* tx: receiver rank; rx: sender rank */
	u32 refs;			/* the transport's business */
	struct gn_buf *next;		/* for the current holder to chain */
	void *priv;			/* the transport's: mbuf, skb, slot */
};

/* Capabilities: what the core may rely on. */
#define GN_TP_CSUM	0x1u		/* checksums are offloaded */
#define GN_TP_SEGMENT	0x2u		/* equal-size runs to one peer go as one
					   segmented send (UDP GSO, TSO) */

struct gn_tp_caps {
	u32 max_pkt;			/* largest packet, MAC tag included */
	u32 flags;			/* GN_TP_* */
};

struct gn_transport_ops {
	const char *name;
	/* A tx buffer with one reference, or NULL if none is free now. */
	struct gn_buf *(*get)(void *tp);
	void (*hold)(void *tp, struct gn_buf *b);
	void (*put)(void *tp, struct gn_buf *b);
	/*
	 * Send @b[0..n) to b[i]->peer, in order. Return: how many it took
	 * (the rest are back-pressure: try later), or -errno if none could go
	 * for a reason other than back-pressure.
	 */
	int (*send)(void *tp, struct gn_buf *const *b, int n);
	/* Received packets, up to @max, without blocking. */
	int (*recv)(void *tp, struct gn_buf **b, int max);
	/*
	 * Optional: received @b passed the core's checks up to its MAC
	 * under the session key, so the rank it names made it (or it is a
	 * recording of such a packet). A transport that learns a peer's
	 * address from what it receives (the DPDK path) moves the peer to a
	 * frame's source only then. Called before the core uses @b.
	 */
	void (*authentic)(void *tp, struct gn_buf *b);
	/*
	 * The transport's own timed work (optional, NULL if none): returns
	 * how much it did; *next_ns gets the earliest time it wants to run
	 * again (left alone if never).
	 */
	int (*poll)(void *tp, u64 now_ns, u64 *next_ns);
	/*
	 * For a driver that sleeps (optional: a poll-mode driver never calls
	 * them): sleep until packets arrive, wake() is called or @timeout_ms
	 * passes.
	 */
	int (*wait)(void *tp, int timeout_ms);
	void (*wake)(void *tp);
	void (*close)(void *tp);
};

struct gn_transport {
	const struct gn_transport_ops *ops;
	void *state;
	struct gn_tp_caps caps;
};

#endif /* GN_TRANSPORT_H */
