// SPDX-License-Identifier: MIT
/*
 * bench_model.c - `gradnet-bench model`: the model-updating step
 * (gn_model_step(): the owners apply SGD and send the change) against
 * what it replaces, an allreduce of the gradient (averaged, the same
 * codec) followed by each rank's own SGD step over the whole tensor, in
 * one run on the same ranks: one thread and one context per rank on
 * 127.0.0.1, real gradient values (the mlp-small-seq samples, tiled).
 *
 *   gradnet-bench model [--ranks N] [--elems N] [--steps K] [--warmup K]
 *			 [--codec LABEL=SPEC]... [--json]
 *
 * SPEC is the codec of both directions ("3lc", "none", ...) or "dore"
 * (DORE with its quantizer; its allreduce baseline is QSGD with the same
 * quantizer). For each it prints seconds per step of the slowest rank
 * (the model step; the allreduce; the local SGD pass after it), their
 * ratio, and the bytes each rank sent per step, counted by gradnet.
 */
#include <errno.h>
#include <getopt.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <gradnet/gradnet.h>

#include "bench.h"

#define MAX_RANKS 16
#define MAX_CODECS 8
#define DORE_Q "bits=2,bucket=256,norm=max"

struct method {
	char label[32];
	char spec[96];
	bool dore;
	int codec;		/* without DORE: the codec of SPEC ... */
	const char *params;	/* ... and its parameters, in @spec or NULL */
};

struct job {
	int ranks, steps, warmup;
	size_t elems;
	const struct method *m;
	const float *grad;
	char peers[MAX_RANKS * 32];
	struct gn_ctx *ctx[MAX_RANKS];
	/* per rank: seconds per step, and bytes sent per step */
	double model_s[MAX_RANKS], ar_s[MAX_RANKS], sgd_s[MAX_RANKS];
	double model_b[MAX_RANKS], ar_b[MAX_RANKS];
	int err[MAX_RANKS];
	char msg[MAX_RANKS][160];
};

struct rank_arg {
	struct job *j;
	int rank;
};

/*
 * LABEL and SPEC into @m, the codec resolved here, once, before any rank
 * thread reads it.
 */
static void method_set(struct method *m, const char *label, size_t label_len,
		       const char *spec)
{
	char name[32];
	const char *colon;

	snprintf(m->label, sizeof(m->label), "%.*s", (int)label_len, label);
	snprintf(m->spec, sizeof(m->spec), "%s", spec);
	m->dore = !strcmp(m->spec, "dore");
	if (m->dore)
		return;
	colon = strchr(m->spec, ':');
	snprintf(name, sizeof(name), "%.*s",
		 (int)(colon ? (size_t)(colon - m->spec) : strlen(m->spec)),
		 m->spec);
	m->codec = gn_codec_id(name);
	if (m->codec < 0)
		bench_die("unknown codec %s", name);
	m->params = colon ? colon + 1 : NULL;
}

static uint64_t sent_bytes(struct gn_ctx *ctx)
{
	GN_OPTS(gn_stats, st);

	return gn_stats_ctx(ctx, &st) ? 0 : st.wire_bytes + st.ctl_bytes;
}

static void fail(struct job *j, int rank, int r, const char *what)
{
	j->err[rank] = r;
	snprintf(j->msg[rank], sizeof(j->msg[rank]), "%s: %s", what,
		 gn_ctx_errmsg(j->ctx[rank]));
}

