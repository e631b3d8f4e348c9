// SPDX-License-Identifier: MIT
/*
 * tensor.c - tensors: their layout in shards and chunks, the table that
 * finds them by id, registration (where everything a step needs is
 * allocated) and unregistration.
 */
#include "core.h"
#include "codec/entropy/entropy.h"

/* ---- layout ------------------------------------------------------------ */

/* n < 2^40 and j < 2^16: the product fits in 64 bits. */
static size_t shard_lo(size_t n, int world, int j)
{
	return (size_t)((u64)n * (u32)j / (u32)world);
}

/* Chunk @c of shard @j: first element and length. */
size_t gn_chunk_at(const struct gn_ctx *ctx, const struct gn_tensor *t, int j,
		   u32 c, size_t *len)
{
	size_t off = t->lo[j] + (size_t)c * ctx->chunk, end = t->lo[j + 1];

	if (t->ck_off) {
		*len = t->ck_len[t->gat_off[j] + c];
		return t->ck_off[t->gat_off[j] + c];
	}
	*len = end - off < ctx->chunk ? end - off : ctx->chunk;
	return off;
}

/* Which chunk of shard @j a packet names, or -1 if none. */
long gn_chunk_of(const struct gn_ctx *ctx, const struct gn_tensor *t, int j,
		 const struct gn_wire_data *d)
{
	size_t len;
	u64 rel;

	if (d->chunk_off < t->lo[j] || d->chunk_off >= t->lo[j + 1])
		return -1;
	if (t->ck_off) {
		long c = gn_bucket_chunk_of(t, j, d->chunk_off);

		if (c < 0 || d->chunk_len != t->ck_len[t->gat_off[j] + (u32)c])
			return -1;
		return c;
	}
	rel = d->chunk_off - t->lo[j];
	if (rel % ctx->chunk)
		return -1;
	gn_chunk_at(ctx, t, j, (u32)(rel / ctx->chunk), &len);
	if (d->chunk_len != len)
		return -1;
	return (long)(rel / ctx->chunk);
}

/*
 * The most packets the message of a chunk of @len elements can have, as
 * the packer cuts it with this job's MTU (which every rank shares), by
 * the tensor's codec. Receivers refuse anything more.
 */
u32 gn_pkts_max(const struct gn_ctx *ctx, const struct gn_tensor *t,
		size_t len)
{
	u32 cap = ctx->max_pkt - GN_WIRE_DATA_OVERHEAD;
	u32 n = t->cd->pkts_max(&t->params, (u32)len, cap), m;

	/* A model tensor's changes have their own codec: the larger. */
	if (!t->model)
		return n;
	m = t->model->cd->pkts_max(&t->model->params, (u32)len, cap);
	return m > n ? m : n;
}

/* ---- the table ------------------------------------------------------------- */

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
	tab = gn_alloc_array(ctx->env, size, sizeof(*tab));
	if (!tab)
		return -ENOMEM;
	for (i = 0; ctx->tensor_tab && i <= ctx->tensor_mask; i++)
		if (ctx->tensor_tab[i])
			tensor_tab_put(tab, size - 1, ctx->tensor_tab[i]);
	gn_free(ctx->env, ctx->tensor_tab);
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

/* ---- memory ------------------------------------------------------------------ */

/*
 * Lay out a step's arrays in st->mem (or, with st->mem NULL, add up how
 * much they take): receive state for every contribution to the own shard
 * and every chunk of the result, with its bitmaps and held packets.
 */
size_t gn_step_carve(const struct gn_ctx *ctx, const struct gn_tensor *t,
			 struct gn_step *st)
{
	u32 own = t->chunks[ctx->rank], nrx = (u32)ctx->world * own +
					       t->chunks_total, i;
	size_t seen = ((size_t)t->pkts_cap + 7) / 8;
	u32 units = t->cd->units(ctx->chunk);
	size_t cover;

	size_t at = 0;
	u8 *base = st->mem;

