/* SPDX-License-Identifier: MIT */
/*
 * gradnet/codec.h - gradnet's compressors, specified: 3LC (three-value
 * quantization with sparsity multiplication and error feedback, quartic
 * encoding and zero-run encoding), QSGD and top-k, the generator the
 * stochastic ones draw from, and the entropy stage any of them may have. The functions below are 3LC's; every codec is
 * reached through the registry (lib/codec/codec.h). Freestanding: the same
 * code runs in libgradnet, the DPDK path and the kernel module.
 *
 * In every specification here the scalar implementation is the reference;
 * every SIMD version produces identical bytes and identical floats. Float
 * arithmetic is IEEE binary32 (binary64 where it says so), round to
 * nearest, no fused multiply-add, denormals kept. All integers on the
 * wire are little-endian.
 *
 * ==== 3LC ====
 *
 * A chunk is n float32 values x[0..n), with an error-feedback buffer e[0..n)
 * and a sparsity multiplier s, 1 <= s < 2.
 *
 * Quantize. t_i = x_i + e_i (float32 add, round to nearest, denormals kept).
 *   maxabs = max |t_i| (0 for n = 0). M = s * maxabs, in float32.
 *   h = 0.5f * M, in float32. q_i = +1 if t_i > h, -1 if t_i < -h, else 0.
 *   Then e_i = t_i - q_i*M, where q_i*M is M, -M or +0.
 *   If any t_i is NaN or infinite, or M overflows to infinity, the call
 *   returns -EDOM and e is left unchanged. s outside [1, 2) is -EINVAL.
 *
 * Quartic encoding. g = ceil(n/5) groups. Partition k (0..4) holds elements
 *   [k*g, (k+1)*g); an element at index >= n counts as q = 0. Group j is the
 *   byte 81(q_j+1) + 27(q_{g+j}+1) + 9(q_{2g+j}+1) + 3(q_{3g+j}+1)
 *   + (q_{4g+j}+1), a value in 0..242. A group of five zeros is 121.
 *
 * Zero-run encoding. Each maximal run of r consecutive 121 bytes becomes:
 *   for r = 1 the byte 121; for r >= 2, floor(r/14) bytes 255, then for
 *   rem = r mod 14 nothing if rem = 0, 121 if rem = 1, 241 + rem if rem >= 2.
 *   Bytes 0..242 are literal groups, 243..255 are runs of 2..14 zero groups.
 *
 * Chunk stream. M as float32 little-endian (4 bytes), then the zero-run
 *   encoded groups 0..g-1. gn_tlc_encode_bound(n) = 4 + g bytes.
 *
 * Decode-accumulate. acc_i += q_i*M for the nonzero q_i only (acc_i + M or
 *   acc_i - M); zero groups and runs advance without touching acc. A stream
 *   is malformed, and the call returns -EBADMSG with acc untouched, if
 *   its groups do not add up to exactly the expected count (it ends early or
 *   has trailing bytes), if M is not finite or has its sign bit set, or if
 *   a group gives a nonzero trit to an element at index >= n (the encoder
 *   never does either). Whatever the bytes, a decoder never reads past its
 *   input and never writes outside acc[0..n).
 *
 * Packets. A chunk's groups may be carried in several pieces ("slices"):
 *   a slice is the zero-run encoding of groups [j0, j0 + count) on its own,
 *   runs cut at the slice boundary. gn_zre_encode() cuts slices greedily to
 *   a byte budget; gn_tlc_decode_slice() decodes one given j0, count and M.
 *
 * ==== Dense (codec "none") ====
 *
 * The values as they are, float32: units are values, a slice is the
 * count values [first, first + count) of its chunk, back to back, and the
 * chunk's word is 0. The owner adds the others' values to its own share in
 * rank order and sends the sum; an averaged result is the sum / (float)W
 * on every rank. A slice is refused if its word is not 0, its body is not
 * 4 count bytes, or a value is not finite (no rank sends one: a rank
 * checks its gradient, an owner its sum).
 *
 * ==== The generator (every stochastic codec) ====
 *
 * mix(z): z ^= z >> 30; z *= 0xbf58476d1ce4e5b9; z ^= z >> 27;
 *	   z *= 0x94d049bb133111eb; return z ^ z >> 31	(all mod 2^64)
 * seed = mix(mix(job << 32 | tensor) ^ (step << 32 | rank << 8 | phase)),
 *	rank the sender's (the owner's for a result), phase 0 for
 *	contributions and 1 for results (gradnet-codec --seed gives seed);
 * key = mix(seed ^ chunk_off * G), G = 0x9e3779b97f4a7c15, chunk_off the
 *	chunk's first element in the tensor (0 for a gradnet-codec stream);
 * u(c) = mix(key + (c + 1) * G) >> 40: a uniform integer in [0, 2^24) for
 *	counter c, and U(c) = u(c) * 2^-24 exactly as a float32.
 *
 * ==== QSGD (codec "qsgd", and top-k's values) ====
 *
 * Parameters: bits (2, 4 or 8, default 4), bucket (values per bucket, 16
 * to 65536; 0, the default, is 512, or 128 at 2 bits), norm (l2, the
 * default, or max). s = 2^(bits-1) - 1 levels (1, 7, 127).
 *
 * A sequence v[0..m) (a chunk's values, or a sparse stream's values) is cut
 * into buckets of B values, the last shorter. Bucket b, with values
 * w = v[bB, bB + m_b):
 *   norm: max: max |w_j|, exactly. l2: in binary64, lane i (0..7) sums
 *	(double)w_j * (double)w_j over the j = i mod 8 in order of j; then
 *	a_i = l_i + l_{i+4}, b_i = a_i + a_{i+2}, sum = b_0 + b_1; norm =
 *	(float)sqrt(sum). A norm that is not finite is -EDOM.
 *   level of w_j (norm > 0): r = ((float)s * |w_j|) / norm; l = floor(r),
 *	at most s; p = r - l; q = l + 1 if U(c) < p and l < s, else l;
 *	c is the value's counter: its index in the sequence (the chunk's
 *	value index; for sparse values the entry's index in the chunk's
 *	stream). norm = 0: every q is 0.
 *   code: q | sign << (bits - 1), sign = 1 for w_j < 0 and q > 0, else 0
 *	(a zero level never carries a sign).
 *   value: v = norm * ((float)q / (float)s), negated when sign is set;
 *	for an averaged result, v / (float)W on every rank, the owner's too.
 * A bucket on the wire: its norm (float32), then its m_b codes packed
 * bits each, least significant first, into ceil(m_b * bits / 8) bytes,
 * unused bits 0. Unbiased: E[value] = w_j for a fixed norm. A bucket is
 * refused if its norm is not finite or has its sign bit set, a code has a
 * sign with level 0 or any level under a norm of +0, or an unused bit is
 * set; a "qsgd" slice also if it does not start and end on buckets as
 * below, its body is not exactly its buckets, or its word is not 0.
 *
 * Codec "qsgd": a dense compressor of its own, no error feedback. A
 * contribution is its chunk quantized; the owner adds its own share as it
 * is and the others' values in rank order, quantizes the sum with its own
 * key (phase 1) and every rank, the owner included, takes that result. Its
 * units are values; a slice holds whole buckets [first, first + count)
 * (first a multiple of B, count too unless the slice ends the chunk), back
 * to back; the chunk's word is 0. A bucket must fit one packet.
 *
 * ==== Top-k with error feedback (codec "topk", SparCML) ====
 *
 * Parameters: density (0 < d <= 1, default 0.01), block (0: the chunk is
 * one block, the default; else blocks of this many values, 64 to 65536,
 * as SparCML's 512), bits (0: float32 values, the default; 2, 4 or 8:
 * QSGD values), bucket and norm (QSGD's, for its values).
 *
 * Encode a chunk of n values x with error feedback e: a_i = x_i + e_i
 * (float32; any a_i not finite is -EDOM, e untouched). In each block of m
 * values, select k = ceil(d * m) entries exactly (the real product of d's
 * float32 value and m, rounded up; at least 1): those with the largest
 * |a_i|, ties to the lower index. The chunk's entries are the selected
 * indices in increasing order with their values a_i; then e_i = a_i
 * except at the entries, where e_i = +0. (QSGD's rounding of the values is
 * not fed back: it is unbiased.)
 *
 * The owner adds the contributions exactly: its own share as what its own
 * entries stand for (their values, or their QSGD values), then the others'
 * in rank order, into a sum of the chunk that is 0 elsewhere. The result's
 * entries are the sum's nonzero values (bit pattern not 0: -0 counts),
 * every index once: SparCML's exact sparse merge, no re-selection.
 *
 * Dynamic switch. A stream is sent sparse when its sparse form is smaller
 * than its dense form, else dense: sparse bytes = the body of one sparse
 * slice holding every entry of the chunk (below: e0 = 0); dense bytes =
 * the body of one dense slice of all n values (a value that is not an
 * entry is 0), 4 n or the QSGD buckets of n values. The chunk's word
 * (aux) says which: 0 sparse, 1 dense. Contributions and results alike;
 * the QSGD values are drawn for the form that is sent, the entries' with
 * counters their entry indices, the dense form's with positions.
 *
 * Units are values. A sparse slice covers the positions [first, first +
 * count); the slices of a message cover the chunk, each starting at its
 * first entry's index (the first slice at 0). Its body:
 *	varint nnz: entries in the slice
 *	(QSGD) varint e0: the index of its first entry among the chunk's
 *	nnz varints: idx_0 - first, then idx_j - idx_{j-1} - 1
 *	values: nnz float32; or (QSGD) the norms of the buckets that the
 *	    entries e0 .. e0 + nnz - 1 touch (buckets of B entries of the
 *	    chunk's entry sequence), then the nnz codes packed as a bucket's
 * (varint: LEB128, 7 bits a byte, least significant first, at most 5
 * bytes, no superfluous final 0 byte). A dense slice covers positions
 * [first, first + count): count float32 values, or the QSGD buckets of
 * those positions (first a multiple of B, count too unless at the end),
 * as codec "qsgd". Decoding a result slice sets its positions: 0 where it
 * has no entry, else the entry's value (divided by W for an average).
 *
 * A slice is refused (-EBADMSG, nothing touched) if a varint is
 * malformed, an index falls outside [first, first + count), nnz exceeds
 * count, e0 + nnz exceeds the chunk's length, the body has bytes left over
 * or too few, a norm is not finite or has its sign bit set, a code has a
 * sign with level 0 or a level under a norm of +0, padding bits are not
 * 0, or a float32 value is not finite.
 *
 * ==== The entropy stage (every codec) ====
 *
 * Parameters, after every codec's own: entropy (none or zstd, default
 * none) and entropy_level (zstd's level, 1..19, default 1; another level
 * with entropy=none is refused). They are part of the tensor's block that
 * ranks compare (CTRL TENSOR's extra word: coder in bits 0-7, level in
 * bits 8-15), and the codec's stream, values and error feedback do not
 * depend on them: the stage is lossless, so a reference of the values
 * models it as the identity.
 *
 * With entropy=zstd each packet's body is either the codec's slice as it
 * is, or one zstd frame (RFC 8878; content size in the frame header, no
 * checksum, no dictionary) that decodes to the codec's slice; bit 7 of the
 * header's codec byte says which (<gradnet/wire.h>). A frame spans one
 * packet only: a packet decodes alone. The sender codes a packet only
 * when the frame is shorter than the slice and the slice has at least
 * GN_ENTROPY_MIN (256) bytes, and cuts slices to what fits
 * once coded (compress-then-cut): it asks the codec for the slice from
 * the packet's first unit within a raw budget of at most GN_ENTROPY_SPAN
 * (4) bodies of a WHOLE packet, compresses, and shrinks the budget by the
 * ratio it saw until the frame fits the packet (at most four tries, then
 * the codec's own cut at the packet's size); a packet never carries fewer
 * units than the codec's own cut at that size would put in it, so a
 * message never has more packets than the codec's pkts_max. A message
 * that comes out as one packet is sent WHOLE.
 *
 * Receive. A coded body is decompressed into at most min(4 WHOLE
 * bodies, the codec's bound of a chunk of chunk_len values) bytes; a
 * frame that is malformed, decodes to more, or decodes to no more bytes
 * than it has itself is refused (-EBADMSG), and so is a coded body for a
 * tensor without the stage. What it decodes to is then checked by the
 * codec's slice check like any body, before the packet counts.
 *
 * The coded bytes are zstd's: libzstd's in userspace and on the DPDK
 * path, the kernel's lib/zstd in the module. They may differ between
 * versions of zstd (and so between paths), which changes packet sizes and
 * cuts, never a value: every rank decodes the same slices to the same
 * floats. Nothing compares coded bytes across paths.
 *
 * Return values: a byte or element count, or a negative errno.
 */
