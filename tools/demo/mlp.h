/* SPDX-License-Identifier: MIT */
/*
 * mlp.h - a small multilayer perceptron in float32: dense layers with ReLU
 * between them, softmax cross-entropy at the end, minibatch forward and
 * backward passes and SGD with momentum. Deterministic: the same seed and
 * inputs give bit-identical parameters, on one thread, with no allocation
 * after mlp_init().
 *
 * Tensors. Layer l (0-based) owns two tensors, each one contiguous float
 * array, so each can be handed to an allreduce on its own:
 *	tensor 2l:     weights, width[l] x width[l+1], row-major: W[i][o] is
 *	               element i * width[l+1] + o (input i, output o)
 *	tensor 2l + 1: biases, width[l+1]
 * param[t], grad[t] and velocity[t] are the tensor's values, gradient and
 * momentum buffer, elems[t] values each, 64-byte aligned.
 */
#ifndef GN_DEMO_MLP_H
#define GN_DEMO_MLP_H

#include <stddef.h>
#include <stdint.h>

#define MLP_MAX_LAYERS 4
#define MLP_MAX_TENSORS (2 * MLP_MAX_LAYERS)
#define MLP_MAX_WIDTH 4096

/*
 * struct mlp - a network and its workspace.
 * @layers: dense layers
 * @width: width[0] inputs, width[1..layers-1] hidden units, width[layers]
 *	classes
 * @max_batch: the most images one call may take
 * @tensors: 2 * @layers
 * @param, @grad, @velocity, @elems: per tensor, see above
 * @act: act[l] is the input of layer l for the last batch (act[0] unused,
 *	the caller's images are read in place); act[layers] holds the
 *	softmax probabilities
 * @delta: two batch x max-width buffers for the backward pass
 * @mem: the one allocation behind everything above
 */
struct mlp {
	unsigned int layers;
	unsigned int width[MLP_MAX_LAYERS + 1];
	unsigned int max_batch;
	unsigned int tensors;
	float *param[MLP_MAX_TENSORS];
	float *grad[MLP_MAX_TENSORS];
	float *velocity[MLP_MAX_TENSORS];
	size_t elems[MLP_MAX_TENSORS];
	float *act[MLP_MAX_LAYERS + 1];
	float *delta[2];
	void *mem;
};

int mlp_init(struct mlp *m, const unsigned int *width, unsigned int layers,
	     unsigned int max_batch, uint64_t seed);
void mlp_free(struct mlp *m);
float mlp_loss(struct mlp *m, const float *x, const uint8_t *y,
	       unsigned int batch);
float mlp_gradient(struct mlp *m, const float *x, const uint8_t *y,
		   unsigned int batch);
void mlp_sgd(struct mlp *m, float lr, float momentum, float weight_decay);
unsigned int mlp_correct(struct mlp *m, const float *x, const uint8_t *y,
			 unsigned int n);
uint64_t mlp_hash(const struct mlp *m);

#endif /* GN_DEMO_MLP_H */
