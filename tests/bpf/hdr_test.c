// SPDX-License-Identifier: MIT
/*
 * hdr_test.c - the tc program's header parser (bpf/gradnet_stat_hdr.h)
 * agrees with the library's (lib/wire/hdr.c, gn_wire_hdr_get()), so that
 * gradnet-stat counts exactly the datagrams a rank would take as well
 * formed, and fails when the wire format moves without it:
 *  - every golden packet (tests/golden/packets.h, made from wire.h's
 *    layout) parses, with the flow fields of its header
 *  - a million mutations of them (header bytes, lengths, versions, types,
 *    body lengths, truncations and extensions) get the same verdict from
 *    both: taken, another version, malformed, or no gradnet datagram at
 *    all, and the same fields when taken
 * The parser sees what the BPF program loads: the first 24 bytes, or of a
 * shorter payload the first 4 or 2, the rest zero.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "kselftest_harness.h"
#include <gradnet/wire.h>
#include "golden/packets.h"
#include "gradnet_stat_hdr.h"

#define NGOLDEN		(sizeof(gn_golden_pkt) / sizeof(gn_golden_pkt[0]))
#define MUTATIONS	1000000

/* gn_stat_hdr_parse() on what the tc program would load of @pkt. */
static int parse(const uint8_t *pkt, size_t len, struct gn_stat_hdr *o)
{
	uint8_t h[GN_STAT_HDR_LOAD] = { 0 };

	memcpy(h, pkt, len >= GN_STAT_HDR_LOAD ? GN_STAT_HDR_LOAD :
		       len >= GN_STAT_HDR_ID ? GN_STAT_HDR_ID :
		       len >= GN_STAT_HDR_MAGIC ? GN_STAT_HDR_MAGIC : 0);
	return gn_stat_hdr_parse(h, (uint32_t)len, o);
}

/* The fields of @h as the tc program keys a flow by them. */
static void want_fields(const struct gn_wire_hdr *h, struct gn_stat_hdr *w)
{
	bool data = h->type == GN_PKT_DATA || h->type == GN_PKT_WHOLE;

	w->job = h->job;
	w->src = h->src;
	w->dst = h->dst;
	w->tensor = data ? h->tensor : 0;
	w->phase = data ? h->phase : GN_STAT_PHASE_CTL;
}

TEST(golden)
{
	struct gn_stat_hdr o, w;
	struct gn_wire_hdr h;
	size_t i;

	for (i = 0; i < NGOLDEN; i++) {
		const struct gn_golden_pkt *g = &gn_golden_pkt[i];

		ASSERT_EQ(0, gn_wire_hdr_get(g->bytes, g->len, &h)) TH_LOG("%s", g->name);
		ASSERT_EQ(0, parse(g->bytes, g->len, &o)) TH_LOG("%s", g->name);
		want_fields(&h, &w);
		EXPECT_EQ(0, memcmp(&w, &o, sizeof(w))) TH_LOG("%s: fields", g->name);
		EXPECT_EQ(g->hdr.job, o.job);
	}
}

static uint64_t rng = 0x9e3779b97f4a7c15ull;

static uint64_t next(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

/* One mutation of a golden packet into @buf; its new length. */
static size_t mutate(uint8_t *buf, size_t cap)
{
	const struct gn_golden_pkt *g = &gn_golden_pkt[next() % NGOLDEN];
	size_t len = g->len, i;
	uint16_t body;

	memcpy(buf, g->bytes, len);
	switch (next() % 8) {
	case 0:		/* a byte of the header */
		buf[next() % GN_WIRE_HDR_LEN] = (uint8_t)next();
		break;
	case 1:		/* a shorter or longer payload */
		len = next() % 2 ? next() % (len + 1) : len + next() % 64;
		if (len > cap)
			len = cap;
		for (i = g->len; i < len; i++)
			buf[i] = (uint8_t)next();
		break;
	case 2:		/* another version */
		buf[2] = (uint8_t)(GN_WIRE_VERSION + (next() % 5) - 2);
		break;
	case 3:		/* another type */
		buf[3] = (uint8_t)(next() % 12);
		break;
	case 4:		/* a body length, and a payload that fits it */
		body = (uint16_t)(next() % 300);
		buf[20] = (uint8_t)body;
		buf[21] = (uint8_t)(body >> 8);
		if (next() % 2 && gn_wire_fixed_len(buf[3]) >= 0) {
			len = GN_WIRE_HDR_LEN + (size_t)gn_wire_fixed_len(buf[3]) +
			      body + GN_WIRE_TAG;
			for (i = g->len; i < len && i < cap; i++)
				buf[i] = (uint8_t)next();
			if (len > cap)
				len = cap;
		}
		break;
	case 5:		/* a phase */
		buf[22] = (uint8_t)(next() % 4);
		break;
	case 6:		/* the magic */
		buf[next() % 2] ^= (uint8_t)(1u << (next() % 8));
		break;
	default:	/* the fields that name the flow */
		for (i = 4; i < 16; i++)
			buf[i] = (uint8_t)next();
		break;
	}
	return len;
}

TEST(mutations)
{
	static uint8_t buf[GN_WIRE_MAX_PKT + 128];
	unsigned int seen[4] = { 0 };
	struct gn_stat_hdr o, w;
	struct gn_wire_hdr h;
	size_t len;
	int i, lib, bpf;

	for (i = 0; i < MUTATIONS; i++) {
		len = mutate(buf, sizeof(buf));
		lib = gn_wire_hdr_get(buf, len, &h);
		bpf = parse(buf, len, &o);
		if (len < 2 || buf[0] != 0x47 || buf[1] != 0x4e) {
			ASSERT_EQ(GN_STAT_NOT_GRADNET, bpf) TH_LOG("mutation %d", i);
			ASSERT_EQ(-EBADMSG, lib);
			seen[0]++;
		} else if (lib == -EPROTONOSUPPORT) {
			ASSERT_EQ(GN_STAT_REFUSE_VERSION, bpf) TH_LOG("mutation %d", i);
			seen[1]++;
		} else if (lib) {
			ASSERT_EQ(GN_STAT_REFUSE_HEADER, bpf)
				TH_LOG("mutation %d: len %zu, type %u", i, len, buf[3]);
			seen[2]++;
		} else {
			ASSERT_EQ(0, bpf) TH_LOG("mutation %d: len %zu", i, len);
			want_fields(&h, &w);
			ASSERT_EQ(0, memcmp(&w, &o, sizeof(w))) TH_LOG("mutation %d", i);
			seen[3]++;
		}
	}
	TH_LOG("%u no magic, %u other versions, %u malformed, %u taken",
	       seen[0], seen[1], seen[2], seen[3]);
	/* Every verdict came up often enough to mean something. */
	for (i = 0; i < 4; i++)
		EXPECT_LT(1000, seen[i]);
}

TEST_HARNESS_MAIN
