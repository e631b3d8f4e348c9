/* SPDX-License-Identifier: MIT */
/*
 * tlc_model.h - the 3LC specification of gradnet/codec.h restated as plain,
 * slow C for the fuzz targets, so that the codec is checked against the
 * specification and not only its SIMD kernels against its scalar one.
 * Deliberately shares no code with lib/codec.
 */
#ifndef GN_TLC_MODEL_H
#define GN_TLC_MODEL_H

#include <errno.h>
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <gradnet/codec.h>

#include "testutil.h"

/* Groups covered by one zero-run code byte. */
static inline size_t model_code_groups(uint8_t b)
{
	return b >= 243 ? (size_t)b - 241 : 1;
}

/* Trit of partition k (0..4) in literal group byte b. */
static inline int model_trit(uint8_t b, unsigned int k)
{
	static const unsigned int weight[5] = { 81, 27, 9, 3, 1 };

	return (int)(b / weight[k] % 3) - 1;
}

/*
 * Quantize n values: t = x + e_in, M = s * max|t|, q against M/2,
 * e_out = t - q*M. Nothing is written on error.
 * Return: 0, -EINVAL or -EDOM.
 */
static inline int model_quantize(const float *x, const float *e_in,
				 float *e_out, size_t n, float s, int8_t *q,
				 float *m)
{
	float maxabs = 0.0f, big, h;
	size_t i;

	if (!(s >= 1.0f && s < 2.0f))
		return -EINVAL;
	for (i = 0; i < n; i++) {
		float t = x[i] + e_in[i];

		if (!isfinite(t))
			return -EDOM;
		if (fabsf(t) > maxabs)
			maxabs = fabsf(t);
	}
	big = s * maxabs;
	if (!isfinite(big))
		return -EDOM;
	h = 0.5f * big;
	for (i = 0; i < n; i++) {
		float t = x[i] + e_in[i];
		float qm = 0.0f;

		q[i] = t > h ? 1 : (t < -h ? -1 : 0);
		if (q[i] == 1)
			qm = big;
		else if (q[i] == -1)
			qm = -big;
		e_out[i] = t - qm;
	}
	*m = big;
	return 0;
}

/* Quartic bytes of n trits: ceil(n/5) groups, padding counts as 0. */
static inline void model_quartic(const int8_t *q, size_t n, uint8_t *out)
{
	size_t g = gn_tlc_groups(n), j;
	unsigned int k;

	for (j = 0; j < g; j++) {
		unsigned int b = 0;

		for (k = 0; k < 5; k++) {
			size_t i = k * g + j;

			b = b * 3 + (unsigned int)((i < n ? q[i] : 0) + 1);
		}
		out[j] = (uint8_t)b;
	}
}

/* Zero-run bytes of a pending run of r zero groups. */
static inline size_t model_run_codes(size_t r, uint8_t *out)
{
	size_t o = 0, k;

	for (k = 0; k < r / 14; k++)
		out[o++] = 255;
	if (r % 14 == 1)
		out[o++] = GN_TLC_ZERO;
	else if (r % 14 >= 2)
		out[o++] = (uint8_t)(241 + r % 14);
	return o;
}

/* Encoded length of a run of r zero groups. */
static inline size_t model_run_len(size_t r)
{
	return r / 14 + (r % 14 != 0);
}

/*
 * Zero-run encoding of the longest prefix of q[0..count) whose encoding
 * fits cap bytes (runs cut at its end). The encoded length never shrinks
 * as the prefix grows, so the prefix is found by growing it.
 * Return: bytes written to out (which holds at least cap bytes).
 */
static inline size_t model_zre(const uint8_t *q, size_t count, size_t cap,
			       uint8_t *out, size_t *consumed)
{
	size_t p = 0, base = 0, run = 0, i, o = 0;

	while (p < count) {
		size_t b2 = base, r2 = run;

		if (q[p] == GN_TLC_ZERO) {
			r2++;
		} else {
			b2 += model_run_len(r2) + 1;
			r2 = 0;
		}
		if (b2 + model_run_len(r2) > cap)
			break;
		base = b2;
		run = r2;
		p++;
	}
	*consumed = p;
	for (i = 0; i < p;) {
		size_t r = 0;

		if (q[i] != GN_TLC_ZERO) {
			out[o++] = q[i++];
			continue;
		}
		while (i < p && q[i] == GN_TLC_ZERO) {
			r++;
			i++;
		}
		o += model_run_codes(r, out + o);
	}
	return o;
}

/*
 * Validate a slice of groups [j0, j0 + count) of an n-element chunk and,
 * if it is well formed, add +-m to acc for its nonzero trits.
 * Return: 0 or -EBADMSG (acc untouched).
 */
static inline int model_decode_slice(const uint8_t *src, size_t len, float m,
				     float *acc, size_t n, size_t j0,
				     size_t count)
{
	size_t g = gn_tlc_groups(n), total = 0, i, j;
	unsigned int k;

	if (gn_bits(m) >= 0x7f800000u)
		return -EBADMSG;
	if (j0 > g || count > g - j0)
		return -EBADMSG;
	for (i = 0; i < len; i++)
		total += model_code_groups(src[i]);
	if (total != count)
		return -EBADMSG;
	for (i = 0, j = j0; i < len; j += model_code_groups(src[i]), i++)
		for (k = 0; src[i] < 243 && k < 5; k++)
			if (k * g + j >= n && model_trit(src[i], k))
				return -EBADMSG;
	for (i = 0, j = j0; i < len; j += model_code_groups(src[i]), i++) {
		for (k = 0; src[i] < 243 && k < 5; k++) {
			int t = model_trit(src[i], k);

			if (t > 0)
				acc[k * g + j] += m;
			else if (t < 0)
				acc[k * g + j] -= m;
		}
	}
	return 0;
}

/* A whole chunk stream: the scale, then groups [0, ceil(n/5)). */
static inline int model_decode(const uint8_t *src, size_t len, float *acc,
			       size_t n)
{
	uint32_t mb;

	if (len < 4)
		return -EBADMSG;
	mb = (uint32_t)src[0] | (uint32_t)src[1] << 8 |
	     (uint32_t)src[2] << 16 | (uint32_t)src[3] << 24;
	return model_decode_slice(src + 4, len - 4, gn_float(mb), acc, n, 0,
				  gn_tlc_groups(n));
}

#endif /* GN_TLC_MODEL_H */
