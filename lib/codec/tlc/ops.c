// SPDX-License-Identifier: MIT
/*
 * ops.c - 3LC in the registry: its parameter, sizes and streams. A chunk's
 * scratch is its quartic groups, its word the scale M; a slice is the
 * zero-run code of a run of groups (<gradnet/codec.h>). Integer-only, but
 * the slicer and the check call the zero-run kernels, SIMD where the CPU
 * has it: the caller runs them inside an FPU section (lib/codec/codec.h).
 */
#include "tlc_impl.h"
#include "codec/codec.h"
#include "tlc_ops.h"

static const struct gn_codec_param tlc_params[] = {
	{ .name = "s", .word = 0, .type = GN_PARAM_F32, .def = 0x3f800000u,
	  .lo = 0x3f800000u, .hi = 0x3fffffffu, .range = "[1, 2)",
	  .what = "sparsity multiplier: M = s * max |x + e|, 1 <= s < 2" },
};

static u32 tlc_units(u32 len)
{
	return (u32)gn_tlc_groups(len);
}

/* A slice leaves at most one byte of its budget unused, and a code byte
 * covers at least one group. */
static u32 tlc_pkts_max(const struct gn_codec_params *p, u32 len, u32 cap)
{
	return tlc_units(len) / (cap - 1) + 2;
}

static size_t tlc_scratch(const struct gn_codec_params *p, u32 chunk)
{
	return gn_tlc_groups(chunk);
}

static long tlc_slice(const struct gn_codec_params *p, const void *scratch,
		      u32 aux, const float *x, u32 len, u32 at, u8 *dst,
		      u32 cap, u32 *units)
{
	const u8 *q = scratch;
	size_t used;
	long n;

	n = gn_zre_encode(q + at, tlc_units(len) - at, dst, cap, &used);
	if (n >= 0 && !used)
		return -ENOSPC;
	*units = (u32)used;
	return n;
}

/* Every group takes at most one byte. */
static u64 tlc_bound(const struct gn_codec_params *p, u32 len)
{
	return tlc_units(len);
}

static u64 tlc_whole_bytes(const struct gn_codec_params *p,
			   const void *scratch, u32 aux, u32 len)
{
	return tlc_bound(p, len);
}

static int tlc_check_slice(const struct gn_codec_params *p, u32 len,
			   u32 first, u32 count, u32 aux, const u8 *body,
			   u32 blen)
{
	/* M is finite and not negative (nor -0). */
	if (!blen || blen > count || aux >= GN_F32_INF_BITS ||
	    gn_zre_check(body, blen, len, first, count))
		return -EBADMSG;
	return 0;
}

const struct gn_codec_ops gn_codec_tlc = {
	.name = "3lc",
	.id = GN_CODEC_3LC,
	.flags = GN_CODEC_EF_REDUCE | GN_CODEC_EF_RESULT | GN_CODEC_RECOMPRESS,
	.params = tlc_params,
	.nparams = sizeof(tlc_params) / sizeof(tlc_params[0]),
	.stream_extra = GN_TLC_SCALE_BYTES,
	.units = tlc_units,
	.pkts_max = tlc_pkts_max,
	.scratch = tlc_scratch,
	.bound = tlc_bound,
	.encode = gn_tlc_op_encode,
	.result = gn_tlc_op_result,
	.slice = tlc_slice,
	.whole_bytes = tlc_whole_bytes,
	.check_slice = tlc_check_slice,
	.add = gn_tlc_op_add,
	.decode = gn_tlc_op_decode,
};
