// SPDX-License-Identifier: MIT
/*
 * spread.c - the codec work of a step cut into parts for the env's
 * workers (gn_env_run()): encoding at start, the owner's adds and
 * re-encoding, and the decoding of packets as they arrive.
 *
 * A part is ENCODE_BATCH chunks of a shard (encoding), one chunk of the
 * own shard (the owner) or one packet (receiving), and the parts of a
 * batch write disjoint memory: chunks do not overlap, and the packets of
 * a batch are slices of results (disjoint by their groups) or in-turn
 * slices of one contribution per chunk (the same). Everything that
 * orders the adds of a chunk (its turn), allocates, sends or fails a step
 * stays serial, before and after the parts, under the lock; so the bytes
 * are the same whatever the number of workers and whatever the order the
 * parts run in, and with one worker (the kernel, DPDK) the work is done
 * in the order of before: each packet decoded as it comes.
 *
 * Where the progress thread's time goes (callgrind, 4 M floats on 2
 * ranks, one worker): re-quantizing the owner's sums and decoding them
 * back 60%, decoding results 30%, adding held contributions 6%; the MAC
 * check 1% and parsing, duplicate detection and acknowledgements 3.5%.
 * The parts hold the first three (with the packing, zero-run encoding and
 * MAC of what they send); the rest stays serial, since it needs the lock.
 */
#include "core.h"

/* Packets queued for decoding, at most. */
#define GN_RXQ_MAX 64

struct work_slot {
	u32 c;
	u16 from, to;			/* turns to add: [from, to) */
	bool partial;			/* and the held slices of turn @to */
	bool complete;			/* then encode and pack the result */
	struct gn_txmsg *m;
	int r;
};

/* A packet taken, to be decoded into its step's tensor. */
struct rxq_ent {
	struct gn_step *st;
	u32 no;
	struct gn_buf *b;
	struct gn_wire_data d;
	struct gn_slice v;		/* its slice: the body, or decoded */
	u8 phase;
	bool last;			/* it completed a result message */
};

struct gn_spread {
	struct gn_ctx *ctx;
	u32 workers;
	u32 work_max, rxq_cap;
	/* the batch of owner work being run */
	struct gn_step *st;
	struct work_slot work[GN_WORK_MAX];
	u8 *gq;				/* [work_max][gq_stride]: results' scratch */
	size_t gq_stride;
	/* packets waiting to be decoded */
	struct rxq_ent rxq[GN_RXQ_MAX];
	u32 rxq_n;
};

int gn_spread_init(struct gn_ctx *ctx)
{
	u32 w = gn_env_workers(ctx->env);
	struct gn_spread *sp = gn_alloc(ctx->env, sizeof(*sp));

	if (!sp)
		return -ENOMEM;
	sp->ctx = ctx;
	sp->workers = w;
	sp->work_max = 4 * w < GN_WORK_MAX ? 4 * w : GN_WORK_MAX;
	/* One worker decodes each packet as it comes, as it always did. */
	sp->rxq_cap = w > 1 ? GN_RXQ_MAX : 0;
	ctx->spread = sp;
	return 0;
}

/*
 * Room for a result's scratch of @stride bytes per work slot: grown when a
 * tensor registers (lock held, so no batch is running), never shrunk.
 */
int gn_spread_reserve(struct gn_ctx *ctx, size_t stride)
{
	struct gn_spread *sp = ctx->spread;
	u8 *gq;

	stride = (stride + 7) & ~(size_t)7;
	if (stride <= sp->gq_stride)
		return 0;
	gq = gn_alloc_array(ctx->env, sp->work_max, stride);
	if (!gq)
		return -ENOMEM;
	gn_free(ctx->env, sp->gq);
	sp->gq = gq;
	sp->gq_stride = stride;
	return 0;
}

/* Before delivery goes: packets still queued are let go. */
void gn_spread_free(struct gn_ctx *ctx)
{
	u32 i;

	if (!ctx->spread)
		return;
	for (i = 0; i < ctx->spread->rxq_n; i++)
		gn_dl_buf_put(&ctx->dl, ctx->spread->rxq[i].b);
	gn_free(ctx->env, ctx->spread->gq);
	gn_free(ctx->env, ctx->spread);
	ctx->spread = NULL;
}

