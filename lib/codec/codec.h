/* SPDX-License-Identifier: MIT */
/*
 * codec.h - the compressor seam: what the collective knows of a compressor.
 * Each compressor is a folder of lib/codec with one struct gn_codec_ops, and
 * registry.c lists them by id. Above lib/codec nothing names a compressor:
 * the collective calls these operations and reads these flags. Freestanding.
 *
 * The model every compressor fits. A tensor is cut into chunks (at most the
 * job's chunk size, cut at bucket members unless GN_CODEC_ELEMENTWISE). A
 * rank encodes each chunk it contributes into a per-chunk scratch (float
 * work, with error feedback where the codec keeps it), then the packer cuts
 * the chunk's stream into slices, one per packet, by calling @slice
 * (integer work). A slice covers the units [first, first + count) of its
 * chunk, and the slices of a message cover the chunk's units exactly once:
 * groups of five values for 3LC, values for every other codec. Every slice
 * decodes alone, in any order: a packet is self-contained (ARCHITECTURE).
 *
 * The owner of a chunk adds the contributions in rank order into the
 * caller's tensor, its own share first (as it is, or through @encode and
 * @own with GN_CODEC_OWN_ENCODED), then @result turns the sum into the
 * result stream and rewrites the sum with what every receiver will decode,
 * so the owner's values are bit-identical to everyone else's.
 *
 * A codec with GN_CODEC_INDEX_ROUND (CLT-k) has its contributions and
 * results at an index set I of each chunk that one rank, the chunk's
 * leader, picks: the leader sends I to every rank first (the index round,
 * the stream of gn_index_slice()), and a chunk's values are then the
 * values at I, entry by entry: its units are I's entries, its word is
 * |I|. A chunk whose set is the whole chunk (index_len() == len) has no
 * index round: its units are its values.
 *
 * FPU rule: the operations marked "float" run inside one FPU section of the
 * caller (lib/collective/fp.c) and their files are FPU units in the kernel
 * build; so do the ones marked "SIMD", integer work that a codec may do
 * with SIMD kernels (which in the kernel would otherwise overwrite the
 * vector registers of the task that last used them); the others are
 * integer-only and run anywhere.
 */
#ifndef GN_CODEC_CODEC_H
#define GN_CODEC_CODEC_H

#include "gn_deps.h"
#include <gradnet/gradnet.h>

/* Words of a tensor's parameter block: what the descriptor carries. */
#define GN_CODEC_PARAM_WORDS 8
#define GN_CODEC_PARAM_BYTES (4 * GN_CODEC_PARAM_WORDS)
/*
 * After the codec's words, the entropy stage's (entropy/entropy.h), which
 * every codec has: parameter words GN_CODEC_PARAM_WORDS and up of the
 * tables, given bits 8 and 9, stage[0] and stage[1] here.
 */
#define GN_STAGE_WORDS 2
#define GN_PARAM_WORDS_ALL (GN_CODEC_PARAM_WORDS + GN_STAGE_WORDS)

struct gn_codec_params {
	u32 w[GN_CODEC_PARAM_WORDS];
	u32 stage[GN_STAGE_WORDS];
};

/* Parameter word @word of @p: the codec's, or past them the stage's. */
static inline u32 *gn_param_word(struct gn_codec_params *p, u32 word)
{
	return word < GN_CODEC_PARAM_WORDS ? &p->w[word] :
					     &p->stage[word - GN_CODEC_PARAM_WORDS];
}

static inline u32 gn_param_get(const struct gn_codec_params *p, u32 word)
{
	return word < GN_CODEC_PARAM_WORDS ? p->w[word] :
					     p->stage[word - GN_CODEC_PARAM_WORDS];
}

/*
 * A codec and the parameters a caller set: bit i of @given says word i
 * (gn_param_word()) was set; the others take the job's value (same codec)
 * or the default (gn_codec_resolve()). @codec 0 is the job's codec.
 */
