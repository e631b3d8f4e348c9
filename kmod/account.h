/* SPDX-License-Identifier: MIT */
/*
 * account.h - the module's accounting hook: a core context's conf.account
 * with a struct gn_kmod_flow as its argument fires the gradnet
 * tracepoints (trace.h) for every packet event the core counts.
 */
#ifndef GN_KMOD_ACCOUNT_H
#define GN_KMOD_ACCOUNT_H

#include "gn_deps.h"

struct gn_event;

/* What every event of one context carries besides the event's own fields. */
struct gn_kmod_flow {
	u64 job, rank, transport;	/* transport: GN_STAT_TRANSPORT_* */
};

void gn_kmod_account(void *flow, const struct gn_event *ev);

#endif /* GN_KMOD_ACCOUNT_H */
