// SPDX-License-Identifier: MIT
/*
 * pack.c - building the packets of a chunk's message straight in transport
 * buffers, and the caller's side of a step: compress the gradient shard
 * by shard and hand the messages to delivery.
 */
#include "core.h"
#include "codec/entropy/entropy.h"

/*
 * @type GN_PKT_WHOLE: the message is this packet, the body at its offset.
 * @coded: the body went through the entropy stage.
 */
static void put_packet(struct gn_ctx *ctx, struct gn_tensor *t, u32 stepno,
		       const struct msg_shape *ms, struct gn_buf *b, u8 type,
		       u32 first, u32 count, u32 body, u32 idx, u32 npkts,
		       bool coded)
{
	struct gn_wire_hdr h;
	struct gn_wire_data d = {
		.chunk_off = ms->chunk_off, .chunk_len = ms->chunk_len,
		.first = first, .count = count, .aux = ms->aux,
		.pkt = idx, .npkts = npkts,
	};

	gn_dl_hdr_init(&ctx->dl, &h, type, ms->to);
	h.tensor = t->id;
	h.step = stepno;
	h.phase = ms->phase;
	h.codec = t->cd->id;
	h.entropy = coded;
	h.body_len = (u16)body;
	gn_wire_hdr_put(&h, b->data);
	gn_wire_data_put(&d, b->data);
	gn_dl_seal(&ctx->dl, b, (u16)(gn_wire_body_off(type) + body), ms->to);
}

/* Bytes of body a WHOLE packet holds. */
static u32 whole_cap(const struct gn_ctx *ctx)
{
	return ctx->max_pkt - GN_WIRE_WHOLE_OVERHEAD;
}

/* Buffers for @n more packets of @m, or -ENOMEM (the transport has none). */
static int take_bufs(struct gn_ctx *ctx, struct gn_txmsg *m, u32 n)
{
	while (m->npkts < n) {
		struct gn_buf *b = gn_dl_buf(&ctx->dl);

		if (!b)
			return -ENOMEM;
		m->pkt[m->npkts++] = b;
	}
	return 0;
}

/*
 * One packet's slice from unit @at into @dst: the codec's, or through the
 * entropy stage with encoder @z (NULL: none). *@coded says which went.
 */
struct cut {
	struct gn_tensor *t;
	const struct msg_shape *ms;
	const void *scratch;
	const float *x;
	struct gn_entropy_enc *z;
	u32 next;			/* the stage's next try */
};

static long cut_slice(struct cut *k, u32 at, u8 *dst, u32 cap, u32 *used,
		      bool *coded)
{
	const struct gn_tensor *t = k->t;

	*coded = false;
	if (k->z)
		return gn_entropy_slice(t->cd, &t->params, k->scratch,
					k->ms->aux, k->x, k->ms->chunk_len, at,
					k->z, dst, cap, used, coded, &k->next);
	return t->cd->slice(&t->params, k->scratch, k->ms->aux, k->x,
			    k->ms->chunk_len, at, dst, cap, used);
}

/*
 * A chunk whose stream is bound to fit one WHOLE packet: its one slice
 * straight behind the short header.
 */
static int pack_whole(struct gn_ctx *ctx, struct gn_txmsg *m, u32 stepno,
		      struct cut *k)
{
	struct gn_tensor *t = k->t;
	u32 units = t->cd->units(k->ms->chunk_len), used = 0;
	bool coded;
	long len;

	if (take_bufs(ctx, m, 1))
		return -ENOMEM;
	len = cut_slice(k, 0, m->pkt[0]->data + GN_WIRE_WHOLE_HDR,
			whole_cap(ctx), &used, &coded);
	if (len < 0 || used != units)
		return -EINVAL;
	m->stream_bytes = t->cd->stream_extra + (u64)len;
	put_packet(ctx, t, stepno, k->ms, m->pkt[0], GN_PKT_WHOLE, 0, units,
		   (u32)len, 0, 1, coded);
	return 0;
}

