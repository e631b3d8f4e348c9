/* SPDX-License-Identifier: MIT */
/*
 * varint.h - the index coder of sparse streams: LEB128 varints (seven bits
 * a byte, least significant first, at most five bytes for 32 bits, no
 * superfluous final zero byte). Integer-only.
 */
#ifndef GN_CODEC_VARINT_H
#define GN_CODEC_VARINT_H

#include "gn_deps.h"

#define GN_VARINT_MAX 5

/* Seven bits a byte of v's significant bits (at least one): no branch. */
static inline u32 gn_varint_len(u32 v)
{
	return (32 - (u32)__builtin_clz(v | 1) + 6) / 7;
}

static inline u32 gn_varint_put(u32 v, u8 *dst)
{
	u32 n = 0;

	while (v >= 0x80) {
		dst[n++] = (u8)(v | 0x80);
		v >>= 7;
	}
	dst[n++] = (u8)v;
	return n;
}

/*
 * A varint from @src (@left bytes): its length, or 0 if it runs past
 * @left, takes more than five bytes, overflows 32 bits or ends in a
 * superfluous zero byte.
 */
static inline u32 gn_varint_get(const u8 *src, u32 left, u32 *v)
{
	u32 x = 0, n;

	for (n = 0; n < GN_VARINT_MAX && n < left; n++) {
		u8 b = src[n];

		if (n == 4 && b > 0x0f)
			return 0;
		x |= (u32)(b & 0x7f) << (7 * n);
		if (!(b & 0x80)) {
			if (n && !b)
				return 0;
			*v = x;
			return n + 1;
		}
	}
	return 0;
}

#endif /* GN_CODEC_VARINT_H */
