// SPDX-License-Identifier: MIT
/*
 * allreduce.c - tensors and the sharded allreduce.
 *
 * Rank j owns shard j of every tensor. Each rank quantizes its gradient
 * shard by shard (3LC chunks of ctx->chunk values, error feedback per
 * tensor) and sends shard j to rank j. The owner's sum starts as its own
 * share (which never crosses the network), in place in the caller's
 * tensor, and the others' contributions are decoded into it by rank, chunk
 * by chunk, so the float sums are the same whatever order packets arrive
 * in; it re-quantizes the sum with its
 * own error feedback and sends the same bytes to every rank; everyone, the
 * owner included, decodes those bytes into the caller's tensor. So results
 * are bit-identical on every rank and under any loss, duplication or
 * reordering. Contributions that arrive before their turn are kept as
 * copies of the (small) compressed slices.
 *
 * Error feedback is double-buffered: a step reads one buffer and writes
 * the other, and only a completed step flips them, so a failed step leaves
 * the error feedback as it was.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "internal.h"

_Static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__,
	       "dense payloads are copied as little-endian float32");

/*
 * The caller's side compresses in rounds of ENCODE_BATCH chunks: in each
 * round the next chunks of every other shard, then takes the own shard's
 * (which it adds as it is). So owners start adding while later chunks are
 * still being compressed, and one quantizer call still covers several
 * chunks (its passes overlap).
 */
#define ENCODE_BATCH 4

/* ---- layout ---------------------------------------------------------------- */

static size_t shard_lo(size_t n, int world, int j)
{
	return (size_t)((unsigned __int128)n * (unsigned int)j / (unsigned int)world);
}

static u32 groups_of(u8 codec, size_t len)
{
	return codec == GN_WIRE_CODEC_3LC ? (u32)gn_tlc_groups(len) : (u32)len;
}

/* Chunk @c of shard @j: first element and length. */
static size_t chunk_at(const struct gn_ctx *ctx, const struct gn_tensor *t,
		       int j, u32 c, size_t *len)
{
	size_t off = t->lo[j] + (size_t)c * ctx->chunk, end = t->lo[j + 1];

	*len = end - off < ctx->chunk ? end - off : ctx->chunk;
	return off;
}

/* Which chunk of shard @j a packet names, or -1 if none. */
static long chunk_of(const struct gn_ctx *ctx, const struct gn_tensor *t, int j,
		     const struct gn_wire_data *d)
{
	size_t len;
	u64 rel;

	if (d->chunk_off < t->lo[j] || d->chunk_off >= t->lo[j + 1])
		return -1;
	rel = d->chunk_off - t->lo[j];
	if (rel % ctx->chunk)
		return -1;
	chunk_at(ctx, t, j, (u32)(rel / ctx->chunk), &len);
	if (d->chunk_len != len)
		return -1;
	return (long)(rel / ctx->chunk);
}

/* ---- tensors ------------------------------------------------------------------ */

/*
 * Tensors by id, for the receive path's lookup per packet: a table with
 * linear probing, kept at most half full, grown at registration.
 */
static u32 tensor_slot(u32 id, u32 mask)
{
	return (id * 2654435761u) & mask;
}

struct gn_tensor *gn_tensor_find(struct gn_ctx *ctx, u32 id)
{
	u32 i;

	if (!ctx->tensor_tab)
		return NULL;
	for (i = tensor_slot(id, ctx->tensor_mask); ctx->tensor_tab[i];
	     i = (i + 1) & ctx->tensor_mask)
		if (ctx->tensor_tab[i]->id == id)
			return ctx->tensor_tab[i];
	return NULL;
}

static void tensor_tab_put(struct gn_tensor **tab, u32 mask,
			   struct gn_tensor *t)
{
	u32 i = tensor_slot(t->id, mask);

	while (tab[i])
		i = (i + 1) & mask;
	tab[i] = t;
}

/* Room for one more tensor: 0 or -ENOMEM (the table unchanged). */
static int tensor_tab_reserve(struct gn_ctx *ctx)
{
	u32 size = ctx->tensor_mask + 1, i;
	struct gn_tensor **tab;

	if (ctx->tensor_tab && 2 * (ctx->tensor_count + 1) <= size)
		return 0;
	size = ctx->tensor_tab ? 2 * size : 16;
	tab = calloc(size, sizeof(*tab));
	if (!tab)
		return -ENOMEM;
	for (i = 0; ctx->tensor_tab && i <= ctx->tensor_mask; i++)
		if (ctx->tensor_tab[i])
			tensor_tab_put(tab, size - 1, ctx->tensor_tab[i]);
	free(ctx->tensor_tab);
	ctx->tensor_tab = tab;
	ctx->tensor_mask = size - 1;
	return 0;
}

/* Take @t out; the rest of its probe run is put back so lookups find it. */
static void tensor_tab_del(struct gn_ctx *ctx, struct gn_tensor *t)
{
	u32 mask = ctx->tensor_mask, i = tensor_slot(t->id, mask), j;

	while (ctx->tensor_tab[i] != t)
		i = (i + 1) & mask;
	ctx->tensor_tab[i] = NULL;
	for (j = (i + 1) & mask; ctx->tensor_tab[j]; j = (j + 1) & mask) {
		struct gn_tensor *u = ctx->tensor_tab[j];

		ctx->tensor_tab[j] = NULL;
		tensor_tab_put(ctx->tensor_tab, mask, u);
	}
	ctx->tensor_count--;
}

static void step_free(struct gn_ctx *ctx, struct gn_step *st);

void gn_tensor_free(struct gn_tensor *t)
{
	int i;

	if (!t)
		return;
	for (i = 0; i < 2; i++) {
		free(t->e_rs[i]);
		free(t->e_ag[i]);
	}
	free(t->q);
	free(t->m);
	free(t->gq);
	free(t->lo);
	free(t->chunks);
	free(t->gat_off);
	free(t->desc);
	free(t);
}

void gn_tensor_destroy(struct gn_ctx *ctx, struct gn_tensor *t)
{
	step_free(ctx, t->cur);
	step_free(ctx, t->early);
	gn_tensor_free(t);
}

static int tensor_alloc(struct gn_ctx *ctx, struct gn_tensor *t)
{
	size_t own = t->lo[ctx->rank + 1] - t->lo[ctx->rank];
	int j;

	for (j = 0; j < ctx->world; j++) {
		size_t len = t->lo[j + 1] - t->lo[j];

		t->chunks[j] = (u32)((len + ctx->chunk - 1) / ctx->chunk);
		t->gat_off[j] = t->chunks_total;
		t->chunks_total += t->chunks[j];
	}
	if (t->codec == GN_WIRE_CODEC_3LC) {
		t->e_rs[0] = calloc(t->n, sizeof(float));
		t->e_rs[1] = calloc(t->n, sizeof(float));
		t->e_ag[0] = calloc(own + 1, sizeof(float));
		t->e_ag[1] = calloc(own + 1, sizeof(float));
		/* Scratch for one round of compression (encode_all()). */
		t->q = malloc(ENCODE_BATCH * gn_tlc_groups(ctx->chunk));
		t->m = malloc(ENCODE_BATCH * sizeof(float));
		t->gq = malloc(gn_tlc_groups(ctx->chunk) + 1);
		if (!t->e_rs[0] || !t->e_rs[1] || !t->e_ag[0] || !t->e_ag[1] ||
		    !t->q || !t->m || !t->gq)
			return -ENOMEM;
	}
	return 0;
}

static const char *codec_name(u8 c)
{
	return c == GN_WIRE_CODEC_NONE ? "none" : "3lc";
}

/* Compare a peer's registration of @t with ours; name the difference. */
static void desc_check(struct gn_ctx *ctx, struct gn_tensor *t, int peer);

static void send_desc(struct gn_ctx *ctx, struct gn_tensor *t)
{
	int i;

	for (i = 0; i < ctx->world; i++)
		if (i != ctx->rank && !ctx->peers[i].dead)
			gn_ctrl_send(ctx, i, GN_CTRL_TENSOR, (u8)t->flags, t->id,
				     t->base, t->codec, t->n, t->s_bits);
}