u32 gn_spread_work_max(const struct gn_ctx *ctx)
{
	return ctx->spread->work_max;
}

/*
 * The work slots' scratch, gn_spread_work_max() of them @stride apart,
 * for other work of the progress side between batches.
 */
u8 *gn_spread_slots(const struct gn_ctx *ctx, size_t *stride)
{
	*stride = ctx->spread->gq_stride;
	return ctx->spread->gq;
}

/* Packets queued for the workers at most (0: each decoded as it comes). */
u32 gn_spread_rxq_cap(const struct gn_ctx *ctx)
{
	return ctx->spread->rxq_cap;
}

/* Chunks the caller's side encodes per span: ENCODE_BATCH per worker. */
u32 gn_encode_batch(const struct gn_ctx *ctx)
{
	u32 n = ENCODE_BATCH * gn_env_workers(ctx->env);

	return n < ENCODE_BATCH_MAX ? n : ENCODE_BATCH_MAX;
}

/* Chunks of @t's encode scratch: a span's, and no more than a shard has. */
u32 gn_encode_scratch(const struct gn_ctx *ctx, const struct gn_tensor *t)
{
	u32 n = gn_encode_batch(ctx), most = 1;
	int j;

	for (j = 0; j < ctx->world; j++)
		most = t->chunks[j] > most ? t->chunks[j] : most;
	return n < most ? n : most;
}

/* ---- encoding at start ------------------------------------------------------- */

struct encode_job {
	struct gn_ctx *ctx;
	struct gn_step *st;
	int j;
	u32 c0, n;
	struct gn_txmsg **msgs;
	struct gn_zset *zs;		/* the caller's entropy encoders, or NULL */
	int edom, err;
};

/* Chunk c0 + @k of the job's shard: its scratch and its values. */
static void *chunk_scratch(struct encode_job *e, u32 k)
{
	return e->st->t->scratch + (size_t)k * e->st->t->stride;
}

/*
 * Pack chunk c0 + @k of another rank's shard (with entropy encoder @z);
 * for the own shard, put what its encoding stands for in place of the
 * gradient (the owner adds it as it is).
 */
static int pack_chunk(struct encode_job *e, u32 k, struct gn_entropy_enc *z)
{
	struct gn_ctx *ctx = e->ctx;
	struct gn_step *st = e->st;
	struct gn_tensor *t = st->t;
	size_t len, off = gn_chunk_at(ctx, t, e->j, e->c0 + k, &len);
	struct msg_shape ms = { GN_PHASE_REDUCE, (u16)e->j, off, (u32)len,
				t->aux[k] };
	int r;

	if (e->j == ctx->rank) {
		/* A model tensor's encoding put its own share in place. */
		if (!t->model)
			gn_fp_own(ctx, st, chunk_scratch(e, k), t->aux[k], off,
				  len);
		return 0;
	}
	r = gn_pack(ctx, e->msgs[k], t, st->no, &ms, chunk_scratch(e, k),
		    st->data + off, z,
		    t->zhint ? t->zhint + t->gat_off[e->j] + e->c0 + k : NULL);
	if (!r)
		gn_msg_identity(e->msgs[k], st, &ms);
	return r;
}

/*
 * Chunks [k0, k1) of a bucket whose chunks are cut at member bounds, so
 * they differ in length: one encoder call each, into the same strided
 * scratch as whole chunks.
 */
static int encode_cut(struct encode_job *e, u32 k0, u32 k1)
{
	struct gn_tensor *t = e->st->t;
	size_t len, off;
	u32 k;
	int r = 0;

	for (k = k0; !r && k < k1; k++) {
		off = gn_chunk_at(e->ctx, t, e->j, e->c0 + k, &len);
		r = gn_fp_encode(e->ctx, e->st, off, len, len,
				 chunk_scratch(e, k), t->aux + k);
	}
	return r;
}

/*
 * Part @p: chunks c0 + [p * ENCODE_BATCH, ...) of shard j, ENCODE_BATCH
 * of them at most, encoded in one call (its passes overlap) and packed
 * into their messages (no lock held; the message slots of this step's
 * parity are the caller's until it publishes them).
 */
