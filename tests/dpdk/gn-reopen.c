// SPDX-License-Identifier: MIT
/*
 * gn-reopen.c - a process that opens a gradnet context from the
 * environment (GN_TRANSPORT=dpdk, a job of one rank), closes it and opens
 * another on the same port, for mixed_bridge.sh's xdp case: the first
 * open succeeds; on net_af_xdp, whose port closes with its context (its
 * rx pool is the kernel's UMEM), the second is -ENODEV and says to start
 * a new process; elsewhere it succeeds. Prints one line per open,
 * "open N R MESSAGE", and exits 0 whatever the second open gave.
 */
#include <stdio.h>

#include <gradnet/gradnet.h>

int main(void)
{
	struct gn_ctx *ctx;
	int i, r;

	for (i = 0; i < 2; i++) {
		r = gn_ctx_open(NULL, &ctx);
		printf("open %d %d %s\n", i, r, r ? gn_last_errmsg() : "");
		fflush(stdout);
		if (r)
			return i == 0;
		gn_ctx_close(ctx);
	}
	return 0;
}
