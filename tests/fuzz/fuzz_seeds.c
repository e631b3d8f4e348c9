// SPDX-License-Identifier: MIT
/*
 * fuzz_seeds.c - writes the fuzz targets' seed corpora, so that no binary
 * blobs live in the repository: the golden vectors (valid and malformed
 * streams) and real gradients from data/gradients, encoded with the
 * specification model, in the input layouts of fuzz_input.h.
 *
 * usage: fuzz_seeds OUTDIR    (writes OUTDIR/decode, OUTDIR/roundtrip,
 *                             OUTDIR/codec, OUTDIR/rx, OUTDIR/frame and
 *                             OUTDIR/stapsdt)
 */
#include <errno.h>
#include <float.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <gradnet/codec.h>
#include <gradnet/wire.h>
#include "codec/codec.h"
#include "fuzz_input.h"
#include "stapsdt_elf.h"
#include "tlc_model.h"
#include "testutil.h"
#include "golden/vectors.h"

#define ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))

static const char *out_dir;
static unsigned int written;

static void die(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	fputs("fuzz_seeds: ", stderr);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
	exit(1);
}

/* Write header + body as OUT_DIR/target/name. */
static void seed(const char *target, const char *name, const uint8_t *hdr,
		 size_t hdr_len, const void *body, size_t body_len)
{
	char path[4096];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s/%s", out_dir, target, name);
	f = fopen(path, "wb");
	if (!f)
		die("cannot create %s: %s", path, strerror(errno));
	if (fwrite(hdr, 1, hdr_len, f) != hdr_len ||
	    (body_len && fwrite(body, 1, body_len, f) != body_len) || fclose(f))
		die("cannot write %s", path);
	written++;
}

static void decode_seed(const char *name, size_t n, unsigned int flags,
			size_t j0, size_t count, float m, const uint8_t *body,
			size_t len)
{
	uint8_t h[GN_FZD_HDR];

	gn_fz_put_le(h + GN_FZD_N, (uint32_t)n, 2);
	h[GN_FZD_FLAGS] = (uint8_t)flags;
	gn_fz_put_le(h + GN_FZD_J0, (uint32_t)j0, 2);
	gn_fz_put_le(h + GN_FZD_COUNT, (uint32_t)count, 2);
	gn_fz_put_le(h + GN_FZD_M, gn_bits(m), 4);
	seed("decode", name, h, sizeof(h), body, len);
}

static void roundtrip_seed(const char *name, unsigned int flags, uint32_t s,
			   size_t chunk, size_t budget, size_t n, int exp,
			   const void *body, size_t len)
{
	uint8_t h[GN_FZR_HDR];

	h[GN_FZR_FLAGS] = (uint8_t)flags;
	gn_fz_put_le(h + GN_FZR_S, s, 4);
	gn_fz_put_le(h + GN_FZR_CHUNK, (uint32_t)chunk, 2);
	gn_fz_put_le(h + GN_FZR_BUDGET, (uint32_t)budget, 2);
	gn_fz_put_le(h + GN_FZR_N, (uint32_t)n, 2);
	h[GN_FZR_EXP] = (uint8_t)exp;
	seed("roundtrip", name, h, sizeof(h), body, len);
}

/* The s field for 1 <= s < 2 without GN_FZR_RAW_S. */
static uint32_t s_field(float s)
{
	return (uint32_t)((s - 1.0f) * 65536.0f);
}

/* A chunk stream of x (e = 0) by the model; its length, or 0 on error. */
static size_t model_stream(const float *x, size_t n, float s, uint8_t *out,
			   uint8_t *quartic, float *m)
{
	size_t g = gn_tlc_groups(n), used;
	float *e = calloc(n + 1, sizeof(float));
	int8_t *q = malloc(n + 1);

	if (!e || !q)
		die("out of memory");
	if (model_quantize(x, e, e, n, s, q, m)) {
		free(e);
		free(q);
		return 0;
	}
	model_quartic(q, n, quartic);
	gn_fz_put_le(out, gn_bits(*m), 4);
	free(e);
	free(q);
	return 4 + model_zre(quartic, g, g, out + 4, &used);
}

