/* SPDX-License-Identifier: MIT */
/*
 * gradnet_stat.h - the record layout shared by libgradnet's USDT probes
 * (lib/probes.c), the BPF programs (gradnet_stat.bpf.c) and gradnet-stat:
 * flow keys, per-flow counters, the wire counters of the tc program and
 * the step-latency histogram. __u64 fields only, so the BPF side, the
 * userspace side and bpftool's BTF dump agree without padding.
 */
#ifndef GRADNET_STAT_H
#define GRADNET_STAT_H

#include <linux/types.h>

/* Where the maps are pinned, and the names under it. */
#define GN_STAT_PIN_DIR		"/sys/fs/bpf/gradnet"

/* Drop reasons counted: enum gn_drop of gradnet.h, GN_DROP_COUNT of them. */
#define GN_STAT_DROPS		9

/* Transports, as the probes' transport argument carries them. */
#define GN_STAT_TRANSPORT_UDP	1
#define GN_STAT_TRANSPORT_DPDK	2
#define GN_STAT_TRANSPORT_KMOD	3

/* Ranks: a packet to every rank, or from a sender that is no peer. */
#define GN_STAT_RANK_ALL	0xffff
#define GN_STAT_RANK_NONE	0xfffe

/*
 * Phases of a flow besides the wire's GN_PHASE_REDUCE and GN_PHASE_GATHER:
 * control packets (acks, handshake, probes, control messages) are one flow
 * per peer pair, and events that name no phase (drops, step ends) another.
 */
#define GN_STAT_PHASE_CTL	0xff
#define GN_STAT_PHASE_NONE	0xfe

/*
 * struct gn_stat_key - a flow: who sends what to whom.
 * Drops are counted on the receiver's flow from the sender (src is
 * GN_STAT_RANK_NONE when the sender is unknown) with tensor 0 and
 * GN_STAT_PHASE_NONE, since a dropped packet's header is not trusted.
 */
struct gn_stat_key {
	__u64 job;
	__u64 src;		/* source rank */
	__u64 dst;		/* destination rank, or GN_STAT_RANK_ALL */
	__u64 tensor;
	__u64 phase;		/* GN_PHASE_*, GN_STAT_PHASE_* */
	__u64 transport;	/* GN_STAT_TRANSPORT_* */
};

/*
 * struct gn_stat_flow - what the library counted on a flow: the sender's
 * view (tx_*, messages, raw and stream bytes) and the receiver's (rx_*,
 * drops) side by side, so packets lost between them show as a difference.
 * A per-CPU map value: sum the CPUs.
 */
struct gn_stat_flow {
	__u64 tx_packets;	/* data packets sent, retransmissions included */
	__u64 tx_wire_bytes;	/* their UDP payload bytes */
	__u64 retransmits;	/* of which sent again */
	__u64 messages;		/* chunk messages started */
	__u64 raw_bytes;	/* float32 bytes those messages stand for */
	__u64 stream_bytes;	/* their chunk-stream bytes */
	__u64 ctl_packets;	/* control packets sent */
	__u64 ctl_bytes;
	__u64 rx_packets;	/* data packets taken */
	__u64 rx_wire_bytes;
	__u64 drops[GN_STAT_DROPS];	/* by enum gn_drop */
	__u64 steps;		/* allreduces finished */
	__u64 last_step;
	__u64 step_ns;		/* their durations, summed */
};

/*
 * struct gn_stat_wire_key - a flow as the tc program saw it on one
 * interface, in one direction, from the gradnet header alone.
 */
struct gn_stat_wire_key {
	__u64 job;
	__u64 src;
	__u64 dst;
	__u64 tensor;
	__u64 phase;		/* GN_STAT_PHASE_CTL for every non-DATA type */
	__u64 ifindex;
	__u64 netns;		/* the interface's network namespace cookie */
	__u64 egress;		/* 1: egress, 0: ingress */
};

/* Value of the per-CPU wire map: datagrams, a UDP GSO skb counts its segments. */
struct gn_stat_wire {
	__u64 packets;		/* gradnet datagrams */
	__u64 bytes;		/* their UDP payload bytes */
	__u64 skbs;		/* socket buffers they came in */
};

/* Step latency: bucket k counts steps of [2^k, 2^(k+1)) microseconds. */
#define GN_STAT_HIST_BUCKETS	32

struct gn_stat_hist_key {
	__u64 job;
	__u64 rank;
	__u64 tensor;
	__u64 transport;
};

struct gn_stat_hist {
	__u64 count[GN_STAT_HIST_BUCKETS];
};

/*
 * struct gn_stat_qdisc_key - an interface on which gradnet-stat created the
 * clsact qdisc (map gn_tc_qdisc, value 1), so that detach removes that
 * qdisc and leaves one that was there before alone.
 */
struct gn_stat_qdisc_key {
	__u64 netns;		/* the interface's network namespace cookie */
	__u64 ifindex;
};

#ifndef __bpf__
_Static_assert(sizeof(struct gn_stat_key) == 48, "gn_stat_key layout");
_Static_assert(sizeof(struct gn_stat_flow) == 8 * (13 + GN_STAT_DROPS),
	       "gn_stat_flow layout");
_Static_assert(sizeof(struct gn_stat_wire_key) == 64, "gn_stat_wire_key layout");
_Static_assert(sizeof(struct gn_stat_wire) == 24, "gn_stat_wire layout");
_Static_assert(sizeof(struct gn_stat_hist_key) == 32, "gn_stat_hist_key layout");
_Static_assert(sizeof(struct gn_stat_qdisc_key) == 16, "gn_stat_qdisc_key layout");
#endif

#endif /* GRADNET_STAT_H */
