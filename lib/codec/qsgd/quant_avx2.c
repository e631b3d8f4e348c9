// SPDX-License-Identifier: MIT
/*
 * quant_avx2.c - QSGD's kernels (quant.h) eight values at a time. AVX2
 * has no 64-bit multiply: the generator's products are put together from
 * three 32 x 32 -> 64 ones, which is exact modulo 2^64 as the scalar one.
 */
#include <gradnet/codec.h>
#include "quant.h"
#include "codec/rng.h"
#include <immintrin.h>

void gn_qsgd_sumsq_avx2(const float *w, u32 m, double l[8])
{
	__m256d lo = _mm256_loadu_pd(l), hi = _mm256_loadu_pd(l + 4);
	u32 j;

	for (j = 0; j + 8 <= m; j += 8) {
		__m256 v = _mm256_loadu_ps(w + j);
		__m256d a = _mm256_cvtps_pd(_mm256_castps256_ps128(v));
		__m256d b = _mm256_cvtps_pd(_mm256_extractf128_ps(v, 1));

		lo = _mm256_add_pd(lo, _mm256_mul_pd(a, a));
		hi = _mm256_add_pd(hi, _mm256_mul_pd(b, b));
	}
	_mm256_storeu_pd(l, lo);
	_mm256_storeu_pd(l + 4, hi);
	gn_qsgd_sumsq_scalar(w + j, m - j, l);
}

/* a * c modulo 2^64, lane by lane; c is given as its two halves. */
static inline __m256i mul64(__m256i a, __m256i c_lo, __m256i c_hi)
{
	__m256i cross = _mm256_add_epi64(
		_mm256_mul_epu32(_mm256_srli_epi64(a, 32), c_lo),
		_mm256_mul_epu32(a, c_hi));

	return _mm256_add_epi64(_mm256_mul_epu32(a, c_lo),
				_mm256_slli_epi64(cross, 32));
}

/* rng.h's gn_draw_mix() on four lanes, then its top 24 bits. */
static inline __m256i draw24(__m256i z)
{
	const __m256i m1_lo = _mm256_set1_epi64x(0x1ce4e5b9);
	const __m256i m1_hi = _mm256_set1_epi64x(0xbf58476d);
	const __m256i m2_lo = _mm256_set1_epi64x(0x133111eb);
	const __m256i m2_hi = _mm256_set1_epi64x(0x94d049bb);

	z = mul64(_mm256_xor_si256(z, _mm256_srli_epi64(z, 30)), m1_lo, m1_hi);
	z = mul64(_mm256_xor_si256(z, _mm256_srli_epi64(z, 27)), m2_lo, m2_hi);
	return _mm256_srli_epi64(_mm256_xor_si256(z, _mm256_srli_epi64(z, 31)),
				 40);
}

void gn_qsgd_levels_avx2(const float *v, u32 m, float norm, u32 s, u32 sign,
			 u64 key, u32 j0, u8 *codes)
{
	const __m256 fs = _mm256_set1_ps((float)s), nv = _mm256_set1_ps(norm);
	const __m256 abs = _mm256_castsi256_ps(_mm256_set1_epi32(0x7fffffff));
	const __m256i si = _mm256_set1_epi32((int)s);
	const __m256i sg = _mm256_set1_epi32((int)sign);
	const __m256i one = _mm256_set1_epi32(1);
	/* The 32-bit halves of the lanes' words, in value order. */
	const __m256i even = _mm256_setr_epi32(0, 2, 4, 6, 1, 3, 5, 7);
	const __m256i step = _mm256_set1_epi64x((long long)(8 * GN_DRAW_GOLDEN));
	__m256i z0 = _mm256_add_epi64(
		_mm256_set1_epi64x((long long)(key + (u64)(j0 + 1) * GN_DRAW_GOLDEN)),
		_mm256_setr_epi64x(0, (long long)GN_DRAW_GOLDEN,
				   (long long)(2 * GN_DRAW_GOLDEN),
				   (long long)(3 * GN_DRAW_GOLDEN)));
	__m256i z1 = _mm256_add_epi64(z0, _mm256_set1_epi64x(
					  (long long)(4 * GN_DRAW_GOLDEN)));
	u32 j;

	for (j = 0; j + 8 <= m; j += 8) {
		__m256 x = _mm256_loadu_ps(v + j);
		__m256 r = _mm256_div_ps(_mm256_mul_ps(fs, _mm256_and_ps(x, abs)),
					 nv);
		/* r < s: its truncation; else (an overflow's inf too) s. */
		__m256 below = _mm256_cmp_ps(r, fs, _CMP_LT_OQ);
		__m256i l = _mm256_blendv_epi8(si, _mm256_cvttps_epi32(r),
					       _mm256_castps_si256(below));
		__m256 p = _mm256_sub_ps(r, _mm256_cvtepi32_ps(l));
		__m256i u = _mm256_inserti128_si256(
			_mm256_castsi128_si256(_mm256_castsi256_si128(
				_mm256_permutevar8x32_epi32(draw24(z0), even))),
			_mm256_castsi256_si128(
				_mm256_permutevar8x32_epi32(draw24(z1), even)),
			1);
		__m256 up = _mm256_and_ps(below, _mm256_cmp_ps(
			_mm256_mul_ps(_mm256_cvtepi32_ps(u), _mm256_set1_ps(0x1p-24f)),
			p, _CMP_LT_OQ));
		__m256i neg, c;
		__m128i c16;

		l = _mm256_add_epi32(l, _mm256_and_si256(
					     _mm256_castps_si256(up), one));
		/* The sign bit where the level is not 0 and v is negative. */
		neg = _mm256_andnot_si256(_mm256_cmpeq_epi32(l, _mm256_setzero_si256()),
					  _mm256_srai_epi32(_mm256_castps_si256(x), 31));
		c = _mm256_or_si256(l, _mm256_and_si256(neg, sg));
		c16 = _mm_packus_epi32(_mm256_castsi256_si128(c),
				       _mm256_extracti128_si256(c, 1));
		_mm_storel_epi64((__m128i *)(codes + j), _mm_packus_epi16(c16, c16));
		z0 = _mm256_add_epi64(z0, step);
		z1 = _mm256_add_epi64(z1, step);
	}
	gn_qsgd_levels_scalar(v + j, m - j, norm, s, sign, key, j0 + j, codes + j);
}
