// SPDX-License-Identifier: MIT
/*
 * worker.c - the driver of one context's core: a kernel thread that polls
 * the core when packets arrive (the socket's softirq kicks it), when the
 * core asks (a started allreduce, the transport's wake) and at the
 * deadline the core returned (an hrtimer sleep), so retransmissions,
 * pings and step deadlines run on time. The core sleeps (mutex,
 * allocation), so it never runs in softirq; its floating point runs here
 * or in the caller's ioctl, inside the core's own bounded FPU sections.
 * What the worker allocates is charged to the memory cgroup of the
 * context's opener; when an allreduce ends, it unpins its buffer.
 */
#include <linux/hrtimer.h>
#include <linux/kthread.h>
#include <linux/sched.h>
#include <linux/sched/mm.h>
#include <linux/wait.h>

#include "collective.h"
#include "context.h"
#include "delivery.h"
#include "socket.h"

/* The longest sleep without a look: the core's deadline, or this. */
#define GK_MAX_IDLE_NS (500 * NSEC_PER_MSEC)

/**
 * gk_kick() - have the worker poll the core soon (any context, softirq too)
 * @ctx: the struct gk_ctx
 */
void gk_kick(void *ctx)
{
	struct gk_ctx *c = ctx;

	if (!atomic_xchg(&c->kicked, 1))
		wake_up(&c->worker_wq);
}

/*
 * The strangers the socket dropped in softirq since the last look, as
 * one drop event of the core's accounting: the tracepoints (and the eBPF
 * statistics) count them as the core counts a packet from no peer.
 */
static void strangers_account(struct gk_ctx *c, u64 *told)
{
	u64 now = atomic64_read(&c->ks->rx_strangers);
	struct gn_event ev = {
		.type = GN_EV_DROP, .peer = -1, .reason = GN_DROP_SOURCE,
	};

	if (now == *told)
		return;
	ev.count = (u32)min_t(u64, now - *told, U32_MAX);
	*told += ev.count;
	gn_kmod_account(&c->flow, &ev);
}

static int gk_worker_main(void *arg)
{
	struct gk_ctx *c = arg;
	const struct gn_env *env = &c->env.env;
	struct mem_cgroup *old = set_active_memcg(c->memcg);
	u64 told = 0;

	while (!kthread_should_stop()) {
		u64 next, now;
		int wakes;

		atomic_set(&c->kicked, 0);
		gn_env_lock(env);
		next = gn_core_poll(c->core);
		gn_env_unlock(env);
		/* A wake of the env's waiters: some allreduce may have ended. */
		wakes = atomic_read(&c->env.wakes);
		if (wakes != c->reaped) {
			c->reaped = wakes;
			gk_reap(c);
		}
		strangers_account(c, &told);
		now = ktime_get_ns();
		if (next <= now) {
			cond_resched();
			continue;
		}
		next = min_t(u64, next - now, GK_MAX_IDLE_NS);
		/* Kthreads take no signals: this ends by kick, stop or time. */
		wait_event_interruptible_hrtimeout(c->worker_wq,
						   atomic_read(&c->kicked) ||
						   kthread_should_stop(),
						   ns_to_ktime(next));
	}
	set_active_memcg(old);
	return 0;
}

/**
 * gk_worker_start() - start the worker of @c, whose core is open
 * @c: the context
 *
 * Return: 0 or the -errno of kthread_run().
 */
int gk_worker_start(struct gk_ctx *c)
{
	struct task_struct *t;

	t = kthread_run(gk_worker_main, c, "gradnet/%d", c->rank);
	if (IS_ERR(t))
		return PTR_ERR(t);
	c->worker = t;
	return 0;
}

/**
 * gk_worker_stop() - stop the worker and wait for it; nothing if none
 * @c: the context
 */
void gk_worker_stop(struct gk_ctx *c)
{
	if (!c->worker)
		return;
	kthread_stop(c->worker);
	c->worker = NULL;
}
