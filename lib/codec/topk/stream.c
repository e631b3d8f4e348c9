// SPDX-License-Identifier: MIT
/*
 * stream.c - top-k's sparse streams: a chunk's scratch, what each form
 * costs (the dynamic switch), slices cut from the entries or the dense
 * values, and the check a received slice passes before it is decoded.
 * Integer-only: values travel as their bits.
 */
#include "topk.h"
#include "codec/index/varint.h"

void gn_topk_params(const struct gn_codec_params *p, struct gn_topk *t)
{
	t->density = p->w[GN_TOPK_W_DENSITY];
	t->block = p->w[GN_TOPK_W_BLOCK];
	t->qsgd = p->w[GN_TOPK_W_BITS] != 0;
	gn_qsgd_of(t->qsgd ? p->w[GN_TOPK_W_BITS] : 8, p->w[GN_TOPK_W_BUCKET],
		   p->w[GN_TOPK_W_NORM], &t->q);
}

static size_t up8(size_t n)
{
	return (n + 7) & ~(size_t)7;
}

/*
 * The scratch of a chunk of up to @cap values, laid out at @scratch: a
 * header that the slicer reads back (nnz, form, bytes, len, cap), then the
 * arrays.
 */
void gn_topk_chunk_at(const struct gn_topk *t, void *scratch, u32 cap,
		      struct gn_topk_chunk *ck)
{
	u8 *at = (u8 *)scratch + up8(sizeof(struct gn_topk_chunk));
	u32 chunk = cap;

	memset(ck, 0, sizeof(*ck));
	ck->cap = cap;
	ck->idx = (u32 *)at;
	at += up8(4 * (size_t)chunk);
	ck->val = (float *)at;
	at += up8(4 * (size_t)chunk);
	ck->hist = (u32 *)at;
	at += 4 * GN_TOPK_BINS;
	ck->blk = (u32 *)at;
	at += up8(8 * ((size_t)chunk / 64 + 1));
	ck->norms = (float *)at;
	at += up8(t->qsgd ? 4 * ((size_t)chunk / 16 + 1) : 0);
	ck->code = at;
}

/* A chunk encoded into @scratch, as its header says it was laid out. */
void gn_topk_chunk_view(const struct gn_topk *t, const void *scratch,
			struct gn_topk_chunk *ck)
{
	const struct gn_topk_chunk *hdr = scratch;

	gn_topk_chunk_at(t, (void *)scratch, hdr->cap, ck);
	ck->nnz = hdr->nnz;
	ck->form = hdr->form;
	ck->bytes = hdr->bytes;
	ck->len = hdr->len;
}

size_t gn_topk_scratch_bytes(const struct gn_topk *t, u32 chunk)
{
	return up8(sizeof(struct gn_topk_chunk)) + 2 * up8(4 * (size_t)chunk) +
	       4 * GN_TOPK_BINS + up8(8 * ((size_t)chunk / 64 + 1)) +
	       (t->qsgd ? up8(4 * ((size_t)chunk / 16 + 1)) + chunk : 0);
}

/*
 * ceil(d * m) for the float32 d of bits @density (0 < d <= 1) exactly, and
 * at least 1: d = M * 2^E with M the 24-bit significand, so the product is
 * an integer shifted right.
 */
u32 gn_topk_k(u32 density, u32 m)
{
	u32 e = density >> 23 & 0xff, sh;
	u64 mant = density & 0x7fffff, prod;

	if (e)
		mant |= 1u << 23;
	sh = e ? 150 - e : 149;
	prod = mant * m;
	if (sh >= 64)
		return prod ? 1 : 0;
	prod = (prod + (1ull << sh) - 1) >> sh;
	return prod ? (u32)(prod < m ? prod : m) : 1;
}

/* The body of one sparse slice holding @nnz entries at @idx, from 0. */
u64 gn_topk_sparse_bytes(const struct gn_topk *t, const u32 *idx, u32 nnz)
{
	u64 n = gn_varint_len(nnz) + (t->qsgd ? gn_varint_len(0) : 0);
	u32 j, prev = 0;

	for (j = 0; j < nnz; j++) {
		n += gn_varint_len(idx[j] - prev);
		prev = idx[j] + 1;
	}
	if (!t->qsgd)
		return n + 4 * (u64)nnz;
	return n + 4 * (u64)((nnz + t->q.bucket - 1) / t->q.bucket) +
	       gn_qsgd_code_bytes(&t->q, nnz);
}

