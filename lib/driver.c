// SPDX-License-Identifier: MIT
/*
 * driver.c - libgradnet's driver of the core: a progress thread that
 * polls the core and sleeps in the transport until the next deadline, a
 * packet, or a wake from the caller's thread. On a poll-mode transport
 * (DPDK) a thread that waits for an allreduce runs the same loop itself
 * until its step is done (run to completion), so that the packet that
 * ends a step is seen by the thread that waits for it, not handed over
 * through a wake-up; meanwhile the progress thread keeps out of the
 * transport, whose queue takes one poller at a time, and takes over
 * again between steps (acknowledgements, retransmissions, pings).
 *
 * It takes over HANDBACK_NS after a step, not at once: a caller whose
 * next allreduce comes sooner (a loop of small tensors, one bucket after
 * another) drives again straight away. Both threads run on the poll
 * loop's CPU, so a hand-over between them is a wake-up, a spin until the
 * other has left the queue, and a switch of threads.
 */
#include <sched.h>

#include "driver.h"
#include "gn_dpdk.h"

/*
 * How long after a caller's step the progress thread leaves the
 * transport alone: longer than a trainer's gap between two allreduces of
 * small tensors, short enough that a peer already sending the next step
 * does not overrun the rx queue (1024 frames at memif's 2 Mpps: 0.5 ms).
 */
#define HANDBACK_NS 50000ull

/* Poll the core, with the lock held: it says when it wants to run next. */
static void drv_poll(struct gn_ctx *ctx)
{
	struct gn_drv *d = ctx->drv;

	d->next_ns = gn_core_poll(ctx);
}

/* Wait unlocked until then, for a packet, or for a wake. */
static void drv_sleep(struct gn_ctx *ctx)
{
	struct gn_drv *d = ctx->drv;
	const struct gn_env *env = &d->env.env;
	u64 next = d->next_ns, now = gn_env_now(env);
	int ms = next <= now ? 0 : (int)((next - now + 999999) / 1000000);

	/* Other threads get the lock in between, busy or not. */
	gn_env_unlock(env);
	if (ms)
		d->tp.ops->wait(d->tp.state, ms);
	gn_env_lock(env);
}

static void *progress_main(void *arg)
{
	struct gn_ctx *ctx = arg;
	struct gn_drv *d = ctx->drv;
	const struct gn_env *env = &d->env.env;

	gn_env_lock(env);
	while (!d->stop) {
		if (d->driving || gn_env_now(env) < d->handback_ns) {
			gn_env_libc_wait(&d->env, d->driving ? 0 : d->handback_ns);
			continue;
		}
		drv_poll(ctx);
		__atomic_store_n(&d->polling, true, __ATOMIC_RELAXED);
		drv_sleep(ctx);
		__atomic_store_n(&d->polling, false, __ATOMIC_RELEASE);
	}
	gn_env_unlock(env);
	return NULL;
}

/*
 * gn_drv_wait() - with the lock held, wait for the core to move: drive it
 * for a round if this thread drives (@mine) or the transport polls and no
 * other thread drives, else sleep until woken. A round is a wait, then a
 * poll, so that the caller sees at once what the poll did: a step that
 * ended does not wait for the next packet or deadline.
 * Return: whether this thread drives; it calls gn_drv_done() with that
 * when its wait ends.
 */
bool gn_drv_wait(struct gn_ctx *ctx, bool mine)
{
	struct gn_drv *d = ctx->drv;
	const struct gn_env *env = &d->env.env;

	if (mine) {
		drv_sleep(ctx);
		drv_poll(ctx);
		return true;
	}
	if (!d->rtc || d->driving || !d->thread_started) {
		gn_env_libc_wait(&d->env, 0);
		return false;
	}
	d->driving = true;
	/*
	 * The progress thread leaves the transport and parks. Wait for it
	 * without the lock, which it needs to get back: a thread that let go
	 * of a mutex and took it again at once would keep it from the
	 * progress thread until the scheduler's next tick.
	 */
	if (__atomic_load_n(&d->polling, __ATOMIC_ACQUIRE)) {
		d->tp.ops->wake(d->tp.state);
		gn_env_unlock(env);
		while (__atomic_load_n(&d->polling, __ATOMIC_ACQUIRE))
			sched_yield();
		gn_env_lock(env);
	}
	drv_poll(ctx);
	return true;
}

/*
 * Hand the core back, with the lock held: at once to a thread waiting for
 * another allreduce, after HANDBACK_NS to the progress thread.
 */
void gn_drv_done(struct gn_ctx *ctx, bool mine)
{
	struct gn_drv *d = ctx->drv;

	if (!mine)
		return;
	d->driving = false;
	d->handback_ns = gn_env_now(&d->env.env) + HANDBACK_NS;
	gn_env_wake(&d->env.env);
}

int gn_drv_start(struct gn_ctx *ctx)
{
	struct gn_drv *d = ctx->drv;
	int r = d->dpdk ? gn_dpdk_poller_start(d->dpdk, progress_main, ctx) :
			  -pthread_create(&d->thread, NULL, progress_main, ctx);

	d->thread_started = !r;
	return r;
}

void gn_drv_stop(struct gn_ctx *ctx)
{
	struct gn_drv *d = ctx->drv;

	if (!d->thread_started)
		return;
	gn_env_lock(&d->env.env);
	d->stop = true;
	gn_env_wake(&d->env.env);
	gn_env_unlock(&d->env.env);
	d->tp.ops->wake(d->tp.state);
	if (d->dpdk)
		gn_dpdk_poller_join(d->dpdk);
	else
		pthread_join(d->thread, NULL);
	d->thread_started = false;
}
