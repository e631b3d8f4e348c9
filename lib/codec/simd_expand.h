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
	size_t i = *pos, p = *fill;

	while (p < limit && i < len) {
		u8 b = src[i++];
		u8 v = b >= GN_ZRE_RUN_MIN ? GN_TLC_ZERO : b;

		_mm_storeu_si128((__m128i *)(buf + p), _mm_set1_epi8((char)v));
		p += gn_zre_len(b);
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
