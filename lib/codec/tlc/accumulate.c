// SPDX-License-Identifier: MIT
/*
 * accumulate.c - the reference decode-accumulate: walks a validated
 * zero-run encoded slice and adds +-M to the elements of nonzero trits only.
 * Floating point: called only inside an FPU section.
 */
#include "tlc_impl.h"

static inline void add_group(u8 b, float m, float *acc, size_t g, size_t j)
{
	unsigned int k, d = b;

	for (k = GN_TLC_GROUP; k-- > 0; d /= 3) {
		if (d % 3 == 2)
			acc[(size_t)k * g + j] += m;
		else if (d % 3 == 0)
			acc[(size_t)k * g + j] -= m;
	}
}

/*
 * The slice has been validated: it covers groups inside [0, g) and gives
 * no nonzero trit to an index >= n, so every write lands in acc[0..n).
 */
void gn_accumulate_scalar(const u8 *src, size_t len, float m, float *acc,
			  size_t n, size_t g, size_t j0)
{
	size_t i, j = j0;

	(void)n;
	for (i = 0; i < len; i++) {
		u8 b = src[i];

		if (b >= GN_ZRE_RUN_MIN) {
			j += gn_zre_len(b);
			continue;
		}
		if (b != GN_TLC_ZERO)
			add_group(b, m, acc, g, j);
		j++;
	}
}
