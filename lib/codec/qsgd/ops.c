// SPDX-License-Identifier: MIT
/*
 * ops.c - "qsgd" in the registry: QSGD as a dense compressor of its own
 * (<gradnet/codec.h>). A slice is whole buckets of values, each its norm
 * and its packed codes; the chunk's scratch holds the norms and one code a
 * value until they are packed. Integer-only.
 */
#include "qsgd_ops.h"

static const char *const norm_names[] = { "l2", "max" };

static const struct gn_codec_param qsgd_params[] = {
	{ .name = "bits", .word = GN_QSGD_W_BITS, .type = GN_PARAM_U32,
	  .def = 4, .lo = 2, .hi = 8, .range = "2, 4 or 8",
	  .what = "bits a value, its sign included: 1, 7 or 127 levels" },
	{ .name = "bucket", .word = GN_QSGD_W_BUCKET, .type = GN_PARAM_U32,
	  .def = 0, .lo = 0, .hi = 65536, .range = "0 (auto) or 16..65536",
	  .what = "values a norm covers; 0: 512, or 128 at 2 bits" },
	{ .name = "norm", .word = GN_QSGD_W_NORM, .type = GN_PARAM_ENUM,
	  .def = 0, .hi = 1, .choices = norm_names,
	  .what = "a bucket's norm: l2, or max (the largest magnitude)" },
};

void gn_qsgd_params(const struct gn_codec_params *p, struct gn_qsgd *q)
{
	gn_qsgd_of(p->w[GN_QSGD_W_BITS], p->w[GN_QSGD_W_BUCKET],
		   p->w[GN_QSGD_W_NORM], q);
}

static int qsgd_check(const struct gn_codec_params *p, u32 chunk,
		      u32 body_cap, char *msg, size_t len)
{
	return gn_qsgd_check_params("qsgd", p->w[GN_QSGD_W_BITS],
				    p->w[GN_QSGD_W_BUCKET], body_cap, msg, len);
}

static u32 qsgd_units(u32 len)
{
	return len;
}

static u32 qsgd_pkts_max(const struct gn_codec_params *p, u32 len, u32 cap)
{
	struct gn_qsgd q;
	u32 per, nb;

	gn_qsgd_params(p, &q);
	per = cap / (4 + gn_qsgd_code_bytes(&q, q.bucket));
	nb = (len + q.bucket - 1) / q.bucket;
	return (nb + per - 1) / per;
}

static size_t qsgd_scratch(const struct gn_codec_params *p, u32 chunk)
{
	struct gn_qsgd q;

	gn_qsgd_params(p, &q);
	return gn_qsgd_norms_bytes(&q, chunk) + chunk;
}

static u64 qsgd_bound(const struct gn_codec_params *p, u32 len)
{
	struct gn_qsgd q;

	gn_qsgd_params(p, &q);
	return gn_qsgd_bytes(&q, len);
}

static u64 qsgd_whole_bytes(const struct gn_codec_params *p,
			    const void *scratch, u32 aux, u32 len)
{
	return qsgd_bound(p, len);
}

/* Whole buckets from value @at (a bucket's start) while they fit @cap. */
static long qsgd_slice(const struct gn_codec_params *p, const void *scratch,
		       u32 aux, const float *x, u32 len, u32 at, u8 *dst,
		       u32 cap, u32 *units)
{
	const float *norms = gn_qsgd_norms((void *)scratch);
	const u8 *codes;
	struct gn_qsgd q;
	u32 n = 0, used = 0;

	gn_qsgd_params(p, &q);
	codes = gn_qsgd_codes((void *)scratch, &q, len);
	if (at % q.bucket)
		return -EINVAL;
	while (at + n < len) {
		u32 mb = len - at - n < q.bucket ? len - at - n : q.bucket;
		u32 b = 4 + gn_qsgd_code_bytes(&q, mb);

		if (used + b > cap)
			break;
		memcpy(dst + used, &norms[(at + n) / q.bucket], 4);
		gn_qsgd_pack(&q, codes + at + n, mb, dst + used + 4);
		used += b;
		n += mb;
	}
	if (!n)
		return -ENOSPC;
	*units = n;
	return used;
}

static int qsgd_check_slice(const struct gn_codec_params *p, u32 len,
			    u32 first, u32 count, u32 aux, const u8 *body,
			    u32 blen)
{
	struct gn_qsgd q;

	gn_qsgd_params(p, &q);
	return aux ? -EBADMSG :
		     gn_qsgd_check_buckets(&q, len, first, count, body, blen);
}

const struct gn_codec_ops gn_codec_qsgd = {
	.name = "qsgd",
	.id = GN_CODEC_QSGD,
	.flags = GN_CODEC_RECOMPRESS | GN_CODEC_STOCHASTIC,
	.params = qsgd_params,
	.nparams = sizeof(qsgd_params) / sizeof(qsgd_params[0]),
	.check = qsgd_check,
	.units = qsgd_units,
	.pkts_max = qsgd_pkts_max,
	.scratch = qsgd_scratch,
	.bound = qsgd_bound,
	.encode = gn_qsgd_op_encode,
	.result = gn_qsgd_op_result,
	.slice = qsgd_slice,
	.whole_bytes = qsgd_whole_bytes,
	.check_slice = qsgd_check_slice,
	.add = gn_qsgd_op_add,
	.decode = gn_qsgd_op_decode,
};
