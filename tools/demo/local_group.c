// SPDX-License-Identifier: MIT
/*
 * local_group.c - in-process reducers: the ranks are threads of one
 * process and meet at a barrier around every exchange.
 *
 * LOCAL_DENSE averages the float32 gradients exactly, summing in rank order.
 *
 * LOCAL_TLC simulates the arithmetic of gradnet's compressed allreduce
 * with the codec itself, without a network: each tensor is cut into one
 * shard per rank (then into chunks of at most LOCAL_CHUNK values); every
 * rank 3LC-encodes each segment of another rank's shard with its own error
 * feedback; the shard's owner starts a sum from its own share and decodes
 * the others' streams into it by rank, and encodes that sum with the
 * owner's error feedback; every rank decodes the
 * owner's streams with their scale divided by the number of ranks. That is
 * the arithmetic of lib/collective (same shards, chunks and summation
 * order), without packets.
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include <gradnet/codec.h>
#include "reducer.h"

_Static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__,
	       "a chunk stream's scale is read as a little-endian float");

#define LOCAL_MAX_RANKS 64
/* gradnet's default values per 3LC chunk (gn_ctx_opts.chunk). */
#define LOCAL_CHUNK 65536

/* A run of values encoded as one chunk stream, reduced by @owner. */
struct segment {
	size_t off;
	size_t n;
	unsigned int owner;
};

/*
 * struct local_tensor - one tensor's exchange buffers.
 * @slot: world x elems, each rank's dense contribution
 * @e_up: world x elems, each rank's error feedback
 * @e_down: elems, the shard owners' error feedback (shards are disjoint)
 * @acc: elems, the owners' sums
 * @up, @up_len: world x nseg streams of @cap bytes, rank to owner
 * @down, @down_len: nseg streams, owner to everyone
 */
struct local_tensor {
	size_t elems;
	unsigned int nseg;
	struct segment *seg;
	size_t cap;
	float *slot;
	float *e_up;
	float *e_down;
	float *acc;
	uint8_t *up;
	long *up_len;
	uint8_t *down;
	long *down_len;
};

/*
 * struct local_rank - a rank's reducer.
 * @calls: allreduces this rank has done, per tensor
 * @traffic: what this rank sent, as owner and as contributor
 */
struct local_rank {
	struct demo_reducer red;
	struct local_group *g;
	unsigned int rank;
	uint64_t *calls;
	struct local_traffic traffic;
};

struct local_group {
	unsigned int world;
	unsigned int tensors;
	unsigned int count_from;
	enum local_codec codec;
	float s;
	pthread_barrier_t barrier;
	int barrier_ok;
	atomic_int err;
	struct local_tensor *t;
	struct local_rank rank[];
};

static int dense_allreduce(struct local_rank *lr, struct local_tensor *t,
			   float *grad)
{
	struct local_group *g = lr->g;
	unsigned int q;
	size_t i;

	memcpy(t->slot + lr->rank * t->elems, grad, t->elems * sizeof(*grad));
	pthread_barrier_wait(&g->barrier);
	for (i = 0; i < t->elems; i++) {
		float sum = t->slot[i];

		for (q = 1; q < g->world; q++)
			sum += t->slot[q * t->elems + i];
		grad[i] = sum / (float)g->world;
	}
	/* Nobody rewrites a slot before everyone has read it. */
	pthread_barrier_wait(&g->barrier);
	return 0;
}

/*
 * What the sharded exchange would send in float32: the owner of a shard
 * receives it from, and sends it back to, each of the other ranks.
 */
static void dense_count(struct local_rank *lr, size_t elems)
{
	unsigned int w = lr->g->world, r = lr->rank;
	size_t shard = (r + 1) * elems / w - r * elems / w;
	uint64_t bytes = 2 * (uint64_t)(w - 1) * shard * sizeof(float);

	lr->traffic.raw_bytes += bytes;
	lr->traffic.wire_bytes += bytes;
}

static void set_err(struct local_group *g, long ret)
{
	int none = 0;

	if (ret < 0)
		atomic_compare_exchange_strong(&g->err, &none, (int)ret);
}

/* NaN or infinity anywhere in @v? */
static int all_finite(const float *v, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (!(v[i] - v[i] == 0.0f))
			return 0;
	return 1;
}

/* Every rank's part: encode each segment of another rank's shard. */
static void tlc_contribute(struct local_rank *lr, struct local_tensor *t,
			   const float *grad)
{
	struct local_group *g = lr->g;
	float *e = t->e_up + lr->rank * t->elems;
	unsigned int k, i;
	long len;

	for (k = 0; k < t->nseg; k++) {
		const struct segment *sg = &t->seg[k];

		i = lr->rank * t->nseg + k;
		/* The own share stays here and is added as it is. */
		if (sg->owner == lr->rank) {
			if (!all_finite(grad + sg->off, sg->n))
				set_err(g, -EDOM);
			t->up_len[i] = 0;
			continue;
		}
		len = gn_tlc_encode(grad + sg->off, e + sg->off, sg->n, g->s,
				    t->up + i * t->cap, t->cap);
		set_err(g, len);
		t->up_len[i] = len < 0 ? 0 : len;
	}
}

