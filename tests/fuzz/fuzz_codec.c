// SPDX-License-Identifier: MIT
/*
 * fuzz_codec.c - every registered codec's receive side under hostile input,
 * through the registry: a slice that passes the codec's check is decoded
 * and added into buffers of exactly the chunk's size (so ASan sees any
 * stray access), must leave every value outside its units as it was and
 * give only finite values; and a whole chunk encoded from the input's
 * floats must decode through the same check.
 *
 * A coded slice (the entropy stage's) goes through the receiving side's
 * decoder first: whatever the frame says, it may write no byte of its
 * buffer past the bound it is given (a canary after it must survive), and
 * what it decodes is checked and decoded as any slice.
 *
 * Input: byte 0 the codec (an index into the registry) and mode, bytes
 * 1..4 which parameter words are given, 5..36 those words, 37..38 the
 * chunk's length n (1..4096), then (mode 0) first, count and aux as u32
 * and the slice's body (with bit 0 of byte 2 set: a zstd frame of it);
 * or (mode 1) the seed and n floats.
 */
#include <stdint.h>

#include <gradnet/wire.h>

#include "codec/codec.h"
#include "codec/entropy/entropy.h"
#include "fuzz_check.h"

#define N_MAX 4096
#define HDR 39

static u32 le32(const uint8_t *p)
{
	return (u32)p[0] | (u32)p[1] << 8 | (u32)p[2] << 16 | (u32)p[3] << 24;
}

static u32 ncodecs(void)
{
	u32 n = 0;

	while (gn_codec_at(n))
		n++;
	return n;
}

/* The input's parameters where the registry takes them, else defaults. */
static void params_of(const struct gn_codec_ops *c, const uint8_t *d, u32 n,
		      struct gn_codec_params *p)
{
	struct gn_codec_spec in = { .codec = c->id, .given = le32(d + 1) & 0xff },
			     out;
	char msg[256];
	u32 i;

	for (i = 0; i < GN_CODEC_PARAM_WORDS; i++)
		in.p.w[i] = in.given & 1u << i ? le32(d + 5 + 4 * i) : 0;
	if (gn_codec_resolve(&in, &in, &out, msg, sizeof(msg)) ||
	    gn_codec_params_check(c, &out.p, n, 8952, msg, sizeof(msg)))
		gn_codec_defaults(c, &out.p);
	*p = out.p;
}

/*
 * Does a slice of units [first, first + count) of a chunk of @n values
 * cover value @i? Units are values, or (3LC) groups of five, one from each
 * partition of g values: value i is in group i mod g.
 */
static bool covered(const struct gn_codec_ops *c, u32 n, u32 first, u32 count,
		    u32 i)
{
	u32 u = c->units(n) == n ? i : i % c->units(n);

	return u >= first && u < first + count;
}

/* A receiving decoder as a rank at MTU 9000 has, in exactly its memory. */
#define RAW_MAX gn_entropy_raw_max(9000 - 28 - GN_WIRE_WHOLE_OVERHEAD)
#define CANARY 0xa5

static u8 *dec_mem;
static size_t dec_len;
static struct gn_entropy_dec dec;

/*
 * The coded @body's slice, into @dec's buffer; NULL when the decoder
 * refuses it. Every byte past what the codec's bound of a chunk of @n
 * values lets it write keeps the canary.
 */
static const uint8_t *open_coded(const struct gn_codec_ops *c,
				 const struct gn_codec_params *p, u32 n,
				 const uint8_t *body, u32 *blen)
{
	u64 bound = c->bound(p, n);
	size_t cap = bound < RAW_MAX ? (size_t)bound : RAW_MAX, i;
	long r;

	if (!dec_mem) {
		dec_len = gn_entropy_dec_size(RAW_MAX);
		dec_mem = aligned_alloc(64, dec_len);
		GN_FZ_CHECK(dec_mem && !gn_entropy_dec_init(&dec, dec_mem, dec_len,
							    RAW_MAX),
			    "no decoder");
	}
	memset(dec.raw, CANARY, (size_t)(dec_mem + dec_len - dec.raw));
	gn_fz_enter();
	r = gn_entropy_open(&dec, c, p, n, body, *blen);
	gn_fz_leave();
	for (i = cap; i < (size_t)(dec_mem + dec_len - dec.raw); i++)
		GN_FZ_CHECK(dec.raw[i] == CANARY,
			    "%s: the decoder wrote byte %zu past its bound %zu",
			    c->name, i, cap);
	if (r < 0)
		return NULL;
	GN_FZ_CHECK((size_t)r <= cap && r > (long)*blen,
		    "%s: %ld bytes decoded from %u, bound %zu", c->name, r, *blen,
		    cap);
	*blen = (u32)r;
	return dec.raw;
}

