// SPDX-License-Identifier: MIT
/*
 * libc.c - the core's environment in a process: calloc, the monotonic
 * clock, a pthread mutex and condition variable, getrandom(), the
 * codec workers' pool (workers.c) for run(), and the core's FPU sections.
 */
#include <errno.h>
#include <stdlib.h>
#include <time.h>

#include "libc.h"

/* The core's FPU sections (gn_deps.h): nothing to do in a process. */
void gn_simd_begin(void)
{
}

void gn_simd_end(void)
{
}

u64 gn_env_libc_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (u64)ts.tv_sec * 1000000000ull + (u64)ts.tv_nsec;
}

static void *libc_alloc(void *env, size_t bytes)
{
	(void)env;
	return calloc(1, bytes);
}

static void libc_free(void *env, void *p)
{
	(void)env;
	free(p);
}

static u64 libc_now(void *env)
{
	(void)env;
	return gn_env_libc_now();
}

static void libc_lock(void *env)
{
	pthread_mutex_lock(&((struct gn_env_libc *)env)->lock);
}

static void libc_unlock(void *env)
{
	pthread_mutex_unlock(&((struct gn_env_libc *)env)->lock);
}

static void libc_wake(void *env)
{
	pthread_cond_broadcast(&((struct gn_env_libc *)env)->cond);
}

static int libc_random(void *env, void *buf, size_t len)
{
	(void)env;
	return gn_getrandom(buf, len);
}

static void libc_run(void *env, void (*fn)(void *arg, u32 part), void *arg,
		     u32 parts)
{
	struct gn_env_libc *e = env;
	u32 i;

	if (e->pool) {
		gn_workers_run(e->pool, fn, arg, parts);
		return;
	}
	for (i = 0; i < parts; i++)
		fn(arg, i);
}

static const struct gn_env_ops libc_ops = {
	.alloc = libc_alloc,
	.free = libc_free,
	.now_ns = libc_now,
	.lock = libc_lock,
	.unlock = libc_unlock,
	.wake = libc_wake,
	.random = libc_random,
	.run = libc_run,
};

void gn_env_libc_init(struct gn_env_libc *e)
{
	pthread_condattr_t ca;

	e->env.ops = &libc_ops;
	e->env.priv = e;
	pthread_mutex_init(&e->lock, NULL);
	/* Deadlines are on the monotonic clock, as now_ns() is. */
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&e->cond, &ca);
	pthread_condattr_destroy(&ca);
}

/**
 * gn_env_libc_workers() - give the environment @n codec workers
 * @e: an environment no context uses yet
 * @n: 1..GN_WORKERS_MAX; 1 runs every part on the thread that asks
 *
 * Return: 0, -EINVAL for @n out of range, -ENOMEM, or pthread_create()'s
 * -errno.
 */
int gn_env_libc_workers(struct gn_env_libc *e, u32 n)
{
	int r;

	if (n < 1 || n > GN_WORKERS_MAX)
		return -EINVAL;
	if (n == 1)
		return 0;
	r = gn_workers_new(n, &e->pool);
	if (!r)
		e->env.workers = n;
	return r;
}

void gn_env_libc_destroy(struct gn_env_libc *e)
{
	gn_workers_free(e->pool);
	e->pool = NULL;
	e->env.workers = 0;
	pthread_mutex_destroy(&e->lock);
	pthread_cond_destroy(&e->cond);
}

void gn_env_libc_wait(struct gn_env_libc *e, u64 deadline_ns)
{
	struct timespec ts;

	if (!deadline_ns) {
		pthread_cond_wait(&e->cond, &e->lock);
		return;
	}
	ts.tv_sec = (time_t)(deadline_ns / 1000000000ull);
	ts.tv_nsec = (long)(deadline_ns % 1000000000ull);
	pthread_cond_timedwait(&e->cond, &e->lock, &ts);
}
