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
	const struct gn_codec_params *p;
	struct gn_buf *b = m->pkt[idx];
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
	h.codec = gn_phase_codec(t, ms->phase, &p)->id;
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

/* A message's units: its chunk's, or (index round) the word's entries. */
static u32 msg_units(const struct gn_tensor *t, const struct msg_shape *ms)
{
	const struct gn_codec_params *p;
	const struct gn_codec_ops *cd = gn_phase_codec(t, ms->phase, &p);

	if (cd->flags & GN_CODEC_INDEX_ROUND)
		return ms->aux;
	return cd->units(ms->chunk_len);
}

/*
 * A chunk whose stream is bound to fit one WHOLE packet: its one slice
 * straight behind the short header.
 */
static int pack_whole(struct gn_ctx *ctx, struct gn_txmsg *m,
		      struct gn_tensor *t, u32 stepno,
		      const struct msg_shape *ms, const void *scratch,
		      const float *x)
{
	const struct gn_codec_params *p;
	const struct gn_codec_ops *cd = gn_phase_codec(t, ms->phase, &p);
	u32 units = msg_units(t, ms), used = 0;
	long len;

	if (take_bufs(ctx, m, 1))
		return -ENOMEM;
	len = gn_fp_slice(cd, p, scratch, ms->aux, x, ms->chunk_len, 0,
			  m->pkt[0]->data + GN_WIRE_WHOLE_HDR, whole_cap(ctx),
			  &used);
	if (len < 0 || used != units)
		return -EINVAL;
	m->stream_bytes = cd->stream_extra + (u64)len;
	return put_packet(ctx, t, stepno, ms, m, GN_PKT_WHOLE, 0, units,
			  (u32)len, 0, 1);
}

/* What cuts a message's slices: the codec's slicer, or an index set. */
struct cutter {
	const struct gn_tensor *t;
	const struct msg_shape *ms;
	const void *scratch;
	const float *x;
	const u32 *idx;			/* an index set: its slices */
};

static long cut(const struct cutter *k, u32 at, u8 *dst, u32 cap, u32 *used)
{
	const struct gn_codec_params *p;
	const struct gn_codec_ops *cd = gn_phase_codec(k->t, k->ms->phase, &p);

	if (k->idx)
		return gn_index_slice(k->idx, k->ms->aux, at, dst, cap, used);
	return gn_fp_slice(cd, p, k->scratch, k->ms->aux, k->x,
			   k->ms->chunk_len, at, dst, cap, used);
}

/*
 * Slices cut greedily to the MTU, each straight into its buffer, at most
 * @most of them over @units units. Headers and tags are written once the
 * packet count is known; until then a slice's first unit waits where its
 * header goes.
 */
static int pack_cut(struct gn_ctx *ctx, struct gn_txmsg *m,
		    struct gn_tensor *t, u32 stepno, const struct cutter *k,
		    u32 units, u32 most)
{
	u32 cap = ctx->max_pkt - GN_WIRE_DATA_OVERHEAD, at = 0, n = 0, i;
	const struct msg_shape *ms = k->ms;
	const struct gn_codec_params *p;
	const struct gn_codec_ops *cd = gn_phase_codec(t, ms->phase, &p);
	int r = 0;

	if (most > m->cap)
		return -EINVAL;
	m->stream_bytes = k->idx ? 0 : cd->stream_extra;
	while (at < units) {
		u32 used = 0;
		long len;

		if (n == most)
			return -EINVAL;
		if (take_bufs(ctx, m, n + 1))
			return -ENOMEM;
		len = cut(k, at, m->pkt[n]->data + GN_WIRE_DATA_HDR, cap, &used);
		if (len < 0 || !used || used > units - at)
			return -EINVAL;
		gn_put_le32(at, m->pkt[n]->data);
		m->pkt[n]->len = (u16)len;
		m->stream_bytes += (u64)len;
		at += used;
		n++;
	}
	for (i = 0; !r && i < n; i++) {
		u32 first = gn_get_le32(m->pkt[i]->data);
		u32 end = i + 1 < n ? gn_get_le32(m->pkt[i + 1]->data) : units;

		r = put_packet(ctx, t, stepno, ms, m, GN_PKT_DATA, first,
			       end - first, m->pkt[i]->len, i, n);
	}
	return r;
}

/*
 * gn_pack() - the packets of one chunk's message: the codec's slices cut
 * greedily to the MTU, each straight into its buffer
 * @scratch, @x: the chunk's encoding and its values, for the codec's slicer
 *
 * Return: 0, -ENOMEM (no buffers) or -EINVAL (the codec broke its bounds).
 */
int gn_pack(struct gn_ctx *ctx, struct gn_txmsg *m, struct gn_tensor *t,
	    u32 stepno, const struct msg_shape *ms, const void *scratch,
	    const float *x)
{
	const struct gn_codec_params *p;
	const struct gn_codec_ops *cd = gn_phase_codec(t, ms->phase, &p);
	struct cutter k = { t, ms, scratch, x, NULL };

	if (gn_pkts_max(ctx, t, ms->chunk_len) > m->cap)
		return -EINVAL;
	if (cd->whole_bytes(p, scratch, ms->aux, ms->chunk_len) <=
	    whole_cap(ctx))
		return pack_whole(ctx, m, t, stepno, ms, scratch, x);
	return pack_cut(ctx, m, t, stepno, &k, msg_units(t, ms),
			gn_pkts_max(ctx, t, ms->chunk_len));
}

/*
 * gn_pack_index() - a leader's index message: the chunk's set @idx of
 * @ms->aux entries, as slices of the index round's stream (never WHOLE:
 * that would say the set is the whole chunk)
 * Return: as gn_pack().
 */
int gn_pack_index(struct gn_ctx *ctx, struct gn_txmsg *m, struct gn_tensor *t,
		  u32 stepno, const struct msg_shape *ms, const u32 *idx)
{
	struct cutter k = { t, ms, NULL, NULL, idx };

	return pack_cut(ctx, m, t, stepno, &k, ms->aux,
			gn_index_pkts_max(ms->aux, ctx->max_pkt -
						   GN_WIRE_DATA_OVERHEAD));
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

	if (gn_index_round(t)) {
		gn_index_encode_all(ctx, st);
		return;
	}
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
