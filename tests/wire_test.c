// SPDX-License-Identifier: MIT
/*
 * wire_test.c - the packet format and its sealing: every header field
 * round trips, builders, gn_wire_seal() and the parsers agree byte for
 * byte with the golden packets (golden/packets.h), every check of the
 * parsers rejects what it should, the environment's ChaCha20-Poly1305 and
 * BLAKE2s give RFC 8439's vector and the known answers of independent
 * implementations (golden/seal_vectors.h), and the tag catches any
 * changed bit.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "kselftest_harness.h"
#include <gradnet/wire.h>
#include "golden/packets.h"
#include "golden/seal_vectors.h"
#include "testlib.h"	/* gn_test_ctx_new(), for the receive path */

static const uint8_t key[GN_MAC_KEY_LEN] = "0123456789abcdef";
static const uint8_t skey[GN_SEAL_KEY_LEN] = "0123456789abcdef0123456789abcde";

/* A well-formed DATA packet of @body bytes (3LC), sealed with @k. */
static size_t data_packet(uint8_t *p, const uint8_t *k, uint16_t body)
{
	struct gn_wire_hdr h = {
		.magic = GN_WIRE_MAGIC, .version = GN_WIRE_VERSION,
		.type = GN_PKT_DATA, .src = 1, .dst = 0, .job = 77, .tensor = 5,
		.step = 9, .body_len = body, .phase = GN_PHASE_REDUCE,
		.codec = GN_CODEC_3LC,
	};
	struct gn_wire_data d = {
		.chunk_off = 4096, .chunk_len = 1000, .first = 10, .count = 50,
		.aux = 0x3f800000, .pkt = 2, .npkts = 3,
	};

	gn_wire_hdr_put(&h, p);
	gn_wire_data_put(&d, p);
	memset(p + GN_WIRE_DATA_HDR, 121, body);
	return gn_wire_seal(k, p, GN_WIRE_DATA_HDR + body, 0x123456, 0);
}

TEST(data_round_trip)
{
	uint8_t p[256];
	struct gn_wire_hdr h;
	struct gn_wire_data d;
	size_t len, i;

	len = data_packet(p, skey, 20);
	ASSERT_EQ(GN_WIRE_DATA_OVERHEAD + 20, len);
	ASSERT_EQ(0, gn_wire_hdr_get(p, len, &h));
	ASSERT_EQ(0x123456, h.pn);
	ASSERT_EQ(0, h.seal);
	/* The body went encrypted, and only it. */
	for (i = 0; i < 20 && p[GN_WIRE_DATA_HDR + i] == 121; i++)
		;
	ASSERT_GT(20, i);
	ASSERT_EQ(0, gn_wire_open(skey, p, len));
	for (i = 0; i < 20; i++)
		ASSERT_EQ(121, p[GN_WIRE_DATA_HDR + i]);
	ASSERT_EQ(GN_PKT_DATA, h.type);
	ASSERT_EQ(1, h.src);
	ASSERT_EQ(0, h.dst);
	ASSERT_EQ(77, h.job);
	ASSERT_EQ(5, h.tensor);
	ASSERT_EQ(9, h.step);
	ASSERT_EQ(20, h.body_len);
	ASSERT_EQ(GN_CODEC_3LC, h.codec);
	ASSERT_EQ(0, gn_wire_data_get(p, &h, &d));
	ASSERT_EQ(4096, d.chunk_off);
	ASSERT_EQ(1000, d.chunk_len);
	ASSERT_EQ(10, d.first);
	ASSERT_EQ(50, d.count);
	ASSERT_EQ(0x3f800000, d.aux);
	ASSERT_EQ(2, d.pkt);
	ASSERT_EQ(3, d.npkts);
	/* Little-endian on the wire, whatever the host. */
	ASSERT_EQ(0x47, p[0]);
	ASSERT_EQ(0x4e, p[1]);
	ASSERT_EQ(77, p[8]);
	ASSERT_EQ(0, p[24]);		/* seal flags */
	ASSERT_EQ(0x56, p[25]);		/* the packet number, from bit 8 */
	ASSERT_EQ(0x12, p[27]);
}

TEST(header_rejects)
{
	uint8_t p[256], q[256];
	struct gn_wire_hdr h;
	size_t len, i;

	len = data_packet(p, skey, 20);
	/* Every truncation and one extra byte. */
	for (i = 0; i < len; i++) {
		ASSERT_NE(0, gn_wire_hdr_get(p, i, &h)) TH_LOG("length %zu", i);
	}
	ASSERT_EQ(-EBADMSG, gn_wire_hdr_get(p, len + 1, &h));
	memcpy(q, p, len);
	q[0] ^= 1;
	ASSERT_EQ(-EBADMSG, gn_wire_hdr_get(q, len, &h));
	memcpy(q, p, len);
	q[2] = GN_WIRE_VERSION + 1;
	ASSERT_EQ(-EPROTONOSUPPORT, gn_wire_hdr_get(q, len, &h));
	ASSERT_EQ(GN_WIRE_VERSION + 1, h.version);
	memcpy(q, p, len);
	q[3] = 99;		/* unknown type */
	ASSERT_EQ(-EBADMSG, gn_wire_hdr_get(q, len, &h));
	memcpy(q, p, len);
	q[22] = GN_PHASE_INDEX + 1;	/* phase */
	ASSERT_EQ(-EBADMSG, gn_wire_hdr_get(q, len, &h));
	memcpy(q, p, len);
	q[22] = GN_PHASE_INDEX;
	ASSERT_EQ(0, gn_wire_hdr_get(q, len, &h));
	ASSERT_EQ(GN_PHASE_INDEX, h.phase);
	memcpy(q, p, len);
	q[20] = 21;		/* body length disagrees with the packet */
	ASSERT_EQ(-EBADMSG, gn_wire_hdr_get(q, len, &h));
	memcpy(q, p, len);
	q[24] = 2;		/* an unknown seal flag */
	ASSERT_EQ(-EBADMSG, gn_wire_hdr_get(q, len, &h));
	memcpy(q, p, len);
	memset(q + 25, 0, 7);	/* packet number 0: never sent */
	ASSERT_EQ(-EBADMSG, gn_wire_hdr_get(q, len, &h));
	ASSERT_EQ(-EBADMSG, gn_wire_hdr_get(p, GN_WIRE_MAX_PKT + 1, &h));
}

/*
 * Bit 7 of the codec byte: an entropy-coded body, on DATA and WHOLE
 * packets with a body only; the codec is the other seven bits, and the
 * builder sets the bit from the header's entropy field.
 */
