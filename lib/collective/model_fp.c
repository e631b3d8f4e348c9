// SPDX-License-Identifier: MIT
/*
 * model_fp.c - the floating-point unit of model tensors (model.h): a
 * rank's contribution and what its own encodings stand for, the owner's
 * optimizer step on a chunk of its shard, and the parameters' update when
 * a step completes. Each function is one FPU section, as fp.c's are;
 * the arithmetic is float32, one operation at a time in the order
 * <gradnet/codec.h> gives ("The model-updating step"), no contraction.
 */
#include "core.h"
#include "codec/f32.h"

/*
 * What an encoded chunk stands for, into @out (@len values): its whole
 * stream cut as one slice into @tmp and decoded, so the values are the
 * ones every receiver of it gets, whatever packets carry it.
 * Return: 0, or -EINVAL if the codec broke its bound.
 */
static int decode_own(const struct gn_codec_ops *cd,
		      const struct gn_codec_call *c, const void *scratch,
		      u32 aux, const float *x, u32 len, u8 *tmp, float *out)
{
	u32 used = 0;
	long bytes;

	bytes = cd->slice(c->p, scratch, aux, x, len, 0, tmp,
			  (u32)cd->bound(c->p, len), &used);
	if (bytes < 0 || used != cd->units(len))
		return -EINVAL;
	cd->decode(c, out, len, 0, used, aux, tmp, (u32)bytes);
	return 0;
}

/*
 * The error buffers a model tensor's codec is given: its own error
 * feedback (double-buffered, e_cur), or with DORE a buffer of zeros in and
 * one that nobody reads out.
 */
static void ef_of(float *const *ef, bool dore, int cur, size_t at,
		  const float **in, float **out)
{
	*in = NULL;
	*out = NULL;
	if (!ef[0])
		return;
	*in = (dore ? ef[0] : ef[cur]) + at;
	*out = (dore ? ef[1] : ef[!cur]) + at;
}

/**
 * gn_fp_model_encode() - chunks [off, off + len) of shard @j of a model
 * tensor's gradient into @scratch and @aux
 * @ctx: the context
 * @st: the step; its data is the gradient
 * @j: the shard's owner
 * @off: the first chunk's offset in the tensor
 * @len: values, whole chunks of the job's chunk size (the last shorter)
 * @scratch: the chunks' scratch, the tensor's stride apart
 * @aux: the chunks' words
 * @tmp: a stream of the gradients' codec's bound
 *
 * With DORE the data becomes the residual g - h_i first, and h_i's next
 * half takes h_i + alpha Q(g - h_i). The own shard's data becomes what
 * its encoding stands for, as another rank's contribution would.
 * Return: 0, -EDOM for a value that is not finite, -EINVAL.
 */
int gn_fp_model_encode(const struct gn_ctx *ctx, const struct gn_step *st,
		       int j, size_t off, size_t len, void *scratch, u32 *aux,
		       u8 *tmp)
{
	const struct gn_tensor *t = st->t;
	const struct gn_model *m = t->model;
	bool dore = m->flags & GN_MODEL_DORE;
	bool ef = t->cd->flags & GN_CODEC_EF_REDUCE;
	struct gn_codec_call c = gn_fp_call(ctx, st, GN_PHASE_REDUCE,
					    ef ? t->n : 0);
	float alpha = gn_f32_of(m->alpha), *x = st->data + off, *h0, *h1;
	int cur = t->e_cur, r;
	const float *e_in;
	float *e_out;
	size_t at, i, k;

	ef_of(t->e_rs, dore, cur, off, &e_in, &e_out);
	h0 = dore ? m->hw[cur] + off : NULL;
	h1 = dore ? m->hw[!cur] + off : NULL;
	gn_simd_begin();
	for (i = 0; dore && i < len; i++)
		x[i] = x[i] - h0[i];
	r = t->cd->encode(&c, x, e_in, e_out, len, ctx->chunk, off, scratch,
			  t->stride, aux);
	for (at = 0, k = 0; !r && (dore || j == ctx->rank) && at < len;
	     at += ctx->chunk, k++) {
		u32 n = (u32)(len - at < ctx->chunk ? len - at : ctx->chunk);
		float *q = j == ctx->rank ? x + at : h1 + at;

		r = decode_own(t->cd, &c, (u8 *)scratch + k * t->stride, aux[k],
			       x + at, n, tmp, q);
		for (i = 0; !r && dore && i < n; i++)
			h1[at + i] = h0[at + i] + alpha * q[i];
	}
	gn_simd_end();
	return r;
}

