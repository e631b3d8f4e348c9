// SPDX-License-Identifier: MIT
/*
 * bench_threads.c - `gradnet-bench codec --threads 1,2,...`: the codec
 * split over threads as libgradnet's codec workers split a step
 * (GN_CODEC_WORKERS): 3LC encode (error feedback double-buffered,
 * quantize, zero runs) in parts of BENCH_ENCODE_BATCH chunks and
 * decode-accumulate by chunk, of a tensor, at each thread
 * count, against the first count of the list in the same run, and
 * against the memory's own speed at that count: the STREAM-style kernels
 * e[i] += x[i] and acc[i] += k, split by chunk. The
 * machine may be shared, so the counts take turns in rounds (each keeps
 * its fastest run), and each row also gives every thread's CPU time over
 * the wall time of its runs, and how busy the whole machine was
 * (/proc/stat) beyond this process.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <gradnet/codec.h>
#include "bench.h"

#define MAX_THREADS 64

enum phase { ENCODE, DECODE, STREAM_ADD, STREAM_ADDK, PHASES };

struct tjob {
	struct bench_enc enc;
	float *acc;
	/* one run: */
	pthread_barrier_t start, end;
	int phase;			/* enum phase, or -1: quit */
	size_t next;			/* next unit (part or chunk) to claim */
	double cpu[MAX_THREADS];	/* seconds per thread, this phase */
};

