/* SPDX-License-Identifier: MIT */
/*
 * internal.h - libgradnet's shared state: the context, peers, tensors and
 * their steps, messages in flight, and the transport interface.
 *
 * Threads: the caller's thread compresses its contribution in
 * gn_allreduce_start() and sleeps in gn_allreduce_wait(); the context's
 * progress thread does all network I/O, acknowledgements, retransmission,
 * the owner's reduction and re-compression, and decoding of results.
 * ctx->lock guards everything below that is not marked immutable.
 */
#ifndef GN_INTERNAL_H
#define GN_INTERNAL_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>

#include <gradnet/codec.h>
#include <gradnet/gradnet.h>
#include <gradnet/wire.h>

#include "gn_deps.h"		/* u8..u64, gn_put_le*() */

#define GN_HIDDEN __attribute__((visibility("hidden")))
#define GN_ERRMSG_LEN 320


/* ---- transport: what the UDP, DPDK and kernel paths provide ---------- */

struct gn_addr {
	struct sockaddr_storage sa;
	socklen_t len;
};

struct gn_tx_pkt {
	const u8 *data;
	u16 len;
	u16 peer;
};

struct gn_rx_pkt {
	u8 *data;
	u16 len;
	struct gn_addr from;
};

struct gn_transport_ops {
	const char *name;
	/* Bind @self; *state gets the transport's private data. */
	int (*open)(const struct gn_addr *self, unsigned int max_pkt,
		    void **state);
	void (*close)(void *state);
	/* Send up to @n packets to @peers[pkt.peer]; returns how many went. */
	int (*send)(void *state, const struct gn_addr *peers,
		    const struct gn_tx_pkt *pkts, int n);
	/* Receive what is there, up to @max, without blocking. */
	int (*recv)(void *state, struct gn_rx_pkt *pkts, int max);
	/* Sleep until packets arrive, wake() is called, or @timeout_ms. */
	int (*wait)(void *state, int timeout_ms);
	void (*wake)(void *state);
};

extern const struct gn_transport_ops gn_udp_ops GN_HIDDEN;

#define GN_RX_BATCH 64		/* packets taken from the transport at once */

/* ---- messages: the packets of one chunk from one rank to one or all ---- */

/*
 * A message being sent. Packets are built once and kept until every
 * receiver has acknowledged them, so a retransmission is the same bytes.
 * @to: receiver rank, or GN_RANK_ALL for a gather message (same bytes to
 *	every other rank); @acked and @sent_ns then have one row per rank.
 */
struct gn_txmsg {
	struct gn_txmsg *next;		/* ctx->tx list */
	struct gn_step *step;		/* NULL once the step is over */
	struct gn_tensor *t;
	u32 tensor, stepno;
	u8 phase;
	u8 codec;
	u16 to;
	u64 chunk_off;
	u32 npkts;
	u8 *buf;			/* packets back to back */
	u32 *off;			/* npkts + 1 offsets into buf */
	u64 raw_bytes;			/* float bytes the message stands for */
	u8 *acked;			/* bitmaps, one row per receiver */
	u8 *again;			/* bitmaps: sent more than once */
	u64 *sent_ns;			/* last send, per receiver and packet */
	u32 *unacked;			/* per receiver */
	u32 *next_new;			/* per receiver: first never sent */
	u32 left;			/* receivers still owed something */
};

/*
 * A message being received, for duplicate detection and acknowledgement.
 * Slices that cannot be accumulated yet (rank order, see allreduce.c) are
 * kept as copies in @held.
 */
struct gn_held {
	struct gn_held *next;
	u32 first, count, scale;
	u16 len;
	u8 body[];
};

struct gn_rxmsg {
	u32 npkts;			/* 0 until the first packet */
	u32 got;
	u8 *seen;			/* bitmap of npkts */
	u64 *cover;			/* groups or values received, a bit each */
	bool ack_due;			/* has an entry in ctx->ackq */
	u32 ackq_idx;
	struct gn_held *held;
	/* for ACKs: identity */
	u16 from;
	u8 phase;
	u32 tensor, stepno;
	u64 chunk_off;
};

