// SPDX-License-Identifier: MIT
/*
 * ops.c - dense float32 in the registry, the uncompressed baseline: a
 * slice is values [first, first + count) of the chunk, little-endian, and
 * a result is the exact sum. No scratch: slices are cut from the values.
 * Integer-only.
 */
#include "codec/codec.h"
#include "dense_ops.h"

_Static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__,
	       "dense payloads are copied as little-endian float32");

static u32 dense_units(u32 len)
{
	return len;
}

static u32 dense_pkts_max(const struct gn_codec_params *p, u32 len, u32 cap)
{
	return (len + cap / 4 - 1) / (cap / 4);
}

static size_t dense_scratch(const struct gn_codec_params *p, u32 chunk)
{
	return 0;
}

static long dense_slice(const struct gn_codec_params *p, const void *scratch,
			u32 aux, const float *x, u32 len, u32 at, u8 *dst,
			u32 cap, u32 *units)
{
	u32 n = len - at < cap / 4 ? len - at : cap / 4;

	if (!n)
		return -ENOSPC;
	memcpy(dst, x + at, (size_t)n * 4);
	*units = n;
	return (long)n * 4;
}

static u64 dense_bound(const struct gn_codec_params *p, u32 len)
{
	return (u64)len * 4;
}

static u64 dense_whole_bytes(const struct gn_codec_params *p,
			     const void *scratch, u32 aux, u32 len)
{
	return dense_bound(p, len);
}

/*
 * Values must be finite, contributions and results alike: no rank sends a
 * NaN or infinity (a rank checks its gradient before it sends it, an owner
 * its sum), so such a packet is a forgery and is dropped as malformed
 * before it counts as received; the real packet is still taken when it
 * comes, and every rank ends with the same bits. (Failing the step instead
 * would let one forged packet fail it, and not even consistently: the
 * owner of a result may have completed the step already.)
 */
static int dense_check_slice(const struct gn_codec_params *p, u32 len,
			     u32 first, u32 count, u32 aux, const u8 *body,
			     u32 blen)
{
	if (aux || (u64)blen != (u64)count * 4 ||
	    !gn_f32_all_finite(body, count))
		return -EBADMSG;
	return 0;
}

const struct gn_codec_ops gn_codec_dense = {
	.name = "none",
	.id = GN_CODEC_NONE,
	.flags = GN_CODEC_OWN_ENCODED | GN_CODEC_ELEMENTWISE,
	.units = dense_units,
	.pkts_max = dense_pkts_max,
	.scratch = dense_scratch,
	.bound = dense_bound,
	.encode = gn_dense_op_encode,
	.result = gn_dense_op_result,
	.finish = gn_dense_op_finish,
	.slice = dense_slice,
	.whole_bytes = dense_whole_bytes,
	.check_slice = dense_check_slice,
	.add = gn_dense_op_add,
	.decode = gn_dense_op_decode,
};