TEST(entropy_bit)
{
	uint8_t p[256], q[256];
	struct gn_wire_hdr h, h2;
	size_t len = data_packet(p, NULL, 20);

	ASSERT_EQ(0, gn_wire_hdr_get(p, len, &h));
	ASSERT_EQ(0, h.entropy);
	memcpy(q, p, len);
	q[23] |= GN_WIRE_ENTROPY;
	ASSERT_EQ(0, gn_wire_hdr_get(q, len, &h2));
	ASSERT_EQ(1, h2.entropy);
	ASSERT_EQ(h.codec, h2.codec);
	memset(q, 0, sizeof(q));
	gn_wire_hdr_put(&h2, q);
	ASSERT_EQ(p[23] | GN_WIRE_ENTROPY, q[23]);
	/* The type's fixed part is 32 bytes: a DATA packet with no body. */
	memcpy(q, p, len);
	q[23] |= GN_WIRE_ENTROPY;
	q[20] = 0;
	ASSERT_EQ(-EBADMSG, gn_wire_hdr_get(q, len - 20, &h2));
	q[23] &= (uint8_t)~GN_WIRE_ENTROPY;
	ASSERT_EQ(0, gn_wire_hdr_get(q, len - 20, &h2));
	/* Not on control packets. */
	memcpy(q, p, len);
	q[3] = GN_PKT_PING;
	q[20] = (uint8_t)(len - GN_WIRE_HDR_LEN - GN_WIRE_PING_LEN - GN_WIRE_TAG);
	ASSERT_EQ(0, gn_wire_hdr_get(q, len, &h2));
	q[23] |= GN_WIRE_ENTROPY;
	ASSERT_EQ(-EBADMSG, gn_wire_hdr_get(q, len, &h2));
}

#define N_GOLDEN (sizeof(gn_golden_pkt) / sizeof(gn_golden_pkt[0]))

/*
 * The key golden packet @g is sealed under, into @k: NULL for a job
 * without a key, else derived as a rank derives it, from the golden job
 * key, the run's instances and, for a HELLO, the instance it carries.
 */
static const uint8_t *golden_key(const struct gn_golden_pkt *g, uint8_t *k)
{
	uint8_t s[GN_SEAL_KEY_LEN];

	if (!g->keyed)
		return NULL;
	if (g->hdr.type == GN_PKT_HELLO) {
		if (gn_wire_hello_key(k, gn_golden_pkt_key, g->hdr.src,
				      g->hello.instance))
			return NULL;
		return k;
	}
	if (gn_wire_session_key(s, gn_golden_pkt_key, gn_golden_pkt_info,
				sizeof(gn_golden_pkt_info)) ||
	    gn_wire_sender_key(k, s, g->hdr.src))
		return NULL;
	return k;
}

/* Build golden packet @g from its field values into @p; its length. */
static size_t build_golden(const struct gn_golden_pkt *g, uint8_t *p)
{
	const struct gn_golden_pkt_hdr *gh = &g->hdr;
	struct gn_wire_hdr h = {
		.magic = GN_WIRE_MAGIC, .version = gh->version,
		.type = gh->type, .src = gh->src, .dst = gh->dst,
		.job = gh->job, .tensor = gh->tensor, .step = gh->step,
		.body_len = gh->body_len, .phase = gh->phase,
		.codec = gh->codec,
	};
	uint8_t k[GN_SEAL_KEY_LEN];
	size_t at = GN_WIRE_HDR_LEN + (size_t)gn_wire_fixed_len(gh->type);
	unsigned int i;

	gn_wire_hdr_put(&h, p);
	switch (gh->type) {
	case GN_PKT_HELLO: {
		const struct gn_golden_pkt_hello *o = &g->hello;
		struct gn_wire_hello wo = {
			.world = o->world, .flags = o->flags,
			.chunk = o->chunk, .mtu = o->mtu,
			.instance = o->instance, .echo = o->echo,
		};

		gn_wire_hello_put(&wo, p);
		memcpy(p + at, g->body, gh->body_len);
		break;
	}
	case GN_PKT_DATA:
	case GN_PKT_WHOLE: {
		const struct gn_golden_pkt_data *d = &g->data;
		struct gn_wire_data wd = {
			.chunk_off = d->chunk_off, .chunk_len = d->chunk_len,
			.first = d->first, .count = d->count, .aux = d->aux,
			.pkt = d->pkt, .npkts = d->npkts,
		};

		gn_wire_data_put(&wd, p);
		memcpy(p + at, g->body, gh->body_len);
		break;
	}
	case GN_PKT_ACK:
		gn_wire_ack_put(g->ack_entries, p);
		for (i = 0; i < g->ack_entries; i++) {
			const struct gn_golden_pkt_ack_entry *e = &g->ack[i];
			struct gn_wire_ack a = {
				.tensor = e->tensor, .step = e->step,
				.chunk_off = e->chunk_off, .npkts = e->npkts,
				.base = e->base, .phase = e->phase,
				.bytes = e->bytes,
			};

			gn_wire_ack_entry_put(&a, p + at);
			if (e->bytes)	/* "all of it" has no bitmap (NULL) */
				memcpy(p + at + GN_WIRE_ACK_ENTRY, e->bitmap,
				       e->bytes);
			at += GN_WIRE_ACK_ENTRY + e->bytes;
		}
		break;
	case GN_PKT_CTRL: {
		const struct gn_golden_pkt_ctrl *c = &g->ctrl;
		struct gn_wire_ctrl wc = {
			.seq = c->seq, .kind = c->kind, .flags = c->flags,
			.value = c->value, .extra = c->extra,
		};

		memcpy(wc.params, c->params, sizeof(wc.params));
		gn_wire_ctrl_put(&wc, p);
		break;
	}
	case GN_PKT_CTRL_ACK: {
		struct gn_wire_ctrl_ack a = { .seq = g->ctrl_ack.seq };

		gn_wire_ctrl_ack_put(&a, p);
		break;
	}
	case GN_PKT_PING:
	case GN_PKT_PONG: {
		struct gn_wire_ping o = { .stamp = g->ping.stamp };

		gn_wire_ping_put(&o, p);
		break;
	}
	}
	return gn_wire_seal(golden_key(g, k), p, g->len - GN_WIRE_TAG, gh->pn,
			    g->keyed ? gh->seal : 0);
}

/*
 * The builders and gn_wire_seal() make every golden packet, byte for
 * byte, tag included.
 */
TEST(golden_build)
{
	static uint8_t p[GN_WIRE_MAX_PKT];
	size_t k, i;

	for (k = 0; k < N_GOLDEN; k++) {
		const struct gn_golden_pkt *g = &gn_golden_pkt[k];

		/* Bytes a builder leaves alone, reserved ones too, show up. */
		memset(p, 0xa5, sizeof(p));
		ASSERT_EQ(g->len, build_golden(g, p)) TH_LOG("%s", g->name);
		/* Braces: the harness runs TH_LOG after the statement. */
		for (i = 0; i < g->len; i++) {
			ASSERT_EQ(g->bytes[i], p[i])
				TH_LOG("%s: byte %zu", g->name, i);
		}
	}
}

