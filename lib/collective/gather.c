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
	const u8 *body = b->data + GN_WIRE_DATA_HDR;
	struct gn_tensor *t = st->t;
	long c = gn_chunk_of(ctx, t, p->rank, d);
	struct gn_rx *rx;

	if (c < 0 || h->dst != GN_RANK_ALL) {
		gn_dl_drop(&ctx->dl, p, GN_DROP_TENSOR);
		return;
	}
	if (!st->started) {
		/* No result before this rank sent its part: not plausible. */
		gn_dl_drop(&ctx->dl, p, GN_DROP_REPLAY);
		return;
	}
	rx = &st->gat[t->gat_off[p->rank] + (u32)c];
	if (!gn_take_packet(ctx, p, t, rx, h, d, body))
		return;
	/* Not before: a step that is not started has no data (NULL). */
	gn_spread_take(ctx, st, h, d, b, rx->m.got == rx->m.npkts);
}

/* The upcall for every authenticated data packet from a live peer. */
void gn_data_in(void *up, struct gn_peer *p, const struct gn_wire_hdr *h,
		struct gn_buf *b)
{
	struct gn_ctx *ctx = up;
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
	    h->codec != t->codec || d.s != t->s_bits ||
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
	else
		gn_gather_in(ctx, p, st, h, &d, b);
}