	if (t->model && t->model->cd->units(ctx->chunk) > units)
		units = t->model->cd->units(ctx->chunk);
	cover = ((size_t)units + 63) / 64;
#define CARVE(ptr, count, type)						\
	do {								\
		at = (at + 7) & ~(size_t)7;				\
		if (base)						\
			(ptr) = (type *)(base + at);			\
		at += (size_t)(count) * sizeof(type);			\
	} while (0)

	CARVE(st->red, (size_t)ctx->world * own + 1, struct gn_rx);
	CARVE(st->gat, t->chunks_total + 1, struct gn_rx);
	CARVE(st->turn, own + 1, u16);
	CARVE(st->todo, own + 1, u8);
	if (gn_index_round(t)) {
		CARVE(st->ix, t->ix_off[t->chunks_total] + 1, u32);
		CARVE(st->ixs, t->chunks_total + 1, u8);
		CARVE(st->encq, t->chunks_total + 1, u32);
		CARVE(st->irx, t->chunks_total + 1, struct gn_rx);
		for (i = 0; i < t->chunks_total; i++) {
			struct gn_rx scratch, *rx = base ? &st->irx[i] : &scratch;
			u32 n = t->ix_off[i + 1] - t->ix_off[i];

			rx->m.cap = t->ipkts_cap;
			CARVE(rx->m.seen, ((size_t)t->ipkts_cap + 7) / 8, u8);
			CARVE(rx->cover, ((size_t)n + 63) / 64 + 1, u64);
		}
	}
	for (i = 0; i < nrx; i++) {
		/* Sizing only: the same carves, into a struct nobody keeps. */
		struct gn_rx scratch, *rx = &scratch;

		if (base)
			rx = i < (u32)ctx->world * own ? &st->red[i] :
				&st->gat[i - (u32)ctx->world * own];
		rx->m.cap = t->pkts_cap;
		CARVE(rx->m.seen, seen, u8);
		CARVE(rx->cover, cover, u64);
		CARVE(rx->held, t->pkts_cap, struct gn_buf *);
	}
#undef CARVE
	return at;
}

static int step_alloc(struct gn_ctx *ctx, struct gn_tensor *t,
		      struct gn_step *st)
{
	st->t = t;
	st->mem = NULL;
	st->mem_len = gn_step_carve(ctx, t, st);
	st->mem = gn_alloc(ctx->env, st->mem_len);
	if (!st->mem)
		return -ENOMEM;
	gn_step_carve(ctx, t, st);
	return 0;
}

/*
 * The highest level the entropy stage codes @t's messages at, 0 without
 * it: its gradients' codec's, and a model tensor's changes' codec's.
 */
static u32 stage_level(const struct gn_tensor *t)
{
	u32 up = gn_entropy_on(&t->params) ?
			 t->params.stage[GN_STAGE_LEVEL] : 0;
	u32 down = t->model && gn_entropy_on(&t->model->params) ?
			   t->model->params.stage[GN_STAGE_LEVEL] : 0;

	return up > down ? up : down;
}

