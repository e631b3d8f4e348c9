// SPDX-License-Identifier: MIT
/*
 * control.c - control messages in: peers' tensor descriptors (checked
 * against this rank's registration) and their aborts of steps; and this
 * rank's descriptors out.
 */
#include "core.h"
#include "codec/entropy/entropy.h"

/*
 * A peer takes data of a tensor only once it has this rank's descriptor,
 * so data waits for its acknowledgement (t->ready): a peer that dropped
 * the descriptor (its handshake was not done yet) would drop the data
 * too, and both would go again.
 */
void gn_send_desc(struct gn_ctx *ctx, struct gn_tensor *t)
{
	/* A model tensor's shape hash is its model's digest (no buckets). */
	u32 shape = t->model ? t->model->digest : t->layout;
	u8 flags = (u8)t->flags | (t->model ? GN_DESC_MODEL : 0);
	int i;

	for (i = 0; i < ctx->world; i++)
		if (i != ctx->rank && !ctx->dl.peers[i].dead &&
		    !gn_dl_ctrl_send(&ctx->dl, i, GN_CTRL_TENSOR, flags,
				     t->id, t->base, t->cd->id,
				     (u64)t->n | (u64)shape << GN_DESC_ELEMS_BITS,
				     gn_entropy_desc(&t->params), t->params.w))
			t->desc_seq[i] = ctx->dl.peers[i].ctrl_seq;
	gn_dl_kick(&ctx->dl);
}

void gn_ctrl_acked(void *up, struct gn_peer *p, u32 seq)
{
	struct gn_ctx *ctx = up;
	u32 i;

	for (i = 0; ctx->tensor_tab && i <= ctx->tensor_mask; i++) {
		struct gn_tensor *t = ctx->tensor_tab[i];

		if (!t || t->desc_seq[p->rank] != seq)
			continue;
		t->desc_seq[p->rank] = 0;
		if (t->desc[p->rank].have && !t->proto_err) {
			t->ready[p->rank] = 1;
			gn_dl_kick(&ctx->dl);
		}
	}
}

/* Compare a peer's registration of @t with ours; name the difference. */
void gn_desc_check(struct gn_ctx *ctx, struct gn_tensor *t, int peer)
{
	const struct gn_peer_desc *d = &t->desc[peer];
	const char *who = ctx->dl.peers[peer].name;
	char msg[GN_ERRMSG_LEN], diff[GN_ERRMSG_LEN / 2];

	if (!d->have || t->proto_err)
		return;
	t->ready[peer] = !t->desc_seq[peer];
	if (!d->model != !t->model)
		snprintf(msg, sizeof(msg),
			 "tensor %u is %s on %s, %s here", t->id,
			 d->model ? "a model tensor" : "a gradient tensor", who,
			 t->model ? "a model tensor" : "a gradient tensor");
	else if (t->model && d->model != t->model->digest) {
		gn_model_text(t->model, diff, sizeof(diff));
		snprintf(msg, sizeof(msg),
			 "model tensor %u: %.60s registered another optimizer or changes' codec (digest %06x there, %06x here; here %.140s)",
			 t->id, who, d->model, t->model->digest, diff);
	} else if (d->elems != t->n)
		snprintf(msg, sizeof(msg),
			 "tensor %u has %llu elements on %s, %zu here", t->id,
			 (unsigned long long)d->elems, who, t->n);
	else if (d->layout != t->layout && (!d->layout || !t->layout))
		snprintf(msg, sizeof(msg),
			 "tensor %u is %s on %s, %s here", t->id,
			 d->layout ? "a bucket" : "a plain tensor", who,
			 t->layout ? "a bucket" : "a plain tensor");
	else if (d->layout != t->layout)
		snprintf(msg, sizeof(msg),
			 "bucket %u: %s cut it into other members than this rank (same total size; layout hash %06x there, %06x here)",
			 t->id, who, d->layout, t->layout);
	else if (d->codec != t->cd->id)
		snprintf(msg, sizeof(msg),
			 "tensor %u uses codec %s on %s, %s here", t->id,
			 gn_codec_name_of(d->codec), who, t->cd->name);
	else if (gn_codec_params_diff(t->cd, &d->params, &t->params, diff,
				      sizeof(diff)))
		snprintf(msg, sizeof(msg), "tensor %u (%s) on %s: %s", t->id,
			 t->cd->name, who, diff);
	else if (d->flags != (u8)t->flags)
		snprintf(msg, sizeof(msg), "tensor %u %s on %s, %s here", t->id,
			 d->flags & GN_TENSOR_AVERAGE ? "averages" : "sums", who,
			 t->flags & GN_TENSOR_AVERAGE ? "averages" : "sums");
	else
		return;
	t->proto_err = -EPROTO;
	snprintf(t->proto_msg, sizeof(t->proto_msg), "%s", msg);
	if (t->cur && t->cur->started)
		gn_step_fail(ctx, t->cur, -EPROTO, msg);
}

/*
 * Descriptors of tensors that this rank has not registered yet are kept,
 * at most GN_PENDING_DESCS per peer, so a peer cannot make this rank's
 * memory grow without bound. One that does not fit is neither taken nor
 * acknowledged (delivery asks here first): its sender repeats it until
 * this rank has registered the tensor or taken others off the list.
 */
