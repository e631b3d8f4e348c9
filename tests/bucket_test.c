// SPDX-License-Identifier: MIT
/*
 * bucket_test.c - buckets (gn_bucket_register()): every rank's result
 * equals a single-process reference of the fused semantics (chunks cut at
 * member bounds, each with its own scale, error feedback carried per
 * element) bit for bit, step after step; a shared-scale bucket and a
 * one-member bucket equal a plain tensor of the same values; bad options
 * and buckets that ranks cut differently are refused with clear errors.
 * Ranks are processes on loopback.
 */
#include <errno.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <gradnet/codec.h>
#include <gradnet/gradnet.h>

#include "kselftest_harness.h"
#include "testutil.h"

#define BT_RANKS 4
#define BT_STEPS 4
#define BT_MAX_STEPS 300
#define BT_MEMBERS 8
#define BT_CHUNK 4096u

/* A job: a bucket (id 1) and, optionally, a plain tensor (id 2) of the
 * same size fed the same values. */
struct bt_spec {
	int world, steps, codec;
	unsigned int flags;		/* GN_TENSOR_AVERAGE, GN_BUCKET_SHARED_SCALE */
	unsigned int members;
	size_t elems[BT_MEMBERS];
	bool with_plain;
	const char *faults;		/* GN_TEST_FAULTS of every rank */
	/* rank 1 registers this instead, if members1 != 0 (0 elems: a plain tensor) */
	unsigned int members1;
	size_t elems1[BT_MEMBERS];
};

struct bt_out {
	int status[BT_RANKS];
	int rc[BT_RANKS][BT_MAX_STEPS];
	char msg[BT_RANKS][320];
	struct gn_stats stats[BT_RANKS];
	float data[];			/* per rank: bucket result, plain result */
};

static size_t bt_total(const size_t *elems, unsigned int members)
{
	size_t n = 0;
	unsigned int i;

	for (i = 0; i < members; i++)
		n += elems[i];
	return n;
}

/*
 * Rank @r's gradient at @step: member m is Laplace with a scale that
 * differs by 10^3 from member to member, as a bias differs from a weight.
 */
static void bt_grad(const struct bt_spec *s, float *x, int r, int step)
{
	static const float scale[3] = { 1e-2f, 1e-5f, 3e-3f };
	size_t at = 0, i;
	unsigned int m;

	for (m = 0; m < s->members; m++) {
		struct gn_rng g = { 0x5eed + (uint64_t)r * 7919 + (uint64_t)m * 104729 +
				    (uint64_t)step * 1000003 };

		for (i = 0; i < s->elems[m]; i++)
			x[at + i] = gn_rng_laplace(&g, scale[m % 3] * (float)(1 + r));
		at += s->elems[m];
	}
}

