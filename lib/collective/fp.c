// SPDX-License-Identifier: MIT
/*
 * fp.c - the collective's floating-point unit: every call into a
 * compressor's float operations (encoding contributions, adding them,
 * encoding the owner's sum, decoding results), and into the integer ones
 * that a codec may run in SIMD kernels (cutting a stream into slices,
 * checking a slice that came: 3LC's zero-run code). The rest of
 * lib/delivery and lib/collective is integer-only and holds floats only by
 * pointer or as their bits, so in the kernel this file and the codecs'
 * float units are the only ones built with the FPU enabled, and each
 * function here is one FPU section (gn_simd_begin/end; a call to an empty
 * function in userspace).
 */
#include "core.h"
#include "codec/entropy/entropy.h"
#include "codec/rng.h"

/*
 * What a codec call of @st knows: the codec of @phase's streams and its
 * parameters, @phase and this rank key the generator, @ef_len is the size
 * of the error buffer the call writes into.
 */
struct gn_codec_call gn_fp_call(const struct gn_ctx *ctx,
			       const struct gn_step *st, u8 phase,
			       size_t ef_len)
{
	const struct gn_tensor *t = st->t;
	const struct gn_codec_params *p;
	const struct gn_codec_ops *cd = gn_phase_codec(t, phase, &p);
	struct gn_codec_call c = {
		.p = p, .world = (u32)ctx->world,
		.average = t->flags & GN_TENSOR_AVERAGE, .ef_len = ef_len,
		.step = gn_index_step(st),
	};

	if (cd->flags & GN_CODEC_STOCHASTIC)
		c.seed = gn_draw_seed(ctx->dl.job, t->id, st->no,
				     (u32)ctx->rank, phase);
	return c;
}

/*
 * Chunks [off, off + len) of the caller's gradient, @chunk values each,
 * into @scratch and @aux. Error feedback is double-buffered and encoded a
 * few chunks per call: the buffer written is read again only at the next
 * step, after the whole tensor (or, in gn_fp_result(), the own shard) has
 * gone through the caches, so the store flags come from the buffer's
 * size, not the call's.
 */
int gn_fp_encode(const struct gn_ctx *ctx, const struct gn_step *st,
		 size_t off, size_t len, size_t chunk, void *scratch,
		 u32 *aux)
{
	const struct gn_tensor *t = st->t;
	bool ef = t->cd->flags & GN_CODEC_EF_REDUCE;
	struct gn_codec_call c = gn_fp_call(ctx, st, GN_PHASE_REDUCE,
					 ef ? t->n : 0);
	int r;

	gn_simd_begin();
	r = t->cd->encode(&c, st->data + off, ef ? t->e_rs[t->e_cur] + off : NULL,
			  ef ? t->e_rs[!t->e_cur] + off : NULL, len, chunk, off,
			  scratch, t->stride, aux);
	gn_simd_end();
	return r;
}

/*
 * One chunk of a codec with an index round: at the set @idx of @nidx
 * entries, or (NULL) the leader's selection or the whole chunk.
 */
int gn_fp_encode_at(const struct gn_ctx *ctx, const struct gn_step *st,
		    size_t off, size_t len, const u32 *idx, u32 nidx,
		    void *scratch, u32 *aux)
{
	const struct gn_tensor *t = st->t;
	struct gn_codec_call c = gn_fp_call(ctx, st, GN_PHASE_REDUCE, t->n);
	int r;

	c.idx = idx;
	c.nidx = nidx;
	gn_simd_begin();
	r = t->cd->encode(&c, st->data + off, t->e_rs[t->e_cur] + off,
			  t->e_rs[!t->e_cur] + off, len, len, off, scratch,
			  t->stride, aux);
	gn_simd_end();
	return r;
}

/* The owner's own share of a chunk, as its encoding stands for it. */
void gn_fp_own(const struct gn_ctx *ctx, const struct gn_step *st,
	       const void *scratch, u32 aux, size_t off, size_t len)
{
	struct gn_codec_call c = gn_fp_call(ctx, st, GN_PHASE_REDUCE, 0);

	if (!st->t->cd->own)
		return;
	gn_simd_begin();
	st->t->cd->own(&c, scratch, aux, st->data + off, len);
	gn_simd_end();
}

/*
 * The owner's sum of a chunk, @len values at @off of the caller's tensor:
 * its result stream into @scratch and *@aux, and the sum rewritten to what
 * every rank decodes (or left for gn_fp_finish()).
 * Return: 0, or -EDOM when the sum is not finite.
 */
