/* SPDX-License-Identifier: MIT */
/*
 * cltk.h - CLT-k, ScaleCom's cyclic local top-k (<gradnet/codec.h>): its
 * parameters and the chunk scratch that its float unit (ops_fp.c) fills
 * and its integer unit (ops.c) slices. A leader selects with top-k's
 * selection, in top-k's chunk scratch; QSGD values are top-k's too.
 */
#ifndef GN_CODEC_CLTK_H
#define GN_CODEC_CLTK_H

#include "codec/codec.h"
#include "codec/topk/topk.h"

/* Words of the parameter block. */
#define GN_CLTK_W_DENSITY 0
#define GN_CLTK_W_BETA 1
#define GN_CLTK_W_WARMUP 2
#define GN_CLTK_W_BITS 3
#define GN_CLTK_W_BUCKET 4
#define GN_CLTK_W_NORM 5

#define GN_CLTK_BETA_ONE 0x3f800000u

struct gn_cltk {
	struct gn_topk sel;		/* density, block 0, the values' QSGD */
	u32 beta;			/* float32 bits */
	u32 warmup;
};

/*
 * A chunk's scratch: a header, top-k's chunk scratch (the set at idx[],
 * its values at val[], QSGD codes and norms; the selection's histograms)
 * and room for the old memory when a call updates it in place.
 */
struct gn_cltk_hdr {
	u32 nidx;			/* entries of the set; len: the chunk */
	u32 len;
	u32 cap;			/* values the layout was made for */
	u32 pad;
};

struct gn_cltk_chunk {
	struct gn_cltk_hdr *hdr;
	struct gn_topk_chunk ck;	/* idx[], val[], norms, code */
	float *mem;			/* cap values */
};

void gn_cltk_params(const struct gn_codec_params *p, struct gn_cltk *k);
void gn_cltk_chunk_at(const struct gn_cltk *k, const void *scratch, u32 cap,
		      struct gn_cltk_chunk *ch);
size_t gn_cltk_scratch_bytes(const struct gn_cltk *k, u32 chunk);
u64 gn_cltk_values_bytes(const struct gn_cltk *k, u32 n);
u32 gn_cltk_set_len(const struct gn_cltk *k, u32 step, u32 len);

/* Float operations (ops_fp.c), named by the table (ops.c). */
int gn_cltk_op_encode(const struct gn_codec_call *c, const float *x,
		      const float *e_in, float *e_out, size_t len, size_t chunk,
		      u64 off, void *scratch, size_t stride, u32 *aux);
void gn_cltk_op_own(const struct gn_codec_call *c, const void *scratch,
		    u32 aux, float *x, size_t len);
int gn_cltk_op_result(const struct gn_codec_call *c, float *sum,
		      const float *e_in, float *e_out, size_t len, u64 off,
		      void *scratch, u32 *aux);
void gn_cltk_op_add(const struct gn_codec_call *c, float *acc, u32 len,
		    u32 first, u32 count, u32 aux, const u8 *body, u32 blen);
void gn_cltk_op_decode(const struct gn_codec_call *c, float *out, u32 len,
		       u32 first, u32 count, u32 aux, const u8 *body, u32 blen);

#endif /* GN_CODEC_CLTK_H */
