// SPDX-License-Identifier: MIT
/*
 * codec_test.c - the 3LC codec against its golden vectors, its properties
 * and, for every SIMD instruction set the CPU has, against the scalar
 * reference bit for bit; top-k's scan and QSGD's kernels against the
 * scalar ones.
 */
#include <errno.h>
#include <float.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <xmmintrin.h>

#include "kselftest_harness.h"
#include <gradnet/codec.h>
#include "testutil.h"
#include "golden/vectors.h"
#include "codec/codec.h"
#include "codec/topk/scan.h"
#include "codec/qsgd/quant.h"

#define ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))

/* The trit of element i, read back from the chunk's quartic bytes. */
static int trit_of(const uint8_t *quartic, size_t n, size_t i)
{
	size_t g = gn_tlc_groups(n);
	static const unsigned int w[5] = { 81, 27, 9, 3, 1 };

	return (int)(quartic[i % g] / w[i / g] % 3) - 1;
}

static void bits_of(const float *f, uint32_t *u, size_t n)
{
	memcpy(u, f, n * sizeof(*f));
}

static void floats_of(const uint32_t *u, float *f, size_t n)
{
	memcpy(f, u, n * sizeof(*f));
}

/* The specification's zero-run encoding, written out plainly. */
static size_t zre_spec(const uint8_t *q, size_t count, uint8_t *out)
{
	size_t i = 0, o = 0;

	while (i < count) {
		size_t r = 0, k;

		if (q[i] != GN_TLC_ZERO) {
			out[o++] = q[i++];
			continue;
		}
		while (i < count && q[i] == GN_TLC_ZERO) {
			r++;
			i++;
		}
		if (r == 1) {
			out[o++] = GN_TLC_ZERO;
			continue;
		}
		for (k = 0; k < r / 14; k++)
			out[o++] = 255;
		if (r % 14 == 1)
			out[o++] = GN_TLC_ZERO;
		else if (r % 14 >= 2)
			out[o++] = (uint8_t)(241 + r % 14);
	}
	return o;
}

FIXTURE(isa) {
	int isa;
};

FIXTURE_SETUP(isa)
{
	char why[96];

	self->isa = gn_test_isa(why, sizeof(why));
	ASSERT_LE(0, self->isa) TH_LOG("%s", why);
	ksft_print_msg("codec kernels: %s\n", gn_codec_isa_name(self->isa));
}

FIXTURE_TEARDOWN(isa)
{
}

/* Encode one golden vector; compare return, stream and e bit for bit. */
static int golden_encode_one(struct __test_metadata *_metadata, int isa,
			     const struct gn_golden *v)
{
	size_t n = v->n, cap = gn_tlc_encode_bound(n);
	float *x = calloc(n + 1, sizeof(float));
	float *e = calloc(n + 1, sizeof(float));
	uint32_t *eb = calloc(n + 1, sizeof(uint32_t));
	uint8_t *out = calloc(cap, 1);
	long len;
	int ok = 0;

	floats_of(v->x, x, n);
	floats_of(v->e_in, e, n);
	len = gn_tlc_encode_isa(isa, x, e, n, gn_float(v->s), out, cap);
	bits_of(e, eb, n);
	if (v->ret) {
		EXPECT_EQ(v->ret, len) TH_LOG("%s", v->name);
		EXPECT_EQ(0, memcmp(eb, v->e_in, n * 4)) TH_LOG("%s: e changed", v->name);
		ok = len == v->ret && !memcmp(eb, v->e_in, n * 4);
	} else {
		EXPECT_EQ((long)v->stream_len, len) TH_LOG("%s", v->name);
		EXPECT_EQ(0, memcmp(out, v->stream, v->stream_len)) TH_LOG("%s: stream", v->name);
		EXPECT_EQ(0, memcmp(eb, v->e_out, n * 4)) TH_LOG("%s: e", v->name);
		ok = len == (long)v->stream_len &&
		     !memcmp(out, v->stream, v->stream_len) &&
		     !memcmp(eb, v->e_out, n * 4);
	}
	free(x);
	free(e);
	free(eb);
	free(out);
	return ok;
}

TEST_F(isa, golden_encode)
{
	size_t i;

	for (i = 0; i < ARRAY_LEN(gn_golden); i++)
		golden_encode_one(_metadata, self->isa, &gn_golden[i]);
}

/* Denormals must survive a caller that runs with FTZ and DAZ set. */
TEST_F(isa, golden_encode_under_ftz_daz)
{
	unsigned int csr = _mm_getcsr(), ftz_daz = csr | 0x8040;
	size_t i;

	for (i = 0; i < ARRAY_LEN(gn_golden); i++) {
		_mm_setcsr(ftz_daz);
		golden_encode_one(_metadata, self->isa, &gn_golden[i]);
		ASSERT_EQ(ftz_daz, _mm_getcsr());
		_mm_setcsr(csr);
	}
}

TEST_F(isa, golden_decode)
{
	size_t i;

	for (i = 0; i < ARRAY_LEN(gn_golden); i++) {
		const struct gn_golden *v = &gn_golden[i];
		float *acc = calloc(v->n + 1, sizeof(float));
		uint32_t *ab = calloc(v->n + 1, sizeof(uint32_t));

		if (v->ret)
			goto next;
		floats_of(v->acc_in, acc, v->n);
		EXPECT_EQ(0, gn_tlc_decode_isa(self->isa, v->stream,
					       v->stream_len, acc, v->n))
			TH_LOG("%s", v->name);
		bits_of(acc, ab, v->n);
		EXPECT_EQ(0, memcmp(ab, v->acc_out, v->n * 4)) TH_LOG("%s", v->name);
next:
		free(acc);
		free(ab);
	}
}

