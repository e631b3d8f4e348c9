// SPDX-License-Identifier: MIT
/*
 * pack.c - building the packets of a chunk's message straight in transport
 * buffers, and the caller's side of a step: compress the gradient shard
 * by shard and hand the messages to delivery.
 */
#include "core.h"

/*
 * Packet @idx of @m; @type GN_PKT_WHOLE: the message is this packet, the
 * body at its offset. Return: 0, or -EIO if it could not be sealed.
 */
static int put_packet(struct gn_ctx *ctx, struct gn_tensor *t, u32 stepno,
		      const struct msg_shape *ms, struct gn_txmsg *m, u8 type,
		      u32 first, u32 count, u32 body, u32 idx, u32 npkts)
{
	struct gn_buf *b = m->pkt[idx];
	struct gn_wire_hdr h;
	struct gn_wire_data d = {
		.chunk_off = ms->chunk_off, .chunk_len = ms->chunk_len,
		.first = first, .count = count, .scale = ms->scale,
		.s = t->s_bits, .pkt = idx, .npkts = npkts,
	};

	gn_dl_hdr_init(&ctx->dl, &h, type, ms->to);
	h.tensor = t->id;
	h.step = stepno;
	h.phase = ms->phase;
	h.codec = t->codec;
	h.body_len = (u16)body;
	gn_wire_hdr_put(&h, b->data);
	gn_wire_data_put(&d, b->data);
	return gn_dl_seal_msg(&ctx->dl, m, idx,
			      (u16)(gn_wire_body_off(type) + body), ms->to);
}

const char *gn_pack_failure(int r)
{
	switch (r) {
	case -ENOMEM:
		return "out of packet buffers";
	case -EIO:
		return "a packet could not be sealed";
	case -EAGAIN:
		return "a packet came before the session key";
	default:
		return "a chunk does not fit its message";
	}
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
 * A 3LC chunk whose groups fit one WHOLE packet even as literals (a code
 * byte covers at least one group): encoded straight behind the short
 * header.
 */
static int pack_3lc_whole(struct gn_ctx *ctx, struct gn_txmsg *m,
			  struct gn_tensor *t, u32 stepno,
			  const struct msg_shape *ms, const u8 *q, u32 g)
{
	size_t used;
	long len;

	if (take_bufs(ctx, m, 1))
		return -ENOMEM;
	len = gn_zre_encode(q, g, m->pkt[0]->data + GN_WIRE_WHOLE_HDR,
			    whole_cap(ctx), &used);
	if (len <= 0 || used != g)
		return -EINVAL;
	m->stream_bytes = GN_TLC_SCALE_BYTES + (u64)len;
	return put_packet(ctx, t, stepno, ms, m, GN_PKT_WHOLE, 0, g, (u32)len,
			  0, 1);
}

/*
 * The packets of one 3LC chunk: zero-run encoded slices cut greedily to
 * the MTU, each straight into its buffer. Headers and tags are written
 * once the packet count is known; until then a slice's first group waits
 * where its header goes.
 */
int gn_pack_3lc(struct gn_ctx *ctx, struct gn_txmsg *m, struct gn_tensor *t,
		u32 stepno, const struct msg_shape *ms, const u8 *q, u32 g)
{
	u32 cap = ctx->max_pkt - GN_WIRE_DATA_OVERHEAD, at = 0, n = 0, i;
	u32 most = gn_pkts_max(ctx, GN_WIRE_CODEC_3LC, ms->chunk_len);
	int r = 0;

	if (most > m->cap)
		return -EINVAL;
	if (g <= whole_cap(ctx))
		return pack_3lc_whole(ctx, m, t, stepno, ms, q, g);
	m->stream_bytes = GN_TLC_SCALE_BYTES;
	while (at < g) {
		size_t used;
		long len;

		/* gn_pkts_max() bounds n; m->pkt[] must hold it, whatever. */
		if (n == m->cap)
			return -ENOSPC;
		if (take_bufs(ctx, m, n + 1))
			return -ENOMEM;
		len = gn_zre_encode(q + at, g - at, m->pkt[n]->data + GN_WIRE_DATA_HDR,
				    cap, &used);
		gn_put_le32(at, m->pkt[n]->data);
		m->pkt[n]->len = (u16)len;
		m->stream_bytes += (u64)len;
		at += (u32)used;
		n++;
	}
	for (i = 0; !r && i < n; i++) {
		u32 first = gn_get_le32(m->pkt[i]->data);
		u32 end = i + 1 < n ? gn_get_le32(m->pkt[i + 1]->data) : g;

		r = put_packet(ctx, t, stepno, ms, m, GN_PKT_DATA, first,
			       end - first, m->pkt[i]->len, i, n);
	}
	return r;
}

int gn_pack_dense(struct gn_ctx *ctx, struct gn_txmsg *m, struct gn_tensor *t,
		  u32 stepno, const struct msg_shape *ms, const float *v)
{
	u32 per = (ctx->max_pkt - GN_WIRE_DATA_OVERHEAD) / 4, len = ms->chunk_len;
	u32 n = gn_pkts_max(ctx, GN_WIRE_CODEC_NONE, len), i;
	int r = 0;

	if ((u64)len * 4 <= whole_cap(ctx))
		n = 1;
	if (n > m->cap || take_bufs(ctx, m, n))
		return n > m->cap ? -EINVAL : -ENOMEM;
	m->stream_bytes = (u64)len * 4;
	if (n == 1 && (u64)len * 4 <= whole_cap(ctx)) {
		memcpy(m->pkt[0]->data + GN_WIRE_WHOLE_HDR, v, (size_t)len * 4);
		return put_packet(ctx, t, stepno, ms, m, GN_PKT_WHOLE, 0, len,
				  len * 4, 0, 1);
	}
	for (i = 0; !r && i < n; i++) {
		u32 count = len - i * per < per ? len - i * per : per;

		memcpy(m->pkt[i]->data + GN_WIRE_DATA_HDR, v + (size_t)i * per,
		       (size_t)count * 4);
		r = put_packet(ctx, t, stepno, ms, m, GN_PKT_DATA, i * per,
			       count, count * 4, i, n);
	}
	return r;
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
 * parity are this thread's until it publishes them).
 */
static int encode_span(struct gn_ctx *ctx, struct gn_step *st,
		       const struct span *sp, struct gn_txmsg **msgs)
{
	return gn_spread_encode(ctx, st, sp->j, sp->c0, sp->n, msgs);
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
		snprintf(why, sizeof(why), "%s while compressing",
			 gn_pack_failure(r));
		gn_step_abort(ctx, st, r, why);
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
	int i;

	for (i = 0; i < ctx->world; i++)
		most = t->chunks[i] > most ? t->chunks[i] : most;
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
				return;
			if (!r)
				r = encode_span(ctx, st, &sp, msgs);
			gn_env_lock(ctx->env);
			publish_span(ctx, st, &sp, msgs, r);
			gn_env_unlock(ctx->env);
		}
	}
}
