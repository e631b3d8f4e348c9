/* SPDX-License-Identifier: MIT */
/*
 * backend.h - what the public calls do, per backend: the core in this
 * process (api.c; the UDP and DPDK transports) or the core in the kernel
 * module (kmod.c), and the kernel backend's entry points. The public
 * functions in api.c check their arguments, then call these.
 */
#ifndef GN_BACKEND_H
#define GN_BACKEND_H

#include "driver.h"
#include "spec.h"

struct gn_stats;
struct gn_tensor_opts;

enum gn_stats_scope { GN_SCOPE_CTX, GN_SCOPE_PEER, GN_SCOPE_TENSOR };

/* @o and @st are whole (their sz checked). */
struct gn_backend_ops {
	void (*close)(struct gn_ctx *ctx);
	int (*tensor_register)(struct gn_ctx *ctx, const struct gn_core_tensor *o);
	int (*tensor_unregister)(struct gn_ctx *ctx, u32 id);
	int (*allreduce_start)(struct gn_ctx *ctx, u32 id, float *data);
	int (*allreduce_wait)(struct gn_ctx *ctx, u32 id);
	int (*stats)(struct gn_ctx *ctx, enum gn_stats_scope scope, u32 key,
		     struct gn_stats *st);
};

/* api.c: the backend of @ctx, the core in this process unless drv says. */
const struct gn_backend_ops *gn_backend_of(struct gn_ctx *ctx) GN_HIDDEN;

/* options.c: an options struct's sz and unknown trailing bytes. */
int gn_opts_check(const void *opts, size_t sz, size_t known) GN_HIDDEN;

/* kmod.c: the kernel backend, /dev/gradnet */
int gn_kmod_open(const struct gn_core_conf *conf, const struct gn_addr *addrs,
		 char *msg, size_t len, struct gn_ctx **out) GN_HIDDEN;
extern const struct gn_backend_ops gn_kmod_backend GN_HIDDEN;

#endif /* GN_BACKEND_H */
