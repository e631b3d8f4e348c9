// SPDX-License-Identifier: MIT
/*
 * mlp.c - the multilayer perceptron's passes. Loops keep one fixed order of
 * float operations (the project builds with -ffp-contract=off), so results
 * are bit-identical from run to run; the inner loops are unit-stride so the
 * compiler can vectorize them without reassociating anything.
 */
#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "mlp.h"
#include "rng.h"

/* Every array starts on a 64-byte boundary: 16 floats. */
#define MLP_ALIGN 16
#define DOT_LANES 8

static size_t align_up(size_t n)
{
	return (n + MLP_ALIGN - 1) / MLP_ALIGN * MLP_ALIGN;
}

/* Carve @n floats at *@off from @base; with @base NULL only count them. */
static void carve(float **p, float *base, size_t *off, size_t n)
{
	if (base)
		*p = base + *off;
	*off += align_up(n);
}

static size_t mlp_layout(struct mlp *m, float *base)
{
	unsigned int t, l, wmax = 0;
	size_t off = 0;

	for (t = 0; t < m->tensors; t++) {
		carve(&m->param[t], base, &off, m->elems[t]);
		carve(&m->grad[t], base, &off, m->elems[t]);
		carve(&m->velocity[t], base, &off, m->elems[t]);
	}
	for (l = 1; l <= m->layers; l++) {
		carve(&m->act[l], base, &off, (size_t)m->max_batch * m->width[l]);
		if (m->width[l] > wmax)
			wmax = m->width[l];
	}
	carve(&m->delta[0], base, &off, (size_t)m->max_batch * wmax);
	carve(&m->delta[1], base, &off, (size_t)m->max_batch * wmax);
	return off;
}

/* He (Kaiming) normal weights, std sqrt(2 / fan-in), and zero biases. */
static void mlp_init_params(struct mlp *m, uint64_t seed)
{
	struct demo_rng rng = { seed };
	unsigned int l;
	size_t i;

	for (l = 0; l < m->layers; l++) {
		double sigma = sqrt(2.0 / m->width[l]);
		float *w = m->param[2 * l];

		for (i = 0; i < m->elems[2 * l]; i++)
			w[i] = (float)demo_rng_gauss(&rng, sigma);
	}
}

/**
 * mlp_init() - allocate a network and initialize its parameters
 * @m: out
 * @width: @layers + 1 widths: inputs, hidden layers, classes
 * @layers: dense layers, 1..MLP_MAX_LAYERS
 * @max_batch: the most images one call will take, > 0
 * @seed: fixes the initial weights
 *
 * Gradients and momentum start at zero.
 *
 * Return: 0; -EINVAL for a bad shape; -ENOMEM.
 */
int mlp_init(struct mlp *m, const unsigned int *width, unsigned int layers,
	     unsigned int max_batch, uint64_t seed)
{
	unsigned int l;
	size_t floats;

	memset(m, 0, sizeof(*m));
	if (!layers || layers > MLP_MAX_LAYERS || !max_batch ||
	    max_batch > (1u << 20))
		return -EINVAL;
	for (l = 0; l <= layers; l++)
		if (!width[l] || width[l] > MLP_MAX_WIDTH)
			return -EINVAL;
	m->layers = layers;
	m->tensors = 2 * layers;
	m->max_batch = max_batch;
	memcpy(m->width, width, (layers + 1) * sizeof(*width));
	for (l = 0; l < layers; l++) {
		m->elems[2 * l] = (size_t)width[l] * width[l + 1];
		m->elems[2 * l + 1] = width[l + 1];
	}
	floats = mlp_layout(m, NULL);
	m->mem = aligned_alloc(MLP_ALIGN * sizeof(float),
			       floats * sizeof(float));
	if (!m->mem)
		return -ENOMEM;
	memset(m->mem, 0, floats * sizeof(float));
	mlp_layout(m, m->mem);
	mlp_init_params(m, seed);
	return 0;
}

/**
 * mlp_free() - free a network
 * @m: from mlp_init(), or zeroed
 */
void mlp_free(struct mlp *m)
{
	free(m->mem);
	memset(m, 0, sizeof(*m));
}

/* y[k] += a * x[k] */
static void axpy(float *y, float a, const float *x, unsigned int n)
{
	unsigned int k;

	for (k = 0; k < n; k++)
		y[k] += a * x[k];
}

