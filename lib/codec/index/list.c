// SPDX-License-Identifier: MIT
/*
 * list.c - the index codecs that code a list of positions exactly: delta
 * varints, a bitmap, bit-packed run lengths (<gradnet/codec.h>, "Index
 * codecs"). Sizes grow one position at a time for the slicers; checks
 * refuse every malformed part before a walk reads it. Integer-only.
 */
#include "index.h"
#include "varint.h"
#include "codec/bits.h"

void gn_idx_size_init(struct gn_idx_size *s, u32 codec, u32 first)
{
	memset(s, 0, sizeof(*s));
	s->codec = codec;
	s->first = first;
}

void gn_idx_size_add(struct gn_idx_size *s, u32 pos)
{
	u32 gap;

	if (s->codec == GN_IDX_VARINT) {
		s->varints += gn_varint_len(s->n ? pos - s->last - 1 :
					    pos - s->first);
	} else if (s->codec == GN_IDX_RLE) {
		if (s->n && pos == s->last + 1) {
			s->run_len++;
			if (s->run_len - 1 > s->max_len1)
				s->max_len1 = s->run_len - 1;
		} else {
			/* A new run: after a run, a gap of at least one. */
			gap = s->n ? pos - s->last - 2 : pos - s->first;
			if (gap > s->max_gap)
				s->max_gap = gap;
			s->runs++;
			s->run_len = 1;
		}
	}
	s->last = pos;
	s->n++;
}

static u64 rle_bytes(u32 runs, u32 max_gap, u32 max_len1)
{
	u64 bits = (u64)runs * (gn_idx_bitlen(max_gap) + gn_idx_bitlen(max_len1));

	return runs ? gn_varint_len(runs) + 2 + (bits + 7) / 8 : 1;
}

u64 gn_idx_size_bytes(const struct gn_idx_size *s)
{
	u32 b;

	switch (s->codec) {
	case GN_IDX_VARINT:
		return s->varints;
	case GN_IDX_BITMAP:
		b = s->n ? (s->last - s->first) / 8 + 1 : 0;
		return gn_varint_len(b) + b;
	default:
		return rle_bytes(s->runs, s->max_gap, s->max_len1);
	}
}

/* The index part of @n increasing positions at @pos, from @first. */
u64 gn_idx_list_bytes(u32 codec, const u32 *pos, u32 n, u32 first)
{
	struct gn_idx_size s;
	u32 j;

	if (codec == GN_IDX_VARINT) {
		u64 b = 0;

		for (j = 0; j < n; j++) {
			b += gn_varint_len(pos[j] - first);
			first = pos[j] + 1;
		}
		return b;
	}
	gn_idx_size_init(&s, codec, first);
	for (j = 0; j < n; j++)
		gn_idx_size_add(&s, pos[j]);
	return gn_idx_size_bytes(&s);
}

static u32 put_rle(const u32 *pos, u32 n, u32 first, u8 *dst)
{
	struct gn_idx_size s;
	struct gn_bits_out o;
	u32 j, start, at, wg, wo;

	gn_idx_size_init(&s, GN_IDX_RLE, first);
	for (j = 0; j < n; j++)
		gn_idx_size_add(&s, pos[j]);
	at = gn_varint_put(s.runs, dst);
	if (!s.runs)
		return at;
	wg = gn_idx_bitlen(s.max_gap);
	wo = gn_idx_bitlen(s.max_len1);
	dst[at++] = (u8)wg;
	dst[at++] = (u8)wo;
	gn_bits_start(&o, dst + at);
	for (j = 0; j < n; j = start) {
		start = j + 1;
		while (start < n && pos[start] == pos[start - 1] + 1)
			start++;
		gn_bits_put(&o, j ? pos[j] - pos[j - 1] - 2 : pos[j] - first, wg);
		gn_bits_put(&o, start - j - 1, wo);
	}
	return (u32)(gn_bits_end(&o) - dst);
}

/* Write the index part; gn_idx_list_bytes() says how long it is. */
u32 gn_idx_list_put(u32 codec, const u32 *pos, u32 n, u32 first, u8 *dst)
{
	u32 at = 0, j, b, prev = first;

	switch (codec) {
	case GN_IDX_VARINT:
		for (j = 0; j < n; j++) {
			at += gn_varint_put(pos[j] - prev, dst + at);
			prev = pos[j] + 1;
		}
		return at;
	case GN_IDX_BITMAP:
		b = n ? (pos[n - 1] - first) / 8 + 1 : 0;
		at = gn_varint_put(b, dst);
		memset(dst + at, 0, b);
		for (j = 0; j < n; j++)
			dst[at + (pos[j] - first) / 8] |=
				(u8)(1u << ((pos[j] - first) % 8));
		return at + b;
	default:
		return put_rle(pos, n, first, dst);
	}
}

static long check_varint(const u8 *src, u32 len, u32 first, u32 count,
			 u32 n)
{
	u64 pos = first, end = (u64)first + count;
	u32 at = 0, j, r, d;

	for (j = 0; j < n; j++) {
		r = gn_varint_get(src + at, len - at, &d);
		if (!r || pos + d >= end)
			return -EBADMSG;
		at += r;
		pos += (u64)d + 1;
	}
	return at;
}

/* Set bits of a byte, without a libgcc call where the CPU has no popcnt. */
static u32 ones_of(u32 b)
{
	b = b - ((b >> 1) & 0x55);
	b = (b & 0x33) + ((b >> 2) & 0x33);
	return (b + (b >> 4)) & 0x0f;
}

