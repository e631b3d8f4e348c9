/* SPDX-License-Identifier: MIT */
/*
 * bloom.h - the Bloom-filter index codec (<gradnet/codec.h>, "Bloom
 * groups"): a group's filter of m bits and h hash functions sized for a
 * false-positive rate, the positions it answers for (its positives), and
 * the positives that carry values under policy P0, P1 or P2. The sender
 * runs the very code the receiver runs, so both agree on every position.
 * Integer-only.
 */
#ifndef GN_CODEC_BLOOM_H
#define GN_CODEC_BLOOM_H

#include "gn_deps.h"
#include "codec/rng.h"

/* Entries a group holds at most; its filter's most bytes. */
#define GN_BLOOM_GROUP_MAX 64
#define GN_BLOOM_FILTER_MAX 128
/* The false-positive rate fpr=0 stands for: 0.001 as float32 bits. */
#define GN_BLOOM_FPR_DEFAULT 0x3a83126fu
/* Q16 of 1 / ln 2, rounded down: m = r log2(1/eps) / ln 2. */
#define GN_BLOOM_INV_LN2_Q16 94548ull

/*
 * A filter's shape: log2(1/eps) in Q16, the hash functions, and the
 * entries a group may hold (its filter fits GN_BLOOM_FILTER_MAX bytes).
 */
struct gn_bloom {
	u32 l16;
	u32 h;
	u32 gmax;
};

/* A group as the stream gives it: its positions [start, start + span). */
struct gn_bloom_group {
	u32 start, span, r;
	const u8 *filter;	/* gn_bloom_bytes(r) bytes */
};

typedef void gn_bloom_emit_fn(void *arg, u32 pos);

void gn_bloom_init(struct gn_bloom *b, u32 fpr_bits);

/* Bytes of the filter of a group of @r entries: m / 8. */
static inline u32 gn_bloom_bytes(const struct gn_bloom *b, u32 r)
{
	return (u32)(((u64)r * b->l16 * GN_BLOOM_INV_LN2_Q16 +
		      (1ull << 35) - 1) >> 35);
}

/* The key of a chunk's hash functions and draws, from its 16-bit salt. */
static inline u64 gn_bloom_key(u32 salt)
{
	return gn_draw_u64(salt, 0);
}

void gn_bloom_fill(const struct gn_bloom *b, u64 key, const u32 *pos, u32 r,
		   u8 *filter);
u32 gn_bloom_positives(const struct gn_bloom *b, u64 key,
		       const struct gn_bloom_group *g);
u32 gn_bloom_choose(const struct gn_bloom *b, u32 policy, u64 key,
		    const struct gn_bloom_group *g, gn_bloom_emit_fn *emit,
		    void *arg);

#endif /* GN_CODEC_BLOOM_H */
