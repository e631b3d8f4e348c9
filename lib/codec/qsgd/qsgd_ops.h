/* SPDX-License-Identifier: MIT */
/*
 * qsgd_ops.h - "qsgd"'s float operations (ops_fp.c), which its integer
 * table (ops.c) names, and the layout of its chunk scratch they share.
 */
#ifndef GN_QSGD_OPS_H
#define GN_QSGD_OPS_H

#include "qsgd.h"

/* A chunk's scratch: its bucket norms, then one code a value. */
static inline float *gn_qsgd_norms(void *scratch)
{
	return scratch;
}

static inline size_t gn_qsgd_norms_bytes(const struct gn_qsgd *q, u32 chunk)
{
	return 4 * (size_t)((chunk + q->bucket - 1) / q->bucket);
}

static inline u8 *gn_qsgd_codes(void *scratch, const struct gn_qsgd *q,
				u32 chunk)
{
	return (u8 *)scratch + gn_qsgd_norms_bytes(q, chunk);
}

void gn_qsgd_params(const struct gn_codec_params *p, struct gn_qsgd *q);
int gn_qsgd_op_encode(const struct gn_codec_call *c, const float *x,
		      const float *e_in, float *e_out, size_t len, size_t chunk,
		      u64 off, void *scratch, size_t stride, u32 *aux);
int gn_qsgd_op_result(const struct gn_codec_call *c, float *sum,
		      const float *e_in, float *e_out, size_t len, u64 off,
		      void *scratch, u32 *aux);
void gn_qsgd_op_add(const struct gn_codec_call *c, float *acc, u32 len,
		    u32 first, u32 count, u32 aux, const u8 *body, u32 blen);
void gn_qsgd_op_decode(const struct gn_codec_call *c, float *out, u32 len,
		       u32 first, u32 count, u32 aux, const u8 *body,
		       u32 blen);

#endif /* GN_QSGD_OPS_H */
