// SPDX-License-Identifier: MIT
/*
 * zre.c - zero-run encoding of quartic groups, and the integer checks a
 * decoder runs before it touches an accumulator. Integer-only: the kernel
 * module builds this file without FPU access.
 */
#include "tlc_impl.h"

/*
 * A pending run is kept below 14 by writing a 255 each time it reaches 14,
 * which gives exactly floor(r/14) bytes 255 followed by the remainder code.
 * A pending run of 1..13 groups reserves one byte of @cap, so the encoder
 * stops at the first group that does not fit: the encoded length only grows
 * with the prefix length, so this greedy prefix is the longest that fits.
 *
 * Resumable: *@o and *@run carry the output position and the pending run
 * between calls, and the run is not flushed. Never writes at an index above
 * the input index it has read, so it works in place (dst == q).
 *
 * Return: groups consumed.
 */
size_t gn_zre_run(const u8 *q, size_t count, u8 *dst, size_t cap, size_t *o,
		  unsigned int *run)
{
	unsigned int r = *run;
	size_t i, out = *o;

	for (i = 0; i < count; i++) {
		u8 b = q[i];

		if (b == GN_TLC_ZERO) {
			if (!r && out + 1 > cap)
				break;
			if (++r == GN_ZRE_RUN_MAX_LEN) {
				dst[out++] = 255;
				r = 0;
			}
			continue;
		}
		if (out + (r != 0) + 1 > cap)
			break;
		if (r)
			dst[out++] = gn_zre_run_byte(r);
		r = 0;
		dst[out++] = b;
	}
	*o = out;
	*run = r;
	return i;
}

size_t gn_zre_scalar(const u8 *q, size_t count, u8 *dst, size_t cap,
		     size_t *consumed)
{
	unsigned int run = 0;
	size_t o = 0;

	*consumed = gn_zre_run(q, count, dst, cap, &o, &run);
	if (run)
		dst[o++] = gn_zre_run_byte(run);
	return o;
}

bool gn_zre_has_bad_group(const u8 *q, size_t count)
{
	u8 max = 0;
	size_t i;

	for (i = 0; i < count; i++)
		max = q[i] > max ? q[i] : max;
	return max >= GN_ZRE_RUN_MIN;
}

size_t gn_zre_groups_scalar(const u8 *src, size_t len)
{
	size_t i, groups = 0;

	for (i = 0; i < len; i++)
		groups += gn_zre_len(src[i]);
	return groups;
}

/* Does literal @b give a nonzero trit to an element of group @j at >= @n? */
static bool pads_nonzero(u8 b, size_t j, size_t n, size_t g)
{
	unsigned int k, d = b;

	for (k = GN_TLC_GROUP; k-- > 0; d /= 3)
		if ((size_t)k * g + j >= n && d % 3 != 1)
			return true;
	return false;
}

/*
 * Only the last groups of a chunk can hold padding (indices n..5g-1, at most
 * four of them, all at groups >= n - 4g). Every zero-run byte is a whole
 * code, so the slice can be read backwards from its end to reach them.
 * The caller has checked that the slice covers exactly up to @j_end.
 */
int gn_zre_check_padding(const u8 *src, size_t len, size_t n, size_t g,
			 size_t j_end)
{
	size_t first_pad = n > 4 * g ? n - 4 * g : 0;
	size_t j = j_end;

	while (j > first_pad && len > 0) {
		u8 b = src[--len];

		if (b >= GN_ZRE_RUN_MIN) {
			size_t l = gn_zre_len(b);

			j = j > l ? j - l : 0;
			continue;
		}
		j--;
		if (b != GN_TLC_ZERO && pads_nonzero(b, j, n, g))
			return -EBADMSG;
	}
	return 0;
}
