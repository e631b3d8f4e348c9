// SPDX-License-Identifier: MIT
/*
 * params.c - module parameters: the defaults of a job that leaves a value
 * at 0, what one user or context may hold (contexts, tensors, kernel
 * memory, the receive queue), and fault injection for tests. Every
 * parameter is documented for modinfo; all are writable by root through
 * /sys/module/gradnet/parameters and apply to the next OPEN.
 */
#include <linux/mm.h>
#include <linux/moduleparam.h>

#include "params.h"

unsigned int gk_default_timeout_ms = 10000;
module_param_named(default_timeout_ms, gk_default_timeout_ms, uint, 0644);
MODULE_PARM_DESC(default_timeout_ms,
		 "A silent peer is dead after this many ms when the job's OPEN gives 0 (default 10000)");

unsigned int gk_default_step_timeout_ms = 600000;
module_param_named(default_step_timeout_ms, gk_default_step_timeout_ms, uint,
		   0644);
MODULE_PARM_DESC(default_step_timeout_ms,
		 "An allreduce fails after this many ms when the job's OPEN gives 0 (default 600000)");

unsigned int gk_rx_queue_max = 8192;
module_param_named(rx_queue_max, gk_rx_queue_max, uint, 0644);
MODULE_PARM_DESC(rx_queue_max,
		 "Received packets a context queues for its worker before it drops more (default 8192, at least 64)");

unsigned int gk_rx_queue_bytes = 8 << 20;
module_param_named(rx_queue_bytes, gk_rx_queue_bytes, uint, 0644);
MODULE_PARM_DESC(rx_queue_bytes,
		 "Bytes of received packets (their truesize) a context's socket holds for its worker, charged to the socket and its memory cgroup; more are dropped and counted in the socket's drops (default 8388608, at least 65536)");

unsigned int gk_max_contexts_per_user = 64;
module_param_named(max_contexts_per_user, gk_max_contexts_per_user, uint,
		   0644);
MODULE_PARM_DESC(max_contexts_per_user,
		 "Joined contexts (each a worker thread and a socket) one user may hold at once; OPEN beyond it fails with EMFILE (default 64)");

unsigned int gk_max_tensors = 4096;
module_param_named(max_tensors, gk_max_tensors, uint, 0644);
MODULE_PARM_DESC(max_tensors,
		 "Tensors one context may have registered at once; REGISTER beyond it fails with EMFILE (default 4096)");

unsigned int gk_max_context_mib;
module_param_named(max_context_mib, gk_max_context_mib, uint, 0644);
MODULE_PARM_DESC(max_context_mib,
		 "MiB of kernel memory the protocol core of one context may hold (its tensors' error feedback, scratch and message tables); REGISTER or OPEN beyond it fails with EDQUOT (default, and 0: half of the host's memory)");

static unsigned int fault_drop;
module_param_named(fault_drop, fault_drop, uint, 0644);
MODULE_PARM_DESC(fault_drop,
		 "TEST ONLY: drop this many per mille of received gradnet packets (0..1000, default 0)");

static unsigned int fault_dup;
module_param_named(fault_dup, fault_dup, uint, 0644);
MODULE_PARM_DESC(fault_dup,
		 "TEST ONLY: deliver this many per mille of received gradnet packets twice (0..1000, default 0)");

static unsigned int fault_reorder;
module_param_named(fault_reorder, fault_reorder, uint, 0644);
MODULE_PARM_DESC(fault_reorder,
		 "TEST ONLY: hold this many per mille of received gradnet packets back behind the next one (0..1000, default 0)");

/**
 * gk_params_init() - fill in the defaults that depend on the host, so
 * that sysfs shows the values in force
 */
void gk_params_init(void)
{
	if (!gk_max_context_mib)
		gk_max_context_mib = gk_context_bytes_max() >> 20;
}

/* Return: max_context_mib in bytes (0 reads as half of the host's memory). */
unsigned long gk_context_bytes_max(void)
{
	unsigned long mib = READ_ONCE(gk_max_context_mib);

	if (!mib)
		return totalram_pages() / 2 * PAGE_SIZE;
	return min_t(unsigned long, mib, ULONG_MAX >> 20) << 20;
}

static u32 permille(unsigned int v)
{
	return v > 1000 ? 1000 : v;
}

/**
 * gk_faults_get() - the fault injection rates for a context opening now
 * @f: filled with the rates, each clamped to 0..1000
 */
void gk_faults_get(struct gk_faults *f)
{
	f->drop = permille(READ_ONCE(fault_drop));
	f->dup = permille(READ_ONCE(fault_dup));
	f->reorder = permille(READ_ONCE(fault_reorder));
}

/* Return: true if some fault injection rate is set. */
bool gk_faults_on(void)
{
	struct gk_faults f;

	gk_faults_get(&f);
	return f.drop || f.dup || f.reorder;
}
