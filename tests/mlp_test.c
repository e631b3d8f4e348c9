// SPDX-License-Identifier: MIT
/*
 * mlp_test.c - the demo's model: backward pass against central finite
 * differences of an independent double-precision forward pass, bit-identical
 * reruns, data-parallel averaging of slice gradients, and training on the
 * digits data set to a sane accuracy.
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "kselftest_harness.h"
#include "digits.h"
#include "mlp.h"
#include "rng.h"

#define TINY_LAYERS 3
#define TINY_BATCH 3
#define REF_MAX_WIDTH 16

static const unsigned int tiny_width[TINY_LAYERS + 1] = { 5, 7, 6, 4 };

/* Inputs in [0, 1) with some exact zeros, labels below @classes. */
static void fill_batch(struct demo_rng *rng, float *x, uint8_t *y,
		       unsigned int batch, unsigned int features,
		       unsigned int classes)
{
	unsigned int i;

	for (i = 0; i < batch * features; i++)
		x[i] = demo_rng_below(rng, 4) ? (float)demo_rng_unit(rng) : 0.0f;
	for (i = 0; i < batch; i++)
		y[i] = (uint8_t)demo_rng_below(rng, classes);
}

/* Mean cross-entropy of the network given by @p, in double throughout. */
static double ref_loss(const struct mlp *m, double *const *p, const float *x,
		       const uint8_t *y, unsigned int batch)
{
	unsigned int b, l, i, o, iw, ow = m->width[m->layers];
	double a[REF_MAX_WIDTH], z[REF_MAX_WIDTH], max, sum, loss = 0;

	for (b = 0; b < batch; b++) {
		for (i = 0; i < m->width[0]; i++)
			a[i] = x[b * m->width[0] + i];
		for (l = 0; l < m->layers; l++) {
			iw = m->width[l];
			for (o = 0; o < m->width[l + 1]; o++) {
				z[o] = p[2 * l + 1][o];
				for (i = 0; i < iw; i++)
					z[o] += a[i] * p[2 * l][i * m->width[l + 1] + o];
			}
			for (o = 0; o < m->width[l + 1]; o++)
				a[o] = l + 1 < m->layers && z[o] < 0 ? 0 : z[o];
		}
		max = a[0];
		for (o = 1; o < ow; o++)
			max = a[o] > max ? a[o] : max;
		sum = 0;
		for (o = 0; o < ow; o++)
			sum += exp(a[o] - max);
		loss += log(sum) + max - a[y[b]];
	}
	return loss / batch;
}

/* A tiny network with random biases, so their gradients are exercised. */
static int tiny_init(struct mlp *m, struct demo_rng *rng)
{
	unsigned int l;
	size_t i;
	int ret = mlp_init(m, tiny_width, TINY_LAYERS, TINY_BATCH, 7);

	for (l = 0; !ret && l < TINY_LAYERS; l++)
		for (i = 0; i < m->elems[2 * l + 1]; i++)
			m->param[2 * l + 1][i] = (float)demo_rng_gauss(rng, 0.3);
	return ret;
}

TEST(gradient_matches_finite_differences)
{
	const double h = 1e-6, atol = 5e-7, rtol = 1e-5;
	float x[TINY_BATCH * 5];
	uint8_t y[TINY_BATCH];
	struct demo_rng rng = { 11 };
	double *p[2 * TINY_LAYERS], saved, fd, worst = 0, loss;
	unsigned int t, checked = 0;
	struct mlp m;
	size_t i;

	ASSERT_EQ(0, tiny_init(&m, &rng));
	fill_batch(&rng, x, y, TINY_BATCH, 5, 4);
	for (t = 0; t < m.tensors; t++) {
		p[t] = malloc(m.elems[t] * sizeof(double));
		ASSERT_NE(NULL, p[t]);
		for (i = 0; i < m.elems[t]; i++)
			p[t][i] = m.param[t][i];
	}
	loss = ref_loss(&m, p, x, y, TINY_BATCH);
	ASSERT_LT(fabs(mlp_gradient(&m, x, y, TINY_BATCH) - loss),
		  1e-5 * loss);
	for (t = 0; t < m.tensors; t++) {
		for (i = 0; i < m.elems[t]; i++, checked++) {
			saved = p[t][i];
			p[t][i] = saved + h;
			fd = ref_loss(&m, p, x, y, TINY_BATCH);
			p[t][i] = saved - h;
			fd = (fd - ref_loss(&m, p, x, y, TINY_BATCH)) / (2 * h);
			p[t][i] = saved;
			EXPECT_LE(fabs(m.grad[t][i] - fd), atol + rtol * fabs(fd))
				TH_LOG("tensor %u elem %zu: backward %.9g, finite differences %.9g",
				       t, i, m.grad[t][i], fd);
			if (fabs(m.grad[t][i] - fd) > worst)
				worst = fabs(m.grad[t][i] - fd);
		}
	}
	TH_LOG("%u partial derivatives, worst absolute difference %.3g",
	       checked, worst);
	for (t = 0; t < m.tensors; t++)
		free(p[t]);
	mlp_free(&m);
}

