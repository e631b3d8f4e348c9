// SPDX-License-Identifier: MIT
/*
 * select_fp.c - top-k's float work: a = x + e, the k largest |a| of each
 * block selected exactly (a radix select on the magnitudes' bits, ties to
 * the lower index), the error kept, the form chosen and QSGD's values
 * drawn; and on the owner, the exact sum turned into its result stream.
 * Runs inside the caller's FPU section.
 */
#include "topk.h"
#include "codec/rng.h"

static u32 key_of(const float *a, u32 i)
{
	u32 b;

	memcpy(&b, a + i, sizeof(b));
	return b & 0x7fffffffu;
}

/* The histogram levels: bits [20, 31), [9, 20), [0, 9) of the key. */
static const u8 level_shift[3] = { 20, 9, 0 };
static const u8 level_bits[3] = { 11, 11, 9 };

/*
 * The k-th largest key of a[lo, hi) as a threshold: every key above *@t is
 * taken, and the first *@eq keys equal to it (all of them when *@eq is
 * ~0u). One histogram pass a level, over the keys that share the prefix
 * found so far; it stops early when a whole bin is taken.
 */
static void threshold(const float *a, u32 lo, u32 hi, u32 k, u32 *hist,
		      u32 *t, u32 *eq)
{
	u32 need = k, pfx = 0, psh = 31, lvl, i;

	if (k >= hi - lo) {
		*t = 0;
		*eq = ~0u;
		return;
	}
	for (lvl = 0; lvl < 3; lvl++) {
		u32 nb = 1u << level_bits[lvl], sh = level_shift[lvl], b, cum = 0;

		memset(hist, 0, nb * sizeof(*hist));
		for (i = lo; i < hi; i++) {
			u32 key = key_of(a, i);

			if (key >> psh == pfx)
				hist[(key >> sh) & (nb - 1)]++;
		}
		for (b = nb - 1; cum + hist[b] < need; b--)
			cum += hist[b];
		need -= cum;
		pfx = pfx << level_bits[lvl] | b;
		psh = sh;
		if (hist[b] == need) {
			*t = pfx << psh;
			*eq = ~0u;
			return;
		}
	}
	*t = pfx;
	*eq = need;
}

/*
 * Select in a (val[], the chunk's a) and write e_out: entries to
 * idx[]/val[] from the front (an entry's slot is never after its source),
 * e_out = a except +0 at the entries. Return: the entry count.
 */
static u32 select_chunk(const struct gn_topk *t, struct gn_topk_chunk *ck,
			float *e_out)
{
	u32 blk = t->block ? t->block : ck->len, lo, n = 0;

	for (lo = 0; lo < ck->len; lo += blk) {
		u32 hi = ck->len - lo < blk ? ck->len : lo + blk, th, eq, i;

		threshold(ck->val, lo, hi, gn_topk_k(t->density, hi - lo),
			  ck->hist, &th, &eq);
		for (i = lo; i < hi; i++) {
			u32 key = key_of(ck->val, i);
			float a = ck->val[i];

			if (key > th || (key == th && eq && eq-- != 0)) {
				ck->idx[n] = i;
				ck->val[n++] = a;
				a = 0.0f;
			}
			if (e_out)
				e_out[i] = a;
		}
	}
	return n;
}

/*
 * The dense form from the entries: val[i] for every position, the entries'
 * values in place (from the back: an entry's slot is never before its
 * source) and 0 elsewhere.
 */
static void spread_dense(struct gn_topk_chunk *ck)
{
	u32 p = ck->len, j = ck->nnz;

	while (p--) {
		if (j && ck->idx[j - 1] == p)
			ck->val[p] = ck->val[--j];
		else
			ck->val[p] = 0.0f;
	}
}

/*
 * The chosen form's values drawn as QSGD codes: the entries' (counters
 * their entry indices) or every position's. Return: 0 or -EDOM.
 */
static int draw(const struct gn_topk *t, struct gn_topk_chunk *ck, u64 key)
{
	if (!t->qsgd)
		return 0;
	return gn_qsgd_quantize(&t->q, ck->val,
				ck->form == GN_TOPK_SPARSE ? ck->nnz : ck->len,
				key, ck->norms, ck->code);
}

