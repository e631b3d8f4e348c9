// SPDX-License-Identifier: MIT
/*
 * ops.c - "topk" in the registry: top-k with error feedback and SparCML's
 * exact sparse allreduce with the dynamic switch to dense
 * (<gradnet/codec.h>); its stream's index codec (delta varints, bitmap,
 * run lengths, a Bloom filter) and value codec (float32, float16, QSGD)
 * are parameters. Integer-only.
 */
#include "topk.h"

static const char *const norm_names[] = { "l2", "max" };
static const char *const idx_names[] = {
	[GN_IDX_VARINT] = "varint", [GN_IDX_BITMAP] = "bitmap",
	[GN_IDX_RLE] = "rle", [GN_IDX_BLOOM] = "bloom",
	[GN_IDX_BLOOM_P1] = "bloom-p1", [GN_IDX_BLOOM_P2] = "bloom-p2",
	[GN_TOPK_IDX_AUTO] = "auto",
};
static const char *const val_names[] = {
	[GN_TOPK_VAL_F32] = "f32", [GN_TOPK_VAL_F16] = "f16",
	[GN_TOPK_VAL_QSGD] = "qsgd", [GN_TOPK_VAL_FIT] = "fit",
};

/* 1e-6 as float32 bits: the smallest false-positive rate. */
#define TOPK_FPR_MIN 0x358637bdu

static const struct gn_codec_param topk_params[] = {
	{ .name = "density", .word = GN_TOPK_W_DENSITY, .type = GN_PARAM_F32,
	  .def = 0x3c23d70au, .lo = 1, .hi = 0x3f800000u, .range = "(0, 1]",
	  .what = "the fraction of each block's values sent: k = ceil(density * m)" },
	{ .name = "block", .word = GN_TOPK_W_BLOCK, .type = GN_PARAM_U32,
	  .def = 0, .lo = 0, .hi = 65536, .range = "0 (the chunk) or 64..65536",
	  .what = "values a selection covers; 0: the whole chunk (SparCML: 512)" },
	{ .name = "bits", .word = GN_TOPK_W_BITS, .type = GN_PARAM_U32,
	  .def = 0, .lo = 0, .hi = 8, .range = "0 (float32), 2, 4 or 8",
	  .what = "the values' bits: 0 float32, else QSGD codes" },
	{ .name = "bucket", .word = GN_TOPK_W_BUCKET, .type = GN_PARAM_U32,
	  .def = 0, .lo = 0, .hi = 65536, .range = "0 (auto) or 16..65536",
	  .what = "QSGD: values a norm covers; 0: 128; fit: values a curve covers; 0: 256" },
	{ .name = "norm", .word = GN_TOPK_W_NORM, .type = GN_PARAM_ENUM,
	  .def = GN_QSGD_SPARSE_NORM, .hi = 1, .choices = norm_names,
	  .what = "QSGD: a bucket's norm: l2 or max" },
	{ .name = "idx", .word = GN_TOPK_W_IDX, .type = GN_PARAM_ENUM,
	  .def = GN_IDX_VARINT, .hi = GN_TOPK_IDX_AUTO, .choices = idx_names,
	  .what = "the index codec: delta varints, a bitmap, run lengths, a Bloom filter (P0 exact, P1 drawn, P2 conflict sets), or auto: the smallest list codec per chunk" },
	{ .name = "fpr", .word = GN_TOPK_W_FPR, .type = GN_PARAM_F32,
	  .def = 0, .lo = 0, .hi = 0x3f000000u,
	  .range = "0 (0.001) or 1e-6 to 0.5",
	  .what = "the Bloom filter's false-positive rate: m = -r ln(fpr) / (ln 2)^2 bits" },
	{ .name = "val", .word = GN_TOPK_W_VAL, .type = GN_PARAM_ENUM,
	  .def = GN_TOPK_VAL_F32, .hi = GN_TOPK_VAL_FIT, .choices = val_names,
	  .what = "the value codec: float32, float16, QSGD (bits alone also chooses it) or fit: curves of sorted magnitudes, a rank and sign a value" },
};

