// SPDX-License-Identifier: MIT
/*
 * quantize.c - the reference quantizer: error feedback, three-value
 * quantization and quartic packing, exactly as written in gradnet/codec.h.
 * Floating point: called only inside an FPU section.
 */
#include "tlc_impl.h"
#include "codec/f32.h"

u32 gn_maxabs_bits_scalar(const float *x, const float *e, size_t n)
{
	u32 max = 0;
	size_t i;

	for (i = 0; i < n; i++) {
		u32 a = gn_f32_bits(x[i] + e[i]) & 0x7fffffffu;

		max = a > max ? a : max;
	}
	return max;
}

/* Trit + 1 of t against threshold h, with *e set to t - q*m. */
static inline unsigned int quantize_one(float t, float h, float m, float *e)
{
	if (t > h) {
		*e = t - m;
		return 2;
	}
	if (t < -h) {
		*e = t + m;
		return 0;
	}
	*e = t;
	return 1;
}

/*
 * Partition by partition so that x and e stream contiguously; the group
 * bytes are small enough to stay in cache across the five passes.
 * Elements at index >= n are padding and count as zero.
 */
void gn_quartic_scalar(const struct gn_tlc_span *c, float m, u8 *out,
		       size_t j_from, size_t j_to)
{
	size_t n = c->n, g = gn_tlc_groups(n), j;
	float h = 0.5f * m;
	unsigned int k;

	for (j = j_from; j < j_to; j++)
		out[j] = 0;
	for (k = 0; k < GN_TLC_GROUP; k++) {
		size_t base = (size_t)k * g;

		for (j = j_from; j < j_to; j++) {
			size_t i = base + j;
			unsigned int d = 1;

			if (i < n)
				d = quantize_one(c->x[i] + c->e_in[i], h, m,
						 &c->e_out[i]);
			out[j] = (u8)(out[j] * 3 + d);
		}
	}
}

static u32 quartic_scalar(const struct gn_tlc_span *cur, float m, u8 *out,
			  const struct gn_tlc_span *next)
{
	gn_quartic_scalar(cur, m, out, 0, gn_tlc_groups(cur->n));
	return gn_maxabs_bits_scalar(next->x, next->e_in, next->n);
}

const struct gn_tlc_kernels gn_tlc_scalar = {
	.maxabs_bits = gn_maxabs_bits_scalar,
	.quartic = quartic_scalar,
	.zre = gn_zre_scalar,
	.groups = gn_zre_groups_scalar,
	.accumulate = gn_accumulate_scalar,
};
