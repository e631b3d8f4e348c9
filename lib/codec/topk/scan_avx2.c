// SPDX-License-Identifier: MIT
/*
 * scan_avx2.c - top-k's scan (scan.h) sixteen values at a time: each
 * half's hits are moved to its front by a permutation made from their
 * mask (BMI2's deposit and extract) and stored whole, without a branch on
 * hits that fall at random.
 */
#include "scan.h"
#include <immintrin.h>

static __always_inline __m256 load_sum(const float *x, const float *e)
{
	__m256 a = _mm256_loadu_ps(x);

	return e ? _mm256_add_ps(a, _mm256_loadu_ps(e)) : a;
}

static __always_inline void store(float *to, __m256 a, bool nt)
{
	if (nt) {
		_mm_stream_ps(to, _mm256_castps256_ps128(a));
		_mm_stream_ps(to + 4, _mm256_extractf128_ps(a, 1));
	} else {
		_mm256_storeu_ps(to, a);
	}
}

/*
 * Eight values' hits (bits of @m) listed: the lanes of @m's set bits, in
 * order, are the bytes of 0x0706...00 that its bits select.
 */
static __always_inline u32 list8(__m256 a, __m256i at, u32 m, u32 *pos,
				 float *val)
{
	u64 keep = _pdep_u64(m, 0x0101010101010101ull) * 0xff;
	__m256i p = _mm256_cvtepu8_epi32(_mm_cvtsi64_si128(
		(long long)_pext_u64(0x0706050403020100ull, keep)));

	_mm256_storeu_si256((__m256i *)pos, _mm256_permutevar8x32_epi32(at, p));
	if (val)
		_mm256_storeu_ps(val, _mm256_permutevar8x32_ps(a, p));
	return (u32)__builtin_popcount(m);
}

/* The lanes of eight keys at or above the floor (less one), as bits. */
static __always_inline u32 hits8(__m256i key, __m256i fl1)
{
	return (u32)_mm256_movemask_ps(_mm256_castsi256_ps(
		_mm256_cmpgt_epi32(key, fl1)));
}

/*
 * The body, specialised by the compiler for @e present or not and @nt,
 * so that the loop tests neither. Keys are below 2^31, so the unsigned
 * compares are signed ones: floor - 1 is -1 for a floor of 0, which every
 * key passes. The running maximum of the keys is the scan's *@top.
 */
static __always_inline u32 scan(const float *x, const float *e, float *dst,
				u32 n, u32 floor, u32 base, u32 *pos,
				float *val, u32 *top, bool nt)
{
	const __m256i abs = _mm256_set1_epi32(0x7fffffff);
	const __m256i fl1 = _mm256_set1_epi32((int)floor - 1);
	const __m256i eight = _mm256_set1_epi32(8);
	__m256i at = _mm256_add_epi32(_mm256_set1_epi32((int)base),
				      _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
	__m256i most = _mm256_set1_epi32((int)*top);
	u32 i, np = 0, t[8], l;

	for (i = 0; i + 16 <= n; i += 16) {
		__m256 a = load_sum(x + i, e ? e + i : NULL);
		__m256 b = load_sum(x + i + 8, e ? e + i + 8 : NULL);
		__m256i ka = _mm256_and_si256(_mm256_castps_si256(a), abs);
		__m256i kb = _mm256_and_si256(_mm256_castps_si256(b), abs);

		store(dst + i, a, nt);
		store(dst + i + 8, b, nt);
		most = _mm256_max_epu32(most, _mm256_max_epu32(ka, kb));
		np += list8(a, at, hits8(ka, fl1), pos + np,
			    val ? val + np : NULL);
		at = _mm256_add_epi32(at, eight);
		np += list8(b, at, hits8(kb, fl1), pos + np,
			    val ? val + np : NULL);
		at = _mm256_add_epi32(at, eight);
	}
	if (nt)
		_mm_sfence();
	_mm256_storeu_si256((__m256i *)t, most);
	for (l = 0; l < 8; l++)
		*top = t[l] > *top ? t[l] : *top;
	return np + gn_topk_scan_scalar(x + i, e ? e + i : NULL, dst + i, n - i,
					floor, base + i, pos + np,
					val ? val + np : NULL, top, false);
}

u32 gn_topk_scan_avx2(const float *x, const float *e, float *dst, u32 n,
		      u32 floor, u32 base, u32 *pos, float *val, u32 *top,
		      bool nt)
{
	if (nt && !((uintptr_t)dst % 16))
		return e ? scan(x, e, dst, n, floor, base, pos, val, top, true) :
			   scan(x, NULL, dst, n, floor, base, pos, val, top,
				true);
	return e ? scan(x, e, dst, n, floor, base, pos, val, top, false) :
		   scan(x, NULL, dst, n, floor, base, pos, val, top, false);
}
