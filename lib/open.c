// SPDX-License-Identifier: MIT
/*
 * open.c - gn_ctx_open() and the close of a context of the core in this
 * process: the arguments gathered (options.c, keys.c), then the transport
 * (UDP here, DPDK in dpdk_open.c; the kernel backend is kmod.c's), the
 * core and the progress thread; at close, what this rank owes drained,
 * then all of it stopped and freed.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "backend.h"
#include "gradnet_stat.h"
#include "open.h"
#include "test_hooks.h"

/* Set by the test library (tests/lib) in its processes only. */
const struct gn_test_hooks *gn_test_hooks;

/* Why the last gn_ctx_open() of this thread failed. */
static __thread char open_errmsg[GN_ERRMSG_LEN];

int gn_open_fail(int err, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(open_errmsg, sizeof(open_errmsg), fmt, ap);
	va_end(ap);
	return err;
}

const char *gn_last_errmsg(void)
{
	return open_errmsg;
}

/* The transport, the core and the progress thread. */
static int ctx_start(struct open_args *a, struct gn_drv *d, struct gn_ctx **out)
{
	struct gn_ctx *ctx;
	u32 max_pkt;
	int i, r;

	if (a->addrs[a->conf.rank].sa.ss_family == AF_INET6)
		a->conf.mtu -= GN_WIRE_IP6UDP - GN_WIRE_IPUDP;
	max_pkt = a->conf.mtu - GN_WIRE_IPUDP;

	if (a->transport == GN_TP_KIND_DPDK) {
		r = gn_open_dpdk(a, d, max_pkt);
		if (r)
			return r;
	} else {
		r = gn_udp_open(&d->tp, a->addrs, a->conf.world, a->conf.rank,
				max_pkt);
		if (r)
			return gn_open_fail(r, "cannot bind %s: %s",
					    a->names[a->conf.rank], strerror(-r));
	}
	/* Every packet event fires a USDT probe (lib/probes.c). */
	d->probe = (struct gn_probe_flow){ .job = a->conf.job,
					   .rank = (u64)a->conf.rank,
					   .transport = a->transport == GN_TP_KIND_DPDK ?
							GN_STAT_TRANSPORT_DPDK :
							GN_STAT_TRANSPORT_UDP };
	a->conf.account = gn_probe_account;
	a->conf.account_arg = &d->probe;
	if (gn_test_hooks && gn_test_hooks->open) {
		char msg[GN_ERRMSG_LEN] = "";

		a->conf.on_session = gn_test_hooks->session;
		r = gn_test_hooks->open(&a->conf, &d->tp, msg, sizeof(msg));
		if (r)
			return gn_open_fail(r, "%s", msg);
	}
	r = gn_core_open(&a->conf, &d->env.env, &d->tp, &ctx);
	if (r)
		return gn_open_fail(r, "cannot open the context: %s", strerror(-r));
	ctx->drv = d;
	*out = ctx;
	for (i = 0; i < a->conf.world; i++)
		gn_core_set_name(ctx, i, a->names[i]);
	r = gn_drv_start(ctx);
	if (r)
		return gn_open_fail(r, "cannot start the progress thread");
	gn_drv_lock(ctx);
	while (!(r = gn_core_status(ctx)))
		gn_env_libc_wait(&d->env, 0);
	if (r < 0)
		gn_open_fail(r, "%s", gn_core_errmsg(ctx));
	gn_drv_unlock(ctx);
	return r < 0 ? r : 0;
}

static void ctx_destroy(struct gn_ctx *ctx, struct gn_drv *d)
{
	if (ctx)
		gn_drv_stop(ctx);
	if (ctx && gn_test_hooks && gn_test_hooks->closed)
		gn_test_hooks->closed(ctx);
	gn_core_free(ctx);
	if (d->tp.ops)
		d->tp.ops->close(d->tp.state);
	gn_env_libc_destroy(&d->env);
	free(d);
}

int gn_ctx_open(const struct gn_ctx_opts *o, struct gn_ctx **out)
{
	struct gn_ctx_opts copy = { 0 };
	struct open_args a = { 0 };
	struct gn_ctx *ctx = NULL;
	struct gn_drv *d;
	int r;

	open_errmsg[0] = 0;
	if (!out)
		return gn_open_fail(-EINVAL, "gn_ctx_open: the context out-pointer is NULL");
	*out = NULL;
	if (o) {
		r = gn_opts_check(o, o->sz, sizeof(*o));
		if (r == -EINVAL)
			return gn_open_fail(r, "gn_ctx_opts: sz %zu is too small; use GN_OPTS()",
					    o->sz);
		if (r)
			return gn_open_fail(r, "gn_ctx_opts: sz %zu is larger than this library's %zu and the extra bytes are not zero",
					    o->sz, sizeof(*o));
		/* Fields past the caller's sz are zero, the defaults. */
		memcpy(&copy, o, o->sz < sizeof(copy) ? o->sz : sizeof(copy));
		o = &copy;
		if (o->flags & ~(GN_CTX_INSECURE | GN_CTX_RANK |
				 GN_CTX_DPDK_PORT | GN_CTX_DPDK_QUEUE))
			return gn_open_fail(-EINVAL, "gn_ctx_opts.flags %#x has bits this library does not know",
					    o->flags);
	}
	r = gn_open_read_args(&a, o);
	if (!r && a.transport == GN_TP_KIND_KMOD) {
		char msg[GN_ERRMSG_LEN] = "";

		r = gn_kmod_open(&a.conf, a.addrs, msg, sizeof(msg), out);
		gn_open_args_free(&a);
		return r ? gn_open_fail(r, "%s", msg) : 0;
	}
	d = r ? NULL : calloc(1, sizeof(*d));
	if (!r && !d)
		r = gn_open_fail(-ENOMEM, "out of memory");
	if (r) {
		gn_open_args_free(&a);
		return r;
	}
	gn_env_libc_init(&d->env);
	r = gn_env_libc_workers(&d->env, a.workers);
	if (r)
		r = gn_open_fail(r, "cannot start %u codec workers: %s", a.workers,
				 strerror(-r));
	else
		r = ctx_start(&a, d, &ctx);
	gn_open_args_free(&a);
	if (r) {
		ctx_destroy(ctx, d);
		return r;
	}
	*out = ctx;
	return 0;
}

void gn_open_close_core(struct gn_ctx *ctx)
{
	u64 until;

	/* Let peers collect what this rank still owes them. */
	until = gn_env_libc_now() + (ctx->dl.timeout_ns < 2000000000ull ?
				     ctx->dl.timeout_ns : 2000000000ull);
	gn_drv_lock(ctx);
	while (gn_core_owes(ctx) && gn_env_libc_now() < until) {
		struct timespec ts = { 0, 5000000 };

		gn_drv_unlock(ctx);
		nanosleep(&ts, NULL);
		gn_drv_lock(ctx);
	}
	gn_core_ack_now(ctx);
	gn_drv_unlock(ctx);
	ctx_destroy(ctx, ctx->drv);
}

