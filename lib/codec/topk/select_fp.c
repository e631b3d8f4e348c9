// SPDX-License-Identifier: MIT
/*
 * select_fp.c - top-k's float work: a = x + e, the k largest |a| of each
 * block selected exactly (a radix select on the magnitudes' bits, ties to
 * the lower index), the error kept, the form chosen and QSGD's values
 * drawn; and on the owner, the exact sum turned into its result stream.
 * Runs inside the caller's FPU section.
 */
#include <gradnet/codec.h>

#include "topk.h"
#include "scan.h"
#include "codec/rng.h"
#include "codec/value/f16.h"
#include "codec/f32.h"

static u32 key_of(const float *a, u32 i)
{
	u32 b;

	memcpy(&b, a + i, sizeof(b));
	return b & 0x7fffffffu;
}

/*
 * The selection is a radix select on the 31 bits of |a|: a histogram of
 * the top bits of every key of a block (made with a = x + e, in the pass
 * that reads the chunk) finds the bin where the k-th largest falls; one
 * more pass takes every key above that bin, writes the error, and keeps
 * the bin's keys as candidates in the entry list; the candidates alone
 * then settle the exact threshold, bits at a time. Two passes over the
 * chunk, whatever the data.
 */
#define TOPK_CAND (1u << 31)	/* an entry that is a candidate yet */
#define TOPK_LEVEL_BITS 11

/* Top bits of a block's first histogram: about m / 8 bins, 64 to 2048. */
static u32 first_bits(u32 m)
{
	u32 b = 6;

	while (b < TOPK_LEVEL_BITS && (1u << (b + 3)) < m)
		b++;
	return b;
}

/*
 * A histogram's bin where the @need-th largest falls, counting from the
 * top: *@need becomes the count still to take inside it.
 */
static u32 bin_of(const u32 *hist, u32 nb, u32 *need)
{
	u32 b = nb - 1, cum = 0;

	while (cum + hist[b] < *need)
		cum += hist[b--];
	*need -= cum;
	return b;
}

/*
 * bin_of() for the k-th largest of the @m keys counted in @hist: with
 * k >= m, bin 0 and all of it (every bin taken).
 */
static u32 kth_bin(const u32 *hist, u32 nb, u32 k, u32 m, u32 *need)
{
	*need = k;
	if (k < m)
		return bin_of(hist, nb, need);
	*need = hist[0];
	return 0;
}

/*
 * A floor under the k-th largest key of a[lo, hi), from a sample of at
 * most 1024 of its values (x + e computed for them): the key under which
 * about twice k's share of the sample lies above, so that keys below it
 * are almost surely not selected. 0 when k is a large part of the block.
 * The sample's positions follow a Weyl sequence, not a stride: a weight
 * matrix's gradient has columns (an input that is always 0) that a stride
 * would hit again and again.
 */
static u32 sample_floor(const float *x, const float *e, u32 lo, u32 hi,
			u32 k, u32 *hist)
{
	u32 m = hi - lo, ns = m / 8 < 1024 ? m / 8 + 1 : 1024, r, j, b = 0;
	u32 cum = 0;

	if ((u64)k * 4 >= m)
		return 0;
	memset(hist, 0, sizeof(u32) << TOPK_LEVEL_BITS);
	/* Sixteen values a cache line: a sample costs a line, not a value. */
	for (j = 0; j < ns; j += 16) {
		u32 i = lo + (u32)(((u64)(j * 0x9e3779b9u) * m) >> 32), l;

		for (l = i; l < i + 16 && l < hi; l++) {
			float a = x[l] + e[l];
			u32 bin = key_of(&a, 0) >> (31 - TOPK_LEVEL_BITS);

			hist[bin]++;
			b = bin > b ? bin : b;
		}
	}
	r = (u32)(((u64)k * ns * 2 + m - 1) / m) + 8;
	if (r >= ns)
		return 0;
	/* From the sample's largest bin down: the bins above it are empty. */
	for (; cum + hist[b] < r; b--)
		cum += hist[b];
	return b << (31 - TOPK_LEVEL_BITS);
}

/* A block's first histogram's outcome, kept until its collect pass. */
struct blk_sel {
	u32 bin, need;
};