struct gn_codec_spec {
	u32 codec;
	u32 given;
	struct gn_codec_params p;
};

/* How a parameter word is read and checked (integer-only). */
enum gn_param_type {
	GN_PARAM_F32,	/* float32 bits, finite and positive: [lo, hi] as bits */
	GN_PARAM_U32,	/* an integer in [lo, hi] */
	GN_PARAM_ENUM,	/* 0..hi, named by @choices */
};

struct gn_codec_param {
	const char *name;
	u8 word;
	u8 type;
	u32 def;
	u32 lo, hi;
	const char *const *choices;
	const char *range;		/* the valid values in words, where the
					   bounds' bits print ambiguously */
	const char *what;		/* one line for tools and messages */
};

/* One call's context: the parameters and what keys the generator. */
struct gn_codec_call {
	const struct gn_codec_params *p;
	u64 seed;		/* gn_draw_seed() of (job, tensor, step, rank, phase) */
	u32 world;		/* ranks: the divisor of an average */
	bool average;		/* results are the mean, not the sum */
	size_t ef_len;		/* values of the whole error buffer the call
				   writes (a codec that streams long buffers
				   past the caches decides by it) */
	u32 step;		/* steps of the tensor's registration before
				   this one (0 for its first) */
	const u32 *idx;		/* GN_CODEC_INDEX_ROUND: the chunk's index
				   set, nidx increasing positions; NULL: the
				   whole chunk, or (encode) this rank leads */
	u32 nidx;
};

/* struct gn_codec_ops.flags */
#define GN_CODEC_EF_REDUCE	(1u << 0)	/* error feedback of the whole
						   tensor, contributions */
#define GN_CODEC_EF_RESULT	(1u << 1)	/* error feedback of the own
						   shard, results */
#define GN_CODEC_OWN_ENCODED	(1u << 2)	/* the owner's own share goes
						   through @encode and @own */
#define GN_CODEC_RECOMPRESS	(1u << 3)	/* the owner compresses the sum
						   anew (else the contributions'
						   form carries over exactly) */
#define GN_CODEC_ELEMENTWISE	(1u << 4)	/* each value coded alone: chunk
						   bounds change no value */
#define GN_CODEC_STOCHASTIC	(1u << 5)	/* uses the seeded generator */
#define GN_CODEC_INDEX_ROUND	(1u << 6)	/* values at an index set the
						   chunk's leader sends first */

