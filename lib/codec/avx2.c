// SPDX-License-Identifier: MIT
/*
 * avx2.c - AVX2 codec kernels (AVX2, BMI1, BMI2). Each produces the same
 * bytes, e and acc as the scalar reference; tests/codec_test.c compares
 * them.
 */
#include "tlc_impl.h"
#include "simd_expand.h"
#include <immintrin.h>

static u32 maxabs_bits_avx2(const float *x, const float *e, size_t n)
{
	const __m256i abs = _mm256_set1_epi32(0x7fffffff);
	__m256i m0 = _mm256_setzero_si256(), m1 = m0, m2 = m0, m3 = m0;
	u32 max, lanes[8];
	size_t i = 0;
	unsigned int l;

#define GN_ABS_BITS(off)                                                      \
	_mm256_and_si256(_mm256_castps_si256(_mm256_add_ps(                  \
				 _mm256_loadu_ps(x + i + (off)),              \
				 _mm256_loadu_ps(e + i + (off)))),            \
			 abs)
	for (; i + 32 <= n; i += 32) {
		m0 = _mm256_max_epu32(m0, GN_ABS_BITS(0));
		m1 = _mm256_max_epu32(m1, GN_ABS_BITS(8));
		m2 = _mm256_max_epu32(m2, GN_ABS_BITS(16));
		m3 = _mm256_max_epu32(m3, GN_ABS_BITS(24));
	}
#undef GN_ABS_BITS
	m0 = _mm256_max_epu32(_mm256_max_epu32(m0, m1),
			      _mm256_max_epu32(m2, m3));
	_mm256_storeu_si256((__m256i *)lanes, m0);
	max = 0;
	for (l = 0; l < 8; l++)
		max = lanes[l] > max ? lanes[l] : max;
	for (; i < n; i++) {
		float t = x[i] + e[i];
		u32 a;

		memcpy(&a, &t, sizeof(a));
		a &= 0x7fffffffu;
		max = a > max ? a : max;
	}
	return max;
}

/*
 * Eight values of one partition: e stored, trits returned as 1 (t > h),
 * -1 (t < -h) or 0 in 32-bit lanes. qm is M, -M or +0, so t - qm rounds
 * exactly as the reference.
 */
static inline __m256i quantize8(const float *x, const float *e_in,
				float *e_out, __m256 hv, __m256 nhv, __m256 mv,
				__m256 nmv, bool stream)
{
	__m256 t = _mm256_add_ps(_mm256_loadu_ps(x), _mm256_loadu_ps(e_in));
	__m256 pos = _mm256_cmp_ps(t, hv, _CMP_GT_OQ);
	__m256 neg = _mm256_cmp_ps(t, nhv, _CMP_LT_OQ);
	__m256 qm = _mm256_blendv_ps(_mm256_and_ps(pos, mv), nmv, neg);

	t = _mm256_sub_ps(t, qm);
	if (stream) {
		_mm_stream_ps(e_out, _mm256_castps256_ps128(t));
		_mm_stream_ps(e_out + 4, _mm256_extractf128_ps(t, 1));
	} else {
		_mm256_storeu_ps(e_out, t);
	}
	/* The masks are all ones where true: neg - pos is the trit. */
	return _mm256_sub_epi32(_mm256_castps_si256(neg),
				_mm256_castps_si256(pos));
}

/*
 * Sixteen groups of a chunk (all five partitions in range), e_out stored
 * with non-temporal stores if @stream. The trits of sixteen groups travel
 * as 16-bit lanes, and each partition adds its weight times its trit (a
 * sign operation) to 121.
 */
