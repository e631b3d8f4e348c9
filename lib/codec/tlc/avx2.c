// SPDX-License-Identifier: MIT
/*
 * avx2.c - AVX2 codec kernels (AVX2, BMI1, BMI2). Each produces the same
 * bytes, e and acc as the scalar reference; tests/codec_test.c compares
 * them.
 */
#include "tlc_impl.h"
#include "simd_expand.h"
#include <immintrin.h>

/*
 * The two halves of the range are read side by side: from DRAM, four
 * streams keep more reads in flight than two.
 */
static u32 maxabs_bits_avx2(const float *x, const float *e, size_t n)
{
	const __m256i abs = _mm256_set1_epi32(0x7fffffff);
	__m256i m0 = _mm256_setzero_si256(), m1 = m0, m2 = m0, m3 = m0;
	size_t half = n / 32 * 16, i;
	u32 max, lanes[8];
	unsigned int l;

#define GN_ABS_BITS(at)                                                       \
	_mm256_and_si256(_mm256_castps_si256(_mm256_add_ps(                  \
				 _mm256_loadu_ps(x + (at)),                   \
				 _mm256_loadu_ps(e + (at)))),                 \
			 abs)
	for (i = 0; i < half; i += 16) {
		m0 = _mm256_max_epu32(m0, GN_ABS_BITS(i));
		m1 = _mm256_max_epu32(m1, GN_ABS_BITS(i + 8));
		m2 = _mm256_max_epu32(m2, GN_ABS_BITS(half + i));
		m3 = _mm256_max_epu32(m3, GN_ABS_BITS(half + i + 8));
	}
	for (i = 2 * half; i + 8 <= n; i += 8)
		m0 = _mm256_max_epu32(m0, GN_ABS_BITS(i));
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
 * Eight values of one partition: e stored, and qm returned, whose 32-bit
 * lanes read as integers are positive (t > h), negative (t < -h) or zero,
 * the trit's sign. qm is M, -M or +0, so t - qm rounds exactly as the
 * reference.
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
	return _mm256_castps_si256(qm);
}

/*
 * Sixteen groups of a chunk (all five partitions in range), e_out stored
 * with non-temporal stores if @stream. The trits of sixteen groups travel
 * as the signs of 16-bit lanes (packing saturates, keeping them), and each
 * partition adds its weight times its trit (a sign operation) to 121.
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
 * Byte lanes of a 64-bit word picked by an 8-bit mask, packed to the
 * front: lane b of the source goes to the slot counting the set bits below
 * b. Unused slots pick lane 0; the caller overwrites or ignores them.
 */
#define GN_BIT(m, b) (((m) >> (b)) & 1u)
#define GN_POP8(m) (GN_BIT(m, 0) + GN_BIT(m, 1) + GN_BIT(m, 2) +             \
		    GN_BIT(m, 3) + GN_BIT(m, 4) + GN_BIT(m, 5) +              \
		    GN_BIT(m, 6) + GN_BIT(m, 7))
#define GN_SLOT(m, b)                                                         \
	(GN_BIT(m, b) ? (u64)(b) << (8 * GN_POP8((m) & ((1u << (b)) - 1))) : 0)
#define GN_PACK(m) (GN_SLOT(m, 0) | GN_SLOT(m, 1) | GN_SLOT(m, 2) |          \
		    GN_SLOT(m, 3) | GN_SLOT(m, 4) | GN_SLOT(m, 5) |           \
		    GN_SLOT(m, 6) | GN_SLOT(m, 7))
#define GN_PK4(m) GN_PACK(m), GN_PACK(m + 1), GN_PACK(m + 2), GN_PACK(m + 3)
#define GN_PK16(m) GN_PK4(m), GN_PK4(m + 4), GN_PK4(m + 8), GN_PK4(m + 12)
#define GN_PK64(m) GN_PK16(m), GN_PK16(m + 16), GN_PK16(m + 32), GN_PK16(m + 48)
static const u64 pack_lanes[256] = {
	GN_PK64(0), GN_PK64(64), GN_PK64(128), GN_PK64(192)
};
#undef GN_PK64
#undef GN_PK16
#undef GN_PK4
#undef GN_PACK
#undef GN_SLOT
#undef GN_POP8
#undef GN_BIT

/* Sixteen bytes @v, the ones in @keep (16 bits) stored packed at @dst. */
static inline size_t store_packed16(__m128i v, u32 keep, u8 *dst)
{
	unsigned int lo = (unsigned int)_mm_popcnt_u32(keep & 0xff);
	__m128i sel = _mm_set_epi64x(
		(long long)(pack_lanes[keep >> 8] + 0x0808080808080808ull),
		(long long)pack_lanes[keep & 0xff]);

	v = _mm_shuffle_epi8(v, sel);
	_mm_storel_epi64((__m128i *)dst, v);
	_mm_storeh_pi((__m64 *)(dst + lo), _mm_castsi128_ps(v));
	return lo + (unsigned int)_mm_popcnt_u32(keep >> 8);
}

/* The code of a pending run of 0..13 groups (0 is written, never kept). */
static const u8 run_code[16] = {
	0, GN_TLC_ZERO, 243, 244, 245, 246, 247, 248, 249, 250, 251, 252, 253,
	254
};

/* n mod 14 for the zeros after a mixed block's last literal, 0..31. */
#define GN_M14(n) ((n) % GN_ZRE_RUN_MAX_LEN)
#define GN_M14x8(n) GN_M14(n), GN_M14(n + 1), GN_M14(n + 2), GN_M14(n + 3), \
		    GN_M14(n + 4), GN_M14(n + 5), GN_M14(n + 6), GN_M14(n + 7)
