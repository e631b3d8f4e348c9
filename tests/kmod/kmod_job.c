// SPDX-License-Identifier: MIT
/*
 * kmod_job.c - one rank of the guest's allreduce jobs, or their reference.
 *
 *   kmod_job rank --tensors SPEC --steps K [--hold STEP:FILE]
 *   kmod_job ref --tensors SPEC --steps K --world W
 *
 * SPEC lists the tensors, comma-separated, each ELEMS:CODEC:OP with CODEC
 * none or 3lc and OP sum or avg; they get ids 100, 101, ...
 *
 * rank joins the job the environment describes (GN_RANK, GN_WORLD_SIZE,
 * GN_PEERS, GN_KEY, GN_TRANSPORT=kmod or udp, ...) through the public API,
 * registers every tensor and, each step, fills them with job_grad()'s
 * gradients, starts all of them and then waits for each: every tensor of a
 * step is in flight at once. It prints, flushed line by line:
 *	started STEP			all tensors of STEP started
 *	hash STEP TENSOR HEX		FNV-1a of the tensor's result
 *	error STEP ERRNO TEXT		the step failed (-ERRNO), and why
 *	retransmits N			from gn_stats_ctx() after the last step
 *	drops source N			packets from no rank of the job, dropped
 * --hold STEP:FILE waits, before starting STEP, until FILE exists (the kill
 * test keeps one rank out of a step so the others stay in it).
 *
 * ref prints the hash lines every rank must print, from job_reference()
 * (tests/job.h: the codec alone, in one process), so a bug that gives all
 * ranks the same wrong result still fails.
 * Exit: 0, 1 on a failed step or open, 2 on bad usage.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "job.h"

struct opts {
	struct job_spec spec;
	int hold_step;
	const char *hold_file;
};

static void usage(const char *why)
{
	fprintf(stderr, "kmod_job: %s\n"
		"usage: kmod_job rank --tensors SPEC --steps K [--hold STEP:FILE]\n"
		"       kmod_job ref --tensors SPEC --steps K --world W [--job ID]\n"
		"  SPEC: ELEMS:CODEC:sum|avg[,...]; CODEC a codec's name, its\n"
		"  parameters after slashes: topk/density=0.01/bits=4\n"
		"  ID: the job id the ranks run with (GN_JOB), which the\n"
		"  reference of a stochastic codec needs\n", why);
	exit(2);
}

/* Each tensor's parameters, "key=value,...", for the job spec. */
static char params[JOB_MAX_TENSORS][128];

static void parse_tensor(struct job_spec *s, char *tok)
{
	char *codec = strchr(tok, ':'), *op, *end, *slash, *p;
	unsigned long long n;
	int k = s->ntensors;

	if (!codec || !(op = strchr(codec + 1, ':')))
		usage("a tensor is ELEMS:CODEC:OP");
	*codec++ = 0;
	*op++ = 0;
	n = strtoull(tok, &end, 10);
	if (*end || !n || k == JOB_MAX_TENSORS)
		usage("bad tensor size, or too many tensors");
	s->elems[k] = n;
	slash = strchr(codec, '/');
	if (slash) {
		*slash = 0;
		snprintf(params[k], sizeof(params[k]), "%s", slash + 1);
		for (p = params[k]; *p; p++)
			*p = *p == '/' ? ',' : *p;
		s->params[k] = params[k];
	}
	s->codec[k] = gn_codec_id(codec);
	if (s->codec[k] < 0)
		usage("unknown codec");
	if (!strcmp(op, "avg"))
		s->flags[k] = GN_TENSOR_AVERAGE;
	else if (strcmp(op, "sum"))
		usage("op is sum or avg");
	s->ntensors++;
}