static void golden_seeds(void)
{
	char name[64];
	size_t i, k;

	for (i = 0; i < ARRAY_LEN(gn_golden); i++) {
		const struct gn_golden *v = &gn_golden[i];
		size_t g = gn_tlc_groups(v->n), n = v->n;
		float *xe = malloc(2 * n * sizeof(float) + 1);
		float m;

		if (!xe)
			die("out of memory");
		for (k = 0; k < n; k++) {
			xe[2 * k] = gn_float(v->x[k]);
			xe[2 * k + 1] = gn_float(v->e_in[k]);
		}
		snprintf(name, sizeof(name), "golden-%02zu", i);
		roundtrip_seed(name, GN_FZR_FLOATS | GN_FZR_RAW_S, v->s,
			       i % 3 ? n : 7, i % 2 ? 3 : 64, 0, 0, xe,
			       2 * n * sizeof(float));
		free(xe);
		if (v->ret)
			continue;
		m = gn_float(gn_fz_le(v->stream, 4));
		snprintf(name, sizeof(name), "golden-%02zu-stream", i);
		decode_seed(name, n, (unsigned int)i % 4, 0, 0, 0.0f, v->stream,
			    v->stream_len);
		snprintf(name, sizeof(name), "golden-%02zu-slice", i);
		decode_seed(name, n, (unsigned int)i % 4, 0, g, m, v->stream + 4,
			    v->stream_len - 4);
	}
	for (i = 0; i < ARRAY_LEN(gn_golden_bad); i++) {
		const struct gn_golden_bad *b = &gn_golden_bad[i];

		snprintf(name, sizeof(name), "bad-%02zu", i);
		decode_seed(name, b->n, 1, 0, 0, 0.0f, b->stream,
			    b->stream_len);
	}
}

/* Whole streams, greedy 1400-byte slices and int8 images of real tensors. */
static void real_seeds(const char *file, size_t max_n)
{
	static const float ss[] = { 1.0f, 1.9f };
	char rel[256], name[128];
	size_t n, g, len, at, used, k, nsl;
	float *x, m, maxabs = 0;
	uint8_t *stream, *quartic, *slice, *img;
	int exp, si;

	snprintf(rel, sizeof(rel), "mlp-small-seq/%s", file);
	x = gn_load_f32(rel, &n);
	if (!x)
		die("cannot read %s under %s", rel, gn_data_dir());
	n = n < max_n ? n : max_n;
	g = gn_tlc_groups(n);
	stream = malloc(gn_tlc_encode_bound(n));
	quartic = malloc(g + 1);
	slice = malloc(1400);
	img = malloc(n + 1);
	if (!stream || !quartic || !slice || !img)
		die("out of memory");
	for (si = 0; si < (int)ARRAY_LEN(ss); si++) {
		len = model_stream(x, n, ss[si], stream, quartic, &m);
		if (!len)
			die("%s: not finite", rel);
		snprintf(name, sizeof(name), "real-%s-s%d-stream", file, si);
		decode_seed(name, n, 1, 0, 0, 0.0f, stream, len);
		for (at = 0, nsl = 0; at < g && nsl < 4; at += used, nsl++) {
			len = model_zre(quartic + at, g - at, 1400, slice, &used);
			snprintf(name, sizeof(name), "real-%s-s%d-slice%zu", file,
				 si, nsl);
			decode_seed(name, n, 0, at, used, m, slice, len);
		}
		snprintf(name, sizeof(name), "real-%s-s%d-groups", file, si);
		roundtrip_seed(name, GN_FZR_GROUPS, 0, 0, si ? 1400 : 7, 0, 150,
			       quartic, g);
	}
	/* An int8 image: x_i ~ img_i * 2^(exp - 150). */
	for (k = 0; k < n; k++)
		maxabs = fabsf(x[k]) > maxabs ? fabsf(x[k]) : maxabs;
	frexpf(maxabs / 127.0f, &exp);
	for (k = 0; k < n; k++)
		img[k] = (uint8_t)(int8_t)lrintf(ldexpf(x[k], -exp));
	snprintf(name, sizeof(name), "real-%s-int8", file);
	roundtrip_seed(name, GN_FZR_INT8, s_field(1.5f), 1000, 1400, 0,
		       exp + 150, img, n);
	snprintf(name, sizeof(name), "real-%s-int8-ef", file);
	roundtrip_seed(name, GN_FZR_INT8_EF | GN_FZR_FTZ, s_field(1.75f), 100,
		       64, 0, exp + 150, img, n);
	free(x);
	free(stream);
	free(quartic);
	free(slice);
	free(img);
}

/*
 * @len bytes at @src as one zstd frame at level 1 into @dst (@cap
 * bytes), what the entropy stage sends: its length, or 0 when that is not
 * shorter (the stage would send the bytes as they are).
 */
static size_t zstd_frame(const uint8_t *src, size_t len, uint8_t *dst,
			 size_t cap)
{
	size_t r = ZSTD_compress(dst, cap, src, len, 1);

	return ZSTD_isError(r) || r >= len ? 0 : r;
}

/*
 * fuzz_codec's inputs (its header comment) for every codec of the
 * registry on real values: the codec's own whole-chunk stream as a slice,
 * plain and as the entropy stage codes it, and the values to encode.
 */