static void slice_case(const struct gn_codec_ops *c,
		       const struct gn_codec_call *call, u32 n,
		       const uint8_t *d, size_t len)
{
	u32 units = c->units(n), first, count, aux, i;
	float *out, *acc;
	const uint8_t *body;
	u32 blen;

	if (len < HDR + 12)
		return;
	first = le32(d + HDR) % (units + 1);
	count = le32(d + HDR + 4) % (units - first + 1);
	aux = le32(d + HDR + 8);
	/* Mostly words a codec may send: a form, an index codec, a salt. */
	aux = aux & 0x80000000u ? aux :
	      (aux & 0x7fff0000u) | ((aux >> 8) % 8) << 8 | aux % 4;
	body = d + HDR + 12;
	blen = (u32)(len - HDR - 12);
	if (d[2] & 1) {
		body = open_coded(c, call->p, n, body, &blen);
		if (!body)
			return;
	}
	if (!count || c->check_slice(call->p, n, first, count, aux, body, blen))
		return;
	out = malloc(n * sizeof(float));
	acc = malloc(n * sizeof(float));
	GN_FZ_CHECK(out && acc, "out of memory");
	for (i = 0; i < n; i++)
		out[i] = acc[i] = -7.0f;
	gn_fz_enter();
	c->decode(call, out, n, first, count, aux, body, blen);
	c->add(call, acc, n, first, count, aux, body, blen);
	gn_fz_leave();
	for (i = 0; i < n; i++) {
		bool in = covered(c, n, first, count, i);

		GN_FZ_CHECK(in || (out[i] == -7.0f && acc[i] == -7.0f),
			    "%s: value %u outside units [%u, %u) changed", c->name,
			    i, first, first + count);
		GN_FZ_CHECK(__builtin_isfinite(out[i]) && __builtin_isfinite(acc[i]),
			    "%s: value %u is not finite", c->name, i);
	}
	free(out);
	free(acc);
}

static void stream_case(const struct gn_codec_ops *c,
			struct gn_codec_call *call, u32 n, const uint8_t *d,
			size_t len)
{
	size_t need = HDR + 8 + (size_t)n * 4;
	u64 bound = gn_codec_stream_bound(c, call->p, n);
	float *x, *e, *y;
	uint8_t *s, *scratch;
	long sl;
	u32 i;

	if (len < need)
		return;
	call->seed = (u64)le32(d + HDR) << 32 | le32(d + HDR + 4);
	x = malloc(n * sizeof(float));
	e = calloc(n, sizeof(float));
	y = malloc(n * sizeof(float));
	s = malloc(bound);
	scratch = malloc(c->scratch(call->p, n) + 1);
	GN_FZ_CHECK(x && e && y && s && scratch, "out of memory");
	memcpy(x, d + HDR + 8, (size_t)n * 4);
	gn_fz_enter();
	sl = gn_codec_stream_encode(c, call, x,
				    c->flags & GN_CODEC_EF_REDUCE ? e : NULL,
				    c->flags & GN_CODEC_EF_REDUCE ? e : NULL,
				    n, scratch, s, bound);
	gn_fz_leave();
	GN_FZ_CHECK(sl > 0 || sl == -EDOM, "%s: encode gave %ld", c->name, sl);
	if (sl > 0) {
		gn_fz_enter();
		i = (u32)gn_codec_stream_decode(c, call, s, (size_t)sl, y, n);
		gn_fz_leave();
		GN_FZ_CHECK(i == 0, "%s: its own stream of %u values is refused",
			    c->name, n);
		for (i = 0; i < n; i++)
			GN_FZ_CHECK(__builtin_isfinite(y[i]), "%s: value %u", c->name, i);
	}
	free(x);
	free(e);
	free(y);
	free(s);
	free(scratch);
}

int LLVMFuzzerTestOneInput(const uint8_t *d, size_t len)
{
	const struct gn_codec_ops *c;
	struct gn_codec_params p;
	struct gn_codec_call call = { .p = &p, .world = 3 };
	u32 n;

	if (len < HDR)
		return 0;
	c = gn_codec_at((d[0] & 0x7f) % ncodecs());
	n = 1 + ((u32)d[37] | (u32)d[38] << 8) % N_MAX;
	params_of(c, d, n, &p);
	call.average = d[1] & 0x80;
	call.ef_len = n;
	if (d[0] & 0x80)
		stream_case(c, &call, n, d, len);
	else
		slice_case(c, &call, n, d, len);
	return 0;
}
