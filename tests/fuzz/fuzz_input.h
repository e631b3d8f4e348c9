/* SPDX-License-Identifier: MIT */
/*
 * fuzz_input.h - the byte layout of the fuzz targets' inputs, shared by the
 * targets that parse it and by fuzz_seeds.c that writes seed corpora in it.
 * Multi-byte fields are little-endian.
 *
 * fuzz_decode:     n:16 flags:8 j0:16 count:16 m:32 | stream bytes
 * fuzz_roundtrip:  flags:8 s:32 chunk:16 budget:16 n:16 exp:8 | data bytes
 * fuzz_rx:         records ctl:8 len:16 | len packet bytes, to the end
 */
#ifndef GN_FUZZ_INPUT_H
#define GN_FUZZ_INPUT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* fuzz_decode */
#define GN_FZD_N 0
#define GN_FZD_FLAGS 2
#define GN_FZD_J0 3
#define GN_FZD_COUNT 5
#define GN_FZD_M 7
#define GN_FZD_HDR 11
/* flags: bits 0-1 pick the accumulator's starting values */
#define GN_FZD_ACC_MASK 0x03
/* j0 and count taken as they are, not reduced to the chunk's groups */
#define GN_FZD_RAW_SLICE 0x04
/* with GN_FZD_RAW_SLICE: j0 = SIZE_MAX - j0, to probe overflow */
#define GN_FZD_J0_HUGE 0x08
/* call the codec with flush-to-zero and denormals-are-zero set */
#define GN_FZD_FTZ 0x10

/* fuzz_roundtrip */
#define GN_FZR_FLAGS 0
#define GN_FZR_S 1
#define GN_FZR_CHUNK 5
#define GN_FZR_BUDGET 7
#define GN_FZR_N 9
#define GN_FZR_EXP 11
#define GN_FZR_HDR 12
/*
 * flags: bits 0-1 say what the data bytes are:
 *  0: float32 pairs x_i, e_i
 *  1: x_i = (int8)data[i % len] * 2^(exp - 150), e = 0
 *  2: as 1, and e_i = (int8)data[(7i + 3) % len] * 2^(exp - 156)
 *  3: quartic group bytes, given to gn_zre_encode() as they are
 * In modes 1-3, n (a group count in mode 3) is the n field, or the data
 * length if that is 0, at most GN_FZR_N_MAX.
 */
#define GN_FZR_MODE_MASK 0x03
#define GN_FZR_FLOATS 0
#define GN_FZR_INT8 1
#define GN_FZR_INT8_EF 2
#define GN_FZR_GROUPS 3
/* s is the float with the bits of the s field; else 1 + s_field_low16/65536 */
#define GN_FZR_RAW_S 0x04
/* call the codec with flush-to-zero and denormals-are-zero set */
#define GN_FZR_FTZ 0x08
#define GN_FZR_N_MAX 0x3fff

/*
 * fuzz_rx: a job of GN_FZX_WORLD ranks seen from rank 0, keyed with
 * gn_fzx_key, the tensors below registered on every rank and step 1 of
 * each started (unless the first record says GN_FZX_ST_BARE). Each record
 * is one packet, delivered as ctl says, or a change of handshake state
 * (GN_FZX_STATE); the last record is cut short where the input ends.
 */
#define GN_FZX_WORLD 3
#define GN_FZX_JOB 0x6a6f62u
#define GN_FZX_CHUNK 4096	/* gn_test_ctx_new()'s chunk */
#define GN_FZX_STEPS 3		/* a tensor whose step completes starts the next */
#define GN_FZX_REC_HDR 3
#define GN_FZX_MAX_PKT 9000
/* ctl bits 0-1: the sender, rank 0..2 (0 is the receiver itself), or 3:
 * an address outside the job */
#define GN_FZX_FROM_MASK 0x03
#define GN_FZX_FROM_NONE 3
/*
 * Make the common header consistent: magic, version, job, src (the sender),
 * dst (0, or every rank for GATHER data), phase (low bit), body_len (from
 * the packet length), codec (the tensor's; the entropy bit, bit 7, stays as
 * the input has it); the tensor field is an index into gn_fzx_tensors[]
 * (mod its length).
 */
