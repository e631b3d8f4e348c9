// SPDX-License-Identifier: MIT
/*
 * sparse_bench.c - sparse-bench: what top-k's index and value codecs cost
 * on the real gradients (data/gradients), in one process through the
 * registry's whole-chunk streams (lib/codec/stream.c).
 *
 *   sparse-bench bytes [--data DIR] SPEC...
 *	Stream bytes of every codec spec over mlp-small-seq steps 200-247
 *	(each tensor's error feedback carried from step to step) and over
 *	mlp-digits steps 1, 100 and 1000 (fresh error feedback), chunks of
 *	65536 values; beside them, top-k's entries at 8 bytes each (a
 *	float32 value and a 32-bit index) for the spec's density.
 *   sparse-bench speed [--data DIR] [--secs S] [--rounds R] SPEC...
 *	Encode and decode GB/s (raw float32 bytes a second) of each spec on
 *	mlp-digits step 1000 in chunks of 65536, then zstd -1, zstd -3,
 *	deflate -1 and deflate -6 compressing and decompressing the very
 *	streams the spec made (GB/s of stream bytes), and how much smaller
 *	each makes them. Fastest of R rounds (3) of at least S seconds
 *	(0.2); a round measures every spec in turn, so a change in the
 *	host's load falls on all of them alike.
 *
 * Prints the command line first, then one row a spec.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <zlib.h>
#include <zstd.h>

#include "codec/codec.h"
#include "paths.h"
#include "spec.h"

#define CHUNK 65536u
static const int digits_steps[] = { 1, 100, 1000 };

static void die(const char *what, const char *arg)
{
	fprintf(stderr, "sparse-bench: %s%s%s\n", what, arg ? ": " : "",
		arg ? arg : "");
	exit(1);
}

static float *load(const char *path, size_t *n)
{
	FILE *f = fopen(path, "rb");
	float *x;
	long len;

	if (!f)
		die("cannot open", path);
	if (fseek(f, 0, SEEK_END) || (len = ftell(f)) < 4 || fseek(f, 0, SEEK_SET))
		die("cannot size", path);
	x = malloc((size_t)len);
	if (!x || fread(x, 1, (size_t)len, f) != (size_t)len)
		die("cannot read", path);
	fclose(f);
	*n = (size_t)len / 4;
	return x;
}

/* A spec parsed and resolved, with its scratch and stream buffers. */
struct codec {
	const char *text;
	const struct gn_codec_ops *c;
	struct gn_codec_spec sp;
	void *scratch;
	u8 *stream;
	u64 bound;
	double density;
};

static void codec_of(const char *text, struct codec *k)
{
	struct gn_codec_spec in;
	char msg[256];
	float d;

	if (gn_spec_parse(text, &in, msg, sizeof(msg)) ||
	    gn_codec_resolve(&in, &in, &k->sp, msg, sizeof(msg)))
		die(msg, text);
	k->c = gn_codec_find(k->sp.codec);
	if (gn_codec_params_check(k->c, &k->sp.p, CHUNK, 8952, msg, sizeof(msg)))
		die(msg, text);
	k->text = text;
	k->scratch = malloc(k->c->scratch(&k->sp.p, CHUNK));
	k->bound = gn_codec_stream_bound(k->c, &k->sp.p, CHUNK);
	k->stream = malloc(k->bound);
	if (!k->scratch || !k->stream)
		die("out of memory", NULL);
	memcpy(&d, &k->sp.p.w[0], 4);
	k->density = !strcmp(k->c->name, "topk") ? d : 0.0;
}

static long encode(struct codec *k, u64 seed, const float *x, float *e_in,
		   float *e_out, u32 n)
{
	struct gn_codec_call call = { .p = &k->sp.p, .seed = seed, .world = 1,
				      .ef_len = n };
	bool ef = k->c->flags & GN_CODEC_EF_REDUCE;
	long len = gn_codec_stream_encode(k->c, &call, x, ef ? e_in : NULL,
					  ef ? e_out : NULL, n, k->scratch,
					  k->stream, k->bound);

	if (len < 0)
		die("encode failed", k->text);
	return len;
}

/* Top-k's entries in a chunk of @n: ceil(d n), at least 1. */
static u64 entries(double d, u32 n)
{
	double k = d * n;
	u64 r = (u64)k;

	r += (double)r < k;
	return r ? r : 1;
}

