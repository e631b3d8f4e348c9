// SPDX-License-Identifier: MIT
/*
 * workers_test.c - codec workers (gn_ctx_opts.codec_workers,
 * GN_CODEC_WORKERS): the pool runs parts on several threads at once and
 * each part exactly once; the core's batches give the golden bytes when
 * their parts run in reverse order; and a job gives the same bytes with
 * 1, 2 and 3 workers, with and without loss, equal to the single-process
 * reference.
 */
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "job.h"
#include "libc.h"
#include "workers.h"
#include "core/scenario.h"
#include "golden/core_hashes.h"
#include "kselftest_harness.h"

#define GOLDEN_CASES ((int)(sizeof(gn_core_golden) / sizeof(gn_core_golden[0])))

struct meet {
	u32 inside;			/* parts running now */
	u32 most;			/* the most seen at once */
	u32 runs[4096];			/* how often each part ran */
};

/* Parts 0 and 1 wait (up to 10 s) until both have been running at once. */
static void meet_part(void *arg, u32 part)
{
	struct meet *m = arg;
	u32 now = __atomic_add_fetch(&m->inside, 1, __ATOMIC_SEQ_CST);
	u32 most = __atomic_load_n(&m->most, __ATOMIC_SEQ_CST);
	double until = job_now() + 10;

	while (now > most &&
	       !__atomic_compare_exchange_n(&m->most, &most, now, false,
					    __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST))
		;
	__atomic_add_fetch(&m->runs[part], 1, __ATOMIC_RELAXED);
	while (part < 2 && __atomic_load_n(&m->most, __ATOMIC_SEQ_CST) < 2 &&
	       job_now() < until)
		;
	__atomic_sub_fetch(&m->inside, 1, __ATOMIC_SEQ_CST);
}

static void count_part(void *arg, u32 part)
{
	__atomic_add_fetch(&((struct meet *)arg)->runs[part], 1, __ATOMIC_RELAXED);
}

TEST(pool_runs_parts_at_once_and_each_once)
{
	struct gn_workers *w;
	struct meet *m = calloc(1, sizeof(*m));
	int round;
	u32 i;

	ASSERT_NE(NULL, m);
	ASSERT_EQ(-EINVAL, gn_workers_new(1, &w));
	ASSERT_EQ(-EINVAL, gn_workers_new(GN_WORKERS_MAX + 1, &w));
	ASSERT_EQ(0, gn_workers_new(2, &w));
	/* Part 0 waits for part 1: only a second thread can run it. */
	gn_workers_run(w, meet_part, m, 2);
	EXPECT_EQ(2, m->most);
	/* Many batches back to back: every part once, none lost. */
	for (round = 0; round < 200; round++) {
		memset(m, 0, sizeof(*m));
		gn_workers_run(w, count_part, m, 2 + (u32)round * 20);
		for (i = 0; i < 2 + (u32)round * 20; i++)
			ASSERT_EQ(1, m->runs[i]) TH_LOG("round %d part %u", round, i);
	}
	gn_workers_free(w);
	free(m);
}

struct nest {
	struct gn_workers *w;
	u32 inner[64];
};

static void inner_part(void *arg, u32 part)
{
	__atomic_add_fetch(&((u32 *)arg)[part], 1, __ATOMIC_RELAXED);
}

/* A batch started while another holds the pool runs on its caller. */
static void outer_part(void *arg, u32 part)
{
	struct nest *n = arg;

	gn_workers_run(n->w, inner_part, n->inner + part * 16, 16);
}

TEST(pool_busy_runs_on_the_caller)
{
	struct nest n = { 0 };
	int i;

	ASSERT_EQ(0, gn_workers_new(3, &n.w));
	gn_workers_run(n.w, outer_part, &n, 4);
	for (i = 0; i < 64; i++)
		ASSERT_EQ(1, n.inner[i]) TH_LOG("part %d", i);
	gn_workers_free(n.w);
}

/*
 * An env that claims three workers and runs every batch's parts on the
 * calling thread, last part first: if any part depended on another's
 * order, the core scenario's results would leave the golden hashes.
 */
struct reverse_env {
	struct gn_env_libc libc;
	struct gn_env env;
	u64 batches, parts, allocs;
	u64 at_step[GN_SCN_CASES][GN_SCN_STEPS];
};

static struct gn_env_libc *inner(void *arg)
{
	return &((struct reverse_env *)arg)->libc;
}

static void *rev_alloc(void *arg, size_t bytes)
{
	((struct reverse_env *)arg)->allocs++;
	return inner(arg)->env.ops->alloc(inner(arg), bytes);
}

static void rev_free(void *arg, void *p)
{
	inner(arg)->env.ops->free(inner(arg), p);
}

static u64 rev_now(void *arg)
{
	(void)arg;
	return gn_env_libc_now();
}

static void rev_lock(void *arg)
{
	inner(arg)->env.ops->lock(inner(arg));
}

static void rev_unlock(void *arg)
{
	inner(arg)->env.ops->unlock(inner(arg));
}

