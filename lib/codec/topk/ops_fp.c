// SPDX-License-Identifier: MIT
/*
 * ops_fp.c - top-k's received slices in float: a contribution's values
 * added into the owner's sum, a result's set over its positions (0 where
 * it has no value), at the positions its index codec gives (a Bloom
 * filter's through its policy), float32, float16 or QSGD values, sparse
 * or dense.
 */
#include "topk.h"
#include "codec/index/varint.h"
#include "codec/value/f16.h"
#include "codec/bits.h"
#include "codec/f32.h"

static float f_at(const u8 *p)
{
	return gn_f32_of(gn_get_le32(p));
}

/*
 * The values of a checked slice, in order: @val is the codec they are in
 * (a dense slice of fitted values carries float32); a fitted one walks
 * its headers as its values cross buckets.
 */
struct vals {
	const struct gn_topk *t;
	const u8 *v;
	u32 val, e0, nb;
	const u8 *hdr, *codes;	/* fit: the current bucket's header */
	u32 b, w;		/*	its index and rank width */
	u64 bit;		/*	the next code */
};

static void vals_start(struct vals *r, const struct gn_topk *t, const u8 *v,
		       u32 e0, u32 n, bool dense)
{
	u32 f = t->fit_bucket, b, o = 0;

	r->t = t;
	r->v = v;
	r->e0 = e0;
	r->val = dense && t->val == GN_TOPK_VAL_FIT ? GN_TOPK_VAL_F32 : t->val;
	r->nb = t->qsgd && n ? (e0 + n - 1) / t->q.bucket - e0 / t->q.bucket + 1 :
			       0;
	if (r->val != GN_TOPK_VAL_FIT || !n)
		return;
	for (b = e0 / f; b <= (e0 + n - 1) / f; b++)
		o += gn_fit_hdr_bytes(v[o + 2]);
	r->codes = v + o;
	r->bit = 0;
	r->hdr = v;
	r->b = e0 / f;
	r->w = gn_fit_rank_bits(gn_fit_hdr_m(v));
}

/* Value @j of the slice: called with j = 0, 1, ... in turn. */
static float vals_at(struct vals *r, u32 j)
{
	const struct gn_topk *t = r->t;
	u32 b, code;

	if (r->val == GN_TOPK_VAL_F16)
		return gn_f32_of(gn_f32_of_f16(gn_get_le16(r->v + 2 * j)));
	if (r->val == GN_TOPK_VAL_FIT) {
		if ((r->e0 + j) / t->fit_bucket != r->b) {
			r->hdr += gn_fit_hdr_bytes(r->hdr[2]);
			r->b++;
			r->w = gn_fit_rank_bits(gn_fit_hdr_m(r->hdr));
		}
		code = gn_bits_get(r->codes, r->bit, r->w + 1);
		r->bit += r->w + 1;
		return gn_fit_value(r->hdr, code);
	}
	if (!t->qsgd)
		return f_at(r->v + 4 * j);
	b = (r->e0 + j) / t->q.bucket - r->e0 / t->q.bucket;
	return gn_qsgd_value(&t->q, f_at(r->v + 4 * b),
			     gn_qsgd_code_at(&t->q, r->v + 4 * r->nb, j));
}

/* Where a slice's values go: set (a result, divided by @w) or added. */
struct apply {
	struct vals vals;
	float *out;
	float w;
	bool set;
	u32 j;
};

static void apply_at(void *arg, u32 pos)
{
	struct apply *a = arg;
	float v = vals_at(&a->vals, a->j++);

	a->out[pos] = a->set ? v / a->w : a->out[pos] + v;
}

static void apply_dense(const struct gn_topk *t, struct apply *a, u32 first,
			u32 count, const u8 *body)
{
	u32 sz = 4 + gn_qsgd_code_bytes(&t->q, t->q.bucket), j;

	for (j = 0; j < count; j++) {
		if (t->qsgd) {
			u32 bj = j / t->q.bucket, m = j % t->q.bucket;
			float v = gn_qsgd_value(&t->q, f_at(body + bj * sz),
						gn_qsgd_code_at(&t->q,
								body + bj * sz + 4,
								m));

			a->out[first + j] = a->set ? v / a->w : a->out[first + j] + v;
		} else {
			apply_at(a, first + j);
		}
	}
}

/* out[i] for every value of a checked slice; @set: = (averaged), else +=. */
static void apply(const struct gn_codec_call *c, float *out, u32 len,
		  u32 first, u32 count, u32 aux, const u8 *body, u32 blen,
		  bool set)
{
	struct gn_topk_sparse sp;
	struct gn_bloom_group g;
	struct gn_idx_walk w;
	struct gn_topk t;
	struct apply a = {
		.out = out, .set = set,
		.w = set && c->average ? (float)c->world : 1.0f,
	};
	u32 j, at, ng = 0, end;

	gn_topk_params(c->p, &t);
	if (aux == GN_TOPK_DENSE) {
		vals_start(&a.vals, &t, body, 0, count, true);
		apply_dense(&t, &a, first, count, body);
		return;
	}
	gn_topk_locate_sparse(&t, aux, body, &sp);
	if (set)
		memset(out + first, 0, (size_t)count * sizeof(float));
	vals_start(&a.vals, &t, body + sp.vals_at, sp.e0, sp.n, false);
	if (!gn_idx_is_bloom(sp.idx_codec)) {
		gn_idx_walk_start(&w, sp.idx_codec, body + sp.idx_at, first);
		for (j = 0; j < sp.n; j++)
			apply_at(&a, gn_idx_walk_next(&w));
		return;
	}
	at = sp.idx_at + gn_varint_get(body + sp.idx_at, 5, &ng);
	for (j = 0, end = first; j < ng; j++) {
		gn_topk_next_group(&t, body, &at, &end, &g);
		gn_bloom_choose(&t.bloom, sp.idx_codec, sp.key, &g, apply_at, &a);
	}
}

void gn_topk_op_add(const struct gn_codec_call *c, float *acc, u32 len,
		    u32 first, u32 count, u32 aux, const u8 *body, u32 blen)
{
	apply(c, acc, len, first, count, aux, body, blen, false);
}

void gn_topk_op_decode(const struct gn_codec_call *c, float *out, u32 len,
		       u32 first, u32 count, u32 aux, const u8 *body, u32 blen)
{
	apply(c, out, len, first, count, aux, body, blen, true);
}
