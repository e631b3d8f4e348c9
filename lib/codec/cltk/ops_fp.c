// SPDX-License-Identifier: MIT
/*
 * ops_fp.c - CLT-k's float work: p = x + m; a leader's set selected by
 * top-k's selection, another rank's given; the values at the set (QSGD
 * codes drawn where asked) and the memory's low-pass update; the owner's
 * exact sum at the set as the result; received values added or set at
 * their positions.
 */
#include <gradnet/codec.h>

#include "cltk.h"
#include "codec/f32.h"
#include "codec/rng.h"

static float f_at(const u8 *p)
{
	u32 b = gn_get_le32(p);
	float f;

	memcpy(&f, &b, sizeof(f));
	return f;
}

/*
 * m = (1 - beta) m + beta r over @n values, r the part of p not sent:
 * float32, 1 - beta first, the two products, then their sum (beta = 1
 * keeps r as it is). Return: -EDOM if a new m is not finite.
 */
static int low_pass(const struct gn_cltk *k, const float *m, float *r,
		    u32 n)
{
	float beta = gn_f32_of(k->beta), keep = 1.0f - beta;
	u32 i;

	if (k->beta == GN_CLTK_BETA_ONE)
		return 0;
	for (i = 0; i < n; i++)
		r[i] = keep * m[i] + beta * r[i];
	return gn_f32_all_finite(r, n) ? 0 : -EDOM;
}

/*
 * A rank that does not lead the chunk (or a chunk sent whole): p = x + m,
 * its values at the given set (NULL: every value), r = p except +0 at the
 * set into @e_out. Return: the set's size, or -EDOM when some p is not
 * finite, at the set or not.
 */
static long at_set(const struct gn_codec_call *c, struct gn_cltk_chunk *ch,
		   const float *x, const float *e_in, float *e_out, u32 len)
{
	u32 i, j = 0, n = c->idx ? c->nidx : len, carry = 0, b;
	float *v = ch->ck.val;

	for (i = 0; i < len; i++) {
		float p = x[i] + e_in[i];

		memcpy(&b, &p, sizeof(b));
		carry |= (b & 0x7f800000u) + 0x00800000u;
		if (j < n && (!c->idx || c->idx[j] == i)) {
			v[j++] = p;
			e_out[i] = 0.0f;
		} else {
			e_out[i] = p;
		}
	}
	if (carry & 0x80000000u)
		return -EDOM;
	if (c->idx)
		memcpy(ch->ck.idx, c->idx, (size_t)n * sizeof(u32));
	return n;
}

/* One chunk: the set and its values in the scratch, the memory updated. */
static int encode_chunk(const struct gn_codec_call *c, const struct gn_cltk *k,
			const float *x, const float *e_in, float *e_out,
			u32 len, u64 off, void *scratch, u32 *aux)
{
	u32 want = gn_cltk_set_len(k, c->step, len);
	bool lead = !c->idx && want < len, filter = k->beta != GN_CLTK_BETA_ONE;
	const float *m = e_in;
	struct gn_cltk_chunk ch;
	long n;
	int r;

	gn_cltk_chunk_at(k, scratch, len, &ch);
	ch.ck.len = len;
	/* The filter needs the old memory after r is written over it. */
	if (filter && e_in == e_out) {
		memcpy(ch.mem, e_in, (size_t)len * sizeof(float));
		m = ch.mem;
	}
	if (lead)
		n = gn_topk_select(&k->sel, &ch.ck, x, m, e_out,
				   !filter && e_out != e_in &&
					   c->ef_len >= GN_TLC_NT_MIN);
	else
		n = at_set(c, &ch, x, m, e_out, len);
	if (n < 0)
		return (int)n;
	r = low_pass(k, m, e_out, len);
	if (r)
		return r;
	ch.hdr->nidx = (u32)n;
	ch.hdr->len = len;
	ch.hdr->cap = len;
	*aux = (u32)n;
	if (!k->sel.qsgd)
		return 0;
	return gn_qsgd_quantize(&k->sel.q, ch.ck.val, (u32)n,
				gn_draw_key(c->seed, off), ch.ck.norms,
				ch.ck.code);
}

/*
 * One chunk a call: each has its own set. (The collective calls it so;
 * a longer @len is cut at @chunk, every piece its own leader.)
 */
int gn_cltk_op_encode(const struct gn_codec_call *c, const float *x,
		      const float *e_in, float *e_out, size_t len, size_t chunk,
		      u64 off, void *scratch, size_t stride, u32 *aux)
{
	struct gn_cltk k;
	size_t at, i;
	int r;

	gn_cltk_params(c->p, &k);
	for (at = 0, i = 0; at < len; at += chunk, i++) {
		u32 n = (u32)(len - at < chunk ? len - at : chunk);

		r = encode_chunk(c, &k, x + at, e_in + at, e_out + at, n,
				 off + at, (u8 *)scratch + i * stride, aux + i);
		if (r)
			return r;
	}
	return 0;
}

