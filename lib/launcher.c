// SPDX-License-Identifier: MIT
/*
 * launcher.c - gn_ctx_open() without a peer list: a rank started by a
 * PMIx launcher (mpirun, srun --mpi=pmix) binds, publishes the address
 * its socket holds through the launcher's key-value store, and joins
 * with everyone's. Only addresses go through the launcher: the job key
 * comes from the key variables as always.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "launcher.h"
#include "open.h"

int gn_open_launcher(const struct gn_ctx_opts *o, struct gn_ctx **out)
{
	char mine[64], msg[GN_ERRMSG_LEN] = "", *list = NULL;
	struct gn_ctx *ctx;
	int r;

	if (!gn_pmix_present())
		return gn_open_fail(-EINVAL,
				    "no peer addresses: set gn_ctx_opts.peers or GN_PEERS=host:port,... (rank order), or start the ranks with a PMIx launcher (mpirun, srun --mpi=pmix)%s",
				    gn_pmix_built ? "" :
				    "; this libgradnet was built without PMIx");
	r = gn_ctx_bind(o, &ctx);
	if (r)
		return r;
	r = gn_ctx_local_addr(ctx, mine, sizeof(mine));
	if (r < 0) {
		gn_open_fail(r, "cannot name the bound address");
		goto out_close;
	}
	r = gn_pmix_exchange(gn_ctx_rank(ctx), gn_ctx_world_size(ctx), mine,
			     &list, msg, sizeof(msg));
	if (r) {
		gn_open_fail(r, "PMIx: %s", msg);
		goto out_close;
	}
	r = gn_ctx_join(ctx, list);
	free(list);
	if (r)
		goto out_close;
	*out = ctx;
	return 0;

out_close:
	/* Keep the reason: close does not touch the open error message. */
	gn_ctx_close(ctx);
	return r;
}