static int topk_check(const struct gn_codec_params *p, u32 chunk,
		      u32 body_cap, char *msg, size_t len)
{
	u32 block = p->w[GN_TOPK_W_BLOCK], bits = p->w[GN_TOPK_W_BITS];
	u32 val = p->w[GN_TOPK_W_VAL], idx = p->w[GN_TOPK_W_IDX];
	u32 fpr = p->w[GN_TOPK_W_FPR];
	bool qsgd = bits || val == GN_TOPK_VAL_QSGD;

	if (block && block < 64) {
		snprintf(msg, len, "topk: block=%u: 0 (the chunk) or 64 to 65536 values",
			 block);
		return -EINVAL;
	}
	if (bits && val != GN_TOPK_VAL_F32 && val != GN_TOPK_VAL_QSGD) {
		snprintf(msg, len, "topk: bits=%u is QSGD's: val=%s takes none",
			 bits, val_names[val]);
		return -EINVAL;
	}
	if (!qsgd && val != GN_TOPK_VAL_FIT && p->w[GN_TOPK_W_BUCKET]) {
		snprintf(msg, len, "topk: bucket=%u is QSGD's or fit's: give bits, val=qsgd or val=fit too",
			 p->w[GN_TOPK_W_BUCKET]);
		return -EINVAL;
	}
	if (val == GN_TOPK_VAL_FIT && p->w[GN_TOPK_W_BUCKET] &&
	    p->w[GN_TOPK_W_BUCKET] < 16) {
		snprintf(msg, len, "topk: bucket=%u: 0 (256) or 16 to 65536 values a curve covers",
			 p->w[GN_TOPK_W_BUCKET]);
		return -EINVAL;
	}
	if (fpr && fpr < TOPK_FPR_MIN) {
		snprintf(msg, len, "topk: fpr=%#x: 0 (0.001) or 1e-6 to 0.5", fpr);
		return -EINVAL;
	}
	if (fpr && !gn_idx_is_bloom(idx)) {
		snprintf(msg, len, "topk: fpr is the Bloom filter's: give idx=bloom, bloom-p1 or bloom-p2 too");
		return -EINVAL;
	}
	if (gn_idx_is_bloom(idx) && body_cap < GN_TOPK_BLOOM_CAP) {
		snprintf(msg, len, "topk: idx=%s: a packet at this MTU carries %u body bytes; Bloom groups need %u",
			 idx_names[idx], body_cap, GN_TOPK_BLOOM_CAP);
		return -EINVAL;
	}
	return qsgd ? gn_qsgd_check_params("topk", bits ? bits : GN_TOPK_QSGD_BITS,
					   p->w[GN_TOPK_W_BUCKET] ?
					   p->w[GN_TOPK_W_BUCKET] :
					   GN_QSGD_SPARSE_BUCKET,
					   body_cap, msg, len) : 0;
}

static u32 topk_units(u32 len)
{
	return len;
}

static u64 topk_bound(const struct gn_codec_params *p, u32 len)
{
	struct gn_topk t;

	gn_topk_params(p, &t);
	return gn_topk_dense_bytes(&t, len);
}

/*
 * Sparse streams are sent only when smaller than dense ones. A varint
 * slice wastes less than one value's bytes and its own varints and a norm
 * again at its end (under 32 bytes). A bitmap or run-length slice ends
 * early only for a value that would add more than half a packet: a gap
 * of over 4 cap - 128 positions (bitmap), or with fewer than (cap - 32)
 * / 12 values in it (run lengths of at most 8 bytes a run, values of at
 * most 4). A Bloom slice wastes less than one group, GN_TOPK_BLOOM_BYTES
 * and its varints (under 288 with its own head). Fitted values repeat a
 * bucket's header in each slice, and may waste one more. Either form
 * takes at most this many packets.
 */
static u32 sparse_pkts(const struct gn_topk *t, u32 idx, u32 len, u32 cap,
		       u64 dense)
{
	u32 fit = t->val == GN_TOPK_VAL_FIT ? 2 * GN_FIT_HDR_MAX : 0;

	if (gn_idx_is_bloom(idx))
		return (u32)(dense / (cap - 288 - fit) + 3);
	if (idx == GN_IDX_VARINT)
		return (u32)(dense / (cap - 32 - fit) + 2);
	return len / ((cap - 32 - fit) / 12) + len / (4 * cap - 128) + 3;
}

static u32 topk_pkts_max(const struct gn_codec_params *p, u32 len, u32 cap)
{
	struct gn_topk t;
	u32 per, most, c;
	u64 dense;

	gn_topk_params(p, &t);
	dense = gn_topk_dense_bytes(&t, len);
	if (t.qsgd) {
		per = cap / (4 + gn_qsgd_code_bytes(&t.q, t.q.bucket));
		per = ((len + t.q.bucket - 1) / t.q.bucket + per - 1) / per;
	} else {
		u32 vb = t.val == GN_TOPK_VAL_F16 ? 2 : 4;

		per = (len + cap / vb - 1) / (cap / vb);
	}
	most = t.idx == GN_TOPK_IDX_AUTO ? 0 : sparse_pkts(&t, t.idx, len, cap, dense);
	for (c = 0; t.idx == GN_TOPK_IDX_AUTO && c < GN_IDX_LISTS; c++)
		if (sparse_pkts(&t, c, len, cap, dense) > most)
			most = sparse_pkts(&t, c, len, cap, dense);
	return most > per ? most : per;
}

static size_t topk_scratch(const struct gn_codec_params *p, u32 chunk)
{
	struct gn_topk t;

	gn_topk_params(p, &t);
	return gn_topk_scratch_bytes(&t, chunk);
}

const struct gn_codec_ops gn_codec_topk = {
	.name = "topk",
	.id = GN_CODEC_TOPK,
	.flags = GN_CODEC_EF_REDUCE | GN_CODEC_OWN_ENCODED |
		 GN_CODEC_STOCHASTIC,
	.params = topk_params,
	.nparams = sizeof(topk_params) / sizeof(topk_params[0]),
	.check = topk_check,
	.units = topk_units,
	.pkts_max = topk_pkts_max,
	.scratch = topk_scratch,
	.bound = topk_bound,
	.encode = gn_topk_op_encode,
	.own = gn_topk_op_own,
	.result = gn_topk_op_result,
	.slice = gn_topk_slice,
	.whole_bytes = gn_topk_whole_bytes,
	.check_slice = gn_topk_check_slice,
	.add = gn_topk_op_add,
	.decode = gn_topk_op_decode,
};
