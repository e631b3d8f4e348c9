/* SPDX-License-Identifier: MIT */
/*
 * env.h - the protocol core's one seam with what runs it: memory, time,
 * the lock around the core's state, waking whoever waits on it, and
 * random bytes. gn_deps.h is the compile-time half of the seam (types,
 * byte order, memcpy, FPU sections); this table is the run-time half.
 *
 * Implementations: libc.c (libgradnet: calloc, CLOCK_MONOTONIC, a pthread
 * mutex and condition variable, getrandom, and a pool of codec workers,
 * workers.c), kernel.c (the module: memory charged to the caller's
 * memory cgroup under a per-context bound, ktime, a mutex and a wait
 * queue, get_random_bytes) and dpdk/env.c (the DPDK
 * path: rte_zmalloc, the TSC, a spinlock, getrandom; nothing sleeps there).
 *
 * The core allocates only when a context opens and when a tensor is
 * registered (and grows a buffer pool while a job warms up); never per
 * packet or per step once steps repeat with the same shapes.
 */
#ifndef GN_ENV_H
#define GN_ENV_H

#include "gn_deps.h"

struct gn_env_ops {
	/* @bytes of zeroed memory, or NULL. */
	void *(*alloc)(void *env, size_t bytes);
	void (*free)(void *env, void *p);
	/* A monotonic clock in nanoseconds. */
	u64 (*now_ns)(void *env);
	/* The lock around one core context's state. */
	void (*lock)(void *env);
	void (*unlock)(void *env);
	/* Something a waiter waits for changed: a step, the handshake. */
	void (*wake)(void *env);
	/* @len random bytes: 0, or -errno (nothing fresh to be had). */
	int (*random)(void *env, void *buf, size_t len);
	/*
	 * Optional: call @fn(@arg, part) once for every part in [0, @parts),
	 * on any threads and in any order (the calling thread among them),
	 * and return when every call has returned. The core hands it work
	 * whose parts touch disjoint memory, so the results are the same
	 * bytes however the parts are spread; parts never take the lock. It
	 * must not allocate or fail: a busy pool runs the parts on the
	 * caller. NULL (the kernel, DPDK): the core runs them in turn.
	 */
	void (*run)(void *env, void (*fn)(void *arg, u32 part), void *arg,
		    u32 parts);
};

struct gn_env {
	const struct gn_env_ops *ops;
	void *priv;
	/*
	 * Threads that may run parts of one run() at once, the caller
	 * included; 0 or 1 without run(). The core sizes its batches (and
	 * their scratch, at tensor registration) by it, so it is fixed
	 * before the context opens.
	 */
	u32 workers;
};

static inline void *gn_alloc(const struct gn_env *env, size_t bytes)
{
	return env->ops->alloc(env->priv, bytes);
}

/* @n elements of @size bytes, zeroed; NULL also when n * size overflows. */
static inline void *gn_alloc_array(const struct gn_env *env, size_t n,
				   size_t size)
{
	size_t bytes = n * size;

	if (size && n > (size_t)-1 / size)
		return NULL;
	return env->ops->alloc(env->priv, bytes ? bytes : 1);
}

static inline void gn_free(const struct gn_env *env, void *p)
{
	if (p)
		env->ops->free(env->priv, p);
}

static inline u64 gn_env_now(const struct gn_env *env)
{
	return env->ops->now_ns(env->priv);
}

static inline void gn_env_lock(const struct gn_env *env)
{
	env->ops->lock(env->priv);
}

static inline void gn_env_unlock(const struct gn_env *env)
{
	env->ops->unlock(env->priv);
}

static inline void gn_env_wake(const struct gn_env *env)
{
	env->ops->wake(env->priv);
}

static inline int gn_env_random(const struct gn_env *env, void *buf,
				size_t len)
{
	return env->ops->random(env->priv, buf, len);
}

/*
 * gn_env_run() - @fn(@arg, part) for every part in [0, @parts), spread
 * over the env's workers if it has them; returns when all are done.
 */
static inline void gn_env_run(const struct gn_env *env,
			      void (*fn)(void *arg, u32 part), void *arg,
			      u32 parts)
{
	u32 i;

	if (env->ops->run && env->workers > 1 && parts > 1) {
		env->ops->run(env->priv, fn, arg, parts);
		return;
	}
	for (i = 0; i < parts; i++)
		fn(arg, i);
}

/* How many parts the core should cut a batch into: at least 1. */
static inline u32 gn_env_workers(const struct gn_env *env)
{
	return env->ops->run && env->workers > 1 ? env->workers : 1;
}

#endif /* GN_ENV_H */
