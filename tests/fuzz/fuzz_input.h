/* SPDX-License-Identifier: MIT */
/*
 * fuzz_input.h - the byte layout of the fuzz targets' inputs, shared by the
 * targets that parse it and by fuzz_seeds.c that writes seed corpora in it.
 * Multi-byte fields are little-endian.
 *
 * fuzz_decode:     n:16 flags:8 j0:16 count:16 m:32 | stream bytes
 * fuzz_roundtrip:  flags:8 s:32 chunk:16 budget:16 n:16 exp:8 | data bytes
 */
#ifndef GN_FUZZ_INPUT_H
#define GN_FUZZ_INPUT_H

#include <stddef.h>
#include <stdint.h>

/* fuzz_decode */
#define GN_FZD_N 0
#define GN_FZD_FLAGS 2
#define GN_FZD_J0 3
#define GN_FZD_COUNT 5
#define GN_FZD_M 7
#define GN_FZD_HDR 11
/* flags: bits 0-1 pick the accumulator's starting values */
#define GN_FZD_ACC_MASK 0x03
/* j0 and count taken as they are, not reduced to the chunk's groups */
#define GN_FZD_RAW_SLICE 0x04
/* with GN_FZD_RAW_SLICE: j0 = SIZE_MAX - j0, to probe overflow */
#define GN_FZD_J0_HUGE 0x08
/* call the codec with flush-to-zero and denormals-are-zero set */
#define GN_FZD_FTZ 0x10

/* fuzz_roundtrip */
#define GN_FZR_FLAGS 0
#define GN_FZR_S 1
#define GN_FZR_CHUNK 5
#define GN_FZR_BUDGET 7
#define GN_FZR_N 9
#define GN_FZR_EXP 11
#define GN_FZR_HDR 12
/*
 * flags: bits 0-1 say what the data bytes are:
 *  0: float32 pairs x_i, e_i
 *  1: x_i = (int8)data[i % len] * 2^(exp - 150), e = 0
 *  2: as 1, and e_i = (int8)data[(7i + 3) % len] * 2^(exp - 156)
 *  3: quartic group bytes, given to gn_zre_encode() as they are
 * In modes 1-3, n (a group count in mode 3) is the n field, or the data
 * length if that is 0, at most GN_FZR_N_MAX.
 */
#define GN_FZR_MODE_MASK 0x03
#define GN_FZR_FLOATS 0
#define GN_FZR_INT8 1
#define GN_FZR_INT8_EF 2
#define GN_FZR_GROUPS 3
/* s is the float with the bits of the s field; else 1 + s_field_low16/65536 */
#define GN_FZR_RAW_S 0x04
/* call the codec with flush-to-zero and denormals-are-zero set */
#define GN_FZR_FTZ 0x08
#define GN_FZR_N_MAX 0x3fff

static inline uint32_t gn_fz_le(const uint8_t *p, unsigned int bytes)
{
	uint32_t v = 0;

	while (bytes--)
		v = v << 8 | p[bytes];
	return v;
}

static inline void gn_fz_put_le(uint8_t *p, uint32_t v, unsigned int bytes)
{
	while (bytes--) {
		*p++ = (uint8_t)v;
		v >>= 8;
	}
}

#endif /* GN_FUZZ_INPUT_H */