static void *rank_main(void *p)
{
	struct rank_arg *a = p;
	struct job *j = a->j;
	struct gn_ctx *ctx = j->ctx[a->rank];
	size_t n = j->elems, i;
	float *x = bench_alloc(n * sizeof(float));
	float *g = bench_alloc(n * sizeof(float));
	int step, r;
	const float lr = 0.01f;
	double t, sgd = 0;
	uint64_t b0;
	GN_OPTS(gn_model_opts, mo, .id = 1, .elems = n);
	GN_OPTS(gn_tensor_opts, to, .id = 2, .elems = n,
		.flags = GN_TENSOR_AVERAGE);

	r = gn_ctx_join(ctx, j->peers);
	if (r) {
		fail(j, a->rank, r, "join");
		return NULL;
	}
	if (j->m->dore) {
		mo.flags = GN_MODEL_DORE;
		to.codec = GN_CODEC_QSGD;
		to.params = DORE_Q;
	} else {
		mo.codec = mo.down_codec = to.codec = j->m->codec;
		mo.params = to.params = j->m->params;
	}
	r = gn_model_register(ctx, &mo);
	if (!r)
		r = gn_tensor_register(ctx, &to);
	if (r) {
		fail(j, a->rank, r, "register");
		return NULL;
	}
	memset(x, 0, n * sizeof(float));
	for (step = -j->warmup, t = 0, b0 = 0; step < j->steps; step++) {
		if (!step) {
			t = bench_now();
			b0 = sent_bytes(ctx);
		}
		memcpy(g, j->grad, n * sizeof(float));
		r = gn_model_step(ctx, 1, g, x, lr);
		if (r) {
			fail(j, a->rank, r, "model step");
			return NULL;
		}
	}
	j->model_s[a->rank] = (bench_now() - t) / j->steps;
	j->model_b[a->rank] = (double)(sent_bytes(ctx) - b0) / j->steps;
	for (step = -j->warmup; step < j->steps; step++) {
		double t1;

		if (!step) {
			t = bench_now();
			b0 = sent_bytes(ctx);
			sgd = 0;
		}
		memcpy(g, j->grad, n * sizeof(float));
		r = gn_allreduce(ctx, 2, g);
		if (r) {
			fail(j, a->rank, r, "allreduce");
			return NULL;
		}
		t1 = bench_now();
		for (i = 0; i < n; i++)
			x[i] = x[i] - lr * g[i];
		sgd += bench_now() - t1;
	}
	j->ar_s[a->rank] = (bench_now() - t - sgd) / j->steps;
	j->sgd_s[a->rank] = sgd / j->steps;
	j->ar_b[a->rank] = (double)(sent_bytes(ctx) - b0) / j->steps;
	free(x);
	free(g);
	return NULL;
}

static double worst(const double *v, int n)
{
	double m = 0;
	int i;

	for (i = 0; i < n; i++)
		m = v[i] > m ? v[i] : m;
	return m;
}

static double mean(const double *v, int n)
{
	double s = 0;
	int i;

	for (i = 0; i < n; i++)
		s += v[i];
	return s / n;
}

/* One method's job: bind every rank, join them in threads, measure. */
static void run(struct job *j, int json)
{
	struct rank_arg a[MAX_RANKS];
	pthread_t th[MAX_RANKS];
	char addr[64];
	size_t at = 0;
	int r, err;

	for (r = 0; r < j->ranks; r++) {
		GN_OPTS(gn_ctx_opts, o, .rank = r, .world_size = j->ranks,
			.flags = GN_CTX_INSECURE | GN_CTX_RANK,
			.bind_addr = "127.0.0.1", .timeout_ms = 60000);

		err = gn_ctx_bind(&o, &j->ctx[r]);
		if (err || gn_ctx_local_addr(j->ctx[r], addr, sizeof(addr)) < 0)
			bench_die("bind: %s", gn_last_errmsg());
		at += (size_t)snprintf(j->peers + at, sizeof(j->peers) - at,
				       "%s%s", r ? "," : "", addr);
	}
	for (r = 0; r < j->ranks; r++) {
		a[r] = (struct rank_arg){ j, r };
		pthread_create(&th[r], NULL, rank_main, &a[r]);
	}
	for (r = 0; r < j->ranks; r++)
		pthread_join(th[r], NULL);
	for (r = 0; r < j->ranks; r++) {
		if (j->err[r])
			bench_die("%s, rank %d: %s", j->m->label, r, j->msg[r]);
		gn_ctx_close(j->ctx[r]);
	}
	if (json) {
		printf("{\"bench\": \"model\", \"codec\": \"%s\", \"spec\": \"%s\", "
		       "\"ranks\": %d, \"elems\": %zu, \"steps\": %d, "
		       "\"model_s\": %.6f, \"allreduce_s\": %.6f, \"sgd_s\": %.6f, "
		       "\"ratio\": %.3f, \"model_bytes\": %.0f, "
		       "\"allreduce_bytes\": %.0f}\n", j->m->label, j->m->spec,
		       j->ranks, j->elems, j->steps, worst(j->model_s, j->ranks),
		       worst(j->ar_s, j->ranks), worst(j->sgd_s, j->ranks),
		       (worst(j->ar_s, j->ranks) + worst(j->sgd_s, j->ranks)) /
			       worst(j->model_s, j->ranks),
		       mean(j->model_b, j->ranks), mean(j->ar_b, j->ranks));
		return;
	}
	printf("%-10s %8.4f %10.4f %8.4f %7.2fx %12.0f %12.0f\n", j->m->label,
	       worst(j->model_s, j->ranks), worst(j->ar_s, j->ranks),
	       worst(j->sgd_s, j->ranks),
	       (worst(j->ar_s, j->ranks) + worst(j->sgd_s, j->ranks)) /
		       worst(j->model_s, j->ranks),
	       mean(j->model_b, j->ranks), mean(j->ar_b, j->ranks));
}

