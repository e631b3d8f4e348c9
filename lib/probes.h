/* SPDX-License-Identifier: MIT */
/*
 * probes.h - libgradnet's USDT probes (provider "gradnet"), hung on the
 * core's accounting upcall: gn_core_conf.account = gn_probe_account with
 * a struct gn_probe_flow as its argument. Userspace only.
 */
#ifndef GN_PROBES_H
#define GN_PROBES_H

#include "delivery.h"

/* What the probes add to an event to name its flow. */
struct gn_probe_flow {
	u64 job;
	u64 rank;
	u64 transport;		/* GN_STAT_TRANSPORT_* (bpf/gradnet_stat.h) */
};

void gn_probe_account(void *arg, const struct gn_event *ev)
	__attribute__((visibility("hidden")));

#endif /* GN_PROBES_H */
