// SPDX-License-Identifier: MIT
/*
 * filter.c - the DPDK path's receive filter (filter.h): Ethernet, IPv4,
 * UDP and ARP parsed from raw bytes, every length checked against the
 * bytes there are, checksums by csum.c. Plain C, no DPDK: the fuzzer
 * links the two alone.
 */
#include "csum.h"
#include "filter.h"

#define ETYPE_IPV4 0x0800
#define ETYPE_ARP 0x0806
#define IPV4_HDR 20
#define UDP_HDR 8
#define PROTO_UDP 17
#define PROTO_ICMP 1
#define ARP_REQUEST 1
#define ARP_REPLY 2

static const char *const drop_names[GN_DDROP_N] = {
	[GN_DDROP_SHORT] = "short",
	[GN_DDROP_SEGMENTED] = "segmented",
	[GN_DDROP_ETHERTYPE] = "ethertype",
	[GN_DDROP_DST_MAC] = "dst_mac",
	[GN_DDROP_IP_HDR] = "ip_header",
	[GN_DDROP_FRAGMENT] = "fragment",
	[GN_DDROP_NOT_UDP] = "not_udp",
	[GN_DDROP_ICMP] = "icmp",
	[GN_DDROP_DST_IP] = "dst_ip",
	[GN_DDROP_IP_CSUM] = "ip_csum",
	[GN_DDROP_UDP_LEN] = "udp_len",
	[GN_DDROP_DST_PORT] = "dst_port",
	[GN_DDROP_UDP_CSUM] = "udp_csum",
	[GN_DDROP_ARP] = "arp",
};

const char *gn_dpdk_drop_name(unsigned int why)
{
	return why < GN_DDROP_N ? drop_names[why] : "?";
}

static u16 be16(const u8 *p)
{
	return (u16)(p[0] << 8 | p[1]);
}

static int drop(struct gn_dpdk_rx *rx, unsigned int why)
{
	rx->kind = GN_DRX_DROP;
	rx->drop = (u8)why;
	return GN_DRX_DROP;
}

static int arp_in(const struct gn_dpdk_filter *f, const u8 *a, u32 len,
		  struct gn_dpdk_rx *rx)
{
	u16 op;

	if (len < GN_DPDK_ARP_LEN)
		return drop(rx, GN_DDROP_SHORT);
	op = be16(a + 6);
	/*
	 * Ethernet, IPv4, 6- and 4-byte addresses, to our address, or
	 * gratuitous (the sender's own address as the target: a host that
	 * moved announcing its new MAC).
	 */
	if (be16(a) != 1 || be16(a + 2) != ETYPE_IPV4 || a[4] != 6 ||
	    a[5] != 4 || (op != ARP_REQUEST && op != ARP_REPLY))
		return drop(rx, GN_DDROP_ARP);
	memcpy(rx->src_mac, a + 8, 6);
	memcpy(&rx->src_ip, a + 14, 4);
	if (!memcmp(a + 24, a + 14, 4) && memcmp(a + 14, &f->ip, 4))
		rx->kind = GN_DRX_ARP_ANNOUNCE;
	else if (memcmp(a + 24, &f->ip, 4))
		return drop(rx, GN_DDROP_ARP);
	else
		rx->kind = op == ARP_REQUEST ? GN_DRX_ARP_REQUEST :
					       GN_DRX_ARP_REPLY;
	return rx->kind;
}

static bool udp_csum_ok(const u8 *ip, const u8 *udp, u16 ulen)
{
	u64 ph = gn_dpdk_csum_words32(ip + 12, 2) +
		 gn_dpdk_csum_be16(PROTO_UDP) + gn_dpdk_csum_be16(ulen);

	return gn_dpdk_csum(gn_dpdk_csum_fold(ph), udp, ulen) == 0xffff;
}

