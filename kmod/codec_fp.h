/* SPDX-License-Identifier: MIT */
/*
 * codec_fp.h - codec entry points that take a float, wrapped so that the
 * module's integer-only units can call them with the float's bit pattern.
 */
#ifndef GN_KMOD_CODEC_FP_H
#define GN_KMOD_CODEC_FP_H

#include <linux/types.h>

long gn_kmod_tlc_encode(int isa, const float *x, float *e, size_t n,
			u32 s_bits, void *dst, size_t cap);

#endif /* GN_KMOD_CODEC_FP_H */
