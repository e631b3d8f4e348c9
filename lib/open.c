// SPDX-License-Identifier: MIT
/*
 * open.c - opening a context of the core in this process, in one call
 * (gn_ctx_open()) or two (gn_ctx_bind(), then gn_ctx_join() once the
 * launcher has exchanged the addresses): the arguments gathered
 * (options.c, keys.c), the transport (UDP here, DPDK in dpdk_open.c; the
 * kernel backend is kmod.c's) and the core, then the peers, the progress
 * thread and the handshake; at close, what this rank owes drained, then
 * all of it stopped and freed.
 */
#include <arpa/inet.h>
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

/* "host:port" or "[v6 host]:port" of @a, into @buf. */
static int addr_text(const struct gn_addr *a, char *buf, size_t len)
{
	char host[INET6_ADDRSTRLEN];
	int n;

	if (a->sa.ss_family == AF_INET) {
		const struct sockaddr_in *in = (const void *)&a->sa;

		inet_ntop(AF_INET, &in->sin_addr, host, sizeof(host));
		n = snprintf(buf, len, "%s:%u", host, ntohs(in->sin_port));
	} else if (a->sa.ss_family == AF_INET6) {
		const struct sockaddr_in6 *in6 = (const void *)&a->sa;

		inet_ntop(AF_INET6, &in6->sin6_addr, host, sizeof(host));
		n = snprintf(buf, len, "[%s]:%u", host, ntohs(in6->sin6_port));
	} else {
		return -EINVAL;
	}
	return n < 0 || (size_t)n >= len ? -ENOSPC : n;
}

/* Is @want (an entry of the peer list) the address @have is bound at? */
static bool same_addr(const struct gn_addr *want, const struct gn_addr *have)
{
	if (want->sa.ss_family != have->sa.ss_family)
		return false;
	if (want->sa.ss_family == AF_INET) {
		const struct sockaddr_in *w = (const void *)&want->sa;
		const struct sockaddr_in *h = (const void *)&have->sa;

		return w->sin_port == h->sin_port &&
		       w->sin_addr.s_addr == h->sin_addr.s_addr;
	}
	if (want->sa.ss_family == AF_INET6) {
		const struct sockaddr_in6 *w = (const void *)&want->sa;
		const struct sockaddr_in6 *h = (const void *)&have->sa;

		return w->sin6_port == h->sin6_port &&
		       !memcmp(&w->sin6_addr, &h->sin6_addr, 16);
	}
	return false;
}

/*
 * The transport bound at @self, then the core, which has no peers to talk
 * to until ctx_join(): nothing polls it before the progress thread starts.
 */