/* Every type the parser knows has a golden packet. */
TEST(golden_every_type)
{
	unsigned int type;
	size_t k;

	for (type = 0; type < 256; type++) {
		if (gn_wire_fixed_len(type) < 0)
			continue;
		for (k = 0; k < N_GOLDEN; k++)
			if (gn_golden_pkt[k].hdr.type == type)
				break;
		ASSERT_GT(N_GOLDEN, k) TH_LOG("no golden packet of type %u", type);
	}
}

static void golden_parse_ack(struct __test_metadata *_metadata,
			     const struct gn_golden_pkt *g, const uint8_t *p,
			     const struct gn_wire_hdr *h)
{
	const uint8_t *at = p + GN_WIRE_HDR_LEN + GN_WIRE_ACK_LEN;
	size_t left = h->body_len;
	struct gn_wire_ack a;
	unsigned int n, i;

	ASSERT_EQ(0, gn_wire_ack_get(p, h, &n));
	ASSERT_EQ(g->ack_entries, n);
	for (i = 0; i < n; i++) {
		const struct gn_golden_pkt_ack_entry *e = &g->ack[i];
		int r = gn_wire_ack_entry_get(at, left, &a);

		ASSERT_EQ(GN_WIRE_ACK_ENTRY + e->bytes, r) TH_LOG("entry %u", i);
		ASSERT_EQ(e->tensor, a.tensor);
		ASSERT_EQ(e->step, a.step);
		ASSERT_EQ(e->chunk_off, a.chunk_off);
		ASSERT_EQ(e->npkts, a.npkts);
		ASSERT_EQ(e->base, a.base);
		ASSERT_EQ(e->phase, a.phase);
		ASSERT_EQ(e->bytes, a.bytes);
		if (e->bytes)
			ASSERT_EQ(0, memcmp(e->bitmap, at + GN_WIRE_ACK_ENTRY,
					    e->bytes));
		at += r;
		left -= (size_t)r;
	}
	ASSERT_EQ(0, left);
}

static void golden_parse_one(struct __test_metadata *_metadata,
			     const struct gn_golden_pkt *g, uint8_t *p)
{
	uint8_t k[GN_SEAL_KEY_LEN];
	const struct gn_golden_pkt_hdr *gh = &g->hdr;
	struct gn_wire_hello o;
	struct gn_wire_data d;
	struct gn_wire_ctrl c;
	struct gn_wire_ctrl_ack ca;
	struct gn_wire_ping pi;
	struct gn_wire_hdr h;

	ASSERT_EQ(0, gn_wire_hdr_get(p, g->len, &h));
	ASSERT_EQ(GN_WIRE_MAGIC, h.magic);
	ASSERT_EQ(gh->version, h.version);
	ASSERT_EQ(gh->type, h.type);
	ASSERT_EQ(gh->src, h.src);
	ASSERT_EQ(gh->dst, h.dst);
	ASSERT_EQ(gh->job, h.job);
	ASSERT_EQ(gh->tensor, h.tensor);
	ASSERT_EQ(gh->step, h.step);
	ASSERT_EQ(gh->body_len, h.body_len);
	ASSERT_EQ(gh->phase, h.phase);
	ASSERT_EQ(gh->codec, h.codec);
	ASSERT_EQ(gh->seal, h.seal);
	ASSERT_EQ(gh->pn, h.pn);
	ASSERT_EQ(0, memcmp(g->tag, p + g->len - GN_WIRE_TAG, GN_WIRE_TAG));
	/* An encrypted body is not what was sent in the clear... */
	if (g->keyed && !(gh->seal & GN_SEAL_CLEAR) && g->body)
		ASSERT_NE(0, memcmp(g->body, p + gn_wire_body_off(h.type),
				    h.body_len));
	/* ... until it is opened, under its key and no other. */
	if (g->keyed)
		ASSERT_EQ(-EBADMSG, gn_wire_open(NULL, p, g->len));
	ASSERT_EQ(0, gn_wire_open(golden_key(g, k), p, g->len));
	switch (h.type) {
	case GN_PKT_HELLO:
		ASSERT_EQ(0, gn_wire_hello_get(p, &h, &o));
		ASSERT_EQ(g->hello.world, o.world);
		ASSERT_EQ(g->hello.flags, o.flags);
		ASSERT_EQ(g->hello.chunk, o.chunk);
		ASSERT_EQ(g->hello.mtu, o.mtu);
		ASSERT_EQ(g->hello.instance, o.instance);
		ASSERT_EQ(g->hello.echo, o.echo);
		break;
	case GN_PKT_DATA:
	case GN_PKT_WHOLE:
		ASSERT_EQ(0, gn_wire_data_get(p, &h, &d));
		ASSERT_EQ(g->data.chunk_off, d.chunk_off);
		ASSERT_EQ(g->data.chunk_len, d.chunk_len);
		ASSERT_EQ(g->data.first, d.first);
		ASSERT_EQ(g->data.count, d.count);
		ASSERT_EQ(g->data.aux, d.aux);
		ASSERT_EQ(g->data.pkt, d.pkt);
		ASSERT_EQ(g->data.npkts, d.npkts);
		ASSERT_EQ(0, memcmp(g->body, p + gn_wire_body_off(h.type),
				    h.body_len));
		break;
	case GN_PKT_ACK:
		golden_parse_ack(_metadata, g, p, &h);
		break;
	case GN_PKT_CTRL:
		ASSERT_EQ(0, gn_wire_ctrl_get(p, &h, &c));
		ASSERT_EQ(g->ctrl.seq, c.seq);
		ASSERT_EQ(g->ctrl.kind, c.kind);
		ASSERT_EQ(g->ctrl.flags, c.flags);
		ASSERT_EQ(g->ctrl.value, c.value);
		ASSERT_EQ(g->ctrl.extra, c.extra);
		ASSERT_EQ(0, memcmp(g->ctrl.params, c.params, sizeof(c.params)));
		break;
	case GN_PKT_CTRL_ACK:
		ASSERT_EQ(0, gn_wire_ctrl_ack_get(p, &h, &ca));
		ASSERT_EQ(g->ctrl_ack.seq, ca.seq);
		break;
	case GN_PKT_PING:
	case GN_PKT_PONG:
		ASSERT_EQ(0, gn_wire_ping_get(p, &h, &pi));
		ASSERT_EQ(g->ping.stamp, pi.stamp);
		break;
	default:
		ASSERT_TRUE(0) TH_LOG("unknown type %u", h.type);
	}
}

/*
 * gn_wire_open() and the parsers read every golden packet back into
 * exactly its field values and body, from a buffer of exactly its length
 * (ASan sees any read past it).
 */
