// SPDX-License-Identifier: MIT
/*
 * filter_test.c - the DPDK path's receive filter (dpdk/filter.c) on frames
 * built here: a good datagram is taken with its payload where it lies,
 * each malformed frame is dropped for its one reason, ARP for our address
 * is recognised and other ARP is not, and no truncation of a good frame
 * is ever taken; the Internet checksum (dpdk/csum.c), every kernel of it,
 * equals a byte-pair reference for every length 0..9000 at every
 * alignment. Plain C: it runs without DPDK.
 */
#include <arpa/inet.h>
#include <stdlib.h>
#include <string.h>

#include "csum.h"
#include "filter.h"
#include "kselftest_harness.h"

#define PAYLOAD 100
#define MAX_FRAME 256

static const u8 our_mac[6] = { 0x02, 0, 0, 0, 0, 0x01 };
static const u8 their_mac[6] = { 0x02, 0, 0, 0, 0, 0x02 };

static struct gn_dpdk_filter filt(void)
{
	struct gn_dpdk_filter f = { .max_pkt = 1472 };

	memcpy(f.mac, our_mac, 6);
	f.ip = inet_addr("10.9.0.1");
	f.udp_port = htons(7000);
	return f;
}

static void put16(u8 *p, unsigned int v)
{
	p[0] = (u8)(v >> 8);
	p[1] = (u8)v;
}

static unsigned int sum16(unsigned int s, const u8 *p, size_t n)
{
	size_t i;

	for (i = 0; i + 1 < n; i += 2)
		s += (unsigned int)(p[i] << 8 | p[i + 1]);
	if (n & 1)
		s += (unsigned int)p[n - 1] << 8;
	while (s >> 16)
		s = (s & 0xffff) + (s >> 16);
	return s;
}

/* A valid datagram from 10.9.0.2:7001 to us, IP header of @ihl words. */
static size_t good(u8 *f, unsigned int ihl)
{
	u8 *ip = f + 14, *udp = ip + ihl * 4;
	unsigned int ulen = 8 + PAYLOAD, s;
	u32 src = inet_addr("10.9.0.2"), dst = inet_addr("10.9.0.1");
	int i;

	memset(f, 0, MAX_FRAME);
	memcpy(f, our_mac, 6);
	memcpy(f + 6, their_mac, 6);
	put16(f + 12, 0x0800);
	ip[0] = (u8)(0x40 | ihl);
	put16(ip + 2, ihl * 4 + ulen);
	put16(ip + 6, 0x4000);
	ip[8] = 64;
	ip[9] = 17;
	memcpy(ip + 12, &src, 4);
	memcpy(ip + 16, &dst, 4);
	put16(ip + 10, ~sum16(0, ip, ihl * 4) & 0xffff);
	put16(udp, 7001);
	put16(udp + 2, 7000);
	put16(udp + 4, ulen);
	for (i = 0; i < PAYLOAD; i++)
		udp[8 + i] = (u8)(i * 7 + 1);
	s = sum16(0, ip + 12, 8) + 17 + ulen;
	s = ~sum16(s, udp, ulen) & 0xffff;
	put16(udp + 6, s ? s : 0xffff);
	return 14 + ihl * 4 + ulen;
}

static int classify(const u8 *f, size_t len, struct gn_dpdk_rx *rx)
{
	struct gn_dpdk_filter fl = filt();
	u8 *copy = malloc(len ? len : 1);
	int r;

	/* An exact-size copy: ASan sees any read past the frame. */
	memcpy(copy, f, len);
	r = gn_dpdk_classify(&fl, copy, (u32)len, GN_DCS_UNKNOWN,
			     GN_DCS_UNKNOWN, rx);
	free(copy);
	return r;
}