/*
 * struct gn_codec_ops - one compressor
 * @name: what GN_CODEC, the API's spec strings and tools call it
 * @id: enum gn_codec: the wire's codec byte and the ioctl ABI's value
 * @flags: GN_CODEC_*
 * @params, @nparams: its parameters; words no entry names must be 0
 * @stream_extra: bytes a chunk stream has besides its slices' bodies (3LC's
 *	scale), for the stream_bytes counter
 * @check: whatever the table's ranges cannot say (may be NULL); @chunk is
 *	the job's chunk size, @body_cap the body bytes of a DATA packet
 * @units: units of a chunk of @len values (the slices' first and count)
 * @pkts_max: the most DATA packets a chunk's message of @len values can
 *	take at @cap body bytes each; receivers refuse more
 * @scratch: bytes of scratch a chunk of up to @chunk values needs, for
 *	@encode and for @result (the same size)
 * @bound: the most bytes a slice of a whole chunk of @len values can take
 *
 * Contributions (float, except @slice and @whole_bytes):
 * @encode: chunks [off, off + len) of a tensor, @chunk values each (the
 *	last may be shorter): x plus the error e_in (NULL without
 *	GN_CODEC_EF_REDUCE) into chunk k's scratch at @scratch + k * @stride
 *	and its word at @aux[k]; the new error into e_out. Return: 0; -EDOM if
 *	a value is not finite (e_out is then unspecified from that chunk on,
 *	e_in untouched when it is another buffer: the collective keeps two);
 *	-EINVAL.
 * @own: write what chunk @scratch contributes into @x (len values), for
 *	GN_CODEC_OWN_ENCODED.
 *
 * Results (float):
 * @result: the owner's sum of a chunk into @scratch and *@aux, with the
 *	own-shard error e_in/e_out under GN_CODEC_EF_RESULT (else NULL), and
 *	@sum rewritten to what a receiver decodes, unless @finish does that
 *	after packing. Return: 0, -EDOM (the sum is not finite), -EINVAL.
 * @finish: (may be NULL) the same rewrite for codecs whose slices read the
 *	sum itself (@slice's @x), after they were packed.
 *
 * Streams (integer; @slice and @check_slice SIMD, 3LC's zero-run code):
 * @slice: from unit @at of a chunk, the longest slice that fits @cap bytes
 *	at @dst; *@units its units (> 0). @x is the chunk's values (the sum,
 *	for a result), for codecs whose slices are values. Return: bytes
 *	written, or -ENOSPC when not one unit fits, -EINVAL.
 * @whole_bytes: an upper bound of the chunk as one slice, in bytes: a
 *	message whose bound fits a WHOLE packet is sent as one.
 * @check_slice: a received slice before it touches anything: its units
 *	inside the chunk, its word, its body (every index, every length,
 *	every value that could make a decoder misbehave or a result differ).
 *	Return: 0 or -EBADMSG.
 *
 * Receive (float; the slice passed @check_slice):
 * @add: a contribution's slice, added into the owner's @acc (the chunk).
 * @decode: a result's slice: its units of @out (the chunk) overwritten
 *	with what it stands for, divided by the world size if @c->average.
 *
 * The index round (GN_CODEC_INDEX_ROUND, else NULL; integer): @c->idx
 * and @c->nidx give the chunk's set to @encode (one chunk a call; NULL:
 * this rank leads and selects it), @result, @add and @decode; a slice's
 * word is the set's size, which the collective checks against
 * @index_len before @check_slice.
 * @index_len: entries of the set of a chunk of @len values at step
 *	@step (struct gn_codec_call's); @len: the whole chunk, no round.
 * @index_set: the set a leader's @encode selected, in its @scratch.
 */
struct gn_codec_ops {
	const char *name;
	u8 id;
	u32 flags;
	const struct gn_codec_param *params;
	u32 nparams;
	u32 stream_extra;
	int (*check)(const struct gn_codec_params *p, u32 chunk, u32 body_cap,
		     char *msg, size_t len);
	u32 (*units)(u32 len);
	u32 (*pkts_max)(const struct gn_codec_params *p, u32 len, u32 cap);
	size_t (*scratch)(const struct gn_codec_params *p, u32 chunk);
	u64 (*bound)(const struct gn_codec_params *p, u32 len);

	int (*encode)(const struct gn_codec_call *c, const float *x,
		      const float *e_in, float *e_out, size_t len,
		      size_t chunk, u64 off, void *scratch, size_t stride,
		      u32 *aux);
	void (*own)(const struct gn_codec_call *c, const void *scratch,
		    u32 aux, float *x, size_t len);
	int (*result)(const struct gn_codec_call *c, float *sum,
		      const float *e_in, float *e_out, size_t len, u64 off,
		      void *scratch, u32 *aux);
	void (*finish)(const struct gn_codec_call *c, float *sum, size_t len);

	long (*slice)(const struct gn_codec_params *p, const void *scratch,
		      u32 aux, const float *x, u32 len, u32 at, u8 *dst,
		      u32 cap, u32 *units);
	u64 (*whole_bytes)(const struct gn_codec_params *p,
			   const void *scratch, u32 aux, u32 len);
	int (*check_slice)(const struct gn_codec_params *p, u32 len, u32 first,
			   u32 count, u32 aux, const u8 *body, u32 blen);