static int ctx_bind(struct open_args *a, struct gn_drv *d,
		    const struct gn_addr *self, struct gn_ctx **out)
{
	struct gn_ctx *ctx;
	char where[64];
	u32 max_pkt;
	int r;

	if (self->sa.ss_family == AF_INET6)
		a->conf.mtu -= GN_WIRE_IP6UDP - GN_WIRE_IPUDP;
	max_pkt = a->conf.mtu - GN_WIRE_IPUDP;

	if (a->transport == GN_TP_KIND_DPDK) {
		r = gn_open_dpdk(a, d, max_pkt);
		if (r)
			return r;
		d->bound = *self;
	} else {
		r = gn_udp_bind(&d->tp, self, max_pkt, &d->bound);
		if (r) {
			if (addr_text(self, where, sizeof(where)) < 0)
				snprintf(where, sizeof(where), "?");
			return gn_open_fail(r, "cannot bind %s: %s", where,
					    strerror(-r));
		}
		d->udp = d->tp.state;
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
	return 0;
}

/* The ordered peer list, whose digest the handshake compares. */
static int set_peers(struct gn_ctx *ctx, const struct open_args *a)
{
	struct gn_peer_addr *pa = calloc((size_t)a->conf.world, sizeof(*pa));
	int i, r;

	if (!pa)
		return gn_open_fail(-ENOMEM, "out of memory");
	for (i = 0; i < a->conf.world; i++) {
		const struct sockaddr_storage *sa = &a->addrs[i].sa;

		if (sa->ss_family == AF_INET) {
			const struct sockaddr_in *in = (const void *)sa;

			pa[i].family = 4;
			pa[i].port = ntohs(in->sin_port);
			memcpy(pa[i].addr, &in->sin_addr, 4);
		} else if (sa->ss_family == AF_INET6) {
			const struct sockaddr_in6 *in6 = (const void *)sa;

			pa[i].family = 6;
			pa[i].port = ntohs(in6->sin6_port);
			memcpy(pa[i].addr, &in6->sin6_addr, 16);
		}
	}
	r = gn_core_set_peers(ctx, pa);
	free(pa);
	if (r)
		return gn_open_fail(r, "cannot digest the peer list: %s",
				    strerror(-r));
	return 0;
}

/* The peers (@a->addrs, @a->names), then the progress thread and the handshake. */
static int ctx_join(struct gn_ctx *ctx, struct open_args *a)
{
	struct gn_drv *d = ctx->drv;
	int i, r;

	r = set_peers(ctx, a);
	if (r)
		return r;

	if (d->udp) {
		r = gn_udp_peers(d->udp, a->addrs, a->conf.world);
		if (r)
			return gn_open_fail(r, "cannot take the peer list: %s",
					    strerror(-r));
	}
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

/* gn_ctx_opts as the caller gave it, into @copy: 0 or -errno. */
static int opts_take(const struct gn_ctx_opts *o, struct gn_ctx_opts *copy)
{
	int r = gn_opts_check(o, o->sz, sizeof(*o));

	if (r == -EINVAL)
		return gn_open_fail(r, "gn_ctx_opts: sz %zu is too small; use GN_OPTS()",
				    o->sz);
	if (r)
		return gn_open_fail(r, "gn_ctx_opts: sz %zu is larger than this library's %zu and the extra bytes are not zero",
				    o->sz, sizeof(*o));
	/* Fields past the caller's sz are zero, the defaults. */
	memcpy(copy, o, o->sz < sizeof(*copy) ? o->sz : sizeof(*copy));
	if (copy->flags & ~(GN_CTX_INSECURE | GN_CTX_RANK |
			    GN_CTX_DPDK_PORT | GN_CTX_DPDK_QUEUE |
			    GN_CTX_CLEAR))
		return gn_open_fail(-EINVAL, "gn_ctx_opts.flags %#x has bits this library does not know",
				    copy->flags);
	return 0;
}

/*
 * What gn_ctx_open() and gn_ctx_bind() share: the options read, the
 * driver's state and the codec workers made, the transport bound at
 * @a->self (or, with @a->peers parsed, at this rank's entry), the core
 * opened. The kernel backend is not reached from here.
 */
static int open_bound(struct open_args *a, struct gn_ctx **out)
{
	struct gn_ctx *ctx = NULL;
	struct gn_drv *d;
	int r;

	d = calloc(1, sizeof(*d));
	if (!d)
		return gn_open_fail(-ENOMEM, "out of memory");
	gn_env_libc_init(&d->env);
	r = gn_env_libc_workers(&d->env, a->workers);
	if (r)
		r = gn_open_fail(r, "cannot start %u codec workers: %s",
				 a->workers, strerror(-r));
	else
		r = ctx_bind(a, d, a->peers ? &a->addrs[a->conf.rank] : &a->self,
			     &ctx);
	if (r) {
		ctx_destroy(ctx, d);
		return r;
	}
	*out = ctx;
	return 0;
}

static const struct gn_backend_ops unjoined_backend;

/*
 * What gn_ctx_open() and gn_ctx_bind() (@call) do first: the message
 * cleared, @out checked, the options copied whole into @copy (*@o then
 * points there) and read with the environment into @a.
 */
static int open_begin(const char *call, const struct gn_ctx_opts **o,
		      struct gn_ctx_opts *copy, struct open_args *a,
		      struct gn_ctx **out)
{
	int r;

	open_errmsg[0] = 0;
	if (!out)
		return gn_open_fail(-EINVAL, "%s: the context out-pointer is NULL",
				    call);
	*out = NULL;
	if (*o) {
		r = opts_take(*o, copy);
		if (r)
			return r;
		*o = copy;
	}
	return gn_open_read_args(a, *o);
}

int gn_ctx_open(const struct gn_ctx_opts *o, struct gn_ctx **out)
{
	struct gn_ctx_opts copy = { 0 };
	struct open_args a = { 0 };
	struct gn_ctx *ctx = NULL;
	int r;

	r = open_begin("gn_ctx_open", &o, &copy, &a, out);
	if (!r && !a.peers) {
		gn_open_args_free(&a);
		return gn_open_launcher(o, out);
	}
	if (!r)
		r = gn_open_parse_peers(&a, a.peers, "GN_PEERS");
	if (!r && a.transport == GN_TP_KIND_KMOD) {
		char msg[GN_ERRMSG_LEN] = "";

		r = gn_kmod_open(&a.conf, a.addrs, msg, sizeof(msg), out);
		gn_open_args_free(&a);
		return r ? gn_open_fail(r, "%s", msg) : 0;
	}
	if (!r)
		r = open_bound(&a, &ctx);
	if (!r) {
		r = ctx_join(ctx, &a);
		if (r)
			ctx_destroy(ctx, ctx->drv);
	}
	gn_open_args_free(&a);
	if (!r)
		*out = ctx;
	return r;
}

int gn_ctx_bind(const struct gn_ctx_opts *o, struct gn_ctx **out)
{
	struct gn_ctx_opts copy = { 0 };
	struct open_args a = { 0 };
	struct gn_ctx *ctx = NULL;
	int r;

	r = open_begin("gn_ctx_bind", &o, &copy, &a, out);
	if (!r && a.transport != GN_TP_KIND_UDP)
		r = gn_open_fail(-EOPNOTSUPP,
				 "gn_ctx_bind: the %s transport's address is %s, not a socket this library binds: give it a peer list (GN_PEERS) and call gn_ctx_open()",
				 a.transport == GN_TP_KIND_DPDK ? "dpdk" : "kmod",
				 a.transport == GN_TP_KIND_DPDK ? "its port's" :
								  "the kernel module's");
	if (!r)
		r = gn_open_read_bind(&a);
	a.peers = NULL;
	if (!r)
		r = open_bound(&a, &ctx);
	gn_open_args_free(&a);
	if (r)
		return r;
	((struct gn_drv *)ctx->drv)->backend = &unjoined_backend;
	*out = ctx;
	return 0;
}

int gn_ctx_local_addr(const struct gn_ctx *ctx, char *buf, size_t len)
{
	const struct gn_drv *d;

	if (!ctx || !buf || !len)
		return -EINVAL;
	d = ctx->drv;
	if (!d || !d->udp)
		return -EINVAL;
	return addr_text(&d->bound, buf, len);
}

/* A failed join: the reason for both gn_last_errmsg() and gn_ctx_errmsg(). */
static int join_fail(struct gn_ctx *ctx, int err)
{
	snprintf(ctx->api_errmsg, sizeof(ctx->api_errmsg), "%s", open_errmsg);
	return err;
}

int gn_ctx_join(struct gn_ctx *ctx, const char *peers)
{
	struct open_args a = { 0 };
	struct gn_drv *d;
	char have[64];
	int r, rank;

	open_errmsg[0] = 0;
	if (!ctx)
		return gn_open_fail(-EINVAL, "gn_ctx_join: the context is NULL");
	d = ctx->drv;
	if (!d || d->backend != &unjoined_backend || d->join_tried)
		return join_fail(ctx, gn_open_fail(-EALREADY,
			"gn_ctx_join: this context was joined (or tried to join) before; a context of gn_ctx_bind() joins once"));
	if (!peers || !*peers)
		return join_fail(ctx, gn_open_fail(-EINVAL,
			"gn_ctx_join: no peer list (host:port,... in rank order)"));
	d->join_tried = true;
	rank = ctx->rank;
	a.conf.rank = rank;
	a.conf.world = ctx->world;
	a.addrs = calloc((size_t)ctx->world, sizeof(*a.addrs));
	a.names = calloc((size_t)ctx->world, sizeof(*a.names));
	if (!a.addrs || !a.names)
		r = gn_open_fail(-ENOMEM, "out of memory");
	else
		r = gn_open_parse_peers(&a, peers, "gn_ctx_join's peer list");
	if (!r && !same_addr(&a.addrs[rank], &d->bound)) {
		if (addr_text(&d->bound, have, sizeof(have)) < 0)
			snprintf(have, sizeof(have), "?");
		r = gn_open_fail(-EINVAL,
				 "gn_ctx_join: the peer list gives this rank (%d) the address %s, but its socket is bound at %s (gn_ctx_local_addr())",
				 rank, a.names[rank], have);
	}
	if (!r)
		r = ctx_join(ctx, &a);
	gn_open_args_free(&a);
	if (r)
		return join_fail(ctx, r);
	d->backend = NULL;
	return 0;
}

/*
 * A context of gn_ctx_bind() before it joined: only close does
 * anything; the progress thread has not started, so nothing is owed.
 */
static int unjoined(struct gn_ctx *ctx)
{
	snprintf(ctx->api_errmsg, sizeof(ctx->api_errmsg),
		 ((struct gn_drv *)ctx->drv)->join_tried ?
		 "the context's gn_ctx_join() failed: close it" :
		 "the context is bound but not in the job yet: call gn_ctx_join() first");
	return -ENOTCONN;
}

static void unjoined_close(struct gn_ctx *ctx)
{
	ctx_destroy(ctx, ctx->drv);
}

static int unjoined_register(struct gn_ctx *ctx, const struct gn_core_tensor *o)
{
	(void)o;
	return unjoined(ctx);
}

static int unjoined_id(struct gn_ctx *ctx, u32 id)
{
	(void)id;
	return unjoined(ctx);
}

static int unjoined_start(struct gn_ctx *ctx, u32 id, float *data)
{
	(void)id;
	(void)data;
	return unjoined(ctx);
}

static int unjoined_stats(struct gn_ctx *ctx, enum gn_stats_scope scope,
			  u32 key, struct gn_stats *st)
{
	(void)scope;
	(void)key;
	(void)st;
	return unjoined(ctx);
}

static const struct gn_backend_ops unjoined_backend = {
	.close = unjoined_close,
	.tensor_register = unjoined_register,
	.tensor_unregister = unjoined_id,
	.allreduce_start = unjoined_start,
	.allreduce_wait = unjoined_id,
	.stats = unjoined_stats,
};

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

