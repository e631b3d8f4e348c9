// SPDX-License-Identifier: MIT
/*
 * rx_bounds_test.c - what a peer's packets may make a rank hold: a DATA
 * packet's npkts is bounded by its chunk before anything is sized by it,
 * dense values must be finite, an entropy-coded body decodes within its
 * bounds to a slice the codec accepts, descriptors of tensors not
 * registered yet are kept only up to a bound, and a CLT-k index set is
 * taken only from its chunk's leader, well formed, whole and increasing.
 * Runs on a context without a network or
 * progress thread (gn_test_ctx_new()), fed sealed packets as rank 1 or 2.
 */
#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <zstd.h>

#include "kselftest_harness.h"
#include <gradnet/gradnet.h>
#include <gradnet/wire.h>
#include "testlib.h"

#define WORLD 3
#define JOB 0x626e6473u
#define CHUNK 4096		/* gn_test_ctx_new()'s chunk */
#define MAX_PKT (9000 - GN_WIRE_IPUDP)	/* and its MTU */
#define PENDING_DESCS 4096	/* GN_PENDING_DESCS in lib/collective/core.h */

static const uint8_t key[GN_MAC_KEY_LEN] = "rx bounds test k";
/* 3LC's parameter block with its default s = 1. */
static const uint32_t tlc_params[GN_WIRE_PARAM_WORDS] = { 0x3f800000u };

struct rig {
	struct gn_ctx *ctx;
	uint8_t keys[WORLD][GN_SEAL_KEY_LEN];	/* every sender's */
	uint64_t pn;
	uint32_t seq[WORLD];
	bool zstd;			/* tensors registered with entropy=zstd */
};

static void deliver(struct rig *r, int from, uint8_t *pkt, size_t body_end)
{
	size_t len = gn_wire_seal(r->keys[from], pkt, body_end, ++r->pn, 0);

	gn_test_packet_in(r->ctx, from, pkt, len);
}

/*
 * Peer @from registered tensor @id as this rank did (@params: the
 * parameter block this rank's registration resolved to): its TENSOR
 * control message.
 */
static void desc_from(struct rig *r, int from, uint32_t id, uint64_t elems,
		      uint8_t codec, const uint32_t *params)
{
	uint8_t pkt[GN_WIRE_HDR_LEN + GN_WIRE_CTRL_LEN + GN_WIRE_TAG];
	struct gn_wire_hdr h = {
		.magic = GN_WIRE_MAGIC, .version = GN_WIRE_VERSION,
		.type = GN_PKT_CTRL, .src = (uint16_t)from, .dst = 0,
		.job = JOB, .tensor = id, .codec = codec,
	};
	struct gn_wire_ctrl c = {
		.seq = ++r->seq[from], .kind = GN_CTRL_TENSOR, .value = elems,
		.extra = r->zstd ? 0x0101 : 0,	/* zstd at level 1 */
	};

	memcpy(c.params, params, sizeof(c.params));
	gn_wire_hdr_put(&h, pkt);
	gn_wire_ctrl_put(&c, pkt);
	deliver(r, from, pkt, GN_WIRE_HDR_LEN + GN_WIRE_CTRL_LEN);
}

static void rig_open(struct __test_metadata *_metadata, struct rig *r)
{
	int i;

	memset(r, 0, sizeof(*r));
	for (i = 0; i < WORLD; i++)
		ASSERT_EQ(0, gn_test_sender_key(key, i, r->keys[i]));
	ASSERT_EQ(0, gn_test_ctx_new(WORLD, 0, key, JOB, &r->ctx));
	ASSERT_EQ(CHUNK, r->ctx->chunk);
	ASSERT_EQ(MAX_PKT, r->ctx->max_pkt);
}

/*
 * Tensor @id registered everywhere (@params: the codec's, or NULL), step 1
 * started here on @x.
 */
static void rig_tensor(struct __test_metadata *_metadata, struct rig *r,
		       uint32_t id, size_t elems, uint8_t codec,
		       const char *params, float *x)
{
	GN_OPTS(gn_tensor_opts, o, .id = id, .elems = elems, .codec = codec,
		.params = r->zstd ? "entropy=zstd" : params);
	size_t i;

	ASSERT_EQ(0, gn_tensor_register(r->ctx, &o));
	/* The newest registration heads the context's list. */
	desc_from(r, 1, id, elems, codec, r->ctx->tensors->params.w);
	desc_from(r, 2, id, elems, codec, r->ctx->tensors->params.w);
	for (i = 0; i < elems; i++)
		x[i] = (float)(i % 7) * 0.25f;
	ASSERT_EQ(0, gn_allreduce_start(r->ctx, id, x));
}