/* Sum of a[k] * b[k] in DOT_LANES interleaved partial sums, then a tree. */
static float dot(const float *a, const float *b, unsigned int n)
{
	float lane[DOT_LANES] = { 0 };
	unsigned int i, k;

	for (i = 0; i + DOT_LANES <= n; i += DOT_LANES)
		for (k = 0; k < DOT_LANES; k++)
			lane[k] += a[i + k] * b[i + k];
	for (k = 0; i < n; i++, k++)
		lane[k] += a[i] * b[i];
	return ((lane[0] + lane[1]) + (lane[2] + lane[3])) +
	       ((lane[4] + lane[5]) + (lane[6] + lane[7]));
}

/* out = in W + bias for each image, then ReLU if @relu. Zero inputs skip. */
static void dense_forward(const float *in, unsigned int iw, const float *w,
			  const float *bias, float *out, unsigned int ow,
			  unsigned int batch, bool relu)
{
	unsigned int b, i, k;

	for (b = 0; b < batch; b++) {
		const float *x = in + (size_t)b * iw;
		float *o = out + (size_t)b * ow;

		memcpy(o, bias, ow * sizeof(*o));
		for (i = 0; i < iw; i++)
			if (x[i] != 0.0f)
				axpy(o, x[i], w + (size_t)i * ow, ow);
		if (relu)
			for (k = 0; k < ow; k++)
				o[k] = o[k] < 0.0f ? 0.0f : o[k];
	}
}

/* Softmax of each row of @z in place; the mean cross-entropy against @y. */
static float softmax_xent(float *z, const uint8_t *y, unsigned int batch,
			  unsigned int classes)
{
	double loss = 0;
	unsigned int b, k;

	for (b = 0; b < batch; b++) {
		float *p = z + (size_t)b * classes, max = p[0], sum = 0;

		for (k = 1; k < classes; k++)
			max = p[k] > max ? p[k] : max;
		for (k = 0; k < classes; k++) {
			p[k] = expf(p[k] - max);
			sum += p[k];
		}
		for (k = 0; k < classes; k++)
			p[k] /= sum;
		if (y)
			loss -= log((double)p[y[b]] > 1e-30 ? p[y[b]] : 1e-30);
	}
	return (float)(loss / batch);
}

/* The forward pass over one batch; probabilities end in act[layers]. */
static float mlp_forward(struct mlp *m, const float *x, const uint8_t *y,
			 unsigned int batch)
{
	unsigned int l;

	for (l = 0; l < m->layers; l++)
		dense_forward(l ? m->act[l] : x, m->width[l], m->param[2 * l],
			      m->param[2 * l + 1], m->act[l + 1],
			      m->width[l + 1], batch, l + 1 < m->layers);
	return softmax_xent(m->act[m->layers], y, batch, m->width[m->layers]);
}

/**
 * mlp_loss() - mean cross-entropy of a batch, parameters untouched
 * @m: network
 * @x: @batch images of width[0] values
 * @y: @batch labels
 * @batch: 1..max_batch
 *
 * Return: the loss.
 */
float mlp_loss(struct mlp *m, const float *x, const uint8_t *y,
	       unsigned int batch)
{
	return mlp_forward(m, x, y, batch);
}

/* Gradient of the loss with respect to the logits: (p - onehot) / batch. */
static void xent_delta(const float *p, const uint8_t *y, float *dz,
		       unsigned int batch, unsigned int classes)
{
	float inv = 1.0f / (float)batch;
	unsigned int b, k;

	for (b = 0; b < batch; b++)
		for (k = 0; k < classes; k++) {
			size_t i = (size_t)b * classes + k;

			dz[i] = (p[i] - (k == y[b] ? 1.0f : 0.0f)) * inv;
		}
}

/* Weight and bias gradients of one layer from its inputs and output deltas. */
static void dense_grad(const float *in, unsigned int iw, const float *dz,
		       unsigned int ow, unsigned int batch, float *gw, float *gb)
{
	unsigned int b, i;

	memset(gw, 0, (size_t)iw * ow * sizeof(*gw));
	memset(gb, 0, ow * sizeof(*gb));
	for (b = 0; b < batch; b++) {
		const float *x = in + (size_t)b * iw, *d = dz + (size_t)b * ow;

		for (i = 0; i < iw; i++)
			if (x[i] != 0.0f)
				axpy(gw + (size_t)i * ow, x[i], d, ow);
		axpy(gb, 1.0f, d, ow);
	}
}

