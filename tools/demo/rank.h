/* SPDX-License-Identifier: MIT */
/*
 * rank.h - one rank of data-parallel training on the digits: the loop a
 * thread of the in-process demo runs, and the loop each process of the
 * distributed demo will run with a gradnet reducer.
 */
#ifndef GN_DEMO_RANK_H
#define GN_DEMO_RANK_H

#include <stddef.h>
#include <stdint.h>

#include "digits.h"
#include "mlp.h"
#include "reducer.h"

#define DEMO_HIDDEN_LAYERS 2

/*
 * struct demo_cfg - the training run, the same on every rank.
 * @steps: SGD steps
 * @batch: global minibatch; each rank takes @batch / world images of it
 * @hidden: units in each of the DEMO_HIDDEN_LAYERS hidden layers
 * @lr: peak learning rate, decayed to 0 along a half cosine
 * @momentum: SGD momentum
 * @weight_decay: L2 penalty on the weights
 * @seed: fixes initial weights and minibatch order
 * @log_every: rank 0 prints progress every this many steps; 0 never
 * @tag: what rank 0's progress lines start with
 */
struct demo_cfg {
	unsigned int steps;
	unsigned int batch;
	unsigned int hidden;
	float lr;
	float momentum;
	float weight_decay;
	uint64_t seed;
	unsigned int log_every;
	const char *tag;
};

/*
 * struct demo_result - how a rank's training ended.
 * @correct: test images classified right, of @total
 * @hash: mlp_hash() of the final parameters; equal on every rank
 * @params: trainable values
 */
struct demo_result {
	unsigned int correct;
	unsigned int total;
	uint64_t hash;
	size_t params;
};

unsigned int demo_shape(const struct demo_cfg *cfg, unsigned int *width,
			size_t *elems);
int demo_rank_train(const struct demo_cfg *cfg, const struct digits *train,
		    const struct digits *test, unsigned int rank,
		    unsigned int world, struct demo_reducer *red,
		    struct demo_result *res);

#endif /* GN_DEMO_RANK_H */