#define GN_FZX_FIX_HDR 0x04
/*
 * DATA part: the low 32 bits of chunk_off index a chunk of the shard the
 * packet is for (the receiver's for REDUCE, the sender's for GATHER);
 * chunk_off and chunk_len become that chunk's; s becomes the tensor's;
 * first and count are folded into their valid ranges, so valid values stay
 * as they are; npkts stays whatever it is (0, 2^31, 0xffffffff: the
 * receiver must bound it), and pkt is folded below a non-zero npkts.
 */
#define GN_FZX_FIX_DATA 0x08
/*
 * Sealed as the sender would (fuzz_rx.c's seal()): the packet number it
 * carries, or if 0 the harness's next, and its GN_SEAL_CLEAR bit kept
 */
#define GN_FZX_SEAL 0x10
/* delivered twice */
#define GN_FZX_TWICE 0x20
/*
 * After the seal, break it: the packet's first byte's low bit picks a tag
 * bit flipped (1) or the packet cut short (0), the rest which and by how
 * much. Such a packet, like one never sealed, must not get past the tag.
 */
#define GN_FZX_BREAK 0x80
/*
 * Not a packet: the record's first byte (GN_FZX_ST_*) sets the handshake
 * state of the context and its peers, as it may be when a packet comes.
 * On the input's first record, GN_FZX_ST_BARE also keeps the tensors
 * unregistered (and no step started) for the whole input.
 */
#define GN_FZX_STATE 0x40
#define GN_FZX_ST_READY 0x01		/* handshake done */
#define GN_FZX_ST_HELLO_IN(peer) (0x02u << 2 * ((peer) - 1))	/* peer 1, 2 */
#define GN_FZX_ST_HELLO_ACKED(peer) (0x04u << 2 * ((peer) - 1))
#define GN_FZX_ST_TOLD_REPLY 0x20	/* both peers */
#define GN_FZX_ST_BARE 0x40
#define GN_FZX_ST_MISMATCH 0x80	/* a handshake mismatch is pending */

struct gn_fzx_tensor {
	uint32_t id;
	size_t elems;
	uint8_t codec;		/* enum gn_codec, which is the wire codec byte */
	float s;		/* 0: the job's 1.0 */
	unsigned int flags;	/* GN_TENSOR_* */
	bool zstd;		/* the entropy stage, zstd at level 1 */
};

/*
 * Shard sizes cover one value, one chunk, several chunks, empty shards;
 * the last two code their packets with the entropy stage.
 */
static const struct gn_fzx_tensor gn_fzx_tensors[] = {
	{ 1, 1000, 2, 0.0f, 0, false },
	{ 2, 20000, 2, 0.0f, 0, false },
	{ 3, 700, 1, 0.0f, 0, false },
	{ 4, 9001, 1, 0.0f, 1, false },
	{ 5, 37, 2, 1.5f, 1, false },
	{ 6, 2, 2, 0.0f, 0, false },
	{ 7, 15000, 2, 0.0f, 0, true },
	{ 8, 5000, 1, 0.0f, 1, true },
};

#define GN_FZX_NTENSORS (sizeof(gn_fzx_tensors) / sizeof(gn_fzx_tensors[0]))

static const uint8_t gn_fzx_key[16] = {
	0x67, 0x72, 0x61, 0x64, 0x6e, 0x65, 0x74, 0x2d,
	0x66, 0x75, 0x7a, 0x7a, 0x2d, 0x72, 0x78, 0x31,
};

/* First element of shard @j of @n elements, as lib/collective/tensor.c splits. */
static inline size_t gn_fzx_shard_lo(size_t n, unsigned int j)
{
	return (size_t)((unsigned __int128)n * j / GN_FZX_WORLD);
}

static inline uint32_t gn_fz_le(const uint8_t *p, unsigned int bytes)
{
	uint32_t v = 0;

	while (bytes--)
		v = v << 8 | p[bytes];
	return v;
}

static inline void gn_fz_put_le(uint8_t *p, uint32_t v, unsigned int bytes)
{
	while (bytes--) {
		*p++ = (uint8_t)v;
		v >>= 8;
	}
}

#endif /* GN_FUZZ_INPUT_H */
