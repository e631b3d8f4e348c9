// SPDX-License-Identifier: MIT
/*
 * ops_fp.c - "qsgd"'s float operations: quantizing a contribution or the
 * owner's sum chunk by chunk under the chunk's key, and the values of a
 * slice's codes added into a sum or set as a result.
 */
#include "qsgd_ops.h"
#include "codec/f32.h"
#include "codec/rng.h"

int gn_qsgd_op_encode(const struct gn_codec_call *c, const float *x,
		      const float *e_in, float *e_out, size_t len, size_t chunk,
		      u64 off, void *scratch, size_t stride, u32 *aux)
{
	struct gn_qsgd q;
	size_t at, k;
	int r;

	gn_qsgd_params(c->p, &q);
	for (at = 0, k = 0; at < len; at += chunk, k++) {
		u32 n = (u32)(len - at < chunk ? len - at : chunk);
		void *s = (u8 *)scratch + k * stride;

		r = gn_qsgd_quantize(&q, x + at, n,
				     gn_draw_key(c->seed, off + at),
				     gn_qsgd_norms(s), gn_qsgd_codes(s, &q, n));
		if (r)
			return r;
		aux[k] = 0;
	}
	return 0;
}

/* The values a chunk's codes stand for, averaged where the call says. */
static void values_of(const struct gn_codec_call *c, const struct gn_qsgd *q,
		      const float *norms, const u8 *codes, float *out, u32 n)
{
	u32 j;

	for (j = 0; j < n; j++) {
		float v = gn_qsgd_value(q, norms[j / q->bucket], codes[j]);

		out[j] = c->average ? v / (float)c->world : v;
	}
}

/* The sum quantized anew; every rank, the owner too, takes that. */
int gn_qsgd_op_result(const struct gn_codec_call *c, float *sum,
		      const float *e_in, float *e_out, size_t len, u64 off,
		      void *scratch, u32 *aux)
{
	struct gn_qsgd q;
	u8 *codes;
	int r;

	gn_qsgd_params(c->p, &q);
	codes = gn_qsgd_codes(scratch, &q, (u32)len);
	r = gn_qsgd_quantize(&q, sum, (u32)len, gn_draw_key(c->seed, off),
			     gn_qsgd_norms(scratch), codes);
	if (r)
		return r;
	*aux = 0;
	values_of(c, &q, gn_qsgd_norms(scratch), codes, sum, (u32)len);
	return 0;
}

/* What @code of a bucket whose magnitudes' bits are @mag stands for. */
static inline float value_of(const u32 *mag, u32 code, u32 bits)
{
	u32 sign = 1u << (bits - 1);

	/* A code's sign is the magnitude's negation: its bit 31. */
	return gn_f32_of(mag[code & (sign - 1)] | (code & sign) << (32 - bits));
}

/*
 * Each bucket of a checked slice: its values at out[first ...], added or
 * set. Per bucket, a table of what each level stands for, then a look-up
 * a value.
 */
static void for_buckets(const struct gn_codec_call *c, float *out, u32 first,
			u32 count, const u8 *body, bool add)
{
	struct gn_qsgd q;
	u32 mag[128], n = 0, j;

	gn_qsgd_params(c->p, &q);
	while (n < count) {
		u32 mb = count - n < q.bucket ? count - n : q.bucket;
		float norm = gn_f32_of(gn_get_le32(body)), *o = out + first + n;
		const u8 *codes = body + 4;

		for (j = 0; j <= q.s; j++)
			mag[j] = gn_f32_bits(gn_qsgd_value(&q, norm, j));
		if (add) {
			for (j = 0; j < mb; j++)
				o[j] += value_of(mag, gn_qsgd_code_at(&q, codes, j),
						 q.bits);
		} else {
			for (j = 0; j < mb; j++) {
				float v = value_of(mag, gn_qsgd_code_at(&q, codes, j),
						   q.bits);

				o[j] = c->average ? v / (float)c->world : v;
			}
		}
		body += 4 + gn_qsgd_code_bytes(&q, mb);
		n += mb;
	}
}

void gn_qsgd_op_add(const struct gn_codec_call *c, float *acc, u32 len,
		    u32 first, u32 count, u32 aux, const u8 *body, u32 blen)
{
	for_buckets(c, acc, first, count, body, true);
}

void gn_qsgd_op_decode(const struct gn_codec_call *c, float *out, u32 len,
		       u32 first, u32 count, u32 aux, const u8 *body,
		       u32 blen)
{
	for_buckets(c, out, first, count, body, false);
}
