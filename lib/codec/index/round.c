// SPDX-License-Identifier: MIT
/*
 * round.c - the index round's stream (<gradnet/codec.h>): a chunk's index
 * set as slices of its entries, each the absolute position of its first
 * entry and then the gaps to the next, as varints (varint.h), so that a
 * slice decodes alone. Integer-only.
 */
#include "codec/codec.h"
#include "varint.h"

/**
 * gn_index_slice() - entries of an index set from @at that fit @cap bytes
 * @idx: the set, @n increasing positions
 * @n: its entries
 * @at: the slice's first entry, < @n
 * @dst: out
 * @cap: bytes at @dst
 * @units: out, the entries written (> 0)
 *
 * Return: bytes written; -ENOSPC if not one entry fits.
 */
long gn_index_slice(const u32 *idx, u32 n, u32 at, u8 *dst, u32 cap,
		    u32 *units)
{
	u32 o = 0, j;

	for (j = at; j < n; j++) {
		u32 v = j == at ? idx[j] : idx[j] - idx[j - 1] - 1;

		if (o + gn_varint_len(v) > cap)
			break;
		o += gn_varint_put(v, dst + o);
	}
	if (j == at)
		return -ENOSPC;
	*units = j - at;
	return o;
}

/**
 * gn_index_check() - a received slice of @count entries of a chunk of @len
 * @len: the chunk's values
 * @count: entries the slice says it has
 * @body: the slice
 * @blen: bytes at @body
 *
 * Every varint well formed and every position below @len (they increase
 * by construction).
 *
 * Return: the bytes the @count varints take (at most @blen), or -EBADMSG.
 */
long gn_index_check(u32 len, u32 count, const u8 *body, u32 blen)
{
	u32 at = 0, j, v, r;
	u64 pos = 0;

	for (j = 0; j < count; j++) {
		r = gn_varint_get(body + at, blen - at, &v);
		if (!r)
			return -EBADMSG;
		pos = j ? pos + 1 + v : v;
		if (pos >= len)
			return -EBADMSG;
		at += r;
	}
	return at;
}

/* The @count positions of a slice gn_index_check() took, into @idx. */
void gn_index_take(u32 count, const u8 *body, u32 *idx)
{
	u32 at = 0, j, v = 0;

	for (j = 0; j < count; j++) {
		at += gn_varint_get(body + at, GN_VARINT_MAX, &v);
		idx[j] = j ? idx[j - 1] + 1 + v : v;
	}
}

/*
 * The most packets of a set of @n entries at @cap bytes a packet: a
 * varint takes at most five bytes, and a slice holds as many as fit.
 */
u32 gn_index_pkts_max(u32 n, u32 cap)
{
	u32 per = cap / GN_VARINT_MAX;

	return per ? (n + per - 1) / per : 0;
}
