/* SPDX-License-Identifier: MIT */
/*
 * gradnet/mpi.h - open a gradnet context over an MPI program's own
 * communicator: each rank binds (gn_ctx_bind()), the ranks exchange the
 * addresses their sockets hold with MPI_Allgather, and each joins
 * (gn_ctx_join()). Inline, so libgradnet itself needs no MPI: include it
 * after <mpi.h> in a program that links its MPI library.
 */
#ifndef GRADNET_MPI_H
#define GRADNET_MPI_H

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <mpi.h>

#include <gradnet/gradnet.h>

/* Room for one rank's "host:port" or "[v6 host]:port" in the exchange. */
#define GN_MPI_ADDR_LEN 64

/**
 * gn_ctx_open_mpi() - join a gradnet job whose ranks are @comm's
 * @comm: the communicator; every rank of it calls this, collectively
 * @opts: as for gn_ctx_bind(), or NULL; rank and world size are @comm's
 *	unless @opts sets them
 * @ctx: out, the context
 *
 * Return: as gn_ctx_bind() and gn_ctx_join() (the reason in
 * gn_last_errmsg()); -ECANCELED when another rank of @comm could not
 * bind (its own call says why); -ENOMEM; -EIO if MPI fails.
 */
static inline int gn_ctx_open_mpi(MPI_Comm comm,
				  const struct gn_ctx_opts *opts,
				  struct gn_ctx **ctx)
{
	struct gn_ctx_opts o;
	char me[GN_MPI_ADDR_LEN] = "", *all, *list;
	int rank, size, i, r, ok, all_ok = 0;
	size_t at = 0, n;

	*ctx = NULL;
	memset(&o, 0, sizeof(o));
	if (opts)
		memcpy(&o, opts, opts->sz < sizeof(o) ? opts->sz : sizeof(o));
	o.sz = sizeof(o);
	if (MPI_Comm_rank(comm, &rank) != MPI_SUCCESS ||
	    MPI_Comm_size(comm, &size) != MPI_SUCCESS)
		return -EIO;
	if (!o.world_size)
		o.world_size = size;
	if (!(o.flags & GN_CTX_RANK) && o.rank <= 0) {
		o.rank = rank;
		o.flags |= GN_CTX_RANK;
	}
	all = (char *)calloc((size_t)size, GN_MPI_ADDR_LEN);
	list = (char *)malloc((size_t)size * GN_MPI_ADDR_LEN + 1);
	r = all && list ? 0 : -ENOMEM;
	if (!r)
		r = gn_ctx_bind(&o, ctx);
	if (!r && gn_ctx_local_addr(*ctx, me, sizeof(me)) < 0)
		r = -EINVAL;
	/* Every rank learns whether all have an address before exchanging. */
	ok = !r;
	if (MPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_MIN, comm) != MPI_SUCCESS)
		r = r ? r : -EIO;
	else if (!all_ok)
		r = r ? r : -ECANCELED;
	if (!r && MPI_Allgather(me, GN_MPI_ADDR_LEN, MPI_CHAR, all,
				GN_MPI_ADDR_LEN, MPI_CHAR, comm) != MPI_SUCCESS)
		r = -EIO;
	for (i = 0; !r && i < size; i++) {
		const char *a = all + (size_t)i * GN_MPI_ADDR_LEN;

		n = strnlen(a, GN_MPI_ADDR_LEN);
		if (!n || n == GN_MPI_ADDR_LEN) {
			r = -EIO;
			break;
		}
		if (i)
			list[at++] = ',';
		memcpy(list + at, a, n);
		at += n;
	}
	if (!r) {
		list[at] = 0;
		r = gn_ctx_join(*ctx, list);
	}
	free(all);
	free(list);
	if (r) {
		gn_ctx_close(*ctx);
		*ctx = NULL;
	}
	return r;
}

#endif /* GRADNET_MPI_H */
