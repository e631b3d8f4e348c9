/* SPDX-License-Identifier: MIT */
/*
 * nh.h - the NH passes of the packet MAC, per instruction set. Each sums
 * whole pairs from the start and returns how many it did; mac.c does the
 * rest.
 */
#ifndef GN_NH_H
#define GN_NH_H

#include "gn_deps.h"

size_t gn_nh2_avx2(const u32 *k, const u8 *p, size_t pairs, u64 *h1, u64 *h2);

#endif /* GN_NH_H */