static void finish_form(const struct gn_topk *t, struct gn_topk_chunk *ck,
			void *scratch)
{
	struct gn_topk_chunk *hdr = scratch;

	gn_topk_pick_form(t, ck);
	if (ck->form == GN_TOPK_DENSE)
		spread_dense(ck);
	hdr->nnz = ck->nnz;
	hdr->form = ck->form;
	hdr->bytes = ck->bytes;
	hdr->len = ck->len;
	hdr->cap = ck->cap;
}

int gn_topk_op_encode(const struct gn_codec_call *c, const float *x,
		      const float *e_in, float *e_out, size_t len, size_t chunk,
		      u64 off, void *scratch, size_t stride, u32 *aux)
{
	struct gn_topk t;
	size_t at, k;
	u32 i;
	int r;

	gn_topk_params(c->p, &t);
	for (at = 0, k = 0; at < len; at += chunk, k++) {
		u32 n = (u32)(len - at < chunk ? len - at : chunk);
		void *s = (u8 *)scratch + k * stride;
		struct gn_topk_chunk ck;

		gn_topk_chunk_at(&t, s, (u32)chunk, &ck);
		ck.len = n;
		/* a = x + e first: e_out is written only once all is finite. */
		for (i = 0; i < n; i++)
			ck.val[i] = x[at + i] + e_in[at + i];
		if (!gn_f32_all_finite(ck.val, n))
			return -EDOM;
		ck.nnz = select_chunk(&t, &ck, e_out + at);
		finish_form(&t, &ck, s);
		r = draw(&t, &ck, gn_draw_key(c->seed, off + at));
		if (r)
			return r;
		aux[k] = ck.form;
	}
	return 0;
}

/* A value of the chunk's stream: j-th entry (sparse) or position (dense). */
static float value_at(const struct gn_topk *t, const struct gn_topk_chunk *ck,
		      u32 j)
{
	if (!t->qsgd)
		return ck->val[j];
	return gn_qsgd_value(&t->q, ck->norms[j / t->q.bucket], ck->code[j]);
}

/* What the chunk contributes, in place of the own share's gradient. */
void gn_topk_op_own(const struct gn_codec_call *c, const void *scratch,
		    u32 aux, float *x, size_t len)
{
	struct gn_topk_chunk ck;
	struct gn_topk t;
	u32 j;

	gn_topk_params(c->p, &t);
	gn_topk_chunk_view(&t, scratch, &ck);
	if (ck.form == GN_TOPK_DENSE) {
		for (j = 0; j < len; j++)
			x[j] = value_at(&t, &ck, j);
		return;
	}
	memset(x, 0, len * sizeof(float));
	for (j = 0; j < ck.nnz; j++)
		x[ck.idx[j]] = value_at(&t, &ck, j);
}

/*
 * The owner's exact sum: its nonzero values are the result's entries
 * (bits, so -0 counts), sent in the smaller form; the sum becomes what
 * they decode to, averaged.
 */
int gn_topk_op_result(const struct gn_codec_call *c, float *sum,
		      const float *e_in, float *e_out, size_t len, u64 off,
		      void *scratch, u32 *aux)
{
	struct gn_topk_chunk ck;
	struct gn_topk t;
	u32 i, n = (u32)len;
	int r;

	if (!gn_f32_all_finite(sum, n))
		return -EDOM;
	gn_topk_params(c->p, &t);
	gn_topk_chunk_at(&t, scratch, n, &ck);
	ck.len = n;
	ck.nnz = 0;
	for (i = 0; i < n; i++) {
		u32 b;

		memcpy(&b, sum + i, sizeof(b));
		if (b) {
			ck.idx[ck.nnz] = i;
			ck.val[ck.nnz++] = sum[i];
		}
	}
	finish_form(&t, &ck, scratch);
	r = draw(&t, &ck, gn_draw_key(c->seed, off));
	if (r)
		return r;
	*aux = ck.form;
	if (ck.form == GN_TOPK_DENSE) {
		for (i = 0; i < n; i++)
			sum[i] = value_at(&t, &ck, i);
	} else {
		for (i = 0; i < ck.nnz; i++)
			sum[ck.idx[i]] = value_at(&t, &ck, i);
	}
	if (c->average)
		for (i = 0; i < n; i++)
			sum[i] = sum[i] / (float)c->world;
	return 0;
}
