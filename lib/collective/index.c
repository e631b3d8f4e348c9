// SPDX-License-Identifier: MIT
/*
 * index.c - the index round of a codec with GN_CODEC_INDEX_ROUND (CLT-k):
 * chunk g of a tensor has a leader at each step, rank (s + g) mod W for
 * the registration's s-th step (s from 0), which selects the chunk's
 * index set and sends it to every rank (phase GN_PHASE_INDEX, as any
 * message: authenticated, acknowledged, retransmitted from the same
 * buffers); every rank's contribution to the chunk is its values at that
 * set, and the owner's result too.
 *
 * The round is pipelined per chunk. At start a rank first encodes the
 * chunks it leads, so their sets go out before anything else; then those
 * whose set it already has; the progress side encodes every other chunk
 * the moment its set is complete here. So a large tensor waits for a
 * set about one one-way trip per rank, not per chunk, and the leaders'
 * selections run in parallel, a W-th of the chunks each. The start never
 * waits for a peer's set: a trainer that starts tensors A then B while a
 * peer starts B then A would deadlock if it did.
 *
 * A set is taken only whole and in order: each slice is checked as it
 * comes (positions below the chunk's end, entries inside the set), and
 * the complete set once more (every entry covered, increasing across
 * slices); a lost slice is sent again by delivery, never guessed. The
 * owner holds contributions that come before the set (they are checked
 * against the set's size, which the parameters fix) and adds them once
 * its own share, at the set, is in place.
 */
#include "core.h"

/* The leader of chunk @g in step @st. */
static int leader_of(const struct gn_ctx *ctx, const struct gn_step *st,
		     u32 g)
{
	return (int)(((u64)gn_index_step(st) + g) % (u32)ctx->world);
}

/* The owner of chunk @g, and its index in that shard. */
static int owner_of(const struct gn_ctx *ctx, const struct gn_tensor *t,
		    u32 g, u32 *c)
{
	int j = ctx->world - 1;

	while (t->gat_off[j] > g || !t->chunks[j])
		j--;
	*c = g - t->gat_off[j];
	return j;
}

/* Entries of chunk @g's set in @st; its length when it has no round. */
static u32 set_len(const struct gn_ctx *ctx, const struct gn_step *st, u32 g,
		   size_t *len_out)
{
	const struct gn_tensor *t = st->t;
	size_t len;
	u32 c = 0;
	int j = owner_of(ctx, t, g, &c);

	gn_chunk_at(ctx, t, j, c, &len);
	if (len_out)
		*len_out = len;
	return t->cd->index_len(&t->params, gn_index_step(st), (u32)len);
}

/*
 * At registration: where each chunk's set goes in a step (the most
 * entries it can have, after any warm-up), and a leader's messages, one
 * per chunk it can lead at a step (every W-th).
 */
int gn_index_alloc(struct gn_ctx *ctx, struct gn_tensor *t)
{
	u32 cap = ctx->max_pkt - GN_WIRE_DATA_OVERHEAD, g, c, k, most = 0;
	u32 slots = (t->chunks_total + (u32)ctx->world - 1) / (u32)ctx->world;
	size_t len;

	t->ix_off = gn_alloc_array(ctx->env, (size_t)t->chunks_total + 1,
				   sizeof(u32));
	if (!t->ix_off)
		return -ENOMEM;
	for (g = 0; g < t->chunks_total; g++) {
		int j = owner_of(ctx, t, g, &c);
		u32 n;

		gn_chunk_at(ctx, t, j, c, &len);
		n = t->cd->index_len(&t->params, ~0u, (u32)len);
		t->ix_off[g + 1] = t->ix_off[g] + n;
		most = n > most ? n : most;
	}
	t->ipkts_cap = gn_index_pkts_max(most, cap);
	for (k = 0; k < 2; k++) {
		t->imsg[k] = gn_alloc_array(ctx->env, (size_t)slots + 1,
					    sizeof(*t->imsg[k]));
		if (!t->imsg[k])
			return -ENOMEM;
		for (g = 0; g < slots; g++) {
			t->imsg[k][g] = gn_dl_msg_new(&ctx->dl, (u32)ctx->world,
						      t->ipkts_cap ? t->ipkts_cap : 1);
			if (!t->imsg[k][g])
				return -ENOMEM;
		}
	}
	return 0;
}