#ifndef GRADNET_CODEC_H
#define GRADNET_CODEC_H

#include <stddef.h>
#include <stdint.h>

#ifndef GN_EXPORT
#define GN_EXPORT __attribute__((visibility("default")))
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* Elements per quartic group, and the byte of an all-zero group. */
#define GN_TLC_GROUP 5
#define GN_TLC_ZERO 121
/* Bytes of the scale M in front of a chunk stream. */
#define GN_TLC_SCALE_BYTES 4
/* Zero groups covered by one run byte b >= GN_ZRE_RUN_MIN: b - 241. */
#define GN_ZRE_RUN_MIN 243
#define GN_ZRE_RUN_MAX_LEN 14

/**
 * gn_tlc_groups() - number of quartic groups of an n-element chunk
 * @n: elements in the chunk
 *
 * Return: ceil(n / 5).
 */
static inline size_t gn_tlc_groups(size_t n)
{
	return n / GN_TLC_GROUP + (n % GN_TLC_GROUP != 0);
}

/**
 * gn_tlc_encode_bound() - worst-case size of a chunk stream
 * @n: elements in the chunk
 *
 * Zero-run encoding never makes a group sequence longer, so the bound is
 * the scale plus one byte per group.
 *
 * Return: 4 + ceil(n / 5).
 */