static void codec_seeds(const char *file, size_t max_n)
{
	static const struct {
		const char *codec;
		u32 given, w[8];
	} sets[] = {
		{ "none", 0, { 0 } },
		{ "3lc", 1, { 0x3fc00000u } },			/* s 1.5 */
		{ "qsgd", 2, { 0, 128 } },			/* bucket 128 */
		{ "topk", 1, { 0x3c23d70au } },			/* 1% */
		{ "topk", 5, { 0x3d4ccccdu, 0, 4 } },		/* 5%, 4 bits */
		{ "topk", 3, { 0x3f800000u, 512 } },		/* 100%: dense */
		{ "cltk", 1, { 0x3f800000u } },			/* the whole chunk */
		{ "cltk", 11, { 0x3d4ccccdu, 0x3f000000u, 0, 4 } }, /* 5%, beta
								      0.5, 4 bits */
		/* 5%, a bitmap; 20%, run lengths; 5%, auto */
		{ "topk", 0x21, { 0x3d4ccccdu, 0, 0, 0, 0, 1 } },
		{ "topk", 0x21, { 0x3e4ccccdu, 0, 0, 0, 0, 2 } },
		{ "topk", 0x21, { 0x3d4ccccdu, 0, 0, 0, 0, 6 } },
		/* 1%, Bloom P0; P1 with 4 bits; P2 at fpr 0.05; float16 */
		{ "topk", 0x21, { 0x3c23d70au, 0, 0, 0, 0, 3 } },
		{ "topk", 0x25, { 0x3c23d70au, 0, 4, 0, 0, 4 } },
		{ "topk", 0x61, { 0x3d4ccccdu, 0, 0, 0, 0, 5, 0x3d4ccccdu } },
		{ "topk", 0x81, { 0x3c23d70au, 0, 0, 0, 0, 0, 0, 1 } },
		/* 5%, fitted values in curves of 128; with Bloom P1 */
		{ "topk", 0x89, { 0x3d4ccccdu, 0, 0, 128, 0, 0, 0, 3 } },
		{ "topk", 0xa1, { 0x3d4ccccdu, 0, 0, 0, 0, 4, 0, 3 } },
	};
	char rel[256], name[160];
	uint8_t hdr[39 + 12];
	size_t n, k, i;
	float *x, *e;

	snprintf(rel, sizeof(rel), "mlp-small-seq/%s", file);
	x = gn_load_f32(rel, &n);
	if (!x)
		die("cannot read %s under %s", rel, gn_data_dir());
	n = n < max_n ? n : max_n;
	e = calloc(n, sizeof(float));
	for (k = 0; k < ARRAY_LEN(sets); k++) {
		const struct gn_codec_ops *c = NULL;
		struct gn_codec_spec in = { .given = sets[k].given }, sp;
		struct gn_codec_call call = { .p = &sp.p, .world = 3, .ef_len = n };
		uint8_t *scratch, *s, *z;
		char msg[160];
		size_t zlen;
		u64 bound;
		long len;

		for (i = 0; gn_codec_at((u32)i); i++)
			if (!strcmp(gn_codec_at((u32)i)->name, sets[k].codec))
				c = gn_codec_at((u32)i);
		if (!c || !e)
			die("no codec %s in the registry", sets[k].codec);
		in.codec = c->id;
		memcpy(in.p.w, sets[k].w, sizeof(sets[k].w));
		if (gn_codec_resolve(&in, &in, &sp, msg, sizeof(msg)))
			die("%s: %s", c->name, msg);
		memset(hdr, 0, sizeof(hdr));
		for (i = 0; gn_codec_at((u32)i) != c; i++)
			;
		hdr[0] = (uint8_t)i;
		gn_fz_put_le(hdr + 1, sets[k].given, 4);
		for (i = 0; i < 8; i++)
			gn_fz_put_le(hdr + 5 + 4 * i, sets[k].w[i], 4);
		gn_fz_put_le(hdr + 37, (u32)(n - 1), 2);
		/* The values, to encode (mode 1, seed 0). */
		hdr[0] |= 0x80;
		snprintf(name, sizeof(name), "real-%s-%s%zu-values", file, c->name, k);
		seed("codec", name, hdr, 39 + 8, x, n * 4);
		hdr[0] &= 0x7f;
		bound = gn_codec_stream_bound(c, &sp.p, (u32)n);
		s = malloc(bound);
		scratch = malloc(c->scratch(&sp.p, (u32)n) + 1);
		if (!s || !scratch)
			die("out of memory");
		memset(e, 0, n * sizeof(float));
		len = gn_codec_stream_encode(c, &call, x,
					     c->flags & GN_CODEC_EF_REDUCE ? e : NULL,
					     c->flags & GN_CODEC_EF_REDUCE ? e : NULL,
					     (u32)n, scratch, s, bound);
		if (len < 4)
			die("%s: cannot encode %s: %ld", c->name, rel, len);
		/* Its stream as one slice: first 0, every unit, the word. */
		gn_fz_put_le(hdr + 39, 0, 4);
		gn_fz_put_le(hdr + 43, c->units((u32)n), 4);
		memcpy(hdr + 47, s, 4);
		snprintf(name, sizeof(name), "real-%s-%s%zu-slice", file, c->name, k);
		seed("codec", name, hdr, sizeof(hdr), s + 4, (size_t)len - 4);
		z = malloc(ZSTD_compressBound((size_t)len));
		if (!z)
			die("out of memory");
		zlen = zstd_frame(s + 4, (size_t)len - 4, z,
				  ZSTD_compressBound((size_t)len));
		if (zlen) {
			hdr[2] |= 1;
			snprintf(name, sizeof(name), "real-%s-%s%zu-coded", file,
				 c->name, k);
			seed("codec", name, hdr, sizeof(hdr), z, zlen);
			hdr[2] &= (uint8_t)~1u;
		}
		free(z);
		free(s);
		free(scratch);
	}
	free(x);
	free(e);
}

