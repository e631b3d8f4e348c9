// SPDX-License-Identifier: MIT
/*
 * nh_avx2.c - both NH passes of the packet MAC (mac.c), eight words at a
 * time: one add per pass and a multiply of even by odd lanes gives four
 * 64-bit products. Same sums as the scalar loop, in any order (mod 2^64).
 */
#include "gn_deps.h"
#include <gradnet/wire.h>
#include <immintrin.h>

#include "nh.h"

size_t gn_nh2_avx2(const u32 *k, const u8 *p, size_t pairs, u64 *h1, u64 *h2)
{
	__m256i a = _mm256_setzero_si256(), b = a;
	u64 la[4], lb[4];
	size_t i;

	for (i = 0; i + 4 <= pairs; i += 4) {
		__m256i w = _mm256_loadu_si256((const __m256i *)(p + 8 * i));
		__m256i x = _mm256_add_epi32(w, _mm256_loadu_si256(
						       (const __m256i *)(k + 2 * i)));
		__m256i y = _mm256_add_epi32(w, _mm256_loadu_si256(
						       (const __m256i *)(k + 2 * i + 4)));

		a = _mm256_add_epi64(a, _mm256_mul_epu32(x, _mm256_srli_epi64(x, 32)));
		b = _mm256_add_epi64(b, _mm256_mul_epu32(y, _mm256_srli_epi64(y, 32)));
	}
	_mm256_storeu_si256((__m256i *)la, a);
	_mm256_storeu_si256((__m256i *)lb, b);
	*h1 = la[0] + la[1] + la[2] + la[3];
	*h2 = lb[0] + lb[1] + lb[2] + lb[3];
	return i;
}
