// SPDX-License-Identifier: MIT
/*
 * scan_avx2.c - top-k's scan (scan.h) sixteen values at a time: a pair of
 * vectors none of whose values reaches the floor (most, in a sparse
 * selection) costs two compares and a branch; the others' positions are
 * listed a set bit at a time.
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
 * The body, specialised by the compiler for @e present or not and @nt,
 * so that the loop tests neither. Keys are below 2^31, so the unsigned
 * compares are signed ones: floor - 1 is -1 for a floor of 0, which every
 * key passes.
 */
static __always_inline u32 scan(const float *x, const float *e, float *dst,
				u32 n, u32 floor, u32 base, u32 *pos,
				float *val, u32 *bad, bool nt)
{
	const __m256i abs = _mm256_set1_epi32(0x7fffffff);
	const __m256i inf1 = _mm256_set1_epi32(0x7f7fffff);
	const __m256i fl1 = _mm256_set1_epi32((int)floor - 1);
	__m256i nf = _mm256_setzero_si256();
	u32 i, np = 0;

	for (i = 0; i + 16 <= n; i += 16) {
		__m256 a = load_sum(x + i, e ? e + i : NULL);
		__m256 b = load_sum(x + i + 8, e ? e + i + 8 : NULL);
		__m256i ka, kb;
		u32 hit;

		store(dst + i, a, nt);
		store(dst + i + 8, b, nt);
		ka = _mm256_and_si256(_mm256_castps_si256(a), abs);
		kb = _mm256_and_si256(_mm256_castps_si256(b), abs);
		nf = _mm256_or_si256(nf, _mm256_or_si256(
			_mm256_cmpgt_epi32(ka, inf1), _mm256_cmpgt_epi32(kb, inf1)));
		hit = (u32)_mm256_movemask_ps(_mm256_castsi256_ps(
			      _mm256_cmpgt_epi32(ka, fl1))) |
		      (u32)_mm256_movemask_ps(_mm256_castsi256_ps(
			      _mm256_cmpgt_epi32(kb, fl1))) << 8;
		while (hit) {
			u32 l = i + (u32)__builtin_ctz(hit);

			/* The same sum again: an add's bits are its operands'. */
			if (val)
				val[np] = e ? x[l] + e[l] : x[l];
			pos[np++] = base + l;
			hit &= hit - 1;
		}
	}
	if (nt)
		_mm_sfence();
	*bad |= !_mm256_testz_si256(nf, nf);
	return np + gn_topk_scan_scalar(x + i, e ? e + i : NULL, dst + i, n - i,
					floor, base + i, pos + np,
					val ? val + np : NULL, bad, false);
}

u32 gn_topk_scan_avx2(const float *x, const float *e, float *dst, u32 n,
		      u32 floor, u32 base, u32 *pos, float *val, u32 *bad,
		      bool nt)
{
	if (nt && !((uintptr_t)dst % 16))
		return e ? scan(x, e, dst, n, floor, base, pos, val, bad, true) :
			   scan(x, NULL, dst, n, floor, base, pos, val, bad,
				true);
	return e ? scan(x, e, dst, n, floor, base, pos, val, bad, false) :
		   scan(x, NULL, dst, n, floor, base, pos, val, bad, false);
}
