// SPDX-License-Identifier: MIT
/*
 * account_test.c - the core's accounting upcall, which the USDT probes and
 * the module's tracepoints hang on, coalesced (gn_dl_account()):
 *  - a bulk of one flow's packets is one upcall whose count is theirs,
 *    while the context's, peer's and tensor's counters move per packet
 *  - events of many flows, interleaved at random, with polls ending at
 *    random: the upcalls' counts and bytes sum to exactly what was
 *    accounted, flow by flow, and a poll's end leaves nothing held back
 *  - a step end reaches the upcall after every event before it
 *  - destroying the delivery state hands over what was held back
 *  - the core's whole scenario (tests/core: 3 ranks, loss, duplicates,
 *    reordering): what the upcalls count equals the fabric's and the
 *    scenario's own counts, in fewer upcalls than events
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "libc.h"
#include "delivery.h"
#include "../core/scenario.h"

#include "kselftest_harness.h"

#define PEERS 3
#define FLOWS 256

/* Sums per flow (type, peer, tensor, phase, reason, again), as seen. */
struct sums {
	struct gn_event key[FLOWS];
	u64 count[FLOWS], wire[FLOWS], raw[FLOWS], stream[FLOWS];
	int n;
	u64 upcalls, events, bad;	/* bad: count 0, or a flow pointer */
	u64 step_seen_events;		/* events before the last step */
};

static int flow_of(struct sums *s, const struct gn_event *ev)
{
	int i;

	for (i = 0; i < s->n; i++) {
		const struct gn_event *k = &s->key[i];

		if (k->type == ev->type && k->peer == ev->peer &&
		    k->tensor == ev->tensor && k->phase == ev->phase &&
		    k->reason == ev->reason && k->again == ev->again)
			return i;
	}
	if (s->n == FLOWS)
		abort();
	s->key[s->n] = *ev;
	return s->n++;
}

static void add(struct sums *s, const struct gn_event *ev, u64 count)
{
	int i = flow_of(s, ev);

	s->count[i] += count;
	s->wire[i] += ev->wire_bytes;
	s->raw[i] += ev->raw_bytes;
	s->stream[i] += ev->stream_bytes;
	s->events += count;
}

/* The upcall: what a probe would see. */
static void record(void *arg, const struct gn_event *ev)
{
	struct sums *s = arg;

	s->upcalls++;
	if (!ev->count || ev->flow)
		s->bad++;
	if (ev->type == GN_EV_STEP)
		s->step_seen_events = s->events;
	add(s, ev, ev->count);
}

static const struct gn_dl_up up = { .account = record };

/* Delivery state enough for gn_dl_account(): peers, counters, upcall. */
static void dl_init(struct gn_dl *dl, struct gn_env_libc *env, struct sums *s)
{
	memset(dl, 0, sizeof(*dl));
	dl->world = PEERS;
	dl->env = &env->env;
	dl->up = &up;
	dl->up_arg = s;
	dl->peers = gn_alloc_array(dl->env, PEERS, sizeof(*dl->peers));
}

/* Every flow of @a is in @b with the same count and bytes, and back. */
static int same_sums(struct sums *a, struct sums *b)
{
	int i, j, bad = 0;

	for (i = 0; i < a->n; i++) {
		j = flow_of(b, &a->key[i]);
		if (a->count[i] != b->count[j] || a->wire[i] != b->wire[j] ||
		    a->raw[i] != b->raw[j] || a->stream[i] != b->stream[j]) {
			fprintf(stderr, "# flow type %u peer %d tensor %u phase %u reason %u again %d: count %llu/%llu wire %llu/%llu\n",
				a->key[i].type, a->key[i].peer, a->key[i].tensor,
				a->key[i].phase, a->key[i].reason, a->key[i].again,
				(unsigned long long)a->count[i],
				(unsigned long long)b->count[j],
				(unsigned long long)a->wire[i],
				(unsigned long long)b->wire[j]);
			bad++;
		}
	}
	return bad + (a->n != b->n);
}

static u64 rnd(u64 *x)
{
	*x ^= *x << 13;
	*x ^= *x >> 7;
	*x ^= *x << 17;
	return *x;
}

static struct gn_stats tensor_stats;

/* A random event of one of a few dozen flows. */
static struct gn_event random_event(u64 *x)
{
	static const u8 types[] = { GN_EV_MSG, GN_EV_TX, GN_EV_TX, GN_EV_TX,
				    GN_EV_TX_CTL, GN_EV_RX, GN_EV_RX, GN_EV_RX,
				    GN_EV_DROP };
	struct gn_event ev = { .type = types[rnd(x) % sizeof(types)],
			       .peer = (int)(rnd(x) % (PEERS + 1)) - 1,
			       .tensor = 7 + (u32)(rnd(x) % 2),
			       .phase = (u8)(rnd(x) % 2),
			       .flow = &tensor_stats };

