/* SPDX-License-Identifier: MIT */
/*
 * loss.h - layout shared by the tc loss injector (loss.bpf.c) and its
 * loader (gn-loss.c): the configuration and counter map values.
 * __u64 fields only, so both sides and bpftool agree without padding.
 */
#ifndef GN_NET_LOSS_H
#define GN_NET_LOSS_H

#include <linux/types.h>

#define GN_LOSS_PPM_MAX		1000000ULL

/* The loader created the clsact qdisc, so the last detach removes it. */
#define GN_LOSS_F_OWN_HOOK	(1ULL << 0)

/*
 * Value of the single entry of map gn_loss_conf.
 * With spread == 0 every matching packet is dropped with probability
 * ppm / 10^6, independently. With spread == W the matching packets are
 * numbered in arrival order and cut into runs of W; exactly one packet of
 * each run is dropped, at a place drawn from seed and the run's number.
 * That is the same rate for ppm = 10^6 / W, and a flow of n packets loses
 * at least floor(n / W) of them: tests that must see loss can count on it.
 */
struct gn_loss_cfg {
	__u64 ppm;		/* drop probability, parts per million */
	__u64 port_lo;		/* UDP ports matched: [port_lo, port_hi], */
	__u64 port_hi;		/* source or destination */
	__u64 flags;		/* GN_LOSS_F_* */
	__u64 spread;		/* 0, or one drop per run of this many */
	__u64 seed;		/* places the drops when spread != 0 */
};

/*
 * Value of the single entry of per-CPU map gn_loss_count; sum the CPUs.
 * A UDP GSO skb is one packet but gso_segs datagrams, and is dropped whole.
 */
struct gn_loss_stats {
	__u64 seen;		/* matching packets (skbs) */
	__u64 dropped;		/* of which dropped */
	__u64 seen_bytes;	/* skb->len of the matching packets */
	__u64 dropped_bytes;
	__u64 seen_segs;	/* datagrams: gso_segs, or 1 */
	__u64 dropped_segs;
};

_Static_assert(sizeof(struct gn_loss_cfg) == 48, "gn_loss_cfg layout");
_Static_assert(sizeof(struct gn_loss_stats) == 48, "gn_loss_stats layout");

#endif /* GN_NET_LOSS_H */
