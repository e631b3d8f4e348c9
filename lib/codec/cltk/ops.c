// SPDX-License-Identifier: MIT
/*
 * ops.c - "cltk" in the registry: ScaleCom's cyclic local top-k with a
 * low-pass filtered memory (<gradnet/codec.h>). Every rank sends its
 * values at the index set that the chunk's leader selected, so the owner
 * sums them exactly, entry by entry, and the result is as sparse as one
 * contribution. Its streams are those values, float32 or QSGD, entries
 * [first, first + count) a slice. Integer-only.
 */
#include "cltk.h"

static const char *const norm_names[] = { "l2", "max" };

static const struct gn_codec_param cltk_params[] = {
	{ .name = "density", .word = GN_CLTK_W_DENSITY, .type = GN_PARAM_F32,
	  .def = 0x3c23d70au, .lo = 1, .hi = 0x3f800000u, .range = "(0, 1]",
	  .what = "the fraction of each chunk's values sent: k = ceil(density * n)" },
	{ .name = "beta", .word = GN_CLTK_W_BETA, .type = GN_PARAM_F32,
	  .def = GN_CLTK_BETA_ONE, .lo = 1, .hi = GN_CLTK_BETA_ONE,
	  .range = "(0, 1]",
	  .what = "the memory's low-pass filter: m = (1 - beta) m + beta (p - [p]_I)" },
	{ .name = "warmup", .word = GN_CLTK_W_WARMUP, .type = GN_PARAM_U32,
	  .def = 0, .lo = 0, .hi = 0x7fffffffu,
	  .what = "the first steps sent dense (no selection)" },
	{ .name = "bits", .word = GN_CLTK_W_BITS, .type = GN_PARAM_U32,
	  .def = 0, .lo = 0, .hi = 8, .range = "0 (float32), 2, 4 or 8",
	  .what = "the values' bits: 0 float32, else QSGD codes" },
	{ .name = "bucket", .word = GN_CLTK_W_BUCKET, .type = GN_PARAM_U32,
	  .def = 0, .lo = 0, .hi = 65536, .range = "0 (auto) or 16..65536",
	  .what = "QSGD: values a norm covers; 0: 128" },
	{ .name = "norm", .word = GN_CLTK_W_NORM, .type = GN_PARAM_ENUM,
	  .def = GN_QSGD_SPARSE_NORM, .hi = 1, .choices = norm_names,
	  .what = "QSGD: a bucket's norm: l2 or max" },
};

void gn_cltk_params(const struct gn_codec_params *p, struct gn_cltk *k)
{
	u32 bits = p->w[GN_CLTK_W_BITS];

	/*
	 * Top-k's selection and scratch with its defaults but for these:
	 * varint indices, float32 or QSGD values, no Bloom filter (the
	 * scratch's size and layout follow every field).
	 */
	memset(&k->sel, 0, sizeof(k->sel));
	k->sel.density = p->w[GN_CLTK_W_DENSITY];
	k->sel.block = 0;
	k->sel.idx = GN_IDX_VARINT;
	k->sel.val = bits ? GN_TOPK_VAL_QSGD : GN_TOPK_VAL_F32;
	k->sel.qsgd = bits != 0;
	gn_qsgd_of(bits ? bits : 8, p->w[GN_CLTK_W_BUCKET] ?
		   p->w[GN_CLTK_W_BUCKET] : GN_QSGD_SPARSE_BUCKET,
		   p->w[GN_CLTK_W_NORM], &k->sel.q);
	k->beta = p->w[GN_CLTK_W_BETA];
	k->warmup = p->w[GN_CLTK_W_WARMUP];
}

static size_t up8(size_t n)
{
	return (n + 7) & ~(size_t)7;
}

void gn_cltk_chunk_at(const struct gn_cltk *k, const void *scratch, u32 cap,
		      struct gn_cltk_chunk *ch)
{
	u8 *at = (u8 *)scratch;

	ch->hdr = (struct gn_cltk_hdr *)at;
	at += up8(sizeof(struct gn_cltk_hdr));
	gn_topk_chunk_at(&k->sel, at, cap, &ch->ck);
	at += up8(gn_topk_scratch_bytes(&k->sel, cap));
	ch->mem = (float *)at;
}

size_t gn_cltk_scratch_bytes(const struct gn_cltk *k, u32 chunk)
{
	return up8(sizeof(struct gn_cltk_hdr)) +
	       up8(gn_topk_scratch_bytes(&k->sel, chunk)) + 4 * (size_t)chunk;
}

/* Bytes of @n values as one slice: float32, or QSGD buckets. */
u64 gn_cltk_values_bytes(const struct gn_cltk *k, u32 n)
{
	return k->sel.qsgd ? gn_qsgd_bytes(&k->sel.q, n) : 4 * (u64)n;
}

static int cltk_check(const struct gn_codec_params *p, u32 chunk,
		      u32 body_cap, char *msg, size_t len)
{
	u32 bits = p->w[GN_CLTK_W_BITS];

	if (!bits && p->w[GN_CLTK_W_BUCKET]) {
		snprintf(msg, len, "cltk: bucket=%u is QSGD's: give bits too",
			 p->w[GN_CLTK_W_BUCKET]);
		return -EINVAL;
	}
	return bits ? gn_qsgd_check_params("cltk", bits, p->w[GN_CLTK_W_BUCKET] ?
					    p->w[GN_CLTK_W_BUCKET] :
					    GN_QSGD_SPARSE_BUCKET,
					   body_cap, msg, len) : 0;
}

static u32 cltk_units(u32 len)
{
	return len;
}