	switch (ev.type) {
	case GN_EV_MSG:
		ev.raw_bytes = 4 * (rnd(x) % 100000);
		ev.stream_bytes = rnd(x) % 20000;
		break;
	case GN_EV_TX:
		ev.again = rnd(x) % 8 == 0;
		/* fall through */
	case GN_EV_TX_CTL:
	case GN_EV_RX:
		ev.wire_bytes = 40 + (u32)(rnd(x) % 1400);
		break;
	case GN_EV_DROP:
		ev.reason = (u8)(rnd(x) % GN_DROP_COUNT);
		ev.tensor = 0;
		ev.phase = 0;
		break;
	}
	if (ev.peer < 0 && ev.type != GN_EV_DROP)
		ev.peer = 0;
	return ev;
}

TEST(bulk_of_one_flow_is_one_upcall)
{
	static struct sums seen;
	struct gn_env_libc env = { 0 };
	struct gn_dl dl;
	struct gn_event ev = { .type = GN_EV_RX, .peer = 1, .tensor = 7,
			       .phase = GN_PHASE_GATHER, .wire_bytes = 1400,
			       .flow = &tensor_stats };
	int i;

	memset(&tensor_stats, 0, sizeof(tensor_stats));
	gn_env_libc_init(&env);
	dl_init(&dl, &env, &seen);
	for (i = 0; i < 1000; i++) {
		gn_dl_account(&dl, &ev);
		/* The counters move at once, per packet. */
		ASSERT_EQ(i + 1, dl.stats.rx_packets);
		ASSERT_EQ(i + 1, dl.peers[1].stats.rx_packets);
		ASSERT_EQ(i + 1, tensor_stats.rx_packets);
	}
	ASSERT_EQ(0, seen.upcalls);
	gn_dl_account_flush(&dl);
	ASSERT_EQ(1, seen.upcalls);
	ASSERT_EQ(1000, seen.count[0]);
	ASSERT_EQ(1400000, seen.wire[0]);
	ASSERT_EQ(1400000, dl.stats.rx_wire_bytes);
	ASSERT_EQ(0, seen.bad);
	/* Nothing is left to flush. */
	gn_dl_account_flush(&dl);
	ASSERT_EQ(1, seen.upcalls);
	gn_free(dl.env, dl.peers);
	gn_env_libc_destroy(&env);
}

TEST(interleaved_flows_sum_exactly)
{
	static struct sums seen, sent;
	struct gn_env_libc env = { 0 };
	struct gn_dl dl;
	u64 x = 0x9e3779b97f4a7c15ull, tx = 0, polls = 0;
	int i;

	memset(&tensor_stats, 0, sizeof(tensor_stats));
	gn_env_libc_init(&env);
	dl_init(&dl, &env, &seen);
	for (i = 0; i < 200000; i++) {
		struct gn_event ev = random_event(&x);

		add(&sent, &ev, 1);
		gn_dl_account(&dl, &ev);
		tx += ev.type == GN_EV_TX;
		ASSERT_EQ(tx, dl.stats.tx_packets);
		if (rnd(&x) % 64 == 0) {
			/* A poll ends: everything so far is out. */
			gn_dl_account_flush(&dl);
			ASSERT_EQ(sent.events, seen.events);
			polls++;
		}
	}
	gn_dl_account_flush(&dl);
	ASSERT_EQ(0, same_sums(&sent, &seen));
	ASSERT_EQ(0, seen.bad);
	ASSERT_EQ(tx, tensor_stats.tx_packets);
	/* Dozens of flows at random coalesce poorly, but never worse than
	 * one upcall per event. */
	ASSERT_LE(seen.upcalls, 200000);
	TH_LOG("%llu events of %d flows in %llu upcalls, %llu polls",
	       (unsigned long long)sent.events, sent.n,
	       (unsigned long long)seen.upcalls, (unsigned long long)polls);
	gn_free(dl.env, dl.peers);
	gn_env_libc_destroy(&env);
}

/* As many flows as are held back at once, interleaved: one upcall each per poll. */
TEST(few_interleaved_flows_coalesce)
{
	static struct sums seen, sent;
	struct gn_env_libc env = { 0 };
	struct gn_dl dl;
	u64 x = 12345, polls = 0;
	int i;

	gn_env_libc_init(&env);
	dl_init(&dl, &env, &seen);
	for (i = 0; i < 64000; i++) {
		struct gn_event ev = { .type = GN_EV_RX, .peer = 1 + (int)(rnd(&x) % 2),
				       .tensor = 7, .phase = (u8)(rnd(&x) % 2),
				       .wire_bytes = 40 + (u32)(rnd(&x) % 1400) };

		add(&sent, &ev, 1);
		gn_dl_account(&dl, &ev);
		if (i % 64 == 63) {
			gn_dl_account_flush(&dl);
			polls++;
		}
	}
	ASSERT_EQ(0, same_sums(&sent, &seen));
	ASSERT_LE(seen.upcalls, GN_ACCT_PENDING * polls);
	gn_free(dl.env, dl.peers);
	gn_env_libc_destroy(&env);
}