/*
 * An acknowledgement waiting to go out. It points at its message while that
 * exists; a message freed with its step leaves an "all of it" entry if it
 * was complete (else the entry is dropped: the step failed).
 */
struct gn_ackq {
	u16 peer;
	u8 phase;
	bool all;
	bool dead;
	u32 tensor, step, npkts;
	u64 chunk_off;
	struct gn_rxmsg *m;
};

/* ---- tensors and steps ------------------------------------------------ */

/* One allreduce of one tensor: everything that a failed step throws away. */
struct gn_step {
	u32 no;
	struct gn_tensor *t;
	float *data;			/* caller's tensor; NULL until started */
	bool started;
	u64 start_ns;			/* when this rank started it */
	bool encoding;			/* the caller's thread is compressing */
	bool done;
	int err;
	char errmsg[GN_ERRMSG_LEN];
	/* This rank as owner of its shard. */
	struct gn_rxmsg *red;		/* [rank * own chunks + c] */
	u16 *turn;			/* [c]: contributions added (own first, then
					   by rank); world+1 when sent */
	u8 *todo;			/* [c]: chunk may have work (progress) */
	u32 todo_n;
	u32 own_done;			/* own chunks checked and ready to add */
	/* Results from every owner. */
	struct gn_rxmsg *gat;		/* [t->gat_off[owner] + c] */
	u32 gat_left;			/* chunks not yet fully decoded */
};

struct gn_peer_desc {
	bool have;
	u64 elems;
	u8 codec;
	u8 flags;
	u32 s_bits;
};

/*
 * A peer's tensor descriptor that came before this rank registered it, or
 * (@abort_err set) its abort of step @base of a registration this rank
 * has not made yet.
 */
struct gn_pending_desc {
	struct gn_pending_desc *next;
	u16 peer;
	u32 id;
	u32 base;			/* of the registration it describes */
	struct gn_peer_desc desc;
	u64 abort_err;			/* the ABORT's value and extra */
	u32 abort_culprit;
};

/*
 * A tensor id that was unregistered: its next registration numbers its
 * steps after @stepno, so packets of the old one are stale there.
 */
struct gn_retired {
	struct gn_retired *next;
	u32 id;
	u32 stepno;
};

struct gn_tensor {
	struct gn_tensor *next;
	u32 id;
	size_t n;
	u8 codec;			/* GN_WIRE_CODEC_* */
	float s;
	u32 s_bits;
	unsigned int flags;
	size_t *lo;			/* shard j is [lo[j], lo[j+1]) */
	u32 *chunks;			/* chunks of shard j */
	u32 *gat_off;			/* first gather message of shard j */
	u32 chunks_total;
	u32 base;			/* steps before this registration */
	u32 stepno;			/* last started */
	bool busy;			/* started, not yet waited for */
	u32 done_no;			/* last step with a known outcome */
	int done_err;
	char done_msg[GN_ERRMSG_LEN];
	int proto_err;			/* a peer registered it differently */
	char proto_msg[GN_ERRMSG_LEN];
	struct gn_step *cur;		/* started, or receiving early */
	struct gn_step *early;		/* peers already on the next step */
	/* Error feedback, double-buffered: e_*[e_cur] is committed. */
	float *e_rs[2];			/* whole tensor, reduce direction */
	float *e_ag[2];			/* own shard, gather direction */
	int e_cur;
	u8 *q;				/* scratch: a round's groups (caller) */
	float *m;
	u8 *gq;				/* scratch: a chunk's groups (progress) */
	struct gn_peer_desc *desc;	/* [peer] what each registered */
	struct gn_stats stats;
};

/* ---- peers ------------------------------------------------------------- */

struct gn_ctrl_out {
	struct gn_ctrl_out *next;
	u32 seq;
	u64 sent_ns;
	u16 len;
	u8 pkt[GN_WIRE_HDR_LEN + GN_WIRE_CTRL_LEN + GN_WIRE_TAG];
};

/* Congestion windows in fixed point, as TCP's are integers in the kernel. */
#define GN_CWND_SHIFT 16
#define GN_CWND_ONE (1ull << GN_CWND_SHIFT)