	void (*add)(const struct gn_codec_call *c, float *acc, u32 len,
		    u32 first, u32 count, u32 aux, const u8 *body, u32 blen);
	void (*decode)(const struct gn_codec_call *c, float *out, u32 len,
		       u32 first, u32 count, u32 aux, const u8 *body, u32 blen);

	u32 (*index_len)(const struct gn_codec_params *p, u32 step, u32 len);
	const u32 *(*index_set)(const void *scratch);
};

/*
 * No NaN or infinity in the @n float32 at @v (aligned or not, as in a
 * packet)? A bit test, integer-only, so any file may call it: an exponent
 * of all ones plus one carries into bit 31, and no other exponent does.
 * And, add, or: four values in three SSE2 instructions (an unsigned
 * maximum, which SSE2 lacks, took twice the instructions).
 */
static inline bool gn_f32_all_finite(const void *v, size_t n)
{
	u32 carry = 0, b;
	size_t i;

	for (i = 0; i < n; i++) {
		memcpy(&b, (const u8 *)v + 4 * i, sizeof(b));
		carry |= (b & 0x7f800000u) + 0x00800000u;
	}
	return !(carry & 0x80000000u);
}

/*
 * stream.c: a whole chunk as one stream, its word (little-endian) then its
 * one slice, for tools, tests and fuzzers (3LC's is gn_tlc_encode()'s). A
 * codec call's float work runs in the caller's FPU section.
 */
#define GN_CODEC_STREAM_AUX 4
u64 gn_codec_stream_bound(const struct gn_codec_ops *c,
			  const struct gn_codec_params *p, u32 n);
long gn_codec_stream_encode(const struct gn_codec_ops *c,
			    const struct gn_codec_call *call, const float *x,
			    const float *e_in, float *e_out, u32 n,
			    void *scratch, u8 *dst, size_t cap);
int gn_codec_stream_decode(const struct gn_codec_ops *c,
			   const struct gn_codec_call *call, const u8 *src,
			   size_t len, float *out, u32 n);

/*
 * index/round.c: the index round's stream (<gradnet/codec.h>): a slice of
 * a chunk's index set, entries [first, first + count), as varints.
 * Integer-only.
 */
long gn_index_slice(const u32 *idx, u32 n, u32 at, u8 *dst, u32 cap,
		    u32 *units);
long gn_index_check(u32 len, u32 count, const u8 *body, u32 blen);
void gn_index_take(u32 count, const u8 *body, u32 *idx);
u32 gn_index_pkts_max(u32 n, u32 cap);

/* registry.c */
const struct gn_codec_ops *gn_codec_find(u32 id);
/* The i-th parameter of @c, its own first, then the stage's; NULL past. */
const struct gn_codec_param *gn_codec_param_at(const struct gn_codec_ops *c,
					       u32 i);
const struct gn_codec_ops *gn_codec_by_name(const char *name, size_t len);
const struct gn_codec_ops *gn_codec_at(u32 i);
const struct gn_codec_param *gn_codec_param_find(const struct gn_codec_ops *c,
						 const char *name, size_t len);
void gn_codec_defaults(const struct gn_codec_ops *c, struct gn_codec_params *p);
int gn_codec_params_check(const struct gn_codec_ops *c,
			  const struct gn_codec_params *p, u32 chunk,
			  u32 body_cap, char *msg, size_t len);
int gn_codec_resolve(const struct gn_codec_spec *job,
		     const struct gn_codec_spec *t, struct gn_codec_spec *out,
		     char *msg, size_t len);
bool gn_codec_params_diff(const struct gn_codec_ops *c,
			  const struct gn_codec_params *a,
			  const struct gn_codec_params *b, char *msg,
			  size_t len);
size_t gn_codec_param_text(const struct gn_codec_param *d, u32 v, char *buf,
			   size_t len);
size_t gn_codec_spec_text(const struct gn_codec_ops *c,
			  const struct gn_codec_params *p, char *buf,
			  size_t len);
const char *gn_codec_name_of(u32 id);

#endif /* GN_CODEC_CODEC_H */
