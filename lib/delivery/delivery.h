/* SPDX-License-Identifier: MIT */
/*
 * delivery.h - the delivery layer: peers, the handshake and session key,
 * liveness, reliable delivery of messages (data and control alike) with
 * acknowledgements, RTT and a congestion window in fixed point, and the
 * one place where every packet event is counted.
 *
 * It knows packets, peers and messages, not tensors: the layer above (the
 * collective) registers upcalls for what arrives and hands down messages
 * whose packets it built in transport buffers. It calls only the
 * transport, the wire format and the environment.
 *
 * Every packet is checked in this order before it can touch any state:
 * length and header, source, job, tag (gn_wire_open(), which decrypts the
 * body), then its packet number against the sender's window; each failure
 * is counted by reason. Only then does the packet's type matter.
 */
#ifndef GN_DELIVERY_H
#define GN_DELIVERY_H

#include <gradnet/gradnet.h>
#include <gradnet/wire.h>

#include "env.h"
#include "transport.h"

#define GN_ERRMSG_LEN 320
#define GN_NAME_LEN 128

/* Congestion windows in fixed point, as TCP's are integers in the kernel. */
#define GN_CWND_SHIFT 16
#define GN_CWND_ONE (1ull << GN_CWND_SHIFT)

#define GN_RX_BATCH 64		/* packets taken from the transport at once */
#define GN_TX_BATCH 256		/* packets handed to the transport at once */

struct gn_dl;
struct gn_txmsg;

/*
 * One packet of a message, to one receiver, once sent: it sits on its
 * peer's list of packets in flight, which is kept in the order they were
 * (re)sent, oldest first. So the retransmission timer and time-based loss
 * detection (RACK) of a peer look only at the head of its list, and the
 * next deadline is the head's send time plus the RTO.
 */
struct gn_txpkt {
	struct gn_txpkt *prev, *next;
	struct gn_txmsg *m;
	u64 sent_ns;			/* 0: never sent (or not taken) */
	u32 i;				/* packet index in the message */
	u16 row;
	u8 acked;
	u8 again;			/* sent more than once */
};

/* A message's state towards one receiver. */
struct gn_txrow {
	struct gn_txrow *prev, *next;	/* its peer's queue of rows owing new packets */
	struct gn_txmsg *m;
	u32 unacked;
	u32 next_new;			/* first packet never sent */
	bool queued;			/* on the peer's new-packet queue */
	bool done;			/* owes nothing: acknowledged or cancelled */
};

/*
 * A message being sent: packets in transport buffers, kept until every
 * receiver has acknowledged them, so a retransmission sends the very same
 * buffer. @to is a rank, or GN_RANK_ALL for the same bytes to every other
 * rank (a row per rank). Data messages are found by their identity
 * (tensor, step, phase, chunk), control messages by (peer, seq).
 *
 * The layer above allocates a message once (gn_dl_msg_new(), at tensor
 * registration) for the most packets it can have and reuses it.
 */
struct gn_txmsg {
	struct gn_txmsg *hnext;		/* identity hash chain */
	u64 pn;				/* packet i is numbered pn + i */
	bool busy;			/* queued, some receiver owes an ack */
	bool ctl;			/* a control message: counted as control */
	u8 phase;			/* GN_PHASE_*, or GN_PHASE_CTRL */
	u16 to;
	u32 tensor, stepno;		/* control: 0, seq */
	u64 chunk_off;
	u32 npkts, cap;			/* packets, room for */
	u32 rows;
	u32 left;			/* receivers still owed something */
	u64 raw_bytes;			/* float bytes the message stands for */
	u64 stream_bytes;		/* chunk-stream bytes (3LC scale included) */
	const u8 *gate;			/* [peer]: may send to it yet? NULL: yes */
	struct gn_stats *flow;		/* the tensor's counters, or NULL */
	void *owner;			/* the layer above's (its step) */
	struct gn_txmsg *up_next;	/* for the layer above to chain */
	struct gn_buf **pkt;		/* [cap] */
	struct gn_txrow *row;		/* [rows] */
	struct gn_txpkt *sent;		/* [rows * cap] */
};

