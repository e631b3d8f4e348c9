/* SPDX-License-Identifier: MIT */
/*
 * core.h - the collective layer's state: the context, tensors and their
 * steps, shared by the files of lib/collective. Drivers see collective.h.
 *
 * Rank j owns shard j of every tensor. Each rank quantizes its gradient
 * shard by shard and sends shard j to rank j (reduce); the owner adds the
 * contributions by rank, chunk by chunk, re-quantizes the sum with its own
 * error feedback and sends the same bytes to every rank (gather); every
 * rank decodes those bytes into the caller's tensor. So results are
 * bit-identical on every rank and under any loss, duplication or
 * reordering.
 *
 * Memory: a tensor's steps, receive state and messages are allocated when
 * it is registered (two of each, for a step and the next one, which a
 * faster peer may already be sending); a step reuses them.
 */
#ifndef GN_COLLECTIVE_CORE_H
#define GN_COLLECTIVE_CORE_H

#include "codec/codec.h"
#include "collective.h"
#include "delivery.h"
#include "model.h"

/*
 * The caller's side compresses in rounds of ENCODE_BATCH chunks per
 * worker: in each round the next chunks of every other shard, then takes
 * the own shard's (which it adds as it is). So owners start adding while
 * later chunks are still being compressed, and one quantizer call still
 * covers several chunks (its passes overlap).
 */
#define ENCODE_BATCH 4
/* With workers: ENCODE_BATCH chunks each, this many at most (spread.c). */
#define ENCODE_BATCH_MAX 32
/* Chunks of owner work per batch, at most (4 per worker). */
#define GN_WORK_MAX 16

/* A message being received, with what the collective keeps of it. */
struct gn_rx {
	struct gn_rxmsg m;		/* delivery's part: seen, acks */
	u64 *cover;			/* groups or values received, a bit each */
	struct gn_buf **held;		/* slices not added yet: the packets */
	u32 held_n;
};

/* One allreduce of one tensor: everything that a failed step throws away. */
struct gn_step {
	u32 no;
	struct gn_tensor *t;
	bool live;			/* in use as t->cur or t->early */
	float *data;			/* caller's tensor; NULL until started */
	float *params;			/* a model tensor's parameters */
	u32 lr;				/* and its learning rate, float32 bits */
	bool started;
	u64 start_ns;			/* when this rank started it */
	bool encoding;			/* the caller's thread is compressing */
	bool done;
	int err;
	char errmsg[GN_ERRMSG_LEN];
	/* This rank as owner of its shard. */
	struct gn_rx *red;		/* [rank * own chunks + c] */
	u16 *turn;			/* [c]: contributions added (own first, then
					   by rank); world+1 when sent */
	u8 *todo;			/* [c]: chunk may have work (progress) */
	u32 todo_n;
	u32 own_done;			/* own chunks checked and ready to add */
	/* Results from every owner. */
	struct gn_rx *gat;		/* [t->gat_off[owner] + c] */
	u32 gat_left;			/* chunks not yet fully decoded */
	/* The index round (index.c), by chunk g = t->gat_off[owner] + c. */
	u32 *ix;			/* [t->ix_off[g] ...]: chunk g's set */
	u8 *ixs;			/* [g]: GN_IX_* */
	struct gn_rx *irx;		/* [g]: its leader's index message */
	u32 *encq;			/* chunks to encode when polled */
	u32 encq_n;
	void *mem;			/* the arrays above, one block */
	size_t mem_len;
};

struct gn_peer_desc {
	bool have;
	u64 elems;
	u8 codec;
	u8 flags;
	u32 layout;			/* a bucket's layout hash; 0: a tensor */
	u32 model;			/* a model tensor's digest; 0: none */
	struct gn_codec_params params;
};

/* A descriptor's flags bit: the tensor is a model tensor. */
#define GN_DESC_MODEL 0x80u

/*
 * A tensor descriptor's value is the element count (below 2^40) and, in
 * its top 24 bits, a bucket's layout hash (0 for a plain tensor), so
 * ranks that cut a bucket into different members refuse each other.
 */
#define GN_DESC_ELEMS_BITS 40
#define GN_DESC_ELEMS_MASK ((1ull << GN_DESC_ELEMS_BITS) - 1)

/*
 * A bucket's members as registered: @elems[i] values each, back to back
 * in one buffer. @shared: chunks may span members (one scale for all).
 */
