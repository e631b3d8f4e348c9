// SPDX-License-Identifier: MIT
/*
 * fuzz_frame.c - libFuzzer target for the DPDK path's receive filter
 * (dpdk/filter.c): Ethernet, IPv4, UDP and ARP parsing of arbitrary bytes,
 * with no EAL. The first input byte picks what the port claims to have
 * verified of the checksums and the largest payload taken; the rest is
 * the frame, in an exact-size heap buffer, so ASan reports any read past
 * it. Every verdict is then checked against the frame by a restatement of
 * the rules: a datagram taken lies inside the frame and is addressed to
 * us, with lengths and (unless the port vouched) checksums right; an ARP
 * verdict asks about or answers for our address; a drop has a reason.
 * And the Internet checksum (dpdk/csum.c), every kernel the CPU has and
 * the dispatcher, equals the byte-pair reference on the frame's bytes
 * from its first and its second byte (the other alignment), added to a
 * sum taken from the input.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "csum.h"
#include "filter.h"
#include "fuzz_check.h"

static const u8 our_mac[6] = { 0x02, 0, 0, 0, 0, 0x01 };
static const u8 our_ip[4] = { 10, 9, 0, 1 };
static const u8 our_port[2] = { 0x1b, 0x58 };	/* 7000 */

static unsigned int be16(const u8 *p)
{
	return (unsigned int)(p[0] << 8 | p[1]);
}

/* The ones' complement sum of @n bytes, folded, 0xffff when all is well. */
static unsigned int fold(unsigned long s, const u8 *p, size_t n)
{
	size_t i;

	for (i = 0; i + 1 < n; i += 2)
		s += be16(p + i);
	if (n & 1)
		s += (unsigned int)p[n - 1] << 8;
	while (s >> 16)
		s = (s & 0xffff) + (s >> 16);
	return (unsigned int)s;
}

static void check_udp(const struct gn_dpdk_filter *f, const u8 *fr, size_t len,
		      unsigned int ipc, unsigned int l4c,
		      const struct gn_dpdk_rx *rx)
{
	const u8 *ip = fr + 14, *udp;
	unsigned int ihl = (ip[0] & 0xfu) * 4, tot, ulen;

	GN_FZ_CHECK(len >= 14 + 28, "a datagram shorter than its headers");
	GN_FZ_CHECK(!memcmp(fr, f->mac, 6) && be16(fr + 12) == 0x0800,
		    "taken: not IPv4 to our MAC");
	tot = be16(ip + 2);
	GN_FZ_CHECK((ip[0] >> 4) == 4 && ihl >= 20 && tot >= ihl + 8 &&
		    14 + (size_t)tot <= len, "taken: IPv4 lengths wrong");
	GN_FZ_CHECK(!(be16(ip + 6) & 0x3fff) && ip[9] == 17 &&
		    !memcmp(ip + 16, our_ip, 4), "taken: fragment, not UDP, not us");
	GN_FZ_CHECK(ipc == GN_DCS_GOOD || (ipc == GN_DCS_UNKNOWN &&
					   fold(0, ip, ihl) == 0xffff),
		    "taken: IP checksum not right");
	udp = ip + ihl;
	ulen = be16(udp + 4);
	GN_FZ_CHECK(ulen >= 8 && ulen <= tot - ihl && ulen - 8 <= f->max_pkt &&
		    !memcmp(udp + 2, our_port, 2), "taken: UDP length or port wrong");
	GN_FZ_CHECK(!(udp[6] | udp[7]) || l4c == GN_DCS_GOOD ||
		    (l4c == GN_DCS_UNKNOWN &&
		     fold(fold(0, ip + 12, 8) + 17 + ulen, udp, ulen) == 0xffff),
		    "taken: UDP checksum not right");
	GN_FZ_CHECK(rx->off == 14 + ihl + 8 && rx->len == ulen - 8 &&
		    (size_t)rx->off + rx->len <= len, "payload not where it lies");
	GN_FZ_CHECK(!memcmp(&rx->src_ip, ip + 12, 4) &&
		    !memcmp(&rx->src_port, udp, 2), "sender not the frame's");
}

/* Every checksum kernel against fold() on @p[0, @n), from @sum. */
static void check_csum(u32 sum, const u8 *p, size_t n)
{
	unsigned int want = fold(sum, p, n);
	int isa;

	for (isa = 0; isa < GN_DCSUM_ISA_N; isa++)
		if (gn_dpdk_csum_isa_ok(isa))
			GN_FZ_CHECK(gn_dpdk_csum_isa(isa, sum, p, (u32)n) == want,
				    "a checksum kernel disagrees with the reference");
	GN_FZ_CHECK(gn_dpdk_csum(sum, p, (u32)n) == want,
		    "the checksum disagrees with the reference");
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct gn_dpdk_filter f = { .max_pkt = 1472 };
	struct gn_dpdk_rx rx;
	unsigned int ipc, l4c;
	u32 sum;
	u8 *fr;
	size_t len;
	int k;

	if (!size)
		return 0;
	ipc = data[0] % 3;
	l4c = (data[0] / 3) % 3;
	if (data[0] & 0x80)
		f.max_pkt = 64;
	memcpy(f.mac, our_mac, 6);
	memcpy(&f.ip, our_ip, 4);
	memcpy(&f.udp_port, our_port, 2);
	len = size - 1;
	fr = malloc(len ? len : 1);
	GN_FZ_CHECK(fr, "out of memory");
	memcpy(fr, data + 1, len);
	k = gn_dpdk_classify(&f, fr, (u32)len, ipc, l4c, &rx);
	GN_FZ_CHECK(k == rx.kind, "return and verdict differ");
	switch (k) {
	case GN_DRX_UDP:
		check_udp(&f, fr, len, ipc, l4c, &rx);
		break;
	case GN_DRX_ARP_REQUEST:
	case GN_DRX_ARP_REPLY:
		GN_FZ_CHECK(len >= 14 + 28 && be16(fr + 12) == 0x0806 &&
			    !memcmp(fr + 14 + 24, our_ip, 4) &&
			    be16(fr + 14 + 6) == (k == GN_DRX_ARP_REQUEST ? 1u : 2u),
			    "ARP verdict for a frame that is not ARP for us");
		GN_FZ_CHECK(!memcmp(rx.src_mac, fr + 14 + 8, 6),
			    "ARP sender not the frame's");
		break;
	case GN_DRX_ARP_ANNOUNCE:
		GN_FZ_CHECK(len >= 14 + 28 && be16(fr + 12) == 0x0806 &&
			    (be16(fr + 14 + 6) == 1 || be16(fr + 14 + 6) == 2) &&
			    !memcmp(fr + 14 + 24, fr + 14 + 14, 4) &&
			    memcmp(fr + 14 + 14, our_ip, 4),
			    "an announcement that is not gratuitous ARP of another host");
		GN_FZ_CHECK(!memcmp(rx.src_mac, fr + 14 + 8, 6) &&
			    !memcmp(&rx.src_ip, fr + 14 + 14, 4),
			    "ARP sender not the frame's");
		break;
	default:
		GN_FZ_CHECK(k == GN_DRX_DROP && rx.drop < GN_DDROP_N &&
			    rx.drop != GN_DDROP_SEGMENTED, "a drop without a reason");
		break;
	}
	sum = len >= 4 ? (u32)fr[0] << 24 | (u32)fr[1] << 16 | be16(fr + 2) : 0;
	check_csum(sum, fr, len);
	if (len)
		check_csum(0, fr + 1, len - 1);
	free(fr);
	return 0;
}