static void parse(int argc, char **argv, struct opts *o)
{
	static const struct option longopts[] = {
		{ "tensors", required_argument, NULL, 't' },
		{ "steps", required_argument, NULL, 'k' },
		{ "world", required_argument, NULL, 'w' },
		{ "hold", required_argument, NULL, 'h' },
		{ "job", required_argument, NULL, 'j' },
		{ NULL, 0, NULL, 0 },
	};
	char *tok, *save = NULL, *colon;
	int c;

	while ((c = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
		switch (c) {
		case 't':
			for (tok = strtok_r(optarg, ",", &save); tok;
			     tok = strtok_r(NULL, ",", &save))
				parse_tensor(&o->spec, tok);
			break;
		case 'k':
			o->spec.steps = atoi(optarg);
			break;
		case 'w':
			o->spec.world = atoi(optarg);
			break;
		case 'j':
			o->spec.job_id = (uint32_t)strtoul(optarg, NULL, 0);
			break;
		case 'h':
			colon = strchr(optarg, ':');
			if (!colon)
				usage("--hold STEP:FILE");
			o->hold_step = atoi(optarg);
			o->hold_file = colon + 1;
			break;
		default:
			usage("unknown option");
		}
	}
	if (!o->spec.ntensors || o->spec.steps < 1 ||
	    o->spec.steps > JOB_MAX_STEPS)
		usage("--tensors and --steps 1..8 are required");
}

static void hold(const char *file)
{
	while (access(file, F_OK))
		usleep(20000);
}

/* One step: every tensor started, then each waited for. */
static int step_run(struct gn_ctx *ctx, const struct opts *o, float **x,
		    int rank, int step)
{
	const struct job_spec *s = &o->spec;
	int k, r = 0, e;

	for (k = 0; k < s->ntensors; k++) {
		job_grad(x[k], s->elems[k], rank, k, step);
		e = gn_allreduce_start(ctx, 100 + (uint32_t)k, x[k]);
		if (e && !r) {
			printf("error %d %d start: %s\n", step, -e, gn_ctx_errmsg(ctx));
			r = e;
		}
	}
	printf("started %d\n", step);
	for (k = 0; k < s->ntensors; k++) {
		e = gn_allreduce_wait(ctx, 100 + (uint32_t)k);
		if (e) {
			if (!r)
				printf("error %d %d %s\n", step, -e, gn_ctx_errmsg(ctx));
			r = r ? r : e;
			continue;
		}
		printf("hash %d %d %016llx\n", step, k,
		       (unsigned long long)job_fnv(x[k], s->elems[k]));
	}
	return r;
}

static int cmd_rank(const struct opts *o)
{
	const struct job_spec *s = &o->spec;
	float *x[JOB_MAX_TENSORS] = { NULL };
	GN_OPTS(gn_stats, st);
	struct gn_ctx *ctx;
	int k, r, rank, step;

	setvbuf(stdout, NULL, _IOLBF, 0);
	r = gn_ctx_open(NULL, &ctx);	/* the job from the environment */
	if (r) {
		printf("error open %d %s\n", -r, gn_last_errmsg());
		return 1;
	}
	rank = gn_ctx_rank(ctx);
	for (k = 0; !r && k < s->ntensors; k++) {
		GN_OPTS(gn_tensor_opts, t, .id = 100 + (uint32_t)k,
			.elems = s->elems[k], .codec = s->codec[k],
			.flags = s->flags[k], .params = s->params[k]);

		x[k] = malloc(s->elems[k] * sizeof(float));
		r = x[k] ? gn_tensor_register(ctx, &t) : -ENOMEM;
		if (r)
			printf("error register %d %s\n", -r, gn_ctx_errmsg(ctx));
	}
	for (step = 0; !r && step < s->steps; step++) {
		if (step == o->hold_step)
			hold(o->hold_file);
		r = step_run(ctx, o, x, rank, step);
	}
	if (!r && !gn_stats_ctx(ctx, &st)) {
		printf("retransmits %llu\n", (unsigned long long)st.retransmits);
		printf("drops source %llu\n",
		       (unsigned long long)st.drops[GN_DROP_SOURCE]);
	}
	gn_ctx_close(ctx);
	for (k = 0; k < s->ntensors; k++)
		free(x[k]);
	return r ? 1 : 0;
}

static int cmd_ref(const struct opts *o)
{
	const struct job_spec *s = &o->spec;
	uint64_t hash[JOB_MAX_STEPS];
	int k, step;

	if (s->world < 2 || s->world > JOB_MAX_RANKS)
		usage("ref needs --world 2..8");
	for (k = 0; k < s->ntensors; k++) {
		float *res = malloc(s->elems[k] * sizeof(float));

		if (!res)
			return 1;
		job_reference(s, k, NULL, hash, res);
		for (step = 0; step < s->steps; step++)
			printf("hash %d %d %016llx\n", step, k,
			       (unsigned long long)hash[step]);
		free(res);
	}
	return 0;
}

int main(int argc, char **argv)
{
	struct opts o = { .hold_step = -1 };
	const char *cmd = argc > 1 ? argv[1] : "";

	parse(argc - 1, argv + 1, &o);
	if (!strcmp(cmd, "rank"))
		return cmd_rank(&o);
	if (!strcmp(cmd, "ref"))
		return cmd_ref(&o);
	usage("the command is rank or ref");
	return 2;
}