/*
 * A DATA packet from rank @from of tensor @id, step 1, phase @phase;
 * @codec with GN_WIRE_ENTROPY says the body is entropy-coded.
 */
static void data_from(struct rig *r, int from, uint32_t id, uint8_t codec,
		      uint8_t phase, const struct gn_wire_data *d,
		      const void *body, uint16_t blen)
{
	uint8_t pkt[GN_WIRE_MAX_PKT];
	struct gn_wire_hdr h = {
		.magic = GN_WIRE_MAGIC, .version = GN_WIRE_VERSION,
		.type = GN_PKT_DATA, .src = (uint16_t)from,
		.dst = phase == GN_PHASE_REDUCE ? 0 : GN_RANK_ALL,
		.job = JOB, .tensor = id, .step = 1, .body_len = blen,
		.phase = phase, .codec = codec,
	};

	gn_wire_hdr_put(&h, pkt);
	gn_wire_data_put(d, pkt);
	memcpy(pkt + GN_WIRE_DATA_HDR, body, blen);
	deliver(r, from, pkt, GN_WIRE_DATA_HDR + blen);
}

static void data_from1(struct rig *r, uint32_t id, uint8_t codec, uint8_t phase,
		       const struct gn_wire_data *d, const void *body,
		       uint16_t blen)
{
	data_from(r, 1, id, codec, phase, d, body, blen);
}

static uint64_t drops(struct gn_ctx *ctx, int reason)
{
	return ctx->dl.stats.drops[reason];
}

/*
 * Rank 1's contribution to chunk 0 of shard 0 (of 4096 values, 820
 * groups): with this MTU no sender cuts it into more than 2 packets (3LC)
 * or 2 (dense), so npkts above that is refused before the message's
 * state exists, and 2 is still taken.
 */
static void npkts_case(struct __test_metadata *_metadata, uint8_t codec)
{
	static const uint32_t bad[] = { 0xffffffffu, 0x80000000u, 3 };
	uint8_t body[8] = { 0 };
	struct gn_wire_data d = {
		.chunk_off = 0, .chunk_len = CHUNK, .first = 0, .count = 1,
		.aux = codec == GN_CODEC_3LC ? 0x3f800000u : 0,
	};
	uint16_t blen = codec == GN_CODEC_3LC ? 1 : 4;
	struct gn_rx *rx;
	struct rig r;
	uint64_t before;
	float *x = malloc(3 * CHUNK * sizeof(float));
	unsigned int i;

	ASSERT_NE(NULL, x);
	rig_open(_metadata, &r);
	rig_tensor(_metadata, &r, 7, 3 * CHUNK, codec, NULL, x);
	rx = &r.ctx->tensors->cur->red[1 * r.ctx->tensors->chunks[0] + 0];
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		before = drops(r.ctx, GN_DROP_MALFORMED);
		d.npkts = bad[i];
		d.pkt = 0;
		data_from1(&r, 7, codec, GN_PHASE_REDUCE, &d, body, blen);
		d.pkt = bad[i] - 1;
		data_from1(&r, 7, codec, GN_PHASE_REDUCE, &d, body, blen);
		ASSERT_EQ(before + 2, drops(r.ctx, GN_DROP_MALFORMED)) {
			TH_LOG("npkts %#x", bad[i]);
		}
		ASSERT_EQ(0, rx->m.npkts) {
			TH_LOG("npkts %#x", bad[i]);
		}
		ASSERT_EQ(0, rx->held_n);
	}
	d.npkts = 2;
	d.pkt = 1;
	data_from1(&r, 7, codec, GN_PHASE_REDUCE, &d, body, blen);
	ASSERT_EQ(2, rx->m.npkts);
	gn_test_ctx_free(r.ctx);
	free(x);
}

TEST(npkts_bounded_3lc)
{
	npkts_case(_metadata, GN_CODEC_3LC);
}