/*
 * Deltas of the layer below: dz W^T, masked by the ReLU that produced @in
 * (an input of exactly zero had a non-positive pre-activation).
 */
static void dense_backprop(const float *in, unsigned int iw, const float *w,
			   const float *dz, unsigned int ow, unsigned int batch,
			   float *dprev)
{
	unsigned int b, i;

	for (b = 0; b < batch; b++) {
		const float *x = in + (size_t)b * iw, *d = dz + (size_t)b * ow;
		float *dp = dprev + (size_t)b * iw;

		for (i = 0; i < iw; i++)
			dp[i] = x[i] > 0.0f ? dot(w + (size_t)i * ow, d, ow) : 0.0f;
	}
}

/**
 * mlp_gradient() - forward and backward pass over a batch
 * @m: network
 * @x: @batch images of width[0] values
 * @y: @batch labels
 * @batch: 1..max_batch
 *
 * Overwrites grad[] with the gradient of the batch's mean cross-entropy.
 *
 * Return: the loss before any update.
 */
float mlp_gradient(struct mlp *m, const float *x, const uint8_t *y,
		   unsigned int batch)
{
	float loss = mlp_forward(m, x, y, batch), *dz = m->delta[0];
	unsigned int l, cur = 0;

	xent_delta(m->act[m->layers], y, dz, batch, m->width[m->layers]);
	for (l = m->layers; l-- > 0;) {
		const float *in = l ? m->act[l] : x;

		dense_grad(in, m->width[l], dz, m->width[l + 1], batch,
			   m->grad[2 * l], m->grad[2 * l + 1]);
		if (!l)
			break;
		cur ^= 1;
		dense_backprop(in, m->width[l], m->param[2 * l], dz,
			       m->width[l + 1], batch, m->delta[cur]);
		dz = m->delta[cur];
	}
	return loss;
}

/**
 * mlp_sgd() - one SGD step with momentum from grad[]
 * @m: network
 * @lr: learning rate
 * @momentum: velocity decay, 0 for plain SGD
 * @weight_decay: L2 penalty on the weights (not the biases), 0 for none
 *
 * velocity = momentum * velocity + grad + weight_decay * param;
 * param -= lr * velocity. The penalty is added here, after any exchange of
 * grad[], as every replica holds the same parameters.
 */
void mlp_sgd(struct mlp *m, float lr, float momentum, float weight_decay)
{
	unsigned int t;
	size_t i;

	for (t = 0; t < m->tensors; t++) {
		float *p = m->param[t], *v = m->velocity[t];
		const float *g = m->grad[t];
		float wd = t % 2 ? 0.0f : weight_decay;

		for (i = 0; i < m->elems[t]; i++) {
			v[i] = momentum * v[i] + (g[i] + wd * p[i]);
			p[i] -= lr * v[i];
		}
	}
}

static unsigned int argmax(const float *p, unsigned int n)
{
	unsigned int k, best = 0;

	for (k = 1; k < n; k++)
		if (p[k] > p[best])
			best = k;
	return best;
}

/**
 * mlp_correct() - how many of @n images the network classifies right
 * @m: network
 * @x: @n images
 * @y: @n labels
 * @n: images, any number (taken max_batch at a time)
 *
 * Return: the count.
 */
unsigned int mlp_correct(struct mlp *m, const float *x, const uint8_t *y,
			 unsigned int n)
{
	unsigned int done, b, batch, classes = m->width[m->layers], hits = 0;

	for (done = 0; done < n; done += batch) {
		batch = n - done < m->max_batch ? n - done : m->max_batch;
		mlp_forward(m, x + (size_t)done * m->width[0], NULL, batch);
		for (b = 0; b < batch; b++)
			hits += argmax(m->act[m->layers] + (size_t)b * classes,
				       classes) == y[done + b];
	}
	return hits;
}

/**
 * mlp_hash() - FNV-1a of every parameter's bits
 * @m: network
 *
 * Replicas that should be identical compare hashes instead of arrays.
 *
 * Return: the hash.
 */
uint64_t mlp_hash(const struct mlp *m)
{
	uint64_t h = 0xcbf29ce484222325ull;
	unsigned int t;
	size_t i;

	for (t = 0; t < m->tensors; t++) {
		const unsigned char *p = (const unsigned char *)m->param[t];

		for (i = 0; i < m->elems[t] * sizeof(float); i++)
			h = (h ^ p[i]) * 0x100000001b3ull;
	}
	return h;
}