/* Control messages carry a phase of their own in the identity hash. */
#define GN_PHASE_CTRL 0xff

/* A message being received, for duplicate detection and acknowledgement. */
struct gn_rxmsg {
	u32 npkts;			/* 0 until the first packet */
	u32 got;
	u32 cap;			/* room in @seen, in packets */
	u8 *seen;			/* bitmap: the layer above provides it */
	bool ack_due;			/* has an entry in the ack queue */
	u32 ackq_idx;
	u16 from;
	u8 phase;
	u32 tensor, stepno;
	u64 chunk_off;
};

struct gn_ackq {
	u16 peer;
	u8 phase;
	bool all;
	bool dead;
	bool held;			/* waits past this flush */
	u64 at_ns;			/* queued then */
	u32 tensor, step, npkts;
	u64 chunk_off;
	struct gn_rxmsg *m;
};

/* An ACK packet being filled for one peer. */
struct gn_ack_out {
	struct gn_buf *b;
	u32 len;
	u32 entries;
	int peer;
};

/* ---- peers -------------------------------------------------------------- */

/*
 * The packet numbers a peer's session packets came with (replay.c): the
 * highest, and a bitmap of the GN_REPLAY_BITS - 64 numbers below it, as
 * RFC 6479 keeps one.
 */
#define GN_REPLAY_WORDS 32
#define GN_REPLAY_BITS (64 * GN_REPLAY_WORDS)

struct gn_replay {
	u64 top;			/* 0: none yet */
	u64 bits[GN_REPLAY_WORDS];	/* number n is bit n % 64 of word n / 64 */
};

enum gn_pn_seen {
	GN_PN_NEW,			/* never seen: noted now */
	GN_PN_SEEN,			/* in the window, seen before */
	GN_PN_OLD,			/* below the window: cannot tell */
};

struct gn_peer {
	int rank;
	char name[GN_NAME_LEN];		/* "rank 2 (10.0.0.3:7000)" */
	u64 last_rx_ns;
	u64 last_ping_ns;
	bool hello_in;			/* got its HELLO, it matches */
	bool hello_acked;		/* it has ours */
	bool told_reply;		/* we sent it a HELLO saying we have its */
	u64 instance;			/* its instance in this session */
	u64 heard;			/* the instance its last HELLO named */
	u64 pong_floor;			/* PONGs must echo a later PING */
	u8 version_seen;		/* another protocol version, if it spoke one */
	bool dead;
	u32 mac_failures;		/* packets that failed gn_wire_open() */
	u64 answer_at;			/* HELLO answers: the rate limit's clock */
	struct gn_replay replay;
	/* control messages */
	u32 ctrl_seq;
	u32 ctrl_seen_base;		/* every seq <= this was seen */
	u64 ctrl_seen_bits;		/* seq base+1+i seen */
	/* sending: packets in flight in send order, rows owing new packets */
	struct gn_txpkt *fly_head, *fly_tail;
	struct gn_txrow *newq_head, *newq_tail;
	/* congestion and timing */
	u64 srtt_ns, rttvar_ns;		/* 0: no sample yet */
	u64 rto_ns;
	u64 cwnd, ssthresh;		/* packets, in GN_CWND_ONE units */
	u32 inflight;
	u64 last_loss_ns;
	u64 rack_ns;			/* latest send time acknowledged */
	/* tail-loss probes (send.c) */
	u64 prtt_ns;			/* smoothed round trip of PINGs, 0: none */
	u64 probe_ns;			/* stamp of a probe not answered, or 0 */
	u8 probe_backoff;		/* probes since one was answered */
	u32 probe_credit;		/* bytes of probes the data sent allows */
	struct gn_stats stats;
};

/* ---- accounting ----------------------------------------------------------- */

enum gn_event_type {
	GN_EV_MSG,		/* a message starts to one receiver */
	GN_EV_TX,		/* a data packet sent (again: retransmitted) */
	GN_EV_TX_CTL,		/* a control packet sent */
	GN_EV_RX,		/* a data packet taken */
	GN_EV_DROP,		/* a packet dropped, for @reason */
	GN_EV_STEP,		/* this rank finished step @step of @tensor */
};