static const u8 mod14[32] = {
	GN_M14x8(0), GN_M14x8(8), GN_M14x8(16), GN_M14x8(24)
};
#undef GN_M14x8
#undef GN_M14

/*
 * A 32-group block that mixes zeros and literals, with the scalar
 * encoder's semantics and no branch per literal: each lane gets the
 * position of the last literal at or before it (a prefix maximum; -1 - run
 * before the first, which continues the run carried in), so a zero lane
 * knows its count, its place in its run. A zero whose count is a multiple
 * of 14 becomes a 255, the last zero of a finished run becomes the code of
 * its count mod 14, literals stay, and everything else is packed out; a
 * run reaching the end of the block is carried. A run carried in that ends
 * right before the block gets its code first. Writes reach at most 32
 * bytes past @o, 33 with a carried run, which the block's input is ahead
 * of: safe in place (see zre_avx2()).
 */
static size_t zre_mixed(__m256i v, __m256i zm, u32 lit, u8 *dst, size_t o,
			unsigned int *run)
{
	const __m256i iota = _mm256_setr_epi8(
		0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15,
		16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31);
	/* The code at a count mod 14, per 128-bit lane: 255, 121, 243..254. */
	const __m256i codes = _mm256_setr_epi8(
		-1, GN_TLC_ZERO, -13, -12, -11, -10, -9, -8, -7, -6, -5, -4, -3,
		-2, 0, 0,
		-1, GN_TLC_ZERO, -13, -12, -11, -10, -9, -8, -7, -6, -5, -4, -3,
		-2, 0, 0);
	const __m256i floor = _mm256_set1_epi8(-128);
	const __m256i thirteen = _mm256_set1_epi8(GN_ZRE_RUN_MAX_LEN - 1);
	const __m256i fourteen = _mm256_set1_epi8(GN_ZRE_RUN_MAX_LEN);
	unsigned int r = *run, k;
	u32 keep;
	__m256i at, cnt;

	at = _mm256_blendv_epi8(iota, _mm256_set1_epi8((char)(-1 - (int)r)),
				zm);
	at = _mm256_max_epi8(at, _mm256_alignr_epi8(at, floor, 15));
	at = _mm256_max_epi8(at, _mm256_alignr_epi8(at, floor, 14));
	at = _mm256_max_epi8(at, _mm256_alignr_epi8(at, floor, 12));
	at = _mm256_max_epi8(at, _mm256_alignr_epi8(at, floor, 8));
	/* The low half's last lane reaches into the high half. */
	at = _mm256_max_epi8(at, _mm256_permute2x128_si256(
		_mm256_shuffle_epi8(at, _mm256_set1_epi8(15)), floor, 0x02));
	/* Counts reach 13 + 32: three times less 14 leaves them mod 14. */
	cnt = _mm256_sub_epi8(iota, at);
	for (k = 0; k < 3; k++)
		cnt = _mm256_sub_epi8(cnt, _mm256_and_si256(
			_mm256_cmpgt_epi8(cnt, thirteen), fourteen));
	keep = lit | (~lit & ((u32)_mm256_movemask_epi8(_mm256_cmpeq_epi8(
				      cnt, _mm256_setzero_si256())) |
			      lit >> 1));
	v = _mm256_blendv_epi8(v, _mm256_shuffle_epi8(codes, cnt), zm);
	/* Written always, kept only where the carried run ends here. */
	dst[o] = run_code[r];
	o += (lit & 1) && r;
	o += store_packed16(_mm256_castsi256_si128(v), keep & 0xffff, dst + o);
	o += store_packed16(_mm256_extracti128_si256(v, 1), keep >> 16,
			    dst + o);
	/* The zeros after the last literal (a mixed block has one). */
	*run = mod14[_lzcnt_u32(lit)];
	return o;
}

/*
 * gn_zre_run() on copies, so that the loop below keeps its output position
 * and run in registers: their addresses never leave it.
 */
static inline size_t zre_run_copy(const u8 *q, size_t count, u8 *dst,
				  size_t cap, size_t *o, unsigned int *run)
{
	size_t out = *o, n;
	unsigned int r = *run;

	n = gn_zre_run(q, count, dst, cap, &out, &r);
	*o = out;
	*run = r;
	return n;
}

/*
 * Blocks of 32 groups: all-zero and all-literal ones take a fast path,
 * mixed ones go through zre_mixed(). The loop makes no call, so its
 * constants stay in registers, and no branch but the block's kind.
 *
 * In place, every block's writes end at most 32 bytes past i: each byte
 * written covers at least one group read, so o + run <= i at every block
 * (a carried run is read but not yet written), and a block writes at most
 * 32 bytes past o, one more only to end a carried run.
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
		__m256i zm = _mm256_cmpeq_epi8(v, zero_group);
		u32 z = (u32)_mm256_movemask_epi8(zm);

		if (z == ~0u) {
			run += 32;
			_mm_storeu_si128((__m128i *)(dst + o), ones);
			o += run / GN_ZRE_RUN_MAX_LEN;
			run %= GN_ZRE_RUN_MAX_LEN;
		} else if (z) {
			o = zre_mixed(v, zm, ~z, dst, o, &run);
		} else {
			dst[o] = run_code[run];
			o += run != 0;
			run = 0;
			_mm256_storeu_si256((__m256i *)(dst + o), v);
			o += 32;
		}
		i += 32;
	}
	i += zre_run_copy(q + i, count - i, dst, cap, &o, &run);
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
