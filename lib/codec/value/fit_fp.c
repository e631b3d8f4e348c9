// SPDX-License-Identifier: MIT
/*
 * fit_fp.c - fitting a bucket's values (<gradnet/codec.h>, "Fit values"):
 * magnitudes sorted (larger first, ties to the lower index), cut where
 * the curve lies farthest from its chord, each segment's degree-5 Bernstein
 * control points by least squares in binary64 (normal equations solved in
 * a fixed order, so every path and the numpy model round alike), and the
 * curve evaluated in float32 by de Casteljau's convex combinations, which
 * keep a hostile peer's control points bounded. No libm. Runs inside the
 * caller's FPU section.
 */
#include "fit.h"
#include "codec/f32.h"

static void sift(u64 *a, u32 i, u32 n)
{
	for (;;) {
		u32 c = 2 * i + 1;
		u64 t;

		if (c >= n)
			return;
		if (c + 1 < n && a[c + 1] > a[c])
			c++;
		if (a[i] >= a[c])
			return;
		t = a[i];
		a[i] = a[c];
		a[c] = t;
		i = c;
	}
}

/* Heap sort: in place, no recursion, n log n whatever the keys. */
static void sort_keys(u64 *a, u32 n)
{
	u32 i;
	u64 t;

	for (i = n / 2; i--;)
		sift(a, i, n);
	for (i = n; i-- > 1;) {
		t = a[0];
		a[0] = a[i];
		a[i] = t;
		sift(a, 0, i);
	}
}

static float casteljau(const float *c, float u)
{
	float b[GN_FIT_CPS], omu = 1.0f - u;
	u32 l, i;

	memcpy(b, c, sizeof(b));
	for (l = 1; l < GN_FIT_CPS; l++)
		for (i = 0; i < GN_FIT_CPS - l; i++)
			b[i] = omu * b[i] + u * b[i + 1];
	return b[0];
}

/* The curve at rank @r of a segment starting at @k, @len ranks long. */
static float eval(const float *c, u32 r, u32 k, u32 len)
{
	return casteljau(c, len > 1 ? (float)(r - k) / (float)(len - 1) : 0.0f);
}

/*
 * Knots: the tail [a, m) is cut at the rank farthest from its chord (the
 * first of equals), leaving GN_FIT_MINSEG ranks on either side, until
 * GN_FIT_SEGS segments or a tail too short or straight.
 */
static u32 cuts(const float *y, u32 m, u32 *knot)
{
	u32 segs = 1, a = 0, t, at;

	knot[0] = 0;
	while (segs < GN_FIT_SEGS && m - a >= 2 * GN_FIT_MINSEG) {
		double ya = y[a], ye = y[m - 1], best = 0.0;

		at = 0;
		for (t = a + GN_FIT_MINSEG; t <= m - GN_FIT_MINSEG; t++) {
			double line = ya + (ye - ya) * ((double)(t - a) /
							(double)(m - 1 - a));
			double d = __builtin_fabs((double)y[t] - line);

			if (d > best) {
				best = d;
				at = t;
			}
		}
		if (!at)
			break;
		knot[segs++] = at;
		a = at;
	}
	knot[segs] = m;
	return segs;
}

/* The Bernstein basis of degree 5 at u, in binary64. */
static void basis(double u, double *b)
{
	double v = 1.0 - u, u2 = u * u, u3 = u2 * u, u4 = u3 * u;
	double v2 = v * v, v3 = v2 * v, v4 = v3 * v;

	b[0] = v4 * v;
	b[1] = 5.0 * (u * v4);
	b[2] = 10.0 * (u2 * v3);
	b[3] = 10.0 * (u3 * v2);
	b[4] = 5.0 * (u4 * v);
	b[5] = u4 * u;
}

/*
 * A segment's control points: least squares of y[k .. k + len) over u =
 * i / (len - 1), Gaussian elimination without pivoting (the normal matrix
 * of six or more distinct points is positive definite), then clamped to
 * [0, the segment's largest magnitude] and below 2^127. Under six points,
 * the points at ranks floor(i (len - 1) / 5).
 */