static int udp_in(const struct gn_dpdk_filter *f, const u8 *ip, u32 ihl,
		  u32 tot, unsigned int l4_csum, struct gn_dpdk_rx *rx)
{
	const u8 *udp = ip + ihl;
	u32 ulen = be16(udp + 4);

	if (ulen < UDP_HDR || ulen > tot - ihl || ulen - UDP_HDR > f->max_pkt)
		return drop(rx, GN_DDROP_UDP_LEN);
	if (memcmp(udp + 2, &f->udp_port, 2))
		return drop(rx, GN_DDROP_DST_PORT);
	/*
	 * A zero checksum is IPv4's "none". The seal's tag would catch a
	 * corrupted payload too, but not in an insecure job, so software
	 * checks what the port did not.
	 */
	if ((udp[6] | udp[7]) &&
	    (l4_csum == GN_DCS_BAD ||
	     (l4_csum != GN_DCS_GOOD && !udp_csum_ok(ip, udp, (u16)ulen))))
		return drop(rx, GN_DDROP_UDP_CSUM);
	memcpy(&rx->src_ip, ip + 12, 4);
	memcpy(&rx->src_port, udp, 2);
	rx->off = (u32)(udp - ip) + GN_DPDK_ETH_LEN + UDP_HDR;
	rx->len = (u16)(ulen - UDP_HDR);
	rx->kind = GN_DRX_UDP;
	return GN_DRX_UDP;
}

static int ipv4_in(const struct gn_dpdk_filter *f, const u8 *ip, u32 len,
		   unsigned int ip_csum, unsigned int l4_csum,
		   struct gn_dpdk_rx *rx)
{
	u32 ihl, tot;

	if (len < IPV4_HDR + UDP_HDR)
		return drop(rx, GN_DDROP_SHORT);
	ihl = (u32)(ip[0] & 0xf) * 4;
	tot = be16(ip + 2);
	if ((ip[0] >> 4) != 4 || ihl < IPV4_HDR || tot < ihl + UDP_HDR ||
	    tot > len)
		return drop(rx, GN_DDROP_IP_HDR);
	/* MF set or an offset: a fragment. */
	if (be16(ip + 6) & 0x3fff)
		return drop(rx, GN_DDROP_FRAGMENT);
	if (ip[9] != PROTO_UDP)
		return drop(rx, ip[9] == PROTO_ICMP ? GN_DDROP_ICMP :
						   GN_DDROP_NOT_UDP);
	if (memcmp(ip + 16, &f->ip, 4))
		return drop(rx, GN_DDROP_DST_IP);
	if (ip_csum == GN_DCS_BAD ||
	    (ip_csum != GN_DCS_GOOD &&
	     gn_dpdk_csum_fold(gn_dpdk_csum_words32(ip, ihl / 4)) != 0xffff))
		return drop(rx, GN_DDROP_IP_CSUM);
	return udp_in(f, ip, ihl, tot, l4_csum, rx);
}

int gn_dpdk_classify(const struct gn_dpdk_filter *f, const u8 *frame, u32 len,
		     unsigned int ip_csum, unsigned int l4_csum,
		     struct gn_dpdk_rx *rx)
{
	u16 type;

	memset(rx, 0, sizeof(*rx));
	if (len < GN_DPDK_ETH_LEN)
		return drop(rx, GN_DDROP_SHORT);
	type = be16(frame + 12);
	if (type == ETYPE_ARP)
		return arp_in(f, frame + GN_DPDK_ETH_LEN, len - GN_DPDK_ETH_LEN,
			      rx);
	if (type != ETYPE_IPV4)
		return drop(rx, GN_DDROP_ETHERTYPE);
	if (memcmp(frame, f->mac, 6))
		return drop(rx, GN_DDROP_DST_MAC);
	return ipv4_in(f, frame + GN_DPDK_ETH_LEN, len - GN_DPDK_ETH_LEN,
		       ip_csum, l4_csum, rx);
}
