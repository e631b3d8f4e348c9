// SPDX-License-Identifier: MIT
/*
 * stream.c - a whole chunk as one stream of any registered codec: its word
 * (little-endian u32) then its slice over every unit, cut with no budget.
 * What gradnet-codec writes and reads, and what the conformance tests and
 * fuzzers drive each codec with; packets carry the same bytes split. The
 * float work is the codec's, in the caller's FPU section.
 *
 * A codec with an index round encodes as the chunk's leader: its word is
 * the set's size, and unless the set is the whole chunk its stream holds
 * the set (one index slice) before the values.
 */
#include "codec.h"
#include "index/varint.h"

static bool indexed(const struct gn_codec_ops *c, u32 aux, u32 n)
{
	return c->flags & GN_CODEC_INDEX_ROUND && aux < n;
}

u64 gn_codec_stream_bound(const struct gn_codec_ops *c,
			  const struct gn_codec_params *p, u32 n)
{
	u64 b = GN_CODEC_STREAM_AUX + c->bound(p, n);

	return c->flags & GN_CODEC_INDEX_ROUND ? b + GN_VARINT_MAX * (u64)n : b;
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
	struct gn_codec_call lead = *call;
	u32 aux = 0, used = 0, at = GN_CODEC_STREAM_AUX;
	long len;
	int r;

	if (!n)
		return -EINVAL;
	if (cap < bound || bound - GN_CODEC_STREAM_AUX > 0xffffffffu)
		return -ENOSPC;
	lead.idx = NULL;
	r = c->encode(&lead, x, e_in, e_out, n, n, 0, scratch,
		      c->scratch(call->p, n), &aux);
	if (r)
		return r;
	if (indexed(c, aux, n)) {
		len = gn_index_slice(c->index_set(scratch), aux, 0, dst + at,
				     (u32)(bound - at), &used);
		if (len < 0 || used != aux)
			return -ENOSPC;
		at += (u32)len;
	}
	len = c->slice(call->p, scratch, aux, x, n, 0, dst + at,
		       (u32)(bound - at), &used);
	if (len < 0)
		return len;
	if (used != (indexed(c, aux, n) ? aux : c->units(n)))
		return -ENOSPC;
	gn_put_le32(aux, dst);
	return at + len;
}

/*
 * An index set's values, decoded to out[0, nidx), moved to their
 * positions, the last first, with 0 between them: a position is never
 * below its entry's index, so nothing is overwritten before it has moved.
 * The set's varints are read backwards from its last position @last (a
 * varint ends at a byte whose top bit is clear). Values move as bits:
 * this file is integer-only.
 */
static void spread_back(const u8 *ix, u32 ilen, u32 last, float *out,
			u32 nidx, u32 n)
{
	u32 *o = (u32 *)out, pos = last, next = n, end = ilen, j = nidx, q, v = 0;

	while (j--) {
		u32 from = end - 1, f = o[j];

		while (from && ix[from - 1] & 0x80)
			from--;
		gn_varint_get(ix + from, end - from, &v);
		for (q = pos + 1; q < next; q++)
			o[q] = 0;
		o[pos] = f;
		next = pos;
		if (j)
			pos -= v + 1;
		end = from;
	}
	for (q = 0; q < next; q++)
		o[q] = 0;
}

/* The last position of a checked set of @nidx entries. */
static u32 last_of(const u8 *ix, u32 nidx)
{
	u32 at = 0, j, v = 0, pos = 0;

	for (j = 0; j < nidx; j++) {
		at += gn_varint_get(ix + at, GN_VARINT_MAX, &v);
		pos = j ? pos + 1 + v : v;
	}
	return pos;
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
	struct gn_codec_call whole = *call;
	u32 aux, units = c->units(n);
	long il = 0;

	if (!n)
		return -EINVAL;
	if (len < GN_CODEC_STREAM_AUX || len - GN_CODEC_STREAM_AUX > 0xffffffffu)
		return -EBADMSG;
	aux = gn_get_le32(src);
	src += GN_CODEC_STREAM_AUX;
	len -= GN_CODEC_STREAM_AUX;
	whole.idx = NULL;
	if (indexed(c, aux, n)) {
		il = aux ? gn_index_check(n, aux, src, (u32)len) : -EBADMSG;
		if (il < 0)
			return -EBADMSG;
		units = aux;
	}
	if (c->check_slice(call->p, n, 0, units, aux, src + il,
			   (u32)(len - (size_t)il)))
		return -EBADMSG;
	c->decode(&whole, out, n, 0, units, aux, src + il,
		  (u32)(len - (size_t)il));
	if (indexed(c, aux, n))
		spread_back(src, (u32)il, last_of(src, aux), out, aux, n);
	return 0;
}
