// SPDX-License-Identifier: MIT
/*
 * index_round_bench.c - what CLT-k's index round costs, and what it saves:
 * real gradnet jobs on loopback, one process per rank, of top-k and
 * CLT-k at the same density, in turn, for each tensor size and world
 * size. Per codec: the median step time (start to the last rank's wait)
 * and its ratio to top-k's in the same run, and the data wire bytes each
 * rank sends per step. A benchmark, not a test: it prints numbers and the
 * command that made them (meson test --benchmark index-round-bench).
 *
 * usage: index_round_bench [--elems N,N...] [--ranks W,W...]
 *			    [--codecs SPEC,SPEC...] [--steps K] [--rounds R]
 * SPEC as GN_CODEC takes it, ';' between specs when they hold commas
 * (default "topk:density=0.01;cltk:density=0.01"); the first is the
 * baseline of the ratios. Steps of each job after one warm-up step.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <gradnet/gradnet.h>

#define MAX_LIST 8
#define MAX_STEPS 64
#define MAX_RANKS 8

struct result {
	double ms[MAX_RANKS][MAX_STEPS];
	uint64_t wire[MAX_RANKS];
	uint64_t retransmits[MAX_RANKS];
	int rc[MAX_RANKS];
	char msg[MAX_RANKS][256];
};

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Every rank's gradient: a Laplace-like spread, per rank and step. */
static void grad(float *x, size_t n, int rank, int step)
{
	uint64_t s = 0x9e3779b97f4a7c15ull * (uint64_t)(rank * 131 + step + 1);
	size_t i;

	for (i = 0; i < n; i++) {
		double u;

		s ^= s << 13;
		s ^= s >> 7;
		s ^= s << 17;
		u = (double)(s >> 11) * (1.0 / 9007199254740992.0) - 0.5;
		x[i] = (float)((u < 0 ? -1e-3 : 1e-3) * (1.0 + (double)(s % 1000) *
							(u * u) * 40.0));
	}
}

static void rank_main(int rank, int world, const char *peers, size_t n,
		      const char *spec, int steps, struct result *res)
{
	GN_OPTS(gn_ctx_opts, o, .rank = rank, .world_size = world,
		.peers = peers, .timeout_ms = 30000,
		.flags = GN_CTX_INSECURE | GN_CTX_RANK, .job_id = 0x5ca1e);
	GN_OPTS(gn_tensor_opts, t, .id = 1, .elems = n);
	GN_OPTS(gn_stats, st);
	char name[32];
	const char *colon = strchr(spec, ':');
	float *x = malloc(n * sizeof(float)), *g = malloc(n * sizeof(float));
	struct gn_ctx *ctx;
	int step, r;

	snprintf(name, sizeof(name), "%.*s", colon ? (int)(colon - spec) : 31,
		 spec);
	t.codec = gn_codec_id(name);
	t.params = colon ? colon + 1 : NULL;
	r = x && g ? gn_ctx_open(&o, &ctx) : -ENOMEM;
	if (!r)
		r = gn_tensor_register(ctx, &t);
	if (r) {
		res->rc[rank] = r;
		snprintf(res->msg[rank], sizeof(res->msg[rank]), "%s",
			 gn_last_errmsg());
		_exit(0);
	}
	grad(g, n, rank, 0);
	for (step = 0; step <= steps; step++) {
		double t0;

		/* Each step a fresh gradient, copied in before the clock. */
		memcpy(x, g, n * sizeof(float));
		x[step % n] += 1e-4f * (float)step;
		t0 = now();
		r = gn_allreduce(ctx, 1, x);
		if (r) {
			res->rc[rank] = r;
			snprintf(res->msg[rank], sizeof(res->msg[rank]), "%s",
				 gn_ctx_errmsg(ctx));
			break;
		}
		if (step)
			res->ms[rank][step - 1] = (now() - t0) * 1e3;
		if (!step)
			gn_stats_tensor(ctx, 1, &st);
	}
	res->wire[rank] = st.wire_bytes;
	gn_stats_tensor(ctx, 1, &st);
	res->wire[rank] = (st.wire_bytes - res->wire[rank]) / (uint64_t)steps;
	res->retransmits[rank] = st.retransmits;
	gn_ctx_close(ctx);
	_exit(0);
}

/* One job; 0 or the first rank's error. */
static int run_job(size_t n, int world, const char *spec, int steps,
		   struct result *res)
{
	static int calls;
	char peers[512] = "";
	pid_t pid[MAX_RANKS];
	int base = 30000 + (int)((getpid() * 37 + calls++ * 16) % 30000), i;