static int tensor_alloc(struct gn_ctx *ctx, struct gn_tensor *t)
{
	size_t own = t->lo[ctx->rank + 1] - t->lo[ctx->rank];
	u32 k, i, rows, level;
	int j;

	/* A bucket's chunks and their offsets are laid out already. */
	for (j = 0; j < ctx->world && !t->ck_off; j++) {
		size_t len = t->lo[j + 1] - t->lo[j];

		t->chunks[j] = (u32)((len + ctx->chunk - 1) / ctx->chunk);
		t->gat_off[j] = t->chunks_total;
		t->chunks_total += t->chunks[j];
	}
	t->pkts_cap = gn_pkts_max(ctx, t, ctx->chunk);
	if (gn_index_round(t) && gn_index_alloc(ctx, t))
		return -ENOMEM;
	for (k = 0; k < 2; k++) {
		if (t->cd->flags & GN_CODEC_EF_REDUCE) {
			t->e_rs[k] = gn_alloc_array(ctx->env, t->n, sizeof(float));
			if (!t->e_rs[k])
				return -ENOMEM;
		}
		if (t->cd->flags & GN_CODEC_EF_RESULT && !t->model) {
			t->e_ag[k] = gn_alloc_array(ctx->env, own + 1, sizeof(float));
			if (!t->e_ag[k])
				return -ENOMEM;
		}
	}
	/* Scratch for one round of compression (gn_encode_all()). */
	t->stride = t->cd->scratch(&t->params, ctx->chunk);
	t->scratch = gn_alloc_array(ctx->env, gn_encode_scratch(ctx, t),
				    t->stride + 1);
	t->aux = gn_alloc_array(ctx->env, gn_encode_scratch(ctx, t),
				sizeof(u32));
	if (!t->scratch || !t->aux ||
	    gn_spread_reserve(ctx, t->model ? gn_model_res_slot(ctx, t) :
					      t->stride) ||
	    (t->model && gn_model_alloc(ctx, t)))
		return -ENOMEM;
	level = stage_level(t);
	if (level) {
		t->zhint = gn_alloc_array(ctx->env, t->chunks_total + 1,
					  sizeof(u32));
		if (!t->zhint || gn_stage_reserve(ctx, level))
			return -ENOMEM;
	}
	for (k = 0; k < 2; k++) {
		if (step_alloc(ctx, t, &t->steps[k]))
			return -ENOMEM;
		t->msg[k] = gn_alloc_array(ctx->env, t->chunks_total + 1,
					   sizeof(*t->msg[k]));
		if (!t->msg[k])
			return -ENOMEM;
		for (i = 0; i < t->chunks_total; i++) {
			rows = i >= t->gat_off[ctx->rank] &&
			       i < t->gat_off[ctx->rank] + t->chunks[ctx->rank] ?
				       (u32)ctx->world : 1;
			t->msg[k][i] = gn_dl_msg_new(&ctx->dl, rows, t->pkts_cap);
			if (!t->msg[k][i])
				return -ENOMEM;
		}
	}
	t->reserved_msgs = 2 * t->chunks_total;
	t->reserved_acks = 2 * ((u32)ctx->world * t->chunks[ctx->rank] +
				t->chunks_total);
	/* The index round: a leader's messages, every chunk's set received. */
	if (gn_index_round(t)) {
		t->reserved_msgs += 2 * ((t->chunks_total + (u32)ctx->world - 1) /
					 (u32)ctx->world);
		t->reserved_acks += 2 * t->chunks_total;
	}
	return gn_dl_reserve(&ctx->dl, t->reserved_msgs, t->reserved_acks);
}

static void tensor_free(struct gn_ctx *ctx, struct gn_tensor *t)
{
	u32 i;
	int k;

	if (!t)
		return;
	for (k = 0; k < 2; k++) {
		gn_free(ctx->env, t->e_rs[k]);
		gn_free(ctx->env, t->e_ag[k]);
		gn_free(ctx->env, t->steps[k].mem);
		for (i = 0; t->msg[k] && i < t->chunks_total; i++)
			gn_dl_msg_free(&ctx->dl, t->msg[k][i]);
		gn_free(ctx->env, t->msg[k]);
	}
	gn_index_free(ctx, t);
	gn_model_free(ctx, t);
	gn_free(ctx->env, t->scratch);
	gn_free(ctx->env, t->zhint);
	gn_free(ctx->env, t->aux);
	gn_free(ctx->env, t->lo);
	gn_free(ctx->env, t->chunks);
	gn_free(ctx->env, t->gat_off);
	gn_free(ctx->env, t->ck_off);
	gn_free(ctx->env, t->ck_len);
	gn_free(ctx->env, t->desc);
	gn_free(ctx->env, t->ready);
	gn_free(ctx->env, t->desc_seq);
	gn_free(ctx->env, t);
}

void gn_tensor_destroy(struct gn_ctx *ctx, struct gn_tensor *t)
{
	gn_step_free(ctx, t->cur);
	gn_step_free(ctx, t->early);
	gn_dl_unreserve(&ctx->dl, t->reserved_msgs, t->reserved_acks);
	tensor_free(ctx, t);
}