static void bt_rank(const struct bt_spec *s, struct bt_out *out, int r,
		    const char *peers)
{
	GN_OPTS(gn_ctx_opts, o, .rank = r, .world_size = s->world,
		.peers = peers, .flags = GN_CTX_INSECURE | GN_CTX_RANK,
		.chunk = BT_CHUNK, .timeout_ms = 5000);
	GN_OPTS(gn_bucket_opts, b, .id = 1, .members = s->members,
		.elems = s->elems, .codec = s->codec, .flags = s->flags);
	size_t n = bt_total(s->elems, s->members);
	float *x = malloc(n * sizeof(float)), *y = malloc(n * sizeof(float));
	float *dst = out->data + (size_t)r * 2 * n;
	struct gn_ctx *ctx;
	int step, e;

	if (s->faults)
		setenv("GN_TEST_FAULTS", s->faults, 1);
	if (gn_ctx_open(&o, &ctx))
		_exit(2);
	if (r == 1 && s->members1) {
		b.members = s->members1;
		b.elems = s->elems1;
	}
	if (r == 1 && s->members1 && !s->elems1[0]) {
		GN_OPTS(gn_tensor_opts, t, .id = 1, .elems = n, .codec = s->codec,
			.flags = s->flags & GN_TENSOR_AVERAGE);

		e = gn_tensor_register(ctx, &t);
	} else {
		e = gn_bucket_register(ctx, &b);
	}
	if (e)
		_exit(3);
	if (s->with_plain) {
		GN_OPTS(gn_tensor_opts, t, .id = 2, .elems = n, .codec = s->codec,
			.flags = s->flags & GN_TENSOR_AVERAGE);

		if (gn_tensor_register(ctx, &t))
			_exit(4);
	}
	for (step = 0; step < s->steps; step++) {
		bt_grad(s, x, r, step);
		memcpy(y, x, n * sizeof(float));
		e = gn_allreduce(ctx, 1, x);
		if (!e && s->with_plain)
			e = gn_allreduce(ctx, 2, y);
		out->rc[r][step] = e;
		if (e) {
			snprintf(out->msg[r], sizeof(out->msg[r]), "%s",
				 gn_ctx_errmsg(ctx));
			break;
		}
	}
	memcpy(dst, x, n * sizeof(float));
	memcpy(dst + n, y, n * sizeof(float));
	out->stats[r].sz = sizeof(out->stats[r]);
	gn_stats_ctx(ctx, &out->stats[r]);
	gn_ctx_close(ctx);
	_exit(0);
}