TEST(good_datagram_taken)
{
	struct gn_dpdk_rx rx;
	u8 f[MAX_FRAME];
	unsigned int ihl;

	for (ihl = 5; ihl <= 7; ihl++) {
		size_t len = good(f, ihl);

		ASSERT_EQ(GN_DRX_UDP, classify(f, len, &rx));
		ASSERT_EQ(14 + ihl * 4 + 8, rx.off);
		ASSERT_EQ(PAYLOAD, rx.len);
		ASSERT_EQ(inet_addr("10.9.0.2"), rx.src_ip);
		ASSERT_EQ(htons(7001), rx.src_port);
		ASSERT_EQ(1, f[rx.off]);
		/* Ethernet padding after the datagram is not payload. */
		ASSERT_EQ(GN_DRX_UDP, classify(f, len + 20, &rx));
		ASSERT_EQ(PAYLOAD, rx.len);
	}
}

TEST(zero_udp_checksum_is_none)
{
	struct gn_dpdk_rx rx;
	u8 f[MAX_FRAME];
	size_t len = good(f, 5);

	f[14 + 20 + 6] = f[14 + 20 + 7] = 0;
	ASSERT_EQ(GN_DRX_UDP, classify(f, len, &rx));
}

/* @mutate breaks one field of a good frame; the reason must be @why. */
static void expect_drop(struct __test_metadata *_metadata, const char *what,
			void (*mutate)(u8 *f, size_t *len), unsigned int why)
{
	struct gn_dpdk_rx rx;
	u8 f[MAX_FRAME];
	size_t len = good(f, 5);

	mutate(f, &len);
	ASSERT_EQ(GN_DRX_DROP, classify(f, len, &rx)) TH_LOG("%s", what);
	ASSERT_STREQ(gn_dpdk_drop_name(why), gn_dpdk_drop_name(rx.drop)) TH_LOG("%s", what);
}

static void m_ethertype(u8 *f, size_t *len) { put16(f + 12, 0x86dd); }
static void m_dst_mac(u8 *f, size_t *len) { f[5] ^= 1; }
static void m_version(u8 *f, size_t *len) { f[14] = 0x65; }
static void m_ihl(u8 *f, size_t *len) { f[14] = 0x44; }
static void m_total_long(u8 *f, size_t *len) { put16(f + 16, 20 + 8 + PAYLOAD + 1); }
static void m_total_short(u8 *f, size_t *len) { put16(f + 16, 20 + 7); }
static void m_fragment(u8 *f, size_t *len) { put16(f + 20, 0x2000); }
static void m_offset(u8 *f, size_t *len) { put16(f + 20, 0x0001); }
static void m_proto(u8 *f, size_t *len) { f[23] = 6; }
static void m_icmp(u8 *f, size_t *len) { f[23] = 1; }
static void m_dst_ip(u8 *f, size_t *len) { f[33] ^= 1; }
static void m_ip_csum(u8 *f, size_t *len) { f[25] ^= 1; }
static void m_udp_long(u8 *f, size_t *len) { put16(f + 38, 8 + PAYLOAD + 1); }
static void m_udp_short(u8 *f, size_t *len) { put16(f + 38, 7); }
static void m_dst_port(u8 *f, size_t *len) { put16(f + 36, 7001); }
static void m_udp_csum(u8 *f, size_t *len) { f[41] ^= 1; }
static void m_body(u8 *f, size_t *len) { f[50] ^= 0x80; }
static void m_tiny(u8 *f, size_t *len) { *len = 13; }
static void m_no_udp(u8 *f, size_t *len) { *len = 14 + 20 + 7; }

