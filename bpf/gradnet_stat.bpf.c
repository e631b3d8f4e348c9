// SPDX-License-Identifier: MIT
/*
 * gradnet_stat.bpf.c - per-flow statistics of gradnet jobs.
 *
 * Uprobes on libgradnet's USDT probes (lib/probes.c) and raw tracepoint
 * programs on the kernel module's tracepoints (kmod/trace.h), which carry
 * the same arguments, fold what the library or the module counted into
 * gn_flows, and step ends into gn_step_hist, through the same count_*()
 * functions; a tc program on clsact ingress and egress parses Ethernet,
 * IPv4 or IPv6, UDP and the gradnet common header and counts what really
 * crossed an interface into gn_wire. The three maps are pinned by name under /sys/fs/bpf/gradnet,
 * so every load by gradnet-stat (one per attach) shares them.
 *
 * The probes' arguments are registers (the library is built with
 * STAP_SDT_ARG_CONSTRAINT=nr); gradnet-stat reads the note of each probe
 * and passes, as the uprobe's BPF cookie, which pt_regs slot holds each
 * argument: 5 bits per argument, argument i at bits [5i, 5i + 5).
 */
#include <stdbool.h>
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/in.h>
#include <linux/ip.h>
#include <linux/ipv6.h>
#include <linux/pkt_cls.h>
#include <linux/ptrace.h>
#include <linux/udp.h>
#include <bpf/bpf_endian.h>
#include <bpf/bpf_helpers.h>

#include "gradnet_stat.h"

#define GN_STAT_MAX_FLOWS	16384
#define GN_STAT_MAX_HISTS	1024
/* Largest UDP GSO send: the kernel's UDP_MAX_SEGMENTS. */
#define GN_STAT_MAX_SEGS	128

/*
 * The gradnet common header's fields (include/gradnet/wire.h), version 4.
 * It travels in the clear as associated data: this program reads it but
 * cannot check its tag (it has no key), so it counts headers that look
 * right, forged ones too.
 */
#define GN_MAGIC_LO		0x47
#define GN_MAGIC_HI		0x4e
#define GN_PKT_DATA		2
#define GN_PKT_WHOLE		8
#define GN_HDR_LEN		32

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_HASH);
	__uint(max_entries, GN_STAT_MAX_FLOWS);
	__type(key, struct gn_stat_key);
	__type(value, struct gn_stat_flow);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} gn_flows SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_HASH);
	__uint(max_entries, GN_STAT_MAX_FLOWS);
	__type(key, struct gn_stat_wire_key);
	__type(value, struct gn_stat_wire);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} gn_wire SEC(".maps");

/* Step ends are rare: one shared value, atomic adds, one line in bpftool. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, GN_STAT_MAX_HISTS);
	__type(key, struct gn_stat_hist_key);
	__type(value, struct gn_stat_hist);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} gn_step_hist SEC(".maps");

/*
 * Written by gradnet-stat only: the interfaces whose clsact qdisc it
 * created. A map, not a file, because bpffs holds no regular files.
 */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1024);
	__type(key, struct gn_stat_qdisc_key);
	__type(value, __u64);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} gn_tc_qdisc SEC(".maps");

/* Set by gradnet-stat before load: the cookie of the attached device's netns. */
const volatile __u64 gn_netns_cookie = 0;

static const struct gn_stat_flow zero_flow;
static const struct gn_stat_wire zero_wire;
static const struct gn_stat_hist zero_hist;

static __always_inline void *lookup_or_init(void *map, const void *key,
					    const void *zero)
{
	void *v = bpf_map_lookup_elem(map, key);

	if (v)
		return v;
	/* Another CPU may have added it meanwhile: then NOEXIST fails, fine. */
	bpf_map_update_elem(map, key, zero, BPF_NOEXIST);
	return bpf_map_lookup_elem(map, key);
}

/* ---- packet events: USDT probes and the module's tracepoints -------------- */