struct gn_layout {
	const size_t *elems;
	u32 members;
	bool shared;
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
	const struct gn_codec_ops *cd;	/* its compressor */
	struct gn_codec_params params;	/* and the compressor's parameters */
	struct gn_model *model;		/* a model tensor's; NULL: none */
	unsigned int flags;
	size_t *lo;			/* shard j is [lo[j], lo[j+1]) */
	u32 *chunks;			/* chunks of shard j */
	u32 *gat_off;			/* first message of shard j */
	u32 chunks_total;
	/*
	 * A bucket's chunks, cut at member bounds so that each member keeps
	 * its own scale: chunk c of shard j is [ck_off[i], + ck_len[i]) for
	 * i = gat_off[j] + c. NULL for a tensor (and a shared-scale bucket),
	 * whose chunks are every ctx->chunk values of a shard.
	 */
	size_t *ck_off;
	u32 *ck_len;
	u32 layout;			/* layout hash (control.c); 0: a tensor */
	u32 members;			/* a bucket's members; 0: a tensor */
	u32 pkts_cap;			/* most packets of a chunk's message */
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
	struct gn_step steps[2];	/* by step number parity */
	/*
	 * Messages by step parity, [gat_off[j] + c]: to owner j for another
	 * rank's shard, to every rank (the result) for the own shard.
	 */
	struct gn_txmsg **msg[2];
	/* Error feedback, double-buffered: e_*[e_cur] is committed. */
	float *e_rs[2];			/* whole tensor, reduce direction */
	float *e_ag[2];			/* own shard, gather direction */
	int e_cur;
	u8 *scratch;			/* a span's encoded chunks (caller) */
	u32 *zhint;			/* [gat_off[j] + c]: the entropy stage's
					   first try of each message (pack.c) */
	size_t stride;			/* bytes of one chunk's scratch */
	u32 *aux;			/* a span's chunk words (caller) */
	/* The index round (index.c): chunk g's set is at ix_off[g] of a
	 * step's; a leader's messages by step parity at [g / world]. */
	u32 *ix_off;
	u32 ipkts_cap;
	struct gn_txmsg **imsg[2];
	/* [peer]: it registered this tensor and has our registration */
	u8 *ready;
	u32 *desc_seq;			/* [peer]: our descriptor's seq until acked */
	struct gn_peer_desc *desc;	/* [peer] what each registered */
	struct gn_stats stats;
	u32 reserved_msgs, reserved_acks;
};

struct gn_ctx {
	struct gn_dl dl;
	/* immutable after open */
	int rank, world;
	u32 chunk, max_pkt;
	struct gn_codec_spec codec;	/* tensors' default */
	u64 step_timeout_ns;
	const struct gn_env *env;
	void *drv;			/* the driver's own state */
	void (*account)(void *arg, const struct gn_event *ev);
	void *account_arg;

	char api_errmsg[GN_ERRMSG_LEN];
	u64 deadlines_ns;		/* next look at step deadlines */
	struct gn_tensor *tensors;
	struct gn_tensor **tensor_tab;	/* by id: open addressing, <= half full */
	u32 tensor_mask, tensor_count;
	struct gn_pending_desc *pending;
	u32 *pending_descs;		/* [peer]: its entries in @pending */
	struct gn_retired *retired;	/* unregistered ids */
	struct gn_txmsg *orphans;	/* messages replaced while still busy */
	u64 orphans_made;		/* how many, ever: each one allocation */
	u32 work_n;			/* chunks waiting in some step's todo */
	struct gn_spread *spread;	/* codec work cut for the env's workers */
	struct gn_stage *stage;		/* the entropy stage's contexts (stage.c) */
};

#define GN_PENDING_DESCS 4096

/*
 * The codec of a phase's streams and its parameters: a model tensor's
 * results are its changes, in the model's codec.
 */
static inline const struct gn_codec_ops *
gn_phase_codec(const struct gn_tensor *t, u8 phase,
	       const struct gn_codec_params **p)
{
	if (phase == GN_PHASE_GATHER && t->model) {
		*p = &t->model->params;
		return t->model->cd;
	}
	*p = &t->params;
	return t->cd;
}

/* tensor.c */
struct gn_tensor *gn_tensor_find(struct gn_ctx *ctx, u32 id);
void gn_tensor_destroy(struct gn_ctx *ctx, struct gn_tensor *t);
bool gn_older_registration(const struct gn_ctx *ctx, const struct gn_tensor *t,
			   u32 id, u32 no);