static int tensor_new(struct gn_ctx *ctx, const struct gn_tensor_opts *o,
		      struct gn_tensor **out)
{
	struct gn_tensor *t = calloc(1, sizeof(*t));
	int codec = o->codec, j;
	float s = o->s;

	if (!t)
		return -ENOMEM;
	t->id = o->id;
	t->n = o->elems;
	if (codec == GN_CODEC_DEFAULT)
		t->codec = ctx->codec;
	else
		t->codec = codec == GN_CODEC_NONE ? GN_WIRE_CODEC_NONE :
						    GN_WIRE_CODEC_3LC;
	t->s = s == 0.0f ? ctx->s : s;
	memcpy(&t->s_bits, &t->s, sizeof(t->s_bits));
	if (t->codec == GN_WIRE_CODEC_NONE)
		t->s_bits = 0;
	t->flags = o->flags;
	t->lo = calloc((size_t)ctx->world + 1, sizeof(size_t));
	t->chunks = calloc((size_t)ctx->world, sizeof(u32));
	t->gat_off = calloc((size_t)ctx->world, sizeof(u32));
	t->desc = calloc((size_t)ctx->world, sizeof(*t->desc));
	if (!t->lo || !t->chunks || !t->gat_off || !t->desc)
		goto out_free;
	for (j = 0; j <= ctx->world; j++)
		t->lo[j] = shard_lo(t->n, ctx->world, j);
	if (tensor_alloc(ctx, t))
		goto out_free;
	*out = t;
	return 0;

out_free:
	gn_tensor_free(t);
	return -ENOMEM;
}

static void aborts_due(struct gn_ctx *ctx, struct gn_step *st);
static bool older_registration(const struct gn_ctx *ctx,
			       const struct gn_tensor *t, u32 id, u32 no);

/*
 * Where the steps of a new registration of @id start: after the last step
 * of its previous registration, with one step number left unused, so that
 * no packet of the old registration (at most one step ahead of it, as an
 * early step) can belong to the new one on any rank.
 */
static u32 retired_take(struct gn_ctx *ctx, u32 id)
{
	struct gn_retired **pp, *rt;
	u32 base;

	for (pp = &ctx->retired; *pp; pp = &(*pp)->next) {
		rt = *pp;
		if (rt->id != id)
			continue;
		base = rt->stepno + 1;
		*pp = rt->next;
		free(rt);
		return base;
	}
	return 0;
}

int gn_tensor_register(struct gn_ctx *ctx, const struct gn_tensor_opts *opts)
{
	struct gn_tensor_opts copy = { 0 }, *o = &copy;
	struct gn_pending_desc **pp;
	struct gn_tensor *t;
	int r;

	if (!ctx)
		return -EINVAL;
	r = opts ? gn_opts_check(opts, opts->sz, sizeof(*opts)) : -EINVAL;
	if (r == -E2BIG) {
		snprintf(ctx->api_errmsg, sizeof(ctx->api_errmsg),
			 "tensor %u: gn_tensor_opts sz %zu is larger than this library's %zu and the extra bytes are not zero",
			 opts->id, opts->sz, sizeof(*opts));
		return r;
	}
	if (!r) {
		/* Fields past the caller's sz are zero, the defaults. */
		memcpy(&copy, opts, opts->sz < sizeof(copy) ? opts->sz : sizeof(copy));
		if (opts->sz < offsetof(struct gn_tensor_opts, elems) + sizeof(opts->elems))
			r = -EINVAL;
	}
	if (r || !o->elems || o->elems > (1ull << 40) ||
	    (o->codec != GN_CODEC_DEFAULT && o->codec != GN_CODEC_NONE &&
	     o->codec != GN_CODEC_3LC) ||
	    (o->s != 0.0f && !(o->s >= 1.0f && o->s < 2.0f)) ||
	    (o->flags & ~GN_TENSOR_AVERAGE)) {
		snprintf(ctx->api_errmsg, sizeof(ctx->api_errmsg),
			 "tensor %u: bad options (sz, elems 1..2^40, codec, s in [1, 2), flags)",
			 o->id);
		return -EINVAL;
	}
	pthread_mutex_lock(&ctx->lock);
	if (gn_tensor_find(ctx, o->id)) {
		snprintf(ctx->api_errmsg, sizeof(ctx->api_errmsg),
			 "tensor %u is already registered", o->id);
		r = -EEXIST;
		goto out;
	}
	r = tensor_tab_reserve(ctx);
	if (!r)
		r = tensor_new(ctx, o, &t);
	if (r) {
		snprintf(ctx->api_errmsg, sizeof(ctx->api_errmsg),
			 "tensor %u: out of memory for %zu values", o->id, o->elems);
		goto out;
	}
	t->base = retired_take(ctx, t->id);
	t->stepno = t->done_no = t->base;
	t->next = ctx->tensors;
	ctx->tensors = t;
	tensor_tab_put(ctx->tensor_tab, ctx->tensor_mask, t);
	ctx->tensor_count++;
	/* Descriptors that peers sent before this rank registered the tensor;
	 * those of an older registration are stale, a newer one's stay. */
	for (pp = &ctx->pending; *pp;) {
		struct gn_pending_desc *d = *pp;

		/* Aborts of this registration's steps wait for the step. */
		if (d->id != t->id || d->base > t->base) {
			pp = &d->next;
			continue;
		}
		if (d->base == t->base && !d->abort_err) {
			t->desc[d->peer] = d->desc;
			desc_check(ctx, t, d->peer);
		}
		ctx->peers[d->peer].pending_descs--;
		*pp = d->next;
		free(d);
	}
	send_desc(ctx, t);
	ctx->tp->wake(ctx->tp_state);
out:
	pthread_mutex_unlock(&ctx->lock);
	return r;
}

/* ---- steps ------------------------------------------------------------------------ */

static struct gn_step *step_new(struct gn_ctx *ctx, struct gn_tensor *t, u32 no)
{
	struct gn_step *st = calloc(1, sizeof(*st));
	u32 own = t->chunks[ctx->rank];

	if (!st)
		return NULL;
	st->no = no;
	st->t = t;
	st->red = calloc((size_t)ctx->world * own + 1, sizeof(*st->red));
	st->turn = calloc(own + 1, sizeof(*st->turn));
	st->todo = calloc(own + 1, 1);
	st->gat = calloc(t->chunks_total + 1, sizeof(*st->gat));
	st->gat_left = t->chunks_total;
	if (!st->red || !st->turn || !st->todo || !st->gat) {
		free(st->red);
		free(st->turn);
		free(st->todo);
		free(st->gat);
		free(st);
		return NULL;
	}
	return st;
}

static void step_release_rx(struct gn_ctx *ctx, struct gn_step *st)
{
	struct gn_tensor *t = st->t;
	u32 i, own = t->chunks[ctx->rank];

	for (i = 0; st->red && i < (u32)ctx->world * own; i++)
		gn_rxmsg_clear(ctx, &st->red[i]);
	for (i = 0; st->gat && i < t->chunks_total; i++)
		gn_rxmsg_clear(ctx, &st->gat[i]);
	free(st->red);
	free(st->gat);
	free(st->turn);
	free(st->todo);
	st->red = NULL;
	st->gat = NULL;
	st->turn = NULL;
	st->todo = NULL;
	ctx->work_n -= st->todo_n;
	st->todo_n = 0;
}

static void step_free(struct gn_ctx *ctx, struct gn_step *st)
{
	if (!st)
		return;
	step_release_rx(ctx, st);
	gn_tx_drop_step(ctx, st);
	free(st);
}

/* The step's outcome is known: tell the waiter. */
static void step_report(struct gn_ctx *ctx, struct gn_step *st)
{
	struct gn_tensor *t = st->t;

	if (!st->started)
		return;
	t->done_no = st->no;
	t->done_err = st->err;
	snprintf(t->done_msg, sizeof(t->done_msg), "%s", st->errmsg);
	pthread_cond_broadcast(&ctx->cond);
}

