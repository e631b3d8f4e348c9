// SPDX-License-Identifier: MIT
/*
 * gradnet_main.c - module entry points. The module first proves that the
 * codec and the wire layer with its MAC compute in the kernel exactly what
 * their specifications say, and that the protocol core runs a whole job
 * in the kernel with the results libgradnet gives: it runs the
 * self-tests when it loads and refuses to load if any check fails. Then
 * it creates /dev/gradnet, the kernel data path (dev.c).
 */
#include <linux/init.h>
#include <linux/module.h>

#include "dev.h"
#include "selftest.h"

static int __init gradnet_init(void)
{
	int codec, wire, core;

	/* All run, so one log shows every failure. */
	codec = gn_selftest_run();
	wire = gn_selftest_wire_run();
	core = gn_selftest_core_run();
	if (codec || wire || core)
		return codec ? codec : wire ? wire : core;
	return gk_dev_register();
}

/* No file is open: each holds a reference to the module (fops owner). */
static void __exit gradnet_exit(void)
{
	gk_dev_unregister();
}

module_init(gradnet_init);
module_exit(gradnet_exit);

/* MIT code; the GPL half lets it use kernel_fpu_begin_mask(), a GPL export. */
MODULE_LICENSE("Dual MIT/GPL");
MODULE_DESCRIPTION("gradnet: 3LC gradient allreduce, kernel data path (/dev/gradnet)");
/* The tunnel socket's functions; modprobe loads it first. */
MODULE_SOFTDEP("pre: udp_tunnel ip6_udp_tunnel");
MODULE_AUTHOR("gradnet developers");
