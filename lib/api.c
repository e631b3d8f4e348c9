// SPDX-License-Identifier: MIT
/*
 * api.c - libgradnet's public fronts: error messages, tensors, allreduce
 * and counters as the caller's thread sees them. Each checks its
 * arguments and goes to the context's backend: the core in this process
 * (here, driven by the progress thread of driver.c), or the kernel
 * module's (kmod.c). Opening a context, and closing one of the core
 * here, are open.c's.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "backend.h"
#include "open.h"

const char *gn_ctx_errmsg(struct gn_ctx *ctx)
{
	return ctx ? gn_core_api_errmsg(ctx) : "";
}

const char *gn_strerror(int err)
{
	switch (err) {
	case 0:
		return "success";
	case -EDOM:
		return "a gradient held NaN or infinity; the step was skipped";
	case -ETIMEDOUT:
		return "a peer went silent";
	case -EPROTO:
		return "peers disagree on protocol or parameters";
	case -EKEYREJECTED:
		return "peer packets fail authentication (job keys differ)";
	case -EBUSY:
		return "an allreduce of this tensor is already in flight";
	case -ENOENT:
		return "no such tensor";
	case -EEXIST:
		return "tensor id already registered";
	case -EINVAL:
		return "invalid argument";
	case -E2BIG:
		return "options set fields this library does not know";
	default:
		/* strerror() may write a shared or per-thread buffer that the
		 * next call overwrites; the descriptions are static. */
		return strerrordesc_np(err < 0 ? -err : err) ?: "unknown error";
	}
}

const char *gn_drop_name(int reason)
{
	static const char *const names[GN_DROP_COUNT] = {
		[GN_DROP_MALFORMED] = "malformed",
		[GN_DROP_VERSION] = "version",
		[GN_DROP_JOB] = "job",
		[GN_DROP_SOURCE] = "source",
		[GN_DROP_MAC] = "mac",
		[GN_DROP_REPLAY] = "replay",
		[GN_DROP_DUPLICATE] = "duplicate",
		[GN_DROP_TENSOR] = "tensor",
		[GN_DROP_EARLY] = "early",
	};

	return reason >= 0 && reason < GN_DROP_COUNT ? names[reason] : "?";
}

int gn_ctx_rank(const struct gn_ctx *ctx)
{
	return ctx ? ctx->rank : -EINVAL;
}

int gn_ctx_world_size(const struct gn_ctx *ctx)
{
	return ctx ? ctx->world : -EINVAL;
}

static const struct gn_backend_ops core_backend;

/* The backend of @ctx: the core in this process unless drv says otherwise. */
const struct gn_backend_ops *gn_backend_of(struct gn_ctx *ctx)
{
	const struct gn_drv *d = ctx->drv;

	return d && d->backend ? d->backend : &core_backend;
}

void gn_ctx_close(struct gn_ctx *ctx)
{
	if (ctx)
		gn_backend_of(ctx)->close(ctx);
}

/* ---- tensors and allreduce -------------------------------------------------- */