TEST_F(isa, golden_malformed_rejected_untouched)
{
	size_t i, k;

	for (i = 0; i < ARRAY_LEN(gn_golden_bad); i++) {
		const struct gn_golden_bad *b = &gn_golden_bad[i];
		float acc[64];
		uint32_t before[64], after[64];
		/* Exact-size copy so a read past the end is caught by ASan. */
		uint8_t *s = malloc(b->stream_len ? b->stream_len : 1);

		memcpy(s, b->stream, b->stream_len);
		for (k = 0; k < ARRAY_LEN(acc); k++)
			acc[k] = (float)k - 7.5f;
		bits_of(acc, before, ARRAY_LEN(acc));
		EXPECT_EQ(-EBADMSG, gn_tlc_decode_isa(self->isa, s,
						      b->stream_len, acc, b->n))
			TH_LOG("%s", b->name);
		bits_of(acc, after, ARRAY_LEN(acc));
		EXPECT_EQ(0, memcmp(before, after, sizeof(before))) TH_LOG("%s", b->name);
		free(s);
	}
}

/* Fill x with one of several value distributions, some sparse. */
static void fill(struct gn_rng *r, float *x, size_t n, int kind)
{
	size_t i;

	for (i = 0; i < n; i++) {
		switch (kind) {
		case 0:
			x[i] = gn_rng_gauss(r, 1e-2f);
			break;
		case 1:
			x[i] = gn_rng_laplace(r, 1e-3f);
			break;
		case 2: /* mostly zeros with rare spikes: long zero runs */
			x[i] = gn_rng_u64(r) % 97 ? 0.0f : gn_rng_gauss(r, 1.0f);
			break;
		case 3: /* tiny values and denormals */
			x[i] = gn_rng_gauss(r, 1e-39f);
			break;
		case 4: /* constant magnitude, random sign: all nonzero */
			x[i] = gn_rng_u64(r) & 1 ? 0.5f : -0.5f;
			break;
		default: /* heavy tail with signed zeros */
			x[i] = gn_rng_u64(r) % 3 ? -0.0f :
			       gn_rng_laplace(r, 1e-4f) * (float)(1 + gn_rng_u64(r) % 1000);
			break;
		}
	}
}

#define KINDS 6

/*
 * One step for both implementations on copies of the same state: quantize,
 * zero-run encode with several byte budgets, decode; all compared bit for
 * bit. Returns the number of mismatches.
 */
static int compare_step(struct __test_metadata *_metadata, int isa,
			const float *x, float *e_ref, float *e_isa, size_t n,
			float s, const char *what)
{
	static const size_t caps[] = { 1, 2, 3, 7, 64, 65, 100, 1400, 8972,
				       SIZE_MAX };
	size_t g = gn_tlc_groups(n), cap = gn_tlc_encode_bound(n), c;
	uint8_t *q_ref = malloc(g + 1), *q_isa = malloc(g + 1);
	uint8_t *z_ref = malloc(cap), *z_isa = malloc(cap);
	float *a_ref = calloc(n + 1, 4), *a_isa = calloc(n + 1, 4);
	float m_ref = -1, m_isa = -2;
	int bad = 0, r1, r2;
	long l1, l2;

	r1 = gn_tlc_quantize_isa(GN_ISA_SCALAR, x, e_ref, n, s, q_ref, &m_ref);
	r2 = gn_tlc_quantize_isa(isa, x, e_isa, n, s, q_isa, &m_isa);
	EXPECT_EQ(r1, r2) TH_LOG("%s n=%zu", what, n);
	if (r1 || r2)
		goto out;
	EXPECT_EQ(gn_bits(m_ref), gn_bits(m_isa)) TH_LOG("%s n=%zu M", what, n);
	EXPECT_EQ(0, memcmp(q_ref, q_isa, g)) TH_LOG("%s n=%zu quartic", what, n);
	EXPECT_EQ(0, memcmp(e_ref, e_isa, n * 4)) TH_LOG("%s n=%zu e", what, n);
	bad += gn_bits(m_ref) != gn_bits(m_isa) || memcmp(q_ref, q_isa, g) ||
	       memcmp(e_ref, e_isa, n * 4);

	for (c = 0; c < ARRAY_LEN(caps); c++) {
		size_t at = 0, budget = caps[c] < g ? caps[c] : g;

		/* Cut the chunk into slices as a sender would. */
		while (at < g) {
			size_t u1 = 0, u2 = 0;

			l1 = gn_zre_encode_isa(GN_ISA_SCALAR, q_ref + at, g - at,
					       z_ref, budget, &u1);
			l2 = gn_zre_encode_isa(isa, q_ref + at, g - at, z_isa,
					       budget, &u2);
			EXPECT_EQ(l1, l2) TH_LOG("%s n=%zu cap=%zu", what, n, budget);
			EXPECT_EQ(u1, u2) TH_LOG("%s n=%zu cap=%zu", what, n, budget);
			if (l1 != l2 || u1 != u2 || memcmp(z_ref, z_isa, l1)) {
				EXPECT_EQ(0, memcmp(z_ref, z_isa, l1));
				bad++;
				break;
			}
			ASSERT_LT(0, u1);
			ASSERT_EQ(0, gn_tlc_decode_slice_isa(isa, z_isa, l2, m_isa,
							     a_isa, n, at, u2));
			ASSERT_EQ(0, gn_tlc_decode_slice_isa(GN_ISA_SCALAR, z_ref,
							     l1, m_ref, a_ref, n,
							     at, u1));
			at += u1;
		}
		EXPECT_EQ(0, memcmp(a_ref, a_isa, n * 4)) TH_LOG("%s n=%zu acc", what, n);
		bad += !!memcmp(a_ref, a_isa, n * 4);
	}
out:
	free(q_ref);
	free(q_isa);
	free(z_ref);
	free(z_isa);
	free(a_ref);
	free(a_isa);
	return bad;
}