static long check_bitmap(const u8 *src, u32 len, u32 count, u32 n)
{
	u32 at, b, j, ones = 0;

	at = gn_varint_get(src, len, &b);
	if (!at || b > len - at || (u64)b * 8 > (u64)count + 7)
		return -EBADMSG;
	for (j = 0; j < b; j++)
		ones += ones_of(src[at + j]);
	/* No position at or past the slice's end. */
	if (ones != n || (b && (u64)b * 8 > count &&
			  src[at + b - 1] >> (count % 8)))
		return -EBADMSG;
	return at + b;
}

static long check_rle(const u8 *src, u32 len, u32 first, u32 count, u32 n)
{
	u64 pos = first, end = (u64)first + count, total = 0, bit, bytes;
	u32 at, k, wg, wo, j;

	at = gn_varint_get(src, len, &k);
	if (!at || k > n || (!k && n))
		return -EBADMSG;
	if (!k)
		return at;
	if (len - at < 2)
		return -EBADMSG;
	wg = src[at];
	wo = src[at + 1];
	at += 2;
	bytes = ((u64)k * (wg + wo) + 7) / 8;
	if (wg > 32 || wo > 32 || bytes > len - at)
		return -EBADMSG;
	for (j = 0, bit = 0; j < k; j++) {
		u64 gap = gn_bits_get(src + at, bit, wg);
		u64 run = (u64)gn_bits_get(src + at, bit + wg, wo) + 1;

		bit += wg + wo;
		pos += gap + (j ? 1 : 0);
		if (pos + run > end)
			return -EBADMSG;
		pos += run;
		total += run;
	}
	if (total != n || (bit % 8 && src[at + bit / 8] >> (bit % 8)))
		return -EBADMSG;
	return (long)(at + bytes);
}

/**
 * gn_idx_list_check() - a received index part of @n positions
 * @codec: GN_IDX_VARINT, GN_IDX_BITMAP or GN_IDX_RLE
 * @src: its first byte
 * @len: bytes from there to the body's end
 * @first: the slice's first unit
 * @count: its units
 * @n: the positions it must hold
 *
 * Every position increasing and inside [first, first + count), exactly
 * @n of them, every varint well formed, padding bits 0.
 *
 * Return: the part's bytes, or -EBADMSG.
 */
long gn_idx_list_check(u32 codec, const u8 *src, u32 len, u32 first,
		       u32 count, u32 n)
{
	switch (codec) {
	case GN_IDX_VARINT:
		return check_varint(src, len, first, count, n);
	case GN_IDX_BITMAP:
		return check_bitmap(src, len, count, n);
	case GN_IDX_RLE:
		return check_rle(src, len, first, count, n);
	}
	return -EBADMSG;
}

/* The bytes of an index part of @n positions gn_idx_list_check() took. */
u32 gn_idx_list_skip(u32 codec, const u8 *src, u32 n)
{
	u32 at = 0, j, v = 0, wg, wo;

	switch (codec) {
	case GN_IDX_VARINT:
		for (j = 0; j < n; j++)
			at += gn_varint_get(src + at, GN_VARINT_MAX, &v);
		return at;
	case GN_IDX_BITMAP:
		at = gn_varint_get(src, GN_VARINT_MAX, &v);
		return at + v;
	default:
		at = gn_varint_get(src, GN_VARINT_MAX, &v);
		if (!v)
			return at;
		wg = src[at];
		wo = src[at + 1];
		return at + 2 + (u32)(((u64)v * (wg + wo) + 7) / 8);
	}
}

void gn_idx_walk_start(struct gn_idx_walk *w, u32 codec, const u8 *src,
		       u32 first)
{
	u32 v = 0;

	memset(w, 0, sizeof(*w));
	w->codec = codec;
	w->src = src;
	w->pos = first;
	if (codec == GN_IDX_BITMAP) {
		w->at = gn_varint_get(src, 5, &v);
	} else if (codec == GN_IDX_RLE) {
		w->at = gn_varint_get(src, 5, &w->runs);
		if (w->runs) {
			w->wg = src[w->at];
			w->wo = src[w->at + 1];
			w->at += 2;
		}
	}
}

/* The next position of a part gn_idx_list_check() accepted. */
u32 gn_idx_walk_next(struct gn_idx_walk *w)
{
	u32 d = 0, p;

	switch (w->codec) {
	case GN_IDX_VARINT:
		w->at += gn_varint_get(w->src + w->at, 5, &d);
		p = w->pos + d;
		w->pos = p + 1;
		return p;
	case GN_IDX_BITMAP:
		for (;;) {
			u32 byte = w->src[w->at] >> w->bit;

			if (byte) {
				d = (u32)__builtin_ctz(byte);
				p = w->pos + w->bit + d;
				w->bit += d + 1;
				if (w->bit == 8) {
					w->bit = 0;
					w->pos += 8;
					w->at++;
				}
				return p;
			}
			w->bit = 0;
			w->pos += 8;
			w->at++;
		}
	default:
		if (!w->left) {
			const u8 *bits = w->src + w->at;

			w->pos += gn_bits_get(bits, w->gbit, w->wg) +
				  (w->run ? 1 : 0);
			w->left = gn_bits_get(bits, w->gbit + w->wg, w->wo) + 1;
			w->gbit += w->wg + w->wo;
			w->run++;
		}
		w->left--;
		return w->pos++;
	}
}