static void encode_part(void *arg, u32 p)
{
	struct encode_job *e = arg;
	struct gn_ctx *ctx = e->ctx;
	struct gn_step *st = e->st;
	struct gn_tensor *t = st->t;
	u32 k0 = p * ENCODE_BATCH, k1 = k0 + ENCODE_BATCH, k;
	size_t len, off = gn_chunk_at(ctx, t, e->j, e->c0 + k0, &len), end;
	bool own = e->j == ctx->rank;
	int r = 0;

	k1 = k1 < e->n ? k1 : e->n;
	end = gn_chunk_at(ctx, t, e->j, e->c0 + k1 - 1, &len) + len;
	/*
	 * The own share never leaves this host: unless the codec says
	 * otherwise, the owner adds it as it is, and a NaN or infinity in it
	 * shows when the sum is encoded (gn_fp_result()), which saves a pass
	 * over it here. A model tensor's is encoded as any rank's.
	 */
	if (own && !(t->cd->flags & GN_CODEC_OWN_ENCODED) && !t->model)
		return;
	if (t->model)
		r = gn_fp_model_encode(ctx, st, e->j, off, end - off,
				       chunk_scratch(e, k0), t->aux + k0,
				       t->model->tmp + p * t->model->tmp_len);
	else if (t->ck_off)
		r = encode_cut(e, k0, k1);
	else
		r = gn_fp_encode(ctx, st, off, end - off, ctx->chunk,
				 chunk_scratch(e, k0), t->aux + k0);
	for (k = k0; !r && k < k1; k++)
		r = pack_chunk(e, k, gn_stage_part_enc(e->zs, p));
	if (r == -EDOM)
		WRITE_ONCE(e->edom, 1);
	else if (r)
		WRITE_ONCE(e->err, r);
}

/*
 * gn_spread_encode() - encode chunks [c0, c0 + n) of shard @j into @msgs,
 * ENCODE_BATCH chunks per part, part p packing with @zs's encoder p
 * Return: 0, -EDOM if a value is not finite, or a packing error.
 */
int gn_spread_encode(struct gn_ctx *ctx, struct gn_step *st, int j, u32 c0,
		     u32 n, struct gn_txmsg **msgs, struct gn_zset *zs)
{
	struct encode_job e = { ctx, st, j, c0, n, msgs, zs, 0, 0 };

	gn_env_run(ctx->env, encode_part, &e, (n + ENCODE_BATCH - 1) / ENCODE_BATCH);
	return e.edom ? -EDOM : e.err;
}

/* ---- the owner's adds and re-encoding ---------------------------------------- */

/* Plan chunk @c's work: which turns can be added now (no side effects). */
static void plan_chunk(struct gn_ctx *ctx, struct gn_step *st,
		       struct work_slot *w)
{
	u32 nc = st->t->chunks[ctx->rank], turn = st->turn[w->c];

	w->from = (u16)turn;
	w->partial = false;
	for (; turn < (u32)ctx->world; turn++) {
		int k = gn_turn_rank(ctx, turn);

		if (k == ctx->rank && !gn_index_own_ready(ctx, st, w->c))
			break;
		if (k != ctx->rank && !gn_rx_whole(&st->red[(size_t)k * nc + w->c])) {
			w->partial = true;
			break;
		}
	}
	w->to = (u16)turn;
	w->complete = turn == (u32)ctx->world;
}

static void work_part(void *arg, u32 i)
{
	struct gn_spread *sp = arg;
	struct gn_ctx *ctx = sp->ctx;
	struct gn_step *st = sp->st;
	struct work_slot *w = &sp->work[i];
	u32 nc = st->t->chunks[ctx->rank], turn;
	size_t len, off = gn_chunk_at(ctx, st->t, ctx->rank, w->c, &len);

	for (turn = w->from; turn < w->to + (u32)w->partial; turn++) {
		int k = gn_turn_rank(ctx, turn);

		if (k != ctx->rank)
			gn_add_held(ctx, st, &st->red[(size_t)k * nc + w->c],
				    off, len, i);
	}
	if (w->complete)
		w->r = gn_gather_compute(ctx, st, w->c, w->m,
					 sp->gq + i * sp->gq_stride, i);
}

/*
 * gn_spread_reduce() - add what has come for chunks @cs[0..n) of @st's
 * own shard, in each chunk's order, and send the chunks that are complete
 * (lock held; n <= gn_spread_work_max()).
 */