struct gn_peer {
	int rank;
	struct gn_addr addr;
	char name[128];			/* "rank 2 (10.0.0.3:7000)" */
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
	u32 mac_failures;
	/* reliable control messages */
	u32 ctrl_seq;
	struct gn_ctrl_out *ctrl_q;
	u32 ctrl_seen_base;		/* every seq <= this was seen */
	u64 ctrl_seen_bits;		/* seq base+1+i seen */
	u32 pending_descs;		/* its entries in ctx->pending */
	/* congestion and timing */
	u64 srtt_ns, rttvar_ns;		/* 0: no sample yet */
	u64 rto_ns;
	u64 cwnd, ssthresh;		/* packets, in GN_CWND_ONE units */
	u32 inflight;
	u64 last_loss_ns;
	u64 rack_ns;			/* latest send time acknowledged */
	struct gn_stats stats;
};

/* ---- the context -------------------------------------------------------- */

struct gn_ctx {
	/* immutable after open */
	int rank, world;
	u32 job;
	u8 version;
	unsigned int mtu, max_pkt, chunk;
	u64 timeout_ns;
	u64 step_timeout_ns;
	u8 codec;
	float s;
	u32 s_bits;
	bool insecure;
	struct gn_mac *job_mac;		/* the job key: HELLOs; NULL when insecure */
	struct gn_mac *mac;		/* the session key, from the handshake on:
					   every other packet; NULL when insecure */
	u64 instance;
	struct gn_peer *peers;
	struct gn_addr *addrs;
	const struct gn_transport_ops *tp;
	void *tp_state;
	pthread_t thread;

	pthread_mutex_t lock;
	pthread_cond_t cond;
	bool stop;
	bool ready;			/* handshake done */
	int open_err;
	int pending_err;		/* handshake mismatch, reported at */
	u64 fail_at_ns;			/* ... after a grace period */
	char errmsg[GN_ERRMSG_LEN];
	char api_errmsg[GN_ERRMSG_LEN];
	int dead_peer;			/* first peer found dead, or -1 */
	u64 deadlines_ns;		/* next look at step deadlines */
	struct gn_tensor *tensors;
	struct gn_tensor **tensor_tab;	/* by id: open addressing, <= half full */
	u32 tensor_mask, tensor_count;
	struct gn_pending_desc *pending;
	struct gn_retired *retired;	/* unregistered ids */
	struct gn_txmsg *tx;		/* messages with packets owed */
	struct gn_ackq *ackq;		/* acknowledgements not yet sent */
	u32 ackq_n, ackq_cap;
	u32 ack_pkts;			/* packets they cover */
	u64 ack_due_ns;			/* when the oldest must go */
	struct gn_stats stats;
	struct gn_rx_pkt *rx_batch;	/* GN_RX_BATCH, for receive() */
	struct gn_tx_batch *tx_batch;	/* for gn_tx_pump() */
	u64 now_ns;			/* progress thread's clock */
	u32 work_n;			/* chunks waiting in some step's todo */
};

/* ctx.c */
u64 gn_now_ns(void) GN_HIDDEN;
void gn_set_err(struct gn_ctx *ctx, char *buf, const char *fmt, ...)
	__attribute__((format(printf, 3, 4))) GN_HIDDEN;
void gn_count_drop(struct gn_ctx *ctx, struct gn_peer *p, int reason) GN_HIDDEN;
int gn_opts_check(const void *opts, size_t sz, size_t known) GN_HIDDEN;

int gn_ctx_alloc(struct gn_ctx **out, int world) GN_HIDDEN;
void gn_ctx_free(struct gn_ctx *ctx) GN_HIDDEN;
int gn_ctx_parse_peers(struct gn_ctx *ctx, const char *list) GN_HIDDEN;

/*
 * What the test library (tests/lib) hooks into: NULL in every process
 * that does not link it, which no shipped program does.
 * @open: after the options are read, before the transport opens: may
 *	wrap ctx->tp or change ctx->version; -errno and a message fail the open
 * @session: the session key is derived from @info
 */
struct gn_test_hooks {
	int (*open)(struct gn_ctx *ctx, char *msg, size_t len);
	void (*session)(struct gn_ctx *ctx, const u8 *info, size_t len);
};

