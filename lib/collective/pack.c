// SPDX-License-Identifier: MIT
/*
 * pack.c - building the packets of a chunk's message straight in transport
 * buffers, and the caller's side of a step: compress the gradient shard
 * by shard and hand the messages to delivery.
 */
#include "core.h"
#include "codec/entropy/entropy.h"

/*
 * Packet @idx of @m; @type GN_PKT_WHOLE: the message is this packet, the
 * body at its offset; @coded: the body went through the entropy stage.
 * Return: 0, or -EIO if it could not be sealed.
 */
static int put_packet(struct gn_ctx *ctx, struct gn_tensor *t, u32 stepno,
		      const struct msg_shape *ms, struct gn_txmsg *m, u8 type,
		      u32 first, u32 count, u32 body, u32 idx, u32 npkts,
		      bool coded)
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
	h.entropy = coded;
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
 * What cuts a message's slices: the codec's slicer, through the entropy
 * stage with encoder @z (NULL: none), or an index set.
 */
struct cutter {
	const struct gn_tensor *t;
	const struct msg_shape *ms;
	const void *scratch;
	const float *x;
	const u32 *idx;			/* an index set: its slices */
	struct gn_entropy_enc *z;
	u32 next;			/* the stage's next try */
};

/* One packet's slice from unit @at into @dst; *@coded says how it went. */
static long cut(struct cutter *k, u32 at, u8 *dst, u32 cap, u32 *used,
		bool *coded)
{
	const struct gn_codec_params *p;
	const struct gn_codec_ops *cd = gn_phase_codec(k->t, k->ms->phase, &p);

	*coded = false;
	if (k->idx)
		return gn_index_slice(k->idx, k->ms->aux, at, dst, cap, used);
	if (k->z)
		return gn_fp_entropy_slice(cd, p, k->scratch, k->ms->aux, k->x,
					   k->ms->chunk_len, at, k->z, dst,
					   cap, used, coded, &k->next);
	return gn_fp_slice(cd, p, k->scratch, k->ms->aux, k->x,
			   k->ms->chunk_len, at, dst, cap, used);
}

/*
 * A chunk whose stream is bound to fit one WHOLE packet: its one slice
 * straight behind the short header.
 */
static int pack_whole(struct gn_ctx *ctx, struct gn_txmsg *m,
		      struct gn_tensor *t, u32 stepno, struct cutter *k)
{
	const struct gn_codec_params *p;
	const struct gn_codec_ops *cd = gn_phase_codec(t, k->ms->phase, &p);
	u32 units = msg_units(t, k->ms), used = 0;
	bool coded;
	long len;

	if (take_bufs(ctx, m, 1))
		return -ENOMEM;
	len = cut(k, 0, m->pkt[0]->data + GN_WIRE_WHOLE_HDR, whole_cap(ctx),
		  &used, &coded);
	if (len < 0 || used != units)
		return -EINVAL;
	m->stream_bytes = cd->stream_extra + (u64)len;
	return put_packet(ctx, t, stepno, k->ms, m, GN_PKT_WHOLE, 0, units,
			  (u32)len, 0, 1, coded);
}

/*
 * Slices cut greedily to the MTU, each straight into its buffer, at most
 * @most of them over @units units. Headers and tags are written once the
 * packet count is known; until then a slice's first unit and whether it
 * is coded wait where its header goes. @hint (with the entropy stage):
 * the message's raw bytes that filled its first packet last time, updated.
 * Through the stage, a message that came out as one packet goes as a
 * WHOLE one.
 */