/*
 * The candidates' threshold: among the entries flagged TOPK_CAND (keys
 * with top bits @pfx at @psh), the @need largest, ties to the lower index:
 * every key above *@t and the first *@eq equal to it.
 */
static void settle(const struct gn_topk_chunk *ck, u32 from, u32 to, u32 pfx,
		   u32 psh, u32 need, u32 *t, u32 *eq)
{
	u32 *hist = ck->hist, j;

	while (psh) {
		u32 bits = psh < TOPK_LEVEL_BITS ? psh : TOPK_LEVEL_BITS;
		u32 sh = psh - bits, nb = 1u << bits, b;

		memset(hist, 0, nb * sizeof(*hist));
		for (j = from; j < to; j++) {
			u32 key = key_of(ck->val, j);

			if (ck->idx[j] & TOPK_CAND && key >> psh == pfx)
				hist[(key >> sh) & (nb - 1)]++;
		}
		b = bin_of(hist, nb, &need);
		pfx = pfx << bits | b;
		psh = sh;
		if (hist[b] == need)
			break;
	}
	*t = pfx << psh;
	*eq = psh ? ~0u : need;
}

/*
 * Keep a block's entries: of its list idx[@first, @n) (values in val[],
 * keys whose top bits at @psh are @pfx flagged TOPK_CAND, the others
 * above them), every key above and the @need largest flagged, ties to the
 * lower index,
 * moved down to idx[@first...] in position order (an entry's slot is
 * never after its place in the list), with +0 at their positions in
 * @e_out. Return: the new entry count.
 */
static u32 take_block(struct gn_topk_chunk *ck, u32 pfx, u32 psh, u32 need,
		      u32 first, u32 n, float *e_out)
{
	u32 j, th, eq, take = 0;

	settle(ck, first, n, pfx, psh, need, &th, &eq);
	for (j = first; j < n; j++) {
		u32 key = key_of(ck->val, j), pos = ck->idx[j] & ~TOPK_CAND;

		if (ck->idx[j] & TOPK_CAND) {
			if (key < th || (key == th && !eq))
				continue;
			if (key == th)
				eq--;
		}
		e_out[pos] = 0.0f;
		ck->idx[first + take] = pos;
		ck->val[first + take++] = ck->val[j];
	}
	return first + take;
}

/*
 * Select block [lo, hi) of @a (val[] or @e_out) and write its error:
 * entries appended at idx[]/val[] from @n, e_out = a except +0 at the
 * entries. The scan lists the positions at or above the first
 * histogram's bin (in idx[] past the entries so far). Return: the new
 * entry count.
 */
static u32 select_block(struct gn_topk_chunk *ck, const struct blk_sel *bs,
			u32 lo, u32 hi, u32 sh0, const float *a, float *e_out,
			u32 n, gn_topk_scan_fn *scan, bool nt)
{
	bool in_val = a == ck->val;
	u32 np, j, top = 0;

	np = scan(a + lo, NULL, e_out + lo, hi - lo, bs->bin << sh0, lo,
		  ck->idx + n, in_val ? NULL : ck->val + n, &top, nt);
	for (j = n; j < n + np; j++) {
		u32 p = ck->idx[j];

		if (in_val)
			ck->val[j] = ck->val[p];
		ck->idx[j] = key_of(ck->val, j) >> sh0 > bs->bin ? p :
								  p | TOPK_CAND;
	}
	return take_block(ck, bs->bin, sh0, bs->need, n, n + np, e_out);
}

/*
 * A block's entries from its list of the @above >= @k keys at or above
 * @floor (idx[]/val[] from @lo), the largest @top: counted in bins of the
 * keys' bits from the floor's to the largest key's, which spreads the few
 * binades a sparse selection's list spans over the whole histogram (top
 * bits alone would pile it into a handful of bins, each count waiting on
 * the last). The list is then cut, without a branch per key, to the keys
 * at or above the bin of the k-th largest, those in it flagged. Return:
 * the new entry count.
 */
