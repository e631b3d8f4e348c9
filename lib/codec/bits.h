/* SPDX-License-Identifier: MIT */
/*
 * bits.h - fields of up to 32 bits packed least significant first, from
 * bit 0 of a byte string, as run lengths and fitted values' codes are on
 * the wire. Integer-only.
 */
#ifndef GN_CODEC_BITS_H
#define GN_CODEC_BITS_H

#include "gn_deps.h"

struct gn_bits_out {
	u8 *dst;
	u64 acc;
	u32 have;
};

static inline void gn_bits_start(struct gn_bits_out *o, u8 *dst)
{
	o->dst = dst;
	o->acc = 0;
	o->have = 0;
}

/* @v's low @w bits (w <= 32; @v has no higher ones). */
static inline void gn_bits_put(struct gn_bits_out *o, u32 v, u32 w)
{
	if (!w)
		return;
	o->acc |= (u64)v << o->have;
	o->have += w;
	while (o->have >= 8) {
		*o->dst++ = (u8)o->acc;
		o->acc >>= 8;
		o->have -= 8;
	}
}

/* The last byte, its unused bits 0. Return: the end of the string. */
static inline u8 *gn_bits_end(struct gn_bits_out *o)
{
	if (o->have)
		*o->dst++ = (u8)o->acc;
	o->have = 0;
	o->acc = 0;
	return o->dst;
}

/* @w bits (w <= 32) at bit @bit of @src, whose bytes are there. */
static inline u32 gn_bits_get(const u8 *src, u64 bit, u32 w)
{
	u64 v = 0;
	u32 k, nb;

	if (!w)
		return 0;
	nb = (u32)(((bit & 7) + w + 7) / 8);
	for (k = 0; k < nb; k++)
		v |= (u64)src[bit / 8 + k] << (8 * k);
	v >>= bit & 7;
	return (u32)(v & (w == 32 ? 0xffffffffull : (1ull << w) - 1));
}

#endif /* GN_CODEC_BITS_H */