size_t gn_chunk_at(const struct gn_ctx *ctx, const struct gn_tensor *t, int j,
		   u32 c, size_t *len);
long gn_chunk_of(const struct gn_ctx *ctx, const struct gn_tensor *t, int j,
		 const struct gn_wire_data *d);
u32 gn_pkts_max(const struct gn_ctx *ctx, const struct gn_tensor *t,
		size_t len);
size_t gn_step_carve(const struct gn_ctx *ctx, const struct gn_tensor *t,
		     struct gn_step *st);
int gn_tensor_add(struct gn_ctx *ctx, const struct gn_core_tensor *o,
		  const struct gn_layout *lay, const struct gn_core_model *mo);

/* bucket.c */
int gn_bucket_layout(struct gn_ctx *ctx, struct gn_tensor *t,
		     const struct gn_layout *lay);
long gn_bucket_chunk_of(const struct gn_tensor *t, int j, u64 off);

/* step.c */
struct gn_step *gn_step_new(struct gn_ctx *ctx, struct gn_tensor *t, u32 no);
void gn_step_free(struct gn_ctx *ctx, struct gn_step *st);
void gn_step_fail(struct gn_ctx *ctx, struct gn_step *st, int err,
		  const char *msg);
void gn_step_abort(struct gn_ctx *ctx, struct gn_step *st, int err,
		   const char *why);
void gn_step_report(struct gn_ctx *ctx, struct gn_step *st);
void gn_step_gathered(struct gn_ctx *ctx, struct gn_step *st);
struct gn_step *gn_step_for(struct gn_ctx *ctx, struct gn_tensor *t, u32 no,
			    bool *stale);
void gn_step_deadlines(struct gn_ctx *ctx);
void gn_abort_peers(struct gn_ctx *ctx, struct gn_step *st, int err,
		    int culprit);
void gn_fail_all(struct gn_ctx *ctx, int err, const char *msg);
struct gn_txmsg *gn_step_msg(struct gn_ctx *ctx, struct gn_step *st, u32 idx);
struct gn_txmsg *gn_slot_msg(struct gn_ctx *ctx, struct gn_txmsg **slot);
int gn_step_start(struct gn_ctx *ctx, u32 id, float *data, float *params,
		  u32 lr, bool model);

/* pack.c */
struct msg_shape {
	u8 phase;
	u16 to;
	u64 chunk_off;
	u32 chunk_len;
	u32 aux;
};

struct gn_entropy_enc;
int gn_pack(struct gn_ctx *ctx, struct gn_txmsg *m, struct gn_tensor *t,
	    u32 stepno, const struct msg_shape *ms, const void *scratch,
	    const float *x, struct gn_entropy_enc *z, u32 *hint);
int gn_pack_index(struct gn_ctx *ctx, struct gn_txmsg *m, struct gn_tensor *t,
		  u32 stepno, const struct msg_shape *ms, const u32 *idx);
/* What a packing error @r (not -EDOM) means, for a step's message. */
const char *gn_pack_failure(int r);
void gn_msg_identity(struct gn_txmsg *m, struct gn_step *st,
		     const struct msg_shape *ms);
void gn_encode_all(struct gn_ctx *ctx, struct gn_step *st);
void gn_want_work(struct gn_ctx *ctx, struct gn_step *st, u32 c);

/*
 * index.c: the index round of codecs with GN_CODEC_INDEX_ROUND. A chunk's
 * state in its step (st->ixs): its set is known here, its contribution's
 * encoding is taken by a thread, the contribution is out (for the own
 * shard: in place, ready to be added).
 */
#define GN_IX_KNOWN	(1u << 0)
#define GN_IX_CLAIMED	(1u << 1)
#define GN_IX_SENT	(1u << 2)

static inline bool gn_index_round(const struct gn_tensor *t)
{
	return t->cd->flags & GN_CODEC_INDEX_ROUND;
}

/* Steps of the registration before @st: the codec call's step. */
static inline u32 gn_index_step(const struct gn_step *st)
{
	return st->no - st->t->base - 1;
}

int gn_index_alloc(struct gn_ctx *ctx, struct gn_tensor *t);
void gn_index_free(struct gn_ctx *ctx, struct gn_tensor *t);
void gn_index_step_init(struct gn_ctx *ctx, struct gn_step *st);
long gn_index_chunk(const struct gn_ctx *ctx, const struct gn_tensor *t,
		    const struct gn_wire_data *d);
