// SPDX-License-Identifier: MIT
/*
 * rank.c - a rank's training loop. Every rank draws the same global
 * minibatch sequence from the seed, computes the gradient of its own slice,
 * has the reducer average it over ranks and applies the same update, so
 * all replicas stay bit-identical without exchanging anything else.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rank.h"
#include "rng.h"

/* Minibatch order is drawn apart from the weights, from the same seed. */
#define DEMO_ORDER_SEED 0x6f72646572ull

/* An endless walk through the training set, reshuffled every epoch. */
struct sampler {
	struct demo_rng rng;
	uint32_t *perm;
	uint32_t n;
	uint32_t pos;
};

static uint32_t sampler_next(struct sampler *sp)
{
	uint32_t i;

	if (sp->pos == sp->n) {
		for (i = 0; i < sp->n; i++)
			sp->perm[i] = i;
		demo_rng_shuffle(&sp->rng, sp->perm, sp->n);
		sp->pos = 0;
	}
	return sp->perm[sp->pos++];
}

/* Draw the global batch; copy the images of slice [lo, lo + len) of it. */
static void draw_batch(struct sampler *sp, const struct digits *d,
		       unsigned int batch, unsigned int lo, unsigned int len,
		       float *x, uint8_t *y)
{
	unsigned int i, k;
	uint32_t j;

	for (i = 0; i < batch; i++) {
		j = sampler_next(sp);
		if (i < lo || i >= lo + len)
			continue;
		k = i - lo;
		memcpy(x + (size_t)k * DIGITS_FEATURES,
		       d->x + (size_t)j * DIGITS_FEATURES,
		       DIGITS_FEATURES * sizeof(*x));
		y[k] = d->y[j];
	}
}

static float cosine_lr(const struct demo_cfg *cfg, unsigned int step)
{
	return (float)(0.5 * cfg->lr *
		       (1.0 + cos(M_PI * (double)step / cfg->steps)));
}

/**
 * demo_shape() - the network a configuration trains
 * @cfg: configuration
 * @width: out, DEMO_HIDDEN_LAYERS + 2 layer widths (may be NULL)
 * @elems: out, values of each tensor (may be NULL)
 *
 * Return: the number of tensors.
 */
unsigned int demo_shape(const struct demo_cfg *cfg, unsigned int *width,
			size_t *elems)
{
	unsigned int w[DEMO_HIDDEN_LAYERS + 2], l;

	w[0] = DIGITS_FEATURES;
	for (l = 1; l <= DEMO_HIDDEN_LAYERS; l++)
		w[l] = cfg->hidden;
	w[DEMO_HIDDEN_LAYERS + 1] = DIGITS_CLASSES;
	for (l = 0; l <= DEMO_HIDDEN_LAYERS; l++) {
		if (elems) {
			elems[2 * l] = (size_t)w[l] * w[l + 1];
			elems[2 * l + 1] = w[l + 1];
		}
	}
	if (width)
		memcpy(width, w, sizeof(w));
	return 2 * (DEMO_HIDDEN_LAYERS + 1);
}

static void log_progress(const struct demo_cfg *cfg, struct mlp *m,
			 const struct digits *test, unsigned int step,
			 double loss_sum, unsigned int loss_steps)
{
	unsigned int hits = mlp_correct(m, test->x, test->y, test->n);

	printf("[%s] step %5u/%u  lr %.4f  loss %.4f  test %.2f%%\n",
	       cfg->tag, step, cfg->steps, cosine_lr(cfg, step),
	       loss_sum / loss_steps, 100.0 * hits / test->n);
	fflush(stdout);
}

/* The steps themselves; buffers are allocated, nothing is inside. */
static int train_loop(const struct demo_cfg *cfg, const struct digits *train,
		      const struct digits *test, unsigned int rank,
		      unsigned int world, struct demo_reducer *red,
		      struct mlp *m, struct sampler *sp, float *x, uint8_t *y)
{
	unsigned int slice = cfg->batch / world, step, t, logged = 0;
	double loss_sum = 0;
	int ret;

	for (step = 0; step < cfg->steps; step++) {
		draw_batch(sp, train, cfg->batch, rank * slice, slice, x, y);
		loss_sum += mlp_gradient(m, x, y, slice);
		if (red->allreduce_avg_all) {
			ret = red->allreduce_avg_all(red, m->grad, m->tensors);
			if (ret)
				return ret;
		}
		for (t = 0; !red->allreduce_avg_all && t < m->tensors; t++) {
			ret = red->allreduce_avg(red, t, m->grad[t]);
			if (ret)
				return ret;
		}
		mlp_sgd(m, cosine_lr(cfg, step), cfg->momentum, cfg->weight_decay);
		if (!rank && cfg->log_every && (step + 1) % cfg->log_every == 0) {
			log_progress(cfg, m, test, step + 1, loss_sum,
				     step + 1 - logged);
			loss_sum = 0;
			logged = step + 1;
		}
	}
	return 0;
}

/**
 * demo_rank_train() - train this rank's replica, then test it
 * @cfg: configuration, the same on every rank
 * @train: training set, the same on every rank
 * @test: test set
 * @rank: this rank, 0..@world-1
 * @world: ranks; must divide @cfg->batch
 * @red: this rank's reducer
 * @res: out, test accuracy and a hash of the parameters
 *
 * Return: 0; -EINVAL for a bad configuration; -ENOMEM; or the reducer's
 * error.
 */
int demo_rank_train(const struct demo_cfg *cfg, const struct digits *train,
		    const struct digits *test, unsigned int rank,
		    unsigned int world, struct demo_reducer *red,
		    struct demo_result *res)
{
	unsigned int width[DEMO_HIDDEN_LAYERS + 2], slice, t;
	struct sampler sp = { { cfg->seed ^ DEMO_ORDER_SEED }, NULL, 0, 0 };
	struct mlp m;
	uint8_t *y = NULL;
	float *x = NULL;
	int ret;

	memset(res, 0, sizeof(*res));
	if (!world || rank >= world || !cfg->batch || cfg->batch % world ||
	    !cfg->steps || !train->n)
		return -EINVAL;
	slice = cfg->batch / world;
	demo_shape(cfg, width, NULL);
	ret = mlp_init(&m, width, DEMO_HIDDEN_LAYERS + 1, slice, cfg->seed);
	if (ret)
		return ret;
	ret = -ENOMEM;
	sp.n = sp.pos = train->n;
	sp.perm = malloc(train->n * sizeof(*sp.perm));
	x = malloc((size_t)slice * DIGITS_FEATURES * sizeof(*x));
	y = malloc(slice);
	if (!sp.perm || !x || !y)
		goto out_free;
	ret = train_loop(cfg, train, test, rank, world, red, &m, &sp, x, y);
	if (ret)
		goto out_free;
	res->correct = mlp_correct(&m, test->x, test->y, test->n);
	res->total = test->n;
	res->hash = mlp_hash(&m);
	for (t = 0; t < m.tensors; t++)
		res->params += m.elems[t];
out_free:
	free(y);
	free(x);
	free(sp.perm);
	mlp_free(&m);
	return ret;
}