static inline void quartic16(const float *x, const float *e_in, float *e_out,
			     size_t g, size_t j, __m256 hv, __m256 nhv,
			     __m256 mv, __m256 nmv, u8 *out, bool stream)
{
	__m256i b = _mm256_set1_epi16(GN_TLC_ZERO);
	unsigned int k;

	for (k = 0; k < GN_TLC_GROUP; k++) {
		size_t at = (size_t)k * g + j;
		__m256i q0 = quantize8(x + at, e_in + at, e_out + at, hv, nhv,
				       mv, nmv, stream);
		__m256i q1 = quantize8(x + at + 8, e_in + at + 8,
				       e_out + at + 8, hv, nhv, mv, nmv, stream);

		/* Lanes come out in 128-bit halves; fixed below. */
		b = _mm256_add_epi16(b, _mm256_sign_epi16(
			_mm256_set1_epi16(gn_quartic_weight(k)),
			_mm256_packs_epi32(q0, q1)));
	}
	b = _mm256_permute4x64_epi64(b, 0xd8);
	_mm_storeu_si128((__m128i *)(out + j),
			 _mm_packus_epi16(_mm256_castsi256_si128(b),
					  _mm256_extracti128_si256(b, 1)));
}

/*
 * The pointers are copied out of the spans: a store through e_out could
 * otherwise alias them and force a reload after every store. Streaming
 * needs every partition 16-byte aligned, else plain stores are used.
 */
static u32 quartic_avx2(const struct gn_tlc_span *cur, float m, u8 *out,
			const struct gn_tlc_span *next)
{
	const __m256 mv = _mm256_set1_ps(m), nmv = _mm256_set1_ps(-m);
	const __m256 hv = _mm256_set1_ps(0.5f * m);
	const __m256 nhv = _mm256_set1_ps(-(0.5f * m));
	const float *x = cur->x, *e_in = cur->e_in;
	float *e_out = cur->e_out;
	size_t n = cur->n, g = gn_tlc_groups(n), j = 0;
	size_t full = n > 4 * g ? n - 4 * g : 0;
	bool stream = cur->stream && !(((uintptr_t)e_out | g * 4) % 16);

	if (stream) {
		for (; j + 16 <= full; j += 16)
			quartic16(x, e_in, e_out, g, j, hv, nhv, mv, nmv, out,
				  true);
		/* Order the streamed e before anything that follows. */
		_mm_sfence();
	} else {
		for (; j + 16 <= full; j += 16)
			quartic16(x, e_in, e_out, g, j, hv, nhv, mv, nmv, out,
				  false);
	}
	gn_quartic_scalar(cur, m, out, j, g);
	return maxabs_bits_avx2(next->x, next->e_in, next->n);
}

/*
 * A pending run of r < 46 groups cut by a literal: byte 0 the code of
 * r mod 14, byte 1 the number of 255s before it, byte 2 the bytes all of
 * them take, byte 3 r mod 14. A table, because the selects behind them
 * (r mod 14 == 1 gives 121) compile to branches that mispredict.
 */
#define GN_RUN_REM(r) ((r) % GN_ZRE_RUN_MAX_LEN)
#define GN_RUN_ENTRY(r)                                                       \
	((GN_RUN_REM(r) == 1 ? GN_TLC_ZERO : 241u + GN_RUN_REM(r)) & 0xff) |   \
	((r) / GN_ZRE_RUN_MAX_LEN) << 8 |                                     \
	((r) / GN_ZRE_RUN_MAX_LEN + (GN_RUN_REM(r) != 0)) << 16 |             \
	GN_RUN_REM(r) << 24
#define GN_RE4(r) GN_RUN_ENTRY(r), GN_RUN_ENTRY(r + 1), GN_RUN_ENTRY(r + 2),  \
		  GN_RUN_ENTRY(r + 3)
#define GN_RE16(r) GN_RE4(r), GN_RE4(r + 4), GN_RE4(r + 8), GN_RE4(r + 12)
static const u32 run_entry[48] = { GN_RE16(0), GN_RE16(16), GN_RE16(32) };
#undef GN_RE16
#undef GN_RE4
#undef GN_RUN_ENTRY
#undef GN_RUN_REM

