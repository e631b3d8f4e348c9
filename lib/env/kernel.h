/* SPDX-License-Identifier: MIT */
/*
 * kernel.h - the environment of the core inside the kernel module:
 * accounted allocations under a bound, ktime, a mutex around the core's
 * state and a wait queue that the core's wake() stirs. Everything here
 * sleeps, so the core runs in process context (the module's worker and
 * ioctls), never in softirq.
 */
#ifndef GN_ENV_KERNEL_H
#define GN_ENV_KERNEL_H

#include <linux/atomic.h>
#include <linux/gfp.h>
#include <linux/mutex.h>
#include <linux/wait.h>

#include "env.h"

/*
 * What the module allocates for a user: charged to the memory cgroup in
 * force, and refused (NULL) rather than left to an OOM killer when that
 * cgroup or the host is short.
 */
#define GN_KERNEL_GFP	(GFP_KERNEL_ACCOUNT | __GFP_RETRY_MAYFAIL | __GFP_NOWARN)

struct gn_env_kernel {
	struct gn_env env;
	struct mutex lock;
	wait_queue_head_t wq;
	/* Bumped by every wake(): what a waiter waits to see change. */
	atomic_t wakes;
	/* What the core holds, headers included, and its bound (0: none). */
	atomic_long_t bytes;
	unsigned long max_bytes;
	bool refused;			/* an allocation would have passed it */
};

int gn_env_kernel_init(struct gn_env_kernel *e);
void gn_env_kernel_limit(struct gn_env_kernel *e, unsigned long max_bytes);
void gn_env_kernel_destroy(struct gn_env_kernel *e);
int gn_env_kernel_wait(struct gn_env_kernel *e, u64 deadline_ns);

#endif /* GN_ENV_KERNEL_H */
