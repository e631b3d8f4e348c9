/* SPDX-License-Identifier: MIT */
/*
 * gn_env_dpdk.h - the environment of the core on the DPDK path: hugepage memory
 * from rte_zmalloc, time from the TSC, a spinlock, getrandom(). Poll mode:
 * the lcore that drives the core never sleeps, so wake() does nothing.
 *
 * The state stays in env.c, so no DPDK type leaves dpdk/ (SPDK's env.h
 * boundary): a driver sees only struct gn_env.
 */
#ifndef GN_ENV_DPDK_H
#define GN_ENV_DPDK_H

#include "env.h"

int gn_env_dpdk_new(int socket_id, struct gn_env **out);
void gn_env_dpdk_free(struct gn_env *env);

#endif /* GN_ENV_DPDK_H */
