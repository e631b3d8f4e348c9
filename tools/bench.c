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

const char *bench_data_dir(void)
{
	const char *d = getenv("GN_DATA_DIR");

	return d ? d : GN_DATA_DIR;
}

float *bench_load_f32(const char *rel, size_t *n)
{
	char path[4096];
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
	char path[4096], line[512], model[64];
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
 * processes per run, Open MPI. That is a shell script's job; hand over to
 * tools/bench-allreduce.sh with this build's directory.
 */
static int bench_allreduce(int argc, char **argv)
{
	char exe[4096], build[4096], *slash;
	char **args = calloc((size_t)argc + 4, sizeof(char *));
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	int i, k = 0;

	if (n <= 0 || !args)
		bench_die("cannot find my own build directory");
	exe[n] = 0;
	snprintf(build, sizeof(build), "%s", exe);
	for (i = 0; i < 2 && (slash = strrchr(build, '/')); i++)
		*slash = 0;
	args[k++] = GN_BENCH_ALLREDUCE;
	args[k++] = "--build";
	args[k++] = build;
	for (i = 1; i < argc; i++)
		args[k++] = argv[i];
	fflush(stdout);
	execv(GN_BENCH_ALLREDUCE, args);
	bench_die("cannot run %s: %s", GN_BENCH_ALLREDUCE, strerror(errno));
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
	if (isa && gn_codec_isa_set_default(gn_codec_isa_parse(isa)))
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
