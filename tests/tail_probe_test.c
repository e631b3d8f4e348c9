// SPDX-License-Identifier: MIT
/*
 * tail_probe_test.c - tail-loss probes (lib/delivery/send.c): two protocol
 * cores in one thread over the in-memory fabric, on a clock that moves
 * only when every polled core is waiting for it. A message whose last
 * packet is lost is repaired because a probe's answer showed the packet
 * lost, never by the retransmission timeout; a receiver that is not
 * polled for longer than the probe timeout (and than the old 10 ms
 * retransmission floor) is probed, and once it answers nothing is resent;
 * small steps with pauses between them are not probed beyond a share of
 * the data; ACKs a full transmit queue turns away wait and go later, and
 * nothing is resent for them. What the core did is read from its internal counters (struct
 * gn_dl_counts), not from the public statistics.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "kselftest_harness.h"
#include <gradnet/wire.h>
#include "collective.h"
#include "core.h"
#include "mem.h"

#define WORLD 2
#define JOB 0x7a11e55u
#define TENSOR 3u
#define MTU 1500u
/* Dense: 5000 values a shard, chunks of 4096 and 904 values, 12 and 3 packets. */
#define ELEMS 10000u
#define CHUNK 4096u
#define MS 1000000ull
/* Well under the retransmission backstop, well over the old 10 ms floor. */
#define SILENCE_NS (30 * MS)
#define LIMIT_NS (150 * MS)
/* What a probe costs on the wire: a PING, its PONG and about an ACK. */
#define PROBE_COST (3 * (GN_WIRE_HDR_LEN + GN_WIRE_PING_LEN + GN_WIRE_TAG))

static const uint8_t key[GN_MAC_KEY_LEN + 1] = "tail probe key!!";

/* ---- a clock that moves only when the test moves it ---- */

static uint64_t vclock = 1000 * MS;
static uint64_t rnd = 0x243f6a8885a308d3ull;

static void *v_alloc(void *env, size_t bytes)
{
	return calloc(1, bytes);
}

static void v_free(void *env, void *p)
{
	free(p);
}

static uint64_t v_now(void *env)
{
	return vclock;
}

static void v_nop(void *env)
{
}

static int v_random(void *env, void *buf, size_t len)
{
	uint8_t *b = buf;
	size_t i;

	for (i = 0; i < len; i++) {
		rnd = rnd * 6364136223846793005ull + 1442695040888963407ull;
		b[i] = (uint8_t)(rnd >> 56);
	}
	return 0;
}

static const struct gn_env_ops v_ops = {
	.alloc = v_alloc, .free = v_free, .now_ns = v_now, .lock = v_nop,
	.unlock = v_nop, .wake = v_nop, .random = v_random,
};

static const struct gn_env venv = { .ops = &v_ops };

/* ---- a transport that loses exactly the packets the test names ---- */

struct rig;

struct lossy {
	struct gn_transport inner;
	struct gn_transport_ops ops;
	struct rig *rig;
};

struct rig {
	struct gn_mem_fabric *fab;
	struct lossy tp[WORLD];
	struct gn_transport outer[WORLD];
	struct gn_ctx *ctx[WORLD];
	float *x[WORLD], *want;
	/* Lose the first transmission of this many message tails from rank 0. */
	int tails_to_lose;
	int tails_lost;
	/* Lose rank 0's first tensor descriptor (CTRL) to rank 1. */
	bool lose_desc;
	/*
	 * Rank 1's transport refuses this many ACK sends, as a tx queue full
	 * of the rank's own data does (the send returns 0): back-pressure.
	 */
	int acks_to_refuse;
	int acks_refused;
	bool done[WORLD];
};

static struct gn_buf *l_get(void *tp)
{
	struct lossy *l = tp;

	return l->inner.ops->get(l->inner.state);
}

static void l_hold(void *tp, struct gn_buf *b)
{
	struct lossy *l = tp;

	l->inner.ops->hold(l->inner.state, b);
}

static void l_put(void *tp, struct gn_buf *b)
{
	struct lossy *l = tp;

	l->inner.ops->put(l->inner.state, b);
}

/*
 * The last packet of a result (allgather) message of rank 0's, while any
 * are to be lost: rank 0 sends nothing after its results, so no later
 * packet's acknowledgement can show the loss.
 */
