/* SPDX-License-Identifier: MIT */
/*
 * scan.h - the one pass top-k's selection makes over a block, twice, per
 * instruction set: copy (or add) the values and list the positions whose
 * magnitude's bits reach a floor. Every kernel gives the same values and
 * the same list as the scalar one (scan.c); float work (FPU units).
 */
#ifndef GN_TOPK_SCAN_H
#define GN_TOPK_SCAN_H

#include "gn_deps.h"

/*
 * dst[i] = x[i] + e[i] (or x[i] without @e) for i < @n; the positions
 * @base + i whose |dst[i]|'s bits are at least @floor appended to @pos, in
 * order, and their values to @val (unless NULL). @nt: dst is written with
 * non-temporal stores where its alignment allows (a long error buffer,
 * which the next step reads only after the whole tensor went through the
 * caches). @pos and @val may be written up to GN_TOPK_SCAN_SLACK entries
 * past the count: the SIMD kernels store a whole vector of hits, however
 * few it holds. *@top is raised to the largest key (|dst[i]|'s bits) if
 * that is larger: a key of GN_TOPK_NOT_FINITE or more is NaN or infinite.
 * Return: their count.
 */
typedef u32 gn_topk_scan_fn(const float *x, const float *e, float *dst, u32 n,
			    u32 floor, u32 base, u32 *pos, float *val,
			    u32 *top, bool nt);

#define GN_TOPK_SCAN_SLACK 16
#define GN_TOPK_NOT_FINITE 0x7f800000u

gn_topk_scan_fn gn_topk_scan_scalar, gn_topk_scan_avx2, gn_topk_scan_avx512;
/* The kernel of @isa (enum gn_codec_isa), scalar for any other value. */
gn_topk_scan_fn *gn_topk_scan_of(int isa);

#endif /* GN_TOPK_SCAN_H */