/*
 * Fail a step: drop what it sent and received. A started step stays as
 * t->cur (the caller's thread may still be compressing into it) until the
 * next start frees it; an early one keeps its error for that start.
 */
static void step_fail(struct gn_ctx *ctx, struct gn_step *st, int err,
		      const char *msg)
{
	if (st->err || st->done)
		return;
	st->err = err;
	snprintf(st->errmsg, sizeof(st->errmsg), "%s", msg);
	step_release_rx(ctx, st);
	gn_tx_drop_step(ctx, st);
	step_report(ctx, st);
}

static void abort_peers(struct gn_ctx *ctx, struct gn_step *st, int err,
			int culprit)
{
	int i;

	for (i = 0; i < ctx->world; i++)
		if (i != ctx->rank && !ctx->peers[i].dead)
			gn_ctrl_send(ctx, i, GN_CTRL_ABORT, 0, st->t->id, st->no,
				     st->t->codec, (u64)-err, (u32)culprit);
	ctx->tp->wake(ctx->tp_state);
}

static void step_complete(struct gn_ctx *ctx, struct gn_step *st)
{
	struct gn_tensor *t = st->t;

	st->done = true;
	t->e_cur ^= 1;
	t->stats.allreduces++;
	ctx->stats.allreduces++;
	step_report(ctx, st);
	t->cur = t->early;
	t->early = NULL;
	/* Still compressing (the last shard just went out): the caller's
	 * thread frees it when it is done. */
	if (!st->encoding)
		step_free(ctx, st);
}

void gn_fail_all(struct gn_ctx *ctx, int err, const char *msg)
{
	struct gn_tensor *t;

	for (t = ctx->tensors; t; t = t->next) {
		if (t->cur)
			step_fail(ctx, t->cur, err, msg);
		if (t->early)
			step_fail(ctx, t->early, err, msg);
	}
}

/* ---- building packets ------------------------------------------------------------ */

struct msg_shape {
	u8 phase;
	u16 to;
	u64 chunk_off;
	u32 chunk_len;
	u32 scale;
};

static void put_packet(struct gn_ctx *ctx, struct gn_tensor *t, u32 stepno,
		       const struct msg_shape *ms, u8 *pkt, u32 first,
		       u32 count, u32 body, u32 idx, u32 npkts)
{
	struct gn_wire_hdr h;
	struct gn_wire_data d = {
		.chunk_off = ms->chunk_off, .chunk_len = ms->chunk_len,
		.first = first, .count = count, .scale = ms->scale,
		.s = t->s_bits, .pkt = idx, .npkts = npkts,
	};

	gn_hdr_init(ctx, &h, GN_PKT_DATA, ms->to);
	h.tensor = t->id;
	h.step = stepno;
	h.phase = ms->phase;
	h.codec = t->codec;
	h.body_len = (u16)body;
	gn_wire_hdr_put(&h, pkt);
	gn_wire_data_put(&d, pkt);
	gn_mac_seal(ctx->mac, pkt, GN_WIRE_DATA_HDR + body);
}

/*
 * The most packets the message of a chunk of @len elements can have, as
 * pack_3lc() and pack_dense() cut it with this job's MTU (which every
 * rank shares): a 3LC slice leaves at most one byte of its budget unused
 * and a code byte covers at least one group; a dense packet carries a
 * budget's worth of values. Receivers refuse anything more.
 */
static u32 pkts_max(const struct gn_ctx *ctx, u8 codec, size_t len)
{
	size_t cap = ctx->max_pkt - GN_WIRE_DATA_OVERHEAD;

	if (codec == GN_WIRE_CODEC_3LC)
		return (u32)(gn_tlc_groups(len) / (cap - 1) + 2);
	return (u32)((len + cap / 4 - 1) / (cap / 4));
}

/*
 * The packets of one 3LC chunk: zero-run encoded slices cut greedily to
 * the MTU. Slices are laid out first, headers and tags written once the
 * packet count is known.
 */
static struct gn_txmsg *pack_3lc(struct gn_ctx *ctx, struct gn_tensor *t,
				 u32 stepno, const struct msg_shape *ms,
				 const u8 *q, u32 g)
{
	u32 cap = ctx->max_pkt - GN_WIRE_DATA_OVERHEAD;
	u32 most = pkts_max(ctx, GN_WIRE_CODEC_3LC, ms->chunk_len);
	struct gn_txmsg *m = gn_txmsg_new(ctx, most, (size_t)g + (size_t)most *
						   GN_WIRE_DATA_OVERHEAD);
	u32 *first = malloc(most * sizeof(u32)), at = 0, n = 0, i;
	size_t pos = 0;

	if (!m || !first)
		goto out_free;
	while (at < g) {
		size_t used;
		long len = gn_zre_encode(q + at, g - at,
					 m->buf + pos + GN_WIRE_DATA_HDR, cap, &used);

		m->off[n] = (u32)pos;
		first[n++] = at;
		at += (u32)used;
		pos += GN_WIRE_DATA_OVERHEAD + (size_t)len;
	}
	m->off[n] = (u32)pos;
	m->npkts = n;
	for (i = 0; i < n; i++) {
		u32 end = i + 1 < n ? first[i + 1] : g;

		put_packet(ctx, t, stepno, ms, m->buf + m->off[i], first[i],
			   end - first[i],
			   m->off[i + 1] - m->off[i] - GN_WIRE_DATA_OVERHEAD, i, n);
	}
	free(first);
	return m;

out_free:
	free(first);
	gn_txmsg_free(m);
	return NULL;
}

static struct gn_txmsg *pack_dense(struct gn_ctx *ctx, struct gn_tensor *t,
				   u32 stepno, const struct msg_shape *ms,
				   const float *v)
{
	u32 per = (ctx->max_pkt - GN_WIRE_DATA_OVERHEAD) / 4, len = ms->chunk_len;
	u32 n = pkts_max(ctx, GN_WIRE_CODEC_NONE, len), i;
	struct gn_txmsg *m = gn_txmsg_new(ctx, n, (size_t)len * 4 +
						   (size_t)n * GN_WIRE_DATA_OVERHEAD);
	size_t pos = 0;

	if (!m)
		return NULL;
	for (i = 0; i < n; i++) {
		u32 count = len - i * per < per ? len - i * per : per;

		m->off[i] = (u32)pos;
		memcpy(m->buf + pos + GN_WIRE_DATA_HDR, v + (size_t)i * per,
		       (size_t)count * 4);
		put_packet(ctx, t, stepno, ms, m->buf + pos, i * per, count,
			   count * 4, i, n);
		pos += GN_WIRE_DATA_OVERHEAD + (size_t)count * 4;
	}
	m->off[n] = (u32)pos;
	return m;
}

static void msg_identity(struct gn_txmsg *m, struct gn_step *st,
			 const struct msg_shape *ms)
{
	m->step = st;
	m->t = st->t;
	m->tensor = st->t->id;
	m->stepno = st->no;
	m->phase = ms->phase;
	m->to = ms->to;
	m->codec = st->t->codec;
	m->chunk_off = ms->chunk_off;
	m->raw_bytes = (u64)ms->chunk_len * 4;
}

/* ---- the owner's side --------------------------------------------------------------- */

static float result_scale(const struct gn_ctx *ctx, const struct gn_tensor *t,
			  float m)
{
	return t->flags & GN_TENSOR_AVERAGE ? m / (float)ctx->world : m;
}

/* The dense result from a sum: itself, or divided by the world (in place
 * when @dst is @v). */
static void dense_result(const struct gn_ctx *ctx, const struct gn_tensor *t,
			 float *dst, const float *v, u32 count)
{
	u32 i;

	if (t->flags & GN_TENSOR_AVERAGE)
		for (i = 0; i < count; i++)
			dst[i] = v[i] / (float)ctx->world;
	else if (dst != v)
		memcpy(dst, v, (size_t)count * 4);
}

static void abort_step(struct gn_ctx *ctx, struct gn_step *st, int err,
		       const char *why)
{
	char msg[GN_ERRMSG_LEN];

	snprintf(msg, sizeof(msg), "tensor %u step %u: %s", st->t->id, st->no, why);
	step_fail(ctx, st, err, msg);
	abort_peers(ctx, st, err, ctx->rank);
}