int gn_fp_result(const struct gn_ctx *ctx, const struct gn_step *st,
		 size_t off, size_t len, void *scratch, u32 *aux)
{
	const struct gn_tensor *t = st->t;
	size_t rel = off - t->lo[ctx->rank];
	size_t own = t->lo[ctx->rank + 1] - t->lo[ctx->rank];
	bool ef = t->cd->flags & GN_CODEC_EF_RESULT;
	struct gn_codec_call c = gn_fp_call(ctx, st, GN_PHASE_GATHER,
					 ef ? own : 0);
	int r;

	gn_index_set(ctx, st, off, (u32)len, &c);
	gn_simd_begin();
	r = t->cd->result(&c, st->data + off,
			  ef ? t->e_ag[t->e_cur] + rel : NULL,
			  ef ? t->e_ag[!t->e_cur] + rel : NULL, len, off,
			  scratch, aux);
	gn_simd_end();
	return r ? -EDOM : 0;
}

void gn_fp_finish(const struct gn_ctx *ctx, const struct gn_step *st,
		  size_t off, size_t len)
{
	struct gn_codec_call c = gn_fp_call(ctx, st, GN_PHASE_GATHER, 0);

	if (!st->t->cd->finish)
		return;
	gn_simd_begin();
	st->t->cd->finish(&c, st->data + off, len);
	gn_simd_end();
}

/* Add one slice of a contribution to the own shard's sum. */
void gn_fp_add_slice(const struct gn_ctx *ctx, const struct gn_step *st,
		     float *acc, size_t len, const struct gn_wire_data *d,
		     const u8 *body, u16 blen)
{
	struct gn_codec_call c = gn_fp_call(ctx, st, GN_PHASE_REDUCE, 0);

	gn_index_set(ctx, st, d->chunk_off, d->chunk_len, &c);
	gn_simd_begin();
	st->t->cd->add(&c, acc, (u32)len, d->first, d->count, d->aux, body,
		       blen);
	gn_simd_end();
}

/* A slice of an owner's result into the chunk at @out. */
void gn_fp_result_slice(const struct gn_ctx *ctx, const struct gn_step *st,
			float *out, const struct gn_wire_data *d,
			const u8 *body, u16 blen)
{
	struct gn_codec_call c = gn_fp_call(ctx, st, GN_PHASE_GATHER, 0);
	const struct gn_codec_params *p;
	const struct gn_codec_ops *cd = gn_phase_codec(st->t, GN_PHASE_GATHER,
						       &p);

	gn_index_set(ctx, st, d->chunk_off, d->chunk_len, &c);
	gn_simd_begin();
	cd->decode(&c, out, d->chunk_len, d->first, d->count, d->aux, body,
		   blen);
	gn_simd_end();
}

/*
 * A slice of a chunk's stream cut into @dst (pack.c). No float here, but
 * the codec may cut it with SIMD kernels, which in the kernel must not run
 * outside an FPU section: they would overwrite the vector registers of the
 * user task that last ran on the CPU, which the kernel saved when it
 * switched away and does not load again while that task still owns them.
 */
long gn_fp_slice(const struct gn_codec_ops *cd,
		 const struct gn_codec_params *p, const void *scratch, u32 aux,
		 const float *x, u32 len, u32 at, u8 *dst, u32 cap, u32 *units)
{
	long n;

	gn_simd_begin();
	n = cd->slice(p, scratch, aux, x, len, at, dst, cap, units);
	gn_simd_end();
	return n;
}

/* The same through the entropy stage with encoder @z (pack.c). */
long gn_fp_entropy_slice(const struct gn_codec_ops *cd,
			 const struct gn_codec_params *p, const void *scratch,
			 u32 aux, const float *x, u32 len, u32 at,
			 struct gn_entropy_enc *z, u8 *dst, u32 cap,
			 u32 *units, bool *coded, u32 *next)
{
	long n;

	gn_simd_begin();
	n = gn_entropy_slice(cd, p, scratch, aux, x, len, at, z, dst, cap,
			     units, coded, next);
	gn_simd_end();
	return n;
}

/* The codec's check of a slice that came (reduce.c), as gn_fp_slice(). */
int gn_fp_check_slice(const struct gn_codec_ops *cd,
		      const struct gn_codec_params *p, u32 len, u32 first,
		      u32 count, u32 aux, const u8 *body, u32 blen)
{
	int r;

	gn_simd_begin();
	r = cd->check_slice(p, len, first, count, aux, body, blen);
	gn_simd_end();
	return r;
}
