/* SPDX-License-Identifier: MIT */
/*
 * trace.h - the module's tracepoints, system "gradnet": one per packet
 * event of the protocol core's accounting upcall, with the fields and the
 * order of libgradnet's USDT probes (lib/probes.c), so bpf/ reads both
 * into the same flow records. Every field is a u64: an event's record is
 * the 8-byte common header followed by its fields in this order, which
 * bpf/gradnet_stat.bpf.c relies on (and tracefs' format files show).
 *
 * gn_msg:    job rank peer tensor phase transport raw_bytes stream_bytes count
 * gn_tx:     job rank peer tensor phase transport wire_bytes again count
 * gn_tx_ctl: job rank peer transport wire_bytes count
 * gn_rx:     job rank peer tensor phase transport wire_bytes count
 * gn_drop:   job rank peer transport reason count
 * gn_step:   job rank tensor transport step ns
 *
 * peer is GN_STAT_RANK_NONE (bpf/gradnet_stat.h) for an unknown sender;
 * transport is GN_STAT_TRANSPORT_KMOD for the module's data path. An
 * event stands for count of them on one flow, coalesced by the core
 * within a poll; the bytes are their sums.
 */
#undef TRACE_SYSTEM
#define TRACE_SYSTEM gradnet

#if !defined(GN_KMOD_TRACE_H) || defined(TRACE_HEADER_MULTI_READ)
#define GN_KMOD_TRACE_H

#include <linux/tracepoint.h>

#define GN_TP_FIELD(n) __field(u64, n)
#define GN_TP_SET(n) __entry->n = n;

TRACE_EVENT(gn_msg,
	TP_PROTO(u64 job, u64 rank, u64 peer, u64 tensor, u64 phase,
		 u64 transport, u64 raw_bytes, u64 stream_bytes, u64 count),
	TP_ARGS(job, rank, peer, tensor, phase, transport, raw_bytes,
		stream_bytes, count),
	TP_STRUCT__entry(GN_TP_FIELD(job) GN_TP_FIELD(rank) GN_TP_FIELD(peer)
			 GN_TP_FIELD(tensor) GN_TP_FIELD(phase)
			 GN_TP_FIELD(transport) GN_TP_FIELD(raw_bytes)
			 GN_TP_FIELD(stream_bytes) GN_TP_FIELD(count)),
	TP_fast_assign(GN_TP_SET(job) GN_TP_SET(rank) GN_TP_SET(peer)
		       GN_TP_SET(tensor) GN_TP_SET(phase) GN_TP_SET(transport)
		       GN_TP_SET(raw_bytes) GN_TP_SET(stream_bytes)
		       GN_TP_SET(count)),
	TP_printk("job=%llu rank=%llu peer=%llu tensor=%llu phase=%llu transport=%llu raw=%llu stream=%llu count=%llu",
		  __entry->job, __entry->rank, __entry->peer, __entry->tensor,
		  __entry->phase, __entry->transport, __entry->raw_bytes,
		  __entry->stream_bytes, __entry->count)
);

TRACE_EVENT(gn_tx,
	TP_PROTO(u64 job, u64 rank, u64 peer, u64 tensor, u64 phase,
		 u64 transport, u64 wire_bytes, u64 again, u64 count),
	TP_ARGS(job, rank, peer, tensor, phase, transport, wire_bytes, again,
		count),
	TP_STRUCT__entry(GN_TP_FIELD(job) GN_TP_FIELD(rank) GN_TP_FIELD(peer)
			 GN_TP_FIELD(tensor) GN_TP_FIELD(phase)
			 GN_TP_FIELD(transport) GN_TP_FIELD(wire_bytes)
			 GN_TP_FIELD(again) GN_TP_FIELD(count)),
	TP_fast_assign(GN_TP_SET(job) GN_TP_SET(rank) GN_TP_SET(peer)
		       GN_TP_SET(tensor) GN_TP_SET(phase) GN_TP_SET(transport)
		       GN_TP_SET(wire_bytes) GN_TP_SET(again) GN_TP_SET(count)),
	TP_printk("job=%llu rank=%llu peer=%llu tensor=%llu phase=%llu transport=%llu wire=%llu again=%llu count=%llu",
		  __entry->job, __entry->rank, __entry->peer, __entry->tensor,
		  __entry->phase, __entry->transport, __entry->wire_bytes,
		  __entry->again, __entry->count)
);