TEST_F(isa, matches_scalar_random)
{
	struct gn_rng r = { 42 };
	static const float ss[] = { 1.0f, 1.25f, 1.5f, 1.75f, 1.9f, 1.9999999f };
	size_t sizes[400], ns = 0, t, i;
	int kind, step, bad = 0;

	for (i = 0; i <= 300; i++)
		sizes[ns++] = i;
	sizes[ns++] = 4093;
	sizes[ns++] = 65536;
	sizes[ns++] = 65536 + 3;
	sizes[ns++] = 100003;
	for (t = 0; t < ns; t++) {
		size_t n = sizes[t];
		float *x = malloc((n + 1) * 4);
		float *e1 = calloc(n + 1, 4), *e2 = calloc(n + 1, 4);

		kind = (int)(t % KINDS);
		for (step = 0; step < 3; step++) {
			fill(&r, x, n, (kind + step) % KINDS);
			bad += compare_step(_metadata, self->isa, x, e1, e2, n,
					    ss[(t + step) % ARRAY_LEN(ss)],
					    "random");
		}
		free(x);
		free(e1);
		free(e2);
		if (bad)
			break;
	}
	ASSERT_EQ(0, bad);
}

/*
 * Top-k's scan (lib/codec/topk/scan.h): the kernel of this instruction set
 * and the scalar one write the same values and list the same positions,
 * for every length up to a few vectors and tails, with and without the
 * error and the list of values, floors from none to all, a destination in
 * each alignment with and without non-temporal stores, and a value that
 * is not finite (the same largest key).
 */
TEST_F(isa, topk_scan_matches_scalar)
{
	gn_topk_scan_fn *scan = gn_topk_scan_of(self->isa);
	struct gn_rng r = { 7 };
	float *x = malloc(1200 * 4), *e = malloc(1200 * 4);
	float *d1 = calloc(1204, 4), *d2 = calloc(1204, 4);
	float *v1 = malloc(1216 * 4), *v2 = malloc(1216 * 4);
	uint32_t *p1 = malloc(1216 * 4), *p2 = malloc(1216 * 4), u;
	int bad = 0, t;

	for (t = 0; t < 3000 && !bad; t++) {
		uint32_t n = t < 300 ? (uint32_t)t : (uint32_t)(gn_rng_u64(&r) % 1200);
		uint32_t floor, n1, n2, top1 = 0, top2 = 0, base = (uint32_t)t * 7;
		size_t al = gn_rng_u64(&r) % 4;
		bool with_e = t & 1, nt = t & 2, vals = t & 4;

		fill(&r, x, n, t % KINDS);
		fill(&r, e, n, (t + 1) % KINDS);
		if (n && t % 17 == 0)
			x[gn_rng_u64(&r) % n] = t % 34 ? NAN : -INFINITY;
		switch (t % 4) {
		case 0:
			floor = 0;
			break;
		case 1:
			floor = 0x7f800000u;
			break;
		default:
			memcpy(&u, &x[n ? gn_rng_u64(&r) % n : 0], 4);
			floor = u & 0x7fffffffu;
		}
		n1 = gn_topk_scan_scalar(x, with_e ? e : NULL, d1 + al, n,
					 floor, base, p1, v1, &top1, false);
		n2 = scan(x, with_e ? e : NULL, d2 + al, n, floor, base, p2,
			  vals ? v2 : NULL, &top2, nt);
		EXPECT_EQ(n1, n2) TH_LOG("n=%u floor=%#x", n, floor);
		EXPECT_EQ(top1, top2) TH_LOG("n=%u", n);
		bad += n1 != n2 || top1 != top2 ||
		       memcmp(d1 + al, d2 + al, n * 4) ||
		       memcmp(p1, p2, (n1 < n2 ? n1 : n2) * 4) ||
		       (vals && memcmp(v1, v2, (n1 < n2 ? n1 : n2) * 4));
		EXPECT_EQ(0, bad) TH_LOG("n=%u floor=%#x e=%d nt=%d", n, floor,
					 with_e, nt);
	}
	free(x);
	free(e);
	free(d1);
	free(d2);
	free(p1);
	free(p2);
	free(v1);
	free(v2);
}

/*
 * Top-k's selection when the floor from its sample proves too high: a
 * chunk whose only large values sit in the first lines the sample reads
 * (the Weyl sequence of select_fp.c's sample_floor()), fewer of them than
 * k, so that fewer than k keys reach the floor. Encoded with the error
 * written apart (one pass, then the second pass over e_out) and in place,
 * the streams and errors are the same, and the entries are the k largest.
 */
