// SPDX-License-Identifier: MIT
/*
 * mpi_job.c - one rank of a 3LC allreduce job under mpirun, opened one of
 * two ways: --open env, gn_ctx_open(NULL) (GN_PEERS if set, else the
 * launcher's PMIx exchange), or --open mpi, gn_ctx_open_mpi() over
 * MPI_COMM_WORLD. Each rank's gradient of step k is a fixed function of
 * (rank, k, i), so every way of opening must give the same result bytes;
 * rank 0 prints the FNV-1a hash of the final tensor as "hash HEX", after
 * checking that every rank's hash is its own.
 *
 *   mpi_job [--open env|mpi] [--elems N] [--steps K]
 */
#include <errno.h>
#include <getopt.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mpi.h>

#include <gradnet/gradnet.h>
#include <gradnet/mpi.h>

static uint64_t fnv(const float *x, size_t n)
{
	const unsigned char *p = (const unsigned char *)x;
	uint64_t h = 1469598103934665603ull;
	size_t i;

	for (i = 0; i < n * sizeof(*x); i++)
		h = (h ^ p[i]) * 1099511628211ull;
	return h;
}

/* A gradient-like value of rank @r, step @k, element @i: integer math only. */
static float grad(int r, int k, size_t i)
{
	uint32_t v = (uint32_t)(i * 2654435761u) ^ (uint32_t)(r * 40503 + k * 977);

	v ^= v >> 13;
	v *= 0x5bd1e995u;
	v ^= v >> 15;
	return ((float)(v & 0xffff) - 32768.0f) / 65536.0f;
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "open", required_argument, NULL, 'o' },
		{ "elems", required_argument, NULL, 'n' },
		{ "steps", required_argument, NULL, 'k' },
		{ NULL, 0, NULL, 0 },
	};
	const char *how = "env";
	size_t elems = 200000, i;
	int steps = 4, rank, size, c, k, r, bad = 0;
	unsigned long long mine, *all;
	struct gn_ctx *ctx;
	float *x;

	while ((c = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
		if (c == 'o')
			how = optarg;
		else if (c == 'n')
			elems = strtoul(optarg, NULL, 0);
		else if (c == 'k')
			steps = atoi(optarg);
		else
			return 2;
	}
	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	if (!strcmp(how, "mpi"))
		r = gn_ctx_open_mpi(MPI_COMM_WORLD, NULL, &ctx);
	else
		r = gn_ctx_open(NULL, &ctx);
	if (r) {
		fprintf(stderr, "rank %d: open (%s): %s: %s\n", rank, how,
			gn_strerror(r), gn_last_errmsg());
		MPI_Abort(MPI_COMM_WORLD, 1);
	}
	GN_OPTS(gn_tensor_opts, t, .id = 1, .elems = elems,
		.codec = GN_CODEC_3LC, .flags = GN_TENSOR_AVERAGE);
	x = malloc(elems * sizeof(*x));
	all = malloc((size_t)size * sizeof(*all));
	if (!x || !all || gn_tensor_register(ctx, &t)) {
		fprintf(stderr, "rank %d: register: %s\n", rank, gn_ctx_errmsg(ctx));
		MPI_Abort(MPI_COMM_WORLD, 1);
	}
	for (k = 0; k < steps; k++) {
		for (i = 0; i < elems; i++)
			x[i] = grad(rank, k, i);
		r = gn_allreduce(ctx, 1, x);
		if (r) {
			fprintf(stderr, "rank %d: step %d: %s\n", rank, k,
				gn_ctx_errmsg(ctx));
			MPI_Abort(MPI_COMM_WORLD, 1);
		}
	}
	mine = (unsigned long long)fnv(x, elems);
	MPI_Gather(&mine, 1, MPI_UNSIGNED_LONG_LONG, all, 1,
		   MPI_UNSIGNED_LONG_LONG, 0, MPI_COMM_WORLD);
	if (!rank) {
		for (c = 1; c < size; c++)
			bad |= all[c] != mine;
		printf("ranks %d hash %016llx%s\n", size, mine,
		       bad ? " (ranks differ)" : "");
	}
	gn_ctx_close(ctx);
	free(x);
	free(all);
	MPI_Finalize();
	return bad;
}