static void gathered_one(struct gn_ctx *ctx, struct gn_step *st)
{
	if (!--st->gat_left)
		step_complete(ctx, st);
}

/*
 * No NaN or infinity in the @n float32 at @v (aligned or not, as in a
 * packet)? (Bit test, so the compiler vectorizes it.)
 */
static bool all_finite(const void *v, size_t n)
{
	u32 worst = 0, b;
	size_t i;

	for (i = 0; i < n; i++) {
		memcpy(&b, (const u8 *)v + 4 * i, sizeof(b));
		b &= 0x7fffffffu;
		worst = b > worst ? b : worst;
	}
	return worst < 0x7f800000u;
}

/*
 * Why a sum is not finite: a NaN or infinity in the owner's own share
 * (unchecked until now for 3LC) or an overflow.
 */
static const char *sum_why(const struct gn_ctx *ctx, const struct gn_tensor *t,
			   char *why)
{
	snprintf(why, GN_ERRMSG_LEN,
		 "the sum of tensor %u at %s is NaN or infinity (a NaN or infinity in its gradient, or float32 overflow); step skipped on every rank",
		 t->id, ctx->peers[ctx->rank].name);
	return why;
}

/*
 * Chunk @c of the own shard has every contribution: quantize the sum with
 * the owner's error feedback, send it to every rank, decode it here.
 */
static void gather_chunk(struct gn_ctx *ctx, struct gn_step *st, u32 c)
{
	struct gn_tensor *t = st->t;
	size_t len, off = chunk_at(ctx, t, ctx->rank, c, &len);
	size_t rel = off - t->lo[ctx->rank];
	struct msg_shape ms = { GN_PHASE_GATHER, GN_RANK_ALL, off, (u32)len, 0 };
	float *sum = st->data + off, mm = 0;
	char why[GN_ERRMSG_LEN];
	struct gn_txmsg *m;

	if (t->codec == GN_WIRE_CODEC_3LC) {
		u32 g = (u32)gn_tlc_groups(len);

		if (gn_tlc_quantize_chunks(sum, t->e_ag[t->e_cur] + rel,
					   t->e_ag[!t->e_cur] + rel, len, len,
					   t->s, t->gq, &mm)) {
			abort_step(ctx, st, -EDOM, sum_why(ctx, t, why));
			return;
		}
		memcpy(&ms.scale, &mm, sizeof(mm));
		m = pack_3lc(ctx, t, st->no, &ms, t->gq, g);
		/* The sum is no longer needed: decode the result over it. */
		memset(sum, 0, len * sizeof(float));
		gn_tlc_decode_slice(t->gq, g, result_scale(ctx, t, mm), sum, len,
				    0, g);
	} else {
		if (!all_finite(sum, len)) {
			abort_step(ctx, st, -EDOM, sum_why(ctx, t, why));
			return;
		}
		m = pack_dense(ctx, t, st->no, &ms, sum);
		dense_result(ctx, t, sum, sum, (u32)len);
	}
	if (!m) {
		abort_step(ctx, st, -ENOMEM, "out of memory for packets");
		return;
	}
	msg_identity(m, st, &ms);
	if (ctx->world > 1)
		gn_txmsg_queue(ctx, m);
	else
		gn_txmsg_free(m);
	gathered_one(ctx, st);
}

/* Add one slice of a contribution to the own shard's sum. */
static void add_slice(struct gn_tensor *t, float *acc, size_t len, u32 first,
		      u32 count, u32 scale, const u8 *body, u16 blen)
{
	u32 i;

	if (t->codec == GN_WIRE_CODEC_3LC) {
		float m;

		memcpy(&m, &scale, sizeof(m));
		gn_tlc_decode_slice(body, blen, m, acc, len, first, count);
		return;
	}
	for (i = 0; i < count; i++) {
		float v;

		memcpy(&v, body + 4 * i, sizeof(v));
		acc[first + i] += v;
	}
}

/*
 * The order in which an owner adds the contributions to a chunk of its
 * shard: its own share first (it is already in place in the caller's
 * tensor, which holds the running sum), then the others by rank.
 */
static int turn_rank(const struct gn_ctx *ctx, unsigned int turn)
{
	if (!turn)
		return ctx->rank;
	return (int)turn - 1 < ctx->rank ? (int)turn - 1 : (int)turn;
}

/* Every packet of a message is in. */
static bool rx_whole(const struct gn_rxmsg *rx)
{
	return rx->npkts && rx->got == rx->npkts;
}

/* Chunk @c may be ready for more: the progress thread will look. */
static void want_work(struct gn_ctx *ctx, struct gn_step *st, u32 c)
{
	if (st->todo && !st->todo[c]) {
		st->todo[c] = 1;
		st->todo_n++;
		ctx->work_n++;
	}
}

/* Add contributions to chunk @c in their order, as far as they are here. */
static void try_reduce(struct gn_ctx *ctx, struct gn_step *st, u32 c)
{
	struct gn_tensor *t = st->t;
	u32 nc = t->chunks[ctx->rank];
	size_t len, off = chunk_at(ctx, t, ctx->rank, c, &len);

	while (!st->err && st->turn[c] < ctx->world) {
		int k = turn_rank(ctx, st->turn[c]);
		struct gn_rxmsg *rx = &st->red[(size_t)k * nc + c];

		if (k == ctx->rank) {
			/* Checked, and already where the sum is. */
			if (c >= st->own_done)
				return;
			st->turn[c]++;
			continue;
		}
		while (rx->held) {
			struct gn_held *h = rx->held;

			rx->held = h->next;
			add_slice(t, st->data + off, len, h->first, h->count,
				  h->scale, h->body, h->len);
			free(h);
		}
		if (!rx_whole(rx))
			return;
		st->turn[c]++;
	}
	if (!st->err && st->turn[c] == ctx->world) {
		st->turn[c]++;	/* past the last rank: reduced */
		gather_chunk(ctx, st, c);
	}
}

/* ---- step deadlines ----------------------------------------------------------------- */

/*
 * Peers this rank still waits for in @st, as names in @who: first those
 * whose share of this rank's shard is incomplete; if none, owners that
 * sent no result at all. Returns the first such peer, or -1. @results
 * tells which kind it found.
 */
static int waiting_for(const struct gn_ctx *ctx, const struct gn_step *st,
		       char *who, size_t cap, bool *results)
{
	const struct gn_tensor *t = st->t;
	u32 nc = t->chunks[ctx->rank], c;
	int j, first = -1, more = 0;

	*results = false;
	for (j = 0; j < ctx->world; j++) {
		if (j == ctx->rank)
			continue;
		for (c = 0; c < nc && rx_whole(&st->red[(size_t)j * nc + c]); c++)
			;
		if (c < nc && first < 0)
			first = j;
		else if (c < nc)
			more++;
	}
	for (j = 0; first < 0 && j < ctx->world; j++) {
		const struct gn_rxmsg *g = &st->gat[t->gat_off[j]];

		if (j == ctx->rank || !t->chunks[j])
			continue;
		for (c = 0; c < t->chunks[j] && !g[c].npkts; c++)
			;
		if (c == t->chunks[j]) {
			first = j;
			*results = true;
		}
	}
	if (first >= 0)
		snprintf(who, cap, more ? "%s and %d more" : "%s",
			 ctx->peers[first].name, more);
	return first;
}

/*
 * A peer that is alive (it answers pings) but never sends its share, say
 * a trainer stuck in its data loader, would hold the others forever. A
 * step still short of a peer's share step_timeout_ns after this rank
 * started it fails here and, by an abort, on every rank. That keeps the
 * ranks in step: while a share is missing at this owner, no rank can
 * have finished, since every rank needs this owner's result. An owner
 * that sent no result at all is given half as long again, so that the
 * owner that lacks a share can time out first and name the real culprit.
 */