/* The owner's part: sum the contributions, encode the sum. */
static void tlc_reduce(struct local_rank *lr, struct local_tensor *t,
		       const float *grad, int count)
{
	struct local_group *g = lr->g;
	unsigned int k, q, i;
	long len;

	for (k = 0; k < t->nseg; k++) {
		const struct segment *sg = &t->seg[k];
		float *acc = t->acc + sg->off;

		if (sg->owner != lr->rank)
			continue;
		/* The sum starts as the owner's share, then the others by rank. */
		memcpy(acc, grad + sg->off, sg->n * sizeof(*acc));
		for (q = 0; q < g->world; q++) {
			i = q * t->nseg + k;
			if (q == lr->rank)
				continue;
			set_err(g, gn_tlc_decode(t->up + i * t->cap,
						 t->up_len[i], acc, sg->n));
			if (count && q != lr->rank) {
				lr->traffic.raw_bytes += sg->n * sizeof(float);
				lr->traffic.wire_bytes += t->up_len[i];
			}
		}
		len = gn_tlc_encode(acc, t->e_down + sg->off, sg->n, g->s,
				    t->down + k * t->cap, t->cap);
		set_err(g, len);
		t->down_len[k] = len < 0 ? 0 : len;
		if (count) {
			lr->traffic.raw_bytes += (g->world - 1) * sg->n * sizeof(float);
			lr->traffic.wire_bytes += (g->world - 1) * t->down_len[k];
		}
	}
}

/*
 * Decode the owner's stream as the mean: with its scale divided by the
 * number of ranks, the way gradnet does for GN_TENSOR_AVERAGE tensors.
 */
static void decode_mean(struct local_group *g, const uint8_t *src, long len,
			float *acc, size_t n)
{
	size_t groups = gn_tlc_groups(n);
	float m;

	memcpy(&m, src, sizeof(m));
	set_err(g, gn_tlc_decode_slice(src + GN_TLC_SCALE_BYTES,
				       len - GN_TLC_SCALE_BYTES,
				       m / (float)g->world, acc, n, 0, groups));
}

static int tlc_allreduce(struct local_rank *lr, struct local_tensor *t,
			 float *grad, int count)
{
	struct local_group *g = lr->g;
	unsigned int k;
	int err;

	tlc_contribute(lr, t, grad);
	pthread_barrier_wait(&g->barrier);
	tlc_reduce(lr, t, grad, count);
	pthread_barrier_wait(&g->barrier);
	/* Every write of err happened before the barrier: all ranks agree. */
	err = atomic_load(&g->err);
	if (err)
		return err;
	memset(grad, 0, t->elems * sizeof(*grad));
	for (k = 0; k < t->nseg; k++)
		decode_mean(g, t->down + k * t->cap, t->down_len[k],
			    grad + t->seg[k].off, t->seg[k].n);
	return 0;
}

static int local_allreduce_avg(struct demo_reducer *red, unsigned int t,
			       float *grad)
{
	struct local_rank *lr = (struct local_rank *)red;
	struct local_group *g = lr->g;
	int count;

	if (t >= g->tensors)
		return -ENOENT;
	count = lr->calls[t]++ >= g->count_from;
	if (g->codec == LOCAL_DENSE) {
		if (count)
			dense_count(lr, g->t[t].elems);
		return dense_allreduce(lr, &g->t[t], grad);
	}
	return tlc_allreduce(lr, &g->t[t], grad, count);
}

/* Shard j of n values is [j n / world, (j + 1) n / world), cut into chunks. */
static int plan_segments(struct local_tensor *t, unsigned int world)
{
	size_t lo, hi, off, n, max = 0;
	unsigned int j;

	t->seg = calloc(world + t->elems / LOCAL_CHUNK + 1, sizeof(*t->seg));
	if (!t->seg)
		return -ENOMEM;
	for (j = 0; j < world; j++) {
		lo = j * t->elems / world;
		hi = (j + 1) * t->elems / world;
		for (off = lo; off < hi; off += n) {
			n = hi - off < LOCAL_CHUNK ? hi - off : LOCAL_CHUNK;
			t->seg[t->nseg++] = (struct segment){ off, n, j };
			max = n > max ? n : max;
		}
	}
	t->cap = gn_tlc_encode_bound(max);
	return 0;
}

