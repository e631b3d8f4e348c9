/* SPDX-License-Identifier: MIT */
/*
 * model.h - model tensors: a tensor registered with an optimizer, whose
 * step takes a gradient and updates the caller's parameters in place.
 * model.c holds the options, the state and the integer work; model_fp.c
 * is its floating-point unit.
 *
 * A step is an allreduce with three differences. What a rank encodes is
 * its gradient, or with DORE the gradient's residual g - h_i, and the own
 * shard's share is encoded too, like any other rank's. The owner of a
 * shard turns the mean of the contributions into the shard's change
 * (SGD with its momentum and weight decay; with DORE its residual h and
 * its error compensation e) and sends the change encoded with the model
 * codec. And when the step completes, every rank adds the change it
 * decoded (the owner the very values it sent) into the parameters.
 * Until then the changes sit in the gradient's buffer and every new
 * state in the half of its double buffer the step writes, so a step that
 * fails leaves parameters and state as they were.
 */
#ifndef GN_COLLECTIVE_MODEL_H
#define GN_COLLECTIVE_MODEL_H

#include "codec/codec.h"

struct gn_ctx;
struct gn_tensor;
struct gn_step;
struct gn_core_model;

/* DORE's defaults, float32 bits: alpha 0.1, beta 1, eta 0.5. */
#define GN_DORE_ALPHA	0x3dcccccdu
#define GN_DORE_BETA	0x3f800000u
#define GN_DORE_ETA	0x3f000000u

/*
 * A model tensor's optimizer, its changes' codec and its state. Every
 * state array is double-buffered by the tensor's e_cur: a step reads
 * [e_cur] and writes [!e_cur], and only a completed step flips them.
 */
struct gn_model {
	const struct gn_codec_ops *cd;	/* the changes' codec */
	struct gn_codec_params params;	/* and its parameters */
	u32 flags;			/* GN_MODEL_* */
	u32 momentum, weight_decay;	/* float32 bits */
	u32 alpha, beta, eta;		/* float32 bits, defaults resolved */
	u32 digest;			/* of all the above, for the peers */
	float *hw[2];			/* DORE: h_i, the whole tensor */
	float *ho[2];			/* DORE: the owner's h, its shard */
	float *eo[2];			/* DORE: the owner's e, its shard */
	float *mom[2];			/* momentum: its shard */
	/*
	 * The changes' codec's own error feedback (its shard), when it
	 * keeps one. With DORE, whose e takes its place, [0] stays zero
	 * (the error the codec is given) and [1] takes what it returns; the
	 * gradients' codec gets the tensor's e_rs the same way.
	 */
	float *ef[2];
	/* Streams this rank decodes its own encodings from. */
	u8 *tmp;			/* an encode part's, tmp_len bytes each */
	size_t tmp_len;
	size_t res_scratch;		/* the changes' codec's chunk scratch,
					   aligned; a result slot's stream
					   follows it */
};

/* model.c */
int gn_model_setup(struct gn_ctx *ctx, const struct gn_core_tensor *o,
		   const struct gn_core_model *m, struct gn_codec_spec *up,
		   struct gn_model *out);
int gn_model_alloc(struct gn_ctx *ctx, struct gn_tensor *t);
void gn_model_free(struct gn_ctx *ctx, struct gn_tensor *t);
size_t gn_model_res_slot(const struct gn_ctx *ctx, const struct gn_tensor *t);
void gn_model_commit(struct gn_ctx *ctx, struct gn_step *st);
size_t gn_model_text(const struct gn_model *m, char *buf, size_t len);

/* model_fp.c (float) */
int gn_fp_model_encode(const struct gn_ctx *ctx, const struct gn_step *st,
		       int j, size_t off, size_t len, void *scratch, u32 *aux,
		       u8 *tmp);
int gn_fp_model_result(const struct gn_ctx *ctx, const struct gn_step *st,
		       size_t off, size_t len, void *scratch, u32 *aux);
void gn_fp_model_commit(const struct gn_step *st, size_t off, size_t len);

#endif /* GN_COLLECTIVE_MODEL_H */
