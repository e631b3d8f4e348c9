/* SPDX-License-Identifier: MIT */
/*
 * driver.h - what a libgradnet context has besides the protocol core
 * (struct gn_drv: its environment, transport, probes and progress
 * thread) and the progress thread's entry points (driver.c). Userspace
 * only; the core underneath (lib/collective, lib/delivery) is not.
 */
#ifndef GN_DRIVER_H
#define GN_DRIVER_H

#include "core.h"
#include "libc.h"
#include "probes.h"
#include "udp.h"

#define GN_HIDDEN __attribute__((visibility("hidden")))

struct gn_backend_ops;

/*
 * What a context has besides the core: ctx->drv. A context of the kernel
 * backend has no core in this process: its struct gn_ctx carries only
 * rank, world, api_errmsg and drv, and @backend says so.
 */
struct gn_drv {
	const struct gn_backend_ops *backend;	/* NULL: the core here */
	int kmod_fd;			/* the kernel backend's /dev/gradnet */
	struct gn_env_libc env;
	struct gn_transport tp;
	struct gn_probe_flow probe;	/* the USDT probes' flow */
	pthread_t thread;
	void *dpdk;			/* the DPDK transport, which starts the
					   progress thread on its lcore; NULL */
	bool thread_started;
	bool stop;
	/*
	 * Run to completion (a poll-mode transport): a thread that waits for
	 * an allreduce polls the core itself while the progress thread stays
	 * out of the transport; @driving says one does, @polling that the
	 * progress thread is outside the lock, in or near the transport.
	 */
	bool rtc;
	bool driving;
	bool polling;
	u64 next_ns;			/* when the core wants to run again */
	u64 handback_ns;		/* the progress thread polls from then */
	void *udp;			/* the UDP transport's state, or NULL */
	struct gn_addr bound;		/* where this rank's socket is bound */
	bool join_tried;		/* gn_ctx_join() ran (gn_ctx_bind()) */
};

int gn_drv_start(struct gn_ctx *ctx) GN_HIDDEN;
void gn_drv_stop(struct gn_ctx *ctx) GN_HIDDEN;
bool gn_drv_wait(struct gn_ctx *ctx, bool mine) GN_HIDDEN;
void gn_drv_done(struct gn_ctx *ctx, bool mine) GN_HIDDEN;

static inline struct gn_env_libc *gn_drv_libc(struct gn_ctx *ctx)
{
	return &((struct gn_drv *)ctx->drv)->env;
}

/* The core's lock, which the progress thread and the callers share. */
static inline void gn_drv_lock(struct gn_ctx *ctx)
{
	gn_env_lock(&gn_drv_libc(ctx)->env);
}

static inline void gn_drv_unlock(struct gn_ctx *ctx)
{
	gn_env_unlock(&gn_drv_libc(ctx)->env);
}

#endif /* GN_DRIVER_H */
