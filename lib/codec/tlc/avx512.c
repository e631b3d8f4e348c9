// SPDX-License-Identifier: MIT
/*
 * avx512.c - AVX-512 codec kernels (F, BW, VL, VBMI, VBMI2). Each produces
 * the same bytes, e and acc as the scalar reference in quantize.c, zre.c
 * and accumulate.c; tests/codec_test.c compares them.
 */
#include "tlc_impl.h"
#include "simd_expand.h"
#include <immintrin.h>

/* The two halves side by side, as in avx2.c: four streams from DRAM. */
static u32 maxabs_bits_avx512(const float *x, const float *e, size_t n)
{
	const __m512i abs = _mm512_set1_epi32(0x7fffffff);
	__m512i m0 = _mm512_setzero_si512(), m1 = m0, m2 = m0, m3 = m0;
	size_t half = n / 64 * 32, i;

#define GN_ABS_BITS(at)                                                       \
	_mm512_and_si512(_mm512_castps_si512(_mm512_add_ps(                  \
				 _mm512_loadu_ps(x + (at)),                   \
				 _mm512_loadu_ps(e + (at)))),                 \
			 abs)
	for (i = 0; i < half; i += 32) {
		m0 = _mm512_max_epu32(m0, GN_ABS_BITS(i));
		m1 = _mm512_max_epu32(m1, GN_ABS_BITS(i + 16));
		m2 = _mm512_max_epu32(m2, GN_ABS_BITS(half + i));
		m3 = _mm512_max_epu32(m3, GN_ABS_BITS(half + i + 16));
	}
#undef GN_ABS_BITS
	for (i = 2 * half; i < n; i += 16) {
		__mmask16 k = n - i >= 16 ? 0xffff : (__mmask16)((1u << (n - i)) - 1);
		__m512 t = _mm512_add_ps(_mm512_maskz_loadu_ps(k, x + i),
					 _mm512_maskz_loadu_ps(k, e + i));

		m0 = _mm512_max_epu32(m0, _mm512_and_si512(_mm512_castps_si512(t),
							   abs));
	}
	m0 = _mm512_max_epu32(_mm512_max_epu32(m0, m1),
			      _mm512_max_epu32(m2, m3));
	return _mm512_reduce_max_epu32(m0);
}

/*
 * Sixteen floats to a 16-byte aligned address with non-temporal stores
 * (see struct gn_tlc_span): partitions are 16-byte aligned at best.
 */
static inline void stream16(float *to, __m512 v)
{
	_mm_stream_ps(to, _mm512_castps512_ps128(v));
	_mm_stream_ps(to + 4, _mm512_extractf32x4_ps(v, 1));
	_mm_stream_ps(to + 8, _mm512_extractf32x4_ps(v, 2));
	_mm_stream_ps(to + 12, _mm512_extractf32x4_ps(v, 3));
}

/*
 * Sixteen groups at a time while all five partitions are in range; the
 * group byte is built as 121 plus or minus each partition's weight. The
 * next chunk's first pass runs after this one, on its own: taken sixteen
 * values per partition step inside this loop, its loads from DRAM stall
 * the arithmetic behind them (on Zen 4 the interleaved form encoded a
 * 256 MiB tensor at 0.4-0.5 of STREAM e[i] += x[i], the plain one at 0.7).
 */