/*
 * One packet event. A flow is (job, this rank, @peer, @tensor, @phase);
 * the tracing issue hangs its probes on gn_dl_account().
 *
 * The account upcall sees events coalesced: @count events of one kind
 * and flow (same type, peer, tensor, phase, reason and again), their
 * bytes summed, and @flow NULL (the counters were updated per event
 * already). Callers of gn_dl_account() pass one event, @count 0.
 */
struct gn_event {
	u8 type;
	u8 phase;
	u8 reason;			/* GN_DROP_*, for GN_EV_DROP */
	bool again;
	int peer;			/* -1: unknown sender */
	u32 tensor;
	u32 count;			/* upcall: events (packets, messages) */
	u64 wire_bytes;
	u64 raw_bytes, stream_bytes;	/* GN_EV_MSG */
	u32 step;			/* GN_EV_STEP */
	u64 ns;				/* GN_EV_STEP: since this rank started it */
	struct gn_stats *flow;		/* the tensor's counters, or NULL */
};

/*
 * Events held back from the account upcall, at most one per flow, until
 * a flush: few enough to scan, enough for the flows one poll interleaves
 * (two phases from each of a few peers).
 */
#define GN_ACCT_PENDING 4

/* Control packets that wait for room in the transport, at most. */
#define GN_CTL_PARK 32

/*
 * The delivery layer's own counters, for tests and diagnosis, not in the
 * ABI: why packets went again, and what the tail-loss probes did.
 */
struct gn_dl_counts {
	u64 rtx_lost;			/* RACK: a later send acked, or a probe answered */
	u64 rtx_timeout;		/* the retransmission timeout passed */
	u64 probes;			/* tail-loss probes (PINGs) sent */
	u64 probe_answers;		/* PONGs that answered one */
	u64 probe_lost;			/* packets a PONG, not an ACK, showed lost */
	u64 probe_slow;			/* probes that waited for credit */
	u64 ping_flushes;		/* PINGs in that found acknowledgements owed */
	u64 ctl_parked;			/* control packets the transport did not take at once */
	u64 ctl_dropped;		/* parked ones dropped, the park full */
};

/* ---- what the layer above registers ------------------------------------ */

struct gn_dl_up {
	/* A data packet, authenticated, from a live peer. */
	void (*data_in)(void *up, struct gn_peer *p, const struct gn_wire_hdr *h,
			struct gn_buf *b);
	/* May a new control message be taken now? If not, it is not
	 * acknowledged and its sender repeats it. */
	bool (*ctrl_fits)(void *up, const struct gn_peer *p,
			  const struct gn_wire_hdr *h, const struct gn_wire_ctrl *c);
	void (*ctrl_in)(void *up, struct gn_peer *p, const struct gn_wire_hdr *h,
			const struct gn_wire_ctrl *c);
	/* @p acknowledged this rank's control message @seq (optional). */
	void (*ctrl_acked)(void *up, struct gn_peer *p, u32 seq);
	/* @p went silent: its messages are dropped already. */
	void (*peer_dead)(void *up, struct gn_peer *p, const char *msg);
	/* Every packet event, after the counters (optional). */
	void (*account)(void *up, const struct gn_event *ev);
	/*
	 * May the acknowledgement @q (of a whole message) be left out, because
	 * a packet this rank already sent to its sender tells it as much
	 * (optional; gn_dl_ack_implied() is the sender's side)?
	 */
	bool (*ack_implied)(void *up, const struct gn_ackq *q);
};

/*
 * A rank's address as the peer-list digest reads it: the same bytes
 * whatever the OS's sockaddr looks like, so every data path (libgradnet,
 * the kernel module) digests a list alike.
 */
struct gn_peer_addr {
	u16 family;			/* 4 or 6 */
	u16 port;			/* host order */
	u8 addr[16];			/* IPv4 in the first 4 bytes, then 0 */
};

