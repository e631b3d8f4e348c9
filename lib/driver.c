// SPDX-License-Identifier: MIT
/*
 * driver.c - libgradnet's driver of the core: a progress thread that
 * polls the core and sleeps in the transport until the next deadline, a
 * packet, or a wake from the caller's thread.
 */
#include "api.h"

static void *progress_main(void *arg)
{
	struct gn_ctx *ctx = arg;
	struct gn_drv *d = ctx->drv;
	const struct gn_env *env = &d->env.env;

	gn_env_lock(env);
	while (!d->stop) {
		u64 next = gn_core_poll(ctx), now = gn_env_now(env);
		int ms = next <= now ? 0 : (int)((next - now + 999999) / 1000000);

		/* The caller's thread gets the lock in between, busy or not. */
		gn_env_unlock(env);
		if (ms)
			d->tp.ops->wait(d->tp.state, ms);
		gn_env_lock(env);
	}
	gn_env_unlock(env);
	return NULL;
}

int gn_drv_start(struct gn_ctx *ctx)
{
	struct gn_drv *d = ctx->drv;
	int r = pthread_create(&d->thread, NULL, progress_main, ctx);

	d->thread_started = !r;
	return -r;
}

void gn_drv_stop(struct gn_ctx *ctx)
{
	struct gn_drv *d = ctx->drv;

	if (!d->thread_started)
		return;
	gn_env_lock(&d->env.env);
	d->stop = true;
	gn_env_unlock(&d->env.env);
	d->tp.ops->wake(d->tp.state);
	pthread_join(d->thread, NULL);
	d->thread_started = false;
}
