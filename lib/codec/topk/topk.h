/* SPDX-License-Identifier: MIT */
/*
 * topk.h - top-k with error feedback (<gradnet/codec.h>): its parameters,
 * the chunk scratch its float unit (select_fp.c, ops_fp.c) fills and its
 * integer unit (stream.c) slices and checks. Its sparse stream names an
 * index codec (lib/codec/index) and a value codec (float32, float16,
 * QSGD, curve fitting).
 */
#ifndef GN_CODEC_TOPK_H
#define GN_CODEC_TOPK_H

#include "codec/codec.h"
#include "codec/index/bloom.h"
#include "codec/index/index.h"
#include "codec/qsgd/qsgd.h"
#include "codec/value/fit.h"

/*
 * Words of the parameter block: density, block, QSGD's three, then the
 * index codec, the Bloom filter's false-positive rate and the value codec.
 */
#define GN_TOPK_W_DENSITY 0
#define GN_TOPK_W_BLOCK 1
#define GN_TOPK_W_BITS 2
#define GN_TOPK_W_BUCKET 3
#define GN_TOPK_W_NORM 4
#define GN_TOPK_W_IDX 5
#define GN_TOPK_W_FPR 6
#define GN_TOPK_W_VAL 7

/* idx: GN_IDX_* (lib/codec/index), or the smallest list codec per chunk. */
#define GN_TOPK_IDX_AUTO 6
/* val: the value codec. */
#define GN_TOPK_VAL_F32 0
#define GN_TOPK_VAL_F16 1
#define GN_TOPK_VAL_QSGD 2
#define GN_TOPK_VAL_FIT 3
/* QSGD values when val=qsgd gives no bits. */
#define GN_TOPK_QSGD_BITS 4

/*
 * The chunk's word (aux): byte 0 its form, byte 1 a sparse stream's index
 * codec, bytes 2-3 a Bloom stream's salt, which keys its hash functions.
 */
#define GN_TOPK_SPARSE 0
#define GN_TOPK_DENSE 1
#define GN_TOPK_AUX(form, idx, salt) ((form) | (idx) << 8 | (salt) << 16)
#define GN_TOPK_AUX_FORM(aux) ((aux) & 0xff)
#define GN_TOPK_AUX_IDX(aux) ((aux) >> 8 & 0xff)
#define GN_TOPK_AUX_SALT(aux) ((aux) >> 16)

/*
 * A Bloom group's body as a slice of its own, at most: a larger one is
 * halved. A packet's body holds one (check: at least GN_TOPK_BLOOM_CAP).
 */
#define GN_TOPK_BLOOM_BYTES 224
#define GN_TOPK_BLOOM_CAP 448
/* In tru[], the first entry of each Bloom group. */
#define GN_TOPK_GROUP_START (1u << 31)

/* Room for the selection's histograms: 2048 bins (11 bits of |a|). */
#define GN_TOPK_BINS 2048

struct gn_topk {
	u32 density;			/* float32 bits */
	u32 block;			/* 0: the chunk */
	u32 idx;			/* GN_IDX_* or GN_TOPK_IDX_AUTO */
	u32 val;			/* GN_TOPK_VAL_* (QSGD when bits) */
	bool qsgd;			/* values as QSGD codes */
	struct gn_qsgd q;
	struct gn_bloom bloom;
	u32 fit_bucket;			/* values a fitted curve covers */
};

/*
 * A chunk's scratch: @nnz values of the sparse form at idx[]/val[] in
 * position order (the entries, or with a Bloom filter the positions its
 * policy gives), or (dense form) every position's value in val[]; with
 * QSGD, a code per value and the bucket norms; fitted, each value's rank
 * and decoded value and each bucket's curve. With a Bloom filter, the
 * @ntrue entries at tru[] (group starts flagged) and tval[]. @bytes is
 * the one-slice body of the form chosen, @idx_codec its index codec and
 * @salt its Bloom salt.
 */
struct gn_topk_chunk {
	u32 nnz;
	u32 form;
	u32 bytes;
	u32 len;
	u32 cap;			/* values the layout was made for */
	u32 idx_codec;
	u32 salt;
	u32 ntrue;
	u32 *idx;
	float *val;
	u8 *code;
	float *norms;
	u32 *hist;
	u32 *blk;			/* each block's selection so far */
	u32 *tru;
	float *tval;
	u64 *gmap;			/* bit t: tru[t] starts a group */
	struct gn_fit_bucket *fith;
	u16 *rank;
	float *fitv;
	u64 *fkeys;			/* the fit's sort, a bucket at a time */
};

void gn_topk_params(const struct gn_codec_params *p, struct gn_topk *t);
void gn_topk_chunk_at(const struct gn_topk *t, void *scratch, u32 cap,
		      struct gn_topk_chunk *ck);
void gn_topk_chunk_view(const struct gn_topk *t, const void *scratch,
			struct gn_topk_chunk *ck);
size_t gn_topk_scratch_bytes(const struct gn_topk *t, u32 chunk);
u32 gn_topk_k(u32 density, u32 m);
u64 gn_topk_dense_bytes(const struct gn_topk *t, u32 n);
void gn_topk_bloom_build(const struct gn_topk *t, struct gn_topk_chunk *ck,
			 const float *rest);
void gn_topk_pick_form(const struct gn_topk *t, struct gn_topk_chunk *ck);
u32 gn_topk_aux(const struct gn_topk_chunk *ck);
long gn_topk_slice(const struct gn_codec_params *p, const void *scratch,
		   u32 aux, const float *x, u32 len, u32 at, u8 *dst, u32 cap,
		   u32 *units);
u64 gn_topk_whole_bytes(const struct gn_codec_params *p, const void *scratch,
			u32 aux, u32 len);
/* A checked sparse slice: its value count, first value and parts. */
struct gn_topk_sparse {
	u32 n, e0;
	u32 idx_codec;
	u64 key;			/* Bloom: the chunk's key */
	u32 idx_at;			/* the index part */
	u32 vals_at;			/* the value part */
};

long gn_topk_parse_sparse(const struct gn_topk *t, u32 len, u32 first,
			  u32 count, u32 aux, const u8 *body, u32 blen,
			  struct gn_topk_sparse *sp);
void gn_topk_locate_sparse(const struct gn_topk *t, u32 aux, const u8 *body,
			   struct gn_topk_sparse *sp);
u32 gn_topk_next_group(const struct gn_topk *t, const u8 *body, u32 *at,
		       u32 *end, struct gn_bloom_group *g);
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