/*
 * gn_pack() - the packets of one chunk's message: the codec's slices cut
 * greedily to the MTU, each straight into its buffer
 * @scratch, @x: the chunk's encoding and its values, for the codec's slicer
 * @z: this thread's entropy encoder, for a tensor with the stage (NULL:
 *	none, or none free: the codec's slices go as they are)
 * @hint: the message's raw bytes that filled its first packet last time
 *	(0: none yet; NULL without the stage), updated: a step's chunk codes
 *	much like the last one's, so one compression usually fills a packet
 *
 * Headers and tags are written once the packet count is known; until then
 * a slice's first unit and whether it is coded wait where its header goes.
 * Through the stage, a message that came out as one packet goes as a
 * WHOLE one.
 * Return: 0, -ENOMEM (no buffers) or -EINVAL (the codec broke its bounds).
 */
int gn_pack(struct gn_ctx *ctx, struct gn_txmsg *m, struct gn_tensor *t,
	    u32 stepno, const struct msg_shape *ms, const void *scratch,
	    const float *x, struct gn_entropy_enc *z, u32 *hint)
{
	u32 cap = ctx->max_pkt - GN_WIRE_DATA_OVERHEAD, at = 0, n = 0, i;
	u32 units = t->cd->units(ms->chunk_len);
	u32 most = gn_pkts_max(ctx, t, ms->chunk_len);
	struct cut k = { t, ms, scratch, x,
			 hint && gn_entropy_on(&t->params) ? z : NULL, 0 };
	u8 *d;

	if (k.z)
		k.next = *hint ? *hint : k.z->raw_max;
	if (most > m->cap)
		return -EINVAL;
	if (t->cd->whole_bytes(&t->params, scratch, ms->aux, ms->chunk_len) <=
	    whole_cap(ctx))
		return pack_whole(ctx, m, stepno, &k);
	m->stream_bytes = t->cd->stream_extra;
	while (at < units) {
		u32 used = 0;
		bool coded;
		long len;

		if (n == most)
			return -EINVAL;
		if (take_bufs(ctx, m, n + 1))
			return -ENOMEM;
		d = m->pkt[n]->data;
		len = cut_slice(&k, at, d + GN_WIRE_DATA_HDR, cap, &used, &coded);
		if (len < 0 || !used || used > units - at)
			return -EINVAL;
		if (!n && k.z)
			*hint = k.next;
		gn_put_le32(at, d);
		d[4] = coded;
		m->pkt[n]->len = (u16)len;
		m->stream_bytes += (u64)len;
		at += used;
		n++;
	}
	if (n == 1 && k.z) {
		d = m->pkt[0]->data;
		memmove(d + GN_WIRE_WHOLE_HDR, d + GN_WIRE_DATA_HDR,
			m->pkt[0]->len);
		put_packet(ctx, t, stepno, ms, m->pkt[0], GN_PKT_WHOLE, 0, units,
			   m->pkt[0]->len, 0, 1, d[4]);
		return 0;
	}
	for (i = 0; i < n; i++) {
		u32 first = gn_get_le32(m->pkt[i]->data);
		u32 end = i + 1 < n ? gn_get_le32(m->pkt[i + 1]->data) : units;

		put_packet(ctx, t, stepno, ms, m->pkt[i], GN_PKT_DATA, first,
			   end - first, m->pkt[i]->len, i, n,
			   m->pkt[i]->data[4]);
	}
	return 0;
}

void gn_msg_identity(struct gn_txmsg *m, struct gn_step *st,
		     const struct msg_shape *ms)
{
	m->owner = st;
	m->flow = &st->t->stats;
	m->gate = st->t->ready;
	m->tensor = st->t->id;
	m->stepno = st->no;
	m->phase = ms->phase;
	m->to = ms->to;
	m->chunk_off = ms->chunk_off;
	m->raw_bytes = (u64)ms->chunk_len * 4;
}

/* Chunk @c may be ready for more: the progress side will look. */
void gn_want_work(struct gn_ctx *ctx, struct gn_step *st, u32 c)
{
	if (!st->todo[c]) {
		st->todo[c] = 1;
		st->todo_n++;
		ctx->work_n++;
	}
}

/* ---- the caller's side ------------------------------------------------------ */

/* A run of chunks of shard j: [c0, c0 + n). */
struct span {
	int j;
	u32 c0, n;
};