TEST(each_defect_has_its_reason)
{
	expect_drop(_metadata, "IPv6 ether type", m_ethertype, GN_DDROP_ETHERTYPE);
	expect_drop(_metadata, "another MAC", m_dst_mac, GN_DDROP_DST_MAC);
	expect_drop(_metadata, "IP version 6", m_version, GN_DDROP_IP_HDR);
	expect_drop(_metadata, "IHL 4", m_ihl, GN_DDROP_IP_HDR);
	expect_drop(_metadata, "total length past the frame", m_total_long, GN_DDROP_IP_HDR);
	expect_drop(_metadata, "total length below IP+UDP", m_total_short, GN_DDROP_IP_HDR);
	expect_drop(_metadata, "MF set", m_fragment, GN_DDROP_FRAGMENT);
	expect_drop(_metadata, "fragment offset", m_offset, GN_DDROP_FRAGMENT);
	expect_drop(_metadata, "TCP", m_proto, GN_DDROP_NOT_UDP);
	expect_drop(_metadata, "ICMP", m_icmp, GN_DDROP_ICMP);
	expect_drop(_metadata, "another IP", m_dst_ip, GN_DDROP_DST_IP);
	expect_drop(_metadata, "IP checksum", m_ip_csum, GN_DDROP_IP_CSUM);
	expect_drop(_metadata, "UDP length past IP", m_udp_long, GN_DDROP_UDP_LEN);
	expect_drop(_metadata, "UDP length below 8", m_udp_short, GN_DDROP_UDP_LEN);
	expect_drop(_metadata, "another port", m_dst_port, GN_DDROP_DST_PORT);
	expect_drop(_metadata, "UDP checksum", m_udp_csum, GN_DDROP_UDP_CSUM);
	expect_drop(_metadata, "a payload bit flipped", m_body, GN_DDROP_UDP_CSUM);
	expect_drop(_metadata, "13 bytes", m_tiny, GN_DDROP_SHORT);
	expect_drop(_metadata, "no room for UDP", m_no_udp, GN_DDROP_SHORT);
}

TEST(payload_over_max_pkt_dropped)
{
	struct gn_dpdk_filter fl = filt();
	struct gn_dpdk_rx rx;
	u8 f[MAX_FRAME];
	size_t len = good(f, 5);

	fl.max_pkt = PAYLOAD - 1;
	ASSERT_EQ(GN_DRX_DROP, gn_dpdk_classify(&fl, f, (u32)len, 0, 0, &rx));
	ASSERT_EQ(GN_DDROP_UDP_LEN, rx.drop);
	fl.max_pkt = PAYLOAD;
	ASSERT_EQ(GN_DRX_UDP, gn_dpdk_classify(&fl, f, (u32)len, 0, 0, &rx));
}

/* What the port verified stands: no software check over it. */
TEST(port_checksum_verdicts_trusted)
{
	struct gn_dpdk_filter fl = filt();
	struct gn_dpdk_rx rx;
	u8 f[MAX_FRAME];
	size_t len = good(f, 5);

	ASSERT_EQ(GN_DRX_DROP, gn_dpdk_classify(&fl, f, (u32)len, GN_DCS_BAD,
						GN_DCS_UNKNOWN, &rx));
	ASSERT_EQ(GN_DDROP_IP_CSUM, rx.drop);
	ASSERT_EQ(GN_DRX_DROP, gn_dpdk_classify(&fl, f, (u32)len, GN_DCS_GOOD,
						GN_DCS_BAD, &rx));
	ASSERT_EQ(GN_DDROP_UDP_CSUM, rx.drop);
	f[41] ^= 1;
	ASSERT_EQ(GN_DRX_UDP, gn_dpdk_classify(&fl, f, (u32)len, GN_DCS_GOOD,
					       GN_DCS_GOOD, &rx));
}

TEST(no_truncation_is_taken)
{
	struct gn_dpdk_rx rx;
	u8 f[MAX_FRAME];
	size_t len = good(f, 6), cut;

	for (cut = 0; cut < len; cut++) {
		ASSERT_EQ(GN_DRX_DROP, classify(f, cut, &rx)) TH_LOG("%zu bytes", cut);
		ASSERT_TRUE(rx.drop == GN_DDROP_SHORT || rx.drop == GN_DDROP_IP_HDR) TH_LOG("%zu bytes: %s", cut, gn_dpdk_drop_name(rx.drop));
	}
}

/* An ARP message of opcode @op from 10.9.0.2 asking about @tip. */
static size_t arp(u8 *f, unsigned int op, const char *tip)
{
	u32 sip = inet_addr("10.9.0.2"), t = inet_addr(tip);

	memset(f, 0, MAX_FRAME);
	memset(f, 0xff, 6);
	memcpy(f + 6, their_mac, 6);
	put16(f + 12, 0x0806);
	put16(f + 14, 1);
	put16(f + 16, 0x0800);
	f[18] = 6;
	f[19] = 4;
	put16(f + 20, op);
	memcpy(f + 22, their_mac, 6);
	memcpy(f + 28, &sip, 4);
	memcpy(f + 38, &t, 4);
	return 60;
}