static void rev_wake(void *arg)
{
	inner(arg)->env.ops->wake(inner(arg));
}

static int rev_random(void *arg, void *buf, size_t len)
{
	return inner(arg)->env.ops->random(inner(arg), buf, len);
}

static void rev_run(void *arg, void (*fn)(void *, u32), void *fn_arg, u32 parts)
{
	struct reverse_env *e = arg;

	e->batches++;
	e->parts += parts;
	while (parts--)
		fn(fn_arg, parts);
}

static const struct gn_env_ops reverse_ops = {
	.alloc = rev_alloc, .free = rev_free, .now_ns = rev_now,
	.lock = rev_lock, .unlock = rev_unlock, .wake = rev_wake,
	.random = rev_random, .run = rev_run,
};

static void rev_idle(void *arg, uint64_t until_ns)
{
	uint64_t now = gn_env_libc_now();
	struct timespec ts = { 0, 0 };

	(void)arg;
	if (!until_ns || until_ns <= now)
		return;
	ts.tv_nsec = (long)(until_ns - now < 10000000 ? until_ns - now : 10000000);
	nanosleep(&ts, NULL);
}

static void rev_step_end(void *arg, int kase, int step)
{
	struct reverse_env *e = arg;

	e->at_step[kase][step] = e->allocs;
}

TEST(parts_in_reverse_give_the_golden_bytes)
{
	struct gn_scn_result *res = calloc(1, sizeof(*res));
	struct reverse_env *e = calloc(1, sizeof(*e));
	struct gn_scn_hooks hooks = { .idle = rev_idle, .step_end = rev_step_end };
	char why[320];
	int err, k = 0, step = 0;

	ASSERT_NE(NULL, res);
	ASSERT_NE(NULL, e);
	gn_env_libc_init(&e->libc);
	e->env.ops = &reverse_ops;
	e->env.priv = e;
	e->env.workers = 3;
	hooks.arg = e;
	err = gn_scn_run(&e->env, &hooks, res);
	gn_env_libc_destroy(&e->libc);
	snprintf(why, sizeof(why), "%s (case %d step %d rank %d): %s",
		 res->what ? res->what : "?", res->kase, res->step, res->rank,
		 res->msg);
	ASSERT_EQ(0, err) TH_LOG("%s", why);
	ASSERT_EQ(GN_SCN_CASES, GOLDEN_CASES);
	for (k = 0; k < GN_SCN_CASES; k++)
		for (step = 0; step < GN_SCN_STEPS; step++)
			EXPECT_EQ(gn_core_golden[k].hash[step], res->hash[k][step])
				TH_LOG("case %d step %d", k, step);
	/* The core did hand out batches of several parts... */
	EXPECT_LT(e->batches, e->parts) TH_LOG("%llu batches, %llu parts",
					       (unsigned long long)e->batches,
					       (unsigned long long)e->parts);
	/* ...and still allocates nothing per step but orphans. */
	for (k = 0; k < GN_SCN_CASES; k++)
		EXPECT_EQ(res->orphans[k][GN_SCN_STEPS - 1] - res->orphans[k][0],
			  e->at_step[k][GN_SCN_STEPS - 1] - e->at_step[k][0])
			TH_LOG("case %d", k);
	free(e);
	free(res);
}

/* Tensors that cut into many chunks per shard, odd tails, and a tiny one. */
static void spec_init(struct job_spec *s)
{
	memset(s, 0, sizeof(*s));
	s->world = 3;
	s->steps = 4;
	s->nan_rank = s->die_rank = -1;
	s->chunk = 4096;
	s->ntensors = 4;
	s->elems[0] = 600000;
	s->codec[0] = GN_CODEC_3LC;
	s->flags[0] = GN_TENSOR_AVERAGE;
	s->elems[1] = 250001;
	s->codec[1] = GN_CODEC_3LC;
	s->elems[2] = 70001;
	s->codec[2] = GN_CODEC_NONE;
	s->flags[2] = GN_TENSOR_AVERAGE;
	s->elems[3] = 5;
	s->codec[3] = GN_CODEC_3LC;
}

