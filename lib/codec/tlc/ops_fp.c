// SPDX-License-Identifier: MIT
/*
 * ops_fp.c - 3LC's float operations for the registry: quantizing
 * contributions and sums with their error feedback, and decoding slices
 * into a sum or a result. Runs inside the caller's FPU section.
 */
#include "tlc_impl.h"
#include "codec/f32.h"
#include "tlc_ops.h"

/* Scales computed per quantizer call: its passes overlap across chunks. */
#define TLC_BATCH 8

int gn_tlc_op_encode(const struct gn_codec_call *c, const float *x,
		     const float *e_in, float *e_out, size_t len, size_t chunk,
		     u64 off, void *scratch, size_t stride, u32 *aux)
{
	float s = gn_f32_of(c->p->w[0]), m[TLC_BATCH];
	size_t at, k = 0, i;
	u8 *q = scratch;
	int r;

	if (stride < gn_tlc_groups(chunk))
		return -EINVAL;
	/* One chunk (a bucket's member) may sit in a longer chunk's slot. */
	if (len <= chunk) {
		r = gn_tlc_quantize_chunks_ex(GN_ISA_BEST, x, e_in, e_out, len,
					      len, s, gn_tlc_nt_flags(c->ef_len),
					      q, m);
		aux[0] = gn_f32_bits(m[0]);
		return r;
	}
	if (stride != gn_tlc_groups(chunk))
		return -EINVAL;
	for (at = 0; at < len; at += TLC_BATCH * chunk) {
		size_t n = len - at < TLC_BATCH * chunk ? len - at :
							   TLC_BATCH * chunk;

		r = gn_tlc_quantize_chunks_ex(GN_ISA_BEST, x + at, e_in + at,
					      e_out + at, n, chunk, s,
					      gn_tlc_nt_flags(c->ef_len),
					      q + k * stride, m);
		if (r)
			return r;
		for (i = 0; i < gn_tlc_chunk_count(n, chunk); i++)
			aux[k++] = gn_f32_bits(m[i]);
	}
	return 0;
}

/* The divisor for averages, exact: world < 2^24. */
static float result_scale(const struct gn_codec_call *c, float m)
{
	return c->average ? m / (float)c->world : m;
}

/* The sum is replaced by the result it decodes to, scaled. */
int gn_tlc_op_result(const struct gn_codec_call *c, float *sum,
		     const float *e_in, float *e_out, size_t len, u64 off,
		     void *scratch, u32 *aux)
{
	size_t g = gn_tlc_groups(len);
	float m = 0;

	if (gn_tlc_quantize_chunks_ex(GN_ISA_BEST, sum, e_in, e_out, len, len,
				      gn_f32_of(c->p->w[0]),
				      gn_tlc_nt_flags(c->ef_len), scratch, &m))
		return -EDOM;
	*aux = gn_f32_bits(m);
	memset(sum, 0, len * sizeof(float));
	gn_tlc_decode_slice(scratch, g, result_scale(c, m), sum, len, 0, g);
	return 0;
}

void gn_tlc_op_add(const struct gn_codec_call *c, float *acc, u32 len,
		   u32 first, u32 count, u32 aux, const u8 *body, u32 blen)
{
	gn_tlc_decode_slice(body, blen, gn_f32_of(aux), acc, len, first, count);
}

/*
 * Zero the elements of groups [first, first + count) of a chunk: a slice
 * of the result is decoded into zeros, and the caller's tensor still holds
 * its gradient. One range per partition.
 */
static void clear_groups(float *out, size_t len, u32 first, u32 count)
{
	size_t g = gn_tlc_groups(len), k;

	for (k = 0; k < GN_TLC_GROUP; k++) {
		size_t lo = k * g + first, hi = lo + count;

		if (lo >= len)
			break;
		memset(out + lo, 0, ((hi < len ? hi : len) - lo) * sizeof(float));
	}
}

void gn_tlc_op_decode(const struct gn_codec_call *c, float *out, u32 len,
		      u32 first, u32 count, u32 aux, const u8 *body, u32 blen)
{
	clear_groups(out, len, first, count);
	gn_tlc_decode_slice(body, blen, result_scale(c, gn_f32_of(aux)), out, len,
			    first, count);
}