static void fit_segment(const float *y, u32 k, u32 len, float *c)
{
	double a[GN_FIT_CPS][GN_FIT_CPS], r[GN_FIT_CPS], x[GN_FIT_CPS];
	double b[GN_FIT_CPS], f, s;
	float top = y[k] < gn_f32_of(GN_FIT_CP_MAX) ? y[k] : gn_f32_of(GN_FIT_CP_MAX);
	u32 t, i, j, p;

	if (len < GN_FIT_CPS) {
		for (i = 0; i < GN_FIT_CPS; i++)
			c[i] = y[k + i * (len - 1) / 5] < top ?
			       y[k + i * (len - 1) / 5] : top;
		return;
	}
	memset(a, 0, sizeof(a));
	memset(r, 0, sizeof(r));
	for (t = 0; t < len; t++) {
		basis((double)t / (double)(len - 1), b);
		for (i = 0; i < GN_FIT_CPS; i++) {
			for (j = i; j < GN_FIT_CPS; j++)
				a[i][j] = a[i][j] + b[i] * b[j];
			r[i] = r[i] + b[i] * (double)y[k + t];
		}
	}
	for (i = 0; i < GN_FIT_CPS; i++)
		for (j = 0; j < i; j++)
			a[i][j] = a[j][i];
	for (p = 0; p < GN_FIT_CPS; p++)
		for (i = p + 1; i < GN_FIT_CPS; i++) {
			f = a[i][p] / a[p][p];
			for (j = p; j < GN_FIT_CPS; j++)
				a[i][j] = a[i][j] - f * a[p][j];
			r[i] = r[i] - f * r[p];
		}
	for (i = GN_FIT_CPS; i--;) {
		s = r[i];
		for (j = i + 1; j < GN_FIT_CPS; j++)
			s = s - a[i][j] * x[j];
		x[i] = s / a[i][i];
	}
	for (i = 0; i < GN_FIT_CPS; i++) {
		float v = (float)x[i];

		c[i] = !(v >= 0.0f) ? 0.0f : v > top ? top : v;
	}
}

/**
 * gn_fit_bucket() - fit one bucket of values
 * @v: its @m values
 * @m: 1 .. 65536
 * @keys: @m words of scratch
 * @rank: out: each value's rank
 * @b: out: the bucket's segments and control points
 * @out: out: what each value decodes to (its sign on the curve at its rank)
 */
void gn_fit_bucket(const float *v, u32 m, u64 *keys, u16 *rank,
		   struct gn_fit_bucket *b, float *out)
{
	u32 t, j, s;

	for (j = 0; j < m; j++)
		keys[j] = (u64)(0x7fffffffu - (gn_f32_bits(v[j]) & 0x7fffffffu)) << 32 | j;
	sort_keys(keys, m);
	/* out[] holds the sorted magnitudes until the curve replaces them. */
	for (t = 0; t < m; t++) {
		j = (u32)keys[t];
		rank[j] = (u16)t;
		out[t] = gn_f32_of(gn_f32_bits(v[j]) & 0x7fffffffu);
	}
	b->m = m;
	b->segs = cuts(out, m, b->knot);
	for (s = 0; s < b->segs; s++)
		fit_segment(out, b->knot[s], b->knot[s + 1] - b->knot[s], b->c[s]);
	for (s = 0, t = 0; t < m; t++) {
		float y;

		while (t >= b->knot[s + 1])
			s++;
		y = eval(b->c[s], t, b->knot[s], b->knot[s + 1] - b->knot[s]);
		j = (u32)keys[t];
		out[j] = gn_f32_bits(v[j]) >> 31 ? -y : y;
	}
}

/* The value of @code (rank, then sign) under a checked header. */
float gn_fit_value(const u8 *hdr, u32 code)
{
	u32 m = gn_fit_hdr_m(hdr), w = gn_fit_rank_bits(m), segs = hdr[2];
	u32 r = code & ((1u << w) - 1), s = 0, k = 0, end = m, i;
	float c[GN_FIT_CPS], y;

	while (s + 1 < segs && r >= gn_get_le16(hdr + 3 + 2 * s))
		s++;
	if (s)
		k = gn_get_le16(hdr + 3 + 2 * (s - 1));
	if (s + 1 < segs)
		end = gn_get_le16(hdr + 3 + 2 * s);
	for (i = 0; i < GN_FIT_CPS; i++)
		c[i] = gn_f32_of(gn_get_le32(hdr + gn_fit_hdr_bytes(segs) -
					4 * GN_FIT_CPS * (segs - s) + 4 * i));
	y = eval(c, r, k, end - k);
	return code >> w & 1 ? -y : y;
}