static u32 quartic_avx512(const struct gn_tlc_span *cur, float m, u8 *out,
			  const struct gn_tlc_span *next)
{
	const __m512 mv = _mm512_set1_ps(m);
	const __m512 hv = _mm512_set1_ps(0.5f * m);
	const __m512 nhv = _mm512_set1_ps(-(0.5f * m));
	const float *x = cur->x, *e_in = cur->e_in;
	float *e_out = cur->e_out;
	size_t n = cur->n, g = gn_tlc_groups(n), j = 0;
	size_t full = n > 4 * g ? n - 4 * g : 0;
	bool stream = cur->stream && !(((uintptr_t)e_out | g * 4) % 16);
	unsigned int k;

	for (; j + 16 <= full; j += 16) {
		__m512i b = _mm512_set1_epi32(GN_TLC_ZERO);

		for (k = 0; k < GN_TLC_GROUP; k++) {
			const __m512i w = _mm512_set1_epi32(gn_quartic_weight(k));
			size_t at = (size_t)k * g + j;
			__m512 t = _mm512_add_ps(_mm512_loadu_ps(x + at),
						 _mm512_loadu_ps(e_in + at));
			__mmask16 pos = _mm512_cmp_ps_mask(t, hv, _CMP_GT_OQ);
			__mmask16 neg = _mm512_cmp_ps_mask(t, nhv, _CMP_LT_OQ);
			__m512 en = _mm512_mask_sub_ps(t, pos, t, mv);

			en = _mm512_mask_add_ps(en, neg, t, mv);
			if (stream)
				stream16(e_out + at, en);
			else
				_mm512_storeu_ps(e_out + at, en);
			b = _mm512_mask_add_epi32(b, pos, b, w);
			b = _mm512_mask_sub_epi32(b, neg, b, w);
		}
		_mm_storeu_si128((__m128i *)(out + j), _mm512_cvtepi32_epi8(b));
	}
	if (stream)
		_mm_sfence();
	gn_quartic_scalar(cur, m, out, j, g);
	return maxabs_bits_avx512(next->x, next->e_in, next->n);
}

/* The code byte at the @c-th zero of a run: a 255 at every 14th, else the
 * code of a run that would end here (c mod 14 groups). */
#define GN_RUN_CODE(c) ((c) % 14 == 0 ? 255 : (c) % 14 == 1 ? 121 : 241 + (c) % 14)
#define GN_RC4(c) GN_RUN_CODE(c), GN_RUN_CODE(c + 1), GN_RUN_CODE(c + 2),     \
		  GN_RUN_CODE(c + 3)
#define GN_RC16(c) GN_RC4(c), GN_RC4(c + 4), GN_RC4(c + 8), GN_RC4(c + 12)
static const u8 run_codes[128] __attribute__((aligned(64))) = {
	GN_RC16(0), GN_RC16(16), GN_RC16(32), GN_RC16(48),
	GN_RC16(64), GN_RC16(80), GN_RC16(96), GN_RC16(112)
};

/* Lane i gets lane i - k; the first k lanes get 0. */
static inline __m512i shift_lanes(__m512i v, __m512i iota, unsigned int k)
{
	return _mm512_maskz_permutexvar_epi8(
		~0ull << k, _mm512_sub_epi8(iota, _mm512_set1_epi8((char)k)), v);
}

/*
 * Sixty-four groups per step, with the scalar encoder's semantics: each
 * zero group has a count, its place in its run (plus the run carried in);
 * a zero whose count is a multiple of 14 becomes a 255, the last zero of a
 * finished run becomes the code of its count mod 14, literals stay, and
 * everything else is compressed out. Counts come from a prefix maximum of
 * run start positions. A run reaching the end of the block is carried.
 */