TEST_F(isa, topk_floor_too_high)
{
	const struct gn_codec_ops *c = gn_codec_by_name("topk", 4);
	const uint32_t n = 65536, lines[] = { 0, 16, 32 };
	struct gn_codec_params p;
	struct gn_codec_call call = { .p = &p, .world = 1, .ef_len = n };
	float *x = malloc(n * 4), *e1 = calloc(n, 4), *e2 = calloc(n, 4);
	float *out = calloc(n, 4), least = INFINITY, most = 0;
	uint8_t *s1, *s2, *scratch;
	uint32_t i, j, big = 0, sel = 0;
	long l1, l2;
	size_t cap;

	ASSERT_NE(NULL, c);
	gn_codec_defaults(c, &p);
	cap = gn_codec_stream_bound(c, &p, n);
	s1 = malloc(cap);
	s2 = malloc(cap);
	scratch = malloc(c->scratch(&p, n));
	for (i = 0; i < n; i++)
		x[i] = (i % 2 ? -1.0f : 1.0f) * (1e-3f + (float)i * 1e-9f);
	for (j = 0; j < ARRAY_LEN(lines); j++) {
		uint32_t at = (uint32_t)(((uint64_t)(lines[j] * 0x9e3779b9u) * n) >>
					 32);

		for (i = at; i < at + (j < 2 ? 16 : 8); i++)
			x[i] = 1.0f + (float)big++;
	}
	l1 = gn_codec_stream_encode(c, &call, x, e1, e2, n, scratch, s1, cap);
	memset(e1, 0, n * 4);
	l2 = gn_codec_stream_encode(c, &call, x, e1, e1, n, scratch, s2, cap);
	ASSERT_LT(0, l1);
	ASSERT_EQ(l1, l2);
	EXPECT_EQ(0, memcmp(s1, s2, (size_t)l1));
	EXPECT_EQ(0, memcmp(e1, e2, n * 4));
	ASSERT_EQ(0, gn_codec_stream_decode(c, &call, s1, (size_t)l1, out, n));
	for (i = 0; i < n; i++) {
		if (out[i] != 0.0f) {
			sel++;
			EXPECT_EQ(x[i], out[i]);
			EXPECT_EQ(0.0f, e2[i]);
			least = fabsf(x[i]) < least ? fabsf(x[i]) : least;
		} else {
			EXPECT_EQ(x[i], e2[i]);
			most = fabsf(x[i]) > most ? fabsf(x[i]) : most;
		}
	}
	/* ceil(n / 100): the default density's k, well over the 40 large. */
	EXPECT_EQ(656, sel);
	EXPECT_LT(most, least);
	free(x);
	free(e1);
	free(e2);
	free(out);
	free(s1);
	free(s2);
	free(scratch);
}

/*
 * QSGD's kernels (lib/codec/qsgd/quant.h): this instruction set's sums of
 * squares and codes are the scalar ones' bits, for lengths up to a few
 * vectors and tails, 2, 4 and 8 bits, norms from the values' own to far
 * below them (levels past s, and an s |v| that overflows), counters from
 * any start.
 */
TEST_F(isa, qsgd_kernels_match_scalar)
{
	const struct gn_qsgd_kernels *k = gn_qsgd_kernels_of(self->isa);
	const struct gn_qsgd_kernels *ref = gn_qsgd_kernels_of(GN_ISA_SCALAR);
	static const uint32_t bits[] = { 2, 4, 8 };
	struct gn_rng r = { 11 };
	float *x = malloc(1100 * 4);
	uint8_t *c1 = malloc(1100), *c2 = malloc(1100);
	int bad = 0, t;

	for (t = 0; t < 3000 && !bad; t++) {
		uint32_t n = t < 300 ? (uint32_t)t : (uint32_t)(gn_rng_u64(&r) % 1100);
		uint32_t b = bits[t % 3], s = (1u << (b - 1)) - 1, j0;
		double l1[8], l2[8];
		float norm;
		uint64_t key = gn_rng_u64(&r);
		int i;

		fill(&r, x, n, t % KINDS);
		if (n && t % 13 == 0)
			x[gn_rng_u64(&r) % n] = t % 26 ? FLT_MAX : -FLT_MAX;
		for (i = 0; i < 8; i++)
			l1[i] = l2[i] = t % 5 ? 0.0 : (double)i * 0.25;
		ref->sumsq(x, n, l1);
		k->sumsq(x, n, l2);
		bad += memcmp(l1, l2, sizeof(l1)) != 0;
		EXPECT_EQ(0, memcmp(l1, l2, sizeof(l1))) TH_LOG("sumsq n=%u", n);
		norm = (float)__builtin_sqrt(l1[0] + l1[1] + l1[2] + l1[3] +
					     l1[4] + l1[5] + l1[6] + l1[7]);
		if (t % 4 == 1)
			norm *= 1e-3f;
		if (!(norm > 0.0f) || norm > FLT_MAX)
			norm = 1.0f;
		j0 = (uint32_t)(gn_rng_u64(&r) % 100000);
		memset(c1, 0xaa, 1100);
		memset(c2, 0xaa, 1100);
		ref->levels(x, n, norm, s, 1u << (b - 1), key, j0, c1);
		k->levels(x, n, norm, s, 1u << (b - 1), key, j0, c2);
		bad += memcmp(c1, c2, 1100) != 0;
		EXPECT_EQ(0, memcmp(c1, c2, 1100)) TH_LOG("levels n=%u bits=%u",
							 n, b);
	}
	free(x);
	free(c1);
	free(c2);
}

/* Every group value in every lane position, decoded by each kernel. */
TEST_F(isa, all_group_values)
{
	size_t n = 5 * 243 * 3, g = gn_tlc_groups(n), j, len;
	uint8_t *q = malloc(g), *z = malloc(g + 16);
	float *a1 = calloc(n, 4), *a2 = calloc(n, 4);
	size_t used;

	for (j = 0; j < g; j++)
		q[j] = (uint8_t)((j * 7 + j / 243) % 243);
	len = (size_t)gn_zre_encode_isa(GN_ISA_SCALAR, q, g, z, g, &used);
	ASSERT_EQ(g, used);
	ASSERT_EQ(0, gn_tlc_decode_slice_isa(GN_ISA_SCALAR, z, len, 0.375f, a1,
					     n, 0, g));
	ASSERT_EQ(0, gn_tlc_decode_slice_isa(self->isa, z, len, 0.375f, a2, n,
					     0, g));
	ASSERT_EQ(0, memcmp(a1, a2, n * 4));
	for (j = 0; j < n; j++)
		ASSERT_EQ(trit_of(q, n, j) * 0.375f, a1[j]);
	free(q);
	free(z);
	free(a1);
	free(a2);
}