bool gn_index_set(const struct gn_ctx *ctx, const struct gn_step *st, u64 off,
		  u32 len, struct gn_codec_call *c);
bool gn_index_aux_ok(const struct gn_ctx *ctx, const struct gn_step *st,
		     const struct gn_wire_data *d);
bool gn_index_own_ready(const struct gn_ctx *ctx, const struct gn_step *st,
			u32 c);
void gn_index_in(struct gn_ctx *ctx, struct gn_peer *p, struct gn_step *st,
		 const struct gn_wire_hdr *h, const struct gn_wire_data *d,
		 struct gn_buf *b);
void gn_index_encode_all(struct gn_ctx *ctx, struct gn_step *st);
void gn_index_work(struct gn_ctx *ctx, struct gn_step *st,
		   unsigned int *budget);
void gn_index_release(struct gn_ctx *ctx, struct gn_step *st);
void gn_index_drop_msgs(struct gn_ctx *ctx, struct gn_step *st);
int gn_index_missing(const struct gn_ctx *ctx, const struct gn_step *st);

/* A received slice as the codec reads it: the body, or it decoded. */
struct gn_slice {
	const u8 *body;
	u16 len;
};

/* spread.c: codec work in parts for the env's workers (gn_env_run()) */
int gn_spread_init(struct gn_ctx *ctx);
u32 gn_spread_rxq_cap(const struct gn_ctx *ctx);
int gn_spread_reserve(struct gn_ctx *ctx, size_t stride);
void gn_spread_free(struct gn_ctx *ctx);
u32 gn_spread_work_max(const struct gn_ctx *ctx);
u32 gn_encode_batch(const struct gn_ctx *ctx);
u32 gn_encode_scratch(const struct gn_ctx *ctx, const struct gn_tensor *t);
struct gn_zset;
int gn_spread_encode(struct gn_ctx *ctx, struct gn_step *st, int j, u32 c0,
		     u32 n, struct gn_txmsg **msgs, struct gn_zset *zs);
void gn_spread_reduce(struct gn_ctx *ctx, struct gn_step *st, const u32 *cs,
		      u32 n);
void gn_spread_take(struct gn_ctx *ctx, struct gn_step *st,
		    const struct gn_wire_hdr *h, const struct gn_wire_data *d,
		    struct gn_buf *b, const struct gn_slice *v, bool last);
void gn_spread_flush(struct gn_ctx *ctx);
u8 *gn_spread_slots(const struct gn_ctx *ctx, size_t *stride);

/* stage.c: the entropy stage's contexts */
struct gn_entropy_dec;
int gn_stage_reserve(struct gn_ctx *ctx, u32 level);
void gn_stage_free(struct gn_ctx *ctx);
struct gn_zset *gn_stage_claim(struct gn_ctx *ctx);
void gn_stage_release(struct gn_ctx *ctx, struct gn_zset *zs);
struct gn_entropy_enc *gn_stage_part_enc(struct gn_zset *zs, u32 p);
struct gn_entropy_enc *gn_stage_work_enc(struct gn_ctx *ctx, u32 i);
struct gn_entropy_dec *gn_stage_work_dec(struct gn_ctx *ctx, u32 i);
int gn_stage_open(struct gn_ctx *ctx, const struct gn_tensor *t,
		  const struct gn_wire_hdr *h, const struct gn_wire_data *d,
		  const u8 *body, struct gn_slice *v);
void gn_stage_keep(struct gn_ctx *ctx, u32 i, struct gn_slice *v);
int gn_stage_reopen(struct gn_ctx *ctx, u32 i, const struct gn_tensor *t,
		    const struct gn_wire_hdr *h, const struct gn_wire_data *d,
		    const u8 *body, struct gn_slice *v);

/* reduce.c */
int gn_turn_rank(const struct gn_ctx *ctx, unsigned int turn);
void gn_add_held(struct gn_ctx *ctx, struct gn_step *st, struct gn_rx *rx,
		 size_t off, size_t len, u32 slot);
int gn_gather_compute(struct gn_ctx *ctx, struct gn_step *st, u32 c,
		      struct gn_txmsg *m, void *scratch, u32 slot);
void gn_gather_finish(struct gn_ctx *ctx, struct gn_step *st,
		      struct gn_txmsg *m, int r);
void gn_reduce_in(struct gn_ctx *ctx, struct gn_peer *p, struct gn_step *st,
		  const struct gn_wire_hdr *h, const struct gn_wire_data *d,
		  struct gn_buf *b);