static int tensor_new(struct gn_ctx *ctx, const struct gn_core_tensor *o,
		      const struct gn_codec_spec *spec,
		      const struct gn_layout *lay, const struct gn_model *model,
		      struct gn_tensor **out)
{
	struct gn_tensor *t = gn_alloc(ctx->env, sizeof(*t));
	int j;

	if (!t)
		return -ENOMEM;
	if (model) {
		t->model = gn_alloc(ctx->env, sizeof(*t->model));
		if (!t->model)
			goto out_free;
		*t->model = *model;
	}
	t->id = o->id;
	t->n = o->elems;
	t->cd = gn_codec_find(spec->codec);
	t->params = spec->p;
	t->flags = o->flags;
	t->lo = gn_alloc_array(ctx->env, (size_t)ctx->world + 1, sizeof(size_t));
	t->chunks = gn_alloc_array(ctx->env, (size_t)ctx->world, sizeof(u32));
	t->gat_off = gn_alloc_array(ctx->env, (size_t)ctx->world, sizeof(u32));
	t->desc = gn_alloc_array(ctx->env, (size_t)ctx->world, sizeof(*t->desc));
	t->ready = gn_alloc(ctx->env, (size_t)ctx->world);
	t->desc_seq = gn_alloc_array(ctx->env, (size_t)ctx->world, sizeof(u32));
	if (!t->lo || !t->chunks || !t->gat_off || !t->desc || !t->ready ||
	    !t->desc_seq)
		goto out_free;
	for (j = 0; j <= ctx->world; j++)
		t->lo[j] = shard_lo(t->n, ctx->world, j);
	if (lay && gn_bucket_layout(ctx, t, lay))
		goto out_free;
	if (tensor_alloc(ctx, t))
		goto out_free;
	*out = t;
	return 0;

out_free:
	tensor_free(ctx, t);
	return -ENOMEM;
}

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
		gn_free(ctx->env, rt);
		return base;
	}
	return 0;
}

/* Is step @no of tensor @id from a registration that was unregistered? */
bool gn_older_registration(const struct gn_ctx *ctx, const struct gn_tensor *t,
			   u32 id, u32 no)
{
	const struct gn_retired *rt;

	if (t)
		return no <= t->base;
	for (rt = ctx->retired; rt; rt = rt->next)
		if (rt->id == id)
			return no <= rt->stepno;
	return false;
}

int gn_core_tensor_register(struct gn_ctx *ctx, const struct gn_core_tensor *o)
{
	return gn_tensor_add(ctx, o, NULL, NULL);
}

/*
 * The tensor's codec and every parameter, checked against this job's
 * chunk and packet sizes: 0, or -EINVAL with the reason in api_errmsg.
 */
static int tensor_codec(struct gn_ctx *ctx, u32 id,
			const struct gn_codec_spec *given,
			struct gn_codec_spec *spec)
{
	char why[GN_ERRMSG_LEN - 24];
	int r;

	r = gn_codec_resolve(&ctx->codec, given, spec, why, sizeof(why));
	if (!r)
		r = gn_codec_params_check(gn_codec_find(spec->codec), &spec->p,
					  ctx->chunk,
					  ctx->max_pkt - GN_WIRE_DATA_OVERHEAD,
					  why, sizeof(why));
	if (r)
		snprintf(ctx->api_errmsg, sizeof(ctx->api_errmsg),
			 "tensor %u: %s", id, why);
	return r;
}

/*
 * Register a tensor, with @lay a bucket of members, or with @mo a model
 * tensor.
 */