TEST(npkts_bounded_dense)
{
	npkts_case(_metadata, GN_CODEC_NONE);
}

/*
 * Rank 1's dense result for its shard [3000, 6000) in two packets: one
 * full of NaN (or one infinity) is dropped and not counted as received,
 * so the real one is still taken; the caller's tensor shows only it.
 */
TEST(dense_result_nan_dropped)
{
	uint32_t per = (MAX_PKT - GN_WIRE_DATA_OVERHEAD) / 4, i;
	float *x = malloc(9000 * sizeof(float)), *v = malloc(per * sizeof(float));
	struct gn_wire_data d = {
		.chunk_off = 3000, .chunk_len = 3000, .first = 0, .count = per,
		.pkt = 0, .npkts = 2,
	};
	struct gn_rx *rx;
	struct rig r;

	ASSERT_NE(NULL, x);
	ASSERT_NE(NULL, v);
	rig_open(_metadata, &r);
	rig_tensor(_metadata, &r, 8, 9000, GN_CODEC_NONE, NULL, x);
	rx = &r.ctx->tensors->cur->gat[r.ctx->tensors->gat_off[1]];
	for (i = 0; i < per; i++)
		v[i] = __builtin_nanf("");
	data_from1(&r, 8, GN_CODEC_NONE, GN_PHASE_GATHER, &d, v,
		   (uint16_t)(per * 4));
	ASSERT_EQ(1, drops(r.ctx, GN_DROP_MALFORMED));
	ASSERT_EQ(0, rx->m.got);
	for (i = 0; i < per; i++)
		v[i] = 1.0f;
	v[per / 2] = __builtin_inff();
	data_from1(&r, 8, GN_CODEC_NONE, GN_PHASE_GATHER, &d, v,
		   (uint16_t)(per * 4));
	ASSERT_EQ(2, drops(r.ctx, GN_DROP_MALFORMED));
	ASSERT_EQ(0, rx->m.got);
	for (i = 0; i < per; i++)
		v[i] = (float)i;
	data_from1(&r, 8, GN_CODEC_NONE, GN_PHASE_GATHER, &d, v,
		   (uint16_t)(per * 4));
	ASSERT_EQ(2, drops(r.ctx, GN_DROP_MALFORMED));
	ASSERT_EQ(1, rx->m.got);
	ASSERT_EQ(0, memcmp(x + 3000, v, per * sizeof(float)));
	gn_test_ctx_free(r.ctx);
	free(x);
	free(v);
}

/* A NaN contribution is dropped too, and the real one still added. */
TEST(dense_contribution_nan_dropped)
{
	float *x = malloc(9000 * sizeof(float)), v[4] = { 1, 2, 3, 4 };
	struct gn_wire_data d = {
		.chunk_off = 0, .chunk_len = 3000, .first = 10, .count = 4,
		.pkt = 0, .npkts = 2,
	};
	float nan4[4] = { 0, __builtin_nanf(""), 0, 0 };
	struct gn_rx *rx;
	struct rig r;

	ASSERT_NE(NULL, x);
	rig_open(_metadata, &r);
	rig_tensor(_metadata, &r, 9, 9000, GN_CODEC_NONE, NULL, x);
	rx = &r.ctx->tensors->cur->red[1 * r.ctx->tensors->chunks[0] + 0];
	data_from1(&r, 9, GN_CODEC_NONE, GN_PHASE_REDUCE, &d, nan4, 16);
	ASSERT_EQ(1, drops(r.ctx, GN_DROP_MALFORMED));
	ASSERT_EQ(0, rx->m.got);
	data_from1(&r, 9, GN_CODEC_NONE, GN_PHASE_REDUCE, &d, v, 16);
	ASSERT_EQ(1, drops(r.ctx, GN_DROP_MALFORMED));
	ASSERT_EQ(1, rx->m.got);
	gn_test_ctx_free(r.ctx);
	free(x);
}

/*
 * CLT-k, three shards of one chunk each (4096 values, a set of k = 41):
 * at step 1 (the registration's first, s = 0) chunk g is led by rank g.
 * A set of chunk 1 is the positions 97 j, one varint each after the first.
 */
#define SET_K 41

static void set_body(uint8_t *b, uint32_t count, uint32_t pos0)
{
	uint32_t j;

	b[0] = (uint8_t)pos0;	/* pos0 < 128 */
	for (j = 1; j < count; j++)
		b[j] = 96;
}

