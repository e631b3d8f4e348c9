/* SPDX-License-Identifier: MIT */
/*
 * rng.h - the counter-based generator of every stochastic compressor. The
 * n-th number of a chunk is a pure function of (job, tensor, step, rank,
 * phase, chunk offset, n), so a rerun, another data path, another ISA or
 * another number of codec workers draws exactly the same numbers, and the
 * kernel's self-test can hold golden hashes of stochastic codecs.
 *
 * The mixer is splitmix64's finalizer; a chunk's numbers are the splitmix64
 * sequence started at the chunk's key:
 *	mix(z) = z ^= z >> 30, z *= 0xbf58476d1ce4e5b9,
 *		 z ^= z >> 27, z *= 0x94d049bb133111eb, z ^ z >> 31
 *	seed = mix(mix(job << 32 | tensor) ^ (step << 32 | rank << 8 | phase))
 *	key(chunk_off) = mix(seed ^ chunk_off * GOLDEN)
 *	u(n) = mix(key + (n + 1) * GOLDEN), GOLDEN = 0x9e3779b97f4a7c15
 * all modulo 2^64. Integer-only.
 */
#ifndef GN_CODEC_RNG_H
#define GN_CODEC_RNG_H

#include "gn_deps.h"

#define GN_DRAW_GOLDEN 0x9e3779b97f4a7c15ull

static inline u64 gn_draw_mix(u64 z)
{
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static inline u64 gn_draw_seed(u32 job, u32 tensor, u32 step, u32 rank,
			      u32 phase)
{
	u64 a = gn_draw_mix((u64)job << 32 | tensor);

	return gn_draw_mix(a ^ ((u64)step << 32 | (u64)rank << 8 | phase));
}

static inline u64 gn_draw_key(u64 seed, u64 chunk_off)
{
	return gn_draw_mix(seed ^ chunk_off * GN_DRAW_GOLDEN);
}

/* The n-th 64-bit number of a chunk's key. */
static inline u64 gn_draw_u64(u64 key, u64 n)
{
	return gn_draw_mix(key + (n + 1) * GN_DRAW_GOLDEN);
}

/* Its top 24 bits: a uniform integer in [0, 2^24), exact as a float32. */
static inline u32 gn_draw_u24(u64 key, u64 n)
{
	return (u32)(gn_draw_u64(key, n) >> 40);
}

#endif /* GN_CODEC_RNG_H */