static bool lose(struct lossy *l, const struct gn_buf *b)
{
	struct rig *r = l->rig;
	struct gn_wire_hdr h;
	struct gn_wire_data d;

	if (l != &r->tp[0])
		return false;
	if (r->lose_desc && !gn_wire_hdr_get(b->data, b->len, &h) &&
	    h.type == GN_PKT_CTRL) {
		r->lose_desc = false;
		return true;
	}
	if (r->tails_lost >= r->tails_to_lose)
		return false;
	if (gn_wire_hdr_get(b->data, b->len, &h) || h.type != GN_PKT_DATA ||
	    h.phase != GN_PHASE_GATHER || gn_wire_data_get(b->data, &h, &d) || d.pkt + 1 != d.npkts ||
	    d.npkts < 2)
		return false;
	r->tails_lost++;
	return true;
}

/* An ACK of rank 1's that its full queue does not take, while any are. */
static bool refuse(struct lossy *l, const struct gn_buf *b)
{
	struct rig *r = l->rig;
	struct gn_wire_hdr h;

	if (l != &r->tp[1] || r->acks_refused >= r->acks_to_refuse ||
	    gn_wire_hdr_get(b->data, b->len, &h) || h.type != GN_PKT_ACK)
		return false;
	r->acks_refused++;
	return true;
}

static int l_send(void *tp, struct gn_buf *const *b, int n)
{
	struct lossy *l = tp;
	int i;

	for (i = 0; i < n; i++) {
		if (refuse(l, b[i]))
			return i;
		if (!lose(l, b[i]))
			l->inner.ops->send(l->inner.state, &b[i], 1);
	}
	return n;
}

static int l_recv(void *tp, struct gn_buf **b, int max)
{
	struct lossy *l = tp;

	return l->inner.ops->recv(l->inner.state, b, max);
}

static int l_poll(void *tp, uint64_t now_ns, uint64_t *next_ns)
{
	struct lossy *l = tp;

	return l->inner.ops->poll(l->inner.state, now_ns, next_ns);
}

static int l_wait(void *tp, int timeout_ms)
{
	struct lossy *l = tp;

	return l->inner.ops->wait(l->inner.state, timeout_ms);
}

static void l_wake(void *tp)
{
}

static void l_close(void *tp)
{
	struct lossy *l = tp;

	l->inner.ops->close(l->inner.state);
}

/* ---- the job ---- */

static int rig_open(struct rig *r)
{
	struct gn_core_conf conf = {
		.world = WORLD, .job = JOB, .mtu = MTU, .chunk = CHUNK,
		.codec = { .codec = GN_CODEC_NONE },
		.timeout_ns = 5000 * MS,
		.step_timeout_ns = 10000 * MS, .key = key,
	};
	int k, err;

	err = gn_mem_fabric_new(&venv, WORLD, MTU, 1024, NULL, &r->fab);
	if (err)
		return err;
	for (k = 0; k < WORLD; k++) {
		struct lossy *l = &r->tp[k];

		err = gn_mem_open(r->fab, k, &l->inner);
		if (err)
			return err;
		l->rig = r;
		l->ops = (struct gn_transport_ops){
			.name = "lossy", .get = l_get, .hold = l_hold,
			.put = l_put, .send = l_send, .recv = l_recv,
			.poll = l_poll, .wait = l_wait, .wake = l_wake,
			.close = l_close,
		};
		r->outer[k] = l->inner;
		r->outer[k].ops = &l->ops;
		r->outer[k].state = l;
		conf.rank = k;
		err = gn_core_open(&conf, &venv, &r->outer[k], &r->ctx[k]);
		if (err)
			return err;
		r->x[k] = calloc(ELEMS, sizeof(float));
		if (!r->x[k])
			return -ENOMEM;
	}
	r->want = calloc(ELEMS, sizeof(float));
	return r->want ? 0 : -ENOMEM;
}

static void rig_close(struct rig *r)
{
	int k;

	for (k = WORLD - 1; k >= 0; k--) {
		if (r->ctx[k])
			gn_core_free(r->ctx[k]);
		if (r->outer[k].ops)
			r->outer[k].ops->close(r->outer[k].state);
		free(r->x[k]);
	}
	free(r->want);
	if (r->fab)
		gn_mem_fabric_free(r->fab);
}

typedef bool (*until_fn)(struct rig *r);

static bool all_ready(struct rig *r)
{
	return gn_core_status(r->ctx[0]) == 1 && gn_core_status(r->ctx[1]) == 1;
}

/* A step's end is told once: remembered. */
static bool all_done(struct rig *r)
{
	int k, err;

	for (k = 0; k < WORLD; k++)
		if (!r->done[k])
			r->done[k] = gn_core_allreduce_done(r->ctx[k], TENSOR,
							    &err) == 1 && !err;
	return r->done[0] && r->done[1];
}

