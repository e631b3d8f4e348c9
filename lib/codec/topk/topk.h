/* SPDX-License-Identifier: MIT */
/*
 * topk.h - top-k with error feedback (<gradnet/codec.h>): its parameters,
 * the chunk scratch its float unit (select_fp.c, ops_fp.c) fills and its
 * integer unit (stream.c) slices and checks.
 */
#ifndef GN_CODEC_TOPK_H
#define GN_CODEC_TOPK_H

#include "codec/codec.h"
#include "codec/qsgd/qsgd.h"

/* Words of the parameter block: density, block, then QSGD's three. */
#define GN_TOPK_W_DENSITY 0
#define GN_TOPK_W_BLOCK 1
#define GN_TOPK_W_BITS 2
#define GN_TOPK_W_BUCKET 3
#define GN_TOPK_W_NORM 4

/* The chunk's word: which form its stream has. */
#define GN_TOPK_SPARSE 0
#define GN_TOPK_DENSE 1

/* Room for the selection's histograms: 2048 bins (11 bits of |a|). */
#define GN_TOPK_BINS 2048

struct gn_topk {
	u32 density;			/* float32 bits */
	u32 block;			/* 0: the chunk */
	bool qsgd;			/* values as QSGD codes */
	struct gn_qsgd q;
};

/*
 * A chunk's scratch: @nnz entries (sparse form) at idx[]/val[] in
 * position order, or (dense form) every position's value in val[]; with
 * QSGD, a code per entry or position and the bucket norms. @bytes is the
 * one-slice body of the form chosen.
 */
struct gn_topk_chunk {
	u32 nnz;
	u32 form;
	u32 bytes;
	u32 len;
	u32 cap;			/* values the layout was made for */
	u32 *idx;
	float *val;
	u8 *code;
	float *norms;
	u32 *hist;
	u32 *blk;			/* each block's selection so far */
};

void gn_topk_params(const struct gn_codec_params *p, struct gn_topk *t);
void gn_topk_chunk_at(const struct gn_topk *t, void *scratch, u32 cap,
		      struct gn_topk_chunk *ck);
void gn_topk_chunk_view(const struct gn_topk *t, const void *scratch,
			struct gn_topk_chunk *ck);
size_t gn_topk_scratch_bytes(const struct gn_topk *t, u32 chunk);
u32 gn_topk_k(u32 density, u32 m);
u64 gn_topk_sparse_bytes(const struct gn_topk *t, const u32 *idx, u32 nnz);
u64 gn_topk_dense_bytes(const struct gn_topk *t, u32 n);
void gn_topk_pick_form(const struct gn_topk *t, struct gn_topk_chunk *ck);
long gn_topk_slice(const struct gn_codec_params *p, const void *scratch,
		   u32 aux, const float *x, u32 len, u32 at, u8 *dst, u32 cap,
		   u32 *units);
u64 gn_topk_whole_bytes(const struct gn_codec_params *p, const void *scratch,
			u32 aux, u32 len);
long gn_topk_parse_sparse(const struct gn_topk *t, u32 len, u32 first,
			  u32 count, const u8 *body, u32 blen, u32 *e0_out,
			  u32 *vals_at);
int gn_topk_check_slice(const struct gn_codec_params *p, u32 len, u32 first,
			u32 count, u32 aux, const u8 *body, u32 blen);

/* Float operations (select_fp.c, ops_fp.c), named by the table (ops.c). */
long gn_topk_select(const struct gn_topk *t, struct gn_topk_chunk *ck,
		    const float *x, const float *e_in, float *e_out, bool nt);
int gn_topk_op_encode(const struct gn_codec_call *c, const float *x,
		      const float *e_in, float *e_out, size_t len, size_t chunk,
		      u64 off, void *scratch, size_t stride, u32 *aux);
void gn_topk_op_own(const struct gn_codec_call *c, const void *scratch,
		    u32 aux, float *x, size_t len);
int gn_topk_op_result(const struct gn_codec_call *c, float *sum,
		      const float *e_in, float *e_out, size_t len, u64 off,
		      void *scratch, u32 *aux);
void gn_topk_op_add(const struct gn_codec_call *c, float *acc, u32 len,
		    u32 first, u32 count, u32 aux, const u8 *body, u32 blen);
void gn_topk_op_decode(const struct gn_codec_call *c, float *out, u32 len,
		       u32 first, u32 count, u32 aux, const u8 *body, u32 blen);

#endif /* GN_CODEC_TOPK_H */
