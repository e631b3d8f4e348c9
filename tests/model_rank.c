// SPDX-License-Identifier: MIT
/*
 * model_rank.c - gn-model-rank: one rank of a model tensor's job, for the
 * model-updating step's tests on every data path. It joins the job the
 * environment describes (GN_RANK, GN_WORLD_SIZE, GN_PEERS, GN_JOB,
 * GN_TRANSPORT=udp, dpdk or kmod, GN_TEST_FAULTS, ...), registers one
 * model tensor and steps it, and prints, flushed line by line:
 *	step STEP 0 HASH	the parameters after STEP: FNV-1a 64, hex
 *	step STEP -ERRNO TEXT	the step failed, and why
 *	retransmits N		from gn_stats_ctx() after the last step
 *	sent STREAM WIRE	the tensor's chunk-stream and wire bytes this
 *				rank sent (gn_stats_tensor()), both directions
 *
 *   gn-model-rank --elems N --up SPEC --down SPEC [--opts OPTS]
 *		   [--steps K] [--lr LR] [--tensor ID] [--nan STEP:RANK]
 *		   [--out FILE]
 *
 * SPEC is a codec as "name:key=value,..." or "default"; OPTS is
 * "dore,momentum=M,weight_decay=L,alpha=A,beta=B,eta=E" (any of them).
 * Step t's learning rate is LR / t. The parameters start, on every rank,
 * and rank r's gradient at step t is, from the generator of
 * <gradnet/codec.h> (tests/model/model_job.py makes the same):
 *	x0[k]  = (u(key(seed(0x6d6f6465, ID, 0, 0, 3), 0), k) - 2^23) * 2^-23
 *	g[k]   = (u(key(seed(0x6d6f6465, ID, t, r, 2), 0), k) - 2^23) * 2^-26
 * --nan puts a NaN into rank RANK's gradient at STEP (value 7). --out
 * writes the final parameters as float32. Exit: 0 when every step that
 * should succeed did, 1 otherwise, 2 on bad usage.
 */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <gradnet/gradnet.h>
#include "codec/rng.h"

#define GEN_JOB 0x6d6f6465u

struct opts {
	size_t elems;
	const char *up, *down, *out;
	int steps, nan_step, nan_rank;
	unsigned int tensor;
	float lr;
	struct gn_model_opts m;
	char up_params[256], down_params[256];
};

static void usage(const char *why)
{
	fprintf(stderr, "gn-model-rank: %s\n"
		"usage: gn-model-rank --elems N --up SPEC --down SPEC [--opts OPTS]\n"
		"       [--steps K] [--lr LR] [--tensor ID] [--nan STEP:RANK] [--out FILE]\n",
		why);
	exit(2);
}

/* "name:params" or "default" into a codec id and its parameters. */
static void codec_of(const char *spec, int *codec, char *params, size_t len,
		     const char **out)
{
	const char *colon = strchr(spec, ':');
	char name[32];

	snprintf(name, sizeof(name), "%.*s",
		 (int)(colon ? (size_t)(colon - spec) : strlen(spec)), spec);
	*codec = strcmp(name, "default") ? gn_codec_id(name) : GN_CODEC_DEFAULT;
	if (*codec < 0)
		usage("unknown codec");
	snprintf(params, len, "%s", colon ? colon + 1 : "");
	*out = colon ? params : NULL;
}

static void parse_opts(struct gn_model_opts *m, char *text)
{
	char *tok, *save = NULL;

	for (tok = strtok_r(text, ",", &save); tok;
	     tok = strtok_r(NULL, ",", &save)) {
		char *eq = strchr(tok, '=');
		float v = eq ? strtof(eq + 1, NULL) : 0;

		if (eq)
			*eq = 0;
		if (!strcmp(tok, "dore"))
			m->flags |= GN_MODEL_DORE;
		else if (!strcmp(tok, "momentum"))
			m->momentum = v;
		else if (!strcmp(tok, "weight_decay"))
			m->weight_decay = v;
		else if (!strcmp(tok, "alpha"))
			m->alpha = v;
		else if (!strcmp(tok, "beta"))
			m->beta = v;
		else if (!strcmp(tok, "eta"))
			m->eta = v;
		else
			usage("unknown option in --opts");
	}
}