/*
 * Poll the ranks of @mask round after round until @until holds (NULL:
 * never) or the clock reaches @limit. A round that sent something is
 * followed by one a microsecond later, so packets are taken about when
 * they arrive; after a quiet round the clock jumps to the earliest time a
 * polled core asked for. Return: whether @until held.
 */
static bool run(struct rig *r, unsigned int mask, until_fn until, uint64_t limit)
{
	struct gn_mem_counts c;
	long rounds;
	int k;

	for (rounds = 0; rounds < 1000000; rounds++) {
		uint64_t next = UINT64_MAX, sent;

		gn_mem_fabric_counts(r->fab, &c);
		sent = c.sent;

		for (k = 0; k < WORLD; k++) {
			uint64_t t;

			if (!(mask & 1u << k))
				continue;
			t = gn_core_poll(r->ctx[k]);
			next = t < next ? t : next;
		}
		if (until && until(r))
			return true;
		gn_mem_fabric_counts(r->fab, &c);
		if (c.sent != sent)
			next = vclock;
		/* More to do at once: a microsecond passes, so nothing spins. */
		vclock = next > vclock ? next : vclock + 1000;
		if (vclock >= limit) {
			vclock = limit;
			return false;
		}
	}
	return false;
}

/* Both ranks registered and know each other's tensor: data may flow. */
static int rig_register(struct rig *r, int codec)
{
	struct gn_core_tensor o = { .id = TENSOR, .elems = ELEMS,
				    .codec = { .codec = (u32)codec } };
	int k, err;

	if (!run(r, 3, all_ready, vclock + 1000 * MS))
		return -ETIMEDOUT;
	for (k = 0; k < WORLD; k++) {
		err = gn_core_tensor_register(r->ctx[k], &o);
		if (err)
			return err;
	}
	run(r, 3, NULL, vclock + 50 * MS);
	return 0;
}

static int rig_step(struct rig *r)
{
	int k, err;

	memset(r->done, 0, sizeof(r->done));
	for (k = 0; k < WORLD; k++) {
		err = gn_core_allreduce_start(r->ctx[k], TENSOR, r->x[k]);
		if (err)
			return err;
	}
	return 0;
}

static int rig_start(struct rig *r)
{
	uint32_t i;
	int err;

	err = rig_register(r, GN_CODEC_NONE);
	if (err)
		return err;
	for (i = 0; i < ELEMS; i++) {
		r->x[0][i] = (float)(i % 97) * 0.25f - 3.0f;
		r->x[1][i] = (float)(i % 89) * 0.5f + 1.0f;
		/* Two addends: the same sum in either order. */
		r->want[i] = r->x[0][i] + r->x[1][i];
	}
	return rig_step(r);
}

/* Both ranks hold the sum, to the bit. */
static bool results_right(struct rig *r)
{
	return !memcmp(r->want, r->x[0], ELEMS * sizeof(float)) &&
	       !memcmp(r->want, r->x[1], ELEMS * sizeof(float));
}

static struct gn_dl_counts counts(struct rig *r, int k)
{
	return r->ctx[k]->dl.counts;
}

static uint64_t dups(struct rig *r, int k)
{
	return r->ctx[k]->dl.stats.drops[GN_DROP_DUPLICATE];
}

FIXTURE(probe) {
	struct rig r;
};

FIXTURE_SETUP(probe)
{
	memset(&self->r, 0, sizeof(self->r));
	ASSERT_EQ(0, rig_open(&self->r));
}

FIXTURE_TEARDOWN(probe)
{
	rig_close(&self->r);
}

/*
 * The last packet of both of rank 0's result messages is lost. Nothing
 * sent after them can be acknowledged to reveal them (RACK), so only a
 * probe can: its answer shows them lost and they are resent, before any
 * timeout.
 */
TEST_F(probe, lost_tail_found_by_probe_answer)
{
	struct rig *r = &self->r;
	struct gn_dl_counts c0, c1;

	r->tails_to_lose = 2;
	ASSERT_EQ(0, rig_start(r));
	ASSERT_TRUE(run(r, 3, all_done, vclock + LIMIT_NS));
	ASSERT_EQ(2, r->tails_lost);
	ASSERT_TRUE(results_right(r));
	c0 = counts(r, 0);
	c1 = counts(r, 1);
	TH_LOG("rank 0: %llu probes, %llu answered, %llu packets shown lost by them, "
	       "%llu resent as lost, %llu after a timeout",
	       (unsigned long long)c0.probes, (unsigned long long)c0.probe_answers,
	       (unsigned long long)c0.probe_lost, (unsigned long long)c0.rtx_lost,
	       (unsigned long long)c0.rtx_timeout);
	EXPECT_EQ(0, c0.rtx_timeout + c1.rtx_timeout);
	EXPECT_LE(1, c0.probes);
	EXPECT_LE(1, c0.probe_answers);
	/* Both tails, shown lost by a PONG, resent as lost. */
	EXPECT_LE(2, c0.probe_lost);
	EXPECT_LE(2, c0.rtx_lost);
	/* Nothing that arrived was sent again. */
	EXPECT_EQ(0, dups(r, 0) + dups(r, 1));
}