static size_t zre_avx512(const u8 *q, size_t count, u8 *dst, size_t cap,
			 size_t *consumed)
{
	const __m512i zero_group = _mm512_set1_epi8((char)GN_TLC_ZERO);
	const __m512i ones = _mm512_set1_epi8((char)0xff);
	const __m512i iota = _mm512_set_epi8(
		63, 62, 61, 60, 59, 58, 57, 56, 55, 54, 53, 52, 51, 50, 49, 48,
		47, 46, 45, 44, 43, 42, 41, 40, 39, 38, 37, 36, 35, 34, 33, 32,
		31, 30, 29, 28, 27, 26, 25, 24, 23, 22, 21, 20, 19, 18, 17, 16,
		15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0);
	const __m512i codes_lo = _mm512_load_si512(run_codes);
	const __m512i codes_hi = _mm512_load_si512(run_codes + 64);
	unsigned int run = 0, k;
	size_t i = 0, o = 0;

	/* Room for a carried code, a full block and the reserved run byte. */
	while (i + 64 <= count && o + 72 <= cap) {
		__m512i v = _mm512_loadu_si512(q + i);
		u64 z = _mm512_cmpeq_epi8_mask(v, zero_group);
		__m512i start, cnt, code;
		u64 marks;

		if (z == ~0ull) {
			run += 64;
			_mm_storeu_si128((__m128i *)(dst + o),
					 _mm512_castsi512_si128(ones));
			o += run / GN_ZRE_RUN_MAX_LEN;
			run %= GN_ZRE_RUN_MAX_LEN;
			i += 64;
			continue;
		}
		if (run && !(z & 1)) {
			dst[o++] = gn_zre_run_byte(run);
			run = 0;
		}
		start = _mm512_maskz_mov_epi8(z & ~(z << 1), iota);
		for (k = 1; k < 64; k <<= 1)
			start = _mm512_max_epu8(start, shift_lanes(start, iota, k));
		cnt = _mm512_add_epi8(_mm512_sub_epi8(iota, start),
				      _mm512_set1_epi8(1));
		/* The first run continues the one carried in. */
		cnt = _mm512_mask_add_epi8(
			cnt, z & _mm512_cmpeq_epi8_mask(start, _mm512_setzero_si512()),
			cnt, _mm512_set1_epi8((char)run));
		code = _mm512_permutex2var_epi8(codes_lo, cnt, codes_hi);
		marks = z & (_mm512_cmpeq_epi8_mask(code, ones) |
			     (~(z >> 1) & ~(1ull << 63)));
		v = _mm512_mask_blend_epi8(marks, v, code);
		_mm512_storeu_si512(dst + o,
				    _mm512_maskz_compress_epi8(~z | marks, v));
		o += _mm_popcnt_u64(~z | marks);
		run = z >> 63 ? (unsigned int)_lzcnt_u64(~z) % GN_ZRE_RUN_MAX_LEN : 0;
		i += 64;
	}
	i += gn_zre_run(q + i, count - i, dst, cap, &o, &run);
	if (run)
		dst[o++] = gn_zre_run_byte(run);
	*consumed = i;
	return o;
}

static size_t groups_avx512(const u8 *src, size_t len)
{
	const __m512i c241 = _mm512_set1_epi8((char)241);
	const __m512i one = _mm512_set1_epi8(1);
	__m512i sum = _mm512_setzero_si512();
	size_t i;

	for (i = 0; i < len; i += 64) {
		__mmask64 k = len - i >= 64 ? ~0ull : (1ull << (len - i)) - 1;
		__m512i v = _mm512_maskz_loadu_epi8(k, src + i);
		__m512i l = _mm512_maskz_max_epu8(k, _mm512_subs_epu8(v, c241),
						  one);

		sum = _mm512_add_epi64(sum, _mm512_sad_epu8(l, _mm512_setzero_si512()));
	}
	return (size_t)_mm512_reduce_add_epi64(sum);
}

/* For each group byte: bit k set if partition k's trit is +1 (pos) or -1. */
#define GN_DIGIT(b, w) (((b) / (w)) % 3)
#define GN_TRITS(b, d)                                                        \
	((GN_DIGIT(b, 81) == (d)) | (GN_DIGIT(b, 27) == (d)) << 1 |           \
	 (GN_DIGIT(b, 9) == (d)) << 2 | (GN_DIGIT(b, 3) == (d)) << 3 |        \
	 (GN_DIGIT(b, 1) == (d)) << 4)
#define GN_T4(b, d) GN_TRITS(b, d), GN_TRITS(b + 1, d), GN_TRITS(b + 2, d),   \
		    GN_TRITS(b + 3, d)
#define GN_T16(b, d) GN_T4(b, d), GN_T4(b + 4, d), GN_T4(b + 8, d),           \
		     GN_T4(b + 12, d)