static inline size_t gn_tlc_encode_bound(size_t n)
{
	return GN_TLC_SCALE_BYTES + gn_tlc_groups(n);
}

/**
 * gn_tlc_quantize() - error feedback, quantization and quartic encoding
 * @x: n input values
 * @e: n error-feedback values, updated in place
 * @n: elements
 * @s: sparsity multiplier, 1 <= s < 2
 * @quartic: out, gn_tlc_groups(n) bytes, one per group
 * @m: out, the scale M
 *
 * Return: 0; -EINVAL for a bad @s; -EDOM if some x_i + e_i is not finite
 * or M overflows (then @e, @quartic and @m are untouched).
 */
GN_EXPORT int gn_tlc_quantize(const float *x, float *e, size_t n, float s,
			      uint8_t *quartic, float *m);

/**
 * gn_tlc_chunk_count() - chunks of at most @chunk values in @n values
 * @n: values in the tensor
 * @chunk: values per chunk, > 0
 *
 * Return: ceil(n / chunk).
 */
static inline size_t gn_tlc_chunk_count(size_t n, size_t chunk)
{
	return n / chunk + (n % chunk != 0);
}

/**
 * gn_tlc_chunks_groups() - group bytes gn_tlc_quantize_chunks() writes
 * @n: values in the tensor
 * @chunk: values per chunk, > 0
 *
 * Chunk c's groups start at c * gn_tlc_groups(@chunk).
 *
 * Return: the total.
 */
