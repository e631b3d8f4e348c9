// SPDX-License-Identifier: MIT
/*
 * bench.c - gradnet-bench: the benchmark driver. Benchmarks print numbers
 * and the command that produced them; they assert nothing.
 */
#include <errno.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <gradnet/codec.h>

#include "bench.h"
#include "paths.h"

double bench_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

void bench_die(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	fputs("gradnet-bench: ", stderr);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
	exit(1);
}

/* Page-aligned and touched, so first-touch faults stay out of the timing. */
void *bench_alloc(size_t bytes)
{
	void *p = NULL;

	if (posix_memalign(&p, 4096, bytes ? bytes : 1))
		bench_die("out of memory (%zu bytes)", bytes);
	memset(p, 0, bytes);
	return p;
}

/* GN_DATA_DIR, else the samples of this build or installation. */
const char *bench_data_dir(void)
{
	static struct gn_tool_paths p;

	if (!p.data[0] && gn_tool_paths(&p))
		bench_die("cannot find my own executable: %s", strerror(errno));
	return p.data;
}

float *bench_load_f32(const char *rel, size_t *n)
{
	char path[PATH_MAX + 256];
	float *buf;
	long size;
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", bench_data_dir(), rel);
	f = fopen(path, "rb");
	if (!f)
		return NULL;
	if (fseek(f, 0, SEEK_END) || (size = ftell(f)) < 0 ||
	    fseek(f, 0, SEEK_SET)) {
		fclose(f);
		return NULL;
	}
	buf = bench_alloc((size_t)size);
	if (fread(buf, 1, (size_t)size, f) != (size_t)size) {
		fclose(f);
		free(buf);
		return NULL;
	}
	fclose(f);
	*n = (size_t)size / sizeof(float);
	return buf;
}

/* Rows "model step tensor elems file" of a sample manifest. */
size_t bench_manifest(const char *rel, struct bench_tensor *t, size_t max)
{
	char path[PATH_MAX + 256], line[512], model[64];
	size_t k = 0;
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", bench_data_dir(), rel);
	f = fopen(path, "r");
	if (!f)
		bench_die("cannot read %s", path);
	while (k < max && fgets(line, sizeof(line), f))
		if (sscanf(line, "%63s %d %63s %zu %127s", model, &t[k].step,
			   t[k].name, &t[k].elems, t[k].file) == 5)
			k++;
	fclose(f);
	return k;
}

/* Input for the throughput runs: real gradients tiled to @n values. */
float *bench_tiled_gradients(size_t n)
{
	static const char *const files[] = {
		"mlp-digits/mlp-s00001-fc2.weight.f32",
		"mlp-digits/mlp-s00100-fc2.weight.f32",
		"mlp-digits/mlp-s01000-fc2.weight.f32",
	};
	float *x = bench_alloc(n * sizeof(float)), *src[3];
	size_t len[3], k, at = 0;

	for (k = 0; k < 3; k++) {
		src[k] = bench_load_f32(files[k], &len[k]);
		if (!src[k])
			bench_die("cannot read %s/%s", bench_data_dir(), files[k]);
	}
	for (k = 0; at < n; k = (k + 1) % 3) {
		size_t take = n - at < len[k] ? n - at : len[k];

		memcpy(x + at, src[k], take * sizeof(float));
		at += take;
	}
	for (k = 0; k < 3; k++)
		free(src[k]);
	return x;
}

/* The baselines get the widest vector unit the CPU has, like the codec. */
__attribute__((target_clones("avx512f", "avx2", "default")))
void bench_stream_add(float *e, const float *x, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		e[i] += x[i];
}

__attribute__((target_clones("avx512f", "avx2", "default")))
void bench_stream_addk(float *acc, float k, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		acc[i] += k;
}

/* @b set up for @n values of @x in chunks of @chunk; dies without memory. */
void bench_enc_init(struct bench_enc *b, int isa, const float *x,
		    float *e_in, float *e_out, size_t n, size_t chunk)
{
	*b = (struct bench_enc){
		.isa = isa, .n = n, .chunk = chunk, .x = x,
		.e_in = e_in, .e_out = e_out,
		.chunks = gn_tlc_chunk_count(n, chunk),
		.stride = gn_tlc_groups(chunk),
		.bound = gn_tlc_encode_bound(chunk),
	};
	b->quartic = bench_alloc(b->chunks * b->stride);
	b->m = bench_alloc(b->chunks * sizeof(float));
	b->buf = bench_alloc(b->chunks * b->bound);
	b->len = bench_alloc(b->chunks * sizeof(size_t));
}

void bench_enc_free(struct bench_enc *b)
{
	free(b->quartic);
	free(b->m);
	free(b->buf);
	free(b->len);
}

/* The next step reads the error this one wrote. */
void bench_enc_swap(struct bench_enc *b)
{
	float *e = b->e_in;

	b->e_in = b->e_out;
	b->e_out = e;
}

size_t bench_enc_parts(const struct bench_enc *b)
{
	return (b->chunks + BENCH_ENCODE_BATCH - 1) / BENCH_ENCODE_BATCH;
}

/*
 * Part @part of @b's tensor, BENCH_ENCODE_BATCH chunks, as libgradnet's
 * encoder does it (lib/collective/spread.c): one quantizer call for the
 * part, then each chunk zero-run encoded behind its scale while its group
 * bytes are still in cache. A double-buffered error is streamed where
 * libgradnet streams it (gn_tlc_nt_flags(), lib/collective/fp.c).
 */