static struct bt_out *bt_run(const struct bt_spec *s)
{
	size_t n = bt_total(s->elems, s->members);
	size_t bytes = sizeof(struct bt_out) + (size_t)s->world * 2 * n * sizeof(float);
	struct bt_out *out = mmap(NULL, bytes, PROT_READ | PROT_WRITE,
				  MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	int base = 30000 + (int)(getpid() * 37 % 20000), r, left, st;
	pid_t pid[BT_RANKS];
	char peers[256] = "";
	time_t until = time(NULL) + 120;

	if (out == MAP_FAILED)
		return NULL;
	for (r = 0; r < s->world; r++)
		snprintf(peers + strlen(peers), sizeof(peers) - strlen(peers),
			 "%s127.0.0.1:%d", r ? "," : "", base + r);
	for (r = 0; r < s->world; r++) {
		pid[r] = fork();
		if (!pid[r])
			bt_rank(s, out, r, peers);
	}
	for (left = s->world; left > 0;) {
		pid_t p = waitpid(-1, &st, WNOHANG);

		for (r = 0; p > 0 && r < s->world; r++)
			if (pid[r] == p) {
				out->status[r] = st;
				left--;
			}
		if (p > 0)
			continue;
		if (time(NULL) > until) {
			for (r = 0; r < s->world; r++)
				kill(pid[r], SIGKILL);
			while (wait(NULL) > 0)
				;
			out->status[0] = -1;
			break;
		}
		usleep(2000);
	}
	return out;
}

/*
 * The reference of the fused semantics: shard j of the bucket is
 * [n*j/W, n*(j+1)/W); its chunks are the pieces of each member in it, cut
 * every BT_CHUNK values (the whole shard, cut every BT_CHUNK, when
 * @shared). Owners add their own share, then the others' decoded
 * contributions by rank, and quantize the sum with their error feedback.
 */
static void bt_reference(const struct bt_spec *s, bool shared, float *res)
{
	size_t n = bt_total(s->elems, s->members), lo, hi, a, b, m0, off, len;
	int W = s->world, r, j, step;
	bool avg = s->flags & GN_TENSOR_AVERAGE;
	float *g[BT_RANKS], *e[BT_RANKS], *eag = calloc(n, sizeof(float));
	float *acc = calloc(n, sizeof(float));
	uint8_t *q = malloc(gn_tlc_groups(BT_CHUNK) + 1);
	unsigned int m;

	for (r = 0; r < W; r++) {
		g[r] = malloc(n * sizeof(float));
		e[r] = calloc(n, sizeof(float));
	}
	for (step = 0; step < s->steps; step++) {
		for (r = 0; r < W; r++)
			bt_grad(s, g[r], r, step);
		for (j = 0; j < W; j++) {
			lo = n * (size_t)j / (size_t)W;
			hi = n * (size_t)(j + 1) / (size_t)W;
			for (m = 0, m0 = 0; m < s->members; m0 += s->elems[m++]) {
				a = shared ? lo : (m0 > lo ? m0 : lo);
				b = shared ? hi : (m0 + s->elems[m] < hi ? m0 + s->elems[m] : hi);
				for (off = a; off < b; off += len) {
					size_t gc, i;
					float mm;

					len = b - off < BT_CHUNK ? b - off : BT_CHUNK;
					gc = gn_tlc_groups(len);
					memcpy(acc + off, g[j] + off, len * sizeof(float));
					for (r = 0; r < W; r++) {
						if (r == j)
							continue;
						if (s->codec == GN_CODEC_NONE) {
							for (i = 0; i < len; i++)
								acc[off + i] += g[r][off + i];
							continue;
						}
						gn_tlc_quantize_chunks(g[r] + off, e[r] + off, e[r] + off,
								       len, len, 1.0f, q, &mm);
						gn_tlc_decode_slice(q, gc, mm, acc + off, len, 0, gc);
					}
					if (s->codec == GN_CODEC_NONE) {
						for (i = 0; i < len; i++)
							res[off + i] = avg ? acc[off + i] / (float)W :
									     acc[off + i];
						continue;
					}
					memset(res + off, 0, len * sizeof(float));
					gn_tlc_quantize_chunks(acc + off, eag + off, eag + off,
							       len, len, 1.0f, q, &mm);
					gn_tlc_decode_slice(q, gc, avg ? mm / (float)W : mm,
							    res + off, len, 0, gc);
				}
				if (shared)
					break;
			}
		}
	}
	for (r = 0; r < W; r++) {
		free(g[r]);
		free(e[r]);
	}
	free(eag);
	free(acc);
	free(q);
}

static void bt_check_ok(struct __test_metadata *_metadata,
			const struct bt_spec *s, const struct bt_out *out)
{
	int r, step;

	for (r = 0; r < s->world; r++) {
		ASSERT_EQ(0, out->status[r]) TH_LOG("rank %d exit status %#x", r,
						    out->status[r]);
		for (step = 0; step < s->steps; step++)
			ASSERT_EQ(0, out->rc[r][step]) TH_LOG("rank %d step %d: %s", r,
							      step, out->msg[r]);
	}
}

FIXTURE(fused) {
	struct bt_spec s;
};

FIXTURE_VARIANT(fused) {
	int world;
	int codec;
	unsigned int flags;
	const char *faults;
};

/* Weights, biases and a member longer than a chunk; scales 10^3 apart. */
FIXTURE_SETUP(fused)
{
	static const size_t sizes[] = { 10000, 7, 3, 9000, 1, 250, 4096, 13 };

	self->s = (struct bt_spec){ .world = variant->world, .steps = BT_STEPS,
				    .codec = variant->codec,
				    .flags = variant->flags, .members = 8,
				    .faults = variant->faults };
	memcpy(self->s.elems, sizes, sizeof(sizes));
}

FIXTURE_TEARDOWN(fused) {}

FIXTURE_VARIANT_ADD(fused, w3_3lc_avg) {
	.world = 3, .codec = GN_CODEC_3LC, .flags = GN_TENSOR_AVERAGE };
FIXTURE_VARIANT_ADD(fused, w4_3lc_sum) { .world = 4, .codec = GN_CODEC_3LC };
FIXTURE_VARIANT_ADD(fused, w2_dense_avg) {
	.world = 2, .codec = GN_CODEC_NONE, .flags = GN_TENSOR_AVERAGE };
FIXTURE_VARIANT_ADD(fused, w3_3lc_shared) {
	.world = 3, .codec = GN_CODEC_3LC,
	.flags = GN_TENSOR_AVERAGE | GN_BUCKET_SHARED_SCALE };
/* Loss, duplicates and reordering in every sender: the same bits, repaired. */
FIXTURE_VARIANT_ADD(fused, w3_3lc_faults) {
	.world = 3, .codec = GN_CODEC_3LC, .flags = GN_TENSOR_AVERAGE,
	.faults = "loss=0.05,dup=0.05,reorder=0.1,seed=11" };
FIXTURE_VARIANT_ADD(fused, w4_dense_faults) {
	.world = 4, .codec = GN_CODEC_NONE,
	.faults = "loss=0.02,dup=0.05,reorder=0.05,seed=5" };

/*
 * Every rank ends every step with the reference's values bit for bit;
 * a shared-scale bucket also equals a plain tensor of the same values
 * (the unfused run, in the same job), and a bucket with its own scales
 * does not (its small members would be lost against the large ones).
 */
TEST_F(fused, matches_reference)
{
	size_t n = bt_total(self->s.elems, self->s.members);
	bool shared = self->s.flags & GN_BUCKET_SHARED_SCALE;
	float *ref = malloc(n * sizeof(float));
	uint64_t again = 0;
	struct bt_out *out;
	int r;

	self->s.with_plain = true;
	out = bt_run(&self->s);
	ASSERT_NE(NULL, out);
	bt_check_ok(_metadata, &self->s, out);
	ASSERT_EQ(0, gn_codec_isa_set_default(GN_ISA_SCALAR));
	bt_reference(&self->s, shared, ref);
	for (r = 0; r < self->s.world; r++) {
		const float *got = out->data + (size_t)r * 2 * n;

		ASSERT_EQ(0, memcmp(ref, got, n * sizeof(float)))
			TH_LOG("rank %d: the bucket differs from the reference", r);
		if (shared || self->s.codec == GN_CODEC_NONE) {
			ASSERT_EQ(0, memcmp(got, got + n, n * sizeof(float)))
				TH_LOG("rank %d: fused and unfused differ", r);
		} else {
			ASSERT_NE(0, memcmp(got, got + n, n * sizeof(float)))
				TH_LOG("rank %d: member scales made no difference", r);
		}
		again += out->stats[r].retransmits;
	}
	/* Losses were there, and repaired by retransmission. */
	if (self->s.faults)
		ASSERT_LT(0, again);
	free(ref);
}

/* A bucket of one member is a tensor: bit-identical results. */
TEST(one_member_is_a_tensor)
{
	struct bt_spec s = { .world = 3, .steps = BT_STEPS, .codec = GN_CODEC_3LC,
			     .flags = GN_TENSOR_AVERAGE, .members = 1,
			     .elems = { 20011 }, .with_plain = true };
	size_t n = s.elems[0];
	struct bt_out *out = bt_run(&s);
	int r;

	ASSERT_NE(NULL, out);
	bt_check_ok(_metadata, &s, out);
	for (r = 0; r < s.world; r++) {
		const float *got = out->data + (size_t)r * 2 * n;

		ASSERT_EQ(0, memcmp(got, got + n, n * sizeof(float)))
			TH_LOG("rank %d", r);
	}
}

/* Ranks that cut a bucket differently fail its first step, all of them. */
static void expect_mismatch(struct __test_metadata *_metadata,
			    struct bt_spec *s, const char *what)
{
	struct bt_out *out = bt_run(s);
	int r;