/* Entry @j's value as the stream carries it. */
static float value_at(const struct gn_cltk *k, const struct gn_cltk_chunk *ch,
		      u32 j)
{
	if (!k->sel.qsgd)
		return ch->ck.val[j];
	return gn_qsgd_value(&k->sel.q, ch->ck.norms[j / k->sel.q.bucket],
			     ch->ck.code[j]);
}

void gn_cltk_op_own(const struct gn_codec_call *c, const void *scratch,
		    u32 aux, float *x, size_t len)
{
	struct gn_cltk_chunk ch;
	struct gn_cltk k;
	u32 j;

	gn_cltk_params(c->p, &k);
	gn_cltk_chunk_at(&k, scratch, ((const struct gn_cltk_hdr *)scratch)->cap,
			 &ch);
	if (aux == len) {
		for (j = 0; j < len; j++)
			x[j] = value_at(&k, &ch, j);
		return;
	}
	memset(x, 0, len * sizeof(float));
	for (j = 0; j < aux; j++)
		x[ch.ck.idx[j]] = value_at(&k, &ch, j);
}

/*
 * The owner's sum is 0 outside the set: its values at the set are the
 * result, as they are (QSGD: drawn anew under the owner's key), and the
 * sum becomes what they decode to.
 */
int gn_cltk_op_result(const struct gn_codec_call *c, float *sum,
		      const float *e_in, float *e_out, size_t len, u64 off,
		      void *scratch, u32 *aux)
{
	u32 n = c->idx ? c->nidx : (u32)len, j;
	struct gn_cltk_chunk ch;
	struct gn_cltk k;
	int r;

	if (!gn_f32_all_finite(sum, len))
		return -EDOM;
	gn_cltk_params(c->p, &k);
	gn_cltk_chunk_at(&k, scratch, (u32)len, &ch);
	for (j = 0; j < n; j++)
		ch.ck.val[j] = sum[c->idx ? c->idx[j] : j];
	ch.hdr->nidx = n;
	ch.hdr->len = (u32)len;
	ch.hdr->cap = (u32)len;
	*aux = n;
	if (k.sel.qsgd) {
		r = gn_qsgd_quantize(&k.sel.q, ch.ck.val, n,
				     gn_draw_key(c->seed, off), ch.ck.norms,
				     ch.ck.code);
		if (r)
			return r;
	}
	for (j = 0; j < n; j++) {
		float v = value_at(&k, &ch, j);

		sum[c->idx ? c->idx[j] : j] = c->average ? v / (float)c->world : v;
	}
	return 0;
}

/* Value @j of a checked slice's body, @j counted from its first entry. */
static float slice_value(const struct gn_cltk *k, const u8 *body, u32 j)
{
	const struct gn_qsgd *q = &k->sel.q;
	u32 b, sz;

	if (!k->sel.qsgd)
		return f_at(body + 4 * j);
	b = j / q->bucket;
	sz = 4 + gn_qsgd_code_bytes(q, q->bucket);
	return gn_qsgd_value(q, f_at(body + b * sz),
			     gn_qsgd_code_at(q, body + b * sz + 4, j % q->bucket));
}

void gn_cltk_op_add(const struct gn_codec_call *c, float *acc, u32 len,
		    u32 first, u32 count, u32 aux, const u8 *body, u32 blen)
{
	struct gn_cltk k;
	u32 j;

	gn_cltk_params(c->p, &k);
	for (j = 0; j < count; j++) {
		u32 pos = c->idx ? c->idx[first + j] : first + j;

		acc[pos] += slice_value(&k, body, j);
	}
}

/*
 * A result's slice sets its positions: from after the previous entry's
 * position (0 for the first slice) to its last entry's (the chunk's end
 * for the last slice), 0 where there is no entry.
 */
void gn_cltk_op_decode(const struct gn_codec_call *c, float *out, u32 len,
		       u32 first, u32 count, u32 aux, const u8 *body, u32 blen)
{
	float w = c->average ? (float)c->world : 1.0f;
	struct gn_cltk k;
	u32 j, lo, hi;

	gn_cltk_params(c->p, &k);
	if (!c->idx) {
		for (j = 0; j < count; j++)
			out[first + j] = slice_value(&k, body, j) / w;
		return;
	}
	lo = first ? c->idx[first - 1] + 1 : 0;
	hi = first + count == c->nidx ? len : c->idx[first + count - 1] + 1;
	memset(out + lo, 0, (size_t)(hi - lo) * sizeof(float));
	for (j = 0; j < count; j++)
		out[c->idx[first + j]] = slice_value(&k, body, j) / w;
}
