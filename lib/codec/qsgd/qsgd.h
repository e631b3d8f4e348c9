/* SPDX-License-Identifier: MIT */
/*
 * qsgd.h - QSGD's buckets (<gradnet/codec.h>): the stochastic quantizer
 * (quant_fp.c, float) and its codes on the wire (codes.c, integer), for
 * the "qsgd" codec and for top-k's values.
 */
#ifndef GN_CODEC_QSGD_H
#define GN_CODEC_QSGD_H

#include "codec/codec.h"

/* Words of "qsgd"'s parameter block; top-k keeps the same three at 2..4. */
#define GN_QSGD_W_BITS 0
#define GN_QSGD_W_BUCKET 1
#define GN_QSGD_W_NORM 2

/*
 * A sparse stream's values (top-k's, CLT-k's) by default: buckets of 128
 * under their max norm. They are a tensor's largest magnitudes, close to
 * each other: over buckets of 512 the l2 norm is some 20 times a typical
 * one, so most would round to level 0 (on the language model of
 * doc/perf/ddp-training.md, top-k 1% at 4 bits: 5.7% over dense
 * validation loss with l2 and 512, 1.4% with max and 128).
 */
#define GN_QSGD_SPARSE_BUCKET 128
#define GN_QSGD_SPARSE_NORM 1

/* A quantizer: bits per code, values per bucket, levels, the norm. */
struct gn_qsgd {
	u32 bits, bucket, s;
	bool max_norm;
};

static inline void gn_qsgd_of(u32 bits, u32 bucket, u32 norm,
			      struct gn_qsgd *q)
{
	q->bits = bits;
	q->bucket = bucket ? bucket : bits == 2 ? 128 : 512;
	q->s = (1u << (bits - 1)) - 1;
	q->max_norm = norm == 1;
}

/* Bytes of @m packed codes. */
static inline u32 gn_qsgd_code_bytes(const struct gn_qsgd *q, u32 m)
{
	return (u32)(((u64)m * q->bits + 7) / 8);
}

/* Bytes of @m values as buckets from a bucket's start: norms and codes. */
static inline u64 gn_qsgd_bytes(const struct gn_qsgd *q, u32 m)
{
	u32 full = m / q->bucket, rest = m % q->bucket;

	return (u64)full * (4 + gn_qsgd_code_bytes(q, q->bucket)) +
	       (rest ? 4 + gn_qsgd_code_bytes(q, rest) : 0);
}

/* Code j of a packed string: bits 2, 4 and 8 never straddle a byte. */
static inline u32 gn_qsgd_code_at(const struct gn_qsgd *q, const u8 *src,
				  u32 j)
{
	u32 bit = j * q->bits;

	return (u32)(src[bit >> 3] >> (bit & 7)) & ((1u << q->bits) - 1);
}

/* A norm as the wire may carry it: finite, not negative (nor -0). */
static inline bool gn_qsgd_norm_ok(u32 bits)
{
	return bits < 0x7f800000u;
}

/* codes.c */
u32 gn_qsgd_pack(const struct gn_qsgd *q, const u8 *codes, u32 m, u8 *dst);
int gn_qsgd_check_codes(const struct gn_qsgd *q, u32 norm, const u8 *src,
			u32 m);
int gn_qsgd_check_buckets(const struct gn_qsgd *q, u32 len, u32 first,
			  u32 count, const u8 *body, u32 blen);
int gn_qsgd_check_params(const char *codec, u32 bits, u32 bucket,
			 u32 body_cap, char *msg, size_t len);

/* quant_fp.c (float) */
int gn_qsgd_quantize(const struct gn_qsgd *q, const float *v, u32 m,
		     u64 key, float *norms, u8 *codes);
float gn_qsgd_value(const struct gn_qsgd *q, float norm, u32 code);

#endif /* GN_CODEC_QSGD_H */