static double thread_cpu(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/*
 * Unit @k of @phase: a part of BENCH_ENCODE_BATCH chunks when encoding
 * (as libgradnet's workers take them), else one chunk.
 */
static void run_unit(struct tjob *j, int phase, size_t k)
{
	const struct bench_enc *b = &j->enc;
	size_t at = k * b->chunk;

	switch (phase) {
	case ENCODE:
		bench_encode_part(b, k);
		break;
	case DECODE:
		bench_decode_chunk(b, k, j->acc);
		break;
	case STREAM_ADD:	/* reads two streams, writes one: as encode */
		bench_stream_add(j->acc + at, b->x + at, bench_enc_len(b, k));
		break;
	case STREAM_ADDK:	/* reads one, writes it: as decode */
		bench_stream_addk(j->acc + at, 0.5f, bench_enc_len(b, k));
		break;
	}
}

/* Claim units until none is left; returns this thread's CPU seconds. */
static double work(struct tjob *j)
{
	size_t units = j->phase == ENCODE ? bench_enc_parts(&j->enc) :
					    j->enc.chunks;
	double c0 = thread_cpu();
	size_t k;

	while ((k = __atomic_fetch_add(&j->next, 1, __ATOMIC_RELAXED)) < units)
		run_unit(j, j->phase, k);
	return thread_cpu() - c0;
}

struct targ {
	struct tjob *j;
	int id;
};

static void *thread_main(void *p)
{
	struct targ *a = p;
	struct tjob *j = a->j;

	for (;;) {
		pthread_barrier_wait(&j->start);
		if (j->phase < 0)
			return NULL;
		j->cpu[a->id] += work(j);
		pthread_barrier_wait(&j->end);
	}
}

/* One run of @phase on @t threads (the caller is thread 0): wall seconds. */
static double run_once(struct tjob *j, int phase)
{
	double t0;

	j->phase = phase;
	j->next = 0;
	t0 = bench_now();
	pthread_barrier_wait(&j->start);
	j->cpu[0] += work(j);
	pthread_barrier_wait(&j->end);
	return bench_now() - t0;
}

/* CPU jiffies of the whole machine: busy and total. */
static void machine_jiffies(unsigned long long *busy, unsigned long long *total)
{
	unsigned long long v[10] = { 0 };
	FILE *f = fopen("/proc/stat", "r");
	int i;

	*busy = *total = 0;
	if (!f)
		return;
	if (fscanf(f, "cpu %llu %llu %llu %llu %llu %llu %llu %llu %llu %llu",
		   &v[0], &v[1], &v[2], &v[3], &v[4], &v[5], &v[6], &v[7],
		   &v[8], &v[9]) >= 8) {
		for (i = 0; i < 8; i++)
			*total += v[i];
		*busy = *total - v[3] - v[4];	/* less idle and iowait */
	}
	fclose(f);
}

/* One thread count's measurements, summed over the rounds. */
struct row {
	int threads;
	double best[PHASES];		/* fastest run, seconds */
	double cpu[PHASES][MAX_THREADS];	/* CPU seconds */
	double phase_wall[PHASES];	/* wall seconds of all runs */
	long runs[PHASES];
	unsigned long long busy_j, total_j;	/* /proc/stat jiffies */
	double own_cpu, wall;
};

/* Runs of @phase for at least @secs (three at least), summed into @r. */
static void measure_phase(struct tjob *j, int t, int phase, double secs,
			  struct row *r)
{
	double start = bench_now();
	int i, n = 0;

	memset(j->cpu, 0, sizeof(j->cpu));
	while (n < 3 || bench_now() - start < secs) {
		double dt = run_once(j, phase);

		r->best[phase] = dt < r->best[phase] ? dt : r->best[phase];
		r->phase_wall[phase] += dt;
		n++;
		if (phase == ENCODE)
			bench_enc_swap(&j->enc);
	}
	r->runs[phase] += n;
	for (i = 0; i < t; i++) {
		r->cpu[phase][i] += j->cpu[i];
		r->own_cpu += j->cpu[i];
	}
}

/* One round at @t threads: start them, measure both phases, stop them. */
static void measure_threads(struct tjob *j, int t, double secs, struct row *r)
{
	pthread_t th[MAX_THREADS];
	struct targ a[MAX_THREADS];
	unsigned long long b0, t0, b1, t1;
	double w0;
	int i;

	pthread_barrier_init(&j->start, NULL, (unsigned int)t);
	pthread_barrier_init(&j->end, NULL, (unsigned int)t);
	for (i = 1; i < t; i++) {
		a[i] = (struct targ){ j, i };
		if (pthread_create(&th[i], NULL, thread_main, &a[i]))
			bench_die("pthread_create failed");
	}
	r->threads = t;
	machine_jiffies(&b0, &t0);
	w0 = bench_now();
	measure_phase(j, t, ENCODE, secs, r);
	memset(j->acc, 0, j->enc.n * sizeof(float));
	measure_phase(j, t, DECODE, secs, r);
	measure_phase(j, t, STREAM_ADD, secs, r);
	memset(j->acc, 0, j->enc.n * sizeof(float));
	measure_phase(j, t, STREAM_ADDK, secs, r);
	machine_jiffies(&b1, &t1);
	r->wall += bench_now() - w0;
	r->busy_j += b1 - b0;
	r->total_j += t1 - t0;
	j->phase = -1;
	pthread_barrier_wait(&j->start);
	for (i = 1; i < t; i++)
		pthread_join(th[i], NULL);
	pthread_barrier_destroy(&j->start);
	pthread_barrier_destroy(&j->end);
}

static int parse_list(const char *s, int *t, int max)
{
	int n = 0;

	while (*s && n < max) {
		char *end;
		long v = strtol(s, &end, 10);

		if (end == s || v < 1 || v > MAX_THREADS)
			bench_die("--threads: \"%s\" is not a list of counts 1..%d",
				  s, MAX_THREADS);
		t[n++] = (int)v;
		s = *end == ',' ? end + 1 : end;
		if (*end && *end != ',')
			bench_die("--threads: unexpected \"%s\"", end);
	}
	if (!n)
		bench_die("--threads: an empty list");
	return n;
}

#define ROUNDS 8

static double gbps(const struct tjob *j, double seconds)
{
	return (double)(j->enc.n * sizeof(float)) / seconds / 1e9;
}

/* GB per CPU-second of all threads: a core's speed while it runs. */
static double per_cpu(const struct tjob *j, const double *cpu, int t, long runs)
{
	double sum = 0;
	int i;

	for (i = 0; i < t; i++)
		sum += cpu[i];
	return (double)(j->enc.n * sizeof(float)) * (double)runs / sum / 1e9;
}

static double busy_cores(const struct row *r)
{
	return r->total_j ? (double)r->busy_j / (double)r->total_j *
				    (double)sysconf(_SC_NPROCESSORS_ONLN) : 0;
}

static void print_rows(const struct tjob *j, const char *list,
		       const struct row *rows, int nt, size_t enc_bytes, int json)
{
	size_t bytes = j->enc.n * sizeof(float);
	const struct row *r0 = &rows[0];
	int i, k;

	if (json) {
		printf("{\"isa\": \"%s\", \"floats\": %zu, \"chunk\": %zu, \"cpus\": %ld, \"ratio\": %.2f, \"rounds\": %d, \"rows\": [",
		       gn_codec_isa_name(j->enc.isa), j->enc.n, j->enc.chunk,
		       sysconf(_SC_NPROCESSORS_ONLN),
		       (double)bytes / (double)enc_bytes, ROUNDS);
		for (i = 0; i < nt; i++) {
			const struct row *r = &rows[i];

			printf("%s{\"threads\": %d, \"encode_gbps\": %.4f, \"decode_gbps\": %.4f, \"encode_x\": %.3f, \"decode_x\": %.3f, \"encode_gb_per_cpu_s\": %.4f, \"decode_gb_per_cpu_s\": %.4f, \"stream_add_gbps\": %.4f, \"stream_addk_gbps\": %.4f, \"machine_busy_cores\": %.2f, \"own_cores\": %.2f}",
			       i ? ", " : "", r->threads,
			       gbps(j, r->best[ENCODE]), gbps(j, r->best[DECODE]),
			       r0->best[ENCODE] / r->best[ENCODE],
			       r0->best[DECODE] / r->best[DECODE],
			       per_cpu(j, r->cpu[ENCODE], r->threads, r->runs[ENCODE]),
			       per_cpu(j, r->cpu[DECODE], r->threads, r->runs[DECODE]),
			       gbps(j, r->best[STREAM_ADD]),
			       gbps(j, r->best[STREAM_ADDK]),
			       busy_cores(r), r->own_cpu / r->wall);
		}
		printf("]}\n");
		return;
	}
	printf("gradnet-bench codec --threads %s: %zu floats (%.0f MiB), chunks of %zu, %s kernels, %ld CPUs online, ratio %.1fx\n",
	       list, j->enc.n, (double)bytes / 1048576.0, j->enc.chunk,
	       gn_codec_isa_name(j->enc.isa), sysconf(_SC_NPROCESSORS_ONLN),
	       (double)bytes / (double)enc_bytes);
	printf("%d rounds alternate the counts; speeds in GB/s of float input, fastest run; x: against the first row;\n"
	       "per CPU-s: GB per CPU-second of all threads, the speed of a core while it runs;\n"
	       "cpu: each thread's CPU time over the wall time of its runs (1.00: it had a core throughout);\n"
	       "busy: cores the whole machine kept busy meanwhile, of which this process\n\n", ROUNDS);
	printf("| threads | encode GB/s | x | per CPU-s | decode-acc GB/s | x | per CPU-s | cpu per thread, encode | cpu per thread, decode | busy (this process) |\n");
	printf("|---|---|---|---|---|---|---|---|---|---|\n");
	for (i = 0; i < nt; i++) {
		const struct row *r = &rows[i];
		char ec[256] = "", dc[256] = "";

		for (k = 0; k < r->threads && k < 8; k++) {
			snprintf(ec + strlen(ec), sizeof(ec) - strlen(ec), "%s%.2f",
				 k ? " " : "",
				 r->cpu[ENCODE][k] / r->phase_wall[ENCODE]);
			snprintf(dc + strlen(dc), sizeof(dc) - strlen(dc), "%s%.2f",
				 k ? " " : "",
				 r->cpu[DECODE][k] / r->phase_wall[DECODE]);
		}
		printf("| %d | %.2f | %.2fx | %.2f | %.2f | %.2fx | %.2f | %s | %s | %.2f (%.2f) |\n",
		       r->threads, gbps(j, r->best[ENCODE]),
		       r0->best[ENCODE] / r->best[ENCODE],
		       per_cpu(j, r->cpu[ENCODE], r->threads, r->runs[ENCODE]),
		       gbps(j, r->best[DECODE]), r0->best[DECODE] / r->best[DECODE],
		       per_cpu(j, r->cpu[DECODE], r->threads, r->runs[DECODE]),
		       ec, dc, busy_cores(r), r->own_cpu / r->wall);
	}
	printf("\nThe memory's speed at each count (split by chunk, in the same rounds): what scaling can reach\n\n");
	printf("| threads | STREAM e[i] += x[i] GB/s | x | encode / STREAM | STREAM acc[i] += k GB/s | x | decode / STREAM |\n");
	printf("|---|---|---|---|---|---|---|\n");
	for (i = 0; i < nt; i++) {
		const struct row *r = &rows[i];

		printf("| %d | %.2f | %.2fx | %.2f | %.2f | %.2fx | %.2f |\n",
		       r->threads, gbps(j, r->best[STREAM_ADD]),
		       r0->best[STREAM_ADD] / r->best[STREAM_ADD],
		       r->best[STREAM_ADD] / r->best[ENCODE],
		       gbps(j, r->best[STREAM_ADDK]),
		       r0->best[STREAM_ADDK] / r->best[STREAM_ADDK],
		       r->best[STREAM_ADDK] / r->best[DECODE]);
	}
}

/**
 * bench_codec_threads() - the --threads mode of `gradnet-bench codec`
 * @isa: the codec's kernels
 * @list: thread counts, "1,2,4"
 * @n: floats in the tensor
 * @chunk: values per chunk
 * @secs: at least this long per thread count and phase, over all rounds
 * @json: one JSON object instead of the table
 *
 * Return: 0; dies with a message on bad input.
 */
int bench_codec_threads(int isa, const char *list, size_t n, size_t chunk,
			double secs, int json)
{
	struct tjob j;
	struct row rows[16];
	int counts[16], nt, i, k, round;
	size_t bytes = n * sizeof(float), enc_bytes = 0;
	float *x, *ef[2];

	nt = parse_list(list, counts, 16);
	memset(&j, 0, sizeof(j));
	x = bench_tiled_gradients(n);
	ef[0] = bench_alloc(bytes);
	ef[1] = bench_alloc(bytes);
	j.acc = bench_alloc(bytes);
	memset(ef[0], 0, bytes);
	memset(ef[1], 0, bytes);
	bench_enc_init(&j.enc, isa, x, ef[0], ef[1], n, chunk);
	/* Warm up to the error-feedback steady state, on one thread. */
	for (i = 0; i < 3; i++) {
		enc_bytes = bench_encode(&j.enc);
		bench_enc_swap(&j.enc);
	}
	/*
	 * Rounds that alternate the counts, so that each count sees the same
	 * spells of a shared machine; each keeps its fastest run.
	 */
	memset(rows, 0, sizeof(rows));
	for (i = 0; i < nt; i++)
		for (k = 0; k < PHASES; k++)
			rows[i].best[k] = 1e30;
	for (round = 0; round < ROUNDS; round++)
		for (i = 0; i < nt; i++)
			measure_threads(&j, counts[i], secs / ROUNDS, &rows[i]);
	print_rows(&j, list, rows, nt, enc_bytes, json);
	bench_enc_free(&j.enc);
	free(x);
	free(ef[0]);
	free(ef[1]);
	free(j.acc);
	return 0;
}
