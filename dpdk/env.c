// SPDX-License-Identifier: MIT
/*
 * env.c - the core's environment (lib/env/env.h) on the DPDK path. Everything works on
 * any thread once rte_eal_init() has returned, lcore or not, so a trainer
 * thread that calls gn_core_allreduce_start() shares the lock with the
 * lcore that polls. The cryptography (gn_deps.h) is a process's,
 * lib/env/crypto.c, with a context per thread, lcores included.
 */
#include <errno.h>
#include <string.h>

#include <rte_cycles.h>
#include <rte_malloc.h>
#include <rte_memory.h>
#include <rte_spinlock.h>

#include "gn_env_dpdk.h"
#include "libc.h"		/* gn_getrandom() */

#define NSEC_PER_SEC 1000000000ull

struct gn_env_dpdk {
	struct gn_env env;
	rte_spinlock_t lock;
	int socket;
	u64 hz;			/* timer cycles per second, read once */
};

static struct gn_env_dpdk *to_denv(void *env)
{
	return env;
}

/* On the caller's NUMA node, cache-line aligned, zeroed. */
static void *denv_alloc(void *env, size_t bytes)
{
	return rte_zmalloc_socket("gradnet", bytes, 0, to_denv(env)->socket);
}

static void denv_free(void *env, void *p)
{
	(void)env;
	rte_free(p);
}

/*
 * cycles * 1e9 / hz overflows 64 bits after a few seconds of a GHz TSC,
 * so whole seconds and the remainder are scaled apart; the remainder is
 * below hz, so its product stays in range for any timer under 18 GHz.
 */
static u64 denv_now(void *env)
{
	u64 hz = to_denv(env)->hz, c = rte_get_timer_cycles();

	return c / hz * NSEC_PER_SEC + c % hz * NSEC_PER_SEC / hz;
}

static void denv_lock(void *env)
{
	rte_spinlock_lock(&to_denv(env)->lock);
}

static void denv_unlock(void *env)
{
	rte_spinlock_unlock(&to_denv(env)->lock);
}

/* Poll mode: whoever waits for the core polls it, nobody sleeps. */
static void denv_wake(void *env)
{
	(void)env;
}

/*
 * The kernel's generator, as in a process: DPDK's rte_rand() is seeded
 * from the timer, and the session key is only as fresh as these bytes.
 */
static int denv_random(void *env, void *buf, size_t len)
{
	(void)env;
	return gn_getrandom(buf, len);
}

static const struct gn_env_ops denv_ops = {
	.alloc = denv_alloc,
	.free = denv_free,
	.now_ns = denv_now,
	.lock = denv_lock,
	.unlock = denv_unlock,
	.wake = denv_wake,
	.random = denv_random,
	/*
	 * No run(): codec parts run in turn on the lcore that polls (its
	 * cores are the operator's to hand out; a context over this env has
	 * one worker). libgradnet's DPDK ranks take the libc env, whose pool
	 * GN_CODEC_WORKERS sizes.
	 */
};

/**
 * gn_env_dpdk_new() - an environment for one core context
 * @socket_id: NUMA node for the core's memory (the NIC's), or SOCKET_ID_ANY
 * @out: the environment, freed with gn_env_dpdk_free()
 *
 * Call after rte_eal_init().
 *
 * Return: 0, -ENOMEM, or -ENODEV if the EAL reports no timer frequency
 * (it did not initialise).
 */
int gn_env_dpdk_new(int socket_id, struct gn_env **out)
{
	struct gn_env_dpdk *e;
	u64 hz = rte_get_timer_hz();

	*out = NULL;
	if (!hz)
		return -ENODEV;
	e = rte_zmalloc_socket("gradnet", sizeof(*e), 0, socket_id);
	if (!e)
		return -ENOMEM;
	e->env.ops = &denv_ops;
	e->env.priv = e;
	rte_spinlock_init(&e->lock);
	e->socket = socket_id;
	e->hz = hz;
	*out = &e->env;
	return 0;
}

/**
 * gn_env_dpdk_free() - free an environment no context uses any more
 * @env: from gn_env_dpdk_new(), or NULL
 */
void gn_env_dpdk_free(struct gn_env *env)
{
	if (env)
		rte_free(env->priv);
}