void bench_encode_part(const struct bench_enc *b, size_t part)
{
	size_t k0 = part * BENCH_ENCODE_BATCH, k;
	size_t k1 = k0 + BENCH_ENCODE_BATCH < b->chunks ?
			    k0 + BENCH_ENCODE_BATCH : b->chunks;
	size_t at = k0 * b->chunk, end = k1 * b->chunk < b->n ? k1 * b->chunk :
								b->n;
	unsigned int flags = b->e_out != b->e_in ? gn_tlc_nt_flags(b->n) : 0;
	int r = gn_tlc_quantize_chunks_ex(b->isa, b->x + at, b->e_in + at,
					  b->e_out + at, end - at, b->chunk,
					  1.0f, flags,
					  b->quartic + k0 * b->stride,
					  b->m + k0);

	if (r)
		bench_die("quantize: %s", strerror(-r));
	for (k = k0; k < k1; k++) {
		size_t g = gn_tlc_groups(bench_enc_len(b, k)), used;
		uint8_t *out = b->buf + k * b->bound;
		long z;

		memcpy(out, &b->m[k], sizeof(float));
		z = gn_zre_encode_isa(b->isa, b->quartic + k * b->stride, g,
				      out + GN_TLC_SCALE_BYTES, g, &used);
		if (z < 0)
			bench_die("zero-run encode: %s", strerror((int)-z));
		b->len[k] = GN_TLC_SCALE_BYTES + (size_t)z;
	}
}

/* The whole tensor, part after part: returns the encoded bytes. */
size_t bench_encode(const struct bench_enc *b)
{
	size_t p, k, total = 0;

	for (p = 0; p < bench_enc_parts(b); p++)
		bench_encode_part(b, p);
	for (k = 0; k < b->chunks; k++)
		total += b->len[k];
	return total;
}

/* Chunk @k decoded and added to @acc (the whole tensor's accumulator). */
void bench_decode_chunk(const struct bench_enc *b, size_t k, float *acc)
{
	int r = gn_tlc_decode_isa(b->isa, b->buf + k * b->bound, b->len[k],
				  acc + k * b->chunk, bench_enc_len(b, k));

	if (r)
		bench_die("decode: %s", strerror(-r));
}

/* One core, the same one every run. */
void bench_pin_cpu(void)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(0, &set);
	sched_setaffinity(0, sizeof(set), &set);
}

/*
 * `gradnet-bench allreduce` is orchestration: namespaces, tc, several
 * processes per run, Open MPI. That is a shell script's job: hand over to
 * bench-allreduce.sh (tools/ in the source tree, libexecdir once
 * installed) with the paths of the programs it runs.
 */
static int bench_allreduce(int argc, char **argv)
{
	static char script[PATH_MAX + 32], rank[PATH_MAX + 32];
	static char mpi[PATH_MAX + 32], loss[PATH_MAX + 32];
	char **args = calloc((size_t)argc + 8, sizeof(char *));
	struct gn_tool_paths p;
	int i, k = 0;

	if (!args || gn_tool_paths(&p))
		bench_die("cannot find my own executable");
	snprintf(script, sizeof(script), "%s/bench-allreduce.sh", p.libexec);
	snprintf(rank, sizeof(rank), "%s/gradnet-rank", p.bindir);
	if (p.build_tree) {
		snprintf(mpi, sizeof(mpi), "%s/mpi-allreduce", p.bindir);
		snprintf(loss, sizeof(loss), "%s/../tests/net/gn-loss", p.bindir);
	} else {
		snprintf(mpi, sizeof(mpi), "%s/mpi-allreduce", p.libexec);
		snprintf(loss, sizeof(loss), "%s/gn-loss", p.libexec);
	}
	args[k++] = script;
	args[k++] = "--rank-bin";
	args[k++] = rank;
	args[k++] = "--mpi-bin";
	args[k++] = mpi;
	args[k++] = "--loss-bin";
	args[k++] = loss;
	for (i = 1; i < argc; i++)
		args[k++] = argv[i];
	fflush(stdout);
	execv(script, args);
	bench_die("cannot run %s: %s", script, strerror(errno));
}

static void usage(void)
{
	fprintf(stderr, "usage: gradnet-bench codec|seal|allreduce|udp|model [options]\n");
	exit(2);
}

int main(int argc, char **argv)
{
	const char *isa = getenv("GN_CODEC_ISA");
	int i;

	if (argc < 2)
		usage();
	if (gn_codec_isa_select(isa))
		bench_die("GN_CODEC_ISA=%s: not an instruction set this CPU runs", isa);
	printf("# command:");
	for (i = 0; i < argc; i++)
		printf(" %s", argv[i]);
	printf("\n");
	if (!strcmp(argv[1], "codec"))
		return bench_codec(argc - 1, argv + 1);
	if (!strcmp(argv[1], "seal"))
		return bench_seal(argc - 1, argv + 1);
	if (!strcmp(argv[1], "allreduce"))
		return bench_allreduce(argc - 1, argv + 1);
	if (!strcmp(argv[1], "udp"))
		return bench_udp(argc - 1, argv + 1);
	if (!strcmp(argv[1], "model"))
		return bench_model(argc - 1, argv + 1);
	usage();
	return 2;
}