/* The digest of a job's ordered peer list, in every HELLO (wire.h). */
#define GN_PEERS_DIGEST_LEN GN_WIRE_HELLO_BODY

struct gn_dl_conf {
	int rank, world;
	u32 job;
	u8 version;
	u32 mtu, max_pkt, chunk;
	u64 timeout_ns;
	const u8 *key;			/* NULL: insecure */
	bool clear;			/* bodies authenticated, not encrypted */
	void (*on_session)(const u8 *info, size_t len);
};

/*
 * The keys of a context (lib/wire/seal.c), in one block that is wiped
 * when it is freed: the job's, this rank's HELLO key, and every rank's
 * sender key of the session (zero until the handshake is done).
 */
struct gn_dl_keys {
	u8 job[GN_MAC_KEY_LEN];
	u8 hello[GN_SEAL_KEY_LEN];
	u8 sender[][GN_SEAL_KEY_LEN];
};

/* ---- the delivery state of a context ---------------------------------- */

struct gn_dl {
	/* immutable after init */
	int rank, world;
	u32 job;
	u8 version;
	u32 mtu, max_pkt, chunk;
	u64 timeout_ns;
	bool insecure;
	u64 instance;
	const struct gn_env *env;
	struct gn_transport *tp;
	const struct gn_dl_up *up;
	void *up_arg;
	struct gn_dl_keys *keys;	/* NULL when insecure */
	size_t keys_size;
	u8 seal_flags;			/* GN_SEAL_CLEAR: bodies in the clear */
	u64 pn;				/* the last packet number handed out */
	struct gn_peer *peers;

	u64 now_ns;
	u64 start_ns;			/* of the handshake */
	u64 hello_next_ns;
	bool ready;			/* handshake done */
	int open_err;
	int pending_err;		/* handshake mismatch, reported at */
	u64 fail_at_ns;			/* ... after a grace period */
	char errmsg[GN_ERRMSG_LEN];
	int dead_peer;			/* first peer found dead, or -1 */

	/* messages by identity: chained hash, grown by gn_dl_reserve() */
	struct gn_txmsg **msg_tab;
	u32 msg_mask, msg_count, msg_room;
	u32 busy_msgs;			/* messages owing something */
	struct gn_txmsg *ctrl_free;	/* control messages not in use */

	/* acknowledgements not yet sent, room reserved by gn_dl_reserve() */
	struct gn_ackq *ackq;
	u32 ackq_n, ackq_cap, ack_room;
	u32 ack_pkts;			/* packets they cover */
	u64 ack_due_ns;			/* when the oldest must go */
	struct gn_ack_out ack_out;

	struct gn_stats stats;
	/* events not yet given to the account upcall (gn_dl_account()) */
	struct gn_event acct[GN_ACCT_PENDING];
	u32 acct_n;
	struct gn_dl_counts counts;
	/* control packets the transport did not take, oldest first (send.c) */
	struct gn_buf *park[GN_CTL_PARK];
	u32 park_head, park_n;
	struct gn_buf *rx[GN_RX_BATCH];
	struct gn_buf *tx[GN_TX_BATCH];
	struct gn_txpkt *tx_pend[GN_TX_BATCH];
	u8 tx_why[GN_TX_BATCH];
	u8 *session_info;		/* for the session key, sized at init */
	void (*on_session)(const u8 *info, size_t len);
	/* of the peer list this rank was given; zero until the driver sets it */
	u8 peers_digest[GN_PEERS_DIGEST_LEN];
};

/* The session key's input: job, world, version, instances, peers digest. */
static inline size_t gn_dl_session_info_len(int world)
{
	return 8 + 8 * (size_t)world + GN_PEERS_DIGEST_LEN;
}

/* delivery.c */
int gn_dl_init(struct gn_dl *dl, const struct gn_dl_conf *conf,
	       const struct gn_env *env, struct gn_transport *tp,
	       const struct gn_dl_up *up, void *up_arg);
