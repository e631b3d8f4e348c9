// SPDX-License-Identifier: MIT
/*
 * gradnet-rank.c - one rank of a gradnet job, for benchmarks and network
 * tests: joins the job from the environment (GN_RANK, GN_WORLD_SIZE,
 * GN_PEERS, GN_KEY, ...), allreduces a tensor of real gradient values step
 * after step, and prints what it measured as one JSON object.
 *
 * Between steps a rank only refills its tensor (a copy), so on a shared
 * host one rank's bookkeeping does not slow the other ranks' allreduce.
 * The gradient of step k on rank r is the mlp-small-seq samples of step
 * 200 + (k + 7r) mod 48, all six tensors back to back, tiled to the tensor
 * size: consecutive steps look like training, ranks differ. With
 * --idle-ms it then stays idle that long and reports the CPU time its
 * threads used meanwhile (idle_cpu_s), what a poll loop costs between steps.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include <gradnet/gradnet.h>

#include "paths.h"

/* The id tests/job.h gives a job's first tensor: gn-ref's reference of a
 * codec that draws from the generator is keyed by it. */
#define RANK_TENSOR 100

struct opts {
	size_t elems;
	int steps, warmup;
	int idle_ms;
	int codec;
	const char *params;
	const char *spec;
	float s;
	const char *out;
	const char *data;
	unsigned int flags;
};

static void die(const char *fmt, const char *arg)
{
	fprintf(stderr, "gradnet-rank: ");
	fprintf(stderr, fmt, arg);
	fputc('\n', stderr);
	exit(1);
}