/* Short inputs that reach argument checks and long-tensor paths. */
static void edge_seeds(void)
{
	static const uint8_t ramp[16] = { 0, 1, 2, 3, 4, 5, 250, 251, 252,
					  253, 254, 255, 127, 128, 0, 0 };
	float two = 2.0f, nan = NAN;

	roundtrip_seed("edge-s-2", GN_FZR_INT8 | GN_FZR_RAW_S,
		       gn_bits(two), 5, 10, 40, 150, ramp, sizeof(ramp));
	roundtrip_seed("edge-s-nan", GN_FZR_INT8 | GN_FZR_RAW_S,
		       gn_bits(nan), 5, 10, 40, 150, ramp, sizeof(ramp));
	roundtrip_seed("edge-chunk-0", GN_FZR_INT8_EF, s_field(1.25f), 0, 100,
		       300, 140, ramp, sizeof(ramp));
	roundtrip_seed("edge-cyclic-long", GN_FZR_INT8, s_field(1.0f), 4096,
		       1400, GN_FZR_N_MAX, 150, ramp, sizeof(ramp));
	roundtrip_seed("edge-denormals", GN_FZR_INT8_EF | GN_FZR_FTZ,
		       s_field(1.9f), 33, 5, 1000, 1, ramp, sizeof(ramp));
	roundtrip_seed("edge-bad-groups", GN_FZR_GROUPS, 0, 0, 2, 700, 150,
		       ramp, sizeof(ramp));
	roundtrip_seed("edge-empty", GN_FZR_INT8, s_field(1.0f), 1, 1, 0, 150,
		       NULL, 0);
	decode_seed("edge-huge-j0", 1000, GN_FZD_RAW_SLICE | GN_FZD_J0_HUGE, 0,
		    5, 1.0f, ramp, 4);
	decode_seed("edge-ftz-denormal-m", 40, 1 | GN_FZD_FTZ, 0, 8,
		    FLT_TRUE_MIN, ramp, 8);
}

/* ---- fuzz_rx: packet sequences that drive steps to completion ---------- */

#define RX_SEED_MAX (1 << 18)
#define RX_FIX (GN_FZX_FIX_HDR | GN_FZX_FIX_DATA | GN_FZX_SEAL)
/* The layout of gradnet/wire.h the seeds are written in. */
#define RX_HDR 32			/* the common header; the part follows */
#define RX_TAG 16
#define RX_DATA_HDR (RX_HDR + 32)	/* header and DATA part: the body */

struct rx_seed {
	size_t len;
	uint8_t buf[RX_SEED_MAX];
};

/* Append a record: a packet of @len bytes (tag room included) from @p. */
static void rx_rec(struct rx_seed *sd, unsigned int ctl, const uint8_t *p,
		   size_t len)
{
	if (sd->len + GN_FZX_REC_HDR + len > RX_SEED_MAX)
		die("rx seed too long");
	sd->buf[sd->len] = (uint8_t)ctl;
	gn_fz_put_le(sd->buf + sd->len + 1, (uint32_t)len, 2);
	memcpy(sd->buf + sd->len + GN_FZX_REC_HDR, p, len);
	sd->len += GN_FZX_REC_HDR + len;
}

/*
 * Clear @len bytes at @p and set the common header fields the harness does
 * not fix (fuzz_input.h); the packet number stays 0, which the harness
 * replaces with a new one when it seals.
 */
static void rx_hdr(uint8_t *p, size_t len, unsigned int type,
		   unsigned int tensor_idx, unsigned int step, unsigned int phase)
{
	memset(p, 0, len);
	p[3] = (uint8_t)type;
	gn_fz_put_le(p + 12, tensor_idx, 4);
	gn_fz_put_le(p + 16, step, 4);
	p[22] = (uint8_t)phase;
}