/* A message's values are at most the chunk's, so at most its packets. */
static u32 cltk_pkts_max(const struct gn_codec_params *p, u32 len, u32 cap)
{
	struct gn_cltk k;
	u32 per;

	gn_cltk_params(p, &k);
	if (!k.sel.qsgd)
		return (len + cap / 4 - 1) / (cap / 4);
	per = cap / (4 + gn_qsgd_code_bytes(&k.sel.q, k.sel.q.bucket));
	return ((len + k.sel.q.bucket - 1) / k.sel.q.bucket + per - 1) / per;
}

static size_t cltk_scratch(const struct gn_codec_params *p, u32 chunk)
{
	struct gn_cltk k;

	gn_cltk_params(p, &k);
	return gn_cltk_scratch_bytes(&k, chunk);
}

static u64 cltk_bound(const struct gn_codec_params *p, u32 len)
{
	struct gn_cltk k;

	gn_cltk_params(p, &k);
	return gn_cltk_values_bytes(&k, len);
}

/*
 * Dense while the warm-up lasts, k = ceil(density * n) entries after it
 * (the whole chunk when k reaches n).
 */
u32 gn_cltk_set_len(const struct gn_cltk *k, u32 step, u32 len)
{
	return step < k->warmup ? len : gn_topk_k(k->sel.density, len);
}

static u32 cltk_index_len(const struct gn_codec_params *p, u32 step, u32 len)
{
	struct gn_cltk k;

	gn_cltk_params(p, &k);
	return gn_cltk_set_len(&k, step, len);
}

static const u32 *cltk_index_set(const void *scratch)
{
	struct gn_cltk_chunk ch;
	struct gn_cltk k = { .sel = { .qsgd = false } };

	/* The set's place does not depend on the parameters. */
	gn_cltk_chunk_at(&k, scratch, ((const struct gn_cltk_hdr *)scratch)->cap,
			 &ch);
	return ch.ck.idx;
}

/* Values of entries [at, ...) that fit @cap: float32, or whole buckets. */
static long cltk_slice(const struct gn_codec_params *p, const void *scratch,
		       u32 aux, const float *x, u32 len, u32 at, u8 *dst,
		       u32 cap, u32 *units)
{
	const struct gn_cltk_hdr *hdr = scratch;
	struct gn_cltk_chunk ch;
	struct gn_qsgd *q;
	struct gn_cltk k;
	u32 n = 0, used = 0;

	gn_cltk_params(p, &k);
	gn_cltk_chunk_at(&k, scratch, hdr->cap, &ch);
	if (hdr->len != len || hdr->nidx != aux || at >= aux)
		return -EINVAL;
	if (!k.sel.qsgd) {
		n = aux - at < cap / 4 ? aux - at : cap / 4;
		if (!n)
			return -ENOSPC;
		memcpy(dst, ch.ck.val + at, 4 * (size_t)n);
		*units = n;
		return 4 * (long)n;
	}
	q = &k.sel.q;
	if (at % q->bucket)
		return -EINVAL;
	while (at + n < aux) {
		u32 mb = aux - at - n < q->bucket ? aux - at - n : q->bucket;
		u32 b = 4 + gn_qsgd_code_bytes(q, mb);

		if (used + b > cap)
			break;
		memcpy(dst + used, &ch.ck.norms[(at + n) / q->bucket], 4);
		gn_qsgd_pack(q, ch.ck.code + at + n, mb, dst + used + 4);
		used += b;
		n += mb;
	}
	if (!n)
		return -ENOSPC;
	*units = n;
	return used;
}

/*
 * A WHOLE packet's count is the chunk's values, so only a chunk whose set
 * is the whole chunk goes as one.
 */
static u64 cltk_whole_bytes(const struct gn_codec_params *p,
			    const void *scratch, u32 aux, u32 len)
{
	struct gn_cltk k;

	gn_cltk_params(p, &k);
	return aux == len ? gn_cltk_values_bytes(&k, len) : ~0ull;
}

/* Entries [first, first + count) of a set of @aux: their values. */
static int cltk_check_slice(const struct gn_codec_params *p, u32 len,
			    u32 first, u32 count, u32 aux, const u8 *body,
			    u32 blen)
{
	struct gn_cltk k;

	gn_cltk_params(p, &k);
	if (!aux || aux > len || (u64)first + count > aux)
		return -EBADMSG;
	if (k.sel.qsgd)
		return gn_qsgd_check_buckets(&k.sel.q, aux, first, count, body,
					     blen);
	return (u64)blen == 4 * (u64)count && gn_f32_all_finite(body, count) ?
		       0 : -EBADMSG;
}

const struct gn_codec_ops gn_codec_cltk = {
	.name = "cltk",
	.id = GN_CODEC_CLTK,
	.flags = GN_CODEC_EF_REDUCE | GN_CODEC_OWN_ENCODED |
		 GN_CODEC_STOCHASTIC | GN_CODEC_INDEX_ROUND,
	.params = cltk_params,
	.nparams = sizeof(cltk_params) / sizeof(cltk_params[0]),
	.check = cltk_check,
	.units = cltk_units,
	.pkts_max = cltk_pkts_max,
	.scratch = cltk_scratch,
	.bound = cltk_bound,
	.encode = gn_cltk_op_encode,
	.own = gn_cltk_op_own,
	.result = gn_cltk_op_result,
	.slice = cltk_slice,
	.whole_bytes = cltk_whole_bytes,
	.check_slice = cltk_check_slice,
	.add = gn_cltk_op_add,
	.decode = gn_cltk_op_decode,
	.index_len = cltk_index_len,
	.index_set = cltk_index_set,
};