static inline size_t gn_tlc_chunks_groups(size_t n, size_t chunk)
{
	return n / chunk * gn_tlc_groups(chunk) + gn_tlc_groups(n % chunk);
}

/**
 * gn_tlc_quantize_chunks() - quantize a tensor as consecutive chunks
 * @x: n input values
 * @e_in: n error-feedback values
 * @e_out: n new error-feedback values; may be @e_in, else must not overlap
 * @n: values in the tensor
 * @chunk: values per chunk (the last one may be shorter), > 0
 * @s: sparsity multiplier, 1 <= s < 2
 * @quartic: out, gn_tlc_chunks_groups(@n, @chunk) bytes
 * @m: out, gn_tlc_chunk_count(@n, @chunk) scales
 *
 * The same results as gn_tlc_quantize() on each chunk in turn, in one call.
 * Each chunk is read twice (its maximum first), so chunks that fit in the
 * L2 cache (the default 65536 values do) read memory only once. With
 * @e_out != @e_in, @e_in is never written, so a caller can drop a failed
 * step by keeping @e_in; from GN_TLC_NT_MIN values on, @e_out is then
 * written with non-temporal stores (see GN_TLC_NT). A caller that
 * quantizes a large tensor a few chunks per call asks for them with
 * gn_tlc_quantize_chunks_ex().
 *
 * Return: 0; -EINVAL for a bad @s or @chunk; -EDOM if a chunk holds a
 * value that is not finite (chunks before it have been quantized; nothing
 * of that chunk or later ones is written).
 */
GN_EXPORT int gn_tlc_quantize_chunks(const float *x, const float *e_in,
				     float *e_out, size_t n, size_t chunk,
				     float s, uint8_t *quartic, float *m);