/*
 * Rank 1's transport turns its first ACKs away, as a tx queue full of its
 * own data does. That is back-pressure, not loss: the ACKs wait in the
 * delivery layer's park and go at the next poll, so rank 0 takes nothing
 * that arrived for lost and resends nothing. (When they were dropped,
 * rank 0 found its packets unacknowledged, probed, and resent them.)
 */
TEST_F(probe, refused_acks_wait_not_resent)
{
	struct rig *r = &self->r;
	struct gn_dl_counts c0, c1;

	r->acks_to_refuse = 3;
	ASSERT_EQ(0, rig_start(r));
	ASSERT_TRUE(run(r, 3, all_done, vclock + LIMIT_NS));
	ASSERT_TRUE(results_right(r));
	/* The ACKs held for the next step's data go after a while. */
	run(r, 3, NULL, vclock + SILENCE_NS);
	TH_LOG("rank 1's transport refused %d ACKs", r->acks_refused);
	ASSERT_LE(1, r->acks_refused);
	c0 = counts(r, 0);
	c1 = counts(r, 1);
	TH_LOG("rank 1: %llu ACKs parked, %llu dropped; rank 0: %llu resent as lost, "
	       "%llu after a timeout, %llu probes",
	       (unsigned long long)c1.ctl_parked, (unsigned long long)c1.ctl_dropped,
	       (unsigned long long)c0.rtx_lost, (unsigned long long)c0.rtx_timeout,
	       (unsigned long long)c0.probes);
	EXPECT_LE(1, c1.ctl_parked);
	EXPECT_EQ(0, c1.ctl_dropped);
	EXPECT_EQ(0, c0.rtx_lost + c0.rtx_timeout + c1.rtx_lost + c1.rtx_timeout);
	EXPECT_EQ(0, dups(r, 0) + dups(r, 1));
}

/*
 * Rank 1 is not polled for 30 ms after the step started, as a rank that
 * is not scheduled: rank 0 probes it, and once rank 1 runs it acknowledges
 * everything before answering, so nothing is resent.
 */
TEST_F(probe, silent_receiver_probed_not_resent)
{
	struct rig *r = &self->r;
	struct gn_dl_counts c0, c1;

	ASSERT_EQ(0, rig_start(r));
	ASSERT_FALSE(run(r, 1, all_done, vclock + SILENCE_NS));
	c0 = counts(r, 0);
	EXPECT_LE(1, c0.probes);
	EXPECT_EQ(0, c0.probe_answers);
	EXPECT_EQ(0, c0.rtx_lost + c0.rtx_timeout);
	ASSERT_TRUE(run(r, 3, all_done, vclock + LIMIT_NS));
	ASSERT_TRUE(results_right(r));
	c0 = counts(r, 0);
	c1 = counts(r, 1);
	TH_LOG("rank 0: %llu probes, %llu answered; rank 1: %llu PINGs flushed ACKs",
	       (unsigned long long)c0.probes, (unsigned long long)c0.probe_answers,
	       (unsigned long long)c1.ping_flushes);
	EXPECT_LE(1, c0.probe_answers);
	EXPECT_LE(1, c1.ping_flushes);
	EXPECT_EQ(0, c0.rtx_lost + c0.rtx_timeout + c1.rtx_lost + c1.rtx_timeout);
	EXPECT_EQ(0, c0.probe_lost + c1.probe_lost);
	EXPECT_EQ(0, dups(r, 0) + dups(r, 1));
}

/*
 * Small 3LC steps with a pause between them, as a training loop has: the
 * receivers hold their acknowledgements for the next step's data, longer
 * than the probe timeout, so a probe would go out at every step. Probes
 * are paced by the data sent instead: a probe and what it brings back
 * (PING, PONG, ACK) cost at most 1/64 of the data bytes, plus a burst of
 * 8 probes per rank. Unpaced, this job sends 80 probes; paced, 11.
 */
