/* SPDX-License-Identifier: MIT */
/*
 * dense_ops.h - the dense codec's float operations (ops_fp.c), which its
 * integer table (ops.c) names.
 */
#ifndef GN_DENSE_OPS_H
#define GN_DENSE_OPS_H

#include "codec/codec.h"

int gn_dense_op_encode(const struct gn_codec_call *c, const float *x,
		       const float *e_in, float *e_out, size_t len,
		       size_t chunk, u64 off, void *scratch, size_t stride,
		       u32 *aux);
int gn_dense_op_result(const struct gn_codec_call *c, float *sum,
		       const float *e_in, float *e_out, size_t len, u64 off,
		       void *scratch, u32 *aux);
void gn_dense_op_finish(const struct gn_codec_call *c, float *sum,
			size_t len);
void gn_dense_op_add(const struct gn_codec_call *c, float *acc, u32 len,
		     u32 first, u32 count, u32 aux, const u8 *body, u32 blen);
void gn_dense_op_decode(const struct gn_codec_call *c, float *out, u32 len,
			u32 first, u32 count, u32 aux, const u8 *body,
			u32 blen);

#endif /* GN_DENSE_OPS_H */