/*
 * A DATA packet @p's body: the slice @len bytes at @src, or for a tensor
 * with the entropy stage its zstd frame where that is shorter (bit 7 of
 * the codec byte set). Return: the body's bytes.
 */
static size_t rx_body(const struct gn_fzx_tensor *t, uint8_t *p,
		      const uint8_t *src, size_t len)
{
	size_t z = t->zstd ? zstd_frame(src, len, p + RX_DATA_HDR,
					GN_FZX_MAX_PKT - RX_DATA_HDR - RX_TAG) : 0;

	p[23] = z ? 0x80 : 0;
	if (z)
		return z;
	memcpy(p + RX_DATA_HDR, src, len);
	return len;
}

/*
 * Shard @shard's chunk @c of tensor @k, from rank @from, as DATA packets:
 * 3LC by the model (one packet), or the values themselves, cut to fit
 * gn_test_ctx_new()'s MTU of 9000. Values are about @amp, some 30 times.
 */
static void rx_data(struct rx_seed *sd, unsigned int ctl, unsigned int k,
		    unsigned int step, unsigned int phase, unsigned int from,
		    unsigned int shard, unsigned int c, float amp)
{
	const struct gn_fzx_tensor *t = &gn_fzx_tensors[k];
	size_t lo = gn_fzx_shard_lo(t->elems, shard) + (size_t)c * GN_FZX_CHUNK;
	size_t hi = gn_fzx_shard_lo(t->elems, shard + 1), n, i, body;
	static uint8_t p[GN_FZX_MAX_PKT], stream[GN_FZX_MAX_PKT];
	uint8_t *d = p + RX_HDR;	/* the DATA part */
	float x[GN_FZX_CHUNK], m = 0.0f;
	uint8_t quartic[GN_FZX_CHUNK];
	uint32_t count;

	n = hi - lo < GN_FZX_CHUNK ? hi - lo : GN_FZX_CHUNK;
	for (i = 0; i < n; i++)
		x[i] = sinf((float)(i * 3 + from * 17 + step * 5)) * amp *
		       (i % 13 ? 1.0f : 30.0f);
	rx_hdr(p, RX_DATA_HDR, 2, k, step, phase);
	gn_fz_put_le(d, c, 4);
	if (t->codec == 2) {
		body = model_stream(x, n, t->s == 0.0f ? 1.0f : t->s, stream,
				    quartic, &m);
		if (!body)
			die("rx seed: cannot quantize");
		body = rx_body(t, p, stream + 4, body - 4);
		count = (uint32_t)gn_tlc_groups(n);
	} else {
		size_t per = (9000 - 28 - RX_DATA_HDR - RX_TAG) / 4;
		size_t npkts = (n + per - 1) / per;

		gn_fz_put_le(d + 28, (uint32_t)npkts, 4);
		for (i = 0; i < npkts; i++) {
			count = (uint32_t)(n - i * per < per ? n - i * per : per);
			gn_fz_put_le(d + 12, (uint32_t)(i * per), 4);
			gn_fz_put_le(d + 16, count, 4);
			gn_fz_put_le(d + 24, (uint32_t)i, 4);
			body = rx_body(t, p, (const uint8_t *)(x + i * per),
				       (size_t)count * 4);
			rx_rec(sd, ctl | from, p, RX_DATA_HDR + body + RX_TAG);
		}
		return;
	}
	gn_fz_put_le(d + 16, count, 4);
	gn_fz_put_le(d + 20, gn_bits(m), 4);
	gn_fz_put_le(d + 28, 1, 4);
	rx_rec(sd, ctl | from, p, RX_DATA_HDR + body + RX_TAG);
}

/* Every packet rank 0 needs for step @step of tensor @k. */
static void rx_step(struct rx_seed *sd, unsigned int ctl, unsigned int k,
		    unsigned int step)
{
	const struct gn_fzx_tensor *t = &gn_fzx_tensors[k];
	unsigned int from, j, c;

	for (j = 0; j < GN_FZX_WORLD; j++) {
		size_t len = gn_fzx_shard_lo(t->elems, j + 1) -
			     gn_fzx_shard_lo(t->elems, j);

		for (c = 0; c * GN_FZX_CHUNK < len; c++) {
			if (j == 0) {
				for (from = 1; from < GN_FZX_WORLD; from++)
					rx_data(sd, ctl, k, step, 0, from, 0, c,
						1e-3f);
			} else {
				rx_data(sd, ctl, k, step, 1, j, j, c, 1e-3f);
			}
		}
	}
}

static void rx_write(const char *name, const struct rx_seed *sd)
{
	seed("rx", name, sd->buf, sd->len, NULL, 0);
}

