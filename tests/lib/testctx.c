// SPDX-License-Identifier: MIT
/*
 * testctx.c - a context without a network, for the receive-path fuzzer and
 * the tests that feed one packet at a time: a null transport, a ready
 * context of any world size, and the entry point that feeds it.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testlib.h"

static int null_open(const struct gn_addr *self, unsigned int max_pkt,
		     void **state)
{
	(void)self;
	(void)max_pkt;
	*state = NULL;
	return 0;
}

static void null_close(void *state)
{
	(void)state;
}

static int null_send(void *state, const struct gn_addr *peers,
		     const struct gn_tx_pkt *pkts, int n)
{
	(void)state;
	(void)peers;
	(void)pkts;
	return n;
}

static int null_recv(void *state, struct gn_rx_pkt *pkts, int max)
{
	(void)state;
	(void)pkts;
	(void)max;
	return 0;
}

static int null_wait(void *state, int timeout_ms)
{
	(void)state;
	(void)timeout_ms;
	return 0;
}

static void null_wake(void *state)
{
	(void)state;
}

static const struct gn_transport_ops null_ops = {
	"null", null_open, null_close, null_send, null_recv, null_wait, null_wake,
};

/*
 * A ready context of @world ranks at 127.0.0.1:9000+k whose packets go
 * nowhere and that has no progress thread: packets are fed to it with
 * gn_test_packet_in(). For fuzzing the receive path only.
 */
int gn_test_ctx_new(int world, int rank, const u8 *key, u32 job,
		    struct gn_ctx **out)
{
	struct gn_ctx *ctx;
	char peers[512] = "";
	int i;

	if (world < 1 || world > 16 || gn_ctx_alloc(&ctx, world))
		return -EINVAL;
	ctx->rank = rank;
	ctx->world = world;
	ctx->mtu = 9000;
	ctx->max_pkt = ctx->mtu - GN_WIRE_IPUDP;
	ctx->timeout_ns = 1000000000ull;
	ctx->chunk = 4096;
	ctx->job = job;
	ctx->codec = GN_WIRE_CODEC_3LC;
	ctx->s = 1.0f;
	memcpy(&ctx->s_bits, &ctx->s, sizeof(ctx->s_bits));
	ctx->version = GN_WIRE_VERSION;
	ctx->dead_peer = -1;
	for (i = 0; i < world; i++) {
		char one[32];

		snprintf(one, sizeof(one), "%s127.0.0.1:%d", i ? "," : "", 9000 + i);
		strcat(peers, one);
	}
	if (gn_ctx_parse_peers(ctx, peers)) {
		gn_ctx_free(ctx);
		return -EINVAL;
	}
	if (key) {
		/* A test context is past its handshake: the session key is
		 * the job key, so tests and fuzz seeds can tag packets. */
		ctx->job_mac = malloc(sizeof(*ctx->job_mac));
		ctx->mac = malloc(sizeof(*ctx->mac));
		if (!ctx->job_mac || !ctx->mac) {
			gn_ctx_free(ctx);
			return -ENOMEM;
		}
		gn_mac_init(ctx->job_mac, key);
		gn_mac_init(ctx->mac, key);
	} else {
		ctx->insecure = true;
	}
	ctx->tp = &null_ops;
	pthread_mutex_init(&ctx->lock, NULL);
	pthread_cond_init(&ctx->cond, NULL);
	ctx->ready = true;
	for (i = 0; i < world; i++)
		ctx->peers[i].hello_in = ctx->peers[i].hello_acked = true;
	*out = ctx;
	return 0;
}

void gn_test_ctx_free(struct gn_ctx *ctx)
{
	pthread_mutex_destroy(&ctx->lock);
	pthread_cond_destroy(&ctx->cond);
	gn_ctx_free(ctx);
}

/* Feed one packet from rank @from (or from nobody, -1) to @ctx. */
void gn_test_packet_in(struct gn_ctx *ctx, int from, const u8 *pkt, size_t len)
{
	struct gn_rx_pkt rx = { .data = (u8 *)pkt, .len = (u16)len };

	if (len > GN_WIRE_MAX_PKT)
		return;
	if (from >= 0 && from < ctx->world) {
		rx.from = ctx->addrs[from];
	} else {
		rx.from = ctx->addrs[0];
		((struct sockaddr_in *)&rx.from.sa)->sin_port = htons(1);
	}
	pthread_mutex_lock(&ctx->lock);
	ctx->now_ns = gn_now_ns();
	gn_packet_in(ctx, &rx);
	gn_ack_flush(ctx);
	if (ctx->work_n)
		gn_run_work(ctx, ~0u);
	pthread_mutex_unlock(&ctx->lock);
}