/* CPU seconds this process (every thread) has used so far. */
static double cpu_now(void)
{
	struct rusage ru;

	if (getrusage(RUSAGE_SELF, &ru))
		return 0;
	return (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
	       (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* One step of the sample sequence, all tensors concatenated. */
static float *load_step(const char *dir, int step, size_t *n)
{
	float *all = NULL;
	size_t k, have = 0;

	for (k = 0; k < GN_SAMPLE_TENSORS; k++) {
		char path[PATH_MAX + 256];
		FILE *f;
		long size;

		snprintf(path, sizeof(path), "%s/mlp-small-seq/mlp-small-s%05d-%s.f32",
			 dir, step, gn_sample_tensors[k]);
		f = fopen(path, "rb");
		if (!f)
			die("cannot read %s", path);
		fseek(f, 0, SEEK_END);
		size = ftell(f);
		fseek(f, 0, SEEK_SET);
		all = realloc(all, have * 4 + (size_t)size);
		if (!all || fread(all + have, 1, (size_t)size, f) != (size_t)size)
			die("cannot read %s", path);
		have += (size_t)size / 4;
		fclose(f);
	}
	*n = have;
	return all;
}

static void fill(float *x, size_t n, float *const *seq, size_t seq_n, int rank,
		 int step)
{
	const float *src = seq[(step + 7 * rank) % GN_SEQ_STEPS];
	size_t at;

	for (at = 0; at < n; at += seq_n)
		memcpy(x + at, src, (n - at < seq_n ? n - at : seq_n) * 4);
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* FNV-1a over 32-bit words: fast enough to run once on a big result. */
static uint64_t fnv(const float *v, size_t n)
{
	uint64_t h = 0xcbf29ce484222325ull;
	size_t i;

	for (i = 0; i < n; i++) {
		uint32_t w;

		memcpy(&w, &v[i], sizeof(w));
		h = (h ^ w) * 0x100000001b3ull;
	}
	return h;
}

/*
 * The last field of a failed step's JSON line: what went to and came from
 * each peer, "peers": [...], to tell which link stopped.
 */
static void print_peers(struct gn_ctx *ctx, int rank)
{
	int j, n = 0;

	printf("\"peers\": [");
	for (j = 0; j < gn_ctx_world_size(ctx); j++) {
		GN_OPTS(gn_stats, st);

		if (j == rank || gn_stats_peer(ctx, j, &st))
			continue;
		printf("%s{\"peer\": %d, \"tx_packets\": %llu, \"rx_packets\": %llu, \"retransmits\": %llu, \"ctl_packets\": %llu}",
		       n++ ? ", " : "", j, (unsigned long long)st.tx_packets,
		       (unsigned long long)st.rx_packets,
		       (unsigned long long)st.retransmits,
		       (unsigned long long)st.ctl_packets);
	}
	printf("]}\n");
}

/* The last field of the JSON line: receive drops by reason, "drops": {...}. */
static void print_drops(const struct gn_stats *st)
{
	int i;

	printf("\"drops\": {");
	for (i = 0; i < GN_DROP_COUNT; i++)
		printf("%s\"%s\": %llu", i ? ", " : "", gn_drop_name(i),
		       (unsigned long long)st->drops[i]);
	printf("}}\n");
}

/* The codec as asked for: --codec, else the job's (GN_CODEC, else 3lc). */
static const char *codec_text(const struct opts *o)
{
	const char *env = getenv("GN_CODEC");

	if (o->spec)
		return o->spec;
	return env && *env ? env : "3lc";
}

static void usage(void)
{
	fprintf(stderr,
		"usage: gradnet-rank [--elems N] [--steps K] [--warmup W]\n"
		"                    [--codec SPEC] [--s S] [--average]\n"
		"                    [--out FILE] [--data DIR] [--idle-ms MS]\n"
		"  joins the job described by GN_RANK, GN_WORLD_SIZE, GN_PEERS, GN_KEY\n"
		"  SPEC: NAME[:KEY=VALUE,...], any registered codec (default: the\n"
		"        job's, GN_CODEC, else 3lc); S: 3LC's s\n");
	exit(2);
}

/*
 * --codec NAME[:PARAMS]: the registry's id of NAME, and PARAMS as the
 * tensor's params string, for the library to check against the codec.
 */
static void codec_of(const char *spec, struct opts *o)
{
	const char *colon = strchr(spec, ':');
	size_t n = colon ? (size_t)(colon - spec) : strlen(spec);
	char name[64], known[256];
	size_t at = 0;
	int id;

	if (n >= sizeof(name))
		n = sizeof(name) - 1;
	memcpy(name, spec, n);
	name[n] = 0;
	id = gn_codec_id(name);
	if (id < 0) {
		known[0] = 0;
		for (id = 1; id < 256 && at < sizeof(known); id++)
			if (gn_codec_name(id))
				at += (size_t)snprintf(known + at, sizeof(known) - at,
						       "%s%s", at ? ", " : "",
						       gn_codec_name(id));
		fprintf(stderr, "gradnet-rank: --codec %s: no codec \"%s\" (known: %s)\n",
			spec, name, known);
		exit(2);
	}
	o->codec = id;
	o->params = colon ? colon + 1 : NULL;
	o->spec = spec;
}

static void parse(int argc, char **argv, struct opts *o)
{
	static const struct option longopts[] = {
		{ "elems", required_argument, NULL, 'n' },
		{ "steps", required_argument, NULL, 'k' },
		{ "warmup", required_argument, NULL, 'w' },
		{ "codec", required_argument, NULL, 'c' },
		{ "s", required_argument, NULL, 's' },
		{ "out", required_argument, NULL, 'o' },
		{ "data", required_argument, NULL, 'd' },
		{ "average", no_argument, NULL, 'a' },
		{ "idle-ms", required_argument, NULL, 'i' },
		{ NULL, 0, NULL, 0 },
	};
	int c;

	while ((c = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
		switch (c) {
		case 'n':
			o->elems = strtoull(optarg, NULL, 0);
			break;
		case 'k':
			o->steps = atoi(optarg);
			break;
		case 'w':
			o->warmup = atoi(optarg);
			break;
		case 'c':
			codec_of(optarg, o);
			break;
		case 's':
			o->s = strtof(optarg, NULL);
			break;
		case 'o':
			o->out = optarg;
			break;
		case 'd':
			o->data = optarg;
			break;
		case 'a':
			o->flags |= GN_TENSOR_AVERAGE;
			break;
		case 'i':
			o->idle_ms = atoi(optarg);
			break;
		default:
			usage();
		}
	}
	if (!o->elems || o->steps < 1 || o->warmup < 0 || o->idle_ms < 0)
		usage();
}

int main(int argc, char **argv)
{
	struct opts o = { .elems = 1 << 20, .steps = 5, .warmup = 1 };
	struct gn_tool_paths paths;
	GN_OPTS(gn_stats, st);
	GN_OPTS(gn_stats, st0);
	float *seq[GN_SEQ_STEPS], *x;
	double *sec, cpu = 0, wall = 0, idle_cpu = 0;
	size_t seq_n = 0;
	struct gn_ctx *ctx;
	int k, r, rank, total;
	uint64_t hash = 0;

	if (gn_tool_paths(&paths))
		die("cannot find my own %s", "executable");
	o.data = paths.data;
	parse(argc, argv, &o);
	for (k = 0; k < GN_SEQ_STEPS; k++)
		seq[k] = load_step(o.data, GN_SEQ_FIRST + k, &seq_n);
	r = gn_ctx_open(NULL, &ctx);
	if (r) {
		fprintf(stderr, "gradnet-rank: open: %s: %s\n", gn_strerror(r),
			gn_last_errmsg());
		return 1;
	}
	rank = gn_ctx_rank(ctx);
	{
		GN_OPTS(gn_tensor_opts, t, .id = RANK_TENSOR, .elems = o.elems,
			.codec = o.codec, .s = o.s, .flags = o.flags,
			.params = o.params);

		r = gn_tensor_register(ctx, &t);
		if (r) {
			fprintf(stderr, "gradnet-rank: register: %s\n", gn_ctx_errmsg(ctx));
			return 1;
		}
	}
	x = malloc(o.elems * sizeof(float));
	total = o.warmup + o.steps;
	sec = calloc((size_t)total, sizeof(double));
	if (!x || !sec)
		die("out of %s", "memory");
	for (k = 0; k < total; k++) {
		double t0, c0;

		fill(x, o.elems, seq, seq_n, rank, k);
		/*
		 * The timed steps' packets, wall and CPU time (all threads,
		 * the fill between steps left out): packets/s and CPU/step.
		 */
		if (k == o.warmup)
			gn_stats_ctx(ctx, &st0);
		c0 = cpu_now();
		t0 = now();
		r = gn_allreduce(ctx, RANK_TENSOR, x);
		sec[k] = now() - t0;
		if (k >= o.warmup) {
			wall += sec[k];
			cpu += cpu_now() - c0;
		}
		if (r) {
			printf("{\"rank\": %d, \"step\": %d, \"error\": \"%s\", \"message\": \"%s\", ",
			       rank, k, gn_strerror(r), gn_ctx_errmsg(ctx));
			print_peers(ctx, rank);
			fflush(stdout);
			break;
		}
	}
	if (r)
		goto out;
	/*
	 * --idle-ms: the context open and idle that long after the last step,
	 * as a trainer between steps; the CPU all threads used meanwhile.
	 */
	if (o.idle_ms) {
		struct timespec ts = { o.idle_ms / 1000,
				       (long)(o.idle_ms % 1000) * 1000000 };
		double c0 = cpu_now();

		while (nanosleep(&ts, &ts) && errno == EINTR)
			;
		idle_cpu = cpu_now() - c0;
	}
	hash = fnv(x, o.elems);
	if (o.out) {
		FILE *f = fopen(o.out, "wb");

		if (!f || fwrite(x, 4, o.elems, f) != o.elems || fclose(f))
			die("cannot write %s", o.out);
	}
	gn_stats_ctx(ctx, &st);
	qsort(sec + o.warmup, (size_t)o.steps, sizeof(double), cmp_double);
	printf("{\"rank\": %d, \"world\": %d, \"elems\": %zu, \"steps\": %d, "
	       "\"codec\": \"%s\", \"median_s\": %.6f, \"min_s\": %.6f, \"max_s\": %.6f, "
	       "\"wire_bytes\": %llu, \"stream_bytes\": %llu, \"ctl_bytes\": %llu, \"raw_bytes\": %llu, "
	       "\"tx_packets\": %llu, \"retransmits\": %llu, \"hash\": \"%016llx\", "
	       "\"cpu_s\": %.6f, \"pps\": %.0f, \"idle_cpu_s\": %.6f, ",
	       rank, gn_ctx_world_size(ctx), o.elems, o.steps, codec_text(&o),
	       sec[o.warmup + o.steps / 2], sec[o.warmup],
	       sec[o.warmup + o.steps - 1],
	       (unsigned long long)st.wire_bytes,
	       (unsigned long long)st.stream_bytes,
	       (unsigned long long)st.ctl_bytes,
	       (unsigned long long)st.raw_bytes,
	       (unsigned long long)st.tx_packets,
	       (unsigned long long)st.retransmits, (unsigned long long)hash,
	       cpu / o.steps,
	       wall > 0 ? (double)(st.tx_packets - st0.tx_packets) / wall : 0.0,
	       idle_cpu);
	print_drops(&st);
out:
	gn_ctx_close(ctx);
	for (k = 0; k < GN_SEQ_STEPS; k++)
		free(seq[k]);
	free(x);
	free(sec);
	return !r ? 0 : r == -ETIMEDOUT ? 3 : 1;
}