/* Run @steps SGD steps on random batches; return the parameters' hash. */
static uint64_t train_random(unsigned int steps, uint64_t seed)
{
	unsigned int width[] = { 64, 32, 32, 10 }, s;
	struct demo_rng rng = { seed + 1 };
	float x[16 * 64];
	uint8_t y[16];
	struct mlp m;
	uint64_t h;

	if (mlp_init(&m, width, 3, 16, seed))
		return 0;
	for (s = 0; s < steps; s++) {
		fill_batch(&rng, x, y, 16, 64, 10);
		mlp_gradient(&m, x, y, 16);
		mlp_sgd(&m, 0.05f, 0.9f, 0.0f);
	}
	h = mlp_hash(&m);
	mlp_free(&m);
	return h;
}

TEST(training_is_bit_identical)
{
	uint64_t a = train_random(100, 3);

	ASSERT_NE(0, a);
	ASSERT_EQ(a, train_random(100, 3));
	ASSERT_NE(a, train_random(100, 4));
	ASSERT_NE(a, train_random(99, 3));
}

/* The mean of two half-batch gradients is the whole batch's gradient. */
TEST(slice_gradients_average_to_batch_gradient)
{
	unsigned int width[] = { 64, 32, 32, 10 }, t;
	struct demo_rng rng = { 5 };
	float x[16 * 64], *half[MLP_MAX_TENSORS];
	uint8_t y[16];
	struct mlp m;
	size_t i;

	ASSERT_EQ(0, mlp_init(&m, width, 3, 16, 9));
	fill_batch(&rng, x, y, 16, 64, 10);
	for (t = 0; t < m.tensors; t++) {
		half[t] = calloc(m.elems[t], sizeof(float));
		ASSERT_NE(NULL, half[t]);
	}
	mlp_gradient(&m, x, y, 8);
	for (t = 0; t < m.tensors; t++)
		memcpy(half[t], m.grad[t], m.elems[t] * sizeof(float));
	mlp_gradient(&m, x + 8 * 64, y + 8, 8);
	for (t = 0; t < m.tensors; t++)
		for (i = 0; i < m.elems[t]; i++)
			half[t][i] = (half[t][i] + m.grad[t][i]) / 2;
	mlp_gradient(&m, x, y, 16);
	for (t = 0; t < m.tensors; t++) {
		for (i = 0; i < m.elems[t]; i++)
			ASSERT_LE(fabsf(half[t][i] - m.grad[t][i]),
				  1e-6f + 1e-5f * fabsf(m.grad[t][i]))
				TH_LOG("tensor %u elem %zu", t, i);
		free(half[t]);
	}
	mlp_free(&m);
}

FIXTURE(digits) {
	struct digits train;
	struct digits test;
};

FIXTURE_SETUP(digits)
{
	struct digits all;
	char err[512];
	unsigned int c, i, in_test[DIGITS_CLASSES] = { 0 };
	unsigned int in_all[DIGITS_CLASSES] = { 0 };

	memset(self, 0, sizeof(*self));
	if (digits_load(DIGITS_PATH, &all, err, sizeof(err)))
		SKIP(return, "%s", err);
	ASSERT_EQ(1797, all.n);
	ASSERT_EQ(0, digits_split(&all, 360, 0, &self->train, &self->test));
	ASSERT_EQ(1437, self->train.n);
	ASSERT_EQ(360, self->test.n);
	for (i = 0; i < all.n; i++)
		in_all[all.y[i]]++;
	for (i = 0; i < self->test.n; i++)
		in_test[self->test.y[i]]++;
	/* Stratified: every class in proportion, to within one image. */
	for (c = 0; c < DIGITS_CLASSES; c++)
		ASSERT_LE(fabs(in_test[c] - in_all[c] * 360.0 / all.n), 1.0);
	for (i = 0; i < all.n * DIGITS_FEATURES; i++)
		ASSERT_TRUE(all.x[i] >= 0.0f && all.x[i] <= 1.0f);
	digits_free(&all);
}

FIXTURE_TEARDOWN(digits)
{
	digits_free(&self->train);
	digits_free(&self->test);
}

TEST(missing_digits_file_names_the_package)
{
	struct digits d;
	char err[512];

	ASSERT_EQ(-ENOENT, digits_load("/nonexistent/digits.csv.gz", &d, err,
				       sizeof(err)));
	ASSERT_NE(NULL, strstr(err, DIGITS_PACKAGE));
}

TEST_F(digits, sgd_reaches_90_percent)
{
	unsigned int width[] = { 64, 64, 64, 10 }, step, i, hits;
	struct demo_rng rng = { 1 };
	float x[32 * DIGITS_FEATURES];
	uint8_t y[32];
	struct mlp m;
	uint32_t j;

	ASSERT_EQ(0, mlp_init(&m, width, 3, 32, 1));
	for (step = 0; step < 300; step++) {
		for (i = 0; i < 32; i++) {
			j = demo_rng_below(&rng, self->train.n);
			memcpy(x + i * DIGITS_FEATURES,
			       self->train.x + j * DIGITS_FEATURES,
			       sizeof(float) * DIGITS_FEATURES);
			y[i] = self->train.y[j];
		}
		mlp_gradient(&m, x, y, 32);
		mlp_sgd(&m, 0.05f, 0.9f, 0.0f);
	}
	hits = mlp_correct(&m, self->test.x, self->test.y, self->test.n);
	TH_LOG("test accuracy after 300 steps: %u/%u", hits, self->test.n);
	ASSERT_GT(hits * 100, 90 * self->test.n);
	mlp_free(&m);
}

TEST_HARNESS_MAIN