/* decode(encode(x)) is q*M exactly, and x + e_old = q*M + e_new. */
TEST_F(isa, roundtrip_properties)
{
	struct gn_rng r = { 7 };
	size_t n = 50021, g = gn_tlc_groups(n), i;
	float *x = malloc(n * 4), *e = calloc(n, 4), *e_old = malloc(n * 4);
	float *acc = malloc(n * 4), m;
	uint8_t *q = malloc(g), *stream = malloc(gn_tlc_encode_bound(n));
	int kind;

	for (kind = 0; kind < KINDS; kind++) {
		long len;

		fill(&r, x, n, kind);
		memcpy(e_old, e, n * 4);
		len = gn_tlc_encode_isa(self->isa, x, e, n, 1.5f, stream,
					gn_tlc_encode_bound(n));
		ASSERT_LT(0, len);
		memcpy(e, e_old, n * 4);
		ASSERT_EQ(0, gn_tlc_quantize_isa(self->isa, x, e, n, 1.5f, q, &m));
		ASSERT_EQ(gn_bits(m), (uint32_t)stream[0] | (uint32_t)stream[1] << 8 |
				      (uint32_t)stream[2] << 16 | (uint32_t)stream[3] << 24);
		memset(acc, 0, n * 4);
		ASSERT_EQ(0, gn_tlc_decode_isa(self->isa, stream, (size_t)len,
					       acc, n));
		for (i = 0; i < n; i++) {
			float deq = (float)trit_of(q, n, i) * m;
			double t = (double)x[i] + (double)e_old[i];
			double tol = (fabs(t) + fabs((double)e[i])) * FLT_EPSILON +
				     FLT_TRUE_MIN;

			ASSERT_EQ(gn_bits(deq), gn_bits(acc[i]))
				TH_LOG("kind %d i=%zu", kind, i);
			ASSERT_TRUE(fabs(t - ((double)deq + (double)e[i])) <= tol)
				TH_LOG("kind %d i=%zu", kind, i);
		}
	}
	free(x);
	free(e);
	free(e_old);
	free(acc);
	free(q);
	free(stream);
}

/* A NaN or infinity anywhere: -EDOM and nothing written. */
TEST_F(isa, nonfinite_leaves_state)
{
	static const size_t at[] = { 0, 1, 15, 16, 63, 64, 999, 1000 };
	size_t n = 1001, cap = gn_tlc_encode_bound(n), i, k;
	float *x = malloc(n * 4), *e = malloc(n * 4);
	uint8_t *out = malloc(cap), *copy = malloc(cap);
	uint32_t *eb = malloc(n * 4);
	struct gn_rng r = { 3 };

	for (k = 0; k < ARRAY_LEN(at); k++) {
		for (i = 0; i < n; i++) {
			x[i] = gn_rng_gauss(&r, 1);
			e[i] = gn_rng_gauss(&r, 0.1f);
		}
		x[at[k]] = k % 3 == 0 ? NAN : (k % 3 == 1 ? INFINITY : -INFINITY);
		bits_of(e, eb, n);
		memset(out, 0xa5, cap);
		memcpy(copy, out, cap);
		ASSERT_EQ(-EDOM, gn_tlc_encode_isa(self->isa, x, e, n, 1.0f, out, cap));
		ASSERT_EQ(0, memcmp(eb, e, n * 4));
		ASSERT_EQ(0, memcmp(copy, out, cap));
	}
	free(x);
	free(e);
	free(out);
	free(copy);
	free(eb);
}

struct real_tensor {
	char file[96];
	size_t elems;
};

/* Rows of a manifest: model step tensor elems file. */
static size_t read_manifest(const char *rel, struct real_tensor *t, size_t max)
{
	char path[4096], line[512], a[64], b[64], c[64], f[96];
	size_t k = 0, elems;
	FILE *fp;

	snprintf(path, sizeof(path), "%s/%s", gn_data_dir(), rel);
	fp = fopen(path, "r");
	if (!fp)
		return 0;
	while (k < max && fgets(line, sizeof(line), fp))
		if (sscanf(line, "%63s %63s %63s %zu %95s", a, b, c, &elems, f) == 5) {
			snprintf(t[k].file, sizeof(t[k].file), "%s", f);
			t[k++].elems = elems;
		}
	fclose(fp);
	return k;
}

/* Real gradients, step after step with error feedback, whole and chunked. */
TEST_F(isa, matches_scalar_real)
{
	struct real_tensor t[400];
	size_t nt = read_manifest("mlp-small-seq/manifest.tsv", t, 400), k;
	float *e1[8] = { 0 }, *e2[8] = { 0 };
	int bad = 0;

	ASSERT_LT(0, nt) TH_LOG("no gradient data under %s", gn_data_dir());
	for (k = 0; k < nt && !bad; k++) {
		char rel[256];
		size_t n, slot = k % 6, off;
		float *x;

		snprintf(rel, sizeof(rel), "mlp-small-seq/%.200s", t[k].file);
		x = gn_load_f32(rel, &n);
		ASSERT_NE(NULL, x);
		ASSERT_EQ(t[k].elems, n);
		if (!e1[slot]) {
			e1[slot] = calloc(n, 4);
			e2[slot] = calloc(n, 4);
		}
		/* Whole tensor as one chunk, then as 16 Ki-element chunks. */
		bad += compare_step(_metadata, self->isa, x, e1[slot], e2[slot],
				    n, 1.0f + (float)(k % 4) * 0.25f, rel);
		for (off = 0; off < n; off += 16384) {
			size_t len = n - off < 16384 ? n - off : 16384;

			bad += compare_step(_metadata, self->isa, x + off,
					    e1[slot] + off, e2[slot] + off, len,
					    1.5f, rel);
		}
		free(x);
	}
	for (k = 0; k < 8; k++) {
		free(e1[k]);
		free(e2[k]);
	}
	ASSERT_EQ(0, bad);
}

