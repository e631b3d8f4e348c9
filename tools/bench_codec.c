// SPDX-License-Identifier: MIT
/*
 * bench_codec.c - `gradnet-bench codec`: codec throughput against memcpy,
 * STREAM-style kernels with the codec's memory traffic, zstd -1 and lz4 in
 * the same run, every registered codec through the registry
 * (bench_registry.c), and compression ratios on the real gradient samples.
 */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <lz4.h>
#include <zstd.h>

#include <gradnet/codec.h>
#include "bench.h"

struct codec_opts {
	int isa;
	int json;
	size_t dram_mib;
	size_t chunk;
	double min_seconds;
	const char *threads;		/* --threads: the scaling run instead */
	struct bench_codecs codecs;	/* --codec, else every registered one */
};

struct results {
	struct bench_speed encode, encode2, decode, memcpy_, stream_enc, stream_dec;
	struct bench_speed zstd_c, zstd_d, lz4_c, lz4_d;
	double zstd_ratio, lz4_ratio, tlc_ratio_dram;
	double snap_ratio[4], snap_entropy[4];
	double steady_ratio[4], steady_bits[4], steady_entropy[4];
	double steady_q_entropy[4];
	double chunk_ratio[8];
};

static const float s_values[4] = { 1.0f, 1.5f, 1.75f, 1.9f };

static void decode_all(const struct bench_enc *b, float *acc)
{
	size_t k;

	for (k = 0; k < b->chunks; k++)
		bench_decode_chunk(b, k, acc);
}

/*
 * With the error feedback double-buffered as libgradnet keeps it (read
 * from one buffer, written to the other, so a failed step can keep the
 * old one); the buffers swap after each run.
 */
static void encode_swapped(struct bench_enc *b)
{
	bench_encode(b);
	bench_enc_swap(b);
}

/* Run @n values' worth of every kernel; speeds in GB/s of float input. */
static void measure(const struct codec_opts *o, size_t n, double *enc,
		    double *enc2, double *dec, double *mcp, double *senc,
		    double *sdec,
		    double zs[2], double lz[2], double *zr, double *lr,
		    double *tr)
{
	size_t bytes = n * sizeof(float), zcap, i, total = 0;
	float *x = bench_tiled_gradients(n), *e = bench_alloc(bytes);
	float *acc = bench_alloc(bytes), *dst = bench_alloc(bytes);
	float *ef[2] = { bench_alloc(bytes), bench_alloc(bytes) };
	struct bench_enc c;
	ZSTD_CCtx *zc = ZSTD_createCCtx();
	ZSTD_DCtx *zd = ZSTD_createDCtx();
	char *zbuf, *out;
	size_t zlen = 0;
	int llen = 0;

	zcap = ZSTD_compressBound(bytes);
	if ((size_t)LZ4_compressBound((int)(bytes < 0x7e000000 ? bytes : 0x7e000000)) > zcap)
		zcap = (size_t)LZ4_compressBound((int)bytes);
	zbuf = bench_alloc(zcap);
	out = bench_alloc(bytes);
	memset(e, 0, bytes);
	memset(acc, 0, bytes);
	memset(dst, 0, bytes);
	/* Warm up to the error-feedback steady state. */
	bench_enc_init(&c, o->isa, x, e, e, n, o->chunk);
	for (i = 0; i < 3; i++)
		total = bench_encode(&c);
	*tr = (double)bytes / (double)total;
	memcpy(ef[0], e, bytes);
	memcpy(dst, e, bytes);		/* kept until the decode below */

	c.e_in = ef[0];
	c.e_out = ef[1];
	BENCH_TIME(*enc2, bytes, o->min_seconds, encode_swapped(&c));
	c.e_in = c.e_out = e;
	BENCH_TIME(*enc, bytes, o->min_seconds, bench_encode(&c));
	/*
	 * Decode the stream of the first step after the warm-up, not of
	 * whichever step the timed loop above happened to end on: its
	 * sparsity, and so the decoder's speed, moves with that count.
	 */
	memcpy(e, dst, bytes);
	bench_encode(&c);
	BENCH_TIME(*dec, bytes, o->min_seconds, decode_all(&c, acc));
	BENCH_TIME(*mcp, bytes, o->min_seconds, memcpy(dst, x, bytes));
	BENCH_TIME(*senc, bytes, o->min_seconds,
		   bench_stream_add(dst, x, n));
	BENCH_TIME(*sdec, bytes, o->min_seconds,
		   bench_stream_addk(acc, 0.5f, n));
	BENCH_TIME(zs[0], bytes, o->min_seconds,
		   zlen = ZSTD_compressCCtx(zc, zbuf, zcap, x, bytes, 1));
	if (ZSTD_isError(zlen))
		bench_die("zstd: %s", ZSTD_getErrorName(zlen));
	BENCH_TIME(zs[1], bytes, o->min_seconds,
		   ZSTD_decompressDCtx(zd, out, bytes, zbuf, zlen));
	*zr = (double)bytes / (double)zlen;
	if (bytes <= (size_t)LZ4_MAX_INPUT_SIZE) {
		BENCH_TIME(lz[0], bytes, o->min_seconds,
			   llen = LZ4_compress_default((const char *)x, zbuf,
						       (int)bytes, (int)zcap));
		BENCH_TIME(lz[1], bytes, o->min_seconds,
			   LZ4_decompress_safe(zbuf, out, llen, (int)bytes));
		*lr = (double)bytes / (double)llen;
	} else {
		lz[0] = lz[1] = *lr = NAN;
	}
	ZSTD_freeCCtx(zc);
	ZSTD_freeDCtx(zd);
	free(x);
	free(e);
	free(ef[0]);
	free(ef[1]);
	free(acc);
	free(dst);
	bench_enc_free(&c);
	free(zbuf);
	free(out);
}

