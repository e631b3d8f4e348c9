/* SPDX-License-Identifier: MIT */
/*
 * params.h - the module's parameters (params.c): defaults a job's OPEN
 * leaves to the module, limits, and test-only fault injection.
 */
#ifndef GN_KMOD_PARAMS_H
#define GN_KMOD_PARAMS_H

#include <linux/types.h>

/* Fault injection on receive, per mille of packets; read once at OPEN. */
struct gk_faults {
	u32 drop, dup, reorder;
};

extern unsigned int gk_default_timeout_ms;
extern unsigned int gk_default_step_timeout_ms;
extern unsigned int gk_rx_queue_max;
extern unsigned int gk_rx_queue_bytes;
extern unsigned int gk_max_contexts_per_user;
extern unsigned int gk_max_tensors;
extern unsigned int gk_max_context_mib;

void gk_params_init(void);
unsigned long gk_context_bytes_max(void);

void gk_faults_get(struct gk_faults *f);
bool gk_faults_on(void);

#endif /* GN_KMOD_PARAMS_H */
