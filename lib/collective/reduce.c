// SPDX-License-Identifier: MIT
/*
 * reduce.c - the owner's side: contributions to this rank's shard are
 * checked, added in rank order (straight from the packet when it is their
 * turn, else the packet is held until it is), and a complete chunk is
 * re-compressed and sent to every rank as the result.
 */
#include "core.h"

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

/*
 * Check a slice's body against its chunk before anything is changed: a
 * coded body decoded within its bounds (stage.c), then the codec's check,
 * with the tensor's parameters (every index, length and value a decoder
 * could misbehave on, and values no honest rank sends), on the slice.
 */
static bool body_ok(struct gn_ctx *ctx, const struct gn_tensor *t,
		    const struct gn_wire_hdr *h, const struct gn_wire_data *d,
		    const u8 *body, struct gn_slice *v)
{
	const struct gn_codec_params *p;
	const struct gn_codec_ops *cd = gn_phase_codec(t, h->phase, &p);

	if (gn_stage_open(ctx, t, h, d, body, v))
		return false;
	/* An index slice: entries of a set of aux, each below the chunk's end. */
	if (h->phase == GN_PHASE_INDEX)
		return (u64)d->first + d->count <= d->aux &&
		       gn_index_check(d->chunk_len, d->count, v->body,
				      v->len) == v->len;
	return !gn_fp_check_slice(cd, p, d->chunk_len, d->first, d->count,
				  d->aux, v->body, v->len);
}

/* Most packets of @d's message: a chunk's, or an index set's. */
static u32 pkts_max(const struct gn_ctx *ctx, const struct gn_tensor *t,
		    const struct gn_wire_hdr *h, const struct gn_wire_data *d)
{
	if (h->phase == GN_PHASE_INDEX)
		return gn_index_pkts_max(d->aux, ctx->max_pkt -
						 GN_WIRE_DATA_OVERHEAD);
	return gn_pkts_max(ctx, t, d->chunk_len);
}

/*
 * A data packet for message @rx: new, well formed, inside its chunk and
 * not overlapping what @rx already has? Then it is taken and counted, and
 * @v is its slice; else it is dropped and counted by reason.
 */
bool gn_take_packet(struct gn_ctx *ctx, struct gn_peer *p,
		    struct gn_tensor *t, struct gn_rx *rx,
		    const struct gn_wire_hdr *h, const struct gn_wire_data *d,
		    const u8 *body, struct gn_slice *v)
{
	struct gn_event ev = { .type = GN_EV_RX, .phase = h->phase,
			       .peer = p->rank, .tensor = t->id,
			       .wire_bytes = (u32)(gn_wire_body_off(h->type) +
						   h->body_len + GN_WIRE_TAG),
			       .flow = &t->stats };
	int r;

	/* Before the message's state is sized by it (d->chunk_len is the
	 * chunk's: gn_chunk_of() said so). */
	if (d->npkts > pkts_max(ctx, t, h, d)) {
		gn_dl_drop(&ctx->dl, p, GN_DROP_MALFORMED);
		return false;
	}
	r = gn_dl_rx_mark(&ctx->dl, &rx->m, h, d);
	if (r) {
		gn_dl_drop(&ctx->dl, p, r > 0 ? GN_DROP_DUPLICATE : GN_DROP_MALFORMED);
		return false;
	}
	if (!body_ok(ctx, t, h, d, body, v) ||
	    !claim_range(rx->cover, d->first, d->count)) {
		gn_dl_drop(&ctx->dl, p, GN_DROP_MALFORMED);
		return false;
	}
	gn_dl_rx_take(&rx->m, d->pkt);
	gn_dl_account(&ctx->dl, &ev);
	return true;
}

/* The first @n units of @rx's message are all in. */
bool gn_rx_covers(const struct gn_rx *rx, u32 n)
{
	u32 w;

	for (w = 0; w < n / 64; w++)
		if (rx->cover[w] != ~0ull)
			return false;
	return n % 64 ? (rx->cover[w] | ~0ull << (n % 64)) == ~0ull : true;
}

/* Every packet of a message is in. */
bool gn_rx_whole(const struct gn_rx *rx)
{
	return rx->m.npkts && rx->m.got == rx->m.npkts;
}

/*
 * The order in which an owner adds the contributions to a chunk of its
 * shard: its own share first (it is already in place in the caller's
 * tensor, which holds the running sum), then the others by rank.
 */
int gn_turn_rank(const struct gn_ctx *ctx, unsigned int turn)
{
	if (!turn)
		return ctx->rank;
	return (int)turn - 1 < ctx->rank ? (int)turn - 1 : (int)turn;
}

void gn_reduce_in(struct gn_ctx *ctx, struct gn_peer *p, struct gn_step *st,
		  const struct gn_wire_hdr *h, const struct gn_wire_data *d,
		  struct gn_buf *b)
{
	struct gn_tensor *t = st->t;
	long c = gn_chunk_of(ctx, t, ctx->rank, d);
	const u8 *body = b->data + gn_wire_body_off(h->type);
	struct gn_slice v;
	struct gn_rx *rx;