/* Order-0 entropy in bits per value of the trits and of the group bytes. */
struct counts {
	double trit[3];
	double group[243];
	double values, bytes;
};

static void count_groups(struct counts *ct, const uint8_t *q, size_t n)
{
	size_t g = gn_tlc_groups(n), j, i;
	static const unsigned int w[5] = { 81, 27, 9, 3, 1 };

	for (j = 0; j < g; j++)
		ct->group[q[j]]++;
	for (i = 0; i < n; i++)
		ct->trit[q[i % g] / w[i / g] % 3]++;
	ct->values += (double)n;
}

static double entropy(const double *c, size_t k, double per)
{
	double total = 0, h = 0;
	size_t i;

	for (i = 0; i < k; i++)
		total += c[i];
	for (i = 0; i < k; i++)
		if (c[i] > 0)
			h -= c[i] / total * log2(c[i] / total);
	return h * total / per;
}

/* Encode one tensor as one chunk; adds its counts. */
static size_t encode_tensor(int isa, const float *x, float *e, size_t n,
			    float s, struct counts *ct)
{
	size_t g = gn_tlc_groups(n), used;
	uint8_t *q = bench_alloc(g + 1), *z = bench_alloc(g + 1);
	float m;
	long len;

	if (gn_tlc_quantize_isa(isa, x, e, n, s, q, &m))
		bench_die("quantize failed");
	len = gn_zre_encode_isa(isa, q, g, z, g, &used);
	count_groups(ct, q, n);
	ct->bytes += (double)(GN_TLC_SCALE_BYTES + len);
	free(q);
	free(z);
	return GN_TLC_SCALE_BYTES + (size_t)len;
}

static void ratios(const struct codec_opts *o, struct results *r)
{
	struct bench_tensor t[512];
	size_t nt, k, si;

	nt = bench_manifest("mlp-digits/manifest.tsv", t, 512);
	if (!o->json)
		printf("\n# Per-tensor snapshots (mlp-digits, error buffer zero)\n"
		       "%-6s %-12s %9s %5s %8s %8s %9s\n", "step", "tensor", "elems", "s",
		       "ratio", "bits/val", "H(trit)");
	for (si = 0; si < 4; si++) {
		struct counts all = { 0 };

		for (k = 0; k < nt; k++) {
			struct counts one = { 0 };
			char rel[300];
			size_t n;
			float *x, *e;

			snprintf(rel, sizeof(rel), "mlp-digits/%s", t[k].file);
			x = bench_load_f32(rel, &n);
			if (!x)
				bench_die("cannot read %s", rel);
			e = calloc(n, sizeof(float));
			encode_tensor(o->isa, x, e, n, s_values[si], &one);
			if (!o->json)
				printf("%-6d %-12s %9zu %5.2f %8.1f %8.3f %9.3f\n",
				       t[k].step, t[k].name, n, s_values[si],
				       one.values * 4 / one.bytes,
				       one.bytes * 8 / one.values,
				       entropy(one.trit, 3, one.values));
			for (n = 0; n < 3; n++)
				all.trit[n] += one.trit[n];
			all.values += one.values;
			all.bytes += one.bytes;
			free(x);
			free(e);
		}
		r->snap_ratio[si] = all.values * 4 / all.bytes;
		r->snap_entropy[si] = entropy(all.trit, 3, all.values);
	}

	nt = bench_manifest("mlp-small-seq/manifest.tsv", t, 512);
	for (si = 0; si < 4; si++) {
		struct counts ct = { 0 };
		float *e[16] = { 0 };

		/* Tensors repeat in manifest order each step; one e each. */
		for (k = 0; k < nt; k++) {
			size_t slot = k % 6, n;
			char rel[300];
			float *x;

			snprintf(rel, sizeof(rel), "mlp-small-seq/%s", t[k].file);
			x = bench_load_f32(rel, &n);
			if (!x)
				bench_die("cannot read %s", rel);
			if (!e[slot])
				e[slot] = calloc(n, sizeof(float));
			encode_tensor(o->isa, x, e[slot], n, s_values[si], &ct);
			free(x);
		}
		for (k = 0; k < 16; k++)
			free(e[k]);
		r->steady_ratio[si] = ct.values * 4 / ct.bytes;
		r->steady_bits[si] = ct.bytes * 8 / ct.values;
		r->steady_entropy[si] = entropy(ct.trit, 3, ct.values);
		r->steady_q_entropy[si] = entropy(ct.group, 243, ct.values);
	}
}

