// SPDX-License-Identifier: MIT
/*
 * gn-ref.c - the single-process reference of a gradnet-rank job: the
 * result every rank must end with, computed with the codec directly by
 * job_reference() (tests/job.h) from the gradients gradnet-rank feeds in.
 * allreduce_net.sh compares the ranks' results with it, so a bug that
 * gives every rank the same wrong answer still fails.
 *
 * usage: gn-ref --world W --elems N --steps K [--codec SPEC] [--job ID]
 *               [--average] [--data DIR] --out FILE
 * K counts every step gradnet-rank runs, warm-up included.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "job.h"

/* As tools/gradnet-rank.c: the mlp-small-seq samples of steps 200..247,
 * all six tensors back to back; step k of rank r is sample (k + 7r) mod 48,
 * tiled to the tensor size. */
#define SEQ_STEPS 48
#define SEQ_FIRST 200

static const char *const seq_tensors[] = {
	"fc1.weight", "fc1.bias", "fc2.weight", "fc2.bias", "fc3.weight",
	"fc3.bias",
};

struct seq {
	float *step[SEQ_STEPS];
	size_t n;
};

static void die(const char *what, const char *arg)
{
	fprintf(stderr, "gn-ref: %s %s\n", what, arg);
	exit(1);
}

static float *load_step(const char *dir, int step, size_t *n)
{
	float *all = NULL;
	size_t k, have = 0;

	for (k = 0; k < sizeof(seq_tensors) / sizeof(seq_tensors[0]); k++) {
		char path[4352];
		FILE *f;
		long size;

		snprintf(path, sizeof(path), "%s/mlp-small-seq/mlp-small-s%05d-%s.f32",
			 dir, step, seq_tensors[k]);
		f = fopen(path, "rb");
		if (!f || fseek(f, 0, SEEK_END) || (size = ftell(f)) < 0 ||
		    fseek(f, 0, SEEK_SET))
			die("cannot read", path);
		all = realloc(all, have * 4 + (size_t)size);
		if (!all || fread(all + have, 1, (size_t)size, f) != (size_t)size)
			die("cannot read", path);
		have += (size_t)size / 4;
		fclose(f);
	}
	*n = have;
	return all;
}

static void seq_grad(float *x, size_t n, int rank, int t, int step, void *arg)
{
	const struct seq *q = arg;
	const float *src = q->step[(step + 7 * rank) % SEQ_STEPS];
	size_t at;

	(void)t;
	for (at = 0; at < n; at += q->n)
		memcpy(x + at, src, (n - at < q->n ? n - at : q->n) * 4);
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "world", required_argument, NULL, 'w' },
		{ "elems", required_argument, NULL, 'n' },
		{ "steps", required_argument, NULL, 'k' },
		{ "codec", required_argument, NULL, 'c' },
		{ "data", required_argument, NULL, 'd' },
		{ "out", required_argument, NULL, 'o' },
		{ "average", no_argument, NULL, 'a' },
		{ "job", required_argument, NULL, 'j' },
		{ NULL, 0, NULL, 0 },
	};
	char *colon;
	struct job_spec s = { .ntensors = 1, .codec = { GN_CODEC_3LC } };
	const char *data = GN_DATA_DIR, *out = NULL;
	uint64_t hash[JOB_MAX_STEPS];
	struct seq q;
	float *res;
	FILE *f;
	int c, k;

	while ((c = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
		switch (c) {
		case 'w':
			s.world = atoi(optarg);
			break;
		case 'n':
			s.elems[0] = strtoull(optarg, NULL, 0);
			break;
		case 'k':
			s.steps = atoi(optarg);
			break;
		case 'c':
			/* NAME[:KEY=VALUE,...], as gradnet-rank --codec takes it */
			colon = strchr(optarg, ':');
			if (colon)
				*colon = 0;
			s.codec[0] = gn_codec_id(optarg);
			s.params[0] = colon ? colon + 1 : NULL;
			if (s.codec[0] < 0)
				die("unknown codec", optarg);
			break;
		case 'j':
			s.job_id = (uint32_t)strtoul(optarg, NULL, 0);
			break;
		case 'd':
			data = optarg;
			break;
		case 'o':
			out = optarg;
			break;
		case 'a':
			s.flags[0] |= GN_TENSOR_AVERAGE;
			break;
		default:
			return 2;
		}
	}
	if (s.world < 1 || s.world > JOB_MAX_RANKS || !s.elems[0] ||
	    s.steps < 1 || s.steps > JOB_MAX_STEPS || !out) {
		fprintf(stderr, "usage: gn-ref --world W --elems N --steps K (<= %d) [--codec SPEC] [--job ID] [--average] [--data DIR] --out FILE\n",
			JOB_MAX_STEPS);
		return 2;
	}
	for (k = 0; k < SEQ_STEPS; k++)
		q.step[k] = load_step(data, SEQ_FIRST + k, &q.n);
	s.grad = seq_grad;
	s.grad_arg = &q;
	res = malloc(s.elems[0] * sizeof(float));
	if (!res)
		die("out of", "memory");
	job_reference(&s, 0, NULL, hash, res);
	f = fopen(out, "wb");
	if (!f || fwrite(res, 4, s.elems[0], f) != s.elems[0] || fclose(f))
		die("cannot write", out);
	for (k = 0; k < SEQ_STEPS; k++)
		free(q.step[k]);
	free(res);
	return 0;
}