static u32 select_listed(struct gn_topk_chunk *ck, u32 lo, u32 above, u32 k,
			 u32 floor, u32 top, float *e_out, u32 n)
{
	u32 psh = 0, base, nb, bin, need, i, j;
	u32 most = above / 4 < 64 ? 64 : above / 4;

	/* About four keys a bin: a short walk to the k-th, a short settle. */
	most = most < GN_TOPK_BINS ? most : GN_TOPK_BINS;
	while ((top >> psh) - (floor >> psh) >= most)
		psh++;
	base = floor >> psh;
	nb = (top >> psh) - base + 1;
	memset(ck->hist, 0, nb * sizeof(u32));
	for (i = lo; i < lo + above; i++)
		ck->hist[(key_of(ck->val, i) >> psh) - base]++;
	bin = kth_bin(ck->hist, nb, k, above, &need);
	for (i = lo, j = n; i < lo + above; i++) {
		u32 b = (key_of(ck->val, i) >> psh) - base;

		/* j <= i: the list moves down, each slot read before. */
		ck->idx[j] = ck->idx[i] | (b == bin ? TOPK_CAND : 0);
		ck->val[j] = ck->val[i];
		j += b >= bin;
	}
	return take_block(ck, base + bin, psh, need, n, j, e_out);
}

/*
 * gn_topk_select() for an error written to another buffer than it is read
 * from: e_out = a in the one pass that reads the block, which also lists
 * the keys at or above the floor with their values; the entries are
 * selected from that list. Only a floor that proves too high (fewer than
 * k keys reach it) costs a block a second pass, over e_out.
 */
static long select_apart(const struct gn_topk *t, struct gn_topk_chunk *ck,
			 const float *x, const float *e_in, float *e_out,
			 gn_topk_scan_fn *scan, bool nt)
{
	u32 blk = t->block ? t->block : ck->len, lo, n = 0;

	for (lo = 0; lo < ck->len; lo += blk) {
		u32 hi = ck->len - lo < blk ? ck->len : lo + blk, i;
		u32 m = hi - lo, bits = first_bits(m), sh0 = 31 - bits;
		u32 k = gn_topk_k(t->density, m), floor, above, top = 0;
		struct blk_sel bs;

		floor = sample_floor(x, e_in, lo, hi, k, ck->hist);
		above = scan(x + lo, e_in + lo, e_out + lo, m, floor, lo,
			     ck->idx + lo, ck->val + lo, &top, nt);
		if (top >= GN_TOPK_NOT_FINITE)
			return -EDOM;
		if (above >= k) {
			n = select_listed(ck, lo, above, k, floor, top, e_out,
					  n);
			continue;
		}
		memset(ck->hist, 0, sizeof(u32) << bits);
		for (i = lo; i < hi; i++)
			ck->hist[key_of(e_out, i) >> sh0]++;
		bs.bin = kth_bin(ck->hist, 1u << bits, k, m, &bs.need);
		n = select_block(ck, &bs, lo, hi, sh0, e_out, e_out, n, scan,
				 nt);
	}
	return n;
}

/**
 * gn_topk_select() - a chunk's top-k entries, exactly
 * @t: the parameters (density, block)
 * @ck: the chunk's scratch (gn_topk_chunk_at()), @ck->len set
 * @x: the chunk's values
 * @e_in: its error feedback
 * @e_out: out: a = x + e except +0 at the entries (may be @e_in)
 * @nt: write @e_out with non-temporal stores (scan.h)
 *
 * In place, a = x + e goes into val[] with each block's first histogram
 * and the check that every a is finite, and nothing is written to e_out
 * before that is known: then each block's selection. The entries end at
 * idx[]/val[] in position order. CLT-k's leaders select with it too.
 *
 * Return: the entry count, or -EDOM (@e_out unspecified if it is not
 * @e_in, which is untouched).
 */
