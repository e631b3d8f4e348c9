/* SPDX-License-Identifier: MIT */
/*
 * fit.h - curve-fitted values of sparse streams (<gradnet/codec.h>, "Fit
 * values"): a bucket's magnitudes sorted, cut where the curve lies
 * farthest from its chord, each segment a degree-5 least-squares fit in
 * Bernstein form; each value sent as its rank and sign. The fitting is
 * float work (fit_fp.c); headers and codes are integer work (fit.c).
 */
#ifndef GN_CODEC_FIT_H
#define GN_CODEC_FIT_H

#include "gn_deps.h"

#define GN_FIT_SEGS 4		/* segments a bucket has at most */
#define GN_FIT_MINSEG 16	/* values a cut leaves on either side */
#define GN_FIT_CPS 6		/* control points of a segment: degree 5 */
#define GN_FIT_BUCKET 256	/* values per bucket when bucket=0 */
/* The largest float32 below 2^127: control points stay under it. */
#define GN_FIT_CP_MAX 0x7effffffu

/* A fitted bucket, as the sender keeps it. */
struct gn_fit_bucket {
	u32 m;				/* values */
	u32 segs;
	u32 knot[GN_FIT_SEGS + 1];	/* knot[0] = 0, knot[segs] = m */
	float c[GN_FIT_SEGS][GN_FIT_CPS];
};

/* Bits of a rank in a bucket of @m values: ceil(log2 m). */
static inline u32 gn_fit_rank_bits(u32 m)
{
	return m > 1 ? 32 - (u32)__builtin_clz(m - 1) : 0;
}

/* Bytes of a header of @segs segments. */
static inline u32 gn_fit_hdr_bytes(u32 segs)
{
	return 3 + 2 * (segs - 1) + 4 * GN_FIT_CPS * segs;
}

#define GN_FIT_HDR_MAX (3 + 2 * (GN_FIT_SEGS - 1) + 4 * GN_FIT_CPS * GN_FIT_SEGS)

/* fit.c (integer) */
u32 gn_fit_hdr_put(const struct gn_fit_bucket *b, u8 *dst);
long gn_fit_hdr_check(const u8 *src, u32 len, u32 bucket);
u32 gn_fit_hdr_m(const u8 *hdr);

/* fit_fp.c (float) */
void gn_fit_bucket(const float *v, u32 m, u64 *keys, u16 *rank,
		   struct gn_fit_bucket *b, float *out);
float gn_fit_value(const u8 *hdr, u32 code);

#endif /* GN_CODEC_FIT_H */
