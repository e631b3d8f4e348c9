// SPDX-License-Identifier: MIT
/*
 * freshness_test.c - what a rank takes as new: the window of a peer's
 * packet numbers (lib/delivery/replay.c), which session packets count as
 * signs of life, and the rate at which HELLOs are answered. A recording
 * of a peer, sent again from its address after it died, must neither
 * keep it alive nor make this rank send more than a trickle.
 */
#include <errno.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>

#include "kselftest_harness.h"
#include <gradnet/wire.h>
#include "testlib.h"

#define JOB 0x66726573u

static const uint8_t key[GN_MAC_KEY_LEN] = "freshness test k";

TEST(replay_window)
{
	struct gn_replay w = { 0 };
	const uint64_t reach = GN_REPLAY_BITS - 64;
	uint64_t n;

	/* In order, then each again. */
	for (n = 1; n <= 100; n++)
		ASSERT_EQ(GN_PN_NEW, gn_replay_note(&w, n));
	for (n = 1; n <= 100; n++)
		ASSERT_EQ(GN_PN_SEEN, gn_replay_note(&w, n));
	/* Out of order inside the window: each counts once. */
	ASSERT_EQ(GN_PN_NEW, gn_replay_note(&w, 300));
	ASSERT_EQ(GN_PN_NEW, gn_replay_note(&w, 200));
	ASSERT_EQ(GN_PN_SEEN, gn_replay_note(&w, 200));
	ASSERT_EQ(GN_PN_NEW, gn_replay_note(&w, 299));
	/* A jump: what falls out of reach is old, seen or not. */
	ASSERT_EQ(GN_PN_NEW, gn_replay_note(&w, 300 + reach));
	ASSERT_EQ(GN_PN_OLD, gn_replay_note(&w, 300));
	ASSERT_EQ(GN_PN_OLD, gn_replay_note(&w, 250));
	ASSERT_EQ(GN_PN_NEW, gn_replay_note(&w, 301));
	ASSERT_EQ(GN_PN_SEEN, gn_replay_note(&w, 301));
	/* Past the whole ring at once: nothing of before shows through. */
	n = 1ull << 40;
	ASSERT_EQ(GN_PN_NEW, gn_replay_note(&w, n));
	ASSERT_EQ(GN_PN_OLD, gn_replay_note(&w, 301 + reach));
	ASSERT_EQ(GN_PN_NEW, gn_replay_note(&w, n - reach + 1));
	ASSERT_EQ(GN_PN_OLD, gn_replay_note(&w, n - reach));
	ASSERT_EQ(GN_PN_NEW, gn_replay_note(&w, n - 64));
	ASSERT_EQ(GN_PN_NEW, gn_replay_note(&w, n + 64 * GN_REPLAY_WORDS - 1));
	ASSERT_EQ(GN_PN_OLD, gn_replay_note(&w, n - 64));
	ASSERT_EQ(GN_PN_NEW, gn_replay_note(&w, GN_WIRE_PN_MAX));
	ASSERT_EQ(GN_PN_SEEN, gn_replay_note(&w, GN_WIRE_PN_MAX));
}

/*
 * A HELLO of rank 1 (instance @inst) to rank 0 that names @echo, sealed
 * under rank 1's HELLO key with number @pn; its body, the peer-list
 * digest, is the test context's: zero. Return: its length.
 */
static size_t hello_packet(uint8_t *p, uint64_t inst, uint64_t echo,
			   uint8_t flags, uint64_t pn)
{
	struct gn_wire_hdr h = {
		.magic = GN_WIRE_MAGIC, .version = GN_WIRE_VERSION,
		.type = GN_PKT_HELLO, .src = 1, .dst = 0, .job = JOB,
		.body_len = GN_WIRE_HELLO_BODY,
	};
	struct gn_wire_hello o = {
		.world = 2, .flags = flags, .chunk = 4096, .mtu = 9000,
		.instance = inst, .echo = echo,
	};
	uint8_t k[GN_SEAL_KEY_LEN];

	if (gn_wire_hello_key(k, key, 1, inst))
		return 0;
	gn_wire_hdr_put(&h, p);
	gn_wire_hello_put(&o, p);
	memset(p + GN_WIRE_HDR_LEN + GN_WIRE_HELLO_LEN, 0, GN_WIRE_HELLO_BODY);
	return gn_wire_seal(k, p, GN_WIRE_HDR_LEN + GN_WIRE_HELLO_LEN +
			    GN_WIRE_HELLO_BODY, pn, 0);
}