/*
 * What chunking costs: the mlp-digits fc2.weight snapshots (1 Mi values
 * each, steps 1, 100, 1000), error feedback carried from one to the next,
 * as one chunk or in chunks of each size; bare chunk streams, s = 1.
 */
static const size_t chunk_sizes[] = { 0, 262144, 65536, 16384, 4096 };
#define NCHUNK_SIZES (sizeof(chunk_sizes) / sizeof(chunk_sizes[0]))

static void chunking(const struct codec_opts *o, double *ratio)
{
	static const char *const files[] = {
		"mlp-digits/mlp-s00001-fc2.weight.f32",
		"mlp-digits/mlp-s00100-fc2.weight.f32",
		"mlp-digits/mlp-s01000-fc2.weight.f32",
	};
	size_t k, f;

	for (k = 0; k < NCHUNK_SIZES; k++) {
		float *e = NULL;
		double raw = 0, bytes = 0;

		for (f = 0; f < 3; f++) {
			size_t n, chunk, at;
			float *x = bench_load_f32(files[f], &n);
			uint8_t *out;

			if (!x)
				bench_die("cannot read %s", files[f]);
			if (!e)
				e = calloc(n, sizeof(float));
			chunk = chunk_sizes[k] ? chunk_sizes[k] : n;
			out = bench_alloc(gn_tlc_encode_bound(chunk));
			for (at = 0; at < n; at += chunk) {
				size_t len = n - at < chunk ? n - at : chunk;
				long r = gn_tlc_encode_isa(o->isa, x + at, e + at, len,
							   1.0f, out,
							   gn_tlc_encode_bound(len));

				if (r < 0)
					bench_die("encode failed");
				bytes += (double)r;
			}
			raw += (double)n * 4;
			free(out);
			free(x);
		}
		ratio[k] = raw / bytes;
		free(e);
	}
}

/*
 * The registry's rows: speeds, the dram tensor's ratio, encode against
 * the registry's 3LC row (measured in the same rounds; else the 3LC row
 * above) and against the STREAM anchors of the same size.
 */
static void print_codecs_text(const struct codec_opts *o,
			      const struct results *r)
{
	const struct bench_codecs *set = &o->codecs;
	const struct bench_speed *tlc = &r->encode;
	const char *ref = "\"3LC encode\" above";
	size_t k;

	for (k = 0; k < set->n; k++)
		if (set->row[k].ops->id == GN_CODEC_3LC) {
			tlc = &set->row[k].encode;
			ref = set->row[k].label;
			break;
		}
	printf("\n# Every codec through the registry, one core: one chunk stream"
	       " per chunk\n# (gn_codec_stream_*), error feedback e_in -> e_out,"
	       " the codecs in turn,\n# each its fastest run; GB/s of float32"
	       " input, c = cache, d = dram\n");
	printf("%-12s %8s %8s %8s %8s %8s %9s %9s %8s %8s\n", "codec",
	       "enc c", "enc d", "dec c", "dec d", "ratio", "enc/3LC c",
	       "enc/3LC d", "enc/STRM", "dec/STRM");
	for (k = 0; k < set->n; k++) {
		const struct bench_codec_row *c = &set->row[k];

		printf("%-12s %8.2f %8.2f %8.2f %8.2f %8.1f %9.2f %9.2f %8.2f %8.2f\n",
		       c->label, c->encode.cache, c->encode.dram,
		       c->decode.cache, c->decode.dram, c->ratio,
		       c->encode.cache / tlc->cache,
		       c->encode.dram / tlc->dram,
		       c->encode.dram / r->stream_enc.dram,
		       c->decode.dram / r->stream_dec.dram);
	}
	printf("# enc/3LC: over %s's encode; enc/STRM, dec/STRM: over STREAM"
	       " e+=x and acc+=k (dram);\n# rows with entropy= cut packets"
	       " for MTU %u\n", ref, set->mtu);
	for (k = 0; k < set->n; k++)
		printf("# %s = %s\n", set->row[k].label, set->row[k].text);
}