void gn_spread_reduce(struct gn_ctx *ctx, struct gn_step *st, const u32 *cs,
		      u32 n)
{
	struct gn_spread *sp = ctx->spread;
	u32 i;

	sp->st = st;
	for (i = 0; i < n; i++) {
		struct work_slot *w = &sp->work[i];

		w->c = cs[i];
		w->m = NULL;
		w->r = 0;
		plan_chunk(ctx, st, w);
		if (!w->complete)
			continue;
		w->m = gn_step_msg(ctx, st, st->t->gat_off[ctx->rank] + w->c);
		if (!w->m) {
			gn_step_abort(ctx, st, -ENOMEM, "out of memory for a message");
			return;
		}
	}
	gn_env_run(ctx->env, work_part, sp, n);
	for (i = 0; i < n; i++) {
		struct work_slot *w = &sp->work[i];

		st->turn[w->c] = (u16)(w->to + w->complete);
		if (!w->complete)
			continue;
		/* Failed by an earlier slot (a completed step has no more). */
		if (st->err || st->done) {
			gn_dl_msg_clear(&ctx->dl, w->m);
			continue;
		}
		gn_gather_finish(ctx, st, w->m, w->r);
	}
}

/* ---- decoding packets as they come ------------------------------------------- */

static bool rxq_live(const struct rxq_ent *q)
{
	return q->st->live && q->st->no == q->no && !q->st->err &&
	       !q->st->done;
}

static void rxq_decode(struct gn_ctx *ctx, const struct rxq_ent *q)
{
	struct gn_step *st = q->st;
	struct gn_tensor *t = st->t;
	size_t len;

	if (q->phase == GN_PHASE_REDUCE) {
		gn_chunk_at(ctx, t, ctx->rank,
			    (u32)gn_chunk_of(ctx, t, ctx->rank, &q->d), &len);
		gn_fp_add_slice(ctx, st, st->data + q->d.chunk_off, len, &q->d,
				q->v.body, q->v.len);
	} else {
		gn_fp_result_slice(ctx, st, st->data + q->d.chunk_off, &q->d,
				   q->v.body, q->v.len);
	}
}

static void rxq_part(void *arg, u32 i)
{
	struct gn_spread *sp = arg;

	if (sp->rxq[i].st)
		rxq_decode(sp->ctx, &sp->rxq[i]);
}

/*
 * gn_spread_flush() - decode the packets queued by gn_spread_take(), then
 * count the result messages they completed (lock held)
 */
void gn_spread_flush(struct gn_ctx *ctx)
{
	struct gn_spread *sp = ctx->spread;
	u32 i, n = sp->rxq_n;

	if (!n)
		return;
	/* A step failed since: its packets are only let go. */
	for (i = 0; i < n; i++)
		if (!rxq_live(&sp->rxq[i]))
			sp->rxq[i].st = NULL;
	gn_env_run(ctx->env, rxq_part, sp, n);
	sp->rxq_n = 0;
	for (i = 0; i < n; i++) {
		struct rxq_ent *q = &sp->rxq[i];

		gn_dl_buf_put(&ctx->dl, q->b);
		if (q->st && q->last && rxq_live(q))
			gn_step_gathered(ctx, q->st);
	}
}

/*
 * gn_spread_take() - a slice taken for @st: decode it now, or queue it
 * (held, a decoded slice @v kept in its queue slot) for the next flush
 * when there are workers to share the batch
 * @last: it completed a result message (gather): the step counts it once
 *	it is decoded
 */
void gn_spread_take(struct gn_ctx *ctx, struct gn_step *st,
		    const struct gn_wire_hdr *h, const struct gn_wire_data *d,
		    struct gn_buf *b, const struct gn_slice *v, bool last)
{
	struct gn_spread *sp = ctx->spread;
	struct rxq_ent q = { st, st->no, b, *d, *v, h->phase, last };

	if (!sp->rxq_cap) {
		rxq_decode(ctx, &q);
		if (last)
			gn_step_gathered(ctx, st);
		return;
	}
	gn_stage_keep(ctx, sp->rxq_n, &q.v);
	gn_dl_buf_hold(&ctx->dl, b);
	sp->rxq[sp->rxq_n++] = q;
	if (sp->rxq_n == sp->rxq_cap)
		gn_spread_flush(ctx);
}
