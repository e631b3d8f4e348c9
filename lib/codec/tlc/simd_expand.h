/* SPDX-License-Identifier: MIT */
/*
 * simd_expand.h - turns zero-run codes back into one byte per group, a block
 * at a time, for the SIMD decoders (avx2.c, avx512.c). SSE2 only.
 */
#ifndef GN_SIMD_EXPAND_H
#define GN_SIMD_EXPAND_H

#include "tlc_impl.h"
#include <immintrin.h>

/*
 * Values of each partition the decoders prefetch ahead in acc (512 bytes):
 * the five partitions are five streams that the hardware prefetcher picks
 * up late, each restarted at every chunk.
 */
#define GN_DECODE_AHEAD 128

/* Groups expanded per block; the buffer needs GN_EXPAND_SLACK more bytes. */
#define GN_EXPAND_BLOCK 512
#define GN_EXPAND_SLACK 16

/*
 * Expand codes from @src[*@pos..@len) into @buf[*@fill..) until at least
 * @limit groups are there or the input ends. Each code writes 16 bytes
 * (a literal and junk, or 121s) and advances by the groups it covers, so
 * no branch depends on the data; a run may spill up to 13 groups past
 * @limit, which the caller carries into the next block.
 */
static inline void gn_expand(const u8 *src, size_t len, size_t *pos, u8 *buf,
			     size_t *fill, size_t limit)
{
	/*
	 * The group byte and the group count of each code, from tables:
	 * compilers turn the two selects into a branch on run or literal,
	 * which mispredicts on every other code of a sparse stream.
	 */
#define GN_EXP_VAL(b) ((b) >= GN_ZRE_RUN_MIN ? GN_TLC_ZERO : (b))
#define GN_EXP_LEN(b) ((b) >= GN_ZRE_RUN_MIN ? (b) - 241 : 1)
#define GN_EXP4(f, b) f(b), f(b + 1), f(b + 2), f(b + 3)
#define GN_EXP16(f, b) GN_EXP4(f, b), GN_EXP4(f, b + 4), GN_EXP4(f, b + 8),   \
		       GN_EXP4(f, b + 12)
#define GN_EXP64(f, b) GN_EXP16(f, b), GN_EXP16(f, b + 16),                   \
		       GN_EXP16(f, b + 32), GN_EXP16(f, b + 48)
#define GN_EXP256(f) GN_EXP64(f, 0), GN_EXP64(f, 64), GN_EXP64(f, 128),       \
		     GN_EXP64(f, 192)
	static const u8 group_of[256] = { GN_EXP256(GN_EXP_VAL) };
	static const u8 count_of[256] = { GN_EXP256(GN_EXP_LEN) };
#undef GN_EXP256
#undef GN_EXP64
#undef GN_EXP16
#undef GN_EXP4
#undef GN_EXP_LEN
#undef GN_EXP_VAL
	size_t i = *pos, p = *fill;

	while (p < limit && i < len) {
		u8 b = src[i++];

		_mm_storeu_si128((__m128i *)(buf + p),
				 _mm_set1_epi8((char)group_of[b]));
		p += count_of[b];
	}
	*pos = i;
	*fill = p;
}

/* Accumulates @groups expanded groups @q that start at chunk group @j. */
typedef void (*gn_block_fn)(const u8 *q, size_t groups, size_t j, float m,
			    float *acc, size_t n, size_t g);

/* Run @block over the expansion of a validated slice starting at group @j. */
static inline void gn_expand_each(const u8 *src, size_t len, size_t j,
				  gn_block_fn block, float m, float *acc,
				  size_t n, size_t g)
{
	u8 buf[GN_EXPAND_BLOCK + GN_EXPAND_SLACK] __attribute__((aligned(64)));
	size_t pos = 0, fill = 0;

	while (pos < len || fill) {
		size_t done;

		gn_expand(src, len, &pos, buf, &fill, GN_EXPAND_BLOCK);
		done = fill < GN_EXPAND_BLOCK ? fill : GN_EXPAND_BLOCK;
		block(buf, done, j, m, acc, n, g);
		j += done;
		memmove(buf, buf + done, fill - done);
		fill -= done;
	}
}

#endif /* GN_SIMD_EXPAND_H */