TEST(arp_for_us_recognised)
{
	struct gn_dpdk_rx rx;
	u8 f[MAX_FRAME];

	ASSERT_EQ(GN_DRX_ARP_REQUEST, classify(f, arp(f, 1, "10.9.0.1"), &rx));
	ASSERT_EQ(0, memcmp(rx.src_mac, their_mac, 6));
	ASSERT_EQ(inet_addr("10.9.0.2"), rx.src_ip);
	ASSERT_EQ(GN_DRX_ARP_REPLY, classify(f, arp(f, 2, "10.9.0.1"), &rx));
	ASSERT_EQ(0, memcmp(rx.src_mac, their_mac, 6));
	ASSERT_EQ(GN_DRX_DROP, classify(f, arp(f, 1, "10.9.0.3"), &rx));
	ASSERT_EQ(GN_DDROP_ARP, rx.drop);
	ASSERT_EQ(GN_DRX_DROP, classify(f, arp(f, 3, "10.9.0.1"), &rx));
	ASSERT_EQ(GN_DDROP_ARP, rx.drop);
	arp(f, 1, "10.9.0.1");
	f[18] = 8;
	ASSERT_EQ(GN_DRX_DROP, classify(f, 60, &rx));
	ASSERT_EQ(GN_DDROP_ARP, rx.drop);
	ASSERT_EQ(GN_DRX_DROP, classify(f, 14 + 27, &rx));
	ASSERT_EQ(GN_DDROP_SHORT, rx.drop);
}

/* Gratuitous ARP of another host (a move announced) is recognised, as a
 * request or a reply; of our own address it is not. */
TEST(arp_announce_recognised)
{
	struct gn_dpdk_rx rx;
	u8 f[MAX_FRAME];

	ASSERT_EQ(GN_DRX_ARP_ANNOUNCE, classify(f, arp(f, 1, "10.9.0.2"), &rx));
	ASSERT_EQ(0, memcmp(rx.src_mac, their_mac, 6));
	ASSERT_EQ(inet_addr("10.9.0.2"), rx.src_ip);
	ASSERT_EQ(GN_DRX_ARP_ANNOUNCE, classify(f, arp(f, 2, "10.9.0.2"), &rx));
	ASSERT_EQ(GN_DRX_DROP, classify(f, arp(f, 3, "10.9.0.2"), &rx));
	ASSERT_EQ(GN_DDROP_ARP, rx.drop);
	/* Sender and target both ours: someone claims our address. */
	arp(f, 1, "10.9.0.1");
	memcpy(f + 28, f + 38, 4);
	ASSERT_EQ(GN_DRX_ARP_REQUEST, classify(f, 60, &rx));
}

TEST(drop_names)
{
	unsigned int i;

	for (i = 0; i < GN_DDROP_N; i++)
		ASSERT_NE(NULL, gn_dpdk_drop_name(i));
	ASSERT_STREQ("?", gn_dpdk_drop_name(GN_DDROP_N));
}

/* ---- the Internet checksum ---- */

#define CSUM_MAX 9000
#define CSUM_ALIGN 64

/* The specification, byte pair by byte pair (RFC 1071), folded. */
static u16 csum_ref(u64 s, const u8 *p, size_t n)
{
	size_t i;

	for (i = 0; i + 1 < n; i += 2)
		s += (u64)(p[i] << 8 | p[i + 1]);
	if (n & 1)
		s += (u64)p[n - 1] << 8;
	while (s >> 16)
		s = (s & 0xffff) + (s >> 16);
	return (u16)s;
}

static void fold16(u64 *s)
{
	while (*s >> 16)
		*s = (*s & 0xffff) + (*s >> 16);
}

