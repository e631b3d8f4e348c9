// SPDX-License-Identifier: MIT
/*
 * tlc.c - the codec's entry points: argument and stream validation, the FPU
 * section, and the choice of kernels by instruction set. Floating point
 * (s and M are floats), so built as an FPU translation unit.
 */
#include "tlc_impl.h"
#include "codec/f32.h"

static const struct gn_tlc_kernels *kernels_for(int isa)
{
	if (isa == GN_ISA_BEST)
		isa = gn_codec_isa_default();
	else if (!gn_codec_isa_supported(isa))
		return NULL;
	switch (isa) {
	case GN_ISA_AVX512:
		return &gn_tlc_avx512;
	case GN_ISA_AVX2:
		return &gn_tlc_avx2;
	default:
		return &gn_tlc_scalar;
	}
}

static bool valid_s(float s)
{
	return s >= 1.0f && s < 2.0f;
}

/*
 * M of a chunk from its maxabs bits, or -EDOM if t or M is not finite;
 * *@m is written only on success.
 */
static int scale_of(u32 bits, float s, float *m)
{
	float v;

	if (bits >= GN_F32_INF_BITS)
		return -EDOM;
	v = s * gn_f32_of(bits);
	if (gn_f32_bits(v) >= GN_F32_INF_BITS)
		return -EDOM;
	*m = v;
	return 0;
}

/*
 * Chunk after chunk: each chunk's first pass (max |t|) and check, then its
 * second pass while it is still in cache. A chunk is checked before
 * anything of it is written.
 */
static int quantize_chunks(const struct gn_tlc_kernels *k, const float *x,
			   const float *e_in, float *e_out, size_t n,
			   size_t chunk, float s, bool stream, u8 *quartic,
			   float *m)
{
	size_t at = 0, len = n < chunk ? n : chunk, c;
	size_t stride = gn_tlc_groups(chunk);
	struct gn_fpu fpu;
	int ret = -EINVAL;
	u32 bits;

	gn_fpu_begin(&fpu);
	if (!valid_s(s))
		goto out;
	bits = k->maxabs_bits(x, e_in, len);
	for (c = 0;; c++) {
		struct gn_tlc_span cur = { x + at, e_in + at, e_out + at, len,
					   stream };
		struct gn_tlc_span next;

		ret = scale_of(bits, s, &m[c]);
		if (ret)
			goto out;
		at += len;
		len = n - at < chunk ? n - at : chunk;
		next = (struct gn_tlc_span){ x + at, e_in + at, e_out + at, len,
					     stream };
		bits = k->quartic(&cur, m[c], quartic + c * stride, &next);
		if (at == n)
			break;
	}
out:
	gn_fpu_end(&fpu);
	return ret;
}

int gn_tlc_quantize_chunks_ex(int isa, const float *x, const float *e_in,
			      float *e_out, size_t n, size_t chunk, float s,
			      unsigned int flags, u8 *quartic, float *m)
{
	const struct gn_tlc_kernels *k = kernels_for(isa);

	if (!k)
		return -EOPNOTSUPP;
	if (!chunk || !valid_s(s) || (flags & ~GN_TLC_NT) ||
	    ((flags & GN_TLC_NT) && e_out == e_in))
		return -EINVAL;
	if (!n)
		return 0;
	return quantize_chunks(k, x, e_in, e_out, n, chunk, s,
			       flags & GN_TLC_NT, quartic, m);
}

int gn_tlc_quantize_chunks_isa(int isa, const float *x, const float *e_in,
			       float *e_out, size_t n, size_t chunk, float s,
			       u8 *quartic, float *m)
{
	return gn_tlc_quantize_chunks_ex(isa, x, e_in, e_out, n, chunk, s,
					 e_out != e_in ? gn_tlc_nt_flags(n) : 0,
					 quartic, m);
}

int gn_tlc_quantize_chunks(const float *x, const float *e_in, float *e_out,
			   size_t n, size_t chunk, float s, u8 *quartic,
			   float *m)
{
	return gn_tlc_quantize_chunks_isa(GN_ISA_BEST, x, e_in, e_out, n, chunk,
					  s, quartic, m);
}

/* One chunk of n values; n = 0 is a chunk with no groups and M = 0. */
static int quantize(const struct gn_tlc_kernels *k, const float *x, float *e,
		    size_t n, float s, u8 *quartic, float *m)
{
	if (n)
		return quantize_chunks(k, x, e, e, n, n, s, false, quartic, m);
	if (!valid_s(s))
		return -EINVAL;
	*m = 0.0f;
	return 0;
}

int gn_tlc_quantize_isa(int isa, const float *x, float *e, size_t n, float s,
			u8 *quartic, float *m)
{
	const struct gn_tlc_kernels *k = kernels_for(isa);

	if (!k)
		return -EOPNOTSUPP;
	return quantize(k, x, e, n, s, quartic, m);
}