/*
 * Flags of gn_tlc_quantize_chunks_ex(). GN_TLC_NT: write @e_out with
 * non-temporal stores where its alignment allows, so that it is left out
 * of the caches and its old contents are never read (no read for
 * ownership). For an error buffer that the next step reads only after the
 * whole tensor has gone through the caches, that is: from about
 * GN_TLC_NT_MIN values (16 MiB of float32) on.
 */
#define GN_TLC_NT 1u
#define GN_TLC_NT_MIN ((size_t)1 << 22)

/**
 * gn_tlc_nt_flags() - the flags for a double-buffered error buffer
 * @n: values in the whole buffer (the tensor), not in one call
 *
 * Return: GN_TLC_NT from GN_TLC_NT_MIN values on, else 0.
 */
static inline unsigned int gn_tlc_nt_flags(size_t n)
{
	return n >= GN_TLC_NT_MIN ? GN_TLC_NT : 0;
}

/**
 * gn_tlc_quantize_chunks_ex() - gn_tlc_quantize_chunks() with an explicit
 * instruction set and flags
 * @isa: a GN_ISA_* value, or GN_ISA_BEST
 * @flags: 0 or GN_TLC_NT (which needs @e_out != @e_in); the size rule of
 * gn_tlc_quantize_chunks() does not apply: the flags alone decide
 *
 * Return: as gn_tlc_quantize_chunks(); -EINVAL for an unknown flag or
 * GN_TLC_NT in place; -EOPNOTSUPP for an instruction set the CPU lacks.
 */
GN_EXPORT int gn_tlc_quantize_chunks_ex(int isa, const float *x,
					const float *e_in, float *e_out,
					size_t n, size_t chunk, float s,
					unsigned int flags, uint8_t *quartic,
					float *m);

/**
 * gn_zre_encode() - zero-run encode groups, up to a byte budget
 * @quartic: groups, values 0..242
 * @count: number of groups
 * @dst: out
 * @cap: bytes available at @dst
 * @consumed: out, groups encoded
 *
 * Encodes the longest prefix of @quartic whose encoding fits @cap bytes,
 * with runs cut at the end of that prefix, so each call's output decodes on
 * its own (a packet slice). With @cap >= @count it encodes all groups.
 *
 * Return: bytes written. -EINVAL if a group byte is above 242.
 */
GN_EXPORT long gn_zre_encode(const uint8_t *quartic, size_t count,
			     uint8_t *dst, size_t cap, size_t *consumed);

/**
 * gn_tlc_encode() - encode a whole chunk into a chunk stream
 * @x: n input values
 * @e: n error-feedback values, updated in place
 * @n: elements
 * @s: sparsity multiplier, 1 <= s < 2
 * @dst: out
 * @cap: bytes at @dst, at least gn_tlc_encode_bound(@n)
 *
 * Return: stream length; -ENOSPC if @cap is below the bound; -EINVAL,
 * -EDOM as gn_tlc_quantize(). On any error @e is untouched.
 */
GN_EXPORT long gn_tlc_encode(const float *x, float *e, size_t n, float s,
			     void *dst, size_t cap);

/**
 * gn_tlc_decode() - decode a chunk stream and accumulate it
 * @src: chunk stream
 * @len: its length in bytes
 * @acc: n accumulators; acc_i += q_i*M for the nonzero q_i
 * @n: elements of the chunk
 *
 * Return: 0; -EBADMSG for a malformed stream, with @acc untouched.
 */
GN_EXPORT int gn_tlc_decode(const void *src, size_t len, float *acc, size_t n);

/**
 * gn_tlc_decode_slice() - decode one slice of a chunk and accumulate it
 * @src: zero-run encoded groups [@j0, @j0 + @count) of the chunk
 * @len: bytes at @src
 * @m: the chunk's scale M
 * @acc: the chunk's n accumulators (the whole chunk, not the slice)
 * @n: elements of the chunk
 * @j0: first group of the slice
 * @count: groups in the slice
 *
 * Return: 0; -EBADMSG if the slice does not lie inside the chunk's
 * ceil(n/5) groups or is malformed, with @acc untouched.
 */
GN_EXPORT int gn_tlc_decode_slice(const uint8_t *src, size_t len, float m,
				  float *acc, size_t n, size_t j0, size_t count);

/**
 * gn_zre_check() - validate a slice without decoding it
 * @src, @len, @n, @j0, @count: as gn_tlc_decode_slice()
 *
 * Checks the group count and that no nonzero trit lands at an index >= @n.
 * Used by receive paths that must reject a packet before touching a tensor.
 *
 * Return: 0 or -EBADMSG.
 */