/* Control packets: ACKs of rank 0's packets (one ACK entry each, see
 * gradnet/wire.h), probes, an abort. */
static void rx_control(struct rx_seed *sd)
{
	uint8_t p[128], *f = p + RX_HDR, *e = f + 4;	/* part, ACK entry */

	/* Rank 1 has all of rank 0's contribution to shard 1 of tensor 1. */
	rx_hdr(p, sizeof(p), 3, 0, 0, 0);
	gn_fz_put_le(f, 1, 2);			/* one entry */
	gn_fz_put_le(e, gn_fzx_tensors[0].id, 4);
	gn_fz_put_le(e + 4, 1, 4);		/* step 1 */
	gn_fz_put_le(e + 8, (uint32_t)gn_fzx_shard_lo(1000, 1), 4);
	gn_fz_put_le(e + 16, 1, 4);		/* npkts */
	gn_fz_put_le(e + 20, 1, 4);		/* base = npkts: all of it */
	rx_rec(sd, RX_FIX | 1, p, RX_HDR + 4 + 28 + RX_TAG);
	/* ... and as a bitmap, from rank 2 for shard 2. */
	rx_hdr(p, sizeof(p), 3, 0, 0, 0);
	gn_fz_put_le(f, 1, 2);
	gn_fz_put_le(e, gn_fzx_tensors[0].id, 4);
	gn_fz_put_le(e + 4, 1, 4);
	gn_fz_put_le(e + 8, (uint32_t)gn_fzx_shard_lo(1000, 2), 4);
	gn_fz_put_le(e + 16, 1, 4);
	gn_fz_put_le(e + 26, 1, 2);		/* one bitmap byte */
	e[28] = 1;
	rx_rec(sd, RX_FIX | 2, p, RX_HDR + 4 + 28 + 1 + RX_TAG);
	rx_hdr(p, sizeof(p), 6, 0, 0, 0);
	rx_rec(sd, RX_FIX | 1, p, RX_HDR + 8 + RX_TAG);
	rx_hdr(p, sizeof(p), 7, 0, 0, 0);
	rx_rec(sd, RX_FIX | 2, p, RX_HDR + 8 + RX_TAG);
	/* Rank 2 reports a NaN in tensor 3's step 1 (after 6 descriptors). */
	rx_hdr(p, sizeof(p), 4, 2, 1, 0);
	gn_fz_put_le(f, GN_FZX_NTENSORS + 1, 4);
	f[4] = 2;
	gn_fz_put_le(f + 8, EDOM, 4);
	gn_fz_put_le(f + 16, 2, 4);
	rx_rec(sd, RX_FIX | 2, p, RX_HDR + GN_WIRE_CTRL_LEN + RX_TAG);
	/* Rank 1 registered tensor 4 with another size. */
	rx_hdr(p, sizeof(p), 4, 3, 0, 0);
	gn_fz_put_le(f, GN_FZX_NTENSORS + 1, 4);
	f[4] = 1;
	gn_fz_put_le(f + 8, 9002, 4);
	rx_rec(sd, RX_FIX | 1, p, RX_HDR + GN_WIRE_CTRL_LEN + RX_TAG);
}

/*
 * Rank 2 restarted: a HELLO that matches the job but with a new instance,
 * which ends every step in flight. Its body, the peer-list digest, is the
 * test context's: zero.
 */
static void rx_restart(struct rx_seed *sd)
{
	uint8_t p[RX_HDR + 32 + GN_WIRE_HELLO_BODY + RX_TAG], *f = p + RX_HDR;

	rx_hdr(p, sizeof(p), 1, 0, 0, 0);
	p[20] = GN_WIRE_HELLO_BODY;
	gn_fz_put_le(f, GN_FZX_WORLD, 2);
	f[2] = 1;
	gn_fz_put_le(f + 8, GN_FZX_CHUNK, 4);
	gn_fz_put_le(f + 12, 9000, 2);
	gn_fz_put_le(f + 16, 0x1234, 4);
	rx_rec(sd, RX_FIX | 2, p, sizeof(p));
}

/* A change of handshake state (GN_FZX_STATE), not a packet. */
static void rx_state(struct rx_seed *sd, unsigned int st)
{
	uint8_t b = (uint8_t)st;

	rx_rec(sd, GN_FZX_STATE, &b, 1);
}

/*
 * Rank 1's contribution to chunk 0 of tensor @k's shard 0, step 1, as one
 * packet that claims @npkts packets and is packet @pkt of them.
 */
static void rx_npkts(struct rx_seed *sd, unsigned int k, uint32_t npkts,
		     uint32_t pkt)
{
	size_t at = sd->len;

	rx_data(sd, RX_FIX, k, 1, 0, 1, 0, 0, 1e-3f);
	gn_fz_put_le(sd->buf + at + GN_FZX_REC_HDR + RX_HDR + 24, pkt, 4);
	gn_fz_put_le(sd->buf + at + GN_FZX_REC_HDR + RX_HDR + 28, npkts, 4);
}

