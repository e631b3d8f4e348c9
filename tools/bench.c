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
	fprintf(stderr, "usage: gradnet-bench codec|mac|allreduce|udp [options]\n");
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
	if (!strcmp(argv[1], "mac"))
		return bench_mac(argc - 1, argv + 1);
	if (!strcmp(argv[1], "allreduce"))
		return bench_allreduce(argc - 1, argv + 1);
	if (!strcmp(argv[1], "udp"))
		return bench_udp(argc - 1, argv + 1);
	usage();
	return 2;
}
