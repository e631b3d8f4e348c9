/* SPDX-License-Identifier: MIT */
/*
 * tlc_fp.h - helpers for the codec's floating-point translation units only
 * (the kernel builds the integer units without FPU access).
 */
#ifndef GN_TLC_FP_H
#define GN_TLC_FP_H

#include "gn_deps.h"

static inline u32 gn_f2u(float f)
{
	u32 u;

	memcpy(&u, &f, sizeof(u));
	return u;
}

static inline float gn_u2f(u32 u)
{
	float f;

	memcpy(&f, &u, sizeof(f));
	return f;
}

#endif /* GN_TLC_FP_H */
