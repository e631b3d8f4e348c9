/* SPDX-License-Identifier: MIT */
/*
 * entropy.h - the entropy stage: any codec's slices through zstd, packet
 * by packet, where that makes the packet smaller. Its two parameter words
 * follow every codec's own (codec.h), so no codec's folder knows of it;
 * <gradnet/codec.h> ("The entropy stage") is the normative description.
 * Integer-only and freestanding: zstd comes through gn_deps.h (libzstd,
 * or the kernel's lib/zstd), in workspaces sized here and allocated when
 * a tensor registers.
 */
#ifndef GN_CODEC_ENTROPY_H
#define GN_CODEC_ENTROPY_H

#include "codec/codec.h"

/* The stage's words: struct gn_codec_params.stage[]. */
#define GN_STAGE_CODER 0
#define GN_STAGE_LEVEL 1

enum gn_entropy_coder {
	GN_ENTROPY_NONE = 0,
	GN_ENTROPY_ZSTD = 1,
};

#define GN_ENTROPY_LEVEL_DEF 1
#define GN_ENTROPY_LEVEL_MAX 19

/*
 * A coded packet stands for at most GN_ENTROPY_SPAN bodies of a WHOLE
 * packet in raw slice bytes: the slicer fills a packet with up to that
 * much before it compresses (compress-then-cut), and a receiver
 * decompresses into no more. Four is past every ratio measured per packet
 * (doc/perf/entropy.md), and keeps a raw slice under 64 KiB.
 */
#define GN_ENTROPY_SPAN 4

/*
 * A slice shorter than this goes as it is: a zstd frame costs a few
 * microseconds whatever its size, which a few bytes saved do not repay
 * on any link (a message's last slice is often this short).
 */
#define GN_ENTROPY_MIN 256

extern const struct gn_codec_param gn_stage_params[];
extern const u32 gn_stage_nparams;

static inline bool gn_entropy_on(const struct gn_codec_params *p)
{
	return p->stage[GN_STAGE_CODER] != GN_ENTROPY_NONE;
}

/* Raw slice bytes one coded packet may stand for, at @whole_cap body bytes. */
static inline u32 gn_entropy_raw_max(u32 whole_cap)
{
	return GN_ENTROPY_SPAN * whole_cap;
}

int gn_entropy_check(const struct gn_codec_params *p, char *msg, size_t len);

/*
 * The stage's words packed in one, as the ioctl ABI's entropy word has
 * them (given bits apart): the coder in bits 0-7, the level in 8-15.
 */
static inline u32 gn_entropy_pack(const struct gn_codec_params *p)
{
	return (p->stage[GN_STAGE_CODER] & 0xff) |
	       (p->stage[GN_STAGE_LEVEL] & 0xff) << 8;
}

static inline void gn_entropy_unpack(struct gn_codec_params *p, u32 w)
{
	p->stage[GN_STAGE_CODER] = w & 0xff;
	p->stage[GN_STAGE_LEVEL] = w >> 8 & 0xff;
}

/*
 * A tensor's stage as CTRL TENSOR's extra word carries it (wire.h): 0
 * without the stage, else packed. And back, into a block that compares
 * equal to the sender's own.
 */
static inline u32 gn_entropy_desc(const struct gn_codec_params *p)
{
	return gn_entropy_on(p) ? gn_entropy_pack(p) : 0;
}

static inline void gn_entropy_from_desc(struct gn_codec_params *p, u32 w)
{
	gn_entropy_unpack(p, w);
	if (!w)
		p->stage[GN_STAGE_LEVEL] = GN_ENTROPY_LEVEL_DEF;
}

/*
 * struct gn_entropy_enc - what one thread packs with: a compression
 * context sized for levels up to @level_max and slices up to @raw_max
 * bytes, the slice before coding (@raw) and its frame (@out).
 */
struct gn_entropy_enc {
	void *cctx;
	u8 *raw;
	u8 *out;
	u32 raw_max;
	u32 out_cap;
	u32 level_max;
	u32 level;			/* the context is set for (0: none yet) */
};

/* What one thread unpacks with: a decompression context and @raw. */
struct gn_entropy_dec {
	void *dctx;
	u8 *raw;
	u32 raw_max;
};

size_t gn_entropy_enc_size(u32 raw_max, u32 level_max);
int gn_entropy_enc_init(struct gn_entropy_enc *z, void *mem, size_t len,
			u32 raw_max, u32 level_max);
size_t gn_entropy_dec_size(u32 raw_max);
int gn_entropy_dec_init(struct gn_entropy_dec *z, void *mem, size_t len,
			u32 raw_max);

long gn_entropy_slice(const struct gn_codec_ops *c,
		      const struct gn_codec_params *p, const void *scratch,
		      u32 aux, const float *x, u32 len, u32 at,
		      struct gn_entropy_enc *z, u8 *dst, u32 cap, u32 *units,
		      bool *coded, u32 *next);
long gn_entropy_open(struct gn_entropy_dec *z, const struct gn_codec_ops *c,
		     const struct gn_codec_params *p, u32 len,
		     const u8 *body, u32 blen);

#endif /* GN_CODEC_ENTROPY_H */