/*
 * An event's arguments, in the order both sources give them (the probes
 * of lib/probes.c and the tracepoints of kmod/trace.h):
 *   msg:    job rank peer tensor phase transport raw_bytes stream_bytes count
 *   tx:     job rank peer tensor phase transport wire_bytes again count
 *   tx_ctl: job rank peer transport wire_bytes count
 *   rx:     job rank peer tensor phase transport wire_bytes count
 *   drop:   job rank peer transport reason count
 *   step:   job rank tensor transport step ns
 * count is how many events of the flow the hit stands for (the core
 * coalesces them within a poll), the bytes are their sums; a step is one.
 * The handlers below fetch them (from registers or from the tracepoint's
 * arguments) and the count_*() functions fold them into the maps.
 */
#define GN_EV_ARGS		9

struct gn_ev {
	__u64 a[GN_EV_ARGS];
};

/*
 * The flow of an event from this rank (args job, rank, peer, ...): sent
 * (@rx false) from rank to peer, or received from peer by rank.
 */
static __always_inline struct gn_stat_flow *
flow_of(const struct gn_ev *e, __u64 tensor, __u64 phase, __u64 transport,
	bool rx)
{
	struct gn_stat_key k = {
		.job = e->a[0],
		.src = rx ? e->a[2] : e->a[1],
		.dst = rx ? e->a[1] : e->a[2],
		.tensor = tensor,
		.phase = phase,
		.transport = transport,
	};

	return lookup_or_init(&gn_flows, &k, &zero_flow);
}

static __always_inline int count_msg(const struct gn_ev *e)
{
	struct gn_stat_flow *f = flow_of(e, e->a[3], e->a[4], e->a[5], false);

	if (f) {
		f->messages += e->a[8];
		f->raw_bytes += e->a[6];
		f->stream_bytes += e->a[7];
	}
	return 0;
}

static __always_inline int count_tx(const struct gn_ev *e)
{
	struct gn_stat_flow *f = flow_of(e, e->a[3], e->a[4], e->a[5], false);

	if (f) {
		f->tx_packets += e->a[8];
		f->tx_wire_bytes += e->a[6];
		f->retransmits += e->a[7] ? e->a[8] : 0;
	}
	return 0;
}

static __always_inline int count_tx_ctl(const struct gn_ev *e)
{
	struct gn_stat_flow *f = flow_of(e, 0, GN_STAT_PHASE_CTL, e->a[3],
					 false);

	if (f) {
		f->ctl_packets += e->a[5];
		f->ctl_bytes += e->a[4];
	}
	return 0;
}

static __always_inline int count_rx(const struct gn_ev *e)
{
	struct gn_stat_flow *f = flow_of(e, e->a[3], e->a[4], e->a[5], true);

	if (f) {
		f->rx_packets += e->a[7];
		f->rx_wire_bytes += e->a[6];
	}
	return 0;
}

static __always_inline int count_drop(const struct gn_ev *e)
{
	struct gn_stat_flow *f = flow_of(e, 0, GN_STAT_PHASE_NONE, e->a[3],
					 true);
	__u64 reason = e->a[4];

	if (f && reason < GN_STAT_DROPS)
		f->drops[reason] += e->a[5];
	return 0;
}

/* Bucket k holds [2^k, 2^(k+1)) microseconds; bucket 0 also under 1 us. */
static __always_inline __u32 log2_bucket(__u64 us)
{
	__u32 k = 0;
	int i;

	for (i = 0; i < GN_STAT_HIST_BUCKETS - 1; i++) {
		if (us < 2)
			break;
		us >>= 1;
		k++;
	}
	return k;
}