/*
 * Quantize and pack a span of the caller's gradient, chunk by chunk on
 * the env's workers (spread.c; no lock held: the slots of this step's
 * parity and the entropy encoders @zs are this thread's until it
 * publishes them and gives them back).
 */
static int encode_span(struct gn_ctx *ctx, struct gn_step *st,
		       const struct span *sp, struct gn_txmsg **msgs,
		       struct gn_zset *zs)
{
	return gn_spread_encode(ctx, st, sp->j, sp->c0, sp->n, msgs, zs);
}

/* Hand a compressed span to delivery (lock held). */
static void publish_span(struct gn_ctx *ctx, struct gn_step *st,
			 const struct span *sp, struct gn_txmsg **msgs, int r)
{
	char why[GN_ERRMSG_LEN];
	u32 c, k;

	if (!st->err && r == -EDOM) {
		snprintf(why, sizeof(why),
			 "the gradient of %s holds NaN or infinity; step skipped on every rank",
			 ctx->dl.peers[ctx->rank].name);
		gn_step_abort(ctx, st, -EDOM, why);
	} else if (!st->err && r) {
		gn_step_abort(ctx, st, r, "out of packet buffers while compressing");
	}
	if (st->err) {
		for (k = 0; sp->j != ctx->rank && k < sp->n; k++)
			if (msgs[k])
				gn_dl_msg_clear(&ctx->dl, msgs[k]);
		return;
	}
	if (sp->j == ctx->rank) {
		st->own_done = sp->c0 + sp->n;
		for (c = sp->c0; c < st->own_done; c++)
			gn_want_work(ctx, st, c);
	}
	for (k = 0; sp->j != ctx->rank && k < sp->n; k++)
		gn_dl_msg_queue(&ctx->dl, msgs[k]);
	gn_dl_kick(&ctx->dl);
}

/* The messages of a span's slots, taken under the lock. */
static int span_msgs(struct gn_ctx *ctx, struct gn_step *st,
		     const struct span *sp, struct gn_txmsg **msgs)
{
	u32 k;

	for (k = 0; k < sp->n; k++)
		msgs[k] = NULL;
	for (k = 0; sp->j != ctx->rank && k < sp->n; k++) {
		msgs[k] = gn_step_msg(ctx, st, st->t->gat_off[sp->j] + sp->c0 + k);
		if (!msgs[k])
			return -ENOMEM;
	}
	return 0;
}

void gn_encode_all(struct gn_ctx *ctx, struct gn_step *st)
{
	struct gn_tensor *t = st->t;
	struct gn_txmsg *msgs[ENCODE_BATCH_MAX];
	u32 c0, most = 0, batch = gn_encode_batch(ctx);
	struct gn_zset *zs = NULL;
	int i;

	for (i = 0; i < ctx->world; i++)
		most = t->chunks[i] > most ? t->chunks[i] : most;
	if (gn_entropy_on(&t->params)) {
		gn_env_lock(ctx->env);
		zs = gn_stage_claim(ctx);
		gn_env_unlock(ctx->env);
	}
	for (c0 = 0; c0 < most; c0 += batch) {
		for (i = 1; i <= ctx->world; i++) {
			struct span sp = { (ctx->rank + i) % ctx->world, c0, 0 };
			bool failed;
			int r;

			if (c0 >= t->chunks[sp.j])
				continue;
			sp.n = t->chunks[sp.j] - c0 < batch ?
				       t->chunks[sp.j] - c0 : batch;
			gn_env_lock(ctx->env);
			failed = st->err != 0;
			r = failed ? 0 : span_msgs(ctx, st, &sp, msgs);
			gn_env_unlock(ctx->env);
			if (failed)
				goto out_release;
			if (!r)
				r = encode_span(ctx, st, &sp, msgs, zs);
			gn_env_lock(ctx->env);
			publish_span(ctx, st, &sp, msgs, r);
			gn_env_unlock(ctx->env);
		}
	}
out_release:
	if (zs) {
		gn_env_lock(ctx->env);
		gn_stage_release(ctx, zs);
		gn_env_unlock(ctx->env);
	}
}
