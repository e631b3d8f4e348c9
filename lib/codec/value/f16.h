/* SPDX-License-Identifier: MIT */
/*
 * f16.h - float16 values of sparse streams (<gradnet/codec.h>, "Value
 * codecs"): float32 to IEEE binary16 rounded to nearest, ties to even,
 * magnitudes past the largest finite one clamped to it, and back; both
 * on the bits, integer-only, so libgradnet, the kernel and every
 * instruction set agree.
 */
#ifndef GN_CODEC_F16_H
#define GN_CODEC_F16_H

#include "gn_deps.h"

#define GN_F16_MAX 0x7bffu	/* 65504 */

/* Round @v >> @sh to nearest, ties to even (1 <= sh <= 31). */
static inline u32 gn_f16_round(u32 v, u32 sh)
{
	u32 q = v >> sh, rem = v & ((1u << sh) - 1), half = 1u << (sh - 1);

	return q + (rem > half || (rem == half && (q & 1)));
}

/* The binary16 nearest the finite float32 of bits @x (clamped). */
static inline u16 gn_f16_of_f32(u32 x)
{
	u32 sign = x >> 16 & 0x8000, e = x >> 23 & 0xff, m = x & 0x7fffff, h;

	if (e >= 143)			/* 2^16 and up: past 65504 */
		return (u16)(sign | GN_F16_MAX);
	if (e >= 113) {			/* normal: 2^-14 and up */
		h = ((e - 112) << 10) + gn_f16_round(m, 13);
		return (u16)(sign | (h > GN_F16_MAX ? GN_F16_MAX : h));
	}
	if (e < 102)			/* below half of 2^-24 */
		return (u16)sign;
	/* Subnormal: units of 2^-24; rounding may reach 2^-14, 0x400. */
	return (u16)(sign | gn_f16_round(m | 0x800000, 126 - e));
}

/* The float32 bits of binary16 @h, which is finite. */
static inline u32 gn_f32_of_f16(u16 h)
{
	u32 sign = (u32)(h & 0x8000) << 16, e = h >> 10 & 0x1f, m = h & 0x3ff;

	if (e)
		return sign | (e + 112) << 23 | m << 13;
	if (!m)
		return sign;
	/* Subnormal m 2^-24: normalize to 1.f 2^k. */
	e = 113;
	while (!(m & 0x400)) {
		m <<= 1;
		e--;
	}
	return sign | e << 23 | (m & 0x3ff) << 13;
}

/* A binary16 as the wire may carry it: finite. */
static inline bool gn_f16_ok(u16 h)
{
	return (h & 0x7c00) != 0x7c00;
}

#endif /* GN_CODEC_F16_H */
