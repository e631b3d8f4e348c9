// SPDX-License-Identifier: MIT
/*
 * stream.c - top-k's sparse streams: a chunk's scratch, what each form
 * costs (the dynamic switch) with each index codec (the smallest list
 * codec per chunk for idx=auto), the Bloom groups and the positions their
 * policy gives values, slices cut from the values or the dense form, and
 * the check a received slice passes before it is decoded. Integer-only:
 * values travel as their bits.
 */
#include "topk.h"
#include "scan.h"
#include "codec/index/varint.h"
#include "codec/value/f16.h"
#include "codec/bits.h"

void gn_topk_params(const struct gn_codec_params *p, struct gn_topk *t)
{
	u32 bits = p->w[GN_TOPK_W_BITS];

	t->density = p->w[GN_TOPK_W_DENSITY];
	t->block = p->w[GN_TOPK_W_BLOCK];
	t->idx = p->w[GN_TOPK_W_IDX];
	/* bits alone asks for QSGD values, as before val existed. */
	t->val = bits ? GN_TOPK_VAL_QSGD : p->w[GN_TOPK_W_VAL];
	t->qsgd = t->val == GN_TOPK_VAL_QSGD;
	if (t->qsgd && !bits)
		bits = GN_TOPK_QSGD_BITS;
	t->fit_bucket = p->w[GN_TOPK_W_BUCKET] ? p->w[GN_TOPK_W_BUCKET] :
						  GN_FIT_BUCKET;
	gn_qsgd_of(t->qsgd ? bits : 8,
		   p->w[GN_TOPK_W_BUCKET] ? p->w[GN_TOPK_W_BUCKET] :
		   GN_QSGD_SPARSE_BUCKET, p->w[GN_TOPK_W_NORM], &t->q);
	gn_bloom_init(&t->bloom, p->w[GN_TOPK_W_FPR]);
}

static bool is_bloom(const struct gn_topk *t)
{
	return gn_idx_is_bloom(t->idx);
}

static bool is_fit(const struct gn_topk *t)
{
	return t->val == GN_TOPK_VAL_FIT;
}

/* Values that come in buckets carry their first one's index, e0. */
static bool bucketed(const struct gn_topk *t)
{
	return t->qsgd || is_fit(t);
}

static u32 min_u32(u32 a, u32 b)
{
	return a < b ? a : b;
}

static size_t up8(size_t n)
{
	return (n + 7) & ~(size_t)7;
}

/*
 * The scratch of a chunk of up to @cap values, laid out at @scratch: a
 * header that the slicer reads back (nnz, form, bytes, len, cap, the
 * index codec, the salt, the entries under a Bloom filter), then the
 * arrays.
 */
void gn_topk_chunk_at(const struct gn_topk *t, void *scratch, u32 cap,
		      struct gn_topk_chunk *ck)
{
	u8 *at = (u8 *)scratch + up8(sizeof(struct gn_topk_chunk));
	size_t chunk = cap, bloom = is_bloom(t);

	memset(ck, 0, sizeof(*ck));
	ck->cap = cap;
	ck->idx = (u32 *)at;
	at += up8(4 * (chunk + GN_TOPK_SCAN_SLACK));
	ck->val = (float *)at;
	at += up8(4 * (chunk + GN_TOPK_SCAN_SLACK));
	ck->hist = (u32 *)at;
	at += 4 * GN_TOPK_BINS;
	ck->blk = (u32 *)at;
	at += up8(8 * (chunk / 64 + 1));
	ck->norms = (float *)at;
	at += up8(t->qsgd ? 4 * (chunk / 16 + 1) : 0);
	ck->code = at;
	at += t->qsgd ? up8(chunk) : 0;
	ck->tru = (u32 *)at;
	at += bloom ? up8(4 * chunk) : 0;
	ck->tval = (float *)at;
	at += bloom ? up8(4 * chunk) : 0;
	ck->gmap = (u64 *)at;
	at += bloom ? 8 * (chunk / 64 + 1) : 0;
	ck->fith = (struct gn_fit_bucket *)at;
	if (!is_fit(t))
		return;
	at += up8(sizeof(struct gn_fit_bucket) * (chunk / 16 + 1));
	ck->fitv = (float *)at;
	at += up8(4 * chunk);
	ck->fkeys = (u64 *)at;
	at += 8 * (size_t)min_u32(cap, t->fit_bucket);
	ck->rank = (u16 *)at;
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
	ck->idx_codec = hdr->idx_codec;
	ck->salt = hdr->salt;
	ck->ntrue = hdr->ntrue;
}