u64 gn_topk_dense_bytes(const struct gn_topk *t, u32 n)
{
	return t->qsgd ? gn_qsgd_bytes(&t->q, n) : 4 * (u64)n;
}

/* Sparse when smaller than dense: the dynamic switch. */
void gn_topk_pick_form(const struct gn_topk *t, struct gn_topk_chunk *ck)
{
	u64 sparse = gn_topk_sparse_bytes(t, ck->idx, ck->nnz);
	u64 dense = gn_topk_dense_bytes(t, ck->len);

	ck->form = sparse < dense ? GN_TOPK_SPARSE : GN_TOPK_DENSE;
	ck->bytes = (u32)(sparse < dense ? sparse : dense);
}

/* The first entry at or after position @at. */
static u32 entry_from(const struct gn_topk_chunk *ck, u32 at)
{
	u32 lo = 0, hi = ck->nnz;

	while (lo < hi) {
		u32 mid = lo + (hi - lo) / 2;

		if (ck->idx[mid] < at)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* Bytes of a sparse slice of entries [e0, e0 + n) whose indices take @ib. */
static u64 sparse_slice_bytes(const struct gn_topk *t, u32 e0, u32 n, u64 ib)
{
	u64 b = gn_varint_len(n) + ib;

	if (!t->qsgd)
		return b + 4 * (u64)n;
	b += gn_varint_len(e0) + gn_qsgd_code_bytes(&t->q, n);
	if (n)
		b += 4 * (u64)((e0 + n - 1) / t->q.bucket - e0 / t->q.bucket + 1);
	return b;
}

static long sparse_slice(const struct gn_topk *t,
			 const struct gn_topk_chunk *ck, u32 at, u8 *dst,
			 u32 cap, u32 *units)
{
	u32 e0 = entry_from(ck, at), n = 0, prev = at, j, o;
	u64 ib = 0;

	/* The most entries whose slice fits @cap. */
	while (e0 + n < ck->nnz) {
		u32 d = gn_varint_len(ck->idx[e0 + n] - prev);

		if (sparse_slice_bytes(t, e0, n + 1, ib + d) > cap)
			break;
		ib += d;
		prev = ck->idx[e0 + n] + 1;
		n++;
	}
	if (!n && e0 < ck->nnz)
		return -ENOSPC;
	o = gn_varint_put(n, dst);
	if (t->qsgd)
		o += gn_varint_put(e0, dst + o);
	for (j = 0, prev = at; j < n; j++) {
		o += gn_varint_put(ck->idx[e0 + j] - prev, dst + o);
		prev = ck->idx[e0 + j] + 1;
	}
	if (!t->qsgd) {
		memcpy(dst + o, ck->val + e0, 4 * (size_t)n);
		o += 4 * n;
	} else if (n) {
		for (j = e0 / t->q.bucket; j <= (e0 + n - 1) / t->q.bucket; j++) {
			memcpy(dst + o, &ck->norms[j], 4);
			o += 4;
		}
		o += gn_qsgd_pack(&t->q, ck->code + e0, n, dst + o);
	}
	*units = e0 + n < ck->nnz ? ck->idx[e0 + n] - at : ck->len - at;
	return o;
}

/* Dense: float32 values, or whole QSGD buckets of positions. */
static long dense_slice(const struct gn_topk *t,
			const struct gn_topk_chunk *ck, u32 at, u8 *dst,
			u32 cap, u32 *units)
{
	u32 n = 0, used = 0;

	if (!t->qsgd) {
		n = ck->len - at < cap / 4 ? ck->len - at : cap / 4;
		if (!n)
			return -ENOSPC;
		memcpy(dst, ck->val + at, 4 * (size_t)n);
		*units = n;
		return 4 * (long)n;
	}
	if (at % t->q.bucket)
		return -EINVAL;
	while (at + n < ck->len) {
		u32 mb = ck->len - at - n < t->q.bucket ? ck->len - at - n :
							   t->q.bucket;
		u32 b = 4 + gn_qsgd_code_bytes(&t->q, mb);

		if (used + b > cap)
			break;
		memcpy(dst + used, &ck->norms[(at + n) / t->q.bucket], 4);
		gn_qsgd_pack(&t->q, ck->code + at + n, mb, dst + used + 4);
		used += b;
		n += mb;
	}
	if (!n)
		return -ENOSPC;
	*units = n;
	return used;
}

long gn_topk_slice(const struct gn_codec_params *p, const void *scratch,
		   u32 aux, const float *x, u32 len, u32 at, u8 *dst, u32 cap,
		   u32 *units)
{
	struct gn_topk_chunk ck;
	struct gn_topk t;

	gn_topk_params(p, &t);
	gn_topk_chunk_view(&t, scratch, &ck);
	if (ck.len != len || ck.form != aux)
		return -EINVAL;
	return aux == GN_TOPK_SPARSE ? sparse_slice(&t, &ck, at, dst, cap, units) :
				       dense_slice(&t, &ck, at, dst, cap, units);
}

u64 gn_topk_whole_bytes(const struct gn_codec_params *p, const void *scratch,
			u32 aux, u32 len)
{
	return ((const struct gn_topk_chunk *)scratch)->bytes;
}

/*
 * A received sparse slice: its entries strictly increasing inside
 * [first, first + count), the body exactly their varints and values, and
 * every value one a sender makes. The entries' positions go to @pos (up
 * to @count of them) when it is not NULL. Return: the entry count, or
 * -EBADMSG.
 */
long gn_topk_parse_sparse(const struct gn_topk *t, u32 len, u32 first,
			  u32 count, const u8 *body, u32 blen, u32 *e0_out,
			  u32 *vals_at)
{
	u32 at = 0, n, e0 = 0, j, r, d, pos = first, nb;
	u64 end = (u64)first + count;

	r = gn_varint_get(body, blen, &n);
	if (!r || n > count)
		return -EBADMSG;
	at += r;
	if (t->qsgd) {
		r = gn_varint_get(body + at, blen - at, &e0);
		if (!r || (u64)e0 + n > len)
			return -EBADMSG;
		at += r;
	}
	for (j = 0; j < n; j++) {
		r = gn_varint_get(body + at, blen - at, &d);
		if (!r || (u64)pos + d >= end)
			return -EBADMSG;
		at += r;
		pos += d + 1;
	}
	*vals_at = at;
	*e0_out = e0;
	if (!t->qsgd) {
		if ((u64)blen - at != 4 * (u64)n || !gn_f32_all_finite(body + at, n))
			return -EBADMSG;
		return n;
	}
	nb = n ? (e0 + n - 1) / t->q.bucket - e0 / t->q.bucket + 1 : 0;
	if ((u64)blen - at != 4 * (u64)nb + gn_qsgd_code_bytes(&t->q, n))
		return -EBADMSG;
	/* Each entry's code under its bucket's norm: no level under 0. */
	for (j = 0; j < nb; j++)
		if (!gn_qsgd_norm_ok(gn_get_le32(body + at + 4 * j)))
			return -EBADMSG;
	if (gn_qsgd_check_codes(&t->q, 1, body + at + 4 * nb, n))
		return -EBADMSG;
	for (j = 0; j < n; j++) {
		u32 b = (e0 + j) / t->q.bucket - e0 / t->q.bucket;

		if (!gn_get_le32(body + at + 4 * b) &&
		    gn_qsgd_code_at(&t->q, body + at + 4 * nb, j))
			return -EBADMSG;
	}
	return n;
}

int gn_topk_check_slice(const struct gn_codec_params *p, u32 len, u32 first,
			u32 count, u32 aux, const u8 *body, u32 blen)
{
	struct gn_topk t;
	u32 e0, vals;

	gn_topk_params(p, &t);
	if (aux == GN_TOPK_SPARSE)
		return gn_topk_parse_sparse(&t, len, first, count, body, blen,
					    &e0, &vals) < 0 ? -EBADMSG : 0;
	if (aux != GN_TOPK_DENSE)
		return -EBADMSG;
	if (t.qsgd)
		return gn_qsgd_check_buckets(&t.q, len, first, count, body, blen);
	return (u64)blen == 4 * (u64)count && gn_f32_all_finite(body, count) ?
		       0 : -EBADMSG;
}