/* Each slice is the longest prefix that fits its budget, and decodes alone. */
TEST_F(isa, slices_are_greedy)
{
	struct gn_rng r = { 11 };
	size_t n = 200003, g = gn_tlc_groups(n), at = 0, budget = 1400;
	float *x = malloc(n * 4), *e = calloc(n, 4), m;
	uint8_t *q = malloc(g), *z = malloc(budget + 64), *z2 = malloc(g + 64);

	fill(&r, x, n, 1);
	ASSERT_EQ(0, gn_tlc_quantize_isa(self->isa, x, e, n, 1.0f, q, &m));
	while (at < g) {
		size_t used;
		long len = gn_zre_encode_isa(self->isa, q + at, g - at, z,
					     budget, &used);

		ASSERT_LT(0, len);
		ASSERT_GE((long)budget, len);
		ASSERT_EQ(len, (long)zre_spec(q + at, used, z2));
		ASSERT_EQ(0, memcmp(z, z2, (size_t)len));
		if (at + used < g) {
			/* One more group would not have fitted. */
			ASSERT_LT(budget, zre_spec(q + at, used + 1, z2));
		}
		ASSERT_EQ(0, gn_zre_check(z, (size_t)len, n, at, used));
		at += used;
	}
	free(x);
	free(e);
	free(q);
	free(z);
	free(z2);
}

/* Encoding in place behind the scale equals encoding elsewhere. */
TEST_F(isa, zre_matches_spec_on_runs)
{
	size_t r, lead, g;
	uint8_t q[300], z1[300], z2[300];

	for (lead = 0; lead < 3; lead++)
		for (r = 0; r < 200; r++) {
			size_t used, len, k;

			g = 0;
			for (k = 0; k < lead; k++)
				q[g++] = (uint8_t)(k * 50);
			for (k = 0; k < r; k++)
				q[g++] = GN_TLC_ZERO;
			if (lead == 1)
				q[g++] = 7;
			for (k = 0; k < (r * 3) % 70; k++)
				q[g++] = k % 5 ? GN_TLC_ZERO : 200;
			len = (size_t)gn_zre_encode_isa(self->isa, q, g, z1,
							sizeof(z1), &used);
			ASSERT_EQ(g, used);
			ASSERT_EQ(zre_spec(q, g, z2), len);
			ASSERT_EQ(0, memcmp(z1, z2, len));
		}
}

/*
 * Sparse group sequences of every density, encoded in place (as
 * gn_tlc_encode() does) and elsewhere, whole and to tight budgets: the SIMD
 * encoders write ahead of their output, never ahead of their input.
 */
TEST_F(isa, zre_in_place_sparse)
{
	static const double zero_share[] = { 0.0, 0.3, 0.6, 0.8, 0.9, 0.95,
					     0.99, 1.0 };
	static const size_t caps[] = { 37, 40, 41, 100, 1000, SIZE_MAX };
	struct gn_rng r = { 7 };
	size_t g = 5000, d, t, c, k;
	uint8_t *q = malloc(g), *z1 = malloc(g + 64), *z2 = malloc(g + 64);

	for (d = 0; d < ARRAY_LEN(zero_share); d++)
		for (t = 0; t < 8; t++) {
			size_t count = g - t * 97, used, len;

			for (k = 0; k < count; k++)
				q[k] = gn_rng_unit(&r) < zero_share[d] ?
					       GN_TLC_ZERO :
					       (uint8_t)(gn_rng_u64(&r) % 242);
			len = zre_spec(q, count, z2);
			memcpy(z1, q, count);
			ASSERT_EQ((long)len, gn_zre_encode_isa(self->isa, z1, count,
							       z1, count, &used));
			ASSERT_EQ(count, used);
			ASSERT_EQ(0, memcmp(z1, z2, len));
			for (c = 0; c < ARRAY_LEN(caps); c++) {
				size_t cap = caps[c] < count ? caps[c] : count;
				long l;

				memcpy(z1, q, count);
				l = gn_zre_encode_isa(self->isa, z1, count, z1,
						      cap, &used);
				ASSERT_GE((long)cap, l);
				ASSERT_EQ((size_t)l, zre_spec(q, used, z2));
				ASSERT_EQ(0, memcmp(z1, z2, (size_t)l));
				if (used < count)
					ASSERT_LT(cap, zre_spec(q, used + 1, z2));
			}
		}
	free(q);
	free(z1);
	free(z2);
}

/* Chunked quantization equals quantizing each chunk on its own. */
TEST_F(isa, chunks_match_single_chunks)
{
	static const size_t chunks[] = { 1, 5, 17, 100, 4096, 16384, 65536 };
	static const size_t sizes[] = { 1, 7, 99, 100, 101, 70001, 200000 };
	struct gn_rng r = { 99 };
	size_t a, b, c;

	for (a = 0; a < ARRAY_LEN(sizes); a++)
		for (b = 0; b < ARRAY_LEN(chunks); b++) {
			size_t n = sizes[a], ch = chunks[b];
			size_t nc = gn_tlc_chunk_count(n, ch);
			size_t ng = gn_tlc_chunks_groups(n, ch);
			float *x = malloc(n * 4), *e = malloc(n * 4);
			float *e_ref = malloc(n * 4), *e_out = malloc(n * 4);
			float *m = malloc(nc * 4), *m_ref = malloc(nc * 4);
			uint8_t *q = malloc(ng), *q_ref = malloc(ng);
			uint32_t *e_keep = malloc(n * 4);

			if (n > 20000 && ch < 100)
				goto next;
			fill(&r, x, n, (int)(a + b) % KINDS);
			fill(&r, e, n, 1);
			memcpy(e_ref, e, n * 4);
			bits_of(e, e_keep, n);
			for (c = 0; c < nc; c++) {
				size_t len = n - c * ch < ch ? n - c * ch : ch;

				ASSERT_EQ(0, gn_tlc_quantize_isa(
						     GN_ISA_SCALAR, x + c * ch,
						     e_ref + c * ch, len, 1.5f,
						     q_ref + c * gn_tlc_groups(ch),
						     &m_ref[c]));
			}
			/* Out of place: e untouched. */
			ASSERT_EQ(0, gn_tlc_quantize_chunks_isa(self->isa, x, e,
								e_out, n, ch,
								1.5f, q, m));
			ASSERT_EQ(0, memcmp(e_keep, e, n * 4));
			ASSERT_EQ(0, memcmp(e_ref, e_out, n * 4));
			ASSERT_EQ(0, memcmp(q_ref, q, ng));
			ASSERT_EQ(0, memcmp(m_ref, m, nc * 4));
			/* In place. */
			ASSERT_EQ(0, gn_tlc_quantize_chunks_isa(self->isa, x, e, e,
								n, ch, 1.5f, q,
								m));
			ASSERT_EQ(0, memcmp(e_ref, e, n * 4));
			ASSERT_EQ(0, memcmp(q_ref, q, ng));
next:
			free(x);
			free(e);
			free(e_ref);
			free(e_out);
			free(m);
			free(m_ref);
			free(q);
			free(q_ref);
			free(e_keep);
		}
}

