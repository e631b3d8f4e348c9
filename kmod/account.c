// SPDX-License-Identifier: MIT
/*
 * account.c - the core's accounting upcall as tracepoints, with the
 * arguments libgradnet's USDT probes give (lib/probes.c), so the eBPF
 * statistics read the three data paths alike: an event coalesced by the
 * core (gn_dl_account()) is one hit with the count it stands for.
 */
#include "account.h"
#include "delivery.h"
#include "../bpf/gradnet_stat.h"

#define CREATE_TRACE_POINTS
#include "trace.h"

void gn_kmod_account(void *arg, const struct gn_event *ev)
{
	const struct gn_kmod_flow *f = arg;
	u64 peer = ev->peer >= 0 ? (u64)ev->peer : GN_STAT_RANK_NONE;
	u64 tensor = ev->tensor, phase = ev->phase, wire = ev->wire_bytes;
	u64 n = ev->count;

	switch (ev->type) {
	case GN_EV_MSG:
		trace_gn_msg(f->job, f->rank, peer, tensor, phase, f->transport,
			     ev->raw_bytes, ev->stream_bytes, n);
		break;
	case GN_EV_TX:
		trace_gn_tx(f->job, f->rank, peer, tensor, phase, f->transport,
			    wire, ev->again, n);
		break;
	case GN_EV_TX_CTL:
		trace_gn_tx_ctl(f->job, f->rank, peer, f->transport, wire, n);
		break;
	case GN_EV_RX:
		trace_gn_rx(f->job, f->rank, peer, tensor, phase, f->transport,
			    wire, n);
		break;
	case GN_EV_DROP:
		trace_gn_drop(f->job, f->rank, peer, f->transport, ev->reason,
			      n);
		break;
	case GN_EV_STEP:
		trace_gn_step(f->job, f->rank, tensor, f->transport, ev->step,
			      ev->ns);
		break;
	}
}