struct tally {
	u64 bytes, raw, pairs;
};

/* One tensor's values as chunks through @k, error feedback in @e. */
static void tally_tensor(struct codec *k, const float *x, float *e,
			 size_t n, u64 seed, struct tally *t)
{
	size_t at;

	for (at = 0; at < n; at += CHUNK) {
		u32 m = (u32)(n - at < CHUNK ? n - at : CHUNK);

		t->bytes += (u64)encode(k, seed + at, x + at, e + at, e + at, m);
		t->raw += 4ull * m;
		t->pairs += 8 * entries(k->density, m);
	}
}

static void bytes_mode(const char *data, int nspecs, char **specs)
{
	char path[512];
	int s, i, j;

	printf("%-48s %12s %12s %12s %9s %9s\n", "spec", "raw", "stream",
	       "f32+u32", "raw/strm", "pairs/strm");
	for (s = 0; s < nspecs; s++) {
		struct codec k;
		struct tally t = { 0 };
		float *e[GN_SAMPLE_TENSORS] = { NULL };
		size_t n;

		codec_of(specs[s], &k);
		for (j = 0; j < GN_SEQ_STEPS; j++)
			for (i = 0; i < GN_SAMPLE_TENSORS; i++) {
				float *x;

				snprintf(path, sizeof(path),
					 "%s/mlp-small-seq/mlp-small-s%05d-%s.f32",
					 data, GN_SEQ_FIRST + j,
					 gn_sample_tensors[i]);
				x = load(path, &n);
				if (!e[i])
					e[i] = calloc(n, sizeof(float));
				tally_tensor(&k, x, e[i], n, 1000u * j + i, &t);
				free(x);
			}
		for (i = 0; i < GN_SAMPLE_TENSORS; i++)
			free(e[i]);
		for (j = 0; j < 3; j++)
			for (i = 0; i < GN_SAMPLE_TENSORS; i++) {
				float *x, *ef;

				snprintf(path, sizeof(path), "%s/mlp-digits/mlp-s%05d-%s.f32",
					 data, digits_steps[j], gn_sample_tensors[i]);
				x = load(path, &n);
				ef = calloc(n, sizeof(float));
				tally_tensor(&k, x, ef, n, 7u * j + i, &t);
				free(x);
				free(ef);
			}
		printf("%-48s %12llu %12llu %12llu %9.2f %9.2f\n", specs[s],
		       (unsigned long long)t.raw, (unsigned long long)t.bytes,
		       (unsigned long long)t.pairs, (double)t.raw / (double)t.bytes,
		       k.density ? (double)t.pairs / (double)t.bytes : 0.0);
		free(k.scratch);
		free(k.stream);
	}
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* The streams of every chunk, back to back, with their lengths. */
struct streams {
	u8 *buf;
	size_t len, cap;
	size_t *at;
	u32 n;
};

enum op { ENC, DEC, ZC1, ZD1, ZC3, ZD3, DC1, DD1, DC6, DD6, OPS };

static const char *const op_names[OPS] = {
	"encode", "decode", "zstd-1 c", "zstd-1 d", "zstd-3 c", "zstd-3 d",
	"defl-1 c", "defl-1 d", "defl-6 c", "defl-6 d",
};

/*
 * Seconds of one pass of @op (encode, decode, or a compression) over every
 * chunk; a compression adds its output bytes to @clen.
 */
static double pass(enum op op, struct codec *k, const float *x, size_t n,
		   float *ez, float *eo, float *out, struct streams *st,
		   u8 *tmp, size_t tcap, size_t *clen)
{
	double t0 = now();
	u32 c;

	for (c = 0; c < st->n; c++) {
		size_t off = (size_t)c * CHUNK, sl = st->at[c + 1] - st->at[c];
		u32 m = (u32)(n - off < CHUNK ? n - off : CHUNK);
		const u8 *s = st->buf + st->at[c];
		struct gn_codec_call call = { .p = &k->sp.p, .world = 1 };
		uLongf zl = tcap;
		size_t r = 0;

		switch (op) {
		case ENC:
			encode(k, c, x + off, ez + off, eo + off, m);
			break;
		case DEC:
			if (gn_codec_stream_decode(k->c, &call, s, sl, out + off, m))
				die("decode refused", k->text);
			break;
		case ZC1:
		case ZC3:
			r = ZSTD_compress(tmp, tcap, s, sl, op == ZC1 ? 1 : 3);
			if (ZSTD_isError(r))
				die("zstd", ZSTD_getErrorName(r));
			clen[op == ZC1 ? 0 : 1] += r;
			break;
		case DC1:
		case DC6:
			if (compress2(tmp, &zl, s, sl, op == DC1 ? 1 : 6) != Z_OK)
				die("deflate", NULL);
			clen[op == DC1 ? 2 : 3] += zl;
			break;
		default:
			break;
		}
	}
	return now() - t0;
}

/*
 * Decompression is timed on its own: the compressed chunks are made
 * first, then only their decompression runs in the timed loop.
 */
static double pass_dec(enum op op, struct streams *st, u8 *tmp, size_t tcap,
		       u8 **z, size_t *zl)
{
	double t0;
	u32 c;

	for (c = 0; c < st->n; c++) {
		const u8 *s = st->buf + st->at[c];
		size_t sl = st->at[c + 1] - st->at[c];
		uLongf l = tcap;

		if (op == ZD1 || op == ZD3) {
			zl[c] = ZSTD_compress(z[c], tcap, s, sl, op == ZD1 ? 1 : 3);
		} else {
			compress2(z[c], &l, s, sl, op == DD1 ? 1 : 6);
			zl[c] = l;
		}
	}
	t0 = now();
	for (c = 0; c < st->n; c++) {
		size_t sl = st->at[c + 1] - st->at[c];
		uLongf l = tcap;

		if (op == ZD1 || op == ZD3) {
			if (ZSTD_decompress(tmp, tcap, z[c], zl[c]) != sl)
				die("zstd round trip", NULL);
		} else if (uncompress(tmp, &l, z[c], zl[c]) != Z_OK || l != sl) {
			die("inflate round trip", NULL);
		}
	}
	return now() - t0;
}

/* A spec's state for the speed runs: its streams and their compressions. */
struct bench {
	struct codec k;
	struct streams st;
	double best[OPS];
	size_t clen[4], tcap;
	u8 *tmp, **z;
	size_t *zl;
};

static void bench_start(struct bench *b, const char *spec, const float *x,
			size_t n, float *ez, float *eo, float *out)
{
	u32 c;
	int op;

	codec_of(spec, &b->k);
	b->st.n = (u32)((n + CHUNK - 1) / CHUNK);
	b->st.cap = (size_t)b->k.bound * b->st.n;
	b->st.buf = malloc(b->st.cap);
	b->st.at = calloc(b->st.n + 1, sizeof(size_t));
	b->tcap = ZSTD_compressBound(b->k.bound) + compressBound(b->k.bound);
	b->tmp = malloc(b->tcap);
	b->z = calloc(b->st.n, sizeof(*b->z));
	b->zl = calloc(b->st.n, sizeof(*b->zl));
	if (!b->st.buf || !b->st.at || !b->tmp || !b->z || !b->zl)
		die("out of memory", NULL);
	for (c = 0; c < b->st.n; c++) {
		size_t off = (size_t)c * CHUNK;
		u32 m = (u32)(n - off < CHUNK ? n - off : CHUNK);
		long len = encode(&b->k, c, x + off, ez + off, eo + off, m);

		memcpy(b->st.buf + b->st.len, b->k.stream, (size_t)len);
		b->st.len += (size_t)len;
		b->st.at[c + 1] = b->st.len;
		b->z[c] = malloc(b->tcap);
		if (!b->z[c])
			die("out of memory", NULL);
	}
	for (op = 0; op < OPS; op++)
		b->best[op] = 1e30;
	/* The compressed sizes, once: every pass gives the same. */
	memset(b->clen, 0, sizeof(b->clen));
	for (op = ZC1; op <= DC6; op += 2)
		pass(op, &b->k, x, n, ez, eo, out, &b->st, b->tmp, b->tcap,
		     b->clen);
}

static void bench_round(struct bench *b, double secs, const float *x,
			size_t n, float *ez, float *eo, float *out)
{
	size_t clen[4];
	int op;

	for (op = 0; op < OPS; op++) {
		double t = 0;
		int reps = 0;

		while (t < secs) {
			if (op == ZD1 || op == ZD3 || op == DD1 || op == DD6)
				t += pass_dec(op, &b->st, b->tmp, b->tcap, b->z,
					      b->zl);
			else
				t += pass(op, &b->k, x, n, ez, eo, out, &b->st,
					  b->tmp, b->tcap, clen);
			reps++;
		}
		if (t / reps < b->best[op])
			b->best[op] = t / reps;
	}
}

static void bench_end(struct bench *b, size_t n)
{
	u32 c;
	int op, i;

	printf("%-44s %7.2f", b->k.text, 4.0 * n / b->st.len);
	/* The codec's speeds on its floats, the others' on its streams. */
	for (op = 0; op < OPS; op++)
		printf(" %8.3f", (op <= DEC ? 4.0 * n : (double)b->st.len) /
				 b->best[op] / 1e9);
	for (i = 0; i < 4; i++)
		printf(" %7.3f", (double)b->st.len / b->clen[i]);
	printf("\n");
	for (c = 0; c < b->st.n; c++)
		free(b->z[c]);
	free(b->z);
	free(b->zl);
	free(b->tmp);
	free(b->st.buf);
	free(b->st.at);
	free(b->k.scratch);
	free(b->k.stream);
}

static void speed_mode(const char *data, double secs, int rounds, int nspecs,
		       char **specs)
{
	char path[512];
	float *x = NULL, *ez, *eo, *out;
	struct bench *b;
	size_t n = 0, m;
	int s, i, r;

	/* mlp-digits step 1000, its tensors back to back. */
	for (i = 0; i < GN_SAMPLE_TENSORS; i++) {
		float *t;

		snprintf(path, sizeof(path), "%s/mlp-digits/mlp-s01000-%s.f32",
			 data, gn_sample_tensors[i]);
		t = load(path, &m);
		x = realloc(x, (n + m) * sizeof(float));
		if (!x)
			die("out of memory", NULL);
		memcpy(x + n, t, m * sizeof(float));
		n += m;
		free(t);
	}
	ez = calloc(n, sizeof(float));
	eo = calloc(n, sizeof(float));
	out = calloc(n, sizeof(float));
	b = calloc((size_t)nspecs, sizeof(*b));
	if (!ez || !eo || !out || !b)
		die("out of memory", NULL);
	for (s = 0; s < nspecs; s++)
		bench_start(&b[s], specs[s], x, n, ez, eo, out);
	for (r = 0; r < rounds; r++)
		for (s = 0; s < nspecs; s++)
			bench_round(&b[s], secs, x, n, ez, eo, out);
	printf("%-44s %7s", "spec", "ratio");
	for (i = 0; i < OPS; i++)
		printf(" %8s", op_names[i]);
	printf(" %7s %7s %7s %7s\n", "zstd1 x", "zstd3 x", "defl1 x", "defl6 x");
	for (s = 0; s < nspecs; s++)
		bench_end(&b[s], n);
	free(b);
	free(x);
	free(ez);
	free(eo);
	free(out);
}

int main(int argc, char **argv)
{
	const char *data = GN_DATA_DEFAULT;
	double secs = 0.2;
	int i, a = 2, rounds = 3;

	if (argc < 3)
		die("usage: sparse-bench bytes|speed [--data DIR] [--secs S] [--rounds R] SPEC...",
		    NULL);
	printf("#");
	for (i = 0; i < argc; i++)
		printf(" %s", argv[i]);
	printf("\n");
	while (a + 1 < argc && !strncmp(argv[a], "--", 2)) {
		if (!strcmp(argv[a], "--data"))
			data = argv[a + 1];
		else if (!strcmp(argv[a], "--secs"))
			secs = atof(argv[a + 1]);
		else if (!strcmp(argv[a], "--rounds"))
			rounds = atoi(argv[a + 1]);
		else
			die("unknown option", argv[a]);
		a += 2;
	}
	if (!strcmp(argv[1], "bytes"))
		bytes_mode(data, argc - a, argv + a);
	else if (!strcmp(argv[1], "speed"))
		speed_mode(data, secs, rounds > 0 ? rounds : 1, argc - a, argv + a);
	else
		die("mode is bytes or speed", argv[1]);
	return 0;
}