size_t gn_topk_scratch_bytes(const struct gn_topk *t, u32 chunk)
{
	size_t n = up8(sizeof(struct gn_topk_chunk)) +
		   2 * up8(4 * ((size_t)chunk + GN_TOPK_SCAN_SLACK)) +
		   4 * GN_TOPK_BINS + up8(8 * ((size_t)chunk / 64 + 1));

	if (t->qsgd)
		n += up8(4 * ((size_t)chunk / 16 + 1)) + up8(chunk);
	if (is_bloom(t))
		n += 2 * up8(4 * (size_t)chunk) + 8 * ((size_t)chunk / 64 + 1);
	if (is_fit(t))
		n += up8(sizeof(struct gn_fit_bucket) * ((size_t)chunk / 16 + 1)) +
		     up8(4 * (size_t)chunk) +
		     8 * (size_t)min_u32(chunk, t->fit_bucket) + 2 * (size_t)chunk;
	return n;
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

/*
 * A fitted slice's values: the headers of the buckets they touch, then
 * each value's rank and sign. Without @ck (a Bloom group's size rule, before
 * the fit), every header at its largest, ranks of a full bucket's width.
 */
static u64 fit_bytes(const struct gn_topk *t, const struct gn_topk_chunk *ck,
		     u32 e0, u32 n)
{
	u32 f = t->fit_bucket, b, last;
	u64 bytes = 0, bits = 0;

	if (!n)
		return 0;
	last = (e0 + n - 1) / f;
	for (b = e0 / f; b <= last; b++) {
		u32 lo = b * f > e0 ? b * f : e0;
		u32 hi = (b + 1) * f < e0 + n ? (b + 1) * f : e0 + n;
		u32 m = ck ? ck->fith[b].m : f;

		bytes += ck ? gn_fit_hdr_bytes(ck->fith[b].segs) : GN_FIT_HDR_MAX;
		bits += (u64)(hi - lo) * (gn_fit_rank_bits(m) + 1);
	}
	return bytes + (bits + 7) / 8;
}

/* Bytes of the values e0 .. e0 + n - 1 of a sparse slice. */
static u64 vals_bytes(const struct gn_topk *t, const struct gn_topk_chunk *ck,
		      u32 e0, u32 n)
{
	if (is_fit(t))
		return fit_bytes(t, ck, e0, n);
	if (t->val == GN_TOPK_VAL_F16)
		return 2 * (u64)n;
	if (!t->qsgd)
		return 4 * (u64)n;
	if (!n)
		return 0;
	return 4 * (u64)((e0 + n - 1) / t->q.bucket - e0 / t->q.bucket + 1) +
	       gn_qsgd_code_bytes(&t->q, n);
}

/* @n float32 values at @v as float32 or float16 (@width bytes). */
static u32 plain_put(u32 width, const float *v, u32 n, u8 *dst)
{
	u32 j, b;

	if (width == 4) {
		memcpy(dst, v, 4 * (size_t)n);
		return 4 * n;
	}
	for (j = 0; j < n; j++) {
		memcpy(&b, v + j, 4);
		gn_put_le16(gn_f16_of_f32(b), dst + 2 * j);
	}
	return 2 * n;
}

static u32 fit_put(const struct gn_topk *t, const struct gn_topk_chunk *ck,
		   u32 e0, u32 n, u8 *dst)
{
	u32 f = t->fit_bucket, o = 0, b, j, sign;
	struct gn_bits_out bo;

	if (!n)
		return 0;
	for (b = e0 / f; b <= (e0 + n - 1) / f; b++)
		o += gn_fit_hdr_put(&ck->fith[b], dst + o);
	gn_bits_start(&bo, dst + o);
	for (j = e0; j < e0 + n; j++) {
		u32 w = gn_fit_rank_bits(ck->fith[j / f].m);

		memcpy(&sign, ck->val + j, 4);
		gn_bits_put(&bo, ck->rank[j] | (sign >> 31) << w, w + 1);
	}
	return (u32)(gn_bits_end(&bo) - dst);
}

static u32 vals_put(const struct gn_topk *t, const struct gn_topk_chunk *ck,
		    u32 e0, u32 n, u8 *dst)
{
	u32 j, o = 0;

	if (is_fit(t))
		return fit_put(t, ck, e0, n, dst);
	if (!t->qsgd)
		return plain_put(t->val == GN_TOPK_VAL_F16 ? 2 : 4, ck->val + e0,
				 n, dst);
	if (!n)
		return 0;
	for (j = e0 / t->q.bucket; j <= (e0 + n - 1) / t->q.bucket; j++) {
		memcpy(dst + o, &ck->norms[j], 4);
		o += 4;
	}
	return o + gn_qsgd_pack(&t->q, ck->code + e0, n, dst + o);
}

/* The head of a sparse slice: its value count and (bucketed) e0. */
static u64 head_bytes(const struct gn_topk *t, u32 e0, u32 n)
{
	return gn_varint_len(n) + (bucketed(t) ? gn_varint_len(e0) : 0);
}

static u32 head_put(const struct gn_topk *t, u32 e0, u32 n, u8 *dst)
{
	u32 o = gn_varint_put(n, dst);

	return bucketed(t) ? o + gn_varint_put(e0, dst + o) : o;
}

/* The first of @n increasing positions at @pos that is at or after @at. */
static u32 first_from(const u32 *pos, u32 n, u32 at)
{
	u32 lo = 0, hi = n;

	while (lo < hi) {
		u32 mid = lo + (hi - lo) / 2;

		if (pos[mid] < at)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* The first value at or after position @at. */
static u32 entry_from(const struct gn_topk_chunk *ck, u32 at)
{
	return first_from(ck->idx, ck->nnz, at);
}

/* A Bloom group of the chunk's entries, and the values it gives. */
struct grp {
	u32 t0, r, start, span, v0, nv;
};

static bool group_starts(const struct gn_topk_chunk *ck, u32 t)
{
	return ck->gmap[t / 64] >> (t % 64) & 1;
}

static void group_at(const struct gn_topk_chunk *ck, u32 t0, struct grp *g)
{
	u32 r = 1;

	while (t0 + r < ck->ntrue && !group_starts(ck, t0 + r))
		r++;
	g->t0 = t0;
	g->r = r;
	g->start = ck->tru[t0];
	g->span = ck->tru[t0 + r - 1] - g->start + 1;
	g->v0 = entry_from(ck, g->start);
	g->nv = entry_from(ck, g->start + g->span) - g->v0;
}

/* A group's part of a slice: skip, r, span, filter. */
static u64 group_bytes(const struct gn_topk *t, u32 skip, u32 r, u32 span)
{
	return gn_varint_len(skip) + gn_varint_len(r) + gn_varint_len(span) +
	       gn_bloom_bytes(&t->bloom, r);
}

/* A group's body as a slice of its own: the Bloom groups' size rule. */
static u64 lone_bytes(const struct gn_topk *t, u32 v0, u32 nv, u32 r,
		      u32 span)
{
	return head_bytes(t, v0, nv) + gn_varint_len(1) +
	       group_bytes(t, 0, r, span) + vals_bytes(t, NULL, v0, nv);
}

/* The Bloom key of the chunk's stream. */
static u64 chunk_key(const struct gn_topk_chunk *ck)
{
	return gn_bloom_key(ck->salt);
}

struct keep {
	struct gn_topk_chunk *ck;
	const float *rest;
	u32 t, tend;
};

/* A position the policy gives a value: an entry's, or @rest's there. */
static void keep_value(void *arg, u32 q)
{
	struct keep *k = arg;
	struct gn_topk_chunk *ck = k->ck;

	while (k->t < k->tend && ck->tru[k->t] < q)
		k->t++;
	ck->idx[ck->nnz] = q;
	if (k->t < k->tend && ck->tru[k->t] == q)
		memcpy(ck->val + ck->nnz, ck->tval + k->t, 4);
	else
		memcpy(ck->val + ck->nnz, k->rest + q, 4);
	ck->nnz++;
}

/**
 * gn_topk_bloom_build() - Bloom groups of a chunk's entries and the values
 * their policy gives
 * @t: the parameters (a Bloom index codec)
 * @ck: the chunk: its @ntrue entries at tru[] and tval[], its salt; out:
 *	the groups (gmap) and @nnz values at idx[] and val[]
 * @rest: the chunk's values at the positions that are not entries
 *
 * Groups take the next entries, GN_BLOOM_GROUP_MAX at most (fewer for
 * filters past GN_BLOOM_FILTER_MAX bytes); a group whose body as a slice
 * of its own would pass GN_TOPK_BLOOM_BYTES is halved (ceil) until it
 * fits or holds one entry.
 */
void gn_topk_bloom_build(const struct gn_topk *t, struct gn_topk_chunk *ck,
			 const float *rest)
{
	const struct gn_bloom *b = &t->bloom;
	u8 filter[GN_BLOOM_FILTER_MAX];
	u64 key = chunk_key(ck);
	struct gn_bloom_group g;
	u32 t0, r, v0;

	memset(ck->gmap, 0, 8 * ((size_t)ck->ntrue / 64 + 1));
	ck->nnz = 0;
	for (t0 = 0; t0 < ck->ntrue; t0 += r) {
		struct keep k = { .ck = ck, .rest = rest };

		r = ck->ntrue - t0 < b->gmax ? ck->ntrue - t0 : b->gmax;
		/*
		 * P1 and P2 give r values, P0 at least r: groups too large
		 * even so are halved before any query.
		 */
		while (r > 1 &&
		       lone_bytes(t, ck->nnz, r, r, ck->tru[t0 + r - 1] -
						     ck->tru[t0] + 1) >
			       GN_TOPK_BLOOM_BYTES)
			r = (r + 1) / 2;
		/* P0's values go straight in; a group that does not fit is undone. */
		for (v0 = ck->nnz;; ck->nnz = v0) {
			g.start = ck->tru[t0];
			g.span = ck->tru[t0 + r - 1] - g.start + 1;
			g.r = r;
			g.filter = filter;
			gn_bloom_fill(b, key, ck->tru + t0, r, filter);
			k.t = t0;
			k.tend = t0 + r;
			gn_bloom_choose(b, t->idx, key, &g, keep_value, &k);
			if (r == 1 || lone_bytes(t, v0, ck->nnz - v0, r, g.span) <=
					      GN_TOPK_BLOOM_BYTES)
				break;
			r = (r + 1) / 2;
		}
		ck->gmap[t0 / 64] |= 1ull << (t0 % 64);
	}
}

/* Bytes of one sparse slice of every value, with list codec @codec. */
static u64 list_bytes(const struct gn_topk *t, const struct gn_topk_chunk *ck,
		      u32 codec)
{
	return head_bytes(t, 0, ck->nnz) +
	       gn_idx_list_bytes(codec, ck->idx, ck->nnz, 0) +
	       vals_bytes(t, ck, 0, ck->nnz);
}

/* Bytes of one sparse slice of every Bloom group. */
static u64 bloom_bytes(const struct gn_topk *t, const struct gn_topk_chunk *ck)
{
	u64 b = head_bytes(t, 0, ck->nnz) + vals_bytes(t, ck, 0, ck->nnz);
	u32 t0, ng = 0, end = 0;
	struct grp g;

	for (t0 = 0; t0 < ck->ntrue; t0 += g.r, ng++) {
		group_at(ck, t0, &g);
		b += group_bytes(t, g.start - end, g.r, g.span);
		end = g.start + g.span;
	}
	return b + gn_varint_len(ng);
}

u64 gn_topk_dense_bytes(const struct gn_topk *t, u32 n)
{
	if (t->qsgd)
		return gn_qsgd_bytes(&t->q, n);
	return (t->val == GN_TOPK_VAL_F16 ? 2 : 4) * (u64)n;
}

/*
 * The index codec (the smallest list codec for idx=auto, ties to the
 * lower number), then sparse when smaller than dense: the dynamic switch.
 */
void gn_topk_pick_form(const struct gn_topk *t, struct gn_topk_chunk *ck)
{
	u64 dense = gn_topk_dense_bytes(t, ck->len), sparse, b;
	u32 c;

	if (is_bloom(t)) {
		ck->idx_codec = t->idx;
		sparse = bloom_bytes(t, ck);
	} else if (t->idx == GN_TOPK_IDX_AUTO) {
		ck->idx_codec = GN_IDX_VARINT;
		sparse = list_bytes(t, ck, GN_IDX_VARINT);
		for (c = 1; c < GN_IDX_LISTS; c++) {
			b = list_bytes(t, ck, c);
			if (b < sparse) {
				sparse = b;
				ck->idx_codec = c;
			}
		}
	} else {
		ck->idx_codec = t->idx;
		sparse = list_bytes(t, ck, t->idx);
	}
	ck->form = sparse < dense ? GN_TOPK_SPARSE : GN_TOPK_DENSE;
	ck->bytes = (u32)(sparse < dense ? sparse : dense);
}

/* The chunk's word for the form and codec chosen. */
u32 gn_topk_aux(const struct gn_topk_chunk *ck)
{
	if (ck->form == GN_TOPK_DENSE)
		return GN_TOPK_DENSE;
	return GN_TOPK_AUX(GN_TOPK_SPARSE, ck->idx_codec,
			   gn_idx_is_bloom(ck->idx_codec) ? ck->salt : 0);
}

/*
 * How many entries from @e0 a slice at @at of @cap bytes holds, with
 * delta varint indices: what the general loop below gives, without its
 * calls per entry (varints are the default index codec, and sizing them
 * took a third of top-k's encode).
 */
static u32 varint_fit(const struct gn_topk *t, const struct gn_topk_chunk *ck,
		      u32 e0, u32 at, u32 cap)
{
	u32 n = 0, prev = at, l;
	u64 ib = 0;

	for (; e0 + n < ck->nnz; n++, ib += l) {
		l = gn_varint_len(ck->idx[e0 + n] - prev);
		if (head_bytes(t, e0, n + 1) + ib + l +
		    vals_bytes(t, ck, e0, n + 1) > cap)
			break;
		prev = ck->idx[e0 + n] + 1;
	}
	return n;
}

/*
 * A list codec's sparse slice: the most values that fit @cap. A bitmap
 * whose first value lies too far for one packet sends the gap before it
 * as a slice of no values.
 */
static long list_slice(const struct gn_topk *t, const struct gn_topk_chunk *ck,
		       u32 at, u8 *dst, u32 cap, u32 *units)
{
	u32 e0 = entry_from(ck, at), n = 0, o;
	struct gn_idx_size s, next;

	gn_idx_size_init(&s, ck->idx_codec, at);
	if (ck->idx_codec == GN_IDX_VARINT && e0 < ck->nnz) {
		n = varint_fit(t, ck, e0, at, cap);
		if (n)
			goto put;
	}
	while (e0 + n < ck->nnz) {
		next = s;
		gn_idx_size_add(&next, ck->idx[e0 + n]);
		if (head_bytes(t, e0, n + 1) + gn_idx_size_bytes(&next) +
		    vals_bytes(t, ck, e0, n + 1) > cap)
			break;
		s = next;
		n++;
	}
	if (!n && e0 < ck->nnz &&
	    (ck->idx[e0] == at || head_bytes(t, e0, 0) +
					  gn_idx_size_bytes(&s) > cap))
		return -ENOSPC;
put:
	o = head_put(t, e0, n, dst);
	o += gn_idx_list_put(ck->idx_codec, ck->idx + e0, n, at, dst + o);
	o += vals_put(t, ck, e0, n, dst + o);
	*units = e0 + n < ck->nnz ? ck->idx[e0 + n] - at : ck->len - at;
	return o;
}

/* The first entry at or after position @at (Bloom: groups start there). */
static u32 true_from(const struct gn_topk_chunk *ck, u32 at)
{
	return first_from(ck->tru, ck->ntrue, at);
}

/* A Bloom slice: the most whole groups that fit @cap. */
static long bloom_slice(const struct gn_topk *t,
			const struct gn_topk_chunk *ck, u32 at, u8 *dst,
			u32 cap, u32 *units)
{
	u32 t0 = true_from(ck, at), t1 = t0, ng = 0, nv = 0, v0, end = at, o;
	u64 gb = 0, b;
	struct grp g;

	v0 = t0 < ck->ntrue ? entry_from(ck, ck->tru[t0]) : ck->nnz;
	while (t1 < ck->ntrue) {
		group_at(ck, t1, &g);
		b = group_bytes(t, g.start - end, g.r, g.span);
		if (head_bytes(t, v0, nv + g.nv) + gn_varint_len(ng + 1) + gb +
		    b + vals_bytes(t, ck, v0, nv + g.nv) > cap)
			break;
		gb += b;
		nv += g.nv;
		ng++;
		end = g.start + g.span;
		t1 += g.r;
	}
	if (!ng && t0 < ck->ntrue)
		return -ENOSPC;
	o = head_put(t, v0, nv, dst);
	o += gn_varint_put(ng, dst + o);
	for (end = at; t0 < t1; t0 += g.r) {
		group_at(ck, t0, &g);
		o += gn_varint_put(g.start - end, dst + o);
		o += gn_varint_put(g.r, dst + o);
		o += gn_varint_put(g.span, dst + o);
		gn_bloom_fill(&t->bloom, chunk_key(ck), ck->tru + t0, g.r,
			      dst + o);
		o += gn_bloom_bytes(&t->bloom, g.r);
		end = g.start + g.span;
	}
	o += vals_put(t, ck, v0, nv, dst + o);
	*units = t1 < ck->ntrue ? ck->tru[t1] - at : ck->len - at;
	return o;
}

/*
 * Dense: float32 or float16 values (float32 for fitted ones), or whole
 * QSGD buckets of positions.
 */
static long dense_slice(const struct gn_topk *t,
			const struct gn_topk_chunk *ck, u32 at, u8 *dst,
			u32 cap, u32 *units)
{
	u32 n = 0, used = 0, vb = t->val == GN_TOPK_VAL_F16 ? 2 : 4;

	if (!t->qsgd) {
		n = ck->len - at < cap / vb ? ck->len - at : cap / vb;
		if (!n)
			return -ENOSPC;
		*units = n;
		return plain_put(vb, ck->val + at, n, dst);
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
	if (ck.len != len || gn_topk_aux(&ck) != aux)
		return -EINVAL;
	if (ck.form == GN_TOPK_DENSE)
		return dense_slice(&t, &ck, at, dst, cap, units);
	if (gn_idx_is_bloom(ck.idx_codec))
		return bloom_slice(&t, &ck, at, dst, cap, units);
	return list_slice(&t, &ck, at, dst, cap, units);
}

u64 gn_topk_whole_bytes(const struct gn_codec_params *p, const void *scratch,
			u32 aux, u32 len)
{
	return ((const struct gn_topk_chunk *)scratch)->bytes;
}

/* @n float32 or float16 (@width bytes) values, exactly @left bytes. */
static int check_plain(u32 width, const u8 *v, u32 n, u32 left)
{
	u32 j;

	if ((u64)left != (u64)width * n)
		return -EBADMSG;
	if (width == 4)
		return gn_f32_all_finite(v, n) ? 0 : -EBADMSG;
	for (j = 0; j < n; j++)
		if (!gn_f16_ok(gn_get_le16(v + 2 * j)))
			return -EBADMSG;
	return 0;
}

/*
 * Fitted values: a sound header for every bucket they touch, each value
 * inside its bucket's count, ranks below it, padding 0, nothing after.
 */
static int check_fit(const struct gn_topk *t, u32 e0, u32 n, const u8 *v,
		     u32 left)
{
	u32 f = t->fit_bucket, b, j, o = 0, m = 0, w = 0, code;
	const u8 *codes;
	u64 bits = 0;
	long k;

	for (b = e0 / f; n && b <= (e0 + n - 1) / f; b++) {
		k = gn_fit_hdr_check(v + o, left - o, f);
		if (k < 0)
			return -EBADMSG;
		m = gn_fit_hdr_m(v + o);
		if ((e0 + n - 1) / f == b && (e0 + n - 1) % f >= m)
			return -EBADMSG;
		if ((e0 + n - 1) / f != b && m != f)
			return -EBADMSG;
		bits += (u64)(min_u32((b + 1) * f, e0 + n) - (b * f > e0 ? b * f : e0)) *
			(gn_fit_rank_bits(m) + 1);
		o += (u32)k;
	}
	if ((u64)left - o != (bits + 7) / 8)
		return -EBADMSG;
	codes = v + o;
	for (j = 0, bits = 0, o = 0, b = ~0u; j < n; j++) {
		if ((e0 + j) / f != b) {
			b = (e0 + j) / f;
			m = gn_fit_hdr_m(v + o);
			w = gn_fit_rank_bits(m);
			o += gn_fit_hdr_bytes(v[o + 2]);
		}
		code = gn_bits_get(codes, bits, w + 1);
		bits += w + 1;
		if ((code & ((1u << w) - 1)) >= m)
			return -EBADMSG;
	}
	return bits % 8 && codes[bits / 8] >> (bits % 8) ? -EBADMSG : 0;
}

/* @n values from @e0, their bytes exactly the rest of the body. */
static int check_vals(const struct gn_topk *t, u32 e0, u32 n, const u8 *v,
		      u32 left)
{
	u32 j, nb;

	if (is_fit(t))
		return check_fit(t, e0, n, v, left);
	if (!t->qsgd)
		return check_plain(t->val == GN_TOPK_VAL_F16 ? 2 : 4, v, n, left);
	nb = n ? (e0 + n - 1) / t->q.bucket - e0 / t->q.bucket + 1 : 0;
	if ((u64)left != 4 * (u64)nb + gn_qsgd_code_bytes(&t->q, n))
		return -EBADMSG;
	/* Each value's code under its bucket's norm: no level under 0. */
	for (j = 0; j < nb; j++)
		if (!gn_qsgd_norm_ok(gn_get_le32(v + 4 * j)))
			return -EBADMSG;
	if (gn_qsgd_check_codes(&t->q, 1, v + 4 * nb, n))
		return -EBADMSG;
	for (j = 0; j < n; j++) {
		u32 b = (e0 + j) / t->q.bucket - e0 / t->q.bucket;

		if (!gn_get_le32(v + 4 * b) &&
		    gn_qsgd_code_at(&t->q, v + 4 * nb, j))
			return -EBADMSG;
	}
	return 0;
}

/**
 * gn_topk_next_group() - the next group of a checked Bloom index part
 * @t: the parameters
 * @body: the slice's body
 * @at: in, out: the byte where the group starts
 * @end: in, out: the position after the previous group (the slice's
 *	first unit before the first)
 * @g: out: the group
 *
 * Return: the group's entries, r.
 */
u32 gn_topk_next_group(const struct gn_topk *t, const u8 *body, u32 *at,
		       u32 *end, struct gn_bloom_group *g)
{
	u32 skip = 0, k = *at;

	k += gn_varint_get(body + k, 5, &skip);
	k += gn_varint_get(body + k, 5, &g->r);
	k += gn_varint_get(body + k, 5, &g->span);
	g->start = *end + skip;
	g->filter = body + k;
	*at = k + gn_bloom_bytes(&t->bloom, g->r);
	*end = g->start + g->span;
	return g->r;
}

/*
 * A Bloom index part: its groups inside [first, first + count), each of
 * 1 .. gmax entries and a span of at least as many positions, with as
 * many positives (P1, P2); the values they give, @n in all.
 * Return: the part's bytes, or -EBADMSG.
 */
static long check_groups(const struct gn_topk *t, u32 codec, u64 key,
			 const u8 *src, u32 len, u32 first, u32 count, u32 n)
{
	u64 end = first, lim = (u64)first + count, total = 0;
	struct gn_bloom_group g;
	u32 at, ng, j, skip, r, span, k, pos;

	at = gn_varint_get(src, len, &ng);
	if (!at || ng > (len - at) / 4)
		return -EBADMSG;
	for (j = 0; j < ng; j++) {
		k = gn_varint_get(src + at, len - at, &skip);
		if (!k)
			return -EBADMSG;
		at += k;
		k = gn_varint_get(src + at, len - at, &r);
		if (!k || !r || r > t->bloom.gmax)
			return -EBADMSG;
		at += k;
		k = gn_varint_get(src + at, len - at, &span);
		if (!k || span < r || end + skip + span > lim ||
		    gn_bloom_bytes(&t->bloom, r) > len - at - k)
			return -EBADMSG;
		at += k;
		g.start = (u32)(end + skip);
		g.span = span;
		g.r = r;
		g.filter = src + at;
		at += gn_bloom_bytes(&t->bloom, r);
		pos = gn_bloom_positives(&t->bloom, key, &g);
		if (codec != GN_IDX_BLOOM && pos < r)
			return -EBADMSG;
		total += codec == GN_IDX_BLOOM ? pos : r;
		end = (u64)g.start + span;
	}
	return total == n ? (long)at : -EBADMSG;
}

/* The codecs a stream's word may name, given the parameters. */
static bool idx_allowed(const struct gn_topk *t, u32 codec)
{
	if (t->idx == GN_TOPK_IDX_AUTO)
		return codec < GN_IDX_LISTS;
	return codec == t->idx;
}

/**
 * gn_topk_parse_sparse() - check a received sparse slice
 * @t: the parameters
 * @len: the chunk's values
 * @first: the slice's first position
 * @count: its positions
 * @aux: the chunk's word (sparse form)
 * @body: the body
 * @blen: its bytes
 * @sp: out: what the decoder needs
 *
 * Its word names an index codec the parameters allow; its positions are
 * increasing inside [first, first + count), the body exactly its head,
 * index part and values, and every value one a sender makes.
 *
 * Return: the value count, or -EBADMSG.
 */
long gn_topk_parse_sparse(const struct gn_topk *t, u32 len, u32 first,
			  u32 count, u32 aux, const u8 *body, u32 blen,
			  struct gn_topk_sparse *sp)
{
	u32 at, n, e0 = 0, r, codec = GN_TOPK_AUX_IDX(aux);
	long k;

	if (GN_TOPK_AUX_FORM(aux) != GN_TOPK_SPARSE || !idx_allowed(t, codec) ||
	    (!gn_idx_is_bloom(codec) && GN_TOPK_AUX_SALT(aux)))
		return -EBADMSG;
	at = gn_varint_get(body, blen, &n);
	if (!at || n > count)
		return -EBADMSG;
	if (bucketed(t)) {
		r = gn_varint_get(body + at, blen - at, &e0);
		if (!r || (u64)e0 + n > len)
			return -EBADMSG;
		at += r;
	}
	sp->n = n;
	sp->e0 = e0;
	sp->idx_codec = codec;
	sp->key = gn_bloom_key(GN_TOPK_AUX_SALT(aux));
	sp->idx_at = at;
	if (gn_idx_is_bloom(codec))
		k = check_groups(t, codec, sp->key, body + at, blen - at, first,
				 count, n);
	else
		k = gn_idx_list_check(codec, body + at, blen - at, first,
				      count, n);
	if (k < 0)
		return -EBADMSG;
	at += (u32)k;
	sp->vals_at = at;
	return check_vals(t, e0, n, body + at, blen - at) ? -EBADMSG : (long)n;
}

/*
 * The parts of a sparse slice gn_topk_parse_sparse() accepted, found again
 * without checking (or querying a Bloom filter) twice.
 */
void gn_topk_locate_sparse(const struct gn_topk *t, u32 aux, const u8 *body,
			   struct gn_topk_sparse *sp)
{
	struct gn_bloom_group g = { 0 };
	u32 at, ng = 0, j, end = 0;

	sp->e0 = 0;
	at = gn_varint_get(body, GN_VARINT_MAX, &sp->n);
	if (bucketed(t))
		at += gn_varint_get(body + at, GN_VARINT_MAX, &sp->e0);
	sp->idx_codec = GN_TOPK_AUX_IDX(aux);
	sp->key = gn_bloom_key(GN_TOPK_AUX_SALT(aux));
	sp->idx_at = at;
	if (!gn_idx_is_bloom(sp->idx_codec)) {
		sp->vals_at = at + gn_idx_list_skip(sp->idx_codec, body + at,
						    sp->n);
		return;
	}
	at += gn_varint_get(body + at, GN_VARINT_MAX, &ng);
	for (j = 0; j < ng; j++)
		gn_topk_next_group(t, body, &at, &end, &g);
	sp->vals_at = at;
}

int gn_topk_check_slice(const struct gn_codec_params *p, u32 len, u32 first,
			u32 count, u32 aux, const u8 *body, u32 blen)
{
	struct gn_topk_sparse sp;
	struct gn_topk t;

	gn_topk_params(p, &t);
	if (aux != GN_TOPK_DENSE)
		return gn_topk_parse_sparse(&t, len, first, count, aux, body,
					    blen, &sp) < 0 ? -EBADMSG : 0;
	if (t.qsgd)
		return gn_qsgd_check_buckets(&t.q, len, first, count, body, blen);
	return check_plain(t.val == GN_TOPK_VAL_F16 ? 2 : 4, body, count, blen);
}