TEST(step_end_follows_what_came_before)
{
	static struct sums seen;
	struct gn_env_libc env = { 0 };
	struct gn_dl dl;
	struct gn_event tx = { .type = GN_EV_TX, .peer = 2, .tensor = 7,
			       .wire_bytes = 1000 };
	struct gn_event st = { .type = GN_EV_STEP, .peer = -1, .tensor = 7,
			       .step = 3, .ns = 5000 };
	int i;

	gn_env_libc_init(&env);
	dl_init(&dl, &env, &seen);
	for (i = 0; i < 10; i++)
		gn_dl_account(&dl, &tx);
	gn_dl_account(&dl, &st);
	/* At once, after the ten packets, and one upcall per step. */
	ASSERT_EQ(2, seen.upcalls);
	ASSERT_EQ(10, seen.step_seen_events);
	gn_dl_account(&dl, &st);
	ASSERT_EQ(3, seen.upcalls);
	ASSERT_EQ(2, seen.count[flow_of(&seen, &st)]);
	ASSERT_EQ(2, dl.stats.allreduces);
	gn_free(dl.env, dl.peers);
	gn_env_libc_destroy(&env);
}

TEST(destroy_hands_over_what_is_held)
{
	static struct sums seen;
	struct gn_env_libc env = { 0 };
	struct gn_dl dl;
	struct gn_event ev = { .type = GN_EV_MSG, .peer = 0, .tensor = 7,
			       .raw_bytes = 4096, .stream_bytes = 300 };

	gn_env_libc_init(&env);
	dl_init(&dl, &env, &seen);
	gn_dl_account(&dl, &ev);
	gn_dl_account(&dl, &ev);
	ASSERT_EQ(0, seen.upcalls);
	gn_dl_destroy(&dl);
	ASSERT_EQ(1, seen.upcalls);
	ASSERT_EQ(2, seen.count[0]);
	ASSERT_EQ(600, seen.stream[0]);
	gn_env_libc_destroy(&env);
}

/* ---- the core's scenario -------------------------------------------------- */

static void scn_idle(void *arg, u64 until_ns)
{
	u64 now = gn_env_libc_now(), d;
	struct timespec ts = { 0 };

	(void)arg;
	if (!until_ns || until_ns <= now)
		return;
	d = until_ns - now;
	ts.tv_nsec = (long)(d > 10000000 ? 10000000 : d);
	nanosleep(&ts, NULL);
}

FIXTURE(scenario) {
	int unused;
};

FIXTURE_SETUP(scenario)
{
}

FIXTURE_TEARDOWN(scenario)
{
}

TEST_F_TIMEOUT(scenario, counts_match, 240)
{
	static struct sums seen[GN_SCN_WORLD];
	static struct gn_scn_result res;
	struct gn_scn_hooks hooks = { .idle = scn_idle, .account = record };
	struct gn_env_libc env = { 0 };
	u64 sent = 0, rtx = 0, dups = 0, pkts = 0, upcalls = 0, events = 0;
	int r, i, k, err;

	for (r = 0; r < GN_SCN_WORLD; r++)
		hooks.account_arg[r] = &seen[r];
	gn_env_libc_init(&env);
	err = gn_scn_run(&env.env, &hooks, &res);
	gn_env_libc_destroy(&env);
	ASSERT_EQ(0, err) TH_LOG("%s: %s", res.what, res.msg);
	for (k = 0; k < GN_SCN_CASES; k++) {
		sent += res.counts[k].sent;
		rtx += res.retransmits[k];
		dups += res.dup_drops[k];
	}
	for (r = 0; r < GN_SCN_WORLD; r++) {
		struct sums *s = &seen[r];

		ASSERT_EQ(0, s->bad);
		upcalls += s->upcalls;
		events += s->events;
		for (i = 0; i < s->n; i++) {
			u8 t = s->key[i].type;

			if (t == GN_EV_TX || t == GN_EV_TX_CTL)
				pkts += s->count[i];
			if (t == GN_EV_TX && s->key[i].again)
				rtx -= s->count[i];
			if (t == GN_EV_DROP && s->key[i].reason == GN_DROP_DUPLICATE)
				dups -= s->count[i];
		}
	}
	/* Every packet the fabric carried was counted, once. */
	ASSERT_EQ(sent, pkts);
	ASSERT_EQ(0, rtx);
	ASSERT_EQ(0, dups);
	ASSERT_GT(pkts, 0);
	/*
	 * Coalesced, if only a little: the scenario's messages are a few
	 * packets each (bpf-stat's bulk job shows the hits of a big one).
	 */
	ASSERT_LT(upcalls, events);
	TH_LOG("%llu packets sent, %llu events, %llu upcalls",
	       (unsigned long long)pkts, (unsigned long long)events,
	       (unsigned long long)upcalls);
}

TEST_HARNESS_MAIN
