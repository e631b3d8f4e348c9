/* SPDX-License-Identifier: MIT */
/*
 * mem.h - an in-memory fabric between the ranks of one process (or of one
 * kernel): every rank's transport is a queue in shared memory, and the
 * fabric can lose, duplicate and reorder packets, deterministically from a
 * seed. The kernel module's self-test and the userspace tests run the
 * whole protocol core over it, with no network and no threads: a driver
 * polls each rank in turn.
 */
#ifndef GN_TRANSPORT_MEM_H
#define GN_TRANSPORT_MEM_H

#include "env.h"
#include "transport.h"

/* Probabilities per packet sent, in 1/65536. */
struct gn_mem_faults {
	u32 loss;
	u32 dup;
	u32 reorder;			/* held back, delivered after later ones */
	u64 seed;
};

struct gn_mem_fabric;

/*
 * A fabric of @world ranks whose packets are at most @max_pkt bytes, with
 * a pool of @nbufs buffers shared by every rank; @faults may be NULL.
 * Return: 0 or -ENOMEM, -EINVAL.
 */
int gn_mem_fabric_new(const struct gn_env *env, int world, u32 max_pkt,
		      u32 nbufs, const struct gn_mem_faults *faults,
		      struct gn_mem_fabric **out);
/* Rank @rank's end of the fabric, in @tp. Return: 0 or -EINVAL. */
int gn_mem_open(struct gn_mem_fabric *fab, int rank, struct gn_transport *tp);
/* After every rank's transport is closed. */
void gn_mem_fabric_free(struct gn_mem_fabric *fab);

/* What the fabric did, for the tests to show that faults happened. */
struct gn_mem_counts {
	u64 sent, delivered, lost, duplicated, reordered;
	u32 bufs_free, bufs_total;
};

void gn_mem_fabric_counts(const struct gn_mem_fabric *fab,
			  struct gn_mem_counts *out);

#endif /* GN_TRANSPORT_MEM_H */