static int api_err(struct gn_ctx *ctx, int err, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int api_err(struct gn_ctx *ctx, int err, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(ctx->api_errmsg, sizeof(ctx->api_errmsg), fmt, ap);
	va_end(ap);
	return err;
}

int gn_tensor_register(struct gn_ctx *ctx, const struct gn_tensor_opts *opts)
{
	struct gn_tensor_opts copy = { 0 }, *o = &copy;
	char msg[GN_ERRMSG_LEN - 32];
	struct gn_core_tensor t;
	int r;

	if (!ctx)
		return -EINVAL;
	r = opts ? gn_opts_check(opts, opts->sz, sizeof(*opts)) : -EINVAL;
	if (r == -E2BIG)
		return api_err(ctx, r,
			       "tensor %u: gn_tensor_opts sz %zu is larger than this library's %zu and the extra bytes are not zero",
			       opts->id, opts->sz, sizeof(*opts));
	if (!r) {
		/* Fields past the caller's sz are zero, the defaults. */
		memcpy(&copy, opts, opts->sz < sizeof(copy) ? opts->sz : sizeof(copy));
		if (opts->sz < offsetof(struct gn_tensor_opts, elems) + sizeof(opts->elems))
			r = -EINVAL;
	}
	if (r || !o->elems || o->elems > (1ull << 40) ||
	    (o->flags & ~GN_TENSOR_AVERAGE))
		return api_err(ctx, -EINVAL,
			       "tensor %u: bad options (sz, elems 1..2^40, flags)",
			       o->id);
	r = gn_spec_for(ctx->codec.codec, o->codec, o->s, o->params, &t.codec,
			msg, sizeof(msg));
	if (r)
		return api_err(ctx, r, "tensor %u: %s", o->id, msg);
	t.id = o->id;
	t.elems = o->elems;
	t.flags = o->flags;
	return gn_backend_of(ctx)->tensor_register(ctx, &t);
}

static int core_tensor_register(struct gn_ctx *ctx,
				const struct gn_core_tensor *o)
{
	int r;

	gn_drv_lock(ctx);
	r = gn_core_tensor_register(ctx, o);
	gn_drv_unlock(ctx);
	return r;
}

int gn_allreduce_start(struct gn_ctx *ctx, u32 id, float *data)
{
	if (!ctx || !data)
		return -EINVAL;
	return gn_backend_of(ctx)->allreduce_start(ctx, id, data);
}

int gn_allreduce_wait(struct gn_ctx *ctx, u32 id)
{
	if (!ctx)
		return -EINVAL;
	return gn_backend_of(ctx)->allreduce_wait(ctx, id);
}

static int core_allreduce_wait(struct gn_ctx *ctx, u32 id)
{
	bool mine = false;
	int r, err = 0;

	gn_drv_lock(ctx);
	while (!(r = gn_core_allreduce_done(ctx, id, &err)))
		mine = gn_drv_wait(ctx, mine);
	gn_drv_done(ctx, mine);
	gn_drv_unlock(ctx);
	return r < 0 ? r : err;
}

int gn_allreduce(struct gn_ctx *ctx, u32 id, float *data)
{
	int r = gn_allreduce_start(ctx, id, data);

	return r ? r : gn_allreduce_wait(ctx, id);
}

int gn_tensor_unregister(struct gn_ctx *ctx, u32 id)
{
	if (!ctx)
		return -EINVAL;
	return gn_backend_of(ctx)->tensor_unregister(ctx, id);
}

static int core_tensor_unregister(struct gn_ctx *ctx, u32 id)
{
	u64 until;
	int r;

	gn_drv_lock(ctx);
	r = gn_core_tensor_retire(ctx, id);
	if (r) {
		gn_drv_unlock(ctx);
		return r;
	}
	/* A dead peer's messages are dropped after the timeout: this ends. */
	until = gn_env_libc_now() + 2 * ctx->dl.timeout_ns + 1000000000ull;
	while (gn_core_tensor_owes(ctx, id) && gn_env_libc_now() < until)
		gn_env_libc_wait(gn_drv_libc(ctx), gn_env_libc_now() + 1000000);
	r = gn_core_tensor_remove(ctx, id, gn_core_tensor_owes(ctx, id));
	gn_drv_unlock(ctx);
	return r;
}
/* ---- counters ------------------------------------------------------------ */

/* The stats layout is ABI: a field that moves breaks every older caller. */
_Static_assert(offsetof(struct gn_stats, allreduces) == 56, "gn_stats ABI");
_Static_assert(offsetof(struct gn_stats, drops) == 96, "gn_stats ABI");
_Static_assert(GN_DROP_COUNT <= GN_DROP_MAX, "gn_stats.drops is full");

static int stats_copy(struct gn_stats *dst, const struct gn_stats *src)
{
	size_t sz;

	if (!dst || dst->sz < offsetof(struct gn_stats, tx_packets))
		return -EINVAL;
	sz = dst->sz < sizeof(*src) ? dst->sz : sizeof(*src);
	memcpy((u8 *)dst + sizeof(size_t), (const u8 *)src + sizeof(size_t),
	       sz - sizeof(size_t));
	/* A newer caller's counters this library does not keep read 0. */
	if (dst->sz > sizeof(*src))
		memset((u8 *)dst + sizeof(*src), 0, dst->sz - sizeof(*src));
	return 0;
}

static int core_stats(struct gn_ctx *ctx, enum gn_stats_scope scope, u32 key,
		      struct gn_stats *st)
{
	const struct gn_stats *src;
	int r = -ENOENT;

	gn_drv_lock(ctx);
	src = scope == GN_SCOPE_TENSOR ? gn_core_tensor_stats(ctx, key) :
	      gn_core_stats(ctx, scope == GN_SCOPE_CTX ? -1 : (int)key);
	if (src)
		r = stats_copy(st, src);
	gn_drv_unlock(ctx);
	return r;
}

static bool stats_ok(const struct gn_stats *st)
{
	return st && st->sz >= offsetof(struct gn_stats, tx_packets);
}

int gn_stats_ctx(struct gn_ctx *ctx, struct gn_stats *st)
{
	if (!ctx || !stats_ok(st))
		return -EINVAL;
	return gn_backend_of(ctx)->stats(ctx, GN_SCOPE_CTX, 0, st);
}

int gn_stats_peer(struct gn_ctx *ctx, int peer, struct gn_stats *st)
{
	if (!ctx || peer < 0 || peer >= ctx->world || !stats_ok(st))
		return -EINVAL;
	return gn_backend_of(ctx)->stats(ctx, GN_SCOPE_PEER, (u32)peer, st);
}

int gn_stats_tensor(struct gn_ctx *ctx, u32 id, struct gn_stats *st)
{
	if (!ctx || !stats_ok(st))
		return -EINVAL;
	return gn_backend_of(ctx)->stats(ctx, GN_SCOPE_TENSOR, id, st);
}

/* The core in this process, driven by the progress thread (driver.c). */
static const struct gn_backend_ops core_backend = {
	.close = gn_open_close_core,
	.tensor_register = core_tensor_register,
	.tensor_unregister = core_tensor_unregister,
	.allreduce_start = gn_core_allreduce_start,
	.allreduce_wait = core_allreduce_wait,
	.stats = core_stats,
};

