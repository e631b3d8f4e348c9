// SPDX-License-Identifier: MIT
/*
 * local_group_test.c - the demo's in-process reducers: the dense one
 * returns the exact mean, the simulated 3LC one returns bit-identical
 * values on every rank and, thanks to error feedback, passes on a
 * constant gradient in full over time; both count the traffic a sharded
 * exchange sends.
 */
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "kselftest_harness.h"
#include "reducer.h"
#include "rng.h"

#define WORLD 4
#define TENSORS 2
#define STEPS 200

/* Tensor 1 has fewer values than ranks: some shards are empty. */
static const size_t elems[TENSORS] = { 1003, 3 };

/*
 * Every rank's gradient of tensor @t at @step, the same in every thread;
 * with @step 0 always, the gradients are constant over time.
 */
static float grad_of(unsigned int rank, unsigned int t, unsigned int step,
		     size_t i)
{
	struct demo_rng rng = { ((uint64_t)step << 40) ^ ((uint64_t)t << 32) ^
				((uint64_t)rank << 24) ^ i };

	return (float)demo_rng_gauss(&rng, 1.0 + t);
}

struct worker {
	pthread_t tid;
	struct demo_reducer *red;
	unsigned int rank;
	int constant;		/* the same gradients at every step */
	float *out[TENSORS];	/* STEPS x elems results */
	int ret;
};

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	unsigned int s, t;
	size_t i;

	for (s = 0; s < STEPS; s++) {
		for (t = 0; t < TENSORS; t++) {
			float *g = w->out[t] + s * elems[t];

			for (i = 0; i < elems[t]; i++)
				g[i] = grad_of(w->rank, t, w->constant ? 0 : s, i);
			w->ret = w->red->allreduce_avg(w->red, t, g);
			if (w->ret)
				return NULL;
		}
	}
	return NULL;
}

/* Run WORLD threads through STEPS exchanges; results in w[r].out. */
static int run_group(enum local_codec codec, int constant, struct worker *w,
		     struct local_traffic *tr)
{
	struct local_group *g;
	unsigned int r, t;
	int ret;

	ret = local_group_create(&g, WORLD, elems, TENSORS, codec, 1.0f,
				 STEPS / 2);
	if (ret)
		return ret;
	for (r = 0; r < WORLD; r++) {
		w[r].red = local_group_reducer(g, r);
		w[r].rank = r;
		w[r].constant = constant;
		for (t = 0; t < TENSORS; t++)
			w[r].out[t] = calloc(STEPS * elems[t], sizeof(float));
		pthread_create(&w[r].tid, NULL, worker_main, &w[r]);
	}
	for (r = 0; r < WORLD; r++) {
		pthread_join(w[r].tid, NULL);
		ret = ret ? ret : w[r].ret;
	}
	local_group_traffic(g, tr);
	local_group_destroy(g);
	return ret;
}

static void free_workers(struct worker *w)
{
	unsigned int r, t;

	for (r = 0; r < WORLD; r++)
		for (t = 0; t < TENSORS; t++)
			free(w[r].out[t]);
}

/* What every rank sends in float32 over the counted steps, all ranks. */
static uint64_t raw_traffic(void)
{
	return 2ull * (WORLD - 1) * (elems[0] + elems[1]) * sizeof(float) *
	       (STEPS - STEPS / 2);
}

TEST(dense_returns_exact_mean)
{
	struct worker w[WORLD] = { 0 };
	struct local_traffic tr;
	unsigned int r, t, s;
	float sum;
	size_t i;

	ASSERT_EQ(0, run_group(LOCAL_DENSE, 0, w, &tr));
	for (t = 0; t < TENSORS; t++)
		for (s = 0; s < STEPS; s++)
			for (i = 0; i < elems[t]; i++) {
				sum = grad_of(0, t, s, i);
				for (r = 1; r < WORLD; r++)
					sum += grad_of(r, t, s, i);
				for (r = 0; r < WORLD; r++)
					ASSERT_EQ(sum / WORLD,
						  w[r].out[t][s * elems[t] + i]);
			}
	ASSERT_EQ(raw_traffic(), tr.raw_bytes);
	ASSERT_EQ(tr.raw_bytes, tr.wire_bytes);
	free_workers(w);
}

TEST(tlc_replicas_agree_and_error_feedback_passes_everything_on)
{
	struct worker w[WORLD] = { 0 };
	double got, want, gmax = 0, worst = 0;
	struct local_traffic tr;
	unsigned int r, t, s;
	size_t i;

	ASSERT_EQ(0, run_group(LOCAL_TLC, 1, w, &tr));
	for (t = 0; t < TENSORS; t++) {
		size_t n = STEPS * elems[t];

		for (r = 1; r < WORLD; r++)
			ASSERT_EQ(0, memcmp(w[0].out[t], w[r].out[t],
					    n * sizeof(float)));
		for (i = 0; i < elems[t]; i++) {
			got = want = 0;
			for (s = 0; s < STEPS; s++)
				got += w[0].out[t][s * elems[t] + i];
			for (r = 0; r < WORLD; r++) {
				want += grad_of(r, t, 0, i) / WORLD;
				gmax = fmax(gmax, fabs(grad_of(r, t, 0, i)));
			}
			worst = fmax(worst, fabs(got / STEPS - want));
		}
	}
	/*
	 * A residual never exceeds the largest value it was quantized with,
	 * so the mean result misses the mean gradient by O(gmax / STEPS).
	 * Without error feedback, small values would never get through and
	 * the miss would be O(gmax).
	 */
	TH_LOG("worst |mean result - mean gradient| = %.4f, largest gradient %.2f",
	       worst, gmax);
	ASSERT_LT(worst, 4 * gmax / STEPS);
	ASSERT_EQ(raw_traffic(), tr.raw_bytes);
	ASSERT_LT(tr.wire_bytes * 8, tr.raw_bytes);
	free_workers(w);
}

TEST(bad_arguments)
{
	struct local_group *g = (struct local_group *)1;

	ASSERT_EQ(-EINVAL, local_group_create(&g, 0, elems, TENSORS,
					      LOCAL_DENSE, 1.0f, 0));
	ASSERT_EQ(NULL, g);
	ASSERT_EQ(-EINVAL, local_group_create(&g, WORLD, elems, TENSORS,
					      LOCAL_TLC, 2.0f, 0));
	ASSERT_EQ(0, local_group_create(&g, WORLD, elems, TENSORS,
					LOCAL_DENSE, 2.0f, 0));
	ASSERT_EQ(NULL, local_group_reducer(g, WORLD));
	ASSERT_EQ(-ENOENT, local_group_reducer(g, 0)->allreduce_avg(
				   local_group_reducer(g, 0), TENSORS, NULL));
	local_group_destroy(g);
}

TEST_HARNESS_MAIN