int gn_tensor_add(struct gn_ctx *ctx, const struct gn_core_tensor *o,
		  const struct gn_layout *lay, const struct gn_core_model *mo)
{
	struct gn_pending_desc **pp;
	struct gn_codec_spec spec, up;
	struct gn_model model;
	struct gn_tensor *t;
	int r, k;

	if (gn_tensor_find(ctx, o->id)) {
		snprintf(ctx->api_errmsg, sizeof(ctx->api_errmsg),
			 "tensor %u is already registered", o->id);
		return -EEXIST;
	}
	up = o->codec;
	r = mo ? gn_model_setup(ctx, o, mo, &up, &model) : 0;
	if (!r)
		r = tensor_codec(ctx, o->id, &up, &spec);
	if (r)
		return r;
	/* A model step sends every chunk up and down: no index round. */
	for (k = 0; mo && k < 2; k++) {
		const struct gn_codec_ops *cd = k ? model.cd :
					       gn_codec_find(spec.codec);

		if (cd->flags & GN_CODEC_INDEX_ROUND) {
			snprintf(ctx->api_errmsg, sizeof(ctx->api_errmsg),
				 "model tensor %u: codec %s has an index round, which a model step has no place for",
				 o->id, cd->name);
			return -EINVAL;
		}
	}
	r = tensor_tab_reserve(ctx);
	if (!r)
		r = tensor_new(ctx, o, &spec, lay, mo ? &model : NULL, &t);
	if (r) {
		snprintf(ctx->api_errmsg, sizeof(ctx->api_errmsg),
			 "tensor %u: out of memory for %zu values", o->id,
			 (size_t)o->elems);
		return r;
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
			gn_desc_check(ctx, t, d->peer);
		}
		ctx->pending_descs[d->peer]--;
		*pp = d->next;
		gn_free(ctx->env, d);
	}
	gn_send_desc(ctx, t);
	return 0;
}

static bool tensor_owes(const struct gn_tensor *t)
{
	u32 i;
	int k;

	for (k = 0; k < 2; k++)
		for (i = 0; i < t->chunks_total; i++)
			if (t->msg[k][i]->busy)
				return true;
	return false;
}

int gn_core_tensor_retire(struct gn_ctx *ctx, u32 id)
{
	struct gn_tensor *t = gn_tensor_find(ctx, id);

	if (!t) {
		snprintf(ctx->api_errmsg, sizeof(ctx->api_errmsg),
			 "tensor %u is not registered", id);
		return -ENOENT;
	}
	if (t->busy || (t->cur && t->cur->encoding)) {
		snprintf(ctx->api_errmsg, sizeof(ctx->api_errmsg),
			 "tensor %u: allreduce in flight; call gn_allreduce_wait() first",
			 id);
		return -EBUSY;
	}
	/* Busy while the caller waits for acknowledgements: no new start. */
	t->busy = true;
	gn_step_free(ctx, t->cur);
	gn_step_free(ctx, t->early);
	t->cur = t->early = NULL;
	return 0;
}

/*
 * This rank's results may still be on their way to slower peers: the
 * caller waits for their acknowledgements. A dead peer's are dropped
 * after the timeout, so this ends.
 */
bool gn_core_tensor_owes(struct gn_ctx *ctx, u32 id)
{
	struct gn_tensor *t = gn_tensor_find(ctx, id);

	return t && tensor_owes(t);
}

int gn_core_tensor_remove(struct gn_ctx *ctx, u32 id, bool give_up)
{
	struct gn_tensor **pp, *t = gn_tensor_find(ctx, id);
	struct gn_retired *rt;

	if (!t)
		return -ENOENT;
	if (give_up) {
		t->busy = false;
		snprintf(ctx->api_errmsg, sizeof(ctx->api_errmsg),
			 "tensor %u: peers did not acknowledge its last results; still registered",
			 id);
		return -ETIMEDOUT;
	}
	rt = gn_alloc(ctx->env, sizeof(*rt));
	if (!rt) {
		t->busy = false;
		snprintf(ctx->api_errmsg, sizeof(ctx->api_errmsg),
			 "tensor %u: out of memory", id);
		return -ENOMEM;
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
	return 0;
}

const struct gn_stats *gn_core_tensor_stats(struct gn_ctx *ctx, u32 id)
{
	struct gn_tensor *t = gn_tensor_find(ctx, id);

	return t ? &t->stats : NULL;
}
