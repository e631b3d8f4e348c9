/* SPDX-License-Identifier: MIT */
/*
 * quant.h - QSGD's float kernels, one set per instruction set: the scalar
 * ones (quant_fp.c) are the reference, and every SIMD kernel gives their
 * bits exactly (the same IEEE operations in the same order per value and
 * per lane; the generator is integer arithmetic). Float work (FPU units).
 */
#ifndef GN_QSGD_QUANT_H
#define GN_QSGD_QUANT_H

#include "gn_deps.h"

/*
 * l[j % 8] += (double)w[j] * (double)w[j] for j < @m: the l2 norm's eight
 * binary64 lanes (<gradnet/codec.h>), carried on from what @l holds.
 */
typedef void gn_qsgd_sumsq_fn(const float *w, u32 m, double l[8]);

/*
 * The codes of v[0..m), one bucket's values or part of them, under a
 * finite @norm > 0 with @s levels and sign bit @sign: counter @j0 + i of
 * @key rounds value i.
 */
typedef void gn_qsgd_levels_fn(const float *v, u32 m, float norm, u32 s,
			       u32 sign, u64 key, u32 j0, u8 *codes);

struct gn_qsgd_kernels {
	gn_qsgd_sumsq_fn *sumsq;
	gn_qsgd_levels_fn *levels;
};

gn_qsgd_sumsq_fn gn_qsgd_sumsq_scalar, gn_qsgd_sumsq_avx2,
	gn_qsgd_sumsq_avx512;
gn_qsgd_levels_fn gn_qsgd_levels_scalar, gn_qsgd_levels_avx2,
	gn_qsgd_levels_avx512;

/* The kernels of @isa (enum gn_isa), the scalar ones for any other. */
const struct gn_qsgd_kernels *gn_qsgd_kernels_of(int isa);

#endif /* GN_QSGD_QUANT_H */
