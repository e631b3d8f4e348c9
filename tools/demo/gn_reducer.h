/* SPDX-License-Identifier: MIT */
/*
 * gn_reducer.h - the demo's reducer on libgradnet (gn_reducer.c).
 */
#ifndef GN_DEMO_GN_REDUCER_H
#define GN_DEMO_GN_REDUCER_H

#include <stdbool.h>
#include <stdint.h>

#include <gradnet/gradnet.h>

#include "mlp.h"
#include "reducer.h"

/*
 * struct gn_reducer - a rank's gradnet context as a demo reducer.
 * @red: the hook the training loop calls (first member: it is cast back)
 * gn_reducer_open()'s @bucket: 0 for a tensor each, else nonzero, with
 * GN_BUCKET_SHARED_SCALE for a bucket whose chunks may span tensors.
 * @ctx: the context: one bucket of the model's tensors (id 1000), or one
 *	tensor per model tensor (ids 0..tensors-1)
 * @tensors, @elems: the model's tensors and their sizes
 * @flat: the bucket's buffer, the tensors back to back (NULL without)
 * @calls: allreduces so far
 * @count_from: the call from which traffic counts as steady state
 * @base: the counters at that call
 */
struct gn_reducer {
	struct demo_reducer red;
	struct gn_ctx *ctx;
	unsigned int tensors;
	size_t elems[MLP_MAX_TENSORS];
	float *flat;
	unsigned int calls;
	unsigned int count_from;
	struct gn_stats base;
};

int gn_reducer_open(struct gn_reducer *g, const struct gn_ctx_opts *o,
		    int codec, const size_t *elems, unsigned int tensors,
		    unsigned int count_from_step, unsigned int bucket);
void gn_reducer_traffic(struct gn_reducer *g, struct gn_stats *total,
			struct gn_stats *steady);
void gn_reducer_close(struct gn_reducer *g);

#endif /* GN_DEMO_GN_REDUCER_H */