/*
 * A tensor long enough (4 Mi values and more) that the kernels write a
 * double-buffered e_out with non-temporal stores, 16-byte aligned, with
 * chunks whose groups keep that alignment or break it, and e_out off by
 * one value: the same floats and bytes as the scalar reference.
 */
TEST_F(isa, long_chunks_out_of_place)
{
	static const size_t chunks[] = { 65536, 65541, 1 << 20 };
	size_t n = ((size_t)1 << 22) + 1001, a, shift;
	struct gn_rng r = { 5 };
	float *x = malloc(n * 4), *e = malloc(n * 4), *e_ref = malloc(n * 4);
	uint32_t *e_keep = malloc(n * 4);
	char *raw = malloc((n + 16) * 4 + 64);
	float *e_out = (float *)(((uintptr_t)raw + 63) & ~(uintptr_t)63);

	fill(&r, x, n, 1);
	fill(&r, e, n, 1);
	bits_of(e, e_keep, n);
	for (a = 0; a < ARRAY_LEN(chunks); a++)
		for (shift = 0; shift < 2; shift++) {
			size_t ch = chunks[a], nc = gn_tlc_chunk_count(n, ch);
			size_t ng = gn_tlc_chunks_groups(n, ch);
			float *m = malloc(nc * 4), *m_ref = malloc(nc * 4);
			uint8_t *q = malloc(ng), *q_ref = malloc(ng);

			memcpy(e_ref, e, n * 4);
			ASSERT_EQ(0, gn_tlc_quantize_chunks_isa(GN_ISA_SCALAR, x,
								e_ref, e_ref, n,
								ch, 1.5f, q_ref,
								m_ref));
			ASSERT_EQ(0, gn_tlc_quantize_chunks_isa(self->isa, x, e,
								e_out + shift,
								n, ch, 1.5f, q,
								m));
			ASSERT_EQ(0, memcmp(e_keep, e, n * 4));
			ASSERT_EQ(0, memcmp(e_ref, e_out + shift, n * 4));
			ASSERT_EQ(0, memcmp(q_ref, q, ng));
			ASSERT_EQ(0, memcmp(m_ref, m, nc * 4));
			free(m);
			free(m_ref);
			free(q);
			free(q_ref);
		}
	free(x);
	free(e);
	free(e_ref);
	free(raw);
	free(e_keep);
}

/*
 * gn_tlc_quantize_chunks_ex() as libgradnet calls it, a few chunks of a
 * large tensor per call: GN_TLC_NT streams e_out whatever the call's
 * length, with the same floats and bytes as the scalar reference; flags 0
 * does not; e_in is never written, not even by a call that stops at a
 * value that is not finite. Bad flags are refused before anything is
 * written.
 */
TEST_F(isa, chunks_ex_flags)
{
	static const size_t chunks[] = { 4096, 65536, 65541 };
	size_t n = 4 * 65536 + 3, a, shift, c;
	unsigned int flags;
	struct gn_rng r = { 17 };
	float *x = malloc(n * 4), *e = malloc(n * 4), *e_ref = malloc(n * 4);
	uint32_t *e_keep = malloc(n * 4);
	char *raw = malloc((n + 16) * 4 + 64);
	float *e_out = (float *)(((uintptr_t)raw + 63) & ~(uintptr_t)63);
	float *m = malloc(n / 4096 * 4 + 4), *m_ref = malloc(n / 4096 * 4 + 4);
	uint8_t *q = malloc(n), *q_ref = malloc(n);

	fill(&r, x, n, 1);
	fill(&r, e, n, 1);
	bits_of(e, e_keep, n);
	for (a = 0; a < ARRAY_LEN(chunks); a++)
		for (shift = 0; shift < 2; shift++)
			for (flags = 0; flags <= GN_TLC_NT; flags++) {
				size_t ch = chunks[a];
				size_t ng = gn_tlc_chunks_groups(n, ch);
				size_t nc = gn_tlc_chunk_count(n, ch);

				memcpy(e_ref, e, n * 4);
				ASSERT_EQ(0, gn_tlc_quantize_chunks_isa(
						     GN_ISA_SCALAR, x, e_ref, e_ref,
						     n, ch, 1.25f, q_ref, m_ref));
				memset(e_out, 0xff, n * 4);
				ASSERT_EQ(0, gn_tlc_quantize_chunks_ex(
						     self->isa, x, e, e_out + shift,
						     n, ch, 1.25f, flags, q, m));
				ASSERT_EQ(0, memcmp(e_keep, e, n * 4));
				ASSERT_EQ(0, memcmp(e_ref, e_out + shift, n * 4))
				TH_LOG("chunk %zu shift %zu flags %u", ch, shift,
				       flags);
				ASSERT_EQ(0, memcmp(q_ref, q, ng));
				ASSERT_EQ(0, memcmp(m_ref, m, nc * 4));
			}
	/* A NaN in the third chunk: e_in as it was, -EDOM. */
	x[2 * 65536 + 7] = NAN;
	ASSERT_EQ(-EDOM, gn_tlc_quantize_chunks_ex(self->isa, x, e, e_out, n,
						   65536, 1.0f, GN_TLC_NT, q, m));
	ASSERT_EQ(0, memcmp(e_keep, e, n * 4));
	/* Refused, nothing written: NT in place, unknown flags. */
	memcpy(e_ref, e, n * 4);
	ASSERT_EQ(-EINVAL, gn_tlc_quantize_chunks_ex(self->isa, x, e, e, n,
						     65536, 1.0f, GN_TLC_NT, q,
						     m));
	ASSERT_EQ(-EINVAL, gn_tlc_quantize_chunks_ex(self->isa, x, e, e_out, n,
						     65536, 1.0f, 2u, q, m));
	ASSERT_EQ(-EINVAL, gn_tlc_quantize_chunks_ex(self->isa, x, e, e, n,
						     65536, 1.0f, ~GN_TLC_NT, q,
						     m));
	ASSERT_EQ(0, memcmp(e_ref, e, n * 4));
	for (c = 0; c < n; c++)
		ASSERT_EQ(e_keep[c], gn_bits(e[c]));
	free(x);
	free(e);
	free(e_ref);
	free(e_keep);
	free(raw);
	free(m);
	free(m_ref);
	free(q);
	free(q_ref);
}