void gn_step_deadlines(struct gn_ctx *ctx)
{
	struct gn_tensor *t;

	if (!ctx->step_timeout_ns || ctx->now_ns < ctx->deadlines_ns)
		return;
	ctx->deadlines_ns = ctx->now_ns + 50000000ull;
	for (t = ctx->tensors; t; t = t->next) {
		struct gn_step *st = t->cur;
		u64 age, ms = ctx->step_timeout_ns / 1000000;
		char who[GN_ERRMSG_LEN / 2], msg[GN_ERRMSG_LEN];
		bool results;
		int j;

		if (!st || !st->started || st->done || st->err)
			continue;
		age = ctx->now_ns - st->start_ns;
		if (age <= ctx->step_timeout_ns)
			continue;
		j = waiting_for(ctx, st, who, sizeof(who), &results);
		if (j < 0 || (results && age <= ctx->step_timeout_ns * 3 / 2))
			continue;
		snprintf(msg, sizeof(msg),
			 results ? "tensor %u step %u: no result from %s within %llu ms; step failed on every rank"
				 : "tensor %u step %u: no share from %s within %llu ms (is it calling allreduce for this tensor?); step failed on every rank",
			 t->id, st->no, who, (unsigned long long)ms);
		step_fail(ctx, st, -ETIMEDOUT, msg);
		abort_peers(ctx, st, -ETIMEDOUT, j);
	}
}

/* ---- the caller's side: start and wait ------------------------------------------------ */

/* Build the reduce messages of shard @j; quantized groups in t->q. */

/* A run of chunks of shard j: [c0, c0 + n). */
struct span {
	int j;
	u32 c0, n;
};

/* Build the reduce messages of a span; quantized groups in t->q. */
static int pack_span(struct gn_ctx *ctx, struct gn_step *st,
		     const struct span *sp, struct gn_txmsg **list)
{
	struct gn_tensor *t = st->t;
	u32 k, stride = (u32)gn_tlc_groups(ctx->chunk);

	for (k = 0; k < sp->n; k++) {
		size_t len, off = chunk_at(ctx, t, sp->j, sp->c0 + k, &len);
		struct msg_shape ms = { GN_PHASE_REDUCE, (u16)sp->j, off,
					(u32)len, 0 };
		struct gn_txmsg *m;

		if (t->codec == GN_WIRE_CODEC_3LC) {
			memcpy(&ms.scale, &t->m[k], sizeof(float));
			m = pack_3lc(ctx, t, st->no, &ms, t->q + (size_t)k * stride,
				     (u32)gn_tlc_groups(len));
		} else {
			m = pack_dense(ctx, t, st->no, &ms, st->data + off);
		}
		if (!m)
			return -ENOMEM;
		msg_identity(m, st, &ms);
		m->next = *list;
		*list = m;
	}
	return 0;
}

/* Quantize and pack a span of the caller's gradient (no lock held). */
static int encode_span(struct gn_ctx *ctx, struct gn_step *st,
		       const struct span *sp, struct gn_txmsg **list)
{
	struct gn_tensor *t = st->t;
	size_t len, off = chunk_at(ctx, t, sp->j, sp->c0, &len);
	size_t end = sp->c0 + sp->n == t->chunks[sp->j] ? t->lo[sp->j + 1] :
			     off + (size_t)sp->n * ctx->chunk;
	int r;

	/*
	 * The own share never leaves this host: the owner adds it as it is,
	 * and a NaN or infinity in it shows when the sum is quantized
	 * (gather_chunk()), which saves a pass over it here. Dense values go
	 * out as they are, so they are checked now.
	 */
	if (t->codec == GN_WIRE_CODEC_NONE) {
		if (!all_finite(st->data + off, end - off))
			return -EDOM;
	} else if (sp->j != ctx->rank) {
		r = gn_tlc_quantize_chunks(st->data + off, t->e_rs[t->e_cur] + off,
					   t->e_rs[!t->e_cur] + off, end - off,
					   ctx->chunk, t->s, t->q, t->m);
		if (r)
			return r;
	}
	if (sp->j == ctx->rank)
		return 0;
	return pack_span(ctx, st, sp, list);
}

static void free_list(struct gn_txmsg *m)
{
	while (m) {
		struct gn_txmsg *next = m->next;

		gn_txmsg_free(m);
		m = next;
	}
}

/* Hand a compressed span to the progress thread (lock held). */
static void publish_span(struct gn_ctx *ctx, struct gn_step *st,
			 const struct span *sp, struct gn_txmsg *list, int r)
{
	char why[GN_ERRMSG_LEN];
	u32 c;

	if (st->err) {
		free_list(list);
		return;
	}
	if (r == -EDOM) {
		free_list(list);
		snprintf(why, sizeof(why),
			 "the gradient of %s holds NaN or infinity; step skipped on every rank",
			 ctx->peers[ctx->rank].name);
		abort_step(ctx, st, -EDOM, why);
		return;
	}
	if (r) {
		free_list(list);
		abort_step(ctx, st, r, "out of memory while compressing");
		return;
	}
	if (sp->j == ctx->rank) {
		st->own_done = sp->c0 + sp->n;
		for (c = sp->c0; c < st->own_done; c++)
			want_work(ctx, st, c);
	}
	while (list) {
		struct gn_txmsg *m = list;

		list = m->next;
		gn_txmsg_queue(ctx, m);
	}
	ctx->tp->wake(ctx->tp_state);
}

static void encode_all(struct gn_ctx *ctx, struct gn_step *st)
{
	struct gn_tensor *t = st->t;
	u32 c0, most = 0;
	int i;

	for (i = 0; i < ctx->world; i++)
		most = t->chunks[i] > most ? t->chunks[i] : most;
	for (c0 = 0; c0 < most; c0 += ENCODE_BATCH) {
		for (i = 1; i <= ctx->world; i++) {
			struct span sp = { (ctx->rank + i) % ctx->world, c0, 0 };
			struct gn_txmsg *list = NULL;
			bool failed;
			int r;

			if (c0 >= t->chunks[sp.j])
				continue;
			sp.n = t->chunks[sp.j] - c0 < ENCODE_BATCH ?
				       t->chunks[sp.j] - c0 : ENCODE_BATCH;
			pthread_mutex_lock(&ctx->lock);
			failed = st->err != 0;
			pthread_mutex_unlock(&ctx->lock);
			if (failed)
				return;
			r = encode_span(ctx, st, &sp, &list);
			pthread_mutex_lock(&ctx->lock);
			publish_span(ctx, st, &sp, list, r);
			pthread_mutex_unlock(&ctx->lock);
		}
	}
}

