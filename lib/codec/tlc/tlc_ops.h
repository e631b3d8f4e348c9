/* SPDX-License-Identifier: MIT */
/*
 * tlc_ops.h - 3LC's float operations for the registry (ops_fp.c), which
 * its integer table (ops.c) names.
 */
#ifndef GN_TLC_OPS_H
#define GN_TLC_OPS_H

#include "codec/codec.h"

int gn_tlc_op_encode(const struct gn_codec_call *c, const float *x,
		     const float *e_in, float *e_out, size_t len, size_t chunk,
		     u64 off, void *scratch, size_t stride, u32 *aux);
int gn_tlc_op_result(const struct gn_codec_call *c, float *sum,
		     const float *e_in, float *e_out, size_t len, u64 off,
		     void *scratch, u32 *aux);
void gn_tlc_op_add(const struct gn_codec_call *c, float *acc, u32 len,
		   u32 first, u32 count, u32 aux, const u8 *body, u32 blen);
void gn_tlc_op_decode(const struct gn_codec_call *c, float *out, u32 len,
		      u32 first, u32 count, u32 aux, const u8 *body, u32 blen);

#endif /* GN_TLC_OPS_H */
