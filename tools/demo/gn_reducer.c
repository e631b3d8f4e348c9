// SPDX-License-Identifier: MIT
/*
 * gn_reducer.c - the demo's reducer on libgradnet. By default the model's
 * tensors are the members of one bucket (gn_bucket_register()), copied
 * into its buffer and averaged with one gn_allreduce() per step, as DDP
 * fuses gradients; with buckets off each model tensor is a gradnet tensor
 * of its own, averaged with one gn_allreduce() each.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gn_reducer.h"

#define BUCKET_ID 1000

/* The steady state starts at the configured call. */
static void count_call(struct gn_reducer *g)
{
	if (g->calls++ == g->count_from) {
		g->base.sz = sizeof(g->base);
		gn_stats_ctx(g->ctx, &g->base);
	}
}

static int report(struct gn_reducer *g, int ret)
{
	if (ret)
		fprintf(stderr, "gradnet-demo: rank %d: %s\n",
			gn_ctx_rank(g->ctx), gn_ctx_errmsg(g->ctx));
	return ret;
}

static int gn_allreduce_avg(struct demo_reducer *red, unsigned int t,
			    float *grad)
{
	struct gn_reducer *g = (struct gn_reducer *)red;

	count_call(g);
	return report(g, gn_allreduce(g->ctx, t, grad));
}

static int gn_allreduce_bucket(struct demo_reducer *red, float *const *grad,
			       unsigned int tensors)
{
	struct gn_reducer *g = (struct gn_reducer *)red;
	size_t at = 0;
	unsigned int t;
	int ret;

	if (tensors != g->tensors)
		return -EINVAL;
	count_call(g);
	for (t = 0; t < tensors; at += g->elems[t++])
		memcpy(g->flat + at, grad[t], g->elems[t] * sizeof(float));
	ret = report(g, gn_allreduce(g->ctx, BUCKET_ID, g->flat));
	for (t = 0, at = 0; !ret && t < tensors; at += g->elems[t++])
		memcpy(grad[t], g->flat + at, g->elems[t] * sizeof(float));
	return ret;
}

static int register_bucket(struct gn_reducer *g, int codec, unsigned int flags)
{
	GN_OPTS(gn_bucket_opts, b, .id = BUCKET_ID, .members = g->tensors,
		.elems = g->elems, .codec = codec,
		.flags = GN_TENSOR_AVERAGE | (flags & GN_BUCKET_SHARED_SCALE));
	size_t total = 0;
	unsigned int t;

	for (t = 0; t < g->tensors; t++)
		total += g->elems[t];
	g->flat = malloc(total * sizeof(float));
	if (!g->flat)
		return -ENOMEM;
	g->red.allreduce_avg_all = gn_allreduce_bucket;
	return gn_bucket_register(g->ctx, &b);
}

static int register_tensors(struct gn_reducer *g, int codec)
{
	unsigned int t;
	int ret = 0;

	for (t = 0; !ret && t < g->tensors; t++) {
		GN_OPTS(gn_tensor_opts, to, .id = t, .elems = g->elems[t],
			.codec = codec, .flags = GN_TENSOR_AVERAGE);

		ret = gn_tensor_register(g->ctx, &to);
	}
	return ret;
}

int gn_reducer_open(struct gn_reducer *g, const struct gn_ctx_opts *o,
		    int codec, const size_t *elems, unsigned int tensors,
		    unsigned int count_from_step, unsigned int bucket)
{
	int ret;

	memset(g, 0, sizeof(*g));
	if (tensors > MLP_MAX_TENSORS)
		return -EINVAL;
	g->red.allreduce_avg = gn_allreduce_avg;
	g->tensors = tensors;
	memcpy(g->elems, elems, tensors * sizeof(*elems));
	/* One call per step with a bucket, one per tensor without. */
	g->count_from = count_from_step * (bucket ? 1 : tensors);
	ret = gn_ctx_open(o, &g->ctx);
	if (ret) {
		fprintf(stderr, "gradnet-demo: rank %d: %s\n", o->rank,
			gn_last_errmsg());
		return ret;
	}
	ret = bucket ? register_bucket(g, codec, bucket) :
		       register_tensors(g, codec);
	if (ret) {
		fprintf(stderr, "gradnet-demo: %s\n", gn_ctx_errmsg(g->ctx));
		gn_reducer_close(g);
	}
	return ret;
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
	steady->stream_bytes -= g->base.stream_bytes;
	steady->ctl_bytes -= g->base.ctl_bytes;
	steady->ctl_packets -= g->base.ctl_packets;
	steady->tx_packets -= g->base.tx_packets;
	steady->retransmits -= g->base.retransmits;
	for (k = 0; k < GN_DROP_COUNT; k++)
		steady->drops[k] -= g->base.drops[k];
}

void gn_reducer_close(struct gn_reducer *g)
{
	gn_ctx_close(g->ctx);
	g->ctx = NULL;
	free(g->flat);
	g->flat = NULL;
}