TEST(golden_parse)
{
	size_t k;

	for (k = 0; k < N_GOLDEN; k++) {
		const struct gn_golden_pkt *g = &gn_golden_pkt[k];
		uint8_t *p = malloc(g->len);

		ASSERT_NE(NULL, p);
		memcpy(p, g->bytes, g->len);
		TH_LOG("checking %s", g->name);
		golden_parse_one(_metadata, g, p);
		free(p);
	}
}

/* Rewrite one DATA field; expect the parser to reject it. */
static int data_with(uint32_t off, uint64_t v, unsigned int width,
		     uint8_t codec, uint16_t body)
{
	uint8_t p[4096];
	struct gn_wire_hdr h;
	struct gn_wire_data d;
	size_t len = data_packet(p, NULL, body), i;

	p[23] = codec;
	for (i = 0; i < width; i++)
		p[off + i] = (uint8_t)(v >> (8 * i));
	if (gn_wire_hdr_get(p, len, &h))
		return -1;
	return gn_wire_data_get(p, &h, &d);
}

/*
 * What a DATA part says about itself; its body is the codec's to check
 * (tests/conformance_test.c).
 */
TEST(data_rejects)
{
	const uint8_t lc = GN_CODEC_3LC, none = GN_CODEC_NONE;

	ASSERT_EQ(0, data_with(48, 50, 4, lc, 20));
	ASSERT_EQ(-EBADMSG, data_with(48, 0, 4, lc, 20));	/* count 0 */
	ASSERT_EQ(-EBADMSG, data_with(44, 151, 4, lc, 20));	/* past 200 groups */
	ASSERT_EQ(0, data_with(44, 150, 4, lc, 20));
	ASSERT_EQ(-EBADMSG, data_with(40, 0, 4, lc, 20));	/* empty chunk */
	ASSERT_EQ(-EBADMSG, data_with(56, 3, 4, lc, 20));	/* pkt >= npkts */
	ASSERT_EQ(-EBADMSG, data_with(60, 0, 4, lc, 20));	/* npkts 0 */
	ASSERT_EQ(-EBADMSG, data_with(32, ~0ull - 10, 8, lc, 20));	/* wraps */
	ASSERT_EQ(-EBADMSG, data_with(23, 0, 1, 7, 20));	/* unknown codec */
	ASSERT_EQ(-EBADMSG, data_with(23, 99, 1, 7, 20));
	/* Units are the codec's: 1000 values are 200 groups, 1000 values. */
	ASSERT_EQ(0, data_with(44, 950, 4, none, 20));
	ASSERT_EQ(-EBADMSG, data_with(44, 951, 4, none, 20));
}

/*
 * A WHOLE packet of a chunk of @chunk_len values with @body bytes of body
 * and word @aux, parsed.
 */
static int whole_with(uint8_t codec, uint32_t chunk_len, uint32_t aux,
		      uint16_t body, struct gn_wire_data *d)
{
	struct gn_wire_hdr h = {
		.magic = GN_WIRE_MAGIC, .version = GN_WIRE_VERSION,
		.type = GN_PKT_WHOLE, .src = 1, .dst = 0, .job = 77,
		.tensor = 5, .step = 3, .body_len = body, .codec = codec, .pn = 1,
	};
	struct gn_wire_data w = { .chunk_off = 1000, .chunk_len = chunk_len,
				  .first = 7, .count = 9, .pkt = 2, .npkts = 5,
				  .aux = aux };
	uint8_t p[4096];

	memset(p, 0xa5, sizeof(p));
	gn_wire_hdr_put(&h, p);
	gn_wire_data_put(&w, p);
	memset(p + GN_WIRE_WHOLE_HDR, 121, body);
	if (gn_wire_hdr_get(p, GN_WIRE_WHOLE_OVERHEAD + body, &h))
		return -1;
	return gn_wire_data_get(p, &h, d);
}

/*
 * WHOLE writes only chunk_off, chunk_len and aux (the rest of the fields
 * given to the builder does not reach the wire) and the parser fills in
 * the rest: the whole chunk in the codec's units, one packet. What the
 * body holds is the codec's to check (codec_test's check_slice cases).
 */
TEST(whole_implied)
{
	const uint8_t lc = GN_CODEC_3LC, none = GN_CODEC_NONE;
	struct gn_wire_data d;

	ASSERT_EQ(0, whole_with(lc, 130, 0x3e000000, 20, &d));
	ASSERT_EQ(1000, d.chunk_off);
	ASSERT_EQ(130, d.chunk_len);
	ASSERT_EQ(0x3e000000, d.aux);
	ASSERT_EQ(0, d.first);
	ASSERT_EQ(26, d.count);			/* 130 values, 26 groups */
	ASSERT_EQ(0, d.pkt);
	ASSERT_EQ(1, d.npkts);
	ASSERT_EQ(0, whole_with(lc, 131, 0, 27, &d));
	ASSERT_EQ(27, d.count);
	ASSERT_EQ(-EBADMSG, whole_with(lc, 0, 0, 1, &d));	/* empty chunk */
	ASSERT_EQ(0, whole_with(none, 3, 0, 12, &d));
	ASSERT_EQ(3, d.count);
	ASSERT_EQ(-EBADMSG, whole_with(9, 3, 0, 12, &d));	/* unknown codec */
	ASSERT_EQ(-EBADMSG, whole_with(0, 3, 0, 12, &d));	/* "the job's" */
	ASSERT_EQ(-EBADMSG, whole_with(255, 3, 0, 12, &d));
}