void gn_index_free(struct gn_ctx *ctx, struct gn_tensor *t)
{
	u32 slots = (t->chunks_total + (u32)ctx->world - 1) / (u32)ctx->world;
	u32 g;
	int k;

	for (k = 0; k < 2; k++) {
		for (g = 0; t->imsg[k] && g < slots; g++)
			gn_dl_msg_free(&ctx->dl, t->imsg[k][g]);
		gn_free(ctx->env, t->imsg[k]);
	}
	gn_free(ctx->env, t->ix_off);
}

/* A new step: the chunks that have no round (warm-up, k = n) are known. */
void gn_index_step_init(struct gn_ctx *ctx, struct gn_step *st)
{
	size_t len;
	u32 g;

	for (g = 0; g < st->t->chunks_total; g++)
		if (set_len(ctx, st, g, &len) == len)
			st->ixs[g] = GN_IX_KNOWN;
}

/* Chunk g of the tensor that a packet names, whoever owns it, or -1. */
long gn_index_chunk(const struct gn_ctx *ctx, const struct gn_tensor *t,
		    const struct gn_wire_data *d)
{
	int lo = 0, hi = ctx->world - 1;
	long c;

	/* The last shard starting at or before the chunk: the non-empty one. */
	while (lo < hi) {
		int mid = (lo + hi + 1) / 2;

		if (t->lo[mid] <= d->chunk_off)
			lo = mid;
		else
			hi = mid - 1;
	}
	c = gn_chunk_of(ctx, t, lo, d);
	return c < 0 ? -1 : (long)t->gat_off[lo] + c;
}

/*
 * A codec call about the chunk at @off, @len values: its set, when it
 * has a round (false if the set is not known here).
 */
bool gn_index_set(const struct gn_ctx *ctx, const struct gn_step *st, u64 off,
		  u32 len, struct gn_codec_call *c)
{
	const struct gn_tensor *t = st->t;
	struct gn_wire_data d = { .chunk_off = off, .chunk_len = len };
	long g;
	u32 n;

	if (!gn_index_round(t))
		return true;
	g = gn_index_chunk(ctx, t, &d);
	if (g < 0)
		return false;
	n = set_len(ctx, st, (u32)g, NULL);
	c->idx = n < len ? st->ix + t->ix_off[g] : NULL;
	c->nidx = n;
	return st->ixs[g] & GN_IX_KNOWN;
}

/* A values packet's word is its chunk's set size at this step. */
bool gn_index_aux_ok(const struct gn_ctx *ctx, const struct gn_step *st,
		     const struct gn_wire_data *d)
{
	long g;

	if (!gn_index_round(st->t))
		return true;
	g = gn_index_chunk(ctx, st->t, d);
	return g >= 0 && d->aux == set_len(ctx, st, (u32)g, NULL);
}

/* Is the own share of own chunk @c in place, to be added first? */
bool gn_index_own_ready(const struct gn_ctx *ctx, const struct gn_step *st,
			u32 c)
{
	if (!gn_index_round(st->t))
		return c < st->own_done;
	return st->ixs[st->t->gat_off[ctx->rank] + c] & GN_IX_SENT;
}

/* The leader's message slot of chunk @g in @st (this rank leads it). */
static struct gn_txmsg **index_slot(const struct gn_ctx *ctx,
				    struct gn_step *st, u32 g)
{
	return &st->t->imsg[st->no & 1][g / (u32)ctx->world];
}

/* ---- encoding a chunk's contribution ------------------------------------ */

/* Chunks encoded together, at most (small: it lives on the stack). */
#define INDEX_BATCH GN_WORK_MAX

/* Chunks encoded together: one scratch slot each, @stride apart. */
struct enc_batch {
	struct gn_ctx *ctx;
	struct gn_step *st;
	u8 *scratch;
	size_t stride;
	u32 n;
	u32 g[INDEX_BATCH];
	struct gn_txmsg *vm[INDEX_BATCH];	/* values; NULL: own shard */
	struct gn_txmsg *im[INDEX_BATCH];	/* its set; NULL: not led */
	int r[INDEX_BATCH];
};

