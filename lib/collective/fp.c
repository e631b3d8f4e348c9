// SPDX-License-Identifier: MIT
/*
 * fp.c - the collective's floating-point unit: quantizing with error
 * feedback, adding contributions, decoding and scaling results. The rest
 * of lib/delivery and lib/collective is integer-only and holds floats
 * only by pointer or as their bits, so in the kernel this file and the
 * codec are the only ones built with the FPU enabled, and each function
 * here is one FPU section (gn_simd_begin/end; free in userspace).
 */
#include "core.h"

_Static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__,
	       "dense payloads are copied as little-endian float32");

static float bits_float(u32 b)
{
	float f;

	memcpy(&f, &b, sizeof(f));
	return f;
}

/* The divisor for averages, exact: world < 2^24. */
static float result_scale(const struct gn_ctx *ctx, const struct gn_tensor *t,
			  float m)
{
	return t->flags & GN_TENSOR_AVERAGE ? m / (float)ctx->world : m;
}

static void dense_result(const struct gn_ctx *ctx, const struct gn_tensor *t,
			 float *v, u32 count)
{
	u32 i;

	if (t->flags & GN_TENSOR_AVERAGE)
		for (i = 0; i < count; i++)
			v[i] = v[i] / (float)ctx->world;
}

/*
 * No NaN or infinity in the @n float32 at @v (aligned or not, as in a
 * packet)? A bit test, integer-only, so any file may call it: an exponent
 * of all ones plus one carries into bit 31, and no other exponent does.
 * And, add, or: four values in three SSE2 instructions (an unsigned
 * maximum, which SSE2 lacks, took twice the instructions).
 */
bool gn_all_finite(const void *v, size_t n)
{
	u32 carry = 0, b;
	size_t i;

	for (i = 0; i < n; i++) {
		memcpy(&b, (const u8 *)v + 4 * i, sizeof(b));
		carry |= (b & 0x7f800000u) + 0x00800000u;
	}
	return !(carry & 0x80000000u);
}

/*
 * Chunks [off, off + len) of the caller's gradient, reduce direction.
 * Error feedback is double-buffered and quantized a few chunks per call:
 * the buffer written is read again only at the next step, after the whole
 * tensor (or, in gn_fp_gather_chunk(), the own shard) has gone through
 * the caches, so the store flags come from the buffer's size, not the
 * call's.
 */
int gn_fp_quantize(const struct gn_tensor *t, float *data, size_t off,
		   size_t len, size_t chunk, u8 *q, float *scales)
{
	int r;

	gn_simd_begin();
	r = gn_tlc_quantize_chunks_ex(GN_ISA_BEST, data + off,
				      t->e_rs[t->e_cur] + off,
				      t->e_rs[!t->e_cur] + off, len, chunk,
				      bits_float(t->s_bits),
				      gn_tlc_nt_flags(t->n), q, scales);
	gn_simd_end();
	return r;
}

/*
 * The owner's sum of a chunk, @len values at @sum (@rel into the shard):
 * for 3LC quantize it with the owner's error feedback into @gq (its scale
 * in *@scale) and decode the result over the sum; dense sums are only
 * checked here (they go out as they are, then gn_fp_dense_result()).
 * Return: 0, or -EDOM when the sum is not finite.
 */
int gn_fp_gather_chunk(const struct gn_ctx *ctx, const struct gn_tensor *t,
		       float *sum, size_t rel, size_t len, u8 *gq, u32 *scale)
{
	float mm = 0;
	int r = 0;

	if (t->codec != GN_WIRE_CODEC_3LC)
		return gn_all_finite(sum, len) ? 0 : -EDOM;
	gn_simd_begin();
	if (gn_tlc_quantize_chunks_ex(GN_ISA_BEST, sum, t->e_ag[t->e_cur] + rel,
				      t->e_ag[!t->e_cur] + rel, len, len,
				      bits_float(t->s_bits),
				      gn_tlc_nt_flags(t->lo[ctx->rank + 1] -
						      t->lo[ctx->rank]),
				      gq, &mm)) {
		r = -EDOM;
	} else {
		memcpy(scale, &mm, sizeof(mm));
		memset(sum, 0, len * sizeof(float));
		gn_tlc_decode_slice(gq, gn_tlc_groups(len),
				    result_scale(ctx, t, mm), sum, len, 0,
				    gn_tlc_groups(len));
	}
	gn_simd_end();
	return r;
}

void gn_fp_dense_result(const struct gn_ctx *ctx, const struct gn_tensor *t,
			float *v, u32 count)
{
	gn_simd_begin();
	dense_result(ctx, t, v, count);
	gn_simd_end();
}

/* Add one slice of a contribution to the own shard's sum. */
void gn_fp_add_slice(const struct gn_tensor *t, float *acc, size_t len,
		     u32 first, u32 count, u32 scale, const u8 *body, u16 blen)
{
	u32 i;

	gn_simd_begin();
	if (t->codec == GN_WIRE_CODEC_3LC) {
		gn_tlc_decode_slice(body, blen, bits_float(scale), acc, len, first,
				    count);
	} else {
		for (i = 0; i < count; i++) {
			float v;

			memcpy(&v, body + 4 * i, sizeof(v));
			acc[first + i] += v;
		}
	}
	gn_simd_end();
}

/*
 * Zero the elements of groups [first, first + count) of a chunk: a slice
 * of the result is decoded into zeros, and the caller's tensor still holds
 * its gradient. One range per partition.
 */
static void clear_slice(float *out, size_t len, u32 first, u32 count)
{
	size_t g = gn_tlc_groups(len), k;

	for (k = 0; k < GN_TLC_GROUP; k++) {
		size_t lo = k * g + first, hi = lo + count;

		if (lo >= len)
			break;
		memset(out + lo, 0, ((hi < len ? hi : len) - lo) * sizeof(float));
	}
}

/* A slice of an owner's result into the chunk at @out. */
void gn_fp_result_slice(const struct gn_ctx *ctx, const struct gn_tensor *t,
			float *out, const struct gn_wire_data *d,
			const u8 *body, u16 blen)
{
	gn_simd_begin();
	if (t->codec == GN_WIRE_CODEC_3LC) {
		clear_slice(out, d->chunk_len, d->first, d->count);
		gn_tlc_decode_slice(body, blen,
				    result_scale(ctx, t, bits_float(d->scale)),
				    out, d->chunk_len, d->first, d->count);
	} else {
		/* The packet's bytes may be unaligned: copy, then scale in place. */
		memcpy(out + d->first, body, (size_t)d->count * 4);
		dense_result(ctx, t, out + d->first, d->count);
	}
	gn_simd_end();
}