/*
 * The codes of a 32-group block that mixes zeros and literals, one literal
 * at a time: the run before a literal (carried in plus the gap) becomes
 * run/14 bytes 255 and the remainder code, then the literal. The 255s are
 * written as four bytes whatever their count, and the remainder code even
 * when there is none; later codes overwrite the excess. With the slack the
 * caller guarantees, (consumed groups - written bytes - pending run) >= 4,
 * no store reaches past the block, so in-place encoding reads nothing
 * clobbered; the literals themselves come from a copy of the block.
 */
static size_t zre_mixed(__m256i v, u32 lit, u8 *dst, size_t o,
			unsigned int *run)
{
	static const u32 ff = 0xffffffffu;
	unsigned int r = *run, prev = 0, p;
	u8 lanes[32];
	u32 ent;

	_mm256_storeu_si256((__m256i *)lanes, v);
	do {
		p = _tzcnt_u32(lit);
		ent = run_entry[r + p - prev];
		memcpy(dst + o, &ff, 4);
		dst[o + (ent >> 8 & 0xff)] = (u8)ent;
		o += ent >> 16 & 0xff;
		dst[o++] = lanes[p];
		r = 0;
		prev = p + 1;
		lit = _blsr_u32(lit);
	} while (lit);
	ent = run_entry[r + 32 - prev];
	memcpy(dst + o, &ff, 4);
	*run = ent >> 24;
	return o + (ent >> 8 & 0xff);
}

/*
 * Blocks of 32 groups: all zero and all literal ones take a fast path,
 * mixed ones go literal by literal (zre_mixed()) once the output trails
 * the input by a few bytes, and through the scalar encoder, which keeps
 * the same state, before that.
 */
static size_t zre_avx2(const u8 *q, size_t count, u8 *dst, size_t cap,
		       size_t *consumed)
{
	const __m256i zero_group = _mm256_set1_epi8((char)GN_TLC_ZERO);
	const __m128i ones = _mm_set1_epi8((char)0xff);
	unsigned int run = 0;
	size_t i = 0, o = 0;

	while (i + 32 <= count && o + 40 <= cap) {
		__m256i v = _mm256_loadu_si256((const __m256i *)(q + i));
		u32 z = (u32)_mm256_movemask_epi8(_mm256_cmpeq_epi8(v, zero_group));

		if (z == ~0u) {
			run += 32;
			_mm_storeu_si128((__m128i *)(dst + o), ones);
			o += run / GN_ZRE_RUN_MAX_LEN;
			run %= GN_ZRE_RUN_MAX_LEN;
			i += 32;
		} else if (!z) {
			if (run)
				dst[o++] = gn_zre_run_byte(run);
			run = 0;
			_mm256_storeu_si256((__m256i *)(dst + o), v);
			o += 32;
			i += 32;
		} else if (i >= o + run + 4) {
			o = zre_mixed(v, ~z, dst, o, &run);
			i += 32;
		} else {
			i += gn_zre_run(q + i, 32, dst, cap, &o, &run);
		}
	}
	i += gn_zre_run(q + i, count - i, dst, cap, &o, &run);
	if (run)
		dst[o++] = gn_zre_run_byte(run);
	*consumed = i;
	return o;
}

static size_t groups_avx2(const u8 *src, size_t len)
{
	const __m256i c241 = _mm256_set1_epi8((char)241);
	const __m256i one = _mm256_set1_epi8(1);
	__m256i sum = _mm256_setzero_si256();
	u64 lanes[4];
	size_t i;

	for (i = 0; i + 32 <= len; i += 32) {
		__m256i v = _mm256_loadu_si256((const __m256i *)(src + i));
		__m256i l = _mm256_max_epu8(_mm256_subs_epu8(v, c241), one);

		sum = _mm256_add_epi64(sum, _mm256_sad_epu8(l, _mm256_setzero_si256()));
	}
	_mm256_storeu_si256((__m256i *)lanes, sum);
	return (size_t)(lanes[0] + lanes[1] + lanes[2] + lanes[3]) +
	       gn_zre_groups_scalar(src + i, len - i);
}

