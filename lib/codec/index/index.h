/* SPDX-License-Identifier: MIT */
/*
 * index.h - the index codecs of sparse streams (<gradnet/codec.h>, "Index
 * codecs"): the positions of a slice's values relative to the slice's
 * first unit, as delta varints, a bitmap or bit-packed run lengths (list.c),
 * or a Bloom filter whose positives the sender computes too (bloom.c).
 * Integer-only; any sparse stream (top-k, CLT-k's index round) uses them.
 */
#ifndef GN_CODEC_INDEX_H
#define GN_CODEC_INDEX_H

#include "gn_deps.h"

/* Index codec numbers: what a stream's word names (top-k's aux byte 1). */
#define GN_IDX_VARINT 0
#define GN_IDX_BITMAP 1
#define GN_IDX_RLE 2
#define GN_IDX_BLOOM 3		/* P0: a value at every positive */
#define GN_IDX_BLOOM_P1 4	/* P1: r positives drawn */
#define GN_IDX_BLOOM_P2 5	/* P2: conflict sets */
#define GN_IDX_CODECS 6
/* Codecs 0..2 code a list of positions exactly (list.c). */
#define GN_IDX_LISTS 3

static inline bool gn_idx_is_bloom(u32 codec)
{
	return codec >= GN_IDX_BLOOM && codec < GN_IDX_CODECS;
}

/* Bits of @v: 0 for 0, else the position of its top bit plus one. */
static inline u32 gn_idx_bitlen(u32 v)
{
	return v ? 32 - (u32)__builtin_clz(v) : 0;
}

/*
 * The index part of a list of positions, sized as positions are added in
 * increasing order (a slicer tries one more position at a time).
 */
struct gn_idx_size {
	u32 codec;
	u32 first;		/* the slice's first unit */
	u32 n;			/* positions so far */
	u32 last;		/* the last one */
	u64 varints;		/* varint: the deltas' bytes */
	u32 runs;		/* rle: runs so far, the current one's length, */
	u32 run_len;		/*	the widest gap and run length - 1 */
	u32 max_gap, max_len1;
};

void gn_idx_size_init(struct gn_idx_size *s, u32 codec, u32 first);
void gn_idx_size_add(struct gn_idx_size *s, u32 pos);
u64 gn_idx_size_bytes(const struct gn_idx_size *s);
u64 gn_idx_list_bytes(u32 codec, const u32 *pos, u32 n, u32 first);
u32 gn_idx_list_put(u32 codec, const u32 *pos, u32 n, u32 first, u8 *dst);
long gn_idx_list_check(u32 codec, const u8 *src, u32 len, u32 first,
		       u32 count, u32 n);
u32 gn_idx_list_skip(u32 codec, const u8 *src, u32 n);

/* The positions of a checked index part, one at a time. */
struct gn_idx_walk {
	u32 codec;
	const u8 *src;
	u32 at;			/* byte (varint, bitmap) */
	u32 bit;		/* bitmap: the next bit of byte @at */
	u32 pos;		/* varint, rle: the next position's lower
				   bound; bitmap: bit 0 of byte @at's */
	u32 left;		/* rle: positions left in the current run */
	u32 runs, run;		/* rle: runs, and the next one */
	u32 wg, wo;		/* rle: widths */
	u64 gbit;		/* rle: the next run's bit offset */
};

void gn_idx_walk_start(struct gn_idx_walk *w, u32 codec, const u8 *src,
		       u32 first);
u32 gn_idx_walk_next(struct gn_idx_walk *w);

#endif /* GN_CODEC_INDEX_H */