/**
 * gn_fp_model_result() - the owner's step on chunk [off, off + len) of
 * its shard: the change, encoded into @scratch and @aux
 * @ctx: the context
 * @st: the step; its data holds the sum of the contributions
 * @off: the chunk's offset in the tensor
 * @len: its values
 * @scratch: a result slot (gn_model_res_slot() bytes)
 * @aux: out, the chunk's word
 *
 * The data becomes the change every rank decodes; the next halves of the
 * owner's state take their new values.
 * Return: 0, -EDOM for a change that is not finite, -EINVAL.
 */
int gn_fp_model_result(const struct gn_ctx *ctx, const struct gn_step *st,
		       size_t off, size_t len, void *scratch, u32 *aux)
{
	const struct gn_tensor *t = st->t;
	const struct gn_model *m = t->model;
	bool dore = m->flags & GN_MODEL_DORE;
	size_t rel = off - t->lo[ctx->rank], i;
	size_t own = t->lo[ctx->rank + 1] - t->lo[ctx->rank];
	struct gn_codec_call c = gn_fp_call(ctx, st, GN_PHASE_GATHER,
					    m->ef[0] ? own : 0);
	float w = (float)ctx->world, lr = gn_f32_of(st->lr);
	float alpha = gn_f32_of(m->alpha), eta = gn_f32_of(m->eta);
	float mu = gn_f32_of(m->momentum), wd = gn_f32_of(m->weight_decay);
	float *s = st->data + off;
	const float *x = st->params + off, *e_in;
	int cur = t->e_cur, r;
	float *e_out;

	ef_of(m->ef, dore, cur, rel, &e_in, &e_out);
	gn_simd_begin();
	for (i = 0; i < len; i++) {
		float d = s[i] / w, v;

		if (dore) {
			float h = m->ho[cur][rel + i];

			m->ho[!cur][rel + i] = h + alpha * d;
			d = h + d;
		}
		if (m->weight_decay)
			d = d + wd * x[i];
		if (m->momentum) {
			d = mu * m->mom[cur][rel + i] + d;
			m->mom[!cur][rel + i] = d;
		}
		v = (x[i] - lr * d) - x[i];
		if (dore) {
			v = v + eta * m->eo[cur][rel + i];
			m->eo[!cur][rel + i] = v;
		}
		s[i] = v;
	}
	r = m->cd->encode(&c, s, e_in, e_out, len, len, off, scratch,
			  m->res_scratch, aux);
	if (!r)
		r = decode_own(m->cd, &c, scratch, *aux, s, (u32)len,
			       (u8 *)scratch + m->res_scratch, s);
	for (i = 0; !r && dore && i < len; i++)
		m->eo[!cur][rel + i] = m->eo[!cur][rel + i] - s[i];
	gn_simd_end();
	return r;
}

/**
 * gn_fp_model_commit() - parameters [off, off + len) take their change:
 * x + beta * q, q the change the step decoded into its data
 * @st: the completed step
 * @off: the first value
 * @len: values
 */
void gn_fp_model_commit(const struct gn_step *st, size_t off, size_t len)
{
	float beta = gn_f32_of(st->t->model->beta), *x = st->params + off;
	const float *q = st->data + off;
	size_t i;

	gn_simd_begin();
	for (i = 0; i < len; i++)
		x[i] = x[i] + beta * q[i];
	gn_simd_end();
}