/* Both packets sealed with @m; the ACK body carries @entries entries. */
TEST(ack_entries)
{
	uint8_t p[512];
	struct gn_wire_hdr h = {
		.magic = GN_WIRE_MAGIC, .version = GN_WIRE_VERSION,
		.type = GN_PKT_ACK, .src = 0, .dst = 1, .job = 1, .pn = 1,
	};
	struct gn_wire_ack a = { 7, 3, 65536, 20, 0, GN_PHASE_GATHER, 3 }, b;
	size_t body = 2 * GN_WIRE_ACK_ENTRY + 3, at;
	unsigned int n;

	h.body_len = (uint16_t)body;
	gn_wire_hdr_put(&h, p);
	gn_wire_ack_put(2, p);
	at = GN_WIRE_HDR_LEN + GN_WIRE_ACK_LEN;
	gn_wire_ack_entry_put(&a, p + at);
	memset(p + at + GN_WIRE_ACK_ENTRY, 0xff, 3);
	a.base = a.npkts;	/* "all of it" */
	a.bytes = 0;
	gn_wire_ack_entry_put(&a, p + at + GN_WIRE_ACK_ENTRY + 3);
	ASSERT_EQ(0, gn_wire_hdr_get(p, at + body + GN_WIRE_TAG, &h));
	ASSERT_EQ(0, gn_wire_ack_get(p, &h, &n));
	ASSERT_EQ(2, n);
	ASSERT_EQ(GN_WIRE_ACK_ENTRY + 3, gn_wire_ack_entry_get(p + at, body, &b));
	ASSERT_EQ(7, b.tensor);
	ASSERT_EQ(3, b.step);
	ASSERT_EQ(65536, b.chunk_off);
	ASSERT_EQ(0, b.base);
	ASSERT_EQ(3, b.bytes);
	ASSERT_EQ(GN_WIRE_ACK_ENTRY,
		  gn_wire_ack_entry_get(p + at + GN_WIRE_ACK_ENTRY + 3,
					GN_WIRE_ACK_ENTRY, &b));
	ASSERT_EQ(20, b.base);
	/* The bitmap runs past the body. */
	ASSERT_EQ(-EBADMSG, gn_wire_ack_entry_get(p + at, GN_WIRE_ACK_ENTRY + 2, &b));
	/* A window that does not start on a byte, or past the message. */
	a.base = 4;
	a.bytes = 1;
	gn_wire_ack_entry_put(&a, p + at);
	ASSERT_EQ(-EBADMSG, gn_wire_ack_entry_get(p + at, body, &b));
	a.base = 8;
	a.bytes = 3;	/* bits 8..31 for a message of 20 packets */
	gn_wire_ack_entry_put(&a, p + at);
	ASSERT_EQ(-EBADMSG, gn_wire_ack_entry_get(p + at, body, &b));
	a.base = a.npkts;	/* "all" with a bitmap */
	a.bytes = 1;
	gn_wire_ack_entry_put(&a, p + at);
	ASSERT_EQ(-EBADMSG, gn_wire_ack_entry_get(p + at, body, &b));
	/* More entries announced than the body can hold. */
	gn_wire_ack_put(20, p);
	ASSERT_EQ(-EBADMSG, gn_wire_ack_get(p, &h, &n));
}

TEST(hello_and_ctrl)
{
	uint8_t p[128];
	struct gn_wire_hdr h = {
		.magic = GN_WIRE_MAGIC, .version = GN_WIRE_VERSION,
		.type = GN_PKT_HELLO, .src = 2, .dst = 0, .job = 1, .pn = 1,
		.body_len = GN_WIRE_HELLO_BODY,
	};
	struct gn_wire_hello o = { 4, GN_HELLO_REPLY, 65536, 1500,
				   0x1122334455667788ull, 7 }, o2;
	struct gn_wire_ctrl c = { 5, GN_CTRL_ABORT, 0, EDOM, 2, { 0 } }, c2;

	gn_wire_hdr_put(&h, p);
	gn_wire_hello_put(&o, p);
	ASSERT_EQ(0, gn_wire_hdr_get(p, GN_WIRE_HDR_LEN + GN_WIRE_HELLO_LEN +
					     GN_WIRE_HELLO_BODY + GN_WIRE_TAG, &h));
	ASSERT_EQ(0, gn_wire_hello_get(p, &h, &o2));
	ASSERT_EQ(4, o2.world);
	ASSERT_EQ(65536, o2.chunk);
	ASSERT_EQ(1500, o2.mtu);
	ASSERT_EQ(0x1122334455667788ull, o2.instance);
	ASSERT_EQ(7, o2.echo);
	o.instance = 0;			/* an instance is never 0 */
	gn_wire_hello_put(&o, p);
	ASSERT_EQ(-EBADMSG, gn_wire_hello_get(p, &h, &o2));
	o.instance = 1;
	gn_wire_hello_put(&o, p);
	p[GN_WIRE_HDR_LEN + 2] = 0x80;	/* unknown flag */
	ASSERT_EQ(-EBADMSG, gn_wire_hello_get(p, &h, &o2));
	gn_wire_hello_put(&o, p);
	h.body_len = 0;			/* no peer-list digest */
	ASSERT_EQ(-EBADMSG, gn_wire_hello_get(p, &h, &o2));
	h.body_len = GN_WIRE_HELLO_BODY;
	/* The bytes that held a codec and s are reserved: 0. */
	gn_wire_hello_put(&o, p);
	p[GN_WIRE_HDR_LEN + 3] = 2;
	ASSERT_EQ(-EBADMSG, gn_wire_hello_get(p, &h, &o2));
	gn_wire_hello_put(&o, p);
	p[GN_WIRE_HDR_LEN + 6] = 0x80;
	ASSERT_EQ(-EBADMSG, gn_wire_hello_get(p, &h, &o2));

	h.type = GN_PKT_CTRL;
	h.body_len = 0;
	gn_wire_hdr_put(&h, p);
	gn_wire_ctrl_put(&c, p);
	ASSERT_EQ(0, gn_wire_hdr_get(p, GN_WIRE_HDR_LEN + GN_WIRE_CTRL_LEN +
					     GN_WIRE_TAG, &h));
	ASSERT_EQ(0, gn_wire_ctrl_get(p, &h, &c2));
	ASSERT_EQ(5, c2.seq);
	ASSERT_EQ(EDOM, c2.value);
	ASSERT_EQ(2, c2.extra);
	p[GN_WIRE_HDR_LEN + 4] = 9;	/* unknown kind */
	ASSERT_EQ(-EBADMSG, gn_wire_ctrl_get(p, &h, &c2));
	c.seq = 0;		/* sequence numbers start at 1 */
	gn_wire_ctrl_put(&c, p);
	ASSERT_EQ(-EBADMSG, gn_wire_ctrl_get(p, &h, &c2));
	/* An abort carries no parameters; a descriptor's last word reads. */
	c.seq = 6;
	c.params[7] = 1;
	gn_wire_ctrl_put(&c, p);
	ASSERT_EQ(-EBADMSG, gn_wire_ctrl_get(p, &h, &c2));
	c.kind = GN_CTRL_TENSOR;
	c.extra = 0;
	c.params[7] = 0x01020304;
	gn_wire_ctrl_put(&c, p);
	ASSERT_EQ(0x04, p[GN_WIRE_HDR_LEN + 20 + 28]);	/* little-endian */
	ASSERT_EQ(0, gn_wire_ctrl_get(p, &h, &c2));
	ASSERT_EQ(0x01020304, c2.params[7]);
	c.extra = 0x0301;	/* an entropy stage: zstd at level 3 */
	gn_wire_ctrl_put(&c, p);
	ASSERT_EQ(0, gn_wire_ctrl_get(p, &h, &c2));
	ASSERT_EQ(0x0301, c2.extra);
	c.extra = 1u << 16;	/* past the stage's bits: reserved */
	gn_wire_ctrl_put(&c, p);
	ASSERT_EQ(-EBADMSG, gn_wire_ctrl_get(p, &h, &c2));
}