	if (c < 0 || h->dst != ctx->rank) {
		gn_dl_drop(&ctx->dl, p, GN_DROP_TENSOR);
		return;
	}
	if (!gn_index_aux_ok(ctx, st, d)) {
		gn_dl_drop(&ctx->dl, p, GN_DROP_MALFORMED);
		return;
	}
	rx = &st->red[(size_t)p->rank * t->chunks[ctx->rank] + (size_t)c];
	if (!gn_take_packet(ctx, p, t, rx, h, d, body, &v))
		return;
	gn_implied_acks(ctx, p, h, d);
	/* Its turn: straight from the packet into the sum (spread.c). */
	if (st->started && st->turn[c] < ctx->world &&
	    gn_turn_rank(ctx, st->turn[c]) == p->rank) {
		gn_spread_take(ctx, st, h, d, b, &v, false);
	} else {
		/* Kept as it is, zero copy: at most one per packet of the
		 * message, which gn_take_packet() bounded. */
		gn_dl_buf_hold(&ctx->dl, b);
		rx->held[rx->held_n++] = b;
	}
	if (st->started && rx->m.got == rx->m.npkts)
		gn_want_work(ctx, st, (u32)c);
}

/*
 * Add the held slices of @rx, in the order they came. Any thread: it
 * touches only @rx, its chunk of the sum and work slot @slot's entropy
 * decoder (spread.c's parts).
 */
void gn_add_held(struct gn_ctx *ctx, struct gn_step *st, struct gn_rx *rx,
		 size_t off, size_t len, u32 slot)
{
	u32 k;

	for (k = 0; k < rx->held_n; k++) {
		struct gn_buf *b = rx->held[k];
		struct gn_wire_hdr h;
		struct gn_wire_data d;
		struct gn_slice v;

		/* Checked when it came; parsed again rather than stored. */
		if (!gn_wire_hdr_get(b->data, b->len, &h) &&
		    !gn_wire_data_get(b->data, &h, &d) &&
		    !gn_stage_reopen(ctx, slot, st->t, &h, &d,
				     b->data + gn_wire_body_off(h.type), &v))
			gn_fp_add_slice(ctx, st, st->data + off, len, &d, v.body,
					v.len);
		gn_dl_buf_put(&ctx->dl, b);
	}
	rx->held_n = 0;
}

/*
 * Chunk @c of the own shard has every contribution: the codec turns the
 * sum into its result stream in @scratch (re-compressing it with the
 * owner's error feedback, or carrying the contributions' form over), the
 * stream is packed into @m (with work slot @slot's entropy encoder), and
 * the sum becomes what every rank decodes.
 * Any thread: it touches only chunk @c, @m and the slot's encoder.
 * Return: 0, -EDOM (the sum is not finite) or a packing error.
 */
int gn_gather_compute(struct gn_ctx *ctx, struct gn_step *st, u32 c,
		      struct gn_txmsg *m, void *scratch, u32 slot)
{
	struct gn_tensor *t = st->t;
	size_t len, off = gn_chunk_at(ctx, t, ctx->rank, c, &len);
	struct msg_shape ms = { GN_PHASE_GATHER, GN_RANK_ALL, off, (u32)len, 0 };
	int r;

	r = t->model ? gn_fp_model_result(ctx, st, off, len, scratch, &ms.aux) :
		       gn_fp_result(ctx, st, off, len, scratch, &ms.aux);
	if (r)
		return r;
	r = gn_pack(ctx, m, t, st->no, &ms, scratch, st->data + off,
		    gn_stage_work_enc(ctx, slot),
		    t->zhint ? t->zhint + t->gat_off[ctx->rank] + c : NULL);
	if (!r && !t->model)
		gn_fp_finish(ctx, st, off, len);
	if (!r)
		gn_msg_identity(m, st, &ms);
	return r;
}

/* Send a chunk's result @m, or fail the step by @r (lock held). */
void gn_gather_finish(struct gn_ctx *ctx, struct gn_step *st,
		      struct gn_txmsg *m, int r)
{
	struct gn_tensor *t = st->t;
	char why[GN_ERRMSG_LEN];

	if (r == -EDOM) {
		gn_dl_msg_clear(&ctx->dl, m);
		snprintf(why, sizeof(why),
			 "the sum of tensor %u at %s is NaN or infinity (a NaN or infinity in its gradient, or float32 overflow); step skipped on every rank",
			 t->id, ctx->dl.peers[ctx->rank].name);
		gn_step_abort(ctx, st, -EDOM, why);
		return;
	}
	if (r) {
		gn_dl_msg_clear(&ctx->dl, m);
		gn_step_abort(ctx, st, r, gn_pack_failure(r));
		return;
	}
	if (ctx->world > 1)
		gn_dl_msg_queue(&ctx->dl, m);
	else
		gn_dl_msg_clear(&ctx->dl, m);
	gn_step_gathered(ctx, st);
}

/*
 * Reductions and re-compressions, a few chunks at a time (a batch for
 * the workers, spread.c), so that the progress side gets back to the
 * network (acknowledgements!) often.
 */
void gn_run_work(struct gn_ctx *ctx, unsigned int budget)
{
	u32 cs[GN_WORK_MAX], max = gn_spread_work_max(ctx), n;
	struct gn_tensor *t;

	for (t = ctx->tensors; t && budget && ctx->work_n; t = t->next) {
		struct gn_step *st = t->cur;
		u32 c = 0;

		if (st && st->encq_n)
			gn_index_work(ctx, st, &budget);
		while (st && st->started && !st->err && st->todo_n && budget &&
		       c < t->chunks[ctx->rank]) {
			for (n = 0; c < t->chunks[ctx->rank] && n < max && budget; c++) {
				if (!st->todo[c])
					continue;
				st->todo[c] = 0;
				st->todo_n--;
				ctx->work_n--;
				budget--;
				cs[n++] = c;
			}
			gn_spread_reduce(ctx, st, cs, n);
			if (st != t->cur)
				break;	/* completed: st may be gone */
		}
	}
}