static void print_text(const struct codec_opts *o, const struct results *r,
		       size_t cache_n, size_t dram_n)
{
	size_t si;

	printf("\n# Throughput, one core, GB/s of float32 input (isa %s, chunk %zu values)\n",
	       gn_codec_isa_name(o->isa), o->chunk);
	printf("%-34s %10s %10s\n", "", "cache", "dram");
	printf("%-34s %10zu %10zu\n", "input KiB", cache_n * 4 / 1024,
	       dram_n * 4 / 1024);
#define ROW(name, f) printf("%-34s %10.2f %10.2f\n", name, r->f.cache, r->f.dram)
	ROW("3LC encode (ef+quant+quartic+zre)", encode);
	ROW("3LC encode, e_in -> e_out", encode2);
	ROW("3LC decode-accumulate", decode);
	ROW("memcpy", memcpy_);
	ROW("STREAM e[i] += x[i]", stream_enc);
	ROW("STREAM acc[i] += k", stream_dec);
	ROW("zstd -1 compress", zstd_c);
	ROW("zstd -1 decompress", zstd_d);
	ROW("lz4 compress", lz4_c);
	ROW("lz4 decompress", lz4_d);
#undef ROW
	printf("%-34s %10.2f %10.2f\n", "encode / STREAM e+=x",
	       r->encode.cache / r->stream_enc.cache,
	       r->encode.dram / r->stream_enc.dram);
	printf("%-34s %10.2f %10.2f\n", "encode e_in->e_out / STREAM",
	       r->encode2.cache / r->stream_enc.cache,
	       r->encode2.dram / r->stream_enc.dram);
	printf("%-34s %10.2f %10.2f\n", "decode / STREAM acc+=k",
	       r->decode.cache / r->stream_dec.cache,
	       r->decode.dram / r->stream_dec.dram);
	printf("%-34s %10.2f %10.2f\n", "encode / memcpy",
	       r->encode.cache / r->memcpy_.cache,
	       r->encode.dram / r->memcpy_.dram);
	printf("%-34s %10.2f %10.2f\n", "decode / memcpy",
	       r->decode.cache / r->memcpy_.cache,
	       r->decode.dram / r->memcpy_.dram);
	printf("%-34s %10.2f %10s\n", "ratio 3LC s=1 (tiled input)",
	       r->tlc_ratio_dram, "");
	printf("%-34s %10.2f %10s\n", "ratio zstd -1", r->zstd_ratio, "");
	printf("%-34s %10.2f %10s\n", "ratio lz4", r->lz4_ratio, "");
	print_codecs_text(o, r);

	printf("\n# All mlp-digits snapshots together\n%5s %8s %9s\n", "s",
	       "ratio", "H(trit)");
	for (si = 0; si < 4; si++)
		printf("%5.2f %8.1f %9.3f\n", s_values[si], r->snap_ratio[si],
		       r->snap_entropy[si]);
	printf("\n# Chunking: mlp-digits fc2.weight, 3 snapshots, s = 1, bare chunk streams\n"
	       "%12s %8s %12s\n", "chunk", "ratio", "vs 1 chunk");
	for (si = 0; si < NCHUNK_SIZES; si++) {
		char name[32];

		snprintf(name, sizeof(name), "%zu", chunk_sizes[si]);
		printf("%12s %8.1f %11.1f%%\n", chunk_sizes[si] ? name : "whole",
		       r->chunk_ratio[si],
		       100.0 * (r->chunk_ratio[si] / r->chunk_ratio[0] - 1));
	}
	printf("\n# Steady state: mlp-small-seq steps 200-247, error buffer carried\n"
	       "%5s %8s %9s %9s %12s\n", "s", "ratio", "bits/val", "H(trit)",
	       "H(group)/5");
	for (si = 0; si < 4; si++)
		printf("%5.2f %8.2f %9.4f %9.4f %12.4f\n", s_values[si],
		       r->steady_ratio[si], r->steady_bits[si],
		       r->steady_entropy[si], r->steady_q_entropy[si]);
}