/* PING, PONG and CTRL_ACK: one fixed part each, no body, seq never 0. */
TEST(ping_and_ctrl_ack)
{
	uint8_t p[64];
	struct gn_wire_hdr h = {
		.magic = GN_WIRE_MAGIC, .version = GN_WIRE_VERSION,
		.type = GN_PKT_PING, .src = 1, .dst = 3, .job = 6, .pn = 1,
	};
	struct gn_wire_ping o = { 0x0102030405060708ull }, o2;
	struct gn_wire_ctrl_ack a = { 0xdeadbeef }, a2;
	size_t len = GN_WIRE_HDR_LEN + GN_WIRE_PING_LEN + GN_WIRE_TAG;

	gn_wire_hdr_put(&h, p);
	gn_wire_ping_put(&o, p);
	ASSERT_EQ(0x08, p[GN_WIRE_HDR_LEN]);	/* little-endian */
	ASSERT_EQ(0, gn_wire_hdr_get(p, len, &h));
	ASSERT_EQ(0, gn_wire_ping_get(p, &h, &o2));
	ASSERT_EQ(o.stamp, o2.stamp);
	h.type = GN_PKT_PONG;
	ASSERT_EQ(0, gn_wire_ping_get(p, &h, &o2));
	h.type = GN_PKT_CTRL_ACK;
	ASSERT_EQ(-EBADMSG, gn_wire_ping_get(p, &h, &o2));
	/* A body after the stamp passes the header check, not this one. */
	h.type = GN_PKT_PING;
	h.body_len = 3;
	gn_wire_hdr_put(&h, p);
	ASSERT_EQ(0, gn_wire_hdr_get(p, len + 3, &h));
	ASSERT_EQ(-EBADMSG, gn_wire_ping_get(p, &h, &o2));

	h.type = GN_PKT_CTRL_ACK;
	h.body_len = 0;
	len = GN_WIRE_HDR_LEN + GN_WIRE_CTRL_ACK_LEN + GN_WIRE_TAG;
	gn_wire_hdr_put(&h, p);
	gn_wire_ctrl_ack_put(&a, p);
	ASSERT_EQ(0, gn_wire_hdr_get(p, len, &h));
	ASSERT_EQ(0, gn_wire_ctrl_ack_get(p, &h, &a2));
	ASSERT_EQ(0xdeadbeef, a2.seq);
	h.type = GN_PKT_CTRL;
	ASSERT_EQ(-EBADMSG, gn_wire_ctrl_ack_get(p, &h, &a2));
	h.type = GN_PKT_CTRL_ACK;
	a.seq = 0;		/* CTRL sequence numbers start at 1 */
	gn_wire_ctrl_ack_put(&a, p);
	ASSERT_EQ(-EBADMSG, gn_wire_ctrl_ack_get(p, &h, &a2));
	h.body_len = 1;
	a.seq = 1;
	gn_wire_ctrl_ack_put(&a, p);
	ASSERT_EQ(-EBADMSG, gn_wire_ctrl_ack_get(p, &h, &a2));
}

/*
 * A sealed PING, PONG or CTRL_ACK from rank 1 to rank 0 of job 77, under
 * @k, with a packet number no packet before had.
 */
static size_t probe_packet(uint8_t *p, const uint8_t *k, uint8_t type,
			   uint64_t v, uint16_t body)
{
	static uint64_t pn;
	struct gn_wire_hdr h = {
		.magic = GN_WIRE_MAGIC, .version = GN_WIRE_VERSION,
		.type = type, .src = 1, .dst = 0, .job = 77, .body_len = body,
	};
	struct gn_wire_ping o = { .stamp = v };
	struct gn_wire_ctrl_ack a = { .seq = (uint32_t)v };
	size_t len = GN_WIRE_HDR_LEN + (size_t)gn_wire_fixed_len(type) + body;

	gn_wire_hdr_put(&h, p);
	if (type == GN_PKT_CTRL_ACK)
		gn_wire_ctrl_ack_put(&a, p);
	else
		gn_wire_ping_put(&o, p);
	memset(p + len - body, 0, body);
	return gn_wire_seal(k, p, len, ++pn, 0);
}

/*
 * The receive path goes through those parsers: an authentic probe is
 * answered, a PONG feeds the RTT, and an authentic but malformed one is
 * counted as such and answered by nothing.
 */
TEST(probes_received)
{
	struct gn_stats st = { .sz = sizeof(st) };
	struct gn_ctx *ctx;
	uint8_t p[128], m[GN_SEAL_KEY_LEN];
	uint64_t ctl, sent;
	uint64_t srtt;
	size_t len;

	ASSERT_EQ(0, gn_test_sender_key(key, 1, m));
	ASSERT_EQ(0, gn_test_ctx_new(3, 0, key, 77, &ctx));
	len = probe_packet(p, m, GN_PKT_PING, 12345, 0);
	gn_test_packet_in(ctx, 1, p, len);
	ASSERT_EQ(0, gn_stats_ctx(ctx, &st));
	ASSERT_EQ(0, st.drops[GN_DROP_MALFORMED]);
	ASSERT_EQ(1, st.ctl_packets);	/* the PONG */
	ctl = st.ctl_packets;

	len = probe_packet(p, m, GN_PKT_PING, 12345, 3);
	gn_test_packet_in(ctx, 1, p, len);
	ASSERT_EQ(0, gn_stats_ctx(ctx, &st));
	ASSERT_EQ(1, st.drops[GN_DROP_MALFORMED]);
	ASSERT_EQ(ctl, st.ctl_packets);

	/*
	 * A PONG counts once, and only for a PING we sent: a replayed PONG
	 * is dropped by its packet number and changes nothing, not even the
	 * peer's liveness; one for a PING never sent is dropped too.
	 */
	ASSERT_EQ(0, ctx->dl.peers[1].srtt_ns);
	sent = gn_env_libc_now() - 1000000;
	ctx->dl.peers[1].last_ping_ns = sent;
	ctx->dl.peers[1].last_rx_ns = 0;
	len = probe_packet(p, m, GN_PKT_PONG, sent, 0);
	gn_test_packet_in(ctx, 1, p, len);
	ASSERT_LT(0, ctx->dl.peers[1].srtt_ns);
	ASSERT_LT(sent, ctx->dl.peers[1].last_rx_ns);
	srtt = ctx->dl.peers[1].srtt_ns;
	ctx->dl.peers[1].last_rx_ns = 0;
	gn_test_packet_in(ctx, 1, p, len);
	ASSERT_EQ(0, ctx->dl.peers[1].last_rx_ns);
	len = probe_packet(p, m, GN_PKT_PONG, sent + 1, 0);
	gn_test_packet_in(ctx, 1, p, len);
	ASSERT_EQ(0, gn_stats_ctx(ctx, &st));
	ASSERT_EQ(2, st.drops[GN_DROP_REPLAY]);
	ASSERT_EQ(srtt, ctx->dl.peers[1].srtt_ns);

	len = probe_packet(p, m, GN_PKT_CTRL_ACK, 5, 0);
	gn_test_packet_in(ctx, 1, p, len);
	len = probe_packet(p, m, GN_PKT_CTRL_ACK, 0, 0);
	gn_test_packet_in(ctx, 1, p, len);
	len = probe_packet(p, m, GN_PKT_CTRL_ACK, 5, 2);
	gn_test_packet_in(ctx, 1, p, len);
	ASSERT_EQ(0, gn_stats_ctx(ctx, &st));
	ASSERT_EQ(3, st.drops[GN_DROP_MALFORMED]);
	ASSERT_EQ(0, st.drops[GN_DROP_MAC]);
	ASSERT_EQ(ctl, st.ctl_packets);
	gn_test_ctx_free(ctx);
}