/* A bad value in chunk c: earlier chunks done, c and later untouched. */
TEST_F(isa, chunks_stop_at_nonfinite)
{
	size_t n = 10000, ch = 1000, bad = 4321, c;
	float *x = calloc(n, 4), *e = calloc(n, 4), m[10];
	uint8_t q[2000];
	struct gn_rng r = { 5 };

	fill(&r, x, n, 0);
	x[bad] = NAN;
	for (c = 0; c < n; c++)
		e[c] = 0.125f;
	ASSERT_EQ(-EDOM, gn_tlc_quantize_chunks_isa(self->isa, x, e, e, n, ch,
						    1.0f, q, m));
	for (c = 0; c < n; c++) {
		if (c < bad / ch * ch) {
			ASSERT_NE(gn_bits(0.125f), gn_bits(e[c])) TH_LOG("%zu", c);
		} else {
			ASSERT_EQ(gn_bits(0.125f), gn_bits(e[c])) TH_LOG("%zu", c);
		}
	}
	ASSERT_EQ(-EINVAL, gn_tlc_quantize_chunks_isa(self->isa, x, e, e, n, 0,
						      1.0f, q, m));
	free(x);
	free(e);
}

TEST(argument_errors)
{
	float x[8] = { 1, 2, 3, 4, 5, 6, 7, 8 }, e[8] = { 0 }, acc[8] = { 0 }, m;
	uint8_t out[64], q[2] = { 121, 243 };
	size_t used;

	ASSERT_EQ(-EINVAL, gn_tlc_encode(x, e, 8, 2.0f, out, sizeof(out)));
	ASSERT_EQ(-EINVAL, gn_tlc_encode(x, e, 8, 0.5f, out, sizeof(out)));
	ASSERT_EQ(-EINVAL, gn_tlc_encode(x, e, 8, NAN, out, sizeof(out)));
	ASSERT_EQ(-ENOSPC, gn_tlc_encode(x, e, 8, 1.0f, out, gn_tlc_encode_bound(8) - 1));
	ASSERT_EQ(-EINVAL, gn_tlc_quantize(x, e, 8, -1.0f, out, &m));
	ASSERT_EQ(-EINVAL, gn_zre_encode(q, 2, out, sizeof(out), &used));
	ASSERT_EQ(-EOPNOTSUPP, gn_tlc_encode_isa(17, x, e, 8, 1.0f, out, sizeof(out)));
	ASSERT_EQ(-EOPNOTSUPP, gn_tlc_decode_isa(-3, out, 5, acc, 8));
	/* Slices outside the chunk. */
	out[0] = 121;
	ASSERT_EQ(-EBADMSG, gn_tlc_decode_slice(out, 1, 1.0f, acc, 8, 2, 1));
	ASSERT_EQ(-EBADMSG, gn_tlc_decode_slice(out, 1, 1.0f, acc, 8, 1, 2));
	ASSERT_EQ(-EBADMSG, gn_tlc_decode_slice(out, 1, 1.0f, acc, 8, SIZE_MAX, 2));
	ASSERT_EQ(0, gn_tlc_decode_slice(out, 1, 1.0f, acc, 8, 1, 1));
	ASSERT_EQ(-EBADMSG, gn_zre_check(out, 1, 8, 0, 2));
	ASSERT_STREQ("avx512", gn_codec_isa_name(GN_ISA_AVX512));
	ASSERT_STREQ("?", gn_codec_isa_name(9));
}

/* Found by fuzz_roundtrip: nothing is written on an error. */
TEST(errors_write_nothing)
{
	float big[2] = { 3e38f, -1.0f }, e[2] = { 0, 0 }, m = 42.0f;
	uint8_t q[8];
	int r;

	r = gn_tlc_quantize(big, e, 2, 1.5f, q, &m);
	ASSERT_EQ(-EDOM, r);
	ASSERT_EQ(42.0f, m);
	r = gn_tlc_quantize_chunks(big, e, e, 2, 1, 1.5f, q, &m);
	ASSERT_EQ(-EDOM, r);
	ASSERT_EQ(42.0f, m);
	r = gn_tlc_quantize_chunks(big, e, e, 0, 8, 2.5f, q, &m);
	ASSERT_EQ(-EINVAL, r);
}


TEST_HARNESS_MAIN