static void print_json(const struct codec_opts *o, const struct results *r,
		       size_t cache_n, size_t dram_n)
{
	size_t si;

	printf("{\"isa\": \"%s\", \"chunk\": %zu, \"mtu\": %u, \"cache_bytes\": %zu, \"dram_bytes\": %zu",
	       gn_codec_isa_name(o->isa), o->chunk, o->codecs.mtu, cache_n * 4,
	       dram_n * 4);
#define FIELD(name, f) printf(", \"%s\": {\"cache\": %.4f, \"dram\": %.4f}", name, r->f.cache, r->f.dram)
	FIELD("encode_gbps", encode);
	FIELD("encode_double_buffered_gbps", encode2);
	FIELD("decode_gbps", decode);
	FIELD("memcpy_gbps", memcpy_);
	FIELD("stream_encode_gbps", stream_enc);
	FIELD("stream_decode_gbps", stream_dec);
	FIELD("zstd1_gbps", zstd_c);
	FIELD("zstd1_decompress_gbps", zstd_d);
	FIELD("lz4_gbps", lz4_c);
	FIELD("lz4_decompress_gbps", lz4_d);
#undef FIELD
	printf(", \"zstd1_ratio\": %.4f, \"lz4_ratio\": %.4f", r->zstd_ratio,
	       r->lz4_ratio);
	printf(", \"ratio\": {");
	for (si = 0; si < 4; si++)
		printf("%s\"%.2f\": %.6f", si ? ", " : "", s_values[si],
		       r->steady_ratio[si]);
	printf("}, \"bits_per_value\": {");
	for (si = 0; si < 4; si++)
		printf("%s\"%.2f\": %.6f", si ? ", " : "", s_values[si],
		       r->steady_bits[si]);
	printf("}, \"trit_entropy_bits\": {");
	for (si = 0; si < 4; si++)
		printf("%s\"%.2f\": %.6f", si ? ", " : "", s_values[si],
		       r->steady_entropy[si]);
	printf("}, \"chunk_ratio\": {");
	for (si = 0; si < NCHUNK_SIZES; si++)
		printf("%s\"%zu\": %.4f", si ? ", " : "", chunk_sizes[si],
		       r->chunk_ratio[si]);
	printf("}, \"snapshot_ratio\": {");
	for (si = 0; si < 4; si++)
		printf("%s\"%.2f\": %.4f", si ? ", " : "", s_values[si],
		       r->snap_ratio[si]);
	printf("}, \"codecs\": [");
	for (si = 0; si < o->codecs.n; si++) {
		const struct bench_codec_row *c = &o->codecs.row[si];

		printf("%s{\"label\": \"%s\", \"spec\": \"%s\", \"params\": \"%s\"",
		       si ? ", " : "", c->label, c->spec, c->text);
		printf(", \"encode_gbps\": {\"cache\": %.4f, \"dram\": %.4f}",
		       c->encode.cache, c->encode.dram);
		printf(", \"decode_gbps\": {\"cache\": %.4f, \"dram\": %.4f}",
		       c->decode.cache, c->decode.dram);
		printf(", \"ratio\": %.4f}", c->ratio);
	}
	printf("]}\n");
}

static void usage(void)
{
	fprintf(stderr,
		"usage: gradnet-bench codec [--json] [--isa scalar|avx2|avx512]\n"
		"                           [--dram-mib N] [--chunk N] [--seconds S]\n"
		"                           [--codec LIST]... [--mtu M] [--threads 1,2,...]\n"
		"  --codec: the registry's rows, items SPEC or LABEL=SPEC separated\n"
		"           by commas, the first with parameters taking the rest\n"
		"           (default: every registered codec, and topk-qsgd)\n"
		"  --mtu: the MTU rows with the entropy stage cut packets for\n"
		"         (default 1500)\n"
		"  --threads: instead, the 3LC codec split over\n"
		"                           threads as libgradnet's workers split it;\n"
		"                           --dram-mib default 100)\n"
		"       env GN_DATA_DIR overrides the gradient sample directory\n");
	exit(2);
}

