// SPDX-License-Identifier: MIT
/*
 * fit.c - a fitted bucket's header on the wire (<gradnet/codec.h>, "Fit
 * values"): its value count, segments, knots and control points, written
 * and checked before any control point is evaluated. Integer-only.
 */
#include "fit.h"

u32 gn_fit_hdr_put(const struct gn_fit_bucket *b, u8 *dst)
{
	u32 o = 3, s, i, bits;

	gn_put_le16((u16)(b->m - 1), dst);
	dst[2] = (u8)b->segs;
	for (s = 1; s < b->segs; s++, o += 2)
		gn_put_le16((u16)b->knot[s], dst + o);
	for (s = 0; s < b->segs; s++)
		for (i = 0; i < GN_FIT_CPS; i++, o += 4) {
			memcpy(&bits, &b->c[s][i], 4);
			gn_put_le32(bits, dst + o);
		}
	return o;
}

u32 gn_fit_hdr_m(const u8 *hdr)
{
	return (u32)gn_get_le16(hdr) + 1;
}

/**
 * gn_fit_hdr_check() - a received bucket header
 * @src: its first byte
 * @len: bytes from there to the body's end
 * @bucket: values a bucket holds at most
 *
 * At most @bucket values, 1 to GN_FIT_SEGS segments whose knots increase
 * strictly inside (0, m), every control point a float32 in [+0, 2^127).
 *
 * Return: the header's bytes, or -EBADMSG.
 */
long gn_fit_hdr_check(const u8 *src, u32 len, u32 bucket)
{
	u32 m, segs, s, o, prev = 0, k;

	if (len < 3)
		return -EBADMSG;
	m = gn_fit_hdr_m(src);
	segs = src[2];
	if (m > bucket || !segs || segs > GN_FIT_SEGS ||
	    gn_fit_hdr_bytes(segs) > len)
		return -EBADMSG;
	for (s = 1, o = 3; s < segs; s++, o += 2) {
		k = gn_get_le16(src + o);
		if (k <= prev || k >= m)
			return -EBADMSG;
		prev = k;
	}
	for (s = 0; s < GN_FIT_CPS * segs; s++, o += 4)
		if (gn_get_le32(src + o) > GN_FIT_CP_MAX)
			return -EBADMSG;
	return o;
}