/* A PING of rank 1 to rank 0 under its session key, number @pn. */
static size_t ping_packet(uint8_t *p, uint64_t pn)
{
	struct gn_wire_hdr h = {
		.magic = GN_WIRE_MAGIC, .version = GN_WIRE_VERSION,
		.type = GN_PKT_PING, .src = 1, .dst = 0, .job = JOB,
	};
	struct gn_wire_ping o = { .stamp = 12345 };
	uint8_t k[GN_SEAL_KEY_LEN];

	if (gn_test_sender_key(key, 1, k))
		return 0;
	gn_wire_hdr_put(&h, p);
	gn_wire_ping_put(&o, p);
	return gn_wire_seal(k, p, GN_WIRE_HDR_LEN + GN_WIRE_PING_LEN, pn, 0);
}

/* One poll of @ctx, as its driver would: liveness, deadlines. */
static void poll_once(struct gn_ctx *ctx)
{
	gn_env_lock(ctx->env);
	gn_core_poll(ctx);
	gn_env_unlock(ctx->env);
}

/*
 * Rank 1 died after the session began. What it sent before (the HELLO
 * answers that end a handshake echo rank 0's instance and are sealed with
 * the job's key) is sent again from its address, as often as one likes:
 * rank 0 still finds it silent and dead, and so it does after a PING
 * that is a recording too. Only a session packet with a new number is a
 * sign of life.
 */
TEST(replayed_hello_keeps_no_dead_peer_alive)
{
	const uint64_t inst = 0x1122334455667788ull;
	struct gn_ctx *ctx;
	uint8_t p[256], ping[128];
	size_t len, plen;
	int i;

	ASSERT_EQ(0, gn_test_ctx_new(2, 0, key, JOB, &ctx));
	ctx->dl.peers[1].instance = inst;
	len = hello_packet(p, inst, ctx->dl.instance,
			   GN_HELLO_REPLY | GN_HELLO_ANSWER, 3);
	ASSERT_LT(0, len);
	plen = ping_packet(ping, 40);
	ASSERT_LT(0, plen);

	/* Fresh: the PING is a sign of life, once. */
	ctx->dl.peers[1].last_rx_ns = 0;
	gn_test_packet_in(ctx, 1, ping, plen);
	ASSERT_LT(0, ctx->dl.peers[1].last_rx_ns);

	/* Then rank 1 goes silent; only recordings come. */
	ctx->dl.peers[1].last_rx_ns = 0;
	for (i = 0; i < 10; i++) {
		gn_test_packet_in(ctx, 1, p, len);
		gn_test_packet_in(ctx, 1, ping, plen);
	}
	ASSERT_EQ(0, ctx->dl.peers[1].last_rx_ns);
	poll_once(ctx);
	ASSERT_TRUE(ctx->dl.peers[1].dead);
	ASSERT_EQ(1, ctx->dl.dead_peer);
	gn_test_ctx_free(ctx);
}

/*
 * HELLOs that ask for an answer, one after the other from a peer's
 * address (a recording of any run, or forged by anyone with the job key):
 * a few answers at once, then one per ANSWER_EVERY_NS (25 ms), not one
 * per HELLO.
 */
TEST(hello_answers_are_rate_limited)
{
	GN_OPTS(gn_stats, st);
	struct gn_ctx *ctx;
	uint8_t p[256];
	uint64_t first, second;
	size_t len;
	int i;

	ASSERT_EQ(0, gn_test_ctx_new(2, 0, key, JOB, &ctx));
	for (i = 0; i < 50; i++) {
		/* Another run's HELLO: it names no instance of ours. */
		len = hello_packet(p, 0xabcdef00u + (uint64_t)i, 0, 0,
				   100 + (uint64_t)i);
		ASSERT_LT(0, len);
		gn_test_packet_in(ctx, 1, p, len);
	}
	ASSERT_EQ(0, gn_stats_ctx(ctx, &st));
	first = st.ctl_packets;
	ASSERT_LE(1, first);
	ASSERT_GE(4, first);
	/* After 60 ms at least two more are due, and no more than 50. */
	usleep(60000);
	for (i = 0; i < 50; i++) {
		len = hello_packet(p, 0xabcdef00u + (uint64_t)i, 0, 0,
				   200 + (uint64_t)i);
		gn_test_packet_in(ctx, 1, p, len);
	}
	ASSERT_EQ(0, gn_stats_ctx(ctx, &st));
	second = st.ctl_packets - first;
	ASSERT_LE(2, second);
	ASSERT_GT(50, second);
	gn_test_ctx_free(ctx);
}

TEST_HARNESS_MAIN