static void parse(int argc, char **argv, struct opts *o)
{
	static const struct option lo[] = {
		{ "elems", 1, 0, 'n' }, { "up", 1, 0, 'u' }, { "down", 1, 0, 'd' },
		{ "opts", 1, 0, 'o' }, { "steps", 1, 0, 's' }, { "lr", 1, 0, 'l' },
		{ "tensor", 1, 0, 't' }, { "nan", 1, 0, 'x' }, { "out", 1, 0, 'w' },
		{ 0, 0, 0, 0 },
	};
	int c;

	o->steps = 5;
	o->lr = 0.05f;
	o->tensor = 1;
	o->nan_step = -1;
	o->m.sz = sizeof(o->m);
	while ((c = getopt_long(argc, argv, "", lo, NULL)) != -1) {
		switch (c) {
		case 'n':
			o->elems = strtoull(optarg, NULL, 10);
			break;
		case 'u':
			o->up = optarg;
			break;
		case 'd':
			o->down = optarg;
			break;
		case 'o':
			parse_opts(&o->m, optarg);
			break;
		case 's':
			o->steps = atoi(optarg);
			break;
		case 'l':
			o->lr = strtof(optarg, NULL);
			break;
		case 't':
			o->tensor = (unsigned int)strtoul(optarg, NULL, 0);
			break;
		case 'x':
			if (sscanf(optarg, "%d:%d", &o->nan_step, &o->nan_rank) != 2)
				usage("--nan STEP:RANK");
			break;
		case 'w':
			o->out = optarg;
			break;
		default:
			usage("bad option");
		}
	}
	if (!o->elems || !o->up || !o->down || o->steps < 1)
		usage("--elems, --up and --down are needed");
	codec_of(o->up, &o->m.codec, o->up_params, sizeof(o->up_params),
		 &o->m.params);
	codec_of(o->down, &o->m.down_codec, o->down_params,
		 sizeof(o->down_params), &o->m.down_params);
	o->m.id = o->tensor;
	o->m.elems = o->elems;
}

/* Values (u(k) - 2^23) * 2^-shift of the generator's key for (step, rank, phase). */
static void fill(float *v, size_t n, unsigned int tensor, int step, int rank,
		 int phase, int shift)
{
	u64 key = gn_draw_key(gn_draw_seed(GEN_JOB, tensor, (u32)step, (u32)rank,
					   (u32)phase), 0);
	float scale = ldexpf(1.0f, -shift);
	size_t k;

	for (k = 0; k < n; k++)
		v[k] = (float)((int)gn_draw_u24(key, k) - (1 << 23)) * scale;
}

static u64 fnv(const float *v, size_t n)
{
	const unsigned char *p = (const unsigned char *)v;
	u64 h = 0xcbf29ce484222325ull;
	size_t i;

	for (i = 0; i < n * sizeof(float); i++)
		h = (h ^ p[i]) * 0x100000001b3ull;
	return h;
}

int main(int argc, char **argv)
{
	struct opts o = { 0 };
	struct gn_stats st;
	struct gn_ctx *ctx;
	float *x, *g;
	int r, step, rank, bad = 0;
	FILE *f;

	parse(argc, argv, &o);
	r = gn_ctx_open(NULL, &ctx);
	if (r) {
		printf("open %d %s\n", r, gn_last_errmsg());
		return 1;
	}
	rank = gn_ctx_rank(ctx);
	x = malloc(o.elems * sizeof(float));
	g = malloc(o.elems * sizeof(float));
	if (!x || !g)
		return 1;
	fill(x, o.elems, o.tensor, 0, 0, 3, 23);
	r = gn_model_register(ctx, &o.m);
	if (r) {
		printf("register %d %s\n", r, gn_ctx_errmsg(ctx));
		return 1;
	}
	for (step = 1; step <= o.steps; step++) {
		fill(g, o.elems, o.tensor, step, rank, 2, 26);
		if (step == o.nan_step && rank == o.nan_rank)
			g[7 % o.elems] = NAN;
		r = gn_model_step(ctx, o.tensor, g, x, o.lr / (float)step);
		if (r)
			printf("step %d %d %s\n", step, r, gn_ctx_errmsg(ctx));
		else
			printf("step %d 0 %016llx\n", step,
			       (unsigned long long)fnv(x, o.elems));
		fflush(stdout);
		bad |= r && !(r == -EDOM && step == o.nan_step);
	}
	st.sz = sizeof(st);
	if (!gn_stats_ctx(ctx, &st))
		printf("retransmits %llu\n", (unsigned long long)st.retransmits);
	st.sz = sizeof(st);
	if (!gn_stats_tensor(ctx, o.tensor, &st))
		printf("sent %llu %llu\n", (unsigned long long)st.stream_bytes,
		       (unsigned long long)st.wire_bytes);
	if (o.out) {
		f = fopen(o.out, "wb");
		if (!f || fwrite(x, sizeof(float), o.elems, f) != o.elems ||
		    fclose(f))
			bad = 1;
	}
	gn_ctx_close(ctx);
	free(x);
	free(g);
	return bad;
}