static void set_from(struct rig *r, int from, uint32_t id, uint32_t aux,
		     uint32_t first, uint32_t count, uint32_t pkt,
		     uint32_t npkts, const uint8_t *body, uint16_t blen)
{
	struct gn_wire_data d = {
		.chunk_off = CHUNK, .chunk_len = CHUNK, .first = first,
		.count = count, .aux = aux, .pkt = pkt, .npkts = npkts,
	};

	data_from(r, from, id, GN_CODEC_CLTK, GN_PHASE_INDEX, &d, body, blen);
}

/*
 * Refused before anything is taken: a set from a rank that does not lead
 * the chunk, of another size than the step's k, with a position past the
 * chunk or more entries than the set; taken: the leader's set, whole.
 */
TEST(cltk_index_set_refusals)
{
	float *x = malloc(3 * CHUNK * sizeof(float));
	uint8_t body[64], far[8] = { 0x80, 0x20 };	/* 4096 */
	struct gn_step *st;
	struct rig r;

	ASSERT_NE(NULL, x);
	rig_open(_metadata, &r);
	rig_tensor(_metadata, &r, 10, 3 * CHUNK, GN_CODEC_CLTK, NULL, x);
	st = r.ctx->tensors->cur;
	set_body(body, SET_K, 0);
	set_from(&r, 2, 10, SET_K, 0, SET_K, 0, 1, body, SET_K);
	ASSERT_EQ(1, drops(r.ctx, GN_DROP_MALFORMED));
	set_from(&r, 1, 10, SET_K - 1, 0, SET_K - 1, 0, 1, body, SET_K - 1);
	ASSERT_EQ(2, drops(r.ctx, GN_DROP_MALFORMED));
	memcpy(body, far, 2);
	set_from(&r, 1, 10, SET_K, 0, SET_K, 0, 1, body, SET_K + 1);
	ASSERT_EQ(3, drops(r.ctx, GN_DROP_MALFORMED));
	set_body(body, SET_K + 1, 0);
	set_from(&r, 1, 10, SET_K, 0, SET_K + 1, 0, 1, body, SET_K + 1);
	ASSERT_EQ(4, drops(r.ctx, GN_DROP_MALFORMED));
	ASSERT_EQ(0, st->irx[1].m.got);
	ASSERT_EQ(0, st->ixs[1] & GN_IX_KNOWN);
	/* The leader's set: known, and this rank's share at it taken up. */
	set_body(body, SET_K, 5);
	set_from(&r, 1, 10, SET_K, 0, SET_K, 0, 1, body, SET_K);
	ASSERT_EQ(4, drops(r.ctx, GN_DROP_MALFORMED));
	ASSERT_EQ(GN_IX_KNOWN | GN_IX_CLAIMED, st->ixs[1] & (GN_IX_KNOWN | GN_IX_CLAIMED));
	ASSERT_EQ(5 + 97 * (SET_K - 1), st->ix[r.ctx->tensors->ix_off[1] + SET_K - 1]);
	gn_test_ctx_free(r.ctx);
	free(x);
}

/*
 * A set of 2048 entries (density 0.5), which a leader cuts into two
 * packets at this MTU, in two slices that are each sound but do not
 * increase across them (the second starts at position 5): the step fails
 * with -EBADMSG, naming the leader.
 */
TEST(cltk_index_set_not_increasing)
{
	float *x = malloc(3 * CHUNK * sizeof(float));
	uint8_t *body = calloc(1024, 1);
	struct rig r;
	int err = 0;

	ASSERT_NE(NULL, x);
	ASSERT_NE(NULL, body);
	rig_open(_metadata, &r);
	rig_tensor(_metadata, &r, 11, 3 * CHUNK, GN_CODEC_CLTK, "density=0.5", x);
	set_from(&r, 1, 11, 2048, 0, 1024, 0, 2, body, 1024);
	body[0] = 5;
	set_from(&r, 1, 11, 2048, 1024, 1024, 1, 2, body, 1024);
	ASSERT_EQ(0, drops(r.ctx, GN_DROP_MALFORMED));
	ASSERT_EQ(1, gn_core_allreduce_done(r.ctx, 11, &err));
	ASSERT_EQ(-EBADMSG, err);
	ASSERT_NE(NULL, strstr(gn_core_api_errmsg(r.ctx), "rank 1"))
		TH_LOG("%s", gn_core_api_errmsg(r.ctx));
	gn_test_ctx_free(r.ctx);
	free(x);
	free(body);
}

