// SPDX-License-Identifier: MIT
/*
 * codes.c - QSGD's codes on the wire: packed bits each, least significant
 * first, checked before anything is decoded; and the parameter check
 * "qsgd" and top-k's QSGD values share. Integer-only.
 */
#include "qsgd.h"

u32 gn_qsgd_pack(const struct gn_qsgd *q, const u8 *codes, u32 m, u8 *dst)
{
	u32 n = gn_qsgd_code_bytes(q, m), j;

	memset(dst, 0, n);
	for (j = 0; j < m; j++) {
		u32 bit = j * q->bits;

		dst[bit >> 3] |= (u8)(codes[j] << (bit & 7));
	}
	return n;
}

/*
 * @m packed codes at @src under a norm of bits @norm: no sign on a zero
 * level, no level at all under a zero norm, unused bits 0.
 * Return: 0 or -EBADMSG.
 */
int gn_qsgd_check_codes(const struct gn_qsgd *q, u32 norm, const u8 *src,
			u32 m)
{
	u32 sign = 1u << (q->bits - 1), j, used = m * q->bits;

	if (!gn_qsgd_norm_ok(norm))
		return -EBADMSG;
	for (j = 0; j < m; j++) {
		u32 c = gn_qsgd_code_at(q, src, j);

		if (c == sign || (c && !norm))
			return -EBADMSG;
	}
	if (used % 8 && src[used / 8] >> (used % 8))
		return -EBADMSG;
	return 0;
}

/* Buckets [first, first + count) back to back, each norm and codes sound. */
int gn_qsgd_check_buckets(const struct gn_qsgd *q, u32 len, u32 first,
			  u32 count, const u8 *body, u32 blen)
{
	u32 at = 0, n = 0;

	if (first % q->bucket ||
	    (count % q->bucket && first + count != len) ||
	    blen != gn_qsgd_bytes(q, count))
		return -EBADMSG;
	while (n < count) {
		u32 mb = count - n < q->bucket ? count - n : q->bucket;

		if (gn_qsgd_check_codes(q, gn_get_le32(body + at),
					body + at + 4, mb))
			return -EBADMSG;
		at += 4 + gn_qsgd_code_bytes(q, mb);
		n += mb;
	}
	return 0;
}

/* bits 2, 4 or 8; a bucket 0 (auto) or 16.. that fits one packet body. */
int gn_qsgd_check_params(const char *codec, u32 bits, u32 bucket,
			 u32 body_cap, char *msg, size_t len)
{
	struct gn_qsgd q;
	u64 b;

	if (bits != 2 && bits != 4 && bits != 8) {
		snprintf(msg, len, "%s: bits=%u: QSGD takes 2, 4 or 8", codec,
			 bits);
		return -EINVAL;
	}
	if (bucket && bucket < 16) {
		snprintf(msg, len, "%s: bucket=%u: 0 (auto) or 16 to 65536 values",
			 codec, bucket);
		return -EINVAL;
	}
	gn_qsgd_of(bits, bucket, 0, &q);
	b = gn_qsgd_bytes(&q, q.bucket);
	if (b > body_cap) {
		snprintf(msg, len, "%s: a bucket of %u values at %u bits takes %llu bytes; a packet at this MTU carries %u: a smaller bucket, please",
			 codec, q.bucket, bits, (unsigned long long)b, body_cap);
		return -EINVAL;
	}
	return 0;
}