void gn_run_work(struct gn_ctx *ctx, unsigned int budget);
bool gn_take_packet(struct gn_ctx *ctx, struct gn_peer *p,
		    struct gn_tensor *t, struct gn_rx *rx,
		    const struct gn_wire_hdr *h, const struct gn_wire_data *d,
		    const u8 *body, struct gn_slice *v);
bool gn_rx_covers(const struct gn_rx *rx, u32 n);
bool gn_rx_whole(const struct gn_rx *rx);

/* gather.c */
void gn_gather_in(struct gn_ctx *ctx, struct gn_peer *p, struct gn_step *st,
		  const struct gn_wire_hdr *h, const struct gn_wire_data *d,
		  struct gn_buf *b);
void gn_data_in(void *up, struct gn_peer *p, const struct gn_wire_hdr *h,
		struct gn_buf *b);
bool gn_ack_implied(void *up, const struct gn_ackq *q);
void gn_implied_acks(struct gn_ctx *ctx, struct gn_peer *p,
		     const struct gn_wire_hdr *h, const struct gn_wire_data *d);

/* control.c */
bool gn_ctrl_fits(void *up, const struct gn_peer *p,
		  const struct gn_wire_hdr *h, const struct gn_wire_ctrl *c);
void gn_ctrl_in(void *up, struct gn_peer *p, const struct gn_wire_hdr *h,
		const struct gn_wire_ctrl *c);
void gn_desc_check(struct gn_ctx *ctx, struct gn_tensor *t, int peer);
void gn_aborts_due(struct gn_ctx *ctx, struct gn_step *st);
void gn_send_desc(struct gn_ctx *ctx, struct gn_tensor *t);
void gn_ctrl_acked(void *up, struct gn_peer *p, u32 seq);

/*
 * fp.c: the collective's floating-point unit. In the kernel only this
 * file (and the codecs' float units) is built with the FPU enabled; each
 * function here opens and closes its own FPU section around one codec
 * operation, and no other file of the core touches a float value
 * (pointers to floats are fine) or calls a codec operation that may run
 * SIMD kernels (gn_fp_slice(), gn_fp_entropy_slice(), gn_fp_check_slice()).
 */
struct gn_codec_call gn_fp_call(const struct gn_ctx *ctx,
			       const struct gn_step *st, u8 phase,
			       size_t ef_len);
int gn_fp_encode(const struct gn_ctx *ctx, const struct gn_step *st,
		 size_t off, size_t len, size_t chunk, void *scratch,
		 u32 *aux);
int gn_fp_encode_at(const struct gn_ctx *ctx, const struct gn_step *st,
		    size_t off, size_t len, const u32 *idx, u32 nidx,
		    void *scratch, u32 *aux);
void gn_fp_own(const struct gn_ctx *ctx, const struct gn_step *st,
	       const void *scratch, u32 aux, size_t off, size_t len);
int gn_fp_result(const struct gn_ctx *ctx, const struct gn_step *st,
		 size_t off, size_t len, void *scratch, u32 *aux);
void gn_fp_finish(const struct gn_ctx *ctx, const struct gn_step *st,
		  size_t off, size_t len);
void gn_fp_add_slice(const struct gn_ctx *ctx, const struct gn_step *st,
		     float *acc, size_t len, const struct gn_wire_data *d,
		     const u8 *body, u16 blen);
void gn_fp_result_slice(const struct gn_ctx *ctx, const struct gn_step *st,
			float *out, const struct gn_wire_data *d,
			const u8 *body, u16 blen);
long gn_fp_slice(const struct gn_codec_ops *cd,
		 const struct gn_codec_params *p, const void *scratch, u32 aux,
		 const float *x, u32 len, u32 at, u8 *dst, u32 cap, u32 *units);
long gn_fp_entropy_slice(const struct gn_codec_ops *cd,
			 const struct gn_codec_params *p, const void *scratch,
			 u32 aux, const float *x, u32 len, u32 at,
			 struct gn_entropy_enc *z, u8 *dst, u32 cap,
			 u32 *units, bool *coded, u32 *next);
int gn_fp_check_slice(const struct gn_codec_ops *cd,
		      const struct gn_codec_params *p, u32 len, u32 first,
		      u32 count, u32 aux, const u8 *body, u32 blen);

#endif /* GN_COLLECTIVE_CORE_H */