int bench_model(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "ranks", 1, 0, 'r' }, { "elems", 1, 0, 'n' },
		{ "steps", 1, 0, 's' }, { "warmup", 1, 0, 'w' },
		{ "codec", 1, 0, 'c' }, { "json", 0, 0, 'j' }, { 0, 0, 0, 0 },
	};
	static struct method ms[MAX_CODECS];
	static struct job j;
	int c, k, nm = 0, json = 0;

	j.ranks = 2;
	j.elems = 26214400;
	j.steps = 3;
	j.warmup = 1;
	while ((c = getopt_long(argc, argv, "", lo, NULL)) != -1) {
		switch (c) {
		case 'r':
			j.ranks = atoi(optarg);
			break;
		case 'n':
			j.elems = strtoull(optarg, NULL, 10);
			break;
		case 's':
			j.steps = atoi(optarg);
			break;
		case 'w':
			j.warmup = atoi(optarg);
			break;
		case 'c': {
			const char *eq = strchr(optarg, '=');

			if (nm == MAX_CODECS)
				bench_die("at most %d --codec", MAX_CODECS);
			method_set(&ms[nm++], optarg,
				   eq ? (size_t)(eq - optarg) : strlen(optarg),
				   eq ? eq + 1 : optarg);
			break;
		}
		case 'j':
			json = 1;
			break;
		default:
			bench_die("usage: gradnet-bench model [--ranks N] [--elems N] [--steps K] [--warmup K] [--codec LABEL=SPEC]... [--json]");
		}
	}
	if (j.ranks < 1 || j.ranks > MAX_RANKS || !j.elems || j.steps < 1 ||
	    j.warmup < 0)
		bench_die("--ranks 1..%d, --elems and --steps above 0", MAX_RANKS);
	if (!nm) {
		const char *def[] = { "dore", "3lc", "none" };

		for (nm = 0; nm < 3; nm++)
			method_set(&ms[nm], def[nm], strlen(def[nm]), def[nm]);
	}
	j.grad = bench_tiled_gradients(j.elems);
	if (!json)
		printf("# %d ranks (threads) on 127.0.0.1, %zu floats, %d steps after %d warmup;\n"
		       "# seconds per step of the slowest rank; bytes each rank sent per step\n"
		       "# (data and control); ratio: (allreduce + sgd) / model step\n"
		       "%-10s %8s %10s %8s %8s %12s %12s\n", j.ranks, j.elems,
		       j.steps, j.warmup, "codec", "model_s", "allreduce_s",
		       "sgd_s", "ratio", "model_bytes", "ar_bytes");
	for (k = 0; k < nm; k++) {
		memset(j.err, 0, sizeof(j.err));
		j.m = &ms[k];
		run(&j, json);
		fflush(stdout);
	}
	return 0;
}
