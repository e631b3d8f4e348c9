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
#include <linux/kstrtox.h>
#include <linux/module.h>
#include <linux/moduleparam.h>

#include "dev.h"
#include "params.h"
#include "selftest.h"

/* What the last rerun of the core self-test returned (0: passed). */
static int core_rerun_result;

/*
 * Writing 1 runs the core self-test again on the loaded module, so that
 * a tracer attached after load (gradnet-stat attach --kmod) sees its
 * packets; the write fails with the self-test's error if a check fails.
 * Sysfs writes of one module's parameters are serialised by the kernel.
 */
static int core_rerun_set(const char *val, const struct kernel_param *kp)
{
	bool run;
	int err;

	err = kstrtobool(val, &run);
	if (err || !run)
		return -EINVAL;
	core_rerun_result = gn_selftest_core_run();
	return core_rerun_result;
}

static const struct kernel_param_ops core_rerun_ops = {
	.set = core_rerun_set,
	.get = param_get_int,
};

module_param_cb(rerun_core_selftest, &core_rerun_ops, &core_rerun_result,
		0600);
MODULE_PARM_DESC(rerun_core_selftest,
		 "write 1 (root) to run the protocol core's self-test again and fire its tracepoints; reads the last rerun's result (0: passed)");

static int __init gradnet_init(void)
{
	int codec, wire, core;

	/* All run, so one log shows every failure. */
	codec = gn_selftest_run();
	wire = gn_selftest_wire_run();
	core = gn_selftest_core_run();
	if (codec || wire || core)
		return codec ? codec : wire ? wire : core;
	gk_params_init();
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