extern const struct gn_test_hooks *gn_test_hooks GN_HIDDEN;

/* progress.c */
void *gn_progress_main(void *arg) GN_HIDDEN;
void gn_packet_in(struct gn_ctx *ctx, const struct gn_rx_pkt *rx) GN_HIDDEN;
int gn_send_now(struct gn_ctx *ctx, int peer, const u8 *pkt, u16 len) GN_HIDDEN;
void gn_hdr_init(struct gn_ctx *ctx, struct gn_wire_hdr *h, u8 type, int to)
	GN_HIDDEN;
int gn_ctrl_send(struct gn_ctx *ctx, int peer, u8 kind, u8 flags,
		 u32 tensor, u32 stepno, u8 codec, u64 value, u32 extra)
	GN_HIDDEN;
void gn_peer_dead(struct gn_ctx *ctx, struct gn_peer *p) GN_HIDDEN;
void gn_peer_rtt(struct gn_peer *p, u64 sample_ns) GN_HIDDEN;

/* reliable.c */
struct gn_txmsg *gn_txmsg_new(struct gn_ctx *ctx, u32 npkts, size_t bytes)
	GN_HIDDEN;
void gn_txmsg_queue(struct gn_ctx *ctx, struct gn_txmsg *m) GN_HIDDEN;
void gn_txmsg_free(struct gn_txmsg *m) GN_HIDDEN;
void gn_tx_pump(struct gn_ctx *ctx) GN_HIDDEN;
struct gn_tx_batch *gn_tx_batch_new(void) GN_HIDDEN;
u64 gn_tx_deadline(struct gn_ctx *ctx) GN_HIDDEN;
void gn_tx_drop_step(struct gn_ctx *ctx, struct gn_step *st) GN_HIDDEN;
void gn_tx_drop_peer(struct gn_ctx *ctx, int peer) GN_HIDDEN;
void gn_ack_in(struct gn_ctx *ctx, struct gn_peer *p,
	       const struct gn_wire_hdr *h, const u8 *pkt) GN_HIDDEN;
int gn_rxmsg_mark(struct gn_ctx *ctx, struct gn_rxmsg *m,
		  const struct gn_wire_hdr *h, const struct gn_wire_data *d)
	GN_HIDDEN;
void gn_ack_flush(struct gn_ctx *ctx) GN_HIDDEN;
void gn_ack_maybe(struct gn_ctx *ctx) GN_HIDDEN;
void gn_ack_all(struct gn_ctx *ctx, int peer, const struct gn_wire_hdr *h,
		const struct gn_wire_data *d) GN_HIDDEN;
void gn_rxmsg_take(struct gn_rxmsg *m, u32 pkt) GN_HIDDEN;
void gn_rxmsg_clear(struct gn_ctx *ctx, struct gn_rxmsg *m) GN_HIDDEN;

/* allreduce.c */
void gn_data_in(struct gn_ctx *ctx, struct gn_peer *p,
		const struct gn_wire_hdr *h, const u8 *pkt) GN_HIDDEN;
void gn_ctrl_in(struct gn_ctx *ctx, struct gn_peer *p,
		const struct gn_wire_hdr *h, const struct gn_wire_ctrl *c)
	GN_HIDDEN;
bool gn_ctrl_fits(struct gn_ctx *ctx, const struct gn_peer *p,
		  const struct gn_wire_hdr *h, const struct gn_wire_ctrl *c)
	GN_HIDDEN;
void gn_fail_all(struct gn_ctx *ctx, int err, const char *msg) GN_HIDDEN;
void gn_tensor_free(struct gn_tensor *t) GN_HIDDEN;
void gn_tensor_destroy(struct gn_ctx *ctx, struct gn_tensor *t) GN_HIDDEN;
void gn_run_work(struct gn_ctx *ctx, unsigned int budget) GN_HIDDEN;
void gn_step_deadlines(struct gn_ctx *ctx) GN_HIDDEN;
struct gn_tensor *gn_tensor_find(struct gn_ctx *ctx, u32 id) GN_HIDDEN;

#endif /* GN_INTERNAL_H */