	ASSERT_NE(NULL, out);
	for (r = 0; r < s->world; r++) {
		ASSERT_EQ(0, out->status[r]) TH_LOG("rank %d exit status %#x", r,
						    out->status[r]);
		ASSERT_EQ(-EPROTO, out->rc[r][0]) TH_LOG("rank %d: %s", r, out->msg[r]);
		ASSERT_NE(NULL, strstr(out->msg[r], what)) TH_LOG("rank %d: %s", r,
								 out->msg[r]);
	}
}

TEST(members_differ_across_ranks)
{
	struct bt_spec s = { .world = 2, .steps = 1, .codec = GN_CODEC_3LC,
			     .members = 2, .elems = { 100, 200 },
			     .members1 = 2, .elems1 = { 200, 100 } };

	expect_mismatch(_metadata, &s, "other members");
}

TEST(bucket_against_tensor)
{
	struct bt_spec s = { .world = 2, .steps = 1, .codec = GN_CODEC_3LC,
			     .members = 2, .elems = { 100, 200 },
			     .members1 = 1, .elems1 = { 0 } };

	expect_mismatch(_metadata, &s, "a plain tensor");
}

TEST(sizes_differ_across_ranks)
{
	struct bt_spec s = { .world = 2, .steps = 1, .codec = GN_CODEC_3LC,
			     .members = 2, .elems = { 100, 200 },
			     .members1 = 2, .elems1 = { 100, 201 } };

	expect_mismatch(_metadata, &s, "elements on rank");
}

/* Bad options: -EINVAL, -E2BIG or -EEXIST, and a message that says why. */
TEST(bad_options)
{
	static const size_t ok[] = { 5, 6 }, zero[] = { 5, 0, 6 };
	static const size_t huge[] = { 1ull << 40, 1 };
	GN_OPTS(gn_ctx_opts, o, .world_size = 1, .peers = "127.0.0.1:29917",
		.flags = GN_CTX_INSECURE);
	GN_OPTS(gn_bucket_opts, b, .id = 7, .members = 2, .elems = ok);
	GN_OPTS(gn_tensor_opts, t, .id = 8, .elems = 4);
	struct {
		struct gn_bucket_opts b;
		char more[8];
	} big = { .b = b, .more = { 1 } };
	struct gn_bucket_opts x;
	struct gn_ctx *ctx;

	ASSERT_EQ(0, gn_ctx_open(&o, &ctx)) TH_LOG("%s", gn_last_errmsg());
	ASSERT_EQ(-EINVAL, gn_bucket_register(NULL, &b));
	ASSERT_EQ(-EINVAL, gn_bucket_register(ctx, NULL));
	x = b;
	x.members = 0;
	ASSERT_EQ(-EINVAL, gn_bucket_register(ctx, &x));
	ASSERT_NE(NULL, strstr(gn_ctx_errmsg(ctx), "0 members"));
	x = b;
	x.members = GN_BUCKET_MAX_MEMBERS + 1;
	ASSERT_EQ(-EINVAL, gn_bucket_register(ctx, &x));
	x = b;
	x.elems = NULL;
	ASSERT_EQ(-EINVAL, gn_bucket_register(ctx, &x));
	ASSERT_NE(NULL, strstr(gn_ctx_errmsg(ctx), "elems is NULL"));
	x = b;
	x.elems = zero;
	x.members = 3;
	ASSERT_EQ(-EINVAL, gn_bucket_register(ctx, &x));
	ASSERT_NE(NULL, strstr(gn_ctx_errmsg(ctx), "member 1 has 0 values"));
	x = b;
	x.elems = huge;
	ASSERT_EQ(-EINVAL, gn_bucket_register(ctx, &x));
	ASSERT_NE(NULL, strstr(gn_ctx_errmsg(ctx), "member 1"));
	x = b;
	x.flags = 1u << 5;
	ASSERT_EQ(-EINVAL, gn_bucket_register(ctx, &x));
	x = b;
	x.s = 2.5f;
	ASSERT_EQ(-EINVAL, gn_bucket_register(ctx, &x));
	x = b;
	x.sz = sizeof(size_t);
	ASSERT_EQ(-EINVAL, gn_bucket_register(ctx, &x));
	big.b.sz = sizeof(big);
	ASSERT_EQ(-E2BIG, gn_bucket_register(ctx, &big.b));
	/* Ids are shared with tensors, both ways. */
	ASSERT_EQ(0, gn_tensor_register(ctx, &t));
	x = b;
	x.id = 8;
	ASSERT_EQ(-EEXIST, gn_bucket_register(ctx, &x));
	ASSERT_EQ(0, gn_bucket_register(ctx, &b));
	ASSERT_EQ(-EEXIST, gn_bucket_register(ctx, &b));
	t.id = 7;
	ASSERT_EQ(-EEXIST, gn_tensor_register(ctx, &t));
	/* Unknown ids stay unknown; a bucket unregisters like a tensor. */
	ASSERT_EQ(-ENOENT, gn_allreduce(ctx, 9, (float[11]){ 0 }));
	ASSERT_EQ(0, gn_tensor_unregister(ctx, 7));
	ASSERT_EQ(-ENOENT, gn_tensor_unregister(ctx, 7));
	gn_ctx_close(ctx);
}

/*
 * Acknowledgements in steady state: an owner's result implies the
 * contributions to it and a rank's next contribution implies the last
 * result, so a clean job of many steps sends almost no ACK. Before these
 * rules this job's ACKs and control came to 15-20% of its data bytes;
 * the bound here (5%) leaves room for a loaded machine, where ranks that
 * are not scheduled in time get explicit ACKs.
 */
TEST(acks_mostly_implied)
{
	struct bt_spec s = { .world = 3, .steps = 200, .codec = GN_CODEC_3LC,
			     .flags = GN_TENSOR_AVERAGE, .members = 4,
			     .elems = { 3000, 20, 5000, 10 } };
	uint64_t wire = 0, ctl = 0, pkts = 0, ctl_pkts = 0;
	struct bt_out *out = bt_run(&s);
	int r;

	ASSERT_NE(NULL, out);
	bt_check_ok(_metadata, &s, out);
	for (r = 0; r < s.world; r++) {
		wire += out->stats[r].wire_bytes;
		ctl += out->stats[r].ctl_bytes;
		pkts += out->stats[r].tx_packets;
		ctl_pkts += out->stats[r].ctl_packets;
	}
	TH_LOG("data %llu bytes in %llu packets, ACKs and control %llu bytes in %llu packets (%.2f%%)",
	       (unsigned long long)wire, (unsigned long long)pkts,
	       (unsigned long long)ctl, (unsigned long long)ctl_pkts,
	       100.0 * (double)ctl / (double)wire);
	ASSERT_LT(ctl * 20, wire);
}

/* One rank: a bucket's result is its own gradient (mean of one). */
TEST(single_rank)
{
	static const size_t sizes[] = { 3, 70000, 2 };
	GN_OPTS(gn_ctx_opts, o, .world_size = 1, .peers = "127.0.0.1:29919",
		.flags = GN_CTX_INSECURE);
	GN_OPTS(gn_bucket_opts, b, .id = 1, .members = 3, .elems = sizes,
		.codec = GN_CODEC_NONE, .flags = GN_TENSOR_AVERAGE);
	size_t n = 70005, i;
	float *x = malloc(n * sizeof(float)), *want = malloc(n * sizeof(float));
	struct gn_ctx *ctx;

	for (i = 0; i < n; i++)
		x[i] = want[i] = (float)i * 0.25f - 100.0f;
	ASSERT_EQ(0, gn_ctx_open(&o, &ctx)) TH_LOG("%s", gn_last_errmsg());
	ASSERT_EQ(0, gn_bucket_register(ctx, &b)) TH_LOG("%s", gn_ctx_errmsg(ctx));
	ASSERT_EQ(0, gn_allreduce(ctx, 1, x)) TH_LOG("%s", gn_ctx_errmsg(ctx));
	ASSERT_EQ(0, memcmp(want, x, n * sizeof(float)));
	gn_ctx_close(ctx);
	free(x);
	free(want);
}

TEST_HARNESS_MAIN