/*
 * Chunk b->g[@i]: its values at its set (a leader's selection, or the
 * set received), packed to its owner or put in place as the own share;
 * a leader's set copied to the step's and packed too. Any thread: it
 * touches only the chunk, its set and its messages.
 */
static void encode_part(void *arg, u32 i)
{
	struct enc_batch *b = arg;
	struct gn_ctx *ctx = b->ctx;
	struct gn_step *st = b->st;
	struct gn_tensor *t = st->t;
	u32 g = b->g[i], c, aux = 0, n;
	int j = owner_of(ctx, t, g, &c);
	size_t len, off = gn_chunk_at(ctx, t, j, c, &len);
	struct msg_shape ms = { GN_PHASE_REDUCE, (u16)j, off, (u32)len, 0 };
	bool given = st->ixs[g] & GN_IX_KNOWN && !b->im[i];
	int r;

	n = set_len(ctx, st, g, NULL);
	r = gn_fp_encode_at(ctx, st, off, len,
			    given && n < len ? st->ix + t->ix_off[g] : NULL,
			    n, b->scratch + i * b->stride, &aux);
	if (!r && aux != n)
		r = -EINVAL;
	if (!r && b->im[i]) {
		struct msg_shape is = { GN_PHASE_INDEX, GN_RANK_ALL, off,
					(u32)len, n };

		memcpy(st->ix + t->ix_off[g],
		       t->cd->index_set(b->scratch + i * b->stride),
		       (size_t)n * sizeof(u32));
		r = gn_pack_index(ctx, b->im[i], t, st->no, &is,
				  st->ix + t->ix_off[g]);
		if (!r) {
			gn_msg_identity(b->im[i], st, &is);
			/* Positions only: no values of the tensor's. */
			b->im[i]->raw_bytes = 0;
		}
	}
	ms.aux = aux;
	if (!r && !b->vm[i])
		gn_fp_own(ctx, st, b->scratch + i * b->stride, aux, off, len);
	else if (!r)
		r = gn_pack(ctx, b->vm[i], t, st->no, &ms,
			    b->scratch + i * b->stride, st->data + off, NULL,
			    NULL);
	if (!r && b->vm[i])
		gn_msg_identity(b->vm[i], st, &ms);
	b->r[i] = r;
}

/*
 * Claim chunk @g for a batch (lock held): its messages taken. Return:
 * false when out of memory for a message (the step is failed).
 */
static bool batch_add(struct enc_batch *b, u32 g, bool lead)
{
	struct gn_ctx *ctx = b->ctx;
	struct gn_step *st = b->st;
	u32 c, k = b->n;
	int j = owner_of(ctx, st->t, g, &c);

	st->ixs[g] |= GN_IX_CLAIMED;
	b->g[k] = g;
	b->vm[k] = j == ctx->rank ? NULL : gn_step_msg(ctx, st, g);
	b->im[k] = lead && ctx->world > 1 ?
			   gn_slot_msg(ctx, index_slot(ctx, st, g)) : NULL;
	b->r[k] = 0;
	b->n++;
	if ((j != ctx->rank && !b->vm[k]) ||
	    (lead && ctx->world > 1 && !b->im[k])) {
		gn_step_abort(ctx, st, -ENOMEM, "out of memory for a message");
		return false;
	}
	return true;
}