/* @len bytes at @src as a zstd frame into @dst; its length. */
static uint16_t frame_of(const void *src, size_t len, uint8_t *dst, size_t cap)
{
	size_t n = ZSTD_compress(dst, cap, src, len, 1);

	return ZSTD_isError(n) ? 0 : (uint16_t)n;
}

/*
 * Rank 1's dense result for its shard [3000, 6000) of a tensor with the
 * entropy stage, first packet of two: a body marked coded that is no
 * frame, a frame of NaN (the dense check refuses what it decodes to), of
 * more values than the chunk has (its bound), of bytes it does not
 * shorten, are each dropped and not counted; a coded body for a tensor
 * without the stage is dropped too; the real frame is taken and decoded.
 */
TEST(coded_bodies_checked)
{
	const uint8_t coded = GN_CODEC_NONE | GN_WIRE_ENTROPY;
	uint32_t per = (MAX_PKT - GN_WIRE_DATA_OVERHEAD) / 4, i;
	size_t fcap = ZSTD_compressBound(4000 * sizeof(float));
	float *x = malloc(9000 * sizeof(float)), *y = malloc(9000 * sizeof(float));
	float *v = calloc(4000, sizeof(float));
	uint8_t *f = malloc(fcap);
	struct gn_wire_data d = {
		.chunk_off = 3000, .chunk_len = 3000, .first = 0, .count = per,
		.pkt = 0, .npkts = 2,
	};
	struct gn_tensor *t;
	uint64_t mal = 0;
	struct gn_rx *rx;
	struct rig r;
	uint16_t n;

	ASSERT_NE(NULL, x);
	ASSERT_NE(NULL, y);
	ASSERT_NE(NULL, v);
	ASSERT_NE(NULL, f);
	rig_open(_metadata, &r);
	/* Without the stage: coded bodies are refused as they are. */
	rig_tensor(_metadata, &r, 10, 9000, GN_CODEC_NONE, NULL, y);
	for (i = 0; i < per; i++)
		v[i] = 1.0f;
	n = frame_of(v, per * 4, f, fcap);
	ASSERT_LT(0, n);
	data_from1(&r, 10, coded, GN_PHASE_GATHER, &d, f, n);
	ASSERT_EQ(++mal, drops(r.ctx, GN_DROP_MALFORMED));

	r.zstd = true;
	rig_tensor(_metadata, &r, 11, 9000, GN_CODEC_NONE, NULL, x);
	t = gn_tensor_find(r.ctx, 11);
	ASSERT_NE(NULL, t);
	rx = &t->cur->gat[t->gat_off[1]];
	memset(f, 0x5a, 64);
	data_from1(&r, 11, coded, GN_PHASE_GATHER, &d, f, 64);
	ASSERT_EQ(++mal, drops(r.ctx, GN_DROP_MALFORMED));
	for (i = 0; i < per; i++)
		v[i] = __builtin_nanf("");
	n = frame_of(v, per * 4, f, fcap);
	data_from1(&r, 11, coded, GN_PHASE_GATHER, &d, f, n);
	ASSERT_EQ(++mal, drops(r.ctx, GN_DROP_MALFORMED));
	for (i = 0; i < 4000; i++)
		v[i] = 1.0f;
	n = frame_of(v, 4000 * 4, f, fcap);	/* past the chunk's 3000 */
	data_from1(&r, 11, coded, GN_PHASE_GATHER, &d, f, n);
	ASSERT_EQ(++mal, drops(r.ctx, GN_DROP_MALFORMED));
	d.count = 1;
	v[0] = 0.1f;
	n = frame_of(v, 4, f, fcap);		/* longer than the 4 bytes */
	ASSERT_LT(4, n);
	data_from1(&r, 11, coded, GN_PHASE_GATHER, &d, f, n);
	ASSERT_EQ(++mal, drops(r.ctx, GN_DROP_MALFORMED));
	ASSERT_EQ(0, rx->m.got);
	d.count = per;
	for (i = 0; i < per; i++)
		v[i] = (float)(i % 10);
	n = frame_of(v, per * 4, f, fcap);
	data_from1(&r, 11, coded, GN_PHASE_GATHER, &d, f, n);
	ASSERT_EQ(mal, drops(r.ctx, GN_DROP_MALFORMED));
	ASSERT_EQ(1, rx->m.got);
	ASSERT_EQ(0, memcmp(x + 3000, v, per * sizeof(float)));
	gn_test_ctx_free(r.ctx);
	free(x);
	free(y);
	free(v);
	free(f);
}

