// SPDX-License-Identifier: MIT
/*
 * gather.c - data packets in: which tensor and step they belong to, and
 * the results from every owner, decoded straight from the packet into the
 * caller's tensor.
 */
#include "core.h"

void gn_gather_in(struct gn_ctx *ctx, struct gn_peer *p, struct gn_step *st,
		  const struct gn_wire_hdr *h, const struct gn_wire_data *d,
		  struct gn_buf *b)
{
	const u8 *body = b->data + gn_wire_body_off(h->type);
	struct gn_tensor *t = st->t;
	long c = gn_chunk_of(ctx, t, p->rank, d);
	struct gn_slice v;
	struct gn_rx *rx;

	if (c < 0 || h->dst != GN_RANK_ALL) {
		gn_dl_drop(&ctx->dl, p, GN_DROP_TENSOR);
		return;
	}
	if (!gn_index_aux_ok(ctx, st, d)) {
		gn_dl_drop(&ctx->dl, p, GN_DROP_MALFORMED);
		return;
	}
	/* No result before this rank sent its part (which took the set): not
	 * plausible. */
	if (!st->started ||
	    (gn_index_round(t) && !(st->ixs[t->gat_off[p->rank] + c] & GN_IX_SENT))) {
		gn_dl_drop(&ctx->dl, p, GN_DROP_REPLAY);
		return;
	}
	rx = &st->gat[t->gat_off[p->rank] + (u32)c];
	if (!gn_take_packet(ctx, p, t, rx, h, d, body, &v))
		return;
	gn_implied_acks(ctx, p, h, d);
	/* Not before: a step that is not started has no data (NULL). */
	gn_spread_take(ctx, st, h, d, b, &v, rx->m.got == rx->m.npkts);
}

/*
 * What a data packet from @p says about this rank's own messages to @p.
 * An owner sends the result of a chunk only once it has every
 * contribution to it, so its result implies this rank's contribution; a
 * rank starts a tensor's step only after the last one ended (all its
 * results in, or the step failed and nothing more is needed), so its
 * contribution to a chunk implies this rank's last result for it. Only
 * packets that were taken count: nothing malformed, stale or duplicated.
 */
void gn_implied_acks(struct gn_ctx *ctx, struct gn_peer *p,
		     const struct gn_wire_hdr *h, const struct gn_wire_data *d)
{
	if (h->phase == GN_PHASE_INDEX)
		return;
	if (h->phase == GN_PHASE_GATHER)
		gn_dl_ack_implied(&ctx->dl, p, h->tensor, h->step,
				  GN_PHASE_REDUCE, d->chunk_off);
	else
		gn_dl_ack_implied(&ctx->dl, p, h->tensor, h->step - 1,
				  GN_PHASE_GATHER, d->chunk_off);
}

/*
 * The receiving side of the same rules: may this rank leave out its
 * acknowledgement of @q, because it has sent @q's sender the packet that
 * implies it? Either that message is still on its way (a packet of it
 * went out), or this rank has started a step after the one that sent it
 * (so it went out, or that step failed on every rank and nothing is owed;
 * the sender's retries of a step that is over are acknowledged at once).
 * Index sets are acknowledged as they come: nothing implies them.
 */
bool gn_ack_implied(void *up, const struct gn_ackq *q)
{
	struct gn_ctx *ctx = up;
	struct gn_tensor *t = gn_tensor_find(ctx, q->tensor);
	u32 by = q->phase == GN_PHASE_REDUCE ? q->step : q->step + 1;
	struct gn_txmsg *m;

	if (!t || q->step <= t->base || q->phase == GN_PHASE_INDEX)
		return false;
	if (t->stepno > by)
		return true;
	if (q->phase == GN_PHASE_REDUCE)
		m = gn_dl_msg_find(&ctx->dl, q->peer, q->tensor, by,
				   GN_PHASE_GATHER, q->chunk_off);
	else
		m = gn_dl_msg_find(&ctx->dl, q->peer, q->tensor, by,
				   GN_PHASE_REDUCE, q->chunk_off);
	return m && gn_dl_msg_sent_to(m, q->peer);
}

/* The upcall for every authenticated data packet from a live peer. */
void gn_data_in(void *up, struct gn_peer *p, const struct gn_wire_hdr *h,
		struct gn_buf *b)
{
	struct gn_ctx *ctx = up;
	const struct gn_codec_params *cp;
	struct gn_wire_data d;
	struct gn_tensor *t;
	struct gn_step *st;
	bool stale;

	if (gn_wire_data_get(b->data, h, &d)) {
		gn_dl_drop(&ctx->dl, p, GN_DROP_MALFORMED);
		return;
	}
	t = gn_tensor_find(ctx, h->tensor);
	if (gn_older_registration(ctx, t, h->tensor, h->step)) {
		/* Over on this rank; the sender may wait for our ack. */
		gn_dl_ack_all(&ctx->dl, p->rank, h, &d);
		gn_dl_drop(&ctx->dl, p, GN_DROP_REPLAY);
		return;
	}
	if (!t || !t->desc[p->rank].have || t->proto_err ||
	    h->codec != gn_phase_codec(t, h->phase, &cp)->id ||
	    d.chunk_off + d.chunk_len > t->n) {
		gn_dl_drop(&ctx->dl, p, GN_DROP_TENSOR);
		return;
	}
	st = gn_step_for(ctx, t, h->step, &stale);
	if (!st || st->err || st->done) {
		if (stale || (st && (st->err || st->done)))
			gn_dl_ack_all(&ctx->dl, p->rank, h, &d);
		gn_dl_drop(&ctx->dl, p, GN_DROP_REPLAY);
		return;
	}
	if (h->phase == GN_PHASE_REDUCE)
		gn_reduce_in(ctx, p, st, h, &d, b);
	else if (h->phase == GN_PHASE_GATHER)
		gn_gather_in(ctx, p, st, h, &d, b);
	else
		gn_index_in(ctx, p, st, h, &d, b);
}