GN_EXPORT int gn_zre_check(const uint8_t *src, size_t len, size_t n,
			   size_t j0, size_t count);

/* Instruction sets the codec has kernels for. */
enum gn_isa {
	GN_ISA_SCALAR = 0,
	GN_ISA_AVX2 = 1,
	GN_ISA_AVX512 = 2,
	GN_ISA_COUNT,
	GN_ISA_BEST = -1,
};

/**
 * gn_codec_isa_name() - printable name of an instruction set
 * @isa: one of enum gn_isa
 *
 * Return: "scalar", "avx2", "avx512" or "?".
 */
GN_EXPORT const char *gn_codec_isa_name(int isa);

/**
 * gn_codec_isa_supported() - can this CPU run the kernels of @isa?
 * @isa: one of enum gn_isa
 *
 * AVX-512 kernels need F, BW, VL, VBMI (byte permutes) and VBMI2 (byte
 * compression): Ice Lake and later, Zen 4 and later; AVX2
 * kernels need AVX2 and BMI2.
 *
 * Return: 1 if yes, 0 if not.
 */
GN_EXPORT int gn_codec_isa_supported(int isa);

/**
 * gn_codec_isa_best() - the widest instruction set this CPU can run
 *
 * Return: the widest supported enum gn_isa value.
 */
GN_EXPORT int gn_codec_isa_best(void);

/**
 * gn_codec_isa_parse() - an instruction set from its name
 * @name: "scalar", "avx2", "avx512" or "best"
 *
 * Return: the enum gn_isa value (GN_ISA_BEST for "best"), or -EINVAL for
 * NULL or any other name.
 */
GN_EXPORT int gn_codec_isa_parse(const char *name);

/**
 * gn_codec_isa_set_default() - choose the kernels the default entry points use
 * @isa: one of enum gn_isa, or GN_ISA_BEST for the widest the CPU has
 *
 * The choice is process-wide (libgradnet makes it from GN_CODEC_ISA when a
 * context opens); make it before encoding or decoding on other threads.
 * Every instruction set gives the same bytes and floats, so this changes
 * speed only; tests use it to run whole jobs on each kernel set.
 *
 * Return: 0, -EOPNOTSUPP if the CPU lacks @isa, -EINVAL if @isa is no
 * instruction set.
 */
GN_EXPORT int gn_codec_isa_set_default(int isa);

/**
 * gn_codec_isa_select() - gn_codec_isa_set_default() by name
 * @name: as gn_codec_isa_parse() takes it (GN_CODEC_ISA's value), or
 *	NULL to leave the choice as it is
 *
 * Return: 0, -EINVAL for an unknown name, -EOPNOTSUPP if the CPU lacks it.
 */
GN_EXPORT int gn_codec_isa_select(const char *name);

/**
 * gn_codec_isa_default() - the instruction set the default entry points use
 *
 * Return: the one chosen by gn_codec_isa_set_default(), else the widest
 * the CPU has.
 */
GN_EXPORT int gn_codec_isa_default(void);

/*
 * The same operations with an explicit instruction set, for tests that
 * compare implementations and for benchmarks. @isa must be supported
 * (gn_codec_isa_supported()), else they return -EOPNOTSUPP.
 */
GN_EXPORT int gn_tlc_quantize_isa(int isa, const float *x, float *e, size_t n,
				  float s, uint8_t *quartic, float *m);
GN_EXPORT int gn_tlc_quantize_chunks_isa(int isa, const float *x,
					 const float *e_in, float *e_out,
					 size_t n, size_t chunk, float s,
					 uint8_t *quartic, float *m);
GN_EXPORT long gn_zre_encode_isa(int isa, const uint8_t *quartic, size_t count,
				 uint8_t *dst, size_t cap, size_t *consumed);
GN_EXPORT long gn_tlc_encode_isa(int isa, const float *x, float *e, size_t n,
				 float s, void *dst, size_t cap);
GN_EXPORT int gn_tlc_decode_isa(int isa, const void *src, size_t len,
				float *acc, size_t n);
GN_EXPORT int gn_tlc_decode_slice_isa(int isa, const uint8_t *src, size_t len,
				      float m, float *acc, size_t n, size_t j0,
				      size_t count);

#ifdef __cplusplus
}
#endif

#endif /* GRADNET_CODEC_H */
