// SPDX-License-Identifier: MIT
/*
 * quant_fp.c - QSGD's stochastic quantizer: per bucket a norm (max, or l2
 * summed in eight binary64 lanes), then each value's level rounded up or
 * down by the seeded generator so that its expectation is the value.
 * Runs inside the caller's FPU section.
 */
#include <gradnet/codec.h>

#include "qsgd.h"
#include "quant.h"
#include "codec/f32.h"
#include "codec/rng.h"

void gn_qsgd_sumsq_scalar(const float *w, u32 m, double l[8])
{
	u32 j;

	for (j = 0; j < m; j++)
		l[j % 8] += (double)w[j] * (double)w[j];
}

void gn_qsgd_levels_scalar(const float *v, u32 m, float norm, u32 s,
			   u32 sign, u64 key, u32 j0, u8 *codes)
{
	float fs = (float)s;
	u32 j;

	for (j = 0; j < m; j++) {
		/*
		 * r >= 0: truncation is floor, and needs no libm; r is at
		 * most s but for a product that overflowed.
		 */
		float r = (fs * __builtin_fabsf(v[j])) / norm, p;
		u32 l = r < fs ? (u32)r : s;

		p = r - (float)l;
		if (l < s && (float)gn_draw_u24(key, j0 + j) * 0x1p-24f < p)
			l++;
		codes[j] = (u8)(l | (l && gn_f32_bits(v[j]) >> 31 ? sign : 0));
	}
}

static const struct gn_qsgd_kernels kernels[] = {
	[GN_ISA_SCALAR] = { gn_qsgd_sumsq_scalar, gn_qsgd_levels_scalar },
	[GN_ISA_AVX2] = { gn_qsgd_sumsq_avx2, gn_qsgd_levels_avx2 },
	[GN_ISA_AVX512] = { gn_qsgd_sumsq_avx512, gn_qsgd_levels_avx512 },
};

const struct gn_qsgd_kernels *gn_qsgd_kernels_of(int isa)
{
	return &kernels[isa == GN_ISA_AVX2 || isa == GN_ISA_AVX512 ?
			isa : GN_ISA_SCALAR];
}

/* The norm of w[0..m); its bits are >= GN_F32_INF_BITS if not finite. */
static float bucket_norm(const struct gn_qsgd *q,
			 const struct gn_qsgd_kernels *k, const float *w, u32 m)
{
	double l[8] = { 0 }, a0, a1, a2, a3;
	u32 top = 0, j;

	if (q->max_norm) {
		for (j = 0; j < m; j++) {
			u32 b = gn_f32_bits(w[j]) & 0x7fffffffu;

			top = b > top ? b : top;
		}
		return gn_f32_of(top);
	}
	k->sumsq(w, m, l);
	a0 = l[0] + l[4];
	a1 = l[1] + l[5];
	a2 = l[2] + l[6];
	a3 = l[3] + l[7];
	return (float)__builtin_sqrt((a0 + a2) + (a1 + a3));
}

/*
 * gn_qsgd_quantize() - v[0..m) as buckets: norms[ceil(m / B)] and one code
 * a value, counters 0.. under @key
 * Return: 0; -EDOM if a value or a norm is not finite (nothing written).
 */
int gn_qsgd_quantize(const struct gn_qsgd *q, const float *v, u32 m,
		     u64 key, float *norms, u8 *codes)
{
	const struct gn_qsgd_kernels *k =
		gn_qsgd_kernels_of(gn_codec_isa_default());
	u32 b;

	if (!gn_f32_all_finite(v, m))
		return -EDOM;
	for (b = 0; b * q->bucket < m; b++) {
		u32 at = b * q->bucket;
		u32 mb = m - at < q->bucket ? m - at : q->bucket;
		float norm = bucket_norm(q, k, v + at, mb);

		if (gn_f32_bits(norm) >= 0x7f800000u)
			return -EDOM;
		norms[b] = norm;
	}
	for (b = 0; b * q->bucket < m; b++) {
		u32 at = b * q->bucket;
		u32 mb = m - at < q->bucket ? m - at : q->bucket;

		if (norms[b] == 0.0f)
			memset(codes + at, 0, mb);
		else
			k->levels(v + at, mb, norms[b], q->s,
				  1u << (q->bits - 1), key, at, codes + at);
	}
	return 0;
}

float gn_qsgd_value(const struct gn_qsgd *q, float norm, u32 code)
{
	u32 sign = 1u << (q->bits - 1);
	float v = norm * ((float)(code & (sign - 1)) / (float)q->s);

	return code & sign ? -v : v;
}
