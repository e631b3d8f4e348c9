// SPDX-License-Identifier: MIT
/*
 * core.c - a context of the protocol core: opened over an environment and
 * a transport, polled by its driver, and the upcalls that connect the
 * collective to delivery.
 */
#include "core.h"

static void peer_dead(void *up, struct gn_peer *p, const char *msg)
{
	(void)p;
	gn_fail_all(up, -ETIMEDOUT, msg);
}

/* Packet events go on to the driver's probes, if it has any. */
static void account(void *up, const struct gn_event *ev)
{
	struct gn_ctx *ctx = up;

	if (ctx->account)
		ctx->account(ctx->account_arg, ev);
}

static const struct gn_dl_up collective_up = {
	.data_in = gn_data_in,
	.ctrl_fits = gn_ctrl_fits,
	.ctrl_in = gn_ctrl_in,
	.peer_dead = peer_dead,
	.account = account,
	.ack_implied = gn_ack_implied,
	.ctrl_acked = gn_ctrl_acked,
};

int gn_core_open(const struct gn_core_conf *conf, const struct gn_env *env,
		 struct gn_transport *tp, struct gn_ctx **out)
{
	struct gn_dl_conf dc = {
		.rank = conf->rank, .world = conf->world, .job = conf->job,
		.version = conf->version ? conf->version : GN_WIRE_VERSION,
		.mtu = conf->mtu, .max_pkt = conf->mtu - GN_WIRE_IPUDP,
		.chunk = conf->chunk, .timeout_ns = conf->timeout_ns,
		.key = conf->key, .clear = conf->clear,
		.on_session = conf->on_session,
	};
	struct gn_ctx *ctx;
	int r;

	*out = NULL;
	if (conf->world < 1 || conf->rank < 0 || conf->rank >= conf->world ||
	    conf->mtu <= GN_WIRE_IPUDP + GN_WIRE_DATA_OVERHEAD + 16 ||
	    dc.max_pkt > GN_WIRE_MAX_PKT || dc.max_pkt > tp->caps.max_pkt ||
	    !conf->chunk || !gn_codec_find(conf->codec.codec))
		return -EINVAL;
	ctx = gn_alloc(env, sizeof(*ctx));
	if (!ctx)
		return -ENOMEM;
	ctx->env = env;
	ctx->rank = conf->rank;
	ctx->world = conf->world;
	ctx->chunk = conf->chunk;
	ctx->max_pkt = dc.max_pkt;
	ctx->codec = conf->codec;
	ctx->step_timeout_ns = conf->step_timeout_ns;
	ctx->account = conf->account;
	ctx->account_arg = conf->account_arg;
	ctx->pending_descs = gn_alloc_array(env, (size_t)conf->world, sizeof(u32));
	r = ctx->pending_descs ? gn_spread_init(ctx) : -ENOMEM;
	if (!r)
		r = gn_dl_init(&ctx->dl, &dc, env, tp, &collective_up, ctx);
	if (r) {
		gn_core_free(ctx);
		return r;
	}
	*out = ctx;
	return 0;
}

void gn_core_free(struct gn_ctx *ctx)
{
	struct gn_tensor *t;

	if (!ctx)
		return;
	while ((t = ctx->tensors)) {
		ctx->tensors = t->next;
		gn_tensor_destroy(ctx, t);
	}
	gn_free(ctx->env, ctx->tensor_tab);
	while (ctx->pending) {
		struct gn_pending_desc *d = ctx->pending;

		ctx->pending = d->next;
		gn_free(ctx->env, d);
	}
	while (ctx->retired) {
		struct gn_retired *rt = ctx->retired;

		ctx->retired = rt->next;
		gn_free(ctx->env, rt);
	}
	while (ctx->orphans) {
		struct gn_txmsg *m = ctx->orphans;

		ctx->orphans = m->up_next;
		gn_dl_msg_free(&ctx->dl, m);
	}
	gn_stage_free(ctx);
	gn_spread_free(ctx);
	gn_dl_destroy(&ctx->dl);
	gn_free(ctx->env, ctx->pending_descs);
	gn_free(ctx->env, ctx);
}

int gn_core_set_peers(struct gn_ctx *ctx, const struct gn_peer_addr *addrs)
{
	u8 digest[GN_PEERS_DIGEST_LEN];
	int r = gn_dl_peers_digest(addrs, ctx->world, ctx->dl.job, digest);

	if (!r)
		gn_dl_set_peers_digest(&ctx->dl, digest);
	return r;
}

void gn_core_set_name(struct gn_ctx *ctx, int rank, const char *name)
{
	snprintf(ctx->dl.peers[rank].name, GN_NAME_LEN, "%s", name);
}

u64 gn_core_poll(struct gn_ctx *ctx)
{
	u64 next;

	gn_dl_poll_rx(&ctx->dl);
	gn_spread_flush(ctx);
	if (ctx->work_n)
		gn_run_work(ctx, gn_spread_work_max(ctx));
	if (ctx->dl.ready)
		gn_step_deadlines(ctx);
	next = gn_dl_poll_tx(&ctx->dl);
	if (ctx->work_n)
		return ctx->dl.now_ns;
	if (ctx->step_timeout_ns && ctx->dl.ready && ctx->deadlines_ns < next)
		next = ctx->deadlines_ns;
	return next;
}

int gn_core_status(const struct gn_ctx *ctx)
{
	if (ctx->dl.open_err)
		return ctx->dl.open_err;
	return ctx->dl.ready ? 1 : 0;
}

const char *gn_core_errmsg(const struct gn_ctx *ctx)
{
	return ctx->dl.errmsg;
}

const char *gn_core_api_errmsg(const struct gn_ctx *ctx)
{
	return ctx->api_errmsg;
}

u64 gn_core_orphans(const struct gn_ctx *ctx)
{
	return ctx->orphans_made;
}

bool gn_core_owes(const struct gn_ctx *ctx)
{
	return gn_dl_owes(&ctx->dl);
}

/*
 * A rank about to close acknowledges what it received at once: the data
 * that would have implied those acknowledgements will not come, and its
 * senders would probe a rank that is gone until their backstop.
 */
void gn_core_ack_now(struct gn_ctx *ctx)
{
	gn_dl_ack_flush(&ctx->dl);
}

const struct gn_stats *gn_core_stats(const struct gn_ctx *ctx, int peer)
{
	if (peer < 0)
		return &ctx->dl.stats;
	return peer < ctx->world ? &ctx->dl.peers[peer].stats : NULL;
}