/* A step end: the rank's flow to every rank (peer slot: GN_STAT_RANK_ALL). */
static __always_inline int count_step(const struct gn_ev *e)
{
	struct gn_ev who = { .a = { e->a[0], e->a[1], GN_STAT_RANK_ALL } };
	struct gn_stat_hist_key hk = {
		.job = e->a[0], .rank = e->a[1], .tensor = e->a[2],
		.transport = e->a[3],
	};
	struct gn_stat_flow *f;
	struct gn_stat_hist *h;
	__u64 ns = e->a[5];
	__u32 b;

	f = flow_of(&who, e->a[2], GN_STAT_PHASE_NONE, e->a[3], false);
	if (f) {
		f->steps++;
		f->last_step = e->a[4];
		f->step_ns += ns;
	}
	h = lookup_or_init(&gn_step_hist, &hk, &zero_hist);
	b = log2_bucket(ns / 1000);
	if (h && b < GN_STAT_HIST_BUCKETS)
		__sync_fetch_and_add(&h->count[b], 1);
	return 0;
}

/* Registers an argument may be in: the first of uapi x86-64 pt_regs. */
#define GN_USDT_REGS		15
/* A cookie's slot for an argument that is the constant 1. */
#define GN_USDT_ONE		30

/*
 * USDT: argument i is in the pt_regs slot that bits [5i, 5i + 5) of the
 * BPF cookie name (gradnet-stat reads them from the probe's note; 31:
 * none, 0; 30: the constant 1, the count of a library without one). The registers are copied once with direct context reads at
 * constant offsets, the only kind the verifier takes, and picked from the
 * copy: far cheaper than a bpf_probe_read_kernel() call per argument.
 */
static __always_inline void usdt_fetch(struct pt_regs *ctx, struct gn_ev *e,
				       int n)
{
	__u64 cookie = bpf_get_attach_cookie(ctx), slot;
	__u64 r[GN_USDT_REGS] = {
		ctx->r15, ctx->r14, ctx->r13, ctx->r12, ctx->rbp,
		ctx->rbx, ctx->r11, ctx->r10, ctx->r9, ctx->r8,
		ctx->rax, ctx->rcx, ctx->rdx, ctx->rsi, ctx->rdi,
	};
	int i;

#pragma unroll
	for (i = 0; i < GN_EV_ARGS; i++) {
		slot = (cookie >> (5 * i)) & 31;
		e->a[i] = i < n && slot < GN_USDT_REGS ? r[slot] :
			  i < n && slot == GN_USDT_ONE ? 1 : 0;
	}
}

/*
 * The module's tracepoints, as raw tracepoints: their arguments are the
 * events' u64 fields, in order. Only the first @n are read, since the
 * kernel refuses a program that reads past a tracepoint's arguments.
 */
static __always_inline void tp_fetch(struct bpf_raw_tracepoint_args *ctx,
				     struct gn_ev *e, int n)
{
	int i;

#pragma unroll
	for (i = 0; i < GN_EV_ARGS; i++)
		e->a[i] = i < n ? ctx->args[i] : 0;
}

/*
 * Two programs per event, @nargs arguments: gn_usdt_<ev> for the uprobe
 * on the probe gradnet:<ev>, gn_kmod_<ev> for the module's tracepoint
 * gradnet:gn_<ev>; gradnet-stat loads one set or the other.
 */
#define GN_EV_HANDLERS(ev, nargs)					\
SEC("uprobe")								\
int gn_usdt_##ev(struct pt_regs *ctx)					\
{									\
	struct gn_ev e;							\
									\
	usdt_fetch(ctx, &e, nargs);					\
	return count_##ev(&e);						\
}									\
									\
