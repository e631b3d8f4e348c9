// SPDX-License-Identifier: MIT
/*
 * codec_fp.c - the module's only floating-point unit of its own. Passing a
 * float argument already uses an SSE register, so calls that pass one are
 * made here, built with the codec's FPU flags; every other file in kmod/
 * stays integer-only and cannot touch FPU state outside a
 * kernel_fpu_begin() section by accident.
 */
#include <linux/string.h>
#include <gradnet/codec.h>

#include "codec_fp.h"

/**
 * gn_kmod_tlc_encode() - gn_tlc_encode_isa() with s given as float bits
 * @isa: one of enum gn_isa, supported by this CPU
 * @x: n input values
 * @e: n error-feedback values, updated in place
 * @n: elements
 * @s_bits: bit pattern of the sparsity multiplier s
 * @dst: out
 * @cap: bytes at @dst
 *
 * Call only between kernel_fpu_begin() and kernel_fpu_end().
 *
 * Return: as gn_tlc_encode_isa().
 */
long gn_kmod_tlc_encode(int isa, const float *x, float *e, size_t n,
			u32 s_bits, void *dst, size_t cap)
{
	float s;

	memcpy(&s, &s_bits, sizeof(s));
	return gn_tlc_encode_isa(isa, x, e, n, s, dst, cap);
}
