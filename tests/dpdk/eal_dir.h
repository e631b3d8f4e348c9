/* SPDX-License-Identifier: MIT */
/*
 * eal_dir.h - the DPDK tests' cleanup of the EAL's runtime directory,
 * which the EAL leaves behind: /var/run/dpdk/PREFIX for root, else under
 * $XDG_RUNTIME_DIR or /tmp. A test removes its own process's, named
 * PREFIX then the pid (its --file-prefix), at the end of each test (the
 * harness's children exit without atexit()).
 */
#ifndef GN_TEST_EAL_DIR_H
#define GN_TEST_EAL_DIR_H

#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static inline void gn_eal_dir_rm(const char *prefix)
{
	const char *base = getenv("XDG_RUNTIME_DIR");
	char cmd[512];

	if (!getuid())
		base = "/var/run";
	else if (!base)
		base = "/tmp";
	snprintf(cmd, sizeof(cmd), "rm -rf '%s/dpdk/%s%d'", base, prefix,
		 (int)getpid());
	if (system(cmd))
		fprintf(stderr, "cannot remove the EAL runtime directory\n");
}

#endif /* GN_TEST_EAL_DIR_H */
