// SPDX-License-Identifier: MIT
/*
 * testctx.c - a context without a network, for the receive-path fuzzer and
 * the tests that feed one packet at a time: a null transport (buffers from
 * malloc, packets sent nowhere), a ready context of any world size, and
 * the entry point that feeds it.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testlib.h"

static struct gn_buf *null_get(void *tp)
{
	struct gn_buf *b = calloc(1, sizeof(*b) + GN_WIRE_MAX_PKT);

	(void)tp;
	if (!b)
		return NULL;
	b->data = (u8 *)(b + 1);
	b->refs = 1;
	return b;
}

static void null_hold(void *tp, struct gn_buf *b)
{
	(void)tp;
	b->refs++;
}

static void null_put(void *tp, struct gn_buf *b)
{
	(void)tp;
	if (!--b->refs)
		free(b);
}

static int null_send(void *tp, struct gn_buf *const *b, int n)
{
	(void)tp;
	(void)b;
	return n;
}

static int null_recv(void *tp, struct gn_buf **b, int max)
{
	(void)tp;
	(void)b;
	(void)max;
	return 0;
}

static int null_wait(void *tp, int timeout_ms)
{
	(void)tp;
	(void)timeout_ms;
	return 0;
}

static void null_wake(void *tp)
{
	(void)tp;
}

static void null_close(void *tp)
{
	(void)tp;
}

static const struct gn_transport_ops null_ops = {
	.name = "null",
	.get = null_get,
	.hold = null_hold,
	.put = null_put,
	.send = null_send,
	.recv = null_recv,
	.wait = null_wait,
	.wake = null_wake,
	.close = null_close,
};

/* The test contexts' session key: the job key twice over. */
static void test_session(const u8 *key, u8 *out)
{
	memcpy(out, key, GN_MAC_KEY_LEN);
	memcpy(out + GN_MAC_KEY_LEN, key, GN_MAC_KEY_LEN);
}

int gn_test_sender_key(const u8 *key, int rank, u8 *out)
{
	u8 s[GN_SEAL_KEY_LEN];

	test_session(key, s);
	return gn_wire_sender_key(out, s, (u16)rank);
}

/*
 * A ready context of @world ranks named as at 127.0.0.1:9000+k whose
 * packets go nowhere and that has no progress thread: packets are fed to
 * it with gn_test_packet_in(). Its session key is known (test_session()),
 * so tests and fuzz seeds can seal packets.
 */
int gn_test_ctx_new(int world, int rank, const u8 *key, u32 job,
		    struct gn_ctx **out)
{
	struct gn_core_conf conf = {
		.rank = rank, .world = world, .job = job, .mtu = 9000,
		.chunk = 4096, .codec = { .codec = GN_CODEC_3LC },
		.timeout_ns = 1000000000ull,
		.step_timeout_ns = 600000000000ull, .key = key,
	};
	struct gn_drv *d;
	struct gn_ctx *ctx;
	int i, r;

	if (world < 1 || world > 16)
		return -EINVAL;
	d = calloc(1, sizeof(*d));
	if (!d)
		return -ENOMEM;
	gn_env_libc_init(&d->env);
	d->tp.ops = &null_ops;
	d->tp.caps.max_pkt = GN_WIRE_MAX_PKT;
	r = gn_core_open(&conf, &d->env.env, &d->tp, &ctx);
	if (r) {
		gn_env_libc_destroy(&d->env);
		free(d);
		return r;
	}
	ctx->drv = d;
	for (i = 0; i < world; i++) {
		char name[64];

		snprintf(name, sizeof(name), "rank %d (127.0.0.1:%d)", i, 9000 + i);
		gn_core_set_name(ctx, i, name);
		ctx->dl.peers[i].hello_in = ctx->dl.peers[i].hello_acked = true;
	}
	/* Past the handshake, with the test's session key. */
	for (i = 0; key && i < world; i++) {
		r = gn_test_sender_key(key, i, ctx->dl.keys->sender[i]);
		if (r) {
			gn_test_ctx_free(ctx);
			return r;
		}
	}
	ctx->dl.ready = true;
	*out = ctx;
	return 0;
}

void gn_test_ctx_free(struct gn_ctx *ctx)
{
	struct gn_drv *d = ctx->drv;

	gn_core_free(ctx);
	gn_env_libc_destroy(&d->env);
	free(d);
}

/* Feed one packet from rank @from (or from nobody, -1) to @ctx. */
void gn_test_packet_in(struct gn_ctx *ctx, int from, const u8 *pkt, size_t len)
{
	struct gn_drv *d = ctx->drv;
	struct gn_buf *b;

	if (len > GN_WIRE_MAX_PKT)
		return;
	b = null_get(NULL);
	if (!b)
		return;
	memcpy(b->data, pkt, len);
	b->len = (u16)len;
	b->peer = from >= 0 && from < ctx->world ? (u16)from : GN_PEER_NONE;
	gn_env_lock(&d->env.env);
	ctx->dl.now_ns = gn_env_libc_now();
	gn_dl_packet_in(&ctx->dl, b);
	null_put(NULL, b);
	gn_dl_ack_flush(&ctx->dl);
	if (ctx->work_n)
		gn_run_work(ctx, ~0u);
	gn_env_unlock(&d->env.env);
}