void gn_dl_destroy(struct gn_dl *dl);
/* A poll in two halves, so the layer above works in between. */
void gn_dl_poll_rx(struct gn_dl *dl);
u64 gn_dl_poll_tx(struct gn_dl *dl);
/* Room for @msgs more data messages and @acks more receive messages. */
int gn_dl_reserve(struct gn_dl *dl, u32 msgs, u32 acks);
void gn_dl_unreserve(struct gn_dl *dl, u32 msgs, u32 acks);
void gn_dl_msg_hash_add(struct gn_dl *dl, struct gn_txmsg *m);
void gn_dl_msg_hash_del(struct gn_dl *dl, struct gn_txmsg *m);
struct gn_txmsg *gn_dl_msg_find(struct gn_dl *dl, int peer, u32 tensor,
				u32 step, u8 phase, u64 off);
void gn_dl_account(struct gn_dl *dl, const struct gn_event *ev);
/* Give the events held back to the account upcall now. */
void gn_dl_account_flush(struct gn_dl *dl);
void gn_dl_drop(struct gn_dl *dl, struct gn_peer *p, int reason);
bool gn_dl_owes(const struct gn_dl *dl);
void gn_dl_set_err(char *buf, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* send.c: messages */
struct gn_txmsg *gn_dl_msg_new(struct gn_dl *dl, u32 rows, u32 cap);
void gn_dl_msg_free(struct gn_dl *dl, struct gn_txmsg *m);
/* A transport buffer for one packet, or NULL. */
struct gn_buf *gn_dl_buf(struct gn_dl *dl);
void gn_dl_buf_put(struct gn_dl *dl, struct gn_buf *b);
void gn_dl_buf_hold(struct gn_dl *dl, struct gn_buf *b);
/*
 * Seal a packet of @len bytes (tag appended) in @b for @to under this
 * rank's session key, with the next packet number. Return: 0, or -errno
 * and @b is not to be sent.
 */
int gn_dl_seal(struct gn_dl *dl, struct gn_buf *b, u16 len, int to);
/* The same for this rank's HELLOs, under its HELLO key. */
int gn_dl_seal_hello(struct gn_dl *dl, struct gn_buf *b, u16 len, int to);
/*
 * Seal packet @i of @m, in @m->pkt[i], with the number @m was given when
 * it was emptied (gn_dl_msg_clear()): any thread may seal the packets of
 * a message it packs.
 */
int gn_dl_seal_msg(struct gn_dl *dl, struct gn_txmsg *m, u32 i, u16 len,
		   int to);
void gn_dl_hdr_init(const struct gn_dl *dl, struct gn_wire_hdr *h, u8 type,
		    int to);
/* Start sending @m (its packets, identity and owner set). */
void gn_dl_msg_queue(struct gn_dl *dl, struct gn_txmsg *m);
/* Stop sending @m: its receivers owe nothing any more. */
void gn_dl_msg_cancel(struct gn_dl *dl, struct gn_txmsg *m);
/* Release @m's packets once it is not busy (or cancelled). */
void gn_dl_msg_clear(struct gn_dl *dl, struct gn_txmsg *m);
/* @params: GN_WIRE_PARAM_WORDS words (a TENSOR's), or NULL for zeros. */
int gn_dl_ctrl_send(struct gn_dl *dl, int peer, u8 kind, u8 flags, u32 tensor,
		    u32 stepno, u8 codec, u64 value, u32 extra,
		    const u32 *params);
/* Wake a driver sleeping in the transport: there is something to send. */
void gn_dl_kick(struct gn_dl *dl);
/*
 * Send one unreliable packet (HELLO, PING, ACK...) now, or after those
 * the transport could not take yet (the park): it is put.
 */
void gn_dl_send_now(struct gn_dl *dl, struct gn_buf *b);
/* Seal and send one such packet; if it cannot be sealed it is put, lost. */
void gn_dl_seal_send(struct gn_dl *dl, struct gn_buf *b, u16 len, int to);
bool gn_dl_park_flush(struct gn_dl *dl);

/* The oldest parked packet, out of the park (there is one). */
static inline struct gn_buf *gn_dl_park_pop(struct gn_dl *dl)
{
	struct gn_buf *b = dl->park[dl->park_head];

	dl->park_head = (dl->park_head + 1) % GN_CTL_PARK;
	dl->park_n--;
	return b;
}
void gn_dl_pump(struct gn_dl *dl);
u64 gn_dl_tx_deadline(struct gn_dl *dl);
void gn_dl_ack_in(struct gn_dl *dl, struct gn_peer *p,
		  const struct gn_wire_hdr *h, const u8 *pkt);
/*
 * @p has all of this rank's data message (@tensor, @step, @phase, @off),
 * as another packet of its shows: that row ends as if acknowledged.
 */
void gn_dl_ack_implied(struct gn_dl *dl, struct gn_peer *p, u32 tensor,
		       u32 step, u8 phase, u64 off);
/* Has a packet of @m gone to @peer (or did @peer acknowledge it all)? */
bool gn_dl_msg_sent_to(const struct gn_txmsg *m, int peer);
void gn_dl_ctrl_ack_in(struct gn_dl *dl, struct gn_peer *p,
		       const struct gn_wire_hdr *h, const u8 *pkt);
/*
 * @p answered our PING of @stamp: it has acknowledged every packet that
 * reached it before the PING did, so RACK's clock moves to @stamp.
 */
void gn_dl_pong_in(struct gn_dl *dl, struct gn_peer *p, u64 stamp);
void gn_dl_drop_peer(struct gn_dl *dl, int peer);
void gn_dl_peer_rtt(struct gn_peer *p, u64 sample_ns);

/* receive.c */
void gn_dl_receive(struct gn_dl *dl);
void gn_dl_packet_in(struct gn_dl *dl, struct gn_buf *b);
/* Note a data packet of @m: 0 new, 1 duplicate, -EBADMSG contradicts, -ENOSPC too many packets. */
int gn_dl_rx_mark(struct gn_dl *dl, struct gn_rxmsg *m,
		  const struct gn_wire_hdr *h, const struct gn_wire_data *d);
void gn_dl_rx_take(struct gn_rxmsg *m, u32 pkt);
/* @m is forgotten (its step is over): a complete one is still acked. */
void gn_dl_rx_clear(struct gn_dl *dl, struct gn_rxmsg *m);
void gn_dl_ack_flush(struct gn_dl *dl);
/* Everything owed to @peer, now, implied or not (a PING asks). */
void gn_dl_ack_flush_peer(struct gn_dl *dl, int peer);
void gn_dl_ack_maybe(struct gn_dl *dl);
/* Acknowledge a whole message of a step that is over, so retries stop. */
void gn_dl_ack_all(struct gn_dl *dl, int peer, const struct gn_wire_hdr *h,
		   const struct gn_wire_data *d);

/* replay.c */
enum gn_pn_seen gn_replay_note(struct gn_replay *w, u64 pn);

/* peer.c */
void gn_dl_peers_tick(struct gn_dl *dl);
void gn_dl_hello_in(struct gn_dl *dl, struct gn_peer *p,
		    const struct gn_wire_hdr *h, const u8 *pkt);
void gn_dl_ping_in(struct gn_dl *dl, struct gn_peer *p,
		   const struct gn_wire_hdr *h, const u8 *pkt);
void gn_dl_peer_dead(struct gn_dl *dl, struct gn_peer *p);
/* A PING to @p. Return: its stamp, later than every one before. */
u64 gn_dl_ping_send(struct gn_dl *dl, struct gn_peer *p);
u64 gn_dl_peers_deadline(const struct gn_dl *dl);
/*
 * The digest of @world ranks' addresses @a in rank order, with the job id:
 * ranks whose lists differ in any address or in the order refuse each
 * other at the handshake.
 */
int gn_dl_peers_digest(const struct gn_peer_addr *a, int world, u32 job,
		       u8 out[GN_PEERS_DIGEST_LEN]);
/* The digest of the list this rank was given: before the handshake starts. */
void gn_dl_set_peers_digest(struct gn_dl *dl, const u8 *digest);

#endif /* GN_DELIVERY_H */
