// SPDX-License-Identifier: MIT
/*
 * probes.c - the USDT probes of libgradnet, one per kind of packet event,
 * fired from the core's accounting upcall so every data path that links
 * the core fires them. The arguments name the flow (job, source and
 * destination rank, tensor, phase, transport) and carry the byte counts;
 * bpf/gradnet_stat.bpf.c folds them into per-flow maps.
 *
 *   gradnet:msg    job rank peer tensor phase transport raw_bytes stream_bytes count
 *   gradnet:tx     job rank peer tensor phase transport wire_bytes again count
 *   gradnet:tx_ctl job rank peer transport wire_bytes count
 *   gradnet:rx     job rank peer tensor phase transport wire_bytes count
 *   gradnet:drop   job rank peer transport reason count
 *   gradnet:step   job rank tensor transport step ns
 *
 * rank is this rank; peer the other end (GN_STAT_RANK_NONE for a packet
 * from no peer). The core coalesces the events of a flow within a poll
 * (gn_dl_account()): a hit stands for count packets (messages for msg,
 * drops for drop; all retransmissions if again), and the byte arguments
 * are their sums; a step is a hit of its own. Unattached, a probe is a
 * nop instruction: the cost is the upcall and loading its arguments
 * into registers.
 *
 * Built with -DSTAP_SDT_ARG_CONSTRAINT=nr: every argument is a register
 * or a constant, never a memory operand, which libbpf 1.1 cannot parse.
 */
#include <sys/sdt.h>

#include "probes.h"
#include "gradnet_stat.h"

_Static_assert(GN_STAT_DROPS == GN_DROP_COUNT,
	       "bpf/gradnet_stat.h counts every drop reason");

void gn_probe_account(void *arg, const struct gn_event *ev)
{
	const struct gn_probe_flow *f = arg;
	u64 peer = ev->peer >= 0 ? (u64)ev->peer : GN_STAT_RANK_NONE;
	u64 tensor = ev->tensor, phase = ev->phase, wire = ev->wire_bytes;
	u64 n = ev->count;

	switch (ev->type) {
	case GN_EV_MSG:
		DTRACE_PROBE9(gradnet, msg, f->job, f->rank, peer, tensor,
			      phase, f->transport, ev->raw_bytes,
			      ev->stream_bytes, n);
		break;
	case GN_EV_TX:
		DTRACE_PROBE9(gradnet, tx, f->job, f->rank, peer, tensor, phase,
			      f->transport, wire, (u64)ev->again, n);
		break;
	case GN_EV_TX_CTL:
		DTRACE_PROBE6(gradnet, tx_ctl, f->job, f->rank, peer,
			      f->transport, wire, n);
		break;
	case GN_EV_RX:
		DTRACE_PROBE8(gradnet, rx, f->job, f->rank, peer, tensor, phase,
			      f->transport, wire, n);
		break;
	case GN_EV_DROP:
		DTRACE_PROBE6(gradnet, drop, f->job, f->rank, peer,
			      f->transport, (u64)ev->reason, n);
		break;
	case GN_EV_STEP:
		DTRACE_PROBE6(gradnet, step, f->job, f->rank, tensor,
			      f->transport, (u64)ev->step, ev->ns);
		break;
	}
}
