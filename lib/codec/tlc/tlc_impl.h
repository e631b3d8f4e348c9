/* SPDX-License-Identifier: MIT */
/*
 * tlc_impl.h - internal interface between the codec's entry points (tlc.c)
 * and its per-instruction-set kernels (scalar, AVX2, AVX-512).
 */
#ifndef GN_TLC_IMPL_H
#define GN_TLC_IMPL_H

#include "gn_deps.h"
#include <gradnet/codec.h>

/* |t| bit patterns at or above this are infinities or NaNs. */
#define GN_F32_INF_BITS 0x7f800000u

/*
 * Kernels of one instruction set. The entry points validate arguments and
 * streams and open the FPU section; kernels only compute.
 *
 * @maxabs_bits: max over i of the bits of |x_i + e_i| (sign cleared), which
 *	orders like the values; >= GN_F32_INF_BITS means some t_i is not finite.
 * @quartic: second quantization pass of chunk @cur, groups [0, g): q from
 *	t = x + e_in against h = 0.5f*m, e_out = t - q*m (e_out may be e_in),
 *	one quartic byte per group; then the first pass of chunk @next (n may
 *	be 0), whose maxabs_bits it returns. The chunk is still in L2 for its
 *	second pass; the first pass streams from memory on its own, which on
 *	Zen 4 beats taking it piecewise inside the second pass.
 * @zre: gn_zre_encode() on groups already known to be in 0..242.
 * @groups: groups covered by a zero-run encoded slice (no validation).
 * @accumulate: decode-accumulate a validated slice starting at group j0.
 */
/*
 * A chunk being quantized: input, error feedback in and out, length, and
 * whether e_out may be written with non-temporal stores (a long tensor
 * with e_out != e_in: it saves the read for ownership of e_out, which
 * would not stay in cache until the next step anyway).
 */
struct gn_tlc_span {
	const float *x;
	const float *e_in;
	float *e_out;
	size_t n;
	bool stream;
};

struct gn_tlc_kernels {
	u32 (*maxabs_bits)(const float *x, const float *e, size_t n);
	u32 (*quartic)(const struct gn_tlc_span *cur, float m, u8 *out,
		       const struct gn_tlc_span *next);
	size_t (*zre)(const u8 *q, size_t count, u8 *dst, size_t cap,
		      size_t *consumed);
	size_t (*groups)(const u8 *src, size_t len);
	void (*accumulate)(const u8 *src, size_t len, float m, float *acc,
			   size_t n, size_t g, size_t j0);
};

extern const struct gn_tlc_kernels gn_tlc_scalar;
extern const struct gn_tlc_kernels gn_tlc_avx2;
extern const struct gn_tlc_kernels gn_tlc_avx512;

/* Scalar pieces shared by the SIMD kernels for heads, tails and slow paths. */
size_t gn_zre_run(const u8 *q, size_t count, u8 *dst, size_t cap, size_t *o,
		  unsigned int *run);
size_t gn_zre_scalar(const u8 *q, size_t count, u8 *dst, size_t cap,
		     size_t *consumed);
size_t gn_zre_groups_scalar(const u8 *src, size_t len);
int gn_zre_check_padding(const u8 *src, size_t len, size_t n, size_t g,
			 size_t j_end);
bool gn_zre_has_bad_group(const u8 *q, size_t count);

void gn_quartic_scalar(const struct gn_tlc_span *c, float m, u8 *out,
		       size_t j_from, size_t j_to);
u32 gn_maxabs_bits_scalar(const float *x, const float *e, size_t n);
void gn_accumulate_scalar(const u8 *src, size_t len, float m, float *acc,
			  size_t n, size_t g, size_t j0);

/* Groups covered by one zero-run byte. */
static inline unsigned int gn_zre_len(u8 b)
{
	return b >= GN_ZRE_RUN_MIN ? b - 241u : 1u;
}

/* The zero-run byte(s) for a pending run of 1..13 groups. */
static inline u8 gn_zre_run_byte(unsigned int run)
{
	return run == 1 ? GN_TLC_ZERO : (u8)(241u + run);
}

/* 3^(4-k): weight of partition k in a quartic byte. */
static inline unsigned int gn_quartic_weight(unsigned int k)
{
	static const u8 w[GN_TLC_GROUP] = { 81, 27, 9, 3, 1 };

	return w[k];
}

#endif /* GN_TLC_IMPL_H */
