// SPDX-License-Identifier: MIT
/*
 * kernel.c - the core's environment in the kernel module: memory charged
 * to the caller's memory cgroup and counted against the context's bound,
 * the monotonic ktime clock, a mutex and a wait queue, get_random_bytes().
 */
#include <linux/jiffies.h>
#include <linux/ktime.h>
#include <linux/mm.h>
#include <linux/overflow.h>
#include <linux/random.h>
#include <linux/slab.h>
#include <linux/timekeeping.h>
#include <linux/vmalloc.h>

#include "kernel.h"

static struct gn_env_kernel *to_kenv(void *env)
{
	return env;
}

/*
 * Every block starts with its length, so a free gives back what it took:
 * the whole header, which keeps the core's buffers cache-line aligned
 * where the allocator's block is (vmalloc's, a page).
 */
#define KENV_HEAD	64

/*
 * The core allocates at open, at tensor registration and while its
 * packet pool grows, all in process context: an ioctl of the caller, or
 * the context's worker, which charges the opener's memory cgroup
 * (set_active_memcg()). A small block comes from kmalloc if it has one
 * at once; the rest from vmalloc, which retries reclaim, then fails
 * (GN_KERNEL_GFP).
 */
static void *kenv_block(size_t bytes)
{
	const gfp_t gfp = (GN_KERNEL_GFP & ~__GFP_RETRY_MAYFAIL) | __GFP_ZERO;
	void *p;

	if (bytes <= PAGE_SIZE << PAGE_ALLOC_COSTLY_ORDER) {
		p = kmalloc(bytes, gfp | __GFP_NORETRY);
		if (p)
			return p;
	}
	return __vmalloc(bytes, gfp | __GFP_RETRY_MAYFAIL);
}

static void *kenv_alloc(void *env, size_t bytes)
{
	struct gn_env_kernel *e = to_kenv(env);
	unsigned long max = READ_ONCE(e->max_bytes);
	size_t total;
	long held;
	u8 *p;

	if (check_add_overflow(bytes, (size_t)KENV_HEAD, &total) ||
	    total > LONG_MAX)
		return NULL;
	held = atomic_long_add_return(total, &e->bytes);
	if (max && (unsigned long)held > max) {
		atomic_long_sub(total, &e->bytes);
		WRITE_ONCE(e->refused, true);
		return NULL;
	}
	p = kenv_block(total);
	if (!p) {
		atomic_long_sub(total, &e->bytes);
		return NULL;
	}
	*(size_t *)p = total;
	return p + KENV_HEAD;
}

static void kenv_free(void *env, void *ptr)
{
	u8 *p = (u8 *)ptr - KENV_HEAD;

	atomic_long_sub(*(size_t *)p, &to_kenv(env)->bytes);
	kvfree(p);
}

static u64 kenv_now(void *env)
{
	return ktime_get_ns();
}

static void kenv_lock(void *env)
{
	mutex_lock(&to_kenv(env)->lock);
}

static void kenv_unlock(void *env)
{
	mutex_unlock(&to_kenv(env)->lock);
}

static void kenv_wake(void *env)
{
	struct gn_env_kernel *e = to_kenv(env);

	atomic_inc(&e->wakes);
	wake_up_all(&e->wq);
}

/* Since 6.1 the kernel's pool never blocks for entropy once it booted. */
static int kenv_random(void *env, void *buf, size_t len)
{
	get_random_bytes(buf, len);
	return 0;
}

static const struct gn_env_ops kenv_ops = {
	.alloc = kenv_alloc,
	.free = kenv_free,
	.now_ns = kenv_now,
	.lock = kenv_lock,
	.unlock = kenv_unlock,
	.wake = kenv_wake,
	.random = kenv_random,
	/* No run(): the module runs codec parts in turn, in its worker. */
};

/**
 * gn_env_kernel_init() - make @e an environment for one core context
 * @e: caller's storage, which must outlive the context
 *
 * Return: 0 (nothing here can fail; the return leaves room to grow).
 */
int gn_env_kernel_init(struct gn_env_kernel *e)
{
	e->env.ops = &kenv_ops;
	e->env.priv = e;
	mutex_init(&e->lock);
	init_waitqueue_head(&e->wq);
	atomic_set(&e->wakes, 0);
	atomic_long_set(&e->bytes, 0);
	e->max_bytes = 0;
	e->refused = false;
	return 0;
}

/**
 * gn_env_kernel_limit() - bound what the core may hold of the kernel's
 * memory through @e
 * @e: the environment
 * @max_bytes: the bound, headers included; 0 for none
 *
 * An allocation that would pass it fails (the core sees NULL and returns
 * -ENOMEM) and sets @e->refused, so the caller can tell the bound from
 * a memory cgroup or a host that is short.
 */
void gn_env_kernel_limit(struct gn_env_kernel *e, unsigned long max_bytes)
{
	WRITE_ONCE(e->max_bytes, max_bytes);
}

/**
 * gn_env_kernel_destroy() - undo gn_env_kernel_init()
 * @e: an environment no context and no waiter uses any more
 */
void gn_env_kernel_destroy(struct gn_env_kernel *e)
{
	WARN_ONCE(atomic_long_read(&e->bytes),
		  "gradnet: the core left %ld bytes allocated\n",
		  atomic_long_read(&e->bytes));
	mutex_destroy(&e->lock);
}

/**
 * gn_env_kernel_wait() - sleep until the core wakes its waiters
 * @e: environment, its lock held by the caller
 * @deadline_ns: give up at this time of the env's clock; 0 for never
 *
 * Drops the lock while asleep, as a condition variable would, and takes
 * it again before returning. A wake() between the caller's last look at
 * the core and this call is not lost: the wake count was read under the
 * lock, so it has already moved.
 *
 * Return: 0 after a wake() or at the deadline, -ERESTARTSYS if a signal
 * came first.
 */
int gn_env_kernel_wait(struct gn_env_kernel *e, u64 deadline_ns)
{
	int seen = atomic_read(&e->wakes);
	long timeout = MAX_SCHEDULE_TIMEOUT, left;
	u64 now = ktime_get_ns();

	if (deadline_ns) {
		if (deadline_ns <= now)
			return 0;
		timeout = nsecs_to_jiffies(deadline_ns - now) + 1;
	}
	mutex_unlock(&e->lock);
	left = wait_event_interruptible_timeout(e->wq,
						atomic_read(&e->wakes) != seen,
						timeout);
	mutex_lock(&e->lock);
	return left < 0 ? (int)left : 0;
}