static int api_err(struct gn_ctx *ctx, int err, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int api_err(struct gn_ctx *ctx, int err, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(ctx->api_errmsg, sizeof(ctx->api_errmsg), fmt, ap);
	va_end(ap);
	return err;
}

/* Take over step @no of @t, or fail it right away (lock held). */
static struct gn_step *begin_step(struct gn_ctx *ctx, struct gn_tensor *t,
				  float *data)
{
	u32 no = t->stepno + 1;
	struct gn_step *st;

	/* An older step that failed or ended; not this one, which may have
	 * failed early on an abort from a peer. */
	if (t->cur && t->cur->no != no && (t->cur->err || t->cur->done) &&
	    !t->cur->encoding) {
		step_free(ctx, t->cur);
		t->cur = NULL;
	}
	st = t->cur && t->cur->no == no ? t->cur : NULL;
	if (!st && t->early && t->early->no == no) {
		st = t->early;
		t->early = NULL;
	}
	if (!st) {
		st = step_new(ctx, t, no);
		if (st)
			aborts_due(ctx, st);
	}
	if (!st)
		return NULL;
	t->stepno = no;
	t->cur = st;
	st->started = true;
	st->start_ns = gn_now_ns();
	st->data = data;
	if (t->proto_err && !st->err)
		step_fail(ctx, st, -EPROTO, t->proto_msg);
	if (ctx->dead_peer >= 0 && !st->err) {
		char msg[GN_ERRMSG_LEN];

		snprintf(msg, sizeof(msg), "%s is gone; the job cannot continue",
			 ctx->peers[ctx->dead_peer].name);
		step_fail(ctx, st, -ETIMEDOUT, msg);
	}
	if (st->err)
		step_report(ctx, st);
	return st;
}

int gn_allreduce_start(struct gn_ctx *ctx, u32 id, float *data)
{
	struct gn_tensor *t;
	struct gn_step *st;
	bool enc;
	u32 c;

	if (!ctx || !data)
		return -EINVAL;
	pthread_mutex_lock(&ctx->lock);
	t = gn_tensor_find(ctx, id);
	if (!t) {
		pthread_mutex_unlock(&ctx->lock);
		return api_err(ctx, -ENOENT, "tensor %u is not registered", id);
	}
	if (t->busy) {
		pthread_mutex_unlock(&ctx->lock);
		return api_err(ctx, -EBUSY,
			       "tensor %u: allreduce already in flight; call gn_allreduce_wait() first",
			       id);
	}
	st = begin_step(ctx, t, data);
	if (!st) {
		pthread_mutex_unlock(&ctx->lock);
		return api_err(ctx, -ENOMEM, "tensor %u: out of memory", id);
	}
	t->busy = true;
	st->encoding = enc = !st->err;
	if (enc) {
		/* Contributions that came early can be added up to our turn. */
		for (c = 0; c < t->chunks[ctx->rank]; c++)
			want_work(ctx, st, c);
		ctx->tp->wake(ctx->tp_state);
	}
	pthread_mutex_unlock(&ctx->lock);
	if (enc) {
		encode_all(ctx, st);
		pthread_mutex_lock(&ctx->lock);
		st->encoding = false;
		if (st->done)
			step_free(ctx, st);
		pthread_mutex_unlock(&ctx->lock);
	}
	return 0;
}

int gn_allreduce_wait(struct gn_ctx *ctx, u32 id)
{
	struct gn_tensor *t;
	int err;

	if (!ctx)
		return -EINVAL;
	pthread_mutex_lock(&ctx->lock);
	t = gn_tensor_find(ctx, id);
	if (!t || !t->busy) {
		pthread_mutex_unlock(&ctx->lock);
		return api_err(ctx, t ? -EINVAL : -ENOENT,
			       "tensor %u: no allreduce in flight", id);
	}
	while (t->done_no != t->stepno)
		pthread_cond_wait(&ctx->cond, &ctx->lock);
	err = t->done_err;
	snprintf(ctx->api_errmsg, sizeof(ctx->api_errmsg), "%s",
		 err ? t->done_msg : "");
	t->busy = false;
	pthread_mutex_unlock(&ctx->lock);
	return err;
}

int gn_allreduce(struct gn_ctx *ctx, u32 id, float *data)
{
	int r = gn_allreduce_start(ctx, id, data);

	return r ? r : gn_allreduce_wait(ctx, id);
}

static bool tensor_owes(const struct gn_ctx *ctx, const struct gn_tensor *t)
{
	const struct gn_txmsg *m;

	for (m = ctx->tx; m; m = m->next)
		if (m->t == t)
			return true;
	return false;
}

int gn_tensor_unregister(struct gn_ctx *ctx, u32 id)
{
	struct gn_tensor **pp, *t;
	struct gn_retired *rt;
	u64 until;

	if (!ctx)
		return -EINVAL;
	rt = calloc(1, sizeof(*rt));
	if (!rt)
		return api_err(ctx, -ENOMEM, "tensor %u: out of memory", id);
	pthread_mutex_lock(&ctx->lock);
	t = gn_tensor_find(ctx, id);
	if (!t || t->busy || (t->cur && t->cur->encoding)) {
		pthread_mutex_unlock(&ctx->lock);
		free(rt);
		if (!t)
			return api_err(ctx, -ENOENT, "tensor %u is not registered", id);
		return api_err(ctx, -EBUSY,
			       "tensor %u: allreduce in flight; call gn_allreduce_wait() first",
			       id);
	}
	/* Busy while we wait below, so a racing start is refused. */
	t->busy = true;
	step_free(ctx, t->cur);
	step_free(ctx, t->early);
	t->cur = t->early = NULL;
	/*
	 * This rank's results may still be on their way to slower peers, and
	 * those messages point at @t: wait for their acknowledgements. A dead
	 * peer's are dropped after ctx->timeout_ns, so this ends.
	 */
	until = gn_now_ns() + 2 * ctx->timeout_ns + 1000000000ull;
	while (tensor_owes(ctx, t) && gn_now_ns() < until) {
		struct timespec ts;

		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_nsec += 1000000;
		if (ts.tv_nsec >= 1000000000) {
			ts.tv_sec++;
			ts.tv_nsec -= 1000000000;
		}
		pthread_cond_timedwait(&ctx->cond, &ctx->lock, &ts);
	}
	if (tensor_owes(ctx, t)) {
		t->busy = false;
		pthread_mutex_unlock(&ctx->lock);
		free(rt);
		return api_err(ctx, -ETIMEDOUT,
			       "tensor %u: peers did not acknowledge its last results; still registered",
			       id);
	}
	for (pp = &ctx->tensors; *pp != t; pp = &(*pp)->next)
		;
	*pp = t->next;
	tensor_tab_del(ctx, t);
	rt->id = id;
	rt->stepno = t->stepno;
	rt->next = ctx->retired;
	ctx->retired = rt;
	gn_tensor_destroy(ctx, t);
	pthread_mutex_unlock(&ctx->lock);
	return 0;
}

/* ---- the progress thread's side: packets in ---------------------------------------------- */

/*
 * The step a packet belongs to: the current one, or the next one if a
 * faster peer is already there. Older steps are over: the sender gets an
 * acknowledgement so it stops, the packet is dropped as a replay.
 */
static struct gn_step *step_for(struct gn_ctx *ctx, struct gn_tensor *t,
				u32 no, bool *stale)
{
	*stale = false;
	if (t->cur && t->cur->no == no)
		return t->cur;
	if (t->early && t->early->no == no)
		return t->early;
	if (no == t->stepno + 1) {
		struct gn_step *st = step_new(ctx, t, no);

		if (!st)
			return NULL;
		aborts_due(ctx, st);
		if (!t->cur || ((t->cur->done || t->cur->err) &&
				 !t->cur->encoding)) {
			step_free(ctx, t->cur);
			t->cur = st;
		} else {
			t->early = st;
		}
		return st;
	}
	*stale = no <= t->stepno;
	return NULL;
}

/* Bits [first, first + count) of @bits: all clear? Then set them. */
static bool claim_range(u64 *bits, u32 first, u32 count)
{
	u32 end = first + count, w;

	for (w = first / 64; w <= (end - 1) / 64; w++) {
		u32 lo = w == first / 64 ? first % 64 : 0;
		u32 hi = w == (end - 1) / 64 ? (end - 1) % 64 : 63;
		u64 mask = (~0ull >> (63 - hi)) & (~0ull << lo);

		if (bits[w] & mask)
			return false;
	}
	for (w = first / 64; w <= (end - 1) / 64; w++) {
		u32 lo = w == first / 64 ? first % 64 : 0;
		u32 hi = w == (end - 1) / 64 ? (end - 1) % 64 : 63;

		bits[w] |= (~0ull >> (63 - hi)) & (~0ull << lo);
	}
	return true;
}

/* Ranges already covered by earlier slices mean a lying sender. */
static bool cover(struct gn_rxmsg *m, u32 units, u32 first, u32 count)
{
	if (!m->cover) {
		m->cover = calloc((units + 63) / 64, sizeof(u64));
		if (!m->cover)
			return false;
	}
	return claim_range(m->cover, first, count);
}

static bool hold(struct gn_rxmsg *rx, const struct gn_wire_data *d,
		 const u8 *body, u16 len)
{
	struct gn_held *h = malloc(sizeof(*h) + len);

	if (!h)
		return false;
	h->first = d->first;
	h->count = d->count;
	h->scale = d->scale;
	h->len = len;
	memcpy(h->body, body, len);
	h->next = rx->held;
	rx->held = h;
	return true;
}

static void count_rx(struct gn_ctx *ctx, struct gn_peer *p,
		     struct gn_tensor *t, u16 len)
{
	ctx->stats.rx_packets++;
	ctx->stats.rx_wire_bytes += len;
	p->stats.rx_packets++;
	p->stats.rx_wire_bytes += len;
	t->stats.rx_packets++;
	t->stats.rx_wire_bytes += len;
}

/*
 * Check a slice's body against its chunk before anything is changed.
 *
 * Dense values must be finite, contributions and results alike: no rank
 * sends a NaN or infinity (a rank checks its gradient before it sends it,
 * an owner its sum), so such a packet is a forgery and is dropped as
 * malformed before it counts as received; the real packet is still taken
 * when it comes, and every rank ends with the same bits. (Failing the step
 * instead would let one forged packet fail it, and not even consistently:
 * the owner of a result may have completed the step already.) 3LC results
 * are finite by construction: the scale is checked in gn_wire_data_get().
 */
static bool body_ok(const struct gn_tensor *t, const struct gn_wire_data *d,
		    const u8 *body, u16 len)
{
	if (t->codec == GN_WIRE_CODEC_3LC)
		return !gn_zre_check(body, len, d->chunk_len, d->first, d->count);
	return all_finite(body, d->count);
}

/*
 * A data packet for message @rx: new, well formed, inside its chunk and
 * not overlapping what @rx already has? Then it is taken and counted;
 * else it is dropped and counted by reason.
 */
static bool take_packet(struct gn_ctx *ctx, struct gn_peer *p,
			struct gn_tensor *t, struct gn_rxmsg *rx,
			const struct gn_wire_hdr *h,
			const struct gn_wire_data *d, const u8 *body)
{
	int r;

	/* Before the message's state is sized by it (d->chunk_len is the
	 * chunk's: chunk_of() said so). */
	if (d->npkts > pkts_max(ctx, t->codec, d->chunk_len)) {
		gn_count_drop(ctx, p, GN_DROP_MALFORMED);
		return false;
	}
	r = gn_rxmsg_mark(ctx, rx, h, d);
	if (r) {
		gn_count_drop(ctx, p, r > 0 ? GN_DROP_DUPLICATE : GN_DROP_MALFORMED);
		return false;
	}
	if (!body_ok(t, d, body, h->body_len) ||
	    !cover(rx, groups_of(t->codec, d->chunk_len), d->first, d->count)) {
		gn_count_drop(ctx, p, GN_DROP_MALFORMED);
		return false;
	}
	gn_rxmsg_take(rx, d->pkt);
	count_rx(ctx, p, t, (u16)(h->body_len + GN_WIRE_DATA_OVERHEAD));
	return true;
}

static void reduce_in(struct gn_ctx *ctx, struct gn_peer *p,
		      struct gn_step *st, const struct gn_wire_hdr *h,
		      const struct gn_wire_data *d, const u8 *body)
{
	struct gn_tensor *t = st->t;
	long c = chunk_of(ctx, t, ctx->rank, d);
	struct gn_rxmsg *rx;
	size_t len;

	if (c < 0 || h->dst != ctx->rank) {
		gn_count_drop(ctx, p, GN_DROP_TENSOR);
		return;
	}
	rx = &st->red[(size_t)p->rank * t->chunks[ctx->rank] + (size_t)c];
	if (!take_packet(ctx, p, t, rx, h, d, body))
		return;
	/* Its turn: straight from the packet into the sum. */
	if (st->started && st->turn[c] < ctx->world &&
	    turn_rank(ctx, st->turn[c]) == p->rank) {
		chunk_at(ctx, t, ctx->rank, (u32)c, &len);
		add_slice(t, st->data + d->chunk_off, len, d->first, d->count,
			  d->scale, body, h->body_len);
	} else if (!hold(rx, d, body, h->body_len)) {
		abort_step(ctx, st, -ENOMEM, "out of memory for early packets");
		return;
	}
	if (st->started && rx->got == rx->npkts)
		want_work(ctx, st, (u32)c);
}

/*
 * Reductions and re-compressions, a few chunks at a time, so that the
 * progress thread gets back to the network (acknowledgements!) often.
 */
void gn_run_work(struct gn_ctx *ctx, unsigned int budget)
{
	struct gn_tensor *t;

	for (t = ctx->tensors; t && budget && ctx->work_n; t = t->next) {
		struct gn_step *st = t->cur;
		u32 c;

		if (!st || !st->started || st->err || !st->todo_n)
			continue;
		for (c = 0; c < t->chunks[ctx->rank] && budget; c++) {
			if (!st->todo[c])
				continue;
			st->todo[c] = 0;
			st->todo_n--;
			ctx->work_n--;
			budget--;
			try_reduce(ctx, st, c);
			if (st != t->cur || st->err)
				break;	/* completed or failed: st may be gone */
		}
	}
}

/*
 * Zero the elements of groups [first, first + count) of a chunk: a slice
 * of the result is decoded into zeros, and the caller's tensor still holds
 * its gradient. One range per partition.
 */
static void clear_slice(float *out, size_t len, u32 first, u32 count)
{
	size_t g = gn_tlc_groups(len), k;

	for (k = 0; k < GN_TLC_GROUP; k++) {
		size_t lo = k * g + first, hi = lo + count;

		if (lo >= len)
			break;
		memset(out + lo, 0, ((hi < len ? hi : len) - lo) * sizeof(float));
	}
}

static void gather_in(struct gn_ctx *ctx, struct gn_peer *p,
		      struct gn_step *st, const struct gn_wire_hdr *h,
		      const struct gn_wire_data *d, const u8 *body)
{
	struct gn_tensor *t = st->t;
	long c = chunk_of(ctx, t, p->rank, d);
	struct gn_rxmsg *rx;
	float *out;

	if (c < 0 || h->dst != GN_RANK_ALL) {
		gn_count_drop(ctx, p, GN_DROP_TENSOR);
		return;
	}
	if (!st->started) {
		/* No result before this rank sent its part: not plausible. */
		gn_count_drop(ctx, p, GN_DROP_REPLAY);
		return;
	}
	/* Not before: a step that is not started has no data (NULL). */
	out = st->data + d->chunk_off;
	rx = &st->gat[t->gat_off[p->rank] + (u32)c];
	if (!take_packet(ctx, p, t, rx, h, d, body))
		return;
	if (t->codec == GN_WIRE_CODEC_3LC) {
		float m;

		memcpy(&m, &d->scale, sizeof(m));
		clear_slice(out, d->chunk_len, d->first, d->count);
		gn_tlc_decode_slice(body, h->body_len, result_scale(ctx, t, m),
				    out, d->chunk_len, d->first, d->count);
	} else {
		/* The packet's bytes may be unaligned: copy, then scale in place. */
		memcpy(out + d->first, body, (size_t)d->count * 4);
		dense_result(ctx, t, out + d->first, out + d->first, d->count);
	}
	if (rx->got == rx->npkts)
		gathered_one(ctx, st);
}

/* Is step @no of tensor @id from a registration that was unregistered? */
static bool older_registration(const struct gn_ctx *ctx,
			       const struct gn_tensor *t, u32 id, u32 no)
{
	const struct gn_retired *rt;

	if (t)
		return no <= t->base;
	for (rt = ctx->retired; rt; rt = rt->next)
		if (rt->id == id)
			return no <= rt->stepno;
	return false;
}

void gn_data_in(struct gn_ctx *ctx, struct gn_peer *p,
		const struct gn_wire_hdr *h, const u8 *pkt)
{
	struct gn_wire_data d;
	struct gn_tensor *t;
	struct gn_step *st;
	bool stale;

	if (gn_wire_data_get(pkt, h, &d)) {
		gn_count_drop(ctx, p, GN_DROP_MALFORMED);
		return;
	}
	t = gn_tensor_find(ctx, h->tensor);
	if (older_registration(ctx, t, h->tensor, h->step)) {
		/* Over on this rank; the sender may wait for our ack. */
		gn_ack_all(ctx, p->rank, h, &d);
		gn_count_drop(ctx, p, GN_DROP_REPLAY);
		return;
	}
	if (!t || !t->desc[p->rank].have || t->proto_err ||
	    h->codec != t->codec || d.s != t->s_bits ||
	    d.chunk_off + d.chunk_len > t->n) {
		gn_count_drop(ctx, p, GN_DROP_TENSOR);
		return;
	}
	st = step_for(ctx, t, h->step, &stale);
	if (!st || st->err || st->done) {
		if (stale || (st && (st->err || st->done)))
			gn_ack_all(ctx, p->rank, h, &d);
		gn_count_drop(ctx, p, GN_DROP_REPLAY);
		return;
	}
	if (h->phase == GN_PHASE_REDUCE)
		reduce_in(ctx, p, st, h, &d, pkt + GN_WIRE_DATA_HDR);
	else
		gather_in(ctx, p, st, h, &d, pkt + GN_WIRE_DATA_HDR);
}

/* ---- control messages ---------------------------------------------------------------- */

static void desc_check(struct gn_ctx *ctx, struct gn_tensor *t, int peer)
{
	const struct gn_peer_desc *d = &t->desc[peer];
	const char *who = ctx->peers[peer].name;
	char msg[GN_ERRMSG_LEN];
	float s;

	if (!d->have || t->proto_err)
		return;
	memcpy(&s, &d->s_bits, sizeof(s));
	if (d->elems != t->n)
		snprintf(msg, sizeof(msg),
			 "tensor %u has %llu elements on %s, %zu here", t->id,
			 (unsigned long long)d->elems, who, t->n);
	else if (d->codec != t->codec || d->s_bits != t->s_bits)
		snprintf(msg, sizeof(msg),
			 "tensor %u uses codec %s s=%g on %s, codec %s s=%g here",
			 t->id, codec_name(d->codec), (double)s, who,
			 codec_name(t->codec), (double)t->s);
	else if (d->flags != (u8)t->flags)
		snprintf(msg, sizeof(msg), "tensor %u %s on %s, %s here", t->id,
			 d->flags & GN_TENSOR_AVERAGE ? "averages" : "sums", who,
			 t->flags & GN_TENSOR_AVERAGE ? "averages" : "sums");
	else
		return;
	t->proto_err = -EPROTO;
	snprintf(t->proto_msg, sizeof(t->proto_msg), "%s", msg);
	if (t->cur && t->cur->started)
		step_fail(ctx, t->cur, -EPROTO, msg);
}

/*
 * Descriptors of tensors that this rank has not registered yet are kept,
 * at most GN_PENDING_DESCS per peer, so a peer cannot make this rank's
 * memory grow without bound. One that does not fit is neither taken nor
 * acknowledged (ctrl_in() asks here first): its sender repeats it until
 * this rank has registered the tensor or taken others off the list.
 */
#define GN_PENDING_DESCS 4096

bool gn_ctrl_fits(struct gn_ctx *ctx, const struct gn_peer *p,
		  const struct gn_wire_hdr *h, const struct gn_wire_ctrl *c)
{
	struct gn_tensor *t = gn_tensor_find(ctx, h->tensor);

	if (p->pending_descs < GN_PENDING_DESCS)
		return true;
	/* Full: only what is taken at once (see abort_in()). */
	if (c->kind == GN_CTRL_TENSOR)
		return t && h->step <= t->base;
	return t && h->step <= t->stepno + 1;
}

/*
 * A control message from @p for a registration this rank has not made
 * yet, kept until it does: NULL when @p has GN_PENDING_DESCS waiting
 * already (it repeats the message) or memory is short.
 */
static struct gn_pending_desc *pending_new(struct gn_ctx *ctx,
					   struct gn_peer *p,
					   const struct gn_wire_hdr *h)
{
	struct gn_pending_desc *pd;

	if (p->pending_descs >= GN_PENDING_DESCS)
		return NULL;
	pd = calloc(1, sizeof(*pd));
	if (!pd)
		return NULL;
	pd->peer = (u16)p->rank;
	pd->id = h->tensor;
	pd->base = h->step;
	pd->next = ctx->pending;
	ctx->pending = pd;
	p->pending_descs++;
	return pd;
}

static void tensor_desc_in(struct gn_ctx *ctx, struct gn_peer *p,
			   const struct gn_wire_hdr *h,
			   const struct gn_wire_ctrl *c)
{
	struct gn_peer_desc d = { true, c->value, h->codec, c->flags, c->extra };
	struct gn_tensor *t = gn_tensor_find(ctx, h->tensor);
	struct gn_pending_desc *pd;

	/* The header's step is the registration's base: one before ours is
	 * over, one after ours waits until this rank registers again. */
	if (t && h->step < t->base)
		return;
	if (t && h->step == t->base) {
		t->desc[p->rank] = d;
		desc_check(ctx, t, p->rank);
		return;
	}
	/* A second descriptor of one tensor from one peer: the last counts. */
	for (pd = ctx->pending; pd; pd = pd->next)
		if (pd->peer == p->rank && pd->id == h->tensor &&
		    !pd->abort_err) {
			pd->desc = d;
			pd->base = h->step;
			return;
		}
	pd = pending_new(ctx, p, h);
	if (pd)
		pd->desc = d;
}

static void abort_apply(struct gn_ctx *ctx, struct gn_step *st,
			const struct gn_peer *p, u64 value, u32 extra)
{
	int err = value > 0 && value < 4096 ? -(int)value : -EPROTO;
	const char *culprit = extra < (u32)ctx->world ?
				      ctx->peers[extra].name : "a peer";
	char msg[GN_ERRMSG_LEN];
	u32 id = st->t->id;

	if (err == -EDOM)
		snprintf(msg, sizeof(msg),
			 "tensor %u step %u: the gradient of %s holds NaN or infinity (or a sum overflowed there); step skipped on every rank",
			 id, st->no, culprit);
	else if (err == -ETIMEDOUT)
		snprintf(msg, sizeof(msg),
			 "tensor %u step %u: %.100s gave up waiting for %.100s (step timeout); step failed on every rank",
			 id, st->no, p->name, culprit);
	else
		snprintf(msg, sizeof(msg), "tensor %u step %u failed at %s: %s (%s)",
			 id, st->no, p->name, gn_strerror(err), culprit);
	step_fail(ctx, st, err, msg);
}

/* Aborts that came before step @st existed here: apply them now. */
static void aborts_due(struct gn_ctx *ctx, struct gn_step *st)
{
	struct gn_pending_desc **pp, *d;

	for (pp = &ctx->pending; *pp;) {
		d = *pp;
		if (!d->abort_err || d->id != st->t->id || d->base != st->no) {
			pp = &d->next;
			continue;
		}
		abort_apply(ctx, st, &ctx->peers[d->peer], d->abort_err,
			    d->abort_culprit);
		ctx->peers[d->peer].pending_descs--;
		*pp = d->next;
		free(d);
	}
}

static void abort_in(struct gn_ctx *ctx, struct gn_peer *p,
		     const struct gn_wire_hdr *h, const struct gn_wire_ctrl *c)
{
	struct gn_tensor *t = gn_tensor_find(ctx, h->tensor);
	struct gn_pending_desc *pd;
	struct gn_step *st;
	bool stale = false;

	st = t ? step_for(ctx, t, h->step, &stale) : NULL;
	if (st) {
		abort_apply(ctx, st, p, c->value, c->extra);
		return;
	}
	if (stale || older_registration(ctx, t, h->tensor, h->step))
		return;
	/*
	 * A step this rank has not reached: the first of a registration it
	 * has still to make, or one after a step that failed early here.
	 */
	pd = pending_new(ctx, p, h);
	if (!pd)
		return;
	pd->abort_err = c->value ? c->value : EPROTO;
	pd->abort_culprit = c->extra;
}

void gn_ctrl_in(struct gn_ctx *ctx, struct gn_peer *p,
		const struct gn_wire_hdr *h, const struct gn_wire_ctrl *c)
{
	if (c->kind == GN_CTRL_TENSOR)
		tensor_desc_in(ctx, p, h, c);
	else
		abort_in(ctx, p, h, c);
}