static void run_workers(struct __test_metadata *_metadata, const char *faults)
{
	static char env[3][JOB_MAX_RANKS][128];
	struct job_out *out[3];
	struct job_spec s;
	size_t total, n, at;
	int w = 0, r = 0, step = 0, k = 0;

	spec_init(&s);
	total = job_total(&s);
	for (w = 0; w < 3; w++) {
		for (r = 0; r < s.world; r++) {
			snprintf(env[w][r], sizeof(env[w][r]),
				 "GN_CODEC_WORKERS=%d%s%s", w + 1,
				 faults ? ";GN_TEST_FAULTS=" : "",
				 faults ? faults : "");
			s.env[r] = env[w][r];
		}
		out[w] = job_run(&s, 240);
		ASSERT_NE(NULL, out[w]);
		for (r = 0; r < s.world; r++) {
			ASSERT_EQ(0, out[w]->status[r]) TH_LOG("workers %d rank %d", w + 1, r);
			ASSERT_EQ(0, out[w]->open_rc[r]) TH_LOG("workers %d rank %d: %s",
								 w + 1, r, out[w]->msg[r]);
			for (step = 0; step < s.steps; step++)
				ASSERT_EQ(0, out[w]->rc[r][step]) TH_LOG("workers %d rank %d step %d: %s",
									   w + 1, r, step, out[w]->msg[r]);
		}
	}
	/* The same bytes on every rank, whatever the count. */
	for (w = 0; w < 3; w++) {
		for (r = 0; r < s.world; r++) {
			for (step = 0; step < s.steps; step++)
				for (k = 0; k < s.ntensors; k++)
					ASSERT_EQ(out[0]->hash[0][step][k],
						  out[w]->hash[r][step][k])
						TH_LOG("workers %d rank %d step %d tensor %d",
						       w + 1, r, step, k);
			ASSERT_EQ(0, memcmp(out[0]->data, out[w]->data + (size_t)r * total,
					    total * sizeof(float)))
				TH_LOG("workers %d rank %d final results", w + 1, r);
		}
	}
	/* And the specification's: the single-process reference. */
	ASSERT_EQ(0, gn_codec_isa_set_default(GN_ISA_SCALAR));
	for (k = 0, at = 0; k < s.ntensors; at += n, k++) {
		uint64_t hash[JOB_MAX_STEPS];
		float *ref;

		n = s.elems[k];
		ref = malloc(n * sizeof(float));
		ASSERT_NE(NULL, ref);
		job_reference(&s, k, NULL, hash, ref);
		for (step = 0; step < s.steps; step++)
			EXPECT_EQ(hash[step], out[2]->hash[0][step][k])
				TH_LOG("tensor %d step %d", k, step);
		EXPECT_EQ(0, memcmp(ref, out[2]->data + at, n * sizeof(float)));
		free(ref);
	}
	for (w = 0; w < 3; w++)
		job_free(&s, out[w]);
}

TEST(same_bytes_with_1_2_3_workers)
{
	run_workers(_metadata, NULL);
}

/* Retransmissions, duplicates and reordering move the batches around. */
TEST(same_bytes_with_1_2_3_workers_under_loss)
{
	run_workers(_metadata, "loss=0.02,dup=0.02,reorder=0.05,seed=11");
}

/* A count out of range is refused, with the option or the variable. */
TEST(bad_counts_refused)
{
	GN_OPTS(gn_ctx_opts, o, .world_size = 1, .peers = "127.0.0.1:29961",
		.flags = GN_CTX_INSECURE, .codec_workers = GN_WORKERS_MAX + 1);
	struct gn_ctx *ctx = NULL;

	ASSERT_EQ(-EINVAL, gn_ctx_open(&o, &ctx));
	EXPECT_NE(NULL, strstr(gn_last_errmsg(), "codec_workers"));
	o.codec_workers = 0;
	setenv("GN_CODEC_WORKERS", "0", 1);
	ASSERT_EQ(-EINVAL, gn_ctx_open(&o, &ctx));
	EXPECT_NE(NULL, strstr(gn_last_errmsg(), "GN_CODEC_WORKERS"));
	setenv("GN_CODEC_WORKERS", "two", 1);
	ASSERT_EQ(-EINVAL, gn_ctx_open(&o, &ctx));
	/* The option wins over the variable. */
	o.codec_workers = 2;
	ASSERT_EQ(0, gn_ctx_open(&o, &ctx)) TH_LOG("%s", gn_last_errmsg());
	gn_ctx_close(ctx);
	unsetenv("GN_CODEC_WORKERS");
}

/* One rank with workers: its own shard is the whole tensor. */
TEST(one_rank_with_workers)
{
	GN_OPTS(gn_ctx_opts, o, .world_size = 1, .peers = "127.0.0.1:29962",
		.flags = GN_CTX_INSECURE, .codec_workers = 3, .chunk = 4096);
	GN_OPTS(gn_tensor_opts, t, .id = 1, .elems = 100000, .codec = GN_CODEC_3LC);
	float *x = malloc(100000 * sizeof(float)), *y = malloc(100000 * sizeof(float));
	struct gn_ctx *ctx = NULL;
	int step;

	ASSERT_NE(NULL, x);
	ASSERT_NE(NULL, y);
	for (step = 0; step < 2; step++) {
		o.codec_workers = step ? 1 : 3;
		ASSERT_EQ(0, gn_ctx_open(&o, &ctx)) TH_LOG("%s", gn_last_errmsg());
		ASSERT_EQ(0, gn_tensor_register(ctx, &t));
		job_grad(step ? y : x, 100000, 0, 0, 0);
		ASSERT_EQ(0, gn_allreduce(ctx, 1, step ? y : x)) TH_LOG("%s", gn_ctx_errmsg(ctx));
		gn_ctx_close(ctx);
	}
	EXPECT_EQ(0, memcmp(x, y, 100000 * sizeof(float)));
	free(x);
	free(y);
}

TEST_HARNESS_MAIN
