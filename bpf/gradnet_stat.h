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

/*
 * Why the tc program refused a datagram that starts with gradnet's magic:
 * it counts only datagrams whose header holds together (gradnet_stat_hdr.h)
 * of a job it knows, on a port of the job's, and makes flow records for
 * no job past its share of gn_wire. What it refuses it counts in
 * gn_tc_refused, per interface, direction and reason.
 */
#define GN_STAT_REFUSE_HEADER	1	/* lengths, type or phase wrong */
#define GN_STAT_REFUSE_VERSION	2	/* another protocol version */
#define GN_STAT_REFUSE_JOB	3	/* a job not in gn_tc_jobs */
#define GN_STAT_REFUSE_PORT	4	/* a UDP port not the job's */
#define GN_STAT_REFUSE_FULL	5	/* the job's flows in gn_wire used up */
#define GN_STAT_REFUSES		6	/* reasons are 1 to GN_STAT_REFUSES - 1 */

/* Flow records in gn_wire one job may have: a quarter of the map. */
#define GN_STAT_WIRE_FLOWS	16384
#define GN_STAT_WIRE_PER_JOB	(GN_STAT_WIRE_FLOWS / 4)

/* Ports an attach --dev may list; with none, the tc program learns them. */
#define GN_STAT_MAX_PORTS	16

struct gn_stat_refused_key {
	__u64 ifindex;
	__u64 netns;		/* the interface's network namespace cookie */
	__u64 egress;		/* 1: egress, 0: ingress */
	__u64 reason;		/* GN_STAT_REFUSE_* */
};

/* Value of the per-CPU gn_tc_refused map. */
struct gn_stat_refused {
	__u64 packets;		/* datagrams, a UDP GSO skb counts its segments */
	__u64 bytes;		/* their UDP payload bytes */
};

/* How a job came into gn_tc_jobs: bits of struct gn_stat_job's from. */
#define GN_STAT_JOB_GIVEN	1	/* attach --dev --job */
#define GN_STAT_JOB_SEEN	2	/* a probe or tracepoint of it fired */

/* Value of gn_tc_jobs, keyed by the job id (__u64). */
struct gn_stat_job {
	__u64 from;		/* GN_STAT_JOB_* */
	__u64 flows;		/* records the job has made in gn_wire */
};

/*
 * struct gn_stat_port_key - a UDP port of gradnet ranks in a network
 * namespace (map gn_tc_ports): the source port of a datagram that this
 * host's ranks sent and the tc program counted on egress.
 */
struct gn_stat_port_key {
	__u64 netns;
	__u64 port;
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
_Static_assert(sizeof(struct gn_stat_refused_key) == 32, "gn_stat_refused_key layout");
_Static_assert(sizeof(struct gn_stat_refused) == 16, "gn_stat_refused layout");
_Static_assert(sizeof(struct gn_stat_job) == 16, "gn_stat_job layout");
_Static_assert(sizeof(struct gn_stat_port_key) == 16, "gn_stat_port_key layout");
#endif

#endif /* GRADNET_STAT_H */