static unsigned int pending_of(const struct gn_ctx *ctx, int peer)
{
	const struct gn_pending_desc *pd;
	unsigned int n = 0;

	for (pd = ctx->pending; pd; pd = pd->next)
		n += pd->peer == peer;
	return n;
}

/* lib/collective/core.h: the check behind the dense drops above. */
bool gn_f32_all_finite(const void *v, size_t n);

/*
 * Every sign and exponent with a few mantissas, alone and at each place
 * of a misaligned run of finite values: gn_f32_all_finite() agrees with
 * isfinite() on all of them.
 */
TEST(all_finite_every_exponent)
{
	static const uint32_t mant[] = { 0, 1, 0x400000, 0x7fffff };
	uint8_t buf[4 * 9 + 1];
	uint32_t sign, exp, m, b, fill = 0x3f800000u;	/* 1.0f */
	size_t at, i;

	for (sign = 0; sign < 2; sign++)
		for (exp = 0; exp < 256; exp++)
			for (m = 0; m < 4; m++) {
				float f;

				b = sign << 31 | exp << 23 | mant[m];
				memcpy(&f, &b, sizeof(f));
				ASSERT_EQ(!!isfinite(f), gn_f32_all_finite(&b, 1))
					TH_LOG("bits %08x", b);
				for (at = 0; at < 9; at++) {
					for (i = 0; i < 9; i++)
						memcpy(buf + 1 + 4 * i,
						       i == at ? &b : &fill, 4);
					ASSERT_EQ(!!isfinite(f),
						  gn_f32_all_finite(buf + 1, 9))
						TH_LOG("bits %08x at %zu", b, at);
				}
			}
	ASSERT_TRUE(gn_f32_all_finite(buf, 0));
}

/*
 * Rank 1 describes more tensors than a rank keeps for later: the extra
 * descriptors are neither kept nor acknowledged (rank 1 will repeat
 * them), and one is taken once registering a tensor made room.
 */
TEST(pending_descriptors_bounded)
{
	GN_OPTS(gn_tensor_opts, o, .id = 1000, .elems = 10);
	struct gn_peer *p1;
	struct rig r;
	uint32_t i, n = PENDING_DESCS + 100;

	rig_open(_metadata, &r);
	p1 = &r.ctx->dl.peers[1];
	for (i = 0; i < n; i++)
		desc_from(&r, 1, 1000 + i, 10, GN_CODEC_3LC, tlc_params);
	ASSERT_EQ(PENDING_DESCS, pending_of(r.ctx, 1));
	ASSERT_EQ(PENDING_DESCS, r.ctx->pending_descs[1]);
	ASSERT_EQ(PENDING_DESCS, p1->ctrl_seen_base);
	ASSERT_LT(0, drops(r.ctx, GN_DROP_TENSOR));
	/* Rank 2's descriptors are not crowded out by rank 1's. */
	desc_from(&r, 2, 5, 10, GN_CODEC_3LC, tlc_params);
	ASSERT_EQ(1, pending_of(r.ctx, 2));
	/* Registering takes one off; rank 1's next repetition fits. */
	ASSERT_EQ(0, gn_tensor_register(r.ctx, &o));
	ASSERT_EQ(PENDING_DESCS - 1, pending_of(r.ctx, 1));
	r.seq[1] = PENDING_DESCS;
	desc_from(&r, 1, 1000 + PENDING_DESCS, 10, GN_CODEC_3LC, tlc_params);
	ASSERT_EQ(PENDING_DESCS, pending_of(r.ctx, 1));
	ASSERT_EQ(PENDING_DESCS + 1, p1->ctrl_seen_base);
	gn_test_ctx_free(r.ctx);
}

TEST_HARNESS_MAIN
