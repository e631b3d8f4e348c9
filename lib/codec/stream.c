// SPDX-License-Identifier: MIT
/*
 * stream.c - a whole chunk as one stream of any registered codec: its word
 * (little-endian u32) then its slice over every unit, cut with no budget.
 * What gradnet-codec writes and reads, and what the conformance tests and
 * fuzzers drive each codec with; packets carry the same bytes split. The
 * float work is the codec's, in the caller's FPU section.
 */
#include "codec.h"

u64 gn_codec_stream_bound(const struct gn_codec_ops *c,
			  const struct gn_codec_params *p, u32 n)
{
	return GN_CODEC_STREAM_AUX + c->bound(p, n);
}

/**
 * gn_codec_stream_encode() - encode @n values as one chunk into @dst
 * @c: the codec
 * @call: its parameters, seed, world and average (an average divides what
 *	@decode gives, not what is encoded)
 * @x: the values
 * @e_in: the error feedback (NULL without GN_CODEC_EF_REDUCE)
 * @e_out: the new error feedback, may be @e_in (NULL without)
 * @n: values, at least 1
 * @scratch: @c->scratch(@call->p, @n) bytes
 * @dst: out
 * @cap: bytes at @dst, at least gn_codec_stream_bound()
 *
 * Return: the stream's length; -ENOSPC if @cap is short, -EDOM for a value
 * that is not finite (@e_out then unspecified, @e_in untouched when it
 * is another buffer), -EINVAL.
 */
long gn_codec_stream_encode(const struct gn_codec_ops *c,
			    const struct gn_codec_call *call, const float *x,
			    const float *e_in, float *e_out, u32 n,
			    void *scratch, u8 *dst, size_t cap)
{
	u64 bound = gn_codec_stream_bound(c, call->p, n);
	u32 aux = 0, used = 0;
	long len;
	int r;

	if (!n)
		return -EINVAL;
	if (cap < bound || bound - GN_CODEC_STREAM_AUX > 0xffffffffu)
		return -ENOSPC;
	r = c->encode(call, x, e_in, e_out, n, n, 0, scratch,
		      c->scratch(call->p, n), &aux);
	if (r)
		return r;
	len = c->slice(call->p, scratch, aux, x, n, 0,
		       dst + GN_CODEC_STREAM_AUX,
		       (u32)(bound - GN_CODEC_STREAM_AUX), &used);
	if (len < 0)
		return len;
	if (used != c->units(n))
		return -ENOSPC;
	gn_put_le32(aux, dst);
	return GN_CODEC_STREAM_AUX + len;
}

/**
 * gn_codec_stream_decode() - decode a chunk stream of @n values into @out
 * @c: the codec
 * @call: its parameters (and average, world)
 * @src: the stream
 * @len: its length
 * @out: @n values, overwritten with what the stream stands for
 * @n: values the chunk has
 *
 * Return: 0; -EBADMSG for a stream the codec's check refuses (@out
 * untouched), -EINVAL.
 */
int gn_codec_stream_decode(const struct gn_codec_ops *c,
			   const struct gn_codec_call *call, const u8 *src,
			   size_t len, float *out, u32 n)
{
	u32 aux, units = c->units(n);

	if (!n)
		return -EINVAL;
	if (len < GN_CODEC_STREAM_AUX || len - GN_CODEC_STREAM_AUX > 0xffffffffu)
		return -EBADMSG;
	aux = gn_get_le32(src);
	src += GN_CODEC_STREAM_AUX;
	len -= GN_CODEC_STREAM_AUX;
	if (c->check_slice(call->p, n, 0, units, aux, src, (u32)len))
		return -EBADMSG;
	c->decode(call, out, n, 0, units, aux, src, (u32)len);
	return 0;
}