	memset(res, 0, sizeof(*res));
	for (i = 0; i < world; i++)
		snprintf(peers + strlen(peers), sizeof(peers) - strlen(peers),
			 "%s127.0.0.1:%d", i ? "," : "", base + i);
	for (i = 0; i < world; i++) {
		pid[i] = fork();
		if (!pid[i])
			rank_main(i, world, peers, n, spec, steps, res);
	}
	for (i = 0; i < world; i++)
		waitpid(pid[i], NULL, 0);
	for (i = 0; i < world; i++)
		if (res->rc[i])
			return res->rc[i];
	return 0;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* A step's time: the slowest rank's; the median over the steps. */
static double median_step(const struct result *res, int world, int steps)
{
	double v[MAX_STEPS];
	int s, r;

	for (s = 0; s < steps; s++) {
		v[s] = 0;
		for (r = 0; r < world; r++)
			v[s] = res->ms[r][s] > v[s] ? res->ms[r][s] : v[s];
	}
	qsort(v, (size_t)steps, sizeof(double), cmp_double);
	return v[steps / 2];
}

static int split(char *s, const char *sep, char **out)
{
	int n = 0;
	char *save = NULL, *tok;

	for (tok = strtok_r(s, sep, &save); tok && n < MAX_LIST;
	     tok = strtok_r(NULL, sep, &save))
		out[n++] = tok;
	return n;
}

int main(int argc, char **argv)
{
	char elems_s[256] = "65536,1048576,26214400", ranks_s[64] = "2,4";
	char codecs_s[512] = "topk:density=0.01;cltk:density=0.01";
	char *elems[MAX_LIST], *ranks[MAX_LIST], *codecs[MAX_LIST];
	int steps = 7, rounds = 3, ne, nr, nc, i, a, b, c, k;
	struct result *res = mmap(NULL, sizeof(*res), PROT_READ | PROT_WRITE,
				  MAP_SHARED | MAP_ANONYMOUS, -1, 0);

	for (i = 1; i + 1 < argc; i += 2) {
		if (!strcmp(argv[i], "--elems"))
			snprintf(elems_s, sizeof(elems_s), "%s", argv[i + 1]);
		else if (!strcmp(argv[i], "--ranks"))
			snprintf(ranks_s, sizeof(ranks_s), "%s", argv[i + 1]);
		else if (!strcmp(argv[i], "--codecs"))
			snprintf(codecs_s, sizeof(codecs_s), "%s", argv[i + 1]);
		else if (!strcmp(argv[i], "--steps"))
			steps = atoi(argv[i + 1]);
		else if (!strcmp(argv[i], "--rounds"))
			rounds = atoi(argv[i + 1]);
		else
			break;
	}
	if (i < argc || res == MAP_FAILED || steps < 1 || steps > MAX_STEPS ||
	    rounds < 1) {
		fprintf(stderr, "usage: %s [--elems N,...] [--ranks W,...] [--codecs SPEC;...] [--steps K (1..%d)] [--rounds R]\n",
			argv[0], MAX_STEPS);
		return 2;
	}
	printf("# command:");
	for (i = 0; i < argc; i++)
		printf(" %s", argv[i]);
	printf("\n# loopback, one process a rank, insecure; step time = the slowest rank's start to wait, median of %d steps, best of %d rounds (codecs in turn each round)\n",
	       steps, rounds);
	ne = split(elems_s, ",", elems);
	nr = split(ranks_s, ",", ranks);
	nc = split(codecs_s, ";", codecs);
	printf("%10s %5s %-36s %10s %8s %14s %10s\n", "elems", "ranks", "codec",
	       "step_ms", "ratio", "wire_B/rank", "rtx");
	for (a = 0; a < ne; a++) {
		for (b = 0; b < nr; b++) {
			size_t n = strtoull(elems[a], NULL, 0);
			int w = atoi(ranks[b]);
			double best[MAX_LIST];
			uint64_t wire[MAX_LIST] = { 0 }, rtx[MAX_LIST] = { 0 };

			if (w < 1 || w > MAX_RANKS) {
				fprintf(stderr, "ranks %d: 1 to %d\n", w, MAX_RANKS);
				return 2;
			}
			for (c = 0; c < nc; c++)
				best[c] = 1e30;
			for (k = 0; k < rounds; k++) {
				for (c = 0; c < nc; c++) {
					int r = run_job(n, w, codecs[c], steps, res), j;
					double m;

					if (r) {
						for (j = 0; j < w && !res->rc[j]; j++)
							;
						fprintf(stderr, "%s on %d ranks: %s\n",
							codecs[c], w, res->msg[j]);
						return 1;
					}
					m = median_step(res, w, steps);
					best[c] = m < best[c] ? m : best[c];
					wire[c] = 0;
					for (j = 0; j < w; j++) {
						wire[c] += res->wire[j];
						rtx[c] += res->retransmits[j];
					}
					wire[c] /= (uint64_t)w;
				}
			}
			for (c = 0; c < nc; c++)
				printf("%10zu %5d %-36s %10.3f %8.3f %14llu %10llu\n",
				       n, w, codecs[c], best[c], best[c] / best[0],
				       (unsigned long long)wire[c],
				       (unsigned long long)rtx[c]);
			fflush(stdout);
		}
	}
	return 0;
}