/*
 * The environment's ChaCha20-Poly1305 gives RFC 8439's appendix A.5
 * (whose nonce is laid out as ours), both ways, in place, and refuses a
 * changed tag, associated byte or ciphertext byte.
 */
TEST(aead_rfc8439)
{
	const size_t n = sizeof(gn_rfc8439_a5_text);
	uint8_t *p = malloc(n + GN_WIRE_TAG);
	uint8_t ad[sizeof(gn_rfc8439_a5_aad)];

	ASSERT_NE(NULL, p);
	ASSERT_EQ(n + GN_WIRE_TAG, sizeof(gn_rfc8439_a5_out));
	memcpy(ad, gn_rfc8439_a5_aad, sizeof(ad));
	memcpy(p, gn_rfc8439_a5_text, n);
	ASSERT_EQ(0, gn_aead_seal(gn_rfc8439_a5_key, gn_rfc8439_a5_nonce, ad,
				  sizeof(ad), p, n));
	ASSERT_EQ(0, memcmp(gn_rfc8439_a5_out, p, n + GN_WIRE_TAG));
	ASSERT_EQ(0, gn_aead_open(gn_rfc8439_a5_key, gn_rfc8439_a5_nonce, ad,
				  sizeof(ad), p, n));
	ASSERT_EQ(0, memcmp(gn_rfc8439_a5_text, p, n));
	memcpy(p, gn_rfc8439_a5_out, n + GN_WIRE_TAG);
	p[n + 15] ^= 0x80;
	ASSERT_EQ(-EBADMSG, gn_aead_open(gn_rfc8439_a5_key, gn_rfc8439_a5_nonce,
					 ad, sizeof(ad), p, n));
	memcpy(p, gn_rfc8439_a5_out, n + GN_WIRE_TAG);
	ad[11] ^= 1;
	ASSERT_EQ(-EBADMSG, gn_aead_open(gn_rfc8439_a5_key, gn_rfc8439_a5_nonce,
					 ad, sizeof(ad), p, n));
	ad[11] ^= 1;
	memcpy(p, gn_rfc8439_a5_out, n + GN_WIRE_TAG);
	p[100] ^= 4;
	ASSERT_EQ(-EBADMSG, gn_aead_open(gn_rfc8439_a5_key, gn_rfc8439_a5_nonce,
					 ad, sizeof(ad), p, n));
	memcpy(p, gn_rfc8439_a5_out, n + GN_WIRE_TAG);
	ASSERT_EQ(-EBADMSG, gn_aead_open(gn_rfc8439_a5_key,
					 gn_rfc8439_a5_nonce + 1, ad,
					 sizeof(ad), p, n));
	free(p);
}

/*
 * Every known answer of golden/seal_vectors.h: the tag of the associated
 * bytes and body, and the body back after gn_aead_open(), in a buffer of
 * exactly its length (ASan sees any access past it).
 */
TEST(aead_known_answers)
{
	size_t v, i;

	for (v = 0; v < sizeof(gn_seal_kat) / sizeof(gn_seal_kat[0]); v++) {
		const struct gn_seal_kat *kat = &gn_seal_kat[v];
		size_t n = (size_t)kat->ad_len + kat->body_len;
		uint8_t *msg = malloc(n + GN_WIRE_TAG);

		ASSERT_NE(NULL, msg);
		for (i = 0; i < n; i++)
			msg[i] = GN_SEAL_KAT_BYTE(kat->pattern, i);
		ASSERT_EQ(0, gn_aead_seal(gn_seal_kat_key[kat->key], kat->pn, msg,
					  kat->ad_len, msg + kat->ad_len,
					  kat->body_len));
		EXPECT_EQ(0, memcmp(kat->tag, msg + n, GN_WIRE_TAG))
			TH_LOG("key %u pattern %u, %u + %u bytes", kat->key,
			       kat->pattern, kat->ad_len, kat->body_len);
		ASSERT_EQ(0, gn_aead_open(gn_seal_kat_key[kat->key], kat->pn, msg,
					  kat->ad_len, msg + kat->ad_len,
					  kat->body_len));
		for (i = 0; i < n; i++)
			ASSERT_EQ(GN_SEAL_KAT_BYTE(kat->pattern, i), msg[i]);
		free(msg);
	}
}

/*
 * The key schedule: gn_kdf() gives the BLAKE2 reference KAT, and the
 * HELLO, session and sender keys are the Python model's; a run that
 * differs in one instance gets other keys, and an oversized info none.
 */
TEST(key_schedule_known_answers)
{
	static uint8_t big[GN_WIRE_INFO_MAX + 1];
	uint8_t k[GN_SEAL_KEY_LEN], s[GN_SEAL_KEY_LEN], kat_key[32];
	size_t v;

	for (v = 0; v < sizeof(kat_key); v++)
		kat_key[v] = (uint8_t)v;
	ASSERT_EQ(0, gn_kdf(k, kat_key, sizeof(kat_key), NULL, 0, NULL, 0));
	ASSERT_EQ(0, memcmp(gn_blake2s_kat_keyed_empty, k, sizeof(k)));
	for (v = 0; v < sizeof(gn_seal_kat_hello) / sizeof(gn_seal_kat_hello[0]); v++) {
		const struct gn_seal_kat_hello *kat = &gn_seal_kat_hello[v];

		ASSERT_EQ(0, gn_wire_hello_key(k, gn_seal_kat_job_key, kat->rank,
					       kat->instance));
		ASSERT_EQ(0, memcmp(kat->key, k, sizeof(k))) TH_LOG("hello %zu", v);
	}
	for (v = 0; v < sizeof(gn_seal_kat_session) / sizeof(gn_seal_kat_session[0]); v++) {
		const struct gn_seal_kat_session *kat = &gn_seal_kat_session[v];

		ASSERT_EQ(0, gn_wire_session_key(s, gn_seal_kat_job_key, kat->info,
						 kat->info_len));
		ASSERT_EQ(0, memcmp(kat->session, s, sizeof(s))) TH_LOG("session %zu", v);
		ASSERT_EQ(0, gn_wire_sender_key(k, s, 0));
		ASSERT_EQ(0, memcmp(kat->sender0, k, sizeof(k)));
		ASSERT_EQ(0, gn_wire_sender_key(k, s, kat->last));
		ASSERT_EQ(0, memcmp(kat->sender_last, k, sizeof(k)));
	}
	ASSERT_NE(0, memcmp(gn_seal_kat_session[0].session,
			    gn_seal_kat_session[1].session, 32));
	memcpy(k, s, sizeof(s));
	ASSERT_EQ(-EINVAL, gn_wire_session_key(s, gn_seal_kat_job_key, big,
					       sizeof(big)));
	ASSERT_EQ(0, memcmp(k, s, sizeof(s)));
	ASSERT_EQ(0, gn_wire_session_key(s, gn_seal_kat_job_key, big,
					 GN_WIRE_INFO_MAX));
}

