// SPDX-License-Identifier: MIT
/*
 * scan_avx2.c - top-k's scan (scan.h) eight values at a time: a vector
 * none of whose values reaches the floor (most, in a sparse selection)
 * costs a compare; the others are listed lane by lane.
 */
#include "scan.h"
#include <immintrin.h>

u32 gn_topk_scan_avx2(const float *x, const float *e, float *dst, u32 n,
		      u32 floor, u32 base, u32 *pos, u32 *bad, bool nt)
{
	const __m256i abs = _mm256_set1_epi32(0x7fffffff);
	/* Unsigned compares as signed ones: keys are below 2^31. */
	const __m256i inf1 = _mm256_set1_epi32(0x7f7fffff);
	const __m256i fl1 = _mm256_set1_epi32((int)floor - 1);
	__m256i nf = _mm256_setzero_si256();
	u32 i, np = 0, j;

	nt = nt && !((uintptr_t)dst % 16);
	for (i = 0; i + 8 <= n; i += 8) {
		__m256 a = _mm256_loadu_ps(x + i);
		__m256i key;
		u32 hit;

		if (e)
			a = _mm256_add_ps(a, _mm256_loadu_ps(e + i));
		if (nt) {
			_mm_stream_ps(dst + i, _mm256_castps256_ps128(a));
			_mm_stream_ps(dst + i + 4, _mm256_extractf128_ps(a, 1));
		} else {
			_mm256_storeu_ps(dst + i, a);
		}
		key = _mm256_and_si256(_mm256_castps_si256(a), abs);
		nf = _mm256_or_si256(nf, _mm256_cmpgt_epi32(key, inf1));
		hit = floor ? (u32)_mm256_movemask_ps(_mm256_castsi256_ps(
				      _mm256_cmpgt_epi32(key, fl1))) : 0xff;
		for (j = 0; hit; j++, hit >>= 1)
			if (hit & 1)
				pos[np++] = base + i + j;
	}
	if (nt)
		_mm_sfence();
	*bad |= !_mm256_testz_si256(nf, nf);
	return np + gn_topk_scan_scalar(x + i, e ? e + i : NULL, dst + i, n - i,
					floor, base + i, pos + np, bad, false);
}
