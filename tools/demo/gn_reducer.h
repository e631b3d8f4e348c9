/* SPDX-License-Identifier: MIT */
/*
 * gn_reducer.h - the demo's reducer on libgradnet (gn_reducer.c).
 */
#ifndef GN_DEMO_GN_REDUCER_H
#define GN_DEMO_GN_REDUCER_H

#include <stdint.h>

#include <gradnet/gradnet.h>

#include "reducer.h"

/*
 * struct gn_reducer - a rank's gradnet context as a demo reducer.
 * @red: the hook the training loop calls (first member: it is cast back)
 * @ctx: the context, one tensor per model tensor (ids 0..tensors-1)
 * @calls: allreduces so far
 * @count_from: the call from which traffic counts as steady state
 * @base: the counters at that call
 */
struct gn_reducer {
	struct demo_reducer red;
	struct gn_ctx *ctx;
	unsigned int calls;
	unsigned int count_from;
	struct gn_stats base;
};

int gn_reducer_open(struct gn_reducer *g, const struct gn_ctx_opts *o,
		    int codec, const size_t *elems, unsigned int tensors,
		    unsigned int count_from_step);
void gn_reducer_traffic(struct gn_reducer *g, struct gn_stats *total,
			struct gn_stats *steady);
void gn_reducer_close(struct gn_reducer *g);

#endif /* GN_DEMO_GN_REDUCER_H */
