/* SPDX-License-Identifier: MIT */
/*
 * env.h - the protocol core's one seam with what runs it: memory, time,
 * the lock around the core's state, waking whoever waits on it, and
 * random bytes. gn_deps.h is the compile-time half of the seam (types,
 * byte order, memcpy, FPU sections); this table is the run-time half.
 *
 * Implementations: libc.c (libgradnet: calloc, CLOCK_MONOTONIC, a pthread
 * mutex and condition variable, getrandom), kernel.c (the module: kvzalloc,
 * ktime, a mutex and a wait queue, get_random_bytes) and dpdk/env.c (the DPDK
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
};

struct gn_env {
	const struct gn_env_ops *ops;
	void *priv;
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

#endif /* GN_ENV_H */
