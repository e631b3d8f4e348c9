// SPDX-License-Identifier: MIT
/*
 * fuzz_decode.c - libFuzzer target for decode-accumulate on arbitrary bytes.
 *
 * The input's header (fuzz_input.h) gives n, a slice (j0, count), a scale
 * and the accumulator's starting values; the rest is decoded as a whole
 * chunk stream (gn_tlc_decode_isa) and as a slice (gn_tlc_decode_slice_isa)
 * by every instruction set the CPU has. The stream and the accumulator are
 * exact-size heap buffers, so ASan reports any read past the input and any
 * write outside acc[0..n). Every result must equal the specification model
 * bit for bit: -EBADMSG with acc unchanged, or each element changed by
 * exactly +M or -M where the model says so.
 */
#include <errno.h>
#include <float.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <gradnet/codec.h>
#include "fuzz_check.h"
#include "fuzz_input.h"
#include "tlc_model.h"

struct decode_case {
	const char *what;
	bool whole;		/* a chunk stream, else a slice */
	const uint8_t *src;
	size_t len;
	float m;		/* slices only */
	size_t n;
	size_t j0;
	size_t count;
};

/* Starting values that make +-M visible, or stress rounding and specials. */
static void fill_acc(float *acc, size_t n, unsigned int pattern)
{
	static const float odd[4] = { -0.0f, FLT_TRUE_MIN, -3e38f, 1.0f };
	static const float special[5] = { INFINITY, NAN, -2.5f, -INFINITY,
					  1e38f };
	size_t i;

	for (i = 0; i < n; i++) {
		switch (pattern) {
		case 0:
			acc[i] = 0.0f;
			break;
		case 1:
			acc[i] = (float)((int)(i % 7) - 3) * 0.25f;
			break;
		case 2:
			acc[i] = odd[i % 4];
			break;
		default:
			acc[i] = special[i % 5];
			break;
		}
	}
}

static int decode_isa(int isa, const struct decode_case *c, float *acc)
{
	if (c->whole)
		return gn_tlc_decode_isa(isa, c->src, c->len, acc, c->n);
	return gn_tlc_decode_slice_isa(isa, c->src, c->len, c->m, acc, c->n,
				       c->j0, c->count);
}

static float scale_of(const struct decode_case *c)
{
	if (!c->whole)
		return c->m;
	return c->len >= 4 ? gn_float(gn_fz_le(c->src, 4)) : 0.0f;
}

/* Each element either kept its bits or became exactly acc + M or acc - M. */
static void check_plus_minus_m(const struct decode_case *c, int isa,
			       const float *before, const float *acc)
{
	float m = scale_of(c);
	size_t i;

	for (i = 0; i < c->n; i++) {
		float up = before[i] + m, down = before[i] - m;

		GN_FZ_CHECK(!memcmp(&acc[i], &before[i], 4) ||
			    !memcmp(&acc[i], &up, 4) ||
			    !memcmp(&acc[i], &down, 4),
			    "%s %s: acc[%zu] went from 0x%08x to 0x%08x, M 0x%08x",
			    c->what, gn_fz_isa_name(isa), i,
			    gn_bits(before[i]), gn_bits(acc[i]),
			    gn_bits(m));
	}
}

static void check_decode(const struct decode_case *c, const float *before)
{
	size_t bytes = c->n * sizeof(float), at;
	float *want = gn_fz_dup(before, bytes);
	float *acc = gn_fz_alloc(bytes, 0);
	int want_ret, ret, isa;

	if (c->whole)
		want_ret = model_decode(c->src, c->len, want, c->n);
	else
		want_ret = model_decode_slice(c->src, c->len, c->m, want, c->n,
					      c->j0, c->count);
	gn_fz_for_each_isa(isa) {
		if (bytes)
			memcpy(acc, before, bytes);
		ret = GN_FZ_CALL(decode_isa(isa, c, acc));
		GN_FZ_CHECK(ret == want_ret,
			    "%s %s: returned %d, the specification says %d "
			    "(n %zu, len %zu, j0 %zu, count %zu)",
			    c->what, gn_fz_isa_name(isa), ret, want_ret,
			    c->n, c->len, c->j0, c->count);
		if (ret)
			GN_FZ_CHECK(!bytes || !memcmp(acc, before, bytes),
				    "%s %s: -EBADMSG but acc[%zu] changed",
				    c->what, gn_fz_isa_name(isa),
				    gn_fz_first_diff(acc, before, c->n));
		else
			check_plus_minus_m(c, isa, before, acc);
		at = gn_fz_first_diff(acc, want, c->n);
		GN_FZ_CHECK(at == c->n,
			    "%s %s: acc[%zu] is 0x%08x, the specification says 0x%08x",
			    c->what, gn_fz_isa_name(isa), at,
			    gn_bits(acc[at]), gn_bits(want[at]));
	}
	free(want);
	free(acc);
}

/* gn_zre_check() must accept exactly the slices the decoder accepts. */
static void check_zre_check(const struct decode_case *c, const float *before)
{
	float *scratch = gn_fz_dup(before, c->n * sizeof(float));
	int want = model_decode_slice(c->src, c->len, 0.0f, scratch, c->n,
				      c->j0, c->count);
	int ret = GN_FZ_CALL(gn_zre_check(c->src, c->len, c->n, c->j0,
					  c->count));

	GN_FZ_CHECK(ret == want, "gn_zre_check returned %d, the specification says %d",
		    ret, want);
	free(scratch);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct decode_case c = { 0 };
	unsigned int flags;
	size_t g, j0, count;
	uint8_t *stream;
	float *before;

	if (size < GN_FZD_HDR)
		return -1;
	flags = data[GN_FZD_FLAGS];
	c.n = gn_fz_le(data + GN_FZD_N, 2);
	g = gn_tlc_groups(c.n);
	j0 = gn_fz_le(data + GN_FZD_J0, 2);
	count = gn_fz_le(data + GN_FZD_COUNT, 2);
	if (!(flags & GN_FZD_RAW_SLICE)) {
		/* Mostly slices that lie inside the chunk. */
		j0 %= g + 1;
		count %= g - j0 + 1;
	} else if (flags & GN_FZD_J0_HUGE) {
		j0 = SIZE_MAX - j0;
	}
	gn_fz_caller_csr = GN_FZ_CSR_DEFAULT;
	if (flags & GN_FZD_FTZ)
		gn_fz_caller_csr |= GN_FZ_CSR_FTZ_DAZ;

	c.len = size - GN_FZD_HDR;
	stream = gn_fz_dup(data + GN_FZD_HDR, c.len);
	before = gn_fz_alloc(c.n * sizeof(float), 0);
	fill_acc(before, c.n, flags & GN_FZD_ACC_MASK);
	c.src = stream;

	c.what = "chunk stream";
	c.whole = true;
	c.count = g;
	check_decode(&c, before);

	c.what = "slice";
	c.whole = false;
	c.m = gn_float(gn_fz_le(data + GN_FZD_M, 4));
	c.j0 = j0;
	c.count = count;
	check_decode(&c, before);
	check_zre_check(&c, before);

	free(stream);
	free(before);
	return 0;
}