/* A packet of @len bytes before the tag: a DATA header, then a ramp. */
static void ramp_packet(uint8_t *p, size_t len)
{
	struct gn_wire_hdr h = {
		.magic = GN_WIRE_MAGIC, .version = GN_WIRE_VERSION,
		.type = GN_PKT_DATA, .src = 1, .job = 77, .pn = 1,
		.body_len = (uint16_t)(len - GN_WIRE_DATA_HDR),
	};
	size_t i;

	for (i = 0; i < len; i++)
		p[i] = (uint8_t)(i * 7 + 3);
	gn_wire_hdr_put(&h, p);
}

/*
 * Encrypted or in the clear, any length: any one changed bit of a sealed
 * packet (header, fixed part, body, tag), another key, another sender's
 * key or none, and the check fails.
 */
TEST(seal_catches_every_bit)
{
	static uint8_t p[GN_WIRE_MAX_PKT], q[GN_WIRE_MAX_PKT];
	static const size_t lens[] = { 68, 69, 100, 131, 132, 1000, 1472,
				       GN_WIRE_MAX_PKT - GN_WIRE_TAG };
	uint8_t other[GN_SEAL_KEY_LEN];
	size_t k, i, len;
	int clear;

	memcpy(other, skey, sizeof(other));
	other[31] ^= 1;
	for (clear = 0; clear < 2; clear++)
		for (k = 0; k < sizeof(lens) / sizeof(lens[0]); k++) {
			ramp_packet(p, lens[k]);
			memcpy(q, p, lens[k]);
			len = gn_wire_seal(skey, p, lens[k], 77 + k,
					   clear ? GN_SEAL_CLEAR : 0);
			ASSERT_EQ(lens[k] + GN_WIRE_TAG, len);
			/* Clear bodies stay as they were; others do not. */
			if (lens[k] > GN_WIRE_DATA_HDR)
				ASSERT_EQ(clear, !memcmp(p + GN_WIRE_DATA_HDR,
							 q + GN_WIRE_DATA_HDR,
							 lens[k] - GN_WIRE_DATA_HDR));
			memcpy(q, p, len);
			ASSERT_EQ(-EBADMSG, gn_wire_open(other, q, len));
			memcpy(q, p, len);
			ASSERT_EQ(-EBADMSG, gn_wire_open(NULL, q, len));
			for (i = 0; i < len * 8; i += (len > 200 ? 61 : 1)) {
				memcpy(q, p, len);
				q[i / 8] ^= (uint8_t)(1u << (i % 8));
				ASSERT_EQ(-EBADMSG, gn_wire_open(skey, q, len))
					TH_LOG("len %zu bit %zu", len, i);
			}
			/* A truncated packet is not opened either. */
			memcpy(q, p, len);
			ASSERT_EQ(-EBADMSG, gn_wire_open(skey, q, len - 1));
			ASSERT_EQ(0, gn_wire_open(skey, p, len));
		}
}

/*
 * Without a key: GN_SEAL_CLEAR and a zero tag, which only a keyless
 * check takes; and nothing that claims to be encrypted.
 */
TEST(seal_insecure)
{
	uint8_t p[256];
	size_t len, i;

	ramp_packet(p, 100);
	len = gn_wire_seal(NULL, p, 100, 5, 0);
	ASSERT_EQ(100 + GN_WIRE_TAG, len);
	ASSERT_EQ(GN_SEAL_CLEAR, p[24]);
	for (i = 100; i < len; i++)
		ASSERT_EQ(0, p[i]);
	ASSERT_EQ(0, gn_wire_open(NULL, p, len));
	ASSERT_EQ(-EBADMSG, gn_wire_open(skey, p, len));
	p[24] = 0;
	ASSERT_EQ(-EBADMSG, gn_wire_open(NULL, p, len));
	p[24] = GN_SEAL_CLEAR;
	p[len - 1] = 1;
	ASSERT_EQ(-EBADMSG, gn_wire_open(NULL, p, len));
}

/*
 * gn_wire_seal() takes what a receiver would, and nothing else: past the
 * largest packet, shorter than the header and fixed part, packet number
 * 0 or over 56 bits, unknown flags; and then it writes nothing.
 */
TEST(seal_refuses)
{
	const size_t most = GN_WIRE_MAX_PKT - GN_WIRE_TAG;
	uint8_t *p = malloc(2 * GN_WIRE_MAX_PKT), *q = malloc(2 * GN_WIRE_MAX_PKT);
	size_t i;

	ASSERT_NE(NULL, p);
	ASSERT_NE(NULL, q);
	memset(p, 0xaa, 2 * GN_WIRE_MAX_PKT);
	ramp_packet(p, GN_WIRE_DATA_HDR);
	memcpy(q, p, 2 * GN_WIRE_MAX_PKT);
	ASSERT_EQ(0, gn_wire_seal(skey, p, most + 1, 1, 0));
	ASSERT_EQ(0, gn_wire_seal(NULL, p, most + 1, 1, 0));
	ASSERT_EQ(0, gn_wire_seal(skey, p, GN_WIRE_DATA_HDR - 1, 1, 0));
	ASSERT_EQ(0, gn_wire_seal(skey, p, 100, 0, 0));
	ASSERT_EQ(0, gn_wire_seal(skey, p, 100, GN_WIRE_PN_MAX + 1, 0));
	ASSERT_EQ(0, gn_wire_seal(skey, p, 100, 1, 2));
	for (i = 0; i < 2 * GN_WIRE_MAX_PKT; i++) {
		ASSERT_EQ(q[i], p[i]) TH_LOG("byte %zu written", i);
	}
	/* The longest packet and the last number still go, both ways. */
	ASSERT_EQ(GN_WIRE_MAX_PKT, gn_wire_seal(skey, p, most, GN_WIRE_PN_MAX, 0));
	ASSERT_EQ(0, gn_wire_open(skey, p, GN_WIRE_MAX_PKT));
	ASSERT_EQ(-EBADMSG, gn_wire_open(skey, p, GN_WIRE_MAX_PKT + 1));
	free(p);
	free(q);
}

TEST_HARNESS_MAIN
