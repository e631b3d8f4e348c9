// SPDX-License-Identifier: MIT
/*
 * bucket.c - gn_bucket_register(): the options of a bucket checked and
 * copied, then handed to the core (lib/collective/bucket.c), which lays
 * its chunks out at member bounds.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend.h"

static int bucket_err(struct gn_ctx *ctx, int err, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int bucket_err(struct gn_ctx *ctx, int err, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(ctx->api_errmsg, sizeof(ctx->api_errmsg), fmt, ap);
	va_end(ap);
	return err;
}

/* The members' sum in *@total, or the index of the first bad member. */
static long members_check(const struct gn_bucket_opts *o, size_t *total)
{
	unsigned int i;

	*total = 0;
	for (i = 0; i < o->members; i++) {
		if (!o->elems[i] || o->elems[i] > (1ull << 40) - *total)
			return (long)i;
		*total += o->elems[i];
	}
	return -1;
}

static int opts_copy(struct gn_ctx *ctx, const struct gn_bucket_opts *opts,
		     struct gn_bucket_opts *o)
{
	int r = gn_opts_check(opts, opts->sz, sizeof(*opts));

	if (r == -E2BIG)
		return bucket_err(ctx, r,
				  "bucket %u: gn_bucket_opts sz %zu is larger than this library's %zu and the extra bytes are not zero",
				  opts->id, opts->sz, sizeof(*opts));
	if (r || opts->sz < offsetof(struct gn_bucket_opts, elems) +
				    sizeof(opts->elems))
		return bucket_err(ctx, -EINVAL,
				  "bucket: gn_bucket_opts sz %zu is too small; use GN_OPTS()",
				  opts->sz);
	/* Fields past the caller's sz are zero, the defaults. */
	memcpy(o, opts, opts->sz < sizeof(*o) ? opts->sz : sizeof(*o));
	if (!o->elems || !o->members || o->members > GN_BUCKET_MAX_MEMBERS)
		return bucket_err(ctx, -EINVAL,
				  "bucket %u: %u members%s; a bucket has 1..%u",
				  o->id, o->members,
				  o->elems ? "" : " and no sizes (elems is NULL)",
				  GN_BUCKET_MAX_MEMBERS);
	if (o->flags & ~(GN_TENSOR_AVERAGE | GN_BUCKET_SHARED_SCALE))
		return bucket_err(ctx, -EINVAL,
				  "bucket %u: flags %#x has bits this library does not know",
				  o->id, o->flags);
	return 0;
}

int gn_bucket_register(struct gn_ctx *ctx, const struct gn_bucket_opts *opts)
{
	struct gn_bucket_opts o = { 0 };
	char msg[GN_ERRMSG_LEN - 32];
	struct gn_core_tensor t;
	struct gn_env *env;
	size_t total;
	long bad;
	int r;

	if (!ctx)
		return -EINVAL;
	if (!opts)
		return bucket_err(ctx, -EINVAL, "bucket: the options are NULL");
	r = opts_copy(ctx, opts, &o);
	if (r)
		return r;
	bad = members_check(&o, &total);
	if (bad >= 0)
		return bucket_err(ctx, -EINVAL,
				  "bucket %u: member %ld has %zu values; each needs 1 or more, all together at most 2^40",
				  o.id, bad, o.elems[bad]);
	if (((struct gn_drv *)ctx->drv)->backend)
		return bucket_err(ctx, -EOPNOTSUPP,
				  "bucket %u: buckets run on the in-process core (GN_TRANSPORT=udp or dpdk), not yet on the kernel module's path",
				  o.id);
	r = gn_spec_for(ctx->codec.codec, o.codec, o.s, o.params, &t.codec, msg,
			sizeof(msg));
	if (r)
		return bucket_err(ctx, r, "bucket %u: %s", o.id, msg);
	t.id = o.id;
	t.elems = total;
	t.flags = o.flags & GN_TENSOR_AVERAGE;
	env = &((struct gn_drv *)ctx->drv)->env.env;
	gn_env_lock(env);
	r = gn_core_bucket_register(ctx, &t, o.elems, o.members,
				    o.flags & GN_BUCKET_SHARED_SCALE);
	gn_env_unlock(env);
	return r;
}
