/* SPDX-License-Identifier: MIT */
/*
 * api.h - libgradnet around the protocol core: the public API (api.c)
 * and the progress thread that drives the core (driver.c). Userspace
 * only; the core underneath (lib/collective, lib/delivery) is not.
 */
#ifndef GN_API_H
#define GN_API_H

#include "core.h"
#include "libc.h"
#include "probes.h"
#include "udp.h"

#define GN_HIDDEN __attribute__((visibility("hidden")))

struct gn_stats;
struct gn_tensor_opts;

/*
 * What the public calls do, per backend: the core in this process (api.c;
 * the UDP and DPDK transports) or the core in the kernel module
 * (kmod.c). The public functions in api.c check their arguments, then
 * call these. @o and @st are whole (their sz checked).
 */
enum gn_stats_scope { GN_SCOPE_CTX, GN_SCOPE_PEER, GN_SCOPE_TENSOR };

struct gn_backend_ops {
	void (*close)(struct gn_ctx *ctx);
	int (*tensor_register)(struct gn_ctx *ctx, const struct gn_core_tensor *o);
	int (*tensor_unregister)(struct gn_ctx *ctx, u32 id);
	int (*allreduce_start)(struct gn_ctx *ctx, u32 id, float *data);
	int (*allreduce_wait)(struct gn_ctx *ctx, u32 id);
	int (*stats)(struct gn_ctx *ctx, enum gn_stats_scope scope, u32 key,
		     struct gn_stats *st);
};

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
};

/* driver.c */
int gn_drv_start(struct gn_ctx *ctx) GN_HIDDEN;
void gn_drv_stop(struct gn_ctx *ctx) GN_HIDDEN;
bool gn_drv_wait(struct gn_ctx *ctx, bool mine) GN_HIDDEN;
void gn_drv_done(struct gn_ctx *ctx, bool mine) GN_HIDDEN;

/* api.c */
int gn_opts_check(const void *opts, size_t sz, size_t known) GN_HIDDEN;
#include "spec.h"

/* kmod.c: the kernel backend, /dev/gradnet */
int gn_kmod_open(const struct gn_core_conf *conf, const struct gn_addr *addrs,
		 char *msg, size_t len, struct gn_ctx **out) GN_HIDDEN;
extern const struct gn_backend_ops gn_kmod_backend GN_HIDDEN;

/*
 * What the test library (tests/lib) hooks into: NULL in every process
 * that does not link it, which no shipped program does.
 * @open: after the transport opened, before the core does: may change
 *	@conf (the wire version) or wrap @tp; -errno and a message fail it
 * @session: the session key was derived from @info
 * @closed: the progress thread stopped, the core not yet freed: @ctx's
 *	counters are final (gn_stats_ctx() may read them)
 */
struct gn_test_hooks {
	int (*open)(struct gn_core_conf *conf, struct gn_transport *tp,
		    char *msg, size_t len);
	void (*session)(const u8 *info, size_t len);
	void (*closed)(struct gn_ctx *ctx);
};

extern const struct gn_test_hooks *gn_test_hooks GN_HIDDEN;

#endif /* GN_API_H */