TEST_F(probe, paced_within_control_budget)
{
	struct rig *r = &self->r;
	uint64_t ctl = 0, wire = 0, probes = 0, slow = 0;
	uint32_t i;
	int step, k;

	ASSERT_EQ(0, rig_register(r, GN_CODEC_3LC));
	for (step = 0; step < 40; step++) {
		for (k = 0; k < WORLD; k++)
			for (i = 0; i < ELEMS; i++)
				r->x[k][i] = (float)((i * 7 + step * 13 + k) % 101) * 0.01f - 0.5f;
		ASSERT_EQ(0, rig_step(r));
		ASSERT_TRUE(run(r, 3, all_done, vclock + LIMIT_NS));
		ASSERT_EQ(0, memcmp(r->x[0], r->x[1], ELEMS * sizeof(float)));
		/* The trainer computes for 3 ms; the cores are polled meanwhile. */
		run(r, 3, NULL, vclock + 3 * MS);
	}
	for (k = 0; k < WORLD; k++) {
		ctl += r->ctx[k]->dl.stats.ctl_bytes;
		wire += r->ctx[k]->dl.stats.wire_bytes;
		probes += counts(r, k).probes;
		slow += counts(r, k).probe_slow;
	}
	TH_LOG("%llu data bytes, %llu control bytes (%.2f%%), %llu probes, %llu of them waited for credit",
	       (unsigned long long)wire, (unsigned long long)ctl,
	       100.0 * (double)ctl / (double)wire, (unsigned long long)probes,
	       (unsigned long long)slow);
	EXPECT_LE(probes * PROBE_COST, wire / 64 + WORLD * 8 * PROBE_COST);
}

/*
 * Rank 0's descriptor of the tensor is lost on its way to rank 1, and the
 * step starts at once: rank 0 has rank 1's descriptor, but rank 1 cannot
 * take rank 0's data before it has rank 0's (it would drop it, and it
 * would go again). So data waits until rank 1 acknowledged the
 * descriptor: none is dropped, none is resent.
 */
TEST_F(probe, data_waits_for_descriptor_ack)
{
	struct gn_core_tensor o = { .id = TENSOR, .elems = ELEMS,
				    .codec = { .codec = GN_CODEC_NONE } };
	struct rig *r = &self->r;
	int k;

	ASSERT_TRUE(run(r, 3, all_ready, vclock + 1000 * MS));
	r->lose_desc = true;
	for (k = 0; k < WORLD; k++)
		ASSERT_EQ(0, gn_core_tensor_register(r->ctx[k], &o));
	for (k = 0; k < WORLD; k++) {
		uint32_t i;

		for (i = 0; i < ELEMS; i++)
			r->x[k][i] = (float)((i + (uint32_t)k) % 31) - 7.0f;
	}
	for (k = 0; k < ELEMS; k++)
		r->want[k] = r->x[0][k] + r->x[1][k];
	ASSERT_EQ(0, rig_step(r));
	ASSERT_TRUE(run(r, 3, all_done, vclock + LIMIT_NS));
	ASSERT_FALSE(r->lose_desc);
	ASSERT_TRUE(results_right(r));
	TH_LOG("rank 1 dropped %llu data packets of a tensor it lacked; "
	       "rank 0 resent %llu",
	       (unsigned long long)r->ctx[1]->dl.stats.drops[GN_DROP_TENSOR],
	       (unsigned long long)r->ctx[0]->dl.stats.retransmits);
	EXPECT_EQ(0, r->ctx[1]->dl.stats.drops[GN_DROP_TENSOR]);
	EXPECT_EQ(0, r->ctx[0]->dl.stats.retransmits);
}

static bool rank0_settled(struct rig *r)
{
	return !gn_core_owes(r->ctx[0]);
}

/*
 * Rank 1 leaves right after its step, as a closing rank does: it may hold
 * acknowledgements back for data that would imply them, which will not
 * come. gn_core_ack_now() (called at close) sends them, so rank 0 owes
 * nothing soon after without probing a rank that is gone.
 */
TEST_F(probe, leaving_rank_acknowledges_now)
{
	struct rig *r = &self->r;
	uint64_t probes;

	ASSERT_EQ(0, rig_start(r));
	ASSERT_TRUE(run(r, 3, all_done, vclock + LIMIT_NS));
	probes = counts(r, 0).probes;
	gn_core_ack_now(r->ctx[1]);
	ASSERT_TRUE(run(r, 1, rank0_settled, vclock + 2 * MS));
	EXPECT_EQ(probes, counts(r, 0).probes);
}

TEST_HARNESS_MAIN