static int pack_cut(struct gn_ctx *ctx, struct gn_txmsg *m,
		    struct gn_tensor *t, u32 stepno, struct cutter *k,
		    u32 units, u32 most, u32 *hint)
{
	u32 cap = ctx->max_pkt - GN_WIRE_DATA_OVERHEAD, at = 0, n = 0, i;
	const struct msg_shape *ms = k->ms;
	const struct gn_codec_params *p;
	const struct gn_codec_ops *cd = gn_phase_codec(t, ms->phase, &p);
	int r = 0;
	u8 *d;

	if (most > m->cap)
		return -EINVAL;
	m->stream_bytes = k->idx ? 0 : cd->stream_extra;
	while (at < units) {
		u32 used = 0;
		bool coded;
		long len;

		if (n == most)
			return -EINVAL;
		if (take_bufs(ctx, m, n + 1))
			return -ENOMEM;
		d = m->pkt[n]->data;
		len = cut(k, at, d + GN_WIRE_DATA_HDR, cap, &used, &coded);
		if (len < 0 || !used || used > units - at)
			return -EINVAL;
		if (!n && k->z)
			*hint = k->next;
		gn_put_le32(at, d);
		d[4] = coded;
		m->pkt[n]->len = (u16)len;
		m->stream_bytes += (u64)len;
		at += used;
		n++;
	}
	if (n == 1 && k->z) {
		d = m->pkt[0]->data;
		memmove(d + GN_WIRE_WHOLE_HDR, d + GN_WIRE_DATA_HDR,
			m->pkt[0]->len);
		return put_packet(ctx, t, stepno, ms, m, GN_PKT_WHOLE, 0, units,
				  m->pkt[0]->len, 0, 1, d[4]);
	}
	for (i = 0; !r && i < n; i++) {
		u32 first = gn_get_le32(m->pkt[i]->data);
		u32 end = i + 1 < n ? gn_get_le32(m->pkt[i + 1]->data) : units;

		r = put_packet(ctx, t, stepno, ms, m, GN_PKT_DATA, first,
			       end - first, m->pkt[i]->len, i, n,
			       m->pkt[i]->data[4]);
	}
	return r;
}

/*
 * gn_pack() - the packets of one chunk's message: the codec's slices cut
 * greedily to the MTU, each straight into its buffer
 * @scratch, @x: the chunk's encoding and its values, for the codec's slicer
 * @z: this thread's entropy encoder, used when the parameters of the
 *	message's codec (gn_phase_codec(): a model tensor's results are its
 *	changes' codec's) have the stage (NULL: none, or none free: the
 *	codec's slices go as they are)
 * @hint: the message's raw bytes that filled its first packet last time
 *	(0: none yet; NULL without the stage), updated: a step's chunk codes
 *	much like the last one's, so one compression usually fills a packet
 *
 * Return: 0, -ENOMEM (no buffers) or -EINVAL (the codec broke its bounds).
 */
int gn_pack(struct gn_ctx *ctx, struct gn_txmsg *m, struct gn_tensor *t,
	    u32 stepno, const struct msg_shape *ms, const void *scratch,
	    const float *x, struct gn_entropy_enc *z, u32 *hint)
{
	const struct gn_codec_params *p;
	const struct gn_codec_ops *cd = gn_phase_codec(t, ms->phase, &p);
	struct cutter k = { t, ms, scratch, x, NULL,
			    hint && gn_entropy_on(p) ? z : NULL, 0 };

	if (k.z)
		k.next = *hint ? *hint : k.z->raw_max;
	if (gn_pkts_max(ctx, t, ms->chunk_len) > m->cap)
		return -EINVAL;
	if (cd->whole_bytes(p, scratch, ms->aux, ms->chunk_len) <=
	    whole_cap(ctx))
		return pack_whole(ctx, m, t, stepno, &k);
	return pack_cut(ctx, m, t, stepno, &k, msg_units(t, ms),
			gn_pkts_max(ctx, t, ms->chunk_len), hint);
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
	struct cutter k = { t, ms, NULL, NULL, idx, NULL, 0 };

	return pack_cut(ctx, m, t, stepno, &k, ms->aux,
			gn_index_pkts_max(ms->aux, ctx->max_pkt -
						   GN_WIRE_DATA_OVERHEAD), NULL);
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
	struct gn_zset *zs = NULL;
	int i;

	if (gn_index_round(t)) {
		gn_index_encode_all(ctx, st);
		return;
	}
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
