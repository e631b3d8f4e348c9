/* SPDX-License-Identifier: MIT */
/*
 * gradnet_stat_hdr.h - THE ONE PLACE where gradnet-stat's tc program reads
 * gradnet's packet header (include/gradnet/wire.h is the spec): whether a
 * UDP payload is a gradnet datagram whose header holds together, and the
 * fields that name its flow. When the wire format changes, change this
 * file with it: tests/bpf/hdr_test.c holds it to lib/wire/hdr.c's
 * gn_wire_hdr_get() on every golden packet and on mutations of them, and
 * fails until the two agree again.
 *
 * Plain C on a byte array, so the BPF program and that test run the same
 * code; the constants are wire.h's own.
 */
#ifndef GRADNET_STAT_HDR_H
#define GRADNET_STAT_HDR_H

#include <linux/types.h>
#include <gradnet/wire.h>

#include "gradnet_stat.h"

#ifndef __always_inline
#define __always_inline inline __attribute__((always_inline))
#endif

/*
 * Bytes of the payload gn_stat_hdr_parse() reads: the common header; of a
 * shorter payload, the magic, version and type that every version keeps
 * (GN_STAT_HDR_ID), or the magic alone.
 */
#define GN_STAT_HDR_LOAD	GN_WIRE_HDR_LEN
#define GN_STAT_HDR_ID		4
#define GN_STAT_HDR_MAGIC	2

/* What gn_stat_hdr_parse() says of a payload that is no gradnet datagram. */
#define GN_STAT_NOT_GRADNET	(-1)

/* The header's fields that name a flow. */
struct gn_stat_hdr {
	__u64 job;
	__u64 src;
	__u64 dst;
	__u64 tensor;
	__u64 phase;		/* the header's, or GN_STAT_PHASE_CTL */
};

/* Bytes of a packet type's fixed part after the common header, or -1. */
static __always_inline int gn_stat_fixed_len(__u8 type)
{
	switch (type) {
	case GN_PKT_HELLO:
		return GN_WIRE_HELLO_LEN;
	case GN_PKT_DATA:
		return GN_WIRE_DATA_LEN;
	case GN_PKT_ACK:
		return GN_WIRE_ACK_LEN;
	case GN_PKT_CTRL:
		return GN_WIRE_CTRL_LEN;
	case GN_PKT_CTRL_ACK:
		return GN_WIRE_CTRL_ACK_LEN;
	case GN_PKT_PING:
	case GN_PKT_PONG:
		return GN_WIRE_PING_LEN;
	case GN_PKT_WHOLE:
		return GN_WIRE_WHOLE_LEN;
	}
	return -1;
}

/*
 * gn_stat_hdr_parse() - read and check a datagram's gradnet header
 * @h: GN_STAT_HDR_LOAD bytes: the payload's first GN_STAT_HDR_LOAD, or,
 *	if it is shorter, its first GN_STAT_HDR_ID or GN_STAT_HDR_MAGIC
 * @len: the UDP payload's length
 * @o: out, on 0: the flow's fields
 *
 * The checks are gn_wire_hdr_get()'s: the magic, our version, a known
 * type, a length that is exactly header, fixed part, body and tag, a
 * known phase, the entropy flag only on a data body, known seal flags,
 * a packet number. The tag cannot be checked here: no key.
 *
 * Return: 0; GN_STAT_NOT_GRADNET if the payload does not start with the
 * magic; GN_STAT_REFUSE_VERSION for another protocol version;
 * GN_STAT_REFUSE_HEADER for any other fault.
 */
static __always_inline int gn_stat_hdr_parse(const __u8 *h, __u32 len,
					     struct gn_stat_hdr *o)
{
	__u32 body;
	int fixed;

	if (len < GN_STAT_HDR_MAGIC || (h[0] | h[1] << 8) != GN_WIRE_MAGIC)
		return GN_STAT_NOT_GRADNET;
	if (len < GN_STAT_HDR_ID)
		return GN_STAT_REFUSE_HEADER;
	if (h[2] != GN_WIRE_VERSION)
		return GN_STAT_REFUSE_VERSION;
	if (len < GN_WIRE_HDR_LEN + GN_WIRE_TAG || len > GN_WIRE_MAX_PKT)
		return GN_STAT_REFUSE_HEADER;
	fixed = gn_stat_fixed_len(h[3]);
	body = h[20] | (__u32)h[21] << 8;
	if (fixed < 0 || len != GN_WIRE_HDR_LEN + (__u32)fixed + body + GN_WIRE_TAG ||
	    (h[23] & GN_WIRE_ENTROPY &&
	     ((h[3] != GN_PKT_DATA && h[3] != GN_PKT_WHOLE) || !body)) ||
	    h[22] > GN_PHASE_INDEX || h[24] & ~GN_SEAL_CLEAR ||
	    !(h[25] | h[26] | h[27] | h[28] | h[29] | h[30] | h[31]))
		return GN_STAT_REFUSE_HEADER;
	o->src = h[4] | (__u64)h[5] << 8;
	o->dst = h[6] | (__u64)h[7] << 8;
	o->job = h[8] | (__u64)h[9] << 8 | (__u64)h[10] << 16 |
		 (__u64)h[11] << 24;
	if (h[3] == GN_PKT_DATA || h[3] == GN_PKT_WHOLE) {
		o->tensor = h[12] | (__u64)h[13] << 8 | (__u64)h[14] << 16 |
			    (__u64)h[15] << 24;
		o->phase = h[22];
	} else {
		o->tensor = 0;
		o->phase = GN_STAT_PHASE_CTL;
	}
	return 0;
}

#endif /* GRADNET_STAT_HDR_H */