static int tensor_alloc(struct local_tensor *t, size_t elems,
			unsigned int world, enum local_codec codec)
{
	int ret;

	t->elems = elems;
	if (codec == LOCAL_DENSE) {
		t->slot = calloc(world * elems, sizeof(float));
		return t->slot ? 0 : -ENOMEM;
	}
	ret = plan_segments(t, world);
	if (ret)
		return ret;
	t->e_up = calloc(world * elems, sizeof(float));
	t->e_down = calloc(elems, sizeof(float));
	t->acc = calloc(elems, sizeof(float));
	t->up = calloc((size_t)world * t->nseg, t->cap);
	t->up_len = calloc((size_t)world * t->nseg, sizeof(long));
	t->down = calloc(t->nseg, t->cap);
	t->down_len = calloc(t->nseg, sizeof(long));
	if (!t->e_up || !t->e_down || !t->acc || !t->up || !t->up_len ||
	    !t->down || !t->down_len)
		return -ENOMEM;
	return 0;
}

static void tensor_free(struct local_tensor *t)
{
	free(t->seg);
	free(t->slot);
	free(t->e_up);
	free(t->e_down);
	free(t->acc);
	free(t->up);
	free(t->up_len);
	free(t->down);
	free(t->down_len);
}

/**
 * local_group_create() - an in-process group of @world ranks
 * @gp: out, the group
 * @world: ranks, 1..64; each is run by its own thread
 * @elems: values of each tensor
 * @tensors: tensors
 * @codec: enum local_codec
 * @s: 3LC sparsity multiplier, 1 <= s < 2 (LOCAL_TLC only)
 * @count_from: count traffic from this allreduce of each tensor on
 *
 * Return: 0; -EINVAL for bad arguments; -ENOMEM.
 */
int local_group_create(struct local_group **gp, unsigned int world,
		       const size_t *elems, unsigned int tensors,
		       enum local_codec codec, float s, unsigned int count_from)
{
	struct local_group *g;
	unsigned int i;
	int ret = -ENOMEM;

	*gp = NULL;
	if (!world || world > LOCAL_MAX_RANKS || !tensors ||
	    (codec == LOCAL_TLC && !(s >= 1.0f && s < 2.0f)))
		return -EINVAL;
	g = calloc(1, sizeof(*g) + world * sizeof(g->rank[0]));
	if (!g)
		return -ENOMEM;
	g->world = world;
	g->tensors = tensors;
	g->codec = codec;
	g->s = s;
	g->count_from = count_from;
	g->t = calloc(tensors, sizeof(*g->t));
	if (!g->t)
		goto out_destroy;
	for (i = 0; i < tensors; i++)
		if ((ret = tensor_alloc(&g->t[i], elems[i], world, codec)))
			goto out_destroy;
	for (i = 0; i < world; i++) {
		g->rank[i] = (struct local_rank){
			.red.allreduce_avg = local_allreduce_avg,
			.g = g,
			.rank = i,
			.calls = calloc(tensors, sizeof(uint64_t)),
		};
		if (!g->rank[i].calls)
			goto out_destroy;
	}
	ret = -pthread_barrier_init(&g->barrier, NULL, world);
	if (ret)
		goto out_destroy;
	g->barrier_ok = 1;
	*gp = g;
	return 0;

out_destroy:
	local_group_destroy(g);
	return ret ? ret : -ENOMEM;
}

/**
 * local_group_reducer() - the reducer rank @rank's thread uses
 * @g: group
 * @rank: 0..world-1
 *
 * Return: the reducer, or NULL for a bad rank.
 */
struct demo_reducer *local_group_reducer(struct local_group *g,
					 unsigned int rank)
{
	return rank < g->world ? &g->rank[rank].red : NULL;
}

/**
 * local_group_traffic() - bytes every rank sent to the others so far
 * @g: group, its threads joined
 * @tr: out, summed over ranks
 */
void local_group_traffic(const struct local_group *g, struct local_traffic *tr)
{
	unsigned int i;

	memset(tr, 0, sizeof(*tr));
	for (i = 0; i < g->world; i++) {
		tr->raw_bytes += g->rank[i].traffic.raw_bytes;
		tr->wire_bytes += g->rank[i].traffic.wire_bytes;
	}
}

/**
 * local_group_destroy() - free a group
 * @g: group, its threads joined; may be NULL
 */
void local_group_destroy(struct local_group *g)
{
	unsigned int i;

	if (!g)
		return;
	if (g->barrier_ok)
		pthread_barrier_destroy(&g->barrier);
	for (i = 0; i < g->world; i++)
		free(g->rank[i].calls);
	for (i = 0; g->t && i < g->tensors; i++)
		tensor_free(&g->t[i]);
	free(g->t);
	free(g);
}