/* Hand a batch's messages to delivery, or fail the step (lock held). */
static void batch_publish(struct enc_batch *b)
{
	struct gn_ctx *ctx = b->ctx;
	struct gn_step *st = b->st;
	char why[GN_ERRMSG_LEN];
	u32 k, c;

	for (k = 0; k < b->n && !st->err; k++) {
		if (b->r[k] == -EDOM) {
			snprintf(why, sizeof(why),
				 "the gradient of %s holds NaN or infinity; step skipped on every rank",
				 ctx->dl.peers[ctx->rank].name);
			gn_step_abort(ctx, st, -EDOM, why);
		} else if (b->r[k]) {
			snprintf(why, sizeof(why), "%s while compressing",
				 gn_pack_failure(b->r[k]));
			gn_step_abort(ctx, st, b->r[k], why);
		}
	}
	for (k = 0; k < b->n; k++) {
		u32 g = b->g[k];

		if (st->err) {
			if (b->vm[k])
				gn_dl_msg_clear(&ctx->dl, b->vm[k]);
			if (b->im[k])
				gn_dl_msg_clear(&ctx->dl, b->im[k]);
			continue;
		}
		st->ixs[g] |= GN_IX_KNOWN | GN_IX_SENT;
		if (b->im[k])
			gn_dl_msg_queue(&ctx->dl, b->im[k]);
		if (b->vm[k])
			gn_dl_msg_queue(&ctx->dl, b->vm[k]);
		else if (owner_of(ctx, st->t, g, &c) == ctx->rank)
			gn_want_work(ctx, st, c);
	}
	gn_dl_kick(&ctx->dl);
}

/*
 * gn_index_encode_all() - the caller's side at start (no lock held): the
 * chunks this rank leads first, their sets out as soon as each batch is
 * selected; then every chunk whose set is already here. The progress
 * side takes the rest as their sets complete.
 */
void gn_index_encode_all(struct gn_ctx *ctx, struct gn_step *st)
{
	struct gn_tensor *t = st->t;
	u32 most = gn_encode_scratch(ctx, t), pass, g, k;
	struct enc_batch b = { .ctx = ctx, .st = st, .scratch = t->scratch,
			       .stride = t->stride };

	most = most < INDEX_BATCH ? most : INDEX_BATCH;

	for (pass = 0; pass < 2; pass++) {
		for (g = 0; g < t->chunks_total;) {
			bool ok = true;

			b.n = 0;
			gn_env_lock(ctx->env);
			for (; g < t->chunks_total && b.n < most && ok && !st->err; g++) {
				u8 s = st->ixs[g];
				bool lead = !(s & GN_IX_KNOWN) &&
					    leader_of(ctx, st, g) == ctx->rank;

				if (s & GN_IX_CLAIMED || (pass ? !(s & GN_IX_KNOWN) : !lead))
					continue;
				ok = batch_add(&b, g, lead);
			}
			if (st->err) {
				for (k = 0; k < b.n; k++) {
					if (b.vm[k])
						gn_dl_msg_clear(&ctx->dl, b.vm[k]);
					if (b.im[k])
						gn_dl_msg_clear(&ctx->dl, b.im[k]);
				}
				gn_env_unlock(ctx->env);
				return;
			}
			gn_env_unlock(ctx->env);
			if (!b.n)
				break;
			gn_env_run(ctx->env, encode_part, &b, b.n);
			gn_env_lock(ctx->env);
			batch_publish(&b);
			gn_env_unlock(ctx->env);
		}
	}
}

/*
 * gn_index_work() - the progress side (lock held): chunks whose set came
 * after this rank started, encoded a batch of the workers' slots at a time
 */
void gn_index_work(struct gn_ctx *ctx, struct gn_step *st,
		   unsigned int *budget)
{
	struct enc_batch b = { .ctx = ctx, .st = st };
	u32 most = gn_spread_work_max(ctx), k;
	bool ok = true;

	b.scratch = gn_spread_slots(ctx, &b.stride);

	while (st->encq_n && *budget && !st->err) {
		b.n = 0;
		while (st->encq_n && b.n < most && *budget && ok) {
			u32 g = st->encq[--st->encq_n];

			ctx->work_n--;
			(*budget)--;
			ok = batch_add(&b, g, false);
		}
		if (!ok) {
			for (k = 0; k < b.n; k++)
				if (b.vm[k])
					gn_dl_msg_clear(&ctx->dl, b.vm[k]);
			return;
		}
		gn_env_run(ctx->env, encode_part, &b, b.n);
		batch_publish(&b);
	}
}