/*
 * Every span [end - k - len, end - k) of @buf (CSUM_MAX + CSUM_ALIGN bytes,
 * an exact-size allocation, so ASan sees a read past the end at k = 0),
 * for every len and k < CSUM_ALIGN, so every length at every alignment:
 * each kernel this CPU has and the dispatcher against the reference. The
 * reference for a span grown at its front comes from two running sums,
 * of the bytes at even and at odd distance from the end.
 */
static void csum_sweep(struct __test_metadata *_metadata, const u8 *buf,
		       const char *what)
{
	size_t size = CSUM_MAX + CSUM_ALIGN, k, len;
	int isa;

	for (k = 0; k < CSUM_ALIGN; k++) {
		const u8 *end = buf + size - k;
		u64 even = 0, odd = 0;

		for (len = 0; len <= CSUM_MAX; len++) {
			const u8 *p = end - len;
			u64 want;

			/* The byte at p is at distance len - 1 from the end. */
			if (len)
				*((len - 1) & 1 ? &odd : &even) += *p;
			want = len & 1 ? even * 256 + odd : odd * 256 + even;
			fold16(&want);
			for (isa = 0; isa < GN_DCSUM_ISA_N; isa++) {
				if (!gn_dpdk_csum_isa_ok(isa))
					continue;
				ASSERT_EQ(want, gn_dpdk_csum_isa(isa, 0, p, (u32)len)) TH_LOG("%s: kernel %d, %zu bytes at offset %zu", what, isa, len, (size_t)(p - buf) % CSUM_ALIGN);
			}
			ASSERT_EQ(want, gn_dpdk_csum(0, p, (u32)len)) TH_LOG("%s: %zu bytes at offset %zu", what, len, (size_t)(p - buf) % CSUM_ALIGN);
		}
	}
}

TEST(csum_every_length_and_alignment)
{
	size_t size = CSUM_MAX + CSUM_ALIGN, i;
	u8 *buf = malloc(size);
	u32 x = 12345;

	ASSERT_NE(NULL, buf);
	TH_LOG("kernels: scalar%s", gn_dpdk_csum_isa_ok(GN_DCSUM_AVX2) ?
	       ", avx2" : " (no avx2 on this CPU)");
	for (i = 0; i < size; i++) {
		x = x * 1103515245u + 12345u;
		buf[i] = (u8)(x >> 23);
	}
	csum_sweep(_metadata, buf, "random bytes");
	/* All ones: every addition carries, in every lane. */
	memset(buf, 0xff, size);
	csum_sweep(_metadata, buf, "0xff bytes");
	memset(buf, 0, size);
	csum_sweep(_metadata, buf, "zero bytes");
	free(buf);
}

/* The sum passed in is added with end-around carry, as the reference does. */
TEST(csum_adds_to_a_sum)
{
	static const u32 sums[] = { 0, 1, 0xfffe, 0xffff, 0x10000, 0x1fffe,
				    0xfffffff0u, 0xffffffffu };
	u8 buf[1501];
	size_t i, n;
	int isa;

	for (i = 0; i < sizeof(buf); i++)
		buf[i] = (u8)(i * 37 + 11);
	for (i = 0; i < sizeof(sums) / sizeof(sums[0]); i++) {
		for (n = 0; n <= sizeof(buf); n += 167) {
			u16 want = csum_ref(sums[i], buf, n);

			for (isa = 0; isa < GN_DCSUM_ISA_N; isa++)
				if (gn_dpdk_csum_isa_ok(isa))
					ASSERT_EQ(want, gn_dpdk_csum_isa(isa, sums[i], buf, (u32)n)) TH_LOG("sum %#x, %zu bytes, kernel %d", sums[i], n, isa);
			ASSERT_EQ(want, gn_dpdk_csum(sums[i], buf, (u32)n));
		}
	}
	/* The sweep's running reference agrees with the plain one. */
	ASSERT_EQ(csum_ref(0, buf, 1501), gn_dpdk_csum(0, buf, 1501));
	ASSERT_EQ(csum_ref(0, buf + 1, 1500), gn_dpdk_csum(0, buf + 1, 1500));
}

TEST_HARNESS_MAIN