int bench_codec(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "json", no_argument, NULL, 'j' },
		{ "isa", required_argument, NULL, 'i' },
		{ "dram-mib", required_argument, NULL, 'd' },
		{ "chunk", required_argument, NULL, 'c' },
		{ "seconds", required_argument, NULL, 's' },
		{ "threads", required_argument, NULL, 't' },
		{ "codec", required_argument, NULL, 'C' },
		{ "mtu", required_argument, NULL, 'm' },
		{ NULL, 0, NULL, 0 },
	};
	struct codec_opts o = {
		.isa = gn_codec_isa_default(),
		.dram_mib = 512,
		.chunk = 65536,
		.min_seconds = 0.3,
		.codecs.mtu = 1500,
	};
	struct results r = { 0 };
	const char *codec_args[BENCH_MAX_CODECS];
	size_t ncodec_args = 0, k;
	size_t cache_n = 256 * 1024 / sizeof(float), dram_n;
	double zs[2], lz[2], zr, lr, tr;
	int c, dram_set = 0;

	while ((c = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
		switch (c) {
		case 'j':
			o.json = 1;
			break;
		case 'i':
			o.isa = gn_codec_isa_parse(optarg);
			if (o.isa < 0 || !gn_codec_isa_supported(o.isa) ||
			    gn_codec_isa_select(optarg))
				bench_die("instruction set %s not available", optarg);
			break;
		case 'd':
			o.dram_mib = strtoul(optarg, NULL, 0);
			dram_set = 1;
			break;
		case 'c':
			o.chunk = strtoul(optarg, NULL, 0);
			break;
		case 's':
			o.min_seconds = strtod(optarg, NULL);
			break;
		case 't':
			o.threads = optarg;
			break;
		case 'C':
			if (ncodec_args == BENCH_MAX_CODECS)
				bench_die("more than %d --codec options",
					  BENCH_MAX_CODECS);
			codec_args[ncodec_args++] = optarg;
			break;
		case 'm':
			o.codecs.mtu = (unsigned)strtoul(optarg, NULL, 0);
			break;
		default:
			usage();
		}
	}
	if (!o.chunk || !o.dram_mib || o.chunk > 0xffffffffu ||
	    o.codecs.mtu < 576 || o.codecs.mtu > 65535)
		usage();
	/* After the options: the codecs are checked against the chunk. */
	for (k = 0; k < ncodec_args; k++)
		bench_codecs_add(&o.codecs, codec_args[k], o.chunk);
	if (!ncodec_args)
		bench_codecs_default(&o.codecs, o.chunk);
	/* Not pinned: the threads spread over the CPUs. */
	if (o.threads)
		return bench_codec_threads(o.isa, o.threads,
					   (dram_set ? o.dram_mib : 100) * 1048576 / sizeof(float),
					   o.chunk, o.min_seconds, o.json);
	dram_n = o.dram_mib * 1024 * 1024 / sizeof(float);
	/* "cache" is one chunk, at least 256 KiB, encoded again and again. */
	if (cache_n < o.chunk)
		cache_n = o.chunk;
	bench_pin_cpu();

	measure(&o, cache_n, &r.encode.cache, &r.encode2.cache,
		&r.decode.cache, &r.memcpy_.cache, &r.stream_enc.cache,
		&r.stream_dec.cache, zs, lz, &zr, &lr, &tr);
	r.zstd_c.cache = zs[0];
	r.zstd_d.cache = zs[1];
	r.lz4_c.cache = lz[0];
	r.lz4_d.cache = lz[1];
	measure(&o, dram_n, &r.encode.dram, &r.encode2.dram, &r.decode.dram,
		&r.memcpy_.dram, &r.stream_enc.dram, &r.stream_dec.dram, zs,
		lz, &zr, &lr, &tr);
	r.zstd_c.dram = zs[0];
	r.zstd_d.dram = zs[1];
	r.lz4_c.dram = lz[0];
	r.lz4_d.dram = lz[1];
	bench_codecs_measure(&o.codecs, cache_n, o.chunk, o.min_seconds, 0);
	bench_codecs_measure(&o.codecs, dram_n, o.chunk, o.min_seconds, 1);
	r.zstd_ratio = zr;
	r.lz4_ratio = lr;
	r.tlc_ratio_dram = tr;
	ratios(&o, &r);
	chunking(&o, r.chunk_ratio);
	if (o.json)
		print_json(&o, &r, cache_n, dram_n);
	else
		print_text(&o, &r, cache_n, dram_n);
	return 0;
}
