// SPDX-License-Identifier: MIT
/*
 * quant_avx512.c - QSGD's kernels (quant.h) sixteen values at a time, the
 * generator's 64-bit products in AVX-512DQ's multiply.
 */
#include <gradnet/codec.h>
#include "quant.h"
#include "codec/rng.h"
#include <immintrin.h>

void gn_qsgd_sumsq_avx512(const float *w, u32 m, double l[8])
{
	__m512d acc = _mm512_loadu_pd(l);
	u32 j;

	for (j = 0; j + 8 <= m; j += 8) {
		__m512d a = _mm512_cvtps_pd(_mm256_loadu_ps(w + j));

		acc = _mm512_add_pd(acc, _mm512_mul_pd(a, a));
	}
	_mm512_storeu_pd(l, acc);
	gn_qsgd_sumsq_scalar(w + j, m - j, l);
}

/* rng.h's gn_draw_mix() on eight lanes, then its top 24 bits. */
static inline __m256i draw24(__m512i z)
{
	const __m512i m1 = _mm512_set1_epi64((long long)0xbf58476d1ce4e5b9ull);
	const __m512i m2 = _mm512_set1_epi64((long long)0x94d049bb133111ebull);

	z = _mm512_mullo_epi64(_mm512_xor_si512(z, _mm512_srli_epi64(z, 30)), m1);
	z = _mm512_mullo_epi64(_mm512_xor_si512(z, _mm512_srli_epi64(z, 27)), m2);
	return _mm512_cvtepi64_epi32(_mm512_srli_epi64(
		_mm512_xor_si512(z, _mm512_srli_epi64(z, 31)), 40));
}

void gn_qsgd_levels_avx512(const float *v, u32 m, float norm, u32 s,
			   u32 sign, u64 key, u32 j0, u8 *codes)
{
	const __m512 fs = _mm512_set1_ps((float)s), nv = _mm512_set1_ps(norm);
	const __m512i si = _mm512_set1_epi32((int)s);
	const __m512i sg = _mm512_set1_epi32((int)sign);
	const __m512i one = _mm512_set1_epi32(1);
	const __m512i step = _mm512_set1_epi64((long long)(16 * GN_DRAW_GOLDEN));
	__m512i z0 = _mm512_add_epi64(
		_mm512_set1_epi64((long long)(key + (u64)(j0 + 1) * GN_DRAW_GOLDEN)),
		_mm512_mullo_epi64(_mm512_setr_epi64(0, 1, 2, 3, 4, 5, 6, 7),
				   _mm512_set1_epi64((long long)GN_DRAW_GOLDEN)));
	__m512i z1 = _mm512_add_epi64(z0, _mm512_set1_epi64(
					  (long long)(8 * GN_DRAW_GOLDEN)));
	u32 j;

	for (j = 0; j + 16 <= m; j += 16) {
		__m512 x = _mm512_loadu_ps(v + j);
		__m512 r = _mm512_div_ps(_mm512_mul_ps(fs, _mm512_abs_ps(x)), nv);
		/* r < s: its truncation; else (an overflow's inf too) s. */
		__mmask16 below = _mm512_cmp_ps_mask(r, fs, _CMP_LT_OQ), up, neg;
		__m512i l = _mm512_mask_cvttps_epi32(si, below, r);
		__m512 p = _mm512_sub_ps(r, _mm512_cvtepi32_ps(l));
		__m512i u = _mm512_inserti64x4(_mm512_castsi256_si512(draw24(z0)),
					       draw24(z1), 1);

		up = _mm512_mask_cmp_ps_mask(below, _mm512_mul_ps(
			_mm512_cvtepi32_ps(u), _mm512_set1_ps(0x1p-24f)), p,
			_CMP_LT_OQ);
		l = _mm512_mask_add_epi32(l, up, l, one);
		/* The sign bit where the level is not 0 and v is negative. */
		neg = _mm512_test_epi32_mask(l, l) &
		      _mm512_movepi32_mask(_mm512_castps_si512(x));
		_mm_storeu_si128((__m128i *)(codes + j), _mm512_cvtepi32_epi8(
			_mm512_mask_or_epi32(l, neg, l, sg)));
		z0 = _mm512_add_epi64(z0, step);
		z1 = _mm512_add_epi64(z1, step);
	}
	gn_qsgd_levels_scalar(v + j, m - j, norm, s, sign, key, j0 + j, codes + j);
}
