// SPDX-License-Identifier: MIT
/*
 * fuzz_seeds.c - writes the fuzz targets' seed corpora, so that no binary
 * blobs live in the repository: the golden vectors (valid and malformed
 * streams) and real gradients from data/gradients, encoded with the
 * specification model, in the input layouts of fuzz_input.h.
 *
 * usage: fuzz_seeds OUTDIR    (writes OUTDIR/decode and OUTDIR/roundtrip)
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
#include "fuzz_input.h"
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
	gn_fz_put_le(h + GN_FZD_M, model_bits(m), 4);
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
	gn_fz_put_le(out, model_bits(*m), 4);
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
			xe[2 * k] = model_float(v->x[k]);
			xe[2 * k + 1] = model_float(v->e_in[k]);
		}
		snprintf(name, sizeof(name), "golden-%02zu", i);
		roundtrip_seed(name, GN_FZR_FLOATS | GN_FZR_RAW_S, v->s,
			       i % 3 ? n : 7, i % 2 ? 3 : 64, 0, 0, xe,
			       2 * n * sizeof(float));
		free(xe);
		if (v->ret)
			continue;
		m = model_float(gn_fz_le(v->stream, 4));
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

/* Short inputs that reach argument checks and long-tensor paths. */
static void edge_seeds(void)
{
	static const uint8_t ramp[16] = { 0, 1, 2, 3, 4, 5, 250, 251, 252,
					  253, 254, 255, 127, 128, 0, 0 };
	float two = 2.0f, nan = NAN;

	roundtrip_seed("edge-s-2", GN_FZR_INT8 | GN_FZR_RAW_S,
		       model_bits(two), 5, 10, 40, 150, ramp, sizeof(ramp));
	roundtrip_seed("edge-s-nan", GN_FZR_INT8 | GN_FZR_RAW_S,
		       model_bits(nan), 5, 10, 40, 150, ramp, sizeof(ramp));
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

int main(int argc, char **argv)
{
	static const char *const dirs[] = { "", "/decode", "/roundtrip" };
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
	printf("fuzz_seeds: %u seeds in %s\n", written, out_dir);
	return 0;
}
