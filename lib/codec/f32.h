/* SPDX-License-Identifier: MIT */
/*
 * f32.h - a float32 and its bits, as the specifications and the wire read
 * them (memcpy: no aliasing, no conversion). For FPU units only: in the
 * kernel build an integer-only file cannot hold a float.
 */
#ifndef GN_CODEC_F32_H
#define GN_CODEC_F32_H

#include "gn_deps.h"

static inline float gn_f32_of(u32 b)
{
	float f;

	memcpy(&f, &b, sizeof(f));
	return f;
}

static inline u32 gn_f32_bits(float f)
{
	u32 b;

	memcpy(&b, &f, sizeof(b));
	return b;
}

#endif /* GN_CODEC_F32_H */
