// SPDX-License-Identifier: MIT
/*
 * ops.c - "topk" in the registry: top-k with error feedback and SparCML's
 * exact sparse allreduce with the dynamic switch to dense
 * (<gradnet/codec.h>); its values float32 or QSGD. Integer-only.
 */
#include "topk.h"

static const char *const norm_names[] = { "l2", "max" };

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
	  .what = "QSGD: values a norm covers; 0: 128" },
	{ .name = "norm", .word = GN_TOPK_W_NORM, .type = GN_PARAM_ENUM,
	  .def = GN_QSGD_SPARSE_NORM, .hi = 1, .choices = norm_names,
	  .what = "QSGD: a bucket's norm: l2 or max" },
};

static int topk_check(const struct gn_codec_params *p, u32 chunk,
		      u32 body_cap, char *msg, size_t len)
{
	u32 block = p->w[GN_TOPK_W_BLOCK], bits = p->w[GN_TOPK_W_BITS];

	if (block && block < 64) {
		snprintf(msg, len, "topk: block=%u: 0 (the chunk) or 64 to 65536 values",
			 block);
		return -EINVAL;
	}
	if (!bits && p->w[GN_TOPK_W_BUCKET]) {
		snprintf(msg, len, "topk: bucket=%u is QSGD's: give bits too",
			 p->w[GN_TOPK_W_BUCKET]);
		return -EINVAL;
	}
	return bits ? gn_qsgd_check_params("topk", bits, p->w[GN_TOPK_W_BUCKET] ?
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
 * Sparse streams are sent only when smaller than dense ones; a sparse
 * slice wastes less than one entry's bytes and its own varints and a
 * norm again at its end (under 32 bytes), so either form takes at most
 * this many packets.
 */
static u32 topk_pkts_max(const struct gn_codec_params *p, u32 len, u32 cap)
{
	struct gn_topk t;
	u64 dense;
	u32 per;

	gn_topk_params(p, &t);
	dense = gn_topk_dense_bytes(&t, len);
	if (t.qsgd) {
		per = cap / (4 + gn_qsgd_code_bytes(&t.q, t.q.bucket));
		per = ((len + t.q.bucket - 1) / t.q.bucket + per - 1) / per;
	} else {
		per = (len + cap / 4 - 1) / (cap / 4);
	}
	return (u32)(dense / (cap - 32) + 2) > per ? (u32)(dense / (cap - 32) + 2) :
						     per;
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
