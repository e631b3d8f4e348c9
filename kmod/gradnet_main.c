// SPDX-License-Identifier: MIT
/*
 * gradnet_main.c - module entry points. For now the module proves that the
 * codec computes in the kernel exactly what its specification says: it
 * runs the self-test when it loads and refuses to load if any vector fails.
 */
#include <linux/init.h>
#include <linux/module.h>

#include "selftest.h"

static int __init gradnet_init(void)
{
	return gn_selftest_run();
}

static void __exit gradnet_exit(void)
{
}

module_init(gradnet_init);
module_exit(gradnet_exit);

/* MIT code; the GPL half lets it use kernel_fpu_begin_mask(), a GPL export. */
MODULE_LICENSE("Dual MIT/GPL");
MODULE_DESCRIPTION("gradnet: 3LC gradient codec, kernel data path");
MODULE_AUTHOR("gradnet developers");
