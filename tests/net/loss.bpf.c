// SPDX-License-Identifier: MIT
/*
 * loss.bpf.c - tc (clsact) program that drops a configured fraction of the
 * UDP packets whose source or destination port lies in a configured range.
 * netem is not available on the test machines; this is how the netns tests
 * put loss on a veth. Configuration and counters live in maps that the
 * loader, gn-loss, finds through the attached program. Drops are either
 * independent draws or spread one per run of packets (loss.h).
 */
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/in.h>
#include <linux/ip.h>
#include <linux/ipv6.h>
#include <linux/pkt_cls.h>
#include <linux/udp.h>
#include <bpf/bpf_endian.h>
#include <bpf/bpf_helpers.h>

#include "loss.h"

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct gn_loss_cfg);
} gn_loss_conf SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct gn_loss_stats);
} gn_loss_count SEC(".maps");

/* Matching packets so far, all CPUs: numbers them for spread drops. */
__u64 gn_loss_seq = 0;

/*
 * A 64-bit mixing function (splitmix64's finalizer): seed and run number
 * in, a well-spread draw out.
 */
static __always_inline __u64 mix64(__u64 z)
{
	z += 0x9e3779b97f4a7c15ULL;
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

/*
 * Whether to drop this matching packet. Scaling a uniform 32-bit draw to
 * [0, m) by multiply and shift has no modulo bias worth the name.
 */
static __always_inline int drop_this(const struct gn_loss_cfg *cfg)
{
	__u64 n, w = cfg->spread;

	if (!w)
		return (((__u64)bpf_get_prandom_u32() * GN_LOSS_PPM_MAX) >> 32) <
		       cfg->ppm;
	/* Numbered across CPUs, so each run really has w packets. */
	n = __sync_fetch_and_add(&gn_loss_seq, 1);
	return n % w == ((mix64(cfg->seed ^ (n / w)) >> 32) * w) >> 32;
}

/* Offset of the UDP header, or -1 if skb is not an unfragmented UDP head. */
static __always_inline int udp_offset(struct __sk_buff *skb)
{
	struct ipv6hdr ip6;
	struct iphdr ip4;
	__be16 proto;

	if (bpf_skb_load_bytes(skb, offsetof(struct ethhdr, h_proto),
			       &proto, sizeof(proto)))
		return -1;
	if (proto == bpf_htons(ETH_P_IP)) {
		if (bpf_skb_load_bytes(skb, ETH_HLEN, &ip4, sizeof(ip4)))
			return -1;
		/* Later fragments carry no UDP header. */
		if (ip4.protocol != IPPROTO_UDP || ip4.ihl < 5 ||
		    (ip4.frag_off & bpf_htons(0x1fff)))
			return -1;
		return ETH_HLEN + ip4.ihl * 4;
	}
	if (proto == bpf_htons(ETH_P_IPV6)) {
		/* Extension headers are not followed: gradnet sends none. */
		if (bpf_skb_load_bytes(skb, ETH_HLEN, &ip6, sizeof(ip6)))
			return -1;
		if (ip6.nexthdr != IPPROTO_UDP)
			return -1;
		return ETH_HLEN + sizeof(ip6);
	}
	return -1;
}

SEC("tc")
int gn_loss(struct __sk_buff *skb)
{
	struct gn_loss_stats *st;
	struct gn_loss_cfg *cfg;
	struct udphdr uh;
	__u32 key = 0;
	__u64 segs;
	__u16 sport, dport;
	int off;

	cfg = bpf_map_lookup_elem(&gn_loss_conf, &key);
	st = bpf_map_lookup_elem(&gn_loss_count, &key);
	if (!cfg || !st)
		return TC_ACT_OK;

	off = udp_offset(skb);
	if (off < 0 || bpf_skb_load_bytes(skb, off, &uh, sizeof(uh)))
		return TC_ACT_OK;
	sport = bpf_ntohs(uh.source);
	dport = bpf_ntohs(uh.dest);
	if ((sport < cfg->port_lo || sport > cfg->port_hi) &&
	    (dport < cfg->port_lo || dport > cfg->port_hi))
		return TC_ACT_OK;

	segs = skb->gso_segs ? skb->gso_segs : 1;
	st->seen++;
	st->seen_bytes += skb->len;
	st->seen_segs += segs;
	if (!drop_this(cfg))
		return TC_ACT_OK;
	st->dropped++;
	st->dropped_bytes += skb->len;
	st->dropped_segs += segs;
	return TC_ACT_SHOT;
}

char LICENSE[] SEC("license") = "Dual MIT/GPL";