/* Chunk @g's set is complete here: encode its contribution if started. */
static void set_known(struct gn_ctx *ctx, struct gn_step *st, u32 g)
{
	st->ixs[g] |= GN_IX_KNOWN;
	if (!st->started || st->err || st->ixs[g] & GN_IX_CLAIMED)
		return;
	st->ixs[g] |= GN_IX_CLAIMED;
	st->encq[st->encq_n++] = g;
	ctx->work_n++;
}

/*
 * The set's slices are each sound; together they must cover it once and
 * increase across slice bounds.
 */
static bool set_whole_ok(const struct gn_step *st, u32 g, u32 n, size_t len)
{
	const u32 *ix = st->ix + st->t->ix_off[g];
	u32 e;

	if (!gn_rx_covers(&st->irx[g], n))
		return false;
	for (e = 1; e < n; e++)
		if (ix[e] <= ix[e - 1])
			return false;
	return ix[n - 1] < len;
}

/*
 * gn_index_in() - a slice of a leader's index set: from the chunk's
 * leader at this step, for a chunk that has a round, the set's size its
 * word; checked and taken as delivery takes any data packet.
 */
void gn_index_in(struct gn_ctx *ctx, struct gn_peer *p, struct gn_step *st,
		 const struct gn_wire_hdr *h, const struct gn_wire_data *d,
		 struct gn_buf *b)
{
	struct gn_tensor *t = st->t;
	const u8 *body = b->data + gn_wire_body_off(h->type);
	char msg[GN_ERRMSG_LEN];
	long g = gn_index_round(t) ? gn_index_chunk(ctx, t, d) : -1;
	struct gn_slice v;
	struct gn_rx *rx;
	size_t len;
	u32 n;

	if (g < 0 || h->dst != GN_RANK_ALL || h->type != GN_PKT_DATA) {
		gn_dl_drop(&ctx->dl, p, GN_DROP_TENSOR);
		return;
	}
	n = set_len(ctx, st, (u32)g, &len);
	if (leader_of(ctx, st, (u32)g) != p->rank || n == len || d->aux != n) {
		gn_dl_drop(&ctx->dl, p, GN_DROP_MALFORMED);
		return;
	}
	rx = &st->irx[g];
	if (!gn_take_packet(ctx, p, t, rx, h, d, body, &v))
		return;
	gn_index_take(d->count, v.body, st->ix + t->ix_off[g] + d->first);
	if (!gn_rx_whole(rx))
		return;
	if (set_whole_ok(st, (u32)g, n, len)) {
		set_known(ctx, st, (u32)g);
		return;
	}
	snprintf(msg, sizeof(msg),
		 "tensor %u step %u: the index set of chunk %ld from its leader %s does not add up",
		 t->id, st->no, g, p->name);
	gn_step_fail(ctx, st, -EBADMSG, msg);
	gn_abort_peers(ctx, st, -EBADMSG, p->rank);
}

/* ---- a step's end ------------------------------------------------------- */

/* Forget what the step received of sets; work queued goes. */
void gn_index_release(struct gn_ctx *ctx, struct gn_step *st)
{
	u32 g;

	for (g = 0; g < st->t->chunks_total; g++)
		gn_dl_rx_clear(&ctx->dl, &st->irx[g].m);
	ctx->work_n -= st->encq_n;
	st->encq_n = 0;
}

/*
 * A step over: its sets are no longer owed, ended or failed. (Every
 * result of a chunk implies every rank had its set.)
 */
void gn_index_drop_msgs(struct gn_ctx *ctx, struct gn_step *st)
{
	u32 slots = (st->t->chunks_total + (u32)ctx->world - 1) /
		    (u32)ctx->world, i;

	for (i = 0; i < slots; i++) {
		struct gn_txmsg *m = st->t->imsg[st->no & 1][i];

		if (m->owner == st && m->busy)
			gn_dl_msg_cancel(&ctx->dl, m);
	}
}

/* The first leader this rank still waits for a set from, or -1. */
int gn_index_missing(const struct gn_ctx *ctx, const struct gn_step *st)
{
	u32 g;

	for (g = 0; g < st->t->chunks_total; g++)
		if (!(st->ixs[g] & GN_IX_KNOWN) &&
		    leader_of(ctx, st, g) != ctx->rank)
			return leader_of(ctx, st, g);
	return -1;
}