int gn_tlc_quantize(const float *x, float *e, size_t n, float s, u8 *quartic,
		    float *m)
{
	return gn_tlc_quantize_isa(GN_ISA_BEST, x, e, n, s, quartic, m);
}

long gn_zre_encode_isa(int isa, const u8 *quartic, size_t count, u8 *dst,
		       size_t cap, size_t *consumed)
{
	const struct gn_tlc_kernels *k = kernels_for(isa);
	struct gn_fpu fpu;
	size_t len;

	if (!k)
		return -EOPNOTSUPP;
	if (gn_zre_has_bad_group(quartic, count))
		return -EINVAL;
	gn_fpu_begin(&fpu);
	len = k->zre(quartic, count, dst, cap, consumed);
	gn_fpu_end(&fpu);
	return (long)len;
}

long gn_zre_encode(const u8 *quartic, size_t count, u8 *dst, size_t cap,
		   size_t *consumed)
{
	return gn_zre_encode_isa(GN_ISA_BEST, quartic, count, dst, cap,
				 consumed);
}

/*
 * The groups are quantized straight into the output behind the scale and
 * zero-run encoded in place: the encoding never gets ahead of its input.
 */
long gn_tlc_encode_isa(int isa, const float *x, float *e, size_t n, float s,
		       void *dst, size_t cap)
{
	const struct gn_tlc_kernels *k = kernels_for(isa);
	u8 *out = dst;
	size_t g = gn_tlc_groups(n), used, len;
	struct gn_fpu fpu;
	float m;
	int ret;

	if (!k)
		return -EOPNOTSUPP;
	if (cap < gn_tlc_encode_bound(n))
		return -ENOSPC;
	ret = quantize(k, x, e, n, s, out + GN_TLC_SCALE_BYTES, &m);
	if (ret)
		return ret;
	gn_fpu_begin(&fpu);
	gn_put_le32(gn_f32_bits(m), out);
	len = k->zre(out + GN_TLC_SCALE_BYTES, g, out + GN_TLC_SCALE_BYTES, g,
		     &used);
	gn_fpu_end(&fpu);
	return (long)(GN_TLC_SCALE_BYTES + len);
}

long gn_tlc_encode(const float *x, float *e, size_t n, float s, void *dst,
		   size_t cap)
{
	return gn_tlc_encode_isa(GN_ISA_BEST, x, e, n, s, dst, cap);
}

static int check_slice(const struct gn_tlc_kernels *k, const u8 *src,
		       size_t len, size_t n, size_t j0, size_t count)
{
	size_t g = gn_tlc_groups(n);

	if (j0 > g || count > g - j0)
		return -EBADMSG;
	/* Every byte covers at least one group. */
	if (len > count)
		return -EBADMSG;
	if (k->groups(src, len) != count)
		return -EBADMSG;
	return gn_zre_check_padding(src, len, n, g, j0 + count);
}

int gn_zre_check(const u8 *src, size_t len, size_t n, size_t j0, size_t count)
{
	struct gn_fpu fpu;
	int ret;

	gn_fpu_begin(&fpu);
	ret = check_slice(kernels_for(GN_ISA_BEST), src, len, n, j0, count);
	gn_fpu_end(&fpu);
	return ret;
}

int gn_tlc_decode_slice_isa(int isa, const u8 *src, size_t len, float m,
			    float *acc, size_t n, size_t j0, size_t count)
{
	const struct gn_tlc_kernels *k = kernels_for(isa);
	struct gn_fpu fpu;
	int ret;

	if (!k)
		return -EOPNOTSUPP;
	gn_fpu_begin(&fpu);
	/* A negative or non-finite scale never comes from the encoder. */
	ret = -EBADMSG;
	if (gn_f32_bits(m) >= GN_F32_INF_BITS)
		goto out;
	ret = check_slice(k, src, len, n, j0, count);
	if (ret)
		goto out;
	k->accumulate(src, len, m, acc, n, gn_tlc_groups(n), j0);
out:
	gn_fpu_end(&fpu);
	return ret;
}

int gn_tlc_decode_slice(const u8 *src, size_t len, float m, float *acc,
			size_t n, size_t j0, size_t count)
{
	return gn_tlc_decode_slice_isa(GN_ISA_BEST, src, len, m, acc, n, j0,
				       count);
}

int gn_tlc_decode_isa(int isa, const void *src, size_t len, float *acc,
		      size_t n)
{
	const u8 *in = src;

	if (len < GN_TLC_SCALE_BYTES)
		return -EBADMSG;
	return gn_tlc_decode_slice_isa(isa, in + GN_TLC_SCALE_BYTES,
				       len - GN_TLC_SCALE_BYTES,
				       gn_f32_of(gn_get_le32(in)), acc, n, 0,
				       gn_tlc_groups(n));
}

int gn_tlc_decode(const void *src, size_t len, float *acc, size_t n)
{
	return gn_tlc_decode_isa(GN_ISA_BEST, src, len, acc, n);
}
