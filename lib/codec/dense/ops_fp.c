// SPDX-License-Identifier: MIT
/*
 * ops_fp.c - the dense codec's float operations: a contribution is the
 * gradient as it is (checked, since it leaves as it is), a result the
 * owner's sum, divided by the world size for an average on every rank.
 */
#include "codec/codec.h"
#include "dense_ops.h"

static void average(const struct gn_codec_call *c, float *v, size_t n)
{
	size_t i;

	if (c->average)
		for (i = 0; i < n; i++)
			v[i] = v[i] / (float)c->world;
}

/* Every chunk's word is 0; a chunk with a NaN or infinity fails the call. */
int gn_dense_op_encode(const struct gn_codec_call *c, const float *x,
		       const float *e_in, float *e_out, size_t len,
		       size_t chunk, u64 off, void *scratch, size_t stride,
		       u32 *aux)
{
	size_t k;

	if (!gn_f32_all_finite(x, len))
		return -EDOM;
	for (k = 0; k < (len + chunk - 1) / chunk; k++)
		aux[k] = 0;
	return 0;
}

/* The sum goes out as it is: only checked here (see @finish). */
int gn_dense_op_result(const struct gn_codec_call *c, float *sum,
		       const float *e_in, float *e_out, size_t len, u64 off,
		       void *scratch, u32 *aux)
{
	*aux = 0;
	return gn_f32_all_finite(sum, len) ? 0 : -EDOM;
}

void gn_dense_op_finish(const struct gn_codec_call *c, float *sum, size_t len)
{
	average(c, sum, len);
}

void gn_dense_op_add(const struct gn_codec_call *c, float *acc, u32 len,
		     u32 first, u32 count, u32 aux, const u8 *body, u32 blen)
{
	u32 i;

	for (i = 0; i < count; i++) {
		float v;

		memcpy(&v, body + 4 * i, sizeof(v));
		acc[first + i] += v;
	}
}

/* The packet's bytes may be unaligned: copy, then scale in place. */
void gn_dense_op_decode(const struct gn_codec_call *c, float *out, u32 len,
			u32 first, u32 count, u32 aux, const u8 *body,
			u32 blen)
{
	memcpy(out + first, body, (size_t)count * 4);
	average(c, out + first, count);
}