long gn_topk_select(const struct gn_topk *t, struct gn_topk_chunk *ck,
		    const float *x, const float *e_in, float *e_out, bool nt)
{
	u32 blk = t->block ? t->block : ck->len, lo, n = 0, b = 0, top = 0;
	gn_topk_scan_fn *scan = gn_topk_scan_of(gn_codec_isa_default());

	if (e_out != e_in)
		return select_apart(t, ck, x, e_in, e_out, scan, nt);
	for (lo = 0; lo < ck->len; lo += blk, b++) {
		u32 hi = ck->len - lo < blk ? ck->len : lo + blk, i;
		u32 m = hi - lo, bits = first_bits(m), sh0 = 31 - bits;
		struct blk_sel *bs = (struct blk_sel *)ck->blk + b;
		u32 k = gn_topk_k(t->density, m), floor, above;

		/* A floor that proves too high is dropped: all are counted. */
		floor = sample_floor(x, e_in, lo, hi, k, ck->hist);
		above = scan(x + lo, e_in + lo, ck->val + lo, m, floor, lo,
			     ck->idx + lo, NULL, &top, false);
		memset(ck->hist, 0, sizeof(u32) << bits);
		if (above >= k || !floor) {
			for (i = lo; i < lo + above; i++)
				ck->hist[key_of(ck->val, ck->idx[i]) >> sh0]++;
		} else {
			for (i = lo; i < hi; i++)
				ck->hist[key_of(ck->val, i) >> sh0]++;
		}
		bs->bin = kth_bin(ck->hist, 1u << bits, k, m, &bs->need);
	}
	if (top >= GN_TOPK_NOT_FINITE)
		return -EDOM;
	for (lo = 0, b = 0; lo < ck->len; lo += blk, b++) {
		u32 hi = ck->len - lo < blk ? ck->len : lo + blk;

		n = select_block(ck, (struct blk_sel *)ck->blk + b, lo, hi,
				 31 - first_bits(hi - lo), ck->val, e_out, n,
				 scan, nt);
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

/* What a receiver decodes of a value sent as float16. */
static float f16_value(float v)
{
	return gn_f32_of(gn_f32_of_f16(gn_f16_of_f32(gn_f32_bits(v))));
}

/*
 * The error of the values sent: a - what is decoded (float16), +0 else
 * (float32 is exact; QSGD's rounding is unbiased and not fed back); and a
 * Bloom stream's entries that carry no value keep all of a. Only entries
 * and the values sent change: elsewhere e is a already.
 */
static void fix_error(const struct gn_topk *t, const struct gn_topk_chunk *ck,
		      float *e)
{
	bool bloom = ck->form == GN_TOPK_SPARSE &&
		     gn_idx_is_bloom(ck->idx_codec);
	bool fit = ck->form == GN_TOPK_SPARSE && t->val == GN_TOPK_VAL_FIT;
	u32 j;

	if (!bloom && !fit && t->val != GN_TOPK_VAL_F16)
		return;
	if (bloom)
		for (j = 0; j < ck->ntrue; j++)
			e[ck->tru[j]] = ck->tval[j];
	for (j = 0; j < ck->nnz; j++)
		e[ck->idx[j]] = t->val == GN_TOPK_VAL_F16 ?
			ck->val[j] - f16_value(ck->val[j]) :
			fit ? ck->val[j] - ck->fitv[j] : 0.0f;
}

/* The sparse form's values fitted, bucket by bucket. */
static void fit_values(const struct gn_topk *t, struct gn_topk_chunk *ck)
{
	u32 f = t->fit_bucket, b, at;

	for (b = 0, at = 0; at < ck->nnz; b++, at += f)
		gn_fit_bucket(ck->val + at, ck->nnz - at < f ? ck->nnz - at : f,
			      ck->fkeys, ck->rank + at, &ck->fith[b],
			      ck->fitv + at);
}

/*
 * The chosen form's values drawn as QSGD codes: the values' (counters
 * their indices in the stream) or every position's. Return: 0 or -EDOM.
 */
static int draw(const struct gn_topk *t, struct gn_topk_chunk *ck, u64 key)
{
	if (!t->qsgd)
		return 0;
	return gn_qsgd_quantize(&t->q, ck->val,
				ck->form == GN_TOPK_SPARSE ? ck->nnz : ck->len,
				key, ck->norms, ck->code);
}

/*
 * The stream of the @nnz entries at idx[]/val[]: under a Bloom filter its
 * groups and the values their policy gives (@rest: the values at other
 * positions), the index codec and the form; the error @e (NULL for a
 * result) as the stream leaves it; the header the slicer reads.
 */
static void finish_form(const struct gn_topk *t, struct gn_topk_chunk *ck,
			void *scratch, const float *rest, float *e, u64 key)
{
	struct gn_topk_chunk *hdr = scratch;
	bool bloom = gn_idx_is_bloom(t->idx);

	if (bloom) {
		ck->ntrue = ck->nnz;
		memcpy(ck->tru, ck->idx, 4 * (size_t)ck->nnz);
		memcpy(ck->tval, ck->val, 4 * (size_t)ck->nnz);
		ck->salt = (u32)(gn_draw_u64(key, 1ull << 32) >> 48);
		gn_topk_bloom_build(t, ck, rest);
	}
	if (t->val == GN_TOPK_VAL_FIT)
		fit_values(t, ck);
	gn_topk_pick_form(t, ck);
	if (bloom && ck->form == GN_TOPK_DENSE) {
		ck->nnz = ck->ntrue;
		memcpy(ck->idx, ck->tru, 4 * (size_t)ck->nnz);
		memcpy(ck->val, ck->tval, 4 * (size_t)ck->nnz);
	}
	if (e)
		fix_error(t, ck, e);
	if (ck->form == GN_TOPK_DENSE)
		spread_dense(ck);
	*hdr = *ck;
}

int gn_topk_op_encode(const struct gn_codec_call *c, const float *x,
		      const float *e_in, float *e_out, size_t len, size_t chunk,
		      u64 off, void *scratch, size_t stride, u32 *aux)
{
	struct gn_topk t;
	size_t at, k;
	int r;

	gn_topk_params(c->p, &t);
	for (at = 0, k = 0; at < len; at += chunk, k++) {
		u32 n = (u32)(len - at < chunk ? len - at : chunk);
		void *s = (u8 *)scratch + k * stride;
		u64 key = gn_draw_key(c->seed, off + at);
		struct gn_topk_chunk ck;

		long sel;

		gn_topk_chunk_at(&t, s, (u32)chunk, &ck);
		ck.len = n;
		/* As 3LC's: a long double-buffered error streams past. */
		sel = gn_topk_select(&t, &ck, x + at, e_in + at, e_out + at,
				   e_out != e_in && c->ef_len >= GN_TLC_NT_MIN);
		if (sel < 0)
			return (int)sel;
		ck.nnz = (u32)sel;
		/* Past the entries, e_out holds a: the values a Bloom gives. */
		finish_form(&t, &ck, s, e_out + at, e_out + at, key);
		r = draw(&t, &ck, key);
		if (r)
			return r;
		aux[k] = gn_topk_aux(&ck);
	}
	return 0;
}

/* A value of the chunk's stream: j-th value (sparse) or position (dense). */
static float value_at(const struct gn_topk *t, const struct gn_topk_chunk *ck,
		      u32 j)
{
	if (t->qsgd)
		return gn_qsgd_value(&t->q, ck->norms[j / t->q.bucket],
				     ck->code[j]);
	if (t->val == GN_TOPK_VAL_F16)
		return f16_value(ck->val[j]);
	if (t->val == GN_TOPK_VAL_FIT && ck->form == GN_TOPK_SPARSE)
		return ck->fitv[j];
	return ck->val[j];
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
	u64 key = gn_draw_key(c->seed, off);
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
	finish_form(&t, &ck, scratch, sum, NULL, key);
	r = draw(&t, &ck, key);
	if (r)
		return r;
	*aux = gn_topk_aux(&ck);
	if (ck.form == GN_TOPK_DENSE) {
		for (i = 0; i < n; i++)
			sum[i] = value_at(&t, &ck, i);
	} else {
		/* Entries a Bloom policy left out decode as 0. */
		for (i = 0; i < ck.ntrue; i++)
			sum[ck.tru[i]] = 0.0f;
		for (i = 0; i < ck.nnz; i++)
			sum[ck.idx[i]] = value_at(&t, &ck, i);
	}
	if (c->average)
		for (i = 0; i < n; i++)
			sum[i] = sum[i] / (float)c->world;
	return 0;
}