bool gn_ctrl_fits(void *up, const struct gn_peer *p,
		  const struct gn_wire_hdr *h, const struct gn_wire_ctrl *c)
{
	struct gn_ctx *ctx = up;
	struct gn_tensor *t = gn_tensor_find(ctx, h->tensor);

	if (ctx->pending_descs[p->rank] < GN_PENDING_DESCS)
		return true;
	/* Full: only what is taken at once (see abort_in()). */
	if (c->kind == GN_CTRL_TENSOR)
		return t && h->step <= t->base;
	return t && h->step <= t->stepno + 1;
}

/*
 * A control message from @p for a registration this rank has not made
 * yet, kept until it does: NULL when @p has GN_PENDING_DESCS waiting
 * already (it repeats the message) or memory is short. These come with
 * registrations, not with steps.
 */
static struct gn_pending_desc *pending_new(struct gn_ctx *ctx,
					   struct gn_peer *p,
					   const struct gn_wire_hdr *h)
{
	struct gn_pending_desc *pd;

	if (ctx->pending_descs[p->rank] >= GN_PENDING_DESCS)
		return NULL;
	pd = gn_alloc(ctx->env, sizeof(*pd));
	if (!pd)
		return NULL;
	pd->peer = (u16)p->rank;
	pd->id = h->tensor;
	pd->base = h->step;
	pd->next = ctx->pending;
	ctx->pending = pd;
	ctx->pending_descs[p->rank]++;
	return pd;
}

static void tensor_desc_in(struct gn_ctx *ctx, struct gn_peer *p,
			   const struct gn_wire_hdr *h,
			   const struct gn_wire_ctrl *c)
{
	struct gn_peer_desc d = {
		.have = true, .elems = c->value & GN_DESC_ELEMS_MASK,
		.codec = h->codec, .flags = c->flags & ~GN_DESC_MODEL,
	};
	struct gn_tensor *t = gn_tensor_find(ctx, h->tensor);
	struct gn_pending_desc *pd;

	memcpy(d.params.w, c->params, sizeof(d.params.w));
	if (c->flags & GN_DESC_MODEL)
		d.model = (u32)(c->value >> GN_DESC_ELEMS_BITS);
	else
		d.layout = (u32)(c->value >> GN_DESC_ELEMS_BITS);
	gn_entropy_from_desc(&d.params, c->extra);
	/* The header's step is the registration's base: one before ours is
	 * over, one after ours waits until this rank registers again. */
	if (t && h->step < t->base)
		return;
	if (t && h->step == t->base) {
		t->desc[p->rank] = d;
		gn_desc_check(ctx, t, p->rank);
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

static const char *err_text(int err)
{
	switch (err) {
	case -ENOMEM:
		return "out of memory";
	case -EPROTO:
		return "peers disagree on protocol or parameters";
	case -EINVAL:
		return "invalid argument";
	default:
		return "error";
	}
}

static void abort_apply(struct gn_ctx *ctx, struct gn_step *st,
			const struct gn_peer *p, u64 value, u32 extra)
{
	int err = value > 0 && value < 4096 ? -(int)value : -EPROTO;
	const char *culprit = extra < (u32)ctx->world ?
				      ctx->dl.peers[extra].name : "a peer";
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
		snprintf(msg, sizeof(msg), "tensor %u step %u failed at %.100s: %s (%.100s)",
			 id, st->no, p->name, err_text(err), culprit);
	gn_step_fail(ctx, st, err, msg);
}

/* Aborts that came before step @st existed here: apply them now. */
void gn_aborts_due(struct gn_ctx *ctx, struct gn_step *st)
{
	struct gn_pending_desc **pp, *d;

	for (pp = &ctx->pending; *pp;) {
		d = *pp;
		if (!d->abort_err || d->id != st->t->id || d->base != st->no) {
			pp = &d->next;
			continue;
		}
		abort_apply(ctx, st, &ctx->dl.peers[d->peer], d->abort_err,
			    d->abort_culprit);
		ctx->pending_descs[d->peer]--;
		*pp = d->next;
		gn_free(ctx->env, d);
	}
}

static void abort_in(struct gn_ctx *ctx, struct gn_peer *p,
		     const struct gn_wire_hdr *h, const struct gn_wire_ctrl *c)
{
	struct gn_tensor *t = gn_tensor_find(ctx, h->tensor);
	struct gn_pending_desc *pd;
	struct gn_step *st;
	bool stale = false;

	st = t ? gn_step_for(ctx, t, h->step, &stale) : NULL;
	if (st) {
		abort_apply(ctx, st, p, c->value, c->extra);
		return;
	}
	if (stale || gn_older_registration(ctx, t, h->tensor, h->step))
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

void gn_ctrl_in(void *up, struct gn_peer *p, const struct gn_wire_hdr *h,
		const struct gn_wire_ctrl *c)
{
	struct gn_ctx *ctx = up;

	if (c->kind == GN_CTRL_TENSOR)
		tensor_desc_in(ctx, p, h, c);
	else
		abort_in(ctx, p, h, c);
}
