// SPDX-License-Identifier: MIT
/*
 * csum_avx2.c - the Internet checksum's AVX2 kernel (csum.h), built with
 * -mavx2 and called only when the CPU has it. Each 16 bytes are eight
 * 16-bit words zero-extended into 32-bit lanes (one vpmovzxwd from memory)
 * and added to one of four accumulators; the lanes are summed into 64
 * bits before any can overflow (RUN_BLOCKS). The result is the scalar
 * kernel's, modulo 0xffff: csum.c folds either the same way.
 */
#include <immintrin.h>

#include "csum.h"

/*
 * 64-byte blocks per run of the 32-bit accumulators: a lane of the four
 * summed takes at most 4 * 0xffff per block, under 2^31 after a run.
 */
#define RUN_BLOCKS 8192u

static u64 lanes_sum(__m256i v)
{
	__m256i lo = _mm256_and_si256(v, _mm256_set1_epi64x(0xffffffff));
	__m256i hi = _mm256_srli_epi64(v, 32);
	__m256i s = _mm256_add_epi64(lo, hi);
	__m128i t = _mm_add_epi64(_mm256_castsi256_si128(s),
				  _mm256_extracti128_si256(s, 1));

	return (u64)_mm_cvtsi128_si64(t) + (u64)_mm_extract_epi64(t, 1);
}

/* Eight 32-bit lanes, added with + (GCC keeps such sums in place). */
typedef u32 lanes __attribute__((vector_size(32)));

/* Eight 16-bit words at @p, zero-extended to 32-bit lanes. */
static lanes words8(const u8 *p)
{
	return (lanes)_mm256_cvtepu16_epi32(_mm_loadu_si128((const __m128i *)p));
}

u64 gn_dpdk_csum_avx2(const u8 *p, u32 len)
{
	u64 s = 0;
	u32 blocks = len / 64, run, i;

	while (blocks) {
		lanes a = { 0 }, b = a, c = a, d = a;

		run = blocks < RUN_BLOCKS ? blocks : RUN_BLOCKS;
		blocks -= run;
		for (i = 0; i < run; i++, p += 64) {
			a += words8(p);
			b += words8(p + 16);
			c += words8(p + 32);
			d += words8(p + 48);
		}
		s += lanes_sum((__m256i)(a + b + c + d));
	}
	len %= 64;
	if (len >= 16) {
		lanes a = { 0 };

		for (; len >= 16; p += 16, len -= 16)
			a += words8(p);
		s += lanes_sum((__m256i)a);
	}
	/* The last bytes: whole 16-bit words, then an odd high byte. */
	for (; len >= 2; p += 2, len -= 2) {
		u16 h;

		memcpy(&h, p, 2);
		s += h;
	}
	if (len)
		s += *p;
	/* Far from 2^64 for any u32 length. */
	return s;
}