static void rx_seeds(void)
{
	static struct rx_seed sd;
	unsigned int k, step;

	/* As many steps as fit in run.sh's max_len, at least one. */
	for (k = 0; k < GN_FZX_NTENSORS; k++) {
		char name[64];
		size_t len = 0;

		sd.len = 0;
		for (step = 1; step <= GN_FZX_STEPS; step++) {
			rx_step(&sd, RX_FIX, k, step);
			if (sd.len > 65536 / 2)
				break;
			len = sd.len;
		}
		sd.len = len ? len : sd.len;
		snprintf(name, sizeof(name), "rx-tensor%u-steps", k);
		rx_write(name, &sd);
	}
	/* Early, duplicated, unauthenticated and broken packets, out of order. */
	sd.len = 0;
	rx_step(&sd, RX_FIX | GN_FZX_TWICE, 0, 2);
	rx_step(&sd, GN_FZX_FIX_HDR | GN_FZX_FIX_DATA, 0, 1);
	rx_step(&sd, RX_FIX | GN_FZX_TWICE, 0, 1);
	rx_step(&sd, RX_FIX | GN_FZX_BREAK, 0, 1);
	rx_step(&sd, RX_FIX, 0, 1);
	rx_write("rx-early-dup-replay", &sd);
	sd.len = 0;
	rx_control(&sd);
	rx_write("rx-control", &sd);
	/* Contributions near FLT_MAX: the owner's sum overflows. */
	sd.len = 0;
	rx_data(&sd, RX_FIX, 0, 1, 0, 1, 0, 0, 1e37f);
	rx_data(&sd, RX_FIX, 0, 1, 0, 2, 0, 0, 1e37f);
	rx_write("rx-sum-overflow", &sd);
	sd.len = 0;
	rx_step(&sd, RX_FIX, 2, 1);
	rx_restart(&sd);
	rx_step(&sd, RX_FIX, 0, 1);
	rx_write("rx-peer-restart", &sd);
	/* An insider's npkts of 2^32 - 1 and 2^31, then the real step. */
	sd.len = 0;
	rx_npkts(&sd, 0, 0xffffffffu, 0);
	rx_npkts(&sd, 0, 0xffffffffu, 0xfffffffeu);
	rx_npkts(&sd, 2, 0x80000000u, 0x7fffffffu);
	rx_npkts(&sd, 2, 3, 2);
	rx_step(&sd, RX_FIX, 0, 1);
	rx_step(&sd, RX_FIX, 2, 1);
	rx_write("rx-npkts-huge", &sd);
	/* Packets meet a handshake in progress, then a finished one. */
	sd.len = 0;
	rx_state(&sd, GN_FZX_ST_HELLO_IN(1) | GN_FZX_ST_HELLO_ACKED(2));
	rx_restart(&sd);
	rx_control(&sd);
	rx_step(&sd, RX_FIX, 2, 1);
	rx_state(&sd, GN_FZX_ST_MISMATCH);
	rx_restart(&sd);
	rx_state(&sd, GN_FZX_ST_READY | GN_FZX_ST_HELLO_IN(1) |
		      GN_FZX_ST_HELLO_ACKED(1) | GN_FZX_ST_HELLO_IN(2) |
		      GN_FZX_ST_HELLO_ACKED(2) | GN_FZX_ST_TOLD_REPLY);
	rx_step(&sd, RX_FIX, 2, 1);
	rx_write("rx-handshake", &sd);
	/* Nothing registered yet: descriptors wait, the rest is dropped. */
	sd.len = 0;
	rx_state(&sd, GN_FZX_ST_BARE);
	rx_control(&sd);
	rx_step(&sd, RX_FIX, 0, 1);
	rx_restart(&sd);
	rx_write("rx-bare", &sd);
}

/* ---- fuzz_frame: frames for the DPDK receive filter ----------------------- */

static void put_be16(uint8_t *p, unsigned int v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}

static unsigned int csum16(unsigned long s, const uint8_t *p, size_t n)
{
	size_t i;

	for (i = 0; i + 1 < n; i += 2)
		s += (unsigned int)(p[i] << 8 | p[i + 1]);
	if (n & 1)
		s += (unsigned int)p[n - 1] << 8;
	while (s >> 16)
		s = (s & 0xffff) + (s >> 16);
	return (unsigned int)(~s & 0xffff);
}

/*
 * fuzz_frame's layout: a flags byte (0: the port checked nothing), then
 * the frame. fuzz_frame.c is rank 02:00:00:00:00:01, 10.9.0.1:7000.
 */
