// SPDX-License-Identifier: MIT
/*
 * gn_reducer.c - the demo's reducer on libgradnet: each model tensor is a
 * gradnet tensor registered with GN_TENSOR_AVERAGE, and the training loop's
 * "average this gradient over the ranks" is gn_allreduce().
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "gn_reducer.h"

static int gn_allreduce_avg(struct demo_reducer *red, unsigned int t,
			    float *grad)
{
	struct gn_reducer *g = (struct gn_reducer *)red;
	int ret;

	/* The steady state starts at the configured step. */
	if (g->calls++ == g->count_from) {
		g->base.sz = sizeof(g->base);
		gn_stats_ctx(g->ctx, &g->base);
	}
	ret = gn_allreduce(g->ctx, t, grad);
	if (ret)
		fprintf(stderr, "gradnet-demo: rank %d: %s\n",
			gn_ctx_rank(g->ctx), gn_ctx_errmsg(g->ctx));
	return ret;
}

int gn_reducer_open(struct gn_reducer *g, const struct gn_ctx_opts *o,
		    int codec, const size_t *elems, unsigned int tensors,
		    unsigned int count_from_step)
{
	unsigned int t;
	int ret;

	memset(g, 0, sizeof(*g));
	g->red.allreduce_avg = gn_allreduce_avg;
	g->count_from = count_from_step * tensors;
	ret = gn_ctx_open(o, &g->ctx);
	if (ret) {
		fprintf(stderr, "gradnet-demo: rank %d: %s\n", o->rank,
			gn_last_errmsg());
		return ret;
	}
	for (t = 0; t < tensors; t++) {
		GN_OPTS(gn_tensor_opts, to, .id = t, .elems = elems[t],
			.codec = codec, .flags = GN_TENSOR_AVERAGE);

		ret = gn_tensor_register(g->ctx, &to);
		if (ret) {
			fprintf(stderr, "gradnet-demo: %s\n", gn_ctx_errmsg(g->ctx));
			gn_ctx_close(g->ctx);
			return ret;
		}
	}
	return 0;
}

void gn_reducer_traffic(struct gn_reducer *g, struct gn_stats *total,
			struct gn_stats *steady)
{
	unsigned int k;

	total->sz = sizeof(*total);
	gn_stats_ctx(g->ctx, total);
	*steady = *total;
	steady->raw_bytes -= g->base.raw_bytes;
	steady->wire_bytes -= g->base.wire_bytes;
	steady->ctl_bytes -= g->base.ctl_bytes;
	steady->tx_packets -= g->base.tx_packets;
	steady->retransmits -= g->base.retransmits;
	for (k = 0; k < GN_DROP_COUNT; k++)
		steady->drops[k] -= g->base.drops[k];
}

void gn_reducer_close(struct gn_reducer *g)
{
	gn_ctx_close(g->ctx);
	g->ctx = NULL;
}
