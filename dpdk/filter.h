/* SPDX-License-Identifier: MIT */
/*
 * filter.h - the DPDK path's receive filter on the raw bytes of one frame:
 * a UDP datagram for this rank, an ARP message, or a drop and its reason.
 * No DPDK type and no EAL: rx.c calls it on each mbuf's data, the
 * fuzzer (tests/fuzz/fuzz_frame.c) on arbitrary bytes.
 *
 * Contract: gn_dpdk_classify() reads only frame[0, len), whatever the
 * bytes say, and a GN_DRX_UDP verdict's payload lies inside them.
 */
#ifndef GN_DPDK_FILTER_H
#define GN_DPDK_FILTER_H

#include "gn_deps.h"

#define GN_DPDK_ETH_LEN 14
#define GN_DPDK_ARP_LEN 28

enum gn_dpdk_rx_kind {
	GN_DRX_UDP,			/* a datagram to our address and port */
	GN_DRX_ARP_REQUEST,		/* who has our address: answer it */
	GN_DRX_ARP_REPLY,		/* a sender's address, to us */
	GN_DRX_ARP_ANNOUNCE,		/* gratuitous: a sender's address, to all
					   (its own IP as the target) */
	GN_DRX_DROP,			/* not ours, or malformed: see drop */
};

/* Why a frame was dropped; the transport counts each. */
enum gn_dpdk_drop {
	GN_DDROP_SHORT,			/* shorter than the headers it claims */
	GN_DDROP_SEGMENTED,		/* in several mbufs (rx.c only) */
	GN_DDROP_ETHERTYPE,		/* neither IPv4 nor ARP */
	GN_DDROP_DST_MAC,		/* IPv4 to another station */
	GN_DDROP_IP_HDR,		/* IPv4 version or lengths wrong */
	GN_DDROP_FRAGMENT,		/* an IPv4 fragment */
	GN_DDROP_NOT_UDP,		/* another IP protocol */
	GN_DDROP_ICMP,			/* ICMP: a kernel peer's port unreachable,
					   say, when its rank has left */
	GN_DDROP_DST_IP,		/* to another IPv4 address */
	GN_DDROP_IP_CSUM,		/* IPv4 header checksum wrong */
	GN_DDROP_UDP_LEN,		/* UDP length wrong or over max_pkt */
	GN_DDROP_DST_PORT,		/* to another UDP port */
	GN_DDROP_UDP_CSUM,		/* UDP checksum wrong */
	GN_DDROP_ARP,			/* ARP malformed or not for us */
	GN_DDROP_N
};

/* What the port says it verified of a checksum. */
enum gn_dpdk_csum {
	GN_DCS_UNKNOWN,			/* not checked: software does */
	GN_DCS_GOOD,
	GN_DCS_BAD,
};

/* Who this rank is on the wire. */
struct gn_dpdk_filter {
	u8 mac[6];
	u32 ip;				/* network byte order */
	u16 udp_port;			/* network byte order */
	u32 max_pkt;			/* largest UDP payload taken */
};

/* A verdict, with what the transport needs of the frame. */
struct gn_dpdk_rx {
	u8 kind;			/* GN_DRX_* */
	u8 drop;			/* GN_DDROP_*, when kind is GN_DRX_DROP */
	u16 len;			/* UDP payload bytes */
	u32 off;			/* UDP payload's offset in the frame */
	u32 src_ip;			/* IPv4 source or ARP sender, network order */
	u16 src_port;			/* UDP source, network order */
	u8 src_mac[6];			/* ARP sender's hardware address */
};

/**
 * gn_dpdk_classify() - what one received frame is to this rank
 * @f: this rank's addresses
 * @frame: the frame from its Ethernet header, @len bytes (no FCS)
 * @ip_csum: GN_DCS_* the port reports for the IPv4 header checksum
 * @l4_csum: GN_DCS_* the port reports for the UDP checksum
 * @rx: the verdict
 *
 * Checks, in order: Ethernet type; for IPv4, destination MAC, version and
 * lengths against @len, fragments, protocol, destination address, header
 * checksum, UDP length against the IP length and @f->max_pkt, destination
 * port, UDP checksum (unless zero, IPv4's "none"); for ARP, an Ethernet
 * and IPv4 request or reply whose target is our address.
 *
 * Return: @rx->kind.
 */
int gn_dpdk_classify(const struct gn_dpdk_filter *f, const u8 *frame, u32 len,
		     unsigned int ip_csum, unsigned int l4_csum,
		     struct gn_dpdk_rx *rx);

/**
 * gn_dpdk_drop_name() - a drop reason's name, for counters and logs
 * @why: GN_DDROP_*
 *
 * Return: a short lowercase name, "?" for an unknown reason.
 */
const char *gn_dpdk_drop_name(unsigned int why);

#endif /* GN_DPDK_FILTER_H */