#define GN_T64(b, d) GN_T16(b, d), GN_T16(b + 16, d), GN_T16(b + 32, d),      \
		     GN_T16(b + 48, d)
static const u8 pos_trits[256] __attribute__((aligned(64))) = {
	GN_T64(0, 2), GN_T64(64, 2), GN_T64(128, 2), GN_T64(192, 2)
};
static const u8 neg_trits[256] __attribute__((aligned(64))) = {
	GN_T64(0, 0), GN_T64(64, 0), GN_T64(128, 0), GN_T64(192, 0)
};

/* A 256-entry byte table lookup: two 128-entry permutes and a blend. */
static inline __m512i lookup256(__m512i idx, const u8 *table)
{
	__m512i lo = _mm512_permutex2var_epi8(_mm512_load_si512(table), idx,
					      _mm512_load_si512(table + 64));
	__m512i hi = _mm512_permutex2var_epi8(_mm512_load_si512(table + 128),
					      idx,
					      _mm512_load_si512(table + 192));

	return _mm512_mask_blend_epi8(_mm512_movepi8_mask(idx), lo, hi);
}

/*
 * Only the lanes of nonzero trits are loaded and stored (masked accesses
 * do not touch memory of masked-off lanes), and validation has put all of
 * them below n.
 */
static void accumulate_block(const u8 *qb, size_t groups, size_t j, float m,
			     float *acc, size_t n, size_t g)
{
	const __m512i zero_group = _mm512_set1_epi8((char)GN_TLC_ZERO);
	const __m512 mv = _mm512_set1_ps(m);
	size_t c;

	(void)n;
	for (c = 0; c < groups; c += 64) {
		__mmask64 valid = groups - c >= 64 ? ~0ull :
						     (1ull << (groups - c)) - 1;
		__m512i v = _mm512_mask_loadu_epi8(zero_group, valid, qb + c);
		__m512i pos, neg;
		unsigned int k, s;

		/* Five streams through acc: ask for each ahead. */
		if (j + c + GN_DECODE_AHEAD + 64 <= g)
			for (k = 0; k < GN_TLC_GROUP; k++)
				for (s = 0; s < 4; s++)
					_mm_prefetch((const char *)(acc + (size_t)k * g + j + c +
								    GN_DECODE_AHEAD + 16 * s),
						     _MM_HINT_T0);

		if (!_mm512_cmpneq_epi8_mask(v, zero_group))
			continue;
		pos = lookup256(v, pos_trits);
		neg = lookup256(v, neg_trits);
		for (k = 0; k < GN_TLC_GROUP; k++) {
			const __m512i bit = _mm512_set1_epi8((char)(1 << k));
			u64 pk = _mm512_test_epi8_mask(pos, bit);
			u64 nk = _mm512_test_epi8_mask(neg, bit);
			float *a = acc + (size_t)k * g + j + c;

			if (!(pk | nk))
				continue;
			for (s = 0; s < 4; s++) {
				__mmask16 ps = (__mmask16)(pk >> (16 * s));
				__mmask16 ns = (__mmask16)(nk >> (16 * s));
				__mmask16 ms = ps | ns;
				__m512 av;

				av = _mm512_maskz_loadu_ps(ms, a + 16 * s);
				av = _mm512_mask_add_ps(av, ps, av, mv);
				av = _mm512_mask_sub_ps(av, ns, av, mv);
				_mm512_mask_storeu_ps(a + 16 * s, ms, av);
			}
		}
	}
}

static void accumulate_avx512(const u8 *src, size_t len, float m, float *acc,
			      size_t n, size_t g, size_t j0)
{
	gn_expand_each(src, len, j0, accumulate_block, m, acc, n, g);
}

const struct gn_tlc_kernels gn_tlc_avx512 = {
	.maxabs_bits = maxabs_bits_avx512,
	.quartic = quartic_avx512,
	.zre = zre_avx512,
	.groups = groups_avx512,
	.accumulate = accumulate_avx512,
};