TRACE_EVENT(gn_tx_ctl,
	TP_PROTO(u64 job, u64 rank, u64 peer, u64 transport, u64 wire_bytes,
		 u64 count),
	TP_ARGS(job, rank, peer, transport, wire_bytes, count),
	TP_STRUCT__entry(GN_TP_FIELD(job) GN_TP_FIELD(rank) GN_TP_FIELD(peer)
			 GN_TP_FIELD(transport) GN_TP_FIELD(wire_bytes)
			 GN_TP_FIELD(count)),
	TP_fast_assign(GN_TP_SET(job) GN_TP_SET(rank) GN_TP_SET(peer)
		       GN_TP_SET(transport) GN_TP_SET(wire_bytes)
		       GN_TP_SET(count)),
	TP_printk("job=%llu rank=%llu peer=%llu transport=%llu wire=%llu count=%llu",
		  __entry->job, __entry->rank, __entry->peer,
		  __entry->transport, __entry->wire_bytes, __entry->count)
);

TRACE_EVENT(gn_rx,
	TP_PROTO(u64 job, u64 rank, u64 peer, u64 tensor, u64 phase,
		 u64 transport, u64 wire_bytes, u64 count),
	TP_ARGS(job, rank, peer, tensor, phase, transport, wire_bytes, count),
	TP_STRUCT__entry(GN_TP_FIELD(job) GN_TP_FIELD(rank) GN_TP_FIELD(peer)
			 GN_TP_FIELD(tensor) GN_TP_FIELD(phase)
			 GN_TP_FIELD(transport) GN_TP_FIELD(wire_bytes)
			 GN_TP_FIELD(count)),
	TP_fast_assign(GN_TP_SET(job) GN_TP_SET(rank) GN_TP_SET(peer)
		       GN_TP_SET(tensor) GN_TP_SET(phase) GN_TP_SET(transport)
		       GN_TP_SET(wire_bytes) GN_TP_SET(count)),
	TP_printk("job=%llu rank=%llu peer=%llu tensor=%llu phase=%llu transport=%llu wire=%llu count=%llu",
		  __entry->job, __entry->rank, __entry->peer, __entry->tensor,
		  __entry->phase, __entry->transport, __entry->wire_bytes,
		  __entry->count)
);

TRACE_EVENT(gn_drop,
	TP_PROTO(u64 job, u64 rank, u64 peer, u64 transport, u64 reason,
		 u64 count),
	TP_ARGS(job, rank, peer, transport, reason, count),
	TP_STRUCT__entry(GN_TP_FIELD(job) GN_TP_FIELD(rank) GN_TP_FIELD(peer)
			 GN_TP_FIELD(transport) GN_TP_FIELD(reason)
			 GN_TP_FIELD(count)),
	TP_fast_assign(GN_TP_SET(job) GN_TP_SET(rank) GN_TP_SET(peer)
		       GN_TP_SET(transport) GN_TP_SET(reason) GN_TP_SET(count)),
	TP_printk("job=%llu rank=%llu peer=%llu transport=%llu reason=%llu count=%llu",
		  __entry->job, __entry->rank, __entry->peer,
		  __entry->transport, __entry->reason, __entry->count)
);

TRACE_EVENT(gn_step,
	TP_PROTO(u64 job, u64 rank, u64 tensor, u64 transport, u64 step,
		 u64 ns),
	TP_ARGS(job, rank, tensor, transport, step, ns),
	TP_STRUCT__entry(GN_TP_FIELD(job) GN_TP_FIELD(rank) GN_TP_FIELD(tensor)
			 GN_TP_FIELD(transport) GN_TP_FIELD(step)
			 GN_TP_FIELD(ns)),
	TP_fast_assign(GN_TP_SET(job) GN_TP_SET(rank) GN_TP_SET(tensor)
		       GN_TP_SET(transport) GN_TP_SET(step) GN_TP_SET(ns)),
	TP_printk("job=%llu rank=%llu tensor=%llu transport=%llu step=%llu ns=%llu",
		  __entry->job, __entry->rank, __entry->tensor,
		  __entry->transport, __entry->step, __entry->ns)
);

#endif /* GN_KMOD_TRACE_H */

#undef TRACE_INCLUDE_PATH
#define TRACE_INCLUDE_PATH .
#undef TRACE_INCLUDE_FILE
#define TRACE_INCLUDE_FILE trace
#include <trace/define_trace.h>
