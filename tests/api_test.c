// SPDX-License-Identifier: MIT
/*
 * api_test.c - the public API's contract on its own: argument checks,
 * options and stats structs of other sizes, the version, the key sources.
 * Contexts here are single-rank jobs on loopback.
 */
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <gradnet/gradnet.h>

#include "kselftest_harness.h"

/* A one-rank insecure job on @port: needs no peer to answer. */
static int open_one(struct gn_ctx **ctx, int port)
{
	char peers[32];
	GN_OPTS(gn_ctx_opts, o, .world_size = 1, .peers = peers,
		.flags = GN_CTX_INSECURE);

	snprintf(peers, sizeof(peers), "127.0.0.1:%d", port);
	return gn_ctx_open(&o, ctx);
}

/* Every entry point refuses a NULL pointer with -EINVAL instead of crashing. */
TEST(null_pointers)
{
	GN_OPTS(gn_tensor_opts, t, .id = 1, .elems = 8);
	GN_OPTS(gn_stats, st);
	GN_OPTS(gn_ctx_opts, o, .world_size = 1, .peers = "127.0.0.1:29911",
		.flags = GN_CTX_INSECURE);
	struct gn_ctx *ctx;
	float x[8] = { 0 };

	ASSERT_EQ(-EINVAL, gn_ctx_open(&o, NULL));
	ASSERT_NE(NULL, strstr(gn_last_errmsg(), "NULL"));
	ASSERT_EQ(-EINVAL, gn_ctx_rank(NULL));
	ASSERT_EQ(-EINVAL, gn_ctx_world_size(NULL));
	ASSERT_EQ(-EINVAL, gn_tensor_register(NULL, &t));
	ASSERT_EQ(-EINVAL, gn_allreduce(NULL, 1, x));
	ASSERT_EQ(-EINVAL, gn_allreduce_start(NULL, 1, x));
	ASSERT_EQ(-EINVAL, gn_allreduce_wait(NULL, 1));
	ASSERT_EQ(-EINVAL, gn_stats_ctx(NULL, &st));
	ASSERT_EQ(-EINVAL, gn_stats_peer(NULL, 0, &st));
	ASSERT_EQ(-EINVAL, gn_stats_tensor(NULL, 1, &st));
	ASSERT_STREQ("", gn_ctx_errmsg(NULL));
	gn_ctx_close(NULL);

	ASSERT_EQ(0, open_one(&ctx, 29912)) TH_LOG("%s", gn_last_errmsg());
	ASSERT_EQ(-EINVAL, gn_tensor_register(ctx, NULL));
	ASSERT_NE(NULL, strstr(gn_ctx_errmsg(ctx), "bad options"));
	ASSERT_EQ(0, gn_tensor_register(ctx, &t));
	ASSERT_EQ(-EINVAL, gn_allreduce(ctx, 1, NULL));
	ASSERT_EQ(-EINVAL, gn_allreduce_start(ctx, 1, NULL));
	ASSERT_EQ(-EINVAL, gn_stats_ctx(ctx, NULL));
	ASSERT_EQ(-EINVAL, gn_stats_peer(ctx, 0, NULL));
	ASSERT_EQ(-EINVAL, gn_stats_tensor(ctx, 1, NULL));
	ASSERT_EQ(0, gn_stats_tensor(ctx, 1, &st));
	gn_ctx_close(ctx);
}

TEST_HARNESS_MAIN
