// SPDX-License-Identifier: MIT
/*
 * scan_avx512.c - top-k's scan (scan.h) sixteen values at a time: the
 * positions (and values) that reach the floor are compressed out of a
 * mask into a register and stored whole, without a branch: a sparse
 * selection's hits fall at random, so a branch on them mispredicts, and
 * a compress straight to memory is slow microcode on AMD's cores.
 */
#include "scan.h"
#include <immintrin.h>

/* Sixteen floats past the caches, in the 16-byte stores alignment allows. */
static inline void stream16(float *to, __m512 v)
{
	_mm_stream_ps(to, _mm512_castps512_ps128(v));
	_mm_stream_ps(to + 4, _mm512_extractf32x4_ps(v, 1));
	_mm_stream_ps(to + 8, _mm512_extractf32x4_ps(v, 2));
	_mm_stream_ps(to + 12, _mm512_extractf32x4_ps(v, 3));
}

/* A vector's hits (@hit of its positions @at and values @a) listed. */
static __always_inline u32 list16(__m512 a, __m512i at, __mmask16 hit,
				  u32 *pos, float *val)
{
	_mm512_storeu_si512(pos, _mm512_maskz_compress_epi32(hit, at));
	if (val)
		_mm512_storeu_ps(val, _mm512_maskz_compress_ps(hit, a));
	return (u32)__builtin_popcount(hit);
}

/*
 * The body, specialised by the compiler for @e present or not and @nt, so
 * that the loop tests neither; the last partial vector goes through masks.
 * The running maximum of the keys is the scan's *@top.
 */
static __always_inline u32 scan(const float *x, const float *e, float *dst,
				u32 n, u32 floor, u32 base, u32 *pos,
				float *val, u32 *top, bool nt)
{
	const __m512i abs = _mm512_set1_epi32(0x7fffffff);
	const __m512i fl = _mm512_set1_epi32((int)floor);
	const __m512i step = _mm512_set1_epi32(16);
	__m512i at = _mm512_add_epi32(_mm512_set1_epi32((int)base),
				      _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7,
							8, 9, 10, 11, 12, 13,
							14, 15));
	__m512i most = _mm512_set1_epi32((int)*top), key;
	u32 i, np = 0;
	__mmask16 k;
	__m512 a;

	for (i = 0; i + 16 <= n; i += 16) {
		a = _mm512_loadu_ps(x + i);
		if (e)
			a = _mm512_add_ps(a, _mm512_loadu_ps(e + i));
		if (nt)
			stream16(dst + i, a);
		else
			_mm512_storeu_ps(dst + i, a);
		key = _mm512_and_si512(_mm512_castps_si512(a), abs);
		most = _mm512_max_epu32(most, key);
		np += list16(a, at, _mm512_cmpge_epu32_mask(key, fl), pos + np,
			     val ? val + np : NULL);
		at = _mm512_add_epi32(at, step);
	}
	if (nt)
		_mm_sfence();
	if (i < n) {
		k = (__mmask16)((1u << (n - i)) - 1);
		a = _mm512_maskz_loadu_ps(k, x + i);
		if (e)
			a = _mm512_add_ps(a, _mm512_maskz_loadu_ps(k, e + i));
		_mm512_mask_storeu_ps(dst + i, k, a);
		key = _mm512_and_si512(_mm512_castps_si512(a), abs);
		most = _mm512_max_epu32(most, key);
		np += list16(a, at, _mm512_mask_cmpge_epu32_mask(k, key, fl),
			     pos + np, val ? val + np : NULL);
	}
	*top = _mm512_reduce_max_epu32(most);
	return np;
}

u32 gn_topk_scan_avx512(const float *x, const float *e, float *dst, u32 n,
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