SEC("raw_tp/gn_" #ev)							\
int gn_kmod_##ev(struct bpf_raw_tracepoint_args *ctx)			\
{									\
	struct gn_ev e;							\
									\
	tp_fetch(ctx, &e, nargs);					\
	return count_##ev(&e);						\
}

GN_EV_HANDLERS(msg, 9)
GN_EV_HANDLERS(tx, 9)
GN_EV_HANDLERS(tx_ctl, 6)
GN_EV_HANDLERS(rx, 8)
GN_EV_HANDLERS(drop, 6)
GN_EV_HANDLERS(step, 6)

/* ---- tc: what crossed the wire ------------------------------------------ */

/*
 * Offset of the UDP payload, or -1 if @skb is not the head of an IPv4 or
 * IPv6 UDP datagram: IPv4 fragments and IPv6 extension headers are left
 * alone (gradnet sends neither: its datagrams fit the path MTU).
 */
static __always_inline int udp_payload(struct __sk_buff *skb)
{
	struct ipv6hdr ip6;
	struct iphdr ip;
	__be16 proto;

	if (bpf_skb_load_bytes(skb, offsetof(struct ethhdr, h_proto),
			       &proto, sizeof(proto)))
		return -1;
	if (proto == bpf_htons(ETH_P_IPV6)) {
		if (bpf_skb_load_bytes(skb, ETH_HLEN, &ip6, sizeof(ip6)) ||
		    ip6.nexthdr != IPPROTO_UDP)
			return -1;
		return ETH_HLEN + sizeof(ip6) + sizeof(struct udphdr);
	}
	if (proto != bpf_htons(ETH_P_IP) ||
	    bpf_skb_load_bytes(skb, ETH_HLEN, &ip, sizeof(ip)))
		return -1;
	if (ip.protocol != IPPROTO_UDP || ip.ihl < 5 ||
	    (ip.frag_off & bpf_htons(0x1fff | 0x2000)))
		return -1;
	return ETH_HLEN + ip.ihl * 4 + sizeof(struct udphdr);
}

/* Count the gradnet datagram of @len bytes at @off; false if it is none. */
static __always_inline bool count_datagram(struct __sk_buff *skb, __u32 off,
					   __u32 len, __u64 egress, bool first)
{
	struct gn_stat_wire_key k = {
		.ifindex = skb->ifindex,
		.netns = gn_netns_cookie,
		.egress = egress,
	};
	struct gn_stat_wire *w;
	__u8 h[GN_HDR_LEN];

	if (len < GN_HDR_LEN || bpf_skb_load_bytes(skb, off, h, sizeof(h)))
		return false;
	if (h[0] != GN_MAGIC_LO || h[1] != GN_MAGIC_HI)
		return false;
	k.src = h[4] | (__u64)h[5] << 8;
	k.dst = h[6] | (__u64)h[7] << 8;
	k.job = h[8] | (__u64)h[9] << 8 | (__u64)h[10] << 16 |
		(__u64)h[11] << 24;
	if (h[3] == GN_PKT_DATA || h[3] == GN_PKT_WHOLE) {
		k.tensor = h[12] | (__u64)h[13] << 8 | (__u64)h[14] << 16 |
			   (__u64)h[15] << 24;
		k.phase = h[22];
	} else {
		k.phase = GN_STAT_PHASE_CTL;
	}
	w = lookup_or_init(&gn_wire, &k, &zero_wire);
	if (!w)
		return true;
	w->packets++;
	w->bytes += len;
	w->skbs += first;
	return true;
}

/*
 * A UDP GSO skb (the library sends up to 64 datagrams in one) carries
 * its datagrams back to back, each gso_size bytes but the last: each has
 * its own gradnet header, and may be of another tensor than the first.
 */
static __always_inline int count_skb(struct __sk_buff *skb, __u64 egress)
{
	int off = udp_payload(skb);
	__u32 total, seg, at, i;

	if (off < 0 || skb->len <= (__u32)off)
		return TC_ACT_UNSPEC;
	total = skb->len - off;
	seg = skb->gso_size && skb->gso_size < total ? skb->gso_size : total;
	for (i = 0, at = 0; i < GN_STAT_MAX_SEGS && at < total; i++) {
		__u32 len = total - at < seg ? total - at : seg;

		if (!count_datagram(skb, off + at, len, egress, i == 0))
			break;
		at += seg;
	}
	/* Let the filters after this one (a loss injector) see the packet. */
	return TC_ACT_UNSPEC;
}

SEC("tc")
int gn_tc_ingress(struct __sk_buff *skb)
{
	return count_skb(skb, 0);
}

SEC("tc")
int gn_tc_egress(struct __sk_buff *skb)
{
	return count_skb(skb, 1);
}

char LICENSE[] SEC("license") = "Dual MIT/GPL";