static void frame_seeds(void)
{
	static const uint8_t mac[6] = { 2, 0, 0, 0, 0, 1 };
	static const uint8_t peer[6] = { 2, 0, 0, 0, 0, 2 };
	static const uint8_t flags;
	uint8_t f[14 + 20 + 8 + 200], *ip = f + 14, *udp = ip + 20;
	unsigned int ulen = 8 + 200, c, i;

	memset(f, 0, sizeof(f));
	memcpy(f, mac, 6);
	memcpy(f + 6, peer, 6);
	put_be16(f + 12, 0x0800);
	ip[0] = 0x45;
	put_be16(ip + 2, 20 + ulen);
	put_be16(ip + 6, 0x4000);
	ip[8] = 64;
	ip[9] = 17;
	memcpy(ip + 12, "\x0a\x09\x00\x02\x0a\x09\x00\x01", 8);
	put_be16(ip + 10, csum16(0, ip, 20));
	put_be16(udp, 7001);
	put_be16(udp + 2, 7000);
	put_be16(udp + 4, ulen);
	for (i = 0; i < 200; i++)
		udp[8 + i] = (uint8_t)(i * 13);
	c = csum16(0x0a09u + 0x0002u + 0x0a09u + 0x0001u + 17 + ulen, udp, ulen);
	put_be16(udp + 6, c ? c : 0xffff);
	seed("frame", "udp", &flags, 1, f, sizeof(f));
	put_be16(udp + 6, 0);
	seed("frame", "udp-no-csum", &flags, 1, f, sizeof(f));

	memset(f, 0, 60);
	memset(f, 0xff, 6);
	memcpy(f + 6, peer, 6);
	put_be16(f + 12, 0x0806);
	put_be16(f + 14, 1);
	put_be16(f + 16, 0x0800);
	f[18] = 6;
	f[19] = 4;
	put_be16(f + 20, 1);
	memcpy(f + 22, peer, 6);
	memcpy(f + 28, "\x0a\x09\x00\x02", 4);
	memcpy(f + 38, "\x0a\x09\x00\x01", 4);
	seed("frame", "arp-request", &flags, 1, f, 60);
}

/* ---- fuzz_stapsdt: ELF files and note sections ----------------------------- */

/* fuzz_stapsdt's layout: a mode byte (0: an ELF file, 1 and 2: notes). */
static void stapsdt_seeds(void)
{
	uint8_t notes[2048], elf[4096];
	size_t n, len;
	uint8_t mode = 0;

	n = gn_elf_six_probes(notes, sizeof(notes), NULL);
	len = gn_elf_image(elf, sizeof(elf), notes, n);
	if (!n || !len)
		die("stapsdt seeds do not fit");
	seed("stapsdt", "elf", &mode, 1, elf, len);
	len = gn_elf_overflow(elf, sizeof(elf));
	seed("stapsdt", "elf-overflow", &mode, 1, elf, len);
	mode = 1;
	seed("stapsdt", "notes", &mode, 1, notes, n);
	mode = 2;
	seed("stapsdt", "notes-align8", &mode, 1, notes, n);
	n = gn_elf_six_probes(notes, sizeof(notes), "8@(%rdi) 4@%esi");
	len = gn_elf_image(elf, sizeof(elf), notes, n);
	mode = 0;
	seed("stapsdt", "elf-memory-args", &mode, 1, elf, len);
}

int main(int argc, char **argv)
{
	static const char *const dirs[] = { "", "/decode", "/roundtrip", "/rx",
					     "/frame", "/codec", "/stapsdt" };
	char path[4096];
	size_t i;

	if (argc != 2) {
		fprintf(stderr, "usage: fuzz_seeds OUTDIR\n");
		return 2;
	}
	out_dir = argv[1];
	for (i = 0; i < ARRAY_LEN(dirs); i++) {
		snprintf(path, sizeof(path), "%s%s", out_dir, dirs[i]);
		if (mkdir(path, 0755) && errno != EEXIST)
			die("cannot create %s: %s", path, strerror(errno));
	}
	golden_seeds();
	real_seeds("mlp-small-s00200-fc1.weight.f32", 4096);
	real_seeds("mlp-small-s00201-fc1.bias.f32", 256);
	real_seeds("mlp-small-s00202-fc2.weight.f32", 8000);
	real_seeds("mlp-small-s00247-fc3.weight.f32", 2560);
	real_seeds("mlp-small-s00230-fc3.bias.f32", 10);
	edge_seeds();
	codec_seeds("mlp-small-s00200-fc1.weight.f32", 4096);
	codec_seeds("mlp-small-s00230-fc3.bias.f32", 10);
	rx_seeds();
	frame_seeds();
	stapsdt_seeds();
	printf("fuzz_seeds: %u seeds in %s\n", written, out_dir);
	return 0;
}
