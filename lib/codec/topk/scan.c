// SPDX-License-Identifier: MIT
/*
 * scan.c - the scalar scan of top-k's selection (scan.h), the reference
 * of the SIMD ones, and the choice of kernel by instruction set.
 */
#include <gradnet/codec.h>
#include "scan.h"

u32 gn_topk_scan_scalar(const float *x, const float *e, float *dst, u32 n,
			u32 floor, u32 base, u32 *pos, float *val, u32 *top,
			bool nt)
{
	u32 i, np = 0, most = *top;

	for (i = 0; i < n; i++) {
		float a = e ? x[i] + e[i] : x[i];
		u32 key;

		dst[i] = a;
		memcpy(&key, &a, sizeof(key));
		key &= 0x7fffffffu;
		most = key > most ? key : most;
		if (key < floor)
			continue;
		if (val)
			val[np] = a;
		pos[np++] = base + i;
	}
	*top = most;
	return np;
}

gn_topk_scan_fn *gn_topk_scan_of(int isa)
{
	switch (isa) {
	case GN_ISA_AVX512:
		return gn_topk_scan_avx512;
	case GN_ISA_AVX2:
		return gn_topk_scan_avx2;
	default:
		return gn_topk_scan_scalar;
	}
}