/*
 * acc += -M, (kept) or +M for the trits @d (0, 1, 2) of eight values: the
 * signed scale is looked up by trit, and the lanes of trit 1 (bit 0 set,
 * so bit 31 after the shift) are blended back bit for bit, never added.
 */
static inline void add8(float *a, __m256 scale, __m256i d)
{
	__m256 v = _mm256_loadu_ps(a);
	__m256 s = _mm256_permutevar8x32_ps(scale, d);

	v = _mm256_blendv_ps(_mm256_add_ps(v, s), v,
			     _mm256_castsi256_ps(_mm256_slli_epi32(d, 31)));
	_mm256_storeu_ps(a, v);
}

/*
 * Sixteen groups at a time; the five trits come from multiply-high by
 * rounded-up reciprocals of 81, 27, 9 and 3, exact for 0..242. Pieces that
 * reach past n or past the block go through the scalar decoder (group bytes
 * are valid zero-run codes on their own). Every partition is read and
 * written back without a branch on its trits: whether sixteen values hold
 * a nonzero trit is a coin toss at usual densities, and a mispredicted
 * branch costs more than the blend.
 */
static void accumulate_block(const u8 *qb, size_t groups, size_t j, float m,
			     float *acc, size_t n, size_t g)
{
	static const u16 recip[4] = { 810, 2428, 7282, 21846 };
	const __m128i zero_group = _mm_set1_epi8((char)GN_TLC_ZERO);
	const __m256 scale = _mm256_setr_ps(-m, 0.0f, m, 0, 0, 0, 0, 0);
	size_t c;

	for (c = 0; c < groups; c += 16) {
		__m128i v;
		__m256i r, d[GN_TLC_GROUP];
		unsigned int k;

		if (groups - c < 16 || 4 * g + j + c + 16 > n) {
			size_t left = groups - c < 16 ? groups - c : 16;

			gn_accumulate_scalar(qb + c, left, m, acc, n, g, j + c);
			continue;
		}
		/* Five streams through acc: ask for each ahead. */
		if (j + c + GN_DECODE_AHEAD < g)
			for (k = 0; k < GN_TLC_GROUP; k++)
				_mm_prefetch((const char *)(acc + (size_t)k * g + j +
							    c + GN_DECODE_AHEAD),
					     _MM_HINT_T0);
		v = _mm_loadu_si128((const __m128i *)(qb + c));
		if (_mm_movemask_epi8(_mm_cmpeq_epi8(v, zero_group)) == 0xffff)
			continue;
		r = _mm256_cvtepu8_epi16(v);
		for (k = 0; k < 4; k++) {
			d[k] = _mm256_mulhi_epu16(r, _mm256_set1_epi16((short)recip[k]));
			r = _mm256_sub_epi16(r, _mm256_mullo_epi16(
				d[k], _mm256_set1_epi16(gn_quartic_weight(k))));
		}
		d[4] = r;
		for (k = 0; k < GN_TLC_GROUP; k++) {
			float *a = acc + (size_t)k * g + j + c;

			add8(a, scale, _mm256_cvtepu16_epi32(_mm256_castsi256_si128(d[k])));
			add8(a + 8, scale, _mm256_cvtepu16_epi32(
						   _mm256_extracti128_si256(d[k], 1)));
		}
	}
}

static void accumulate_avx2(const u8 *src, size_t len, float m, float *acc,
			    size_t n, size_t g, size_t j0)
{
	gn_expand_each(src, len, j0, accumulate_block, m, acc, n, g);
}

const struct gn_tlc_kernels gn_tlc_avx2 = {
	.maxabs_bits = maxabs_bits_avx2,
	.quartic = quartic_avx2,
	.zre = zre_avx2,
	.groups = groups_avx2,
	.accumulate = accumulate_avx2,
};
